/* Evictions in background (EvictionsInBackground): the tracking of
 * ebb/background.h as upstream's informer handlers and 429 answer drive
 * it, the engine's use of it (limits, no second request, the plugin told
 * "ok", the plan's "background"), seeding from a snapshot, and the
 * --feature-gates parser. The "API" is the test, as in test_cycle.c. */
#include <unistd.h>

#include "fixtures.h"

#include "ebb.h"
#include "ebb/background.h"
#include "ebb/flags.h"
#include "ebb/snapshot.h"
#include "ebb/lua.h"

#define NOW "2026-11-22T12:00:00Z"
#define EVACUATION "admission webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" denied " \
                   "the request: Eviction triggered evacuation of VMI \"vms/db\""

/* A virt-launcher pod: annotations as a JSON object body ("" for none). */
static int pod_json(char *buf, size_t len, const char *name, const char *uid, const char *node,
                    const char *phase, const char *annotations)
{
    return snprintf(buf, len,
        "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"vms\","
        "\"uid\":\"%s\",\"creationTimestamp\":\"2026-11-01T00:00:00Z\",\"annotations\":{%s},"
        "\"labels\":{\"kubevirt.io\":\"virt-launcher\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"kubevirt.io/v1\",\"kind\":\"VirtualMachineInstance\","
        "\"name\":\"%s\",\"uid\":\"vmi-%s\",\"controller\":true}]},"
        "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"compute\","
        "\"image\":\"quay.io/kubevirt/virt-launcher:v1.4.0\"}]},\"status\":{\"phase\":\"%s\"}}",
        name, uid, annotations, name, uid, node, phase);
}

#define EVICT_ONLY "\"descheduler.alpha.kubernetes.io/request-evict-only\":\"\""
#define IN_PROGRESS "\"descheduler.alpha.kubernetes.io/eviction-in-progress\":\"kubevirt\""

/* The pod into the cache (replacing one of the same name), as a watch
 * event would put it. */
static void put(struct ebb_cache *c, const char *name, const char *uid, const char *node,
                const char *phase, const char *annotations)
{
    char item[2048], list[2200];
    struct ebb_error err = { 0 };

    pod_json(item, sizeof(item), name, uid, node, phase, annotations);
    snprintf(list, sizeof(list), "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[%s]}", item);
    if (ebb_snapshot_load_buf(c, list, strlen(list), "pod.json", NULL, &err) != 0)
        fail_msg("%s: %s", err.field, err.msg);
}

static ebb_str S(const char *s)
{
    return ebb_str_find(s, strlen(s));
}

static struct ebb_pod *get(struct ebb_cache *c, const char *name)
{
    return ebb_cache_pod(c, S("vms"), S(name));
}

static int ndone;
static char done_what[256];

static void on_done(void *ud, const struct ebb_background_item *it)
{
    (void)ud;
    ndone++;
    snprintf(done_what, sizeof(done_what), "%s/%s on %s by %s/%s", it->ns, it->name,
             it->node ? it->node : "-", it->profile ? it->profile : "-",
             it->plugin ? it->plugin : "-");
}

static void observe(struct ebb_background *bg, struct ebb_cache *c, const char *name)
{
    ebb_background_observe(bg, S("vms"), S(name), get(c, name), on_done, NULL);
}

/* ---- the tracking ----------------------------------------------------------- */

static void watch_tracks_pods_with_both_annotations(void **state)
{
    struct ebb_background *bg = NULL;
    struct ebb_cache *c = NULL;

    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_background_create(&bg), 0);
    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY "," IN_PROGRESS);
    put(c, "web", "u-web", "node-a", "Running", EVICT_ONLY);
    put(c, "cache", "u-cache", "node-b", "Running", IN_PROGRESS);
    put(c, "done", "u-done", "node-b", "Succeeded", EVICT_ONLY "," IN_PROGRESS);
    observe(bg, c, "db");
    observe(bg, c, "web");
    observe(bg, c, "cache");
    observe(bg, c, "done");
    assert_int_equal(ebb_background_count(bg), 1);
    assert_true(ebb_background_has(bg, get(c, "db")));
    assert_false(ebb_background_has(bg, get(c, "web")));
    assert_int_equal(ebb_background_on_node(bg, S("node-a")), 1);
    assert_int_equal(ebb_background_on_node(bg, S("node-b")), 0);
    assert_int_equal(ebb_background_in_namespace(bg, S("vms")), 1);

    /* the same event again changes nothing */
    observe(bg, c, "db");
    assert_int_equal(ebb_background_count(bg), 1);

    /* eviction-in-progress removed: forgotten, so it may be asked again */
    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY);
    observe(bg, c, "db");
    assert_int_equal(ebb_background_count(bg), 0);
    assert_int_equal(ebb_background_on_node(bg, S("node-a")), 0);

    /* tracked again, then it completes (a migrated VM's source pod) */
    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY "," IN_PROGRESS);
    observe(bg, c, "db");
    assert_int_equal(ebb_background_count(bg), 1);
    put(c, "db", "u-db", "node-a", "Succeeded", EVICT_ONLY "," IN_PROGRESS);
    observe(bg, c, "db");
    assert_int_equal(ebb_background_count(bg), 0);

    /* request-evict-only removed */
    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY "," IN_PROGRESS);
    observe(bg, c, "db");
    put(c, "db", "u-db", "node-a", "Running", IN_PROGRESS);
    observe(bg, c, "db");
    assert_int_equal(ebb_background_count(bg), 0);
    /* only watched, never assumed: its deletion is no success of ours */
    assert_int_equal(ndone, 0);
    ebb_background_destroy(bg);
    ebb_cache_destroy(c);
}

static void assumed_eviction_ends_when_the_pod_is_gone(void **state)
{
    struct ebb_background *bg = NULL;
    struct ebb_cache *c = NULL;

    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_background_create(&bg), 0);
    ndone = 0;
    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY);
    assert_int_equal(ebb_background_assume(bg, S("vms"), S("db"), S("u-db"), S("node-a"),
                                           get(c, "db"), "kubevirt", "LowNodeUtilization", 1000), 0);
    assert_true(ebb_background_has(bg, get(c, "db")));
    /* the annotation not there yet: an assumed eviction waits for it */
    observe(bg, c, "db");
    assert_int_equal(ebb_background_count(bg), 1);
    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY "," IN_PROGRESS);
    observe(bg, c, "db");
    assert_int_equal(ebb_background_count(bg), 1);
    /* a second answer for the pod keeps who asked first */
    assert_int_equal(ebb_background_assume(bg, S("vms"), S("db"), S("u-db"), S("node-a"),
                                           get(c, "db"), "other", "RemoveDuplicates", 1100), 0);
    assert_int_equal(ebb_background_count(bg), 1);
    assert_int_equal(ebb_background_on_node(bg, S("node-a")), 1);
    /* deleted: the eviction is done, a success for the first to ask */
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("vms"), S("db")), 0);
    ebb_background_observe(bg, S("vms"), S("db"), NULL, on_done, NULL);
    assert_int_equal(ndone, 1);
    assert_string_equal(done_what, "vms/db on node-a by kubevirt/LowNodeUtilization");
    assert_int_equal(ebb_background_count(bg), 0);
    assert_int_equal(ebb_background_on_node(bg, S("node-a")), 0);
    ebb_background_destroy(bg);
    ebb_cache_destroy(c);
}

static void a_new_pod_of_the_same_name_ends_the_old_entry(void **state)
{
    struct ebb_background *bg = NULL;
    struct ebb_cache *c = NULL;

    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_background_create(&bg), 0);
    ndone = 0;
    put(c, "db", "u-old", "node-a", "Running", EVICT_ONLY);
    assert_int_equal(ebb_background_assume(bg, S("vms"), S("db"), S("u-old"), S("node-a"),
                                           get(c, "db"), "kubevirt", "PodLifeTime", 1000), 0);
    /* the deletion was missed; the pod is back, recreated on node-b */
    put(c, "db", "u-new", "node-b", "Running", EVICT_ONLY);
    assert_false(ebb_background_has(bg, get(c, "db")));
    observe(bg, c, "db");
    assert_int_equal(ndone, 1);
    assert_int_equal(ebb_background_count(bg), 0);
    assert_int_equal(ebb_background_on_node(bg, S("node-a")), 0);
    ebb_background_destroy(bg);
    ebb_cache_destroy(c);
}

static void assumed_entries_expire_after_ten_minutes(void **state)
{
    struct ebb_background *bg = NULL;
    struct ebb_cache *c = NULL;

    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_background_create(&bg), 0);
    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY);
    put(c, "web", "u-web", "node-a", "Running", EVICT_ONLY "," IN_PROGRESS);
    observe(bg, c, "web");
    assert_int_equal(ebb_background_assume(bg, S("vms"), S("db"), S("u-db"), S("node-a"),
                                           get(c, "db"), "p", "x", 1000), 0);
    ebb_background_expire(bg, 1000 + EBB_BACKGROUND_ASSUMED_TIMEOUT);
    assert_int_equal(ebb_background_count(bg), 2);
    ebb_background_expire(bg, 1000 + EBB_BACKGROUND_ASSUMED_TIMEOUT + 1);
    /* the assumed one goes; the one the watch shows stays */
    assert_int_equal(ebb_background_count(bg), 1);
    assert_false(ebb_background_has(bg, get(c, "db")));
    assert_true(ebb_background_has(bg, get(c, "web")));
    ebb_background_destroy(bg);
    ebb_cache_destroy(c);
}

/* ---- through the engine ----------------------------------------------------- */

static struct ebb_eviction *sent[16];
static int nsent;

static int fake_start(void *ud, struct ebb_eviction *ev)
{
    (void)ud;
    sent[nsent++] = ev;
    return 0;
}

/* Evicts every pod of namespace "vms" and reports the outcomes as its
 * failure message. */
static const char *strategy =
    "local ebb = require('ebb')\n"
    "return { name = 'EvictVMs', deschedule = function(ctx, nodes)\n"
    "  local out = {}\n"
    "  for _, pod in ebb.pods(nodes, { phase = 'all', namespaces = { include = { 'vms' } } }):iter() do\n"
    "    local ok, why = ctx.evictor:evict(pod, { reason = 'test' })\n"
    "    out[#out + 1] = pod.name .. '=' .. (ok and 'ok' or why)\n"
    "  end\n"
    "  return false, table.concat(out, ',')\n"
    "end }\n";

static char dir[64];

static struct ebb_engine *engine(int mode, unsigned features, const char *limits)
{
    struct ebb_engine_opts eo = { .mode = mode, .home = ".", .features = features, .scripts = ebb_lua_plugins() };
    struct ebb_engine *e = NULL;
    struct ebb_cache *c = NULL;
    struct ebb_policy *pol = NULL;
    struct ebb_error err = { 0 };
    char path[128], policy[1024];
    static const char *nodes =
        "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
        "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-a\"},"
        " \"status\":{\"allocatable\":{\"cpu\":\"16\",\"memory\":\"64Gi\",\"pods\":\"110\"}}},"
        "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-b\"},"
        " \"status\":{\"allocatable\":{\"cpu\":\"16\",\"memory\":\"64Gi\",\"pods\":\"110\"}}}]}";
    FILE *f;

    snprintf(dir, sizeof(dir), "/tmp/ebb-background-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/evict_vms.lua", dir);
    assert_non_null(f = fopen(path, "w"));
    fputs(strategy, f);
    fclose(f);
    assert_int_equal(ebb_time_parse(NOW, &eo.now), 0);
    assert_int_equal(ebb_engine_create(&eo, &e, &err), 0);
    assert_int_equal(ebb_engine_load_builtins(e, &err), 0);
    if (ebb_engine_register_lua_dir(e, dir, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_snapshot_load_buf(c, nodes, strlen(nodes), "nodes.json", NULL, &err), 0);
    ebb_engine_set_cache(e, c);
    snprintf(policy, sizeof(policy),
             "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n%s"
             "profiles:\n- name: kubevirt\n  pluginConfig:\n  - name: EvictVMs\n"
             "  plugins:\n    deschedule:\n      enabled: [EvictVMs]\n", limits);
    assert_int_equal(ebb_policy_parse(policy, strlen(policy), "p.yaml", &pol, &err), 0);
    if (ebb_engine_set_policy(e, pol, &err) != 0)
        fail_msg("%s", err.msg);
    ebb_engine_set_evictor(e, fake_start, NULL);
    ebb_engine_on_background_done(e, on_done, NULL);
    nsent = 0;
    ndone = 0;
    return e;
}

static void engine_done(struct ebb_engine *e)
{
    char path[128];
    ebb_engine_destroy(e);
    snprintf(path, sizeof(path), "%s/evict_vms.lua", dir);
    remove(path);
    rmdir(dir);
}

static const char *outcome(struct ebb_engine *e)
{
    struct ebb_plan *p = ebb_engine_plan(e);
    return p->nerrors > 0 ? p->errors[p->nerrors - 1].message : "";
}

/* The server answers as KubeVirt's interceptor makes it: the evacuation
 * 429 to a pod annotated request-evict-only when `evacuate`, else 201. */
static void answer_all(struct ebb_engine *e, bool evacuate)
{
    for (int i = 0; nsent > i; i++) {
        bool bg = evacuate && sent[i]->evict_only;
        int status = bg ? 429 : 201, rc;
        const char *msg = bg ? EVACUATION : NULL;
        int why = ebb_engine_eviction_in_background(e, sent[i], status, msg) ? EBB_WHY_BACKGROUND
                  : status == 429                                            ? EBB_WHY_PDB
                                                                             : EBB_WHY_OK;
        ebb_engine_eviction_done(e, sent[i], why, msg);
        rc = ebb_engine_cycle_resume(e);
        assert_true(rc == 0 || rc == EBB_CYCLE_WAITING);
        if (rc == 0)
            break;
    }
}

static void a_429_evacuation_is_an_eviction_in_background(void **state)
{
    struct ebb_engine *e = engine(EBB_MODE_LIVE, EBB_FEATURE_EVICTIONS_IN_BACKGROUND,
                                  "maxNoOfPodsToEvictPerNode: 1\n");
    struct ebb_cache *c = ebb_engine_cache(e);
    struct ebb_plan *p = ebb_engine_plan(e);

    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY);
    put(c, "web", "u-web", "node-a", "Running", "");
    put(c, "api", "u-api", "node-b", "Running", "");

    /* cycle 1: db goes to the background; the plugin hears "ok", and
     * node-a's one eviction is spent on it */
    assert_int_equal(ebb_engine_cycle_begin(e), EBB_CYCLE_WAITING);
    assert_true(sent[0]->evict_only);
    answer_all(e, true);
    assert_string_equal(outcome(e), "db=ok,web=node-limit,api=ok");
    assert_int_equal(p->nevictions, 1);
    assert_string_equal(p->evictions[0].pod, "vms/api");
    assert_int_equal(p->nrefusals, 2);
    assert_string_equal(p->refusals[0].pod, "vms/db");
    assert_string_equal(p->refusals[0].why, "background");
    assert_string_equal(p->refusals[0].detail, EVACUATION);

    /* api is gone; cycle 2: db is not asked again and still holds node-a */
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("vms"), S("api")), 0);
    ebb_engine_pod_changed(e, S("vms"), S("api"));
    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY "," IN_PROGRESS);
    ebb_engine_pod_changed(e, S("vms"), S("db"));
    ebb_plan_clear(p);
    nsent = 0;
    assert_int_equal(ebb_engine_cycle_begin(e), 0);
    assert_int_equal(nsent, 0);
    assert_string_equal(outcome(e), "db=ok,web=node-limit");
    assert_int_equal(p->nnotes, 1);
    assert_string_equal(p->notes[0].message, "pod vms/db: eviction in background already requested");

    /* the VM has migrated: its pod is deleted, a success for the plugin that asked */
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("vms"), S("db")), 0);
    ebb_engine_pod_changed(e, S("vms"), S("db"));
    assert_int_equal(ndone, 1);
    assert_string_equal(done_what, "vms/db on node-a by kubevirt/EvictVMs");

    /* cycle 3: node-a is free again */
    ebb_plan_clear(p);
    assert_int_equal(ebb_engine_cycle_begin(e), EBB_CYCLE_WAITING);
    answer_all(e, true);
    assert_string_equal(outcome(e), "web=ok");
    engine_done(e);
}

static void without_the_gate_or_the_annotation_a_429_is_a_refusal(void **state)
{
    struct ebb_engine *e = engine(EBB_MODE_LIVE, 0, "");
    struct ebb_cache *c = ebb_engine_cache(e);

    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY);
    assert_int_equal(ebb_engine_cycle_begin(e), EBB_CYCLE_WAITING);
    assert_false(sent[0]->evict_only);
    assert_false(ebb_engine_eviction_in_background(e, sent[0], 429, EVACUATION));
    ebb_engine_eviction_done(e, sent[0], EBB_WHY_PDB, EVACUATION);
    assert_int_equal(ebb_engine_cycle_resume(e), 0);
    assert_string_equal(outcome(e), "db=pdb");
    engine_done(e);

    e = engine(EBB_MODE_LIVE, EBB_FEATURE_EVICTIONS_IN_BACKGROUND, "");
    c = ebb_engine_cache(e);
    put(c, "web", "u-web", "node-a", "Running", "");
    assert_int_equal(ebb_engine_cycle_begin(e), EBB_CYCLE_WAITING);
    /* not annotated: a 429 saying the same is still a refusal */
    assert_false(ebb_engine_eviction_in_background(e, sent[0], 429, EVACUATION));
    ebb_engine_eviction_done(e, sent[0], EBB_WHY_PDB, EVACUATION);
    assert_int_equal(ebb_engine_cycle_resume(e), 0);
    assert_string_equal(outcome(e), "web=pdb");
    engine_done(e);
}

/* RemoveFailedPods evicts Failed pods: one that goes to the background
 * is not waited for (upstream ignores it), and holds no limit */
static void a_finished_pod_is_not_waited_for(void **state)
{
    struct ebb_engine *e = engine(EBB_MODE_LIVE, EBB_FEATURE_EVICTIONS_IN_BACKGROUND,
                                  "maxNoOfPodsToEvictPerNode: 1\n");
    struct ebb_cache *c = ebb_engine_cache(e);
    struct ebb_plan *p = ebb_engine_plan(e);

    put(c, "db", "u-db", "node-a", "Failed", EVICT_ONLY);
    put(c, "web", "u-web", "node-a", "Running", "");
    assert_int_equal(ebb_engine_cycle_begin(e), EBB_CYCLE_WAITING);
    answer_all(e, true);
    assert_string_equal(outcome(e), "db=ok,web=ok");
    assert_int_equal(p->nrefusals, 0);
    assert_int_equal(p->nevictions, 1);
    assert_string_equal(p->evictions[0].pod, "vms/web");
    engine_done(e);
}

static void a_snapshot_seeds_the_evictions_going_on(void **state)
{
    struct ebb_engine *e = engine(EBB_MODE_SIMULATE, EBB_FEATURE_EVICTIONS_IN_BACKGROUND,
                                  "maxNoOfPodsToEvictPerNode: 1\nmaxNoOfPodsToEvictTotal: 2\n");
    struct ebb_cache *c = ebb_engine_cache(e);
    struct ebb_plan *p = ebb_engine_plan(e);

    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY "," IN_PROGRESS);
    put(c, "web", "u-web", "node-a", "Running", "");
    put(c, "api", "u-api", "node-b", "Running", "");
    put(c, "batch", "u-batch", "node-b", "Running", "");
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    /* db: going on; web: node-a's one is db; api: the second of two in
     * total; batch: the total is spent */
    assert_string_equal(outcome(e), "db=ok,web=node-limit,api=ok,batch=total-limit");
    assert_int_equal(p->nevictions, 1);
    engine_done(e);

    /* the gate off: db is an ordinary pod */
    e = engine(EBB_MODE_SIMULATE, 0, "maxNoOfPodsToEvictPerNode: 1\nmaxNoOfPodsToEvictTotal: 2\n");
    c = ebb_engine_cache(e);
    put(c, "db", "u-db", "node-a", "Running", EVICT_ONLY "," IN_PROGRESS);
    put(c, "web", "u-web", "node-a", "Running", "");
    put(c, "api", "u-api", "node-b", "Running", "");
    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_string_equal(outcome(e), "db=ok,web=node-limit,api=ok");
    assert_int_equal(ebb_engine_plan(e)->nevictions, 2);
    engine_done(e);
}

/* ---- --feature-gates -------------------------------------------------------- */

static void feature_gates_parse_as_upstream(void **state)
{
    unsigned g = 0;

    assert_true(ebb_flag_feature_gates("--feature-gates", "EvictionsInBackground=true", &g));
    assert_int_equal(g, EBB_FEATURE_EVICTIONS_IN_BACKGROUND);
    assert_true(ebb_flag_feature_gates("--feature-gates", " EvictionsInBackground = F ,", &g));
    assert_int_equal(g, 0);
    assert_true(ebb_flag_feature_gates("--feature-gates", "EvictionsInBackground=1", &g));
    assert_int_equal(g, EBB_FEATURE_EVICTIONS_IN_BACKGROUND);
    /* refused, and nothing changed */
    assert_false(ebb_flag_feature_gates("--feature-gates", "EvictionsInBackground=yes", &g));
    assert_false(ebb_flag_feature_gates("--feature-gates", "EvictionsInBackground", &g));
    assert_false(ebb_flag_feature_gates("--feature-gates",
                                        "EvictionsInBackground=false,EvictionsInForeground=true", &g));
    assert_int_equal(g, EBB_FEATURE_EVICTIONS_IN_BACKGROUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(watch_tracks_pods_with_both_annotations),
        cmocka_unit_test(assumed_eviction_ends_when_the_pod_is_gone),
        cmocka_unit_test(a_new_pod_of_the_same_name_ends_the_old_entry),
        cmocka_unit_test(assumed_entries_expire_after_ten_minutes),
        cmocka_unit_test(a_429_evacuation_is_an_eviction_in_background),
        cmocka_unit_test(without_the_gate_or_the_annotation_a_429_is_a_refusal),
        cmocka_unit_test(a_finished_pod_is_not_waited_for),
        cmocka_unit_test(a_snapshot_seeds_the_evictions_going_on),
        cmocka_unit_test(feature_gates_parse_as_upstream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
