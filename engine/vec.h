/* engine/vec.h: growing a malloc'd array. Internal to the engine. */
#ifndef EBB_VEC_H
#define EBB_VEC_H

#include <stddef.h>

/* Make room for `need` elements of `size` bytes in *p, which holds *cap:
 * at least 16, doubling. 0, or EBB_ENOMEM with *p and *cap unchanged. */
int ebb__grow(void **p, size_t *cap, size_t need, size_t size);

#endif
