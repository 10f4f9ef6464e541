/* require("ebb_core"): the engine as a Lua module, so busted specs run
 * policies through the real C sandbox. The host state that loads this
 * module is the test runner's, not a sandbox; every plugin still runs in
 * its own sandboxed state inside the engine.
 *
 *   local core = require("ebb_core")
 *   local plan, msg, err = core.simulate{
 *     snapshot = "spec/fixtures/x.json" | snapshot_text = "...",
 *     policy = "p.yaml" | policy_text = "...",
 *     policy_dirs = { "dir" }, now = "2026-01-02T03:04:05Z", cycles = 1,
 *   }
 *   local ok, msg, err = core.check{ policy = ..., policy_dirs = ... }
 *
 * With reschedule = true (and scheduler_config = "file" |
 * scheduler_config_text = "...", scheduler_version = "v1.25", seed = n,
 * cycles = n as the maximum), the plan has a `whatif` table: placements,
 * pending, loops, cycles (each with its counts and spread), converged.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <cjson/cJSON.h>

#include "ebb/flags.h"
#include "ebb/simulate.h"

static void setstr(lua_State *L, const char *k, const char *v)
{
    if (v != NULL) {
        lua_pushstring(L, v);
        lua_setfield(L, -2, k);
    }
}

/* A text of the plan that may hold NUL bytes: with its length. */
static void setlstr(lua_State *L, const char *k, const char *v, size_t len)
{
    if (v != NULL) {
        lua_pushlstring(L, v, len);
        lua_setfield(L, -2, k);
    }
}

static void push_util(lua_State *L, const double *u)
{
    lua_createtable(L, 0, 3);
    lua_pushnumber(L, u[0]);
    lua_setfield(L, -2, "cpu");
    lua_pushnumber(L, u[1]);
    lua_setfield(L, -2, "memory");
    lua_pushnumber(L, u[2]);
    lua_setfield(L, -2, "pods");
}

static void push_plan(lua_State *L, const struct ebb_plan *p)
{
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, p->cycles);
    lua_setfield(L, -2, "cycles");
    lua_createtable(L, (int)p->nevictions, 0);
    for (size_t i = 0; i < p->nevictions; i++) {
        const struct ebb_plan_eviction *e = &p->evictions[i];
        lua_createtable(L, 0, 6);
        setstr(L, "pod", e->pod);
        setstr(L, "node", e->node);
        setstr(L, "plugin", e->plugin);
        setstr(L, "profile", e->profile);
        setlstr(L, "reason", e->reason ? e->reason : "", e->reason ? ebb_str_len(e->reason) : 0);
        setstr(L, "action", e->action);
        setstr(L, "request", e->request);
        lua_pushinteger(L, e->cycle);
        lua_setfield(L, -2, "cycle");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "evictions");
    lua_createtable(L, (int)p->nrefusals, 0);
    for (size_t i = 0; i < p->nrefusals; i++) {
        const struct ebb_plan_refusal *r = &p->refusals[i];
        lua_createtable(L, 0, 7);
        setstr(L, "pod", r->pod);
        setstr(L, "node", r->node);
        setstr(L, "plugin", r->plugin);
        setstr(L, "profile", r->profile);
        setstr(L, "why", r->why);
        setstr(L, "detail", r->detail);
        lua_pushinteger(L, r->cycle);
        lua_setfield(L, -2, "cycle");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "refusals");
    lua_createtable(L, (int)p->nerrors, 0);
    for (size_t i = 0; i < p->nerrors; i++) {
        lua_createtable(L, 0, 4);
        setstr(L, "plugin", p->errors[i].plugin);
        setstr(L, "profile", p->errors[i].profile);
        setstr(L, "message", p->errors[i].message);
        lua_pushinteger(L, p->errors[i].cycle);
        lua_setfield(L, -2, "cycle");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "errors");
    lua_createtable(L, (int)p->nskips, 0);
    for (size_t i = 0; i < p->nskips; i++) {
        lua_createtable(L, 0, 2);
        setstr(L, "reason", p->skips[i].reason);
        lua_pushinteger(L, p->skips[i].cycle);
        lua_setfield(L, -2, "cycle");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "skipped");
    lua_createtable(L, (int)p->nnotes, 0);
    for (size_t i = 0; i < p->nnotes; i++) {
        lua_createtable(L, 0, 5);
        setstr(L, "plugin", p->notes[i].plugin);
        setstr(L, "profile", p->notes[i].profile);
        setlstr(L, "node", p->notes[i].node, p->notes[i].node ? ebb_str_len(p->notes[i].node) : 0);
        setlstr(L, "message", p->notes[i].message, p->notes[i].message_len);
        lua_pushinteger(L, p->notes[i].cycle);
        lua_setfield(L, -2, "cycle");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "notes");
    lua_createtable(L, (int)p->nnodes, 0);
    for (size_t i = 0; i < p->nnodes; i++) {
        lua_createtable(L, 0, 3);
        setstr(L, "name", p->nodes[i].name);
        push_util(L, p->nodes[i].before);
        lua_setfield(L, -2, "before");
        push_util(L, p->nodes[i].after);
        lua_setfield(L, -2, "after");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "nodes");
}

static void push_spread(lua_State *L, const struct ebb_whatif_spread *sp)
{
    static const char *const names[3] = { "cpu", "memory", "pods" };

    lua_createtable(L, 0, 3);
    for (int k = 0; k < 3; k++) {
        lua_createtable(L, 0, 4);
        lua_pushnumber(L, sp[k].mean);
        lua_setfield(L, -2, "mean");
        lua_pushnumber(L, sp[k].stddev);
        lua_setfield(L, -2, "stddev");
        lua_pushnumber(L, sp[k].min);
        lua_setfield(L, -2, "min");
        lua_pushnumber(L, sp[k].max);
        lua_setfield(L, -2, "max");
        lua_setfield(L, -2, names[k]);
    }
}

static void push_strings(lua_State *L, char *const *v, size_t n)
{
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, v[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static void push_whatif(lua_State *L, const struct ebb_whatif *w)
{
    static const char *const status[] = { "placed", "unschedulable", "other-scheduler", "gated" };

    lua_createtable(L, 0, 6);
    lua_createtable(L, (int)w->nplacements, 0);
    for (size_t i = 0; i < w->nplacements; i++) {
        const struct ebb_whatif_placement *p = &w->placements[i];
        lua_createtable(L, 0, 7);
        lua_pushinteger(L, p->cycle);
        lua_setfield(L, -2, "cycle");
        setstr(L, "pod", p->pod);
        setstr(L, "replaces", p->replaces);
        setstr(L, "from", p->from);
        setstr(L, "node", p->node);
        setstr(L, "message", p->message);
        setstr(L, "status", p->status >= 0 && p->status < 4 ? status[p->status] : "?");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "placements");
    lua_createtable(L, (int)w->npending, 0);
    for (size_t i = 0; i < w->npending; i++) {
        lua_createtable(L, 0, 4);
        setstr(L, "pod", w->pending[i].pod);
        lua_pushinteger(L, w->pending[i].since);
        lua_setfield(L, -2, "since");
        setstr(L, "message", w->pending[i].message);
        setstr(L, "status", w->pending[i].status >= 0 && w->pending[i].status < 4
                                ? status[w->pending[i].status] : "?");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "pending");
    lua_createtable(L, (int)w->nloops, 0);
    for (size_t i = 0; i < w->nloops; i++) {
        const struct ebb_whatif_loop *l = &w->loops[i];
        lua_createtable(L, 0, 5);
        setstr(L, "owner", l->owner);
        setstr(L, "plugin", l->plugin);
        lua_createtable(L, (int)l->ncycles, 0);
        for (size_t k = 0; k < l->ncycles; k++) {
            lua_pushinteger(L, l->cycles[k]);
            lua_rawseti(L, -2, (lua_Integer)k + 1);
        }
        lua_setfield(L, -2, "cycles");
        push_strings(L, (char *const *)l->nodes, l->nnodes);
        lua_setfield(L, -2, "nodes");
        push_strings(L, l->pods, l->npods);
        lua_setfield(L, -2, "pods");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "loops");
    lua_createtable(L, (int)w->nstates, 0);
    for (size_t i = 0; i < w->nstates; i++) {
        const struct ebb_whatif_state *st = &w->states[i];
        lua_createtable(L, 0, 10);
        lua_pushinteger(L, st->cycle);
        lua_setfield(L, -2, "cycle");
        lua_pushinteger(L, (lua_Integer)st->evicted);
        lua_setfield(L, -2, "evicted");
        lua_pushinteger(L, (lua_Integer)st->replaced);
        lua_setfield(L, -2, "replaced");
        lua_pushinteger(L, (lua_Integer)st->placed);
        lua_setfield(L, -2, "placed");
        lua_pushinteger(L, (lua_Integer)st->unplaced);
        lua_setfield(L, -2, "unplaced");
        lua_pushinteger(L, (lua_Integer)st->gone);
        lua_setfield(L, -2, "gone");
        lua_pushinteger(L, (lua_Integer)st->pending);
        lua_setfield(L, -2, "pending");
        /* LoopGuard's refusals in the cycle */
        lua_createtable(L, 0, 3);
        lua_pushinteger(L, (lua_Integer)st->guarded[0]);
        lua_setfield(L, -2, "futile");
        lua_pushinteger(L, (lua_Integer)st->guarded[1]);
        lua_setfield(L, -2, "cooldown");
        lua_pushinteger(L, (lua_Integer)st->guarded[2]);
        lua_setfield(L, -2, "unavailable");
        lua_setfield(L, -2, "guarded");
        push_spread(L, st->spread);
        lua_setfield(L, -2, "spread");
        /* per node: { name = { cpu, memory, pods } } */
        lua_createtable(L, 0, (int)w->nnodes);
        for (size_t n = 0; n < w->nnodes; n++) {
            lua_createtable(L, 0, 3);
            lua_pushnumber(L, st->util[n * 3]);
            lua_setfield(L, -2, "cpu");
            lua_pushnumber(L, st->util[n * 3 + 1]);
            lua_setfield(L, -2, "memory");
            lua_pushnumber(L, st->util[n * 3 + 2]);
            lua_setfield(L, -2, "pods");
            lua_setfield(L, -2, w->nodes[n]);
        }
        lua_setfield(L, -2, "nodes");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "steps");
    lua_pushboolean(L, w->converged);
    lua_setfield(L, -2, "converged");
}

static int push_error(lua_State *L, const struct ebb_error *err)
{
    char buf[2048];

    ebb_error_format(err, buf, sizeof(buf));
    lua_pushnil(L);
    lua_pushstring(L, buf);
    lua_createtable(L, 0, 5);
    setstr(L, "file", err->file);
    lua_pushinteger(L, err->line);
    lua_setfield(L, -2, "line");
    setstr(L, "field", err->field);
    setstr(L, "msg", err->msg);
    setstr(L, "code", ebb_strerror(err->code));
    return 3;
}

/* Read the common options of simulate/check from the table at 1. The
 * strings stay valid while the table is on the stack. */
static int read_opts(lua_State *L, struct ebb_sim_opts *o, const char **dirs, int maxdirs)
{
    memset(o, 0, sizeof(*o));
    o->now = EBB_TIME_NONE;
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "snapshot");
    o->snapshot = lua_tostring(L, -1);
    lua_getfield(L, 1, "snapshot_text");
    o->snapshot_buf = lua_tolstring(L, -1, &o->snapshot_len);
    lua_getfield(L, 1, "policy");
    o->policy = lua_tostring(L, -1);
    lua_getfield(L, 1, "policy_text");
    o->policy_buf = lua_tolstring(L, -1, &o->policy_len);
    lua_getfield(L, 1, "home");
    o->home = lua_tostring(L, -1);
    lua_getfield(L, 1, "mem_limit");
    o->mem_limit = (size_t)luaL_optinteger(L, -1, 0);
    lua_getfield(L, 1, "time_budget_ms");
    o->time_budget_ms = (uint64_t)luaL_optinteger(L, -1, 0);
    lua_getfield(L, 1, "cycles");
    o->cycles = (int)luaL_optinteger(L, -1, 1);
    o->max_cycles = lua_isinteger(L, -1) ? o->cycles : -1;
    lua_getfield(L, 1, "reschedule");
    o->reschedule = lua_toboolean(L, -1);
    lua_getfield(L, 1, "interval");   /* seconds between rescheduled cycles */
    o->interval = luaL_optinteger(L, -1, 0);
    if (o->interval < 0)
        return luaL_error(L, "interval: %d is not a number of seconds of 1 or more", (int)o->interval);
    lua_getfield(L, 1, "scheduler_config");
    o->sched_config = lua_tostring(L, -1);
    lua_getfield(L, 1, "scheduler_config_text");
    o->sched_config_buf = lua_tolstring(L, -1, &o->sched_config_len);
    lua_getfield(L, 1, "scheduler_version");
    if (lua_isstring(L, -1))
        o->sched_version = strcmp(lua_tostring(L, -1), "v1.25") == 0 ? EBB_SCHED_V1_25 : EBB_SCHED_LATEST;
    lua_getfield(L, 1, "seed");
    if (lua_isinteger(L, -1)) {
        o->seeded = true;
        o->seed = (uint64_t)lua_tointeger(L, -1);
    }
    lua_getfield(L, 1, "prometheus_url");
    o->prometheus_url = lua_tostring(L, -1);
    lua_getfield(L, 1, "prometheus_token_file");
    o->prometheus_token_file = lua_tostring(L, -1);
    lua_getfield(L, 1, "feature_gates");
    if (lua_isstring(L, -1) && !ebb_flag_feature_gates("feature_gates", lua_tostring(L, -1), &o->features))
        return luaL_error(L, "feature_gates: \"%s\" is not a list of Name=bool", lua_tostring(L, -1));
    lua_getfield(L, 1, "now");
    if (lua_isstring(L, -1) && ebb_time_parse(lua_tostring(L, -1), &o->now) != 0)
        return luaL_error(L, "now: \"%s\" is not an RFC 3339 time", lua_tostring(L, -1));
    if (lua_getfield(L, 1, "policy_dirs") == LUA_TTABLE) {
        for (int i = 1; i <= maxdirs && lua_rawgeti(L, -1, i) == LUA_TSTRING; i++) {
            dirs[o->ndirs++] = lua_tostring(L, -1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    o->dirs = dirs;
    if (o->policy == NULL && o->policy_buf == NULL)
        return luaL_error(L, "policy or policy_text is required");
    return 0;
}

/* core.simulate(opts) -> plan | nil, message, error */
static int l_simulate(lua_State *L)
{
    struct ebb_sim_opts o;
    const char *dirs[16];
    struct ebb_engine *e = NULL;
    struct ebb_error err = { 0 };

    read_opts(L, &o, dirs, 16);
    if (o.snapshot == NULL && o.snapshot_buf == NULL)
        return luaL_error(L, "snapshot or snapshot_text is required");
    if (ebb_simulate(&o, &e, &err) != 0)
        return push_error(L, &err);
    push_plan(L, ebb_engine_plan(e));
    if (o.whatif != NULL) {
        push_whatif(L, o.whatif);
        lua_setfield(L, -2, "whatif");
        ebb_whatif_destroy(o.whatif);
    }
    ebb_engine_destroy(e);
    ebb_evmem_free(&o.memory);
    return 1;
}

/* core.check(opts) -> true | nil, message, error */
static int l_check(lua_State *L)
{
    struct ebb_sim_opts o;
    const char *dirs[16];
    struct ebb_engine *e = NULL;
    struct ebb_error err = { 0 };

    read_opts(L, &o, dirs, 16);
    o.snapshot = NULL;
    o.snapshot_buf = NULL;
    if (ebb_simulate(&o, &e, &err) != 0)
        return push_error(L, &err);
    ebb_engine_destroy(e);
    ebb_evmem_free(&o.memory);
    lua_pushboolean(L, 1);
    return 1;
}

/* core.log_level("off"|"error"|"warn"|"info"|"debug") */
static int l_log_level(lua_State *L)
{
    static const char *const names[] = { "off", "error", "warn", "info", "debug", NULL };
    ebb_log_level = luaL_checkoption(L, 1, NULL, names) - 1;
    return 0;
}

int luaopen_ebb_core(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        { "simulate", l_simulate },
        { "check", l_check },
        { "log_level", l_log_level },
        { NULL, NULL },
    };
    luaL_newlib(L, funcs);
    lua_pushliteral(L, EBB_VERSION);
    lua_setfield(L, -2, "version");
    return 1;
}
