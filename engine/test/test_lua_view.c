/* Pod and Node views in Lua (engine/lua/lua_view.c, lua_pod.c, lua_node.c):
 * a view is interned per state, so the same object is the same Lua value
 * (rawequal, a table key) for as long as a script holds it; == tells two
 * objects apart; pods and nodes in the same slot are different values; a
 * view whose object was deleted or replaced by another uid raises on
 * access and prints as gone, and the new object gets a new view. Every
 * case runs for each kind of view, under ASan and LeakSanitizer. */
#include "fixtures.h"

#include <lauxlib.h>

#include "lua/lua_int.h"

/* ---- the kinds of view -------------------------------------------------- */

#define NS "shop"

static ebb_str S(const char *s)
{
    return ebb_str_find(s, strlen(s));
}

static void load_item(struct ebb_cache *c, const char *item)
{
    char list[4096];
    struct ebb_error err = { 0 };
    int n = snprintf(list, sizeof(list), "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[%s]}",
                     item);

    assert_true(n > 0 && (size_t)n < sizeof(list));
    if (ebb_snapshot_load_buf(c, list, (size_t)n, "views.json", NULL, &err) != 0)
        fail_msg("%s: %s", err.field, err.msg);
}

static void put_pod(struct ebb_cache *c, const char *name, const char *uid)
{
    char item[2048];

    snprintf(item, sizeof(item),
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"" NS "\","
        "\"uid\":\"%s\",\"creationTimestamp\":\"2026-11-01T00:00:00Z\",\"labels\":{\"app\":\"cart\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
        "\"name\":\"cart-5d7f8c6b9\",\"uid\":\"rs-cart\",\"controller\":true}]},"
        "\"spec\":{\"nodeName\":\"ip-10-0-1-12.eu-west-1.compute.internal\",\"containers\":[{\"name\":\"cart\","
        "\"image\":\"registry.example.com/shop/cart:2.4.1\",\"resources\":{\"requests\":"
        "{\"cpu\":\"250m\",\"memory\":\"256Mi\"}}}]},\"status\":{\"phase\":\"Running\"}}",
        name, uid);
    load_item(c, item);
}

static void put_node(struct ebb_cache *c, const char *name, const char *uid)
{
    char item[2048];

    snprintf(item, sizeof(item),
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\","
        "\"creationTimestamp\":\"2026-10-01T00:00:00Z\",\"labels\":{\"kubernetes.io/hostname\":\"%s\","
        "\"topology.kubernetes.io/zone\":\"eu-west-1a\"}},\"spec\":{},\"status\":{"
        "\"allocatable\":{\"cpu\":\"3920m\",\"memory\":\"15Gi\",\"pods\":\"110\"},"
        "\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"110\"},"
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
        name, uid, name);
    load_item(c, item);
}

static int del_pod(struct ebb_cache *c, const char *name)
{
    return ebb_cache_delete(c, EBB_KIND_POD, S(NS), S(name));
}

static int del_node(struct ebb_cache *c, const char *name)
{
    return ebb_cache_delete(c, EBB_KIND_NODE, NULL, S(name));
}

static void push_pod(lua_State *L, struct ebb_cache *c, const char *name)
{
    struct ebb_pod *p = ebb_cache_pod(c, S(NS), S(name));

    assert_non_null(p);
    ebb__lua_push_pod(L, p);
}

static void push_node(lua_State *L, struct ebb_cache *c, const char *name)
{
    struct ebb_node *n = ebb_cache_node(c, S(name));

    assert_non_null(n);
    ebb__lua_push_node(L, n);
}

struct view_kind {
    const char *what;          /* for messages */
    const char *gone;          /* tostring of a stale view */
    const char *stale;         /* what reading a stale view raises */
    void (*put)(struct ebb_cache *c, const char *name, const char *uid);
    int (*del)(struct ebb_cache *c, const char *name);
    void (*push)(lua_State *L, struct ebb_cache *c, const char *name);
};

static const struct view_kind KINDS[] = {
    { "Pod", "Pod(gone)", "this pod no longer exists in the cluster view", put_pod, del_pod, push_pod },
    { "Node", "Node(gone)", "this node no longer exists in the cluster view", put_node, del_node,
      push_node },
};

/* ---- a state with the bindings, over a cache -------------------------------- */

struct world {
    struct ebb_engine engine;
    struct ebb_cache *cache;
    struct ebb_vm *vm;
};

static void world_open(struct world *w)
{
    struct ebb_vm_opts o = { .engine = &w->engine, .name = "views" };

    memset(w, 0, sizeof(*w));
    assert_int_equal(ebb_cache_create(&w->cache), 0);
    w->engine.cache = w->cache;
    assert_int_equal(ebb__vm_create(&o, &w->vm), 0);
    luaL_requiref(w->vm->L, "ebb.native", luaopen_ebb_native, 0);   /* the metatables */
    lua_pop(w->vm->L, 1);
}

static void world_close(struct world *w)
{
    ebb__vm_destroy(w->vm);
    ebb_cache_destroy(w->cache);
}

/* v.name of the view at idx, in a protected call: LUA_OK and the name on
 * the stack, or the error and its message. */
static int get_name(lua_State *L)
{
    lua_getfield(L, 1, "name");
    return 1;
}

static int read_name(lua_State *L, int idx, const char **out)
{
    int rc;

    idx = lua_absindex(L, idx);
    lua_pushcfunction(L, get_name);
    lua_pushvalue(L, idx);
    rc = lua_pcall(L, 1, 1, 0);
    *out = lua_tostring(L, -1);
    return rc;
}

/* tostring() of the value at idx is `want`. */
static void assert_shows(lua_State *L, int idx, const char *want)
{
    assert_string_equal(luaL_tolstring(L, idx, NULL), want);
    lua_pop(L, 1);
}

/* ---- the cases ---------------------------------------------------------------- */

/* The same object is the same value, while held and after a collection;
 * another object of the kind is another value, and == says so. */
static void same_object_same_value(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(KINDS) / sizeof(KINDS[0]); k++) {
        const struct view_kind *K = &KINDS[k];
        struct world w;
        lua_State *L;
        const char *name;

        world_open(&w);
        L = w.vm->L;
        K->put(w.cache, "cart-a", "uid-a");
        K->put(w.cache, "cart-b", "uid-b");

        K->push(L, w.cache, "cart-a");
        K->push(L, w.cache, "cart-a");
        assert_true(lua_rawequal(L, -1, -2));
        assert_true(lua_compare(L, -1, -2, LUA_OPEQ));
        lua_pop(L, 1);
        lua_gc(L, LUA_GCCOLLECT);             /* held: stays interned */
        K->push(L, w.cache, "cart-a");
        assert_true(lua_rawequal(L, -1, -2));
        lua_pop(L, 1);

        /* a table key: a later push finds it */
        lua_createtable(L, 0, 1);
        lua_pushvalue(L, -2);
        lua_pushliteral(L, "seen");
        lua_rawset(L, -3);
        K->push(L, w.cache, "cart-a");
        assert_int_equal(lua_rawget(L, -2), LUA_TSTRING);
        lua_pop(L, 2);

        K->push(L, w.cache, "cart-b");
        assert_false(lua_rawequal(L, -1, -2));
        assert_false(lua_compare(L, -1, -2, LUA_OPEQ));
        assert_int_equal(read_name(L, -1, &name), LUA_OK);
        assert_string_equal(name, "cart-b");
        lua_pop(L, 1);
        assert_int_equal(read_name(L, -2, &name), LUA_OK);
        assert_string_equal(name, "cart-a");
        lua_pop(L, 3);

        /* an update of the object (same uid) keeps its view */
        K->push(L, w.cache, "cart-a");
        K->put(w.cache, "cart-a", "uid-a");
        K->push(L, w.cache, "cart-a");
        assert_true(lua_rawequal(L, -1, -2));
        lua_pop(L, 2);

        /* a dropped view is collected and made again when asked for */
        lua_gc(L, LUA_GCCOLLECT);
        K->push(L, w.cache, "cart-a");
        assert_int_equal(read_name(L, -1, &name), LUA_OK);
        assert_string_equal(name, "cart-a");
        lua_pop(L, 2);
        assert_int_equal(lua_gettop(L), 0);
        world_close(&w);
    }
}

/* A pod and a node in the same slot are two values, each reading its own
 * object: the kinds do not share their views. */
static void kinds_do_not_share_views(void **state)
{
    struct world w;
    lua_State *L;
    const char *name;

    (void)state;
    world_open(&w);
    L = w.vm->L;
    put_node(w.cache, "ip-10-0-1-12.eu-west-1.compute.internal", "uid-node");
    put_pod(w.cache, "cart-5d7f8c6b9-x2k9p", "uid-pod");
    assert_int_equal(ebb_cache_pod(w.cache, S(NS), S("cart-5d7f8c6b9-x2k9p"))->slot,
                     ebb_cache_node(w.cache, S("ip-10-0-1-12.eu-west-1.compute.internal"))->slot);

    for (int order = 0; order < 2; order++) {
        if (order == 0) {
            push_pod(L, w.cache, "cart-5d7f8c6b9-x2k9p");
            push_node(L, w.cache, "ip-10-0-1-12.eu-west-1.compute.internal");
        } else {
            push_node(L, w.cache, "ip-10-0-1-12.eu-west-1.compute.internal");
            push_pod(L, w.cache, "cart-5d7f8c6b9-x2k9p");
        }
        assert_false(lua_rawequal(L, -1, -2));
        assert_false(lua_compare(L, -1, -2, LUA_OPEQ));
        assert_false(lua_compare(L, -2, -1, LUA_OPEQ));
        /* the second kind's view did not displace the first's */
        if (order == 0)
            push_pod(L, w.cache, "cart-5d7f8c6b9-x2k9p");
        else
            push_node(L, w.cache, "ip-10-0-1-12.eu-west-1.compute.internal");
        assert_true(lua_rawequal(L, -1, -3));
        lua_pop(L, 1);
        assert_non_null(ebb__lua_to_pod(L, order == 0 ? -2 : -1));
        assert_null(ebb__lua_to_pod(L, order == 0 ? -1 : -2));
        assert_int_equal(read_name(L, -1, &name), LUA_OK);
        assert_string_equal(name, order == 0 ? "ip-10-0-1-12.eu-west-1.compute.internal"
                                             : "cart-5d7f8c6b9-x2k9p");
        lua_pop(L, 1);
        assert_int_equal(read_name(L, -2, &name), LUA_OK);
        assert_string_equal(name, order == 0 ? "cart-5d7f8c6b9-x2k9p"
                                             : "ip-10-0-1-12.eu-west-1.compute.internal");
        lua_pop(L, 3);
        lua_gc(L, LUA_GCCOLLECT);
    }
    assert_int_equal(lua_gettop(L), 0);
    world_close(&w);
}

/* A view of an object replaced by another uid, or deleted, raises on
 * access and prints as gone; the new object has a view of its own. */
static void stale_view_raises(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(KINDS) / sizeof(KINDS[0]); k++) {
        const struct view_kind *K = &KINDS[k];
        struct world w;
        lua_State *L;
        const char *s;

        world_open(&w);
        L = w.vm->L;
        K->put(w.cache, "cart-a", "uid-a");
        K->push(L, w.cache, "cart-a");                    /* 1: the old view */

        K->put(w.cache, "cart-a", "uid-a2");              /* recreated: same slot, new serial */
        assert_int_equal(read_name(L, 1, &s), LUA_ERRRUN);
        assert_non_null(strstr(s, K->stale));
        lua_pop(L, 1);
        assert_shows(L, 1, K->gone);
        K->push(L, w.cache, "cart-a");                    /* 2: the new object's */
        assert_false(lua_rawequal(L, 1, 2));
        assert_false(lua_compare(L, 1, 2, LUA_OPEQ));
        assert_int_equal(read_name(L, 2, &s), LUA_OK);
        assert_string_equal(s, "cart-a");
        lua_pop(L, 1);
        K->push(L, w.cache, "cart-a");                    /* interned again */
        assert_true(lua_rawequal(L, 2, 3));
        lua_pop(L, 1);

        assert_int_equal(K->del(w.cache, "cart-a"), 0);  /* deleted */
        assert_int_equal(read_name(L, 2, &s), LUA_ERRRUN);
        assert_non_null(strstr(s, K->stale));
        lua_pop(L, 1);
        assert_shows(L, 2, K->gone);
        assert_int_equal(read_name(L, 1, &s), LUA_ERRRUN);   /* and the old one still */
        lua_pop(L, 3);
        assert_int_equal(lua_gettop(L), 0);
        world_close(&w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_object_same_value),
        cmocka_unit_test(kinds_do_not_share_views),
        cmocka_unit_test(stale_view_raises),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
