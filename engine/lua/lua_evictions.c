/* ebb.evictions{...}: the memory of evictions (ebb/evmemory.h) for Lua
 * strategies: what ebb evicted in the window (24 h by default), across
 * cycles, restarts and leaders in `ebb run`, from the snapshot in
 * `ebb simulate`. Read-only: the engine alone adds to it.
 *
 * Invariants: the options table is read raw through lua_read.c, each key
 * once, unknown keys refused (a typo would silently match everything);
 * the answer is built in the Lua heap (charged to the plugin) and the walk
 * is bounded by the memory's size, checking the call's budget as it goes. */
#include <string.h>

#include <lauxlib.h>

#include "ebb/evmemory.h"
#include "lua/lua_int.h"

enum { F_NAMESPACE, F_KIND, F_WORKLOAD, F_NODE, F_PLUGIN, F_PROFILE, F_MAX };
static const char *const field_names[] = { "namespace", "kind", "workload", "node", "plugin",
                                           "profile", "since", "limit", NULL };

/* ebb.evictions([opts]) -> list                                  [-0, +1, e]
 *   opts.namespace, kind, workload, node, plugin, profile = strings: only
 *     the entries with that value (kind and workload: the top-level
 *     workload, "Deployment" and its name, as LoopGuard keys it);
 *   opts.since = unix seconds: only evictions at or after it;
 *   opts.limit = at most that many (newest first; default all).
 * Each entry: {time, namespace, pod, uid, kind, workload, node, plugin,
 * profile, landed, replacement, bounced}; landed/replacement are nil until
 * the replacement was seen placed; bounced: it landed on the node its
 * predecessor left. Newest first. No memory (an embedding without one):
 * an empty list. */
static int l_evictions(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    const struct ebb_evmem *m = vm && vm->engine ? vm->engine->memory : NULL;
    ebb_str want[F_MAX] = { 0 };
    bool given[F_MAX] = { false };
    lua_Integer since = 0, limit = LUA_MAXINTEGER, out = 0;
    size_t i = 0;

    if (ebb__lr_opttable(L, 1, "ebb.evictions: opts")) {
        lua_settop(L, 1);
        lua_pushnil(L);
        while (ebb__lr_next(L, 1, &i, 16, "ebb.evictions: opts")) {
            const char *key = ebb__lr_str(L, -2, 32, EBB_LR_TEXT, NULL, "ebb.evictions: opts key");
            int f = -1;
            for (int k = 0; field_names[k] != NULL; k++)
                if (strcmp(key, field_names[k]) == 0)
                    f = k;
            if (f < 0)
                return ebb__lr_error(L, -2, "unknown option (namespace, kind, workload, node, "
                                     "plugin, profile, since, limit)", "ebb.evictions: opts");
            if (f == F_MAX) {
                since = ebb__lr_int(L, -1, 0, LUA_MAXINTEGER, "ebb.evictions: opts.since");
            } else if (f == F_MAX + 1) {
                limit = ebb__lr_int(L, -1, 0, LUA_MAXINTEGER, "ebb.evictions: opts.limit");
            } else {
                size_t len;
                const char *s = ebb__lr_str(L, -1, EBB_LR_NAME_MAX, EBB_LR_TEXT, &len,
                                            "ebb.evictions: opts.%s", key);
                /* the memory's strings are interned: one never interned
                 * names nothing it holds */
                want[f] = ebb_str_find(s, len);
                given[f] = true;
            }
            lua_pop(L, 1);
        }
    }
    lua_newtable(L);
    for (size_t n = m ? m->n : 0; n > 0 && out < limit; n--) {
        const struct ebb_evmem_entry *e = &m->v[n - 1];
        ebb_str have[F_MAX] = { e->ns, e->kind, e->workload, e->node, e->plugin, e->profile };
        bool match = e->at >= since;

        for (int f = 0; f < F_MAX && match; f++)
            match = !given[f] || have[f] == want[f];
        if ((n & 255) == 0)
            ebb__vm_check(L);
        if (!match)
            continue;
        lua_createtable(L, 0, 12);
        lua_pushinteger(L, e->at);
        lua_setfield(L, -2, "time");
        ebb__lua_setstr(L, "namespace", e->ns);
        ebb__lua_setstr(L, "pod", e->pod);
        ebb__lua_setstr(L, "uid", e->uid);
        ebb__lua_setstr(L, "kind", e->kind);
        ebb__lua_setstr(L, "workload", e->workload);
        ebb__lua_setstr(L, "node", e->node);
        ebb__lua_setstr(L, "plugin", e->plugin);
        ebb__lua_setstr(L, "profile", e->profile);
        ebb__lua_setstr(L, "landed", e->landed);
        ebb__lua_setstr(L, "replacement", e->replacement);
        lua_pushboolean(L, (e->flags & EBB_EVMEM_BOUNCED) != 0);
        lua_setfield(L, -2, "bounced");
        lua_rawseti(L, -2, ++out);
    }
    return 1;
}

void ebb__lua_open_evictions(lua_State *L)
{
    lua_pushcfunction(L, l_evictions);
    lua_setfield(L, -2, "evictions");
}
