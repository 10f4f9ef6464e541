/* engine/strategy/groups_int.h: what the group strategies' files share
 * (duplicates.c: RemoveDuplicates' owner groups; anti_affinity.c: the
 * anti-affinity index). Hashing by address, label lookups as upstream
 * reads them, and a table of ids by hash. Not public: the units' API is
 * ebb/groups.h. */
#ifndef EBB_GROUPS_INT_H
#define EBB_GROUPS_INT_H

#include <stdlib.h>
#include <string.h>

#include "ebb/groups.h"
#include "base/map.h"
#include "base/vec.h"

/* A script's time budget, polled in the long loops (`stop` may be NULL). */
#define STOPPED(stop) ((stop) != NULL && *(stop) != 0)

/* ---- hashing by address --------------------------------------------------- */

/* Interned strings are equal when their addresses are: a hash over
 * addresses reads no string. */
static inline uint64_t hmix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static inline uint64_t haddr(uint64_t h, const void *p)
{
    return hmix(h, (uint64_t)(uintptr_t)p);
}

/* ---- labels ----------------------------------------------------------------- */

/* ebb_labels_lookup, where an empty key is in no label map. *val gets the
 * value (NULL when empty). */
static inline bool label_lookup(const struct ebb_labels *l, ebb_str key, ebb_str *val)
{
    return ebb_str_len(key) > 0 && ebb_labels_lookup(l, key, val);
}

/* Equal as upstream compares strings: an absent value is an empty one. */
static inline bool str_eq(ebb_str a, ebb_str b)
{
    return a == b || (ebb_str_len(a) == 0 && ebb_str_len(b) == 0);
}

/* ---- a table of ids by hash ---------------------------------------------------- */

/* Open addressing over ids + 1 (0: free), by a 64-bit hash that the owner
 * of the entries keeps (hash_of(owner, id)); callers compare the entries
 * a lookup walks. Never iterated: nothing depends on its order. */
struct htab {
    size_t cap, n;                   /* cap: a power of two */
    uint32_t *id;
};

typedef uint64_t (*htab_hash_fn)(const void *owner, uint32_t id);

/* The slots a lookup of hash h walks: `j` names the slot, id[j] - 1 the
 * entry. */
#define HTAB_FOR(t, h, j)                                                   \
    for (size_t j = (t)->cap ? (size_t)(h) & ((t)->cap - 1) : 0;           \
         (t)->cap && (t)->id[j] != 0; j = (j + 1) & ((t)->cap - 1))

static inline int htab_grow(struct htab *t, const void *owner, htab_hash_fn hash_of)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    uint32_t *v;

    if (cap > SIZE_MAX / 2 / sizeof(*v) || (v = calloc(cap, sizeof(*v))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < t->cap; i++) {
        size_t j;
        if (t->id[i] == 0)
            continue;
        for (j = hash_of(owner, t->id[i] - 1) & (cap - 1); v[j] != 0; j = (j + 1) & (cap - 1))
            ;
        v[j] = t->id[i];
    }
    free(t->id);
    t->id = v;
    t->cap = cap;
    return 0;
}

/* Room for `n` entries at most half full, before they are added. */
static inline int htab_reserve(struct htab *t, size_t n, const void *owner, htab_hash_fn hash_of)
{
    while (n * 2 > t->cap)
        if (htab_grow(t, owner, hash_of) != 0)
            return EBB_ENOMEM;
    return 0;
}

/* Add entry `id` of hash h (the caller found no equal entry). */
static inline int htab_add(struct htab *t, uint64_t h, uint32_t id, const void *owner,
                           htab_hash_fn hash_of)
{
    size_t j;

    if (htab_reserve(t, t->n + 1, owner, hash_of) != 0)
        return EBB_ENOMEM;
    for (j = h & (t->cap - 1); t->id[j] != 0; j = (j + 1) & (t->cap - 1))
        ;
    t->id[j] = id + 1;
    t->n++;
    return 0;
}

#endif
