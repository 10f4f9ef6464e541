/* LoopGuard (engine/core/loopguard.c) and the memory the evictor fills:
 * driven through the engine with a native plugin that asks to evict a fixed
 * list of pods and a predictor that answers what the test says, so each
 * rule is seen alone (the scheduler model's answers are the Lua specs'). */
#include <cjson/cJSON.h>

#include "fixtures.h"

#include "ebb.h"
#include "ebb/evmemory.h"
#include "ebb/lua.h"

#define NOW "2026-11-22T12:00:00Z"

/* A uid as the API server writes them, derived from the object's name. */
static const char *uid_of(const char *name)
{
    static char buf[8][40];
    static int next;
    uint64_t h = 1469598103934665603ull;
    char *b = buf[next++ % 8];

    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    snprintf(b, 40, "%08x-%04x-4%03x-8%03x-%012llx", (unsigned)(h >> 32), (unsigned)(h >> 16) & 0xffff,
             (unsigned)h & 0xfff, (unsigned)(h >> 20) & 0xfff, (unsigned long long)(h & 0xffffffffffffull));
    return b;
}

static void node(const char *name)
{
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"uid-%s\","
           "\"labels\":{\"kubernetes.io/hostname\":\"%s\"}},\"status\":{\"allocatable\":{\"cpu\":\"4\","
           "\"memory\":\"16Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
           name, name, name);
}

/* A Deployment's pod (ReplicaSet web-5d8f7c9b6, pod-template-hash 5d8f7c9b6). */
#define POD_JSON                                                                                    \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"shop\","         \
    "\"uid\":\"%s\",\"creationTimestamp\":\"%s\",\"labels\":{\"app\":\"web\","                        \
    "\"pod-template-hash\":\"5d8f7c9b6\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","             \
    "\"kind\":\"ReplicaSet\",\"name\":\"web-5d8f7c9b6\",\"uid\":\"rs-web\",\"controller\":true}]},"     \
    "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"main\",\"image\":\"registry.example.com/web:1.0\"," \
    "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}}}]},"                          \
    "\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}"

static void pod(const char *name, const char *node_name, const char *created, bool ready)
{
    fx_add(POD_JSON, name, uid_of(name), created, node_name, created, ready ? "True" : "False");
}

/* The same pod arriving later, as the watch brings it: after every pod the
 * cache had. */
static void pod_arrives(struct ebb_engine *e, const char *name, const char *node_name, const char *created)
{
    struct ebb_object obj = { 0 };
    struct ebb_error err = { 0 };
    char text[2048];
    cJSON *j;

    snprintf(text, sizeof(text), POD_JSON, name, uid_of(name), created, node_name, created, "True");
    assert_non_null(j = cJSON_Parse(text));
    assert_int_equal(ebb_decode_object(j, &obj, &err), 0);
    cJSON_Delete(j);
    assert_int_equal(ebb_cache_put(ebb_engine_cache(e), &obj), 0);
}

static const char *targets[16];
static int results[16];
static int ntargets;

static int targets_create(const struct ebb_val *args, void **state, struct ebb_error *err)
{
    (void)args, (void)err;
    *state = NULL;
    return 0;
}

static int evict_targets(void *state, struct ebb_ctx *ctx, struct ebb_node *const *nodes, size_t n,
                         struct ebb_error *err)
{
    struct ebb_cache *c = ebb_ctx_cache(ctx);

    (void)state, (void)nodes, (void)n, (void)err;
    for (int i = 0; i < ntargets; i++) {
        struct ebb_pod *p = ebb_cache_pod(c, ebb_str_find("shop", 4),
                                          ebb_str_find(targets[i], strlen(targets[i])));
        results[i] = p ? ebb_ctx_evict(ctx, p, "test") : -100;
    }
    return 0;
}

static const struct ebb_native_plugin targets_plugin = {
    .name = "EvictTargets",
    .create = targets_create,
    .deschedule = evict_targets,
};

/* The predictor: where each pod's replacement lands ("-": nowhere). */
static const char *landing[16][2];   /* pod, node */
static int nlanding, npredicted;

static int predict(void *ud, struct ebb_engine *e, struct ebb_pod *pod, struct ebb_prediction *out)
{
    (void)ud, (void)e;
    npredicted++;
    out->status = EBB_PREDICT_GONE;
    for (int i = 0; i < nlanding; i++) {
        if (strcmp(landing[i][0], pod->name) != 0)
            continue;
        if (strcmp(landing[i][1], "-") == 0) {
            out->status = EBB_PREDICT_PENDING;
        } else {
            out->status = EBB_PREDICT_PLACED;
            out->node = ebb_str_find(landing[i][1], strlen(landing[i][1]));
        }
    }
    return 0;
}

static struct ebb_evmem memory;

static struct ebb_engine *engine(const char *guard_args, bool with_memory)
{
    char policy[2048];
    struct ebb_engine_opts eo = { .mode = EBB_MODE_SIMULATE, .home = ".", .scripts = ebb_lua_plugins(),
                                  .memory = with_memory ? &memory : NULL, .predict = predict };
    struct ebb_engine *e = NULL;
    struct ebb_policy *pol = NULL;
    struct ebb_error err = { 0 };

    snprintf(policy, sizeof(policy),
             "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
             "profiles:\n- name: p\n  pluginConfig:\n  - name: EvictTargets\n"
             "  - name: LoopGuard\n    args: %s\n"
             "  plugins:\n    deschedule: {enabled: [EvictTargets]}\n"
             "    filter: {enabled: [LoopGuard]}\n    preEvictionFilter: {enabled: [LoopGuard]}\n",
             guard_args ? guard_args : "{}");
    assert_int_equal(ebb_time_parse(NOW, &eo.now), 0);
    ebb_evmem_init(&memory, 0);
    assert_int_equal(ebb_engine_create(&eo, &e, &err), 0);
    assert_int_equal(ebb_engine_load_builtins(e, &err), 0);
    assert_int_equal(ebb_engine_register_native(e, &targets_plugin, &err), 0);
    ebb_engine_set_cache(e, fx_load());
    if (ebb_policy_parse(policy, strlen(policy), "policy.yaml", &pol, &err) != 0)
        fail_msg("policy: %d %s: %s", err.line, err.field, err.msg);
    if (ebb_engine_set_policy(e, pol, &err) != 0)
        fail_msg("set_policy: %d %s: %s", err.line, err.field, err.msg);
    nlanding = npredicted = 0;
    return e;
}

static void done(struct ebb_engine *e)
{
    ebb_engine_destroy(e);
    ebb_evmem_free(&memory);
}

static const struct ebb_plan_refusal *refusal(struct ebb_engine *e, const char *why)
{
    const struct ebb_plan *p = ebb_engine_plan(e);
    for (size_t i = 0; i < p->nrefusals; i++)
        if (strcmp(p->refusals[i].why, why) == 0)
            return &p->refusals[i];
    return NULL;
}

static void cluster(void)
{
    fx_begin();
    node("node-a");
    node("node-b");
    node("node-c");
    pod("web-5d8f7c9b6-a1", "node-a", "2026-11-01T00:00:00Z", true);
    pod("web-5d8f7c9b6-a2", "node-a", "2026-11-01T00:00:00Z", true);
    pod("web-5d8f7c9b6-b1", "node-b", "2026-11-01T00:00:00Z", true);
    pod("web-5d8f7c9b6-b2", "node-b", "2026-11-01T00:00:00Z", true);
    pod("web-5d8f7c9b6-c1", "node-c", "2026-11-01T00:00:00Z", true);
}

/* Every eviction goes into the memory, keyed by the Deployment. */
static void evictions_are_remembered(void **state)
{
    struct ebb_engine *e;

    (void)state;
    cluster();
    e = engine(NULL, true);
    ntargets = 1;
    targets[0] = "web-5d8f7c9b6-a1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(memory.n, 1);
    assert_string_equal(memory.v[0].kind, "Deployment");
    assert_string_equal(memory.v[0].workload, "web");
    assert_string_equal(memory.v[0].pod, "web-5d8f7c9b6-a1");
    assert_string_equal(memory.v[0].node, "node-a");
    assert_string_equal(memory.v[0].plugin, "EvictTargets");
    assert_string_equal(memory.v[0].profile, "p");
    assert_true(memory.dirty);
    assert_int_equal(npredicted, 1);   /* GONE: nothing said, evicted */
    done(e);
}

/* The replacement lands on the node it leaves: futile, with where. */
static void futile_back_on_its_node(void **state)
{
    struct ebb_engine *e;
    const struct ebb_plan_refusal *r;

    (void)state;
    cluster();
    e = engine(NULL, true);
    landing[0][0] = "web-5d8f7c9b6-a1", landing[0][1] = "node-a";
    nlanding = 1;
    ntargets = 1;
    targets[0] = "web-5d8f7c9b6-a1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_FUTILE);
    assert_int_equal(ebb_engine_plan(e)->nevictions, 0);
    assert_int_equal(memory.n, 0);
    assert_non_null(r = refusal(e, "futile"));
    assert_string_equal(r->plugin, "EvictTargets");
    assert_non_null(strstr(r->detail, "would land back on node-a, the node it leaves"));
    done(e);
}

/* Landing on a node the same plugin took a pod off this cycle: futile;
 * pending or nowhere: not a bounce. */
static void futile_on_a_drained_node(void **state)
{
    struct ebb_engine *e;
    const struct ebb_plan_refusal *r;

    (void)state;
    cluster();
    e = engine("{maxUnavailablePerWorkload: 5}", true);
    landing[0][0] = "web-5d8f7c9b6-a1", landing[0][1] = "node-c";
    landing[1][0] = "web-5d8f7c9b6-b1", landing[1][1] = "node-a";
    landing[2][0] = "web-5d8f7c9b6-c1", landing[2][1] = "-";
    nlanding = 3;
    ntargets = 3;
    targets[0] = "web-5d8f7c9b6-a1";
    targets[1] = "web-5d8f7c9b6-b1";
    targets[2] = "web-5d8f7c9b6-c1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_FUTILE);
    assert_int_equal(results[2], EBB_WHY_OK);
    assert_non_null(r = refusal(e, "futile"));
    assert_non_null(strstr(r->detail, "would land on node-a, a node EvictTargets took 1 pod off"));
    done(e);
}

/* Older pods are staged work; a pod that came since is held for the
 * cooldown, which doubles with each cycle the workload was evicted in. */
static void cooldown_grows(void **state)
{
    struct ebb_engine *e;
    const struct ebb_plan_refusal *r;
    int64_t now;

    (void)state;
    cluster();
    e = engine("{maxUnavailablePerWorkload: 5}", true);
    assert_int_equal(ebb_time_parse(NOW, &now), 0);
    ntargets = 1;
    targets[0] = "web-5d8f7c9b6-a1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    pod_arrives(e, "web-5d8f7c9b6-n1", "node-c", NOW);   /* created at the first eviction */
    /* 5 minutes on: an old pod goes, the new one rests (10m) */
    ebb_engine_set_now(e, now + 300);
    ntargets = 2;
    targets[0] = "web-5d8f7c9b6-b1";
    targets[1] = "web-5d8f7c9b6-n1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_COOLDOWN);
    assert_non_null(r = refusal(e, "cooldown"));
    assert_non_null(strstr(r->detail, "Deployment shop/web was evicted 5m ago"));
    assert_non_null(strstr(r->detail, "cooldown 10m, 5m left"));
    /* 10 minutes after the first, 5 after the second: two cycles, 20m */
    ebb_engine_set_now(e, now + 600);
    ntargets = 1;
    targets[0] = "web-5d8f7c9b6-n1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_COOLDOWN);
    /* 25 minutes after the second: free */
    ebb_engine_set_now(e, now + 300 + 1500);
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    done(e);
}

/* A pod there when an eviction is made is before it, even when created in
 * the same second (creationTimestamp has seconds): staged work, not held; a
 * pod that comes after, in that second too, is held; the same once the
 * memory is read back by another run. */
static void same_second_siblings(void **state)
{
    struct ebb_engine *e;
    int64_t now;

    (void)state;
    cluster();
    pod("web-5d8f7c9b6-s1", "node-c", NOW, true);
    pod("web-5d8f7c9b6-s2", "node-c", NOW, true);
    e = engine("{maxUnavailablePerWorkload: 5}", true);
    assert_int_equal(ebb_time_parse(NOW, &now), 0);
    ntargets = 1;
    targets[0] = "web-5d8f7c9b6-a1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(memory.v[0].npeers, 2);   /* s1, s2 */
    /* the replacement, created in the eviction's second */
    pod_arrives(e, "web-5d8f7c9b6-n1", "node-b", NOW);
    ebb_engine_set_now(e, now + 300);
    ntargets = 2;
    targets[0] = "web-5d8f7c9b6-s1";
    targets[1] = "web-5d8f7c9b6-n1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_COOLDOWN);
    /* as read back from the ConfigMap by the next run: the same order */
    {
        size_t len;
        char *text = ebb_evmem_encode(&memory, 0, &len);
        struct ebb_error err = { 0 };
        assert_non_null(text);
        assert_int_equal(ebb_evmem_decode(&memory, text, len, "test", &err), 0);
        free(text);
    }
    ebb_engine_set_now(e, now + 600);
    ntargets = 2;
    targets[0] = "web-5d8f7c9b6-n1";   /* after: held */
    targets[1] = "web-5d8f7c9b6-s2";   /* the eviction's second, there before it */
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_COOLDOWN);
    assert_int_equal(results[1], EBB_WHY_OK);
    done(e);
}

/* A replacement that landed back (BOUNCED): maxCooldown at once. */
static void bounce_means_max_cooldown(void **state)
{
    struct ebb_engine *e;
    const struct ebb_plan_refusal *r;
    int64_t now;
    ebb_str ns, a1, n1, na;

    (void)state;
    cluster();
    pod("web-5d8f7c9b6-n1", "node-a", NOW, true);
    e = engine("{maxUnavailablePerWorkload: 5, maxCooldown: 2h}", true);
    assert_int_equal(ebb_time_parse(NOW, &now), 0);
    ntargets = 1;
    targets[0] = "web-5d8f7c9b6-a1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    ns = ebb_str_cstr("shop"), a1 = ebb_str_cstr("web-5d8f7c9b6-a1");
    n1 = ebb_str_cstr("web-5d8f7c9b6-n1"), na = ebb_str_cstr("node-a");
    assert_non_null(ebb_evmem_landed(&memory, ns, a1, n1, na));
    ebb_engine_set_now(e, now + 3600);   /* past 10m, 20m, 40m: not past 2h */
    targets[0] = "web-5d8f7c9b6-n1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_COOLDOWN);
    assert_non_null(r = refusal(e, "cooldown"));
    assert_non_null(strstr(r->detail, "is in a loop"));
    assert_non_null(strstr(r->detail, "cooldown at its maximum 2h, 1h left"));
    ebb_engine_set_now(e, now + 7200);
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    ebb_str_release(ns), ebb_str_release(a1), ebb_str_release(n1), ebb_str_release(na);
    done(e);
}

/* 6 replicas allow 2 down: one not Ready and one evicted make two. */
static void availability(void **state)
{
    struct ebb_engine *e;
    const struct ebb_plan_refusal *r;

    (void)state;
    cluster();
    pod("web-5d8f7c9b6-c2", "node-c", "2026-11-01T00:00:00Z", false);
    fx_add("{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"web-5d8f7c9b6\","
           "\"namespace\":\"shop\",\"uid\":\"rs-web\"},\"spec\":{\"replicas\":6,"
           "\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}");
    e = engine(NULL, true);
    ntargets = 3;
    targets[0] = "web-5d8f7c9b6-c2";   /* down already: costs nothing */
    targets[1] = "web-5d8f7c9b6-a1";
    targets[2] = "web-5d8f7c9b6-b1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_OK);
    assert_int_equal(results[2], EBB_WHY_UNAVAILABLE);
    assert_non_null(r = refusal(e, "unavailable"));
    assert_non_null(strstr(r->detail, "has 2 of 6 pods unavailable (2 evicted in this cycle), at most 2 allowed"));
    done(e);
}

/* Without a memory the cooldown has nothing to go on; the rest works. */
static void without_memory(void **state)
{
    struct ebb_engine *e;

    (void)state;
    cluster();
    e = engine("{maxUnavailablePerWorkload: 5}", false);
    landing[0][0] = "web-5d8f7c9b6-a2", landing[0][1] = "node-a";
    nlanding = 1;
    ntargets = 2;
    targets[0] = "web-5d8f7c9b6-a1";
    targets[1] = "web-5d8f7c9b6-a2";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(results[1], EBB_WHY_FUTILE);
    assert_int_equal(memory.n, 0);
    done(e);
}

/* A plugin named in restartPlugins evicts a pod for what it is: no
 * prediction is asked for its evictions. */
static void restart_plugins_are_not_predicted(void **state)
{
    struct ebb_engine *e;

    (void)state;
    cluster();
    e = engine("{restartPlugins: [SomethingElse, EvictTargets]}", true);
    landing[0][0] = "web-5d8f7c9b6-a1", landing[0][1] = "node-a";
    nlanding = 1;
    ntargets = 1;
    targets[0] = "web-5d8f7c9b6-a1";
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(results[0], EBB_WHY_OK);
    assert_int_equal(npredicted, 0);
    done(e);
}

/* ebb run: a new pod of a workload evicted within the hour is taken for the
 * replacement of its oldest eviction not placed yet; the memory learns where
 * it landed (a bounce on the node that pod left), once. */
static void live_replacements_land(void **state)
{
    struct ebb_engine_opts eo = { .mode = EBB_MODE_LIVE, .home = ".", .scripts = ebb_lua_plugins(),
                                  .memory = &memory };
    struct ebb_engine *e = NULL;
    struct ebb_error err = { 0 };
    struct ebb_evmem_entry x = { 0 };
    ebb_str ns, n1, n2;

    (void)state;
    cluster();
    pod("web-5d8f7c9b6-new1", "node-b", "2026-11-22T11:58:00Z", true);
    pod("web-5d8f7c9b6-new2", "node-c", "2026-11-22T11:58:30Z", true);
    pod("web-5d8f7c9b6-sib", "node-c", "2026-11-22T11:58:30Z", true);
    assert_int_equal(ebb_time_parse(NOW, &eo.now), 0);
    ebb_evmem_init(&memory, 0);
    assert_int_equal(ebb_engine_create(&eo, &e, &err), 0);
    ebb_engine_set_cache(e, fx_load());
    x.ns = ebb_str_cstr("shop");
    x.kind = ebb_str_cstr("Deployment");
    x.workload = ebb_str_cstr("web");
    x.plugin = ebb_str_cstr("LowNodeUtilization");
    x.profile = ebb_str_cstr("p");
    x.at = eo.now - 300;                        /* 11:55, from node-b */
    x.pod = ebb_str_cstr("web-5d8f7c9b6-old1");
    x.node = ebb_str_cstr("node-b");
    assert_int_equal(ebb_evmem_add(&memory, &x), 0);
    ebb_str_release(x.pod), ebb_str_release(x.node);
    x.at = eo.now - 240;                        /* 11:56, from node-a */
    x.pod = ebb_str_cstr("web-5d8f7c9b6-old2");
    x.node = ebb_str_cstr("node-a");
    assert_int_equal(ebb_evmem_add(&memory, &x), 0);
    ns = ebb_str_cstr("shop"), n1 = ebb_str_cstr("web-5d8f7c9b6-new1"), n2 = ebb_str_cstr("web-5d8f7c9b6-new2");
    ebb_engine_pod_changed(e, ns, n1);          /* on node-b: old1's, a bounce */
    assert_true(memory.v[0].flags & EBB_EVMEM_LANDED);
    assert_true(memory.v[0].flags & EBB_EVMEM_BOUNCED);
    assert_string_equal(memory.v[0].replacement, "web-5d8f7c9b6-new1");
    assert_false(memory.v[1].flags & EBB_EVMEM_LANDED);
    ebb_engine_pod_changed(e, ns, n1);          /* an update: taken already */
    assert_false(memory.v[1].flags & EBB_EVMEM_LANDED);
    ebb_engine_pod_changed(e, ns, n2);          /* on node-c: old2's, no bounce */
    assert_true(memory.v[1].flags & EBB_EVMEM_LANDED);
    assert_false(memory.v[1].flags & EBB_EVMEM_BOUNCED);
    assert_string_equal(memory.v[1].landed, "node-c");
    /* an eviction this process made at 11:58:30, when sib was in the
     * cache: sib, created in that second, is not its replacement */
    ebb_str_release(x.pod), ebb_str_release(x.node);
    x.at = eo.now - 90;
    x.pod = ebb_str_cstr("web-5d8f7c9b6-old3");
    x.node = ebb_str_cstr("node-a");
    ebb_evmem_find_peers(&memory, &x, ebb_engine_cache(e), NULL);
    assert_int_equal(x.npeers, 2);              /* new2, sib */
    assert_int_equal(ebb_evmem_add(&memory, &x), 0);
    {
        ebb_str sib = ebb_str_cstr("web-5d8f7c9b6-sib");
        ebb_engine_pod_changed(e, ns, sib);
        assert_false(memory.v[2].flags & EBB_EVMEM_LANDED);
        /* not among the peers: taken for the replacement */
        ebb_str_release(memory.v[2].peers[1]);
        memory.v[2].npeers = 1;
        ebb_engine_pod_changed(e, ns, sib);
        assert_true(memory.v[2].flags & EBB_EVMEM_LANDED);
        ebb_str_release(sib);
    }
    for (uint8_t i = 0; i < x.npeers; i++)
        ebb_str_release(x.peers[i]);
    ebb_str_release(x.ns), ebb_str_release(x.kind), ebb_str_release(x.workload);
    ebb_str_release(x.plugin), ebb_str_release(x.profile), ebb_str_release(x.pod), ebb_str_release(x.node);
    ebb_str_release(ns), ebb_str_release(n1), ebb_str_release(n2);
    done(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(evictions_are_remembered),
        cmocka_unit_test(futile_back_on_its_node),
        cmocka_unit_test(futile_on_a_drained_node),
        cmocka_unit_test(cooldown_grows),
        cmocka_unit_test(same_second_siblings),
        cmocka_unit_test(bounce_means_max_cooldown),
        cmocka_unit_test(availability),
        cmocka_unit_test(without_memory),
        cmocka_unit_test(restart_plugins_are_not_predicted),
        cmocka_unit_test(live_replacements_land),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
