/* What arming the time budget costs one call into Lua: the same trivial
 * function called through ebb__vm_call N times with a 10 s budget and
 * with none (budget_ns = UINT64_MAX, as --script-timeout 0), interleaved
 * rounds, best round of each. Built and run by spec/bench/budget:
 *   budget_arm [CALLS]  ->  "armed N ns, unarmed M ns, budget K ns a call" */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double round_ns(struct ebb_vm *vm, long calls)
{
    struct ebb_error err = { 0 };
    uint64_t t0 = now_ns();

    for (long i = 0; i < calls; i++) {
        lua_pushvalue(vm->L, 1);
        lua_pushinteger(vm->L, i);
        if (ebb__vm_call(vm, 1, 1, &err) != 0) {
            fprintf(stderr, "budget_arm: %s\n", err.msg);
            exit(1);
        }
        lua_pop(vm->L, 1);
    }
    return (double)(now_ns() - t0) / (double)calls;
}

int main(int argc, char **argv)
{
    static const char src[] = "return function(x) return x + 1 end";
    long calls = argc > 1 ? atol(argv[1]) : 200000;
    struct ebb_vm_opts o = { .name = "bench", .mem_limit = (size_t)64 << 20 };
    struct ebb_error err = { 0 };
    struct ebb_vm *vm;
    double on = 1e18, off = 1e18;

    if (ebb__vm_create(&o, &vm) != 0 || ebb__vm_dochunk(vm, src, sizeof(src) - 1, "=bench", &err) != 0) {
        fprintf(stderr, "budget_arm: cannot make the vm: %s\n", err.msg);
        return 1;
    }
    for (int r = 0; r < 7; r++) {
        double t;
        vm->budget_ns = 10000000000ull;
        if ((t = round_ns(vm, calls)) < on)
            on = t;
        vm->budget_ns = UINT64_MAX;
        if ((t = round_ns(vm, calls)) < off)
            off = t;
    }
    printf("armed %.0f ns, unarmed %.0f ns, budget %.0f ns a call\n", on, off, on - off);
    ebb__vm_destroy(vm);
    return 0;
}
