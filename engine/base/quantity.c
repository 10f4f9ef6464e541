/* Kubernetes resource.Quantity text -> int64 (see ebb/quantity.h).
 *
 * The API keeps a quantity either as an int64 scaled by a power of ten (the
 * "fast" form, exact) or as an arbitrary-precision decimal rounded up to
 * nanounits (the "decimal" form). Value()/MilliValue() round the two forms
 * differently for negative numbers (the fast form rounds away from zero, the
 * decimal form towards +inf), so to give the same numbers the parser decides
 * which form the API would have used, then does the arithmetic exactly on
 * decimal digits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/quantity.h"

__extension__ typedef unsigned __int128 u128;

/* Digits of an int64 (2^63 has 19): the API's fast form takes at most 18
 * significant digits, a longer number goes to the decimal form. */
#define FAST_DIGITS 18
/* A magnitude of more than this many digits in nanounits (>= 1e21 units)
 * saturates every result we produce, and still fits in 128 bits. */
#define HUGE_DIGITS 30

enum { FMT_DECIMAL_SI, FMT_BINARY_SI, FMT_DECIMAL_EXP };

struct suffix {
    int base;         /* 10 or 2 */
    int32_t exp;      /* power of base */
    int fmt;
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* strconv.ParseInt(s, 10, 64): optional sign, at least one digit, nothing
 * else, within int64. */
static bool parse_i64(const char *s, size_t len, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0, lim;

    if (i < len && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i == len)
        return false;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < len; i++) {
        if (!is_digit(s[i]))
            return false;
        if (v > (lim - (uint64_t)(s[i] - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static bool interpret_suffix(const char *s, size_t len, struct suffix *out)
{
    static const struct {
        const char *text;
        int base;
        int exp;
        int fmt;
    } table[] = {
        { "", 10, 0, FMT_DECIMAL_SI },   { "n", 10, -9, FMT_DECIMAL_SI },
        { "u", 10, -6, FMT_DECIMAL_SI }, { "m", 10, -3, FMT_DECIMAL_SI },
        { "k", 10, 3, FMT_DECIMAL_SI },  { "M", 10, 6, FMT_DECIMAL_SI },
        { "G", 10, 9, FMT_DECIMAL_SI },  { "T", 10, 12, FMT_DECIMAL_SI },
        { "P", 10, 15, FMT_DECIMAL_SI }, { "E", 10, 18, FMT_DECIMAL_SI },
        { "Ki", 2, 10, FMT_BINARY_SI },  { "Mi", 2, 20, FMT_BINARY_SI },
        { "Gi", 2, 30, FMT_BINARY_SI },  { "Ti", 2, 40, FMT_BINARY_SI },
        { "Pi", 2, 50, FMT_BINARY_SI },  { "Ei", 2, 60, FMT_BINARY_SI },
    };
    int64_t e;

    for (size_t i = 0; i < EBB_ARRAY_LEN(table); i++) {
        if (strlen(table[i].text) == len && memcmp(table[i].text, s, len) == 0) {
            out->base = table[i].base;
            out->exp = table[i].exp;
            out->fmt = table[i].fmt;
            return true;
        }
    }
    if (len > 1 && (s[0] == 'e' || s[0] == 'E') && parse_i64(s + 1, len - 1, &e)) {
        out->base = 10;
        /* The API narrows the exponent to 32 bits, wrapping. */
        out->exp = (int32_t)(uint32_t)(uint64_t)e;
        out->fmt = FMT_DECIMAL_EXP;
        return true;
    }
    return false;
}

static bool is_suffix_char(char c)
{
    return c != '\0' && strchr("eEinumkKMGTP", c) != NULL;
}

/* ceil / floor of x / 10^p for p in 0..9 */
static u128 div_pow10(u128 x, int p, bool up)
{
    u128 d = 1;

    while (p-- > 0)
        d *= 10;
    return x / d + (up && x % d != 0 ? 1 : 0);
}

static int64_t apply_sign(u128 mag, bool neg)
{
    if (!neg)
        return mag > (u128)INT64_MAX ? INT64_MAX : (int64_t)mag;
    if (mag >= (u128)INT64_MAX + 1)
        return INT64_MIN;
    return -(int64_t)mag;
}

/* The forms nearly every object holds ("250m", "64Mi", "2", "1G"): a
 * positive integer of at most 15 digits without a leading zero, alone or
 * with one of the suffixes below ("m" only in milli-units, where it is
 * exact). Its value is the product, as the full path below computes it
 * (test_quantity's test_plain_forms checks the two agree over every such
 * form); anything else, or a product past int64, goes the full path. A
 * 150k-pod load parses a million quantities. */
static bool parse_plain(const char *s, size_t len, bool milli, int64_t *out)
{
    int64_t v = 0, mult;
    size_t i = 0;

    if (s[0] < '1' || s[0] > '9')
        return false;
    while (i < len && i < 15 && is_digit(s[i]))
        v = v * 10 + (s[i++] - '0');
    if (i == len) {
        mult = 1;
    } else if (len - i == 1) {
        switch (s[i]) {
        case 'm': mult = 1; break;
        case 'k': mult = 1000; break;
        case 'M': mult = 1000000; break;
        case 'G': mult = 1000000000; break;
        default: return false;
        }
        if (s[i] == 'm') {
            if (!milli)
                return false;
            milli = false;   /* already milli-units */
        }
    } else if (len - i == 2 && s[i + 1] == 'i') {
        switch (s[i]) {
        case 'K': mult = (int64_t)1 << 10; break;
        case 'M': mult = (int64_t)1 << 20; break;
        case 'G': mult = (int64_t)1 << 30; break;
        case 'T': mult = (int64_t)1 << 40; break;
        default: return false;
        }
    } else {
        return false;
    }
    if (milli && __builtin_mul_overflow(mult, (int64_t)1000, &mult))
        return false;
    return !__builtin_mul_overflow(v, mult, out);
}

int ebb_quantity_parse(const char *s, size_t len, bool milli, int64_t *out)
{
    size_t pos = 0, num_b, num_e, den_b = 0, den_e = 0, suf_b, nd, cap, n = 0;
    size_t num_len, den_len;
    bool neg = false, any_digit = false, fast, huge = false, frac = false;
    struct suffix suf;
    uint8_t stackbuf[128], *d = stackbuf;
    int64_t e10, t;
    u128 q = 0, mag;
    int k = milli ? 3 : 0;

    if (s == NULL || out == NULL)
        return EBB_EINVAL;
    if (len == 0)
        return EBB_EPARSE;
    if (parse_plain(s, len, milli, out))
        return 0;

    /* <sign>? 0* <digits> ( . <digits>? )? <suffix letters> <sign>? <digits> */
    if (s[0] == '-' || s[0] == '+')
        neg = s[pos++] == '-';
    while (pos < len && s[pos] == '0') {
        pos++;
        any_digit = true;
    }
    if (pos == len) {
        /* Only a sign and zeros ("", "-", "+", "-000"): zero. */
        *out = 0;
        return 0;
    }
    num_b = pos;
    while (pos < len && is_digit(s[pos]))
        pos++;
    num_e = pos;
    if (pos < len && s[pos] == '.') {
        den_b = ++pos;
        while (pos < len && is_digit(s[pos]))
            pos++;
        den_e = pos;
    }
    any_digit = any_digit || num_e > num_b || den_e > den_b;
    suf_b = pos;
    while (pos < len && is_suffix_char(s[pos]))
        pos++;
    if (pos < len && (s[pos] == '-' || s[pos] == '+'))
        pos++;
    while (pos < len && is_digit(s[pos]))
        pos++;
    if (pos != len)
        return EBB_EPARSE;
    if (!interpret_suffix(s + suf_b, len - suf_b, &suf))
        return EBB_EPARSE;

    /* Which form the API keeps (lengths count an empty integer part as
     * "0", as it does). */
    num_len = num_e > num_b ? num_e - num_b : 1;
    den_len = den_e - den_b;
    if (suf.base == 10)
        fast = num_len + den_len <= FAST_DIGITS && (int64_t)suf.exp - (int64_t)den_len >= -9;
    else
        fast = den_len == 0 && (int64_t)num_len + 3 * (suf.exp / 10) <= 14;
    /* The decimal form re-reads the number and needs at least one digit:
     * ".Pi" is refused where ".Ki" is zero. */
    if (!fast && !any_digit)
        return EBB_EPARSE;

    /* X = integer of the digits, little-endian, times 2^exp for binary
     * suffixes; the quantity is X * 10^e10. */
    nd = (num_e - num_b) + den_len;
    cap = nd + 20;   /* 2^60 adds at most 19 digits */
    if (cap > sizeof(stackbuf) && (d = malloc(cap)) == NULL)
        return EBB_ENOMEM;
    for (size_t i = den_e; i > den_b; i--)
        d[n++] = (uint8_t)(s[i - 1] - '0');
    for (size_t i = num_e; i > num_b; i--)
        d[n++] = (uint8_t)(s[i - 1] - '0');
    while (n > 0 && d[n - 1] == 0)
        n--;
    if (n == 0) {
        *out = 0;
        goto done;
    }
    e10 = -(int64_t)den_len;
    if (suf.base == 10) {
        e10 += suf.exp;
    } else {
        for (int32_t i = 0; i < suf.exp; i++) {
            unsigned carry = 0;
            for (size_t j = 0; j < n; j++) {
                unsigned v = d[j] * 2u + carry;
                d[j] = (uint8_t)(v % 10);
                carry = v / 10;
            }
            if (carry)
                d[n++] = (uint8_t)carry;
        }
    }

    /* q = floor(X * 10^(e10 + 9)) in nanounits, frac = something was cut. */
    t = e10 + 9;
    if (t >= 0) {
        if ((int64_t)n + t > HUGE_DIGITS) {
            huge = true;
        } else {
            for (size_t j = n; j > 0; j--)
                q = q * 10 + d[j - 1];
            while (t-- > 0)
                q *= 10;
        }
    } else {
        int64_t drop = -t;
        if (drop >= (int64_t)n) {
            frac = true;
        } else if ((int64_t)n - drop > HUGE_DIGITS) {
            huge = true;
        } else {
            for (size_t j = n; j > (size_t)drop; j--)
                q = q * 10 + d[j - 1];
            for (size_t j = 0; j < (size_t)drop && !frac; j++)
                frac = d[j] != 0;
        }
    }

    if (fast) {
        /* Exact and at most nano: round the magnitude up at the target
         * scale, i.e. away from zero. */
        if (huge) {
            *out = neg ? INT64_MIN : INT64_MAX;
            goto done;
        }
        *out = apply_sign(div_pow10(q, 9 - k, true), neg);
        goto done;
    }
    /* Decimal form: the magnitude is rounded up to a nanounit, binary
     * quantities are capped at 2^63-1 units, then the signed value is
     * rounded towards +inf. */
    if (!huge && frac)
        q++;
    if (suf.base == 2 && (huge || q > (u128)INT64_MAX * 1000000000u)) {
        huge = false;
        q = (u128)INT64_MAX * 1000000000u;
    }
    if (huge) {
        *out = neg ? INT64_MIN : INT64_MAX;
        goto done;
    }
    mag = div_pow10(q, 9 - k, !neg);
    *out = apply_sign(mag, neg);
done:
    if (d != stackbuf)
        free(d);
    return 0;
}

int ebb_quantity_parse_resource(const char *resource, const char *s, int64_t *out)
{
    if (resource == NULL || s == NULL || out == NULL)
        return EBB_EINVAL;
    return ebb_quantity_parse(s, strlen(s), strcmp(resource, "cpu") == 0, out);
}

void ebb_quantity_format(int64_t v, bool milli, char *buf, size_t len)
{
    static const char *const bin[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
    int i = 0;

    if (buf == NULL || len == 0)
        return;
    if (milli) {
        if (v % 1000 == 0)
            snprintf(buf, len, "%lld", (long long)(v / 1000));
        else
            snprintf(buf, len, "%lldm", (long long)v);
        return;
    }
    /* As the API prints a binary quantity: the largest power of 1024 that
     * divides it exactly, else the plain number. */
    while (v != 0 && v % 1024 == 0 && i < 6) {
        v /= 1024;
        i++;
    }
    snprintf(buf, len, "%lld%s", (long long)v, bin[i]);
}

int64_t ebb_q_of_double(double v)
{
    /* 2^63 is exact as a double; INT64_MAX is not (it rounds up to 2^63) */
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0)
        return EBB_QUANTITY_MAX;
    if (v <= -9223372036854775808.0)
        return EBB_QUANTITY_MIN;
    return (int64_t)v;
}

double ebb_q_round2(double v)
{
    if (!isfinite(v) || fabs(v) >= 4503599627370496.0)
        return v;
    return round(v * 100.0) / 100.0;
}
