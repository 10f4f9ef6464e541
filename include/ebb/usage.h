/* ebb/usage.h: node utilization, as the descheduler's nodeutilization
 * plugins compute it (kubernetes-sigs/descheduler
 * pkg/framework/plugins/nodeutilization: nodeutilization.go,
 * usageclients.go, normalizer/, classifier/).
 *
 * A usage set is made once per balance call from the cache: for every node,
 * the usage of a list of resources (the requests of the pods that occupy it,
 * from the cache's per-node sums; or the metrics.k8s.io NodeMetrics), its
 * allocatable, and the usage in percent. Thresholds (static, or deviations
 * from the average) classify the nodes; a move from some nodes to others
 * keeps the destinations' budget and the sources' usage current as pods
 * are evicted, and answers the "keep evicting?" question. Used by
 * lua_usage.c for LowNodeUtilization and HighNodeUtilization, and by any
 * strategy that reasons about node usage. Engine thread, cycle only: the
 * set holds node pointers that are valid while the cache epoch lasts.
 *
 * Arrays indexed "by position" follow the set's resource list (res[]);
 * per-node arrays are [node * nres + position].
 */
#ifndef EBB_USAGE_H
#define EBB_USAGE_H

#include "cache.h"

enum ebb_usage_source {
    EBB_USAGE_REQUESTS = 0,   /* requests of the occupying pods (the default upstream) */
    EBB_USAGE_METRICS = 1,    /* NodeMetrics cpu/memory, pods = occupying pods */
    EBB_USAGE_GIVEN = 2,      /* the caller's values per node (Prometheus: MetricResource) */
};

/* EBB_USAGE_GIVEN: node n's usage of resource id into *out, or false when
 * the caller has none for the node. */
typedef bool (*ebb_usage_value_fn)(void *ud, const struct ebb_node *n, int id, int64_t *out);

enum ebb_usage_class {
    EBB_USAGE_NONE = 0,       /* appropriately utilized */
    EBB_USAGE_UNDER = 1,
    EBB_USAGE_OVER = 2,       /* for EBB_USAGE_PACK: a schedulable target */
};

enum ebb_usage_rule {
    /* LowNodeUtilization: under = schedulable and every thresholded
     * resource <= low; over = any thresholded resource > high. */
    EBB_USAGE_SPREAD = 0,
    /* HighNodeUtilization: under = every thresholded resource <= low
     * (unschedulable nodes included); over = any other schedulable node. */
    EBB_USAGE_PACK = 1,
};

/* The pseudo-resource of upstream's Prometheus source: every node has a
 * capacity of 100 of it (referencedResourceListForNodeCapacity). */
#define EBB_USAGE_METRIC_RESOURCE "MetricResource"

struct ebb_usage_skip {
    struct ebb_node *node;
    char reason[192];
};

struct ebb_usage {
    int source;                       /* enum ebb_usage_source */
    uint16_t nres;
    int16_t res[EBB_RES_MAX];         /* resource ids */
    size_t n;                         /* nodes with a usage */
    struct ebb_node **nodes;          /* [n], in the order given */
    int64_t *used;                    /* [n*nres] cpu millicores, bytes, pod count, ... */
    int64_t *cap;                     /* [n*nres] allocatable (0 where !has_cap) */
    bool *has_cap;                    /* [n*nres] the node lists the resource */
    double *pct;                      /* [n*nres] used/cap*100 (0 where !has_cap) */
    int64_t *avail;                   /* [n*nres] capacity capped at the high threshold */
    uint8_t *cls;                     /* [n] enum ebb_usage_class */
    bool *dest;                       /* [n] a destination of the move */
    /* thresholds, by position, in percent */
    bool has_thr[EBB_RES_MAX];
    double low[EBB_RES_MAX], high[EBB_RES_MAX];
    /* the move: Σ over destinations of (avail - used), by position */
    int64_t budget[EBB_RES_MAX];
    bool moving;
    size_t nskipped;
    struct ebb_usage_skip *skipped;   /* nodes left out (no metrics) */
    uint32_t nslots;
    uint32_t *slot_index;             /* node slot -> index + 1 (0: not in the set) */
    /* private: the destinations of the move, and ebb_usage_tolerated's
     * answers per distinct set of tolerations (both reset by a move) */
    uint32_t *dests;
    size_t ndests;
    struct ebb_usage_tolerance *tol;
    size_t ntol, captol;
};

/* Usage of nodes[0..n) for the resources res[0..nres) (ids; duplicates
 * dropped, order kept). REQUESTS reads the cache's per-node sums
 * (ebb_podvec.req, nactive: requests of the pods that occupy the node, as
 * ListPodsOnANode and the scheduler count them). METRICS reads each node's
 * NodeMetrics; a node without one, or whose metrics lack a resource of the
 * set other than pods, is left out and listed in u->skipped with upstream's
 * error text (a caller that follows upstream fails on the first one, as
 * LowNodeUtilization does). Capacity is the node's allocatable (decode
 * falls back to capacity); EBB_USAGE_METRIC_RESOURCE has 100 everywhere.
 * EBB_EINVAL on bad arguments; *out owned by the caller on success. */
int ebb_usage_create(struct ebb_cache *c, struct ebb_node *const *nodes, size_t n,
                     const int *res, size_t nres, int source, struct ebb_usage **out);
/* The same with EBB_USAGE_GIVEN: `value` (called during the call only)
 * gives each node's usage of each resource but pods (the occupying pods);
 * a node it has nothing for is left out, in u->skipped as "unable to find
 * metric entry for NODE" (upstream's Prometheus client). A pod's usage is
 * not known: ebb_usage_of_pod says "not supported" and
 * ebb_usage_measures_pods is false (upstream evicts "unconstrained"). */
int ebb_usage_create_given(struct ebb_cache *c, struct ebb_node *const *nodes, size_t n,
                           const int *res, size_t nres, ebb_usage_value_fn value, void *ud,
                           struct ebb_usage **out);
/* What evicting a pod frees can be told (false with EBB_USAGE_GIVEN). */
bool ebb_usage_measures_pods(const struct ebb_usage *u);
void ebb_usage_destroy(struct ebb_usage *u);   /* NULL-safe */
/* Bytes the set holds (for callers that account memory, e.g. a Lua cap). */
size_t ebb_usage_bytes(const struct ebb_usage *u);

/* Index of `node` in the set, or -1. */
long ebb_usage_index(const struct ebb_usage *u, const struct ebb_node *node);
/* Position of resource id `id` in the set, or -1. */
int ebb_usage_position(const struct ebb_usage *u, int id);

/* ResourceUsageToResourceThreshold: used/capacity*100 in float64, 0 when
 * the capacity is 0. */
double ebb_usage_percent(int64_t used, int64_t capacity);
/* capNodeCapacityToThreshold: int64(pct * 0.01 * capacity), truncated
 * toward zero, in that order of operations (the rounding upstream does). */
int64_t ebb_usage_cap_at(int64_t capacity, double pct);

/* Thresholds by position; has[i] false: resource i has none (it is not
 * looked at by the classification, and its available capacity is the full
 * capacity). high may be NULL: 100 for every resource that has a low
 * threshold (HighNodeUtilization).
 * Static: every node gets [low, high].
 * Deviation (useDeviationThresholds): for each thresholded resource, the
 * average percent over the nodes that list it (summed in node order), then
 * low = clamp(avg - low, 0, 100), high = clamp(avg + high, 0, 100); a
 * resource no node lists gets no threshold.
 * Fills u->avail from the high thresholds. */
void ebb_usage_set_thresholds(struct ebb_usage *u, const bool *has, const double *low,
                              const double *high, bool deviation);

/* Classify every node (first matching class wins, see enum ebb_usage_rule;
 * a resource without a threshold is not looked at). Counts may be NULL. */
void ebb_usage_classify(struct ebb_usage *u, int rule, size_t *nunder, size_t *nover);
bool ebb_usage_below(const struct ebb_usage *u, size_t i);   /* every r: pct <= low */
bool ebb_usage_above(const struct ebb_usage *u, size_t i);   /* some r: pct > high */

/* Start a move to the nodes of class `to`: budget[r] = Σ (avail - used). */
void ebb_usage_move(struct ebb_usage *u, int to);

/* Indexes of the nodes of class `cls`, sorted by the sum of their raw usage
 * over the set (cpu in millicores plus bytes plus pods...: upstream's
 * sortNodesByUsage), descending or ascending, ties by node name (upstream:
 * unstable sort of a map's order). Returns the count; idx has room for u->n. */
size_t ebb_usage_order(const struct ebb_usage *u, int cls, bool ascending, size_t *idx);

/* Some resource of node i is used beyond its available capacity (LNU's
 * isNodeAboveTargetUtilization). */
bool ebb_usage_above_target(const struct ebb_usage *u, size_t i);
/* Every budget is still > 0. */
bool ebb_usage_budget_left(const struct ebb_usage *u);
/* The continue-eviction test: (not target or above target) and budget left. */
bool ebb_usage_continues(const struct ebb_usage *u, size_t i, bool target);

/* What evicting `p` frees, by position (pods: 1): its requests, or with
 * METRICS its PodMetrics usage. EBB_ENOENT (and a static reason in *why,
 * may be NULL) when the pod has no PodMetrics or they lack a resource. */
int ebb_usage_of_pod(const struct ebb_usage *u, const struct ebb_cache *c, const struct ebb_pod *p,
                     int64_t *out, const char **why);
/* Subtract `pod` (by position) from node i's usage and, in a move, from the
 * budget (subtractPodUsageFromNodeAvailability). */
void ebb_usage_subtract(struct ebb_usage *u, size_t i, const int64_t *pod);

/* The pod tolerates every taint, whatever its effect, of at least one
 * destination, with at least as many tolerations as the node has taints
 * (utils.PodToleratesTaints). False when there are no destinations. */
bool ebb_usage_tolerated(struct ebb_usage *u, const struct ebb_pod *p);

/* A sentence for the plan: for a node above its target, which resources are
 * over and by how much ("cpu 80.00% > 50.00% (+1200m)"); for a node below
 * its thresholds, every thresholded resource against its low threshold. */
void ebb_usage_explain(const struct ebb_usage *u, size_t i, char *buf, size_t len);

#endif
