/* engine/strategy/usage.c: usage sets, percentages with upstream's float rounding,
 * static and deviation thresholds, both classification rules, the budget of
 * a move, source order, the continue-eviction test, pod usage from
 * requests and from PodMetrics, destination taints, the plan sentence. On a
 * small cluster loaded from JSON into a real cache. */
#include <math.h>

#include "fixtures.h"

#include "ebb/snapshot.h"
#include "ebb/usage.h"

/* ---- a tiny cluster ------------------------------------------------------ */


/* extra: more allocatable entries (",\"nvidia.com/gpu\":\"4\""); spec: more
 * spec members (",\"unschedulable\":true"). */
static void node(const char *name, const char *cpu, const char *extra, const char *spec)
{
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"uid-%s\"},"
        "\"spec\":{\"providerID\":\"aws:///%s\"%s},\"status\":{\"allocatable\":{\"cpu\":\"%s\","
        "\"memory\":\"16Gi\",\"pods\":\"10\"%s},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
        name, name, name, spec ? spec : "", cpu, extra ? extra : "");
}

/* requests: the resources object of the one container ("" for none). */
static void pod(const char *name, const char *node_name, const char *requests, const char *phase,
                const char *spec)
{
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"shop\","
        "\"uid\":\"uid-%s\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
        "\"name\":\"rs\",\"uid\":\"rs\",\"controller\":true}]},\"spec\":{\"nodeName\":\"%s\","
        "\"containers\":[{\"name\":\"app\",\"image\":\"app:1\",\"resources\":{\"requests\":{%s}}}]%s},"
        "\"status\":{\"phase\":\"%s\"}}",
        name, name, node_name, requests, spec ? spec : "", phase);
}

static void node_metrics(const char *name, const char *usage)
{
    fx_add("{\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"kind\":\"NodeMetrics\",\"metadata\":{\"name\":\"%s\"},"
        "\"timestamp\":\"2026-11-22T11:59:50Z\",\"window\":\"20s\",\"usage\":{%s}}", name, usage);
}

static void pod_metrics(const char *name, const char *usage)
{
    fx_add("{\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"kind\":\"PodMetrics\",\"metadata\":{\"name\":\"%s\","
        "\"namespace\":\"shop\"},\"timestamp\":\"2026-11-22T11:59:50Z\",\"window\":\"20s\","
        "\"containers\":[{\"name\":\"app\",\"usage\":{%s}}]}", name, usage);
}

static void begin(void)
{
    fx_begin();
}

static struct ebb_cache *load(void)
{
    return fx_load();
}

static struct ebb_node *N(struct ebb_cache *c, const char *name)
{
    struct ebb_node *n = ebb_cache_node(c, ebb_str_find(name, strlen(name)));
    assert_non_null(n);
    return n;
}

static struct ebb_pod *P(struct ebb_cache *c, const char *name)
{
    struct ebb_pod *p = ebb_cache_pod(c, ebb_str_find("shop", 4), ebb_str_find(name, strlen(name)));
    assert_non_null(p);
    return p;
}

static const int BASIC[] = { EBB_RES_CPU, EBB_RES_MEMORY, EBB_RES_PODS };

/* hot 3200m (80%), cold 400m (10%), busy 1600m (40%), cordoned 200m. */
static struct ebb_cache *four_nodes(void)
{
    begin();
    node("hot", "4", NULL, NULL);
    node("cold", "4", NULL, NULL);
    node("busy", "4", NULL, NULL);
    node("cordoned", "4", NULL, ",\"unschedulable\":true");
    pod("h1", "hot", "\"cpu\":\"1600m\",\"memory\":\"1Gi\"", "Running", NULL);
    pod("h2", "hot", "\"cpu\":\"1000m\",\"memory\":\"1Gi\"", "Running", NULL);
    pod("h3", "hot", "\"cpu\":\"600m\"", "Running", NULL);
    pod("h-done", "hot", "\"cpu\":\"3\"", "Succeeded", NULL);   /* does not occupy */
    pod("c1", "cold", "\"cpu\":\"400m\",\"memory\":\"512Mi\"", "Running", NULL);
    pod("b1", "busy", "\"cpu\":\"1600m\",\"memory\":\"1Gi\"", "Running", NULL);
    pod("x1", "cordoned", "\"cpu\":\"200m\"", "Running", NULL);
    return load();
}

static struct ebb_usage *usage_of(struct ebb_cache *c, const int *res, size_t nres, int source)
{
    uint32_t n;
    struct ebb_node *const *nodes = ebb_cache_nodes_sorted(c, &n);
    struct ebb_usage *u = NULL;

    assert_int_equal(ebb_usage_create(c, nodes, n, res, nres, source, &u), 0);
    return u;
}

static size_t at(struct ebb_usage *u, struct ebb_cache *c, const char *name)
{
    long i = ebb_usage_index(u, N(c, name));
    assert_true(i >= 0);
    return (size_t)i;
}

/* ---- tests -------------------------------------------------------------- */

static void percent_and_cap_round_like_float64(void **state)
{
    (void)state;
    assert_true(ebb_usage_percent(2000, 4000) == 50.0);
    assert_true(ebb_usage_percent(5, 0) == 0.0);
    /* 560/4000*100 is a little above 14, 1160/4000*100 a little below 29 */
    assert_true(ebb_usage_percent(560, 4000) > 14.0);
    assert_true(ebb_usage_percent(1160, 4000) < 29.0);
    assert_true(ebb_usage_percent(2964, 4000) == 74.1);
    /* int64(t * 0.01 * cap): truncation below the exact value */
    assert_int_equal(ebb_usage_cap_at(4000, 66.6), 2663);
    assert_int_equal(ebb_usage_cap_at(50, 58), 28);
    assert_int_equal(ebb_usage_cap_at(4000, 50), 2000);
    assert_int_equal(ebb_usage_cap_at(4000, 100), 4000);
    assert_int_equal(ebb_usage_cap_at(4000, 0), 0);
}

static void requests_count_occupying_pods(void **state)
{
    struct ebb_cache *c = four_nodes();
    struct ebb_usage *u = usage_of(c, BASIC, 3, EBB_USAGE_REQUESTS);
    size_t hot;

    (void)state;
    assert_int_equal(u->n, 4);
    assert_int_equal(u->nskipped, 0);
    hot = at(u, c, "hot");
    assert_int_equal(u->used[hot * 3 + 0], 3200);   /* the Succeeded pod is not counted */
    assert_int_equal(u->used[hot * 3 + 1], 2LL << 30);
    assert_int_equal(u->used[hot * 3 + 2], 3);
    assert_int_equal(u->cap[hot * 3 + 0], 4000);
    assert_true(u->pct[hot * 3 + 0] == 80.0);
    assert_true(u->pct[hot * 3 + 1] == 12.5);
    assert_true(u->pct[hot * 3 + 2] == 30.0);
    /* an evicted (hidden) pod leaves the sums */
    ebb_cache_hide_pod(c, P(c, "h1"));
    ebb_usage_destroy(u);
    u = usage_of(c, BASIC, 3, EBB_USAGE_REQUESTS);
    hot = at(u, c, "hot");
    assert_int_equal(u->used[hot * 3 + 0], 1600);
    assert_int_equal(u->used[hot * 3 + 2], 2);
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

static void bad_arguments_and_duplicates(void **state)
{
    struct ebb_cache *c = four_nodes();
    struct ebb_node *nodes[3];
    const int dup[] = { EBB_RES_CPU, EBB_RES_CPU, EBB_RES_PODS };
    const int bad[] = { EBB_RES_MAX };
    struct ebb_usage *u = NULL;

    (void)state;
    nodes[0] = N(c, "hot");
    nodes[1] = N(c, "hot");
    nodes[2] = N(c, "cold");
    assert_int_equal(ebb_usage_create(NULL, nodes, 3, BASIC, 3, EBB_USAGE_REQUESTS, &u), EBB_EINVAL);
    assert_int_equal(ebb_usage_create(c, nodes, 3, bad, 1, EBB_USAGE_REQUESTS, &u), EBB_EINVAL);
    assert_int_equal(ebb_usage_create(c, nodes, 3, BASIC, 3, 7, &u), EBB_EINVAL);
    assert_null(u);
    assert_int_equal(ebb_usage_create(c, nodes, 3, dup, 3, EBB_USAGE_REQUESTS, &u), 0);
    assert_int_equal(u->nres, 2);
    assert_int_equal(u->n, 2);   /* hot once */
    assert_int_equal(ebb_usage_index(u, N(c, "busy")), -1);
    assert_int_equal(ebb_usage_position(u, EBB_RES_PODS), 1);
    assert_int_equal(ebb_usage_position(u, EBB_RES_MEMORY), -1);
    ebb_usage_destroy(u);
    ebb_usage_destroy(NULL);
    ebb_cache_destroy(c);
}

static void spread_rule_boundaries(void **state)
{
    struct ebb_cache *c = four_nodes();
    struct ebb_usage *u = usage_of(c, BASIC, 3, EBB_USAGE_REQUESTS);
    bool has[3] = { true, false, false };
    double low[3] = { 40, 0, 0 }, high[3] = { 80, 0, 0 };
    size_t under, over;

    (void)state;
    /* busy at exactly 40% is under (<=), hot at exactly 80% is not over (>) */
    ebb_usage_set_thresholds(u, has, low, high, false);
    ebb_usage_classify(u, EBB_USAGE_SPREAD, &under, &over);
    assert_int_equal(under, 2);
    assert_int_equal(over, 0);
    assert_int_equal(u->cls[at(u, c, "busy")], EBB_USAGE_UNDER);
    assert_int_equal(u->cls[at(u, c, "cold")], EBB_USAGE_UNDER);
    assert_int_equal(u->cls[at(u, c, "cordoned")], EBB_USAGE_NONE);   /* 5% but unschedulable */
    high[0] = 79.99;
    ebb_usage_set_thresholds(u, has, low, high, false);
    ebb_usage_classify(u, EBB_USAGE_SPREAD, &under, &over);
    assert_int_equal(over, 1);
    assert_int_equal(u->cls[at(u, c, "hot")], EBB_USAGE_OVER);
    /* available: allocatable capped at the high threshold; full capacity
     * where there is no threshold */
    assert_int_equal(u->avail[at(u, c, "hot") * 3 + 0], 3199);
    assert_int_equal(u->avail[at(u, c, "hot") * 3 + 1], 16LL << 30);
    assert_int_equal(u->avail[at(u, c, "hot") * 3 + 2], 10);
    /* a resource with no threshold is not looked at; with one it is */
    has[2] = true;
    low[2] = 10;
    high[2] = 20;
    ebb_usage_set_thresholds(u, has, low, high, false);
    ebb_usage_classify(u, EBB_USAGE_SPREAD, &under, &over);
    assert_int_equal(under, 2);   /* busy and cold: 1 pod of 10 = 10% <= 10 */
    assert_int_equal(u->cls[at(u, c, "busy")], EBB_USAGE_UNDER);
    assert_int_equal(u->cls[at(u, c, "hot")], EBB_USAGE_OVER);    /* 3 pods: 30% > 20 */
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

static void pack_rule_takes_unschedulable_sources(void **state)
{
    struct ebb_cache *c = four_nodes();
    struct ebb_usage *u = usage_of(c, BASIC, 3, EBB_USAGE_REQUESTS);
    bool has[3] = { true, false, false };
    double low[3] = { 30, 0, 0 };
    size_t under, over;

    (void)state;
    ebb_usage_set_thresholds(u, has, low, NULL, false);
    assert_true(u->high[0] == 100);
    ebb_usage_classify(u, EBB_USAGE_PACK, &under, &over);
    assert_int_equal(under, 2);
    assert_int_equal(over, 2);
    assert_int_equal(u->cls[at(u, c, "cordoned")], EBB_USAGE_UNDER);
    assert_int_equal(u->cls[at(u, c, "busy")], EBB_USAGE_OVER);
    assert_int_equal(u->avail[at(u, c, "busy") * 3 + 0], 4000);
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

static void deviation_thresholds(void **state)
{
    struct ebb_cache *c = four_nodes();
    struct ebb_usage *u = usage_of(c, BASIC, 3, EBB_USAGE_REQUESTS);
    bool has[3] = { true, false, false };
    double low[3] = { 10, 0, 0 }, high[3] = { 5, 0, 0 };
    size_t under, over;

    (void)state;
    /* cpu average (80 + 10 + 40 + 5) / 4 = 33.75 */
    ebb_usage_set_thresholds(u, has, low, high, true);
    assert_true(fabs(u->low[0] - 23.75) < 1e-9);
    assert_true(fabs(u->high[0] - 38.75) < 1e-9);
    ebb_usage_classify(u, EBB_USAGE_SPREAD, &under, &over);
    assert_int_equal(under, 1);   /* cold */
    assert_int_equal(over, 2);    /* hot, busy */
    assert_int_equal(u->avail[at(u, c, "hot") * 3 + 0], 1550);
    /* clamped into [0, 100] */
    low[0] = 90;
    high[0] = 90;
    ebb_usage_set_thresholds(u, has, low, high, true);
    assert_true(u->low[0] == 0);
    assert_true(u->high[0] == 100);
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

static void extended_resource_missing_on_a_node(void **state)
{
    struct ebb_cache *c;
    struct ebb_usage *u;
    int res[4] = { EBB_RES_CPU, EBB_RES_MEMORY, EBB_RES_PODS, 0 };
    bool has[4] = { false, false, false, true };
    double low[4] = { 0, 0, 0, 30 }, high[4] = { 0, 0, 0, 50 };

    (void)state;
    begin();
    node("gpu-1", "16", ",\"nvidia.com/gpu\":\"4\"", NULL);
    node("gpu-2", "16", ",\"nvidia.com/gpu\":\"4\"", NULL);
    node("plain", "16", NULL, NULL);
    pod("t1", "gpu-1", "\"cpu\":\"1\",\"nvidia.com/gpu\":\"4\"", "Running", NULL);
    pod("t2", "gpu-2", "\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\"", "Running", NULL);
    c = load();
    res[3] = ebb_resource_find("nvidia.com/gpu");
    assert_true(res[3] >= 0);
    u = usage_of(c, res, 4, EBB_USAGE_REQUESTS);
    assert_false(u->has_cap[at(u, c, "plain") * 4 + 3]);
    assert_true(u->pct[at(u, c, "plain") * 4 + 3] == 0);
    ebb_usage_set_thresholds(u, has, low, high, false);
    ebb_usage_classify(u, EBB_USAGE_SPREAD, NULL, NULL);
    /* no GPUs: no percentage, which compares as 0%: underutilized */
    assert_int_equal(u->cls[at(u, c, "plain")], EBB_USAGE_UNDER);
    assert_int_equal(u->cls[at(u, c, "gpu-2")], EBB_USAGE_UNDER);
    assert_int_equal(u->cls[at(u, c, "gpu-1")], EBB_USAGE_OVER);
    /* ...but takes none: its available GPUs are 0 */
    ebb_usage_move(u, EBB_USAGE_UNDER);
    assert_int_equal(u->budget[3], 1);   /* gpu-2: 2 - 1; plain: 0 - 0 */
    assert_int_equal(u->budget[0], 2 * 16000 - 1000);
    /* the average leaves out the node without the resource */
    ebb_usage_set_thresholds(u, has, low, high, true);
    assert_true(u->has_thr[3]);
    assert_true(fabs(u->low[3] - (100 + 25) / 2.0 + 30) < 1e-9);
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

static void move_order_and_continue(void **state)
{
    struct ebb_cache *c = four_nodes();
    struct ebb_usage *u = usage_of(c, BASIC, 3, EBB_USAGE_REQUESTS);
    bool has[3] = { true, false, false };
    double low[3] = { 20, 0, 0 }, high[3] = { 50, 0, 0 };
    size_t idx[4], n, hot;
    int64_t freed[3];

    (void)state;
    ebb_usage_set_thresholds(u, has, low, high, false);
    ebb_usage_classify(u, EBB_USAGE_SPREAD, NULL, NULL);
    ebb_usage_move(u, EBB_USAGE_UNDER);
    /* cold: 2000 - 400 of cpu, 16Gi - 512Mi of memory, 10 - 1 pods */
    assert_int_equal(u->budget[0], 1600);
    assert_int_equal(u->budget[1], (16LL << 30) - (512LL << 20));
    assert_int_equal(u->budget[2], 9);
    n = ebb_usage_order(u, EBB_USAGE_OVER, false, idx);
    assert_int_equal(n, 1);
    hot = idx[0];
    assert_ptr_equal(u->nodes[hot], N(c, "hot"));
    assert_true(ebb_usage_above_target(u, hot));
    assert_true(ebb_usage_continues(u, hot, true));
    /* h3 frees 600m: 2600 > 2000, budget 1000 */
    assert_int_equal(ebb_usage_of_pod(u, c, P(c, "h3"), freed, NULL), 0);
    assert_int_equal(freed[0], 600);
    assert_int_equal(freed[2], 1);
    ebb_usage_subtract(u, hot, freed);
    assert_int_equal(u->used[hot * 3], 2600);
    assert_int_equal(u->budget[0], 1000);
    assert_int_equal(u->budget[2], 8);
    assert_true(ebb_usage_continues(u, hot, true));
    /* h1 frees 1600m: 1000 <= 2000, below target; the budget is spent too */
    assert_int_equal(ebb_usage_of_pod(u, c, P(c, "h1"), freed, NULL), 0);
    ebb_usage_subtract(u, hot, freed);
    assert_false(ebb_usage_above_target(u, hot));
    assert_false(ebb_usage_budget_left(u));
    assert_false(ebb_usage_continues(u, hot, false));
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

static void order_by_raw_sum_ties_by_name(void **state)
{
    struct ebb_cache *c;
    struct ebb_usage *u;
    size_t idx[4], n;
    const int cpu_only[] = { EBB_RES_CPU };

    (void)state;
    begin();
    node("b", "4", NULL, NULL);
    node("a", "4", NULL, NULL);
    node("c", "4", NULL, NULL);
    node("d", "4", NULL, NULL);
    pod("pb", "b", "\"cpu\":\"1\"", "Running", NULL);
    pod("pa", "a", "\"cpu\":\"1\"", "Running", NULL);
    pod("pc", "c", "\"cpu\":\"2\"", "Running", NULL);
    pod("pd", "d", "\"cpu\":\"500m\"", "Running", NULL);
    c = load();
    u = usage_of(c, cpu_only, 1, EBB_USAGE_REQUESTS);
    memset(u->cls, EBB_USAGE_OVER, u->n);
    n = ebb_usage_order(u, EBB_USAGE_OVER, false, idx);
    assert_int_equal(n, 4);
    assert_string_equal(u->nodes[idx[0]]->name, "c");
    assert_string_equal(u->nodes[idx[1]]->name, "a");   /* tie with b: by name */
    assert_string_equal(u->nodes[idx[2]]->name, "b");
    assert_string_equal(u->nodes[idx[3]]->name, "d");
    n = ebb_usage_order(u, EBB_USAGE_OVER, true, idx);
    assert_string_equal(u->nodes[idx[0]]->name, "d");
    assert_string_equal(u->nodes[idx[1]]->name, "a");
    assert_string_equal(u->nodes[idx[2]]->name, "b");
    assert_string_equal(u->nodes[idx[3]]->name, "c");
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

static void metrics_source(void **state)
{
    struct ebb_cache *c;
    struct ebb_usage *u;
    int64_t freed[3];
    const char *why = NULL;
    size_t m1;

    (void)state;
    begin();
    node("m-1", "4", NULL, NULL);
    node("m-2", "4", NULL, NULL);
    node("m-3", "4", NULL, NULL);
    pod("a", "m-1", "\"cpu\":\"100m\"", "Running", NULL);
    pod("b", "m-1", "\"cpu\":\"100m\"", "Running", NULL);
    pod("c", "m-3", "\"cpu\":\"100m\"", "Running", NULL);
    node_metrics("m-1", "\"cpu\":\"3400m\",\"memory\":\"4Gi\"");
    node_metrics("m-2", "\"cpu\":\"600m\"");   /* no memory */
    pod_metrics("a", "\"cpu\":\"1200m\",\"memory\":\"1Gi\"");
    c = load();
    u = usage_of(c, BASIC, 3, EBB_USAGE_METRICS);
    assert_int_equal(u->n, 1);
    assert_int_equal(u->nskipped, 2);
    assert_string_equal(u->skipped[0].node->name, "m-2");
    /* upstream's actualUsageClient.sync errors */
    assert_string_equal(u->skipped[0].reason,
                        "unable to find \"memory\" resource for collected \"m-2\" node metric");
    assert_string_equal(u->skipped[1].reason,
                        "unable to find node \"m-3\" in the collected metrics");
    m1 = at(u, c, "m-1");
    assert_int_equal(u->used[m1 * 3 + 0], 3400);
    assert_int_equal(u->used[m1 * 3 + 1], 4LL << 30);
    assert_int_equal(u->used[m1 * 3 + 2], 2);   /* pods: the occupying pods */
    assert_int_equal(ebb_usage_of_pod(u, c, P(c, "a"), freed, &why), 0);
    assert_int_equal(freed[0], 1200);
    assert_int_equal(freed[1], 1LL << 30);
    assert_int_equal(ebb_usage_of_pod(u, c, P(c, "b"), freed, &why), EBB_ENOENT);
    assert_string_equal(why, "the pod has no PodMetrics (metrics.k8s.io)");
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

static void metric_resource_has_capacity_100(void **state)
{
    struct ebb_cache *c = four_nodes();
    int res[2] = { EBB_RES_CPU, ebb_resource_id(EBB_USAGE_METRIC_RESOURCE) };
    struct ebb_usage *u = usage_of(c, res, 2, EBB_USAGE_REQUESTS);

    (void)state;
    assert_true(u->has_cap[1]);
    assert_int_equal(u->cap[1], 100);
    assert_int_equal(u->used[1], 0);
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

static void destinations_taints_strict(void **state)
{
    struct ebb_cache *c;
    struct ebb_usage *u;
    bool has[3] = { true, false, false };
    double low[3] = { 20, 0, 0 }, high[3] = { 50, 0, 0 };

    (void)state;
    begin();
    node("src", "4", NULL, NULL);
    node("dst", "4", NULL, ",\"taints\":[{\"key\":\"dedicated\",\"value\":\"batch\",\"effect\":\"NoSchedule\"},"
                          "{\"key\":\"spot\",\"value\":\"true\",\"effect\":\"PreferNoSchedule\"}]");
    pod("big", "src", "\"cpu\":\"3\"", "Running", NULL);
    pod("both", "src", "\"cpu\":\"100m\"", "Running",
        ",\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\"},{\"key\":\"spot\",\"operator\":\"Exists\"}]");
    pod("noschedule-only", "src", "\"cpu\":\"100m\"", "Running",
        ",\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\"},{\"key\":\"x\",\"operator\":\"Exists\"}]");
    pod("wildcard", "src", "\"cpu\":\"100m\"", "Running", ",\"tolerations\":[{\"operator\":\"Exists\"}]");
    pod("both-again", "src", "\"cpu\":\"100m\"", "Running",
        ",\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\"},{\"key\":\"spot\",\"operator\":\"Exists\"}]");
    c = load();
    u = usage_of(c, BASIC, 3, EBB_USAGE_REQUESTS);
    ebb_usage_set_thresholds(u, has, low, high, false);
    ebb_usage_classify(u, EBB_USAGE_SPREAD, NULL, NULL);
    assert_false(ebb_usage_tolerated(u, P(c, "both")));   /* no move yet: no destinations */
    ebb_usage_move(u, EBB_USAGE_UNDER);
    assert_true(ebb_usage_tolerated(u, P(c, "both")));
    assert_false(ebb_usage_tolerated(u, P(c, "noschedule-only")));   /* every effect counts */
    assert_false(ebb_usage_tolerated(u, P(c, "wildcard")));          /* 1 toleration < 2 taints */
    assert_false(ebb_usage_tolerated(u, P(c, "big")));
    assert_true(ebb_usage_tolerated(u, P(c, "both-again")));         /* the same tolerations */
    assert_false(ebb_usage_tolerated(u, P(c, "noschedule-only")));   /* asked again */
    /* another move, other destinations: the untainted source takes anyone */
    ebb_usage_move(u, EBB_USAGE_OVER);
    assert_true(ebb_usage_tolerated(u, P(c, "noschedule-only")));
    assert_true(ebb_usage_tolerated(u, P(c, "big")));
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

static void explain_sentences(void **state)
{
    struct ebb_cache *c = four_nodes();
    struct ebb_usage *u = usage_of(c, BASIC, 3, EBB_USAGE_REQUESTS);
    bool has[3] = { true, true, false };
    double low[3] = { 20, 5, 0 }, high[3] = { 50, 10, 0 };
    char buf[256];

    (void)state;
    ebb_usage_set_thresholds(u, has, low, high, false);
    ebb_usage_classify(u, EBB_USAGE_SPREAD, NULL, NULL);
    ebb_usage_explain(u, at(u, c, "hot"), buf, sizeof(buf));
    /* memory 2Gi of 16Gi = 12.5% > 10%: 2Gi - int(10 * 0.01 * 16Gi) over */
    assert_string_equal(buf, "node hot is above its target utilization: cpu 80.00% > 50.00% (+1200m), "
                             "memory 12.50% > 10.00% (+429496730)");
    ebb_usage_set_thresholds(u, has, (double[]){ 20, 5, 0 }, NULL, false);
    ebb_usage_classify(u, EBB_USAGE_PACK, NULL, NULL);
    ebb_usage_explain(u, at(u, c, "cordoned"), buf, sizeof(buf));
    assert_string_equal(buf, "node cordoned is underutilized: cpu 5.00% <= 20.00%, memory 0.00% <= 5.00%");
    ebb_usage_explain(u, 99, buf, sizeof(buf));
    assert_string_equal(buf, "");
    ebb_usage_destroy(u);
    ebb_cache_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percent_and_cap_round_like_float64),
        cmocka_unit_test(requests_count_occupying_pods),
        cmocka_unit_test(bad_arguments_and_duplicates),
        cmocka_unit_test(spread_rule_boundaries),
        cmocka_unit_test(pack_rule_takes_unschedulable_sources),
        cmocka_unit_test(deviation_thresholds),
        cmocka_unit_test(extended_resource_missing_on_a_node),
        cmocka_unit_test(move_order_and_continue),
        cmocka_unit_test(order_by_raw_sum_ties_by_name),
        cmocka_unit_test(metrics_source),
        cmocka_unit_test(metric_resource_has_capacity_100),
        cmocka_unit_test(destinations_taints_strict),
        cmocka_unit_test(explain_sentences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
