/* A request to the HTTP server (httpd_int.h): http_parser's callbacks
 * gather the method, URL, headers and body into the connection's one
 * request; the URL is split and percent-decoded; the request goes to the
 * handler (dispatch), or is answered without it when it is malformed, too
 * large, past the totals or not a probe in a probe slot. The parser is
 * paused after each message: the next one waits for this one's answer. */
#include <stdio.h>
#include <strings.h>

#include "base/httpd_int.h"

static const http_parser_settings settings;

/* ---- the request lifecycle -------------------------------------------------------------- */

/* fn on every buffer of the request. */
static void req_bufs(struct ebb_http_req *r, void (*fn)(struct buf *b))
{
    struct buf *b[] = { &r->url, &r->path, &r->hdrs, &r->query, &r->body, &r->out };

    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++)
        fn(b[i]);
}

void ebb__http_req_reset(struct ebb_http_req *r)
{
    r->state = REQ_READING;
    r->method[0] = '\0';
    req_bufs(r, buf_reset);
    r->hoff.n = r->qoff.n = 0;
    r->query_string = "";
    r->last = 0;
    r->keep_alive = r->head = r->too_large = r->too_busy = r->probe = false;
    r->gone = NULL;
    r->gone_ud = NULL;
}

void ebb__http_req_free(struct ebb_http_req *r)
{
    req_bufs(r, buf_free);
    free(r->hoff.v);
    free(r->qoff.v);
}

void ebb__http_req_gone(struct ebb_http_req *r)
{
    ebb_http_gone_fn fn = r->gone;

    r->state = REQ_DONE;
    r->gone = NULL;
    if (fn != NULL)
        fn(r, r->gone_ud);
}

/* One large upload does not pin its memory for the connection's life. */
void ebb__http_body_release(struct conn *c)
{
    c->h->bodies -= c->req.body.cap;
    buf_free(&c->req.body);
}

/* The answer is complete: go on with the next request, or close. */
static void finish_request(struct conn *c)
{
    bool keep = c->req.keep_alive;

    ebb__http_body_release(c);
    reserve_release(c);
    ebb__http_req_reset(&c->req);
    c->last_active = uv_now(c->h->loop);   /* idle from the end of the answer */
    if (c->closing)
        return;
    if (!keep)
        ebb__http_conn_finish(c);
}

void ebb__http_request_done(struct conn *c)
{
    if (c->in_handler)
        return;            /* dispatch() finishes when the handler returns */
    finish_request(c);
    if (!c->closing && !c->shutting) {
        ebb__http_process_input(c);
        ebb__http_conn_read_on(c);
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

/* Answer now without the handler (a request we cannot parse or refuse),
 * then go on; the connection closes after it. A 429 is the API server's
 * max-in-flight answer, counted in h->busy. */
static void answer_now(struct conn *c, int status, const char *ctype, const char *body)
{
    struct ebb_http_req *r = &c->req;

    c->in_handler = true;      /* the answer does not finish the request: we do */
    r->state = REQ_PENDING;
    r->keep_alive = false;
    buf_reset(&r->out);
    if (status == 429) {
        c->h->busy++;
        ebb_http_add_header(r, "Retry-After", "1");
    }
    ebb_http_respond(r, status, ctype, body, strlen(body));
    c->in_handler = false;
    finish_request(c);
}

static void answer_busy(struct conn *c)
{
    answer_now(c, 429, "application/json", TOO_MANY);
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

/* A write is either acted on and answered, or refused and not acted on: a
 * request with side effects (any method but GET, HEAD, OPTIONS; is_write)
 * gets room for its answer reserved (max_body) in the total before its
 * handler runs, or 429 without the handler; its answer is then never
 * replaced (ebb_http_respond spends the reservation). */
static void dispatch(struct conn *c)
{
    struct ebb_http_req *r = &c->req;
    struct ebb_httpd *h = c->h;

    c->in_handler = true;
    if (finalize(r) != 0) {
        answer_now(c, 400, "text/plain; charset=utf-8", "400 Bad Request: malformed URL\n");
        return;
    }
    r->probe = (c->parser.method == HTTP_GET || c->parser.method == HTTP_HEAD) &&
               probe_path(r->path.p);
    if (c->probe_slot) {
        /* past max_connections: a probe is answered, then the slot is free */
        r->keep_alive = false;
        if (!r->probe) {
            answer_busy(c);
            return;
        }
    }
    if (is_write(&c->parser)) {
        size_t want = h->opts.max_body;
        if (!ebb__http_make_room(h, c, want, true)) {
            answer_busy(c);
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

void ebb__http_process_input(struct conn *c)
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
            if (busy) {
                answer_busy(c);
            } else if (big) {
                /* as the API server words it, for Kubernetes clients */
                char st[300];
                snprintf(st, sizeof(st), "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                         "\"status\":\"Failure\",\"message\":\"Request entity too large: limit is %zu\","
                         "\"reason\":\"RequestEntityTooLarge\",\"code\":413}", c->h->opts.max_body);
                answer_now(c, 413, "application/json", st);
            } else {
                answer_now(c, 400, "text/plain; charset=utf-8", "400 Bad Request\n");
            }
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
    ebb__http_body_release(c);
    ebb__http_req_reset(&c->req);
    c->reading_since = uv_now(c->h->loop);
    c->head_done = false;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    return buf_add(&c->req.url, at, len) == 0 ? 0 : -1;
}

/* A piece of a header's field (part 1) or value (part 2): a new one ends
 * the one before with its NUL and starts at the next offset. */
static int header_part(http_parser *p, int part, const char *at, size_t len)
{
    struct ebb_http_req *r = &((struct conn *)p->data)->req;

    if (r->last != part) {
        if ((r->last != 0 && buf_add(&r->hdrs, "", 1) != 0) ||
            offs_push(&r->hoff, r->hdrs.n) != 0)
            return -1;
        r->last = part;
    }
    return buf_add(&r->hdrs, at, len) == 0 ? 0 : -1;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    return header_part(p, 1, at, len);
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    return header_part(p, 2, at, len);
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
        ebb__http_conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25, NULL, 0, NULL, 0);
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
