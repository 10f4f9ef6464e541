/* ebb/changes.h: what changed in the cache, for event-triggered runs.
 *
 * The informers report every change they apply (kind, type, key). This
 * unit turns them into the changes plugins declare (EBB_TRIGGER_*) and the
 * nodes concerned: it keeps a fingerprint of each node (labels, taints,
 * unschedulable, readiness) to tell which part of a node changed, and
 * takes a pod's node from the cache. Changes accumulate until taken, so a
 * burst of them becomes one run.
 */
#ifndef EBB_CHANGES_H
#define EBB_CHANGES_H

#include "cache.h"

/* The changes a plugin may react to, besides the periodic cycle: its table
 * lists them by name, `triggers = { "node-taints", "node-labels" }`. */
enum ebb_trigger {
    EBB_TRIGGER_NODE_ADDED = 1u << 0,          /* "node-added" */
    EBB_TRIGGER_NODE_LABELS = 1u << 1,         /* "node-labels" */
    EBB_TRIGGER_NODE_TAINTS = 1u << 2,         /* "node-taints" */
    EBB_TRIGGER_NODE_UNSCHEDULABLE = 1u << 3,  /* "node-unschedulable" */
    EBB_TRIGGER_NODE_READY = 1u << 4,          /* "node-ready": readiness changed */
    EBB_TRIGGER_POD_ADDED = 1u << 5,           /* "pod-added": a new pod on a node */
    EBB_TRIGGER_POD_UPDATED = 1u << 6,         /* "pod-updated": a pod on a node changed */
    EBB_TRIGGER_MAX_BIT = 7,
};
const char *ebb_trigger_name(unsigned bit);          /* one bit -> "node-taints" */
unsigned ebb_trigger_parse(const char *name);         /* 0 if unknown */

struct ebb_changes;

int ebb_changes_create(struct ebb_changes **out);
void ebb_changes_destroy(struct ebb_changes *c);   /* NULL-safe */

/* A change the cache has applied ("ADDED", "MODIFIED", "DELETED"; other
 * types only refresh fingerprints). Returns the EBB_TRIGGER_* bits it
 * amounts to among `wanted` (they accumulate); node fingerprints are kept
 * up to date whatever `wanted` is, so the first changes after a sync are
 * told apart from the listing itself. */
unsigned ebb_changes_observe(struct ebb_changes *c, const struct ebb_cache *cache, int kind,
                             const char *type, ebb_str ns, ebb_str name, unsigned wanted);

/* The accumulated bits (0: none) and the names of the nodes concerned,
 * sorted; the names stay valid until the next take or destroy. */
unsigned ebb_changes_take(struct ebb_changes *c, const char *const **nodes, size_t *n);

#endif
