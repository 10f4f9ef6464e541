/* ebb/lua.h: the Lua plugin engine, for the front ends that make engines.
 *
 * The core (engine/core/) calls plugins only through a struct
 * ebb_plugin_ops; this is the table of Lua plugins (engine/lua/), which a
 * front end hands to ebb_engine_create in ebb_engine_opts.scripts:
 *
 *     struct ebb_engine_opts eo = { .scripts = ebb_lua_plugins(), ... };
 */
#ifndef EBB_LUA_H
#define EBB_LUA_H

#include <stddef.h>
#include <stdint.h>

struct ebb_plugin_ops;

const struct ebb_plugin_ops *ebb_lua_plugins(void);

/* Calls into Lua so far, each of which arms a time budget unless budgets
 * are off (benchmarks). */
uint64_t ebb_budget_arms(void);
/* How long the script call now running longest past its time budget has
 * run past it (ns; 0: none), with its plugin, profile (may be "") and
 * budget. Any thread may ask (ebb run's loop asks about its script
 * thread). */
uint64_t ebb_budget_overdue(char *plugin, size_t plugin_len, char *profile, size_t profile_len,
                            uint64_t *budget_ns);

#endif
