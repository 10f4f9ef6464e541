/* The memory of evictions as ebb run reads it back from its ConfigMap and a
 * snapshot's "evictionMemory" (engine/core/evmemory_json.c).
 *
 * - Decoding is all or nothing: an error leaves the memory empty.
 * - What decodes is in time order, encodes under the bound and decodes
 *   again to the same entries (interned strings: the same pointers).
 * - Encoding under a small bound keeps the newest entries only. */
#include "fuzz.h"
#include "ebb/evmemory.h"

static void same(const struct ebb_evmem *a, const struct ebb_evmem *b, size_t from)
{
    if (b->n != a->n - from)
        abort();
    for (size_t i = 0; i < b->n; i++) {
        const struct ebb_evmem_entry *x = &a->v[from + i], *y = &b->v[i];
        if (x->at != y->at || x->ns != y->ns || x->pod != y->pod || x->uid != y->uid ||
            x->kind != y->kind || x->workload != y->workload || x->node != y->node ||
            x->plugin != y->plugin || x->profile != y->profile || x->landed != y->landed ||
            x->replacement != y->replacement || x->flags != y->flags)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb_evmem m, r;
    struct ebb_error err;
    size_t len;
    char *text;

    ebb_evmem_init(&m, 0);
    if (ebb_evmem_decode(&m, (const char *)data, size, "fuzz", &err) != 0) {
        if (m.n != 0)
            abort();
        ebb_evmem_free(&m);
        return 0;
    }
    for (size_t i = 1; i < m.n; i++)
        if (m.v[i - 1].at > m.v[i].at)
            abort();
    text = ebb_evmem_encode(&m, 0, &len);
    if (text == NULL || len > EBB_EVMEM_MAX_BYTES)
        abort();
    ebb_evmem_init(&r, 0);
    if (ebb_evmem_decode(&r, text, len, "fuzz", &err) != 0 || r.window != (m.window > 0 ? m.window : EBB_EVMEM_WINDOW_DEFAULT))
        abort();
    same(&m, &r, 0);
    free(text);
    ebb_evmem_free(&r);
    /* a bound that holds about one entry: the newest ones only */
    text = ebb_evmem_encode(&m, 400, &len);
    if (text == NULL || len > 400)
        abort();
    ebb_evmem_init(&r, 0);
    if (ebb_evmem_decode(&r, text, len, "fuzz", &err) != 0 || r.n > m.n)
        abort();
    same(&m, &r, m.n - r.n);
    free(text);
    ebb_evmem_free(&r);
    ebb_evmem_free(&m);
    return 0;
}
