/* The resumable cycle of live mode: a Lua strategy's evict() suspends its
 * coroutine until the API answers; the cycle resumes where it stopped and
 * the strategy sees the real outcome. The "API" here is the test: it keeps
 * the evictions it is handed and answers them when it likes. */
#include <unistd.h>

#include "fixtures.h"

#include "ebb.h"
#include "ebb/snapshot.h"
#include "ebb/lua.h"

#define NOW "2026-11-22T12:00:00Z"

static struct ebb_eviction *sent[16];
static int nsent;
static int refuse_with;     /* 0: accept the request */

static int fake_start(void *ud, struct ebb_eviction *ev)
{
    (void)ud;
    if (refuse_with)
        return refuse_with;
    sent[nsent++] = ev;
    return 0;
}

/* A strategy that evicts every active pod of namespace "shop" in order and
 * records each outcome in its plugin state; it reports them at the end as
 * its failure message so the test can read them from the plan. */
static const char *strategy =
    "local ebb = require('ebb')\n"
    "return { name = 'Serial', deschedule = function(ctx, nodes)\n"
    "  local out = {}\n"
    "  for _, pod in ebb.pods(nodes, { namespaces = { include = { 'shop' } } }):iter() do\n"
    "    local ok, why = ctx.evictor:evict(pod, { reason = 'test' })\n"
    "    out[#out + 1] = pod.name .. '=' .. (ok and 'ok' or why)\n"
    "  end\n"
    "  return false, table.concat(out, ',')\n"
    "end }\n";

static const char *cluster =
    "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-a\"},"
    " \"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"}}},"
    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-b\"},"
    " \"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"}}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web-1\",\"namespace\":\"shop\",\"uid\":\"u1\","
    " \"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web-6c9\",\"uid\":\"rs1\",\"controller\":true}]},"
    " \"spec\":{\"nodeName\":\"node-a\",\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1.27\"}]},"
    " \"status\":{\"phase\":\"Running\"}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web-2\",\"namespace\":\"shop\",\"uid\":\"u2\","
    " \"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web-6c9\",\"uid\":\"rs1\",\"controller\":true}]},"
    " \"spec\":{\"nodeName\":\"node-b\",\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1.27\"}]},"
    " \"status\":{\"phase\":\"Running\"}},"
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web-3\",\"namespace\":\"shop\",\"uid\":\"u3\","
    " \"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web-6c9\",\"uid\":\"rs1\",\"controller\":true}]},"
    " \"spec\":{\"nodeName\":\"node-b\",\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1.27\"}]},"
    " \"status\":{\"phase\":\"Running\"}}]}";

static const char *policy =
    "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nmaxNoOfPodsToEvictPerNode: 1\n"
    "profiles:\n- name: live\n  pluginConfig:\n  - name: Serial\n"
    "  plugins:\n    deschedule:\n      enabled: [Serial]\n";

static char dir[64];

static struct ebb_engine *live_engine(void)
{
    struct ebb_engine_opts eo = { .mode = EBB_MODE_LIVE, .home = ".", .scripts = ebb_lua_plugins() };
    struct ebb_engine *e = NULL;
    struct ebb_cache *c = NULL;
    struct ebb_policy *pol = NULL;
    struct ebb_error err = { 0 };
    char path[128];
    FILE *f;

    snprintf(dir, sizeof(dir), "/tmp/ebb-cycle-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/serial.lua", dir);
    assert_non_null(f = fopen(path, "w"));
    fputs(strategy, f);
    fclose(f);
    assert_int_equal(ebb_time_parse(NOW, &eo.now), 0);
    assert_int_equal(ebb_engine_create(&eo, &e, &err), 0);
    assert_int_equal(ebb_engine_load_builtins(e, &err), 0);
    if (ebb_engine_register_lua_dir(e, dir, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_snapshot_load_buf(c, cluster, strlen(cluster), "c.json", NULL, &err), 0);
    ebb_engine_set_cache(e, c);
    assert_int_equal(ebb_policy_parse(policy, strlen(policy), "p.yaml", &pol, &err), 0);
    if (ebb_engine_set_policy(e, pol, &err) != 0)
        fail_msg("%s", err.msg);
    ebb_engine_set_evictor(e, fake_start, NULL);
    nsent = 0;
    refuse_with = 0;
    return e;
}

static void done(struct ebb_engine *e)
{
    char path[128];
    ebb_engine_destroy(e);
    snprintf(path, sizeof(path), "%s/serial.lua", dir);
    remove(path);
    rmdir(dir);
}

static void waits_for_each_answer_and_sees_it(void **state)
{
    struct ebb_engine *e = live_engine();
    struct ebb_plan *p = ebb_engine_plan(e);

    /* web-1 sent; the strategy waits */
    assert_int_equal(ebb_engine_cycle_begin(e), EBB_CYCLE_WAITING);
    assert_true(ebb_engine_cycle_active(e));
    assert_int_equal(nsent, 1);
    assert_string_equal(sent[0]->name, "web-1");
    assert_string_equal(sent[0]->plugin, "Serial");
    assert_false(ebb_engine_cycle_ready(e));
    assert_int_equal(ebb_engine_cycle_resume(e), EBB_CYCLE_WAITING);   /* no answer yet */
    assert_int_equal(ebb_engine_evictions_inflight(e), 1);

    ebb_engine_eviction_done(e, sent[0], EBB_WHY_OK, NULL);
    assert_true(ebb_engine_cycle_ready(e));
    /* web-2 sent next */
    assert_int_equal(ebb_engine_cycle_resume(e), EBB_CYCLE_WAITING);
    assert_int_equal(nsent, 2);
    assert_string_equal(sent[1]->name, "web-2");
    ebb_engine_eviction_done(e, sent[1], EBB_WHY_PDB, "Cannot evict pod as it would violate the pod's disruption budget.");
    /* web-3 is on node-b: web-2 failed, so node-b's limit is not spent */
    assert_int_equal(ebb_engine_cycle_resume(e), EBB_CYCLE_WAITING);
    assert_int_equal(nsent, 3);
    ebb_engine_eviction_done(e, sent[2], EBB_WHY_NOT_FOUND, "pods \"web-3\" not found");
    assert_int_equal(ebb_engine_cycle_resume(e), 0);
    assert_false(ebb_engine_cycle_active(e));

    assert_int_equal(p->nevictions, 1);
    assert_string_equal(p->evictions[0].pod, "shop/web-1");
    assert_int_equal(p->nrefusals, 2);
    assert_string_equal(p->refusals[0].why, "pdb");
    assert_string_equal(p->refusals[1].why, "not-found");
    assert_int_equal(p->nerrors, 1);
    assert_string_equal(p->errors[0].message, "web-1=ok,web-2=pdb,web-3=not-found");
    assert_int_equal(ebb_engine_evictions_inflight(e), 0);
    done(e);
}

static void node_limit_counts_requests_in_flight(void **state)
{
    struct ebb_engine *e = live_engine();

    assert_int_equal(ebb_engine_cycle_begin(e), EBB_CYCLE_WAITING);
    ebb_engine_eviction_done(e, sent[0], EBB_WHY_OK, NULL);
    assert_int_equal(ebb_engine_cycle_resume(e), EBB_CYCLE_WAITING);
    ebb_engine_eviction_done(e, sent[1], EBB_WHY_OK, NULL);
    /* web-3 shares node-b with web-2: refused locally, no request */
    assert_int_equal(ebb_engine_cycle_resume(e), 0);
    assert_int_equal(nsent, 2);
    assert_string_equal(ebb_engine_plan(e)->errors[0].message, "web-1=ok,web-2=ok,web-3=node-limit");
    done(e);
}

static void stopped_evictions_are_refused_without_a_request(void **state)
{
    struct ebb_engine *e = live_engine();

    ebb_engine_set_eviction_allowed(e, false);
    assert_int_equal(ebb_engine_cycle_begin(e), 0);
    assert_int_equal(nsent, 0);
    assert_string_equal(ebb_engine_plan(e)->errors[0].message,
                        "web-1=api-error,web-2=api-error,web-3=api-error");
    done(e);
}

static void a_refused_send_is_an_api_error(void **state)
{
    struct ebb_engine *e = live_engine();

    refuse_with = EBB_WHY_API_ERROR;
    assert_int_equal(ebb_engine_cycle_begin(e), 0);
    assert_string_equal(ebb_engine_plan(e)->errors[0].message,
                        "web-1=api-error,web-2=api-error,web-3=api-error");
    done(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(waits_for_each_answer_and_sees_it),
        cmocka_unit_test(node_limit_counts_requests_in_flight),
        cmocka_unit_test(stopped_evictions_are_refused_without_a_request),
        cmocka_unit_test(a_refused_send_is_an_api_error),
    };
    ebb_log_level = EBB_LOG_OFF;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
