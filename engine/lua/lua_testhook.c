/* Test hooks, in test builds only. build/ebb links the empty
 * ebb__lua_open_testhooks below; build/ebb-test (the integration specs'
 * binary for what only a hook can show) links this file compiled with
 * -DEBB_TEST_HOOKS:
 *
 *   ebb.test_hang(seconds)   sleeps in C, where the time budget cannot
 *                            stop it, as a native call that hangs would
 */
#include <time.h>

#include <lauxlib.h>

#include "lua/lua_int.h"

#ifdef EBB_TEST_HOOKS
/* [-1, +0, -] */
static int l_test_hang(lua_State *L)
{
    lua_Number s = ebb__lr_num(L, 1, 0, 1e6, "ebb.test_hang: seconds");
    struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (lua_Number)(time_t)s) * 1e9) };

    while (nanosleep(&ts, &ts) != 0)
        ;
    return 0;
}
#endif

void ebb__lua_open_testhooks(lua_State *L)
{
#ifdef EBB_TEST_HOOKS
    lua_pushcfunction(L, l_test_hang);
    lua_setfield(L, -2, "test_hang");
#else
    (void)L;
#endif
}
