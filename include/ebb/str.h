/* ebb/str.h: interned, reference-counted strings.
 *
 * Every name, label key and value, image, kind... in the cache is an
 * ebb_str: equal strings are the same pointer, so comparisons are pointer
 * compares and a label lookup never calls strcmp. Strings are counted so the
 * live cache, where pod names and hashes churn, does not grow forever.
 *
 * One process-wide table; not thread-safe (the engine runs on one thread).
 */
#ifndef EBB_STR_H
#define EBB_STR_H

#include "common.h"

typedef const char *ebb_str;   /* NUL-terminated; NULL means "absent" */

/* Intern `len` bytes of `s` (need not be NUL-terminated). Returns a new
 * reference, or NULL when out of memory. */
ebb_str ebb_str_intern(const char *s, size_t len);
ebb_str ebb_str_cstr(const char *s);          /* strlen(s) bytes */

/* The interned copy of `s` if one exists, without taking a reference, else
 * NULL. A lookup key that is not interned cannot match anything cached. */
ebb_str ebb_str_find(const char *s, size_t len);

ebb_str ebb_str_ref(ebb_str s);               /* +1; NULL-safe */
void ebb_str_release(ebb_str s);              /* -1, freed at 0; NULL-safe */
size_t ebb_str_len(ebb_str s);
uint32_t ebb_str_hash(ebb_str s);             /* stored at intern time */

/* Number of distinct strings alive (tests, metrics). */
size_t ebb_str_count(void);
/* Bytes held by the table and its strings (metrics, bench). */
size_t ebb_str_bytes(void);

/* Compare two possibly-NULL interned strings for sorting (NULL first). */
int ebb_str_cmp(ebb_str a, ebb_str b);

#endif
