/* require("ebb.native"): the helpers strategies call on whole sets.
 *
 * ebb.pods(nodes, opts) is the workhorse: it walks the pods of many nodes in
 * C and applies every common predicate (phase, namespaces, label selector,
 * owner kinds, age, restarts, states, conditions, exit codes, the profile's
 * evictor filters) before a single pod reaches Lua. Strategies then sort
 * and evict what is left.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "ebb/affinity.h"
#include "ebb/quantity.h"
#include "ebb/fit.h"
#include "ebb/selector.h"
#include "lua/lua_int.h"

#define SELECTOR_MT "ebb.Selector"
#define EVICTOR_MT "ebb.Evictor"
#define REQS_GUARD_MT "ebb.ReqsGuard"


struct ebb_ctx *ebb__lua_ctx(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    return vm ? vm->ctx : NULL;
}

static struct ebb_engine *engine_of(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    if (vm == NULL || vm->engine == NULL || vm->engine->cache == NULL)
        luaL_error(L, "no cluster view is loaded");
    return vm->engine;
}

static struct ebb_ctx *need_ctx(lua_State *L)
{
    struct ebb_ctx *ctx = ebb__lua_ctx(L);
    if (ctx == NULL)
        luaL_error(L, "the evictor is only available while the plugin runs");
    return ctx;
}

/* ---- selectors ---------------------------------------------------------- */

struct selector_ud {
    struct ebb_selector *s;
    struct ebb_charge charge;
};

static int l_selector_gc(lua_State *L)
{
    struct selector_ud *u = luaL_checkudata(L, 1, SELECTOR_MT);
    ebb_selector_free(u->s);
    u->s = NULL;
    ebb__uncharge(L, &u->charge);
    return 0;
}

/* The selector, owned by a new userdata charged to the running script's
 * memory cap (freed with the selector when it cannot be charged). */
void ebb__lua_push_selector(lua_State *L, struct ebb_selector *s)
{
    struct selector_ud *u = lua_newuserdatauv(L, sizeof(*u), 0);

    u->s = s;
    u->charge.charged = 0;
    luaL_setmetatable(L, SELECTOR_MT);
    ebb__charge(L, &u->charge, ebb_selector_bytes(s));
}

const struct ebb_selector *ebb__lua_opt_selector(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx))
        return NULL;
    return ((struct selector_ud *)luaL_checkudata(L, idx, SELECTOR_MT))->s;
}

static const char *op_names[] = { "In", "NotIn", "Exists", "DoesNotExist", NULL };

/* What a compiled selector can hold (its counts are 16-bit): a script's
 * selector past these is refused, never cut. */
#define SEL_REQS_MAX 65535
#define SEL_VALUES_MAX 65535

/* Requirements being built, owned by a to-be-closed userdata so that a
 * raise at any point releases their strings and arrays. */
struct reqs_guard {
    struct ebb_req *reqs;   /* in the Lua heap (a scratch userdata) */
    size_t n;               /* built so far: released by the guard */
};

static int l_reqs_guard_close(lua_State *L)
{
    struct reqs_guard *g = luaL_checkudata(L, 1, REQS_GUARD_MT);
    for (size_t i = 0; i < g->n; i++)
        ebb_req_free(&g->reqs[i]);
    g->n = 0;
    return 0;
}

static ebb_str intern_text(lua_State *L, int idx, const char *fmt, int a, int b)
{
    size_t len;
    const char *s = ebb__lr_str(L, idx, EBB_LR_NAME_MAX, EBB_LR_TEXT, &len, fmt, a, b);
    ebb_str v = ebb_str_intern(s, len);

    if (v == NULL)
        luaL_error(L, "not enough memory");
    return v;
}

/* Compile the table form of a metav1.LabelSelector. Raises with a message
 * naming the field on a malformed selector. Each field is read once
 * (raw), counted, then filled from that same table up to its count. */
static struct ebb_selector *compile_table(lua_State *L, int t)
{
    int labels = 0, exprs = 0, top;
    size_t nlabels = 0, nexprs = 0, it = 0;
    struct reqs_guard *g;
    struct ebb_selector *sel = NULL;
    struct ebb_req *own;

    t = lua_absindex(L, t);
    switch (ebb__lr_field(L, t, "matchLabels")) {
    case LUA_TTABLE:
        labels = lua_gettop(L);
        nlabels = ebb__lr_count(L, labels, SEL_REQS_MAX, "matchLabels");
        break;
    case LUA_TNIL:   /* a policy's null was left out: anything else is a mistake */
        break;
    default:
        ebb__lr_error(L, -1, "expected a map of strings", "matchLabels");
    }
    switch (ebb__lr_field(L, t, "matchExpressions")) {
    case LUA_TTABLE:
        exprs = lua_gettop(L);
        nexprs = ebb__lr_len(L, exprs, SEL_REQS_MAX, "matchExpressions");
        break;
    case LUA_TNIL:
        break;
    default:
        ebb__lr_error(L, -1, "expected a list", "matchExpressions");
    }
    if (nlabels + nexprs > SEL_REQS_MAX)
        ebb__lr_error(L, 0, "at most 65535 requirements in all", "matchLabels and matchExpressions");
    g = lua_newuserdatauv(L, sizeof(*g), 0);
    g->reqs = NULL;
    g->n = 0;
    luaL_setmetatable(L, REQS_GUARD_MT);
    lua_toclose(L, -1);
    g->reqs = ebb__lr_alloc(L, nlabels + nexprs, sizeof(*g->reqs), "a label selector");
    top = lua_gettop(L);
    if (labels != 0) {
        lua_pushnil(L);
        while (ebb__lr_next(L, labels, &it, nlabels, "matchLabels")) {
            struct ebb_req *r = &g->reqs[g->n++];
            if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
                ebb__lr_error(L, 0, "keys and values must be strings", "matchLabels");
            r->op = EBB_OP_IN;
            r->key = intern_text(L, -2, "matchLabels (a key)", 0, 0);
            if ((r->values = malloc(sizeof(ebb_str))) == NULL)
                luaL_error(L, "not enough memory");
            r->values[0] = intern_text(L, -1, "matchLabels (a value)", 0, 0);
            r->nvalues = 1;
            lua_pop(L, 1);
        }
    }
    for (size_t i = 1; i <= nexprs; i++) {
        struct ebb_req *r = &g->reqs[g->n++];
        int e, o;
        size_t nv;

        lua_settop(L, top);
        if (ebb__lr_index(L, exprs, (lua_Integer)i) != LUA_TTABLE)
            ebb__lr_error(L, -1, "expected a table", "matchExpressions[%d]", (int)i - 1);
        e = lua_gettop(L);
        ebb__lr_field(L, e, "key");
        r->key = intern_text(L, -1, "matchExpressions[%d].key", (int)i - 1, 0);
        ebb__lr_field(L, e, "operator");
        {
            size_t ol;
            const char *os = ebb__lr_str(L, -1, EBB_LR_NAME_MAX, 0, &ol,
                                         "matchExpressions[%d].operator", (int)i - 1);
            char shown[256];
            for (o = 0; op_names[o] != NULL; o++)
                if (ol == strlen(op_names[o]) && memcmp(os, op_names[o], ol) == 0)
                    break;
            if (op_names[o] == NULL) {
                ebb__lr_show(L, -1, shown, sizeof(shown));
                luaL_error(L, "matchExpressions[%d].operator: %s is not a valid label selector "
                              "operator", (int)i - 1, shown);
            }
        }
        r->op = (uint8_t)o;
        switch (ebb__lr_field(L, e, "values")) {
        case LUA_TTABLE:
            nv = ebb__lr_len(L, -1, SEL_VALUES_MAX, "matchExpressions[%d].values", (int)i - 1);
            break;
        case LUA_TNIL:
            nv = 0;
            break;
        default:
            return ebb__lr_error(L, -1, "expected a list", "matchExpressions[%d].values",
                                 (int)i - 1), NULL;
        }
        if ((o == EBB_OP_IN || o == EBB_OP_NOT_IN) && nv == 0)
            luaL_error(L, "matchExpressions[%d].values: must be non-empty for %s", (int)i - 1,
                       op_names[o]);
        if ((o == EBB_OP_EXISTS || o == EBB_OP_DOES_NOT_EXIST) && nv > 0)
            luaL_error(L, "matchExpressions[%d].values: must be empty for %s", (int)i - 1,
                       op_names[o]);
        if (nv > 0 && (r->values = calloc(nv, sizeof(ebb_str))) == NULL)
            luaL_error(L, "not enough memory");
        for (size_t j = 1; j <= nv; j++) {
            ebb__lr_index(L, -1, (lua_Integer)j);
            r->values[r->nvalues++] =
                intern_text(L, -1, "matchExpressions[%d].values[%d]", (int)i - 1, (int)j - 1);
            lua_pop(L, 1);
            if ((j & 4095) == 0)
                ebb__vm_check(L);
        }
    }
    /* the selector takes a malloc'd array */
    if ((own = malloc((g->n + 1) * sizeof(*own))) == NULL)
        luaL_error(L, "not enough memory");
    memcpy(own, g->reqs, g->n * sizeof(*own));
    if (ebb_selector_from_reqs(own, (uint16_t)g->n, &sel) != 0) {
        free(own);
        luaL_error(L, "not enough memory");
    }
    g->n = 0;   /* the selector owns them now */
    return sel;
}

#define SELECTOR_MAX ((size_t)1 << 20)

/* ebb.selector(spec) -> Selector                                 [-0, +1, e]
 * spec: a metav1.LabelSelector table ({matchLabels=..., matchExpressions=...})
 * or the string form ("app=web,tier in (a,b)"). An empty table or string
 * selects everything. What the selector holds counts toward the plugin's
 * memory cap until it is collected. */
static int l_selector(lua_State *L)
{
    struct ebb_selector *sel = NULL;

    if (lua_type(L, 1) == LUA_TSTRING) {
        struct ebb_error err = { 0 };
        size_t len;
        const char *s = ebb__lr_str(L, 1, SIZE_MAX, EBB_LR_TEXT, &len, "ebb.selector");
        /* bounded as the API server bounds a request line */
        if (len > SELECTOR_MAX)
            return luaL_argerror(L, 1, "a label selector string is at most 1 MiB");
        if (ebb_selector_parse(s, &sel, &err) != 0)
            return luaL_error(L, "invalid label selector: %s", err.msg);
    } else if (lua_istable(L, 1)) {
        /* the guard it leaves on the stack holds nothing now; it is closed
         * when this function returns (never lua_settop over a to-be-closed
         * slot: Lua 5.4.4's may write through a stack its __close moved) */
        sel = compile_table(L, 1);
    } else {
        return luaL_argerror(L, 1, "expected a label selector table or string");
    }
    ebb__lua_push_selector(L, sel);
    return 1;
}

/* sel:matches(pod | node | labels table) -> boolean              [-0, +1, e] */
static int l_selector_matches(lua_State *L)
{
    const struct ebb_selector *sel = ((struct selector_ud *)luaL_checkudata(L, 1, SELECTOR_MT))->s;
    struct ebb_pod *p;

    if ((p = ebb__lua_to_pod(L, 2)) != NULL) {
        lua_pushboolean(L, ebb_selector_matches(sel, &p->labels));
    } else if (luaL_testudata(L, 2, "ebb.Node")) {
        lua_pushboolean(L, ebb_selector_matches(sel, &ebb__lua_check_node(L, 2)->labels));
    } else if (lua_istable(L, 2)) {
        /* a plain table: a temporary label set. A key never interned is
         * named by no requirement and is left out; a value never interned
         * equals no requirement value, and is kept as the script's own text
         * (anchored in its table while we match) for Gt/Lt. */
        size_t n = ebb__lr_count(L, 2, EBB_LR_LIST_MAX, "sel:matches: labels"), it = 0;
        struct ebb_labels l = { 0, ebb__lr_alloc(L, n, sizeof(struct ebb_kv), "labels") };

        lua_pushnil(L);
        while (ebb__lr_next(L, 2, &it, n, "sel:matches: labels")) {
            size_t kl, vl;
            const char *k, *v;
            ebb_str ks;
            k = ebb__lr_str(L, -2, EBB_LR_NAME_MAX, EBB_LR_TEXT, &kl, "sel:matches: labels (a key)");
            v = ebb__lr_str(L, -1, EBB_LR_NAME_MAX, EBB_LR_TEXT, &vl, "sel:matches: labels (a value)");
            if ((ks = ebb_str_find(k, kl)) != NULL) {
                ebb_str vs = ebb_str_find(v, vl);
                l.kv[l.n].key = ks;
                l.kv[l.n].value = vs != NULL ? vs : v;
                l.n++;
            }
            lua_pop(L, 1);
        }
        lua_pushboolean(L, ebb_selector_matches(sel, &l));
    } else {
        return luaL_argerror(L, 2, "expected a pod, a node or a table of labels");
    }
    return 1;
}

static int l_selector_tostring(lua_State *L)
{
    const struct ebb_selector *sel = ((struct selector_ud *)luaL_checkudata(L, 1, SELECTOR_MT))->s;
    char buf[1024];
    ebb_selector_format(sel, buf, sizeof(buf));
    lua_pushstring(L, buf);
    return 1;
}

/* ---- the pod query ------------------------------------------------------ */

enum { PHASE_ACTIVE = -1, PHASE_ALL = -2 };
enum { NODE_AFFINITY_ANY = 0, NODE_AFFINITY_REQUIRED, NODE_AFFINITY_PREFERRED };

struct cond_filter {
    ebb_str type, status, reason;
    bool has_type, has_status, has_reason;   /* set but maybe not interned */
    int64_t min_since;                       /* -1: unset */
};

struct query {
    int phase;
    ebb_str *ns_in, *ns_out, *kinds_in, *kinds_out, *states, *reasons;
    size_t nns_in, nns_out, nkinds_in, nkinds_out, nstates, nreasons;
    unsigned state_phases;       /* phases named in `states` (bit EBB_PHASE_*) */
    bool has_ns_in, has_kinds_in;
    const struct ebb_selector *sel;
    bool filter, pre;
    int64_t older_than;          /* -1: unset */
    int64_t min_age;             /* -1: unset */
    int64_t min_restarts;        /* -1: unset */
    bool with_init, with_ephemeral;
    struct cond_filter *conds;
    size_t nconds;
    int32_t *exit_codes;
    size_t nexit;
    int node_affinity;           /* NODE_AFFINITY_*: pods that have this kind */
    bool off_node;               /* pods their node no longer matches */
    int where;                   /* stack index of a function, 0: none */
    int64_t now;
};

/* A list of strings from opts[field] (read once, raw, at most
 * EBB_LR_LIST_MAX) as interned pointers: NULL entries for strings never
 * interned, which match nothing. The array lives in a userdata left on the
 * stack. `present`: the field is a list (even an empty one). */
static ebb_str *str_list(lua_State *L, int opts, const char *field, size_t *n, bool *present)
{
    ebb_str *v;
    int t;

    *n = 0;
    if (present)
        *present = false;
    if (ebb__lr_field(L, opts, field) == LUA_TNIL) {
        lua_pop(L, 1);
        return NULL;
    }
    t = lua_gettop(L);
    *n = ebb__lr_len(L, t, EBB_LR_LIST_MAX, "ebb.pods: option '%s'", field);
    if (present)
        *present = true;
    v = ebb__lr_alloc(L, *n, sizeof(*v), "ebb.pods");
    for (size_t i = 1; i <= *n; i++) {
        size_t sl;
        const char *s;
        ebb__lr_index(L, t, (lua_Integer)i);
        s = ebb__lr_str(L, -1, EBB_LR_LIST_MAX, 0, &sl, "ebb.pods: option '%s'[%zu]", field, i);
        v[i - 1] = ebb_str_find(s, sl);
        lua_pop(L, 1);
    }
    lua_remove(L, t);   /* the array stays anchored on the stack */
    return v;
}

static bool in_list(ebb_str s, ebb_str *v, size_t n)
{
    if (s == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        if (v[i] == s)
            return true;
    return false;
}

static lua_Integer opt_int(lua_State *L, int opts, const char *field, lua_Integer dflt)
{
    lua_Integer v;

    ebb__lr_field(L, opts, field);
    v = ebb__lr_optint(L, -1, dflt, LUA_MININTEGER, LUA_MAXINTEGER, "ebb.pods: option '%s'", field);
    lua_pop(L, 1);
    return v;
}

/* An option's truth, as Lua's: anything but nil and false. */
static bool opt_bool(lua_State *L, int opts, const char *field)
{
    bool b;

    ebb__lr_field(L, opts, field);
    b = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return b;
}

static int parse_phase(const char *s, size_t n)
{
    static const char *const names[] = { "Unknown", "Pending", "Running", "Succeeded", "Failed" };
    if (n == 6 && memcmp(s, "active", 6) == 0)
        return PHASE_ACTIVE;
    if (n == 3 && memcmp(s, "all", 3) == 0)
        return PHASE_ALL;
    for (int i = 0; i < 5; i++)
        if (strlen(names[i]) == n && memcmp(s, names[i], n) == 0)
            return i;
    return -100;
}

/* Read opts (at index opts, nil or a table) into q. Every field is read
 * once, raw; the arrays live in userdata left on the stack above opts. */
static void parse_query(lua_State *L, int opts, struct query *q)
{
    size_t n, sl;
    const char *s;
    int t;

    memset(q, 0, sizeof(*q));
    q->phase = PHASE_ACTIVE;
    q->older_than = q->min_age = q->min_restarts = -1;
    q->now = ebb__engine_now(engine_of(L));
    if (!ebb__lr_opttable(L, opts, "ebb.pods: opts"))
        return;
    opts = lua_absindex(L, opts);
    if (ebb__lr_field(L, opts, "phase") != LUA_TNIL) {
        s = ebb__lr_str(L, -1, 64, 0, &sl, "ebb.pods: option 'phase'");
        if ((q->phase = parse_phase(s, sl)) == -100)
            ebb__lr_error(L, -1, "expected active, all, Pending, Running, Succeeded, Failed or "
                                 "Unknown", "ebb.pods: option 'phase'");
    }
    lua_pop(L, 1);
    if (ebb__lr_field(L, opts, "namespaces") != LUA_TNIL) {
        t = lua_gettop(L);
        ebb__lr_table(L, t, "ebb.pods: option 'namespaces'");
        q->ns_in = str_list(L, t, "include", &q->nns_in, &q->has_ns_in);
        q->ns_out = str_list(L, t, "exclude", &q->nns_out, NULL);
        q->has_ns_in = q->has_ns_in && q->nns_in > 0;
    }
    if (ebb__lr_field(L, opts, "owner_kinds") != LUA_TNIL) {
        t = lua_gettop(L);
        ebb__lr_table(L, t, "ebb.pods: option 'owner_kinds'");
        q->kinds_in = str_list(L, t, "include", &q->nkinds_in, &q->has_kinds_in);
        q->kinds_out = str_list(L, t, "exclude", &q->nkinds_out, NULL);
        q->has_kinds_in = q->has_kinds_in && q->nkinds_in > 0;
    }
    q->states = str_list(L, opts, "states", &q->nstates, NULL);
    q->reasons = str_list(L, opts, "reasons", &q->nreasons, NULL);
    /* Phases are kept as an enum, not as interned text: match them by name. */
    if (ebb__lr_field(L, opts, "states") == LUA_TTABLE) {
        t = lua_gettop(L);
        n = ebb__lr_len(L, t, EBB_LR_LIST_MAX, "ebb.pods: option 'states'");
        for (size_t i = 1; i <= n; i++) {
            int ph;
            ebb__lr_index(L, t, (lua_Integer)i);
            s = ebb__lr_str(L, -1, EBB_LR_LIST_MAX, 0, &sl, "ebb.pods: option 'states'[%zu]", i);
            if ((ph = parse_phase(s, sl)) >= 0)
                q->state_phases |= 1u << ph;
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    ebb__lr_field(L, opts, "selector");   /* stays on the stack: q->sel is its */
    q->sel = ebb__lua_opt_selector(L, -1);
    q->filter = opt_bool(L, opts, "filter") || opt_bool(L, opts, "evictable");
    q->pre = opt_bool(L, opts, "pre_eviction_filter") || opt_bool(L, opts, "evictable");
    q->with_init = opt_bool(L, opts, "including_init");
    q->with_ephemeral = opt_bool(L, opts, "including_ephemeral");
    q->older_than = opt_int(L, opts, "older_than", -1);
    q->min_age = opt_int(L, opts, "min_age", -1);
    q->min_restarts = opt_int(L, opts, "min_restarts", -1);
    if (ebb__lr_field(L, opts, "exit_codes") != LUA_TNIL) {
        t = lua_gettop(L);
        n = ebb__lr_len(L, t, EBB_LR_LIST_MAX, "ebb.pods: option 'exit_codes'");
        q->exit_codes = ebb__lr_alloc(L, n, sizeof(int32_t), "ebb.pods");
        for (size_t i = 1; i <= n; i++) {
            ebb__lr_index(L, t, (lua_Integer)i);
            q->exit_codes[i - 1] = (int32_t)ebb__lr_int(L, -1, INT32_MIN, INT32_MAX,
                                                        "ebb.pods: option 'exit_codes'[%zu]", i);
            lua_pop(L, 1);
        }
        q->nexit = n;
    }
    if (ebb__lr_field(L, opts, "conditions") != LUA_TNIL) {
        t = lua_gettop(L);
        n = ebb__lr_len(L, t, EBB_LR_LIST_MAX, "ebb.pods: option 'conditions'");
        q->conds = ebb__lr_alloc(L, n, sizeof(*q->conds), "ebb.pods");
        for (size_t i = 1; i <= n; i++) {
            static const char *const names[] = { "type", "status", "reason" };
            struct cond_filter *c = &q->conds[i - 1];
            int ct;
            if (ebb__lr_index(L, t, (lua_Integer)i) != LUA_TTABLE)
                ebb__lr_error(L, -1, "expected a table", "ebb.pods: conditions[%zu]", i);
            ct = lua_gettop(L);
            for (int f = 0; f < 3; f++) {
                bool *has = f == 0 ? &c->has_type : f == 1 ? &c->has_status : &c->has_reason;
                ebb_str *v = f == 0 ? &c->type : f == 1 ? &c->status : &c->reason;
                if (ebb__lr_field(L, ct, names[f]) != LUA_TNIL) {
                    s = ebb__lr_str(L, -1, EBB_LR_LIST_MAX, 0, &sl, "ebb.pods: conditions[%zu].%s",
                                    i, names[f]);
                    if (sl > 0) {
                        *has = true;
                        *v = ebb_str_find(s, sl);
                    }
                }
                lua_pop(L, 1);
            }
            ebb__lr_field(L, ct, "minTimeSinceLastTransitionSeconds");
            c->min_since = ebb__lr_optint(L, -1, -1, 0, LUA_MAXINTEGER,
                                          "ebb.pods: conditions[%zu].minTimeSinceLastTransitionSeconds",
                                          i);
            lua_pop(L, 2);
        }
        q->nconds = n;
    }
    if (ebb__lr_field(L, opts, "node_affinity") != LUA_TNIL) {
        static const char *const kinds[] = { "required", "preferred", NULL };
        q->node_affinity = ebb__lr_option(L, -1, NULL, kinds, "ebb.pods: option 'node_affinity'") == 0
                               ? NODE_AFFINITY_REQUIRED
                               : NODE_AFFINITY_PREFERRED;
    }
    lua_pop(L, 1);
    q->off_node = opt_bool(L, opts, "off_node");
    if (ebb__lr_field(L, opts, "where") == LUA_TFUNCTION)
        q->where = lua_gettop(L);
    else if (!lua_isnil(L, -1))
        ebb__lr_error(L, -1, "expected a function", "ebb.pods: option 'where'");
    else
        lua_pop(L, 1);
}

static bool cond_fields_match(const struct ebb_condition *c, const struct cond_filter *f)
{
    return (!f->has_type || c->type == f->type) && (!f->has_status || c->status == f->status) &&
           (!f->has_reason || c->reason == f->reason);
}

/* status.reason or a container's waiting or terminated reason is in v
 * (init and ephemeral containers as the query says). */
static bool match_reasons(const struct query *q, const struct ebb_pod *p, ebb_str *v, size_t n)
{
    if (in_list(p->reason, v, n))
        return true;
    for (uint16_t i = 0; i < p->ncstatus; i++) {
        const struct ebb_cstatus *c = &p->cstatus[i];
        if ((c->kind == EBB_CONT_INIT && !q->with_init) ||
            (c->kind == EBB_CONT_EPHEMERAL && !q->with_ephemeral))
            continue;
        if ((c->state == EBB_CSTATE_WAITING || c->state == EBB_CSTATE_TERMINATED) &&
            in_list(c->reason, v, n))
            return true;
    }
    return false;
}

static bool match_states(const struct query *q, const struct ebb_pod *p)
{
    return (q->state_phases & (1u << p->phase)) || match_reasons(q, p, q->states, q->nstates);
}

static bool match_conditions(const struct query *q, const struct ebb_pod *p)
{
    for (size_t f = 0; f < q->nconds; f++) {
        for (uint16_t i = 0; i < p->nconditions; i++) {
            const struct ebb_condition *c = &p->conditions[i];
            if (!cond_fields_match(c, &q->conds[f]))
                continue;
            if (q->conds[f].min_since >= 0) {
                /* LastTransitionTime.IsZero(): absent or Go's zero time */
                if (c->last_transition == EBB_TIME_NONE || c->last_transition == EBB_TIME_GO_ZERO)
                    continue;
                int64_t idle = ebb_time_since(q->now, c->last_transition);
                if (idle < 0 || idle < q->conds[f].min_since)
                    continue;
            }
            return true;
        }
    }
    return false;
}

static bool match_exit_codes(const struct query *q, const struct ebb_pod *p)
{
    for (uint16_t i = 0; i < p->ncstatus; i++) {
        const struct ebb_cstatus *c = &p->cstatus[i];
        if (c->kind == EBB_CONT_EPHEMERAL || (c->kind == EBB_CONT_INIT && !q->with_init))
            continue;
        if (c->state != EBB_CSTATE_TERMINATED)
            continue;
        for (size_t k = 0; k < q->nexit; k++)
            if (q->exit_codes[k] == c->exit_code)
                return true;
    }
    return false;
}

/* Everything but the evictor filters and `where` (the costly parts). */
static bool match_cheap(const struct query *q, const struct ebb_pod *p)
{
    if (p->flags & EBB_POD_GONE)
        return false;
    if (q->phase == PHASE_ACTIVE) {
        if (p->phase == EBB_PHASE_SUCCEEDED || p->phase == EBB_PHASE_FAILED)
            return false;
    } else if (q->phase != PHASE_ALL && p->phase != q->phase) {
        return false;
    }
    if (q->has_ns_in && !in_list(p->ns, q->ns_in, q->nns_in))
        return false;
    if (q->nns_out && in_list(p->ns, q->ns_out, q->nns_out))
        return false;
    if (q->sel && !ebb_selector_matches(q->sel, &p->labels))
        return false;
    if (q->has_kinds_in || q->nkinds_out) {
        bool any_in = false;
        for (uint16_t i = 0; i < p->nowners; i++) {
            if (in_list(p->owners[i].kind, q->kinds_in, q->nkinds_in))
                any_in = true;
            if (in_list(p->owners[i].kind, q->kinds_out, q->nkinds_out))
                return false;
        }
        if (q->has_kinds_in && !any_in)
            return false;
    }
    if (q->older_than >= 0 || q->min_age >= 0) {
        int64_t age = ebb_time_since(q->now, p->created);
        /* PodLifeTime: a pod created in the future is never old enough */
        if (q->older_than >= 0 && !(age >= 0 && age > q->older_than))
            return false;
        /* RemoveFailedPods compares uint(age): a negative age is 0 here
         * (upstream's float-to-uint conversion is platform-defined) */
        if (q->min_age >= 0 && (age < 0 ? 0 : age) < q->min_age)
            return false;
    }
    if (q->min_restarts >= 0) {
        int64_t r = p->restarts + (q->with_init ? p->init_restarts : 0);
        if (r < q->min_restarts)
            return false;
    }
    if (q->nstates && !match_states(q, p))
        return false;
    if (q->nreasons && !match_reasons(q, p, q->reasons, q->nreasons))
        return false;
    if (q->nconds && !match_conditions(q, p))
        return false;
    if (q->nexit && !match_exit_codes(q, p))
        return false;
    if (q->node_affinity == NODE_AFFINITY_REQUIRED && !ebb_pod_has_required_node_affinity(p))
        return false;
    if (q->node_affinity == NODE_AFFINITY_PREFERRED && !ebb_pod_has_preferred_node_affinity(p))
        return false;
    return true;
}

static void query_node(lua_State *L, struct ebb_engine *e, struct ebb_ctx *ctx,
                       const struct query *q, ebb_str node, int out)
{
    const struct ebb_podvec *pv = ebb_cache_pods_on_node(e->cache, node);
    struct ebb_node *n = q->off_node && node ? ebb_cache_node(e->cache, node) : NULL;

    for (uint32_t i = 0; i < pv->n; i++) {
        struct ebb_pod *p = pv->v[i];
        if (!match_cheap(q, p))
            continue;
        if (q->filter && !ebb_ctx_filter(ctx, p))
            continue;
        if (q->pre && !ebb_ctx_pre_eviction_filter(ctx, p))
            continue;
        /* after the filters, as upstream's node affinity strategy asks */
        if (q->off_node && n != NULL && ebb_pod_matches_node_selector(p, n))
            continue;
        if (q->where) {
            bool keep;
            lua_pushvalue(L, q->where);
            ebb__lua_push_pod(L, p);
            lua_call(L, 1, 1);
            keep = lua_toboolean(L, -1);
            lua_pop(L, 1);
            if (!keep)
                continue;
        }
        ebb__lua_podlist_append(L, out, p);
    }
    ebb__vm_check(L);
}

/* The interned name of the node named by the string at idx (NULL when no
 * object has that name: it then matches nothing). */
static ebb_str node_name(lua_State *L, int idx, const char *fmt, ...) EBB_LR_FMT(3);
static ebb_str node_name(lua_State *L, int idx, const char *fmt, ...)
{
    size_t len;
    const char *s;
    va_list ap;

    va_start(ap, fmt);
    s = ebb__lr_vstr(L, idx, SIZE_MAX, 0, &len, fmt, ap);
    va_end(ap);
    return len > EBB_LR_NAME_MAX ? NULL : ebb_str_find(s, len);
}

/* ebb.pods(where, opts) -> PodList                               [-0, +1, e]
 * where: a NodeList, a Node, a node name, a list of those, or nil for every
 * node of the cycle. Pods come node by node, each node's pods by
 * namespace/name. opts (all optional):
 *   phase = "active" (default: not Succeeded/Failed) | "all" | a phase name
 *   namespaces = {include = {...}} | {exclude = {...}}
 *   selector = ebb.selector(...)
 *   owner_kinds = {include = {...}} | {exclude = {...}}
 *   older_than = seconds (now - creationTimestamp > seconds; never a pod
 *   created in the future)
 *   min_age = seconds (now - creationTimestamp >= seconds; a pod created in
 *   the future counts as age 0). Both: a missing creationTimestamp is Go's
 *   zero time, as upstream's arithmetic makes it (ebb_time_since)
 *   min_restarts = n (sum of app container restarts, + init with including_init)
 *   states = {...} (phase, status.reason, container waiting/terminated reasons)
 *   reasons = {...} (status.reason, container waiting/terminated reasons;
 *   never the phase)
 *   conditions = {{type=, status=, reason=, minTimeSinceLastTransitionSeconds=}...}
 *   exit_codes = {...} (terminated containers)
 *   including_init, including_ephemeral = booleans for states/exit codes/restarts
 *   node_affinity = "required" | "preferred": pods with node affinity of
 *   that kind (before the filters, as upstream's node affinity strategy)
 *   off_node = true: pods whose nodeSelector and required node affinity
 *   their node no longer matches (PodMatchNodeSelector; after the filters)
 *   filter, pre_eviction_filter = true: the profile's evictor filters;
 *   evictable = true: both
 *   where = function(pod) -> boolean, applied last */
static int l_pods(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    struct ebb_ctx *ctx = ebb__lua_ctx(L);
    struct query q;
    int out;
    size_t n;
    struct ebb_node *const *nodes;

    parse_query(L, 2, &q);
    if ((q.filter || q.pre) && ctx == NULL)
        return luaL_error(L, "ebb.pods: evictor filters are only available while the plugin runs");
    ebb__lua_new_podlist(L);
    out = lua_gettop(L);
    if (lua_isnoneornil(L, 1)) {
        for (size_t i = 0; i < e->ncycle_nodes; i++)
            query_node(L, e, ctx, &q, e->cycle_nodes[i]->name, out);
    } else if ((nodes = ebb__lua_nodelist(L, 1, &n)) != NULL || n > 0) {
        for (size_t i = 0; i < n; i++)
            query_node(L, e, ctx, &q, nodes[i]->name, out);
    } else if (luaL_testudata(L, 1, "ebb.Node")) {
        query_node(L, e, ctx, &q, ebb__lua_check_node(L, 1)->name, out);
    } else if (lua_type(L, 1) == LUA_TSTRING) {
        query_node(L, e, ctx, &q, node_name(L, 1, "ebb.pods: nodes"), out);
    } else if (lua_istable(L, 1)) {
        n = ebb__lr_len(L, 1, EBB_LR_LIST_MAX, "ebb.pods: nodes");
        for (size_t i = 1; i <= n; i++) {
            ebb_str name;
            if (ebb__lr_index(L, 1, (lua_Integer)i) == LUA_TSTRING)
                name = node_name(L, -1, "ebb.pods: nodes[%zu]", i);
            else
                name = ebb__lua_check_node(L, -1)->name;
            lua_pop(L, 1);
            query_node(L, e, ctx, &q, name, out);
        }
    } else {
        return luaL_argerror(L, 1, "expected nodes (NodeList, Node, name or list) or nil");
    }
    lua_pushvalue(L, out);
    return 1;
}

struct ebb_node *const *ebb__lua_check_nodes(lua_State *L, int idx, size_t *n)
{
    struct ebb_engine *e = engine_of(L);
    struct ebb_node *const *v;
    struct ebb_node **out;
    size_t len;

    if (lua_isnoneornil(L, idx)) {
        *n = e->ncycle_nodes;
        return e->cycle_nodes;
    }
    if ((v = ebb__lua_nodelist(L, idx, n)) != NULL)
        return v;
    idx = lua_absindex(L, idx);
    if (luaL_testudata(L, idx, "ebb.Node")) {
        out = lua_newuserdatauv(L, sizeof(*out), 0);
        out[0] = ebb__lua_check_node(L, idx);
        *n = 1;
        return out;
    }
    len = ebb__lr_len(L, idx, EBB_LR_LIST_MAX, "nodes");
    out = ebb__lr_alloc(L, len, sizeof(*out), "nodes");
    *n = 0;
    for (size_t i = 1; i <= len; i++) {
        struct ebb_node *nd;
        if (ebb__lr_index(L, idx, (lua_Integer)i) == LUA_TSTRING) {
            if ((nd = ebb_cache_node(e->cache, node_name(L, -1, "nodes[%zu]", i))) == NULL)
                ebb__lr_error(L, -1, "no node of that name", "nodes[%zu]", i);
        } else {
            nd = ebb__lua_check_node(L, -1);
        }
        lua_pop(L, 1);
        out[(*n)++] = nd;
    }
    return out;
}

/* ebb.fits(pod, node) -> true | false, why                        [-0, +1|2, e]
 * The descheduler's NodeFit: node selector and required affinity,
 * NoSchedule/NoExecute taints, requests against what the node's pods
 * request (when it is not the pod's node), a free pod slot, schedulable,
 * the pod's own required anti-affinity against the node's pods. */
static int l_fits(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    struct ebb_node *n = ebb__lua_check_node(L, 2);
    const char *why = NULL;

    if (ebb_node_fit(e->cache, p, n, &why)) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushboolean(L, 0);
    lua_pushstring(L, why);
    return 2;
}

/* ebb.fits_any_other(pod, nodes) -> boolean: PodFitsAnyOtherNode  [-0, +1, e]
 * ebb.fits_any(pod, nodes) -> boolean: PodFitsAnyNode (its own included)
 * nodes: a NodeList, a list of nodes or names, or nil for the cycle's. */
static int l_fits_any_other(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    size_t n;
    struct ebb_node *const *nodes = ebb__lua_check_nodes(L, 2, &n);
    lua_pushboolean(L, ebb_pod_fits_any_other_node(e->cache, p, nodes, n));
    return 1;
}

static int l_fits_any(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    size_t n;
    struct ebb_node *const *nodes = ebb__lua_check_nodes(L, 2, &n);
    lua_pushboolean(L, ebb_pod_fits_any_node(e->cache, p, nodes, n));
    return 1;
}

/* ebb.pod(namespace, name) -> Pod | nil                          [-0, +1, e] */
static int l_pod(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    size_t nl, ml;
    const char *ns = ebb__lr_str(L, 1, EBB_LR_LIST_MAX, 0, &nl, "ebb.pod: namespace");
    const char *name = ebb__lr_str(L, 2, EBB_LR_LIST_MAX, 0, &ml, "ebb.pod: name");
    struct ebb_pod *p = ebb_cache_pod(e->cache, ebb_str_find(ns, nl), ebb_str_find(name, ml));

    ebb__lua_push_pod(L, p && !(p->flags & EBB_POD_GONE) ? p : NULL);
    return 1;
}

/* ebb.node(name) -> Node | nil                                   [-0, +1, e] */
static int l_node(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    ebb__lua_push_node(L, ebb_cache_node(e->cache, node_name(L, 1, "ebb.node: name")));
    return 1;
}

/* ebb.nodes([which]) -> NodeList                                 [-0, +1, e]
 * "cycle" (default): the nodes of the running cycle (ready, matching the
 * policy's nodeSelector); "all": every node of the cluster view. */
static int l_nodes(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    static const char *const whiches[] = { "cycle", "all", NULL };

    if (ebb__lr_option(L, 1, "cycle", whiches, "ebb.nodes") == 1) {
        uint32_t n;
        struct ebb_node *const *v = ebb_cache_nodes_sorted(e->cache, &n);
        ebb__lua_push_nodelist(L, v, n);
    } else {
        ebb__lua_push_nodelist(L, e->cycle_nodes, e->ncycle_nodes);
    }
    return 1;
}

/* ebb.namespace_labels(name) -> table | nil                      [-0, +1, e] */
static int l_namespace_labels(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    size_t len;
    const char *name = ebb__lr_str(L, 1, EBB_LR_LIST_MAX, 0, &len, "ebb.namespace_labels");
    struct ebb_namespace *ns = ebb_cache_namespace(e->cache, ebb_str_find(name, len));

    if (ns == NULL) {
        lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, 0, (int)ns->labels.n);
    for (uint32_t i = 0; i < ns->labels.n; i++) {
        lua_pushstring(L, ns->labels.kv[i].value ? ns->labels.kv[i].value : "");
        lua_setfield(L, -2, ns->labels.kv[i].key);
    }
    return 1;
}

/* ebb.priority_class(name) -> value | nil                        [-0, +1, e] */
static int l_priority_class(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    size_t len;
    const char *name = ebb__lr_str(L, 1, EBB_LR_LIST_MAX, 0, &len, "ebb.priority_class");
    struct ebb_priority_class *pc = ebb_cache_priority_class(e->cache, ebb_str_find(name, len));

    if (pc)
        lua_pushinteger(L, pc->value);
    else
        lua_pushnil(L);
    return 1;
}

/* ebb.quantity(text [, resource]) -> integer | nil, message       [-0, +1|2, -]
 * cpu in millicores, everything else in base units. */
static int l_quantity(lua_State *L)
{
    const char *s = ebb__lr_str(L, 1, 1024, EBB_LR_TEXT, NULL, "ebb.quantity: text");
    const char *res = ebb__lr_optstr(L, 2, EBB_LR_NAME_MAX, EBB_LR_TEXT, NULL, "ebb.quantity: resource");
    int64_t v;
    char shown[256];

    if (ebb_quantity_parse_resource(res ? res : "memory", s, &v) != 0) {
        ebb__lr_show(L, 1, shown, sizeof(shown));
        lua_pushnil(L);
        lua_pushfstring(L, "%s is not a quantity", shown);
        return 2;
    }
    lua_pushinteger(L, v);
    return 1;
}

/* ebb.now() -> seconds (the engine clock: --now in simulation)    [-0, +1, -] */
static int l_now(lua_State *L)
{
    lua_pushinteger(L, ebb__engine_now(engine_of(L)));
    return 1;
}

#define NOTE_MAX 4096     /* bytes of one note */
#define REASON_MAX 1024   /* bytes of one eviction reason (an Event's message) */
#define ENTRY_COST 128    /* what a plan entry costs besides its strings */

/* ebb.note(message [, node]) records a note in the plan under the running
 * plugin: a node skipped for lack of metrics, why a strategy stopped. At
 * most NOTE_MAX bytes each, kept whole whatever they hold (a NUL, bytes that
 * are not UTF-8: the plan's writers escape them); a node given by name is
 * kept the same way. What the notes keep counts toward the plugin's memory
 * cap for the cycle.                                        [-0, +0, e] */
static int l_note(lua_State *L)
{
    struct ebb_ctx *ctx = need_ctx(L);
    size_t len, nlen = 0;
    const char *msg = ebb__lr_str(L, 1, SIZE_MAX, 0, &len, "ebb.note: message");
    const char *node = NULL;

    if (len > NOTE_MAX)
        return luaL_argerror(L, 1, lua_pushfstring(L, "a note is at most %d bytes (got %I)",
                                                   NOTE_MAX, (lua_Integer)len));
    if (lua_type(L, 2) == LUA_TSTRING) {
        node = ebb__lr_str(L, 2, SIZE_MAX, 0, &nlen, "ebb.note: node");
        if (nlen > NOTE_MAX)
            return luaL_argerror(L, 2, lua_pushfstring(L, "a node name is at most %d bytes (got %I)",
                                                       NOTE_MAX, (lua_Integer)nlen));
    } else if (!lua_isnoneornil(L, 2)) {
        node = ebb__lua_check_node(L, 2)->name;
        nlen = strlen(node);
    }
    ebb__vm_keep(L, len + nlen + ENTRY_COST);
    ebb_plan_add_note_text(&ctx->engine->plan, ctx->plugin ? ctx->plugin->def->name : NULL,
                           ctx->profile->name, node, nlen, msg, len);
    return 0;
}

/* ebb.log(level, message) with level "error"|"warn"|"info"|"debug": one log
 * record, escaped by the logger like every other (a NUL, a newline, an ESC
 * cannot end it or forge another), cut with an ellipsis past EBB_LOG_MAX
 * bytes.                                                     [-0, +0, e] */
static int l_log(lua_State *L)
{
    static const char *const levels[] = { "error", "warn", "info", "debug", NULL };
    int lvl = ebb__lr_option(L, 1, "info", levels, "ebb.log: level");
    struct ebb_vm *vm = ebb__vm_of(L);
    char prefix[160];
    size_t len;
    const char *msg = ebb__lr_str(L, 2, SIZE_MAX, 0, &len, "ebb.log: message");

    /* plugin names are at most 128 safe characters (lua_plugin.c) */
    snprintf(prefix, sizeof(prefix), "[%s] ", vm && vm->name ? vm->name : "lua");
    ebb_log_text(lvl, prefix, msg, len);
    return 0;
}

/* ---- the evictor -------------------------------------------------------- */

/* evictor:evict(pod [, opts]) -> true | nil, why [, detail]     [-0, +1|3, e]
 * opts.reason: text recorded with the eviction. why is one of "filtered",
 * "node-limit", "namespace-limit", "total-limit", "pdb", "api-error",
 * "not-found", "evictor", or LoopGuard's "futile", "cooldown",
 * "unavailable" (ebb_why_name). */
static int push_outcome(lua_State *L, int why, const char *detail)
{
    if (why == EBB_WHY_OK) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushnil(L);
    lua_pushstring(L, ebb_why_name(why));
    if (detail && detail[0]) {
        lua_pushstring(L, detail);
        return 3;
    }
    return 2;
}

/* Resumed once the API answered the eviction this coroutine waited for. */
static int evict_cont(lua_State *L, int status, lua_KContext k)
{
    struct ebb_ctx *ctx = need_ctx(L);
    struct ebb_engine *e = ctx->engine;
    (void)status;
    (void)k;
    e->answer_ready = false;
    return push_outcome(L, e->answer_why, e->answer_detail);
}

static int l_evictor_evict(lua_State *L)
{
    struct ebb_ctx *ctx = need_ctx(L);
    struct ebb_pod *p = ebb__lua_check_pod(L, 2);
    struct ebb_eviction *pending = NULL;
    const char *reason = NULL;
    char detail[256] = "";
    int why;

    size_t rlen = 0;

    /* the reason is kept whole, whatever it holds (interned with its
     * length; every writer escapes it); its length is checked below, after
     * the rules on who may evict */
    if (lua_istable(L, 3)) {
        ebb__lr_field(L, 3, "reason");
        reason = ebb__lr_optstr(L, -1, SIZE_MAX, 0, &rlen, "evict: opts.reason");
    } else if (lua_type(L, 3) == LUA_TSTRING) {
        reason = ebb__lr_str(L, 3, SIZE_MAX, 0, &rlen, "evict: reason");
    } else if (!lua_isnoneornil(L, 3)) {
        return luaL_argerror(L, 3, "expected a table of options");
    }
    if (ctx->engine->evictor.call != NULL || ctx->ext == EBB_EXT_EVICT)
        return luaL_error(L, "ctx.evictor:evict() cannot be called from inside an evict plugin's "
                             "evict(): act on the pod through ctx.api");
    /* A filter is asked about a pod while an eviction is being decided:
     * evicting from there would re-enter the evictor. */
    if (ctx->ext != EBB_EXT_DESCHEDULE && ctx->ext != EBB_EXT_BALANCE)
        return luaL_error(L, "ctx.evictor:evict() cannot be called from a %s plugin: only deschedule "
                             "and balance plugins evict", ebb_ext_name(ctx->ext));
    if (rlen > REASON_MAX)
        return luaL_error(L, "evict: the reason is %d bytes; at most %d", (int)rlen, REASON_MAX);
    /* the plan keeps the reason with the eviction, or a refusal */
    ebb__vm_keep(L, rlen + ENTRY_COST);
    /* Live evictions wait for the API by suspending this coroutine; from a
     * callback (a sort comparator, a `where` filter) nothing can wait. */
    if (ctx->engine->mode == EBB_MODE_LIVE && !ebb__vm_can_wait(L)) {
        lua_pushnil(L);
        lua_pushstring(L, ebb_why_name(EBB_WHY_API_ERROR));
        lua_pushstring(L, "evict() cannot wait for the API from inside a callback or a "
                          "coroutine of the script");
        return 3;
    }
    {
        /* interned whole (a NUL included); the eviction and the plan take
         * their own references */
        ebb_str r = reason != NULL ? ebb_str_intern(reason, rlen) : NULL;
        if (reason != NULL && r == NULL)
            return luaL_error(L, "not enough memory");
        why = ebb__evict(ctx, p, r, detail, sizeof(detail), &pending);
        ebb_str_release(r);
    }
    if (why == EBB_WHY_PENDING) {
        pending->lua_waiting = true;
        ebb__vm_engine_yield(L);
        return lua_yieldk(L, 0, 0, evict_cont);
    }
    if (why == EBB_WHY_OK) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushnil(L);
    lua_pushstring(L, ebb_why_name(why));
    if (detail[0]) {
        lua_pushstring(L, detail);
        return 3;
    }
    return 2;
}

/* evictor:filter(pod) / evictor:pre_eviction_filter(pod) -> boolean */
static int l_evictor_filter(lua_State *L)
{
    struct ebb_ctx *ctx = need_ctx(L);
    lua_pushboolean(L, ebb_ctx_filter(ctx, ebb__lua_check_pod(L, 2)));
    return 1;
}

static int l_evictor_pre(lua_State *L)
{
    struct ebb_ctx *ctx = need_ctx(L);
    lua_pushboolean(L, ebb_ctx_pre_eviction_filter(ctx, ebb__lua_check_pod(L, 2)));
    return 1;
}

static ebb_str node_arg(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TSTRING)
        return node_name(L, idx, "evictor: node");
    return ebb__lua_check_node(L, idx)->name;
}

/* evictor:evicted(node?) -> count this cycle (on a node, or in total) */
static int l_evictor_evicted(lua_State *L)
{
    struct ebb_ctx *ctx = need_ctx(L);
    if (lua_isnoneornil(L, 2))
        lua_pushinteger(L, ctx->engine->evictor.total);
    else
        lua_pushinteger(L, ebb__evictor_node_count(&ctx->engine->evictor, node_arg(L, 2)));
    return 1;
}

/* evictor:node_limit_reached(node) -> boolean */
static int l_evictor_node_limit(lua_State *L)
{
    struct ebb_ctx *ctx = need_ctx(L);
    lua_pushboolean(L, ebb__evictor_node_full(ctx->engine, node_arg(L, 2)));
    return 1;
}

/* evictor:total_limit_reached() -> boolean */
static int l_evictor_total_limit(lua_State *L)
{
    struct ebb_ctx *ctx = need_ctx(L);
    lua_pushboolean(L, ebb__evictor_total_full(ctx->engine));
    return 1;
}

static const luaL_Reg evictor_methods[] = {
    { "evict", l_evictor_evict },
    { "filter", l_evictor_filter },
    { "pre_eviction_filter", l_evictor_pre },
    { "evicted", l_evictor_evicted },
    { "node_limit_reached", l_evictor_node_limit },
    { "total_limit_reached", l_evictor_total_limit },
    { NULL, NULL },
};

void ebb__lua_push_evictor(lua_State *L)
{
    lua_newuserdatauv(L, 1, 0);
    luaL_setmetatable(L, EVICTOR_MT);
}

/* ---- module ------------------------------------------------------------- */

static const luaL_Reg funcs[] = {
    { "pods", l_pods },
    { "pod", l_pod },
    { "node", l_node },
    { "nodes", l_nodes },
    { "selector", l_selector },
    { "namespace_labels", l_namespace_labels },
    { "priority_class", l_priority_class },
    { "quantity", l_quantity },
    { "now", l_now },
    { "log", l_log },
    { "note", l_note },
    { "taint_set", ebb__lua_taint_set },
    { "fits", l_fits },
    { "fits_any_other", l_fits_any_other },
    { "fits_any", l_fits_any },
    { NULL, NULL },
};

/* The metatables and functions of this file into the module table on top
 * of the stack (lua_module.c). */
void ebb__lua_open_ebb(lua_State *L)
{
    luaL_newmetatable(L, SELECTOR_MT);
    lua_pushcfunction(L, l_selector_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_selector_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, l_selector_matches);
    lua_setfield(L, -2, "matches");
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);

    luaL_newmetatable(L, REQS_GUARD_MT);
    lua_pushcfunction(L, l_reqs_guard_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, l_reqs_guard_close);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);

    luaL_newmetatable(L, EVICTOR_MT);
    luaL_newlib(L, evictor_methods);
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "Evictor");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);

    luaL_setfuncs(L, funcs, 0);
}
