/* The time budget of the calls into a script, and who runs meanwhile.
 *
 * A time budget per call that costs nothing until it expires: a watchdog
 * thread sleeps until the earliest deadline of the calls in flight and
 * only then installs a count hook on the running coroutine. The hook fires
 * on every instruction from then on, so a script's own pcall cannot swallow
 * the kill; native helpers poll vm->expired in their loops and stop with
 * ebb__vm_stop. The sandbox's coroutine.resume/wrap/close live here: the
 * watchdog must know which coroutine runs.
 *
 * The lowest unit of lua/: the sandbox (vm.c), the library replacements
 * (lua_string.c, lua_table.c) and every binding stop through it.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>

#include "lua/lua_int.h"

#define WD_MAX 32

/* ---- watchdog ----------------------------------------------------------- */

struct wd_entry {
    struct ebb_vm *vm;
    lua_State *L;
    uint64_t deadline;
    bool fired;
};

static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv;
static struct wd_entry wd_stack[WD_MAX];
static int wd_n;
static bool wd_started;
static uint64_t wd_sleep_until = UINT64_MAX;   /* when the watchdog wakes next */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The clock arming reads: a deadline needs no better than the kernel
 * tick, and the coarse clock costs a few ns where the precise one costs
 * tens. It lags the precise one by up to its resolution, which is added:
 * a budget never ends early, and at most a tick late (the watchdog
 * compares with the precise clock). */
static uint64_t coarse_res_ns;

static uint64_t coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + coarse_res_ns;
}

/* `kept` counts one cycle: a new cycle starts it again. */
void ebb__budget_kept_cycle(struct ebb_vm *vm)
{
    int cycle = vm->engine ? vm->engine->cycle : 0;

    if (vm->kept_cycle != cycle) {
        vm->kept_cycle = cycle;
        vm->kept = 0;
    }
}

void ebb__vm_keep(lua_State *L, size_t bytes)
{
    struct ebb_vm *vm = ebb__vm_of(L);

    ebb__budget_kept_cycle(vm);
    if (bytes > vm->mem_limit || vm->mem_used + vm->kept > vm->mem_limit - bytes)
        luaL_error(L, "memory limit of %d MiB exceeded (the notes, reasons and refusals the plan "
                      "keeps for the plugin this cycle count toward it: %d KiB)",
                   (int)(vm->mem_limit >> 20), (int)(vm->kept >> 10));
    vm->kept += bytes;
}

int ebb__budget_ms(const struct ebb_vm *vm)
{
    return (int)(vm->budget_ns / 1000000u);
}

int ebb__vm_stop(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);

    vm->stopped = true;
    /* A yield cannot be caught (pcall does not stop it) and runs nothing on
     * the way out: the coroutine is left suspended and dropped. */
    if (lua_isyieldable(L))
        return lua_yield(L, 0);
    /* Inside a C boundary (a callback of a C function, a metamethod called
     * from C, a message handler or __close run by an error) a yield is not
     * possible: raise. The sandbox's xpcall runs no handler once the budget
     * has expired, and every script instruction the error returns to is
     * hooked and stops again. */
    return luaL_error(L, "time budget of %d ms exceeded", ebb__budget_ms(vm));
}

static void budget_hook(lua_State *L, lua_Debug *ar)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    (void)ar;
    if (vm != NULL && vm->expired)
        ebb__vm_stop(L);
}

static void *wd_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd_mu);
    for (;;) {
        uint64_t next = UINT64_MAX, now;
        for (int i = 0; i < wd_n; i++)
            if (!wd_stack[i].fired && wd_stack[i].deadline < next)
                next = wd_stack[i].deadline;
        wd_sleep_until = next;
        if (next == UINT64_MAX) {
            pthread_cond_wait(&wd_cv, &wd_mu);
            continue;
        }
        struct timespec ts = { .tv_sec = (time_t)(next / 1000000000u),
                               .tv_nsec = (long)(next % 1000000000u) };
        pthread_cond_timedwait(&wd_cv, &wd_mu, &ts);
        wd_sleep_until = 0;   /* awake: it looks at every entry before sleeping */
        now = mono_ns();
        for (int i = 0; i < wd_n; i++) {
            struct wd_entry *e = &wd_stack[i];
            if (!e->fired && e->deadline <= now) {
                lua_State *inner = e->vm->running;
                e->fired = true;
                e->vm->expired_ns = now;
                e->vm->expired = 1;
                /* lua_sethook is safe to call asynchronously (lua.c does it
                 * from a signal handler); the entry is popped and `running`
                 * changed under this lock, so both threads are alive here.
                 * The call's coroutine and the script coroutine running
                 * inside it (if any) both stop at their next instruction. */
                lua_sethook(e->L, budget_hook, LUA_MASKCOUNT, 1);
                if (inner != NULL && inner != e->L)
                    lua_sethook(inner, budget_hook, LUA_MASKCOUNT, 1);
            }
        }
    }
    return NULL;
}

int ebb__budget_start(void)
{
    pthread_condattr_t ca;
    pthread_t t;

    if (wd_started)
        return 0;
    {
        struct timespec r;
        if (clock_getres(CLOCK_MONOTONIC_COARSE, &r) == 0)
            coarse_res_ns = (uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec;
        else
            coarse_res_ns = 10000000;   /* no resolution said: assume the slowest tick */
    }
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&t, NULL, wd_main, NULL) != 0)
        return EBB_ENOMEM;
    pthread_detach(t);
    wd_started = true;
    return 0;
}

uint64_t ebb_budget_overdue(char *plugin, size_t plugin_len, char *profile, size_t profile_len,
                            uint64_t *budget_ns)
{
    uint64_t worst = 0, now = mono_ns();

    /* an entry is popped before its call returns, and so before its vm or
     * instance can go: under the lock both are alive */
    pthread_mutex_lock(&wd_mu);
    for (int i = 0; i < wd_n; i++) {
        const struct wd_entry *e = &wd_stack[i];
        if (now <= e->deadline || now - e->deadline <= worst)
            continue;
        worst = now - e->deadline;
        snprintf(plugin, plugin_len, "%s", e->vm->name ? e->vm->name : "?");
        snprintf(profile, profile_len, "%s",
                 e->vm->inst != NULL && e->vm->inst->profile != NULL ? e->vm->inst->profile->name : "");
        if (budget_ns != NULL)
            *budget_ns = e->vm->budget_ns;
    }
    pthread_mutex_unlock(&wd_mu);
    return worst;
}

static uint64_t wd_arms;   /* calls into Lua, for --stats (the thread running scripts) */

void ebb__budget_count_call(void)
{
    wd_arms++;
}

uint64_t ebb_budget_arms(void)
{
    return wd_arms;
}

int ebb__budget_arm(struct ebb_vm *vm, lua_State *L)
{
    int rc = 0;

    pthread_mutex_lock(&wd_mu);
    if (wd_n == WD_MAX) {
        rc = EBB_ELIMIT;
    } else {
        uint64_t deadline = coarse_ns() + vm->budget_ns;
        wd_stack[wd_n++] = (struct wd_entry){ vm, L, deadline, false };
        /* Waking the watchdog is the expensive part of arming (two context
         * switches): only when it would sleep past this deadline. Calls one
         * after another with the same budget leave it asleep until the
         * first deadline, when it looks again. */
        if (deadline < wd_sleep_until)
            pthread_cond_signal(&wd_cv);
    }
    pthread_mutex_unlock(&wd_mu);
    return rc;
}

void ebb__budget_disarm(void)
{
    pthread_mutex_lock(&wd_mu);
    wd_n--;
    pthread_mutex_unlock(&wd_mu);
}

/* The coroutine now running in vm; returns the one it replaces. */
lua_State *ebb__budget_running(struct ebb_vm *vm, lua_State *co)
{
    lua_State *prev;

    pthread_mutex_lock(&wd_mu);
    prev = vm->running;
    vm->running = co;
    pthread_mutex_unlock(&wd_mu);
    return prev;
}

bool ebb__vm_can_wait(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    return vm != NULL && vm->call_co == L && lua_isyieldable(L);
}

void ebb__vm_engine_yield(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    if (vm != NULL)
        vm->engine_yield = true;
}

/* ---- coroutines of scripts ---------------------------------------------- */

/* Make co the coroutine the watchdog hooks when the budget expires. Its
 * hook is cleared first (a hook left from an earlier call's budget), then
 * set again if the budget has expired meanwhile: the watchdog sets
 * `expired` and hooks `running` under the lock set_running takes. */
lua_State *ebb__budget_enter(struct ebb_vm *vm, lua_State *co)
{
    lua_State *prev;

    lua_sethook(co, NULL, 0, 0);
    prev = ebb__budget_running(vm, co);
    if (vm->expired)
        lua_sethook(co, budget_hook, LUA_MASKCOUNT, 1);
    return prev;
}

/* coroutine.resume and coroutine.wrap as lcorolib.c has them, except that
 * the watchdog knows which coroutine runs: a budget that expires while a
 * script's coroutine loops stops that coroutine, and every resumer it
 * returns to stops too (a coroutine cannot swallow the kill). */
static int auxresume(lua_State *L, lua_State *co, int narg)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    lua_State *prev;
    int status, nres;

    ebb__vm_check(L);
    if (lua_status(co) == LUA_OK && lua_gettop(co) == 0) {
        lua_pushliteral(L, "cannot resume dead coroutine");
        return -1;
    }
    if (!lua_checkstack(co, narg)) {
        lua_pushliteral(L, "too many arguments to resume");
        return -1;
    }
    lua_xmove(L, co, narg);
    prev = ebb__budget_enter(vm, co);
    status = lua_resume(co, L, narg, &nres);
    ebb__budget_running(vm, prev);
    ebb__vm_check(L);    /* stopped in there, or out of time: so is the resumer */
    if (status == LUA_OK || status == LUA_YIELD) {
        if (!lua_checkstack(L, nres + 1)) {
            lua_pop(co, nres);
            lua_pushliteral(L, "too many results to resume");
            return -1;
        }
        lua_xmove(co, L, nres);
        return nres;
    }
    lua_xmove(co, L, 1);
    return -1;
}

static lua_State *getco(lua_State *L)
{
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co, 1, "coroutine");
    return co;
}

/* Close the pending to-be-closed variables of co (coroutine.close, or a
 * wrapped coroutine that failed): their __close runs in co, which is the
 * running coroutine meanwhile, so the budget reaches it. */
static int close_co(lua_State *L, lua_State *co)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    lua_State *prev;
    int st;

    ebb__vm_check(L);
    prev = ebb__budget_enter(vm, co);
    st = lua_resetthread(co);
    ebb__budget_running(vm, prev);
    ebb__vm_check(L);
    return st;
}

/* coroutine.close(co) -> true | false, err                    [-0, +(1|2), e] */
static int l_co_close(lua_State *L)
{
    lua_State *co = getco(L);
    lua_Debug ar;

    if (co == L)
        return luaL_error(L, "cannot close a running coroutine");
    if (lua_status(co) == LUA_OK && lua_getstack(co, 0, &ar))
        return luaL_error(L, "cannot close a normal coroutine");
    if (close_co(L, co) == LUA_OK) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushboolean(L, 0);
    lua_xmove(co, L, 1);
    return 2;
}

static int l_co_resume(lua_State *L)
{
    lua_State *co = getco(L);
    int r = auxresume(L, co, lua_gettop(L) - 1);

    if (r < 0) {
        lua_pushboolean(L, 0);
        lua_insert(L, -2);
        return 2;
    }
    lua_pushboolean(L, 1);
    lua_insert(L, -(r + 1));
    return r + 1;
}

static int l_co_auxwrap(lua_State *L)
{
    lua_State *co = lua_tothread(L, lua_upvalueindex(1));
    int r = auxresume(L, co, lua_gettop(L));

    if (r < 0) {
        int stat = lua_status(co);
        if (stat != LUA_OK && stat != LUA_YIELD) {
            stat = close_co(L, co);
            lua_xmove(co, L, 1);
        }
        if (stat != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
            luaL_where(L, 1);
            lua_insert(L, -2);
            lua_concat(L, 2);
        }
        return lua_error(L);
    }
    return r;
}

static int l_co_wrap(lua_State *L)
{
    lua_State *NL;

    luaL_checktype(L, 1, LUA_TFUNCTION);
    NL = lua_newthread(L);
    lua_pushvalue(L, 1);
    lua_xmove(L, NL, 1);
    lua_pushcclosure(L, l_co_auxwrap, 1);
    return 1;
}

/* coroutine.resume, .wrap and .close of the sandbox, into the coroutine
 * library table on top of the stack. */
void ebb__lua_open_coroutine(lua_State *L)
{
    lua_pushcfunction(L, l_co_resume);
    lua_setfield(L, -2, "resume");
    lua_pushcfunction(L, l_co_wrap);
    lua_setfield(L, -2, "wrap");
    lua_pushcfunction(L, l_co_close);
    lua_setfield(L, -2, "close");
}
