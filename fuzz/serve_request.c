/* ebb serve's request handling: each input is the bytes of one HTTP
 * request (request line, headers, body) sent over a TCP connection to an
 * ebb serve of spec/fixtures/demo-cluster.json running in this process.
 * That covers http_parser and the request's parts in
 * engine/base/httpd_request.c (URL split, percent-decoding of path and
 * query, headers, bodies, chunked bodies), and ebb serve's routing, query parameters (label and field
 * selectors, limit and continue, resourceVersion, watch, dryRun, Table
 * negotiation), body decoding (creates, updates, merge, strategic merge and
 * JSON patches, evictions, delete options) and the store they change.
 *
 * The server runs on a thread of its own, as `ebb serve` does on its main
 * thread; each input is sent, the write side shut, and the answer read to
 * the end (the server closes once it has read everything). Objects created
 * by one input are there for the next, as in a real server. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "ebb/serve.h"

#define SNAPSHOT "spec/fixtures/demo-cluster.json"

static int port;

static void *serve(void *arg)
{
    char listen[32];
    char *argv[] = { "ebb", "serve", "--snapshot", SNAPSHOT, "--listen", listen,
                     "--termination-seconds", "0", NULL };

    snprintf(listen, sizeof(listen), "127.0.0.1:%d", *(int *)arg);
    fprintf(stderr, "serve_request: ebb serve exited (%d)\n", ebb_serve_main(8, argv));
    abort();
}

static int connect_to(int p)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        abort();
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A free port, then ebb serve on it, once it answers. */
static void start(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    static int p;
    pthread_t t;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (access(SNAPSHOT, R_OK) != 0) {
        fprintf(stderr, "serve_request: run from the repository's top (no %s)\n", SNAPSHOT);
        abort();
    }
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        abort();
    p = ntohs(sa.sin_port);
    close(fd);
    if (pthread_create(&t, NULL, serve, &p) != 0)
        abort();
    pthread_detach(t);
    for (int i = 0; i < 1000; i++) {
        if ((fd = connect_to(p)) >= 0) {
            close(fd);
            port = p;
            return;
        }
        usleep(10000);
    }
    fprintf(stderr, "serve_request: ebb serve did not listen on %d\n", p);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct linger lg = { .l_onoff = 1, .l_linger = 0 };
    char buf[65536];
    size_t off = 0;
    int fd;

    if (port == 0)
        start();
    if ((fd = connect_to(port)) < 0)
        abort();
    /* send what the server takes, reading its answers meanwhile */
    while (off < size) {
        struct pollfd pf = { .fd = fd, .events = POLLOUT | POLLIN };
        if (poll(&pf, 1, 5000) <= 0)
            break;
        if (pf.revents & POLLIN) {
            ssize_t n = recv(fd, buf, sizeof(buf), 0);
            if (n <= 0)
                break;      /* answered and closed before the rest was sent */
        }
        if (pf.revents & POLLOUT) {
            ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
            if (n < 0)
                break;
            off += (size_t)n;
        }
    }
    shutdown(fd, SHUT_WR);
    for (;;) {
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        if (poll(&pf, 1, 5000) <= 0 || recv(fd, buf, sizeof(buf), 0) <= 0)
            break;
    }
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));   /* no TIME_WAIT */
    close(fd);
    return 0;
}
