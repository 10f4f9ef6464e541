/* ebb/testrun.h: `ebb test [DIR]`, the strategy author's test runner.
 *
 * DIR holds strategies (<name>.lua) and their tests (<name>_test.yaml, see
 * docs/ebb-test.md), with snapshots under DIR/testdata/. DIR is loaded as
 * `ebb run --policy-dir DIR` loads it; every case builds a fresh engine
 * (simulate.c), binds a one-profile policy made from the case (or the
 * case's own policy file), runs its cycles on the snapshot and compares the
 * plan with what the case expects. Whatever a case expects, every cycle is
 * also checked for two invariants of the core: no eviction of a pod the
 * profile's filters protect (each eviction is replayed in order through the
 * profile's filters, ebb_ctx_filter), and no limit exceeded.
 *
 * Called from main.c (`ebb test`) and the unit tests; single-threaded.
 */
#ifndef EBB_TESTRUN_H
#define EBB_TESTRUN_H

#include <stdio.h>

#include "../ebb.h"

/* The clock of a case that sets no `now`: fixed, so tests are reproducible. */
#define EBB_TEST_NOW "2026-11-22T12:00:00Z"

/* A setting of a case and where it was written: in the case, or as a
 * default at the top of the file. Errors about it name that place. */
struct ebb_test_setting {
    const struct ebb_val *v;        /* borrowed from the file's tree; NULL: unset */
    int line;                       /* of the key */
    char field[48];                 /* "cases[2].args", or "args" for a default */
};

/* Strings are borrowed from the file's tree; NULL (0 for cycle) matches anything. */
struct ebb_test_eviction {
    const char *pod;                /* "namespace/name" */
    const char *node;               /* exact */
    const char *reason;             /* a substring */
    const char *plugin;             /* exact */
    int cycle;
    int line;
};

struct ebb_test_refusal {
    const char *pod;
    const char *why;                /* an ebb_why_name() */
    const char *plugin;
    int cycle;
    int line;
};

struct ebb_test_text {
    const char *text;               /* a substring of "<plugin>: <message>" */
    int line;
};

/* evictions and errors are exact (absent: none); refusals and notes are
 * exact when given and unchecked when absent. */
struct ebb_test_expect {
    bool unordered;
    size_t nevictions;
    struct ebb_test_eviction *evictions;
    bool has_refusals;
    size_t nrefusals;
    struct ebb_test_refusal *refusals;
    size_t nerrors;
    struct ebb_test_text *errors;
    bool has_notes;
    size_t nnotes;
    struct ebb_test_text *notes;
    const char *invalid;            /* the policy must be refused with this substring */
    int invalid_line;
};

struct ebb_test_case {
    const char *name;
    int line;
    char path[32];                  /* "cases[2]" */
    /* resolved: the case's own value, else the file's default */
    const char *snapshot;           /* as written (relative to the file's directory) */
    const char *policy;             /* NULL: a one-plugin policy made from the settings */
    const char *plugin;             /* NULL: the plugin of the file's <name>.lua */
    int64_t now;
    int cycles;
    struct ebb_test_setting s_snapshot, s_policy, s_plugin, s_args, s_evictor, s_limits,
        s_node_selector;
    struct ebb_test_expect expect;
};

struct ebb_test_file {
    char *path;                     /* as given */
    char *dir;                      /* what paths in it are relative to */
    struct ebb_val *root;
    size_t ncases;
    struct ebb_test_case *cases;
};

/* Parse a test file (YAML or JSON, libyaml). Unknown keys, wrong types, a
 * case without a name or with a duplicate name, a bad "ns/name", an unknown
 * refusal reason, an unparsable `now`: EBB_EPARSE/EBB_ESCHEMA with the file,
 * line and field in err. Whether the snapshots and policies it names exist
 * is the run's business, not the parser's. *out is owned by the caller. */
int ebb_test_file_parse(const char *buf, size_t len, const char *path, struct ebb_test_file **out,
                        struct ebb_error *err);
int ebb_test_file_load(const char *path, struct ebb_test_file **out, struct ebb_error *err);
void ebb_test_file_free(struct ebb_test_file *f);   /* NULL-safe */

/* What a case found wrong, as indented lines for people. */
struct ebb_test_report {
    char *text;                     /* NUL-terminated; NULL while empty */
    size_t len, cap;
    int mismatches;
    bool oom;                       /* some text was lost: out of memory */
};
void ebb_test_report_free(struct ebb_test_report *r);   /* frees text, back to empty */

/* Compare the plan with what `x` expects; append a readable diff (missing,
 * unexpected, order, attributes) to `r`. Returns the number of mismatches
 * added, or EBB_ENOMEM. */
int ebb_test_compare(const struct ebb_test_expect *x, const struct ebb_plan *plan,
                     struct ebb_test_report *r);

/* Invariant: the evictions the plan records for `cycle` keep within the
 * policy's maxNoOfPodsToEvictPerNode / PerNamespace / Total. Returns the
 * number of violations added to `r`, or EBB_ENOMEM. */
int ebb_test_check_limits(const struct ebb_plan *plan, const struct ebb_policy *policy, int cycle,
                          struct ebb_test_report *r);

/* Invariant: every eviction the engine's plan records for `cycle` passes
 * its profile's Filter and PreEvictionFilter. Call right after that cycle
 * ran (its evicted pods are still hidden in the cache): the evicted pods are
 * shown again and replayed in plan order, each checked through the profile
 * (ebb_ctx_filter) and hidden again, so every check sees the cluster as the
 * evictor saw it. The cache ends as it started. Returns the number of
 * violations added to `r`, or EBB_ENOMEM. */
int ebb_test_check_filters(struct ebb_engine *e, int cycle, struct ebb_test_report *r);

/* The runner. */
struct ebb_test_opts {
    const char *dir;                /* NULL: "." */
    const char *const *policy_dirs; /* --policy-dir, npolicy_dirs of them */
    int npolicy_dirs;
    const char *run;                /* only cases whose "<name>/<case>" contains this */
    int verbose;                    /* 1: a line per case; 2: and the engine's log */
    const char *home;               /* NULL: found as ebb_engine_create does */
    FILE *out;                      /* NULL: stdout */
};

struct ebb_test_totals {
    int passed, failed, bad;        /* bad: files or cases whose input is wrong */
};

/* Run every test file of the directory. Returns the exit status: 0 every
 * case passed, 1 some case failed, 2 some input is wrong (reported on
 * o->out naming the file, line and field). */
int ebb_test_run(const struct ebb_test_opts *o, struct ebb_test_totals *t);

/* `ebb test [DIR] [--policy-dir D]... [--run PATTERN] [-v]` */
int ebb_test_main(int argc, char **argv);

#endif
