/* LoopGuard: the built-in plugin that stops eviction loops (issue 18). A
 * native filter and preEvictionFilter, enabled like DefaultEvictor:
 *
 * - filter, workload cooldown: a workload (ebb/evmemory.h's key: a
 *   ReplicaSet's Deployment, a StatefulSet, a CronJob...) evicted in an
 *   earlier cycle rests for `cooldown`, doubled for every other cycle it
 *   was evicted in within `cooldownWindow`, at most `maxCooldown`; and
 *   `maxCooldown` at once when the memory shows a loop: a replacement that
 *   landed back on the node its predecessor left (EBB_EVMEM_BOUNCED), or a
 *   replacement the same plugin now evicts again.
 * - filter, availability: no pod of a workload goes while as many of its
 *   pods as `maxUnavailablePerWorkload` allows are already down (not
 *   Running and Ready, or evicted in this cycle), PDB or not; Koordinator's
 *   default rule when unset: 1 below 4 replicas, 2 up to 10, 10% (rounded
 *   up) above.
 * - preEvictionFilter, bounce prediction (not for the `restartPlugins`,
 *   whose reason to evict is the pod's age, restarts or failure, which its
 *   replacement does not have): the engine's predictor (the
 *   kube-scheduler model, wired by cmd/) places the replacement on the
 *   cluster as it will be; the eviction is futile when it lands on the node
 *   the pod leaves, or on a node the same plugin of the same profile
 *   evicted from in this cycle or the one before (a node it drains, and so
 *   would select again next cycle), or, for the plugins that drain the
 *   busiest nodes (LowNodeUtilization, LowNodeLoad), on a node that would
 *   then be at least as busy (requests, the busier of cpu and memory, in
 *   percent of allocatable) as the node it leaves is now.
 *
 * LoopGuard answers only when a plugin asks to evict a pod (the evictor's
 * own check); while a strategy lists its candidates it says yes. So the
 * strategies choose as they would without it, LoopGuard vetoes evictions,
 * and the bounce prediction runs once per eviction asked, not per pod
 * listed. Each refusal goes into the plan once per pod and cycle, with the
 * plugin that asked and a reason (futile, cooldown, unavailable) that says
 * where and why. Engine thread only; the state is per profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/argdec.h"
#include "ebb/evmemory.h"
#include "core/engine.h"

#define LG_COOLDOWN (10 * 60)
#define LG_MAX_COOLDOWN (24 * 3600)
#define LG_WINDOW (3600)
#define LG_FIND_MAX 64

struct loopguard {
    int64_t cooldown, max_cooldown, window;     /* seconds */
    bool has_max_unavailable;
    int64_t max_unavailable;                    /* a count, or ... */
    bool max_unavailable_percent;               /* ... a percentage of replicas */
    bool bounce;                                /* bouncePrediction */
    /* PodLifeTime, RemovePodsHavingTooManyRestarts, RemoveFailedPods and
     * the args' restartPlugins: plugins that evict a pod for what it is (its
     * age, its restarts, its failure), not for where it runs: their
     * replacements are fresh pods they do not pick again wherever they
     * land, so no prediction is asked for their evictions */
    size_t nrestart;
    char **restart;
    /* per cycle */
    int cycle;
    int64_t cycle_start, prev_cycle_start;      /* the clock at this cycle and the last */
    const struct ebb_cache *cache;
    uint64_t cache_version;
    struct ebb_map down;                        /* (owner uid) -> pods not Running and Ready */
    bool down_known;
    struct ebb_map refused;                     /* (pod uid) -> 1: in the plan this cycle */
    /* the memory's entries of this cycle per (namespace, workload name),
     * counted as they come (the memory only grows during a cycle): a kind
     * sharing a name with another in one namespace counts with it, which
     * holds back more, never less */
    struct ebb_map gone;                        /* -> count, keys the memory's */
    size_t mcursor;                             /* entries counted so far */
};

static void lg_destroy(void *state)
{
    struct loopguard *g = state;

    if (g == NULL)
        return;
    ebb__counts_free(&g->down);
    ebb__counts_free(&g->refused);
    ebb__map_free(&g->gone);
    for (size_t i = 0; i < g->nrestart; i++)
        free(g->restart[i]);
    free(g->restart);
    free(g);
}

static const char *const restart_default[] = {
    "PodLifeTime", "RemovePodsHavingTooManyRestarts", "RemoveFailedPods",
};

static int restart_arg(struct loopguard *g, const struct ebb_val *args, struct ebb_error *err)
{
    const struct ebb_val *list = NULL;
    size_t n;
    int rc;

    if (args != NULL && (rc = ebb__args_strs(args, "restartPlugins", "", &list, err)) != 0)
        return rc;
    /* the upstream ones always, then the args' (a policy's own scripts) */
    n = EBB_ARRAY_LEN(restart_default) + (list ? list->u.seq.n : 0);
    if ((g->restart = calloc(n + 1, sizeof(*g->restart))) == NULL)
        return EBB_ENOMEM;
    for (size_t k = 0; k < n; k++) {
        size_t i = k - EBB_ARRAY_LEN(restart_default);
        const char *s = k < EBB_ARRAY_LEN(restart_default) ? restart_default[k]
                                                           : list->u.seq.items[i]->u.str.s;
        if (s[0] == '\0') {
            char f[64];
            return ebb_error_set(err, EBB_ESCHEMA, NULL, list->u.seq.items[i]->line,
                                 ebb__args_index(f, sizeof(f), "restartPlugins", i),
                                 "a plugin name must not be empty");
        }
        if ((g->restart[k] = strdup(s)) == NULL)
            return EBB_ENOMEM;
        g->nrestart++;
    }
    return 0;
}

static bool restarts(const struct loopguard *g, const char *plugin)
{
    for (size_t i = 0; plugin != NULL && i < g->nrestart; i++)
        if (strcmp(g->restart[i], plugin) == 0)
            return true;
    return false;
}

static int duration_arg(const struct ebb_val *args, const char *key, int64_t *out,
                        struct ebb_error *err)
{
    const char *s = NULL;
    bool has = false;
    int64_t ns;
    int rc;

    if ((rc = ebb__args_str(args, key, "", &s, &has, err)) != 0 || !has)
        return rc;
    if (ebb_duration_parse(s, &ns) != 0 || ns <= 0)
        return ebb_error_set(err, EBB_ESCHEMA, NULL, ebb_val_get(args, key)->line, key,
                             "\"%s\" is not a positive duration (e.g. \"10m\", \"1h30m\")", s);
    *out = ns / 1000000000 + (ns % 1000000000 > 0);
    return 0;
}

/* maxUnavailablePerWorkload: an integer or "N%" (intstr.IntOrString). */
static int max_unavailable_arg(struct loopguard *g, const struct ebb_val *args,
                               struct ebb_error *err)
{
    const struct ebb_val *v = ebb__val_at(args, "maxUnavailablePerWorkload");
    const char *key = "maxUnavailablePerWorkload";
    char *end;
    long pct;

    if (v == NULL)
        return 0;
    g->has_max_unavailable = true;
    if (v->type == EBB_VAL_STRING) {
        const char *s = v->u.str.s;
        size_t n = strlen(s);
        pct = strtol(s, &end, 10);
        if (n < 2 || s[n - 1] != '%' || end != s + n - 1 || pct < 1 || pct > 100)
            return ebb_error_set(err, EBB_ESCHEMA, NULL, v->line, key,
                                 "invalid value for IntOrString: invalid type: string is not a "
                                 "percentage: \"%s\" (expected an integer >= 1 or \"1%%\".."
                                 "\"100%%\")", s);
        g->max_unavailable = pct;
        g->max_unavailable_percent = true;
        return 0;
    }
    if (ebb__val_int(v, &g->max_unavailable) != 0)
        return ebb__args_type_error(v, key, "an integer or a percentage", err);
    if (g->max_unavailable < 1)
        return ebb_error_set(err, EBB_ESCHEMA, NULL, v->line, key,
                             "maxUnavailablePerWorkload must be at least 1 (0 would stop every "
                             "eviction: leave LoopGuard out of the profile instead), got %lld",
                             (long long)g->max_unavailable);
    return 0;
}

static int lg_create(const struct ebb_val *args, void **state, struct ebb_error *err)
{
    static const char *const known[] = {
        "cooldown", "maxCooldown", "cooldownWindow", "maxUnavailablePerWorkload",
        "bouncePrediction", "restartPlugins", NULL,
    };
    struct loopguard *g = calloc(1, sizeof(*g));
    bool has = false;
    int rc;

    if (g == NULL)
        return EBB_ENOMEM;
    g->cooldown = LG_COOLDOWN;
    g->max_cooldown = LG_MAX_COOLDOWN;
    g->window = LG_WINDOW;
    g->bounce = true;
    if (args != NULL &&
        ((rc = ebb__args_keys(args, "", known, err)) != 0 ||
         (rc = duration_arg(args, "cooldown", &g->cooldown, err)) != 0 ||
         (rc = duration_arg(args, "maxCooldown", &g->max_cooldown, err)) != 0 ||
         (rc = duration_arg(args, "cooldownWindow", &g->window, err)) != 0 ||
         (rc = max_unavailable_arg(g, args, err)) != 0 ||
         (rc = ebb__args_bool(args, "bouncePrediction", "", &g->bounce, &has, err)) != 0))
        goto fail;
    if ((rc = restart_arg(g, args, err)) != 0)
        goto fail;
    if (g->max_cooldown < g->cooldown) {
        rc = ebb_error_set(err, EBB_ESCHEMA, NULL, ebb_val_get(args, "maxCooldown")
                           ? ebb_val_get(args, "maxCooldown")->line : 0, "maxCooldown",
                           "maxCooldown (%llds) must not be shorter than cooldown (%llds)",
                           (long long)g->max_cooldown, (long long)g->cooldown);
        goto fail;
    }
    *state = g;
    return 0;
fail:
    lg_destroy(g);
    return rc;
}

static int lg_cycle_begin(void *state, struct ebb_ctx *ctx, struct ebb_error *err)
{
    struct loopguard *g = state;
    int64_t now = ebb_ctx_now(ctx);

    (void)err;
    g->prev_cycle_start = g->cycle > 0 ? g->cycle_start : now;
    g->cycle_start = now;
    g->cycle = ctx->engine->cycle;
    g->down_known = false;
    ebb__counts_free(&g->down);
    ebb__counts_free(&g->refused);
    ebb__map_free(&g->gone);
    g->mcursor = ctx->engine->memory ? ctx->engine->memory->n : 0;
    return 0;
}

/* Pods of (ns, workload) evicted in this cycle, from the memory. */
static int64_t gone_in_cycle(struct loopguard *g, const struct ebb_evmem *m, ebb_str ns,
                             ebb_str workload)
{
    if (g->mcursor > m->n) {
        ebb__map_free(&g->gone);
        g->mcursor = 0;
    }
    for (; g->mcursor < m->n; g->mcursor++) {
        const struct ebb_evmem_entry *e = &m->v[g->mcursor];
        uintptr_t n;
        if (e->at < g->cycle_start)
            continue;
        n = (uintptr_t)ebb__map_get(&g->gone, e->ns, e->workload);
        if (ebb__map_put(&g->gone, e->ns, e->workload, (void *)(n + 1), NULL) != 0)
            break;   /* out of memory: counted next time */
    }
    return (int64_t)(uintptr_t)ebb__map_get(&g->gone, ns, workload);
}

/* "1h30m", "10m", "45s" */
static const char *dur_text(char *buf, size_t len, int64_t s)
{
    if (s >= 3600 && s % 3600 == 0)
        snprintf(buf, len, "%lldh", (long long)(s / 3600));
    else if (s >= 3600)
        snprintf(buf, len, "%lldh%lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else if (s >= 60 && s % 60 == 0)
        snprintf(buf, len, "%lldm", (long long)(s / 60));
    else if (s >= 60)
        snprintf(buf, len, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
    else
        snprintf(buf, len, "%llds", (long long)s);
    return buf;
}

static void veto(struct loopguard *g, struct ebb_ctx *ctx, const struct ebb_pod *pod, int why,
                 const char *detail)
{
    bool first = pod->uid == NULL || ebb__count_get(&g->refused, pod->uid) == 0;

    if (first && pod->uid != NULL)
        ebb__count_add(&g->refused, pod->uid, 1);
    ebb__ctx_veto(ctx, pod, why, detail, first);
}

static const char *asker(const struct ebb_ctx *ctx)
{
    return ctx->caller ? ctx->caller->def->name : NULL;
}

/* ---- cooldown ----------------------------------------------------------------- */

static bool cooled(struct loopguard *g, struct ebb_ctx *ctx, const struct ebb_pod *pod,
                   ebb_str kind, ebb_str name)
{
    struct ebb_evmem *m = ctx->engine->memory;
    const struct ebb_evmem_entry *ent[LG_FIND_MAX];
    int64_t now = ebb_ctx_now(ctx), last = EBB_TIME_NONE, since, cd, prev_at = EBB_TIME_NONE;
    const struct ebb_evmem_entry *oldest = NULL;
    const char *plugin = asker(ctx), *loop = NULL;
    const struct ebb_evmem_entry *looped = NULL;
    size_t n, rounds = 0;
    char detail[700], a[32], b[32], c[32], d[32];

    since = now - (g->max_cooldown > g->window ? g->max_cooldown : g->window);
    /* the entries before this cycle (this cycle's are staged work, held by
     * availability), newest first: past them by a binary search, as the
     * memory is ordered by time */
    {
        size_t lo = 0, hi = m->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (m->v[mid].at < g->cycle_start)
                lo = mid + 1;
            else
                hi = mid;
        }
        n = 0;
        for (size_t i = lo; i-- > 0 && m->v[i].at >= since && n < LG_FIND_MAX;)
            if (m->v[i].ns == pod->ns && m->v[i].kind == kind && m->v[i].workload == name)
                ent[n++] = &m->v[i];
    }
    for (size_t i = 0; i < n; i++) {
        const struct ebb_evmem_entry *e = ent[i];
        if (last == EBB_TIME_NONE)
            last = e->at;
        oldest = e;
        if (e->at >= now - g->window && e->at != prev_at)
            rounds++;
        prev_at = e->at;
        if (looped == NULL && (e->flags & EBB_EVMEM_BOUNCED)) {
            looped = e;
            loop = "landed back on the node its predecessor left";
        } else if (looped == NULL && e->replacement == pod->name && plugin != NULL &&
                   e->plugin != NULL && strcmp(e->plugin, plugin) == 0) {
            looped = e;
            loop = "is the replacement of a pod the same plugin evicted";
        }
    }
    if (last == EBB_TIME_NONE)
        return false;
    /* A pod older than the workload's evictions is staged work (a PDB
     * letting one go per cycle, a drain): the cooldown is for the pods that
     * came since, replacements or a rollout's, that a loop would take. */
    if (looped == NULL && !ebb_evmem_pod_after(oldest, pod))
        return false;
    if (looped != NULL) {
        cd = g->max_cooldown;
        if (now - looped->at >= cd)
            return false;
        snprintf(detail, sizeof(detail),
                 "LoopGuard: %s %s/%s is in a loop: pod %s/%s evicted from %s by %s %s ago, its "
                 "replacement %s %s; cooldown at its maximum %s, %s left",
                 kind, pod->ns, name, looped->ns, looped->pod, looped->node ? looped->node : "-",
                 looped->plugin ? looped->plugin : "-", dur_text(a, sizeof(a), now - looped->at),
                 looped->replacement ? looped->replacement : "", loop,
                 dur_text(b, sizeof(b), cd), dur_text(c, sizeof(c), cd - (now - looped->at)));
        veto(g, ctx, pod, EBB_WHY_COOLDOWN, detail);
        return true;
    }
    cd = g->cooldown;
    for (size_t r = 1; r < rounds && cd < g->max_cooldown; r++)
        cd *= 2;
    if (cd > g->max_cooldown)
        cd = g->max_cooldown;
    if (now - last >= cd)
        return false;
    snprintf(detail, sizeof(detail),
             "LoopGuard: %s %s/%s was evicted %s ago (in %zu cycle%s within %s): cooldown %s, %s "
             "left",
             kind, pod->ns, name, dur_text(a, sizeof(a), now - last), rounds ? rounds : 1,
             rounds == 1 ? "" : "s", dur_text(b, sizeof(b), g->window), dur_text(c, sizeof(c), cd),
             dur_text(d, sizeof(d), cd - (now - last)));
    veto(g, ctx, pod, EBB_WHY_COOLDOWN, detail);
    return true;
}

/* ---- availability ------------------------------------------------------------- */

static const struct ebb_owner *controller(const struct ebb_pod *p)
{
    for (uint16_t i = 0; i < p->nowners; i++)
        if (p->owners[i].controller && p->owners[i].uid != NULL)
            return &p->owners[i];
    return NULL;
}

static bool available(const struct ebb_pod *p)
{
    return p->phase == EBB_PHASE_RUNNING && (p->flags & EBB_POD_READY) &&
           !(p->flags & (EBB_POD_TERMINATING | EBB_POD_GONE));
}

/* Pods not available per controller, as the cycle found them (those it
 * evicts are counted from the memory as it goes). */
static void count_down(struct loopguard *g, struct ebb_cache *c)
{
    uint32_t slots = ebb_cache_pod_slots(c);

    ebb__counts_free(&g->down);
    for (uint32_t i = 0; i < slots; i++) {
        const struct ebb_pod *p = ebb_cache_pod_at(c, i);
        const struct ebb_owner *o;
        if (p == NULL || (p->flags & EBB_POD_GONE) || available(p) ||
            p->phase == EBB_PHASE_SUCCEEDED || p->phase == EBB_PHASE_FAILED ||
            (o = controller(p)) == NULL)
            continue;
        ebb__count_add(&g->down, o->uid, 1);
    }
    g->down_known = true;
    g->cache = c;
}

static int64_t replicas_of(struct ebb_cache *c, const struct ebb_pod *p, const struct ebb_owner *o)
{
    static const struct { const char *kind; int k; } kinds[] = {
        { "ReplicaSet", EBB_KIND_REPLICA_SET },
        { "StatefulSet", EBB_KIND_STATEFUL_SET },
        { "ReplicationController", EBB_KIND_REPLICATION_CONTROLLER },
    };
    for (size_t i = 0; i < EBB_ARRAY_LEN(kinds); i++) {
        if (strcmp(o->kind, kinds[i].kind) != 0)
            continue;
        const struct ebb_workload *w = ebb_cache_workload(c, kinds[i].k, p->ns, o->name);
        if (w != NULL && w->replicas >= 0)
            return w->replicas;
    }
    /* a Job, a DaemonSet, an owner the cache lacks: the pods it has now */
    return ebb_cache_count_owned(c, o->uid);
}

/* Koordinator's maxUnavailablePerWorkload default, or the args'. */
static int64_t allowed_down(const struct loopguard *g, int64_t replicas)
{
    if (g->has_max_unavailable && !g->max_unavailable_percent)
        return g->max_unavailable;
    if (g->has_max_unavailable)
        return (replicas * g->max_unavailable + 99) / 100;
    if (replicas > 10)
        return (replicas * 10 + 99) / 100;
    return replicas >= 4 ? 2 : 1;
}

static bool unavailable(struct loopguard *g, struct ebb_ctx *ctx, const struct ebb_pod *pod,
                        ebb_str kind, ebb_str name)
{
    struct ebb_cache *c = ebb_ctx_cache(ctx);
    struct ebb_evmem *m = ctx->engine->memory;
    const struct ebb_owner *o = controller(pod);
    int64_t replicas, allowed, down, gone = 0;
    char detail[600];

    if (o == NULL || !available(pod))
        return false;   /* a bare pod is its own; a pod down already costs nothing */
    if (!g->down_known || g->cache != c)
        count_down(g, c);
    replicas = replicas_of(c, pod, o);
    allowed = allowed_down(g, replicas > 0 ? replicas : 1);
    if (m != NULL)
        gone = gone_in_cycle(g, m, pod->ns, name);
    down = ebb__count_get(&g->down, o->uid) + gone;
    if (down < allowed)
        return false;
    snprintf(detail, sizeof(detail),
             "LoopGuard: %s %s/%s has %lld of %lld pods unavailable (%lld evicted in this cycle), "
             "at most %lld allowed (maxUnavailablePerWorkload%s)",
             kind, pod->ns, name, (long long)down, (long long)replicas, (long long)gone,
             (long long)allowed, g->has_max_unavailable ? "" : " default: 1 below 4 replicas, 2 up "
             "to 10, 10% above");
    veto(g, ctx, pod, EBB_WHY_UNAVAILABLE, detail);
    return true;
}

static bool lg_filter(void *state, struct ebb_ctx *ctx, const struct ebb_pod *pod)
{
    struct loopguard *g = state;
    ebb_str kind = NULL, name = NULL;
    bool refuse = false;

    if (!ctx->engine->evicting)
        return true;
    if (g->cycle != ctx->engine->cycle)
        lg_cycle_begin(g, ctx, NULL);   /* a policy bound since the cycle began */
    if (ebb_evmem_workload_of(ebb_ctx_cache(ctx), pod, &kind, &name) != 0)
        return true;   /* out of memory: nothing to hold the pod back with */
    refuse = (ctx->engine->memory != NULL && cooled(g, ctx, pod, kind, name)) ||
             unavailable(g, ctx, pod, kind, name);
    ebb_str_release(kind);
    ebb_str_release(name);
    return !refuse;
}

/* ---- bounce prediction ---------------------------------------------------------- */

/* The same plugin of the same profile evicted from `node` in this cycle or
 * the one before: how many times (0: none). */
static size_t drained_by(const struct loopguard *g, struct ebb_ctx *ctx, ebb_str node)
{
    const struct ebb_evmem *m = ctx->engine->memory;
    const char *plugin = asker(ctx), *profile = ctx->profile->name;
    size_t n = 0;

    if (m == NULL || plugin == NULL)
        return 0;
    for (size_t i = m->n; i-- > 0;) {
        const struct ebb_evmem_entry *e = &m->v[i];
        if (e->at < g->prev_cycle_start)
            break;
        if (e->node == node && e->plugin != NULL && strcmp(e->plugin, plugin) == 0 &&
            e->profile != NULL && strcmp(e->profile, profile) == 0)
            n++;
    }
    return n;
}

/* The busier of cpu and memory requests of `node`, in percent of its
 * allocatable, with `add`'s requests on it too (NULL: none); -1 unknown. */
static double busy(struct ebb_cache *c, ebb_str node, const struct ebb_pod *add)
{
    const struct ebb_node *n = ebb_cache_node(c, node);
    const struct ebb_podvec *pv = ebb_cache_pods_on_node(c, node);
    static const int res[2] = { EBB_RES_CPU, EBB_RES_MEMORY };
    double most = -1;

    if (n == NULL)
        return -1;
    for (int k = 0; k < 2; k++) {
        int64_t alloc = ebb_res_get(&n->allocatable, res[k]);
        double used = (double)pv->req[res[k]] + (add ? (double)ebb_res_get(&add->requests, res[k]) : 0);
        if (alloc > 0 && 100.0 * used / (double)alloc > most)
            most = 100.0 * used / (double)alloc;
    }
    return most;
}

/* The plugins that drain the busiest nodes toward the others. */
static bool balances(const char *plugin)
{
    return plugin != NULL &&
           (strcmp(plugin, "LowNodeUtilization") == 0 || strcmp(plugin, "LowNodeLoad") == 0);
}

static bool lg_pre_eviction_filter(void *state, struct ebb_ctx *ctx, const struct ebb_pod *pod)
{
    struct loopguard *g = state;
    struct ebb_engine *e = ctx->engine;
    struct ebb_prediction pr = { .status = EBB_PREDICT_GONE };
    char detail[700];
    size_t drained;

    if (!e->evicting || !g->bounce || e->predict == NULL || pod->node == NULL ||
        restarts(g, asker(ctx)))
        return true;
    if (g->cycle != e->cycle)
        lg_cycle_begin(g, ctx, NULL);
    /* the pod is the cache's: the predictor hides it for a moment */
    if (e->predict(e->predict_ud, e, (struct ebb_pod *)(uintptr_t)pod, &pr) != 0 ||
        pr.status != EBB_PREDICT_PLACED || pr.node == NULL)
        return true;   /* unknown, or nothing lands: not a bounce */
    if (pr.node == pod->node) {
        snprintf(detail, sizeof(detail),
                 "LoopGuard: its replacement would land back on %s, the node it leaves (the "
                 "scheduler model's choice with the pod and this cycle's evictions gone)",
                 pr.node);
        veto(g, ctx, pod, EBB_WHY_FUTILE, detail);
        return false;
    }
    if ((drained = drained_by(g, ctx, pr.node)) > 0) {
        snprintf(detail, sizeof(detail),
                 "LoopGuard: its replacement would land on %s, a node %s took %zu pod%s off in "
                 "this cycle or the last: it would select it there again",
                 pr.node, asker(ctx), drained, drained == 1 ? "" : "s");
        veto(g, ctx, pod, EBB_WHY_FUTILE, detail);
        return false;
    }
    if (balances(asker(ctx))) {
        /* a balancing plugin picks the busiest nodes: one the replacement
         * leaves at least as busy as the node it left is one it picks next */
        struct ebb_cache *c = ebb_ctx_cache(ctx);
        double from = busy(c, pod->node, NULL), to = busy(c, pr.node, pod);
        if (from >= 0 && to >= from) {
            snprintf(detail, sizeof(detail),
                     "LoopGuard: its replacement would land on %s, which would then be as busy as "
                     "%s is now (%.0f%% against %.0f%% of allocatable, the busier of cpu and "
                     "memory requests): %s would select it there again",
                     pr.node, pod->node, to, from, asker(ctx));
            veto(g, ctx, pod, EBB_WHY_FUTILE, detail);
            return false;
        }
    }
    return true;
}

const struct ebb_native_plugin ebb__loopguard = {
    .name = "LoopGuard",
    .create = lg_create,
    .destroy = lg_destroy,
    .cycle_begin = lg_cycle_begin,
    .filter = lg_filter,
    .pre_eviction_filter = lg_pre_eviction_filter,
};
