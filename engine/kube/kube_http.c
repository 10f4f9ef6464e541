/* The API client: a libcurl multi handle driven by the libuv loop (one
 * uv_poll per socket curl asks about, one uv_timer for curl's timeouts, as
 * in curl's multi-uv.c), plus one "wake" timer of our own that starts
 * queued requests, refills the write token bucket, fires retries and
 * releases cancelled transfers. Everything runs on the loop thread.
 *
 * libcurl forbids curl_multi_add_handle/remove_handle from inside its own
 * callbacks (on_data runs inside one), so ebb_kube_request never touches
 * the multi handle: it queues and arms the wake timer, which runs outside
 * any curl callback (on_done never runs inside ebb_kube_request).
 * ebb_kube_cancel and ebb_kube_close call on_done(EBB_ESTATE) before they
 * return, so a caller may free its `ud` right after; a transfer still in
 * curl stays behind as a "zombie" (no more callbacks) that the wake timer
 * removes from the multi handle and frees.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ebb/kube.h"
#include "kube/gunzip.h"

#define BACKOFF_BASE_MS 100
#define BACKOFF_CAP_MS 30000
#define RETRY_AFTER_MAX_S 600       /* a Retry-After beyond this is taken as this */
#define READ_BATCH_MS 2             /* a socket that gave bytes is read again after this (poll_cb) */
#define STREAM_IDLE_MS 300000       /* a stream silent this long is dead */
#define CONNECT_TIMEOUT_MS 10000

/* ---- an intrusive circular list ------------------------------------------- */

struct qnode {
    struct qnode *prev, *next;
};

static void q_init(struct qnode *h) { h->prev = h->next = h; }
static bool q_empty(const struct qnode *h) { return h->next == h; }

static void q_push(struct qnode *h, struct qnode *n)
{
    n->prev = h->prev;
    n->next = h;
    h->prev->next = n;
    h->prev = n;
}

/* Safe on a node that is in no list (self-linked). */
static void q_remove(struct qnode *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = n;
}

#define q_data(p, type, field) ((type *)(void *)((char *)(p) - offsetof(type, field)))

/* ---- types ---------------------------------------------------------------- */

enum req_state {
    RS_READY,     /* in k->readyq: start at the next wake */
    RS_RATE,      /* in k->rateq: a write waiting for a token */
    RS_RETRY,     /* in k->retryq: waiting for its backoff */
    RS_CRED,      /* in k->credq: waiting for the exec plugin's run */
    RS_ACTIVE,    /* added to the multi handle */
    RS_DONE,      /* inside on_done */
    RS_ZOMBIE,    /* in k->zombies: on_done was called, curl still has it */
};

struct ebb_kube_req {
    struct ebb_kube *k;
    struct qnode all;            /* k->reqs */
    struct qnode q;              /* the queue of its state */
    enum req_state state;
    bool in_multi;
    CURL *easy;
    struct curl_slist *headers;
    char *url, *method, *body, *content_type;
    size_t body_len;
    bool stream, write, delivered;
    bool sink;                   /* a 2xx body goes to on_data as it comes (not a stream) */
    bool oom;                    /* on_write could not keep the body */
    bool too_big;                /* the body went past max_bytes */
    size_t max_bytes;            /* of the body (a sink's in all), see EBB_KUBE_ANSWER_MAX */
    size_t got;                  /* body bytes of this attempt */
    long timeout_ms;
    int attempts;
    uint64_t due;                /* RS_RETRY: uv_hrtime() to start at */
    ebb_kube_data_cb on_data;
    ebb_kube_done_cb on_done;
    ebb_kube_open_cb on_open;
    bool opened;                 /* on_open ran for this attempt */
    void *ud;
    char *buf;                   /* response body (error body of a stream) */
    size_t len, cap;
    char errbuf[CURL_ERROR_SIZE];
    bool reauthed;               /* a 401 made it run the exec plugin again (once) */
    bool cred_given;             /* a run of the plugin it waited for just ended */
    unsigned cred_gen;           /* of the plugin's credential it was sent with */
    /* A gzip-encoded answer (Content-Encoding: gzip), inflated as it comes
     * (kube/gunzip.h); enc_err says why an encoding was refused. */
    bool gz;
    struct ebb__gunzip gunzip;
    char enc_err[160];
    bool paused;                 /* a stream that had its share of a loop turn */
    bool resuming;               /* inside unpause_all's curl_easy_pause */
    uint64_t turn;               /* the turn turn_bytes counts */
    size_t turn_bytes;
};

struct sock {
    uv_poll_t poll;
    uv_timer_t batch;            /* active: read again after READ_BATCH_MS (read_later) */
    int events;                  /* what curl last asked to watch */
    int nclosed;                 /* of the two handles */
    struct ebb_kube *k;
    curl_socket_t fd;
    struct qnode link;           /* k->socks */
};

struct ebb_kube {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t curl_timer;
    uv_timer_t wake;
    uv_idle_t soon;              /* "now" for curl and paused streams, see soon_cb */
    int handles;                 /* uv handles not yet closed */
    bool closing, cleaning;
    void (*close_cb)(void *ud);
    void *close_ud;

    struct qnode reqs, readyq, rateq, retryq, credq, zombies, socks;
    size_t nreqs;                /* requests whose on_done has not run */

    char *server, *user_agent;
    char *token;                 /* current bearer token */
    char *token_file;
    struct stat token_st;        /* of the last read */
    bool token_read;
    char *ca_file, *ca_data, *cert_file, *cert_data, *key_file, *key_data;
    bool insecure;
    bool gzip;                   /* answers asked for gzip (Accept-Encoding) */
    uint64_t received, decoded;  /* see ebb_kube_answer_bytes */
    unsigned char inflated[64 * 1024];   /* inflate_body's output, handed on at once */
    /* An exec credential plugin: its answer is cached until its
     * expirationTimestamp, and dropped on a 401 to the credential it is
     * (cred_gen tells a 401 to an older one, already replaced, apart). */
    struct ebb_kube_exec *exec;
    struct ebb_kube_cred cred;
    bool have_cred;
    unsigned cred_gen;
    char *cred_error;            /* the last run's failure, NULL once one succeeds */
    /* The plugin runs on libuv's thread pool (it may take seconds: a cloud
     * CLI fetching a token), never on the loop thread: the requests that
     * need its credential wait in credq, and one run serves them all.
     * While it runs the work holds a reference (k->handles), so k outlives
     * it; the worker writes only run_rc, run_cred and run_msg, which the
     * loop thread reads in cred_after once the run has ended. */
    uv_work_t run;
    bool running;
    int run_rc;
    struct ebb_kube_cred run_cred;
    char run_msg[sizeof(((struct ebb_error *)0)->msg) + 600];

    uint64_t turn;               /* bumped by every callback from the loop */
    bool any_paused;
    double qps, tokens;
    int burst;
    uint64_t refilled;           /* uv_hrtime() of the last refill */
    long timeout_ms;
    int max_retries;
    uint64_t rng;
};

static void wake_cb(uv_timer_t *t);

/* What a stream hands on in one turn of the loop before it yields. */
#define STREAM_TURN_BYTES ((size_t)1 << 20)

/* ---- small helpers -------------------------------------------------------- */

static uint64_t rng_next(struct ebb_kube *k)
{
    /* xorshift64*: jitter needs spread, not quality */
    k->rng ^= k->rng >> 12;
    k->rng ^= k->rng << 25;
    k->rng ^= k->rng >> 27;
    return k->rng * 0x2545F4914F6CDD1DULL;
}

static int dupopt(const char *s, char **out)
{
    if (s == NULL)
        return 0;
    *out = strdup(s);
    return *out == NULL ? EBB_ENOMEM : 0;
}

/* Run the wake timer after `ms` (0: next loop iteration) unless it is due
 * sooner already. */
static void arm(struct ebb_kube *k, uint64_t ms)
{
    if (k->cleaning)
        return;
    if (uv_is_active((uv_handle_t *)&k->wake)) {
        uint64_t left = uv_timer_get_due_in(&k->wake);
        if (left <= ms)
            return;
    }
    uv_timer_start(&k->wake, wake_cb, ms, 0);
}

/* One uv handle of k is gone; the last one frees k. */
static void unref(struct ebb_kube *k)
{
    void (*cb)(void *) = k->close_cb;
    void *ud = k->close_ud;

    if (--k->handles > 0)
        return;
    free(k->server);
    free(k->user_agent);
    free(k->token);
    free(k->token_file);
    free(k->ca_file);
    free(k->ca_data);
    free(k->cert_file);
    free(k->cert_data);
    free(k->key_file);
    free(k->key_data);
    ebb_kube_exec_free(k->exec);
    ebb_kube_cred_clear(&k->cred);
    free(k->cred_error);
    free(k);
    curl_global_cleanup();
    if (cb != NULL)
        cb(ud);
}

static void handle_closed(uv_handle_t *h)
{
    unref(h->data);
}

/* ---- curl <-> libuv -------------------------------------------------------- */

static void check_done(struct ebb_kube *k);

static void drive(struct ebb_kube *k, curl_socket_t fd, int flags)
{
    int running;

    k->turn++;
    curl_multi_socket_action(k->multi, fd, flags, &running);
    check_done(k);
}

static void poll_cb(uv_poll_t *h, int status, int events);
static void batch_cb(uv_timer_t *t);

/* After s was read: when that gave bytes and curl only wants to read
 * more, s is read again READ_BATCH_MS later, not at its next packet. While
 * a large answer streams in (a LIST page, a streaming list) ebb wakes once
 * per READ_BATCH_MS and reads what came meanwhile in one go, instead of
 * once per packet the server wrote. Once a read finds nothing new, the
 * socket is polled again, so a lone answer is read as soon as it comes.
 * false: it is not (closed, or polled as curl asks). */
static bool read_later(struct sock *s, uint64_t received_before)
{
    if (uv_is_closing((uv_handle_t *)&s->poll) || s->k->received == received_before ||
        s->events != UV_READABLE)
        return false;
    uv_poll_stop(&s->poll);
    uv_timer_start(&s->batch, batch_cb, READ_BATCH_MS, 0);
    return true;
}

static void batch_cb(uv_timer_t *t)
{
    struct sock *s = t->data;
    uint64_t before = s->k->received;

    drive(s->k, s->fd, CURL_CSELECT_IN);
    /* curl may have let it go: freed once its handles are closed */
    if (!read_later(s, before) && !uv_is_closing((uv_handle_t *)&s->poll))
        uv_poll_start(&s->poll, s->events, poll_cb);
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
    struct sock *s = h->data;
    int flags = 0;
    uint64_t before = s->k->received;

    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    drive(s->k, s->fd, flags);
    read_later(s, before);
}

static void sock_closed(uv_handle_t *h)
{
    struct sock *s = h->data;
    struct ebb_kube *k = s->k;

    if (++s->nclosed < 2)
        return;
    free(s);
    unref(k);
}

static void sock_close(struct sock *s)
{
    q_remove(&s->link);
    uv_close((uv_handle_t *)&s->poll, sock_closed);
    uv_close((uv_handle_t *)&s->batch, sock_closed);
}

static int socket_fn(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct ebb_kube *k = userp;
    struct sock *s = socketp;
    int events = 0, rc;

    if (what == CURL_POLL_REMOVE) {
        if (s != NULL) {
            if (!k->cleaning)
                curl_multi_assign(k->multi, fd, NULL);
            sock_close(s);
        }
        return 0;
    }
    if (s == NULL) {
        if ((s = calloc(1, sizeof(*s))) == NULL)
            return -1;
        if ((rc = uv_poll_init_socket(k->loop, &s->poll, fd)) != 0) {
            ebb_log(EBB_LOG_ERROR, "kube: uv_poll_init_socket(%d): %s", (int)fd, uv_strerror(rc));
            free(s);
            return -1;
        }
        s->poll.data = s;
        uv_timer_init(k->loop, &s->batch);
        s->batch.data = s;
        s->k = k;
        s->fd = fd;
        q_push(&k->socks, &s->link);
        k->handles++;
        curl_multi_assign(k->multi, fd, s);
    }
    if (what & CURL_POLL_IN)
        events |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        events |= UV_WRITABLE;
    s->events = events;
    if (uv_is_active((uv_handle_t *)&s->batch)) {
        if (events == UV_READABLE)
            return 0;   /* batch_cb reads it, then polls */
        uv_timer_stop(&s->batch);
    }
    uv_poll_start(&s->poll, events, poll_cb);
    return 0;
}

static void curl_timer_cb(uv_timer_t *t)
{
    struct ebb_kube *k = t->data;

    drive(k, CURL_SOCKET_TIMEOUT, 0);
}

static void unpause_all(struct ebb_kube *k);

/* What curl wants done at once (a 0 ms timeout), and the streams that
 * paused, run here, once per loop turn. A 0 ms uv timer started from a
 * timer callback would run again in the same pass of the loop's timers,
 * and a stream that never runs dry would then never let the loop poll:
 * /healthz, /metrics and every other request would wait for the stream. */
static void soon_cb(uv_idle_t *h)
{
    struct ebb_kube *k = h->data;

    uv_idle_stop(h);
    if (k->cleaning || k->closing)
        return;
    if (k->any_paused)
        unpause_all(k);
    drive(k, CURL_SOCKET_TIMEOUT, 0);
}

static int timer_fn(CURLM *multi, long ms, void *userp)
{
    struct ebb_kube *k = userp;

    if (k->cleaning)
        return 0;
    if (ms < 0) {
        uv_timer_stop(&k->curl_timer);
    } else if (ms == 0) {
        uv_timer_stop(&k->curl_timer);
        uv_idle_start(&k->soon, soon_cb);
    } else {
        uv_timer_start(&k->curl_timer, curl_timer_cb, (uint64_t)ms, 0);
    }
    return 0;
}

/* ---- requests --------------------------------------------------------------- */

/* No encoding: before each answer, and when r is freed. */
static void gz_reset(struct ebb_kube_req *r)
{
    ebb__gunzip_reset(&r->gunzip);
    r->gz = false;
}

static void req_free(struct ebb_kube_req *r)
{
    if (r == NULL)
        return;
    if (r->easy != NULL)
        curl_easy_cleanup(r->easy);
    gz_reset(r);
    curl_slist_free_all(r->headers);
    free(r->url);
    free(r->method);
    free(r->body);
    free(r->content_type);
    free(r->buf);
    free(r);
}

/* Out of every queue and out of curl, then freed. Never inside a curl
 * callback while r is in the multi handle. */
static void release(struct ebb_kube_req *r)
{
    if (r->in_multi) {
        curl_multi_remove_handle(r->k->multi, r->easy);
        r->in_multi = false;
    }
    q_remove(&r->q);
    req_free(r);
}

/* The one call of on_done. */
static void deliver(struct ebb_kube_req *r, int status, const char *body, size_t len)
{
    q_remove(&r->q);
    q_remove(&r->all);
    r->k->nreqs--;
    r->state = RS_DONE;
    r->on_done(r, status, body != NULL ? body : "", len, r->ud);
}

/* The request ends: on_done, then it is freed. Outside curl callbacks. */
static void finish(struct ebb_kube_req *r, int status, const char *body, size_t len)
{
    deliver(r, status, body, len);
    release(r);
}

/* Cancelled (or the client closes): on_done now; free it now unless curl
 * has it, in which case the wake timer takes it out of curl later. */
static void abandon(struct ebb_kube_req *r, const char *why)
{
    struct ebb_kube *k = r->k;

    deliver(r, EBB_ESTATE, why, strlen(why));
    if (!r->in_multi) {
        release(r);
        return;
    }
    r->state = RS_ZOMBIE;
    q_push(&k->zombies, &r->q);
    arm(k, 0);
}

static void finish_msg(struct ebb_kube_req *r, int status, const char *msg)
{
    finish(r, status, msg, strlen(msg));
}

/* The decoded body bytes p[0, n) of an answer with status `code`: every
 * byte of an answer comes through here (decoded), and none is kept past a
 * bound: a plain request's body up to max_bytes (over it the request ends
 * with EBB_ELIMIT; a Content-Length over it is refused before reading,
 * CURLOPT_MAXFILESIZE_LARGE), a sink's body up to max_bytes in all while
 * it is handed on, a stream's chunks handed on as they come (its owner
 * bounds what it keeps of them), and the error body of a stream or a sink
 * up to EBB_KUBE_ERROR_MAX (its start says what went wrong). false: stop
 * the transfer (r says why). */
static bool take(struct ebb_kube_req *r, long code, const char *p, size_t n)
{
    size_t limit;

    r->k->decoded += n;
    if ((r->stream || r->sink) && code >= 200 && code < 300) {
        if (r->sink && (r->got += n) > r->max_bytes) {
            r->too_big = true;
            return false;
        }
        r->turn_bytes += n;
        r->delivered = true;
        r->on_data(r, p, n, r->ud);
        /* on_data may have cancelled it or closed the client */
        return r->state == RS_ACTIVE;
    }
    limit = r->stream || r->sink ? EBB_KUBE_ERROR_MAX : r->max_bytes;
    if (r->len + n > limit) {
        if (!r->stream && !r->sink) {
            r->too_big = true;
            return false;
        }
        if (r->len >= limit)
            return true;   /* the rest of an error body: its start is enough */
        n = limit - r->len;
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        char *nb;

        while (cap < r->len + n + 1)
            cap *= 2;
        if ((nb = realloc(r->buf, cap)) == NULL) {
            r->oom = true;
            return false;
        }
        r->buf = nb;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, p, n);
    r->len += n;
    r->buf[r->len] = '\0';
    return true;
}

struct taking {
    struct ebb_kube_req *r;
    long code;
};

static bool take_piece(void *ud, const char *p, size_t n)
{
    struct taking *t = ud;

    return take(t->r, t->code, p, n);
}

/* A gzip-encoded body's bytes p[0, n), inflated (kube/gunzip.h) into
 * k->inflated and handed to take piece by piece: every bound counts what
 * they decode to. A body that ends inside its gzip stream is refused in
 * complete(). */
static bool inflate_body(struct ebb_kube_req *r, long code, const char *p, size_t n)
{
    struct taking t = { r, code };
    const char *why = "";
    int rc = ebb__gunzip_feed(&r->gunzip, p, n, r->k->inflated, sizeof(r->k->inflated), take_piece, &t,
                              &why);

    if (rc == EBB_ENOMEM)
        r->oom = true;
    else if (rc == EBB_EIO)
        snprintf(r->enc_err, sizeof(r->enc_err), "the answer's gzip encoding is broken: %s", why);
    return rc == 0;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct ebb_kube_req *r = ud;
    size_t n = size * nmemb;
    long code = 0;

    if (r->state != RS_ACTIVE)
        return 0;   /* cancelled: stop the transfer */
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    if ((r->stream || r->sink) && code >= 200 && code < 300) {
        /* A stream that never runs dry (a watch under heavy churn, a
         * large LIST) would keep libcurl reading in one callback: past its
         * share of a loop turn it pauses (curl holds these n bytes, not
         * what they decode to), and soon_cb resumes it once the loop has
         * served everything else (/healthz, other requests, cycles). */
        if (r->turn != r->k->turn) {
            r->turn = r->k->turn;
            r->turn_bytes = 0;
        }
        if (r->turn_bytes >= STREAM_TURN_BYTES && !r->resuming) {
            r->paused = r->k->any_paused = true;
            uv_idle_start(&r->k->soon, soon_cb);
            return CURL_WRITEFUNC_PAUSE;
        }
    }
    r->k->received += n;
    if (r->gz)
        return inflate_body(r, code, ptr, n) ? n : 0;
    return take(r, code, ptr, n) ? n : 0;
}

/* A Content-Encoding header's value: gzip is inflated (inflate_body),
 * identity is none; anything else ebb did not ask for and cannot read. */
static bool content_encoding(struct ebb_kube_req *r, const char *v, size_t n)
{
    ebb_trim(&v, &n);   /* the header line's spaces and CRLF */
    if (n == 4 && strncasecmp(v, "gzip", 4) == 0) {
        r->gz = true;
        return true;
    }
    if (n == 8 && strncasecmp(v, "identity", 8) == 0)
        return true;
    snprintf(r->enc_err, sizeof(r->enc_err), "the answer is encoded as \"%.*s\", which ebb did not ask for",
             (int)(n < 60 ? n : 60), v);
    return false;
}

/* Each header line of an answer: a status line starts an answer (an
 * interim one, 1xx, has headers of its own), Content-Encoding says how
 * its body is encoded. The end of the headers (the blank line) of a
 * stream that answered 2xx: the stream is open, whether or not data
 * follows (a watch of a quiet resource may send nothing for minutes). */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    static const char ce[] = "content-encoding:";
    struct ebb_kube_req *r = ud;
    size_t n = size * nmemb;
    long code = 0;

    if (r->state != RS_ACTIVE)
        return 0;
    if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0)
        gz_reset(r);
    else if (n > sizeof(ce) - 1 && strncasecmp(ptr, ce, sizeof(ce) - 1) == 0 &&
             !content_encoding(r, ptr + sizeof(ce) - 1, n - (sizeof(ce) - 1)))
        return 0;
    if (r->on_open == NULL || r->opened || n > 2 || (n == 2 && ptr[0] != '\r') ||
        (n == 1 && ptr[0] != '\n'))
        return n;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300) {
        r->opened = true;
        r->on_open(r, r->ud);
    }
    return r->state == RS_ACTIVE ? n : 0;
}

bool ebb_kube_token_ok(const char *s, size_t len)
{
    if (s == NULL || len == 0 || len > EBB_KUBE_TOKEN_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

/* Re-read the token file when it changed (projected tokens rotate by an
 * atomic symlink swap: the inode changes, so does the mtime). A failed read
 * keeps the last good token, and so does a file that holds no token ebb
 * can send (larger than EBB_KUBE_TOKEN_MAX, or characters a header cannot
 * carry): never a cut one. */
static void refresh_token(struct ebb_kube *k)
{
    struct ebb_error ferr = { 0 };
    struct stat st;
    FILE *f;
    char buf[EBB_KUBE_TOKEN_MAX + 2];
    size_t n;

    if (k->token_file == NULL)
        return;
    if (stat(k->token_file, &st) != 0) {
        ebb_log(EBB_LOG_WARN, "kube: token file %s: %s", k->token_file, strerror(errno));
        return;
    }
    if (k->token_read && st.st_ino == k->token_st.st_ino && st.st_size == k->token_st.st_size &&
        st.st_mtim.tv_sec == k->token_st.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == k->token_st.st_mtim.tv_nsec)
        return;
    /* a FIFO named as the token file would block the loop thread */
    if (ebb_file_open(k->token_file, &f, &ferr) != 0) {
        ebb_log(EBB_LOG_WARN, "kube: token file %s: %s", k->token_file, ferr.msg);
        return;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    while (n > 0 && strchr(" \t\r\n", buf[n - 1]) != NULL)
        n--;
    buf[n] = '\0';
    if (n == 0) {
        ebb_log(EBB_LOG_WARN, "kube: token file %s is empty", k->token_file);
        return;
    }
    if (!ebb_kube_token_ok(buf, n)) {
        ebb_log(EBB_LOG_WARN, "kube: token file %s holds no bearer token (larger than %d bytes, "
                "or characters other than visible ASCII); the last one read stays", k->token_file,
                EBB_KUBE_TOKEN_MAX);
        return;
    }
    char *tok = strdup(buf);
    if (tok == NULL)
        return;
    free(k->token);
    k->token = tok;
    k->token_st = st;
    k->token_read = true;
}

int ebb_kube_set_token(struct ebb_kube *k, const char *token)
{
    char *t = NULL;

    if (k == NULL || (token != NULL && !ebb_kube_token_ok(token, strlen(token))))
        return EBB_EINVAL;
    if (token != NULL && (t = strdup(token)) == NULL)
        return EBB_ENOMEM;
    free(k->token);
    k->token = t;
    free(k->token_file);   /* the token given wins over a file from now on */
    k->token_file = NULL;
    return 0;
}

/* Whether a request about to start must wait for a run of the exec plugin:
 * a plugin is configured, the kubeconfig gives no token (which wins, as in
 * client-go), and there is no credential or it is past its
 * expirationTimestamp (client-go's getCreds). */
static bool needs_cred(const struct ebb_kube *k)
{
    if (k->exec == NULL || k->token != NULL || k->token_file != NULL)
        return false;
    return !(k->have_cred && (k->cred.expires == EBB_TIME_NONE || (int64_t)time(NULL) < k->cred.expires));
}

/* Thread pool: the plugin's run. Reads k->exec (not changed while k
 * lives), writes only the run_ fields. */
static void cred_work(uv_work_t *w)
{
    struct ebb_kube *k = w->data;
    struct ebb_error err = { 0 };

    k->run_rc = ebb_kube_exec_run(k->exec, &k->run_cred, &err);
    if (k->run_rc != 0)
        ebb_error_format(&err, k->run_msg, sizeof(k->run_msg));
}

/* Loop thread, once the run has ended: keep its credential (or its
 * failure, for ebb_kube_cred_error), then send every request that waited
 * for it, or fail each with the plugin's message. A closed client only
 * drops what the run gave: its requests were answered by ebb_kube_close. */
static void cred_after(uv_work_t *w, int status)
{
    struct ebb_kube *k = w->data;
    int rc = k->run_rc;

    (void)status;   /* UV_ECANCELED only after uv_cancel, which nothing calls */
    k->running = false;
    if (k->closing) {
        if (rc == 0)
            ebb_kube_cred_clear(&k->run_cred);
        unref(k);
        return;
    }
    free(k->cred_error);
    k->cred_error = NULL;
    if (rc == 0) {
        ebb_kube_cred_clear(&k->cred);
        k->cred = k->run_cred;
        memset(&k->run_cred, 0, sizeof(k->run_cred));
        k->have_cred = true;
        k->cred_gen++;
        ebb_log(EBB_LOG_DEBUG, "kube: exec plugin %s gave a %s", k->exec->argv[0],
                k->cred.token ? "token" : "client certificate");
    } else {
        k->cred_error = strdup(k->run_msg);
    }
    /* on_done may cancel, queue or close: take the head each time */
    while (!k->closing && !q_empty(&k->credq)) {
        struct ebb_kube_req *r = q_data(k->credq.next, struct ebb_kube_req, q);
        if (rc != 0) {
            finish_msg(r, rc, k->run_msg);
            continue;
        }
        q_remove(&r->q);
        r->state = RS_READY;
        r->cred_given = true;
        q_push(&k->readyq, &r->q);
    }
    arm(k, 0);
    unref(k);
}

/* Park r until the plugin has run; start a run unless one is under way. */
static void await_cred(struct ebb_kube_req *r)
{
    struct ebb_kube *k = r->k;

    r->state = RS_CRED;
    q_push(&k->credq, &r->q);
    if (k->running)
        return;
    k->running = true;
    k->handles++;
    k->run.data = k;
    (void)uv_queue_work(k->loop, &k->run, cred_work, cred_after);   /* fails only without cred_work */
}

static int build_headers(struct ebb_kube_req *r)
{
    struct ebb_kube *k = r->k;
    struct curl_slist *h = NULL, *t;
    char *line = NULL;
    const char *token;

#define ADD(s)                                                                                   \
    do {                                                                                         \
        if ((t = curl_slist_append(h, (s))) == NULL)                                             \
            goto fail;                                                                           \
        h = t;                                                                                   \
    } while (0)
    ADD("Accept: application/json");
    /* Answers gzip-encoded where the server will, as client-go asks
     * (kubeconfig disable-compression turns it off, as there): the API
     * server encodes answers over 128 KB (LISTs, not watch streams), about
     * a tenth of the bytes; on_write inflates them. */
    if (k->gzip)
        ADD("Accept-Encoding: gzip");
    ADD("Expect:");   /* no 100-continue round trip for large bodies */
    if (r->body != NULL) {
        if (asprintf(&line, "Content-Type: %s",
                     r->content_type ? r->content_type : "application/json") < 0) {
            line = NULL;
            goto fail;
        }
        ADD(line);
        free(line);
        line = NULL;
    }
    refresh_token(k);
    /* a token the kubeconfig gives wins over the plugin's, as in client-go */
    token = k->token != NULL ? k->token : k->have_cred ? k->cred.token : NULL;
    r->cred_gen = k->cred_gen;
    if (token != NULL) {
        if (asprintf(&line, "Authorization: Bearer %s", token) < 0) {
            line = NULL;
            goto fail;
        }
        ADD(line);
        free(line);
        line = NULL;
    }
#undef ADD
    curl_slist_free_all(r->headers);
    r->headers = h;
    return 0;
fail:
    free(line);
    curl_slist_free_all(h);
    return EBB_ENOMEM;
}

static int setup_easy(struct ebb_kube_req *r)
{
    struct ebb_kube *k = r->k;
    CURL *e;
    CURLcode c = CURLE_OK;
    long timeout = r->timeout_ms > 0 ? r->timeout_ms : k->timeout_ms;

    if ((e = r->easy = curl_easy_init()) == NULL)
        return EBB_ENOMEM;
#define SET(opt, val)                                                                            \
    do {                                                                                         \
        if (c == CURLE_OK)                                                                       \
            c = curl_easy_setopt(e, opt, val);                                                   \
    } while (0)
    SET(CURLOPT_URL, r->url);
    SET(CURLOPT_PRIVATE, r);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_ERRORBUFFER, r->errbuf);
    SET(CURLOPT_WRITEFUNCTION, on_write);
    SET(CURLOPT_WRITEDATA, r);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, r);
    SET(CURLOPT_USERAGENT, k->user_agent);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    /* curl hands bodies on as they came: on_write inflates a gzip one
     * (see build_headers) */
    SET(CURLOPT_HTTP_CONTENT_DECODING, 0L);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_TCP_KEEPIDLE, 30L);
    SET(CURLOPT_TCP_KEEPINTVL, 15L);
    SET(CURLOPT_CONNECTTIMEOUT_MS, timeout < CONNECT_TIMEOUT_MS ? timeout : CONNECT_TIMEOUT_MS);
    if (r->stream) {
        /* no total timeout: a stream lasts as long as the server keeps it;
         * silence for longer than the idle limit means a dead connection */
        long idle = r->timeout_ms > 0 ? r->timeout_ms : STREAM_IDLE_MS;
        SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
        SET(CURLOPT_LOW_SPEED_TIME, (idle + 999) / 1000);
    } else {
        SET(CURLOPT_TIMEOUT_MS, timeout);
        SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->max_bytes);
    }
    if (strcmp(r->method, "GET") == 0) {
        SET(CURLOPT_HTTPGET, 1L);
    } else {
        if (r->body != NULL || strcmp(r->method, "POST") == 0) {
            SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
            SET(CURLOPT_POSTFIELDS, r->body ? r->body : "");
        }
        SET(CURLOPT_CUSTOMREQUEST, r->method);
    }
    if (k->insecure) {
        SET(CURLOPT_SSL_VERIFYPEER, 0L);
        SET(CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (k->ca_data != NULL) {
        struct curl_blob b = {k->ca_data, strlen(k->ca_data), CURL_BLOB_NOCOPY};
        SET(CURLOPT_CAINFO_BLOB, &b);
    } else if (k->ca_file != NULL) {
        SET(CURLOPT_CAINFO, k->ca_file);
    }
    if (k->cert_data != NULL) {
        struct curl_blob b = {k->cert_data, strlen(k->cert_data), CURL_BLOB_NOCOPY};
        SET(CURLOPT_SSLCERT_BLOB, &b);
        SET(CURLOPT_SSLCERTTYPE, "PEM");
    } else if (k->cert_file != NULL) {
        SET(CURLOPT_SSLCERT, k->cert_file);
        SET(CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (k->key_data != NULL) {
        struct curl_blob b = {k->key_data, strlen(k->key_data), CURL_BLOB_NOCOPY};
        SET(CURLOPT_SSLKEY_BLOB, &b);
        SET(CURLOPT_SSLKEYTYPE, "PEM");
    } else if (k->key_file != NULL) {
        SET(CURLOPT_SSLKEY, k->key_file);
        SET(CURLOPT_SSLKEYTYPE, "PEM");
    }
#undef SET
    if (c != CURLE_OK) {
        ebb_log(EBB_LOG_ERROR, "kube: curl_easy_setopt: %s", curl_easy_strerror(c));
        return c == CURLE_OUT_OF_MEMORY ? EBB_ENOMEM : EBB_EINVAL;
    }
    return 0;
}

/* One attempt. Called from the wake timer only (outside curl callbacks). */
static void attempt(struct ebb_kube_req *r)
{
    struct ebb_kube *k = r->k;
    CURLMcode mc;
    int rc;

    q_remove(&r->q);
    if (r->easy == NULL && (rc = setup_easy(r)) != 0) {
        finish_msg(r, rc, "cannot set up the request");
        return;
    }
    /* a request a run was made for is sent with what it gave, even a
     * credential already past its expirationTimestamp (as client-go) */
    if (!r->cred_given && needs_cred(k)) {
        await_cred(r);
        return;
    }
    r->cred_given = false;
    if ((rc = build_headers(r)) != 0) {
        finish_msg(r, rc, "out of memory");
        return;
    }
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
    if (k->have_cred && k->cred.cert_data != NULL) {
        /* copied: the next run of the plugin may replace them */
        struct curl_blob c = {k->cred.cert_data, strlen(k->cred.cert_data), CURL_BLOB_COPY};
        struct curl_blob key = {k->cred.key_data, strlen(k->cred.key_data), CURL_BLOB_COPY};

        if (curl_easy_setopt(r->easy, CURLOPT_SSLCERT_BLOB, &c) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_SSLCERTTYPE, "PEM") != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_SSLKEY_BLOB, &key) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_SSLKEYTYPE, "PEM") != CURLE_OK) {
            finish_msg(r, EBB_ENOMEM, "out of memory");
            return;
        }
    }
    r->len = 0;
    r->got = 0;
    gz_reset(r);
    r->enc_err[0] = '\0';
    r->errbuf[0] = '\0';
    r->oom = false;
    r->too_big = false;
    r->opened = false;
    r->attempts++;
    r->state = RS_ACTIVE;
    if ((mc = curl_multi_add_handle(k->multi, r->easy)) != CURLM_OK) {
        finish_msg(r, mc == CURLM_OUT_OF_MEMORY ? EBB_ENOMEM : EBB_EIO, curl_multi_strerror(mc));
        return;
    }
    r->in_multi = true;
}

static bool retryable_curl(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

static bool can_retry(const struct ebb_kube_req *r)
{
    /* a stream that was opened or delivered data ends for its owner to
     * resume from where it is */
    return !r->write && !r->k->closing && r->attempts <= r->k->max_retries &&
           !(r->stream && (r->delivered || r->opened)) && !(r->sink && r->delivered);
}

/* Retry-After in seconds (the HTTP-date form is taken as 1 s). -1: none. */
static long retry_after(CURL *e)
{
    struct curl_header *h;
    char *end;
    long s;

    if (curl_easy_header(e, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK)
        return -1;
    s = strtol(h->value, &end, 10);
    if (end == h->value)
        return 1;
    if (s < 0)
        s = 0;
    return s > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : s;
}

/* What retry delays are multiplied by (the hostile-server fuzzer: 0). */
double ebb__kube_backoff = 1.0;

static void schedule_retry(struct ebb_kube_req *r, long after_s)
{
    struct ebb_kube *k = r->k;
    uint64_t cap = BACKOFF_BASE_MS, delay;

    for (int i = 1; i < r->attempts && cap < BACKOFF_CAP_MS; i++)
        cap *= 2;
    if (cap > BACKOFF_CAP_MS)
        cap = BACKOFF_CAP_MS;
    delay = rng_next(k) % (cap + 1);   /* full jitter */
    if (after_s >= 0 && delay < (uint64_t)after_s * 1000)
        delay = (uint64_t)after_s * 1000;
    delay = (uint64_t)((double)delay * ebb__kube_backoff);
    ebb_log(EBB_LOG_DEBUG, "kube: %s %s: retry %d in %llu ms", r->method, r->url, r->attempts,
            (unsigned long long)delay);
    r->state = RS_RETRY;
    r->due = uv_hrtime() + delay * 1000000;
    q_push(&k->retryq, &r->q);
    arm(k, delay);
}

/* A 401 to a request sent with the exec plugin's credential: drop that
 * credential (unless another request's 401 replaced it already) and send
 * the request once more, at once, with a fresh one; a second 401 is the
 * answer. A refused request changed nothing, so writes are sent again too. */
static bool k_reauth(struct ebb_kube_req *r)
{
    struct ebb_kube *k = r->k;

    if (k->exec == NULL || k->token != NULL || r->reauthed || k->closing)
        return false;
    r->reauthed = true;
    if (r->cred_gen == k->cred_gen && k->have_cred) {
        ebb_log(EBB_LOG_INFO, "kube: %s %s answered 401 Unauthorized; running the exec plugin again",
                r->method, r->url);
        ebb_kube_cred_clear(&k->cred);
        k->have_cred = false;
    }
    r->state = RS_READY;
    q_push(&k->readyq, &r->q);
    arm(k, 0);
    return true;
}

static void complete(struct ebb_kube_req *r, CURLcode res)
{
    long code = 0;

    curl_multi_remove_handle(r->k->multi, r->easy);
    r->in_multi = false;
    if (r->state == RS_ZOMBIE) {
        release(r);   /* on_done has run already */
        return;
    }
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    if (r->too_big || res == CURLE_FILESIZE_EXCEEDED) {
        char msg[128];
        snprintf(msg, sizeof(msg), "the answer is larger than %zu bytes, the most ebb takes of it",
                 r->max_bytes);
        finish_msg(r, EBB_ELIMIT, msg);
        return;
    }
    if (r->oom) {
        finish_msg(r, EBB_ENOMEM, "out of memory");
        return;
    }
    if (r->enc_err[0] != '\0') {
        finish_msg(r, EBB_EIO, r->enc_err);   /* not retried: the server answered so */
        return;
    }
    if (res == CURLE_OK && ebb__gunzip_cut(&r->gunzip)) {
        /* the body ended inside its gzip stream: a cut document (an empty
         * body said to be gzip is none) */
        finish_msg(r, EBB_EIO, "the answer ends inside its gzip stream");
        return;
    }
    if (res != CURLE_OK) {
        if (retryable_curl(res) && can_retry(r)) {
            schedule_retry(r, -1);
            return;
        }
        finish_msg(r, EBB_EIO, r->errbuf[0] ? r->errbuf : curl_easy_strerror(res));
        return;
    }
    if (code == 401 && k_reauth(r))
        return;
    if ((code == 429 || code == 500 || code == 502 || code == 503 || code == 504) &&
        can_retry(r)) {
        schedule_retry(r, retry_after(r->easy));
        return;
    }
    finish(r, (int)code, r->buf, r->len);
}

static void check_done(struct ebb_kube *k)
{
    CURLMsg *m;
    int left;

    while (!k->cleaning && (m = curl_multi_info_read(k->multi, &left)) != NULL) {
        struct ebb_kube_req *r = NULL;
        CURLcode res = m->data.result;
        CURL *e = m->easy_handle;

        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
        complete(r, res);
    }
}

/* ---- the wake timer --------------------------------------------------------- */

static void refill(struct ebb_kube *k, uint64_t now)
{
    k->tokens += (double)(now - k->refilled) / 1e9 * k->qps;
    if (k->tokens > k->burst)
        k->tokens = k->burst;
    k->refilled = now;
}

static void shutdown_all(struct ebb_kube *k)
{
    struct qnode *n;

    /* ebb_kube_close answered every request; what is left is in curl */
    while (!q_empty(&k->zombies))
        release(q_data(k->zombies.next, struct ebb_kube_req, q));
    k->cleaning = true;
    curl_multi_cleanup(k->multi);
    k->multi = NULL;
    while (!q_empty(&k->socks)) {
        n = k->socks.next;
        sock_close(q_data(n, struct sock, link));
    }
    uv_close((uv_handle_t *)&k->curl_timer, handle_closed);
    uv_close((uv_handle_t *)&k->wake, handle_closed);
    uv_close((uv_handle_t *)&k->soon, handle_closed);
}

/* Resume the streams that paused (see on_write). Resuming hands what
 * curl held to on_write at once, which may end or cancel requests: the
 * list is searched again after each. What curl held is taken whole,
 * never paused again: a pause inside it would have curl hold the rest,
 * and, resumed in the same turn, pause again at once (a loop at 100% CPU,
 * as when curl inflated gzip answers and held all one read decoded to).
 * Today curl holds at most one read (CURLOPT_BUFFERSIZE, 16 KiB), handed
 * on in one call; `resuming` keeps a larger hold from looping. */
static void unpause_all(struct ebb_kube *k)
{
    bool again = true;

    k->turn++;
    k->any_paused = false;
    while (again) {
        again = false;
        for (struct qnode *n = k->reqs.next; n != &k->reqs; n = n->next) {
            struct ebb_kube_req *r = q_data(n, struct ebb_kube_req, all);
            if (r->paused) {
                r->paused = false;
                if (r->state == RS_ACTIVE) {
                    r->resuming = true;
                    curl_easy_pause(r->easy, CURLPAUSE_CONT);
                    r->resuming = false;   /* r is not freed inside a curl call */
                    again = true;
                    break;
                }
            }
        }
    }
}

static void wake_cb(uv_timer_t *t)
{
    struct ebb_kube *k = t->data;
    struct qnode *n, *next;
    uint64_t now, next_ms = UINT64_MAX;

    if (k->closing) {
        shutdown_all(k);
        return;
    }
    while (!q_empty(&k->zombies))
        release(q_data(k->zombies.next, struct ebb_kube_req, q));
    now = uv_hrtime();
    for (n = k->retryq.next; !k->closing && n != &k->retryq; n = next) {
        struct ebb_kube_req *r = q_data(n, struct ebb_kube_req, q);

        next = n->next;
        if (r->due <= now) {
            q_remove(&r->q);
            q_push(&k->readyq, &r->q);
        } else if ((r->due - now + 999999) / 1000000 < next_ms) {
            next_ms = (r->due - now + 999999) / 1000000;
        }
    }
    refill(k, now);
    while (!k->closing && !q_empty(&k->rateq) && k->tokens >= 1.0) {
        k->tokens -= 1.0;
        attempt(q_data(k->rateq.next, struct ebb_kube_req, q));
    }
    while (!k->closing && !q_empty(&k->readyq))
        attempt(q_data(k->readyq.next, struct ebb_kube_req, q));
    if (k->closing) {
        arm(k, 0);
        return;
    }
    if (!q_empty(&k->rateq)) {
        /* a token may have come back meanwhile (a write queued by on_done) */
        uint64_t ms = k->tokens >= 1.0 ? 0 : (uint64_t)((1.0 - k->tokens) / k->qps * 1000.0) + 1;
        if (ms < next_ms)
            next_ms = ms;
    }
    /* on_done may cancel, close or queue more: the loops above re-read the
     * queue heads, and anything added meanwhile runs at the next wake */
    if (!q_empty(&k->zombies) || !q_empty(&k->readyq))
        next_ms = 0;
    if (next_ms != UINT64_MAX)
        arm(k, next_ms);
}

/* ---- the public API ----------------------------------------------------------- */

int ebb_kube_create(uv_loop_t *loop, const struct ebb_kube_config *cfg,
                    const struct ebb_kube_opts *opts, struct ebb_kube **out, struct ebb_error *err)
{
    struct ebb_kube *k;
    int rc = EBB_ENOMEM;

    if (loop == NULL || cfg == NULL || out == NULL || cfg->server == NULL)
        return ebb_error_set(err, EBB_EINVAL, NULL, 0, NULL, "kube: bad arguments");
    if (cfg->token != NULL && !ebb_kube_token_ok(cfg->token, strlen(cfg->token)))
        return ebb_error_set(err, EBB_EINVAL, NULL, 0, NULL,
                             "kube: the bearer token has characters a header cannot carry");
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "curl_global_init failed");
    if ((k = calloc(1, sizeof(*k))) == NULL) {
        curl_global_cleanup();
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
    }
    k->loop = loop;
    q_init(&k->reqs);
    q_init(&k->readyq);
    q_init(&k->rateq);
    q_init(&k->retryq);
    q_init(&k->credq);
    q_init(&k->zombies);
    q_init(&k->socks);
    k->qps = opts && opts->qps > 0 ? opts->qps : 50;
    k->burst = opts && opts->burst > 0 ? opts->burst : 100;
    k->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
    k->max_retries = opts && opts->max_retries != 0 ? opts->max_retries : 5;
    if (k->max_retries < 0)
        k->max_retries = 0;
    k->tokens = k->burst;
    k->refilled = uv_hrtime();
    k->rng = k->refilled | 1;
    k->insecure = cfg->insecure;
    k->gzip = !cfg->no_gzip;
    if ((k->server = strdup(cfg->server)) == NULL ||
        (k->user_agent = strdup(opts && opts->user_agent ? opts->user_agent
                                                         : "ebb/" EBB_VERSION)) == NULL ||
        dupopt(cfg->token, &k->token) || dupopt(cfg->token_file, &k->token_file) ||
        dupopt(cfg->ca_file, &k->ca_file) || dupopt(cfg->ca_data, &k->ca_data) ||
        dupopt(cfg->cert_file, &k->cert_file) || dupopt(cfg->cert_data, &k->cert_data) ||
        dupopt(cfg->key_file, &k->key_file) || dupopt(cfg->key_data, &k->key_data) ||
        (cfg->exec != NULL && ebb_kube_exec_dup(cfg->exec, &k->exec) != 0))
        goto fail;
    k->cred.expires = EBB_TIME_NONE;
    if ((k->multi = curl_multi_init()) == NULL)
        goto fail;
    curl_multi_setopt(k->multi, CURLMOPT_SOCKETFUNCTION, socket_fn);
    curl_multi_setopt(k->multi, CURLMOPT_SOCKETDATA, k);
    curl_multi_setopt(k->multi, CURLMOPT_TIMERFUNCTION, timer_fn);
    curl_multi_setopt(k->multi, CURLMOPT_TIMERDATA, k);
    /* keep idle connections for reuse even when few requests are added */
    curl_multi_setopt(k->multi, CURLMOPT_MAXCONNECTS, 64L);
    /* no failure is possible past this point: the handles tie k to the loop */
    uv_timer_init(loop, &k->curl_timer);
    uv_timer_init(loop, &k->wake);
    uv_idle_init(loop, &k->soon);
    k->curl_timer.data = k;
    k->wake.data = k;
    k->soon.data = k;
    k->handles = 3;
    *out = k;
    return 0;
fail:
    if (k->multi != NULL)
        curl_multi_cleanup(k->multi);
    k->handles = 1;
    unref(k);   /* frees k: no uv handle was initialized yet */
    return ebb_error_set(err, rc, NULL, 0, NULL, "out of memory");
}

int ebb_kube_request(struct ebb_kube *k, const struct ebb_kube_req_opts *o,
                     struct ebb_kube_req **out)
{
    static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
    struct ebb_kube_req *r;
    bool known = false;

    if (k == NULL || o == NULL || o->method == NULL || o->path == NULL || o->path[0] != '/' ||
        o->on_done == NULL || (o->stream && o->on_data == NULL) ||
        (o->body == NULL && o->body_len > 0))
        return EBB_EINVAL;
    for (size_t i = 0; i < EBB_ARRAY_LEN(methods); i++)
        known |= strcmp(o->method, methods[i]) == 0;
    if (!known)
        return EBB_EINVAL;
    if (k->closing)
        return EBB_ESTATE;
    if ((r = calloc(1, sizeof(*r))) == NULL)
        return EBB_ENOMEM;
    r->k = k;
    q_init(&r->all);
    q_init(&r->q);
    if (asprintf(&r->url, "%s%s", k->server, o->path) < 0) {
        r->url = NULL;
        goto fail;
    }
    if ((r->method = strdup(o->method)) == NULL || dupopt(o->content_type, &r->content_type))
        goto fail;
    if (o->body != NULL) {
        if ((r->body = malloc(o->body_len + 1)) == NULL)
            goto fail;
        memcpy(r->body, o->body, o->body_len);
        r->body[o->body_len] = '\0';
        r->body_len = o->body_len;
    }
    r->stream = o->stream;
    r->sink = !o->stream && o->on_data != NULL;
    r->max_bytes = o->max_bytes > 0 ? o->max_bytes : EBB_KUBE_ANSWER_MAX;
    r->write = o->write;
    r->timeout_ms = o->timeout_ms;
    r->on_data = o->on_data;
    r->on_done = o->on_done;
    r->on_open = o->stream ? o->on_open : NULL;
    r->ud = o->ud;
    q_push(&k->reqs, &r->all);
    k->nreqs++;
    if (r->write) {
        r->state = RS_RATE;
        q_push(&k->rateq, &r->q);
    } else {
        r->state = RS_READY;
        q_push(&k->readyq, &r->q);
    }
    arm(k, 0);
    if (out != NULL)
        *out = r;
    return 0;
fail:
    req_free(r);
    return EBB_ENOMEM;
}

void ebb_kube_cancel(struct ebb_kube_req *req)
{
    if (req == NULL || req->state == RS_DONE || req->state == RS_ZOMBIE)
        return;   /* inside its on_done, or cancelled already */
    abandon(req, "cancelled");
}

void ebb_kube_close(struct ebb_kube *k, void (*cb)(void *ud), void *ud)
{
    if (k == NULL || k->closing)
        return;
    k->closing = true;
    k->close_cb = cb;
    k->close_ud = ud;
    /* on_done may cancel others: take the head each time */
    while (!q_empty(&k->reqs))
        abandon(q_data(k->reqs.next, struct ebb_kube_req, all), "cancelled: client closed");
    arm(k, 0);
}

const char *ebb_kube_cred_error(const struct ebb_kube *k)
{
    return k == NULL ? NULL : k->cred_error;
}

size_t ebb_kube_inflight(const struct ebb_kube *k)
{
    return k == NULL ? 0 : k->nreqs;
}

void ebb_kube_answer_bytes(const struct ebb_kube *k, uint64_t *received, uint64_t *decoded)
{
    *received = k->received;
    *decoded = k->decoded;
}
