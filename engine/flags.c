/* Command-line values the subcommands share; see ebb/flags.h. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ebb.h"
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
