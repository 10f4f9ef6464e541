/* ebb/groups.h: whole-set helpers for the strategies that compare pods with
 * each other, so that no strategy is quadratic in pods (ARCHITECTURE.md,
 * principle 3).
 *
 *   - RemoveDuplicates: group the candidate pods of every node by their
 *     owner x image keys, find the duplicates on the same node, count each
 *     owner's pods across nodes, work out the feasible target nodes of each
 *     owner's duplicates and which duplicates to evict
 *     (kubernetes-sigs/descheduler pkg/framework/plugins/removeduplicates).
 *   - RemovePodsViolatingInterPodAntiAffinity: an index over the listed
 *     pods that answers "does this pod's own required anti-affinity select
 *     another listed pod in its topology domain" in time proportional to the
 *     domain, and forgets evicted pods (utils.CheckPodsWithAntiAffinityExist
 *     and removePodFromNamespaceMap).
 *   - RemovePodsViolatingNodeAffinity: the best preferred node affinity
 *     weight a pod gives to any node, or the first node better than its own.
 *
 * Called from lua_groups.c during a cycle, on the engine thread. Pods and
 * nodes are borrowed from the cache: results hold pointers that stay valid
 * while the cache epoch does not change (evictions only hide pods).
 */
#ifndef EBB_GROUPS_H
#define EBB_GROUPS_H

#include <stdatomic.h>
#include "cache.h"

/* ---- RemoveDuplicates --------------------------------------------------- */

/* The duplicates of one owner on one node. */
struct ebb_dup_node {
    const struct ebb_node *node;     /* NULL when the pod's node is not in `nodes` */
    ebb_str node_name;
    uint32_t ndups;
    struct ebb_pod **dups;           /* listing order; the pod seen first on the
                                        node with the same keys is not in here */
    uint32_t first_evict;            /* dups[first_evict..ndups) are to be evicted;
                                        == ndups: none */
};

/* One owner key: (namespace, owner kind, owner name, sorted images). */
struct ebb_dup_group {
    ebb_str ns, kind, name;          /* borrowed from a pod */
    ebb_str images;                  /* sorted images joined by "#" (a reference) */
    uint32_t occurrences;            /* candidate pods with this owner key, all nodes */
    uint32_t ntargets;               /* feasible target nodes (see ebb_dups_find) */
    const struct ebb_node **targets; /* sorted by name; NULL until ebb_dups_targets */
    uint32_t upper_avg;              /* ceil(occurrences / ntargets); 0 if ntargets < 2 */
    uint32_t nnodes;
    struct ebb_dup_node *nodes;      /* nodes with duplicates, sorted by node name */
    const bool *feasible;            /* private: per node given, a target or not */
    bool owns_feasible;              /* private */
};

struct ebb_dups_private;

struct ebb_dups {
    size_t ngroups;
    struct ebb_dup_group *groups;    /* owners with duplicates, sorted by namespace,
                                        kind, name, images */
    struct ebb_dups_private *priv;   /* what ebb_dups_targets needs */
};

/* Find the duplicates among `pods` (the candidate pods, as listed: every
 * pod is compared only with the pods of its own node) and decide which to
 * evict, as upstream RemoveDuplicates.Balance does:
 *
 *   - pods without ownerReferences, with an owner kind in exclude_kinds[]
 *     (interned; NULL entries match nothing) or without containers are
 *     skipped;
 *   - a pod's keys are "namespace/kind/name/image" for every owner x every
 *     container image, sorted; a pod whose keys equal those of a pod seen
 *     before it on the same node is a duplicate, and is listed under every
 *     owner key (namespace, kind, name, sorted images joined by "#") of it;
 *   - occurrences count every candidate pod under each of its owner keys;
 *   - the feasible target nodes of an owner are the union, over its
 *     duplicate pods, of the nodes[] whose NoSchedule/NoExecute taints the
 *     pod tolerates and that match its nodeSelector and required node
 *     affinity (a required term the scheduler cannot parse counts as a
 *     match, as upstream ignores the error), counting a pod's nodes only
 *     when there are more than one; resources are not considered;
 *   - with at least two targets, upper_avg = ceil(occurrences / targets) and
 *     on every node where ndups + 1 > upper_avg the duplicates from index
 *     upper_avg - 1 on are to be evicted.
 *
 * Upstream walks Go maps (owner keys, nodes), so its order is random; here
 * owners come sorted by namespace, kind, name, images and nodes by name.
 * `stop` (may be NULL) is polled in the loops: non-zero ends the work with
 * EBB_ELIMIT (a script's expired time budget).
 * Returns 0 and a result to free with ebb_dups_destroy, EBB_EINVAL,
 * EBB_ENOMEM or EBB_ELIMIT. */
int ebb_dups_find(struct ebb_pod *const *pods, size_t npods,
                  struct ebb_node *const *nodes, size_t nnodes,
                  const ebb_str *exclude_kinds, size_t nexclude,
                  const atomic_int *stop, struct ebb_dups **out);
void ebb_dups_destroy(struct ebb_dups *d);   /* NULL-safe */

/* Fill groups[i].targets (once: the nodes are listed on demand, as a
 * strategy acts on the count; thousands of nodes per group cost). 0,
 * EBB_EINVAL or EBB_ENOMEM. */
int ebb_dups_targets(struct ebb_dups *d, size_t i);

/* ---- RemovePodsViolatingInterPodAntiAffinity ---------------------------- */

struct ebb_anti_index;

/* Index `pods` (borrowed; the pods of `nodes` that the strategy lists) for
 * anti-affinity checks. Pods whose node is not in nodes[] are left out, as
 * upstream skips pods absent from its node map. `stop` as for
 * ebb_dups_find. */
int ebb_anti_index_create(struct ebb_cache *cache, struct ebb_pod *const *pods, size_t npods,
                          struct ebb_node *const *nodes, size_t nnodes,
                          const atomic_int *stop, struct ebb_anti_index **out);
void ebb_anti_index_destroy(struct ebb_anti_index *ix);   /* NULL-safe */
/* The bytes the index holds now: it grows as terms are first checked. */
size_t ebb_anti_index_bytes(const struct ebb_anti_index *ix);

/* The first indexed pod (in listing order) that makes `pod` violate one of
 * its own requiredDuringScheduling anti-affinity terms, or NULL. A term
 * selects the indexed pods in its namespaces (or the pod's own namespace
 * when it lists none; namespaceSelector is ignored, as upstream does),
 * matching its labelSelector (matchLabelKeys are not merged in, as
 * upstream), other than pods of the pod's own name, whose node is the pod's
 * node or has the same value of the term's topologyKey. Terms are tried in
 * order; *term (may be NULL) gets the index of the violated one. A pod
 * whose node is not indexed violates nothing. Groups of equal terms are
 * built on first use, so a check costs the size of one topology domain. */
const struct ebb_pod *ebb_anti_index_violation(struct ebb_anti_index *ix,
                                               const struct ebb_pod *pod, int *term);

/* Forget `pod` (evicted): later checks no longer see it. 0, or EBB_ENOENT
 * when it is not indexed or already forgotten. */
int ebb_anti_index_remove(struct ebb_anti_index *ix, const struct ebb_pod *pod);

/* The indexed pods (not forgotten) on `node` that have required
 * anti-affinity terms, in listing order, into a malloc'd array *out (NULL
 * when none); returns the count or a negative EBB_E*. */
long ebb_anti_index_candidates(const struct ebb_anti_index *ix, ebb_str node,
                               struct ebb_pod ***out);

/* ---- RemovePodsViolatingNodeAffinity ------------------------------------ */

/* The largest sum of matching preferred node affinity weights the pod gives
 * to any of nodes[] (at least 0), as nodeutil.GetBestNodeWeightGivenPod-
 * PreferredAffinity: whether the pod fits those nodes is not considered. */
int64_t ebb_pod_best_preferred_weight(const struct ebb_pod *pod, struct ebb_node *const *nodes,
                                      size_t nnodes);

/* The first of nodes[] (in their order) to which the pod gives a larger sum
 * of preferred weights than `than`, or NULL; *weight (may be NULL) gets that
 * sum. "Some node is better than mine" is "the best weight is above mine",
 * found without weighing every node. */
const struct ebb_node *ebb_pod_better_preferred_node(const struct ebb_pod *pod, int64_t than,
                                                     struct ebb_node *const *nodes, size_t nnodes,
                                                     int64_t *weight);

#endif
