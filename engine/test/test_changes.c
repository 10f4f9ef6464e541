/* Changes for event-triggered runs: which part of a node changed, a pod's
 * node, what a relist reveals, and that bursts accumulate until taken. */
#include <cjson/cJSON.h>

#include "fixtures.h"

#include "ebb.h"
#include "ebb/changes.h"
#include "ebb/decode.h"
#include "ebb/snapshot.h"

#define ALL_NODE (EBB_TRIGGER_NODE_ADDED | EBB_TRIGGER_NODE_LABELS | EBB_TRIGGER_NODE_TAINTS | \
                  EBB_TRIGGER_NODE_UNSCHEDULABLE | EBB_TRIGGER_NODE_READY)
#define ALL (ALL_NODE | EBB_TRIGGER_POD_ADDED | EBB_TRIGGER_POD_UPDATED)

static const char *node_fmt =
    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\",\"labels\":{%s}},"
    " \"spec\":{\"unschedulable\":%s,\"taints\":[%s]},"
    " \"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
    "  \"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}";

static const char *pod_fmt =
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"shop\",\"uid\":\"u-%s\","
    " \"labels\":{\"rev\":\"%s\"}},"
    " \"spec\":{%s\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1.27\"}]},\"status\":{\"phase\":\"%s\"}}";

static void put_json(struct ebb_cache *c, const char *json)
{
    cJSON *j = cJSON_Parse(json);
    struct ebb_object o;
    struct ebb_error err = { 0 };

    assert_non_null(j);
    if (ebb_decode_object(j, &o, &err) != 0)
        fail_msg("%s: %s", err.field, err.msg);
    cJSON_Delete(j);
    assert_int_equal(ebb_cache_put(c, &o), 0);
}

static void put_node(struct ebb_cache *c, const char *name, const char *labels, bool unsched,
                     const char *taints, bool ready)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), node_fmt, name, labels, unsched ? "true" : "false", taints,
             ready ? "True" : "False");
    put_json(c, buf);
}

static void put_pod(struct ebb_cache *c, const char *name, const char *rev, const char *node)
{
    char buf[1024], spec[128] = "";
    if (node)
        snprintf(spec, sizeof(spec), "\"nodeName\":\"%s\",", node);
    snprintf(buf, sizeof(buf), pod_fmt, name, name, rev, spec, node ? "Running" : "Pending");
    put_json(c, buf);
}

static unsigned see(struct ebb_changes *ch, struct ebb_cache *c, int kind, const char *type,
                    const char *ns, const char *name, unsigned wanted)
{
    return ebb_changes_observe(ch, c, kind, type, ns ? ebb_str_find(ns, strlen(ns)) : NULL,
                               name ? ebb_str_find(name, strlen(name)) : NULL, wanted);
}

static const char *const *take(struct ebb_changes *ch, unsigned *bits, size_t *n)
{
    const char *const *nodes = NULL;
    *bits = ebb_changes_take(ch, &nodes, n);
    return nodes;
}

struct fixture {
    struct ebb_cache *cache;
    struct ebb_changes *ch;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    assert_int_equal(ebb_cache_create(&f->cache), 0);
    assert_int_equal(ebb_changes_create(&f->ch), 0);
    put_node(f->cache, "node-a", "\"zone\":\"a\"", false, "", true);
    put_node(f->cache, "node-b", "\"zone\":\"b\"", false, "", true);
    /* the listing: fingerprints only (nothing wanted before the sync) */
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "RELIST", NULL, NULL, 0), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ebb_changes_destroy(f->ch);
    ebb_cache_destroy(f->cache);
    free(f);
    return 0;
}

static void tells_which_part_of_a_node_changed(void **state)
{
    struct fixture *f = *state;
    size_t n;
    unsigned bits;
    const char *const *nodes;

    /* a status-only update (same labels, taints...) is no change */
    put_node(f->cache, "node-a", "\"zone\":\"a\"", false, "", true);
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "MODIFIED", NULL, "node-a", ALL), 0);

    put_node(f->cache, "node-a", "\"zone\":\"a\"", false,
             "{\"key\":\"maintenance\",\"value\":\"true\",\"effect\":\"NoSchedule\"}", true);
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "MODIFIED", NULL, "node-a", ALL),
                     EBB_TRIGGER_NODE_TAINTS);
    put_node(f->cache, "node-b", "\"zone\":\"c\"", true, "", false);
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "MODIFIED", NULL, "node-b", ALL),
                     EBB_TRIGGER_NODE_LABELS | EBB_TRIGGER_NODE_UNSCHEDULABLE | EBB_TRIGGER_NODE_READY);
    /* the same taint with another effect is a change too */
    put_node(f->cache, "node-a", "\"zone\":\"a\"", false,
             "{\"key\":\"maintenance\",\"value\":\"true\",\"effect\":\"NoExecute\"}", true);
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "MODIFIED", NULL, "node-a", ALL),
                     EBB_TRIGGER_NODE_TAINTS);

    nodes = take(f->ch, &bits, &n);
    assert_int_equal(bits, EBB_TRIGGER_NODE_TAINTS | EBB_TRIGGER_NODE_LABELS |
                               EBB_TRIGGER_NODE_UNSCHEDULABLE | EBB_TRIGGER_NODE_READY);
    assert_int_equal(n, 2);
    assert_string_equal(nodes[0], "node-a");
    assert_string_equal(nodes[1], "node-b");
    /* taken: nothing left */
    nodes = take(f->ch, &bits, &n);
    assert_int_equal(bits, 0);
    assert_int_equal(n, 0);
}

static void reports_only_what_is_wanted(void **state)
{
    struct fixture *f = *state;
    size_t n;
    unsigned bits;

    put_node(f->cache, "node-a", "\"zone\":\"z\"", false, "", true);
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "MODIFIED", NULL, "node-a", EBB_TRIGGER_NODE_TAINTS), 0);
    take(f->ch, &bits, &n);
    assert_int_equal(bits, 0);
    assert_int_equal(n, 0);
    /* ... but the fingerprint moved on: changing back is a change */
    put_node(f->cache, "node-a", "\"zone\":\"a\"", false, "", true);
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "MODIFIED", NULL, "node-a", ALL),
                     EBB_TRIGGER_NODE_LABELS);
}

static void new_and_deleted_nodes(void **state)
{
    struct fixture *f = *state;
    size_t n;
    unsigned bits;
    const char *const *nodes;

    put_node(f->cache, "node-c", "", false, "", true);
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "ADDED", NULL, "node-c", ALL), EBB_TRIGGER_NODE_ADDED);
    assert_int_equal(ebb_cache_delete(f->cache, EBB_KIND_NODE, NULL, ebb_str_find("node-c", 6)), 0);
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "DELETED", NULL, "node-c", ALL), 0);
    /* it comes back: added again */
    put_node(f->cache, "node-c", "", false, "", true);
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "ADDED", NULL, "node-c", ALL), EBB_TRIGGER_NODE_ADDED);
    nodes = take(f->ch, &bits, &n);
    assert_int_equal(n, 1);
    assert_string_equal(nodes[0], "node-c");
}

static void a_relist_reveals_what_changed_meanwhile(void **state)
{
    struct fixture *f = *state;
    size_t n;
    unsigned bits;
    const char *const *nodes;

    /* changed while the watch was down: only the relist shows it */
    put_node(f->cache, "node-b", "\"zone\":\"b\"", false,
             "{\"key\":\"gpu\",\"value\":\"\",\"effect\":\"NoSchedule\"}", true);
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_NODE, "RELIST", NULL, NULL, ALL), EBB_TRIGGER_NODE_TAINTS);
    nodes = take(f->ch, &bits, &n);
    assert_int_equal(bits, EBB_TRIGGER_NODE_TAINTS);
    assert_int_equal(n, 1);
    assert_string_equal(nodes[0], "node-b");
}

static void pods_count_on_their_node(void **state)
{
    struct fixture *f = *state;
    size_t n;
    unsigned bits;
    const char *const *nodes;

    put_pod(f->cache, "web-1", "1", NULL);   /* pending: no node yet */
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_POD, "ADDED", "shop", "web-1", ALL), 0);
    put_pod(f->cache, "web-1", "1", "node-b");   /* bound */
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_POD, "MODIFIED", "shop", "web-1", ALL),
                     EBB_TRIGGER_POD_UPDATED);
    put_pod(f->cache, "web-2", "1", "node-a");
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_POD, "ADDED", "shop", "web-2", ALL), EBB_TRIGGER_POD_ADDED);
    /* not wanted: not even looked up */
    assert_int_equal(see(f->ch, f->cache, EBB_KIND_POD, "MODIFIED", "shop", "web-2", ALL_NODE), 0);
    nodes = take(f->ch, &bits, &n);
    assert_int_equal(bits, EBB_TRIGGER_POD_ADDED | EBB_TRIGGER_POD_UPDATED);
    assert_int_equal(n, 2);
    assert_string_equal(nodes[0], "node-a");
    assert_string_equal(nodes[1], "node-b");
}

static void trigger_names_round_trip(void **state)
{
    (void)state;
    for (unsigned b = 0; b < EBB_TRIGGER_MAX_BIT; b++)
        assert_int_equal(ebb_trigger_parse(ebb_trigger_name(1u << b)), 1u << b);
    assert_string_equal(ebb_trigger_name(EBB_TRIGGER_NODE_TAINTS), "node-taints");
    assert_int_equal(ebb_trigger_parse("node-taint"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(tells_which_part_of_a_node_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(reports_only_what_is_wanted, setup, teardown),
        cmocka_unit_test_setup_teardown(new_and_deleted_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(a_relist_reveals_what_changed_meanwhile, setup, teardown),
        cmocka_unit_test_setup_teardown(pods_count_on_their_node, setup, teardown),
        cmocka_unit_test(trigger_names_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
