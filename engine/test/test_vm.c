/* vm.c: the parse of every chunk under the budget of a call (plugin files
 * and modules through ebb__vm_dochunk and require, load() from a script),
 * its caps, and require's refusal of files that are not regular files;
 * under ASan and LeakSanitizer, error paths included. How soon a parse
 * stops is spec/lua/sandbox_loops_spec.lua's (never a timed test here). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <cmocka.h>
#include <lauxlib.h>

#include "lua/lua_int.h"

static struct ebb_vm *sandbox(uint64_t budget_ms, char *const *dirs)
{
    struct ebb_vm_opts o = { .name = "test", .mem_limit = (size_t)64 << 20,
                             .budget_ns = budget_ms * 1000000ull, .policy_dirs = dirs };
    struct ebb_vm *vm = NULL;

    assert_int_equal(ebb__vm_create(&o, &vm), 0);
    return vm;
}

/* src run in vm: 0 and its first result as a string in out, or the error
 * code and message. */
static int run(struct ebb_vm *vm, const char *src, size_t len, char *out, size_t n)
{
    struct ebb_error err = { 0 };
    int rc = ebb__vm_dochunk(vm, src, len, "@chunk.lua", &err);

    if (rc == 0) {
        const char *s = luaL_tolstring(vm->L, -1, NULL);
        snprintf(out, n, "%s", s);
        lua_pop(vm->L, 2);
    } else {
        snprintf(out, n, "%s", err.msg);
    }
    return rc;
}

/* 32,000 labels and backward gotos to the last, `size` bytes, after
 * `head`: each goto looks through every label. */
static char *label_bomb(size_t size, const char *head, size_t *len)
{
    char *s = malloc(size + 64);
    size_t k;

    assert_non_null(s);
    k = (size_t)snprintf(s, size, "%s", head);
    for (int i = 1; i <= 32000; i++)
        k += (size_t)snprintf(s + k, size - k, "::l%d:: do end ", i);
    while (k + 12 <= size) {
        memcpy(s + k, "goto l32000 ", 12);
        k += 12;
    }
    s[k] = '\0';
    *len = k;
    return s;
}

static void plugin_file_parse_stops_at_budget(void **state)
{
    struct ebb_vm *vm = sandbox(200, NULL);
    size_t len;
    char *src = label_bomb((size_t)8 << 20, "do return 1 end ", &len), out[512];

    (void)state;
    assert_int_equal(run(vm, src, len, out, sizeof(out)), EBB_ELIMIT);
    assert_non_null(strstr(out, "took longer than the time budget of 200 ms"));
    /* the state is usable after a stopped parse */
    assert_int_equal(run(vm, "return 6 * 7", 12, out, sizeof(out)), 0);
    assert_string_equal(out, "42");
    free(src);
    ebb__vm_destroy(vm);
}

static void syntax_errors_name_file_and_line(void **state)
{
    struct ebb_vm *vm = sandbox(1000, NULL);
    struct ebb_error err = { 0 };
    const char *src = "local x = 1\nx = = 2\n";

    (void)state;
    assert_int_equal(ebb__vm_dochunk(vm, src, strlen(src), "@dir/p.lua", &err), EBB_ESCRIPT);
    assert_string_equal(err.file, "dir/p.lua");
    assert_int_equal(err.line, 2);
    assert_null(strstr(err.msg, "traceback"));
    assert_int_equal(lua_gettop(vm->L), 0);
    ebb__vm_destroy(vm);
}

static void colliding_constants_refused(void **state)
{
    struct ebb_vm *vm = sandbox(60000, NULL);
    size_t cap = (size_t)2 << 20, k = 0;
    char *src = malloc(cap), out[512];
    const long long m = (1ll << 17) - 1;

    (void)state;
    assert_non_null(src);
    k += (size_t)snprintf(src + k, cap - k, "local x\n");
    for (long long i = 1; i <= (1 << 16) + 1; i++)
        k += (size_t)snprintf(src + k, cap - k, "x = %lld\n", i * m);
    assert_int_equal(run(vm, src, k, out, sizeof(out)), EBB_ESCRIPT);
    assert_non_null(strstr(out, "chunk.lua: too many distinct names, strings and numbers in one "
                                "chunk (at most 32768)"));
    free(src);
    ebb__vm_destroy(vm);
}

static void load_caps_and_semantics(void **state)
{
    static const struct {
        const char *src, *result;
    } cases[] = {
        { "return select(2, load(string.rep(' ', 65537)))",
          "chunk of 65537 bytes: load() takes at most 64 KiB of source" },
        { "return load(string.rep(' ', 65528) .. 'return 7')()", "7" },
        { "local n = 0 return select(2, load(function() n = n + 1 return n < 100 and "
          "string.rep('-', 1000) or nil end))",
          "chunk larger than 64 KiB: load() takes at most that much source" },
        { "return select(2, load(function() error('mine') end))", "chunk.lua:1: mine" },
        { "return select(2, load(function() return 1 < 2 end))", "reader function must return a string" },
        { "return load('return ...', '=x', 'b')(5)", "5" },
        { "return load('return y', '=x', 't', { y = 'env' })()", "env" },
        { "return select(2, load('return +', '=named'))", "named:1: unexpected symbol near '+'" },
        { "return select(2, load(string.dump(function() end)))",
          "attempt to load a binary chunk (mode is 't')" },
    };
    struct ebb_vm *vm = sandbox(5000, NULL);
    char out[512];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = run(vm, cases[i].src, strlen(cases[i].src), out, sizeof(out));
        if (rc != 0 || strstr(out, cases[i].result) == NULL) {
            print_error("%s\n  gave %s (%d)\n  expected %s\n", cases[i].src, out, rc, cases[i].result);
            fail();
        }
    }
    ebb__vm_destroy(vm);
}

static void load_stops_the_call(void **state)
{
    struct ebb_vm *vm = sandbox(100, NULL);
    const char *src = "local f, e = load(function() while true do end end) return 'survived'";
    char out[512];

    (void)state;
    assert_int_equal(run(vm, src, strlen(src), out, sizeof(out)), EBB_ELIMIT);
    assert_non_null(strstr(out, "time budget of 100 ms exceeded"));
    ebb__vm_destroy(vm);
}

/* A policy directory with `rel` made by `make` ("fifo", "dir", "file"). */
static void require_case(const char *rel, const char *make, const char *expect)
{
    char dir[128], path[256], sub[256], out[512];
    char *dirs[2] = { NULL, NULL };
    struct ebb_vm *vm;
    const char *src = "return require('helper')";
    int rc;

    snprintf(dir, sizeof(dir), "%s/ebb-vm-XXXXXX", P_tmpdir);
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof(sub), "%s/helper", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    if (strcmp(make, "fifo") == 0) {
        assert_int_equal(mkfifo(path, 0600), 0);
    } else if (strcmp(make, "dir") == 0) {
        assert_int_equal(mkdir(path, 0700), 0);
    } else {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs("return 'helper ok'\n", f);
        fclose(f);
    }
    dirs[0] = dir;
    vm = sandbox(1000, dirs);
    rc = run(vm, src, strlen(src), out, sizeof(out));
    if (strstr(out, expect) == NULL) {
        print_error("require with %s %s: %s (%d)\n", make, rel, out, rc);
        fail();
    }
    ebb__vm_destroy(vm);
    if (strcmp(make, "dir") == 0)
        rmdir(path);
    else
        unlink(path);
    rmdir(sub);
    rmdir(dir);
}

static void require_reads_files_only(void **state)
{
    (void)state;
    require_case("helper/init.lua", "fifo", "/helper/init.lua: a FIFO, not a file");
    require_case("helper.lua", "fifo", "/helper.lua: a FIFO, not a file");
    require_case("helper.lua", "dir", "/helper.lua: a directory, not a file");
    require_case("helper/init.lua", "file", "helper ok");
}

/* Which sources name pod.object / node.object (a watch cache keeps
 * objects' text only then): field reads yes; A.object{...} calls, words
 * inside other names, concatenation no. */
static void names_object_table(void **state)
{
    static const struct { const char *src; bool names; } cases[] = {
        { "return pod.object", true },
        { "local o = p.object.metadata", true },
        { "local o = p . object", true },
        { "x = p.object\n", true },
        { "if n.object then end", true },
        { "local m = (pod.object or {}).metadata", true },
        { "return pod[\"object\"]", true },
        { "return pod[ 'object' ]", true },
        { "return pod.object--", true },
        { "A.object({ a = A.string() })", false },
        { "A.object { a = A.string() }", false },
        { "A.object{}", false },
        { "A.object \"x\"", false },
        { "A.object[[x]]", false },
        { "elseif k == \"object\" then", false },
        { "local objects = p.objects", false },
        { "local o = p.object_id", false },
        { "local o = p.myobject", false },
        { "return \"a\"..object", false },
        { "local object = 1", false },
        { "return object", false },
        { "return pod:object()", false },
        { "", false },
        { "object", false },
        { ".object", true },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (ebb__lua_names_object(cases[i].src, strlen(cases[i].src)) != cases[i].names) {
            print_error("%s: expected %s\n", cases[i].src, cases[i].names ? "named" : "not named");
            fail();
        }
    }
}

/* Every chunk parsed is read for it: a plugin file, load() of a string,
 * load() of a function whose pieces cut the name in two; and the bundled
 * argument schemas (A.object) do not count. */
static void parse_notes_object(void **state)
{
    static const struct { const char *src; bool names; } cases[] = {
        { "return 1", false },
        { "local function f(p) return p.object end return 'ok'", true },
        { "return tostring(load('return function(p) return p.object end') ~= nil)", true },
        { "local k = { 'local f = function(p) return p.ob', 'ject end' } local i = 0 "
          "return tostring(load(function() i = i + 1 return k[i] end) ~= nil)", true },
        { "local k = { 'x = ', '\"ob', 'ject\"' } local i = 0 "
          "return tostring(load(function() i = i + 1 return k[i] end) ~= nil)", false },
    };
    char home[4096], out[512];

    (void)state;
    assert_non_null(getcwd(home, sizeof(home)));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ebb_engine e;
        struct ebb_vm_opts o = { .engine = &e, .name = "test", .mem_limit = (size_t)64 << 20,
                                 .budget_ns = 1000000000ull, .home = home };
        struct ebb_vm *vm = NULL;
        memset(&e, 0, sizeof(e));
        assert_int_equal(ebb__vm_create(&o, &vm), 0);
        if (run(vm, cases[i].src, strlen(cases[i].src), out, sizeof(out)) != 0) {
            print_error("%s: %s\n", cases[i].src, out);
            fail();
        }
        if (e.reads_object != cases[i].names) {
            print_error("%s: expected %s\n", cases[i].src, cases[i].names ? "named" : "not named");
            fail();
        }
        ebb__vm_destroy(vm);
    }
}

/* No bundled script names it: with only built-in strategies, a watch
 * cache keeps no objects' text. */
static void bundled_scripts_do_not_name_object(void **state)
{
    static const char *const dirs[] = { "lua/ebb", "policies" };
    size_t files = 0;

    (void)state;
    for (size_t d = 0; d < 2; d++) {
        DIR *dir = opendir(dirs[d]);
        struct dirent *de;
        assert_non_null(dir);
        while ((de = readdir(dir)) != NULL) {
            char path[512];
            size_t n = strlen(de->d_name), len;
            char *text;
            FILE *f;
            if (n < 5 || strcmp(de->d_name + n - 4, ".lua") != 0)
                continue;
            snprintf(path, sizeof(path), "%s/%s", dirs[d], de->d_name);
            assert_non_null(f = fopen(path, "rb"));
            assert_non_null(text = malloc(1 << 20));
            len = fread(text, 1, 1 << 20, f);
            fclose(f);
            if (ebb__lua_names_object(text, len)) {
                print_error("%s names pod.object or node.object\n", path);
                fail();
            }
            free(text);
            files++;
        }
        closedir(dir);
    }
    assert_true(files >= 15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plugin_file_parse_stops_at_budget),
        cmocka_unit_test(syntax_errors_name_file_and_line),
        cmocka_unit_test(colliding_constants_refused),
        cmocka_unit_test(load_caps_and_semantics),
        cmocka_unit_test(load_stops_the_call),
        cmocka_unit_test(require_reads_files_only),
        cmocka_unit_test(names_object_table),
        cmocka_unit_test(parse_notes_object),
        cmocka_unit_test(bundled_scripts_do_not_name_object),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
