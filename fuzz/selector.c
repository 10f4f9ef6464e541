/* Label selectors in their string form ("app=web,tier in (a,b),!canary"),
 * as kubectl, ebb.selector and ebb serve's labelSelector parse them. A
 * selector that parses formats to text that parses to the same selector. */
#include "fuzz.h"
#include "ebb/selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    struct ebb_selector *a = NULL, *b = NULL;
    struct ebb_error err = { 0 };
    static char text[1 << 16], again[1 << 16];

    if (ebb_selector_parse(s, &a, &err) == 0) {
        ebb_selector_format(a, text, sizeof(text));
        if (strlen(text) + 1 < sizeof(text)) {
            if (ebb_selector_parse(text, &b, &err) != 0)
                abort();
            ebb_selector_format(b, again, sizeof(again));
            if (strcmp(text, again) != 0)
                abort();
        }
    }
    ebb_selector_free(a);
    ebb_selector_free(b);
    free(s);
    return 0;
}
