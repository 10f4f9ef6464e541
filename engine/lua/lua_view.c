/* Views of the cluster cache in Lua: what the bindings that hand a script
 * cached objects share (lua_pod.c, lua_node.c, and the cache lookups of
 * lua_groups.c, lua_loadaware.c, lua_topology.c).
 *
 * A view is a small userdata (slot, serial) that its kind's binding
 * resolves against the cache on every access, so a view kept past its
 * object's deletion or replacement raises instead of reading freed
 * memory. Views are interned here, the one place that makes them: per
 * state and per kind, a weak-valued registry table maps a slot to the view
 * made last for it, so the same object is the same value (rawequal, a
 * table key) for as long as a script holds it. Each kind has a table of
 * its own because pod and node slots overlap. A slot whose object changed
 * (another serial) gets a new view; the old one stays stale.
 */
#include <lauxlib.h>

#include "lua/lua_int.h"

struct ebb_cache *ebb__lua_cache(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);

    if (vm == NULL || vm->engine == NULL || vm->engine->cache == NULL)
        luaL_error(L, "no cluster view is loaded");
    return vm->engine->cache;
}

/* The kind's intern table on top of the stack, made on first use.
 *                                                               [-0, +1, m] */
static void push_views(lua_State *L, const struct ebb__view_kind *k)
{
    if (ebb__lr_field(L, LUA_REGISTRYINDEX, k->views) == LUA_TTABLE)
        return;
    lua_pop(L, 1);
    lua_createtable(L, 0, 0);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, k->views);
}

void ebb__lua_push_view(lua_State *L, const struct ebb__view_kind *k, uint32_t slot,
                        uint32_t serial)
{
    struct ebb__view *v;

    push_views(L, k);
    if (lua_rawgeti(L, -1, (lua_Integer)slot) == LUA_TUSERDATA) {
        v = lua_touserdata(L, -1);
        if (v->serial == serial) {
            lua_remove(L, -2);
            return;
        }
    }
    lua_pop(L, 1);
    v = lua_newuserdatauv(L, sizeof(*v), 0);
    v->slot = slot;
    v->serial = serial;
    luaL_setmetatable(L, k->mt);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, (lua_Integer)slot);
    lua_remove(L, -2);
}

/* Whether the values at 1 and 2 have the same metatable.        [-0, +0, -] */
static bool same_kind(lua_State *L)
{
    bool same;

    if (!lua_getmetatable(L, 1))
        return false;
    if (!lua_getmetatable(L, 2)) {
        lua_pop(L, 1);
        return false;
    }
    same = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return same;
}

/* a == b                                                        [-0, +1, -]
 * Lua calls this for two userdata when one has it as __eq: only views
 * carry it, so two values of one metatable are views of one kind. Interned
 * views of one object are one value and never get here; two views of the
 * same slot and serial are the same object all the same. */
int ebb__lua_view_eq(lua_State *L)
{
    const struct ebb__view *a = lua_touserdata(L, 1), *b = lua_touserdata(L, 2);

    lua_pushboolean(L, a != NULL && b != NULL && same_kind(L) && a->slot == b->slot &&
                       a->serial == b->serial);
    return 1;
}

/* ---- tables built on demand ------------------------------------------------ */

void ebb__lua_push_labels(lua_State *L, const struct ebb_labels *l)
{
    lua_createtable(L, 0, (int)l->n);
    for (uint32_t i = 0; i < l->n; i++) {
        lua_pushstring(L, l->kv[i].value ? l->kv[i].value : "");
        lua_setfield(L, -2, l->kv[i].key);
    }
}

void ebb__lua_push_res(lua_State *L, const struct ebb_res *r)
{
    lua_createtable(L, 0, r->n);
    for (uint16_t i = 0; i < r->n; i++) {
        lua_pushinteger(L, r->q[i].v);
        lua_setfield(L, -2, ebb_resource_name(r->q[i].id));
    }
}
