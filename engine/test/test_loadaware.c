/* engine/strategy/loadaware.c: Koordinator LowNodeLoad's math on small clusters
 * loaded from JSON: usage from NodeMetric and metrics.k8s.io, raw
 * allocatable, skips, thresholds (fill quirks, deviation), classification,
 * scores, capacity, fit with reservation, the pod order and the
 * bookkeeping after an eviction. Cases marked "Koordinator" replay a test
 * of koordinator-sh/koordinator loadaware (the _test.go files) or sorter. */
#include <math.h>

#include "fixtures.h"

#include "ebb/cache.h"
#include "ebb/loadaware.h"
#include "ebb/snapshot.h"

#define NOW_TEXT "2026-11-22T12:00:00Z"
#define GI 1073741824LL

static int64_t now;

/* ---- a tiny cluster -------------------------------------------------------- */

static void begin(void)
{
    fx_begin();
}

/* `extra_meta`: ,"annotations":{...} and the like; `extra_spec`: ,"taints":[...] */
static void node(const char *name, const char *cpu, const char *mem, const char *labels,
                 const char *extra_meta, const char *extra_spec)
{
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\","
        "\"labels\":{\"kubernetes.io/hostname\":\"%s\"%s%s}%s},\"spec\":{\"podCIDR\":\"10.0.0.0/24\"%s},"
        "\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"%s\",\"pods\":\"110\"},"
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
        name, name, name, labels ? "," : "", labels ? labels : "", extra_meta ? extra_meta : "",
        extra_spec ? extra_spec : "", cpu, mem);
}

/* A running ReplicaSet pod. `resources`: the container's resources object
 * body; `meta`/`spec`: extra fields with their leading comma. */
static void pod(const char *ns, const char *name, const char *node_name, const char *resources,
                const char *meta, const char *spec, const char *created)
{
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
        "\"uid\":\"u-%s-%s\",\"creationTimestamp\":\"%s\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
        "\"kind\":\"ReplicaSet\",\"name\":\"rs-%s\",\"uid\":\"rs-%s\",\"controller\":true}]%s},"
        "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"main\",\"image\":\"img\","
        "\"resources\":{%s}}]%s},\"status\":{\"phase\":\"Running\"}}",
        name, ns, ns, name, created ? created : "2026-11-01T00:00:00Z", name, name, meta ? meta : "",
        node_name, resources ? resources : "", spec ? spec : "");
}

#define BURSTABLE "\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}"
#define GUARANTEED "\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"},\"limits\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}"

/* A NodeMetric: `pods` is the body of the podsMetric array; `update`
 * NULL leaves updateTime out; `system` NULL leaves status.nodeMetric out. */
static void node_metric(const char *name, const char *update, const char *system, const char *pods)
{
    char nm[256] = "";
    if (system)
        snprintf(nm, sizeof(nm), ",\"nodeMetric\":{\"systemUsage\":{\"resources\":{%s}}}", system);
    fx_add("{\"apiVersion\":\"slo.koordinator.sh/v1alpha1\",\"kind\":\"NodeMetric\",\"metadata\":"
        "{\"name\":\"%s\"},\"status\":{%s%s%s\"podsMetric\":[%s]%s}}",
        name, update ? "\"updateTime\":\"" : "", update ? update : "", update ? "\"," : "",
        pods ? pods : "", nm);
}

static char *pm(char *buf, size_t len, const char *ns, const char *name, const char *usage)
{
    snprintf(buf, len, "{\"namespace\":\"%s\",\"name\":\"%s\",\"podUsage\":{\"resources\":{%s}}}", ns,
             name, usage);
    return buf;
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

static struct ebb_pod *P(struct ebb_cache *c, const char *ns, const char *name)
{
    struct ebb_pod *p = ebb_cache_pod(c, ebb_str_find(ns, strlen(ns)), ebb_str_find(name, strlen(name)));
    assert_non_null(p);
    return p;
}

static int id(const char *res)
{
    return ebb_resource_id(res);
}

static struct ebb_la_thresholds thr(void)
{
    struct ebb_la_thresholds t;
    memset(&t, 0, sizeof(t));
    return t;
}

static void set_pct(uint64_t *has, double *v, const char *res, double pct)
{
    *has |= 1ull << id(res);
    v[id(res)] = pct;
}

static struct ebb_la_set *make(struct ebb_cache *c, const char *const *names, size_t n,
                               const struct ebb_la_thresholds *t, int64_t expiration)
{
    struct ebb_node *v[16];
    struct ebb_la_opts o = { .now = now, .expiration = expiration, .thresholds = t };
    struct ebb_la_set *s = NULL;

    for (size_t i = 0; i < n; i++)
        v[i] = N(c, names[i]);
    assert_int_equal(ebb_la_create(c, v, n, &o, &s), 0);
    return s;
}

static struct ebb_la_node *F(struct ebb_la_set *s, const char *name)
{
    struct ebb_la_node *n = ebb_la_find(s, ebb_str_find(name, strlen(name)));
    assert_non_null(n);
    return n;
}

#define CPU(s) ebb_la_index((s), EBB_RES_CPU)
#define MEM(s) ebb_la_index((s), EBB_RES_MEMORY)

/* ---- Koordinator's classes ---------------------------------------------------- */

static void classes_and_costs(void **state)
{
    struct ebb_cache *c;
    (void)state;
    begin();
    node("n1", "8", "32Gi", NULL, NULL, NULL);
    pod("a", "label-prod", "n1", NULL, ",\"labels\":{\"koordinator.sh/priority-class\":\"koord-prod\"}",
        ",\"priority\":5500", NULL);
    pod("a", "label-unknown", "n1", BURSTABLE,
        ",\"labels\":{\"koordinator.sh/priority-class\":\"unknown\"}", ",\"priority\":5500", NULL);
    pod("a", "prio-mid", "n1", NULL, NULL, ",\"priority\":7999", NULL);
    pod("a", "prio-free", "n1", NULL, NULL, ",\"priority\":3000", NULL);
    pod("a", "prio-out", "n1", GUARANTEED, NULL, ",\"priority\":8500", NULL);
    pod("a", "besteffort", "n1", NULL, NULL, NULL, NULL);
    pod("a", "qos-label", "n1", NULL, ",\"labels\":{\"koordinator.sh/qosClass\":\"SYSTEM\"}", NULL, NULL);
    pod("a", "qos-bad", "n1", GUARANTEED, ",\"labels\":{\"koordinator.sh/qosClass\":\"gold\"}", NULL, NULL);
    pod("a", "costs", "n1", NULL, ",\"annotations\":{\"controller.kubernetes.io/pod-deletion-cost\":\"-5\","
        "\"scheduling.koordinator.sh/eviction-cost\":\"2147483647\"}", NULL, NULL);
    pod("a", "bad-costs", "n1", NULL, ",\"annotations\":{\"controller.kubernetes.io/pod-deletion-cost\":\"+5\","
        "\"scheduling.koordinator.sh/eviction-cost\":\"007\"}", NULL, NULL);
    pod("a", "big-cost", "n1", NULL, ",\"annotations\":{\"controller.kubernetes.io/pod-deletion-cost\":"
        "\"2147483648\",\"scheduling.koordinator.sh/eviction-cost\":\"0\"}", NULL, NULL);
    c = load();

    /* the label wins over spec.priority, even an unknown one (then QoS decides) */
    assert_int_equal(ebb_koord_priority_class(P(c, "a", "label-prod")), EBB_KPRIO_PROD);
    assert_int_equal(ebb_koord_priority_class(P(c, "a", "label-unknown")), EBB_KPRIO_PROD);
    assert_int_equal(ebb_koord_priority_class(P(c, "a", "prio-mid")), EBB_KPRIO_MID);
    assert_int_equal(ebb_koord_priority_class(P(c, "a", "prio-free")), EBB_KPRIO_FREE);
    /* outside every range: from the QoS (Guaranteed -> LSR -> Prod) */
    assert_int_equal(ebb_koord_priority_class(P(c, "a", "prio-out")), EBB_KPRIO_PROD);
    assert_int_equal(ebb_koord_qos_class(P(c, "a", "prio-out")), EBB_KQOS_LSR);
    assert_int_equal(ebb_koord_priority_class(P(c, "a", "besteffort")), EBB_KPRIO_BATCH);
    assert_int_equal(ebb_koord_qos_class(P(c, "a", "besteffort")), EBB_KQOS_BE);
    assert_int_equal(ebb_koord_qos_class(P(c, "a", "label-unknown")), EBB_KQOS_LS);
    assert_int_equal(ebb_koord_qos_class(P(c, "a", "qos-label")), EBB_KQOS_SYSTEM);
    assert_int_equal(ebb_koord_qos_rank(EBB_KQOS_SYSTEM), ebb_koord_qos_rank(EBB_KQOS_LSE));
    assert_int_equal(ebb_koord_priority_class(P(c, "a", "qos-label")), EBB_KPRIO_PROD);
    assert_int_equal(ebb_koord_qos_class(P(c, "a", "qos-bad")), EBB_KQOS_LSR);
    assert_string_equal(ebb_koord_priority_name(EBB_KPRIO_BATCH), "Batch");
    assert_string_equal(ebb_koord_qos_name(EBB_KQOS_LSE), "LSE");

    assert_int_equal(ebb_pod_deletion_cost(P(c, "a", "costs")), -5);
    assert_int_equal(ebb_koord_eviction_cost(P(c, "a", "costs")), INT32_MAX);
    /* a sign, leading zeros or int32 overflow read as 0 */
    assert_int_equal(ebb_pod_deletion_cost(P(c, "a", "bad-costs")), 0);
    assert_int_equal(ebb_koord_eviction_cost(P(c, "a", "bad-costs")), 0);
    assert_int_equal(ebb_pod_deletion_cost(P(c, "a", "big-cost")), 0);
    assert_int_equal(ebb_pod_deletion_cost(P(c, "a", "besteffort")), 0);
    ebb_cache_destroy(c);
}

/* ---- usage ------------------------------------------------------------------------ */

static void usage_from_node_metric(void **state)
{
    struct ebb_cache *c;
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    struct ebb_la_node *n;
    const struct ebb_res *u;
    char e1[256], e2[256], e3[256], e4[256], pods[1200];
    const char *names[] = { "n1" };
    (void)state;

    begin();
    node("n1", "8", "32Gi", NULL, NULL, NULL);
    pod("a", "web", "n1", BURSTABLE, NULL, NULL, NULL);                 /* Prod */
    pod("a", "job", "n1", NULL, NULL, NULL, NULL);                      /* Batch */
    pod("a", "quiet", "n1", BURSTABLE, NULL, NULL, NULL);               /* no entry */
    snprintf(pods, sizeof(pods), "%s,%s,%s,%s", pm(e1, sizeof(e1), "a", "web", "\"cpu\":\"1\",\"memory\":\"1Gi\""),
             pm(e2, sizeof(e2), "a", "job", "\"cpu\":\"500m\",\"memory\":\"512Mi\""),
             pm(e3, sizeof(e3), "a", "gone", "\"cpu\":\"250m\""),
             /* a second entry for web: the sum counts both, the map keeps the last */
             pm(e4, sizeof(e4), "a", "web", "\"cpu\":\"100m\""));
    node_metric("n1", "2026-11-22T11:59:00Z", "\"cpu\":\"300m\",\"memory\":\"1Gi\"", pods);
    c = load();

    /* usage is measured for the threshold resources (and pods) only */
    set_pct(&t.has_low, t.low, "cpu", 30);
    s = make(c, names, 1, &t, 180);
    n = F(s, "n1");
    assert_int_equal(n->skip, EBB_LA_MEASURED);
    assert_int_equal(n->source, EBB_LA_SRC_KOORD);
    assert_int_equal(n->usage[CPU(s)], 300 + 1000 + 500 + 250 + 100);
    assert_int_equal(n->usage[MEM(s)], GI + GI + GI / 2);
    /* prod: entries of the node's Prod pods only (both web entries) */
    assert_int_equal(n->prod[CPU(s)], 1100);
    assert_int_equal(n->usage[s->pods_index], 3);
    assert_int_equal(n->prod[s->pods_index], 2);
    assert_int_equal(n->alloc[CPU(s)], 8000);
    u = ebb_la_pod_usage(n, P(c, "a", "web"));
    assert_non_null(u);
    assert_int_equal(ebb_res_get(u, EBB_RES_CPU), 100);
    assert_null(ebb_la_pod_usage(n, P(c, "a", "quiet")));
    /* memory is always a threshold resource (100% here); pods only when named */
    assert_int_equal(s->nres, 3);
    assert_true(s->thresholded[MEM(s)]);
    assert_false(s->thresholded[s->pods_index]);
    assert_int_equal(n->high[MEM(s)], 32 * GI);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

static void raw_allocatable_and_metrics_server(void **state)
{
    struct ebb_cache *c;
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    const char *names[] = { "norm", "bad", "ms" };
    (void)state;

    begin();
    node("norm", "16", "32Gi", NULL, ",\"annotations\":{\"node.koordinator.sh/raw-allocatable\":"
         "\"{\\\"cpu\\\":\\\"8\\\"}\"}", NULL);
    node("bad", "16", "32Gi", NULL, ",\"annotations\":{\"node.koordinator.sh/raw-allocatable\":"
         "\"{\\\"cpu\\\":\\\"eight\\\"}\"}", NULL);
    node("ms", "8", "32Gi", NULL, NULL, NULL);
    pod("a", "p1", "ms", BURSTABLE, NULL, NULL, NULL);
    pod("a", "p2", "ms", NULL, NULL, NULL, NULL);
    node_metric("norm", "2026-11-22T11:59:00Z", "\"cpu\":\"1\"", NULL);
    node_metric("bad", "2026-11-22T11:59:00Z", "\"cpu\":\"1\"", NULL);
    fx_add("{\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"kind\":\"NodeMetrics\",\"metadata\":{\"name\":\"ms\"},"
        "\"timestamp\":\"2026-11-22T11:59:30Z\",\"window\":\"20s\",\"usage\":{\"cpu\":\"3\",\"memory\":\"4Gi\"}}");
    fx_add("{\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"kind\":\"PodMetrics\",\"metadata\":{\"name\":\"p1\","
        "\"namespace\":\"a\"},\"timestamp\":\"2026-11-22T11:59:30Z\",\"window\":\"20s\",\"containers\":["
        "{\"name\":\"main\",\"usage\":{\"cpu\":\"700m\",\"memory\":\"1Gi\"}},"
        "{\"name\":\"side\",\"usage\":{\"cpu\":\"100m\",\"memory\":\"0\"}}]}");
    fx_add("{\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"kind\":\"PodMetrics\",\"metadata\":{\"name\":\"p2\","
        "\"namespace\":\"a\"},\"timestamp\":\"2026-11-22T11:59:30Z\",\"window\":\"20s\",\"containers\":["
        "{\"name\":\"main\",\"usage\":{\"cpu\":\"400m\",\"memory\":\"1Gi\"}}]}");
    c = load();

    set_pct(&t.has_low, t.low, "cpu", 30);
    s = make(c, names, 3, &t, 180);
    assert_int_equal(F(s, "norm")->alloc[CPU(s)], 8000);
    assert_int_equal(F(s, "norm")->alloc[MEM(s)], 32 * GI);   /* not in the annotation */
    assert_int_equal(F(s, "bad")->alloc[CPU(s)], 16000);      /* unparsable: allocatable */
    assert_true(fabs(ebb_la_percent(F(s, "norm"), CPU(s), false) - 12.5) < 1e-9);
    assert_int_equal(F(s, "ms")->source, EBB_LA_SRC_METRICS);
    assert_int_equal(F(s, "ms")->usage[CPU(s)], 3000);
    /* prod from the PodMetrics of the Prod pod (p2 is BestEffort: Batch) */
    assert_int_equal(F(s, "ms")->prod[CPU(s)], 800);
    assert_int_equal(ebb_res_get(ebb_la_pod_usage(F(s, "ms"), P(c, "a", "p2")), EBB_RES_CPU), 400);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

static void skips(void **state)
{
    struct ebb_cache *c;
    struct ebb_la_set *s;
    const char *names[] = { "none", "empty", "notime", "edge", "fresh", "pods-only", "zero" };
    char p1[160];
    (void)state;

    begin();
    node("none", "8", "32Gi", NULL, NULL, NULL);
    node("empty", "8", "32Gi", NULL, NULL, NULL);
    node("notime", "8", "32Gi", NULL, NULL, NULL);
    node("edge", "8", "32Gi", NULL, NULL, NULL);
    node("fresh", "8", "32Gi", NULL, NULL, NULL);
    node("pods-only", "8", "32Gi", NULL, NULL, NULL);
    node("zero", "8", "32Gi", NULL, NULL, NULL);
    node_metric("empty", "2026-11-22T11:59:00Z", NULL, NULL);
    node_metric("notime", NULL, "\"cpu\":\"1\"", NULL);
    node_metric("edge", "2026-11-22T11:57:00Z", "\"cpu\":\"1\"", NULL);    /* exactly 180s */
    node_metric("fresh", "2026-11-22T11:57:01Z", "\"cpu\":\"1\"", NULL);
    /* podsMetric but no status.nodeMetric: Koordinator skips the node */
    node_metric("pods-only", "2026-11-22T11:59:00Z", NULL, pm(p1, sizeof(p1), "a", "w", "\"cpu\":\"2\""));
    /* status.nodeMetric there but empty: used, usage from podsMetric only */
    fx_add("{\"apiVersion\":\"slo.koordinator.sh/v1alpha1\",\"kind\":\"NodeMetric\",\"metadata\":"
           "{\"name\":\"zero\"},\"status\":{\"updateTime\":\"2026-11-22T11:59:00Z\",\"nodeMetric\":{},"
           "\"podsMetric\":[%s]}}", pm(p1, sizeof(p1), "a", "z", "\"memory\":\"512Mi\""));
    c = load();

    s = make(c, names, 7, NULL, 180);
    assert_int_equal(F(s, "none")->skip, EBB_LA_NO_METRIC);
    assert_int_equal(F(s, "empty")->skip, EBB_LA_EMPTY_METRIC);
    assert_int_equal(F(s, "notime")->skip, EBB_LA_NO_TIME);
    assert_int_equal(F(s, "edge")->skip, EBB_LA_EXPIRED);
    assert_int_equal(F(s, "fresh")->skip, EBB_LA_MEASURED);
    assert_int_equal(F(s, "pods-only")->skip, EBB_LA_EMPTY_METRIC);
    assert_int_equal(F(s, "zero")->skip, EBB_LA_MEASURED);
    assert_int_equal(F(s, "zero")->usage[MEM(s)], 512 << 20);
    assert_int_equal(F(s, "edge")->cls, EBB_LA_SKIPPED);
    assert_int_equal(s->nmeasured, 2);
    ebb_la_destroy(s);
    /* expiration <= 0: never expires, but a metric without a time still is */
    s = make(c, names, 5, NULL, 0);
    assert_int_equal(F(s, "edge")->skip, EBB_LA_MEASURED);
    assert_int_equal(F(s, "notime")->skip, EBB_LA_NO_TIME);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

/* ---- thresholds and classes ------------------------------------------------------------ */

/* Six nodes at cpu 10..90%; memory 25%. */
static struct ebb_cache *ladder(void)
{
    static const char *const cpus[] = { "800m", "1600m", "2400m", "4000m", "6000m", "7200m" };
    char name[16], sys[64];

    begin();
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "n%d", i + 1);
        node(name, "8", "32Gi", NULL, NULL, i == 1 ? ",\"unschedulable\":true" : NULL);
        snprintf(sys, sizeof(sys), "\"cpu\":\"%s\",\"memory\":\"8Gi\"", cpus[i]);
        node_metric(name, "2026-11-22T11:59:00Z", sys, NULL);
    }
    return load();
}

static const char *const LADDER[] = { "n1", "n2", "n3", "n4", "n5", "n6" };

static void thresholds_and_classes(void **state)
{
    struct ebb_cache *c = ladder();
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    (void)state;

    set_pct(&t.has_low, t.low, "cpu", 30);
    set_pct(&t.has_high, t.high, "cpu", 65);
    s = make(c, LADDER, 6, &t, 180);
    assert_int_equal(F(s, "n1")->low[CPU(s)], 2400);
    assert_int_equal(F(s, "n1")->high[CPU(s)], 5200);
    /* prod thresholds unset are 100%: low nodes are both-low, others prod-low */
    assert_int_equal(F(s, "n1")->cls, EBB_LA_BOTH_LOW);
    assert_int_equal(F(s, "n2")->cls, EBB_LA_NORMAL);      /* cordoned */
    assert_int_equal(F(s, "n3")->cls, EBB_LA_BOTH_LOW);    /* 2400 <= 2400 */
    assert_int_equal(F(s, "n4")->cls, EBB_LA_PROD_LOW);
    assert_int_equal(F(s, "n5")->cls, EBB_LA_HIGH);
    assert_int_equal(F(s, "n6")->cls, EBB_LA_HIGH);
    /* over is strictly over */
    F(s, "n6")->usage[CPU(s)] = 5200;
    assert_int_equal(ebb_la_over(s, F(s, "n6"), false), 0);
    F(s, "n6")->usage[CPU(s)] = 5201;
    assert_int_equal(ebb_la_over(s, F(s, "n6"), false), 1u << CPU(s));
    assert_string_equal(ebb_la_class_name(EBB_LA_PROD_HIGH), "prod_high");
    assert_int_equal(ebb_la_class_parse("both_low"), EBB_LA_BOTH_LOW);
    assert_int_equal(ebb_la_class_parse("lowish"), -1);
    ebb_la_destroy(s);

    /* a low but no high threshold: the high is the map's zero value, so any
     * usage is over; a high but no low threshold: never triggers (100%) */
    t = thr();
    set_pct(&t.has_low, t.low, "cpu", 30);
    set_pct(&t.has_high, t.high, "memory", 10);
    s = make(c, LADDER, 6, &t, 180);
    assert_int_equal(F(s, "n1")->high[CPU(s)], 0);
    assert_int_equal(F(s, "n1")->high[MEM(s)], 32 * GI);
    assert_int_equal(F(s, "n1")->cls, EBB_LA_BOTH_LOW);   /* low wins over high */
    assert_int_equal(F(s, "n4")->cls, EBB_LA_HIGH);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

static void deviation(void **state)
{
    struct ebb_cache *c = ladder();
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    char why[256];
    (void)state;

    /* mean cpu = (10+20+30+50+75+90)/6 = 45.83%; window 35.83..55.83% */
    t.deviation = true;
    set_pct(&t.has_low, t.low, "cpu", 10);
    set_pct(&t.has_high, t.high, "cpu", 10);
    s = make(c, LADDER, 6, &t, 180);
    assert_true(fabs(s->mean[CPU(s)] - 275.0 / 6) < 1e-9);
    assert_int_equal(F(s, "n1")->low[CPU(s)], (int64_t)((275.0 / 6 - 10) * 0.01 * 8000));
    assert_int_equal(F(s, "n1")->high[CPU(s)], (int64_t)((275.0 / 6 + 10) * 0.01 * 8000));
    assert_int_equal(F(s, "n3")->cls, EBB_LA_BOTH_LOW);   /* 2400 <= 2866 */
    assert_int_equal(F(s, "n4")->cls, EBB_LA_PROD_LOW);   /* 4000 between */
    assert_int_equal(F(s, "n5")->cls, EBB_LA_HIGH);
    /* memory, not given: low 0 in deviation mode, i.e. the whole allocatable */
    assert_int_equal(F(s, "n1")->low[MEM(s)], 32 * GI);
    assert_int_equal(F(s, "n1")->high[MEM(s)], 32 * GI);
    ebb_la_reason(s, F(s, "n6"), false, why, sizeof(why));
    assert_string_equal(why, "node cpu usage(90.00%)>threshold(55.83%)");
    ebb_la_destroy(s);

    /* clamped to [0, 100] */
    t = thr();
    t.deviation = true;
    set_pct(&t.has_low, t.low, "cpu", 60);
    set_pct(&t.has_high, t.high, "cpu", 80);
    s = make(c, LADDER, 6, &t, 180);
    assert_int_equal(F(s, "n1")->low[CPU(s)], 0);
    assert_int_equal(F(s, "n1")->high[CPU(s)], 8000);
    assert_true(s->high_pct[CPU(s)] == 100);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

static void prod_classes(void **state)
{
    struct ebb_cache *c;
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    char e1[256], e2[256], pods[600];
    const char *names[] = { "busy", "calm", "idle" };
    (void)state;

    begin();
    node("busy", "8", "32Gi", NULL, NULL, NULL);   /* 50%, prod 40% */
    node("calm", "8", "32Gi", NULL, NULL, NULL);   /* 20%, prod 5% */
    node("idle", "8", "32Gi", NULL, NULL, NULL);   /* 20%, prod 15% */
    pod("a", "b1", "busy", BURSTABLE, NULL, NULL, NULL);
    pod("a", "c1", "calm", BURSTABLE, NULL, NULL, NULL);
    pod("a", "i1", "idle", BURSTABLE, NULL, NULL, NULL);
    node_metric("busy", "2026-11-22T11:59:00Z", "\"cpu\":\"800m\"",
                pm(e1, sizeof(e1), "a", "b1", "\"cpu\":\"3200m\""));
    snprintf(pods, sizeof(pods), "%s", pm(e2, sizeof(e2), "a", "c1", "\"cpu\":\"400m\""));
    node_metric("calm", "2026-11-22T11:59:00Z", "\"cpu\":\"1200m\"", pods);
    node_metric("idle", "2026-11-22T11:59:00Z", "\"cpu\":\"400m\"",
                pm(e1, sizeof(e1), "a", "i1", "\"cpu\":\"1200m\""));
    c = load();
    set_pct(&t.has_low, t.low, "cpu", 30);
    set_pct(&t.has_high, t.high, "cpu", 65);
    set_pct(&t.has_prod_low, t.prod_low, "cpu", 10);
    set_pct(&t.has_prod_high, t.prod_high, "cpu", 30);
    s = make(c, names, 3, &t, 180);
    assert_int_equal(F(s, "busy")->cls, EBB_LA_PROD_HIGH);
    assert_int_equal(F(s, "calm")->cls, EBB_LA_BOTH_LOW);
    assert_int_equal(F(s, "idle")->cls, EBB_LA_LOW);
    assert_int_equal(ebb_la_over(s, F(s, "busy"), true), 1u << CPU(s));
    assert_int_equal(ebb_la_over(s, F(s, "busy"), false), 0);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

/* ---- sources and capacity ----------------------------------------------------------------- */

/* Koordinator: TestSortNodesByUsageDescendingOrder / AscendingOrder. */
static void node_scores(void **state)
{
    struct ebb_cache *c;
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    struct ebb_la_node *v[3];
    int64_t w[EBB_LA_MAXRES] = { 0 };
    const char *names[] = { "node1", "node2", "node3" };
    (void)state;

    begin();
    for (int i = 0; i < 3; i++) {
        node(names[i], "32", "32Gi", NULL, NULL, NULL);
        node_metric(names[i], "2026-11-22T11:59:00Z", "\"cpu\":\"1\"", NULL);
    }
    c = load();
    set_pct(&t.has_low, t.low, "cpu", 30);
    set_pct(&t.has_low, t.low, "pods", 30);   /* track pods with a weight */
    s = make(c, names, 3, &t, 180);
    /* the usages of the Koordinator test */
    F(s, "node1")->usage[CPU(s)] = 1730, F(s, "node1")->usage[MEM(s)] = 3038982964, F(s, "node1")->usage[s->pods_index] = 25;
    F(s, "node2")->usage[CPU(s)] = 1220, F(s, "node2")->usage[MEM(s)] = 3038982964, F(s, "node2")->usage[s->pods_index] = 11;
    F(s, "node3")->usage[CPU(s)] = 1530, F(s, "node3")->usage[MEM(s)] = 5038982964, F(s, "node3")->usage[s->pods_index] = 20;
    w[CPU(s)] = w[MEM(s)] = w[s->pods_index] = 1;
    v[0] = F(s, "node1"), v[1] = F(s, "node2"), v[2] = F(s, "node3");
    ebb_la_sort_nodes(s, v, 3, w, false, false);
    assert_string_equal(v[0]->node->name, "node3");
    assert_string_equal(v[1]->node->name, "node1");
    assert_string_equal(v[2]->node->name, "node2");
    ebb_la_sort_nodes(s, v, 3, w, false, true);
    assert_string_equal(v[0]->node->name, "node2");
    assert_string_equal(v[1]->node->name, "node1");
    assert_string_equal(v[2]->node->name, "node3");
    /* integer thousandths: cpu 1730*1000/32000 = 54, memory 88, pods 227 */
    assert_int_equal(ebb_la_score(s, F(s, "node1"), w, false), (54 + 88 + 227) / 3);
    /* ties by name; usage capped at allocatable */
    F(s, "node1")->usage[CPU(s)] = F(s, "node2")->usage[CPU(s)] = 64000;
    F(s, "node1")->usage[MEM(s)] = F(s, "node2")->usage[MEM(s)] = 0;
    F(s, "node1")->usage[s->pods_index] = F(s, "node2")->usage[s->pods_index] = 0;
    w[MEM(s)] = w[s->pods_index] = 0;
    assert_int_equal(ebb_la_score(s, F(s, "node2"), w, false), 1000);
    v[0] = F(s, "node2"), v[1] = F(s, "node3"), v[2] = F(s, "node1");
    ebb_la_sort_nodes(s, v, 3, w, false, false);
    assert_string_equal(v[0]->node->name, "node1");
    assert_string_equal(v[1]->node->name, "node2");
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

/* Koordinator: TestOverUtilizedEvictionReason. */
static void reasons(void **state)
{
    struct ebb_cache *c;
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    const char *names[] = { "cpu-only", "both" };
    char why[256];
    (void)state;

    begin();
    node("cpu-only", "96", "512Gi", NULL, NULL, NULL);
    node("both", "96", "512Gi", NULL, NULL, NULL);
    node_metric("cpu-only", "2026-11-22T11:59:00Z", "\"cpu\":\"64\",\"memory\":\"32Gi\"", NULL);
    node_metric("both", "2026-11-22T11:59:00Z", "\"cpu\":\"64\",\"memory\":\"400Gi\"", NULL);
    c = load();
    set_pct(&t.has_low, t.low, "cpu", 10);
    set_pct(&t.has_low, t.low, "memory", 10);
    set_pct(&t.has_high, t.high, "cpu", 50);
    set_pct(&t.has_high, t.high, "memory", 50);
    s = make(c, names, 2, &t, 180);
    ebb_la_reason(s, F(s, "cpu-only"), false, why, sizeof(why));
    assert_string_equal(why, "node cpu usage(66.67%)>threshold(50.00%)");
    ebb_la_reason(s, F(s, "both"), false, why, sizeof(why));
    assert_string_equal(why, "node cpu usage(66.67%)>threshold(50.00%), node memory usage(78.12%)>threshold(50.00%)");
    /* truncated, never overflowing */
    assert_int_equal(ebb_la_reason(s, F(s, "both"), false, why, 10), 9);
    assert_int_equal(strlen(why), 9);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

/* ---- fit, order, bookkeeping ----------------------------------------------------------------- */

static struct ebb_cache *fit_cluster(void)
{
    char e[4][256], pods[1200];

    begin();
    node("src", "8", "32Gi", NULL, NULL, NULL);
    node("t1", "8", "32Gi", "\"disk\":\"hdd\"", NULL, NULL);
    node("t2", "8", "32Gi", "\"disk\":\"hdd\"", NULL,
         ",\"taints\":[{\"key\":\"dedicated\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]");
    pod("a", "p1", "src", BURSTABLE, NULL, NULL, NULL);
    pod("a", "p2", "src", BURSTABLE, NULL, NULL, NULL);
    pod("a", "ssd", "src", BURSTABLE, NULL, ",\"nodeSelector\":{\"disk\":\"ssd\"}", NULL);
    pod("a", "gpu", "src", BURSTABLE, NULL, ",\"tolerations\":[{\"key\":\"dedicated\",\"operator\":"
        "\"Equal\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]", NULL);
    pod("a", "unmeasured", "src", BURSTABLE, NULL, NULL, NULL);
    snprintf(pods, sizeof(pods), "%s,%s,%s,%s", pm(e[0], 256, "a", "p1", "\"cpu\":\"2\",\"memory\":\"1Gi\""),
             pm(e[1], 256, "a", "p2", "\"cpu\":\"2\",\"memory\":\"1Gi\""),
             pm(e[2], 256, "a", "ssd", "\"cpu\":\"500m\""), pm(e[3], 256, "a", "gpu", "\"cpu\":\"2\""));
    node_metric("src", "2026-11-22T11:59:00Z", "\"cpu\":\"500m\"", pods);   /* 7000m */
    node_metric("t1", "2026-11-22T11:59:00Z", "\"cpu\":\"1600m\",\"memory\":\"4Gi\"", NULL);
    node_metric("t2", "2026-11-22T11:59:00Z", "\"cpu\":\"800m\"", NULL);
    return load();
}

static void fits_reserve_headroom(void **state)
{
    struct ebb_cache *c = fit_cluster();
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    struct ebb_la_node *src, *targets[2], *chosen;
    const char *names[] = { "src", "t1", "t2" };
    int64_t avail[EBB_LA_MAXRES];
    (void)state;

    set_pct(&t.has_low, t.low, "cpu", 30);
    set_pct(&t.has_high, t.high, "cpu", 65);
    s = make(c, names, 3, &t, 180);
    src = F(s, "src");
    targets[0] = F(s, "t1"), targets[1] = F(s, "t2");
    ebb_la_available(s, targets, 2, false, avail);
    assert_int_equal(avail[CPU(s)], (5200 - 1600) + (5200 - 800));
    assert_int_equal(avail[MEM(s)], 2 * 32 * GI - 4 * GI);

    /* p1 fits t1 (1600 + 2000 <= 5200) and stays booked there */
    assert_true(ebb_la_fits(s, P(c, "a", "p1"), ebb_la_pod_usage(src, P(c, "a", "p1")), targets, 2,
                            false, &chosen));
    assert_ptr_equal(chosen, targets[0]);
    assert_int_equal(targets[0]->usage[CPU(s)], 3600);
    /* p2 would go over t1 (5600) and t2 refuses it (taint): no fit, no change */
    assert_false(ebb_la_fits(s, P(c, "a", "p2"), ebb_la_pod_usage(src, P(c, "a", "p2")), targets, 2,
                             false, &chosen));
    assert_null(chosen);
    assert_int_equal(targets[0]->usage[CPU(s)], 3600);
    assert_int_equal(targets[1]->usage[CPU(s)], 800);
    /* the toleration lets gpu onto t2 after t1 has no room */
    assert_true(ebb_la_fits(s, P(c, "a", "gpu"), ebb_la_pod_usage(src, P(c, "a", "gpu")), targets, 2,
                            false, &chosen));
    assert_ptr_equal(chosen, targets[1]);
    /* node selector: nowhere */
    assert_false(ebb_la_fits(s, P(c, "a", "ssd"), ebb_la_pod_usage(src, P(c, "a", "ssd")), targets, 2,
                             false, NULL));
    /* no measured usage: nowhere */
    assert_false(ebb_la_fits(s, P(c, "a", "unmeasured"), ebb_la_pod_usage(src, P(c, "a", "unmeasured")),
                             targets, 2, false, NULL));
    /* the prod pass books prod usage against the prod high (100% here) */
    assert_true(ebb_la_fits(s, P(c, "a", "p2"), ebb_la_pod_usage(src, P(c, "a", "p2")), targets, 2,
                            true, &chosen));
    assert_int_equal(targets[0]->prod[CPU(s)], 2000);
    assert_int_equal(targets[0]->usage[CPU(s)], 3600);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

static void evicted_bookkeeping(void **state)
{
    struct ebb_cache *c = fit_cluster();
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    struct ebb_la_node *src;
    const char *names[] = { "src", "t1", "t2" };
    int64_t avail[EBB_LA_MAXRES] = { 0 };
    char why[128];
    (void)state;

    set_pct(&t.has_low, t.low, "cpu", 30);
    set_pct(&t.has_high, t.high, "cpu", 65);
    set_pct(&t.has_low, t.low, "pods", 50);
    set_pct(&t.has_high, t.high, "pods", 90);
    s = make(c, names, 3, &t, 180);
    src = F(s, "src");
    avail[CPU(s)] = 3000;
    avail[s->pods_index] = 10;
    assert_int_equal(src->usage[CPU(s)], 7000);
    assert_int_equal(src->usage[s->pods_index], 5);
    assert_true(ebb_la_evicted(s, src, P(c, "a", "p1"), false, avail));
    assert_int_equal(src->usage[CPU(s)], 5000);
    assert_int_equal(src->usage[s->pods_index], 4);        /* one pod fewer */
    assert_int_equal(src->prod[CPU(s)], 6500);             /* the node pass leaves prod alone */
    assert_int_equal(avail[CPU(s)], 1000);
    assert_int_equal(avail[s->pods_index], 9);
    assert_true(ebb_la_evicted(s, src, P(c, "a", "p2"), true, avail));
    assert_int_equal(src->prod[CPU(s)], 4500);
    assert_int_equal(avail[CPU(s)], -1000);
    /* without a measured usage nothing moves */
    assert_false(ebb_la_evicted(s, src, P(c, "a", "unmeasured"), false, avail));
    assert_int_equal(src->usage[CPU(s)], 3000);
    assert_int_equal(ebb_la_over(s, src, false), 0);
    assert_int_equal(ebb_la_reason(s, src, false, why, sizeof(why)), 0);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

/* Koordinator: TestSortPodsOnOneOverloadedNode. Only cpu is over (30000m
 * vs 20000m): weights for the others are 0, and each pod scores its cpu
 * against the 10000m excess: pod4 (0.4), pod2, pod3, pod1. */
static void pods_by_usage(void **state)
{
    struct ebb_cache *c;
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    struct ebb_la_node *n;
    struct ebb_pod *v[4];
    int64_t w[EBB_LA_MAXRES] = { 0 };
    char e[4][256], pods[1200];
    const char *names[] = { "node0" };
    (void)state;

    begin();
    node("node0", "32", "32Gi", NULL, NULL, NULL);
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "pod%d", i + 1);
        pod("ns", name, "node0", NULL, NULL, NULL, NULL);
    }
    snprintf(pods, sizeof(pods), "%s,%s,%s,%s",
             pm(e[0], 256, "ns", "pod1", "\"cpu\":\"1\",\"memory\":\"27487790694\""),
             pm(e[1], 256, "ns", "pod2", "\"cpu\":\"3\",\"memory\":\"27487790694\""),
             pm(e[2], 256, "ns", "pod3", "\"cpu\":\"2\",\"memory\":\"1\""),
             pm(e[3], 256, "ns", "pod4", "\"cpu\":\"4\",\"memory\":\"1\""));
    node_metric("node0", "2026-11-22T11:59:00Z", "\"cpu\":\"1\"", pods);
    c = load();
    set_pct(&t.has_low, t.low, "cpu", 10);
    set_pct(&t.has_low, t.low, "memory", 10);
    s = make(c, names, 1, &t, 180);
    n = F(s, "node0");
    n->usage[CPU(s)] = 30000, n->high[CPU(s)] = 20000;
    n->usage[MEM(s)] = 998244353, n->high[MEM(s)] = 27487790694;
    w[CPU(s)] = w[MEM(s)] = 1;
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "pod%d", i + 1);
        v[i] = P(c, "ns", name);
    }
    ebb_la_sort_pods(s, n, v, 4, w, false);
    assert_string_equal(v[0]->name, "pod4");
    assert_string_equal(v[1]->name, "pod2");
    assert_string_equal(v[2]->name, "pod3");
    assert_string_equal(v[3]->name, "pod1");
    assert_true(fabs(ebb_la_pod_score(s, n, v[0], w, false) - 0.4) < 1e-12);
    /* past the excess the score is 1/r + 1, so the pod nearest the excess
     * wins: with an excess of 2000m pod3 (r = 1) scores 2, pod2 (r = 1.5)
     * 1.67, pod4 (r = 2) 1.5, pod1 (r = 0.5) 0.5 */
    n->usage[CPU(s)] = 22000;
    ebb_la_sort_pods(s, n, v, 4, w, false);
    assert_string_equal(v[0]->name, "pod3");
    assert_string_equal(v[1]->name, "pod2");
    assert_string_equal(v[2]->name, "pod4");
    assert_string_equal(v[3]->name, "pod1");
    assert_true(fabs(ebb_la_pod_score(s, n, v[2], w, false) - 1.5) < 1e-12);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

/* Every key of the order, one pair of pods per step. */
static void pod_order_chain(void **state)
{
    static const char *const want[] = {
        "free", "batch-p0", "batch-p5500", "mid", "prod-be-labelled", "burst-dcost", "burst-big",
        "burst-new", "burst-old", "burst-unmeasured", "burst-ecost", "burst-lse", "guaranteed",
    };
    struct ebb_cache *c;
    struct ebb_la_thresholds t = thr();
    struct ebb_la_set *s;
    struct ebb_pod *v[16];
    int64_t w[EBB_LA_MAXRES] = { 0 };
    char e[16][256], pods[4096] = "";
    const char *names[] = { "hot" };
    size_t n = EBB_ARRAY_LEN(want);
    (void)state;

    begin();
    node("hot", "8", "32Gi", NULL, NULL, NULL);
    pod("o", "guaranteed", "hot", GUARANTEED, NULL, NULL, NULL);
    pod("o", "burst-lse", "hot", BURSTABLE, ",\"labels\":{\"koordinator.sh/qosClass\":\"LSE\"}", NULL, NULL);
    pod("o", "burst-ecost", "hot", BURSTABLE,
        ",\"annotations\":{\"scheduling.koordinator.sh/eviction-cost\":\"10\"}", NULL, NULL);
    pod("o", "burst-unmeasured", "hot", BURSTABLE, NULL, NULL, NULL);
    pod("o", "burst-old", "hot", BURSTABLE, NULL, NULL, "2026-11-01T00:00:00Z");
    pod("o", "burst-new", "hot", BURSTABLE, NULL, NULL, "2026-11-20T00:00:00Z");
    pod("o", "burst-big", "hot", BURSTABLE, NULL, NULL, NULL);
    pod("o", "burst-dcost", "hot", BURSTABLE,
        ",\"annotations\":{\"controller.kubernetes.io/pod-deletion-cost\":\"-1\"}", NULL, NULL);
    /* Prod by label although BestEffort: the Kubernetes QoS sorts it first */
    pod("o", "prod-be-labelled", "hot", NULL,
        ",\"labels\":{\"koordinator.sh/priority-class\":\"koord-prod\"}", NULL, NULL);
    pod("o", "mid", "hot", BURSTABLE, NULL, ",\"priority\":7000", NULL);
    pod("o", "batch-p5500", "hot", BURSTABLE, NULL, ",\"priority\":5500", NULL);
    pod("o", "batch-p0", "hot", NULL, NULL, NULL, NULL);
    pod("o", "free", "hot", BURSTABLE, ",\"labels\":{\"koordinator.sh/priority-class\":\"koord-free\"}",
        NULL, NULL);
    for (size_t i = 0; i < n; i++) {
        const char *use = strcmp(want[i], "burst-big") == 0 ? "\"cpu\":\"300m\"" : "\"cpu\":\"100m\"";
        if (strcmp(want[i], "burst-unmeasured") == 0)
            continue;
        if (pods[0])
            strcat(pods, ",");
        strcat(pods, pm(e[i], 256, "o", want[i], use));
    }
    node_metric("hot", "2026-11-22T11:59:00Z", "\"cpu\":\"6\"", pods);
    c = load();
    set_pct(&t.has_low, t.low, "cpu", 30);
    set_pct(&t.has_high, t.high, "cpu", 65);
    s = make(c, names, 1, &t, 180);
    w[CPU(s)] = 1;
    for (size_t i = 0; i < n; i++)   /* reversed, so the sort has work to do */
        v[i] = P(c, "o", want[n - 1 - i]);
    ebb_la_sort_pods(s, F(s, "hot"), v, n, w, false);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(v[i]->name, want[i]);
    assert_true(ebb_la_pod_score(s, F(s, "hot"), P(c, "o", "burst-unmeasured"), w, false) < 0);
    ebb_la_destroy(s);
    ebb_cache_destroy(c);
}

static void duplicates_and_empty(void **state)
{
    struct ebb_cache *c = ladder();
    struct ebb_node *v[3];
    struct ebb_la_opts o = { .now = now, .expiration = 180 };
    struct ebb_la_set *s = NULL;
    struct ebb_la_thresholds t = thr();
    (void)state;

    v[0] = N(c, "n2"), v[1] = N(c, "n1"), v[2] = N(c, "n2");
    assert_int_equal(ebb_la_create(c, v, 3, &o, &s), 0);
    assert_int_equal(s->n, 2);
    assert_string_equal(s->nodes[0].node->name, "n1");
    assert_null(ebb_la_find(s, ebb_str_find("n6", 2)));
    ebb_la_destroy(s);
    assert_int_equal(ebb_la_create(c, NULL, 0, &o, &s), 0);
    assert_int_equal(s->n, 0);
    ebb_la_destroy(s);
    ebb_la_destroy(NULL);
    assert_int_equal(ebb_la_create(NULL, v, 1, &o, &s), EBB_EINVAL);
    /* more resources than a set tracks: the fixed ones, then new names
     * while the configuration's share of the registry has room */
    for (int i = 0; i < EBB_RES_MAX && __builtin_popcountll(t.has_low) <= EBB_LA_MAXRES; i++) {
        char name[32];
        int rid;
        snprintf(name, sizeof(name), "example.com/r%d", i);
        rid = i < EBB_RES_UNREGISTERED ? i : ebb_resource_id(name);
        if (rid < 0)
            break;
        t.has_low |= 1ull << rid;
        t.low[rid] = 10;
    }
    assert_true(__builtin_popcountll(t.has_low) > EBB_LA_MAXRES);
    o.thresholds = &t;
    assert_int_equal(ebb_la_create(c, v, 1, &o, &s), EBB_EINVAL);
    ebb_cache_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classes_and_costs),
        cmocka_unit_test(usage_from_node_metric),
        cmocka_unit_test(raw_allocatable_and_metrics_server),
        cmocka_unit_test(skips),
        cmocka_unit_test(thresholds_and_classes),
        cmocka_unit_test(deviation),
        cmocka_unit_test(prod_classes),
        cmocka_unit_test(node_scores),
        cmocka_unit_test(reasons),
        cmocka_unit_test(fits_reserve_headroom),
        cmocka_unit_test(evicted_bookkeeping),
        cmocka_unit_test(pods_by_usage),
        cmocka_unit_test(pod_order_chain),
        cmocka_unit_test(duplicates_and_empty),
    };
    ebb_log_level = EBB_LOG_OFF;
    if (ebb_time_parse(NOW_TEXT, &now) != 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
