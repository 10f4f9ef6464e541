/* Lua bindings of the topology spread math (include/ebb/topology.h),
 * registered into require("ebb.native") by luaopen_ebb_native.
 *
 * Both functions take whole sets: the pods a strategy listed (a PodList, in
 * listing order) and the nodes of the cycle; the counting, sorting and fit
 * checks run in C, one call per cycle. The C state lives in a guard
 * userdata, so a raise (out of memory, time budget) frees it with the
 * guard instead of leaking it.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "ebb/selector.h"
#include "ebb/topology.h"
#include "lua/lua_int.h"

#define GUARD_MT "ebb.TopologyGuard"

struct guard {
    struct ebb_topology *t;
    struct ebb_topology_result r;
    struct ebb_pod **byns;
    struct ebb_charge charge;   /* what the call holds meanwhile */
};

/* Free what the guard holds (now, rather than at the next collection). */
static void guard_release(lua_State *L, struct guard *g)
{
    ebb_topology_destroy(g->t);
    g->t = NULL;
    ebb_topology_result_free(&g->r);
    free(g->byns);
    g->byns = NULL;
    ebb__uncharge(L, &g->charge);
}

static int l_guard_gc(lua_State *L)
{
    guard_release(L, luaL_checkudata(L, 1, GUARD_MT));
    return 0;
}

static int fail(lua_State *L, int rc)
{
    if (rc == EBB_ELIMIT)
        return ebb__vm_stop(L);
    if (rc == EBB_ENOMEM)
        return luaL_error(L, "not enough memory");
    return luaL_error(L, "topology spread: %s", ebb_strerror(rc));
}

/* The pods at idx: a PodList, or a list of Pods (copied into a userdata
 * left on the stack). */
static struct ebb_pod *const *check_pods(lua_State *L, int idx, size_t *n)
{
    struct ebb_pod *const *v = ebb__lua_podlist(L, idx, n);
    struct ebb_pod **out;
    size_t len;

    if (v != NULL || luaL_testudata(L, idx, "ebb.PodList"))
        return v;
    if (!lua_istable(L, idx))
        luaL_argerror(L, idx, "expected a PodList or a list of pods");
    len = ebb__lr_len(L, idx, EBB_LR_LIST_MAX, "topology: pods");
    out = ebb__lr_alloc(L, len, sizeof(*out), "topology: pods");
    for (size_t i = 1; i <= len; i++) {
        ebb__lr_index(L, idx, (lua_Integer)i);
        out[i - 1] = ebb__lua_check_pod(L, -1);
        lua_pop(L, 1);
    }
    *n = len;
    return out;
}

static bool filter_cb(const struct ebb_pod *pod, void *ud)
{
    return ebb_ctx_filter(ud, pod);
}

/* opts: constraints = {"DoNotSchedule", "ScheduleAnyway"} (absent or empty:
 * DoNotSchedule, as upstream defaults), node_fit = boolean (default true). */
static void check_opts(lua_State *L, int idx, struct ebb_topology_opts *o)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    struct ebb_ctx *ctx = ebb__lua_ctx(L);

    memset(o, 0, sizeof(*o));
    o->node_fit = true;
    if (ctx != NULL) {
        o->evictable = filter_cb;
        o->ud = ctx;
    }
    o->stop = vm ? &vm->expired : NULL;
    if (!ebb__lr_opttable(L, idx, "topology: opts")) {
        o->when = EBB_TOPO_DO_NOT_SCHEDULE;
        return;
    }
    if (ebb__lr_field(L, idx, "constraints") != LUA_TNIL) {
        static const char *const whens[] = { "DoNotSchedule", "ScheduleAnyway", NULL };
        int t = lua_gettop(L);
        size_t n = ebb__lr_len(L, t, 16, "option 'constraints'");
        for (size_t i = 1; i <= n; i++) {
            ebb__lr_index(L, t, (lua_Integer)i);
            size_t sl;
            const char *w = ebb__lr_peekstr(L, -1, 64, 0, &sl);
            if (w != NULL && sl == 13 && memcmp(w, whens[0], 13) == 0)
                o->when |= EBB_TOPO_DO_NOT_SCHEDULE;
            else if (w != NULL && sl == 14 && memcmp(w, whens[1], 14) == 0)
                o->when |= EBB_TOPO_SCHEDULE_ANYWAY;
            else
                luaL_error(L, "constraints[%d]: expected \"DoNotSchedule\" or \"ScheduleAnyway\"",
                           (int)i);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    if (o->when == 0)
        o->when = EBB_TOPO_DO_NOT_SCHEDULE;
    if (ebb__lr_field(L, idx, "node_fit") != LUA_TNIL)
        o->node_fit = lua_toboolean(L, -1);
    lua_pop(L, 1);
}

/* Arguments (pods, nodes, opts) -> a guard holding a topology over the
 * nodes; the pods in *pods. */
static struct guard *setup(lua_State *L, struct ebb_pod *const **pods, size_t *npods)
{
    struct ebb_cache *c = ebb__lua_cache(L);
    struct ebb_topology_opts o;
    struct ebb_node *const *nodes;
    size_t nnodes;
    struct guard *g;
    int rc;

    lua_settop(L, 3);   /* scratch userdata go above the arguments */
    *pods = check_pods(L, 1, npods);
    nodes = ebb__lua_check_nodes(L, 2, &nnodes);
    check_opts(L, 3, &o);
    g = lua_newuserdatauv(L, sizeof(*g), 0);
    memset(g, 0, sizeof(*g));
    luaL_setmetatable(L, GUARD_MT);
    lua_toclose(L, -1);
    /* about what the counting holds per pod and node, before it is built: a
     * PodList may repeat a pod any number of times */
    ebb__charge(L, &g->charge, *npods * 96 + nnodes * 64);
    if ((rc = ebb_topology_create(c, nodes, nnodes, &o, &g->t)) != 0)
        fail(L, rc);
    return g;
}

static const char *policy_name(int p)
{
    return p == EBB_POLICY_HONOR ? "Honor" : "Ignore";
}

/* ebb.topology_balance(pods, nodes [, opts]) -> evict, skipped, why  [-0, +3, e]
 * RemovePodsViolatingTopologySpreadConstraint's decision over `pods` (the
 * pods the strategy counts: for upstream, the evictable ones matching its
 * labelSelector and namespaces) and `nodes` (a NodeList, a list, or nil for
 * the cycle's). opts.constraints: the whenUnsatisfiable values to act on
 * (default {"DoNotSchedule"}); opts.node_fit: topologyBalanceNodeFit
 * (default true). In-domain order asks the profile's Filter.
 * evict: a PodList of the pods to evict, by namespace then name (upstream
 * ranges over maps there). skipped: the pods a move took but
 * topologyBalanceNodeFit kept (they fit no node of a below-average domain).
 * why: parallel to evict, {topology_key=, domain=, max_skew=} of the first
 * constraint that took the pod. */
static int l_topology_balance(lua_State *L)
{
    struct ebb_pod *const *pods;
    size_t npods;
    struct guard *g = setup(L, &pods, &npods);
    int rc;

    if ((rc = ebb_topology_plan(g->t, pods, npods, &g->r)) != 0)
        return fail(L, rc);
    ebb__lua_push_podlist(L, g->r.evict, g->r.nevict);
    ebb__lua_push_podlist(L, g->r.skipped, g->r.nskipped);
    lua_createtable(L, (int)g->r.nevict, 0);
    for (size_t i = 0; i < g->r.nevict; i++) {
        lua_createtable(L, 0, 3);
        lua_pushstring(L, g->r.keys[i] ? g->r.keys[i] : "");
        lua_setfield(L, -2, "topology_key");
        lua_pushstring(L, g->r.values[i] ? g->r.values[i] : "");
        lua_setfield(L, -2, "domain");
        lua_pushinteger(L, g->r.max_skews[i]);
        lua_setfield(L, -2, "max_skew");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    guard_release(L, g);
    return 3;
}

static void push_key(lua_State *L, const struct ebb_pod *p)
{
    char buf[512];
    lua_pushstring(L, ebb_pod_key(p, buf, sizeof(buf)));
}

/* One constraint and its counted domains; `loaded`: the pods the domain
 * indices refer to. */
static void push_constraint(lua_State *L, struct ebb_topology *t, size_t ci,
                            const struct ebb_topo_domains *d, struct ebb_pod *const *loaded)
{
    const struct ebb_topo_constraint *c = ebb_topology_constraint(t, ci);
    char sel[1024];

    lua_createtable(L, 0, 12);
    lua_pushstring(L, c->pod->ns);
    lua_setfield(L, -2, "namespace");
    lua_pushstring(L, c->topology_key ? c->topology_key : "");
    lua_setfield(L, -2, "topology_key");
    lua_pushinteger(L, c->max_skew);
    lua_setfield(L, -2, "max_skew");
    lua_pushstring(L, c->when == EBB_TSC_SCHEDULE_ANYWAY ? "ScheduleAnyway" : "DoNotSchedule");
    lua_setfield(L, -2, "when");
    lua_pushstring(L, policy_name(c->affinity_policy));
    lua_setfield(L, -2, "node_affinity_policy");
    lua_pushstring(L, policy_name(c->taints_policy));
    lua_setfield(L, -2, "node_taints_policy");
    ebb_selector_format(c->selector, sel, sizeof(sel));
    lua_pushstring(L, sel);
    lua_setfield(L, -2, "selector");
    push_key(L, c->pod);
    lua_setfield(L, -2, "pod");
    lua_pushboolean(L, ebb_topology_is_balanced(d, c->max_skew));
    lua_setfield(L, -2, "balanced");
    lua_pushinteger(L, d->sum);
    lua_setfield(L, -2, "sum");
    lua_pushnumber(L, d->n ? (double)d->sum / (double)d->n : 0.0);
    lua_setfield(L, -2, "ideal");
    lua_createtable(L, (int)d->n, 0);
    for (size_t i = 0; i < d->n; i++) {
        const struct ebb_topo_domain *dm = &d->v[i];
        lua_createtable(L, 0, 3);
        lua_pushstring(L, dm->value);
        lua_setfield(L, -2, "value");
        lua_pushinteger(L, dm->npods);
        lua_setfield(L, -2, "count");
        lua_createtable(L, (int)dm->npods, 0);
        for (uint32_t k = 0; k < dm->npods; k++) {
            push_key(L, loaded[dm->pods[k]]);
            lua_rawseti(L, -2, k + 1);
        }
        lua_setfield(L, -2, "pods");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "domains");
}

/* ebb.topology_domains(pods, nodes [, opts]) -> { constraint, ... }  [-0, +1, e]
 * What ebb.topology_balance sees, for inspection and tests: per namespace
 * (by name) each distinct constraint, in the order its first pod lists it:
 * {namespace, topology_key, max_skew, when, node_affinity_policy,
 * node_taints_policy, selector (merged, as text), pod (the first declaring
 * pod), balanced, sum, ideal, domains = {{value, count, pods = {"ns/name",
 * ...}}, ...} by value}. Nothing is balanced or marked. */
static int l_topology_domains(lua_State *L)
{
    struct ebb_pod *const *pods;
    size_t npods, s, e, k = 0;
    struct guard *g = setup(L, &pods, &npods);
    int rc;

    lua_newtable(L);
    if (npods == 0)
        return 1;
    if ((g->byns = malloc(npods * sizeof(*g->byns))) == NULL)
        return fail(L, EBB_ENOMEM);
    if ((rc = ebb_topology_by_namespace(pods, npods, g->byns)) != 0)
        return fail(L, rc);
    for (s = 0; s < npods; s = e) {
        for (e = s + 1; e < npods && g->byns[e]->ns == g->byns[s]->ns; e++)
            ;
        if ((rc = ebb_topology_load(g->t, g->byns + s, e - s)) != 0)
            return fail(L, rc);
        for (size_t ci = 0; ci < ebb_topology_nconstraints(g->t); ci++) {
            const struct ebb_topo_domains *d;
            if ((rc = ebb_topology_count(g->t, ci, &d)) != 0)
                return fail(L, rc);
            push_constraint(L, g->t, ci, d, g->byns + s);
            lua_rawseti(L, -2, (lua_Integer)++k);
        }
    }
    guard_release(L, g);
    return 1;
}

static const luaL_Reg funcs[] = {
    { "topology_balance", l_topology_balance },
    { "topology_domains", l_topology_domains },
    { NULL, NULL },
};

void ebb__lua_open_topology(lua_State *L)
{
    luaL_newmetatable(L, GUARD_MT);
    lua_pushcfunction(L, l_guard_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_guard_gc);
    lua_setfield(L, -2, "__close");
    lua_pop(L, 1);
    luaL_setfuncs(L, funcs, 0);
}
