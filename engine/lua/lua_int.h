/* engine/lua/lua_int.h: what the Lua side of the engine shares: the sandboxed
 * lua_State (vm.c), the plugin engine that runs Lua plugins (lua_plugin.c)
 * and the bindings (lua_*.c). The core (framework.c, evict.c) never
 * includes it: it calls plugins through struct ebb_plugin_ops (engine.h). */
#ifndef EBB_LUA_INT_H
#define EBB_LUA_INT_H

#include <stdarg.h>
#include <stdatomic.h>
#include <lua.h>

#include "core/engine.h"
#include "ebb/lua.h"

/* ---- vm.c: one sandboxed lua_State ------------------------------------- */

struct ebb_vm {
    lua_State *L;
    struct ebb_engine *engine;
    struct ebb_plugin_inst *inst;   /* NULL for scratch states */
    char *name;                     /* for messages: plugin name or file */
    size_t mem_used, mem_limit, mem_peak;
    size_t charged_bytes;           /* of mem_used: native objects the script holds
                                       (lua_charge.c) */
    bool limit_on;                  /* the cap applies while a script runs only:
                                       C code pushing outside a call never fails */
    uint64_t budget_ns;
    atomic_int expired;             /* set by the watchdog thread */
    uint64_t expired_ns;            /* when it did (CLOCK_MONOTONIC) */
    size_t kept;                    /* bytes the plan keeps for this plugin this cycle
                                       (notes, reasons, refusals): charged to the cap */
    int kept_cycle;                 /* the cycle `kept` counts */
    bool stopped;                   /* the call running was abandoned at its budget */
    bool overran;                   /* a call ended on its budget since the plugin
                                       engine last looked (lua_plugin.c clears it) */
    int depth;                      /* nested calls into this vm */
    struct ebb_ctx *ctx;            /* the call running, set by framework.c */
    int co_ref;                     /* a suspended call's coroutine, or LUA_NOREF */
    lua_State *call_co;             /* the coroutine the engine resumed for the call
                                       running: only it may wait for the API */
    lua_State *volatile running;    /* the innermost coroutine running (a script's
                                       own, or call_co); written under the watchdog
                                       lock, which hooks it when the budget expires */
    bool engine_yield;              /* the pending yield is the evictor's, not a script's */
    bool parsing;                   /* Lua's parser runs (vm.c parse): see vm_alloc */
    bool parse_refused;             /* ... and was refused a block too large for it */
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

/* ---- budget.c: the time budget of calls, and who runs -------------------- */

int ebb__budget_start(void);                          /* the watchdog thread, once */
int ebb__budget_arm(struct ebb_vm *vm, lua_State *L); /* a call begins; EBB_ELIMIT: too deep */
void ebb__budget_disarm(void);                        /* it ended */
void ebb__budget_count_call(void);                    /* for ebb_budget_arms */
/* Make co the coroutine the watchdog hooks when the budget expires (the
 * previous one returned); ebb__budget_running only records it. */
lua_State *ebb__budget_enter(struct ebb_vm *vm, lua_State *co);
lua_State *ebb__budget_running(struct ebb_vm *vm, lua_State *co);
void ebb__budget_kept_cycle(struct ebb_vm *vm);       /* `kept` counts one cycle */
int ebb__budget_ms(const struct ebb_vm *vm);
void ebb__lua_open_coroutine(lua_State *L);           /* resume, wrap, close */

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

/* ---- lua_read.c: the one way C reads a script's values -------------------
 * Raw (no metamethod runs), each value read once, every length and count
 * bounded before anything is sized from it, no NUL in what becomes C text,
 * typed. A wrong value raises naming the field: the trailing `fmt, ...`
 * of each function is the field path ("ebb.pods: opts.states[%d]"), only
 * formatted on error. The invariants are stated at the top of lua_read.c;
 * `make check-layers` keeps the bindings on these functions. */

#define EBB_LR_FMT(n) __attribute__((format(printf, n, n + 1)))

#define EBB_LR_TEXT 1        /* becomes C text: no NUL byte */
#define EBB_LR_NONEMPTY 2    /* not "" */

/* Bounds the bindings share: a name or a label value (a qualified name is
 * at most 253 + 1 + 63 bytes), and a list of names or values. */
#define EBB_LR_NAME_MAX 512
#define EBB_LR_LIST_MAX ((size_t)1 << 20)

/* t[k] and t[i] without metamethods (t a table).               [-0, +1, -] */
int ebb__lr_field(lua_State *L, int t, const char *k);
int ebb__lr_index(lua_State *L, int t, lua_Integer i);
/* Raises unless the value at idx is a table; opt: nil/none -> false. */
void ebb__lr_table(lua_State *L, int idx, const char *fmt, ...) EBB_LR_FMT(3);
bool ebb__lr_opttable(lua_State *L, int idx, const char *fmt, ...) EBB_LR_FMT(3);
/* The length of the list at t (lua_rawlen: a border, no __len), refused
 * past max. Items 1..n may still be nil: type-check each.      [-0, +0, e] */
size_t ebb__lr_len(lua_State *L, int t, size_t max, const char *fmt, ...) EBB_LR_FMT(4);
/* How many pairs the table at t holds, refused past max (counting stops
 * there: bounded time).                                         [-0, +0, e] */
size_t ebb__lr_count(lua_State *L, int t, size_t max, const char *fmt, ...) EBB_LR_FMT(4);
/* lua_next on the table at t (an absolute index), the i-th pair: raises
 * once *i passes max. Key at -2, value at -1: never convert the key. */
bool ebb__lr_next(lua_State *L, int t, size_t *i, size_t max, const char *fmt, ...) EBB_LR_FMT(5);
/* A string (exactly: a number is refused) of at most max bytes; flags
 * EBB_LR_*. opt: nil/none -> NULL, *len = 0.                    [-0, +0, e] */
const char *ebb__lr_str(lua_State *L, int idx, size_t max, unsigned flags, size_t *len,
                        const char *fmt, ...) EBB_LR_FMT(6);
const char *ebb__lr_vstr(lua_State *L, int idx, size_t max, unsigned flags, size_t *len,
                         const char *fmt, va_list ap);
const char *ebb__lr_optstr(lua_State *L, int idx, size_t max, unsigned flags, size_t *len,
                           const char *fmt, ...) EBB_LR_FMT(6);
/* An integer (a float with an exact integer value counts) in [min, max]. */
lua_Integer ebb__lr_int(lua_State *L, int idx, lua_Integer min, lua_Integer max,
                        const char *fmt, ...) EBB_LR_FMT(5);
lua_Integer ebb__lr_optint(lua_State *L, int idx, lua_Integer dflt, lua_Integer min,
                           lua_Integer max, const char *fmt, ...) EBB_LR_FMT(6);
/* A finite number in [min, max]. */
lua_Number ebb__lr_num(lua_State *L, int idx, lua_Number min, lua_Number max, const char *fmt,
                       ...) EBB_LR_FMT(5);
/* nil/none -> false; a boolean; anything else raises. */
bool ebb__lr_bool(lua_State *L, int idx, const char *fmt, ...) EBB_LR_FMT(3);
/* The index in names (NULL-terminated) of the string at idx (dflt when
 * nil and dflt is not NULL).                                      [-0, +0, e] */
int ebb__lr_option(lua_State *L, int idx, const char *dflt, const char *const names[],
                   const char *fmt, ...) EBB_LR_FMT(5);
/* The id of the resource named by the string at idx (cpu, memory, pods,
 * nvidia.com/gpu, ...).                                           [-0, +0, e] */
int ebb__lr_resource(lua_State *L, int idx, const char *fmt, ...) EBB_LR_FMT(3);
/* The string at idx when it is one and passes max and flags, else NULL:
 * for code that must not raise (it runs outside a protected call). */
const char *ebb__lr_peekstr(lua_State *L, int idx, size_t max, unsigned flags, size_t *len);
/* An error object as C text: the string (up to a NUL in it), else its type
 * name; never converts.                                           [-0, +0, -] */
const char *ebb__lr_message(lua_State *L, int idx);
/* A zeroed scratch array of n + 1 items in a userdata pushed on the stack
 * (the Lua heap: charged, freed by the collector); n * size is checked
 * for overflow.                                                  [-0, +1, m] */
void *ebb__lr_alloc(lua_State *L, size_t n, size_t size, const char *what);
/* Raise "<path>: <problem>, got <value shown cut and escaped>" (idx 0: no
 * value). ebb__lr_show writes that rendering of the value at idx. */
int ebb__lr_error(lua_State *L, int idx, const char *problem, const char *fmt, ...) EBB_LR_FMT(4);
int ebb__lr_verror(lua_State *L, int idx, const char *problem, const char *fmt, va_list ap);
void ebb__lr_show(lua_State *L, int idx, char *buf, size_t len);

/* ---- lua_charge.c: native memory a script holds ------------------------- */

struct ebb_charge {
    size_t charged;   /* bytes counted in the vm's mem_used */
};

/* Count `bytes` held for the script running in L toward its plugin's cap
 * (a full collection first when over it); raises "memory limit of N MiB
 * exceeded" when it still does not fit.                          [-0, +0, e] */
void ebb__charge(lua_State *L, struct ebb_charge *c, size_t bytes);
/* Give c's bytes back (idempotent: __gc and __close share it). */
void ebb__uncharge(lua_State *L, struct ebb_charge *c);
/* A to-be-closed slot pushed on the stack that frees *p when the binding
 * returns or raises: park malloc'd memory there before any call that can
 * raise.                                                         [-0, +1, m]
 * A to-be-closed slot is left to close when the binding returns (or with
 * lua_closeslot): never lua_settop or lua_pop below one, as Lua 5.4.4's
 * lua_settop writes through the old stack when a __close moved it. */
void **ebb__free_guard(lua_State *L);

/* lua_evictor.c: the evict operation of Lua plugins (ebb__lua_plugin_ops) */
int ebb__lua_evictor_call(struct ebb_ctx *ctx, struct ebb_plugin_inst *inst, struct ebb_pod *pod,
                          const char *reason, struct ebb_evict_action *out, char *detail,
                          size_t detail_len);
/* Registration: an evict plugin's `creates` declaration (the table on top
 * of the stack), EBB_ESCRIPT naming `path` when it is malformed. */
int ebb__evictor_check_table(lua_State *L, const char *path, unsigned exts,
                             struct ebb_error *err);

/* ---- lua_view.c: views of the cluster cache -----------------------------
 * A Pod or Node in Lua is a view: (slot, serial), resolved against the
 * cache by its kind's binding on every access. lua_view.c interns them. */

struct ebb__view {
    uint32_t slot;
    uint32_t serial;
};

/* A kind of view: its metatable, and the registry key of its table of
 * interned views (one per kind: pod and node slots overlap). */
struct ebb__view_kind {
    const char *mt;
    const char *views;
};

/* The cache of the engine running in L; raises "no cluster view is loaded"
 * where there is none.                                          [-0, +0, e] */
struct ebb_cache *ebb__lua_cache(lua_State *L);
/* pod.object, node.object: the object read back from its text, or nil
 * (ebb_cache_text_asked when the cache kept none).        [-0, +1, m] */
void ebb__lua_push_object(lua_State *L, const struct ebb_src *src);
/* Whether Lua source names a field `object` as pod.object and node.object
 * are read: `.object` not called (A.object{...} builds an argument
 * schema), or ["object"]. Every chunk parsed is read so (vm.c), and one
 * that names it has the engine keep objects' text (ebb_engine_reads_object);
 * a name it cannot see (a computed key) is caught when read. */
bool ebb__lua_names_object(const char *s, size_t n);
/* Push the view of kind k of the object in `slot` with `serial`: the one
 * already made while a script holds it, else a new one.         [-0, +1, m] */
void ebb__lua_push_view(lua_State *L, const struct ebb__view_kind *k, uint32_t slot,
                        uint32_t serial);
/* __eq of every kind of view: same kind, slot and serial.       [-0, +1, -] */
int ebb__lua_view_eq(lua_State *L);
/* {key = value} of labels or annotations; {resource = integer}. [-0, +1, m] */
void ebb__lua_push_labels(lua_State *L, const struct ebb_labels *l);
void ebb__lua_push_res(lua_State *L, const struct ebb_res *r);
/* t[k] = v for the table on top, left unset when v is NULL.   [-0, +0, m] */
static inline void ebb__lua_setstr(lua_State *L, const char *k, const char *v)
{
    if (v != NULL) {
        lua_pushstring(L, v);
        lua_setfield(L, -2, k);
    }
}

/* ---- Lua bindings (lua_*.c) ----------------------------------------------- */

int luaopen_ebb_native(lua_State *L);     /* require("ebb.native"): lua_module.c */
void ebb__lua_open_ebb(lua_State *L);     /* lua_ebb.c's part of it */
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
void ebb__lua_open_evictions(lua_State *L);   /* lua_evictions.c: ebb.evictions */
void ebb__lua_open_loadaware(lua_State *L);
void ebb__lua_open_evictor(lua_State *L);   /* ebb.json, ebb.rfc3339, ctx.api */
/* The sandbox's budget-aware string (find, match, gmatch, gsub, rep, format)
 * and table (concat, insert, remove, move, sort, unpack) functions, set
 * into the library table on top of the stack. lua_table.c has the audit of
 * every library function the sandbox opens. */
void ebb__lua_open_string(lua_State *L);
void ebb__lua_open_table(lua_State *L);
void ebb__lua_open_prometheus(lua_State *L);   /* ebb.prometheus_query */
/* The prom_queries operation of Lua plugins (lua_prometheus.c). */
void ebb__lua_prom_queries(struct ebb_engine *e, struct ebb_plugin_inst *inst);
void ebb__lua_open_testhooks(lua_State *L);    /* lua_testhook.c: test builds only */
/* The nodes of a NodeList at idx, or NULL with *n = 0 when it is not one. */
struct ebb_node *const *ebb__lua_nodelist(lua_State *L, int idx, size_t *n);
/* Nodes from a NodeList, a list of Nodes/names, or nil (the cycle's nodes).
 * The array lives in a userdata pushed on the stack. */
struct ebb_node *const *ebb__lua_check_nodes(lua_State *L, int idx, size_t *n);

/* The ebb_ctx of the call running in L (set by framework.c). */
struct ebb_ctx *ebb__lua_ctx(lua_State *L);

#endif
