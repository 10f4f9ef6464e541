/* engine/cmd/report.c: the evictions chart's y axis. Table-driven over
 * every max a short run gives (0..50) and some large ones: the labels are
 * 0, step, 2 step, ... top, integers with no gap and no repeat, step 1, 2
 * or 5 times a power of ten (the finest that keeps to 5 intervals), top at
 * or above max and less than a step above it. */
#include "fixtures.h"

#include "ebb/report.h"

static bool nice(size_t step)
{
    while (step % 10 == 0 && step >= 10)
        step /= 10;
    return step == 1 || step == 2 || step == 5;
}

/* the nice step before `step` (5 -> 2, 2 -> 1, 10 -> 5), 0 below 1 */
static size_t smaller(size_t step)
{
    size_t lead = step, scale = 1;
    while (lead % 10 == 0 && lead >= 10) {
        lead /= 10;
        scale *= 10;
    }
    return lead == 5 ? 2 * scale : lead == 2 ? scale : scale / 10 * 5;
}

static void check_axis(size_t max)
{
    size_t t[EBB_REPORT_TICKS_MAX], n = ebb__report_ticks(max, t);
    char got[256];
    int at = 0;

    for (size_t i = 0; i < n && at < (int)sizeof(got) - 24; i++)
        at += snprintf(got + at, sizeof(got) - (size_t)at, "%zu ", t[i]);
    if (n < 2 || n > EBB_REPORT_TICKS_MAX || t[0] != 0)
        fail_msg("max %zu: labels %s", max, got);
    size_t step = t[1], top = t[n - 1];
    for (size_t i = 1; i < n; i++)
        if (t[i] - t[i - 1] != step)
            fail_msg("max %zu: labels %s (a gap or a repeat)", max, got);
    if (!nice(step) || top < max)
        fail_msg("max %zu: labels %s", max, got);
    /* no taller than it needs (one step less would not hold max) */
    if (max > 0 && top - step >= max)
        fail_msg("max %zu: labels %s, a step too tall", max, got);
    /* and the finest nice step that keeps to 5 intervals */
    size_t s = smaller(step);
    if (max > 0 && s > 0 && (max + s - 1) / s <= EBB_REPORT_TICKS_MAX - 1)
        fail_msg("max %zu: labels %s where a step of %zu would do", max, got, s);
}

static void small_maxima(void **state)
{
    (void)state;
    for (size_t max = 0; max <= 50; max++)
        check_axis(max);
}

static void large_maxima(void **state)
{
    static const size_t cases[] = { 99, 100, 101, 249, 250, 251, 999, 1000, 1001, 12345, 99999,
                                    1000000, 7777777, 123456789012ULL };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_axis(cases[i]);
}

static void the_labels_seen(void **state)
{
    /* the report that was seen: 5 evictions in a cycle gave 0 1 2 4 5 */
    size_t t[EBB_REPORT_TICKS_MAX];
    (void)state;
    assert_int_equal(ebb__report_ticks(5, t), 6);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(t[i], i);
    assert_int_equal(ebb__report_ticks(0, t), 2);
    assert_int_equal(t[1], 1);
    assert_int_equal(ebb__report_ticks(7, t), 5);
    assert_int_equal(t[4], 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_labels_seen),
        cmocka_unit_test(small_maxima),
        cmocka_unit_test(large_maxima),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
