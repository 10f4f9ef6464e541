/* One call for `ebb simulate` and `ebb check`; see ebb/simulate.h. With
 * --reschedule, the what-if loop: the scheduler model places the
 * snapshot's pending pods, then after every cycle the replacements of the
 * evicted pods (ebb/whatif.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb/memstore.h"
#include "ebb/prometheus.h"
#include "ebb/simulate.h"
#include "base/vec.h"
#include "ebb/lua.h"

uint64_t ebb_rss_bytes(void)
{
    unsigned long size, resident;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* --prometheus-url: each query asked at once, on a loop of its own. */
static int ask_now(void *ud, struct ebb_engine *e, const char *query, int64_t time,
                   struct ebb_prom_result **now)
{
    const struct ebb_sim_opts *o = ud;
    struct ebb_prom_opts po = { .url = o->prometheus_url, .token_file = o->prometheus_token_file };
    (void)e;
    return ebb_prom_query_all(NULL, &po, &query, 1, time, now);
}

/* CPU time of this thread: what one core spent, whatever else runs. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}


/* ---- --reschedule ------------------------------------------------------------ */

/* A pod waiting for the scheduler: a pending pod of the cache (pod NULL,
 * found by key), or a replacement not in the cache yet. */
struct qent {
    int32_t priority;
    uint64_t seq;                    /* queue time: snapshot pods first, then eviction order */
    int since;                       /* the cycle it appeared in */
    ebb_str ns, name;                /* references */
    struct ebb_pod *pod;             /* a replacement (owned) */
    char *replaces;                  /* "ns/name" of the evicted pod */
    ebb_str rns, rname;              /* the same, apart (references) */
    ebb_str from;                    /* its node (reference) */
    ebb_str owner;                   /* "Kind ns/name" of the recreating controller (reference) */
    char *message;                   /* the last FailedScheduling message */
    int status;
};

struct queue {
    size_t n, cap;
    struct qent *v;
};

static void qent_clear(struct qent *q)
{
    ebb_str_release(q->ns);
    ebb_str_release(q->name);
    ebb_pod_free(q->pod);
    free(q->replaces);
    ebb_str_release(q->rns);
    ebb_str_release(q->rname);
    ebb_str_release(q->from);
    ebb_str_release(q->owner);
    free(q->message);
    memset(q, 0, sizeof(*q));
}

static void queue_free(struct queue *q)
{
    for (size_t i = 0; i < q->n; i++)
        qent_clear(&q->v[i]);
    free(q->v);
    memset(q, 0, sizeof(*q));
}

static struct qent *queue_push(struct queue *q)
{
    if (ebb__grow((void **)&q->v, &q->cap, q->n + 1, sizeof(*q->v)) != 0)
        return NULL;
    memset(&q->v[q->n], 0, sizeof(*q->v));
    return &q->v[q->n++];
}

/* PrioritySort: the higher priority first, then the earlier in the queue. */
static int qent_cmp(const void *a, const void *b)
{
    const struct qent *x = a, *y = b;

    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int32_t priority_of(const struct ebb_cache *c, const struct ebb_pod *p)
{
    const struct ebb_priority_class *pc;

    if (p->flags & EBB_POD_HAS_PRIORITY)
        return p->priority;
    pc = p->priority_class ? ebb_cache_priority_class(c, p->priority_class) : NULL;
    return pc ? pc->value : 0;
}

static ebb_str owner_text(const struct ebb_pod *p, const struct ebb_owner *o)
{
    char buf[600];

    if (o == NULL) {
        for (uint16_t i = 0; i < p->nowners && o == NULL; i++)
            if (p->owners[i].controller)
                o = &p->owners[i];
    }
    if (o == NULL)
        return NULL;
    snprintf(buf, sizeof(buf), "%s %s/%s", o->kind ? o->kind : "?", p->ns, o->name ? o->name : "?");
    return ebb_str_cstr(buf);
}

static int cmp_created(const void *a, const void *b)
{
    const struct ebb_pod *x = *(struct ebb_pod *const *)a, *y = *(struct ebb_pod *const *)b;

    if (x->created != y->created)
        return x->created < y->created ? -1 : 1;
    int c = strcmp(x->ns, y->ns);
    return c ? c : strcmp(x->name, y->name);
}

/* The snapshot's pending pods (unbound, not finished, not being deleted),
 * oldest first. */
static int queue_snapshot(struct ebb_cache *c, struct queue *q, uint64_t *seq)
{
    uint32_t slots = ebb_cache_pod_slots(c), n = 0;
    struct ebb_pod **v = calloc(slots + 1, sizeof(*v));

    if (v == NULL)
        return EBB_ENOMEM;
    for (uint32_t i = 0; i < slots; i++) {
        struct ebb_pod *p = ebb_cache_pod_at(c, i);
        if (p != NULL && p->node == NULL && p->phase != EBB_PHASE_SUCCEEDED &&
            p->phase != EBB_PHASE_FAILED && !(p->flags & EBB_POD_TERMINATING))
            v[n++] = p;
    }
    qsort(v, n, sizeof(*v), cmp_created);
    for (uint32_t i = 0; i < n; i++) {
        struct qent *e = queue_push(q);
        if (e == NULL) {
            free(v);
            return EBB_ENOMEM;
        }
        e->priority = priority_of(c, v[i]);
        e->seq = (*seq)++;
        e->ns = ebb_str_ref(v[i]->ns);
        e->name = ebb_str_ref(v[i]->name);
        e->owner = owner_text(v[i], NULL);
    }
    free(v);
    return 0;
}

struct resched {
    struct ebb_sim_opts *o;
    struct ebb_engine *e;
    struct ebb_cache *cache;
    struct ebb_sched *sched;
    struct ebb_whatif *w;
    int64_t now;
    uint64_t rng;
    uint64_t seq;
    struct queue q;                  /* waiting: carried from cycle to cycle */
};

static void progress(struct resched *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(struct resched *r, const char *fmt, ...)
{
    va_list ap;

    if (!r->o->progress)
        return;
    fputs("\r\033[K", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
}

/* Schedule every waiting pod in queue order. A pod placed is bound (and
 * leaves the queue); one that is not stays, as a pending pod of the cache. */
static int place_all(struct resched *r, int cycle, size_t *placed, size_t *unplaced)
{
    uint64_t t0 = mono_ns(), c0 = cpu_ns();
    size_t k = 0;
    int rc = 0;

    qsort(r->q.v, r->q.n, sizeof(*r->q.v), qent_cmp);
    *placed = *unplaced = 0;
    for (size_t i = 0; i < r->q.n; i++) {
        struct qent *q = &r->q.v[i];
        struct ebb_sched_result res;
        struct ebb_pod *p = q->pod, *cached = NULL;
        char key[600];
        if (p == NULL && (cached = ebb_cache_pod(r->cache, q->ns, q->name)) == NULL) {
            qent_clear(q);   /* gone meanwhile */
            continue;
        }
        if (r->o->progress && i % 1000 == 0)
            progress(r, "cycle %d: placing %zu/%zu", cycle, i, r->q.n);
        if ((rc = ebb_sched_schedule(r->sched, p ? p : cached, &res)) != 0)
            goto out;
        r->o->placements++;
        snprintf(key, sizeof(key), "%s/%s", q->ns, q->name);
        if (res.status == EBB_SCHED_PLACED) {
            if (p == NULL && (p = ebb_pod_clone(cached)) == NULL) {
                rc = EBB_ENOMEM;
                goto out;
            }
            q->pod = NULL;
            if ((rc = ebb_whatif_mark_running(p, r->now)) != 0) {
                ebb_pod_free(p);
                goto out;
            }
            if ((rc = ebb_sched_bind(r->sched, p, res.node)) != 0)
                goto out;   /* bind took p */
            (*placed)++;
            if ((q->replaces != NULL || q->since < cycle || cycle == 0) &&
                (rc = ebb_whatif_add_placement(r->w, cycle, key, q->replaces, q->from, res.node->name,
                                               NULL, EBB_SCHED_PLACED, q->owner)) != 0)
                goto out;
            if ((rc = ebb_whatif_landed(r->w, q->owner, res.node->name)) != 0)
                goto out;
            /* the memory learns where the replacement went: LoopGuard's
             * cooldown reads a bounce from it */
            if (q->rns != NULL)
                ebb_evmem_landed(&r->o->memory, q->rns, q->rname, q->name, res.node->name);
            qent_clear(q);
            continue;
        }
        (*unplaced)++;
        free(q->message);
        q->message = strdup(res.message);
        q->status = res.status;
        if (q->pod != NULL) {
            /* a replacement that fits nowhere waits in the cache, unbound */
            struct ebb_object obj = { .kind = EBB_KIND_POD };
            if ((rc = ebb_whatif_mark_pending(q->pod, r->now, res.status == EBB_SCHED_GATED)) != 0)
                goto out;
            obj.u.pod = q->pod;
            if ((rc = ebb_cache_put(r->cache, &obj)) != 0)
                goto out;
            q->pod = NULL;
        }
        if (q->since == cycle &&
            (rc = ebb_whatif_add_placement(r->w, cycle, key, q->replaces, q->from, NULL, res.message,
                                           res.status, q->owner)) != 0)
            goto out;
    }
out:
    /* keep what still waits, in order */
    for (size_t i = 0; i < r->q.n; i++)
        if (r->q.v[i].name != NULL)
            r->q.v[k++] = r->q.v[i];
    r->q.n = k;
    r->o->place_ns += mono_ns() - t0;
    r->o->place_cpu_ns += cpu_ns() - c0;
    return rc;
}

/* The evictions of the cycle just run: their replacements join the queue. */
static int replace_evicted(struct resched *r, size_t from, int cycle, size_t *replaced, size_t *gone)
{
    const struct ebb_plan *plan = ebb_engine_plan(r->e);
    int rc;

    *replaced = *gone = 0;
    for (size_t i = from; i < plan->nevictions; i++) {
        const struct ebb_plan_eviction *ev = &plan->evictions[i];
        const char *slash = ev->pod ? strchr(ev->pod, '/') : NULL;
        struct ebb_pod *p;
        const struct ebb_owner *o;
        ebb_str owner;
        if (slash == NULL)
            continue;
        p = ebb_cache_pod(r->cache, ebb_str_find(ev->pod, (size_t)(slash - ev->pod)),
                          ebb_str_find(slash + 1, strlen(slash + 1)));
        if (p == NULL)
            continue;
        o = ebb_whatif_recreator(r->cache, p);
        owner = owner_text(p, o);
        rc = ebb_whatif_add_eviction(r->w, cycle, ev->plugin, owner, ev->pod, ev->node);
        if (rc != 0 || o == NULL) {
            ebb_str_release(owner);
            if (rc != 0)
                return rc;
            (*gone)++;
            continue;
        }
        struct qent *q = queue_push(&r->q);
        if (q == NULL || (q->pod = ebb_whatif_replacement(r->cache, p, r->now, &r->rng)) == NULL) {
            ebb_str_release(owner);
            return EBB_ENOMEM;
        }
        q->owner = owner;
        q->priority = priority_of(r->cache, p);
        q->seq = r->seq++;
        q->since = cycle;
        q->ns = ebb_str_ref(q->pod->ns);
        q->name = ebb_str_ref(q->pod->name);
        q->replaces = strdup(ev->pod);
        q->rns = ebb_str_ref(p->ns);
        q->rname = ebb_str_ref(p->name);
        q->from = ebb_str_ref(p->node);
        (*replaced)++;
    }
    return 0;
}

static int final_pending(struct resched *r)
{
    struct ebb_whatif_pending *v = calloc(r->q.n + 1, sizeof(*v));
    char (*keys)[600] = calloc(r->q.n + 1, sizeof(*keys));
    int rc;

    if (v == NULL || keys == NULL) {
        free(v);
        free(keys);
        return EBB_ENOMEM;
    }
    for (size_t i = 0; i < r->q.n; i++) {
        snprintf(keys[i], sizeof(keys[i]), "%s/%s", r->q.v[i].ns, r->q.v[i].name);
        v[i].pod = keys[i];
        v[i].since = r->q.v[i].since;
        v[i].status = r->q.v[i].status;
        v[i].message = r->q.v[i].message;
    }
    rc = ebb_whatif_set_pending(r->w, v, r->q.n);
    free(v);
    free(keys);
    return rc;
}

static int reschedule(struct ebb_sim_opts *o, struct ebb_engine *e,
                      const struct ebb_sched_config *config, struct ebb_predictor *pred,
                      struct ebb_error *err)
{
    struct resched r = { .o = o, .e = e, .cache = ebb_engine_cache(e) };
    struct ebb_sched_opts so = { .config = config, .version = o->sched_version,
                                 .seeded = o->seeded, .seed = o->seed };
    size_t placed, unplaced, replaced, gone, nev;
    int max = o->max_cycles < 0 ? 10 : o->max_cycles, rc, cycle;
    uint64_t t0 = mono_ns(), b0 = cpu_ns();

    r.now = o->now != EBB_TIME_NONE ? o->now : (int64_t)time(NULL);
    /* names of replacements: their own stream, from the seed or fixed */
    r.rng = (o->seeded ? o->seed : 0) ^ 0x5eedfaceULL;
    if ((rc = ebb_whatif_create(r.cache, &r.w)) != 0 ||
        (rc = ebb_whatif_state(r.w, r.cache, -1, 0, 0, 0, 0, 0, 0)) != 0 ||
        (rc = ebb_sched_create(r.cache, &so, &r.sched)) != 0)
        goto fail;
    /* LoopGuard predicts on the what-if's own model of the cluster */
    ebb_predictor_borrow(pred, r.sched);
    o->sched_build_ns = mono_ns() - t0;
    o->sched_build_cpu_ns = cpu_ns() - b0;
    if ((rc = queue_snapshot(r.cache, &r.q, &r.seq)) != 0 || (rc = place_all(&r, 0, &placed, &unplaced)) != 0 ||
        (rc = ebb_whatif_state(r.w, r.cache, 0, 0, 0, placed, unplaced, 0, r.q.n)) != 0)
        goto fail;
    for (cycle = 1; cycle <= max; cycle++) {
        uint64_t c0 = mono_ns(), u0 = cpu_ns();
        nev = ebb_engine_plan(e)->nevictions;
        if (cycle > 1) {
            /* the next cycle runs an interval later: ages, minPodAge and
             * the replacements' own age move on as they would live */
            r.now += o->interval > 0 ? o->interval : EBB_SIM_INTERVAL;
            ebb_engine_set_now(e, r.now);
        }
        progress(&r, "cycle %d/%d: descheduling", cycle, max);
        if ((rc = ebb_engine_run_cycle(e)) != 0) {
            ebb_error_set(err, rc, NULL, 0, NULL, "cycle %d: %s", cycle, ebb_strerror(rc));
            goto out;
        }
        o->cycles_ns += mono_ns() - c0;
        o->cycles_cpu_ns += cpu_ns() - u0;
        if (cycle <= 8)
            o->cycle_ns[cycle - 1] = mono_ns() - c0;
        nev = ebb_engine_plan(e)->nevictions - nev;
        /* the evicted pods leave the scheduler's view before anything
         * replaces them (a StatefulSet pod comes back under its name) */
        u0 = cpu_ns();
        rc = ebb_sched_sync(r.sched);
        if (rc == 0)
            rc = replace_evicted(&r, ebb_engine_plan(e)->nevictions - nev, cycle, &replaced, &gone);
        o->replace_cpu_ns += cpu_ns() - u0;
        if (rc != 0 ||
            (rc = place_all(&r, cycle, &placed, &unplaced)) != 0 ||
            /* the replacements are placed and Ready: the disruption
             * controller gives back what the budgets lent */
            (rc = ebb_engine_settle_pdbs(e)) != 0 ||
            (rc = ebb_whatif_state(r.w, r.cache, cycle, nev, replaced, placed, unplaced, gone, r.q.n)) != 0)
            goto fail;
        ebb_whatif_guarded(r.w, ebb_engine_plan(e));
        progress(&r, "cycle %d/%d: %zu evicted, %zu placed, %zu pending", cycle, max, nev, placed, r.q.n);
        if (nev == 0) {
            r.w->converged = true;
            if (o->max_cycles < 0)
                break;
        }
    }
    if (o->progress)
        fputc('\n', stderr);
    /* the plan's "after": with the replacements where they landed */
    ebb_plan_snapshot_nodes(ebb_engine_plan(e), r.cache, false);
    if ((rc = final_pending(&r)) != 0 || (rc = ebb_whatif_finish(r.w)) != 0)
        goto fail;
    o->whatif = r.w;
    r.w = NULL;
    rc = 0;
    goto out;
fail:
    ebb_error_set(err, rc, NULL, 0, NULL, "rescheduling: %s", ebb_strerror(rc));
out:
    if (r.sched != NULL) {
        struct ebb_sched_stats st;
        ebb_sched_get_stats(r.sched, &st);
        o->nodes_filtered = st.nodes_filtered;
        o->nodes_scored = st.nodes_scored;
    }
    queue_free(&r.q);
    ebb_predictor_borrow(pred, NULL);
    ebb_sched_destroy(r.sched);
    ebb_whatif_destroy(r.w);
    return rc;
}

/* The line of byte `off` of the snapshot (0 when unknown). */
static int snapshot_line(const struct ebb_sim_opts *o, uint64_t off)
{
    char buf[65536];
    uint64_t done = 0;
    int line = 1;
    FILE *f;

    if (o->snapshot_buf != NULL) {
        for (uint64_t i = 0; i < off && i < o->snapshot_len; i++)
            line += o->snapshot_buf[i] == '\n';
        return line;
    }
    if (o->snapshot == NULL || (f = fopen(o->snapshot, "rb")) == NULL)
        return 0;
    while (done < off) {
        size_t want = off - done < sizeof(buf) ? (size_t)(off - done) : sizeof(buf);
        size_t n = fread(buf, 1, want, f);
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++)
            line += buf[i] == '\n';
        done += n;
    }
    fclose(f);
    return line;
}

/* Every bound pod's node is in the snapshot: the scheduler model accounts
 * pods on their nodes, and one on a node it does not know is a snapshot
 * cut in the wrong place (nodes listed before their pods changed). */
static int check_bound_nodes(const struct ebb_sim_opts *o, struct ebb_cache *c, struct ebb_error *err)
{
    uint32_t slots = ebb_cache_pod_slots(c);

    for (uint32_t i = 0; i < slots; i++) {
        const struct ebb_pod *p = ebb_cache_pod_at(c, i);
        if (p == NULL || p->node == NULL || ebb_cache_node(c, p->node) != NULL)
            continue;
        int line = p->src.len ? snapshot_line(o, p->src.off) : 0;
        char *text = NULL;
        size_t len = 0;
        /* the line of the field itself, within the item */
        if (line > 0 && ebb_cache_read_source(c, &p->src, &text, &len) == 0) {
            const char *at = strstr(text, "\"nodeName\"");
            for (const char *k = text; at != NULL && k < at; k++)
                line += *k == '\n';
            free(text);
        }
        return ebb_error_set(err, EBB_ESCHEMA, o->snapshot ? o->snapshot : "snapshot", line,
                             "spec.nodeName",
                             "pod %s/%s is bound to node \"%s\", which the snapshot does not have "
                             "(--reschedule needs every node its pods are on)", p->ns, p->name, p->node);
    }
    return 0;
}

static void predict_stats(struct ebb_sim_opts *o, const struct ebb_predictor *pred)
{
    struct ebb_predictor_stats st;

    ebb_predictor_get_stats(pred, &st);
    o->predictions = st.predictions;
    o->predict_ns = st.ns;
    o->predict_builds = st.builds;
    o->predict_build_ns = st.build_ns;
}

static int load_sched_config(struct ebb_sim_opts *o, struct ebb_sched_config **out,
                             struct ebb_error *err)
{
    *out = NULL;
    if (o->sched_config_buf != NULL)
        return ebb_sched_config_parse(o->sched_config_buf, o->sched_config_len,
                                      o->sched_config ? o->sched_config : "scheduler-config", out, err);
    if (o->sched_config != NULL)
        return ebb_sched_config_load(o->sched_config, out, err);
    return 0;
}

/* The memory of evictions a snapshot holds: the ConfigMap `ebb run` keeps
 * it in (ebb/memstore.h), recorded by `ebb record` as the item it is.
 * The first one read seeds the run's memory; its text is checked as
 * strictly as the cluster's (ebb_evmem_decode names the entry and field). */
struct memory_item {
    struct ebb_evmem *memory;
    const char *snapshot;
    bool found;
    int rc;
    struct ebb_error err;
};

static int memory_item(const cJSON *item, int kind, void *ud)
{
    struct memory_item *mi = ud;
    const cJSON *meta, *data, *text;
    const char *k, *av, *name, *ns;
    char src[1400];

    if (kind != EBB_KIND_UNKNOWN)
        return 0;
    k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "kind"));
    av = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "apiVersion"));
    meta = cJSON_GetObjectItemCaseSensitive(item, "metadata");
    name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name"));
    if (k == NULL || av == NULL || name == NULL || strcmp(k, "ConfigMap") != 0 ||
        strcmp(av, "v1") != 0 || strcmp(name, EBB_MEMSTORE_NAME) != 0)
        return 0;
    ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "namespace"));
    if (mi->found) {
        ebb_log(EBB_LOG_WARN, "%s: a second ConfigMap %s (namespace %s) is ignored: the memory of "
                "evictions is read from the first", mi->snapshot, EBB_MEMSTORE_NAME, ns ? ns : "");
        return 0;
    }
    mi->found = true;
    snprintf(src, sizeof(src), "%.900s: ConfigMap %.63s/%s data.%s", mi->snapshot, ns ? ns : "",
             EBB_MEMSTORE_NAME, EBB_MEMSTORE_KEY);
    data = cJSON_GetObjectItemCaseSensitive(item, "data");
    text = cJSON_GetObjectItemCaseSensitive(data, EBB_MEMSTORE_KEY);
    if (text == NULL && (data == NULL || cJSON_IsObject(data)))
        return 0;   /* created, never written: an empty memory */
    if (!cJSON_IsString(text)) {
        mi->rc = ebb_error_set(&mi->err, EBB_ESCHEMA, NULL, 0, NULL,
                               "%s: not a string (the memory of evictions as ebb run writes it)", src);
        return mi->rc;
    }
    if ((mi->rc = ebb_evmem_decode(mi->memory, text->valuestring, strlen(text->valuestring), src,
                                   &mi->err)) != 0)
        return mi->rc;
    ebb_log(EBB_LOG_INFO, "%s: the memory of evictions: %zu entr%s", mi->snapshot, mi->memory->n,
            mi->memory->n == 1 ? "y" : "ies");
    return 0;
}

int ebb_simulate(struct ebb_sim_opts *o, struct ebb_engine **out, struct ebb_error *err)
{
    struct ebb_engine_opts eo = {
        .now = o->now,
        .mode = EBB_MODE_SIMULATE,
        .home = o->home,
        .mem_limit = o->mem_limit,
        .time_budget_ms = o->time_budget_ms,
        .features = o->features,
        .scripts = ebb_lua_plugins(),
        .memory = &o->memory,
    };
    struct ebb_engine *e = NULL;
    struct ebb_policy *policy = NULL;
    struct ebb_cache *cache = NULL;
    struct ebb_sched_config *sconf = NULL;
    struct ebb_predictor *pred = NULL;
    uint64_t t0 = mono_ns();
    int rc;

    o->whatif = NULL;
    /* a bad scheduler config is an input error found before any work */
    if (o->reschedule && (rc = load_sched_config(o, &sconf, err)) != 0) {
        ebb_evmem_free(&o->memory);
        return rc;
    }
    /* LoopGuard's bounce prediction: the same scheduler model */
    if ((rc = ebb_predictor_create(sconf, o->sched_version, &pred)) != 0) {
        ebb_sched_config_free(sconf);
        ebb_evmem_free(&o->memory);
        return ebb_error_set(err, rc, NULL, 0, NULL, "out of memory");
    }
    eo.predict = ebb_predictor_predict;
    eo.predict_ud = pred;
    if ((rc = ebb_engine_create(&eo, &e, err)) != 0) {
        ebb_predictor_destroy(pred);
        ebb_sched_config_free(sconf);
        ebb_evmem_free(&o->memory);
        return rc;
    }
    if ((rc = ebb_engine_load_builtins(e, err)) != 0)
        goto fail;
    if (o->prometheus_url != NULL)
        ebb_engine_set_prom(e, ask_now, o);
    for (int i = 0; i < o->ndirs; i++)
        if ((rc = ebb_engine_register_lua_dir(e, o->dirs[i], err)) != 0)
            goto fail;
    if (o->policy_buf != NULL)
        rc = ebb_policy_parse(o->policy_buf, o->policy_len, o->policy ? o->policy : "policy",
                              &policy, err);
    else
        rc = ebb_policy_load(o->policy, &policy, err);
    if (rc != 0)
        goto fail;
    for (size_t i = 0; i < policy->nwarnings; i++)
        ebb_log(EBB_LOG_WARN, "%s", policy->warnings[i]);
    o->build_ns = mono_ns() - t0;
    if (o->snapshot != NULL || o->snapshot_buf != NULL) {
        if ((rc = ebb_cache_create(&cache)) != 0)
            goto fail;
        if (o->snapshot_buf != NULL)
            rc = ebb_snapshot_load_buf(cache, o->snapshot_buf, o->snapshot_len,
                                       o->snapshot ? o->snapshot : "snapshot", o->stats, err);
        else {
            struct memory_item mi = { .memory = &o->memory, .snapshot = o->snapshot };
            rc = ebb_snapshot_load_each(cache, o->snapshot, memory_item, &mi, o->stats, err);
            if (mi.rc != 0) {
                *err = mi.err;
                rc = mi.rc;
            }
        }
        if (rc != 0)
            goto fail;
        o->rss_after_load = ebb_rss_bytes();
        ebb_engine_set_cache(e, cache);
        cache = NULL;
    }
    t0 = mono_ns();
    if ((rc = ebb_engine_set_policy(e, policy, err)) != 0)
        goto fail;
    policy = NULL;
    o->build_ns += mono_ns() - t0;
    if (o->before_cycles != NULL && (rc = o->before_cycles(o->before_ud, e, err)) != 0)
        goto fail;
    if (ebb_engine_cache(e) != NULL && o->reschedule) {
        if ((rc = check_bound_nodes(o, ebb_engine_cache(e), err)) != 0 ||
            (rc = reschedule(o, e, sconf, pred, err)) != 0)
            goto fail;
    } else if (ebb_engine_cache(e) != NULL) {
        for (int i = 0; i < (o->cycles > 0 ? o->cycles : 1); i++) {
            uint64_t c0 = mono_ns(), a0 = ebb_budget_arms();
            if ((rc = ebb_engine_run_cycle(e)) != 0) {
                ebb_error_set(err, rc, NULL, 0, NULL, "cycle %d: %s", i + 1, ebb_strerror(rc));
                goto fail;
            }
            if (i < 8) {
                o->cycle_ns[i] = mono_ns() - c0;
                o->cycle_arms[i] = ebb_budget_arms() - a0;
            }
        }
    }
    /* the engine outlives this call, the predictor does not */
    predict_stats(o, pred);
    ebb_engine_set_predictor(e, NULL, NULL);
    ebb_predictor_destroy(pred);
    ebb_sched_config_free(sconf);
    *out = e;
    return 0;
fail:
    ebb_engine_destroy(e);
    e = NULL;
    ebb_predictor_destroy(pred);
    ebb_sched_config_free(sconf);
    ebb_cache_destroy(cache);
    ebb_policy_free(policy);
    ebb_engine_destroy(e);
    ebb_evmem_free(&o->memory);
    return rc;
}
