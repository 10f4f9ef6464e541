/* engine/sched*.c: the kube-scheduler model, filter by filter and score by
 * score, on the worked examples of SCHEDULER.md (E1..E25) and more: raw and
 * normalized scores, failure reasons, the FailedScheduling message,
 * numFeasibleNodesToFind, the rotation, ties, binding and forgetting pods. */
#include "fixtures.h"

#include <cjson/cJSON.h>

#include "ebb/decode.h"
#include "ebb/sched.h"
#include "sched/sched_int.h"

#define Gi "Gi"
#define ZONE "topology.kubernetes.io/zone"

static struct ebb_cache *cache;
static struct ebb_sched *sched;
static struct ebb_sched_config *config;
static int version;
static struct ebb_pod *incoming[16];
static size_t nincoming;
static struct ebb_sched_node_eval *ev;
static size_t nev;

static int setup(void **state)
{
    (void)state;
    assert_int_equal(ebb_cache_create(&cache), 0);
    version = EBB_SCHED_LATEST;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(ev);
    ev = NULL;
    for (size_t i = 0; i < nincoming; i++)
        ebb_pod_free(incoming[i]);
    nincoming = 0;
    ebb_sched_destroy(sched);
    sched = NULL;
    ebb_cache_destroy(cache);
    cache = NULL;
    ebb_sched_config_free(config);
    config = NULL;
    return 0;
}

static void put(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    struct ebb_object o;
    struct ebb_error err = { 0 };

    if (j == NULL)
        fail_msg("bad JSON: %s", json);
    if (ebb_decode_object(j, &o, &err) != 0)
        fail_msg("decode: %s: %s", err.field, err.msg);
    cJSON_Delete(j);
    assert_int_equal(ebb_cache_put(cache, &o), 0);
}

/* A node: labels and spec/status members are JSON text ("" for none). */
static void node(const char *name, const char *cpu, const char *mem, const char *labels,
                 const char *spec, const char *status)
{
    char buf[8192];

    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"kubernetes.io/hostname\":\"%s\"%s%s}},\"spec\":{%s},\"status\":{\"allocatable\":"
             "{\"cpu\":\"%s\",\"memory\":\"%s\",\"pods\":\"110\"}%s%s}}",
             name, name, *labels ? "," : "", labels, spec, cpu, mem, *status ? "," : "", status);
    put(buf);
}

/* Pod JSON: containers is a JSON array; extra: more spec members; meta:
 * more metadata members. */
static void pod_json(char *buf, size_t len, const char *name, const char *node_name,
                     const char *labels, const char *containers, const char *extra, const char *meta)
{
    char nn[256] = "";

    if (node_name != NULL)
        snprintf(nn, sizeof(nn), "\"nodeName\":\"%s\",", node_name);
    snprintf(buf, len,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
             "\"default\",\"uid\":\"uid-%s\",\"labels\":{%s}%s%s},\"spec\":{%s\"containers\":%s%s%s},"
             "\"status\":{\"phase\":\"%s\"}}",
             name, name, labels, *meta ? "," : "", meta, nn, containers, *extra ? "," : "", extra,
             node_name ? "Running" : "Pending");
}

/* A container asking cpu and memory ("" leaves the request out). */
static const char *req(char *buf, size_t len, const char *cpu, const char *mem)
{
    char r[256] = "";

    if (*cpu && *mem)
        snprintf(r, sizeof(r), "\"cpu\":\"%s\",\"memory\":\"%s\"", cpu, mem);
    else if (*cpu)
        snprintf(r, sizeof(r), "\"cpu\":\"%s\"", cpu);
    else if (*mem)
        snprintf(r, sizeof(r), "\"memory\":\"%s\"", mem);
    snprintf(buf, len, "[{\"name\":\"main\",\"image\":\"repo/main:1\",\"resources\":{\"requests\":{%s}}}]", r);
    return buf;
}

static void bound(const char *name, const char *node_name, const char *labels, const char *cpu,
                  const char *mem, const char *extra)
{
    char c[512], buf[8192];
    pod_json(buf, sizeof(buf), name, node_name, labels, req(c, sizeof(c), cpu, mem), extra, "");
    put(buf);
}

static struct ebb_pod *decode(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    struct ebb_pod *p = NULL;
    struct ebb_error err = { 0 };

    if (j == NULL)
        fail_msg("bad JSON: %s", json);
    if (ebb_decode_pod(j, &p, &err) != 0)
        fail_msg("decode: %s: %s", err.field, err.msg);
    cJSON_Delete(j);
    assert_true(nincoming < 16);
    incoming[nincoming++] = p;
    return p;
}

/* The cache's pod default/name. */
static struct ebb_pod *cached(const char *name)
{
    struct ebb_pod *p = ebb_cache_pod(cache, ebb_str_find("default", 7), ebb_str_find(name, strlen(name)));

    assert_non_null(p);
    return p;
}

static struct ebb_pod *pending(const char *labels, const char *cpu, const char *mem,
                               const char *extra, const char *meta)
{
    char c[512], buf[8192];
    static int n;
    char name[32];

    snprintf(name, sizeof(name), "incoming-%d", n++);
    pod_json(buf, sizeof(buf), name, NULL, labels, req(c, sizeof(c), cpu, mem), extra, meta);
    return decode(buf);
}

static void start(void)
{
    struct ebb_sched_opts o = { .config = config, .version = version };

    ebb_cache_build_indexes(cache);
    assert_int_equal(ebb_sched_create(cache, &o, &sched), 0);
}

/* Nodes a, b and c: 4 cpu, 8Gi, nothing else. */
static void three_nodes(void)
{
    node("a", "4", "8Gi", "", "", "");
    node("b", "4", "8Gi", "", "", "");
    node("c", "4", "8Gi", "", "", "");
}

/* A new scheduler over the cache as it is now, following `v`. */
static void restart(int v)
{
    ebb_sched_destroy(sched);
    sched = NULL;
    version = v;
    start();
}

static void use_config(const char *yaml)
{
    struct ebb_error err = { 0 };

    if (ebb_sched_config_parse(yaml, strlen(yaml), "sched.yaml", &config, &err) != 0)
        fail_msg("config: %s:%d: %s: %s", err.file, err.line, err.field, err.msg);
}

static void explain(const struct ebb_pod *p)
{
    free(ev);
    ev = NULL;
    assert_int_equal(ebb_sched_explain(sched, p, &ev, &nev), 0);
}

static const struct ebb_sched_node_eval *at(const char *name)
{
    for (size_t i = 0; i < nev; i++)
        if (strcmp(ev[i].node->name, name) == 0)
            return &ev[i];
    fail_msg("no node %s", name);
    return NULL;
}

#define NORM(node, plugin) (at(node)->norm[EBB_SP_##plugin])
#define RAW(node, plugin) (at(node)->raw[EBB_SP_##plugin])

/* ---- NodeResourcesFit scores: E1..E6 ---------------------------------------- */

static void e1_nodes(void)
{
    node("a", "4000m", "8Gi", "", "", "");
    node("b", "4000m", "8Gi", "", "", "");
    bound("pa", "a", "", "1000m", "2Gi", "");
    bound("pb", "b", "", "3000m", "4Gi", "");
}

static void test_e1_least_allocated(void **state)
{
    (void)state;
    e1_nodes();
    start();
    explain(pending("", "500m", "1Gi", "", ""));
    assert_int_equal(NORM("a", NODE_RESOURCES_FIT), 62);
    assert_int_equal(NORM("b", NODE_RESOURCES_FIT), 24);
}

static void test_e2_nonzero_defaults(void **state)
{
    (void)state;
    node("a", "2000m", "4Gi", "", "", "");
    node("b", "2000m", "4Gi", "", "", "");
    bound("pa1", "a", "", "", "", "");
    bound("pa2", "a", "", "", "", "");
    bound("pb", "b", "", "1000m", "1Gi", "");
    start();
    const struct ebb_pod *p = pending("", "", "", "", "");
    assert_int_equal(p->nz_cpu, 100);
    assert_int_equal(p->nz_mem, 200ll << 20);
    explain(p);
    assert_int_equal(NORM("a", NODE_RESOURCES_FIT), 85);
    assert_int_equal(NORM("b", NODE_RESOURCES_FIT), 57);
    /* the filter sees requests of 0: both fit */
    assert_true(at("a")->feasible && at("b")->feasible);
}

static void test_e3_most_allocated(void **state)
{
    (void)state;
    use_config("apiVersion: kubescheduler.config.k8s.io/v1\n"
               "kind: KubeSchedulerConfiguration\n"
               "profiles:\n"
               "- pluginConfig:\n"
               "  - name: NodeResourcesFit\n"
               "    args: {scoringStrategy: {type: MostAllocated}}\n");
    e1_nodes();
    start();
    explain(pending("", "500m", "1Gi", "", ""));
    assert_int_equal(NORM("a", NODE_RESOURCES_FIT), 37);
    assert_int_equal(NORM("b", NODE_RESOURCES_FIT), 74);
}

static void rtcr(const char *shape, const char *resources)
{
    char yaml[1024];

    snprintf(yaml, sizeof(yaml),
             "apiVersion: kubescheduler.config.k8s.io/v1\n"
             "kind: KubeSchedulerConfiguration\n"
             "profiles:\n"
             "- schedulerName: default-scheduler\n"
             "  pluginConfig:\n"
             "  - name: NodeResourcesFit\n"
             "    args:\n"
             "      scoringStrategy:\n"
             "        type: RequestedToCapacityRatio\n"
             "        resources: %s\n"
             "        requestedToCapacityRatio: {shape: %s}\n",
             resources, shape);
    use_config(yaml);
}

static void test_e4_e5_requested_to_capacity_ratio(void **state)
{
    (void)state;
    rtcr("[{utilization: 0, score: 0}, {utilization: 100, score: 10}]",
         "[{name: cpu, weight: 1}, {name: memory, weight: 1}]");
    e1_nodes();
    start();
    explain(pending("", "500m", "1Gi", "", ""));
    assert_int_equal(NORM("a", NODE_RESOURCES_FIT), 37);
    assert_int_equal(NORM("b", NODE_RESOURCES_FIT), 75);   /* round(74.5) */
    ebb_sched_destroy(sched);
    sched = NULL;
    ebb_sched_config_free(config);
    config = NULL;
    rtcr("[{utilization: 0, score: 10}, {utilization: 100, score: 0}]",
         "[{name: cpu, weight: 1}, {name: memory, weight: 1}]");
    start();
    explain(pending("", "500m", "1Gi", "", ""));
    assert_int_equal(NORM("a", NODE_RESOURCES_FIT), 63);
    assert_int_equal(NORM("b", NODE_RESOURCES_FIT), 26);   /* round(25.5) */
}

static void test_e6_rtcr_excludes_zero_scores(void **state)
{
    (void)state;
    rtcr("[{utilization: 0, score: 10}, {utilization: 100, score: 0}]",
         "[{name: cpu, weight: 3}, {name: memory, weight: 1}]");
    node("x", "4000m", "8Gi", "", "", "");
    node("y", "4000m", "8Gi", "", "", "");
    bound("px", "x", "", "3000m", "1Gi", "");
    bound("py", "y", "", "2600m", "1Gi", "");
    start();
    explain(pending("", "1000m", "1Gi", "", ""));
    assert_int_equal(NORM("x", NODE_RESOURCES_FIT), 75);   /* cpu at 100%: left out */
    assert_int_equal(NORM("y", NODE_RESOURCES_FIT), 26);   /* round(105 / 4) */
}

/* ---- BalancedAllocation: E7..E9 ------------------------------------------------ */

static void test_e7_balanced(void **state)
{
    (void)state;
    e1_nodes();
    start();
    explain(pending("", "500m", "1Gi", "", ""));
    assert_int_equal(NORM("a", BALANCED_ALLOCATION), 100);
    assert_int_equal(NORM("b", BALANCED_ALLOCATION), 87);
}

static void test_e8_balanced_three_resources(void **state)
{
    char c[512], buf[4096];

    (void)state;
    use_config("apiVersion: kubescheduler.config.k8s.io/v1\n"
               "kind: KubeSchedulerConfiguration\n"
               "profiles:\n"
               "- pluginConfig:\n"
               "  - name: NodeResourcesBalancedAllocation\n"
               "    args: {resources: [{name: cpu}, {name: memory}, {name: nvidia.com/gpu}]}\n");
    node("g", "4000m", "8Gi", "", "", "");
    /* allocatable with 4 GPUs */
    put("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu\",\"labels\":"
        "{\"kubernetes.io/hostname\":\"gpu\"}},\"status\":{\"allocatable\":{\"cpu\":\"4000m\","
        "\"memory\":\"8Gi\",\"nvidia.com/gpu\":\"4\",\"pods\":\"110\"}}}");
    start();
    snprintf(c, sizeof(c), "[{\"name\":\"main\",\"image\":\"x\",\"resources\":{\"requests\":"
                           "{\"cpu\":\"2000m\",\"memory\":\"2Gi\",\"nvidia.com/gpu\":\"1\"}}}]");
    pod_json(buf, sizeof(buf), "gpu-pod", NULL, "", c, "", "");
    explain(decode(buf));
    assert_int_equal(NORM("gpu", BALANCED_ALLOCATION), 88);
    assert_false(at("g")->feasible);   /* no GPU there */
    assert_string_equal(at("g")->reasons, "Insufficient nvidia.com/gpu");
    explain(pending("", "2000m", "2Gi", "", ""));
    assert_int_equal(NORM("gpu", BALANCED_ALLOCATION), 87);   /* no GPU asked: skipped */
}

static void test_e9_best_effort(void **state)
{
    (void)state;
    node("a", "2000m", "4Gi", "", "", "");
    node("b", "2000m", "4Gi", "", "", "");
    bound("pa1", "a", "", "", "", "");
    bound("pa2", "a", "", "", "", "");
    bound("pb", "b", "", "1000m", "1Gi", "");
    start();
    explain(pending("", "", "", "", ""));
    assert_int_equal(NORM("a", BALANCED_ALLOCATION), 0);   /* newest: Skip */
    assert_int_equal(NORM("b", BALANCED_ALLOCATION), 0);
    assert_int_equal(at("a")->total - at("b")->total, (85 - 57) * 1);
    restart(EBB_SCHED_V1_25);
    explain(pending("", "", "", "", ""));
    assert_int_equal(NORM("a", BALANCED_ALLOCATION), 100);
    assert_int_equal(NORM("b", BALANCED_ALLOCATION), 87);
}

/* ---- ImageLocality: E10 ------------------------------------------------------- */

static void test_e10_image_locality(void **state)
{
    const char *img = "\"images\":[{\"names\":[\"repo/app:latest\",\"repo/app@sha256:0\"],"
                      "\"sizeBytes\":524288000},{\"names\":[\"repo/side:2\"],\"sizeBytes\":314572800},"
                      "{\"names\":[\"repo/tiny:1\"],\"sizeBytes\":20971520}]";
    const char *side = "\"images\":[{\"names\":[\"repo/side:2\"],\"sizeBytes\":314572800}]";
    char buf[4096];

    (void)state;
    node("n1", "4", "8Gi", "", "", img);
    node("n2", "4", "8Gi", "", "", img);
    node("n3", "4", "8Gi", "", "", side);
    node("n4", "4", "8Gi", "", "", side);
    start();
    pod_json(buf, sizeof(buf), "one", NULL, "", "[{\"name\":\"a\",\"image\":\"repo/app\"}]", "", "");
    explain(decode(buf));
    assert_int_equal(NORM("n1", IMAGE_LOCALITY), 23);
    assert_int_equal(NORM("n3", IMAGE_LOCALITY), 0);
    pod_json(buf, sizeof(buf), "two", NULL, "",
             "[{\"name\":\"a\",\"image\":\"repo/app\"},{\"name\":\"b\",\"image\":\"repo/side:2\"}]", "", "");
    explain(decode(buf));
    assert_int_equal(NORM("n1", IMAGE_LOCALITY), 26);
    pod_json(buf, sizeof(buf), "three", NULL, "",
             "[{\"name\":\"a\",\"image\":\"repo/app\"},{\"name\":\"b\",\"image\":\"repo/side:2\"}]",
             "\"initContainers\":[{\"name\":\"i\",\"image\":\"repo/absent:1\"}]", "");
    const struct ebb_pod *three = decode(buf);
    explain(three);
    assert_int_equal(NORM("n1", IMAGE_LOCALITY), 17);
    pod_json(buf, sizeof(buf), "tiny", NULL, "", "[{\"name\":\"a\",\"image\":\"repo/tiny:1\"}]", "", "");
    explain(decode(buf));
    assert_int_equal(NORM("n1", IMAGE_LOCALITY), 0);   /* below the 23Mi floor */
    restart(EBB_SCHED_V1_25);
    explain(three);
    assert_int_equal(NORM("n1", IMAGE_LOCALITY), 26);   /* v1.25: app containers only */
}

/* ---- TaintToleration and NodeAffinity scores: E11, E12 ------------------------------ */

static void test_e11_taint_toleration_score(void **state)
{
    (void)state;
    node("a", "4", "8Gi", "", "\"taints\":[{\"key\":\"x\",\"effect\":\"PreferNoSchedule\"},"
                              "{\"key\":\"y\",\"value\":\"1\",\"effect\":\"PreferNoSchedule\"}]", "");
    node("b", "4", "8Gi", "", "\"taints\":[{\"key\":\"x\",\"effect\":\"PreferNoSchedule\"}]", "");
    node("c", "4", "8Gi", "", "", "");
    start();
    explain(pending("", "100m", "", "", ""));
    assert_int_equal(RAW("a", TAINT_TOLERATION), 2);
    assert_int_equal(NORM("a", TAINT_TOLERATION), 0);
    assert_int_equal(NORM("b", TAINT_TOLERATION), 50);
    assert_int_equal(NORM("c", TAINT_TOLERATION), 100);
    /* a NoSchedule toleration does not count for PreferNoSchedule taints */
    explain(pending("", "100m", "", "\"tolerations\":[{\"key\":\"x\",\"operator\":\"Exists\","
                                    "\"effect\":\"NoSchedule\"}]", ""));
    assert_int_equal(RAW("b", TAINT_TOLERATION), 1);
    explain(pending("", "100m", "", "\"tolerations\":[{\"key\":\"x\",\"operator\":\"Exists\"},"
                                    "{\"key\":\"y\",\"operator\":\"Exists\",\"effect\":\"PreferNoSchedule\"}]", ""));
    assert_int_equal(NORM("a", TAINT_TOLERATION), 100);   /* no untolerated taint anywhere */
    assert_int_equal(NORM("c", TAINT_TOLERATION), 100);
}

static void test_e12_node_affinity_score(void **state)
{
    (void)state;
    node("a", "4", "8Gi", "\"zone\":\"a\",\"disk\":\"ssd\"", "", "");
    node("b", "4", "8Gi", "\"zone\":\"a\"", "", "");
    node("c", "4", "8Gi", "", "", "");
    start();
    explain(pending("", "100m", "",
                    "\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
                    "{\"weight\":30,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}]}},"
                    "{\"weight\":20,\"preference\":{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"In\",\"values\":[\"ssd\"]}]}}]}}",
                    ""));
    assert_int_equal(RAW("a", NODE_AFFINITY), 50);
    assert_int_equal(NORM("a", NODE_AFFINITY), 100);
    assert_int_equal(NORM("b", NODE_AFFINITY), 60);
    assert_int_equal(NORM("c", NODE_AFFINITY), 0);
    assert_int_equal(at("a")->total - at("c")->total, 200);
}

/* ---- InterPodAffinity scores: E13..E15 -------------------------------------------- */

static const char *pref_term(char *buf, size_t len, const char *kind, const char *app, int w,
                             const char *key)
{
    snprintf(buf, len,
             "\"%s\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":%d,"
             "\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"app\":\"%s\"}},"
             "\"topologyKey\":\"%s\"}}]}",
             kind, w, app, key);
    return buf;
}

static void test_e13_e14_pod_affinity_score(void **state)
{
    char t1[512], t2[512], spec[1200];

    (void)state;
    three_nodes();
    bound("db1", "a", "\"app\":\"db\"", "100m", "", "");
    bound("db2", "a", "\"app\":\"db\"", "100m", "", "");
    bound("db3", "b", "\"app\":\"db\"", "100m", "", "");
    start();
    snprintf(spec, sizeof(spec), "\"affinity\":{%s}",
             pref_term(t1, sizeof(t1), "podAffinity", "db", 10, "kubernetes.io/hostname"));
    explain(pending("", "100m", "", spec, ""));
    assert_int_equal(RAW("a", INTER_POD_AFFINITY), 20);
    assert_int_equal(NORM("a", INTER_POD_AFFINITY), 100);
    assert_int_equal(NORM("b", INTER_POD_AFFINITY), 50);
    assert_int_equal(NORM("c", INTER_POD_AFFINITY), 0);
    teardown(NULL);
    setup(NULL);
    three_nodes();
    bound("db", "a", "\"app\":\"db\"", "100m", "", "");
    bound("cache", "b", "\"app\":\"cache\"", "100m", "", "");
    start();
    snprintf(spec, sizeof(spec), "\"affinity\":{%s,%s}",
             pref_term(t1, sizeof(t1), "podAffinity", "db", 10, "kubernetes.io/hostname"),
             pref_term(t2, sizeof(t2), "podAntiAffinity", "cache", 5, "kubernetes.io/hostname"));
    explain(pending("", "100m", "", spec, ""));
    assert_int_equal(RAW("b", INTER_POD_AFFINITY), -5);
    assert_int_equal(NORM("a", INTER_POD_AFFINITY), 100);
    assert_int_equal(NORM("b", INTER_POD_AFFINITY), 0);
    assert_int_equal(NORM("c", INTER_POD_AFFINITY), 33);
}

static void test_e15_existing_pods_terms(void **state)
{
    char t[512], spec[1200];

    (void)state;
    node("a", "4", "8Gi", "\"" ZONE "\":\"z1\"", "", "");
    node("b", "4", "8Gi", "\"" ZONE "\":\"z1\"", "", "");
    node("c", "4", "8Gi", "\"" ZONE "\":\"z2\"", "", "");
    bound("p", "a", "\"app\":\"p\"", "100m", "",
          "\"affinity\":{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
          "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"topologyKey\":\"" ZONE "\"}]}}");
    snprintf(spec, sizeof(spec), "\"affinity\":{%s}",
             pref_term(t, sizeof(t), "podAntiAffinity", "web", 50, "kubernetes.io/hostname"));
    bound("q", "c", "\"app\":\"q\"", "100m", "", spec);
    start();
    explain(pending("\"app\":\"web\"", "100m", "", "", ""));
    assert_int_equal(RAW("a", INTER_POD_AFFINITY), 1);
    assert_int_equal(RAW("b", INTER_POD_AFFINITY), 1);
    assert_int_equal(RAW("c", INTER_POD_AFFINITY), -50);
    assert_int_equal(NORM("a", INTER_POD_AFFINITY), 100);
    assert_int_equal(NORM("b", INTER_POD_AFFINITY), 100);
    assert_int_equal(NORM("c", INTER_POD_AFFINITY), 0);
    /* a pod the terms do not select: nothing anywhere */
    explain(pending("\"app\":\"api\"", "100m", "", "", ""));
    assert_int_equal(NORM("a", INTER_POD_AFFINITY), 0);
    assert_int_equal(NORM("c", INTER_POD_AFFINITY), 0);
}

/* ---- PodTopologySpread scores: E16, E17 ----------------------------------------------- */

static void test_e16_spread_schedule_anyway(void **state)
{
    (void)state;
    three_nodes();
    bound("w1", "b", "\"app\":\"web\"", "100m", "", "");
    bound("w2", "c", "\"app\":\"web\"", "100m", "", "");
    bound("w3", "c", "\"app\":\"web\"", "100m", "", "");
    start();
    explain(pending("\"app\":\"web\"", "100m", "",
                    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"kubernetes.io/hostname\","
                    "\"whenUnsatisfiable\":\"ScheduleAnyway\",\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}]",
                    ""));
    assert_int_equal(RAW("a", POD_TOPOLOGY_SPREAD), 0);
    assert_int_equal(RAW("b", POD_TOPOLOGY_SPREAD), 2);
    assert_int_equal(RAW("c", POD_TOPOLOGY_SPREAD), 3);
    assert_int_equal(NORM("a", POD_TOPOLOGY_SPREAD), 100);
    assert_int_equal(NORM("b", POD_TOPOLOGY_SPREAD), 33);
    assert_int_equal(NORM("c", POD_TOPOLOGY_SPREAD), 0);
}

static const char *rs_owner = "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
                              "\"name\":\"web-5d\",\"uid\":\"rs-web\",\"controller\":true}]";

static void web_rs(void)
{
    put("{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"web-5d\","
        "\"namespace\":\"default\",\"uid\":\"rs-web\"},\"spec\":{\"replicas\":3,\"selector\":"
        "{\"matchLabels\":{\"app\":\"web\"}}}}");
}

static void test_e17_system_default_spreading(void **state)
{
    char buf[4096], c[512];

    (void)state;
    web_rs();
    node("n1", "4", "8Gi", "\"" ZONE "\":\"a\"", "", "");
    node("n2", "4", "8Gi", "\"" ZONE "\":\"a\"", "", "");
    node("n3", "4", "8Gi", "\"" ZONE "\":\"b\"", "", "");
    node("n4", "4", "8Gi", "\"" ZONE "\":\"b\"", "", "");
    bound("w1", "n1", "\"app\":\"web\"", "100m", "", "");
    bound("w2", "n1", "\"app\":\"web\"", "100m", "", "");
    bound("w3", "n3", "\"app\":\"web\"", "100m", "", "");
    start();
    pod_json(buf, sizeof(buf), "web-new", NULL, "\"app\":\"web\"", req(c, sizeof(c), "100m", ""), "", rs_owner);
    explain(decode(buf));
    assert_int_equal(RAW("n1", POD_TOPOLOGY_SPREAD), 12);
    assert_int_equal(RAW("n2", POD_TOPOLOGY_SPREAD), 9);
    assert_int_equal(RAW("n3", POD_TOPOLOGY_SPREAD), 9);
    assert_int_equal(RAW("n4", POD_TOPOLOGY_SPREAD), 7);
    assert_int_equal(NORM("n1", POD_TOPOLOGY_SPREAD), 58);
    assert_int_equal(NORM("n2", POD_TOPOLOGY_SPREAD), 83);
    assert_int_equal(NORM("n3", POD_TOPOLOGY_SPREAD), 83);
    assert_int_equal(NORM("n4", POD_TOPOLOGY_SPREAD), 100);
    /* a Service selecting the pod narrows the selector further: the same here */
    put("{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"},"
        "\"spec\":{\"selector\":{\"app\":\"web\"}}}");
    explain(incoming[nincoming - 1]);
    assert_int_equal(NORM("n1", POD_TOPOLOGY_SPREAD), 58);
}

/* ---- PodTopologySpread filter: E18, E19 -------------------------------------------------- */

static const char *zone_tsc(char *buf, size_t len, int min_domains)
{
    char md[64] = "";

    if (min_domains > 0)
        snprintf(md, sizeof(md), ",\"minDomains\":%d", min_domains);
    snprintf(buf, len,
             "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"" ZONE "\","
             "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}%s}]",
             md);
    return buf;
}

static void test_e18_spread_filter(void **state)
{
    char t[512];

    (void)state;
    node("a1", "4", "8Gi", "\"" ZONE "\":\"a\"", "", "");
    node("b1", "4", "8Gi", "\"" ZONE "\":\"b\"", "", "");
    node("nozone", "4", "8Gi", "", "", "");
    bound("w1", "a1", "\"app\":\"web\"", "100m", "", "");
    bound("w2", "a1", "\"app\":\"web\"", "100m", "", "");
    start();
    explain(pending("\"app\":\"web\"", "100m", "", zone_tsc(t, sizeof(t), 0), ""));
    assert_false(at("a1")->feasible);
    assert_string_equal(at("a1")->reasons, "node(s) didn't match pod topology spread constraints");
    assert_true(at("b1")->feasible);
    assert_string_equal(at("nozone")->reasons,
                        "node(s) didn't match pod topology spread constraints (missing required label)");
}

static void test_e19_min_domains(void **state)
{
    char t[512];

    (void)state;
    node("a1", "4", "8Gi", "\"" ZONE "\":\"a\"", "", "");
    node("b1", "4", "8Gi", "\"" ZONE "\":\"b\"", "", "");
    bound("w1", "a1", "\"app\":\"web\"", "100m", "", "");
    bound("w2", "b1", "\"app\":\"web\"", "100m", "", "");
    start();
    explain(pending("\"app\":\"web\"", "100m", "", zone_tsc(t, sizeof(t), 3), ""));
    assert_false(at("a1")->feasible);
    assert_false(at("b1")->feasible);
    restart(EBB_SCHED_V1_25);
    explain(incoming[nincoming - 1]);
    assert_true(at("a1")->feasible);
    assert_true(at("b1")->feasible);
}

/* Node inclusion policies: a tainted node's domain is left out only with
 * nodeTaintsPolicy Honor, a domain the pod's node affinity excludes only with
 * nodeAffinityPolicy Honor (the default); pods of one node affinity but other
 * policies do not share what was worked out for the domains. */
static void test_spread_inclusion_policies(void **state)
{
    const char *tsc = "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"" ZONE "\","
                      "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}%s}]%s";
    const char *in_ac = ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
                        "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"" ZONE "\",\"operator\":\"In\","
                        "\"values\":[\"a\",\"c\"]}]}]}}}";
    char t[1024];

    (void)state;
    node("a1", "4", "8Gi", "\"" ZONE "\":\"a\"", "", "");
    node("b1", "4", "8Gi", "\"" ZONE "\":\"b\"",
         "\"taints\":[{\"key\":\"dedicated\",\"value\":\"x\",\"effect\":\"NoSchedule\"}]", "");
    node("c1", "4", "8Gi", "\"" ZONE "\":\"c\"", "", "");
    bound("w1", "a1", "\"app\":\"web\"", "100m", "", "");
    bound("w2", "c1", "\"app\":\"web\"", "100m", "", "");
    start();
    /* b counts, with nothing in it: a and c are one above the minimum */
    snprintf(t, sizeof(t), tsc, "", "");
    explain(pending("\"app\":\"web\"", "100m", "", t, ""));
    assert_false(at("a1")->feasible);
    assert_false(at("c1")->feasible);
    snprintf(t, sizeof(t), tsc, ",\"nodeTaintsPolicy\":\"Honor\"", "");
    explain(pending("\"app\":\"web\"", "100m", "", t, ""));
    assert_true(at("a1")->feasible);
    assert_true(at("c1")->feasible);
    snprintf(t, sizeof(t), tsc, "", in_ac);
    explain(pending("\"app\":\"web\"", "100m", "", t, ""));
    assert_true(at("a1")->feasible);
    assert_true(at("c1")->feasible);
    snprintf(t, sizeof(t), tsc, ",\"nodeAffinityPolicy\":\"Ignore\"", in_ac);
    explain(pending("\"app\":\"web\"", "100m", "", t, ""));
    assert_false(at("a1")->feasible);
    assert_false(at("c1")->feasible);
    snprintf(t, sizeof(t), tsc, "", in_ac);
    explain(pending("\"app\":\"web\"", "100m", "", t, ""));
    assert_true(at("a1")->feasible);
}

/* ---- InterPodAffinity filter: E20 ---------------------------------------------------------- */

static void test_e20_pod_affinity_filter(void **state)
{
    const char *aff = "\"affinity\":{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                      "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"topologyKey\":\"" ZONE "\"}]}}";
    const char *both = "\"affinity\":{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                       "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"topologyKey\":\"" ZONE "\"}]},"
                       "\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                       "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}";

    (void)state;
    node("a", "4", "8Gi", "\"" ZONE "\":\"z1\"", "", "");
    node("b", "4", "8Gi", "\"" ZONE "\":\"z1\"", "", "");
    node("nozone", "4", "8Gi", "", "", "");
    start();
    /* the first pod of a group that wants itself */
    explain(pending("\"app\":\"web\"", "100m", "", aff, ""));
    assert_true(at("a")->feasible);
    assert_string_equal(at("nozone")->reasons, "node(s) didn't match pod affinity rules");
    explain(pending("\"app\":\"api\"", "100m", "", aff, ""));
    assert_false(at("a")->feasible);
    assert_string_equal(at("a")->reasons, "node(s) didn't match pod affinity rules");
    /* one web pod on a: its zone is wanted, its node refused */
    bound("web1", "a", "\"app\":\"web\"", "100m", "", "");
    restart(version);
    explain(pending("\"app\":\"web\"", "100m", "", both, ""));
    assert_string_equal(at("a")->reasons, "node(s) didn't match pod anti-affinity rules");
    assert_true(at("b")->feasible);
    assert_false(at("nozone")->feasible);
}

static void test_existing_anti_affinity_filter(void **state)
{
    (void)state;
    node("a", "4", "8Gi", "\"" ZONE "\":\"z1\"", "", "");
    node("b", "4", "8Gi", "\"" ZONE "\":\"z1\"", "", "");
    node("c", "4", "8Gi", "\"" ZONE "\":\"z2\"", "", "");
    bound("loner", "a", "\"app\":\"loner\"", "100m", "",
          "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
          "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"topologyKey\":\"" ZONE "\"}]}}");
    start();
    explain(pending("\"app\":\"web\"", "100m", "", "", ""));
    assert_string_equal(at("a")->reasons, "node(s) didn't satisfy existing pods anti-affinity rules");
    assert_string_equal(at("b")->reasons, "node(s) didn't satisfy existing pods anti-affinity rules");
    assert_true(at("c")->feasible);
    explain(pending("\"app\":\"api\"", "100m", "", "", ""));
    assert_true(at("a")->feasible);
}

/* Existing pods of one template hold one affinity (ebb/share.h), and the
 * model's build compiles it once per labels: with matchLabelKeys each
 * ReplicaSet's term selects its own hash, and a pod joins its own pods'
 * classes, never another ReplicaSet's. */
static void test_existing_terms_per_template(void **state)
{
#define ANTI "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{" \
             "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"matchLabelKeys\":[\"pod-template-hash\"]," \
             "\"topologyKey\":\"" ZONE "\"}]}}"
    (void)state;
    node("a", "4", "8Gi", "\"" ZONE "\":\"z1\"", "", "");
    node("b", "4", "8Gi", "\"" ZONE "\":\"z1\"", "", "");
    node("c", "4", "8Gi", "\"" ZONE "\":\"z2\"", "", "");
    node("d", "4", "8Gi", "\"" ZONE "\":\"z3\"", "", "");
    bound("web-h1-a", "a", "\"app\":\"web\",\"pod-template-hash\":\"h1\"", "100m", "", ANTI);
    bound("web-h2-a", "c", "\"app\":\"web\",\"pod-template-hash\":\"h2\"", "100m", "", ANTI);
    bound("web-h1-b", "b", "\"app\":\"web\",\"pod-template-hash\":\"h1\"", "100m", "", ANTI);
    start();
    explain(pending("\"app\":\"web\",\"pod-template-hash\":\"h1\"", "100m", "", "", ""));
    assert_false(at("a")->feasible);
    assert_false(at("b")->feasible);
    assert_true(at("c")->feasible);
    assert_true(at("d")->feasible);
    explain(pending("\"app\":\"web\",\"pod-template-hash\":\"h2\"", "100m", "", "", ""));
    assert_true(at("a")->feasible);
    assert_true(at("b")->feasible);
    assert_false(at("c")->feasible);
    assert_true(at("d")->feasible);
#undef ANTI
}

/* ---- NodeResourcesFit filter and the other filters: E21, E22 --------------------------------- */

static void test_e21_requests(void **state)
{
    char buf[4096];

    (void)state;
    node("n", "2000m", "8Gi", "", "", "");
    bound("busy", "n", "", "900m", "", "");
    start();
    pod_json(buf, sizeof(buf), "sidecars", NULL, "",
             "[{\"name\":\"c1\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"256Mi\"}}},"
             "{\"name\":\"c2\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"250m\",\"memory\":\"128Mi\"}}}]",
             "\"initContainers\":[{\"name\":\"s1\",\"image\":\"x\",\"restartPolicy\":\"Always\",\"resources\":"
             "{\"requests\":{\"cpu\":\"100m\",\"memory\":\"50Mi\"}}},{\"name\":\"i1\",\"image\":\"x\",\"resources\":"
             "{\"requests\":{\"cpu\":\"1000m\",\"memory\":\"64Mi\"}}}],\"overhead\":{\"cpu\":\"50m\",\"memory\":\"10Mi\"}",
             "");
    const struct ebb_pod *p = decode(buf);
    assert_int_equal(ebb_res_get(&p->requests, EBB_RES_CPU), 1150);
    assert_int_equal(ebb_res_get(&p->requests, EBB_RES_MEMORY), 444ll << 20);
    explain(p);
    assert_string_equal(at("n")->reasons, "Insufficient cpu");
}

static void test_e22_other_filters(void **state)
{
    (void)state;
    put("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"full\",\"labels\":"
        "{\"kubernetes.io/hostname\":\"full\"}},\"status\":{\"allocatable\":{\"cpu\":\"8\","
        "\"memory\":\"8Gi\",\"pods\":\"2\"}}}");
    node("ports", "8", "8Gi", "", "", "");
    node("cordoned", "8", "8Gi", "", "\"unschedulable\":true", "");
    bound("f1", "full", "", "", "", "");
    bound("f2", "full", "", "", "", "");
    put("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"hp\",\"namespace\":\"default\"},"
        "\"spec\":{\"nodeName\":\"ports\",\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"ports\":"
        "[{\"containerPort\":80,\"hostPort\":8080}]}]},\"status\":{\"phase\":\"Running\"}}");
    start();
    explain(pending("", "", "", "", ""));
    assert_string_equal(at("full")->reasons, "Too many pods");   /* even with no requests */
    assert_string_equal(at("cordoned")->reasons, "node(s) were unschedulable");
    explain(pending("", "", "",
                    "\"tolerations\":[{\"key\":\"node.kubernetes.io/unschedulable\",\"operator\":\"Exists\","
                    "\"effect\":\"NoSchedule\"}]", ""));
    assert_true(at("cordoned")->feasible);
    explain(pending("", "", "", "\"tolerations\":[{\"operator\":\"Exists\"}]", ""));
    assert_true(at("cordoned")->feasible);
    /* host ports */
    char buf[4096];
    const char *want[] = { "{\"containerPort\":1,\"hostPort\":8080,\"hostIP\":\"10.0.0.1\"}",
                           "{\"containerPort\":1,\"hostPort\":8080,\"protocol\":\"UDP\"}",
                           "{\"containerPort\":1,\"hostPort\":8081}" };
    const bool conflict[] = { true, false, false };
    for (int i = 0; i < 3; i++) {
        char c[512];
        snprintf(c, sizeof(c), "[{\"name\":\"c\",\"image\":\"x\",\"ports\":[%s]}]", want[i]);
        pod_json(buf, sizeof(buf), i == 0 ? "pa" : i == 1 ? "pb" : "pc", NULL, "", c, "", "");
        explain(decode(buf));
        assert_int_equal(at("ports")->feasible, !conflict[i]);
        if (conflict[i])
            assert_string_equal(at("ports")->reasons,
                                "node(s) didn't have free ports for the requested pod ports");
    }
}

static void test_node_affinity_filter(void **state)
{
    (void)state;
    use_config("apiVersion: kubescheduler.config.k8s.io/v1\n"
               "kind: KubeSchedulerConfiguration\n"
               "profiles:\n"
               "- pluginConfig:\n"
               "  - name: NodeAffinity\n"
               "    args:\n"
               "      addedAffinity:\n"
               "        requiredDuringSchedulingIgnoredDuringExecution:\n"
               "          nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: NotIn, values: [gpu]}]}]\n");
    node("web-1", "4", "8Gi", "\"pool\":\"web\",\"disk\":\"ssd\"", "", "");
    node("web-2", "4", "8Gi", "\"pool\":\"web\"", "", "");
    node("gpu-1", "4", "8Gi", "\"pool\":\"gpu\",\"disk\":\"ssd\"", "", "");
    start();
    explain(pending("", "100m", "", "\"nodeSelector\":{\"disk\":\"ssd\"}", ""));
    assert_true(at("web-1")->feasible);
    assert_string_equal(at("web-2")->reasons, "node(s) didn't match Pod's node affinity/selector");
    assert_string_equal(at("gpu-1")->reasons, "node(s) didn't match scheduler-enforced node affinity");
    /* matchFields metadata.name In: only those nodes are filtered */
    struct ebb_sched_result r;
    struct ebb_pod *p = pending("", "100m", "",
                                "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                                "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
                                "\"values\":[\"gpu-1\"]}]}]}}}", "");
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_UNSCHEDULABLE);
    assert_int_equal(r.evaluated, 1);
    assert_string_equal(r.message, "0/3 nodes are available: 1 node(s) didn't match scheduler-enforced node "
                                   "affinity, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].");
    /* names that intersect to nothing conflict at PreFilter */
    p = pending("", "100m", "",
                "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
                "\"values\":[\"web-1\"]},{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"web-2\"]}]}]}}}",
                "");
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    assert_string_equal(r.message, "0/3 nodes are available: pod affinity terms conflict.");
}

/* ---- the message: E23 ---------------------------------------------------------------------- */

static void test_e23_message(void **state)
{
    struct ebb_sched_result r;
    char name[32];

    (void)state;
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "cp-%02d", i);
        node(name, "8", "16Gi", "", "\"taints\":[{\"key\":\"node-role.kubernetes.io/control-plane\","
                                    "\"effect\":\"NoSchedule\"}]", "");
    }
    node("small-1", "1", "16Gi", "", "", "");
    node("small-2", "1", "16Gi", "", "", "");
    node("busy", "4", "4Gi", "", "", "");
    bound("hog", "busy", "", "3500m", "3Gi", "");
    start();
    struct ebb_pod *p = pending("", "2", "2Gi", "", "");
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_UNSCHEDULABLE);
    assert_null(r.node);
    assert_string_equal(r.message,
                        "0/13 nodes are available: 1 Insufficient memory, 10 node(s) had untolerated taint "
                        "{node-role.kubernetes.io/control-plane: }, 3 Insufficient cpu.");
    /* v1.25 runs every filter: the control plane nodes are short of nothing */
    restart(EBB_SCHED_V1_25);
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    assert_string_equal(r.message,
                        "0/13 nodes are available: 1 Insufficient memory, 10 node(s) had untolerated taint "
                        "{node-role.kubernetes.io/control-plane: }, 3 Insufficient cpu.");
}

/* ---- numFeasibleNodesToFind: E24 ------------------------------------------------------------- */

static void test_e24_nodes_to_find(void **state)
{
    static const uint32_t n[] = { 50, 100, 150, 500, 1000, 3000, 5000, 6000, 10000 };
    static const uint32_t k[] = { 50, 100, 100, 230, 420, 780, 500, 300, 500 };

    (void)state;
    for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
        assert_int_equal(ebb_sched_nodes_to_find(0, n[i]), k[i]);
    assert_int_equal(ebb_sched_nodes_to_find(30, 1000), 300);
    assert_int_equal(ebb_sched_nodes_to_find(5, 1000), 100);
    assert_int_equal(ebb_sched_nodes_to_find(100, 1000), 1000);
}

/* ---- the whole default profile: E25 ------------------------------------------------------------ */

static void e25_nodes(void)
{
    web_rs();
    node("a", "4000m", "8Gi", "", "", "\"images\":[{\"names\":[\"repo/web:1\"],\"sizeBytes\":314572800}]");
    node("b", "4000m", "8Gi", "", "", "");
    char c[512], buf[4096];
    pod_json(buf, sizeof(buf), "web-old", "a", "\"app\":\"web\"", req(c, sizeof(c), "1000m", "2Gi"), "", rs_owner);
    put(buf);
    bound("other", "b", "\"app\":\"other\"", "2000m", "2Gi", "");
}

static struct ebb_pod *e25_pod(bool owned)
{
    char buf[4096];

    pod_json(buf, sizeof(buf), owned ? "web-new" : "bare", NULL, "\"app\":\"web\"",
             "[{\"name\":\"main\",\"image\":\"repo/web:1\",\"resources\":{\"requests\":{\"cpu\":\"500m\","
             "\"memory\":\"1Gi\"}}}]",
             "", owned ? rs_owner : "");
    return decode(buf);
}

static void test_e25_totals(void **state)
{
    struct ebb_sched_result r;

    (void)state;
    e25_nodes();
    start();
    struct ebb_pod *owned = e25_pod(true), *bare = e25_pod(false);
    explain(owned);
    assert_int_equal(NORM("a", POD_TOPOLOGY_SPREAD), 66);
    assert_int_equal(NORM("a", IMAGE_LOCALITY), 12);
    assert_int_equal(at("a")->total, 606);
    assert_int_equal(at("b")->total, 636);
    assert_int_equal(ebb_sched_schedule(sched, owned, &r), 0);
    assert_string_equal(r.node->name, "b");
    assert_int_equal(r.score, 636);
    explain(bare);
    assert_int_equal(at("a")->total, 474);
    assert_int_equal(at("b")->total, 436);
    assert_int_equal(ebb_sched_schedule(sched, bare, &r), 0);
    assert_string_equal(r.node->name, "a");
    restart(EBB_SCHED_V1_25);
    explain(bare);
    assert_int_equal(at("a")->total, 674);
    assert_int_equal(at("b")->total, 636);
    explain(owned);
    assert_int_equal(at("a")->total, 606);
    assert_int_equal(at("b")->total, 636);
}

/* ---- the cycle: rotation, ties, binding, forgetting ----------------------------------------------- */

static void test_rotation_and_percentage(void **state)
{
    char name[32];
    struct ebb_sched_result r;

    (void)state;
    /* 200 nodes in two zones: 100 nodes to find, the list alternates zones */
    for (int i = 0; i < 200; i++) {
        char labels[128];
        snprintf(name, sizeof(name), "n%03d", i);
        snprintf(labels, sizeof(labels), "\"" ZONE "\":\"%s\"", i < 100 ? "a" : "b");
        node(name, "4", "8Gi", labels, "", "");
    }
    start();
    struct ebb_pod *p = pending("", "100m", "", "", "");
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_PLACED);
    assert_int_equal(r.evaluated, 100);
    assert_int_equal(r.feasible, 100);
    /* every node scores the same: the first in name order among those filtered */
    assert_string_equal(r.node->name, "n000");
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    /* the second pod starts where the first stopped: a's and b's second halves */
    assert_string_equal(r.node->name, "n050");
}

static void test_seeded_ties(void **state)
{
    struct ebb_sched_result r;
    struct ebb_sched_opts o = { .seeded = true, .seed = 42 };
    char first[32];
    int differ = 0;

    (void)state;
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        node(name, "4", "8Gi", "", "", "");
    }
    ebb_cache_build_indexes(cache);
    assert_int_equal(ebb_sched_create(cache, &o, &sched), 0);
    struct ebb_pod *p = pending("", "100m", "", "", "");
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    snprintf(first, sizeof(first), "%s", r.node->name);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
        differ += strcmp(first, r.node->name) != 0;
    }
    assert_true(differ > 0);   /* a seed spreads ties */
    /* the same seed gives the same choices */
    ebb_sched_destroy(sched);
    assert_int_equal(ebb_sched_create(cache, &o, &sched), 0);
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    assert_string_equal(first, r.node->name);
}

/* A bound pod's NonZeroRequested (100m, 200Mi for a container that asks
 * for nothing) counts in the next pod's scores at once. */
static void test_bind_counts_nonzero_requests(void **state)
{
    struct ebb_sched_result r;

    (void)state;
    node("a", "2", "4Gi", "", "", "");
    node("b", "2", "4Gi", "", "", "");
    start();
    struct ebb_pod *p = pending("\"app\":\"be\"", "", "", "", "");
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    assert_string_equal(r.node->name, "a");   /* a tie: the first node */
    struct ebb_pod *copy = ebb_pod_clone(p);
    assert_non_null(copy);
    assert_int_equal(ebb_sched_bind(sched, copy, r.node), 0);
    explain(pending("\"app\":\"be\"", "", "", "", ""));
    assert_true(at("a")->total < at("b")->total);
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    assert_string_equal(r.node->name, "b");
}

/* A best-effort pod that leaves (evicted, then the model synced) no longer
 * counts its non-zero defaults on its node: the node scores as an empty
 * one again. */
static void test_sync_forgets_nonzero_requests(void **state)
{
    (void)state;
    node("a", "2", "4Gi", "", "", "");
    node("b", "2", "4Gi", "", "", "");
    bound("be1", "a", "", "", "", "");
    bound("be2", "a", "", "", "", "");
    start();
    explain(pending("", "100m", "64Mi", "", ""));
    assert_true(RAW("a", NODE_RESOURCES_FIT) < RAW("b", NODE_RESOURCES_FIT));
    ebb_cache_hide_pod(cache, cached("be1"));
    assert_int_equal(ebb_sched_sync(sched), 0);
    explain(pending("", "100m", "64Mi", "", ""));
    assert_true(RAW("a", NODE_RESOURCES_FIT) < RAW("b", NODE_RESOURCES_FIT));
    ebb_cache_hide_pod(cache, cached("be2"));
    assert_int_equal(ebb_sched_sync(sched), 0);
    explain(pending("", "100m", "64Mi", "", ""));
    assert_int_equal(RAW("a", NODE_RESOURCES_FIT), RAW("b", NODE_RESOURCES_FIT));
    assert_int_equal(RAW("a", BALANCED_ALLOCATION), RAW("b", BALANCED_ALLOCATION));
}

static void test_bind_and_sync(void **state)
{
    struct ebb_sched_result r;

    (void)state;
    node("a", "2", "8Gi", "", "", "");
    node("b", "2", "8Gi", "", "", "");
    bound("x", "a", "", "1500m", "", "");
    start();
    /* the pod fits only b; once bound there, another one fits nowhere */
    struct ebb_pod *p = pending("\"app\":\"big\"", "1500m", "", "", "");
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    assert_string_equal(r.node->name, "b");
    struct ebb_pod *copy = ebb_pod_clone(p);
    assert_non_null(copy);
    assert_int_equal(ebb_sched_bind(sched, copy, r.node), 0);
    assert_int_equal(ebb_cache_pods_on_node(cache, r.node->name)->req[EBB_RES_CPU], 1500);
    /* a node the model does not know: refused, and the pod is bind's to
     * free (the sanitizers see a leak or a double free otherwise) */
    struct ebb_node ghost = { .name = ebb_str_cstr("ghost") };
    struct ebb_pod *lost = ebb_pod_clone(p);
    assert_non_null(lost);
    assert_int_equal(ebb_sched_bind(sched, lost, &ghost), EBB_ENOENT);
    ebb_str_release(ghost.name);
    assert_int_equal(ebb_cache_pods_on_node(cache, r.node->name)->req[EBB_RES_CPU], 1500);
    struct ebb_pod *q = pending("", "1500m", "", "", "");
    assert_int_equal(ebb_sched_schedule(sched, q, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_UNSCHEDULABLE);
    assert_string_equal(r.message, "0/2 nodes are available: 2 Insufficient cpu.");
    /* anti-affinity to the bound pod reads the index */
    struct ebb_pod *anti = pending("", "100m", "",
                                   "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                                   "\"labelSelector\":{\"matchLabels\":{\"app\":\"big\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}",
                                   "");
    explain(anti);
    assert_false(at("b")->feasible);
    /* x leaves a (a cycle evicted it): after sync, a has room again */
    ebb_cache_hide_pod(cache, cached("x"));
    assert_int_equal(ebb_sched_sync(sched), 0);
    assert_int_equal(ebb_sched_schedule(sched, q, &r), 0);
    assert_string_equal(r.node->name, "a");
    ebb_cache_purge_hidden(cache);
    assert_int_equal(ebb_sched_sync(sched), 0);
    explain(anti);
    assert_true(at("a")->feasible);
    assert_false(at("b")->feasible);
}

static void test_profiles_and_gates(void **state)
{
    struct ebb_sched_result r;

    (void)state;
    node("a", "2", "8Gi", "", "", "");
    start();
    struct ebb_pod *other = pending("", "100m", "", "\"schedulerName\":\"batch-scheduler\"", "");
    assert_int_equal(ebb_sched_schedule(sched, other, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_NO_PROFILE);
    assert_string_equal(r.message, "no profile for scheduler \"batch-scheduler\": left alone");
    struct ebb_pod *gated = pending("", "100m", "", "\"schedulingGates\":[{\"name\":\"wait\"}]", "");
    assert_int_equal(ebb_sched_schedule(sched, gated, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_GATED);
}

/* ---- realistic pending pods ------------------------------------------------------------------ */

static void test_pending_on_demo_cluster(void **state)
{
    struct ebb_error err = { 0 };
    struct ebb_sched_result r;

    (void)state;
    ebb_cache_destroy(cache);
    cache = NULL;
    assert_int_equal(ebb_cache_create(&cache), 0);
    if (ebb_snapshot_load(cache, "spec/fixtures/demo-cluster.json", NULL, &err) != 0)
        fail_msg("%s", err.msg);
    start();
    /* a frontend asking 1 cpu: never the control plane (taint) nor the
     * batch node (taint), and the emptiest general node wins */
    struct ebb_pod *p = pending("\"app\":\"probe\"", "1", "1Gi", "", "");
    explain(p);
    assert_false(at("ip-10-0-1-10.eu-west-1.compute.internal")->feasible);
    assert_false(at("ip-10-0-2-23.eu-west-1.compute.internal")->feasible);
    assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_PLACED);
    int64_t best = 0;
    for (size_t i = 0; i < nev; i++)
        if (ev[i].feasible && ev[i].total > best)
            best = ev[i].total;
    assert_int_equal(r.score, best);
    assert_true(at(r.node->name)->feasible);
    /* far too big: every node says why */
    struct ebb_pod *big = pending("", "64", "", "", "");
    assert_int_equal(ebb_sched_schedule(sched, big, &r), 0);
    assert_string_equal(r.message,
                        "0/6 nodes are available: 1 node(s) had untolerated taint {dedicated: batch}, "
                        "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
                        "4 Insufficient cpu.");
}

/* ---- the configuration ---------------------------------------------------------------------- */

static void config_error(const char *yaml, int line, const char *field, const char *msg)
{
    struct ebb_error err = { 0 };
    struct ebb_sched_config *c = NULL;

    assert_int_equal(ebb_sched_config_parse(yaml, strlen(yaml), "sched.yaml", &c, &err), EBB_ESCHEMA);
    assert_null(c);
    assert_string_equal(err.file, "sched.yaml");
    assert_int_equal(err.line, line);
    assert_string_equal(err.field, field);
    if (strstr(err.msg, msg) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, msg);
}

#define HEAD "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

static void test_config_merge(void **state)
{
    (void)state;
    use_config(HEAD "percentageOfNodesToScore: 30\n"
                    "profiles:\n"
                    "- schedulerName: default-scheduler\n"
                    "- schedulerName: bin-packing\n"
                    "  percentageOfNodesToScore: 100\n"
                    "  plugins:\n"
                    "    multiPoint: {enabled: [{name: NodeResourcesFit, weight: 5}]}\n"
                    "    score:\n"
                    "      disabled: [{name: NodeResourcesBalancedAllocation}]\n"
                    "      enabled: [{name: TaintToleration, weight: 7}]\n"
                    "    filter: {disabled: [{name: NodePorts}]}\n"
                    "    preEnqueue: {disabled: [{name: '*'}]}\n");
    assert_int_equal(config->nprofiles, 2);
    assert_int_equal(config->percentage, 30);
    const struct ebb_sched_profile *d = ebb_sched_config_profile(config, NULL);
    const struct ebb_sched_profile *b = ebb_sched_config_profile(config, "bin-packing");
    assert_int_equal(d->weight[EBB_SP_TAINT_TOLERATION], 3);
    assert_int_equal(d->percentage, -1);
    assert_int_equal(b->percentage, 100);
    assert_int_equal(b->weight[EBB_SP_NODE_RESOURCES_FIT], 5);
    assert_int_equal(b->weight[EBB_SP_BALANCED_ALLOCATION], 0);
    assert_int_equal(b->weight[EBB_SP_TAINT_TOLERATION], 7);   /* the score point wins */
    assert_int_equal(b->weight[EBB_SP_INTER_POD_AFFINITY], 2);
    assert_int_equal(b->nfilters, 7);
    for (int i = 0; i < b->nfilters; i++)
        assert_int_not_equal(b->filters[i], EBB_SP_NODE_PORTS);
    assert_false(b->scheduling_gates);
    assert_true(d->scheduling_gates);
    assert_null(ebb_sched_config_profile(config, "nope"));
    ebb_sched_config_free(config);
    config = NULL;
    /* all filters off but two, in the order given */
    use_config(HEAD "profiles:\n"
                    "- plugins:\n"
                    "    filter:\n"
                    "      disabled: [{name: '*'}]\n"
                    "      enabled: [{name: NodeResourcesFit}, {name: TaintToleration}]\n"
                    "    multiPoint: {enabled: [{name: ImageLocality, weight: 0}]}\n");
    d = &config->profiles[0];
    assert_int_equal(d->nfilters, 2);
    assert_int_equal(d->filters[0], EBB_SP_NODE_RESOURCES_FIT);
    assert_int_equal(d->filters[1], EBB_SP_TAINT_TOLERATION);
    assert_int_equal(d->weight[EBB_SP_IMAGE_LOCALITY], 1);   /* 0 means 1 */
}

static void test_config_errors(void **state)
{
    (void)state;
    config_error("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Deployment\n", 2, "kind",
                 "expected KubeSchedulerConfiguration");
    config_error(HEAD "percentageOfNodesToScore: 101\n", 3, "percentageOfNodesToScore",
                 "not in valid range");
    config_error(HEAD "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodeResourcesFitt\n",
                 7, "profiles[0].plugins.score.enabled[0].name", "unknown plugin \"NodeResourcesFitt\"");
    config_error(HEAD "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - {name: ImageLocality, weight: -2}\n",
                 7, "profiles[0].plugins.multiPoint.enabled[0].weight", "bad weight -2");
    config_error(HEAD "profiles:\n- plugins:\n    score:\n      enabled:\n      - {name: ImageLocality, weight: high}\n",
                 7, "profiles[0].plugins.score.enabled[0].weight", "expected an integer");
    config_error(HEAD "profiles:\n- plugins:\n    filter:\n      enabled: [{name: ImageLocality}]\n",
                 6, "profiles[0].plugins.filter", "ImageLocality does not implement");
    config_error(HEAD "profiles:\n- schedulerName: a\n  colour: blue\n", 5, "profiles[0].colour",
                 "unknown field \"colour\"");
    config_error(HEAD "profiles:\n- schedulerName: a\n- percentageOfNodesToScore: 5\n", 5,
                 "profiles[1].schedulerName", "required");
    config_error(HEAD "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
                      "      scoringStrategy: {type: Random}\n",
                 7, "profiles[0].pluginConfig[0].args.scoringStrategy.type", "\"Random\" is not");
    config_error(HEAD "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
                      "      scoringStrategy:\n        resources: [{name: cpu, weight: 101}]\n",
                 8, "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
                 "not in valid range [1, 100]");
    config_error(HEAD "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
                      "      scoringStrategy:\n        type: RequestedToCapacityRatio\n"
                      "        requestedToCapacityRatio:\n          shape:\n"
                      "          - {utilization: 50, score: 5}\n          - {utilization: 40, score: 11}\n",
                 12, "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].score",
                 "out of range [0, 10]");
    config_error(HEAD "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n"
                      "      defaultingType: System\n      defaultConstraints:\n"
                      "      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
                 8, "profiles[0].pluginConfig[0].args.defaultConstraints", "must be empty");
    config_error(HEAD "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {hardPodAffinityWeight: 101}\n",
                 6, "profiles[0].pluginConfig[0].args.hardPodAffinityWeight", "out of range [0, 100]");
    config_error(HEAD "profiles:\n- pluginConfig:\n  - name: Coscheduling\n    args: {}\n",
                 6, "profiles[0].pluginConfig[0].args", "unknown plugin \"Coscheduling\"");
    /* not YAML at all */
    struct ebb_error err = { 0 };
    struct ebb_sched_config *c = NULL;
    const char *broken = HEAD "profiles: [\n";
    assert_int_not_equal(ebb_sched_config_parse(broken, strlen(broken), "sched.yaml", &c, &err), 0);
    assert_null(c);
    assert_string_equal(err.file, "sched.yaml");
    assert_true(err.line >= 3);
}

static void test_config_args(void **state)
{
    (void)state;
    use_config(HEAD "profiles:\n"
                    "- pluginConfig:\n"
                    "  - name: PodTopologySpread\n"
                    "    args:\n"
                    "      defaultingType: List\n"
                    "      defaultConstraints:\n"
                    "      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}\n"
                    "  - name: InterPodAffinity\n"
                    "    args: {hardPodAffinityWeight: 5}\n"
                    "  - name: NodeResourcesFit\n"
                    "    args: {ignoredResources: [example.com/foo], ignoredResourceGroups: [vendor.io]}\n");
    const struct ebb_sched_profile *p = &config->profiles[0];
    assert_false(p->spread_system);
    assert_int_equal(p->nspread_defaults, 1);
    assert_int_equal(p->spread_defaults[0].max_skew, 1);
    assert_int_equal(p->spread_defaults[0].when_unsatisfiable, EBB_TSC_SCHEDULE_ANYWAY);
    assert_int_equal(p->hard_pod_affinity_weight, 5);
    assert_int_equal(p->nignored, 1);
    /* an ignored extended resource the node lacks does not stop the pod */
    node("n", "4", "8Gi", "", "", "");
    start();
    char buf[2048];
    pod_json(buf, sizeof(buf), "ext", NULL, "",
             "[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{\"example.com/foo\":\"1\","
             "\"vendor.io/bar\":\"2\"}}}]", "", "");
    explain(decode(buf));
    assert_true(at("n")->feasible);
    pod_json(buf, sizeof(buf), "ext2", NULL, "",
             "[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{\"example.com/bar\":\"1\"}}}]", "", "");
    explain(decode(buf));
    assert_string_equal(at("n")->reasons, "Insufficient example.com/bar");
}

/* ebb_sched_predict: the replacement of a pod placed with the pod gone (and
 * the pods the cache hid since), and everything as it was afterwards. */
static void test_predict_leaves_no_trace(void **state)
{
    struct ebb_sched_result r, r2;
    struct ebb_pod *big, *leaving, *gone, *probe;

    (void)state;
    three_nodes();
    bound("a-fill", "a", "", "3", "1Gi", "");
    bound("b-fill", "b", "", "2500m", "1Gi", "");
    bound("c-fill", "c", "", "3500m", "1Gi", "");
    start();
    leaving = cached("a-fill");
    gone = cached("c-fill");
    assert_non_null(leaving);
    /* 3 cpu fits nowhere while a-fill is there: with it gone, back on a */
    big = pending("", "3", "1Gi", "", "");
    assert_int_equal(ebb_sched_schedule(sched, big, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_UNSCHEDULABLE);
    assert_int_equal(ebb_sched_predict(sched, leaving, big, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_PLACED);
    assert_string_equal(r.node->name, "a");
    /* a-fill is counted again: the same pod still fits nowhere */
    assert_false(leaving->flags & EBB_POD_GONE);
    assert_int_equal(ebb_sched_schedule(sched, big, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_UNSCHEDULABLE);
    /* a pod the cycle evicted (hidden) is gone from the prediction too:
     * c has the most room once c-fill went, and a-fill still leaves */
    ebb_cache_hide_pod(cache, gone);
    probe = pending("", "1", "1Gi", "", "");
    assert_int_equal(ebb_sched_predict(sched, leaving, probe, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_PLACED);
    assert_true(strcmp(r.node->name, "c") == 0 || strcmp(r.node->name, "a") == 0);
    /* twice in a row, the same answer; and a placement after it sees the
     * hidden pod gone, as after ebb_sched_sync, and a-fill where it is */
    assert_int_equal(ebb_sched_predict(sched, leaving, probe, &r2), 0);
    assert_ptr_equal(r.node, r2.node);
    assert_int_equal(ebb_sched_schedule(sched, big, &r), 0);
    assert_int_equal(r.status, EBB_SCHED_PLACED);
    assert_string_equal(r.node->name, "c");
}

/* ---- the search's arithmetic and shortcuts ---------------------------------------- */

static uint64_t test_rng = 0x2545f4914f6cdd1dull;

static uint64_t next_rand(void)
{
    test_rng ^= test_rng << 13;
    test_rng ^= test_rng >> 7;
    test_rng ^= test_rng << 17;
    return test_rng;
}

static int64_t scaled_ref(int64_t a, int64_t b)
{
    return (int64_t)((ebb__i128)a * EBB_SCHED_MAX_SCORE / b);
}

/* a * 100 / b through a double division where it is exact: the same
 * quotient as 128-bit integers, at the edges of that range, just below a
 * whole quotient, and over random pairs of every magnitude. */
static void test_scaled_exact(void **state)
{
    static const int64_t edge[][2] = {
        { 0, 1 }, { 1, 1 }, { 1, 3 }, { 2, 3 }, { 99, 100 }, { 1, 100 }, { 1, 101 },
        { (1LL << 46) - 2, (1LL << 46) - 1 }, { (1LL << 46) - 1, (1LL << 46) - 1 },
        { (1LL << 46) - 1, 1LL << 46 }, { 1LL << 46, 1LL << 46 }, { 1, (1LL << 46) - 1 },
        { INT64_MAX / 100, INT64_MAX / 100 + 1 }, { INT64_MAX / 100 + 1, INT64_MAX },
        { INT64_MAX - 1, INT64_MAX }, { INT64_MAX, INT64_MAX },
        { 64LL << 30, 64LL << 30 }, { (64LL << 30) - 1, 64LL << 30 }, { 1500, 4000 },
    };
    (void)state;
    for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
        assert_int_equal(ebb__sched_scaled(edge[i][0], edge[i][1]), scaled_ref(edge[i][0], edge[i][1]));
    /* b = 100m + 1, a = km: a * 100 / b = k - k / b, a hair below k */
    for (int i = 0; i < 200000; i++) {
        int64_t m = (int64_t)(next_rand() % (((1LL << 46) - 1) / 100)), k = 1 + (int64_t)(next_rand() % 100);
        int64_t a = k * m, b = 100 * m + 1;
        if (a > b)
            continue;
        assert_int_equal(ebb__sched_scaled(a, b), scaled_ref(a, b));
        assert_int_equal(ebb__sched_scaled(a, b), m == 0 ? 0 : k - 1);
    }
    for (int i = 0; i < 1000000; i++) {
        int bits = 1 + (int)(next_rand() % 63);
        int64_t b = (int64_t)(next_rand() >> (64 - bits)) | 1;
        int64_t a = (int64_t)(next_rand() % (uint64_t)b);
        if (next_rand() % 8 == 0)
            a = b - (int64_t)(next_rand() % 4 < (uint64_t)b ? next_rand() % 4 : 0);
        assert_int_equal(ebb__sched_scaled(a, b), scaled_ref(a, b));
    }
}

/* The search adds some plugins' scores to the totals directly (no node
 * tainted, cpu and memory from the node's record, a plugin that scores
 * nothing); explain always takes the general path. On a cluster small
 * enough that the search scores every feasible node, both must agree on
 * the winner's total for every kind of pod, in both versions. */
static void test_search_totals_match_explain(void **state)
{
    static const char *pods[][3] = {   /* labels, extra spec, requests ("cpu mem") */
        { "", "", "" },
        { "", "", "500m 1Gi" },
        { "", "", "3 6Gi" },
        { "", "\"nodeSelector\":{\"disk\":\"ssd\"}", "100m 64Mi" },   /* no tainted node feasible */
        { "\"app\":\"web\"", "", "100m 128Mi" },
        { "", "\"tolerations\":[{\"key\":\"soft\",\"operator\":\"Exists\"}]", "200m 256Mi" },
        { "", "\"tolerations\":[{\"key\":\"hard\",\"operator\":\"Exists\"}]", "200m 256Mi" },
        { "", "\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
              "{\"weight\":40,\"preference\":{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"In\","
              "\"values\":[\"ssd\"]}]}}]}}", "300m 512Mi" },
        { "\"app\":\"web\"", "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"" ZONE "\","
              "\"whenUnsatisfiable\":\"ScheduleAnyway\",\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}]",
          "100m 64Mi" },
        { "\"app\":\"api\"", "\"affinity\":{\"podAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":"
              "[{\"weight\":50,\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
              "\"topologyKey\":\"kubernetes.io/hostname\"}}]}}", "100m 64Mi" },
        { "", "\"containers\":[{\"name\":\"c\",\"image\":\"repo/big:2\"}]", "" },
    };
    static const int versions[] = { EBB_SCHED_LATEST, EBB_SCHED_V1_25 };
    char name[16], labels[256], spec[128], status[256];
    (void)state;
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof(name), "n%02d", i);
        snprintf(labels, sizeof(labels), "\"" ZONE "\":\"z%d\"%s", i % 3, i % 4 == 0 ? ",\"disk\":\"ssd\"" : "");
        snprintf(spec, sizeof(spec), "%s",
                 i == 5 ? "\"taints\":[{\"key\":\"soft\",\"effect\":\"PreferNoSchedule\"}]"
                 : i == 7 ? "\"taints\":[{\"key\":\"hard\",\"effect\":\"NoSchedule\"}]" : "");
        snprintf(status, sizeof(status), "%s",
                 i % 5 == 1 ? "\"images\":[{\"names\":[\"repo/big:2\"],\"sizeBytes\":600000000}]" : "");
        node(name, i % 2 ? "8" : "4", i % 3 ? "16Gi" : "8Gi", labels, spec, status);
    }
    bound("db1", "n02", "\"app\":\"db\"", "1", "2Gi", "");
    bound("web1", "n03", "\"app\":\"web\"", "2", "1Gi", "");
    bound("web2", "n04", "\"app\":\"web\"", "500m", "3Gi", "");
    bound("x1", "n09", "", "3", "10Gi", "");
    for (size_t v = 0; v < 2; v++) {
        restart(versions[v]);
        for (size_t k = 0; k < sizeof(pods) / sizeof(pods[0]); k++) {
            char cpu[16] = "", mem[16] = "";
            struct ebb_sched_result r;
            struct ebb_pod *p;
            int64_t best = INT64_MIN;
            size_t feasible = 0;
            sscanf(pods[k][2], "%15s %15s", cpu, mem);
            if (strncmp(pods[k][1], "\"containers\"", 12) == 0) {
                char buf[2048];
                snprintf(buf, sizeof(buf),
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"img-%zu\","
                         "\"namespace\":\"default\",\"uid\":\"u-img-%zu\"},\"spec\":{%s},\"status\":{\"phase\":"
                         "\"Pending\"}}", v, v, pods[k][1]);
                p = decode(buf);
            } else {
                p = pending(pods[k][0], cpu, mem, pods[k][1], "");
            }
            explain(p);
            for (size_t i = 0; i < nev; i++) {
                if (!ev[i].feasible)
                    continue;
                feasible++;
                if (ev[i].total > best)
                    best = ev[i].total;
            }
            assert_int_equal(ebb_sched_schedule(sched, p, &r), 0);
            if (feasible == 0) {
                assert_int_equal(r.status, EBB_SCHED_UNSCHEDULABLE);
                continue;
            }
            assert_int_equal(r.status, EBB_SCHED_PLACED);
            assert_int_equal(r.feasible, feasible);
            if (feasible > 1) {
                if (r.score != best)
                    fail_msg("version %zu pod %zu: search total %lld, explain's best %lld", v, k,
                             (long long)r.score, (long long)best);
                assert_int_equal(at(r.node->name)->total, best);
            }
            /* keep the incoming list short: the pods are done with */
            ebb_pod_free(incoming[--nincoming]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_e1_least_allocated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e2_nonzero_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e3_most_allocated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e4_e5_requested_to_capacity_ratio, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e6_rtcr_excludes_zero_scores, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e7_balanced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e8_balanced_three_resources, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e9_best_effort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e10_image_locality, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e11_taint_toleration_score, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e12_node_affinity_score, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e13_e14_pod_affinity_score, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e15_existing_pods_terms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e16_spread_schedule_anyway, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e17_system_default_spreading, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e18_spread_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e19_min_domains, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spread_inclusion_policies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e20_pod_affinity_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_terms_per_template, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_anti_affinity_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e21_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e22_other_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_affinity_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e23_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e24_nodes_to_find, setup, teardown),
        cmocka_unit_test_setup_teardown(test_e25_totals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rotation_and_percentage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seeded_ties, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_counts_nonzero_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_forgets_nonzero_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_and_sync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profiles_and_gates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_on_demo_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_predict_leaves_no_trace, setup, teardown),
        cmocka_unit_test(test_scaled_exact),
        cmocka_unit_test_setup_teardown(test_search_totals_match_explain, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
