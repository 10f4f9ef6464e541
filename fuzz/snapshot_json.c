/* The snapshot loader on JSON (what kubectl get -o json prints): the
 * streaming scanner, cJSON in its arena, the decoder, the cache. Inputs
 * that do not start as JSON are the YAML target's. */
#include "fuzz.h"
#include "ebb/cache.h"
#include "ebb/snapshot.h"

extern size_t ebb__snapshot_window;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb_cache *c = NULL;
    struct ebb_error err = { 0 };
    size_t i = 0;

    while (i < size && strchr(" \t\r\n", data[i]) != NULL && data[i] != '\0')
        i++;
    if (i == size || (data[i] != '{' && data[i] != '['))
        return -1;   /* not for this target: keep it out of the corpus */
    /* a small window: items straddle refills, and each run allocates less */
    ebb__snapshot_window = 256;
    if (ebb_cache_create(&c) != 0)
        abort();
    ebb_snapshot_load_buf(c, (const char *)data, size, "fuzz.json", NULL, &err);
    ebb_cache_destroy(c);
    return 0;
}
