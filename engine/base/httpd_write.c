/* Answers of the HTTP server (httpd_int.h): the status line and headers,
 * a whole answer (Content-Length) or a chunked stream, stream bytes held
 * and flushed as one chunk. Each write is copied into one write request
 * (a held buffer goes as it is) and counted in c->queued and h->queued
 * until libuv says it is written; whatever is queued was weighed first
 * (ebb__http_make_room). */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "base/httpd_int.h"

/* Chunk framing around held stream bytes ("%zx\r\n" ... "\r\n"). */
#define CHUNK_FRAME 24u

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

/* ---- writing ---------------------------------------------------------------------------- */

struct wreq {
    uv_write_t w;
    struct conn *c;
    size_t len;                  /* counted in c->queued until written */
    char *own;                   /* a held buffer written with it (freed after); NULL: none */
    char data[];
};

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
        ebb__http_conn_lost(c);
        return;
    }
    c->last_written = uv_now(c->h->loop);
    if (c->queued == 0)
        c->last_active = c->last_written;   /* idle from the last byte taken */
    if (c->held && c->queued <= PIPELINE_QUEUED)
        ebb__http_conn_resume(c);
}

/* Hand q (q->len bytes in ub[0..n)) to libuv; counted until written. On
 * TLS, the bytes are sealed into records first, and q gives its place to
 * a request that owns them (counted by q->len all the same). */
static int queue_write(struct conn *c, struct wreq *q, uv_buf_t *ub, unsigned n)
{
    uv_buf_t sealed;

    if (c->tls != NULL) {
        size_t len = q->len, clen = 0;
        char *cipher = NULL;
        int rc = ebb__http_tls_seal(c, ub, n, &cipher, &clen);

        free(q->own);
        free(q);
        if (rc != 0 || (q = malloc(sizeof(*q))) == NULL) {
            free(cipher);
            ebb__http_conn_close(c);
            return EBB_EIO;
        }
        q->c = c;
        q->len = len;
        q->own = cipher;
        sealed = uv_buf_init(cipher, (unsigned)clen);
        ub = &sealed;
        n = 1;
    }
    if (uv_write(&q->w, (uv_stream_t *)&c->tcp, ub, n, on_written) != 0) {
        free(q->own);
        free(q);
        ebb__http_conn_close(c);
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

int ebb__http_conn_send_raw(struct conn *c, char *data, size_t len, size_t counted)
{
    struct wreq *q;
    uv_buf_t ub = uv_buf_init(data, (unsigned)len);

    if (c->closing || (q = malloc(sizeof(*q))) == NULL) {
        free(data);
        return EBB_EIO;
    }
    q->c = c;
    q->len = counted;
    q->own = data;
    if (uv_write(&q->w, (uv_stream_t *)&c->tcp, &ub, 1, on_written) != 0) {
        free(data);
        free(q);
        return EBB_EIO;
    }
    c->queued += counted;
    c->h->queued += counted;
    return 0;
}

int ebb__http_conn_write(struct conn *c, const char *a, size_t an, const char *b, size_t bn,
                         const char *t, size_t tn)
{
    struct wreq *q;
    uv_buf_t ub;

    if (c->closing)
        return EBB_EIO;
    if ((q = malloc(sizeof(*q) + an + bn + tn)) == NULL) {
        ebb__http_conn_close(c);
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
    return queue_write(c, q, &ub, 1);
}

/* Append to what is held for the stream (ebb_http_stream_hold), the held
 * buffer counted by its capacity. EBB_ELIMIT: the stream already holds
 * more than max_queued, or the total has no room. */
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
        if (!ebb__http_make_room(h, c, cap - c->hold.cap + CHUNK_FRAME, true))
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
        ebb__http_conn_close(c);
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
    return queue_write(c, q, ub, 3);
}

int ebb__http_stream_finish(struct conn *c)
{
    int rc = hold_flush(c);

    return rc == 0 ? ebb__http_conn_write(c, "0\r\n\r\n", 5, NULL, 0, NULL, 0) : rc;
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
               !ebb__http_make_room(h, c, len, true) && h->queued + h->reserved > 0) {
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
        rc = ebb__http_conn_write(c, head.p, head.n, r->head ? NULL : body, r->head ? 0 : len, NULL, 0);
    else
        ebb__http_conn_close(c);
    buf_free(&head);
    r->state = REQ_DONE;
    ebb__http_request_done(c);
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
        rc = ebb__http_conn_write(r->c, head.p, head.n, NULL, 0, NULL, 0);
    buf_free(&head);
    if (rc != 0) {
        ebb_http_req_abort(r);
        return rc;
    }
    r->state = REQ_STREAMING;
    return 0;
}

/* A stream write or hold that cannot be queued: the stream is over. */
static int stream_fail(struct ebb_http_req *r)
{
    ebb_http_req_abort(r);
    return EBB_EIO;
}

/* The checks every stream call starts with: 0 to go on. */
static int stream_check(const struct ebb_http_req *r, const char *data, size_t len)
{
    if (r == NULL || (data == NULL && len > 0))
        return EBB_EINVAL;
    return r->state == REQ_STREAMING ? 0 : EBB_ESTATE;
}

int ebb_http_stream_write(struct ebb_http_req *r, const char *data, size_t len)
{
    struct conn *c;
    char size[24];
    int n, rc;

    if ((rc = stream_check(r, data, len)) != 0 || len == 0)
        return rc;
    c = r->c;
    if (c->hold.n > 0) {
        /* after what is held, in one chunk */
        if (hold_add(c, data, len) != 0 || hold_flush(c) != 0)
            return stream_fail(r);
        return 0;
    }
    n = snprintf(size, sizeof(size), "%zx\r\n", len);
    /* a client that does not read: its stream ends (ebb__http_make_room) */
    if (c->closing || conn_unsent(c) > c->h->opts.max_queued ||
        !ebb__http_make_room(c->h, c, len + (size_t)n + 2, true) ||
        ebb__http_conn_write(c, size, (size_t)n, data, len, "\r\n", 2) != 0)
        return stream_fail(r);
    return 0;
}

int ebb_http_stream_hold(struct ebb_http_req *r, const char *data, size_t len)
{
    int rc;

    if ((rc = stream_check(r, data, len)) != 0 || len == 0)
        return rc;
    if (r->c->closing || hold_add(r->c, data, len) != 0)
        return stream_fail(r);
    return 0;
}

int ebb_http_stream_flush(struct ebb_http_req *r)
{
    int rc;

    if ((rc = stream_check(r, NULL, 0)) != 0)
        return rc;
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

    if ((rc = stream_check(r, NULL, 0)) != 0)
        return rc;
    rc = ebb__http_stream_finish(r->c);
    r->state = REQ_DONE;
    ebb__http_request_done(r->c);
    return rc;
}

void ebb_http_req_abort(struct ebb_http_req *r)
{
    if (r == NULL || r->state == REQ_DONE || r->state == REQ_READING)
        return;
    r->state = REQ_DONE;
    r->gone = NULL;
    ebb__http_conn_close(r->c);
    ebb__http_request_done(r->c);
}
