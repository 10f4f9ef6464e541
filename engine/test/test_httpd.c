/* engine/base/httpd*.c: the HTTP/1.1 server, driven by raw clients on the same
 * loop. Every test stops the server and ends with the loop closed. */
#include "fixtures.h"

#include <signal.h>

#include <uv.h>

#include "ebb/httpd.h"

/* ---- a raw client ------------------------------------------------------------ */

struct client {
    uv_tcp_t tcp;
    uv_connect_t connect;
    struct t *t;
    char *pending;               /* sent once connected */
    char *in;
    size_t n, cap;
    bool connected, eof, closed, no_read;
};

/* ---- the server under test ------------------------------------------------------ */

enum { ANSWER = 0, HOLD, STREAM, HOLD_FIRST, FLOOD, BIG, FLOOD_HOLD };

struct t {
    uv_loop_t loop;
    struct ebb_httpd *h;
    int port;
    int mode;
    int handled, gone, closed_cb, answered;
    struct ebb_http_req *held;
    char method[16], path[256], q_sel[256], q_watch[16], q_x[64], hdr[128], body[256];
    bool has_watch;
    int order[8];
    int norder;
    int flood_rc, flood_writes;
    uv_timer_t guard;
    bool timed_out;
    size_t big;                  /* BIG: the size of every answer */
    size_t write_answer;         /* BIG: the size of the answer to a POST */
    int applied;                 /* BIG: POSTs the handler acted on */
    size_t max_total;            /* FLOOD: the server's max_total_queued */
    size_t queued_peak;          /* FLOOD: the most queued seen after a write */
    int flood_chunks;            /* FLOOD_HOLD: chunks written before holding the stream */
};

static void on_gone(struct ebb_http_req *req, void *ud)
{
    struct t *t = ud;
    (void)req;
    t->gone++;
    if (t->held == req)
        t->held = NULL;
}

static void handler(struct ebb_http_req *r, void *ud)
{
    struct t *t = ud;
    const char *v;

    t->handled++;
    snprintf(t->method, sizeof(t->method), "%s", ebb_http_req_method(r));
    snprintf(t->path, sizeof(t->path), "%s", ebb_http_req_path(r));
    v = ebb_http_req_query(r, "labelSelector");
    snprintf(t->q_sel, sizeof(t->q_sel), "%s", v ? v : "(none)");
    v = ebb_http_req_query(r, "watch");
    t->has_watch = v != NULL;
    snprintf(t->q_watch, sizeof(t->q_watch), "%s", v ? v : "");
    v = ebb_http_req_query(r, "x");
    snprintf(t->q_x, sizeof(t->q_x), "%s", v ? v : "(none)");
    v = ebb_http_req_header(r, "x-custom");
    snprintf(t->hdr, sizeof(t->hdr), "%s", v ? v : "(none)");
    snprintf(t->body, sizeof(t->body), "%s", ebb_http_req_body(r, NULL));
    if (t->norder < 8)
        t->order[t->norder++] = t->handled;

    switch (t->mode) {
    case HOLD_FIRST:
        if (t->handled > 1)
            break;
        /* fall through */
    case HOLD:
        t->held = r;
        ebb_http_req_on_gone(r, on_gone, t);
        return;
    case STREAM:
        ebb_http_req_on_gone(r, on_gone, t);
        assert_int_equal(ebb_http_stream_begin(r, 200, "application/json"), 0);
        assert_int_equal(ebb_http_stream_write(r, "a", 1), 0);
        assert_int_equal(ebb_http_stream_write(r, "bc", 2), 0);
        t->held = r;
        return;
    case BIG: {
        /* a POST acts (applied) and answers write_answer bytes; the rest big */
        bool post = strcmp(t->method, "POST") == 0;
        size_t len = post ? t->write_answer : t->big;
        char *body = calloc(1, len + 1);
        assert_non_null(body);
        if (post)
            t->applied++;
        if (strcmp(t->path, "/healthz") == 0)
            assert_int_equal(ebb_http_respond(r, 200, "text/plain", "hello", 5), 0);
        else
            assert_int_equal(ebb_http_respond(r, 200, "text/plain", body, len), 0);
        free(body);
        t->answered++;
        return;
    }
    case FLOOD:
    case FLOOD_HOLD: {
        static char chunk[65536];
        struct ebb_httpd_stats st;
        int n = t->mode == FLOOD_HOLD && t->flood_chunks > 0 ? t->flood_chunks : 100000;
        memset(chunk, 'x', sizeof(chunk));
        ebb_http_req_on_gone(r, on_gone, t);
        assert_int_equal(ebb_http_stream_begin(r, 200, "text/plain"), 0);
        for (int i = 0; i < n; i++) {
            t->flood_writes++;
            if ((t->flood_rc = ebb_http_stream_write(r, chunk, sizeof(chunk))) != 0)
                return;
            ebb_httpd_stats(t->h, &st);
            if (st.queued > t->queued_peak)
                t->queued_peak = st.queued;
        }
        if (t->mode == FLOOD_HOLD && t->flood_chunks > 0) {
            t->held = r;             /* kept open, never read */
            t->flood_chunks = 0;     /* the next one floods */
            return;
        }
        fail_msg("a client that does not read was never dropped");
        return;
    }
    default:
        break;
    }
    assert_int_equal(ebb_http_add_header(r, "X-Test", "1"), 0);
    assert_int_equal(ebb_http_add_header(r, "X-Bad", "a\r\nb"), EBB_EINVAL);
    if (strcmp(t->path, "/two") == 0)
        assert_int_equal(ebb_http_respond(r, 200, "text/plain", "two", 3), 0);
    else
        assert_int_equal(ebb_http_respond(r, 200, "text/plain", "hello", 5), 0);
    t->answered++;
    /* answered: further answers are refused */
    assert_int_equal(ebb_http_respond(r, 200, NULL, NULL, 0), EBB_ESTATE);
}

static void on_guard(uv_timer_t *timer)
{
    struct t *t = timer->data;
    t->timed_out = true;
}

static void on_server_closed(void *ud)
{
    struct t *t = ud;
    t->closed_cb++;
}

static void start(struct t *t, int mode, const struct ebb_httpd_opts *extra)
{
    struct ebb_httpd_opts o = { 0 };
    struct ebb_error err = { 0 };

    memset(t, 0, sizeof(*t));
    t->mode = mode;
    assert_int_equal(uv_loop_init(&t->loop), 0);
    if (extra != NULL)
        o = *extra;
    o.host = "127.0.0.1";
    o.port = 0;
    o.handler = handler;
    o.ud = t;
    assert_int_equal(ebb_httpd_create(&t->loop, &o, &t->h, &err), 0);
    t->port = ebb_httpd_port(t->h);
    assert_true(t->port > 0);
    /* a guard against a hang, not a timing assertion */
    uv_timer_init(&t->loop, &t->guard);
    t->guard.data = t;
    uv_timer_start(&t->guard, on_guard, 20000, 0);
    uv_unref((uv_handle_t *)&t->guard);
}

static void run_until(struct t *t, bool (*done)(struct t *, void *), void *arg)
{
    while (!done(t, arg)) {
        assert_false(t->timed_out);
        uv_run(&t->loop, UV_RUN_ONCE);
    }
}

static void finish(struct t *t)
{
    ebb_httpd_close(t->h, on_server_closed, t);
    uv_close((uv_handle_t *)&t->guard, NULL);
    uv_run(&t->loop, UV_RUN_DEFAULT);
    assert_int_equal(t->closed_cb, 1);
    assert_int_equal(uv_loop_close(&t->loop), 0);
}

/* ---- client plumbing ---------------------------------------------------------------- */

static void c_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct client *c = h->data;
    (void)suggested;
    if (c->cap - c->n < 65536) {
        c->cap = c->cap ? c->cap * 2 : 131072;
        c->in = realloc(c->in, c->cap);
        assert_non_null(c->in);
    }
    *b = uv_buf_init(c->in + c->n, (unsigned)(c->cap - c->n - 1));
}

static void c_closed(uv_handle_t *h)
{
    struct client *c = h->data;
    c->closed = true;
}

static void c_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct client *c = s->data;
    (void)b;
    if (nread > 0) {
        c->n += (size_t)nread;
        c->in[c->n] = '\0';
    } else if (nread < 0) {
        c->eof = true;
        if (!uv_is_closing((uv_handle_t *)&c->tcp))
            uv_close((uv_handle_t *)&c->tcp, c_closed);
    }
}

static void c_written(uv_write_t *w, int status)
{
    (void)status;
    free(w);
}

static void c_send(struct client *c, const char *text)
{
    uv_write_t *w = malloc(sizeof(*w) + strlen(text));
    uv_buf_t b;

    assert_non_null(w);
    memcpy(w + 1, text, strlen(text));
    b = uv_buf_init((char *)(w + 1), (unsigned)strlen(text));
    assert_int_equal(uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, c_written), 0);
}

static void c_connected(uv_connect_t *req, int status)
{
    struct client *c = req->data;

    assert_int_equal(status, 0);
    c->connected = true;
    if (!c->no_read)
        uv_read_start((uv_stream_t *)&c->tcp, c_alloc, c_read);
    if (c->pending != NULL) {
        c_send(c, c->pending);
        c->pending = NULL;
    }
}

static void c_open(struct t *t, struct client *c, const char *text)
{
    struct sockaddr_in sa;

    c->t = t;
    c->pending = (char *)text;
    uv_tcp_init(&t->loop, &c->tcp);
    c->tcp.data = c;
    c->connect.data = c;
    uv_ip4_addr("127.0.0.1", t->port, &sa);
    assert_int_equal(uv_tcp_connect(&c->connect, &c->tcp, (struct sockaddr *)&sa, c_connected), 0);
}

static void c_close(struct client *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, c_closed);
}

static void c_free(struct client *c)
{
    free(c->in);
    c->in = NULL;
}

/* ---- predicates ------------------------------------------------------------------------- */

struct want {
    struct client *c;
    const char *text;
    int count;
};

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static bool has(struct t *t, void *arg)
{
    struct want *w = arg;
    (void)t;
    return w->c->in != NULL && count_of(w->c->in, w->text) >= (w->count ? w->count : 1);
}

static bool closed(struct t *t, void *arg)
{
    (void)t;
    return ((struct client *)arg)->closed;
}

static bool handled(struct t *t, void *arg)
{
    return t->handled >= *(int *)arg;
}

static bool gone(struct t *t, void *arg)
{
    return t->gone >= *(int *)arg;
}

static bool conns_zero(struct t *t, void *arg)
{
    (void)arg;
    return ebb_httpd_connections(t->h) == 0;
}

static void wait_for(struct t *t, struct client *c, const char *text, int count)
{
    struct want w = { c, text, count };
    run_until(t, has, &w);
}

/* ---- tests ---------------------------------------------------------------------------------- */

/* Method, decoded path, query parameters (decoded, '+' as space, valueless
 * keys), case-insensitive headers, and a plain answer with added headers. */
static void test_request_parts_and_answer(void **state)
{
    struct t t;
    struct client c = { 0 };

    (void)state;
    start(&t, ANSWER, NULL);
    c_open(&t, &c,
           "GET /api/v1/namespaces/prod%2Dx/pods?labelSelector=app%3Dweb%2Ctier+in+(a)&watch&x=a+b "
           "HTTP/1.1\r\nHost: x\r\nX-Custom: yes\r\n\r\n");
    wait_for(&t, &c, "hello", 1);
    assert_string_equal(t.method, "GET");
    assert_string_equal(t.path, "/api/v1/namespaces/prod-x/pods");
    assert_string_equal(t.q_sel, "app=web,tier in (a)");
    assert_true(t.has_watch);
    assert_string_equal(t.q_watch, "");
    assert_string_equal(t.q_x, "a b");
    assert_string_equal(t.hdr, "yes");
    assert_non_null(strstr(c.in, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(c.in, "Content-Type: text/plain\r\n"));
    assert_non_null(strstr(c.in, "Content-Length: 5\r\n"));
    assert_non_null(strstr(c.in, "X-Test: 1\r\n"));
    assert_null(strstr(c.in, "X-Bad"));
    assert_null(strstr(c.in, "Connection: close"));
    assert_non_null(strstr(c.in, "\r\n\r\nhello"));
    /* kept alive: a second request on the same connection */
    c_send(&c, "GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_for(&t, &c, "two", 1);
    assert_int_equal(t.handled, 2);
    assert_int_equal(ebb_httpd_connections(t.h), 1);
    c_close(&c);
    run_until(&t, conns_zero, NULL);
    finish(&t);
    c_free(&c);
}

static void on_answer_held(uv_timer_t *timer)
{
    struct t *t = timer->data;

    assert_non_null(t->held);
    assert_int_equal(t->handled, 1);   /* the second request waited */
    assert_int_equal(ebb_http_respond(t->held, 200, "text/plain", "one", 3), 0);
    t->held = NULL;
    uv_close((uv_handle_t *)timer, NULL);
}

/* Two pipelined requests: the second is handled only once the first,
 * answered later from a timer, is complete; answers come in order. */
static void test_pipelined_waits_for_late_answer(void **state)
{
    struct t t;
    struct client c = { 0 };
    uv_timer_t later;
    int one = 1;
    const char *p1, *p2;

    (void)state;
    start(&t, HOLD_FIRST, NULL);
    c_open(&t, &c, "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &one);
    uv_timer_init(&t.loop, &later);
    later.data = &t;
    uv_timer_start(&later, on_answer_held, 10, 0);
    wait_for(&t, &c, "two", 1);
    assert_int_equal(t.handled, 2);
    p1 = strstr(c.in, "\r\n\r\none");
    p2 = strstr(c.in, "\r\n\r\ntwo");
    assert_non_null(p1);
    assert_non_null(p2);
    assert_true(p1 < p2);
    c_close(&c);
    run_until(&t, conns_zero, NULL);
    finish(&t);
    c_free(&c);
}

/* A client that pipelines far ahead while its first request is answered
 * is not read past 256 KiB (nor dropped): every request is answered once
 * the first is. */
static void test_pipelined_far_ahead_waits(void **state)
{
    struct t t;
    struct client c = { 0 };
    struct ebb_httpd_opts o = { .max_body = 1024 };
    const char *one_req = "GET /more HTTP/1.1\r\nHost: x\r\n\r\n";
    size_t n = 20000, len = strlen(one_req);
    char *text = malloc(n * len + 64);
    int one = 1, all = (int)n + 1;

    (void)state;
    strcpy(text, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n");
    for (size_t i = 0; i < n; i++)
        memcpy(text + strlen("GET /first HTTP/1.1\r\nHost: x\r\n\r\n") + i * len, one_req, len + 1);
    start(&t, HOLD_FIRST, &o);
    c_open(&t, &c, text);
    run_until(&t, handled, &one);
    for (int i = 0; i < 200; i++)
        uv_run(&t.loop, UV_RUN_NOWAIT);
    assert_int_equal(ebb_httpd_connections(t.h), 1);
    assert_int_equal(t.handled, 1);
    assert_int_equal(ebb_http_respond(t.held, 200, "text/plain", "first", 5), 0);
    t.held = NULL;
    run_until(&t, handled, &all);
    assert_false(c.closed);
    c_close(&c);
    run_until(&t, conns_zero, NULL);
    finish(&t);
    c_free(&c);
    free(text);
}

/* Bodies by Content-Length and chunked; Expect: 100-continue is answered. */
static void test_bodies(void **state)
{
    struct t t;
    struct client c = { 0 };
    int two = 2, three = 3;

    (void)state;
    start(&t, ANSWER, NULL);
    c_open(&t, &c, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
    wait_for(&t, &c, "hello", 1);
    assert_string_equal(t.method, "POST");
    assert_string_equal(t.body, "{\"a\":1}");
    c_send(&c, "PUT /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
    run_until(&t, handled, &two);
    wait_for(&t, &c, "hello", 2);
    assert_string_equal(t.method, "PUT");
    assert_string_equal(t.body, "abcde");
    c_send(&c, "POST /c HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
    wait_for(&t, &c, "HTTP/1.1 100 Continue\r\n\r\n", 1);
    c_send(&c, "ok");
    run_until(&t, handled, &three);
    wait_for(&t, &c, "hello", 3);
    assert_string_equal(t.body, "ok");
    c_close(&c);
    finish(&t);
    c_free(&c);
}

/* A chunked stream; the client hangs up; the gone callback runs. */
static void test_stream_then_client_leaves(void **state)
{
    struct t t;
    struct client c = { 0 };
    int one = 1;

    (void)state;
    start(&t, STREAM, NULL);
    c_open(&t, &c, "GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_for(&t, &c, "2\r\nbc\r\n", 1);
    assert_non_null(strstr(c.in, "Transfer-Encoding: chunked\r\n"));
    assert_non_null(strstr(c.in, "\r\n\r\n1\r\na\r\n2\r\nbc\r\n"));
    assert_null(strstr(c.in, "Content-Length"));
    assert_int_equal(t.gone, 0);
    c_close(&c);
    run_until(&t, gone, &one);
    assert_int_equal(t.gone, 1);
    assert_null(t.held);
    run_until(&t, conns_zero, NULL);
    finish(&t);
    c_free(&c);
}

/* The owner ends a stream; the connection serves the next request. */
static void test_stream_end_keeps_connection(void **state)
{
    struct t t;
    struct client c = { 0 };

    (void)state;
    start(&t, STREAM, NULL);
    c_open(&t, &c, "GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_for(&t, &c, "2\r\nbc\r\n", 1);
    assert_int_equal(ebb_http_stream_end(t.held), 0);
    t.held = NULL;
    wait_for(&t, &c, "bc\r\n0\r\n\r\n", 1);
    t.mode = ANSWER;
    c_send(&c, "GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_for(&t, &c, "\r\n\r\ntwo", 1);
    assert_int_equal(t.gone, 0);
    c_close(&c);
    finish(&t);
    c_free(&c);
}

static void test_malformed_gets_400_and_close(void **state)
{
    struct t t;
    struct client c = { 0 };

    (void)state;
    start(&t, ANSWER, NULL);
    c_open(&t, &c, "GARBAGE / NOTHTTP\r\n\r\n");
    run_until(&t, closed, &c);
    assert_non_null(strstr(c.in, "HTTP/1.1 400 Bad Request\r\n"));
    assert_non_null(strstr(c.in, "Connection: close\r\n"));
    assert_int_equal(t.handled, 0);
    finish(&t);
    c_free(&c);
}

static void test_body_too_large_gets_413(void **state)
{
    struct t t;
    struct client c = { 0 };
    struct ebb_httpd_opts o = { .max_body = 10 };

    (void)state;
    start(&t, ANSWER, &o);
    c_open(&t, &c, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789");
    run_until(&t, closed, &c);
    assert_non_null(strstr(c.in, "HTTP/1.1 413 "));
    assert_int_equal(t.handled, 0);
    finish(&t);
    c_free(&c);
}

/* Connection: close and HTTP/1.0 close after the answer; HEAD has no body. */
static void test_close_and_head(void **state)
{
    struct t t;
    struct client a = { 0 }, b = { 0 }, h = { 0 };

    (void)state;
    start(&t, ANSWER, NULL);
    c_open(&t, &a, "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    c_open(&t, &b, "GET /b HTTP/1.0\r\n\r\n");
    c_open(&t, &h, "HEAD /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    run_until(&t, closed, &a);
    run_until(&t, closed, &b);
    run_until(&t, closed, &h);
    assert_non_null(strstr(a.in, "Connection: close\r\n"));
    assert_non_null(strstr(a.in, "\r\n\r\nhello"));
    assert_non_null(strstr(b.in, "\r\n\r\nhello"));
    assert_non_null(strstr(h.in, "Content-Length: 5\r\n"));
    assert_null(strstr(h.in, "hello"));
    finish(&t);
    c_free(&a);
    c_free(&b);
    c_free(&h);
}

/* Closing the server: a stream ends cleanly (last chunk, then EOF), a held
 * request and the stream get their gone callbacks, idle connections close,
 * and the close callback runs once everything is freed. */
static void test_close_ends_streams_and_held(void **state)
{
    struct t t;
    struct client s = { 0 }, hd = { 0 }, idle = { 0 };
    int two = 2;

    (void)state;
    start(&t, STREAM, NULL);
    c_open(&t, &s, "GET /watch HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_for(&t, &s, "2\r\nbc\r\n", 1);
    t.mode = HOLD;
    c_open(&t, &hd, "GET /held HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &two);
    c_open(&t, &idle, NULL);
    while (!idle.connected || ebb_httpd_connections(t.h) < 3)
        uv_run(&t.loop, UV_RUN_ONCE);
    ebb_httpd_close(t.h, on_server_closed, &t);
    assert_int_equal(t.gone, 2);
    run_until(&t, closed, &s);
    run_until(&t, closed, &hd);
    run_until(&t, closed, &idle);
    assert_non_null(strstr(s.in, "2\r\nbc\r\n0\r\n\r\n"));
    uv_close((uv_handle_t *)&t.guard, NULL);
    uv_run(&t.loop, UV_RUN_DEFAULT);
    assert_int_equal(t.closed_cb, 1);
    assert_int_equal(uv_loop_close(&t.loop), 0);
    c_free(&s);
    c_free(&hd);
    c_free(&idle);
}

static void test_idle_connection_closed(void **state)
{
    struct t t;
    struct client c = { 0 };
    struct ebb_httpd_opts o = { .idle_timeout_ms = 20 };

    (void)state;
    start(&t, ANSWER, &o);
    c_open(&t, &c, NULL);
    run_until(&t, closed, &c);
    assert_true(c.eof);
    assert_int_equal(t.handled, 0);
    finish(&t);
    c_free(&c);
}

/* A streaming client that never reads is dropped once max_queued bytes
 * wait: the write fails, no gone callback (the writer saw the error). */
static void test_slow_reader_dropped(void **state)
{
    struct t t;
    struct client c = { .no_read = true };
    struct ebb_httpd_opts o = { .max_queued = 1024 };
    int one = 1;

    (void)state;
    start(&t, FLOOD, &o);
    c_open(&t, &c, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &one);
    assert_int_equal(t.flood_rc, EBB_EIO);
    assert_true(t.flood_writes > 1);
    assert_int_equal(t.gone, 0);
    run_until(&t, conns_zero, NULL);
    c_close(&c);
    finish(&t);
    c_free(&c);
}

/* ---- bounds whatever clients do ------------------------------------------------------ */

static bool refused_one(struct t *t, void *arg)
{
    struct ebb_httpd_stats st;
    (void)arg;
    ebb_httpd_stats(t->h, &st);
    return st.refused >= 1;
}

static bool bodies_over(struct t *t, void *arg);

/* At max_connections, a new connection takes the place of the one idle
 * the longest between requests; when none is idle (both are in the middle
 * of a request), it is closed as it comes. */
static void test_connection_limit(void **state)
{
    struct t t;
    struct client a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
    struct ebb_httpd_opts o = { .max_connections = 2 };
    struct ebb_httpd_stats st;
    int one = 1;
    size_t one_body = 11, two_bodies = 22;

    (void)state;
    start(&t, ANSWER, &o);
    c_open(&t, &a, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &one);
    c_open(&t, &b, "POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345");
    run_until(&t, bodies_over, &one_body);
    /* a is idle since its answer: its place is taken */
    c_open(&t, &c, "POST /third HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345");
    run_until(&t, closed, &a);
    run_until(&t, bodies_over, &two_bodies);
    ebb_httpd_stats(t.h, &st);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(st.refused, 0);
    /* b and c are in the middle of their requests: d takes a probe slot,
     * where anything but a probe is answered 429 and closed */
    c_open(&t, &d, "GET /fourth HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, closed, &d);
    assert_non_null(strstr(d.in, "HTTP/1.1 429 "));
    assert_false(b.closed);
    assert_false(c.closed);
    assert_int_equal(ebb_httpd_connections(t.h), 2);
    assert_int_equal(t.handled, 1);
    c_close(&b);
    c_close(&c);
    finish(&t);
    c_free(&a);
    c_free(&b);
    c_free(&c);
    c_free(&d);
}

static bool queued_over(struct t *t, void *arg)
{
    struct ebb_httpd_stats st;
    ebb_httpd_stats(t->h, &st);
    return st.queued > *(size_t *)arg;
}

/* A client that pipelines requests and does not read holds its answers up
 * to about 1 MiB: the rest of its requests wait, parsed once it reads. */
static void test_pipelined_unread_answers_held(void **state)
{
    struct t t;
    struct client c = { .no_read = true };
    struct ebb_httpd_stats st;
    char *text = malloc(200 * 40 + 1);
    size_t mib = 1u << 20;
    int all = 200;

    (void)state;
    text[0] = '\0';
    for (int i = 0; i < 200; i++)
        strcat(text, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    start(&t, BIG, NULL);
    t.big = 256u << 10;
    c_open(&t, &c, text);
    run_until(&t, queued_over, &mib);
    for (int i = 0; i < 200; i++)
        uv_run(&t.loop, UV_RUN_NOWAIT);
    ebb_httpd_stats(t.h, &st);
    assert_true(t.handled < 200);
    assert_true(st.queued <= mib + t.big);
    /* it reads: every request is answered */
    uv_read_start((uv_stream_t *)&c.tcp, c_alloc, c_read);
    run_until(&t, handled, &all);
    assert_int_equal(t.answered, 200);
    c_close(&c);
    finish(&t);
    c_free(&c);
    free(text);
}

/* An answer its client takes nothing of for write_timeout_ms: dropped. */
static void test_unread_answer_dropped(void **state)
{
    struct t t;
    struct client c = { .no_read = true };
    struct ebb_httpd_opts o = { .write_timeout_ms = 100 };
    struct ebb_httpd_stats st;
    int one = 1;

    (void)state;
    start(&t, BIG, &o);
    t.big = 16u << 20;
    c_open(&t, &c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &one);
    run_until(&t, conns_zero, NULL);
    ebb_httpd_stats(t.h, &st);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(st.queued, 0);
    c_close(&c);
    finish(&t);
    c_free(&c);
}

/* A request still not complete request_timeout_ms after its first byte. */
static void test_slow_sender_dropped(void **state)
{
    struct t t;
    struct client c = { 0 };
    struct ebb_httpd_opts o = { .request_timeout_ms = 100 };
    struct ebb_httpd_stats st;

    (void)state;
    start(&t, ANSWER, &o);
    c_open(&t, &c, "GET /slow HTTP/1.1\r\nHost: x\r\n");
    run_until(&t, closed, &c);
    ebb_httpd_stats(t.h, &st);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(t.handled, 0);
    finish(&t);
    c_free(&c);
}

static bool one_stalled(struct t *t, void *arg)
{
    struct ebb_httpd_stats st;
    (void)arg;
    ebb_httpd_stats(t->h, &st);
    return st.stalled >= 1;
}

static bool dropped_one(struct t *t, void *arg)
{
    struct ebb_httpd_stats st;
    (void)arg;
    ebb_httpd_stats(t->h, &st);
    return st.dropped >= 1 && st.connections <= 2;
}

/* Answers together over max_total_queued: a stalled connection (its client
 * took nothing since the sweep before) is dropped to make room; when none
 * is, the answer that would go over is replaced by the API server's 429. */
static void test_total_queued_bounded(void **state)
{
    struct t t;
    struct client c[3] = { { .no_read = true }, { .no_read = false }, { .no_read = true } };
    struct ebb_httpd_opts o = { .max_total_queued = 8u << 20, .idle_timeout_ms = 200 };
    struct ebb_httpd_stats st;
    struct want busy = { .c = &c[1], .text = "HTTP/1.1 429 " };
    int one = 1, two = 2, three = 3;

    (void)state;
    start(&t, BIG, &o);
    t.big = 6u << 20;
    c_open(&t, &c[0], "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &one);
    /* the first client has not been seen stalling yet: the second answer
     * would take the total over, and is refused */
    c_open(&t, &c[1], "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &two);
    run_until(&t, has, &busy);
    assert_non_null(strstr(c[1].in, "\"reason\":\"TooManyRequests\""));
    assert_non_null(strstr(c[1].in, "Retry-After: 1\r\n"));
    ebb_httpd_stats(t.h, &st);
    assert_int_equal(st.busy, 1);
    assert_int_equal(st.dropped, 0);
    assert_true(st.queued <= o.max_total_queued);
    /* once it is stalled, it makes room for the next answer */
    run_until(&t, one_stalled, NULL);
    c_open(&t, &c[2], "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &three);
    run_until(&t, dropped_one, NULL);
    ebb_httpd_stats(t.h, &st);
    assert_int_equal(st.busy, 1);
    assert_true(st.queued <= o.max_total_queued);
    assert_true(st.queued > 0);
    for (int i = 0; i < 3; i++)
        c_close(&c[i]);
    finish(&t);
    for (int i = 0; i < 3; i++)
        c_free(&c[i]);
}

/* 413 as the API server answers it: a Kubernetes Status. */
static void test_413_is_a_status(void **state)
{
    struct t t;
    struct client c = { 0 };
    struct ebb_httpd_opts o = { .max_body = 10 };

    (void)state;
    start(&t, ANSWER, &o);
    c_open(&t, &c, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789");
    run_until(&t, closed, &c);
    assert_non_null(strstr(c.in, "Content-Type: application/json\r\n"));
    assert_non_null(strstr(c.in, "\"reason\":\"RequestEntityTooLarge\""));
    assert_non_null(strstr(c.in, "limit is 10"));
    finish(&t);
    c_free(&c);
}

static bool connected(struct t *t, void *arg)
{
    (void)t;
    return ((struct client *)arg)->connected;
}

static bool bodies_over(struct t *t, void *arg)
{
    struct ebb_httpd_stats st;
    ebb_httpd_stats(t->h, &st);
    return st.bodies >= *(size_t *)arg;
}

/* Bodies held at once over max_total_body: the one that would take them
 * over gets 429 as the API server's max-in-flight filter answers; the
 * others go on, and a body is freed once its answer is done. */
static void test_total_bodies_bounded(void **state)
{
    struct t t;
    struct client a = { 0 }, b = { 0 };
    struct ebb_httpd_opts o = { .max_total_body = 1u << 20 };
    struct ebb_httpd_stats st;
    size_t half = 512u << 10, most = 600u << 10;
    char *body = malloc(most + 1), *rest = body + most - (700000 - most);
    struct want ok = { .c = &a, .text = "HTTP/1.1 200 " };
    int one = 1;

    (void)state;
    memset(body, 'x', most);
    body[most] = '\0';
    start(&t, ANSWER, &o);
    c_open(&t, &a, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 700000\r\n\r\n");
    run_until(&t, connected, &a);
    c_send(&a, body);
    run_until(&t, bodies_over, &half);
    c_open(&t, &b, "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 700000\r\n\r\n");
    run_until(&t, connected, &b);
    c_send(&b, body);
    run_until(&t, closed, &b);
    assert_non_null(strstr(b.in, "HTTP/1.1 429 "));
    assert_non_null(strstr(b.in, "\"reason\":\"TooManyRequests\""));
    assert_int_equal(t.handled, 0);
    /* the first one completes and is answered; its body is then freed */
    c_send(&a, rest);
    run_until(&t, handled, &one);
    run_until(&t, has, &ok);
    ebb_httpd_stats(t.h, &st);
    assert_int_equal(st.bodies, 0);
    c_close(&a);
    finish(&t);
    c_free(&a);
    c_free(&b);
    free(body);
}

/* ---- probes, streams and writes under the totals ----------------------------------- */

static bool stats_probes(struct t *t, void *arg)
{
    struct ebb_httpd_stats st;
    ebb_httpd_stats(t->h, &st);
    return st.probes >= *(uint64_t *)arg;
}

/* At max_connections with every connection in the middle of a request (a
 * body being sent), a new connection still gets a probe answered: it
 * takes a probe slot. Anything else asked there gets the API server's 429
 * and the close, never a reset without an answer. */
static void test_probe_answered_at_the_limit(void **state)
{
    struct t t;
    struct client a = { 0 }, b = { 0 }, p = { 0 }, o = { 0 };
    struct ebb_httpd_opts opts = { .max_connections = 2 };
    struct want busy = { .c = &o, .text = "HTTP/1.1 429 " };
    size_t two_bodies = 22;

    (void)state;
    start(&t, ANSWER, &opts);
    c_open(&t, &a, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345");
    c_open(&t, &b, "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345");
    run_until(&t, bodies_over, &two_bodies);
    c_open(&t, &p, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_for(&t, &p, "hello", 1);
    run_until(&t, closed, &p);           /* answered, then closed: the slot is free again */
    assert_string_equal(t.path, "/healthz");
    c_open(&t, &o, "GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, has, &busy);
    run_until(&t, closed, &o);
    assert_non_null(strstr(o.in, "\"reason\":\"TooManyRequests\""));
    assert_int_equal(t.handled, 1);      /* /api/v1/pods never reached the handler */
    assert_false(a.closed);
    assert_false(b.closed);
    c_close(&a);
    c_close(&b);
    finish(&t);
    c_free(&a);
    c_free(&b);
    c_free(&p);
    c_free(&o);
}

/* Clients that take the probe slots and trickle their requests do not
 * keep a probe out: a new connection takes the slot of the oldest one
 * whose request is not complete. */
static void test_probe_slots_not_held_by_tricklers(void **state)
{
    struct t t;
    struct client a = { 0 }, trick[40], p = { 0 };
    struct ebb_httpd_opts opts = { .max_connections = 1 };
    size_t one_body = 11;
    uint64_t all = 40;

    (void)state;
    memset(trick, 0, sizeof(trick));
    start(&t, ANSWER, &opts);
    c_open(&t, &a, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345");
    run_until(&t, bodies_over, &one_body);
    for (int i = 0; i < 40; i++)
        c_open(&t, &trick[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n");
    run_until(&t, stats_probes, &all);
    c_open(&t, &p, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_for(&t, &p, "hello", 1);
    assert_string_equal(t.path, "/readyz");
    assert_int_equal(t.handled, 1);
    assert_false(a.closed);
    c_close(&a);
    for (int i = 0; i < 40; i++)
        c_close(&trick[i]);
    finish(&t);
    c_free(&a);
    c_free(&p);
    for (int i = 0; i < 40; i++)
        c_free(&trick[i]);
}

static void on_wait_done(uv_timer_t *timer)
{
    *(bool *)timer->data = true;
}

static bool flag_set(struct t *t, void *arg)
{
    (void)t;
    return *(bool *)arg;
}

/* At max_connections, a connection that has trickled the head of its
 * request for more than a second gives its place to a new one. */
static void test_head_trickler_makes_room(void **state)
{
    struct t t;
    struct client a = { 0 }, b = { 0 };
    struct ebb_httpd_opts opts = { .max_connections = 1 };
    uv_timer_t wait;
    bool waited = false;

    (void)state;
    start(&t, ANSWER, &opts);
    c_open(&t, &a, "GET /slow HTTP/1.1\r\nHost: x\r\n");
    run_until(&t, connected, &a);
    uv_timer_init(&t.loop, &wait);
    wait.data = &waited;
    uv_timer_start(&wait, on_wait_done, 1100, 0);
    run_until(&t, flag_set, &waited);
    uv_close((uv_handle_t *)&wait, NULL);
    c_open(&t, &b, "GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_for(&t, &b, "two", 1);
    run_until(&t, closed, &a);
    assert_int_equal(t.handled, 1);
    c_close(&b);
    finish(&t);
    c_free(&a);
    c_free(&b);
}

/* Streams count toward max_total_queued like answers: a stream whose
 * client does not read is ended once the total is reached (max_queued per
 * stream alone would let it hold four times as much). */
static void test_stream_within_total(void **state)
{
    struct t t;
    struct client c = { .no_read = true };
    struct ebb_httpd_opts o = { .max_queued = 64u << 20, .max_total_queued = 16u << 20 };
    int one = 1;

    (void)state;
    start(&t, FLOOD, &o);
    c_open(&t, &c, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &one);
    assert_int_equal(t.flood_rc, EBB_EIO);
    assert_true(t.queued_peak <= o.max_total_queued);
    assert_int_equal(t.gone, 0);         /* the writer saw the error */
    run_until(&t, conns_zero, NULL);
    c_close(&c);
    finish(&t);
    c_free(&c);
}

/* Two streams not read over the total: the one holding the most is ended
 * to make room (its owner told through the gone callback), then the
 * writer's own once it holds the most. */
static void test_stream_holding_most_ended(void **state)
{
    struct t t;
    struct client a = { .no_read = true }, b = { .no_read = true };
    struct ebb_httpd_opts o = { .max_queued = 64u << 20, .max_total_queued = 32u << 20 };
    int one = 1, two = 2;

    (void)state;
    start(&t, FLOOD_HOLD, &o);
    t.flood_chunks = 384;                /* 24 MiB, then held open */
    c_open(&t, &a, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &one);
    assert_int_equal(t.flood_rc, 0);
    assert_non_null(t.held);
    c_open(&t, &b, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &two);
    assert_int_equal(t.flood_rc, EBB_EIO);
    assert_true(t.queued_peak <= o.max_total_queued);
    run_until(&t, gone, &one);           /* a: ended to make room for b */
    assert_null(t.held);
    run_until(&t, conns_zero, NULL);
    c_close(&a);
    c_close(&b);
    finish(&t);
    c_free(&a);
    c_free(&b);
}

/* A write (here a POST) whose answer the total has no room for is refused
 * with 429 before its handler runs: a 429 never follows a change. Once
 * there is room it is handled, and its answer is never replaced. */
static void test_write_refused_before_it_acts(void **state)
{
    struct t t;
    struct client big = { .no_read = true }, w1 = { 0 }, w2 = { 0 };
    struct ebb_httpd_opts o = { .max_total_queued = 8u << 20, .max_body = 4u << 20 };
    struct ebb_httpd_stats st;
    struct want busy = { .c = &w1, .text = "HTTP/1.1 429 " };
    struct want ok = { .c = &w2, .text = "HTTP/1.1 200 " };
    int one = 1;

    (void)state;
    start(&t, BIG, &o);
    t.big = 10u << 20;                   /* larger than the total: written as nothing else is */
    c_open(&t, &big, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &one);
    ebb_httpd_stats(t.h, &st);
    assert_true(st.queued > (4u << 20));
    /* an answer that the total has no room for */
    t.write_answer = st.queued >= o.max_total_queued ? 1024 : o.max_total_queued - st.queued + 1;
    c_open(&t, &w1, "POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    run_until(&t, has, &busy);
    assert_non_null(strstr(w1.in, "\"reason\":\"TooManyRequests\""));
    assert_int_equal(t.applied, 0);
    /* the big answer's client goes: room again */
    c_close(&big);
    run_until(&t, closed, &w1);
    run_until(&t, conns_zero, NULL);
    t.write_answer = 16;
    c_open(&t, &w2, "POST /apply HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    run_until(&t, has, &ok);
    assert_int_equal(t.applied, 1);
    c_close(&w2);
    finish(&t);
    c_free(&big);
    c_free(&w1);
    c_free(&w2);
}

/* A probe's small answer is not refused for want of room in the total:
 * a kubelet must not read a full server as a dead one. */
static void test_probe_answer_not_refused(void **state)
{
    struct t t;
    struct client big = { .no_read = true }, p = { 0 };
    struct ebb_httpd_opts o = { .max_total_queued = 8u << 20 };
    struct ebb_httpd_stats st;
    int one = 1;

    (void)state;
    start(&t, BIG, &o);
    t.big = 12u << 20;
    c_open(&t, &big, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &one);
    ebb_httpd_stats(t.h, &st);
    assert_true(st.queued > o.max_total_queued);
    c_open(&t, &p, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_for(&t, &p, "hello", 1);
    assert_non_null(strstr(p.in, "HTTP/1.1 200 "));
    c_close(&big);
    c_close(&p);
    finish(&t);
    c_free(&big);
    c_free(&p);
}

/* When every probe slot holds a probe its handler has not answered yet,
 * a new connection over the limit is closed as it comes (refused). */
static void test_refused_when_slots_answering(void **state)
{
    struct t t;
    struct client a = { 0 }, p[EBB_HTTPD_PROBE_SLOTS], late = { 0 };
    struct ebb_httpd_opts opts = { .max_connections = 1 };
    int all = EBB_HTTPD_PROBE_SLOTS + 1, one = 1;

    (void)state;
    memset(p, 0, sizeof(p));
    start(&t, HOLD, &opts);
    c_open(&t, &a, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &one);
    for (int i = 0; i < EBB_HTTPD_PROBE_SLOTS; i++)
        c_open(&t, &p[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, handled, &all);
    c_open(&t, &late, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    run_until(&t, refused_one, NULL);
    run_until(&t, closed, &late);
    assert_int_equal(t.handled, all);
    finish(&t);
    c_free(&a);
    c_free(&late);
    for (int i = 0; i < EBB_HTTPD_PROBE_SLOTS; i++)
        c_free(&p[i]);
}

static void test_bind_errors(void **state)
{
    struct t t;
    struct ebb_httpd *other = NULL;
    struct ebb_httpd_opts o = { 0 };
    struct ebb_error err = { 0 };
    char want[64];

    (void)state;
    start(&t, ANSWER, NULL);
    o.host = "127.0.0.1";
    o.port = t.port;
    o.handler = handler;
    o.ud = &t;
    assert_int_equal(ebb_httpd_create(&t.loop, &o, &other, &err), EBB_EIO);
    assert_null(other);
    snprintf(want, sizeof(want), "listen 127.0.0.1:%d: ", t.port);
    assert_non_null(strstr(err.msg, want));
    o.host = "not-an-address";
    o.port = 0;
    assert_int_equal(ebb_httpd_create(&t.loop, &o, &other, &err), EBB_EINVAL);
    assert_non_null(strstr(err.msg, "not-an-address"));
    o.host = NULL;
    o.handler = NULL;
    assert_int_equal(ebb_httpd_create(&t.loop, &o, &other, NULL), EBB_EINVAL);
    assert_string_equal(ebb_http_status_text(429), "Too Many Requests");
    ebb_httpd_close(NULL, NULL, NULL);
    finish(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_parts_and_answer),
        cmocka_unit_test(test_pipelined_waits_for_late_answer),
        cmocka_unit_test(test_pipelined_far_ahead_waits),
        cmocka_unit_test(test_bodies),
        cmocka_unit_test(test_stream_then_client_leaves),
        cmocka_unit_test(test_stream_end_keeps_connection),
        cmocka_unit_test(test_malformed_gets_400_and_close),
        cmocka_unit_test(test_body_too_large_gets_413),
        cmocka_unit_test(test_close_and_head),
        cmocka_unit_test(test_close_ends_streams_and_held),
        cmocka_unit_test(test_idle_connection_closed),
        cmocka_unit_test(test_slow_reader_dropped),
        cmocka_unit_test(test_connection_limit),
        cmocka_unit_test(test_pipelined_unread_answers_held),
        cmocka_unit_test(test_unread_answer_dropped),
        cmocka_unit_test(test_slow_sender_dropped),
        cmocka_unit_test(test_total_queued_bounded),
        cmocka_unit_test(test_413_is_a_status),
        cmocka_unit_test(test_total_bodies_bounded),
        cmocka_unit_test(test_probe_answered_at_the_limit),
        cmocka_unit_test(test_probe_slots_not_held_by_tricklers),
        cmocka_unit_test(test_head_trickler_makes_room),
        cmocka_unit_test(test_stream_within_total),
        cmocka_unit_test(test_stream_holding_most_ended),
        cmocka_unit_test(test_write_refused_before_it_acts),
        cmocka_unit_test(test_probe_answer_not_refused),
        cmocka_unit_test(test_refused_when_slots_answering),
        cmocka_unit_test(test_bind_errors),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
