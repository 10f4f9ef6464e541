/* ebb/topology.h: the domain math of RemovePodsViolatingTopologySpreadConstraint
 * (kubernetes-sigs/descheduler v0.36 topologyspreadconstraint.go), in C so a
 * cycle over many pods never calls into Lua per pod.
 *
 * Who calls it: engine/lua/lua_topology.c (ebb.topology_balance and
 * ebb.topology_domains) on the engine thread, during a plugin call; the C
 * unit tests drive the steps one by one.
 *
 * The steps, per namespace (ebb_topology_load, then for each constraint
 * ebb_topology_count, ebb_topology_is_balanced, ebb_topology_balance):
 *
 *  1. Distinct constraints of the namespace's pods: whenUnsatisfiable in the
 *     configured set; the labelSelector merged with the pod's values of
 *     matchLabelKeys; nodeAffinityPolicy nil -> Honor, nodeTaintsPolicy nil ->
 *     Ignore; the pod's node selector + required node affinity (Honor) and its
 *     tolerations (Honor) are part of the constraint; equal constraints are
 *     kept once (a hash, not a pairwise scan).
 *  2. Domains: one per value of topologyKey among the nodes that pass the
 *     inclusion policies, plus (as upstream, by map insertion) one per value
 *     of a node that holds a counted pod. Counted: pods not terminating that
 *     the merged selector matches, on a node of the set that has the key.
 *     Candidates come from a (label key, value) index of the namespace when
 *     the selector has an In requirement, so many constraints in a big
 *     namespace do not multiply into pods x constraints selector checks.
 *  3. Balanced when max - min <= maxSkew (no domains: balanced).
 *  4. balanceDomains: ideal = sum / #domains; domains ascending by size (ties
 *     by value, upstream's order there is random); pods of a domain ordered
 *     non-evictable first, then pods with a nodeSelector or node affinity,
 *     then the rest, each group by ascending priority (unset first), ties in
 *     listing order; the two-pointer loop takes movePods = min(ceil(size_j -
 *     ideal), ceil(ideal - size_i), ceil((skew - maxSkew) / 2)) pods from the
 *     tail of domain j after a stable re-sort that moves the pods fitting
 *     some node of a below-average domain to the tail; a taken pod is marked
 *     unless topologyBalanceNodeFit is on and it fits none of those nodes (it
 *     still counts as moved).
 *
 * Pods and nodes are borrowed from the cache for the life of the object (one
 * plugin call); nothing here changes the cache.
 */
#ifndef EBB_TOPOLOGY_H
#define EBB_TOPOLOGY_H

#include <stdatomic.h>
#include "cache.h"

/* Bits of ebb_topology_opts.when. */
enum {
    EBB_TOPO_DO_NOT_SCHEDULE = 1u << EBB_TSC_DO_NOT_SCHEDULE,
    EBB_TOPO_SCHEDULE_ANYWAY = 1u << EBB_TSC_SCHEDULE_ANYWAY,
};

struct ebb_topology_opts {
    unsigned when;                  /* EBB_TOPO_*: the constraints to act on */
    bool node_fit;                  /* topologyBalanceNodeFit */
    /* Evictor.Filter for the in-domain order (asked at most once per pod
     * and namespace); NULL: every pod is evictable. */
    bool (*evictable)(const struct ebb_pod *pod, void *ud);
    void *ud;
    /* Checked in the loops: non-zero stops the work with EBB_ELIMIT. May
     * be NULL. */
    const atomic_int *stop;
};

/* One distinct constraint of the loaded namespace. */
struct ebb_topo_constraint {
    int32_t max_skew;
    uint8_t when;                   /* EBB_TSC_* of the first pod declaring it */
    uint8_t affinity_policy;        /* EBB_POLICY_HONOR or _IGNORE (resolved) */
    uint8_t taints_policy;
    ebb_str topology_key;           /* borrowed from the pod */
    struct ebb_selector *selector;  /* merged with matchLabelKeys; owned */
    const struct ebb_pod *pod;      /* the first pod declaring it: its node
                                       selector, affinity and tolerations
                                       stand for all (they are equal under
                                       Honor, unused under Ignore) */
};

struct ebb_topo_domain {
    ebb_str value;                  /* the node label value */
    uint32_t size;                  /* what balanceDomains counts: npods, then
                                       grown / shrunk by the moves */
    uint32_t npods;
    uint32_t *pods;                 /* indices into the loaded pods */
    uint32_t cap;
};

struct ebb_topo_domains {
    size_t n;
    struct ebb_topo_domain *v;      /* by value after counting; by size (then
                                       value) after ebb_topology_balance */
    uint32_t sum;                   /* pods counted */
    size_t cap;
};

struct ebb_topology;

/* A topology over `nodes` (the cycle's; borrowed until destroy). `c` gives
 * the fit checks their view of each node's pods. EBB_EINVAL on NULL
 * arguments; EBB_ENOMEM. */
int ebb_topology_create(struct ebb_cache *c, struct ebb_node *const *nodes, size_t nnodes,
                        const struct ebb_topology_opts *opts, struct ebb_topology **out);
void ebb_topology_destroy(struct ebb_topology *t);   /* NULL-safe */

/* Load one namespace's pods, in listing order (borrowed until the next load
 * or destroy), and collect their distinct constraints. Marks are reset. */
int ebb_topology_load(struct ebb_topology *t, struct ebb_pod *const *pods, size_t npods);

size_t ebb_topology_nconstraints(const struct ebb_topology *t);
const struct ebb_topo_constraint *ebb_topology_constraint(const struct ebb_topology *t, size_t i);

/* Pre-create and count the domains of constraint i. The result is owned by
 * t and valid until the next count, load or destroy. */
int ebb_topology_count(struct ebb_topology *t, size_t i, const struct ebb_topo_domains **out);

/* max - min <= max_skew over the domains (true when there are none). */
bool ebb_topology_is_balanced(const struct ebb_topo_domains *d, int32_t max_skew);

/* balanceDomains on the domains last counted (constraint i must be the one
 * counted): sorts them and marks the pods to evict. EBB_ESTATE when i was
 * not counted last. */
int ebb_topology_balance(struct ebb_topology *t, size_t i);

/* The loaded namespace's marked pods as indices into the loaded pods, by
 * pod name, into out (room for npods); returns how many. `skipped`:
 * instead, the pods taken by a move but left in place by
 * topologyBalanceNodeFit and marked by no other constraint. */
size_t ebb_topology_marked(const struct ebb_topology *t, bool skipped, uint32_t *out);

/* Why loaded pod `idx` was marked: the first constraint that took it and
 * the domain it was taken from. false if it is not marked. */
bool ebb_topology_mark_reason(const struct ebb_topology *t, uint32_t idx, ebb_str *topology_key,
                              ebb_str *value, int32_t *max_skew);

/* pods[0..n) stably sorted by namespace name into out (n slots): the
 * grouping ebb_topology_plan loads namespace by namespace. 0 or
 * EBB_ENOMEM. */
int ebb_topology_by_namespace(struct ebb_pod *const *pods, size_t n, struct ebb_pod **out);

/* The whole plugin over a set of pods of any namespaces (listing order):
 * namespaces are taken in name order, each loaded, counted and balanced.
 * The pods to evict come by namespace, then name (upstream ranges over Go
 * maps there; this order is ours). */
struct ebb_topology_result {
    size_t nevict, nskipped;
    struct ebb_pod **evict;         /* owned array, borrowed pods */
    struct ebb_pod **skipped;       /* see ebb_topology_marked */
    /* parallel to evict: the reason parts of ebb_topology_mark_reason */
    ebb_str *keys, *values;
    int32_t *max_skews;
};

int ebb_topology_plan(struct ebb_topology *t, struct ebb_pod *const *pods, size_t npods,
                      struct ebb_topology_result *out);
void ebb_topology_result_free(struct ebb_topology_result *r);   /* NULL-safe, idempotent */

#endif
