/* ebb/cache.h: the store of decoded objects and its indexes.
 *
 * Filled by the snapshot loader or the watch cache; read by the cycle.
 * Pods live in slots (stable while the pod exists; a reused slot gets a new
 * serial, so a Lua view of a deleted pod is detected). Indexes: pods by
 * ns/name, by node (sorted by namespace/name on demand), by owner uid;
 * nodes, namespaces, priority classes, PVCs, metrics by name; PDBs by
 * namespace. Engine thread only.
 *
 * Lookups take interned strings (ebb_str): a name that was never interned
 * (ebb_str_find returns NULL) is in no cache, so callers with raw text do
 * `ebb_cache_pod(c, ebb_str_find(ns, n1), ebb_str_find(name, n2))`.
 */
#ifndef EBB_CACHE_H
#define EBB_CACHE_H

#include <stdio.h>

#include "decode.h"

struct ebb_cache;

struct ebb_podvec {
    uint32_t n, cap;
    struct ebb_pod **v;
    bool sorted;                 /* by namespace, then name */
    /* Kept up to date on every put/delete/hide: the summed requests and the
     * count of the pods that occupy the node (not Succeeded/Failed, not
     * hidden), as the scheduler and NodeFit count them. Indexed by
     * resource id; req[EBB_RES_PODS] is unused (see nactive). */
    uint32_t nactive;
    int64_t req[EBB_RES_MAX];
    /* the exact sums, of which req[] is the saturated value: pods of huge
     * quantities come and go without the sum wrapping or drifting */
    __int128 exact[EBB_RES_MAX];
    /* the same over the pods' non-zero cpu and memory requests (ebb_pod's
     * nz_cpu, nz_mem: the scheduler's NonZeroRequested) */
    int64_t nz[2];
    __int128 nz_exact[2];
};

int ebb_cache_create(struct ebb_cache **out);
void ebb_cache_destroy(struct ebb_cache *c);   /* NULL-safe */

/* Insert or replace (same namespace/name) an object; takes ownership of
 * obj->u on success, and frees the object it replaces. EBB_EINVAL for
 * an unknown kind. */
int ebb_cache_put(struct ebb_cache *c, struct ebb_object *obj);
/* Remove and free; 0 or EBB_ENOENT. `ns` is ignored for cluster-scoped kinds. */
int ebb_cache_delete(struct ebb_cache *c, int kind, ebb_str ns, ebb_str name);

struct ebb_pod *ebb_cache_pod(const struct ebb_cache *c, ebb_str ns, ebb_str name);
struct ebb_node *ebb_cache_node(const struct ebb_cache *c, ebb_str name);
struct ebb_namespace *ebb_cache_namespace(const struct ebb_cache *c, ebb_str name);
struct ebb_priority_class *ebb_cache_priority_class(const struct ebb_cache *c, ebb_str name);
struct ebb_pvc *ebb_cache_pvc(const struct ebb_cache *c, ebb_str ns, ebb_str name);
struct ebb_node_metrics *ebb_cache_node_metrics(const struct ebb_cache *c, ebb_str node);
struct ebb_pod_metrics *ebb_cache_pod_metrics(const struct ebb_cache *c, ebb_str ns, ebb_str name);
struct ebb_koord_node_metric *ebb_cache_koord_metric(const struct ebb_cache *c, ebb_str node);
/* A Prometheus query's result recorded in the snapshot (ebb record --policy). */
struct ebb_prom_result *ebb_cache_prom_result(const struct ebb_cache *c, const char *query);
/* A Service, ReplicaSet, StatefulSet or ReplicationController (kind). */
struct ebb_workload *ebb_cache_workload(const struct ebb_cache *c, int kind, ebb_str ns,
                                        ebb_str name);

/* Slot iteration: for (i = 0; i < ebb_cache_pod_slots(c); i++) if ((p = ebb_cache_pod_at(c, i))) */
uint32_t ebb_cache_pod_slots(const struct ebb_cache *c);
struct ebb_pod *ebb_cache_pod_at(const struct ebb_cache *c, uint32_t slot);
uint32_t ebb_cache_node_slots(const struct ebb_cache *c);
struct ebb_node *ebb_cache_node_at(const struct ebb_cache *c, uint32_t slot);

/* Nodes sorted by name (a stable order for cycles and output). The array
 * is owned by the cache and valid until the next change. */
struct ebb_node *const *ebb_cache_nodes_sorted(struct ebb_cache *c, uint32_t *n);

/* Pods bound to `node` (spec.nodeName), sorted by namespace/name, including
 * pods marked EBB_POD_GONE (callers skip them). Never NULL. */
const struct ebb_podvec *ebb_cache_pods_on_node(struct ebb_cache *c, ebb_str node);

/* Sort every node's pod index and the node list now rather than on first
 * use (the snapshot loader calls this when a file is in). */
void ebb_cache_build_indexes(struct ebb_cache *c);

/* A pod occupies its node's resources: bound, not Succeeded/Failed, not hidden. */
bool ebb_pod_occupies(const struct ebb_pod *p);

/* Pods whose ownerReferences name `uid`, those evicted in this cycle
 * included (as upstream's informer index still holds them). */
uint32_t ebb_cache_count_owned(const struct ebb_cache *c, ebb_str owner_uid);

/* PDBs of a namespace (NULL when none). */
const struct ebb_pdb *const *ebb_cache_pdbs_in(const struct ebb_cache *c, ebb_str ns, uint32_t *n);

/* The PDBs of p's namespace whose selector may select p for an eviction
 * (nil, empty and nothing selectors, which select nothing there, left out):
 * a superset of those that do, in the order of ebb_cache_pdbs_in, each
 * once, into out[0..max). Returns how many; more than max: out is partial,
 * use ebb_cache_pdbs_in. */
uint32_t ebb_cache_pdbs_selecting(const struct ebb_cache *c, const struct ebb_pod *p,
                                  const struct ebb_pdb **out, uint32_t max);

/* Generic counts and iteration for the other kinds. */
size_t ebb_cache_count(const struct ebb_cache *c, int kind);
void ebb_cache_each(const struct ebb_cache *c, int kind, void (*fn)(void *obj, void *ud), void *ud);

/* Hide a pod for the rest of the cycle (evicted); it stays in its slot. */
void ebb_cache_hide_pod(struct ebb_cache *c, struct ebb_pod *p);
/* Show every hidden pod again (after a dry-run cycle). */
void ebb_cache_unhide_all(struct ebb_cache *c);
/* Show one hidden pod again (a prediction that hid it for a moment). */
void ebb_cache_unhide_pod(struct ebb_cache *c, struct ebb_pod *p);
/* The pods hidden and still there, in the order they were hidden, *n of
 * them; *epoch changes whenever the list starts over (unhide_all, purge):
 * a reader keeps its place in it by the two. NULL when the list is not
 * whole (out of memory): read the pods instead. */
struct ebb_pod *const *ebb_cache_hidden(const struct ebb_cache *c, size_t *n, uint64_t *epoch);
/* Delete every hidden pod (between cycles in simulation). */
void ebb_cache_purge_hidden(struct ebb_cache *c);

/* Bumped by every change; lets readers know a cached derivation is stale. */
uint64_t ebb_cache_version(const struct ebb_cache *c);
/* Bumped by every change but hiding and showing pods: what is derived from
 * the objects alone (not from which pods a cycle has evicted) stays valid
 * while it lasts. */
uint64_t ebb_cache_content_version(const struct ebb_cache *c);
/* Bumped only when an object is freed (delete, replace, purge): arrays of
 * pointers made at one epoch are safe to read while it lasts. */
uint64_t ebb_cache_epoch(const struct ebb_cache *c);

/* Source files for pod.object: the cache keeps `f` open (owns it) and
 * returns its index for ebb_src.file (an index a moved file left free, or
 * a new one). */
int ebb_cache_add_source(struct ebb_cache *c, FILE *f, uint16_t *index);
/* Read the JSON bytes of `src` into a malloc'd NUL-terminated buffer. */
int ebb_cache_read_source(const struct ebb_cache *c, const struct ebb_src *src, char **out,
                          size_t *len);

/* Bytes of each source file that cached objects still point at, into
 * live[0..n). */
void ebb_cache_sources_live(const struct ebb_cache *c, uint64_t *live, size_t n);
/* Copy what cached objects still read of file `from` to the end of file
 * `to`, point them at the copy, and close `from` (its index is free for
 * ebb_cache_add_source). *moved (may be NULL) gets the bytes copied. On
 * failure nothing points elsewhere and `from` stays; what was appended to
 * `to` is never read. A watch appends every new version of an object to a
 * file: moving what is still read out of old files is how they are
 * reclaimed. */
int ebb_cache_move_source(struct ebb_cache *c, uint16_t from, uint16_t to, uint64_t *moved);

/* A file no longer written to: flushed and reopened without the buffer
 * its writes used (reads use pread). */
int ebb_cache_seal_source(struct ebb_cache *c, uint16_t file);

/* The full object of `src` as a cJSON tree (caller deletes), or NULL. */
struct cJSON *ebb_cache_read_object(const struct ebb_cache *c, const struct ebb_src *src);

/* Whether whoever fills the cache keeps the objects' text as they come
 * (ebb_src): a snapshot's cache always does; a watch cache only while a
 * script names pod.object or node.object (it writes every version of
 * every pod to a file otherwise read by nobody). */
void ebb_cache_keep_text(struct ebb_cache *c, bool on);
bool ebb_cache_keeps_text(const struct ebb_cache *c);
/* A script read an object's text the cache was not keeping (a name the
 * scan of its source could not see): noted for whoever fills the cache,
 * which starts keeping it and lists the objects again. */
void ebb_cache_text_asked(struct ebb_cache *c);
/* ... and whether that happened since the last call (which clears it). */
bool ebb_cache_text_wanted(struct ebb_cache *c);

/* Approximate bytes held by cached objects (bench, metrics). */
size_t ebb_cache_bytes(const struct ebb_cache *c);

#endif
