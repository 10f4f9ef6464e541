/* ebb/memstore.h: the memory of evictions (ebb/evmemory.h) kept in the
 * cluster by `ebb run`: one ConfigMap in ebb's namespace (the Lease's),
 * named EBB_MEMSTORE_NAME, its key EBB_MEMSTORE_KEY holding
 * ebb_evmem_encode's text. engine/kube/memory_store.c; loop thread only.
 *
 * The store never touches the runner's memory itself (a cycle's job may be
 * using it on the engine thread): a load hands back a decoded copy that the
 * caller merges (ebb_memstore_merge) when no job runs; a save is given the
 * encoded text made when no job ran. */
#ifndef EBB_MEMSTORE_H
#define EBB_MEMSTORE_H

#include <stdbool.h>
#include <uv.h>

#include "ebb/evmemory.h"

#define EBB_MEMSTORE_NAME "ebb-eviction-memory"
#define EBB_MEMSTORE_KEY "evictions.json"

struct ebb_kube;
struct ebb_memstore;

/* A load ended: ok (the object was read, or is absent: an empty memory) and
 * `read` the memory it held (the store's: merge it before the next load),
 * or !ok and ebb_memstore_error says why. */
typedef void (*ebb_memstore_load_cb)(void *ud, bool ok, struct ebb_evmem *read);

int ebb_memstore_create(struct ebb_kube *kube, const char *ns, ebb_memstore_load_cb on_load, void *ud,
                        struct ebb_memstore **out);
void ebb_memstore_destroy(struct ebb_memstore *s);   /* the kube client closed first; NULL-safe */
/* On the way out: a load in flight (retrying against a server that does
 * not answer) is cancelled and none is asked again; a write in flight
 * goes on (the caller drains writes). NULL-safe. */
void ebb_memstore_stop_reading(struct ebb_memstore *s);

/* GET the object; on_load follows. Ignored while a request is in flight
 * (a load is asked again when it ends). */
void ebb_memstore_load(struct ebb_memstore *s);
/* Write `text` (ebb_evmem_encode's; copied): PUT with the resourceVersion
 * last seen, POST when the object does not exist; on a 409 the object is
 * read again, merged with `text` (both bounded again) and written once
 * more. A save asked while a request is in flight replaces the one
 * waiting. */
void ebb_memstore_save(struct ebb_memstore *s, const char *text, size_t len);
/* Whether a load succeeded once (writes wait for it: an object that could
 * not be read is never overwritten). */
bool ebb_memstore_loaded(const struct ebb_memstore *s);
/* Whether the last save failed (the caller saves again at its next cycle). */
bool ebb_memstore_save_failed(const struct ebb_memstore *s);
/* Why the object cannot be read or written ("read ConfigMap ns/name: 403
 * ..."), NULL while it can. */
const char *ebb_memstore_error(const struct ebb_memstore *s);
bool ebb_memstore_busy(const struct ebb_memstore *s);
/* The memory the last successful load read (the store's; valid until the
 * next load ends). */
struct ebb_evmem *ebb_memstore_read(struct ebb_memstore *s);

/* Add to `into` the entries of `from` it lacks (same time, namespace, pod
 * and uid: the same eviction) and the landings it does not know yet.
 * 0 or EBB_ENOMEM. */
int ebb_memstore_merge(struct ebb_evmem *into, const struct ebb_evmem *from);

#endif
