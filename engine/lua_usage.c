/* Node utilization in Lua: ebb.node_usage() and the "ebb.NodeUsage" it
 * returns (the math is engine/usage.c). A strategy makes one NodeUsage per
 * balance call, classifies the nodes, starts a move and then, per source
 * node, asks C for the candidate pods, whether to keep evicting, and the
 * reason to record; no per-pod arithmetic happens in Lua.
 *
 *   local u = ebb.node_usage(nodes, { resources = {"cpu", "memory", "pods"} })
 *   u:set_thresholds({cpu = 20}, {cpu = 50})
 *   local under, over = u:classify("spread")
 *   for _, node in u:move("over", "under", { order = "descending", target = true }):iter() do
 *     for _, pod in u:candidates(ebb.pods(node, { filter = true })):sort("priority"):iter() do
 *       if not u:continues(node) then break end
 *       if ctx.evictor:evict(pod, { reason = u:explain(node) }) then u:take(pod) end
 *     end
 *   end
 *
 * Registered into require("ebb.native") by luaopen_ebb_native.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "ebb/usage.h"
#include "lua_int.h"

#define USAGE_MT "ebb.NodeUsage"

struct lusage {
    struct ebb_usage *u;
    uint64_t epoch;
    size_t charged;        /* bytes counted against the plugin's memory cap */
    bool target;           /* the move stops when the source is no longer above target */
};

static struct ebb_engine *engine_of(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    if (vm == NULL || vm->engine == NULL || vm->engine->cache == NULL)
        luaL_error(L, "no cluster view is loaded");
    return vm->engine;
}

static struct lusage *check_usage(lua_State *L, int idx)
{
    struct lusage *lu = luaL_checkudata(L, idx, USAGE_MT);
    if (lu->u == NULL)
        luaL_error(L, "this NodeUsage is closed");
    if (lu->epoch != ebb_cache_epoch(engine_of(L)->cache))
        luaL_error(L, "this NodeUsage was made before the cluster view changed");
    return lu;
}

static int l_usage_gc(lua_State *L)
{
    struct lusage *lu = luaL_checkudata(L, 1, USAGE_MT);
    struct ebb_vm *vm = ebb__vm_of(L);

    ebb_usage_destroy(lu->u);
    lu->u = NULL;
    if (vm != NULL && lu->charged <= vm->mem_used)
        vm->mem_used -= lu->charged;
    lu->charged = 0;
    return 0;
}

/* The set lives in malloc'd memory: count it against the plugin's cap as
 * if the state's allocator had handed it out, and let the collector know
 * there is garbage to chase. Raises (the set already parked in its
 * userdata) when the cap would be passed. */
static void charge(lua_State *L, struct lusage *lu)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    size_t bytes = ebb_usage_bytes(lu->u);

    if (vm == NULL)
        return;
    if (vm->limit_on && vm->mem_used + bytes > vm->mem_limit)
        luaL_error(L, "not enough memory");
    vm->mem_used += bytes;
    lu->charged = bytes;
    lua_gc(L, LUA_GCSTEP, (int)(bytes / 1024));
}

/* A Node, or a node name, at idx -> its index in the set, or -1 when it is
 * not in it (raises on a wrong type). */
static long node_index(lua_State *L, const struct ebb_usage *u, int idx)
{
    const struct ebb_node *nd;

    if (lua_type(L, idx) == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        nd = ebb_cache_node(engine_of(L)->cache, ebb_str_find(s, len));
    } else {
        nd = ebb__lua_check_node(L, idx);
    }
    return ebb_usage_index(u, nd);
}

static size_t check_node(lua_State *L, const struct ebb_usage *u, int idx)
{
    long i = node_index(L, u, idx);
    if (i < 0)
        luaL_argerror(L, idx, "node is not in this NodeUsage");
    return (size_t)i;
}

/* {resource = value} for the set's resources. */
static void push_ints(lua_State *L, const struct ebb_usage *u, const int64_t *v)
{
    lua_createtable(L, 0, u->nres);
    for (uint16_t k = 0; k < u->nres; k++) {
        lua_pushinteger(L, v[k]);
        lua_setfield(L, -2, ebb_resource_name(u->res[k]));
    }
}

static void push_class_list(lua_State *L, const struct ebb_usage *u, int cls)
{
    struct ebb_node **v = lua_newuserdatauv(L, (u->n + 1) * sizeof(*v), 0);
    size_t k = 0;

    for (size_t i = 0; i < u->n; i++)
        if (u->cls[i] == cls)
            v[k++] = u->nodes[i];
    ebb__lua_push_nodelist(L, v, k);
    lua_remove(L, -2);
}

static int class_arg(lua_State *L, int idx)
{
    static const char *const names[] = { "none", "under", "over", NULL };
    return luaL_checkoption(L, idx, NULL, names);
}

struct samples {
    lua_State *L;
    int idx;                     /* the {[node] = value} table */
};

/* A Prometheus sample as upstream turns it into usage: MetricResource =
 * int64(value * 100), truncated. */
static bool sample_value(void *ud, const struct ebb_node *n, int id, int64_t *out)
{
    struct samples *s = ud;
    const char *name = ebb_resource_name(id);
    bool ok = false;

    if (name == NULL || strcmp(name, EBB_USAGE_METRIC_RESOURCE) != 0)
        return false;
    if (lua_getfield(s->L, s->idx, n->name) == LUA_TNUMBER) {
        *out = (int64_t)(lua_tonumber(s->L, -1) * 100);
        ok = true;
    }
    lua_pop(s->L, 1);
    return ok;
}

/* ebb.node_usage(nodes, opts) -> NodeUsage                       [-0, +1, e]
 * nodes: a NodeList, a list of nodes or names, or nil (the cycle's).
 * opts.resources: the resource names to account for (upstream: the
 * thresholds' keys plus cpu, memory and pods); opts.source: "requests"
 * (default: requests of the pods occupying each node, from the cache's
 * per-node sums), "metrics" (metrics.k8s.io NodeMetrics; pods still
 * count the occupying pods) or "prometheus" (opts.samples, the
 * {[node] = value in [0, 1]} of ebb.prometheus_query: MetricResource is
 * int(value * 100) of a capacity of 100). With "metrics" and "prometheus"
 * a node without a value is left out and listed by u:skipped() with
 * upstream's error text. Capacity is the node's allocatable. */
static int l_node_usage(lua_State *L)
{
    struct ebb_engine *e = engine_of(L);
    struct lusage *lu;
    struct ebb_node *const *nodes;
    int res[EBB_RES_MAX];
    size_t n, nres = 0;
    int source = EBB_USAGE_REQUESTS, rc;
    struct samples smp = { L, 0 };

    nodes = ebb__lua_check_nodes(L, 1, &n);
    luaL_checktype(L, 2, LUA_TTABLE);
    if (lua_getfield(L, 2, "source") != LUA_TNIL) {
        static const char *const names[] = { "requests", "metrics", "prometheus", NULL };
        static const int sources[] = { EBB_USAGE_REQUESTS, EBB_USAGE_METRICS, EBB_USAGE_GIVEN };
        source = sources[luaL_checkoption(L, -1, NULL, names)];
    }
    lua_pop(L, 1);
    if (source == EBB_USAGE_GIVEN) {
        if (lua_getfield(L, 2, "samples") != LUA_TTABLE)
            return luaL_error(L, "ebb.node_usage: source \"prometheus\" needs opts.samples, the "
                                 "{[node] = value} of ebb.prometheus_query");
        smp.idx = lua_gettop(L);   /* stays below the userdata until we return */
    }
    if (lua_getfield(L, 2, "resources") != LUA_TTABLE)
        return luaL_error(L, "ebb.node_usage: opts.resources must be a list of resource names");
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; i++) {
        const char *name = lua_tostring(L, -1);
        int id;
        if (name == NULL || lua_type(L, -1) != LUA_TSTRING)
            return luaL_error(L, "ebb.node_usage: opts.resources[%d] must be a string", (int)i);
        if ((id = ebb_resource_id(name)) < 0)
            return luaL_error(L, "ebb.node_usage: too many resource names (at most %d)", EBB_RES_MAX);
        if (nres < EBB_RES_MAX)
            res[nres++] = id;
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    lu = lua_newuserdatauv(L, sizeof(*lu), 0);
    memset(lu, 0, sizeof(*lu));
    luaL_setmetatable(L, USAGE_MT);
    if (source == EBB_USAGE_GIVEN)
        rc = ebb_usage_create_given(e->cache, nodes, n, res, nres, sample_value, &smp, &lu->u);
    else
        rc = ebb_usage_create(e->cache, nodes, n, res, nres, source, &lu->u);
    if (rc != 0)
        return luaL_error(L, "ebb.node_usage: %s", ebb_strerror(rc));
    lu->epoch = ebb_cache_epoch(e->cache);
    charge(L, lu);
    return 1;
}

/* ebb.metrics_provider(source) -> boolean                        [-0, +1, e]
 * The running policy enables the metrics provider `source`
 * ("KubernetesMetrics": a metricsProviders entry or the deprecated
 * metricsCollector.enabled; "Prometheus": a metricsProviders entry). */
static int l_metrics_provider(lua_State *L)
{
    static const char *const names[] = { "KubernetesMetrics", "Prometheus", NULL };
    int which = luaL_checkoption(L, 1, NULL, names);
    const struct ebb_policy *p = engine_of(L)->policy;
    int want = which == 0 ? EBB_METRICS_KUBERNETES : EBB_METRICS_PROMETHEUS;
    bool on = false;

    if (p != NULL) {
        on = which == 0 && p->metrics_collector_enabled;
        for (size_t i = 0; i < p->nproviders && !on; i++)
            on = p->providers[i].source == want;
    }
    lua_pushboolean(L, on);
    return 1;
}

/* u:measures_pods() -> boolean                                  [-0, +1, e]
 * Whether what evicting a pod frees can be told (false for "prometheus":
 * upstream then evicts "unconstrained", one pod per node unless
 * evictionLimits.node says more). */
static int l_usage_measures_pods(lua_State *L)
{
    lua_pushboolean(L, ebb_usage_measures_pods(check_usage(L, 1)->u));
    return 1;
}

/* u:count() -> number of nodes with a usage                     [-0, +1, e] */
static int l_usage_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)check_usage(L, 1)->u->n);
    return 1;
}

/* u:nodes() -> NodeList of the nodes with a usage               [-0, +1, e] */
static int l_usage_nodes(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;
    ebb__lua_push_nodelist(L, u->nodes, u->n);
    return 1;
}

/* u:skipped() -> { {node = name, reason = text}, ... }          [-0, +1, e]
 * The nodes left out of the set (metrics source: no NodeMetrics, or no
 * value for a resource of the set), for ebb.note. */
static int l_usage_skipped(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;

    lua_createtable(L, (int)u->nskipped, 0);
    for (size_t i = 0; i < u->nskipped; i++) {
        lua_createtable(L, 0, 2);
        lua_pushstring(L, u->skipped[i].node->name);
        lua_setfield(L, -2, "node");
        lua_pushstring(L, u->skipped[i].reason);
        lua_setfield(L, -2, "reason");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* Percentages from a {resource = number} table into by-position arrays. */
static void read_percents(lua_State *L, int idx, const struct ebb_usage *u, bool *has, double *v)
{
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        const char *name = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
        int id = name ? ebb_resource_find(name) : -1;
        int k = id >= 0 ? ebb_usage_position(u, id) : -1;
        if (name == NULL)
            luaL_error(L, "thresholds: keys must be resource names");
        if (k < 0)
            luaL_error(L, "thresholds: resource \"%s\" is not in this NodeUsage's resources", name);
        if (!lua_isnumber(L, -1))
            luaL_error(L, "thresholds: \"%s\" must be a number", name);
        has[k] = true;
        v[k] = lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
}

/* u:set_thresholds(low [, high [, deviation]])                   [-0, +0, e]
 * low, high: {resource = percent}; high nil: 100 for every resource of low
 * (HighNodeUtilization). deviation true: the percents are distances from
 * the average usage of the set's nodes (useDeviationThresholds): low =
 * clamp(avg - low), high = clamp(avg + high) into [0, 100]. Resources
 * without a threshold are ignored by the classification. Sets each node's
 * available capacity (allocatable capped at its high threshold). */
static int l_usage_set_thresholds(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;
    bool has[EBB_RES_MAX] = { false }, has_high[EBB_RES_MAX] = { false };
    double low[EBB_RES_MAX] = { 0 }, high[EBB_RES_MAX] = { 0 };
    bool with_high = !lua_isnoneornil(L, 3);

    luaL_checktype(L, 2, LUA_TTABLE);
    read_percents(L, 2, u, has, low);
    if (with_high) {
        luaL_checktype(L, 3, LUA_TTABLE);
        read_percents(L, 3, u, has_high, high);
        for (uint16_t k = 0; k < u->nres; k++)
            if (has[k] != has_high[k])
                return luaL_error(L, "thresholds: low and high name different resources");
    }
    ebb_usage_set_thresholds(u, has, low, with_high ? high : NULL, lua_toboolean(L, 4));
    return 0;
}

/* u:thresholds() -> low, high ({resource = percent}, thresholded only) */
static int l_usage_thresholds(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;

    for (int which = 0; which < 2; which++) {
        lua_createtable(L, 0, u->nres);
        for (uint16_t k = 0; k < u->nres; k++) {
            if (!u->has_thr[k])
                continue;
            lua_pushnumber(L, which == 0 ? u->low[k] : u->high[k]);
            lua_setfield(L, -2, ebb_resource_name(u->res[k]));
        }
    }
    return 2;
}

/* u:classify(rule) -> under, over (NodeLists, in the set's order) [-0, +2, e]
 * "spread" (LowNodeUtilization): under = schedulable and every thresholded
 * resource <= low; else over = some thresholded resource > high.
 * "pack" (HighNodeUtilization): under = every thresholded resource <= low,
 * unschedulable nodes included; else over = schedulable (a target). */
static int l_usage_classify(lua_State *L)
{
    static const char *const rules[] = { "spread", "pack", NULL };
    struct ebb_usage *u = check_usage(L, 1)->u;
    int rule = luaL_checkoption(L, 2, NULL, rules) == 0 ? EBB_USAGE_SPREAD : EBB_USAGE_PACK;

    ebb_usage_classify(u, rule, NULL, NULL);
    push_class_list(L, u, EBB_USAGE_UNDER);
    push_class_list(L, u, EBB_USAGE_OVER);
    return 2;
}

/* u:class(node) -> "under" | "over" | "none" | nil (not in the set) */
static int l_usage_class(lua_State *L)
{
    static const char *const names[] = { "none", "under", "over" };
    struct ebb_usage *u = check_usage(L, 1)->u;
    long i = node_index(L, u, 2);

    if (i < 0)
        lua_pushnil(L);
    else
        lua_pushstring(L, names[u->cls[i] <= EBB_USAGE_OVER ? u->cls[i] : 0]);
    return 1;
}

/* u:move(from, to [, opts]) -> NodeList of the sources           [-0, +1, e]
 * Start moving pods from the nodes of class `from` to those of class `to`
 * ("under", "over"): the destinations' budget is Σ (available - used) per
 * resource. Sources come sorted by the sum of their raw usage (opts.order
 * "descending", the default, or "ascending"), ties by name. opts.target
 * true: u:continues() also asks the source to still be above its target. */
static int l_usage_move(lua_State *L)
{
    static const char *const orders[] = { "descending", "ascending", NULL };
    struct lusage *lu = check_usage(L, 1);
    struct ebb_usage *u = lu->u;
    int from = class_arg(L, 2), to = class_arg(L, 3);
    bool ascending = false;
    size_t *idx, k;
    struct ebb_node **v;

    if (!lua_isnoneornil(L, 4)) {
        luaL_checktype(L, 4, LUA_TTABLE);
        lua_getfield(L, 4, "order");
        ascending = luaL_checkoption(L, -1, "descending", orders) == 1;
        lua_getfield(L, 4, "target");
        lu->target = lua_toboolean(L, -1);
        lua_pop(L, 2);
    }
    ebb_usage_move(u, to);
    idx = lua_newuserdatauv(L, (u->n + 1) * sizeof(*idx), 0);
    v = lua_newuserdatauv(L, (u->n + 1) * sizeof(*v), 0);
    k = ebb_usage_order(u, from, ascending, idx);
    for (size_t j = 0; j < k; j++)
        v[j] = u->nodes[idx[j]];
    ebb__lua_push_nodelist(L, v, k);
    return 1;
}

/* u:continues(node) -> boolean                                   [-0, +1, e]
 * Keep evicting from this source: it is still above its target (when the
 * move was started with target = true) and every budget is > 0. */
static int l_usage_continues(lua_State *L)
{
    struct lusage *lu = check_usage(L, 1);
    lua_pushboolean(L, ebb_usage_continues(lu->u, check_node(L, lu->u, 2), lu->target));
    return 1;
}

/* u:tolerated(pod) -> boolean                                    [-0, +1, e]
 * The pod tolerates every taint of some destination and has at least as
 * many tolerations as that node has taints (utils.PodToleratesTaints). */
static int l_usage_tolerated(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;
    lua_pushboolean(L, ebb_usage_tolerated(u, ebb__lua_check_pod(L, 2)));
    return 1;
}

/* u:candidates(pods [, opts]) -> PodList                         [-0, +1, e]
 * The pods of the list, in order, that u:tolerated() accepts and, with
 * opts.requesting = {names}, that request one of those resources in some
 * container (HighNodeUtilization's OnlyThresholdingResources). Skipping
 * these early changes nothing upstream decides: a skipped pod has no
 * effect on the budget or the limits. */
static int l_usage_candidates(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;
    size_t n;
    struct ebb_pod *const *pods = ebb__lua_check_podlist(L, 2, &n);
    uint64_t mask = 0;
    bool requesting = false;
    int out;

    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        if (lua_getfield(L, 3, "requesting") == LUA_TTABLE) {
            requesting = true;
            for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TSTRING; i++) {
                int id = ebb_resource_find(lua_tostring(L, -1));
                if (id >= 0)   /* a name never seen is requested by no pod */
                    mask |= 1ull << id;
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    ebb__lua_new_podlist(L);
    out = lua_gettop(L);
    for (size_t i = 0; i < n; i++) {
        struct ebb_pod *p = pods[i];
        if (requesting && (p->requested_mask & mask) == 0)
            continue;
        if (!ebb_usage_tolerated(u, p))
            continue;
        ebb__lua_podlist_append(L, out, p);
    }
    return 1;
}

/* u:pod_usage(pod) -> {resource = value} | nil, why              [-0, +1|2, e]
 * What evicting the pod frees: its requests (pods: 1), or with the metrics
 * source its PodMetrics usage; nil when the pod has no metrics (upstream
 * skips such a pod). */
static int l_usage_pod_usage(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;
    struct ebb_pod *p = ebb__lua_check_pod(L, 2);
    int64_t v[EBB_RES_MAX];
    const char *why = NULL;

    if (ebb_usage_of_pod(u, engine_of(L)->cache, p, v, &why) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, why);
        return 2;
    }
    push_ints(L, u, v);
    return 1;
}

/* u:take(pod) -> boolean | nil, why                              [-0, +1|2, e]
 * Account for an evicted pod: subtract what it frees from its node and
 * from the budget; returns u:continues(node) after. The pod's node must be
 * in the set. */
static int l_usage_take(lua_State *L)
{
    struct lusage *lu = check_usage(L, 1);
    struct ebb_usage *u = lu->u;
    struct ebb_engine *e = engine_of(L);
    struct ebb_pod *p = ebb__lua_check_pod(L, 2);
    const struct ebb_node *nd = p->node ? ebb_cache_node(e->cache, p->node) : NULL;
    long i = ebb_usage_index(u, nd);
    int64_t v[EBB_RES_MAX];
    const char *why = NULL;

    if (i < 0)
        return luaL_argerror(L, 2, "the pod's node is not in this NodeUsage");
    if (ebb_usage_of_pod(u, e->cache, p, v, &why) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, why);
        return 2;
    }
    ebb_usage_subtract(u, (size_t)i, v);
    lua_pushboolean(L, ebb_usage_continues(u, (size_t)i, lu->target));
    return 1;
}

/* u:explain(node) -> string                                      [-0, +1, e]
 * Why the node is a source, for an eviction's reason: the resources above
 * the target and by how much, or (an underutilized node) each thresholded
 * resource against its low threshold. */
static int l_usage_explain(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;
    char buf[1024];

    ebb_usage_explain(u, check_node(L, u, 2), buf, sizeof(buf));
    lua_pushstring(L, buf);
    return 1;
}

/* u:usage(node) / u:available(node) -> {resource = raw value}     [-0, +1, e]
 * u:percent(node) -> {resource = percent} (resources the node lists). */
static int l_usage_usage(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;
    push_ints(L, u, &u->used[check_node(L, u, 2) * u->nres]);
    return 1;
}

static int l_usage_available(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;
    push_ints(L, u, &u->avail[check_node(L, u, 2) * u->nres]);
    return 1;
}

static int l_usage_percent(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;
    size_t i = check_node(L, u, 2);

    lua_createtable(L, 0, u->nres);
    for (uint16_t k = 0; k < u->nres; k++) {
        if (!u->has_cap[i * u->nres + k])
            continue;
        lua_pushnumber(L, u->pct[i * u->nres + k]);
        lua_setfield(L, -2, ebb_resource_name(u->res[k]));
    }
    return 1;
}

/* u:budget() -> {resource = what the destinations can still take} */
static int l_usage_budget(lua_State *L)
{
    struct ebb_usage *u = check_usage(L, 1)->u;
    push_ints(L, u, u->budget);
    return 1;
}

static int l_usage_tostring(lua_State *L)
{
    struct lusage *lu = luaL_checkudata(L, 1, USAGE_MT);
    lua_pushfstring(L, "NodeUsage(%d)", lu->u ? (int)lu->u->n : 0);
    return 1;
}

static const luaL_Reg usage_methods[] = {
    { "count", l_usage_count },
    { "nodes", l_usage_nodes },
    { "skipped", l_usage_skipped },
    { "set_thresholds", l_usage_set_thresholds },
    { "thresholds", l_usage_thresholds },
    { "classify", l_usage_classify },
    { "class", l_usage_class },
    { "move", l_usage_move },
    { "continues", l_usage_continues },
    { "tolerated", l_usage_tolerated },
    { "candidates", l_usage_candidates },
    { "pod_usage", l_usage_pod_usage },
    { "measures_pods", l_usage_measures_pods },
    { "take", l_usage_take },
    { "explain", l_usage_explain },
    { "usage", l_usage_usage },
    { "available", l_usage_available },
    { "percent", l_usage_percent },
    { "budget", l_usage_budget },
    { NULL, NULL },
};

static const luaL_Reg funcs[] = {
    { "node_usage", l_node_usage },
    { "metrics_provider", l_metrics_provider },
    { NULL, NULL },
};

void ebb__lua_open_usage(lua_State *L)
{
    luaL_newmetatable(L, USAGE_MT);
    luaL_newlib(L, usage_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_usage_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_usage_gc);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, l_usage_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "NodeUsage");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);
    luaL_setfuncs(L, funcs, 0);
}
