/* Node utilization in Lua: ebb.node_usage() and the "ebb.NodeUsage" it
 * returns (the math is engine/strategy/usage.c). A strategy makes one NodeUsage per
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
#include "lua/lua_int.h"

#define USAGE_MT "ebb.NodeUsage"

struct lusage {
    struct ebb_usage *u;
    uint64_t epoch;
    struct ebb_charge charge;   /* what the set holds, counted against the plugin's cap */
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

    ebb_usage_destroy(lu->u);
    lu->u = NULL;
    ebb__uncharge(L, &lu->charge);
    return 0;
}

/* A Node, or a node name, at idx -> its index in the set, or -1 when it is
 * not in it (raises on a wrong type). */
static long node_index(lua_State *L, const struct ebb_usage *u, int idx)
{
    const struct ebb_node *nd;

    if (lua_type(L, idx) == LUA_TSTRING) {
        size_t len;
        const char *s = ebb__lr_str(L, idx, SIZE_MAX, 0, &len, "NodeUsage: node");
        nd = len > EBB_LR_NAME_MAX ? NULL : ebb_cache_node(engine_of(L)->cache, ebb_str_find(s, len));
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
    struct ebb_node **v = ebb__lr_alloc(L, u->n, sizeof(*v), "NodeUsage");
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
    return ebb__lr_option(L, idx, NULL, names, "NodeUsage: class");
}

/* The {[node] = value} samples, read into C before the set is built: the
 * build calls sample_value from inside the usage library, where nothing may
 * raise (it would leak what the library holds). */
struct sample {
    ebb_str node;
    int64_t v;
};

struct samples {
    struct sample *v;            /* sorted by node pointer */
    size_t n;
};

static int cmp_sample(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct sample *)a)->node;
    uintptr_t y = (uintptr_t)((const struct sample *)b)->node;
    return x < y ? -1 : x > y;
}

/* A Prometheus sample as upstream turns it into usage: MetricResource =
 * int64(value * 100), truncated (values are bounded when read: no overflow). */
static void read_samples(lua_State *L, int t, struct samples *smp)
{
    size_t n = ebb__lr_count(L, t, EBB_LR_LIST_MAX, "ebb.node_usage: opts.samples"), it = 0;

    smp->v = ebb__lr_alloc(L, n, sizeof(*smp->v), "ebb.node_usage: samples");
    smp->n = 0;
    lua_pushnil(L);
    while (ebb__lr_next(L, t, &it, n, "ebb.node_usage: opts.samples")) {
        size_t len;
        const char *name = ebb__lr_str(L, -2, SIZE_MAX, 0, &len, "ebb.node_usage: opts.samples (a key)");
        double d = ebb__lr_num(L, -1, -1e15, 1e15, "ebb.node_usage: opts.samples (a value)");
        ebb_str node = len > EBB_LR_NAME_MAX ? NULL : ebb_str_find(name, len);
        if (node != NULL)
            smp->v[smp->n++] = (struct sample){ node, (int64_t)(d * 100) };
        lua_pop(L, 1);
    }
    qsort(smp->v, smp->n, sizeof(*smp->v), cmp_sample);
}

static bool sample_value(void *ud, const struct ebb_node *n, int id, int64_t *out)
{
    struct samples *s = ud;
    const char *name = ebb_resource_name(id);
    struct sample key = { n->name, 0 };
    const struct sample *hit;

    if (name == NULL || strcmp(name, EBB_USAGE_METRIC_RESOURCE) != 0 || s->n == 0)
        return false;
    if ((hit = bsearch(&key, s->v, s->n, sizeof(*s->v), cmp_sample)) == NULL)
        return false;
    *out = hit->v;
    return true;
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
    int source = EBB_USAGE_REQUESTS, rc, t;
    struct samples smp = { NULL, 0 };
    size_t len;

    nodes = ebb__lua_check_nodes(L, 1, &n);
    ebb__lr_table(L, 2, "ebb.node_usage: opts");
    if (ebb__lr_field(L, 2, "source") != LUA_TNIL) {
        static const char *const names[] = { "requests", "metrics", "prometheus", NULL };
        static const int sources[] = { EBB_USAGE_REQUESTS, EBB_USAGE_METRICS, EBB_USAGE_GIVEN };
        source = sources[ebb__lr_option(L, -1, NULL, names, "ebb.node_usage: opts.source")];
    }
    lua_pop(L, 1);
    if (source == EBB_USAGE_GIVEN) {
        if (ebb__lr_field(L, 2, "samples") != LUA_TTABLE)
            return luaL_error(L, "ebb.node_usage: source \"prometheus\" needs opts.samples, the "
                                 "{[node] = value} of ebb.prometheus_query");
        read_samples(L, lua_gettop(L), &smp);   /* the array stays on the stack */
    }
    if (ebb__lr_field(L, 2, "resources") != LUA_TTABLE)
        return luaL_error(L, "ebb.node_usage: opts.resources must be a list of resource names");
    t = lua_gettop(L);
    len = ebb__lr_len(L, t, EBB_RES_MAX, "ebb.node_usage: opts.resources");
    for (size_t i = 1; i <= len; i++) {
        int id;
        ebb__lr_index(L, t, (lua_Integer)i);
        id = ebb__lr_resource(L, -1, "ebb.node_usage: opts.resources[%zu]", i);
        res[nres++] = id;
        lua_pop(L, 1);
    }
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
    ebb__charge(L, &lu->charge, ebb_usage_bytes(lu->u));
    return 1;
}

/* ebb.metrics_provider(source) -> boolean                        [-0, +1, e]
 * The running policy enables the metrics provider `source`
 * ("KubernetesMetrics": a metricsProviders entry or the deprecated
 * metricsCollector.enabled; "Prometheus": a metricsProviders entry). */
static int l_metrics_provider(lua_State *L)
{
    static const char *const names[] = { "KubernetesMetrics", "Prometheus", NULL };
    int which = ebb__lr_option(L, 1, NULL, names, "ebb.metrics_provider");
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
    size_t it = 0;

    ebb__lr_table(L, idx, "thresholds");
    lua_pushnil(L);
    while (ebb__lr_next(L, idx, &it, EBB_RES_MAX, "thresholds")) {
        const char *name = ebb__lr_str(L, -2, EBB_LR_NAME_MAX, EBB_LR_TEXT, NULL,
                                       "thresholds (a key: a resource name)");
        int id = ebb_resource_find(name);
        int k = id >= 0 ? ebb_usage_position(u, id) : -1;
        if (k < 0)
            luaL_error(L, "thresholds: resource \"%s\" is not in this NodeUsage's resources", name);
        v[k] = ebb__lr_num(L, -1, -1e9, 1e9, "thresholds.%s", ebb_resource_name(id));
        has[k] = true;
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

    read_percents(L, 2, u, has, low);
    if (with_high) {
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
    int rule = ebb__lr_option(L, 2, NULL, rules, "u:classify") == 0 ? EBB_USAGE_SPREAD
                                                                   : EBB_USAGE_PACK;

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

    if (ebb__lr_opttable(L, 4, "u:move: opts")) {
        ebb__lr_field(L, 4, "order");
        ascending = ebb__lr_option(L, -1, "descending", orders, "u:move: opts.order") == 1;
        ebb__lr_field(L, 4, "target");
        lu->target = lua_toboolean(L, -1);
        lua_pop(L, 2);
    }
    ebb_usage_move(u, to);
    idx = ebb__lr_alloc(L, u->n, sizeof(*idx), "u:move");
    v = ebb__lr_alloc(L, u->n, sizeof(*v), "u:move");
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

    if (ebb__lr_opttable(L, 3, "u:candidates: opts") &&
        ebb__lr_field(L, 3, "requesting") != LUA_TNIL) {
        int t = lua_gettop(L);
        size_t len = ebb__lr_len(L, t, EBB_LR_LIST_MAX, "u:candidates: opts.requesting");
        requesting = true;
        for (size_t i = 1; i <= len; i++) {
            int id;
            ebb__lr_index(L, t, (lua_Integer)i);
            id = ebb_resource_find(ebb__lr_str(L, -1, EBB_LR_NAME_MAX, EBB_LR_TEXT, NULL,
                                               "u:candidates: opts.requesting[%zu]", i));
            if (id >= 0 && id < 64)   /* a name never seen is requested by no pod */
                mask |= 1ull << id;
            lua_pop(L, 1);
            if ((i & 4095) == 0)
                ebb__vm_check(L);
        }
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
