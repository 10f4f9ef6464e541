/* A small HTTP/1.1 server: libuv for the sockets, http_parser for the
 * requests (see include/ebb/httpd.h for the contract).
 *
 * Three invariants, each kept at one place:
 *
 *   Probes are always answered (on_connection, drop_for_new): a new
 *   connection at max_connections takes the place of one that holds the
 *   server without using it (idle the longest, not reading its answers the
 *   longest, trickling the head of its request for over HEAD_GRACE_MS),
 *   else a probe slot: EBB_HTTPD_PROBE_SLOTS more connections that answer
 *   GET or HEAD of /healthz, /readyz, /livez (and their subpaths) and
 *   refuse anything else with the API server's 429. With the slots full, a
 *   new connection takes the slot of the oldest whose request is not
 *   complete: a probe sends its request at once, so only more than
 *   EBB_HTTPD_PROBE_SLOTS connections arriving between a probe's connect
 *   and its request keep it out. A probe's answer (up to PROBE_ANSWER_MAX,
 *   on a connection with nothing else queued) is never refused for want
 *   of room in the total.
 *
 *   Every byte queued for a client counts (make_room): answers, stream
 *   chunks written or held, all in c->queued + c->hold.cap and their sum
 *   h->queued, checked against max_queued per stream and
 *   max_total_queued for all before it is queued. Making room ends the
 *   connections that do not read (stalled) or stream, holding the most
 *   first, as the API server ends a watcher that falls behind; an answer
 *   still without room is replaced by 429, a stream write fails (the
 *   stream ends). Over the total only by: status lines, headers and chunk
 *   framing; probe answers as above; one answer larger than the total when
 *   nothing else is queued; the answer of a write past its reservation.
 *
 *   A write is either acted on and answered, or refused and not acted on
 *   (dispatch): a request with side effects (any method but GET, HEAD,
 *   OPTIONS) gets room for its answer reserved (max_body) before its
 *   handler runs, or 429 without the handler; its answer is then never
 *   replaced.
 *
 * Each connection owns one read buffer: libuv reads straight into its free
 * tail and http_parser runs over it. The parser is paused at the end of
 * every message, so a pipelined request stays in the buffer, unparsed,
 * until the answer to the current one is complete; reading goes on
 * meanwhile so a client that hangs up is noticed (the gone callback).
 * Answers are copied into one write request each; a connection is closed
 * only through uv_close, and its memory is freed in the close callback. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <http_parser.h>

#include "ebb/httpd.h"

#define DEFAULT_MAX_BODY (8u << 20)
#define DEFAULT_MAX_QUEUED (16u << 20)
#define DEFAULT_MAX_TOTAL_QUEUED ((size_t)256 << 20)
#define DEFAULT_MAX_CONNECTIONS 256u
#define DEFAULT_MAX_TOTAL_BODY ((size_t)64 << 20)
#define DEFAULT_IDLE_MS 120000u
#define DEFAULT_WRITE_TIMEOUT_MS 30000u
#define DEFAULT_REQUEST_TIMEOUT_MS 60000u
#define READ_CHUNK 65536u
/* A pipelined request is parsed only once the answers before it are down
 * to this: a client that sends and never reads holds one answer, not one
 * per request. */
#define PIPELINE_QUEUED (1u << 20)
/* Bytes read ahead, unparsed, while a request is answered (or held): past
 * this, reading stops until the answer is done. */
#define PENDING_MAX (256u << 10)
/* A request head still not complete after this, at max_connections, gives
 * its place to a new connection: a client sends its head at once. */
#define HEAD_GRACE_MS 1000u
/* A probe slot: the most read before its request is complete, and how
 * long it may wait for it. */
#define PROBE_HEAD_MAX 8192u
#define PROBE_TIMEOUT_MS 5000u
/* A probe's answer up to this is never refused for want of room. */
#define PROBE_ANSWER_MAX (64u << 10)
/* Chunk framing around held stream bytes ("%zx\r\n" ... "\r\n"). */
#define CHUNK_FRAME 24u

/* ---- small growable buffers ------------------------------------------------ */

struct buf {
    char *p;
    size_t n, cap;
};

/* Append n bytes and keep a NUL after them. */
static int buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        char *p;
        while (cap < b->n + n + 1)
            cap *= 2;
        if ((p = realloc(b->p, cap)) == NULL)
            return EBB_ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    if (n > 0)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static int buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int buf_addf(struct buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return EBB_EINVAL;
    return buf_add(b, tmp, (size_t)n);
}

static void buf_reset(struct buf *b)
{
    b->n = 0;
    if (b->p != NULL)
        b->p[0] = '\0';
}

static void buf_free(struct buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* Offsets of NUL-separated strings inside a buf ("name\0value\0..."). */
struct offs {
    size_t *v;
    size_t n, cap;
};

static int offs_push(struct offs *o, size_t at)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 32;
        size_t *v = realloc(o->v, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = at;
    return 0;
}

/* ---- the structures ------------------------------------------------------------ */

enum { REQ_READING = 0, REQ_PENDING, REQ_STREAMING, REQ_DONE };

struct conn;

struct ebb_http_req {
    struct conn *c;
    int state;
    char method[16];
    struct buf url, path, hdrs, query, body, out;
    struct offs hoff, qoff;      /* hdrs: name, value, ...; query: key, value, ... */
    const char *query_string;    /* into url */
    int last;                    /* 1 after a header field callback, 2 after a value */
    bool keep_alive, head, too_large, too_busy;
    bool probe;                  /* GET or HEAD of a probe path */
    ebb_http_gone_fn gone;
    void *gone_ud;
};

struct conn {
    uv_tcp_t tcp;                /* handle.data = this */
    uv_shutdown_t shutdown;
    struct ebb_httpd *h;
    struct conn *prev, *next;
    http_parser parser;
    struct ebb_http_req req;
    char *in;
    size_t in_off, in_len, in_cap;
    size_t queued;               /* bytes handed to uv_write, not written yet */
    size_t queue_seen;           /* libuv's write queue at the last look */
    uint64_t last_active;
    uint64_t last_written;       /* when the client last took bytes (or the first queued) */
    bool stalled;                /* took nothing since the sweep before */
    uint64_t reading_since;      /* the first byte of the request being read; 0: none */
    bool head_done;              /* the head of the request being read is complete */
    bool probe_slot;             /* taken past max_connections: probes only */
    uint64_t accepted;           /* uv_now when accepted */
    struct buf hold;             /* stream bytes held (ebb_http_stream_hold), counted by cap */
    size_t reserved;             /* room reserved for the answer of a write */
    bool closing, shutting, in_process, in_handler;
    bool held;                   /* parsing waits for queued answers to drain */
    bool reading;                /* uv_read_start is on */
    char peer[64];
};

struct ebb_httpd {
    uv_tcp_t listener;
    uv_timer_t sweep;
    uv_loop_t *loop;
    struct ebb_httpd_opts opts;
    char *host;
    int port;
    struct conn *conns;
    size_t nconns;
    size_t closing_conns;        /* of nconns, closed and waiting for their close callback */
    size_t queued;               /* sum of the connections' queued and held bytes */
    size_t reserved;             /* sum of the connections' reservations */
    size_t probe_conns;          /* open (not closing) connections in a probe slot */
    size_t bodies;               /* memory of the request bodies being read or answered */
    uint64_t refused, dropped;   /* connections over the limit; slow or stuck ones dropped */
    uint64_t busy;               /* 429s: bodies or answers over the totals */
    uint64_t probes;             /* connections taken in a probe slot */
    int open_handles;            /* listener, sweep, connections */
    bool closing, sweep_closed;
    void (*close_cb)(void *ud);
    void *close_ud;
};

static const http_parser_settings settings;

static void process_input(struct conn *c);

/* ---- closing ------------------------------------------------------------------------ */

static void server_maybe_freed(struct ebb_httpd *h)
{
    if (!h->closing || h->open_handles > 0)
        return;
    if (h->close_cb != NULL)
        h->close_cb(h->close_ud);
    free(h->host);
    free(h);
}

static void req_free(struct ebb_http_req *r)
{
    buf_free(&r->url);
    buf_free(&r->path);
    buf_free(&r->hdrs);
    buf_free(&r->query);
    buf_free(&r->body);
    buf_free(&r->out);
    free(r->hoff.v);
    free(r->qoff.v);
}

/* A request body is kept only while its request is read and answered:
 * one large upload does not pin its memory for the connection's life. */
static void body_release(struct conn *c)
{
    c->h->bodies -= c->req.body.cap;
    buf_free(&c->req.body);
}

static void on_handle_closed(uv_handle_t *hd)
{
    struct ebb_httpd *h = hd->data;
    h->open_handles--;
    server_maybe_freed(h);
}

static void on_refused_closed(uv_handle_t *hd)
{
    free(hd->data);
}

static void on_conn_closed(uv_handle_t *hd)
{
    struct conn *c = hd->data;
    struct ebb_httpd *h = c->h;
    struct ebb_http_req *r = &c->req;

    /* the connection died under a request (conn_lost): its owner is told
     * here, from the loop, never from inside a call it made */
    if (r->state == REQ_PENDING || r->state == REQ_STREAMING) {
        ebb_http_gone_fn fn = r->gone;
        r->state = REQ_DONE;
        r->gone = NULL;
        if (fn != NULL)
            fn(r, r->gone_ud);
    }
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    h->nconns--;
    h->closing_conns--;
    h->open_handles--;
    body_release(c);
    req_free(&c->req);
    free(c->in);
    free(c);
    if (h->closing && h->nconns == 0 && !h->sweep_closed) {
        h->sweep_closed = true;
        uv_close((uv_handle_t *)&h->sweep, on_handle_closed);
    }
    server_maybe_freed(h);
}

static void reserve_release(struct conn *c)
{
    c->h->reserved -= c->reserved;
    c->reserved = 0;
}

static void conn_close(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    c->h->closing_conns++;
    if (c->probe_slot)
        c->h->probe_conns--;
    /* its unwritten answers are dropped now: count them out at once (their
     * write callbacks, cancelled, come later) */
    c->h->queued -= c->queued + c->hold.cap;
    c->queued = 0;
    buf_free(&c->hold);
    reserve_release(c);
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_shutdown(uv_shutdown_t *s, int status)
{
    (void)status;
    conn_close(s->data);
}

/* Close once everything queued is written. */
static void conn_finish(struct conn *c)
{
    if (c->closing || c->shutting)
        return;
    c->shutdown.data = c;
    if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
        conn_close(c);
    else
        c->shutting = true;
}

/* The connection died under a request: close; its owner is told from the
 * close callback (on_conn_closed), so that dropping a connection to make
 * room never runs another request's gone callback inside a call. Until
 * then the request stays valid and every answer to it fails. */
static void conn_lost(struct conn *c)
{
    conn_close(c);
}

/* ---- writing ---------------------------------------------------------------------------- */

struct wreq {
    uv_write_t w;
    struct conn *c;
    size_t len;                  /* counted in c->queued until written */
    char *own;                   /* a held buffer written with it (freed after); NULL: none */
    char data[];
};

static void conn_resume(struct conn *c);
static void conn_read_on(struct conn *c);

static void on_written(uv_write_t *w, int status)
{
    struct wreq *q = (struct wreq *)w;
    struct conn *c = q->c;
    size_t len = q->len;

    free(q->own);
    free(q);
    if (c->closing)
        return;          /* counted out when it closed */
    c->queued -= len;
    c->h->queued -= len;
    if (status < 0) {
        conn_lost(c);
        return;
    }
    c->last_written = uv_now(c->h->loop);
    if (c->queued == 0)
        c->last_active = c->last_written;   /* idle from the last byte taken */
    if (c->held && c->queued <= PIPELINE_QUEUED)
        conn_resume(c);
}

/* What a connection holds for its client: handed to libuv and not
 * written yet, plus what is held for its stream. */
static size_t conn_unsent(const struct conn *c)
{
    return c->queued + c->hold.cap;
}

/* Room for `more` bytes in the total of unwritten answers: the one place
 * every byte queued for a client is weighed before it is queued (answers,
 * stream writes and holds, the reservation of a write). Over
 * max_total_queued, the connections that do not read their answers
 * (stalled: nothing taken since the sweep before) or, with `streams`,
 * that stream, are ended, the one that holds the most first, as the API
 * server ends a watcher that falls behind. false, and nothing ended for
 * it, when the one that holds the most is `self` (may be NULL), or when
 * none can be ended. */
static bool make_room(struct ebb_httpd *h, struct conn *self, size_t more, bool streams)
{
    while (h->queued + h->reserved + more > h->opts.max_total_queued) {
        struct conn *worst = NULL;
        for (struct conn *c = h->conns; c != NULL; c = c->next)
            if (!c->closing && conn_unsent(c) > 0 &&
                (c->stalled || (streams && c->req.state == REQ_STREAMING)) &&
                (worst == NULL || conn_unsent(c) > conn_unsent(worst)))
                worst = c;
        if (worst == NULL || worst == self)
            return false;
        h->dropped++;
        conn_lost(worst);
    }
    return true;
}

/* Queue a..., b..., t... as one write. */
static int conn_write(struct conn *c, const char *a, size_t an, const char *b, size_t bn,
                      const char *t, size_t tn)
{
    struct wreq *q;
    uv_buf_t ub;

    if (c->closing)
        return EBB_EIO;
    if ((q = malloc(sizeof(*q) + an + bn + tn)) == NULL) {
        conn_close(c);
        return EBB_ENOMEM;
    }
    q->c = c;
    q->own = NULL;
    q->len = an + bn + tn;
    if (an)
        memcpy(q->data, a, an);
    if (bn)
        memcpy(q->data + an, b, bn);
    if (tn)
        memcpy(q->data + an + bn, t, tn);
    ub = uv_buf_init(q->data, (unsigned)(an + bn + tn));
    if (uv_write(&q->w, (uv_stream_t *)&c->tcp, &ub, 1, on_written) != 0) {
        free(q);
        conn_close(c);
        return EBB_EIO;
    }
    if (c->queued == 0) {
        c->last_written = uv_now(c->h->loop);   /* the slow-reader clock starts */
        c->queue_seen = SIZE_MAX;               /* the next sweep sees progress */
    }
    c->queued += q->len;
    c->h->queued += q->len;
    return 0;
}

/* Append to what is held for the stream (ebb_http_stream_hold), the held
 * buffer counted by its capacity. EBB_ELIMIT: the stream already holds
 * more than max_queued, or the total has no room (make_room). */
static int hold_add(struct conn *c, const char *data, size_t len)
{
    struct ebb_httpd *h = c->h;
    size_t need = c->hold.n + len + 1, cap = c->hold.cap;
    char *p;

    if (conn_unsent(c) > h->opts.max_queued)
        return EBB_ELIMIT;
    if (need > cap) {
        cap = cap < 4096 ? 4096 : cap;
        while (cap < need)
            cap *= 2;
        if (!make_room(h, c, cap - c->hold.cap + CHUNK_FRAME, true))
            return EBB_ELIMIT;
        if ((p = realloc(c->hold.p, cap)) == NULL)
            return EBB_ENOMEM;
        h->queued += cap - c->hold.cap;
        c->hold.p = p;
        c->hold.cap = cap;
    }
    memcpy(c->hold.p + c->hold.n, data, len);
    c->hold.n += len;
    return 0;
}

/* Write what is held as one chunk. The buffer goes to libuv as it is (no
 * copy); its counted capacity moves from the hold to c->queued. */
static int hold_flush(struct conn *c)
{
    struct wreq *q;
    uv_buf_t ub[3];
    size_t cap = c->hold.cap;
    int n;

    if (c->hold.n == 0)
        return 0;
    if (c->closing)
        return EBB_EIO;
    if ((q = malloc(sizeof(*q) + CHUNK_FRAME)) == NULL) {
        conn_close(c);
        return EBB_ENOMEM;
    }
    n = snprintf(q->data, CHUNK_FRAME, "%zx\r\n", c->hold.n);
    memcpy(q->data + n, "\r\n", 2);
    q->c = c;
    q->own = c->hold.p;
    q->len = (size_t)n + 2 + cap;
    ub[0] = uv_buf_init(q->data, (unsigned)n);
    ub[1] = uv_buf_init(c->hold.p, (unsigned)c->hold.n);
    ub[2] = uv_buf_init(q->data + n, 2);
    c->h->queued -= cap;
    c->hold.p = NULL;
    c->hold.n = c->hold.cap = 0;
    if (uv_write(&q->w, (uv_stream_t *)&c->tcp, ub, 3, on_written) != 0) {
        free(q->own);
        free(q);
        conn_close(c);
        return EBB_EIO;
    }
    if (c->queued == 0) {
        c->last_written = uv_now(c->h->loop);
        c->queue_seen = SIZE_MAX;
    }
    c->queued += q->len;
    c->h->queued += q->len;
    return 0;
}

const char *ebb_http_status_text(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
    }
}

/* Status line and headers into r->out's front... built in a fresh buf. */
static int head_build(struct ebb_http_req *r, struct buf *b, int status, const char *ctype,
                      bool chunked, size_t len)
{
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    int rc;

    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    rc = buf_addf(b, "HTTP/1.1 %d %s\r\nDate: %s\r\n", status, ebb_http_status_text(status), date);
    if (rc == 0 && ctype != NULL)
        rc = buf_addf(b, "Content-Type: %s\r\n", ctype);
    if (rc == 0)
        rc = chunked ? buf_addf(b, "Transfer-Encoding: chunked\r\n")
                     : buf_addf(b, "Content-Length: %zu\r\n", len);
    if (rc == 0 && r->out.n > 0)
        rc = buf_add(b, r->out.p, r->out.n);
    if (rc == 0 && !r->keep_alive)
        rc = buf_addf(b, "Connection: close\r\n");
    if (rc == 0)
        rc = buf_add(b, "\r\n", 2);
    return rc;
}

/* ---- the request lifecycle -------------------------------------------------------------- */

static void req_reset(struct ebb_http_req *r)
{
    r->state = REQ_READING;
    r->method[0] = '\0';
    buf_reset(&r->url);
    buf_reset(&r->path);
    buf_reset(&r->hdrs);
    buf_reset(&r->query);
    buf_reset(&r->body);
    buf_reset(&r->out);
    r->hoff.n = r->qoff.n = 0;
    r->query_string = "";
    r->last = 0;
    r->keep_alive = r->head = r->too_large = r->too_busy = r->probe = false;
    r->gone = NULL;
    r->gone_ud = NULL;
}

/* The answer is complete: go on with the next request, or close. */
static void finish_request(struct conn *c)
{
    bool keep = c->req.keep_alive;

    body_release(c);
    reserve_release(c);
    req_reset(&c->req);
    c->last_active = uv_now(c->h->loop);   /* idle from the end of the answer */
    if (c->closing)
        return;
    if (!keep)
        conn_finish(c);
}

static void request_done(struct conn *c)
{
    if (c->in_handler)
        return;            /* dispatch() finishes when the handler returns */
    finish_request(c);
    if (!c->closing && !c->shutting) {
        process_input(c);
        conn_read_on(c);
    }
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Percent-decode [s, s+n) onto b, then a NUL separator when `sep`. '+'
 * means a space in queries only. */
static int decode_into(struct buf *b, const char *s, size_t n, bool plus, bool sep)
{
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '%') {
            int hi, lo;
            if (i + 2 >= n || (hi = hexval(s[i + 1])) < 0 || (lo = hexval(s[i + 2])) < 0)
                return EBB_EPARSE;
            ch = (char)(hi * 16 + lo);
            i += 2;
        } else if (ch == '+' && plus) {
            ch = ' ';
        }
        if (buf_add(b, &ch, 1) != 0)
            return EBB_ENOMEM;
    }
    return sep ? buf_add(b, "", 1) : 0;
}

/* Split the URL (http_parser_parse_url) and decode path and query. */
static int finalize(struct ebb_http_req *r)
{
    struct http_parser_url u;
    const char *q;
    size_t qn, i, start;

    http_parser_url_init(&u);
    if (r->url.n == 0 || http_parser_parse_url(r->url.p, r->url.n, 0, &u) != 0)
        return EBB_EPARSE;
    if (!(u.field_set & (1 << UF_PATH)))
        return EBB_EPARSE;
    if (decode_into(&r->path, r->url.p + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len,
                    false, false) != 0 ||
        r->path.n == 0 || memchr(r->path.p, '\0', r->path.n) != NULL)
        return EBB_EPARSE;
    if (!(u.field_set & (1 << UF_QUERY)))
        return 0;
    q = r->url.p + u.field_data[UF_QUERY].off;
    qn = u.field_data[UF_QUERY].len;
    /* the query string stays raw in url: terminate it there */
    r->url.p[u.field_data[UF_QUERY].off + qn] = '\0';
    r->query_string = q;
    for (i = 0, start = 0; i <= qn; i++) {
        if (i < qn && q[i] != '&')
            continue;
        if (i > start) {
            const char *kv = q + start, *eq = memchr(kv, '=', i - start);
            size_t kn = eq ? (size_t)(eq - kv) : i - start;
            if (offs_push(&r->qoff, r->query.n) != 0 ||
                decode_into(&r->query, kv, kn, true, true) != 0 ||
                offs_push(&r->qoff, r->query.n) != 0 ||
                decode_into(&r->query, eq ? eq + 1 : kv + kn, eq ? i - start - kn - 1 : 0, true,
                            true) != 0)
                return EBB_EPARSE;
        }
        start = i + 1;
    }
    return 0;
}

/* The API server's max-in-flight answer. */
static const char TOO_MANY[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"Too many requests, please try again later.\",\"reason\":\"TooManyRequests\","
    "\"details\":{\"retryAfterSeconds\":1},\"code\":429}";

/* Answer now without the handler (a request we cannot parse). */
static void respond_error(struct conn *c, int status, const char *ctype, const char *msg)
{
    struct ebb_http_req *r = &c->req;

    r->state = REQ_PENDING;
    r->keep_alive = false;
    buf_reset(&r->out);
    ebb_http_respond(r, status, ctype, msg, strlen(msg));
}

/* The API server's max-in-flight 429, now, without the handler; the
 * connection closes after it. */
static void respond_busy(struct conn *c)
{
    struct ebb_http_req *r = &c->req;

    c->h->busy++;
    r->state = REQ_PENDING;
    r->keep_alive = false;
    buf_reset(&r->out);
    ebb_http_add_header(r, "Retry-After", "1");
    ebb_http_respond(r, 429, "application/json", TOO_MANY, sizeof(TOO_MANY) - 1);
}

/* /healthz, /readyz, /livez and below them ("/livez/ping"): what kubelets
 * and load balancers probe. */
static bool probe_path(const char *path)
{
    static const char *const probes[] = { "/healthz", "/readyz", "/livez" };

    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        size_t n = strlen(probes[i]);
        if (strncmp(path, probes[i], n) == 0 && (path[n] == '\0' || path[n] == '/'))
            return true;
    }
    return false;
}

/* A request that may change something: every method but GET, HEAD and
 * OPTIONS. */
static bool is_write(const http_parser *p)
{
    return p->method != HTTP_GET && p->method != HTTP_HEAD && p->method != HTTP_OPTIONS;
}

static void dispatch(struct conn *c)
{
    struct ebb_http_req *r = &c->req;
    struct ebb_httpd *h = c->h;

    c->in_handler = true;
    if (finalize(r) != 0) {
        respond_error(c, 400, "text/plain; charset=utf-8", "400 Bad Request: malformed URL\n");
        c->in_handler = false;
        finish_request(c);
        return;
    }
    r->probe = (c->parser.method == HTTP_GET || c->parser.method == HTTP_HEAD) &&
               probe_path(r->path.p);
    if (c->probe_slot) {
        /* past max_connections: a probe is answered, then the slot is free */
        r->keep_alive = false;
        if (!r->probe) {
            respond_busy(c);
            c->in_handler = false;
            finish_request(c);
            return;
        }
    }
    if (is_write(&c->parser)) {
        /* the answer is decided before anything is changed: room for it is
         * reserved now, or the write is refused and its handler not run */
        size_t want = h->opts.max_body;
        if (!make_room(h, c, want, true)) {
            respond_busy(c);
            c->in_handler = false;
            finish_request(c);
            return;
        }
        c->reserved = want;
        h->reserved += want;
    }
    r->state = REQ_PENDING;
    h->opts.handler(r, h->opts.ud);
    c->in_handler = false;
    if (r->state == REQ_DONE)
        finish_request(c);
}

/* Parse what is buffered, one message at a time. */
static void process_input(struct conn *c)
{
    if (c->in_process || c->closing)
        return;
    c->in_process = true;
    while (!c->closing && !c->shutting && c->req.state == REQ_READING &&
           c->in_off < c->in_len) {
        size_t n;
        if (c->queued > PIPELINE_QUEUED) {
            c->held = true;     /* on_written goes on once the client reads */
            break;
        }
        n = http_parser_execute(&c->parser, &settings, c->in + c->in_off, c->in_len - c->in_off);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);

        c->in_off += n;
        if (e == HPE_PAUSED) {
            http_parser_pause(&c->parser, 0);
            if (c->parser.upgrade)
                c->req.keep_alive = false;   /* no protocol switch here */
            dispatch(c);
            continue;
        }
        if (e != HPE_OK) {
            bool big = c->req.too_large, busy = c->req.too_busy;
            c->in_off = c->in_len;
            c->in_handler = true;
            if (busy) {
                respond_busy(c);
            } else if (big) {
                /* as the API server words it, for Kubernetes clients */
                char st[300];
                snprintf(st, sizeof(st), "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                         "\"status\":\"Failure\",\"message\":\"Request entity too large: limit is %zu\","
                         "\"reason\":\"RequestEntityTooLarge\",\"code\":413}", c->h->opts.max_body);
                respond_error(c, 413, "application/json", st);
            } else
                respond_error(c, 400, "text/plain; charset=utf-8", "400 Bad Request\n");
            c->in_handler = false;
            finish_request(c);
            break;
        }
    }
    if (c->in_off == c->in_len) {
        c->in_off = c->in_len = 0;
        if (c->in_cap > 2 * READ_CHUNK) {
            free(c->in);        /* a large read-ahead is not kept */
            c->in = NULL;
            c->in_cap = 0;
        }
    } else if (c->in_off > 0 && c->req.state == REQ_READING) {
        memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
        c->in_len -= c->in_off;
        c->in_off = 0;
    }
    c->in_process = false;
}

/* ---- http_parser callbacks ---------------------------------------------------------------- */

static int on_message_begin(http_parser *p)
{
    struct conn *c = p->data;
    body_release(c);
    req_reset(&c->req);
    c->reading_since = uv_now(c->h->loop);
    c->head_done = false;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    return buf_add(&c->req.url, at, len) == 0 ? 0 : -1;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    struct ebb_http_req *r = &((struct conn *)p->data)->req;

    if (r->last != 1) {
        if ((r->last == 2 && buf_add(&r->hdrs, "", 1) != 0) ||
            offs_push(&r->hoff, r->hdrs.n) != 0)
            return -1;
        r->last = 1;
    }
    return buf_add(&r->hdrs, at, len) == 0 ? 0 : -1;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    struct ebb_http_req *r = &((struct conn *)p->data)->req;

    if (r->last != 2) {
        if (buf_add(&r->hdrs, "", 1) != 0 || offs_push(&r->hoff, r->hdrs.n) != 0)
            return -1;
        r->last = 2;
    }
    return buf_add(&r->hdrs, at, len) == 0 ? 0 : -1;
}

/* Give the body `cap` bytes of room, within max_total_body for all bodies
 * held at once (too_busy past it). */
static int body_grow(struct conn *c, size_t cap)
{
    struct ebb_httpd *h = c->h;
    struct buf *b = &c->req.body;
    char *p;

    if (h->bodies - b->cap + cap > h->opts.max_total_body) {
        c->req.too_busy = true;
        return EBB_ELIMIT;
    }
    if ((p = realloc(b->p, cap)) == NULL)
        return EBB_ENOMEM;
    h->bodies = h->bodies - b->cap + cap;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    struct conn *c = p->data;
    struct ebb_http_req *r = &c->req;
    const char *expect;

    if (r->last == 1) {         /* a field without a value: the value is "" */
        if (buf_add(&r->hdrs, "", 1) != 0 || offs_push(&r->hoff, r->hdrs.n) != 0)
            return -1;
    }
    if (r->last != 0 && buf_add(&r->hdrs, "", 1) != 0)
        return -1;
    r->last = 0;
    c->head_done = true;
    snprintf(r->method, sizeof(r->method), "%s", http_method_str((enum http_method)p->method));
    r->head = p->method == HTTP_HEAD;
    r->keep_alive = http_should_keep_alive(p) != 0;
    if (c->probe_slot && ((p->method != HTTP_GET && p->method != HTTP_HEAD) ||
                          (p->flags & F_CHUNKED) ||
                          ((p->flags & F_CONTENTLENGTH) && p->content_length > 0))) {
        r->too_busy = true;     /* a probe slot reads no body: 429 */
        return -1;
    }
    if ((p->flags & F_CONTENTLENGTH) && p->content_length > c->h->opts.max_body) {
        r->too_large = true;
        return -1;
    }
    /* a declared length is taken whole, or refused before a byte is read */
    if ((p->flags & F_CONTENTLENGTH) && p->content_length > 0 &&
        body_grow(c, (size_t)p->content_length + 1) != 0)
        return -1;
    expect = ebb_http_req_header(r, "Expect");
    if (expect != NULL && strcasecmp(expect, "100-continue") == 0)
        conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25, NULL, 0, NULL, 0);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    struct ebb_http_req *r = &c->req;
    size_t need = r->body.n + len + 1, cap;

    if (r->body.n + len > c->h->opts.max_body) {
        r->too_large = true;
        return -1;
    }
    if (need > r->body.cap) {   /* a chunked body: doubling, at most max_body */
        cap = r->body.cap < 128 ? 128 : r->body.cap;
        while (cap < need)
            cap *= 2;
        cap = cap > c->h->opts.max_body + 1 ? c->h->opts.max_body + 1 : cap;
        if (body_grow(c, cap) != 0)
            return -1;
    }
    return buf_add(&r->body, at, len) == 0 ? 0 : -1;
}

static int on_message_complete(http_parser *p)
{
    struct conn *c = p->data;

    /* stop here: the next pipelined request waits for this answer */
    c->reading_since = 0;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ---- sockets ------------------------------------------------------------------------------------ */

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *b)
{
    struct conn *c = hd->data;

    (void)suggested;
    if (c->in_cap - c->in_len < READ_CHUNK / 4) {
        size_t cap = c->in_cap ? c->in_cap * 2 : READ_CHUNK;
        char *p;
        while (cap - c->in_len < READ_CHUNK / 4)
            cap *= 2;
        if ((p = realloc(c->in, cap)) == NULL) {
            *b = uv_buf_init(NULL, 0);
            return;
        }
        c->in = p;
        c->in_cap = cap;
    }
    *b = uv_buf_init(c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct conn *c = s->data;
    struct ebb_httpd *h = c->h;

    (void)b;
    if (c->closing)
        return;
    if (nread < 0) {
        if (nread == UV_EOF && c->shutting) {
            uv_read_stop(s);    /* the answer is still being written */
            return;
        }
        conn_lost(c);
        return;
    }
    if (nread == 0 || c->shutting)
        return;
    c->in_len += (size_t)nread;
    c->last_active = uv_now(h->loop);
    if (c->probe_slot && c->req.state == REQ_READING && c->in_len - c->in_off > PROBE_HEAD_MAX) {
        h->dropped++;           /* a probe slot is for a probe's few hundred bytes */
        conn_close(c);
        return;
    }
    if ((c->req.state != REQ_READING || c->held) && c->in_len - c->in_off > PENDING_MAX) {
        uv_read_stop(s);        /* sends ahead of its answers: wait for them */
        c->reading = false;
        return;
    }
    process_input(c);
}

/* Read again once what was read ahead is parsed. */
static void conn_read_on(struct conn *c)
{
    if (!c->reading && !c->closing && !c->shutting && !c->held && c->req.state == REQ_READING &&
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
}

/* The client took enough of its answers: parse (and read) on. */
static void conn_resume(struct conn *c)
{
    c->held = false;
    process_input(c);
    conn_read_on(c);
}

/* At the connection limit, a new connection takes the place of one that
 * holds the server without using it: the one idle the longest between
 * requests, else the one that has not read its answers the longest
 * (stalled, or held with its pipeline waiting), else the one that has
 * trickled the head of its request the longest (over HEAD_GRACE_MS):
 * neither idle clients, slow readers nor slowloris hold the server.
 * false: all are busy with a request (the new one may take a probe slot). */
static bool drop_for_new(struct ebb_httpd *h)
{
    struct conn *idle = NULL, *slow = NULL, *trickle = NULL;
    uint64_t now = uv_now(h->loop);

    for (struct conn *c = h->conns; c != NULL; c = c->next) {
        if (c->closing || c->in_handler || c->probe_slot)
            continue;
        if (!c->shutting && c->req.state == REQ_READING && c->reading_since == 0 && c->queued == 0 &&
            c->in_off == c->in_len) {
            if (idle == NULL || c->last_active < idle->last_active)
                idle = c;
        } else if (c->queued > 0 && (c->stalled || c->held)) {
            if (slow == NULL || c->last_written < slow->last_written)
                slow = c;
        } else if (!c->shutting && c->req.state == REQ_READING && c->reading_since != 0 &&
                   !c->head_done && now - c->reading_since >= HEAD_GRACE_MS) {
            if (trickle == NULL || c->reading_since < trickle->reading_since)
                trickle = c;
        }
    }
    if (idle == NULL && slow == NULL && trickle == NULL)
        return false;
    h->dropped++;
    if (idle != NULL)
        conn_close(idle);
    else if (slow != NULL)
        conn_lost(slow);
    else
        conn_close(trickle);
    return true;
}

/* The probe slots are full: a new connection takes the slot of the oldest
 * whose request is not complete (a probe sends its request at once).
 * false: every slot holds a probe being answered. */
static bool drop_probe_for_new(struct ebb_httpd *h)
{
    struct conn *oldest = NULL;

    for (struct conn *c = h->conns; c != NULL; c = c->next)
        if (c->probe_slot && !c->closing && !c->in_handler && c->req.state == REQ_READING &&
            (oldest == NULL || c->accepted < oldest->accepted))
            oldest = c;
    if (oldest == NULL)
        return false;
    h->dropped++;
    conn_close(oldest);
    return true;
}

static void on_connection(uv_stream_t *server, int status)
{
    struct ebb_httpd *h = server->data;
    struct conn *c;
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    bool slot = false;

    if (status < 0 || h->closing)
        return;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return;
    if (h->nconns - h->closing_conns - h->probe_conns >= h->opts.max_connections &&
        !drop_for_new(h)) {
        /* at the limit, every connection busy with a request: a probe slot */
        slot = h->probe_conns < EBB_HTTPD_PROBE_SLOTS || drop_probe_for_new(h);
    }
    if (!slot && h->nconns - h->closing_conns - h->probe_conns >= h->opts.max_connections) {
        /* no slot either (each answers a probe): taken off the backlog and closed */
        h->refused++;
        if (uv_tcp_init(h->loop, &c->tcp) != 0) {
            free(c);
            return;
        }
        c->tcp.data = c;
        uv_accept(server, (uv_stream_t *)&c->tcp);
        uv_close((uv_handle_t *)&c->tcp, on_refused_closed);
        return;
    }
    c->h = h;
    if (uv_tcp_init(h->loop, &c->tcp) != 0) {
        free(c);
        return;
    }
    c->tcp.data = c;
    c->next = h->conns;
    if (h->conns != NULL)
        h->conns->prev = c;
    h->conns = c;
    h->nconns++;
    h->open_handles++;
    if (slot) {
        c->probe_slot = true;
        h->probe_conns++;
        h->probes++;
    }
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    req_reset(&c->req);
    c->req.c = c;
    c->last_active = c->accepted = uv_now(h->loop);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        char ip[INET6_ADDRSTRLEN] = "";
        int port;
        if (ss.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof(ip));
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
            snprintf(c->peer, sizeof(c->peer), "[%s]:%d", ip, port);
        } else {
            uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof(ip));
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
            snprintf(c->peer, sizeof(c->peer), "%s:%d", ip, port);
        }
    }
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        conn_close(c);
    else
        c->reading = true;
}

/* Close connections idle between requests, sending a request too slowly,
 * or not reading what they were sent. */
static void on_sweep(uv_timer_t *t)
{
    struct ebb_httpd *h = t->data;
    uint64_t now = uv_now(h->loop);

    for (struct conn *c = h->conns; c != NULL; c = c->next) {
        size_t q;
        if (c->closing)
            continue;
        /* libuv's queue shrinks as the client takes bytes, in the middle of
         * a long answer too */
        q = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
        c->stalled = c->queued > 0 && q >= c->queue_seen;
        if (q < c->queue_seen)
            c->last_written = now;
        c->queue_seen = q;
        if (c->queued > 0 && now - c->last_written >= h->opts.write_timeout_ms) {
            h->dropped++;           /* a slow reader: nothing taken for that long */
            conn_lost(c);
        } else if (c->shutting) {
            continue;
        } else if (c->req.state == REQ_READING && c->reading_since != 0 &&
                   now - c->reading_since >= h->opts.request_timeout_ms) {
            h->dropped++;           /* trickles a request in: a slow sender */
            conn_close(c);
        } else if (c->probe_slot && c->req.state == REQ_READING &&
                   now - c->accepted >= PROBE_TIMEOUT_MS) {
            h->dropped++;           /* a probe slot waits for a probe, not for ever */
            conn_close(c);
        } else if (c->req.state == REQ_READING && c->queued == 0 &&
                   now - c->last_active >= h->opts.idle_timeout_ms) {
            conn_close(c);
        }
    }
    make_room(h, NULL, 0, false);   /* one answer larger than the total may be read on */
}

/* Closing, connections still flushing after CLOSE_GRACE_MS (a client that
 * does not read): close them anyway. */
#define CLOSE_GRACE_MS 2000

static void on_close_deadline(uv_timer_t *t)
{
    struct ebb_httpd *h = t->data;

    for (struct conn *c = h->conns; c != NULL; c = c->next)
        conn_close(c);
    if (!h->sweep_closed) {
        h->sweep_closed = true;
        uv_close((uv_handle_t *)&h->sweep, on_handle_closed);
    }
}

int ebb_httpd_create(uv_loop_t *loop, const struct ebb_httpd_opts *opts, struct ebb_httpd **out,
                     struct ebb_error *err)
{
    struct ebb_httpd *h;
    struct sockaddr_storage ss;
    const char *host;
    int rc, len;
    unsigned every;

    if (loop == NULL || opts == NULL || out == NULL || opts->handler == NULL)
        return ebb_error_set(err, EBB_EINVAL, NULL, 0, NULL, "httpd: missing loop or handler");
    if (opts->port < 0 || opts->port > 65535)
        return ebb_error_set(err, EBB_EINVAL, NULL, 0, NULL, "port %d is not 0-65535",
                             opts->port);
    host = opts->host ? opts->host : "127.0.0.1";
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    memset(&ss, 0, sizeof(ss));
    if (uv_ip4_addr(host, opts->port, (struct sockaddr_in *)&ss) != 0 &&
        uv_ip6_addr(host, opts->port, (struct sockaddr_in6 *)&ss) != 0)
        return ebb_error_set(err, EBB_EINVAL, NULL, 0, NULL,
                             "\"%s\" is not a numeric IPv4 or IPv6 address", host);
    if ((h = calloc(1, sizeof(*h))) == NULL)
        return EBB_ENOMEM;
    h->loop = loop;
    h->opts = *opts;
    if (h->opts.max_body == 0)
        h->opts.max_body = DEFAULT_MAX_BODY;
    if (h->opts.max_queued == 0)
        h->opts.max_queued = DEFAULT_MAX_QUEUED;
    if (h->opts.idle_timeout_ms == 0)
        h->opts.idle_timeout_ms = DEFAULT_IDLE_MS;
    if (h->opts.max_total_queued == 0)
        h->opts.max_total_queued = DEFAULT_MAX_TOTAL_QUEUED;
    if (h->opts.max_total_body == 0)
        h->opts.max_total_body = DEFAULT_MAX_TOTAL_BODY;
    if (h->opts.max_connections == 0)
        h->opts.max_connections = DEFAULT_MAX_CONNECTIONS;
    if (h->opts.write_timeout_ms == 0)
        h->opts.write_timeout_ms = DEFAULT_WRITE_TIMEOUT_MS;
    if (h->opts.request_timeout_ms == 0)
        h->opts.request_timeout_ms = DEFAULT_REQUEST_TIMEOUT_MS;
    if ((h->host = strdup(host)) == NULL) {
        free(h);
        return EBB_ENOMEM;
    }
    h->opts.host = h->host;
    /* both handles are initialized before anything can fail, so a failure
     * closes them like a normal stop */
    uv_tcp_init(loop, &h->listener);
    uv_timer_init(loop, &h->sweep);
    h->listener.data = h->sweep.data = h;
    h->open_handles = 2;
    if ((rc = uv_tcp_bind(&h->listener, (struct sockaddr *)&ss, 0)) != 0 ||
        (rc = uv_listen((uv_stream_t *)&h->listener, 128, on_connection)) != 0) {
        ebb_error_set(err, EBB_EIO, NULL, 0, NULL, "listen %s:%d: %s", host, opts->port,
                      uv_strerror(rc));
        ebb_httpd_close(h, NULL, NULL);
        return EBB_EIO;
    }
    len = sizeof(ss);
    if (uv_tcp_getsockname(&h->listener, (struct sockaddr *)&ss, &len) == 0)
        h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    every = h->opts.idle_timeout_ms;
    every = h->opts.write_timeout_ms < every ? h->opts.write_timeout_ms : every;
    every = h->opts.request_timeout_ms < every ? h->opts.request_timeout_ms : every;
    every /= 4;
    every = every < 50 ? 50 : every > 5000 ? 5000 : every;
    uv_timer_start(&h->sweep, on_sweep, every, every);
    *out = h;
    return 0;
}

int ebb_httpd_port(const struct ebb_httpd *h)
{
    return h ? h->port : 0;
}

size_t ebb_httpd_connections(const struct ebb_httpd *h)
{
    return h ? h->nconns : 0;
}

void ebb_httpd_stats(const struct ebb_httpd *h, struct ebb_httpd_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (h == NULL)
        return;
    out->connections = h->nconns;
    out->queued = h->queued;
    out->bodies = h->bodies;
    out->refused = h->refused;
    out->dropped = h->dropped;
    out->busy = h->busy;
    out->probes = h->probes;
    for (const struct conn *c = h->conns; c != NULL; c = c->next)
        out->stalled += !c->closing && c->stalled;
}

void ebb_httpd_close(struct ebb_httpd *h, void (*cb)(void *ud), void *ud)
{
    if (h == NULL || h->closing)
        return;
    h->closing = true;
    h->close_cb = cb;
    h->close_ud = ud;
    for (struct conn *c = h->conns; c != NULL; c = c->next) {
        struct ebb_http_req *r = &c->req;
        ebb_http_gone_fn fn = r->gone;

        if (c->closing)
            continue;
        if (r->state == REQ_STREAMING) {
            if (hold_flush(c) == 0)
                conn_write(c, "0\r\n\r\n", 5, NULL, 0, NULL, 0);
            r->state = REQ_DONE;
            r->gone = NULL;
            if (fn != NULL)
                fn(r, r->gone_ud);
            conn_finish(c);
        } else if (r->state == REQ_PENDING) {
            r->state = REQ_DONE;
            r->gone = NULL;
            if (fn != NULL)
                fn(r, r->gone_ud);
            conn_close(c);
        } else if (!c->shutting) {
            conn_close(c);
        }
    }
    uv_close((uv_handle_t *)&h->listener, on_handle_closed);
    if (h->nconns == 0) {
        h->sweep_closed = true;
        uv_close((uv_handle_t *)&h->sweep, on_handle_closed);
    } else {
        uv_timer_start(&h->sweep, on_close_deadline, CLOSE_GRACE_MS, 0);
    }
}

/* ---- the request, for handlers ---------------------------------------------------------- */

const char *ebb_http_req_method(const struct ebb_http_req *r)
{
    return r->method;
}

const char *ebb_http_req_path(const struct ebb_http_req *r)
{
    return r->path.p ? r->path.p : "/";
}

const char *ebb_http_req_query_string(const struct ebb_http_req *r)
{
    return r->query_string ? r->query_string : "";
}

const char *ebb_http_req_query(const struct ebb_http_req *r, const char *key)
{
    for (size_t i = 0; i + 1 < r->qoff.n; i += 2)
        if (strcmp(r->query.p + r->qoff.v[i], key) == 0)
            return r->query.p + r->qoff.v[i + 1];
    return NULL;
}

const char *ebb_http_req_header(const struct ebb_http_req *r, const char *name)
{
    for (size_t i = 0; i + 1 < r->hoff.n; i += 2)
        if (strcasecmp(r->hdrs.p + r->hoff.v[i], name) == 0)
            return r->hdrs.p + r->hoff.v[i + 1];
    return NULL;
}

const char *ebb_http_req_body(const struct ebb_http_req *r, size_t *len)
{
    if (len != NULL)
        *len = r->body.n;
    return r->body.p ? r->body.p : "";
}

const char *ebb_http_req_peer(const struct ebb_http_req *r)
{
    return r->c->peer;
}

void ebb_http_req_on_gone(struct ebb_http_req *r, ebb_http_gone_fn fn, void *ud)
{
    r->gone = fn;
    r->gone_ud = ud;
}

/* ---- answering ------------------------------------------------------------------------------ */

int ebb_http_add_header(struct ebb_http_req *r, const char *name, const char *value)
{
    if (r == NULL || name == NULL || value == NULL || strpbrk(name, "\r\n:") != NULL ||
        strpbrk(value, "\r\n") != NULL || name[0] == '\0')
        return EBB_EINVAL;
    if (r->state != REQ_PENDING)
        return EBB_ESTATE;
    if (buf_add(&r->out, name, strlen(name)) != 0 || buf_add(&r->out, ": ", 2) != 0 ||
        buf_add(&r->out, value, strlen(value)) != 0 || buf_add(&r->out, "\r\n", 2) != 0)
        return EBB_ENOMEM;
    return 0;
}

int ebb_http_respond(struct ebb_http_req *r, int status, const char *content_type,
                     const char *body, size_t len)
{
    struct buf head = { 0 };
    struct ebb_httpd *h;
    struct conn *c;
    int rc;

    if (r == NULL || status < 100 || status > 999 || (body == NULL && len > 0))
        return EBB_EINVAL;
    if (r->state != REQ_PENDING)
        return EBB_ESTATE;
    c = r->c;
    h = c->h;
    if (c->reserved > 0) {
        reserve_release(c);     /* a write: its room was kept, its answer goes as it is */
    } else if (!r->head && len > 0 && h->queued + h->reserved + len > h->opts.max_total_queued &&
               !(r->probe && c->queued == 0 && len <= PROBE_ANSWER_MAX) &&
               !make_room(h, c, len, true) && h->queued + h->reserved > 0) {
        /* no room: this answer is not kept; the client may ask again */
        h->busy++;
        buf_reset(&r->out);
        r->keep_alive = false;
        status = 429;
        content_type = "application/json";
        body = TOO_MANY;
        len = sizeof(TOO_MANY) - 1;
        ebb_http_add_header(r, "Retry-After", "1");
    }
    if ((rc = head_build(r, &head, status, content_type, false, len)) == 0)
        rc = conn_write(c, head.p, head.n, r->head ? NULL : body, r->head ? 0 : len, NULL, 0);
    else
        conn_close(c);
    buf_free(&head);
    r->state = REQ_DONE;
    request_done(c);
    return rc;
}

int ebb_http_stream_begin(struct ebb_http_req *r, int status, const char *content_type)
{
    struct buf head = { 0 };
    int rc;

    if (r == NULL || status < 100 || status > 999)
        return EBB_EINVAL;
    if (r->state != REQ_PENDING)
        return EBB_ESTATE;
    reserve_release(r->c);
    if ((rc = head_build(r, &head, status, content_type, true, 0)) == 0)
        rc = conn_write(r->c, head.p, head.n, NULL, 0, NULL, 0);
    buf_free(&head);
    if (rc != 0) {
        r->state = REQ_DONE;
        conn_close(r->c);
        request_done(r->c);
        return rc;
    }
    r->state = REQ_STREAMING;
    return 0;
}

/* A stream write or hold that cannot be queued: the stream is over. */
static int stream_fail(struct ebb_http_req *r)
{
    struct conn *c = r->c;

    r->state = REQ_DONE;
    r->gone = NULL;
    conn_close(c);
    request_done(c);
    return EBB_EIO;
}

int ebb_http_stream_write(struct ebb_http_req *r, const char *data, size_t len)
{
    struct conn *c;
    char size[24];
    int n;

    if (r == NULL || (data == NULL && len > 0))
        return EBB_EINVAL;
    if (r->state != REQ_STREAMING)
        return EBB_ESTATE;
    if (len == 0)
        return 0;
    c = r->c;
    if (c->hold.n > 0) {
        /* after what is held, in one chunk */
        if (hold_add(c, data, len) != 0 || hold_flush(c) != 0)
            return stream_fail(r);
        return 0;
    }
    n = snprintf(size, sizeof(size), "%zx\r\n", len);
    /* a client that does not read: its stream ends (make_room) */
    if (c->closing || conn_unsent(c) > c->h->opts.max_queued ||
        !make_room(c->h, c, len + (size_t)n + 2, true) ||
        conn_write(c, size, (size_t)n, data, len, "\r\n", 2) != 0)
        return stream_fail(r);
    return 0;
}

int ebb_http_stream_hold(struct ebb_http_req *r, const char *data, size_t len)
{
    if (r == NULL || (data == NULL && len > 0))
        return EBB_EINVAL;
    if (r->state != REQ_STREAMING)
        return EBB_ESTATE;
    if (len == 0)
        return 0;
    if (r->c->closing || hold_add(r->c, data, len) != 0)
        return stream_fail(r);
    return 0;
}

int ebb_http_stream_flush(struct ebb_http_req *r)
{
    if (r == NULL)
        return EBB_EINVAL;
    if (r->state != REQ_STREAMING)
        return EBB_ESTATE;
    if (hold_flush(r->c) != 0)
        return stream_fail(r);
    return 0;
}

size_t ebb_http_stream_unsent(const struct ebb_http_req *r)
{
    if (r == NULL || r->state != REQ_STREAMING)
        return 0;
    return conn_unsent(r->c);
}

int ebb_http_stream_end(struct ebb_http_req *r)
{
    int rc;

    if (r == NULL)
        return EBB_EINVAL;
    if (r->state != REQ_STREAMING)
        return EBB_ESTATE;
    if ((rc = hold_flush(r->c)) == 0)
        rc = conn_write(r->c, "0\r\n\r\n", 5, NULL, 0, NULL, 0);
    r->state = REQ_DONE;
    request_done(r->c);
    return rc;
}

void ebb_http_req_abort(struct ebb_http_req *r)
{
    if (r == NULL || r->state == REQ_DONE || r->state == REQ_READING)
        return;
    r->state = REQ_DONE;
    r->gone = NULL;
    conn_close(r->c);
    request_done(r->c);
}
