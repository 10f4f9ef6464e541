/* engine/base/vec.h: the engine's one growable array, lists of ids in a
 * map, and a stable sort. Internal to the engine; every folder may use it
 * (base/ knows no Kubernetes object). Any thread: nothing here is shared.
 *
 * A vector is any struct with members `v` (T *), `n` and `cap` (both
 * uint32_t, or both size_t): EBB_VEC(T) declares one counted in size_t; a
 * struct that keeps thousands of small vectors counts in uint32_t (struct
 * ebb_idlist). An array kept as separate fields grows with ebb__reserve.
 * Growth is checked at one place, ebb__vec_grow: `cap` never exceeds what
 * its type or a size_t of bytes holds, a request past that fails with
 * EBB_ENOMEM, and a failed growth leaves the array as it was.
 *
 * The macros evaluate their arguments more than once (but for `x`): pass
 * plain lvalues. They answer 0 or EBB_ENOMEM. */
#ifndef EBB_VEC_H
#define EBB_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ebb/common.h"
#include "ebb/str.h"

#define EBB_VEC(T) struct { T *v; size_t n, cap; }

/* Room for `need` elements (n is not changed). */
#define ebb__vec_reserve(vec, need) ebb__reserve((vec)->v, (vec)->cap, need)

/* Append x (of the element type: the assignment checks it). */
#define ebb__vec_push(vec, x) ebb__vec_push_counted(vec, x, NULL)

/* ebb__vec_push that adds what the array grows by, in bytes, to *bytes
 * (a size_t; may be NULL): for memory charged to a script, which must
 * equal what is held. */
#define ebb__vec_push_counted(vec, x, bytes)                                              \
    (((vec)->n < (vec)->cap ||                                                            \
      EBB__GROW((vec)->v, (vec)->cap, (size_t)(vec)->n + 1, bytes) == 0)                  \
         ? ((vec)->v[(vec)->n++] = (x), 0)                                                \
         : EBB_ENOMEM)

/* Free the elements' array and empty the vector (what the elements own is
 * the caller's to free first). */
#define ebb__vec_free(vec) (free((vec)->v), (vec)->v = NULL, (vec)->n = 0, (vec)->cap = 0)

/* An array kept as separate fields: room for `need` elements in p, whose
 * capacity is the lvalue `cap`. Arrays that share one count (parallel
 * arrays) each grow from a copy of it: equal requests get equal answers. */
#define ebb__reserve(p, cap, need) EBB__GROW(p, cap, need, NULL)
#define ebb__reserve_counted(p, cap, need, bytes) EBB__GROW(p, cap, need, bytes)

/* The first capacity of a vector (a map may hold thousands of them). */
#define EBB_VEC_FIRST 4

/* The typed macros' way in: `cap` must be 4 or sizeof(size_t) bytes wide
 * (a wider or narrower count is a compile error here). */
#define EBB__GROW(p, cap, need, bytes)                                                    \
    ebb__vec_grow(&(p), &(cap),                                                           \
                  sizeof(char[sizeof(cap) == sizeof(uint32_t) || sizeof(cap) == sizeof(size_t) \
                                  ? 1 : -1]) * sizeof(cap),                                \
                  (need), sizeof(*(p)), EBB_VEC_FIRST, (bytes))

/* Make room for `need` elements of `size` bytes in the array whose address
 * is `pp` (any T **), of capacity *cap (a uint32_t when capsize is 4, else
 * a size_t). The new capacity is at least need, at least twice the old one
 * (so that n pushes cost O(n)), at least `first` on the first growth, and
 * at most what *cap's type and a size_t of bytes can hold. 0 with *cap
 * updated and `(new - old) * size` added to *bytes (may be NULL); or
 * EBB_ENOMEM, with the array, *cap and *bytes as they were. */
int ebb__vec_grow(void *pp, void *cap, size_t capsize, size_t need, size_t size, size_t first,
                  size_t *bytes);

/* The untyped form (size_t capacity, first growth 16): make room for `need`
 * elements of `size` bytes in *p, which holds *cap. 0, or EBB_ENOMEM with
 * *p and *cap unchanged. New code uses the macros above. */
int ebb__grow(void **p, size_t *cap, size_t need, size_t size);

/* ---- lists of ids in a map ------------------------------------------------ */

/* A list of uint32_t ids (pods, members): counted in 32 bits, as an index
 * holds one per label value or topology domain. */
struct ebb_idlist {
    uint32_t n, cap;
    uint32_t *v;
};

struct ebb_map;

/* The list stored under (a, b) in m (a map whose values are all lists),
 * made empty on first use; NULL when out of memory. `bytes` (may be NULL)
 * gets what a new list and the map's growth hold. */
struct ebb_idlist *ebb__idlist_at(struct ebb_map *m, ebb_str a, ebb_str b, size_t *bytes);

/* Free every list of m, then m's slots. */
void ebb__idlists_free(struct ebb_map *m);

/* ---- sorting ------------------------------------------------------------- */

/* Sort n elements of `size` bytes, stable (equal elements keep their
 * order), in O(n log n) whatever the input; a run already in order costs
 * one comparison per element. 0, or EBB_ENOMEM (for the n-element scratch
 * buffer) with the array unchanged. */
int ebb__sort_stable(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
