/* `ebb test`'s test files: a map of defaults and `cases`, each a snapshot,
 * a plugin with args (or a policy file) and the plan it expects; see
 * ebb/testrun.h and docs/ebb-test.md. Read with the val unit and strict
 * (an unknown key is an error listing the known ones), so every error names
 * the file, line and field. Whether the snapshots and policies a file names
 * exist is the run's business (testrun.c), not the parser's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/testrun_int.h"
#include "core/argdec.h"

#define MAX_CYCLES 1000

struct pctx {
    const char *file;
    struct ebb_error *err;
};

static int perr(struct pctx *c, int line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int perr(struct pctx *c, int line, const char *field, const char *fmt, ...)
{
    char msg[700];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ebb_error_set(c->err, EBB_ESCHEMA, c->file, line, field, "%s", msg);
}

/* An ebb test file is strict: an unknown key is an error listing the known
 * ones. */
static int check_keys(struct pctx *c, const struct ebb_val *map, const char *base,
                      const char *const *known)
{
    size_t i = ebb__args_unknown(map, known, 0), n = 0;
    char list[400] = "";

    if (i >= map->u.map.n)
        return 0;
    for (const char *const *kn = known; *kn; kn++)
        n += (size_t)snprintf(list + n, n < sizeof(list) ? sizeof(list) - n : 0, "%s%s",
                              kn == known ? "" : ", ", *kn);
    return perr(c, map->u.map.key_lines[i], base, "unknown key \"%s\" (expected one of: %s)",
                map->u.map.keys[i], list);
}

/* A value that is set (absent and null are the same), and its key's line. */
static const struct ebb_val *member(const struct ebb_val *map, const char *key, int *line)
{
    *line = ebb_val_key_line(map, key);
    return ebb__val_at(map, key);
}

static int get_str(struct pctx *c, const struct ebb_val *map, const char *key, const char *base,
                   bool required, const char **out, int *line)
{
    char f[160];
    int l;
    const struct ebb_val *v = member(map, key, &l);

    ebb__args_join(f, sizeof(f), base, key);
    if (line)
        *line = l;
    *out = NULL;
    if (v == NULL) {
        if (required)
            return perr(c, map->line, f, "missing (a string is required)");
        return 0;
    }
    if (v->type != EBB_VAL_STRING || v->u.str.s[0] == '\0')
        return perr(c, v->line, f, "expected a non-empty string, got %s",
                    v->type == EBB_VAL_STRING ? "\"\"" : ebb__val_a(v));
    *out = v->u.str.s;
    return 0;
}

static int get_cycle(struct pctx *c, const struct ebb_val *map, const char *base, int *out)
{
    char f[160];
    int l;
    const struct ebb_val *v = member(map, "cycle", &l);

    *out = 0;
    if (v == NULL)
        return 0;
    ebb__args_join(f, sizeof(f), base, "cycle");
    if (v->type != EBB_VAL_INT || v->u.i < 1 || v->u.i > MAX_CYCLES)
        return perr(c, v->line, f, "expected a cycle number from 1 to %d", MAX_CYCLES);
    *out = (int)v->u.i;
    return 0;
}

static bool valid_pod_key(const char *s)
{
    const char *slash = strchr(s, '/');
    return slash != NULL && slash != s && slash[1] != '\0' && strchr(slash + 1, '/') == NULL;
}

static int check_pod(struct pctx *c, const char *pod, int line, const char *field)
{
    if (!valid_pod_key(pod))
        return perr(c, line, field, "\"%s\" is not a pod: write namespace/name", pod);
    return 0;
}

/* The settings a case can give, or the file give as defaults. */
const struct ebb__tr_setting_def ebb__tr_settings[S_MAX] = {
    [S_SNAPSHOT] = { "snapshot", EBB_VAL_STRING, false },
    [S_POLICY] = { "policy", EBB_VAL_STRING, false },
    [S_PLUGIN] = { "plugin", EBB_VAL_STRING, true },
    [S_ARGS] = { "args", EBB_VAL_MAP, true },
    [S_EVICTOR] = { "evictor", EBB_VAL_MAP, true },
    [S_LIMITS] = { "limits", EBB_VAL_MAP, true },
    [S_NODE_SELECTOR] = { "nodeSelector", EBB_VAL_STRING, true },
    [S_NOW] = { "now", EBB_VAL_STRING, false },
    [S_CYCLES] = { "cycles", EBB_VAL_INT, false },
};

static const char *const limit_keys[] = {
    "maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal", NULL,
};

/* Read the settings of `map` (the file's top level or a case) into s[]. */
static int read_settings(struct pctx *c, const struct ebb_val *map, const char *base,
                         struct ebb_test_setting *s)
{
    for (int i = 0; i < S_MAX; i++) {
        int line;
        const struct ebb_val *v = member(map, ebb__tr_settings[i].key, &line);
        char f[sizeof(s[i].field)];

        ebb__args_join(f, sizeof(f), base, ebb__tr_settings[i].key);
        memset(&s[i], 0, sizeof(s[i]));
        if (v == NULL)
            continue;
        if (v->type != ebb__tr_settings[i].type)
            return perr(c, v->line, f, "expected %s, got %s",
                        ebb__tr_settings[i].type == EBB_VAL_STRING ? "a string"
                        : ebb__tr_settings[i].type == EBB_VAL_MAP  ? "a map"
                                                                   : "an integer",
                        ebb__val_a(v));
        if (v->type == EBB_VAL_STRING && v->u.str.s[0] == '\0')
            return perr(c, v->line, f, "must not be empty");
        s[i].v = v;
        s[i].line = line;
        snprintf(s[i].field, sizeof(s[i].field), "%s", f);
    }
    if (s[S_LIMITS].v) {
        int rc = check_keys(c, s[S_LIMITS].v, s[S_LIMITS].field, limit_keys);
        if (rc)
            return rc;
    }
    if (s[S_POLICY].v) {
        for (int i = 0; i < S_MAX; i++)
            if (ebb__tr_settings[i].plugin_key && s[i].v)
                return perr(c, s[i].line, s[i].field,
                            "`policy` and `%s` exclude each other: the policy file names its "
                            "plugins, args and limits",
                            ebb__tr_settings[i].key);
    }
    if (s[S_CYCLES].v && (s[S_CYCLES].v->u.i < 1 || s[S_CYCLES].v->u.i > MAX_CYCLES))
        return perr(c, s[S_CYCLES].v->line, s[S_CYCLES].field, "expected 1 to %d, got %lld",
                    MAX_CYCLES, (long long)s[S_CYCLES].v->u.i);
    if (s[S_NOW].v) {
        int64_t t;
        if (ebb_time_parse(s[S_NOW].v->u.str.s, &t) != 0)
            return perr(c, s[S_NOW].v->line, s[S_NOW].field,
                        "\"%s\" is not an RFC 3339 time (e.g. %s)", s[S_NOW].v->u.str.s,
                        EBB_TEST_NOW);
    }
    return 0;
}

static int parse_evictions(struct pctx *c, const struct ebb_val *v, const char *base,
                           struct ebb_test_expect *x)
{
    static const char *const keys[] = { "pod", "node", "reason", "plugin", "cycle", NULL };
    static const char *const forms[] = { "ordered", "unordered", NULL };
    const struct ebb_val *list = v;
    char lbase[160], f[200];
    int rc;

    snprintf(lbase, sizeof(lbase), "%s", base);
    if (v->type == EBB_VAL_MAP) {
        if ((rc = check_keys(c, v, base, forms)) != 0)
            return rc;
        if (v->u.map.n != 1)
            return perr(c, v->line, base, "give either `ordered` or `unordered`, a list of pods");
        x->unordered = strcmp(v->u.map.keys[0], "unordered") == 0;
        list = v->u.map.vals[0];
        ebb__args_join(lbase, sizeof(lbase), base, v->u.map.keys[0]);
        if (list->type == EBB_VAL_NULL)
            return 0;
    }
    if (list->type != EBB_VAL_SEQ)
        return perr(c, list->line, lbase, "expected a list of pods (namespace/name), or "
                                          "{unordered: [...]}; got %s",
                    ebb__val_a(list));
    if (list->u.seq.n && (x->evictions = calloc(list->u.seq.n, sizeof(*x->evictions))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < list->u.seq.n; i++) {
        const struct ebb_val *it = list->u.seq.items[i];
        struct ebb_test_eviction *e = &x->evictions[x->nevictions++];

        ebb__args_index(f, sizeof(f), lbase, i);
        e->line = it->line;
        if (it->type == EBB_VAL_STRING) {
            e->pod = it->u.str.s;
        } else if (it->type == EBB_VAL_MAP) {
            if ((rc = check_keys(c, it, f, keys)) != 0 ||
                (rc = get_str(c, it, "pod", f, true, &e->pod, NULL)) != 0 ||
                (rc = get_str(c, it, "node", f, false, &e->node, NULL)) != 0 ||
                (rc = get_str(c, it, "reason", f, false, &e->reason, NULL)) != 0 ||
                (rc = get_str(c, it, "plugin", f, false, &e->plugin, NULL)) != 0 ||
                (rc = get_cycle(c, it, f, &e->cycle)) != 0)
                return rc;
        } else {
            return perr(c, it->line, f, "expected namespace/name or a map with `pod`, got %s",
                        ebb__val_a(it));
        }
        if ((rc = check_pod(c, e->pod, it->line, f)) != 0)
            return rc;
    }
    return 0;
}

static int parse_refusals(struct pctx *c, const struct ebb_val *list, const char *base,
                          struct ebb_test_expect *x)
{
    static const char *const keys[] = { "pod", "why", "plugin", "cycle", NULL };
    char f[200];
    int rc;

    x->has_refusals = true;
    if (list->type != EBB_VAL_SEQ)
        return perr(c, list->line, base, "expected a list of {pod, why}, got %s", ebb__val_a(list));
    if (list->u.seq.n && (x->refusals = calloc(list->u.seq.n, sizeof(*x->refusals))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < list->u.seq.n; i++) {
        const struct ebb_val *it = list->u.seq.items[i];
        struct ebb_test_refusal *r = &x->refusals[x->nrefusals++];
        int wl = 0;

        ebb__args_index(f, sizeof(f), base, i);
        r->line = it->line;
        if (it->type == EBB_VAL_STRING) {
            r->pod = it->u.str.s;
        } else if (it->type == EBB_VAL_MAP) {
            if ((rc = check_keys(c, it, f, keys)) != 0 ||
                (rc = get_str(c, it, "pod", f, true, &r->pod, NULL)) != 0 ||
                (rc = get_str(c, it, "why", f, false, &r->why, &wl)) != 0 ||
                (rc = get_str(c, it, "plugin", f, false, &r->plugin, NULL)) != 0 ||
                (rc = get_cycle(c, it, f, &r->cycle)) != 0)
                return rc;
        } else {
            return perr(c, it->line, f, "expected namespace/name or a map with `pod` and `why`, "
                                        "got %s", ebb__val_a(it));
        }
        if ((rc = check_pod(c, r->pod, it->line, f)) != 0)
            return rc;
        if (r->why != NULL) {
            char names[300] = "";
            size_t n = 0;
            bool ok = false;
            /* "ok" is an eviction, not a refusal */
            for (int w = EBB_WHY_OK + 1; w < EBB_WHY_MAX; w++) {
                ok = ok || strcmp(r->why, ebb_why_name(w)) == 0;
                n += (size_t)snprintf(names + n, n < sizeof(names) ? sizeof(names) - n : 0, "%s%s",
                                      w == EBB_WHY_OK + 1 ? "" : ", ", ebb_why_name(w));
            }
            if (!ok) {
                char wf[220];
                ebb__args_join(wf, sizeof(wf), f, "why");
                return perr(c, wl, wf, "\"%s\" is not a refusal (expected one of: %s)", r->why,
                            names);
            }
        }
    }
    return 0;
}

static int parse_texts(struct pctx *c, const struct ebb_val *list, const char *base,
                       struct ebb_test_text **out, size_t *n)
{
    char f[200];

    if (list->type != EBB_VAL_SEQ)
        return perr(c, list->line, base, "expected a list of strings, got %s", ebb__val_a(list));
    if (list->u.seq.n && (*out = calloc(list->u.seq.n, sizeof(**out))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < list->u.seq.n; i++) {
        const struct ebb_val *it = list->u.seq.items[i];
        ebb__args_index(f, sizeof(f), base, i);
        if (it->type != EBB_VAL_STRING || it->u.str.s[0] == '\0')
            return perr(c, it->line, f, "expected a non-empty string (a part of the message), "
                                        "got %s",
                        it->type == EBB_VAL_STRING ? "\"\"" : ebb__val_a(it));
        (*out)[*n].text = it->u.str.s;
        (*out)[(*n)++].line = it->line;
    }
    return 0;
}

static int parse_expect(struct pctx *c, const struct ebb_val *v, const char *base,
                        struct ebb_test_expect *x)
{
    static const char *const keys[] = { "evictions", "refusals", "errors", "notes", "invalid", NULL };
    const struct ebb_val *m;
    char f[160];
    int line, rc;

    if (v->type != EBB_VAL_MAP)
        return perr(c, v->line, base, "expected a map, got %s", ebb__val_a(v));
    if ((rc = check_keys(c, v, base, keys)) != 0)
        return rc;
    if ((m = member(v, "evictions", &line)) != NULL) {
        ebb__args_join(f, sizeof(f), base, "evictions");
        if ((rc = parse_evictions(c, m, f, x)) != 0)
            return rc;
    }
    if ((m = member(v, "refusals", &line)) != NULL) {
        ebb__args_join(f, sizeof(f), base, "refusals");
        if ((rc = parse_refusals(c, m, f, x)) != 0)
            return rc;
    }
    if ((m = member(v, "errors", &line)) != NULL) {
        ebb__args_join(f, sizeof(f), base, "errors");
        if ((rc = parse_texts(c, m, f, &x->errors, &x->nerrors)) != 0)
            return rc;
    }
    if ((m = member(v, "notes", &line)) != NULL) {
        x->has_notes = true;
        ebb__args_join(f, sizeof(f), base, "notes");
        if ((rc = parse_texts(c, m, f, &x->notes, &x->nnotes)) != 0)
            return rc;
    }
    if ((rc = get_str(c, v, "invalid", base, false, &x->invalid, &x->invalid_line)) != 0)
        return rc;
    if (x->invalid && (x->nevictions || x->has_refusals || x->nerrors || x->has_notes))
        return perr(c, x->invalid_line, base,
                    "`invalid` expects the policy to be refused, so no cycle runs: it takes no "
                    "evictions, refusals, errors or notes");
    return 0;
}

static int parse_case(struct pctx *c, const struct ebb_val *v, size_t i,
                      const struct ebb_test_setting *defaults, struct ebb_test_case *tc)
{
    static const char *const keys[] = {
        "name", "snapshot", "policy", "plugin", "args", "evictor", "limits", "nodeSelector", "now",
        "cycles", "expect", NULL,
    };
    struct ebb_test_setting own[S_MAX], eff[S_MAX];
    const struct ebb_val *x;
    bool plugin_keys = false, policy_case;
    int line, rc;

    ebb__args_index(tc->path, sizeof(tc->path), "cases", i);
    tc->line = v->line;
    if (v->type != EBB_VAL_MAP)
        return perr(c, v->line, tc->path, "expected a map with `name` and `expect`, got %s",
                    ebb__val_a(v));
    if ((rc = check_keys(c, v, tc->path, keys)) != 0 ||
        (rc = get_str(c, v, "name", tc->path, true, &tc->name, NULL)) != 0 ||
        (rc = read_settings(c, v, tc->path, own)) != 0)
        return rc;
    for (int k = 0; k < S_MAX; k++)
        plugin_keys = plugin_keys || (ebb__tr_settings[k].plugin_key && own[k].v);
    /* The case's own `policy`, or its own plugin settings, win; a default
     * policy applies to a case that sets neither. */
    policy_case = own[S_POLICY].v || (!plugin_keys && defaults[S_POLICY].v);
    for (int k = 0; k < S_MAX; k++) {
        eff[k] = own[k].v ? own[k] : defaults[k];
        if ((policy_case && ebb__tr_settings[k].plugin_key) || (!policy_case && k == S_POLICY))
            memset(&eff[k], 0, sizeof(eff[k]));
    }
    tc->s_snapshot = eff[S_SNAPSHOT];
    tc->s_policy = eff[S_POLICY];
    tc->s_plugin = eff[S_PLUGIN];
    tc->s_args = eff[S_ARGS];
    tc->s_evictor = eff[S_EVICTOR];
    tc->s_limits = eff[S_LIMITS];
    tc->s_node_selector = eff[S_NODE_SELECTOR];
    tc->snapshot = eff[S_SNAPSHOT].v ? eff[S_SNAPSHOT].v->u.str.s : NULL;
    tc->policy = eff[S_POLICY].v ? eff[S_POLICY].v->u.str.s : NULL;
    tc->plugin = eff[S_PLUGIN].v ? eff[S_PLUGIN].v->u.str.s : NULL;
    tc->cycles = eff[S_CYCLES].v ? (int)eff[S_CYCLES].v->u.i : 1;
    if (ebb_time_parse(eff[S_NOW].v ? eff[S_NOW].v->u.str.s : EBB_TEST_NOW, &tc->now) != 0)
        return EBB_EINVAL;   /* checked by read_settings */
    if (tc->plugin && strcmp(tc->plugin, "DefaultEvictor") == 0)
        return perr(c, eff[S_PLUGIN].v->line, eff[S_PLUGIN].field,
                    "DefaultEvictor is the filter of every case: give its args as `evictor`");

    if ((x = member(v, "expect", &line)) != NULL) {
        char f[64];
        ebb__args_join(f, sizeof(f), tc->path, "expect");
        if ((rc = parse_expect(c, x, f, &tc->expect)) != 0)
            return rc;
    }
    if (tc->snapshot == NULL && tc->expect.invalid == NULL)
        return perr(c, v->line, tc->path,
                    "no snapshot: set `snapshot` in the case or at the top of the file");
    for (size_t k = 0; k < tc->expect.nevictions; k++)
        if (tc->expect.evictions[k].cycle > tc->cycles)
            return perr(c, tc->expect.evictions[k].line, tc->path,
                        "an eviction expected in cycle %d, but the case runs %d cycle%s",
                        tc->expect.evictions[k].cycle, tc->cycles, tc->cycles == 1 ? "" : "s");
    for (size_t k = 0; k < tc->expect.nrefusals; k++)
        if (tc->expect.refusals[k].cycle > tc->cycles)
            return perr(c, tc->expect.refusals[k].line, tc->path,
                        "a refusal expected in cycle %d, but the case runs %d cycle%s",
                        tc->expect.refusals[k].cycle, tc->cycles, tc->cycles == 1 ? "" : "s");
    return 0;
}

static void expect_free(struct ebb_test_expect *x)
{
    free(x->evictions);
    free(x->refusals);
    free(x->errors);
    free(x->notes);
}

void ebb_test_file_free(struct ebb_test_file *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->ncases; i++)
        expect_free(&f->cases[i].expect);
    free(f->cases);
    ebb_val_free(f->root);
    free(f->path);
    free(f->dir);
    free(f);
}

static int parse_root(struct pctx *c, struct ebb_test_file *f)
{
    static const char *const keys[] = {
        "snapshot", "policy", "plugin", "args", "evictor", "limits", "nodeSelector", "now",
        "cycles", "cases", NULL,
    };
    struct ebb_test_setting defaults[S_MAX];
    const struct ebb_val *root = f->root, *cases;
    int line, rc;

    if (root->type != EBB_VAL_MAP)
        return perr(c, root->line, NULL, "a test file is a map with `cases` (got %s)", ebb__val_a(root));
    if ((rc = check_keys(c, root, "", keys)) != 0 || (rc = read_settings(c, root, "", defaults)) != 0)
        return rc;
    if ((cases = member(root, "cases", &line)) == NULL)
        return perr(c, root->line, "cases", "missing: a test file needs a list of cases");
    if (cases->type != EBB_VAL_SEQ || cases->u.seq.n == 0)
        return perr(c, cases->line, "cases", "expected a non-empty list of cases, got %s",
                    cases->type == EBB_VAL_SEQ ? "an empty list" : ebb__val_a(cases));
    if ((f->cases = calloc(cases->u.seq.n, sizeof(*f->cases))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < cases->u.seq.n; i++) {
        struct ebb_test_case *tc = &f->cases[f->ncases++];
        if ((rc = parse_case(c, cases->u.seq.items[i], i, defaults, tc)) != 0)
            return rc;
        for (size_t k = 0; k < i; k++)
            if (strcmp(f->cases[k].name, tc->name) == 0)
                return perr(c, ebb_val_key_line(cases->u.seq.items[i], "name"), tc->path,
                            "a second case named \"%s\" (the first is at line %d)", tc->name,
                            f->cases[k].line);
    }
    return 0;
}

static int file_from_root(struct ebb_val *root, const char *path, struct ebb_test_file **out,
                          struct ebb_error *err)
{
    struct ebb_test_file *f = calloc(1, sizeof(*f));
    struct pctx c = { path, err };
    const char *slash = strrchr(path, '/');
    int rc;

    if (f == NULL) {
        ebb_val_free(root);
        return EBB_ENOMEM;
    }
    f->root = root;
    f->path = strdup(path);
    f->dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
    if (f->path == NULL || f->dir == NULL) {
        rc = EBB_ENOMEM;
        goto fail;
    }
    if (f->dir[0] == '\0') {
        free(f->dir);
        if ((f->dir = strdup("/")) == NULL) {
            rc = EBB_ENOMEM;
            goto fail;
        }
    }
    if ((rc = parse_root(&c, f)) != 0)
        goto fail;
    *out = f;
    return 0;
fail:
    if (rc == EBB_ENOMEM)
        ebb_error_set(err, rc, path, 0, NULL, "out of memory");
    ebb_test_file_free(f);
    return rc;
}

int ebb_test_file_parse(const char *buf, size_t len, const char *path, struct ebb_test_file **out,
                        struct ebb_error *err)
{
    struct ebb_val *root;
    int rc;

    if (buf == NULL || path == NULL || out == NULL)
        return EBB_EINVAL;
    ebb_error_clear(err);
    if ((rc = ebb_val_parse(buf, len, path, &root, err)) != 0)
        return rc;
    return file_from_root(root, path, out, err);
}

int ebb_test_file_load(const char *path, struct ebb_test_file **out, struct ebb_error *err)
{
    struct ebb_val *root;
    int rc;

    if (path == NULL || out == NULL)
        return EBB_EINVAL;
    ebb_error_clear(err);
    if ((rc = ebb_val_load(path, &root, err)) != 0)
        return rc;
    return file_from_root(root, path, out, err);
}

