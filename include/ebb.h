/* ebb.h: embed the ebb engine and register plugins.
 *
 * An engine holds a plugin registry, a policy bound to it (profiles with
 * plugin instances), a cache of the cluster, the evictor and the plan of
 * what it did. Everything runs on the caller's thread; the only other
 * thread is the watchdog that stops runaway scripts (vm.c).
 *
 *     struct ebb_engine *e;
 *     ebb_engine_create(&opts, &e, &err);
 *     ebb_engine_load_builtins(e, &err);             // policies/ + DefaultEvictor
 *     ebb_engine_register_lua_dir(e, "my-strategies", &err);
 *     ebb_engine_set_cache(e, cache);                // from ebb_snapshot_load or a watch
 *     ebb_engine_set_policy(e, policy, &err);        // builds profiles, checks args
 *     ebb_engine_run_cycle(e);
 *     ebb_plan_to_json(ebb_engine_plan(e), ...);
 *     ebb_engine_destroy(e);
 */
#ifndef EBB_H
#define EBB_H

#include "ebb/common.h"
#include "ebb/flags.h"
#include "ebb/model.h"
#include "ebb/cache.h"
#include "ebb/config.h"
#include "ebb/plan.h"
#include "ebb/background.h"
#include "ebb/changes.h"

struct ebb_engine;
struct ebb_ctx;   /* what a native plugin is handed during a call */

struct ebb_plugin_ops;   /* the engine of a kind of plugin (engine/core/engine.h) */
struct ebb_evmem;        /* the memory of evictions (ebb/evmemory.h) */

/* A prediction of where an evicted pod's replacement lands. */
enum {
    EBB_PREDICT_PLACED = 0,     /* on `node` */
    EBB_PREDICT_PENDING,        /* recreated, but fits no node: `message` says why */
    EBB_PREDICT_GONE,           /* nothing recreates it (a bare pod, a finished one) */
};
struct ebb_prediction {
    int status;                 /* EBB_PREDICT_* */
    ebb_str node;               /* PLACED: the node (borrowed from the cache) */
    char message[256];          /* PENDING: the scheduler's message */
};
/* Place the replacement of `pod` (bound, about to be evicted by a plugin of
 * engine `e`) on the cluster as it will be: `pod` gone, and every pod this
 * cycle evicted already. Fills *out and returns 0, or an EBB_E* code (then
 * nothing is known). Engine thread; called from a filter plugin. */
struct ebb_engine;
typedef int (*ebb_predict_fn)(void *ud, struct ebb_engine *e, struct ebb_pod *pod,
                              struct ebb_prediction *out);

struct ebb_engine_opts {
    const char *home;           /* directory with lua/ and policies/; NULL: $EBB_HOME,
                                   then next to the executable */
    int64_t now;                /* fixed clock in seconds; EBB_TIME_NONE: wall clock */
    size_t mem_limit;           /* bytes per Lua plugin instance; 0: 64 MiB */
    uint64_t time_budget_ms;    /* per call into a plugin; 0: 10 s; EBB_BUDGET_OFF: none
                                   (benchmarks: what an armed budget costs) */
    int mode;                   /* EBB_MODE_* */
    int quarantine_after;       /* failed runs in a row that set a plugin aside;
                                   0: EBB_QUARANTINE_AFTER, negative: never */
    unsigned features;          /* EBB_FEATURE_* (--feature-gates) */
    /* The engine of plugin files (*.lua): ebb_lua_plugins() (ebb/lua.h).
     * The core calls plugins only through such a table; NULL: none, and a
     * plugin file is an error. */
    const struct ebb_plugin_ops *scripts;
    /* The memory of evictions (ebb/evmemory.h): borrowed, the caller's to
     * keep across cycles, reloads and engines, and to free after the
     * engine. The engine adds every eviction it makes (simulate, dry-run:
     * when decided; live: when the API accepted it); LoopGuard and Lua
     * read it. NULL: nothing is remembered. */
    struct ebb_evmem *memory;
    /* Where the replacement of a pod about to be evicted would land
     * (LoopGuard's bounce prediction): cmd/ wires the kube-scheduler model
     * (ebb/predict.h) here; NULL: no prediction, nothing is refused as
     * futile. ebb_engine_set_predictor changes it later. */
    ebb_predict_fn predict;
    void *predict_ud;
};

/* A plugin whose deschedule/balance failed this many runs in a row is
 * skipped for 1, 2, 4 ... cycles (at most EBB_QUARANTINE_MAX_CYCLES), then
 * tried again; a clean run ends the quarantine. Per plugin in the policy:
 * pluginConfig[].limits.quarantineAfter. */
#define EBB_QUARANTINE_AFTER 3
#define EBB_QUARANTINE_MAX_CYCLES 32

enum {
    EBB_MODE_SIMULATE = 0,      /* evictions go to the plan; PDBs from the cache */
    EBB_MODE_DRY_RUN = 1,       /* like simulate, against a live cache */
    EBB_MODE_LIVE = 2,          /* evictions go to the API */
};

/* Eviction outcomes, as `ctx.evictor:evict` reports them to Lua. */
enum ebb_why {
    EBB_WHY_OK = 0,
    EBB_WHY_FILTERED,           /* a filter/preEvictionFilter plugin said no */
    EBB_WHY_NODE_LIMIT,
    EBB_WHY_NAMESPACE_LIMIT,
    EBB_WHY_TOTAL_LIMIT,
    EBB_WHY_PDB,                /* a PodDisruptionBudget allows no disruption */
    EBB_WHY_API_ERROR,
    EBB_WHY_NOT_FOUND,          /* already evicted or gone */
    EBB_WHY_EVICTOR,            /* the profile's evict plugin declined or failed */
    EBB_WHY_BACKGROUND,         /* evicted in background (EvictionsInBackground): the
                                   plugin hears "ok", the plan lists it with this why */
    /* LoopGuard's refusals (a filter that says why): only a policy that
     * enables it ever sees them */
    EBB_WHY_FUTILE,             /* the replacement would land back (bounce prediction) */
    EBB_WHY_COOLDOWN,           /* the workload was evicted too recently */
    EBB_WHY_UNAVAILABLE,        /* the workload has as many pods down as it may */
    EBB_WHY_MAX,
};
const char *ebb_why_name(int why);   /* "filtered", "node-limit", ... */

int ebb_engine_create(const struct ebb_engine_opts *opts, struct ebb_engine **out,
                      struct ebb_error *err);
void ebb_engine_destroy(struct ebb_engine *e);   /* NULL-safe */

/* ---- plugins ----------------------------------------------------------- */

/* A plugin written in C. Every callback is optional except create; the
 * extension points a plugin implements are the callbacks it sets. */
struct ebb_native_plugin {
    const char *name;
    /* Decode and validate `args` (NULL: all defaults). On a bad field, fill
     * err->field with its path relative to args ("thresholds.cpu") and
     * err->msg, and return EBB_ESCHEMA. *state is owned by the engine and
     * handed back to every callback and to destroy. */
    int (*create)(const struct ebb_val *args, void **state, struct ebb_error *err);
    void (*destroy)(void *state);
    /* Once per cycle, before any plugin runs (resolve names, reset). */
    int (*cycle_begin)(void *state, struct ebb_ctx *ctx, struct ebb_error *err);
    int (*deschedule)(void *state, struct ebb_ctx *ctx, struct ebb_node *const *nodes,
                      size_t n, struct ebb_error *err);
    int (*balance)(void *state, struct ebb_ctx *ctx, struct ebb_node *const *nodes, size_t n,
                   struct ebb_error *err);
    bool (*filter)(void *state, struct ebb_ctx *ctx, const struct ebb_pod *pod);
    bool (*pre_eviction_filter)(void *state, struct ebb_ctx *ctx, const struct ebb_pod *pod);
};

/* Register a native plugin; the struct is copied. EBB_EEXIST if the name is
 * taken (by a native or a Lua plugin). */
int ebb_engine_register_native(struct ebb_engine *e, const struct ebb_native_plugin *p,
                               struct ebb_error *err);

/* Register the Lua plugin in `path` (its returned table's `name`). The file
 * is checked in a scratch sandbox: it must compile as text, return a table
 * with a string `name` and at least one of deschedule, balance, filter,
 * preevictionfilter, evict, an `args` schema table if any, a `validate`
 * function if any and, for an evictor, a `creates` declaration if any.
 * EBB_ESCRIPT/EBB_EEXIST with the file and line. */
int ebb_engine_register_lua_file(struct ebb_engine *e, const char *path, struct ebb_error *err);
/* Every *.lua file of `dir` (not recursive; sorted by name; files whose
 * names start with '.' or '_' are skipped, so ConfigMap's ..data links and
 * helper modules are not taken for plugins). */
int ebb_engine_register_lua_dir(struct ebb_engine *e, const char *dir, struct ebb_error *err);
/* The built-in plugins: DefaultEvictor (native) and every file of home/policies. */
int ebb_engine_load_builtins(struct ebb_engine *e, struct ebb_error *err);

bool ebb_engine_has_plugin(const struct ebb_engine *e, const char *name);
/* Whether a script the engine parsed (a plugin, a module it required, a
 * chunk it loaded) names pod.object or node.object: a watch cache then
 * keeps the objects' text (ebb_cache_keep_text). */
bool ebb_engine_reads_object(const struct ebb_engine *e);

/* ---- policy, cache, cycles --------------------------------------------- */

/* Give the engine a cluster view (ownership moves to the engine; a previous
 * cache is destroyed). */
void ebb_engine_set_cache(struct ebb_engine *e, struct ebb_cache *c);
struct ebb_cache *ebb_engine_cache(struct ebb_engine *e);

/* Bind a policy: check every plugin name and extension point, create every
 * plugin instance (one sandbox per Lua plugin per profile), decode and
 * validate its args. All or nothing: on error the engine keeps its previous
 * policy and `policy` still belongs to the caller; on success the engine
 * owns it. Errors name the policy file, line and field. */
int ebb_engine_set_policy(struct ebb_engine *e, struct ebb_policy *policy, struct ebb_error *err);

void ebb_engine_set_now(struct ebb_engine *e, int64_t now);

/* Between simulated cycles, once the replacements of evicted pods are
 * placed: every processed PodDisruptionBudget's currentHealthy and
 * disruptionsAllowed as the disruption controller would write them from
 * the cache as it is now, so that what a cycle took from a budget comes
 * back as its pods become healthy again. 0, EBB_ESTATE during a cycle, or
 * EBB_ENOMEM (the budgets as they were). */
int ebb_engine_settle_pdbs(struct ebb_engine *e);

/* Hot reload: `from` is a new generation built off to the side (its own
 * registry, policy and plugin instances, all validated). Between cycles,
 * move all of it into `e`, which keeps its cache, evictor state and plan;
 * `from` receives e's previous generation and is the caller's to destroy.
 * A plugin instance whose source, modules and args did not change is
 * carried over as it is (its ctx.state included); *kept (may be NULL) says
 * how many. EBB_ESTATE while a cycle runs. */
int ebb_engine_adopt(struct ebb_engine *e, struct ebb_engine *from, size_t *kept);

/* ---- event-triggered runs ------------------------------------------------ */

/* The changes a plugin may react to: enum ebb_trigger (ebb/changes.h). */

/* The union of the triggers of the bound policy's deschedule/balance
 * plugins (0: nothing to watch for). */
unsigned ebb_engine_triggers(const struct ebb_engine *e);
/* A run of the plugins whose triggers meet `mask`, on the cycle's nodes
 * (ready, the policy's nodeSelector) that are among `nodes` (names). It is
 * a cycle in every other way: limits, PDBs, the plan, waiting for the API;
 * continue it with ebb_engine_cycle_resume. */
int ebb_engine_trigger_begin(struct ebb_engine *e, unsigned mask, const char *const *nodes,
                             size_t n);
/* Plugin instances of the bound policy, over every profile. */
size_t ebb_engine_plugin_count(const struct ebb_engine *e);

/* The policy bound by ebb_engine_set_policy (NULL before). */
const struct ebb_policy *ebb_engine_policy(const struct ebb_engine *e);

/* Run one descheduling cycle on the current cache and append what happened
 * to the plan. A plugin that fails is reported in the plan; the others run.
 * Returns 0, or EBB_ESTATE without a policy or cache. */
int ebb_engine_run_cycle(struct ebb_engine *e);

struct ebb_plan *ebb_engine_plan(struct ebb_engine *e);
/* The memory handed in ebb_engine_opts.memory (NULL: none). */
struct ebb_evmem *ebb_engine_memory(const struct ebb_engine *e);
/* Replace the predictor of ebb_engine_opts (fn NULL: none). Between cycles. */
void ebb_engine_set_predictor(struct ebb_engine *e, ebb_predict_fn fn, void *ud);
/* Number of the cycle running, or of the last one run (0: none yet). */
int ebb_engine_cycle_number(const struct ebb_engine *e);

/* Time spent in each plugin's deschedule/balance calls (strategy duration
 * metrics, benchmarks). Fills up to max entries, returns how many exist. */
struct ebb_plugin_time {
    const char *profile;
    const char *plugin;
    uint64_t last_ns;
    uint64_t total_ns;
    int failures;               /* runs failed in a row */
    bool quarantined;           /* set aside for the coming cycle(s) */
    size_t memory;              /* bytes its state holds (Lua: its lua_State) */
};
size_t ebb_engine_plugin_times(const struct ebb_engine *e, struct ebb_plugin_time *out, size_t max);

/* ---- observing one pod (`ebb explain`) ----------------------------------- */

/* What the engine did about the observed pod. */
enum {
    EBB_OBSERVE_VERDICT = 1,    /* at the cycle's start, each filter/preEvictionFilter
                                   plugin of each profile asked about the pod alone,
                                   as a strategy listing candidates asks */
    EBB_OBSERVE_CHECK,          /* a filter plugin asked during the cycle (by a strategy
                                   listing, or by the evictor about an eviction) */
    EBB_OBSERVE_EVICT,          /* an eviction of the pod asked, and its outcome */
};
struct ebb_observation {
    int kind;                   /* EBB_OBSERVE_* */
    const char *profile;
    const char *plugin;         /* VERDICT, CHECK: the filter plugin; EVICT: the strategy */
    const char *caller;         /* CHECK: the plugin whose call asked (NULL: none) */
    int ext;                    /* VERDICT, CHECK: EBB_EXT_FILTER or EBB_EXT_PREEVICTIONFILTER */
    int verdict;                /* VERDICT, CHECK: 1 evictable, 0 protected, -1 the plugin
                                   failed; EVICT: an enum ebb_why */
    bool evicting;              /* CHECK: the evictor asked, about an eviction */
    const char *detail;         /* why ("" when nothing was said) */
    const char *refuser;        /* EVICT refused by a filter: that plugin (else NULL) */
};
typedef void (*ebb_observe_fn)(void *ud, const struct ebb_observation *o);
/* Observe `pod` (a pod of the engine's cache; NULL: stop) from the next
 * cycle on. It decides nothing: every policy decides as unobserved; the
 * only extra work is the VERDICT sweep at the cycle's start (one check per
 * filter plugin) and the reasons filters give (ebb_ctx_say_why). Unset, it
 * costs one pointer comparison per check and per eviction. */
void ebb_engine_observe(struct ebb_engine *e, const struct ebb_pod *pod, ebb_observe_fn fn,
                        void *ud);

/* The eviction limits of the bound policy and how full they are for
 * (node, ns) after the last cycle (evictions in background included). */
struct ebb_limits {
    int64_t max_per_node, max_per_namespace, max_total;   /* EBB_UNLIMITED: none */
    uint64_t node, ns, total;   /* evictions counted against each */
};
void ebb_engine_limits(const struct ebb_engine *e, ebb_str node, ebb_str ns,
                       struct ebb_limits *out);
/* What the simulated cycles took of a PodDisruptionBudget: true and the
 * disruptions it still allows and its healthy pods, or false when no
 * eviction touched it (its status stands). */
bool ebb_engine_pdb_left(const struct ebb_engine *e, const struct ebb_pdb *pdb,
                         int32_t *allowed, int32_t *healthy);

/* ---- live mode ------------------------------------------------------------ */

/* An eviction the engine has decided on and the API must now carry out. */
struct ebb_eviction {
    ebb_str ns, name, uid, node;     /* references held until done */
    ebb_str plugin, profile, reason; /* reason may be NULL */
    int64_t grace_period;            /* -1: the pod's default */
    bool lua_waiting;                /* a strategy's coroutine waits for the answer */
    uint32_t pod_slot, pod_serial;
    /* A profile with an evict plugin: what that plugin chose. method NULL:
     * the Eviction API as above (429 is a PDB refusal); else this request,
     * whose 2xx is success (429 is then an API error). */
    ebb_str evictor;                 /* the evict plugin, or NULL */
    const char *method;              /* static: "DELETE", "PATCH", "POST", or NULL */
    char *path;                      /* owned: the API path */
    char *body;                      /* owned: JSON; may be NULL */
    const char *content_type;        /* static; NULL: application/json */
    char *action;                    /* owned: "evict", "delete", "patch ...",
                                        "create Kind name" (logs, Events, the plan) */
    bool evict_only;                 /* EvictionsInBackground is on and the pod is annotated
                                        request-evict-only */
    ebb_str workload_kind, workload; /* the memory's key of the pod (ebb/evmemory.h);
                                        NULL without a memory */
};

/* In EBB_MODE_LIVE, an eviction that passed every local check is handed to
 * `start`, which sends it (POST pods/eviction, or the evict plugin's
 * request) and returns 0, or returns an enum ebb_why to refuse at once.
 * The answer comes back through
 * ebb_engine_eviction_done (from an I/O callback is fine: it runs no Lua). */
typedef int (*ebb_evict_start_fn)(void *ud, struct ebb_eviction *ev);
void ebb_engine_set_evictor(struct ebb_engine *e, ebb_evict_start_fn start, void *ud);
/* why: EBB_WHY_OK, EBB_WHY_PDB (429 to an Eviction), EBB_WHY_NOT_FOUND (404),
 * EBB_WHY_API_ERROR, or EBB_WHY_BACKGROUND (see below); detail (may be NULL)
 * says what the API said. Frees ev. */
void ebb_engine_eviction_done(struct ebb_engine *e, struct ebb_eviction *ev, int why,
                              const char *detail);
/* Whether the answer to an Eviction (`status`, the Status `message`) puts
 * the eviction in background: EvictionsInBackground on, the pod annotated
 * request-evict-only, 429 saying "Eviction triggered evacuation". Then the
 * caller reports EBB_WHY_BACKGROUND to ebb_engine_eviction_done: the plugin
 * hears "ok", the pod is tracked until it is gone (ebb/background.h). */
bool ebb_engine_eviction_in_background(const struct ebb_engine *e, const struct ebb_eviction *ev,
                                       int status, const char *message);
/* A pod the watch added, changed or deleted (the cache already shows it),
 * for the evictions in background (nothing when the gate is off) and, in a
 * live run, for the memory of evictions: a new bound pod of a workload ebb
 * evicted from within the hour is taken for the replacement of its oldest
 * eviction whose replacement had not landed yet (ebb_evmem_landed). */
void ebb_engine_pod_changed(struct ebb_engine *e, ebb_str ns, ebb_str name);
/* `fn` hears of each eviction in background that ended with its pod gone
 * (upstream counts it a success then); called from ebb_engine_pod_changed. */
void ebb_engine_on_background_done(struct ebb_engine *e, ebb_background_done_fn fn, void *ud);

/* A cycle that can wait for the API: begin, then resume every time an
 * eviction a strategy waits for is done. Each returns 0 when the cycle has
 * finished, EBB_CYCLE_WAITING while a strategy waits, or an error.
 * ebb_engine_run_cycle is begin for engines that never wait (simulation). */
#define EBB_CYCLE_WAITING 1
int ebb_engine_cycle_begin(struct ebb_engine *e);
int ebb_engine_cycle_resume(struct ebb_engine *e);
bool ebb_engine_cycle_active(const struct ebb_engine *e);
/* Ready to resume: the eviction a strategy waits for has its answer. */
bool ebb_engine_cycle_ready(const struct ebb_engine *e);
/* Evictions sent and not answered yet. */
size_t ebb_engine_evictions_inflight(const struct ebb_engine *e);
/* Stop: no new evictions in this or later cycles (SIGTERM, leadership lost);
 * strategies that try get "api-error". */
void ebb_engine_set_eviction_allowed(struct ebb_engine *e, bool allowed);

/* ---- for native plugins, during a call ---------------------------------- */

struct ebb_cache *ebb_ctx_cache(struct ebb_ctx *ctx);
int64_t ebb_ctx_now(const struct ebb_ctx *ctx);
const char *ebb_ctx_profile(const struct ebb_ctx *ctx);
/* The profile's Filter / PreEvictionFilter (AND of its filter plugins). */
bool ebb_ctx_filter(struct ebb_ctx *ctx, const struct ebb_pod *pod);
bool ebb_ctx_pre_eviction_filter(struct ebb_ctx *ctx, const struct ebb_pod *pod);
/* A filter saying no tells why (upstream's words for DefaultEvictor): kept
 * only while the pod is observed (ebb_ctx_explaining), else nothing. */
bool ebb_ctx_explaining(const struct ebb_ctx *ctx);
void ebb_ctx_say_why(struct ebb_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Ask the evictor to evict; returns an enum ebb_why. In live mode a native
 * plugin cannot wait: the request is sent and EBB_WHY_OK returned; the real
 * outcome is recorded in the plan and metrics when the API answers. */
int ebb_ctx_evict(struct ebb_ctx *ctx, struct ebb_pod *pod, const char *reason);

/* ---- the Prometheus metrics provider and the engine --------------------- */

struct ebb_prom_result;   /* ebb/prom_result.h */

/* How a plugin's ebb.prometheus_query(q) is answered: at once (*now set,
 * return 0: simulate) or later through ebb_engine_prom_answer (return
 * EBB_CYCLE_WAITING: live). Called from the cycle; `ud` is the caller's. */
typedef int (*ebb_prom_start_fn)(void *ud, struct ebb_engine *e, const char *query, int64_t time,
                                 struct ebb_prom_result **now);
void ebb_engine_set_prom(struct ebb_engine *e, ebb_prom_start_fn fn, void *ud);
/* The answer to the query a plugin waits for (takes `r`); the caller then
 * resumes the cycle (ebb_engine_cycle_resume). */
void ebb_engine_prom_answer(struct ebb_engine *e, struct ebb_prom_result *r);
/* The distinct queries the policy's plugins declare (a plugin table's
 * `prometheus_queries(args)`), valid until the policy changes. */
size_t ebb_engine_prom_queries(const struct ebb_engine *e, const char *const **out);

#endif
