/* ebb/quantity.h: Kubernetes resource.Quantity parsing, exact to
 * k8s.io/apimachinery/pkg/api/resource.
 *
 * Accepted: a signed decimal number (digits, optional '.', optional
 * fraction) followed by an optional suffix: binary SI (Ki Mi Gi Ti Pi Ei),
 * decimal SI (n u m "" k M G T P E) or a decimal exponent (e3, E-2).
 * Called by decode.c and by policy/arg decoding; pure functions.
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

/* Sums and differences of quantities saturate at INT64_MAX/INT64_MIN, as the
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

#endif
