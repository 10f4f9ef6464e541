/* ebb/httpd.h: a small HTTP/1.1 server on libuv, requests parsed by
 * http_parser.
 *
 * Serves `ebb serve` (a snapshot as a Kubernetes API) and ebb's own
 * /metrics, /healthz and /readyz. Everything runs on the loop thread, in I/O
 * and timer callbacks: handlers answer from the cache and never call into
 * Lua (ARCHITECTURE principle 5).
 *
 * A connection carries one request at a time: the next one (keep-alive,
 * pipelined) is parsed only when the answer to the current one is complete.
 * The handler is called once per request with its method, path, query,
 * headers and whole body, and answers exactly once, now or later (from a
 * timer, after a delay):
 *
 *   - ebb_http_respond: status, headers, a body (Content-Length);
 *   - ebb_http_stream_begin, ebb_http_stream_write..., ebb_http_stream_end:
 *     a chunked response of any length (watches).
 *
 * A request is valid from the handler call until its answer is complete
 * (ebb_http_respond or ebb_http_stream_end returned), it was aborted, or its
 * gone callback ran: the connection died first (the client went away, a
 * write failed, the client stopped reading a stream and more than
 * max_queued bytes piled up, or the server is closing). Whoever keeps a
 * request past the handler call (a delayed answer, a watch) sets a gone
 * callback and forgets the request in it.
 *
 * Malformed requests get 400, bodies over max_body 413, and the connection
 * is closed; "Expect: 100-continue" is answered. Connections idle longer
 * than idle_timeout_ms between requests are closed.
 *
 * Bounded whatever clients do: at most max_connections (a new one takes
 * the place of one idle the longest, else not reading its answers the
 * longest, else trickling its request head over a second); past them,
 * EBB_HTTPD_PROBE_SLOTS more that answer only GET and HEAD of /healthz,
 * /readyz and /livez (and their subpaths; anything else there gets 429),
 * so that probes are answered whatever the other clients do. A pipelined
 * request is parsed only once the answers before it are written down to
 * 1 MiB, and a client that sends more than 256 KiB ahead of its answers is
 * not read until they are done; an answer that waits write_timeout_ms
 * without a byte taken drops its connection, as does a request not
 * complete request_timeout_ms after its first byte; a body that would take
 * the bodies held at once over max_total_body gets 429 (the API server's
 * "Too many requests"), one over max_body 413. Every byte queued for a
 * client (answers, stream chunks written or held) counts toward
 * max_total_queued: over it, the connections that do not read or stream,
 * holding the most first, are ended; an answer still without room is
 * replaced by that 429 (never a probe's small answer), a stream write
 * fails. A request that may change something (any method but GET, HEAD,
 * OPTIONS) has room for its answer (max_body) reserved before its handler
 * is called, or gets that 429 without the handler: its answer, once the
 * handler runs, is never replaced. A body is freed once its answer is
 * done. Memory: at most about max_total_body + max_total_queued +
 * (max_connections + EBB_HTTPD_PROBE_SLOTS) * 600 KiB (read-ahead,
 * headers); one answer larger than max_total_queued is written on while
 * its client reads.
 *
 * With opts.tls, every connection is TLS: a handshake not finished
 * handshake_timeout_ms after accept, or failed (a client that speaks plain
 * HTTP or garbage), drops the connection; at max_connections one still in
 * its handshake after a second gives its place like a trickling head; a
 * handshaking connection in a probe slot has the slot's deadline. The
 * bounds above count plaintext bytes.
 */
#ifndef EBB_HTTPD_H
#define EBB_HTTPD_H

#include <uv.h>

#include "common.h"

struct ebb_httpd;
struct ebb_http_req;

/* Connections taken past max_connections to answer probes. */
#define EBB_HTTPD_PROBE_SLOTS 16

/* A request is complete: answer it (now or later). */
typedef void (*ebb_http_handler_fn)(struct ebb_http_req *req, void *ud);
/* The connection of an unanswered or streaming request went away: `req`
 * is invalid once this returns; no ebb_http_* call on it from here on. */
typedef void (*ebb_http_gone_fn)(struct ebb_http_req *req, void *ud);

/* HTTPS (engine/base/httpd_tls.c, OpenSSL over memory BIOs): TLS 1.2 and
 * up, HTTP/1.1. The certificate is cert_file and key_file (PEM; both or
 * neither), else the pair in cert_dir (apiserver.crt, apiserver.key, as
 * Kubernetes' secure serving names it) when both are there, else a new
 * self-signed one (ECDSA P-256, SANs localhost, 127.0.0.1, ::1 and
 * `hostname`, valid 1 year), written to cert_dir when it is set (made if
 * missing; the key mode 0600), else kept in memory. Errors set err->field
 * to "cert_file", "key_file" or "cert_dir" (the caller names its flag) and
 * err->file to the path. */
struct ebb_httpd_tls {
    const char *cert_file;
    const char *key_file;
    const char *cert_dir;
    const char *hostname;      /* a SAN of the generated certificate; NULL: gethostname() */
};

struct ebb_httpd_opts {
    const char *host;          /* numeric IPv4/IPv6 or "localhost"; NULL: "127.0.0.1" */
    int port;                  /* 0: a free port (see ebb_httpd_port) */
    ebb_http_handler_fn handler;
    void *ud;                  /* for the handler */
    size_t max_body;           /* 0: 8 MiB */
    size_t max_queued;         /* unwritten bytes of a stream, per connection; 0: 16 MiB */
    size_t max_total_queued;   /* unwritten bytes of all connections, streams and the
                                  answers reserved for writes included; 0: 256 MiB */
    size_t max_total_body;     /* request bodies held at once, all connections; 0: 64 MiB */
    unsigned max_connections;  /* open at once; 0: 256 */
    unsigned idle_timeout_ms;  /* between requests; 0: 120000 */
    unsigned write_timeout_ms; /* an answer waiting without a byte taken; 0: 30000 */
    unsigned request_timeout_ms; /* from a request's first byte to its last; 0: 60000 */
    const struct ebb_httpd_tls *tls; /* NULL: plain HTTP; else HTTPS only (copied) */
    unsigned handshake_timeout_ms; /* accept to a finished TLS handshake; 0: 10000 */
};

/* Bind and listen. EBB_EINVAL for a missing handler, a bad host or port;
 * for a TLS certificate or key (err->field, err->file): EBB_EIO when it
 * cannot be read or written, EBB_ESCHEMA when it is not PEM or the key
 * does not match;
 * EBB_EIO when the address cannot be bound (err->msg says why: "listen
 * 127.0.0.1:80: address already in use"). `err` may be NULL. On EBB_EIO
 * the handles already opened are closing: run the loop before
 * uv_loop_close, as after ebb_httpd_close. */
int ebb_httpd_create(uv_loop_t *loop, const struct ebb_httpd_opts *opts, struct ebb_httpd **out,
                     struct ebb_error *err);

/* The port bound (the one the kernel picked when opts->port was 0). */
int ebb_httpd_port(const struct ebb_httpd *h);

/* Connections open now (tests, metrics). */
size_t ebb_httpd_connections(const struct ebb_httpd *h);

struct ebb_httpd_stats {
    size_t connections;        /* open now */
    size_t queued;             /* unwritten answer bytes now (held ones too), all connections */
    size_t bodies;             /* memory of the request bodies held now */
    size_t stalled;            /* connections with answers queued whose clients took
                                  nothing since the sweep before */
    uint64_t refused;          /* connections closed at once: over max_connections */
    uint64_t dropped;          /* slow readers, slow senders, the largest queues over
                                  max_total_queued */
    uint64_t busy;             /* 429s: a body over max_total_body, an answer over
                                  max_total_queued */
    uint64_t probes;           /* connections taken in a probe slot */
    uint64_t handshakes_failed; /* TLS handshakes that failed or timed out */
};
void ebb_httpd_stats(const struct ebb_httpd *h, struct ebb_httpd_stats *out);

/* Stop: no new connections; idle connections close; an unanswered request
 * gets its gone callback and its connection closes; a stream is ended
 * cleanly (the last chunk is written, then the gone callback runs and the
 * connection closes after the write; one whose client does not read is
 * closed after 2 s anyway). `cb` (may be NULL) runs once every handle is
 * closed and all memory is freed. NULL-safe; call once. */
void ebb_httpd_close(struct ebb_httpd *h, void (*cb)(void *ud), void *ud);

/* ---- the request (borrowed until it is answered or gone) ------------------- */

const char *ebb_http_req_method(const struct ebb_http_req *r);   /* "GET" */
/* The path, percent-decoded, without the query ("/api/v1/pods"). */
const char *ebb_http_req_path(const struct ebb_http_req *r);
/* The raw query string after '?' ("" when none). */
const char *ebb_http_req_query_string(const struct ebb_http_req *r);
/* The decoded value of the first query parameter `key`: NULL when absent,
 * "" for "?watch" or "?watch=". */
const char *ebb_http_req_query(const struct ebb_http_req *r, const char *key);
/* The first header `name` (case-insensitive), or NULL. */
const char *ebb_http_req_header(const struct ebb_http_req *r, const char *name);
/* The body (NUL-terminated; *len may be NULL). "" when there is none. */
const char *ebb_http_req_body(const struct ebb_http_req *r, size_t *len);
/* The peer as "127.0.0.1:50412" (logs). */
const char *ebb_http_req_peer(const struct ebb_http_req *r);

/* Set (or replace with NULL `fn`) the gone callback. */
void ebb_http_req_on_gone(struct ebb_http_req *r, ebb_http_gone_fn fn, void *ud);

/* ---- answering ------------------------------------------------------------------ */

/* Add a response header (copied) before respond/stream_begin. CR or LF in
 * either string: EBB_EINVAL. */
int ebb_http_add_header(struct ebb_http_req *r, const char *name, const char *value);

/* The whole answer: status line, Content-Type (NULL: none),
 * Content-Length, the added headers, `body` (copied; HEAD gets no body).
 * The request is done when this returns, even on failure (a connection
 * that cannot be written to is closed). EBB_ESTATE if already answered. */
int ebb_http_respond(struct ebb_http_req *r, int status, const char *content_type,
                     const char *body, size_t len);

/* Start a chunked answer; the status line and headers go out now. */
int ebb_http_stream_begin(struct ebb_http_req *r, int status, const char *content_type);
/* One chunk (copied; len 0 writes nothing). EBB_EIO when the connection
 * cannot take it (closed, the client reads so slowly that max_queued bytes
 * wait, or the total of unwritten answers has no room and this stream
 * holds the most): the connection is dropped and the request is invalid;
 * the gone callback is not called (the caller, who sees the error, cleans
 * up). Making room may end other streams: their gone callbacks run later,
 * from the loop. */
int ebb_http_stream_write(struct ebb_http_req *r, const char *data, size_t len);
/* Hold a chunk (copied) to go out with the next ebb_http_stream_flush,
 * stream_write or stream_end, in one write: many small events, one
 * system call. Held bytes count toward max_queued and max_total_queued as
 * written ones do; EBB_EIO as for ebb_http_stream_write. */
int ebb_http_stream_hold(struct ebb_http_req *r, const char *data, size_t len);
/* Write what is held, as one chunk (nothing held: nothing). EBB_EIO as for
 * ebb_http_stream_write. */
int ebb_http_stream_flush(struct ebb_http_req *r);
/* Bytes written to a stream (or held) that its client has not taken yet (a
 * writer that waits for its reader; 0 when not streaming). */
size_t ebb_http_stream_unsent(const struct ebb_http_req *r);
/* The last chunk: the answer is complete, the request done. */
int ebb_http_stream_end(struct ebb_http_req *r);

/* Drop the connection now, without an answer (fault injection, a client
 * to get rid of). No gone callback; the request is invalid. */
void ebb_http_req_abort(struct ebb_http_req *r);

/* "OK", "Not Found"... for a status code ("" when unknown). */
const char *ebb_http_status_text(int status);

#endif
