/* `ebb test [DIR]`: strategy fixtures (a snapshot, a plugin with args, the
 * expected plan) run through the real engine; see ebb/testrun.h and
 * docs/ebb-test.md. Test files are read with the val unit, so every error
 * names the file, line and field. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/argdec.h"
#include "ebb/flags.h"
#include "ebb/simulate.h"
#include "ebb/testrun.h"
#include "core/engine.h"
#include "ebb/lua.h"

#define EXIT_FAILED 1
#define EXIT_INPUT 2
#define MAX_CYCLES 1000

/* ---- the report ------------------------------------------------------------ */

static void rprintf(struct ebb_test_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void rprintf(struct ebb_test_report *r, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (r->len + (size_t)n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 512;
        char *t;
        while (cap < r->len + (size_t)n + 1)
            cap *= 2;
        if ((t = realloc(r->text, cap)) == NULL) {
            r->oom = true;
            return;
        }
        r->text = t;
        r->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(r->text + r->len, r->cap - r->len, fmt, ap);
    va_end(ap);
    r->len += (size_t)n;
}

void ebb_test_report_free(struct ebb_test_report *r)
{
    if (r == NULL)
        return;
    free(r->text);
    memset(r, 0, sizeof(*r));
}

/* ---- parsing the test file ------------------------------------------------- */

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
enum { S_SNAPSHOT, S_POLICY, S_PLUGIN, S_ARGS, S_EVICTOR, S_LIMITS, S_NODE_SELECTOR, S_NOW,
       S_CYCLES, S_MAX };

static const struct {
    const char *key;
    int type;               /* the value's type */
    bool plugin_key;        /* describes the one-plugin policy (excludes `policy`) */
} settings[S_MAX] = {
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
        const struct ebb_val *v = member(map, settings[i].key, &line);
        char f[sizeof(s[i].field)];

        ebb__args_join(f, sizeof(f), base, settings[i].key);
        memset(&s[i], 0, sizeof(s[i]));
        if (v == NULL)
            continue;
        if (v->type != settings[i].type)
            return perr(c, v->line, f, "expected %s, got %s",
                        settings[i].type == EBB_VAL_STRING ? "a string"
                        : settings[i].type == EBB_VAL_MAP  ? "a map"
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
            if (settings[i].plugin_key && s[i].v)
                return perr(c, s[i].line, s[i].field,
                            "`policy` and `%s` exclude each other: the policy file names its "
                            "plugins, args and limits",
                            settings[i].key);
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
        plugin_keys = plugin_keys || (settings[k].plugin_key && own[k].v);
    /* The case's own `policy`, or its own plugin settings, win; a default
     * policy applies to a case that sets neither. */
    policy_case = own[S_POLICY].v || (!plugin_keys && defaults[S_POLICY].v);
    for (int k = 0; k < S_MAX; k++) {
        eff[k] = own[k].v ? own[k] : defaults[k];
        if ((policy_case && settings[k].plugin_key) || (!policy_case && k == S_POLICY))
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

/* ---- comparing a plan with the expectations -------------------------------- */

/* A text of the plan or of a test file as the report shows it: escaped for
 * a line (EBB_ESC_LINE), so that a reason, a note or a case's name, whatever
 * a script or a file made it, stays inside its line of the report. Up to
 * TX_SLOTS are live at once: enough for the arguments of one rprintf. */
#define TX_SLOTS 8
#define TX_MAX 2048

static const char *tx(const char *s)
{
    static _Thread_local char ring[TX_SLOTS][TX_MAX];
    static _Thread_local unsigned next;
    char *b;

    if (s == NULL)
        return NULL;
    b = ring[next++ % TX_SLOTS];
    ebb_escape(b, TX_MAX, s, strlen(s), EBB_ESC_LINE);
    return b;
}

static bool opt_eq(const char *want, const char *got)
{
    return want == NULL || (got != NULL && strcmp(want, got) == 0);
}

static bool opt_in(const char *want, const char *got)
{
    return want == NULL || (got != NULL && strstr(got, want) != NULL);
}

static const char *or_dash(const char *s)
{
    return s && s[0] ? s : "-";
}

static void actual_eviction(struct ebb_test_report *r, const char *mark,
                            const struct ebb_plan_eviction *a)
{
    rprintf(r, "%s%s   [%s, %s, cycle %d: %s]\n", mark, tx(a->pod), tx(or_dash(a->node)),
            tx(or_dash(a->plugin)), a->cycle, tx(or_dash(a->reason)));
}

/* The attributes an expected eviction names, against the actual one. */
static int eviction_attrs(struct ebb_test_report *r, const struct ebb_test_eviction *x,
                          const struct ebb_plan_eviction *a)
{
    int n = 0;

    if (!opt_eq(x->node, a->node)) {
        rprintf(r, "          node: expected %s, got %s\n", tx(x->node), tx(or_dash(a->node)));
        n++;
    }
    if (!opt_in(x->reason, a->reason)) {
        rprintf(r, "          reason: expected to contain \"%s\", got \"%s\"\n", tx(x->reason),
                tx(a->reason ? a->reason : ""));
        n++;
    }
    if (!opt_eq(x->plugin, a->plugin)) {
        rprintf(r, "          plugin: expected %s, got %s\n", tx(x->plugin), tx(or_dash(a->plugin)));
        n++;
    }
    if (x->cycle && x->cycle != a->cycle) {
        rprintf(r, "          cycle: expected %d, got %d\n", x->cycle, a->cycle);
        n++;
    }
    return n;
}

static int diff_unordered(const struct ebb_test_expect *x, const struct ebb_plan *p,
                          struct ebb_test_report *r);

/* A line diff needs (expected + 1) x (actual + 1) cells. */
#define LCS_MAX_CELLS (4u << 20)

/* Too long for a line diff: the sets, then the first place the order differs. */
static int diff_long(const struct ebb_test_expect *x, const struct ebb_plan *p,
                     struct ebb_test_report *r)
{
    int n = diff_unordered(x, p, r);

    for (size_t i = 0; n == 0 && i < x->nevictions; i++)
        if (strcmp(x->evictions[i].pod, p->evictions[i].pod) != 0) {
            rprintf(r, "  evictions: the same pods in a different order; the first difference is "
                       "#%zu: expected %s, got %s\n",
                    i + 1, tx(x->evictions[i].pod), tx(p->evictions[i].pod));
            n = 1;
        }
    return n;
}

/* Ordered: a line diff on the pod names (longest common subsequence), then
 * the attributes of the pods on both sides. */
static int diff_ordered(const struct ebb_test_expect *x, const struct ebb_plan *p,
                        struct ebb_test_report *r)
{
    size_t n = x->nevictions, m = p->nevictions, i, j;
    uint32_t *L;
    struct ebb_test_report body = { 0 };
    int mismatches = 0;
    bool moved = false;

    if ((n + 1) * (m + 1) > LCS_MAX_CELLS)
        return diff_long(x, p, r);
    if ((L = calloc((n + 1) * (m + 1), sizeof(*L))) == NULL) {
        r->oom = true;
        return 0;
    }
#define LCS(a, b) L[(a) * (m + 1) + (b)]
    for (i = n; i-- > 0;)
        for (j = m; j-- > 0;)
            LCS(i, j) = strcmp(x->evictions[i].pod, p->evictions[j].pod) == 0
                            ? LCS(i + 1, j + 1) + 1
                            : (LCS(i + 1, j) > LCS(i, j + 1) ? LCS(i + 1, j) : LCS(i, j + 1));
    for (i = 0, j = 0; i < n || j < m;) {
        if (i < n && j < m && strcmp(x->evictions[i].pod, p->evictions[j].pod) == 0) {
            struct ebb_test_report attrs = { 0 };
            int k = eviction_attrs(&attrs, &x->evictions[i], &p->evictions[j]);
            if (k) {
                actual_eviction(&body, "      ", &p->evictions[j]);
                rprintf(&body, "%s", attrs.text ? attrs.text : "");
            } else {
                rprintf(&body, "      %s\n", tx(x->evictions[i].pod));
            }
            body.oom = body.oom || attrs.oom;
            ebb_test_report_free(&attrs);
            mismatches += k;
            i++, j++;
        } else if (j == m || (i < n && LCS(i + 1, j) >= LCS(i, j + 1))) {
            rprintf(&body, "    - %s\n", tx(x->evictions[i].pod));
            mismatches++;
            i++;
        } else {
            actual_eviction(&body, "    + ", &p->evictions[j]);
            mismatches++;
            j++;
        }
    }
#undef LCS
    free(L);
    if (mismatches) {
        /* the same pods, only in another order: say so, it is easy to miss */
        if (n == m) {
            moved = true;
            for (i = 0; i < n && moved; i++) {
                bool found = false;
                for (j = 0; j < m && !found; j++)
                    found = strcmp(x->evictions[i].pod, p->evictions[j].pod) == 0;
                moved = found;
            }
        }
        rprintf(r, "  evictions (in order; - expected, + actual):\n%s", body.text ? body.text : "");
        if (moved)
            rprintf(r, "    (the same pods in a different order)\n");
    }
    r->oom = r->oom || body.oom;
    ebb_test_report_free(&body);
    return mismatches;
}

static int diff_unordered(const struct ebb_test_expect *x, const struct ebb_plan *p,
                          struct ebb_test_report *r)
{
    struct ebb_test_report body = { 0 };
    bool *used = calloc(p->nevictions + 1, sizeof(*used));
    int mismatches = 0;

    if (used == NULL) {
        r->oom = true;
        return 0;
    }
    for (size_t i = 0; i < x->nevictions; i++) {
        size_t j;
        for (j = 0; j < p->nevictions; j++)
            if (!used[j] && strcmp(x->evictions[i].pod, p->evictions[j].pod) == 0)
                break;
        if (j == p->nevictions) {
            rprintf(&body, "    missing:    %s\n", tx(x->evictions[i].pod));
            mismatches++;
            continue;
        }
        used[j] = true;
        struct ebb_test_report attrs = { 0 };
        int k = eviction_attrs(&attrs, &x->evictions[i], &p->evictions[j]);
        if (k) {
            actual_eviction(&body, "    evicted:    ", &p->evictions[j]);
            rprintf(&body, "%s", attrs.text ? attrs.text : "");
        }
        body.oom = body.oom || attrs.oom;
        ebb_test_report_free(&attrs);
        mismatches += k;
    }
    for (size_t j = 0; j < p->nevictions; j++)
        if (!used[j]) {
            actual_eviction(&body, "    unexpected: ", &p->evictions[j]);
            mismatches++;
        }
    free(used);
    if (mismatches)
        rprintf(r, "  evictions (in any order):\n%s", body.text ? body.text : "");
    r->oom = r->oom || body.oom;
    ebb_test_report_free(&body);
    return mismatches;
}

static bool refusal_matches(const struct ebb_test_refusal *x, const struct ebb_plan_refusal *a)
{
    return strcmp(x->pod, a->pod) == 0 && opt_eq(x->why, a->why) && opt_eq(x->plugin, a->plugin) &&
           (x->cycle == 0 || x->cycle == a->cycle);
}

static int diff_refusals(const struct ebb_test_expect *x, const struct ebb_plan *p,
                         struct ebb_test_report *r)
{
    struct ebb_test_report body = { 0 };
    bool *used = calloc(p->nrefusals + 1, sizeof(*used));
    int mismatches = 0;

    if (used == NULL) {
        r->oom = true;
        return 0;
    }
    for (size_t i = 0; i < x->nrefusals; i++) {
        const struct ebb_test_refusal *e = &x->refusals[i];
        size_t j;
        for (j = 0; j < p->nrefusals; j++)
            if (!used[j] && refusal_matches(e, &p->refusals[j]))
                break;
        if (j < p->nrefusals) {
            used[j] = true;
            continue;
        }
        rprintf(&body, "    missing:    %s (%s", tx(e->pod), tx(e->why ? e->why : "any reason"));
        if (e->plugin)
            rprintf(&body, ", by %s", tx(e->plugin));
        if (e->cycle)
            rprintf(&body, ", cycle %d", e->cycle);
        rprintf(&body, ")\n");
        mismatches++;
    }
    for (size_t j = 0; j < p->nrefusals; j++) {
        const struct ebb_plan_refusal *a = &p->refusals[j];
        if (used[j])
            continue;
        rprintf(&body, "    unexpected: %s (%s, by %s, cycle %d%s%s)\n", tx(a->pod), tx(a->why),
                tx(or_dash(a->plugin)), a->cycle, a->detail ? ": " : "", a->detail ? tx(a->detail) : "");
        mismatches++;
    }
    free(used);
    if (mismatches)
        rprintf(r, "  refusals:\n%s", body.text ? body.text : "");
    r->oom = r->oom || body.oom;
    ebb_test_report_free(&body);
    return mismatches;
}

/* Errors and notes: each expected text takes the first actual message,
 * not taken yet, that contains it. */
static int diff_texts(const char *what, const struct ebb_test_text *x, size_t nx, char **actual,
                      const size_t *alen, size_t na, struct ebb_test_report *r)
{
    struct ebb_test_report body = { 0 };
    bool *used = calloc(na + 1, sizeof(*used));
    int mismatches = 0;

    if (used == NULL) {
        r->oom = true;
        return 0;
    }
    for (size_t i = 0; i < nx; i++) {
        size_t j;
        for (j = 0; j < na; j++)
            if (!used[j] && actual[j] && memmem(actual[j], alen[j], x[i].text, strlen(x[i].text)) != NULL)
                break;
        if (j < na) {
            used[j] = true;
        } else {
            rprintf(&body, "    missing:    \"%s\"\n", tx(x[i].text));
            mismatches++;
        }
    }
    for (size_t j = 0; j < na; j++)
        if (!used[j]) {
            char text[TX_MAX];
            ebb_escape(text, sizeof(text), actual[j], actual[j] ? alen[j] : 0, EBB_ESC_LINE);
            rprintf(&body, "    unexpected: %s\n", actual[j] ? text : "(out of memory)");
            mismatches++;
        }
    free(used);
    if (mismatches)
        rprintf(r, "  %s:\n%s", what, body.text ? body.text : "");
    r->oom = r->oom || body.oom;
    ebb_test_report_free(&body);
    return mismatches;
}

static char *fmt_alloc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *fmt_alloc(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

/* "<plugin>: [<node>: ]<message>" of a note, whole (a script's note and
 * node name may hold NUL bytes); *len gets its length. NULL: out of memory. */
static char *note_text(const struct ebb_plan_note *o, size_t *len)
{
    const char *plugin = or_dash(o->plugin);
    size_t pl = strlen(plugin), nl = o->node ? ebb_str_len(o->node) : 0, k = 0;
    char *t = malloc(pl + 2 + nl + 2 + o->message_len + 1);

    if (t == NULL)
        return NULL;
    memcpy(t + k, plugin, pl), k += pl;
    memcpy(t + k, ": ", 2), k += 2;
    if (o->node != NULL) {
        memcpy(t + k, o->node, nl), k += nl;
        memcpy(t + k, ": ", 2), k += 2;
    }
    if (o->message != NULL)
        memcpy(t + k, o->message, o->message_len), k += o->message_len;
    t[k] = '\0';
    *len = k;
    return t;
}

int ebb_test_compare(const struct ebb_test_expect *x, const struct ebb_plan *p,
                     struct ebb_test_report *r)
{
    size_t na, *lens;
    char **texts;
    int n = 0;

    if (x == NULL || p == NULL || r == NULL)
        return EBB_EINVAL;
    n += x->unordered ? diff_unordered(x, p, r) : diff_ordered(x, p, r);
    if (x->has_refusals)
        n += diff_refusals(x, p, r);

    na = p->nerrors > p->nnotes ? p->nerrors : p->nnotes;
    texts = calloc(na + 1, sizeof(*texts));
    lens = calloc(na + 1, sizeof(*lens));
    if (texts == NULL || lens == NULL) {
        free(texts);
        free(lens);
        return EBB_ENOMEM;
    }
    for (size_t i = 0; i < p->nerrors; i++)
        if ((texts[i] = fmt_alloc("%s: %s", or_dash(p->errors[i].plugin), p->errors[i].message)) != NULL)
            lens[i] = strlen(texts[i]);
    n += diff_texts("plugin errors", x->errors, x->nerrors, texts, lens, p->nerrors, r);
    for (size_t i = 0; i < p->nerrors; i++)
        free(texts[i]);
    if (x->has_notes) {
        for (size_t i = 0; i < p->nnotes; i++)
            texts[i] = note_text(&p->notes[i], &lens[i]);
        n += diff_texts("notes", x->notes, x->nnotes, texts, lens, p->nnotes, r);
        for (size_t i = 0; i < p->nnotes; i++)
            free(texts[i]);
    }
    free(texts);
    free(lens);
    r->mismatches += n;
    return r->oom ? EBB_ENOMEM : n;
}

/* ---- invariants -------------------------------------------------------------- */

struct key_count {
    const char *s;
    size_t len;
};

static int cmp_key(const void *a, const void *b)
{
    const struct key_count *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Count equal keys (sorted runs) against `max`; report every key over it. */
static int over_limit(struct key_count *k, size_t n, int64_t max, int cycle, const char *what,
                      const char *limit, struct ebb_test_report *r)
{
    int bad = 0;

    if (max == EBB_UNLIMITED)
        return 0;
    qsort(k, n, sizeof(*k), cmp_key);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && cmp_key(&k[i], &k[j]) == 0; j++)
            ;
        if ((int64_t)(j - i) > max) {
            char key[TX_MAX];
            ebb_escape(key, sizeof(key), k[i].s, k[i].len, EBB_ESC_LINE);
            rprintf(r, "  invariant: cycle %d: %zu evictions %s %s, over %s %lld\n", cycle, j - i,
                    what, key, limit, (long long)max);
            bad++;
        }
    }
    return bad;
}

int ebb_test_check_limits(const struct ebb_plan *p, const struct ebb_policy *pol, int cycle,
                          struct ebb_test_report *r)
{
    struct key_count *nodes, *nss;
    size_t nn = 0, nns = 0, total = 0;
    int bad = 0;

    if (p == NULL || pol == NULL || r == NULL)
        return EBB_EINVAL;
    nodes = calloc(p->nevictions + 1, sizeof(*nodes));
    nss = calloc(p->nevictions + 1, sizeof(*nss));
    if (nodes == NULL || nss == NULL) {
        free(nodes);
        free(nss);
        return EBB_ENOMEM;
    }
    for (size_t i = 0; i < p->nevictions; i++) {
        const struct ebb_plan_eviction *e = &p->evictions[i];
        const char *slash;
        if (e->cycle != cycle)
            continue;
        total++;
        /* the evictor counts a pod that is bound to a node against that node */
        if (e->node != NULL)
            nodes[nn++] = (struct key_count){ e->node, strlen(e->node) };
        if ((slash = strchr(e->pod, '/')) != NULL)
            nss[nns++] = (struct key_count){ e->pod, (size_t)(slash - e->pod) };
    }
    if (pol->max_total != EBB_UNLIMITED && (int64_t)total > pol->max_total) {
        rprintf(r, "  invariant: cycle %d: %zu evictions in total, over maxNoOfPodsToEvictTotal %lld\n",
                cycle, total, (long long)pol->max_total);
        bad++;
    }
    bad += over_limit(nodes, nn, pol->max_per_node, cycle, "from node", "maxNoOfPodsToEvictPerNode", r);
    bad += over_limit(nss, nns, pol->max_per_namespace, cycle, "in namespace",
                      "maxNoOfPodsToEvictPerNamespace", r);
    free(nodes);
    free(nss);
    r->mismatches += bad;
    return r->oom ? EBB_ENOMEM : bad;
}

static struct ebb_profile_inst *profile_named(struct ebb_engine *e, const char *name)
{
    for (size_t i = 0; name && i < e->nprofiles; i++)
        if (strcmp(e->profiles[i]->name, name) == 0)
            return e->profiles[i];
    return NULL;
}

/* The first filter plugin of the profile that says no, for the message. */
static const char *refusing_plugin(struct ebb_ctx *ctx, const struct ebb_pod *pod, const char **ext)
{
    static const int exts[] = { EBB_EXT_FILTER, EBB_EXT_PREEVICTIONFILTER };

    for (size_t k = 0; k < EBB_ARRAY_LEN(exts); k++)
        for (size_t i = 0; i < ctx->profile->nset[exts[k]]; i++)
            if (!ebb__plugin_pod_check(ctx->profile->set[exts[k]][i], exts[k], ctx, pod)) {
                *ext = ebb_ext_name(exts[k]);
                return ctx->profile->set[exts[k]][i]->def->name;
            }
    /* else the profile's evict plugin, whose filter is the Evictor's */
    *ext = "filter";
    return ctx->profile->nset[EBB_EXT_EVICT] ? ctx->profile->set[EBB_EXT_EVICT][0]->def->name : "?";
}

int ebb_test_check_filters(struct ebb_engine *e, int cycle, struct ebb_test_report *r)
{
    struct ebb_cache *c;
    struct ebb_pod **hidden = NULL;
    size_t nhidden = 0;
    uint32_t slots;
    int bad = 0;

    if (e == NULL || r == NULL)
        return EBB_EINVAL;
    if ((c = e->cache) == NULL)
        return 0;
    slots = ebb_cache_pod_slots(c);
    if ((hidden = calloc((size_t)slots + 1, sizeof(*hidden))) == NULL)
        return EBB_ENOMEM;
    for (uint32_t i = 0; i < slots; i++) {
        struct ebb_pod *p = ebb_cache_pod_at(c, i);
        if (p != NULL && (p->flags & EBB_POD_GONE))
            hidden[nhidden++] = p;
    }
    /* back to the cluster the cycle started from, then forward eviction by
     * eviction: each check sees what the evictor saw (owners' replica
     * counts, room on other nodes) */
    ebb_cache_unhide_all(c);
    for (size_t i = 0; i < e->plan.nevictions; i++) {
        const struct ebb_plan_eviction *ev = &e->plan.evictions[i];
        const char *slash = strchr(ev->pod, '/');
        struct ebb_profile_inst *pr = profile_named(e, ev->profile);
        struct ebb_pod *p = NULL;

        if (ev->cycle != cycle)
            continue;
        if (slash != NULL) {
            ebb_str ns = ebb_str_find(ev->pod, (size_t)(slash - ev->pod));
            ebb_str name = ebb_str_find(slash + 1, strlen(slash + 1));
            p = ns && name ? ebb_cache_pod(c, ns, name) : NULL;
        }
        if (p == NULL) {
            rprintf(r, "  invariant: cycle %d: %s was evicted by %s but is not in the cluster\n",
                    cycle, tx(ev->pod), tx(or_dash(ev->plugin)));
            bad++;
        } else if (p->flags & EBB_POD_GONE) {
            rprintf(r, "  invariant: cycle %d: %s was evicted twice\n", cycle, tx(ev->pod));
            bad++;
        } else if (pr == NULL) {
            rprintf(r, "  invariant: cycle %d: %s was evicted by profile %s, which does not exist\n",
                    cycle, tx(ev->pod), tx(or_dash(ev->profile)));
            bad++;
        } else {
            struct ebb_ctx ctx = { e, pr, NULL, EBB_EXT_FILTER };
            if (!ebb_ctx_filter(&ctx, p) || !ebb_ctx_pre_eviction_filter(&ctx, p)) {
                const char *ext, *who = refusing_plugin(&ctx, p, &ext);
                rprintf(r, "  invariant: cycle %d: %s was evicted by %s, but the %s %s of profile "
                           "%s protects it\n",
                        cycle, tx(ev->pod), tx(or_dash(ev->plugin)), tx(who), ext, tx(pr->name));
                bad++;
            }
        }
        if (p != NULL)
            ebb_cache_hide_pod(c, p);
    }
    /* as it was: the next cycle purges exactly what this one evicted */
    ebb_cache_unhide_all(c);
    for (size_t i = 0; i < nhidden; i++)
        ebb_cache_hide_pod(c, hidden[i]);
    free(hidden);
    r->mismatches += bad;
    return r->oom ? EBB_ENOMEM : bad;
}

/* ---- running cases --------------------------------------------------------- */

/* What errors in a policy made from a case name instead of a line in it. */
#define CASE_POLICY "(the policy of the case)"

struct runner {
    const struct ebb_test_opts *o;
    FILE *out;
    const char *dir;
    const char *lua_dir;            /* DIR as registered (maybe a --policy-dir's spelling) */
    const char **dirs;              /* --policy-dir..., then DIR */
    int ndirs;
    struct ebb_engine *registry;    /* every plugin of the run, to look names up */
};

static void path_join(char *out, size_t len, const char *dir, const char *rel)
{
    if (rel[0] == '/' || strcmp(dir, ".") == 0)
        snprintf(out, len, "%s", rel);
    else
        snprintf(out, len, "%s/%s", dir, rel);
}

static int add_json(cJSON *obj, const char *key, const struct ebb_val *v)
{
    cJSON *j = ebb_val_to_cjson(v);
    if (j == NULL || !cJSON_AddItemToObject(obj, key, j)) {
        cJSON_Delete(j);
        return EBB_ENOMEM;
    }
    return 0;
}

/* A DeschedulerPolicy with one profile, "test": DefaultEvictor with the
 * case's `evictor` args and the plugin at every extension point it has. */
static char *make_policy(const struct ebb_test_case *tc, const char *plugin, unsigned exts)
{
    cJSON *root = cJSON_CreateObject(), *profiles, *prof, *configs, *de, *pc, *sets;
    char *text = NULL;
    int rc = 0;

    if (root == NULL)
        return NULL;
    cJSON_AddStringToObject(root, "apiVersion", "descheduler/v1alpha2");
    cJSON_AddStringToObject(root, "kind", "DeschedulerPolicy");
    if (tc->s_node_selector.v)
        rc |= add_json(root, "nodeSelector", tc->s_node_selector.v);
    for (size_t i = 0; tc->s_limits.v && i < tc->s_limits.v->u.map.n; i++)
        rc |= add_json(root, tc->s_limits.v->u.map.keys[i], tc->s_limits.v->u.map.vals[i]);
    profiles = cJSON_AddArrayToObject(root, "profiles");
    prof = cJSON_CreateObject();
    if (rc != 0 || profiles == NULL || prof == NULL || !cJSON_AddItemToArray(profiles, prof)) {
        cJSON_Delete(prof);
        goto out;
    }
    cJSON_AddStringToObject(prof, "name", "test");
    configs = cJSON_AddArrayToObject(prof, "pluginConfig");
    de = cJSON_CreateObject();
    pc = cJSON_CreateObject();
    if (configs == NULL || de == NULL || pc == NULL || !cJSON_AddItemToArray(configs, de)) {
        cJSON_Delete(de);
        cJSON_Delete(pc);
        goto out;
    }
    if (!cJSON_AddItemToArray(configs, pc)) {
        cJSON_Delete(pc);
        goto out;
    }
    /* pluginConfig[0] and [1]: errors about their args map back to the case */
    cJSON_AddStringToObject(de, "name", "DefaultEvictor");
    if (tc->s_evictor.v && add_json(de, "args", tc->s_evictor.v) != 0)
        goto out;
    cJSON_AddStringToObject(pc, "name", plugin);
    if (tc->s_args.v && add_json(pc, "args", tc->s_args.v) != 0)
        goto out;
    if ((sets = cJSON_AddObjectToObject(prof, "plugins")) == NULL)
        goto out;
    for (int x = 0; x < EBB_EXT_MAX; x++) {
        cJSON *set, *enabled;
        if (!(exts & (1u << x)))
            continue;
        if ((set = cJSON_AddObjectToObject(sets, ebb_ext_name(x))) == NULL ||
            (enabled = cJSON_AddArrayToObject(set, "enabled")) == NULL ||
            !cJSON_AddItemToArray(enabled, cJSON_CreateString(plugin)))
            goto out;
    }
    text = cJSON_PrintUnformatted(root);
out:
    cJSON_Delete(root);
    return text;
}

/* An error in the policy made from a case, told as the place in the test
 * file the offending value came from. */
static void remap_error(const struct ebb_test_file *f, const struct ebb_test_case *tc,
                        struct ebb_error *err)
{
    static const struct {
        const char *prefix;
        int setting;
        bool whole;         /* the field itself is the key under the setting */
    } map[] = {
        { "profiles[0].pluginConfig[0].args", S_EVICTOR, false },
        { "profiles[0].pluginConfig[1].args", S_ARGS, false },
        { "profiles[0]", S_PLUGIN, false },
        { "nodeSelector", S_NODE_SELECTOR, false },
        { "maxNoOfPodsToEvict", S_LIMITS, true },
    };
    const struct ebb_test_setting *s = NULL;
    char rest[300] = "", field[sizeof(err->field)];
    int line = tc->line, k;

    for (k = 0; k < (int)EBB_ARRAY_LEN(map); k++) {
        size_t n = strlen(map[k].prefix);
        if (strncmp(err->field, map[k].prefix, n) == 0) {
            snprintf(rest, sizeof(rest), "%s%s", map[k].whole ? "." : "",
                     map[k].whole ? err->field : err->field + n);
            break;
        }
    }
    if (k == (int)EBB_ARRAY_LEN(map)) {
        snprintf(field, sizeof(field), "%s", tc->path);
    } else {
        int setting = map[k].setting;
        s = setting == S_EVICTOR ? &tc->s_evictor
            : setting == S_ARGS  ? &tc->s_args
            : setting == S_PLUGIN ? &tc->s_plugin
            : setting == S_NODE_SELECTOR ? &tc->s_node_selector
                                         : &tc->s_limits;
        if (setting == S_PLUGIN)
            rest[0] = '\0';
        if (s->v != NULL) {
            int l = rest[0] ? ebb_val_line_for(s->v, rest) : s->line;
            line = l ? l : s->line;
            if (snprintf(field, sizeof(field), "%s%s", s->field, rest) >= (int)sizeof(field))
                field[sizeof(field) - 1] = '\0';   /* it only labels the message */
        } else {
            if (snprintf(field, sizeof(field), "%s.%s%s", tc->path, settings[setting].key, rest) >=
                (int)sizeof(field))
                field[sizeof(field) - 1] = '\0';
        }
    }
    /* escaped and cut with an ellipsis, as ebb_error_set does */
    ebb_escape(err->file, sizeof(err->file), f->path, strlen(f->path), EBB_ESC_LINE);
    ebb_escape(err->field, sizeof(err->field), field, strlen(field), EBB_ESC_LINE);
    err->line = line;
}

static bool readable(const char *path, struct ebb_error *err, const char *file,
                     const struct ebb_test_setting *s, const char *what)
{
    if (access(path, R_OK) == 0)
        return true;
    ebb_error_set(err, EBB_EIO, file, s->line, s->field, "cannot read the %s %s: %s", what, path,
                  strerror(errno));
    return false;
}

/* Run one case into `r`. Returns 0 when it ran (r says whether it passed),
 * or an input error in `err`. */
static int run_case(struct runner *R, const struct ebb_test_file *f, const struct ebb_test_case *tc,
                    const char *default_plugin, struct ebb_test_report *r, struct ebb_error *err)
{
    const char *plugin = tc->plugin ? tc->plugin : default_plugin;
    char snap[PATH_MAX], pol[PATH_MAX], *text = NULL;
    struct ebb_sim_opts so = {
        .dirs = R->dirs,
        .ndirs = R->ndirs,
        .now = tc->now,
        .home = R->o->home,
    };
    struct ebb_engine *e = NULL;
    struct ebb_error e2 = { 0 };
    int rc;

    if (tc->policy != NULL) {
        path_join(pol, sizeof(pol), f->dir, tc->policy);
        if (!readable(pol, err, f->path, &tc->s_policy, "policy"))
            return EBB_EIO;
        so.policy = pol;
    } else {
        struct ebb_plugin_def *d = plugin ? ebb__engine_find(R->registry, plugin) : NULL;
        if (d == NULL)
            return ebb_error_set(err, EBB_ENOENT, f->path, tc->s_plugin.v ? tc->s_plugin.line : tc->line,
                                 tc->s_plugin.v ? tc->s_plugin.field : tc->path,
                                 "no plugin named \"%s\" (not in %s, a --policy-dir or the "
                                 "built-ins)",
                                 plugin ? plugin : "?", R->dir);
        if ((text = make_policy(tc, plugin, d->exts)) == NULL)
            return ebb_error_set(err, EBB_ENOMEM, f->path, tc->line, tc->path, "out of memory");
        so.policy = CASE_POLICY;
        so.policy_buf = text;
        so.policy_len = strlen(text);
    }

    if (tc->expect.invalid != NULL) {
        /* bind the policy only: no snapshot, no cycle */
        char msg[2048];
        rc = ebb_simulate(&so, &e, &e2);
        cJSON_free(text);
        if (rc == 0) {
            ebb_engine_destroy(e);
            rprintf(r, "  invalid: expected the policy to be refused with \"%s\", but it was "
                       "accepted\n",
                    tx(tc->expect.invalid));
            r->mismatches++;
            return 0;
        }
        if (strcmp(e2.file, CASE_POLICY) == 0)
            remap_error(f, tc, &e2);
        ebb_error_format(&e2, msg, sizeof(msg));
        if (strstr(msg, tc->expect.invalid) == NULL) {
            rprintf(r, "  invalid: expected the policy to be refused with \"%s\", got:\n    %s\n",
                    tx(tc->expect.invalid), tx(msg));
            r->mismatches++;
        }
        return 0;
    }

    path_join(snap, sizeof(snap), f->dir, tc->snapshot);
    if (!readable(snap, err, f->path, &tc->s_snapshot, "snapshot")) {
        cJSON_free(text);
        return EBB_EIO;
    }
    so.snapshot = snap;
    so.cycles = 1;
    rc = ebb_simulate(&so, &e, &e2);
    cJSON_free(text);
    if (rc != 0) {
        if (strcmp(e2.file, CASE_POLICY) == 0)
            remap_error(f, tc, &e2);
        *err = e2;
        return rc;
    }
    for (int cycle = 1; cycle <= tc->cycles; cycle++) {
        if (cycle > 1 && (rc = ebb_engine_run_cycle(e)) != 0) {
            rprintf(r, "  cycle %d did not run: %s\n", cycle, ebb_strerror(rc));
            r->mismatches++;
            break;
        }
        if (ebb_test_check_filters(e, cycle, r) < 0 ||
            ebb_test_check_limits(ebb_engine_plan(e), ebb_engine_policy(e), cycle, r) < 0)
            r->oom = true;
    }
    if (ebb_test_compare(&tc->expect, ebb_engine_plan(e), r) < 0)
        r->oom = true;
    if (r->mismatches) {
        const struct ebb_plan *p = ebb_engine_plan(e);
        /* a skipped cycle explains many a missing eviction */
        for (size_t i = 0; i < p->nskips; i++)
            rprintf(r, "  (cycle %d was skipped: %s)\n", p->skips[i].cycle, tx(p->skips[i].reason));
    }
    if (r->oom) {
        rprintf(r, "  (out of memory: this report is incomplete)\n");
        r->mismatches++;
    }
    ebb_engine_destroy(e);
    return 0;
}

/* The report's lines, each escaped for a line once more as it is written:
 * whatever reached the report, what is printed is UTF-8 without a control
 * byte (the texts in it are escaped already; escaping is idempotent). */
static void print_indented(FILE *out, const char *text)
{
    const char *s = text, *nl;

    for (; s && *s; s = nl + 1) {
        char *line;
        nl = strchr(s, '\n');
        if (nl == NULL)
            nl = s + strlen(s);
        line = ebb_escape_dup(s, (size_t)(nl - s), EBB_ESC_LINE, 0, NULL);
        fprintf(out, "    %s\n", line ? line : "(out of memory)");
        free(line);
        if (*nl == '\0')
            break;
    }
}

static void print_error(FILE *out, const char *label, const struct ebb_error *err)
{
    char buf[2048];

    ebb_error_format(err, buf, sizeof(buf));
    fprintf(out, "ERROR %s\n      %s\n", tx(label), buf);
}

/* The plugin a DIR/<stem>.lua file registered. */
static const char *plugin_of_file(const struct ebb_engine *e, const char *path)
{
    for (size_t i = 0; i < e->ndefs; i++)
        if (e->defs[i]->path && strcmp(e->defs[i]->path, path) == 0)
            return e->defs[i]->name;
    return NULL;
}

static void run_file(struct runner *R, const char *stem, struct ebb_test_totals *t, int *matched)
{
    char path[PATH_MAX], lua[PATH_MAX], label[PATH_MAX + 512];
    struct ebb_test_file *f = NULL;
    struct ebb_error err = { 0 };
    const char *plugin;
    int ran = 0, failed = 0, bad = 0;

    /* as ebb_engine_register_lua_dir names the strategy's file */
    snprintf(lua, sizeof(lua), "%s/%s.lua", R->lua_dir, stem);
    if (strcmp(R->dir, ".") == 0)
        snprintf(path, sizeof(path), "%s_test.yaml", stem);
    else
        snprintf(path, sizeof(path), "%s/%s_test.yaml", R->dir, stem);
    if (ebb_test_file_load(path, &f, &err) != 0) {
        print_error(R->out, path, &err);
        t->bad++;
        return;
    }
    plugin = plugin_of_file(R->registry, lua);
    for (size_t i = 0; i < f->ncases; i++) {
        const struct ebb_test_case *tc = &f->cases[i];
        struct ebb_test_report r = { 0 };

        snprintf(label, sizeof(label), "%s/%s", stem, tc->name);
        if (R->o->run && strstr(label, R->o->run) == NULL)
            continue;
        ran++;
        ebb_error_clear(&err);
        if (run_case(R, f, tc, plugin, &r, &err) != 0) {
            print_error(R->out, label, &err);
            bad++;
        } else if (r.mismatches) {
            fprintf(R->out, "FAIL  %s  (%s:%d)\n", tx(label), tx(path), tc->line);
            print_indented(R->out, r.text);
            failed++;
        } else if (R->o->verbose) {
            fprintf(R->out, "ok    %s\n", tx(label));
        }
        ebb_test_report_free(&r);
    }
    *matched += ran;
    if (ran > 0) {
        if (failed || bad) {
            fprintf(R->out, "%s %s_test.yaml  ", failed ? "FAIL " : "ERROR", tx(stem));
            if (failed)
                fprintf(R->out, "%d of %d case%s failed%s", failed, ran, ran == 1 ? "" : "s",
                        bad ? ", " : "");
            if (bad)
                fprintf(R->out, "%d with bad input", bad);
            fputc('\n', R->out);
        } else {
            fprintf(R->out, "ok    %s_test.yaml  %d case%s\n", tx(stem), ran, ran == 1 ? "" : "s");
        }
    }
    t->passed += ran - failed - bad;
    t->failed += failed;
    t->bad += bad;
    ebb_test_file_free(f);
}

struct entry {
    char *stem;
    bool lua, test;
};

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->stem, ((const struct entry *)b)->stem);
}

static bool has_suffix(const char *s, const char *suffix, size_t *stem)
{
    size_t n = strlen(s), k = strlen(suffix);
    if (n <= k || strcmp(s + n - k, suffix) != 0)
        return false;
    *stem = n - k;
    return true;
}

/* DIR's strategies and test files, paired by name, sorted. */
static int scan(const char *dir, struct entry **out, size_t *n, struct ebb_error *err)
{
    DIR *dp = opendir(dir);
    struct dirent *de;
    struct entry *v = NULL;
    size_t cap = 0;
    int rc = 0;

    *n = 0;
    if (dp == NULL)
        return ebb_error_set(err, EBB_EIO, dir, 0, NULL, "cannot open directory: %s",
                             strerror(errno));
    while ((de = readdir(dp)) != NULL) {
        size_t len, i;
        bool test;
        /* the files ebb_engine_register_lua_dir skips are no strategies */
        if (de->d_name[0] == '.' || de->d_name[0] == '_')
            continue;
        if (has_suffix(de->d_name, "_test.yaml", &len))
            test = true;
        else if (has_suffix(de->d_name, ".lua", &len))
            test = false;
        else
            continue;
        for (i = 0; i < *n; i++)
            if (strlen(v[i].stem) == len && strncmp(v[i].stem, de->d_name, len) == 0)
                break;
        if (i == *n) {
            if (*n == cap) {
                struct entry *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*nv));
                if (nv == NULL) {
                    rc = EBB_ENOMEM;
                    break;
                }
                v = nv;
            }
            if ((v[i].stem = strndup(de->d_name, len)) == NULL) {
                rc = EBB_ENOMEM;
                break;
            }
            v[i].lua = v[i].test = false;
            (*n)++;
        }
        if (test)
            v[i].test = true;
        else
            v[i].lua = true;
    }
    closedir(dp);
    if (*n > 1)
        qsort(v, *n, sizeof(*v), cmp_entry);
    *out = v;
    return rc;
}

static bool same_dir(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) != NULL && realpath(b, rb) != NULL && strcmp(ra, rb) == 0;
}

int ebb_test_run(const struct ebb_test_opts *o, struct ebb_test_totals *t)
{
    struct runner R = { .o = o, .out = o->out ? o->out : stdout, .dir = o->dir ? o->dir : "." };
    struct ebb_engine_opts eo = { .home = o->home, .mode = EBB_MODE_SIMULATE,
                                  .scripts = ebb_lua_plugins() };
    struct ebb_error err = { 0 };
    struct entry *ents = NULL;
    size_t nents = 0, ntests = 0;
    int matched = 0, rc;
    bool dir_listed = false;

    memset(t, 0, sizeof(*t));
    if ((rc = scan(R.dir, &ents, &nents, &err)) != 0) {
        print_error(R.out, R.dir, &err);
        t->bad++;
        goto done;
    }
    for (size_t i = 0; i < nents; i++)
        ntests += ents[i].test;
    if (ntests == 0) {
        fprintf(R.out, "ERROR %s\n      no *_test.yaml files (a test file sits beside its "
                       "strategy: DIR/<name>.lua, DIR/<name>_test.yaml)\n",
                tx(R.dir));
        t->bad++;
        goto done;
    }
    /* DIR loads as `ebb run --policy-dir DIR` would load it: every strategy
     * in it, after the --policy-dir directories */
    if ((R.dirs = calloc((size_t)o->npolicy_dirs + 2, sizeof(*R.dirs))) == NULL) {
        fprintf(R.out, "ERROR out of memory\n");
        t->bad++;
        goto done;
    }
    R.lua_dir = R.dir;
    for (int i = 0; i < o->npolicy_dirs; i++) {
        R.dirs[R.ndirs++] = o->policy_dirs[i];
        if (!dir_listed && same_dir(o->policy_dirs[i], R.dir)) {
            dir_listed = true;
            R.lua_dir = o->policy_dirs[i];
        }
    }
    if (!dir_listed)
        R.dirs[R.ndirs++] = R.dir;
    if ((rc = ebb_engine_create(&eo, &R.registry, &err)) != 0 ||
        (rc = ebb_engine_load_builtins(R.registry, &err)) != 0) {
        print_error(R.out, "loading the built-in plugins", &err);
        t->bad++;
        goto done;
    }
    for (int i = 0; i < R.ndirs; i++)
        if ((rc = ebb_engine_register_lua_dir(R.registry, R.dirs[i], &err)) != 0) {
            char label[PATH_MAX + 16];
            snprintf(label, sizeof(label), "loading %s", R.dirs[i]);
            print_error(R.out, label, &err);
            t->bad++;
            goto done;
        }
    for (size_t i = 0; i < nents; i++) {
        struct entry *en = &ents[i];
        if (en->test && !en->lua) {
            fprintf(R.out, "ERROR %s/%s_test.yaml\n      there is no %s.lua beside it (a test "
                           "file tests the strategy of the same name)\n",
                    tx(R.dir), tx(en->stem), tx(en->stem));
            t->bad++;
        } else if (!en->test) {
            if (o->run == NULL)
                fprintf(R.out, "no tests  %s.lua\n", tx(en->stem));
        } else {
            run_file(&R, en->stem, t, &matched);
        }
    }
    if (o->run != NULL && matched == 0 && t->bad == 0) {
        fprintf(R.out, "ERROR --run \"%s\"\n      no case matches (cases are named "
                       "\"<name>/<case name>\")\n", tx(o->run));
        t->bad++;
    }
done:
    fprintf(R.out, "\n%d passed, %d failed", t->passed, t->failed);
    if (t->bad)
        fprintf(R.out, ", %d with bad input", t->bad);
    fputc('\n', R.out);
    for (size_t i = 0; i < nents; i++)
        free(ents[i].stem);
    free(ents);
    free(R.dirs);
    ebb_engine_destroy(R.registry);
    return t->bad ? EXIT_INPUT : t->failed ? EXIT_FAILED : 0;
}

/* ---- the command ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fputs("usage: ebb test [DIR] [--policy-dir D]... [--run PATTERN] [-v]\n"
          "\n"
          "  Runs DIR/<name>_test.yaml against DIR/<name>.lua for every strategy of DIR\n"
          "  (default: the current directory); see docs/ebb-test.md.\n"
          "\n"
          "  --policy-dir D   a directory of plugins/modules the strategies use (repeatable)\n"
          "  --run PATTERN    only the cases whose \"<name>/<case>\" contains PATTERN\n"
          "  -v, --verbose    a line for every case; twice: the engine's log too\n"
          "\n"
          "  Exit status: 0 every case passed, 1 some case failed, 2 some input is wrong.\n",
          f);
}

int ebb_test_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "policy-dir", required_argument, NULL, 'd' },
        { "run", required_argument, NULL, 'r' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *dirs[64];
    struct ebb_test_opts o = { .policy_dirs = dirs };
    struct ebb_test_totals t;
    int c;

    opterr = 0;
    optind = 2;
    while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (o.npolicy_dirs == (int)EBB_ARRAY_LEN(dirs)) {
                fprintf(stderr, "ebb: error: --policy-dir: at most %d directories\n", o.npolicy_dirs);
                return EXIT_INPUT;
            }
            dirs[o.npolicy_dirs++] = optarg;
            break;
        case 'r': o.run = optarg; break;
        case 'v': o.verbose++; break;
        case 'h': usage(stdout); return 0;
        case ':':
        default:
            ebb_flag_getopt_error(c, argv, usage);
            return EXIT_INPUT;
        }
    }
    if (optind < argc)
        o.dir = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "ebb: error: test takes one directory, got also \"%s\"\n", tx(argv[optind]));
        return EXIT_INPUT;
    }
    /* plugin failures are part of the report; the log is for -v -v */
    ebb_log_level = o.verbose >= 2 ? EBB_LOG_DEBUG : EBB_LOG_OFF;
    return ebb_test_run(&o, &t);
}
