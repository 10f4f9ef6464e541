/* engine/base/map.h: an open-addressing map from a pair of interned strings to a
 * pointer. Internal to the engine (cache indexes, Lua-side lookups). */
#ifndef EBB_MAP_H
#define EBB_MAP_H

#include "ebb/str.h"

struct ebb_map_slot {
    ebb_str a, b;        /* a == NULL: empty; a == MAP_TOMB: deleted */
    void *v;
};

struct ebb_map {
    size_t cap, used, live;    /* used counts tombstones */
    struct ebb_map_slot *s;
};

void ebb__map_init(struct ebb_map *m);
void ebb__map_free(struct ebb_map *m);          /* frees slots, not values */
void *ebb__map_get(const struct ebb_map *m, ebb_str a, ebb_str b);
/* Insert or replace; *old (may be NULL) gets the replaced value or NULL. */
int ebb__map_put(struct ebb_map *m, ebb_str a, ebb_str b, void *v, void **old);
void *ebb__map_del(struct ebb_map *m, ebb_str a, ebb_str b);

/* Iterate: for (size_t i = 0; i < m->cap; i++) if (ebb__map_live(m, i)) ... */
bool ebb__map_live(const struct ebb_map *m, size_t i);

/* Counters by one string (b NULL), the value the count itself: a key with
 * a count holds a reference to it. 0 for k NULL or absent. */
uint32_t ebb__count_get(const struct ebb_map *m, ebb_str k);
/* +1, or -1 (a count reaching 0 leaves the map); 0 or EBB_ENOMEM. */
int ebb__count_add(struct ebb_map *m, ebb_str k, int delta);
void ebb__counts_free(struct ebb_map *m);   /* releases the keys, frees the slots */

#endif
