/* require("ebb.native"): every binding in one module table, the top of
 * lua/. Each binding file adds its functions and metatables with its own
 * opener; the plugin engine (lua_plugin.c) preloads this into each state it
 * makes, so the sandbox (vm.c) knows no binding. */
#include <lauxlib.h>

#include "lua/lua_int.h"

int luaopen_ebb_native(lua_State *L)
{
    ebb__lua_register_pod(L);
    ebb__lua_register_node(L);
    lua_newtable(L);
    ebb__lua_open_ebb(L);
    ebb__lua_open_usage(L);
    ebb__lua_open_topology(L);
    ebb__lua_open_groups(L);
    ebb__lua_open_evictions(L);
    ebb__lua_open_loadaware(L);
    ebb__lua_open_evictor(L);
    ebb__lua_open_prometheus(L);
    ebb__lua_open_testhooks(L);
    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "null");
    return 1;
}
