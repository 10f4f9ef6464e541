/* The cache: a loaded view and every index over it, pods replaced, deleted
 * and purged, the PDBs an eviction checks (ebb_cache_pdbs_selecting), and
 * the content version hiding leaves alone. Under ASan: no pod leaks or is
 * freed twice. */
#include "fixtures.h"

#include <cjson/cJSON.h>

#include "ebb/cache.h"
#include "ebb/snapshot.h"

static void begin(void)
{
    fx_begin();
}

static void node(const char *name)
{
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\"},"
        "\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"110\"}}}",
        name, name);
}

static char pod_json[2048];

/* A ReplicaSet pod with labels app=<app> and tier=<tier>, tolerations,
 * images, requests, spread constraints, affinity, a node selector. */
static const char *pod_text(const char *ns, const char *name, const char *node_name,
                            const char *app, const char *tier)
{
    snprintf(pod_json, sizeof(pod_json),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
             "\"uid\":\"u-%s-%s\",\"creationTimestamp\":\"2026-11-01T00:00:00Z\","
             "\"labels\":{\"app\":\"%s\",\"tier\":\"%s\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
             "\"kind\":\"ReplicaSet\",\"name\":\"%s-rs\",\"uid\":\"rs-%s\",\"controller\":true}]},"
             "\"spec\":{\"nodeName\":\"%s\",\"nodeSelector\":{\"pool\":\"a\"},"
             "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}],"
             "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
             "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\","
             "\"values\":[\"a\"]}]}]}}},"
             "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","
             "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":{\"app\":\"%s\"}}}],"
             "\"containers\":[{\"name\":\"c\",\"image\":\"%s:1\",\"resources\":{\"requests\":"
             "{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}]},\"status\":{\"phase\":\"Running\"}}",
             name, ns, ns, name, app, tier, app, app, node_name, app, app);
    return pod_json;
}

static void pod(const char *ns, const char *name, const char *node_name, const char *app,
                const char *tier)
{
    fx_add("%s", pod_text(ns, name, node_name, app, tier));
}

static void pdb(const char *ns, const char *name, const char *selector)
{
    fx_add("{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"%s\","
        "\"namespace\":\"%s\"},\"spec\":{\"minAvailable\":1%s%s},\"status\":{\"disruptionsAllowed\":1}}",
        name, ns, selector ? ",\"selector\":" : "", selector ? selector : "");
}

static struct ebb_cache *load(void)
{
    return fx_load();
}

static int put_text(struct ebb_cache *c, const char *text)
{
    cJSON *j = cJSON_Parse(text);
    struct ebb_object o = { 0 };
    struct ebb_error err = { 0 };
    int rc;

    assert_non_null(j);
    rc = ebb_decode_object(j, &o, &err);
    cJSON_Delete(j);
    assert_int_equal(rc, 0);
    if ((rc = ebb_cache_put(c, &o)) != 0)
        ebb_object_free(&o);
    return rc;
}

static struct ebb_pod *P(struct ebb_cache *c, const char *ns, const char *name)
{
    return ebb_cache_pod(c, ebb_str_find(ns, strlen(ns)), ebb_str_find(name, strlen(name)));
}

static ebb_str S(const char *s)
{
    return ebb_str_find(s, strlen(s));
}

/* ---- a loaded view ------------------------------------------------------------ */

/* Pods take slots in the order they were read; every index finds them, a
 * node's pods sorted by namespace/name, every array read back. (Laying the
 * pods out again in the cycle's order, as ebb once did after a load, cost
 * a copy of every pod that the heap kept: a quarter of the peak memory.) */
static void loaded_view_keeps_indexes(void **state)
{
    struct ebb_cache *c;
    static const char *const want[] = { "b/p3", "a/p1", "b/p1", "a/p2", "a/p3" };
    (void)state;

    begin();
    node("n2");
    node("n1");
    pod("b", "p3", "n2", "web", "front");
    pod("a", "p1", "n2", "web", "front");
    pod("b", "p1", "n1", "db", "back");
    pod("a", "p2", "n1", "web", "front");
    fx_add("%s", pod_text("a", "p3", "gone-node", "db", "back"));   /* no such node: last */
    c = load();
    assert_int_equal(ebb_cache_pod_slots(c), 5);
    for (uint32_t i = 0; i < 5; i++) {
        struct ebb_pod *p = ebb_cache_pod_at(c, i);
        char key[64];
        assert_non_null(p);
        assert_int_equal(p->slot, i);
        assert_string_equal(ebb_pod_key(p, key, sizeof(key)), want[i]);
        assert_ptr_equal(P(c, p->ns, p->name), p);
        /* the arrays read back */
        assert_int_equal(p->nowners, 1);
        assert_string_equal(p->owners[0].kind, "ReplicaSet");
        assert_string_equal(ebb_labels_getc(&p->labels, "tier"), i == 2 || i == 4 ? "back" : "front");
        assert_int_equal(p->ntolerations, 1);
        assert_int_equal(p->nimages, 1);
        assert_int_equal(ebb_res_get(&p->requests, EBB_RES_CPU), 100);
        assert_int_equal(p->ntsc, 1);
        assert_non_null(p->affinity);
        assert_true(p->affinity->has_required);
        assert_int_equal(p->node_selector.n, 1);
    }
    {
        const struct ebb_podvec *pv = ebb_cache_pods_on_node(c, S("n1"));
        assert_int_equal(pv->n, 2);
        assert_ptr_equal(pv->v[0], P(c, "a", "p2"));
        assert_ptr_equal(pv->v[1], P(c, "b", "p1"));
        assert_int_equal(pv->nactive, 2);
        assert_int_equal(pv->req[EBB_RES_CPU], 200);
    }
    assert_int_equal(ebb_cache_count_owned(c, S("rs-web")), 3);
    ebb_cache_destroy(c);
}

/* A node's sums of non-zero requests (the scheduler's NonZeroRequested):
 * a best-effort pod counts 100m and 200Mi, a pod with requests its own;
 * hiding, showing, finishing and deleting move them, and a sum past
 * int64 saturates and comes back exactly. */
static void nonzero_sums_follow_pods(void **state)
{
    static const char be[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"be\",\"namespace\":\"a\","
        "\"uid\":\"u-be\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\","
        "\"image\":\"x:1\"}]},\"status\":{\"phase\":\"%s\"}}";
    static const char huge[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"a\","
        "\"uid\":\"u-%s\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\","
        "\"image\":\"x:1\",\"resources\":{\"requests\":{\"cpu\":\"9000P\",\"memory\":\"9E\"}}}]},"
        "\"status\":{\"phase\":\"Running\"}}";
    char buf[1024];
    struct ebb_cache *c;
    const struct ebb_podvec *pv;
    (void)state;

    begin();
    node("n1");
    pod("a", "p1", "n1", "web", "front");   /* 100m, 64Mi */
    snprintf(buf, sizeof(buf), be, "Running");
    fx_add("%s", buf);
    c = load();
    pv = ebb_cache_pods_on_node(c, S("n1"));
    assert_int_equal(pv->nz[0], 200);
    assert_int_equal(pv->nz[1], (64 + 200) * 1024LL * 1024);
    ebb_cache_hide_pod(c, P(c, "a", "be"));
    assert_int_equal(pv->nz[0], 100);
    assert_int_equal(pv->nz[1], 64 * 1024LL * 1024);
    ebb_cache_unhide_all(c);
    assert_int_equal(pv->nz[0], 200);
    snprintf(buf, sizeof(buf), be, "Succeeded");
    assert_int_equal(put_text(c, buf), 0);
    assert_int_equal(pv->nz[0], 100);
    snprintf(buf, sizeof(buf), huge, "h1", "h1");
    assert_int_equal(put_text(c, buf), 0);
    snprintf(buf, sizeof(buf), huge, "h2", "h2");
    assert_int_equal(put_text(c, buf), 0);
    assert_int_equal(pv->nz[0], INT64_MAX);
    assert_int_equal(pv->nz[1], INT64_MAX);
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("a"), S("h1")), 0);
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("a"), S("h2")), 0);
    assert_int_equal(pv->nz[0], 100);
    assert_int_equal(pv->nz[1], 64 * 1024LL * 1024);
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("a"), S("p1")), 0);
    assert_int_equal(pv->nz[0], 0);
    assert_int_equal(pv->nz[1], 0);
    ebb_cache_destroy(c);
}

/* Pods replaced, deleted, hidden and purged: freed once, indexes right,
 * a freed slot taken again. */
static void pods_leave_cleanly(void **state)
{
    struct ebb_cache *c;
    uint64_t epoch;
    (void)state;

    begin();
    node("n1");
    pod("a", "p1", "n1", "web", "front");
    pod("a", "p2", "n1", "web", "front");
    pod("a", "p3", "n1", "web", "front");
    c = load();
    epoch = ebb_cache_epoch(c);
    /* replaced: the new version is a heap pod in the same slot */
    assert_int_equal(put_text(c, pod_text("a", "p2", "n1", "web", "canary")), 0);
    assert_true(ebb_cache_epoch(c) > epoch);
    assert_string_equal(ebb_labels_getc(&P(c, "a", "p2")->labels, "tier"), "canary");
    assert_int_equal(P(c, "a", "p2")->slot, 1);
    /* deleted, and hidden then purged */
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("a"), S("p1")), 0);
    assert_null(P(c, "a", "p1"));
    assert_int_equal(ebb_cache_count_owned(c, S("rs-web")), 2);
    /* a hidden (evicted) pod still counts for its owner until it is gone */
    ebb_cache_hide_pod(c, P(c, "a", "p3"));
    assert_int_equal(ebb_cache_count_owned(c, S("rs-web")), 2);
    ebb_cache_unhide_all(c);
    assert_int_equal(ebb_cache_count_owned(c, S("rs-web")), 2);
    ebb_cache_hide_pod(c, P(c, "a", "p3"));
    ebb_cache_purge_hidden(c);
    assert_int_equal(ebb_cache_count_owned(c, S("rs-web")), 1);
    assert_null(P(c, "a", "p3"));
    /* a new pod takes a freed slot */
    assert_int_equal(put_text(c, pod_text("a", "p0", "n1", "web", "front")), 0);
    assert_true(P(c, "a", "p0")->slot == 0 || P(c, "a", "p0")->slot == 2);
    assert_ptr_equal(ebb_cache_pod_at(c, P(c, "a", "p0")->slot), P(c, "a", "p0"));
    assert_string_equal(ebb_labels_getc(&P(c, "a", "p2")->labels, "tier"), "canary");
    assert_int_equal(ebb_cache_pods_on_node(c, S("n1"))->n, 2);
    assert_int_equal(ebb_cache_count_owned(c, S("rs-web")), 2);
    /* the last pods go (ASan would see a leak or a double free) */
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("a"), S("p0")), 0);
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("a"), S("p2")), 0);
    assert_int_equal(ebb_cache_count(c, EBB_KIND_POD), 0);
    ebb_cache_destroy(c);
}

/* Hiding and showing pods changes the version, not the content version. */
static void content_version_ignores_hiding(void **state)
{
    struct ebb_cache *c;
    uint64_t v, cv;
    (void)state;

    begin();
    node("n1");
    pod("a", "p1", "n1", "web", "front");
    c = load();
    v = ebb_cache_version(c);
    cv = ebb_cache_content_version(c);
    ebb_cache_hide_pod(c, P(c, "a", "p1"));
    ebb_cache_unhide_all(c);
    assert_true(ebb_cache_version(c) > v);
    assert_int_equal(ebb_cache_content_version(c), cv);
    assert_int_equal(put_text(c, pod_text("a", "p1", "n1", "web", "back")), 0);
    assert_true(ebb_cache_content_version(c) > cv);
    cv = ebb_cache_content_version(c);
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("a"), S("p1")), 0);
    assert_true(ebb_cache_content_version(c) > cv);
    ebb_cache_destroy(c);
}

/* ---- the PDBs an eviction checks ---------------------------------------------- */

static uint32_t selecting(struct ebb_cache *c, const char *ns, const char *name, char *out,
                          size_t len)
{
    const struct ebb_pdb *v[8];
    uint32_t n = ebb_cache_pdbs_selecting(c, P(c, ns, name), v, 8);

    out[0] = '\0';
    for (uint32_t i = 0; i < n && i < 8; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? " " : "", v[i]->name);
    return n;
}

static void pdbs_by_the_labels_they_select(void **state)
{
    struct ebb_cache *c;
    char got[256];
    (void)state;

    begin();
    node("n1");
    pod("shop", "w1", "n1", "web", "front");
    pod("shop", "d1", "n1", "db", "back");
    pod("ads", "w2", "n1", "web", "front");
    pdb("shop", "a-tier", "{\"matchLabels\":{\"tier\":\"front\"}}");
    pdb("shop", "b-web", "{\"matchLabels\":{\"app\":\"web\",\"tier\":\"front\"}}");
    pdb("shop", "c-any", "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Exists\"}]}");
    pdb("shop", "d-two", "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\","
                         "\"values\":[\"db\",\"cache\"]}]}");
    pdb("shop", "e-empty", "{}");     /* selects nothing for evictions */
    pdb("shop", "f-nil", NULL);
    pdb("ads", "g-web", "{\"matchLabels\":{\"app\":\"web\"}}");
    c = load();
    /* a superset of what selects, in the namespace's order */
    assert_int_equal(selecting(c, "shop", "w1", got, sizeof(got)), 3);
    assert_string_equal(got, "a-tier b-web c-any");
    assert_int_equal(selecting(c, "shop", "d1", got, sizeof(got)), 2);
    assert_string_equal(got, "c-any d-two");
    assert_int_equal(selecting(c, "ads", "w2", got, sizeof(got)), 1);
    assert_string_equal(got, "g-web");
    /* a replaced PDB is filed again, a deleted one is gone */
    assert_int_equal(put_text(c, "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\","
                                 "\"metadata\":{\"name\":\"d-two\",\"namespace\":\"shop\"},"
                                 "\"spec\":{\"minAvailable\":1,\"selector\":{\"matchLabels\":"
                                 "{\"app\":\"web\"}}}}"), 0);
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_PDB, S("shop"), S("a-tier")), 0);
    assert_int_equal(selecting(c, "shop", "w1", got, sizeof(got)), 3);
    assert_string_equal(got, "b-web c-any d-two");
    assert_int_equal(selecting(c, "shop", "d1", got, sizeof(got)), 1);
    assert_string_equal(got, "c-any");
    ebb_cache_destroy(c);
}


/* ---- source files ------------------------------------------------------------ */

/* Append `text` to `f` and put its pod with pod.object pointing there. */
static void put_spilled(struct ebb_cache *c, FILE *f, uint16_t file, const char *text)
{
    cJSON *j = cJSON_Parse(text);
    struct ebb_object o = { 0 };
    struct ebb_error err = { 0 };
    size_t len = strlen(text);
    long off;

    assert_non_null(j);
    assert_int_equal(ebb_decode_object(j, &o, &err), 0);
    cJSON_Delete(j);
    assert_true((off = ftell(f)) >= 0);
    assert_int_equal(fwrite(text, 1, len, f), len);
    o.u.pod->src = (struct ebb_src){ (uint64_t)off, (uint32_t)len, file, 0 };
    assert_int_equal(ebb_cache_put(c, &o), 0);
}

static const char *tier_of(struct ebb_cache *c, const char *ns, const char *name)
{
    static char tier[32];
    cJSON *o = ebb_cache_read_object(c, &P(c, ns, name)->src);
    const cJSON *t;

    assert_non_null(o);
    t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "metadata"), "labels"), "tier");
    assert_true(cJSON_IsString(t));
    snprintf(tier, sizeof(tier), "%s", t->valuestring);
    cJSON_Delete(o);
    return tier;
}

static uint64_t live_of(struct ebb_cache *c, uint16_t file)
{
    uint64_t v[8];

    assert_true(file < 8);
    ebb_cache_sources_live(c, v, 8);
    return v[file];
}

/* Versions replaced and pods deleted leave garbage in a source file; moving
 * it copies exactly the bytes still read to the end of another file, every
 * pod reads its own newest version from there, and the emptied index is
 * the next one a new file gets. */
static void move_source_keeps_what_is_read(void **state)
{
    struct ebb_cache *c = NULL;
    FILE *f = tmpfile(), *g = tmpfile(), *h;
    uint16_t file, to, again;
    uint64_t moved = 0;
    size_t want, before;
    (void)state;

    assert_int_equal(ebb_cache_create(&c), 0);
    assert_non_null(f);
    assert_non_null(g);
    assert_int_equal(ebb_cache_add_source(c, f, &file), 0);
    assert_int_equal(ebb_cache_add_source(c, g, &to), 0);
    put_spilled(c, f, file, pod_text("a", "p1", "n1", "web", "v1"));
    put_spilled(c, f, file, pod_text("a", "p2", "n1", "web", "v1"));
    put_spilled(c, f, file, pod_text("a", "p3", "n1", "db", "v1"));
    put_spilled(c, f, file, pod_text("a", "p1", "n1", "web", "v2"));
    put_spilled(c, f, file, pod_text("a", "p3", "n1", "db", "v2"));
    put_spilled(c, f, file, pod_text("a", "p1", "n1", "web", "v3"));
    put_spilled(c, g, to, pod_text("b", "q1", "n1", "web", "w1"));   /* already in the new file */
    assert_int_equal(ebb_cache_delete(c, EBB_KIND_POD, S("a"), S("p2")), 0);
    want = strlen(pod_text("a", "p1", "n1", "web", "v3")) + strlen(pod_text("a", "p3", "n1", "db", "v2"));
    before = (size_t)ftell(g);
    assert_int_equal(live_of(c, file), want);
    assert_true((uint64_t)ftell(f) > 2 * want);
    assert_string_equal(tier_of(c, "a", "p1"), "v3");

    assert_int_equal(ebb_cache_seal_source(c, file), 0);   /* f is now closed */
    assert_string_equal(tier_of(c, "a", "p3"), "v2");
    assert_int_equal(ebb_cache_move_source(c, file, to, &moved), 0);
    assert_int_equal(moved, want);
    assert_int_equal(ftell(g), (long)(before + want));
    assert_int_equal(live_of(c, file), 0);
    assert_int_equal(live_of(c, to), before + want);
    assert_int_equal(P(c, "a", "p1")->src.file, to);
    assert_string_equal(tier_of(c, "a", "p1"), "v3");
    assert_string_equal(tier_of(c, "a", "p3"), "v2");
    assert_string_equal(tier_of(c, "b", "q1"), "w1");
    /* appends go on after the copy */
    put_spilled(c, g, to, pod_text("a", "p3", "n1", "db", "v4"));
    assert_string_equal(tier_of(c, "a", "p3"), "v4");
    assert_string_equal(tier_of(c, "a", "p1"), "v3");

    /* the moved file is gone: moving it again is refused, its index reused */
    assert_int_equal(ebb_cache_move_source(c, file, to, NULL), EBB_EINVAL);
    assert_int_equal(ebb_cache_move_source(c, to, to, NULL), EBB_EINVAL);
    assert_non_null(h = tmpfile());
    assert_int_equal(ebb_cache_add_source(c, h, &again), 0);
    assert_int_equal(again, file);
    ebb_cache_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loaded_view_keeps_indexes),
        cmocka_unit_test(pods_leave_cleanly),
        cmocka_unit_test(nonzero_sums_follow_pods),
        cmocka_unit_test(content_version_ignores_hiding),
        cmocka_unit_test(pdbs_by_the_labels_they_select),
        cmocka_unit_test(move_source_keeps_what_is_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
