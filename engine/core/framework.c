/* The framework: the plugin registry, profiles built from a policy, and the
 * descheduling cycle (upstream pkg/descheduler/descheduler.go and
 * pkg/framework/profile/profile.go):
 *
 *   nodes = ready nodes matching the policy's nodeSelector (>= 2 or skip)
 *   for each profile: its deschedule plugins, in `enabled` order
 *   for each profile: its balance plugins
 *
 * A plugin that fails is reported in the plan and the cycle goes on.
 *
 * Plugins are called only through their engine's operations (struct
 * ebb_plugin_ops): native plugins' are here, Lua plugins' in lua_plugin.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ebb/evmemory.h"
#include "ebb/selector.h"
#include "core/engine.h"

/* ---- engine ------------------------------------------------------------- */

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool looks_like_home(const char *dir)
{
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof(a), "%s/policies", dir);
    snprintf(b, sizeof(b), "%s/lua/ebb", dir);
    return is_dir(a) && is_dir(b);
}

/* $EBB_HOME, then next to the executable: <exe>/.. (a build tree) and
 * <exe>/../share/ebb (an installed layout). */
static char *find_home(const char *given)
{
    char exe[PATH_MAX], cand[PATH_MAX + 32];
    const char *env = getenv("EBB_HOME");
    ssize_t n;
    char *slash;

    if (given != NULL)
        return strdup(given);
    if (env != NULL && env[0] != '\0')
        return strdup(env);
    if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
        exe[n] = '\0';
        if ((slash = strrchr(exe, '/')) != NULL) {
            *slash = '\0';
            snprintf(cand, sizeof(cand), "%s/..", exe);
            if (looks_like_home(cand))
                return realpath(cand, NULL);
            snprintf(cand, sizeof(cand), "%s/../share/ebb", exe);
            if (looks_like_home(cand))
                return realpath(cand, NULL);
        }
    }
    if (looks_like_home("."))
        return realpath(".", NULL);
    return NULL;
}

int ebb_engine_create(const struct ebb_engine_opts *opts, struct ebb_engine **out,
                      struct ebb_error *err)
{
    struct ebb_engine *e;

    if (out == NULL)
        return EBB_EINVAL;
    if ((e = calloc(1, sizeof(*e))) == NULL)
        return EBB_ENOMEM;
    e->mode = opts ? opts->mode : EBB_MODE_SIMULATE;
    e->scripts = opts ? opts->scripts : NULL;
    e->memory = opts ? opts->memory : NULL;
    e->predict = opts ? opts->predict : NULL;
    e->predict_ud = opts ? opts->predict_ud : NULL;
    e->evictions_allowed = true;
    e->fixed_now = opts ? opts->now : EBB_TIME_NONE;
    e->mem_limit = opts && opts->mem_limit ? opts->mem_limit : (size_t)64 << 20;
    if (opts && opts->time_budget_ms == EBB_BUDGET_OFF)
        e->budget_ns = UINT64_MAX;
    else
        e->budget_ns = (opts && opts->time_budget_ms ? opts->time_budget_ms : 10000) * 1000000ull;
    e->quarantine_after = opts && opts->quarantine_after ? (opts->quarantine_after < 0 ? 0 : opts->quarantine_after)
                                                         : EBB_QUARANTINE_AFTER;
    e->home = find_home(opts ? opts->home : NULL);
    if ((e->policy_dirs = calloc(1, sizeof(char *))) == NULL) {
        ebb_engine_destroy(e);
        return EBB_ENOMEM;
    }
    ebb__evictor_init(&e->evictor);
    ebb_plan_init(&e->plan);
    if (opts && (opts->features & EBB_FEATURE_EVICTIONS_IN_BACKGROUND) &&
        ebb_background_create(&e->background) != 0) {
        ebb_engine_destroy(e);
        return EBB_ENOMEM;
    }
    if (e->home == NULL) {
        ebb_engine_destroy(e);
        return ebb_error_set(err, EBB_ENOENT, NULL, 0, NULL,
                             "cannot find the directory with lua/ and policies/ "
                             "(set EBB_HOME)");
    }
    *out = e;
    return 0;
}

static void inst_destroy(struct ebb_plugin_inst *inst)
{
    if (inst == NULL)
        return;
    inst->def->ops->destroy(inst);
    free(inst);
}

static void profile_destroy(struct ebb_profile_inst *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->ninsts; i++)
        inst_destroy(p->insts[i]);
    free(p->insts);
    for (int x = 0; x < EBB_EXT_MAX; x++)
        free(p->set[x]);
    free(p->name);
    free(p);
}

static void def_destroy(struct ebb_plugin_def *d)
{
    if (d == NULL)
        return;
    free(d->name);
    free(d->path);
    free(d->source);
    free(d);
}

void ebb_engine_destroy(struct ebb_engine *e)
{
    if (e == NULL)
        return;
    for (size_t i = 0; i < e->nprofiles; i++)
        profile_destroy(e->profiles[i]);
    free(e->profiles);
    ebb_policy_free(e->policy);
    for (size_t i = 0; i < e->ndefs; i++)
        def_destroy(e->defs[i]);
    free(e->defs);
    for (size_t i = 0; i < e->npolicy_dirs; i++)
        free(e->policy_dirs[i]);
    free(e->policy_dirs);
    ebb__evictor_free(&e->evictor);
    ebb_background_destroy(e->background);
    ebb_plan_clear(&e->plan);
    free(e->cycle_nodes);
    free(e->focus_nodes);
    ebb_cache_destroy(e->cache);
    ebb__prom_forget(e);
    free(e->home);
    free(e);
}

void ebb__prom_forget(struct ebb_engine *e)
{
    for (size_t i = 0; i < e->nprom_queries; i++)
        free(e->prom_queries[i]);
    free(e->prom_queries);
    e->prom_queries = NULL;
    e->nprom_queries = 0;
    e->prom_queries_known = false;
    ebb_prom_result_free(e->prom_answer);
    e->prom_answer = NULL;
}

int64_t ebb__engine_now(const struct ebb_engine *e)
{
    if (e->fixed_now != EBB_TIME_NONE)
        return e->fixed_now;
    return (int64_t)time(NULL);
}

int ebb_engine_settle_pdbs(struct ebb_engine *e)
{
    if (e == NULL || e->cache == NULL || e->cycle_active)
        return EBB_ESTATE;
    return ebb__pdb_settle(e->cache, &e->evictor.pdb_state);
}

void ebb_engine_set_now(struct ebb_engine *e, int64_t now)
{
    e->fixed_now = now;
}

const struct ebb_policy *ebb_engine_policy(const struct ebb_engine *e)
{
    return e->policy;
}

void ebb_engine_set_cache(struct ebb_engine *e, struct ebb_cache *c)
{
    if (e->cache != c)
        ebb_cache_destroy(e->cache);
    e->cache = c;
    e->ncycle_nodes = 0;
    ebb__evictor_forget_pdbs(&e->evictor);
}

struct ebb_cache *ebb_engine_cache(struct ebb_engine *e)
{
    return e->cache;
}

struct ebb_plan *ebb_engine_plan(struct ebb_engine *e)
{
    return &e->plan;
}

struct ebb_evmem *ebb_engine_memory(const struct ebb_engine *e)
{
    return e->memory;
}

void ebb_engine_set_predictor(struct ebb_engine *e, ebb_predict_fn fn, void *ud)
{
    e->predict = fn;
    e->predict_ud = ud;
}

int ebb_engine_cycle_number(const struct ebb_engine *e)
{
    return e->cycle;
}

/* ---- native plugins: their engine --------------------------------------- */

static int native_create(struct ebb_engine *e, const struct ebb_policy *pol,
                         struct ebb_plugin_inst *inst, struct ebb_error *err)
{
    const struct ebb_plugin_config *pc = inst->pc;
    struct ebb_error e2 = { 0 };
    char field[600];
    int rc;

    (void)e;
    if ((rc = inst->def->native.create(pc ? pc->args : NULL, &inst->state, &e2)) == 0)
        return 0;
    if (e2.field[0])
        snprintf(field, sizeof(field), "%s.args.%s", pc ? pc->path : "", e2.field);
    else
        snprintf(field, sizeof(field), "%s.args", pc ? pc->path : "");
    return ebb_error_set(err, rc, pol->file, e2.line ? e2.line : (pc ? pc->line : 0), field,
                         "%s: %s", inst->def->name, e2.msg);
}

static int native_run(struct ebb_ctx *ctx, struct ebb_node *const *nodes, size_t n,
                      struct ebb_error *err)
{
    struct ebb_plugin_inst *inst = ctx->plugin;

    if (ctx->ext == EBB_EXT_DESCHEDULE)
        return inst->def->native.deschedule(inst->state, ctx, nodes, n, err);
    return inst->def->native.balance(inst->state, ctx, nodes, n, err);
}

static int native_check(struct ebb_ctx *ctx, const struct ebb_pod *pod, struct ebb_error *err)
{
    struct ebb_plugin_inst *inst = ctx->plugin;

    (void)err;
    if (ctx->ext == EBB_EXT_FILTER)
        return inst->def->native.filter(inst->state, ctx, pod);
    return inst->def->native.pre_eviction_filter(inst->state, ctx, pod);
}

static void native_destroy(struct ebb_plugin_inst *inst)
{
    if (inst->def->native.destroy && inst->state)
        inst->def->native.destroy(inst->state);
    inst->state = NULL;
}

/* A native plugin runs to the end (never waits), cannot be an evict
 * plugin, and is made anew on every reload. */
static const struct ebb_plugin_ops native_ops = {
    .name = "native",
    .create = native_create,
    .run = native_run,
    .check = native_check,
    .destroy = native_destroy,
};

/* ---- registry ----------------------------------------------------------- */

struct ebb_plugin_def *ebb__engine_find(const struct ebb_engine *e, const char *name)
{
    for (size_t i = 0; i < e->ndefs; i++)
        if (strcmp(e->defs[i]->name, name) == 0)
            return e->defs[i];
    return NULL;
}

/* Every plugin name a policy writes that the registry does not hold is
 * reported with this: the nearest registered name (built-in and script
 * plugins alike), when near enough to be a typo. Fills `buf` with
 * ": did you mean \"X\"?" or "" (never NULL). */
static const char *did_you_mean(const struct ebb_engine *e, const char *name, char *buf, size_t len)
{
    const char **names = malloc((e->ndefs + 1) * sizeof(*names));
    const char *near = NULL;

    buf[0] = '\0';
    if (names == NULL)
        return buf;
    for (size_t i = 0; i < e->ndefs; i++)
        names[i] = e->defs[i]->name;
    if ((near = ebb_nearest_name(name, names, e->ndefs)) != NULL)
        snprintf(buf, len, "; did you mean \"%s\"?", near);
    free(names);
    return buf;
}

bool ebb_engine_has_plugin(const struct ebb_engine *e, const char *name)
{
    return ebb__engine_find(e, name) != NULL;
}

bool ebb_engine_reads_object(const struct ebb_engine *e)
{
    return e->reads_object;
}

static int add_def(struct ebb_engine *e, struct ebb_plugin_def *d, struct ebb_error *err)
{
    struct ebb_plugin_def **v, *old = ebb__engine_find(e, d->name);

    if (old != NULL) {
        return ebb_error_set(err, EBB_EEXIST, d->path, 0, NULL,
                             "plugin \"%s\" is already registered%s%s", d->name,
                             old->path ? " by " : " (built in)", old->path ? old->path : "");
    }
    if ((v = realloc(e->defs, (e->ndefs + 1) * sizeof(*v))) == NULL)
        return EBB_ENOMEM;
    e->defs = v;
    v[e->ndefs++] = d;
    return 0;
}

int ebb_engine_register_native(struct ebb_engine *e, const struct ebb_native_plugin *p,
                               struct ebb_error *err)
{
    struct ebb_plugin_def *d;
    int rc;

    if (e == NULL || p == NULL || p->name == NULL || p->create == NULL)
        return ebb_error_set(err, EBB_EINVAL, NULL, 0, NULL, "a native plugin needs a name and create");
    if ((d = calloc(1, sizeof(*d))) == NULL || (d->name = strdup(p->name)) == NULL) {
        def_destroy(d);
        return EBB_ENOMEM;
    }
    d->type = EBB_PLUGIN_NATIVE;
    d->ops = &native_ops;
    d->native = *p;
    d->native.name = d->name;
    if (p->deschedule)
        d->exts |= 1u << EBB_EXT_DESCHEDULE;
    if (p->balance)
        d->exts |= 1u << EBB_EXT_BALANCE;
    if (p->filter)
        d->exts |= 1u << EBB_EXT_FILTER;
    if (p->pre_eviction_filter)
        d->exts |= 1u << EBB_EXT_PREEVICTIONFILTER;
    if ((rc = add_def(e, d, err)) != 0)
        def_destroy(d);
    return rc;
}


static const char *const ext_funcs[EBB_EXT_MAX] = {
    "deschedule", "balance", "filter", "preevictionfilter", "evict",
};

const char *ebb__ext_func(int ext)
{
    return ext >= 0 && ext < EBB_EXT_MAX ? ext_funcs[ext] : "?";
}

int ebb_engine_register_lua_file(struct ebb_engine *e, const char *path, struct ebb_error *err)
{
    struct ebb_plugin_def *d = NULL;
    int rc;

    if ((d = calloc(1, sizeof(*d))) == NULL)
        return EBB_ENOMEM;
    if (e->scripts == NULL) {
        free(d);
        return ebb_error_set(err, EBB_EINVAL, path, 0, NULL,
                             "this engine runs no plugin files (no script engine was given)");
    }
    d->type = EBB_PLUGIN_LUA;
    d->ops = e->scripts;
    if ((d->path = strdup(path)) == NULL) {
        rc = EBB_ENOMEM;
        goto fail;
    }
    if ((rc = ebb_file_read(path, EBB_MAX_SCRIPT, &d->source, &d->source_len, err)) != 0)
        goto fail;
    if ((rc = d->ops->define(e, d, err)) != 0 || (rc = add_def(e, d, err)) != 0)
        goto fail;
    return 0;
fail:
    def_destroy(d);
    return rc;
}

/* Plugin files: *.lua, not hidden (ConfigMap's ..data) nor _helpers. */
static bool plugin_file(const char *name)
{
    size_t len = strlen(name);
    return name[0] != '.' && name[0] != '_' && len >= 5 && strcmp(name + len - 4, ".lua") == 0;
}

int ebb_engine_register_lua_dir(struct ebb_engine *e, const char *dir, struct ebb_error *err)
{
    char **names, path[PATH_MAX], **dirs;
    size_t n;
    int rc;

    if ((rc = ebb_dir_names(dir, plugin_file, &names, &n, err)) != 0)
        return rc;
    /* modules a plugin requires resolve against its directory too */
    if ((dirs = realloc(e->policy_dirs, (e->npolicy_dirs + 2) * sizeof(*dirs))) == NULL) {
        rc = EBB_ENOMEM;
    } else {
        e->policy_dirs = dirs;
        if ((dirs[e->npolicy_dirs] = strdup(dir)) == NULL)
            rc = EBB_ENOMEM;
        else
            dirs[++e->npolicy_dirs] = NULL;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        rc = ebb_engine_register_lua_file(e, path, err);
    }
    ebb_names_free(names, n);
    return rc;
}

int ebb_engine_load_builtins(struct ebb_engine *e, struct ebb_error *err)
{
    char dir[PATH_MAX];
    int rc;

    if ((rc = ebb_engine_register_native(e, &ebb__default_evictor, err)) != 0 ||
        (rc = ebb_engine_register_native(e, &ebb__loopguard, err)) != 0)
        return rc;
    snprintf(dir, sizeof(dir), "%s/policies", e->home);
    return ebb_engine_register_lua_dir(e, dir, err);
}

/* ---- plugin instances --------------------------------------------------- */

int ebb__plugin_args_error(const struct ebb_policy *pol, const struct ebb_plugin_config *pc,
                           const char *path, const char *msg, struct ebb_error *err)
{
    char field[512];

    if (path != NULL && path[0] != '\0')
        snprintf(field, sizeof(field), "%s.args%s%s", pc->path, path[0] == '[' ? "" : ".", path);
    else
        snprintf(field, sizeof(field), "%s.args", pc->path);
    return ebb_error_set(err, EBB_ESCHEMA, pol->file,
                         ebb_val_line_for(pol->root, field) ? ebb_val_line_for(pol->root, field) : pc->line,
                         field, "%s: %s", pc->name, msg);
}

/* Create an instance of plugin `d` for `profile` with the args of `pc`. */
static int inst_create(struct ebb_engine *e, const struct ebb_policy *pol,
                       struct ebb_profile_inst *profile, struct ebb_plugin_def *d,
                       const struct ebb_plugin_config *pc, struct ebb_plugin_inst **out,
                       struct ebb_error *err)
{
    struct ebb_plugin_inst *inst = calloc(1, sizeof(*inst));
    int rc;

    if (inst == NULL)
        return EBB_ENOMEM;
    inst->def = d;
    inst->profile = profile;
    inst->pc = pc;
    inst->quarantine_after = pc && pc->limits.quarantine_after >= 0 ? (int)pc->limits.quarantine_after
                                                                      : e->quarantine_after;
    if ((rc = d->ops->create(e, pol, inst, err)) != 0) {
        inst_destroy(inst);
        return rc;
    }
    *out = inst;
    return 0;
}

/* ---- calls into plugins ------------------------------------------------- */

static void report(struct ebb_engine *e, struct ebb_plugin_inst *inst, const char *what,
                   const struct ebb_error *err)
{
    char msg[1200];

    snprintf(msg, sizeof(msg), "%s%s%s", what ? what : "", what ? ": " : "", err->msg);
    inst->run_failed = true;
    ebb_plan_add_error(&e->plan, inst->def->name, inst->profile->name, msg);
    ebb_log(EBB_LOG_ERROR, "plugin %s (profile %s) failed: %s", inst->def->name,
            inst->profile->name, msg);
}

/* An instance whose call ran past its time budget this cycle: its engine
 * (lua_plugin.c) has set it aside until the next one. */
static bool set_aside(const struct ebb_engine *e, const struct ebb_plugin_inst *inst)
{
    return inst->aside_cycle != 0 && inst->aside_cycle == e->cycle;
}

/* A filter or preEvictionFilter that cannot answer (it failed, or it is set
 * aside after running past its budget) answers as a failing filter does:
 * the pod is not evictable. Letting it through would evict pods the filter
 * was written to protect, on nobody's word; protecting them costs one cycle
 * of that plugin's evictions. The failure is reported once a cycle, and the
 * setting aside once: no more calls of the plugin this cycle, where each
 * pod cost a whole budget before. */
/* 1 evictable, 0 protected, -1 the plugin failed (it answers no) */
static int pod_check(struct ebb_plugin_inst *inst, int ext, struct ebb_ctx *ctx,
                     const struct ebb_pod *pod);

/* The observed pod (ebb_engine_observe): the check with its reason kept,
 * then told to the observer. What the plugin answers is not changed. */
static bool observed_check(struct ebb_plugin_inst *inst, int ext, struct ebb_ctx *ctx,
                           const struct ebb_pod *pod, int kind)
{
    struct ebb_engine *e = ctx->engine;
    struct ebb_observation o = { 0 };
    int rc;
    bool ok;

    e->observe_why[0] = '\0';
    e->explaining = true;
    rc = pod_check(inst, ext, ctx, pod);
    ok = rc > 0;
    e->explaining = false;
    o.kind = kind;
    o.profile = ctx->profile->name;
    o.plugin = inst->def->name;
    o.caller = kind == EBB_OBSERVE_CHECK && ctx->plugin ? ctx->plugin->def->name : NULL;
    o.ext = ext;
    o.verdict = rc;
    o.evicting = e->evicting;
    o.detail = e->observe_why;
    if (!ok && e->evicting) {
        e->observe_refuser = inst->def->name;
        snprintf(e->observe_detail, sizeof(e->observe_detail), "%s", e->observe_why);
    }
    e->observe(e->observe_ud, &o);
    return ok;
}

bool ebb__plugin_pod_check(struct ebb_plugin_inst *inst, int ext, struct ebb_ctx *ctx,
                           const struct ebb_pod *pod)
{
    if (ctx->engine->observe_pod == pod)
        return observed_check(inst, ext, ctx, pod, EBB_OBSERVE_CHECK);
    return pod_check(inst, ext, ctx, pod) > 0;
}

static int pod_check(struct ebb_plugin_inst *inst, int ext, struct ebb_ctx *ctx,
                     const struct ebb_pod *pod)
{
    struct ebb_ctx sub = { ctx->engine, ctx->profile, inst, ext, ctx->plugin };
    struct ebb_error err = { 0 };
    int rc;

    if (set_aside(ctx->engine, inst))
        return -1;
    if ((rc = inst->def->ops->check(&sub, pod, &err)) >= 0)
        return rc > 0;
    if (set_aside(ctx->engine, inst)) {
        char what[160];
        snprintf(what, sizeof(what), "%s (set aside for the rest of the cycle: it answers no for "
                 "every pod, none is evicted on its word)", ext_funcs[ext]);
        report(ctx->engine, inst, what, &err);
    } else if (inst->reported_cycle != ctx->engine->cycle) {
        inst->reported_cycle = ctx->engine->cycle;
        report(ctx->engine, inst, ext_funcs[ext], &err);
    }
    if (ctx->engine->explaining)
        ebb_ctx_say_why(ctx, "%s failed: %s", ext_funcs[ext], err.msg);
    return -1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A deschedule/balance run is over: time it, and count it towards (or out
 * of) quarantine. A plugin that failed quarantine_after runs in a row is
 * skipped for 1, 2, 4 ... up to EBB_QUARANTINE_MAX_CYCLES cycles; the run
 * after that is its trial: a success clears everything. Filters are not
 * quarantined: a failing filter already protects every pod (one that runs
 * past its budget is set aside for the rest of its cycle only). */
static void end_run(struct ebb_engine *e, struct ebb_plugin_inst *inst, uint64_t t0)
{
    inst->last_ns = now_ns() - t0;
    inst->total_ns += inst->last_ns;
    if (!inst->run_failed) {
        if (inst->quarantines > 0)
            ebb_log(EBB_LOG_INFO, "plugin %s (profile %s) ran cleanly again: out of quarantine",
                    inst->def->name, inst->profile->name);
        inst->failures = inst->quarantines = 0;
        return;
    }
    inst->run_failed = false;
    inst->failures++;
    if (inst->quarantine_after > 0 && inst->failures >= inst->quarantine_after) {
        int skip = inst->quarantines >= 5 ? EBB_QUARANTINE_MAX_CYCLES : 1 << inst->quarantines;
        char msg[256];
        if (skip > EBB_QUARANTINE_MAX_CYCLES)
            skip = EBB_QUARANTINE_MAX_CYCLES;
        inst->quarantines++;
        inst->quarantined_until = e->cycle + skip;
        snprintf(msg, sizeof(msg), "quarantined: failed %d run%s in a row; skipped for the next %d "
                 "cycle%s, then tried again", inst->failures, inst->failures == 1 ? "" : "s", skip,
                 skip == 1 ? "" : "s");
        ebb_plan_add_note(&e->plan, inst->def->name, inst->profile->name, NULL, msg);
        ebb_log(EBB_LOG_ERROR, "plugin %s (profile %s) %s", inst->def->name, inst->profile->name, msg);
    }
}

/* A deschedule/balance run failed: reported with, for a plugin that has
 * other extension points, whether it is set aside for the rest of the
 * cycle (they are not called either). */
static void report_run(struct ebb_engine *e, struct ebb_plugin_inst *inst, int ext,
                       const struct ebb_error *err)
{
    bool others = (inst->def->exts & ~(1u << ext)) != 0;

    report(e, inst, others && set_aside(e, inst) ? "set aside for the rest of the cycle" : NULL,
           err);
}

static bool quarantined(const struct ebb_engine *e, const struct ebb_plugin_inst *inst)
{
    return inst->quarantines > 0 && e->cycle <= inst->quarantined_until;
}

/* Run one deschedule/balance plugin. Returns 0 when it is done, or
 * EBB_CYCLE_WAITING when its coroutine waits for an eviction's answer. */
static int start_plugin(struct ebb_engine *e, struct ebb_profile_inst *profile,
                        struct ebb_plugin_inst *inst, int ext)
{
    struct ebb_error err = { 0 };
    uint64_t t0 = now_ns();
    int rc;

    /* set aside this cycle by a call of its own that ran past the budget
     * (its filter's, or its deschedule's before its balance): reported
     * and counted when that call failed */
    if (set_aside(e, inst))
        return 0;
    if (quarantined(e, inst)) {
        if (inst->reported_skip != e->cycle) {
            char msg[128];
            inst->reported_skip = e->cycle;
            snprintf(msg, sizeof(msg), "skipped: quarantined through cycle %d", inst->quarantined_until);
            ebb_plan_add_note(&e->plan, inst->def->name, profile->name, NULL, msg);
        }
        return 0;
    }
    inst->run_failed = false;
    e->waiting_ctx = (struct ebb_ctx){ e, profile, inst, ext, NULL };
    if (e->run_mask)
        rc = inst->def->ops->run(&e->waiting_ctx, e->focus_nodes, e->nfocus_nodes, &err);
    else
        rc = inst->def->ops->run(&e->waiting_ctx, e->cycle_nodes, e->ncycle_nodes, &err);
    if (rc == EBB_CYCLE_WAITING) {
        e->waiting = inst;
        e->waiting_t0 = t0;
        return EBB_CYCLE_WAITING;
    }
    if (rc != 0)
        report_run(e, inst, ext, &err);
    end_run(e, inst, t0);
    return 0;
}

size_t ebb_engine_plugin_times(const struct ebb_engine *e, struct ebb_plugin_time *out, size_t max)
{
    size_t k = 0;

    for (size_t p = 0; p < e->nprofiles; p++) {
        const struct ebb_profile_inst *pr = e->profiles[p];
        for (size_t i = 0; i < pr->ninsts; i++) {
            const struct ebb_plugin_inst *inst = pr->insts[i];
            if (!(inst->def->exts & ((1u << EBB_EXT_DESCHEDULE) | (1u << EBB_EXT_BALANCE))))
                continue;
            if (k < max)
                out[k] = (struct ebb_plugin_time){ pr->name, inst->def->name, inst->last_ns,
                                                   inst->total_ns, inst->failures,
                                                   inst->quarantines > 0 &&
                                                       e->cycle < inst->quarantined_until,
                                                   inst->def->ops->memory_used
                                                       ? inst->def->ops->memory_used(inst) : 0 };
            k++;
        }
    }
    return k;
}

/* ---- policy ------------------------------------------------------------- */

static int add_inst(struct ebb_profile_inst *p, struct ebb_plugin_inst *inst)
{
    struct ebb_plugin_inst **v = realloc(p->insts, (p->ninsts + 1) * sizeof(*v));
    if (v == NULL)
        return EBB_ENOMEM;
    p->insts = v;
    v[p->ninsts++] = inst;
    return 0;
}

static struct ebb_plugin_inst *find_inst(struct ebb_profile_inst *p, const char *name)
{
    for (size_t i = 0; i < p->ninsts; i++)
        if (strcmp(p->insts[i]->def->name, name) == 0)
            return p->insts[i];
    return NULL;
}

static int build_profile(struct ebb_engine *e, const struct ebb_policy *pol,
                         const struct ebb_profile *pr, struct ebb_profile_inst **out,
                         struct ebb_error *err)
{
    struct ebb_profile_inst *p = calloc(1, sizeof(*p));
    int rc = 0;

    if (p == NULL || (p->name = strdup(pr->name)) == NULL) {
        profile_destroy(p);
        return EBB_ENOMEM;
    }
    /* Every plugin named in an extension point must exist and implement it. */
    for (int x = 0; x < EBB_EXT_MAX; x++) {
        const struct ebb_plugin_set *set = &pr->sets[x];
        for (size_t i = 0; i < set->n; i++) {
            struct ebb_plugin_def *d = ebb__engine_find(e, set->v[i].name);
            char field[160];
            snprintf(field, sizeof(field), "%s.plugins.%s.enabled[%zu]", pr->path, ebb_ext_name(x), i);
            if (d == NULL || !(d->exts & (1u << x))) {
                char hint[200];
                rc = d == NULL
                    ? ebb_error_set(err, EBB_ENOENT, pol->file, set->v[i].line, field,
                                    "profile \"%s\" configures %s extension point of "
                                    "non-existing plugins: [%s] (no built-in plugin or "
                                    "Lua file in the policy directories has that name%s)",
                                    pr->name, ebb_ext_name(x), set->v[i].name,
                                    did_you_mean(e, set->v[i].name, hint, sizeof(hint)))
                    : ebb_error_set(err, EBB_ENOENT, pol->file, set->v[i].line, field,
                                    "profile \"%s\" configures %s extension point of "
                                    "non-existing plugins: [%s] (the plugin does not "
                                    "implement %s)",
                                    pr->name, ebb_ext_name(x), set->v[i].name, ebb_ext_name(x));
                goto fail;
            }
        }
    }
    /* One instance per distinct plugin, in first-seen order. */
    for (int x = 0; x < EBB_EXT_MAX; x++) {
        const struct ebb_plugin_set *set = &pr->sets[x];
        if (set->n && (p->set[x] = calloc(set->n, sizeof(*p->set[x]))) == NULL) {
            rc = EBB_ENOMEM;
            goto fail;
        }
        for (size_t i = 0; i < set->n; i++) {
            struct ebb_plugin_inst *inst = find_inst(p, set->v[i].name);
            if (inst == NULL) {
                struct ebb_plugin_def *d = ebb__engine_find(e, set->v[i].name);
                const struct ebb_plugin_config *pc = ebb_profile_config(pr, d->name);
                if (pc == NULL) {
                    rc = ebb_error_set(err, EBB_ESCHEMA, pol->file, set->v[i].line, pr->path,
                                       "unable to find \"%s\" plugin config", d->name);
                    goto fail;
                }
                if ((rc = inst_create(e, pol, p, d, pc, &inst, err)) != 0)
                    goto fail;
                if ((rc = add_inst(p, inst)) != 0) {
                    inst_destroy(inst);
                    goto fail;
                }
            }
            p->set[x][p->nset[x]++] = inst;
        }
    }
    /* pluginConfig entries for plugins no extension point enables are still
     * checked, as upstream validates every entry. */
    for (size_t i = 0; i < pr->nconfigs; i++) {
        const struct ebb_plugin_config *pc = &pr->configs[i];
        struct ebb_plugin_def *d;
        struct ebb_plugin_inst *tmp = NULL;
        if (find_inst(p, pc->name))
            continue;
        if ((d = ebb__engine_find(e, pc->name)) == NULL) {
            char hint[200];
            rc = ebb_error_set(err, EBB_ENOENT, pol->file, pc->line, pc->path,
                               "unknown plugin \"%s\" in pluginConfig%s", pc->name,
                               did_you_mean(e, pc->name, hint, sizeof(hint)));
            goto fail;
        }
        if ((rc = inst_create(e, pol, p, d, pc, &tmp, err)) != 0)
            goto fail;
        inst_destroy(tmp);
    }
    *out = p;
    return 0;
fail:
    profile_destroy(p);
    return rc;
}

int ebb_engine_set_policy(struct ebb_engine *e, struct ebb_policy *policy, struct ebb_error *err)
{
    struct ebb_profile_inst **profiles;
    int rc = 0;
    size_t n = 0;

    if (e == NULL || policy == NULL)
        return EBB_EINVAL;
    ebb__prom_forget(e);   /* the queries were the old policy's */
    if ((profiles = calloc(policy->nprofiles + 1, sizeof(*profiles))) == NULL)
        return EBB_ENOMEM;
    for (; n < policy->nprofiles; n++)
        if ((rc = build_profile(e, policy, &policy->profiles[n], &profiles[n], err)) != 0)
            break;
    if (rc != 0) {
        for (size_t i = 0; i < n; i++)
            profile_destroy(profiles[i]);
        free(profiles);
        return rc;
    }
    for (size_t i = 0; i < e->nprofiles; i++)
        profile_destroy(e->profiles[i]);
    free(e->profiles);
    ebb_policy_free(e->policy);
    e->profiles = profiles;
    e->nprofiles = n;
    e->policy = policy;
    e->evictor.max_per_node = policy->max_per_node;
    e->evictor.max_per_namespace = policy->max_per_namespace;
    e->evictor.max_total = policy->max_total;
    return 0;
}

/* ---- generations -------------------------------------------------------- */

/* The same plugin in the same state of mind: the same source, the same
 * modules from the policy directories, the same args. */
static bool same_plugin(const struct ebb_plugin_inst *a, const struct ebb_plugin_inst *b)
{
    const struct ebb_plugin_def *da = a->def, *db = b->def;

    if (da->ops != db->ops || da->ops->unchanged == NULL || strcmp(da->name, db->name) != 0)
        return false;
    if (!ebb_val_equal(a->pc ? a->pc->args : NULL, b->pc ? b->pc->args : NULL))
        return false;
    return da->ops->unchanged(a, b);
}

static struct ebb_profile_inst *find_profile(struct ebb_engine *e, const char *name)
{
    for (size_t i = 0; i < e->nprofiles; i++)
        if (strcmp(e->profiles[i]->name, name) == 0)
            return e->profiles[i];
    return NULL;
}

static void replace_inst(struct ebb_profile_inst *p, struct ebb_plugin_inst *was,
                         struct ebb_plugin_inst *now)
{
    for (size_t i = 0; i < p->ninsts; i++)
        if (p->insts[i] == was)
            p->insts[i] = now;
    for (int x = 0; x < EBB_EXT_MAX; x++)
        for (size_t i = 0; i < p->nset[x]; i++)
            if (p->set[x][i] == was)
                p->set[x][i] = now;
}

static void own_insts(struct ebb_engine *e)
{
    for (size_t p = 0; p < e->nprofiles; p++) {
        for (size_t i = 0; i < e->profiles[p]->ninsts; i++) {
            struct ebb_plugin_inst *inst = e->profiles[p]->insts[i];
            if (inst->def->ops->adopt != NULL)
                inst->def->ops->adopt(inst, NULL, e);
        }
    }
}

#define SWAP(a, b) do { __typeof__(a) t_ = (a); (a) = (b); (b) = t_; } while (0)

int ebb_engine_adopt(struct ebb_engine *e, struct ebb_engine *from, size_t *kept)
{
    size_t nkept = 0;

    if (e == NULL || from == NULL || from->policy == NULL)
        return EBB_EINVAL;
    if (e->cycle_active || from->cycle_active)
        return EBB_ESTATE;
    /* Instances that did not change keep running, ctx.state and all: the
     * old one moves into the new profile, the new one (made only to check
     * it) leaves with the old generation. */
    for (size_t p = 0; p < from->nprofiles; p++) {
        struct ebb_profile_inst *np = from->profiles[p], *op = find_profile(e, np->name);
        for (size_t i = 0; op != NULL && i < np->ninsts; i++) {
            struct ebb_plugin_inst *ni = np->insts[i], *oi = find_inst(op, ni->def->name);
            struct ebb_plugin_def *od;
            if (oi == NULL || !same_plugin(oi, ni))
                continue;
            replace_inst(np, ni, oi);
            replace_inst(op, oi, ni);
            od = oi->def;
            oi->def = ni->def;
            ni->def = od;
            oi->profile = np;
            ni->profile = op;
            SWAP(oi->pc, ni->pc);
            /* the new limits apply to the instance kept */
            oi->def->ops->adopt(oi, ni, e);
            oi->quarantine_after = ni->quarantine_after;
            nkept++;
        }
    }
    SWAP(e->defs, from->defs);
    SWAP(e->ndefs, from->ndefs);
    SWAP(e->policy_dirs, from->policy_dirs);
    SWAP(e->npolicy_dirs, from->npolicy_dirs);
    SWAP(e->policy, from->policy);
    SWAP(e->profiles, from->profiles);
    SWAP(e->nprofiles, from->nprofiles);
    SWAP(e->reads_object, from->reads_object);   /* the new scripts' (kept ones parsed there too) */
    own_insts(e);
    own_insts(from);
    e->evictor.max_per_node = e->policy->max_per_node;
    e->evictor.max_per_namespace = e->policy->max_per_namespace;
    e->evictor.max_total = e->policy->max_total;
    if (kept != NULL)
        *kept = nkept;
    return 0;
}

size_t ebb_engine_plugin_count(const struct ebb_engine *e)
{
    size_t n = 0;
    for (size_t p = 0; p < e->nprofiles; p++)
        n += e->profiles[p]->ninsts;
    return n;
}

/* ---- the cycle ---------------------------------------------------------- */

/* The cycle's nodes and, for a triggered run, those among them that
 * changed (focus_nodes). */
static int select_nodes(struct ebb_engine *e)
{
    struct ebb_selector *sel = NULL;
    struct ebb_node *const *all;
    struct ebb_node **v;
    uint32_t n;

    if (e->policy->node_selector && e->policy->node_selector[0] &&
        ebb_selector_parse(e->policy->node_selector, &sel, NULL) != 0)
        return EBB_ESCHEMA;   /* checked when the policy was loaded */
    all = ebb_cache_nodes_sorted(e->cache, &n);
    if ((v = realloc(e->cycle_nodes, (n + 1) * sizeof(*v))) == NULL) {
        ebb_selector_free(sel);
        return EBB_ENOMEM;
    }
    e->cycle_nodes = v;
    if ((v = realloc(e->focus_nodes, (n + 1) * sizeof(*v))) == NULL) {
        ebb_selector_free(sel);
        return EBB_ENOMEM;
    }
    e->focus_nodes = v;
    e->ncycle_nodes = e->nfocus_nodes = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!all[i]->ready || !ebb_selector_matches(sel, &all[i]->labels))
            continue;
        e->cycle_nodes[e->ncycle_nodes++] = all[i];
        for (size_t k = 0; k < e->nrun_nodes; k++) {
            if (strcmp(e->run_nodes[k], all[i]->name) == 0) {
                e->focus_nodes[e->nfocus_nodes++] = all[i];
                break;
            }
        }
    }
    ebb_selector_free(sel);
    return 0;
}

/* The plugins of the cycle, from where it stopped. */
static void cycle_finish(struct ebb_engine *e)
{
    ebb_plan_snapshot_nodes(&e->plan, e->cache, false);
    if (e->mode == EBB_MODE_DRY_RUN) {
        /* nothing happened: the next cycle sees every pod again */
        ebb_cache_unhide_all(e->cache);
        ebb__evictor_forget_pdbs(&e->evictor);
    }
    e->cycle_active = false;
}

static int cycle_advance(struct ebb_engine *e)
{
    for (; e->cycle_ext <= EBB_EXT_BALANCE; e->cycle_ext++, e->cycle_profile = 0) {
        for (; e->cycle_profile < e->nprofiles; e->cycle_profile++, e->cycle_index = 0) {
            struct ebb_profile_inst *pr = e->profiles[e->cycle_profile];
            for (; e->cycle_index < pr->nset[e->cycle_ext]; e->cycle_index++) {
                struct ebb_plugin_inst *inst = pr->set[e->cycle_ext][e->cycle_index];
                if (e->run_mask != 0 && !(inst->def->triggers & e->run_mask))
                    continue;   /* a triggered run: not one of this change's plugins */
                if (start_plugin(e, pr, inst, e->cycle_ext) == EBB_CYCLE_WAITING)
                    return EBB_CYCLE_WAITING;
            }
        }
    }
    cycle_finish(e);
    return 0;
}

unsigned ebb_engine_triggers(const struct ebb_engine *e)
{
    unsigned m = 0;

    for (size_t p = 0; e && p < e->nprofiles; p++)
        for (int x = EBB_EXT_DESCHEDULE; x <= EBB_EXT_BALANCE; x++)
            for (size_t i = 0; i < e->profiles[p]->nset[x]; i++)
                m |= e->profiles[p]->set[x][i]->def->triggers;
    return m;
}

static int cycle_begin(struct ebb_engine *e);

int ebb_engine_trigger_begin(struct ebb_engine *e, unsigned mask, const char *const *nodes,
                             size_t n)
{
    int rc;

    if (e == NULL || mask == 0)
        return EBB_EINVAL;
    e->run_mask = mask;
    e->run_nodes = nodes;
    e->nrun_nodes = n;
    rc = cycle_begin(e);
    e->run_nodes = NULL;   /* the names are the caller's: used by begin only */
    e->nrun_nodes = 0;
    return rc;
}

int ebb_engine_cycle_begin(struct ebb_engine *e)
{
    if (e == NULL)
        return EBB_ESTATE;
    e->run_mask = 0;
    e->run_nodes = NULL;
    e->nrun_nodes = 0;
    return cycle_begin(e);
}

/* The observed pod at the cycle's start: every filter and preEvictionFilter
 * plugin of every profile asked about it alone (the profile ANDs them and
 * stops at the first no), as a strategy listing candidates asks. A veto
 * in it records nothing (e->sweeping). */
static void sweep(struct ebb_engine *e)
{
    static const int exts[2] = { EBB_EXT_FILTER, EBB_EXT_PREEVICTIONFILTER };

    e->sweeping = true;
    for (size_t p = 0; p < e->nprofiles; p++) {
        struct ebb_profile_inst *pr = e->profiles[p];
        struct ebb_ctx ctx = { e, pr, NULL, EBB_EXT_FILTER, NULL };
        for (int x = 0; x < 2; x++)
            for (size_t i = 0; i < pr->nset[exts[x]]; i++)
                observed_check(pr->set[exts[x]][i], exts[x], &ctx, e->observe_pod,
                               EBB_OBSERVE_VERDICT);
    }
    e->sweeping = false;
    e->veto = 0;
}

void ebb_engine_observe(struct ebb_engine *e, const struct ebb_pod *pod, ebb_observe_fn fn,
                        void *ud)
{
    e->observe_pod = fn != NULL ? pod : NULL;
    e->observe = fn;
    e->observe_ud = ud;
}

bool ebb_ctx_explaining(const struct ebb_ctx *ctx)
{
    return ctx->engine->explaining;
}

void ebb_ctx_say_why(struct ebb_ctx *ctx, const char *fmt, ...)
{
    struct ebb_engine *e = ctx->engine;
    size_t n;
    va_list ap;

    if (!e->explaining)
        return;
    /* several reasons (upstream lists every check that fails): ", "-joined */
    n = strlen(e->observe_why);
    if (n > 0 && n + 2 < sizeof(e->observe_why)) {
        memcpy(e->observe_why + n, ", ", 3);
        n += 2;
    }
    if (n + 1 >= sizeof(e->observe_why))
        return;
    va_start(ap, fmt);
    vsnprintf(e->observe_why + n, sizeof(e->observe_why) - n, fmt, ap);
    va_end(ap);
}

static int cycle_begin(struct ebb_engine *e)
{
    int rc;

    if (e == NULL || e->policy == NULL || e->cache == NULL || e->cycle_active)
        return EBB_ESTATE;
    /* What a simulated cycle evicted leaves the cache before the next one
     * (a live cache loses pods through its watch instead). */
    if (e->mode == EBB_MODE_SIMULATE)
        ebb_cache_purge_hidden(e->cache);
    if ((rc = select_nodes(e)) != 0)
        return rc;
    if (e->run_mask != 0 && e->nfocus_nodes == 0)
        return 0;   /* the nodes that changed are not the policy's: nothing to run */
    e->cycle++;
    e->plan.cycles = e->cycle;
    ebb__evictor_reset(&e->evictor);
    if (e->memory != NULL)
        ebb_evmem_prune(e->memory, ebb__engine_now(e));
    ebb__background_cycle(e);
    if (e->cycle == 1 || e->plan.nnodes == 0)
        ebb_plan_snapshot_nodes(&e->plan, e->cache, true);
    if (e->ncycle_nodes < 2) {
        char why[128];
        snprintf(why, sizeof(why), "requires >=2 nodes: %zu ready node%s match%s the policy",
                 e->ncycle_nodes, e->ncycle_nodes == 1 ? "" : "s", e->ncycle_nodes == 1 ? "es" : "");
        ebb_plan_add_skip(&e->plan, why);
        ebb_log(EBB_LOG_INFO, "skipping descheduling cycle: %s", why);
        ebb_plan_snapshot_nodes(&e->plan, e->cache, false);
        return 0;
    }
    for (size_t p = 0; p < e->nprofiles; p++) {
        struct ebb_profile_inst *pr = e->profiles[p];
        for (size_t i = 0; i < pr->ninsts; i++) {
            struct ebb_plugin_inst *inst = pr->insts[i];
            struct ebb_ctx ctx = { e, pr, inst, EBB_EXT_DESCHEDULE, NULL };
            struct ebb_error err = { 0 };
            if (inst->def->type == EBB_PLUGIN_NATIVE && inst->def->native.cycle_begin &&
                inst->def->native.cycle_begin(inst->state, &ctx, &err) != 0)
                report(e, inst, NULL, &err);
        }
    }
    if (e->observe_pod != NULL)
        sweep(e);
    e->cycle_active = true;
    e->cycle_ext = EBB_EXT_DESCHEDULE;
    e->cycle_profile = e->cycle_index = 0;
    e->waiting = NULL;
    e->answer_ready = false;
    return cycle_advance(e);
}

int ebb_engine_cycle_resume(struct ebb_engine *e)
{
    struct ebb_plugin_inst *inst = e->waiting;
    struct ebb_error err = { 0 };
    int rc;

    if (!e->cycle_active)
        return EBB_ESTATE;
    if (inst == NULL)
        return cycle_advance(e);
    if (!e->answer_ready)
        return EBB_CYCLE_WAITING;
    rc = inst->def->ops->resume(&e->waiting_ctx, &err);
    if (rc == EBB_CYCLE_WAITING)
        return EBB_CYCLE_WAITING;
    e->waiting = NULL;
    if (rc != 0)
        report_run(e, inst, e->waiting_ctx.ext, &err);
    end_run(e, inst, e->waiting_t0);
    e->cycle_index++;
    return cycle_advance(e);
}

bool ebb_engine_cycle_active(const struct ebb_engine *e)
{
    return e->cycle_active;
}

bool ebb_engine_cycle_ready(const struct ebb_engine *e)
{
    return e->cycle_active && (e->waiting == NULL || e->answer_ready);
}

int ebb_engine_run_cycle(struct ebb_engine *e)
{
    int rc = ebb_engine_cycle_begin(e);

    if (rc == EBB_CYCLE_WAITING) {
        /* only live engines wait; they drive cycles with begin/resume */
        ebb_log(EBB_LOG_ERROR, "a cycle waits for the API but nothing will answer");
        return EBB_ESTATE;
    }
    return rc;
}

/* ---- the Prometheus provider's side of the engine --------------------------- */

/* How a plugin's query is answered in a cycle (ebb_engine_set_prom), the
 * answer a waiting plugin gets, and the queries the policy's plugins
 * declare, each asked through its engine's prom_queries operation. */
void ebb_engine_set_prom(struct ebb_engine *e, ebb_prom_start_fn fn, void *ud)
{
    e->prom_start = fn;
    e->prom_ud = ud;
}

void ebb_engine_prom_answer(struct ebb_engine *e, struct ebb_prom_result *r)
{
    ebb_prom_result_free(e->prom_answer);
    e->prom_answer = r;
    e->answer_ready = true;
}

int ebb__engine_prom_query_add(struct ebb_engine *e, const char *q)
{
    char **v;

    for (size_t i = 0; i < e->nprom_queries; i++)
        if (strcmp(e->prom_queries[i], q) == 0)
            return 0;
    if ((v = realloc(e->prom_queries, (e->nprom_queries + 1) * sizeof(*v))) == NULL)
        return EBB_ENOMEM;
    e->prom_queries = v;
    if ((v[e->nprom_queries] = strdup(q)) == NULL)
        return EBB_ENOMEM;
    e->nprom_queries++;
    return 0;
}

size_t ebb_engine_prom_queries(const struct ebb_engine *ce, const char *const **out)
{
    struct ebb_engine *e = (struct ebb_engine *)ce;   /* the list is filled once, lazily */

    if (!e->prom_queries_known) {
        for (size_t p = 0; p < e->nprofiles; p++)
            for (size_t i = 0; i < e->profiles[p]->ninsts; i++)
                if (e->profiles[p]->insts[i]->def->ops->prom_queries != NULL)
                    e->profiles[p]->insts[i]->def->ops->prom_queries(e, e->profiles[p]->insts[i]);
        e->prom_queries_known = true;
    }
    *out = (const char *const *)e->prom_queries;
    return e->nprom_queries;
}
