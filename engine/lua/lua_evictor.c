/* Evict plugins: the Evictor interface of Koordinator's descheduler
 * framework (Filter(pod), Evict(ctx, pod, EvictOptions)) for Lua plugins
 * enabled under a profile's plugins.evict.
 *
 * evict.c calls the evict operation of the Lua plugin engine
 * (ebb__lua_evictor_call, lua_plugin.c) once the core has allowed an eviction
 * (filters, limits, budgets). The plugin's evict(ctx, pod, opts) acts
 * through ctx.api, a handle bound to that pod for that one call: one of
 * api:evict(), api:delete(), api:patch(), api:create(). The handle does not
 * send anything: it checks and records the request, and the core carries it
 * out after evict() returned true (simulation: into the plan; live: as the
 * HTTP request the strategy waits for). So a plugin cannot touch another
 * pod, act twice, change more than a pod's labels and annotations, or
 * create any kind but the one its table declares:
 *
 *   creates = { apiVersion = "scheduling.koordinator.sh/v1alpha1",
 *               kind = "PodMigrationJob", resource = "podmigrationjobs",
 *               namespaced = false }
 *
 * Also here: ebb.json(value) and ebb.rfc3339([seconds]), which evictors
 * need to write annotations and objects. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <cjson/cJSON.h>
#include "ebb/api_path.h"

#include "lua/lua_int.h"

#define API_MT "ebb.EvictorApi"
#define GUARD_MT "ebb.JsonGuard"
#define CREATES_KEY "ebb.evictor.creates"   /* registry: the declaration, as loaded */

/* One evict() call. */
struct ebb_evict_call {
    uint64_t serial;
    struct ebb_plugin_inst *inst;
    struct ebb_pod *pod;
    const char *strategy, *reason;
    int64_t grace_period;                   /* the policy's; -1: unset */
    bool acted;
    struct ebb_evict_action act;
};

struct api {
    uint64_t serial;
};

/* ---- JSON out of Lua values ------------------------------------------------- */

/* A cJSON tree owned by a userdata while it is built, so that a raise at
 * any point (a bad value, the memory cap) frees it with the userdata. */
struct guard {
    cJSON *j;
    struct ebb_charge charge;   /* the tree is malloc'd: charged as it grows */
};

static int l_guard_gc(lua_State *L)
{
    struct guard *g = luaL_checkudata(L, 1, GUARD_MT);
    cJSON_Delete(g->j);
    g->j = NULL;
    ebb__uncharge(L, &g->charge);
    return 0;
}

/* A guard freed when the binding returns (or raises). */
static struct guard *new_guard(lua_State *L)
{
    struct guard *g = lua_newuserdatauv(L, sizeof(*g), 0);
    g->j = NULL;
    g->charge.charged = 0;
    luaL_setmetatable(L, GUARD_MT);
    lua_toclose(L, -1);
    return g;
}

/* What a value written as JSON may come to: as much as the API server takes
 * in a request (3 MiB), and a bounded number of values; the tree is
 * malloc'd outside the plugin's memory cap. */
#define JSON_MAX_BYTES ((size_t)3 << 20)
#define JSON_MAX_VALUES 200000

struct jpath {
    const char *what;          /* "ebb.json", "ctx.api:create" */
    char buf[256];
    size_t len;
    size_t bytes, values;      /* so far: about the size of the text */
    struct guard *g;           /* charged for the tree as it grows */
    bool api;                  /* a request body: keys as the API server reads them */
};

/* What one value of the tree costs besides its text (a cJSON node). */
#define JSON_NODE_COST 64

static size_t jpath_push(struct jpath *p, const char *key, lua_Integer index)
{
    size_t old = p->len;
    int n = key ? snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "%s%.64s", p->len ? "." : "", key)
                : snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "[%lld]", (long long)index);
    if (n > 0)
        p->len = p->len + (size_t)n < sizeof(p->buf) ? p->len + (size_t)n : sizeof(p->buf) - 1;
    return old;
}

static void jpath_pop(struct jpath *p, size_t old)
{
    p->len = old;
    p->buf[old] = '\0';
}

static int jfail(lua_State *L, const struct jpath *p, const char *msg)
{
    return luaL_error(L, "%s: %s%s%s", p->what, p->len ? p->buf : "", p->len ? ": " : "", msg);
}

/* A sequence (1..n, nothing else) or a map; an empty table is a map unless
 * it came from a policy list (ebb.seq). */
static bool is_array(lua_State *L, int idx, const struct jpath *p)
{
    size_t n = ebb__lr_len(L, idx, SIZE_MAX, "%s", p->what);

    if (luaL_getmetafield(L, idx, "__name") != LUA_TNIL) {
        size_t nl;
        const char *name = ebb__lr_peekstr(L, -1, 16, 0, &nl);
        bool seq = name != NULL && nl == 7 && memcmp(name, "ebb.seq", 7) == 0;
        lua_pop(L, 1);
        if (seq)
            return true;
    }
    if (n > JSON_MAX_VALUES)
        jfail(L, p, "larger than an API request may be (3 MiB, 200000 values)");
    if (n == 0)
        return false;
    return ebb__lr_count(L, idx, SIZE_MAX, "%s", p->what) == n;
}

static int member_cmp(const void *a, const void *b)
{
    return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* Keys in byte order: Lua's table order changes from run to run, and a
 * plan must not. Keys are unique, so any sort gives the one order; the
 * members are sorted through an array in the capped heap. */
static void sort_members(lua_State *L, cJSON *obj)
{
    size_t n = 0;
    cJSON **v;

    for (cJSON *c = obj->child; c != NULL; c = c->next)
        n++;
    if (n < 2)
        return;
    v = lua_newuserdatauv(L, n * sizeof(*v), 0);
    n = 0;
    for (cJSON *c = obj->child; c != NULL; c = c->next)
        v[n++] = c;
    qsort(v, n, sizeof(*v), member_cmp);
    for (size_t i = 0; i < n; i++) {
        v[i]->next = i + 1 < n ? v[i + 1] : NULL;
        v[i]->prev = i > 0 ? v[i - 1] : v[n - 1];   /* cJSON keeps the tail in child->prev */
    }
    obj->child = v[0];
    lua_pop(L, 1);
}

/* Count a value of about `bytes` of text towards the bounds, and charge
 * the tree to the plugin's cap as it grows (before the value is made). */
static void jcount(lua_State *L, struct jpath *p, size_t bytes)
{
    size_t cost;

    p->bytes += bytes + 2;
    if (++p->values > JSON_MAX_VALUES || p->bytes > JSON_MAX_BYTES)
        jfail(L, p, "larger than an API request may be (3 MiB, 200000 values)");
    cost = p->bytes + p->values * JSON_NODE_COST;
    if (cost > p->g->charge.charged + ((size_t)64 << 10) || (p->values & 255) == 0) {
        if (cost > p->g->charge.charged)
            ebb__charge(L, &p->g->charge, cost - p->g->charge.charged);
        ebb__vm_check(L);
    }
}

/* A key of a request body: the API server and the controllers that read
 * the object match field names case-insensitively in places (Go's
 * encoding/json folds case, Unicode included), so a body whose checks look
 * at "spec" must not also carry a "Spec" or a non-ASCII look-alike. Keys
 * are printable ASCII, and no two keys of one map differ only in case. */
static void api_key(lua_State *L, struct jpath *p, const char *k, size_t len, cJSON *obj)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)k[i] < 0x20 || (unsigned char)k[i] >= 0x7f)
            jfail(L, p, "a key of a request body is printable ASCII");
    for (const cJSON *c = obj->child; c != NULL; c = c->next)
        if (strlen(c->string) == len && strncasecmp(c->string, k, len) == 0)
            jfail(L, p, "two keys of one map differ only in case");
}

static void attach(cJSON *parent, const char *key, cJSON *item)
{
    if (cJSON_IsArray(parent))
        cJSON_AddItemToArray(parent, item);
    else
        cJSON_AddItemToObject(parent, key, item);
}

/* The value at idx as a new child of `parent` (under `key` for a map).
 * Every node is attached before its children are made: a raise leaves the
 * whole tree reachable from the guard. ebb.null is JSON null. */
static void to_json(lua_State *L, int idx, cJSON *parent, const char *key, struct jpath *p,
                    int depth)
{
    cJSON *j = NULL;
    size_t mark;

    idx = lua_absindex(L, idx);
    if (depth > 32 || !lua_checkstack(L, 4))
        jfail(L, p, "nested too deeply");
    switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
        j = cJSON_CreateBool(lua_toboolean(L, idx));
        break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            j = cJSON_CreateNumber((double)lua_tointeger(L, idx));
        } else {
            double d = lua_tonumber(L, idx);
            if (!isfinite(d))
                jfail(L, p, "not a finite number");
            j = cJSON_CreateNumber(d);
        }
        break;
    case LUA_TSTRING: {
        size_t len;
        const char *s = ebb__lr_peekstr(L, idx, JSON_MAX_BYTES, 0, &len);
        if (s == NULL)
            jfail(L, p, "a string longer than a request may be");
        jcount(L, p, len);
        /* a value may hold a NUL (written \u0000); it is then no cJSON
         * string, so no check reads it as one (a name with a NUL matches
         * nothing); keys may not (below) */
        j = memchr(s, '\0', len) != NULL ? ebb_json_text(s, len) : cJSON_CreateString(s);
        break;
    }
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) != NULL)
            jfail(L, p, "a light userdata cannot be written as JSON");
        j = cJSON_CreateNull();
        break;
    case LUA_TTABLE:
        j = is_array(L, idx, p) ? cJSON_CreateArray() : cJSON_CreateObject();
        break;
    default: {
        char msg[64];
        snprintf(msg, sizeof(msg), "a %s cannot be written as JSON", luaL_typename(L, idx));
        jfail(L, p, msg);
    }
    }
    if (j == NULL)
        jfail(L, p, "out of memory");
    attach(parent, key, j);   /* first: a raise below leaves it in the guard's tree */
    jcount(L, p, key ? strlen(key) + 8 : 8);
    if (!cJSON_IsArray(j) && !cJSON_IsObject(j))
        return;
    if (cJSON_IsArray(j)) {
        lua_Integer n = (lua_Integer)ebb__lr_len(L, idx, JSON_MAX_VALUES, "%s", p->what);
        for (lua_Integer i = 1; i <= n; i++) {
            mark = jpath_push(p, NULL, i - 1);
            lua_rawgeti(L, idx, i);
            to_json(L, -1, j, NULL, p, depth + 1);
            lua_pop(L, 1);
            jpath_pop(p, mark);
        }
        return;
    }
    {
    size_t it = 0;
    lua_pushnil(L);
    while (ebb__lr_next(L, idx, &it, JSON_MAX_VALUES, "%s", p->what)) {
        size_t klen;
        const char *k = ebb__lr_peekstr(L, -2, JSON_MAX_BYTES, EBB_LR_TEXT, &klen);
        if (k == NULL) {
            char shown[256];
            if (lua_type(L, -2) != LUA_TSTRING)
                jfail(L, p, "a map with a key that is not a string");
            ebb__lr_show(L, -2, shown, sizeof(shown));
            jfail(L, p, lua_pushfstring(L, "a map key with a NUL byte: %s", shown));
        }
        if (p->api)
            api_key(L, p, k, klen, j);
        mark = jpath_push(p, k, 0);
        to_json(L, -1, j, k, p, depth + 1);
        lua_pop(L, 1);
        jpath_pop(p, mark);
    }
    }
    sort_members(L, j);
}

/* The value at idx as a tree owned by a guard pushed on the stack (closed
 * when the binding returns). `api`: a request body (api_key's rules). */
static cJSON *json_of(lua_State *L, int idx, const char *what, bool api)
{
    struct jpath p = { what, "", 0, 0, 0, NULL, api };

    idx = lua_absindex(L, idx);
    p.g = new_guard(L);
    if ((p.g->j = cJSON_CreateArray()) == NULL)
        luaL_error(L, "%s: out of memory", what);
    to_json(L, idx, p.g->j, NULL, &p, 0);
    return p.g->j->child;
}

/* ebb.json(value) -> string                                       [-0, +1, e]
 * Compact JSON, map keys sorted; ebb.null is null; an empty table is {}. */
static int l_json(lua_State *L)
{
    char *s;

    luaL_checkany(L, 1);
    if (lua_isnil(L, 1))
        return luaL_argerror(L, 1, "nil is not a JSON value (ebb.null is null)");
    char **keep = (char **)ebb__free_guard(L);

    s = *keep = ebb_json_print(json_of(L, 1, "ebb.json", false), false);
    if (s == NULL)
        return luaL_error(L, "ebb.json: out of memory");
    lua_pushstring(L, s);   /* may raise: the guard frees s */
    return 1;
}

/* ebb.rfc3339([seconds]) -> "2026-01-02T03:04:05Z"                [-0, +1, e]
 * metav1.Time's format; without an argument, the engine clock (ebb.now). */
static int l_rfc3339(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    char buf[40];
    int64_t t;

    if (lua_isnoneornil(L, 1)) {
        if (vm == NULL || vm->engine == NULL)
            return luaL_error(L, "ebb.rfc3339: no engine clock here; pass the seconds");
        t = ebb__engine_now(vm->engine);
    } else {
        t = ebb__lr_int(L, 1, LUA_MININTEGER, LUA_MAXINTEGER, "ebb.rfc3339: seconds");
    }
    ebb_time_format(t, buf, sizeof(buf));
    lua_pushstring(L, buf);
    return 1;
}

/* ---- the declaration ---------------------------------------------------------- */

static bool name_chars(const char *s, const char *extra)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr(extra, *s)))
            return false;
    return true;
}

/* A DNS-1123 subdomain (an object name); `prefix`: generateName, which may
 * end with '-'. */
static bool dns_subdomain(const char *s, bool prefix)
{
    size_t n = strlen(s);

    if (n == 0 || n > 253 || !name_chars(s, "-."))
        return false;
    if (s[0] == '-' || s[0] == '.' || s[n - 1] == '.')
        return false;
    return prefix || s[n - 1] != '-';
}

static int bad_creates(struct ebb_error *err, const char *path, const char *field, const char *msg)
{
    return ebb_error_set(err, EBB_ESCRIPT, path, 0, field,
                         "%s: `creates` is {apiVersion = \"group/version\", kind = \"Kind\" "
                         "[, resource = \"plural\"] [, namespaced = true|false]}", msg);
}

int ebb__evictor_check_table(lua_State *L, const char *path, unsigned exts, struct ebb_error *err)
{
    static const char *const keys[] = { "apiVersion", "kind", "resource", "namespaced", NULL };
    char av[128], kind[64], res[64];
    bool namespaced = true;
    int t = ebb__rawfield(L, -1, "creates");

    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    if (!(exts & (1u << EBB_EXT_EVICT))) {
        lua_pop(L, 1);
        return ebb_error_set(err, EBB_ESCRIPT, path, 0, "creates",
                             "`creates` declares what an evict plugin creates, and this "
                             "plugin has no `evict` function");
    }
    if (t != LUA_TTABLE) {
        lua_pop(L, 1);
        return bad_creates(err, path, "creates", "not a table");
    }
    /* read without raising (this runs outside a protected call): a key or
     * value that is not plain text is refused like any wrong one */
    lua_pushnil(L);
    while (lua_next(L, -2)) {   /* lr-ok: stops at the first unknown key; known ones are 4 */
        bool known = false;
        const char *k;
        size_t kl;
        lua_pop(L, 1);
        k = ebb__lr_peekstr(L, -1, 64, EBB_LR_TEXT, &kl);
        for (int i = 0; keys[i] && k != NULL; i++)
            known |= strlen(keys[i]) == kl && memcmp(k, keys[i], kl) == 0;
        if (!known) {
            lua_pop(L, 2);
            return bad_creates(err, path, "creates", "an unknown key");
        }
    }
    if (ebb__rawfield(L, -1, "apiVersion") != LUA_TSTRING ||
        ebb__lr_peekstr(L, -1, sizeof(av) - 1, EBB_LR_TEXT, NULL) == NULL ||
        snprintf(av, sizeof(av), "%s", ebb__lr_peekstr(L, -1, sizeof(av) - 1, 0, NULL)) >= (int)sizeof(av) ||
        !name_chars(av, "-./") || av[0] == '\0' || strchr(av, '/') != strrchr(av, '/') ||
        av[0] == '/' || av[strlen(av) - 1] == '/') {
        lua_pop(L, 2);
        return bad_creates(err, path, "creates.apiVersion", "not an apiVersion");
    }
    lua_pop(L, 1);
    if (ebb__rawfield(L, -1, "kind") != LUA_TSTRING ||
        ebb__lr_peekstr(L, -1, sizeof(kind) - 1, EBB_LR_TEXT, NULL) == NULL ||
        snprintf(kind, sizeof(kind), "%s", ebb__lr_peekstr(L, -1, sizeof(kind) - 1, 0, NULL)) >= (int)sizeof(kind) ||
        kind[0] < 'A' || kind[0] > 'Z') {
        lua_pop(L, 2);
        return bad_creates(err, path, "creates.kind", "not a Kind (CamelCase)");
    }
    for (const char *k = kind; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9'))) {
            lua_pop(L, 2);
            return bad_creates(err, path, "creates.kind", "not a Kind (CamelCase)");
        }
    lua_pop(L, 1);
    if ((t = ebb__rawfield(L, -1, "resource")) == LUA_TNIL) {
        size_t n = 0;
        for (const char *k = kind; *k && n + 2 < sizeof(res); k++)
            res[n++] = (char)(*k >= 'A' && *k <= 'Z' ? *k - 'A' + 'a' : *k);
        res[n++] = 's';
        res[n] = '\0';
    } else if (t != LUA_TSTRING || ebb__lr_peekstr(L, -1, sizeof(res) - 1, EBB_LR_TEXT, NULL) == NULL ||
               snprintf(res, sizeof(res), "%s", ebb__lr_peekstr(L, -1, sizeof(res) - 1, 0, NULL)) >= (int)sizeof(res) ||
               res[0] == '\0' || !name_chars(res, "")) {
        lua_pop(L, 2);
        return bad_creates(err, path, "creates.resource", "not a resource name (lowercase plural)");
    }
    lua_pop(L, 1);
    if ((t = ebb__rawfield(L, -1, "namespaced")) == LUA_TBOOLEAN) {
        namespaced = lua_toboolean(L, -1);
    } else if (t != LUA_TNIL) {
        lua_pop(L, 2);
        return bad_creates(err, path, "creates.namespaced", "not a boolean");
    }
    lua_pop(L, 2);
    /* What the checks use is this copy, out of the script's reach: a plugin
     * cannot widen its declaration at run time. */
    lua_createtable(L, 0, 4);
    lua_pushstring(L, av);
    lua_setfield(L, -2, "apiVersion");
    lua_pushstring(L, kind);
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, res);
    lua_setfield(L, -2, "resource");
    lua_pushboolean(L, namespaced);
    lua_setfield(L, -2, "namespaced");
    lua_setfield(L, LUA_REGISTRYINDEX, CREATES_KEY);
    return 0;
}

/* ---- ctx.api ------------------------------------------------------------------ */

static char *dup_str(lua_State *L, const char *s)
{
    char *d = strdup(s);
    if (d == NULL)
        luaL_error(L, "not enough memory");
    return d;
}

/* The call a handle belongs to; raises when it is spent or has acted. The
 * first argument may be the pod itself (it must be the call's). *arg: the
 * index of the method's own first argument. */
static struct ebb_evict_call *api_call(lua_State *L, const char *method, int *arg)
{
    struct api *u = luaL_checkudata(L, 1, API_MT);
    struct ebb_vm *vm = ebb__vm_of(L);
    struct ebb_evict_call *c = vm && vm->engine ? vm->engine->evictor.call : NULL;
    struct ebb_pod *p;

    if (c == NULL || c->serial != u->serial)
        luaL_error(L, "ctx.api:%s: this handle is spent: it acts only during the evict() call "
                      "it was given to", method);
    if (c->acted)
        luaL_error(L, "ctx.api:%s: one action per evict() call, and this call has already "
                      "asked to %s", method, c->act.text);
    *arg = 2;
    if ((p = ebb__lua_to_pod(L, 2)) != NULL) {
        if (p != c->pod)
            luaL_error(L, "ctx.api:%s: the handle acts only on pod %s/%s, not on %s/%s", method,
                       c->pod->ns, c->pod->name, p->ns, p->name);
        *arg = 3;
    }
    return c;
}

static int64_t opt_grace(lua_State *L, int t, const char *method, int64_t dflt)
{
    int64_t v;

    ebb__lr_field(L, t, "gracePeriodSeconds");   /* 30.0 is 30 */
    v = ebb__lr_optint(L, -1, dflt, 0, LUA_MAXINTEGER, "ctx.api:%s: delete_options.gracePeriodSeconds",
                       method);
    lua_pop(L, 1);
    return v;
}

/* Delete options at `arg` (a table or nothing): only the keys in `allowed`. */
static void check_delete_options(lua_State *L, int arg, const char *method, const char *const *allowed)
{
    size_t it = 0;

    if (!ebb__lr_opttable(L, arg, "ctx.api:%s: delete options", method))
        return;
    lua_pushnil(L);
    while (ebb__lr_next(L, arg, &it, 16, "ctx.api:%s: delete options", method)) {
        bool known = false;
        size_t kl;
        const char *k = ebb__lr_peekstr(L, -2, 64, 0, &kl);
        char shown[256];
        for (int i = 0; allowed[i] && k != NULL; i++)
            known |= strlen(allowed[i]) == kl && memcmp(k, allowed[i], kl) == 0;
        if (!known) {
            ebb__lr_show(L, -2, shown, sizeof(shown));
            luaL_error(L, "ctx.api:%s: unknown delete option %s (%s%s%s)", method, shown, allowed[0],
                       allowed[1] ? ", " : "", allowed[1] ? allowed[1] : "");
        }
        lua_pop(L, 1);
    }
}

/* api:evict([delete_options]) -> true                             [-0, +1, e]
 * The Eviction API, as without an evict plugin (PDBs are the API's to
 * enforce too). delete_options: {gracePeriodSeconds = n}; without it, the
 * policy's gracePeriodSeconds. */
static int l_api_evict(lua_State *L)
{
    static const char *const allowed[] = { "gracePeriodSeconds", NULL };
    int a;
    struct ebb_evict_call *c = api_call(L, "evict", &a);
    int64_t grace = c->grace_period;

    check_delete_options(L, a, "evict", allowed);
    if (lua_istable(L, a))
        grace = opt_grace(L, a, "evict", grace);
    c->act.text = dup_str(L, "evict");
    c->act.method = NULL;
    c->act.grace_period = grace;
    c->acted = true;
    lua_pushboolean(L, 1);
    return 1;
}

static void set_body(lua_State *L, struct ebb_evict_call *c, cJSON *body)
{
    char *s = ebb_json_print(body, false);   /* valid UTF-8 whatever the strings hold */
    if (s == NULL)
        luaL_error(L, "not enough memory");
    c->act.body = s;
}

static void set_pod_path(lua_State *L, struct ebb_evict_call *c)
{
    char path[600];
    if (ebb_api_pod_path(path, sizeof(path), c->pod->ns, c->pod->name) != 0)
        luaL_error(L, "the pod's name is too long for a request path");
    c->act.path = dup_str(L, path);
}

/* api:delete([delete_options]) -> true                            [-0, +1, e]
 * DELETE the pod, with a precondition on its uid (a pod recreated under the
 * same name is not touched). delete_options: {gracePeriodSeconds = n,
 * propagationPolicy = "Orphan"|"Background"|"Foreground"}; the grace period
 * defaults to the policy's. */
static int l_api_delete(lua_State *L)
{
    static const char *const allowed[] = { "gracePeriodSeconds", "propagationPolicy", NULL };
    static const char *const policies[] = { "Orphan", "Background", "Foreground", NULL };
    int a;
    struct ebb_evict_call *c = api_call(L, "delete", &a);
    int64_t grace = c->grace_period;
    const char *prop = NULL;
    cJSON *body, *pre;

    check_delete_options(L, a, "delete", allowed);
    if (lua_istable(L, a)) {
        grace = opt_grace(L, a, "delete", grace);
        if (ebb__lr_field(L, a, "propagationPolicy") != LUA_TNIL)
            prop = policies[ebb__lr_option(L, -1, NULL, policies,
                                           "ctx.api:delete: delete_options.propagationPolicy")];
    }
    new_guard(L)->j = body = cJSON_CreateObject();
    if (body == NULL)
        return luaL_error(L, "not enough memory");
    cJSON_AddStringToObject(body, "kind", "DeleteOptions");
    cJSON_AddStringToObject(body, "apiVersion", "v1");
    if (grace >= 0)
        cJSON_AddNumberToObject(body, "gracePeriodSeconds", (double)grace);
    if (prop != NULL)
        cJSON_AddStringToObject(body, "propagationPolicy", prop);
    if (c->pod->uid != NULL) {
        pre = cJSON_AddObjectToObject(body, "preconditions");
        cJSON_AddStringToObject(pre, "uid", c->pod->uid);
    }
    set_pod_path(L, c);
    set_body(L, c, body);
    c->act.text = dup_str(L, "delete");
    c->act.method = "DELETE";
    c->acted = true;
    lua_pushboolean(L, 1);
    return 1;
}

/* metadata.labels / metadata.annotations of a patch: string -> string or
 * ebb.null (remove). Raises naming the field. */
/* Returns how many entries it has (at most JSON_MAX_VALUES). */
static size_t check_string_map(lua_State *L, int t, const char *field)
{
    size_t it = 0;

    ebb__lr_table(L, t, "ctx.api:patch: metadata.%s", field);
    lua_pushnil(L);
    while (ebb__lr_next(L, t, &it, JSON_MAX_VALUES, "ctx.api:patch: metadata.%s", field)) {
        bool null = lua_islightuserdata(L, -1) && lua_touserdata(L, -1) == NULL;
        ebb__lr_str(L, -2, EBB_LR_NAME_MAX, EBB_LR_TEXT | EBB_LR_NONEMPTY, NULL,
                    "ctx.api:patch: metadata.%s (a key)", field);
        if (!null)
            ebb__lr_str(L, -1, JSON_MAX_BYTES, 0, NULL,
                        "ctx.api:patch: metadata.%s (a value: a string, or ebb.null to remove it)",
                        field);
        lua_pop(L, 1);
    }
    return it;
}

/* A key of the table at t other than a and b: raise, naming it. */
static void only_keys(lua_State *L, int t, const char *where, const char *a, const char *b)
{
    size_t it = 0;

    lua_pushnil(L);
    while (ebb__lr_next(L, t, &it, 16, "ctx.api:patch: %s", where[0] ? where : "the patch")) {
        size_t kl;
        const char *k = ebb__lr_peekstr(L, -2, 64, 0, &kl);
        char shown[256];
        lua_pop(L, 1);
        if (k != NULL && ((strlen(a) == kl && memcmp(k, a, kl) == 0) ||
                          (b && strlen(b) == kl && memcmp(k, b, kl) == 0)))
            continue;
        ebb__lr_show(L, -1, shown, sizeof(shown));
        if (k != NULL && kl > 0 && kl <= 64 && strspn(k, "abcdefghijklmnopqrstuvwxyz"
                                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") == kl)
            luaL_error(L, "ctx.api:patch: only metadata.labels and metadata.annotations of the pod "
                          "can be patched, not %s%s", where, k);   /* a plain name, as it is */
        luaL_error(L, "ctx.api:patch: only metadata.labels and metadata.annotations of the pod "
                      "can be patched, not %s%s", where, shown);
    }
}

/* "patch annotations a, b; labels c (removed)" */
static void patch_text(const cJSON *meta, char *text, size_t len)
{
    static const char *const fields[] = { "annotations", "labels" };
    size_t n = (size_t)snprintf(text, len, "patch");

    for (int f = 0; f < 2; f++) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(meta, fields[f]), *k;
        if (m == NULL)
            continue;
        if (n < len)
            n += (size_t)snprintf(text + n, len - n, "%s %s", f && n > 5 ? ";" : "", fields[f]);
        cJSON_ArrayForEach(k, m) {
            if (n < len)
                n += (size_t)snprintf(text + n, len - n, "%s %s%s", k == m->child ? "" : ",",
                                      k->string, cJSON_IsNull(k) ? " (removed)" : "");
        }
    }
}

/* api:patch(merge_patch) -> true                                  [-0, +1, e]
 * A JSON merge patch of the pod's metadata.labels and metadata.annotations
 * (values: strings, or ebb.null to remove a key), sent with the pod's uid:
 * the API refuses it (422) for a pod recreated under the same name. */
static int l_api_patch(lua_State *L)
{
    static const char *const fields[] = { "labels", "annotations" };
    int a, meta, n = 0;
    struct ebb_evict_call *c = api_call(L, "patch", &a);
    char text[512];
    struct guard *g;
    cJSON *body, *jm;

    if (!lua_istable(L, a))
        return luaL_error(L, "ctx.api:patch: expected a merge patch table "
                             "{metadata = {labels = {...}, annotations = {...}}}, got %s",
                          luaL_typename(L, a));
    only_keys(L, a, "", "metadata", NULL);
    ebb__lr_field(L, a, "metadata");
    meta = lua_gettop(L);
    if (!lua_istable(L, meta))
        return luaL_error(L, "ctx.api:patch: metadata must be a table, got %s",
                          luaL_typename(L, meta));
    only_keys(L, meta, "metadata.", "labels", "annotations");
    for (int f = 0; f < 2; f++) {
        if (ebb__lr_field(L, meta, fields[f]) != LUA_TNIL)
            n += (int)check_string_map(L, lua_gettop(L), fields[f]);
        lua_pop(L, 1);
    }
    if (n == 0)
        return luaL_error(L, "ctx.api:patch: the patch changes no label or annotation");
    if (n > JSON_MAX_VALUES)
        return luaL_error(L, "ctx.api:patch: more than %d labels and annotations", JSON_MAX_VALUES);

    g = new_guard(L);
    g->j = body = cJSON_CreateObject();
    if (body == NULL || (jm = cJSON_AddObjectToObject(body, "metadata")) == NULL)
        return luaL_error(L, "not enough memory");
    if (c->pod->uid != NULL)
        cJSON_AddStringToObject(jm, "uid", c->pod->uid);
    /* the maps were checked above: keys and values are text, and bounded;
     * the tree is charged as it is made */
    ebb__charge(L, &g->charge, (size_t)n * JSON_NODE_COST);
    for (int f = 0; f < 2; f++) {
        cJSON *m;
        int t;
        size_t it = 0;
        if (ebb__lr_field(L, meta, fields[f]) == LUA_TNIL) {
            lua_pop(L, 1);
            continue;
        }
        t = lua_gettop(L);
        if ((m = cJSON_AddObjectToObject(jm, fields[f])) == NULL)
            return luaL_error(L, "not enough memory");
        lua_pushnil(L);
        while (ebb__lr_next(L, t, &it, JSON_MAX_VALUES, "ctx.api:patch: metadata.%s", fields[f])) {
            size_t kl, vl = 0;
            const char *k = ebb__lr_str(L, -2, EBB_LR_NAME_MAX, EBB_LR_TEXT, &kl, "ctx.api:patch: key");
            const char *v = lua_type(L, -1) == LUA_TSTRING
                                ? ebb__lr_str(L, -1, JSON_MAX_BYTES, 0, &vl, "ctx.api:patch: value")
                                : NULL;
            cJSON *item;
            ebb__charge(L, &g->charge, kl + vl);   /* may raise: before anything is made */
            item = v == NULL ? cJSON_CreateNull()
                   : memchr(v, '\0', vl) != NULL ? ebb_json_text(v, vl)   /* \u0000 */
                                                 : cJSON_CreateString(v);
            if (item == NULL)
                return luaL_error(L, "not enough memory");
            cJSON_AddItemToObject(m, k, item);
            lua_pop(L, 1);
        }
        sort_members(L, m);
        lua_pop(L, 1);
    }
    patch_text(jm, text, sizeof(text));
    set_pod_path(L, c);
    set_body(L, c, body);
    c->act.text = dup_str(L, text);
    c->act.method = "PATCH";
    c->act.content_type = "application/merge-patch+json";
    c->acted = true;
    lua_pushboolean(L, 1);
    return 1;
}

/* Fields of a body are looked up as the controllers reading the object may
 * match them: without regard to case (api_key refused two keys that differ
 * only in case, so the match is the one key there is). */
static const cJSON *jget(const cJSON *o, const char *k)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItem(o, k) : NULL;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = jget(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* api:create(object) -> true                                      [-0, +1, e]
 * Create the one kind the plugin's `creates` declares: apiVersion and kind
 * are filled in when absent and must match when given; metadata.name or
 * generateName is required; a namespaced kind lives in the pod's namespace;
 * a spec.podRef, when there is one, must be this pod. */
static int l_api_create(lua_State *L)
{
    int a;
    struct ebb_evict_call *c = api_call(L, "create", &a);
    const char *av, *kind, *res, *name, *gen, *ns;
    bool namespaced;
    char path[700], text[400], msg[600];
    cJSON *obj, *meta, *ref;

    /* the engine's copy of the declaration, out of the script's reach */
    if (ebb__lr_field(L, LUA_REGISTRYINDEX, CREATES_KEY) != LUA_TTABLE)
        return luaL_error(L, "ctx.api:create: the plugin table declares no `creates` "
                             "{apiVersion = ..., kind = ...}: it creates nothing");
    ebb__lr_field(L, -1, "apiVersion");
    ebb__lr_field(L, -2, "kind");
    ebb__lr_field(L, -3, "resource");
    ebb__lr_field(L, -4, "namespaced");
    av = ebb__lr_peekstr(L, -4, 256, EBB_LR_TEXT, NULL);
    kind = ebb__lr_peekstr(L, -3, 256, EBB_LR_TEXT, NULL);
    res = ebb__lr_peekstr(L, -2, 256, EBB_LR_TEXT, NULL);
    namespaced = lua_toboolean(L, -1);
    if (av == NULL || kind == NULL || res == NULL)
        return luaL_error(L, "ctx.api:create: the plugin's `creates` declaration is not readable");
    if (!lua_istable(L, a))
        return luaL_error(L, "ctx.api:create: expected the %s as a table, got %s", kind,
                          luaL_typename(L, a));
    obj = json_of(L, a, "ctx.api:create", true);
    if (!cJSON_IsObject(obj))
        return luaL_error(L, "ctx.api:create: expected the %s as a map", kind);

#define REFUSE(...)                                                       \
    do {                                                                  \
        snprintf(msg, sizeof(msg), __VA_ARGS__);                          \
        return luaL_error(L, "ctx.api:create: %s", msg);                  \
    } while (0)
    if (jget(obj, "kind") == NULL)
        cJSON_AddStringToObject(obj, "kind", kind);
    if (jget(obj, "apiVersion") == NULL)
        cJSON_AddStringToObject(obj, "apiVersion", av);
    if (jstr(obj, "kind") == NULL || strcmp(jstr(obj, "kind"), kind) != 0 ||
        jstr(obj, "apiVersion") == NULL || strcmp(jstr(obj, "apiVersion"), av) != 0)
        REFUSE("the plugin creates only %s (%s), not %s (%s)", kind, av,
               jstr(obj, "kind") ? jstr(obj, "kind") : "?",
               jstr(obj, "apiVersion") ? jstr(obj, "apiVersion") : "?");
    meta = (cJSON *)jget(obj, "metadata");
    if (meta == NULL)
        meta = cJSON_AddObjectToObject(obj, "metadata");
    if (!cJSON_IsObject(meta))
        REFUSE("metadata must be a map");
    name = jstr(meta, "name");
    gen = jstr(meta, "generateName");
    if ((name == NULL || !dns_subdomain(name, false)) && (name != NULL || gen == NULL ||
                                                          !dns_subdomain(gen, true)))
        REFUSE("metadata.name (or generateName) must be a lowercase DNS subdomain "
               "(letters, digits, '-', '.'; at most 253), got \"%.80s\"",
               name ? name : gen ? gen : "");
    ns = jstr(meta, "namespace");
    if (namespaced) {
        if (jget(meta, "namespace") != NULL &&
            (ns == NULL || strcmp(ns, c->pod->ns) != 0))
            REFUSE("a %s is created in the pod's namespace \"%s\", not \"%.80s\"", kind,
                   c->pod->ns, ns ? ns : "?");
        if (ns == NULL)
            cJSON_AddStringToObject(meta, "namespace", c->pod->ns);
    } else if (jget(meta, "namespace") != NULL) {
        REFUSE("%s is cluster-scoped: metadata.namespace must be left out", kind);
    }
    ref = (cJSON *)jget(jget(obj, "spec"), "podRef");
    if (ref != NULL) {
        const char *rns = jstr(ref, "namespace"), *rname = jstr(ref, "name"), *ruid = jstr(ref, "uid");
        if (!cJSON_IsObject(ref) || rname == NULL || strcmp(rname, c->pod->name) != 0 ||
            (rns != NULL && strcmp(rns, c->pod->ns) != 0) ||
            (ruid != NULL && (c->pod->uid == NULL || strcmp(ruid, c->pod->uid) != 0)))
            REFUSE("spec.podRef must be the pod the call is for (%s/%s)", c->pod->ns, c->pod->name);
    }
#undef REFUSE
    sort_members(L, obj);
    sort_members(L, meta);
    if (ebb_api_collection_path(path, sizeof(path), av, namespaced ? c->pod->ns : NULL, res) != 0)
        return luaL_error(L, "ctx.api:create: the request path is too long");
    snprintf(text, sizeof(text), "create %s %s%s%s%s", kind, namespaced ? c->pod->ns : "",
             namespaced ? "/" : "", name ? name : gen, name ? "" : "*");
    c->act.path = dup_str(L, path);
    set_body(L, c, obj);
    c->act.text = dup_str(L, text);
    c->act.method = "POST";
    c->acted = true;
    lua_pushboolean(L, 1);
    return 1;
}

static int l_api_tostring(lua_State *L)
{
    struct api *u = luaL_checkudata(L, 1, API_MT);
    struct ebb_vm *vm = ebb__vm_of(L);
    struct ebb_evict_call *c = vm && vm->engine ? vm->engine->evictor.call : NULL;

    if (c != NULL && c->serial == u->serial)
        lua_pushfstring(L, "EvictorApi(%s/%s)", c->pod->ns, c->pod->name);
    else
        lua_pushliteral(L, "EvictorApi(spent)");
    return 1;
}

static const luaL_Reg api_methods[] = {
    { "evict", l_api_evict },
    { "delete", l_api_delete },
    { "patch", l_api_patch },
    { "create", l_api_create },
    { NULL, NULL },
};

/* ---- the call ----------------------------------------------------------------- */

/* Runs inside the protected call: everything that may raise (the handle,
 * the opts table, the plugin itself) happens here. */
static int evict_trampoline(lua_State *L)
{
    struct ebb_vm *vm = ebb__vm_of(L);
    struct ebb_evict_call *c = vm->engine->evictor.call;
    struct api *u;
    int ctx;

    lua_rawgeti(L, LUA_REGISTRYINDEX, c->inst->table_ref);
    ebb__rawfield(L, -1, "evict");
    if (!lua_isfunction(L, -1))
        return luaL_error(L, "the plugin table's `evict` is no longer a function");
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->inst->ctx_ref);
    ctx = lua_gettop(L);
    lua_pushliteral(L, "api");
    u = lua_newuserdatauv(L, sizeof(*u), 0);
    u->serial = c->serial;
    luaL_setmetatable(L, API_MT);
    lua_rawset(L, ctx);
    ebb__lua_push_pod(L, c->pod);
    lua_createtable(L, 0, 4);
    if (c->strategy) {
        lua_pushstring(L, c->strategy);
        lua_setfield(L, -2, "plugin");
    }
    lua_pushstring(L, c->inst->profile->name);
    lua_setfield(L, -2, "profile");
    if (c->reason) {
        lua_pushlstring(L, c->reason, ebb_str_len(c->reason));   /* interned: whole */
        lua_setfield(L, -2, "reason");
    }
    lua_createtable(L, 0, 1);
    if (c->grace_period >= 0) {
        lua_pushinteger(L, c->grace_period);
        lua_setfield(L, -2, "gracePeriodSeconds");
    }
    lua_setfield(L, -2, "delete_options");
    lua_call(L, 3, 2);
    return 2;
}

static void first_line(char *out, size_t len, const char *msg)
{
    size_t n = strcspn(msg, "\n");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), msg);
}

int ebb__lua_evictor_call(struct ebb_ctx *ctx, struct ebb_plugin_inst *inst, struct ebb_pod *pod,
                          const char *reason, struct ebb_evict_action *out, char *detail,
                          size_t detail_len)
{
    struct ebb_engine *e = ctx->engine;
    struct ebb_evict_call c = {
        .serial = ++e->evictor.call_serial,
        .inst = inst,
        .pod = pod,
        .strategy = ctx->plugin ? ctx->plugin->def->name : NULL,
        .reason = reason,
        .grace_period = e->policy && e->policy->has_grace_period ? e->policy->grace_period_seconds : -1,
        .act = { .grace_period = -1 },
    };
    struct ebb_ctx sub = { e, ctx->profile, inst, EBB_EXT_EVICT, ctx->plugin };
    struct ebb_error err = { 0 };
    struct ebb_ctx *prev;
    lua_State *L;
    char line[600];
    int rc;

    memset(out, 0, sizeof(*out));
    out->grace_period = -1;
    if (inst->def->type != EBB_PLUGIN_LUA || e->evictor.call != NULL) {
        snprintf(detail, detail_len, "%s: evict() cannot run inside another evict()",
                 inst->def->name);
        return EBB_WHY_EVICTOR;
    }
    L = inst->vm->L;
    lua_pushcfunction(L, evict_trampoline);
    prev = inst->vm->ctx;
    inst->vm->ctx = &sub;
    e->evictor.call = &c;
    rc = ebb__vm_call(inst->vm, 0, 2, &err);
    e->evictor.call = NULL;
    inst->vm->ctx = prev;
    /* the handle stays in ctx.api only for the call */
    lua_rawgeti(L, LUA_REGISTRYINDEX, inst->ctx_ref);
    lua_pushliteral(L, "api");
    lua_pushnil(L);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    if (rc != 0) {
        char msg[1000];
        ebb__evict_action_free(&c.act);
        snprintf(msg, sizeof(msg), "evict: %s", err.msg);
        ebb_plan_add_error(&e->plan, inst->def->name, inst->profile->name, msg);
        ebb_log(EBB_LOG_ERROR, "plugin %s (profile %s) failed: %s", inst->def->name,
                inst->profile->name, msg);
        first_line(line, sizeof(line), err.msg);
        snprintf(detail, detail_len, "%s failed: %s", inst->def->name, line);
        return EBB_WHY_EVICTOR;
    }
    if (!lua_toboolean(L, -2)) {
        const char *why = ebb__lr_peekstr(L, -1, 1024, EBB_LR_TEXT, NULL);
        if (why == NULL)
            why = "declined";
        snprintf(detail, detail_len, "%s: %s", inst->def->name, why);
        lua_pop(L, 2);
        ebb__evict_action_free(&c.act);
        return EBB_WHY_EVICTOR;
    }
    lua_pop(L, 2);
    if (!c.acted) {
        static const char none[] = "returned true without an action: call one of "
                                   "ctx.api:evict(), :delete(), :patch() or :create() first";
        ebb__evict_action_free(&c.act);
        snprintf(line, sizeof(line), "evict: %s", none);
        ebb_plan_add_error(&e->plan, inst->def->name, inst->profile->name, line);
        ebb_log(EBB_LOG_ERROR, "plugin %s (profile %s) failed: %s", inst->def->name,
                inst->profile->name, line);
        snprintf(detail, detail_len, "%s failed: %s", inst->def->name, none);
        return EBB_WHY_EVICTOR;
    }
    *out = c.act;
    return 0;
}

/* ---- module ------------------------------------------------------------------- */

static const luaL_Reg funcs[] = {
    { "json", l_json },
    { "rfc3339", l_rfc3339 },
    { NULL, NULL },
};

void ebb__lua_open_evictor(lua_State *L)
{
    luaL_newmetatable(L, API_MT);
    luaL_newlib(L, api_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_api_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "EvictorApi");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);

    luaL_newmetatable(L, GUARD_MT);
    lua_pushcfunction(L, l_guard_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_guard_gc);
    lua_setfield(L, -2, "__close");
    lua_pop(L, 1);

    luaL_setfuncs(L, funcs, 0);
}
