/* engine/base/vec.h: growing and sorting a malloc'd array. Internal to the engine. */
#ifndef EBB_VEC_H
#define EBB_VEC_H

#include <stddef.h>

/* Make room for `need` elements of `size` bytes in *p, which holds *cap:
 * at least 16, doubling. 0, or EBB_ENOMEM with *p and *cap unchanged. */
int ebb__grow(void **p, size_t *cap, size_t need, size_t size);

/* Sort n elements of `size` bytes, stable (equal elements keep their
 * order), in O(n log n) whatever the input; a run already in order costs
 * one comparison per element. 0, or EBB_ENOMEM (for the n-element scratch
 * buffer) with the array unchanged. */
int ebb__sort_stable(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
