/* What arming the time budget costs one call into Lua: the same trivial
 * function called through ebb__vm_call N times with a 10 s budget and
 * with none (budget_ns = UINT64_MAX, as --script-timeout 0), in pairs of
 * rounds (which goes first alternates); the median of the pairs'
 * differences, so that a hiccup of the machine in one round does not
 * decide. Built and run by spec/bench/budget:
 *   budget_arm [CALLS]  ->  "armed N ns, unarmed M ns, budget K ns a call" */
#include <inttypes.h>
#include <stdbool.h>
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

#define PAIRS 15

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
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
    long calls = argc > 1 ? atol(argv[1]) : 300000;
    struct ebb_vm_opts o = { .name = "bench", .mem_limit = (size_t)64 << 20 };
    struct ebb_error err = { 0 };
    struct ebb_vm *vm;
    double on[PAIRS], off[PAIRS], diff[PAIRS];

    if (ebb__vm_create(&o, &vm) != 0 || ebb__vm_dochunk(vm, src, sizeof(src) - 1, "=bench", &err) != 0) {
        fprintf(stderr, "budget_arm: cannot make the vm: %s\n", err.msg);
        return 1;
    }
    for (int r = 0; r < PAIRS; r++) {
        for (int k = 0; k < 2; k++) {
            bool armed = (k + r) % 2 == 0;
            vm->budget_ns = armed ? 10000000000ull : UINT64_MAX;
            *(armed ? &on[r] : &off[r]) = round_ns(vm, calls);
        }
        diff[r] = on[r] - off[r];
    }
    qsort(on, PAIRS, sizeof(double), cmp_double);
    qsort(off, PAIRS, sizeof(double), cmp_double);
    qsort(diff, PAIRS, sizeof(double), cmp_double);
    printf("armed %.0f ns, unarmed %.0f ns, budget %.0f ns a call\n", on[PAIRS / 2], off[PAIRS / 2],
           diff[PAIRS / 2]);
    ebb__vm_destroy(vm);
    return 0;
}
