/* `ebb test [DIR]`: strategy fixtures (a snapshot, a plugin with args, the
 * expected plan) run through the real engine; see ebb/testrun.h and
 * docs/ebb-test.md. This file is the command and the runner: DIR's
 * strategies paired with their test files, a case's policy made and bound,
 * its cycles run, each checked (testrun_invariants.c) and the plan compared
 * (testrun_compare.c), the outcome printed. Test files are read by
 * testrun_file.c; see testrun_int.h for the units. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/vec.h"
#include "cmd/testrun_int.h"
#include "core/engine.h"
#include "ebb/flags.h"
#include "ebb/simulate.h"
#include "ebb/lua.h"

#define EXIT_FAILED 1
#define EXIT_INPUT 2

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
            if (snprintf(field, sizeof(field), "%s.%s%s", tc->path, ebb__tr_settings[setting].key, rest) >=
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

/* Whether the snapshot held `key` ("namespace/name"): in the cache, or
 * evicted by a cycle that ran (a simulated eviction leaves the cache). */
static bool snapshot_has(struct ebb_engine *e, const char *key)
{
    const char *slash = strchr(key, '/');
    const struct ebb_plan *p = ebb_engine_plan(e);

    for (size_t i = 0; p != NULL && i < p->nevictions; i++)
        if (strcmp(p->evictions[i].pod, key) == 0)
            return true;
    if (slash == NULL)
        return false;
    ebb_str ns = ebb_str_find(key, (size_t)(slash - key)), name = ebb_str_find(slash + 1, strlen(slash + 1));
    return ns != NULL && name != NULL && ebb_cache_pod(e->cache, ns, name) != NULL;
}

/* Every pod a case's expectations name is looked up in its snapshot: an
 * expectation about a pod that is not there (a typo, a fixture renamed)
 * cannot mean what it says, so `ebb test` warns, naming the line. */
static void warn_absent_pods(struct runner *R, const struct ebb_test_file *f,
                             const struct ebb_test_case *tc, struct ebb_engine *e)
{
    const struct ebb_test_expect *x = &tc->expect;

    for (size_t k = 0; k < x->nevictions + x->nrefusals; k++) {
        const char *pod = k < x->nevictions ? x->evictions[k].pod : x->refusals[k - x->nevictions].pod;
        int line = k < x->nevictions ? x->evictions[k].line : x->refusals[k - x->nevictions].line;
        if (pod == NULL || snapshot_has(e, pod))
            continue;
        fprintf(R->out, "warning: %s:%d: %s.expect: pod \"%s\" is not in the snapshot %s\n",
                ebb__tr_text(f->path), line, tc->path, ebb__tr_text(pod), ebb__tr_text(tc->snapshot));
    }
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
    struct ebb_predictor *pred = NULL;
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
            ebb_evmem_free(&so.memory);
            ebb__tr_printf(r, "  invalid: expected the policy to be refused with \"%s\", but it was "
                              "accepted\n",
                           ebb__tr_text(tc->expect.invalid));
            r->mismatches++;
            return 0;
        }
        if (strcmp(e2.file, CASE_POLICY) == 0)
            remap_error(f, tc, &e2);
        ebb_error_format(&e2, msg, sizeof(msg));
        if (strstr(msg, tc->expect.invalid) == NULL) {
            ebb__tr_printf(r, "  invalid: expected the policy to be refused with \"%s\", got:\n    %s\n",
                           ebb__tr_text(tc->expect.invalid), ebb__tr_text(msg));
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
    /* cycles after the first: LoopGuard predicts on the default scheduler */
    if (tc->cycles > 1 && ebb_predictor_create(NULL, EBB_SCHED_LATEST, &pred) == 0)
        ebb_engine_set_predictor(e, ebb_predictor_predict, pred);
    for (int cycle = 1; cycle <= tc->cycles; cycle++) {
        if (cycle > 1 && (rc = ebb_engine_run_cycle(e)) != 0) {
            ebb__tr_printf(r, "  cycle %d did not run: %s\n", cycle, ebb_strerror(rc));
            r->mismatches++;
            break;
        }
        if (ebb_test_check_filters(e, cycle, r) < 0 ||
            ebb_test_check_limits(ebb_engine_plan(e), ebb_engine_policy(e), cycle, r) < 0)
            r->oom = true;
    }
    warn_absent_pods(R, f, tc, e);
    if (ebb_test_compare(&tc->expect, ebb_engine_plan(e), r) < 0)
        r->oom = true;
    if (r->mismatches) {
        const struct ebb_plan *p = ebb_engine_plan(e);
        /* a skipped cycle explains many a missing eviction */
        for (size_t i = 0; i < p->nskips; i++)
            ebb__tr_printf(r, "  (cycle %d was skipped: %s)\n", p->skips[i].cycle,
                           ebb__tr_text(p->skips[i].reason));
    }
    if (r->oom) {
        ebb__tr_printf(r, "  (out of memory: this report is incomplete)\n");
        r->mismatches++;
    }
    /* the case's memory of evictions lasted its cycles */
    ebb_engine_destroy(e);
    ebb_predictor_destroy(pred);
    ebb_evmem_free(&so.memory);
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
    fprintf(out, "ERROR %s\n      %s\n", ebb__tr_text(label), buf);
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
            fprintf(R->out, "FAIL  %s  (%s:%d)\n", ebb__tr_text(label), ebb__tr_text(path), tc->line);
            print_indented(R->out, r.text);
            failed++;
        } else if (R->o->verbose) {
            fprintf(R->out, "ok    %s\n", ebb__tr_text(label));
        }
        ebb_test_report_free(&r);
    }
    *matched += ran;
    if (ran > 0) {
        if (failed || bad) {
            fprintf(R->out, "%s %s_test.yaml  ", failed ? "FAIL " : "ERROR", ebb__tr_text(stem));
            if (failed)
                fprintf(R->out, "%d of %d case%s failed%s", failed, ran, ran == 1 ? "" : "s",
                        bad ? ", " : "");
            if (bad)
                fprintf(R->out, "%d with bad input", bad);
            fputc('\n', R->out);
        } else {
            fprintf(R->out, "ok    %s_test.yaml  %d case%s\n", ebb__tr_text(stem), ran, ran == 1 ? "" : "s");
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
            if (ebb__grow((void **)&v, &cap, *n + 1, sizeof(*v)) != 0) {
                rc = EBB_ENOMEM;
                break;
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
                ebb__tr_text(R.dir));
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
                    ebb__tr_text(R.dir), ebb__tr_text(en->stem), ebb__tr_text(en->stem));
            t->bad++;
        } else if (!en->test) {
            if (o->run == NULL)
                fprintf(R.out, "no tests  %s.lua\n", ebb__tr_text(en->stem));
        } else {
            run_file(&R, en->stem, t, &matched);
        }
    }
    if (o->run != NULL && matched == 0 && t->bad == 0) {
        fprintf(R.out, "ERROR --run \"%s\"\n      no case matches (cases are named "
                       "\"<name>/<case name>\")\n", ebb__tr_text(o->run));
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
        fprintf(stderr, "ebb: error: test takes one directory, got also \"%s\"\n",
                ebb__tr_text(argv[optind]));
        return EXIT_INPUT;
    }
    /* plugin failures are part of the report; the log is for -v -v */
    ebb_log_level = o.verbose >= 2 ? EBB_LOG_DEBUG : EBB_LOG_OFF;
    return ebb_test_run(&o, &t);
}
