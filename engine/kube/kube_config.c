/* Where the API server is and how to authenticate: a kubeconfig file (read
 * with val.c so every error names the file, line and field) or the
 * in-cluster service account. Called once at startup, from main. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/argdec.h"
#include "ebb/kube.h"
#include "ebb/val.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

void ebb_kube_config_free(struct ebb_kube_config *c)
{
    if (c == NULL)
        return;
    free(c->server);
    free(c->token);
    free(c->token_file);
    free(c->ca_file);
    free(c->ca_data);
    free(c->cert_file);
    free(c->key_file);
    free(c->cert_data);
    free(c->key_data);
    free(c->namespace);
    free(c->source);
    ebb_kube_exec_free(c->exec);
    free(c);
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}


/* ---- kubeconfig ----------------------------------------------------------- */

struct kc {
    const char *file;
    char *dir;                   /* the kubeconfig's directory, for relative paths */
    struct ebb_val *root;
    struct ebb_error *err;
    struct ebb_kube_config *c;
};

static int schema(struct kc *kc, int code, int line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int schema(struct kc *kc, int code, int line, const char *field, const char *fmt, ...)
{
    char msg[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ebb_error_set(kc->err, code, kc->file, line, field, "%s", msg);
}

/* A string field of `map` (absent: *out = NULL). `prefix` names the map.
 * The tree is read through engine/core/argdec.c. */
static int get_str(struct kc *kc, const struct ebb_val *map, const char *prefix, const char *key,
                   const struct ebb_val **out)
{
    const char *s;
    bool present;
    int rc = ebb__args_str(map, key, prefix, &s, &present, kc->err);

    *out = rc == 0 && present ? ebb__val_at(map, key) : NULL;
    /* a C string would cut the value at a NUL: a server, a path or a token
     * that is not what the file says */
    if (*out != NULL && strlen((*out)->u.str.s) != (*out)->u.str.len) {
        char field[128];
        ebb__args_join(field, sizeof(field), prefix, key);
        rc = schema(kc, EBB_ESCHEMA, (*out)->line, field, "holds a NUL character");
        *out = NULL;
        return rc;
    }
    return ebb__args_in_file(rc, kc->file, kc->err);
}

/* clusters/contexts/users: a list of {name: N, <inner>: {...}}. On success
 * *item is the inner map (NULL when the entry has no such map) and *idx
 * its index; a missing name is EBB_ESCHEMA at `ref_line`/`ref_field`. */
static int find_named(struct kc *kc, const char *list, const char *inner, const char *name,
                      int ref_line, const char *ref_field, const struct ebb_val **item,
                      size_t *idx, int *line)
{
    const struct ebb_val *seq = ebb_val_get(kc->root, list);
    char field[256];

    if (seq != NULL && seq->type != EBB_VAL_SEQ && seq->type != EBB_VAL_NULL)
        return ebb__args_in_file(ebb__args_type_error(seq, list, "a list", kc->err), kc->file, kc->err);
    for (size_t i = 0; seq != NULL && seq->type == EBB_VAL_SEQ && i < seq->u.seq.n; i++) {
        const struct ebb_val *e = seq->u.seq.items[i], *n, *in;

        if (e->type != EBB_VAL_MAP)
            return ebb__args_in_file(ebb__args_type_error(e, ebb__args_index(field, sizeof(field), list, i),
                                                          "a map", kc->err),
                                     kc->file, kc->err);
        n = ebb_val_get(e, "name");
        if (n == NULL || n->type != EBB_VAL_STRING || strcmp(n->u.str.s, name) != 0)
            continue;
        in = ebb_val_get(e, inner);
        if (in != NULL && in->type != EBB_VAL_MAP && in->type != EBB_VAL_NULL) {
            char at[256];
            ebb__args_join(field, sizeof(field), ebb__args_index(at, sizeof(at), list, i), inner);
            return ebb__args_in_file(ebb__args_type_error(in, field, "a map", kc->err), kc->file,
                                     kc->err);
        }
        *item = in != NULL && in->type == EBB_VAL_MAP ? in : NULL;
        *idx = i;
        *line = e->line;
        return 0;
    }
    return schema(kc, EBB_ESCHEMA, ref_line, ref_field, "%s \"%s\" not found in %s", inner,
                  name, list);
}

/* A path from the kubeconfig, resolved against its directory, that must be
 * readable now. */
static int take_path(struct kc *kc, const struct ebb_val *v, const char *field, char **out)
{
    const char *p = v->u.str.s;
    char *path;

    if (*p == '\0')
        return 0;
    path = p[0] == '/' ? strdup(p) : xasprintf("%s/%s", kc->dir, p);
    if (path == NULL)
        return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
    if (access(path, R_OK) != 0) {
        int rc = schema(kc, EBB_EIO, v->line, field, "cannot read %s: %s", path,
                        strerror(errno));
        free(path);
        return rc;
    }
    free(*out);
    *out = path;
    return 0;
}

static int take_b64(struct kc *kc, const struct ebb_val *v, const char *field, char **out)
{
    char *dec;
    int rc = ebb_base64_decode(v->u.str.s, v->u.str.len, &dec);

    if (rc == EBB_ENOMEM)
        return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
    if (rc != 0)
        return schema(kc, EBB_ESCHEMA, v->line, field, "not valid base64");
    free(*out);
    *out = dec;
    return 0;
}

static int load_cluster(struct kc *kc, const struct ebb_val *cl, size_t idx, int line)
{
    const struct ebb_val *server, *ca, *cad;
    char prefix[64], field[128];
    const char *s;
    size_t n;
    int rc;

    snprintf(prefix, sizeof(prefix), "clusters[%zu].cluster", idx);
    if ((rc = get_str(kc, cl, prefix, "server", &server)) != 0 ||
        (rc = get_str(kc, cl, prefix, "certificate-authority", &ca)) != 0 ||
        (rc = get_str(kc, cl, prefix, "certificate-authority-data", &cad)) != 0)
        return rc;
    if (server == NULL || server->u.str.len == 0) {
        ebb__args_join(field, sizeof(field), prefix, "server");
        return schema(kc, EBB_ESCHEMA, cl ? cl->line : line, field, "required");
    }
    s = server->u.str.s;
    n = strlen(s);
    while (n > 0 && s[n - 1] == '/')
        n--;   /* request paths start with '/' */
    kc->c->server = strstr(s, "://") ? strndup(s, n) : xasprintf("https://%.*s", (int)n, s);
    if (kc->c->server == NULL)
        return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
    /* the -data form overrides the file, as in client-go */
    if (cad != NULL) {
        ebb__args_join(field, sizeof(field), prefix, "certificate-authority-data");
        if ((rc = take_b64(kc, cad, field, &kc->c->ca_data)) != 0)
            return rc;
    } else if (ca != NULL) {
        ebb__args_join(field, sizeof(field), prefix, "certificate-authority");
        if ((rc = take_path(kc, ca, field, &kc->c->ca_file)) != 0)
            return rc;
    }
    if ((rc = ebb__args_in_file(ebb__args_bool(cl, "insecure-skip-tls-verify", prefix,
                                               &kc->c->insecure, NULL, kc->err),
                                kc->file, kc->err)) != 0)
        return rc;
    return ebb__args_in_file(ebb__args_bool(cl, "disable-compression", prefix, &kc->c->no_gzip, NULL,
                                            kc->err),
                             kc->file, kc->err);
}

#define EXEC_GROUP "client.authentication.k8s.io/"

static char *b64(const char *in, size_t len)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

    for (size_t i = 0; out != NULL && i < len; i += 3) {
        unsigned v = (unsigned char)in[i] << 16 | (i + 1 < len ? (unsigned char)in[i + 1] << 8 : 0) |
                     (i + 2 < len ? (unsigned char)in[i + 2] : 0);
        *o++ = a[v >> 18 & 63];
        *o++ = a[v >> 12 & 63];
        *o++ = i + 1 < len ? a[v >> 6 & 63] : '=';
        *o++ = i + 2 < len ? a[v & 63] : '=';
    }
    if (out != NULL)
        *o = '\0';
    return out;
}

/* KUBERNETES_EXEC_INFO as client-go sets it: an ExecCredential whose spec
 * says ebb is not interactive and, with provideClusterInfo, carries the
 * cluster (server, certificate-authority-data as base64 of the PEM, read
 * from the file when the kubeconfig names one, insecure-skip-tls-verify,
 * disable-compression). */
static int exec_info(struct kc *kc, struct ebb_kube_exec *e, bool with_cluster)
{
    cJSON *j = cJSON_CreateObject(), *spec, *cl;
    char *ca = NULL, *ca64 = NULL;
    size_t calen = 0;
    int rc = 0;

    if (j == NULL || !cJSON_AddStringToObject(j, "kind", "ExecCredential") ||
        !cJSON_AddStringToObject(j, "apiVersion", e->api_version) ||
        (spec = cJSON_AddObjectToObject(j, "spec")) == NULL ||
        !cJSON_AddBoolToObject(spec, "interactive", false))
        goto oom;
    if (with_cluster) {
        if (kc->c->ca_data != NULL) {
            calen = strlen(kc->c->ca_data);
            if ((ca = strdup(kc->c->ca_data)) == NULL)
                goto oom;
        } else if (kc->c->ca_file != NULL &&
                   (rc = ebb_file_read(kc->c->ca_file, EBB_MAX_YAML, &ca, &calen, kc->err)) != 0) {
            goto out;
        }
        if ((cl = cJSON_AddObjectToObject(spec, "cluster")) == NULL ||
            !cJSON_AddStringToObject(cl, "server", kc->c->server) ||
            (ca != NULL && ((ca64 = b64(ca, calen)) == NULL ||
                            !cJSON_AddStringToObject(cl, "certificate-authority-data", ca64))) ||
            (kc->c->insecure && !cJSON_AddBoolToObject(cl, "insecure-skip-tls-verify", true)) ||
            (kc->c->no_gzip && !cJSON_AddBoolToObject(cl, "disable-compression", true)))
            goto oom;
    }
    if ((e->exec_info = cJSON_PrintUnformatted(j)) == NULL)
        goto oom;
    goto out;
oom:
    rc = schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
out:
    cJSON_Delete(j);
    free(ca);
    free(ca64);
    return rc;
}

/* users[N].user.exec -> kc->c->exec. Read as client-go reads it
 * (clientcmd's ExecConfig and its validation): apiVersion v1 or v1beta1;
 * command required, resolved against the kubeconfig's directory when it
 * holds a '/'; args a list of strings; env a list of {name, value};
 * interactiveMode required with v1, and "Always" refused: ebb never has a
 * terminal to ask on. The cluster's KUBERNETES_EXEC_INFO is built here,
 * once: load_cluster ran first. */
static int load_exec(struct kc *kc, const struct ebb_val *u, const char *uprefix)
{
    static const char *const modes[] = {"Never", "IfAvailable", "Always"};
    const struct ebb_val *x, *av, *cmd, *args, *env, *hint, *mode;
    struct ebb_kube_exec *e;
    char prefix[96], field[160];
    bool info = false;
    int rc;

    ebb__args_join(prefix, sizeof(prefix), uprefix, "exec");
    if ((rc = ebb__args_in_file(ebb__args_map(u, "exec", uprefix, &x, kc->err), kc->file, kc->err)) != 0)
        return rc;
    if (x == NULL)
        return schema(kc, EBB_ESCHEMA, ebb_val_key_line(u, "exec"), prefix, "must be a map");
    if ((e = kc->c->exec = calloc(1, sizeof(*e))) == NULL)
        return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
    if ((rc = get_str(kc, x, prefix, "apiVersion", &av)) != 0 ||
        (rc = get_str(kc, x, prefix, "command", &cmd)) != 0 ||
        (rc = get_str(kc, x, prefix, "installHint", &hint)) != 0 ||
        (rc = get_str(kc, x, prefix, "interactiveMode", &mode)) != 0 ||
        (rc = ebb__args_in_file(ebb__args_strs(x, "args", prefix, &args, kc->err), kc->file, kc->err)) != 0 ||
        (rc = ebb__args_in_file(ebb__args_bool(x, "provideClusterInfo", prefix, &info, NULL, kc->err),
                                kc->file, kc->err)) != 0)
        return rc;
    if (av == NULL || av->u.str.len == 0) {
        ebb__args_join(field, sizeof(field), prefix, "apiVersion");
        return schema(kc, EBB_ESCHEMA, x->line, field, "required (" EXEC_GROUP "v1 or " EXEC_GROUP "v1beta1)");
    }
    if (strcmp(av->u.str.s, EXEC_GROUP "v1") != 0 && strcmp(av->u.str.s, EXEC_GROUP "v1beta1") != 0) {
        ebb__args_join(field, sizeof(field), prefix, "apiVersion");
        return schema(kc, EBB_ESCHEMA, av->line, field,
                      "\"%.100s\" is not " EXEC_GROUP "v1 or " EXEC_GROUP "v1beta1%s", av->u.str.s,
                      strcmp(av->u.str.s, EXEC_GROUP "v1alpha1") == 0
                          ? " (v1alpha1 was removed in Kubernetes 1.24)" : "");
    }
    if (cmd == NULL || cmd->u.str.len == 0) {
        ebb__args_join(field, sizeof(field), prefix, "command");
        return schema(kc, EBB_ESCHEMA, x->line, field, "required");
    }
    ebb__args_join(field, sizeof(field), prefix, "interactiveMode");
    if (mode == NULL && strcmp(av->u.str.s, EXEC_GROUP "v1") == 0)
        return schema(kc, EBB_ESCHEMA, x->line, field, "required with " EXEC_GROUP "v1 (Never or IfAvailable)");
    if (mode != NULL) {
        size_t i = 0;

        while (i < EBB_ARRAY_LEN(modes) && strcmp(mode->u.str.s, modes[i]) != 0)
            i++;
        if (i == EBB_ARRAY_LEN(modes))
            return schema(kc, EBB_ESCHEMA, mode->line, field,
                          "\"%.100s\" is not Never, IfAvailable or Always", mode->u.str.s);
        if (i == 2)
            return schema(kc, EBB_ESCHEMA, mode->line, field,
                          "Always needs a terminal to ask on; ebb runs without one: use Never or IfAvailable");
    }
    {
        size_t nargs = args != NULL ? args->u.seq.n : 0;

        if ((e->argv = calloc(nargs + 2, sizeof(*e->argv))) == NULL)
            return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
        /* client-go resolves a command with a path separator against the
         * kubeconfig's directory, and leaves a bare name to $PATH */
        e->argv[0] = strchr(cmd->u.str.s, '/') == NULL || cmd->u.str.s[0] == '/'
                         ? strdup(cmd->u.str.s) : xasprintf("%s/%s", kc->dir, cmd->u.str.s);
        for (size_t i = 0; e->argv[0] != NULL && i < nargs; i++) {
            const struct ebb_val *a = args->u.seq.items[i];

            if (strlen(a->u.str.s) != a->u.str.len) {
                char at[160];
                ebb__args_join(at, sizeof(at), prefix, "args");
                return schema(kc, EBB_ESCHEMA, a->line, ebb__args_index(field, sizeof(field), at, i),
                              "holds a NUL character");
            }
            if ((e->argv[i + 1] = strdup(a->u.str.s)) == NULL)
                return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
        }
        if (e->argv[0] == NULL)
            return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
    }
    env = ebb_val_get(x, "env");
    ebb__args_join(field, sizeof(field), prefix, "env");
    if (env != NULL && env->type != EBB_VAL_SEQ && env->type != EBB_VAL_NULL)
        return ebb__args_in_file(ebb__args_type_error(env, field, "a list of {name, value}", kc->err),
                                 kc->file, kc->err);
    {
        size_t n = env != NULL && env->type == EBB_VAL_SEQ ? env->u.seq.n : 0;
        char at[192];

        if ((e->env = calloc(n + 1, sizeof(*e->env))) == NULL)
            return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
        for (size_t i = 0; i < n; i++) {
            const struct ebb_val *item = env->u.seq.items[i], *name, *value;

            ebb__args_index(at, sizeof(at), field, i);
            if (item->type != EBB_VAL_MAP)
                return ebb__args_in_file(ebb__args_type_error(item, at, "a map {name, value}", kc->err),
                                         kc->file, kc->err);
            if ((rc = get_str(kc, item, at, "name", &name)) != 0 ||
                (rc = get_str(kc, item, at, "value", &value)) != 0)
                return rc;
            if (name == NULL || name->u.str.len == 0 || strchr(name->u.str.s, '=') != NULL) {
                char nf[224];
                ebb__args_join(nf, sizeof(nf), at, "name");
                return schema(kc, EBB_ESCHEMA, name ? name->line : item->line, nf,
                              name == NULL || name->u.str.len == 0 ? "required"
                                                                   : "an environment variable's name holds no '='");
            }
            if ((e->env[i] = xasprintf("%s=%s", name->u.str.s, value ? value->u.str.s : "")) == NULL)
                return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
        }
    }
    if ((e->api_version = strdup(av->u.str.s)) == NULL ||
        (hint != NULL && hint->u.str.len > 0 && (e->install_hint = strdup(hint->u.str.s)) == NULL) ||
        (e->where = xasprintf("%s: %s", kc->file, prefix)) == NULL)
        return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
    return exec_info(kc, e, info);
}

static int load_user(struct kc *kc, const struct ebb_val *u, size_t idx)
{
    static const struct { const char *key, *what; } refused[] = {
        {"auth-provider", "auth-provider plugins are"},
        {"username", "basic authentication (username/password) is"},
        {"password", "basic authentication (username/password) is"},
    };
    const struct ebb_val *tok, *tokf, *cert, *certd, *key, *keyd;
    char prefix[64], field[128];
    int rc;

    if (u == NULL)
        return 0;
    snprintf(prefix, sizeof(prefix), "users[%zu].user", idx);
    for (size_t i = 0; i < EBB_ARRAY_LEN(refused); i++) {
        int line = ebb_val_key_line(u, refused[i].key);

        if (line > 0) {
            ebb__args_join(field, sizeof(field), prefix, refused[i].key);
            return schema(kc, EBB_ESCHEMA, line, field,
                          "%s not supported; use token, tokenFile, a client certificate or "
                          "an exec credential plugin",
                          refused[i].what);
        }
    }
    if (ebb_val_key_line(u, "exec") > 0 && (rc = load_exec(kc, u, prefix)) != 0)
        return rc;
    if ((rc = get_str(kc, u, prefix, "token", &tok)) != 0 ||
        (rc = get_str(kc, u, prefix, "tokenFile", &tokf)) != 0 ||
        (rc = get_str(kc, u, prefix, "client-certificate", &cert)) != 0 ||
        (rc = get_str(kc, u, prefix, "client-certificate-data", &certd)) != 0 ||
        (rc = get_str(kc, u, prefix, "client-key", &key)) != 0 ||
        (rc = get_str(kc, u, prefix, "client-key-data", &keyd)) != 0)
        return rc;
    /* "If both Token and TokenFile are present, Token takes precedence." */
    if (tok != NULL && tok->u.str.len > 0) {
        if (!ebb_kube_token_ok(tok->u.str.s, tok->u.str.len)) {
            ebb__args_join(field, sizeof(field), prefix, "token");
            return schema(kc, EBB_ESCHEMA, tok->line, field,
                          "not a bearer token: at most %d characters of visible ASCII (no "
                          "space, newline or NUL)", EBB_KUBE_TOKEN_MAX);
        }
        if ((kc->c->token = strdup(tok->u.str.s)) == NULL)
            return schema(kc, EBB_ENOMEM, 0, NULL, "out of memory");
    } else if (tokf != NULL) {
        ebb__args_join(field, sizeof(field), prefix, "tokenFile");
        if ((rc = take_path(kc, tokf, field, &kc->c->token_file)) != 0)
            return rc;
    }
    snprintf(field, sizeof(field), "%s.client-certificate%s", prefix, certd ? "-data" : "");
    if ((certd && (rc = take_b64(kc, certd, field, &kc->c->cert_data)) != 0) ||
        (!certd && cert && (rc = take_path(kc, cert, field, &kc->c->cert_file)) != 0))
        return rc;
    snprintf(field, sizeof(field), "%s.client-key%s", prefix, keyd ? "-data" : "");
    if ((keyd && (rc = take_b64(kc, keyd, field, &kc->c->key_data)) != 0) ||
        (!keyd && key && (rc = take_path(kc, key, field, &kc->c->key_file)) != 0))
        return rc;
    if ((kc->c->cert_file || kc->c->cert_data) != (kc->c->key_file || kc->c->key_data)) {
        bool has_cert = kc->c->cert_file || kc->c->cert_data;
        const struct ebb_val *have = has_cert ? (certd ? certd : cert) : (keyd ? keyd : key);

        ebb__args_join(field, sizeof(field), prefix, has_cert ? "client-key" : "client-certificate");
        return schema(kc, EBB_ESCHEMA, have->line, field, "required with %s",
                      has_cert ? "client-certificate" : "client-key");
    }
    return 0;
}

static int load_file(const char *file, const char *context, struct ebb_kube_config *c,
                     struct ebb_error *err)
{
    struct kc kc = {.file = file, .err = err, .c = c};
    const struct ebb_val *cur, *ctx, *cl, *us, *cluster, *user = NULL, *ns;
    const char *slash = strrchr(file, '/'), *ctxname;
    size_t ci, ui = 0, i;
    char field[128];
    int rc, ref_line, line;

    kc.dir = slash == NULL ? strdup(".") : slash == file ? strdup("/")
                                                           : strndup(file, (size_t)(slash - file));
    if (kc.dir == NULL)
        return ebb_error_set(err, EBB_ENOMEM, file, 0, NULL, "out of memory");
    if ((rc = ebb_val_load(file, &kc.root, err)) != 0)
        goto out;
    if (kc.root->type != EBB_VAL_MAP) {
        rc = schema(&kc, EBB_ESCHEMA, kc.root->line, NULL, "a kubeconfig must be a mapping, not %s",
                    ebb_val_type_name(kc.root->type));
        goto out;
    }
    if ((rc = get_str(&kc, kc.root, "", "current-context", &cur)) != 0)
        goto out;
    if (context != NULL && *context != '\0') {
        ctxname = context;
        ref_line = ebb_val_key_line(kc.root, "contexts");
        snprintf(field, sizeof(field), "contexts");
    } else if (cur != NULL && cur->u.str.len > 0) {
        ctxname = cur->u.str.s;
        ref_line = cur->line;
        snprintf(field, sizeof(field), "current-context");
    } else {
        rc = schema(&kc, EBB_ESCHEMA, 0, "current-context",
                    "not set and no context was given");
        goto out;
    }
    if ((rc = find_named(&kc, "contexts", "context", ctxname, ref_line, field, &ctx, &ci,
                         &line)) != 0)
        goto out;
    snprintf(field, sizeof(field), "contexts[%zu].context", ci);
    if ((rc = get_str(&kc, ctx, field, "cluster", &cl)) != 0 ||
        (rc = get_str(&kc, ctx, field, "user", &us)) != 0 ||
        (rc = get_str(&kc, ctx, field, "namespace", &ns)) != 0)
        goto out;
    if (cl == NULL) {
        snprintf(field, sizeof(field), "contexts[%zu].context.cluster", ci);
        rc = schema(&kc, EBB_ESCHEMA, ctx ? ctx->line : line, field, "required");
        goto out;
    }
    snprintf(field, sizeof(field), "contexts[%zu].context.cluster", ci);
    if ((rc = find_named(&kc, "clusters", "cluster", cl->u.str.s, cl->line, field, &cluster,
                         &i, &line)) != 0 ||
        (rc = load_cluster(&kc, cluster, i, line)) != 0)
        goto out;
    if (us != NULL && us->u.str.len > 0) {
        snprintf(field, sizeof(field), "contexts[%zu].context.user", ci);
        if ((rc = find_named(&kc, "users", "user", us->u.str.s, us->line, field, &user, &ui,
                                &line)) != 0 ||
            (rc = load_user(&kc, user, ui)) != 0)
            goto out;
    }
    c->namespace = strdup(ns != NULL && ns->u.str.len > 0 ? ns->u.str.s : "default");
    c->source = xasprintf("%s (context %s)", file, ctxname);
    if (c->namespace == NULL || c->source == NULL)
        rc = ebb_error_set(err, EBB_ENOMEM, file, 0, NULL, "out of memory");
out:
    ebb_val_free(kc.root);
    free(kc.dir);
    return rc;
}

/* ---- in-cluster ----------------------------------------------------------- */

/* The whole file (a regular file of at most 64 KiB) with trailing
 * whitespace trimmed, or NULL. */
static char *read_trimmed(const char *path)
{
    char *buf;
    size_t len;

    if (ebb_file_read(path, (size_t)64 << 10, &buf, &len, NULL) != 0)
        return NULL;
    while (len > 0 && strchr(" \t\r\n", buf[len - 1]) != NULL)
        len--;
    buf[len] = '\0';
    return buf;
}

static int load_in_cluster(const char *host, struct ebb_kube_config *c, struct ebb_error *err)
{
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    const char *dir = getenv("EBB_SERVICEACCOUNT_DIR");
    char *path = NULL;
    int rc = EBB_ENOMEM;

    if (dir == NULL || *dir == '\0')
        dir = SA_DIR;
    if (port == NULL || *port == '\0')
        return ebb_error_set(err, EBB_ESCHEMA, NULL, 0, "KUBERNETES_SERVICE_PORT",
                             "not set (KUBERNETES_SERVICE_HOST is %s)", host);
    c->server = xasprintf(strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    c->source = strdup("in-cluster");
    c->token_file = xasprintf("%s/token", dir);
    c->ca_file = xasprintf("%s/ca.crt", dir);
    path = xasprintf("%s/namespace", dir);
    if (!c->server || !c->source || !c->token_file || !c->ca_file || !path)
        goto fail;
    if (access(c->token_file, R_OK) != 0) {
        rc = ebb_error_set(err, EBB_EIO, c->token_file, 0, NULL,
                           "cannot read the service account token: %s", strerror(errno));
        goto fail;
    }
    if (access(c->ca_file, R_OK) != 0) {
        rc = ebb_error_set(err, EBB_EIO, c->ca_file, 0, NULL,
                           "cannot read the service account CA: %s", strerror(errno));
        goto fail;
    }
    c->namespace = read_trimmed(path);
    if (c->namespace != NULL && c->namespace[0] == '\0') {
        free(c->namespace);
        c->namespace = NULL;
    }
    if (c->namespace == NULL && (c->namespace = strdup("default")) == NULL)
        goto fail;
    free(path);
    return 0;
fail:
    if (rc == EBB_ENOMEM)
        ebb_error_set(err, rc, NULL, 0, NULL, "out of memory");
    free(path);
    return rc;
}

/* ---- selection ------------------------------------------------------------ */

int ebb_kube_config_load(const char *kubeconfig, const char *context,
                         struct ebb_kube_config **out, struct ebb_error *err)
{
    struct ebb_kube_config *c;
    const char *env = getenv("KUBECONFIG"), *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *home = getenv("HOME");
    char *path = NULL;
    int rc;

    if (out == NULL)
        return EBB_EINVAL;
    ebb_error_clear(err);
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
    if (kubeconfig != NULL && *kubeconfig != '\0') {
        rc = load_file(kubeconfig, context, c, err);
        goto done;
    }
    if (env != NULL && *env != '\0') {
        /* like kubectl, a set $KUBECONFIG replaces ~/.kube/config */
        for (const char *p = env; *p != '\0';) {
            size_t n = strcspn(p, ":");

            if (n > 0) {
                if ((path = strndup(p, n)) == NULL) {
                    rc = ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
                    goto done;
                }
                if (access(path, F_OK) == 0) {
                    rc = load_file(path, context, c, err);
                    goto done;
                }
                free(path);
                path = NULL;
            }
            p += n;
            if (*p == ':')
                p++;
        }
        if (host == NULL || *host == '\0') {
            rc = ebb_error_set(err, EBB_EIO, env, 0, "KUBECONFIG",
                               "none of the files in $KUBECONFIG exists");
            goto done;
        }
    }
    if (host != NULL && *host != '\0') {
        rc = load_in_cluster(host, c, err);
        goto done;
    }
    if (home == NULL || *home == '\0') {
        rc = ebb_error_set(err, EBB_EIO, NULL, 0, NULL,
                           "no configuration: give --kubeconfig, set $KUBECONFIG, "
                           "run in a cluster or set $HOME for ~/.kube/config");
        goto done;
    }
    if ((path = xasprintf("%s/.kube/config", home)) == NULL) {
        rc = ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
        goto done;
    }
    if (access(path, F_OK) != 0) {
        rc = ebb_error_set(err, EBB_EIO, path, 0, NULL,
                           "cannot open: %s (and no --kubeconfig, $KUBECONFIG or in-cluster "
                           "service account)", strerror(errno));
        goto done;
    }
    rc = load_file(path, context, c, err);
done:
    free(path);
    if (rc != 0) {
        ebb_kube_config_free(c);
        return rc;
    }
    *out = c;
    return 0;
}
