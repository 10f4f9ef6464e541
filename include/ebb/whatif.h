/* ebb/whatif.h: what-if runs (`ebb simulate --reschedule`): the evicted
 * pods' owners recreate them, the kube-scheduler model (ebb/sched.h)
 * places the replacements, and the next cycle sees them where they landed.
 *
 * Replacements (ebb_whatif_replacement): an evicted pod that was running
 * (not Succeeded or Failed) and whose controller is a ReplicaSet,
 * ReplicationController, StatefulSet, Job or DaemonSet comes back with the
 * same spec, a new uid and, but for a StatefulSet pod, a new name
 * (generateName: the owner's name and 5 random characters); a bare pod is
 * gone. A ReplicaSet or StatefulSet the snapshot holds with 0 replicas
 * recreates nothing.
 *
 * The record (struct ebb_whatif): every placement in order, what is still
 * pending and why, the pods of schedulers the model has no profile for,
 * node utilization after each cycle with its spread, evictions per cycle
 * and plugin, and loops: a workload with a pod evicted in one cycle and
 * one of its pods (its replacement or another) evicted by the same plugin
 * in a later cycle. Printed as JSON (added to the plan's), as a table, or
 * as the HTML report (ebb/report.h). Engine thread only.
 */
#ifndef EBB_WHATIF_H
#define EBB_WHATIF_H

#include <stdio.h>

#include "cache.h"
#include "plan.h"

/* ---- replacements --------------------------------------------------------- */

/* The controller that recreates `p` once it is evicted, or NULL (a bare
 * pod, a finished pod, another kind of owner, an owner scaled to 0). */
const struct ebb_owner *ebb_whatif_recreator(const struct ebb_cache *c, const struct ebb_pod *p);

/* A new pod for evicted `old` (not in the cache, unbound, Pending, created
 * `now`): same spec and labels, a name the cache does not hold (drawn with
 * *rng), a new uid; NULL when out of memory. */
struct ebb_pod *ebb_whatif_replacement(const struct ebb_cache *c, const struct ebb_pod *old,
                                       int64_t now, uint64_t *rng);

/* A pod the scheduler placed (about to be bound): Running and Ready,
 * started `now`, containers running with no restarts. 0 or EBB_ENOMEM. */
int ebb_whatif_mark_running(struct ebb_pod *p, int64_t now);
/* A pod that stays Pending: PodScheduled False, reason Unschedulable (or
 * SchedulingGated). 0 or EBB_ENOMEM. */
int ebb_whatif_mark_pending(struct ebb_pod *p, int64_t now, bool gated);

/* ---- the record ------------------------------------------------------------ */

struct ebb_whatif_placement {
    int cycle;                       /* 0: the snapshot's pending pods */
    char *pod;                       /* "ns/name" */
    char *replaces;                  /* "ns/name" of the evicted pod, or NULL */
    ebb_str from;                    /* the evicted pod's node, or NULL */
    ebb_str node;                    /* where it landed, or NULL */
    char *message;                   /* why not, or NULL */
    int status;                      /* EBB_SCHED_* */
    char *owner;                     /* "Kind ns/name" or NULL */
};

struct ebb_whatif_pending {
    char *pod;
    int since;                       /* the cycle it was created in (0: the snapshot) */
    int status;                      /* EBB_SCHED_UNSCHEDULABLE, _NO_PROFILE, _GATED */
    char *message;
};

struct ebb_whatif_loop {
    char *owner;                     /* "Kind ns/name" */
    ebb_str plugin;
    size_t ncycles;
    int *cycles;                     /* the cycles it evicted a pod of the owner in */
    size_t nnodes;
    ebb_str *nodes;                  /* nodes the pods were evicted from or landed on */
    size_t npods;
    char **pods;                     /* the pods evicted */
};

/* Spread of a utilization (percent of allocatable) across nodes. */
struct ebb_whatif_spread {
    double mean, stddev, min, max;
};

/* The cluster after a step: index 0 the snapshot as loaded, 1 after the
 * snapshot's pending pods were placed (cycle 0), then after each cycle's
 * evictions and replacements. */
struct ebb_whatif_state {
    int cycle;                       /* -1: the snapshot as loaded */
    size_t evicted, replaced, placed, unplaced, gone;
    size_t pending;                  /* pods waiting after the step */
    size_t guarded[3];               /* LoopGuard's refusals in the cycle: futile,
                                        cooldown, unavailable (ebb_whatif_guarded) */
    float *util;                     /* nnodes x {cpu, memory, pods} */
    struct ebb_whatif_spread spread[3];
};

struct ebb_whatif {
    size_t nnodes;
    char **nodes;                    /* node names, name order */
    size_t nplacements, cap_placements;
    struct ebb_whatif_placement *placements;
    size_t npending;
    struct ebb_whatif_pending *pending;
    size_t nloops, cap_loops;
    struct ebb_whatif_loop *loops;
    size_t nstates, cap_states;
    struct ebb_whatif_state *states;
    /* evictions per cycle and plugin (the plan's, counted): nplugins names,
     * per_cycle[cycle * nplugins + plugin] */
    size_t nplugins;
    ebb_str *plugins;
    size_t ncounted_cycles;
    size_t *per_cycle;
    /* bookkeeping for loops: evictions by owner and plugin (internal) */
    size_t nowned, cap_owned;
    struct ebb_whatif_owned *owned;
    struct ebb_map *owned_at;        /* (owner, plugin) -> index + 1 */
    bool converged;                  /* a cycle evicted nothing */
};

int ebb_whatif_create(struct ebb_cache *c, struct ebb_whatif **out);
void ebb_whatif_destroy(struct ebb_whatif *w);   /* NULL-safe */

/* Record the cluster after a step (see struct ebb_whatif_state); the
 * counters are the step's. */
int ebb_whatif_state(struct ebb_whatif *w, struct ebb_cache *c, int cycle, size_t evicted,
                     size_t replaced, size_t placed, size_t unplaced, size_t gone, size_t pending);

/* Strings are copied. */
int ebb_whatif_add_placement(struct ebb_whatif *w, int cycle, const char *pod, const char *replaces,
                             const char *from, const char *node, const char *message, int status,
                             const char *owner);
/* An eviction of cycle `cycle` by `plugin` of a pod of `owner` ("Kind
 * ns/name"; NULL: none) from `node`, for the loops and the per-plugin
 * counts. */
int ebb_whatif_add_eviction(struct ebb_whatif *w, int cycle, const char *plugin, const char *owner,
                            const char *pod, const char *node);
/* A replacement of a pod of `owner` landed on `node`: both interned (an
 * owner never evicted from, or NULL, has no record to add to). */
int ebb_whatif_landed(struct ebb_whatif *w, ebb_str owner, ebb_str node);
int ebb_whatif_set_pending(struct ebb_whatif *w, const struct ebb_whatif_pending *p, size_t n);
/* The last step's LoopGuard refusals, counted from the plan's refusals of
 * that cycle (why futile, cooldown, unavailable). Shown in the JSON (per
 * cycle "refusedByLoopGuard", summary "loopGuardRefusals"), the table and
 * the report only when some cycle has one. */
void ebb_whatif_guarded(struct ebb_whatif *w, const struct ebb_plan *p);
/* After the last cycle: find the loops. */
int ebb_whatif_finish(struct ebb_whatif *w);

/* The what-if keys added to a plan's JSON object (placements, pending,
 * loops, cycles, summary). */
struct cJSON;
int ebb_whatif_json(const struct ebb_whatif *w, struct cJSON *root);
/* The plan's JSON with the what-if keys (malloc'd text, caller frees). */
char *ebb_whatif_plan_json(const struct ebb_whatif *w, const struct ebb_plan *p, bool pretty);
void ebb_whatif_print_table(const struct ebb_whatif *w, FILE *out);

#endif
