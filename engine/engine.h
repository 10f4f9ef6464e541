/* engine/engine.h: the structures shared inside the engine by framework.c,
 * vm.c, the lua_*.c bindings, evict.c and default_evictor.c. Not public. */
#ifndef EBB_ENGINE_H
#define EBB_ENGINE_H

#include <lua.h>

#include "ebb.h"
#include "ebb/prometheus.h"
#include "map.h"

/* ---- vm.c: one sandboxed lua_State ------------------------------------- */

struct ebb_vm {
    lua_State *L;
    struct ebb_engine *engine;
    struct ebb_plugin_inst *inst;   /* NULL for scratch states */
    char *name;                     /* for messages: plugin name or file */
    size_t mem_used, mem_limit, mem_peak;
    bool limit_on;                  /* the cap applies while a script runs only:
                                       C code pushing outside a call never fails */
    uint64_t budget_ns;
    volatile int expired;           /* set by the watchdog */
    uint64_t expired_ns;            /* when it did (CLOCK_MONOTONIC) */
    size_t kept;                    /* bytes the plan keeps for this plugin this cycle
                                       (notes, reasons, refusals): charged to the cap */
    int kept_cycle;                 /* the cycle `kept` counts */
    bool stopped;                   /* the call running was abandoned at its budget */
    int depth;                      /* nested calls into this vm */
    struct ebb_ctx *ctx;            /* the call running, set by framework.c */
    int co_ref;                     /* a suspended call's coroutine, or LUA_NOREF */
    lua_State *call_co;             /* the coroutine the engine resumed for the call
                                       running: only it may wait for the API */
    lua_State *volatile running;    /* the innermost coroutine running (a script's
                                       own, or call_co); written under the watchdog
                                       lock, which hooks it when the budget expires */
    bool engine_yield;              /* the pending yield is the evictor's, not a script's */
    char *const *policy_dirs;       /* require() roots after home/lua */
    char *home;
    size_t nmods;
    struct ebb_vm_module {          /* modules required from the policy dirs: */
        char *path;                 /* a reload keeps an instance only if none */
        uint64_t hash;              /* of them changed */
    } *mods;
};

struct ebb_vm_opts {
    struct ebb_engine *engine;
    const char *name;
    size_t mem_limit;
    uint64_t budget_ns;
    const char *home;                /* lua/ lives here */
    char *const *policy_dirs;        /* extra require() roots; NULL-terminated */
};

int ebb__vm_create(const struct ebb_vm_opts *opts, struct ebb_vm **out);
void ebb__vm_destroy(struct ebb_vm *vm);

static inline struct ebb_vm *ebb__vm_of(lua_State *L)
{
    return *(struct ebb_vm **)lua_getextraspace(L);
}

/* Load a text chunk and run it; leaves its first result on the stack.
 * On failure fills err (file, line from the Lua message) and returns
 * EBB_ESCRIPT or EBB_ELIMIT with the stack unchanged. */
int ebb__vm_dochunk(struct ebb_vm *vm, const char *src, size_t len, const char *chunkname,
                    struct ebb_error *err);

/* The single path from C into Lua: [fn, args...] on the stack -> nres
 * results. Runs in a fresh coroutine under the time budget; a script's own
 * pcall cannot swallow an expired budget. On error the message (with a
 * traceback) is in `err` and nothing is left on the stack. */
int ebb__vm_call(struct ebb_vm *vm, int nargs, int nres, struct ebb_error *err);

/* The same, for a call that may suspend: a strategy's evict() waiting for
 * the API answer yields. Returns 0 (finished, nres results on vm->L),
 * EBB_VM_YIELDED (suspended: the coroutine is kept; resume with
 * ebb__vm_resume once the answer is in), or an error as ebb__vm_call. */
#define EBB_VM_YIELDED 1
int ebb__vm_start(struct ebb_vm *vm, int nargs, int nres, struct ebb_error *err);
int ebb__vm_resume(struct ebb_vm *vm, int nres, struct ebb_error *err);
bool ebb__vm_waiting(const struct ebb_vm *vm);
/* Every module the vm required from the policy directories still has the
 * content it had when it was loaded. */
bool ebb__vm_modules_unchanged(const struct ebb_vm *vm);

/* True when the code running in L may suspend the call to wait for the API
 * (it is the call's own coroutine, not a script's coroutine or a callback);
 * ebb__vm_engine_yield then marks the yield as the engine's. */
bool ebb__vm_can_wait(lua_State *L);
void ebb__vm_engine_yield(lua_State *L);

/* Long native helpers check this inside their loops. */
static inline bool ebb__vm_expired(const struct ebb_vm *vm)
{
    return vm != NULL && vm->expired;
}

/* Stop the script running in L because its budget expired; never returns.
 * Where the script could yield, the coroutine is suspended and abandoned:
 * no more of its code runs (no message handler, no __close). Elsewhere (a
 * callback of a C function, a metamethod called from C) it raises, and the
 * budget hook stops whatever script code that error reaches next. */
int ebb__vm_stop(lua_State *L);

/* Charge `bytes` the core keeps for the plugin running in L (a note, an
 * eviction reason, a refusal in the plan) to its memory cap, for the rest
 * of the cycle; raises when the cap would be exceeded.      [-0, +0, e] */
void ebb__vm_keep(lua_State *L, size_t bytes);

/* require() of the sandbox, for the engine's own calls: it does not depend
 * on what a script left in its globals.                       [-1, +1, e] */
int ebb__vm_require(lua_State *L);

/* t[k] without metamethods: the engine reads a plugin's tables outside any
 * budget, where a script's __index must not run.              [-0, +1, -] */
static inline int ebb__rawfield(lua_State *L, int t, const char *k)
{
    t = lua_absindex(L, t);
    lua_pushstring(L, k);
    return lua_rawget(L, t);
}

/* What a loop in C calls every few hundred steps: stops the script when
 * its budget has expired. */
static inline void ebb__vm_check(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    if (vm != NULL && vm->expired)
        ebb__vm_stop(L);
}

/* ---- the registry and instances ---------------------------------------- */

enum { EBB_PLUGIN_NATIVE = 1, EBB_PLUGIN_LUA = 2 };

struct ebb_plugin_def {
    char *name;
    int type;
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
    struct ebb_vm *vm;              /* Lua */
    int table_ref;                  /* Lua: the plugin table */
    int ctx_ref;                    /* Lua: the ctx table handed to every call */
    void *state;                    /* native */
    int failures;                   /* deschedule/balance runs failed in a row */
    int quarantine_after;           /* failures that set it aside; 0: never */
    int quarantines;                /* times set aside in a row (the backoff) */
    int quarantined_until;          /* skipped through this cycle */
    int reported_skip;              /* last cycle the skip was noted */
    bool run_failed;                /* the run going on has reported a failure */
    int reported_cycle;             /* last cycle a failing filter was reported */
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
};

/* ---- evict.c ------------------------------------------------------------ */

struct ebb_evict_call;              /* lua_evictor.c */

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
int ebb__evict(struct ebb_ctx *ctx, struct ebb_pod *pod, const char *reason, char *detail,
               size_t detail_len, struct ebb_eviction **pending);
uint32_t ebb__evictor_node_count(const struct ebb_evictor *ev, ebb_str node);
/* Whether the total / the node's limit is reached, evictions in background
 * included. */
bool ebb__evictor_total_full(const struct ebb_engine *e);
bool ebb__evictor_node_full(const struct ebb_engine *e, ebb_str node);
/* At a cycle's start: evictions in background seeded from the cache (the
 * first cycle) and assumed ones past their timeout dropped. */
void ebb__background_cycle(struct ebb_engine *e);

/* What a profile's evict plugin asked for in one call (lua_evictor.c). */
struct ebb_evict_action {
    const char *method;             /* static; NULL: the Eviction API */
    char *path, *body;              /* owned; body may be NULL */
    const char *content_type;       /* static; NULL: application/json */
    char *text;                     /* owned: "evict", "delete", "patch ...", "create Kind name" */
    int64_t grace_period;           /* the Eviction API's; -1: the pod's default */
};
void ebb__evict_action_free(struct ebb_evict_action *a);

/* lua_evictor.c: call `inst`'s evict(ctx, pod, opts) for an eviction the
 * core has already allowed. 0: the action in *out stands (owned by the
 * caller); EBB_WHY_EVICTOR: declined or failed, nothing done, `detail`
 * says why (a failure is also reported as a plugin error). */
int ebb__evictor_call(struct ebb_ctx *ctx, struct ebb_plugin_inst *inst, struct ebb_pod *pod,
                      const char *reason, struct ebb_evict_action *out, char *detail,
                      size_t detail_len);
/* Registration: an evict plugin's `creates` declaration (the table on top
 * of the stack), EBB_ESCRIPT naming `path` when it is malformed. */
int ebb__evictor_check_table(lua_State *L, const char *path, unsigned exts,
                             struct ebb_error *err);

/* framework.c: ask one filter plugin about a pod (a failing script says no) */
bool ebb__plugin_pod_check(struct ebb_plugin_inst *inst, int ext, struct ebb_ctx *ctx,
                           const struct ebb_pod *pod);

/* pdb.c: the API server's answer to an eviction request, PDB-wise. */
enum { EBB_PDB_ALLOW = 0, EBB_PDB_ALLOW_DECREMENT, EBB_PDB_REFUSE, EBB_PDB_ERROR };
int ebb__pdb_decide(const struct ebb_cache *c, const struct ebb_pod *pod,
                    struct ebb_map *state, const struct ebb_pdb **which, char *msg,
                    size_t msglen);
void ebb__pdb_commit(struct ebb_map *state, const struct ebb_pdb *pdb, const struct ebb_pod *pod);
void ebb__pdb_state_free(struct ebb_map *state);

/* ---- the engine ---------------------------------------------------------- */

struct ebb_engine {
    char *home;
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
    int cycle;                      /* number of the cycle running / last run */
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
    /* Prometheus (lua_prometheus.c): how queries are answered, the answer a
     * waiting plugin gets, the queries the policy's plugins declare */
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
struct ebb_plugin_def *ebb__engine_find(const struct ebb_engine *e, const char *name);

/* default_evictor.c */
extern const struct ebb_native_plugin ebb__default_evictor;

/* ---- Lua bindings (lua_*.c) ----------------------------------------------- */

int luaopen_ebb_native(lua_State *L);     /* require("ebb.native") */
void ebb__lua_push_pod(lua_State *L, const struct ebb_pod *p);
void ebb__lua_push_node(lua_State *L, const struct ebb_node *n);
/* The pod / node of a view at `idx`; raises on a wrong type or a view of
 * an object that no longer exists. */
struct ebb_pod *ebb__lua_check_pod(lua_State *L, int idx);
struct ebb_node *ebb__lua_check_node(lua_State *L, int idx);
struct ebb_pod *ebb__lua_to_pod(lua_State *L, int idx);          /* NULL if not a pod */
/* A NodeList / PodList userdata from a C array (copied). */
void ebb__lua_push_nodelist(lua_State *L, struct ebb_node *const *nodes, size_t n);
void ebb__lua_push_podlist(lua_State *L, struct ebb_pod *const *pods, size_t n);
/* Selector userdata (the selector is owned by the userdata). */
void ebb__lua_push_selector(lua_State *L, struct ebb_selector *s);
const struct ebb_selector *ebb__lua_opt_selector(lua_State *L, int idx);
/* A value tree as a Lua table (NULL -> nil). */
void ebb__lua_push_val(lua_State *L, const struct ebb_val *v);
/* A cJSON tree as a Lua table. */
struct cJSON;
void ebb__lua_push_json(lua_State *L, const struct cJSON *j);
/* The evictor object for ctx tables. */
void ebb__lua_push_evictor(lua_State *L);

void ebb__lua_register_pod(lua_State *L);
const struct ebb_taint *ebb__lua_check_taintset(lua_State *L, int idx, size_t *n);
int ebb__lua_taint_set(lua_State *L);
void ebb__lua_register_node(lua_State *L);
void ebb__lua_new_podlist(lua_State *L);
void ebb__lua_podlist_append(lua_State *L, int idx, struct ebb_pod *p);
/* The pods of a PodList at idx, or NULL with *n = 0 when it is not one;
 * raises on a list made before the cluster view changed. */
struct ebb_pod *const *ebb__lua_podlist(lua_State *L, int idx, size_t *n);
/* The pods of a PodList at idx (raises when it is not one). */
struct ebb_pod *const *ebb__lua_check_podlist(lua_State *L, int idx, size_t *n);
int ebb__pod_cmp_priority(const struct ebb_pod *a, const struct ebb_pod *b, void *ud);

/* Each adds its functions to the module table on top of the stack. */
void ebb__lua_open_usage(lua_State *L);
void ebb__lua_open_topology(lua_State *L);
void ebb__lua_open_groups(lua_State *L);
void ebb__lua_open_loadaware(lua_State *L);
void ebb__lua_open_evictor(lua_State *L);   /* ebb.json, ebb.rfc3339, ctx.api */
/* The sandbox's budget-aware string (find, match, gmatch, gsub, rep, format)
 * and table (concat, insert, remove, move, sort) functions, set into the
 * library table on top of the stack. */
void ebb__lua_open_string(lua_State *L);
void ebb__lua_open_table(lua_State *L);
void ebb__lua_open_prometheus(lua_State *L);   /* ebb.prometheus_query */
/* lua_prometheus.c: drop what the engine keeps of Prometheus (the policy's
 * queries, an answer not taken). */
void ebb__prom_forget(struct ebb_engine *e);
/* The nodes of a NodeList at idx, or NULL with *n = 0 when it is not one. */
struct ebb_node *const *ebb__lua_nodelist(lua_State *L, int idx, size_t *n);
/* Nodes from a NodeList, a list of Nodes/names, or nil (the cycle's nodes).
 * The array lives in a userdata pushed on the stack. */
struct ebb_node *const *ebb__lua_check_nodes(lua_State *L, int idx, size_t *n);

/* The ebb_ctx of the call running in L (set by framework.c). */
struct ebb_ctx *ebb__lua_ctx(lua_State *L);

#endif
