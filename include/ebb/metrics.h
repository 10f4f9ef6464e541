/* ebb/metrics.h: a Prometheus registry in the text exposition format.
 *
 * Families of counters, gauges and histograms with label names; series are
 * found by their label values. ebb registers upstream's metric names and
 * labels (descheduler_pods_evicted_total{result,strategy,profile,namespace,
 * node}, descheduler_loop_duration_seconds, descheduler_strategy_duration_
 * seconds{strategy,profile}, their deprecated twins, descheduler_build_info)
 * and its own (ebb_*). Loop thread only.
 */
#ifndef EBB_METRICS_H
#define EBB_METRICS_H

#include "common.h"

enum { EBB_METRIC_COUNTER, EBB_METRIC_GAUGE, EBB_METRIC_HISTOGRAM };

struct ebb_metrics;
struct ebb_metric;   /* a family */

int ebb_metrics_create(struct ebb_metrics **out);
void ebb_metrics_destroy(struct ebb_metrics *m);

/* Register a family. `labels` is NULL-terminated (may be NULL for none);
 * `buckets` (histograms only) ascending, n of them. Returns NULL on error.
 * The family lives as long as the registry. */
struct ebb_metric *ebb_metrics_family(struct ebb_metrics *m, int type, const char *name,
                                      const char *help, const char *const *labels,
                                      const double *buckets, size_t nbuckets);
struct ebb_metric *ebb_metrics_find(struct ebb_metrics *m, const char *name);

/* values: one per label name, in order (NULL counts as ""). */
void ebb_metric_add(struct ebb_metric *f, const char *const *values, double delta);
void ebb_metric_set(struct ebb_metric *f, const char *const *values, double v);
void ebb_metric_observe(struct ebb_metric *f, const char *const *values, double v);
double ebb_metric_get(struct ebb_metric *f, const char *const *values);   /* counters, gauges */
/* Drop every series of a gauge family (before setting them afresh). */
void ebb_metric_reset(struct ebb_metric *f);

/* The whole registry as text/plain; version=0.0.4 (malloc'd). */
char *ebb_metrics_render(const struct ebb_metrics *m, size_t *len);

/* The descheduler's families and ebb's, registered once. */
int ebb_metrics_register_standard(struct ebb_metrics *m);
/* The same; `workload_labels` (ebb run --metrics-workload-labels) adds the
 * labels workload_kind and workload (the memory of evictions' key:
 * "Deployment", "web") to descheduler_pods_evicted_total and
 * descheduler_pods_evicted, after node. Off by default: a series per
 * workload is what a cluster's cardinality budget may not afford. */
int ebb_metrics_register_standard_with(struct ebb_metrics *m, bool workload_labels);

#endif
