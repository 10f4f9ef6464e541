/* metrics.c: series found by their label values, many of them (a counter
 * labelled by namespace and node grows one per pair), kept in the order
 * they came, forgotten by a reset. */
#include "fixtures.h"

#include "ebb/metrics.h"

static void many_series(void **state)
{
    static const char *const labels[] = { "namespace", "node", NULL };
    struct ebb_metrics *m = NULL;
    struct ebb_metric *f;
    char ns[32], node[32], *text, *a, *b;
    size_t len;
    (void)state;

    assert_int_equal(ebb_metrics_create(&m), 0);
    assert_non_null(f = ebb_metrics_family(m, EBB_METRIC_COUNTER, "evicted_total", "Pods.", labels,
                                           NULL, 0));
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3000; i++) {
            const char *v[] = { ns, node };
            snprintf(ns, sizeof(ns), "ns-%d", i % 50);
            snprintf(node, sizeof(node), "node-%d", i);
            ebb_metric_add(f, v, 1 + i % 3);
        }
    }
    {
        const char *v[] = { "ns-7", "node-1757" };
        const char *none[] = { "ns-7", "node-1758" };   /* 1758 % 50 is 8 */
        const char *split[] = { "ns-7node", "-1757" };  /* the same text, cut elsewhere */
        assert_true(ebb_metric_get(f, v) == 2 * (1 + 1757 % 3));
        assert_true(ebb_metric_get(f, none) == 0);
        assert_true(ebb_metric_get(f, split) == 0);
    }
    /* rendered in the order the series came */
    assert_non_null(text = ebb_metrics_render(m, &len));
    assert_non_null(a = strstr(text, "evicted_total{namespace=\"ns-0\",node=\"node-0\"} 2"));
    assert_non_null(b = strstr(text, "evicted_total{namespace=\"ns-49\",node=\"node-2999\"} 6"));
    assert_true(a < b);
    free(text);
    ebb_metric_reset(f);
    {
        const char *v[] = { "ns-7", "node-1757" };
        assert_true(ebb_metric_get(f, v) == 0);
        ebb_metric_add(f, v, 5);
        assert_true(ebb_metric_get(f, v) == 5);
    }
    ebb_metrics_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(many_series),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
