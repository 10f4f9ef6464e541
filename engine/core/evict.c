/* The evictor: the core's last word on every eviction a plugin asks for.
 * It re-checks the profile's filters, the per-cycle limits (total, then
 * node, then namespace, as upstream) and, when simulating, the pod's
 * PodDisruptionBudget as the API server would; then it records the eviction
 * in the plan and hides the pod for the rest of the cycle.
 *
 * A profile may name an evict plugin (plugins.evict, Koordinator's custom
 * Evictor): the same checks run first, then the plugin chooses what to do
 * with the pod (its engine's evict operation) and that request takes the Eviction API's
 * place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/evmemory.h"
#include "core/engine.h"

static int refuse(struct ebb_ctx *ctx, const struct ebb_pod *pod, int why, const char *detail);

const char *ebb_why_name(int why)
{
    static const char *const names[] = {
        "ok", "filtered", "node-limit", "namespace-limit", "total-limit", "pdb", "api-error",
        "not-found", "evictor", "background", "futile", "cooldown", "unavailable",
    };
    return why >= 0 && why < EBB_WHY_MAX ? names[why] : "unknown";
}

void ebb__evictor_init(struct ebb_evictor *ev)
{
    memset(ev, 0, sizeof(*ev));
    ev->max_per_node = ev->max_per_namespace = ev->max_total = EBB_UNLIMITED;
}

void ebb__evictor_reset(struct ebb_evictor *ev)
{
    ev->total = 0;
    ebb__counts_free(&ev->per_node);
    ebb__counts_free(&ev->per_ns);
}

void ebb__evictor_forget_pdbs(struct ebb_evictor *ev)
{
    ebb__pdb_state_free(&ev->pdb_state);
}

void ebb__evictor_free(struct ebb_evictor *ev)
{
    ebb__evictor_reset(ev);
    ebb__evictor_forget_pdbs(ev);
}

uint32_t ebb__evictor_node_count(const struct ebb_evictor *ev, ebb_str node)
{
    return ebb__count_get(&ev->per_node, node);
}

/* The limits count this cycle's evictions and, as upstream, the evictions
 * in background still going (EvictionsInBackground). */
bool ebb__evictor_total_full(const struct ebb_engine *e)
{
    const struct ebb_evictor *ev = &e->evictor;

    return ev->max_total != EBB_UNLIMITED &&
           ev->total + ebb_background_count(e->background) >= (uint64_t)ev->max_total;
}

bool ebb__evictor_node_full(const struct ebb_engine *e, ebb_str node)
{
    const struct ebb_evictor *ev = &e->evictor;

    uint64_t n = ebb__count_get(&ev->per_node, node);

    n += ebb_background_on_node(e->background, node);
    return node != NULL && ev->max_per_node != EBB_UNLIMITED && n >= (uint64_t)ev->max_per_node;
}

static bool namespace_full(const struct ebb_engine *e, ebb_str ns)
{
    const struct ebb_evictor *ev = &e->evictor;

    uint64_t n = ebb__count_get(&ev->per_ns, ns);

    n += ebb_background_in_namespace(e->background, ns);
    return ev->max_per_namespace != EBB_UNLIMITED && n >= (uint64_t)ev->max_per_namespace;
}

/* ---- evictions in background ---------------------------------------------------- */

static void seed_one(void *obj, void *ud)
{
    struct ebb_pod *pod = obj;
    ebb_background_observe(ud, pod->ns, pod->name, pod, NULL, NULL);
}

void ebb__background_cycle(struct ebb_engine *e)
{
    if (e->background == NULL)
        return;
    /* what the cache held before the first cycle, as upstream's informer
     * handlers see every pod listed; the watch brings the rest */
    if (!e->background_seeded && e->cache != NULL) {
        ebb_cache_each(e->cache, EBB_KIND_POD, seed_one, e->background);
        e->background_seeded = true;
    }
    ebb_background_expire(e->background, ebb__engine_now(e));
}

/* How long after an eviction a new pod of the workload is taken for its
 * replacement. */
#define LANDING_HORIZON 3600

/* A bound pod the watch brought: when it is new (created within the
 * horizon) and its workload has an eviction since which no replacement
 * landed, it is the replacement of the oldest such one (a controller
 * recreates in order): the memory learns where it landed (a bounce when on
 * the node that pod left). */
static void memory_landed(struct ebb_engine *e, const struct ebb_pod *p)
{
    struct ebb_evmem *m = e->memory;
    int64_t now = ebb__engine_now(e);
    const struct ebb_evmem_entry *same = NULL, *oldest = NULL;
    bool taken = false;
    ebb_str kind, workload;

    if (m == NULL || m->n == 0 || p == NULL || p->node == NULL || p->created == EBB_TIME_NONE ||
        p->created < now - LANDING_HORIZON || (p->flags & (EBB_POD_GONE | EBB_POD_TERMINATING)) ||
        p->nowners == 0)
        return;
    if (ebb_evmem_workload_of(e->cache, p, &kind, &workload) != 0)
        return;
    for (size_t i = m->n; i-- > 0 && m->v[i].at >= now - LANDING_HORIZON && !taken;) {
        const struct ebb_evmem_entry *x = &m->v[i];
        if (x->ns != p->ns || x->kind != kind || x->workload != workload)
            continue;
        if (x->replacement == p->name && (x->flags & EBB_EVMEM_LANDED))
            taken = true;   /* this pod was taken for one already */
        else if (x->pod == p->name)
            /* a StatefulSet's pod comes back under its name: that eviction */
            same = same ? same : (!(x->flags & EBB_EVMEM_LANDED) && x->uid != p->uid ? x : NULL);
        else if (!(x->flags & EBB_EVMEM_LANDED) && ebb_evmem_pod_after(x, p))
            oldest = x;   /* older ones come later: the oldest wins */
    }
    if (!taken && (same != NULL || oldest != NULL))
        ebb_evmem_landed(m, same ? same->ns : oldest->ns, same ? same->pod : oldest->pod, p->name,
                         p->node);
    ebb_str_release(kind);
    ebb_str_release(workload);
}

void ebb_engine_pod_changed(struct ebb_engine *e, ebb_str ns, ebb_str name)
{
    if (e == NULL || e->cache == NULL)
        return;
    if (e->memory != NULL && e->mode == EBB_MODE_LIVE)
        memory_landed(e, ebb_cache_pod(e->cache, ns, name));
    if (e->background == NULL)
        return;
    ebb_background_observe(e->background, ns, name, ebb_cache_pod(e->cache, ns, name),
                           e->background_done, e->background_done_ud);
}

void ebb_engine_on_background_done(struct ebb_engine *e, ebb_background_done_fn fn, void *ud)
{
    e->background_done = fn;
    e->background_done_ud = ud;
}

bool ebb_engine_eviction_in_background(const struct ebb_engine *e, const struct ebb_eviction *ev,
                                       int status, const char *message)
{
    return e != NULL && e->background != NULL && ev->evict_only && ev->method == NULL &&
           status == 429 && message != NULL && strstr(message, EBB_EVICTION_IN_BACKGROUND_TEXT);
}

/* The profile's evict plugin, or NULL: the Eviction API. */
static struct ebb_plugin_inst *evict_plugin(const struct ebb_profile_inst *pr)
{
    return pr->nset[EBB_EXT_EVICT] > 0 ? pr->set[EBB_EXT_EVICT][0] : NULL;
}

bool ebb_ctx_filter(struct ebb_ctx *ctx, const struct ebb_pod *pod)
{
    struct ebb_profile_inst *pr = ctx->profile;
    struct ebb_plugin_inst *evp;

    for (size_t i = 0; i < pr->nset[EBB_EXT_FILTER]; i++)
        if (!ebb__plugin_pod_check(pr->set[EBB_EXT_FILTER][i], EBB_EXT_FILTER, ctx, pod))
            return false;
    /* The evict plugin's own filter is the Evictor's Filter: it applies
     * on top of the filter plugins, listed among them or not. */
    if ((evp = evict_plugin(pr)) == NULL || !(evp->def->exts & (1u << EBB_EXT_FILTER)))
        return true;
    for (size_t i = 0; i < pr->nset[EBB_EXT_FILTER]; i++)
        if (pr->set[EBB_EXT_FILTER][i] == evp)
            return true;
    return ebb__plugin_pod_check(evp, EBB_EXT_FILTER, ctx, pod);
}

bool ebb_ctx_pre_eviction_filter(struct ebb_ctx *ctx, const struct ebb_pod *pod)
{
    struct ebb_profile_inst *pr = ctx->profile;

    for (size_t i = 0; i < pr->nset[EBB_EXT_PREEVICTIONFILTER]; i++)
        if (!ebb__plugin_pod_check(pr->set[EBB_EXT_PREEVICTIONFILTER][i],
                                   EBB_EXT_PREEVICTIONFILTER, ctx, pod))
            return false;
    return true;
}

struct ebb_cache *ebb_ctx_cache(struct ebb_ctx *ctx)
{
    return ctx->engine->cache;
}

int64_t ebb_ctx_now(const struct ebb_ctx *ctx)
{
    return ebb__engine_now(ctx->engine);
}

const char *ebb_ctx_profile(const struct ebb_ctx *ctx)
{
    return ctx->profile ? ctx->profile->name : NULL;
}

int ebb_ctx_evict(struct ebb_ctx *ctx, struct ebb_pod *pod, const char *reason)
{
    ebb_str r = ebb_str_cstr(reason);
    int why = ebb__evict(ctx, pod, r, NULL, 0, NULL);

    ebb_str_release(r);
    return why == EBB_WHY_PENDING ? EBB_WHY_OK : why;
}

void ebb_engine_set_evictor(struct ebb_engine *e, ebb_evict_start_fn start, void *ud)
{
    e->evict_start = start;
    e->evict_ud = ud;
}

void ebb_engine_set_eviction_allowed(struct ebb_engine *e, bool allowed)
{
    e->evictions_allowed = allowed;
}

size_t ebb_engine_evictions_inflight(const struct ebb_engine *e)
{
    return e->inflight;
}

/* An eviction made: into the memory, when there is one. `kind`/`workload`
 * (may be NULL) are the pod's top-level workload, worked out from `pod`
 * when NULL (a pod gone since: itself). A memory out of memory loses the
 * entry, not the eviction: it is logged. */
static void remember(struct ebb_engine *e, const struct ebb_pod *pod, ebb_str ns, ebb_str name,
                     ebb_str uid, ebb_str node, ebb_str plugin, ebb_str profile, ebb_str kind,
                     ebb_str workload)
{
    struct ebb_evmem_entry ent = { 0 };
    ebb_str k = NULL, w = NULL;

    if (e->memory == NULL)
        return;
    if (kind == NULL && pod != NULL && ebb_evmem_workload_of(e->cache, pod, &k, &w) == 0)
        kind = k, workload = w;
    if (kind == NULL) {
        k = ebb_str_cstr("Pod"), w = ebb_str_ref(name);
        kind = k, workload = w;
    }
    ent.at = ebb__engine_now(e);
    ent.ns = ns, ent.pod = name, ent.uid = uid, ent.node = node;
    ent.plugin = plugin, ent.profile = profile;
    ent.kind = kind, ent.workload = workload;
    if (kind != NULL && workload != NULL)
        ebb_evmem_find_peers(e->memory, &ent, e->cache, pod);
    if (kind == NULL || workload == NULL || ebb_evmem_add(e->memory, &ent) != 0)
        ebb_log(EBB_LOG_WARN, "pod %s/%s: out of memory: the eviction is not remembered", ns, name);
    for (uint8_t i = 0; i < ent.npeers; i++)
        ebb_str_release(ent.peers[i]);
    ebb_str_release(k);
    ebb_str_release(w);
}

static void eviction_free(struct ebb_eviction *ev)
{
    ebb_str_release(ev->ns);
    ebb_str_release(ev->name);
    ebb_str_release(ev->uid);
    ebb_str_release(ev->node);
    ebb_str_release(ev->plugin);
    ebb_str_release(ev->profile);
    ebb_str_release(ev->reason);
    ebb_str_release(ev->evictor);
    ebb_str_release(ev->workload_kind);
    ebb_str_release(ev->workload);
    free(ev->path);
    free(ev->body);
    free(ev->action);
    free(ev);
}

void ebb__evict_action_free(struct ebb_evict_action *a)
{
    free(a->path);
    free(a->body);
    free(a->text);
    a->path = a->body = a->text = NULL;
}

/* Live: the limits were reserved when the request went out (so concurrent
 * requests cannot overshoot them); a failure gives the reservation back. */
void ebb_engine_eviction_done(struct ebb_engine *e, struct ebb_eviction *ev, int why,
                              const char *detail)
{
    struct ebb_evictor *evr = &e->evictor;
    char key[512];
    struct ebb_pod *p;

    if (e->inflight > 0)
        e->inflight--;
    snprintf(key, sizeof(key), "%s/%s", ev->ns, ev->name);
    p = e->cache ? ebb_cache_pod_at(e->cache, ev->pod_slot) : NULL;
    if (p != NULL && p->serial != ev->pod_serial)
        p = NULL;
    if (why == EBB_WHY_OK) {
        ebb_plan_add_eviction_str(&e->plan, key, ev->node, ev->plugin, ev->profile, ev->reason);
        if (ev->action != NULL)
            ebb_plan_set_action(&e->plan, ev->action, ev->body);
        remember(e, p, ev->ns, ev->name, ev->uid, ev->node, ev->plugin, ev->profile,
                 ev->workload_kind, ev->workload);
        if (p != NULL)
            ebb_cache_hide_pod(e->cache, p);
    } else {
        /* in background, the pod counts among those evictions instead */
        if (evr->total > 0)
            evr->total--;
        ebb__count_add(&evr->per_node, ev->node, -1);
        ebb__count_add(&evr->per_ns, ev->ns, -1);
        if (why != EBB_WHY_BACKGROUND)
            ebb_plan_add_refusal(&e->plan, key, ev->node, ev->plugin, ev->profile,
                                 ebb_why_name(why), detail);
        else if (p != NULL && (p->phase == EBB_PHASE_SUCCEEDED || p->phase == EBB_PHASE_FAILED))
            /* a pod that ended meanwhile is not waited for */
            ebb_log(EBB_LOG_DEBUG, "pod %s: eviction in background of a finished pod ignored", key);
        else if (ebb_background_assume(e->background, ev->ns, ev->name, ev->uid, ev->node, p,
                                       ev->profile, ev->plugin, ebb__engine_now(e)) == 0) {
            ebb_plan_add_refusal(&e->plan, key, ev->node, ev->plugin, ev->profile,
                                 ebb_why_name(why), detail);
            /* the API accepted it: the pod goes, in its own time */
            remember(e, p, ev->ns, ev->name, ev->uid, ev->node, ev->plugin, ev->profile,
                     ev->workload_kind, ev->workload);
        } else
            why = EBB_WHY_API_ERROR;
    }
    if (ev->lua_waiting) {
        e->answer_ready = true;
        e->answer_why = why == EBB_WHY_BACKGROUND ? EBB_WHY_OK : why;
        snprintf(e->answer_detail, sizeof(e->answer_detail), "%s", detail ? detail : "");
    }
    eviction_free(ev);
}

/* `act` (may be NULL): an evict plugin's request; its strings move to the
 * eviction. */
static int send_live(struct ebb_ctx *ctx, struct ebb_pod *pod, ebb_str reason,
                     struct ebb_evict_action *act, struct ebb_eviction **pending)
{
    struct ebb_engine *e = ctx->engine;
    struct ebb_eviction *ev;
    int rc;

    if (!e->evictions_allowed)
        return refuse(ctx, pod, EBB_WHY_API_ERROR, "evictions are stopped (shutting down or "
                                                   "not the leader)");
    if (e->evict_start == NULL)
        return refuse(ctx, pod, EBB_WHY_API_ERROR, "no API client");
    if ((ev = calloc(1, sizeof(*ev))) == NULL)
        return refuse(ctx, pod, EBB_WHY_API_ERROR, "out of memory");
    ev->ns = ebb_str_ref(pod->ns);
    ev->name = ebb_str_ref(pod->name);
    ev->uid = ebb_str_ref(pod->uid);
    ev->node = ebb_str_ref(pod->node);
    ev->plugin = ebb_str_cstr(ctx->plugin ? ctx->plugin->def->name : NULL);
    ev->profile = ebb_str_cstr(ctx->profile->name);
    ev->reason = ebb_str_ref(reason);
    ev->grace_period = e->policy && e->policy->has_grace_period ? e->policy->grace_period_seconds : -1;
    ev->pod_slot = pod->slot;
    ev->pod_serial = pod->serial;
    /* the key now: the pod may be gone from the cache when the API answers */
    if (e->memory != NULL &&
        ebb_evmem_workload_of(e->cache, pod, &ev->workload_kind, &ev->workload) != 0) {
        eviction_free(ev);
        return refuse(ctx, pod, EBB_WHY_API_ERROR, "out of memory");
    }
    ev->evict_only = act == NULL && e->background != NULL &&
                     ebb_background_annotated(pod, EBB_ANNOTATION_REQUEST_EVICT_ONLY);
    if (act != NULL) {
        ev->evictor = ebb_str_cstr(evict_plugin(ctx->profile)->def->name);
        ev->method = act->method;
        ev->content_type = act->content_type;
        ev->path = act->path;
        ev->body = act->body;
        ev->action = act->text;
        if (act->method == NULL)
            ev->grace_period = act->grace_period;
        act->path = act->body = act->text = NULL;
    }
    e->evictor.total++;
    ebb__count_add(&e->evictor.per_node, pod->node, 1);
    ebb__count_add(&e->evictor.per_ns, pod->ns, 1);
    e->inflight++;
    if ((rc = e->evict_start(e->evict_ud, ev)) != 0) {
        e->inflight--;
        e->evictor.total--;
        ebb__count_add(&e->evictor.per_node, pod->node, -1);
        ebb__count_add(&e->evictor.per_ns, pod->ns, -1);
        eviction_free(ev);
        return refuse(ctx, pod, rc, "the request could not be sent");
    }
    if (pending)
        *pending = ev;
    return EBB_WHY_PENDING;
}

void ebb__ctx_veto(struct ebb_ctx *ctx, const struct ebb_pod *pod, int why, const char *detail,
                   bool record)
{
    struct ebb_plugin_inst *who = ctx->caller ? ctx->caller : ctx->plugin;
    char key[512];

    if (ctx->engine->explaining)
        ebb_ctx_say_why(ctx, "%s", detail ? detail : ebb_why_name(why));
    if (ctx->engine->sweeping)
        return;   /* ebb explain's look at the filters: nothing to record */
    ctx->engine->veto = why;
    if (record)
        ebb_plan_add_refusal(&ctx->engine->plan, ebb_pod_key(pod, key, sizeof(key)), pod->node,
                             who ? who->def->name : NULL, ctx->profile->name, ebb_why_name(why),
                             detail);
}

static int refuse(struct ebb_ctx *ctx, const struct ebb_pod *pod, int why, const char *detail)
{
    char key[512];

    if (ctx->engine->observe_pod == pod && detail != NULL)
        snprintf(ctx->engine->observe_detail, sizeof(ctx->engine->observe_detail), "%s", detail);
    ebb_plan_add_refusal(&ctx->engine->plan, ebb_pod_key(pod, key, sizeof(key)), pod->node,
                         ctx->plugin ? ctx->plugin->def->name : NULL, ctx->profile->name,
                         ebb_why_name(why), detail);
    return why;
}

/* The API server's PDB answer, from the cache and what this cycle took.
 * Returns EBB_WHY_OK (then *d and *pdb say what to commit) or a refusal. */
static int pdb_check(struct ebb_ctx *ctx, struct ebb_pod *pod, char *detail, size_t detail_len,
                     const struct ebb_pdb **pdb, int *d)
{
    struct ebb_engine *e = ctx->engine;
    char msg[512], who[1100];

    *d = ebb__pdb_decide(e->cache, pod, &e->evictor.pdb_state, pdb, msg, sizeof(msg));
    if (*d != EBB_PDB_REFUSE && *d != EBB_PDB_ERROR)
        return EBB_WHY_OK;
    snprintf(who, sizeof(who), "%s/%s: %s", pod->ns, *pdb ? (*pdb)->name : "-", msg);
    if (detail_len)
        snprintf(detail, detail_len, "%s", *pdb ? (*pdb)->name : msg);
    return refuse(ctx, pod, *d == EBB_PDB_REFUSE ? EBB_WHY_PDB : EBB_WHY_API_ERROR, who);
}

/* Simulation and dry run: the eviction happened. */
static void record(struct ebb_ctx *ctx, struct ebb_pod *pod, ebb_str reason,
                   const struct ebb_evict_action *act)
{
    struct ebb_engine *e = ctx->engine;
    struct ebb_evictor *ev = &e->evictor;
    char key[512];

    ev->total++;
    ebb__count_add(&ev->per_node, pod->node, 1);
    ebb__count_add(&ev->per_ns, pod->ns, 1);
    ebb_plan_add_eviction_str(&e->plan, ebb_pod_key(pod, key, sizeof(key)), pod->node,
                          ctx->plugin ? ctx->plugin->def->name : NULL, ctx->profile->name,
                          reason);
    if (act != NULL)
        ebb_plan_set_action(&e->plan, act->text, act->body);
    /* dry-run remembers what it decided, as the live run it previews would */
    if (e->memory != NULL) {
        ebb_str plugin = ebb_str_cstr(ctx->plugin ? ctx->plugin->def->name : "");
        ebb_str profile = ebb_str_cstr(ctx->profile->name);
        remember(e, pod, pod->ns, pod->name, pod->uid, pod->node, plugin, profile, NULL, NULL);
        ebb_str_release(plugin);
        ebb_str_release(profile);
    }
    ebb_cache_hide_pod(e->cache, pod);
}

/* The profile's evict plugin, through its engine's evict operation. */
static int evict_plugin_call(struct ebb_ctx *ctx, struct ebb_pod *pod, ebb_str reason,
                             struct ebb_evict_action *act, char *why, size_t why_len)
{
    struct ebb_plugin_inst *inst = evict_plugin(ctx->profile);

    if (inst->def->ops->evict == NULL) {
        snprintf(why, why_len, "%s cannot evict", inst->def->name);
        return EBB_WHY_EVICTOR;
    }
    return inst->def->ops->evict(ctx, inst, pod, reason, act, why, why_len);
}

/* Through the profile's evict plugin. The API checks budgets for the
 * Eviction API only, not for a DELETE, a patch or a created object, so the
 * core checks them from its view first, in every mode (live: against this
 * cycle's evictions). The plugin acts only once everything else allowed
 * the eviction; what it takes from a budget is committed only if it acts. */
static int evict_by_plugin(struct ebb_ctx *ctx, struct ebb_pod *pod, ebb_str reason,
                           char *detail, size_t detail_len, struct ebb_eviction **pending)
{
    struct ebb_engine *e = ctx->engine;
    struct ebb_evictor *ev = &e->evictor;
    struct ebb_evict_action act = { .grace_period = -1 };
    const struct ebb_pdb *pdb = NULL;
    char why[600];
    int d, rc;

    if (e->mode == EBB_MODE_LIVE && ev->pdb_cycle != e->cycle) {
        /* the watch has brought the budgets' own counts since */
        ebb__evictor_forget_pdbs(ev);
        ev->pdb_cycle = e->cycle;
    }
    if ((rc = pdb_check(ctx, pod, detail, detail_len, &pdb, &d)) != EBB_WHY_OK)
        return rc;
    if (evict_plugin_call(ctx, pod, reason, &act, why, sizeof(why)) != 0) {
        if (detail_len)
            snprintf(detail, detail_len, "%s", why);
        return refuse(ctx, pod, EBB_WHY_EVICTOR, why);
    }
    if (d == EBB_PDB_ALLOW_DECREMENT)
        ebb__pdb_commit(&ev->pdb_state, pdb, pod);
    if (e->mode == EBB_MODE_LIVE) {
        rc = send_live(ctx, pod, reason, &act, pending);
        ebb__evict_action_free(&act);
        return rc;
    }
    record(ctx, pod, reason, &act);
    ebb__evict_action_free(&act);
    return EBB_WHY_OK;
}

static int evict(struct ebb_ctx *ctx, struct ebb_pod *pod, ebb_str reason, char *detail,
                 size_t detail_len, struct ebb_eviction **pending);

/* The observed pod's eviction (ebb_engine_observe): its outcome told. */
static int observed_evict(struct ebb_ctx *ctx, struct ebb_pod *pod, ebb_str reason,
                          char *detail, size_t detail_len, struct ebb_eviction **pending)
{
    struct ebb_engine *e = ctx->engine;
    struct ebb_observation o = { 0 };
    int rc;

    e->observe_detail[0] = '\0';
    e->observe_refuser = NULL;
    rc = evict(ctx, pod, reason, detail, detail_len, pending);
    /* the limits refuse without a word in the plan: say which and how full */
    if (rc == EBB_WHY_NODE_LIMIT)
        snprintf(e->observe_detail, sizeof(e->observe_detail),
                 "maxNoOfPodsToEvictPerNode %lld reached on node %s",
                 (long long)e->evictor.max_per_node, pod->node ? pod->node : "");
    else if (rc == EBB_WHY_NAMESPACE_LIMIT)
        snprintf(e->observe_detail, sizeof(e->observe_detail),
                 "maxNoOfPodsToEvictPerNamespace %lld reached in namespace %s",
                 (long long)e->evictor.max_per_namespace, pod->ns);
    else if (rc == EBB_WHY_TOTAL_LIMIT)
        snprintf(e->observe_detail, sizeof(e->observe_detail),
                 "maxNoOfPodsToEvictTotal %lld reached", (long long)e->evictor.max_total);
    o.kind = EBB_OBSERVE_EVICT;
    o.profile = ctx->profile->name;
    o.plugin = ctx->plugin ? ctx->plugin->def->name : NULL;
    o.verdict = rc == EBB_WHY_PENDING ? EBB_WHY_OK : rc;
    o.detail = rc == EBB_WHY_OK || rc == EBB_WHY_PENDING ? "" : e->observe_detail;
    o.refuser = rc != EBB_WHY_OK && rc != EBB_WHY_PENDING ? e->observe_refuser : NULL;
    e->observe(e->observe_ud, &o);
    return rc;
}

int ebb__evict(struct ebb_ctx *ctx, struct ebb_pod *pod, ebb_str reason, char *detail,
               size_t detail_len, struct ebb_eviction **pending)
{
    if (ctx->engine->observe_pod == pod)
        return observed_evict(ctx, pod, reason, detail, detail_len, pending);
    return evict(ctx, pod, reason, detail, detail_len, pending);
}

static int evict(struct ebb_ctx *ctx, struct ebb_pod *pod, ebb_str reason, char *detail,
                 size_t detail_len, struct ebb_eviction **pending)
{
    struct ebb_engine *e = ctx->engine;
    struct ebb_evictor *ev = &e->evictor;
    const struct ebb_pdb *pdb = NULL;
    bool ok;
    int d, rc;

    if (detail_len)
        detail[0] = '\0';
    if (pod->flags & EBB_POD_GONE)
        return refuse(ctx, pod, EBB_WHY_NOT_FOUND, "already evicted in this cycle");
    e->veto = 0;
    e->evicting = true;
    ok = ebb_ctx_filter(ctx, pod) && ebb_ctx_pre_eviction_filter(ctx, pod);
    e->evicting = false;
    if (!ok) {
        /* a filter that said why has put its refusal in the plan */
        if ((rc = e->veto) != 0) {
            e->veto = 0;
            return rc;
        }
        return refuse(ctx, pod, EBB_WHY_FILTERED, NULL);
    }
    e->veto = 0;
    if (e->background != NULL && ebb_background_has(e->background, pod) &&
        ebb_background_annotated(pod, EBB_ANNOTATION_REQUEST_EVICT_ONLY)) {
        /* asked before and still going: nothing to ask, as upstream */
        char key[512], msg[600];
        snprintf(msg, sizeof(msg), "pod %s: eviction in background already requested",
                 ebb_pod_key(pod, key, sizeof(key)));
        ebb_plan_add_note(&e->plan, ctx->plugin ? ctx->plugin->def->name : NULL,
                          ctx->profile->name, pod->node, msg);
        return EBB_WHY_OK;
    }
    if (ebb__evictor_total_full(e))
        return refuse(ctx, pod, EBB_WHY_TOTAL_LIMIT, NULL);
    if (ebb__evictor_node_full(e, pod->node))
        return refuse(ctx, pod, EBB_WHY_NODE_LIMIT, NULL);
    if (namespace_full(e, pod->ns))
        return refuse(ctx, pod, EBB_WHY_NAMESPACE_LIMIT, NULL);

    if (evict_plugin(ctx->profile) != NULL)
        return evict_by_plugin(ctx, pod, reason, detail, detail_len, pending);
    if (e->mode == EBB_MODE_LIVE)
        return send_live(ctx, pod, reason, NULL, pending);
    if ((rc = pdb_check(ctx, pod, detail, detail_len, &pdb, &d)) != EBB_WHY_OK)
        return rc;
    if (d == EBB_PDB_ALLOW_DECREMENT)
        ebb__pdb_commit(&ev->pdb_state, pdb, pod);
    record(ctx, pod, reason, NULL);
    return EBB_WHY_OK;
}

void ebb_engine_limits(const struct ebb_engine *e, ebb_str node, ebb_str ns,
                       struct ebb_limits *out)
{
    const struct ebb_evictor *ev = &e->evictor;

    out->max_per_node = ev->max_per_node;
    out->max_per_namespace = ev->max_per_namespace;
    out->max_total = ev->max_total;
    out->node = ebb__count_get(&ev->per_node, node) + ebb_background_on_node(e->background, node);
    out->ns = ebb__count_get(&ev->per_ns, ns) + ebb_background_in_namespace(e->background, ns);
    out->total = ev->total + ebb_background_count(e->background);
}

bool ebb_engine_pdb_left(const struct ebb_engine *e, const struct ebb_pdb *pdb,
                         int32_t *allowed, int32_t *healthy)
{
    const struct ebb_pdb_state *st = ebb__map_get(&e->evictor.pdb_state, pdb->ns, pdb->name);

    if (st == NULL)
        return false;
    *allowed = st->allowed;
    *healthy = st->healthy;
    return true;
}
