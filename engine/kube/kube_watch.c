/* The watch cache: one informer per resource (a streaming list or a paged
 * LIST, then WATCH), a poller for metrics.k8s.io, and a queue that holds
 * changes while a cycle runs. See include/ebb/watch.h; the streaming list's
 * requests and fallback are in kube_watchlist.c, the spill in kube_spill.c,
 * the state they share in kube/watch_int.h.
 *
 * Every byte a server sends is bounded here or below: a LIST answer is
 * read as it arrives (ebb_list_reader: one item held at a time), at most
 * EBB_LIST_PAGE_MAX bytes and as many items as were asked for, a LIST
 * round at most EBB_LIST_OBJECTS_MAX objects; a watch event at most
 * EBB_OBJECT_MAX plus its envelope; what waits while a cycle runs at most
 * EBB_HOLD_QUEUE_MAX in all. Past a bound, that request fails (and is
 * retried with backoff, a page with half the limit) or the resource is
 * listed again; never more memory. An object ebb cannot keep is skipped
 * alone (ebb_decode_from_server decides), never its page or its stream.
 *
 * A streaming list is a watch whose initial events are a LIST round: its
 * events are bounded as a watch's (one line held at a time), its objects
 * are counted as a round's (EBB_LIST_OBJECTS_MAX), what it held is marked
 * seen, and its initial-events-end bookmark ends the round as a last page
 * does (what it did not hold is deleted; synced; the watch goes on in the
 * same stream from the bookmark's resourceVersion). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "ebb/quantity.h"
#include "ebb/snapshot.h"
#include "ebb/watch.h"
#include "kube/watch_int.h"

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
    i->limit = s->o.page_size;
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
    ebb_cache_keep_text(cache, s->o.object_text);
    if (ebb_json_arena_create(&s->arena) != 0) {
        free(s);
        return EBB_ENOMEM;
    }
    if (ebb__spill_open(&s->spill, cache) != 0) {
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

void ebb_informers_on_skip(struct ebb_informers *s, ebb_informer_skip_fn fn, void *ud)
{
    s->skip = fn;
    s->skip_ud = ud;
}

void ebb__watch_changed(struct ebb_informers *s, int kind, const char *type, ebb_str ns, ebb_str name)
{
    if (s->change)
        s->change(s->change_ud, kind, type, ns, name);
}

/* An object skipped alone: counted, and handed to whoever reports it (a
 * warning, a metric, an Event); logged here when nobody does. */
static void skipped(struct informer *i, const struct ebb_skip *why)
{
    i->st.skipped++;
    if (i->set->skip != NULL) {
        i->set->skip(i->set->skip_ud, i->name, why);
        return;
    }
    ebb_log(EBB_LOG_WARN, "watch %s: skipped %s%s%s: %s%s%s", i->name, why->ns,
            why->ns[0] ? "/" : "", why->name[0] ? why->name : "(no name)", why->err.field,
            why->err.field[0] ? ": " : "", why->err.msg);
}

/* ---- retry -------------------------------------------------------------- */

static void start_watch(struct informer *i);

static void on_timer(uv_timer_t *t)
{
    struct informer *i = t->data;

    if (i->state == ST_CLOSED)
        return;
    if (i->poll || !i->synced || i->relisting || i->rv[0] == '\0') {
        if (i->cont[0] == '\0' && ebb__watch_use_stream(i))
            ebb__watch_start_stream(i);
        else
            ebb__watch_start_list(i, i->cont);   /* the page that failed, or the first */
    } else
        start_watch(i);
}

/* What backoffs are multiplied by: the hostile-server fuzzer makes them
 * nothing, so a retry runs at the next turn of the loop. */
double ebb__informers_backoff = 1.0;

/* Back off with full jitter: 100 ms doubling to 30 s. */
void ebb__watch_retry_later(struct informer *i)
{
    uint64_t cap = 100u << (i->attempt < 9 ? i->attempt : 9);

    if (cap > 30000)
        cap = 30000;
    i->attempt++;
    i->state = ST_RETRY;
    i->streaming = false;   /* the next round decides again (ebb__watch_start_sync) */
    uv_timer_start(&i->timer, on_timer,
                   (uint64_t)((double)((uint64_t)(rand() % (int)cap) + 1) * ebb__informers_backoff), 0);
}

/* The view of this resource is not current from now on (or from when the
 * watch last reopened without proving itself: a watch the server accepts
 * and then breaks, again and again, is stale all along). */
void ebb__watch_broke(struct informer *i, const char *why)
{
    i->st.errors++;
    if (i->broken_since == 0)
        i->broken_since = i->reopened_from ? i->reopened_from : ebb__watch_now_ms(i->set);
    i->reopened_from = 0;
    /* what a server said goes into /readyz and the log: shown safely */
    ebb_decode_shown(why, i->last_error, sizeof(i->last_error));
    ebb_log(EBB_LOG_WARN, "watch %s: %s", i->name, i->last_error);
}

/* The request in flight, if any, is dropped (its on_done is ignored). */
void ebb__watch_cancel_req(struct informer *i)
{
    struct ebb_kube_req *r = i->req;

    i->req = NULL;
    if (r != NULL)
        ebb_kube_cancel(r);
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

/* A LIST round is over (done, or given up): what it saw is forgotten. */
void ebb__watch_free_seen(struct informer *i)
{
    i->round_pages = 0;
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
void ebb__watch_drop_unseen(struct informer *i)
{
    struct gone g = { i, 0, 0, NULL };

    ebb_cache_each(i->set->cache, i->kind, collect_gone, &g);
    for (size_t k = 0; k < g.n; k++) {
        if (ebb_cache_delete(i->set->cache, i->kind, g.v[k].ns, g.v[k].name) == 0)
            ebb__watch_changed(i->set, i->kind, "DELETED", g.v[k].ns, g.v[k].name);
        ebb_str_release(g.v[k].ns);
        ebb_str_release(g.v[k].name);
    }
    free(g.v);
}

/* Node metrics are smoothed: round(0.9 * previous + 0.1 * new), as
 * upstream's metrics collector does. */
static void smooth(struct ebb_informers *s, struct ebb_node_metrics *m)
{
    struct ebb_node_metrics *old = ebb_cache_node_metrics(s->cache, m->node);

    for (uint16_t k = 0; old && k < m->usage.n; k++) {
        struct ebb_rq *q = &m->usage.q[k];
        if (!ebb_res_has(&old->usage, q->id))
            continue;
        /* saturated, never converted out of range (ebb/quantity.h) */
        q->v = ebb_q_of_double(0.9 * (double)ebb_res_get(&old->usage, q->id) + 0.1 * (double)q->v + 0.5);
    }
}

/* Once every resource has been listed the first time, before any cycle:
 * sort the indexes once. */
void ebb__watch_first_sync(struct ebb_informers *s)
{
    if (s->first_synced || !ebb_informers_synced(s))
        return;
    char streamed[512] = "", paged[512] = "";
    size_t ns = 0, np = 0;
    uint64_t received, decoded;

    s->first_synced = true;
    /* how each resource was listed: what the specs and operators check */
    for (size_t k = 0; k < s->n; k++) {
        char *b = s->inf[k].by_stream ? streamed : paged;
        size_t *n = s->inf[k].by_stream ? &ns : &np;
        int w = snprintf(b + *n, sizeof(streamed) - *n, "%s%s", *n ? ", " : "", s->inf[k].name);
        if (w > 0)
            *n = *n + (size_t)w < sizeof(streamed) ? *n + (size_t)w : sizeof(streamed) - 1;
    }
    /* the answers' size as read and as received: gzip at work, or not */
    ebb_kube_answer_bytes(s->kube, &received, &decoded);
    ebb_log(EBB_LOG_INFO, "watch: caches synced in %.2f s: %zu nodes, %zu pods (streaming list: %s; "
            "paged LIST: %s); answers %.1f MB, %.1f MB received",
            (double)(uv_hrtime() - s->started_at) / 1e9, ebb_cache_count(s->cache, EBB_KIND_NODE),
            ebb_cache_count(s->cache, EBB_KIND_POD), ns ? streamed : "none", np ? paged : "none",
            (double)decoded / 1e6, (double)received / 1e6);
    ebb_cache_build_indexes(s->cache);
}

uint64_t ebb_informers_spill_bytes(const struct ebb_informers *s, uint64_t *live, uint64_t *moves)
{
    if (s == NULL) {
        if (live)
            *live = 0;
        if (moves)
            *moves = 0;
        return 0;
    }
    return ebb__spill_bytes(&s->spill, live, moves);
}

/* Whether the cache holds the object of that key, or has room for one
 * more of its kind: at most EBB_LIST_OBJECTS_MAX, whatever a server sends. */
static bool room_for(struct ebb_informers *s, int kind, ebb_str ns, ebb_str name)
{
    const struct ebb_pdb *const *pdbs;
    uint32_t n;
    bool have = false;

    if (ebb_cache_count(s->cache, kind) < EBB_LIST_OBJECTS_MAX)
        return true;
    switch (kind) {
    case EBB_KIND_POD: have = ebb_cache_pod(s->cache, ns, name) != NULL; break;
    case EBB_KIND_NODE: have = ebb_cache_node(s->cache, name) != NULL; break;
    case EBB_KIND_NAMESPACE: have = ebb_cache_namespace(s->cache, name) != NULL; break;
    case EBB_KIND_PRIORITY_CLASS: have = ebb_cache_priority_class(s->cache, name) != NULL; break;
    case EBB_KIND_PVC: have = ebb_cache_pvc(s->cache, ns, name) != NULL; break;
    case EBB_KIND_NODE_METRICS: have = ebb_cache_node_metrics(s->cache, name) != NULL; break;
    case EBB_KIND_POD_METRICS: have = ebb_cache_pod_metrics(s->cache, ns, name) != NULL; break;
    case EBB_KIND_KOORD_NODE_METRIC: have = ebb_cache_koord_metric(s->cache, name) != NULL; break;
    case EBB_KIND_PDB:
        pdbs = ebb_cache_pdbs_in(s->cache, ns, &n);
        for (uint32_t k = 0; k < n && !have; k++)
            have = pdbs[k]->name == name;
        break;
    default: break;
    }
    return have;
}

/* Pods' and nodes' text backs pod.object and node.object, kept while a
 * script reads them (ebb_informers_keep_text). */
static bool keeps_text(const struct ebb_informers *s, int kind)
{
    return (kind == EBB_KIND_POD || kind == EBB_KIND_NODE) && ebb_cache_keeps_text(s->cache);
}

/* One item of a LIST answer, now (not held): kept in the cache (its text
 * backs pod.object), or skipped alone. 0, or EBB_ENOMEM. */
static int take_item(struct informer *i, char *text, size_t len)
{
    struct ebb_informers *s = i->set;
    struct ebb_object o;
    struct ebb_skip why;
    ebb_str ns, name;
    uint64_t off;
    int rc;

    if ((rc = ebb_object_from_text(s->arena, text, len, i->kind, &o, &why)) == EBB_ENOMEM)
        return rc;
    if (rc != 0) {
        /* not seen: a version cached before goes when the round ends */
        skipped(i, &why);
        return 0;
    }
    key_of(o.kind, o.u.any, &ns, &name);
    if (ebb__map_get(&i->seen, name, ns) == NULL &&
        (i->seen.live >= EBB_LIST_OBJECTS_MAX || !room_for(s, o.kind, ns, name))) {
        /* more objects than ebb keeps of a resource: the page fails, the
         * cache does not grow (a LIST round, or the cache, at its bound) */
        ebb_object_free(&o);
        return EBB_ELIMIT;
    }
    if (o.kind == EBB_KIND_NODE_METRICS)
        smooth(s, o.u.node_metrics);
    if (keeps_text(s, o.kind) && ebb__spill_write(&s->spill, text, len, &off)) {
        struct ebb_src src = { off, (uint32_t)len, s->spill.src, 0 };
        if (o.kind == EBB_KIND_POD)
            o.u.pod->src = src;
        else
            o.u.node->src = src;
    }
    ns = ebb_str_ref(ns);
    name = ebb_str_ref(name);
    if ((rc = ebb_cache_put(s->cache, &o)) != 0) {
        ebb_object_free(&o);
    } else {
        list_seen(i, o.kind, ns, name);
        if (i->poll)
            ebb__watch_changed(s, i->kind, "MODIFIED", ns, name);
    }
    ebb_str_release(ns);
    ebb_str_release(name);
    return rc;
}

/* The bound of the queues (tests and the fuzzer lower it). */
size_t ebb__informers_queue_max = EBB_HOLD_QUEUE_MAX;

/* Bytes the queues hold now, each entry counted once: 0 once released. */
size_t ebb__informers_queued(const struct ebb_informers *s)
{
    size_t n = 0;

    for (size_t k = 0; k < s->n; k++) {
        size_t mine = 0;
        for (const struct queued *q = s->inf[k].qhead; q != NULL; q = q->next)
            mine += sizeof(*q) + q->len;
        if (mine != s->inf[k].queued_bytes)
            return SIZE_MAX;   /* the count went wrong */
        n += mine;
    }
    return n != s->queued_bytes ? SIZE_MAX : n;
}

/* Hold it for when the cycle ends. false when the queues would go past
 * their bound (EBB_HOLD_QUEUE_MAX): this informer's queue is dropped, its
 * request cancelled, and it lists again once the hold is released. */
static bool queue(struct informer *i, int type, const char *data, size_t len, bool big)
{
    struct ebb_informers *s = i->set;
    struct queued *q;

    if (s->queued_bytes + len + sizeof(*q) > ebb__informers_queue_max ||
        (q = malloc(sizeof(*q) + len + 1)) == NULL) {
        char msg[160];
        while ((q = i->qhead) != NULL) {
            i->qhead = q->next;
            free(q);
        }
        i->qtail = NULL;
        i->queued = i->st.queued = 0;
        s->queued_bytes -= i->queued_bytes;
        i->queued_bytes = 0;
        snprintf(msg, sizeof(msg), "more than %zu KiB of changes while a cycle ran; relisting after it",
                 ebb__informers_queue_max >> 10);
        ebb__watch_broke(i, msg);
        i->overflow = true;
        i->relisting = true;
        i->streaming = false;
        ebb__watch_cancel_req(i);
        uv_timer_stop(&i->timer);
        i->state = ST_IDLE;
        return false;
    }
    q->next = NULL;
    q->type = type;
    q->big = big;
    q->len = len;
    if (len > 0)
        memcpy(q->data, data, len);
    q->data[len] = '\0';
    if (i->qtail)
        i->qtail->next = q;
    else
        i->qhead = q;
    i->qtail = q;
    i->queued++;
    i->st.queued = i->queued;
    i->queued_bytes += sizeof(*q) + len;
    s->queued_bytes += sizeof(*q) + len;
    return true;
}

void ebb__watch_free_queued(struct informer *i, struct queued *q)
{
    i->queued_bytes -= sizeof(*q) + q->len;
    i->set->queued_bytes -= sizeof(*q) + q->len;
    free(q);
}

/* The reader's item function: at most the items asked for, at most
 * EBB_LIST_OBJECTS_MAX in a round; held while a cycle runs. */
static int list_item(void *ud, char *text, size_t len, size_t index)
{
    struct informer *i = ud;
    size_t max = i->poll ? EBB_LIST_OBJECTS_MAX : (size_t)i->limit;

    if (index >= max)
        return EBB_ELIMIT;
    if (i->set->hold)
        return queue(i, Q_ITEM, text, text ? len : 0, text == NULL) ? 0 : EBB_ESTATE;
    return take_item(i, text, len);
}

/* A page is in and the hold is off: the next page, or the round is
 * complete (what the list no longer holds is deleted) and the watch
 * starts from its resourceVersion. */
static void page_end(struct informer *i, const char *rv, const char *cont)
{
    ebb__spill_tend(&i->set->spill);   /* once a page: its pods and nodes were appended */
    /* a server could page for ever (with or without objects) */
    if (!i->poll && cont[0] != '\0' && ++i->round_pages < EBB_LIST_OBJECTS_MAX) {
        if (cont != i->cont)
            snprintf(i->cont, sizeof(i->cont), "%s", cont);
        ebb__watch_start_list(i, i->cont);
        return;
    }
    ebb_list_reader_destroy(i->reader);
    i->reader = NULL;
    if (!i->poll && cont[0] != '\0') {
        ebb__watch_broke(i, "the LIST goes on past the most pages ebb takes in one round; listing again");
        i->relisting = true;
        i->cont[0] = '\0';
        ebb__watch_free_seen(i);
        ebb__watch_retry_later(i);
        return;
    }
    ebb__watch_drop_unseen(i);
    ebb__watch_free_seen(i);
    i->cont[0] = '\0';
    i->limit = i->set->o.page_size;
    i->synced = true;
    i->refused = 0;
    i->by_stream = false;
    i->st.lists++;
    if (i->poll) {
        uv_timer_start(&i->timer, on_timer, (uint64_t)(i->set->o.metrics_interval_s * 1000), 0);
        i->state = ST_IDLE;
        ebb__watch_first_sync(i->set);
        return;
    }
    snprintf(i->rv, sizeof(i->rv), "%s", rv);
    i->relisting = false;
    i->broken_since = i->reopened_from = 0;   /* the view is the server's as of now */
    i->last_error[0] = '\0';
    i->attempt = 0;
    ebb__watch_changed(i->set, i->kind, "RELIST", NULL, NULL);
    start_watch(i);
    ebb__watch_first_sync(i->set);
}

/* The page asked for did not come whole: asked again after a backoff
 * (the same continue token; what came of it before is in, and comes
 * again the same). A poll waits for its next turn. */
static void page_failed(struct informer *i, const char *why)
{
    ebb__watch_broke(i, why);
    ebb__watch_cancel_req(i);
    ebb_list_reader_destroy(i->reader);
    i->reader = NULL;
    if (i->poll) {
        ebb__watch_free_seen(i);
        i->state = ST_IDLE;
        uv_timer_start(&i->timer, on_timer, (uint64_t)(i->set->o.metrics_interval_s * 1000), 0);
    } else {
        ebb__watch_retry_later(i);
    }
}

static void on_list_data(struct ebb_kube_req *req, const char *data, size_t len, void *ud)
{
    struct informer *i = ud;
    struct ebb_error err;
    char msg[sizeof(err.msg) + sizeof(err.field) + 64];
    int rc;

    if (req != i->req || i->reader == NULL)
        return;
    ebb_error_clear(&err);
    if ((rc = ebb_list_reader_feed(i->reader, data, len, &err)) == 0)
        return;
    if (rc == EBB_ESTATE)
        return;   /* the queue overflowed: dropped, relisting after the hold */
    if (rc == EBB_ELIMIT)
        snprintf(msg, sizeof(msg), "LIST %s: more items than the %d asked for, or than the %zu "
                 "ebb keeps of a resource", i->path, i->poll ? (int)EBB_LIST_OBJECTS_MAX : i->limit,
                 (size_t)EBB_LIST_OBJECTS_MAX);
    else if (rc == EBB_ENOMEM)
        snprintf(msg, sizeof(msg), "LIST %s: out of memory", i->path);
    else
        snprintf(msg, sizeof(msg), "LIST %s: %s", i->path, err.msg);
    page_failed(i, msg);
}

static void on_list_done(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct informer *i = ud;
    struct ebb_list_meta meta;
    struct ebb_error err;
    char msg[sizeof(err.msg) + sizeof(err.field) + 64];

    if (req != i->req)
        return;   /* cancelled on purpose */
    i->req = NULL;
    if (i->state == ST_CLOSED)
        return;
    if (status == 200) {
        ebb_error_clear(&err);
        if (ebb_list_reader_end(i->reader, &meta, &err) != 0) {
            snprintf(msg, sizeof(msg), "LIST %s: %s%s%s", i->path, err.field, err.field[0] ? ": " : "",
                     err.msg);
            page_failed(i, msg);
            return;
        }
        if (i->set->hold) {
            char data[sizeof(meta.resource_version) + sizeof(meta.cont)];
            size_t a = strlen(meta.resource_version) + 1, b = strlen(meta.cont) + 1;
            memcpy(data, meta.resource_version, a);
            memcpy(data + a, meta.cont, b);
            queue(i, Q_PAGE_END, data, a + b, false);
            return;
        }
        page_end(i, meta.resource_version, meta.cont);
        return;
    }
    if (status == 410 && !i->poll) {
        /* the continue token expired: start the list over */
        ebb_list_reader_destroy(i->reader);
        i->reader = NULL;
        ebb__watch_free_seen(i);
        i->cont[0] = '\0';
        ebb__watch_start_list(i, NULL);
        return;
    }
    if (status == EBB_ELIMIT && i->limit > 1 && !i->poll) {
        /* a page larger than EBB_LIST_PAGE_MAX: ask for fewer items */
        i->limit /= 2;
        snprintf(msg, sizeof(msg), "LIST %s: a page larger than %zu MiB; asking for %d items a page",
                 i->path, EBB_LIST_PAGE_MAX >> 20, i->limit);
        page_failed(i, msg);
        return;
    }
    {
        char what[600], text[1024];

        /* refused credentials or rights do not mend by waiting: a front
         * end that has never synced may give up at once (refused) */
        i->refused = !i->synced && (status == 401 || status == 403) ? status : 0;
        snprintf(what, sizeof(what), "LIST %s", i->path);
        ebb_kube_answer_text(what, status, body, len, text, sizeof(text));
        page_failed(i, text);
    }
}

/* Ask for the page after `cont` (NULL or "": the first). */
void ebb__watch_start_list(struct informer *i, const char *cont)
{
    char path[sizeof(i->cont) * 3 + 512];
    struct ebb_kube_req_opts o = { .method = "GET", .on_data = on_list_data, .on_done = on_list_done,
                                   .ud = i, .timeout_ms = LIST_TIMEOUT_MS,
                                   .max_bytes = EBB_LIST_PAGE_MAX };
    char *esc = NULL;

    ebb__watch_cancel_req(i);
    ebb_list_reader_destroy(i->reader);
    i->reader = NULL;
    if (cont == NULL || cont[0] == '\0') {
        i->cont[0] = '\0';
    } else if (cont != i->cont) {
        snprintf(i->cont, sizeof(i->cont), "%s", cont);
    }
    i->state = ST_LISTING;
    i->streaming = false;
    if (ebb_list_reader_create(list_item, i, &i->reader) != 0 ||
        (i->cont[0] && (esc = curl_easy_escape(NULL, i->cont, 0)) == NULL)) {
        ebb__watch_broke(i, "cannot start a LIST: out of memory");
        ebb__watch_retry_later(i);
        return;
    }
    if (esc != NULL)
        snprintf(path, sizeof(path), "%s?limit=%d&continue=%s", i->path, i->limit, esc);
    else if (i->poll)
        snprintf(path, sizeof(path), "%s", i->path);
    else
        snprintf(path, sizeof(path), "%s?limit=%d", i->path, i->limit);
    curl_free(esc);
    o.path = path;
    if (ebb_kube_request(i->set->kube, &o, &i->req) != 0) {
        ebb__watch_broke(i, "cannot start a LIST");
        ebb__watch_retry_later(i);
    }
}

/* ---- WATCH ---------------------------------------------------------------- */

static void relist(struct informer *i, const char *why)
{
    ebb_log(EBB_LOG_INFO, "watch %s: %s: relisting", i->name, why);
    /* stale until the new list is in, counted from when it first ebb__watch_broke */
    if (i->broken_since == 0)
        i->broken_since = i->reopened_from ? i->reopened_from : ebb__watch_now_ms(i->set);
    i->reopened_from = 0;
    snprintf(i->last_error, sizeof(i->last_error), "relisting: ");
    ebb_decode_shown(why, i->last_error + 11, sizeof(i->last_error) - 11);
    i->relisting = true;
    ebb__watch_free_seen(i);
    ebb__watch_start_sync(i);
}

/* The stream said what the API never says (not JSON, not an event, a type
 * it does not have, an event too large, an object that names nothing):
 * what it meant is unknown, so the resource is listed again, after a
 * backoff that grows while answers stay bad (a server that always says it
 * is not retried in a tight loop; readiness says the resource is stale). */
static int bad_stream(struct informer *i, const char *why)
{
    char msg[200];

    snprintf(msg, sizeof(msg), "%s; relisting", why);
    ebb__watch_broke(i, msg);
    ebb__watch_cancel_req(i);
    i->relisting = true;
    ebb__watch_free_seen(i);
    i->bad++;
    if (i->attempt < i->bad)
        i->attempt = i->bad;
    ebb__watch_retry_later(i);
    return 1;
}

/* The watch brought something the view now holds: it is current, and
 * backoffs start over. */
static void progressed(struct informer *i)
{
    i->reopened_from = 0;
    i->progress = true;
    i->bad = 0;
    i->attempt = 0;
}

/* metadata.resourceVersion of an event's object, if it is one that fits. */
static void event_rv(struct informer *i, const cJSON *obj)
{
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                                       "resourceVersion");

    if (cJSON_IsString(rv) && rv->valuestring[0] != '\0' && strlen(rv->valuestring) < sizeof(i->rv))
        memcpy(i->rv, rv->valuestring, strlen(rv->valuestring) + 1);
}

/* Delete what the cache holds under the key of `why` (an object skipped,
 * or deleted): nothing stale stays in its place. */
static void drop_key(struct informer *i, const struct ebb_skip *why)
{
    ebb_str ns = why->ns[0] ? ebb_str_find(why->ns, strlen(why->ns)) : NULL;
    ebb_str name = ebb_str_find(why->name, strlen(why->name));

    if (name == NULL || (why->ns[0] && ns == NULL))
        return;   /* never interned: in no cache */
    ns = ebb_str_ref(ns);
    name = ebb_str_ref(name);
    if (ebb_cache_delete(i->set->cache, i->kind, ns, name) == 0)
        ebb__watch_changed(i->set, i->kind, "DELETED", ns, name);
    ebb_str_release(ns);
    ebb_str_release(name);
}

/* One event line (writable: the NUL scrub works in place). Returns 0, -1
 * when the stream must be resumed, 1 when it was replaced (a relist). */
static int apply_event(struct informer *i, char *line, size_t len)
{
    struct ebb_informers *s = i->set;
    const cJSON *type, *obj;
    cJSON *ev;
    const char *t;
    struct ebb_object o = { 0 };
    struct ebb_skip why;
    ebb_str ns, name;
    uint64_t off;
    int rc, reason;

    if ((rc = ebb_json_arena_parse(s->arena, line, len, &ev, &reason)) != 0) {
        if (rc == EBB_ENOMEM) {
            ebb__watch_broke(i, "out of memory reading a watch event; resuming");
            return -1;
        }
        return bad_stream(i, reason == EBB_SKIP_TOO_LARGE ? "a watch event too large"
                                                          : "a watch event that is not JSON");
    }
    type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    if (!cJSON_IsString(type) || !cJSON_IsObject(obj)) {
        ebb_json_arena_reset(s->arena);
        return bad_stream(i, "a watch event that is not an event object");
    }
    t = type->valuestring;
    if (strcmp(t, "ERROR") == 0) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
        bool gone = cJSON_IsNumber(code) && code->valuedouble == 410;
        if (i->streaming) {
            /* the server does not serve the streaming list (v1.35 on an
             * etcd without progress requests: 500 "... RequestWatchProgress
             * is disabled") */
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "message");
            char msg[400];
            snprintf(msg, sizeof(msg), "an ERROR event: %d %.300s",
                     cJSON_IsNumber(code) ? (int)code->valuedouble : 0,
                     cJSON_IsString(m) ? m->valuestring : "(no message)");
            ebb_json_arena_reset(s->arena);
            return ebb__watch_stream_refused(i, msg);
        }
        ebb_json_arena_reset(s->arena);
        if (gone) {
            relist(i, "resourceVersion expired (410)");
            return 1;
        }
        /* resumed from where it was, after a backoff the reopening does
         * not reset: a server that answers every watch so is stale */
        ebb__watch_broke(i, "the watch answered an ERROR event; resuming");
        return -1;
    }
    if (strcmp(t, "BOOKMARK") == 0) {
        event_rv(i, obj);
        progressed(i);
        if (i->streaming && ebb__watch_initial_events_end(obj))
            ebb__watch_stream_end(i);
        ebb_json_arena_reset(s->arena);
        return 0;
    }
    if (strcmp(t, "ADDED") != 0 && strcmp(t, "MODIFIED") != 0 && strcmp(t, "DELETED") != 0) {
        char msg[128];
        snprintf(msg, sizeof(msg), "unknown watch event type \"%.40s\"", t);
        ebb_json_arena_reset(s->arena);
        return bad_stream(i, msg);
    }
    if ((rc = ebb_decode_from_server(obj, i->kind, &o, &why)) == EBB_ENOMEM) {
        ebb_json_arena_reset(s->arena);
        ebb__watch_broke(i, "out of memory decoding a watch event; resuming");
        return -1;
    }
    if (rc != 0) {
        if (why.name[0] == '\0') {
            ebb_json_arena_reset(s->arena);
            return bad_stream(i, "a watch event whose object names nothing");
        }
        /* one object ebb cannot keep: whatever was cached of it goes (a
         * stale version is never acted on), the stream goes on */
        if (strcmp(t, "DELETED") != 0)
            skipped(i, &why);
        drop_key(i, &why);
        event_rv(i, obj);
        progressed(i);
        if (!i->streaming)   /* the initial events are a round's items, not changes */
            i->st.events++;
        ebb_json_arena_reset(s->arena);
        return 0;
    }
    key_of(o.kind, o.u.any, &ns, &name);
    if (i->streaming)
        i->stream_last = ebb__watch_now_ms(s);
    if (strcmp(t, "DELETED") != 0 &&
        (!room_for(s, o.kind, ns, name) ||
         (i->streaming && i->seen.live >= EBB_LIST_OBJECTS_MAX && ebb__map_get(&i->seen, name, ns) == NULL))) {
        /* the cache holds as many of the resource as it keeps */
        snprintf(why.ns, sizeof(why.ns), "%s", ns ? ns : "");
        snprintf(why.name, sizeof(why.name), "%s", name);
        why.kind = o.kind;
        why.reason = EBB_SKIP_TOO_MANY;
        snprintf(why.err.msg, sizeof(why.err.msg), "ebb keeps at most %zu %s", (size_t)EBB_LIST_OBJECTS_MAX,
                 i->name);
        ebb_object_free(&o);
        skipped(i, &why);
        event_rv(i, obj);
        progressed(i);
        if (!i->streaming)   /* the initial events are a round's items, not changes */
            i->st.events++;
        ebb_json_arena_reset(s->arena);
        return 0;
    }
    ns = ebb_str_ref(ns);
    name = ebb_str_ref(name);
    if (strcmp(t, "DELETED") == 0) {
        ebb_object_free(&o);
        ebb_cache_delete(s->cache, i->kind, ns, name);
    } else {
        /* the event line backs pod.object */
        if (keeps_text(s, o.kind) && ebb__spill_write(&s->spill, line, len, &off)) {
            struct ebb_src src = { off, (uint32_t)len, s->spill.src, 1 };
            if (o.kind == EBB_KIND_POD)
                o.u.pod->src = src;
            else
                o.u.node->src = src;
        }
        if (ebb_cache_put(s->cache, &o) != 0)
            ebb_object_free(&o);
        else if (i->streaming)
            list_seen(i, i->kind, ns, name);
        ebb__spill_tend(&s->spill);
    }
    event_rv(i, obj);
    progressed(i);
    if (!i->streaming)   /* the initial events are a round's items, not changes */
        i->st.events++;
    if (!i->streaming)   /* a round says RELIST once it is in, as a LIST does */
        ebb__watch_changed(s, i->kind, t, ns, name);
    ebb_str_release(ns);
    ebb_str_release(name);
    ebb_json_arena_reset(s->arena);
    return 0;
}

static void restart_watch(struct informer *i)
{
    ebb__watch_cancel_req(i);
    i->st.resumes++;
    ebb__watch_retry_later(i);
}

/* The server accepted the watch from our resourceVersion (2xx, headers
 * in): the view is current again, whether or not an event follows (a quiet
 * resource may send none for minutes). A failure before the watch proves
 * itself (an event, a bookmark) still counts the staleness from the first
 * break (reopened_from), and the backoff goes on growing. */
void ebb__watch_on_watch_open(struct ebb_kube_req *req, void *ud)
{
    struct informer *i = ud;
    (void)req;

    i->opened = true;
    if (i->streaming)
        return;   /* current once its initial-events-end bookmark is in, not before */
    if (i->broken_since != 0) {
        ebb_log(EBB_LOG_INFO, "watch %s: resumed from resourceVersion %s", i->name, i->rv);
        i->reopened_from = i->broken_since;
    }
    i->broken_since = 0;
}

/* Complete lines of the stream; a partial one waits for the next chunk
 * (at most EVENT_MAX of it: a longer one relists). */
void ebb__watch_on_watch_data(struct ebb_kube_req *req, const char *data, size_t len, void *ud)
{
    struct informer *i = ud;
    (void)req;

    while (len > 0 && i->state == ST_WATCHING && i->req == req) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (i->line_len + take > EVENT_MAX) {
            char msg[96];
            snprintf(msg, sizeof(msg), "a watch event larger than %zu MiB", EVENT_MAX >> 20);
            i->line_len = 0;
            bad_stream(i, msg);
            return;
        }
        if (i->line_len + take + 1 > i->line_cap) {
            size_t cap = i->line_cap ? i->line_cap : 65536;
            while (cap < i->line_len + take + 1)
                cap *= 2;
            char *b = realloc(i->line, cap);
            if (b == NULL) {
                ebb__watch_broke(i, "out of memory reading a watch event");
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
            size_t n = i->line_len;
            i->line_len = 0;
            if (i->set->hold) {
                if (!queue(i, Q_EVENT, i->line, n, false))
                    return;   /* dropped: relisting after the hold */
                i->progress = true;
            } else {
                rc = apply_event(i, i->line, n);
            }
            if (rc < 0) {
                restart_watch(i);
                return;
            }
            if (rc > 0)
                return;   /* relisting */
        }
    }
}

/* How long a watch must have been up for its end to be routine (tests: 0). */
uint64_t ebb__informers_quick_ms = WATCH_QUICK_MS;

void ebb__watch_on_watch_done(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct informer *i = ud;
    char what[600], msg[1024];

    if (i->req != req)
        return;   /* cancelled on purpose */
    i->req = NULL;
    if (i->state == ST_CLOSED)
        return;
    if (i->streaming) {
        bool torn = i->line_len > 0;
        i->line_len = 0;
        if (status == 200 && !torn) {
            ebb__watch_stream_refused(i, "the stream ended before its initial-events-end bookmark");
            return;
        }
        snprintf(what, sizeof(what), "WATCH %s (streaming list)", i->path);
        if (torn)
            snprintf(msg, sizeof(msg), "%s: the stream ended inside an event", what);
        else
            ebb_kube_answer_text(what, status, body, len, msg, sizeof(msg));
        if (!torn && (status == 400 || status == 422)) {
            /* sendInitialEvents or resourceVersionMatch refused (v1.25:
             * 422 "resourceVersionMatch is forbidden for watch") */
            ebb__watch_stream_refused(i, msg);
            return;
        }
        if (!torn && (status == 401 || status == 403 || status == 404)) {
            /* what a LIST says of it is what readiness and a front end
             * waiting for the first sync act on (ebb_informers_refused) */
            ebb_log(EBB_LOG_DEBUG, "watch %s: %s; trying a LIST", i->name, msg);
            ebb__watch_start_list(i, NULL);
            return;
        }
        /* 5xx, a cut: the stream is asked again, but a server whose
         * streams never reach their end (one that cuts a stream past what
         * it queues for a reader) is listed in pages instead */
        if (++i->stream_fails >= STREAM_FAILS_MAX && i->set->o.sync_mode == EBB_SYNC_AUTO) {
            char why[1200];
            snprintf(why, sizeof(why), "%d streaming lists in a row broke before their initial-events-end "
                     "bookmark, the last: %s", i->stream_fails, msg);
            ebb__watch_stream_refused(i, why);
            return;
        }
        ebb__watch_broke(i, msg);
        i->st.resumes++;
        ebb__watch_retry_later(i);
        return;
    }
    if (i->line_len > 0) {
        /* the stream ended in the middle of an event: nothing of it applies */
        i->line_len = 0;
        ebb__watch_broke(i, "the watch stream ended inside an event; resuming");
        i->st.resumes++;
        ebb__watch_retry_later(i);
        return;
    }
    if (status == 200) {
        /* the server's timeoutSeconds: carry on from where we are (a
         * watch that ended at once having brought nothing waits first) */
        i->st.resumes++;
        if (i->progress || ebb__watch_now_ms(i->set) - i->opened_at >= ebb__informers_quick_ms)
            start_watch(i);
        else
            ebb__watch_retry_later(i);
        return;
    }
    if (status == 410) {
        relist(i, "resourceVersion expired (410)");
        return;
    }
    snprintf(what, sizeof(what), "WATCH %s ended", i->path);
    ebb_kube_answer_text(what, status, body, len, msg, sizeof(msg));
    if (status == EBB_EIO && i->opened && !i->progress &&
        ebb__watch_now_ms(i->set) - i->opened_at >= ebb__informers_quick_ms) {
        /* A watch that was up, quiet, and then cut without its closing
         * chunk: what a load balancer in front of a managed API server
         * does to an idle connection, or the server at its timeout.
         * Routine: resume from where we are, at debug level. */
        ebb_log(EBB_LOG_DEBUG, "watch %s: %s; resuming", i->name, msg);
        i->st.resumes++;
        start_watch(i);
        return;
    }
    ebb__watch_broke(i, msg);
    i->st.resumes++;
    ebb__watch_retry_later(i);
}

static void start_watch(struct informer *i)
{
    char path[768];
    struct ebb_kube_req_opts o = {
        .method = "GET", .stream = true, .on_data = ebb__watch_on_watch_data, .on_done = ebb__watch_on_watch_done,
        .on_open = ebb__watch_on_watch_open, .ud = i,
    };
    char *esc = curl_easy_escape(NULL, i->rv, 0);

    if (esc == NULL) {
        ebb__watch_broke(i, "cannot start a WATCH: out of memory");
        ebb__watch_retry_later(i);
        return;
    }
    snprintf(path, sizeof(path), "%s?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d",
             i->path, esc, i->set->o.watch_timeout_s);
    curl_free(esc);
    o.path = path;
    i->state = ST_WATCHING;
    i->streaming = false;
    i->line_len = 0;
    i->progress = false;
    i->opened = false;
    i->opened_at = ebb__watch_now_ms(i->set);
    /* the stream's idle limit must outlast the server's timeoutSeconds:
     * else a quiet watch is cut by ebb as the server closes it, and reads
     * as a failure every few minutes */
    o.timeout_ms = ((long)i->set->o.watch_timeout_s + WATCH_IDLE_MARGIN_S) * 1000;
    if (ebb_kube_request(i->set->kube, &o, &i->req) != 0) {
        ebb__watch_broke(i, "cannot start a WATCH");
        ebb__watch_retry_later(i);
    }
}

/* ---- public --------------------------------------------------------------- */

void ebb_informers_start(struct ebb_informers *s)
{
    s->started = true;
    s->started_at = uv_hrtime();
    for (size_t k = 0; k < s->n; k++)
        ebb__watch_start_sync(&s->inf[k]);
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
        ebb__watch_start_sync(&s->inf[k]);
}

int ebb_informers_refused(const struct ebb_informers *s, char *why, size_t len)
{
    const char *cred = ebb_kube_cred_error(s->kube);

    /* no credential to send: no request can succeed until the plugin
     * (or its installation) is fixed */
    if (cred != NULL && !ebb_informers_synced(s)) {
        if (why != NULL && len > 0)
            snprintf(why, len, "%s", cred);
        return EBB_EIO;
    }
    for (size_t k = 0; k < s->n; k++)
        if (!s->inf[k].synced && s->inf[k].refused) {
            if (why != NULL && len > 0)
                snprintf(why, len, "%s", s->inf[k].last_error);
            return s->inf[k].refused;
        }
    return 0;
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

size_t ebb_informers_not_current(const struct ebb_informers *s, uint64_t max_stale_ms, char *buf,
                                 size_t len)
{
    uint64_t now = uv_now(s->loop);
    size_t n = 0, off = 0;

    if (len > 0)
        buf[0] = '\0';
    for (size_t k = 0; k < s->n; k++) {
        const struct informer *i = &s->inf[k];
        char what[260];
        int w;
        if (!i->synced)
            snprintf(what, sizeof(what), "%s (not synced%s%s)", i->name, i->last_error[0] ? ": " : "",
                     i->last_error);
        else if (!i->poll && i->broken_since != 0 && now - i->broken_since > max_stale_ms)
            snprintf(what, sizeof(what), "%s (broken for %llu ms: %s)", i->name,
                     (unsigned long long)(now - i->broken_since), i->last_error);
        else
            continue;
        n++;
        if (off + 1 < len && (w = snprintf(buf + off, len - off, "%s%s", n > 1 ? "; " : "", what)) > 0)
            off = off + (size_t)w < len ? off + (size_t)w : len - 1;
    }
    return n;
}

static void drain(struct informer *i)
{
    struct queued *q;

    while ((q = i->qhead) != NULL && !i->set->hold) {
        i->qhead = q->next;
        if (i->qhead == NULL)
            i->qtail = NULL;
        i->queued--;
        i->st.queued = i->queued;
        if (q->type == Q_ITEM) {
            if (take_item(i, q->big ? NULL : q->data, q->len) != 0) {
                ebb__watch_free_queued(i, q);
                page_failed(i, "out of memory taking a listed object");
                continue;
            }
        } else if (q->type == Q_PAGE_END) {
            const char *rv = q->data, *cont = q->data + strlen(q->data) + 1;
            page_end(i, rv, cont);
        } else if (!i->relisting || i->streaming) {
            /* a relist's own stream applies; a replaced watch's events not */
            int rc = apply_event(i, q->data, q->len);
            if (rc != 0) {
                /* the rest of the queue belongs to a stream we restart */
                ebb__watch_free_queued(i, q);
                while ((q = i->qhead) != NULL) {
                    i->qhead = q->next;
                    ebb__watch_free_queued(i, q);
                }
                i->qtail = NULL;
                i->queued = 0;
                i->st.queued = 0;
                if (rc < 0)
                    restart_watch(i);
                return;
            }
        }
        ebb__watch_free_queued(i, q);
    }
}

void ebb_informers_keep_text(struct ebb_informers *s, bool on)
{
    if (on == ebb_cache_keeps_text(s->cache))
        return;
    ebb_cache_keep_text(s->cache, on);
    if (!on)
        return;
    /* what is cached without its text is listed again, with it */
    for (size_t k = 0; s->started && k < s->n; k++) {
        struct informer *i = &s->inf[k];
        if ((i->kind == EBB_KIND_POD || i->kind == EBB_KIND_NODE) && i->state != ST_CLOSED)
            relist(i, "a script reads objects' text, kept from now on");
    }
}

void ebb_informers_hold(struct ebb_informers *s, bool hold)
{
    s->hold = hold;
    if (hold)
        return;
    for (size_t k = 0; k < s->n; k++) {
        struct informer *i = &s->inf[k];
        drain(i);
        if (i->overflow && i->state != ST_CLOSED) {
            i->overflow = false;
            relist(i, "changes dropped while a cycle ran");
        }
    }
}

size_t ebb_informers_stats(const struct ebb_informers *s, struct ebb_informer_stats *out, size_t max)
{
    for (size_t k = 0; k < s->n && k < max; k++) {
        out[k] = s->inf[k].st;
        out[k].synced = s->inf[k].synced;
        out[k].paged = s->inf[k].synced && !s->inf[k].by_stream;
        out[k].last_error = s->inf[k].last_error[0] ? s->inf[k].last_error : NULL;
        out[k].watching = s->inf[k].state == ST_WATCHING && s->inf[k].broken_since == 0;
    }
    return s->n;
}

static void free_informer(struct informer *x)
{
    while (x->qhead) {
        struct queued *q = x->qhead;
        x->qhead = q->next;
        free(q);
    }
    free(x->line);
    ebb_list_reader_destroy(x->reader);
    x->reader = NULL;
    ebb__watch_free_seen(x);
}

static void timer_closed(uv_handle_t *h)
{
    struct informer *i = h->data;
    struct ebb_informers *s = i->set;

    if (--s->closing > 0)
        return;
    for (size_t k = 0; k < s->n; k++)
        free_informer(&s->inf[k]);
    if (s->closed_cb)
        s->closed_cb(s->closed_ud);
    ebb_json_arena_destroy(s->arena);
    ebb__spill_free(&s->spill);
    free(s);   /* the spill files belong to the cache */
}

void ebb_informers_close(struct ebb_informers *s, void (*cb)(void *ud), void *ud)
{
    s->closed_cb = cb;
    s->closed_ud = ud;
    s->closing = (int)s->n;
    for (size_t k = 0; k < s->n; k++) {
        struct informer *i = &s->inf[k];
        i->state = ST_CLOSED;
        ebb__watch_cancel_req(i);
        uv_timer_stop(&i->timer);
        uv_close((uv_handle_t *)&i->timer, timer_closed);
    }
    if (s->n == 0) {
        if (cb)
            cb(ud);
        ebb_json_arena_destroy(s->arena);
        ebb__spill_free(&s->spill);
        free(s);
    }
}
