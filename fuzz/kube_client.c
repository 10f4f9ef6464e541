/* A hostile API server to `ebb run`'s client: each input is what the
 * server answers, byte for byte (status line, headers, body: anything),
 * to the requests of the watch cache of `ebb run` running in this process
 * on its own loop: engine/kube_http.c (libcurl on libuv: HTTP parsing,
 * chunked bodies, Content-Length, the bounds of an answer, retries),
 * engine/kube_watch.c (paged LISTs read as they arrive, watch streams,
 * bookmarks, ERROR events, relists, the queue held while a cycle runs),
 * engine/snapshot.c (the LIST reader, the gate to cJSON) and
 * engine/decode.c (each object kept or skipped alone) into the cache.
 *
 * Input: one byte of flags, then answers, each
 *   1 byte   which resource's requests it answers ((b & 0x3f) % NRES);
 *            0x80: the connection stays open after it (a stream that goes
 *            on); 0x40: it is more of the resource's last answer that
 *            stayed open, written on its connection at once (a body that
 *            goes on and on)
 *   2 bytes  its length L, big-endian
 *   1 byte   R: its bytes are written R + 1 times (an answer up to
 *            REPEAT_MAX, so an input of a few KiB can be a huge body)
 *   L bytes  what is written
 * Flags: 0x01 the informers are held (a cycle runs) until nothing more
 * comes, then released; 0x02 the metrics.k8s.io pollers run too.
 * A resource's requests take its answers in order; one that finds none is
 * answered with an empty List (a LIST) or left open (a WATCH). The run
 * ends once every answer is out and the client has had time to read it
 * (or after RUN_MS), and everything is closed: ASan sees every byte the
 * client kept and every one it did not free. */
#include <http_parser.h>
#include <stdio.h>
#include <uv.h>

#include "fuzz.h"
#include "ebb/cache.h"
#include "ebb/kube.h"
#include "ebb/watch.h"

/* Backoffs are scaled to nothing: a retry runs at the next turn. */
extern double ebb__informers_backoff;
extern double ebb__kube_backoff;

#define NRES 8
#define MAXANS 64
#define REPEAT_MAX ((size_t)4 << 20)
#define RUN_MS 500
/* It ends once nothing was written for QUIET_MS and QUIET_TURNS turns of
 * the loop (the client has read and handled what came). */
#define QUIET_MS 3
#define QUIET_TURNS 200

static const char *const paths[NRES] = {
    "/api/v1/nodes", "/api/v1/namespaces", "/apis/scheduling.k8s.io/v1/priorityclasses",
    "/api/v1/persistentvolumeclaims", "/apis/policy/v1/poddisruptionbudgets", "/api/v1/pods",
    "/apis/metrics.k8s.io/v1beta1/nodes", "/apis/metrics.k8s.io/v1beta1/pods",
};

struct answer {
    const uint8_t *data;
    size_t len, times;
    bool keep_open;
    bool more;                    /* of the answer before it */
};

struct conn;

struct world {
    uv_loop_t loop;
    uv_tcp_t srv;
    int port;
    struct answer ans[NRES][MAXANS];
    size_t nans[NRES], next[NRES];
    struct conn *open[NRES];      /* where the resource's last answer stays open */
    size_t left;                  /* answers not written yet */
    struct conn *conns;
    int nconns;
    uint64_t quiet;               /* turns since the last write */
    uint64_t wrote_ms;            /* uv_now() of the last write */
    bool srv_closed;
};

struct conn {
    uv_tcp_t tcp;
    struct world *w;
    http_parser p;
    char url[8192];
    size_t url_len;
    bool busy;                    /* an answer stays open on it */
    bool closing;
    struct conn *next;
};

static void conn_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    struct conn **pp;

    for (int r = 0; r < NRES; r++)
        if (c->w->open[r] == c)
            c->w->open[r] = NULL;
    for (pp = &c->w->conns; *pp != NULL; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    c->w->nconns--;
    free(c);
}

static void conn_close(struct conn *c)
{
    if (!c->closing) {
        c->closing = true;
        uv_close((uv_handle_t *)&c->tcp, conn_closed);
    }
}

struct wr {
    uv_write_t req;
    struct conn *c;
    bool close_after;
    char data[];
};

static void written(uv_write_t *req, int status)
{
    struct wr *w = (struct wr *)req;

    (void)status;
    if (w->close_after)
        conn_close(w->c);
    free(w);
}

/* Write `len` bytes `times` times, then close unless it stays open. */
static void send_bytes(struct conn *c, const void *data, size_t len, size_t times, bool close_after)
{
    struct wr *w;
    uv_buf_t b;

    if (c->closing)
        return;
    if ((w = malloc(sizeof(*w) + len * times + 1)) == NULL)
        abort();
    for (size_t i = 0; i < times; i++)
        memcpy(w->data + i * len, data, len);
    w->c = c;
    w->close_after = close_after;
    b = uv_buf_init(w->data, (unsigned)(len * times));
    c->w->quiet = 0;
    c->w->wrote_ms = uv_now(&c->w->loop);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, written) != 0) {
        free(w);
        conn_close(c);
    }
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;

    if (c->url_len + len < sizeof(c->url)) {
        memcpy(c->url + c->url_len, at, len);
        c->url_len += len;
        c->url[c->url_len] = '\0';
    }
    return 0;
}

static int on_begin(http_parser *p)
{
    struct conn *c = p->data;

    c->url_len = 0;
    c->url[0] = '\0';
    return 0;
}

static int on_complete(http_parser *p)
{
#define EMPTY "{\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}"
    static char empty[256];
    struct conn *c = p->data;
    struct world *w = c->w;
    size_t qlen = strcspn(c->url, "?");
    int r = -1;

    if (empty[0] == '\0')
        snprintf(empty, sizeof(empty), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n%s", strlen(EMPTY), EMPTY);

    for (int i = 0; i < NRES; i++)
        if (strlen(paths[i]) == qlen && strncmp(c->url, paths[i], qlen) == 0)
            r = i;
    while (r >= 0 && w->next[r] < w->nans[r] && w->ans[r][w->next[r]].more) {
        w->next[r]++;   /* more of an answer whose connection is gone */
        w->left--;
    }
    if (r >= 0 && w->next[r] < w->nans[r]) {
        struct answer *a = &w->ans[r][w->next[r]++];
        w->left--;
        c->busy = a->keep_open;
        w->open[r] = a->keep_open ? c : NULL;
        send_bytes(c, a->data, a->len, a->times, !a->keep_open);
        /* and what goes on after it, at once */
        while (a->keep_open && w->next[r] < w->nans[r] && w->ans[r][w->next[r]].more) {
            a = &w->ans[r][w->next[r]++];
            w->left--;
            send_bytes(c, a->data, a->len, a->times, !a->keep_open);
            if (!a->keep_open)
                w->open[r] = NULL;
        }
    } else if (strstr(c->url, "watch=1") == NULL) {
        send_bytes(c, empty, strlen(empty), 1, false);
    } else {
        c->busy = true;   /* a watch with nothing to say */
    }
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_begin, .on_url = on_url, .on_message_complete = on_complete,
};

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base ? suggested : 0;
}

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = st->data;

    if (nread < 0) {
        conn_close(c);
    } else if (nread > 0 && !c->closing && !c->busy) {
        if (http_parser_execute(&c->p, &settings, buf->base, (size_t)nread) != (size_t)nread)
            conn_close(c);
    }
    free(buf->base);
}

static void accept_cb(uv_stream_t *server, int status)
{
    struct world *w = server->data;
    struct conn *c;

    if (status != 0 || (c = calloc(1, sizeof(*c))) == NULL)
        return;
    c->w = w;
    c->tcp.data = c;
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
    uv_tcp_init(&w->loop, &c->tcp);
    c->next = w->conns;
    w->conns = c;
    w->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0)
        conn_close(c);
}

/* The answers of the input; false when it has none. */
static bool parse(struct world *w, const uint8_t *data, size_t size)
{
    size_t off = 1;

    while (off + 4 <= size) {
        int r = (data[off] & 0x3f) % NRES;
        size_t len = ((size_t)data[off + 1] << 8) | data[off + 2], times = (size_t)data[off + 3] + 1;
        struct answer *a;

        if (len > size - off - 4)
            len = size - off - 4;
        if (w->nans[r] == MAXANS)
            break;
        a = &w->ans[r][w->nans[r]++];
        a->keep_open = (data[off] & 0x80) != 0;
        a->more = (data[off] & 0x40) != 0;
        a->data = data + off + 4;
        a->len = len;
        a->times = len == 0 ? 1 : times;
        while (a->times > 1 && a->len * a->times > REPEAT_MAX)
            a->times /= 2;
        w->left++;
        off += 4 + len;
    }
    return w->left > 0;
}

static int closed_handles;

static void closed_cb(void *ud)
{
    (void)ud;
    closed_handles++;
}

static void skipped(void *ud, const char *resource, const struct ebb_skip *why)
{
    (void)ud;
    (void)resource;
    /* what ebb run reports of it: a name, a field, a message it can print */
    if (why->reason <= 0 || why->reason >= EBB_SKIP_MAX || strlen(why->err.msg) >= sizeof(why->err.msg))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct world w;
    struct sockaddr_in addr;
    struct sockaddr_storage name;
    int namelen = sizeof(name);
    char server[64], buf[2048];
    struct ebb_kube_config cfg = { .server = server };
    struct ebb_kube_opts ko = { .max_retries = 2 };
    struct ebb_informers_opts io = { .page_size = 16 };
    struct ebb_kube *kube = NULL;
    struct ebb_cache *cache = NULL;
    struct ebb_informers *inf = NULL;
    struct ebb_error err;
    uint64_t t0;
    bool held;

    if (size < 1)
        return 0;
    memset(&w, 0, sizeof(w));
    if (!parse(&w, data, size))
        return 0;
    ebb__informers_backoff = 0;
    ebb__kube_backoff = 0;
    io.metrics = (data[0] & 0x02) != 0;
    held = (data[0] & 0x01) != 0;
    if (uv_loop_init(&w.loop) != 0 || uv_tcp_init(&w.loop, &w.srv) != 0 ||
        uv_ip4_addr("127.0.0.1", 0, &addr) != 0 ||
        uv_tcp_bind(&w.srv, (const struct sockaddr *)&addr, 0) != 0 ||
        uv_listen((uv_stream_t *)&w.srv, 64, accept_cb) != 0 ||
        uv_tcp_getsockname(&w.srv, (struct sockaddr *)&name, &namelen) != 0)
        abort();
    w.srv.data = &w;
    w.port = ntohs(((struct sockaddr_in *)&name)->sin_port);
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", w.port);
    if (ebb_kube_create(&w.loop, &cfg, &ko, &kube, &err) != 0 || ebb_cache_create(&cache) != 0 ||
        ebb_informers_create(&w.loop, kube, cache, &io, &inf) != 0)
        abort();
    ebb_informers_on_skip(inf, skipped, NULL);
    if (held)
        ebb_informers_hold(inf, true);
    ebb_informers_start(inf);
    t0 = w.wrote_ms = uv_now(&w.loop);
    for (;;) {
        uint64_t now;
        uv_run(&w.loop, UV_RUN_NOWAIT);
        now = uv_now(&w.loop);
        w.quiet++;
        if (now - t0 >= RUN_MS ||
            (w.left == 0 && w.quiet >= QUIET_TURNS && now - w.wrote_ms >= QUIET_MS && !held))
            break;
        if (held && w.quiet >= QUIET_TURNS && now - w.wrote_ms >= QUIET_MS) {
            /* nothing more comes while held */
            held = false;
            ebb_informers_hold(inf, false);
        }
    }
    if (held)
        ebb_informers_hold(inf, false);
    /* what /readyz and a sync timeout print of it */
    ebb_informers_not_current(inf, 0, buf, sizeof(buf));
    ebb_informers_synced(inf);
    closed_handles = 0;
    ebb_informers_close(inf, closed_cb, NULL);
    ebb_kube_close(kube, closed_cb, NULL);
    uv_close((uv_handle_t *)&w.srv, NULL);
    for (struct conn *c = w.conns; c != NULL; c = c->next)
        conn_close(c);
    while (closed_handles < 2 || w.nconns > 0)
        uv_run(&w.loop, UV_RUN_ONCE);
    uv_run(&w.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&w.loop) != 0)
        abort();
    ebb_cache_destroy(cache);
    return 0;
}
