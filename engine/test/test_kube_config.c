/* kube_config.c: kubeconfig files written to a temp dir (contexts, auth
 * forms, relative paths, every error with its file, line and field), the
 * in-cluster service account (EBB_SERVICEACCOUNT_DIR) and the order in
 * which the sources are tried. */
#include "fixtures.h"

#include <sys/stat.h>
#include <unistd.h>

#include "ebb/kube.h"

static char dir[64];

static void clear_env(void)
{
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    unsetenv("EBB_SERVICEACCOUNT_DIR");
}

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/ebb-kubeconfig-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    clear_env();
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    clear_env();
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* dir/name <- text; returns the path (the caller frees it). */
static char *put(const char *name, const char *text)
{
    char *path;
    FILE *f;

    assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static struct ebb_kube_config *load_ok(const char *path, const char *context)
{
    struct ebb_kube_config *c = NULL;
    struct ebb_error err;
    int rc = ebb_kube_config_load(path, context, &c, &err);

    if (rc != 0) {
        char buf[1400];
        ebb_error_format(&err, buf, sizeof(buf));
        fail_msg("%s: %s", ebb_strerror(rc), buf);
    }
    assert_non_null(c);
    return c;
}

static void load_bad(const char *path, const char *context, int code, int line,
                     const char *field, const char *msg_part, struct ebb_error *err)
{
    struct ebb_kube_config *c = NULL;
    int rc = ebb_kube_config_load(path, context, &c, err);

    assert_int_equal(rc, code);
    assert_null(c);
    assert_int_equal(err->code, code);
    assert_int_equal(err->line, line);
    assert_string_equal(err->field, field);
    if (msg_part != NULL && strstr(err->msg, msg_part) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err->msg, msg_part);
}

/* "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" */
#define PEM "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define PEM_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
#define KEY "-----BEGIN PRIVATE KEY-----\nABCD\n-----END PRIVATE KEY-----\n"
#define KEY_B64 "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCkFCQ0QKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo"

static const char two_contexts[] =
    "apiVersion: v1\n"                                   /* 1 */
    "kind: Config\n"                                     /* 2 */
    "current-context: dev\n"                             /* 3 */
    "clusters:\n"                                        /* 4 */
    "- name: dev-cluster\n"                              /* 5 */
    "  cluster:\n"                                       /* 6 */
    "    server: https://dev.example:6443/\n"            /* 7 */
    "    insecure-skip-tls-verify: true\n"               /* 8 */
    "- name: prod-cluster\n"                             /* 9 */
    "  cluster:\n"                                       /* 10 */
    "    server: prod.example:443\n"                     /* 11 */
    "    certificate-authority-data: " PEM_B64 "\n"      /* 12 */
    "    certificate-authority: /nonexistent/ca.crt\n"   /* 13: -data wins */
    "contexts:\n"                                        /* 14 */
    "- name: dev\n"                                      /* 15 */
    "  context:\n"                                       /* 16 */
    "    cluster: dev-cluster\n"                         /* 17 */
    "    user: dev-user\n"                               /* 18 */
    "    namespace: team-a\n"                            /* 19 */
    "- name: prod\n"                                     /* 20 */
    "  context:\n"                                       /* 21 */
    "    cluster: prod-cluster\n"                        /* 22 */
    "    user: prod-user\n"                              /* 23 */
    "users:\n"                                           /* 24 */
    "- name: dev-user\n"                                 /* 25 */
    "  user:\n"                                          /* 26 */
    "    token: abc.def\n"                               /* 27 */
    "- name: prod-user\n"                                /* 28 */
    "  user:\n"                                          /* 29 */
    "    client-certificate-data: " PEM_B64 "\n"         /* 30 */
    "    client-key-data: |\n"                           /* 31 */
    "      LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCkFCQ0QK\n" /* 32: wrapped */
    "      LS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo\n";       /* 33: unpadded */

static void test_current_context_token(void **state)
{
    char *path = put("config", two_contexts), src[300];
    struct ebb_kube_config *c = load_ok(path, NULL);

    assert_string_equal(c->server, "https://dev.example:6443");
    assert_string_equal(c->token, "abc.def");
    assert_null(c->token_file);
    assert_true(c->insecure);
    assert_false(c->no_gzip);   /* answers gzip-encoded unless disable-compression */
    assert_null(c->ca_file);
    assert_null(c->ca_data);
    assert_null(c->cert_data);
    assert_string_equal(c->namespace, "team-a");
    snprintf(src, sizeof(src), "%s (context dev)", path);
    assert_string_equal(c->source, src);
    ebb_kube_config_free(c);
    free(path);
}

static void test_explicit_context_cert_data(void **state)
{
    char *path = put("config", two_contexts);
    struct ebb_kube_config *c = load_ok(path, "prod");

    assert_string_equal(c->server, "https://prod.example:443");
    assert_false(c->insecure);
    assert_string_equal(c->ca_data, PEM);
    assert_null(c->ca_file);
    assert_string_equal(c->cert_data, PEM);
    assert_string_equal(c->key_data, KEY);
    assert_null(c->cert_file);
    assert_null(c->key_file);
    assert_null(c->token);
    assert_string_equal(c->namespace, "default");
    assert_non_null(strstr(c->source, "(context prod)"));
    ebb_kube_config_free(c);
    free(path);
}

static void test_relative_files(void **state)
{
    char *ca = put("ca.crt", PEM), *tok = put("token", "t0k\n");
    char *cert = put("client.crt", PEM), *key = put("client.key", KEY), *path, text[1024],
         want[200];
    struct ebb_kube_config *c;

    /* relative to the kubeconfig's directory, whatever the working directory;
     * the key is given as an absolute path */
    snprintf(text, sizeof(text),
             "clusters:\n"
             "- name: c\n"
             "  cluster: {server: 'https://10.0.0.1', certificate-authority: ca.crt}\n"
             "contexts:\n"
             "- name: x\n"
             "  context: {cluster: c, user: u}\n"
             "current-context: x\n"
             "users:\n"
             "- name: u\n"
             "  user:\n"
             "    tokenFile: ./token\n"
             "    client-certificate: client.crt\n"
             "    client-key: %s\n",
             key);
    path = put("config", text);
    c = load_ok(path, NULL);
    assert_string_equal(c->server, "https://10.0.0.1");
    snprintf(want, sizeof(want), "%s/ca.crt", dir);
    assert_string_equal(c->ca_file, want);
    snprintf(want, sizeof(want), "%s/./token", dir);
    assert_string_equal(c->token_file, want);
    assert_null(c->token);   /* read by the client, as it rotates */
    snprintf(want, sizeof(want), "%s/client.crt", dir);
    assert_string_equal(c->cert_file, want);
    assert_string_equal(c->key_file, key);
    assert_null(c->cert_data);
    assert_null(c->key_data);
    ebb_kube_config_free(c);
    free(path);
    free(ca);
    free(tok);
    free(cert);
    free(key);
}

static void test_token_beats_token_file(void **state)
{
    char *path = put("config",
                     "current-context: x\n"
                     "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:8001'}}]\n"
                     "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                     "users: [{name: u, user: {token: inline, tokenFile: /nonexistent}}]\n");
    struct ebb_kube_config *c = load_ok(path, NULL);

    assert_string_equal(c->server, "http://127.0.0.1:8001");
    assert_string_equal(c->token, "inline");
    assert_null(c->token_file);
    ebb_kube_config_free(c);
    free(path);
}

static void test_no_user(void **state)
{
    char *path = put("config",
                     "current-context: x\n"
                     "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                     "contexts: [{name: x, context: {cluster: c}}]\n");
    struct ebb_kube_config *c = load_ok(path, NULL);

    assert_null(c->token);
    assert_null(c->token_file);
    assert_null(c->cert_data);
    assert_null(c->cert_file);
    ebb_kube_config_free(c);
    free(path);
}

/* ---- errors ---------------------------------------------------------------------- */

static void test_missing_file(void **state)
{
    struct ebb_error err;
    char path[128];

    snprintf(path, sizeof(path), "%s/nope", dir);
    load_bad(path, NULL, EBB_EIO, 0, "", "cannot open", &err);
    assert_string_equal(err.file, path);
}

static void test_missing_context(void **state)
{
    char *path = put("config", two_contexts);
    struct ebb_error err;

    load_bad(path, "staging", EBB_ESCHEMA, 14, "contexts", "context \"staging\" not found", &err);
    assert_string_equal(err.file, path);
    free(path);

    path = put("config", "current-context: gone\n"   /* 1 */
                         "contexts: []\n");          /* 2 */
    load_bad(path, NULL, EBB_ESCHEMA, 1, "current-context", "\"gone\" not found", &err);
    free(path);

    path = put("config", "contexts: []\n");
    load_bad(path, NULL, EBB_ESCHEMA, 0, "current-context", "not set", &err);
    free(path);
}

static void test_missing_cluster_and_user(void **state)
{
    static const char text[] =
        "current-context: x\n"                           /* 1 */
        "clusters:\n"                                    /* 2 */
        "- name: c\n"                                    /* 3 */
        "  cluster: {server: 'https://h'}\n"             /* 4 */
        "contexts:\n"                                    /* 5 */
        "- name: x\n"                                    /* 6 */
        "  context:\n"                                   /* 7 */
        "    cluster: %s\n"                              /* 8 */
        "    user: %s\n"                                 /* 9 */
        "users:\n"                                       /* 10 */
        "- name: u\n"                                    /* 11 */
        "  user: {token: t}\n";                          /* 12 */
    char buf[512], *path;
    struct ebb_error err;

    snprintf(buf, sizeof(buf), text, "other", "u");
    path = put("config", buf);
    load_bad(path, NULL, EBB_ESCHEMA, 8, "contexts[0].context.cluster",
             "cluster \"other\" not found in clusters", &err);
    free(path);

    snprintf(buf, sizeof(buf), text, "c", "someone");
    path = put("config", buf);
    load_bad(path, NULL, EBB_ESCHEMA, 9, "contexts[0].context.user",
             "user \"someone\" not found in users", &err);
    free(path);
}

#define EXEC_HEAD                                                                          \
    "current-context: x\n"                                   /* 1 */                       \
    "clusters: [{name: c, cluster: {server: 'https://h:6443', insecure-skip-tls-verify: true, " \
    "disable-compression: true}}]\n"                         /* 2 */                       \
    "contexts: [{name: x, context: {cluster: c, user: u}}]\n" /* 3 */                      \
    "users:\n"                                               /* 4 */                       \
    "- name: u\n"                                            /* 5 */                       \
    "  user:\n"                                              /* 6 */                       \
    "    exec:\n"                                            /* 7 */

/* An EKS-style exec user: command resolved against the kubeconfig's
 * directory, args and env in order, the cluster info when asked for. */
static void test_exec_read(void **state)
{
    char *path = put("config", EXEC_HEAD
                     "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                     "      command: bin/aws-iam-authenticator\n"
                     "      args: [token, -i, prod]\n"
                     "      env: [{name: AWS_PROFILE, value: prod}, {name: EMPTY}]\n"
                     "      installHint: install it from your package manager\n"
                     "      provideClusterInfo: true\n");
    struct ebb_kube_config *c = load_ok(path, NULL);
    char want[128];

    assert_non_null(c->exec);
    snprintf(want, sizeof(want), "%s/bin/aws-iam-authenticator", dir);
    assert_string_equal(c->exec->argv[0], want);
    assert_string_equal(c->exec->argv[1], "token");
    assert_string_equal(c->exec->argv[3], "prod");
    assert_null(c->exec->argv[4]);
    assert_string_equal(c->exec->env[0], "AWS_PROFILE=prod");
    assert_string_equal(c->exec->env[1], "EMPTY=");
    assert_null(c->exec->env[2]);
    assert_string_equal(c->exec->install_hint, "install it from your package manager");
    assert_string_equal(c->exec->exec_info,
                        "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                        "\"spec\":{\"interactive\":false,\"cluster\":{\"server\":\"https://h:6443\","
                        "\"insecure-skip-tls-verify\":true,\"disable-compression\":true}}}");
    assert_true(c->no_gzip);
    ebb_kube_config_free(c);
    free(path);

    /* a bare name is left to $PATH; without provideClusterInfo no cluster */
    path = put("config", EXEC_HEAD
               "      apiVersion: client.authentication.k8s.io/v1\n"
               "      command: gke-gcloud-auth-plugin\n"
               "      interactiveMode: IfAvailable\n");
    c = load_ok(path, NULL);
    assert_string_equal(c->exec->argv[0], "gke-gcloud-auth-plugin");
    assert_null(c->exec->argv[1]);
    assert_null(c->exec->install_hint);
    assert_null(strstr(c->exec->exec_info, "cluster"));
    ebb_kube_config_free(c);
    free(path);
}

/* Every field of exec a user can get wrong: the file, line and field. */
static void test_exec_bad(void **state)
{
    static const struct {
        const char *body;
        int line;
        const char *field, *msg;
    } cases[] = {
        {"      command: aws\n", 8, "users[0].user.exec.apiVersion", "required"},
        {"      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: aws\n", 8,
         "users[0].user.exec.apiVersion", "v1alpha1 was removed"},
        {"      apiVersion: v1\n      command: aws\n", 8, "users[0].user.exec.apiVersion",
         "is not client.authentication.k8s.io/v1 or"},
        {"      apiVersion: client.authentication.k8s.io/v1beta1\n", 8,
         "users[0].user.exec.command", "required"},
        {"      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n", 8,
         "users[0].user.exec.interactiveMode", "required with"},
        {"      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"
         "      interactiveMode: Always\n", 10, "users[0].user.exec.interactiveMode",
         "ebb runs without one"},
        {"      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"
         "      interactiveMode: Sometimes\n", 10, "users[0].user.exec.interactiveMode",
         "is not Never, IfAvailable or Always"},
        {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
         "      args: token\n", 10, "users[0].user.exec.args", "a list of strings"},
        {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
         "      args: [token, [x]]\n", 10, "users[0].user.exec.args[1]", "a string"},
        {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
         "      env: {AWS_PROFILE: prod}\n", 10, "users[0].user.exec.env", "a list of {name, value}"},
        {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
         "      env:\n      - value: prod\n", 11, "users[0].user.exec.env[0].name", "required"},
        {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
         "      env: [{name: 'A=B', value: x}]\n", 10, "users[0].user.exec.env[0].name", "no '='"},
        {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
         "      env: [{name: A, value: [x]}]\n", 10, "users[0].user.exec.env[0].value", "string"},
        {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
         "      provideClusterInfo: maybe\n", 10, "users[0].user.exec.provideClusterInfo", NULL},
        {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: \"aws\\0x\"\n", 9,
         "users[0].user.exec.command", "NUL"},
    };
    struct ebb_error err;

    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        char text[2048], *path;

        snprintf(text, sizeof(text), "%s%s", EXEC_HEAD, cases[i].body);
        path = put("config", text);
        print_message("case %zu: %s\n", i, cases[i].field);
        load_bad(path, NULL, EBB_ESCHEMA, cases[i].line, cases[i].field, cases[i].msg, &err);
        assert_non_null(strstr(err.file, "config"));
        free(path);
    }
    /* an exec that is not a map */
    {
        char *path = put("config",
                         "current-context: x\n"
                         "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                         "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                         "users: [{name: u, user: {exec: aws}}]\n");
        load_bad(path, NULL, EBB_ESCHEMA, 4, "users[0].user.exec", "a map", &err);
        free(path);
    }
}

static void test_other_auth_refused(void **state)
{
    char *path = put("config",
               "current-context: x\n"
               "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
               "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
               "users:\n"
               "- name: u\n"
               "  user:\n"
               "    auth-provider: {name: gcp}\n");
    struct ebb_error err;

    load_bad(path, NULL, EBB_ESCHEMA, 7, "users[0].user.auth-provider", "not supported", &err);
    free(path);
}

static void test_bad_values(void **state)
{
    struct ebb_error err;
    char *path;

    /* a referenced file that is not there */
    path = put("config",
               "current-context: x\n"                                               /* 1 */
               "clusters:\n"                                                        /* 2 */
               "- name: c\n"                                                        /* 3 */
               "  cluster:\n"                                                       /* 4 */
               "    server: https://h\n"                                            /* 5 */
               "    certificate-authority: missing-ca.crt\n"                        /* 6 */
               "contexts: [{name: x, context: {cluster: c}}]\n");
    load_bad(path, NULL, EBB_EIO, 6, "clusters[0].cluster.certificate-authority",
             "missing-ca.crt", &err);
    free(path);

    /* no server */
    path = put("config",
               "current-context: x\n"
               "clusters:\n"
               "- name: c\n"                 /* 3 */
               "  cluster:\n"                /* 4 */
               "    insecure-skip-tls-verify: true\n"
               "contexts: [{name: x, context: {cluster: c}}]\n");
    load_bad(path, NULL, EBB_ESCHEMA, 5, "clusters[0].cluster.server", "required", &err);
    free(path);

    /* a cluster field of a bad value (bad base64) or of the wrong type, on line 6 */
    static const struct {
        const char *key, *value, *msg;
    } cluster_bad[] = {
        { "certificate-authority-data", "'not*base64'", "base64" },
        { "insecure-skip-tls-verify", "'yes please'", "expected a boolean, got a string" },
        { "disable-compression", "1", "expected a boolean, got an integer" },
    };
    for (size_t i = 0; i < EBB_ARRAY_LEN(cluster_bad); i++) {
        char text[300], field[100];

        snprintf(text, sizeof(text),
                 "current-context: x\n"
                 "clusters:\n"
                 "- name: c\n"
                 "  cluster:\n"
                 "    server: https://h\n"
                 "    %s: %s\n"                                 /* 6 */
                 "contexts: [{name: x, context: {cluster: c}}]\n",
                 cluster_bad[i].key, cluster_bad[i].value);
        snprintf(field, sizeof(field), "clusters[0].cluster.%s", cluster_bad[i].key);
        path = put("config", text);
        load_bad(path, NULL, EBB_ESCHEMA, 6, field, cluster_bad[i].msg, &err);
        free(path);
    }

    path = put("config",
               "current-context: x\n"
               "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
               "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
               "users:\n"
               "- name: u\n"
               "  user:\n"
               "    token: 12345\n");                                 /* 7 */
    load_bad(path, NULL, EBB_ESCHEMA, 7, "users[0].user.token", "expected a string, got an integer", &err);
    free(path);

    /* a token a header cannot carry (it would forge the headers after it),
     * and a NUL a C string would cut the server at */
    path = put("config",
               "current-context: x\n"
               "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
               "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
               "users:\n"
               "- name: u\n"
               "  user:\n"
               "    token: \"abc\\r\\nX-Forged: 1\"\n");               /* 7 */
    load_bad(path, NULL, EBB_ESCHEMA, 7, "users[0].user.token", "not a bearer token", &err);
    free(path);
    path = put("config",
               "current-context: x\n"
               "clusters: [{name: c, cluster: {server: \"https://h\\0.evil\"}}]\n"   /* 2 */
               "contexts: [{name: x, context: {cluster: c}}]\n");
    load_bad(path, NULL, EBB_ESCHEMA, 2, "clusters[0].cluster.server", "NUL", &err);
    free(path);

    /* a certificate without its key */
    path = put("config",
               "current-context: x\n"
               "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
               "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
               "users:\n"
               "- name: u\n"
               "  user:\n"
               "    client-certificate-data: " PEM_B64 "\n");         /* 7 */
    load_bad(path, NULL, EBB_ESCHEMA, 7, "users[0].user.client-key", "required", &err);
    free(path);

    /* not YAML at all */
    path = put("config", "clusters: [\n");
    {
        struct ebb_kube_config *c = NULL;
        assert_int_equal(ebb_kube_config_load(path, NULL, &c, &err), EBB_EPARSE);
        assert_null(c);
        assert_string_equal(err.file, path);
        assert_true(err.line > 0);
    }
    free(path);
}

/* ---- in-cluster and the order of sources ------------------------------------------- */

static char *service_account(const char *ns)
{
    char *sa, *p;

    assert_true(asprintf(&sa, "%s/sa", dir) > 0);
    mkdir(sa, 0700);
    free(put("sa/token", "in-cluster-token\n"));
    free(put("sa/ca.crt", PEM));
    if (ns != NULL)
        free(put("sa/namespace", ns));
    else {
        assert_true(asprintf(&p, "%s/namespace", sa) > 0);
        unlink(p);
        free(p);
    }
    setenv("EBB_SERVICEACCOUNT_DIR", sa, 1);
    return sa;
}

static void test_in_cluster(void **state)
{
    char *sa = service_account("kube-system\n"), want[200];
    struct ebb_kube_config *c;
    struct ebb_error err;

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    c = load_ok(NULL, NULL);
    assert_string_equal(c->server, "https://10.96.0.1:443");
    snprintf(want, sizeof(want), "%s/token", sa);
    assert_string_equal(c->token_file, want);
    assert_null(c->token);
    snprintf(want, sizeof(want), "%s/ca.crt", sa);
    assert_string_equal(c->ca_file, want);
    assert_string_equal(c->namespace, "kube-system");
    assert_string_equal(c->source, "in-cluster");
    assert_false(c->insecure);
    ebb_kube_config_free(c);

    /* IPv6 service address, no namespace file */
    free(service_account(NULL));
    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    c = load_ok(NULL, NULL);
    assert_string_equal(c->server, "https://[fd00:10:96::1]:443");
    assert_string_equal(c->namespace, "default");
    ebb_kube_config_free(c);

    /* no port */
    unsetenv("KUBERNETES_SERVICE_PORT");
    load_bad(NULL, NULL, EBB_ESCHEMA, 0, "KUBERNETES_SERVICE_PORT", "not set", &err);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);

    /* no token */
    snprintf(want, sizeof(want), "%s/token", sa);
    unlink(want);
    load_bad(NULL, NULL, EBB_EIO, 0, "", "service account token", &err);
    assert_string_equal(err.file, want);
    free(sa);
}

static void test_source_order(void **state)
{
    char *a = put("a.yaml", "current-context: x\n"
                            "clusters: [{name: c, cluster: {server: 'https://a'}}]\n"
                            "contexts: [{name: x, context: {cluster: c}}]\n");
    char *b = put("b.yaml", "current-context: x\n"
                            "clusters: [{name: c, cluster: {server: 'https://b'}}]\n"
                            "contexts: [{name: x, context: {cluster: c}}]\n");
    char *sa = service_account("ns"), env[512], home[128];
    struct ebb_kube_config *c;
    struct ebb_error err;
    const char *old_home = getenv("HOME");
    char *saved_home = old_home ? strdup(old_home) : NULL;

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    /* $KUBECONFIG: the first file of the list that exists, before in-cluster */
    snprintf(env, sizeof(env), "%s/missing.yaml::%s:%s", dir, b, a);
    setenv("KUBECONFIG", env, 1);
    c = load_ok(NULL, NULL);
    assert_string_equal(c->server, "https://b");
    ebb_kube_config_free(c);
    /* an explicit path before everything */
    c = load_ok(a, NULL);
    assert_string_equal(c->server, "https://a");
    ebb_kube_config_free(c);
    /* $KUBECONFIG names nothing that exists: in-cluster */
    snprintf(env, sizeof(env), "%s/missing.yaml", dir);
    setenv("KUBECONFIG", env, 1);
    c = load_ok(NULL, NULL);
    assert_string_equal(c->source, "in-cluster");
    ebb_kube_config_free(c);
    /* ... and without a cluster either: an error naming $KUBECONFIG */
    unsetenv("KUBERNETES_SERVICE_HOST");
    load_bad(NULL, NULL, EBB_EIO, 0, "KUBECONFIG", "none of the files", &err);
    assert_string_equal(err.file, env);
    /* nothing set: ~/.kube/config */
    unsetenv("KUBECONFIG");
    snprintf(home, sizeof(home), "%s/home", dir);
    mkdir(home, 0700);
    setenv("HOME", home, 1);
    load_bad(NULL, NULL, EBB_EIO, 0, "", "no --kubeconfig", &err);
    snprintf(env, sizeof(env), "%s/.kube", home);
    mkdir(env, 0700);
    free(put("home/.kube/config", "current-context: x\n"
                                   "clusters: [{name: c, cluster: {server: 'https://home'}}]\n"
                                   "contexts: [{name: x, context: {cluster: c}}]\n"));
    c = load_ok(NULL, NULL);
    assert_string_equal(c->server, "https://home");
    ebb_kube_config_free(c);

    if (saved_home != NULL)
        setenv("HOME", saved_home, 1);
    free(saved_home);
    free(sa);
    free(a);
    free(b);
}

static void test_args(void **state)
{
    ebb_kube_config_free(NULL);
    assert_int_equal(ebb_kube_config_load(NULL, NULL, NULL, NULL), EBB_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_current_context_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_explicit_context_cert_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relative_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_beats_token_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_context, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_cluster_and_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_bad, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_auth_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_order, setup, teardown),
        cmocka_unit_test(test_args),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
