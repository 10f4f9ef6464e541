/* The one way C reads a script's values.
 *
 * Every binding reads what a script hands it (arguments, option tables,
 * lists, maps, the tables of a plugin, bodies written as JSON) through the
 * functions of this file, and only through them: `make check-layers` fails
 * on a binding file that calls a Lua API able to run a metamethod or to
 * convert a value in place (lua_getfield, lua_gettable, lua_geti, lua_len,
 * luaL_len, lua_tolstring, luaL_checklstring, luaL_checkinteger, ...).
 *
 * The invariants, each enforced here:
 *   1. Raw. Values are read with lua_rawget, lua_rawgeti, lua_next and
 *      lua_rawlen. No __index, __len, __pairs, __eq or __tostring of a
 *      script's table runs inside a binding, so no script code runs between
 *      two reads of a binding and a table cannot answer twice differently.
 *   2. Once. Each field is fetched once and kept on the stack while C uses
 *      it. Where C counts before it allocates, the count and the items come
 *      from the same table reference, and the fill is bounded by the count
 *      (ebb__lr_next refuses an item past the count it was given).
 *   3. Bounded. Every length or count a script controls is checked against
 *      a stated maximum before anything is sized from it (ebb__lr_len,
 *      ebb__lr_count, ebb__lr_str), and sizes are computed without overflow
 *      (ebb__lr_alloc).
 *   4. Text. A string that becomes C text (an interned name, a JSON key, a
 *      request path, a message) holds no NUL: EBB_LR_TEXT refuses it. A
 *      string only compared by (pointer, length) may hold one.
 *   5. Typed. A string is a string (a number is not turned into one in
 *      place: lua_tolstring would, and break a lua_next walk over it), an
 *      integer is an integer (a float with an exact integer value counts)
 *      within a stated range, a number is finite and within its range.
 *
 * A wrong value raises an error naming the function and the field path
 * ("ebb.selector: matchExpressions[2].values[0]: expected a string, got
 * table"), with a string shown cut and escaped: what a script passes never
 * makes a message long or multi-line.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "lua/lua_int.h"

/* What a value looks like in a message: strings quoted, cut at SHOW_MAX
 * bytes, every byte that is not printable ASCII escaped. */
#define SHOW_MAX 48

void ebb__lr_show(lua_State *L, int idx, char *buf, size_t len)
{
    size_t n = 0, sl;
    const char *s;

    if (len == 0)
        return;
    switch (lua_type(L, idx)) {
    case LUA_TSTRING:
        s = lua_tolstring(L, idx, &sl);   /* a string already: not converted */
        n = (size_t)snprintf(buf, len, "\"");
        for (size_t i = 0; i < sl && i < SHOW_MAX && n + 6 < len; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
                buf[n++] = (char)c;
            else
                n += (size_t)snprintf(buf + n, len - n, "\\x%02x", c);
        }
        snprintf(buf + n, len - n, "%s\"", sl > SHOW_MAX ? "..." : "");
        break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            snprintf(buf, len, "%lld", (long long)lua_tointeger(L, idx));
        else
            snprintf(buf, len, "%.17g", lua_tonumber(L, idx));
        break;
    case LUA_TBOOLEAN:
        snprintf(buf, len, "%s", lua_toboolean(L, idx) ? "true" : "false");
        break;
    default:
        snprintf(buf, len, "%s", luaL_typename(L, idx));
    }
}

int ebb__lr_verror(lua_State *L, int idx, const char *problem, const char *fmt, va_list ap)
{
    char path[256], shown[SHOW_MAX * 4 + 8];

    vsnprintf(path, sizeof(path), fmt, ap);
    if (idx == 0) {
        lua_pushfstring(L, "%s: %s", path, problem);
    } else {
        idx = lua_absindex(L, idx);
        ebb__lr_show(L, idx, shown, sizeof(shown));
        if (lua_type(L, idx) == LUA_TSTRING || lua_type(L, idx) == LUA_TNUMBER ||
            lua_type(L, idx) == LUA_TBOOLEAN)
            lua_pushfstring(L, "%s: %s, got %s %s", path, problem, luaL_typename(L, idx), shown);
        else
            lua_pushfstring(L, "%s: %s, got %s", path, problem, shown);
    }
    return lua_error(L);
}

int ebb__lr_error(lua_State *L, int idx, const char *problem, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ebb__lr_verror(L, idx, problem, fmt, ap);
    va_end(ap);
    return 0;
}

#define FAIL(L, idx, problem)                                             \
    do {                                                                  \
        va_list ap_;                                                      \
        va_start(ap_, fmt);                                               \
        ebb__lr_verror(L, idx, problem, fmt, ap_);                        \
        va_end(ap_);                                                      \
    } while (0)

int ebb__lr_field(lua_State *L, int t, const char *k)
{
    t = lua_absindex(L, t);
    lua_pushstring(L, k);
    return lua_rawget(L, t);
}

int ebb__lr_index(lua_State *L, int t, lua_Integer i)
{
    ebb__vm_check(L);   /* a lookup can walk a collision chain as long as the table */
    return lua_rawgeti(L, t, i);
}

void ebb__lr_table(lua_State *L, int idx, const char *fmt, ...)
{
    if (lua_type(L, idx) != LUA_TTABLE)
        FAIL(L, idx, "expected a table");
}

bool ebb__lr_opttable(lua_State *L, int idx, const char *fmt, ...)
{
    int t = lua_type(L, idx);

    if (t == LUA_TNONE || t == LUA_TNIL)
        return false;
    if (t != LUA_TTABLE)
        FAIL(L, idx, "expected a table");
    return true;
}

size_t ebb__lr_len(lua_State *L, int t, size_t max, const char *fmt, ...)
{
    lua_Unsigned n;
    char problem[96];

    if (lua_type(L, t) != LUA_TTABLE)
        FAIL(L, t, "expected a list");
    n = lua_rawlen(L, t);
    if (n > max) {
        snprintf(problem, sizeof(problem), "expected a list of at most %zu items, got %llu", max,
                 (unsigned long long)n);
        FAIL(L, 0, problem);
    }
    return (size_t)n;
}

size_t ebb__lr_count(lua_State *L, int t, size_t max, const char *fmt, ...)
{
    size_t n = 0;
    char problem[96];

    t = lua_absindex(L, t);
    if (lua_type(L, t) != LUA_TTABLE)
        FAIL(L, t, "expected a table");
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (++n > max) {
            lua_pop(L, 1);
            snprintf(problem, sizeof(problem), "expected at most %zu entries", max);
            FAIL(L, 0, problem);
        }
        ebb__vm_check(L);   /* each step can walk a collision chain as long as the table */
    }
    return n;
}

bool ebb__lr_next(lua_State *L, int t, size_t *i, size_t max, const char *fmt, ...)
{
    char problem[96];

    if (!lua_next(L, t))
        return false;
    if (++*i > max) {
        lua_pop(L, 2);
        snprintf(problem, sizeof(problem), "expected at most %zu entries", max);
        FAIL(L, 0, problem);
    }
    ebb__vm_check(L);   /* each step can walk a collision chain as long as the table */
    return true;
}

/* The checks of a string at idx; fmt and ap name it. */
const char *ebb__lr_vstr(lua_State *L, int idx, size_t max, unsigned flags, size_t *len,
                         const char *fmt, va_list ap)
{
    const char *s;
    size_t n;
    char problem[96];

    if (lua_type(L, idx) != LUA_TSTRING)
        ebb__lr_verror(L, idx, "expected a string", fmt, ap);
    s = lua_tolstring(L, idx, &n);
    if (n > max) {
        snprintf(problem, sizeof(problem), "expected a string of at most %zu bytes, got %zu", max, n);
        ebb__lr_verror(L, 0, problem, fmt, ap);
    }
    if ((flags & EBB_LR_TEXT) && memchr(s, '\0', n) != NULL)
        ebb__lr_verror(L, idx, "expected a string without NUL bytes", fmt, ap);
    if ((flags & EBB_LR_NONEMPTY) && n == 0)
        ebb__lr_verror(L, 0, "expected a non-empty string", fmt, ap);
    if (len != NULL)
        *len = n;
    return s;
}

const char *ebb__lr_str(lua_State *L, int idx, size_t max, unsigned flags, size_t *len,
                        const char *fmt, ...)
{
    va_list ap;
    const char *s;

    va_start(ap, fmt);
    s = ebb__lr_vstr(L, idx, max, flags, len, fmt, ap);
    va_end(ap);
    return s;
}

const char *ebb__lr_optstr(lua_State *L, int idx, size_t max, unsigned flags, size_t *len,
                           const char *fmt, ...)
{
    va_list ap;
    const char *s;

    if (lua_isnoneornil(L, idx)) {
        if (len != NULL)
            *len = 0;
        return NULL;
    }
    va_start(ap, fmt);
    s = ebb__lr_vstr(L, idx, max, flags, len, fmt, ap);
    va_end(ap);
    return s;
}

/* An integer value of the number at idx, if it has one. */
static bool int_of(lua_State *L, int idx, lua_Integer *out)
{
    lua_Number d;

    if (lua_type(L, idx) != LUA_TNUMBER)
        return false;
    if (lua_isinteger(L, idx)) {
        *out = lua_tointeger(L, idx);
        return true;
    }
    d = lua_tonumber(L, idx);
    /* exactly representable and within range: -2^63 <= d < 2^63 */
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != floor(d))
        return false;
    *out = (lua_Integer)d;
    return true;
}

static lua_Integer vint(lua_State *L, int idx, lua_Integer min, lua_Integer max, const char *fmt,
                        va_list ap)
{
    lua_Integer v = 0;
    char problem[96];

    if (!int_of(L, idx, &v))
        ebb__lr_verror(L, idx, "expected an integer", fmt, ap);
    if (v < min || v > max) {
        snprintf(problem, sizeof(problem), "expected an integer from %lld to %lld", (long long)min,
                 (long long)max);
        ebb__lr_verror(L, idx, problem, fmt, ap);
    }
    return v;
}

lua_Integer ebb__lr_int(lua_State *L, int idx, lua_Integer min, lua_Integer max, const char *fmt,
                        ...)
{
    va_list ap;
    lua_Integer v;

    va_start(ap, fmt);
    v = vint(L, idx, min, max, fmt, ap);
    va_end(ap);
    return v;
}

lua_Integer ebb__lr_optint(lua_State *L, int idx, lua_Integer dflt, lua_Integer min,
                           lua_Integer max, const char *fmt, ...)
{
    va_list ap;
    lua_Integer v;

    if (lua_isnoneornil(L, idx))
        return dflt;
    va_start(ap, fmt);
    v = vint(L, idx, min, max, fmt, ap);
    va_end(ap);
    return v;
}

lua_Number ebb__lr_num(lua_State *L, int idx, lua_Number min, lua_Number max, const char *fmt, ...)
{
    lua_Number d;
    char problem[128];

    if (lua_type(L, idx) != LUA_TNUMBER)
        FAIL(L, idx, "expected a number");
    d = lua_tonumber(L, idx);
    if (!isfinite(d))
        FAIL(L, idx, "expected a finite number");
    if (d < min || d > max) {
        snprintf(problem, sizeof(problem), "expected a number from %g to %g", min, max);
        FAIL(L, idx, problem);
    }
    return d;
}

bool ebb__lr_bool(lua_State *L, int idx, const char *fmt, ...)
{
    int t = lua_type(L, idx);

    if (t == LUA_TNONE || t == LUA_TNIL)
        return false;
    if (t != LUA_TBOOLEAN)
        FAIL(L, idx, "expected a boolean");
    return lua_toboolean(L, idx);
}

int ebb__lr_option(lua_State *L, int idx, const char *dflt, const char *const names[],
                   const char *fmt, ...)
{
    const char *s;
    size_t n;
    char problem[256];
    size_t off;
    va_list ap;

    if (dflt != NULL && lua_isnoneornil(L, idx)) {
        s = dflt;
        n = strlen(dflt);
    } else {
        va_start(ap, fmt);
        s = ebb__lr_vstr(L, idx, 256, 0, &n, fmt, ap);
        va_end(ap);
    }
    for (int i = 0; names[i] != NULL; i++)
        if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
            return i;
    if (idx > 0 && lua_type(L, idx) == LUA_TSTRING) {
        /* an argument of the binding: as luaL_checkoption says it */
        char shown[SHOW_MAX * 4 + 8];
        ebb__lr_show(L, idx, shown, sizeof(shown));
        shown[strlen(shown) - 1] = '\0';   /* without the quotes */
        return luaL_argerror(L, idx, lua_pushfstring(L, "invalid option '%s'", shown + 1));
    }
    off = (size_t)snprintf(problem, sizeof(problem), "expected one of");
    for (int i = 0; names[i] != NULL && off < sizeof(problem); i++)
        off += (size_t)snprintf(problem + off, sizeof(problem) - off, "%s \"%s\"", i ? "," : "",
                                names[i]);
    FAIL(L, idx, problem);
    return -1;
}

void *ebb__lr_alloc(lua_State *L, size_t n, size_t size, const char *what)
{
    void *p;

    if (size != 0 && n > (SIZE_MAX - size) / size)
        luaL_error(L, "%s: %zu items are more than this process can hold", what, n);
    p = lua_newuserdatauv(L, (n + 1) * size, 0);
    memset(p, 0, (n + 1) * size);
    return p;
}

int ebb__lr_resource(lua_State *L, int idx, const char *fmt, ...)
{
    va_list ap;
    const char *s;
    int id;

    va_start(ap, fmt);
    s = ebb__lr_vstr(L, idx, EBB_LR_NAME_MAX, EBB_LR_TEXT | EBB_LR_NONEMPTY, NULL, fmt, ap);
    va_end(ap);
    /* a name no object has: the scripts' share of the table (ebb/model.h),
     * never the objects' */
    if ((id = ebb_resource_script(s)) < 0) {
        va_start(ap, fmt);
        ebb__lr_verror(L, idx, "expected a resource some object has (scripts may name at most "
                               "8 that none has)", fmt, ap);
        va_end(ap);
    }
    return id;
}

const char *ebb__lr_message(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TSTRING)
        return lua_tolstring(L, idx, NULL);   /* a string already: not converted */
    if (lua_isnoneornil(L, idx))
        return "error with no message";
    return luaL_typename(L, idx);
}

const char *ebb__lr_peekstr(lua_State *L, int idx, size_t max, unsigned flags, size_t *len)
{
    const char *s;
    size_t n;

    if (lua_type(L, idx) != LUA_TSTRING)
        return NULL;
    s = lua_tolstring(L, idx, &n);   /* a string already: not converted */
    if (n > max || ((flags & EBB_LR_TEXT) && memchr(s, '\0', n) != NULL) ||
        ((flags & EBB_LR_NONEMPTY) && n == 0))
        return NULL;
    if (len != NULL)
        *len = n;
    return s;
}
