/* Load-aware helpers in Lua: ebb.node_loads() and the "ebb.LoadSet" it
 * returns, a view of engine/strategy/loadaware.c for one pass of LowNodeLoad over a
 * pool of nodes. Everything that walks nodes or pods (usage, thresholds,
 * classification, fit checks with reservation, the pod order) runs in C;
 * the strategy only decides what to do with the answers.
 *
 * A LoadSet borrows the cache's nodes and metrics: it raises once the
 * cache has freed an object since it was made (use one per cycle). Its
 * memory is malloc'd and released by __gc/__close.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "ebb/loadaware.h"
#include "ebb/selector.h"
#include "lua/lua_int.h"

#define LOADSET_MT "ebb.LoadSet"
#define PODLIST_MT "ebb.PodList"

struct loadset {
    struct ebb_la_set *s;
    uint64_t epoch;
    int64_t expiration;
    struct ebb_charge charge;
};

static struct ebb_la_set *check_set(lua_State *L, int idx)
{
    struct loadset *u = luaL_checkudata(L, idx, LOADSET_MT);
    if (u->s == NULL)
        luaL_error(L, "this LoadSet was closed");
    if (u->epoch != ebb_cache_epoch(ebb__lua_cache(L)))
        luaL_error(L, "this LoadSet was made before the cluster view changed; measure again");
    return u->s;
}

static int l_set_gc(lua_State *L)
{
    struct loadset *u = luaL_checkudata(L, 1, LOADSET_MT);
    ebb_la_destroy(u->s);
    u->s = NULL;
    ebb__uncharge(L, &u->charge);
    return 0;
}

static int l_set_tostring(lua_State *L)
{
    struct loadset *u = luaL_checkudata(L, 1, LOADSET_MT);
    if (u->s)
        lua_pushfstring(L, "LoadSet(%d nodes, %d measured)", (int)u->s->n, (int)u->s->nmeasured);
    else
        lua_pushliteral(L, "LoadSet(closed)");
    return 1;
}

/* ---- arguments ------------------------------------------------------------ */

static bool opt_flag(lua_State *L, int idx, const char *field)
{
    bool b = false;
    if (ebb__lr_opttable(L, idx, "LoadSet: options")) {
        ebb__lr_field(L, idx, field);
        b = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    return b;
}

/* A node of the set from a Node or a node name; raises when it is not in. */
static struct ebb_la_node *check_node(lua_State *L, const struct ebb_la_set *s, int idx)
{
    struct ebb_la_node *n;
    ebb_str name;

    if (lua_type(L, idx) == LUA_TSTRING) {
        size_t len;
        const char *str = ebb__lr_str(L, idx, SIZE_MAX, 0, &len, "LoadSet: node");
        name = len > EBB_LR_NAME_MAX ? NULL : ebb_str_find(str, len);
        if ((n = ebb_la_find(s, name)) == NULL)
            ebb__lr_error(L, idx, "expected a node of this LoadSet", "LoadSet: node");
        return n;
    }
    name = ebb__lua_check_node(L, idx)->name;
    if ((n = ebb_la_find(s, name)) == NULL)
        luaL_error(L, "node \"%s\" is not in this LoadSet", name);
    return n;
}

/* The set's nodes for a NodeList / list of Nodes or names at idx, in the
 * order given, in a scratch userdata pushed on the stack. */
static struct ebb_la_node **check_nodes(lua_State *L, const struct ebb_la_set *s, int idx, size_t *n)
{
    struct ebb_node *const *v;
    struct ebb_la_node **out;
    size_t len;

    idx = lua_absindex(L, idx);
    luaL_argcheck(L, !lua_isnoneornil(L, idx), idx, "expected nodes");
    v = ebb__lua_check_nodes(L, idx, &len);
    out = ebb__lr_alloc(L, len, sizeof(*out), "LoadSet: nodes");
    for (size_t i = 0; i < len; i++)
        if ((out[i] = ebb_la_find(s, v[i]->name)) == NULL)
            luaL_error(L, "node \"%s\" is not in this LoadSet", v[i]->name);
    *n = len;
    return out;
}

/* {resource = integer} -> an array by the set's resources (missing: 0),
 * each in [min, max]: weights are bounded so that a score cannot overflow
 * (100 x 2^31 x 16 resources), amounts are any int64. */
#define WEIGHT_MAX INT32_MAX

static void check_ints(lua_State *L, const struct ebb_la_set *s, int idx, int64_t *w,
                       lua_Integer min, lua_Integer max, const char *what)
{
    for (int i = 0; i < s->nres; i++)
        w[i] = 0;
    if (!ebb__lr_opttable(L, idx, "LoadSet: %s", what))
        return;
    for (int i = 0; i < s->nres; i++) {
        ebb__lr_field(L, idx, ebb_resource_name(s->res[i]));
        w[i] = ebb__lr_optint(L, -1, 0, min, max, "LoadSet: %s.%s", what,
                              ebb_resource_name(s->res[i]));
        lua_pop(L, 1);
    }
}

static void check_weights(lua_State *L, const struct ebb_la_set *s, int idx, int64_t *w)
{
    check_ints(L, s, idx, w, -WEIGHT_MAX, WEIGHT_MAX, "weights");
}

/* The pods of a PodList or a list of Pods (read raw, its length bounded),
 * in a scratch userdata pushed on the stack: a copy the methods may sort. */
static struct ebb_pod **check_pods(lua_State *L, int idx, size_t *n)
{
    struct ebb_pod *const *v;
    struct ebb_pod **out;
    size_t len;

    idx = lua_absindex(L, idx);
    if ((v = ebb__lua_podlist(L, idx, &len)) != NULL || luaL_testudata(L, idx, PODLIST_MT)) {
        out = ebb__lr_alloc(L, len, sizeof(*out), "LoadSet: pods");
        if (len > 0)
            memcpy(out, v, len * sizeof(*out));
        *n = len;
        return out;
    }
    if (!lua_istable(L, idx))
        luaL_argerror(L, idx, "expected a PodList or a list of pods");
    len = ebb__lr_len(L, idx, EBB_LR_LIST_MAX, "LoadSet: pods");
    out = ebb__lr_alloc(L, len, sizeof(*out), "LoadSet: pods");
    for (size_t i = 1; i <= len; i++) {
        ebb__lr_index(L, idx, (lua_Integer)i);
        out[i - 1] = ebb__lua_check_pod(L, -1);
        lua_pop(L, 1);
    }
    *n = len;
    return out;
}

static void push_res_array(lua_State *L, const struct ebb_la_set *s, const int64_t *v, bool all)
{
    lua_createtable(L, 0, s->nres);
    for (int i = 0; i < s->nres; i++) {
        if (!all && !s->thresholded[i])
            continue;
        lua_pushinteger(L, v[i]);
        lua_setfield(L, -2, ebb_resource_name(s->res[i]));
    }
}

/* A percent map {resource = number} into t's arrays; bit `has` per id. */
static void read_percents(lua_State *L, int opts, const char *field, uint64_t *has, double *v)
{
    size_t it = 0;
    int t;

    if (ebb__lr_field(L, opts, field) == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    t = lua_gettop(L);
    ebb__lr_table(L, t, "ebb.node_loads: option '%s'", field);
    lua_pushnil(L);
    while (ebb__lr_next(L, t, &it, EBB_RES_MAX, "ebb.node_loads: option '%s'", field)) {
        int id = ebb__lr_resource(L, -2, "ebb.node_loads: %s (a key)", field);
        v[id] = ebb__lr_num(L, -1, -1e9, 1e9, "ebb.node_loads: %s (a percent)", field);
        *has |= 1ull << id;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* ---- construction ---------------------------------------------------------- */

/* ebb.node_loads(nodes, opts) -> LoadSet                         [-0, +1, e]
 * Measures every node (NodeList, list of Nodes or names), turns the percent
 * thresholds into quantities of each node's raw allocatable and classifies
 * the nodes, all in C. opts:
 *   low, high, prod_low, prod_high = {resource = percent}  (lowThresholds...)
 *   deviation = true: thresholds are the pool's mean usage -/+ t
 *   expiration = seconds: a metric this old is skipped (default 180; <= 0: never)
 * Missing thresholds are filled as Koordinator does (a resource with no low
 * threshold never triggers; one with a low but no high threshold has a
 * high of 0). Nodes without usable metrics are in the set, class "skipped". */
static int l_node_loads(lua_State *L)
{
    struct ebb_cache *c = ebb__lua_cache(L);
    struct ebb_vm *vm = ebb__vm_of(L);
    struct ebb_la_thresholds *t;
    struct ebb_la_opts o = { 0 };
    struct ebb_node *const *nodes;
    struct loadset *u;
    size_t n;
    int rc;

    lua_settop(L, 2);   /* pin the arguments: helpers push scratch values */
    luaL_argcheck(L, !lua_isnoneornil(L, 1), 1, "expected nodes");
    nodes = ebb__lua_check_nodes(L, 1, &n);
    t = lua_newuserdatauv(L, sizeof(*t), 0);   /* scratch: too big for the C stack */
    memset(t, 0, sizeof(*t));
    o.now = ebb__engine_now(vm->engine);
    o.expiration = 180;
    o.thresholds = t;
    if (ebb__lr_opttable(L, 2, "ebb.node_loads: opts")) {
        read_percents(L, 2, "low", &t->has_low, t->low);
        read_percents(L, 2, "high", &t->has_high, t->high);
        read_percents(L, 2, "prod_low", &t->has_prod_low, t->prod_low);
        read_percents(L, 2, "prod_high", &t->has_prod_high, t->prod_high);
        t->deviation = opt_flag(L, 2, "deviation");
        ebb__lr_field(L, 2, "expiration");
        o.expiration = ebb__lr_optint(L, -1, o.expiration, LUA_MININTEGER, LUA_MAXINTEGER,
                                      "ebb.node_loads: option 'expiration'");
        lua_pop(L, 1);
    }
    u = lua_newuserdatauv(L, sizeof(*u), 0);
    memset(u, 0, sizeof(*u));
    luaL_setmetatable(L, LOADSET_MT);
    if ((rc = ebb_la_create(c, nodes, n, &o, &u->s)) != 0)
        return luaL_error(L, "ebb.node_loads: %s", rc == EBB_EINVAL ? "more than 16 resources"
                                                                     : ebb_strerror(rc));
    ebb__charge(L, &u->charge, ebb_la_bytes(u->s));
    u->epoch = ebb_cache_epoch(c);
    u->expiration = o.expiration;
    return 1;
}

/* ---- nodes ------------------------------------------------------------------ */

/* set:nodes([class]) -> NodeList                                  [-0, +1, e]
 * The nodes of one class ("low", "high", "prod_low", "prod_high",
 * "both_low", "normal", "skipped"), or every measured node; by name. */
static int l_set_nodes(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    int cls = -1;
    struct ebb_node **v;
    size_t k = 0;

    if (!lua_isnoneornil(L, 2) &&
        (cls = ebb_la_class_parse(ebb__lr_str(L, 2, 64, EBB_LR_TEXT, NULL, "set:nodes: class"))) < 0)
        return luaL_argerror(L, 2, "expected low, high, prod_low, prod_high, both_low, normal or skipped");
    v = ebb__lr_alloc(L, s->n, sizeof(*v), "set:nodes");
    for (size_t i = 0; i < s->n; i++)
        if (cls < 0 ? s->nodes[i].cls != EBB_LA_SKIPPED : s->nodes[i].cls == cls)
            v[k++] = s->nodes[i].node;
    ebb__lua_push_nodelist(L, v, k);
    return 1;
}

static const char *skip_text(const struct ebb_la_node *n, int64_t expiration, int64_t now, char *buf,
                             size_t len)
{
    const char *what = n->source == EBB_LA_SRC_METRICS ? "NodeMetrics" : "NodeMetric";
    switch (n->skip) {
    case EBB_LA_NO_METRIC:
        return "no NodeMetric (slo.koordinator.sh) or NodeMetrics (metrics.k8s.io) for the node";
    case EBB_LA_EMPTY_METRIC:
        return "NodeMetric has no status.nodeMetric";
    case EBB_LA_NO_TIME:
        snprintf(buf, len, "%s has no %s", what,
                 n->source == EBB_LA_SRC_METRICS ? "timestamp" : "status.updateTime");
        return buf;
    case EBB_LA_EXPIRED:
        snprintf(buf, len, "%s expired: updated %llds ago, nodeMetricExpirationSeconds is %lld", what,
                 (long long)(now - n->updated), (long long)expiration);
        return buf;
    }
    return "";
}

/* set:skipped() -> { {node = name, why = text}, ... }            [-0, +1, e]
 * The nodes without a usable metric, by name, with the reason. */
static int l_set_skipped(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    struct loadset *u = lua_touserdata(L, 1);
    int64_t now = ebb__engine_now(ebb__vm_of(L)->engine);
    int k = 0;
    char buf[256];

    lua_newtable(L);
    for (size_t i = 0; i < s->n; i++) {
        if (s->nodes[i].skip == EBB_LA_MEASURED)
            continue;
        lua_createtable(L, 0, 2);
        lua_pushstring(L, s->nodes[i].node->name);
        lua_setfield(L, -2, "node");
        lua_pushstring(L, skip_text(&s->nodes[i], u->expiration, now, buf, sizeof(buf)));
        lua_setfield(L, -2, "why");
        lua_rawseti(L, -2, ++k);
    }
    return 1;
}

/* set:class(node) -> "low" | "high" | ... | "skipped"            [-0, +1, e] */
static int l_set_class(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    lua_pushstring(L, ebb_la_class_name(check_node(L, s, 2)->cls));
    return 1;
}

/* set:resources() -> { name, ... }: the thresholded resources, by name */
static int l_set_resources(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    int k = 0;

    lua_newtable(L);
    for (int i = 0; i < s->nres; i++) {
        if (!s->thresholded[i])
            continue;
        lua_pushstring(L, ebb_resource_name(s->res[i]));
        lua_rawseti(L, -2, ++k);
    }
    return 1;
}

/* set:usage(node) -> table                                        [-0, +1, e]
 * {class, source ("koordinator" | "metrics" | nil), updated, usage, prod,
 *  allocatable (raw), low, high, prod_low, prod_high, percent, prod_percent}
 * with maps keyed by resource name (the thresholds only for thresholded
 * resources). Reflects the reservations and evictions made so far. */
static int l_set_usage(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    const struct ebb_la_node *n = check_node(L, s, 2);
    static const char *const sources[] = { NULL, "koordinator", "metrics" };

    lua_createtable(L, 0, 12);
    lua_pushstring(L, ebb_la_class_name(n->cls));
    lua_setfield(L, -2, "class");
    if (n->source != EBB_LA_SRC_NONE) {
        lua_pushstring(L, sources[n->source]);
        lua_setfield(L, -2, "source");
    }
    if (n->updated != EBB_TIME_NONE) {
        lua_pushinteger(L, n->updated);
        lua_setfield(L, -2, "updated");
    }
    if (n->skip != EBB_LA_MEASURED)
        return 1;
    push_res_array(L, s, n->usage, true);
    lua_setfield(L, -2, "usage");
    push_res_array(L, s, n->prod, true);
    lua_setfield(L, -2, "prod");
    push_res_array(L, s, n->alloc, true);
    lua_setfield(L, -2, "allocatable");
    push_res_array(L, s, n->low, false);
    lua_setfield(L, -2, "low");
    push_res_array(L, s, n->high, false);
    lua_setfield(L, -2, "high");
    push_res_array(L, s, n->prod_low, false);
    lua_setfield(L, -2, "prod_low");
    push_res_array(L, s, n->prod_high, false);
    lua_setfield(L, -2, "prod_high");
    for (int p = 0; p < 2; p++) {
        lua_createtable(L, 0, s->nres);
        for (int i = 0; i < s->nres; i++) {
            lua_pushnumber(L, ebb_la_percent(n, i, p));
            lua_setfield(L, -2, ebb_resource_name(s->res[i]));
        }
        lua_setfield(L, -2, p ? "prod_percent" : "percent");
    }
    return 1;
}

/* set:overutilized(node [, {prod = true}]) -> boolean, text        [-0, +2, e]
 * Whether some thresholded resource is over its high (prod high)
 * threshold now, and "node cpu usage(87.50%)>threshold(65.00%), ..." ("prod
 * cpu ..." with prod) for those that are ("" when none). */
static int l_set_overutilized(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    const struct ebb_la_node *n = check_node(L, s, 2);
    bool prod = opt_flag(L, 3, "prod");
    char buf[1024];

    lua_settop(L, 3);   /* pin the arguments: helpers push scratch values */
    lua_pushboolean(L, ebb_la_over(s, n, prod) != 0);
    ebb_la_reason(s, n, prod, buf, sizeof(buf));
    lua_pushstring(L, buf);
    return 2;
}

/* set:score(node, weights [, {prod = true}]) -> integer           [-0, +1, e]
 * The weighted usage score sources are sorted by (0-1000). */
static int l_set_score(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    const struct ebb_la_node *n = check_node(L, s, 2);
    int64_t w[EBB_LA_MAXRES];

    lua_settop(L, 4);   /* pin the arguments: helpers push scratch values */
    check_weights(L, s, 3, w);
    lua_pushinteger(L, ebb_la_score(s, n, w, opt_flag(L, 4, "prod")));
    return 1;
}

/* set:sort(nodes, weights [, {prod = true, ascending = true}]) -> NodeList
 *                                                                 [-0, +1, e]
 * The nodes by weighted usage score, highest first (lowest with
 * ascending); ties by name. */
static int l_set_sort(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    int64_t w[EBB_LA_MAXRES];
    struct ebb_la_node **v;
    struct ebb_node **out;
    size_t n;

    lua_settop(L, 4);   /* pin the arguments: helpers push scratch values */
    check_weights(L, s, 3, w);
    v = check_nodes(L, s, 2, &n);
    ebb_la_sort_nodes(s, v, n, w, opt_flag(L, 4, "prod"), opt_flag(L, 4, "ascending"));
    out = ebb__lr_alloc(L, n, sizeof(*out), "set:sort");
    for (size_t i = 0; i < n; i++)
        out[i] = v[i]->node;
    ebb__lua_push_nodelist(L, out, n);
    return 1;
}

/* set:available(nodes [, {prod = true}]) -> {resource = amount}     [-0, +1, e]
 * The load the nodes can still take: the sum of high - usage (prod: prod
 * high - prod usage) per thresholded resource. */
static int l_set_available(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    int64_t out[EBB_LA_MAXRES];
    struct ebb_la_node **v;
    size_t n;

    lua_settop(L, 3);   /* pin the arguments: helpers push scratch values */
    v = check_nodes(L, s, 2, &n);
    ebb_la_available(s, v, n, opt_flag(L, 3, "prod"), out);
    push_res_array(L, s, out, false);
    return 1;
}

/* ---- pods ------------------------------------------------------------------- */

/* set:removable(node, pods, targets [, opts]) -> PodList           [-0, +1, e]
 * The pods of source `node` LowNodeLoad may move, in the order given:
 *   prod = true: only pods of Koordinator priority class Prod
 *   selectors = {Selector, ...}: the pod matches one of them (none: all)
 *   node_fit = true: the pod has a measured usage and fits some target:
 *     NodeFit (ebb.fits) and usage + the pod's usage <= the target's high
 *     (prod high) threshold for every thresholded resource; the first
 *     target that fits keeps the pod's usage reserved from then on.
 * Pods with scheduling.koordinator.sh/eviction-cost 2147483647 are never
 * removable. The evictor's filter is for the caller (ebb.pods). */
static int l_set_removable(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    struct ebb_la_node *src = check_node(L, s, 2);
    bool prod = opt_flag(L, 5, "prod"), node_fit = opt_flag(L, 5, "node_fit");
    const struct ebb_selector *sels[64];
    struct ebb_la_node **targets;
    struct ebb_pod **pods;
    size_t ntargets, np, nsels = 0;
    int out;

    lua_settop(L, 5);   /* pin the arguments: helpers push scratch values */
    pods = check_pods(L, 3, &np);
    targets = check_nodes(L, s, 4, &ntargets);
    if (lua_istable(L, 5) && ebb__lr_field(L, 5, "selectors") != LUA_TNIL) {
        /* the list stays on the stack: it keeps the selectors alive (read
         * raw: no __index can hand over one nothing anchors) */
        int t = lua_gettop(L);
        nsels = ebb__lr_len(L, t, EBB_ARRAY_LEN(sels), "set:removable: selectors");
        for (size_t i = 1; i <= nsels; i++) {
            ebb__lr_index(L, t, (lua_Integer)i);
            if ((sels[i - 1] = ebb__lua_opt_selector(L, -1)) == NULL)
                ebb__lr_error(L, -1, "expected a Selector", "set:removable: selectors[%zu]", i);
            lua_pop(L, 1);
        }
    }
    ebb__lua_new_podlist(L);
    out = lua_gettop(L);
    for (size_t i = 0; i < np; i++) {
        const struct ebb_pod *p = pods[i];
        bool match = nsels == 0;
        if ((i & 255) == 0)
            ebb__vm_check(L);
        if (prod && ebb_koord_priority_class(p) != EBB_KPRIO_PROD)
            continue;
        for (size_t k = 0; k < nsels && !match; k++)
            match = ebb_selector_matches(sels[k], &p->labels);
        if (!match || ebb_koord_eviction_cost(p) == INT32_MAX)
            continue;
        if (node_fit && !ebb_la_fits(s, p, ebb_la_pod_usage(src, p), targets, ntargets, prod, NULL))
            continue;
        ebb__lua_podlist_append(L, out, pods[i]);
    }
    lua_pushvalue(L, out);
    return 1;
}

/* set:order(node, pods, weights [, {prod = true}]) -> PodList       [-0, +1, e]
 * The pods of source `node` in Koordinator's eviction order, the first to
 * go first: priority class (Free, Batch, Mid, Prod, None), priority, QoS,
 * Koordinator QoS, pod-deletion-cost, eviction-cost, then the pod whose
 * usage best matches the excess over the (prod) high threshold, then the
 * newest; ties by namespace/name. A new list; the input is unchanged. */
static int l_set_order(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    const struct ebb_la_node *src = check_node(L, s, 2);
    int64_t w[EBB_LA_MAXRES];
    struct ebb_pod **pods;
    size_t np;
    int out;

    lua_settop(L, 5);   /* pin the arguments: helpers push scratch values */
    check_weights(L, s, 4, w);
    pods = check_pods(L, 3, &np);
    ebb_la_sort_pods(s, src, pods, np, w, opt_flag(L, 5, "prod"));
    ebb__lua_new_podlist(L);
    out = lua_gettop(L);
    for (size_t i = 0; i < np; i++)
        ebb__lua_podlist_append(L, out, pods[i]);
    return 1;
}

/* set:evicted(node, pod, available [, {prod = true}]) -> boolean    [-0, +1, e]
 * Book the pod as gone from source `node`: its usage (1 for "pods") leaves
 * the node's usage (and prod usage with prod) and the `available` map,
 * updated in place. false, nothing changed, when the pod has no measured
 * usage. */
static int l_set_evicted(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    struct ebb_la_node *n = check_node(L, s, 2);
    const struct ebb_pod *p = ebb__lua_check_pod(L, 3);
    int64_t avail[EBB_LA_MAXRES];
    bool ok;

    lua_settop(L, 5);   /* pin the arguments: helpers push scratch values */
    ebb__lr_table(L, 4, "set:evicted: available");
    check_ints(L, s, 4, avail, LUA_MININTEGER, LUA_MAXINTEGER, "available");
    ok = ebb_la_evicted(s, n, p, opt_flag(L, 5, "prod"), avail);
    if (ok) {
        for (int i = 0; i < s->nres; i++) {
            if (!s->thresholded[i])
                continue;
            lua_pushstring(L, ebb_resource_name(s->res[i]));   /* raw: no __newindex runs */
            lua_pushinteger(L, avail[i]);
            lua_rawset(L, 4);
        }
    }
    lua_pushboolean(L, ok);
    return 1;
}

/* set:pod_usage(pod) -> {resource = amount} | nil                  [-0, +1, e]
 * The pod's measured usage on its node (the node must be in the set). */
static int l_set_pod_usage(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    const struct ebb_pod *p = ebb__lua_check_pod(L, 2);
    const struct ebb_res *u = ebb_la_pod_usage(ebb_la_find(s, p->node), p);

    if (u == NULL)
        lua_pushnil(L);
    else
        ebb__lua_push_res(L, u);
    return 1;
}

/* set:pod_score(node, pod, weights [, {prod = true}]) -> number | nil
 * The usage score the pod order uses (nil without a measured usage). */
static int l_set_pod_score(lua_State *L)
{
    struct ebb_la_set *s = check_set(L, 1);
    const struct ebb_la_node *n = check_node(L, s, 2);
    const struct ebb_pod *p = ebb__lua_check_pod(L, 3);
    int64_t w[EBB_LA_MAXRES];
    double v;

    lua_settop(L, 5);   /* pin the arguments: helpers push scratch values */
    check_weights(L, s, 4, w);
    v = ebb_la_pod_score(s, n, p, w, opt_flag(L, 5, "prod"));
    if (v < 0)
        lua_pushnil(L);
    else
        lua_pushnumber(L, v);
    return 1;
}

/* ebb.koord_class(pod) -> priority class, QoS class                [-0, +2, e]
 * Koordinator's classes with their defaults: "Prod" | "Mid" | "Batch" |
 * "Free" | "None", and "LSE" | "LSR" | "LS" | "BE" | "SYSTEM". */
static int l_koord_class(lua_State *L)
{
    const struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    lua_pushstring(L, ebb_koord_priority_name(ebb_koord_priority_class(p)));
    lua_pushstring(L, ebb_koord_qos_name(ebb_koord_qos_class(p)));
    return 2;
}

static const luaL_Reg set_methods[] = {
    { "nodes", l_set_nodes },
    { "skipped", l_set_skipped },
    { "class", l_set_class },
    { "resources", l_set_resources },
    { "usage", l_set_usage },
    { "overutilized", l_set_overutilized },
    { "score", l_set_score },
    { "sort", l_set_sort },
    { "available", l_set_available },
    { "removable", l_set_removable },
    { "order", l_set_order },
    { "evicted", l_set_evicted },
    { "pod_usage", l_set_pod_usage },
    { "pod_score", l_set_pod_score },
    { NULL, NULL },
};

static const luaL_Reg funcs[] = {
    { "node_loads", l_node_loads },
    { "koord_class", l_koord_class },
    { NULL, NULL },
};

void ebb__lua_open_loadaware(lua_State *L)
{
    luaL_newmetatable(L, LOADSET_MT);
    luaL_newlib(L, set_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_set_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_set_gc);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, l_set_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "LoadSet");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);
    luaL_setfuncs(L, funcs, 0);
}
