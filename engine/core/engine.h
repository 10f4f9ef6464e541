/* engine/core/engine.h: the structures shared inside the engine: the registry,
 * plugin instances and the operations every plugin engine implements
 * (struct ebb_plugin_ops), the evictor and the engine. Not public.
 *
 * The core (framework.c, evict.c) calls plugins only through
 * struct ebb_plugin_ops: native plugins (framework.c) and Lua plugins
 * (lua_plugin.c) implement it. This header includes no Lua header: the
 * Lua side's own structures are in lua_int.h, which includes this one, so
 * imports point one way (make check-layers verifies it). */
#ifndef EBB_ENGINE_H
#define EBB_ENGINE_H

#include "ebb.h"
#include "ebb/prom_result.h"
#include "base/map.h"

/* ---- the registry and instances ---------------------------------------- */

enum { EBB_PLUGIN_NATIVE = 1, EBB_PLUGIN_LUA = 2 };

struct ebb_plugin_ops;

struct ebb_plugin_def {
    char *name;
    int type;
    const struct ebb_plugin_ops *ops;   /* the engine that runs it */
    unsigned exts;                  /* bit (1 << EBB_EXT_*) */
    unsigned triggers;              /* EBB_TRIGGER_* the plugin reacts to */
    struct ebb_native_plugin native;
    char *path;                     /* Lua: the file */
    char *source;
    size_t source_len;
};

struct ebb_profile_inst;

struct ebb_plugin_inst {
    struct ebb_plugin_def *def;
    struct ebb_profile_inst *profile;
    const struct ebb_plugin_config *pc;   /* in the engine's policy; may be NULL */
    struct ebb_vm *vm;              /* Lua (lua_plugin.c): the instance's state */
    int table_ref;                  /* Lua: the plugin table */
    int ctx_ref;                    /* Lua: the ctx table handed to every call */
    void *state;                    /* native: what create made */
    int failures;                   /* deschedule/balance runs failed in a row */
    int quarantine_after;           /* failures that set it aside; 0: never */
    int quarantines;                /* times set aside in a row (the backoff) */
    int quarantined_until;          /* skipped through this cycle */
    int reported_skip;              /* last cycle the skip was noted */
    bool run_failed;                /* the run going on has reported a failure */
    int reported_cycle;             /* last cycle a failing filter was reported */
    int aside_cycle;                /* a call ran past its time budget in this cycle
                                       (0: none): no more calls of it until the next */
    uint64_t last_ns;               /* duration of the last deschedule/balance call */
    uint64_t total_ns;              /* all calls since the instance was made */
};

struct ebb_profile_inst {
    char *name;
    size_t ninsts;
    struct ebb_plugin_inst **insts;           /* one per distinct plugin */
    size_t nset[EBB_EXT_MAX];
    struct ebb_plugin_inst **set[EBB_EXT_MAX];
};

/* The context of one call into a plugin. */
struct ebb_ctx {
    struct ebb_engine *engine;
    struct ebb_profile_inst *profile;
    struct ebb_plugin_inst *plugin;
    int ext;                        /* the extension point called (EBB_EXT_*): only a
                                       deschedule or balance plugin may evict */
    struct ebb_plugin_inst *caller; /* a filter's call: the plugin that asked about the
                                       pod (a strategy choosing or evicting), or NULL */
};

struct ebb_evict_action;

/* ---- plugin engines ------------------------------------------------------ */

/* One table of operations per plugin engine (native, Lua): the core calls
 * plugins only through it. Errors come back in `err`; the core reports
 * them (plan, log) and counts them toward quarantine. */
struct ebb_plugin_ops {
    const char *name;               /* "native", "lua" */
    /* Read a definition (Lua: d->path, d->source): fill d->name, d->exts
     * and d->triggers. NULL for engines whose definitions come filled in. */
    int (*define)(struct ebb_engine *e, struct ebb_plugin_def *d, struct ebb_error *err);
    /* Make instance `inst` (def, profile, pc set; quarantine fields too)
     * with the args of inst->pc; an error names the policy's field. */
    int (*create)(struct ebb_engine *e, const struct ebb_policy *pol,
                  struct ebb_plugin_inst *inst, struct ebb_error *err);
    /* deschedule/balance (ctx->ext) over `nodes`: 0 done, EBB_CYCLE_WAITING
     * suspended until the engine has the answer it waits for (then
     * resume), or an error in `err`. `ctx` lives until the run is over. */
    int (*run)(struct ebb_ctx *ctx, struct ebb_node *const *nodes, size_t n,
               struct ebb_error *err);
    int (*resume)(struct ebb_ctx *ctx, struct ebb_error *err);   /* may be NULL */
    /* filter / preEvictionFilter (ctx->ext): 1 keep the pod evictable,
     * 0 protect it, negative: the plugin failed (`err`). */
    int (*check)(struct ebb_ctx *ctx, const struct ebb_pod *pod, struct ebb_error *err);
    /* evict (may be NULL): instance `inst` is asked to carry out an
     * eviction the core has already allowed, for the call `ctx` (the
     * strategy's). 0: the action in *out stands (owned by the caller);
     * EBB_WHY_EVICTOR: declined or failed, nothing done, `detail` says why
     * (a failure is also reported as a plugin error). `reason` is interned
     * (ebb_str: its length is ebb_str_len, a NUL may be in it) or NULL. */
    int (*evict)(struct ebb_ctx *ctx, struct ebb_plugin_inst *inst, struct ebb_pod *pod,
                 ebb_str reason, struct ebb_evict_action *out, char *detail,
                 size_t detail_len);
    size_t (*memory_used)(const struct ebb_plugin_inst *inst);   /* bytes */
    /* Reload: `a` (running) may stand in for `b` (just made from the same
     * definition and args): nothing it loaded changed. */
    bool (*unchanged)(const struct ebb_plugin_inst *a, const struct ebb_plugin_inst *b);
    /* Reload: `kept` now belongs to engine e and, when `fresh` (made from
     * the new policy) is not NULL, takes its limits. */
    void (*adopt)(struct ebb_plugin_inst *kept, const struct ebb_plugin_inst *fresh,
                  struct ebb_engine *e);
    void (*destroy)(struct ebb_plugin_inst *inst);
    /* The Prometheus queries the instance needs (may be NULL): each handed
     * to ebb__engine_prom_query_add. */
    void (*prom_queries)(struct ebb_engine *e, struct ebb_plugin_inst *inst);
};

/* framework.c: a query for ebb_engine_prom_queries (once each). */
int ebb__engine_prom_query_add(struct ebb_engine *e, const char *q);

/* framework.c: the function a Lua plugin table names for each EBB_EXT_* */
const char *ebb__ext_func(int ext);
/* framework.c: the error a plugin's args make in the policy (`path` inside
 * the args, may be NULL) */
int ebb__plugin_args_error(const struct ebb_policy *pol, const struct ebb_plugin_config *pc,
                           const char *path, const char *msg, struct ebb_error *err);

/* ---- evict.c ------------------------------------------------------------ */

struct ebb_evict_call;              /* the evict plugin's engine's (lua_evictor.c) */

struct ebb_evictor {
    int64_t max_per_node, max_per_namespace, max_total;   /* EBB_UNLIMITED: none */
    uint32_t total;
    struct ebb_map per_node;        /* (node, -) -> count */
    struct ebb_map per_ns;          /* (ns, -) -> count */
    struct ebb_map pdb_state;       /* (ns, name) -> struct ebb_pdb_state */
    int pdb_cycle;                  /* live: the cycle pdb_state belongs to */
    struct ebb_evict_call *call;    /* the evict plugin's evict() running, or NULL */
    uint64_t call_serial;           /* numbers the calls (a ctx.api handle is for one) */
};

/* What simulation tracks of a PDB as pods it selects are evicted. */
struct ebb_pdb_state {
    int32_t allowed;                /* status.disruptionsAllowed, decremented */
    int32_t healthy;                /* status.currentHealthy, decremented */
};

void ebb__evictor_init(struct ebb_evictor *ev);
void ebb__evictor_free(struct ebb_evictor *ev);
void ebb__evictor_reset(struct ebb_evictor *ev);            /* per cycle counters */
void ebb__evictor_forget_pdbs(struct ebb_evictor *ev);      /* new cache */
/* Returns an enum ebb_why, or EBB_WHY_PENDING in live mode when the request
 * was sent; then *pending (may be NULL) gets the eviction. */
#define EBB_WHY_PENDING (-1)
/* reason: interned (ebb_str) or NULL, kept whole (a script's may hold a NUL). */
int ebb__evict(struct ebb_ctx *ctx, struct ebb_pod *pod, ebb_str reason, char *detail,
               size_t detail_len, struct ebb_eviction **pending);
uint32_t ebb__evictor_node_count(const struct ebb_evictor *ev, ebb_str node);
/* Whether the total / the node's limit is reached, evictions in background
 * included. */
bool ebb__evictor_total_full(const struct ebb_engine *e);
bool ebb__evictor_node_full(const struct ebb_engine *e, ebb_str node);
/* At a cycle's start: evictions in background seeded from the cache (the
 * first cycle) and assumed ones past their timeout dropped. */
void ebb__background_cycle(struct ebb_engine *e);

/* What a profile's evict plugin asked for in one call (its ops->evict). */
struct ebb_evict_action {
    const char *method;             /* static; NULL: the Eviction API */
    char *path, *body;              /* owned; body may be NULL */
    const char *content_type;       /* static; NULL: application/json */
    char *text;                     /* owned: "evict", "delete", "patch ...", "create Kind name" */
    int64_t grace_period;           /* the Eviction API's; -1: the pod's default */
};
void ebb__evict_action_free(struct ebb_evict_action *a);

/* framework.c: ask one filter plugin about a pod (a failing plugin says no,
 * reported once a cycle) */
bool ebb__plugin_pod_check(struct ebb_plugin_inst *inst, int ext, struct ebb_ctx *ctx,
                           const struct ebb_pod *pod);

/* pdb.c: the API server's answer to an eviction request, PDB-wise. */
enum { EBB_PDB_ALLOW = 0, EBB_PDB_ALLOW_DECREMENT, EBB_PDB_REFUSE, EBB_PDB_ERROR };
int ebb__pdb_decide(const struct ebb_cache *c, const struct ebb_pod *pod,
                    struct ebb_map *state, const struct ebb_pdb **which, char *msg,
                    size_t msglen);
void ebb__pdb_commit(struct ebb_map *state, const struct ebb_pdb *pdb, const struct ebb_pod *pod);
void ebb__pdb_state_free(struct ebb_map *state);
int ebb__pdb_settle(const struct ebb_cache *c, struct ebb_map *state);

/* ---- the engine ---------------------------------------------------------- */

struct ebb_engine {
    char *home;
    bool reads_object;              /* a script parsed names pod.object or node.object
                                       (lua/vm.c): a watch cache keeps objects' text */
    int mode;
    int64_t fixed_now;              /* EBB_TIME_NONE: wall clock */
    size_t mem_limit;
    uint64_t budget_ns;
    int quarantine_after;           /* default for plugins; 0: never */
    size_t ndefs;
    struct ebb_plugin_def **defs;
    char **policy_dirs;             /* NULL-terminated, for require() */
    size_t npolicy_dirs;
    struct ebb_policy *policy;
    size_t nprofiles;
    struct ebb_profile_inst **profiles;
    struct ebb_cache *cache;
    struct ebb_evictor evictor;
    struct ebb_plan plan;
    struct ebb_evmem *memory;       /* ebb_engine_opts.memory: borrowed, may be NULL */
    ebb_predict_fn predict;         /* ebb_engine_opts.predict (LoopGuard) */
    void *predict_ud;
    /* A filter plugin that refused with its own reason (ebb__ctx_veto) set
     * this; ebb__evict reads it when the filters say no and clears it. */
    int veto;
    bool evicting;                  /* ebb__evict is asking the filters (not a listing) */
    int cycle;                      /* number of the cycle running / last run */
    /* ebb_engine_observe: the pod watched (NULL: none) and what the
     * checks about it said */
    const struct ebb_pod *observe_pod;
    ebb_observe_fn observe;
    void *observe_ud;
    bool explaining;                /* a check of the observed pod runs: reasons kept */
    bool sweeping;                  /* the VERDICT sweep: a veto changes nothing */
    char observe_why[512];          /* the reason the running check gave */
    char observe_detail[600];       /* the last refusal's detail, for EVICT */
    const char *observe_refuser;    /* the filter that last said no while evicting */
    /* live mode */
    ebb_evict_start_fn evict_start;
    void *evict_ud;
    bool evictions_allowed;
    size_t inflight;
    /* EvictionsInBackground (NULL: the gate is off); filled from the cache
     * at the first cycle, then from the watch */
    struct ebb_background *background;
    bool background_seeded;
    ebb_background_done_fn background_done;
    void *background_done_ud;
    /* Prometheus (framework.c): how queries are answered, the answer a
     * waiting plugin gets, the queries the policy's plugins declare */
    const struct ebb_plugin_ops *scripts;   /* plugin files' engine (ebb_engine_opts) */
    ebb_prom_start_fn prom_start;
    void *prom_ud;
    struct ebb_prom_result *prom_answer;
    char **prom_queries;
    size_t nprom_queries;
    bool prom_queries_known;
    /* the resumable cycle */
    bool cycle_active;
    int cycle_ext;                  /* EBB_EXT_DESCHEDULE or EBB_EXT_BALANCE */
    size_t cycle_profile, cycle_index;
    struct ebb_plugin_inst *waiting;    /* whose coroutine waits for an answer */
    struct ebb_ctx waiting_ctx;
    uint64_t waiting_t0;
    bool answer_ready;
    int answer_why;
    char answer_detail[512];
    struct ebb_node **cycle_nodes;  /* the nodes of the running cycle */
    size_t ncycle_nodes;
    unsigned run_mask;              /* a triggered run: only these plugins; 0: all */
    const char *const *run_nodes;   /* ... handed these nodes (names; during begin) */
    size_t nrun_nodes;
    struct ebb_node **focus_nodes;  /* the cycle's nodes among run_nodes: what a
                                       triggered run hands its plugins (helpers
                                       still see every node of the cycle) */
    size_t nfocus_nodes;
};

int64_t ebb__engine_now(const struct ebb_engine *e);
/* Drop what the engine keeps of Prometheus (the policy's queries, an
 * answer not taken). */
void ebb__prom_forget(struct ebb_engine *e);
struct ebb_plugin_def *ebb__engine_find(const struct ebb_engine *e, const char *name);

/* default_evictor.c */
extern const struct ebb_native_plugin ebb__default_evictor;
/* loopguard.c */
extern const struct ebb_native_plugin ebb__loopguard;

/* evict.c: a filter plugin (ctx of its call) refuses `pod` for `why` (an
 * EBB_WHY_* of its own, not "filtered"): the refusal goes into the plan
 * once per pod per cycle and why (`record` false: it is there already), and
 * an eviction the filters stop reports `why` instead of "filtered". The
 * plan names the plugin that asked (ctx->caller) or, without one, the
 * filter plugin. */
void ebb__ctx_veto(struct ebb_ctx *ctx, const struct ebb_pod *pod, int why, const char *detail,
                   bool record);

#endif
