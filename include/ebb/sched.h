/* ebb/sched.h: a model of kube-scheduler's scheduling cycle, for the
 * what-if simulator (`ebb simulate --reschedule`) and `ebb serve
 * --reschedule`.
 *
 * The model follows kube-scheduler's default profile plugin by plugin
 * (../shared/design/SCHEDULER.md has the reference semantics and worked
 * examples): the filters NodeUnschedulable, NodeName, TaintToleration,
 * NodeAffinity, NodePorts, NodeResourcesFit, PodTopologySpread and
 * InterPodAffinity; the scores TaintToleration, NodeAffinity,
 * NodeResourcesFit, PodTopologySpread, InterPodAffinity,
 * NodeResourcesBalancedAllocation and ImageLocality with their
 * normalization and weights; percentageOfNodesToScore with the rotating
 * start node; the FailedScheduling message. Volume plugins, preemption,
 * extenders and nominated pods are not modelled.
 *
 * A scheduler works on a cache (borrowed for its life) and keeps its own
 * indexes of the bound pods (labels, pod affinity terms, per-node non-zero
 * requests and host ports), updated by ebb_sched_bind and ebb_sched_sync:
 * no step scans every pod, and no Lua runs. Engine thread only.
 *
 * Ties between the best nodes: without a seed, the first of them in node
 * name order; with a seed, one at random (uniform, as kube-scheduler's
 * selectHost), reproducibly.
 */
#ifndef EBB_SCHED_H
#define EBB_SCHED_H

#include "cache.h"

/* The plugins the model runs, in the default profile's filter order; the
 * last two only score. */
enum ebb_sched_plugin {
    EBB_SP_NODE_UNSCHEDULABLE = 0,
    EBB_SP_NODE_NAME,
    EBB_SP_TAINT_TOLERATION,
    EBB_SP_NODE_AFFINITY,
    EBB_SP_NODE_PORTS,
    EBB_SP_NODE_RESOURCES_FIT,
    EBB_SP_POD_TOPOLOGY_SPREAD,
    EBB_SP_INTER_POD_AFFINITY,
    EBB_SP_BALANCED_ALLOCATION,
    EBB_SP_IMAGE_LOCALITY,
    EBB_SP_MAX,
};

/* "NodeResourcesFit", ...; NULL for an id out of range. */
const char *ebb_sched_plugin_name(int id);
/* id of a plugin name, -1 when the model does not run it. */
int ebb_sched_plugin_id(const char *name);

/* Which kube-scheduler to follow where versions differ (SCHEDULER.md's
 * "v1.25:" notes): the newest (the default), or v1.25, whose filters all
 * run and report together, whose NodeResourcesFit checks cpu and memory
 * even when not requested, whose PodTopologySpread ignores minDomains, the
 * node inclusion policies and matchLabelKeys and scores 100 everywhere
 * without constraints, whose BalancedAllocation scores best-effort pods
 * and whose ImageLocality reads only the app containers. */
enum { EBB_SCHED_LATEST = 0, EBB_SCHED_V1_25 = 1 };

enum { EBB_SCHED_LEAST_ALLOCATED = 0, EBB_SCHED_MOST_ALLOCATED, EBB_SCHED_RTCR };

struct ebb_sched_resource {
    int id;                          /* ebb_resource_id */
    int64_t weight;
};

struct ebb_sched_shape_point {
    int64_t utilization;             /* 0..100 */
    int64_t score;                   /* 0..10, as written */
};

/* One profile of a KubeSchedulerConfiguration, with the merge of its
 * plugin sets done and its args defaulted and checked. */
struct ebb_sched_profile {
    char *name;                      /* schedulerName */
    int32_t percentage;              /* percentageOfNodesToScore; -1: the global one */
    bool scheduling_gates;           /* SchedulingGates enabled: gated pods wait */
    uint8_t nfilters;
    uint8_t filters[EBB_SP_MAX];     /* enabled filter plugins, in order */
    int64_t weight[EBB_SP_MAX];      /* score weight; 0: not scoring */
    /* NodeResourcesFitArgs */
    int fit_strategy;                /* EBB_SCHED_LEAST_ALLOCATED, ... */
    size_t nfit_resources;
    struct ebb_sched_resource *fit_resources;
    size_t nshape;
    struct ebb_sched_shape_point *shape;
    size_t nignored, nignored_groups;
    char **ignored;                  /* ignoredResources */
    char **ignored_groups;           /* ignoredResourceGroups */
    /* NodeResourcesBalancedAllocationArgs */
    size_t nba_resources;
    struct ebb_sched_resource *ba_resources;
    /* PodTopologySpreadArgs */
    bool spread_system;              /* defaultingType System */
    uint16_t nspread_defaults;       /* List: defaultConstraints (no selector) */
    struct ebb_tsc *spread_defaults;
    /* InterPodAffinityArgs */
    int32_t hard_pod_affinity_weight;
    bool ignore_preferred_terms_of_existing_pods;
    /* NodeAffinityArgs.addedAffinity (NULL: none) */
    struct ebb_affinity *added_affinity;
};

struct ebb_sched_config {
    int32_t percentage;              /* the global percentageOfNodesToScore, 0: adaptive */
    size_t nprofiles;
    struct ebb_sched_profile *profiles;
};

/* kube-scheduler's defaults: one profile, default-scheduler. */
int ebb_sched_config_default(struct ebb_sched_config **out);
/* A kubescheduler.config.k8s.io/v1 (or v1beta3) KubeSchedulerConfiguration
 * file. Unknown fields, unknown plugins and bad values are EBB_ESCHEMA with
 * err naming the file, line and field. */
int ebb_sched_config_load(const char *path, struct ebb_sched_config **out, struct ebb_error *err);
int ebb_sched_config_parse(const char *buf, size_t len, const char *name,
                           struct ebb_sched_config **out, struct ebb_error *err);
void ebb_sched_config_free(struct ebb_sched_config *c);   /* NULL-safe */
/* The profile for a schedulerName (NULL: "default-scheduler"), or NULL. */
const struct ebb_sched_profile *ebb_sched_config_profile(const struct ebb_sched_config *c,
                                                         const char *scheduler);

/* ---- the scheduler ------------------------------------------------------ */

struct ebb_sched;

struct ebb_sched_opts {
    const struct ebb_sched_config *config;   /* borrowed for the scheduler's life; NULL: defaults */
    int version;                     /* EBB_SCHED_LATEST or EBB_SCHED_V1_25 */
    bool seeded;                     /* pick among tied nodes at random */
    uint64_t seed;
};

/* A scheduler over the nodes and bound pods of `c` (borrowed; nodes must
 * not change while it lives). */
int ebb_sched_create(struct ebb_cache *c, const struct ebb_sched_opts *opts, struct ebb_sched **out);
void ebb_sched_destroy(struct ebb_sched *s);   /* NULL-safe */

/* Pods left the nodes since the last call (a cycle hid or deleted them):
 * forget them. Call before the cache frees them (before a purge, and
 * before a pod of the same name replaces a hidden one). */
int ebb_sched_sync(struct ebb_sched *s);

enum {
    EBB_SCHED_PLACED = 0,
    EBB_SCHED_UNSCHEDULABLE,         /* fits no node: FailedScheduling */
    EBB_SCHED_NO_PROFILE,            /* another scheduler's pod: left alone */
    EBB_SCHED_GATED,                 /* spec.schedulingGates: never tried */
};

struct ebb_sched_result {
    int status;                      /* EBB_SCHED_* */
    struct ebb_node *node;           /* PLACED: where */
    char message[1024];              /* otherwise: why (kube-scheduler's text) */
    uint32_t evaluated;              /* nodes filtered */
    uint32_t feasible;               /* of them, the feasible */
    int64_t score;                   /* the winner's total */
};

/* One scheduling cycle for `pod` (borrowed; not bound: its spec.nodeName
 * is ignored unless NodeName is asked for): filter, score, select. Nothing
 * is bound; the rotating start node moves as kube-scheduler's does. */
int ebb_sched_schedule(struct ebb_sched *s, const struct ebb_pod *pod, struct ebb_sched_result *r);

/* Assume: `pod` goes into the cache bound to `node`, replacing a pod of
 * the same namespace/name (a pending pod being bound), and into the
 * scheduler's accounting. Takes `pod` whatever it returns: freed when it
 * never reached the cache, the cache's once it did (an error after that,
 * out of memory while accounting, leaves it in the cache). */
int ebb_sched_bind(struct ebb_sched *s, struct ebb_pod *pod, const struct ebb_node *node);

/* Where `pod` (a replacement: unbound) would be placed were `leaving` (a
 * bound pod of the cache) gone: `leaving` is hidden for the call, the
 * scheduler forgets it and every pod the cache hides (a cycle's evictions,
 * as ebb_sched_sync), `pod` is scheduled, then `leaving` is shown and
 * counted again. The rotating start node, the tie-break stream and the
 * counters are left as they were: a prediction changes no later placement.
 * `leaving` may be NULL (nothing leaves). */
int ebb_sched_predict(struct ebb_sched *s, struct ebb_pod *leaving, const struct ebb_pod *pod,
                      struct ebb_sched_result *r);

/* ---- explain (tests, debugging) ----------------------------------------- */

/* What one plugin said about one node. */
struct ebb_sched_node_eval {
    struct ebb_node *node;
    bool feasible;
    char reasons[256];               /* the failed node's reasons, "; "-joined */
    int64_t raw[EBB_SP_MAX];         /* Score */
    int64_t norm[EBB_SP_MAX];        /* after NormalizeScore */
    int64_t total;                   /* weighted sum */
};

/* Filter every node (no percentageOfNodesToScore, no rotation) and score
 * the feasible ones, into a malloc'd array of *n entries in node name
 * order (caller frees). Scores are computed even for one feasible node. */
int ebb_sched_explain(struct ebb_sched *s, const struct ebb_pod *pod,
                      struct ebb_sched_node_eval **out, size_t *n);

/* numFeasibleNodesToFind: how many feasible nodes filtering looks for
 * among n with the given percentage (0: adaptive). */
uint32_t ebb_sched_nodes_to_find(int32_t percentage, uint32_t n);

/* Counters for the benchmarks. */
struct ebb_sched_stats {
    uint64_t scheduled, placed, unschedulable;
    uint64_t nodes_filtered, nodes_scored;
};
void ebb_sched_get_stats(const struct ebb_sched *s, struct ebb_sched_stats *out);

#endif
