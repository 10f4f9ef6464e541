/* Node utilization: usage sets, thresholds, classification, the budget of
 * a move. Semantics of kubernetes-sigs/descheduler
 * pkg/framework/plugins/nodeutilization (see include/ebb/usage.h); the
 * floating-point steps are written in upstream's order of operations so
 * boundaries round the same way. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/taints.h"
#include "ebb/quantity.h"
#include "ebb/usage.h"
#include "base/vec.h"

static void tol_forget(struct ebb_usage *u);

void ebb_usage_destroy(struct ebb_usage *u)
{
    if (u == NULL)
        return;
    free(u->nodes);
    free(u->used);
    free(u->cap);
    free(u->has_cap);
    free(u->pct);
    free(u->avail);
    free(u->cls);
    free(u->dest);
    free(u->skipped);
    free(u->slot_index);
    free(u->dests);
    tol_forget(u);
    free(u->tol);
    free(u);
}

size_t ebb_usage_bytes(const struct ebb_usage *u)
{
    size_t n, cells;

    if (u == NULL)
        return 0;
    n = u->n + u->nskipped;
    cells = n * u->nres;
    return sizeof(*u) + n * (sizeof(*u->nodes) + sizeof(*u->cls) + sizeof(*u->dest) +
                             sizeof(*u->skipped)) +
           cells * (sizeof(*u->used) + sizeof(*u->cap) + sizeof(*u->has_cap) + sizeof(*u->pct) +
                    sizeof(*u->avail)) +
           u->nslots * sizeof(*u->slot_index);
}

double ebb_usage_percent(int64_t used, int64_t capacity)
{
    if (capacity <= 0)
        return 0;
    return (double)used / (double)capacity * 100;
}

int64_t ebb_usage_cap_at(int64_t capacity, double pct)
{
    return ebb_q_of_double(pct * 0.01 * (double)capacity);
}

static bool is_metric_resource(int id)
{
    const char *name = ebb_resource_name(id);
    return name != NULL && strcmp(name, EBB_USAGE_METRIC_RESOURCE) == 0;
}

struct given {
    ebb_usage_value_fn fn;
    void *ud;
};

/* The usage of node `nd` for every resource of the set, or false with
 * upstream's reason (usageclients.go actualUsageClient.sync,
 * prometheusUsageClient.sync) when its metrics do not say. */
static bool node_usage(const struct ebb_usage *u, struct ebb_cache *c, const struct ebb_node *nd,
                       const struct given *g, int64_t *used, char *why, size_t whylen)
{
    const struct ebb_podvec *pv = ebb_cache_pods_on_node(c, nd->name);
    const struct ebb_node_metrics *m = NULL;

    if (u->source == EBB_USAGE_GIVEN) {
        for (uint16_t k = 0; k < u->nres; k++) {
            if (u->res[k] == EBB_RES_PODS) {
                used[k] = pv->nactive;
            } else if (!g->fn(g->ud, nd, u->res[k], &used[k])) {
                snprintf(why, whylen, "unable to find metric entry for %s", nd->name);
                return false;
            }
        }
        return true;
    }

    if (u->source == EBB_USAGE_METRICS &&
        (m = ebb_cache_node_metrics(c, nd->name)) == NULL) {
        snprintf(why, whylen, "unable to find node \"%s\" in the collected metrics", nd->name);
        return false;
    }
    for (uint16_t k = 0; k < u->nres; k++) {
        int id = u->res[k];
        if (id == EBB_RES_PODS) {
            used[k] = pv->nactive;
        } else if (m == NULL) {
            used[k] = pv->req[id];
        } else if (ebb_res_has(&m->usage, id)) {
            used[k] = ebb_res_get(&m->usage, id);
        } else {
            snprintf(why, whylen, "unable to find \"%s\" resource for collected \"%s\" node "
                     "metric", ebb_resource_name(id), nd->name);
            return false;
        }
    }
    return true;
}

static int create(struct ebb_cache *c, struct ebb_node *const *nodes, size_t n, const int *res,
                  size_t nres, int source, const struct given *g, struct ebb_usage **out)
{
    struct ebb_usage *u;
    size_t cells;

    if (c == NULL || (nodes == NULL && n > 0) || res == NULL || out == NULL)
        return EBB_EINVAL;
    for (size_t k = 0; k < nres; k++)
        if (res[k] < 0 || res[k] >= EBB_RES_MAX)
            return EBB_EINVAL;
    if ((u = calloc(1, sizeof(*u))) == NULL)
        return EBB_ENOMEM;
    u->source = source;
    for (size_t k = 0; k < nres; k++) {
        bool dup = false;
        for (uint16_t j = 0; j < u->nres && !dup; j++)
            dup = u->res[j] == res[k];
        if (!dup)
            u->res[u->nres++] = (int16_t)res[k];
    }
    cells = (n ? n : 1) * (u->nres ? u->nres : 1);
    u->nslots = ebb_cache_node_slots(c);
    if ((u->nodes = calloc(n ? n : 1, sizeof(*u->nodes))) == NULL ||
        (u->used = calloc(cells, sizeof(*u->used))) == NULL ||
        (u->cap = calloc(cells, sizeof(*u->cap))) == NULL ||
        (u->has_cap = calloc(cells, sizeof(*u->has_cap))) == NULL ||
        (u->pct = calloc(cells, sizeof(*u->pct))) == NULL ||
        (u->avail = calloc(cells, sizeof(*u->avail))) == NULL ||
        (u->cls = calloc(n ? n : 1, sizeof(*u->cls))) == NULL ||
        (u->dest = calloc(n ? n : 1, sizeof(*u->dest))) == NULL ||
        (u->dests = calloc(n ? n : 1, sizeof(*u->dests))) == NULL ||
        (u->skipped = calloc(n ? n : 1, sizeof(*u->skipped))) == NULL ||
        (u->slot_index = calloc(u->nslots ? u->nslots : 1, sizeof(*u->slot_index))) == NULL)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const struct ebb_node *nd = nodes[i];
        size_t at = u->n * u->nres;
        char why[sizeof(u->skipped[0].reason)];

        if (nd == NULL || (nd->slot < u->nslots && u->slot_index[nd->slot] != 0))
            continue;   /* a node listed twice counts once */
        if (!node_usage(u, c, nd, g, &u->used[at], why, sizeof(why))) {
            u->skipped[u->nskipped].node = (struct ebb_node *)nd;
            memcpy(u->skipped[u->nskipped].reason, why, sizeof(why));
            u->nskipped++;
            continue;
        }
        for (uint16_t k = 0; k < u->nres; k++) {
            int id = u->res[k];
            if (is_metric_resource(id)) {
                u->has_cap[at + k] = true;
                u->cap[at + k] = 100;
            } else if (ebb_res_has(&nd->allocatable, id)) {
                u->has_cap[at + k] = true;
                u->cap[at + k] = ebb_res_get(&nd->allocatable, id);
            }
            u->pct[at + k] = u->has_cap[at + k] ? ebb_usage_percent(u->used[at + k], u->cap[at + k]) : 0;
            u->avail[at + k] = u->cap[at + k];
        }
        if (nd->slot < u->nslots)
            u->slot_index[nd->slot] = (uint32_t)u->n + 1;
        u->nodes[u->n++] = (struct ebb_node *)nd;
    }
    *out = u;
    return 0;
fail:
    ebb_usage_destroy(u);
    return EBB_ENOMEM;
}

int ebb_usage_create(struct ebb_cache *c, struct ebb_node *const *nodes, size_t n,
                     const int *res, size_t nres, int source, struct ebb_usage **out)
{
    if (source != EBB_USAGE_REQUESTS && source != EBB_USAGE_METRICS)
        return EBB_EINVAL;
    return create(c, nodes, n, res, nres, source, NULL, out);
}

int ebb_usage_create_given(struct ebb_cache *c, struct ebb_node *const *nodes, size_t n,
                           const int *res, size_t nres, ebb_usage_value_fn value, void *ud,
                           struct ebb_usage **out)
{
    struct given g = { value, ud };

    if (value == NULL)
        return EBB_EINVAL;
    return create(c, nodes, n, res, nres, EBB_USAGE_GIVEN, &g, out);
}

bool ebb_usage_measures_pods(const struct ebb_usage *u)
{
    return u != NULL && u->source != EBB_USAGE_GIVEN;
}

long ebb_usage_index(const struct ebb_usage *u, const struct ebb_node *node)
{
    uint32_t at;

    if (u == NULL || node == NULL || node->slot >= u->nslots)
        return -1;
    at = u->slot_index[node->slot];
    if (at == 0 || u->nodes[at - 1] != node)
        return -1;
    return (long)at - 1;
}

int ebb_usage_position(const struct ebb_usage *u, int id)
{
    for (uint16_t k = 0; k < u->nres; k++)
        if (u->res[k] == id)
            return k;
    return -1;
}

static double clamp(double v, double lo, double hi)
{
    /* normalizer.Clamp: math.Max then math.Min */
    v = fmax(v, lo);
    return fmin(v, hi);
}

void ebb_usage_set_thresholds(struct ebb_usage *u, const bool *has, const double *low,
                              const double *high, bool deviation)
{
    for (uint16_t k = 0; k < u->nres; k++) {
        u->has_thr[k] = has[k];
        u->low[k] = has[k] ? low[k] : 0;
        u->high[k] = has[k] ? (high ? high[k] : 100) : 0;
        if (!has[k] || !deviation)
            continue;
        /* normalizer.Average over the nodes that have a percentage for the
         * resource (upstream sums in map order; we sum in node order) */
        double sum = 0;
        int count = 0;
        for (size_t i = 0; i < u->n; i++) {
            if (u->has_cap[i * u->nres + k]) {
                sum += u->pct[i * u->nres + k];
                count++;
            }
        }
        if (count == 0) {
            u->has_thr[k] = false;   /* no node has it: no average, no threshold */
            u->low[k] = u->high[k] = 0;
            continue;
        }
        double avg = sum / count;
        u->low[k] = clamp(avg + -u->low[k], 0, 100);
        u->high[k] = clamp(avg + u->high[k], 0, 100);
    }
    for (size_t i = 0; i < u->n; i++) {
        for (uint16_t k = 0; k < u->nres; k++) {
            size_t at = i * u->nres + k;
            if (!u->has_cap[at])
                u->avail[at] = 0;   /* the node knows nothing of it */
            else if (!u->has_thr[k])
                u->avail[at] = u->cap[at];
            else
                u->avail[at] = ebb_usage_cap_at(u->cap[at], u->high[k]);
        }
    }
}

bool ebb_usage_below(const struct ebb_usage *u, size_t i)
{
    for (uint16_t k = 0; k < u->nres; k++)
        if (u->has_thr[k] && u->low[k] < u->pct[i * u->nres + k])
            return false;
    return true;
}

bool ebb_usage_above(const struct ebb_usage *u, size_t i)
{
    for (uint16_t k = 0; k < u->nres; k++)
        if (u->has_thr[k] && u->high[k] < u->pct[i * u->nres + k])
            return true;
    return false;
}

/* Each node's usage and class at debug level (--v=3), in upstream's words
 * (nodeutilization.go): "Node is underutilized" node="..." usage={...}
 * usagePercentage={...}. */
static void log_class(const struct ebb_usage *u, size_t i, uint8_t cls)
{
    static const char *const what[] = { "appropriately utilized", "underutilized", "overutilized" };
    char used[512], pct[512];
    size_t a = 0, b = 0;

    for (uint16_t k = 0; k < u->nres; k++) {
        const char *name = ebb_resource_name(u->res[k]);
        char q[48];
        ebb_quantity_format(u->used[i * u->nres + k], name && strcmp(name, "cpu") == 0, q, sizeof(q));
        if (a < sizeof(used))
            a += (size_t)snprintf(used + a, sizeof(used) - a, "%s\"%s\":\"%s\"", k ? "," : "",
                                  name ? name : "?", q);
        if (b < sizeof(pct))
            b += (size_t)snprintf(pct + b, sizeof(pct) - b, "%s\"%s\":%.2f", k ? "," : "",
                                  name ? name : "?", u->pct[i * u->nres + k]);
    }
    ebb_log(EBB_LOG_DEBUG, "\"Node is %s\" node=\"%s\" usage={%s} usagePercentage={%s}",
            what[cls < 3 ? cls : 0], u->nodes[i]->name, used, pct);
}

void ebb_usage_classify(struct ebb_usage *u, int rule, size_t *nunder, size_t *nover)
{
    size_t under = 0, over = 0;

    for (size_t i = 0; i < u->n; i++) {
        const struct ebb_node *nd = u->nodes[i];
        uint8_t cls = EBB_USAGE_NONE;

        if (rule == EBB_USAGE_PACK) {
            if (ebb_usage_below(u, i))
                cls = EBB_USAGE_UNDER;
            else if (!nd->unschedulable)
                cls = EBB_USAGE_OVER;
        } else {
            if (!nd->unschedulable && ebb_usage_below(u, i))
                cls = EBB_USAGE_UNDER;
            else if (ebb_usage_above(u, i))
                cls = EBB_USAGE_OVER;
        }
        u->cls[i] = cls;
        if (ebb_log_level >= EBB_LOG_DEBUG)
            log_class(u, i, cls);
        under += cls == EBB_USAGE_UNDER;
        over += cls == EBB_USAGE_OVER;
    }
    if (nunder)
        *nunder = under;
    if (nover)
        *nover = over;
}

void ebb_usage_move(struct ebb_usage *u, int to)
{
    memset(u->budget, 0, sizeof(u->budget));
    u->ndests = 0;
    tol_forget(u);
    for (size_t i = 0; i < u->n; i++) {
        u->dest[i] = u->cls[i] == to;
        if (!u->dest[i])
            continue;
        u->dests[u->ndests++] = (uint32_t)i;
        for (uint16_t k = 0; k < u->nres; k++)
            u->budget[k] = ebb_q_add(u->budget[k], ebb_q_sub(u->avail[i * u->nres + k],
                                                             u->used[i * u->nres + k]));
    }
    u->moving = true;
}

static int64_t usage_sum(const struct ebb_usage *u, size_t i)
{
    int64_t s = 0;
    for (uint16_t k = 0; k < u->nres; k++)
        s = ebb_q_add(s, u->used[i * u->nres + k]);
    return s;
}

struct order_item {
    int64_t sum;
    size_t i;
    const char *name;
};

static int cmp_desc(const void *a, const void *b)
{
    const struct order_item *x = a, *y = b;
    if (x->sum != y->sum)
        return x->sum > y->sum ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_asc(const void *a, const void *b)
{
    const struct order_item *x = a, *y = b;
    if (x->sum != y->sum)
        return x->sum < y->sum ? -1 : 1;
    return strcmp(x->name, y->name);
}

size_t ebb_usage_order(const struct ebb_usage *u, int cls, bool ascending, size_t *idx)
{
    struct order_item *items;
    size_t k = 0;

    if (u->n == 0)
        return 0;
    if ((items = malloc(u->n * sizeof(*items))) == NULL) {
        /* no memory to sort: name order still gives a usable answer */
        for (size_t i = 0; i < u->n; i++)
            if (u->cls[i] == cls)
                idx[k++] = i;
        return k;
    }
    for (size_t i = 0; i < u->n; i++) {
        if (u->cls[i] != cls)
            continue;
        items[k].sum = usage_sum(u, i);
        items[k].i = i;
        items[k].name = u->nodes[i]->name;
        k++;
    }
    qsort(items, k, sizeof(*items), ascending ? cmp_asc : cmp_desc);
    for (size_t j = 0; j < k; j++)
        idx[j] = items[j].i;
    free(items);
    return k;
}

bool ebb_usage_above_target(const struct ebb_usage *u, size_t i)
{
    for (uint16_t k = 0; k < u->nres; k++)
        if (u->avail[i * u->nres + k] < u->used[i * u->nres + k])
            return true;
    return false;
}

bool ebb_usage_budget_left(const struct ebb_usage *u)
{
    for (uint16_t k = 0; k < u->nres; k++)
        if (u->budget[k] <= 0)
            return false;
    return true;
}

bool ebb_usage_continues(const struct ebb_usage *u, size_t i, bool target)
{
    if (target && !ebb_usage_above_target(u, i))
        return false;
    return ebb_usage_budget_left(u);
}

int ebb_usage_of_pod(const struct ebb_usage *u, const struct ebb_cache *c, const struct ebb_pod *p,
                     int64_t *out, const char **why)
{
    const struct ebb_pod_metrics *m = NULL;

    if (u->source == EBB_USAGE_GIVEN) {
        if (why)
            *why = "not supported";   /* upstream's notSupportedError */
        return EBB_ENOENT;
    }
    if (u->source == EBB_USAGE_METRICS) {
        if ((m = ebb_cache_pod_metrics(c, p->ns, p->name)) == NULL) {
            if (why)
                *why = "the pod has no PodMetrics (metrics.k8s.io)";
            return EBB_ENOENT;
        }
    }
    for (uint16_t k = 0; k < u->nres; k++) {
        int id = u->res[k];
        if (id == EBB_RES_PODS) {
            out[k] = 1;
        } else if (m == NULL) {
            out[k] = ebb_res_get(&p->requests, id);
        } else if (ebb_res_has(&m->usage, id)) {
            out[k] = ebb_res_get(&m->usage, id);
        } else {
            if (why)
                *why = "the pod's PodMetrics lack a resource the thresholds name";
            return EBB_ENOENT;
        }
    }
    return 0;
}

void ebb_usage_subtract(struct ebb_usage *u, size_t i, const int64_t *pod)
{
    for (uint16_t k = 0; k < u->nres; k++) {
        u->used[i * u->nres + k] = ebb_q_sub(u->used[i * u->nres + k], pod[k]);
        if (u->moving)
            u->budget[k] = ebb_q_sub(u->budget[k], pod[k]);
        u->pct[i * u->nres + k] = u->has_cap[i * u->nres + k]
                                      ? ebb_usage_percent(u->used[i * u->nres + k],
                                                          u->cap[i * u->nres + k])
                                      : 0;
    }
}

/* One set of tolerations and its answer over the destinations. The set is
 * a copy holding its strings: a live cycle may outlast the pod it came from. */
struct ebb_usage_tolerance {
    uint64_t hash;
    struct ebb_toleration *t;
    uint16_t n;
    bool ok;
};

static void tol_forget(struct ebb_usage *u)
{
    for (size_t i = 0; i < u->ntol; i++) {
        for (uint16_t k = 0; k < u->tol[i].n; k++) {
            ebb_str_release(u->tol[i].t[k].key);
            ebb_str_release(u->tol[i].t[k].value);
        }
        free(u->tol[i].t);
    }
    u->ntol = 0;
}

#define MAX_TOLERANCES 256            /* past this, answers are not kept */

static uint64_t tol_hash(const struct ebb_pod *p)
{
    uint64_t h = p->ntolerations;

    for (uint16_t i = 0; i < p->ntolerations; i++) {
        const struct ebb_toleration *t = &p->tolerations[i];
        h = (h ^ (uint64_t)(uintptr_t)t->key) * 0x9E3779B97F4A7C15ull;
        h = (h ^ (uint64_t)(uintptr_t)t->value) * 0x9E3779B97F4A7C15ull;
        h = (h ^ ((uint64_t)t->op << 8 | t->effect)) * 0x9E3779B97F4A7C15ull;
    }
    return h ^ (h >> 31);
}

/* Pods of a workload carry the same tolerations: the answer is kept per
 * distinct set, so a source node's pods do not each scan the destinations. */
bool ebb_usage_tolerated(struct ebb_usage *u, const struct ebb_pod *p)
{
    uint64_t h = tol_hash(p);
    bool ok = false;

    for (size_t i = 0; i < u->ntol; i++)
        if (u->tol[i].hash == h && u->tol[i].n == p->ntolerations &&
            ebb_tolerations_same(u->tol[i].t, p->tolerations, p->ntolerations))
            return u->tol[i].ok;
    for (size_t k = 0; k < u->ndests && !ok; k++)
        ok = ebb_pod_tolerates_all_taints_strict(p, u->nodes[u->dests[k]]);
    if (u->ntol < MAX_TOLERANCES) {
        struct ebb_toleration *t;
        if (u->ntol == u->captol && ebb__reserve(u->tol, u->captol, u->ntol + 1) != 0)
            return ok;
        if ((t = malloc((p->ntolerations + 1u) * sizeof(*t))) == NULL)
            return ok;
        for (uint16_t k = 0; k < p->ntolerations; k++) {
            t[k] = p->tolerations[k];
            ebb_str_ref(t[k].key);
            ebb_str_ref(t[k].value);
        }
        u->tol[u->ntol++] = (struct ebb_usage_tolerance){ h, t, p->ntolerations, ok };
    }
    return ok;
}

/* A quantity as a person reads it: cpu in millicores, byte counts in the
 * largest binary unit that divides them, counts as they are. */
static void format_amount(int id, int64_t v, char *buf, size_t len)
{
    static const char *const units[] = { "Ki", "Mi", "Gi", "Ti" };
    const char *name = ebb_resource_name(id);
    bool bytes = id == EBB_RES_MEMORY || id == EBB_RES_EPHEMERAL ||
                 (name && strncmp(name, "hugepages-", 10) == 0);

    if (id == EBB_RES_CPU) {
        snprintf(buf, len, "%" PRId64 "m", v);
        return;
    }
    if (bytes && v != 0) {
        int u = -1;
        int64_t x = v;
        while (u < 3 && x % 1024 == 0) {
            x /= 1024;
            u++;
        }
        if (u >= 0) {
            snprintf(buf, len, "%" PRId64 "%s", x, units[u]);
            return;
        }
    }
    snprintf(buf, len, "%" PRId64, v);
}

void ebb_usage_explain(const struct ebb_usage *u, size_t i, char *buf, size_t len)
{
    size_t off;
    int w;
    bool first = true;

    if (len == 0)
        return;
    buf[0] = '\0';
    if (i >= u->n)
        return;
    if (u->cls[i] == EBB_USAGE_UNDER) {
        w = snprintf(buf, len, "node %s is underutilized:", u->nodes[i]->name);
        off = w < 0 ? 0 : (size_t)w;
        for (uint16_t k = 0; k < u->nres && off < len; k++) {
            if (!u->has_thr[k])
                continue;
            w = snprintf(buf + off, len - off, "%s %s %.2f%% <= %.2f%%", first ? "" : ",",
                         ebb_resource_name(u->res[k]), u->pct[i * u->nres + k], u->low[k]);
            off += w < 0 ? 0 : (size_t)w;
            first = false;
        }
        return;
    }
    w = snprintf(buf, len, "node %s is above its target utilization:", u->nodes[i]->name);
    off = w < 0 ? 0 : (size_t)w;
    for (uint16_t k = 0; k < u->nres && off < len; k++) {
        size_t at = i * u->nres + k;
        char amount[48];
        if (!(u->avail[at] < u->used[at]))
            continue;
        format_amount(u->res[k], ebb_q_sub(u->used[at], u->avail[at]), amount, sizeof(amount));
        w = snprintf(buf + off, len - off, "%s %s %.2f%% > %.2f%% (+%s)", first ? "" : ",",
                     ebb_resource_name(u->res[k]), u->pct[at], u->has_thr[k] ? u->high[k] : 100.0,
                     amount);
        off += w < 0 ? 0 : (size_t)w;
        first = false;
    }
}
