/* Quantities as the API parses them ("1.5Gi", "100m", "1e3"), in whole
 * units and in thousandths, and the arithmetic ebb does on them.
 *
 * - Saturation: the value has the sign of the number the text writes, and
 *   is within rounding of it, or at the bound (EBB_QUANTITY_MAX/MIN) when
 *   that number is past int64; never wrapped. The number the text writes
 *   is worked out here independently, in long double.
 * - Round trips: a value that parses formats to text that parses back to
 *   the same value, but for -2^63 bytes: the API prints it "-8Ei" and reads
 *   "-8Ei" as -(2^63-1), binary quantities being capped at 2^63-1 units
 *   (fuzz/corpus/quantity/min-int64-round-trip).
 * - The short path: a text without a sign parses as it does behind a '+'
 *   (which only the full path reads).
 * - Arithmetic: sums, differences and products of the values parsed (and
 *   of the bounds) equal the exact 128-bit result clamped to the bound;
 *   a percentage is finite; a double turned back into a quantity is within
 *   the bound, and rounding for output never leaves a finite value. */
#include <math.h>

#include "fuzz.h"
#include "ebb/quantity.h"

__extension__ typedef __int128 i128;

/* The number `s` writes, times 1000 with `milli`: sign, digits and a
 * fraction, then a suffix. Returns false where this reference does not
 * apply: the API reads an exponent modulo 2^32 ("1e4294967296" is 1), and
 * the parser decides what else is malformed. */
static bool written(const char *s, size_t len, bool milli, long double *out)
{
    static const struct { const char *sfx; int base, exp; } sfx[] = {
        { "", 10, 0 }, { "n", 10, -9 }, { "u", 10, -6 }, { "m", 10, -3 }, { "k", 10, 3 },
        { "M", 10, 6 }, { "G", 10, 9 }, { "T", 10, 12 }, { "P", 10, 15 }, { "E", 10, 18 },
        { "Ki", 2, 10 }, { "Mi", 2, 20 }, { "Gi", 2, 30 }, { "Ti", 2, 40 }, { "Pi", 2, 50 },
        { "Ei", 2, 60 },
    };
    size_t i = 0;
    long double v = 0, scale = 1;
    bool neg = false, frac = false;

    if (i < len && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    for (; i < len && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '.' && !frac)); i++) {
        if (s[i] == '.') {
            frac = true;
            continue;
        }
        if (frac)
            v += (long double)(s[i] - '0') * (scale /= 10);
        else
            v = v * 10 + (s[i] - '0');
    }
    for (size_t k = 0; k < EBB_ARRAY_LEN(sfx); k++)
        if (strlen(sfx[k].sfx) == len - i && memcmp(sfx[k].sfx, s + i, len - i) == 0) {
            v *= powl(sfx[k].base, sfx[k].exp);
            goto done;
        }
    if (len - i >= 2 && len - i <= 5 && (s[i] == 'e' || s[i] == 'E')) {
        /* a short exponent: the API's 32-bit wrap cannot happen */
        char ebuf[8], *end;
        long e;
        memcpy(ebuf, s + i + 1, len - i - 1);
        ebuf[len - i - 1] = '\0';
        e = strtol(ebuf, &end, 10);
        if (*end != '\0' || ebuf[0] == ' ')
            return false;
        v *= powl(10, e);
        goto done;
    }
    return false;
done:
    *out = (neg ? -v : v) * (milli ? 1000 : 1);
    return true;
}

static void saturates(const uint8_t *data, size_t size, bool milli, int64_t v)
{
    long double w, lim = 9223372036854775808.0L;

    if (!written((const char *)data, size, milli, &w))
        return;
    if (w > 0 && v < 0)
        abort();   /* wrapped */
    if (w < 0 && v > 0)
        abort();
    if (w >= lim * 1.000001L && v != EBB_QUANTITY_MAX)
        abort();   /* past int64, and not at the bound */
    /* a negative binary quantity is capped at -(2^63 - 1) units first */
    if (w <= -lim * 1.000001L && v > EBB_QUANTITY_MIN + 1000)
        abort();
    /* within int64: within rounding (up to a whole unit, and the long
     * double's own precision) of the number written */
    if (fabsl(w) <= lim * 0.999999L && fabsl((long double)v - w) > 1001 + fabsl(w) * 1e-15L)
        abort();
}

static void round_trip(const uint8_t *data, size_t size, bool milli, int64_t *got)
{
    int64_t v, w;
    char buf[64];

    *got = 0;
    if (ebb_quantity_parse((const char *)data, size, milli, &v) != 0)
        return;
    *got = v;
    saturates(data, size, milli, v);
    if (!milli && v == INT64_MIN)
        return;
    ebb_quantity_format(v, milli, buf, sizeof(buf));
    if (ebb_quantity_parse(buf, strlen(buf), milli, &w) != 0 || w != v)
        abort();
}

static int64_t clamp(i128 r)
{
    return r > INT64_MAX ? INT64_MAX : r < INT64_MIN ? INT64_MIN : (int64_t)r;
}

static void arithmetic(int64_t a, int64_t b)
{
    double p;

    if (ebb_q_add(a, b) != clamp((i128)a + b) || ebb_q_sub(a, b) != clamp((i128)a - b) ||
        ebb_q_mul(a, b) != clamp((i128)a * b))
        abort();
    p = ebb_q_percent(a, b);
    if (!isfinite(p) || !isfinite(ebb_q_round2(p)))
        abort();
    /* back to a quantity: within the bound, and exact where a double is */
    (void)ebb_q_of_double(p * 1e10);
    (void)ebb_q_of_double((double)a * (double)b);
    if (ebb_q_of_double((double)(a >> 11)) != (a >> 11))
        abort();
}

/* The plain forms' short path (quantity.c, parse_plain) against the full
 * one: a text without a sign parses as it does behind a '+', which never
 * takes the short path. */
static void plain_same(const uint8_t *data, size_t size, bool milli)
{
    char buf[64];
    int64_t a = 0, b = 0;
    int rca, rcb;

    if (size == 0 || size >= sizeof(buf) - 1 || data[0] == '+' || data[0] == '-')
        return;
    buf[0] = '+';
    memcpy(buf + 1, data, size);
    rca = ebb_quantity_parse((const char *)data, size, milli, &a);
    rcb = ebb_quantity_parse(buf, size + 1, milli, &b);
    if (rca != rcb || (rca == 0 && a != b))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t edges[] = { 0, 1, -1, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1 };
    int64_t whole, milli;

    plain_same(data, size, false);
    plain_same(data, size, true);
    round_trip(data, size, false, &whole);
    round_trip(data, size, true, &milli);
    arithmetic(whole, milli);
    for (size_t i = 0; i < EBB_ARRAY_LEN(edges); i++) {
        arithmetic(whole, edges[i]);
        arithmetic(edges[i], milli);
    }
    return 0;
}
