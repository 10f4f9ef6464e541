/* A small Prometheus registry; see include/ebb/metrics.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/metrics.h"

#define MAX_LABELS 8

struct series {
    char **values;
    double value;                 /* counters and gauges */
    double sum;                   /* histograms */
    uint64_t count;
    uint64_t *bucket_counts;      /* cumulative at render time */
};

struct ebb_metric {
    int type;
    char *name, *help;
    size_t nlabels;
    char *labels[MAX_LABELS];
    size_t nbuckets;
    double *buckets;
    size_t nseries, cap;
    struct series *series;
    /* series by their label values: a counter labelled by namespace and
     * node (descheduler_pods_evicted_total) grows a series per pair, and a
     * cycle adds one per eviction */
    uint32_t *index;              /* series + 1, open addressing */
    size_t icap;                  /* a power of two */
};

struct ebb_metrics {
    size_t n, cap;
    struct ebb_metric **f;
};

int ebb_metrics_create(struct ebb_metrics **out)
{
    if (out == NULL)
        return EBB_EINVAL;
    return (*out = calloc(1, sizeof(**out))) ? 0 : EBB_ENOMEM;
}

static void series_free(struct ebb_metric *f, struct series *s)
{
    for (size_t i = 0; i < f->nlabels; i++)
        free(s->values[i]);
    free(s->values);
    free(s->bucket_counts);
}

void ebb_metrics_destroy(struct ebb_metrics *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n; i++) {
        struct ebb_metric *f = m->f[i];
        for (size_t s = 0; s < f->nseries; s++)
            series_free(f, &f->series[s]);
        for (size_t l = 0; l < f->nlabels; l++)
            free(f->labels[l]);
        free(f->series);
        free(f->index);
        free(f->buckets);
        free(f->name);
        free(f->help);
        free(f);
    }
    free(m->f);
    free(m);
}

struct ebb_metric *ebb_metrics_find(struct ebb_metrics *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->f[i]->name, name) == 0)
            return m->f[i];
    return NULL;
}

struct ebb_metric *ebb_metrics_family(struct ebb_metrics *m, int type, const char *name,
                                      const char *help, const char *const *labels,
                                      const double *buckets, size_t nbuckets)
{
    struct ebb_metric *f;

    if (ebb_metrics_find(m, name) != NULL)
        return NULL;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 32;
        struct ebb_metric **v = realloc(m->f, cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        m->f = v;
        m->cap = cap;
    }
    if ((f = calloc(1, sizeof(*f))) == NULL)
        return NULL;
    f->type = type;
    f->name = strdup(name);
    f->help = strdup(help ? help : "");
    for (size_t i = 0; labels && labels[i] && i < MAX_LABELS; i++)
        f->labels[f->nlabels++] = strdup(labels[i]);
    if (type == EBB_METRIC_HISTOGRAM && nbuckets > 0) {
        f->buckets = malloc(nbuckets * sizeof(*f->buckets));
        if (f->buckets)
            memcpy(f->buckets, buckets, nbuckets * sizeof(*f->buckets));
        f->nbuckets = nbuckets;
    }
    m->f[m->n++] = f;
    return f;
}

static uint32_t values_hash(const struct ebb_metric *f, const char *const *values)
{
    uint32_t h = 2166136261u;

    for (size_t l = 0; l < f->nlabels; l++) {
        for (const char *c = values && values[l] ? values[l] : ""; *c; c++)
            h = (h ^ (unsigned char)*c) * 16777619u;
        h = (h ^ 0xff) * 16777619u;   /* no label value holds 0xff alone */
    }
    return h;
}

static bool series_is(const struct ebb_metric *f, const struct series *x, const char *const *values)
{
    for (size_t l = 0; l < f->nlabels; l++)
        if (strcmp(x->values[l], values && values[l] ? values[l] : "") != 0)
            return false;
    return true;
}

/* Rebuild the index at twice the series' room (0 or EBB_ENOMEM). */
static int index_grow(struct ebb_metric *f)
{
    size_t cap = f->icap ? f->icap * 2 : 16;
    uint32_t *v = calloc(cap, sizeof(*v));

    if (v == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < f->nseries; i++) {
        size_t j = values_hash(f, (const char *const *)f->series[i].values) & (cap - 1);
        while (v[j] != 0)
            j = (j + 1) & (cap - 1);
        v[j] = (uint32_t)i + 1;
    }
    free(f->index);
    f->index = v;
    f->icap = cap;
    return 0;
}

static struct series *find_series(struct ebb_metric *f, const char *const *values, bool create)
{
    uint32_t h = values_hash(f, values);
    size_t j;

    for (j = f->icap ? h & (f->icap - 1) : 0; f->icap && f->index[j] != 0; j = (j + 1) & (f->icap - 1))
        if (series_is(f, &f->series[f->index[j] - 1], values))
            return &f->series[f->index[j] - 1];
    if (!create)
        return NULL;
    if ((f->nseries + 1) * 2 > f->icap) {
        if (index_grow(f) != 0)
            return NULL;
        for (j = h & (f->icap - 1); f->index[j] != 0; j = (j + 1) & (f->icap - 1))
            ;
    }
    if (f->nseries == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        struct series *v = realloc(f->series, cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        f->series = v;
        f->cap = cap;
    }
    struct series *s = &f->series[f->nseries];
    memset(s, 0, sizeof(*s));
    if ((s->values = calloc(f->nlabels + 1, sizeof(char *))) == NULL)
        return NULL;
    for (size_t l = 0; l < f->nlabels; l++)
        s->values[l] = strdup(values && values[l] ? values[l] : "");
    if (f->nbuckets && (s->bucket_counts = calloc(f->nbuckets, sizeof(uint64_t))) == NULL) {
        series_free(f, s);
        return NULL;
    }
    f->index[j] = (uint32_t)++f->nseries;
    return s;
}

void ebb_metric_add(struct ebb_metric *f, const char *const *values, double delta)
{
    struct series *s = f ? find_series(f, values, true) : NULL;
    if (s)
        s->value += delta;
}

void ebb_metric_set(struct ebb_metric *f, const char *const *values, double v)
{
    struct series *s = f ? find_series(f, values, true) : NULL;
    if (s)
        s->value = v;
}

void ebb_metric_observe(struct ebb_metric *f, const char *const *values, double v)
{
    struct series *s = f ? find_series(f, values, true) : NULL;
    if (s == NULL)
        return;
    s->sum += v;
    s->count++;
    for (size_t b = 0; b < f->nbuckets; b++)
        if (v <= f->buckets[b])
            s->bucket_counts[b]++;
}

double ebb_metric_get(struct ebb_metric *f, const char *const *values)
{
    struct series *s = f ? find_series(f, values, false) : NULL;
    return s ? s->value : 0;
}

void ebb_metric_reset(struct ebb_metric *f)
{
    for (size_t i = 0; f && i < f->nseries; i++)
        series_free(f, &f->series[i]);
    if (f) {
        f->nseries = 0;
        if (f->icap > 0)
            memset(f->index, 0, f->icap * sizeof(*f->index));
    }
}

struct buf {
    char *p;
    size_t len, cap;
    bool failed;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        if (b->failed)
            return;
        va_start(ap, fmt);
        n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = true;
            return;
        }
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 8192;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (np == NULL) {
            b->failed = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
}

/* Label values escape backslash, double quote and newline. */
static void put_value(struct buf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            put(b, "\\%c", *v);
        else if (*v == '\n')
            put(b, "\\n");
        else
            put(b, "%c", *v);
    }
}

static void put_labels(struct buf *b, const struct ebb_metric *f, const struct series *s,
                       const char *extra_name, const char *extra_value)
{
    bool any = f->nlabels > 0 || extra_name;
    if (!any)
        return;
    put(b, "{");
    for (size_t l = 0; l < f->nlabels; l++) {
        put(b, "%s%s=\"", l ? "," : "", f->labels[l]);
        put_value(b, s->values[l]);
        put(b, "\"");
    }
    if (extra_name)
        put(b, "%s%s=\"%s\"", f->nlabels ? "," : "", extra_name, extra_value);
    put(b, "}");
}

static void put_num(struct buf *b, double v)
{
    if (isinf(v))
        put(b, v > 0 ? "+Inf" : "-Inf");
    else if (v == (double)(int64_t)v && fabs(v) < 1e15)
        put(b, "%lld", (long long)v);
    else
        put(b, "%.17g", v);
}

char *ebb_metrics_render(const struct ebb_metrics *m, size_t *len)
{
    static const char *const types[] = { "counter", "gauge", "histogram" };
    struct buf b = { 0 };

    for (size_t i = 0; i < m->n; i++) {
        const struct ebb_metric *f = m->f[i];
        put(&b, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, types[f->type]);
        for (size_t s = 0; s < f->nseries; s++) {
            const struct series *x = &f->series[s];
            if (f->type != EBB_METRIC_HISTOGRAM) {
                put(&b, "%s", f->name);
                put_labels(&b, f, x, NULL, NULL);
                put(&b, " ");
                put_num(&b, x->value);
                put(&b, "\n");
                continue;
            }
            for (size_t k = 0; k < f->nbuckets; k++) {
                char le[32];
                snprintf(le, sizeof(le), "%g", f->buckets[k]);
                put(&b, "%s_bucket", f->name);
                put_labels(&b, f, x, "le", le);
                put(&b, " %llu\n", (unsigned long long)x->bucket_counts[k]);
            }
            put(&b, "%s_bucket", f->name);
            put_labels(&b, f, x, "le", "+Inf");
            put(&b, " %llu\n%s_sum", (unsigned long long)x->count, f->name);
            put_labels(&b, f, x, NULL, NULL);
            put(&b, " ");
            put_num(&b, x->sum);
            put(&b, "\n%s_count", f->name);
            put_labels(&b, f, x, NULL, NULL);
            put(&b, " %llu\n", (unsigned long long)x->count);
        }
    }
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    if (b.p == NULL && (b.p = strdup("")) == NULL)
        return NULL;
    if (len)
        *len = b.len;
    return b.p;
}

int ebb_metrics_register_standard(struct ebb_metrics *m)
{
    return ebb_metrics_register_standard_with(m, false);
}

int ebb_metrics_register_standard_with(struct ebb_metrics *m, bool workload_labels)
{
    static const char *const evicted_plain[] = { "result", "strategy", "profile", "namespace", "node", NULL };
    static const char *const evicted_wl[] = { "result", "strategy", "profile", "namespace", "node",
                                              "workload_kind", "workload", NULL };
    static const char *const refused[] = { "reason", "plugin", "profile", NULL };
    const char *const *evicted = workload_labels ? evicted_wl : evicted_plain;
    static const char *const strategy[] = { "strategy", "profile", NULL };
    static const char *const resource[] = { "resource", NULL };
    static const char *const kind[] = { "kind", NULL };
    static const char *const plugin[] = { "plugin", "profile", NULL };
    static const char *const result[] = { "result", NULL };
    static const char *const reason[] = { "reason", NULL };
    static const char *const build[] = { "AppVersion", "DeschedulerVersion", NULL };
    static const double loop_b[] = { 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500 };
    static const double strat_b[] = { 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100 };
    const char *evhelp = "[ALPHA] Number of total evicted pods, by the result, by the strategy, by "
                         "the namespace, by the node name. 'error' result means a pod could not be "
                         "evicted";
    struct ebb_metric *bi;

    if (!ebb_metrics_family(m, EBB_METRIC_COUNTER, "descheduler_pods_evicted_total", evhelp, evicted, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_evictions_refused_total",
                            "Evictions a plugin asked for and ebb refused, by the reason (filtered, "
                            "pdb, node-limit, ..., and LoopGuard's futile, cooldown, unavailable), "
                            "the plugin that asked and its profile", refused, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "descheduler_pods_evicted",
                            "[ALPHA] (Deprecated since 0.34.0) Number of total evicted pods, by the "
                            "result, by the strategy, by the namespace, by the node name. 'error' "
                            "result means a pod could not be evicted", evicted, NULL, 0) ||
        !(bi = ebb_metrics_family(m, EBB_METRIC_GAUGE, "descheduler_build_info",
                                  "[ALPHA] Build info about descheduler, including Go version, "
                                  "Descheduler version, Git SHA, Git branch", build, NULL, 0)) ||
        !ebb_metrics_family(m, EBB_METRIC_HISTOGRAM, "descheduler_loop_duration_seconds",
                            "[ALPHA] Time taken to complete a full descheduling cycle", NULL, loop_b,
                            EBB_ARRAY_LEN(loop_b)) ||
        !ebb_metrics_family(m, EBB_METRIC_HISTOGRAM, "descheduler_descheduler_loop_duration_seconds",
                            "[ALPHA] (Deprecated since 0.34.0) Time taken to complete a full "
                            "descheduling cycle", NULL, loop_b, EBB_ARRAY_LEN(loop_b)) ||
        !ebb_metrics_family(m, EBB_METRIC_HISTOGRAM, "descheduler_strategy_duration_seconds",
                            "[ALPHA] Time taken to complete Each strategy of the descheduling "
                            "operation", strategy, strat_b, EBB_ARRAY_LEN(strat_b)) ||
        !ebb_metrics_family(m, EBB_METRIC_HISTOGRAM, "descheduler_descheduler_strategy_duration_seconds",
                            "[ALPHA] (Deprecated since 0.34.0) Time taken to complete Each strategy "
                            "of the descheduling operation", strategy, strat_b, EBB_ARRAY_LEN(strat_b)) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_watch_synced",
                            "1 when the resource has been listed and its cache is in use", resource, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_watch_up",
                            "1 while the resource's watch is connected", resource, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_watch_events_total",
                            "Watch events applied to the cache", resource, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_watch_lists_total",
                            "Complete LISTs of the resource (the first one and every relist)", resource, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_watch_resumes_total",
                            "Watches restarted from the last resourceVersion", resource, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_watch_errors_total",
                            "Failed requests and answers that are not what the API promises", resource, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_cache_objects",
                            "Objects in the cache", kind, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_cache_spill_bytes",
                            "Bytes of the files that back pod.object for watched pods and nodes", NULL, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_cache_spill_live_bytes",
                            "Bytes of those files the cache still reads", NULL, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_cache_spill_reclaims_total",
                            "Spill files reclaimed: what the cache still read of them moved to the newest", NULL, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_script_errors_total",
                            "Plugin calls that failed (a script error, a limit, a native error)", plugin, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_cycles_total",
                            "Descheduling cycles, by result (done, skipped)", result, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_cycles_skipped_total",
                            "Cycles skipped, by reason", reason, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_evictions_inflight",
                            "Eviction requests sent and not answered yet", NULL, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_leader",
                            "1 while this instance holds the leader lease (or runs without election)", NULL, NULL, 0))
        return EBB_ENOMEM;
    {
        const char *v[] = { EBB_VERSION, "v" EBB_VERSION };
        ebb_metric_set(bi, v, 1);
    }
    return 0;
}
