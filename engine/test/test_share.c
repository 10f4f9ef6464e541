/* engine/base/share.c, and the pods that share arrays through it
 * (engine/model/model.c): identical arrays are held once, a copy of a pod
 * holds its original's, and nothing that writes a pod's array writes one
 * another pod holds. */
#include "fixtures.h"

#include <cjson/cJSON.h>

#include "ebb/decode.h"
#include "ebb/model.h"
#include "ebb/share.h"
#include "ebb/str.h"
#include "ebb/whatif.h"

/* ---- the table ------------------------------------------------------------ */

static uint64_t *words(const uint64_t *w, size_t n)
{
    uint64_t *a = malloc(n * sizeof(*a));
    assert_non_null(a);
    memcpy(a, w, n * sizeof(*a));
    return a;
}

/* Identical bytes of one kind are one array; a different kind, length or
 * byte is another; the last holder frees. */
static void test_intern_by_kind_and_bytes(void **state)
{
    static const uint64_t x[] = { 1, 2, 3 }, y[] = { 1, 2, 4 };
    static const struct {
        int kind;
        const uint64_t *w;
        size_t n;
        bool same;     /* as the first array (kind KV, x, 3 words) */
    } cases[] = {
        { EBB_SHARE_KV, x, 3, true },
        { EBB_SHARE_OWNERS, x, 3, false },
        { EBB_SHARE_KV, x, 2, false },
        { EBB_SHARE_KV, y, 3, false },
        { EBB_SHARE_RQ, y, 3, false },
    };
    size_t base = ebb_share_count();
    uint64_t *first = words(x, 3);
    void *held[EBB_ARRAY_LEN(cases)];

    (void)state;
    assert_ptr_equal(ebb_share_intern(EBB_SHARE_KV, first, sizeof(x)), first);
    assert_true(ebb_share_is(EBB_SHARE_KV, first, sizeof(x)));
    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        uint64_t *a = words(cases[i].w, cases[i].n);
        held[i] = ebb_share_intern(cases[i].kind, a, cases[i].n * 8);
        if (cases[i].same) {
            assert_ptr_equal(held[i], first);
            free(a);
        } else {
            assert_ptr_equal(held[i], a);
        }
    }
    /* the later arrays are each held once */
    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        bool last = ebb_share_release(cases[i].kind, held[i], cases[i].n * 8);
        assert_int_equal(last, !cases[i].same);
        if (last)
            free(held[i]);
    }
    assert_true(ebb_share_release(EBB_SHARE_KV, first, sizeof(x)));
    free(first);
    assert_int_equal(ebb_share_count(), base);
    /* NULL and empty arrays are never held */
    assert_null(ebb_share_intern(EBB_SHARE_KV, NULL, 16));
    assert_false(ebb_share_release(EBB_SHARE_KV, NULL, 16));
    assert_true(ebb_share_ref(EBB_SHARE_KV, NULL, 0));
    assert_int_equal(ebb_share_count(), base);
}

/* An array never offered is private: release says "yours to free"; a
 * reference makes it held twice. */
static void test_private_then_referenced(void **state)
{
    static const uint64_t x[] = { 7, 8 };
    size_t base = ebb_share_count();
    uint64_t *a = words(x, 2);

    (void)state;
    assert_false(ebb_share_is(EBB_SHARE_STRS, a, sizeof(x)));
    assert_true(ebb_share_ref(EBB_SHARE_STRS, a, sizeof(x)));
    assert_true(ebb_share_is(EBB_SHARE_STRS, a, sizeof(x)));
    assert_int_equal(ebb_share_count(), base + 1);
    assert_false(ebb_share_release(EBB_SHARE_STRS, a, sizeof(x)));
    assert_true(ebb_share_release(EBB_SHARE_STRS, a, sizeof(x)));
    assert_int_equal(ebb_share_count(), base);
    assert_true(ebb_share_release(EBB_SHARE_STRS, a, sizeof(x)));   /* private again */
    free(a);
}

/* Random interns, references and releases over a few contents, against a
 * model of who holds what: an intern returns an array with the bytes asked
 * for, the one already shared when there is one; release says "last" exactly
 * when no other holder has the address; the sanitizers see every array
 * freed once. */
static void random_against_model(void)
{
    enum { HOLDERS = 64, CONTENTS = 5, STEPS = 20000 };
    struct holder {
        uint64_t *a;
        int kind, content;
        size_t n;
    } h[HOLDERS] = { { 0 } };
    size_t base = ebb_share_count();
    uint64_t rng = 0x9e3779b97f4a7c15ull;

    for (int step = 0; step < STEPS; step++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        struct holder *x = &h[rng % HOLDERS];
        int op = (int)((rng >> 8) % 4);
        if (x->a != NULL) {
            size_t others = 0;
            for (int i = 0; i < HOLDERS; i++)
                others += &h[i] != x && h[i].a == x->a;
            bool last = ebb_share_release(x->kind, x->a, x->n * 8);
            assert_int_equal(last, others == 0);
            if (last)
                free(x->a);
            x->a = NULL;
            continue;
        }
        x->kind = 1 + (int)((rng >> 16) % 2);
        x->content = (int)((rng >> 24) % CONTENTS);
        x->n = 1 + (size_t)x->content % 3;
        uint64_t w[3] = { (uint64_t)x->content, 42, (uint64_t)x->content * 3 };
        if (op == 0) {
            /* a copy of another holder's array, by reference */
            struct holder *y = &h[(rng >> 32) % HOLDERS];
            if (y->a == NULL || y == x)
                continue;
            assert_true(ebb_share_ref(y->kind, y->a, y->n * 8));
            *x = *y;
            continue;
        }
        uint64_t *a = words(w, x->n), *got;
        bool shared_exists = false;
        for (int i = 0; i < HOLDERS; i++)
            if (h[i].a && h[i].kind == x->kind && h[i].n == x->n && h[i].content == x->content &&
                ebb_share_is(h[i].kind, h[i].a, h[i].n * 8))
                shared_exists = true;
        if (op == 1) {
            x->a = a;   /* private */
            continue;
        }
        got = ebb_share_intern(x->kind, a, x->n * 8);
        assert_memory_equal(got, w, x->n * 8);
        if (shared_exists) {
            assert_ptr_not_equal(got, a);
            free(a);
        } else {
            assert_ptr_equal(got, a);
        }
        x->a = got;
    }
    for (int i = 0; i < HOLDERS; i++) {
        if (h[i].a == NULL)
            continue;
        uint64_t *a = h[i].a;
        if (ebb_share_release(h[i].kind, a, h[i].n * 8))
            free(a);
        h[i].a = NULL;
    }
    assert_int_equal(ebb_share_count(), base);
}

/* ... with the hashes as they are, and all equal (bytes alone decide) */
static void test_random_against_model(void **state)
{
    (void)state;
    assert_int_equal(ebb_share_count(), 0);
    random_against_model();
    ebb__share_collide(true);
    random_against_model();
    ebb__share_collide(false);
}

/* ---- pods ------------------------------------------------------------------- */

/* One Deployment's pod: name, uid and condition times are its own. */
static const char *const pod_fmt =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-7d4b9c-%s\",\"namespace\":\"shop\","
    "\"uid\":\"%s\",\"creationTimestamp\":\"2026-11-20T10:00:0%dZ\","
    "\"labels\":{\"app\":\"web\",\"pod-template-hash\":\"7d4b9c\"},"
    "\"annotations\":{\"prometheus.io/scrape\":\"true\"},"
    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"web-7d4b9c\","
    "\"uid\":\"5b0e7f0c-1111-4a5a-9a51-4c1d8c2f0a01\",\"controller\":true}]},"
    "\"spec\":{\"nodeName\":\"node-a\",\"nodeSelector\":{\"pool\":\"general\"},"
    "\"containers\":[{\"name\":\"web\",\"image\":\"registry.example.com/web:1.4\","
    "\"ports\":[{\"containerPort\":8080,\"hostPort\":8080}],"
    "\"resources\":{\"requests\":{\"cpu\":\"250m\",\"memory\":\"256Mi\"}}}],"
    "\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"shared-data\"}}],"
    "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
    "\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],"
    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"topology.kubernetes.io/zone\","
    "\"whenUnsatisfiable\":\"ScheduleAnyway\",\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}}],"
    "\"affinity\":{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":100,"
    "\"podAffinityTerm\":{\"topologyKey\":\"kubernetes.io/hostname\","
    "\"labelSelector\":{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\",\"values\":[\"web\",\"api\"]}]}}}]}}},"
    "\"status\":{\"phase\":\"Running\",\"qosClass\":\"Burstable\","
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-11-20T10:01:0%dZ\"}],"
    "\"containerStatuses\":[{\"name\":\"web\",\"ready\":false,\"restartCount\":4,"
    "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}},"
    "\"lastState\":{\"terminated\":{\"reason\":\"OOMKilled\",\"exitCode\":137}}}]}}";

static struct ebb_pod *decode(const char *json)
{
    struct ebb_error err;
    struct ebb_pod *p = NULL;
    cJSON *j = cJSON_Parse(json);

    assert_non_null(j);
    ebb_error_clear(&err);
    if (ebb_decode_pod(j, &p, &err) != 0)
        fail_msg("decode: %s: %s", err.field, err.msg);
    cJSON_Delete(j);
    return p;
}

static struct ebb_pod *web_pod(const char *suffix, const char *uid, int second)
{
    char buf[4096];
    int n = snprintf(buf, sizeof(buf), pod_fmt, suffix, uid, second, second);

    assert_true(n > 0 && (size_t)n < sizeof(buf));
    return decode(buf);
}

/* Every array a pod holds, with its length in bytes (deep ones: the top
 * level only, which is what a writer would touch). */
#define POD_ARRAYS(p)                                                                          \
    {                                                                                          \
        { (p)->labels.kv, (p)->labels.n * sizeof(*(p)->labels.kv) },                           \
        { (p)->annotations.kv, (p)->annotations.n * sizeof(*(p)->annotations.kv) },            \
        { (p)->node_selector.kv, (p)->node_selector.n * sizeof(*(p)->node_selector.kv) },      \
        { (p)->owners, (p)->nowners * sizeof(*(p)->owners) },                                  \
        { (p)->tolerations, (p)->ntolerations * sizeof(*(p)->tolerations) },                   \
        { (p)->cstatus, (p)->ncstatus * sizeof(*(p)->cstatus) },                               \
        { (p)->images, (p)->nimages * sizeof(*(p)->images) },                                  \
        { (p)->pvcs, (p)->npvcs * sizeof(*(p)->pvcs) },                                        \
        { (p)->host_ports, (p)->nhost_ports * sizeof(*(p)->host_ports) },                      \
        { (p)->requests.q, (p)->requests.n * sizeof(*(p)->requests.q) },                       \
        { (p)->tsc, (p)->ntsc * sizeof(*(p)->tsc) },                                           \
        { (p)->affinity, sizeof(*(p)->affinity) },                                             \
        { (p)->conditions, (p)->nconditions * sizeof(*(p)->conditions) },                      \
    }
struct arr { const void *a; size_t bytes; };
enum { NSHARED = 12 };   /* all but the conditions are the template's */

/* Two pods of one template hold the same arrays (conditions excepted: their
 * times are each pod's); a copy holds its original's, conditions too. */
static void test_template_pods_share(void **state)
{
    size_t strs = ebb_str_count(), base = ebb_share_count();
    struct ebb_pod *a = web_pod("aaaaa", "0b6f3c1e-0000-4a5a-9a51-000000000001", 1);
    struct ebb_pod *b = web_pod("bbbbb", "0b6f3c1e-0000-4a5a-9a51-000000000002", 2);
    struct ebb_pod *c = ebb_pod_clone(b);

    (void)state;
    assert_non_null(c);
    struct arr pa[] = POD_ARRAYS(a), pb[] = POD_ARRAYS(b), pc[] = POD_ARRAYS(c);
    for (size_t i = 0; i < EBB_ARRAY_LEN(pa); i++) {
        assert_non_null(pa[i].a);
        if (i < NSHARED)
            assert_ptr_equal(pa[i].a, pb[i].a);
        else
            assert_ptr_not_equal(pa[i].a, pb[i].a);
        assert_ptr_equal(pb[i].a, pc[i].a);
    }
    assert_ptr_not_equal(a->name, b->name);
    /* freed in any order, each array goes with its last holder */
    ebb_pod_free(b);
    assert_string_equal(ebb_labels_getc(&a->labels, "app"), "web");
    assert_string_equal(c->affinity->anti_preferred[0].term.topology_key, "kubernetes.io/hostname");
    ebb_pod_free(a);
    assert_string_equal(c->owners[0].name, "web-7d4b9c");
    ebb_pod_free(c);
    assert_int_equal(ebb_share_count(), base);
    assert_int_equal(ebb_str_count(), strs);
}

/* The class of writers: whatever writes a pod's arrays (the what-if marking a
 * replacement running or pending, a request set on a pod) leaves every other
 * pod's arrays byte for byte as they were. */
static void test_writers_leave_other_pods_alone(void **state)
{
    size_t strs = ebb_str_count(), base = ebb_share_count();
    static const char *const writers[] = {
        "mark running", "mark pending", "mark pending, gated", "set a request", "set a new resource",
    };

    (void)state;
    for (size_t w = 0; w < EBB_ARRAY_LEN(writers); w++) {
        struct ebb_pod *a = web_pod("aaaaa", "0b6f3c1e-0000-4a5a-9a51-000000000001", 1);
        struct ebb_pod *b = web_pod("bbbbb", "0b6f3c1e-0000-4a5a-9a51-000000000002", 2);
        struct ebb_pod *c = ebb_pod_clone(a);
        struct arr before[] = POD_ARRAYS(a);
        unsigned char *saved[EBB_ARRAY_LEN(before)];
        int rc = 0;

        assert_non_null(c);
        for (size_t i = 0; i < EBB_ARRAY_LEN(before); i++) {
            saved[i] = malloc(before[i].bytes);
            assert_non_null(saved[i]);
            memcpy(saved[i], before[i].a, before[i].bytes);
        }
        switch (w) {
        case 0: rc = ebb_whatif_mark_running(c, 1763800000); break;
        case 1: rc = ebb_whatif_mark_pending(c, 1763800000, false); break;
        case 2: rc = ebb_whatif_mark_pending(c, 1763800000, true); break;
        case 3: rc = ebb_res_set(&c->requests, EBB_RES_CPU, 4000); break;
        case 4: rc = ebb_res_set(&c->requests, EBB_RES_MEMORY + 1, 1); break;
        }
        assert_int_equal(rc, 0);
        struct arr after_a[] = POD_ARRAYS(a), after_b[] = POD_ARRAYS(b);
        for (size_t i = 0; i < EBB_ARRAY_LEN(before); i++) {
            if (memcmp(saved[i], after_a[i].a, before[i].bytes) != 0)
                fail_msg("%s on a copy wrote its original's array %zu", writers[w], i);
            if (i < NSHARED && memcmp(saved[i], after_b[i].a, before[i].bytes) != 0)
                fail_msg("%s on a copy wrote another pod's array %zu", writers[w], i);
            free(saved[i]);
        }
        if (w == 0)
            assert_true(c->cstatus[0].state == EBB_CSTATE_RUNNING && c->nconditions == 4);
        if (w == 3)
            assert_int_equal(ebb_res_get(&c->requests, EBB_RES_CPU), 4000);
        assert_int_equal(ebb_res_get(&a->requests, EBB_RES_CPU), 250);
        ebb_pod_free(a);
        ebb_pod_free(c);
        ebb_pod_free(b);
    }
    assert_int_equal(ebb_share_count(), base);
    assert_int_equal(ebb_str_count(), strs);
}

/* Affinities and spread constraints are compared field by field: one pair
 * per field, differing there alone, is never shared; the same text is. */
/* `ref` with its first `from` replaced by `to` (from NULL: as it is), and
 * single quotes made double. */
static void edit(char *out, size_t len, const char *ref, const char *from, const char *to)
{
    const char *at = from ? strstr(ref, from) : NULL;
    int n;

    if (from != NULL && at == NULL)
        fail_msg("the edit '%s' is not in the reference", from);
    if (at == NULL)
        n = snprintf(out, len, "%s", ref);
    else
        n = snprintf(out, len, "%.*s%s%s", (int)(at - ref), ref, to, at + strlen(from));
    assert_true(n > 0 && (size_t)n < len);
    for (char *c = out; *c; c++)
        if (*c == '\'')
            *c = '"';
}

static void deep_kinds_compare_every_field(void)
{
    static const char aff_ref[] =
        "{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':[{'matchExpressions':"
        "[{'key':'pool','operator':'In','values':['a','b']},{'key':'cores','operator':'Gt','values':['8']}],"
        "'matchFields':[{'key':'metadata.name','operator':'In','values':['node-1']}]}]},"
        "'preferredDuringSchedulingIgnoredDuringExecution':"
        "[{'weight':5,'preference':{'matchExpressions':[{'key':'disk','operator':'Exists'}]}}]},"
        "'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'zone','labelSelector':"
        "{'matchLabels':{'app':'db'}},'namespaces':['data'],'namespaceSelector':{'matchLabels':{'team':'a'}}}]},"
        "'podAntiAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':10,'podAffinityTerm':"
        "{'topologyKey':'kubernetes.io/hostname','labelSelector':{'matchLabels':{'app':'web'}},"
        "'matchLabelKeys':['pod-template-hash'],'mismatchLabelKeys':['tenant']}}]}}";
    static const char tsc_ref[] =
        "[{'maxSkew':1,'topologyKey':'zone','whenUnsatisfiable':'DoNotSchedule','minDomains':2,"
        "'nodeAffinityPolicy':'Honor','nodeTaintsPolicy':'Ignore','matchLabelKeys':['pod-template-hash'],"
        "'labelSelector':{'matchLabels':{'app':'web'}}}]";
    /* each differs from the reference in one field */
    static const struct { const char *from, *to; } aff_edits[] = {
        { NULL, NULL },
        { "'values':['a','b']", "'values':['a','c']" },
        { "'operator':'In','values':['a','b']", "'operator':'NotIn','values':['a','b']" },
        { "'key':'pool'", "'key':'pool2'" },
        { "'values':['8']", "'values':['9']" },
        { "'values':['node-1']", "'values':['node-2']" },
        { "'weight':5", "'weight':6" },
        { "'operator':'Exists'", "'operator':'DoesNotExist'" },
        { "'topologyKey':'zone'", "'topologyKey':'region'" },
        { "{'app':'db'}", "{'app':'dbx'}" },
        { "'namespaces':['data']", "'namespaces':['cache']" },
        { "{'team':'a'}", "{'team':'b'}" },
        { "'weight':10", "'weight':11" },
        { "'matchLabelKeys':['pod-template-hash']", "'matchLabelKeys':['version']" },
        { "'mismatchLabelKeys':['tenant']", "'mismatchLabelKeys':['owner']" },
        { "{'app':'web'}", "{'app':'api'}" },
        /* a term moved from required to preferred */
        { "'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'zone',"
          "'labelSelector':{'matchLabels':{'app':'db'}},'namespaces':['data'],"
          "'namespaceSelector':{'matchLabels':{'team':'a'}}}]}",
          "'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':10,'podAffinityTerm':"
          "{'topologyKey':'zone','labelSelector':{'matchLabels':{'app':'db'}},'namespaces':['data'],"
          "'namespaceSelector':{'matchLabels':{'team':'a'}}}}]}" },
    };
    static const struct { const char *from, *to; } tsc_edits[] = {
        { NULL, NULL },
        { "'maxSkew':1", "'maxSkew':2" },
        { "'topologyKey':'zone'", "'topologyKey':'host'" },
        { "'DoNotSchedule'", "'ScheduleAnyway'" },
        { "'minDomains':2", "'minDomains':3" },
        { "'nodeAffinityPolicy':'Honor'", "'nodeAffinityPolicy':'Ignore'" },
        { "'nodeTaintsPolicy':'Ignore'", "'nodeTaintsPolicy':'Honor'" },
        { "['pod-template-hash']", "['version']" },
        { "{'app':'web'}", "{'app':'api'}" },
        { "}}]", "}},{'maxSkew':1,'topologyKey':'host','whenUnsatisfiable':'ScheduleAnyway'}]" },
    };
    enum { MAX = 24 };
    size_t strs = ebb_str_count(), base = ebb_share_count();
    size_t naff = EBB_ARRAY_LEN(aff_edits), ntsc = EBB_ARRAY_LEN(tsc_edits);
    size_t n = naff > ntsc ? naff : ntsc;
    struct ebb_pod *p[2][MAX];
    char aff[4096], tsc[2048], buf[8192];

    assert_true(n <= MAX);
    for (int twice = 0; twice < 2; twice++) {
        for (size_t i = 0; i < n; i++) {
            edit(aff, sizeof(aff), aff_ref, i < naff ? aff_edits[i].from : NULL, i < naff ? aff_edits[i].to : NULL);
            edit(tsc, sizeof(tsc), tsc_ref, i < ntsc ? tsc_edits[i].from : NULL, i < ntsc ? tsc_edits[i].to : NULL);
            int len = snprintf(buf, sizeof(buf),
                               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%zu-%d\","
                               "\"namespace\":\"d\"},\"spec\":{\"containers\":[{\"name\":\"c\"}],\"affinity\":%s,"
                               "\"topologySpreadConstraints\":%s}}",
                               i, twice, aff, tsc);
            assert_true(len > 0 && (size_t)len < sizeof(buf));
            p[twice][i] = decode(buf);
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct ebb_pod *x = p[0][i], *y = p[1][i];
        assert_non_null(x->affinity);
        /* the same text: the same arrays */
        assert_ptr_equal(x->affinity, y->affinity);
        assert_ptr_equal(x->tsc, y->tsc);
        if (i > 0 && i < naff && x->affinity == p[0][0]->affinity)
            fail_msg("affinity edit %zu (%s) is shared with the reference", i, aff_edits[i].to);
        if (i > 0 && i < ntsc && x->tsc == p[0][0]->tsc)
            fail_msg("spread constraint edit %zu (%s) is shared with the reference", i, tsc_edits[i].to);
    }
    for (size_t i = 0; i < n; i++) {
        ebb_pod_free(p[0][i]);
        ebb_pod_free(p[1][i]);
    }
    assert_int_equal(ebb_share_count(), base);
    assert_int_equal(ebb_str_count(), strs);
}

/* ... with the hashes as they are, and all equal (the comparison alone
 * decides: a field it skips shows) */
static void test_deep_kinds_compare_every_field(void **state)
{
    (void)state;
    assert_int_equal(ebb_share_count(), 0);
    deep_kinds_compare_every_field();
    ebb__share_collide(true);
    deep_kinds_compare_every_field();
    ebb__share_collide(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intern_by_kind_and_bytes),
        cmocka_unit_test(test_private_then_referenced),
        cmocka_unit_test(test_random_against_model),
        cmocka_unit_test(test_template_pods_share),
        cmocka_unit_test(test_writers_leave_other_pods_alone),
        cmocka_unit_test(test_deep_kinds_compare_every_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
