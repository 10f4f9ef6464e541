/* engine/sched/whatif.c: the what-if's record of evictions and landings by
 * owner, as a loop reports them. */
#include "fixtures.h"

#include "ebb/sched.h"
#include "ebb/whatif.h"

/* An owner whose pods are evicted from and land on many nodes, some more
 * than once: its loop lists each node once, in the order first seen, on
 * both sides of the point where the record starts looking nodes up in a
 * map rather than its list. */
static void test_owner_nodes_once_in_order(void **state)
{
    struct ebb_cache *c;
    struct ebb_whatif *w;
    ebb_str owner, node[48];
    char name[32], pod[64], repl[64];
    size_t want = 0;
    ebb_str order[48];
    (void)state;

    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_whatif_create(c, &w), 0);
    owner = ebb_str_cstr("ReplicaSet shop/web-7d9f");
    for (int i = 0; i < 48; i++) {
        snprintf(name, sizeof(name), "node-%02d", i);
        node[i] = ebb_str_cstr(name);
    }
    /* cycle 1: 60 evictions from nodes 0..23 (every node twice or more),
     * each replacement landing on nodes 24..47 (again repeated) */
    for (int k = 0; k < 60; k++) {
        int from = (k * 7) % 24, to = 24 + (k * 5) % 24;
        snprintf(pod, sizeof(pod), "shop/web-7d9f-%03d", k);
        snprintf(repl, sizeof(repl), "shop/web-7d9f-r%03d", k);
        assert_int_equal(ebb_whatif_add_eviction(w, 1, "LowNodeUtilization", owner, pod, node[from]), 0);
        assert_int_equal(ebb_whatif_add_placement(w, 1, repl, pod, node[from], node[to], NULL,
                                                  EBB_SCHED_PLACED, owner), 0);
        assert_int_equal(ebb_whatif_landed(w, owner, node[to]), 0);
        for (int s = 0; s < 2; s++) {
            ebb_str n = node[s ? to : from];
            bool seen = false;
            for (size_t j = 0; j < want && !seen; j++)
                seen = order[j] == n;
            if (!seen)
                order[want++] = n;
        }
    }
    /* cycle 2: a replacement is evicted again: a loop */
    assert_int_equal(ebb_whatif_add_eviction(w, 2, "LowNodeUtilization", owner, "shop/web-7d9f-r000",
                                             node[24]), 0);
    assert_int_equal(ebb_whatif_finish(w), 0);
    assert_int_equal(w->nloops, 1);
    assert_int_equal(want, 48);
    assert_int_equal(w->loops[0].nnodes, want);
    for (size_t j = 0; j < want; j++)
        assert_ptr_equal(w->loops[0].nodes[j], order[j]);
    ebb_whatif_destroy(w);
    ebb_cache_destroy(c);
    for (int i = 0; i < 48; i++)
        ebb_str_release(node[i]);
    ebb_str_release(owner);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_nodes_once_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
