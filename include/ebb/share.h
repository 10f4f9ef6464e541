/* ebb/share.h: immutable arrays held by many objects at once.
 *
 * The pods of one template carry the same labels, owners, tolerations,
 * images, requests and container statuses, byte for byte once their strings
 * are interned. The decoder offers each such array to ebb_share_intern and
 * keeps the identical one already shared instead of its own; a copy of a
 * pod (a what-if's replacement, a scheduler memo) takes a reference to each
 * array instead of copying it.
 *
 * The invariant: an array the table holds is never written. A writer asks
 * ebb_share_is first and writes a private copy; every free of an array that
 * may be shared goes through ebb_share_release, which says whether the
 * caller held the last reference (or a private array) and so releases the
 * contents and frees it. An array is known by its address, its kind and its
 * length in bytes, which every call names the same way.
 *
 * One process-wide table; not thread-safe: it belongs to whichever thread
 * owns the interned strings (ebb/str.h).
 */
#ifndef EBB_SHARE_H
#define EBB_SHARE_H

#include "common.h"

/* What an array holds: arrays of different kinds are never shared. */
enum ebb_share_kind {
    EBB_SHARE_KV = 1,            /* struct ebb_kv (labels, annotations, nodeSelector) */
    EBB_SHARE_OWNERS,            /* struct ebb_owner */
    EBB_SHARE_TOLERATIONS,       /* struct ebb_toleration */
    EBB_SHARE_CSTATUS,           /* struct ebb_cstatus */
    EBB_SHARE_CONDITIONS,        /* struct ebb_condition */
    EBB_SHARE_STRS,              /* ebb_str (images, claim names) */
    EBB_SHARE_RQ,                /* struct ebb_rq (requests) */
    EBB_SHARE_HOST_PORTS,        /* struct ebb_host_port */
    EBB_SHARE_TSC,               /* struct ebb_tsc (deep) */
    EBB_SHARE_AFFINITY,          /* one struct ebb_affinity (deep) */
};

/* Offer `a`, `bytes` long, built by the caller: returns the shared array
 * identical to it, with a reference taken for the caller, or `a` itself,
 * now shared. When the result is not `a` the caller drops its `a`
 * (contents and all). NULL, empty, or out of memory: `a`, as it was. */
void *ebb_share_intern(int kind, void *a, size_t bytes);

/* One more holder of `a` (shared or not yet): true when `a` may now be held
 * twice; false only out of memory (the caller copies). */
bool ebb_share_ref(int kind, const void *a, size_t bytes);

/* One holder less: true when the caller held the last reference or `a` was
 * never shared, and so releases its contents and frees it. NULL: false. */
bool ebb_share_release(int kind, const void *a, size_t bytes);

/* true while the table holds `a`: it must not be written. */
bool ebb_share_is(int kind, const void *a, size_t bytes);

/* Arrays compared by a function rather than by their bytes (structs that
 * hold arrays of their own), `n` elements long: the caller hashes the
 * contents, the same way for every call on one array. */
typedef bool ebb_share_same_fn(const void *a, const void *b, size_t n);
void *ebb_share_intern_deep(int kind, void *a, size_t n, uint32_t hash, ebb_share_same_fn *same);
bool ebb_share_ref_deep(int kind, const void *a, size_t n, uint32_t hash);
bool ebb_share_release_deep(const void *a, uint32_t hash);

/* Arrays the table holds (tests, metrics). */
size_t ebb_share_count(void);

/* Tests: every hash the same from now on (true) or not (false), so that
 * only the comparison tells arrays apart. Call it with the table empty. */
void ebb__share_collide(bool on);

#endif
