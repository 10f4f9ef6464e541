/* engine/strategy/topology.c: RemovePodsViolatingTopologySpreadConstraint's domain
 * math, step by step: distinct constraints, domains and counts, the
 * balanced check, balanceDomains (movePods, in-domain order, the fit
 * re-sort, topologyBalanceNodeFit) and the whole-set plan. Objects are
 * decoded from JSON into a real cache (the fit checks read it). */
#include "fixtures.h"

#include <cjson/cJSON.h>

#include "ebb/cache.h"
#include "ebb/decode.h"
#include "ebb/selector.h"
#include "ebb/topology.h"

#define ZONE "topology.kubernetes.io/zone"

static struct ebb_cache *cache;
static struct ebb_node *nodes[16];
static size_t nnodes;
static struct ebb_pod *pods[256];
static size_t npods;

static void put(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    struct ebb_object o;
    struct ebb_error err = { 0 };

    assert_non_null(j);
    if (ebb_decode_object(j, &o, &err) != 0)
        fail_msg("decode: %s: %s", err.field, err.msg);
    cJSON_Delete(j);
    assert_int_equal(ebb_cache_put(cache, &o), 0);
}

/* labels: JSON members ("\"a\":\"b\""); spec: JSON members or "". */
static struct ebb_node *node(const char *name, const char *labels, const char *spec, const char *cpu)
{
    char buf[2048];

    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"kubernetes.io/hostname\":\"%s\",\"kubernetes.io/os\":\"linux\"%s%s}},\"spec\":{%s},"
             "\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"16Gi\",\"pods\":\"110\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             name, name, *labels ? "," : "", labels, spec, cpu);
    put(buf);
    nodes[nnodes] = ebb_cache_node(cache, ebb_str_find(name, strlen(name)));
    assert_non_null(nodes[nnodes]);
    return nodes[nnodes++];
}

static struct ebb_node *zone_node(const char *name, const char *zone)
{
    char labels[256];
    snprintf(labels, sizeof(labels), "\"" ZONE "\":\"%s\"", zone);
    return node(name, labels, "", "4");
}

/* A ReplicaSet pod; spec: extra JSON members of spec ("" for none). */
static struct ebb_pod *pod(const char *ns, const char *name, const char *node_name, const char *labels,
                           const char *spec)
{
    char buf[4096];

    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
             "\"labels\":{%s},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
             "\"name\":\"rs\",\"uid\":\"rs-uid\",\"controller\":true}]},"
             "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"main\",\"image\":\"app:1\","
             "\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]%s%s},\"status\":{\"phase\":\"Running\"}}",
             name, ns, labels, node_name, *spec ? "," : "", spec);
    put(buf);
    pods[npods] = ebb_cache_pod(cache, ebb_str_find(ns, strlen(ns)), ebb_str_find(name, strlen(name)));
    assert_non_null(pods[npods]);
    return pods[npods++];
}

/* The spec member of one zone constraint: maxSkew, app label, extra members. */
static const char *zone_tsc(char *buf, size_t len, int skew, const char *app, const char *extra)
{
    snprintf(buf, len,
             "\"topologySpreadConstraints\":[{\"maxSkew\":%d,\"topologyKey\":\"" ZONE "\","
             "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":{\"app\":\"%s\"}}%s%s}]",
             skew, app, *extra ? "," : "", extra);
    return buf;
}

/* n pods "<prefix>-<i>" of app on node, pod 0 declaring the constraint
 * given (the rest only carry the label, as in the upstream tests). */
static void pods_on(const char *ns, const char *prefix, int first, int n, const char *node_name,
                    const char *app, const char *tsc)
{
    char name[64], labels[128];
    snprintf(labels, sizeof(labels), "\"app\":\"%s\"", app);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s-%03d", prefix, first + i);
        pod(ns, name, node_name, labels, tsc);
    }
}

static int setup(void **state)
{
    (void)state;
    assert_int_equal(ebb_cache_create(&cache), 0);
    nnodes = npods = 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ebb_cache_destroy(cache);
    cache = NULL;
    return 0;
}

static struct ebb_topology *topo(unsigned when, bool node_fit)
{
    struct ebb_topology_opts o = { .when = when, .node_fit = node_fit };
    struct ebb_topology *t = NULL;

    ebb_cache_build_indexes(cache);
    assert_int_equal(ebb_topology_create(cache, nodes, nnodes, &o, &t), 0);
    return t;
}

static size_t idx_of(const struct ebb_pod *p)
{
    for (size_t i = 0; i < npods; i++)
        if (pods[i] == p)
            return i;
    fail_msg("pod not loaded");
    return 0;
}

/* The marked pods' names joined by spaces. */
static const char *marked(const struct ebb_topology *t, bool skipped)
{
    static char out[4096];
    uint32_t idx[256];
    size_t n = ebb_topology_marked(t, skipped, idx), len = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s", i ? " " : "", pods[idx[i]]->name);
    return out;
}

static const char *domains_text(const struct ebb_topo_domains *d)
{
    static char out[1024];
    size_t len = 0;

    out[0] = '\0';
    for (size_t i = 0; i < d->n; i++)
        len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s=%u", i ? " " : "", d->v[i].value,
                                d->v[i].size);
    return out;
}

static const char *selector_text(const struct ebb_topo_constraint *c)
{
    static char buf[512];
    ebb_selector_format(c->selector, buf, sizeof(buf));
    return buf;
}

/* Load, count and balance every constraint (what ebb_topology_plan does for
 * one namespace). */
static void run_all(struct ebb_topology *t)
{
    assert_int_equal(ebb_topology_load(t, pods, npods), 0);
    for (size_t i = 0; i < ebb_topology_nconstraints(t); i++) {
        const struct ebb_topo_domains *d;
        assert_int_equal(ebb_topology_count(t, i, &d), 0);
        if (!ebb_topology_is_balanced(d, ebb_topology_constraint(t, i)->max_skew))
            assert_int_equal(ebb_topology_balance(t, i), 0);
    }
}

/* ---- constraints ----------------------------------------------------------- */

static void distinct_constraints(void **state)
{
    char a[512], b[512], c[1024];
    struct ebb_topology *t;
    const struct ebb_topo_constraint *k;
    (void)state;

    zone_node("n-a", "a");
    /* two pods, one constraint (and a soft hostname one) */
    snprintf(c, sizeof(c), "%s", zone_tsc(a, sizeof(a), 1, "web", ""));
    c[strlen(c) - 1] = '\0';
    strcat(c, ",{\"maxSkew\":1,\"topologyKey\":\"kubernetes.io/hostname\",\"whenUnsatisfiable\":"
              "\"ScheduleAnyway\",\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}]");
    pod("shop", "web-1", "n-a", "\"app\":\"web\"", c);
    pod("shop", "web-2", "n-a", "\"app\":\"web\"", c);
    /* matchLabelKeys: one per value */
    zone_tsc(b, sizeof(b), 1, "web", "\"matchLabelKeys\":[\"pod-template-hash\",\"pod-template-hash\"]");
    pod("shop", "web-3", "n-a", "\"app\":\"web\",\"pod-template-hash\":\"aaa\"", b);
    pod("shop", "web-4", "n-a", "\"app\":\"web\",\"pod-template-hash\":\"bbb\"", b);
    pod("shop", "web-5", "n-a", "\"app\":\"web\",\"pod-template-hash\":\"aaa\"", b);
    pod("shop", "web-6", "n-a", "\"app\":\"web\"", b);   /* no value: same as web-1 */
    /* Honor (default): the node selection is part of the constraint */
    snprintf(c, sizeof(c), "%s,\"nodeSelector\":{\"" ZONE "\":\"a\"}", zone_tsc(a, sizeof(a), 1, "web", ""));
    pod("shop", "web-7", "n-a", "\"app\":\"web\"", c);
    /* Ignore: it is not */
    snprintf(c, sizeof(c), "%s,\"nodeSelector\":{\"" ZONE "\":\"a\"}",
             zone_tsc(a, sizeof(a), 1, "web", "\"nodeAffinityPolicy\":\"Ignore\""));
    pod("shop", "web-8", "n-a", "\"app\":\"web\"", c);
    snprintf(c, sizeof(c), "%s,\"nodeSelector\":{\"kubernetes.io/os\":\"linux\"}",
             zone_tsc(a, sizeof(a), 1, "web", "\"nodeAffinityPolicy\":\"Ignore\""));
    pod("shop", "web-9", "n-a", "\"app\":\"web\"", c);
    /* nodeTaintsPolicy Honor: tolerations are part of it */
    snprintf(c, sizeof(c), "%s,\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]",
             zone_tsc(a, sizeof(a), 1, "web", "\"nodeTaintsPolicy\":\"Honor\""));
    pod("shop", "web-10", "n-a", "\"app\":\"web\"", c);
    snprintf(c, sizeof(c), "%s,\"tolerations\":[{\"key\":\"spot\",\"operator\":\"Exists\"}]",
             zone_tsc(a, sizeof(a), 1, "web", "\"nodeTaintsPolicy\":\"Honor\""));
    pod("shop", "web-11", "n-a", "\"app\":\"web\"", c);
    /* maxSkew differs */
    pod("shop", "web-12", "n-a", "\"app\":\"web\"", zone_tsc(a, sizeof(a), 2, "web", ""));
    /* a nil labelSelector stays nil: matchLabelKeys are not merged */
    pod("shop", "web-13", "n-a", "\"app\":\"web\",\"pod-template-hash\":\"aaa\"",
        "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"" ZONE "\","
        "\"whenUnsatisfiable\":\"DoNotSchedule\",\"matchLabelKeys\":[\"pod-template-hash\"]}]");

    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    assert_int_equal(ebb_topology_load(t, pods, npods), 0);
    /* web-1 (web-2, web-6), web-3 (web-5), web-4, web-7, web-8 (web-9),
     * web-10, web-11, web-12, web-13 */
    assert_int_equal(ebb_topology_nconstraints(t), 9);
    k = ebb_topology_constraint(t, 0);
    assert_ptr_equal(k->pod, pods[0]);
    assert_string_equal(k->topology_key, ZONE);
    assert_int_equal(k->max_skew, 1);
    assert_int_equal(k->affinity_policy, EBB_POLICY_HONOR);
    assert_int_equal(k->taints_policy, EBB_POLICY_IGNORE);
    assert_string_equal(selector_text(k), "app=web");
    k = ebb_topology_constraint(t, 1);
    assert_ptr_equal(k->pod, pods[2]);
    assert_string_equal(selector_text(k), "app=web,pod-template-hash=aaa");
    assert_ptr_equal(ebb_topology_constraint(t, 2)->pod, pods[3]);
    assert_string_equal(selector_text(ebb_topology_constraint(t, 2)), "app=web,pod-template-hash=bbb");
    assert_ptr_equal(ebb_topology_constraint(t, 3)->pod, pods[6]);
    assert_ptr_equal(ebb_topology_constraint(t, 4)->pod, pods[7]);
    assert_int_equal(ebb_topology_constraint(t, 4)->affinity_policy, EBB_POLICY_IGNORE);
    assert_ptr_equal(ebb_topology_constraint(t, 5)->pod, pods[9]);
    assert_int_equal(ebb_topology_constraint(t, 5)->taints_policy, EBB_POLICY_HONOR);
    assert_ptr_equal(ebb_topology_constraint(t, 6)->pod, pods[10]);
    assert_int_equal(ebb_topology_constraint(t, 7)->max_skew, 2);
    assert_ptr_equal(ebb_topology_constraint(t, 8)->pod, pods[12]);
    assert_true(ebb_topology_constraint(t, 8)->selector->flags & EBB_SEL_NOTHING);
    assert_null(ebb_topology_constraint(t, 9));

    /* the soft one only when asked for */
    ebb_topology_destroy(t);
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE | EBB_TOPO_SCHEDULE_ANYWAY, true);
    assert_int_equal(ebb_topology_load(t, pods, npods), 0);
    assert_int_equal(ebb_topology_nconstraints(t), 10);
    assert_string_equal(ebb_topology_constraint(t, 1)->topology_key, "kubernetes.io/hostname");
    assert_int_equal(ebb_topology_constraint(t, 1)->when, EBB_TSC_SCHEDULE_ANYWAY);
    ebb_topology_destroy(t);
    t = topo(EBB_TOPO_SCHEDULE_ANYWAY, true);
    assert_int_equal(ebb_topology_load(t, pods, npods), 0);
    assert_int_equal(ebb_topology_nconstraints(t), 1);
    ebb_topology_destroy(t);
}

/* ---- domains ----------------------------------------------------------------- */

static void domains_and_counts(void **state)
{
    char a[512], c[1024];
    struct ebb_topology *t;
    const struct ebb_topo_domains *d;
    (void)state;

    zone_node("n-a1", "a");
    node("n-a2", "\"" ZONE "\":\"a\"", "\"taints\":[{\"key\":\"gpu\",\"effect\":\"NoSchedule\"}]", "4");
    zone_node("n-b1", "b");
    node("n-c1", "\"" ZONE "\":\"c\"", "\"taints\":[{\"key\":\"gpu\",\"effect\":\"NoExecute\"}]", "4");
    zone_node("n-d1", "d");
    node("n-x", "", "", "4");                    /* no zone label */
    zone_node("n-out", "e");                     /* not in the set */
    nnodes--;

    /* taints Honor, no toleration: zones a (n-a1) and b, d pre-created; c
     * only through its pod (upstream appends to the map) */
    snprintf(c, sizeof(c), "%s", zone_tsc(a, sizeof(a), 1, "api", "\"nodeTaintsPolicy\":\"Honor\""));
    pod("ns", "api-1", "n-a1", "\"app\":\"api\"", c);
    pod("ns", "api-2", "n-a2", "\"app\":\"api\"", "");
    pod("ns", "api-3", "n-c1", "\"app\":\"api\"", "");
    pod("ns", "api-4", "n-x", "\"app\":\"api\"", "");        /* no key */
    pod("ns", "api-5", "n-out", "\"app\":\"api\"", "");      /* node not in the set */
    pod("ns", "api-6", "n-b1", "\"app\":\"api\"", "");
    pod("ns", "other-1", "n-b1", "\"app\":\"other\"", "");   /* selector does not match */
    put("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"api-7\",\"namespace\":\"ns\","
        "\"deletionTimestamp\":\"2026-11-22T11:59:00Z\",\"labels\":{\"app\":\"api\"}},"
        "\"spec\":{\"nodeName\":\"n-b1\",\"containers\":[{\"name\":\"m\",\"image\":\"i\"}]},"
        "\"status\":{\"phase\":\"Running\"}}");
    pods[npods++] = ebb_cache_pod(cache, ebb_str_find("ns", 2), ebb_str_find("api-7", 5));
    /* the same pods under taints Ignore (a second constraint: the index is used) */
    pod("ns", "api-8", "n-d1", "\"app\":\"api\"", zone_tsc(a, sizeof(a), 1, "api", ""));

    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    assert_int_equal(ebb_topology_load(t, pods, npods), 0);
    assert_int_equal(ebb_topology_nconstraints(t), 2);
    assert_int_equal(ebb_topology_count(t, 0, &d), 0);
    assert_string_equal(domains_text(d), "a=2 b=1 c=1 d=1");
    assert_int_equal(d->sum, 5);
    /* pods in listing order */
    assert_int_equal(d->v[0].npods, 2);
    assert_int_equal(d->v[0].pods[0], idx_of(pods[0]));
    assert_int_equal(d->v[0].pods[1], idx_of(pods[1]));
    assert_false(ebb_topology_is_balanced(d, 0));
    assert_true(ebb_topology_is_balanced(d, 1));

    assert_int_equal(ebb_topology_count(t, 1, &d), 0);
    assert_string_equal(domains_text(d), "a=2 b=1 c=1 d=1");
    ebb_topology_destroy(t);

    /* a selector without an In requirement scans every pod */
    npods = 0;
    pod("ns2", "w-1", "n-a1", "\"tier\":\"web\"",
        "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"" ZONE "\",\"whenUnsatisfiable\":"
        "\"DoNotSchedule\",\"labelSelector\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\"}]}},"
        "{\"maxSkew\":2,\"topologyKey\":\"" ZONE "\",\"whenUnsatisfiable\":\"DoNotSchedule\","
        "\"labelSelector\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"web\",\"db\"]}]}}]");
    pod("ns2", "w-2", "n-b1", "\"tier\":\"db\"", "");
    pod("ns2", "w-3", "n-b1", "\"tier\":\"cache\"", "");
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    assert_int_equal(ebb_topology_load(t, pods, npods), 0);
    assert_int_equal(ebb_topology_count(t, 0, &d), 0);
    assert_string_equal(domains_text(d), "a=1 b=2 c=0 d=0");
    assert_int_equal(ebb_topology_count(t, 1, &d), 0);
    assert_string_equal(domains_text(d), "a=1 b=1 c=0 d=0");
    ebb_topology_destroy(t);
}

static void balanced_check(void **state)
{
    struct ebb_topo_domain v[3] = { { .size = 3 }, { .size = 1 }, { .size = 2 } };
    struct ebb_topo_domains d = { .n = 3, .v = v };
    (void)state;

    assert_true(ebb_topology_is_balanced(NULL, 0));
    assert_false(ebb_topology_is_balanced(&d, 1));
    assert_true(ebb_topology_is_balanced(&d, 2));
    d.n = 0;
    assert_true(ebb_topology_is_balanced(&d, 0));
}

/* ---- balanceDomains ------------------------------------------------------------- */

static void moves_eight_seven_zero(void **state)
{
    char a[512];
    struct ebb_topology *t;
    (void)state;

    zone_node("n1", "zoneA");
    zone_node("n2", "zoneB");
    zone_node("n3", "zoneC");
    pods_on("ns1", "pod", 0, 1, "n1", "foo", zone_tsc(a, sizeof(a), 1, "foo", ""));
    pods_on("ns1", "pod", 1, 7, "n1", "foo", "");
    pods_on("ns1", "pod", 8, 7, "n2", "foo", "");
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    run_all(t);
    /* [c0 b7 a8], ideal 5: min(3, 5, 4) = 3 from a, then min(2, 2, 2) from b */
    assert_string_equal(marked(t, false), "pod-005 pod-006 pod-007 pod-013 pod-014");
    assert_string_equal(marked(t, true), "");
    {
        ebb_str key, value;
        int32_t skew;
        assert_true(ebb_topology_mark_reason(t, 5, &key, &value, &skew));
        assert_string_equal(key, ZONE);
        assert_string_equal(value, "zoneA");
        assert_int_equal(skew, 1);
        assert_true(ebb_topology_mark_reason(t, 14, NULL, &value, NULL));
        assert_string_equal(value, "zoneB");
        assert_false(ebb_topology_mark_reason(t, 4, NULL, NULL, NULL));
    }
    ebb_topology_destroy(t);
}

static void moves_by_the_formula(void **state)
{
    char a[512];
    struct ebb_topology *t;
    uint32_t idx[256];
    (void)state;

    /* [0, 1, 100] -> 66 to get [34, 33, 34] */
    node("n1", "\"" ZONE "\":\"zoneA\"", "", "40");
    node("n2", "\"" ZONE "\":\"zoneB\"", "", "40");
    node("n3", "\"" ZONE "\":\"zoneC\"", "", "40");
    pods_on("ns1", "pod", 0, 1, "n2", "foo", zone_tsc(a, sizeof(a), 1, "foo", ""));
    pods_on("ns1", "pod", 1, 100, "n3", "foo", "");
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    run_all(t);
    assert_int_equal(ebb_topology_marked(t, false, idx), 66);
    ebb_topology_destroy(t);

    /* [0, 1, 3, 5] -> 3 to get [2, 2, 3, 2]; maxSkew 2 on [2, 6] -> 1 */
    npods = 0;
    zone_node("n4", "zoneD");
    pods_on("ns2", "pod", 0, 1, "n2", "foo", zone_tsc(a, sizeof(a), 1, "foo", ""));
    pods_on("ns2", "pod", 1, 3, "n3", "foo", "");
    pods_on("ns2", "pod", 4, 5, "n4", "foo", "");
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    run_all(t);
    assert_string_equal(marked(t, false), "pod-006 pod-007 pod-008");
    ebb_topology_destroy(t);

    npods = 0;
    nnodes = 2;
    pods_on("ns3", "pod", 0, 2, "n1", "foo", zone_tsc(a, sizeof(a), 2, "foo", ""));
    pods_on("ns3", "pod", 2, 6, "n2", "foo", "");
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    run_all(t);
    assert_string_equal(marked(t, false), "pod-007");
    ebb_topology_destroy(t);
}

static bool not_the_bare_one(const struct ebb_pod *p, void *ud)
{
    (void)ud;
    return strcmp(p->name, "e-bare") != 0;
}

static void in_domain_order(void **state)
{
    char a[512], c[1024];
    struct ebb_topology_opts o = { .when = EBB_TOPO_DO_NOT_SCHEDULE, .node_fit = true,
                                   .evictable = not_the_bare_one };
    struct ebb_topology *t;
    const struct ebb_topo_domains *d;
    (void)state;

    zone_node("n1", "zoneA");
    zone_node("n2", "zoneB");
    /* listing order below; sorted: the non-evictable one, pinned by
     * priority, free with no priority first, free by priority */
    snprintf(c, sizeof(c), "%s,\"priority\":10", zone_tsc(a, sizeof(a), 1, "foo", ""));
    pod("ns", "a-free-10", "n1", "\"app\":\"foo\"", c);
    pod("ns", "b-free-20", "n1", "\"app\":\"foo\"", "\"priority\":20");
    pod("ns", "c-sel-5", "n1", "\"app\":\"foo\"", "\"priority\":5,\"nodeSelector\":{\"kubernetes.io/os\":\"linux\"}");
    pod("ns", "d-free-nil", "n1", "\"app\":\"foo\"", "");
    pod("ns", "e-bare", "n1", "\"app\":\"foo\"", "\"priority\":1");
    pod("ns", "f-aff-1", "n1", "\"app\":\"foo\"",
        "\"priority\":1,\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":"
        "[{\"weight\":1,\"preference\":{\"matchExpressions\":[{\"key\":\"kubernetes.io/os\",\"operator\":\"In\","
        "\"values\":[\"linux\"]}]}}]}}");
    pod("ns", "g-free-20", "n1", "\"app\":\"foo\"", "\"priority\":20");
    /* 7/4, ideal 5.5: one moves (min(2, 2, ceil(2/2))) */
    pods_on("ns", "z", 0, 4, "n2", "foo", "");
    ebb_cache_build_indexes(cache);
    assert_int_equal(ebb_topology_create(cache, nodes, nnodes, &o, &t), 0);
    assert_int_equal(ebb_topology_load(t, pods, npods), 0);
    assert_int_equal(ebb_topology_count(t, 0, &d), 0);
    assert_int_equal(ebb_topology_balance(t, 0), 0);
    /* the highest-priority free pod is the tail; equal priorities keep the
     * listing order */
    assert_string_equal(marked(t, false), "g-free-20");
    assert_string_equal(domains_text(d), "zoneB=5 zoneA=6");
    {
        static const char *const want[] = { "e-bare", "f-aff-1", "c-sel-5", "d-free-nil", "a-free-10",
                                             "b-free-20" };
        const struct ebb_topo_domain *za = &d->v[1];
        assert_int_equal(za->npods, 6);
        for (size_t i = 0; i < 6; i++)
            assert_string_equal(pods[za->pods[i]]->name, want[i]);
    }
    ebb_topology_destroy(t);
}

static void fit_resort_and_node_fit(void **state)
{
    char a[512], tol[1024];
    struct ebb_topology *t;
    (void)state;

    zone_node("n1", "zoneA");
    node("n2", "\"" ZONE "\":\"zoneB\"", "\"taints\":[{\"key\":\"spot\",\"effect\":\"NoSchedule\"}]", "4");
    /* 3/0, ideal 1.5: one moves; only the tolerating pods fit zoneB */
    snprintf(tol, sizeof(tol), "%s,\"tolerations\":[{\"key\":\"spot\",\"operator\":\"Exists\"}]",
             zone_tsc(a, sizeof(a), 1, "foo", ""));
    pod("ns", "p-1", "n1", "\"app\":\"foo\"", tol);
    pod("ns", "p-2", "n1", "\"app\":\"foo\"", tol);
    pod("ns", "p-3", "n1", "\"app\":\"foo\"", "");
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    run_all(t);
    /* re-sorted: p-3 (fits nowhere below) first, p-2 is the tail */
    assert_string_equal(marked(t, false), "p-2");
    assert_string_equal(marked(t, true), "");
    ebb_topology_destroy(t);

    /* nothing fits: the pod taken is kept, still counted as moved */
    npods = 0;
    pods_on("ns2", "q", 0, 1, "n1", "bar", zone_tsc(a, sizeof(a), 1, "bar", ""));
    pods_on("ns2", "q", 1, 3, "n1", "bar", "");
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    run_all(t);
    /* 4/0, ideal 2: two move, neither fits */
    assert_string_equal(marked(t, false), "");
    assert_string_equal(marked(t, true), "q-002 q-003");
    ebb_topology_destroy(t);
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, false);
    run_all(t);
    assert_string_equal(marked(t, false), "q-002 q-003");
    assert_string_equal(marked(t, true), "");
    ebb_topology_destroy(t);
}

/* ---- the whole set ---------------------------------------------------------------- */

static void plan_by_namespace_then_name(void **state)
{
    char a[512];
    struct ebb_topology *t;
    struct ebb_topology_result r;
    (void)state;

    zone_node("n1", "zoneA");
    zone_node("n2", "zoneB");
    /* listed: zeta before alpha, names out of order */
    pods_on("zeta", "w", 5, 1, "n1", "web", zone_tsc(a, sizeof(a), 1, "web", ""));
    pods_on("zeta", "w", 1, 3, "n1", "web", "");
    pods_on("alpha", "v", 9, 1, "n1", "api", zone_tsc(a, sizeof(a), 1, "api", ""));
    pods_on("alpha", "v", 0, 2, "n1", "api", "");
    pods_on("beta", "u", 0, 2, "n1", "db", "");   /* no constraint */
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    assert_int_equal(ebb_topology_plan(t, pods, npods, &r), 0);
    /* zeta 4/0 -> its tail of 2 (w-002, w-003); alpha 3/0 -> min(2, 2, 1) = 1 (v-001) */
    assert_int_equal(r.nevict, 3);
    assert_string_equal(r.evict[0]->name, "v-001");
    assert_string_equal(r.evict[1]->name, "w-002");
    assert_string_equal(r.evict[2]->name, "w-003");
    assert_string_equal(r.values[0], "zoneA");
    assert_string_equal(r.keys[1], ZONE);
    assert_int_equal(r.max_skews[2], 1);
    assert_int_equal(r.nskipped, 0);
    ebb_topology_result_free(&r);
    ebb_topology_result_free(&r);
    /* the same object runs again (one per cycle) */
    assert_int_equal(ebb_topology_plan(t, pods, npods, &r), 0);
    assert_int_equal(r.nevict, 3);
    ebb_topology_result_free(&r);
    assert_int_equal(ebb_topology_plan(t, pods, 0, &r), 0);
    assert_int_equal(r.nevict, 0);
    ebb_topology_destroy(t);
}

/* Constraints of the same shape share what is kept about the nodes (which
 * pass the inclusion policies, which are below the average), but only for
 * the same domains below the average: here zoneB for one namespace, zoneA
 * for the other. Were the first list used for the second, its pods (on
 * zoneB and zoneC) would fit nowhere below and be skipped. */
static void kept_node_lists_follow_the_domains(void **state)
{
    char a[512], spec[1024];
    struct ebb_topology *t;
    struct ebb_topology_result r;
    (void)state;

    zone_node("n1", "zoneA");
    zone_node("n2", "zoneB");
    zone_node("n3", "zoneC");
    /* nodeSelector under the default Honor: nodes are checked, and kept */
    snprintf(spec, sizeof(spec), "%s,\"nodeSelector\":{\"kubernetes.io/os\":\"linux\"}",
             zone_tsc(a, sizeof(a), 1, "web", ""));
    /* one: 4/0/2, ideal 2: two leave zoneA for zoneB */
    pods_on("one", "a", 0, 1, "n1", "web", spec);
    pods_on("one", "a", 1, 3, "n1", "web", "");
    pods_on("one", "c", 0, 2, "n3", "web", "");
    /* two: 0/3/3, ideal 2: one leaves zoneC, then one zoneB, for zoneA */
    pods_on("two", "y", 0, 1, "n2", "web", spec);
    pods_on("two", "y", 1, 2, "n2", "web", "");
    pods_on("two", "z", 0, 3, "n3", "web", "");
    t = topo(EBB_TOPO_DO_NOT_SCHEDULE, true);
    assert_int_equal(ebb_topology_plan(t, pods, npods, &r), 0);
    assert_int_equal(r.nskipped, 0);
    assert_int_equal(r.nevict, 4);
    assert_string_equal(r.evict[0]->name, "a-002");
    assert_string_equal(r.evict[1]->name, "a-003");
    assert_string_equal(r.evict[2]->name, "y-002");
    assert_string_equal(r.evict[3]->name, "z-002");
    assert_string_equal(r.values[2], "zoneB");
    assert_string_equal(r.values[3], "zoneC");
    ebb_topology_result_free(&r);
    ebb_topology_destroy(t);
}

static void misuse_and_stop(void **state)
{
    char a[512];
    struct ebb_topology *t;
    struct ebb_topology_opts o = { .when = EBB_TOPO_DO_NOT_SCHEDULE };
    const struct ebb_topo_domains *d;
    atomic_int stop = 0;
    (void)state;

    assert_int_equal(ebb_topology_create(NULL, nodes, 0, &o, &t), EBB_EINVAL);
    ebb_topology_destroy(NULL);
    zone_node("n1", "zoneA");
    zone_node("n2", "zoneB");
    pods_on("ns", "p", 0, 1, "n1", "foo", zone_tsc(a, sizeof(a), 1, "foo", ""));
    pods_on("ns", "p", 1, 3, "n1", "foo", "");
    o.stop = &stop;
    ebb_cache_build_indexes(cache);
    assert_int_equal(ebb_topology_create(cache, nodes, nnodes, &o, &t), 0);
    assert_int_equal(ebb_topology_load(t, pods, npods), 0);
    assert_int_equal(ebb_topology_balance(t, 0), EBB_ESTATE);   /* not counted */
    assert_int_equal(ebb_topology_count(t, 1, &d), EBB_EINVAL);
    assert_int_equal(ebb_topology_count(t, 0, &d), 0);
    stop = 1;
    assert_int_equal(ebb_topology_balance(t, 0), EBB_ELIMIT);
    assert_string_equal(marked(t, false), "");
    stop = 0;
    assert_int_equal(ebb_topology_balance(t, 0), EBB_ESTATE);   /* spent */
    assert_int_equal(ebb_topology_count(t, 0, &d), 0);
    assert_int_equal(ebb_topology_balance(t, 0), 0);
    assert_string_equal(marked(t, false), "p-002 p-003");
    ebb_topology_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(distinct_constraints, setup, teardown),
        cmocka_unit_test_setup_teardown(domains_and_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(balanced_check, setup, teardown),
        cmocka_unit_test_setup_teardown(moves_eight_seven_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(moves_by_the_formula, setup, teardown),
        cmocka_unit_test_setup_teardown(in_domain_order, setup, teardown),
        cmocka_unit_test_setup_teardown(fit_resort_and_node_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(plan_by_namespace_then_name, setup, teardown),
        cmocka_unit_test_setup_teardown(kept_node_lists_follow_the_domains, setup, teardown),
        cmocka_unit_test_setup_teardown(misuse_and_stop, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
