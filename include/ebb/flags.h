/* ebb/flags.h: command-line values the subcommands share. Each parser
 * prints "ebb: error: FLAG: ..." to stderr and returns false when the value
 * is wrong, so every command words its flag errors the same way. */
#ifndef EBB_FLAGS_H
#define EBB_FLAGS_H

#include <stdio.h>

#include "common.h"

/* Feature gates, as upstream's --feature-gates names them (all off by
 * default). EvictionsInBackground: see ebb/background.h. */
#define EBB_FEATURE_EVICTIONS_IN_BACKGROUND (1u << 0)
/* A time budget of none (--script-timeout 0 where allowed). */
#define EBB_BUDGET_OFF UINT64_MAX

/* A Go duration ("90s", "1h30m") of at least 0, in seconds. */
bool ebb_flag_duration(const char *flag, const char *v, double *seconds);
/* --script-timeout: a duration of 1ms or more, in ms; with allow_off, "0"
 * is EBB_BUDGET_OFF (no budget: benchmarks of what the budget costs). */
bool ebb_flag_script_timeout(const char *flag, const char *v, bool allow_off, uint64_t *ms);
/* --script-memory: a quantity from 1Mi to 16Gi, in bytes. */
bool ebb_flag_script_memory(const char *flag, const char *v, size_t *bytes);

/* A boolean flag as pflag reads one: `--flag` alone (v is NULL) is true,
 * `--flag=V` takes V as strconv.ParseBool does (1, t, true, TRUE, 0, f,
 * false...). */
bool ebb_flag_bool(const char *flag, const char *v, bool *out);

/* A decimal integer from min to max (no sign but '-', no spaces, no
 * suffix, no overflow): "FLAG: \"V\" is not a number from MIN to MAX". */
bool ebb_flag_int(const char *flag, const char *v, long min, long max, long *out);

/* --feature-gates: "Name=bool,Name=bool" (repeatable; a later value wins)
 * into *gates (EBB_FEATURE_* bits, ebb.h): set for true, cleared for
 * false. bool as Go's strconv.ParseBool reads it (1, t, true, TRUE, 0, f,
 * false...). Unknown names are refused with the known ones listed. */
bool ebb_flag_feature_gates(const char *flag, const char *v, unsigned *gates);

/* What getopt_long (optstring starting with ':') returned as a mistake:
 * ':' prints "FLAG needs a value", anything else "unknown flag FLAG" and
 * then usage(stderr) when usage is not NULL. The caller exits with 2. */
void ebb_flag_getopt_error(int c, char *const argv[], void (*usage)(FILE *f));

/* No arguments are left past the flags (getopt's optind); else prints
 * "unexpected argument" and returns false. */
bool ebb_flag_no_arguments(int argc, char *const argv[]);

#endif
