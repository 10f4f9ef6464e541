/* kube_exec.c: an exec credential plugin's answer read as client-go reads
 * it (every malformed ExecCredential an error naming its field), and the
 * plugin run without a shell: its args, env and KUBERNETES_EXEC_INFO, a
 * command not found with its installHint, a failing exit, output past the
 * bound. */
#include "fixtures.h"

#include <sys/stat.h>
#include <unistd.h>

#include "ebb/kube.h"

#define V1 "client.authentication.k8s.io/v1"
#define HEAD "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\","

static void test_parse_ok(void **state)
{
    static const struct {
        const char *text;
        const char *token, *cert;
        int64_t expires;
    } cases[] = {
        {HEAD "\"status\":{\"token\":\"abc.def\"}}", "abc.def", NULL, EBB_TIME_NONE},
        {HEAD "\"spec\":{\"interactive\":false},\"status\":{\"token\":\"t\","
              "\"expirationTimestamp\":\"2026-01-02T03:04:05Z\"}}", "t", NULL, 1767323045},
        {HEAD "\"status\":{\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\n\","
              "\"clientKeyData\":\"-----BEGIN PRIVATE KEY-----\\n\",\"expirationTimestamp\":null}}",
         NULL, "-----BEGIN CERTIFICATE-----\n", EBB_TIME_NONE},
        /* a token and a certificate: both are used, as client-go does */
        {HEAD "\"status\":{\"token\":\"t\",\"clientCertificateData\":\"C\",\"clientKeyData\":\"K\"}}",
         "t", "C", EBB_TIME_NONE},
    };
    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        struct ebb_kube_cred c;
        struct ebb_error err = { 0 };

        print_message("ok case %zu\n", i);
        assert_int_equal(ebb_kube_exec_parse(V1, cases[i].text, strlen(cases[i].text), &c, &err), 0);
        if (cases[i].token)
            assert_string_equal(c.token, cases[i].token);
        else
            assert_null(c.token);
        if (cases[i].cert) {
            assert_string_equal(c.cert_data, cases[i].cert);
            assert_non_null(c.key_data);
        } else {
            assert_null(c.cert_data);
        }
        assert_true(c.expires == cases[i].expires);
        ebb_kube_cred_clear(&c);
    }
}

/* The class: every way an answer can be malformed, each named. */
static void test_parse_bad(void **state)
{
    static const struct {
        const char *text;
        int code;
        const char *field, *msg;
    } cases[] = {
        {"", EBB_EPARSE, "", "printed nothing"},
        {"Token: abc", EBB_EPARSE, "", "not a JSON object"},
        {"[1,2]", EBB_EPARSE, "", "not a JSON object"},
        {HEAD "\"status\":{\"token\":\"t\"}", EBB_EPARSE, "", "not a JSON object"},
        {"{\"apiVersion\":\"" V1 "\",\"status\":{\"token\":\"t\"}}", EBB_ESCHEMA, "kind", "absent"},
        {"{\"kind\":\"Secret\",\"apiVersion\":\"" V1 "\",\"status\":{\"token\":\"t\"}}", EBB_ESCHEMA, "kind",
         "\"Secret\""},
        {"{\"kind\":7,\"apiVersion\":\"" V1 "\"}", EBB_ESCHEMA, "kind", "non-string"},
        {"{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}", EBB_ESCHEMA, "apiVersion", "returned none"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
         "\"status\":{\"token\":\"t\"}}", EBB_ESCHEMA, "apiVersion", "configured to use API version " V1},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":1}", EBB_ESCHEMA, "apiVersion", "non-string"},
        {HEAD "\"spec\":{}}", EBB_ESCHEMA, "status", "absent"},
        {HEAD "\"status\":null}", EBB_ESCHEMA, "status", "absent"},
        {HEAD "\"status\":\"t\"}", EBB_ESCHEMA, "status", "an object"},
        {HEAD "\"status\":{}}", EBB_ESCHEMA, "status", "neither a token nor"},
        {HEAD "\"status\":{\"token\":\"\"}}", EBB_ESCHEMA, "status", "neither a token nor"},
        {HEAD "\"status\":{\"token\":42}}", EBB_ESCHEMA, "status.token", "a string"},
        {HEAD "\"status\":{\"token\":\"a b\"}}", EBB_ESCHEMA, "status.token", "not a bearer token"},
        {HEAD "\"status\":{\"token\":\"a\\nAuthorization: x\"}}", EBB_ESCHEMA, "status.token",
         "not a bearer token"},
        {HEAD "\"status\":{\"token\":\"a\\u0000b\"}}", EBB_ESCHEMA, "status.token", "not a bearer token"},
        {HEAD "\"status\":{\"clientCertificateData\":\"C\"}}", EBB_ESCHEMA, "status.clientKeyData",
         "required with clientCertificateData"},
        {HEAD "\"status\":{\"clientKeyData\":\"K\"}}", EBB_ESCHEMA, "status.clientCertificateData",
         "required with clientKeyData"},
        {HEAD "\"status\":{\"clientCertificateData\":[],\"clientKeyData\":\"K\"}}", EBB_ESCHEMA,
         "status.clientCertificateData", "a string"},
        {HEAD "\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"tomorrow\"}}", EBB_ESCHEMA,
         "status.expirationTimestamp", "RFC 3339"},
        {HEAD "\"status\":{\"token\":\"t\",\"expirationTimestamp\":1767323045}}", EBB_ESCHEMA,
         "status.expirationTimestamp", "RFC 3339"},
    };
    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        struct ebb_kube_cred c;
        struct ebb_error err = { 0 };
        int rc;

        print_message("bad case %zu: %s\n", i, cases[i].text);
        rc = ebb_kube_exec_parse(V1, cases[i].text, strlen(cases[i].text), &c, &err);
        assert_int_equal(rc, cases[i].code);
        assert_string_equal(err.field, cases[i].field);
        if (strstr(err.msg, cases[i].msg) == NULL)
            fail_msg("message \"%s\" lacks \"%s\"", err.msg, cases[i].msg);
        assert_null(c.token);
        assert_null(c.cert_data);
    }
    /* a NUL byte in the output */
    {
        struct ebb_kube_cred c;
        struct ebb_error err = { 0 };
        static const char t[] = HEAD "\"status\":{\"token\":\"t\"}}\0junk";

        assert_int_equal(ebb_kube_exec_parse(V1, t, sizeof(t) - 1, &c, &err), EBB_EPARSE);
        assert_non_null(strstr(err.msg, "NUL"));
    }
}

static char dir[64];

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/ebb-exec-XXXXXX");
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* dir/name <- an executable script */
static char *script(const char *name, const char *text)
{
    char *path;
    FILE *f;

    assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
    assert_non_null(f = fopen(path, "w"));
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
    return path;
}

static void run(char *argv0, char **args, char **env, const char *hint, int want,
                struct ebb_kube_cred *c, struct ebb_error *err)
{
    char *argv[8] = { argv0 };
    struct ebb_kube_exec x = { .api_version = V1, .argv = argv, .env = env,
                               .install_hint = (char *)hint,
                               .exec_info = "{\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false}}",
                               .where = "config: users[0].user.exec" };

    for (size_t i = 0; args != NULL && args[i] != NULL && i < 6; i++)
        argv[i + 1] = args[i];
    memset(err, 0, sizeof(*err));
    assert_int_equal(ebb_kube_exec_run(&x, c, err), want);
    if (want != 0)
        assert_string_equal(err->field, "config: users[0].user.exec");
}

static void test_run(void **state)
{
    /* the argv reaches the plugin as it is (no shell: '$(x)' stays), and
     * so do env and KUBERNETES_EXEC_INFO */
    char *p = script("plugin",
                     "#!/bin/sh\n"
                     "[ \"$1\" = 'token' ] && [ \"$2\" = '$(rm -rf x); y' ] || exit 3\n"
                     "[ \"$AWS_PROFILE\" = prod ] || exit 4\n"
                     "case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*) ;; *) exit 5;; esac\n"
                     "read -r line && exit 6\n"   /* stdin is empty */
                     "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",'\n"
                     "echo '\"status\":{\"token\":\"from-plugin\"}}'\n");
    char *args[] = { "token", "$(rm -rf x); y", NULL }, *env[] = { "AWS_PROFILE=prod", NULL };
    struct ebb_kube_cred c = { 0 };
    struct ebb_error err;

    setenv("AWS_PROFILE", "dev", 1);   /* the plugin's env wins */
    run(p, args, env, NULL, 0, &c, &err);
    unsetenv("AWS_PROFILE");
    assert_string_equal(c.token, "from-plugin");
    ebb_kube_cred_clear(&c);
    free(p);
}

static void test_run_failures(void **state)
{
    struct ebb_kube_cred c = { 0 };
    struct ebb_error err;
    char *p, big[64];

    /* not found: the installHint says what to do */
    run("ebb-no-such-plugin", NULL, NULL, "Install it with: apt install no-such-plugin", EBB_EIO, &c, &err);
    assert_non_null(strstr(err.msg, "ebb-no-such-plugin"));
    assert_non_null(strstr(err.msg, "Install it with: apt install no-such-plugin"));
    /* a failing exit */
    p = script("fails", "#!/bin/sh\necho 'not logged in' >&2\nexit 2\n");
    run(p, NULL, NULL, NULL, EBB_EIO, &c, &err);
    assert_non_null(strstr(err.msg, "exited with status 2"));
    free(p);
    /* output past the bound is not read to the end */
    snprintf(big, sizeof(big), "#!/bin/sh\nexec yes\n");
    p = script("chatty", big);
    run(p, NULL, NULL, NULL, EBB_EIO, &c, &err);
    assert_non_null(strstr(err.msg, "printed more than"));
    free(p);
    /* a malformed answer names the plugin and the field */
    p = script("wrong", "#!/bin/sh\necho '{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
                        "\",\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"soon\"}}'\n");
    run(p, NULL, NULL, NULL, EBB_ESCHEMA, &c, &err);
    assert_non_null(strstr(err.msg, "answered wrong: status.expirationTimestamp"));
    free(p);
    assert_null(c.token);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test_setup_teardown(test_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
