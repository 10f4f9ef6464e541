/* JSON read by yyjson and laid out as cJSON nodes (engine/model/
 * json_arena.c), against cJSON's own parser: whatever yyjson reads makes a
 * well-formed tree within cJSON's nesting limit, and where both read the
 * same text to the same end they make the same tree (json_same.h). And
 * the snapshot's extent scanner, 64 bytes a step, against the same rules
 * byte by byte. */
#include "fuzz.h"
#include "model/snapshot_int.h"
#include "test/json_same.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ebb_json_arena a;
    const char *text = (const char *)data, *end_c = NULL, *end_y = NULL;
    cJSON *y, *c;

    if (size > ((size_t)1 << 20))
        return -1;
    y = ebb__json_arena_parse_raw(&a, text, size, &end_y);
    if (y != NULL) {
        if (!json_well_formed(y, 0) || end_y < text || end_y > text + size)
            abort();
        c = cJSON_ParseWithLengthOpts(text, size, &end_c, false);
        if (c != NULL)
            json_strip_managed(c);
        if (c != NULL && end_c == end_y && !json_same(y, c))
            abort();
        cJSON_Delete(c);
    } else if (end_y != NULL && (end_y < text || end_y > text + size)) {
        abort();
    }
    ebb_json_arena_reset(&a);
    if (size > 0 && (data[0] == '{' || data[0] == '[')) {
        int nl_a = -1, nl_b = -1, nl_c = -1, avx2 = ebb__json_scan_avx2;
        long ea = ebb__json_extent(text, text + size, &nl_a), ec;
        long eb = json_extent_bytes(text, text + size, &nl_b);
        if (ea != eb || (ea > 0 && nl_a != nl_b))
            abort();
        /* the 16-byte path too, where 32 bytes a step is the default */
        ebb__json_scan_avx2 = 0;
        ec = ebb__json_extent(text, text + size, &nl_c);
        ebb__json_scan_avx2 = avx2;
        if (ec != eb || (ec > 0 && nl_c != nl_b))
            abort();
    }
    return 0;
}
