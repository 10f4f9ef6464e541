/* The evictor: refusals and their order (filtered, limits total -> node ->
 * namespace, PDB as the API server decides it), per-cycle counters, pods
 * hidden once evicted. Driven through the engine with a native plugin that
 * asks to evict a fixed list of pods. */
#include "fixtures.h"

#include "ebb.h"
#include "ebb/simulate.h"
#include "ebb/snapshot.h"
#include "ebb/lua.h"

#define NOW "2026-11-22T12:00:00Z"

/* ---- a tiny cluster ------------------------------------------------------ */

static void node(const char *name)
{
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"uid-%s\","
        "\"labels\":{\"kubernetes.io/hostname\":\"%s\"}},\"status\":{\"allocatable\":{\"cpu\":\"4\","
        "\"memory\":\"16Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
        name, name, name);
}

/* A ReplicaSet pod; phase and readiness as given. */
static void pod(const char *ns, const char *name, const char *node_name, const char *app,
                const char *phase, bool ready)
{
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
        "\"uid\":\"uid-%s-%s\",\"creationTimestamp\":\"2026-11-01T00:00:00Z\","
        "\"labels\":{\"app\":\"%s\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
        "\"kind\":\"ReplicaSet\",\"name\":\"%s-5d8f\",\"uid\":\"rs-%s\",\"controller\":true}]},"
        "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"main\",\"image\":\"registry.example.com/%s:1.0\","
        "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}}}]},"
        "\"status\":{\"phase\":\"%s\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
        name, ns, ns, name, app, app, app, node_name, app, phase, ready ? "True" : "False");
}

static void pdb(const char *ns, const char *name, const char *selector_json, int allowed,
                int healthy, int desired, int generation, int observed)
{
    fx_add("{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"%s\","
        "\"namespace\":\"%s\",\"generation\":%d},\"spec\":{\"minAvailable\":1%s%s},"
        "\"status\":{\"disruptionsAllowed\":%d,\"currentHealthy\":%d,\"desiredHealthy\":%d,"
        "\"expectedPods\":%d,\"observedGeneration\":%d}}",
        name, ns, generation, selector_json ? ",\"selector\":" : "", selector_json ? selector_json : "",
        allowed, healthy, desired, healthy, observed);
}

static void begin(void)
{
    fx_begin();
}

static struct ebb_cache *end(void)
{
    return fx_load();
}

/* ---- a plugin that evicts what it is told -------------------------------- */

static const char *targets[32];     /* "ns/name" */
static int results[32];
static int ntargets;

static int evict_create(const struct ebb_val *args, void **state, struct ebb_error *err)
{
    *state = NULL;
    return 0;
}

static int evict_targets(void *state, struct ebb_ctx *ctx, struct ebb_node *const *nodes, size_t n,
                         struct ebb_error *err)
{
    struct ebb_cache *c = ebb_ctx_cache(ctx);
    for (int i = 0; i < ntargets; i++) {
        char ns[64], name[128];
        const char *slash = strchr(targets[i], '/');
        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - targets[i]), targets[i]);
        snprintf(name, sizeof(name), "%s", slash + 1);
        struct ebb_pod *p = ebb_cache_pod(c, ebb_str_find(ns, strlen(ns)), ebb_str_find(name, strlen(name)));
        assert_non_null(p);
        results[i] = ebb_ctx_evict(ctx, p, "test");
    }
    return 0;
}

static const struct ebb_native_plugin evictor_test_plugin = {
    .name = "EvictTargets",
    .create = evict_create,
    .deschedule = evict_targets,
};

static struct ebb_engine *run(const char *policy_top, int cycles)
{
    char policy[2048];
    struct ebb_engine_opts eo = { .mode = EBB_MODE_SIMULATE, .home = ".", .scripts = ebb_lua_plugins() };
    struct ebb_engine *e = NULL;
    struct ebb_cache *c = NULL;
    struct ebb_policy *pol = NULL;
    struct ebb_error err = { 0 };
    int64_t now;

    snprintf(policy, sizeof(policy),
             "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n%s"
             "profiles:\n- name: p\n  pluginConfig:\n  - name: EvictTargets\n"
             "  plugins:\n    deschedule:\n      enabled: [EvictTargets]\n",
             policy_top ? policy_top : "");
    assert_int_equal(ebb_time_parse(NOW, &now), 0);
    eo.now = now;
    assert_int_equal(ebb_engine_create(&eo, &e, &err), 0);
    assert_int_equal(ebb_engine_load_builtins(e, &err), 0);
    assert_int_equal(ebb_engine_register_native(e, &evictor_test_plugin, &err), 0);
    c = end();
    ebb_engine_set_cache(e, c);
    if (ebb_policy_parse(policy, strlen(policy), "policy.yaml", &pol, &err) != 0)
        fail_msg("policy: %d %s: %s", err.line, err.field, err.msg);
    if (ebb_engine_set_policy(e, pol, &err) != 0)
        fail_msg("set_policy: %d %s: %s", err.line, err.field, err.msg);
    for (int i = 0; i < cycles; i++)
        assert_int_equal(ebb_engine_run_cycle(e), 0);
    return e;
}

static void three_nodes(void)
{
    begin();
    node("node-a");
    node("node-b");
    node("node-c");
}

/* ---- tests -------------------------------------------------------------- */

static void limits_apply_total_then_node_then_namespace(void **state)
{
    struct ebb_engine *e;

    three_nodes();
    pod("shop", "a1", "node-a", "web", "Running", true);
    pod("shop", "a2", "node-a", "web", "Running", true);
    pod("shop", "b1", "node-b", "web", "Running", true);
    pod("ads", "b2", "node-b", "ads", "Running", true);
    pod("ads", "c1", "node-c", "ads", "Running", true);
    pod("ads", "c2", "node-c", "ads", "Running", true);
    ntargets = 6;
    const char *t[] = { "shop/a1", "shop/a2", "shop/b1", "ads/b2", "ads/c1", "ads/c2" };
    memcpy(targets, t, sizeof(t));
    e = run("maxNoOfPodsToEvictPerNode: 1\nmaxNoOfPodsToEvictPerNamespace: 2\nmaxNoOfPodsToEvictTotal: 3\n", 1);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_NODE_LIMIT);       /* node-a has one */
    assert_int_equal(results[2], EBB_WHY_OK);                /* shop: 2nd of 2 */
    assert_int_equal(results[3], EBB_WHY_NODE_LIMIT);        /* node-b has one */
    assert_int_equal(results[4], EBB_WHY_OK);                /* third overall */
    assert_int_equal(results[5], EBB_WHY_TOTAL_LIMIT);       /* total before node */
    struct ebb_plan *p = ebb_engine_plan(e);
    assert_int_equal(p->nevictions, 3);
    assert_string_equal(p->evictions[0].pod, "shop/a1");
    assert_string_equal(p->evictions[2].pod, "ads/c1");
    assert_int_equal(p->nrefusals, 3);
    assert_string_equal(p->refusals[0].why, "node-limit");
    assert_string_equal(p->refusals[2].why, "total-limit");
    ebb_engine_destroy(e);
}

static void namespace_limit(void **state)
{
    struct ebb_engine *e;

    three_nodes();
    pod("shop", "a1", "node-a", "web", "Running", true);
    pod("shop", "b1", "node-b", "web", "Running", true);
    ntargets = 2;
    targets[0] = "shop/a1";
    targets[1] = "shop/b1";
    e = run("maxNoOfPodsToEvictPerNamespace: 1\n", 1);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_NAMESPACE_LIMIT);
    ebb_engine_destroy(e);
}

static void zero_limit_evicts_nothing(void **state)
{
    struct ebb_engine *e;

    three_nodes();
    pod("shop", "a1", "node-a", "web", "Running", true);
    ntargets = 1;
    targets[0] = "shop/a1";
    e = run("maxNoOfPodsToEvictTotal: 0\n", 1);
    assert_int_equal(results[0], EBB_WHY_TOTAL_LIMIT);
    assert_int_equal(ebb_engine_plan(e)->nevictions, 0);
    ebb_engine_destroy(e);
}

static void counters_reset_every_cycle(void **state)
{
    struct ebb_engine *e;

    three_nodes();
    pod("shop", "a1", "node-a", "web", "Running", true);
    pod("shop", "a2", "node-a", "web", "Running", true);
    ntargets = 2;
    targets[0] = "shop/a1";
    targets[1] = "shop/a2";
    /* cycle 1 evicts a1 and is refused a2; a1 is then gone for good, so the
     * plugin's own lookup of a1 in cycle 2 must not happen: evict a2 only */
    e = run("maxNoOfPodsToEvictPerNode: 1\n", 1);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_NODE_LIMIT);
    ntargets = 1;
    targets[0] = "shop/a2";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    struct ebb_plan *p = ebb_engine_plan(e);
    assert_int_equal(p->nevictions, 2);
    assert_int_equal(p->evictions[1].cycle, 2);
    /* simulation purges what it evicted between cycles */
    assert_null(ebb_cache_pod(ebb_engine_cache(e), ebb_str_find("shop", 4), ebb_str_find("a1", 2)));
    ebb_engine_destroy(e);
}

static void evicting_twice_is_not_found(void **state)
{
    struct ebb_engine *e;

    three_nodes();
    pod("shop", "a1", "node-a", "web", "Running", true);
    ntargets = 2;
    targets[0] = "shop/a1";
    targets[1] = "shop/a1";
    e = run(NULL, 1);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_NOT_FOUND);
    ebb_engine_destroy(e);
}

static void pdb_allows_then_refuses(void **state)
{
    struct ebb_engine *e;
    struct ebb_plan *p;

    three_nodes();
    pod("shop", "w1", "node-a", "web", "Running", true);
    pod("shop", "w2", "node-b", "web", "Running", true);
    pod("shop", "w3", "node-c", "web", "Running", true);
    pdb("shop", "web-pdb", "{\"matchLabels\":{\"app\":\"web\"}}", 1, 3, 2, 1, 1);
    ntargets = 3;
    const char *t[] = { "shop/w1", "shop/w2", "shop/w3" };
    memcpy(targets, t, sizeof(t));
    e = run(NULL, 1);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_PDB);
    assert_int_equal(results[2], EBB_WHY_PDB);
    p = ebb_engine_plan(e);
    assert_non_null(strstr(p->refusals[0].detail, "The disruption budget web-pdb needs 2 healthy pods and has 2 currently"));
    ebb_engine_destroy(e);
}

static void pdb_skipped_for_pending_and_unready(void **state)
{
    struct ebb_engine *e;

    three_nodes();
    pod("shop", "pending", "node-a", "web", "Pending", false);
    pod("shop", "unready", "node-b", "web", "Running", false);
    pod("shop", "ready", "node-c", "web", "Running", true);
    /* no disruption allowed, but enough healthy pods: unready pods may go */
    pdb("shop", "web-pdb", "{\"matchLabels\":{\"app\":\"web\"}}", 0, 2, 2, 1, 1);
    ntargets = 3;
    const char *t[] = { "shop/pending", "shop/unready", "shop/ready" };
    memcpy(targets, t, sizeof(t));
    e = run(NULL, 1);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_OK);
    assert_int_equal(results[2], EBB_WHY_PDB);
    ebb_engine_destroy(e);
}

static void pdb_not_observed_yet_refuses(void **state)
{
    struct ebb_engine *e;

    three_nodes();
    pod("shop", "w1", "node-a", "web", "Running", true);
    pdb("shop", "web-pdb", "{\"matchLabels\":{\"app\":\"web\"}}", 5, 3, 1, 2, 1);
    ntargets = 1;
    targets[0] = "shop/w1";
    e = run(NULL, 1);
    assert_int_equal(results[0], EBB_WHY_PDB);
    assert_non_null(strstr(ebb_engine_plan(e)->refusals[0].detail, "still being processed"));
    ebb_engine_destroy(e);
}

/* Between simulated cycles the budgets are recounted from the pods as the
 * disruption controller would: Ready, matching, not evicted; allowed =
 * healthy - desired, never below 0; an unprocessed budget keeps its status. */
static void pdb_settle_recounts_as_the_disruption_controller(void **state)
{
    struct ebb_engine *e;

    three_nodes();
    /* the recorded status is stale: two healthy, nothing allowed */
    pod("shop", "w1", "node-a", "web", "Running", true);
    pod("shop", "w2", "node-b", "web", "Running", true);
    pod("shop", "w3", "node-c", "web", "Running", true);
    pod("shop", "w4", "node-c", "web", "Running", true);
    pod("shop", "w5", "node-a", "web", "Running", false);
    pdb("shop", "web-pdb", "{\"matchLabels\":{\"app\":\"web\"}}", 0, 2, 2, 1, 1);
    pod("ads", "a1", "node-b", "ads", "Running", true);
    pdb("ads", "ads-pdb", "{\"matchLabels\":{\"app\":\"ads\"}}", 5, 1, 0, 2, 1);
    ntargets = 0;
    e = run(NULL, 0);
    assert_int_equal(ebb_engine_settle_pdbs(e), 0);
    /* four Ready (w5 is not): 4 - 2 = 2 disruptions */
    ntargets = 4;
    const char *t[] = { "shop/w1", "shop/w2", "shop/w3", "ads/a1" };
    memcpy(targets, t, sizeof(t));
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_OK);
    assert_int_equal(results[2], EBB_WHY_PDB);
    assert_int_equal(results[3], EBB_WHY_PDB);
    assert_non_null(strstr(ebb_engine_plan(e)->refusals[0].detail, "needs 2 healthy pods and has 2 currently"));
    assert_non_null(strstr(ebb_engine_plan(e)->refusals[1].detail, "still being processed"));
    /* the evicted two no longer count: 2 - 2 = 0, never below */
    assert_int_equal(ebb_engine_settle_pdbs(e), 0);
    ntargets = 1;
    targets[0] = "shop/w3";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_PDB);
    ebb_engine_destroy(e);
}

static void two_pdbs_are_an_api_error_and_empty_selectors_match_nothing(void **state)
{
    struct ebb_engine *e;

    three_nodes();
    pod("shop", "w1", "node-a", "web", "Running", true);
    pod("ads", "a1", "node-b", "ads", "Running", true);
    pdb("shop", "one", "{\"matchLabels\":{\"app\":\"web\"}}", 1, 3, 1, 1, 1);
    pdb("shop", "two", "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Exists\"}]}", 1, 3, 1, 1, 1);
    pdb("ads", "all", "{}", 0, 1, 1, 1, 1);          /* empty: matches nothing here */
    pdb("ads", "nil", NULL, 0, 1, 1, 1, 1);          /* nil: matches nothing */
    ntargets = 2;
    targets[0] = "shop/w1";
    targets[1] = "ads/a1";
    e = run(NULL, 1);
    assert_int_equal(results[0], EBB_WHY_API_ERROR);
    assert_int_equal(results[1], EBB_WHY_OK);
    ebb_engine_destroy(e);
}

static void protected_pods_are_filtered(void **state)
{
    struct ebb_engine *e;

    three_nodes();
    pod("shop", "w1", "node-a", "web", "Running", true);
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"bare\",\"namespace\":\"shop\","
        "\"uid\":\"u-bare\",\"creationTimestamp\":\"2026-11-01T00:00:00Z\"},\"spec\":{\"nodeName\":\"node-a\","
        "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]},\"status\":{\"phase\":\"Running\"}}");
    ntargets = 2;
    targets[0] = "shop/bare";
    targets[1] = "shop/w1";
    e = run(NULL, 1);
    assert_int_equal(results[0], EBB_WHY_FILTERED);
    assert_int_equal(results[1], EBB_WHY_OK);
    assert_string_equal(ebb_engine_plan(e)->refusals[0].why, "filtered");
    ebb_engine_destroy(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(limits_apply_total_then_node_then_namespace),
        cmocka_unit_test(namespace_limit),
        cmocka_unit_test(zero_limit_evicts_nothing),
        cmocka_unit_test(counters_reset_every_cycle),
        cmocka_unit_test(evicting_twice_is_not_found),
        cmocka_unit_test(pdb_allows_then_refuses),
        cmocka_unit_test(pdb_skipped_for_pending_and_unready),
        cmocka_unit_test(pdb_not_observed_yet_refuses),
        cmocka_unit_test(pdb_settle_recounts_as_the_disruption_controller),
        cmocka_unit_test(two_pdbs_are_an_api_error_and_empty_selectors_match_nothing),
        cmocka_unit_test(protected_pods_are_filtered),
    };
    ebb_log_level = EBB_LOG_OFF;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
