/* Values into Lua: policy value trees (plugin args) and cJSON trees
 * (pod.object). Integers stay integers; JSON/YAML null in a mapping leaves
 * the key out (Go decoding treats null as absent); null in a sequence is
 * ebb.null (a light userdata) so positions are kept. Tables from a policy
 * carry a metatable named "ebb.seq" or "ebb.map" so an empty list and an
 * empty map can be told apart by ebb.args (getmetatable() gives the name). */
#include <math.h>

#include <lauxlib.h>
#include <cjson/cJSON.h>

#include "lua/lua_int.h"

static void push_null(lua_State *L)
{
    lua_pushlightuserdata(L, NULL);
}

/* A metatable scripts cannot reach: getmetatable() answers with its name,
 * and a __gc a script added to it would run outside any budget. */
static void new_metatable(lua_State *L, const char *name)
{
    if (luaL_newmetatable(L, name)) {
        lua_pushstring(L, name);
        lua_setfield(L, -2, "__metatable");
    }
}

void ebb__lua_push_val(lua_State *L, const struct ebb_val *v)
{
    luaL_checkstack(L, 4, "value nested too deeply");
    if (v == NULL) {
        lua_pushnil(L);
        return;
    }
    switch (v->type) {
    case EBB_VAL_NULL: lua_pushnil(L); break;
    case EBB_VAL_BOOL: lua_pushboolean(L, v->u.b); break;
    case EBB_VAL_INT: lua_pushinteger(L, v->u.i); break;
    case EBB_VAL_FLOAT: lua_pushnumber(L, v->u.f); break;
    case EBB_VAL_STRING: lua_pushlstring(L, v->u.str.s, v->u.str.len); break;
    case EBB_VAL_SEQ:
        lua_createtable(L, (int)v->u.seq.n, 0);
        new_metatable(L, "ebb.seq");        /* tells [] from {} to ebb.args */
        lua_setmetatable(L, -2);
        for (size_t i = 0; i < v->u.seq.n; i++) {
            if (v->u.seq.items[i] == NULL || v->u.seq.items[i]->type == EBB_VAL_NULL)
                push_null(L);
            else
                ebb__lua_push_val(L, v->u.seq.items[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        break;
    case EBB_VAL_MAP:
        lua_createtable(L, 0, (int)v->u.map.n);
        new_metatable(L, "ebb.map");
        lua_setmetatable(L, -2);
        for (size_t i = 0; i < v->u.map.n; i++) {
            if (v->u.map.vals[i] == NULL || v->u.map.vals[i]->type == EBB_VAL_NULL)
                continue;
            ebb__lua_push_val(L, v->u.map.vals[i]);
            lua_setfield(L, -2, v->u.map.keys[i]);
        }
        break;
    default: lua_pushnil(L); break;
    }
}

void ebb__lua_push_json(lua_State *L, const cJSON *j)
{
    luaL_checkstack(L, 4, "object nested too deeply");
    if (j == NULL || cJSON_IsNull(j)) {
        lua_pushnil(L);
    } else if (cJSON_IsBool(j)) {
        lua_pushboolean(L, cJSON_IsTrue(j));
    } else if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (d == floor(d) && fabs(d) < 9007199254740992.0)
            lua_pushinteger(L, (lua_Integer)d);
        else
            lua_pushnumber(L, d);
    } else if (cJSON_IsString(j)) {
        lua_pushstring(L, j->valuestring);
    } else if (cJSON_IsArray(j)) {
        lua_Integer i = 1;
        lua_createtable(L, cJSON_GetArraySize(j), 0);
        for (const cJSON *c = j->child; c; c = c->next, i++) {
            if (cJSON_IsNull(c))
                push_null(L);
            else
                ebb__lua_push_json(L, c);
            lua_rawseti(L, -2, i);
        }
    } else if (cJSON_IsObject(j)) {
        lua_createtable(L, 0, cJSON_GetArraySize(j));
        for (const cJSON *c = j->child; c; c = c->next) {
            if (cJSON_IsNull(c) || c->string == NULL)
                continue;
            ebb__lua_push_json(L, c);
            lua_setfield(L, -2, c->string);
        }
    } else {
        lua_pushnil(L);
    }
}
