/* `ebb serve`: a recorded cluster served as a Kubernetes API, for kubectl,
 * client-go and ebb's own live mode (the integration tests run against it).
 *
 * The snapshot is read once, by the streaming loader: into an ebb_cache
 * (the compact structs the PDB rules of engine/pdb.c read) and, through
 * ebb_snapshot_load_each, into one store per resource, each object kept as
 * compact JSON text plus its labels and selectable fields (a 150k-pod
 * cluster fits in about 1 GB). Every stored object gets a resourceVersion from
 * one counter; every change after the load is an event in a bounded log
 * (the watch cache): watches replay it from their resourceVersion, lists
 * with a continue token or resourceVersionMatch=Exact are rebuilt from it,
 * and what fell out of it answers 410 Gone.
 *
 * Served: discovery, nodes, pods, namespaces, persistentvolumeclaims,
 * events (core v1 and events.k8s.io/v1: two stores here, one in a real
 * cluster), poddisruptionbudgets, priorityclasses, leases, NodeMetrics and
 * PodMetrics. Reads everywhere; leases and events are written; nodes are
 * updated and patched (a taint or a label, as `kubectl taint` does); pods are
 * deleted and evicted (POST pods/NAME/eviction, decided by
 * ebb__pdb_decide). What evict plugins send is answered too: pods are
 * patched (merge patch, metadata.uid a precondition) and, with
 * --koordinator, Koordinator's PodMigrationJobs are created, listed and
 * watched. Faults for tests: failing requests, latency, watches closed on a
 * timer, a short history. For benchmarks, --churn changes pods at a given
 * rate once they are watched, held back while a watcher lags.
 *
 * One loop thread: everything happens in libuv callbacks. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "ebb/flags.h"
#include "ebb/cache.h"
#include "ebb/httpd.h"
#include "ebb/selector.h"
#include "ebb/serve.h"
#include "ebb/snapshot.h"
#include "engine.h"

#define EXIT_INPUT 2
#define DEFAULT_HISTORY 10000
#define JSON "application/json"

/* ---- resources ------------------------------------------------------------- */

enum { V_GET = 1, V_LIST = 2, V_WATCH = 4, V_CREATE = 8, V_UPDATE = 16, V_PATCH = 32,
       V_DELETE = 64 };

enum { R_NODES, R_PODS, R_NAMESPACES, R_PVCS, R_EVENTS, R_PDBS, R_PRIORITY_CLASSES, R_LEASES,
       R_EVENTS_V1, R_NODE_METRICS, R_POD_METRICS, R_POD_MIGRATION_JOBS, NRES };

struct rdef {
    const char *group, *version, *plural, *singular, *kind;
    bool namespaced;
    unsigned verbs;
    const char *short_name;      /* NULL: none */
    bool all;                    /* in the "all" category */
    const char *fields[12];      /* field selector labels besides metadata.name/namespace */
};

#define READ (V_GET | V_LIST | V_WATCH)
#define WRITE (V_CREATE | V_UPDATE | V_PATCH | V_DELETE)

static const struct rdef rdefs[NRES] = {
    [R_NODES] = { "", "v1", "nodes", "node", "Node", false, READ | V_UPDATE | V_PATCH, "no", false,
                  { "spec.unschedulable" } },
    [R_PODS] = { "", "v1", "pods", "pod", "Pod", true, READ | V_DELETE, "po", true,
                 { "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                   "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                   "status.nominatedNodeName" } },
    [R_NAMESPACES] = { "", "v1", "namespaces", "namespace", "Namespace", false, READ, "ns",
                       false, { "status.phase" } },
    [R_PVCS] = { "", "v1", "persistentvolumeclaims", "persistentvolumeclaim",
                 "PersistentVolumeClaim", true, READ, "pvc", false, { NULL } },
    [R_EVENTS] = { "", "v1", "events", "event", "Event", true, READ | WRITE, "ev", false,
                   { "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                     "involvedObject.uid", "involvedObject.apiVersion",
                     "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                     "reportingComponent", "source", "type" } },
    [R_PDBS] = { "policy", "v1", "poddisruptionbudgets", "poddisruptionbudget",
                 "PodDisruptionBudget", true, READ, "pdb", false, { NULL } },
    [R_PRIORITY_CLASSES] = { "scheduling.k8s.io", "v1", "priorityclasses", "priorityclass",
                             "PriorityClass", false, READ, "pc", false, { NULL } },
    [R_LEASES] = { "coordination.k8s.io", "v1", "leases", "lease", "Lease", true, READ | WRITE,
                   NULL, false, { NULL } },
    [R_EVENTS_V1] = { "events.k8s.io", "v1", "events", "event", "Event", true, READ | WRITE,
                      "ev", false,
                      { "regarding.kind", "regarding.namespace", "regarding.name",
                        "regarding.uid", "regarding.apiVersion", "regarding.resourceVersion",
                        "regarding.fieldPath", "reason", "reportingController", "type" } },
    [R_NODE_METRICS] = { "metrics.k8s.io", "v1beta1", "nodes", "", "NodeMetrics", false,
                         V_GET | V_LIST, NULL, false, { NULL } },
    [R_POD_METRICS] = { "metrics.k8s.io", "v1beta1", "pods", "", "PodMetrics", true,
                        V_GET | V_LIST, NULL, false, { NULL } },
    /* Koordinator's CRD (apis/scheduling/v1alpha1): cluster-scoped */
    [R_POD_MIGRATION_JOBS] = { "scheduling.koordinator.sh", "v1alpha1", "podmigrationjobs",
                               "podmigrationjob", "PodMigrationJob", false, READ | WRITE, NULL,
                               false, { NULL } },
};

/* The groups after the core one, in discovery order. */
static const char *const groups[] = { "policy", "scheduling.k8s.io", "coordination.k8s.io",
                                      "events.k8s.io", "metrics.k8s.io",
                                      "scheduling.koordinator.sh" };

/* "pods" or "leases.coordination.k8s.io": how API messages name a resource. */
static void qualified(const struct rdef *d, char *buf, size_t len)
{
    if (d->group[0] == '\0')
        snprintf(buf, len, "%s", d->plural);
    else
        snprintf(buf, len, "%s.%s", d->plural, d->group);
}

static void group_version(const struct rdef *d, char *buf, size_t len)
{
    if (d->group[0] == '\0')
        snprintf(buf, len, "%s", d->version);
    else
        snprintf(buf, len, "%s/%s", d->group, d->version);
}

/* ---- text buffers ------------------------------------------------------------ */

struct sb {
    char *p;
    size_t n, cap;
    bool oom;
};

static void sb_add(struct sb *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        char *p;
        while (cap < b->n + n + 1)
            cap *= 2;
        if ((p = realloc(b->p, cap)) == NULL) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_puts(struct sb *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sb *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(tmp)) {
        sb_add(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (big == NULL) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_add(b, big, (size_t)n);
    free(big);
}

/* ---- objects and their versions ---------------------------------------------- */

/* One version of one object: immutable once made, shared by the store and
 * the event log. Kept as compact JSON text (what lists and watches send)
 * plus what selectors read; parsed again only to change the object. */
struct ver {
    unsigned refs;
    uint64_t rv;
    char *text;                  /* metadata.resourceVersion == rv */
    size_t len;
    char *key;                   /* "ns/name" or "name": the etcd order */
    char *ns, *name, *uid;       /* ns "" for cluster-scoped; uid "" when none */
    struct ebb_labels labels;    /* interned, for label selectors */
    char *fields[12];            /* the values of rdef.fields, for field selectors */
};

static void ver_release(struct ver *v)
{
    if (v == NULL || --v->refs > 0)
        return;
    free(v->text);
    free(v->key);
    free(v->ns);
    free(v->name);
    free(v->uid);
    ebb_labels_free(&v->labels);
    for (size_t i = 0; i < EBB_ARRAY_LEN(v->fields); i++)
        free(v->fields[i]);
    free(v);
}

static struct ver *ver_ref(struct ver *v)
{
    if (v != NULL)
        v->refs++;
    return v;
}

static const char *ver_text(const struct ver *v)
{
    return v->text;
}

/* The object as a tree again (owned by the caller), or NULL. */
static cJSON *ver_json(const struct ver *v)
{
    return cJSON_ParseWithLength(v->text, v->len);
}

static cJSON *obj_meta(cJSON *obj)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(m)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "metadata");
        m = cJSON_AddObjectToObject(obj, "metadata");
    }
    return m;
}

static const char *get_str(const cJSON *obj, const char *key)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

static const char *meta_str(const cJSON *obj, const char *key)
{
    return get_str(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), key);
}

static void set_str(cJSON *obj, const char *key, const char *value)
{
    cJSON *j = cJSON_CreateString(value);

    if (j == NULL)
        return;
    if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL)
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, j);
    else
        cJSON_AddItemToObject(obj, key, j);
}

static void set_item(cJSON *obj, const char *key, cJSON *j)
{
    if (j == NULL)
        return;
    if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL)
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, j);
    else
        cJSON_AddItemToObject(obj, key, j);
}

/* The text of a field as the API's field selectors see it ("" when absent). */
static void field_value(const cJSON *obj, const char *path, char *buf, size_t len)
{
    char part[128];
    const char *p = path;
    const cJSON *j = obj;

    buf[0] = '\0';
    while (j != NULL && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(part))
            return;
        memcpy(part, p, n);
        part[n] = '\0';
        j = cJSON_GetObjectItemCaseSensitive(j, part);
        p += n + (dot ? 1 : 0);
    }
    if (j == NULL)
        return;
    if (cJSON_IsString(j))
        snprintf(buf, len, "%s", j->valuestring);
    else if (cJSON_IsBool(j))
        snprintf(buf, len, "%s", cJSON_IsTrue(j) ? "true" : "false");
    else if (cJSON_IsNumber(j))
        snprintf(buf, len, "%.17g", j->valuedouble);
}

static int labels_of(const cJSON *obj, struct ebb_labels *l)
{
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels"), *it;
    int n = cJSON_IsObject(ls) ? cJSON_GetArraySize(ls) : 0;

    l->n = 0;
    l->kv = NULL;
    if (n == 0)
        return 0;
    if ((l->kv = calloc((size_t)n, sizeof(*l->kv))) == NULL)
        return EBB_ENOMEM;
    cJSON_ArrayForEach(it, ls) {
        if (!cJSON_IsString(it) || it->string == NULL)
            continue;
        l->kv[l->n].key = ebb_str_cstr(it->string);
        l->kv[l->n].value = ebb_str_cstr(it->valuestring);
        if (l->kv[l->n].key == NULL || l->kv[l->n].value == NULL) {
            l->n++;
            return EBB_ENOMEM;
        }
        l->n++;
    }
    return 0;
}

/* A new version of `json` (borrowed: its resourceVersion set, printed,
 * indexed) at rv. NULL when out of memory. */
static struct ver *ver_make_kept(const struct rdef *d, cJSON *json, uint64_t rv)
{
    struct ver *v = calloc(1, sizeof(*v));
    const char *ns, *name, *uid;
    char rvs[24], val[512];
    bool ok;

    if (v == NULL)
        return NULL;
    v->refs = 1;
    v->rv = rv;
    snprintf(rvs, sizeof(rvs), "%" PRIu64, rv);
    set_str(obj_meta(json), "resourceVersion", rvs);
    ns = d->namespaced ? meta_str(json, "namespace") : "";
    name = meta_str(json, "name");
    uid = meta_str(json, "uid");
    v->ns = strdup(ns ? ns : "");
    v->name = strdup(name ? name : "");
    v->uid = strdup(uid ? uid : "");
    ok = v->ns && v->name && v->uid && labels_of(json, &v->labels) == 0;
    for (size_t i = 0; ok && i < EBB_ARRAY_LEN(d->fields) && d->fields[i]; i++) {
        field_value(json, d->fields[i], val, sizeof(val));
        ok = (v->fields[i] = strdup(val)) != NULL;
    }
    if (ok && (v->key = malloc(strlen(v->ns) + strlen(v->name) + 2)) != NULL) {
        if (d->namespaced)
            sprintf(v->key, "%s/%s", v->ns, v->name);
        else
            strcpy(v->key, v->name);
    }
    if (ok && v->key != NULL && (v->text = cJSON_PrintUnformatted(json)) != NULL)
        v->len = strlen(v->text);
    if (v->text == NULL) {
        ver_release(v);
        return NULL;
    }
    return v;
}

/* The same, `json` owned (freed). */
static struct ver *ver_make(const struct rdef *d, cJSON *json, uint64_t rv)
{
    struct ver *v = ver_make_kept(d, json, rv);

    cJSON_Delete(json);
    return v;
}

/* ---- the server -------------------------------------------------------------- */

enum { EV_ADDED, EV_MODIFIED, EV_DELETED };
static const char *const ev_names[] = { "ADDED", "MODIFIED", "DELETED" };

struct ev {
    uint64_t rv;
    int type;
    int res;
    struct ver *obj;             /* the new state; DELETED: the last one, at the delete's rv */
    struct ver *prev;            /* the state before; NULL for ADDED */
};

struct store {
    struct ver **v;              /* sorted by key */
    size_t n, cap;
};

struct opts {
    const char *snapshot;
    char host[64];
    int port;
    double close_watches_every;  /* seconds; 0: never */
    double fail_fraction;
    uint64_t seed;
    long latency_ms;
    long expire_after;           /* events kept; -1: DEFAULT_HISTORY */
    double bookmark_every;       /* seconds */
    bool koordinator;            /* serve Koordinator's PodMigrationJobs */
    double churn_rate;           /* pod events per second; 0: none */
    uint64_t churn_total;        /* stop after this many; 0: never */
};

struct watch;
struct delay;

struct server {
    uv_loop_t *loop;
    struct opts o;
    struct ebb_httpd *httpd;
    char addr[96];
    struct ebb_cache *cache;
    struct ebb_map pdb_state;    /* what evictions took from each PDB */
    struct store stores[NRES];
    uint64_t rv;                 /* the last one given */
    uint64_t compacted;          /* events up to this rv are gone */
    struct ev *log;
    size_t log_cap, log_head, log_n, log_keep;
    struct watch *watches;
    struct delay *delays;
    uv_timer_t bookmark_timer, close_timer;
    uv_signal_t sigint, sigterm;
    uint64_t rng;
    bool has_metrics, stopping;
    bool has_koordinator;        /* --koordinator, or the snapshot has its objects */
    size_t nrequests;
    bool holding;                /* watch events wait in each watch's buffer */
    /* --churn */
    uv_timer_t churn_timer;
    bool churning;
    uint64_t churned, churn_last;    /* events made; uv_now of the last tick */
    double churn_credit;             /* events owed, by the rate */
    char **added;                    /* keys of the pods churn added, oldest first */
    size_t added_head, nadded, added_cap;
    struct churn_pod *pool;          /* the pods churn changes, parsed once */
    size_t npool;
};

struct churn_pod {
    char *key;
    uint64_t rv;                     /* the version `json` is */
    cJSON *json;
};

static uint64_t rng_next(struct server *s)
{
    /* splitmix64: seeded, reproducible across runs */
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rng_unit(struct server *s)
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static void make_uid(struct server *s, char *buf, size_t len)
{
    uint64_t a = rng_next(s), b = rng_next(s);
    snprintf(buf, len, "%08" PRIx64 "-%04" PRIx64 "-4%03" PRIx64 "-%04" PRIx64 "-%012" PRIx64,
             a >> 32, (a >> 16) & 0xffff, a & 0xfff, (b >> 48 & (uint64_t)0x3fff) | (uint64_t)0x8000,
             b & (uint64_t)0xffffffffffff);
}

static void now_rfc3339(char *buf, size_t len)
{
    ebb_time_format((int64_t)time(NULL), buf, len);
}

/* ---- the store ------------------------------------------------------------------ */

/* Index of `key` in the sorted array, or where it would go (*found false). */
static size_t find_key(struct ver *const *v, size_t n, const char *key, bool *found)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(v[mid]->key, key);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static int arr_insert(struct ver ***v, size_t *n, size_t *cap, size_t at, struct ver *x)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        struct ver **p = realloc(*v, c * sizeof(*p));
        if (p == NULL)
            return EBB_ENOMEM;
        *v = p;
        *cap = c;
    }
    memmove(*v + at + 1, *v + at, (*n - at) * sizeof(**v));
    (*v)[at] = x;
    (*n)++;
    return 0;
}

static struct ver *store_get(struct server *s, int res, const char *key)
{
    struct store *st = &s->stores[res];
    bool found;
    size_t i = find_key(st->v, st->n, key, &found);
    return found ? st->v[i] : NULL;
}

static struct ver *store_get2(struct server *s, int res, const char *ns, const char *name)
{
    char key[640];

    if (rdefs[res].namespaced)
        snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
    else
        snprintf(key, sizeof(key), "%s", name);
    return store_get(s, res, key);
}

static void log_drop_oldest(struct server *s)
{
    struct ev *e = &s->log[s->log_head];

    s->compacted = e->rv;
    ver_release(e->obj);
    ver_release(e->prev);
    s->log_head = (s->log_head + 1) % s->log_cap;
    s->log_n--;
}

static struct ev *log_at(struct server *s, size_t i)   /* 0: the oldest */
{
    return &s->log[(s->log_head + i) % s->log_cap];
}

static void notify(struct server *s, const struct ev *e);

/* Record a change: the log keeps references; watchers hear of it. */
static void record(struct server *s, int type, int res, struct ver *obj, struct ver *prev)
{
    struct ev e = { obj->rv, type, res, ver_ref(obj), ver_ref(prev) };

    if (s->log_n == s->log_cap)
        log_drop_oldest(s);
    s->log[(s->log_head + s->log_n) % s->log_cap] = e;
    s->log_n++;
    notify(s, &e);
    while (s->log_n > s->log_keep)
        log_drop_oldest(s);
}

/* Store `json` (owned) as the new state of its object: ADDED or MODIFIED.
 * *out (may be NULL) gets the version, borrowed. */
static int store_put_ver(struct server *s, int res, struct ver *v, struct ver **out);

static int store_put(struct server *s, int res, cJSON *json, struct ver **out)
{
    return store_put_ver(s, res, ver_make(&rdefs[res], json, s->rv + 1), out);
}

/* store_put of a version made at s->rv + 1 (owned; NULL: out of memory). */
static int store_put_ver(struct server *s, int res, struct ver *v, struct ver **out)
{
    struct store *st = &s->stores[res];
    struct ver *prev = NULL;
    bool found;
    size_t i;

    if (v == NULL)
        return EBB_ENOMEM;
    i = find_key(st->v, st->n, v->key, &found);
    if (found) {
        prev = st->v[i];
        st->v[i] = v;
    } else if (arr_insert(&st->v, &st->n, &st->cap, i, v) != 0) {
        ver_release(v);
        return EBB_ENOMEM;
    }
    s->rv++;
    record(s, found ? EV_MODIFIED : EV_ADDED, res, v, prev);
    ver_release(prev);
    if (out != NULL)
        *out = v;
    return 0;
}

/* Remove an object: DELETED, with its last state at a new rv. *out (may be
 * NULL) gets that last version: a reference the caller releases. */
static int store_delete(struct server *s, int res, const char *key, struct ver **out)
{
    struct store *st = &s->stores[res];
    struct ver *prev, *v;
    cJSON *copy;
    bool found;
    size_t i = find_key(st->v, st->n, key, &found);

    if (!found)
        return EBB_ENOENT;
    prev = st->v[i];
    if ((copy = ver_json(prev)) == NULL ||
        (v = ver_make(&rdefs[res], copy, s->rv + 1)) == NULL)
        return EBB_ENOMEM;
    memmove(st->v + i, st->v + i + 1, (st->n - i - 1) * sizeof(*st->v));
    st->n--;
    s->rv++;
    record(s, EV_DELETED, res, v, prev);
    ver_release(prev);
    if (out != NULL)
        *out = v;
    else
        ver_release(v);
    return 0;
}

/* The objects of `res` as they were at `rv` (>= s->compacted): the current
 * ones with the logged changes after rv undone. A malloc'd array of
 * borrowed versions, sorted by key. */
static struct ver **view_at(struct server *s, int res, uint64_t rv, size_t *n)
{
    struct store *st = &s->stores[res];
    struct ver **v;
    size_t cap = st->n + 16, len = st->n;

    if ((v = malloc(cap * sizeof(*v))) == NULL)
        return NULL;
    memcpy(v, st->v, st->n * sizeof(*v));
    for (size_t k = s->log_n; k-- > 0;) {
        struct ev *e = log_at(s, k);
        bool found;
        size_t i;

        if (e->rv <= rv)
            break;
        if (e->res != res)
            continue;
        i = find_key(v, len, e->obj->key, &found);
        if (e->type == EV_ADDED) {
            if (found) {
                memmove(v + i, v + i + 1, (len - i - 1) * sizeof(*v));
                len--;
            }
        } else if (found) {
            v[i] = e->prev;
        } else if (arr_insert(&v, &len, &cap, i, e->prev) != 0) {
            free(v);
            return NULL;
        }
    }
    *n = len;
    return v;
}

/* ---- selectors ------------------------------------------------------------------ */

struct fsel {
    int idx;                     /* FIELD_NAME, FIELD_NS or an index in rdef.fields */
    char *value;
    bool neq;
};

enum { FIELD_NAME = -1, FIELD_NS = -2, FIELD_NONE = -3 };

struct filter {
    char *ns;                    /* NULL: every namespace */
    struct ebb_selector *labels; /* NULL: everything */
    struct fsel *fields;
    size_t nfields;
};

static void filter_free(struct filter *f)
{
    free(f->ns);
    ebb_selector_free(f->labels);
    for (size_t i = 0; i < f->nfields; i++)
        free(f->fields[i].value);
    free(f->fields);
    memset(f, 0, sizeof(*f));
}

static int field_index(const struct rdef *d, const char *f)
{
    if (strcmp(f, "metadata.name") == 0)
        return FIELD_NAME;
    if (d->namespaced && strcmp(f, "metadata.namespace") == 0)
        return FIELD_NS;
    for (size_t i = 0; i < EBB_ARRAY_LEN(d->fields) && d->fields[i]; i++)
        if (strcmp(d->fields[i], f) == 0)
            return (int)i;
    return FIELD_NONE;
}

/* fields.ParseSelector: "a=b,c!=d,e==f"; backslash escapes ',', '=', '!' and
 * itself in values. */
static int parse_fields(const struct rdef *d, const char *s, struct filter *f, char *msg,
                        size_t msglen)
{
    const char *p = s;

    while (*p) {
        char key[256], val[512];
        size_t kn = 0, vn = 0;
        bool neq = false;
        struct fsel *nf;
        int idx;

        while (*p && *p != '=' && *p != '!' && *p != ',' && kn + 1 < sizeof(key))
            key[kn++] = *p++;
        key[kn] = '\0';
        while (kn > 0 && key[kn - 1] == ' ')
            key[--kn] = '\0';
        if (*p == '!' && p[1] == '=') {
            neq = true;
            p += 2;
        } else if (*p == '=') {
            p += p[1] == '=' ? 2 : 1;
        } else {
            snprintf(msg, msglen, "invalid selector: '%s'; can't understand '%s'", s, key);
            return EBB_EPARSE;
        }
        while (*p && *p != ',' && vn + 1 < sizeof(val)) {
            if (*p == '\\' && p[1] != '\0')
                p++;
            val[vn++] = *p++;
        }
        val[vn] = '\0';
        if (*p == ',')
            p++;
        if ((idx = field_index(d, key)) == FIELD_NONE) {
            snprintf(msg, msglen, "field label not supported: %s", key);
            return EBB_ESCHEMA;
        }
        if ((nf = realloc(f->fields, (f->nfields + 1) * sizeof(*nf))) == NULL)
            return EBB_ENOMEM;
        f->fields = nf;
        nf = &f->fields[f->nfields];
        nf->idx = idx;
        nf->value = strdup(val);
        nf->neq = neq;
        f->nfields++;
        if (nf->value == NULL)
            return EBB_ENOMEM;
    }
    return 0;
}

static bool filter_match(const struct filter *f, const struct ver *v)
{
    if (f->ns != NULL && strcmp(f->ns, v->ns) != 0)
        return false;
    for (size_t i = 0; i < f->nfields; i++) {
        const struct fsel *fs = &f->fields[i];
        const char *val = fs->idx == FIELD_NAME ? v->name
                        : fs->idx == FIELD_NS   ? v->ns
                        : v->fields[fs->idx] ? v->fields[fs->idx] : "";
        if ((strcmp(val, fs->value) == 0) == fs->neq)
            return false;
    }
    return f->labels == NULL || ebb_selector_matches(f->labels, &v->labels);
}

/* ---- answers -------------------------------------------------------------------- */

static void reply_text(struct ebb_http_req *r, int code, const char *text)
{
    ebb_http_respond(r, code, JSON, text, strlen(text));
}

/* A metav1.Status. `details` (owned, may be NULL). */
static void reply_status(struct ebb_http_req *r, int code, const char *reason, const char *msg,
                         cJSON *details)
{
    cJSON *st = cJSON_CreateObject();
    char *text;

    cJSON_AddStringToObject(st, "kind", "Status");
    cJSON_AddStringToObject(st, "apiVersion", "v1");
    cJSON_AddObjectToObject(st, "metadata");
    cJSON_AddStringToObject(st, "status", code < 400 ? "Success" : "Failure");
    if (msg != NULL)
        cJSON_AddStringToObject(st, "message", msg);
    if (reason != NULL)
        cJSON_AddStringToObject(st, "reason", reason);
    if (details != NULL)
        cJSON_AddItemToObject(st, "details", details);
    cJSON_AddNumberToObject(st, "code", code);
    text = cJSON_PrintUnformatted(st);
    cJSON_Delete(st);
    if (text == NULL) {
        ebb_http_respond(r, 500, NULL, NULL, 0);
        return;
    }
    reply_text(r, code, text);
    free(text);
}

static cJSON *details_for(const struct rdef *d, const char *name)
{
    cJSON *det = cJSON_CreateObject();

    if (name != NULL)
        cJSON_AddStringToObject(det, "name", name);
    if (d->group[0] != '\0')
        cJSON_AddStringToObject(det, "group", d->group);
    cJSON_AddStringToObject(det, "kind", d->plural);
    return det;
}

static void reply_not_found(struct ebb_http_req *r, const struct rdef *d, const char *name)
{
    char q[128], msg[768];

    qualified(d, q, sizeof(q));
    snprintf(msg, sizeof(msg), "%s \"%s\" not found", q, name);
    reply_status(r, 404, "NotFound", msg, details_for(d, name));
}

static void reply_bad_request(struct ebb_http_req *r, const char *msg)
{
    reply_status(r, 400, "BadRequest", msg, NULL);
}

static void reply_conflict(struct ebb_http_req *r, const struct rdef *d, const char *name,
                           const char *why)
{
    char q[128], msg[1024];

    qualified(d, q, sizeof(q));
    snprintf(msg, sizeof(msg), "Operation cannot be fulfilled on %s \"%s\": %s", q, name, why);
    reply_status(r, 409, "Conflict", msg, details_for(d, name));
}

static void reply_internal(struct ebb_http_req *r, const char *why)
{
    char msg[512];
    cJSON *det = cJSON_CreateObject(), *causes = cJSON_AddArrayToObject(det, "causes"),
          *c = cJSON_CreateObject();

    cJSON_AddStringToObject(c, "message", why);
    cJSON_AddItemToArray(causes, c);
    snprintf(msg, sizeof(msg), "Internal error occurred: %s", why);
    reply_status(r, 500, "InternalError", msg, det);
}

static void reply_method_not_allowed(struct ebb_http_req *r)
{
    reply_status(r, 405, "MethodNotAllowed",
                 "the server does not allow this method on the requested resource", NULL);
}

static void reply_no_resource(struct ebb_http_req *r)
{
    reply_status(r, 404, "NotFound", "the server could not find the requested resource",
                 cJSON_CreateObject());
}

static void reply_json(struct ebb_http_req *r, int code, cJSON *j)
{
    char *text = cJSON_PrintUnformatted(j);

    cJSON_Delete(j);
    if (text == NULL) {
        reply_internal(r, "out of memory");
        return;
    }
    reply_text(r, code, text);
    free(text);
}

/* ---- discovery ---------------------------------------------------------------------- */

static bool res_served(const struct server *s, int res)
{
    if (strcmp(rdefs[res].group, "scheduling.koordinator.sh") == 0)
        return s->has_koordinator;
    return strcmp(rdefs[res].group, "metrics.k8s.io") != 0 || s->has_metrics;
}

static bool group_served(const struct server *s, const char *g)
{
    for (int i = 0; i < NRES; i++)
        if (strcmp(rdefs[i].group, g) == 0 && res_served(s, i))
            return true;
    return false;
}

static const char *group_version_of(const char *g)
{
    for (int i = 0; i < NRES; i++)
        if (strcmp(rdefs[i].group, g) == 0)
            return rdefs[i].version;
    return "v1";
}

static cJSON *group_doc(const char *g, bool kind)
{
    cJSON *o = cJSON_CreateObject(), *vs, *v, *pv;
    char gv[128];

    snprintf(gv, sizeof(gv), "%s/%s", g, group_version_of(g));
    if (kind) {
        cJSON_AddStringToObject(o, "kind", "APIGroup");
        cJSON_AddStringToObject(o, "apiVersion", "v1");
    }
    cJSON_AddStringToObject(o, "name", g);
    vs = cJSON_AddArrayToObject(o, "versions");
    v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "groupVersion", gv);
    cJSON_AddStringToObject(v, "version", group_version_of(g));
    cJSON_AddItemToArray(vs, v);
    pv = cJSON_AddObjectToObject(o, "preferredVersion");
    cJSON_AddStringToObject(pv, "groupVersion", gv);
    cJSON_AddStringToObject(pv, "version", group_version_of(g));
    return o;
}

static void add_verbs(cJSON *o, unsigned verbs)
{
    static const struct { unsigned bit; const char *name; } names[] = {
        { V_CREATE, "create" }, { V_DELETE, "delete" }, { V_GET, "get" }, { V_LIST, "list" },
        { V_PATCH, "patch" }, { V_UPDATE, "update" }, { V_WATCH, "watch" },
    };
    cJSON *a = cJSON_AddArrayToObject(o, "verbs");

    for (size_t i = 0; i < EBB_ARRAY_LEN(names); i++)
        if (verbs & names[i].bit)
            cJSON_AddItemToArray(a, cJSON_CreateString(names[i].name));
}

static cJSON *resource_list(const struct server *s, const char *g)
{
    cJSON *o = cJSON_CreateObject(), *rs;
    char gv[128];

    if (g[0] == '\0')
        snprintf(gv, sizeof(gv), "v1");
    else
        snprintf(gv, sizeof(gv), "%s/%s", g, group_version_of(g));
    cJSON_AddStringToObject(o, "kind", "APIResourceList");
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "groupVersion", gv);
    rs = cJSON_AddArrayToObject(o, "resources");
    for (int i = 0; i < NRES; i++) {
        const struct rdef *d = &rdefs[i];
        cJSON *e;

        if (strcmp(d->group, g) != 0 || !res_served(s, i))
            continue;
        e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", d->plural);
        cJSON_AddStringToObject(e, "singularName", d->singular);
        cJSON_AddBoolToObject(e, "namespaced", d->namespaced);
        cJSON_AddStringToObject(e, "kind", d->kind);
        add_verbs(e, d->verbs);
        if (d->short_name != NULL)
            cJSON_AddItemToObject(e, "shortNames", cJSON_CreateStringArray(&d->short_name, 1));
        if (d->all) {
            const char *all = "all";
            cJSON_AddItemToObject(e, "categories", cJSON_CreateStringArray(&all, 1));
        }
        cJSON_AddItemToArray(rs, e);
        if (i == R_PODS) {
            /* the eviction subresource: a policy/v1 Eviction posted to pods/NAME/eviction */
            e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", "pods/eviction");
            cJSON_AddStringToObject(e, "singularName", "pod");
            cJSON_AddBoolToObject(e, "namespaced", true);
            cJSON_AddStringToObject(e, "group", "policy");
            cJSON_AddStringToObject(e, "version", "v1");
            cJSON_AddStringToObject(e, "kind", "Eviction");
            add_verbs(e, V_CREATE);
            cJSON_AddItemToArray(rs, e);
        }
    }
    return o;
}

static void reply_version(struct ebb_http_req *r)
{
    static const char text[] =
        "{\"major\":\"1\",\"minor\":\"32\",\"gitVersion\":\"v1.32.0\",\"gitCommit\":\"ebb-serve-"
        EBB_VERSION "\",\"gitTreeState\":\"clean\",\"buildDate\":\"2026-01-01T00:00:00Z\","
        "\"goVersion\":\"go1.23.0\",\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}";
    reply_text(r, 200, text);
}

static void reply_api_versions(struct server *s, struct ebb_http_req *r)
{
    cJSON *o = cJSON_CreateObject(), *a, *e;
    const char *v1 = "v1";

    cJSON_AddStringToObject(o, "kind", "APIVersions");
    cJSON_AddItemToObject(o, "versions", cJSON_CreateStringArray(&v1, 1));
    a = cJSON_AddArrayToObject(o, "serverAddressByClientCIDRs");
    e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "clientCIDR", "0.0.0.0/0");
    cJSON_AddStringToObject(e, "serverAddress", s->addr);
    cJSON_AddItemToArray(a, e);
    reply_json(r, 200, o);
}

static void reply_group_list(struct server *s, struct ebb_http_req *r)
{
    cJSON *o = cJSON_CreateObject(), *a;

    cJSON_AddStringToObject(o, "kind", "APIGroupList");
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    a = cJSON_AddArrayToObject(o, "groups");
    for (size_t i = 0; i < EBB_ARRAY_LEN(groups); i++)
        if (group_served(s, groups[i]))
            cJSON_AddItemToArray(a, group_doc(groups[i], false));
    reply_json(r, 200, o);
}

/* ---- routes ---------------------------------------------------------------------------- */

struct route {
    int res;
    const char *ns, *name, *sub;   /* NULL when absent */
    bool watch_path;               /* /watch/... */
};

/* Split the path into at most 12 segments (in `buf`). */
static int split_path(const char *path, char *buf, size_t len, char **seg, int max)
{
    int n = 0;
    char *p;

    snprintf(buf, len, "%s", path);
    for (p = strtok(buf, "/"); p != NULL; p = strtok(NULL, "/")) {
        if (n == max)
            return -1;
        seg[n++] = p;
    }
    return n;
}

static int find_res(const struct server *s, const char *group, const char *version,
                    const char *plural)
{
    for (int i = 0; i < NRES; i++)
        if (strcmp(rdefs[i].group, group) == 0 && strcmp(rdefs[i].version, version) == 0 &&
            strcmp(rdefs[i].plural, plural) == 0 && res_served(s, i))
            return i;
    return -1;
}

/* seg[0..n) after the group/version prefix -> route. */
static bool parse_resource_path(const struct server *s, const char *group, const char *version,
                                char **seg, int n, struct route *rt)
{
    memset(rt, 0, sizeof(*rt));
    rt->res = -1;
    if (n > 0 && strcmp(seg[0], "watch") == 0) {
        rt->watch_path = true;
        seg++;
        n--;
    }
    if (n >= 3 && strcmp(seg[0], "namespaces") == 0) {
        rt->ns = seg[1];
        seg += 2;
        n -= 2;
        if ((rt->res = find_res(s, group, version, seg[0])) < 0 || !rdefs[rt->res].namespaced)
            return false;
    } else if (n >= 1) {
        if ((rt->res = find_res(s, group, version, seg[0])) < 0)
            return false;
    } else {
        return false;
    }
    if (n >= 2)
        rt->name = seg[1];
    if (n >= 3)
        rt->sub = seg[2];
    if (n > 3 || (rt->watch_path && rt->sub != NULL))
        return false;
    return true;
}

/* ---- list ---------------------------------------------------------------------------- */

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64_encode(const char *in, size_t n, struct sb *out)
{
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
        char q[4];
        size_t k = 2;
        if (i + 1 < n) {
            v |= (uint32_t)(unsigned char)in[i + 1] << 8;
            k = 3;
        }
        if (i + 2 < n) {
            v |= (unsigned char)in[i + 2];
            k = 4;
        }
        q[0] = b64url[v >> 18 & 63];
        q[1] = b64url[v >> 12 & 63];
        q[2] = b64url[v >> 6 & 63];
        q[3] = b64url[v & 63];
        sb_add(out, q, k);
    }
}

static int b64_decode(const char *in, struct sb *out)
{
    uint32_t v = 0;
    int bits = 0;

    for (; *in && *in != '='; in++) {
        const char *p = strchr(b64url, *in);
        if (p == NULL || *in == '\0')
            return EBB_EPARSE;
        v = v << 6 | (uint32_t)(p - b64url);
        bits += 6;
        if (bits >= 8) {
            char ch = (char)(v >> (bits - 8) & 0xff);
            bits -= 8;
            sb_add(out, &ch, 1);
        }
    }
    return out->oom ? EBB_ENOMEM : 0;
}

/* {"v":"meta.k8s.io/v1","rv":N,"start":"KEY"}: what etcd3's store encodes,
 * minus the trailing NUL (the list goes on strictly after KEY). */
static void continue_token(uint64_t rv, const char *key, struct sb *out)
{
    cJSON *o = cJSON_CreateObject();
    char *text;

    cJSON_AddStringToObject(o, "v", "meta.k8s.io/v1");
    cJSON_AddNumberToObject(o, "rv", (double)rv);
    cJSON_AddStringToObject(o, "start", key);
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (text != NULL)
        b64_encode(text, strlen(text), out);
    free(text);
}

static int parse_continue(const char *tok, uint64_t *rv, char *key, size_t keylen)
{
    struct sb raw = { 0 };
    cJSON *o;
    const cJSON *v, *r, *st;
    int rc = EBB_EPARSE;

    if (b64_decode(tok, &raw) != 0 || raw.p == NULL) {
        free(raw.p);
        return EBB_EPARSE;
    }
    o = cJSON_ParseWithLength(raw.p, raw.n);
    free(raw.p);
    v = cJSON_GetObjectItemCaseSensitive(o, "v");
    r = cJSON_GetObjectItemCaseSensitive(o, "rv");
    st = cJSON_GetObjectItemCaseSensitive(o, "start");
    if (cJSON_IsString(v) && strcmp(v->valuestring, "meta.k8s.io/v1") == 0 && cJSON_IsNumber(r) &&
        r->valuedouble >= 1 && cJSON_IsString(st)) {
        *rv = (uint64_t)r->valuedouble;
        snprintf(key, keylen, "%s", st->valuestring);
        rc = 0;
    }
    cJSON_Delete(o);
    return rc;
}

static int parse_rv(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (s == NULL || *s < '0' || *s > '9')
        return EBB_EPARSE;
    v = strtoull(s, &end, 10);
    if (*end != '\0')
        return EBB_EPARSE;
    *out = v;
    return 0;
}

/* Label and field selectors of a request, plus the route's namespace and
 * name. false: answered (400). */
static bool request_filter(struct ebb_http_req *r, const struct route *rt, struct filter *f)
{
    const struct rdef *d = &rdefs[rt->res];
    const char *ls = ebb_http_req_query(r, "labelSelector");
    const char *fs = ebb_http_req_query(r, "fieldSelector");
    char msg[900];
    int rc;

    memset(f, 0, sizeof(*f));
    if (rt->ns != NULL && (f->ns = strdup(rt->ns)) == NULL)
        goto oom;
    if (ls != NULL && ls[0] != '\0') {
        struct ebb_error err = { 0 };
        if (ebb_selector_parse(ls, &f->labels, &err) != 0) {
            reply_bad_request(r, err.msg);
            filter_free(f);
            return false;
        }
    }
    if (fs != NULL && (rc = parse_fields(d, fs, f, msg, sizeof(msg))) != 0) {
        if (rc == EBB_ENOMEM)
            goto oom;
        reply_bad_request(r, msg);
        filter_free(f);
        return false;
    }
    if (rt->name != NULL) {
        /* /watch/.../NAME or NAME?watch=1: a watch of one object */
        struct fsel *nf = realloc(f->fields, (f->nfields + 1) * sizeof(*nf));
        if (nf == NULL)
            goto oom;
        f->fields = nf;
        nf[f->nfields].idx = FIELD_NAME;
        nf[f->nfields].neq = false;
        if ((nf[f->nfields].value = strdup(rt->name)) == NULL)
            goto oom;
        f->nfields++;
    }
    return true;
oom:
    filter_free(f);
    reply_internal(r, "out of memory");
    return false;
}

static const char expired_continue[] =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list.";

static void reply_too_large_rv(struct ebb_http_req *r, uint64_t want, uint64_t have)
{
    char msg[160];
    cJSON *det = cJSON_CreateObject(), *causes = cJSON_AddArrayToObject(det, "causes"),
          *c = cJSON_CreateObject();

    snprintf(msg, sizeof(msg), "Too large resource version: %" PRIu64 ", current: %" PRIu64,
             want, have);
    cJSON_AddStringToObject(c, "reason", "ResourceVersionTooLarge");
    cJSON_AddStringToObject(c, "message", "Too large resource version");
    cJSON_AddItemToArray(causes, c);
    cJSON_AddNumberToObject(det, "retryAfterSeconds", 1);
    ebb_http_add_header(r, "Retry-After", "1");
    reply_status(r, 504, "Timeout", msg, det);
}

static void do_list(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &rdefs[rt->res];
    const char *tok = ebb_http_req_query(r, "continue");
    const char *rvq = ebb_http_req_query(r, "resourceVersion");
    const char *match = ebb_http_req_query(r, "resourceVersionMatch");
    const char *lim = ebb_http_req_query(r, "limit");
    struct filter f;
    struct ver **view = NULL;
    struct sb out = { 0 };
    char start[640] = "", gv[128];
    uint64_t at = s->rv, want;
    size_t n = 0, i, sent = 0, limit = 0;
    bool found, more = false, owned_view = false;
    long long l;

    if (lim != NULL && lim[0] != '\0') {
        char *end;
        l = strtoll(lim, &end, 10);
        if (*end == '\0' && l > 0)
            limit = (size_t)l;
    }
    if (tok != NULL && tok[0] != '\0') {
        if (parse_continue(tok, &at, start, sizeof(start)) != 0) {
            reply_bad_request(r, "continue key is not valid: the continue token is malformed");
            return;
        }
        if (at < s->compacted) {
            reply_status(r, 410, "Expired", expired_continue, NULL);
            return;
        }
        if (at > s->rv)
            at = s->rv;
    } else if (rvq != NULL && rvq[0] != '\0' && strcmp(rvq, "0") != 0) {
        if (parse_rv(rvq, &want) != 0) {
            char msg[200];
            snprintf(msg, sizeof(msg), "invalid resource version: %.100s", rvq);
            reply_bad_request(r, msg);
            return;
        }
        if (want > s->rv) {
            reply_too_large_rv(r, want, s->rv);
            return;
        }
        if (match != NULL && strcmp(match, "Exact") == 0) {
            if (want < s->compacted) {
                reply_status(r, 410, "Expired",
                             "The resourceVersion for the provided list is too old.", NULL);
                return;
            }
            at = want;
        }
    }
    if (!request_filter(r, rt, &f))
        return;
    if (at == s->rv) {
        view = s->stores[rt->res].v;
        n = s->stores[rt->res].n;
    } else {
        if ((view = view_at(s, rt->res, at, &n)) == NULL) {
            filter_free(&f);
            reply_internal(r, "out of memory");
            return;
        }
        owned_view = true;
    }
    group_version(d, gv, sizeof(gv));
    i = 0;
    if (start[0] != '\0') {
        i = find_key(view, n, start, &found);
        if (found)
            i++;
    }
    sb_printf(&out, "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",\"metadata\":{", d->kind, gv);
    struct sb items = { 0 };
    const char *last = NULL;
    for (; i < n; i++) {
        if (!filter_match(&f, view[i]))
            continue;
        if (limit > 0 && sent == limit) {
            more = true;
            break;
        }
        if (sent++ > 0)
            sb_add(&items, ",", 1);
        sb_puts(&items, ver_text(view[i]));
        last = view[i]->key;
    }
    sb_printf(&out, "\"resourceVersion\":\"%" PRIu64 "\"", at);
    if (more && last != NULL) {
        sb_puts(&out, ",\"continue\":\"");
        continue_token(at, last, &out);
        sb_puts(&out, "\"");
        if (f.labels == NULL && f.nfields == 0)
            sb_printf(&out, ",\"remainingItemCount\":%zu", n - i);
    }
    sb_puts(&out, "},\"items\":[");
    if (items.n > 0)
        sb_add(&out, items.p, items.n);
    sb_puts(&out, "]}");
    free(items.p);
    filter_free(&f);
    if (owned_view)
        free(view);
    if (out.oom || items.oom)
        reply_internal(r, "out of memory");
    else
        ebb_http_respond(r, 200, JSON, out.p, out.n);
    free(out.p);
}

/* ---- watch ------------------------------------------------------------------------------- */

struct watch {
    uv_timer_t timer;            /* timeoutSeconds; first: the close callback frees */
    struct server *s;
    struct ebb_http_req *req;    /* NULL once ended or gone */
    int res;
    struct filter f;
    bool bookmarks;
    struct sb held;              /* events held while s->holding, sent in one write */
    struct watch *prev, *next;
};

static void on_watch_timer_closed(uv_handle_t *h)
{
    struct watch *w = h->data;
    filter_free(&w->f);
    free(w->held.p);
    free(w);
}

/* Forget a watch whose request is over (ended or gone). */
static void watch_free(struct watch *w)
{
    struct server *s = w->s;

    if (w->prev != NULL)
        w->prev->next = w->next;
    else if (s->watches == w)
        s->watches = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    w->req = NULL;
    uv_close((uv_handle_t *)&w->timer, on_watch_timer_closed);
}

/* End the stream cleanly (timeout, --close-watches-every). */
static void watch_end(struct watch *w)
{
    if (w->req != NULL)
        ebb_http_stream_end(w->req);
    watch_free(w);
}

static void on_watch_gone(struct ebb_http_req *req, void *ud)
{
    (void)req;
    watch_free(ud);
}

/* One event line. false: the client is gone (the watch is freed). While
 * the server holds events, the line waits in w->held (watch_flush). */
static bool watch_send(struct watch *w, const char *type, const char *obj)
{
    struct sb b = { 0 };
    int rc;

    if (w->s->holding) {
        sb_printf(&w->held, "{\"type\":\"%s\",\"object\":", type);
        sb_puts(&w->held, obj);
        sb_puts(&w->held, "}\n");
        return true;
    }
    sb_printf(&b, "{\"type\":\"%s\",\"object\":", type);
    sb_puts(&b, obj);
    sb_puts(&b, "}\n");
    rc = b.oom ? EBB_ENOMEM : ebb_http_stream_write(w->req, b.p, b.n);
    free(b.p);
    if (rc != 0) {
        if (rc == EBB_ENOMEM)
            ebb_http_req_abort(w->req);
        watch_free(w);
        return false;
    }
    return true;
}

/* Send what was held. false: the client is gone (the watch is freed). */
static bool watch_flush(struct watch *w)
{
    int rc;

    if (w->held.n == 0 && !w->held.oom)
        return true;
    rc = w->held.oom ? EBB_ENOMEM : ebb_http_stream_write(w->req, w->held.p, w->held.n);
    w->held.n = 0;
    w->held.oom = false;
    if (rc != 0) {
        if (rc == EBB_ENOMEM)
            ebb_http_req_abort(w->req);
        watch_free(w);
        return false;
    }
    return true;
}

static bool watch_bookmark(struct watch *w, bool initial_end)
{
    const struct rdef *d = &rdefs[w->res];
    char gv[128], obj[512];

    group_version(d, gv, sizeof(gv));
    snprintf(obj, sizeof(obj),
             "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%" PRIu64
             "\",\"creationTimestamp\":null%s}}",
             d->kind, gv, w->s->rv,
             initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}" : "");
    return watch_send(w, "BOOKMARK", obj);
}

/* What a change looks like through a watch's filter (-1: nothing). */
static int seen_as(const struct watch *w, const struct ev *e)
{
    bool now = filter_match(&w->f, e->obj);
    bool before = e->type == EV_MODIFIED && filter_match(&w->f, e->prev);

    switch (e->type) {
    case EV_ADDED: return now ? EV_ADDED : -1;
    case EV_DELETED: return now ? EV_DELETED : -1;
    default:
        if (now)
            return before ? EV_MODIFIED : EV_ADDED;
        return before ? EV_DELETED : -1;
    }
}

static bool watch_event(struct watch *w, const struct ev *e)
{
    int t = seen_as(w, e);
    return t < 0 || watch_send(w, ev_names[t], ver_text(e->obj));
}

static void notify(struct server *s, const struct ev *e)
{
    struct watch *w, *next;

    for (w = s->watches; w != NULL; w = next) {
        next = w->next;
        if (w->res == e->res && w->req != NULL)
            watch_event(w, e);
    }
}

static void on_watch_timeout(uv_timer_t *t)
{
    watch_end(t->data);
}

/* A watch that cannot start: one ERROR event with the Status, then the end
 * of the stream (the cacher's error watcher). */
static void reply_watch_error(struct ebb_http_req *r, const char *status)
{
    struct sb b = { 0 };

    sb_puts(&b, "{\"type\":\"ERROR\",\"object\":");
    sb_puts(&b, status);
    sb_puts(&b, "}\n");
    if (b.oom) {
        ebb_http_respond(r, 500, NULL, NULL, 0);
    } else if (ebb_http_stream_begin(r, 200, JSON) == 0 &&
               ebb_http_stream_write(r, b.p, b.n) == 0) {
        ebb_http_stream_end(r);
    }
    free(b.p);
}

static void reply_watch_expired(struct ebb_http_req *r, uint64_t want, uint64_t oldest)
{
    char st[400];

    snprintf(st, sizeof(st),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"too old resource version: %" PRIu64 " (%" PRIu64 ")\","
             "\"reason\":\"Expired\",\"code\":410}",
             want, oldest);
    reply_watch_error(r, st);
}

static void reply_watch_too_large(struct ebb_http_req *r, uint64_t want, uint64_t have)
{
    char st[600];

    snprintf(st, sizeof(st),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"Too large resource version: %" PRIu64 ", current: %" PRIu64 "\","
             "\"reason\":\"Timeout\",\"details\":{\"causes\":[{\"reason\":"
             "\"ResourceVersionTooLarge\",\"message\":\"Too large resource version\"}],"
             "\"retryAfterSeconds\":1},\"code\":504}",
             want, have);
    reply_watch_error(r, st);
}

/* ---- churn (--churn) ----------------------------------------------------------------- */

/* Pod events for benchmarks of a watcher's ingest: of every 20, one pod is
 * added (a copy of an existing one under a new name and uid), one that was
 * added is deleted (oldest first; the pods as loaded stay), and the others
 * change one of CHURN_POOL pods picked at random when the churn starts: a
 * label, an annotation or a container's restart count in turn. Each is a
 * new version with the next resourceVersion, sent to the watchers like
 * any change; a tick's events go out in one write per watcher. The pool
 * keeps its pods parsed (a pod changed meanwhile by a client is parsed
 * again), so making an event costs printing it. Generation waits while a
 * pods watcher has more than CHURN_LAG bytes it has not read: the rate is a
 * ceiling, the watchers' reading the pace. */
#define CHURN_TICK_MS 10
#define CHURN_LAG (8u << 20)   /* more than a tick's worth read at 20,000+ events/s: the watcher never waits for a tick */
#define CHURN_MAX_PER_TICK 4000
#define CHURN_POOL 4096

static bool churn_lagging(struct server *s)
{
    for (struct watch *w = s->watches; w != NULL; w = w->next)
        if (w->res == R_PODS && w->req != NULL && ebb_http_stream_unsent(w->req) > CHURN_LAG)
            return true;
    return false;
}

static cJSON *child_object(cJSON *obj, const char *key)
{
    cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (cJSON_IsObject(j))
        return j;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    return cJSON_AddObjectToObject(obj, key);
}

/* Pool entry `cp` as the store has it now: parsed again when a client
 * changed or deleted it (then another pod takes the place). NULL: none. */
static cJSON *churn_pod(struct server *s, struct churn_pod *cp)
{
    struct ver *cur = store_get(s, R_PODS, cp->key);

    if (cur != NULL && cur->rv == cp->rv && cp->json != NULL)
        return cp->json;
    if (cur == NULL) {
        struct store *st = &s->stores[R_PODS];
        char *key;
        if (st->n == 0 || (key = strdup((cur = st->v[rng_next(s) % st->n])->key)) == NULL)
            return NULL;
        free(cp->key);
        cp->key = key;
    }
    cJSON_Delete(cp->json);
    cp->json = ver_json(cur);
    cp->rv = cur->rv;
    return cp->json;
}

static void churn_free(struct server *s)
{
    for (size_t i = 0; i < s->npool; i++) {
        free(s->pool[i].key);
        cJSON_Delete(s->pool[i].json);
    }
    free(s->pool);
    s->pool = NULL;
    s->npool = 0;
    for (size_t i = 0; i < s->nadded; i++)
        free(s->added[(s->added_head + i) % s->added_cap]);
    free(s->added);
    s->added = NULL;
    s->nadded = 0;
}

static void churn_add(struct server *s, const struct ver *from, uint64_t n)
{
    cJSON *obj = ver_json(from), *meta;
    char name[320], uid[40], ts[40];
    struct ver *v;

    if (obj == NULL)
        return;
    if (s->nadded == s->added_cap) {
        size_t cap = s->added_cap ? s->added_cap * 2 : 64;
        char **a = malloc(cap * sizeof(*a));
        if (a == NULL) {
            cJSON_Delete(obj);
            return;
        }
        for (size_t i = 0; i < s->nadded; i++)
            a[i] = s->added[(s->added_head + i) % s->added_cap];
        free(s->added);
        s->added = a;
        s->added_head = 0;
        s->added_cap = cap;
    }
    meta = obj_meta(obj);
    snprintf(name, sizeof(name), "%.200s-churn-%" PRIu64, from->name, n);
    make_uid(s, uid, sizeof(uid));
    now_rfc3339(ts, sizeof(ts));
    set_str(meta, "name", name);
    set_str(meta, "uid", uid);
    set_str(meta, "creationTimestamp", ts);
    if (store_put(s, R_PODS, obj, &v) == 0 &&
        (s->added[(s->added_head + s->nadded) % s->added_cap] = strdup(v->key)) != NULL)
        s->nadded++;
}

static void churn_delete(struct server *s)
{
    char *key;

    if (s->nadded == 0)
        return;
    key = s->added[s->added_head];
    s->added_head = (s->added_head + 1) % s->added_cap;
    s->nadded--;
    store_delete(s, R_PODS, key, NULL);   /* gone already (deleted by a client): nothing */
    free(key);
}

/* `text` with the value after its first `needle` replaced by `value`: a
 * string (quoted; the values churn replaces hold no escapes) or a number.
 * NULL when the needle is not there. */
static char *text_with(const char *text, size_t len, const char *needle, bool quoted,
                       const char *value, size_t *outlen)
{
    const char *at = strstr(text, needle), *end;
    size_t vl = strlen(value);
    char *t;

    if (at == NULL)
        return NULL;
    at += strlen(needle);
    if (quoted) {
        if ((end = strchr(at, '"')) == NULL)
            return NULL;
    } else {
        for (end = at; *end >= '0' && *end <= '9'; end++)
            ;
        if (end == at)
            return NULL;
    }
    *outlen = (size_t)(at - text) + vl + (len - (size_t)(end - text));
    if ((t = malloc(*outlen + 1)) == NULL)
        return NULL;
    memcpy(t, text, (size_t)(at - text));
    memcpy(t + (at - text), value, vl);
    memcpy(t + (at - text) + vl, end, len - (size_t)(end - text));
    t[*outlen] = '\0';
    return t;
}

/* The next version of `prev` whose text is `text` (owned): what selectors
 * read is prev's, but for the label `lkey` set to `lval` (NULL: none). */
static struct ver *ver_derive(const struct ver *prev, char *text, size_t len, uint64_t rv,
                              const char *lkey, const char *lval)
{
    struct ver *v = calloc(1, sizeof(*v));
    bool ok;

    if (v == NULL) {
        free(text);
        return NULL;
    }
    v->refs = 1;
    v->rv = rv;
    v->text = text;
    v->len = len;
    ok = (v->key = strdup(prev->key)) && (v->ns = strdup(prev->ns)) &&
         (v->name = strdup(prev->name)) && (v->uid = strdup(prev->uid));
    for (size_t i = 0; ok && i < EBB_ARRAY_LEN(prev->fields); i++)
        ok = prev->fields[i] == NULL || (v->fields[i] = strdup(prev->fields[i])) != NULL;
    if (ok && (v->labels.kv = calloc(prev->labels.n + 1, sizeof(*v->labels.kv))) == NULL)
        ok = false;
    for (uint32_t i = 0; ok && i < prev->labels.n; i++) {
        v->labels.kv[i].key = ebb_str_ref(prev->labels.kv[i].key);
        v->labels.kv[i].value = ebb_str_ref(prev->labels.kv[i].value);
        v->labels.n++;
    }
    if (ok && lkey != NULL) {
        ebb_str k = ebb_str_cstr(lkey), val = ebb_str_cstr(lval);
        uint32_t i = 0;
        while (i < v->labels.n && v->labels.kv[i].key != k)
            i++;
        if (k == NULL || val == NULL) {
            ebb_str_release(k);
            ebb_str_release(val);
            ok = false;
        } else if (i < v->labels.n) {
            ebb_str_release(k);
            ebb_str_release(v->labels.kv[i].value);
            v->labels.kv[i].value = val;
        } else {
            v->labels.kv[v->labels.n++] = (struct ebb_kv){ k, val };
        }
    }
    if (!ok) {
        ver_release(v);
        return NULL;
    }
    return v;
}

/* A change to pod `cur` made on its text: the resourceVersion and one
 * value replaced. 1 when the text lacks what to replace (the label or
 * annotation is not there yet): then the caller changes the parsed pod. */
static int churn_edit(struct server *s, const struct ver *cur, uint64_t n, struct ver **out)
{
    static const char *const needles[] = { "\"ebb.dev/churn\":\"", "\"ebb.dev/churn-note\":\"",
                                           "\"restartCount\":" };
    char rvs[24], val[32], *t1, *t2;
    size_t l1, l2;
    int k = (int)(n % 3);

    snprintf(rvs, sizeof(rvs), "%" PRIu64, s->rv + 1);
    if (k == 2) {
        const char *at = strstr(cur->text, needles[2]);
        snprintf(val, sizeof(val), "%ld", at ? strtol(at + strlen(needles[2]), NULL, 10) + 1 : 0L);
    } else {
        snprintf(val, sizeof(val), "%" PRIu64, n);
    }
    if ((t1 = text_with(cur->text, cur->len, needles[k], k != 2, val, &l1)) == NULL)
        return 1;
    t2 = text_with(t1, l1, "\"resourceVersion\":\"", true, rvs, &l2);
    free(t1);
    if (t2 == NULL)
        return 1;
    *out = ver_derive(cur, t2, l2, s->rv + 1, k == 0 ? "ebb.dev/churn" : NULL, val);
    return 0;
}

static void churn_one(struct server *s)
{
    struct store *st = &s->stores[R_PODS];
    uint64_t n = s->churned++;
    struct churn_pod *cp;
    struct ver *v;
    cJSON *obj, *cs, *c0, *rc;
    char val[32];

    if (st->n == 0 || s->npool == 0)
        return;
    if (n % 20 == 0) {
        churn_add(s, st->v[rng_next(s) % st->n], n);
        return;
    }
    if (n % 20 == 10) {
        churn_delete(s);
        return;
    }
    cp = &s->pool[rng_next(s) % s->npool];
    /* most changes: on the text, without parsing or printing the pod */
    if ((v = store_get(s, R_PODS, cp->key)) != NULL && v->rv == cp->rv) {
        struct ver *next = NULL;
        if (churn_edit(s, v, n, &next) == 0) {
            if (store_put_ver(s, R_PODS, next, &v) == 0)
                cp->rv = v->rv;
            return;
        }
    }
    if ((obj = churn_pod(s, cp)) == NULL)
        return;
    snprintf(val, sizeof(val), "%" PRIu64, n);
    cs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "status"),
                                          "containerStatuses");
    c0 = cJSON_GetArrayItem(cs, 0);
    rc = cJSON_GetObjectItemCaseSensitive(c0, "restartCount");
    if (n % 3 == 2 && cJSON_IsNumber(rc))
        cJSON_SetNumberValue(rc, rc->valuedouble + 1);
    else
        set_str(child_object(obj_meta(obj), n % 3 == 0 ? "labels" : "annotations"),
                n % 3 == 0 ? "ebb.dev/churn" : "ebb.dev/churn-note", val);
    if (store_put_ver(s, R_PODS, ver_make_kept(&rdefs[R_PODS], obj, s->rv + 1), &v) == 0)
        cp->rv = v->rv;
}

static void on_churn(uv_timer_t *t)
{
    struct server *s = t->data;
    uint64_t now = uv_now(s->loop), n;

    if (churn_lagging(s)) {
        s->churn_last = now;   /* what a lagging watcher could not take is not owed */
        return;
    }
    s->churn_credit += s->o.churn_rate * (double)(now - s->churn_last) / 1000.0;
    s->churn_last = now;
    n = (uint64_t)s->churn_credit;
    if (n > CHURN_MAX_PER_TICK) {
        n = CHURN_MAX_PER_TICK;
        s->churn_credit = CHURN_MAX_PER_TICK;
    }
    s->churn_credit -= (double)n;
    s->holding = true;
    for (uint64_t i = 0; i < n && (s->o.churn_total == 0 || s->churned < s->o.churn_total); i++)
        churn_one(s);
    s->holding = false;
    for (struct watch *w = s->watches, *next; w != NULL; w = next) {
        next = w->next;
        if (w->req != NULL)
            watch_flush(w);
    }
    if (s->o.churn_total > 0 && s->churned >= s->o.churn_total) {
        uv_timer_stop(&s->churn_timer);
        ebb_log(EBB_LOG_INFO, "churn: %" PRIu64 " pod events made, resourceVersion %" PRIu64,
                s->churned, s->rv);
    }
}

/* The first pods watch starts the churn. */
static void churn_start(struct server *s)
{
    struct store *st = &s->stores[R_PODS];

    if (s->o.churn_rate <= 0 || s->churning || s->stopping)
        return;
    s->churning = true;
    if ((s->pool = calloc(CHURN_POOL, sizeof(*s->pool))) != NULL) {
        for (size_t i = 0; i < CHURN_POOL && st->n > 0; i++) {
            const struct ver *v = st->v[rng_next(s) % st->n];
            if ((s->pool[s->npool].key = strdup(v->key)) == NULL)
                break;
            s->pool[s->npool].rv = v->rv;
            s->pool[s->npool++].json = ver_json(v);   /* NULL: parsed when first used */
        }
    }
    s->churn_last = uv_now(s->loop);
    uv_timer_start(&s->churn_timer, on_churn, CHURN_TICK_MS, CHURN_TICK_MS);
    ebb_log(EBB_LOG_INFO, "churn: up to %.0f pod events/s from now", s->o.churn_rate);
}

static bool truthy(const char *v)
{
    return v != NULL && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0);
}

static void do_watch(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const char *rvq = ebb_http_req_query(r, "resourceVersion");
    const char *to = ebb_http_req_query(r, "timeoutSeconds");
    bool initial = truthy(ebb_http_req_query(r, "sendInitialEvents"));
    struct watch *w;
    uint64_t from = 0;
    bool replay = false;

    if (rvq != NULL && rvq[0] != '\0' && strcmp(rvq, "0") != 0 && !initial) {
        if (parse_rv(rvq, &from) != 0) {
            char msg[200];
            snprintf(msg, sizeof(msg), "invalid resource version: %.100s", rvq);
            reply_bad_request(r, msg);
            return;
        }
        if (from < s->compacted) {
            reply_watch_expired(r, from, s->compacted);
            return;
        }
        if (from > s->rv) {
            reply_watch_too_large(r, from, s->rv);
            return;
        }
        replay = true;
    }
    if ((w = calloc(1, sizeof(*w))) == NULL) {
        reply_internal(r, "out of memory");
        return;
    }
    if (!request_filter(r, rt, &w->f)) {
        free(w);
        return;
    }
    w->s = s;
    w->res = rt->res;
    w->bookmarks = truthy(ebb_http_req_query(r, "allowWatchBookmarks"));
    uv_timer_init(s->loop, &w->timer);
    w->timer.data = w;
    w->next = s->watches;
    if (s->watches != NULL)
        s->watches->prev = w;
    s->watches = w;
    if (ebb_http_stream_begin(r, 200, JSON) != 0) {
        watch_free(w);
        return;
    }
    w->req = r;
    ebb_http_req_on_gone(r, on_watch_gone, w);
    if (replay) {
        for (size_t k = 0; k < s->log_n; k++) {
            struct ev *e = log_at(s, k);
            if (e->rv > from && e->res == w->res && !watch_event(w, e))
                return;
        }
    } else {
        struct store *st = &s->stores[w->res];
        for (size_t i = 0; i < st->n; i++)
            if (filter_match(&w->f, st->v[i]) && !watch_send(w, "ADDED", ver_text(st->v[i])))
                return;
        if (initial && w->bookmarks && !watch_bookmark(w, true))
            return;
    }
    if (to != NULL && to[0] != '\0') {
        double secs = strtod(to, NULL);
        if (secs > 0)
            uv_timer_start(&w->timer, on_watch_timeout, (uint64_t)(secs * 1000.0), 0);
    }
    if (w->res == R_PODS)
        churn_start(s);
}

static void on_bookmark_timer(uv_timer_t *t)
{
    struct server *s = t->data;
    struct watch *w, *next;

    for (w = s->watches; w != NULL; w = next) {
        next = w->next;
        if (w->bookmarks && w->req != NULL)
            watch_bookmark(w, false);
    }
}

static void on_close_timer(uv_timer_t *t)
{
    struct server *s = t->data;
    struct watch *w, *next;
    size_t n = 0;

    for (w = s->watches; w != NULL; w = next) {
        next = w->next;
        watch_end(w);
        n++;
    }
    if (n > 0)
        ebb_log(EBB_LOG_INFO, "closed %zu watches (--close-watches-every)", n);
}

/* ---- get, create, update, patch, delete --------------------------------------------------- */

static void do_get(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    struct ver *v = store_get2(s, rt->res, rt->ns, rt->name);

    if (v == NULL) {
        reply_not_found(r, &rdefs[rt->res], rt->name);
        return;
    }
    reply_text(r, 200, ver_text(v));
}

static bool dry_run(struct ebb_http_req *r)
{
    const char *d = ebb_http_req_query(r, "dryRun");
    return d != NULL && strcmp(d, "All") == 0;
}

/* The request body as a JSON object; NULL when answered (400). */
static cJSON *body_object(struct ebb_http_req *r, const struct rdef *d)
{
    size_t len;
    const char *body = ebb_http_req_body(r, &len);
    cJSON *j;
    char msg[300];

    if (len == 0) {
        reply_bad_request(r, "the body of the request was in an unknown format - accepted "
                             "media types include: application/json");
        return NULL;
    }
    if ((j = cJSON_ParseWithLength(body, len)) == NULL || !cJSON_IsObject(j)) {
        const char *at = cJSON_GetErrorPtr();
        snprintf(msg, sizeof(msg), "couldn't get version/kind; json parse error near: %.40s",
                 j == NULL && at != NULL ? at : body);
        cJSON_Delete(j);
        reply_bad_request(r, msg);
        return NULL;
    }
    if (d != NULL) {
        const char *kind = get_str(j, "kind");
        if (kind != NULL && strcmp(kind, d->kind) != 0) {
            char gv[128];
            group_version(d, gv, sizeof(gv));
            snprintf(msg, sizeof(msg), "the body of the request kind \"%.60s\" is not %s, %s",
                     kind, d->kind, gv);
            cJSON_Delete(j);
            reply_bad_request(r, msg);
            return NULL;
        }
    }
    return j;
}

/* Namespace checks shared by create and update. false: answered. */
static bool check_namespace(struct server *s, struct ebb_http_req *r, const struct route *rt,
                            cJSON *obj)
{
    cJSON *meta = obj_meta(obj);
    const char *ns = get_str(meta, "namespace");

    if (!rdefs[rt->res].namespaced) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "namespace");
        return true;
    }
    if (ns != NULL && ns[0] != '\0' && strcmp(ns, rt->ns) != 0) {
        reply_bad_request(r, "the namespace of the provided object does not match the namespace "
                             "sent on the request");
        return false;
    }
    if (s->stores[R_NAMESPACES].n > 0 && store_get(s, R_NAMESPACES, rt->ns) == NULL) {
        reply_not_found(r, &rdefs[R_NAMESPACES], rt->ns);
        return false;
    }
    set_str(meta, "namespace", rt->ns);
    return true;
}

/* kind and apiVersion, first as the API server writes them. */
static void fill_type(const struct rdef *d, cJSON *obj)
{
    char gv[128];
    cJSON *first = obj->child;

    group_version(d, gv, sizeof(gv));
    if (first != NULL && first->string != NULL && strcmp(first->string, "kind") == 0 &&
        first->next != NULL && first->next->string != NULL &&
        strcmp(first->next->string, "apiVersion") == 0) {
        set_str(obj, "kind", d->kind);
        set_str(obj, "apiVersion", gv);
        return;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "kind");
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "apiVersion");
    first = obj->child;
    obj->child = NULL;
    cJSON_AddStringToObject(obj, "kind", d->kind);
    cJSON_AddStringToObject(obj, "apiVersion", gv);
    if (first != NULL && obj->child != NULL) {
        /* re-attach the rest after the two new members */
        cJSON *last = obj->child->next;
        last->next = first;
        first->prev = last;
        for (cJSON *c = first; c != NULL; c = c->next)
            obj->child->prev = c;   /* cJSON keeps the tail in child->prev */
    }
}

static void reply_invalid_name(struct ebb_http_req *r, const struct rdef *d)
{
    char msg[300];
    cJSON *det = cJSON_CreateObject(), *causes, *c;

    snprintf(msg, sizeof(msg), "%s.%s \"\" is invalid: metadata.name: Required value: name or "
                               "generateName is required",
             d->kind, d->group);
    if (d->group[0] != '\0')
        cJSON_AddStringToObject(det, "group", d->group);
    cJSON_AddStringToObject(det, "kind", d->kind);
    causes = cJSON_AddArrayToObject(det, "causes");
    c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "reason", "FieldValueRequired");
    cJSON_AddStringToObject(c, "message", "Required value: name or generateName is required");
    cJSON_AddStringToObject(c, "field", "metadata.name");
    cJSON_AddItemToArray(causes, c);
    reply_status(r, 422, "Invalid", msg, det);
}

static void do_create(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &rdefs[rt->res];
    cJSON *obj = body_object(r, d), *meta;
    const char *name, *gen;
    char uid[40], ts[32], buf[300], q[128];
    struct ver *v;

    if (obj == NULL)
        return;
    if (!check_namespace(s, r, rt, obj)) {
        cJSON_Delete(obj);
        return;
    }
    meta = obj_meta(obj);
    name = get_str(meta, "name");
    gen = get_str(meta, "generateName");
    if ((name == NULL || name[0] == '\0') && gen != NULL && gen[0] != '\0') {
        static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
        size_t n = (size_t)snprintf(buf, sizeof(buf), "%.240s", gen);
        for (int i = 0; i < 5 && n + 1 < sizeof(buf); i++)
            buf[n++] = alnum[rng_next(s) % (sizeof(alnum) - 1)];
        buf[n] = '\0';
        set_str(meta, "name", buf);
        name = get_str(meta, "name");
    }
    if (name == NULL || name[0] == '\0') {
        cJSON_Delete(obj);
        reply_invalid_name(r, d);
        return;
    }
    if (store_get2(s, rt->res, rt->ns, name) != NULL) {
        char msg[400];
        qualified(d, q, sizeof(q));
        snprintf(msg, sizeof(msg), "%s \"%s\" already exists", q, name);
        reply_status(r, 409, "AlreadyExists", msg, details_for(d, name));
        cJSON_Delete(obj);
        return;
    }
    fill_type(d, obj);
    make_uid(s, uid, sizeof(uid));
    set_str(meta, "uid", uid);
    now_rfc3339(ts, sizeof(ts));
    set_str(meta, "creationTimestamp", ts);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "deletionTimestamp");
    if (dry_run(r)) {
        reply_json(r, 201, obj);
        return;
    }
    if (store_put(s, rt->res, obj, &v) != 0) {
        reply_internal(r, "out of memory");
        return;
    }
    reply_text(r, 201, ver_text(v));
}

/* Replace an existing object with `obj` (owned): the checks of an update. */
static void replace(struct server *s, struct ebb_http_req *r, const struct route *rt, cJSON *obj,
                    int ok_code)
{
    const struct rdef *d = &rdefs[rt->res];
    struct ver *cur = store_get2(s, rt->res, rt->ns, rt->name), *v;
    cJSON *meta, *cmeta, *cobj;
    const char *name, *rv;
    char msg[400], currv[24];
    bool same;

    if (!check_namespace(s, r, rt, obj)) {
        cJSON_Delete(obj);
        return;
    }
    meta = obj_meta(obj);
    name = get_str(meta, "name");
    if (name != NULL && name[0] != '\0' && strcmp(name, rt->name) != 0) {
        snprintf(msg, sizeof(msg),
                 "the name of the object (%.100s) does not match the name on the URL (%.100s)",
                 name, rt->name);
        cJSON_Delete(obj);
        reply_bad_request(r, msg);
        return;
    }
    if (cur == NULL) {
        cJSON_Delete(obj);
        reply_not_found(r, d, rt->name);
        return;
    }
    snprintf(currv, sizeof(currv), "%" PRIu64, cur->rv);
    rv = get_str(meta, "resourceVersion");
    if (rv != NULL && rv[0] != '\0' && strcmp(rv, currv) != 0) {
        cJSON_Delete(obj);
        reply_conflict(r, d, rt->name,
                       "the object has been modified; please apply your changes to the latest "
                       "version and try again");
        return;
    }
    /* what the server owns comes from the stored object */
    if ((cobj = ver_json(cur)) == NULL) {
        cJSON_Delete(obj);
        reply_internal(r, "out of memory");
        return;
    }
    cmeta = cJSON_GetObjectItemCaseSensitive(cobj, "metadata");
    set_str(meta, "name", rt->name);
    set_item(meta, "uid", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cmeta, "uid"), 1));
    set_item(meta, "creationTimestamp",
             cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cmeta, "creationTimestamp"), 1));
    set_str(meta, "resourceVersion", currv);
    fill_type(d, obj);
    same = cJSON_Compare(obj, cobj, true);
    cJSON_Delete(cobj);
    if (same) {
        /* a no-op update writes nothing and keeps the resourceVersion */
        cJSON_Delete(obj);
        reply_text(r, ok_code, ver_text(cur));
        return;
    }
    if (dry_run(r)) {
        reply_json(r, ok_code, obj);
        return;
    }
    if (store_put(s, rt->res, obj, &v) != 0) {
        reply_internal(r, "out of memory");
        return;
    }
    reply_text(r, ok_code, ver_text(v));
}

static void do_update(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    cJSON *obj = body_object(r, &rdefs[rt->res]);

    if (obj != NULL)
        replace(s, r, rt, obj, 200);
}

/* RFC 7386 JSON merge patch: target (owned) <- patch. */
static cJSON *merge_patch(cJSON *target, const cJSON *patch)
{
    const cJSON *p;

    if (!cJSON_IsObject(patch)) {
        cJSON_Delete(target);
        return cJSON_Duplicate(patch, true);
    }
    if (!cJSON_IsObject(target)) {
        cJSON_Delete(target);
        target = cJSON_CreateObject();
    }
    cJSON_ArrayForEach(p, patch) {
        cJSON *cur = cJSON_GetObjectItemCaseSensitive(target, p->string);
        if (cJSON_IsNull(p)) {
            cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
            continue;
        }
        set_item(target, p->string, merge_patch(cur ? cJSON_Duplicate(cur, true) : NULL, p));
    }
    return target;
}

static void do_patch(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const char *ct = ebb_http_req_header(r, "Content-Type");
    struct ver *cur = store_get2(s, rt->res, rt->ns, rt->name);
    cJSON *patch, *obj;

    if (ct == NULL || (strncmp(ct, "application/merge-patch+json", 28) != 0 &&
                       strncmp(ct, "application/strategic-merge-patch+json", 38) != 0)) {
        char msg[200];
        snprintf(msg, sizeof(msg), "the body of the request was in an unknown format - accepted "
                                   "media types include: application/merge-patch+json, "
                                   "application/strategic-merge-patch+json");
        reply_status(r, 415, "UnsupportedMediaType", msg, NULL);
        return;
    }
    if (cur == NULL) {
        reply_not_found(r, &rdefs[rt->res], rt->name);
        return;
    }
    if ((patch = body_object(r, NULL)) == NULL)
        return;
    obj = merge_patch(ver_json(cur), patch);
    cJSON_Delete(patch);
    replace(s, r, rt, obj, 200);
}

/* DeleteOptions.preconditions against the stored object. false: answered (409). */
static bool check_preconditions(struct ebb_http_req *r, const struct rdef *d, const char *name,
                                const cJSON *opts, const struct ver *cur)
{
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(opts, "preconditions");
    const char *uid = get_str(pre, "uid"), *rv = get_str(pre, "resourceVersion");
    const char *cuid = cur->uid;
    char why[300], crv[24];

    snprintf(crv, sizeof(crv), "%" PRIu64, cur->rv);
    if (uid != NULL && strcmp(uid, cuid) != 0) {
        snprintf(why, sizeof(why),
                 "Precondition failed: UID in precondition: %.80s, UID in object meta: %.80s", uid,
                 cuid);
        reply_conflict(r, d, name, why);
        return false;
    }
    if (rv != NULL && strcmp(rv, crv) != 0) {
        snprintf(why, sizeof(why),
                 "Precondition failed: ResourceVersion in precondition: %.40s, ResourceVersion "
                 "in object meta: %.40s",
                 rv, crv);
        reply_conflict(r, d, name, why);
        return false;
    }
    return true;
}

static void forget_pod(struct server *s, const char *ns, const char *name)
{
    ebb_str ins = ebb_str_find(ns, strlen(ns)), iname = ebb_str_find(name, strlen(name));

    if (ins != NULL && iname != NULL)
        ebb_cache_delete(s->cache, EBB_KIND_POD, ins, iname);
}

static void do_delete(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &rdefs[rt->res];
    struct ver *cur = store_get2(s, rt->res, rt->ns, rt->name), *gone;
    size_t len;
    cJSON *opts = NULL, *det;
    char key[640];
    const char *uid;

    if (cur == NULL) {
        reply_not_found(r, d, rt->name);
        return;
    }
    ebb_http_req_body(r, &len);
    if (len > 0 && (opts = body_object(r, NULL)) == NULL)
        return;
    if (!check_preconditions(r, d, rt->name, opts, cur)) {
        cJSON_Delete(opts);
        return;
    }
    cJSON_Delete(opts);
    if (dry_run(r)) {
        reply_text(r, 200, ver_text(cur));
        return;
    }
    snprintf(key, sizeof(key), "%s", cur->key);
    if (rt->res == R_PODS)
        forget_pod(s, cur->ns, cur->name);
    det = details_for(d, rt->name);
    uid = cur->uid;
    if (uid[0] != '\0')
        cJSON_AddStringToObject(det, "uid", uid);
    if (store_delete(s, rt->res, key, &gone) != 0) {
        cJSON_Delete(det);
        reply_internal(r, "out of memory");
        return;
    }
    if (rt->res == R_PODS) {
        /* pods answer with the object (ReturnDeletedObject) */
        cJSON_Delete(det);
        reply_text(r, 200, ver_text(gone));
    } else {
        reply_status(r, 200, NULL, NULL, det);
    }
    ver_release(gone);
}

/* ---- eviction ------------------------------------------------------------------------------ */

/* The PDB's status after an eviction took one disruption from it. */
static void pdb_after_eviction(struct server *s, const struct ebb_pdb *pdb, const char *pod)
{
    struct ebb_pdb_state *st = ebb__map_get(&s->pdb_state, pdb->ns, pdb->name);
    struct ver *cur = store_get2(s, R_PDBS, pdb->ns, pdb->name);
    cJSON *obj, *status, *dp, *conds, *c;
    char ts[32];

    if (st == NULL || cur == NULL || (obj = ver_json(cur)) == NULL)
        return;
    now_rfc3339(ts, sizeof(ts));
    status = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(status)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        status = cJSON_AddObjectToObject(obj, "status");
    }
    set_item(status, "disruptionsAllowed", cJSON_CreateNumber(st->allowed));
    set_item(status, "currentHealthy", cJSON_CreateNumber(st->healthy));
    dp = cJSON_GetObjectItemCaseSensitive(status, "disruptedPods");
    if (!cJSON_IsObject(dp)) {
        cJSON_DeleteItemFromObjectCaseSensitive(status, "disruptedPods");
        dp = cJSON_AddObjectToObject(status, "disruptedPods");
    }
    set_str(dp, pod, ts);
    if (st->allowed <= 0) {
        /* pdbhelper.UpdateDisruptionAllowedCondition */
        conds = cJSON_GetObjectItemCaseSensitive(status, "conditions");
        if (!cJSON_IsArray(conds)) {
            cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
            conds = cJSON_AddArrayToObject(status, "conditions");
        }
        cJSON_ArrayForEach(c, conds) {
            const char *type = get_str(c, "type");
            if (type != NULL && strcmp(type, "DisruptionAllowed") == 0)
                break;
        }
        if (c == NULL) {
            c = cJSON_CreateObject();
            cJSON_AddItemToArray(conds, c);
            set_str(c, "type", "DisruptionAllowed");
        }
        if (get_str(c, "status") == NULL || strcmp(get_str(c, "status"), "False") != 0)
            set_str(c, "lastTransitionTime", ts);
        set_str(c, "status", "False");
        set_str(c, "reason", "InsufficientPods");
        set_str(c, "message", "");
        set_item(c, "observedGeneration", cJSON_CreateNumber((double)pdb->observed_generation));
    }
    store_put(s, R_PDBS, obj, NULL);
}

/* 429 with the API server's message, the budget's words as the cause. */
static void reply_pdb_refusal(struct ebb_http_req *r, const char *msg)
{
    static const char head[] = "Cannot evict pod as it would violate the pod's disruption budget.";
    const char *cause = msg;
    bool processing = strstr(msg, "is still being processed") != NULL;
    cJSON *det = cJSON_CreateObject(), *causes, *c;

    if (strncmp(msg, head, sizeof(head) - 1) == 0) {
        cause = msg + sizeof(head) - 1;
        while (*cause == ' ')
            cause++;
    }
    if (processing) {
        cJSON_AddNumberToObject(det, "retryAfterSeconds", 10);
        ebb_http_add_header(r, "Retry-After", "10");
    }
    causes = cJSON_AddArrayToObject(det, "causes");
    c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "reason", "DisruptionBudget");
    cJSON_AddStringToObject(c, "message", cause);
    cJSON_AddItemToArray(causes, c);
    reply_status(r, 429, "TooManyRequests", head, det);
}

static void do_evict(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &rdefs[R_PODS];
    cJSON *ev = body_object(r, NULL), *opts;
    struct ver *cur;
    struct ebb_pod *pod;
    const struct ebb_pdb *which = NULL;
    const char *name, *kind;
    char msg[512], key[640];
    bool dry;
    int verdict;

    if (ev == NULL)
        return;
    kind = get_str(ev, "kind");
    if (kind != NULL && strcmp(kind, "Eviction") != 0) {
        cJSON_Delete(ev);
        reply_bad_request(r, "not a Eviction object");
        return;
    }
    name = meta_str(ev, "name");
    if (name == NULL || strcmp(name, rt->name) != 0) {
        cJSON_Delete(ev);
        reply_bad_request(r, "name in URL does not match name in Eviction object");
        return;
    }
    opts = cJSON_GetObjectItemCaseSensitive(ev, "deleteOptions");
    dry = dry_run(r);
    if (cJSON_IsObject(opts)) {
        const cJSON *dr = cJSON_GetObjectItemCaseSensitive(opts, "dryRun"), *x;
        cJSON_ArrayForEach(x, dr)
            if (cJSON_IsString(x) && strcmp(x->valuestring, "All") == 0)
                dry = true;
    }
    if ((cur = store_get2(s, R_PODS, rt->ns, rt->name)) == NULL) {
        cJSON_Delete(ev);
        reply_not_found(r, d, rt->name);
        return;
    }
    if (!check_preconditions(r, d, rt->name, opts, cur)) {
        cJSON_Delete(ev);
        return;
    }
    cJSON_Delete(ev);
    pod = ebb_cache_pod(s->cache, ebb_str_find(rt->ns, strlen(rt->ns)),
                        ebb_str_find(rt->name, strlen(rt->name)));
    if (pod == NULL) {
        reply_internal(r, "the pod is served but not in the cache");
        return;
    }
    verdict = ebb__pdb_decide(s->cache, pod, &s->pdb_state, &which, msg, sizeof(msg));
    switch (verdict) {
    case EBB_PDB_REFUSE:
        reply_pdb_refusal(r, msg);
        return;
    case EBB_PDB_ERROR:
        if (strstr(msg, "more than one PodDisruptionBudget") != NULL) {
            /* returned as a Status object by the create handler: HTTP 201,
             * the failure in the body, as the API server does */
            cJSON *st = cJSON_CreateObject();
            cJSON_AddStringToObject(st, "kind", "Status");
            cJSON_AddStringToObject(st, "apiVersion", "v1");
            cJSON_AddObjectToObject(st, "metadata");
            cJSON_AddStringToObject(st, "status", "Failure");
            cJSON_AddStringToObject(st, "message", msg);
            cJSON_AddNumberToObject(st, "code", 500);
            reply_json(r, 201, st);
        } else {
            char full[600];
            cJSON *det = cJSON_CreateObject();
            snprintf(full, sizeof(full),
                     "poddisruptionbudget.policy \"%s\" is forbidden: pdb disruptions allowed is "
                     "negative",
                     which ? which->name : "");
            cJSON_AddStringToObject(det, "name", which ? which->name : "");
            cJSON_AddStringToObject(det, "group", "policy");
            cJSON_AddStringToObject(det, "kind", "poddisruptionbudget");
            reply_status(r, 403, "Forbidden", full, det);
        }
        return;
    default:
        break;
    }
    if (!dry) {
        if (verdict == EBB_PDB_ALLOW_DECREMENT && which != NULL) {
            ebb__pdb_commit(&s->pdb_state, which, pod);
            pdb_after_eviction(s, which, rt->name);
        }
        snprintf(key, sizeof(key), "%s", cur->key);
        forget_pod(s, rt->ns, rt->name);
        if (store_delete(s, R_PODS, key, NULL) != 0) {
            reply_internal(r, "out of memory");
            return;
        }
        ebb_log(EBB_LOG_INFO, "evicted pod %s/%s", rt->ns, rt->name);
    }
    reply_status(r, 201, NULL, NULL, NULL);
}

/* ---- what evict plugins send ---------------------------------------------------------------- */

/* PATCH pods/NAME (merge or strategic merge): what SoftEvictor-like plugins
 * send. A metadata.uid in the patch is the precondition it is in the API
 * server: a different uid is an immutable field changed, 422. The cache
 * the PDB rules read keeps the pod as loaded (labels a budget selects are
 * not what evictors patch). */
static void do_patch_pod(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    struct ver *cur = store_get2(s, R_PODS, rt->ns, rt->name);
    size_t len;
    const char *body = ebb_http_req_body(r, &len);
    cJSON *patch = cur != NULL && len > 0 ? cJSON_ParseWithLength(body, len) : NULL;
    const char *uid = meta_str(patch, "uid");

    if (uid != NULL && strcmp(uid, cur->uid) != 0) {
        char msg[400];
        cJSON *det = cJSON_CreateObject(), *causes, *c;
        snprintf(msg, sizeof(msg), "Pod \"%.100s\" is invalid: metadata.uid: Invalid value: "
                                   "\"%.60s\": field is immutable", rt->name, uid);
        cJSON_AddStringToObject(det, "name", rt->name);
        cJSON_AddStringToObject(det, "kind", "Pod");
        causes = cJSON_AddArrayToObject(det, "causes");
        c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "reason", "FieldValueInvalid");
        cJSON_AddStringToObject(c, "message", strstr(msg, "Invalid value: "));
        cJSON_AddStringToObject(c, "field", "metadata.uid");
        cJSON_AddItemToArray(causes, c);
        cJSON_Delete(patch);
        reply_status(r, 422, "Invalid", msg, det);
        return;
    }
    cJSON_Delete(patch);
    do_patch(s, r, rt);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static void route_request(struct server *s, struct ebb_http_req *r)
{
    const char *method = ebb_http_req_method(r), *path = ebb_http_req_path(r);
    char buf[1024], *seg[12];
    struct route rt;
    int n = split_path(path, buf, sizeof(buf), seg, 12);
    const char *group = NULL, *version = NULL;
    int off = 0;
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    unsigned verbs;

    if (n < 0) {
        reply_no_resource(r);
        return;
    }
    if (n == 1 && get && strcmp(seg[0], "version") == 0) {
        reply_version(r);
        return;
    }
    if (n >= 1 && strcmp(seg[0], "api") == 0) {
        if (n == 1 && get) {
            reply_api_versions(s, r);
            return;
        }
        if (n >= 2 && strcmp(seg[1], "v1") == 0) {
            if (n == 2 && get) {
                reply_json(r, 200, resource_list(s, ""));
                return;
            }
            group = "";
            version = "v1";
            off = 2;
        }
    } else if (n >= 1 && strcmp(seg[0], "apis") == 0) {
        if (n == 1 && get) {
            reply_group_list(s, r);
            return;
        }
        if (n >= 2 && group_served(s, seg[1])) {
            if (n == 2 && get) {
                reply_json(r, 200, group_doc(seg[1], true));
                return;
            }
            if (n >= 3 && strcmp(seg[2], group_version_of(seg[1])) == 0) {
                if (n == 3 && get) {
                    reply_json(r, 200, resource_list(s, seg[1]));
                    return;
                }
                group = seg[1];
                version = seg[2];
                off = 3;
            }
        }
    }
    if (group == NULL || !parse_resource_path(s, group, version, seg + off, n - off, &rt)) {
        reply_no_resource(r);
        return;
    }
    verbs = rdefs[rt.res].verbs;
    if (rt.sub != NULL) {
        if (rt.res == R_PODS && strcmp(rt.sub, "eviction") == 0 && strcmp(method, "POST") == 0)
            do_evict(s, r, &rt);
        else if (rt.res == R_PODS && strcmp(rt.sub, "eviction") == 0)
            reply_method_not_allowed(r);
        else
            reply_no_resource(r);
        return;
    }
    if (rdefs[rt.res].namespaced && rt.name != NULL && rt.ns == NULL) {
        reply_no_resource(r);   /* a namespaced object needs its namespace */
        return;
    }
    if (get) {
        bool watch = rt.watch_path || truthy(ebb_http_req_query(r, "watch"));
        if (watch && (verbs & V_WATCH))
            do_watch(s, r, &rt);
        else if (watch)
            reply_method_not_allowed(r);
        else if (rt.name != NULL && (verbs & V_GET))
            do_get(s, r, &rt);
        else if (rt.name == NULL && (verbs & V_LIST))
            do_list(s, r, &rt);
        else
            reply_method_not_allowed(r);
        return;
    }
    if (rt.watch_path) {
        reply_method_not_allowed(r);
        return;
    }
    if (rt.res == R_PODS && rt.name != NULL && strcmp(method, "PATCH") == 0) {
        do_patch_pod(s, r, &rt);
        return;
    }
    if (strcmp(method, "POST") == 0 && rt.name == NULL && (verbs & V_CREATE) &&
        (rt.ns != NULL) == rdefs[rt.res].namespaced)
        do_create(s, r, &rt);
    else if (strcmp(method, "PUT") == 0 && rt.name != NULL && (verbs & V_UPDATE))
        do_update(s, r, &rt);
    else if (strcmp(method, "PATCH") == 0 && rt.name != NULL && (verbs & V_PATCH))
        do_patch(s, r, &rt);
    else if (strcmp(method, "DELETE") == 0 && rt.name != NULL && (verbs & V_DELETE))
        do_delete(s, r, &rt);
    else
        reply_method_not_allowed(r);
}

/* A request held back by --latency-ms. */
struct delay {
    uv_timer_t timer;            /* first: the close callback frees */
    struct server *s;
    struct ebb_http_req *req;
    struct delay *prev, *next;
};

static void on_delay_closed(uv_handle_t *h)
{
    free(h->data);
}

static void delay_free(struct delay *dl)
{
    struct server *s = dl->s;

    if (dl->prev != NULL)
        dl->prev->next = dl->next;
    else
        s->delays = dl->next;
    if (dl->next != NULL)
        dl->next->prev = dl->prev;
    uv_close((uv_handle_t *)&dl->timer, on_delay_closed);
}

static void on_delay_gone(struct ebb_http_req *req, void *ud)
{
    (void)req;
    delay_free(ud);
}

static void on_delay(uv_timer_t *t)
{
    struct delay *dl = t->data;
    struct ebb_http_req *r = dl->req;
    struct server *s = dl->s;

    ebb_http_req_on_gone(r, NULL, NULL);
    delay_free(dl);
    route_request(s, r);
}

static bool is_health(const char *path)
{
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
           strcmp(path, "/livez") == 0;
}

static void on_request(struct ebb_http_req *r, void *ud)
{
    struct server *s = ud;
    const char *path = ebb_http_req_path(r);
    const char *qs = ebb_http_req_query_string(r);

    s->nrequests++;
    ebb_log(EBB_LOG_DEBUG, "%s %s%s%s", ebb_http_req_method(r), path, qs[0] ? "?" : "", qs);
    if (is_health(path)) {
        ebb_http_respond(r, 200, "text/plain; charset=utf-8", "ok", 2);
        return;
    }
    if (s->o.fail_fraction > 0 && rng_unit(s) < s->o.fail_fraction) {
        reply_internal(r, "injected failure (ebb serve --fail-fraction)");
        return;
    }
    if (s->o.latency_ms > 0) {
        struct delay *dl = calloc(1, sizeof(*dl));
        if (dl != NULL) {
            dl->s = s;
            dl->req = r;
            uv_timer_init(s->loop, &dl->timer);
            dl->timer.data = dl;
            dl->next = s->delays;
            if (s->delays != NULL)
                s->delays->prev = dl;
            s->delays = dl;
            ebb_http_req_on_gone(r, on_delay_gone, dl);
            uv_timer_start(&dl->timer, on_delay, (uint64_t)s->o.latency_ms, 0);
            return;
        }
    }
    route_request(s, r);
}

/* ---- loading --------------------------------------------------------------------------------- */

static int res_for_item(const cJSON *item, int kind)
{
    const char *k, *av;

    switch (kind) {
    case EBB_KIND_POD: return R_PODS;
    case EBB_KIND_NODE: return R_NODES;
    case EBB_KIND_NAMESPACE: return R_NAMESPACES;
    case EBB_KIND_PRIORITY_CLASS: return R_PRIORITY_CLASSES;
    case EBB_KIND_PVC: return R_PVCS;
    case EBB_KIND_PDB: return R_PDBS;
    case EBB_KIND_NODE_METRICS: return R_NODE_METRICS;
    case EBB_KIND_POD_METRICS: return R_POD_METRICS;
    default: break;
    }
    k = get_str(item, "kind");
    av = get_str(item, "apiVersion");
    if (k == NULL || av == NULL)
        return -1;
    if (strcmp(k, "Lease") == 0 && strcmp(av, "coordination.k8s.io/v1") == 0)
        return R_LEASES;
    if (strcmp(k, "Event") == 0 && strcmp(av, "v1") == 0)
        return R_EVENTS;
    if (strcmp(k, "Event") == 0 && strcmp(av, "events.k8s.io/v1") == 0)
        return R_EVENTS_V1;
    if (strcmp(k, "PodMigrationJob") == 0 && strcmp(av, "scheduling.koordinator.sh/v1alpha1") == 0)
        return R_POD_MIGRATION_JOBS;
    return -1;
}

static int on_item(const cJSON *item, int kind, void *ud)
{
    struct server *s = ud;
    int res = res_for_item(item, kind);
    struct store *st;
    struct ver *v;
    cJSON *copy;
    bool found;
    size_t i;

    if (res < 0)
        return 0;
    if ((copy = cJSON_Duplicate(item, true)) == NULL)
        return EBB_ENOMEM;
    if (rdefs[res].namespaced) {
        cJSON *meta = obj_meta(copy);
        const char *ns = get_str(meta, "namespace");
        if (ns == NULL || ns[0] == '\0')
            set_str(meta, "namespace", "default");
    }
    if ((v = ver_make(&rdefs[res], copy, s->rv + 1)) == NULL)
        return EBB_ENOMEM;
    if (v->name[0] == '\0') {
        ver_release(v);
        return 0;
    }
    st = &s->stores[res];
    i = find_key(st->v, st->n, v->key, &found);
    if (found) {
        /* the same object twice: the later one wins, as the cache does */
        ver_release(st->v[i]);
        st->v[i] = v;
    } else if (arr_insert(&st->v, &st->n, &st->cap, i, v) != 0) {
        ver_release(v);
        return EBB_ENOMEM;
    }
    s->rv++;
    if (res == R_NODE_METRICS || res == R_POD_METRICS)
        s->has_metrics = true;
    if (res == R_POD_MIGRATION_JOBS)
        s->has_koordinator = true;
    return 0;
}

/* ---- the command ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: ebb serve --snapshot FILE [--listen HOST:PORT] [fault flags]\n"
          "\n"
          "Serve a recorded cluster as a Kubernetes API (kubectl --server http://HOST:PORT).\n"
          "The first line on stdout is \"serving on HOST:PORT\" (port 0 picks a free port).\n"
          "\n"
          "  --snapshot FILE              a cluster recorded as `kubectl get ... -o json` (or YAML)\n"
          "  --listen HOST:PORT           default 127.0.0.1:8001\n"
          "  --bookmark-every SECONDS     BOOKMARK events to watches that allow them (default 60)\n"
          "  --expire-after N             keep the last N changes: older resourceVersions get 410\n"
          "                               (default 10000)\n"
          "  --koordinator                serve Koordinator's PodMigrationJobs\n"
          "                               (scheduling.koordinator.sh/v1alpha1), as a cluster with\n"
          "                               Koordinator installed (also when the snapshot has one)\n"
          "faults, for tests:\n"
          "  --close-watches-every SECONDS  end every watch stream on this period\n"
          "  --fail-fraction F            answer 500 to this share of requests (0 to 1)\n"
          "  --seed N                     the random source of --fail-fraction (default 1)\n"
          "  --latency-ms N               answer every request N ms late\n"
          "  -v, --verbose                log every request; -q, --quiet: errors only\n"
          "benchmarks:\n"
          "  --churn RATE                 once pods are watched, change pods at up to RATE\n"
          "                               events/s (labels, annotations, restart counts; 1 in\n"
          "                               20 an added pod, 1 in 20 one of those deleted), as\n"
          "                               fast as the pods watchers read\n"
          "  --churn-total N              stop after N events (default: never)\n",
          f);
}

static int bad_flag(const char *flag, const char *value, const char *want)
{
    fprintf(stderr, "ebb: error: %s: \"%s\" is not %s\n", flag, value, want);
    return EXIT_INPUT;
}

static int parse_listen(const char *v, struct opts *o)
{
    const char *colon = strrchr(v, ':');
    char *end;
    long port;
    size_t hn;

    if (colon == NULL)
        return bad_flag("--listen", v, "HOST:PORT");
    port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || port < 0 || port > 65535)
        return bad_flag("--listen", v, "HOST:PORT with a port from 0 to 65535");
    hn = (size_t)(colon - v);
    if (hn >= 2 && v[0] == '[' && v[hn - 1] == ']') {
        v++;
        hn -= 2;
    }
    if (hn == 0 || hn >= sizeof(o->host))
        return bad_flag("--listen", v, "HOST:PORT");
    memcpy(o->host, v, hn);
    o->host[hn] = '\0';
    o->port = (int)port;
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        { "snapshot", required_argument, NULL, 's' },
        { "listen", required_argument, NULL, 'l' },
        { "close-watches-every", required_argument, NULL, 'C' },
        { "fail-fraction", required_argument, NULL, 'F' },
        { "seed", required_argument, NULL, 'S' },
        { "latency-ms", required_argument, NULL, 'L' },
        { "expire-after", required_argument, NULL, 'E' },
        { "bookmark-every", required_argument, NULL, 'B' },
        { "koordinator", no_argument, NULL, 'K' },
        { "churn", required_argument, NULL, 'R' },
        { "churn-total", required_argument, NULL, 'T' },
        { "verbose", no_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c, rc;

    memset(o, 0, sizeof(*o));
    snprintf(o->host, sizeof(o->host), "127.0.0.1");
    o->port = 8001;
    o->seed = 1;
    o->expire_after = -1;
    o->bookmark_every = 60;
    opterr = 0;
    optind = 2;
    while ((c = getopt_long(argc, argv, ":vqh", longopts, NULL)) != -1) {
        char *end = NULL;
        double d;
        long long ll;

        switch (c) {
        case 's': o->snapshot = optarg; break;
        case 'l':
            if ((rc = parse_listen(optarg, o)) != 0)
                return rc;
            break;
        case 'C':
        case 'B':
            d = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(d > 0) || d > 86400)
                return bad_flag(c == 'C' ? "--close-watches-every" : "--bookmark-every", optarg,
                                "a number of seconds above 0");
            if (c == 'C')
                o->close_watches_every = d;
            else
                o->bookmark_every = d;
            break;
        case 'F':
            d = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(d >= 0 && d <= 1))
                return bad_flag("--fail-fraction", optarg, "a number from 0 to 1");
            o->fail_fraction = d;
            break;
        case 'S':
            ll = strtoll(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0')
                return bad_flag("--seed", optarg, "an integer");
            o->seed = (uint64_t)ll;
            break;
        case 'L':
        case 'E':
            ll = strtoll(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || ll < 0 || ll > 100000000)
                return bad_flag(c == 'L' ? "--latency-ms" : "--expire-after", optarg,
                                "a whole number from 0");
            if (c == 'L')
                o->latency_ms = (long)ll;
            else
                o->expire_after = (long)ll;
            break;
        case 'K': o->koordinator = true; break;
        case 'R':
            d = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(d > 0) || d > 10000000)
                return bad_flag("--churn", optarg, "a number of events per second above 0");
            o->churn_rate = d;
            break;
        case 'T':
            ll = strtoll(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || ll < 1)
                return bad_flag("--churn-total", optarg, "a whole number above 0");
            o->churn_total = (uint64_t)ll;
            break;
        case 'v': ebb_log_level = EBB_LOG_DEBUG; break;
        case 'q': ebb_log_level = EBB_LOG_ERROR; break;
        case 'h': usage(stdout); exit(0);
        case ':':
        default:
            ebb_flag_getopt_error(c, argv, usage);
            return EXIT_INPUT;
        }
    }
    if (!ebb_flag_no_arguments(argc, argv))
        return EXIT_INPUT;
    if (o->snapshot == NULL) {
        fprintf(stderr, "ebb: error: serve needs --snapshot\n");
        return EXIT_INPUT;
    }
    if (o->churn_total > 0 && o->churn_rate <= 0) {
        fprintf(stderr, "ebb: error: --churn-total needs --churn\n");
        return EXIT_INPUT;
    }
    return 0;
}

static void stop(struct server *s)
{
    if (s->stopping)
        return;
    s->stopping = true;
    uv_close((uv_handle_t *)&s->sigint, NULL);
    uv_close((uv_handle_t *)&s->sigterm, NULL);
    uv_close((uv_handle_t *)&s->bookmark_timer, NULL);
    uv_close((uv_handle_t *)&s->close_timer, NULL);
    uv_close((uv_handle_t *)&s->churn_timer, NULL);
    /* ends every watch and delayed request through their gone callbacks */
    ebb_httpd_close(s->httpd, NULL, NULL);
    s->httpd = NULL;
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct server *s = h->data;

    ebb_log(EBB_LOG_INFO, "signal %d: stopping", signum);
    stop(s);
}

static void server_free(struct server *s)
{
    for (int i = 0; i < NRES; i++) {
        for (size_t k = 0; k < s->stores[i].n; k++)
            ver_release(s->stores[i].v[k]);
        free(s->stores[i].v);
    }
    while (s->log_n > 0)
        log_drop_oldest(s);
    free(s->log);
    churn_free(s);
    ebb__pdb_state_free(&s->pdb_state);
    ebb_cache_destroy(s->cache);
}

static int load(struct server *s, struct ebb_error *err)
{
    struct ebb_snapshot_stats st;
    int rc;

    if ((rc = ebb_cache_create(&s->cache)) != 0)
        return ebb_error_set(err, rc, NULL, 0, NULL, "cannot make the cache: %s",
                             ebb_strerror(rc));
    if ((rc = ebb_snapshot_load_each(s->cache, s->o.snapshot, on_item, s, &st, err)) != 0)
        return rc;
    s->compacted = s->rv;
    ebb_log(EBB_LOG_INFO,
            "%s: %zu nodes, %zu pods, %zu PDBs, %zu namespaces, %zu leases, resourceVersion %" PRIu64,
            s->o.snapshot, s->stores[R_NODES].n, s->stores[R_PODS].n, s->stores[R_PDBS].n,
            s->stores[R_NAMESPACES].n, s->stores[R_LEASES].n, s->rv);
    return 0;
}

int ebb_serve_main(int argc, char **argv)
{
    struct server s;
    struct ebb_error err = { 0 };
    struct ebb_httpd_opts ho = { 0 };
    uv_loop_t loop;
    char buf[1200];
    int rc, status = 0;

    memset(&s, 0, sizeof(s));
    if ((rc = parse_opts(argc, argv, &s.o)) != 0)
        return rc;
    signal(SIGPIPE, SIG_IGN);
    s.rng = s.o.seed;
    s.has_koordinator = s.o.koordinator;
    ebb__map_init(&s.pdb_state);
    s.log_keep = s.o.expire_after >= 0 ? (size_t)s.o.expire_after : DEFAULT_HISTORY;
    s.log_cap = s.log_keep + 1;
    if ((s.log = calloc(s.log_cap, sizeof(*s.log))) == NULL) {
        fprintf(stderr, "ebb: error: out of memory\n");
        return 1;
    }
    if (load(&s, &err) != 0) {
        ebb_error_format(&err, buf, sizeof(buf));
        fprintf(stderr, "ebb: error: %s\n", buf);
        server_free(&s);
        return EXIT_INPUT;
    }
    if (uv_loop_init(&loop) != 0) {
        server_free(&s);
        return 1;
    }
    s.loop = &loop;
    ho.host = s.o.host;
    ho.port = s.o.port;
    ho.handler = on_request;
    ho.ud = &s;
    ho.idle_timeout_ms = 600000;
    if (ebb_httpd_create(&loop, &ho, &s.httpd, &err) != 0) {
        fprintf(stderr, "ebb: error: %s\n", err.msg);
        uv_run(&loop, UV_RUN_DEFAULT);   /* let the half-made server close */
        uv_loop_close(&loop);
        server_free(&s);
        return 1;
    }
    if (strchr(s.o.host, ':') != NULL)
        snprintf(s.addr, sizeof(s.addr), "[%s]:%d", s.o.host, ebb_httpd_port(s.httpd));
    else
        snprintf(s.addr, sizeof(s.addr), "%s:%d", s.o.host, ebb_httpd_port(s.httpd));
    uv_signal_init(&loop, &s.sigint);
    uv_signal_init(&loop, &s.sigterm);
    s.sigint.data = s.sigterm.data = &s;
    uv_signal_start(&s.sigint, on_signal, SIGINT);
    uv_signal_start(&s.sigterm, on_signal, SIGTERM);
    uv_timer_init(&loop, &s.bookmark_timer);
    uv_timer_init(&loop, &s.close_timer);
    uv_timer_init(&loop, &s.churn_timer);
    s.bookmark_timer.data = s.close_timer.data = s.churn_timer.data = &s;
    {
        uint64_t every = (uint64_t)(s.o.bookmark_every * 1000.0);
        uv_timer_start(&s.bookmark_timer, on_bookmark_timer, every ? every : 1, every ? every : 1);
    }
    if (s.o.close_watches_every > 0) {
        uint64_t every = (uint64_t)(s.o.close_watches_every * 1000.0);
        uv_timer_start(&s.close_timer, on_close_timer, every ? every : 1, every ? every : 1);
    }
    printf("serving on %s\n", s.addr);
    fflush(stdout);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0) {
        ebb_log(EBB_LOG_ERROR, "serve: handles left open at exit");
        status = 1;
    }
    ebb_log(EBB_LOG_INFO, "served %zu requests", s.nrequests);
    server_free(&s);
    return status;
}
