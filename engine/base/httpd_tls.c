/* HTTPS for the HTTP server (httpd_int.h): the server's certificate and
 * each connection's TLS, OpenSSL over two memory BIOs so that the socket
 * stays libuv's and nothing blocks. Ciphertext read from the socket goes
 * into the connection's read BIO; the handshake advances and plaintext
 * comes out into c->in, where http_parser reads it as on a plain
 * connection. Every answer is encrypted whole when it is queued
 * (ebb__http_tls_seal) and its records go out as one libuv write, counted
 * by its plaintext length, so the server's bounds see the same bytes with
 * and without TLS. The write BIO is emptied after every OpenSSL call: it
 * never holds more than one answer's records.
 *
 * The certificate (include/ebb/httpd.h, struct ebb_httpd_tls): the given
 * PEM pair, else the pair in cert_dir, else a self-signed one made here.
 * Loop thread only (the context is made before the server listens). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "base/httpd_int.h"

/* Ciphertext read per libuv read: one TLS record and its header. */
#define TLS_READ 17408u
/* Plaintext taken from OpenSSL per SSL_read, at least. */
#define TLS_PLAIN_MIN 4096u
/* The generated certificate's life. */
#define CERT_DAYS 365

struct tls_conn {
    SSL *ssl;
    BIO *rbio, *wbio;            /* owned by ssl */
    char rd[TLS_READ];
};

/* ---- the certificate ------------------------------------------------------------ */

/* OpenSSL's last error, for a message ("" when none). */
static const char *ossl_reason(void)
{
    static char buf[256];
    unsigned long e = ERR_peek_last_error();

    buf[0] = '\0';
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    return buf;
}

/* A readable regular file, or the error naming it. */
static int readable(const char *path, const char *field, struct ebb_error *err)
{
    FILE *f = fopen(path, "rb");

    if (f == NULL)
        return ebb_error_set(err, EBB_EIO, path, 0, field, "cannot read: %s", strerror(errno));
    fclose(f);
    return 0;
}

/* Load the PEM pair into ctx: the certificate (with its chain), the key,
 * and that they match. Errors name `cf` and `kf` (the fields they came
 * from: "cert_file" and "key_file", or "cert_dir" for both). */
static int load_pair(SSL_CTX *ctx, const char *cert, const char *key, const char *cf, const char *kf,
                     struct ebb_error *err)
{
    EVP_PKEY *pkey;
    FILE *f;
    int rc, ok;

    if ((rc = readable(cert, cf, err)) != 0 || (rc = readable(key, kf, err)) != 0)
        return rc;
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        return ebb_error_set(err, EBB_ESCHEMA, cert, 0, cf,
                             "not a PEM certificate (%s)", ossl_reason());
    if ((f = fopen(key, "rb")) == NULL)
        return ebb_error_set(err, EBB_EIO, key, 0, kf, "cannot read: %s", strerror(errno));
    pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (pkey == NULL)
        return ebb_error_set(err, EBB_ESCHEMA, key, 0, kf,
                             "not a PEM private key (%s)", ossl_reason());
    ok = SSL_CTX_use_PrivateKey(ctx, pkey);   /* fails when it is not the certificate's */
    EVP_PKEY_free(pkey);
    if (ok != 1 || SSL_CTX_check_private_key(ctx) != 1)
        return ebb_error_set(err, EBB_ESCHEMA, key, 0, kf,
                             "the private key does not match the certificate %s (%s)", cert,
                             ossl_reason());
    return 0;
}

/* A DNS name as a SAN may hold it (a hostname with odd bytes is left out). */
static bool dns_name(const char *s)
{
    if (s[0] == '\0' || strlen(s) > 253)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '.'))
            return false;
    return true;
}

static int add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX v3;
    X509_EXTENSION *ext;
    int ok;

    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    if ((ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value)) == NULL)
        return -1;
    ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok == 1 ? 0 : -1;
}

/* A self-signed certificate: ECDSA P-256, SHA-256, a random serial, valid
 * from an hour ago (clocks differ) for CERT_DAYS, a CA of itself so that
 * a client can trust it as it is (curl --cacert). */
static int make_self_signed(const char *hostname, EVP_PKEY **pkey_out, X509 **x_out)
{
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    BIGNUM *bn = BN_new();
    char host[256] = "", san[400], cn[64];
    int rc = -1;

    if (pkey == NULL || x == NULL || bn == NULL)
        goto out;
    if (hostname == NULL && gethostname(host, sizeof(host) - 1) == 0)
        hostname = host;
    snprintf(san, sizeof(san), "DNS:localhost,IP:127.0.0.1,IP:::1%s%s",
             hostname && dns_name(hostname) && strcmp(hostname, "localhost") != 0 ? ",DNS:" : "",
             hostname && dns_name(hostname) && strcmp(hostname, "localhost") != 0 ? hostname : "");
    snprintf(cn, sizeof(cn), "ebb@%lld", (long long)time(NULL));
    if (X509_set_version(x, 2) != 1 || BN_rand(bn, 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
        BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL ||
        X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
        X509_gmtime_adj(X509_getm_notAfter(x), (long)CERT_DAYS * 86400) == NULL ||
        X509_set_pubkey(x, pkey) != 1 ||
        X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                                   (const unsigned char *)cn, -1, -1, 0) != 1 ||
        X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
        add_ext(x, NID_basic_constraints, "critical,CA:TRUE") != 0 ||
        add_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign") != 0 ||
        add_ext(x, NID_ext_key_usage, "serverAuth") != 0 ||
        add_ext(x, NID_subject_alt_name, san) != 0 || X509_sign(x, pkey, EVP_sha256()) == 0)
        goto out;
    *pkey_out = pkey;
    *x_out = x;
    pkey = NULL;
    x = NULL;
    rc = 0;
out:
    EVP_PKEY_free(pkey);
    X509_free(x);
    BN_free(bn);
    return rc;
}

/* Write the pair into dir (made if missing): the key 0600, each file
 * written whole to a temporary name, then renamed. */
static int write_pem(const char *path, X509 *x, EVP_PKEY *pkey, struct ebb_error *err)
{
    char tmp[4200];
    FILE *f;
    int fd, ok;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, x ? 0644 : 0600)) < 0)
        return ebb_error_set(err, EBB_EIO, tmp, 0, "cert_dir", "cannot write: %s", strerror(errno));
    if ((f = fdopen(fd, "wb")) == NULL) {
        close(fd);
        unlink(tmp);
        return ebb_error_set(err, EBB_EIO, tmp, 0, "cert_dir", "cannot write: %s", strerror(errno));
    }
    ok = x ? PEM_write_X509(f, x) : PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL);
    if (fclose(f) != 0 || ok != 1 || rename(tmp, path) != 0) {
        unlink(tmp);
        return ebb_error_set(err, EBB_EIO, path, 0, "cert_dir", "cannot write: %s",
                             ok != 1 ? ossl_reason() : strerror(errno));
    }
    return 0;
}

static int self_signed(SSL_CTX *ctx, const struct ebb_httpd_tls *cfg, struct ebb_error *err)
{
    EVP_PKEY *pkey = NULL;
    X509 *x = NULL;
    int rc = 0;

    if (make_self_signed(cfg->hostname, &pkey, &x) != 0)
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL,
                             "cannot make a self-signed certificate (%s)", ossl_reason());
    if (cfg->cert_dir != NULL) {
        char crt[4096], key[4096];
        snprintf(crt, sizeof(crt), "%s/apiserver.crt", cfg->cert_dir);
        snprintf(key, sizeof(key), "%s/apiserver.key", cfg->cert_dir);
        if (mkdir(cfg->cert_dir, 0700) != 0 && errno != EEXIST)
            rc = ebb_error_set(err, EBB_EIO, cfg->cert_dir, 0, "cert_dir", "cannot make it: %s",
                               strerror(errno));
        else if ((rc = write_pem(key, NULL, pkey, err)) == 0)
            rc = write_pem(crt, x, NULL, err);
    }
    if (rc == 0 && (SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_use_PrivateKey(ctx, pkey) != 1))
        rc = ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "cannot use the self-signed certificate (%s)",
                           ossl_reason());
    EVP_PKEY_free(pkey);
    X509_free(x);
    return rc;
}

int ebb__http_tls_ctx(const struct ebb_httpd_tls *cfg, SSL_CTX **out, struct ebb_error *err)
{
    SSL_CTX *ctx;
    bool has_cert = cfg->cert_file && cfg->cert_file[0], has_key = cfg->key_file && cfg->key_file[0];
    int rc;

    if (has_cert != has_key)
        return ebb_error_set(err, EBB_ESCHEMA, has_cert ? cfg->cert_file : cfg->key_file, 0,
                             has_cert ? "key_file" : "cert_file",
                             "a certificate needs its private key and a key its certificate: give both");
    if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL)
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "TLS: %s", ossl_reason());
    /* Kubernetes' secure serving: TLS 1.2 and up, no renegotiation */
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* no resumption: no cache, and no TLS 1.3 tickets (sent after the
     * handshake, they are a write of their own for nothing) */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 0);
    if (has_cert) {
        rc = load_pair(ctx, cfg->cert_file, cfg->key_file, "cert_file", "key_file", err);
    } else if (cfg->cert_dir != NULL && cfg->cert_dir[0]) {
        char crt[4096], key[4096];
        snprintf(crt, sizeof(crt), "%s/apiserver.crt", cfg->cert_dir);
        snprintf(key, sizeof(key), "%s/apiserver.key", cfg->cert_dir);
        /* a pair left there (by an earlier start) is served again */
        if (access(crt, F_OK) == 0 && access(key, F_OK) == 0)
            rc = load_pair(ctx, crt, key, "cert_dir", "cert_dir", err);
        else
            rc = self_signed(ctx, cfg, err);
    } else {
        struct ebb_httpd_tls mem = *cfg;
        mem.cert_dir = NULL;
        rc = self_signed(ctx, &mem, err);
    }
    if (rc != 0) {
        SSL_CTX_free(ctx);
        return rc;
    }
    *out = ctx;
    return 0;
}

void ebb__http_tls_ctx_free(SSL_CTX *ctx)
{
    SSL_CTX_free(ctx);
}

/* ---- a connection ----------------------------------------------------------------- */

int ebb__http_tls_accept(struct conn *c, SSL_CTX *ctx)
{
    struct tls_conn *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return EBB_ENOMEM;
    t->ssl = SSL_new(ctx);
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    if (t->ssl == NULL || t->rbio == NULL || t->wbio == NULL) {
        BIO_free(t->rbio);
        BIO_free(t->wbio);
        SSL_free(t->ssl);
        free(t);
        ERR_clear_error();
        return EBB_ENOMEM;
    }
    /* an empty read BIO says "retry", not EOF */
    BIO_set_mem_eof_return(t->rbio, -1);
    SSL_set_bio(t->ssl, t->rbio, t->wbio);
    SSL_set_accept_state(t->ssl);
    c->tls = t;
    return 0;
}

void ebb__http_tls_free(struct conn *c)
{
    if (c->tls == NULL)
        return;
    SSL_free(c->tls->ssl);
    free(c->tls);
    c->tls = NULL;
}

uv_buf_t ebb__http_tls_read_buf(struct conn *c)
{
    return uv_buf_init(c->tls->rd, sizeof(c->tls->rd));
}

/* Send what OpenSSL wrote (handshake records, alerts), counted as
 * `counted` queued bytes. */
static int flush_out(struct conn *c, size_t counted, char **out, size_t *outlen)
{
    size_t n = BIO_ctrl_pending(c->tls->wbio);
    char *p;

    if (out != NULL) {
        *out = NULL;
        *outlen = 0;
    }
    if (n == 0)
        return 0;
    if ((p = malloc(n)) == NULL)
        return EBB_ENOMEM;
    if (BIO_read(c->tls->wbio, p, (int)n) != (int)n) {
        free(p);
        return EBB_EIO;
    }
    if (out != NULL) {
        *out = p;
        *outlen = n;
        return 0;
    }
    return ebb__http_conn_send_raw(c, p, n, counted);
}

int ebb__http_tls_input(struct conn *c, size_t n)
{
    struct tls_conn *t = c->tls;
    int rc = 0;

    if (BIO_write(t->rbio, t->rd, (int)n) != (int)n)
        return EBB_ENOMEM;
    for (;;) {
        int got, e;
        /* room as on_alloc (httpd.c) keeps it: READ_CHUNK, then doubling */
        if (c->in_cap - c->in_len < TLS_PLAIN_MIN &&
            ebb__grow((void **)&c->in, &c->in_cap,
                      c->in_len + READ_CHUNK / 4 > READ_CHUNK ? c->in_len + READ_CHUNK / 4 : READ_CHUNK,
                      1) != 0) {
            rc = EBB_ENOMEM;
            break;
        }
        got = SSL_read(t->ssl, c->in + c->in_len, (int)(c->in_cap - c->in_len));
        if (got > 0) {
            c->in_len += (size_t)got;
            continue;
        }
        e = SSL_get_error(t->ssl, got);
        if (e != SSL_ERROR_WANT_READ)
            rc = EBB_EIO;    /* a failed handshake, a bad record, the client's close_notify */
        break;
    }
    if (!c->tls_ready && SSL_is_init_finished(t->ssl))
        c->tls_ready = true;
    ERR_clear_error();
    /* the handshake's records, or an alert telling the client why */
    if (flush_out(c, 0, NULL, NULL) != 0 && rc == 0)
        rc = EBB_EIO;
    return rc;
}

int ebb__http_tls_seal(struct conn *c, const uv_buf_t *ub, unsigned n, char **out, size_t *outlen)
{
    for (unsigned i = 0; i < n; i++) {
        const char *p = ub[i].base;
        size_t left = ub[i].len;
        while (left > 0) {
            int chunk = left > (1u << 30) ? 1 << 30 : (int)left;
            /* the write BIO grows: a whole write always goes in */
            int w = SSL_write(c->tls->ssl, p, chunk);
            if (w <= 0) {
                ERR_clear_error();
                (void)BIO_reset(c->tls->wbio);
                return EBB_EIO;
            }
            p += w;
            left -= (size_t)w;
        }
    }
    return flush_out(c, 0, out, outlen);
}

void ebb__http_tls_close_notify(struct conn *c)
{
    if (c->tls == NULL || !c->tls_ready)
        return;
    (void)SSL_shutdown(c->tls->ssl);
    ERR_clear_error();
    (void)flush_out(c, 0, NULL, NULL);
}
