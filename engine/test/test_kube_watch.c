/* kube_watch.c against a scripted API server on the same loop
 * (engine/test/kube_server.h): one object never fails the others, in a
 * LIST and in a watch; an answer that is not a List is asked again; a page
 * too large is asked for with half the limit; a watch accepted and broken
 * again and again is stale from its first break, with a backoff a
 * reopening does not reset; what a cycle holds is bounded and counted.
 * Every test ends with everything closed and uv_loop_close(loop) == 0. */
#include "fixtures.h"

#include <signal.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb/kube.h"
#include "ebb/watch.h"
#include "test/kube_server.h"

extern double ebb__informers_backoff;
extern uint64_t ebb__informers_quick_ms;
extern uint64_t ebb__informers_stream_idle_ms;
extern double ebb__kube_backoff;
extern size_t ebb__informers_queue_max;
size_t ebb__informers_queued(const struct ebb_informers *s);

struct env {
    uv_loop_t loop;
    struct ks srv;
    char server[64];
    struct ebb_kube *kube;
    struct ebb_cache *cache;
    struct ebb_informers *inf;
    int closed;
    int nskip;
    struct ebb_skip skip[8];
    char *texts[64];              /* the answers' bytes, freed at the end */
    int ntexts;
};

static void on_skip(void *ud, const char *resource, const struct ebb_skip *why)
{
    struct env *e = ud;

    assert_string_equal(resource, "pods");
    if (e->nskip < 8)
        e->skip[e->nskip] = *why;
    e->nskip++;
}

/* The tests of paged LISTs ask for them; those of the streaming list set
 * this before env_open. */
static int sync_mode = EBB_SYNC_LIST;

static void env_open(struct env *e, bool hold)
{
    struct ebb_kube_config cfg = { .server = e->server };
    struct ebb_informers_opts io = { .page_size = 16, .sync_mode = sync_mode, .object_text = true };
    struct ebb_error err;

    memset(e, 0, sizeof(*e));
    ebb__informers_backoff = 0;
    ebb__kube_backoff = 0;
    ebb__informers_queue_max = EBB_HOLD_QUEUE_MAX;
    assert_int_equal(uv_loop_init(&e->loop), 0);
    ks_start(&e->srv, &e->loop);
    snprintf(e->server, sizeof(e->server), "http://127.0.0.1:%d", e->srv.port);
    assert_int_equal(ebb_kube_create(&e->loop, &cfg, &(struct ebb_kube_opts){ .max_retries = 1 }, &e->kube,
                                     &err), 0);
    assert_int_equal(ebb_cache_create(&e->cache), 0);
    assert_int_equal(ebb_informers_create(&e->loop, e->kube, e->cache, &io, &e->inf), 0);
    ebb_informers_on_skip(e->inf, on_skip, e);
    if (hold)
        ebb_informers_hold(e->inf, true);
}

static void closed_cb(void *ud)
{
    ((struct env *)ud)->closed++;
}

static void env_close(struct env *e)
{
    ebb_informers_close(e->inf, closed_cb, e);
    ebb_kube_close(e->kube, closed_cb, e);
    ks_close(&e->srv);
    while (e->closed < 2 || e->srv.nconns > 0)
        uv_run(&e->loop, UV_RUN_ONCE);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&e->loop), 0);
    ebb_cache_destroy(e->cache);
    for (int i = 0; i < e->ntexts; i++)
        free(e->texts[i]);
}

/* An answer of resource r (printf-style bytes, kept until the end). */
__attribute__((format(printf, 5, 6)))
static void answer(struct env *e, int r, bool keep_open, bool more, const char *fmt, ...)
{
    va_list ap;
    char *t;

    va_start(ap, fmt);
    assert_true(vasprintf(&t, fmt, ap) >= 0);
    va_end(ap);
    e->texts[e->ntexts++] = t;
    assert_true(ks_add(&e->srv, r, t, strlen(t), 1, keep_open, more));
}

/* A 200 with a JSON body. */
static void ok_json(struct env *e, int r, const char *body)
{
    answer(e, r, false, false, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
           strlen(body), body);
}

/* A watch stream that opens with these events and stays open. */
static void stream(struct env *e, int r, const char *events)
{
    answer(e, r, true, false, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
           "\r\n%zx\r\n%s\r\n", strlen(events), events);
}

/* More events on the stream resource r keeps open (one chunk). */
static void push(struct env *e, int r, const char *events)
{
    char *t;

    assert_true(asprintf(&t, "%zx\r\n%s\r\n", strlen(events), events) >= 0);
    e->texts[e->ntexts++] = t;
    assert_true(ks_push(&e->srv, r, t, strlen(t)));
}

#define POD(name, extra)                                                                          \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"d\",\"uid\":\"u-" name "\","             \
    "\"resourceVersion\":\"5\"},\"spec\":{\"nodeName\":\"n1\"" extra "}}"

/* Run the loop until `done` (at most 10 s), then until the server has
 * been quiet a moment. */
static void run_until(struct env *e, bool (*done)(struct env *))
{
    uint64_t t0 = uv_now(&e->loop);

    while (!done(e)) {
        if (uv_now(&e->loop) - t0 > 10000)
            fail_msg("timed out");
        uv_run(&e->loop, UV_RUN_NOWAIT);
    }
}

static bool synced(struct env *e) { return ebb_informers_synced(e->inf); }
static bool all_out(struct env *e) { return e->srv.left == 0 && uv_now(&e->loop) - e->srv.wrote_ms > 20; }
static bool synced_and_out(struct env *e) { return synced(e) && all_out(e); }

static uint64_t stat_of(struct env *e, const char *what)
{
    struct ebb_informer_stats st[16];
    size_t n = ebb_informers_stats(e->inf, st, 16);

    for (size_t i = 0; i < n; i++) {
        if (strcmp(st[i].resource, "pods") != 0)
            continue;
        if (strcmp(what, "events") == 0)
            return st[i].events;
        if (strcmp(what, "resumes") == 0)
            return st[i].resumes;
        if (strcmp(what, "errors") == 0)
            return st[i].errors;
        if (strcmp(what, "skipped") == 0)
            return st[i].skipped;
        if (strcmp(what, "lists") == 0)
            return st[i].lists;
        if (strcmp(what, "streamed") == 0)
            return st[i].streamed;
        if (strcmp(what, "paged") == 0)
            return st[i].paged;
    }
    fail_msg("no pods informer");
    return 0;
}

static struct ebb_pod *pod(struct env *e, const char *name)
{
    return ebb_cache_pod(e->cache, ebb_str_find("d", 1), ebb_str_find(name, strlen(name)));
}

/* A LIST of pods with objects ebb cannot keep among them: it syncs, the
 * others are in, each bad one is reported once with its key and field. */
static void test_list_skips_alone(void **state)
{
    struct env e;
    (void)state;

    env_open(&e, false);
    ok_json(&e, KS_PODS, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":["
            POD("p1", "") "," POD("p2", ",\"priority\":\"high\"") "," POD("p3", "") ",\"x\","
            "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n9\"}}," POD("p4", ",\"tolerations\":[{\"operator\":\"Maybe\"}]")
            "]}");
    ebb_informers_start(e.inf);
    run_until(&e, synced_and_out);
    assert_int_equal(ebb_cache_count(e.cache, EBB_KIND_POD), 2);
    assert_non_null(pod(&e, "p1"));
    assert_non_null(pod(&e, "p3"));
    assert_int_equal(e.nskip, 4);
    assert_string_equal(e.skip[0].name, "p2");
    assert_string_equal(e.skip[0].ns, "d");
    assert_string_equal(e.skip[0].uid, "u-p2");
    assert_string_equal(e.skip[0].err.field, "spec.priority");
    assert_int_equal(e.skip[0].reason, EBB_SKIP_INVALID);
    assert_string_equal(e.skip[1].name, "");
    assert_int_equal(e.skip[2].reason, EBB_SKIP_WRONG_KIND);
    assert_string_equal(e.skip[3].err.field, "spec.tolerations[0].operator");
    assert_int_equal(stat_of(&e, "skipped"), 4);
    env_close(&e);
}

/* Objects' text (pod.object) is kept only while asked for: off, a LIST's
 * and a watch's pods have none and nothing is written; turned on, pods
 * and nodes are listed again and have it; off again, new versions have
 * none while the old text still reads. */
static bool pods_relisted(struct env *e) { return stat_of(e, "lists") >= 2 && synced(e) && all_out(e); }

static void test_text_kept_on_demand(void **state)
{
    struct env e;
    uint64_t bytes, live, moves;
    cJSON *j;
    (void)state;

    env_open(&e, false);
    ebb_informers_keep_text(e.inf, false);
    assert_false(ebb_cache_keeps_text(e.cache));
    ok_json(&e, KS_PODS, "{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" POD("p1", "") "]}");
    stream(&e, KS_PODS, "{\"type\":\"ADDED\",\"object\":" POD("p2", "") "}\n");
    ebb_informers_start(e.inf);
    run_until(&e, synced_and_out);
    assert_non_null(pod(&e, "p1"));
    assert_non_null(pod(&e, "p2"));
    assert_int_equal(pod(&e, "p1")->src.len, 0);
    assert_int_equal(pod(&e, "p2")->src.len, 0);
    assert_null(ebb_cache_read_object(e.cache, &pod(&e, "p1")->src));
    assert_int_equal(ebb_informers_spill_bytes(e.inf, &live, &moves), 0);
    /* a script asked: noted once */
    assert_false(ebb_cache_text_wanted(e.cache));
    ebb_cache_text_asked(e.cache);
    assert_true(ebb_cache_text_wanted(e.cache));
    assert_false(ebb_cache_text_wanted(e.cache));

    /* on: listed again, with text */
    ok_json(&e, KS_PODS, "{\"metadata\":{\"resourceVersion\":\"12\"},\"items\":[" POD("p1", "") ","
            POD("p2", "") "]}");
    stream(&e, KS_PODS, "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}\n");
    ebb_informers_keep_text(e.inf, true);
    assert_true(ebb_cache_keeps_text(e.cache));
    run_until(&e, pods_relisted);
    assert_true(pod(&e, "p1")->src.len > 0);
    assert_non_null(j = ebb_cache_read_object(e.cache, &pod(&e, "p2")->src));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "metadata"),
                                                         "name")->valuestring, "p2");
    cJSON_Delete(j);
    ebb_cache_text_asked(e.cache);   /* kept: nothing to ask for */
    assert_false(ebb_cache_text_wanted(e.cache));
    bytes = ebb_informers_spill_bytes(e.inf, &live, &moves);
    assert_true(bytes > 0);

    /* off: a new version has no text, nothing more is written */
    ebb_informers_keep_text(e.inf, false);
    push(&e, KS_PODS, "{\"type\":\"MODIFIED\",\"object\":" POD("p1", ",\"priority\":7") "}\n");
    run_until(&e, all_out);
    while (pod(&e, "p1")->src.len != 0)
        uv_run(&e.loop, UV_RUN_ONCE);
    assert_true(pod(&e, "p2")->src.len > 0);
    assert_int_equal(ebb_informers_spill_bytes(e.inf, &live, &moves), bytes);
    env_close(&e);
}

/* In a watch: an event whose object ebb cannot keep drops what was cached
 * of it and the stream goes on (no resume); a DELETED of such an object
 * deletes it; an object that names nothing relists. */
static void test_watch_skips_alone(void **state)
{
    struct env e;
    (void)state;

    env_open(&e, false);
    ok_json(&e, KS_PODS, "{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" POD("p1", "") "]}");
    stream(&e, KS_PODS,
           "{\"type\":\"ADDED\",\"object\":" POD("p2", "") "}\n"
           "{\"type\":\"MODIFIED\",\"object\":" POD("p1", ",\"priority\":1.5") "}\n"
           "{\"type\":\"DELETED\",\"object\":" POD("p2", ",\"containers\":{}") "}\n"
           "{\"type\":\"ADDED\",\"object\":" POD("p3", "") "}\n"
           "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}\n");
    ebb_informers_start(e.inf);
    run_until(&e, synced_and_out);
    assert_null(pod(&e, "p1"));
    assert_null(pod(&e, "p2"));
    assert_non_null(pod(&e, "p3"));
    assert_int_equal(e.nskip, 1);   /* the DELETED one is gone anyway */
    assert_string_equal(e.skip[0].name, "p1");
    assert_int_equal(stat_of(&e, "events"), 4);
    assert_int_equal(stat_of(&e, "resumes"), 0);
    assert_int_equal(stat_of(&e, "lists"), 1);
    env_close(&e);
}

/* An answer that is not a List is asked again; a page too large
 * ("Content-Length: 10 GB", refused before it is read) is asked for with
 * half the limit. */
static void test_list_retried(void **state)
{
    struct env e;
    (void)state;

    env_open(&e, false);
    ok_json(&e, KS_PODS, "[1,2]");
    answer(&e, KS_PODS, false, false, "HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n{\"items\":[");
    ok_json(&e, KS_PODS, "{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" POD("p1", "") "]}");
    ebb_informers_start(e.inf);
    run_until(&e, synced_and_out);
    assert_non_null(pod(&e, "p1"));
    assert_true(stat_of(&e, "errors") >= 2);
    assert_non_null(strstr(e.srv.url[KS_PODS], "watch=1"));
    {
        char buf[512];
        assert_int_equal(ebb_informers_not_current(e.inf, 0, buf, sizeof(buf)), 0);
    }
    /* the limit asked for after the page too large */
    {
        int asked = 0;
        for (int i = 0; i < e.srv.nlog; i++) {
            if (strncmp(e.srv.log[i], "/api/v1/pods?limit=", 19) == 0)
                asked = asked * 100 + atoi(e.srv.log[i] + 19);
        }
        assert_int_equal(asked, 161608);   /* 16 (not a List), 16 (10 GB), then 8 */
    }
    env_close(&e);
}

static bool first_out(struct env *e)
{
    return e->srv.next[KS_PODS] >= 1 && uv_now(&e->loop) - e->srv.wrote_ms > 20;
}

static bool one_error(struct env *e) { return stat_of(e, "errors") >= 1; }
static bool all_errors(struct env *e) { return stat_of(e, "errors") >= 6; }

/* A watch the server accepts and then breaks, again and again, is stale
 * from its first break, not from its last reopening. */
static void test_watch_broken_again_and_again(void **state)
{
    static const char broken[] =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        "4f\r\n{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,\"message\":\"etcd is sad\"}}\n\r\n"
        "0\r\n\r\n";
    struct env e;
    char buf[512];
    (void)state;

    env_open(&e, false);
    ok_json(&e, KS_PODS, "{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[]}");
    for (int i = 0; i < 6; i++)
        ks_add(&e.srv, KS_PODS, broken, sizeof(broken) - 1, 1, false, false);
    ebb_informers_start(e.inf);
    run_until(&e, one_error);
    /* 30 ms between the first break and the others */
    usleep(30000);
    uv_update_time(&e.loop);
    run_until(&e, all_errors);
    assert_true(ebb_informers_broken_ms(e.inf, NULL, 0) >= 30);
    assert_int_equal(ebb_informers_not_current(e.inf, 0, buf, sizeof(buf)), 1);
    assert_non_null(strstr(buf, "pods (broken for "));
    assert_non_null(strstr(buf, "ERROR event"));
    assert_int_equal(stat_of(&e, "resumes"), 6);
    env_close(&e);
}

/* An idle watch cut without its closing chunk (a load balancer in front
 * of a managed API server at its idle timeout; the server at its
 * timeoutSeconds) is routine: resumed from where it was, not counted as an
 * error, the view never stale, nothing above debug level. A cut of a watch
 * that was never accepted still is an error. */
static void test_idle_watch_cut_is_routine(void **state)
{
    static const char cut[] =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    struct env e;
    (void)state;

    env_open(&e, false);
    ebb__informers_quick_ms = 0;
    ok_json(&e, KS_PODS, "{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[]}");
    for (int i = 0; i < 3; i++)
        ks_add(&e.srv, KS_PODS, cut, sizeof(cut) - 1, 1, false, false);
    ebb_informers_start(e.inf);
    run_until(&e, synced_and_out);
    ebb__informers_quick_ms = 10000;
    assert_int_equal(stat_of(&e, "errors"), 0);
    assert_int_equal(stat_of(&e, "resumes"), 3);
    assert_int_equal(ebb_informers_broken_ms(e.inf, NULL, 0), 0);
    assert_non_null(strstr(e.srv.url[KS_PODS], "timeoutSeconds="));
    assert_non_null(strstr(e.srv.url[KS_PODS], "resourceVersion=9"));
    env_close(&e);
}

/* What a cycle holds is bounded: past it that resource's queue is dropped
 * and it is listed again once the hold is released, and the queues'
 * count stays right. */
static void test_hold_bounded(void **state)
{
    char body[8192];
    size_t off;
    struct env e;
    (void)state;

    off = (size_t)snprintf(body, sizeof(body), "{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[");
    for (int i = 0; i < 12; i++)
        off += (size_t)snprintf(body + off, sizeof(body) - off, "%s{\"metadata\":{\"name\":\"p%d\","
                                "\"namespace\":\"d\"},\"spec\":{\"nodeName\":\"n1\"}}", i ? "," : "", i);
    snprintf(body + off, sizeof(body) - off, "]}");
    env_open(&e, true);
    ebb__informers_queue_max = 1024;
    ok_json(&e, KS_PODS, body);
    ok_json(&e, KS_PODS, body);
    ebb_informers_start(e.inf);
    run_until(&e, first_out);
    assert_false(synced(&e));
    assert_int_equal(e.srv.next[KS_PODS], 1);   /* the list again waits for the release */
    assert_true(ebb__informers_queued(e.inf) <= 1024);
    assert_true(stat_of(&e, "errors") >= 1);
    ebb__informers_queue_max = EBB_HOLD_QUEUE_MAX;
    ebb_informers_hold(e.inf, false);
    run_until(&e, synced);
    assert_int_equal(ebb__informers_queued(e.inf), 0);
    assert_int_equal(ebb_cache_count(e.cache, EBB_KIND_POD), 12);
    /* held again: what comes is queued and counted, then applied */
    ebb_informers_hold(e.inf, true);
    run_until(&e, all_out);
    ebb_informers_hold(e.inf, false);
    assert_int_equal(ebb__informers_queued(e.inf), 0);
    env_close(&e);
}

/* ---- the streaming list ---------------------------------------------------- */

#define BOOKMARK_END(rv)                                                                           \
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"    \
    "\"resourceVersion\":\"" rv "\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n"

/* Every resource but pods: a streaming list of nothing, at once. */
static void others_streamed(struct env *e)
{
    for (int r = KS_NODES; r < KS_PODS; r++)
        stream(e, r, BOOKMARK_END("3"));
}

static bool pods_in(struct env *e) { return ebb_cache_count(e->cache, EBB_KIND_POD) >= 2; }

/* The streaming list asked as client-go's WatchList asks; the resource is
 * synced by its initial-events-end bookmark, not before (events without it
 * are in the cache, the resource is not synced); no LIST is made; the
 * same stream goes on as the watch; an object ebb cannot keep is skipped
 * alone, as in a LIST. */
static void test_stream_syncs_at_bookmark(void **state)
{
    struct env e;
    char buf[512];
    (void)state;

    sync_mode = EBB_SYNC_AUTO;
    env_open(&e, false);
    sync_mode = EBB_SYNC_LIST;
    others_streamed(&e);
    stream(&e, KS_PODS,
           "{\"type\":\"ADDED\",\"object\":" POD("p1", "") "}\n"
           "{\"type\":\"ADDED\",\"object\":" POD("p2", ",\"priority\":\"high\"") "}\n"
           "{\"type\":\"ADDED\",\"object\":" POD("p3", "") "}\n");
    ebb_informers_start(e.inf);
    run_until(&e, pods_in);
    run_until(&e, all_out);
    assert_false(synced(&e));
    assert_int_equal(ebb_informers_not_current(e.inf, 0, buf, sizeof(buf)), 1);
    assert_non_null(strstr(buf, "pods (not synced"));
    assert_string_equal(e.srv.url[KS_PODS], "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch="
                        "NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=300");
    /* the end, then a change, on the same stream */
    push(&e, KS_PODS, BOOKMARK_END("10") "{\"type\":\"DELETED\",\"object\":" POD("p1", "") "}\n");
    run_until(&e, synced_and_out);
    assert_null(pod(&e, "p1"));
    assert_non_null(pod(&e, "p3"));
    assert_int_equal(e.nskip, 1);
    assert_string_equal(e.skip[0].name, "p2");
    assert_int_equal(stat_of(&e, "lists"), 1);
    assert_int_equal(stat_of(&e, "streamed"), 1);
    assert_int_equal(stat_of(&e, "paged"), 0);
    assert_int_equal(stat_of(&e, "events"), 1);   /* the DELETED: the initial events are the list */
    for (int i = 0; i < e.srv.nlog; i++)
        assert_null(strstr(e.srv.log[i], "limit="));   /* no LIST of anything */
    assert_int_equal(ebb_informers_not_current(e.inf, 0, buf, sizeof(buf)), 0);
    env_close(&e);
}

/* A server that refuses the streaming list gets paged LISTs for that
 * resource, the others stay streamed: 422 (v1.25: "resourceVersionMatch
 * is forbidden for watch"), an ERROR event (v1.35 on an etcd without
 * progress requests), a stream that goes quiet without its
 * initial-events-end bookmark (a server that ignores sendInitialEvents, or
 * a bookmark without the annotation), a stream cut inside an event three
 * times in a row (a server that ends a stream past what it queues). What the refused stream brought is
 * replaced by the LIST (p0 is gone); the next round is a LIST again. */
static void refused_then_listed(int how)
{
    static const char invalid[] =
        "HTTP/1.1 422 Unprocessable Entity\r\nContent-Type: application/json\r\nContent-Length: 147\r\n\r\n"
        "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"resourceVersionMatch: Forbidden: "
        "resourceVersionMatch is forbidden for watch\",\"code\":422}           ";
    struct env e;
    (void)0;

    sync_mode = EBB_SYNC_AUTO;
    env_open(&e, false);
    sync_mode = EBB_SYNC_LIST;
    others_streamed(&e);
    if (how == 0)
        ks_add(&e.srv, KS_PODS, invalid, sizeof(invalid) - 1, 1, false, false);
    else if (how == 1)
        stream(&e, KS_PODS, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
               "\"a watch stream was requested by the client but the required storage feature "
               "RequestWatchProgress is disabled\",\"reason\":\"InternalError\",\"code\":500}}\n");
    else if (how == 2)
        stream(&e, KS_PODS, "{\"type\":\"ADDED\",\"object\":" POD("p0", "") "}\n"
               "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"8\"}}}\n");
    else   /* cut inside an event, again and again (a server past what it queues) */
        for (int k = 0; k < 3; k++)
            answer(&e, KS_PODS, false, false, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n%s", "30\r\n{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p0\r\n");
    ok_json(&e, KS_PODS, "{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" POD("p1", "") "]}");
    stream(&e, KS_PODS, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"message\":\"too old\"}}\n");
    ok_json(&e, KS_PODS, "{\"metadata\":{\"resourceVersion\":\"20\"},\"items\":[" POD("p2", "") "]}");
    ebb__informers_stream_idle_ms = 100;
    ebb_informers_start(e.inf);
    run_until(&e, synced_and_out);
    ebb__informers_stream_idle_ms = EBB_STREAM_IDLE_MS;
    assert_null(pod(&e, "p0"));
    assert_null(pod(&e, "p1"));   /* relisted after the 410: by a LIST */
    assert_non_null(pod(&e, "p2"));
    assert_int_equal(stat_of(&e, "lists"), 2);
    assert_int_equal(stat_of(&e, "streamed"), 0);
    assert_int_equal(stat_of(&e, "paged"), 1);
    assert_string_equal(e.srv.log[e.srv.nlog - 1], "/api/v1/pods?watch=1&resourceVersion=20&"
                        "allowWatchBookmarks=true&timeoutSeconds=300");
    {
        /* one streaming request, then LISTs */
        int streams = 0, lists = 0;
        for (int i = 0; i < e.srv.nlog; i++) {
            if (strncmp(e.srv.log[i], "/api/v1/pods?", 13) != 0)
                continue;
            streams += strstr(e.srv.log[i], "sendInitialEvents=true") != NULL;
            lists += strncmp(e.srv.log[i], "/api/v1/pods?limit=", 19) == 0;
        }
        assert_int_equal(streams, how == 3 ? 3 : 1);
        assert_int_equal(lists, 2);
    }
    env_close(&e);
}

static void test_stream_refused_422(void **state) { (void)state; refused_then_listed(0); }
static void test_stream_refused_error_event(void **state) { (void)state; refused_then_listed(1); }
static void test_stream_without_end_bookmark(void **state) { (void)state; refused_then_listed(2); }
static void test_stream_cut_again_and_again(void **state) { (void)state; refused_then_listed(3); }

/* A relist by a streaming list is a LIST round: what was cached and is no
 * longer there is deleted at the initial-events-end bookmark (not before:
 * p2 is still there while the stream goes on), what was deleted and
 * created again is there; events held by a cycle are applied in order on
 * release. */
static void test_stream_relist_drops_gone(void **state)
{
    struct env e;
    (void)state;

    sync_mode = EBB_SYNC_AUTO;
    env_open(&e, false);
    sync_mode = EBB_SYNC_LIST;
    others_streamed(&e);
    stream(&e, KS_PODS, "{\"type\":\"ADDED\",\"object\":" POD("p1", "") "}\n"
           "{\"type\":\"ADDED\",\"object\":" POD("p2", "") "}\n" BOOKMARK_END("10")
           "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"message\":\"too old\"}}\n");
    stream(&e, KS_PODS, "{\"type\":\"ADDED\",\"object\":" POD("p1", "") "}\n"
           "{\"type\":\"ADDED\",\"object\":" POD("p3", "") "}\n");
    ebb_informers_start(e.inf);
    run_until(&e, all_out);
    while (pod(&e, "p3") == NULL)
        uv_run(&e.loop, UV_RUN_NOWAIT);
    assert_non_null(pod(&e, "p2"));   /* the round is not over */
    assert_int_equal(stat_of(&e, "lists"), 1);
    ebb_informers_hold(e.inf, true);
    push(&e, KS_PODS, BOOKMARK_END("30") "{\"type\":\"ADDED\",\"object\":" POD("p4", "") "}\n");
    run_until(&e, all_out);
    assert_non_null(pod(&e, "p2"));   /* held */
    assert_int_equal(stat_of(&e, "lists"), 1);
    ebb_informers_hold(e.inf, false);
    assert_null(pod(&e, "p2"));
    assert_non_null(pod(&e, "p1"));
    assert_non_null(pod(&e, "p3"));
    assert_non_null(pod(&e, "p4"));
    assert_int_equal(stat_of(&e, "lists"), 2);
    assert_int_equal(stat_of(&e, "streamed"), 2);
    assert_int_equal(ebb__informers_queued(e.inf), 0);
    env_close(&e);
}

static bool some_errors(struct env *e) { return stat_of(e, "errors") >= 3; }

/* --sync-mode=watchlist: a refusal is an error, the stream asked again,
 * never a LIST; readiness says why. */
static void test_stream_forced(void **state)
{
    static const char invalid[] =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 83\r\n\r\n"
        "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"sendInitialEvents: nope\",\"code\":400}";
    struct env e;
    char buf[512];
    (void)state;

    sync_mode = EBB_SYNC_WATCHLIST;
    env_open(&e, false);
    sync_mode = EBB_SYNC_LIST;
    others_streamed(&e);
    ks_add(&e.srv, KS_PODS, invalid, sizeof(invalid) - 1, 3, false, false);
    for (int k = 0; k < 3; k++)
        ks_add(&e.srv, KS_PODS, invalid, sizeof(invalid) - 1, 1, false, false);
    ebb_informers_start(e.inf);
    run_until(&e, some_errors);
    assert_false(synced(&e));
    assert_int_equal(ebb_informers_not_current(e.inf, 0, buf, sizeof(buf)), 1);
    assert_non_null(strstr(buf, "streaming list refused (--sync-mode=watchlist)"));
    assert_non_null(strstr(buf, "sendInitialEvents: nope"));
    for (int i = 0; i < e.srv.nlog; i++)
        assert_null(strstr(e.srv.log[i], "limit="));
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_skips_alone),
        cmocka_unit_test(test_text_kept_on_demand),
        cmocka_unit_test(test_watch_skips_alone),
        cmocka_unit_test(test_list_retried),
        cmocka_unit_test(test_watch_broken_again_and_again),
        cmocka_unit_test(test_idle_watch_cut_is_routine),
        cmocka_unit_test(test_hold_bounded),
        cmocka_unit_test(test_stream_syncs_at_bookmark),
        cmocka_unit_test(test_stream_refused_422),
        cmocka_unit_test(test_stream_refused_error_event),
        cmocka_unit_test(test_stream_without_end_bookmark),
        cmocka_unit_test(test_stream_cut_again_and_again),
        cmocka_unit_test(test_stream_relist_drops_gone),
        cmocka_unit_test(test_stream_forced),
    };

    signal(SIGPIPE, SIG_IGN);
    ebb_log_level = EBB_LOG_OFF;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
