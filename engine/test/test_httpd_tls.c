/* engine/base/httpd_tls.c: HTTPS on the HTTP server, with real TLS
 * handshakes. The server runs its loop on a thread of its own; the clients
 * are libcurl (verifying the certificate against the one written to
 * cert_dir, or not) and raw sockets that stall a handshake or speak plain
 * HTTP to the TLS port. Every test stops the server from its own thread and
 * joins it, so nothing leaks. */
#include "fixtures.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <uv.h>

#include "ebb/httpd.h"

#define BIG (1u << 20)

struct srv {
    uv_loop_t loop;
    uv_async_t stop;
    struct ebb_httpd *h;
    pthread_t thread;
    int port;
    struct ebb_httpd_stats stats;   /* at the stop */
    int closed;
    char *big;
};

static void handler(struct ebb_http_req *r, void *ud)
{
    struct srv *s = ud;
    const char *path = ebb_http_req_path(r);

    if (strcmp(path, "/big") == 0)
        ebb_http_respond(r, 200, "text/plain", s->big, BIG);
    else if (strcmp(path, "/healthz") == 0)
        ebb_http_respond(r, 200, "text/plain", "ok", 2);
    else
        ebb_http_respond(r, 404, "text/plain", "not found\n", 10);
}

static void on_closed(void *ud)
{
    ((struct srv *)ud)->closed++;
}

static void on_stop(uv_async_t *a)
{
    struct srv *s = a->data;

    ebb_httpd_stats(s->h, &s->stats);
    ebb_httpd_close(s->h, on_closed, s);
    uv_close((uv_handle_t *)&s->stop, NULL);
}

static void *loop_thread(void *ud)
{
    struct srv *s = ud;
    uv_run(&s->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* Start a TLS server; its ebb_httpd_create status (the server runs only on 0). */
static int start(struct srv *s, const struct ebb_httpd_tls *tls, unsigned max_conns,
                 unsigned handshake_ms, struct ebb_error *err)
{
    struct ebb_httpd_opts o = { .host = "127.0.0.1", .handler = handler, .ud = s, .tls = tls,
                                .max_connections = max_conns, .handshake_timeout_ms = handshake_ms };
    int rc;

    memset(s, 0, sizeof(*s));
    s->big = malloc(BIG);
    assert_non_null(s->big);
    memset(s->big, 'x', BIG);
    assert_int_equal(uv_loop_init(&s->loop), 0);
    if ((rc = ebb_httpd_create(&s->loop, &o, &s->h, err)) != 0) {
        uv_run(&s->loop, UV_RUN_DEFAULT);
        assert_int_equal(uv_loop_close(&s->loop), 0);
        free(s->big);
        return rc;
    }
    s->port = ebb_httpd_port(s->h);
    uv_async_init(&s->loop, &s->stop, on_stop);
    s->stop.data = s;
    assert_int_equal(pthread_create(&s->thread, NULL, loop_thread, s), 0);
    return 0;
}

static void stop(struct srv *s)
{
    uv_async_send(&s->stop);
    pthread_join(s->thread, NULL);
    assert_int_equal(s->closed, 1);
    assert_int_equal(uv_loop_close(&s->loop), 0);
    free(s->big);
}

/* ---- clients ------------------------------------------------------------------ */

struct body {
    size_t n;
    bool ok_prefix;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct body *b = ud;
    if (b->n == 0)
        b->ok_prefix = n * size >= 2 && (memcmp(p, "ok", 2) == 0 || p[0] == 'x');
    b->n += size * n;
    return size * n;
}

/* GET path over HTTPS: the status (0: the transfer failed, *why says why).
 * cafile NULL: the certificate is not checked (curl -k). */
static long get(CURL *c, int port, const char *host, const char *path, const char *cafile,
                size_t *len, char *why)
{
    char url[256];
    long code = 0;
    struct body b = { 0 };

    snprintf(url, sizeof(url), "https://%s:%d%s", host, port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, why);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, cafile ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, cafile ? 2L : 0L);
    if (cafile != NULL)
        curl_easy_setopt(c, CURLOPT_CAINFO, cafile);
    why[0] = '\0';
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (len != NULL)
        *len = b.n;
    return code;
}

/* A raw TCP connection to the port, reads bounded by `secs`. */
static int raw_connect(int port, int secs)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    struct timeval tv = { .tv_sec = secs };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

/* Read until the server closes: the bytes it sent (capped), or -1 when it
 * did not close within the socket's timeout. */
static ssize_t read_to_close(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        char tmp[4096];
        ssize_t k = recv(fd, tmp, sizeof(tmp), 0);
        if (k == 0 || (k < 0 && errno == ECONNRESET))
            return (ssize_t)n;
        if (k < 0)
            return -1;
        if (n + (size_t)k < cap) {
            memcpy(buf + n, tmp, (size_t)k);
            n += (size_t)k;
        }
    }
}

static char *scratch(void)
{
    char tmpl[] = "/tmp/ebb-tls-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static void rm_pair(const char *dir)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/certs/apiserver.crt", dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/certs/apiserver.key", dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/certs", dir);
    rmdir(p);
    rmdir(dir);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s = calloc(1, 1 << 16);
    assert_non_null(f);
    assert_true(fread(s, 1, (1 << 16) - 1, f) > 0);
    fclose(f);
    return s;
}

/* ---- tests ------------------------------------------------------------------------ */

/* Self-signed in memory: curl -k gets its answers, small and 1 MiB, on one
 * kept-alive connection; verifying the certificate against the system's CAs
 * fails (it is self-signed); plain HTTP gets no HTTP answer. */
static void test_self_signed_in_memory(void **state)
{
    struct ebb_httpd_tls tls = { 0 };
    struct ebb_error err = { 0 };
    struct srv s;
    CURL *c = curl_easy_init();
    char why[CURL_ERROR_SIZE], buf[4096];
    size_t len;
    ssize_t n;
    long conns = -1;
    int fd;

    (void)state;
    assert_int_equal(start(&s, &tls, 0, 0, &err), 0);
    assert_int_equal(get(c, s.port, "127.0.0.1", "/healthz", NULL, &len, why), 200);
    assert_int_equal(len, 2);
    assert_int_equal(get(c, s.port, "127.0.0.1", "/big", NULL, &len, why), 200);
    assert_int_equal(len, BIG);
    assert_int_equal(get(c, s.port, "127.0.0.1", "/nope", NULL, NULL, why), 404);
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &conns);
    assert_int_equal(conns, 0);   /* the last one reused the connection */
    curl_easy_cleanup(c);

    /* verified against the system's CAs: refused */
    c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, "");
    {
        char url[128];
        struct body b = { 0 };
        snprintf(url, sizeof(url), "https://localhost:%d/healthz", s.port);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
        assert_int_equal(curl_easy_perform(c), CURLE_PEER_FAILED_VERIFICATION);
    }
    curl_easy_cleanup(c);

    /* plain HTTP to the TLS port: closed, never answered in HTTP */
    fd = raw_connect(s.port, 5);
    assert_true(send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 35, 0) == 35);
    n = read_to_close(fd, buf, sizeof(buf) - 1);
    assert_true(n >= 0);
    buf[n] = '\0';
    assert_null(strstr(buf, "HTTP/1.1"));
    close(fd);
    stop(&s);
    assert_true(s.stats.handshakes_failed >= 1);
}

/* With cert_dir: the pair is written there (the key 0600), a client that
 * trusts the written certificate verifies localhost and 127.0.0.1; a second
 * start serves the same pair; the pair given as files serves too. */
static void test_cert_dir_and_given_files(void **state)
{
    char *dir = scratch(), certs[256], crt[512], key[512], why[CURL_ERROR_SIZE];
    struct ebb_httpd_tls tls = { .cert_dir = certs };
    struct ebb_error err = { 0 };
    struct srv s;
    struct stat st;
    char *first, *again;
    CURL *c;

    (void)state;
    snprintf(certs, sizeof(certs), "%s/certs", dir);
    snprintf(crt, sizeof(crt), "%s/apiserver.crt", certs);
    snprintf(key, sizeof(key), "%s/apiserver.key", certs);
    assert_int_equal(start(&s, &tls, 0, 0, &err), 0);
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    c = curl_easy_init();
    assert_int_equal(get(c, s.port, "localhost", "/healthz", crt, NULL, why), 200);
    curl_easy_cleanup(c);
    c = curl_easy_init();
    assert_int_equal(get(c, s.port, "127.0.0.1", "/healthz", crt, NULL, why), 200);
    curl_easy_cleanup(c);
    stop(&s);
    first = slurp(crt);

    assert_int_equal(start(&s, &tls, 0, 0, &err), 0);
    again = slurp(crt);
    assert_string_equal(first, again);   /* reused, not made again */
    c = curl_easy_init();
    assert_int_equal(get(c, s.port, "localhost", "/healthz", crt, NULL, why), 200);
    curl_easy_cleanup(c);
    stop(&s);

    {
        struct ebb_httpd_tls given = { .cert_file = crt, .key_file = key };
        assert_int_equal(start(&s, &given, 0, 0, &err), 0);
        c = curl_easy_init();
        assert_int_equal(get(c, s.port, "localhost", "/healthz", crt, NULL, why), 200);
        curl_easy_cleanup(c);
        stop(&s);
    }
    free(first);
    free(again);
    rm_pair(dir);
    free(dir);
}

/* A certificate that cannot be served: the error names the field and the
 * file, and nothing is listening. */
static void test_bad_certificates(void **state)
{
    char *a = scratch(), *b = scratch(), ca[256], cb[256], crt_a[512], key_a[512], key_b[512];
    struct ebb_httpd_tls tls = { 0 };
    struct ebb_error err;
    struct srv s;

    (void)state;
    snprintf(ca, sizeof(ca), "%s/certs", a);
    snprintf(cb, sizeof(cb), "%s/certs", b);
    snprintf(crt_a, sizeof(crt_a), "%s/apiserver.crt", ca);
    snprintf(key_a, sizeof(key_a), "%s/apiserver.key", ca);
    snprintf(key_b, sizeof(key_b), "%s/apiserver.key", cb);
    tls.cert_dir = ca;
    assert_int_equal(start(&s, &tls, 0, 0, &err), 0);
    stop(&s);
    tls.cert_dir = cb;
    assert_int_equal(start(&s, &tls, 0, 0, &err), 0);
    stop(&s);

    /* unreadable */
    memset(&err, 0, sizeof(err));
    tls = (struct ebb_httpd_tls){ .cert_file = "/nonexistent/tls.crt", .key_file = key_a };
    assert_int_equal(start(&s, &tls, 0, 0, &err), EBB_EIO);
    assert_string_equal(err.field, "cert_file");
    assert_string_equal(err.file, "/nonexistent/tls.crt");
    /* a key where the certificate goes */
    memset(&err, 0, sizeof(err));
    tls = (struct ebb_httpd_tls){ .cert_file = key_a, .key_file = key_a };
    assert_int_equal(start(&s, &tls, 0, 0, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "cert_file");
    assert_non_null(strstr(err.msg, "not a PEM certificate"));
    /* a certificate where the key goes */
    memset(&err, 0, sizeof(err));
    tls = (struct ebb_httpd_tls){ .cert_file = crt_a, .key_file = crt_a };
    assert_int_equal(start(&s, &tls, 0, 0, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "key_file");
    /* another pair's key */
    memset(&err, 0, sizeof(err));
    tls = (struct ebb_httpd_tls){ .cert_file = crt_a, .key_file = key_b };
    assert_int_equal(start(&s, &tls, 0, 0, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "key_file");
    assert_non_null(strstr(err.msg, "does not match"));
    /* one without the other */
    memset(&err, 0, sizeof(err));
    tls = (struct ebb_httpd_tls){ .cert_file = crt_a };
    assert_int_equal(start(&s, &tls, 0, 0, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "key_file");
    /* a pair left in cert_dir that is not one: named as cert_dir's */
    {
        FILE *f = fopen(crt_a, "w");
        assert_non_null(f);
        fputs("not a certificate\n", f);
        fclose(f);
        memset(&err, 0, sizeof(err));
        tls = (struct ebb_httpd_tls){ .cert_dir = ca };
        assert_int_equal(start(&s, &tls, 0, 0, &err), EBB_ESCHEMA);
        assert_string_equal(err.field, "cert_dir");
        assert_string_equal(err.file, crt_a);
    }
    rm_pair(a);
    rm_pair(b);
    free(a);
    free(b);

}

/* Clients that open connections and never start (or never finish) their
 * handshake fill the connection limit: a probe is answered all the same,
 * and each stalled connection is dropped at the handshake deadline. */
static void test_stalled_handshakes_dropped_probes_answered(void **state)
{
    struct ebb_httpd_tls tls = { 0 };
    struct ebb_error err = { 0 };
    struct srv s;
    int fds[12];
    char why[CURL_ERROR_SIZE], buf[64];
    CURL *c;

    (void)state;
    assert_int_equal(start(&s, &tls, 4, 1500, &err), 0);
    for (int i = 0; i < 12; i++) {
        fds[i] = raw_connect(s.port, 10);
        /* half send a partial ClientHello record header, half nothing */
        if (i % 2)
            assert_true(send(fds[i], "\x16\x03\x01\x02\x00\x01", 6, 0) == 6);
    }
    usleep(200 * 1000);
    c = curl_easy_init();
    assert_int_equal(get(c, s.port, "127.0.0.1", "/healthz", NULL, NULL, why), 200);
    curl_easy_cleanup(c);
    /* every stalled connection is closed by the server (a guard of 10 s
     * per read, not a timing assertion) */
    for (int i = 0; i < 12; i++) {
        assert_true(read_to_close(fds[i], buf, sizeof(buf)) >= 0);
        close(fds[i]);
    }
    c = curl_easy_init();
    assert_int_equal(get(c, s.port, "127.0.0.1", "/healthz", NULL, NULL, why), 200);
    curl_easy_cleanup(c);
    stop(&s);
    assert_true(s.stats.dropped >= 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_signed_in_memory),
        cmocka_unit_test(test_cert_dir_and_given_files),
        cmocka_unit_test(test_bad_certificates),
        cmocka_unit_test(test_stalled_handshakes_dropped_probes_answered),
    };
    int rc;

    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
