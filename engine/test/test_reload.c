/* Policy generations: the content hash, building a generation off to the
 * side, and swapping it in (ebb_engine_adopt) with the instances that did
 * not change kept, ctx.state and all. A counting strategy notes how many
 * times its instance has run, so the plan shows which instance ran. */
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"

#include "ebb.h"
#include "ebb/reload.h"
#include "ebb/snapshot.h"
#include "ebb/lua.h"

static const char *cluster =
    "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-a\"},"
    " \"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"}}},"
    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-b\"},"
    " \"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"}}}]}";

/* counter.lua: ctx.state.n counts the runs of this instance; the note says
 * "<tag> run <n> step <step>" (tag from the module, step from the args). */
static const char *counter =
    "local ebb = require('ebb')\n"
    "local helper = require('_helper')\n"
    "return { name = 'Counter', args = { step = ebb.args.int({ default = 1 }) },\n"
    "  deschedule = function(ctx, nodes)\n"
    "    ctx.state.n = (ctx.state.n or 0) + 1\n"
    "    ebb.note(string.format('%s run %d step %d', helper.tag, ctx.state.n, ctx.args.step))\n"
    "  end }\n";

static const char *policy_fmt =
    "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
    "profiles:\n- name: p\n  pluginConfig:\n  - name: Counter\n    args: {step: %d}\n"
    "  plugins:\n    deschedule:\n      enabled: [Counter]\n";

static char dir[64], pdir[96], policy_path[128];

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void put_in(const char *name, const char *text)
{
    char path[160];
    snprintf(path, sizeof(path), "%s/%s", pdir, name);
    put(path, text);
}

static void set_policy_step(int step)
{
    char buf[512];
    snprintf(buf, sizeof(buf), policy_fmt, step);
    put(policy_path, buf);
}

static void setup_sources(void)
{
    snprintf(dir, sizeof(dir), "/tmp/ebb-reload-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(pdir, sizeof(pdir), "%s/strategies", dir);
    assert_int_equal(mkdir(pdir, 0700), 0);
    snprintf(policy_path, sizeof(policy_path), "%s/policy.yaml", dir);
    put_in("counter.lua", counter);
    put_in("_helper.lua", "return { tag = 'v1' }\n");
    set_policy_step(1);
}

static void remove_sources(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static struct ebb_sources sources(void)
{
    static const char *dirs[1];
    dirs[0] = pdir;
    return (struct ebb_sources){ policy_path, dirs, 1 };
}

static struct ebb_engine *build(void)
{
    struct ebb_engine_opts eo = { .mode = EBB_MODE_SIMULATE, .home = ".", .scripts = ebb_lua_plugins() };
    struct ebb_sources s = sources();
    struct ebb_error err = { 0 };
    struct ebb_engine *e = NULL;

    if (ebb_generation_build(&eo, &s, &e, &err) != 0)
        fail_msg("%s:%d: %s", err.file, err.line, err.msg);
    return e;
}

static struct ebb_engine *running(void)
{
    struct ebb_engine *e = build();
    struct ebb_cache *c = NULL;
    struct ebb_error err = { 0 };

    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_snapshot_load_buf(c, cluster, strlen(cluster), "c.json", NULL, &err), 0);
    ebb_engine_set_cache(e, c);
    return e;
}

/* Run a cycle; the note the counter left in it. */
static const char *cycle_note(struct ebb_engine *e)
{
    struct ebb_plan *p = ebb_engine_plan(e);
    size_t before = p->nnotes;

    assert_int_equal(ebb_engine_run_cycle(e), 0);
    assert_int_equal(p->nnotes, before + 1);
    return p->notes[p->nnotes - 1].message;
}

static void swap_in(struct ebb_engine *e, size_t expect_kept)
{
    struct ebb_engine *gen = build();
    size_t kept = 99;

    assert_int_equal(ebb_engine_adopt(e, gen, &kept), 0);
    assert_int_equal(kept, expect_kept);
    ebb_engine_destroy(gen);   /* the previous generation */
}

static void unchanged_instances_keep_their_state(void **state)
{
    struct ebb_engine *e;

    setup_sources();
    e = running();
    assert_string_equal(cycle_note(e), "v1 run 1 step 1");
    assert_string_equal(cycle_note(e), "v1 run 2 step 1");
    swap_in(e, 1);   /* nothing changed: the same instance goes on */
    assert_string_equal(cycle_note(e), "v1 run 3 step 1");
    ebb_engine_destroy(e);
    remove_sources();
}

static void changed_args_source_or_module_start_fresh(void **state)
{
    struct ebb_engine *e;

    setup_sources();
    e = running();
    assert_string_equal(cycle_note(e), "v1 run 1 step 1");
    set_policy_step(5);                      /* args */
    swap_in(e, 0);
    assert_string_equal(cycle_note(e), "v1 run 1 step 5");
    assert_string_equal(cycle_note(e), "v1 run 2 step 5");
    put_in("_helper.lua", "return { tag = 'v2' }\n");   /* a module it requires */
    swap_in(e, 0);
    assert_string_equal(cycle_note(e), "v2 run 1 step 5");
    put_in("counter.lua", "-- a comment is a change too\n");
    {
        char path[160];
        FILE *f;
        snprintf(path, sizeof(path), "%s/counter.lua", pdir);
        assert_non_null(f = fopen(path, "a"));
        fputs(counter, f);
        fclose(f);
    }
    swap_in(e, 0);
    assert_string_equal(cycle_note(e), "v2 run 1 step 5");
    ebb_engine_destroy(e);
    remove_sources();
}

static void the_policy_and_limits_come_from_the_new_generation(void **state)
{
    struct ebb_engine *e;
    const struct ebb_policy *pol;

    setup_sources();
    e = running();
    assert_int_equal(ebb_engine_policy(e)->max_total, EBB_UNLIMITED);
    assert_string_equal(cycle_note(e), "v1 run 1 step 1");
    put(policy_path,
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nmaxNoOfPodsToEvictTotal: 7\n"
        "profiles:\n- name: p\n  pluginConfig:\n  - name: Counter\n    args: {step: 1}\n"
        "    limits: {memory: 32Mi}\n"
        "  plugins:\n    deschedule:\n      enabled: [Counter]\n");
    swap_in(e, 1);   /* limits are not args: the instance is kept */
    pol = ebb_engine_policy(e);
    assert_int_equal(pol->max_total, 7);
    assert_int_equal(pol->profiles[0].configs[1].limits.memory, 32 << 20);
    assert_string_equal(cycle_note(e), "v1 run 2 step 1");
    ebb_engine_destroy(e);
    remove_sources();
}

static struct ebb_eviction *sent;

static int hold_request(void *ud, struct ebb_eviction *ev)
{
    (void)ud;
    sent = ev;
    return 0;
}

static void no_swap_while_a_cycle_runs(void **state)
{
    static const char *pods =
        "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
        "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-a\"},"
        " \"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"}}},"
        "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-b\"},"
        " \"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"}}},"
        "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web-1\",\"namespace\":\"shop\","
        " \"uid\":\"u1\",\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web-6c9\",\"uid\":\"rs1\","
        " \"controller\":true}]},\"spec\":{\"nodeName\":\"node-a\",\"containers\":[{\"name\":\"c\","
        " \"image\":\"nginx:1.27\"}]},\"status\":{\"phase\":\"Running\"}}]}";
    struct ebb_engine_opts eo = { .mode = EBB_MODE_LIVE, .home = ".", .scripts = ebb_lua_plugins() };
    struct ebb_sources s;
    struct ebb_error err = { 0 };
    struct ebb_engine *e = NULL, *gen;
    struct ebb_cache *c = NULL;

    setup_sources();
    put_in("waiter.lua", "local ebb = require('ebb')\n"
                         "return { name = 'Waiter', deschedule = function(ctx, nodes)\n"
                         "  for _, pod in ebb.pods(nodes):iter() do ctx.evictor:evict(pod) end\n"
                         "end }\n");
    put(policy_path, "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
                     "profiles:\n- name: p\n  pluginConfig:\n  - name: Waiter\n"
                     "  plugins:\n    deschedule:\n      enabled: [Waiter]\n");
    s = sources();
    if (ebb_generation_build(&eo, &s, &e, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_snapshot_load_buf(c, pods, strlen(pods), "c.json", NULL, &err), 0);
    ebb_engine_set_cache(e, c);
    ebb_engine_set_evictor(e, hold_request, NULL);
    assert_int_equal(ebb_generation_build(&eo, &s, &gen, &err), 0);

    /* the strategy waits for the API's answer: the generation must not
     * change under it */
    assert_int_equal(ebb_engine_cycle_begin(e), EBB_CYCLE_WAITING);
    assert_int_equal(ebb_engine_adopt(e, gen, NULL), EBB_ESTATE);
    assert_non_null(sent);
    ebb_engine_eviction_done(e, sent, EBB_WHY_OK, NULL);
    assert_int_equal(ebb_engine_cycle_resume(e), 0);
    assert_int_equal(ebb_engine_plan(e)->nevictions, 1);
    /* between cycles it may */
    assert_int_equal(ebb_engine_adopt(e, gen, NULL), 0);
    assert_int_equal(ebb_engine_adopt(NULL, gen, NULL), EBB_EINVAL);
    ebb_engine_destroy(gen);
    ebb_engine_destroy(e);
    remove_sources();
}

static void the_hash_follows_content_not_links(void **state)
{
    struct ebb_sources s;
    char h1[17], h2[17], h3[17], h4[17];
    struct ebb_error err = { 0 };
    char path[192];

    setup_sources();
    s = sources();
    assert_int_equal(ebb_sources_hash(&s, h1, &err), 0);
    assert_int_equal(strlen(h1), 16);
    assert_int_equal(ebb_sources_hash(&s, h2, &err), 0);
    assert_string_equal(h1, h2);
    /* ConfigMap internals (dot names) are not content of their own */
    snprintf(path, sizeof(path), "%s/..2026_11_22", pdir);
    assert_int_equal(mkdir(path, 0700), 0);
    put_in("..2026_11_22/counter.lua", "anything");
    assert_int_equal(ebb_sources_hash(&s, h2, &err), 0);
    assert_string_equal(h1, h2);
    /* a new file, a changed byte in the policy: new hashes */
    put_in("notes.txt", "x");
    assert_int_equal(ebb_sources_hash(&s, h3, &err), 0);
    assert_string_not_equal(h1, h3);
    set_policy_step(2);
    assert_int_equal(ebb_sources_hash(&s, h4, &err), 0);
    assert_string_not_equal(h3, h4);
    /* a missing policy file is named */
    snprintf(path, sizeof(path), "%s/gone.yaml", dir);
    s.policy = path;
    assert_int_equal(ebb_sources_hash(&s, h4, &err), EBB_EIO);
    assert_string_equal(err.file, path);
    remove_sources();
}

static void a_bad_generation_names_file_and_line(void **state)
{
    struct ebb_engine_opts eo = { .mode = EBB_MODE_SIMULATE, .home = ".", .scripts = ebb_lua_plugins() };
    struct ebb_sources s;
    struct ebb_error err = { 0 };
    struct ebb_engine *e = NULL;
    char want[160];

    setup_sources();
    put_in("broken.lua", "local ebb = require('ebb')\nreturn { name = 'Broken', deschedule = function(ctx)\n");
    s = sources();
    assert_int_equal(ebb_generation_build(&eo, &s, &e, &err), EBB_ESCRIPT);
    assert_null(e);
    snprintf(want, sizeof(want), "%s/broken.lua", pdir);
    assert_string_equal(err.file, want);
    assert_int_equal(err.line, 3);
    remove_sources();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unchanged_instances_keep_their_state),
        cmocka_unit_test(changed_args_source_or_module_start_fresh),
        cmocka_unit_test(the_policy_and_limits_come_from_the_new_generation),
        cmocka_unit_test(no_swap_while_a_cycle_runs),
        cmocka_unit_test(the_hash_follows_content_not_links),
        cmocka_unit_test(a_bad_generation_names_file_and_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
