/* Pair-of-interned-strings map: keys compare by pointer, hashes come from
 * the interner so iteration order is the same on every run. */
#include <stdlib.h>

#include "base/map.h"

static const char tomb_mark;
#define MAP_TOMB (&tomb_mark)

static size_t hash(ebb_str a, ebb_str b)
{
    return (size_t)ebb_str_hash(a) * 0x9E3779B1u ^ ebb_str_hash(b);
}

void ebb__map_init(struct ebb_map *m)
{
    m->cap = m->used = m->live = 0;
    m->s = NULL;
}

void ebb__map_free(struct ebb_map *m)
{
    free(m->s);
    ebb__map_init(m);
}

bool ebb__map_live(const struct ebb_map *m, size_t i)
{
    return m->s[i].a != NULL && m->s[i].a != MAP_TOMB;
}

/* The walk every lookup makes: the slot holding (a, b), or NULL with *at
 * where it would go (the first tombstone on the way, else the empty slot
 * that ends the walk). The table is never full (put grows it at 3/4). */
static struct ebb_map_slot *probe(const struct ebb_map *m, ebb_str a, ebb_str b, size_t h,
                                  size_t *at)
{
    size_t mask = m->cap - 1, i, tomb = (size_t)-1;

    for (i = h & mask; m->s[i].a != NULL; i = (i + 1) & mask) {
        if (m->s[i].a == a && m->s[i].b == b)
            return &m->s[i];
        if (m->s[i].a == MAP_TOMB && tomb == (size_t)-1)
            tomb = i;
    }
    *at = tomb != (size_t)-1 ? tomb : i;
    return NULL;
}

static struct ebb_map_slot *find(const struct ebb_map *m, ebb_str a, ebb_str b)
{
    size_t at;

    return m->cap == 0 ? NULL : probe(m, a, b, hash(a, b), &at);
}

static int grow(struct ebb_map *m)
{
    size_t n = m->cap ? m->cap * 2 : 64;
    struct ebb_map_slot *ns;

    if (m->cap && m->live * 4 < m->cap)
        n = m->cap;   /* mostly tombstones: rehash in place size */
    if ((ns = calloc(n, sizeof(*ns))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!ebb__map_live(m, i))
            continue;
        size_t j = hash(m->s[i].a, m->s[i].b) & (n - 1);
        while (ns[j].a != NULL)
            j = (j + 1) & (n - 1);
        ns[j] = m->s[i];
    }
    free(m->s);
    m->s = ns;
    m->cap = n;
    m->used = m->live;
    return 0;
}

void *ebb__map_get(const struct ebb_map *m, ebb_str a, ebb_str b)
{
    struct ebb_map_slot *s;

    if (a == NULL)
        return NULL;
    s = find(m, a, b);
    return s ? s->v : NULL;
}

int ebb__map_put(struct ebb_map *m, ebb_str a, ebb_str b, void *v, void **old)
{
    struct ebb_map_slot *s = NULL;
    size_t at = 0, h;

    if (old)
        *old = NULL;
    if (a == NULL)
        return EBB_EINVAL;
    h = hash(a, b);
    /* one walk finds the key or where it goes; only a table that must grow
     * is walked again */
    if (m->cap > 0 && (s = probe(m, a, b, h, &at)) != NULL) {
        if (old)
            *old = s->v;
        s->v = v;
        return 0;
    }
    if ((m->used + 1) * 4 >= m->cap * 3) {
        if (grow(m) != 0)
            return EBB_ENOMEM;
        (void)probe(m, a, b, h, &at);
    }
    if (m->s[at].a == NULL)
        m->used++;   /* not a tombstone taken again */
    m->s[at].a = a;
    m->s[at].b = b;
    m->s[at].v = v;
    m->live++;
    return 0;
}

void *ebb__map_del(struct ebb_map *m, ebb_str a, ebb_str b)
{
    struct ebb_map_slot *s = a ? find(m, a, b) : NULL;
    void *v;

    if (s == NULL)
        return NULL;
    v = s->v;
    s->a = MAP_TOMB;
    s->b = NULL;
    s->v = NULL;
    m->live--;
    return v;
}

uint32_t ebb__count_get(const struct ebb_map *m, ebb_str k)
{
    return k ? (uint32_t)(uintptr_t)ebb__map_get(m, k, NULL) : 0;
}

int ebb__count_add(struct ebb_map *m, ebb_str k, int delta)
{
    uintptr_t c = ebb__count_get(m, k);
    void *old;

    if (k == NULL || (delta < 0 && c == 0))
        return 0;
    if (delta < 0 && c == 1) {
        ebb__map_del(m, k, NULL);
        ebb_str_release(k);
        return 0;
    }
    if (ebb__map_put(m, k, NULL, (void *)(delta < 0 ? c - 1 : c + 1), &old) != 0)
        return EBB_ENOMEM;
    if (c == 0)
        ebb_str_ref(k);
    return 0;
}

void ebb__counts_free(struct ebb_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (ebb__map_live(m, i))
            ebb_str_release(m->s[i].a);
    ebb__map_free(m);
}
