/* serve_store.c: what `ebb serve` holds. The resources it serves (their
 * verbs, short names, selectable fields), every object as immutable
 * versions of compact JSON text, one sorted store per resource, and the
 * bounded history of changes that watches replay and paged lists are
 * rebuilt from (the watch cache). Label and field selectors over versions.
 *
 * Called on the loop thread by the handlers (serve_read.c, serve_write.c),
 * the churn and the loader. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/serve_int.h"

/* ---- resources ------------------------------------------------------------- */

#define READ (V_GET | V_LIST | V_WATCH)
#define WRITE (V_CREATE | V_UPDATE | V_PATCH | V_DELETE | V_DELETECOLLECTION)

const struct rdef ebb__rdefs[NRES] = {
    [R_NODES] = { "", "v1", "nodes", "node", "Node", false, READ | WRITE, "no", false,
                  { "spec.unschedulable" } },
    [R_PODS] = { "", "v1", "pods", "pod", "Pod", true, READ | WRITE, "po", true,
                 { "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                   "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                   "status.nominatedNodeName" } },
    [R_NAMESPACES] = { "", "v1", "namespaces", "namespace", "Namespace", false,
                       READ | (WRITE & ~V_DELETECOLLECTION), "ns", false, { "status.phase" } },
    [R_PVCS] = { "", "v1", "persistentvolumeclaims", "persistentvolumeclaim",
                 "PersistentVolumeClaim", true, READ | WRITE, "pvc", false, { NULL } },
    [R_EVENTS] = { "", "v1", "events", "event", "Event", true, READ | WRITE, "ev", false,
                   { "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                     "involvedObject.uid", "involvedObject.apiVersion",
                     "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                     "reportingComponent", "source", "type" } },
    [R_PDBS] = { "policy", "v1", "poddisruptionbudgets", "poddisruptionbudget",
                 "PodDisruptionBudget", true, READ | WRITE, "pdb", false, { NULL } },
    [R_PRIORITY_CLASSES] = { "scheduling.k8s.io", "v1", "priorityclasses", "priorityclass",
                             "PriorityClass", false, READ | WRITE, "pc", false, { NULL } },
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
    /* ebb run's memory of evictions (ebb-eviction-memory) */
    [R_CONFIGMAPS] = { "", "v1", "configmaps", "configmap", "ConfigMap", true, READ | WRITE, "cm",
                       false, { NULL } },
};


/* "pods" or "leases.coordination.k8s.io": how API messages name a resource. */
void ebb__rdef_qualified(const struct rdef *d, char *buf, size_t len)
{
    if (d->group[0] == '\0')
        snprintf(buf, len, "%s", d->plural);
    else
        snprintf(buf, len, "%s.%s", d->plural, d->group);
}

void ebb__rdef_group_version(const struct rdef *d, char *buf, size_t len)
{
    if (d->group[0] == '\0')
        snprintf(buf, len, "%s", d->version);
    else
        snprintf(buf, len, "%s/%s", d->group, d->version);
}

/* ---- text buffers ------------------------------------------------------------ */

void ebb__sb_add(struct sb *b, const char *s, size_t n)
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

void ebb__sb_puts(struct sb *b, const char *s)
{
    ebb__sb_add(b, s, strlen(s));
}


void ebb__sb_printf(struct sb *b, const char *fmt, ...)
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
        ebb__sb_add(b, tmp, (size_t)n);
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
    ebb__sb_add(b, big, (size_t)n);
    free(big);
}

/* ---- objects and their versions ---------------------------------------------- */

void ebb__ver_release(struct ver *v)
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

struct ver *ebb__ver_ref(struct ver *v)
{
    if (v != NULL)
        v->refs++;
    return v;
}

const char *ebb__ver_text(const struct ver *v)
{
    return v->text;
}

/* The object as a tree again (owned by the caller), or NULL. */
cJSON *ebb__ver_json(const struct ver *v)
{
    return cJSON_ParseWithLength(v->text, v->len);
}

cJSON *ebb__json_child(cJSON *obj, const char *key)
{
    cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (cJSON_IsObject(j))
        return j;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    return cJSON_AddObjectToObject(obj, key);
}

cJSON *ebb__json_meta(cJSON *obj)
{
    return ebb__json_child(obj, "metadata");
}

const char *ebb__json_str(const cJSON *obj, const char *key)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

const char *ebb__json_meta_str(const cJSON *obj, const char *key)
{
    return ebb__json_str(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), key);
}

void ebb__json_set_str(cJSON *obj, const char *key, const char *value)
{
    cJSON *j = cJSON_CreateString(value);

    if (j == NULL)
        return;
    if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL)
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, j);
    else
        cJSON_AddItemToObject(obj, key, j);
}

void ebb__json_set(cJSON *obj, const char *key, cJSON *j)
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
struct ver *ebb__ver_make_kept(const struct rdef *d, cJSON *json, uint64_t rv)
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
    ebb__json_set_str(ebb__json_meta(json), "resourceVersion", rvs);
    ns = d->namespaced ? ebb__json_meta_str(json, "namespace") : "";
    name = ebb__json_meta_str(json, "name");
    uid = ebb__json_meta_str(json, "uid");
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
        ebb__ver_release(v);
        return NULL;
    }
    return v;
}

/* The same, `json` owned (freed). */
struct ver *ebb__ver_make(const struct rdef *d, cJSON *json, uint64_t rv)
{
    struct ver *v = ebb__ver_make_kept(d, json, rv);

    cJSON_Delete(json);
    return v;
}

/* ---- the server's sources: random, uids, time ------------------------------------ */

uint64_t ebb__serve_random(struct server *s)
{
    /* splitmix64: seeded, reproducible across runs */
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double ebb__serve_random_unit(struct server *s)
{
    return (double)(ebb__serve_random(s) >> 11) * (1.0 / 9007199254740992.0);
}

void ebb__serve_uid(struct server *s, char *buf, size_t len)
{
    uint64_t a = ebb__serve_random(s), b = ebb__serve_random(s);
    snprintf(buf, len, "%08" PRIx64 "-%04" PRIx64 "-4%03" PRIx64 "-%04" PRIx64 "-%012" PRIx64,
             a >> 32, (a >> 16) & 0xffff, a & 0xfff, (b >> 48 & (uint64_t)0x3fff) | (uint64_t)0x8000,
             b & (uint64_t)0xffffffffffff);
}

void ebb__serve_now(char *buf, size_t len)
{
    ebb_time_format((int64_t)time(NULL), buf, len);
}

/* ---- the store ------------------------------------------------------------------ */

/* Index of `key` in the sorted array, or where it would go (*found false). */
size_t ebb__ver_find(struct ver *const *v, size_t n, const char *key, bool *found)
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

int ebb__ver_insert(struct ver ***v, size_t *n, size_t *cap, size_t at, struct ver *x)
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

struct ver *ebb__store_get(struct server *s, int res, const char *key)
{
    struct store *st = &s->stores[res];
    bool found;
    size_t i = ebb__ver_find(st->v, st->n, key, &found);
    return found ? st->v[i] : NULL;
}

struct ver *ebb__store_lookup(struct server *s, int res, const char *ns, const char *name)
{
    char key[640];

    if (ebb__rdefs[res].namespaced)
        snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
    else
        snprintf(key, sizeof(key), "%s", name);
    return ebb__store_get(s, res, key);
}

void ebb__events_drop_oldest(struct server *s)
{
    struct ev *e = &s->log[s->log_head];

    s->compacted = e->rv;
    ebb__ver_release(e->obj);
    ebb__ver_release(e->prev);
    s->log_head = (s->log_head + 1) % s->log_cap;
    s->log_n--;
}

struct ev *ebb__events_at(struct server *s, size_t i)   /* 0: the oldest */
{
    return &s->log[(s->log_head + i) % s->log_cap];
}

/* Record a change: the log keeps references; watchers hear of it. */
static void record(struct server *s, int type, int res, struct ver *obj, struct ver *prev)
{
    struct ev e = { obj->rv, type, res, ebb__ver_ref(obj), ebb__ver_ref(prev) };

    if (s->log_n == s->log_cap)
        ebb__events_drop_oldest(s);
    s->log[(s->log_head + s->log_n) % s->log_cap] = e;
    s->log_n++;
    ebb__watch_notify(s, &e);
    while (s->log_n > s->log_keep)
        ebb__events_drop_oldest(s);
}

int ebb__store_put(struct server *s, int res, cJSON *json, struct ver **out)
{
    return ebb__store_put_ver(s, res, ebb__ver_make(&ebb__rdefs[res], json, s->rv + 1), out);
}

/* The budgets eviction decisions read follow every write to them (and the
 * pods, for the scheduler model of --reschedule). */
static void cache_follow(struct server *s, int res, const struct ver *v, bool deleted)
{
    struct ebb_object o;
    struct ebb_error err = { 0 };
    cJSON *json;
    int rc;

    if (res == R_PODS && s->resched != NULL)
        ebb__resched_follow(s, v, deleted);
    if (res != R_PDBS || s->cache == NULL)
        return;
    if (deleted) {
        ebb_cache_delete(s->cache, EBB_KIND_PDB, ebb_str_find(v->ns, strlen(v->ns)),
                         ebb_str_find(v->name, strlen(v->name)));
        return;
    }
    if ((json = ebb__ver_json(v)) == NULL)
        return;
    if ((rc = ebb_decode_object(json, &o, &err)) != 0) {
        ebb_log(EBB_LOG_WARN, "PodDisruptionBudget %s/%s: %s: evictions ignore it", v->ns,
                v->name, err.msg);
        cache_follow(s, res, v, true);
    } else if (o.kind != EBB_KIND_PDB || ebb_cache_put(s->cache, &o) != 0) {
        ebb_object_free(&o);
    }
    cJSON_Delete(json);
}

/* ebb__store_put of a version made at s->rv + 1 (owned; NULL: out of memory). */
int ebb__store_put_ver(struct server *s, int res, struct ver *v, struct ver **out)
{
    struct store *st = &s->stores[res];
    struct ver *prev = NULL;
    bool found;
    size_t i;

    if (v == NULL)
        return EBB_ENOMEM;
    if (v->len > EBB__OBJECT_MAX) {
        ebb__ver_release(v);
        return EBB_ELIMIT;
    }
    i = ebb__ver_find(st->v, st->n, v->key, &found);
    if (found) {
        prev = st->v[i];
        st->v[i] = v;
    } else if (ebb__ver_insert(&st->v, &st->n, &st->cap, i, v) != 0) {
        ebb__ver_release(v);
        return EBB_ENOMEM;
    }
    s->rv++;
    record(s, found ? EV_MODIFIED : EV_ADDED, res, v, prev);
    cache_follow(s, res, v, false);
    ebb__ver_release(prev);
    if (out != NULL)
        *out = v;
    return 0;
}

/* Remove an object: DELETED, with its last state at a new rv. *out (may be
 * NULL) gets that last version: a reference the caller releases. */
int ebb__store_delete(struct server *s, int res, const char *key, struct ver **out)
{
    struct store *st = &s->stores[res];
    struct ver *prev, *v;
    cJSON *copy;
    bool found;
    size_t i = ebb__ver_find(st->v, st->n, key, &found);

    if (!found)
        return EBB_ENOENT;
    prev = st->v[i];
    if ((copy = ebb__ver_json(prev)) == NULL ||
        (v = ebb__ver_make(&ebb__rdefs[res], copy, s->rv + 1)) == NULL)
        return EBB_ENOMEM;
    memmove(st->v + i, st->v + i + 1, (st->n - i - 1) * sizeof(*st->v));
    st->n--;
    s->rv++;
    record(s, EV_DELETED, res, v, prev);
    cache_follow(s, res, v, true);
    ebb__ver_release(prev);
    if (out != NULL)
        *out = v;
    else
        ebb__ver_release(v);
    return 0;
}

/* The objects of `res` as they were at `rv` (>= s->compacted): the current
 * ones with the logged changes after rv undone. A malloc'd array of
 * borrowed versions, sorted by key. */
struct ver **ebb__store_view_at(struct server *s, int res, uint64_t rv, size_t *n)
{
    struct store *st = &s->stores[res];
    struct ver **v;
    size_t cap = st->n + 16, len = st->n;

    if ((v = malloc(cap * sizeof(*v))) == NULL)
        return NULL;
    memcpy(v, st->v, st->n * sizeof(*v));
    for (size_t k = s->log_n; k-- > 0;) {
        struct ev *e = ebb__events_at(s, k);
        bool found;
        size_t i;

        if (e->rv <= rv)
            break;
        if (e->res != res)
            continue;
        i = ebb__ver_find(v, len, e->obj->key, &found);
        if (e->type == EV_ADDED) {
            if (found) {
                memmove(v + i, v + i + 1, (len - i - 1) * sizeof(*v));
                len--;
            }
        } else if (found) {
            v[i] = e->prev;
        } else if (ebb__ver_insert(&v, &len, &cap, i, e->prev) != 0) {
            free(v);
            return NULL;
        }
    }
    *n = len;
    return v;
}

/* ---- selectors ------------------------------------------------------------------ */

void ebb__filter_free(struct filter *f)
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
int ebb__filter_parse_fields(const struct rdef *d, const char *s, struct filter *f, char *msg,
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

bool ebb__filter_match(const struct filter *f, const struct ver *v)
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
