/* The Lua sandbox: one lua_State per plugin instance.
 *
 * - A capped allocator: a state never holds more than mem_limit bytes.
 * - Only base, string, table, math, utf8 and coroutine are opened; dofile, loadfile
 *   and collectgarbage are removed; load is text-only, at most 64 KiB;
 *   require resolves home/lua/ and the policy directories only, and reads
 *   regular files only; print and warn go to the log, a line a call;
 *   reading or writing an undeclared global raises.
 * - Every chunk is parsed under the budget of a call (see "parsing").
 * - A time budget per call (budget.c): the one call path below arms it.
 * require("ebb.native") is not preloaded here: the plugin engine
 * (lua_plugin.c) registers the bindings of the states it makes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <lauxlib.h>
#include <lualib.h>

#include "lua/lua_int.h"

/* ---- allocator ---------------------------------------------------------- */

/* The largest new block (not a Lua object) the parser may have. Its one
 * table, of the chunk's distinct names, strings and numbers, is rebuilt
 * in one C step when it grows, and that step takes time quadratic in its
 * size when the chunk's integer constants collide in it (65,537 constants
 * all multiples of 2^17 - 1, an 843 KB chunk: 5 s, no reader call, no
 * hook). 1 MiB keeps it at 2^15 slots (32,768 constants: 0.3 s at worst,
 * as long as resolving 32,767 gotos at once, which Lua's own limit on
 * pending gotos bounds). */
#define PARSE_BLOCK_MAX ((size_t)1 << 20)
#define PARSE_CONSTANTS_MAX 32768   /* what that leaves a chunk, for messages */

/* What Lua passes as osize with ptr NULL when it makes an object: the
 * object's type tag (string ... thread, and its own upvalues and
 * prototypes after them), with a variant in bits 4-5. Vectors (a table's
 * slots, code, the parser's lists) come with another value (0). */
static bool is_object(size_t tag)
{
    return tag < 0x40 && (tag & 0x0f) >= LUA_TSTRING && (tag & 0x0f) <= LUA_NUMTYPES + 1;
}

static void *vm_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct ebb_vm *vm = ud;
    size_t old = ptr ? osize : 0;
    void *p;

    if (nsize == 0) {
        free(ptr);
        vm->mem_used -= old;
        return NULL;
    }
    /* a new vector (Lua says what object it makes in osize, anything else
     * is not one) too large for a parse: the chunk is refused (parse) */
    if (vm->parsing && ptr == NULL && nsize > PARSE_BLOCK_MAX && !is_object(osize)) {
        vm->parse_refused = true;
        return NULL;
    }
    /* written so that no size overflows: Lua asks for up to SIZE_MAX; what
     * the plan keeps for the plugin this cycle counts too */
    if (nsize > old && vm->limit_on &&
        (nsize - old > vm->mem_limit || vm->mem_used + vm->kept > vm->mem_limit - (nsize - old)))
        return NULL;
    if ((p = realloc(ptr, nsize)) == NULL)
        return NULL;
    vm->mem_used = vm->mem_used - old + nsize;
    if (vm->mem_used > vm->mem_peak)
        vm->mem_peak = vm->mem_used;
    return p;
}

/* ---- sandboxed globals -------------------------------------------------- */

static int l_strict_index(lua_State *L)
{
    return luaL_error(L, "undeclared global '%s'", luaL_optstring(L, 2, "?"));
}

static int l_strict_newindex(lua_State *L)
{
    return luaL_error(L, "assignment to undeclared global '%s' (plugins keep state in "
                         "locals or their plugin table)", luaL_optstring(L, 2, "?"));
}

/* setmetatable(t, mt) -> t                                   [-0, +1, e]
 * As Lua's, without finalizers: a __gc runs with hooks off, at a collection
 * or when the state closes, where no budget can stop it. */
static int l_setmetatable(lua_State *L)
{
    int t = lua_type(L, 2);

    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
    if (t == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL)
            return luaL_error(L, "__gc metamethods are not allowed in the sandbox (a finalizer "
                                 "would run where the time budget cannot stop it)");
        lua_pop(L, 1);
    }
    if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL)
        return luaL_error(L, "cannot change a protected metatable");
    lua_settop(L, 2);
    lua_setmetatable(L, 1);
    return 1;
}

/* getmetatable(v) -> mt | nil                                  [-0, +1, -]
 * A table's metatable (or its __metatable field), as Lua's; nothing for any
 * other value: the metatables of strings and of the engine's objects are
 * the engine's (a __gc set there would run outside any budget). */
static int l_getmetatable(lua_State *L)
{
    luaL_checkany(L, 1);
    if (lua_type(L, 1) != LUA_TTABLE || !lua_getmetatable(L, 1)) {
        lua_pushnil(L);
        return 1;
    }
    luaL_getmetafield(L, 1, "__metatable");   /* pushes it when there is one */
    return 1;
}

/* The message handler xpcall installs: the script's own, until the budget
 * expires; from then on the error goes on as it is and no script code runs
 * (the budget's own error is raised where hooks are off). */
static int l_msgh(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);

    if (vm->expired)
        return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static int xpcall_done(lua_State *L, int status, lua_KContext extra)
{
    if (status != LUA_OK && status != LUA_YIELD) {
        lua_pushboolean(L, 0);
        lua_pushvalue(L, -2);
        return 2;
    }
    return lua_gettop(L) - (int)extra;
}

/* xpcall(f, msgh, ...) -> true, results... | false, msgh(err) [-0, +?, -] */
static int l_xpcall(lua_State *L)
{
    int n = lua_gettop(L);

    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, l_msgh, 1);
    lua_replace(L, 2);                  /* [f, handler, args...] */
    lua_pushboolean(L, 1);              /* the first result when f succeeds */
    lua_pushvalue(L, 1);
    lua_rotate(L, 3, 2);                /* [f, handler, true, f, args...] */
    return xpcall_done(L, lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, xpcall_done), 2);
}

#define PRINT_MAX 4096   /* bytes of one print in the log */

static int l_print(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    luaL_Buffer b;
    size_t len, total = 0;
    int n = lua_gettop(L);

    luaL_buffinit(L, &b);
    for (int i = 1; i <= n && total <= PRINT_MAX; i++) {
        const char *s;
        if (i > 1)
            luaL_addchar(&b, '\t');
        s = luaL_tolstring(L, i, &len);
        if (len > PRINT_MAX - total) {
            lua_pushlstring(L, s, PRINT_MAX - total + 1);
            lua_remove(L, -2);
        }
        luaL_addvalue(&b);
        total += len + 1;
    }
    luaL_pushresult(&b);
    {
        /* the logger escapes the text, NUL bytes included: one record, whatever it holds */
        char prefix[160];
        const char *s = lua_tolstring(L, -1, &len);
        if (len > PRINT_MAX) {
            lua_pushlstring(L, s, PRINT_MAX);
            lua_pushliteral(L, "\xe2\x80\xa6");   /* cut, and said so */
            lua_concat(L, 2);
            s = lua_tolstring(L, -1, &len);
        }
        snprintf(prefix, sizeof(prefix), "[%s] ", vm && vm->name ? vm->name : "lua");
        ebb_log_text(EBB_LOG_INFO, prefix, s, len);
    }
    return 0;
}

/* warn(msg1, ...)                                              [-0, +0, e]
 * One log line, cut as print's, for the whole message. Lua's warn hands
 * each piece to the warning function, which logged a line per piece: as
 * many lines as the script passes arguments (200,000 a call, in C, with no
 * budget). A message of one piece starting with '@' is a control message
 * (lua.c's "@on", "@off"), which the log ignores. */
static int l_warn(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    int n = lua_gettop(L);
    luaL_Buffer b;
    size_t len, total = 0;

    luaL_checkstring(L, 1);
    for (int i = 2; i <= n; i++)
        luaL_checkstring(L, i);     /* as Lua's: every piece a string, or nothing */
    if (n == 1 && lua_tostring(L, 1)[0] == '@')
        return 0;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n && total <= PRINT_MAX; i++) {
        const char *s = lua_tolstring(L, i, &len);
        if (len > PRINT_MAX + 1 - total)
            len = PRINT_MAX + 1 - total;
        luaL_addlstring(&b, s, len);
        total += len;
    }
    luaL_pushresult(&b);
    {
        const char *s = lua_tolstring(L, -1, &len);
        ebb_log(EBB_LOG_WARN, "[%s] warning: %.*s%s", vm && vm->name ? vm->name : "lua",
                (int)(len > PRINT_MAX ? PRINT_MAX : len), s, len > PRINT_MAX ? " [cut]" : "");
    }
    return 0;
}

/* ---- parsing --------------------------------------------------------------- */

/* Lua's parser is C: no hook fires in it, and its time is not linear in
 * what it reads (a block closed with 32,767 gotos pending, a chunk of a
 * million "do end" behind them: 7.7 MB parsed for 12.5 s). So every chunk,
 * the engine's and a script's, is handed to the parser PARSE_PIECE bytes
 * at a time by piece_reader, which stops the parse once the budget has
 * expired; the caller then stops the call (ebb__vm_check). What one piece
 * can cost is bounded by the sizes: the parser keeps at most 32,767
 * pending gotos and labels (Lua's limit), and a chunk at most 32,768
 * distinct names, strings and numbers (PARSE_BLOCK_MAX). load() from a
 * script reads at most LOAD_MAX bytes of source, which keeps its longest
 * step (resolving every goto of a block at once) under 50 ms. */
#define PARSE_PIECE 512
/* How much of the text before a piece is read with it for `object`. */
#define OBJECT_TAIL 24
#define LOAD_MAX ((size_t)64 << 10)

/* What the parser reads: a string, or what a script's reader function
 * returns, PARSE_PIECE bytes at a time. */
struct parse_src {
    struct ebb_vm *vm;
    const char *s;                  /* the part not handed over yet */
    size_t left;
    int fn;                         /* stack index of the reader function, or 0 */
    int slot;                       /* stack index keeping its last string */
    size_t total, max;              /* bytes handed over, at most max */
    char tail[OBJECT_TAIL];         /* the last bytes handed over (names_object) */
    size_t ntail;
};

static bool word_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool lua_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool ebb__lua_names_object(const char *s, size_t n)
{
    for (const char *p = s, *end = s + n; (p = memmem(p, (size_t)(end - p), "object", 6)) != NULL; p++) {
        const char *a = p, *z = p + 6;
        if ((a > s && word_char(a[-1])) || (z < end && word_char(*z)))
            continue;
        while (a > s && lua_space(a[-1]))
            a--;
        while (z < end && lua_space(*z))
            z++;
        /* x.object, not x.object(...) / x.object{...} / x.object"..." (a
         * call: A.object builds an argument schema), not a..object */
        if (a > s && a[-1] == '.' && (a - 1 == s || a[-2] != '.') &&
            (z == end || (*z != '(' && *z != '{' && *z != '"' && *z != '\'' && *z != '[')))
            return true;
        /* x["object"], x['object'] */
        if (p > s && (p[-1] == '"' || p[-1] == '\'') && p + 6 < end && p[6] == p[-1]) {
            a = p - 1;
            z = p + 7;
            while (a > s && lua_space(a[-1]))
                a--;
            while (z < end && lua_space(*z))
                z++;
            if (a > s && a[-1] == '[' && z < end && *z == ']')
                return true;
        }
    }
    return false;
}

/* The piece about to be handed to the parser names `object` as a field
 * (ebb__lua_names_object): the engine keeps objects' text. Read with the
 * end of the pieces before it, so a name cut in two is seen. */
static void note_object(struct parse_src *r, const char *piece, size_t n)
{
    char join[2 * OBJECT_TAIL];
    size_t k = n < OBJECT_TAIL ? n : OBJECT_TAIL;

    if (r->vm->engine == NULL || r->vm->engine->reads_object)
        return;
    memcpy(join, r->tail, r->ntail);
    memcpy(join + r->ntail, piece, k);
    if (ebb__lua_names_object(join, r->ntail + k) || ebb__lua_names_object(piece, n)) {
        r->vm->engine->reads_object = true;
        return;
    }
    /* the tail: the last OBJECT_TAIL bytes of everything handed over */
    if (n >= OBJECT_TAIL) {
        memcpy(r->tail, piece + n - OBJECT_TAIL, OBJECT_TAIL);
        r->ntail = OBJECT_TAIL;
    } else {
        size_t keep = r->ntail + n > OBJECT_TAIL ? OBJECT_TAIL - n : r->ntail;
        memmove(r->tail, r->tail + r->ntail - keep, keep);
        memcpy(r->tail + keep, piece, n);
        r->ntail = keep + n;
    }
}

/* lua_Reader, run inside lua_load's protected parser: an error raised here
 * makes the parse fail (and what was parsed is dropped). */
static const char *piece_reader(lua_State *L, void *ud, size_t *size)
{
    struct parse_src *r = ud;
    size_t n;

    if (r->vm->expired)
        ebb__vm_stop(L);            /* raises: the parser cannot yield */
    if (r->left == 0 && r->fn != 0) {
        bool parsing = r->vm->parsing;
        /* the script's function runs as any of its code does, its
         * blocks its own (the parser's bound is not for it) */
        r->vm->parsing = false;
        luaL_checkstack(L, 2, "too many nested functions");
        lua_pushvalue(L, r->fn);
        lua_call(L, 0, 1);
        r->vm->parsing = parsing;
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            r->fn = 0;
        } else {
            if (!lua_isstring(L, -1))
                luaL_error(L, "reader function must return a string");
            lua_replace(L, r->slot);
            r->s = lua_tolstring(L, r->slot, &r->left);
            if (r->left == 0)
                r->fn = 0;          /* an empty piece ends the chunk, as in Lua */
        }
    }
    if (r->left == 0) {
        *size = 0;
        return NULL;
    }
    n = r->left < PARSE_PIECE ? r->left : PARSE_PIECE;
    if (n > r->max - r->total) {
        lua_pushfstring(L, "chunk larger than %d KiB: load() takes at most that much source",
                        (int)(r->max >> 10));
        lua_error(L);
    }
    note_object(r, r->s, n);
    r->total += n;
    r->s += n;
    r->left -= n;
    *size = n;
    return r->s - n;
}

/* "@file" and "=name" as they are; a source chunk's first line, cut. */
static void chunk_display(char *out, size_t n, const char *chunkname)
{
    size_t line = strcspn(chunkname, "\r\n");

    if (line > 40)
        line = 40;
    if (chunkname[0] == '@' || chunkname[0] == '=')
        snprintf(out, n, "%s", chunkname + 1);
    else
        snprintf(out, n, "[string \"%.*s%s\"]", (int)line, chunkname,
                 chunkname[line] != '\0' ? "..." : "");
}

/* Parse the text from r: its function on top of L (LUA_OK), or the
 * message and Lua's status. The caller then calls ebb__vm_check: a parse
 * the budget stopped fails here, and the call must stop too.
 *                                                            [-0, +1, -] */
static int parse(lua_State *L, struct parse_src *r, const char *chunkname)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    bool parsing = vm->parsing, refused = vm->parse_refused;
    int st;

    vm->parsing = true;
    vm->parse_refused = false;
    st = lua_load(L, piece_reader, r, chunkname, "t");
    if (st == LUA_ERRMEM && vm->parse_refused) {
        char name[64];
        chunk_display(name, sizeof(name), chunkname);
        lua_pop(L, 1);
        lua_pushfstring(L, "%s: too many distinct names, strings and numbers in one chunk (at "
                           "most %d)", name, PARSE_CONSTANTS_MAX);
        st = LUA_ERRSYNTAX;
    }
    vm->parsing = parsing;
    vm->parse_refused = refused;
    return st;
}

/* load(chunk [, chunkname [, mode [, env]]])                  [-0, +1|2, -]
 * As Lua's, text only (the mode is always "t"), at most LOAD_MAX bytes of
 * source, parsed under the budget: a parse the budget stops stops the
 * call. */
static int l_load(lua_State *L)
{
    struct parse_src r = { .vm = ebb__vm_of(L), .max = LOAD_MAX };
    int env = !lua_isnone(L, 4) ? 4 : 0, st;
    const char *s, *name;
    size_t len;

    if ((s = lua_tolstring(L, 1, &len)) != NULL) {
        name = luaL_optstring(L, 2, s);
        if (len > LOAD_MAX) {
            luaL_pushfail(L);
            lua_pushfstring(L, "chunk of %I bytes: load() takes at most %d KiB of source",
                            (LUAI_UACINT)len, (int)(LOAD_MAX >> 10));
            return 2;
        }
        r.s = s;
        r.left = len;
    } else {
        name = luaL_optstring(L, 2, "=(load)");
        luaL_checktype(L, 1, LUA_TFUNCTION);
        lua_settop(L, 5);           /* 5: the reader function's last string */
        r.fn = 1;
        r.slot = 5;
    }
    st = parse(L, &r, name);
    ebb__vm_check(L);
    if (st != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (env != 0) {
        lua_pushvalue(L, env);
        if (!lua_setupvalue(L, -2, 1))
            lua_pop(L, 1);
    }
    return 1;
}

static bool valid_module_name(const char *s)
{
    if (*s == '\0' || *s == '.')
        return false;
    for (const char *p = s; *p; p++) {
        if (!(*p == '_' || *p == '.' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9')))
            return false;
        if (p[0] == '.' && p[1] == '.')
            return false;
    }
    return true;
}

/* A module's source: a regular file of at most EBB_MAX_SCRIPT bytes, read
 * by ebb_file_read, the one reader of files a user names (it opens
 * without waiting and refuses anything but a regular file: a FIFO named
 * helper/init.lua made require wait for a writer for ever). NULL with the
 * reason in err. */
static char *read_file(const char *path, size_t *len, struct ebb_error *err)
{
    char *buf;

    return ebb_file_read(path, EBB_MAX_SCRIPT, &buf, len, err) == 0 ? buf : NULL;
}

/* Look for name (dots as slashes) under root: root/a/b.lua, then
 * root/a/b/init.lua. The first that exists is the module, whatever it is
 * (stat opens nothing); read_file refuses it unless it is a file. */
static char *find_module(const char *root, const char *name, char *path, size_t plen)
{
    struct stat st;
    char rel[256];
    size_t i;

    for (i = 0; name[i] && i < sizeof(rel) - 1; i++)
        rel[i] = name[i] == '.' ? '/' : name[i];
    rel[i] = '\0';
    snprintf(path, plen, "%s/%s.lua", root, rel);
    if (stat(path, &st) == 0)
        return path;
    snprintf(path, plen, "%s/%s/init.lua", root, rel);
    if (stat(path, &st) == 0)
        return path;
    return NULL;
}

static int remember_module(struct ebb_vm *vm, const char *path, const char *src, size_t len)
{
    struct ebb_vm_module *v = realloc(vm->mods, (vm->nmods + 1) * sizeof(*v));

    if (v == NULL)
        return EBB_ENOMEM;
    vm->mods = v;
    if ((v[vm->nmods].path = strdup(path)) == NULL)
        return EBB_ENOMEM;
    v[vm->nmods++].hash = ebb_fnv64(EBB_FNV64_INIT, src, len);
    return 0;
}

bool ebb__vm_modules_unchanged(const struct ebb_vm *vm)
{
    for (size_t i = 0; i < vm->nmods; i++) {
        size_t len;
        char *src = read_file(vm->mods[i].path, &len, NULL);
        bool same = src != NULL && ebb_fnv64(EBB_FNV64_INIT, src, len) == vm->mods[i].hash;
        free(src);
        if (!same)
            return false;
    }
    return true;
}

int ebb__vm_require(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    const char *name = luaL_checkstring(L, 1);
    char path[1024], lib[1024], chunk[1100];
    struct ebb_error ferr = { 0 };
    char *src;
    size_t len;
    const char *found = NULL;

    lua_settop(L, 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);   /* 2 */
    if (lua_getfield(L, 2, name) != LUA_TNIL)
        return 1;
    lua_pop(L, 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);  /* 3 */
    if (lua_getfield(L, 3, name) != LUA_TNIL) {                 /* 4 */
        lua_pushstring(L, name);
        lua_call(L, 1, 1);
    } else {
        lua_pop(L, 1);
        if (!valid_module_name(name))
            return luaL_error(L, "module name '%s' is not allowed", name);
        bool user = false;
        if (vm->home) {
            snprintf(lib, sizeof(lib), "%s/lua", vm->home);
            found = find_module(lib, name, path, sizeof(path));
        }
        for (size_t i = 0; found == NULL && vm->policy_dirs && vm->policy_dirs[i]; i++)
            user = (found = find_module(vm->policy_dirs[i], name, path, sizeof(path))) != NULL;
        if (found == NULL)
            return luaL_error(L, "module '%s' not found (searched lua/ and the policy "
                                 "directories)", name);
        if ((src = read_file(path, &len, &ferr)) == NULL)
            return luaL_error(L, "cannot read module '%s' from %s: %s", name, path, ferr.msg);
        if (user && remember_module(vm, path, src, len) != 0) {
            free(src);
            return luaL_error(L, "out of memory");
        }
        snprintf(chunk, sizeof(chunk), "@%s", path);
        struct parse_src r = { .vm = vm, .s = src, .left = len, .max = SIZE_MAX };
        int st = parse(L, &r, chunk);
        free(src);
        ebb__vm_check(L);
        if (st != LUA_OK)
            return lua_error(L);
        lua_pushstring(L, name);
        lua_call(L, 1, 1);
    }
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, 2, name);
    return 1;
}

static int open_sandbox(lua_State *L)
{
    static const char *const removed[] = { "dofile", "loadfile", "collectgarbage", NULL };

    luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
    luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
    ebb__lua_open_string(L);
    luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
    ebb__lua_open_table(L);
    luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
    luaL_requiref(L, LUA_UTF8LIBNAME, luaopen_utf8, 1);
    luaL_requiref(L, LUA_COLIBNAME, luaopen_coroutine, 1);
    ebb__lua_open_coroutine(L);
    lua_settop(L, 0);

    /* deterministic random numbers: simulations must repeat */
    lua_getglobal(L, "math");
    lua_getfield(L, -1, "randomseed");
    lua_pushinteger(L, 1);
    lua_call(L, 1, 0);
    lua_pop(L, 1);

    lua_pushglobaltable(L);
    for (int i = 0; removed[i]; i++) {
        lua_pushnil(L);
        lua_setfield(L, -2, removed[i]);
    }
    lua_pushcfunction(L, l_load);
    lua_setfield(L, -2, "load");
    lua_pushcfunction(L, l_print);
    lua_setfield(L, -2, "print");
    lua_pushcfunction(L, l_warn);
    lua_setfield(L, -2, "warn");
    lua_pushcfunction(L, ebb__vm_require);
    lua_setfield(L, -2, "require");
    lua_pushcfunction(L, l_setmetatable);
    lua_setfield(L, -2, "setmetatable");
    lua_pushcfunction(L, l_getmetatable);
    lua_setfield(L, -2, "getmetatable");
    lua_pushcfunction(L, l_xpcall);
    lua_setfield(L, -2, "xpcall");


    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, l_strict_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_strict_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);               /* the globals' rules are not the script's to change */
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
    return 0;
}

static void warnf(void *ud, const char *msg, int tocont)
{
    (void)ud;
    (void)tocont;
    ebb_log(EBB_LOG_WARN, "lua: %s", msg);
}

int ebb__vm_create(const struct ebb_vm_opts *opts, struct ebb_vm **out)
{
    struct ebb_vm *vm;
    int rc = EBB_ENOMEM;

    if (opts == NULL || out == NULL)
        return EBB_EINVAL;
    if ((rc = ebb__budget_start()) != 0)
        return rc;
    rc = EBB_ENOMEM;
    if ((vm = calloc(1, sizeof(*vm))) == NULL)
        return EBB_ENOMEM;
    vm->engine = opts->engine;
    vm->mem_limit = opts->mem_limit ? opts->mem_limit : (size_t)64 << 20;
    vm->budget_ns = opts->budget_ns ? opts->budget_ns : 10000000000ull;
    vm->policy_dirs = opts->policy_dirs;
    vm->co_ref = LUA_NOREF;
    if ((vm->name = strdup(opts->name ? opts->name : "lua")) == NULL)
        goto fail;
    if (opts->home && (vm->home = strdup(opts->home)) == NULL)
        goto fail;
    if ((vm->L = lua_newstate(vm_alloc, vm)) == NULL)
        goto fail;
    *(struct ebb_vm **)lua_getextraspace(vm->L) = vm;
    /* A cycle makes a Pod userdata per pod it iterates, nearly all dead by
     * the next one: the generational collector frees them young, where
     * the incremental one walks the whole heap to find them. */
    lua_gc(vm->L, LUA_GCGEN, 0, 0);
    lua_setwarnf(vm->L, warnf, vm);
    lua_pushcfunction(vm->L, open_sandbox);
    if (lua_pcall(vm->L, 0, 0, 0) != LUA_OK)
        goto fail;
    *out = vm;
    return 0;
fail:
    ebb__vm_destroy(vm);
    return rc;
}

void ebb__vm_destroy(struct ebb_vm *vm)
{
    if (vm == NULL)
        return;
    if (vm->L)
        lua_close(vm->L);
    for (size_t i = 0; i < vm->nmods; i++)
        free(vm->mods[i].path);
    free(vm->mods);
    free(vm->name);
    free(vm->home);
    free(vm);
}

/* "[string "x"]:12: msg" / "/path/file.lua:12: msg" -> file and line. */
static void split_location(const char *msg, struct ebb_error *err, const char *fallback_file)
{
    const char *p = msg, *colon;

    snprintf(err->file, sizeof(err->file), "%s", fallback_file ? fallback_file : "");
    err->line = 0;
    while ((colon = strchr(p, ':')) != NULL) {
        char *end;
        long line = strtol(colon + 1, &end, 10);
        if (end != colon + 1 && *end == ':' && line > 0) {
            size_t flen = (size_t)(colon - msg);
            if (flen < sizeof(err->file)) {
                memcpy(err->file, msg, flen);
                err->file[flen] = '\0';
            }
            err->line = (int)line;
            return;
        }
        p = colon + 1;
    }
}

static int fail_from_lua(struct ebb_vm *vm, lua_State *from, int st, struct ebb_error *err,
                         const char *file)
{
    const char *msg = lua_tostring(from, -1);
    int code = EBB_ESCRIPT;

    if (st == LUA_ERRMEM) {
        msg = "memory limit exceeded";
        code = EBB_ELIMIT;
        ebb_error_set(err, code, file, 0, NULL, "memory limit of %zu MiB exceeded",
                      vm->mem_limit >> 20);
        return code;
    }
    if (vm->expired)
        code = EBB_ELIMIT;
    if (msg == NULL)
        msg = lua_isnil(from, -1) ? "error with no message" : luaL_typename(from, -1);
    if (err != NULL) {
        ebb_error_set(err, code, NULL, 0, NULL, "%s", msg);
        split_location(msg, err, file);
    }
    return code;
}

struct chunk {
    const char *src, *name;
    size_t len;
};

/* [chunk] -> its function | nil, message, status             [-1, +1|3, -]
 * The parse of ebb__vm_dochunk, run as a call: under the budget (and the
 * memory cap) as any code of the script. */
static int l_parse_chunk(lua_State *L)
{
    const struct chunk *c = lua_touserdata(L, 1);
    struct parse_src r = { .vm = ebb__vm_of(L), .s = c->src, .left = c->len, .max = SIZE_MAX };
    int st = parse(L, &r, c->name);

    ebb__vm_check(L);
    if (st == LUA_OK)
        return 1;
    lua_pushnil(L);
    lua_insert(L, -2);
    lua_pushinteger(L, st);
    return 3;
}

int ebb__vm_dochunk(struct ebb_vm *vm, const char *src, size_t len, const char *chunkname,
                    struct ebb_error *err)
{
    lua_State *L = vm->L;
    struct chunk c = { src, chunkname, len };
    const char *file = chunkname[0] == '@' ? chunkname + 1 : chunkname;
    int top = lua_gettop(L), rc;

    lua_pushcfunction(L, l_parse_chunk);
    lua_pushlightuserdata(L, &c);
    if ((rc = ebb__vm_call(vm, 1, 3, err)) != 0) {
        /* only the budget stops a parse: say so, not where in C */
        if (rc == EBB_ELIMIT)
            ebb_error_set(err, rc, file, 0, NULL, "parsing %zu bytes took longer than the time "
                          "budget of %d ms", len, ebb__budget_ms(vm));
        return rc;
    }
    if (lua_isnil(L, -3)) {
        int st = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        rc = fail_from_lua(vm, L, st == LUA_ERRMEM ? LUA_ERRMEM : LUA_ERRSYNTAX, err, file);
        lua_settop(L, top);
        return rc;
    }
    lua_pop(L, 2);
    return ebb__vm_call(vm, 0, 1, err);
}

/* The error of a call stopped at its budget: where the script was (its
 * innermost line of Lua) and the traceback of the abandoned coroutine. */
static int budget_error(struct ebb_vm *vm, lua_State *co, struct ebb_error *err)
{
    lua_State *L = vm->L;
    char where[300] = "";
    lua_Debug ar;

    for (int level = 0; lua_getstack(co, level, &ar); level++)
        if (lua_getinfo(co, "Sl", &ar) && ar.currentline > 0) {
            snprintf(where, sizeof(where), "%s:%d: ", ar.short_src, ar.currentline);
            break;
        }
    lua_pushfstring(L, "%stime budget of %d ms exceeded", where, ebb__budget_ms(vm));
    luaL_traceback(L, co, lua_tostring(L, -1), 0);
    if (err != NULL) {
        ebb_error_set(err, EBB_ELIMIT, NULL, 0, NULL, "%s", lua_tostring(L, -1));
        split_location(lua_tostring(L, -1), err, vm->name);
    }
    lua_pop(L, 2);
    return EBB_ELIMIT;
}

/* Run (or continue) coroutine `co` under the budget. On LUA_OK the results
 * are moved to vm->L; on a yield, `allow_yield` decides whether that is an
 * error or a suspension (the caller keeps the coroutine). */
static int run_co(struct ebb_vm *vm, lua_State *co, int nargs, int nres, bool allow_yield,
                  struct ebb_error *err)
{
    lua_State *L = vm->L, *prev_call = vm->call_co, *prev_running;
    int st, got = 0, rc;
    bool was_on, engine_yield;

    if (vm->depth == 0) {
        vm->expired = 0;
        vm->stopped = false;
        ebb__budget_kept_cycle(vm);
    }
    ebb__budget_count_call();   /* calls into Lua (each arms a budget, unless off) */
    if (vm->budget_ns != UINT64_MAX && (rc = ebb__budget_arm(vm, co)) != 0)
        return ebb_error_set(err, rc, NULL, 0, NULL, "calls nested too deeply");
    vm->depth++;
    was_on = vm->limit_on;
    vm->limit_on = true;
    vm->call_co = co;
    vm->engine_yield = false;
    prev_running = ebb__budget_enter(vm, co);
    st = lua_resume(co, L, nargs, &got);
    ebb__budget_running(vm, prev_running);
    vm->call_co = prev_call;
    vm->limit_on = was_on;
    vm->depth--;
    if (vm->budget_ns != UINT64_MAX)
        ebb__budget_disarm();
    lua_sethook(co, NULL, 0, 0);
    engine_yield = st == LUA_YIELD && vm->engine_yield;
    vm->engine_yield = false;
    /* Stopped at its budget, or out of time on the way out of an error: the
     * coroutine is left as it is, its __close and handlers never run. */
    if (vm->stopped || (vm->expired && st != LUA_OK && !engine_yield)) {
        vm->overran = true;
        rc = budget_error(vm, co, err);
        if (vm->depth == 0)
            vm->expired = 0;
        return rc;
    }
    if (st == LUA_YIELD) {
        lua_pop(co, got);
        if (!engine_yield)
            /* a script's coroutine.yield with no coroutine of its own to
             * return to: the call cannot go on (and is abandoned as it is:
             * closing it would run its __close outside the budget) */
            return ebb_error_set(err, EBB_ESCRIPT, vm->name, 0, NULL,
                                 "coroutine.yield outside a coroutine: a strategy's own "
                                 "function cannot yield");
        if (allow_yield)
            return EBB_VM_YIELDED;
        return ebb_error_set(err, EBB_ESCRIPT, vm->name, 0, NULL,
                             "evictions cannot wait here (called from a filter, a sort or "
                             "another callback)");
    }
    if (st != LUA_OK) {
        if (st != LUA_ERRMEM && lua_type(co, -1) == LUA_TSTRING) {
            luaL_traceback(co, co, lua_tostring(co, -1), 0);
            lua_remove(co, -2);
        }
        return fail_from_lua(vm, co, st, err, vm->name);
    }
    if (nres != LUA_MULTRET) {
        if (got > nres)
            lua_pop(co, got - nres);
        for (; got < nres; got++)
            lua_pushnil(co);
    }
    lua_xmove(co, L, got);
    return 0;
}

int ebb__vm_call(struct ebb_vm *vm, int nargs, int nres, struct ebb_error *err)
{
    lua_State *L = vm->L, *co;
    int base = lua_gettop(L) - nargs, rc;

    /* A fresh coroutine: the budget hook goes on exactly the thread that
     * runs the script. */
    co = lua_newthread(L);
    lua_insert(L, base);                    /* [co, fn, args...] */
    lua_xmove(L, co, nargs + 1);
    rc = run_co(vm, co, nargs, nres, false, err);
    if (rc != 0) {
        lua_settop(L, base - 1);
        return rc;
    }
    lua_remove(L, base);                     /* the coroutine */
    return 0;
}

int ebb__vm_start(struct ebb_vm *vm, int nargs, int nres, struct ebb_error *err)
{
    lua_State *L = vm->L, *co;
    int base = lua_gettop(L) - nargs, rc;

    if (vm->co_ref != LUA_NOREF && vm->co_ref != 0)
        return ebb_error_set(err, EBB_ESTATE, vm->name, 0, NULL, "a call is already waiting");
    co = lua_newthread(L);
    lua_insert(L, base);
    lua_xmove(L, co, nargs + 1);
    rc = run_co(vm, co, nargs, nres, true, err);
    if (rc == EBB_VM_YIELDED) {
        lua_pushvalue(L, base);
        vm->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
        lua_settop(L, base - 1);
        return rc;
    }
    if (rc != 0) {
        lua_settop(L, base - 1);
        return rc;
    }
    lua_remove(L, base);
    return 0;
}

int ebb__vm_resume(struct ebb_vm *vm, int nres, struct ebb_error *err)
{
    lua_State *L = vm->L, *co;
    int rc;

    if (vm->co_ref == LUA_NOREF || vm->co_ref == 0)
        return ebb_error_set(err, EBB_ESTATE, vm->name, 0, NULL, "no call is waiting");
    lua_rawgeti(L, LUA_REGISTRYINDEX, vm->co_ref);
    co = lua_tothread(L, -1);
    lua_pop(L, 1);                           /* still anchored by the ref */
    rc = run_co(vm, co, 0, nres, true, err);
    if (rc == EBB_VM_YIELDED)
        return rc;
    luaL_unref(L, LUA_REGISTRYINDEX, vm->co_ref);
    vm->co_ref = LUA_NOREF;
    return rc;
}

bool ebb__vm_waiting(const struct ebb_vm *vm)
{
    return vm->co_ref != LUA_NOREF && vm->co_ref != 0;
}
