/* The sandbox's string functions that can run long on script-sized input:
 * find, match, gmatch, gsub (Lua patterns), rep and format.
 *
 * Lua's own versions run in C, where the budget hook never fires: a
 * backtracking pattern such as ".-.-.-b" over 300 kB runs for minutes, and
 * string.rep("", math.maxinteger) loops without allocating a byte. These
 * versions keep Lua's semantics (the patterns of the reference manual,
 * section 6.4.1) and look at the budget as they go: every few hundred steps
 * of a match, between the pieces of a repetition or a format. When it has
 * expired, ebb__vm_stop abandons the script where it is.
 *
 * vm.c puts them in the string table of every sandbox (ebb__lua_open_string);
 * the loop thread calls them, inside a budgeted call only.
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "lua/lua_int.h"

#define MAX_CAPTURES 32            /* as many as Lua's patterns allow */
#define MAX_DEPTH 200              /* nesting of pattern items, as Lua's */
#define CAP_OPEN (-1)
#define CAP_POS (-2)
#define TICK_MASK 1023u            /* look at the budget every 1024 steps */
#define WORK_MAX 4096u             /* a match's steps and bytes looked at between looks */
#define CHUNK ((size_t)1 << 20)    /* bulk copies between looks: 1 MiB */

/* ---- budget --------------------------------------------------------------- */

static void tick(lua_State *L, unsigned *steps)
{
    if ((++*steps & TICK_MASK) == 0)
        ebb__vm_check(L);
}

/* ---- pattern matching ----------------------------------------------------- */

/* A step of a match is not always O(1): a set ("[...]") is read whole at
 * every character it is tried on, and a back reference compares a whole
 * capture, each as long as the script makes them. So a match counts the
 * work it does (a step, the bytes of a set, the bytes compared) and looks
 * at the budget whenever WORK_MAX of it has been done: a 10 MB set tried
 * on every character of a subject ran 10 s under a 500 ms budget when only
 * steps were counted. */
struct pm {
    lua_State *L;
    const char *s, *s_end;          /* the subject */
    const char *p_end;              /* end of the pattern */
    int depth, level;
    size_t work;                    /* done since the budget was looked at */
    struct {
        const char *at;
        ptrdiff_t len;              /* CAP_OPEN, CAP_POS or the length */
    } cap[MAX_CAPTURES];
};

static const char *pm_match(struct pm *m, const char *s, const char *p);

static void spend(struct pm *m, size_t work)
{
    m->work += work;
    if (m->work >= WORK_MAX) {
        m->work = 0;
        ebb__vm_check(m->L);
    }
}

/* %a, %d, ... on one byte; an upper-case letter complements its class; any
 * other character after '%' stands for itself. */
static bool class_has(int c, int cl)
{
    bool in;

    switch (tolower(cl)) {
    case 'a': in = isalpha(c); break;
    case 'c': in = iscntrl(c); break;
    case 'd': in = isdigit(c); break;
    case 'g': in = isgraph(c); break;
    case 'l': in = islower(c); break;
    case 'p': in = ispunct(c); break;
    case 's': in = isspace(c); break;
    case 'u': in = isupper(c); break;
    case 'w': in = isalnum(c); break;
    case 'x': in = isxdigit(c); break;
    case 'z': in = c == 0; break;      /* deprecated in Lua 5.2, still there */
    default: return cl == c;
    }
    return isupper(cl) ? !in : in;
}

/* [set] from `p` (at the '[') to `close` (at the ']'). */
static bool set_has(int c, const char *p, const char *close)
{
    bool neg = false;

    p++;
    if (*p == '^') {
        neg = true;
        p++;
    }
    while (p < close) {
        if (*p == '%' && p + 1 < close) {
            if (class_has(c, (unsigned char)p[1]))
                return !neg;
            p += 2;
        } else if (p[1] == '-' && p + 2 < close) {
            if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2])
                return !neg;
            p += 3;
        } else {
            if ((unsigned char)*p == c)
                return !neg;
            p++;
        }
    }
    return neg;
}

/* Where the single-character class at p ends. */
static const char *class_end(struct pm *m, const char *p)
{
    if (*p == '%') {
        if (p + 1 >= m->p_end)
            luaL_error(m->L, "malformed pattern (ends with '%%')");
        return p + 2;
    }
    if (*p == '[') {
        const char *open = p;
        bool first = true;
        p++;
        if (p < m->p_end && *p == '^')
            p++;
        for (;; first = false) {       /* a ']' right after '[' or '[^' is a member */
            if (p >= m->p_end)
                luaL_error(m->L, "malformed pattern (missing ']')");
            if (*p == ']' && !first) {
                spend(m, (size_t)(p - open));
                return p + 1;
            }
            if (*p == '%' && ++p >= m->p_end)
                luaL_error(m->L, "malformed pattern (missing ']')");
            p++;
        }
    }
    return p + 1;
}

static bool single_has(struct pm *m, const char *s, const char *p, const char *ep)
{
    int c;

    if (s >= m->s_end)
        return false;
    c = (unsigned char)*s;
    switch (*p) {
    case '.': return true;
    case '%': return class_has(c, (unsigned char)p[1]);
    case '[':
        spend(m, (size_t)(ep - p));
        return set_has(c, p, ep - 1);
    default: return (unsigned char)*p == c;
    }
}

/* Longest run first, giving back one at a time. */
static const char *greedy(struct pm *m, const char *s, const char *p, const char *ep)
{
    size_t n = 0;

    while (single_has(m, s + n, p, ep)) {
        n++;
        spend(m, 1);
    }
    for (;;) {
        const char *r = pm_match(m, s + n, ep + 1);
        if (r != NULL)
            return r;
        if (n-- == 0)
            return NULL;
    }
}

/* Shortest run first, taking one more at a time. */
static const char *lazy(struct pm *m, const char *s, const char *p, const char *ep)
{
    for (;;) {
        const char *r = pm_match(m, s, ep + 1);
        if (r != NULL)
            return r;
        if (!single_has(m, s, p, ep))
            return NULL;
        s++;
    }
}

static const char *open_capture(struct pm *m, const char *s, const char *p, ptrdiff_t what)
{
    const char *r;

    if (m->level >= MAX_CAPTURES)
        luaL_error(m->L, "too many captures");
    m->cap[m->level].at = s;
    m->cap[m->level].len = what;
    m->level++;
    if ((r = pm_match(m, s, p)) == NULL)
        m->level--;
    return r;
}

static const char *close_capture(struct pm *m, const char *s, const char *p)
{
    const char *r;
    int l = m->level - 1;

    while (l >= 0 && m->cap[l].len != CAP_OPEN)
        l--;
    if (l < 0)
        luaL_error(m->L, "invalid pattern capture");
    m->cap[l].len = s - m->cap[l].at;
    if ((r = pm_match(m, s, p)) == NULL)
        m->cap[l].len = CAP_OPEN;
    return r;
}

/* %bxy at p (after the 'b'): from an x to its matching y. */
static const char *balanced(struct pm *m, const char *s, const char *p)
{
    int open = 1;

    if (p + 1 >= m->p_end)
        luaL_error(m->L, "malformed pattern (missing arguments to '%%b')");
    if (s >= m->s_end || *s != p[0])
        return NULL;
    for (const char *q = s + 1; q < m->s_end; q++) {
        spend(m, 1);
        if (*q == p[1]) {
            if (--open == 0)
                return q + 1;
        } else if (*q == p[0]) {
            open++;
        }
    }
    return NULL;
}

/* %1 ... %9: the same text as a closed capture. */
static const char *backref(struct pm *m, const char *s, int digit)
{
    int l = digit - '1';
    size_t len;

    if (l < 0 || l >= m->level || m->cap[l].len == CAP_OPEN)
        luaL_error(m->L, "invalid capture index %%%d", l + 1);
    if (m->cap[l].len == CAP_POS)
        return NULL;
    len = (size_t)m->cap[l].len;
    spend(m, len);
    if ((size_t)(m->s_end - s) >= len && memcmp(m->cap[l].at, s, len) == 0)
        return s + len;
    return NULL;
}

/* The end of the match of pattern p (to m->p_end) at s, or NULL. */
static const char *pm_match(struct pm *m, const char *s, const char *p)
{
    const char *r = NULL;

    if (++m->depth > MAX_DEPTH)
        luaL_error(m->L, "pattern too complex");
    for (;;) {
        const char *ep;

        spend(m, 1);
        if (p == m->p_end) {
            r = s;
            break;
        }
        if (*p == '(') {
            if (p + 1 < m->p_end && p[1] == ')')
                r = open_capture(m, s, p + 2, CAP_POS);
            else
                r = open_capture(m, s, p + 1, CAP_OPEN);
            break;
        }
        if (*p == ')') {
            r = close_capture(m, s, p + 1);
            break;
        }
        if (*p == '$' && p + 1 == m->p_end) {
            r = s == m->s_end ? s : NULL;
            break;
        }
        if (*p == '%' && p + 1 < m->p_end) {
            if (p[1] == 'b') {
                if ((s = balanced(m, s, p + 2)) == NULL)
                    break;
                p += 4;
                continue;
            }
            if (p[1] == 'f') {
                int prev, cur;
                p += 2;
                if (p >= m->p_end || *p != '[')
                    luaL_error(m->L, "missing '[' after '%%f' in pattern");
                ep = class_end(m, p);
                prev = s == m->s ? 0 : (unsigned char)s[-1];
                cur = s < m->s_end ? (unsigned char)*s : 0;
                spend(m, 2 * (size_t)(ep - p));
                if (set_has(prev, p, ep - 1) || !set_has(cur, p, ep - 1))
                    break;
                p = ep;
                continue;
            }
            if (isdigit((unsigned char)p[1])) {
                if ((s = backref(m, s, p[1])) == NULL)
                    break;
                p += 2;
                continue;
            }
        }
        ep = class_end(m, p);
        switch (ep < m->p_end ? *ep : '\0') {
        case '?':
            if (single_has(m, s, p, ep) && (r = pm_match(m, s + 1, ep + 1)) != NULL)
                goto out;
            p = ep + 1;
            continue;
        case '+':
            r = single_has(m, s, p, ep) ? greedy(m, s + 1, p, ep) : NULL;
            goto out;
        case '*':
            r = greedy(m, s, p, ep);
            goto out;
        case '-':
            r = lazy(m, s, p, ep);
            goto out;
        default:
            if (!single_has(m, s, p, ep))
                goto out;
            s++;
            p = ep;
            continue;
        }
    }
out:
    m->depth--;
    return r;
}

static void pm_init(struct pm *m, lua_State *L, const char *s, size_t ls, const char *p, size_t lp)
{
    m->L = L;
    m->s = s;
    m->s_end = s + ls;
    m->p_end = p + lp;
    m->depth = m->level = 0;
    m->work = 0;
}

/* Capture i of a match from s to e; capture 0 is the whole match when the
 * pattern has none. */
static void push_capture(struct pm *m, int i, const char *s, const char *e)
{
    if (i >= m->level) {
        if (i != 0)
            luaL_error(m->L, "invalid capture index %%%d", i + 1);
        lua_pushlstring(m->L, s, (size_t)(e - s));
        return;
    }
    if (m->cap[i].len == CAP_OPEN)
        luaL_error(m->L, "unfinished capture");
    if (m->cap[i].len == CAP_POS)
        lua_pushinteger(m->L, (lua_Integer)(m->cap[i].at - m->s) + 1);
    else
        lua_pushlstring(m->L, m->cap[i].at, (size_t)m->cap[i].len);
}

/* Every capture (or the whole match when there is none and s is given). */
static int push_captures(struct pm *m, const char *s, const char *e)
{
    int n = m->level == 0 && s != NULL ? 1 : m->level;

    luaL_checkstack(m->L, n, "too many captures");
    for (int i = 0; i < n; i++)
        push_capture(m, i, s, e);
    return n;
}

/* A start position as Lua's string functions read one: negative counts
 * from the end, 0 and anything before the start mean 1. */
static size_t start_at(lua_Integer pos, size_t len)
{
    if (pos > 0)
        return (size_t)pos;
    if (pos == 0 || pos < -(lua_Integer)len)
        return 1;
    return len + (size_t)pos + 1;
}

static bool has_specials(const char *p, size_t lp)
{
    for (size_t i = 0; i < lp; i++)
        if (strchr("^$*+?.([%-", p[i]) != NULL && p[i] != '\0')
            return true;
    return false;
}

static int find_or_match(lua_State *L, bool find)
{
    size_t ls, lp, init;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    struct pm m;
    bool anchor;

    init = start_at(luaL_optinteger(L, 3, 1), ls);
    if (init > ls + 1) {
        luaL_pushfail(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || !has_specials(p, lp))) {
        const char *at = memmem(s + init - 1, ls - (init - 1), p, lp);
        if (at == NULL) {
            luaL_pushfail(L);
            return 1;
        }
        lua_pushinteger(L, (lua_Integer)(at - s) + 1);
        lua_pushinteger(L, (lua_Integer)(at - s) + (lua_Integer)lp);
        return 2;
    }
    anchor = lp > 0 && *p == '^';
    if (anchor) {
        p++;
        lp--;
    }
    pm_init(&m, L, s, ls, p, lp);
    for (const char *at = s + init - 1;; at++) {
        const char *e;
        m.level = m.depth = 0;
        if ((e = pm_match(&m, at, p)) != NULL) {
            if (!find)
                return push_captures(&m, at, e);
            lua_pushinteger(L, (lua_Integer)(at - s) + 1);
            lua_pushinteger(L, (lua_Integer)(e - s));
            return push_captures(&m, NULL, NULL) + 2;
        }
        if (anchor || at >= m.s_end)
            break;
    }
    luaL_pushfail(L);
    return 1;
}

/* string.find(s, pattern [, init [, plain]])                [-0, +(1|2+), e] */
static int l_string_find(lua_State *L)
{
    return find_or_match(L, true);
}

/* string.match(s, pattern [, init])                          [-0, +(1+), e] */
static int l_string_match(lua_State *L)
{
    return find_or_match(L, false);
}

struct gmatch {
    const char *s, *p;              /* anchored by the closure's upvalues */
    size_t ls, lp;
    size_t at;                      /* where the next attempt starts */
    const char *last;               /* end of the last match: not matched empty again */
};

static int l_string_gmatch_next(lua_State *L)
{
    struct gmatch *g = lua_touserdata(L, lua_upvalueindex(3));
    struct pm m;

    pm_init(&m, L, g->s, g->ls, g->p, g->lp);
    for (size_t i = g->at; i <= g->ls; i++) {
        const char *at = g->s + i, *e;
        m.level = m.depth = 0;
        if ((e = pm_match(&m, at, g->p)) != NULL && e != g->last) {
            g->at = (size_t)(e - g->s);
            g->last = e;
            return push_captures(&m, at, e);
        }
    }
    g->at = g->ls + 1;
    return 0;
}

/* string.gmatch(s, pattern [, init]) -> iterator              [-0, +1, e]
 * As in Lua 5.4, a '^' does not anchor here. */
static int l_string_gmatch(lua_State *L)
{
    size_t ls, lp, init;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    struct gmatch *g;

    init = start_at(luaL_optinteger(L, 3, 1), ls) - 1;
    if (init > ls)
        init = ls + 1;                  /* past the end: nothing to find */
    lua_settop(L, 2);
    g = lua_newuserdatauv(L, sizeof(*g), 0);
    *g = (struct gmatch){ s, p, ls, lp, init, NULL };
    lua_pushcclosure(L, l_string_gmatch_next, 3);
    return 1;
}

/* A replacement string: %0-%9 are captures, %% a percent sign. */
static void add_template(struct pm *m, luaL_Buffer *b, const char *s, const char *e, int repl)
{
    size_t len;
    const char *r = lua_tolstring(m->L, repl, &len), *end = r + len;

    /* the template is read once a match, and a match can add nothing (a
     * template of 5 million empty "%1"s ran minutes over 1,000 matches):
     * its bytes count as work */
    while (r < end) {
        const char *pct = memchr(r, '%', (size_t)(end - r));
        if (pct == NULL) {
            spend(m, (size_t)(end - r));
            luaL_addlstring(b, r, (size_t)(end - r));
            break;
        }
        spend(m, (size_t)(pct - r) + 2);
        luaL_addlstring(b, r, (size_t)(pct - r));
        if (pct + 1 >= end)
            luaL_error(m->L, "invalid use of '%%' in replacement string");
        if (pct[1] == '%') {
            luaL_addchar(b, '%');
        } else if (isdigit((unsigned char)pct[1])) {
            if (pct[1] == '0')
                lua_pushlstring(m->L, s, (size_t)(e - s));
            else
                push_capture(m, pct[1] - '1', s, e);
            luaL_tolstring(m->L, -1, NULL);
            lua_remove(m->L, -2);
            luaL_addvalue(b);
        } else {
            luaL_error(m->L, "invalid use of '%%' in replacement string");
        }
        r = pct + 2;
    }
}

static void add_replacement(struct pm *m, luaL_Buffer *b, const char *s, const char *e, int repl)
{
    lua_State *L = m->L;

    switch (lua_type(L, repl)) {
    case LUA_TFUNCTION: {
        int n;
        lua_pushvalue(L, repl);
        n = push_captures(m, s, e);
        lua_call(L, n, 1);
        break;
    }
    case LUA_TTABLE:
        push_capture(m, 0, s, e);
        lua_gettable(L, repl);
        break;
    default:
        add_template(m, b, s, e, repl);
        return;
    }
    if (!lua_toboolean(L, -1)) {       /* nil or false: keep the match */
        lua_pop(L, 1);
        luaL_addlstring(b, s, (size_t)(e - s));
    } else if (!lua_isstring(L, -1)) {
        luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    } else {
        luaL_addvalue(b);
    }
}

/* string.gsub(s, pattern, repl [, n]) -> string, count        [-0, +2, e] */
static int l_string_gsub(lua_State *L)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    const char *at = s, *last = NULL;
    int tr = lua_type(L, 3);
    lua_Integer max = luaL_optinteger(L, 4, (lua_Integer)ls + 1), n = 0;
    bool anchor = lp > 0 && *p == '^';
    luaL_Buffer b;
    struct pm m;

    luaL_argexpected(L, tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION ||
                     tr == LUA_TTABLE, 3, "string/function/table");
    if (anchor) {
        p++;
        lp--;
    }
    luaL_buffinit(L, &b);
    pm_init(&m, L, s, ls, p, lp);
    while (n < max) {
        const char *e;
        m.level = m.depth = 0;
        if ((e = pm_match(&m, at, p)) != NULL && e != last) {
            n++;
            add_replacement(&m, &b, at, e, 3);
            at = last = e;
        } else if (at < m.s_end) {
            luaL_addchar(&b, *at++);
        } else {
            break;
        }
        if (anchor)
            break;
    }
    luaL_addlstring(&b, at, (size_t)(m.s_end - at));
    luaL_pushresult(&b);
    lua_pushinteger(L, n);
    return 2;
}

/* ---- rep ---------------------------------------------------------------- */

/* string.rep(s, n [, sep])                                      [-0, +1, e]
 * Built by doubling what is written, a bounded piece at a time. Nothing
 * repeated any number of times is nothing, at once. */
static int l_string_rep(lua_State *L)
{
    size_t l, lsep, unit, total, done;
    const char *s = luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    const char *sep = luaL_optlstring(L, 3, "", &lsep);
    luaL_Buffer b;
    char *out;

    if (n <= 0 || l + lsep == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    unit = l + lsep;
    /* Lua 5.4 caps a repetition at INT_MAX bytes */
    if (unit < l || (lua_Unsigned)n > (lua_Unsigned)INT_MAX / unit)
        return luaL_error(L, "resulting string too large");
    total = (size_t)n * unit - lsep;
    out = luaL_buffinitsize(L, &b, total);
    memcpy(out, s, l);
    if (total > l)
        memcpy(out + l, sep, lsep);
    done = total < unit ? total : unit;
    /* The result repeats every `unit` bytes: the byte at p is the byte at
     * p % unit. Each copy takes the bytes written from the same phase
     * (done % unit) and no further than `done` (no overlap): at most the
     * whole units written and at most CHUNK, which need not be a whole
     * number of units (copying from 0 once it was not, the result came
     * out shifted after the first CHUNK-sized copy, 2.5 MiB on). */
    while (done < total) {
        size_t whole = done / unit * unit, k = total - done;
        if (k > whole)
            k = whole;
        if (k > CHUNK)
            k = CHUNK;
        memcpy(out + done, out + done % unit, k);
        done += k;
        ebb__vm_check(L);
    }
    luaL_pushresultsize(&b, total);
    return 1;
}

/* ---- format --------------------------------------------------------------- */

/* Lua 5.4's rules (lstrlib.c str_format), checked in the same order: a
 * conversion is '%', at most 20 characters of flags, digits and dots,
 * then its letter; each letter admits its own flags, a width of at most 2
 * digits and (but %c and %p) a precision of at most 2 digits. An error
 * starts with Lua's own message and adds, in parentheses, what was wrong. */
#define FMT_SPAN_MAX 20            /* MAX_FORMAT - 10 - 2 in lstrlib.c */
#define FMT_FLAGS "-+#0 "

static const char *two_digits(const char *s)
{
    for (int i = 0; i < 2 && isdigit((unsigned char)*s); i++)
        s++;
    return s;
}

/* The specification at f (just after its '%', at byte `at` of the
 * format) copied to form: '%', flags, width, precision and the letter,
 * cut at a NUL as Lua's is. Returns where the letter is. */
static const char *get_format(lua_State *L, const char *f, const char *end, char *form, size_t at)
{
    size_t len = 0;

    while (f + len < end && f[len] != '\0' && strchr(FMT_FLAGS "123456789.", f[len]) != NULL)
        len++;
    if (len > FMT_SPAN_MAX)
        luaL_error(L, "invalid format (too long) (the conversion at byte %d has %d flags, digits "
                      "and dots; at most %d)", (int)at, (int)len, FMT_SPAN_MAX);
    form[0] = '%';
    memcpy(form + 1, f, len);
    form[len + 1] = f + len < end ? f[len] : '\0';
    form[len + 2] = '\0';
    return f + len;
}

/* Lua's checkformat: the flags the letter admits (any number, any order),
 * a width, a precision where `precision`. */
static void check_format(lua_State *L, const char *form, const char *flags, bool precision)
{
    const char *after = form + 1 + strspn(form + 1, flags), *spec = after;
    char conv = form[strlen(form) - 1], why[160];

    if (*spec != '0') {               /* a width cannot start with '0' */
        spec = two_digits(spec);
        if (isdigit((unsigned char)*spec))
            luaL_error(L, "invalid conversion specification: '%s' (a width has at most 2 digits)",
                       form);
        if (*spec == '.' && precision) {
            spec = two_digits(spec + 1);
            if (isdigit((unsigned char)*spec))
                luaL_error(L, "invalid conversion specification: '%s' (a precision has at most 2 "
                              "digits)", form);
        }
    }
    if (isalpha((unsigned char)*spec))
        return;
    if (spec == after && strchr(FMT_FLAGS, *spec) != NULL) {
        size_t k = (size_t)snprintf(why, sizeof(why), "flag '%c' is not allowed with %%%c, which "
                                    "takes", *spec, conv);
        for (const char *f = flags; *f; f++)
            k += (size_t)snprintf(why + k, sizeof(why) - k, "%s '%c'", f == flags ? "" : ",", *f);
    } else if (strchr(FMT_FLAGS, *spec) != NULL) {
        snprintf(why, sizeof(why), "flag '%c' after the width or precision: flags come first",
                 *spec);
    } else if (!precision) {
        snprintf(why, sizeof(why), "%%%c takes no precision", conv);
    } else {
        snprintf(why, sizeof(why), "'.' after the precision");
    }
    luaL_error(L, "invalid conversion specification: '%s' (%s)", form, why);
}

/* form with the C length modifier before its letter. */
static void add_length(char *form, const char *length)
{
    size_t l = strlen(form), lm = strlen(length);
    char conv = form[l - 1];

    memcpy(form + l - 1, length, lm);
    form[l + lm - 1] = conv;
    form[l + lm] = '\0';
}

/* snprintf into the buffer: a conversion's output, at most 511 bytes
 * (%99.99f of 1e308 is about 410), NUL bytes from %c included. */
static void add_printf(luaL_Buffer *b, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0)
        luaL_addlstring(b, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* %q: a value as Lua source that reads back to it. */
static void add_quoted(lua_State *L, luaL_Buffer *b, int arg)
{
    switch (lua_type(L, arg)) {
    case LUA_TSTRING: {
        size_t len;
        const unsigned char *s = (const unsigned char *)lua_tolstring(L, arg, &len);
        luaL_addchar(b, '"');
        for (size_t i = 0; i < len; i++) {
            if ((i & 0xffff) == 0xffff)
                ebb__vm_check(L);
            if (s[i] == '"' || s[i] == '\\' || s[i] == '\n') {
                luaL_addchar(b, '\\');
                luaL_addchar(b, (char)s[i]);
            } else if (iscntrl(s[i])) {
                /* three digits when a digit follows, so it reads back */
                add_printf(b, i + 1 < len && isdigit(s[i + 1]) ? "\\%03d" : "\\%d", s[i]);
            } else {
                luaL_addchar(b, (char)s[i]);
            }
        }
        luaL_addchar(b, '"');
        return;
    }
    case LUA_TNUMBER:
        if (lua_isinteger(L, arg)) {
            lua_Integer i = lua_tointeger(L, arg);
            /* the smallest integer has no positive literal */
            add_printf(b, i == LUA_MININTEGER ? "0x%" LUA_INTEGER_FRMLEN "x" : LUA_INTEGER_FMT,
                       (LUA_INTEGER)i);
        } else {
            lua_Number x = lua_tonumber(L, arg);
            if (x != x)
                luaL_addstring(b, "(0/0)");
            else if (x == (lua_Number)HUGE_VAL || x == -(lua_Number)HUGE_VAL)
                luaL_addstring(b, x > 0 ? "1e9999" : "-1e9999");
            else   /* hexadecimal: every bit of the float */
                add_printf(b, "%" LUA_NUMBER_FRMLEN "a", (LUAI_UACNUMBER)x);
        }
        return;
    case LUA_TNIL: case LUA_TBOOLEAN:
        luaL_tolstring(L, arg, NULL);
        luaL_addvalue(b);
        return;
    default:
        luaL_argerror(L, arg, "value has no literal form");
    }
}

/* string.format(fmt, ...)                                       [-0, +1, e]
 * As Lua's, a bounded piece at a time between looks at the budget. */
static int l_string_format(lua_State *L)
{
    size_t lf;
    const char *start = luaL_checklstring(L, 1, &lf), *f = start, *end = start + lf;
    int arg = 1, top = lua_gettop(L);
    unsigned steps = 0;
    luaL_Buffer b;
    char form[FMT_SPAN_MAX + 8];   /* '%', the span, a length modifier, the letter, NUL */
    char conv;

    luaL_buffinit(L, &b);
    while (f < end) {
        const char *pct = memchr(f, '%', (size_t)(end - f));
        size_t run = pct ? (size_t)(pct - f) : (size_t)(end - f);
        /* text between conversions, a bounded piece at a time */
        while (run > 0) {
            size_t k = run < CHUNK ? run : CHUNK;
            luaL_addlstring(&b, f, k);
            f += k;
            run -= k;
            ebb__vm_check(L);
        }
        if (pct == NULL)
            break;
        tick(L, &steps);
        if (pct + 1 < end && pct[1] == '%') {
            luaL_addchar(&b, '%');
            f = pct + 2;
            continue;
        }
        if (++arg > top)
            return luaL_argerror(L, arg, "no value");
        f = get_format(L, pct + 1, end, form, (size_t)(pct - start) + 1);
        conv = f < end ? *f : '\0';    /* a '%' that ends the format has none */
        f = f < end ? f + 1 : end;
        switch (conv) {
        case 'c':
            check_format(L, form, "-", false);
            add_printf(&b, form, (int)luaL_checkinteger(L, arg));
            break;
        case 'd': case 'i': case 'u': case 'o': case 'x': case 'X': {
            lua_Integer n = luaL_checkinteger(L, arg);
            check_format(L, form, conv == 'd' || conv == 'i' ? "-+0 " : conv == 'u' ? "-0" : "-#0",
                         true);
            add_length(form, LUA_INTEGER_FRMLEN);
            add_printf(&b, form, (LUAI_UACINT)n);
            break;
        }
        case 'a': case 'A':
            check_format(L, form, FMT_FLAGS, true);
            add_length(form, LUA_NUMBER_FRMLEN);
            add_printf(&b, form, (LUAI_UACNUMBER)luaL_checknumber(L, arg));
            break;
        case 'e': case 'E': case 'f': case 'g': case 'G': {
            lua_Number x = luaL_checknumber(L, arg);
            check_format(L, form, FMT_FLAGS, true);
            add_length(form, LUA_NUMBER_FRMLEN);
            add_printf(&b, form, (LUAI_UACNUMBER)x);
            break;
        }
        case 'p': {
            const void *p = lua_topointer(L, arg);
            check_format(L, form, "-", false);
            if (p == NULL) {            /* printf is not given NULL: "(null)" as a string */
                form[strlen(form) - 1] = 's';
                add_printf(&b, form, "(null)");
            } else {
                add_printf(&b, form, p);
            }
            break;
        }
        case 'q':
            if (form[2] != '\0')
                return luaL_error(L, "specifier '%%q' cannot have modifiers");
            add_quoted(L, &b, arg);
            break;
        case 's': {
            size_t l;
            const char *s = luaL_tolstring(L, arg, &l);
            if (form[2] == '\0') {
                luaL_addvalue(&b);      /* no modifiers: the whole string */
            } else {
                luaL_argcheck(L, l == strlen(s), arg, "string contains zeros");
                check_format(L, form, "-", true);
                if (strchr(form, '.') == NULL && l >= 100) {
                    luaL_addvalue(&b);  /* whole, however long: nothing to pad */
                } else {
                    add_printf(&b, form, s);
                    lua_pop(L, 1);
                }
            }
            break;
        }
        default:
            return luaL_error(L, "invalid conversion '%s' to 'format' (a conversion is one of "
                                 "%%a %%A %%c %%d %%e %%E %%f %%g %%G %%i %%o %%p %%q %%s %%u "
                                 "%%x %%X, with flags, width and precision between; %%%% is a "
                                 "percent sign)", form);
        }
    }
    luaL_pushresult(&b);
    return 1;
}

void ebb__lua_open_string(lua_State *L)
{
    static const luaL_Reg fns[] = {
        { "find", l_string_find },
        { "match", l_string_match },
        { "gmatch", l_string_gmatch },
        { "gsub", l_string_gsub },
        { "rep", l_string_rep },
        { "format", l_string_format },
        { NULL, NULL },
    };
    luaL_setfuncs(L, fns, 0);
}
