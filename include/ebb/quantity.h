/* ebb/quantity.h: Kubernetes resource.Quantity parsing, exact to
 * k8s.io/apimachinery/pkg/api/resource, and the arithmetic on quantities.
 *
 * Accepted: a signed decimal number (digits, optional '.', optional
 * fraction) followed by an optional suffix: binary SI (Ki Mi Gi Ti Pi Ei),
 * decimal SI (n u m "" k M G T P E) or a decimal exponent (e3, E-2).
 * Called by decode.c and by policy/arg decoding; pure functions.
 *
 * The bound: a quantity is an int64 in its unit (millicores for cpu, bytes,
 * counts), and everything ebb computes from quantities saturates at
 * [EBB_QUANTITY_MIN, EBB_QUANTITY_MAX] instead of wrapping: parsing ("1e400"
 * is EBB_QUANTITY_MAX), sums of requests, allocatable minus requested,
 * products, a percentage turned back into a quantity. Upstream's Value()
 * wraps past int64 (big.Int.Int64); a pod asking for more than 2^63 - 1 of
 * anything asks, to ebb, for all of it: it fits no node and fills the one it
 * is on. Percentages of quantities are doubles (finite for every pair) and
 * are rounded for output without an integer conversion.
 */
#ifndef EBB_QUANTITY_H
#define EBB_QUANTITY_H

#include "common.h"

/* Parse `len` bytes of `s`. With `milli`, the result is in thousandths
 * (MilliValue: "100m" -> 100, "1.5" -> 1500); otherwise in whole units
 * (Value: "1.5Gi" -> 1610612736). Like Kubernetes, a fractional result is
 * rounded up (away from zero for positives: "0.1" -> 1 unit; "1n" -> 1 milli).
 * Values beyond int64 saturate at INT64_MAX/INT64_MIN.
 * Returns 0, or EBB_EPARSE for text that is not a quantity (empty, "1.2.3",
 * "5Kb", "Pi", " 1"). As in the API, a sign or suffix with no digits is
 * zero when the API keeps it in its int64 form ("-", ".", "Mi", "k") and
 * refused when it would need the decimal form ("Pi", ".Ei", ".e-20"). */
int ebb_quantity_parse(const char *s, size_t len, bool milli, int64_t *out);

/* The unit a resource is kept in: milli for "cpu", whole units otherwise. */
int ebb_quantity_parse_resource(const char *resource, const char *s, int64_t *out);

/* Canonical-ish text for a value: milli -> "250m" / "2"; bytes -> "512Mi",
 * "1Gi", or the plain number when not a whole binary multiple. */
void ebb_quantity_format(int64_t v, bool milli, char *buf, size_t len);

#define EBB_QUANTITY_MAX INT64_MAX   /* 9223372036854775807: 8Ei - 1 bytes, 9.2e15 cores */
#define EBB_QUANTITY_MIN INT64_MIN

/* Sums, differences and products of quantities saturate at the bound, as the
 * values do: a node holding pods of 9223372036854775807Ei is full, never
 * negative. */
static inline int64_t ebb_q_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

static inline int64_t ebb_q_sub(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

static inline int64_t ebb_q_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : r;
}

/* used / capacity in percent; 0 when capacity <= 0. Finite for every pair
 * (at most about 9.2e20). */
static inline double ebb_q_percent(int64_t used, int64_t capacity)
{
    return capacity > 0 ? (double)used * 100.0 / (double)capacity : 0.0;
}

/* A double as a quantity, truncated towards zero as a C cast is, but
 * saturating at the bound where the cast would be undefined (NaN: 0). */
int64_t ebb_q_of_double(double v);

/* v rounded to two decimals, half away from zero, for output; a value
 * past 2^52 (no fraction left to round) or not finite is returned as is. */
double ebb_q_round2(double v);

#endif
