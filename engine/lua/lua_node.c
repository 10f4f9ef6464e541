/* Nodes in Lua: "ebb.Node" views and "ebb.NodeList" (what deschedule and
 * balance receive). Same rules as pods (lua_pod.c): a view is (slot,
 * serial) resolved on access, interned per state (lua_view.c), read-only. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <cjson/cJSON.h>

#include "ebb/taints.h"
#include "lua/lua_int.h"

#define NODE_MT "ebb.Node"
#define NODELIST_MT "ebb.NodeList"

static const struct ebb__view_kind NODE_VIEWS = { NODE_MT, "ebb.nodeviews" };

struct nodelist {
    uint32_t n;
    uint64_t epoch;
    struct ebb_node *v[];
};

void ebb__lua_push_node(lua_State *L, const struct ebb_node *n)
{
    if (n == NULL)
        lua_pushnil(L);
    else
        ebb__lua_push_view(L, &NODE_VIEWS, n->slot, n->serial);
}

struct ebb_node *ebb__lua_check_node(lua_State *L, int idx)
{
    struct ebb__view *v = luaL_checkudata(L, idx, NODE_MT);
    struct ebb_node *n = ebb_cache_node_at(ebb__lua_cache(L), v->slot);

    if (n == NULL || n->serial != v->serial)
        luaL_error(L, "this node no longer exists in the cluster view");
    return n;
}

/* node:label(key) -> string | nil                               [-0, +1, -] */
static int l_node_label(lua_State *L)
{
    struct ebb_node *n = ebb__lua_check_node(L, 1);
    size_t len;
    const char *k = ebb__lr_str(L, 2, SIZE_MAX, 0, &len, "node:label: key");
    ebb_str v = ebb_labels_get(&n->labels, ebb_str_find(k, len));
    if (v != NULL)
        lua_pushlstring(L, v, ebb_str_len(v));
    else
        lua_pushnil(L);
    return 1;
}

/* node:annotation(key) -> string | nil                          [-0, +1, -] */
static int l_node_annotation(lua_State *L)
{
    struct ebb_node *n = ebb__lua_check_node(L, 1);
    size_t len;
    const char *k = ebb__lr_str(L, 2, SIZE_MAX, 0, &len, "node:annotation: key");
    ebb_str v = ebb_labels_get(&n->annotations, ebb_str_find(k, len));
    if (v != NULL)   /* whole: an annotation value may hold a NUL */
        lua_pushlstring(L, v, ebb_str_len(v));
    else
        lua_pushnil(L);
    return 1;
}

/* node:allocatable_of(resource) -> integer                      [-0, +1, -] */
static int l_node_allocatable_of(lua_State *L)
{
    struct ebb_node *n = ebb__lua_check_node(L, 1);
    int id = ebb_resource_find(ebb__lr_str(L, 2, EBB_LR_NAME_MAX, EBB_LR_TEXT, NULL,
                                           "node:allocatable_of: resource"));
    lua_pushinteger(L, id < 0 ? 0 : ebb_res_get(&n->allocatable, id));
    return 1;
}

static const luaL_Reg node_methods[] = {
    { "label", l_node_label },
    { "annotation", l_node_annotation },
    { "allocatable_of", l_node_allocatable_of },
    { NULL, NULL },
};

/* node.field / node:method                                      [-0, +1, e] */
static int l_node_index(lua_State *L)
{
    struct ebb_node *n = ebb__lua_check_node(L, 1);
    const char *k = ebb__lr_str(L, 2, 64, EBB_LR_TEXT, NULL, "node: field");

    if (ebb__lr_field(L, lua_upvalueindex(1), k) != LUA_TNIL)
        return 1;
    lua_pop(L, 1);
    if (strcmp(k, "name") == 0) {
        lua_pushstring(L, n->name);
    } else if (strcmp(k, "uid") == 0) {
        lua_pushstring(L, n->uid);
    } else if (strcmp(k, "labels") == 0) {
        ebb__lua_push_labels(L, &n->labels);
    } else if (strcmp(k, "annotations") == 0) {
        ebb__lua_push_labels(L, &n->annotations);
    } else if (strcmp(k, "unschedulable") == 0) {
        lua_pushboolean(L, n->unschedulable);
    } else if (strcmp(k, "ready") == 0) {
        lua_pushboolean(L, n->ready);
    } else if (strcmp(k, "created") == 0) {
        lua_pushinteger(L, n->created);
    } else if (strcmp(k, "allocatable") == 0) {
        ebb__lua_push_res(L, &n->allocatable);
    } else if (strcmp(k, "capacity") == 0) {
        ebb__lua_push_res(L, &n->capacity);
    } else if (strcmp(k, "taints") == 0) {
        lua_createtable(L, n->ntaints, 0);
        for (uint16_t i = 0; i < n->ntaints; i++) {
            lua_createtable(L, 0, 3);
            lua_pushstring(L, n->taints[i].key);
            lua_setfield(L, -2, "key");
            if (n->taints[i].value) {
                lua_pushstring(L, n->taints[i].value);
                lua_setfield(L, -2, "value");
            }
            lua_pushstring(L, ebb_effect_name(n->taints[i].effect));
            lua_setfield(L, -2, "effect");
            lua_rawseti(L, -2, i + 1);
        }
    } else if (strcmp(k, "object") == 0) {
        ebb__lua_push_object(L, &n->src);
    } else {
        return luaL_error(L, "node has no field '%s'", k);
    }
    return 1;
}

static int l_node_newindex(lua_State *L)
{
    return luaL_error(L, "nodes are read-only views of the cluster");
}

static int l_node_tostring(lua_State *L)
{
    struct ebb__view *v = luaL_checkudata(L, 1, NODE_MT);
    struct ebb_vm *vm = ebb__vm_of(L);
    struct ebb_node *n = vm && vm->engine && vm->engine->cache
                             ? ebb_cache_node_at(vm->engine->cache, v->slot) : NULL;
    if (n && n->serial == v->serial)
        lua_pushfstring(L, "Node(%s)", n->name);
    else
        lua_pushliteral(L, "Node(gone)");
    return 1;
}

/* ---- TaintSet ----------------------------------------------------------- */

#define TAINTSET_MT "ebb.TaintSet"

struct taintset {
    uint16_t n;
    struct ebb_taint t[];
};

static int l_taintset_gc(lua_State *L)
{
    struct taintset *ts = luaL_checkudata(L, 1, TAINTSET_MT);
    for (uint16_t i = 0; i < ts->n; i++) {
        ebb_str_release(ts->t[i].key);
        ebb_str_release(ts->t[i].value);
    }
    ts->n = 0;
    return 0;
}

static int l_taintset_len(lua_State *L)
{
    lua_pushinteger(L, ((struct taintset *)luaL_checkudata(L, 1, TAINTSET_MT))->n);
    return 1;
}

const struct ebb_taint *ebb__lua_check_taintset(lua_State *L, int idx, size_t *n)
{
    struct taintset *ts = luaL_checkudata(L, idx, TAINTSET_MT);
    *n = ts->n;
    return ts->t;
}

static void push_taint(lua_State *L, const struct ebb_taint *t)
{
    lua_createtable(L, 0, 3);
    lua_pushstring(L, t->key);
    lua_setfield(L, -2, "key");
    lua_pushstring(L, t->value ? t->value : "");
    lua_setfield(L, -2, "value");
    lua_pushstring(L, ebb_effect_name(t->effect));
    lua_setfield(L, -2, "effect");
}

/* ebb.taint_set(node, keep) -> TaintSet | nil                    [-0, +1, e]
 * The node's taints for which keep({key=, value=, effect=}) is true, kept
 * for pod:tolerates_all(set); nil when none is kept, so a strategy can skip
 * the node without listing its pods. */
static int l_taint_set(lua_State *L)
{
    struct ebb_node *n = ebb__lua_check_node(L, 1);
    uint16_t k = 0, cnt = n->ntaints;
    bool *keep;
    struct taintset *ts;

    luaL_checktype(L, 2, LUA_TFUNCTION);
    keep = ebb__lr_alloc(L, cnt, sizeof(*keep), "ebb.taint_set");   /* every taint: none is cut */
    for (uint16_t i = 0; i < cnt; i++) {
        lua_pushvalue(L, 2);
        push_taint(L, &n->taints[i]);
        lua_call(L, 1, 1);
        keep[i] = lua_toboolean(L, -1);
        k += keep[i];
        lua_pop(L, 1);
    }
    if (k == 0) {
        lua_pushnil(L);
        return 1;
    }
    ts = lua_newuserdatauv(L, sizeof(*ts) + k * sizeof(ts->t[0]), 0);
    ts->n = 0;
    luaL_setmetatable(L, TAINTSET_MT);
    for (uint16_t i = 0; i < cnt; i++) {
        if (!keep[i])
            continue;
        ts->t[ts->n].key = ebb_str_ref(n->taints[i].key);
        ts->t[ts->n].value = ebb_str_ref(n->taints[i].value);
        ts->t[ts->n].effect = n->taints[i].effect;
        ts->n++;
    }
    return 1;
}

/* ---- NodeList ----------------------------------------------------------- */

void ebb__lua_push_nodelist(lua_State *L, struct ebb_node *const *nodes, size_t n)
{
    struct nodelist *nl = lua_newuserdatauv(L, sizeof(*nl) + n * sizeof(nl->v[0]), 0);

    nl->n = (uint32_t)n;
    nl->epoch = ebb_cache_epoch(ebb__lua_cache(L));
    if (n > 0)
        memcpy(nl->v, nodes, n * sizeof(nl->v[0]));
    luaL_setmetatable(L, NODELIST_MT);
}

/* The nodes of a NodeList at idx (NULL with *n = 0 when idx is not one). */
struct ebb_node *const *ebb__lua_nodelist(lua_State *L, int idx, size_t *n)
{
    struct nodelist *nl = luaL_testudata(L, idx, NODELIST_MT);

    if (nl == NULL) {
        *n = 0;
        return NULL;
    }
    if (nl->epoch != ebb_cache_epoch(ebb__lua_cache(L)))
        luaL_error(L, "this NodeList was made before the cluster view changed");
    *n = nl->n;
    return nl->v;
}

static struct nodelist *check_nodelist(lua_State *L, int idx)
{
    struct nodelist *nl = luaL_checkudata(L, idx, NODELIST_MT);
    if (nl->epoch != ebb_cache_epoch(ebb__lua_cache(L)))
        luaL_error(L, "this NodeList was made before the cluster view changed");
    return nl;
}

static int l_nodelist_len(lua_State *L)
{
    lua_pushinteger(L, check_nodelist(L, 1)->n);
    return 1;
}

static int nodelist_next(lua_State *L)
{
    struct nodelist *nl = check_nodelist(L, 1);
    lua_Integer i = ebb__lr_int(L, 2, 0, UINT32_MAX, "NodeList iterator: control") + 1;

    if (i > (lua_Integer)nl->n)
        return 0;
    lua_pushinteger(L, i);
    ebb__lua_push_node(L, nl->v[i - 1]);
    return 2;
}

/* for i, node in nodes:iter()                                   [-0, +3, -] */
static int l_nodelist_iter(lua_State *L)
{
    check_nodelist(L, 1);
    lua_pushcfunction(L, nodelist_next);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, 0);
    return 3;
}

/* nodes:names() -> { "node-a", ... }                            [-0, +1, -] */
static int l_nodelist_names(lua_State *L)
{
    struct nodelist *nl = check_nodelist(L, 1);

    lua_createtable(L, (int)nl->n, 0);
    for (uint32_t i = 0; i < nl->n; i++) {
        lua_pushstring(L, nl->v[i]->name);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* nodes:filter(fn) -> NodeList                                  [-0, +1, e] */
static int l_nodelist_filter(lua_State *L)
{
    struct nodelist *nl = check_nodelist(L, 1);
    struct ebb_node **keep;
    size_t k = 0;

    luaL_checktype(L, 2, LUA_TFUNCTION);
    keep = lua_newuserdatauv(L, (nl->n + 1) * sizeof(*keep), 0);   /* freed by GC */
    for (uint32_t i = 0; i < nl->n; i++) {
        lua_pushvalue(L, 2);
        ebb__lua_push_node(L, nl->v[i]);
        lua_call(L, 1, 1);
        if (lua_toboolean(L, -1))
            keep[k++] = nl->v[i];
        lua_pop(L, 1);
    }
    ebb__lua_push_nodelist(L, keep, k);
    return 1;
}

static const luaL_Reg nodelist_methods[] = {
    { "iter", l_nodelist_iter },
    { "names", l_nodelist_names },
    { "filter", l_nodelist_filter },
    { NULL, NULL },
};

static int l_nodelist_index(lua_State *L)
{
    struct nodelist *nl = check_nodelist(L, 1);

    if (lua_type(L, 2) == LUA_TNUMBER) {
        lua_Integer i = ebb__lr_int(L, 2, LUA_MININTEGER, LUA_MAXINTEGER, "NodeList: index");
        if (i >= 1 && i <= (lua_Integer)nl->n)
            ebb__lua_push_node(L, nl->v[i - 1]);
        else
            lua_pushnil(L);
        return 1;
    }
    if (ebb__lr_field(L, lua_upvalueindex(1),
                      ebb__lr_str(L, 2, 64, EBB_LR_TEXT, NULL, "NodeList: method")) == LUA_TNIL)
        return ebb__lr_error(L, 2, "expected a NodeList method", "NodeList");
    return 1;
}

static int l_nodelist_tostring(lua_State *L)
{
    struct nodelist *nl = luaL_checkudata(L, 1, NODELIST_MT);
    lua_pushfstring(L, "NodeList(%d)", (int)nl->n);
    return 1;
}

int ebb__lua_taint_set(lua_State *L)
{
    return l_taint_set(L);
}

void ebb__lua_register_node(lua_State *L)
{
    luaL_newmetatable(L, TAINTSET_MT);
    lua_pushcfunction(L, l_taintset_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_taintset_len);
    lua_setfield(L, -2, "__len");
    lua_pop(L, 1);

    luaL_newmetatable(L, NODE_MT);
    luaL_newlib(L, node_methods);
    lua_pushcclosure(L, l_node_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_node_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, l_node_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, ebb__lua_view_eq);
    lua_setfield(L, -2, "__eq");
    lua_pop(L, 1);

    luaL_newmetatable(L, NODELIST_MT);
    luaL_newlib(L, nodelist_methods);
    lua_pushcclosure(L, l_nodelist_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_nodelist_len);
    lua_setfield(L, -2, "__len");
    lua_pushcfunction(L, l_nodelist_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
}
