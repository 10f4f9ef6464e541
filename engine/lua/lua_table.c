/* The sandbox's table functions that loop over a range the script chooses:
 * concat, insert, remove, move, sort and unpack.
 *
 * Lua's own versions loop in C as far as the arguments (or a __len
 * metamethod) say: table.move({}, 1, math.maxinteger // 2, 1, {}) runs for
 * ever without allocating, table.concat on a table whose __index is a C
 * function too, and table.unpack(t, 1, 900000) over a table whose integer
 * keys all collide walks a chain of 8,192 nodes per element (8 s). These
 * versions keep Lua's semantics (they read and write through metamethods,
 * as the reference manual says) and look at the budget at every element;
 * sort is a merge sort over a copy of the elements, so it never runs past
 * O(n log n) comparisons whatever the order function answers.
 *
 * vm.c puts them in the table library of every sandbox
 * (ebb__lua_open_table); the loop thread calls them, inside a budgeted
 * call only.
 *
 * ---- Audit: every function of the libraries the sandbox opens ----------
 *
 * The budget hook fires only between Lua instructions. Each function that
 * can loop in C is either BUDGETED (it looks at the expired flag as it
 * goes: ebb__vm_check) or BOUNDED: one call costs at most a constant times
 * the bytes the script already holds under its memory cap (measured at 60
 * MB, stock Lua 5.4.4: about 0.1 s; 64 MiB is the default cap), or the
 * values it takes (at most Lua's 1,000,000 stack slots).
 * A call that is bounded is one step: the hook stops the script after it.
 *
 *   base
 *   assert, error, pcall, type, rawequal,   bounded: O(1), or a memcmp of
 *     rawget, rawset, rawlen, next,         two strings, or a lookup that
 *     getmetatable, setmetatable (vm.c),    walks one collision chain, or a
 *     tostring, tonumber, select, ipairs,   border search (#, rawlen): at
 *     pairs                                 most the table's size; tonumber
 *                                           reads the string once (60 MB:
 *                                           0.07 s); select moves its args
 *   print (vm.c)                            bounded: stops at 4 KiB written
 *   warn (vm.c)                             bounded: the pieces checked once
 *                                           (stack size), one log line cut at
 *                                           4 KiB (Lua's logged a line per
 *                                           piece: 200,000 a call)
 *   xpcall (vm.c)                           budgeted: no handler once expired
 *   load (vm.c)                             budgeted: the parser gets 512
 *                                           bytes at a time and stops at the
 *                                           budget; 64 KiB of source at most
 *                                           (vm.c, parsing)
 *   require (vm.c)                          budgeted as load; files only
 *   dofile, loadfile, collectgarbage        removed
 *
 *   string
 *   find, match, gmatch, gsub               budgeted (lua_string.c), by the
 *                                           work done: steps, bytes of a set,
 *                                           bytes a back reference compares
 *   rep, format                             budgeted (lua_string.c)
 *   byte, char, len, sub, upper, lower,     bounded: one pass over the string
 *     reverse                               or the args (60 MB: 0.1 s)
 *   pack                                    bounded: what it writes grows a
 *                                           buffer under the cap ("c%d" pads
 *                                           byte by byte: at the cap, stops)
 *   packsize, unpack                        bounded: one pass over the format
 *                                           and the data ('z': the data once)
 *   dump                                    bounded: the function's size
 *                                           (and load refuses binary chunks)
 *
 *   table
 *   concat, insert, remove, move, sort,     budgeted here, every element
 *     unpack
 *   pack                                    bounded: its args
 *
 *   math: every function                    bounded: O(1), max/min one pass
 *                                           over their args, random's
 *                                           rejection loop expects < 2 draws
 *   utf8: char, charpattern, codepoint,     bounded: one pass over the args or
 *     codes, len, offset                    the string (utf8.len of 60 MB:
 *                                           0.12 s); codes one char a call
 *   coroutine: create, isyieldable,         bounded: O(1), or moving the args
 *     running, status, yield                and results
 *   resume, wrap, close (vm.c)              budgeted: the watchdog follows
 *                                           the running coroutine
 *
 * What no function here can bound: Lua's own tables. A table's hash part
 * is rebuilt in one VM step when it grows, re-inserting every key through
 * its collision chain; integer keys chosen to collide (multiples of 2^k -
 * 1) make that step quadratic: 65,537 keys (3 MB) take 5 s in one
 * assignment, 2^18 keys about 80 s. No hook fires and no allocation
 * happens meanwhile. The parser's own table is held to 32,768 keys
 * (vm.c, PARSE_BLOCK_MAX); a script's tables are not: past the budget
 * by more than the budget again, ebb run marks the plugin stuck
 * (run.c), the bound for this case.
 */
#include <limits.h>

#include <lauxlib.h>

#include "lua/lua_int.h"

/* A look at the budget costs an atomic load; one element can cost as much
 * as the whole table (a lookup walks its key's collision chain, and a
 * script chooses integer keys that all collide: 2^16 of them made
 * table.unpack run 10 s under a 500 ms budget, looking every 256). So
 * every element looks. */
static void tick(lua_State *L, lua_Unsigned i)
{
    (void)i;
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

/* table.unpack(list [, i [, j]]) -> list[i], ..., list[j]      [-0, +(j-i+1), e]
 * As Lua's (at most INT_MAX values, as many as the stack takes). */
static int l_table_unpack(lua_State *L)
{
    lua_Integer i = luaL_optinteger(L, 2, 1);
    lua_Integer e = lua_isnoneornil(L, 3) ? luaL_len(L, 1) : luaL_checkinteger(L, 3);
    lua_Unsigned n;

    if (i > e)
        return 0;
    n = (lua_Unsigned)e - (lua_Unsigned)i;   /* one less than the count: no overflow */
    if (n >= (lua_Unsigned)INT_MAX || !lua_checkstack(L, (int)++n))
        return luaL_error(L, "too many results to unpack");
    for (lua_Unsigned k = 0; i < e; i++, k++) {   /* not i++ past e = LUA_MAXINTEGER */
        tick(L, k);
        lua_geti(L, 1, i);
    }
    lua_geti(L, 1, e);
    return (int)n;
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
        { "unpack", l_table_unpack },
        { NULL, NULL },
    };
    luaL_setfuncs(L, fns, 0);
}
