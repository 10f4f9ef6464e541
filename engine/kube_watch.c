/* The watch cache: one informer per resource (LIST, then WATCH), a poller
 * for metrics.k8s.io, and a queue that holds changes while a cycle runs.
 * See include/ebb/watch.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/quantity.h"
#include "ebb/snapshot.h"
#include "ebb/watch.h"
#include "map.h"

enum { ST_IDLE, ST_LISTING, ST_WATCHING, ST_RETRY, ST_CLOSED };

struct informers_s;

struct queued {
    struct queued *next;
    bool page;                    /* a LIST page (else one watch event line) */
    size_t len;
    char data[];
};

struct informer {
    struct ebb_informers *set;
    const char *name;             /* "pods" */
    const char *path;             /* "/api/v1/pods" */
    int kind;
    bool poll;                    /* metrics: LIST every interval, no watch */
    int state;
    char rv[128];
    bool synced;                  /* listed at least once */
    bool relisting;               /* a LIST to replace what is cached */
    struct ebb_map seen;          /* (ns, name) seen by the LIST in progress */
    uint64_t broken_since;        /* ms; 0: healthy */
    uint64_t reopened_from;       /* broken_since before the watch reopened, until it
                                   * proves itself (an event, a bookmark): an ERROR 410
                                   * right after the reopening counts from then */
    char last_error[200];         /* what broke it last (sync timeouts name it) */
    struct ebb_kube_req *req;
    char *line;                   /* an event line split across chunks */
    size_t line_len, line_cap;
    uv_timer_t timer;             /* retries and polls */
    int attempt;
    struct queued *qhead, *qtail;
    size_t queued;
    struct ebb_informer_stats st;
};

#define SPILL_SEGMENT ((uint64_t)32 << 20)   /* see spill_tend */
#define SPILL_SLACK (2 * SPILL_SEGMENT)

static FILE *spill_file(void);

struct segment {
    uint16_t src;                 /* the cache's source index */
    uint64_t size;
};

struct ebb_informers {
    uv_loop_t *loop;
    struct ebb_kube *kube;
    struct ebb_cache *cache;
    struct ebb_informers_opts o;
    FILE *spill;                  /* bytes of cached objects, for pod.object */
    uint16_t spill_src;
    struct ebb_json_arena *arena; /* watch events are parsed here */
    bool hold;
    bool started;
    uint64_t started_at;          /* uv_hrtime() of ebb_informers_start */
    bool compacted;               /* laid out once, when everything first synced */
    uint64_t spill_off;           /* bytes in the spill file written to: ftell would
                                   * flush its buffer (and lseek) every event */
    uint64_t spill_check;         /* size of the spill file at which to start another */
    struct segment *segs;         /* the spill files before it, see spill_tend */
    size_t nsegs, capsegs;
    uint64_t spill_moves, spill_moved;
    size_t n;
    struct informer inf[10];
    ebb_informer_change_fn change;
    void *change_ud;
    int closing;                  /* timers still to close */
    void (*closed_cb)(void *);
    void *closed_ud;
};

static uint64_t now_ms(struct ebb_informers *s)
{
    return uv_now(s->loop);
}

/* ---- setup -------------------------------------------------------------- */

static void add(struct ebb_informers *s, const char *name, const char *path, int kind, bool poll)
{
    struct informer *i = &s->inf[s->n++];
    memset(i, 0, sizeof(*i));
    i->set = s;
    i->name = name;
    i->path = path;
    i->kind = kind;
    i->poll = poll;
    i->st.resource = name;
    ebb__map_init(&i->seen);
    uv_timer_init(s->loop, &i->timer);
    i->timer.data = i;
}

int ebb_informers_create(uv_loop_t *loop, struct ebb_kube *kube, struct ebb_cache *cache,
                         const struct ebb_informers_opts *opts, struct ebb_informers **out)
{
    struct ebb_informers *s;

    if (loop == NULL || kube == NULL || cache == NULL || out == NULL)
        return EBB_EINVAL;
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return EBB_ENOMEM;
    s->loop = loop;
    s->kube = kube;
    s->cache = cache;
    if (opts)
        s->o = *opts;
    if (s->o.page_size <= 0)
        s->o.page_size = 500;
    if (s->o.watch_timeout_s <= 0)
        s->o.watch_timeout_s = 300;
    if (s->o.metrics_interval_s <= 0)
        s->o.metrics_interval_s = 5;
    if (ebb_json_arena_create(&s->arena) != 0) {
        free(s);
        return EBB_ENOMEM;
    }
    s->spill_check = SPILL_SEGMENT;
    if ((s->spill = spill_file()) == NULL || ebb_cache_add_source(cache, s->spill, &s->spill_src) != 0) {
        if (s->spill)
            fclose(s->spill);
        ebb_json_arena_destroy(s->arena);
        free(s);
        return EBB_EIO;
    }
    /* nodes first: a cycle needs them, and pods refer to them */
    add(s, "nodes", "/api/v1/nodes", EBB_KIND_NODE, false);
    add(s, "namespaces", "/api/v1/namespaces", EBB_KIND_NAMESPACE, false);
    add(s, "priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses", EBB_KIND_PRIORITY_CLASS, false);
    add(s, "persistentvolumeclaims", "/api/v1/persistentvolumeclaims", EBB_KIND_PVC, false);
    add(s, "poddisruptionbudgets", "/apis/policy/v1/poddisruptionbudgets", EBB_KIND_PDB, false);
    add(s, "pods", "/api/v1/pods", EBB_KIND_POD, false);
    if (s->o.koord_metrics)
        add(s, "nodemetrics.slo.koordinator.sh", "/apis/slo.koordinator.sh/v1alpha1/nodemetrics",
            EBB_KIND_KOORD_NODE_METRIC, false);
    if (s->o.metrics) {
        add(s, "nodes.metrics.k8s.io", "/apis/metrics.k8s.io/v1beta1/nodes", EBB_KIND_NODE_METRICS, true);
        add(s, "pods.metrics.k8s.io", "/apis/metrics.k8s.io/v1beta1/pods", EBB_KIND_POD_METRICS, true);
    }
    *out = s;
    return 0;
}

void ebb_informers_on_change(struct ebb_informers *s, ebb_informer_change_fn fn, void *ud)
{
    s->change = fn;
    s->change_ud = ud;
}

static void changed(struct ebb_informers *s, int kind, const char *type, ebb_str ns, ebb_str name)
{
    if (s->change)
        s->change(s->change_ud, kind, type, ns, name);
}

/* ---- retry -------------------------------------------------------------- */

static void start_list(struct informer *i, const char *cont);
static void start_watch(struct informer *i);

static void on_timer(uv_timer_t *t)
{
    struct informer *i = t->data;

    if (i->state == ST_CLOSED)
        return;
    if (i->poll || !i->synced || i->relisting || i->rv[0] == '\0')
        start_list(i, NULL);
    else
        start_watch(i);
}

/* Back off with full jitter: 100 ms doubling to 30 s. */
static void retry_later(struct informer *i)
{
    uint64_t cap = 100u << (i->attempt < 9 ? i->attempt : 9);

    if (cap > 30000)
        cap = 30000;
    i->attempt++;
    i->state = ST_RETRY;
    uv_timer_start(&i->timer, on_timer, (uint64_t)(rand() % (int)cap) + 1, 0);
}

static void broke(struct informer *i, const char *why)
{
    i->st.errors++;
    if (i->broken_since == 0)
        i->broken_since = now_ms(i->set);
    i->reopened_from = 0;
    snprintf(i->last_error, sizeof(i->last_error), "%s", why);
    ebb_log(EBB_LOG_WARN, "watch %s: %s", i->name, why);
}

/* ---- LIST ----------------------------------------------------------------- */

static void list_seen(void *ud, int kind, ebb_str ns, ebb_str name)
{
    struct informer *i = ud;
    void *old;
    (void)kind;
    if (name && ebb__map_put(&i->seen, name, ns, (void *)1, &old) == 0 && old == NULL) {
        ebb_str_ref(name);
        ebb_str_ref(ns);
    }
}

static void free_seen(struct informer *i)
{
    for (size_t k = 0; k < i->seen.cap; k++) {
        if (ebb__map_live(&i->seen, k)) {
            ebb_str_release(i->seen.s[k].a);
            ebb_str_release(i->seen.s[k].b);
        }
    }
    ebb__map_free(&i->seen);
}

struct gone {
    struct informer *i;
    size_t n, cap;
    struct { ebb_str ns, name; } *v;
};

static void key_of(int kind, void *obj, ebb_str *ns, ebb_str *name)
{
    struct ebb_object o = { .kind = kind, .u.any = obj };
    *ns = *name = NULL;
    switch (kind) {
    case EBB_KIND_POD: *ns = o.u.pod->ns; *name = o.u.pod->name; break;
    case EBB_KIND_NODE: *name = o.u.node->name; break;
    case EBB_KIND_NAMESPACE: *name = o.u.ns->name; break;
    case EBB_KIND_PRIORITY_CLASS: *name = o.u.pc->name; break;
    case EBB_KIND_PVC: *ns = o.u.pvc->ns; *name = o.u.pvc->name; break;
    case EBB_KIND_PDB: *ns = o.u.pdb->ns; *name = o.u.pdb->name; break;
    case EBB_KIND_NODE_METRICS: *name = o.u.node_metrics->node; break;
    case EBB_KIND_POD_METRICS: *ns = o.u.pod_metrics->ns; *name = o.u.pod_metrics->name; break;
    case EBB_KIND_KOORD_NODE_METRIC: *name = o.u.koord->node; break;
    default: break;
    }
}

static void collect_gone(void *obj, void *ud)
{
    struct gone *g = ud;
    ebb_str ns, name;

    key_of(g->i->kind, obj, &ns, &name);
    if (ebb__map_get(&g->i->seen, name, ns) != NULL)
        return;
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        void *v = realloc(g->v, cap * sizeof(*g->v));
        if (v == NULL)
            return;
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n].ns = ebb_str_ref(ns);
    g->v[g->n].name = ebb_str_ref(name);
    g->n++;
}

/* A full LIST replaced what was cached: delete what it no longer holds. */
static void drop_unseen(struct informer *i)
{
    struct gone g = { i, 0, 0, NULL };

    ebb_cache_each(i->set->cache, i->kind, collect_gone, &g);
    for (size_t k = 0; k < g.n; k++) {
        if (ebb_cache_delete(i->set->cache, i->kind, g.v[k].ns, g.v[k].name) == 0)
            changed(i->set, i->kind, "DELETED", g.v[k].ns, g.v[k].name);
        ebb_str_release(g.v[k].ns);
        ebb_str_release(g.v[k].name);
    }
    free(g.v);
}

/* Node metrics are smoothed: round(0.9 * previous + 0.1 * new), as
 * upstream's metrics collector does. */
static void apply_metrics_page(struct informer *i, const char *body, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(body, len);
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "items"), *it;

    if (!cJSON_IsArray(items)) {
        broke(i, "metrics answer is not a List");
        cJSON_Delete(j);
        return;
    }
    cJSON_ArrayForEach(it, items) {
        struct ebb_object o = { 0 };
        struct ebb_error err = { 0 };
        ebb_str ns, name;

        if (ebb_decode_object_as(it, i->kind, &o, &err) != 0) {
            ebb_log(EBB_LOG_WARN, "%s: %s: %s", i->name, err.field, err.msg);
            i->st.errors++;
            continue;
        }
        if (o.kind != i->kind) {
            ebb_object_free(&o);
            continue;
        }
        if (o.kind == EBB_KIND_NODE_METRICS) {
            struct ebb_node_metrics *old = ebb_cache_node_metrics(i->set->cache, o.u.node_metrics->node);
            for (uint16_t k = 0; old && k < o.u.node_metrics->usage.n; k++) {
                struct ebb_rq *q = &o.u.node_metrics->usage.q[k];
                if (ebb_res_has(&old->usage, q->id))
                    /* saturated, never converted out of range (ebb/quantity.h) */
                    q->v = ebb_q_of_double(0.9 * (double)ebb_res_get(&old->usage, q->id) + 0.1 * (double)q->v + 0.5);
            }
        }
        key_of(o.kind, o.u.any, &ns, &name);
        ns = ebb_str_ref(ns);
        name = ebb_str_ref(name);
        if (ebb_cache_put(i->set->cache, &o) != 0) {
            ebb_object_free(&o);
        } else {
            list_seen(i, o.kind, ns, name);
            changed(i->set, i->kind, "MODIFIED", ns, name);
        }
        ebb_str_release(ns);
        ebb_str_release(name);
    }
    cJSON_Delete(j);
}

/* Once every resource has been listed the first time, before any cycle:
 * sort the indexes once and lay the pods out in the order cycles visit
 * them (ebb_cache_compact; slots are renumbered, which nothing holds yet). */
static void first_sync(struct ebb_informers *s)
{
    if (s->compacted || !ebb_informers_synced(s))
        return;
    s->compacted = true;
    ebb_log(EBB_LOG_INFO, "watch: caches synced in %.2f s: %zu nodes, %zu pods",
            (double)(uv_hrtime() - s->started_at) / 1e9, ebb_cache_count(s->cache, EBB_KIND_NODE),
            ebb_cache_count(s->cache, EBB_KIND_POD));
    ebb_cache_build_indexes(s->cache);
    if (ebb_cache_compact(s->cache) != 0)
        ebb_log(EBB_LOG_WARN, "watch: out of memory laying out the pods; they stay where they are");
}

/* Every new version of a pod or node is appended to the spill, so under
 * churn it would grow without end. It is a chain of files (segments) of
 * about SPILL_SEGMENT bytes: when the one written to is full, a new one
 * starts, and while the older ones hold more than twice their live bytes
 * plus SPILL_SLACK, the one with the fewest live bytes has them copied to
 * the new one and is closed (its disk space goes with it). The spill so
 * stays under about twice the live bytes plus SPILL_SLACK and a segment,
 * and no copy moves more than half a segment (the segment chosen is no
 * more live than the average, under half): the loop is never held long. */
static FILE *spill_file(void)
{
    FILE *f = tmpfile();

    if (f != NULL)
        setvbuf(f, NULL, _IOFBF, 1u << 20);   /* events append a few KB each: one write per MB */
    return f;
}

static void spill_tend(struct ebb_informers *s)
{
    uint64_t size = s->spill_off;
    uint64_t *live;
    uint16_t next, top = s->spill_src;
    size_t k;
    FILE *f;
    int rc;

    if (size < s->spill_check)
        return;
    if (s->nsegs == s->capsegs) {
        size_t cap = s->capsegs ? s->capsegs * 2 : 16;
        struct segment *v = realloc(s->segs, cap * sizeof(*v));
        if (v == NULL)
            return;
        s->segs = v;
        s->capsegs = cap;
    }
    if ((f = spill_file()) == NULL || ebb_cache_add_source(s->cache, f, &next) != 0) {
        if (f)
            fclose(f);
        ebb_log(EBB_LOG_WARN, "watch: cannot start a new spill file: %s; the current one grows",
                strerror(errno));
        s->spill_check = size + SPILL_SEGMENT;
        return;
    }
    s->segs[s->nsegs++] = (struct segment){ s->spill_src, size };
    ebb_cache_seal_source(s->cache, s->spill_src);   /* on failure it keeps its buffer */
    s->spill = f;
    s->spill_src = next;
    s->spill_off = 0;
    s->spill_check = SPILL_SEGMENT;
    for (k = 0; k < s->nsegs; k++)
        if (s->segs[k].src > top)
            top = s->segs[k].src;
    if (next > top)
        top = next;
    if ((live = malloc(((size_t)top + 1) * sizeof(*live))) == NULL)
        return;
    ebb_cache_sources_live(s->cache, live, (size_t)top + 1);
    /* Over the bound, the segment with the fewest live bytes goes first:
     * most churn rewrites the same pods, so older segments empty on their
     * own and reclaiming them copies little or nothing. */
    for (;;) {
        uint64_t total = 0, total_live = 0, moved = 0;
        size_t best = SIZE_MAX;
        for (k = 0; k < s->nsegs; k++) {
            total += s->segs[k].size;
            total_live += live[s->segs[k].src];
            if (best == SIZE_MAX || live[s->segs[k].src] < live[s->segs[best].src])
                best = k;
        }
        if (best == SIZE_MAX || total <= 2 * total_live + SPILL_SLACK)
            break;
        if ((rc = ebb_cache_move_source(s->cache, s->segs[best].src, s->spill_src, &moved)) != 0) {
            ebb_log(EBB_LOG_WARN, "watch: reclaiming a spill file: %s; it stays", ebb_strerror(rc));
            break;
        }
        live[s->spill_src] += moved;
        live[s->segs[best].src] = 0;
        s->spill_off += moved;
        s->spill_moves++;
        s->spill_moved += moved;
        s->segs[best] = s->segs[--s->nsegs];
    }
    free(live);
}

/* Append an event line to the spill; *off gets where it starts. */
static bool write_spill(struct ebb_informers *s, const char *line, size_t len, uint64_t *off)
{
    if (fwrite(line, 1, len, s->spill) != len) {
        long at = ftell(s->spill);   /* where a partial write left it */
        if (at >= 0)
            s->spill_off = (uint64_t)at;
        return false;
    }
    *off = s->spill_off;
    s->spill_off += len;
    return true;
}

uint64_t ebb_informers_spill_bytes(const struct ebb_informers *s, uint64_t *live, uint64_t *moves)
{
    uint64_t size = s ? s->spill_off : 0, *v;
    uint16_t top;

    if (live)
        *live = 0;
    if (moves)
        *moves = s ? s->spill_moves : 0;
    if (s == NULL)
        return 0;
    top = s->spill_src;
    for (size_t k = 0; k < s->nsegs; k++) {
        size += s->segs[k].size;
        if (s->segs[k].src > top)
            top = s->segs[k].src;
    }
    if (live && (v = malloc(((size_t)top + 1) * sizeof(*v))) != NULL) {
        ebb_cache_sources_live(s->cache, v, (size_t)top + 1);
        *live += v[s->spill_src];
        for (size_t k = 0; k < s->nsegs; k++)
            *live += v[s->segs[k].src];
        free(v);
    }
    return size;
}

/* Apply one LIST page (now, or when the hold ends). */
static void apply_page(struct informer *i, const char *body, size_t len)
{
    struct ebb_list_meta meta;
    struct ebb_error err = { 0 };
    char name[96];
    bool asked = false, ahead = false;
    int rc;

    if (i->poll) {
        apply_metrics_page(i, body, len);
        drop_unseen(i);
        free_seen(i);
        i->synced = true;
        i->st.lists++;
        first_sync(i->set);
        return;
    }
    /* Ask for the next page before decoding this one: the server makes it
     * while this one is decoded. */
    if (i->req == NULL && ebb_snapshot_list_peek(body, len, &meta) == 0 && meta.cont[0] != '\0') {
        start_list(i, meta.cont);
        asked = true;
        ahead = i->req != NULL;   /* else a retry is armed */
    }
    snprintf(name, sizeof(name), "LIST %s", i->path);
    rc = ebb_snapshot_load_page(i->set->cache, i->set->spill, i->set->spill_src, body, len, name,
                                i->kind, &meta, list_seen, i, &err);
    {
        long at = ftell(i->set->spill);   /* once a page: the page was appended */
        if (at >= 0)
            i->set->spill_off = (uint64_t)at;
    }
    spill_tend(i->set);
    if (rc != 0) {
        char msg[1200];
        ebb_error_format(&err, msg, sizeof(msg));
        broke(i, msg);
        /* half a page may be in: only a complete relist can be trusted */
        i->relisting = true;
        free_seen(i);
        if (ahead) {
            struct ebb_kube_req *r = i->req;
            i->req = NULL;
            ebb_kube_cancel(r);
        }
        retry_later(i);
        return;
    }
    if (meta.cont[0] != '\0') {
        if (!asked)
            start_list(i, meta.cont);
        return;
    }
    drop_unseen(i);
    free_seen(i);
    snprintf(i->rv, sizeof(i->rv), "%s", meta.resource_version);
    i->synced = true;
    i->relisting = false;
    i->broken_since = i->reopened_from = 0;   /* the view is the server's as of now */
    i->last_error[0] = '\0';
    i->attempt = 0;
    i->st.lists++;
    changed(i->set, i->kind, "RELIST", NULL, NULL);
    start_watch(i);
    first_sync(i->set);
}

static void queue(struct informer *i, bool page, const char *data, size_t len)
{
    struct queued *q = malloc(sizeof(*q) + len + 1);

    if (q == NULL) {
        broke(i, "out of memory while a cycle runs; relisting after it");
        i->relisting = true;
        return;
    }
    q->next = NULL;
    q->page = page;
    q->len = len;
    memcpy(q->data, data, len);
    q->data[len] = '\0';
    if (i->qtail)
        i->qtail->next = q;
    else
        i->qhead = q;
    i->qtail = q;
    i->queued++;
    i->st.queued = i->queued;
}

static void on_list_done(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct informer *i = ud;
    char msg[400];

    if (req != i->req)
        return;   /* cancelled on purpose (a page asked for ahead) */
    i->req = NULL;
    if (i->state == ST_CLOSED)
        return;
    if (status == 200) {
        if (i->set->hold)
            queue(i, true, body, len);
        else
            apply_page(i, body, len);
        if (i->poll)
            uv_timer_start(&i->timer, on_timer, (uint64_t)(i->set->o.metrics_interval_s * 1000), 0);
        return;
    }
    if (status == 410) {
        /* the continue token expired: start the list over */
        free_seen(i);
        start_list(i, NULL);
        return;
    }
    {
        char why[160];
        ebb_kube_status_message(status, body, len, why, sizeof(why));
        snprintf(msg, sizeof(msg), "LIST %s answered %d: %s", i->path, status, why);
    }
    broke(i, msg);
    free_seen(i);
    if (i->poll)
        uv_timer_start(&i->timer, on_timer, (uint64_t)(i->set->o.metrics_interval_s * 1000), 0);
    else
        retry_later(i);
}

static void start_list(struct informer *i, const char *cont)
{
    char path[4096 + 256];
    struct ebb_kube_req_opts o = { .method = "GET", .on_done = on_list_done, .ud = i };

    if (cont && cont[0])
        snprintf(path, sizeof(path), "%s?limit=%d&continue=%s", i->path, i->set->o.page_size, cont);
    else if (i->poll)
        snprintf(path, sizeof(path), "%s", i->path);
    else
        snprintf(path, sizeof(path), "%s?limit=%d", i->path, i->set->o.page_size);
    o.path = path;
    i->state = ST_LISTING;
    if (ebb_kube_request(i->set->kube, &o, &i->req) != 0) {
        broke(i, "cannot start a LIST");
        retry_later(i);
    }
}

/* ---- WATCH ---------------------------------------------------------------- */

static void relist(struct informer *i, const char *why)
{
    ebb_log(EBB_LOG_INFO, "watch %s: %s: relisting", i->name, why);
    /* stale until the new list is in, counted from when it first broke */
    if (i->broken_since == 0)
        i->broken_since = i->reopened_from ? i->reopened_from : now_ms(i->set);
    i->reopened_from = 0;
    snprintf(i->last_error, sizeof(i->last_error), "relisting: %s", why);
    i->relisting = true;
    if (i->req) {
        struct ebb_kube_req *r = i->req;
        i->req = NULL;
        ebb_kube_cancel(r);
    }
    start_list(i, NULL);
}

/* One event line. Returns 0, or -1 when the stream must be restarted. */
static int apply_event(struct informer *i, const char *line, size_t len)
{
    struct ebb_informers *s = i->set;
    cJSON *ev = ebb_json_arena_parse(s->arena, line, len), *obj;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    const cJSON *meta, *rv;
    const char *t;
    struct ebb_object o = { 0 };
    struct ebb_error err = { 0 };
    ebb_str ns, name;
    uint64_t off;
    int rc;

    if (ev == NULL || !cJSON_IsString(type) ||
        !cJSON_IsObject(obj = cJSON_GetObjectItemCaseSensitive(ev, "object"))) {
        broke(i, "a watch event that is not an event object; resuming");
        ebb_json_arena_reset(s->arena);
        return -1;
    }
    t = type->valuestring;
    meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");
    if (strcmp(t, "ERROR") == 0) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
        int c = cJSON_IsNumber(code) ? code->valueint : 0;
        ebb_json_arena_reset(s->arena);
        if (c == 410) {
            relist(i, "resourceVersion expired (410)");
            return 1;
        }
        broke(i, "the watch answered an ERROR event; resuming");
        return -1;
    }
    if (strcmp(t, "BOOKMARK") == 0) {
        if (cJSON_IsString(rv))
            snprintf(i->rv, sizeof(i->rv), "%s", rv->valuestring);
        i->reopened_from = 0;
        ebb_json_arena_reset(s->arena);
        return 0;
    }
    if (strcmp(t, "ADDED") != 0 && strcmp(t, "MODIFIED") != 0 && strcmp(t, "DELETED") != 0) {
        char msg[128];
        snprintf(msg, sizeof(msg), "unknown watch event type \"%.40s\"; resuming", t);
        broke(i, msg);
        ebb_json_arena_reset(s->arena);
        return -1;
    }
    if ((rc = ebb_decode_object_as(obj, i->kind, &o, &err)) != 0 || o.kind != i->kind) {
        char msg[1200];
        if (rc == 0) {
            ebb_object_free(&o);
            snprintf(err.msg, sizeof(err.msg), "not a %s", i->name);
        }
        snprintf(msg, sizeof(msg), "a %s event with a bad object: %s: %s; resuming", t, err.field, err.msg);
        broke(i, msg);
        ebb_json_arena_reset(s->arena);
        return -1;
    }
    key_of(o.kind, o.u.any, &ns, &name);
    ns = ebb_str_ref(ns);
    name = ebb_str_ref(name);
    if (strcmp(t, "DELETED") == 0) {
        ebb_object_free(&o);
        ebb_cache_delete(s->cache, i->kind, ns, name);
    } else {
        /* the event line backs pod.object */
        if ((o.kind == EBB_KIND_POD || o.kind == EBB_KIND_NODE) && write_spill(s, line, len, &off)) {
            struct ebb_src src = { off, (uint32_t)len, s->spill_src, 1 };
            if (o.kind == EBB_KIND_POD)
                o.u.pod->src = src;
            else
                o.u.node->src = src;
        }
        if (ebb_cache_put(s->cache, &o) != 0)
            ebb_object_free(&o);
        spill_tend(s);
    }
    if (cJSON_IsString(rv))
        snprintf(i->rv, sizeof(i->rv), "%s", rv->valuestring);
    i->reopened_from = 0;
    i->st.events++;
    changed(s, i->kind, t, ns, name);
    ebb_str_release(ns);
    ebb_str_release(name);
    ebb_json_arena_reset(s->arena);
    return 0;
}

static void restart_watch(struct informer *i)
{
    struct ebb_kube_req *r = i->req;

    i->req = NULL;
    if (r)
        ebb_kube_cancel(r);
    i->st.resumes++;
    retry_later(i);
}

/* The server accepted the watch from our resourceVersion (2xx, headers
 * in): the view is current again, whether or not an event follows (a quiet
 * resource may send none for minutes). A 410 in the stream before any
 * event still counts the staleness from the first break (reopened_from). */
static void on_watch_open(struct ebb_kube_req *req, void *ud)
{
    struct informer *i = ud;
    (void)req;

    if (i->broken_since != 0) {
        ebb_log(EBB_LOG_INFO, "watch %s: resumed from resourceVersion %s", i->name, i->rv);
        i->reopened_from = i->broken_since;
    }
    i->broken_since = 0;
    i->attempt = 0;
}

/* Complete lines of the stream; a partial one waits for the next chunk. */
static void on_watch_data(struct ebb_kube_req *req, const char *data, size_t len, void *ud)
{
    struct informer *i = ud;
    (void)req;

    i->broken_since = 0;
    i->attempt = 0;
    while (len > 0 && i->state == ST_WATCHING) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (i->line_len + take + 1 > i->line_cap) {
            size_t cap = i->line_cap ? i->line_cap : 65536;
            while (cap < i->line_len + take + 1)
                cap *= 2;
            char *b = realloc(i->line, cap);
            if (b == NULL) {
                broke(i, "out of memory reading a watch event");
                restart_watch(i);
                return;
            }
            i->line = b;
            i->line_cap = cap;
        }
        memcpy(i->line + i->line_len, data, take);
        i->line_len += take;
        data += take;
        len -= take;
        if (nl == NULL)
            return;
        data++;
        len--;
        if (i->line_len > 0) {
            int rc = 0;
            if (i->set->hold)
                queue(i, false, i->line, i->line_len);
            else
                rc = apply_event(i, i->line, i->line_len);
            i->line_len = 0;
            if (rc < 0) {
                restart_watch(i);
                return;
            }
            if (rc > 0)
                return;   /* relisting */
        }
    }
}

static void on_watch_done(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct informer *i = ud;
    char msg[200];
    (void)len;

    if (i->req != req)
        return;   /* cancelled on purpose */
    i->req = NULL;
    if (i->state == ST_CLOSED)
        return;
    if (i->line_len > 0) {
        /* the stream ended in the middle of an event: nothing of it applies */
        i->line_len = 0;
        broke(i, "the watch stream ended inside an event; resuming");
        i->st.resumes++;
        retry_later(i);
        return;
    }
    if (status == 200) {
        /* the server's timeoutSeconds: carry on from where we are */
        i->st.resumes++;
        start_watch(i);
        return;
    }
    if (status == 410) {
        relist(i, "resourceVersion expired (410)");
        return;
    }
    snprintf(msg, sizeof(msg), "WATCH %s ended: %d%s%.100s", i->path, status, body ? " " : "",
             body ? body : "");
    broke(i, msg);
    i->st.resumes++;
    retry_later(i);
}

static void start_watch(struct informer *i)
{
    char path[512];
    struct ebb_kube_req_opts o = {
        .method = "GET", .stream = true, .on_data = on_watch_data, .on_done = on_watch_done,
        .on_open = on_watch_open, .ud = i,
    };

    snprintf(path, sizeof(path), "%s?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d",
             i->path, i->rv, i->set->o.watch_timeout_s);
    o.path = path;
    i->state = ST_WATCHING;
    i->line_len = 0;
    if (ebb_kube_request(i->set->kube, &o, &i->req) != 0) {
        broke(i, "cannot start a WATCH");
        retry_later(i);
    }
}

/* ---- public --------------------------------------------------------------- */

void ebb_informers_start(struct ebb_informers *s)
{
    s->started = true;
    s->started_at = uv_hrtime();
    for (size_t k = 0; k < s->n; k++)
        start_list(&s->inf[k], NULL);
}

/* A reloaded policy may need a source the first one did not: it is added
 * (and listed at once when the others run); until it has synced, cycles
 * wait as they do at start. Sources are never dropped: a later policy may
 * want them again, and they cost little. */
void ebb_informers_enable(struct ebb_informers *s, bool metrics, bool koord_metrics)
{
    size_t first = s->n;

    if (koord_metrics && !s->o.koord_metrics) {
        s->o.koord_metrics = true;
        add(s, "nodemetrics.slo.koordinator.sh", "/apis/slo.koordinator.sh/v1alpha1/nodemetrics",
            EBB_KIND_KOORD_NODE_METRIC, false);
    }
    if (metrics && !s->o.metrics) {
        s->o.metrics = true;
        add(s, "nodes.metrics.k8s.io", "/apis/metrics.k8s.io/v1beta1/nodes", EBB_KIND_NODE_METRICS, true);
        add(s, "pods.metrics.k8s.io", "/apis/metrics.k8s.io/v1beta1/pods", EBB_KIND_POD_METRICS, true);
    }
    for (size_t k = first; s->started && k < s->n; k++)
        start_list(&s->inf[k], NULL);
}

bool ebb_informers_synced(const struct ebb_informers *s)
{
    for (size_t k = 0; k < s->n; k++)
        if (!s->inf[k].synced)
            return false;
    return true;
}

uint64_t ebb_informers_broken_ms(const struct ebb_informers *s, char *which, size_t len)
{
    uint64_t worst = 0, now = uv_now(s->loop);

    for (size_t k = 0; k < s->n; k++) {
        const struct informer *i = &s->inf[k];
        if (i->poll || i->broken_since == 0)
            continue;
        if (now - i->broken_since >= worst) {
            worst = now - i->broken_since;
            if (which)
                snprintf(which, len, "%s", i->name);
        }
    }
    return worst;
}

static void drain(struct informer *i)
{
    while (i->qhead != NULL && !i->set->hold) {
        struct queued *q = i->qhead;
        i->qhead = q->next;
        if (i->qhead == NULL)
            i->qtail = NULL;
        i->queued--;
        i->st.queued = i->queued;
        if (q->page) {
            apply_page(i, q->data, q->len);
        } else if (!i->relisting && apply_event(i, q->data, q->len) < 0) {
            /* the rest of the queue belongs to a stream we restart */
            free(q);
            while (i->qhead) {
                q = i->qhead;
                i->qhead = q->next;
                free(q);
            }
            i->qtail = NULL;
            i->queued = 0;
            i->st.queued = 0;
            restart_watch(i);
            return;
        }
        free(q);
    }
}

void ebb_informers_hold(struct ebb_informers *s, bool hold)
{
    s->hold = hold;
    if (!hold)
        for (size_t k = 0; k < s->n; k++)
            drain(&s->inf[k]);
}

size_t ebb_informers_stats(const struct ebb_informers *s, struct ebb_informer_stats *out, size_t max)
{
    for (size_t k = 0; k < s->n && k < max; k++) {
        out[k] = s->inf[k].st;
        out[k].synced = s->inf[k].synced;
        out[k].last_error = s->inf[k].last_error[0] ? s->inf[k].last_error : NULL;
        out[k].watching = s->inf[k].state == ST_WATCHING && s->inf[k].broken_since == 0;
    }
    return s->n;
}

static void timer_closed(uv_handle_t *h)
{
    struct informer *i = h->data;
    struct ebb_informers *s = i->set;

    if (--s->closing > 0)
        return;
    for (size_t k = 0; k < s->n; k++) {
        struct informer *x = &s->inf[k];
        while (x->qhead) {
            struct queued *q = x->qhead;
            x->qhead = q->next;
            free(q);
        }
        free(x->line);
        free_seen(x);
    }
    if (s->closed_cb)
        s->closed_cb(s->closed_ud);
    ebb_json_arena_destroy(s->arena);
    free(s->segs);
    free(s);   /* the spill files belong to the cache */
}

void ebb_informers_close(struct ebb_informers *s, void (*cb)(void *ud), void *ud)
{
    s->closed_cb = cb;
    s->closed_ud = ud;
    s->closing = (int)s->n;
    for (size_t k = 0; k < s->n; k++) {
        struct informer *i = &s->inf[k];
        struct ebb_kube_req *r = i->req;
        i->state = ST_CLOSED;
        i->req = NULL;
        if (r)
            ebb_kube_cancel(r);
        uv_timer_stop(&i->timer);
        uv_close((uv_handle_t *)&i->timer, timer_closed);
    }
    if (s->n == 0) {
        if (cb)
            cb(ud);
        ebb_json_arena_destroy(s->arena);
        free(s->segs);
        free(s);
    }
}
