/* ebb/background.h: evictions in background (the EvictionsInBackground
 * feature gate; upstream's evictionRequestsCache in
 * pkg/descheduler/evictions/evictions.go).
 *
 * Some controllers evict a pod their own way: KubeVirt live-migrates a
 * virtual machine and answers the Eviction with 429 "... Eviction triggered
 * evacuation ...". A pod annotated request-evict-only whose eviction is
 * answered so is being evicted in background: it is tracked here until it
 * is gone, counted against the eviction limits (per node, per namespace,
 * total) meanwhile, and not asked again. Pods that carry both
 * request-evict-only and eviction-in-progress are tracked the same way, as
 * the pod watch shows them.
 *
 * The engine owns one when the gate is on (engine/core/evict.c checks it, the
 * cycle's start seeds it from the cache); the pod watch feeds it through
 * ebb_engine_pod_changed, the eviction's answer through
 * ebb_engine_eviction_in_background (ebb.h). Loop thread only. */
#ifndef EBB_BACKGROUND_H
#define EBB_BACKGROUND_H

#include "model.h"

#define EBB_ANNOTATION_REQUEST_EVICT_ONLY "descheduler.alpha.kubernetes.io/request-evict-only"
#define EBB_ANNOTATION_EVICTION_IN_PROGRESS "descheduler.alpha.kubernetes.io/eviction-in-progress"
/* what the 429 says when the eviction went to the background */
#define EBB_EVICTION_IN_BACKGROUND_TEXT "Eviction triggered evacuation"
/* an eviction assumed from a 429 that no watch event confirms is forgotten
 * after this many seconds (upstream: 10 minutes) */
#define EBB_BACKGROUND_ASSUMED_TIMEOUT 600

struct ebb_background;

/* One pod being evicted in background. */
struct ebb_background_item {
    ebb_str ns, name, uid, node;     /* node may be NULL */
    ebb_str profile, plugin;         /* who asked (assumed only), else NULL */
    bool assumed;                    /* from a 429 answer, not (yet) from the watch */
    bool in_progress;                /* the pod last seen had eviction-in-progress */
    int64_t assumed_at;              /* seconds */
};

int ebb_background_create(struct ebb_background **out);
void ebb_background_destroy(struct ebb_background *bg);   /* NULL-safe */

/* Whether `pod` has the annotation (present, whatever its value). */
bool ebb_background_annotated(const struct ebb_pod *pod, const char *key);

/* What the watch now has for ns/name: `pod`, or NULL when it is gone. As
 * upstream's informer handlers: a pod without request-evict-only, or
 * Succeeded or Failed, is no longer tracked; one that lost
 * eviction-in-progress is forgotten (so it can be asked again); one with
 * both annotations is tracked. A pod that is gone (or replaced by one with
 * another uid) ends its entry: `done` (may be NULL) hears of an assumed one
 * first, so its eviction can be counted a success. */
typedef void (*ebb_background_done_fn)(void *ud, const struct ebb_background_item *it);
void ebb_background_observe(struct ebb_background *bg, ebb_str ns, ebb_str name,
                            const struct ebb_pod *pod, ebb_background_done_fn done, void *ud);

/* The eviction of ns/name (uid, node: may be NULL) asked by profile/plugin
 * went to the background at `now`; `pod` (may be NULL) is the pod as the
 * cache has it. A pod already tracked keeps its entry (upgraded to assumed
 * when only the watch knew it). Returns 0 or EBB_ENOMEM. */
int ebb_background_assume(struct ebb_background *bg, ebb_str ns, ebb_str name, ebb_str uid,
                          ebb_str node, const struct ebb_pod *pod, const char *profile,
                          const char *plugin, int64_t now);

/* Assumed entries older than EBB_BACKGROUND_ASSUMED_TIMEOUT at `now` are
 * dropped (no watch event confirmed them). */
void ebb_background_expire(struct ebb_background *bg, int64_t now);

bool ebb_background_has(const struct ebb_background *bg, const struct ebb_pod *pod);
uint32_t ebb_background_on_node(const struct ebb_background *bg, ebb_str node);
uint32_t ebb_background_in_namespace(const struct ebb_background *bg, ebb_str ns);
size_t ebb_background_count(const struct ebb_background *bg);

#endif
