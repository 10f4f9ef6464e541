/* ebb_engine_observe (ebb explain's view of one pod): observing decides
 * nothing (the plan is byte for byte the one of an unobserved run), the
 * VERDICT sweep gives every filter's answer with DefaultEvictor's upstream
 * reasons, an eviction's outcome comes with its detail, and `ebb explain`
 * itself runs clean under ASan. On spec/fixtures/demo-cluster.json with a
 * 7-day PodLifeTime (7 evictions, 5 PDB refusals). */
#include "fixtures.h"

#include <unistd.h>

#include "ebb.h"
#include "ebb/explain.h"
#include "ebb/simulate.h"

static const char policy[] =
    "apiVersion: descheduler/v1alpha2\n"
    "kind: DeschedulerPolicy\n"
    "profiles:\n"
    "- name: default\n"
    "  pluginConfig:\n"
    "  - name: DefaultEvictor\n"
    "  - name: PodLifeTime\n"
    "    args:\n"
    "      maxPodLifeTimeSeconds: 604800\n"
    "  plugins:\n"
    "    deschedule:\n"
    "      enabled: [PodLifeTime]\n";

struct seen {
    const char *target;             /* "ns/name" to observe; NULL: none */
    int verdicts, checks, evicts;
    int last_why;
    char filter_reason[512];
    char evict_detail[600];
};

static void on_observe(void *ud, const struct ebb_observation *o)
{
    struct seen *s = ud;

    if (o->kind == EBB_OBSERVE_VERDICT) {
        s->verdicts++;
        if (o->ext == EBB_EXT_FILTER)
            snprintf(s->filter_reason, sizeof(s->filter_reason), "%s", o->detail);
    } else if (o->kind == EBB_OBSERVE_CHECK) {
        s->checks++;
    } else {
        s->evicts++;
        s->last_why = o->verdict;
        snprintf(s->evict_detail, sizeof(s->evict_detail), "%s", o->detail);
    }
}

static int watch(void *ud, struct ebb_engine *e, struct ebb_error *err)
{
    struct seen *s = ud;
    char ns[64], name[128];
    const char *slash = strchr(s->target, '/');
    struct ebb_pod *p;

    (void)err;
    snprintf(ns, sizeof(ns), "%.*s", (int)(slash - s->target), s->target);
    snprintf(name, sizeof(name), "%s", slash + 1);
    p = ebb_cache_pod(ebb_engine_cache(e), ebb_str_find(ns, strlen(ns)), ebb_str_find(name, strlen(name)));
    assert_non_null(p);
    ebb_engine_observe(e, p, on_observe, s);
    return 0;
}

/* The plan's JSON of one cycle, the pod observed when s->target is set. */
static char *plan_of(struct seen *s)
{
    struct ebb_sim_opts so = {
        .snapshot = "spec/fixtures/demo-cluster.json",
        .policy = "policy.yaml", .policy_buf = policy, .policy_len = sizeof(policy) - 1,
        .now = 1795348800,   /* 2026-11-22T12:00:00Z */
        .home = ".",
    };
    struct ebb_engine *e = NULL;
    struct ebb_error err;
    char *json;

    if (s != NULL && s->target != NULL) {
        so.before_cycles = watch;
        so.before_ud = s;
    }
    if (ebb_simulate(&so, &e, &err) != 0) {
        char msg[1024];
        ebb_error_format(&err, msg, sizeof(msg));
        fail_msg("%s", msg);
    }
    json = ebb_plan_to_json(ebb_engine_plan(e), false);
    assert_non_null(json);
    ebb_engine_destroy(e);
    ebb_evmem_free(&so.memory);
    return json;
}

static void observing_decides_nothing(void **state)
{
    static const char *const pods[] = {
        "shop/frontend-6b8f9d7c5-a1b2c",    /* evicted */
        "shop/checkout-7f6e5d4c3-c9d0e",    /* refused by its PDB */
        "kube-system/kube-proxy-4456a",     /* protected */
        "shop/frontend-6b8f9d7c5-j7k8l",    /* not a candidate */
    };
    char *plain = plan_of(NULL);

    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(pods); i++) {
        struct seen s = { .target = pods[i] };
        char *seen = plan_of(&s);
        assert_string_equal(plain, seen);
        /* one filter and one preEvictionFilter (DefaultEvictor) at the start */
        assert_int_equal(2, s.verdicts);
        free(seen);
    }
    free(plain);
}

static void outcomes_and_reasons(void **state)
{
    struct seen ev = { .target = "shop/frontend-6b8f9d7c5-a1b2c" };
    struct seen pdb = { .target = "shop/checkout-7f6e5d4c3-c9d0e" };
    struct seen ds = { .target = "kube-system/kube-proxy-4456a" };
    struct seen none = { .target = "shop/frontend-6b8f9d7c5-j7k8l" };

    (void)state;
    free(plan_of(&ev));
    assert_int_equal(1, ev.evicts);
    assert_int_equal(EBB_WHY_OK, ev.last_why);
    assert_string_equal("", ev.filter_reason);
    free(plan_of(&pdb));
    assert_int_equal(1, pdb.evicts);
    assert_int_equal(EBB_WHY_PDB, pdb.last_why);
    assert_non_null(strstr(pdb.evict_detail, "The disruption budget checkout needs 3 healthy pods"));
    free(plan_of(&ds));
    assert_int_equal(0, ds.evicts);
    assert_true(ds.checks > 0);   /* PodLifeTime listed it; the filter said no */
    assert_string_equal("pod has system critical priority, pod has local storage and descheduler "
                        "is not configured with evictLocalStoragePods, pod is related to daemonset "
                        "and descheduler is not configured with evictDaemonSetPods",
                        ds.filter_reason);
    free(plan_of(&none));
    assert_int_equal(0, none.evicts);
    assert_int_equal(0, none.checks);
}

/* `ebb explain` end to end in this process (its leaks are ASan's to see),
 * text and JSON, and an unknown pod. */
static int explain(const char *pod, const char *output)
{
    char *argv[] = { "ebb", "explain", (char *)pod, "--snapshot", "spec/fixtures/demo-cluster.json",
                     "--policy", "observe-policy.yaml", "--now", "2026-11-22T12:00:00Z", "-q",
                     "--output", (char *)output, NULL };
    int saved = dup(1), rc;

    fflush(stdout);
    assert_non_null(freopen("/dev/null", "w", stdout));
    rc = ebb_explain_main(12, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return rc;
}

static void explain_command(void **state)
{
    FILE *f = fopen("observe-policy.yaml", "w");

    (void)state;
    assert_non_null(f);
    fputs(policy, f);
    fclose(f);
    setenv("EBB_HOME", ".", 1);
    assert_int_equal(0, explain("shop/frontend-6b8f9d7c5-a1b2c", "text"));
    assert_int_equal(0, explain("payments/ledger-db-0", "json"));
    assert_int_equal(0, explain("default/netshoot-debug", "text"));
    assert_int_equal(2, explain("shop/no-such-pod", "json"));
    assert_int_equal(2, explain("no-slash", "json"));
    remove("observe-policy.yaml");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(observing_decides_nothing),
        cmocka_unit_test(outcomes_and_reasons),
        cmocka_unit_test(explain_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
