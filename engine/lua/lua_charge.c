/* Native memory made for a script, charged to its plugin's cap.
 *
 * What a binding allocates outside the Lua heap and hands to a script to
 * keep (a Selector, an AntiAffinityIndex, a LoadSet, a NodeUsage, the
 * results a topology helper holds) counts toward the plugin's memory cap
 * exactly as if the state's allocator had handed it out: every such
 * userdata holds a struct ebb_charge, is charged once built
 * (ebb__charge) and gives its bytes back when the script drops it
 * (__gc) or closes it (__close), both through ebb__uncharge.
 *
 * Invariant: vm->mem_used = the Lua heap + every native object alive, so
 * the cap bounds both together with what the plan keeps (vm->kept). A
 * build is bounded by the cluster view (pods and nodes times a constant)
 * or by a script table already under the cap, never by a count a script
 * states; what it holds is charged before the script can see it. */
#include <stdlib.h>

#include <lauxlib.h>

#include "lua/lua_int.h"

static bool over(const struct ebb_vm *vm, size_t bytes)
{
    return bytes > vm->mem_limit || vm->mem_used + vm->kept > vm->mem_limit - bytes;
}

void ebb__charge(lua_State *L, struct ebb_charge *o, size_t bytes)
{
    struct ebb_vm *vm = ebb__vm_of(L);

    if (vm == NULL || bytes == 0)
        return;
    if (vm->limit_on && over(vm, bytes)) {
        /* objects the script dropped give their bytes back at a full
         * collection (their __gc is the engine's, never a script's) */
        lua_gc(L, LUA_GCCOLLECT);
        if (over(vm, bytes))
            luaL_error(L, "memory limit of %d MiB exceeded (a native object of %d KiB; the "
                          "plugin holds %d KiB)", (int)(vm->mem_limit >> 20), (int)(bytes >> 10),
                       (int)((vm->mem_used + vm->kept) >> 10));
    }
    vm->mem_used += bytes;
    if (vm->mem_used > vm->mem_peak)
        vm->mem_peak = vm->mem_used;
    o->charged += bytes;
    vm->charged_bytes += bytes;
    /* the collector counts only its own heap: tell it this much more is
     * held, so dropped objects are found as soon as their size deserves */
    lua_gc(L, LUA_GCSTEP, (int)(bytes >> 10 > 1 << 20 ? 1 << 20 : bytes >> 10));
}

void ebb__uncharge(lua_State *L, struct ebb_charge *o)
{
    struct ebb_vm *vm = ebb__vm_of(L);

    if (vm != NULL && o->charged > 0) {
        vm->mem_used -= o->charged <= vm->mem_used ? o->charged : vm->mem_used;
        vm->charged_bytes -= o->charged <= vm->charged_bytes ? o->charged : vm->charged_bytes;
    }
    o->charged = 0;
}

/* ---- malloc'd memory held across a call that can raise --------------------- */

#define FREE_GUARD_MT "ebb.FreeGuard"

static int l_free_guard_close(lua_State *L)
{
    void **p = luaL_checkudata(L, 1, FREE_GUARD_MT);
    free(*p);
    *p = NULL;
    return 0;
}

void **ebb__free_guard(lua_State *L)
{
    void **p = lua_newuserdatauv(L, sizeof(*p), 0);

    *p = NULL;
    if (luaL_newmetatable(L, FREE_GUARD_MT)) {
        lua_pushcfunction(L, l_free_guard_close);
        lua_setfield(L, -2, "__close");
        lua_pushcfunction(L, l_free_guard_close);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    lua_toclose(L, -1);
    return p;
}
