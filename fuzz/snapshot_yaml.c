/* The snapshot loader on YAML (a List or a stream of objects): libyaml
 * through val.c, each object re-printed as JSON, the decoder, the cache. */
#include "fuzz.h"
#include "ebb/cache.h"
#include "ebb/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb_cache *c = NULL;
    struct ebb_error err = { 0 };
    size_t i = 0;

    while (i < size && strchr(" \t\r\n", data[i]) != NULL && data[i] != '\0')
        i++;
    if (i < size && (data[i] == '{' || data[i] == '['))
        return -1;   /* JSON: the other target's */
    if (ebb_cache_create(&c) != 0)
        abort();
    ebb_snapshot_load_buf(c, (const char *)data, size, "fuzz.yaml", NULL, &err);
    ebb_cache_destroy(c);
    return 0;
}
