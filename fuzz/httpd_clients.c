/* engine/base/httpd*.c under hostile clients: each input is a script of client
 * actions against a server with small limits on a loop in this process
 * (connect, send the next bytes of the input, read or stop reading, hang
 * up, run the loop; two bytes an action: what, and to which client or
 * request; a send then a length byte and the bytes), and of actions of the handler's owner on the requests
 * it keeps (stream writes, holds and flushes, ends, late answers). The
 * handler answers probes at once, streams, holds, or answers large.
 *
 * After every action: the unwritten bytes of all connections stay within
 * max_total_queued and what it may exceed it by (headers and framing,
 * probe answers, one answer larger than the total); and now and then a
 * new connection asking GET /healthz must get its 200, whatever the other
 * clients do. Every input ends with the server closed and the loop closed
 * with nothing left open; ASan and LeakSanitizer watch the connection
 * lifecycle (probe slots, connections ended to make room, gone callbacks
 * run from the loop). */
#include <signal.h>
#include <stdio.h>

#include <uv.h>

#include "fuzz.h"
#include "ebb/httpd.h"

#define NCLIENTS 32
#define NKEPT 8
#define MAX_TOTAL (256u << 10)
#define BIG_MAX MAX_TOTAL           /* an answer larger than the total is let through: not here */

struct client {
    uv_tcp_t tcp;
    uv_connect_t connect;
    bool used, connected, closed, reading, no_read;
    char head[32];               /* the first bytes received */
    size_t n;
};

struct fz {
    uv_loop_t loop;
    struct ebb_httpd *h;
    int port;
    struct client c[NCLIENTS];
    struct ebb_http_req *streams[NKEPT], *held[NKEPT];
    int closed_cb;
};

static char zeros[BIG_MAX];

static void forget(struct ebb_http_req **v, struct ebb_http_req *r)
{
    for (int i = 0; i < NKEPT; i++)
        if (v[i] == r)
            v[i] = NULL;
}

static void on_gone(struct ebb_http_req *r, void *ud)
{
    struct fz *f = ud;
    forget(f->streams, r);
    forget(f->held, r);
}

static bool keep(struct ebb_http_req **v, struct ebb_http_req *r)
{
    for (int i = 0; i < NKEPT; i++)
        if (v[i] == NULL) {
            v[i] = r;
            return true;
        }
    return false;
}

/* By path: probes at once; /s a stream; /h held; /b<k> k x 16 KiB; the rest small. */
static void handler(struct ebb_http_req *r, void *ud)
{
    struct fz *f = ud;
    const char *p = ebb_http_req_path(r);

    if (strcmp(p, "/healthz") == 0 || strcmp(p, "/readyz") == 0 || strcmp(p, "/livez") == 0) {
        ebb_http_respond(r, 200, "text/plain", "ok", 2);
    } else if (strncmp(p, "/s", 2) == 0 && keep(f->streams, r)) {
        ebb_http_req_on_gone(r, on_gone, f);
        if (ebb_http_stream_begin(r, 200, "application/json") != 0)
            forget(f->streams, r);
    } else if (strncmp(p, "/h", 2) == 0 && keep(f->held, r)) {
        ebb_http_req_on_gone(r, on_gone, f);
    } else if (strncmp(p, "/b", 2) == 0) {
        size_t k = (size_t)atoi(p + 2) % 33;
        ebb_http_respond(r, 200, "text/plain", zeros, k * 16384 > BIG_MAX ? BIG_MAX : k * 16384);
    } else {
        ebb_http_respond(r, 200, "text/plain", "hello", 5);
    }
}

static void c_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    static char sink[65536];
    (void)h;
    (void)suggested;
    *b = uv_buf_init(sink, sizeof(sink));
}

static void c_closed(uv_handle_t *h)
{
    ((struct client *)h->data)->closed = true;
}

static void c_close(struct client *c)
{
    if (c->used && !uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, c_closed);
}

static void c_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct client *c = s->data;

    if (n > 0 && c->n < sizeof(c->head) - 1) {
        size_t k = (size_t)n < sizeof(c->head) - 1 - c->n ? (size_t)n : sizeof(c->head) - 1 - c->n;
        memcpy(c->head + c->n, b->base, k);
        c->n += k;
        c->head[c->n] = '\0';
    } else if (n < 0) {
        c_close(c);
    }
}

static void c_connected(uv_connect_t *req, int status)
{
    struct client *c = req->data;

    if (status != 0) {
        c_close(c);
        return;
    }
    c->connected = true;
    if (!c->no_read && uv_read_start((uv_stream_t *)&c->tcp, c_alloc, c_read) == 0)
        c->reading = true;
}

static void c_open(struct fz *f, struct client *c, bool no_read)
{
    struct sockaddr_in sa;

    memset(c, 0, sizeof(*c));
    c->used = true;
    c->no_read = no_read;
    uv_tcp_init(&f->loop, &c->tcp);
    c->tcp.data = c->connect.data = c;
    if (!no_read)
        uv_tcp_nodelay(&c->tcp, 1);
    else
        uv_recv_buffer_size((uv_handle_t *)&c->tcp, &(int){ 4096 });
    uv_ip4_addr("127.0.0.1", f->port, &sa);
    if (uv_tcp_connect(&c->connect, &c->tcp, (struct sockaddr *)&sa, c_connected) != 0)
        c_close(c);
}

static void c_written(uv_write_t *w, int status)
{
    (void)status;
    free(w);
}

static void c_send(struct client *c, const uint8_t *data, size_t n)
{
    uv_write_t *w;
    uv_buf_t b;

    if (!c->connected || c->closed || uv_is_closing((uv_handle_t *)&c->tcp) || n == 0)
        return;
    if ((w = malloc(sizeof(*w) + n)) == NULL)
        abort();
    memcpy(w + 1, data, n);
    b = uv_buf_init((char *)(w + 1), (unsigned)n);
    if (uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, c_written) != 0)
        free(w);
}

static void spin(struct fz *f, int n)
{
    for (int i = 0; i < n; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
}

/* What the total may be exceeded by here: status lines, headers, chunk
 * framing and probe answers, a few KiB a connection (answers are at most
 * the total, a write's answer at most the max_body reserved for it). */
static void check_total(struct fz *f)
{
    struct ebb_httpd_stats st;

    ebb_httpd_stats(f->h, &st);
    if (st.queued > MAX_TOTAL + (st.connections + 1) * 4096) {
        fprintf(stderr, "httpd_clients: %zu bytes queued over a total of %u\n", st.queued,
                MAX_TOTAL);
        abort();
    }
}

/* A new connection asking GET /healthz gets its 200. */
static void check_probe(struct fz *f)
{
    static const char probe[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    struct client p;
    int i;

    c_open(f, &p, false);
    for (i = 0; i < 5000 && !p.connected && !p.closed; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    c_send(&p, (const uint8_t *)probe, sizeof(probe) - 1);
    for (i = 0; i < 20000 && p.n < 12 && !p.closed; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    if (strncmp(p.head, "HTTP/1.1 200", 12) != 0) {
        fprintf(stderr, "httpd_clients: a probe got \"%s\"%s\n", p.head,
                p.closed ? " and the close" : "");
        abort();
    }
    c_close(&p);
    while (!p.closed)
        uv_run(&f->loop, UV_RUN_NOWAIT);
}

static void on_server_closed(void *ud)
{
    ((struct fz *)ud)->closed_cb++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb_httpd_opts o = { .host = "127.0.0.1", .port = 0, .handler = handler,
                                .max_connections = 8, .max_body = 8192, .max_queued = 64u << 10,
                                .max_total_queued = MAX_TOTAL, .max_total_body = 32u << 10,
                                .idle_timeout_ms = 100000, .write_timeout_ms = 100000,
                                .request_timeout_ms = 100000 };
    struct fz *f = calloc(1, sizeof(*f));
    size_t at = 0;
    int probes = 0;

    if (f == NULL || uv_loop_init(&f->loop) != 0)
        abort();
    signal(SIGPIPE, SIG_IGN);
    o.ud = f;
    if (ebb_httpd_create(&f->loop, &o, &f->h, NULL) != 0)
        abort();
    f->port = ebb_httpd_port(f->h);
    while (at + 2 <= size) {
        uint8_t op = data[at] & 7, arg = data[at + 1];
        struct client *c = &f->c[(arg & 0x7f) % NCLIENTS];   /* bit 7: opened not reading */
        struct ebb_http_req *r;
        at += 2;
        switch (op) {
        case 0:
            if (!c->used || c->closed)
                c_open(f, c, arg & 0x80);
            break;
        case 1: {
            /* the next byte says how many bytes after it to send */
            size_t n = at < size ? (size_t)data[at++] + 1 : 0;
            n = n > size - at ? size - at : n;
            c_send(c, data + at, n);
            at += n;
            break;
        }
        case 2:
            c_close(c);
            break;
        case 3:
            spin(f, arg % 16 + 1);
            break;
        case 4:
            /* bits 0-2 the stream, 3-5 the size (8 to 64 KiB), 6-7 what */
            if ((r = f->streams[arg & 7]) != NULL) {
                size_t n = (size_t)((arg >> 3 & 7) + 1) * 8192;
                int rc;
                switch (arg >> 6) {
                case 0: rc = ebb_http_stream_write(r, zeros, n); break;
                case 1: rc = ebb_http_stream_hold(r, zeros, n / 4); break;
                case 2: rc = ebb_http_stream_flush(r); break;
                default: rc = ebb_http_stream_end(r); forget(f->streams, r); break;
                }
                if (rc != 0)
                    forget(f->streams, r);
            }
            break;
        case 5:
            if ((r = f->held[arg & 7]) != NULL) {
                forget(f->held, r);
                ebb_http_respond(r, 200, "text/plain", zeros, (size_t)(arg >> 5) * 1024);
            }
            break;
        case 6:
            if (c->used && c->connected && !c->closed) {
                if (c->reading) {
                    uv_read_stop((uv_stream_t *)&c->tcp);
                    c->reading = false;
                } else if (uv_read_start((uv_stream_t *)&c->tcp, c_alloc, c_read) == 0) {
                    c->reading = true;
                }
            }
            break;
        default:
            if (probes++ < 4)
                check_probe(f);
            break;
        }
        check_total(f);
    }
    spin(f, 50);
    check_probe(f);
    for (int i = 0; i < NCLIENTS; i++)
        c_close(&f->c[i]);
    ebb_httpd_close(f->h, on_server_closed, f);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    if (f->closed_cb != 1 || uv_loop_close(&f->loop) != 0) {
        fprintf(stderr, "httpd_clients: the server or a handle was left open\n");
        abort();
    }
    free(f);
    return 0;
}
