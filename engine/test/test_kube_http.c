/* kube_http.c against a tiny HTTP/1.1 server that runs on the same loop
 * (libuv TCP + http_parser, 127.0.0.1, a free port). Each test scripts the
 * server's answers and checks what the server received and what the client
 * reported; every test ends with the client and server closed and
 * uv_loop_close(loop) == 0. */
#include "fixtures.h"

#include <errno.h>
#include <arpa/inet.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>
#include <zlib.h>

#include "ebb/kube.h"

/* ---- the test server ---------------------------------------------------------- */

#define MAXREQ 64

struct hreq {
    char method[8];
    char url[256];
    char auth[256];
    char ctype[128];
    char ua[128];
    char accept_enc[64];
    char body[1024];
    size_t body_len;
    uint64_t t;            /* uv_hrtime() when the request was complete */
    int conn;              /* which connection (1-based accept order) */
};

struct conn;
struct srv;
/* Called when request number `n` (0-based, s->reqs[n]) is complete. */
typedef void (*handler_fn)(struct srv *s, struct conn *c, int n);

struct srv {
    uv_loop_t *loop;
    uv_tcp_t tcp;
    int port;
    int nconn, nreq, nclosed;
    struct hreq reqs[MAXREQ];
    handler_fn handler;
    void *ud;              /* the test's state */
    struct conn *conns;
    bool closing;
};

struct conn {
    uv_tcp_t tcp;
    struct srv *s;
    http_parser p;
    int id;
    struct hreq cur;
    char field[64];
    size_t field_len;
    char *target;          /* header value being appended to */
    size_t target_cap;
    bool in_value, closing;
    struct conn *next;
};

static void conn_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    struct conn **pp;

    for (pp = &c->s->conns; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    c->s->nclosed++;
    free(c);
}

/* c is one of s's connections, not closing: a timer that writes to a
 * connection asks before each write (the client may have closed it, and
 * its memory gone, since the last). */
static bool conn_alive(struct srv *s, struct conn *c)
{
    for (struct conn *k = s->conns; k != NULL; k = k->next)
        if (k == c)
            return !c->closing;
    return false;
}

static void conn_close(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void append(char *dst, size_t cap, const char *at, size_t len)
{
    size_t n = strlen(dst);

    if (n + len >= cap)
        len = cap - n - 1;
    memcpy(dst + n, at, len);
    dst[n + len] = '\0';
}

static int on_begin(http_parser *p)
{
    struct conn *c = p->data;

    memset(&c->cur, 0, sizeof(c->cur));
    c->in_value = false;
    c->field_len = 0;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;

    append(c->cur.url, sizeof(c->cur.url), at, len);
    return 0;
}

static int on_field(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;

    if (c->in_value) {
        c->in_value = false;
        c->field_len = 0;
    }
    if (c->field_len + len < sizeof(c->field)) {
        memcpy(c->field + c->field_len, at, len);
        c->field_len += len;
    }
    c->field[c->field_len] = '\0';
    return 0;
}

static int on_value(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;

    if (!c->in_value) {
        c->in_value = true;
        c->target = NULL;
        if (strcasecmp(c->field, "Authorization") == 0) {
            c->target = c->cur.auth;
            c->target_cap = sizeof(c->cur.auth);
        } else if (strcasecmp(c->field, "Content-Type") == 0) {
            c->target = c->cur.ctype;
            c->target_cap = sizeof(c->cur.ctype);
        } else if (strcasecmp(c->field, "User-Agent") == 0) {
            c->target = c->cur.ua;
            c->target_cap = sizeof(c->cur.ua);
        } else if (strcasecmp(c->field, "Accept-Encoding") == 0) {
            c->target = c->cur.accept_enc;
            c->target_cap = sizeof(c->cur.accept_enc);
        }
    }
    if (c->target != NULL)
        append(c->target, c->target_cap, at, len);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;

    if (c->cur.body_len + len < sizeof(c->cur.body)) {
        memcpy(c->cur.body + c->cur.body_len, at, len);
        c->cur.body_len += len;
    }
    return 0;
}

static int on_complete(http_parser *p)
{
    struct conn *c = p->data;
    struct srv *s = c->s;
    int n = s->nreq;

    snprintf(c->cur.method, sizeof(c->cur.method), "%s", http_method_str(p->method));
    c->cur.t = uv_hrtime();
    c->cur.conn = c->id;
    if (n < MAXREQ) {
        s->reqs[n] = c->cur;
        s->nreq++;
        s->handler(s, c, n);
    }
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_begin,
    .on_url = on_url,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_body = on_body,
    .on_message_complete = on_complete,
};

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    buf->base = malloc(suggested);
    buf->len = buf->base ? suggested : 0;
}

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = st->data;

    if (nread < 0) {
        conn_close(c);
    } else if (nread > 0 && !c->closing) {
        size_t k = http_parser_execute(&c->p, &parser_settings, buf->base, (size_t)nread);
        if (k != (size_t)nread && !c->closing)
            conn_close(c);
    }
    free(buf->base);
}

static void accept_cb(uv_stream_t *server, int status)
{
    struct srv *s = server->data;
    struct conn *c;

    assert_int_equal(status, 0);
    c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->s = s;
    c->id = ++s->nconn;
    c->tcp.data = c;
    c->p.data = c;
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
    assert_int_equal(uv_tcp_init(s->loop, &c->tcp), 0);
    c->next = s->conns;
    s->conns = c;
    assert_int_equal(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
    assert_int_equal(uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb), 0);
}

static void srv_start(struct srv *s, uv_loop_t *loop, handler_fn h, void *ud)
{
    struct sockaddr_in addr;
    struct sockaddr_storage name;
    int len = sizeof(name);

    memset(s, 0, sizeof(*s));
    s->loop = loop;
    s->handler = h;
    s->ud = ud;
    assert_int_equal(uv_tcp_init(loop, &s->tcp), 0);
    s->tcp.data = s;
    assert_int_equal(uv_ip4_addr("127.0.0.1", 0, &addr), 0);
    assert_int_equal(uv_tcp_bind(&s->tcp, (const struct sockaddr *)&addr, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&s->tcp, 16, accept_cb), 0);
    assert_int_equal(uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&name, &len), 0);
    s->port = ntohs(((struct sockaddr_in *)&name)->sin_port);
}

static void srv_close(struct srv *s)
{
    if (s->closing)
        return;
    s->closing = true;
    uv_close((uv_handle_t *)&s->tcp, NULL);
    for (struct conn *c = s->conns; c != NULL; c = c->next)
        conn_close(c);
}

struct wr {
    uv_write_t w;
    char data[];
};

static void write_cb(uv_write_t *w, int status)
{
    free(w);
}

static void conn_write(struct conn *c, const char *data, size_t len)
{
    struct wr *w;
    uv_buf_t b;

    if (c->closing)
        return;
    w = malloc(sizeof(*w) + len);
    assert_non_null(w);
    memcpy(w->data, data, len);
    b = uv_buf_init(w->data, (unsigned)len);
    if (uv_write(&w->w, (uv_stream_t *)&c->tcp, &b, 1, write_cb) != 0)
        free(w);
}

static void respond(struct conn *c, int status, const char *headers, const char *body)
{
    char buf[4096];
    int n = snprintf(buf, sizeof(buf),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n%s\r\n%s",
                     status, strlen(body), headers ? headers : "", body);

    conn_write(c, buf, (size_t)n);
}

static void stream_begin(struct conn *c)
{
    static const char h[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n";
    conn_write(c, h, sizeof(h) - 1);
}

static void stream_chunk(struct conn *c, const char *s)
{
    char buf[1024];
    int n = snprintf(buf, sizeof(buf), "%zx\r\n%s\r\n", strlen(s), s);

    conn_write(c, buf, (size_t)n);
}

static void stream_end(struct conn *c)
{
    conn_write(c, "0\r\n\r\n", 5);
}

/* ---- the test environment ------------------------------------------------------ */

struct done {
    int calls;
    int status;
    char body[1024];
    size_t len;
    int order;             /* 1-based completion order across the test */
    uint64_t t;
};

struct env {
    uv_loop_t loop;
    struct srv srv;
    uv_timer_t watchdog;
    struct ebb_kube *k;
    struct ebb_kube_config cfg;
    char server[64];
    int closed;            /* ebb_kube_close callbacks */
    int ndone;             /* on_done calls, for `order` */
    /* per-test state */
    struct done d[16];
    struct ebb_kube_req *reqs[16];
    int ndata;
    char data[1024];
    struct conn *stream_conn;
    int script;            /* what the handler does */
    void *park[2];         /* test_cancel_then_free's requests */
    uint64_t t0;
    int nopen;             /* on_open calls */
    int data_at_open;      /* ndata when on_open ran */
};

static void watchdog_cb(uv_timer_t *t)
{
    /* only wakes uv_run(UV_RUN_ONCE) up so RUN_UNTIL can check its deadline */
}

/* The loop and the server; the client comes from env_client once e->cfg
 * is filled in. */
static void env_init(struct env *e, handler_fn h)
{
    memset(e, 0, sizeof(*e));
    assert_int_equal(uv_loop_init(&e->loop), 0);
    srv_start(&e->srv, &e->loop, h, e);
    assert_int_equal(uv_timer_init(&e->loop, &e->watchdog), 0);
    assert_int_equal(uv_timer_start(&e->watchdog, watchdog_cb, 50, 50), 0);
    snprintf(e->server, sizeof(e->server), "http://127.0.0.1:%d", e->srv.port);
    e->cfg.server = e->server;
}

static void env_client(struct env *e, const struct ebb_kube_opts *opts)
{
    struct ebb_error err;

    assert_int_equal(ebb_kube_create(&e->loop, &e->cfg, opts, &e->k, &err), 0);
}

static void closed_cb(void *ud)
{
    struct env *e = ud;

    e->closed++;
}

#define RUN_UNTIL(e, cond)                                                                       \
    do {                                                                                         \
        uint64_t deadline_ = uv_hrtime() + 15 * (uint64_t)1000000000;                           \
        while (!(cond)) {                                                                        \
            if (uv_hrtime() > deadline_)                                                         \
                fail_msg("timed out waiting for %s", #cond);                                     \
            uv_run(&(e)->loop, UV_RUN_ONCE);                                                     \
        }                                                                                        \
    } while (0)

static void walk_cb(uv_handle_t *h, void *arg)
{
    fprintf(stderr, "# left open: %s%s\n", uv_handle_type_name(h->type),
            uv_is_closing(h) ? " (closing)" : "");
}

static void env_finish(struct env *e)
{
    if (e->k != NULL && e->closed == 0)
        ebb_kube_close(e->k, closed_cb, e);
    srv_close(&e->srv);
    RUN_UNTIL(e, (e->k == NULL || e->closed == 1) && e->srv.conns == NULL);
    uv_close((uv_handle_t *)&e->watchdog, NULL);
    for (int i = 0; i < 3; i++)
        uv_run(&e->loop, UV_RUN_NOWAIT);
    if (uv_loop_close(&e->loop) != 0) {
        uv_walk(&e->loop, walk_cb, NULL);
        fail_msg("uv_loop_close: handles left");
    }
}

/* on_done that also records the completion order: ud is the env, the
 * request's index is found by pointer. */
static void on_done_env(struct ebb_kube_req *req, int status, const char *body, size_t len,
                        void *ud)
{
    struct env *e = ud;

    for (int i = 0; i < 16; i++) {
        if (e->reqs[i] == req) {
            struct done *d = &e->d[i];
            d->calls++;
            d->status = status;
            d->len = len;
            snprintf(d->body, sizeof(d->body), "%.*s", (int)len, body);
            d->order = ++e->ndone;
            d->t = uv_hrtime();
            e->reqs[i] = NULL;
            return;
        }
    }
    fail_msg("on_done for an unknown request");
}

/* Start request i of the env with on_done_env. */
static void start(struct env *e, int i, const char *method, const char *path, const char *body,
                  bool write)
{
    struct ebb_kube_req_opts o = {
        .method = method,
        .path = path,
        .body = body,
        .body_len = body ? strlen(body) : 0,
        .write = write,
        .on_done = on_done_env,
        .ud = e,
    };
    assert_int_equal(ebb_kube_request(e->k, &o, &e->reqs[i]), 0);
    assert_non_null(e->reqs[i]);
}

/* ---- handlers ----------------------------------------------------------------- */

static void h_ok(struct srv *s, struct conn *c, int n)
{
    char body[300];

    snprintf(body, sizeof(body), "{\"n\":%d,\"url\":\"%s\"}", n, s->reqs[n].url);
    respond(c, s->reqs[n].method[0] == 'P' && s->reqs[n].method[1] == 'O' ? 201 : 200, NULL,
            body);
}

static void h_hang(struct srv *s, struct conn *c, int n) {}

/* ---- tests ---------------------------------------------------------------------- */

static void test_get_bearer_keepalive(void **state)
{
    struct env e;

    env_init(&e, h_ok);
    e.cfg.token = "s3cret";
    env_client(&e, NULL);

    start(&e, 0, "GET", "/api/v1/pods?limit=500", NULL, false);
    assert_int_equal(ebb_kube_inflight(e.k), 1);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, 200);
    assert_string_equal(e.d[0].body, "{\"n\":0,\"url\":\"/api/v1/pods?limit=500\"}");
    assert_int_equal(e.srv.nreq, 1);
    assert_string_equal(e.srv.reqs[0].method, "GET");
    assert_string_equal(e.srv.reqs[0].url, "/api/v1/pods?limit=500");
    assert_string_equal(e.srv.reqs[0].auth, "Bearer s3cret");
    assert_string_equal(e.srv.reqs[0].ua, "ebb/" EBB_VERSION);
    assert_int_equal(ebb_kube_inflight(e.k), 0);

    /* three more, one after the other: one connection serves them all */
    for (int i = 1; i < 4; i++) {
        start(&e, i, "GET", "/api/v1/nodes", NULL, false);
        RUN_UNTIL(&e, e.d[i].calls == 1);
        assert_int_equal(e.d[i].status, 200);
    }
    assert_int_equal(e.srv.nreq, 4);
    assert_int_equal(e.srv.nconn, 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(e.srv.reqs[i].conn, 1);
    env_finish(&e);
}

static void test_post_body(void **state)
{
    struct env e;
    static const char ev[] = "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\","
                             "\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"}}";
    struct ebb_kube_req_opts patch = {
        .method = "PATCH",
        .path = "/api/v1/nodes/n1",
        .body = "{\"spec\":{}}",
        .body_len = 11,
        .content_type = "application/merge-patch+json",
        .write = true,
        .on_done = on_done_env,
        .ud = &e,
    };

    env_init(&e, h_ok);
    env_client(&e, &(struct ebb_kube_opts){0});
    start(&e, 0, "POST", "/api/v1/namespaces/default/pods/p/eviction", ev, true);
    assert_int_equal(ebb_kube_request(e.k, &patch, &e.reqs[1]), 0);
    start(&e, 2, "DELETE", "/api/v1/namespaces/default/pods/q", NULL, true);
    RUN_UNTIL(&e, e.ndone == 3);
    assert_int_equal(e.d[0].status, 201);
    assert_int_equal(e.d[1].status, 200);
    assert_int_equal(e.d[2].status, 200);
    assert_int_equal(e.srv.nreq, 3);
    assert_string_equal(e.srv.reqs[0].method, "POST");
    assert_string_equal(e.srv.reqs[0].url, "/api/v1/namespaces/default/pods/p/eviction");
    assert_string_equal(e.srv.reqs[0].ctype, "application/json");
    assert_int_equal(e.srv.reqs[0].body_len, strlen(ev));
    assert_memory_equal(e.srv.reqs[0].body, ev, strlen(ev));
    assert_string_equal(e.srv.reqs[1].method, "PATCH");
    assert_string_equal(e.srv.reqs[1].ctype, "application/merge-patch+json");
    assert_string_equal(e.srv.reqs[1].body, "{\"spec\":{}}");
    assert_string_equal(e.srv.reqs[2].method, "DELETE");
    assert_int_equal(e.srv.reqs[2].body_len, 0);
    assert_string_equal(e.srv.reqs[2].ctype, "");
    assert_string_equal(e.srv.reqs[2].auth, "");   /* no token configured */
    env_finish(&e);
}

/* ---- streaming ------------------------------------------------------------------ */

static const char *const chunks[] = {
    "{\"type\":\"ADDED\",\"object\":{}}\n",
    "{\"type\":\"MODIFIED\",",
    "\"object\":{}}\n{\"type\":\"BOOKMARK\",\"object\":{}}\n",
};

static void h_stream(struct srv *s, struct conn *c, int n)
{
    struct env *e = s->ud;

    if (e->script == 1 && n == 0) {
        respond(c, 503, NULL, "{}");   /* before any data: retried */
        return;
    }
    if (e->script == 2) {
        respond(c, 403, NULL, "{\"kind\":\"Status\",\"code\":403}");
        return;
    }
    e->stream_conn = c;
    stream_begin(c);
    if (e->script == 7 && n == 0) {   /* 7: headers, then the server goes away */
        conn_close(c);
        return;
    }
    if (e->script != 5 && e->script != 7)   /* 5: headers, then silence */
        stream_chunk(c, chunks[0]);
}

/* The server sends the next chunk only once the client has the previous
 * one, so every chunk arrives in its own read. */
static void on_data_next(struct ebb_kube_req *req, const char *data, size_t len, void *ud)
{
    struct env *e = ud;

    append(e->data, sizeof(e->data), data, len);
    e->ndata++;
    if (e->script == 3) {   /* cancel from inside the callback */
        ebb_kube_cancel(req);
        assert_int_equal(e->d[0].calls, 1);   /* on_done ran inside cancel */
        assert_int_equal(ebb_kube_inflight(e->k), 0);
        ebb_kube_cancel(req);   /* twice is harmless: req is not freed yet */
        return;
    }
    if (e->script == 4) {   /* close the client from inside the callback */
        ebb_kube_close(e->k, closed_cb, e);
        return;
    }
    if (e->script == 6) {   /* the server goes away mid-stream */
        conn_close(e->stream_conn);
        return;
    }
    if ((size_t)e->ndata < EBB_ARRAY_LEN(chunks))
        stream_chunk(e->stream_conn, chunks[e->ndata]);
    else
        stream_end(e->stream_conn);
}

static void start_stream(struct env *e, int i, long timeout_ms)
{
    struct ebb_kube_req_opts o = {
        .method = "GET",
        .path = "/api/v1/pods?watch=1&allowWatchBookmarks=true",
        .stream = true,
        .timeout_ms = timeout_ms,
        .on_data = on_data_next,
        .on_done = on_done_env,
        .ud = e,
    };
    assert_int_equal(ebb_kube_request(e->k, &o, &e->reqs[i]), 0);
}

static void on_open_env(struct ebb_kube_req *req, void *ud)
{
    struct env *e = ud;

    assert_ptr_equal(req, e->reqs[0]);
    e->nopen++;
    e->data_at_open = e->ndata;
}

/* A stream is open once its 2xx headers are in, data or not: a watch of a
 * quiet resource is current without an event. An error answer or an
 * attempt that failed is not an opening; a stream that opened is never
 * retried by the client (its owner resumes it from where it is). */
static void test_stream_open(void **state)
{
    static const int scripts[] = { 5, 1, 2, 7 };
    struct env e;

    for (size_t k = 0; k < EBB_ARRAY_LEN(scripts); k++) {
        struct ebb_kube_req_opts o = {
            .method = "GET", .path = "/api/v1/namespaces?watch=1", .stream = true,
            .on_data = on_data_next, .on_done = on_done_env, .on_open = on_open_env,
        };
        env_init(&e, h_stream);
        env_client(&e, &(struct ebb_kube_opts){0});
        e.script = scripts[k];
        o.ud = &e;
        assert_int_equal(ebb_kube_request(e.k, &o, &e.reqs[0]), 0);
        switch (e.script) {
        case 5:   /* headers, then silence */
            RUN_UNTIL(&e, e.nopen == 1);
            assert_int_equal(e.data_at_open, 0);
            assert_int_equal(e.d[0].calls, 0);
            ebb_kube_cancel(e.reqs[0]);
            break;
        case 1:   /* 503 first (retried, not an opening), then the stream */
            RUN_UNTIL(&e, e.d[0].calls == 1);
            assert_int_equal(e.nopen, 1);
            assert_int_equal(e.data_at_open, 0);
            assert_int_equal(e.d[0].status, 200);
            assert_int_equal(e.srv.nreq, 2);
            break;
        case 2:   /* 403 */
            RUN_UNTIL(&e, e.d[0].calls == 1);
            assert_int_equal(e.nopen, 0);
            assert_int_equal(e.d[0].status, 403);
            break;
        case 7:   /* opened, then the connection drops */
            RUN_UNTIL(&e, e.d[0].calls == 1);
            assert_int_equal(e.nopen, 1);
            assert_true(e.d[0].status < 0);
            assert_int_equal(e.srv.nreq, 1);
            break;
        }
        env_finish(&e);
    }
}

static void test_stream_chunks(void **state)
{
    struct env e;
    char want[1024] = "";

    for (size_t i = 0; i < EBB_ARRAY_LEN(chunks); i++)
        strcat(want, chunks[i]);
    for (int script = 0; script <= 1; script++) {
        env_init(&e, h_stream);
        env_client(&e, &(struct ebb_kube_opts){0});
        e.script = script;
        start_stream(&e, 0, 0);
        RUN_UNTIL(&e, e.d[0].calls == 1);
        assert_int_equal(e.d[0].status, 200);
        assert_int_equal(e.d[0].len, 0);
        assert_int_equal(e.ndata, 3);
        assert_string_equal(e.data, want);
        assert_int_equal(e.srv.nreq, script == 1 ? 2 : 1);
        env_finish(&e);
    }
}

static void test_stream_error_status(void **state)
{
    struct env e;

    env_init(&e, h_stream);
    env_client(&e, &(struct ebb_kube_opts){0});
    e.script = 2;
    start_stream(&e, 0, 0);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, 403);
    assert_string_equal(e.d[0].body, "{\"kind\":\"Status\",\"code\":403}");
    assert_int_equal(e.ndata, 0);   /* an error body is not stream data */
    assert_int_equal(e.srv.nreq, 1);
    env_finish(&e);
}

static void test_stream_cancel(void **state)
{
    struct env e;

    env_init(&e, h_stream);
    env_client(&e, &(struct ebb_kube_opts){0});
    e.script = 3;
    start_stream(&e, 0, 0);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, EBB_ESTATE);
    assert_string_equal(e.d[0].body, "cancelled");
    assert_int_equal(e.ndata, 1);
    assert_string_equal(e.data, chunks[0]);
    /* the client hung up: the server sees its connection close */
    RUN_UNTIL(&e, e.srv.nclosed == 1);
    assert_int_equal(ebb_kube_inflight(e.k), 0);
    env_finish(&e);
}

static void test_stream_close_from_callback(void **state)
{
    struct env e;

    env_init(&e, h_stream);
    env_client(&e, &(struct ebb_kube_opts){0});
    e.script = 4;
    start_stream(&e, 0, 0);
    start(&e, 1, "GET", "/hang", NULL, false);
    RUN_UNTIL(&e, e.closed == 1);
    assert_int_equal(e.d[0].status, EBB_ESTATE);
    assert_int_equal(e.d[1].calls, 1);
    assert_int_equal(e.d[1].status, EBB_ESTATE);
    assert_int_equal(e.ndata, 1);
    env_finish(&e);
}

static void test_stream_idle_timeout(void **state)
{
    struct env e;

    env_init(&e, h_stream);
    env_client(&e, &(struct ebb_kube_opts){.max_retries = -1});
    e.script = 5;
    start_stream(&e, 0, 1000);   /* for a stream: the longest silence */
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, EBB_EIO);
    assert_non_null(strstr(e.d[0].body, "too slow"));
    assert_int_equal(e.ndata, 0);
    assert_int_equal(e.srv.nreq, 1);
    env_finish(&e);
}

static void test_stream_broken_not_retried(void **state)
{
    struct env e;

    env_init(&e, h_stream);
    env_client(&e, &(struct ebb_kube_opts){0});
    e.script = 6;
    start_stream(&e, 0, 0);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, EBB_EIO);   /* a read error, retried for a plain GET */
    assert_true(e.d[0].len > 0);
    assert_int_equal(e.ndata, 1);
    assert_int_equal(e.srv.nreq, 1);   /* data was delivered: never retried */
    env_finish(&e);
}

/* ---- retries -------------------------------------------------------------------- */

/* script 0: 503, 503, 200; 1: 429 Retry-After: 1, 200; 2: always 503;
 * 3: drop the connection once, then 200; 4: 503 Retry-After: 5 forever */
static void h_flaky(struct srv *s, struct conn *c, int n)
{
    struct env *e = s->ud;

    switch (e->script) {
    case 0:
        if (n < 2)
            respond(c, 503, NULL, "{\"code\":503}");
        else
            respond(c, 200, NULL, "{\"ok\":true}");
        break;
    case 1:
        if (n == 0)
            respond(c, 429, "Retry-After: 1\r\n", "{\"code\":429}");
        else
            respond(c, 200, NULL, "{\"ok\":true}");
        break;
    case 2:
        respond(c, 503, NULL, "{\"code\":503}");
        break;
    case 3:
        if (n == 0)
            conn_close(c);
        else
            respond(c, 200, NULL, "{\"ok\":true}");
        break;
    case 4:
        respond(c, 503, "Retry-After: 5\r\n", "{}");
        if (n == 0)
            ebb_kube_cancel(e->reqs[0]);   /* while it waits for its retry */
        break;
    }
}

static void test_retry_503(void **state)
{
    struct env e;

    env_init(&e, h_flaky);
    env_client(&e, &(struct ebb_kube_opts){0});
    start(&e, 0, "GET", "/api/v1/pods", NULL, false);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, 200);
    assert_string_equal(e.d[0].body, "{\"ok\":true}");
    assert_int_equal(e.srv.nreq, 3);
    env_finish(&e);
}

static void test_retry_429_retry_after(void **state)
{
    struct env e;

    env_init(&e, h_flaky);
    env_client(&e, &(struct ebb_kube_opts){0});
    e.script = 1;
    start(&e, 0, "GET", "/api/v1/pods", NULL, false);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, 200);
    assert_int_equal(e.srv.nreq, 2);
    assert_true(e.srv.reqs[1].t - e.srv.reqs[0].t >= 1000000000ull);
    env_finish(&e);
}

static void test_write_not_retried(void **state)
{
    struct env e;

    env_init(&e, h_flaky);
    env_client(&e, &(struct ebb_kube_opts){.max_retries = 2});
    e.script = 2;
    start(&e, 0, "POST", "/api/v1/namespaces/default/pods/p/eviction", "{}", true);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, 503);
    assert_string_equal(e.d[0].body, "{\"code\":503}");
    assert_int_equal(e.srv.nreq, 1);

    /* a read gives up after max_retries and reports the last answer */
    start(&e, 1, "GET", "/api/v1/pods", NULL, false);
    RUN_UNTIL(&e, e.d[1].calls == 1);
    assert_int_equal(e.d[1].status, 503);
    assert_int_equal(e.srv.nreq, 1 + 3);
    env_finish(&e);
}

static void test_retry_transport(void **state)
{
    struct env e;

    env_init(&e, h_flaky);
    env_client(&e, &(struct ebb_kube_opts){0});
    e.script = 3;
    start(&e, 0, "GET", "/api/v1/pods", NULL, false);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, 200);
    assert_int_equal(e.srv.nreq, 2);
    env_finish(&e);

    /* the same drop for a write is reported, not retried */
    env_init(&e, h_flaky);
    env_client(&e, &(struct ebb_kube_opts){0});
    e.script = 3;
    start(&e, 0, "POST", "/api/v1/namespaces/default/pods/p/eviction", "{}", true);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, EBB_EIO);
    assert_true(e.d[0].len > 0);   /* curl's message */
    assert_int_equal(e.srv.nreq, 1);
    env_finish(&e);
}

static void test_connection_refused(void **state)
{
    struct env e;

    env_init(&e, h_ok);
    snprintf(e.server, sizeof(e.server), "http://127.0.0.1:1");
    env_client(&e, &(struct ebb_kube_opts){.max_retries = 2});
    start(&e, 0, "GET", "/api/v1/pods", NULL, false);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, EBB_EIO);
    assert_true(e.d[0].len > 0);
    env_finish(&e);
}

static void test_cancel_waiting_retry(void **state)
{
    struct env e;

    env_init(&e, h_flaky);
    env_client(&e, &(struct ebb_kube_opts){0});
    e.script = 4;
    start(&e, 0, "GET", "/api/v1/pods", NULL, false);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, EBB_ESTATE);
    assert_int_equal(e.srv.nreq, 1);
    env_finish(&e);
}

static void test_timeout(void **state)
{
    struct env e;
    struct ebb_kube_req_opts o = {
        .method = "GET", .path = "/slow", .timeout_ms = 200, .on_done = on_done_env, .ud = &e,
    };

    env_init(&e, h_hang);
    env_client(&e, &(struct ebb_kube_opts){.max_retries = -1});
    assert_int_equal(ebb_kube_request(e.k, &o, &e.reqs[0]), 0);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, EBB_EIO);
    assert_non_null(strstr(e.d[0].body, "timed out"));
    assert_int_equal(e.srv.nreq, 1);   /* max_retries < 0: none */
    env_finish(&e);
}

/* ---- the token file ---------------------------------------------------------------- */

static void write_file(const char *path, const char *text)
{
    char tmp[512];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(rename(tmp, path), 0);   /* as kubelet swaps it: atomically */
}

static void test_token_rotation(void **state)
{
    struct env e;
    char dir[] = "/tmp/ebb-kube-http-XXXXXX", path[256];

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/token", dir);
    write_file(path, "tok-1\n");
    env_init(&e, h_ok);
    e.cfg.token_file = path;
    env_client(&e, NULL);

    start(&e, 0, "GET", "/a", NULL, false);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    start(&e, 1, "GET", "/b", NULL, false);
    RUN_UNTIL(&e, e.d[1].calls == 1);
    write_file(path, "tok-2\n");
    start(&e, 2, "GET", "/c", NULL, false);
    RUN_UNTIL(&e, e.d[2].calls == 1);
    assert_int_equal(e.srv.nreq, 3);
    assert_string_equal(e.srv.reqs[0].auth, "Bearer tok-1");
    assert_string_equal(e.srv.reqs[1].auth, "Bearer tok-1");
    assert_string_equal(e.srv.reqs[2].auth, "Bearer tok-2");

    /* a vanished file keeps the last good token (and says so, once per try) */
    unlink(path);
    ebb_log_level = EBB_LOG_ERROR;
    start(&e, 3, "GET", "/d", NULL, false);
    RUN_UNTIL(&e, e.d[3].calls == 1);
    assert_string_equal(e.srv.reqs[3].auth, "Bearer tok-2");
    /* so does a file whose token would forge a header */
    write_file(path, "tok-3\r\nX-Forged: yes\n");
    start(&e, 4, "GET", "/e", NULL, false);
    RUN_UNTIL(&e, e.d[4].calls == 1);
    assert_string_equal(e.srv.reqs[4].auth, "Bearer tok-2");
    assert_int_equal(ebb_kube_set_token(e.k, "tok\n4"), EBB_EINVAL);
    ebb_log_level = EBB_LOG_INFO;
    env_finish(&e);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

/* ---- the write rate limit ------------------------------------------------------------ */

static void test_write_rate_limit(void **state)
{
    struct env e;
    char path[32];
    uint64_t t0;

    env_init(&e, h_ok);
    env_client(&e, &(struct ebb_kube_opts){.qps = 5, .burst = 2});
    t0 = uv_hrtime();
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof(path), "/w%d", i);
        start(&e, i, "POST", path, "{}", true);
    }
    /* reads do not wait for write tokens */
    start(&e, 6, "GET", "/read", NULL, false);
    assert_int_equal(ebb_kube_inflight(e.k), 7);
    RUN_UNTIL(&e, e.ndone == 7);
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof(path), "/w%d", i);
        assert_int_equal(e.d[i].status, 201);
        assert_string_equal(e.srv.reqs[i < 2 ? i : i + 1].url, path);   /* in order */
        if (i > 0)
            assert_true(e.d[i].order > e.d[i - 1].order);
    }
    assert_true(e.d[6].order < e.d[2].order);
    /* two at once (burst), then one per 200 ms: w2 no sooner than 200 ms,
     * ... w5 no sooner than 800 ms */
    for (int i = 2; i < 6; i++)
        assert_true(e.srv.reqs[i + 1].t - t0 >= (uint64_t)(i - 1) * 200000000ull);
    assert_true(e.d[5].t - t0 >= 800000000ull);
    env_finish(&e);
}

static void test_cancel_queued_write(void **state)
{
    struct env e;

    env_init(&e, h_ok);
    env_client(&e, &(struct ebb_kube_opts){.qps = 2, .burst = 1});
    start(&e, 0, "POST", "/w0", "{}", true);
    start(&e, 1, "POST", "/w1", "{}", true);
    start(&e, 2, "POST", "/w2", "{}", true);
    ebb_kube_cancel(e.reqs[1]);
    assert_int_equal(e.d[1].calls, 1);   /* before cancel returns */
    assert_int_equal(e.d[1].order, 1);
    RUN_UNTIL(&e, e.ndone == 3);
    assert_int_equal(e.d[0].status, 201);
    assert_int_equal(e.d[1].status, EBB_ESTATE);
    assert_int_equal(e.d[2].status, 201);
    assert_int_equal(e.srv.nreq, 2);
    assert_string_equal(e.srv.reqs[1].url, "/w2");
    env_finish(&e);
}

/* The watch cache and leader election free their state right after
 * cancelling: on_done must not come later (ASan would see it). */
struct owned {
    struct env *e;
    struct ebb_kube_req *req;
    int calls, status;
};

static void on_done_owned(struct ebb_kube_req *req, int status, const char *body, size_t len,
                          void *ud)
{
    struct owned *o = ud;

    o->calls++;
    o->status = status;
    o->e->ndone++;
}

static void h_cancel_and_free(struct srv *s, struct conn *c, int n)
{
    struct env *e = s->ud;

    if (n == 1) {   /* both in flight: cancel and free them, a stream and a GET */
        for (int i = 0; i < 2; i++) {
            struct owned *x = e->park[i];
            ebb_kube_cancel(x->req);
            assert_int_equal(x->calls, 1);
            assert_int_equal(x->status, EBB_ESTATE);
            free(x);
            e->park[i] = NULL;
        }
        respond(c, 200, NULL, "{}");
    }
}

static void on_data_ignore(struct ebb_kube_req *req, const char *data, size_t len, void *ud) {}

static void test_cancel_then_free(void **state)
{
    struct env e;

    env_init(&e, h_cancel_and_free);
    env_client(&e, &(struct ebb_kube_opts){0});
    for (int i = 0; i < 2; i++) {
        struct owned *o = calloc(1, sizeof(*o));
        struct ebb_kube_req_opts ro = {
            .method = "GET",
            .path = i == 0 ? "/api/v1/pods?watch=1" : "/api/v1/nodes",
            .stream = i == 0,
            .on_data = on_data_ignore,
            .on_done = on_done_owned,
            .ud = o,
        };
        assert_non_null(o);
        o->e = &e;
        assert_int_equal(ebb_kube_request(e.k, &ro, &o->req), 0);
        e.park[i] = o;
    }
    RUN_UNTIL(&e, e.srv.nreq == 2 && e.ndone == 2);
    /* the zombies leave curl at the next wake; the connections close */
    RUN_UNTIL(&e, e.srv.nclosed >= 1);
    assert_int_equal(ebb_kube_inflight(e.k), 0);
    env_finish(&e);
}

/* ---- close ------------------------------------------------------------------------------ */

static void h_hang_close(struct srv *s, struct conn *c, int n)
{
    struct env *e = s->ud;

    if (n == 3) {   /* everything that can reach the server has */
        ebb_kube_close(e->k, closed_cb, e);
        /* every on_done ran inside close; the memory goes later */
        for (int i = 0; i < 5; i++)
            assert_int_equal(e->d[i].calls, 1);
        assert_int_equal(ebb_kube_inflight(e->k), 0);
        assert_int_equal(e->closed, 0);
    }
}

static void test_close_inflight(void **state)
{
    struct env e;

    env_init(&e, h_hang_close);
    env_client(&e, &(struct ebb_kube_opts){.qps = 1, .burst = 1});
    start(&e, 0, "GET", "/a", NULL, false);
    start(&e, 1, "GET", "/b", NULL, false);
    start_stream(&e, 2, 0);
    start(&e, 3, "POST", "/w0", "{}", true);
    start(&e, 4, "POST", "/w1", "{}", true);   /* waits for a token */
    assert_int_equal(ebb_kube_inflight(e.k), 5);
    RUN_UNTIL(&e, e.closed == 1);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(e.d[i].calls, 1);
        assert_int_equal(e.d[i].status, EBB_ESTATE);
    }
    assert_int_equal(e.srv.nreq, 4);
    env_finish(&e);
}

static void on_done_close(struct ebb_kube_req *req, int status, const char *body, size_t len,
                          void *ud)
{
    struct env *e = ud;
    struct ebb_kube_req_opts o = {.method = "GET", .path = "/x", .on_done = on_done_env, .ud = e};

    e->d[0].calls++;
    e->d[0].status = status;
    ebb_kube_close(e->k, closed_cb, e);
    ebb_kube_close(e->k, closed_cb, e);   /* twice is harmless */
    assert_int_equal(ebb_kube_request(e->k, &o, NULL), EBB_ESTATE);
}

static void test_close_from_on_done(void **state)
{
    struct env e;
    struct ebb_kube_req_opts o = {.method = "GET", .path = "/a", .on_done = on_done_close, .ud = &e};

    env_init(&e, h_ok);
    env_client(&e, &(struct ebb_kube_opts){0});
    assert_int_equal(ebb_kube_request(e.k, &o, NULL), 0);
    start(&e, 1, "GET", "/hang-not", NULL, false);
    RUN_UNTIL(&e, e.closed == 1);
    assert_int_equal(e.d[0].calls, 1);
    assert_int_equal(e.d[0].status, 200);
    assert_int_equal(e.d[1].calls, 1);   /* answered or cancelled, exactly once */
    env_finish(&e);
}

static void test_close_idle(void **state)
{
    struct env e;

    env_init(&e, h_ok);
    env_client(&e, &(struct ebb_kube_opts){0});
    ebb_kube_close(e.k, closed_cb, &e);
    env_finish(&e);
    assert_int_equal(e.closed, 1);
}

static void test_bad_args(void **state)
{
    struct env e;
    struct ebb_kube_req_opts o = {.method = "GET", .path = "/a", .on_done = on_done_env, .ud = &e};
    struct ebb_kube_config none = {0};
    struct ebb_kube *k = NULL;
    struct ebb_error err;

    env_init(&e, h_ok);
    env_client(&e, &(struct ebb_kube_opts){0});
    assert_int_equal(ebb_kube_create(&e.loop, &none, NULL, &k, &err), EBB_EINVAL);
    assert_null(k);
    assert_int_equal(ebb_kube_request(NULL, &o, NULL), EBB_EINVAL);
    o.path = "api/v1/pods";
    assert_int_equal(ebb_kube_request(e.k, &o, NULL), EBB_EINVAL);
    o.path = "/a";
    o.method = "GETS";
    assert_int_equal(ebb_kube_request(e.k, &o, NULL), EBB_EINVAL);
    o.method = "GET";
    o.stream = true;   /* without on_data */
    assert_int_equal(ebb_kube_request(e.k, &o, NULL), EBB_EINVAL);
    o.stream = false;
    o.on_done = NULL;
    assert_int_equal(ebb_kube_request(e.k, &o, NULL), EBB_EINVAL);
    assert_int_equal(ebb_kube_inflight(e.k), 0);
    ebb_kube_cancel(NULL);
    ebb_kube_close(NULL, NULL, NULL);
    env_finish(&e);
}

/* ---- TLS, against `openssl s_server` with throwaway certificates ----------------- */

struct tls_srv {
    uv_process_t proc;
    uv_pipe_t out;
    char buf[4096];
    size_t len;
    bool ready, exited, out_closed;
};

static void tls_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct tls_srv *t = p->data;

    t->exited = true;
    uv_close((uv_handle_t *)p, NULL);
}

static void tls_out_closed(uv_handle_t *h)
{
    struct tls_srv *t = h->data;

    t->out_closed = true;
}

static void tls_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct tls_srv *t = st->data;

    if (nread < 0) {
        uv_close((uv_handle_t *)st, tls_out_closed);
    } else if (nread > 0) {
        size_t n = (size_t)nread < sizeof(t->buf) - 1 - t->len ? (size_t)nread
                                                                 : sizeof(t->buf) - 1 - t->len;
        memcpy(t->buf + t->len, buf->base, n);
        t->len += n;
        t->buf[t->len] = '\0';
        if (strstr(t->buf, "ACCEPT") != NULL)
            t->ready = true;
    }
    free(buf->base);
}

static int free_port(uv_loop_t *loop)
{
    uv_tcp_t tcp;
    struct sockaddr_in addr;
    struct sockaddr_storage name;
    int len = sizeof(name), port;

    assert_int_equal(uv_tcp_init(loop, &tcp), 0);
    assert_int_equal(uv_ip4_addr("127.0.0.1", 0, &addr), 0);
    assert_int_equal(uv_tcp_bind(&tcp, (const struct sockaddr *)&addr, 0), 0);
    assert_int_equal(uv_tcp_getsockname(&tcp, (struct sockaddr *)&name, &len), 0);
    port = ntohs(((struct sockaddr_in *)&name)->sin_port);
    uv_close((uv_handle_t *)&tcp, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    return port;
}

static char *slurp(const char *path)
{
    char *s = fixture_read(path, NULL);

    assert_non_null(s);
    return s;
}

/* One GET / with `cfg` on a fresh client; the client is closed again. */
static int tls_get(struct env *e, const struct ebb_kube_config *cfg, char *msg, size_t msglen)
{
    struct ebb_kube *k;
    struct ebb_error err;
    int closed = e->closed;

    assert_int_equal(ebb_kube_create(&e->loop, cfg, &(struct ebb_kube_opts){.max_retries = -1},
                                     &k, &err), 0);
    memset(&e->d[0], 0, sizeof(e->d[0]));
    e->k = k;
    start(e, 0, "GET", "/", NULL, false);
    RUN_UNTIL(e, e->d[0].calls == 1);
    ebb_kube_close(k, closed_cb, e);
    RUN_UNTIL(e, e->closed == closed + 1);
    e->k = NULL;
    snprintf(msg, msglen, "%s", e->d[0].body);
    return e->d[0].status;
}

static void test_tls(void **state)
{
    char dir[] = "/tmp/ebb-kube-tls-XXXXXX", cmd[2048], accept[64], cert[64], key[64],
         ccert[64], ckey[64], msg[1024];
    struct tls_srv t = {0};
    struct env e;
    struct ebb_kube_config cfg = {0};
    uv_stdio_container_t stdio[3];
    uv_process_options_t po = {0};
    char *server_pem, *client_pem, *client_key;
    int port, rc;

    assert_non_null(mkdtemp(dir));
    snprintf(cert, sizeof(cert), "%s/server.pem", dir);
    snprintf(key, sizeof(key), "%s/server-key.pem", dir);
    snprintf(ccert, sizeof(ccert), "%s/client.pem", dir);
    snprintf(ckey, sizeof(ckey), "%s/client-key.pem", dir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
             "-keyout %s -out %s >/dev/null 2>&1 && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-days 2 -subj /CN=ebb-client -keyout %s -out %s >/dev/null 2>&1",
             key, cert, ckey, ccert);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        (void)system(cmd);
        skip();   /* no openssl on this machine */
    }
    server_pem = slurp(cert);
    client_pem = slurp(ccert);
    client_key = slurp(ckey);

    env_init(&e, h_ok);
    port = free_port(&e.loop);
    snprintf(accept, sizeof(accept), "127.0.0.1:%d", port);
    char *args[] = {"openssl", "s_server", "-accept", accept, "-cert", cert, "-key", key,
                    "-Verify", "1", "-verify_return_error", "-CAfile", ccert, "-www", NULL};
    assert_int_equal(uv_pipe_init(&e.loop, &t.out, 0), 0);
    t.out.data = &t;
    t.proc.data = &t;
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[1].data.stream = (uv_stream_t *)&t.out;
    stdio[2].flags = UV_IGNORE;
    po.file = "openssl";
    po.args = args;
    po.stdio = stdio;
    po.stdio_count = 3;
    po.exit_cb = tls_exit_cb;
    assert_int_equal(uv_spawn(&e.loop, &t.proc, &po), 0);
    assert_int_equal(uv_read_start((uv_stream_t *)&t.out, alloc_cb, tls_read_cb), 0);
    RUN_UNTIL(&e, t.ready || t.exited);
    assert_true(t.ready);

    snprintf(cmd, sizeof(cmd), "https://127.0.0.1:%d", port);
    cfg.server = cmd;
    /* CA and client certificate as PEM bytes */
    cfg.ca_data = server_pem;
    cfg.cert_data = client_pem;
    cfg.key_data = client_key;
    rc = tls_get(&e, &cfg, msg, sizeof(msg));
    assert_int_equal(rc, 200);
    assert_non_null(strstr(msg, "<HTML>"));
    /* ... and as files */
    cfg.ca_data = cfg.cert_data = cfg.key_data = NULL;
    cfg.ca_file = cert;
    cfg.cert_file = ccert;
    cfg.key_file = ckey;
    assert_int_equal(tls_get(&e, &cfg, msg, sizeof(msg)), 200);
    /* the system CAs do not know a self-signed server: refused */
    cfg.ca_file = NULL;
    assert_int_equal(tls_get(&e, &cfg, msg, sizeof(msg)), EBB_EIO);
    assert_non_null(strstr(msg, "certificate"));
    /* unless insecure-skip-tls-verify */
    cfg.insecure = true;
    assert_int_equal(tls_get(&e, &cfg, msg, sizeof(msg)), 200);
    /* the server wants a client certificate */
    cfg.insecure = false;
    cfg.ca_data = server_pem;
    cfg.cert_file = cfg.key_file = NULL;
    assert_int_equal(tls_get(&e, &cfg, msg, sizeof(msg)), EBB_EIO);

    uv_process_kill(&t.proc, SIGTERM);
    RUN_UNTIL(&e, t.exited && t.out_closed);
    env_finish(&e);
    free(server_pem);
    free(client_pem);
    free(client_key);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- the bounds of an answer ---------------------------------------------------- */

/* A server that keeps sending: `hose` writes 256 KiB of body to its
 * connection every millisecond until the client goes. */
static struct {
    uv_timer_t t;
    struct srv *s;
    struct conn *c;
    bool chunked;
    uint64_t sent;
    bool on;
} hose;

static void hose_cb(uv_timer_t *t)
{
    static char blk[256 << 10];
    char head[32];
    int n;

    if (!conn_alive(hose.s, hose.c)) {
        uv_timer_stop(t);
        hose.c = NULL;
        return;
    }
    memset(blk, 'x', sizeof(blk));
    if (hose.chunked) {
        n = snprintf(head, sizeof(head), "%zx\r\n", sizeof(blk));
        conn_write(hose.c, head, (size_t)n);
    }
    conn_write(hose.c, blk, sizeof(blk));
    if (hose.chunked)
        conn_write(hose.c, "\r\n", 2);
    hose.sent += sizeof(blk);
}

/* script 0: "Content-Length: 10 GB" then a trickle; 1: chunked, endless;
 * 2: 403 with a 1 MiB body; 3: 200 with a 1 MiB body, whole. */
static void h_huge(struct srv *s, struct conn *c, int n)
{
    struct env *e = s->ud;
    static char mib[1 << 20];

    switch (e->script) {
    case 0: {
        static const char h[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Content-Length: 10737418240\r\n\r\n{\"items\":[";
        conn_write(c, h, sizeof(h) - 1);
        break;
    }
    case 1:
        stream_begin(c);
        hose.s = s;
        hose.c = c;
        hose.chunked = true;
        uv_timer_start(&hose.t, hose_cb, 1, 1);
        break;
    default: {
        char h[160];
        int k = snprintf(h, sizeof(h), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\n\r\n", e->script == 2 ? 403 : 200, sizeof(mib));
        memset(mib, 'y', sizeof(mib));
        conn_write(c, h, (size_t)k);
        conn_write(c, mib, sizeof(mib));
        break;
    }
    }
}

static size_t sink_bytes;

static void on_data_count(struct ebb_kube_req *req, const char *data, size_t len, void *ud)
{
    (void)req;
    (void)data;
    (void)ud;
    sink_bytes += len;
}

/* No answer makes the client hold more than its bound: a Content-Length
 * over it is refused before a byte of the body is read, a body without one
 * ends the request once past it (EBB_ELIMIT, not retried), a sink hands a
 * body on as it comes and ends it past its bound too, and the error body
 * of a sink keeps only its first EBB_KUBE_ERROR_MAX bytes. */
static void test_answer_bounds(void **state)
{
    struct env e;
    (void)state;

    for (int script = 0; script <= 4; script++) {
        struct ebb_kube_req_opts o = { .method = "GET", .path = "/api/v1/pods", .on_done = on_done_env };
        env_init(&e, h_huge);
        assert_int_equal(uv_timer_init(&e.loop, &hose.t), 0);
        hose.c = NULL;
        hose.sent = 0;
        sink_bytes = 0;
        env_client(&e, &(struct ebb_kube_opts){ .timeout_ms = 60000 });
        e.script = script == 4 ? 1 : script;
        o.ud = &e;
        if (script == 1)
            o.max_bytes = 4u << 20;
        if (script >= 2) {
            o.on_data = on_data_count;   /* a sink */
            o.max_bytes = script == 4 ? 8u << 20 : 0;
        }
        assert_int_equal(ebb_kube_request(e.k, &o, &e.reqs[0]), 0);
        RUN_UNTIL(&e, e.d[0].calls == 1);
        switch (script) {
        case 0:
        case 1:
            assert_int_equal(e.d[0].status, EBB_ELIMIT);
            assert_non_null(strstr(e.d[0].body, "larger than"));
            assert_int_equal(e.srv.nreq, 1);   /* not retried */
            if (script == 1)
                assert_true(hose.sent < (64u << 20));
            break;
        case 2:
            assert_int_equal(e.d[0].status, 403);
            assert_int_equal(e.d[0].len, EBB_KUBE_ERROR_MAX);
            assert_int_equal(sink_bytes, 0);
            break;
        case 3:
            assert_int_equal(e.d[0].status, 200);
            assert_int_equal(e.d[0].len, 0);
            assert_int_equal(sink_bytes, 1u << 20);
            break;
        case 4:
            assert_int_equal(e.d[0].status, EBB_ELIMIT);
            assert_true(sink_bytes <= (8u << 20));
            break;
        }
        uv_timer_stop(&hose.t);
        uv_close((uv_handle_t *)&hose.t, NULL);
        env_finish(&e);
    }
}

/* ---- reading in batches ------------------------------------------------------- */

/* A server on its own thread that writes its answer in small pieces, as
 * the API server writes a large one: DRIP_WRITES writes of 4 KiB of the
 * body (its Content-Length: curl hands on what each read gave, where it
 * would hand on each chunk of a chunked body apart), 250 us apart. The
 * loop's own test server cannot: it writes only between the client's
 * reads. */
#define DRIP_WRITES 300
static struct {
    int lfd;
    pthread_t th;
    uint64_t took_ns;     /* from the first write of the body to the last */
} drip;

static void *drip_main(void *arg)
{
    char req[4096], h[160], blk[4096];
    size_t got = 0;
    ssize_t n;
    int fd = accept(drip.lfd, NULL, NULL), k;

    (void)arg;
    if (fd < 0)
        return NULL;
    while (got < sizeof(req) - 1 && (n = read(fd, req + got, sizeof(req) - 1 - got)) > 0) {
        got += (size_t)n;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n") != NULL)
            break;
    }
    k = snprintf(h, sizeof(h), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 "Content-Length: %d\r\n\r\n", DRIP_WRITES * (int)sizeof(blk));
    memset(blk, 'd', sizeof(blk));
    drip.took_ns = uv_hrtime();
    if (write(fd, h, (size_t)k) == k)
        for (int i = 0; i < DRIP_WRITES && write(fd, blk, sizeof(blk)) == (ssize_t)sizeof(blk); i++)
            usleep(250);
    drip.took_ns = uv_hrtime() - drip.took_ns;
    usleep(100000);   /* the client reads the end before the connection goes */
    close(fd);
    return NULL;
}

static int drip_calls;
static size_t drip_bytes;

static void on_data_drip(struct ebb_kube_req *req, const char *data, size_t len, void *ud)
{
    (void)req;
    (void)data;
    (void)ud;
    drip_calls++;
    drip_bytes += len;
}

/* One answer from the drip: how many pieces reached the sink. */
static int drip_once(void)
{
    struct env e;
    struct ebb_kube_req_opts o = { .method = "GET", .path = "/api/v1/pods", .on_data = on_data_drip,
                                   .on_done = on_done_env };
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);

    assert_true((drip.lfd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
    assert_int_equal(bind(drip.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(drip.lfd, 1), 0);
    assert_int_equal(getsockname(drip.lfd, (struct sockaddr *)&a, &alen), 0);
    assert_int_equal(pthread_create(&drip.th, NULL, drip_main, NULL), 0);
    env_init(&e, h_ok);
    snprintf(e.server, sizeof(e.server), "http://127.0.0.1:%d", ntohs(a.sin_port));
    drip_calls = 0;
    drip_bytes = 0;
    env_client(&e, &(struct ebb_kube_opts){ .timeout_ms = 20000 });
    o.ud = &e;
    assert_int_equal(ebb_kube_request(e.k, &o, &e.reqs[0]), 0);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, 200);
    assert_int_equal(drip_bytes, (size_t)DRIP_WRITES * 4096);
    env_finish(&e);
    assert_int_equal(pthread_join(drip.th, NULL), 0);
    close(drip.lfd);
    return drip_calls;
}

/* A socket that gave bytes is read again a few milliseconds later, not
 * at each piece the server writes: an answer written 4 KiB every 250 us
 * reaches its sink in fewer, larger pieces (read at each piece, it comes
 * in one a write), every byte of it. Only a run whose writer kept to
 * under a millisecond a write tells (a writer slower than the batches
 * would be read a write at a time either way): up to three runs. */
static void test_read_batches(void **state)
{
    (void)state;

    for (int run = 0; run < 3; run++) {
        int pieces = drip_once();

        print_message("# %d writes of 4 KiB in %.0f ms reached the sink in %d pieces\n", DRIP_WRITES,
                      (double)drip.took_ns / 1e6, pieces);
        if (drip.took_ns < (uint64_t)DRIP_WRITES * 1000000) {
            assert_true(pieces * 2 <= DRIP_WRITES);
            return;
        }
    }
    skip();   /* the writer never kept pace: this machine cannot tell */
}

/* ---- gzip-encoded answers ------------------------------------------------------ */

/* `len` bytes of `in` as gzip (zlib only writes the test's answers). */
static unsigned char *gzip_of(const void *in, size_t len, size_t *out_len)
{
    z_stream z = { 0 };
    size_t cap = len / 2 + 1024;
    unsigned char *out = malloc(cap);

    assert_non_null(out);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = z.total_out;
    deflateEnd(&z);
    return out;
}

/* A pod List of about 600 KB, as the API server would write it. */
static char *pod_list(size_t *len)
{
    size_t cap = 700000, n = 0;
    char *b = malloc(cap);

    assert_non_null(b);
    n += (size_t)snprintf(b + n, cap - n, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\","
                          "\"metadata\":{\"resourceVersion\":\"4711\"},\"items\":[");
    for (int i = 0; i < 1500; i++)
        n += (size_t)snprintf(b + n, cap - n,
                              "%s{\"metadata\":{\"name\":\"web-7d9f8b6c5d-%05d\",\"namespace\":\"team-%d\","
                              "\"uid\":\"0b7e6c2a-41f1-4d1e-9a6b-%012d\",\"labels\":{\"app\":\"web\"}},"
                              "\"spec\":{\"nodeName\":\"node-%03d\",\"containers\":[{\"name\":\"web\","
                              "\"image\":\"registry.example.com/web:1.4.2\",\"resources\":{\"requests\":"
                              "{\"cpu\":\"250m\",\"memory\":\"256Mi\"}}}]},\"status\":{\"phase\":\"Running\"}}",
                              i ? "," : "", i, i % 40, i, i % 300);
    n += (size_t)snprintf(b + n, cap - n, "]}");
    assert_true(n < cap - 1);
    *len = n;
    return b;
}

static struct {
    const unsigned char *body;
    size_t len;
    const char *encoding;
} gz_answer;

/* The answer of the test: gz_answer.body, encoded as it says. */
static void h_gzip(struct srv *s, struct conn *c, int n)
{
    char h[200];
    int k = snprintf(h, sizeof(h), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     "Content-Encoding: %s\r\nContent-Length: %zu\r\n\r\n", gz_answer.encoding,
                     gz_answer.len);

    conn_write(c, h, (size_t)k);
    conn_write(c, (const char *)gz_answer.body, gz_answer.len);
}

static char *sink_copy;
static size_t sink_copy_len;

static void on_data_copy(struct ebb_kube_req *req, const char *data, size_t len, void *ud)
{
    (void)req;
    (void)ud;
    if (sink_copy_len + len <= 700000)
        memcpy(sink_copy + sink_copy_len, data, len);
    sink_copy_len += len;
}

/* Answers are asked for gzip (as client-go asks), unless the kubeconfig
 * says disable-compression; what a gzip answer decodes to is the answer
 * (members one after another too), held to the same bounds as any (a
 * small answer that decodes to a huge one ends at max_bytes), an answer
 * whose encoding is broken, cut or not gzip is an error that says so, and
 * the bytes received and decoded are counted. One table: each kind of
 * encoded answer, to a plain request, a sink and a stream. */
static void test_gzip_answers(void **state)
{
    size_t list_len, gz_len, bomb_len;
    char *list = pod_list(&list_len);
    unsigned char *gz = gzip_of(list, list_len, &gz_len);
    char *zeros = calloc(64u << 20, 1);
    unsigned char *bomb, *broken, *two, *half, *bad_crc, *bad_size;
    size_t two_len, half_len;
    enum { GOOD, BOMB, BROKEN, CUT, TWO, BR, BAD_CRC, BAD_SIZE };
    static const struct {
        const char *what;
        int answer;
        bool sink, stream, no_gzip;
        size_t max_bytes;
        int want;            /* status */
    } cases[] = {
        { "a pod List", GOOD, false, false, false, 0, 200 },
        { "a pod List to a sink", GOOD, true, false, false, 0, 200 },
        { "a pod List to a stream", GOOD, false, true, false, 0, 200 },
        { "not asked for gzip", GOOD, false, false, true, 0, 200 },
        { "64 MiB from 64 KiB", BOMB, false, false, false, 4u << 20, EBB_ELIMIT },
        { "64 MiB from 64 KiB to a sink", BOMB, true, false, false, 8u << 20, EBB_ELIMIT },
        /* a stream's owner bounds what it keeps: all of it handed on, in turns */
        { "64 MiB from 64 KiB to a stream", BOMB, false, true, false, 0, 200 },
        { "a broken deflate stream", BROKEN, false, false, false, 0, EBB_EIO },
        { "a broken deflate stream to a sink", BROKEN, true, false, false, 0, EBB_EIO },
        { "cut short", CUT, false, false, false, 0, EBB_EIO },
        { "cut short to a sink", CUT, true, false, false, 0, EBB_EIO },
        { "two gzip members", TWO, false, false, false, 0, 200 },
        { "encoded as br", BR, false, false, false, 0, EBB_EIO },
        /* every byte of the List comes, then the trailer says it is not what was sent */
        { "a CRC that does not match", BAD_CRC, false, false, false, 0, EBB_EIO },
        { "a CRC that does not match to a sink", BAD_CRC, true, false, false, 0, EBB_EIO },
        { "a size that does not match", BAD_SIZE, false, false, false, 0, EBB_EIO },
    };
    (void)state;

    alarm(120);   /* a resumed answer that pauses again loops: fail, do not hang */
    assert_non_null(zeros);
    bomb = gzip_of(zeros, 64u << 20, &bomb_len);
    free(zeros);
    assert_true(bomb_len < (128u << 10));
    assert_true(gz_len < list_len / 5);
    /* a gzip header, then bytes that are no deflate block (type 3 is reserved) */
    broken = malloc(gz_len);
    memcpy(broken, gz, gz_len);
    memset(broken + 10, 0xff, gz_len - 10);
    /* the List's gzip with one bit of its trailer's CRC flipped */
    bad_crc = malloc(gz_len);
    memcpy(bad_crc, gz, gz_len);
    bad_crc[gz_len - 8] ^= 1;
    /* and with one bit of its trailer's size flipped */
    bad_size = malloc(gz_len);
    memcpy(bad_size, gz, gz_len);
    bad_size[gz_len - 1] ^= 1;
    assert_non_null(sink_copy = malloc(700000));
    /* TWO: the list's two halves, each a gzip member */
    half = gzip_of(list, list_len / 2, &half_len);
    two = gzip_of(list + list_len / 2, list_len - list_len / 2, &two_len);
    assert_non_null(two = realloc(two, half_len + two_len));
    memmove(two + half_len, two, two_len);
    memcpy(two, half, half_len);
    two_len += half_len;
    free(half);

    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        struct env e;
        struct ebb_kube_req_opts o = { .method = "GET", .path = "/api/v1/pods", .on_done = on_done_env };
        uint64_t received = 0, decoded = 0;

        gz_answer.body = cases[i].answer == BOMB     ? bomb
                         : cases[i].answer == BROKEN ? broken
                         : cases[i].answer == TWO    ? two
                         : cases[i].answer == BAD_CRC ? bad_crc
                         : cases[i].answer == BAD_SIZE ? bad_size
                                                     : gz;
        gz_answer.encoding = cases[i].answer == BR ? "br" : "gzip";
        /* CUT: the first half of the stream, Content-Length saying so */
        gz_answer.len = cases[i].answer == BOMB  ? bomb_len
                        : cases[i].answer == CUT ? gz_len / 2
                        : cases[i].answer == TWO ? two_len
                                                 : gz_len;
        env_init(&e, h_gzip);
        e.cfg.no_gzip = cases[i].no_gzip;
        env_client(&e, &(struct ebb_kube_opts){ .timeout_ms = 20000 });
        o.ud = &e;
        o.max_bytes = cases[i].max_bytes;
        sink_copy_len = 0;
        if (cases[i].sink || cases[i].stream)
            o.on_data = on_data_copy;
        o.stream = cases[i].stream;
        assert_int_equal(ebb_kube_request(e.k, &o, &e.reqs[0]), 0);
        RUN_UNTIL(&e, e.d[0].calls == 1);
        print_message("# %s: status %d, %s\n", cases[i].what, e.d[0].status, e.d[0].body);
        assert_int_equal(e.d[0].status, cases[i].want);
        assert_int_equal(e.srv.nreq, 1);   /* none of them retried */
        assert_string_equal(e.srv.reqs[0].accept_enc, cases[i].no_gzip ? "" : "gzip");
        ebb_kube_answer_bytes(e.k, &received, &decoded);
        switch (cases[i].answer) {
        case GOOD:
            /* not asked for it, a gzip answer is read as one all the same */
            if (cases[i].sink || cases[i].stream) {
                assert_int_equal(sink_copy_len, list_len);
                assert_memory_equal(sink_copy, list, list_len);
            } else {
                assert_int_equal(e.d[0].len, list_len);   /* d.body keeps only the start */
                assert_memory_equal(e.d[0].body, list, strlen(e.d[0].body));
            }
            assert_int_equal(received, gz_len);
            assert_int_equal(decoded, list_len);
            break;
        case BOMB:
            if (cases[i].stream) {
                assert_int_equal(sink_copy_len, 64u << 20);
                assert_int_equal(decoded, 64u << 20);
                break;
            }
            assert_non_null(strstr(e.d[0].body, "larger than"));
            assert_true(sink_copy_len <= cases[i].max_bytes);
            assert_true(decoded <= cases[i].max_bytes + (1u << 20));
            break;
        case CUT:
            assert_string_equal(e.d[0].body, "the answer ends inside its gzip stream");
            assert_true(sink_copy_len < list_len);
            break;
        case TWO:
            assert_int_equal(e.d[0].len, list_len);
            assert_memory_equal(e.d[0].body, list, strlen(e.d[0].body));
            assert_int_equal(received, two_len);
            break;
        case BR:
            assert_string_equal(e.d[0].body, "the answer is encoded as \"br\", which ebb did not ask for");
            break;
        case BAD_CRC:
        case BAD_SIZE:
            assert_string_equal(e.d[0].body, "the answer's gzip encoding is broken: "
                                "the trailer's CRC or size does not match the data");
            break;
        default:
            assert_non_null(strstr(e.d[0].body, "the answer's gzip encoding is broken: "));
            break;
        }
        env_finish(&e);
    }
    alarm(0);
    free(two);
    free(sink_copy);
    free(bad_crc);
    free(bad_size);
    free(broken);
    free(bomb);
    free(gz);
    free(list);
}

/* ---- exec credential plugins and 401s -------------------------------------------- */

/* 200 to "Bearer good", else a 401 Status as kube-apiserver sends it. */
static void h_auth(struct srv *s, struct conn *c, int n)
{
    if (strcmp(s->reqs[n].auth, "Bearer good") == 0)
        respond(c, s->reqs[n].method[0] == 'P' ? 201 : 200, NULL, "{}");
    else
        respond(c, 401, NULL, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                              "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}");
}

/* A plugin printing, run by run, the tokens of `tokens` (space-separated;
 * the last from then on), counting its runs in DIR/runs. */
static void exec_plugin(char *dir, size_t dirlen, const char *tokens, const char *expiry,
                        struct ebb_kube_exec *x, char **argv)
{
    char path[128], *script;
    FILE *f;

    snprintf(dir, dirlen, "/tmp/ebb-kube-exec-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/plugin", dir);
    assert_true(asprintf(&script,
                         "#!/bin/sh\nd=%s\nn=$(cat $d/runs 2>/dev/null || echo 0); n=$((n+1)); echo $n >$d/runs\n"
                         "set -- %s\ni=1; for t; do [ $i -le $n ] && tok=$t; i=$((i+1)); done\n"
                         "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
                         "\"status\":{\"token\":\"%%s\"%s%s%s}}' $tok\n",
                         dir, tokens, expiry ? ",\"expirationTimestamp\":\"" : "", expiry ? expiry : "",
                         expiry ? "\"" : "") > 0);
    assert_non_null(f = fopen(path, "w"));
    fputs(script, f);
    fclose(f);
    free(script);
    assert_int_equal(chmod(path, 0755), 0);
    argv[0] = strdup(path);
    argv[1] = NULL;
    *x = (struct ebb_kube_exec){ .api_version = "client.authentication.k8s.io/v1", .argv = argv,
                                 .where = "kubeconfig: users[0].user.exec" };
}

static int plugin_runs(const char *dir)
{
    char path[128];
    int n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/runs", dir);
    if ((f = fopen(path, "r")) != NULL) {
        if (fscanf(f, "%d", &n) != 1)
            n = 0;
        fclose(f);
    }
    return n;
}

static void plugin_done(const char *dir, char **argv)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    free(argv[0]);
}

/* The plugin's token is cached; a 401 runs it again and sends the request
 * once more with the new token (a write too: a 401 changed nothing). */
static void test_exec_reauth_on_401(void **state)
{
    struct ebb_kube_exec x;
    char dir[64], *argv[2];
    struct env e;

    exec_plugin(dir, sizeof(dir), "bad good", NULL, &x, argv);
    env_init(&e, h_auth);
    e.cfg.exec = &x;
    env_client(&e, &(struct ebb_kube_opts){ .max_retries = 1 });
    start(&e, 0, "GET", "/api/v1/pods", NULL, false);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, 200);
    assert_int_equal(e.srv.nreq, 2);
    assert_string_equal(e.srv.reqs[0].auth, "Bearer bad");
    assert_string_equal(e.srv.reqs[1].auth, "Bearer good");
    assert_int_equal(plugin_runs(dir), 2);
    /* cached: no expirationTimestamp */
    for (int i = 1; i < 4; i++) {
        start(&e, i, i == 3 ? "POST" : "GET", "/api/v1/nodes", i == 3 ? "{}" : NULL, i == 3);
        RUN_UNTIL(&e, e.d[i].calls == 1);
        assert_int_equal(e.d[i].status, i == 3 ? 201 : 200);
    }
    assert_int_equal(plugin_runs(dir), 2);
    env_finish(&e);
    plugin_done(dir, argv);

    /* a plugin that only gives refused tokens: run again once per
     * request, then the 401 is the answer, with the server's message */
    exec_plugin(dir, sizeof(dir), "bad", NULL, &x, argv);
    env_init(&e, h_auth);
    e.cfg.exec = &x;
    env_client(&e, &(struct ebb_kube_opts){ .max_retries = 1 });
    start(&e, 0, "POST", "/api/v1/namespaces/d/events", "{}", true);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, 401);
    assert_int_equal(e.srv.nreq, 2);
    assert_int_equal(plugin_runs(dir), 2);
    env_finish(&e);
    plugin_done(dir, argv);
}

/* A credential past its expirationTimestamp is not sent: the plugin runs
 * before each request. A plugin that fails fails the request with its
 * message, naming the kubeconfig's field; nothing is sent. */
static void test_exec_expiry_and_failure(void **state)
{
    struct ebb_kube_exec x;
    char dir[64], *argv[2];
    struct env e;

    exec_plugin(dir, sizeof(dir), "good", "2020-01-01T00:00:00Z", &x, argv);
    env_init(&e, h_auth);
    e.cfg.exec = &x;
    env_client(&e, NULL);
    for (int i = 0; i < 3; i++) {
        start(&e, i, "GET", "/api/v1/pods", NULL, false);
        RUN_UNTIL(&e, e.d[i].calls == 1);
        assert_int_equal(e.d[i].status, 200);
    }
    assert_int_equal(plugin_runs(dir), 3);
    assert_null(ebb_kube_cred_error(e.k));
    env_finish(&e);
    plugin_done(dir, argv);

    exec_plugin(dir, sizeof(dir), "bad", NULL, &x, argv);
    free(argv[0]);
    argv[0] = strdup("ebb-no-such-plugin");
    x.install_hint = "see your cloud's documentation";
    env_init(&e, h_auth);
    e.cfg.exec = &x;
    env_client(&e, NULL);
    start(&e, 0, "GET", "/api/v1/pods", NULL, false);
    RUN_UNTIL(&e, e.d[0].calls == 1);
    assert_int_equal(e.d[0].status, EBB_EIO);
    assert_non_null(strstr(e.d[0].body, "kubeconfig: users[0].user.exec: exec plugin ebb-no-such-plugin"));
    assert_non_null(strstr(e.d[0].body, "see your cloud's documentation"));
    assert_int_equal(e.srv.nreq, 0);
    /* what a front end waiting for its first sync reads to stop at once */
    assert_non_null(ebb_kube_cred_error(e.k));
    assert_string_equal(ebb_kube_cred_error(e.k), e.d[0].body);
    env_finish(&e);
    plugin_done(dir, argv);
}

/* Make the plugin in dir take `secs` seconds before it does anything. */
static void slow_plugin(const char *dir, int secs)
{
    char cmd[256];

    snprintf(cmd, sizeof(cmd), "sed -i '1a sleep %d' %s/plugin", secs, dir);
    assert_int_equal(system(cmd), 0);
}

struct ticks {
    struct env *e;
    int n;                 /* ticks while request 0 waited */
};

static void tick_cb(uv_timer_t *t)
{
    struct ticks *tk = t->data;

    if (tk->e->d[0].calls == 0)
        tk->n++;
}

/* The plugin runs off the loop thread: while it takes a second, the loop
 * keeps turning (timers fire: /healthz, leases and watches are served),
 * and the two requests that need its credential wait for one run. A
 * client closed while the plugin runs answers its request at once and
 * ends once the run is over. Fails when the plugin runs on the loop. */
static void test_exec_off_the_loop(void **state)
{
    struct ebb_kube_exec x;
    char dir[64], *argv[2];
    struct env e;
    struct ticks tk = { &e, 0 };
    uv_timer_t tick;

    exec_plugin(dir, sizeof(dir), "good", NULL, &x, argv);
    slow_plugin(dir, 1);
    env_init(&e, h_auth);
    e.cfg.exec = &x;
    env_client(&e, NULL);
    assert_int_equal(uv_timer_init(&e.loop, &tick), 0);
    tick.data = &tk;
    assert_int_equal(uv_timer_start(&tick, tick_cb, 20, 20), 0);
    start(&e, 0, "GET", "/api/v1/pods", NULL, false);
    start(&e, 1, "GET", "/api/v1/nodes", NULL, false);
    RUN_UNTIL(&e, e.d[0].calls == 1 && e.d[1].calls == 1);
    assert_int_equal(e.d[0].status, 200);
    assert_int_equal(e.d[1].status, 200);
    assert_int_equal(plugin_runs(dir), 1);
    assert_int_equal(e.srv.nreq, 2);
    assert_true(tk.n >= 20);   /* about 50 in the plugin's second; 1 when it blocks the loop */
    assert_null(ebb_kube_cred_error(e.k));
    uv_close((uv_handle_t *)&tick, NULL);
    env_finish(&e);
    plugin_done(dir, argv);

    /* closed while the plugin runs */
    exec_plugin(dir, sizeof(dir), "good", NULL, &x, argv);
    slow_plugin(dir, 1);
    env_init(&e, h_auth);
    e.cfg.exec = &x;
    env_client(&e, NULL);
    start(&e, 0, "GET", "/api/v1/pods", NULL, false);
    {
        uint64_t until = uv_hrtime() + 200 * (uint64_t)1000000;
        RUN_UNTIL(&e, uv_hrtime() >= until);
    }
    assert_int_equal(e.d[0].calls, 0);
    ebb_kube_close(e.k, closed_cb, &e);
    assert_int_equal(e.d[0].calls, 1);
    assert_int_equal(e.d[0].status, EBB_ESTATE);
    RUN_UNTIL(&e, e.closed == 1);
    assert_int_equal(plugin_runs(dir), 1);   /* the client outlived the run */
    assert_int_equal(e.srv.nreq, 0);
    env_finish(&e);
    plugin_done(dir, argv);
}

/* How an answer is told: an internal code is never shown as an HTTP
 * status, a Status's message is kept whole. */
static void test_answer_text(void **state)
{
    static const char forbidden[] =
        "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods is forbidden: User "
        "\\\"system:serviceaccount:team-a-long-namespace-name:ebb-descheduler\\\" cannot list resource "
        "\\\"pods\\\" in API group \\\"\\\" at the cluster scope\",\"reason\":\"Forbidden\",\"code\":403}";
    static const struct {
        int status;
        const char *body, *want;
    } cases[] = {
        {403, forbidden, "LIST /api/v1/pods: 403 pods is forbidden: User \"system:serviceaccount:"
                         "team-a-long-namespace-name:ebb-descheduler\" cannot list resource \"pods\" in "
                         "API group \"\" at the cluster scope"},
        {401, "{\"kind\":\"Status\",\"message\":\"Unauthorized\",\"code\":401}", "LIST /api/v1/pods: 401 Unauthorized"},
        {401, "", "LIST /api/v1/pods: 401 Unauthorized"},
        {503, "", "LIST /api/v1/pods: 503 Service Unavailable"},
        {EBB_EIO, "Failed to connect to 127.0.0.1 port 1: Connection refused",
         "LIST /api/v1/pods: Failed to connect to 127.0.0.1 port 1: Connection refused"},
        {EBB_ELIMIT, "the answer is larger than 16 bytes", "LIST /api/v1/pods: the answer is larger than 16 bytes"},
        {EBB_ESTATE, "", "LIST /api/v1/pods: invalid state"},
        {EBB_ENOMEM, NULL, NULL},
    };
    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        char out[1024];
        size_t len = cases[i].body ? strlen(cases[i].body) : 0;

        ebb_kube_answer_text("LIST /api/v1/pods", cases[i].status, cases[i].body, len, out, sizeof(out));
        if (cases[i].want != NULL)
            assert_string_equal(out, cases[i].want);
        if (cases[i].status < 0) {
            /* no number where a status would be */
            char num[16];
            snprintf(num, sizeof(num), ": %d", cases[i].status);
            assert_null(strstr(out, num));
            assert_null(strstr(out, "HTTP"));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_bearer_keepalive),
        cmocka_unit_test(test_post_body),
        cmocka_unit_test(test_stream_chunks),
        cmocka_unit_test(test_stream_open),
        cmocka_unit_test(test_stream_error_status),
        cmocka_unit_test(test_stream_cancel),
        cmocka_unit_test(test_stream_close_from_callback),
        cmocka_unit_test(test_stream_idle_timeout),
        cmocka_unit_test(test_stream_broken_not_retried),
        cmocka_unit_test(test_retry_503),
        cmocka_unit_test(test_retry_429_retry_after),
        cmocka_unit_test(test_write_not_retried),
        cmocka_unit_test(test_retry_transport),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test(test_exec_reauth_on_401),
        cmocka_unit_test(test_exec_expiry_and_failure),
        cmocka_unit_test(test_exec_off_the_loop),
        cmocka_unit_test(test_answer_text),
        cmocka_unit_test(test_cancel_waiting_retry),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_token_rotation),
        cmocka_unit_test(test_write_rate_limit),
        cmocka_unit_test(test_cancel_queued_write),
        cmocka_unit_test(test_cancel_then_free),
        cmocka_unit_test(test_close_inflight),
        cmocka_unit_test(test_close_from_on_done),
        cmocka_unit_test(test_close_idle),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_tls),
        cmocka_unit_test(test_answer_bounds),
        cmocka_unit_test(test_read_batches),
        cmocka_unit_test(test_gzip_answers),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
