/* Koordinator LowNodeLoad's math; see include/ebb/loadaware.h.
 *
 * Sources: koordinator-sh/koordinator pkg/descheduler/framework/plugins/
 * loadaware/utilization_util.go (usage, thresholds, classification, target
 * capacity, podFitsAnyNodeWithThreshold, evictPods' bookkeeping),
 * pkg/descheduler/utils/sorter (scorer.go, pod.go, helper.go) and
 * apis/extension (priority and QoS classes, eviction cost).
 *
 * Where Koordinator decides by Go map or sort.Slice order, this decides by
 * name: nodes are kept sorted by name, resources by name, and every sort
 * ends on the name.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/fit.h"
#include "ebb/loadaware.h"
#include "ebb/quantity.h"

/* ---- Koordinator's view of a pod ----------------------------------------- */

int ebb_koord_qos_class(const struct ebb_pod *p)
{
    static const struct {
        const char *name;
        int q;
    } names[] = {
        { "LSE", EBB_KQOS_LSE }, { "LSR", EBB_KQOS_LSR }, { "LS", EBB_KQOS_LS },
        { "BE", EBB_KQOS_BE },   { "SYSTEM", EBB_KQOS_SYSTEM },
    };
    ebb_str v = ebb_labels_getc(&p->labels, "koordinator.sh/qosClass");

    if (v != NULL)
        for (size_t i = 0; i < EBB_ARRAY_LEN(names); i++)
            if (strcmp(v, names[i].name) == 0)
                return names[i].q;
    /* no (valid) label: GetPodQoSClassWithKubeQoS */
    switch (p->qos) {
    case EBB_QOS_GUARANTEED: return EBB_KQOS_LSR;
    case EBB_QOS_BURSTABLE: return EBB_KQOS_LS;
    default: return EBB_KQOS_BE;
    }
}

int ebb_koord_priority_class(const struct ebb_pod *p)
{
    static const struct {
        const char *name;
        int c;
    } names[] = {
        { "koord-prod", EBB_KPRIO_PROD }, { "koord-mid", EBB_KPRIO_MID },
        { "koord-batch", EBB_KPRIO_BATCH }, { "koord-free", EBB_KPRIO_FREE },
    };
    ebb_str v = ebb_labels_getc(&p->labels, "koordinator.sh/priority-class");
    int c = EBB_KPRIO_NONE;

    if (v != NULL) {
        /* the label wins over spec.priority, even with an unknown value */
        for (size_t i = 0; i < EBB_ARRAY_LEN(names); i++)
            if (strcmp(v, names[i].name) == 0)
                c = names[i].c;
    } else if (p->flags & EBB_POD_HAS_PRIORITY) {
        int32_t v32 = p->priority;
        if (v32 >= 9000 && v32 <= 9999)
            c = EBB_KPRIO_PROD;
        else if (v32 >= 7000 && v32 <= 7999)
            c = EBB_KPRIO_MID;
        else if (v32 >= 5000 && v32 <= 5999)
            c = EBB_KPRIO_BATCH;
        else if (v32 >= 3000 && v32 <= 3999)
            c = EBB_KPRIO_FREE;
    }
    if (c != EBB_KPRIO_NONE)
        return c;
    /* GetPodPriorityClassWithQoS */
    switch (ebb_koord_qos_class(p)) {
    case EBB_KQOS_SYSTEM:
    case EBB_KQOS_LSE:
    case EBB_KQOS_LSR:
    case EBB_KQOS_LS: return EBB_KPRIO_PROD;
    case EBB_KQOS_BE: return EBB_KPRIO_BATCH;
    default: return EBB_KPRIO_NONE;
    }
}

const char *ebb_koord_priority_name(int c)
{
    static const char *const names[] = { "None", "Free", "Batch", "Mid", "Prod", "None" };
    return c >= 0 && c <= EBB_KPRIO_NONE ? names[c] : "None";
}

const char *ebb_koord_qos_name(int q)
{
    static const char *const names[] = { "None", "BE", "LS", "LSR", "LSE", "SYSTEM", "None" };
    return q >= 0 && q <= EBB_KQOS_NONE ? names[q] : "None";
}

int ebb_koord_qos_rank(int q)
{
    return q == EBB_KQOS_SYSTEM ? EBB_KQOS_LSE : q == EBB_KQOS_NONE ? EBB_KQOS_LSE + 1 : q;
}

/* validFirstDigit + strconv.ParseInt(s, 10, 32); 0 on any error. */
static int32_t annotation_int32(const struct ebb_pod *p, const char *key)
{
    ebb_str v = ebb_labels_getc(&p->annotations, key);
    const char *s = v;
    long long acc = 0;
    bool neg = false;

    if (s == NULL || s[0] == '\0')
        return 0;
    if (!(s[0] == '-' || strcmp(s, "0") == 0 || (s[0] >= '1' && s[0] <= '9')))
        return 0;
    if (*s == '-') {
        neg = true;
        s++;
    }
    if (*s == '\0')
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        acc = acc * 10 + (*s - '0');
        if (acc > 2147483648LL)
            return 0;
    }
    if (neg)
        acc = -acc;
    if (acc > INT32_MAX || acc < INT32_MIN)
        return 0;
    return (int32_t)acc;
}

int32_t ebb_pod_deletion_cost(const struct ebb_pod *p)
{
    return annotation_int32(p, "controller.kubernetes.io/pod-deletion-cost");
}

int32_t ebb_koord_eviction_cost(const struct ebb_pod *p)
{
    return annotation_int32(p, "scheduling.koordinator.sh/eviction-cost");
}

/* ---- classes ------------------------------------------------------------- */

static const char *const class_names[EBB_LA_NCLASSES] = {
    "skipped", "normal", "low", "high", "prod_low", "prod_high", "both_low",
};

const char *ebb_la_class_name(int cls)
{
    return cls >= 0 && cls < EBB_LA_NCLASSES ? class_names[cls] : "?";
}

int ebb_la_class_parse(const char *name)
{
    for (int i = 0; i < EBB_LA_NCLASSES; i++)
        if (strcmp(name, class_names[i]) == 0)
            return i;
    return -1;
}

/* ---- measuring ------------------------------------------------------------ */

struct ranked_pod {
    struct ebb_la_pod e;
    uint32_t rank;
};

static int cmp_ranked(const void *a, const void *b)
{
    const struct ranked_pod *x = a, *y = b;
    if (x->e.ns != y->e.ns)
        return (uintptr_t)x->e.ns < (uintptr_t)y->e.ns ? -1 : 1;
    if (x->e.name != y->e.name)
        return (uintptr_t)x->e.name < (uintptr_t)y->e.name ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Sort ln->pods for lookup by (namespace, name) pointers. Of two entries
 * for one pod the later one in the list wins, as in Koordinator's
 * podMetrics map. */
static int index_pods(struct ebb_la_node *ln)
{
    uint32_t n = ln->npods, k = 0;
    struct ranked_pod *t;

    if (n < 2)
        return 0;
    if ((t = malloc(n * sizeof(*t))) == NULL)
        return EBB_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        t[i].e = ln->pods[i];
        t[i].rank = i;
    }
    qsort(t, n, sizeof(*t), cmp_ranked);
    for (uint32_t i = 0; i < n; i++) {
        if (i + 1 < n && t[i + 1].e.ns == t[i].e.ns && t[i + 1].e.name == t[i].e.name)
            continue;   /* a later entry for the same pod follows */
        ln->pods[k++] = t[i].e;
    }
    ln->npods = k;
    free(t);
    return 0;
}

const struct ebb_res *ebb_la_pod_usage(const struct ebb_la_node *n, const struct ebb_pod *p)
{
    size_t lo = 0, hi;

    if (n == NULL || p == NULL || n->pods == NULL)
        return NULL;
    hi = n->npods;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const struct ebb_la_pod *e = &n->pods[mid];
        int c = e->ns != p->ns ? ((uintptr_t)e->ns < (uintptr_t)p->ns ? -1 : 1)
                : e->name != p->name ? ((uintptr_t)e->name < (uintptr_t)p->name ? -1 : 1) : 0;
        if (c == 0)
            return e->usage;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Raw allocatable: the annotation's quantities over status.allocatable;
 * the whole annotation is ignored when it does not parse. */
static void raw_allocatable(const struct ebb_la_set *s, const struct ebb_node *node, int64_t *alloc)
{
    ebb_str text = ebb_labels_getc(&node->annotations, EBB_LA_RAW_ALLOCATABLE);
    int64_t raw[EBB_LA_MAXRES];
    bool has[EBB_LA_MAXRES] = { false };
    cJSON *j, *it;

    for (int i = 0; i < s->nres; i++)
        alloc[i] = ebb_res_get(&node->allocatable, s->res[i]);
    if (text == NULL || (j = cJSON_Parse(text)) == NULL)
        return;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return;
    }
    cJSON_ArrayForEach(it, j)
    {
        int id = ebb_resource_find(it->string), i = -1;
        int64_t v;
        for (int k = 0; k < s->nres; k++)
            if (s->res[k] == id)
                i = k;
        if (cJSON_IsString(it)) {
            if (ebb_quantity_parse_resource(it->string, it->valuestring, &v) != 0)
                goto bad;
        } else if (cJSON_IsNumber(it)) {
            char buf[64];
            snprintf(buf, sizeof(buf), "%.17g", it->valuedouble);
            if (ebb_quantity_parse_resource(it->string, buf, &v) != 0)
                goto bad;
        } else {
            goto bad;
        }
        if (i >= 0) {
            raw[i] = v;
            has[i] = true;
        }
    }
    cJSON_Delete(j);
    for (int i = 0; i < s->nres; i++)
        if (has[i])
            alloc[i] = raw[i];
    return;
bad:
    cJSON_Delete(j);
}

static void count_pods(struct ebb_la_set *s, struct ebb_la_node *ln)
{
    const struct ebb_podvec *pv = ebb_cache_pods_on_node(s->cache, ln->node->name);
    int64_t all = 0, prod = 0;

    for (uint32_t i = 0; i < pv->n; i++) {
        const struct ebb_pod *p = pv->v[i];
        if (!ebb_pod_occupies(p))
            continue;
        all++;
        if (ebb_koord_priority_class(p) == EBB_KPRIO_PROD)
            prod++;
    }
    ln->usage[s->pods_index] = all;
    ln->prod[s->pods_index] = prod;
}

/* A pod of the node (active, not evicted) of priority class Prod. */
static bool is_prod_pod_of(struct ebb_cache *c, ebb_str ns, ebb_str name, const struct ebb_node *node)
{
    const struct ebb_pod *p = ebb_cache_pod(c, ns, name);
    return p != NULL && p->node == node->name && ebb_pod_occupies(p) &&
           ebb_koord_priority_class(p) == EBB_KPRIO_PROD;
}

static int measure_koord(struct ebb_la_set *s, struct ebb_la_node *ln,
                         const struct ebb_koord_node_metric *km)
{
    if (km->npods > 0) {
        if ((ln->pods = calloc(km->npods, sizeof(*ln->pods))) == NULL)
            return EBB_ENOMEM;
        for (uint32_t i = 0; i < km->npods; i++) {
            ln->pods[i].ns = km->pods[i].ns;
            ln->pods[i].name = km->pods[i].name;
            ln->pods[i].usage = &km->pods[i].usage;
        }
        ln->npods = km->npods;
        if (index_pods(ln) != 0)
            return EBB_ENOMEM;
    }
    for (int i = 0; i < s->nres; i++) {
        int id = s->res[i];
        int64_t u = ebb_res_get(&km->system_usage, id), pu = 0;
        for (uint32_t k = 0; k < km->npods; k++) {
            int64_t v = ebb_res_get(&km->pods[k].usage, id);
            u = ebb_q_add(u, v);   /* quantities saturate (ebb/quantity.h) */
            if (v != 0 && is_prod_pod_of(s->cache, km->pods[k].ns, km->pods[k].name, ln->node))
                pu = ebb_q_add(pu, v);
        }
        ln->usage[i] = u;
        ln->prod[i] = pu;
    }
    return 0;
}

static int measure_metrics(struct ebb_la_set *s, struct ebb_la_node *ln,
                           const struct ebb_node_metrics *nm)
{
    const struct ebb_podvec *pv = ebb_cache_pods_on_node(s->cache, ln->node->name);
    uint32_t k = 0;

    for (int i = 0; i < s->nres; i++) {
        ln->usage[i] = ebb_res_get(&nm->usage, s->res[i]);
        ln->prod[i] = 0;
    }
    if (pv->n > 0 && (ln->pods = calloc(pv->n, sizeof(*ln->pods))) == NULL)
        return EBB_ENOMEM;
    /* the node's pods are already sorted by namespace/name: one entry each */
    for (uint32_t j = 0; j < pv->n; j++) {
        const struct ebb_pod *p = pv->v[j];
        const struct ebb_pod_metrics *pm;
        if (!ebb_pod_occupies(p) || (pm = ebb_cache_pod_metrics(s->cache, p->ns, p->name)) == NULL)
            continue;
        ln->pods[k].ns = p->ns;
        ln->pods[k].name = p->name;
        ln->pods[k].usage = &pm->usage;
        k++;
        if (ebb_koord_priority_class(p) == EBB_KPRIO_PROD)
            for (int i = 0; i < s->nres; i++)
                ln->prod[i] = ebb_q_add(ln->prod[i], ebb_res_get(&pm->usage, s->res[i]));
    }
    ln->npods = k;
    return index_pods(ln);
}

static int measure(struct ebb_la_set *s, struct ebb_la_node *ln, const struct ebb_la_opts *o)
{
    const struct ebb_koord_node_metric *km = ebb_cache_koord_metric(s->cache, ln->node->name);
    const struct ebb_node_metrics *nm = NULL;
    int rc;

    ln->updated = EBB_TIME_NONE;
    ln->skip = EBB_LA_NO_METRIC;
    if (km != NULL) {
        ln->source = EBB_LA_SRC_KOORD;
        ln->updated = km->update_time;
        /* Status.NodeMetric == nil: skipped whatever podsMetric says; an
         * empty one is used (zero usage but its podsMetric) */
        if (!km->has_node_metric) {
            ln->skip = EBB_LA_EMPTY_METRIC;
            return 0;
        }
    } else if ((nm = ebb_cache_node_metrics(s->cache, ln->node->name)) != NULL) {
        ln->source = EBB_LA_SRC_METRICS;
        ln->updated = nm->timestamp;
    } else {
        return 0;
    }
    /* isNodeMetricExpired: no time is expired whatever the expiration */
    if (ln->updated == EBB_TIME_NONE) {
        ln->skip = EBB_LA_NO_TIME;
        return 0;
    }
    if (o->expiration > 0 && o->now - ln->updated >= o->expiration) {
        ln->skip = EBB_LA_EXPIRED;
        return 0;
    }
    ln->skip = EBB_LA_MEASURED;
    rc = km != NULL ? measure_koord(s, ln, km) : measure_metrics(s, ln, nm);
    if (rc != 0)
        return rc;
    count_pods(s, ln);
    raw_allocatable(s, ln->node, ln->alloc);
    return 0;
}

/* ---- thresholds ----------------------------------------------------------- */

static double clamp_pct(double p)
{
    return p > 100 ? 100 : p < 0 ? 0 : p;
}

/* resourceThreshold: a percent of the allocatable, truncated like Go's
 * int64(float64(threshold) * 0.01 * float64(capacity)). */
static int64_t pct_of(int64_t alloc, double pct)
{
    return ebb_q_of_double(pct * 0.01 * (double)alloc);   /* where Go's conversion is undefined: saturated */
}

double ebb_la_percent(const struct ebb_la_node *n, int i, bool prod)
{
    if (n == NULL || n->skip != EBB_LA_MEASURED || n->alloc[i] == 0)
        return 0;
    return 100.0 * (double)(prod ? n->prod[i] : n->usage[i]) / (double)n->alloc[i];
}

/* calcAverageResourceUsagePercent: the sum of every measured node's percent
 * divided by the number of measured nodes (a node with nothing allocatable
 * adds nothing to the sum but still counts). */
static void means(struct ebb_la_set *s)
{
    for (int i = 0; i < s->nres; i++) {
        double sum = 0, psum = 0;
        for (size_t k = 0; k < s->n; k++) {
            const struct ebb_la_node *ln = &s->nodes[k];
            if (ln->skip != EBB_LA_MEASURED || ln->alloc[i] == 0)
                continue;
            sum += (double)ln->usage[i] / (double)ln->alloc[i] * 100.0;
            psum += (double)ln->prod[i] / (double)ln->alloc[i] * 100.0;
        }
        s->mean[i] = s->nmeasured ? sum / (double)s->nmeasured : 0;
        s->prod_mean[i] = s->nmeasured ? psum / (double)s->nmeasured : 0;
    }
}

struct pcts {
    double low, high;
};

/* newThresholds for one resource: the pair to use, as percents. */
static struct pcts fill(bool dev, uint64_t has_low, uint64_t has_high, const double *low,
                        const double *high, int id)
{
    struct pcts p;
    if (!(has_low & (1ull << id))) {
        p.low = p.high = dev ? 0 : 100;
    } else {
        p.low = low[id];
        p.high = (has_high & (1ull << id)) ? high[id] : 0;   /* the map's zero value */
    }
    return p;
}

/* getNodeThresholds for one resource of one node. `whole` (deviation with a
 * low of exactly 0) means the whole allocatable for both. */
static void thresholds_of(bool dev, struct pcts p, double mean, int64_t alloc, int64_t *lo,
                          int64_t *hi, double *hi_pct)
{
    if (dev) {
        if (p.low == 0) {
            *lo = *hi = alloc;
            *hi_pct = 100;
        } else {
            *lo = pct_of(alloc, clamp_pct(mean - p.low));
            *hi_pct = clamp_pct(mean + p.high);
            *hi = pct_of(alloc, *hi_pct);
        }
    } else {
        *lo = pct_of(alloc, p.low);
        *hi = pct_of(alloc, p.high);
        *hi_pct = p.high;
    }
}

static bool under(const struct ebb_la_set *s, const int64_t *used, const int64_t *thr)
{
    for (int i = 0; i < s->nres; i++)
        if (s->thresholded[i] && used[i] > thr[i])
            return false;
    return true;
}

static uint32_t over(const struct ebb_la_set *s, const int64_t *used, const int64_t *thr)
{
    uint32_t m = 0;
    for (int i = 0; i < s->nres; i++)
        if (s->thresholded[i] && used[i] > thr[i])
            m |= 1u << i;
    return m;
}

uint32_t ebb_la_over(const struct ebb_la_set *s, const struct ebb_la_node *n, bool prod)
{
    if (s == NULL || n == NULL || n->skip != EBB_LA_MEASURED)
        return 0;
    return prod ? over(s, n->prod, n->prod_high) : over(s, n->usage, n->high);
}

/* classifyNodes */
static int classify(const struct ebb_la_set *s, const struct ebb_la_node *ln)
{
    bool sched = !ln->node->unschedulable;
    bool low = sched && under(s, ln->usage, ln->low);
    bool prod_high = over(s, ln->prod, ln->prod_high) != 0;
    bool prod_low = sched && under(s, ln->prod, ln->prod_low);

    if (low)
        return prod_high ? EBB_LA_PROD_HIGH : prod_low ? EBB_LA_BOTH_LOW : EBB_LA_LOW;
    if (over(s, ln->usage, ln->high))
        return EBB_LA_HIGH;
    return prod_high ? EBB_LA_PROD_HIGH : prod_low ? EBB_LA_PROD_LOW : EBB_LA_NORMAL;
}

/* ---- the set --------------------------------------------------------------- */

static int cmp_res_name(const void *a, const void *b)
{
    return strcmp(ebb_resource_name(*(const int *)a), ebb_resource_name(*(const int *)b));
}

static int cmp_node_ptr(const void *a, const void *b)
{
    const struct ebb_node *x = *(struct ebb_node *const *)a, *y = *(struct ebb_node *const *)b;
    return strcmp(x->name, y->name);
}

size_t ebb_la_bytes(const struct ebb_la_set *s)
{
    if (s == NULL)
        return 0;
    return sizeof(*s) + (s->n ? s->n : 1) * (sizeof(*s->nodes) + (size_t)s->nres * 7 * sizeof(int64_t));
}

void ebb_la_destroy(struct ebb_la_set *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; s->nodes && i < s->n; i++)
        free(s->nodes[i].pods);
    free(s->mem);
    free(s->nodes);
    free(s);
}

int ebb_la_create(struct ebb_cache *c, struct ebb_node *const *nodes, size_t n,
                  const struct ebb_la_opts *o, struct ebb_la_set **out)
{
    static const struct ebb_la_thresholds none = { 0 };
    const struct ebb_la_thresholds *t;
    struct ebb_node **sorted = NULL;
    struct ebb_la_set *s;
    struct pcts p[EBB_LA_MAXRES], pp[EBB_LA_MAXRES];
    uint64_t ids, named;
    int rc = EBB_ENOMEM;

    if (c == NULL || o == NULL || out == NULL || (n > 0 && nodes == NULL))
        return EBB_EINVAL;
    t = o->thresholds ? o->thresholds : &none;
    named = t->has_low | t->has_high | t->has_prod_low | t->has_prod_high | (1ull << EBB_RES_MEMORY);
    ids = named | (1ull << EBB_RES_PODS);
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return EBB_ENOMEM;
    s->cache = c;
    for (int id = 0; id < EBB_RES_MAX; id++) {
        if (!(ids & (1ull << id)))
            continue;
        if (s->nres == EBB_LA_MAXRES || ebb_resource_name(id) == NULL) {
            rc = EBB_EINVAL;
            goto fail;
        }
        s->res[s->nres++] = id;
    }
    qsort(s->res, s->nres, sizeof(s->res[0]), cmp_res_name);
    for (int i = 0; i < s->nres; i++) {
        s->thresholded[i] = (named >> s->res[i]) & 1;
        if (s->res[i] == EBB_RES_PODS)
            s->pods_index = i;
        p[i] = fill(t->deviation, t->has_low, t->has_high, t->low, t->high, s->res[i]);
        pp[i] = fill(t->deviation, t->has_prod_low, t->has_prod_high, t->prod_low, t->prod_high,
                     s->res[i]);
    }

    /* nodes by name, once each */
    if (n > 0) {
        if ((sorted = malloc(n * sizeof(*sorted))) == NULL)
            goto fail;
        memcpy(sorted, nodes, n * sizeof(*sorted));
        qsort(sorted, n, sizeof(*sorted), cmp_node_ptr);
    }
    {
        /* sized for the distinct nodes: a list may name one many times */
        size_t distinct = 0;
        for (size_t i = 0; i < n; i++)
            if (i == 0 || sorted[i - 1]->name != sorted[i]->name)
                distinct++;
        if ((s->nodes = calloc(distinct ? distinct : 1, sizeof(*s->nodes))) == NULL ||
            (s->mem = calloc((distinct ? distinct : 1) * (size_t)s->nres * 7, sizeof(int64_t))) == NULL)
            goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        struct ebb_la_node *ln;
        if (sorted[i] == NULL || (s->n > 0 && s->nodes[s->n - 1].node->name == sorted[i]->name))
            continue;
        ln = &s->nodes[s->n];
        ln->node = sorted[i];
        ln->usage = s->mem + s->n * s->nres * 7;
        ln->prod = ln->usage + s->nres;
        ln->alloc = ln->prod + s->nres;
        ln->low = ln->alloc + s->nres;
        ln->high = ln->low + s->nres;
        ln->prod_low = ln->high + s->nres;
        ln->prod_high = ln->prod_low + s->nres;
        s->n++;
        if ((rc = measure(s, ln, o)) != 0)
            goto fail;
        if (ln->skip == EBB_LA_MEASURED)
            s->nmeasured++;
    }
    free(sorted);
    sorted = NULL;

    if (t->deviation)
        means(s);
    for (int i = 0; i < s->nres; i++) {
        double hp = p[i].high, php = pp[i].high;
        for (size_t k = 0; k < s->n; k++) {
            struct ebb_la_node *ln = &s->nodes[k];
            if (ln->skip != EBB_LA_MEASURED || !s->thresholded[i])
                continue;
            thresholds_of(t->deviation, p[i], s->mean[i], ln->alloc[i], &ln->low[i], &ln->high[i], &hp);
            thresholds_of(t->deviation, pp[i], s->prod_mean[i], ln->alloc[i], &ln->prod_low[i],
                          &ln->prod_high[i], &php);
        }
        if (t->deviation) {
            /* the same for every node: the pool's mean */
            hp = p[i].low == 0 ? 100 : clamp_pct(s->mean[i] + p[i].high);
            php = pp[i].low == 0 ? 100 : clamp_pct(s->prod_mean[i] + pp[i].high);
        }
        s->high_pct[i] = hp;
        s->prod_high_pct[i] = php;
    }
    for (size_t k = 0; k < s->n; k++)
        s->nodes[k].cls = s->nodes[k].skip == EBB_LA_MEASURED ? classify(s, &s->nodes[k]) : EBB_LA_SKIPPED;
    *out = s;
    return 0;
fail:
    free(sorted);
    ebb_la_destroy(s);
    return rc;
}

struct ebb_la_node *ebb_la_find(const struct ebb_la_set *s, ebb_str name)
{
    size_t lo = 0, hi;

    if (s == NULL || name == NULL)
        return NULL;
    hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = s->nodes[mid].node->name == name ? 0 : strcmp(s->nodes[mid].node->name, name);
        if (c == 0)
            return &s->nodes[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int ebb_la_index(const struct ebb_la_set *s, int id)
{
    for (int i = 0; s && i < s->nres; i++)
        if (s->res[i] == id)
            return i;
    return -1;
}

size_t ebb_la_reason(const struct ebb_la_set *s, const struct ebb_la_node *n, bool prod,
                     char *buf, size_t len)
{
    uint32_t m = ebb_la_over(s, n, prod);
    size_t w = 0;

    if (len == 0)
        return 0;
    buf[0] = '\0';
    for (int i = 0; i < s->nres; i++) {
        int k;
        if (!(m & (1u << i)))
            continue;
        k = snprintf(buf + w, len - w, "%s%s %s usage(%.2f%%)>threshold(%.2f%%)", w ? ", " : "",
                     prod ? "prod" : "node", ebb_resource_name(s->res[i]), ebb_la_percent(n, i, prod),
                     prod ? s->prod_high_pct[i] : s->high_pct[i]);
        if (k < 0)
            break;
        w += (size_t)k;
        if (w >= len) {
            w = len - 1;
            break;
        }
    }
    return w;
}

/* ---- sources ---------------------------------------------------------------- */

__extension__ typedef __int128 i128;

/* mostRequestedScore: integer thousandths, the usage capped at capacity. */
static int64_t most_requested(int64_t used, int64_t cap)
{
    if (cap == 0)
        return 0;
    if (used > cap)
        used = cap;
    /* exactly: usage and allocatable go up to 2^63 - 1, where used * 1000 wraps */
    return (int64_t)((i128)used * 1000 / cap);
}

int64_t ebb_la_score(const struct ebb_la_set *s, const struct ebb_la_node *n,
                     const int64_t *weights, bool prod)
{
    int64_t score = 0, wsum = 0;

    if (s == NULL || n == NULL || n->skip != EBB_LA_MEASURED)
        return 0;
    for (int i = 0; i < s->nres; i++) {
        int64_t w = weights ? weights[i] : 0;
        score = ebb_q_add(score, ebb_q_mul(most_requested(prod ? n->prod[i] : n->usage[i], n->alloc[i]), w));
        wsum = ebb_q_add(wsum, w);
    }
    return wsum == 0 ? 0 : score / wsum;
}

struct scored_node {
    struct ebb_la_node *n;
    int64_t score;
};

static int cmp_desc(const void *a, const void *b)
{
    const struct scored_node *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->n->node->name, y->n->node->name);
}

static int cmp_asc(const void *a, const void *b)
{
    const struct scored_node *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    return strcmp(x->n->node->name, y->n->node->name);
}

void ebb_la_sort_nodes(const struct ebb_la_set *s, struct ebb_la_node **v, size_t n,
                       const int64_t *weights, bool prod, bool ascending)
{
    struct scored_node *t;

    if (n < 2 || (t = malloc(n * sizeof(*t))) == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        t[i].n = v[i];
        t[i].score = ebb_la_score(s, v[i], weights, prod);
    }
    qsort(t, n, sizeof(*t), ascending ? cmp_asc : cmp_desc);
    for (size_t i = 0; i < n; i++)
        v[i] = t[i].n;
    free(t);
}

void ebb_la_available(const struct ebb_la_set *s, struct ebb_la_node *const *v, size_t n,
                      bool prod, int64_t *out)
{
    for (int i = 0; i < s->nres; i++)
        out[i] = 0;
    for (size_t k = 0; k < n; k++) {
        const struct ebb_la_node *ln = v[k];
        if (ln == NULL || ln->skip != EBB_LA_MEASURED)
            continue;
        for (int i = 0; i < s->nres; i++)
            if (s->thresholded[i])
                out[i] = ebb_q_add(out[i], prod ? ebb_q_sub(ln->prod_high[i], ln->prod[i])
                                                : ebb_q_sub(ln->high[i], ln->usage[i]));
    }
}

/* ---- pods -------------------------------------------------------------------- */

bool ebb_la_fits(struct ebb_la_set *s, const struct ebb_pod *p, const struct ebb_res *usage,
                 struct ebb_la_node *const *targets, size_t n, bool prod,
                 struct ebb_la_node **chosen)
{
    if (chosen)
        *chosen = NULL;
    if (s == NULL || p == NULL || usage == NULL)
        return false;
    for (size_t k = 0; k < n; k++) {
        struct ebb_la_node *t = targets[k];
        int64_t *used, *thr;
        bool exceeds = false;
        /* Koordinator v1.8.0: ToleratesTaint(..., false), Lt/Gt never match */
        if (t == NULL || !ebb_node_fit_as(s->cache, p, t->node, NULL, false))
            continue;
        if (t->skip == EBB_LA_MEASURED) {
            used = prod ? t->prod : t->usage;
            thr = prod ? t->prod_high : t->high;
            for (int i = 0; i < s->nres && !exceeds; i++)
                if (s->thresholded[i] && ebb_q_add(used[i], ebb_res_get(usage, s->res[i])) > thr[i])
                    exceeds = true;
            if (exceeds)
                continue;   /* Koordinator adds, finds the excess and reverts */
            for (int i = 0; i < s->nres; i++)
                if (s->thresholded[i])
                    used[i] = ebb_q_add(used[i], ebb_res_get(usage, s->res[i]));
        }
        if (chosen)
            *chosen = t;
        return true;
    }
    return false;
}

/* mostRequestedScorePod: r when r < 1, else 1/r + 1 (a pod whose usage is
 * about the excess scores highest). */
static double pod_ratio_score(int64_t used, int64_t cap)
{
    double r;
    if (cap == 0)
        return 0;
    r = (double)used / (double)cap;
    return r >= 1 ? 1 / r + 1 : r;
}

/* ResourceUsageScorerPod over the pod's usage entries, weighted by the
 * weights of the resources over the threshold (others weigh 0). */
static double usage_score(const struct ebb_la_set *s, const struct ebb_res *u, uint32_t m,
                          const int64_t *excess, const int64_t *weights)
{
    double score = 0;
    int64_t wsum = 0;

    for (uint16_t k = 0; k < u->n; k++) {
        int i = ebb_la_index(s, u->q[k].id);
        if (i < 0 || !(m & (1u << i)))
            continue;
        score += pod_ratio_score(u->q[k].v, excess[i]) * (double)weights[i];
        wsum = ebb_q_add(wsum, weights[i]);
    }
    return wsum == 0 ? 0 : score / (double)wsum;
}

static uint32_t excess_of(const struct ebb_la_set *s, const struct ebb_la_node *n, bool prod,
                          int64_t *excess)
{
    uint32_t m = ebb_la_over(s, n, prod);
    for (int i = 0; i < s->nres; i++)
        excess[i] = (m & (1u << i)) ? (prod ? ebb_q_sub(n->prod[i], n->prod_high[i])
                                            : ebb_q_sub(n->usage[i], n->high[i])) : 0;
    return m;
}

double ebb_la_pod_score(const struct ebb_la_set *s, const struct ebb_la_node *n,
                        const struct ebb_pod *p, const int64_t *weights, bool prod)
{
    int64_t excess[EBB_LA_MAXRES];
    const struct ebb_res *u = ebb_la_pod_usage(n, p);
    uint32_t m;

    if (u == NULL)
        return -1;
    m = excess_of(s, n, prod, excess);
    return usage_score(s, u, m, excess, weights);
}

struct pod_key {
    struct ebb_pod *p;
    int kprio, kqos, qos;
    int32_t prio, dcost, ecost;
    bool has;
    double score;
    int64_t created;
};

static int cmp3(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

static int cmp_pod_key(const void *a, const void *b)
{
    const struct pod_key *x = a, *y = b;
    int c;

    if ((c = cmp3(x->kprio, y->kprio)) || (c = cmp3(x->prio, y->prio)) ||
        (c = cmp3(x->qos, y->qos)) || (c = cmp3(x->kqos, y->kqos)) ||
        (c = cmp3(x->dcost, y->dcost)) || (c = cmp3(x->ecost, y->ecost)))
        return c;
    /* Reverse(PodUsage): measured before unmeasured, then the higher score */
    if (x->has != y->has)
        return x->has ? -1 : 1;
    if (x->has && x->score != y->score)
        return x->score > y->score ? -1 : 1;
    /* PodCreationTimestamp: the newer first */
    if (x->created != y->created)
        return x->created > y->created ? -1 : 1;
    if ((c = strcmp(x->p->ns, y->p->ns)))
        return c;
    return strcmp(x->p->name, y->p->name);
}

void ebb_la_sort_pods(const struct ebb_la_set *s, const struct ebb_la_node *n,
                      struct ebb_pod **pods, size_t np, const int64_t *weights, bool prod)
{
    int64_t excess[EBB_LA_MAXRES], zero[EBB_LA_MAXRES] = { 0 };
    struct pod_key *k;
    uint32_t m;

    if (np < 2 || (k = malloc(np * sizeof(*k))) == NULL)
        return;
    if (weights == NULL)
        weights = zero;
    m = excess_of(s, n, prod, excess);
    for (size_t i = 0; i < np; i++) {
        const struct ebb_pod *p = pods[i];
        const struct ebb_res *u = ebb_la_pod_usage(n, p);
        k[i].p = pods[i];
        k[i].kprio = ebb_koord_priority_class(p);
        k[i].prio = (p->flags & EBB_POD_HAS_PRIORITY) ? p->priority : 0;
        k[i].qos = p->qos;
        k[i].kqos = ebb_koord_qos_rank(ebb_koord_qos_class(p));
        k[i].dcost = ebb_pod_deletion_cost(p);
        k[i].ecost = ebb_koord_eviction_cost(p);
        k[i].has = u != NULL;
        k[i].score = u ? usage_score(s, u, m, excess, weights) : 0;
        k[i].created = p->created;
    }
    qsort(k, np, sizeof(*k), cmp_pod_key);
    for (size_t i = 0; i < np; i++)
        pods[i] = k[i].p;
    free(k);
}

bool ebb_la_evicted(struct ebb_la_set *s, struct ebb_la_node *n, const struct ebb_pod *p,
                    bool prod, int64_t *available)
{
    const struct ebb_res *u = ebb_la_pod_usage(n, p);

    if (u == NULL || n->skip != EBB_LA_MEASURED)
        return false;
    for (int i = 0; i < s->nres; i++) {
        int64_t q;
        if (!s->thresholded[i])
            continue;
        q = s->res[i] == EBB_RES_PODS ? 1 : ebb_res_get(u, s->res[i]);
        if (available)
            available[i] = ebb_q_sub(available[i], q);
        n->usage[i] = ebb_q_sub(n->usage[i], q);
        if (prod)
            n->prod[i] = ebb_q_sub(n->prod[i], q);
    }
    return true;
}
