/* Lua bindings of the groups helpers (ebb/groups.h): the whole-set work of
 * RemoveDuplicates, RemovePodsViolatingInterPodAntiAffinity and
 * RemovePodsViolatingNodeAffinity, registered into require("ebb.native") by
 * luaopen_ebb_native.
 *
 * ebb.duplicates() returns plain tables of PodLists; the anti-affinity
 * index is an "ebb.AntiAffinityIndex" userdata over the C index, stamped
 * with the cache epoch like a PodList (it holds pod pointers).
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "ebb/groups.h"
#include "lua/lua_int.h"

#define ANTI_MT "ebb.AntiAffinityIndex"
#define DUPS_GUARD_MT "ebb.DupsGuard"

struct anti_ud {
    struct ebb_anti_index *ix;
    uint64_t epoch;
    struct ebb_charge charge;   /* follows what the index holds as it grows */
};

/* ---- ebb.duplicates ------------------------------------------------------ */

/* The groups of one ebb.duplicates() call, freed when it returns; what
 * they hold meanwhile is charged to the caller. */
struct dups_guard {
    struct ebb_dups *d;
    struct ebb_charge charge;
};

static int l_dups_guard_close(lua_State *L)
{
    struct dups_guard *g = luaL_checkudata(L, 1, DUPS_GUARD_MT);
    ebb_dups_destroy(g->d);
    g->d = NULL;
    ebb__uncharge(L, &g->charge);
    return 0;
}

/* opts.exclude_kinds as interned kinds (NULL for a kind no object has),
 * in a userdata left on the stack. */
static const ebb_str *exclude_kinds(lua_State *L, int opts, size_t *n)
{
    ebb_str *v;
    size_t len;
    int t;

    *n = 0;
    if (!ebb__lr_opttable(L, opts, "ebb.duplicates: opts"))
        return NULL;
    if (ebb__lr_field(L, opts, "exclude_kinds") == LUA_TNIL) {
        lua_pop(L, 1);
        return NULL;
    }
    t = lua_gettop(L);
    len = ebb__lr_len(L, t, EBB_LR_LIST_MAX, "ebb.duplicates: exclude_kinds");
    v = ebb__lr_alloc(L, len, sizeof(*v), "ebb.duplicates");
    for (size_t i = 1; i <= len; i++) {
        size_t sl;
        const char *s;
        ebb__lr_index(L, t, (lua_Integer)i);
        s = ebb__lr_str(L, -1, EBB_LR_LIST_MAX, 0, &sl, "ebb.duplicates: exclude_kinds[%zu]", i);
        v[i - 1] = ebb_str_find(s, sl);
        lua_pop(L, 1);
    }
    lua_remove(L, t);
    *n = len;
    return v;
}

/* What the loops of a long helper poll: the calling plugin's budget. */
static const atomic_int *stop_of(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    return vm ? &vm->expired : NULL;
}

static void setstr(lua_State *L, const char *k, const char *v)
{
    lua_pushstring(L, v ? v : "");
    lua_setfield(L, -2, k);
}

static void setint(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static void push_images(lua_State *L, const char *images)
{
    int i = 0;

    lua_newtable(L);
    while (images != NULL && *images) {
        const char *end = strchr(images, '#');
        size_t n = end ? (size_t)(end - images) : strlen(images);
        lua_pushlstring(L, images, n);
        lua_rawseti(L, -2, ++i);
        images += n + (end ? 1 : 0);
    }
}

/* With `details`, everything; otherwise only what a strategy acts on: the
 * owner, the counts and the nodes that have something to evict (the names
 * of thousands of feasible nodes per group are costly to build). */
static void push_group(lua_State *L, struct ebb_dups *d, size_t gi, bool details)
{
    const struct ebb_dup_group *g = &d->groups[gi];

    if (details && ebb_dups_targets(d, gi) != 0)
        luaL_error(L, "ebb.duplicates: %s", ebb_strerror(EBB_ENOMEM));
    lua_createtable(L, 0, 9);
    setstr(L, "namespace", g->ns);
    setstr(L, "kind", g->kind);
    setstr(L, "name", g->name);
    setint(L, "occurrences", g->occurrences);
    setint(L, "upper_avg", g->upper_avg);
    setint(L, "feasible", g->ntargets);
    if (details) {
        push_images(L, g->images);
        lua_setfield(L, -2, "images");
        lua_createtable(L, (int)g->ntargets, 0);
        for (uint32_t i = 0; i < g->ntargets; i++) {
            lua_pushstring(L, g->targets[i]->name);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, -2, "feasible_nodes");
    }
    lua_createtable(L, (int)g->nnodes, 0);
    for (uint32_t i = 0, k = 0; i < g->nnodes; i++) {
        const struct ebb_dup_node *dn = &g->nodes[i];
        if (!details && dn->first_evict >= dn->ndups)
            continue;
        lua_createtable(L, 0, 4);
        setstr(L, "node", dn->node_name);
        setint(L, "count", (lua_Integer)dn->ndups + 1);
        ebb__lua_push_podlist(L, dn->dups, dn->ndups);
        lua_setfield(L, -2, "duplicates");
        ebb__lua_push_podlist(L, dn->dups + dn->first_evict, dn->ndups - dn->first_evict);
        lua_setfield(L, -2, "evict");
        lua_rawseti(L, -2, (lua_Integer)++k);
    }
    lua_setfield(L, -2, "nodes");
}

/* ebb.duplicates(pods [, nodes [, opts]]) -> { group, ... }       [-0, +1, e]
 * RemoveDuplicates' grouping over a PodList of candidate pods (as listed,
 * node by node), against `nodes` (a NodeList, a list of nodes or names, or
 * nil: the cycle's nodes) for the feasible targets. opts.exclude_kinds:
 * owner kinds whose pods are left out; opts.details: also images,
 * feasible_nodes and the nodes with nothing to evict. One group per owner
 * key that has duplicates, sorted by namespace, kind, name, images:
 *   { namespace, kind, name, occurrences, feasible (count), upper_avg
 *     (0: fewer than two feasible nodes), nodes = { {node = name, count =
 *     duplicates + 1, duplicates = PodList, evict = PodList}, ... },
 *     details: images = {sorted}, feasible_nodes = {names} }
 * nodes are sorted by name; without details only those with evictions.
 * Linear in pods (plus the feasibility check of each group's distinct
 * placements against the nodes). */
static int l_duplicates(lua_State *L)
{
    size_t npods, nnodes, nex;
    struct ebb_pod *const *pods = ebb__lua_check_podlist(L, 1, &npods);
    struct ebb_node *const *nodes = ebb__lua_check_nodes(L, 2, &nnodes);
    const ebb_str *ex = exclude_kinds(L, 3, &nex);
    struct dups_guard *guard;
    bool details = false;
    int rc;

    if (lua_istable(L, 3)) {
        ebb__lr_field(L, 3, "details");
        details = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    guard = lua_newuserdatauv(L, sizeof(*guard), 0);
    guard->d = NULL;
    guard->charge.charged = 0;
    luaL_setmetatable(L, DUPS_GUARD_MT);
    lua_toclose(L, -1);
    /* about what the grouping holds per pod, before it is built: a PodList
     * may repeat a pod any number of times */
    ebb__charge(L, &guard->charge, npods * 64 + nnodes * 16);
    if ((rc = ebb_dups_find(pods, npods, nodes, nnodes, ex, nex, stop_of(L), &guard->d)) != 0)
        return rc == EBB_ELIMIT ? ebb__vm_stop(L)
                                : luaL_error(L, "ebb.duplicates: %s", ebb_strerror(rc));
    lua_createtable(L, (int)guard->d->ngroups, 0);
    for (size_t i = 0; i < guard->d->ngroups; i++) {
        push_group(L, guard->d, i, details);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;   /* the guard frees the groups on return */
}

/* ---- the anti-affinity index --------------------------------------------- */

static struct anti_ud *check_anti(lua_State *L, int idx)
{
    struct anti_ud *u = luaL_checkudata(L, idx, ANTI_MT);

    if (u->ix == NULL)
        luaL_error(L, "this AntiAffinityIndex is closed");
    if (u->epoch != ebb_cache_epoch(ebb__lua_cache(L)))
        luaL_error(L, "this AntiAffinityIndex was made before the cluster view changed; build it again");
    return u;
}

static int l_anti_gc(lua_State *L)
{
    struct anti_ud *u = luaL_checkudata(L, 1, ANTI_MT);
    ebb_anti_index_destroy(u->ix);
    u->ix = NULL;
    ebb__uncharge(L, &u->charge);
    return 0;
}

/* Charge what the index has grown by since it was last charged. */
static void charge_growth(lua_State *L, struct anti_ud *u)
{
    size_t now = ebb_anti_index_bytes(u->ix);

    if (now > u->charge.charged)
        ebb__charge(L, &u->charge, now - u->charge.charged);
}

/* ebb.anti_affinity_index(pods [, nodes]) -> AntiAffinityIndex    [-0, +1, e]
 * Index a PodList (the pods the strategy lists: both the candidates and the
 * pods their terms are checked against) for required anti-affinity checks.
 * Pods on nodes outside `nodes` (default: the cycle's) are left out.
 * Building is linear in pods; each distinct term is grouped on first use. */
static int l_anti_index(lua_State *L)
{
    struct ebb_cache *c = ebb__lua_cache(L);
    size_t npods, nnodes;
    struct ebb_pod *const *pods = ebb__lua_check_podlist(L, 1, &npods);
    struct ebb_node *const *nodes = ebb__lua_check_nodes(L, 2, &nnodes);
    struct anti_ud *u;
    int rc;

    u = lua_newuserdatauv(L, sizeof(*u), 0);
    u->ix = NULL;
    u->epoch = ebb_cache_epoch(c);
    u->charge.charged = 0;
    luaL_setmetatable(L, ANTI_MT);
    /* at least what the index will hold for its members, charged before it
     * is built: a PodList may repeat a pod any number of times */
    ebb__charge(L, &u->charge, npods * 32 + nnodes * 24);
    if ((rc = ebb_anti_index_create(c, pods, npods, nodes, nnodes, stop_of(L), &u->ix)) != 0)
        return rc == EBB_ELIMIT ? ebb__vm_stop(L)
                                : luaL_error(L, "ebb.anti_affinity_index: %s", ebb_strerror(rc));
    charge_growth(L, u);
    return 1;
}

/* idx:violation(pod) -> nil | peer, topology_key, term           [-0, +1|3, e]
 * The first indexed pod (listing order) that one of `pod`'s own required
 * anti-affinity terms selects in its topology domain (its node, or the
 * nodes with the same value of the term's topologyKey); topology_key is
 * that term's key and term its 1-based position. Term namespaces, or the
 * pod's own when the term lists none (namespaceSelector is ignored); pods
 * of the same name never count. */
static int l_anti_violation(lua_State *L)
{
    struct anti_ud *u = check_anti(L, 1);
    struct ebb_pod *p = ebb__lua_check_pod(L, 2);
    int term = -1;
    const struct ebb_pod *peer = ebb_anti_index_violation(u->ix, p, &term);

    charge_growth(L, u);
    if (peer == NULL) {
        lua_pushnil(L);
        return 1;
    }
    ebb__lua_push_pod(L, peer);
    lua_pushstring(L, p->affinity->anti_required[term].topology_key);
    lua_pushinteger(L, term + 1);
    return 3;
}

/* idx:remove(pod) -> boolean                                      [-0, +1, e]
 * Forget an evicted pod: later checks no longer see it. false when the pod
 * is not indexed or was removed before. */
static int l_anti_remove(lua_State *L)
{
    struct anti_ud *u = check_anti(L, 1);
    struct ebb_pod *p = ebb__lua_check_pod(L, 2);
    lua_pushboolean(L, ebb_anti_index_remove(u->ix, p) == 0);
    return 1;
}

/* idx:candidates(node) -> PodList                                 [-0, +1, e]
 * The indexed pods on `node` (a Node or a name) that have required
 * anti-affinity terms, not removed, in listing order (sort them with
 * :sort("priority")). */
static int l_anti_candidates(lua_State *L)
{
    struct anti_ud *u = check_anti(L, 1);
    ebb_str node;
    void **guard;
    long n;

    if (lua_type(L, 2) == LUA_TSTRING) {
        size_t len;
        const char *s = ebb__lr_str(L, 2, SIZE_MAX, 0, &len, "idx:candidates: node");
        node = len > EBB_LR_NAME_MAX ? NULL : ebb_str_find(s, len);
    } else {
        node = ebb__lua_check_node(L, 2)->name;
    }
    /* the array is malloc'd: a guard frees it even if building the list raises */
    guard = ebb__free_guard(L);
    if ((n = ebb_anti_index_candidates(u->ix, node, (struct ebb_pod ***)guard)) < 0)
        return luaL_error(L, "idx:candidates: %s", ebb_strerror((int)n));
    ebb__lua_push_podlist(L, *guard, (size_t)n);
    return 1;
}

static const luaL_Reg anti_methods[] = {
    { "violation", l_anti_violation },
    { "remove", l_anti_remove },
    { "candidates", l_anti_candidates },
    { NULL, NULL },
};

/* ---- node affinity ------------------------------------------------------- */

/* ebb.best_preferred_weight(pod [, nodes]) -> integer              [-0, +1, e]
 * The largest pod:preferred_weight(node) over nodes (default: the cycle's),
 * at least 0: nodeutil.GetBestNodeWeightGivenPodPreferredAffinity, which
 * does not ask whether the pod fits those nodes. */
static int l_best_preferred_weight(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    size_t n;
    struct ebb_node *const *nodes = ebb__lua_check_nodes(L, 2, &n);
    lua_pushinteger(L, ebb_pod_best_preferred_weight(p, nodes, n));
    return 1;
}

/* ebb.better_preferred_node(pod, than [, nodes]) -> Node, weight | nil
 *                                                                [-0, +1|2, e]
 * The first of nodes (default: the cycle's, by name) to which the pod gives
 * a preferred node affinity weight above `than` (a number): there is one
 * exactly when the best weight is above it, and the search stops there. */
static int l_better_preferred_node(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    lua_Integer than = ebb__lr_int(L, 2, LUA_MININTEGER, LUA_MAXINTEGER, "ebb.better_preferred_node: than");
    size_t n;
    struct ebb_node *const *nodes = ebb__lua_check_nodes(L, 3, &n);
    int64_t w = 0;
    const struct ebb_node *better = ebb_pod_better_preferred_node(p, than, nodes, n, &w);

    if (better == NULL) {
        lua_pushnil(L);
        return 1;
    }
    ebb__lua_push_node(L, better);
    lua_pushinteger(L, w);
    return 2;
}

static const luaL_Reg funcs[] = {
    { "duplicates", l_duplicates },
    { "anti_affinity_index", l_anti_index },
    { "best_preferred_weight", l_best_preferred_weight },
    { "better_preferred_node", l_better_preferred_node },
    { NULL, NULL },
};

void ebb__lua_open_groups(lua_State *L)
{
    luaL_newmetatable(L, DUPS_GUARD_MT);
    lua_pushcfunction(L, l_dups_guard_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_dups_guard_close);
    lua_setfield(L, -2, "__close");
    lua_pop(L, 1);

    luaL_newmetatable(L, ANTI_MT);
    luaL_newlib(L, anti_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_anti_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_anti_gc);
    lua_setfield(L, -2, "__close");
    lua_pushliteral(L, "AntiAffinityIndex");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);

    luaL_setfuncs(L, funcs, 0);
}
