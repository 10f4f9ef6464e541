/* Shared by test_lua_string and test_lua_table: run a section of
 * engine/test/stdlib_cases.lua in a stock Lua state and in a sandbox and
 * compare the two outputs line by line (the sandbox's own library functions
 * must answer as Lua's do). */
#ifndef EBB_TEST_STDLIB_DIFF_H
#define EBB_TEST_STDLIB_DIFF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lauxlib.h>
#include <lualib.h>

#include "lua/lua_int.h"

#define CASES "engine/test/stdlib_cases.lua"

static char *read_cases(size_t *len)
{
    FILE *f = fopen(CASES, "rb");
    char *buf;
    long n;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* A copy of the string on top of L, its length in *len: the output may
 * hold NUL bytes, and every byte of it is compared. */
static char *take_output(lua_State *L, size_t *len)
{
    const char *s = lua_tolstring(L, -1, len);
    char *out = malloc(*len + 1);

    assert_non_null(s);
    assert_non_null(out);
    memcpy(out, s, *len);
    out[*len] = '\0';
    return out;
}

/* The section's output from Lua's own libraries. */
static char *run_stock(const char *section, size_t *outlen)
{
    lua_State *L = luaL_newstate();
    size_t len;
    char *src = read_cases(&len), *out;

    luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
    luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
    luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
    luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
    lua_settop(L, 0);
    if (luaL_loadbuffer(L, src, len, "=cases") != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
        print_error("stock: %s\n", lua_tostring(L, -1));
        fail();
    }
    lua_pushstring(L, section);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        print_error("stock: %s\n", lua_tostring(L, -1));
        fail();
    }
    out = take_output(L, outlen);
    lua_close(L);
    free(src);
    return out;
}

/* The section's output from a sandbox: the library functions of vm.c. */
static char *run_sandbox(const char *section, size_t *outlen)
{
    struct ebb_vm_opts o = { .name = "cases", .mem_limit = (size_t)1 << 30,
                             .budget_ns = 600000000000ull };
    struct ebb_error err = { 0 };
    struct ebb_vm *vm = NULL;
    size_t len;
    char *src = read_cases(&len), *out;

    assert_int_equal(ebb__vm_create(&o, &vm), 0);
    if (ebb__vm_dochunk(vm, src, len, "=cases", &err) != 0) {
        print_error("sandbox: %s\n", err.msg);
        fail();
    }
    lua_pushstring(vm->L, section);
    if (ebb__vm_call(vm, 1, 1, &err) != 0) {
        print_error("sandbox: %s\n", err.msg);
        fail();
    }
    out = take_output(vm->L, outlen);
    ebb__vm_destroy(vm);
    free(src);
    return out;
}

/* The sandbox's line says what Lua's says, to the byte; an error may add,
 * in parentheses, what was wrong ("... => false <Lua's message> (why)"). */
static bool same_line(const char *lua, size_t ll, const char *sbx, size_t ls)
{
    static const char failed[] = " => false ";

    if (ll == ls)
        return memcmp(lua, sbx, ll) == 0;
    return ls > ll + 3 && memcmp(lua, sbx, ll) == 0 && sbx[ll] == ' ' && sbx[ll + 1] == '(' &&
           sbx[ls - 1] == ')' && memmem(lua, ll, failed, sizeof(failed) - 1) != NULL;
}

/* Both agree on every line, to the last byte (NUL bytes included: a C
 * string would stop the comparison at the first one); the first line that
 * differs is printed. */
static void same_as_lua(const char *section)
{
    size_t na, nb;
    char *want = run_stock(section, &na), *got = run_sandbox(section, &nb);
    const char *a = want, *b = got, *ea = want + na, *eb = got + nb;
    size_t lines = 0;
    bool same = true;

    while (a < ea || b < eb) {
        const char *nla = memchr(a, '\n', (size_t)(ea - a)), *nlb = memchr(b, '\n', (size_t)(eb - b));
        size_t la = nla ? (size_t)(nla - a) : (size_t)(ea - a);
        size_t lb = nlb ? (size_t)(nlb - b) : (size_t)(eb - b);
        if (!same_line(a, la, b, lb)) {
            print_error("%s: line %zu differs\n  lua:     %.*s\n  sandbox: %.*s\n", section, lines + 1,
                        (int)la, a, (int)lb, b);
            same = false;
            break;
        }
        lines++;
        a += la + (a + la < ea);
        b += lb + (b + lb < eb);
    }
    free(want);
    free(got);
    assert_true(same);
    assert_true(lines > 0);
}

#endif
