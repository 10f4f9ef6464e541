/* engine/cmd/testrun_int.h: what the units of `ebb test` share. Not public.
 *
 *   testrun.c            the command and the runner: the directory's
 *                        strategies and test files, a case run through the
 *                        engine (its policy made from the case), the output
 *   testrun_file.c       reading a test file: cases, defaults, expectations,
 *                        every error naming the file, line and field
 *   testrun_compare.c    the plan against what a case expects (a diff)
 *   testrun_invariants.c the core's invariants on every cycle: no protected
 *                        pod evicted, no limit exceeded
 *   testrun_report.c     the report: text for people, each line escaped
 *
 * Single-threaded; see ebb/testrun.h for the public side. */
#ifndef EBB_TESTRUN_INT_H
#define EBB_TESTRUN_INT_H

#include <stdbool.h>

#include "ebb/testrun.h"

/* ---- testrun_file.c: the settings a case can give, or the file give as defaults */

enum { S_SNAPSHOT, S_POLICY, S_PLUGIN, S_ARGS, S_EVICTOR, S_LIMITS, S_NODE_SELECTOR, S_NOW,
       S_CYCLES, S_MAX };

struct ebb__tr_setting_def {
    const char *key;
    int type;               /* the value's type */
    bool plugin_key;        /* describes the one-plugin policy (excludes `policy`) */
};
extern const struct ebb__tr_setting_def ebb__tr_settings[S_MAX];

/* ---- testrun_report.c ------------------------------------------------------ */

/* Append to the report; out of memory sets r->oom and loses the text. */
void ebb__tr_printf(struct ebb_test_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A text of the plan or of a test file as the report shows it: escaped for
 * a line (EBB_ESC_LINE), so that a reason, a note or a case's name, whatever
 * a script or a file made it, stays inside its line of the report. At most
 * TR_TEXT_MAX bytes; up to 8 are live at once (per thread): enough for the
 * arguments of one ebb__tr_printf. NULL stays NULL. */
#define TR_TEXT_MAX 2048
const char *ebb__tr_text(const char *s);

/* s, or "-" for NULL and "". */
const char *ebb__tr_dash(const char *s);

#endif
