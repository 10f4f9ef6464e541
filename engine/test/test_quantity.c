/* engine/base/quantity.c: resource.Quantity text -> Value() / MilliValue(). */
#include "fixtures.h"

#include <math.h>

#include "ebb/plan.h"
#include "ebb/quantity.h"
#include "ebb/simulate.h"

struct qcase {
    const char *text;
    int64_t value;   /* Value(): whole units, rounded up */
    int64_t milli;   /* MilliValue() */
};

static void check_cases(const struct qcase *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t v = -42, m = -42;
        int rc1 = ebb_quantity_parse(c[i].text, strlen(c[i].text), false, &v);
        int rc2 = ebb_quantity_parse(c[i].text, strlen(c[i].text), true, &m);

        if (rc1 != 0 || rc2 != 0)
            fail_msg("\"%s\": parse failed (%d, %d)", c[i].text, rc1, rc2);
        if (v != c[i].value)
            fail_msg("\"%s\": value %lld, want %lld", c[i].text, (long long)v,
                     (long long)c[i].value);
        if (m != c[i].milli)
            fail_msg("\"%s\": milli %lld, want %lld", c[i].text, (long long)m,
                     (long long)c[i].milli);
    }
}

/* What kubelets and users write in requests, limits and allocatable. */
static void test_common_forms(void **state)
{
    static const struct qcase c[] = {
        { "1", 1, 1000 },
        { "100m", 1, 100 },
        { "250m", 1, 250 },
        { "0.25", 1, 250 },
        { "1.5", 2, 1500 },
        { "2", 2, 2000 },
        { "3920m", 4, 3920 },
        { "128974848", 128974848, 128974848000 },
        { "129e6", 129000000, 129000000000 },
        { "129M", 129000000, 129000000000 },
        { "123Mi", 128974848, 128974848000 },
        { "1.5Gi", 1610612736, 1610612736000 },
        { "16266388Ki", 16656781312, 16656781312000 },
        { "110", 110, 110000 },
        { "20Gi", 21474836480, 21474836480000 },
        { "1Ki", 1024, 1024000 },
        { "8Ki", 8192, 8192000 },
        { "7Mi", 7340032, 7340032000 },
        { "6Gi", 6442450944, 6442450944000 },
        { "5Ti", 5497558138880, 5497558138880000 },
        { "4Pi", 4503599627370496, 4503599627370496000 },
        { "3Ei", 3458764513820540928, INT64_MAX },
        { "100Ti", 109951162777600, 109951162777600000 },
    };
    (void)state;
    check_cases(c, EBB_ARRAY_LEN(c));
}

static void test_decimal_suffixes_and_exponents(void **state)
{
    static const struct qcase c[] = {
        { "5n", 1, 1 },
        { "4u", 1, 1 },
        { "3m", 1, 3 },
        { "9", 9, 9000 },
        { "8k", 8000, 8000000 },
        { "50k", 50000, 50000000 },
        { "7M", 7000000, 7000000000 },
        { "6G", 6000000000, 6000000000000 },
        { "5T", 5000000000000, 5000000000000000 },
        { "40T", 40000000000000, 40000000000000000 },
        { "2P", 2000000000000000, 2000000000000000000 },
        { "1E", 1000000000000000000, INT64_MAX },
        { "1E-3", 1, 1 },
        { "1e3", 1000, 1000000 },
        { "1E6", 1000000, 1000000000 },
        { "1e9", 1000000000, 1000000000000 },
        { "1E12", 1000000000000, 1000000000000000 },
        { "1e15", 1000000000000000, 1000000000000000000 },
        { "1E18", 1000000000000000000, INT64_MAX },
        { "1e+3", 1000, 1000000 },
        { "1e-0", 1, 1000 },
        { "100.035k", 100035, 100035000 },
        { "0.001", 1, 1 },
        { "0.0005k", 1, 500 },
        { "0.5e0", 1, 500 },
        { "0.5e-1", 1, 50 },
        { "0.5e-2", 1, 5 },
        { "10.035M", 10035000, 10035000000 },
        { "1.2e3", 1200, 1200000 },
        { "1.3E+6", 1300000, 1300000000 },
        { "1.40e9", 1400000000, 1400000000000 },
        { "1.53E12", 1530000000000, 1530000000000000 },
        { "1.7E18", 1700000000000000000, INT64_MAX },
        { "9.01", 10, 9010 },
        { "8.1k", 8100, 8100000 },
        { "7.123456M", 7123456, 7123456000 },
        { "6.987654321G", 6987654321, 6987654321000 },
        { "5.444T", 5444000000000, 5444000000000000 },
        { "2.5P", 2500000000000000, 2500000000000000000 },
        { "1.01E", 1010000000000000000, INT64_MAX },
        /* Non-canonical but accepted: leading zeros, a trailing dot, a
         * missing integer part, an explicit plus. */
        { "007", 7, 7000 },
        { "1.", 1, 1000 },
        { "1.G", 1000000000, 1000000000000 },
        { ".001", 1, 1 },
        { ".0001k", 1, 100 },
        { "+2", 2, 2000 },
        { "+1.5Gi", 1610612736, 1610612736000 },
    };
    (void)state;
    check_cases(c, EBB_ARRAY_LEN(c));
}

/* Below a nanounit the API rounds up; Value and MilliValue round up again. */
static void test_rounding_up(void **state)
{
    static const struct qcase c[] = {
        { "3.001n", 1, 1 },
        { "1.1E-9", 1, 1 },
        { "0.0000000001", 1, 1 },
        { "0.0000000005", 1, 1 },
        { "0.5e-9", 1, 1 },
        { "0.9n", 1, 1 },
        { "0.00000012345", 1, 1 },
        { "1e-100", 1, 1 },
        { "0.1m", 1, 1 },
        { "1001m", 2, 1001 },
        { "1000.1m", 2, 1001 },
        { "999999999n", 1, 1000 },
        { "1000000001n", 2, 1001 },
        /* fractional binary quantities */
        { "100.035Ki", 102436, 102435840 },
        { "0.5Mi", 524288, 524288000 },
        { "0.05Gi", 53687092, 53687091200 },
        { "0.025Ti", 27487790695, 27487790694400 },
        { "1.1Ki", 1127, 1126400 },
        { "0.000000000001Ki", 1, 1 },
        { ".001Ki", 2, 1024 },
        { ".000001Ki", 1, 2 },
    };
    (void)state;
    check_cases(c, EBB_ARRAY_LEN(c));
}

/* Values beyond int64: binary ones are capped at 2^63-1 by the parser,
 * everything else saturates where the result is taken. */
static void test_saturation(void **state)
{
    static const struct qcase c[] = {
        { "9Ei", INT64_MAX, INT64_MAX },
        { "8Ei", INT64_MAX, INT64_MAX },
        { "7Ei", 8070450532247928832, INT64_MAX },
        { "9223372036854775807Ki", INT64_MAX, INT64_MAX },
        { "9223372036854775807", INT64_MAX, INT64_MAX },
        { "9223372036854775808", INT64_MAX, INT64_MAX },
        { "12E", INT64_MAX, INT64_MAX },
        { "1e100", INT64_MAX, INT64_MAX },
        { "9223372036854775", 9223372036854775, 9223372036854775000 },
        { "9223372036854776", 9223372036854776, INT64_MAX },
        { "-9223372036854775808", INT64_MIN, INT64_MIN },
        { "-1e100", INT64_MIN, INT64_MIN },
        { "-9Ei", -INT64_MAX, INT64_MIN },
        /* the exponent is narrowed to 32 bits: 2^32 wraps to 0 */
        { "5e4294967296", 5, 5000 },
    };
    (void)state;
    check_cases(c, EBB_ARRAY_LEN(c));
}

/* Negative quantities (not valid in requests, but parsed): the int64 form
 * rounds away from zero, the decimal form towards +inf. */
static void test_negative(void **state)
{
    static const struct qcase c[] = {
        { "-1", -1, -1000 },
        { "-100m", -1, -100 },
        { "-1.5", -2, -1500 },
        { "-5n", -1, -1 },
        { "-1Ki", -1024, -1024000 },
        { "-0.1Ki", -102, -102400 },
        { "-1.1Ki", -1126, -1126400 },
        { "-3.001n", 0, 0 },
        { "-0.000000000001Ki", 0, 0 },
    };
    (void)state;
    check_cases(c, EBB_ARRAY_LEN(c));
}

static void test_zero_forms(void **state)
{
    static const char *const zeros[] = {
        "0", "-0", "+0", "000", "0n", "0u", "0m", "0Ki", "0k", "0Mi", "0M", "0Gi", "0G",
        "0Ti", "0T", "0Pi", "0Ei", "0.0", "0.000Ki", "0e9", ".", "-.", "+", "-", ".Ki",
        ".e5", "0.Pi", "Mi", "k", "m",
    };
    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(zeros); i++) {
        int64_t v = 99, m = 99;
        if (ebb_quantity_parse(zeros[i], strlen(zeros[i]), false, &v) != 0 ||
            ebb_quantity_parse(zeros[i], strlen(zeros[i]), true, &m) != 0)
            fail_msg("\"%s\" refused", zeros[i]);
        if (v != 0 || m != 0)
            fail_msg("\"%s\": %lld / %lld, want 0", zeros[i], (long long)v, (long long)m);
    }
}

static void test_malformed(void **state)
{
    static const char *const bad[] = {
        "", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-",
        " 1", "1 ", "5Kb", "1.2.3", "1e", "1e+", "1E-", "1KI", "1kI", "1ki", "1mi", "1Ki5",
        "1e3.5", "1e99999999999999999999", "Pi", ".Pi", "+.Ei", ".e-20", "--1", "+-1",
        "1,000", "0x10", "1_000", "Inf", "NaN", "1Gib", "1GB", "1 Gi", "\t1", "1\n",
        "100MiB", "2cpu", "1E3E3",
    };
    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(bad); i++) {
        int64_t v = 7;
        int rc = ebb_quantity_parse(bad[i], strlen(bad[i]), false, &v);
        if (rc != EBB_EPARSE)
            fail_msg("\"%s\": rc %d, want EBB_EPARSE", bad[i], rc);
        if (v != 7)
            fail_msg("\"%s\": output written on failure", bad[i]);
    }
}

/* `len` bounds the text: decode hands in slices of JSON strings. */
static void test_length_bounded(void **state)
{
    const char *s = "512Mi\"}";
    int64_t v = 0;

    (void)state;
    assert_int_equal(ebb_quantity_parse(s, 5, false, &v), 0);
    assert_true(v == 536870912);
    assert_int_equal(ebb_quantity_parse(s, 4, false, &v), 0);   /* "512M" */
    assert_true(v == 512000000);
    assert_int_equal(ebb_quantity_parse(s, 6, false, &v), EBB_EPARSE);
    assert_int_equal(ebb_quantity_parse(NULL, 0, false, &v), EBB_EINVAL);
    assert_int_equal(ebb_quantity_parse("1", 1, false, NULL), EBB_EINVAL);
}

/* Long inputs go through the digit buffer on the heap. */
static void test_long_numbers(void **state)
{
    char buf[400];
    int64_t v = 0;

    (void)state;
    /* 0.000...0001 with 300 zeros: rounds up to one nanounit */
    strcpy(buf, "0.");
    memset(buf + 2, '0', 300);
    strcpy(buf + 302, "1Ki");
    assert_int_equal(ebb_quantity_parse(buf, strlen(buf), true, &v), 0);
    assert_true(v == 1);
    /* 1 followed by 200 zeros, binary: capped */
    buf[0] = '1';
    memset(buf + 1, '0', 200);
    strcpy(buf + 201, "Mi");
    assert_int_equal(ebb_quantity_parse(buf, strlen(buf), false, &v), 0);
    assert_true(v == INT64_MAX);
    /* 200 digits that are all leading zeros before a small number */
    memset(buf, '0', 200);
    strcpy(buf + 200, "42.5");
    assert_int_equal(ebb_quantity_parse(buf, strlen(buf), true, &v), 0);
    assert_true(v == 42500);
}

static void test_parse_resource(void **state)
{
    int64_t v = 0;

    (void)state;
    assert_int_equal(ebb_quantity_parse_resource("cpu", "500m", &v), 0);
    assert_true(v == 500);
    assert_int_equal(ebb_quantity_parse_resource("cpu", "2", &v), 0);
    assert_true(v == 2000);
    assert_int_equal(ebb_quantity_parse_resource("memory", "500m", &v), 0);
    assert_true(v == 1);
    assert_int_equal(ebb_quantity_parse_resource("memory", "2Gi", &v), 0);
    assert_true(v == 2147483648);
    assert_int_equal(ebb_quantity_parse_resource("ephemeral-storage", "10G", &v), 0);
    assert_true(v == 10000000000);
    assert_int_equal(ebb_quantity_parse_resource("nvidia.com/gpu", "1", &v), 0);
    assert_true(v == 1);
    assert_int_equal(ebb_quantity_parse_resource("pods", "110", &v), 0);
    assert_true(v == 110);
    assert_int_equal(ebb_quantity_parse_resource("cpu", "1 core", &v), EBB_EPARSE);
    assert_int_equal(ebb_quantity_parse_resource(NULL, "1", &v), EBB_EINVAL);
}

static void test_format(void **state)
{
    static const struct {
        int64_t v;
        bool milli;
        const char *want;
    } c[] = {
        { 250, true, "250m" },
        { 2000, true, "2" },
        { 1500, true, "1500m" },
        { 0, true, "0" },
        { -100, true, "-100m" },
        { -3000, true, "-3" },
        { 536870912, false, "512Mi" },
        { 1073741824, false, "1Gi" },
        { 1610612736, false, "1536Mi" },
        { 1024, false, "1Ki" },
        { 1025, false, "1025" },
        { 1000, false, "1000" },
        { 5, false, "5" },
        { 0, false, "0" },
        { 1099511627776, false, "1Ti" },
        { 4503599627370496, false, "4Pi" },
        { 3458764513820540928, false, "3Ei" },
        { INT64_MAX, false, "9223372036854775807" },
        { INT64_MIN, false, "-8Ei" },
        { -2048, false, "-2Ki" },
    };
    char buf[32];

    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(c); i++) {
        ebb_quantity_format(c[i].v, c[i].milli, buf, sizeof(buf));
        assert_string_equal(buf, c[i].want);
    }
    /* a short buffer is truncated, never overrun */
    ebb_quantity_format(536870912, false, buf, 3);
    assert_string_equal(buf, "51");
}

/* What the formatter prints parses back to the same number. */
static void test_format_round_trip(void **state)
{
    static const int64_t bytes[] = { 1, 1023, 1024, 3 * 1048576, 16656781312, 8070450532247928832 };
    static const int64_t millis[] = { 1, 100, 999, 1000, 3920, 64000 };
    char buf[32];
    int64_t v;

    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(bytes); i++) {
        ebb_quantity_format(bytes[i], false, buf, sizeof(buf));
        assert_int_equal(ebb_quantity_parse(buf, strlen(buf), false, &v), 0);
        assert_true(v == bytes[i]);
    }
    for (size_t i = 0; i < EBB_ARRAY_LEN(millis); i++) {
        ebb_quantity_format(millis[i], true, buf, sizeof(buf));
        assert_int_equal(ebb_quantity_parse(buf, strlen(buf), true, &v), 0);
        assert_true(v == millis[i]);
    }
}

/* ---- the whole class: quantities past int64 through every computation ----
 *
 * A cluster whose every quantity is one of the extremes below (requests,
 * limits, init containers and sidecars, overhead, allocatable, image sizes,
 * NodeMetrics, PodMetrics, Koordinator's NodeMetric), run through every
 * strategy that computes with quantities (utilization, load, fit, topology)
 * and the scheduler model placing the pending pods and the replacements.
 * The test binary is built with UBSan and no recovery: an int64 that wraps
 * or a double converted out of range anywhere aborts it. The plan it gives
 * must print as valid JSON with no negative utilization from positive
 * inputs. */

static const char *const extremes[] = {
    "1e400", "-1e400", "9223372036854775807", "9223372036854775807m", "8Ei", "7Ei", "-8Ei",
    "999999999999999999999999", "1n", "0", "1", "4", "64Gi",
};

struct xbuf {
    char *s;
    size_t n, cap;
};

static void xadd(struct xbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void xadd(struct xbuf *b, const char *fmt, ...)
{
    va_list ap;
    int k;

    va_start(ap, fmt);
    k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    assert_true(k >= 0 && (size_t)k < b->cap - b->n);
    b->n += (size_t)k;
}

/* Four nodes: of quantities v, of w, of ordinary ones, and an ordinary one
 * idle (the destination balancing looks for); two pods on each of the first
 * three and a pending one, all asking for v and w, with metrics of v and w
 * (the idle node's small). */
static void extreme_cluster(struct xbuf *b, const char *v, const char *w)
{
    const char *nodeq[4] = { v, w, "8", "8" };
    const char *nodemem[4] = { v, w, "32Gi", "32Gi" };

    b->n = 0;
    xadd(b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
    for (int n = 0; n < 4; n++) {
        const char *alloc = nodeq[n], *mem = nodemem[n];
        xadd(b, "%s{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n%d\",\"uid\":\"u-n%d\","
                "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{\"kubernetes.io/hostname\":\"n%d\","
                "\"topology.kubernetes.io/zone\":\"z%d\"}},\"spec\":{},\"status\":{"
                "\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"%s\",\"pods\":\"%s\",\"ephemeral-storage\":\"%s\","
                "\"example.com/gpu\":\"%s\"},"
                "\"capacity\":{\"cpu\":\"%s\",\"memory\":\"%s\",\"pods\":\"%s\"},"
                "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
                "\"images\":[{\"names\":[\"registry.example.com/app:1\"],\"sizeBytes\":9223372036854775807},"
                "{\"names\":[\"registry.example.com/side:1\"],\"sizeBytes\":9223372036854775807}]}}",
             n ? "," : "", n, n, n, n % 2, alloc, mem, n >= 2 ? "110" : alloc, alloc, alloc, alloc, mem,
             n >= 2 ? "110" : alloc);
        if (n == 3) {
            /* idle: small metrics, no pods */
            xadd(b, ",{\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"kind\":\"NodeMetrics\",\"metadata\":{\"name\":\"n3\"},"
                    "\"timestamp\":\"2026-11-22T11:59:00Z\",\"window\":\"30s\",\"usage\":{\"cpu\":\"100m\","
                    "\"memory\":\"1Gi\"}}");
            xadd(b, ",{\"apiVersion\":\"slo.koordinator.sh/v1alpha1\",\"kind\":\"NodeMetric\",\"metadata\":{"
                    "\"name\":\"n3\"},\"spec\":{},\"status\":{\"updateTime\":\"2026-11-22T11:59:30Z\",\"nodeMetric\":{"
                    "\"nodeUsage\":{\"resources\":{\"cpu\":\"100m\",\"memory\":\"1Gi\"}}},\"podsMetric\":[]}}");
            continue;
        }
        xadd(b, ",{\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"kind\":\"NodeMetrics\",\"metadata\":{\"name\":\"n%d\"},"
                "\"timestamp\":\"2026-11-22T11:59:00Z\",\"window\":\"30s\",\"usage\":{\"cpu\":\"%s\",\"memory\":\"%s\"}}",
             n, v, w);
        xadd(b, ",{\"apiVersion\":\"slo.koordinator.sh/v1alpha1\",\"kind\":\"NodeMetric\",\"metadata\":{\"name\":\"n%d\"},"
                "\"spec\":{},\"status\":{\"updateTime\":\"2026-11-22T11:59:30Z\",\"nodeMetric\":{"
                "\"nodeUsage\":{\"resources\":{\"cpu\":\"%s\",\"memory\":\"%s\"}},"
                "\"systemUsage\":{\"resources\":{\"cpu\":\"%s\",\"memory\":\"%s\"}}},\"podsMetric\":["
                "{\"name\":\"p%d-0\",\"namespace\":\"default\",\"podUsage\":{\"resources\":{\"cpu\":\"%s\",\"memory\":\"%s\"}}},"
                "{\"name\":\"p%d-1\",\"namespace\":\"default\",\"podUsage\":{\"resources\":{\"cpu\":\"%s\",\"memory\":\"%s\"}},"
                "\"priority\":\"koord-batch\"}]}}",
             n, v, w, w, v, n, v, v, n, w, v);
        for (int k = 0; k < 3; k++) {
            bool pending = k == 2;
            if (pending && n > 0)
                break;
            xadd(b, ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%d-%d\",\"namespace\":\"default\","
                    "\"uid\":\"u-p%d-%d\",\"creationTimestamp\":\"2026-01-01T00:00:0%dZ\",\"labels\":{\"app\":\"a\"},"
                    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs\","
                    "\"uid\":\"u-rs\",\"controller\":true}]},\"spec\":{%s%s%s"
                    "\"schedulerName\":\"default-scheduler\",\"containers\":["
                    "{\"name\":\"c\",\"image\":\"registry.example.com/app:1\",\"resources\":{"
                    "\"requests\":{\"cpu\":\"%s\",\"memory\":\"%s\",\"example.com/gpu\":\"%s\",\"ephemeral-storage\":\"%s\"},"
                    "\"limits\":{\"cpu\":\"%s\",\"memory\":\"%s\",\"example.com/gpu\":\"%s\"}}},"
                    "{\"name\":\"d\",\"image\":\"registry.example.com/side:1\",\"resources\":{\"requests\":{\"cpu\":\"%s\","
                    "\"memory\":\"%s\"}}}],"
                    "\"initContainers\":[{\"name\":\"i\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"%s\","
                    "\"memory\":\"%s\"}}},{\"name\":\"s\",\"image\":\"x\",\"restartPolicy\":\"Always\",\"resources\":"
                    "{\"requests\":{\"cpu\":\"%s\",\"memory\":\"%s\"}}}],"
                    "\"overhead\":{\"cpu\":\"%s\",\"memory\":\"%s\"},"
                    "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"topology.kubernetes.io/zone\","
                    "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":{\"app\":\"a\"}}}]},"
                    "\"status\":{\"phase\":\"%s\"%s}}",
                 n, k, n, k, k, pending ? "" : "\"nodeName\":\"n", pending ? "" : (n == 0 ? "0" : n == 1 ? "1" : "2"),
                 pending ? "" : "\",", v, w, v, v, v, w, v, w, v, v, v, w, v, v, w,
                 pending ? "Pending" : "Running",
                 pending ? "" : ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]");
            if (!pending)
                xadd(b, ",{\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"kind\":\"PodMetrics\",\"metadata\":{"
                        "\"name\":\"p%d-%d\",\"namespace\":\"default\"},\"timestamp\":\"2026-11-22T11:59:00Z\","
                        "\"window\":\"30s\",\"containers\":[{\"name\":\"c\",\"usage\":{\"cpu\":\"%s\",\"memory\":\"%s\"}}]}",
                     n, k, w, v);
        }
    }
    xadd(b, ",{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"rs\",\"namespace\":\"default\","
            "\"uid\":\"u-rs\"},\"spec\":{\"replicas\":5,\"selector\":{\"matchLabels\":{\"app\":\"a\"}}}}]}");
}

/* Every strategy that computes with quantities, nodeFit on. */
static const char extreme_policy[] =
    "apiVersion: descheduler/v1alpha2\n"
    "kind: DeschedulerPolicy\n"
    "metricsProviders: [{source: KubernetesMetrics}]\n"
    "profiles:\n"
    "- name: requests\n"
    "  pluginConfig:\n"
    "  - {name: DefaultEvictor, args: {nodeFit: true, evictLocalStoragePods: true}}\n"
    "  - name: LowNodeUtilization\n"
    "    args: {thresholds: {cpu: 20, memory: 20, pods: 20, example.com/gpu: 20},\n"
    "           targetThresholds: {cpu: 50, memory: 50, pods: 50, example.com/gpu: 50}}\n"
    "  - {name: RemovePodsViolatingTopologySpreadConstraint}\n"
    "  - {name: RemoveDuplicates}\n"
    "  plugins:\n"
    "    balance: {enabled: [LowNodeUtilization, RemovePodsViolatingTopologySpreadConstraint, RemoveDuplicates]}\n"
    "- name: metrics\n"
    "  pluginConfig:\n"
    "  - {name: DefaultEvictor, args: {nodeFit: true}}\n"
    "  - name: LowNodeUtilization\n"
    "    args: {thresholds: {cpu: 20, memory: 20}, targetThresholds: {cpu: 50, memory: 50},\n"
    "           metricsUtilization: {source: KubernetesMetrics}}\n"
    "  plugins:\n"
    "    balance: {enabled: [LowNodeUtilization]}\n"
    "- name: high\n"
    "  pluginConfig:\n"
    "  - {name: DefaultEvictor, args: {nodeFit: true}}\n"
    "  - name: HighNodeUtilization\n"
    "    args: {thresholds: {cpu: 40, memory: 40, example.com/gpu: 40}}\n"
    "  plugins:\n"
    "    balance: {enabled: [HighNodeUtilization]}\n"
    "- name: load\n"
    "  pluginConfig:\n"
    "  - {name: DefaultEvictor, args: {nodeFit: true}}\n"
    "  - name: LowNodeLoad\n"
    "    args: {lowThresholds: {cpu: 30, memory: 30}, highThresholds: {cpu: 65, memory: 70},\n"
    "           anomalyCondition: {consecutiveAbnormalities: 1}}\n"
    "  plugins:\n"
    "    balance: {enabled: [LowNodeLoad]}\n";

static void check_extreme_plan(const struct ebb_plan *p, bool positive)
{
    char *json = ebb_plan_to_json(p, false);

    assert_non_null(json);
    assert_true(ebb_utf8_valid(json, strlen(json)));
    free(json);
    for (size_t i = 0; i < p->nnodes; i++)
        for (int k = 0; k < 3; k++) {
            assert_true(isfinite(p->nodes[i].before[k]) && isfinite(p->nodes[i].after[k]));
            if (positive)
                assert_true(p->nodes[i].before[k] >= 0 && p->nodes[i].after[k] >= 0);
        }
}

static void test_extremes_every_path(void **state)
{
    struct xbuf b = { .cap = 1 << 20 };
    (void)state;

    assert_non_null(b.s = malloc(b.cap));
    for (size_t i = 0; i < EBB_ARRAY_LEN(extremes); i++)
        for (size_t j = 0; j < EBB_ARRAY_LEN(extremes); j += i == j ? 1 : 3) {
            struct ebb_sim_opts so = {
                .snapshot = "extremes.json", .policy = "extremes.yaml",
                .policy_buf = extreme_policy, .policy_len = sizeof(extreme_policy) - 1,
                .now = 1795348800,   /* 2026-11-22T12:00:00Z */
                .reschedule = true, .max_cycles = 2,
            };
            struct ebb_engine *e = NULL;
            struct ebb_error err;
            int rc;
            extreme_cluster(&b, extremes[i], extremes[j]);
            so.snapshot_buf = b.s;
            so.snapshot_len = b.n;
            print_message("requests %s and %s\n", extremes[i], extremes[j]);
            rc = ebb_simulate(&so, &e, &err);
            if (rc != 0) {
                char msg[1024];
                ebb_error_format(&err, msg, sizeof(msg));
                fail_msg("%s", msg);
            }
            check_extreme_plan(ebb_engine_plan(e), extremes[i][0] != '-' && extremes[j][0] != '-');
            {
                char *json = ebb_whatif_plan_json(so.whatif, ebb_engine_plan(e), false);
                assert_non_null(json);
                free(json);
            }
            ebb_whatif_destroy(so.whatif);
            ebb_engine_destroy(e);
            ebb_evmem_free(&so.memory);
        }
    free(b.s);
}

/* The plain forms (quantity.c's parse_plain) against the full parser: the
 * same text behind a '+' goes the full way. Every suffix (those the plain
 * path takes and those it leaves), every digit count to 17, values at the
 * edges of each count, in units and in milli-units, products past int64
 * (saturated by the full path) included. */
static void test_plain_forms(void **state)
{
    static const char *suffixes[] = { "", "m", "k", "M", "G", "T", "P", "E", "n", "u",
                                      "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "i", "KI" };
    size_t checked = 0;
    (void)state;

    for (int nd = 1; nd <= 17; nd++)
        for (int form = 0; form < 4; form++) {
            char digits[32], text[48], plus[56];
            /* 1, 10..0, 99..9, 12..; */
            for (int i = 0; i < nd; i++)
                digits[i] = form == 0 ? (i == 0 ? '1' : '0') : form == 1 ? '9'
                          : form == 2 ? (char)('1' + i % 9) : (i == nd - 1 ? '7' : '5');
            digits[nd] = '\0';
            for (size_t k = 0; k < EBB_ARRAY_LEN(suffixes); k++)
                for (int milli = 0; milli < 2; milli++) {
                    int64_t a = 11, b = 13;
                    int rca, rcb;
                    snprintf(text, sizeof(text), "%s%s", digits, suffixes[k]);
                    snprintf(plus, sizeof(plus), "+%s", text);
                    rca = ebb_quantity_parse(text, strlen(text), milli, &a);
                    rcb = ebb_quantity_parse(plus, strlen(plus), milli, &b);
                    if (rca != rcb || (rca == 0 && a != b))
                        fail_msg("\"%s\" (milli %d): %d %lld, the full parser %d %lld", text, milli, rca,
                                 (long long)a, rcb, (long long)b);
                    checked++;
                }
        }
    assert_int_equal(checked, 17 * 4 * EBB_ARRAY_LEN(suffixes) * 2);
}

static void test_arithmetic_saturates(void **state)
{
    static const int64_t v[] = { 0, 1, -1, 2, -2, 1000, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1,
                                 INT64_MAX / 2, INT64_MIN / 2, 3037000499, -3037000500 };
    (void)state;

    for (size_t i = 0; i < EBB_ARRAY_LEN(v); i++)
        for (size_t j = 0; j < EBB_ARRAY_LEN(v); j++) {
            __int128 a = v[i], b = v[j], r;
            r = a + b;
            assert_true(ebb_q_add(v[i], v[j]) == (r > INT64_MAX ? INT64_MAX : r < INT64_MIN ? INT64_MIN : r));
            r = a - b;
            assert_true(ebb_q_sub(v[i], v[j]) == (r > INT64_MAX ? INT64_MAX : r < INT64_MIN ? INT64_MIN : r));
            r = a * b;
            assert_true(ebb_q_mul(v[i], v[j]) == (r > INT64_MAX ? INT64_MAX : r < INT64_MIN ? INT64_MIN : r));
            assert_true(isfinite(ebb_q_percent(v[i], v[j])));
        }
    assert_true(ebb_q_of_double(1e300) == INT64_MAX);
    assert_true(ebb_q_of_double(-1e300) == INT64_MIN);
    assert_true(ebb_q_of_double(9223372036854775808.0) == INT64_MAX);
    assert_true(ebb_q_of_double(-9223372036854775808.0) == INT64_MIN);
    assert_true(ebb_q_of_double(9223372036854774784.0) == 9223372036854774784);
    assert_true(ebb_q_of_double(0.0 / 0.0) == 0);
    assert_true(ebb_q_of_double(-2.9) == -2);
    assert_true(ebb_q_round2(92233720368547758.0 * 1000) == 92233720368547758.0 * 1000);
    assert_true(ebb_q_round2(12.345) == 12.35 || ebb_q_round2(12.345) == 12.34);
    assert_true(ebb_q_round2(1e21) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_common_forms),
        cmocka_unit_test(test_plain_forms),
        cmocka_unit_test(test_decimal_suffixes_and_exponents),
        cmocka_unit_test(test_rounding_up),
        cmocka_unit_test(test_saturation),
        cmocka_unit_test(test_negative),
        cmocka_unit_test(test_zero_forms),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_length_bounded),
        cmocka_unit_test(test_long_numbers),
        cmocka_unit_test(test_parse_resource),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_arithmetic_saturates),
        cmocka_unit_test(test_extremes_every_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
