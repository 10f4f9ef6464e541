/* ebb/report.h: the HTML report of a what-if run (`ebb simulate
 * --reschedule --report FILE.html`).
 *
 * One self-contained file: inline CSS and SVG, no script, font or request
 * to anything else. Everything in it is aggregated, so that it stays small
 * and readable at 5,000 nodes and 150,000 pods: node utilization before
 * and after (sorted bars for a few dozen nodes, heatmaps past that), the
 * spread of utilization across nodes cycle by cycle (box plots),
 * evictions per cycle and plugin, the moves (busiest from -> to pairs, the
 * nodes that gained and lost the most pods), pending pods grouped by the
 * scheduler's message, and loops. Each chart is an <svg class="chart">
 * with an id (the browser spec checks them).
 */
#ifndef EBB_REPORT_H
#define EBB_REPORT_H

#include "plan.h"
#include "whatif.h"

struct ebb_report_opts {
    const char *snapshot;            /* names shown in the title; may be NULL */
    const char *policy;
    const char *scheduler_config;    /* NULL: kube-scheduler's defaults */
    const char *scheduler_version;   /* "latest" or "v1.25" */
    int64_t now;                     /* EBB_TIME_NONE: not shown */
    bool seeded;
    uint64_t seed;
};

/* Write the report to `path` (through path.tmp and a rename: a failed
 * write leaves no half file). EBB_EIO with err naming the file. */
int ebb_report_write(const struct ebb_whatif *w, const struct ebb_plan *plan,
                     const struct ebb_report_opts *o, const char *path, struct ebb_error *err);

/* The y-axis labels of the evictions chart for a largest stack of `max`
 * evictions: writes 0, step, 2 step, ... top into ticks and returns how
 * many (2 to EBB_REPORT_TICKS_MAX). Bars are drawn against top. Used by
 * ebb_report_write; declared here for its unit test. */
#define EBB_REPORT_TICKS_MAX 6
size_t ebb__report_ticks(size_t max, size_t ticks[EBB_REPORT_TICKS_MAX]);

#endif
