/* engine/model/taints.c: Toleration.ToleratesTaint and the descheduler's helpers. */
#include "fixtures.h"

#include "ebb/taints.h"

/* ---- helpers: objects owned as the cache owns them --------------------- */

static struct ebb_taint taint(const char *key, const char *value, unsigned effect)
{
    struct ebb_taint t = { ebb_str_cstr(key), ebb_str_cstr(value), (uint8_t)effect };
    return t;
}

static struct ebb_toleration tol(const char *key, int op, const char *value, unsigned effect)
{
    struct ebb_toleration t = { ebb_str_cstr(key), ebb_str_cstr(value), (uint8_t)op,
                                (uint8_t)effect, false, 0 };
    return t;
}

static void taint_clear(struct ebb_taint *t)
{
    ebb_str_release(t->key);
    ebb_str_release(t->value);
}

static void tol_clear(struct ebb_toleration *t)
{
    ebb_str_release(t->key);
    ebb_str_release(t->value);
}

static struct ebb_node *node_with(const char *name, const struct ebb_taint *taints, uint16_t n)
{
    struct ebb_node *node = calloc(1, sizeof(*node));

    assert_non_null(node);
    node->name = ebb_str_cstr(name);
    node->ready = true;
    if (n > 0) {
        node->taints = calloc(n, sizeof(*node->taints));
        assert_non_null(node->taints);
        memcpy(node->taints, taints, n * sizeof(*taints));
    }
    node->ntaints = n;
    return node;
}

static struct ebb_pod *pod_with(const char *name, const struct ebb_toleration *tols, uint16_t n)
{
    struct ebb_pod *pod = calloc(1, sizeof(*pod));

    assert_non_null(pod);
    pod->ns = ebb_str_cstr("default");
    pod->name = ebb_str_cstr(name);
    if (n > 0) {
        pod->tolerations = calloc(n, sizeof(*pod->tolerations));
        assert_non_null(pod->tolerations);
        memcpy(pod->tolerations, tols, n * sizeof(*tols));
    }
    pod->ntolerations = n;
    return pod;
}

#define NS EBB_EFFECT_NO_SCHEDULE
#define PNS EBB_EFFECT_PREFER_NO_SCHEDULE
#define NE EBB_EFFECT_NO_EXECUTE
#define ALL EBB_EFFECT_ALL
#define EQ EBB_TOL_EQUAL
#define EX EBB_TOL_EXISTS
#define LT EBB_TOL_LT
#define GT EBB_TOL_GT

/* ---- ToleratesTaint ---------------------------------------------------- */

static void test_tolerates(void **state)
{
    static const struct {
        const char *name;
        const char *tkey, *tval;
        int op;
        unsigned teff;
        const char *key, *val;
        unsigned eff;
        bool want;
    } c[] = {
        { "equal: key, value and effect", "dedicated", "gpu", EQ, NS, "dedicated", "gpu", NS, true },
        { "equal: other value", "dedicated", "gpu", EQ, NS, "dedicated", "infra", NS, false },
        { "equal: other key", "dedicated", "gpu", EQ, NS, "team", "gpu", NS, false },
        { "equal: other effect", "dedicated", "gpu", EQ, NS, "dedicated", "gpu", NE, false },
        { "equal: empty effect is every effect", "dedicated", "gpu", EQ, ALL, "dedicated", "gpu",
          PNS, true },
        { "exists: any value", "node.kubernetes.io/unreachable", NULL, EX, NE,
          "node.kubernetes.io/unreachable", NULL, NE, true },
        { "exists: value ignored", "node.kubernetes.io/unreachable", "whatever", EX, NE,
          "node.kubernetes.io/unreachable", "", NE, true },
        { "exists: other key", "node.kubernetes.io/unreachable", NULL, EX, NE,
          "node.kubernetes.io/not-ready", NULL, NE, false },
        { "exists: effect still compared", "node.kubernetes.io/not-ready", NULL, EX, NE,
          "node.kubernetes.io/not-ready", NULL, NS, false },
        { "exists, empty key: every key", "", NULL, EX, ALL,
          "node-role.kubernetes.io/control-plane", NULL, NS, true },
        { "exists, NULL key: every key", NULL, NULL, EX, ALL, "example.com/anything", "v", PNS,
          true },
        { "exists, empty key, effect set", NULL, NULL, EX, NE,
          "node.kubernetes.io/memory-pressure", NULL, NS, false },
        /* the API refuses Equal with an empty key, but the function itself
         * still ignores the key and compares values */
        { "equal, empty key: value compared", NULL, NULL, EQ, ALL, "node.kubernetes.io/unreachable",
          NULL, NE, true },
        { "equal, empty key: value differs", NULL, NULL, EQ, ALL, "dedicated", "gpu", NS, false },
        { "absent and empty value are equal", "dedicated", "", EQ, NS, "dedicated", NULL, NS,
          true },
        { "unknown operator tolerates nothing", "dedicated", "gpu", 7, NS, "dedicated", "gpu", NS,
          false },
        { "unknown operator, empty key", NULL, NULL, 9, ALL, "dedicated", "gpu", NS, false },
        /* Lt/Gt: the taint's value against the toleration's, as integers */
        { "gt: above", "example.com/sla", "900", GT, NS, "example.com/sla", "950", NS, true },
        { "gt: equal", "example.com/sla", "950", GT, NS, "example.com/sla", "950", NS, false },
        { "lt: below", "example.com/sla", "1000", LT, NS, "example.com/sla", "950", NS, true },
        { "lt: above", "example.com/sla", "20", LT, NS, "example.com/sla", "950", NS, false },
        { "gt: negative", "example.com/sla", "-5", GT, NS, "example.com/sla", "0", NS, true },
        { "gt: int64 range", "example.com/sla", "-9223372036854775808", GT, NS, "example.com/sla",
          "9223372036854775807", NS, true },
        { "gt: beyond int64", "example.com/sla", "0", GT, NS, "example.com/sla",
          "9223372036854775808", NS, false },
        { "lt: leading zero", "example.com/sla", "0999", LT, NS, "example.com/sla", "950", NS, false },
        { "lt: plus sign", "example.com/sla", "+999", LT, NS, "example.com/sla", "950", NS, false },
        { "gt: minus zero", "example.com/sla", "-0", GT, NS, "example.com/sla", "950", NS, false },
        { "gt: taint not a number", "example.com/sla", "1", GT, NS, "example.com/sla", "high", NS,
          false },
        { "gt: empty taint value", "example.com/sla", "1", GT, NS, "example.com/sla", NULL, NS, false },
        { "gt: other key", "example.com/sla", "1", GT, NS, "example.com/tier", "5", NS, false },
        { "gt: zero", "example.com/sla", "0", GT, NS, "example.com/sla", "950", NS, true },
        { "lt: zero taint", "example.com/sla", "1", LT, NS, "example.com/sla", "0", NS, true },
        { "gt: effect compared", "example.com/sla", "1", GT, NE, "example.com/sla", "5", NS, false },
    };
    size_t base = ebb_str_count();

    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(c); i++) {
        struct ebb_toleration t = tol(c[i].tkey, c[i].op, c[i].tval, c[i].teff);
        struct ebb_taint x = taint(c[i].key, c[i].val, c[i].eff);
        if (ebb_toleration_tolerates(&t, &x) != c[i].want)
            fail_msg("%s: got %d", c[i].name, !c[i].want);
        tol_clear(&t);
        taint_clear(&x);
    }
    assert_false(ebb_toleration_tolerates(NULL, NULL));
    assert_int_equal(ebb_str_count(), base);
}


static void test_tolerations_tolerate(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_toleration tols[] = {
        tol("node.kubernetes.io/not-ready", EX, NULL, NE),
        tol("node.kubernetes.io/unreachable", EX, NULL, NE),
    };
    struct ebb_taint unreachable = taint("node.kubernetes.io/unreachable", NULL, NE);
    struct ebb_taint disk = taint("node.kubernetes.io/disk-pressure", NULL, NS);

    (void)state;
    assert_true(ebb_tolerations_tolerate(tols, 2, &unreachable));
    assert_false(ebb_tolerations_tolerate(tols, 2, &disk));
    assert_false(ebb_tolerations_tolerate(tols, 1, &unreachable));   /* only n count */
    assert_false(ebb_tolerations_tolerate(NULL, 0, &unreachable));
    tol_clear(&tols[0]);
    tol_clear(&tols[1]);
    taint_clear(&unreachable);
    taint_clear(&disk);
    assert_int_equal(ebb_str_count(), base);
}

/* ---- the scheduler's TaintToleration filter ---------------------------- */

/* Without the comparison (Koordinator v1.8.0) Lt and Gt tolerate nothing;
 * the other operators answer as before. */
static void test_tolerates_without_comparison(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_taint sla[] = { taint("example.com/sla", "950", NS) };
    struct ebb_toleration gt[] = { tol("example.com/sla", GT, "900", NS) };
    struct ebb_toleration eq[] = { tol("example.com/sla", EQ, "950", NS) };
    struct ebb_node *n = node_with("general-e-1", sla, 1);
    struct ebb_pod *pg = pod_with("frontend-5f4e3d2c1-j5k6l", gt, 1);
    struct ebb_pod *pe = pod_with("frontend-5f4e3d2c1-a1s2d", eq, 1);

    (void)state;
    assert_true(ebb_toleration_tolerates_as(&pg->tolerations[0], &n->taints[0], true));
    assert_false(ebb_toleration_tolerates_as(&pg->tolerations[0], &n->taints[0], false));
    assert_true(ebb_toleration_tolerates_as(&pe->tolerations[0], &n->taints[0], false));
    assert_true(ebb_pod_tolerates_node_taints(pg, n, NS));
    assert_true(ebb_pod_tolerates_node_taints_as(pg, n, NS, true));
    assert_false(ebb_pod_tolerates_node_taints_as(pg, n, NS, false));
    assert_true(ebb_pod_tolerates_node_taints_as(pe, n, NS, false));
    ebb_node_free(n);
    ebb_pod_free(pg);
    ebb_pod_free(pe);
    assert_int_equal(ebb_str_count(), base);
}

static void test_pod_tolerates_node_taints(void **state)
{
    size_t base = ebb_str_count();
    const unsigned filter = EBB_EFFECT_NO_SCHEDULE | EBB_EFFECT_NO_EXECUTE;
    struct ebb_taint cp[] = { taint("node-role.kubernetes.io/control-plane", NULL, NS) };
    struct ebb_taint soft[] = { taint("example.com/spot", "true", PNS) };
    struct ebb_taint down[] = {
        taint("node.kubernetes.io/unreachable", NULL, NE),
        taint("node.kubernetes.io/unschedulable", NULL, NS),
    };
    struct ebb_taint odd[] = { taint("example.com/odd", NULL, EBB_EFFECT_OTHER) };
    struct ebb_node *control = node_with("cp-1", cp, 1);
    struct ebb_node *spot = node_with("spot-1", soft, 1);
    struct ebb_node *gone = node_with("worker-3", down, 2);
    struct ebb_node *clean = node_with("worker-1", NULL, 0);
    struct ebb_node *weird = node_with("worker-9", odd, 1);
    struct ebb_toleration cp_tol[] = { tol("node-role.kubernetes.io/control-plane", EX, NULL, NS) };
    struct ebb_toleration ds_tols[] = {
        tol("node.kubernetes.io/unreachable", EX, NULL, NE),
        tol("node.kubernetes.io/unschedulable", EX, NULL, NS),
    };
    struct ebb_toleration everything[] = { tol(NULL, EX, NULL, ALL) };
    struct ebb_pod *plain = pod_with("web-7d4b9c8f5-abcde", NULL, 0);
    struct ebb_pod *etcd = pod_with("etcd-cp-1", cp_tol, 1);
    struct ebb_pod *ds = pod_with("node-exporter-x2x9q", ds_tols, 2);
    struct ebb_pod *all = pod_with("kube-proxy-8v7zq", everything, 1);

    (void)state;
    assert_true(ebb_pod_tolerates_node_taints(plain, clean, filter));
    assert_false(ebb_pod_tolerates_node_taints(plain, control, filter));
    assert_true(ebb_pod_tolerates_node_taints(etcd, control, filter));
    /* PreferNoSchedule is not in the filter's mask */
    assert_true(ebb_pod_tolerates_node_taints(plain, spot, filter));
    assert_false(ebb_pod_tolerates_node_taints(plain, spot, filter | EBB_EFFECT_PREFER_NO_SCHEDULE));
    /* every listed taint must be tolerated */
    assert_false(ebb_pod_tolerates_node_taints(plain, gone, filter));
    assert_false(ebb_pod_tolerates_node_taints(etcd, gone, filter));
    assert_true(ebb_pod_tolerates_node_taints(ds, gone, filter));
    assert_true(ebb_pod_tolerates_node_taints(ds, gone, EBB_EFFECT_NO_EXECUTE));
    assert_true(ebb_pod_tolerates_node_taints(all, gone, filter));
    assert_true(ebb_pod_tolerates_node_taints(all, spot, filter | EBB_EFFECT_PREFER_NO_SCHEDULE));
    /* an effect the API does not define is outside both masks */
    assert_true(ebb_pod_tolerates_node_taints(plain, weird, filter));
    assert_false(ebb_pod_tolerates_node_taints(plain, weird, EBB_EFFECT_OTHER));
    assert_false(ebb_pod_tolerates_node_taints(NULL, clean, filter));

    ebb_node_free(control);
    ebb_node_free(spot);
    ebb_node_free(gone);
    ebb_node_free(clean);
    ebb_node_free(weird);
    ebb_pod_free(plain);
    ebb_pod_free(etcd);
    ebb_pod_free(ds);
    ebb_pod_free(all);
    assert_int_equal(ebb_str_count(), base);
}

/* ---- utils.PodToleratesTaints (LowNodeUtilization destinations) -------- */

static void test_strict(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_taint two[] = {
        taint("dedicated", "batch", NS),
        taint("example.com/spot", "true", PNS),
    };
    struct ebb_taint one[] = { taint("dedicated", "batch", NS) };
    struct ebb_node *batch = node_with("batch-1", two, 2);
    struct ebb_node *batch_only = node_with("batch-2", one, 1);
    struct ebb_node *clean = node_with("worker-1", NULL, 0);
    struct ebb_toleration wildcard[] = { tol(NULL, EX, NULL, ALL) };
    struct ebb_toleration wildcard2[] = { tol(NULL, EX, NULL, ALL),
                                          tol("node.kubernetes.io/not-ready", EX, NULL, NE) };
    struct ebb_toleration batch_tols[] = { tol("dedicated", EQ, "batch", NS),
                                           tol("node.kubernetes.io/unreachable", EX, NULL, NE) };
    struct ebb_pod *wild = pod_with("w1", wildcard, 1);
    struct ebb_pod *wild2 = pod_with("w2", wildcard2, 2);
    struct ebb_pod *bt = pod_with("batch-job-x", batch_tols, 2);
    struct ebb_pod *plain = pod_with("web", NULL, 0);

    (void)state;
    /* one wildcard toleration tolerates both taints, but counts come first */
    assert_false(ebb_pod_tolerates_all_taints_strict(wild, batch));
    assert_true(ebb_pod_tolerates_node_taints(wild, batch, EBB_EFFECT_NO_SCHEDULE |
                                              EBB_EFFECT_PREFER_NO_SCHEDULE));
    assert_true(ebb_pod_tolerates_all_taints_strict(wild2, batch));
    /* enough tolerations, but PreferNoSchedule counts here too */
    assert_false(ebb_pod_tolerates_all_taints_strict(bt, batch));
    assert_true(ebb_pod_tolerates_all_taints_strict(bt, batch_only));
    assert_true(ebb_pod_tolerates_all_taints_strict(wild, batch_only));
    assert_true(ebb_pod_tolerates_all_taints_strict(plain, clean));
    assert_false(ebb_pod_tolerates_all_taints_strict(plain, batch_only));
    assert_false(ebb_pod_tolerates_all_taints_strict(plain, NULL));

    ebb_node_free(batch);
    ebb_node_free(batch_only);
    ebb_node_free(clean);
    ebb_pod_free(wild);
    ebb_pod_free(wild2);
    ebb_pod_free(bt);
    ebb_pod_free(plain);
    assert_int_equal(ebb_str_count(), base);
}

static void test_effect_names(void **state)
{
    (void)state;
    assert_int_equal(ebb_effect_parse("NoSchedule"), EBB_EFFECT_NO_SCHEDULE);
    assert_int_equal(ebb_effect_parse("PreferNoSchedule"), EBB_EFFECT_PREFER_NO_SCHEDULE);
    assert_int_equal(ebb_effect_parse("NoExecute"), EBB_EFFECT_NO_EXECUTE);
    assert_int_equal(ebb_effect_parse(""), EBB_EFFECT_ALL);
    assert_int_equal(ebb_effect_parse(NULL), EBB_EFFECT_ALL);
    assert_int_equal(ebb_effect_parse("noschedule"), EBB_EFFECT_OTHER);
    assert_int_equal(ebb_effect_parse("NoScheduleX"), EBB_EFFECT_OTHER);
    assert_string_equal(ebb_effect_name(EBB_EFFECT_NO_SCHEDULE), "NoSchedule");
    assert_string_equal(ebb_effect_name(EBB_EFFECT_PREFER_NO_SCHEDULE), "PreferNoSchedule");
    assert_string_equal(ebb_effect_name(EBB_EFFECT_NO_EXECUTE), "NoExecute");
    assert_string_equal(ebb_effect_name(EBB_EFFECT_ALL), "");
    for (unsigned e = 1; e <= 4; e <<= 1)
        assert_int_equal(ebb_effect_parse(ebb_effect_name(e)), e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tolerates),
        cmocka_unit_test(test_tolerations_tolerate),
        cmocka_unit_test(test_pod_tolerates_node_taints),
        cmocka_unit_test(test_tolerates_without_comparison),
        cmocka_unit_test(test_strict),
        cmocka_unit_test(test_effect_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
