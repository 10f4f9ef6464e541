/* Lua plugins: the plugin engine (struct ebb_plugin_ops, engine.h) that
 * runs plugin files in sandboxed lua_States. The core calls it for every
 * Lua plugin instance; it is the only place that turns the core's calls
 * (create, deschedule/balance, filter/preEvictionFilter, evict) into calls
 * into Lua, as Redis's function engines implement struct engine.
 *
 *   definition  a plugin file's table: name, the extension functions,
 *               args, validate, triggers, creates (an evict plugin's)
 *   instance    one lua_State per plugin instance (vm.c): the table, the
 *               decoded args and ctx = {args, plugin, profile, evictor,
 *               state}, kept between cycles
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "ebb/lua.h"
#include "lua/lua_int.h"

static bool valid_plugin_name(const char *s)
{
    if (*s == '\0' || strlen(s) > 128)
        return false;
    for (; *s; s++)
        if (!(*s == '_' || *s == '-' || *s == '.' || (*s >= 'a' && *s <= 'z') ||
              (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

/* A state for a plugin, its collector stopped: while a plugin file, its
 * modules and its args are set up nearly everything allocated is kept,
 * and the generational collector's early major cycles cost several times
 * the setup itself (2.4 ms an instance instead of 0.4). The cap still
 * holds (a failed allocation collects at once); plugin_create restarts it. */
static struct ebb_vm *new_vm(struct ebb_engine *e, const char *name,
                             const struct ebb_plugin_limits *lim)
{
    struct ebb_vm_opts o = {
        .engine = e,
        .name = name,
        .mem_limit = lim && lim->memory > 0 ? (size_t)lim->memory : e->mem_limit,
        .budget_ns = lim && lim->timeout_ns > 0 ? (uint64_t)lim->timeout_ns : e->budget_ns,
        .home = e->home,
        .policy_dirs = e->policy_dirs,
    };
    struct ebb_vm *vm = NULL;

    if (ebb__vm_create(&o, &vm) != 0)
        return NULL;
    /* the bindings: require("ebb.native") */
    luaL_getsubtable(vm->L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(vm->L, luaopen_ebb_native);
    lua_setfield(vm->L, -2, "ebb.native");
    lua_pop(vm->L, 1);
    lua_gc(vm->L, LUA_GCSTOP);
    return vm;
}

/* Check the table a plugin chunk returned (on top of the stack): fill the
 * name and the extension points. */
static int check_plugin_table(lua_State *L, const char *path, char **name, unsigned *exts,
                              struct ebb_error *err)
{
    const char *s;

    if (!lua_istable(L, -1))
        return ebb_error_set(err, EBB_ESCRIPT, path, 0, NULL,
                             "a plugin file must return a table (got %s)", luaL_typename(L, -1));
    if (ebb__rawfield(L, -1, "name") != LUA_TSTRING ||
        (s = ebb__lr_peekstr(L, -1, 128, EBB_LR_TEXT, NULL)) == NULL || !valid_plugin_name(s)) {
        lua_pop(L, 1);
        return ebb_error_set(err, EBB_ESCRIPT, path, 0, "name",
                             "the plugin table needs a `name`: a string of letters, digits, "
                             "'-', '_' or '.'");
    }
    if (name != NULL && (*name = strdup(s)) == NULL) {
        lua_pop(L, 1);
        return EBB_ENOMEM;
    }
    lua_pop(L, 1);
    *exts = 0;
    for (int x = 0; x < EBB_EXT_MAX; x++) {
        int t = ebb__rawfield(L, -1, ebb__ext_func(x));
        lua_pop(L, 1);
        if (t == LUA_TFUNCTION)
            *exts |= 1u << x;
        else if (t != LUA_TNIL)
            return ebb_error_set(err, EBB_ESCRIPT, path, 0, ebb__ext_func(x),
                                 "`%s` must be a function", ebb__ext_func(x));
    }
    if (*exts == 0)
        return ebb_error_set(err, EBB_ESCRIPT, path, 0, NULL,
                             "the plugin table has none of deschedule, balance, filter, "
                             "preevictionfilter, evict");
    if (ebb__rawfield(L, -1, "args") != LUA_TNIL && !lua_istable(L, -1)) {
        lua_pop(L, 1);
        return ebb_error_set(err, EBB_ESCRIPT, path, 0, "args",
                             "`args` must be a table of field types (see ebb.args)");
    }
    lua_pop(L, 1);
    if (ebb__rawfield(L, -1, "validate") != LUA_TNIL && !lua_isfunction(L, -1)) {
        lua_pop(L, 1);
        return ebb_error_set(err, EBB_ESCRIPT, path, 0, "validate", "`validate` must be a function");
    }
    lua_pop(L, 1);
    return ebb__evictor_check_table(L, path, *exts, err);
}

/* `triggers` of a plugin table (on top of the stack): a list of names. */
static int check_triggers(lua_State *L, const char *path, unsigned exts, unsigned *out,
                          struct ebb_error *err)
{
    int t = ebb__rawfield(L, -1, "triggers");
    lua_Integer n;

    *out = 0;
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    if (t != LUA_TTABLE) {
        lua_pop(L, 1);
        return ebb_error_set(err, EBB_ESCRIPT, path, 0, "triggers",
                             "`triggers` must be a list of change names such as \"node-taints\"");
    }
    /* the walk stops at the first entry that is not a change name */
    n = (lua_Integer)lua_rawlen(L, -1);   /* lr-ok: a border, never a bound on work */
    for (lua_Integer i = 1; i <= n; i++) {
        unsigned bit = 0;
        const char *tn = NULL;
        if (lua_rawgeti(L, -1, i) == LUA_TSTRING && (tn = ebb__lr_peekstr(L, -1, 64, EBB_LR_TEXT, NULL)) != NULL)
            bit = ebb_trigger_parse(tn);
        if (bit == 0) {
            char known[256];
            size_t k = 0;
            for (int b = 0; b < EBB_TRIGGER_MAX_BIT; b++)
                k += (size_t)snprintf(known + k, sizeof(known) - k, "%s%s", b ? ", " : "",
                                      ebb_trigger_name(1u << b));
            ebb_error_set(err, EBB_ESCRIPT, path, 0, "triggers",
                          "triggers[%lld]: %s%s%s is not a change ebb reports (one of: %s)", (long long)i,
                          tn ? "\"" : "", tn ? tn : luaL_typename(L, -1), tn ? "\"" : "", known);
            lua_pop(L, 2);
            return EBB_ESCRIPT;
        }
        lua_pop(L, 1);
        *out |= bit;
    }
    lua_pop(L, 1);
    if (*out && !(exts & ((1u << EBB_EXT_DESCHEDULE) | (1u << EBB_EXT_BALANCE))))
        return ebb_error_set(err, EBB_ESCRIPT, path, 0, "triggers",
                             "`triggers` needs a deschedule or balance function to run");
    return 0;
}

static int plugin_define(struct ebb_engine *e, struct ebb_plugin_def *d, struct ebb_error *err)
{
    struct ebb_vm *vm;
    char chunk[PATH_MAX + 2];
    int rc;

    if ((vm = new_vm(e, d->path, NULL)) == NULL)
        return EBB_ENOMEM;
    snprintf(chunk, sizeof(chunk), "@%s", d->path);
    if ((rc = ebb__vm_dochunk(vm, d->source, d->source_len, chunk, err)) == 0 &&
        (rc = check_plugin_table(vm->L, d->path, &d->name, &d->exts, err)) == 0)
        rc = check_triggers(vm->L, d->path, d->exts, &d->triggers, err);
    ebb__vm_destroy(vm);
    return rc;
}

/* ---- instances ------------------------------------------------------------ */

static int plugin_create(struct ebb_engine *e, const struct ebb_policy *pol,
                      struct ebb_plugin_inst *inst, struct ebb_error *err)
{
    const struct ebb_plugin_def *d = inst->def;
    const struct ebb_plugin_config *pc = inst->pc;
    struct ebb_error e2 = { 0 };
    char chunk[PATH_MAX + 2];
    unsigned exts;
    lua_State *L;
    int rc;

    inst->table_ref = inst->ctx_ref = LUA_NOREF;
    if ((inst->vm = new_vm(e, d->name, pc ? &pc->limits : NULL)) == NULL)
        return EBB_ENOMEM;
    inst->vm->inst = inst;
    L = inst->vm->L;
    snprintf(chunk, sizeof(chunk), "@%s", d->path);
    if ((rc = ebb__vm_dochunk(inst->vm, d->source, d->source_len, chunk, err)) != 0)
        return rc;
    if ((rc = check_plugin_table(L, d->path, NULL, &exts, err)) != 0) {
        lua_pop(L, 1);
        return rc;
    }
    inst->table_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    /* args = ebb.args.decode(plugin.args, raw) */
    lua_pushcfunction(L, ebb__vm_require);
    lua_pushliteral(L, "ebb.args");
    if ((rc = ebb__vm_call(inst->vm, 1, 1, err)) != 0)
        return rc;
    if (lua_type(L, -1) == LUA_TTABLE)
        ebb__rawfield(L, -1, "decode");
    else
        lua_pushnil(L);
    lua_remove(L, -2);
    lua_rawgeti(L, LUA_REGISTRYINDEX, inst->table_ref);
    ebb__rawfield(L, -1, "args");
    lua_remove(L, -2);
    ebb__lua_push_val(L, pc ? pc->args : NULL);
    if ((rc = ebb__vm_call(inst->vm, 2, 3, err)) != 0)
        return rc;
    if (lua_isnil(L, -3)) {
        rc = ebb__plugin_args_error(pol, pc, ebb__lr_peekstr(L, -2, 1024, EBB_LR_TEXT, NULL),
                                    ebb__lr_peekstr(L, -1, 4096, EBB_LR_TEXT, NULL), err);
        lua_pop(L, 3);
        return rc;
    }
    lua_pop(L, 2);   /* decoded args on top */

    /* validate(args) -> true | nil|false, message [, field] */
    lua_rawgeti(L, LUA_REGISTRYINDEX, inst->table_ref);
    if (ebb__rawfield(L, -1, "validate") == LUA_TFUNCTION) {
        lua_remove(L, -2);
        lua_pushvalue(L, -2);
        if ((rc = ebb__vm_call(inst->vm, 1, 3, &e2)) != 0) {
            char msg[900];
            snprintf(msg, sizeof(msg), "validate failed: %s", e2.msg);
            rc = ebb__plugin_args_error(pol, pc, NULL, msg, err);
            lua_pop(L, 1);
            return rc;
        }
        if (!lua_toboolean(L, -3) && !lua_isnil(L, -2)) {
            const char *why = ebb__lr_peekstr(L, -2, 4096, EBB_LR_TEXT, NULL);
            rc = ebb__plugin_args_error(pol, pc, ebb__lr_peekstr(L, -1, 1024, EBB_LR_TEXT, NULL),
                                        why ? why : "invalid args", err);
            lua_pop(L, 4);
            return rc;
        }
        lua_pop(L, 3);
    } else {
        lua_pop(L, 2);
    }

    /* ctx = {args, plugin, profile, evictor, state} */
    lua_createtable(L, 0, 6);
    lua_insert(L, -2);
    lua_setfield(L, -2, "args");
    lua_pushstring(L, d->name);
    lua_setfield(L, -2, "plugin");
    lua_pushstring(L, inst->profile->name);
    lua_setfield(L, -2, "profile");
    lua_pushcfunction(L, ebb__vm_require);
    lua_pushliteral(L, "ebb.native");
    if ((rc = ebb__vm_call(inst->vm, 1, 1, err)) != 0) {
        lua_pop(L, 1);
        return rc;
    }
    lua_pop(L, 1);   /* loading ebb.native registers the metatables */
    ebb__lua_push_evictor(L);
    lua_setfield(L, -2, "evictor");
    lua_createtable(L, 0, 0);
    lua_setfield(L, -2, "state");
    inst->ctx_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_gc(L, LUA_GCRESTART);
    return 0;
}

/* ---- a plugin past its budget ----------------------------------------------- */

/* Once a call of an instance has run past its time budget, the instance is
 * set aside for the rest of the cycle: its later calls would most likely
 * run to the budget again, and a filter is called once per pod (a filter
 * that loops cost pods x budget a cycle). Every call into a Lua plugin
 * goes through these (run, resume, check, evict): plugin_leave sets the
 * instance aside when its call ended on the budget (vm->overran, set by
 * vm.c), plugin_aside refuses the calls after it. framework.c reports it
 * once and answers for the filters (ebb__plugin_pod_check). Calls outside
 * a cycle (cycle 0: creating and validating an instance) set nothing
 * aside: their failure fails the generation. */
static bool plugin_aside(const struct ebb_ctx *ctx, const struct ebb_plugin_inst *inst)
{
    return inst->aside_cycle != 0 && inst->aside_cycle == ctx->engine->cycle;
}

static int plugin_refuse(const struct ebb_ctx *ctx, struct ebb_error *err)
{
    return ebb_error_set(err, EBB_ELIMIT, NULL, 0, NULL, "set aside for the rest of cycle %d: a "
                         "call ran past its time budget", ctx->engine->cycle);
}

static void plugin_leave(const struct ebb_ctx *ctx, struct ebb_plugin_inst *inst)
{
    if (!inst->vm->overran)
        return;
    inst->vm->overran = false;
    if (ctx->engine->cycle != 0)
        inst->aside_cycle = ctx->engine->cycle;
}

/* [fn, ctx] of the instance's extension function on the stack */
static void push_call(struct ebb_plugin_inst *inst, int ext)
{
    lua_State *L = inst->vm->L;

    lua_rawgeti(L, LUA_REGISTRYINDEX, inst->table_ref);
    ebb__rawfield(L, -1, ebb__ext_func(ext));
    lua_remove(L, -2);
    lua_rawgeti(L, LUA_REGISTRYINDEX, inst->ctx_ref);
}

/* After a deschedule/balance finished (rc from the vm): a plugin may also
 * report failure by returning false|nil, "message". */
static int plugin_finish(struct ebb_ctx *ctx, int rc, struct ebb_error *err)
{
    struct ebb_plugin_inst *inst = ctx->plugin;
    lua_State *L = inst->vm->L;

    inst->vm->ctx = NULL;
    if (rc != 0)
        return rc;
    int t1 = lua_type(L, -2), t2 = lua_type(L, -1);
    if (t1 == LUA_TNIL && t2 == LUA_TNIL) {
        /* returned nothing: done */
    } else if (t1 == LUA_TBOOLEAN && lua_toboolean(L, -2)) {
        /* returned true */
    } else if ((t1 == LUA_TNIL || t1 == LUA_TBOOLEAN) && t2 == LUA_TSTRING) {
        rc = ebb_error_set(err, EBB_ESCRIPT, NULL, 0, NULL, "%s", ebb__lr_message(L, -1));
    } else {
        /* false alone, a number, a table...: not a success to count */
        rc = ebb_error_set(err, EBB_ESCRIPT, NULL, 0, NULL,
                           "returned %s%s: a %s function returns nothing or true when it is done, "
                           "false and a message when it fails",
                           t1 == LUA_TBOOLEAN ? "false" : lua_typename(L, t1),
                           t2 == LUA_TNIL ? "" : " and more", ebb__ext_func(ctx->ext));
    }
    lua_pop(L, 2);
    return rc;
}

static int plugin_run(struct ebb_ctx *ctx, struct ebb_node *const *nodes, size_t n,
                   struct ebb_error *err)
{
    struct ebb_plugin_inst *inst = ctx->plugin;
    int rc;

    if (plugin_aside(ctx, inst))
        return plugin_refuse(ctx, err);
    push_call(inst, ctx->ext);
    ebb__lua_push_nodelist(inst->vm->L, nodes, n);
    inst->vm->ctx = ctx;
    rc = ebb__vm_start(inst->vm, 2, 2, err);
    plugin_leave(ctx, inst);
    if (rc == EBB_VM_YIELDED)
        return EBB_CYCLE_WAITING;
    return plugin_finish(ctx, rc, err);
}

static int plugin_resume(struct ebb_ctx *ctx, struct ebb_error *err)
{
    struct ebb_plugin_inst *inst = ctx->plugin;
    int rc;

    inst->vm->ctx = ctx;
    rc = ebb__vm_resume(inst->vm, 2, err);
    plugin_leave(ctx, inst);
    if (rc == EBB_VM_YIELDED)
        return EBB_CYCLE_WAITING;
    return plugin_finish(ctx, rc, err);
}

static int plugin_check(struct ebb_ctx *ctx, const struct ebb_pod *pod, struct ebb_error *err)
{
    struct ebb_plugin_inst *inst = ctx->plugin;
    lua_State *L = inst->vm->L;
    struct ebb_ctx *prev = inst->vm->ctx;
    int rc;

    if (plugin_aside(ctx, inst))
        return plugin_refuse(ctx, err);
    push_call(inst, ctx->ext);
    ebb__lua_push_pod(L, pod);
    inst->vm->ctx = ctx;
    rc = ebb__vm_call(inst->vm, 2, 1, err);
    inst->vm->ctx = prev;
    plugin_leave(ctx, inst);
    if (rc != 0)
        return rc;
    rc = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return rc;
}

/* An evict plugin set aside declines, as one that fails does: the pod is
 * refused with the reason (`evictor`), never evicted some other way. */
static int plugin_evict(struct ebb_ctx *ctx, struct ebb_plugin_inst *inst, struct ebb_pod *pod,
                        const char *reason, struct ebb_evict_action *out, char *detail,
                        size_t detail_len)
{
    int rc;

    if (plugin_aside(ctx, inst)) {
        memset(out, 0, sizeof(*out));
        out->grace_period = -1;
        snprintf(detail, detail_len, "%s: set aside for the rest of the cycle (a call ran past "
                 "its time budget)", inst->def->name);
        return EBB_WHY_EVICTOR;
    }
    rc = ebb__lua_evictor_call(ctx, inst, pod, reason, out, detail, detail_len);
    plugin_leave(ctx, inst);
    return rc;
}

static size_t plugin_memory_used(const struct ebb_plugin_inst *inst)
{
    return inst->vm ? inst->vm->mem_used : 0;
}

static bool plugin_unchanged(const struct ebb_plugin_inst *a, const struct ebb_plugin_inst *b)
{
    const struct ebb_plugin_def *da = a->def, *db = b->def;

    return da->source_len == db->source_len && memcmp(da->source, db->source, da->source_len) == 0 &&
           ebb__vm_modules_unchanged(a->vm);
}

static void plugin_adopt(struct ebb_plugin_inst *kept, const struct ebb_plugin_inst *fresh,
                      struct ebb_engine *e)
{
    if (fresh != NULL) {
        /* the new limits apply to the instance kept */
        kept->vm->mem_limit = fresh->vm->mem_limit;
        kept->vm->budget_ns = fresh->vm->budget_ns;
    }
    kept->vm->engine = e;
    kept->vm->policy_dirs = e->policy_dirs;
}

static void plugin_destroy(struct ebb_plugin_inst *inst)
{
    ebb__vm_destroy(inst->vm);
    inst->vm = NULL;
}

static const struct ebb_plugin_ops lua_plugin_ops = {
    .name = "lua",
    .define = plugin_define,
    .create = plugin_create,
    .run = plugin_run,
    .resume = plugin_resume,
    .check = plugin_check,
    .evict = plugin_evict,
    .memory_used = plugin_memory_used,
    .unchanged = plugin_unchanged,
    .adopt = plugin_adopt,
    .destroy = plugin_destroy,
    .prom_queries = ebb__lua_prom_queries,
};

const struct ebb_plugin_ops *ebb_lua_plugins(void)
{
    return &lua_plugin_ops;
}
