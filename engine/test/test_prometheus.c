/* prometheus.c: answers judged as upstream judges them (vector, instance,
 * [0, 1], the server's errors), the snapshot item and back, and the client
 * on a loop against an ebb_httpd that plays both Prometheus and the API
 * server's Secret (GET, then a WATCH that changes and deletes it): the
 * form-encoded query, the bearer token read from the Secret and re-read
 * when it changes, "client not initialized" while there is none. Every
 * test ends with uv_loop_close(loop) == 0. */
#include "fixtures.h"

#include <cjson/cJSON.h>
#include <uv.h>

#include "ebb/httpd.h"
#include "ebb/kube.h"
#include "ebb/prometheus.h"

#define Q "instance:node_cpu:ratio"

static struct ebb_prom_result *parse(int status, const char *body)
{
    struct ebb_prom_result *r = ebb_prom_result_parse(Q, 1795348800, status, body, strlen(body));
    assert_non_null(r);
    return r;
}

static void vectors(void **state)
{
    struct ebb_prom_result *r;
    (void)state;

    r = parse(200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                   "{\"metric\":{\"instance\":\"n1\",\"job\":\"node\"},\"value\":[1795348800,\"0.85\"]},"
                   "{\"metric\":{\"instance\":\"n2\"},\"value\":[1795348800,\"0\"]},"
                   "{\"metric\":{\"instance\":\"n3\"},\"value\":[1795348800,\"1\"]}]}}");
    assert_null(r->error);
    assert_string_equal(r->result_type, "vector");
    assert_int_equal(r->n, 3);
    assert_string_equal(r->samples[0].instance, "n1");
    assert_true(r->samples[0].value == 0.85);
    assert_true(r->samples[2].value == 1.0);
    assert_non_null(strstr(r->data, "\"resultType\":\"vector\""));
    ebb_prom_result_free(r);

    /* an empty vector is a result (a node missing from it is the plugin's
     * business) */
    r = parse(200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}");
    assert_null(r->error);
    assert_int_equal(r->n, 0);
    ebb_prom_result_free(r);
}

static void refused(void **state)
{
    static const struct {
        int status;
        const char *body, *error;
    } cases[] = {
        { 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
          "expected query results to be of type \"vector\", got \"matrix\" instead" },
        { 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"2\"]}}",
          "expected query results to be of type \"vector\", got \"scalar\" instead" },
        { 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
               "{\"metric\":{\"job\":\"x\"},\"value\":[1,\"0.5\"]}]}}",
          "the collected metrics sample is missing 'instance' key" },
        { 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
               "{\"metric\":{\"instance\":\"n1\"},\"value\":[1,\"1.5\"]}]}}",
          "the collected metrics sample for \"n1\" has value 1.5 outside of <0; 1> interval" },
        { 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
               "{\"metric\":{\"instance\":\"n1\"},\"value\":[1,\"-2\"]}]}}",
          "the collected metrics sample for \"n1\" has value -2 outside of <0; 1> interval" },
        { 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
               "{\"metric\":{\"instance\":\"n1\"},\"value\":[1,\"NaN\"]}]}}",
          "the collected metrics sample for \"n1\" has value NaN outside of <0; 1> interval" },
        { 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
               "{\"metric\":{\"instance\":\"n1\"},\"value\":[1,\"+Inf\"]}]}}",
          "the collected metrics sample for \"n1\" has value +Inf outside of <0; 1> interval" },
        { 400, "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"1:5: parse error\"}",
          "unable to capture prometheus metrics: bad_data: 1:5: parse error" },
        { 503, "{\"status\":\"error\",\"errorType\":\"unavailable\",\"error\":\"not ready\"}",
          "unable to capture prometheus metrics: unavailable: not ready" },
        { 502, "<html>bad gateway</html>",
          "unable to capture prometheus metrics: server returned HTTP status 502" },
        { 200, "not json", "unable to capture prometheus metrics: bad_response: the answer (HTTP 200) is not JSON" },
        { EBB_EIO, "Post \"http://p/api/v1/query\": Couldn't connect to server",
          "unable to capture prometheus metrics: Post \"http://p/api/v1/query\": Couldn't connect to server" },
    };
    (void)state;

    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        struct ebb_prom_result *r = parse(cases[i].status, cases[i].body);
        assert_non_null(r->error);
        if (strcmp(r->error, cases[i].error) != 0)
            fail_msg("case %zu: \"%s\", want \"%s\"", i, r->error, cases[i].error);
        assert_int_equal(r->n, 0);
        assert_false(r->no_client);
        ebb_prom_result_free(r);
    }
}

static void items(void **state)
{
    struct ebb_prom_result *r, *back, *copy;
    struct ebb_error err = { 0 };
    cJSON *j;
    char *text;
    (void)state;

    r = parse(200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                   "{\"metric\":{\"instance\":\"n1\"},\"value\":[1795348800,\"0.25\"]}]}}");
    text = ebb_prom_result_json(r);
    assert_non_null(text);
    assert_non_null(j = cJSON_Parse(text));
    assert_string_equal(cJSON_GetObjectItem(j, "kind")->valuestring, EBB_PROM_KIND);
    assert_string_equal(cJSON_GetObjectItem(j, "apiVersion")->valuestring, EBB_PROM_API_VERSION);
    assert_string_equal(cJSON_GetObjectItem(j, "time")->valuestring, "2026-11-22T12:00:00Z");
    assert_int_equal(ebb_prom_result_decode(j, &back, &err), 0);
    assert_string_equal(back->query, Q);
    assert_string_equal(back->key, Q);
    assert_int_equal(back->time, 1795348800);
    assert_int_equal(back->n, 1);
    assert_true(back->samples[0].value == 0.25);
    copy = ebb_prom_result_copy(back);
    assert_string_equal(copy->samples[0].instance, "n1");
    ebb_prom_result_free(copy);
    ebb_prom_result_free(back);
    cJSON_Delete(j);
    free(text);
    ebb_prom_result_free(r);

    /* a failed query is recorded as failed, and read back so */
    r = parse(200, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}");
    text = ebb_prom_result_json(r);
    j = cJSON_Parse(text);
    assert_int_equal(ebb_prom_result_decode(j, &back, &err), 0);
    assert_non_null(back->error);
    assert_string_equal(back->error, r->error);
    ebb_prom_result_free(back);
    cJSON_Delete(j);
    free(text);
    ebb_prom_result_free(r);

    /* bad items name the field */
    j = cJSON_Parse("{\"kind\":\"PrometheusQueryResult\",\"time\":\"2026-11-22T12:00:00Z\"}");
    assert_int_equal(ebb_prom_result_decode(j, &back, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "query");
    cJSON_Delete(j);
    j = cJSON_Parse("{\"query\":\"up\",\"time\":\"yesterday\",\"data\":{}}");
    assert_int_equal(ebb_prom_result_decode(j, &back, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "time");
    cJSON_Delete(j);
    j = cJSON_Parse("{\"query\":\"up\"}");
    assert_int_equal(ebb_prom_result_decode(j, &back, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "data");
    cJSON_Delete(j);
}

/* ---- the client against a server playing Prometheus and the API -------------- */

#define TOKEN_A "dG9rZW4tQQ=="   /* "token-A" */
#define TOKEN_B "dG9rZW4tQg=="   /* "token-B" */

struct world {
    uv_loop_t loop;
    struct ebb_httpd *srv;
    struct ebb_kube *kube;
    struct ebb_prom *prom;
    char auth[8][64];            /* Authorization of each query */
    char body[8][256];
    int nqueries;
    int secret_gets, watches;
    struct ebb_http_req *watch;  /* the open watch */
    bool secret_missing;
    struct ebb_prom_result *got[8];
    int ngot;
    int closed;
};

static void respond(struct ebb_http_req *r, int status, const char *body)
{
    ebb_http_respond(r, status, "application/json", body, strlen(body));
}

static void send_event(struct ebb_http_req *r, const char *event)
{
    ebb_http_stream_write(r, event, strlen(event));
}

static void watch_gone(struct ebb_http_req *r, void *ud)
{
    struct world *w = ud;
    (void)r;
    w->watch = NULL;
}

static void handler(struct ebb_http_req *r, void *ud)
{
    struct world *w = ud;
    const char *path = ebb_http_req_path(r);

    if (strcmp(path, "/prom/api/v1/query") == 0) {
        const char *a = ebb_http_req_header(r, "Authorization");
        snprintf(w->auth[w->nqueries], sizeof(w->auth[0]), "%s", a ? a : "");
        snprintf(w->body[w->nqueries], sizeof(w->body[0]), "%s", ebb_http_req_body(r, NULL));
        w->nqueries++;
        respond(r, 200, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                         "{\"metric\":{\"instance\":\"n1\"},\"value\":[1,\"0.5\"]}]}}");
        return;
    }
    if (strcmp(path, "/api/v1/namespaces/monitoring/secrets/prom-token") == 0) {
        w->secret_gets++;
        if (w->secret_missing) {
            respond(r, 404, "{\"kind\":\"Status\",\"code\":404}");
            return;
        }
        respond(r, 200, "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"prom-token\","
                        "\"resourceVersion\":\"10\"},\"data\":{\"prometheusAuthToken\":\"" TOKEN_A "\"}}");
        return;
    }
    if (strcmp(path, "/api/v1/namespaces/monitoring/secrets") == 0) {
        const char *fs = ebb_http_req_query(r, "fieldSelector");
        assert_non_null(ebb_http_req_query(r, "watch"));
        assert_string_equal(fs, "metadata.name=prom-token");
        assert_string_equal(ebb_http_req_query(r, "resourceVersion"), "10");
        w->watches++;
        w->watch = r;
        ebb_http_req_on_gone(r, watch_gone, w);
        ebb_http_stream_begin(r, 200, "application/json");
        return;
    }
    ebb_http_respond(r, 404, "text/plain", "no", 2);
}

static void got(struct ebb_prom_result *r, void *ud)
{
    struct world *w = ud;
    w->got[w->ngot++] = r;
}

/* Waits are bounded in time, not in loop turns: the client reads a
 * socket that just gave bytes again only after a few milliseconds (its
 * read batches), however fast the loop turns. */
static void run_until(struct world *w, bool (*done)(struct world *))
{
    uint64_t end = uv_hrtime() + 10 * (uint64_t)1000000000;

    while (!done(w) && uv_hrtime() < end)
        uv_run(&w->loop, UV_RUN_NOWAIT);
    assert_true(done(w));
}

/* Everything due in the next `ms` milliseconds done. */
static void run_for(struct world *w, unsigned ms)
{
    uint64_t end = uv_hrtime() + (uint64_t)ms * 1000000;

    while (uv_hrtime() < end)
        uv_run(&w->loop, UV_RUN_NOWAIT);
}

static bool secret_read(struct world *w) { return w->watches > 0 || w->secret_gets > 0; }
static bool one_answer(struct world *w) { return w->ngot == 1; }
static bool two_answers(struct world *w) { return w->ngot == 2; }
static bool three_answers(struct world *w) { return w->ngot == 3; }
static bool four_answers(struct world *w) { return w->ngot == 4; }
static bool watching(struct world *w) { return w->watch != NULL; }
static bool ready(struct world *w) { return ebb_prom_ready(w->prom); }
static bool not_ready(struct world *w) { return !ebb_prom_ready(w->prom); }
static bool all_closed(struct world *w) { return w->closed == 3; }

static void closed_one(void *ud)
{
    ((struct world *)ud)->closed++;
}

static void world_open(struct world *w, bool with_secret)
{
    struct ebb_httpd_opts ho = { .handler = handler };
    struct ebb_kube_config kc = { 0 };
    struct ebb_prom_opts po = { 0 };
    struct ebb_error err = { 0 };
    char url[64];

    ho.ud = w;
    assert_int_equal(uv_loop_init(&w->loop), 0);
    assert_int_equal(ebb_httpd_create(&w->loop, &ho, &w->srv, &err), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", ebb_httpd_port(w->srv));
    kc.server = url;
    assert_int_equal(ebb_kube_create(&w->loop, &kc, NULL, &w->kube, &err), 0);
    strcat(url, "/prom/");   /* a path prefix, and a trailing slash */
    po.url = url;
    if (with_secret) {
        po.secret_namespace = "monitoring";
        po.secret_name = "prom-token";
        po.kube = w->kube;
    } else {
        po.token = "static-token";
    }
    assert_int_equal(ebb_prom_create(&w->loop, &po, &w->prom, &err), 0);
}

static void world_close(struct world *w)
{
    for (int i = 0; i < w->ngot; i++)
        ebb_prom_result_free(w->got[i]);
    ebb_prom_close(w->prom, closed_one, w);
    ebb_kube_close(w->kube, closed_one, w);
    ebb_httpd_close(w->srv, closed_one, w);
    run_until(w, all_closed);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&w->loop), 0);
}

static void query_form_and_token(void **state)
{
    struct world w = { 0 };
    (void)state;

    world_open(&w, false);
    assert_int_equal(ebb_prom_query(w.prom, "sum by (instance) (rate(x[5m]))", 1795348800, got, &w), 0);
    assert_int_equal(w.ngot, 0);   /* never inside the call */
    run_until(&w, one_answer);
    assert_null(w.got[0]->error);
    assert_int_equal(w.got[0]->n, 1);
    assert_string_equal(w.auth[0], "Bearer static-token");
    assert_string_equal(w.body[0], "query=sum%20by%20%28instance%29%20%28rate%28x%5B5m%5D%29%29&time=1795348800");
    world_close(&w);
}

static void token_from_secret(void **state)
{
    struct world w = { 0 };
    (void)state;

    world_open(&w, true);
    /* before the Secret was read: no client */
    assert_int_equal(ebb_prom_query(w.prom, Q, 1, got, &w), 0);
    run_until(&w, one_answer);
    assert_true(w.got[0]->no_client);
    assert_string_equal(w.got[0]->error, "prometheus client not initialized (secret monitoring/prom-token "
                                         "not read yet)");
    assert_int_equal(w.nqueries, 0);
    run_until(&w, watching);
    assert_true(ebb_prom_ready(w.prom));
    assert_int_equal(ebb_prom_query(w.prom, Q, 1, got, &w), 0);
    run_until(&w, two_answers);
    assert_null(w.got[1]->error);
    assert_string_equal(w.auth[0], "Bearer token-A");

    /* the Secret changes: the next query has the new token */
    send_event(w.watch, "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Secret\",\"metadata\":"
                        "{\"name\":\"prom-token\",\"resourceVersion\":\"11\"},\"data\":"
                        "{\"prometheusAuthToken\":\"" TOKEN_B "\"}}}\n");
    run_for(&w, 200);
    assert_int_equal(ebb_prom_query(w.prom, Q, 1, got, &w), 0);
    run_until(&w, three_answers);
    assert_string_equal(w.auth[1], "Bearer token-B");

    /* a token a header cannot carry (it would forge the next one): none,
     * and the reason says so; a good one again after it */
    send_event(w.watch, "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Secret\",\"metadata\":"
                        "{\"name\":\"prom-token\",\"resourceVersion\":\"11\"},\"data\":"
                        "{\"prometheusAuthToken\":\"dG9rDQpYLUZvcmdlZDogMQ==\"}}}\n");
    run_until(&w, not_ready);
    send_event(w.watch, "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Secret\",\"metadata\":"
                        "{\"name\":\"prom-token\",\"resourceVersion\":\"11\"},\"data\":"
                        "{\"prometheusAuthToken\":\"" TOKEN_B "\"}}}\n");
    run_until(&w, ready);

    /* deleted: no client any more */
    send_event(w.watch, "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Secret\",\"metadata\":"
                        "{\"name\":\"prom-token\",\"resourceVersion\":\"12\"}}}\n");
    run_until(&w, not_ready);
    assert_int_equal(ebb_prom_query(w.prom, Q, 1, got, &w), 0);
    run_until(&w, four_answers);
    assert_string_equal(w.got[3]->error, "prometheus client not initialized (unable to get "
                                         "monitoring/prom-token secret)");
    assert_int_equal(w.nqueries, 2);
    world_close(&w);
}

static void secret_missing(void **state)
{
    struct world w = { .secret_missing = true };
    (void)state;

    world_open(&w, true);
    run_until(&w, secret_read);
    run_for(&w, 200);
    assert_false(ebb_prom_ready(w.prom));
    assert_int_equal(ebb_prom_query(w.prom, Q, 1, got, &w), 0);
    run_until(&w, one_answer);
    assert_true(w.got[0]->no_client);
    assert_string_equal(w.got[0]->error, "prometheus client not initialized (unable to get "
                                         "monitoring/prom-token secret)");
    world_close(&w);
}

static void query_all_down(void **state)
{
    struct ebb_prom_opts po = { .url = "http://127.0.0.1:9" };
    const char *qs[] = { Q, "up" };
    struct ebb_prom_result *out[2];
    (void)state;

    assert_int_equal(ebb_prom_query_all(NULL, &po, qs, 2, 1795348800, out), 0);
    for (int i = 0; i < 2; i++) {
        assert_non_null(out[i]->error);
        assert_non_null(strstr(out[i]->error, "unable to capture prometheus metrics: Post "
                                              "\"http://127.0.0.1:9/api/v1/query\": "));
        assert_string_equal(out[i]->query, qs[i]);
        ebb_prom_result_free(out[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vectors),
        cmocka_unit_test(refused),
        cmocka_unit_test(items),
        cmocka_unit_test(query_form_and_token),
        cmocka_unit_test(token_from_secret),
        cmocka_unit_test(secret_missing),
        cmocka_unit_test(query_all_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
