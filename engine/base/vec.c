/* The engine's one growable array (see base/vec.h), the lists of ids kept
 * in maps, and the stable sort. */
#include <stdbool.h>
#include <string.h>

#include "base/map.h"
#include "base/vec.h"

/* The one place an array's size is computed. Invariant: *cap * size fits a
 * size_t and *cap fits its own type, so neither the doubling nor the byte
 * count can wrap into a short allocation, and a refusal changes nothing.
 * The array's pointer is read and written with memcpy: `pp` is a T ** of
 * any T, which a void ** may not alias. */
int ebb__vec_grow(void *pp, void *cap, size_t capsize, size_t need, size_t size, size_t first,
                  size_t *bytes)
{
    size_t old = capsize == sizeof(uint32_t) ? *(uint32_t *)cap : *(size_t *)cap;
    size_t max = capsize == sizeof(uint32_t) ? UINT32_MAX : SIZE_MAX;
    size_t n;
    void *p, *q;

    if (need <= old)
        return 0;
    if (size > 0 && max > SIZE_MAX / size)
        max = SIZE_MAX / size;
    if (need > max)
        return EBB_ENOMEM;
    n = old == 0 ? first : old > max / 2 ? max : old * 2;
    if (n < need)
        n = need;
    if (n > max)
        n = max;
    memcpy(&p, pp, sizeof(p));
    if ((q = realloc(p, n * size)) == NULL)
        return EBB_ENOMEM;
    memcpy(pp, &q, sizeof(q));
    if (capsize == sizeof(uint32_t))
        *(uint32_t *)cap = (uint32_t)n;
    else
        *(size_t *)cap = n;
    if (bytes != NULL)
        *bytes += (n - old) * size;
    return 0;
}

int ebb__grow(void **p, size_t *cap, size_t need, size_t size)
{
    return ebb__vec_grow(p, cap, sizeof(*cap), need, size, 16, NULL);
}

/* ---- lists of ids in a map ------------------------------------------------ */

struct ebb_idlist *ebb__idlist_at(struct ebb_map *m, ebb_str a, ebb_str b, size_t *bytes)
{
    struct ebb_idlist *l = ebb__map_get(m, a, b);
    size_t cap = m->cap;

    if (l != NULL)
        return l;
    if ((l = calloc(1, sizeof(*l))) == NULL)
        return NULL;
    if (ebb__map_put(m, a, b, l, NULL) != 0) {
        free(l);
        return NULL;
    }
    if (bytes != NULL)
        *bytes += sizeof(*l) + (m->cap - cap) * sizeof(*m->s);
    return l;
}

void ebb__idlists_free(struct ebb_map *m)
{
    for (size_t i = 0; i < m->cap; i++) {
        if (ebb__map_live(m, i)) {
            struct ebb_idlist *l = m->s[i].v;
            free(l->v);
            free(l);
        }
    }
    ebb__map_free(m);
}

/* ---- sorting ------------------------------------------------------------- */

/* Bottom-up merge sort between base and a scratch copy; each pass merges
 * runs of `width` into runs of 2 * width. */
int ebb__sort_stable(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    char *a = base, *b, *from, *to;
    bool sorted = true;

    for (size_t i = 1; i < n && sorted; i++)
        sorted = cmp(a + (i - 1) * size, a + i * size) <= 0;
    if (sorted)
        return 0;
    if ((size > 0 && n > SIZE_MAX / size) || (b = malloc(n * size)) == NULL)
        return EBB_ENOMEM;
    from = a;
    to = b;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                /* from the right run only when strictly less: stable */
                if (cmp(from + j * size, from + i * size) < 0)
                    memcpy(to + k++ * size, from + j++ * size, size);
                else
                    memcpy(to + k++ * size, from + i++ * size, size);
            }
            memcpy(to + k * size, from + i * size, (mid - i) * size);
            k += mid - i;
            memcpy(to + k * size, from + j * size, (hi - j) * size);
        }
        char *t = from;
        from = to;
        to = t;
    }
    if (from != a)
        memcpy(a, from, n * size);
    free(b);
    return 0;
}
