/* Command-line values the subcommands share; see ebb/flags.h. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/flags.h"
#include "ebb/quantity.h"

bool ebb_flag_duration(const char *flag, const char *v, double *seconds)
{
    int64_t ns;

    if (ebb_duration_parse(v, &ns) != 0 || ns < 0) {
        fprintf(stderr, "ebb: error: %s: \"%s\" is not a duration (e.g. 5m, 90s, 1h30m)\n", flag, v);
        return false;
    }
    *seconds = (double)ns / 1e9;
    return true;
}

bool ebb_flag_script_timeout(const char *flag, const char *v, bool allow_off, uint64_t *ms)
{
    int64_t ns;

    if (ebb_duration_parse(v, &ns) != 0 || ns < 0 || (ns < 1000000 && !(allow_off && ns == 0))) {
        fprintf(stderr, "ebb: error: %s: \"%s\" is not a duration of 1ms or more%s\n", flag, v,
                allow_off ? " (or 0: no budget)" : "");
        return false;
    }
    *ms = ns == 0 ? EBB_BUDGET_OFF : (uint64_t)(ns / 1000000);
    return true;
}

bool ebb_flag_script_memory(const char *flag, const char *v, size_t *bytes)
{
    int64_t q;

    if (ebb_quantity_parse(v, strlen(v), false, &q) != 0 || q < ((int64_t)1 << 20) ||
        q > ((int64_t)16 << 30)) {
        fprintf(stderr, "ebb: error: %s: \"%s\" is not a quantity between 1Mi and 16Gi\n", flag, v);
        return false;
    }
    *bytes = (size_t)q;
    return true;
}

static const struct {
    const char *name;
    unsigned bit;
} features[] = {
    { "EvictionsInBackground", EBB_FEATURE_EVICTIONS_IN_BACKGROUND },
};

/* strconv.ParseBool */
static int parse_bool(const char *v, size_t n)
{
    static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
    static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };

    for (size_t i = 0; i < EBB_ARRAY_LEN(yes); i++) {
        if (strlen(yes[i]) == n && memcmp(yes[i], v, n) == 0)
            return 1;
        if (strlen(no[i]) == n && memcmp(no[i], v, n) == 0)
            return 0;
    }
    return -1;
}

bool ebb_flag_bool(const char *flag, const char *v, bool *out)
{
    int b = v == NULL ? 1 : parse_bool(v, strlen(v));

    if (b < 0) {
        fprintf(stderr, "ebb: error: %s: \"%s\" is not true or false\n", flag, v);
        return false;
    }
    *out = b == 1;
    return true;
}

bool ebb_flag_int(const char *flag, const char *v, long min, long max, long *out)
{
    char *end;
    long n;

    errno = 0;
    n = strtol(v, &end, 10);
    if (!(*v == '-' || isdigit((unsigned char)*v)) || *end != '\0' || errno != 0 || n < min ||
        n > max) {
        fprintf(stderr, "ebb: error: %s: \"%s\" is not a number from %ld to %ld\n", flag, v, min,
                max);
        return false;
    }
    *out = n;
    return true;
}

bool ebb_flag_feature_gates(const char *flag, const char *v, unsigned *gates)
{
    unsigned g = *gates;

    for (const char *p = v; *p != '\0';) {
        const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p)), *k = p, *val;
        size_t kn, vn, f;
        int b;

        if (end == p) {
            p = end + 1;
            continue;
        }
        if (eq == NULL) {
            fprintf(stderr, "ebb: error: %s: \"%.*s\": malformed pair, expect string=bool\n", flag,
                    (int)(end - p), p);
            return false;
        }
        kn = (size_t)(eq - p);
        val = eq + 1;
        vn = (size_t)(end - val);
        ebb_trim(&k, &kn);
        ebb_trim(&val, &vn);
        if ((b = parse_bool(val, vn)) < 0) {
            fprintf(stderr, "ebb: error: %s: invalid value of %.*s: %.*s (expected true or false)\n",
                    flag, (int)kn, k, (int)vn, val);
            return false;
        }
        for (f = 0; f < EBB_ARRAY_LEN(features); f++)
            if (strlen(features[f].name) == kn && memcmp(features[f].name, k, kn) == 0)
                break;
        if (f == EBB_ARRAY_LEN(features)) {
            fprintf(stderr, "ebb: error: %s: unrecognized feature gate: %.*s (known: ", flag, (int)kn, k);
            for (size_t i = 0; i < EBB_ARRAY_LEN(features); i++)
                fprintf(stderr, "%s%s", i ? ", " : "", features[i].name);
            fprintf(stderr, ")\n");
            return false;
        }
        g = b ? g | features[f].bit : g & ~features[f].bit;
        p = comma ? comma + 1 : end;
    }
    *gates = g;
    return true;
}

void ebb_flag_getopt_error(int c, char *const argv[], void (*usage)(FILE *f))
{
    if (c == ':') {
        fprintf(stderr, "ebb: error: %s needs a value\n", argv[optind - 1]);
        return;
    }
    fprintf(stderr, "ebb: error: unknown flag %s\n", argv[optind - 1]);
    if (usage != NULL)
        usage(stderr);
}

bool ebb_flag_no_arguments(int argc, char *const argv[])
{
    if (optind < argc) {
        fprintf(stderr, "ebb: error: unexpected argument \"%s\"\n", argv[optind]);
        return false;
    }
    return true;
}
