/* Exec credential plugins (a kubeconfig's users[].user.exec, as EKS, GKE
 * and AKS write them): run the plugin without a shell, read its stdout
 * (bounded in size and time), and take the ExecCredential it prints as
 * client-go does (k8s.io/client-go/plugin/pkg/client/auth/exec). Called
 * from kube_http.c on the loop thread when a request needs a credential
 * and the cached one is missing, expired or was refused with a 401; the
 * kubeconfig reader (kube_config.c) builds the struct ebb_kube_exec.
 *
 * The run blocks the loop: client-go blocks the request too, and a
 * credential is needed before anything else can be asked. The bound
 * (EBB_KUBE_EXEC_TIMEOUT_MS) keeps a hung plugin from holding it longer. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ebb/decode.h"
#include "ebb/kube.h"

extern char **environ;

static void strv_free(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

static int strv_dup(char *const *v, char ***out)
{
    size_t n = 0;
    char **d;

    *out = NULL;
    if (v == NULL)
        return 0;
    while (v[n] != NULL)
        n++;
    if ((d = calloc(n + 1, sizeof(*d))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if ((d[i] = strdup(v[i])) == NULL) {
            strv_free(d);
            return EBB_ENOMEM;
        }
    *out = d;
    return 0;
}

void ebb_kube_exec_free(struct ebb_kube_exec *x)
{
    if (x == NULL)
        return;
    free(x->api_version);
    strv_free(x->argv);
    strv_free(x->env);
    free(x->install_hint);
    free(x->exec_info);
    free(x->where);
    free(x);
}

static int dup_or_null(const char *s, char **out)
{
    *out = NULL;
    return s != NULL && (*out = strdup(s)) == NULL ? EBB_ENOMEM : 0;
}

int ebb_kube_exec_dup(const struct ebb_kube_exec *x, struct ebb_kube_exec **out)
{
    struct ebb_kube_exec *d;

    if (x == NULL || out == NULL)
        return EBB_EINVAL;
    if ((d = calloc(1, sizeof(*d))) == NULL)
        return EBB_ENOMEM;
    if (dup_or_null(x->api_version, &d->api_version) || strv_dup(x->argv, &d->argv) ||
        strv_dup(x->env, &d->env) || dup_or_null(x->install_hint, &d->install_hint) ||
        dup_or_null(x->exec_info, &d->exec_info) || dup_or_null(x->where, &d->where)) {
        ebb_kube_exec_free(d);
        return EBB_ENOMEM;
    }
    *out = d;
    return 0;
}

void ebb_kube_cred_clear(struct ebb_kube_cred *c)
{
    if (c == NULL)
        return;
    free(c->token);
    free(c->cert_data);
    free(c->key_data);
    c->token = c->cert_data = c->key_data = NULL;
    c->expires = EBB_TIME_NONE;
}

/* ---- the answer ------------------------------------------------------------ */

static int bad(struct ebb_error *err, int code, const char *field, const char *msg)
{
    return ebb_error_set(err, code, NULL, 0, field, "%s", msg);
}

/* An optional string member of status: absent and null read as "". */
static int status_str(const cJSON *status, const char *key, const char **out,
                      struct ebb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(status, key);
    char field[64];

    *out = "";
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    snprintf(field, sizeof(field), "status.%s", key);
    if (!cJSON_IsString(v))
        return bad(err, EBB_ESCHEMA, field, "must be a string");
    *out = v->valuestring;
    return 0;
}

int ebb_kube_exec_parse(const char *api_version, const char *text, size_t len,
                        struct ebb_kube_cred *out, struct ebb_error *err)
{
    const cJSON *kind, *av, *status, *exp;
    const char *token, *cert, *key;
    cJSON *j = NULL;
    char *copy;
    int rc;

    if (api_version == NULL || text == NULL || out == NULL)
        return EBB_EINVAL;
    memset(out, 0, sizeof(*out));
    out->expires = EBB_TIME_NONE;
    /* cJSON would cut a string at a NUL: "a\u0000b" would be read as the
     * token "a". As U+FFFD it is a string no check can mistake (the token
     * check refuses it); a raw NUL byte makes the output not JSON. */
    if ((copy = malloc(len + 1)) == NULL)
        return bad(err, EBB_ENOMEM, NULL, "out of memory");
    memcpy(copy, text, len);
    copy[len] = '\0';
    if (!ebb_json_nul_scrub(copy, len)) {
        free(copy);
        return bad(err, EBB_EPARSE, NULL, "the plugin's output holds a NUL byte");
    }
    j = cJSON_ParseWithLength(copy, len);
    free(copy);
    if (j == NULL || !cJSON_IsObject(j)) {
        rc = bad(err, EBB_EPARSE, NULL,
                 len == 0 ? "the plugin printed nothing (an ExecCredential was expected)"
                          : "the plugin's output is not a JSON object (an ExecCredential was expected)");
        goto out;
    }
    kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
    av = cJSON_GetObjectItemCaseSensitive(j, "apiVersion");
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "ExecCredential") != 0) {
        rc = ebb_error_set(err, EBB_ESCHEMA, NULL, 0, "kind", "must be \"ExecCredential\", not %s%s%s",
                           cJSON_IsString(kind) ? "\"" : "",
                           cJSON_IsString(kind) ? kind->valuestring : kind ? "a non-string" : "absent",
                           cJSON_IsString(kind) ? "\"" : "");
        goto out;
    }
    if (!cJSON_IsString(av) || strcmp(av->valuestring, api_version) != 0) {
        rc = ebb_error_set(err, EBB_ESCHEMA, NULL, 0, "apiVersion",
                           "the plugin is configured to use API version %s, it returned %s%.100s%s",
                           api_version, cJSON_IsString(av) ? "\"" : "",
                           cJSON_IsString(av) ? av->valuestring : av ? "a non-string" : "none",
                           cJSON_IsString(av) ? "\"" : "");
        goto out;
    }
    status = cJSON_GetObjectItemCaseSensitive(j, "status");
    if (status == NULL || cJSON_IsNull(status)) {
        rc = bad(err, EBB_ESCHEMA, "status", "absent: the plugin returned no credential");
        goto out;
    }
    if (!cJSON_IsObject(status)) {
        rc = bad(err, EBB_ESCHEMA, "status", "must be an object");
        goto out;
    }
    if ((rc = status_str(status, "token", &token, err)) != 0 ||
        (rc = status_str(status, "clientCertificateData", &cert, err)) != 0 ||
        (rc = status_str(status, "clientKeyData", &key, err)) != 0)
        goto out;
    if (*token == '\0' && *cert == '\0' && *key == '\0') {
        rc = bad(err, EBB_ESCHEMA, "status",
                 "holds neither a token nor clientCertificateData and clientKeyData");
        goto out;
    }
    if ((*cert == '\0') != (*key == '\0')) {
        rc = bad(err, EBB_ESCHEMA, *cert ? "status.clientKeyData" : "status.clientCertificateData",
                 *cert ? "required with clientCertificateData" : "required with clientKeyData");
        goto out;
    }
    if (*token != '\0' && !ebb_kube_token_ok(token, strlen(token))) {
        rc = ebb_error_set(err, EBB_ESCHEMA, NULL, 0, "status.token",
                           "not a bearer token: at most %d characters of visible ASCII (no "
                           "space, newline or NUL)", EBB_KUBE_TOKEN_MAX);
        goto out;
    }
    exp = cJSON_GetObjectItemCaseSensitive(status, "expirationTimestamp");
    if (exp != NULL && !cJSON_IsNull(exp)) {
        if (!cJSON_IsString(exp) || ebb_time_parse(exp->valuestring, &out->expires) != 0) {
            rc = bad(err, EBB_ESCHEMA, "status.expirationTimestamp",
                     "not an RFC 3339 time (\"2026-01-02T03:04:05Z\")");
            out->expires = EBB_TIME_NONE;
            goto out;
        }
    }
    if ((*token && (out->token = strdup(token)) == NULL) ||
        (*cert && (out->cert_data = strdup(cert)) == NULL) ||
        (*key && (out->key_data = strdup(key)) == NULL)) {
        ebb_kube_cred_clear(out);
        rc = bad(err, EBB_ENOMEM, NULL, "out of memory");
        goto out;
    }
    rc = 0;
out:
    cJSON_Delete(j);
    return rc;
}

/* ---- the run ----------------------------------------------------------------- */

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ebb's environment, less what the plugin's env and KUBERNETES_EXEC_INFO
 * set (the later entry wins, as Go's exec.Cmd dedups), then those. */
static char **plugin_env(const struct ebb_kube_exec *x, char **info)
{
    size_t n = 0, m = 0, k = 0;
    char **env;

    for (; environ[n] != NULL; n++)
        ;
    for (; x->env != NULL && x->env[m] != NULL; m++)
        ;
    if (asprintf(info, "KUBERNETES_EXEC_INFO=%s", x->exec_info ? x->exec_info : "") < 0 ||
        (env = calloc(n + m + 2, sizeof(*env))) == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(environ[i], "=");
        bool over = strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21) == 0;

        for (size_t e = 0; e < m && !over; e++)
            over = strncmp(environ[i], x->env[e], len + 1) == 0;
        if (!over)
            env[k++] = environ[i];
    }
    for (size_t e = 0; e < m; e++)
        env[k++] = x->env[e];
    env[k++] = *info;
    env[k] = NULL;
    return env;
}

/* Wait for pid until the deadline, then kill it. Its exit status, or -1
 * when it was killed here. */
static int reap(pid_t pid, int64_t deadline)
{
    int st;

    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);

        if (w == pid)
            return st;
        if (w < 0 && errno != EINTR)
            return -1;
        if (mono_ms() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
    }
}

int ebb_kube_exec_run(const struct ebb_kube_exec *x, struct ebb_kube_cred *out,
                      struct ebb_error *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, dfl;
    char **env = NULL, *info = NULL, *buf = NULL;
    const char *cmd;
    size_t len = 0;
    int fds[2] = { -1, -1 }, rc, st;
    bool fa_init = false, attr_init = false, too_big = false, timed_out = false;
    int64_t deadline;
    pid_t pid = -1;

    if (x == NULL || x->argv == NULL || x->argv[0] == NULL || out == NULL || err == NULL)
        return EBB_EINVAL;
    cmd = x->argv[0];
    if ((env = plugin_env(x, &info)) == NULL ||
        (buf = malloc(EBB_KUBE_EXEC_OUT_MAX + 1)) == NULL) {
        rc = ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
        goto out;
    }
    if (pipe2(fds, O_CLOEXEC) != 0 || posix_spawn_file_actions_init(&fa) != 0) {
        rc = ebb_error_set(err, EBB_EIO, NULL, 0, x->where, "exec plugin %s: %s", cmd, strerror(errno));
        goto out;
    }
    fa_init = true;
    /* never interactive: no stdin; stderr is ebb's, as client-go passes it on */
    if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1) != 0) {
        rc = ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
        goto out;
    }
    /* ebb ignores SIGPIPE (run, serve): the plugin gets the default back,
     * and no blocked signal, as a program started from a shell has */
    if (posix_spawnattr_init(&attr) != 0) {
        rc = ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
        goto out;
    }
    attr_init = true;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    if (posix_spawnattr_setsigmask(&attr, &none) != 0 || posix_spawnattr_setsigdefault(&attr, &dfl) != 0 ||
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) != 0) {
        rc = ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
        goto out;
    }
    /* no shell: argv goes to the program as it is */
    rc = strchr(cmd, '/') ? posix_spawn(&pid, cmd, &fa, &attr, x->argv, env)
                          : posix_spawnp(&pid, cmd, &fa, &attr, x->argv, env);
    if (rc != 0) {
        pid = -1;
        rc = ebb_error_set(err, EBB_EIO, NULL, 0, x->where, "exec plugin %s: %s%s%s", cmd,
                           strerror(rc), x->install_hint ? "\n" : "",
                           x->install_hint ? x->install_hint : "");
        goto out;
    }
    close(fds[1]);
    fds[1] = -1;
    deadline = mono_ms() + EBB_KUBE_EXEC_TIMEOUT_MS;
    for (;;) {
        struct pollfd p = { .fd = fds[0], .events = POLLIN };
        int64_t left = deadline - mono_ms();
        ssize_t n;

        if (left <= 0) {
            timed_out = true;
            break;
        }
        if (poll(&p, 1, (int)left) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p.revents == 0)
            continue;
        n = read(fds[0], buf + len, EBB_KUBE_EXEC_OUT_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len > EBB_KUBE_EXEC_OUT_MAX) {
            too_big = true;
            break;
        }
    }
    if (timed_out || too_big)
        kill(pid, SIGKILL);
    st = reap(pid, timed_out || too_big ? 0 : deadline);
    pid = -1;
    if (timed_out || (st == -1 && !too_big)) {
        rc = ebb_error_set(err, EBB_EIO, NULL, 0, x->where,
                           "exec plugin %s did not finish within %d s; killed", cmd,
                           EBB_KUBE_EXEC_TIMEOUT_MS / 1000);
        goto out;
    }
    if (too_big) {
        rc = ebb_error_set(err, EBB_EIO, NULL, 0, x->where,
                           "exec plugin %s printed more than %zu bytes; killed", cmd,
                           EBB_KUBE_EXEC_OUT_MAX);
        goto out;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && len == 0 && x->install_hint != NULL) {
        rc = ebb_error_set(err, EBB_EIO, NULL, 0, x->where, "exec plugin %s exited with status 127\n%s",
                           cmd, x->install_hint);
        goto out;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rc = ebb_error_set(err, EBB_EIO, NULL, 0, x->where, "exec plugin %s %s %d", cmd,
                           WIFEXITED(st) ? "exited with status" : "was killed by signal",
                           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        goto out;
    }
    buf[len] = '\0';
    if ((rc = ebb_kube_exec_parse(x->api_version, buf, len, out, err)) != 0) {
        /* the field is the answer's: say whose answer it was */
        char field[sizeof(err->field)], msg[sizeof(err->msg)];
        snprintf(field, sizeof(field), "%s", err->field);
        snprintf(msg, sizeof(msg), "%s", err->msg);
        ebb_error_set(err, rc, NULL, 0, x->where, "exec plugin %.200s answered wrong: %s%s%.400s", cmd,
                      field, field[0] ? ": " : "", msg);
    }
out:
    if (pid > 0) {
        kill(pid, SIGKILL);
        reap(pid, 0);
    }
    if (fa_init)
        posix_spawn_file_actions_destroy(&fa);
    if (attr_init)
        posix_spawnattr_destroy(&attr);
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    free(buf);
    free(env);
    free(info);
    return rc;
}
