/* `ebb test`: reading test files (settings, defaults, expectations, errors
 * with their lines), the diff of a plan against what a case expects, and
 * the two invariants, each shown to catch a doctored plan. */
#include "fixtures.h"

#include "ebb.h"
#include "ebb/simulate.h"
#include "ebb/testrun.h"

#define NOW "2026-11-22T12:00:00Z"

static struct ebb_test_file *parse_ok(const char *text)
{
    struct ebb_test_file *f = NULL;
    struct ebb_error err = { 0 };
    int rc = ebb_test_file_parse(text, strlen(text), "dir/x_test.yaml", &f, &err);

    if (rc != 0)
        fail_msg("parse: %s:%d: %s: %s", err.file, err.line, err.field, err.msg);
    return f;
}

/* ---- parsing ---------------------------------------------------------------- */

static void parses_defaults_cases_and_expectations(void **state)
{
    (void)state;
    struct ebb_test_file *f = parse_ok(
        "snapshot: testdata/cluster.yaml\n"               /* 1 */
        "args: {maxPodsPerNode: 2}\n"                     /* 2 */
        "cases:\n"                                        /* 3 */
        "- name: ordered\n"                               /* 4 */
        "  expect:\n"                                     /* 5 */
        "    evictions:\n"                                /* 6 */
        "    - shop/web-1\n"                              /* 7 */
        "    - {pod: shop/web-2, node: node-c, reason: cordoned, plugin: P, cycle: 2}\n"
        "    refusals: [{pod: shop/cart-1, why: pdb}, shop/cart-2]\n"
        "    errors: [\"P: boom\"]\n"                     /* 10 */
        "  cycles: 2\n"
        "  now: \"2026-01-02T03:04:05Z\"\n"
        "- name: unordered\n"                             /* 13 */
        "  plugin: PodLifeTime\n"
        "  args: {maxPodLifeTimeSeconds: 60}\n"
        "  limits: {maxNoOfPodsToEvictPerNode: 1}\n"
        "  expect:\n"
        "    evictions: {unordered: [a/b, c/d]}\n"
        "    notes: [\"fits no other node\"]\n"
        "- name: a policy of its own\n"                   /* 20 */
        "  policy: testdata/p.yaml\n"
        "- name: refused\n"
        "  expect: {invalid: out of range}\n");
    const struct ebb_test_case *c;
    int64_t now;

    assert_non_null(f);
    assert_string_equal(f->dir, "dir");
    assert_int_equal(f->ncases, 4);

    c = &f->cases[0];
    assert_string_equal(c->name, "ordered");
    assert_string_equal(c->path, "cases[0]");
    assert_int_equal(c->line, 4);
    assert_string_equal(c->snapshot, "testdata/cluster.yaml");
    assert_string_equal(c->s_snapshot.field, "snapshot");      /* a default */
    assert_int_equal(c->s_snapshot.line, 1);
    assert_null(c->plugin);                                    /* the file's */
    assert_non_null(c->s_args.v);
    assert_string_equal(c->s_args.field, "args");
    assert_int_equal(c->cycles, 2);
    assert_int_equal(ebb_time_parse("2026-01-02T03:04:05Z", &now), 0);
    assert_true(c->now == now);
    assert_false(c->expect.unordered);
    assert_int_equal(c->expect.nevictions, 2);
    assert_string_equal(c->expect.evictions[0].pod, "shop/web-1");
    assert_null(c->expect.evictions[0].node);
    assert_int_equal(c->expect.evictions[0].line, 7);
    assert_string_equal(c->expect.evictions[1].node, "node-c");
    assert_string_equal(c->expect.evictions[1].reason, "cordoned");
    assert_string_equal(c->expect.evictions[1].plugin, "P");
    assert_int_equal(c->expect.evictions[1].cycle, 2);
    assert_true(c->expect.has_refusals);
    assert_int_equal(c->expect.nrefusals, 2);
    assert_string_equal(c->expect.refusals[0].why, "pdb");
    assert_null(c->expect.refusals[1].why);
    assert_int_equal(c->expect.nerrors, 1);
    assert_string_equal(c->expect.errors[0].text, "P: boom");
    assert_false(c->expect.has_notes);

    c = &f->cases[1];
    assert_string_equal(c->plugin, "PodLifeTime");
    assert_string_equal(c->s_args.field, "cases[1].args");
    assert_int_equal(c->s_limits.line, 16);
    assert_int_equal(c->cycles, 1);
    assert_int_equal(ebb_time_parse(EBB_TEST_NOW, &now), 0);
    assert_true(c->now == now);                                /* never the wall clock */
    assert_true(c->expect.unordered);
    assert_int_equal(c->expect.nevictions, 2);
    assert_false(c->expect.has_refusals);
    assert_true(c->expect.has_notes);
    assert_int_equal(c->expect.nnotes, 1);

    c = &f->cases[2];
    assert_string_equal(c->policy, "testdata/p.yaml");
    assert_null(c->s_args.v);                                  /* the default args are the policy's business */
    assert_int_equal(c->expect.nevictions, 0);                 /* nothing expected: none evicted */

    c = &f->cases[3];
    assert_string_equal(c->expect.invalid, "out of range");
    ebb_test_file_free(f);
}

struct bad {
    const char *text;
    int line;
    const char *field;
    const char *msg;
};

static void refuses_bad_files_with_line_and_field(void **state)
{
    (void)state;
    static const struct bad bad[] = {
        { "snapshot: s.yaml\nsnapshots: t.yaml\ncases: [{name: a}]\n", 2, "",
          "unknown key \"snapshots\"" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  expect:\n    evictons: []\n", 5, "cases[0].expect",
          "unknown key \"evictons\" (expected one of: evictions, refusals, errors, notes, invalid)" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  expect:\n    evictions: [web-1]\n", 5,
          "cases[0].expect.evictions[0]", "\"web-1\" is not a pod: write namespace/name" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  expect:\n    refusals:\n    - {pod: a/b, why: pdbb}\n",
          6, "cases[0].expect.refusals[0].why", "\"pdbb\" is not a refusal (expected one of: filtered," },
        { "snapshot: s.yaml\ncases:\n- name: a\n- name: b\n- name: a\n", 5, "cases[2]",
          "a second case named \"a\" (the first is at line 3)" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  policy: p.yaml\n  args: {x: 1}\n", 5, "cases[0].args",
          "`policy` and `args` exclude each other" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  now: yesterday\n", 4, "cases[0].now",
          "\"yesterday\" is not an RFC 3339 time" },
        { "cases:\n- name: a\n  args: {x: 1}\n", 2, "cases[0]", "no snapshot" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  expect:\n    evictions: {ordered: [], unordered: []}\n",
          5, "cases[0].expect.evictions", "either `ordered` or `unordered`" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  expect:\n    evictions: [{pod: a/b, cycle: 2}]\n", 5,
          "cases[0]", "expected in cycle 2, but the case runs 1 cycle" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  plugin: DefaultEvictor\n", 4, "cases[0].plugin",
          "give its args as `evictor`" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  limits: {maxNoOfPodsToEvictPerNod: 1}\n", 4,
          "cases[0].limits", "unknown key \"maxNoOfPodsToEvictPerNod\"" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  cycles: 0\n", 4, "cases[0].cycles", "expected 1 to 1000" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  args: [1]\n", 4, "cases[0].args", "expected a map, got a list" },
        { "snapshot: s.yaml\ncases: []\n", 2, "cases", "non-empty list" },
        { "snapshot: s.yaml\n", 1, "cases", "missing" },
        { "snapshot: s.yaml\ncases:\n- expect: {}\n", 3, "cases[0].name", "missing" },
        { "snapshot: s.yaml\ncases:\n- name: a\n  expect:\n    invalid: x\n    evictions: [a/b]\n", 5,
          "cases[0].expect", "`invalid` expects the policy to be refused" },
    };

    for (size_t i = 0; i < EBB_ARRAY_LEN(bad); i++) {
        struct ebb_test_file *f = NULL;
        struct ebb_error err = { 0 };
        int rc = ebb_test_file_parse(bad[i].text, strlen(bad[i].text), "t_test.yaml", &f, &err);

        if (rc != EBB_ESCHEMA || err.line != bad[i].line || strcmp(err.field, bad[i].field) != 0 ||
            strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("bad[%zu]: rc %d, %s:%d: %s: %s", i, rc, err.file, err.line, err.field, err.msg);
        assert_string_equal(err.file, "t_test.yaml");
        assert_null(f);
    }
}

static void refuses_broken_yaml_with_its_line(void **state)
{
    (void)state;
    const char *text = "snapshot: s.yaml\ncases:\n- name: a\n  expect: {evictions: [a/b}\n";
    struct ebb_test_file *f = NULL;
    struct ebb_error err = { 0 };

    assert_int_equal(ebb_test_file_parse(text, strlen(text), "t_test.yaml", &f, &err), EBB_EPARSE);
    assert_int_equal(err.line, 4);
    assert_null(f);
}

/* ---- the diff ---------------------------------------------------------------- */

static void plan_with(struct ebb_plan *p, const char *const *pods, size_t n)
{
    ebb_plan_init(p);
    p->cycles = 1;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ebb_plan_add_eviction(p, pods[i], "node-a", "P", "test", "too old"), 0);
}

static struct ebb_test_file *expecting(const char *expect)
{
    char text[1024];
    snprintf(text, sizeof(text), "snapshot: s.yaml\ncases:\n- name: a\n  expect:\n%s", expect);
    return parse_ok(text);
}

static void ordered_evictions_match_exactly(void **state)
{
    (void)state;
    static const char *const pods[] = { "shop/a", "shop/b", "shop/c" };
    struct ebb_test_file *f = expecting("    evictions: [shop/a, shop/b, shop/c]\n");
    struct ebb_test_report r = { 0 };
    struct ebb_plan p;

    plan_with(&p, pods, 3);
    assert_int_equal(ebb_test_compare(&f->cases[0].expect, &p, &r), 0);
    assert_int_equal(r.mismatches, 0);
    assert_null(r.text);
    ebb_plan_clear(&p);
    ebb_test_file_free(f);
}

static void ordered_evictions_show_order_missing_and_unexpected(void **state)
{
    (void)state;
    static const char *const pods[] = { "shop/a", "shop/b", "shop/c" };
    struct ebb_test_file *f = expecting("    evictions: [shop/b, shop/a, shop/c]\n");
    struct ebb_test_report r = { 0 };
    struct ebb_plan p;

    plan_with(&p, pods, 3);
    assert_true(ebb_test_compare(&f->cases[0].expect, &p, &r) > 0);
    assert_non_null(strstr(r.text, "evictions (in order; - expected, + actual):\n"
                                   "    - shop/b\n"
                                   "      shop/a\n"
                                   "    + shop/b   [node-a, P, cycle 1: too old]\n"
                                   "      shop/c\n"));
    assert_non_null(strstr(r.text, "(the same pods in a different order)"));
    ebb_test_report_free(&r);
    ebb_test_file_free(f);

    f = expecting("    evictions: [shop/a, shop/x]\n");
    assert_int_equal(ebb_test_compare(&f->cases[0].expect, &p, &r), 3);
    assert_non_null(strstr(r.text, "      shop/a\n"
                                   "    - shop/x\n"
                                   "    + shop/b   [node-a, P, cycle 1: too old]\n"
                                   "    + shop/c   [node-a, P, cycle 1: too old]\n"));
    assert_null(strstr(r.text, "different order"));
    ebb_test_report_free(&r);
    ebb_test_file_free(f);
    ebb_plan_clear(&p);
}

static void attributes_of_an_eviction_are_compared(void **state)
{
    (void)state;
    static const char *const pods[] = { "shop/a" };
    struct ebb_test_file *f = expecting(
        "    evictions: [{pod: shop/a, node: node-b, reason: cordoned, plugin: Q, cycle: 1}]\n");
    struct ebb_test_report r = { 0 };
    struct ebb_plan p;

    plan_with(&p, pods, 1);
    assert_int_equal(ebb_test_compare(&f->cases[0].expect, &p, &r), 3);
    assert_non_null(strstr(r.text, "node: expected node-b, got node-a\n"));
    assert_non_null(strstr(r.text, "reason: expected to contain \"cordoned\", got \"too old\"\n"));
    assert_non_null(strstr(r.text, "plugin: expected Q, got P\n"));
    assert_null(strstr(r.text, "cycle:"));
    ebb_test_report_free(&r);
    ebb_test_file_free(f);

    f = expecting("    evictions: [{pod: shop/a, node: node-a, reason: old, plugin: P}]\n");
    assert_int_equal(ebb_test_compare(&f->cases[0].expect, &p, &r), 0);
    ebb_test_file_free(f);
    ebb_plan_clear(&p);
}

static void unordered_evictions_ignore_order_only(void **state)
{
    (void)state;
    static const char *const pods[] = { "shop/a", "shop/b", "shop/c" };
    struct ebb_test_file *f = expecting("    evictions: {unordered: [shop/c, shop/a, shop/b]}\n");
    struct ebb_test_report r = { 0 };
    struct ebb_plan p;

    plan_with(&p, pods, 3);
    assert_int_equal(ebb_test_compare(&f->cases[0].expect, &p, &r), 0);
    ebb_test_file_free(f);

    f = expecting("    evictions: {unordered: [shop/c, shop/x]}\n");
    assert_int_equal(ebb_test_compare(&f->cases[0].expect, &p, &r), 3);
    assert_non_null(strstr(r.text, "evictions (in any order):\n"
                                   "    missing:    shop/x\n"
                                   "    unexpected: shop/a   [node-a, P, cycle 1: too old]\n"
                                   "    unexpected: shop/b   [node-a, P, cycle 1: too old]\n"));
    ebb_test_report_free(&r);
    ebb_test_file_free(f);
    ebb_plan_clear(&p);
}

static void refusals_errors_and_notes(void **state)
{
    (void)state;
    struct ebb_test_file *f;
    struct ebb_test_report r = { 0 };
    struct ebb_plan p;

    plan_with(&p, NULL, 0);
    ebb_plan_add_refusal(&p, "shop/cart-1", "node-a", "P", "test", "pdb", "shop/cart");
    ebb_plan_add_refusal(&p, "shop/web-1", "node-a", "P", "test", "node-limit", NULL);
    ebb_plan_add_error(&p, "P", "test", "p.lua:3: attempt to index a nil value");
    ebb_plan_add_note(&p, "P", "test", "node-c", "shop/cache-0 fits no other node");

    /* refusals and notes unchecked when not given; an error is never expected by default */
    f = expecting("    evictions: []\n");
    assert_int_equal(ebb_test_compare(&f->cases[0].expect, &p, &r), 1);
    assert_non_null(strstr(r.text, "plugin errors:\n"
                                   "    unexpected: P: p.lua:3: attempt to index a nil value\n"));
    ebb_test_report_free(&r);
    ebb_test_file_free(f);

    f = expecting("    refusals: [{pod: shop/web-1, why: node-limit}, {pod: shop/cart-1, why: pdb}]\n"
                  "    errors: [attempt to index]\n"
                  "    notes: [\"node-c: shop/cache-0 fits\"]\n");
    assert_int_equal(ebb_test_compare(&f->cases[0].expect, &p, &r), 0);
    ebb_test_file_free(f);

    f = expecting("    refusals: [{pod: shop/cart-1, why: node-limit}]\n"
                  "    errors: [attempt to call]\n"
                  "    notes: []\n");
    assert_int_equal(ebb_test_compare(&f->cases[0].expect, &p, &r), 6);
    assert_non_null(strstr(r.text, "refusals:\n"
                                   "    missing:    shop/cart-1 (node-limit)\n"
                                   "    unexpected: shop/cart-1 (pdb, by P, cycle 1: shop/cart)\n"
                                   "    unexpected: shop/web-1 (node-limit, by P, cycle 1)\n"));
    assert_non_null(strstr(r.text, "    missing:    \"attempt to call\"\n"
                                   "    unexpected: P: p.lua:3: attempt to index a nil value\n"));
    assert_non_null(strstr(r.text, "notes:\n"
                                   "    unexpected: P: node-c: shop/cache-0 fits no other node\n"));
    ebb_test_report_free(&r);
    ebb_test_file_free(f);
    ebb_plan_clear(&p);
}

/* Lists too long for a line diff: compared as sets, then by position. */
static void long_lists_are_compared_without_a_line_diff(void **state)
{
    (void)state;
    enum { N = 2100 };
    static char names[N][24];
    struct ebb_test_eviction *x = calloc(N, sizeof(*x));
    struct ebb_test_expect ex = { .nevictions = N, .evictions = x };
    struct ebb_test_report r = { 0 };
    struct ebb_plan p;

    assert_non_null(x);
    ebb_plan_init(&p);
    p.cycles = 1;
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "batch/job-%04d", i);
        x[i].pod = names[i];
    }
    for (int i = 0; i < N; i++) {
        /* the plan has 7 and 8 the other way round */
        ebb_plan_add_eviction(&p, names[i == 7 ? 8 : i == 8 ? 7 : i], "node-a", "P", "test", NULL);
    }
    assert_int_equal(ebb_test_compare(&ex, &p, &r), 1);
    assert_non_null(strstr(r.text, "the same pods in a different order; the first difference is "
                                   "#8: expected batch/job-0007, got batch/job-0008\n"));
    ebb_test_report_free(&r);
    x[7].pod = names[8];
    x[8].pod = names[7];
    assert_int_equal(ebb_test_compare(&ex, &p, &r), 0);
    x[0].pod = "batch/other";
    assert_int_equal(ebb_test_compare(&ex, &p, &r), 2);
    assert_non_null(strstr(r.text, "missing:    batch/other\n"));
    assert_non_null(strstr(r.text, "unexpected: batch/job-0000"));
    ebb_test_report_free(&r);
    ebb_plan_clear(&p);
    free(x);
}

/* ---- invariants ---------------------------------------------------------------- */

static void limits_invariant_catches_a_doctored_plan(void **state)
{
    (void)state;
    struct ebb_policy pol;
    struct ebb_test_report r = { 0 };
    struct ebb_plan p;

    memset(&pol, 0, sizeof(pol));
    pol.max_per_node = 2;
    pol.max_per_namespace = EBB_UNLIMITED;
    pol.max_total = EBB_UNLIMITED;
    ebb_plan_init(&p);
    p.cycles = 1;
    ebb_plan_add_eviction(&p, "shop/a", "node-a", "P", "test", NULL);
    ebb_plan_add_eviction(&p, "shop/b", "node-a", "P", "test", NULL);
    ebb_plan_add_eviction(&p, "batch/c", "node-b", "P", "test", NULL);
    p.cycles = 2;
    ebb_plan_add_eviction(&p, "shop/d", "node-a", "P", "test", NULL);
    assert_int_equal(ebb_test_check_limits(&p, &pol, 1, &r), 0);
    assert_int_equal(ebb_test_check_limits(&p, &pol, 2, &r), 0);

    /* a third eviction from node-a in cycle 1: the core would never */
    p.cycles = 1;
    ebb_plan_add_eviction(&p, "batch/e", "node-a", "P", "test", NULL);
    assert_int_equal(ebb_test_check_limits(&p, &pol, 1, &r), 1);
    assert_non_null(strstr(r.text, "invariant: cycle 1: 3 evictions from node node-a, over "
                                   "maxNoOfPodsToEvictPerNode 2\n"));
    assert_int_equal(ebb_test_check_limits(&p, &pol, 2, &r), 0);
    ebb_test_report_free(&r);

    pol.max_per_node = EBB_UNLIMITED;
    pol.max_per_namespace = 1;
    pol.max_total = 3;
    assert_int_equal(ebb_test_check_limits(&p, &pol, 1, &r), 3);
    assert_non_null(strstr(r.text, "4 evictions in total, over maxNoOfPodsToEvictTotal 3\n"));
    assert_non_null(strstr(r.text, "2 evictions in namespace batch, over maxNoOfPodsToEvictPerNamespace 1\n"));
    assert_non_null(strstr(r.text, "2 evictions in namespace shop, over maxNoOfPodsToEvictPerNamespace 1\n"));
    ebb_test_report_free(&r);
    ebb_plan_clear(&p);
}

/* Two nodes; on node-a a ReplicaSet of two old pods, a ReplicaSet of one
 * old pod and a kube-proxy (DaemonSet). PodLifeTime asks for every old pod;
 * the DefaultEvictor (minReplicas 2) lets both replicas of the first go (an
 * evicted pod still counts for its owner in the cycle, as upstream's
 * informer index holds it) and keeps the lone replica and the DaemonSet
 * pod. */
static const char *cluster =
    "apiVersion: v1\nkind: List\nitems:\n"
    "- {apiVersion: v1, kind: Node, metadata: {name: node-a},\n"
    "   status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}}\n"
    "- {apiVersion: v1, kind: Node, metadata: {name: node-b},\n"
    "   status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}}\n"
    "- apiVersion: v1\n  kind: Pod\n"
    "  metadata: {name: web-1, namespace: shop, uid: u1, creationTimestamp: '2026-11-01T00:00:00Z',\n"
    "             ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d, uid: rs1, controller: true}]}\n"
    "  spec: {nodeName: node-a, containers: [{name: c, image: web:1}]}\n"
    "  status: {phase: Running}\n"
    "- apiVersion: v1\n  kind: Pod\n"
    "  metadata: {name: web-2, namespace: shop, uid: u2, creationTimestamp: '2026-11-02T00:00:00Z',\n"
    "             ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d, uid: rs1, controller: true}]}\n"
    "  spec: {nodeName: node-a, containers: [{name: c, image: web:1}]}\n"
    "  status: {phase: Running}\n"
    "- apiVersion: v1\n  kind: Pod\n"
    "  metadata: {name: solo-1, namespace: shop, uid: u4, creationTimestamp: '2026-11-03T00:00:00Z',\n"
    "             ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: solo-7c, uid: rs2, controller: true}]}\n"
    "  spec: {nodeName: node-a, containers: [{name: c, image: solo:1}]}\n"
    "  status: {phase: Running}\n"
    "- apiVersion: v1\n  kind: Pod\n"
    "  metadata: {name: kube-proxy-x, namespace: kube-system, uid: u3, creationTimestamp: '2026-10-01T00:00:00Z',\n"
    "             ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: kube-proxy, uid: ds1, controller: true}]}\n"
    "  spec: {nodeName: node-a, containers: [{name: c, image: proxy:1}]}\n"
    "  status: {phase: Running}\n";

static const char *policy =
    "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
    "profiles:\n- name: test\n"
    "  pluginConfig:\n"
    "  - {name: DefaultEvictor, args: {minReplicas: 2}}\n"
    "  - {name: PodLifeTime, args: {maxPodLifeTimeSeconds: 3600}}\n"
    "  plugins: {deschedule: {enabled: [PodLifeTime]}}\n";

/* the options of the engine simulated() made: its memory of evictions
 * lives here, as long as the engine (freed after it) */
static struct ebb_sim_opts so;

static struct ebb_engine *simulated(void)
{
    so = (struct ebb_sim_opts){
        .snapshot_buf = cluster,
        .snapshot_len = strlen(cluster),
        .policy_buf = policy,
        .policy_len = strlen(policy),
        .home = ".",
        .cycles = 1,
    };
    struct ebb_engine *e = NULL;
    struct ebb_error err = { 0 };

    assert_int_equal(ebb_time_parse(NOW, &so.now), 0);
    if (ebb_simulate(&so, &e, &err) != 0)
        fail_msg("simulate: %s:%d: %s: %s", err.file, err.line, err.field, err.msg);
    return e;
}

static bool gone(struct ebb_engine *e, const char *ns, const char *name)
{
    struct ebb_pod *p = ebb_cache_pod(ebb_engine_cache(e), ebb_str_find(ns, strlen(ns)),
                                      ebb_str_find(name, strlen(name)));
    assert_non_null(p);
    return (p->flags & EBB_POD_GONE) != 0;
}

static void filter_invariant_replays_the_cycle(void **state)
{
    (void)state;
    struct ebb_engine *e = simulated();
    struct ebb_plan *p = ebb_engine_plan(e);
    struct ebb_test_report r = { 0 };

    /* what the core did: both replicas of web-5d evicted, the lone
     * replica and the DaemonSet pod kept */
    assert_int_equal(p->nevictions, 2);
    assert_string_equal(p->evictions[0].pod, "shop/web-1");
    assert_string_equal(p->evictions[1].pod, "shop/web-2");
    assert_true(gone(e, "shop", "web-1"));
    assert_true(gone(e, "shop", "web-2"));
    assert_false(gone(e, "shop", "solo-1"));
    /* the replay checks each eviction as the cycle made it */
    assert_int_equal(ebb_test_check_filters(e, 1, &r), 0);
    assert_null(r.text);
    assert_true(gone(e, "shop", "web-1"));
    assert_true(gone(e, "shop", "web-2"));
    assert_false(gone(e, "shop", "solo-1"));
    ebb_engine_destroy(e);
    ebb_evmem_free(&so.memory);
}

static void filter_invariant_catches_a_doctored_plan(void **state)
{
    (void)state;
    struct ebb_engine *e = simulated();
    struct ebb_plan *p = ebb_engine_plan(e);
    struct ebb_test_report r = { 0 };

    /* evictions the evictor refused or never saw, as a broken core would record them */
    ebb_plan_add_eviction(p, "kube-system/kube-proxy-x", "node-a", "Doctor", "test", "doctored");
    ebb_plan_add_eviction(p, "shop/solo-1", "node-a", "Doctor", "test", "doctored");
    ebb_plan_add_eviction(p, "shop/web-1", "node-a", "Doctor", "test", "doctored");
    ebb_plan_add_eviction(p, "shop/ghost", "node-a", "Doctor", "test", "doctored");
    assert_int_equal(ebb_test_check_filters(e, 1, &r), 4);
    assert_int_equal(r.mismatches, 4);
    assert_non_null(strstr(r.text, "invariant: cycle 1: kube-system/kube-proxy-x was evicted by "
                                   "Doctor, but the DefaultEvictor filter of profile test protects it\n"));
    /* the lone replica of solo-7c is under minReplicas */
    assert_non_null(strstr(r.text, "invariant: cycle 1: shop/solo-1 was evicted by Doctor, but the "
                                   "DefaultEvictor filter of profile test protects it\n"));
    assert_non_null(strstr(r.text, "invariant: cycle 1: shop/web-1 was evicted twice\n"));
    assert_non_null(strstr(r.text, "invariant: cycle 1: shop/ghost was evicted by Doctor but is "
                                   "not in the cluster\n"));
    /* the cache is as the cycle left it */
    assert_true(gone(e, "shop", "web-1"));
    assert_true(gone(e, "shop", "web-2"));
    assert_false(gone(e, "shop", "solo-1"));
    assert_false(gone(e, "kube-system", "kube-proxy-x"));
    /* a cycle that did not run those has nothing to answer for */
    ebb_test_report_free(&r);
    assert_int_equal(ebb_test_check_filters(e, 2, &r), 0);
    ebb_engine_destroy(e);
    ebb_evmem_free(&so.memory);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_defaults_cases_and_expectations),
        cmocka_unit_test(refuses_bad_files_with_line_and_field),
        cmocka_unit_test(refuses_broken_yaml_with_its_line),
        cmocka_unit_test(ordered_evictions_match_exactly),
        cmocka_unit_test(ordered_evictions_show_order_missing_and_unexpected),
        cmocka_unit_test(attributes_of_an_eviction_are_compared),
        cmocka_unit_test(unordered_evictions_ignore_order_only),
        cmocka_unit_test(refusals_errors_and_notes),
        cmocka_unit_test(long_lists_are_compared_without_a_line_diff),
        cmocka_unit_test(limits_invariant_catches_a_doctored_plan),
        cmocka_unit_test(filter_invariant_replays_the_cycle),
        cmocka_unit_test(filter_invariant_catches_a_doctored_plan),
    };
    ebb_log_level = EBB_LOG_OFF;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
