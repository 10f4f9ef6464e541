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

#include "lua_int.h"

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
    { "string.format of a 32 MiB format", "local F = string.rep('%%', 1 << 24)", "string.format(F)" },
    { "table.concat of values made in C", "",
      "table.concat(setmetatable({}, { __index = table.concat }), '', 1, math.maxinteger)" },
    { "table.move over 2^62 slots", "", "table.move({}, 1, math.maxinteger // 2, 1, {})" },
    { "table.insert into a table 2^63 long", "",
      "table.insert(setmetatable({}, { __len = function() return math.maxinteger - 1 end }), 1, 'x')" },
    { "table.sort of 2^20 elements", "",
      "table.sort(setmetatable({}, { __len = function() return 1 << 20 end, __index = rawlen, "
      "__newindex = rawequal }), function(a, b) return a < b end)" },
};

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
    return 0;
}
