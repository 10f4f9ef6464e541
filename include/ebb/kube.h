/* ebb/kube.h: talking to the Kubernetes API server.
 *
 * Config: in-cluster (KUBERNETES_SERVICE_HOST/PORT, the service-account
 * token, CA and namespace files; the token file is re-read as it rotates)
 * or a kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config; current
 * context; bearer token, client certificate and key as files or data, CA as
 * file or data, insecure-skip-tls-verify, an exec credential plugin). TLS
 * is always verified unless the kubeconfig says otherwise.
 *
 * Client: libcurl multi driven by a libuv loop (uv_poll per socket, one
 * uv_timer for curl's timeouts). Every callback runs on the loop thread, in
 * an I/O callback: never call into Lua from one (ARCHITECTURE principle 5).
 * Writes go through a token bucket (qps, burst). Reads that fail in a way
 * the API says is safe to retry (connection errors, 429 with Retry-After,
 * 500/502/503/504) are retried with exponential backoff and full jitter;
 * writes are never retried by this layer.
 */
#ifndef EBB_KUBE_H
#define EBB_KUBE_H

#include <uv.h>

#include "common.h"

/* users[].user.exec: a credential plugin (client.authentication.k8s.io v1
 * or v1beta1) run without a shell, as client-go runs it. */
struct ebb_kube_exec {
    char *api_version;     /* "client.authentication.k8s.io/v1" or ".../v1beta1" */
    char **argv;           /* command (resolved as client-go does), then args; NULL-ended */
    char **env;            /* "NAME=value" added to ebb's environment; NULL-ended */
    char *install_hint;    /* printed when the command is not found, or NULL */
    char *exec_info;       /* the KUBERNETES_EXEC_INFO JSON (spec.cluster with provideClusterInfo) */
    char *where;           /* for messages: "FILE: users[N].user.exec" */
};

/* What a plugin answered (ExecCredential status). */
struct ebb_kube_cred {
    char *token;                 /* or NULL */
    char *cert_data, *key_data;  /* PEM, both or neither */
    int64_t expires;             /* seconds since the epoch; EBB_TIME_NONE: never */
};

struct ebb_kube_config {
    char *server;          /* "https://10.96.0.1:443" */
    char *token;           /* bearer token, or NULL */
    char *token_file;      /* re-read when it changes (in-cluster, tokenFile) */
    char *ca_file;         /* PEM file, or */
    char *ca_data;         /* PEM bytes (decoded from certificate-authority-data) */
    char *cert_file, *key_file;   /* client certificate, or */
    char *cert_data, *key_data;   /* as PEM bytes */
    bool insecure;         /* insecure-skip-tls-verify */
    bool no_gzip;          /* disable-compression: answers are not asked for gzip */
    char *namespace;       /* in-cluster namespace file, or the context's namespace */
    char *source;          /* for messages: "in-cluster" or "PATH (context NAME)" */
    struct ebb_kube_exec *exec;   /* a credential plugin, or NULL */
};

/* Find and read the configuration: `kubeconfig` (may be NULL), else
 * $KUBECONFIG (the first file of the list that exists), else the in-cluster
 * service account when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
 * `context` (may be NULL) overrides current-context. A missing or unreadable
 * file, a context/cluster/user that is not there, a referenced file that
 * does not exist: EBB_EIO/EBB_ESCHEMA with the file, line and field. */
int ebb_kube_config_load(const char *kubeconfig, const char *context,
                         struct ebb_kube_config **out, struct ebb_error *err);
void ebb_kube_config_free(struct ebb_kube_config *c);

/* The plugins (kube_exec.c). ebb_kube_exec_run blocks while the plugin
 * runs (the client runs it on libuv's thread pool, never on the loop
 * thread): at most EBB_KUBE_EXEC_TIMEOUT_MS, its stdout read up to
 * EBB_KUBE_EXEC_OUT_MAX bytes; past either it is killed. It touches
 * nothing but its arguments. */
#define EBB_KUBE_EXEC_TIMEOUT_MS 30000
#define EBB_KUBE_EXEC_OUT_MAX ((size_t)1 << 20)
void ebb_kube_exec_free(struct ebb_kube_exec *x);                       /* NULL-safe */
int ebb_kube_exec_dup(const struct ebb_kube_exec *x, struct ebb_kube_exec **out);
void ebb_kube_cred_clear(struct ebb_kube_cred *c);                      /* keeps c */
/* Read a plugin's stdout as client-go does: an ExecCredential of the
 * configured apiVersion with a status holding a token or a client
 * certificate and key (both), and an optional expirationTimestamp.
 * Anything else is EBB_EPARSE/EBB_ESCHEMA with err->field naming the field
 * ("status.token", "apiVersion", ...). On success *out is filled (the
 * caller clears it). */
int ebb_kube_exec_parse(const char *api_version, const char *text, size_t len,
                        struct ebb_kube_cred *out, struct ebb_error *err);
/* Run the plugin and parse its answer. A command not found (with the
 * installHint), a non-zero exit, a timeout or too much output: EBB_EIO
 * naming the command. */
int ebb_kube_exec_run(const struct ebb_kube_exec *x, struct ebb_kube_cred *out,
                      struct ebb_error *err);

struct ebb_kube;
struct ebb_kube_req;

/* What ebb takes in of an answer (README "Bounds"): a request's body at
 * most EBB_KUBE_ANSWER_MAX unless it says otherwise (max_bytes); of the
 * error body of a stream or a sink, the first EBB_KUBE_ERROR_MAX bytes
 * (only its message is read). */
#define EBB_KUBE_ANSWER_MAX ((size_t)16 << 20)
#define EBB_KUBE_ERROR_MAX ((size_t)64 << 10)

struct ebb_kube_opts {
    double qps;            /* writes per second; 0: 50 */
    int burst;             /* 0: 100 */
    long timeout_ms;       /* per request unless streaming; 0: 30000 */
    int max_retries;       /* reads; 0: 5 */
    const char *user_agent;   /* NULL: "ebb/VERSION" */
};

/* Called once per received chunk of a streaming request (watch) or of the
 * 2xx body of a sink (on_data without stream). */
typedef void (*ebb_kube_data_cb)(struct ebb_kube_req *req, const char *data, size_t len, void *ud);
/* Called once a stream's answer has begun with a 2xx status (its headers
 * are in), before any data: the server accepted the watch. */
typedef void (*ebb_kube_open_cb)(struct ebb_kube_req *req, void *ud);
/* Called once when a request ends. status: the HTTP status, or a negative
 * EBB_E* for a transport failure (then body holds curl's message). For a
 * non-streaming request body holds the whole response. After this call the
 * request is freed. */
typedef void (*ebb_kube_done_cb)(struct ebb_kube_req *req, int status, const char *body,
                                 size_t len, void *ud);

struct ebb_kube_req_opts {
    const char *method;        /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *path;          /* "/api/v1/pods?limit=500", already escaped */
    const char *body;          /* may be NULL */
    size_t body_len;
    const char *content_type;  /* NULL: application/json when there is a body */
    bool stream;               /* deliver chunks to on_data, no timeout but low-speed */
    bool write;                /* rate-limited, never retried */
    long timeout_ms;           /* 0: the client's default */
    /* Not a stream: the body at most this (0: EBB_KUBE_ANSWER_MAX). Past
     * it, or a Content-Length past it (refused before reading), the
     * request ends with EBB_ELIMIT, never retried. With on_data (a sink:
     * a LIST read as it comes) a 2xx body goes to on_data as it arrives,
     * nothing of it buffered, max_bytes in all; the request keeps its
     * timeout and is retried only until a first chunk was handed on;
     * on_done then has no body. */
    size_t max_bytes;
    ebb_kube_data_cb on_data;
    ebb_kube_done_cb on_done;
    ebb_kube_open_cb on_open;  /* streams only; may be NULL */
    void *ud;
};

int ebb_kube_create(uv_loop_t *loop, const struct ebb_kube_config *cfg,
                    const struct ebb_kube_opts *opts, struct ebb_kube **out, struct ebb_error *err);
/* Start a request; *out (may be NULL) stays valid until on_done. on_done
 * never runs inside this call (it starts from the loop). */
int ebb_kube_request(struct ebb_kube *k, const struct ebb_kube_req_opts *o,
                     struct ebb_kube_req **out);
/* Abort a request: on_done is called with EBB_ESTATE ("cancelled") before
 * this returns, so `ud` may be freed right after. Safe from any callback. */
void ebb_kube_cancel(struct ebb_kube_req *req);
/* Cancel everything (every on_done runs before this returns), close the
 * handles; `cb` runs when memory is freed. Safe from any callback. */
void ebb_kube_close(struct ebb_kube *k, void (*cb)(void *ud), void *ud);
/* The bytes of every answer's body so far: as they came (*received:
 * gzip-encoded where the server encoded them) and as ebb read them
 * (*decoded). */
void ebb_kube_answer_bytes(const struct ebb_kube *k, uint64_t *received, uint64_t *decoded);

/* A bearer token ebb sends: 1 to EBB_KUBE_TOKEN_MAX bytes of visible ASCII
 * (0x21-0x7e): anything else (a newline, a NUL, a space) would break the
 * request's headers or forge others. Every token that enters the client
 * is checked so (ebb_kube_create, the token file, ebb_kube_set_token). */
#define EBB_KUBE_TOKEN_MAX 16384
bool ebb_kube_token_ok(const char *s, size_t len);

/* Send `token` (copied; NULL: none) as the bearer token of the requests
 * that start from now on, instead of the configured one or file (a token
 * read from a Secret). EBB_EINVAL (not a token: ebb_kube_token_ok) and
 * EBB_ENOMEM leave the old one. */
int ebb_kube_set_token(struct ebb_kube *k, const char *token);

/* What an answer says, for messages: the Status's message and its causes'
 * ("pods is forbidden: ..."), or the start of a body that is not a Status;
 * for a transport failure (status < 0), curl's message. */
void ebb_kube_status_message(int status, const char *body, size_t len, char *out, size_t outlen);

/* The one way an answer is told in a log line or an error: "WHAT: 403
 * <the Status's message and causes, whole>" for an HTTP answer (its
 * reason phrase when it has no message: "WHAT: 401 Unauthorized");
 * "WHAT: <what failed>" for a transport failure, a local refusal or a
 * credential plugin's failure (status < 0): an internal code is never
 * shown as if it were an HTTP status. Cut to fit `outlen` only. */
void ebb_kube_answer_text(const char *what, int status, const char *body, size_t len, char *out,
                          size_t outlen);

/* Why the last run of the exec credential plugin failed (the message the
 * requests it failed ended with), NULL when it succeeded or never ran.
 * Valid until the next request starts. */
const char *ebb_kube_cred_error(const struct ebb_kube *k);

/* Requests in flight (tests, metrics). */
size_t ebb_kube_inflight(const struct ebb_kube *k);

#endif
