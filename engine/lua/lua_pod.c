/* Pods in Lua: "ebb.Pod" views over the cache and "ebb.PodList" sets.
 *
 * A Pod is a small userdata (slot, serial) resolved against the cache on
 * every access, so a view kept past the pod's deletion raises instead of
 * reading freed memory. Views are interned per state (lua_view.c), so the
 * same pod is the same value: usable as a table key, == works.
 * Fields are computed on access; tables (labels, owners...) are built on
 * demand and not cached, so reading them in a hot loop is the script's
 * choice, not a cost every script pays.
 *
 * A PodList is a C array of pod pointers stamped with the cache epoch; it
 * sorts and filters in C (priority/QoS order, age, restarts).
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <cjson/cJSON.h>

#include "ebb/selector.h"
#include "ebb/taints.h"
#include "ebb/affinity.h"
#include "ebb/quantity.h"
#include "lua/lua_int.h"

#define POD_MT "ebb.Pod"
#define PODLIST_MT "ebb.PodList"

static const struct ebb__view_kind POD_VIEWS = { POD_MT, "ebb.podviews" };

struct podlist {
    uint32_t n, cap;
    uint64_t epoch;
    struct ebb_pod **v;
};

void ebb__lua_push_pod(lua_State *L, const struct ebb_pod *p)
{
    if (p == NULL)
        lua_pushnil(L);
    else
        ebb__lua_push_view(L, &POD_VIEWS, p->slot, p->serial);
}

struct ebb_pod *ebb__lua_to_pod(lua_State *L, int idx)
{
    struct ebb__view *v = luaL_testudata(L, idx, POD_MT);
    struct ebb_vm *vm = ebb__vm_of(L);
    struct ebb_pod *p;

    if (v == NULL || vm == NULL || vm->engine == NULL || vm->engine->cache == NULL)
        return NULL;
    p = ebb_cache_pod_at(vm->engine->cache, v->slot);
    return p && p->serial == v->serial ? p : NULL;
}

struct ebb_pod *ebb__lua_check_pod(lua_State *L, int idx)
{
    struct ebb__view *v = luaL_checkudata(L, idx, POD_MT);
    struct ebb_pod *p = ebb_cache_pod_at(ebb__lua_cache(L), v->slot);

    if (p == NULL || p->serial != v->serial)
        luaL_error(L, "this pod no longer exists in the cluster view");
    return p;
}

/* ---- tables built on demand --------------------------------------------- */

static void setint(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static const char *phase_name(int ph)
{
    static const char *const names[] = { "Unknown", "Pending", "Running", "Succeeded", "Failed" };
    return ph >= 0 && ph <= EBB_PHASE_FAILED ? names[ph] : "Unknown";
}

static const char *qos_name(int q)
{
    return q == EBB_QOS_GUARANTEED ? "Guaranteed" : q == EBB_QOS_BURSTABLE ? "Burstable" : "BestEffort";
}

static const char *cstate_name(int s)
{
    static const char *const names[] = { NULL, "waiting", "running", "terminated" };
    return s > 0 && s <= EBB_CSTATE_TERMINATED ? names[s] : NULL;
}

/* ---- field getters ------------------------------------------------------ */

typedef void (*getter)(lua_State *L, const struct ebb_pod *p);

static void g_name(lua_State *L, const struct ebb_pod *p) { lua_pushstring(L, p->name); }
static void g_namespace(lua_State *L, const struct ebb_pod *p) { lua_pushstring(L, p->ns); }
static void g_uid(lua_State *L, const struct ebb_pod *p) { lua_pushstring(L, p->uid); }
static void g_node(lua_State *L, const struct ebb_pod *p) { lua_pushstring(L, p->node); }
static void g_phase(lua_State *L, const struct ebb_pod *p) { lua_pushstring(L, phase_name(p->phase)); }
static void g_qos(lua_State *L, const struct ebb_pod *p) { lua_pushstring(L, qos_name(p->qos)); }
static void g_reason(lua_State *L, const struct ebb_pod *p) { lua_pushstring(L, p->reason); }
static void g_pclass(lua_State *L, const struct ebb_pod *p) { lua_pushstring(L, p->priority_class); }
static void g_scheduler(lua_State *L, const struct ebb_pod *p) { lua_pushstring(L, p->scheduler); }
/* a missing creationTimestamp reads as Go's zero time, as upstream sees it */
static void g_created(lua_State *L, const struct ebb_pod *p)
{
    lua_pushinteger(L, p->created == EBB_TIME_NONE ? EBB_TIME_GO_ZERO : p->created);
}
static void g_restarts(lua_State *L, const struct ebb_pod *p) { lua_pushinteger(L, p->restarts); }
static void g_init_restarts(lua_State *L, const struct ebb_pod *p) { lua_pushinteger(L, p->init_restarts); }
static void g_labels(lua_State *L, const struct ebb_pod *p) { ebb__lua_push_labels(L, &p->labels); }
static void g_annotations(lua_State *L, const struct ebb_pod *p) { ebb__lua_push_labels(L, &p->annotations); }
static void g_node_selector(lua_State *L, const struct ebb_pod *p) { ebb__lua_push_labels(L, &p->node_selector); }
static void g_requests(lua_State *L, const struct ebb_pod *p) { ebb__lua_push_res(L, &p->requests); }
static void g_gone(lua_State *L, const struct ebb_pod *p) { lua_pushboolean(L, p->flags & EBB_POD_GONE); }
static void g_terminating(lua_State *L, const struct ebb_pod *p) { lua_pushboolean(L, p->flags & EBB_POD_TERMINATING); }
static void g_mirror(lua_State *L, const struct ebb_pod *p) { lua_pushboolean(L, p->flags & EBB_POD_MIRROR); }
static void g_static(lua_State *L, const struct ebb_pod *p) { lua_pushboolean(L, p->flags & EBB_POD_STATIC); }
static void g_local_storage(lua_State *L, const struct ebb_pod *p) { lua_pushboolean(L, p->flags & EBB_POD_LOCAL_STORAGE); }
static void g_ready(lua_State *L, const struct ebb_pod *p) { lua_pushboolean(L, p->flags & EBB_POD_READY); }

static void g_key(lua_State *L, const struct ebb_pod *p)
{
    char buf[512];
    lua_pushstring(L, ebb_pod_key(p, buf, sizeof(buf)));
}

static void g_priority(lua_State *L, const struct ebb_pod *p)
{
    if (p->flags & EBB_POD_HAS_PRIORITY)
        lua_pushinteger(L, p->priority);
    else
        lua_pushnil(L);
}

static void g_started(lua_State *L, const struct ebb_pod *p)
{
    if (p->started == EBB_TIME_NONE)
        lua_pushnil(L);
    else
        lua_pushinteger(L, p->started);
}

static void g_deleted(lua_State *L, const struct ebb_pod *p)
{
    if (p->deleted == EBB_TIME_NONE || !(p->flags & EBB_POD_TERMINATING))
        lua_pushnil(L);
    else
        lua_pushinteger(L, p->deleted);
}

static void g_owners(lua_State *L, const struct ebb_pod *p)
{
    lua_createtable(L, p->nowners, 0);
    for (uint16_t i = 0; i < p->nowners; i++) {
        lua_createtable(L, 0, 4);
        ebb__lua_setstr(L, "kind", p->owners[i].kind);
        ebb__lua_setstr(L, "name", p->owners[i].name);
        ebb__lua_setstr(L, "uid", p->owners[i].uid);
        lua_pushboolean(L, p->owners[i].controller);
        lua_setfield(L, -2, "controller");
        lua_rawseti(L, -2, i + 1);
    }
}

static void g_tolerations(lua_State *L, const struct ebb_pod *p)
{
    lua_createtable(L, p->ntolerations, 0);
    for (uint16_t i = 0; i < p->ntolerations; i++) {
        const struct ebb_toleration *t = &p->tolerations[i];
        lua_createtable(L, 0, 5);
        ebb__lua_setstr(L, "key", t->key);
        ebb__lua_setstr(L, "value", t->value);
        ebb__lua_setstr(L, "operator", t->op == EBB_TOL_EXISTS ? "Exists" : t->op == EBB_TOL_LT ? "Lt"
                              : t->op == EBB_TOL_GT ? "Gt" : "Equal");
        if (t->effect != EBB_EFFECT_ALL)
            ebb__lua_setstr(L, "effect", ebb_effect_name(t->effect));
        if (t->has_seconds)
            setint(L, "tolerationSeconds", t->seconds);
        lua_rawseti(L, -2, i + 1);
    }
}

static void g_images(lua_State *L, const struct ebb_pod *p)
{
    lua_createtable(L, p->nimages, 0);
    for (uint16_t i = 0; i < p->nimages; i++) {
        lua_pushstring(L, p->images[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

static void g_pvcs(lua_State *L, const struct ebb_pod *p)
{
    lua_createtable(L, p->npvcs, 0);
    for (uint16_t i = 0; i < p->npvcs; i++) {
        lua_pushstring(L, p->pvcs[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

static void g_cstatus(lua_State *L, const struct ebb_pod *p)
{
    static const char *const kinds[] = { "app", "init", "ephemeral" };

    lua_createtable(L, p->ncstatus, 0);
    for (uint16_t i = 0; i < p->ncstatus; i++) {
        const struct ebb_cstatus *c = &p->cstatus[i];
        lua_createtable(L, 0, 10);
        ebb__lua_setstr(L, "name", c->name);
        ebb__lua_setstr(L, "kind", kinds[c->kind <= 2 ? c->kind : 0]);
        ebb__lua_setstr(L, "state", cstate_name(c->state));
        ebb__lua_setstr(L, "reason", c->reason);
        if (c->state == EBB_CSTATE_TERMINATED)
            setint(L, "exit_code", c->exit_code);
        setint(L, "restarts", c->restarts);
        lua_pushboolean(L, c->ready);
        lua_setfield(L, -2, "ready");
        ebb__lua_setstr(L, "last_state", cstate_name(c->last_state));
        ebb__lua_setstr(L, "last_reason", c->last_reason);
        if (c->last_state == EBB_CSTATE_TERMINATED)
            setint(L, "last_exit_code", c->last_exit_code);
        lua_rawseti(L, -2, i + 1);
    }
}

static void g_conditions(lua_State *L, const struct ebb_pod *p)
{
    lua_createtable(L, p->nconditions, 0);
    for (uint16_t i = 0; i < p->nconditions; i++) {
        const struct ebb_condition *c = &p->conditions[i];
        lua_createtable(L, 0, 4);
        ebb__lua_setstr(L, "type", c->type);
        ebb__lua_setstr(L, "status", c->status);
        ebb__lua_setstr(L, "reason", c->reason);
        if (c->last_transition != EBB_TIME_NONE)
            setint(L, "last_transition", c->last_transition);
        lua_rawseti(L, -2, i + 1);
    }
}

void ebb__lua_push_object(lua_State *L, const struct ebb_src *src)
{
    struct ebb_cache *c = ebb__lua_cache(L);
    cJSON *j = ebb_cache_read_object(c, src);

    if (j == NULL) {
        /* no text: one the watch cache did not keep is asked for */
        if (src->len == 0)
            ebb_cache_text_asked(c);
        lua_pushnil(L);
        return;
    }
    ebb__lua_push_json(L, j);   /* may raise on memory: j leaks only then */
    cJSON_Delete(j);
}

static void g_object(lua_State *L, const struct ebb_pod *p)
{
    ebb__lua_push_object(L, &p->src);
}

static const struct {
    const char *name;
    getter fn;
} getters[] = {
    { "annotations", g_annotations },
    { "conditions", g_conditions },
    { "container_statuses", g_cstatus },
    { "created", g_created },
    { "deleted", g_deleted },
    { "gone", g_gone },
    { "has_local_storage", g_local_storage },
    { "images", g_images },
    { "init_restarts", g_init_restarts },
    { "is_mirror", g_mirror },
    { "is_static", g_static },
    { "key", g_key },
    { "labels", g_labels },
    { "name", g_name },
    { "namespace", g_namespace },
    { "node", g_node },
    { "node_selector", g_node_selector },
    { "object", g_object },
    { "owners", g_owners },
    { "phase", g_phase },
    { "priority", g_priority },
    { "priority_class", g_pclass },
    { "pvcs", g_pvcs },
    { "qos", g_qos },
    { "ready", g_ready },
    { "reason", g_reason },
    { "requests", g_requests },
    { "restarts", g_restarts },
    { "scheduler", g_scheduler },
    { "started", g_started },
    { "terminating", g_terminating },
    { "tolerations", g_tolerations },
    { "uid", g_uid },
};

/* ---- methods ------------------------------------------------------------ */

/* An interned string, whole (its length, not strlen: an annotation value
 * may hold a NUL), or nil. */
static void push_text(lua_State *L, ebb_str s)
{
    if (s == NULL)
        lua_pushnil(L);
    else
        lua_pushlstring(L, s, ebb_str_len(s));
}

/* pod:label(key) -> string | nil                                [-0, +1, -] */
static int l_pod_label(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    size_t len;
    const char *k = ebb__lr_str(L, 2, SIZE_MAX, 0, &len, "pod:label: key");
    push_text(L, ebb_labels_get(&p->labels, ebb_str_find(k, len)));
    return 1;
}

/* pod:annotation(key) -> string | nil                           [-0, +1, -] */
static int l_pod_annotation(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    size_t len;
    const char *k = ebb__lr_str(L, 2, SIZE_MAX, 0, &len, "pod:annotation: key");
    push_text(L, ebb_labels_get(&p->annotations, ebb_str_find(k, len)));
    return 1;
}

/* pod:has_owner_kind(kind) -> boolean                           [-0, +1, -] */
static int l_pod_has_owner_kind(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    size_t len;
    const char *k = ebb__lr_str(L, 2, SIZE_MAX, 0, &len, "pod:has_owner_kind: kind");
    ebb_str kind = ebb_str_find(k, len);
    bool found = false;

    for (uint16_t i = 0; kind && i < p->nowners && !found; i++)
        found = p->owners[i].kind == kind;
    lua_pushboolean(L, found);
    return 1;
}

/* pod:tolerates(node [, effects]) -> boolean                     [-0, +1, -]
 * Every taint of the node whose effect is in `effects` (a list of effect
 * names; default NoSchedule and NoExecute, as the scheduler) is tolerated. */
static int l_pod_tolerates(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    struct ebb_node *n = ebb__lua_check_node(L, 2);
    unsigned mask = EBB_EFFECT_NO_SCHEDULE | EBB_EFFECT_NO_EXECUTE;

    if (ebb__lr_opttable(L, 3, "pod:tolerates: effects")) {
        size_t ne = ebb__lr_len(L, 3, 16, "pod:tolerates: effects");
        mask = 0;
        for (size_t i = 1; i <= ne; i++) {
            ebb__lr_index(L, 3, (lua_Integer)i);
            mask |= ebb_effect_parse(ebb__lr_str(L, -1, 64, EBB_LR_TEXT, NULL,
                                                 "pod:tolerates: effects[%zu]", i));
            lua_pop(L, 1);
        }
    }
    lua_pushboolean(L, ebb_pod_tolerates_node_taints(p, n, mask));
    return 1;
}

/* pod:tolerates_all(taintset) -> boolean                       [-0, +1, -]
 * Every taint of the set (ebb.taint_set) is tolerated by some toleration. */
static int l_pod_tolerates_all(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    size_t n;
    const struct ebb_taint *t = ebb__lua_check_taintset(L, 2, &n);
    bool ok = true;

    for (size_t i = 0; i < n && ok; i++)
        ok = ebb_tolerations_tolerate(p->tolerations, p->ntolerations, &t[i]);
    lua_pushboolean(L, ok);
    return 1;
}

/* pod:matches_node_selector(node) -> boolean                    [-0, +1, -]
 * spec.nodeSelector and required node affinity (PodMatchNodeSelector). */
static int l_pod_matches_node_selector(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    struct ebb_node *n = ebb__lua_check_node(L, 2);
    lua_pushboolean(L, ebb_pod_matches_node_selector(p, n));
    return 1;
}

/* pod:preferred_weight(node) -> integer                         [-0, +1, -] */
static int l_pod_preferred_weight(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    struct ebb_node *n = ebb__lua_check_node(L, 2);
    lua_pushinteger(L, ebb_pod_preferred_weight(p, n));
    return 1;
}

/* pod:has_node_affinity("required"|"preferred") -> boolean      [-0, +1, -] */
static int l_pod_has_node_affinity(lua_State *L)
{
    static const char *const kinds[] = { "required", "preferred", NULL };
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);

    if (ebb__lr_option(L, 2, NULL, kinds, "pod:has_node_affinity") == 0)
        lua_pushboolean(L, ebb_pod_has_required_node_affinity(p));
    else
        lua_pushboolean(L, ebb_pod_has_preferred_node_affinity(p));
    return 1;
}

/* pod:request(resource) -> integer (cpu in millicores)          [-0, +1, -] */
static int l_pod_request(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    int id = ebb_resource_find(ebb__lr_str(L, 2, EBB_LR_NAME_MAX, EBB_LR_TEXT, NULL,
                                           "pod:request: resource"));
    lua_pushinteger(L, id < 0 ? 0 : ebb_res_get(&p->requests, id));
    return 1;
}

static const luaL_Reg pod_methods[] = {
    { "label", l_pod_label },
    { "annotation", l_pod_annotation },
    { "has_owner_kind", l_pod_has_owner_kind },
    { "tolerates", l_pod_tolerates },
    { "tolerates_all", l_pod_tolerates_all },
    { "matches_node_selector", l_pod_matches_node_selector },
    { "preferred_weight", l_pod_preferred_weight },
    { "has_node_affinity", l_pod_has_node_affinity },
    { "request", l_pod_request },
    { NULL, NULL },
};

static int cmp_getter(const void *k, const void *e)
{
    return strcmp(k, *(const char *const *)e);
}

/* pod.field / pod:method                                        [-0, +1, e] */
static int l_pod_index(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_check_pod(L, 1);
    const char *k = ebb__lr_str(L, 2, 64, EBB_LR_TEXT, NULL, "pod: field");
    const void *g;

    if (ebb__lr_field(L, lua_upvalueindex(1), k) != LUA_TNIL)   /* a method */
        return 1;
    g = bsearch(k, getters, EBB_ARRAY_LEN(getters), sizeof(getters[0]), cmp_getter);
    if (g == NULL)
        return luaL_error(L, "pod has no field '%s'", k);
    ((const __typeof__(getters[0]) *)g)->fn(L, p);
    return 1;
}

static int l_pod_newindex(lua_State *L)
{
    return luaL_error(L, "pods are read-only views of the cluster");
}

static int l_pod_tostring(lua_State *L)
{
    struct ebb_pod *p = ebb__lua_to_pod(L, 1);
    if (p)
        lua_pushfstring(L, "Pod(%s/%s)", p->ns, p->name);
    else
        lua_pushliteral(L, "Pod(gone)");
    return 1;
}

/* ---- PodList ------------------------------------------------------------ */

static uint64_t epoch_of(lua_State *L)
{
    return ebb_cache_epoch(ebb__lua_cache(L));
}

/* List arrays come from the state's own allocator, so they count against
 * the plugin's memory cap like any Lua value. */
static void *lalloc(lua_State *L, void *p, size_t osize, size_t nsize)
{
    void *ud;
    lua_Alloc f = lua_getallocf(L, &ud);
    return f(ud, p, p ? osize : 0, nsize);
}

static void list_reserve(lua_State *L, struct podlist *pl, uint32_t cap)
{
    struct ebb_pod **v;

    if (cap <= pl->cap)
        return;
    v = lalloc(L, pl->v, pl->cap * sizeof(*v), (size_t)cap * sizeof(*v));
    if (v == NULL)
        luaL_error(L, "not enough memory");
    pl->v = v;
    pl->cap = cap;
}

static struct podlist *new_list(lua_State *L, uint32_t cap)
{
    struct podlist *pl = lua_newuserdatauv(L, sizeof(*pl), 0);

    memset(pl, 0, sizeof(*pl));
    luaL_setmetatable(L, PODLIST_MT);
    pl->epoch = epoch_of(L);
    if (cap > 0)
        list_reserve(L, pl, cap);
    return pl;
}

void ebb__lua_push_podlist(lua_State *L, struct ebb_pod *const *pods, size_t n)
{
    struct podlist *pl = new_list(L, (uint32_t)n);
    if (n > 0)
        memcpy(pl->v, pods, n * sizeof(*pods));
    pl->n = (uint32_t)n;
}

static struct podlist *check_list(lua_State *L, int idx)
{
    struct podlist *pl = luaL_checkudata(L, idx, PODLIST_MT);
    if (pl->epoch != epoch_of(L))
        luaL_error(L, "this PodList was made before the cluster view changed; list the pods again");
    return pl;
}

static void list_push(lua_State *L, struct podlist *pl, struct ebb_pod *p)
{
    if (pl->n == pl->cap) {
        if (pl->cap >= UINT32_MAX / 2)
            luaL_error(L, "a PodList holds at most %u pods", UINT32_MAX / 2);
        list_reserve(L, pl, pl->cap ? pl->cap * 2 : 16);
    }
    pl->v[pl->n++] = p;
}

/* The pods of the PodList at idx, for the other binding files (raises when
 * idx is not one, or was made before the cluster view changed). */
struct ebb_pod *const *ebb__lua_check_podlist(lua_State *L, int idx, size_t *n)
{
    struct podlist *pl = check_list(L, idx);
    *n = pl->n;
    return pl->v;
}

/* Used by the query helpers (lua_ebb.c, lua_usage.c, ...) on the list
 * they made with ebb__lua_new_podlist: once per pod listed, so the type is
 * not checked again (a registry lookup each time). */
void ebb__lua_podlist_append(lua_State *L, int idx, struct ebb_pod *p)
{
    list_push(L, lua_touserdata(L, idx), p);
}

struct ebb_pod *const *ebb__lua_podlist(lua_State *L, int idx, size_t *n)
{
    struct podlist *pl = luaL_testudata(L, idx, PODLIST_MT);

    if (pl == NULL) {
        *n = 0;
        return NULL;
    }
    check_list(L, idx);
    *n = pl->n;
    return pl->v;
}

static int l_list_len(lua_State *L)
{
    lua_pushinteger(L, check_list(L, 1)->n);
    return 1;
}

static int l_list_gc(lua_State *L)
{
    struct podlist *pl = luaL_checkudata(L, 1, PODLIST_MT);
    if (pl->v != NULL)
        lalloc(L, pl->v, pl->cap * sizeof(*pl->v), 0);
    pl->v = NULL;
    pl->n = pl->cap = 0;
    return 0;
}

/* list[i] -> Pod | nil; list:method                             [-0, +1, e] */
static int l_list_index(lua_State *L)
{
    struct podlist *pl = check_list(L, 1);

    if (lua_type(L, 2) == LUA_TNUMBER) {
        lua_Integer i = ebb__lr_int(L, 2, LUA_MININTEGER, LUA_MAXINTEGER, "PodList: index");
        if (i >= 1 && i <= (lua_Integer)pl->n)
            ebb__lua_push_pod(L, pl->v[i - 1]);
        else
            lua_pushnil(L);
        return 1;
    }
    if (ebb__lr_field(L, lua_upvalueindex(1),
                      ebb__lr_str(L, 2, 64, EBB_LR_TEXT, NULL, "PodList: method")) == LUA_TNIL)
        return ebb__lr_error(L, 2, "expected a PodList method", "PodList");
    return 1;
}

static int iter_next(lua_State *L)
{
    struct podlist *pl = check_list(L, 1);
    lua_Integer i = ebb__lr_int(L, 2, 0, UINT32_MAX, "PodList iterator: control") + 1;

    if (i > (lua_Integer)pl->n)
        return 0;
    lua_pushinteger(L, i);
    ebb__lua_push_pod(L, pl->v[i - 1]);
    return 2;
}

/* for i, pod in list:iter() / ipairs-like                       [-0, +3, -] */
static int l_list_iter(lua_State *L)
{
    check_list(L, 1);
    lua_pushcfunction(L, iter_next);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, 0);
    return 3;
}

/* Merge sort on the array: stable, so ties keep listing order. */
typedef int (*pod_cmp)(const struct ebb_pod *a, const struct ebb_pod *b, void *ud);

static void merge_sort(struct ebb_pod **v, struct ebb_pod **tmp, uint32_t n, pod_cmp cmp, void *ud)
{
    if (n < 2)
        return;
    uint32_t h = n / 2, i = 0, j = h, k = 0;
    merge_sort(v, tmp, h, cmp, ud);
    merge_sort(v + h, tmp, n - h, cmp, ud);
    while (i < h && j < n)
        tmp[k++] = cmp(v[j], v[i], ud) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof(*v));
}

/* SortPodsBasedOnPriorityLowToHigh: no priority first, then lower priority,
 * then QoS BestEffort < Burstable < Guaranteed, then pods without the
 * prefer-no-eviction annotation first. */
int ebb__pod_cmp_priority(const struct ebb_pod *a, const struct ebb_pod *b, void *ud)
{
    bool ha = a->flags & EBB_POD_HAS_PRIORITY, hb = b->flags & EBB_POD_HAS_PRIORITY;
    (void)ud;
    if (ha != hb)
        return ha ? 1 : -1;
    if (ha && a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    if (a->qos != b->qos)
        return a->qos < b->qos ? -1 : 1;
    bool pa = a->flags & EBB_POD_PREFER_NO_EVICTION, pb = b->flags & EBB_POD_PREFER_NO_EVICTION;
    if (pa != pb)
        return pa ? 1 : -1;
    return 0;
}

static int cmp_age(const struct ebb_pod *a, const struct ebb_pod *b, void *ud)
{
    (void)ud;
    return a->created < b->created ? -1 : a->created > b->created ? 1 : 0;
}

static int cmp_restarts(const struct ebb_pod *a, const struct ebb_pod *b, void *ud)
{
    int64_t ra = *(bool *)ud ? (int64_t)a->restarts + a->init_restarts : a->restarts;
    int64_t rb = *(bool *)ud ? (int64_t)b->restarts + b->init_restarts : b->restarts;
    return ra > rb ? -1 : ra < rb ? 1 : 0;
}

static int cmp_key(const struct ebb_pod *a, const struct ebb_pod *b, void *ud)
{
    int r;
    (void)ud;
    r = a->ns == b->ns ? 0 : strcmp(a->ns, b->ns);
    return r ? r : strcmp(a->name, b->name);
}

struct lua_cmp {
    lua_State *L;
    int fn;
};

static int cmp_lua(const struct ebb_pod *a, const struct ebb_pod *b, void *ud)
{
    struct lua_cmp *c = ud;
    int less;

    lua_pushvalue(c->L, c->fn);
    ebb__lua_push_pod(c->L, a);
    ebb__lua_push_pod(c->L, b);
    lua_call(c->L, 2, 1);
    less = lua_toboolean(c->L, -1);
    lua_pop(c->L, 1);
    return less ? -1 : 0;
}

/* list:sort(how [, opt]) -> list                                 [-0, +1, e]
 * how: "priority" (low to high, then QoS, then prefer-no-eviction last),
 * "age" (oldest first), "restarts" (most first; opt true adds init
 * containers), "key" (namespace/name), or a function(a, b) -> a before b.
 * Stable: ties keep their order. Sorts in place and returns the list. */
static int l_list_sort(lua_State *L)
{
    struct podlist *pl = check_list(L, 1);
    struct ebb_pod **tmp, *small[256];
    pod_cmp cmp;
    void *ud = NULL;
    bool with_init = false;
    struct lua_cmp lc = { L, 2 };

    if (lua_isfunction(L, 2)) {
        cmp = cmp_lua;
        ud = &lc;
    } else {
        static const char *const hows[] = { "priority", "age", "restarts", "key", NULL };
        switch (ebb__lr_option(L, 2, NULL, hows, "list:sort (or a function)")) {
        case 0:
            cmp = ebb__pod_cmp_priority;
            break;
        case 1:
            cmp = cmp_age;
            break;
        case 2:
            cmp = cmp_restarts;
            with_init = lua_toboolean(L, 3);
            ud = &with_init;
            break;
        default:
            cmp = cmp_key;
        }
    }
    if (pl->n > 1 && cmp != cmp_lua && pl->n <= EBB_ARRAY_LEN(small)) {
        /* a node's pods: no garbage for the collector per sort */
        merge_sort(pl->v, small, pl->n, cmp, ud);
    } else if (pl->n > 1 && cmp != cmp_lua) {
        /* Park the scratch array in a userdata so a budget stop does not
         * leak it. */
        tmp = lua_newuserdatauv(L, pl->n * sizeof(*tmp), 0);
        merge_sort(pl->v, tmp, pl->n, cmp, ud);
        lua_pop(L, 1);
    } else if (pl->n > 1) {
        /* A script's comparator may append to this very list (and so move
         * its array): sort a copy, then write the sorted pods back over the
         * first n, whatever was appended after them. */
        uint32_t n = pl->n;
        struct ebb_pod **copy = lua_newuserdatauv(L, 2 * (size_t)n * sizeof(*copy), 0);
        memcpy(copy, pl->v, n * sizeof(*copy));
        merge_sort(copy, copy + n, n, cmp, ud);
        memcpy(pl->v, copy, n * sizeof(*copy));   /* pl->n >= n: a list never shrinks */
        lua_pop(L, 1);
    }
    lua_settop(L, 1);
    return 1;
}

/* list:filter(fn) -> new list of the pods for which fn(pod) is true */
static int l_list_filter(lua_State *L)
{
    struct podlist *pl = check_list(L, 1), *out;

    luaL_checktype(L, 2, LUA_TFUNCTION);
    out = new_list(L, 0);
    for (uint32_t i = 0; i < pl->n; i++) {
        ebb__vm_check(L);
        lua_pushvalue(L, 2);
        ebb__lua_push_pod(L, pl->v[i]);
        lua_call(L, 1, 1);
        if (lua_toboolean(L, -1))
            list_push(L, out, pl->v[i]);
        lua_pop(L, 1);
    }
    return 1;
}

/* list:slice(i [, j]) -> new list of items i..j (1-based, inclusive) */
static int l_list_slice(lua_State *L)
{
    struct podlist *pl = check_list(L, 1), *out;
    lua_Integer i = ebb__lr_int(L, 2, LUA_MININTEGER, LUA_MAXINTEGER, "list:slice: i");
    lua_Integer j = ebb__lr_optint(L, 3, pl->n, LUA_MININTEGER, LUA_MAXINTEGER, "list:slice: j");

    if (i < 1)
        i = 1;
    if (j > (lua_Integer)pl->n)
        j = pl->n;
    out = new_list(L, j >= i ? (uint32_t)(j - i + 1) : 0);
    for (lua_Integer k = i; k <= j; k++)
        out->v[out->n++] = pl->v[k - 1];
    return 1;
}

/* list:reverse() -> list (in place) */
static int l_list_reverse(lua_State *L)
{
    struct podlist *pl = check_list(L, 1);
    for (uint32_t i = 0, j = pl->n ? pl->n - 1 : 0; i < j; i++, j--) {
        struct ebb_pod *t = pl->v[i];
        pl->v[i] = pl->v[j];
        pl->v[j] = t;
    }
    lua_settop(L, 1);
    return 1;
}

/* list:append(pod | list) -> list (in place) */
static int l_list_append(lua_State *L)
{
    struct podlist *pl = check_list(L, 1);
    struct podlist *other = luaL_testudata(L, 2, PODLIST_MT);

    if (other != NULL) {
        uint32_t n = check_list(L, 2)->n;   /* as it is now: a list may be appended to itself */
        list_reserve(L, pl, pl->n + n);
        for (uint32_t i = 0; i < n; i++)
            list_push(L, pl, other->v[i]);
    } else {
        list_push(L, pl, ebb__lua_check_pod(L, 2));
    }
    lua_settop(L, 1);
    return 1;
}

/* list:keys() -> { "ns/name", ... } */
static int l_list_keys(lua_State *L)
{
    struct podlist *pl = check_list(L, 1);
    char buf[512];

    lua_createtable(L, (int)pl->n, 0);
    for (uint32_t i = 0; i < pl->n; i++) {
        lua_pushstring(L, ebb_pod_key(pl->v[i], buf, sizeof(buf)));
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* list:by_node() -> { [node name] = PodList } (pods without a node left out) */
static int l_list_by_node(lua_State *L)
{
    struct podlist *pl = check_list(L, 1);

    lua_createtable(L, 0, 0);
    for (uint32_t i = 0; i < pl->n; i++) {
        struct ebb_pod *p = pl->v[i];
        if (p->node == NULL)
            continue;
        if (ebb__lr_field(L, -1, p->node) == LUA_TNIL) {
            lua_pop(L, 1);
            new_list(L, 0);
            lua_pushvalue(L, -1);
            lua_setfield(L, -3, p->node);
        }
        list_push(L, lua_touserdata(L, -1), p);
        lua_pop(L, 1);
    }
    return 1;
}

/* list:requests() -> { resource = sum } over the list */
static int l_list_requests(lua_State *L)
{
    struct podlist *pl = check_list(L, 1);
    int64_t sum[EBB_RES_MAX] = { 0 };

    for (uint32_t i = 0; i < pl->n; i++)
        for (uint16_t k = 0; k < pl->v[i]->requests.n; k++)
            sum[pl->v[i]->requests.q[k].id] = ebb_q_add(sum[pl->v[i]->requests.q[k].id],
                                                        pl->v[i]->requests.q[k].v);
    sum[EBB_RES_PODS] = pl->n;
    lua_createtable(L, 0, 4);
    for (int id = 0; id < ebb_resource_count(); id++) {
        if (sum[id] != 0 || id <= EBB_RES_PODS) {
            lua_pushinteger(L, sum[id]);
            lua_setfield(L, -2, ebb_resource_name(id));
        }
    }
    return 1;
}

static const luaL_Reg list_methods[] = {
    { "iter", l_list_iter },
    { "sort", l_list_sort },
    { "filter", l_list_filter },
    { "slice", l_list_slice },
    { "reverse", l_list_reverse },
    { "append", l_list_append },
    { "keys", l_list_keys },
    { "by_node", l_list_by_node },
    { "requests", l_list_requests },
    { NULL, NULL },
};

static int l_list_tostring(lua_State *L)
{
    struct podlist *pl = luaL_checkudata(L, 1, PODLIST_MT);
    lua_pushfstring(L, "PodList(%d)", (int)pl->n);
    return 1;
}

/* For lua_ebb.c: an empty list on the stack. */
void ebb__lua_new_podlist(lua_State *L)
{
    new_list(L, 0);
}

void ebb__lua_register_pod(lua_State *L)
{
    luaL_newmetatable(L, POD_MT);
    luaL_newlib(L, pod_methods);
    lua_pushcclosure(L, l_pod_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_pod_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, l_pod_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, ebb__lua_view_eq);
    lua_setfield(L, -2, "__eq");
    lua_pushliteral(L, "Pod");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);

    luaL_newmetatable(L, PODLIST_MT);
    luaL_newlib(L, list_methods);
    lua_pushcclosure(L, l_list_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_list_len);
    lua_setfield(L, -2, "__len");
    lua_pushcfunction(L, l_list_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_list_gc);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, l_list_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
}
