/* Lua bindings of the usage helpers (filled in by the strategies that need
 * them); registered into require("ebb.native") by luaopen_ebb_native. */
#include <lauxlib.h>

#include "engine.h"

static const luaL_Reg funcs[] = {
    { NULL, NULL },
};

void ebb__lua_open_usage(lua_State *L)
{
    luaL_setfuncs(L, funcs, 0);
}
