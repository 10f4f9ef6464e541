/* A scripted Kubernetes API server on a libuv loop, for the tests and the
 * fuzzer of ebb run's watch cache (engine/test/test_kube_watch.c,
 * fuzz/kube_client.c): each resource's requests take its answers in
 * order, byte for byte (status line, headers, body: anything); a request
 * that finds none is answered with an empty List (a LIST) or left open (a
 * WATCH). An answer may keep its connection open (a stream that goes on),
 * and the answers after it marked `more` are written on that connection
 * at once. Loop thread only; everything it allocates goes when the
 * connections and the listener are closed (ks_close). */
#ifndef EBB_TEST_KUBE_SERVER_H
#define EBB_TEST_KUBE_SERVER_H

#include <http_parser.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define NRES 8
#define MAXANS 64

/* The resources of ebb run's informers, by index. */
enum { KS_NODES, KS_NAMESPACES, KS_PRIORITYCLASSES, KS_PVCS, KS_PDBS, KS_PODS, KS_NODE_METRICS,
       KS_POD_METRICS };

static const char *const ks_paths[NRES] __attribute__((unused)) = {
    "/api/v1/nodes", "/api/v1/namespaces", "/apis/scheduling.k8s.io/v1/priorityclasses",
    "/api/v1/persistentvolumeclaims", "/apis/policy/v1/poddisruptionbudgets", "/api/v1/pods",
    "/apis/metrics.k8s.io/v1beta1/nodes", "/apis/metrics.k8s.io/v1beta1/pods",
};

struct answer {
    const void *data;
    size_t len, times;
    bool keep_open;
    bool more;                    /* of the answer before it */
};

struct conn;

struct ks {
    uv_loop_t *loop;
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
    char url[NRES][512];          /* the last request of each resource */
    char log[32][512];            /* the first requests, in order */
    int nlog;
    bool srv_closed;
};

struct conn {
    uv_tcp_t tcp;
    struct ks *w;
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
    c->w->wrote_ms = uv_now(c->w->loop);
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
    struct ks *w = c->w;
    size_t qlen = strcspn(c->url, "?");
    int r = -1;

    if (empty[0] == '\0')
        snprintf(empty, sizeof(empty), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n%s", strlen(EMPTY), EMPTY);

    for (int i = 0; i < NRES; i++)
        if (strlen(ks_paths[i]) == qlen && strncmp(c->url, ks_paths[i], qlen) == 0)
            r = i;
    if (r >= 0)
        snprintf(w->url[r], sizeof(w->url[r]), "%.511s", c->url);
    if (w->nlog < 32)
        snprintf(w->log[w->nlog++], sizeof(w->log[0]), "%.511s", c->url);
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
    struct ks *w = server->data;
    struct conn *c;

    if (status != 0 || (c = calloc(1, sizeof(*c))) == NULL)
        return;
    c->w = w;
    c->tcp.data = c;
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
    uv_tcp_init(w->loop, &c->tcp);
    c->next = w->conns;
    w->conns = c;
    w->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0)
        conn_close(c);
}


/* Listen on 127.0.0.1 (a free port) on `loop`. */
static void __attribute__((unused)) ks_start(struct ks *w, uv_loop_t *loop)
{
    struct sockaddr_in addr;
    struct sockaddr_storage name;
    int namelen = sizeof(name);

    memset(w, 0, sizeof(*w));
    w->loop = loop;
    if (uv_tcp_init(loop, &w->srv) != 0 || uv_ip4_addr("127.0.0.1", 0, &addr) != 0 ||
        uv_tcp_bind(&w->srv, (const struct sockaddr *)&addr, 0) != 0 ||
        uv_listen((uv_stream_t *)&w->srv, 64, accept_cb) != 0 ||
        uv_tcp_getsockname(&w->srv, (struct sockaddr *)&name, &namelen) != 0)
        abort();
    w->srv.data = w;
    w->port = ntohs(((struct sockaddr_in *)&name)->sin_port);
    w->wrote_ms = uv_now(loop);
}

/* Add an answer of resource `r`: `len` bytes (borrowed until written)
 * written `times` times; false when MAXANS are there. */
static bool __attribute__((unused)) ks_add(struct ks *w, int r, const void *data, size_t len,
                                           size_t times, bool keep_open, bool more)
{
    struct answer *a;

    if (w->nans[r] == MAXANS)
        return false;
    a = &w->ans[r][w->nans[r]++];
    a->data = data;
    a->len = len;
    a->times = times > 0 ? times : 1;
    a->keep_open = keep_open;
    a->more = more;
    w->left++;
    return true;
}

/* Write `len` bytes (borrowed until written) on the connection where
 * resource `r`'s last answer stays open (a stream that goes on); false
 * when none is open. */
static bool __attribute__((unused)) ks_push(struct ks *w, int r, const void *data, size_t len)
{
    if (w->open[r] == NULL)
        return false;
    send_bytes(w->open[r], data, len, 1, false);
    return true;
}

/* Close the listener and every connection (run the loop after). */
static void __attribute__((unused)) ks_close(struct ks *w)
{
    uv_close((uv_handle_t *)&w->srv, NULL);
    for (struct conn *c = w->conns; c != NULL; c = c->next)
        conn_close(c);
}

#endif
