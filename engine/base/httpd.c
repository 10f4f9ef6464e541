/* A small HTTP/1.1 server: libuv for the sockets, http_parser for the
 * requests (see include/ebb/httpd.h for the contract). This unit is the
 * server and its connections: listen, accept, read, close. The bounds are
 * httpd_bounds.c's, requests httpd_request.c's, answers httpd_write.c's
 * (httpd_int.h: which invariant each keeps).
 *
 * Each connection owns one read buffer: libuv reads straight into its free
 * tail and http_parser runs over it. The parser is paused at the end of
 * every message, so a pipelined request stays in the buffer, unparsed,
 * until the answer to the current one is complete; reading goes on
 * meanwhile so a client that hangs up is noticed (the gone callback).
 * Answers are copied into one write request each; a connection is closed
 * only through uv_close, and its memory is freed in the close callback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/httpd_int.h"

/* What a 0 in the options means (include/ebb/httpd.h). */
static const struct ebb_httpd_opts defaults = {
    .max_body = 8u << 20,
    .max_queued = 16u << 20,
    .max_total_queued = (size_t)256 << 20,
    .max_total_body = (size_t)64 << 20,
    .max_connections = 256u,
    .idle_timeout_ms = 120000u,
    .write_timeout_ms = 30000u,
    .request_timeout_ms = 60000u,
};
/* Bytes read ahead, unparsed, while a request is answered (or held): past
 * this, reading stops until the answer is done. */
#define PENDING_MAX (256u << 10)

/* Closing, connections still flushing after CLOSE_GRACE_MS (a client that
 * does not read): close them anyway. */
#define CLOSE_GRACE_MS 2000

/* ---- closing ------------------------------------------------------------------------ */

static void server_maybe_freed(struct ebb_httpd *h)
{
    if (!h->closing || h->open_handles > 0)
        return;
    if (h->close_cb != NULL)
        h->close_cb(h->close_ud);
    ebb__http_tls_ctx_free(h->tls_ctx);
    free(h->host);
    free(h);
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

    /* the connection died under a request (ebb__http_conn_lost): its owner
     * is told here, from the loop, never from inside a call it made */
    if (r->state == REQ_PENDING || r->state == REQ_STREAMING)
        ebb__http_req_gone(r);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    h->nconns--;
    h->closing_conns--;
    h->open_handles--;
    ebb__http_body_release(c);
    ebb__http_req_free(&c->req);
    ebb__http_tls_free(c);
    free(c->in);
    free(c);
    if (h->closing && h->nconns == 0 && !h->sweep_closed) {
        h->sweep_closed = true;
        uv_close((uv_handle_t *)&h->sweep, on_handle_closed);
    }
    server_maybe_freed(h);
}

void ebb__http_conn_close(struct conn *c)
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
    ebb__http_conn_close(s->data);
}

void ebb__http_conn_finish(struct conn *c)
{
    if (c->closing || c->shutting)
        return;
    c->shutdown.data = c;
    ebb__http_tls_close_notify(c);   /* queued after the answers, before the FIN */
    if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
        ebb__http_conn_close(c);
    else
        c->shutting = true;
}

/* Its owner is told from the close callback (on_conn_closed), so that
 * dropping a connection to make room never runs another request's gone
 * callback inside a call. Until then the request stays valid and every
 * answer to it fails. */
void ebb__http_conn_lost(struct conn *c)
{
    ebb__http_conn_close(c);
}

/* ---- reading ---------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *b)
{
    struct conn *c = hd->data;

    (void)suggested;
    if (c->tls != NULL) {
        *b = ebb__http_tls_read_buf(c);   /* ciphertext; plaintext goes to c->in */
        return;
    }
    /* READ_CHUNK at first, then doubling: a quarter of it free at least */
    if (c->in_cap - c->in_len < READ_CHUNK / 4 &&
        ebb__grow((void **)&c->in, &c->in_cap,
                  c->in_len + READ_CHUNK / 4 > READ_CHUNK ? c->in_len + READ_CHUNK / 4 : READ_CHUNK,
                  1) != 0) {
        *b = uv_buf_init(NULL, 0);
        return;
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
        ebb__http_conn_lost(c);
        return;
    }
    if (nread == 0 || c->shutting)
        return;
    if (c->tls != NULL) {
        bool ready = c->tls_ready;
        if (ebb__http_tls_input(c, (size_t)nread) != 0) {
            if (!c->tls_ready)
                h->handshakes_failed++;   /* plain HTTP, garbage, no common cipher */
            ebb__http_conn_close(c);
            return;
        }
        if (!ready && c->tls_ready)
            c->last_active = uv_now(h->loop);   /* idle from the handshake's end */
    } else {
        c->in_len += (size_t)nread;
    }
    c->last_active = uv_now(h->loop);
    if (c->probe_slot && c->req.state == REQ_READING && c->in_len - c->in_off > PROBE_HEAD_MAX) {
        h->dropped++;           /* a probe slot is for a probe's few hundred bytes */
        ebb__http_conn_close(c);
        return;
    }
    if ((c->req.state != REQ_READING || c->held) && c->in_len - c->in_off > PENDING_MAX) {
        uv_read_stop(s);        /* sends ahead of its answers: wait for them */
        c->reading = false;
        return;
    }
    ebb__http_process_input(c);
}

void ebb__http_conn_read_on(struct conn *c)
{
    if (!c->reading && !c->closing && !c->shutting && !c->held && c->req.state == REQ_READING &&
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
}

void ebb__http_conn_resume(struct conn *c)
{
    c->held = false;
    ebb__http_process_input(c);
    ebb__http_conn_read_on(c);
}

/* ---- accepting ---------------------------------------------------------------------------- */

static void on_connection(uv_stream_t *server, int status)
{
    struct ebb_httpd *h = server->data;
    struct conn *c;
    struct sockaddr_storage ss;
    int len = sizeof(ss), admit;

    if (status < 0 || h->closing)
        return;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return;
    if ((admit = ebb__http_admit(h)) == ADMIT_REFUSE)
        h->refused++;
    if (uv_tcp_init(h->loop, &c->tcp) != 0) {
        free(c);
        return;
    }
    c->tcp.data = c;
    if (admit == ADMIT_REFUSE) {
        /* taken off the backlog and closed */
        uv_accept(server, (uv_stream_t *)&c->tcp);
        uv_close((uv_handle_t *)&c->tcp, on_refused_closed);
        return;
    }
    c->h = h;
    c->next = h->conns;
    if (h->conns != NULL)
        h->conns->prev = c;
    h->conns = c;
    h->nconns++;
    h->open_handles++;
    if (admit == ADMIT_PROBE_SLOT) {
        c->probe_slot = true;
        h->probe_conns++;
        h->probes++;
    }
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    ebb__http_req_reset(&c->req);
    c->req.c = c;
    c->last_active = c->accepted = uv_now(h->loop);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        (h->tls_ctx != NULL && ebb__http_tls_accept(c, h->tls_ctx) != 0)) {
        ebb__http_conn_close(c);
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
        ebb__http_conn_close(c);
    else
        c->reading = true;
}

static void on_close_deadline(uv_timer_t *t)
{
    struct ebb_httpd *h = t->data;

    for (struct conn *c = h->conns; c != NULL; c = c->next)
        ebb__http_conn_close(c);
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
#define OR_DEFAULT(f) (h->opts.f = h->opts.f != 0 ? h->opts.f : defaults.f)
    OR_DEFAULT(max_body), OR_DEFAULT(max_queued), OR_DEFAULT(max_total_queued);
    OR_DEFAULT(max_total_body), OR_DEFAULT(max_connections), OR_DEFAULT(idle_timeout_ms);
    OR_DEFAULT(write_timeout_ms), OR_DEFAULT(request_timeout_ms);
#undef OR_DEFAULT
    h->opts.tls = NULL;   /* read here only */
    if (!h->opts.handshake_timeout_ms)
        h->opts.handshake_timeout_ms = 10000u;
    if (opts->tls != NULL && (rc = ebb__http_tls_ctx(opts->tls, &h->tls_ctx, err)) != 0) {
        free(h);
        return rc;
    }
    if ((h->host = strdup(host)) == NULL) {
        ebb__http_tls_ctx_free(h->tls_ctx);
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
    if (h->tls_ctx != NULL)
        every = h->opts.handshake_timeout_ms < every ? h->opts.handshake_timeout_ms : every;
    every /= 4;
    every = every < 50 ? 50 : every > 5000 ? 5000 : every;
    uv_timer_start(&h->sweep, ebb__http_sweep, every, every);
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
    out->handshakes_failed = h->handshakes_failed;
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

        if (c->closing)
            continue;
        if (r->state == REQ_STREAMING) {
            ebb__http_stream_finish(c);
            ebb__http_req_gone(r);
            ebb__http_conn_finish(c);
        } else if (r->state == REQ_PENDING) {
            ebb__http_req_gone(r);
            ebb__http_conn_close(c);
        } else if (!c->shutting) {
            ebb__http_conn_close(c);
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

