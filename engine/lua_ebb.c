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
#include "lua_int.h"

#define SELECTOR_MT "ebb.Selector"
#define EVICTOR_MT "ebb.Evictor"


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

static int l_selector_gc(lua_State *L)
{
    struct ebb_selector **s = luaL_checkudata(L, 1, SELECTOR_MT);
    ebb_selector_free(*s);
    *s = NULL;
    return 0;
}

void ebb__lua_push_selector(lua_State *L, struct ebb_selector *s)
{
    struct ebb_selector **u = lua_newuserdatauv(L, sizeof(*u), 0);
    *u = s;
    luaL_setmetatable(L, SELECTOR_MT);
}

const struct ebb_selector *ebb__lua_opt_selector(lua_State *L, int idx)
{
    struct ebb_selector **s;

    if (lua_isnoneornil(L, idx))
        return NULL;
    s = luaL_checkudata(L, idx, SELECTOR_MT);
    return *s;
}

static const char *op_names[] = { "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt" };

/* Compile the table form of a metav1.LabelSelector. Raises with a message
 * naming the field on a malformed selector. */
static struct ebb_selector *compile_table(lua_State *L, int t)
{
    struct ebb_req *reqs;
    size_t nlabels = 0, nexprs = 0, k = 0;
    struct ebb_selector *sel = NULL;

    t = lua_absindex(L, t);
    switch (lua_getfield(L, t, "matchLabels")) {
    case LUA_TTABLE:
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            nlabels++;
            lua_pop(L, 1);
        }
        break;
    case LUA_TNIL:
        break;
    default:   /* a policy's null was left out: anything else is a mistake */
        luaL_error(L, "matchLabels: expected a map of strings, got %s", luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    switch (lua_getfield(L, t, "matchExpressions")) {
    case LUA_TTABLE:
        nexprs = lua_rawlen(L, -1);
        break;
    case LUA_TNIL:
        break;
    default:
        luaL_error(L, "matchExpressions: expected a list, got %s", luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    /* requirements live in a userdata until handed to the selector, so a
     * raise below cannot leak them (their strings are released by hand) */
    reqs = lua_newuserdatauv(L, (nlabels + nexprs + 1) * sizeof(*reqs), 0);
    memset(reqs, 0, (nlabels + nexprs + 1) * sizeof(*reqs));
#define FAIL(...)                                                         \
    do {                                                                  \
        for (size_t r_ = 0; r_ < k; r_++)                                 \
            ebb_req_free(&reqs[r_]);                                      \
        return (luaL_error(L, __VA_ARGS__), NULL);                        \
    } while (0)
    if (lua_getfield(L, t, "matchLabels") == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
                FAIL("matchLabels: keys and values must be strings");
            reqs[k].key = ebb_str_cstr(lua_tostring(L, -2));
            reqs[k].op = EBB_OP_IN;
            reqs[k].values = malloc(sizeof(ebb_str));
            if (reqs[k].values == NULL)
                FAIL("not enough memory");
            reqs[k].values[0] = ebb_str_cstr(lua_tostring(L, -1));
            reqs[k].nvalues = 1;
            k++;
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    if (lua_getfield(L, t, "matchExpressions") == LUA_TTABLE) {
        for (size_t i = 1; i <= nexprs; i++) {
            const char *op;
            int o = -1;
            lua_rawgeti(L, -1, (lua_Integer)i);
            if (!lua_istable(L, -1))
                FAIL("matchExpressions[%d]: expected a table", (int)i - 1);
            lua_getfield(L, -1, "key");
            lua_getfield(L, -2, "operator");
            if (lua_type(L, -2) != LUA_TSTRING)
                FAIL("matchExpressions[%d].key: expected a string", (int)i - 1);
            op = lua_tostring(L, -1);
            for (int j = 0; op && j < 4; j++)
                if (strcmp(op, op_names[j]) == 0)
                    o = j;
            if (o < 0)
                FAIL("matchExpressions[%d].operator: \"%s\" is not a valid label selector operator",
                     (int)i - 1, op ? op : "");
            reqs[k].key = ebb_str_cstr(lua_tostring(L, -2));
            reqs[k].op = (uint8_t)o;
            lua_pop(L, 2);
            lua_getfield(L, -1, "values");
            size_t nv = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
            if ((o == EBB_OP_IN || o == EBB_OP_NOT_IN) && nv == 0)
                FAIL("matchExpressions[%d].values: must be non-empty for %s", (int)i - 1, op);
            if ((o == EBB_OP_EXISTS || o == EBB_OP_DOES_NOT_EXIST) && nv > 0)
                FAIL("matchExpressions[%d].values: must be empty for %s", (int)i - 1, op);
            if (nv > 0 && (reqs[k].values = calloc(nv, sizeof(ebb_str))) == NULL)
                FAIL("not enough memory");
            for (size_t j = 1; j <= nv; j++) {
                lua_rawgeti(L, -1, (lua_Integer)j);
                if (lua_type(L, -1) != LUA_TSTRING) {
                    k++;
                    FAIL("matchExpressions[%d].values[%d]: expected a string", (int)i - 1, (int)j - 1);
                }
                reqs[k].values[reqs[k].nvalues++] = ebb_str_cstr(lua_tostring(L, -1));
                lua_pop(L, 1);
            }
            k++;
            lua_pop(L, 2);
        }
    }
    lua_pop(L, 1);
#undef FAIL
    {
        /* the selector takes a malloc'd array */
        struct ebb_req *own = malloc((k + 1) * sizeof(*own));
        if (own == NULL) {
            for (size_t r = 0; r < k; r++)
                ebb_req_free(&reqs[r]);
            luaL_error(L, "not enough memory");
        }
        memcpy(own, reqs, k * sizeof(*own));
        if (ebb_selector_from_reqs(own, (uint16_t)k, &sel) != 0) {
            for (size_t r = 0; r < k; r++)
                ebb_req_free(&own[r]);
            free(own);
            luaL_error(L, "not enough memory");
        }
    }
    lua_pop(L, 1);   /* the scratch userdata */
    return sel;
}

#define SELECTOR_MAX ((size_t)1 << 20)

/* ebb.selector(spec) -> Selector                                 [-0, +1, e]
 * spec: a metav1.LabelSelector table ({matchLabels=..., matchExpressions=...})
 * or the string form ("app=web,tier in (a,b)"). An empty table or string
 * selects everything. */
static int l_selector(lua_State *L)
{
    struct ebb_selector *sel = NULL;

    if (lua_type(L, 1) == LUA_TSTRING) {
        struct ebb_error err = { 0 };
        /* parsed outside the plugin's memory cap: bounded as the API
         * server bounds a request line */
        if (lua_rawlen(L, 1) > SELECTOR_MAX)
            return luaL_argerror(L, 1, "a label selector string is at most 1 MiB");
        if (ebb_selector_parse(lua_tostring(L, 1), &sel, &err) != 0)
            return luaL_error(L, "invalid label selector: %s", err.msg);
    } else if (lua_istable(L, 1)) {
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
    const struct ebb_selector *sel = *(struct ebb_selector **)luaL_checkudata(L, 1, SELECTOR_MT);
    struct ebb_pod *p;

    if ((p = ebb__lua_to_pod(L, 2)) != NULL) {
        lua_pushboolean(L, ebb_selector_matches(sel, &p->labels));
    } else if (luaL_testudata(L, 2, "ebb.Node")) {
        lua_pushboolean(L, ebb_selector_matches(sel, &ebb__lua_check_node(L, 2)->labels));
    } else if (lua_istable(L, 2)) {
        /* a plain table: build a temporary label set from the strings that
         * are already interned (others cannot match a requirement value) */
        struct ebb_kv kv[128];
        struct ebb_labels l = { 0, kv };
        bool matched;
        lua_pushnil(L);
        while (lua_next(L, 2) && l.n < EBB_ARRAY_LEN(kv)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
                size_t kl, vl;
                const char *k = lua_tolstring(L, -2, &kl), *v = lua_tolstring(L, -1, &vl);
                ebb_str ks = ebb_str_find(k, kl);
                if (ks != NULL) {
                    kv[l.n].key = ks;
                    /* a value never interned still exists as a label: keep
                     * a marker that equals no interned value */
                    kv[l.n].value = ebb_str_find(v, vl);
                    if (kv[l.n].value == NULL)
                        kv[l.n].value = "";
                    l.n++;
                }
            }
            lua_pop(L, 1);
        }
        matched = ebb_selector_matches(sel, &l);
        lua_pushboolean(L, matched);
    } else {
        return luaL_argerror(L, 2, "expected a pod, a node or a table of labels");
    }
    return 1;
}

static int l_selector_tostring(lua_State *L)
{
    const struct ebb_selector *sel = *(struct ebb_selector **)luaL_checkudata(L, 1, SELECTOR_MT);
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

/* A list of strings from opts[field] as interned pointers (NULL entries for
 * strings never interned: they match nothing). */
static ebb_str *str_list(lua_State *L, int opts, const char *field, size_t *n, bool *present)
{
    ebb_str *v;
    size_t len;

    *n = 0;
    if (present)
        *present = false;
    if (lua_getfield(L, opts, field) == LUA_TNIL) {
        lua_pop(L, 1);
        return NULL;
    }
    if (!lua_istable(L, -1))
        luaL_error(L, "ebb.pods: option '%s' must be a list of strings", field);
    len = lua_rawlen(L, -1);
    if (present)
        *present = true;
    v = lua_newuserdatauv(L, (len + 1) * sizeof(*v), 0);   /* anchored below */
    for (size_t i = 1; i <= len; i++) {
        size_t sl;
        lua_rawgeti(L, -2, (lua_Integer)i);
        const char *s = lua_tolstring(L, -1, &sl);
        if (s == NULL)
            luaL_error(L, "ebb.pods: option '%s' must be a list of strings", field);
        v[i - 1] = ebb_str_find(s, sl);
        lua_pop(L, 1);
    }
    *n = len;
    /* keep the scratch userdata alive in the registry-free way: leave it on
     * the stack under the table, then drop the table */
    lua_remove(L, -2);
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

static int64_t opt_int(lua_State *L, int opts, const char *field, int64_t dflt)
{
    int64_t v = dflt;
    if (lua_getfield(L, opts, field) != LUA_TNIL) {
        int ok;
        v = lua_tointegerx(L, -1, &ok);
        if (!ok)
            luaL_error(L, "ebb.pods: option '%s' must be an integer", field);
    }
    lua_pop(L, 1);
    return v;
}

static bool opt_bool(lua_State *L, int opts, const char *field)
{
    bool b;
    lua_getfield(L, opts, field);
    b = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return b;
}

static int parse_phase(const char *s)
{
    static const char *const names[] = { "Unknown", "Pending", "Running", "Succeeded", "Failed" };
    if (strcmp(s, "active") == 0)
        return PHASE_ACTIVE;
    if (strcmp(s, "all") == 0)
        return PHASE_ALL;
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -100;
}

static void parse_query(lua_State *L, int opts, struct query *q)
{
    memset(q, 0, sizeof(*q));
    q->phase = PHASE_ACTIVE;
    q->older_than = q->min_age = q->min_restarts = -1;
    q->now = ebb__engine_now(engine_of(L));
    if (lua_isnoneornil(L, opts))
        return;
    luaL_checktype(L, opts, LUA_TTABLE);
    if (lua_getfield(L, opts, "phase") == LUA_TSTRING) {
        q->phase = parse_phase(lua_tostring(L, -1));
        if (q->phase == -100)
            luaL_error(L, "ebb.pods: unknown phase '%s' (active, all, Pending, Running, "
                          "Succeeded, Failed, Unknown)", lua_tostring(L, -1));
    }
    lua_pop(L, 1);
    if (lua_getfield(L, opts, "namespaces") == LUA_TTABLE) {
        int t = lua_gettop(L);
        q->ns_in = str_list(L, t, "include", &q->nns_in, &q->has_ns_in);
        q->ns_out = str_list(L, t, "exclude", &q->nns_out, NULL);
        q->has_ns_in = q->has_ns_in && q->nns_in > 0;
    }
    if (lua_getfield(L, opts, "owner_kinds") == LUA_TTABLE) {
        int t = lua_gettop(L);
        q->kinds_in = str_list(L, t, "include", &q->nkinds_in, &q->has_kinds_in);
        q->kinds_out = str_list(L, t, "exclude", &q->nkinds_out, NULL);
        q->has_kinds_in = q->has_kinds_in && q->nkinds_in > 0;
    }
    q->states = str_list(L, opts, "states", &q->nstates, NULL);
    q->reasons = str_list(L, opts, "reasons", &q->nreasons, NULL);
    /* Phases are kept as an enum, not as interned text: match them by name. */
    if (lua_getfield(L, opts, "states") == LUA_TTABLE) {
        for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TSTRING; i++) {
            int ph = parse_phase(lua_tostring(L, -1));
            if (ph >= 0)
                q->state_phases |= 1u << ph;
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_getfield(L, opts, "selector");
    q->sel = ebb__lua_opt_selector(L, -1);
    q->filter = opt_bool(L, opts, "filter") || opt_bool(L, opts, "evictable");
    q->pre = opt_bool(L, opts, "pre_eviction_filter") || opt_bool(L, opts, "evictable");
    q->with_init = opt_bool(L, opts, "including_init");
    q->with_ephemeral = opt_bool(L, opts, "including_ephemeral");
    q->older_than = opt_int(L, opts, "older_than", -1);
    q->min_age = opt_int(L, opts, "min_age", -1);
    q->min_restarts = opt_int(L, opts, "min_restarts", -1);
    if (lua_getfield(L, opts, "exit_codes") == LUA_TTABLE) {
        size_t n = lua_rawlen(L, -1);
        q->exit_codes = lua_newuserdatauv(L, (n + 1) * sizeof(int32_t), 0);
        for (size_t i = 1; i <= n; i++) {
            lua_rawgeti(L, -2, (lua_Integer)i);
            q->exit_codes[i - 1] = (int32_t)luaL_checkinteger(L, -1);
            lua_pop(L, 1);
        }
        q->nexit = n;
    }
    if (lua_getfield(L, opts, "conditions") == LUA_TTABLE) {
        size_t n = lua_rawlen(L, -1);
        int t = lua_gettop(L);
        q->conds = lua_newuserdatauv(L, (n + 1) * sizeof(*q->conds), 0);
        memset(q->conds, 0, (n + 1) * sizeof(*q->conds));
        for (size_t i = 1; i <= n; i++) {
            struct cond_filter *c = &q->conds[i - 1];
            size_t sl;
            const char *s;
            lua_rawgeti(L, t, (lua_Integer)i);
            if (!lua_istable(L, -1))
                luaL_error(L, "ebb.pods: conditions[%d] must be a table", (int)i);
#define COND_FIELD(f, name)                                              \
            lua_getfield(L, -1, name);                                   \
            if ((s = lua_tolstring(L, -1, &sl)) != NULL && sl > 0) {     \
                c->has_##f = true;                                       \
                c->f = ebb_str_find(s, sl);                              \
            }                                                            \
            lua_pop(L, 1);
            COND_FIELD(type, "type")
            COND_FIELD(status, "status")
            COND_FIELD(reason, "reason")
#undef COND_FIELD
            lua_getfield(L, -1, "minTimeSinceLastTransitionSeconds");
            c->min_since = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : -1;
            lua_pop(L, 2);
        }
        q->nconds = n;
    }
    if (lua_getfield(L, opts, "node_affinity") != LUA_TNIL) {
        const char *na = lua_tostring(L, -1);
        if (na != NULL && strcmp(na, "required") == 0)
            q->node_affinity = NODE_AFFINITY_REQUIRED;
        else if (na != NULL && strcmp(na, "preferred") == 0)
            q->node_affinity = NODE_AFFINITY_PREFERRED;
        else
            luaL_error(L, "ebb.pods: option 'node_affinity' must be \"required\" or \"preferred\"");
    }
    lua_pop(L, 1);
    q->off_node = opt_bool(L, opts, "off_node");
    if (lua_getfield(L, opts, "where") == LUA_TFUNCTION)
        q->where = lua_gettop(L);
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
        size_t len;
        const char *s = lua_tolstring(L, 1, &len);
        query_node(L, e, ctx, &q, ebb_str_find(s, len), out);
    } else if (lua_istable(L, 1)) {
        for (lua_Integer i = 1; lua_rawgeti(L, 1, i) != LUA_TNIL; i++) {
            ebb_str name;
            if (lua_type(L, -1) == LUA_TSTRING) {
                size_t len;
                const char *s = lua_tolstring(L, -1, &len);
                name = ebb_str_find(s, len);
            } else {
                name = ebb__lua_check_node(L, -1)->name;
            }
            lua_pop(L, 1);
            query_node(L, e, ctx, &q, name, out);
        }
        lua_pop(L, 1);
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
    if (luaL_testudata(L, idx, "ebb.Node")) {
        out = lua_newuserdatauv(L, sizeof(*out), 0);
        out[0] = ebb__lua_check_node(L, idx);
        *n = 1;
        return out;
    }
    luaL_checktype(L, idx, LUA_TTABLE);
    len = lua_rawlen(L, idx);
    out = lua_newuserdatauv(L, (len + 1) * sizeof(*out), 0);
    *n = 0;
    for (size_t i = 1; i <= len; i++) {
        struct ebb_node *nd;
        if (lua_rawgeti(L, idx, (lua_Integer)i) == LUA_TSTRING) {
            size_t sl;
            const char *s = lua_tolstring(L, -1, &sl);
            nd = ebb_cache_node(e->cache, ebb_str_find(s, sl));
            if (nd == NULL)
                luaL_error(L, "no node named \"%s\"", s);
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
    const char *ns = luaL_checklstring(L, 1, &nl), *name = luaL_checklstring(L, 2, &ml);
    struct ebb_pod *p = ebb_cache_pod(e->cache, ebb_str_find(ns, nl), ebb_str_find(name, ml));

    ebb__lua_push_pod(L, p && !(p->flags & EBB_POD_GONE) ? p : NULL);
    return 1;
}

/* ebb.node(name) -> Node | nil                                   [-0, +1, e] */
static int l_node(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    size_t len;
    const char *name = luaL_checklstring(L, 1, &len);
    ebb__lua_push_node(L, ebb_cache_node(e->cache, ebb_str_find(name, len)));
    return 1;
}

/* ebb.nodes([which]) -> NodeList                                 [-0, +1, e]
 * "cycle" (default): the nodes of the running cycle (ready, matching the
 * policy's nodeSelector); "all": every node of the cluster view. */
static int l_nodes(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    const char *which = luaL_optstring(L, 1, "cycle");

    if (strcmp(which, "all") == 0) {
        uint32_t n;
        struct ebb_node *const *v = ebb_cache_nodes_sorted(e->cache, &n);
        ebb__lua_push_nodelist(L, v, n);
    } else if (strcmp(which, "cycle") == 0) {
        ebb__lua_push_nodelist(L, e->cycle_nodes, e->ncycle_nodes);
    } else {
        return luaL_argerror(L, 1, "expected \"cycle\" or \"all\"");
    }
    return 1;
}

/* ebb.namespace_labels(name) -> table | nil                      [-0, +1, e] */
static int l_namespace_labels(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    size_t len;
    const char *name = luaL_checklstring(L, 1, &len);
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
    const char *name = luaL_checklstring(L, 1, &len);
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
    const char *s = luaL_checkstring(L, 1);
    const char *res = luaL_optstring(L, 2, "memory");
    int64_t v;

    if (ebb_quantity_parse_resource(res, s, &v) != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "\"%s\" is not a quantity", s);
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
    const char *msg = luaL_checklstring(L, 1, &len);
    const char *node = NULL;

    if (len > NOTE_MAX)
        return luaL_argerror(L, 1, lua_pushfstring(L, "a note is at most %d bytes (got %I)",
                                                   NOTE_MAX, (lua_Integer)len));
    if (lua_type(L, 2) == LUA_TSTRING) {
        node = lua_tolstring(L, 2, &nlen);
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
    int lvl = luaL_checkoption(L, 1, "info", levels);
    struct ebb_vm *vm = ebb__vm_of(L);
    char prefix[160];
    size_t len;
    const char *msg = luaL_checklstring(L, 2, &len);

    /* plugin names are at most 128 safe characters (lua_plugin.c) */
    snprintf(prefix, sizeof(prefix), "[%s] ", vm && vm->name ? vm->name : "lua");
    ebb_log_text(lvl, prefix, msg, len);
    return 0;
}

/* ---- the evictor -------------------------------------------------------- */

/* evictor:evict(pod [, opts]) -> true | nil, why [, detail]     [-0, +1|3, e]
 * opts.reason: text recorded with the eviction. why is one of "filtered",
 * "node-limit", "namespace-limit", "total-limit", "pdb", "api-error",
 * "not-found". */
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

    if (lua_istable(L, 3)) {
        lua_getfield(L, 3, "reason");
        reason = lua_tolstring(L, -1, &rlen);
    } else if (lua_type(L, 3) == LUA_TSTRING) {
        reason = lua_tolstring(L, 3, &rlen);
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
    why = ebb__evict(ctx, p, reason, detail, sizeof(detail), &pending);
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
    if (lua_type(L, idx) == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        return ebb_str_find(s, len);
    }
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

int luaopen_ebb_native(lua_State *L)
{
    ebb__lua_register_pod(L);
    ebb__lua_register_node(L);

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

    luaL_newmetatable(L, EVICTOR_MT);
    luaL_newlib(L, evictor_methods);
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "Evictor");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);

    luaL_newlib(L, funcs);
    ebb__lua_open_usage(L);
    ebb__lua_open_topology(L);
    ebb__lua_open_groups(L);
    ebb__lua_open_loadaware(L);
    ebb__lua_open_evictor(L);
    ebb__lua_open_prometheus(L);
    ebb__lua_open_testhooks(L);
    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "null");
    return 1;
}
