/* engine/core/evmemory.c: the memory of evictions and the workload key. */
#include "fixtures.h"

#include "ebb/evmemory.h"

static struct ebb_evmem_entry entry(int64_t at, const char *ns, const char *pod,
                                    const char *kind, const char *workload, const char *node)
{
    struct ebb_evmem_entry e = { 0 };

    e.at = at;
    e.ns = ebb_str_cstr(ns);
    e.pod = ebb_str_cstr(pod);
    e.kind = ebb_str_cstr(kind);
    e.workload = ebb_str_cstr(workload);
    e.node = ebb_str_cstr(node);
    e.plugin = ebb_str_cstr("LowNodeUtilization");
    e.profile = ebb_str_cstr("default");
    return e;
}

/* The caller's references: the memory took its own. */
static void entry_drop(struct ebb_evmem_entry *e)
{
    ebb_str_release(e->ns);
    ebb_str_release(e->pod);
    ebb_str_release(e->kind);
    ebb_str_release(e->workload);
    ebb_str_release(e->node);
    ebb_str_release(e->plugin);
    ebb_str_release(e->profile);
}

static void add(struct ebb_evmem *m, int64_t at, const char *pod, const char *workload,
                const char *node)
{
    struct ebb_evmem_entry e = entry(at, "shop", pod, "Deployment", workload, node);
    assert_int_equal(ebb_evmem_add(m, &e), 0);
    entry_drop(&e);
}

/* Entries stay ordered by time even when added out of order; every change
 * sets dirty and bumps the generation; free releases every string. */
static void test_add_order_and_strings(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_evmem m;
    uint64_t g;

    (void)state;
    ebb_evmem_init(&m, 3600);
    assert_false(m.dirty);
    add(&m, 1000, "web-7c9f8d6b5-aaaaa", "web", "node-a");
    add(&m, 3000, "web-7c9f8d6b5-ccccc", "web", "node-c");
    g = m.generation;
    add(&m, 2000, "web-7c9f8d6b5-bbbbb", "web", "node-b");
    assert_true(m.generation > g);
    assert_true(m.dirty);
    assert_int_equal(m.n, 3);
    assert_int_equal(m.v[0].at, 1000);
    assert_int_equal(m.v[1].at, 2000);
    assert_string_equal(m.v[1].pod, "web-7c9f8d6b5-bbbbb");
    assert_int_equal(m.v[2].at, 3000);
    ebb_evmem_saved(&m);
    assert_false(m.dirty);
    ebb_evmem_free(&m);
    assert_int_equal(ebb_str_count(), base);
    /* free is NULL-safe and the memory can be used again */
    ebb_evmem_free(NULL);
    ebb_evmem_init(&m, 0);
    add(&m, 1, "p", "w", "n");
    ebb_evmem_free(&m);
    assert_int_equal(ebb_str_count(), base);
}

/* Prune forgets what is older than the window (the default when <= 0) and
 * nothing else. */
static void test_prune(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_evmem m;

    (void)state;
    ebb_evmem_init(&m, 600);
    for (int i = 0; i < 200; i++) {
        char pod[32];
        snprintf(pod, sizeof(pod), "web-7c9f8d6b5-%05d", i);
        add(&m, 10000 + i * 10, pod, "web", "node-a");
    }
    ebb_evmem_saved(&m);
    assert_int_equal(ebb_evmem_prune(&m, 10000 + 199 * 10), 200 - 61);
    assert_int_equal(m.n, 61);
    assert_int_equal(m.v[0].at, 10000 + 139 * 10);
    assert_true(m.dirty);
    ebb_evmem_saved(&m);
    assert_int_equal(ebb_evmem_prune(&m, 10000 + 199 * 10), 0);
    assert_false(m.dirty);
    ebb_evmem_free(&m);

    ebb_evmem_init(&m, 0);
    add(&m, 100, "a", "web", "node-a");
    add(&m, 100 + EBB_EVMEM_WINDOW_DEFAULT, "b", "web", "node-a");
    assert_int_equal(ebb_evmem_prune(&m, 100 + EBB_EVMEM_WINDOW_DEFAULT), 0);
    assert_int_equal(ebb_evmem_prune(&m, 101 + EBB_EVMEM_WINDOW_DEFAULT), 1);
    assert_string_equal(m.v[0].pod, "b");
    ebb_evmem_free(&m);
    assert_int_equal(ebb_str_count(), base);
}

/* landed marks the newest unplaced eviction of that pod name; BOUNCED when
 * the replacement is on the node it left. A StatefulSet pod keeps its name:
 * its second eviction is the one the next placement belongs to. */
static void test_landed(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_evmem m;
    struct ebb_evmem_entry *e;
    ebb_str ns = ebb_str_cstr("shop"), web = ebb_str_cstr("web-7c9f8d6b5-aaaaa");
    ebb_str db = ebb_str_cstr("db-0"), na = ebb_str_cstr("node-a"), nb = ebb_str_cstr("node-b");
    ebb_str repl = ebb_str_cstr("web-7c9f8d6b5-zzzzz"), other = ebb_str_cstr("nope");

    (void)state;
    ebb_evmem_init(&m, 0);
    add(&m, 100, "web-7c9f8d6b5-aaaaa", "web", "node-a");
    add(&m, 100, "db-0", "db", "node-a");
    ebb_evmem_saved(&m);
    assert_null(ebb_evmem_landed(&m, ns, other, repl, nb));
    assert_false(m.dirty);

    e = ebb_evmem_landed(&m, ns, web, repl, nb);
    assert_non_null(e);
    assert_ptr_equal(e->landed, nb);
    assert_ptr_equal(e->replacement, repl);
    assert_true(e->flags & EBB_EVMEM_LANDED);
    assert_false(e->flags & EBB_EVMEM_BOUNCED);
    assert_true(m.dirty);

    e = ebb_evmem_landed(&m, ns, db, db, na);
    assert_true(e->flags & EBB_EVMEM_BOUNCED);
    add(&m, 200, "db-0", "db", "node-a");
    e = ebb_evmem_landed(&m, ns, db, db, nb);
    assert_int_equal(e->at, 200);
    assert_false(e->flags & EBB_EVMEM_BOUNCED);
    assert_true(m.v[1].flags & EBB_EVMEM_BOUNCED);   /* the first stays as it was */

    ebb_evmem_free(&m);
    ebb_str_release(ns), ebb_str_release(web), ebb_str_release(db);
    ebb_str_release(na), ebb_str_release(nb), ebb_str_release(repl), ebb_str_release(other);
    assert_int_equal(ebb_str_count(), base);
}

/* find: one workload's entries since a time, newest first, counted past max. */
static void test_find(void **state)
{
    struct ebb_evmem m;
    const struct ebb_evmem_entry *out[2];
    ebb_str ns = ebb_str_cstr("shop"), dep = ebb_str_cstr("Deployment");
    ebb_str web = ebb_str_cstr("web"), api = ebb_str_cstr("api"), none = ebb_str_cstr("none");

    (void)state;
    ebb_evmem_init(&m, 0);
    add(&m, 100, "web-1", "web", "node-a");
    add(&m, 200, "api-1", "api", "node-a");
    add(&m, 300, "web-2", "web", "node-b");
    add(&m, 400, "web-3", "web", "node-c");
    assert_int_equal(ebb_evmem_find(&m, ns, dep, web, 0, out, 2), 3);
    assert_string_equal(out[0]->pod, "web-3");
    assert_string_equal(out[1]->pod, "web-2");
    assert_int_equal(ebb_evmem_find(&m, ns, dep, web, 300, out, 2), 2);
    assert_int_equal(ebb_evmem_find(&m, ns, dep, web, 301, out, 2), 1);
    assert_int_equal(ebb_evmem_find(&m, ns, dep, api, 0, out, 2), 1);
    assert_string_equal(out[0]->pod, "api-1");
    assert_int_equal(ebb_evmem_find(&m, ns, dep, none, 0, NULL, 0), 0);
    ebb_evmem_free(&m);
    ebb_str_release(ns), ebb_str_release(dep), ebb_str_release(web), ebb_str_release(api);
    ebb_str_release(none);
}

/* ---- the workload key ------------------------------------------------------------ */

#define POD_OWNED                                                                         \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"shop\","     \
    "\"uid\":\"u-%s\",\"labels\":{\"app\":\"web\"%s}%s},"                                     \
    "\"spec\":{\"nodeName\":\"node-a\",\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1.27\"}]}," \
    "\"status\":{\"phase\":\"Running\"}}"

#define OWNER(kind, name) \
    ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"" kind "\",\"name\":\"" name \
    "\",\"uid\":\"o-" name "\",\"controller\":true,\"blockOwnerDeletion\":true}]"

static void expect_key(struct ebb_cache *c, const char *pod, const char *kind, const char *name)
{
    ebb_str ns = ebb_str_cstr("shop"), pn = ebb_str_cstr(pod), k, n;
    struct ebb_pod *p = ebb_cache_pod(c, ns, pn);

    assert_non_null(p);
    assert_int_equal(ebb_evmem_workload_of(c, p, &k, &n), 0);
    assert_string_equal(k, kind);
    assert_string_equal(n, name);
    ebb_str_release(k), ebb_str_release(n), ebb_str_release(ns), ebb_str_release(pn);
}

static void test_workload_of(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_cache *c;

    (void)state;
    fx_begin();
    /* A ReplicaSet in the cache with its Deployment as controller; one in
     * the cache without an owner; one not in the cache (hash fallback). */
    fx_add("{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"web-5d8c7f9b4\","
           "\"namespace\":\"shop\",\"uid\":\"o-web-5d8c7f9b4\",\"ownerReferences\":[{\"apiVersion\":"
           "\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"storefront\",\"uid\":\"d-1\","
           "\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{\"replicas\":3,"
           "\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}");
    fx_add("{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"bare-rs\","
           "\"namespace\":\"shop\",\"uid\":\"o-bare-rs\"},\"spec\":{\"replicas\":2,"
           "\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}");
    fx_add(POD_OWNED, "web-5d8c7f9b4-x2x9q", "1", ",\"pod-template-hash\":\"5d8c7f9b4\"",
           OWNER("ReplicaSet", "web-5d8c7f9b4"));
    fx_add(POD_OWNED, "bare-rs-abcde", "2", "", OWNER("ReplicaSet", "bare-rs"));
    fx_add(POD_OWNED, "api-6b7c8d9f5-q8w7e", "3", ",\"pod-template-hash\":\"6b7c8d9f5\"",
           OWNER("ReplicaSet", "api-6b7c8d9f5"));
    fx_add(POD_OWNED, "old-rs-q8w7e", "4", ",\"pod-template-hash\":\"6b7c8d9f5\"",
           OWNER("ReplicaSet", "old-rs"));
    fx_add(POD_OWNED, "db-0", "5", "", OWNER("StatefulSet", "db"));
    fx_add(POD_OWNED, "report-29412360-7xk2p", "6", "", OWNER("Job", "report-29412360"));
    fx_add(POD_OWNED, "migrate-v2-abcde", "7", "", OWNER("Job", "migrate-v2"));
    fx_add(POD_OWNED, "fluentd-8x7zq", "8", "", OWNER("DaemonSet", "fluentd"));
    fx_add(POD_OWNED, "debug", "9", "", "");
    fx_add(POD_OWNED, "step-1234567-abcde", "10", "", OWNER("Job", "step-1234567"));
    c = fx_load();

    expect_key(c, "web-5d8c7f9b4-x2x9q", "Deployment", "storefront");
    expect_key(c, "bare-rs-abcde", "ReplicaSet", "bare-rs");
    expect_key(c, "api-6b7c8d9f5-q8w7e", "Deployment", "api");
    expect_key(c, "old-rs-q8w7e", "ReplicaSet", "old-rs");     /* the hash is not its suffix */
    expect_key(c, "db-0", "StatefulSet", "db");
    expect_key(c, "report-29412360-7xk2p", "CronJob", "report");
    expect_key(c, "migrate-v2-abcde", "Job", "migrate-v2");
    expect_key(c, "step-1234567-abcde", "Job", "step-1234567"); /* 7 digits: not a CronJob's */
    expect_key(c, "fluentd-8x7zq", "DaemonSet", "fluentd");
    expect_key(c, "debug", "Pod", "debug");

    /* without a cache, the hash fallback still keys a rollout together */
    {
        ebb_str ns = ebb_str_cstr("shop"), pn = ebb_str_cstr("web-5d8c7f9b4-x2x9q"), k, n;
        assert_int_equal(ebb_evmem_workload_of(NULL, ebb_cache_pod(c, ns, pn), &k, &n), 0);
        assert_string_equal(k, "Deployment");
        assert_string_equal(n, "web");
        ebb_str_release(k), ebb_str_release(n), ebb_str_release(ns), ebb_str_release(pn);
    }
    ebb_cache_destroy(c);
    assert_int_equal(ebb_str_count(), base);
}

/* The entry the rule names, by a scan of every entry (what the name index
 * must agree with): the newest of (ns, pod) not landed, else the newest. */
static const struct ebb_evmem_entry *landed_by_scan(const struct ebb_evmem *m, ebb_str ns,
                                                    ebb_str pod)
{
    const struct ebb_evmem_entry *hit = NULL;

    for (size_t i = m->n; i-- > 0;) {
        if (m->v[i].ns != ns || m->v[i].pod != pod)
            continue;
        if (!(m->v[i].flags & EBB_EVMEM_LANDED))
            return &m->v[i];
        if (hit == NULL)
            hit = &m->v[i];
    }
    return hit;
}

/* Thousands of landings over hundreds of entries, StatefulSet pods that
 * keep their names evicted again and again, entries added out of order
 * and pruned between rounds: every landing picks the entry the scan picks,
 * and the index is used (a what-if places thousands of replacements). */
static void test_landed_index(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_evmem m;
    unsigned seed = 7;
    bool indexed = false;

    (void)state;
    ebb_evmem_init(&m, 3600);
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 150; i++) {
            char pod[32], node[32];
            seed = seed * 1103515245u + 12345u;
            snprintf(pod, sizeof(pod), "db-%u", (seed >> 8) % 40);
            snprintf(node, sizeof(node), "node-%u", (seed >> 16) % 9);
            add(&m, 1000 + round * 600 + (int64_t)((seed >> 4) % 700), pod, "db", node);
        }
        for (int i = 0; i < 400; i++) {
            char pod[32], repl[32];
            ebb_str ns = ebb_str_cstr("shop"), p, r, nd = ebb_str_cstr("node-z");
            const struct ebb_evmem_entry *want;
            struct ebb_evmem_entry *got;
            seed = seed * 1103515245u + 12345u;
            snprintf(pod, sizeof(pod), "db-%u", (seed >> 8) % 44);   /* some never evicted */
            snprintf(repl, sizeof(repl), "db-%u-r%d", (seed >> 8) % 44, i);
            p = ebb_str_cstr(pod);
            r = ebb_str_cstr(repl);
            want = landed_by_scan(&m, ns, p);
            got = ebb_evmem_landed(&m, ns, p, r, nd);
            assert_ptr_equal(got, want);
            if (got != NULL)
                assert_true(got->flags & EBB_EVMEM_LANDED);
            indexed |= m.by_name.n == m.n;
            ebb_str_release(ns);
            ebb_str_release(p);
            ebb_str_release(r);
            ebb_str_release(nd);
        }
        ebb_evmem_prune(&m, 1000 + round * 600 + 3600 - 900);
    }
    assert_true(indexed);
    ebb_evmem_free(&m);
    assert_int_equal(ebb_str_count(), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_order_and_strings),
        cmocka_unit_test(test_prune),
        cmocka_unit_test(test_landed),
        cmocka_unit_test(test_landed_index),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_workload_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
