/* Prometheus in Lua: ebb.prometheus_query(query), and the queries a Lua
 * plugin declares (its table's prometheus_queries(args): the prom_queries
 * operation of the Lua plugin engine, which the core asks through
 * struct ebb_plugin_ops).
 *
 * A query is answered by whatever the subcommand set with
 * ebb_engine_set_prom: `ebb run` sends it to the server on the loop and the
 * plugin's coroutine waits for the answer as it waits for an eviction's;
 * `ebb simulate --prometheus-url` asks the server at once. Without either,
 * the answer recorded in the snapshot (`ebb record --policy`) is used.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "ebb/config.h"
#include "ebb/prom_result.h"
#include "lua/lua_int.h"

#define QUERY_MAX ((size_t)64 << 10)   /* bytes of one PromQL query */
#define QUERIES_MAX 256                 /* queries of one plugin */

/* read_queries(list, engine): add each query of the list.  [-2, +0, e] */
static int read_queries(lua_State *L)
{
    struct ebb_engine *e = lua_touserdata(L, 2);
    size_t n;

    if (lua_isnil(L, 1))
        return 0;
    n = ebb__lr_len(L, 1, QUERIES_MAX, "prometheus_queries() result");
    for (size_t i = 1; i <= n; i++) {
        ebb__lr_index(L, 1, (lua_Integer)i);
        if (ebb__engine_prom_query_add(e, ebb__lr_str(L, -1, QUERY_MAX, EBB_LR_TEXT, NULL,
                                     "prometheus_queries() result[%zu]", i)) != 0)
            return luaL_error(L, "not enough memory");
        lua_pop(L, 1);
    }
    return 0;
}

/* plugin.prometheus_queries(args) -> { "promql", ... } of one instance
 * (the prom_queries operation of the Lua plugin engine). */
void ebb__lua_prom_queries(struct ebb_engine *e, struct ebb_plugin_inst *inst)
{
    struct ebb_error err = { 0 };
    lua_State *L;

    if (inst->def->type != EBB_PLUGIN_LUA || inst->vm == NULL)
        return;
    L = inst->vm->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, inst->table_ref);
    if (ebb__lr_field(L, -1, "prometheus_queries") != LUA_TFUNCTION) {
        lua_pop(L, 2);
        return;
    }
    lua_remove(L, -2);
    lua_rawgeti(L, LUA_REGISTRYINDEX, inst->ctx_ref);
    ebb__lr_field(L, -1, "args");
    lua_remove(L, -2);
    if (ebb__vm_call(inst->vm, 1, 1, &err) != 0) {
        ebb_log(EBB_LOG_WARN, "plugin %s: prometheus_queries failed: %s", inst->def->name, err.msg);
        return;
    }
    /* what the function returned, read as any script value is, outside a
     * call: a bad answer is logged, never raised */
    lua_pushcfunction(L, read_queries);
    lua_insert(L, -2);
    lua_pushlightuserdata(L, e);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
        ebb_log(EBB_LOG_WARN, "plugin %s: prometheus_queries: %s", inst->def->name,
                ebb__lr_message(L, -1));
        lua_pop(L, 1);
    }
}

/* The answer as Lua sees it: {[instance] = value, ...}, or nil, message,
 * "client" | "query". */
static int push_result(lua_State *L, const struct ebb_prom_result *r)
{
    if (r->error != NULL) {
        lua_pushnil(L);
        lua_pushstring(L, r->error);
        lua_pushstring(L, r->no_client ? "client" : "query");
        return 3;
    }
    lua_createtable(L, 0, (int)r->n);
    for (size_t i = 0; i < r->n; i++) {   /* a later sample of an instance wins, as upstream's map */
        lua_pushnumber(L, r->samples[i].value);
        lua_setfield(L, -2, r->samples[i].instance);
    }
    return 1;
}

static int no_client(lua_State *L, const char *why)
{
    lua_pushnil(L);
    lua_pushstring(L, why);
    lua_pushliteral(L, "client");
    return 3;
}

/* Resumed once the server answered the query this coroutine waited for. */
static int query_cont(lua_State *L, int status, lua_KContext k)
{
    struct ebb_ctx *ctx = ebb__lua_ctx(L);
    struct ebb_engine *e = ctx->engine;
    struct ebb_prom_result *r = e->prom_answer;
    int n;
    (void)status;
    (void)k;

    e->answer_ready = false;
    e->prom_answer = NULL;
    if (r == NULL)
        return no_client(L, "prometheus client not initialized (no answer)");
    n = push_result(L, r);
    ebb_prom_result_free(r);
    return n;
}

/* ebb.prometheus_query(query) -> {[instance] = value} | nil, message, stage
 *                                                            [-0, +1|3, e]
 * An instant query of the policy's Prometheus provider at the engine's
 * time: a vector whose samples carry an `instance` label and a value in
 * [0, 1] (upstream's rules). On failure, nil, upstream's message and the
 * stage: "client" (no Prometheus provider, no token, no recorded answer)
 * or "query" (the server's answer). In `ebb run` the plugin waits for the
 * server (its coroutine is suspended, the loop goes on). */
static int l_prometheus_query(lua_State *L)
{
    const char *query = ebb__lr_str(L, 1, QUERY_MAX, EBB_LR_TEXT, NULL, "ebb.prometheus_query: query");
    struct ebb_ctx *ctx = ebb__lua_ctx(L);
    struct ebb_engine *e;
    struct ebb_prom_result *now = NULL;
    const struct ebb_prom_result *rec;
    int rc, n;

    if (ctx == NULL)
        return luaL_error(L, "ebb.prometheus_query: only while the plugin runs");
    e = ctx->engine;
    if (ebb_prom_provider(e->policy) == NULL)
        return no_client(L, "prometheus client not initialized (the policy enables no Prometheus "
                            "metrics provider: metricsProviders: [{source: Prometheus, "
                            "prometheus: {url: ...}}])");
    if (e->prom_start == NULL) {
        if (e->cache == NULL || (rec = ebb_cache_prom_result(e->cache, query)) == NULL) {
            char shown[256];
            ebb__lr_show(L, 1, shown, sizeof(shown));
            lua_pushnil(L);
            lua_pushfstring(L, "prometheus client not initialized (the snapshot holds no result "
                               "for the query %s: record it with `ebb record --policy`, or "
                               "pass --prometheus-url)", shown);
            lua_pushliteral(L, "client");
            return 3;
        }
        return push_result(L, rec);
    }
    if (e->mode == EBB_MODE_LIVE && !ebb__vm_can_wait(L))
        return no_client(L, "ebb.prometheus_query cannot wait for the server from inside a callback "
                            "or a coroutine of the script");
    rc = e->prom_start(e->prom_ud, e, query, ebb__engine_now(e), &now);
    if (rc == EBB_CYCLE_WAITING) {
        ebb__vm_engine_yield(L);
        return lua_yieldk(L, 0, 0, query_cont);
    }
    if (now == NULL)
        return no_client(L, rc == 0 ? "prometheus client not initialized (no answer)"
                                    : ebb_strerror(rc));
    n = push_result(L, now);
    ebb_prom_result_free(now);
    return n;
}

static const luaL_Reg funcs[] = {
    { "prometheus_query", l_prometheus_query },
    { NULL, NULL },
};

void ebb__lua_open_prometheus(lua_State *L)
{
    luaL_setfuncs(L, funcs, 0);
}
