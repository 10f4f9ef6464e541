/* ebb/loadaware.h: the load-aware math of Koordinator's LowNodeLoad.
 *
 * A set (struct ebb_la_set) is one pass over a pool of nodes: it reads each
 * node's measured usage, turns the pool's percent thresholds into
 * quantities of each node's raw allocatable, classifies the nodes, and
 * then answers the questions the strategy asks while it evicts: which
 * sources first, how much load the targets can take, would this pod fit a
 * target under its high threshold (reserving the room when it does), in
 * which order the pods of a source go, and what is left once a pod is gone.
 * policies/low_node_load.lua drives it through engine/lua/lua_loadaware.c.
 *
 * Usage of a node, in the cache's units (cpu in millicores, bytes, counts):
 *  - Koordinator (slo.koordinator.sh NodeMetric), when the node has one:
 *    status.nodeMetric.systemUsage + the sum of status.podsMetric[].podUsage
 *    (every entry, as Koordinator sums them); prod usage is the sum over the
 *    entries whose pod is on the node, active, and of priority class Prod;
 *  - metrics.k8s.io otherwise: NodeMetrics.usage, prod usage from the
 *    PodMetrics of the node's Prod pods.
 *  "pods" is always the count of the node's active pods (prod: Prod pods).
 *  A node with neither, with a NodeMetric without status.nodeMetric (even
 *  one with podsMetric entries), or whose metric is older than the
 *  expiration is skipped: never idle. A status.nodeMetric that is there but
 *  empty counts (no system usage).
 *
 * Engine thread only; a set borrows the cache's nodes and metrics and is
 * valid until the cache frees an object (ebb_cache_epoch changes).
 */
#ifndef EBB_LOADAWARE_H
#define EBB_LOADAWARE_H

#include "cache.h"

/* Resources one set tracks at most (the thresholded ones, memory, pods). */
#define EBB_LA_MAXRES 16

/* The node annotation Koordinator writes when it amplifies allocatable
 * (CPU normalization): a JSON ResourceList of the node's real allocatable. */
#define EBB_LA_RAW_ALLOCATABLE "node.koordinator.sh/raw-allocatable"

/* ---- Koordinator's view of a pod ----------------------------------------- */

/* Priority classes and QoS classes, numbered so that a lower number is
 * evicted first (utils/sorter/pod.go). */
enum {
    EBB_KPRIO_FREE = 1,
    EBB_KPRIO_BATCH = 2,
    EBB_KPRIO_MID = 3,
    EBB_KPRIO_PROD = 4,
    EBB_KPRIO_NONE = 5,
};
enum {
    EBB_KQOS_BE = 1,
    EBB_KQOS_LS = 2,
    EBB_KQOS_LSR = 3,
    EBB_KQOS_LSE = 4,
    EBB_KQOS_SYSTEM = 5,        /* sorts like LSE */
    EBB_KQOS_NONE = 6,
};

/* GetPodPriorityClassWithDefault: the koordinator.sh/priority-class label
 * (koord-prod, koord-mid, koord-batch, koord-free; any other value is None),
 * else the range of spec.priority (9000-9999 Prod, 7000-7999 Mid, 5000-5999
 * Batch, 3000-3999 Free), else derived from the QoS class below (SYSTEM,
 * LSE, LSR, LS -> Prod; BE -> Batch). */
int ebb_koord_priority_class(const struct ebb_pod *p);
/* GetPodQoSClassWithDefault: the koordinator.sh/qosClass label (LSE, LSR,
 * LS, BE, SYSTEM), else from the Kubernetes QoS (Guaranteed -> LSR,
 * Burstable -> LS, BestEffort -> BE). */
int ebb_koord_qos_class(const struct ebb_pod *p);
const char *ebb_koord_priority_name(int c);   /* "Prod", ..., "None" */
const char *ebb_koord_qos_name(int q);        /* "LSR", ..., "None" */
/* Sort rank of a QoS class (SYSTEM ranks with LSE). */
int ebb_koord_qos_rank(int q);

/* controller.kubernetes.io/pod-deletion-cost and
 * scheduling.koordinator.sh/eviction-cost, parsed as the API does: an int32
 * written without '+' or leading zeros; absent or invalid reads as 0. */
int32_t ebb_pod_deletion_cost(const struct ebb_pod *p);
int32_t ebb_koord_eviction_cost(const struct ebb_pod *p);

/* ---- a pass over a pool ---------------------------------------------------- */

/* Thresholds in percent, indexed by resource id, each map with a bit per id
 * given. Missing resources are filled as Koordinator's newThresholds does:
 * a resource without a low threshold gets low = high = 100 (0 in deviation
 * mode, which there means "the whole allocatable"), a resource with a low
 * but no high threshold gets high = 0; the same for the prod pair. Memory
 * is always thresholded. */
struct ebb_la_thresholds {
    uint64_t has_low, has_high, has_prod_low, has_prod_high;
    double low[EBB_RES_MAX], high[EBB_RES_MAX];
    double prod_low[EBB_RES_MAX], prod_high[EBB_RES_MAX];
    bool deviation;             /* thresholds are mean -/+ t, clamped to [0, 100] */
};

struct ebb_la_opts {
    int64_t now;                /* seconds (the engine clock) */
    int64_t expiration;         /* metric older than this (seconds) is skipped; <= 0: never */
    const struct ebb_la_thresholds *thresholds;
};

enum ebb_la_source { EBB_LA_SRC_NONE = 0, EBB_LA_SRC_KOORD, EBB_LA_SRC_METRICS };

enum ebb_la_skip {
    EBB_LA_MEASURED = 0,
    EBB_LA_NO_METRIC,           /* neither a NodeMetric nor a NodeMetrics */
    EBB_LA_EMPTY_METRIC,        /* a NodeMetric without status.nodeMetric (absent or null) */
    EBB_LA_NO_TIME,             /* no updateTime / timestamp */
    EBB_LA_EXPIRED,
};

/* classifyNodes, one class per node. */
enum ebb_la_class {
    EBB_LA_SKIPPED = 0,         /* no usable metric */
    EBB_LA_NORMAL,              /* between the thresholds, node and prod */
    EBB_LA_LOW,                 /* node under every low threshold (and schedulable) */
    EBB_LA_HIGH,                /* node over some high threshold */
    EBB_LA_PROD_LOW,            /* node in between, prod under every prod low */
    EBB_LA_PROD_HIGH,           /* node not high, prod over some prod high */
    EBB_LA_BOTH_LOW,            /* node and prod under their lows */
    EBB_LA_NCLASSES,
};
const char *ebb_la_class_name(int cls);   /* "skipped", "normal", "low", ... */
int ebb_la_class_parse(const char *name); /* -1 when unknown */

/* One pod's measured usage on its node (borrowed from the cache). */
struct ebb_la_pod {
    ebb_str ns, name;
    const struct ebb_res *usage;
};

/* Per node; the arrays have set->nres entries, indexed like set->res. */
struct ebb_la_node {
    struct ebb_node *node;
    uint8_t source;             /* enum ebb_la_source */
    uint8_t skip;               /* enum ebb_la_skip */
    uint8_t cls;                /* enum ebb_la_class */
    int64_t updated;            /* the metric's time; EBB_TIME_NONE */
    int64_t *usage, *prod;      /* mutated by ebb_la_fits / ebb_la_evicted */
    int64_t *alloc;             /* raw allocatable */
    int64_t *low, *high, *prod_low, *prod_high;
    uint32_t npods;
    struct ebb_la_pod *pods;    /* sorted for lookup */
};

struct ebb_la_set {
    struct ebb_cache *cache;
    uint16_t nres;
    int res[EBB_LA_MAXRES];            /* resource ids, sorted by name */
    bool thresholded[EBB_LA_MAXRES];   /* Koordinator's resourceNames */
    int pods_index;                    /* index of "pods" in res */
    double high_pct[EBB_LA_MAXRES];    /* effective high threshold, percent */
    double prod_high_pct[EBB_LA_MAXRES];
    double mean[EBB_LA_MAXRES];        /* deviation mode: mean usage percent */
    double prod_mean[EBB_LA_MAXRES];
    size_t n, nmeasured;
    struct ebb_la_node *nodes;         /* sorted by name */
    int64_t *mem;                      /* every node's arrays, one block */
};

/* Measure, threshold and classify nodes[0..n) (duplicates are ignored).
 * EBB_EINVAL for bad arguments or more than EBB_LA_MAXRES resources,
 * EBB_ENOMEM. The set is owned by the caller (ebb_la_destroy). */
int ebb_la_create(struct ebb_cache *c, struct ebb_node *const *nodes, size_t n,
                  const struct ebb_la_opts *o, struct ebb_la_set **out);
void ebb_la_destroy(struct ebb_la_set *s);   /* NULL-safe */
/* The bytes the set holds (what a script is charged for it). */
size_t ebb_la_bytes(const struct ebb_la_set *s);

/* The set's entry for a node name, or NULL. */
struct ebb_la_node *ebb_la_find(const struct ebb_la_set *s, ebb_str name);
/* Index of resource `id` in s->res, or -1. */
int ebb_la_index(const struct ebb_la_set *s, int id);

/* Usage in percent of raw allocatable (0 when nothing is allocatable). */
double ebb_la_percent(const struct ebb_la_node *n, int i, bool prod);
/* isNodeOverutilized: bit i set for every thresholded resource whose usage
 * (prod usage) is strictly over its high (prod high) threshold. */
uint32_t ebb_la_over(const struct ebb_la_set *s, const struct ebb_la_node *n, bool prod);
/* "node cpu usage(87.50%)>threshold(65.00%), node memory ..." ("prod cpu
 * ..." with prod) for the resources over now, by name, as Koordinator's
 * overUtilizedEvictionReason writes them; the threshold is the effective
 * percent (deviation mode: mean + t, where Koordinator prints t). Returns
 * the length written (truncated to len - 1). */
size_t ebb_la_reason(const struct ebb_la_set *s, const struct ebb_la_node *n, bool prod,
                     char *buf, size_t len);

/* sorter.ResourceUsageScorer: sum over the usage entries (every tracked
 * resource) of weight * min(used, alloc) * 1000 / alloc, divided by the
 * sum of weights, in integers. weights has s->nres entries. */
int64_t ebb_la_score(const struct ebb_la_set *s, const struct ebb_la_node *n,
                     const int64_t *weights, bool prod);
/* Sort by score (descending unless `ascending`); ties by name. */
void ebb_la_sort_nodes(const struct ebb_la_set *s, struct ebb_la_node **v, size_t n,
                       const int64_t *weights, bool prod, bool ascending);

/* targetAvailableUsage: sum over v of high - usage (prod: prod high - prod
 * usage) for every thresholded resource; out has s->nres entries (the
 * others are left at 0). */
void ebb_la_available(const struct ebb_la_set *s, struct ebb_la_node *const *v, size_t n,
                      bool prod, int64_t *out);

/* The pod's measured usage on node n, or NULL. */
const struct ebb_res *ebb_la_pod_usage(const struct ebb_la_node *n, const struct ebb_pod *p);

/* podFitsAnyNodeWithThreshold: the first target (in the order given) that
 * passes ebb_node_fit and still has, for every thresholded resource,
 * usage + the pod's usage <= high (prod: prod usage and prod high). That
 * target's usage is raised by the pod's usage at once (the room is
 * reserved whether or not the pod is evicted later). A pod without a
 * measured usage fits nowhere. *chosen (may be NULL) gets the target. */
bool ebb_la_fits(struct ebb_la_set *s, const struct ebb_pod *p, const struct ebb_res *usage,
                 struct ebb_la_node *const *targets, size_t n, bool prod,
                 struct ebb_la_node **chosen);

/* Order the removable pods of source n, the first to evict first
 * (sortPodsOnOneOverloadedNode + utils/sorter PodSorter): Koordinator
 * priority class, spec.priority (unset = 0), Kubernetes QoS, Koordinator
 * QoS, pod-deletion-cost, eviction-cost, all ascending; then the usage
 * score against the resources over the (prod) high threshold, highest
 * first (pods without a measured usage last): for each such resource the
 * ratio r = pod usage / excess scores r when r < 1 and 1/r + 1 otherwise,
 * weighted; then the newest first; then namespace/name (Koordinator leaves
 * that tie to sort.Sort). Stable; weights has s->nres entries. */
void ebb_la_sort_pods(const struct ebb_la_set *s, const struct ebb_la_node *n,
                      struct ebb_pod **pods, size_t np, const int64_t *weights, bool prod);
/* The usage score above (for tests and notes); -1 when the pod has none. */
double ebb_la_pod_score(const struct ebb_la_set *s, const struct ebb_la_node *n,
                        const struct ebb_pod *p, const int64_t *weights, bool prod);

/* After evicting p from n (evictPods): for every thresholded resource,
 * subtract the pod's usage (1 for "pods") from available[i] and from n's
 * usage, and from its prod usage when `prod`. false, and nothing changed,
 * when the pod has no measured usage. */
bool ebb_la_evicted(struct ebb_la_set *s, struct ebb_la_node *n, const struct ebb_pod *p,
                    bool prod, int64_t *available);

#endif
