/* How long each way of running past the time budget keeps going after the
 * budget expired: a plugin-sized state per case (its setup loaded with
 * the default budget), a call whose body is the escape, and the time from the watchdog's expiry (vm->expired_ns) to the
 * call's return. Each case runs 5 times; the worst is printed. Built and
 * run by spec/bench/run:
 *   budget_escape [BUDGET_MS]  ->  one line per kind of escape */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lua/lua_int.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define LOOP "function() while true do end end"

static const struct escape {
    const char *kind;
    const char *setup;              /* run at load, with its own budget */
    const char *body;               /* the call */
} cases[] = {
    { "a Lua loop", "", "while true do end" },
    { "a loop of pcalls", "", "while true do pcall(" LOOP ") end" },
    { "a message handler that loops", "", "xpcall(" LOOP ", " LOOP ")" },
    { "a message handler that loops on the script's error", "", "xpcall(error, " LOOP ")" },
    { "__close at the end of a block", "",
      "do local x <close> = setmetatable({}, { __close = " LOOP " }) end" },
    { "__close while an error unwinds", "",
      "pcall(function() local x <close> = setmetatable({}, { __close = " LOOP " }) error('x') end) "
      "while true do end" },
    { "__tostring called from C", "", "tostring(setmetatable({}, { __tostring = " LOOP " }))" },
    { "__index called from table.concat", "",
      "table.concat(setmetatable({}, { __index = " LOOP " }), ',', 1, 2)" },
    { "a script's coroutine", "", "local f = coroutine.wrap(" LOOP ") while true do pcall(f) end" },
    { "coroutine.close running a __close", "",
      "local co = coroutine.create(function() local x <close> = setmetatable({}, { __close = " LOOP
      " }) coroutine.yield() end) coroutine.resume(co) coroutine.close(co)" },
    { "a sort comparator", "", "table.sort({ 3, 2, 1 }, " LOOP ")" },
    { "pattern matching (string.find, backtracking)", "local S = string.rep('a', 300000)",
      "string.find(S, '.-.-.-b')" },
    { "pattern matching (string.gsub, backtracking)", "local S = string.rep('a', 300000)",
      "string.gsub(S, '(a*)*b', '')" },
    { "string.rep (16 MiB, again and again)", "", "while true do string.rep('ab', 1 << 23) end" },
    /* again and again: one call takes less than the budget on a fast machine */
    { "string.format of a 32 MiB format, again and again", "local F = string.rep('%%', 1 << 24)",
      "while true do string.format(F) end" },
    { "table.concat of values made in C", "",
      "table.concat(setmetatable({}, { __index = table.concat }), '', 1, math.maxinteger)" },
    { "table.move over 2^62 slots", "", "table.move({}, 1, math.maxinteger // 2, 1, {})" },
    { "table.insert into a table 2^63 long", "",
      "table.insert(setmetatable({}, { __len = function() return math.maxinteger - 1 end }), 1, 'x')" },
    { "table.sort of 2^20 elements", "",
      "table.sort(setmetatable({}, { __len = function() return 1 << 20 end, __index = rawlen, "
      "__newindex = rawequal }), function(a, b) return a < b end)" },
    { "table.unpack over 2^13 integer keys that collide",
      "local T = {} for i = 1, 1 << 13 do T[i * ((1 << 13) - 1)] = true end",
      "table.unpack(T, 1, 900000)" },
    { "string.find with a 64 MB set", "local SET = '[' .. string.rep('a', 1 << 26) .. 'b]'",
      "string.find(string.rep('b', 1000), SET .. '*x')" },
    { "load() with a reader function that loops", "", "load(" LOOP ")" },
    { "load() of 64 KiB of gotos, again and again",
      "local t = {} for i = 1, 3000 do t[#t + 1] = '::l' .. i .. ':: do end ' end "
      "local B = table.concat(t) B = B .. string.rep('goto l3000 ', (65536 - #B) // 11)",
      "while true do load(B) end" },
};

/* 32,000 labels and gotos to the last, `size` bytes: a plugin file whose
 * parse takes seconds (each goto looks through every label). */
static char *goto_file(size_t size, size_t *len)
{
    char *s = malloc(size + 64);
    size_t k = 0;

    if (s == NULL)
        return NULL;
    for (int i = 1; i <= 32000; i++)
        k += (size_t)snprintf(s + k, size - k, "::l%d:: do end ", i);
    while (k + 12 <= size) {
        memcpy(s + k, "goto l32000 ", 12);
        k += 12;
    }
    *len = k;
    return s;
}

/* How long the parse of a 7.7 MB plugin file of gotos goes on after the
 * budget of its load expired (ebb__vm_dochunk, as the engine loads plugin
 * files and modules). */
static int parse_escape(int budget_ms)
{
    double worst = 0;
    size_t len;
    char *src = goto_file(7700000, &len);

    if (src == NULL)
        return 1;
    for (int run = 0; run < 5; run++) {
        struct ebb_vm_opts o = { .name = "escape", .mem_limit = (size_t)256 << 20,
                                 .budget_ns = (uint64_t)budget_ms * 1000000u };
        struct ebb_error err = { 0 };
        struct ebb_vm *vm;
        uint64_t end;
        int rc;

        if (ebb__vm_create(&o, &vm) != 0)
            return 1;
        rc = ebb__vm_dochunk(vm, src, len, "=escape", &err);
        end = now_ns();
        if (rc != EBB_ELIMIT || !vm->expired_ns) {
            fprintf(stderr, "budget_escape: parsing a plugin file: not stopped by the budget: %s\n",
                    err.msg);
            return 1;
        }
        if ((double)(end - vm->expired_ns) / 1e6 > worst)
            worst = (double)(end - vm->expired_ns) / 1e6;
        ebb__vm_destroy(vm);
    }
    free(src);
    printf("  %-52s %8.3f ms\n", "parsing a 7.7 MB plugin file of gotos", worst);
    return 0;
}

int main(int argc, char **argv)
{
    int budget_ms = argc > 1 ? atoi(argv[1]) : 100;

    printf("budget %d ms; the time from its expiry to the call's return, worst of 5:\n", budget_ms);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct escape *c = &cases[i];
        double worst = 0;
        for (int run = 0; run < 5; run++) {
            struct ebb_vm_opts o = { .name = "escape", .mem_limit = (size_t)256 << 20 };
            struct ebb_error err = { 0 };
            struct ebb_vm *vm;
            char src[2048];
            uint64_t end;
            int rc;

            snprintf(src, sizeof(src), "%s\nreturn function()\n%s\nend\n", c->setup, c->body);
            if (ebb__vm_create(&o, &vm) != 0 ||
                ebb__vm_dochunk(vm, src, strlen(src), "=escape", &err) != 0) {
                fprintf(stderr, "budget_escape: %s: %s\n", c->kind, err.msg);
                return 1;
            }
            vm->budget_ns = (uint64_t)budget_ms * 1000000u;   /* the setup had the default */
            rc = ebb__vm_call(vm, 0, 0, &err);
            end = now_ns();
            if (rc != EBB_ELIMIT || !vm->expired_ns) {
                fprintf(stderr, "budget_escape: %s: not stopped by the budget: %s\n", c->kind, err.msg);
                return 1;
            }
            if ((double)(end - vm->expired_ns) / 1e6 > worst)
                worst = (double)(end - vm->expired_ns) / 1e6;
            ebb__vm_destroy(vm);
        }
        printf("  %-52s %8.3f ms\n", c->kind, worst);
    }
    return parse_escape(budget_ms);
}
