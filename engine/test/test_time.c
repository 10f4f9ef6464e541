/* engine/base/common.c: RFC 3339 times as the API writes them. */
#include "fixtures.h"

#include "ebb/common.h"

static int64_t parse_ok(const char *s)
{
    int64_t t = EBB_TIME_NONE;

    if (ebb_time_parse(s, &t) != 0)
        fail_msg("\"%s\" refused", s);
    return t;
}

static void test_utc(void **state)
{
    static const struct {
        const char *text;
        int64_t t;
    } c[] = {
        { "1970-01-01T00:00:00Z", 0 },
        { "1970-01-01T00:00:01Z", 1 },
        { "1969-12-31T23:59:59Z", -1 },
        { "2026-01-02T03:04:05Z", 1767323045 },
        { "2026-11-22T12:00:00Z", 1795348800 },
        { "2000-01-01T00:00:00Z", 946684800 },
        { "2038-01-19T03:14:08Z", 2147483648 },
        { "0001-01-01T00:00:00Z", -62135596800 },   /* Go's zero time */
        { "9999-12-31T23:59:59Z", 253402300799 },
        { "2024-12-31T23:59:59Z", 1735689599 },
    };

    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(c); i++) {
        int64_t t = parse_ok(c[i].text);
        if (t != c[i].t)
            fail_msg("\"%s\": %lld, want %lld", c[i].text, (long long)t, (long long)c[i].t);
    }
}

static void test_offsets(void **state)
{
    (void)state;
    /* the same instant written in three zones */
    assert_true(parse_ok("2026-01-02T08:34:05+05:30") == 1767323045);
    assert_true(parse_ok("2026-01-01T19:04:05-08:00") == 1767323045);
    assert_true(parse_ok("2026-01-02T03:04:05+00:00") == 1767323045);
    assert_true(parse_ok("2026-01-02T03:04:05-00:00") == 1767323045);
    /* an offset that crosses the day and the year */
    assert_true(parse_ok("2025-12-31T23:30:00-01:00") == parse_ok("2026-01-01T00:30:00Z"));
    assert_true(parse_ok("1970-01-01T00:00:00+23:59") == -(23 * 3600 + 59 * 60));
}

/* metav1.Time keeps whole seconds: fractions are dropped, not rounded. */
static void test_fractions(void **state)
{
    (void)state;
    assert_true(parse_ok("2026-01-02T03:04:05.000Z") == 1767323045);
    assert_true(parse_ok("2026-01-02T03:04:05.5Z") == 1767323045);
    assert_true(parse_ok("2026-01-02T03:04:05.999999999Z") == 1767323045);
    assert_true(parse_ok("2026-01-02T03:04:05.123456789123+01:00") == 1767323045 - 3600);
    assert_true(parse_ok("1969-12-31T23:59:59.9Z") == -1);
}

static void test_leap_years(void **state)
{
    (void)state;
    assert_true(parse_ok("2024-02-29T00:00:00Z") == 1709164800);
    assert_true(parse_ok("2000-02-29T12:00:00Z") == 951825600);   /* 400 rule */
    assert_true(parse_ok("2024-03-01T00:00:00Z") - parse_ok("2024-02-28T00:00:00Z") == 2 * 86400);
    assert_true(parse_ok("2023-03-01T00:00:00Z") - parse_ok("2023-02-28T00:00:00Z") == 86400);
    assert_true(parse_ok("2025-01-01T00:00:00Z") - parse_ok("2024-01-01T00:00:00Z") ==
                366 * 86400);
}

static void test_invalid(void **state)
{
    static const char *const bad[] = {
        "",
        "2026-01-02",
        "2026-01-02T03:04:05",          /* no zone */
        "2026-01-02T03:04Z",
        "2026-1-02T03:04:05Z",
        "26-01-02T03:04:05Z",
        "2026/01/02T03:04:05Z",
        "2026-01-02T03-04-05Z",
        "2026-00-10T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-01-00T00:00:00Z",
        "2026-01-32T00:00:00Z",
        "2026-04-31T00:00:00Z",
        "2026-06-31T00:00:00Z",
        "2023-02-29T00:00:00Z",          /* not a leap year */
        "1900-02-29T00:00:00Z",          /* 100 rule */
        "2024-02-30T00:00:00Z",
        "2026-01-02T24:00:00Z",
        "2026-01-02T23:60:00Z",
        "2026-01-02T23:59:61Z",
        "2026-01-02T03:04:05.Z",         /* a dot needs digits */
        "2026-01-02T03:04:05+0530",
        "2026-01-02T03:04:05+05",
        "2026-01-02T03:04:05+24:00",
        "2026-01-02T03:04:05+05:60",
        "2026-01-02T03:04:05ZZ",
        "2026-01-02T03:04:05Z ",
        " 2026-01-02T03:04:05Z",
        "2026-01-02X03:04:05Z",
        "2026-01-02T03:04:05UTC",
        "1767323045",
    };
    int64_t t;

    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(bad); i++) {
        t = 12345;
        if (ebb_time_parse(bad[i], &t) != EBB_EPARSE)
            fail_msg("\"%s\" accepted", bad[i]);
        if (t != 12345)
            fail_msg("\"%s\": output written on failure", bad[i]);
    }
    assert_int_equal(ebb_time_parse(NULL, &t), EBB_EPARSE);
}

static void test_format(void **state)
{
    char buf[32];

    (void)state;
    ebb_time_format(0, buf, sizeof(buf));
    assert_string_equal(buf, "1970-01-01T00:00:00Z");
    ebb_time_format(1767323045, buf, sizeof(buf));
    assert_string_equal(buf, "2026-01-02T03:04:05Z");
    ebb_time_format(-1, buf, sizeof(buf));
    assert_string_equal(buf, "1969-12-31T23:59:59Z");
    ebb_time_format(1709164800, buf, sizeof(buf));
    assert_string_equal(buf, "2024-02-29T00:00:00Z");
    ebb_time_format(EBB_TIME_NONE, buf, sizeof(buf));
    assert_string_equal(buf, "-");
    /* exactly the documented minimum */
    ebb_time_format(253402300799, buf, 21);
    assert_string_equal(buf, "9999-12-31T23:59:59Z");
}

/* Every second of a leap day and around it survives format -> parse. */
static void test_round_trip(void **state)
{
    char buf[32];

    (void)state;
    for (int64_t t = 1709078400 - 7200; t < 1709251200 + 7200; t += 61) {
        ebb_time_format(t, buf, sizeof(buf));
        if (parse_ok(buf) != t)
            fail_msg("%lld -> %s -> %lld", (long long)t, buf, (long long)parse_ok(buf));
    }
    for (int64_t t = -86400 * 366; t < 86400 * 366; t += 86399) {
        ebb_time_format(t, buf, sizeof(buf));
        assert_true(parse_ok(buf) == t);
    }
}

/* Upstream's now.Sub(t).Seconds(): an absent time is Go's zero time, the
 * difference saturates as a time.Duration and never overflows. */
static void test_since(void **state)
{
    const int64_t max = 9223372036;   /* math.MaxInt64 ns, in whole seconds */
    int64_t now = parse_ok("2026-11-22T12:00:00Z");
    (void)state;
    assert_int_equal(ebb_time_since(now, now - 3600), 3600);
    assert_int_equal(ebb_time_since(now, now + 5), -5);
    assert_int_equal(parse_ok("0001-01-01T00:00:00Z"), EBB_TIME_GO_ZERO);
    /* 2026 years after year 1 is beyond 292 years: saturated */
    assert_int_equal(ebb_time_since(now, EBB_TIME_NONE), max);
    assert_int_equal(ebb_time_since(now, EBB_TIME_GO_ZERO), max);
    assert_int_equal(ebb_time_since(EBB_TIME_GO_ZERO, now), -max);
    /* the largest the types hold: no overflow, still saturated */
    assert_int_equal(ebb_time_since(INT64_MAX, EBB_TIME_NONE), max);
    assert_int_equal(ebb_time_since(INT64_MIN + 1, INT64_MAX), -max);
    assert_int_equal(ebb_time_since(now, now - max), max);
    assert_int_equal(ebb_time_since(now, now - max - 1), max);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utc),
        cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_fractions),
        cmocka_unit_test(test_leap_years),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_since),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
