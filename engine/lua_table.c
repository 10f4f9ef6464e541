/* The sandbox's table functions that loop over a range the script chooses:
 * concat, insert, remove, move and sort.
 *
 * Lua's own versions loop in C as far as the arguments (or a __len
 * metamethod) say: table.move({}, 1, math.maxinteger // 2, 1, {}) runs for
 * ever without allocating, and so does table.concat on a table whose
 * __index is a C function. These versions keep Lua's semantics (they read
 * and write through metamethods, as the reference manual says) and look at
 * the budget every few hundred elements; sort is a merge sort over a copy
 * of the elements, so it never runs past O(n log n) comparisons whatever
 * the order function answers.
 *
 * vm.c puts them in the table library of every sandbox
 * (ebb__lua_open_table); the loop thread calls them, inside a budgeted
 * call only.
 */
#include <limits.h>

#include <lauxlib.h>

#include "lua_int.h"

#define TICK_MASK 255u

static void tick(lua_State *L, lua_Unsigned i)
{
    if ((i & TICK_MASK) == 0)
        ebb__vm_check(L);
}

/* A table, or a value whose metatable provides what the function needs
 * (r: __index, w: __newindex, l: __len), as Lua's table library accepts. */
static void check_table(lua_State *L, int arg, bool r, bool w, bool l)
{
    bool ok = true;

    if (lua_type(L, arg) == LUA_TTABLE)
        return;
    if (!lua_getmetatable(L, arg))
        luaL_checktype(L, arg, LUA_TTABLE);     /* raises */
    if (r) {
        lua_pushliteral(L, "__index");
        ok = ok && lua_rawget(L, -2) != LUA_TNIL;
        lua_pop(L, 1);
    }
    if (w) {
        lua_pushliteral(L, "__newindex");
        ok = ok && lua_rawget(L, -2) != LUA_TNIL;
        lua_pop(L, 1);
    }
    if (l) {
        lua_pushliteral(L, "__len");
        ok = ok && lua_rawget(L, -2) != LUA_TNIL;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (!ok)
        luaL_checktype(L, arg, LUA_TTABLE);
}

static lua_Integer length(lua_State *L, int arg, bool r, bool w)
{
    check_table(L, arg, r, w, true);
    return luaL_len(L, arg);
}

/* table.concat(list [, sep [, i [, j]]])                        [-0, +1, e] */
static int l_table_concat(lua_State *L)
{
    size_t lsep;
    lua_Integer last = length(L, 1, true, false);
    const char *sep = luaL_optlstring(L, 2, "", &lsep);
    lua_Integer i = luaL_optinteger(L, 3, 1);
    luaL_Buffer b;

    last = luaL_optinteger(L, 4, last);
    luaL_buffinit(L, &b);
    for (lua_Unsigned k = 0; i <= last; i++, k++) {
        tick(L, k);
        lua_geti(L, 1, i);
        if (!lua_isstring(L, -1))
            return luaL_error(L, "invalid value (%s) at index %I in table for 'concat'",
                              luaL_typename(L, -1), (LUAI_UACINT)i);
        luaL_addvalue(&b);
        if (i == last)
            break;                      /* not i++ past LUA_MAXINTEGER */
        luaL_addlstring(&b, sep, lsep);
    }
    luaL_pushresult(&b);
    return 1;
}

/* table.insert(list, [pos,] value)                              [-0, +0, e] */
static int l_table_insert(lua_State *L)
{
    lua_Integer end = length(L, 1, true, true), pos;

    end = (lua_Integer)((lua_Unsigned)end + 1u);   /* the first free slot */
    switch (lua_gettop(L)) {
    case 2:
        pos = end;
        break;
    case 3:
        pos = luaL_checkinteger(L, 2);
        luaL_argcheck(L, (lua_Unsigned)pos - 1u < (lua_Unsigned)end, 2, "position out of bounds");
        for (lua_Integer i = end; i > pos; i--) {
            tick(L, (lua_Unsigned)(end - i));
            lua_geti(L, 1, i - 1);
            lua_seti(L, 1, i);
        }
        break;
    default:
        return luaL_error(L, "wrong number of arguments to 'insert'");
    }
    lua_seti(L, 1, pos);
    return 0;
}

/* table.remove(list [, pos]) -> the removed value               [-0, +1, e] */
static int l_table_remove(lua_State *L)
{
    lua_Integer size = length(L, 1, true, true);
    lua_Integer pos = luaL_optinteger(L, 2, size);

    if (pos != size)   /* Lua 5.4.4 names argument 1 here: scripts see the same message */
        luaL_argcheck(L, (lua_Unsigned)pos - 1u <= (lua_Unsigned)size, 1, "position out of bounds");
    lua_geti(L, 1, pos);
    for (lua_Unsigned k = 0; pos < size; pos++, k++) {
        tick(L, k);
        lua_geti(L, 1, pos + 1);
        lua_seti(L, 1, pos);
    }
    lua_pushnil(L);
    lua_seti(L, 1, pos);
    return 1;
}

/* table.move(a1, f, e, t [, a2]) -> a2                          [-0, +1, e] */
static int l_table_move(lua_State *L)
{
    lua_Integer f = luaL_checkinteger(L, 2);
    lua_Integer e = luaL_checkinteger(L, 3);
    lua_Integer t = luaL_checkinteger(L, 4);
    int dst = lua_isnoneornil(L, 5) ? 1 : 5;

    check_table(L, 1, true, false, false);
    check_table(L, dst, false, true, false);
    if (e >= f) {
        lua_Integer n;
        luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3, "too many elements to move");
        n = e - f + 1;
        luaL_argcheck(L, t <= LUA_MAXINTEGER - n + 1, 4, "destination wrap around");
        if (t > e || t <= f || (dst != 1 && !lua_compare(L, 1, dst, LUA_OPEQ))) {
            for (lua_Integer i = 0; i < n; i++) {
                tick(L, (lua_Unsigned)i);
                lua_geti(L, 1, f + i);
                lua_seti(L, dst, t + i);
            }
        } else {                        /* overlapping, moving up: from the end */
            for (lua_Integer i = n - 1; i >= 0; i--) {
                tick(L, (lua_Unsigned)(n - 1 - i));
                lua_geti(L, 1, f + i);
                lua_seti(L, dst, t + i);
            }
        }
    }
    lua_pushvalue(L, dst);
    return 1;
}

/* ---- sort ----------------------------------------------------------------- */

struct sorter {
    lua_State *L;
    int cmp;                        /* stack index of the order function, or 0 */
    lua_Unsigned steps;
};

/* a < b for the values at stack indices ia and ib */
static bool less(struct sorter *s, int ia, int ib)
{
    lua_State *L = s->L;
    bool r;

    ia = lua_absindex(L, ia);
    ib = lua_absindex(L, ib);
    tick(L, ++s->steps);
    if (s->cmp == 0)
        return lua_compare(L, ia, ib, LUA_OPLT);
    lua_pushvalue(L, s->cmp);
    lua_pushvalue(L, ia);
    lua_pushvalue(L, ib);
    lua_call(L, 2, 1);
    r = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return r;
}

/* Merge the runs [lo, mid) and [mid, hi) of the table at `from` into `to`
 * (both plain tables on the stack, read and written raw). */
static void merge(struct sorter *s, int from, int to, lua_Integer lo, lua_Integer mid, lua_Integer hi)
{
    lua_State *L = s->L;
    lua_Integer i = lo, j = mid, k = lo;

    while (i < mid && j < hi) {
        lua_rawgeti(L, from, j);
        lua_rawgeti(L, from, i);
        /* take from the right run only when strictly less: stable */
        if (less(s, -2, -1)) {
            lua_pop(L, 1);
            j++;
        } else {
            lua_remove(L, -2);
            i++;
        }
        lua_rawseti(L, to, k++);
    }
    for (; i < mid; i++, k++) {
        lua_rawgeti(L, from, i);
        lua_rawseti(L, to, k);
    }
    for (; j < hi; j++, k++) {
        lua_rawgeti(L, from, j);
        lua_rawseti(L, to, k);
    }
}

/* table.sort(list [, comp])                                      [-0, +0, e]
 * The elements are read once (through __index), sorted bottom-up by merging
 * in two plain tables, and written back once (through __newindex). */
static int l_table_sort(lua_State *L)
{
    lua_Integer n = length(L, 1, true, true);
    struct sorter s = { L, 0, 0 };
    int a, b;

    if (n <= 1)
        return 0;
    luaL_argcheck(L, n < INT_MAX, 1, "array too big");
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TFUNCTION);
        s.cmp = 2;
    }
    lua_settop(L, 2);
    lua_createtable(L, (int)n, 0);
    a = lua_gettop(L);
    for (lua_Integer i = 1; i <= n; i++) {
        tick(L, (lua_Unsigned)i);
        lua_geti(L, 1, i);
        lua_rawseti(L, a, i);
    }
    lua_createtable(L, (int)n, 0);
    b = lua_gettop(L);
    for (lua_Integer width = 1; width < n; width *= 2) {
        for (lua_Integer lo = 1; lo <= n; lo += 2 * width) {
            lua_Integer mid = lo + width > n + 1 ? n + 1 : lo + width;
            lua_Integer hi = lo + 2 * width > n + 1 ? n + 1 : lo + 2 * width;
            merge(&s, a, b, lo, mid, hi);
        }
        lua_rotate(L, a, 1);            /* the merged runs become the source */
    }
    for (lua_Integer i = 1; i <= n; i++) {
        tick(L, (lua_Unsigned)i);
        lua_rawgeti(L, a, i);
        lua_seti(L, 1, i);
    }
    return 0;
}

void ebb__lua_open_table(lua_State *L)
{
    static const luaL_Reg fns[] = {
        { "concat", l_table_concat },
        { "insert", l_table_insert },
        { "remove", l_table_remove },
        { "move", l_table_move },
        { "sort", l_table_sort },
        { NULL, NULL },
    };
    luaL_setfuncs(L, fns, 0);
}
