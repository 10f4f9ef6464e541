/* default_evictor.c: Filter's answer is kept per pod while the cache's
 * content stays the same, and asked again when it changes; minReplicas
 * and minPodAge are never kept (watch events and the clock change them in
 * a cycle). Driven through the engine with a native plugin that asks. */
#include "fixtures.h"

#include <cjson/cJSON.h>

#include "ebb.h"
#include "ebb/cache.h"
#include "ebb/config.h"
#include "ebb/snapshot.h"
#include "ebb/lua.h"

#define NOW "2026-11-22T12:00:00Z"

static void pod(const char *name)
{
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"shop\","
        "\"uid\":\"u-%s\",\"creationTimestamp\":\"2026-11-01T00:00:00Z\",\"labels\":{\"app\":\"web\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"web-rs\","
        "\"uid\":\"rs-web\",\"controller\":true}]},\"spec\":{\"nodeName\":\"n1\",\"containers\":"
        "[{\"name\":\"c\",\"image\":\"web:1\"}]},\"status\":{\"phase\":\"Running\","
        "\"startTime\":\"2026-11-01T00:00:00Z\"}}",
        name, name);
}

static const char pdb_text[] =
    "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"web\","
    "\"namespace\":\"shop\"},\"spec\":{\"minAvailable\":1,\"selector\":{\"matchLabels\":"
    "{\"app\":\"web\"}}},\"status\":{\"disruptionsAllowed\":5,\"currentHealthy\":3,"
    "\"desiredHealthy\":1,\"expectedPods\":3,\"observedGeneration\":1}}";

/* What the plugin saw, in order. */
static bool answers[8];
static int nanswers;
static int which;       /* the test running */

static struct ebb_pod *P(struct ebb_cache *c, const char *name)
{
    return ebb_cache_pod(c, ebb_str_find("shop", 4), ebb_str_find(name, strlen(name)));
}

static int ask_create(const struct ebb_val *args, void **state, struct ebb_error *err)
{
    *state = NULL;
    return 0;
}

static int ask(void *state, struct ebb_ctx *ctx, struct ebb_node *const *nodes, size_t n,
               struct ebb_error *err)
{
    struct ebb_cache *c = ebb_ctx_cache(ctx);

    nanswers = 0;
    if (which == 0) {
        /* PodsWithoutPDB: w1 has none, then one comes (a watch event) */
        cJSON *j = cJSON_Parse(pdb_text);
        struct ebb_object o = { 0 };
        struct ebb_error e = { 0 };
        answers[nanswers++] = ebb_ctx_filter(ctx, P(c, "w1"));
        answers[nanswers++] = ebb_ctx_filter(ctx, P(c, "w1"));
        assert_int_equal(ebb_decode_object(j, &o, &e), 0);
        cJSON_Delete(j);
        assert_int_equal(ebb_cache_put(c, &o), 0);
        answers[nanswers++] = ebb_ctx_filter(ctx, P(c, "w1"));
    } else {
        /* minReplicas 2: w1 passes before and after w2 is evicted (hidden):
         * an evicted pod counts for its owner for the rest of the cycle, as
         * upstream's informer index still holds it */
        answers[nanswers++] = ebb_ctx_filter(ctx, P(c, "w1"));
        assert_int_equal(ebb_ctx_evict(ctx, P(c, "w2"), "test"), EBB_WHY_OK);
        answers[nanswers++] = ebb_ctx_filter(ctx, P(c, "w1"));
    }
    return 0;
}

static const struct ebb_native_plugin ask_plugin = {
    .name = "Ask",
    .create = ask_create,
    .deschedule = ask,
};

static void run(const char *evictor_args)
{
    char policy[2048];
    struct ebb_engine_opts eo = { .mode = EBB_MODE_SIMULATE, .home = ".", .scripts = ebb_lua_plugins() };
    struct ebb_engine *e = NULL;
    struct ebb_cache *c = NULL;
    struct ebb_policy *pol = NULL;
    struct ebb_error err = { 0 };
    int64_t now;

    fx_begin();
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":"
        "{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"110\"}}}");
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n2\"},\"status\":"
        "{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"110\"}}}");
    pod("w1");
    pod("w2");
    snprintf(policy, sizeof(policy),
             "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n"
             "  pluginConfig:\n  - name: DefaultEvictor\n    args: %s\n  - name: Ask\n"
             "  plugins:\n    deschedule:\n      enabled: [Ask]\n", evictor_args);
    assert_int_equal(ebb_time_parse(NOW, &now), 0);
    eo.now = now;
    assert_int_equal(ebb_engine_create(&eo, &e, &err), 0);
    assert_int_equal(ebb_engine_load_builtins(e, &err), 0);
    assert_int_equal(ebb_engine_register_native(e, &ask_plugin, &err), 0);
    c = fx_load();
    ebb_engine_set_cache(e, c);
    if (ebb_policy_parse(policy, strlen(policy), "policy.yaml", &pol, &err) != 0)
        fail_msg("policy: %d %s: %s", err.line, err.field, err.msg);
    if (ebb_engine_set_policy(e, pol, &err) != 0)
        fail_msg("set_policy: %d %s: %s", err.line, err.field, err.msg);
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    ebb_engine_destroy(e);
}

static void a_changed_cache_is_asked_again(void **state)
{
    (void)state;
    which = 0;
    run("{podProtections: {extraEnabled: [PodsWithoutPDB]}}");
    assert_int_equal(nanswers, 3);
    assert_false(answers[0]);
    assert_false(answers[1]);
    assert_true(answers[2]);   /* the PDB that came covers it */
}

static void min_replicas_counts_evicted_pods(void **state)
{
    (void)state;
    which = 1;
    run("{minReplicas: 2}");
    assert_int_equal(nanswers, 2);
    assert_true(answers[0]);
    assert_true(answers[1]);    /* w2, evicted, still counts */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_changed_cache_is_asked_again),
        cmocka_unit_test(min_replicas_counts_evicted_pods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
