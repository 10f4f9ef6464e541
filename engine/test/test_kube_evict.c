/* kube_evict.c without a server: the request paths, the Eviction's and the
 * Events' bodies, and what each answer the API server gives means. The
 * requests themselves go through kube_http.c (test_kube_http.c); the whole
 * path runs against kube-apiserver in spec/integration/k8s_live_spec.lua. */
#include "fixtures.h"

#include <cjson/cJSON.h>

#include "ebb/kube_evict.h"

struct fx {
    struct ebb_eviction ev;
};

static void fx_init(struct fx *f, const char *method)
{
    memset(f, 0, sizeof(*f));
    f->ev.ns = ebb_str_cstr("shop");
    f->ev.name = ebb_str_cstr("web-1");
    f->ev.uid = ebb_str_cstr("5f0c5a0e-0000-4000-8000-000000000001");
    f->ev.node = ebb_str_cstr("n1");
    f->ev.plugin = ebb_str_cstr("RemovePodsViolatingNodeTaints");
    f->ev.profile = ebb_str_cstr("default");
    f->ev.reason = ebb_str_cstr("untolerated taint dedicated=gpu:NoSchedule");
    f->ev.grace_period = -1;
    f->ev.method = method;
}

static void fx_free(struct fx *f)
{
    ebb_str_release(f->ev.ns);
    ebb_str_release(f->ev.name);
    ebb_str_release(f->ev.uid);
    ebb_str_release(f->ev.node);
    ebb_str_release(f->ev.plugin);
    ebb_str_release(f->ev.profile);
    ebb_str_release(f->ev.reason);
}

static void test_paths(void **state)
{
    char buf[128];
    (void)state;

    assert_int_equal(ebb_api_pod_path(buf, sizeof(buf), "shop", "web-1"), 0);
    assert_string_equal(buf, "/api/v1/namespaces/shop/pods/web-1");
    assert_int_equal(ebb_api_collection_path(buf, sizeof(buf), "v1", "shop", "configmaps"), 0);
    assert_string_equal(buf, "/api/v1/namespaces/shop/configmaps");
    assert_int_equal(ebb_api_collection_path(buf, sizeof(buf), "scheduling.koordinator.sh/v1alpha1",
                                              NULL, "podmigrationjobs"), 0);
    assert_string_equal(buf, "/apis/scheduling.koordinator.sh/v1alpha1/podmigrationjobs");
    assert_int_equal(ebb_api_collection_path(buf, sizeof(buf), "batch/v1", "shop", "jobs"), 0);
    assert_string_equal(buf, "/apis/batch/v1/namespaces/shop/jobs");
    /* what does not fit is refused, never cut */
    assert_int_equal(ebb_api_pod_path(buf, 20, "shop", "web-1"), EBB_EINVAL);
    assert_int_equal(ebb_api_collection_path(buf, 10, "v1", NULL, "nodes"), EBB_EINVAL);
}

static void test_eviction_body(void **state)
{
    struct fx f;
    char *body;
    cJSON *j;
    (void)state;

    fx_init(&f, NULL);
    assert_non_null(body = ebb_kube_eviction_body(&f.ev));
    assert_non_null(j = cJSON_Parse(body));
    assert_string_equal(cJSON_GetObjectItem(j, "apiVersion")->valuestring, "policy/v1");
    assert_string_equal(cJSON_GetObjectItem(j, "kind")->valuestring, "Eviction");
    cJSON *meta = cJSON_GetObjectItem(j, "metadata");
    assert_string_equal(cJSON_GetObjectItem(meta, "name")->valuestring, "web-1");
    assert_string_equal(cJSON_GetObjectItem(meta, "namespace")->valuestring, "shop");
    cJSON *ann = cJSON_GetObjectItem(meta, "annotations");
    assert_string_equal(cJSON_GetObjectItem(ann, "reason")->valuestring,
                        "triggered by default/RemovePodsViolatingNodeTaints: untolerated taint "
                        "dedicated=gpu:NoSchedule");
    assert_string_equal(cJSON_GetObjectItem(ann, "requested-by")->valuestring, "ebb");
    /* the pod's own grace period unless the policy sets one */
    assert_null(cJSON_GetObjectItem(j, "deleteOptions"));
    cJSON_Delete(j);
    free(body);
    f.ev.grace_period = 0;
    assert_non_null(body = ebb_kube_eviction_body(&f.ev));
    assert_non_null(j = cJSON_Parse(body));
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "deleteOptions"), "gracePeriodSeconds")->valueint, 0);
    cJSON_Delete(j);
    free(body);
    fx_free(&f);
}

/* As kube-apiserver validates events.k8s.io/v1: a name that is a valid
 * DNS subdomain (not a generateName ending in "."), a MicroTime, a note
 * under 1 kB. */
static void test_event_body(void **state)
{
    char note[3000];
    struct ebb_kube_event e = { .ns = "shop", .name = "web-1", .uid = "u-1", .type = "Warning",
                                .reason = "EvictionFailed", .action = "Descheduled", .note = note };
    char *body;
    cJSON *j;
    const char *name, *t;
    (void)state;

    memset(note, 'x', sizeof(note) - 1);
    note[sizeof(note) - 1] = '\0';
    assert_non_null(body = ebb_kube_event_body(&e));
    assert_non_null(j = cJSON_Parse(body));
    name = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "name")->valuestring;
    assert_int_equal(strncmp(name, "web-1.", 6), 0);
    assert_true(strlen(name) > 6);
    for (const char *c = name + 6; *c; c++)
        assert_non_null(strchr("0123456789abcdef", *c));
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "generateName"));
    t = cJSON_GetObjectItem(j, "eventTime")->valuestring;
    assert_int_equal(strlen(t), strlen("2026-11-22T12:00:00.000000Z"));
    assert_int_equal(t[19], '.');
    assert_int_equal(t[26], 'Z');
    assert_true(strlen(cJSON_GetObjectItem(j, "note")->valuestring) < 1024);
    assert_string_equal(cJSON_GetObjectItem(j, "reportingController")->valuestring, "ebb");
    assert_string_equal(cJSON_GetObjectItem(j, "reportingInstance")->valuestring, "ebb");
    cJSON *reg = cJSON_GetObjectItem(j, "regarding");
    assert_string_equal(cJSON_GetObjectItem(reg, "kind")->valuestring, "Pod");
    assert_string_equal(cJSON_GetObjectItem(reg, "uid")->valuestring, "u-1");
    cJSON_Delete(j);
    free(body);
}

/* No control byte, DEL or C1 control: one line in kubectl's output. */
static bool one_line(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return false;
    return true;
}

static bool ends_cut(const char *s)
{
    size_t n = strlen(s);
    return n >= 3 && strcmp(s + n - 3, "\xe2\x80\xa6") == 0;
}

/* Whatever text an Event is given (a script's reason, a server's message,
 * an object's name), its body is JSON the API server takes as it is: each
 * text valid UTF-8 (bytes that are not would become three-byte U+FFFD in
 * the server, past the limit), one line, within its field's limit, cut with
 * an ellipsis, never in the middle of a character. */
static void test_event_texts_hostile(void **state)
{
    static const struct {
        const char *what;
        const char *text;
        size_t repeat;   /* the text this many times */
        bool cut;
    } cases[] = {
        { "short and plain", "pod eviction from n1 node by ebb", 1, false },
        { "controls", "line1\nebb: forged\r\t\x1b[31mred\x07\x7f", 1, false },
        { "C1 and separators", "\xc2\x9b" "31m \xe2\x80\xa8 \xe2\x80\xae", 1, false },
        { "not UTF-8", "\xff\xfe \xc3 \xed\xa0\x80 \xc0\x80 \xf4\x90\x80\x80", 1, false },
        { "exactly the limit", "x", 1023, false },
        { "a byte past it", "x", 1024, true },
        { "two-byte characters across the limit", "\xc3\xa9", 600, true },
        { "three-byte characters", "\xe2\x82\xac", 2000, true },
        { "four-byte characters", "\xf0\x9f\x98\x80", 700, true },
        { "escapes across the limit", "\x1b", 1000, true },
        { "invalid bytes across the limit", "\xff", 1000, true },
    };
    (void)state;

    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        size_t k = strlen(cases[i].text);
        char *text = malloc(k * cases[i].repeat + 1), *body;
        const char *note, *reason, *action;
        cJSON *j;
        for (size_t r = 0; r < cases[i].repeat; r++)
            memcpy(text + r * k, cases[i].text, k);
        text[k * cases[i].repeat] = '\0';
        struct ebb_kube_event e = { .ns = "shop", .name = "web-1", .type = "Warning",
                                    .reason = text, .action = text, .note = text, .instance = text };
        assert_non_null(body = ebb_kube_event_body(&e));
        assert_true(ebb_utf8_valid(body, strlen(body)));
        assert_non_null(j = cJSON_Parse(body));
        note = cJSON_GetObjectItem(j, "note")->valuestring;
        reason = cJSON_GetObjectItem(j, "reason")->valuestring;
        action = cJSON_GetObjectItem(j, "action")->valuestring;
        print_message("%s\n", cases[i].what);
        assert_true(strlen(note) < 1024);
        assert_true(strlen(reason) <= 128);
        assert_true(strlen(action) <= 128);
        assert_true(strlen(cJSON_GetObjectItem(j, "reportingInstance")->valuestring) <= 128);
        assert_true(ebb_utf8_valid(note, strlen(note)) && one_line(note));
        assert_true(ebb_utf8_valid(reason, strlen(reason)) && one_line(reason));
        assert_int_equal(ends_cut(note), cases[i].cut);
        if (!cases[i].cut && strcmp(cases[i].what, "short and plain") == 0)
            assert_string_equal(note, text);
        cJSON_Delete(j);
        free(body);
        free(text);
    }
}

/* A pod name cut to fit the Event's name does not leave "-." or "..". */
static void test_event_name_cut(void **state)
{
    char pod[254];
    struct ebb_kube_event e = { .ns = "shop", .name = pod, .type = "Normal", .reason = "R",
                                .action = "Descheduled", .note = "n" };
    char *body;
    cJSON *j;
    const char *name;
    (void)state;

    memset(pod, 'a', 253);
    pod[253] = '\0';
    pod[198] = '-', pod[199] = '.';
    assert_non_null(body = ebb_kube_event_body(&e));
    assert_non_null(j = cJSON_Parse(body));
    name = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "name")->valuestring;
    assert_null(strstr(name, "-."));
    assert_null(strstr(name, ".."));
    assert_true(strlen(name) <= 253);
    cJSON_Delete(j);
    free(body);
}

/* The Eviction's reason annotation: the whole reason of a strategy (1 KiB)
 * fits, escaped for a line, valid UTF-8. */
static void test_eviction_reason_hostile(void **state)
{
    struct fx f;
    char reason[1025], *body;
    const char *got;
    cJSON *j;
    (void)state;

    fx_init(&f, NULL);
    ebb_str_release(f.ev.reason);
    for (size_t i = 0; i < 1023; i += 3)
        memcpy(reason + i, i % 2 ? "\xe2\x82\xac" : "\n\xff\x1b", 3);
    reason[1023] = '\0';
    f.ev.reason = ebb_str_cstr(reason);
    assert_non_null(body = ebb_kube_eviction_body(&f.ev));
    assert_true(ebb_utf8_valid(body, strlen(body)));
    assert_non_null(j = cJSON_Parse(body));
    got = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "annotations"),
                              "reason")->valuestring;
    assert_true(one_line(got));
    assert_false(ends_cut(got));
    assert_int_equal(strncmp(got, "triggered by default/RemovePodsViolatingNodeTaints: \\n\xef\xbf\xbd\\x1b"
                                  "\xe2\x82\xac", 52 + 2 + 3 + 4 + 3), 0);
    cJSON_Delete(j);
    free(body);
    fx_free(&f);
}

/* What each answer means, for the Eviction API and for an evict plugin's
 * own request (the API server's wording in the message). */
static void test_outcome(void **state)
{
    static const char pdb429[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"Cannot evict pod as it would violate the pod's disruption budget.\","
        "\"reason\":\"TooManyRequests\",\"details\":{\"causes\":[{\"reason\":\"DisruptionBudget\","
        "\"message\":\"The disruption budget db needs 2 healthy pods and has 2 currently\"}]},"
        "\"code\":429}";
    static const char two_pdbs[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"This pod has more than one PodDisruptionBudget, which the eviction "
        "subresource does not support.\",\"code\":500}";
    static const char ok[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\",\"code\":201}";
    static const char gone[] = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods \\\"web-1\\\" not found\",\"code\":404}";
    struct fx ev, del, create;
    char msg[512];
    (void)state;

    fx_init(&ev, NULL);
    fx_init(&del, "DELETE");
    fx_init(&create, "POST");
    assert_int_equal(ebb_kube_evict_outcome(&ev.ev, 201, ok, strlen(ok), msg, sizeof(msg)), EBB_WHY_OK);
    assert_string_equal(msg, "");
    assert_int_equal(ebb_kube_evict_outcome(&ev.ev, 429, pdb429, strlen(pdb429), msg, sizeof(msg)), EBB_WHY_PDB);
    assert_string_equal(msg, "Cannot evict pod as it would violate the pod's disruption budget. "
                             "The disruption budget db needs 2 healthy pods and has 2 currently");
    /* a 2xx that says Failure is a refusal with the code it carries */
    assert_int_equal(ebb_kube_evict_outcome(&ev.ev, 201, two_pdbs, strlen(two_pdbs), msg, sizeof(msg)),
                     EBB_WHY_API_ERROR);
    assert_non_null(strstr(msg, "more than one PodDisruptionBudget"));
    assert_int_equal(ebb_kube_evict_outcome(&ev.ev, 404, gone, strlen(gone), msg, sizeof(msg)), EBB_WHY_NOT_FOUND);
    /* to an evict plugin's request, 429 is throttling */
    assert_int_equal(ebb_kube_evict_outcome(&del.ev, 429, pdb429, strlen(pdb429), msg, sizeof(msg)),
                     EBB_WHY_API_ERROR);
    assert_int_equal(ebb_kube_evict_outcome(&del.ev, 404, gone, strlen(gone), msg, sizeof(msg)), EBB_WHY_NOT_FOUND);
    /* a create answered 404: the cluster does not serve the kind, the pod is there */
    assert_int_equal(ebb_kube_evict_outcome(&create.ev, 404, "404 page not found", 18, msg, sizeof(msg)),
                     EBB_WHY_API_ERROR);
    assert_string_equal(msg, "404 page not found");
    /* a transport failure: curl's message */
    assert_int_equal(ebb_kube_evict_outcome(&ev.ev, EBB_EIO, "Couldn't connect to server", 26, msg, sizeof(msg)),
                     EBB_WHY_API_ERROR);
    assert_string_equal(msg, "Couldn't connect to server");
    fx_free(&ev);
    fx_free(&del);
    fx_free(&create);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_eviction_body),
        cmocka_unit_test(test_event_body),
        cmocka_unit_test(test_event_texts_hostile),
        cmocka_unit_test(test_event_name_cut),
        cmocka_unit_test(test_eviction_reason_hostile),
        cmocka_unit_test(test_outcome),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
