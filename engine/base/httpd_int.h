/* engine/base/httpd_int.h: what the units of the HTTP/1.1 server share
 * (include/ebb/httpd.h is the contract). Not public.
 *
 *   httpd.c          the server and its connections: listen, accept, read,
 *                    close (a connection's memory goes in its close callback)
 *   httpd_bounds.c   who may hold the server and how much: the connection
 *                    limit and the probe slots, the total of queued bytes
 *                    and what is ended to make room, the sweep's deadlines
 *   httpd_request.c  a request: http_parser's callbacks, the URL and query,
 *                    bodies, and the dispatch to the handler
 *   httpd_write.c    answers and streams: status line and headers, writes,
 *                    stream bytes held and flushed
 *   httpd_tls.c      HTTPS: the certificate (given, in cert_dir or made),
 *                    and each connection's TLS over memory BIOs
 *
 * Three invariants, each kept at one place and stated there:
 *
 *   Probes are always answered: ebb__http_admit (httpd_bounds.c).
 *   Every byte queued for a client counts: ebb__http_make_room
 *   (httpd_bounds.c).
 *   A write is either acted on and answered, or refused and not acted on:
 *   dispatch (httpd_request.c).
 *
 * Everything runs on the loop thread. */
#ifndef EBB_HTTPD_INT_H
#define EBB_HTTPD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <http_parser.h>

#include "ebb/httpd.h"
#include "base/vec.h"

/* Bytes read per libuv read (at least a quarter of it is free). */
#define READ_CHUNK 65536u
/* A pipelined request is parsed only once the answers before it are down
 * to this: a client that sends and never reads holds one answer, not one
 * per request. */
#define PIPELINE_QUEUED (1u << 20)
/* A probe slot (ebb__http_admit): the most read before its request is
 * complete, how long it may wait for it, and the answer up to which a
 * probe is never refused for want of room. */
#define PROBE_HEAD_MAX 8192u
#define PROBE_TIMEOUT_MS 5000u
#define PROBE_ANSWER_MAX (64u << 10)

/* The API server's max-in-flight answer. */
#define TOO_MANY                                                                               \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","     \
    "\"message\":\"Too many requests, please try again later.\",\"reason\":\"TooManyRequests\"," \
    "\"details\":{\"retryAfterSeconds\":1},\"code\":429}"

/* ---- small growable buffers ------------------------------------------------ */

struct buf {
    char *p;
    size_t n, cap;
};

/* Append n bytes and keep a NUL after them. */
static inline int buf_add(struct buf *b, const char *s, size_t n)
{
    if (ebb__grow((void **)&b->p, &b->cap, b->n + n + 1, 1) != 0)
        return EBB_ENOMEM;
    if (n > 0)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static inline void buf_reset(struct buf *b)
{
    b->n = 0;
    if (b->p != NULL)
        b->p[0] = '\0';
}

static inline void buf_free(struct buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* Offsets of NUL-separated strings inside a buf ("name\0value\0..."). */
struct offs {
    size_t *v;
    size_t n, cap;
};

static inline int offs_push(struct offs *o, size_t at)
{
    if (ebb__grow((void **)&o->v, &o->cap, o->n + 1, sizeof(*o->v)) != 0)
        return EBB_ENOMEM;
    o->v[o->n++] = at;
    return 0;
}

/* ---- the structures ------------------------------------------------------------ */

enum { REQ_READING = 0, REQ_PENDING, REQ_STREAMING, REQ_DONE };

struct conn;
struct tls_conn;                 /* httpd_tls.c */
typedef struct ssl_ctx_st SSL_CTX;

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
    struct tls_conn *tls;        /* NULL: plain HTTP */
    bool tls_ready;              /* the TLS handshake is finished */
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
    uint64_t handshakes_failed;  /* TLS handshakes failed or timed out */
    SSL_CTX *tls_ctx;            /* NULL: plain HTTP */
    int open_handles;            /* listener, sweep, connections */
    bool closing, sweep_closed;
    void (*close_cb)(void *ud);
    void *close_ud;
};

/* What a connection holds for its client: handed to libuv and not
 * written yet, plus what is held for its stream. */
static inline size_t conn_unsent(const struct conn *c)
{
    return c->queued + c->hold.cap;
}

static inline void reserve_release(struct conn *c)
{
    c->h->reserved -= c->reserved;
    c->reserved = 0;
}

/* Still in its TLS handshake: no request byte can have come yet. */
static inline bool conn_handshaking(const struct conn *c)
{
    return c->tls != NULL && !c->tls_ready;
}

/* ---- httpd.c: connections ----------------------------------------------------- */

/* Close now: what is queued is dropped and counted out at once. */
void ebb__http_conn_close(struct conn *c);
/* Close once everything queued is written. */
void ebb__http_conn_finish(struct conn *c);
/* The connection died under a request: close; its owner is told from the
 * close callback, never inside a call it made. */
void ebb__http_conn_lost(struct conn *c);
/* Read again once what was read ahead is parsed. */
void ebb__http_conn_read_on(struct conn *c);
/* The client took enough of its answers: parse (and read) on. */
void ebb__http_conn_resume(struct conn *c);

/* ---- httpd_bounds.c: the bounds ----------------------------------------------- */

enum { ADMIT_REFUSE, ADMIT_CONN, ADMIT_PROBE_SLOT };

/* May a new connection come in: as a connection (ADMIT_CONN), in a probe
 * slot, or not at all; others may be closed to make its place. */
int ebb__http_admit(struct ebb_httpd *h);
/* Room for `more` bytes in the total of unwritten answers, connections
 * ended to make it; false when there is none for `self` (may be NULL). */
bool ebb__http_make_room(struct ebb_httpd *h, struct conn *self, size_t more, bool streams);
/* The sweep timer: deadlines of reading, writing and idling. */
void ebb__http_sweep(uv_timer_t *t);

/* ---- httpd_request.c: requests ------------------------------------------------- */

void ebb__http_req_reset(struct ebb_http_req *r);
void ebb__http_req_free(struct ebb_http_req *r);
/* The request is over without its answer: its owner's gone callback, once. */
void ebb__http_req_gone(struct ebb_http_req *r);
/* A body is kept only while its request is read and answered. */
void ebb__http_body_release(struct conn *c);
/* Parse what is buffered, one message at a time. */
void ebb__http_process_input(struct conn *c);
/* The answer is complete (ebb_http_respond, a stream's end or failure):
 * go on with the next request, or close. */
void ebb__http_request_done(struct conn *c);

/* ---- httpd_write.c: writing ---------------------------------------------------- */

/* Queue a..., b..., t... as one write. */
int ebb__http_conn_write(struct conn *c, const char *a, size_t an, const char *b, size_t bn,
                         const char *t, size_t tn);
/* What a stream holds, then its last chunk. */
int ebb__http_stream_finish(struct conn *c);
/* Hand `data` (malloc'd, taken whatever happens) to libuv as it is,
 * counted as `counted` queued bytes until written: TLS records. */
int ebb__http_conn_send_raw(struct conn *c, char *data, size_t len, size_t counted);

/* ---- httpd_tls.c: HTTPS ----------------------------------------------------------- */

/* The server's context from opts->tls (include/ebb/httpd.h). */
int ebb__http_tls_ctx(const struct ebb_httpd_tls *cfg, SSL_CTX **out, struct ebb_error *err);
void ebb__http_tls_ctx_free(SSL_CTX *ctx);
/* A new connection's TLS state (server side, not started). */
int ebb__http_tls_accept(struct conn *c, SSL_CTX *ctx);
void ebb__http_tls_free(struct conn *c);
/* Where libuv reads ciphertext into. */
uv_buf_t ebb__http_tls_read_buf(struct conn *c);
/* `n` bytes of ciphertext came: the handshake goes on (its records are
 * sent), plaintext is appended to c->in. 0, or < 0: the connection must
 * be closed (a failed handshake, a TLS error, the client's close_notify). */
int ebb__http_tls_input(struct conn *c, size_t n);
/* Encrypt ub[0..n) into one malloc'd buffer of records (*out, *outlen). */
int ebb__http_tls_seal(struct conn *c, const uv_buf_t *ub, unsigned n, char **out, size_t *outlen);
/* Queue a close_notify (after what is queued), once the handshake is done. */
void ebb__http_tls_close_notify(struct conn *c);

#endif
