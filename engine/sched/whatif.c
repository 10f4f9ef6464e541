/* What-if runs: replacements for evicted pods, and the record of where they
 * went (placements, pending pods, loops, utilization per cycle) printed as
 * JSON and as a table. See ebb/whatif.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/quantity.h"
#include "ebb/sched.h"
#include "ebb/whatif.h"
#include "base/map.h"
#include "base/vec.h"

/* ---- replacements ------------------------------------------------------------ */

static bool kind_is(const struct ebb_owner *o, const char *kind)
{
    return o->kind != NULL && strcmp(o->kind, kind) == 0;
}

const struct ebb_owner *ebb_whatif_recreator(const struct ebb_cache *c, const struct ebb_pod *p)
{
    static const char *const kinds[] = { "ReplicaSet", "ReplicationController", "StatefulSet", "Job",
                                         "DaemonSet" };

    if (p == NULL || p->phase == EBB_PHASE_SUCCEEDED || p->phase == EBB_PHASE_FAILED)
        return NULL;   /* a finished pod was replaced when it finished, if ever */
    for (uint16_t i = 0; i < p->nowners; i++) {
        const struct ebb_owner *o = &p->owners[i];
        if (!o->controller)
            continue;
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            if (!kind_is(o, kinds[k]))
                continue;
            int wk = k == 0 ? EBB_KIND_REPLICA_SET : k == 1 ? EBB_KIND_REPLICATION_CONTROLLER
                   : k == 2 ? EBB_KIND_STATEFUL_SET : 0;
            const struct ebb_workload *w = wk ? ebb_cache_workload(c, wk, p->ns, o->name) : NULL;
            if (w != NULL && w->replicas == 0)
                return NULL;   /* scaled to zero: nothing comes back */
            return o;
        }
        return NULL;
    }
    return NULL;
}

static uint64_t next(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static bool set_str(ebb_str *field, const char *text)
{
    ebb_str s = text ? ebb_str_cstr(text) : NULL;

    if (text != NULL && s == NULL)
        return false;
    ebb_str_release(*field);
    *field = s;
    return true;
}

struct ebb_pod *ebb_whatif_replacement(const struct ebb_cache *c, const struct ebb_pod *old,
                                       int64_t now, uint64_t *rng)
{
    /* k8s.io/apimachinery/pkg/util/rand: no vowels, no ambiguous digits */
    static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
    const struct ebb_owner *o = ebb_whatif_recreator(c, old);
    struct ebb_pod *p;
    char name[320], uid[40];

    if (o == NULL || (p = ebb_pod_clone(old)) == NULL)
        return NULL;
    if (kind_is(o, "StatefulSet")) {
        snprintf(name, sizeof(name), "%s", old->name);
    } else {
        for (int tries = 0; tries < 64; tries++) {
            char sfx[6];
            for (int i = 0; i < 5; i++)
                sfx[i] = alnum[next(rng) % (sizeof(alnum) - 1)];
            sfx[5] = '\0';
            snprintf(name, sizeof(name), "%.250s-%s", o->name, sfx);
            if (ebb_cache_pod(c, p->ns, ebb_str_find(name, strlen(name))) == NULL)
                break;
        }
    }
    uint64_t a = next(rng), b = next(rng);
    snprintf(uid, sizeof(uid), "%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xffff, (unsigned)(b >> 48),
             (unsigned long long)(b & 0xffffffffffffull));
    if (!set_str(&p->name, name) || !set_str(&p->uid, uid) || !set_str(&p->node, NULL) ||
        !set_str(&p->reason, NULL)) {
        ebb_pod_free(p);
        return NULL;
    }
    p->phase = EBB_PHASE_PENDING;
    p->flags &= (uint16_t) ~(EBB_POD_TERMINATING | EBB_POD_READY | EBB_POD_GONE);
    p->created = now;
    p->started = p->deleted = EBB_TIME_NONE;
    p->restarts = p->init_restarts = 0;
    p->src.len = 0;   /* no recorded object: pod.object is nil */
    return p;
}

static int set_conditions(struct ebb_pod *p, int64_t now, bool running, const char *reason)
{
    static const char *const types[] = { "PodScheduled", "Initialized", "ContainersReady", "Ready" };
    size_t n = running ? 4 : 1;
    struct ebb_condition *c = calloc(n, sizeof(*c));

    if (c == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        c[i].type = ebb_str_cstr(types[i]);
        c[i].status = ebb_str_cstr(running ? "True" : "False");
        c[i].reason = reason ? ebb_str_cstr(reason) : NULL;
        c[i].last_transition = now;
    }
    ebb_pod_drop_conditions(p);
    p->conditions = c;
    p->nconditions = (uint16_t)n;
    return 0;
}

int ebb_whatif_mark_running(struct ebb_pod *p, int64_t now)
{
    /* the statuses are written below: a replacement holds its original's */
    if (ebb_pod_own_cstatus(p) != 0)
        return EBB_ENOMEM;
    if (p->ncstatus == 0 && p->nimages + p->ninit_images > 0) {
        /* a pod that never ran: one status per container */
        uint16_t n = (uint16_t)(p->nimages + p->ninit_images);
        if ((p->cstatus = calloc(n, sizeof(*p->cstatus))) == NULL)
            return EBB_ENOMEM;
        p->ncstatus = n;
        for (uint16_t i = 0; i < n; i++)
            p->cstatus[i].kind = i < p->nimages ? EBB_CONT_APP : EBB_CONT_INIT;
    }
    for (uint16_t i = 0; i < p->ncstatus; i++) {
        struct ebb_cstatus *c = &p->cstatus[i];
        bool app = c->kind != EBB_CONT_INIT;
        ebb_str_release(c->reason);
        ebb_str_release(c->last_reason);
        c->reason = app ? NULL : ebb_str_cstr("Completed");
        c->last_reason = NULL;
        c->state = app ? EBB_CSTATE_RUNNING : EBB_CSTATE_TERMINATED;
        c->ready = app;
        c->exit_code = c->last_exit_code = 0;
        c->restarts = 0;
        c->last_state = EBB_CSTATE_NONE;
    }
    p->phase = EBB_PHASE_RUNNING;
    p->started = now;
    p->restarts = p->init_restarts = 0;
    p->flags |= EBB_POD_READY;
    return set_conditions(p, now, true, NULL);
}

int ebb_whatif_mark_pending(struct ebb_pod *p, int64_t now, bool gated)
{
    ebb_pod_drop_cstatus(p);   /* nothing ran */
    p->phase = EBB_PHASE_PENDING;
    p->flags &= (uint16_t)~EBB_POD_READY;
    return set_conditions(p, now, false, gated ? "SchedulingGated" : "Unschedulable");
}

/* ---- the record ---------------------------------------------------------------- */

/* Evictions of one owner by one plugin. */
struct ebb_whatif_owned {
    ebb_str owner;
    ebb_str plugin;
    size_t n, cap;
    struct { int cycle; char *pod; ebb_str node; } *ev;
    size_t nnodes, cap_nodes;
    ebb_str *nodes;                  /* evicted from, and where replacements landed */
    struct ebb_map seen;             /* (node, -): in nodes[], once there are SEEN_MAP of them */
};

int ebb_whatif_create(struct ebb_cache *c, struct ebb_whatif **out)
{
    struct ebb_whatif *w = calloc(1, sizeof(*w));
    struct ebb_node *const *nodes;
    uint32_t n;

    if (w == NULL || (w->owned_at = calloc(1, sizeof(*w->owned_at))) == NULL) {
        free(w);
        return EBB_ENOMEM;
    }
    ebb__map_init(w->owned_at);
    nodes = ebb_cache_nodes_sorted(c, &n);
    if ((w->nodes = calloc(n + 1, sizeof(*w->nodes))) == NULL)
        goto fail;
    for (uint32_t i = 0; i < n; i++) {
        if ((w->nodes[i] = strdup(nodes[i]->name)) == NULL)
            goto fail;
        w->nnodes++;
    }
    *out = w;
    return 0;
fail:
    ebb_whatif_destroy(w);
    return EBB_ENOMEM;
}

void ebb_whatif_destroy(struct ebb_whatif *w)
{
    if (w == NULL)
        return;
    for (size_t i = 0; i < w->nnodes; i++)
        free(w->nodes[i]);
    free(w->nodes);
    for (size_t i = 0; i < w->nplacements; i++) {
        struct ebb_whatif_placement *p = &w->placements[i];
        free(p->pod);
        free(p->replaces);
        ebb_str_release(p->from);
        ebb_str_release(p->node);
        free(p->message);
        free(p->owner);
    }
    free(w->placements);
    for (size_t i = 0; i < w->npending; i++) {
        free(w->pending[i].pod);
        free(w->pending[i].message);
    }
    free(w->pending);
    for (size_t i = 0; i < w->nloops; i++) {
        struct ebb_whatif_loop *l = &w->loops[i];
        free(l->owner);
        ebb_str_release(l->plugin);
        free(l->cycles);
        for (size_t k = 0; k < l->nnodes; k++)
            ebb_str_release(l->nodes[k]);
        free(l->nodes);
        for (size_t k = 0; k < l->npods; k++)
            free(l->pods[k]);
        free(l->pods);
    }
    free(w->loops);
    for (size_t i = 0; i < w->nstates; i++)
        free(w->states[i].util);
    free(w->states);
    for (size_t i = 0; i < w->nplugins; i++)
        ebb_str_release(w->plugins[i]);
    free(w->plugins);
    free(w->per_cycle);
    for (size_t i = 0; i < w->nowned; i++) {
        struct ebb_whatif_owned *o = &w->owned[i];
        ebb_str_release(o->owner);
        ebb_str_release(o->plugin);
        for (size_t k = 0; k < o->n; k++) {
            free(o->ev[k].pod);
            ebb_str_release(o->ev[k].node);
        }
        free(o->ev);
        for (size_t k = 0; k < o->nnodes; k++)
            ebb_str_release(o->nodes[k]);
        free(o->nodes);
        ebb__map_free(&o->seen);
    }
    free(w->owned);
    if (w->owned_at != NULL)
        ebb__map_free(w->owned_at);
    free(w->owned_at);
    free(w);
}

static double pct(int64_t used, int64_t cap)
{
    return cap > 0 ? (double)used * 100.0 / (double)cap : 0.0;
}

static const char *const guard_whys[3] = { "futile", "cooldown", "unavailable" };

void ebb_whatif_guarded(struct ebb_whatif *w, const struct ebb_plan *p)
{
    struct ebb_whatif_state *st = w->nstates ? &w->states[w->nstates - 1] : NULL;

    if (st == NULL)
        return;
    memset(st->guarded, 0, sizeof(st->guarded));
    for (size_t i = p->nrefusals; i-- > 0 && p->refusals[i].cycle >= st->cycle;) {
        if (p->refusals[i].cycle != st->cycle)
            continue;
        for (int k = 0; k < 3; k++)
            if (strcmp(p->refusals[i].why, guard_whys[k]) == 0)
                st->guarded[k]++;
    }
}

static size_t guarded_total(const struct ebb_whatif *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->nstates; i++)
        n += w->states[i].guarded[0] + w->states[i].guarded[1] + w->states[i].guarded[2];
    return n;
}

int ebb_whatif_state(struct ebb_whatif *w, struct ebb_cache *c, int cycle, size_t evicted,
                     size_t replaced, size_t placed, size_t unplaced, size_t gone, size_t pending)
{
    struct ebb_whatif_state *st;
    struct ebb_node *const *nodes;
    uint32_t n;

    if (ebb__grow((void **)&w->states, &w->cap_states, w->nstates + 1, sizeof(*st)) != 0)
        return EBB_ENOMEM;
    st = &w->states[w->nstates];
    memset(st, 0, sizeof(*st));
    st->cycle = cycle;
    st->evicted = evicted;
    st->replaced = replaced;
    st->placed = placed;
    st->unplaced = unplaced;
    st->gone = gone;
    st->pending = pending;
    if ((st->util = calloc(w->nnodes * 3 + 1, sizeof(*st->util))) == NULL)
        return EBB_ENOMEM;
    nodes = ebb_cache_nodes_sorted(c, &n);
    double sum[3] = { 0, 0, 0 }, sq[3] = { 0, 0, 0 };
    for (int k = 0; k < 3; k++) {
        st->spread[k].min = INFINITY;
        st->spread[k].max = -INFINITY;
    }
    /* the nodes of the snapshot, matched by name (they do not change) */
    for (size_t i = 0, j = 0; i < w->nnodes && j < n;) {
        int cmp = strcmp(w->nodes[i], nodes[j]->name);
        if (cmp < 0) {
            i++;
            continue;
        }
        if (cmp > 0) {
            j++;
            continue;
        }
        const struct ebb_podvec *pv = ebb_cache_pods_on_node(c, nodes[j]->name);
        const struct ebb_res *a = &nodes[j]->allocatable;
        double u[3] = { pct(pv->req[EBB_RES_CPU], ebb_res_get(a, EBB_RES_CPU)),
                        pct(pv->req[EBB_RES_MEMORY], ebb_res_get(a, EBB_RES_MEMORY)),
                        pct(pv->nactive, ebb_res_get(a, EBB_RES_PODS)) };
        for (int k = 0; k < 3; k++) {
            st->util[i * 3 + (size_t)k] = (float)u[k];
            sum[k] += u[k];
            sq[k] += u[k] * u[k];
            if (u[k] < st->spread[k].min)
                st->spread[k].min = u[k];
            if (u[k] > st->spread[k].max)
                st->spread[k].max = u[k];
        }
        i++;
        j++;
    }
    for (int k = 0; k < 3; k++) {
        double mean = w->nnodes ? sum[k] / (double)w->nnodes : 0;
        double var = w->nnodes ? sq[k] / (double)w->nnodes - mean * mean : 0;
        st->spread[k].mean = mean;
        st->spread[k].stddev = var > 0 ? sqrt(var) : 0;
        if (w->nnodes == 0)
            st->spread[k].min = st->spread[k].max = 0;
    }
    w->nstates++;
    return 0;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int ebb_whatif_add_placement(struct ebb_whatif *w, int cycle, const char *pod, const char *replaces,
                             const char *from, const char *node, const char *message, int status,
                             const char *owner)
{
    struct ebb_whatif_placement *p;

    if (ebb__grow((void **)&w->placements, &w->cap_placements, w->nplacements + 1, sizeof(*p)) != 0)
        return EBB_ENOMEM;
    p = &w->placements[w->nplacements];
    memset(p, 0, sizeof(*p));
    p->cycle = cycle;
    p->status = status;
    p->pod = dup_or_null(pod);
    p->replaces = dup_or_null(replaces);
    p->from = from ? ebb_str_cstr(from) : NULL;
    p->node = node ? ebb_str_cstr(node) : NULL;
    p->message = dup_or_null(message);
    p->owner = dup_or_null(owner);
    w->nplacements++;
    if ((pod && !p->pod) || (replaces && !p->replaces) || (message && !p->message) ||
        (owner && !p->owner) || (from && !p->from) || (node && !p->node))
        return EBB_ENOMEM;
    return 0;
}

/* Past this many nodes an owner's list is looked up in a map: most owners
 * land on a few nodes, and a map each would cost them more memory than a
 * scan costs time. */
#define SEEN_MAP 16

/* `node` (interned; NULL: none) joins the owner's nodes once. */
static int add_node(struct ebb_whatif_owned *o, ebb_str node)
{
    if (node == NULL)
        return 0;
    if (o->nnodes < SEEN_MAP) {
        for (size_t i = 0; i < o->nnodes; i++)
            if (o->nodes[i] == node)
                return 0;
    } else if (ebb__map_get(&o->seen, node, NULL) != NULL) {
        return 0;
    }
    if (ebb__grow((void **)&o->nodes, &o->cap_nodes, o->nnodes + 1, sizeof(*o->nodes)) != 0)
        return EBB_ENOMEM;
    /* the map holds every node of the list from the time it is long */
    for (size_t i = 0; o->nnodes + 1 == SEEN_MAP && i < o->nnodes; i++)
        if (ebb__map_put(&o->seen, o->nodes[i], NULL, (void *)1, NULL) != 0)
            return EBB_ENOMEM;
    if (o->nnodes + 1 >= SEEN_MAP && ebb__map_put(&o->seen, node, NULL, (void *)1, NULL) != 0)
        return EBB_ENOMEM;
    o->nodes[o->nnodes++] = ebb_str_ref(node);
    return 0;
}

static size_t plugin_index(struct ebb_whatif *w, const char *plugin)
{
    for (size_t i = 0; i < w->nplugins; i++)
        if (strcmp(w->plugins[i], plugin) == 0)
            return i;
    return SIZE_MAX;
}

/* The per-cycle counts table, widened to hold `cycle` and `plugins`. */
static int count_eviction(struct ebb_whatif *w, int cycle, const char *plugin)
{
    size_t pi = plugin_index(w, plugin);

    if (pi == SIZE_MAX || (size_t)cycle >= w->ncounted_cycles) {
        size_t np = pi == SIZE_MAX ? w->nplugins + 1 : w->nplugins;
        size_t nc = (size_t)cycle >= w->ncounted_cycles ? (size_t)cycle + 1 : w->ncounted_cycles;
        size_t *v = calloc(np * nc + 1, sizeof(*v));
        ebb_str *names = pi == SIZE_MAX ? realloc(w->plugins, np * sizeof(*names)) : w->plugins;
        if (v == NULL || names == NULL) {
            free(v);
            return EBB_ENOMEM;
        }
        w->plugins = names;
        for (size_t c = 0; c < w->ncounted_cycles; c++)
            for (size_t k = 0; k < w->nplugins; k++)
                v[c * np + k] = w->per_cycle[c * w->nplugins + k];
        free(w->per_cycle);
        w->per_cycle = v;
        w->ncounted_cycles = nc;
        if (pi == SIZE_MAX) {
            if ((w->plugins[w->nplugins] = ebb_str_cstr(plugin)) == NULL)
                return EBB_ENOMEM;
            pi = w->nplugins++;
        }
    }
    w->per_cycle[(size_t)cycle * w->nplugins + pi]++;
    return 0;
}

/* The record of (owner, plugin), made on first use; NULL when out of memory. */
static struct ebb_whatif_owned *owned_at(struct ebb_whatif *w, const char *owner, const char *plugin)
{
    ebb_str so = ebb_str_cstr(owner), sp = ebb_str_cstr(plugin);
    struct ebb_whatif_owned *o = NULL;
    void *at;

    if (so == NULL || sp == NULL)
        goto out;
    if ((at = ebb__map_get(w->owned_at, so, sp)) != NULL) {
        o = &w->owned[(uintptr_t)at - 1];
        goto out;
    }
    if (ebb__grow((void **)&w->owned, &w->cap_owned, w->nowned + 1, sizeof(*o)) != 0 ||
        ebb__map_put(w->owned_at, so, sp, (void *)(uintptr_t)(w->nowned + 1), NULL) != 0)
        goto out;
    o = &w->owned[w->nowned++];
    memset(o, 0, sizeof(*o));
    o->owner = so;
    o->plugin = sp;
    return o;   /* the record keeps both references */
out:
    ebb_str_release(so);
    ebb_str_release(sp);
    return o;
}

int ebb_whatif_add_eviction(struct ebb_whatif *w, int cycle, const char *plugin, const char *owner,
                            const char *pod, const char *node)
{
    struct ebb_whatif_owned *o;
    int rc;

    if (plugin == NULL)
        plugin = "?";
    if ((rc = count_eviction(w, cycle, plugin)) != 0 || owner == NULL)
        return rc;
    if ((o = owned_at(w, owner, plugin)) == NULL)
        return EBB_ENOMEM;
    if (ebb__grow((void **)&o->ev, &o->cap, o->n + 1, sizeof(*o->ev)) != 0)
        return EBB_ENOMEM;
    o->ev[o->n].cycle = cycle;
    o->ev[o->n].pod = dup_or_null(pod);
    o->ev[o->n].node = node ? ebb_str_cstr(node) : NULL;
    o->n++;
    if ((pod != NULL && o->ev[o->n - 1].pod == NULL) || (node != NULL && o->ev[o->n - 1].node == NULL))
        return EBB_ENOMEM;
    return add_node(o, o->ev[o->n - 1].node);
}

int ebb_whatif_landed(struct ebb_whatif *w, ebb_str owner, ebb_str node)
{
    /* the owner's records, one per plugin that evicted its pods */
    for (size_t p = 0; owner != NULL && p < w->nplugins; p++) {
        void *at = ebb__map_get(w->owned_at, owner, w->plugins[p]);
        int rc;
        if (at != NULL && (rc = add_node(&w->owned[(uintptr_t)at - 1], node)) != 0)
            return rc;
    }
    return 0;
}

int ebb_whatif_set_pending(struct ebb_whatif *w, const struct ebb_whatif_pending *p, size_t n)
{
    for (size_t i = 0; i < w->npending; i++) {
        free(w->pending[i].pod);
        free(w->pending[i].message);
    }
    free(w->pending);
    w->pending = NULL;
    w->npending = 0;
    if (n == 0)
        return 0;
    if ((w->pending = calloc(n, sizeof(*w->pending))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        w->pending[i] = p[i];
        w->pending[i].pod = dup_or_null(p[i].pod);
        w->pending[i].message = dup_or_null(p[i].message);
        w->npending++;
        if (w->pending[i].pod == NULL)
            return EBB_ENOMEM;
    }
    return 0;
}

static int add_loop(struct ebb_whatif *w, const struct ebb_whatif_owned *o);

/* Replacement -> the pod it replaces, both interned ("ns/name"), from the
 * placements (a StatefulSet's pod replaces itself). */
static int predecessors(const struct ebb_whatif *w, struct ebb_map *m)
{
    for (size_t i = 0; i < w->nplacements; i++) {
        const struct ebb_whatif_placement *p = &w->placements[i];
        ebb_str a, b;
        void *old = NULL;
        if (p->replaces == NULL || p->pod == NULL)
            continue;
        a = ebb_str_cstr(p->pod);
        b = ebb_str_cstr(p->replaces);
        if (a == NULL || b == NULL || ebb__map_put(m, a, NULL, (void *)b, &old) != 0) {
            ebb_str_release(a);
            ebb_str_release(b);
            return EBB_ENOMEM;
        }
        if (old != NULL) {          /* the key was there: drop the new ref of it */
            ebb_str_release(a);
            ebb_str_release((ebb_str)old);
        }
    }
    return 0;
}

static void predecessors_free(struct ebb_map *m)
{
    for (size_t i = 0; i < m->cap; i++) {
        if (ebb__map_live(m, i)) {
            ebb_str_release(m->s[i].a);
            ebb_str_release((ebb_str)m->s[i].v);
        }
    }
    ebb__map_free(m);
}

/* A loop: a plugin evicts a replacement whose predecessor it evicted in an
 * earlier cycle. Staged work (one plugin taking different pods of one
 * workload over several cycles, as a PodDisruptionBudget makes it) is
 * none. */
static bool relooped(const struct ebb_whatif_owned *o, struct ebb_map *pred)
{
    for (size_t k = 0; k < o->n; k++) {
        ebb_str pod = o->ev[k].pod ? ebb_str_find(o->ev[k].pod, strlen(o->ev[k].pod)) : NULL;
        ebb_str before = pod ? ebb__map_get(pred, pod, NULL) : NULL;
        for (size_t j = 0; before != NULL && j < o->n; j++)
            if (o->ev[j].cycle < o->ev[k].cycle && o->ev[j].pod != NULL &&
                strcmp(o->ev[j].pod, before) == 0)
                return true;
    }
    return false;
}

int ebb_whatif_finish(struct ebb_whatif *w)
{
    struct ebb_map pred;
    int rc;

    ebb__map_init(&pred);
    rc = predecessors(w, &pred);
    for (size_t i = 0; rc == 0 && i < w->nowned; i++) {
        const struct ebb_whatif_owned *o = &w->owned[i];
        if (relooped(o, &pred))
            rc = add_loop(w, o);
    }
    predecessors_free(&pred);
    return rc;
}

/* The loop record of o (its owner, plugin, cycles, pods and nodes). */
static int add_loop(struct ebb_whatif *w, const struct ebb_whatif_owned *o)
{
    struct ebb_whatif_loop *l;

    if (ebb__reserve(w->loops, w->cap_loops, w->nloops + 1) != 0)
        return EBB_ENOMEM;
    l = &w->loops[w->nloops++];
    memset(l, 0, sizeof(*l));
    l->owner = strdup(o->owner);
    l->plugin = ebb_str_ref(o->plugin);
    if (l->owner == NULL || (l->cycles = calloc(o->n, sizeof(*l->cycles))) == NULL ||
        (l->pods = calloc(o->n, sizeof(*l->pods))) == NULL ||
        (o->nnodes && (l->nodes = calloc(o->nnodes, sizeof(*l->nodes))) == NULL))
        return EBB_ENOMEM;
    for (size_t k = 0; k < o->n; k++) {
        if (l->ncycles == 0 || l->cycles[l->ncycles - 1] != o->ev[k].cycle)
            l->cycles[l->ncycles++] = o->ev[k].cycle;
        if ((l->pods[l->npods] = dup_or_null(o->ev[k].pod)) != NULL)
            l->npods++;
    }
    for (size_t k = 0; k < o->nnodes; k++)
        l->nodes[l->nnodes++] = ebb_str_ref(o->nodes[k]);
    return 0;
}

/* ---- JSON ----------------------------------------------------------------------- */

static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static double round2(double v)
{
    return ebb_q_round2(v);   /* no int64 conversion: saturated quantities give huge values */
}

static const char *status_name(int st)
{
    switch (st) {
    case EBB_SCHED_PLACED: return "placed";
    case EBB_SCHED_UNSCHEDULABLE: return "unschedulable";
    case EBB_SCHED_NO_PROFILE: return "other-scheduler";
    case EBB_SCHED_GATED: return "gated";
    default: return "?";
    }
}

static cJSON *spread_json(const struct ebb_whatif_spread *s)
{
    static const char *const names[3] = { "cpu", "memory", "pods" };
    cJSON *o = cJSON_CreateObject();

    for (int k = 0; k < 3; k++) {
        cJSON *r = cJSON_AddObjectToObject(o, names[k]);
        cJSON_AddNumberToObject(r, "mean", round2(s[k].mean));
        cJSON_AddNumberToObject(r, "stddev", round2(s[k].stddev));
        cJSON_AddNumberToObject(r, "min", round2(s[k].min));
        cJSON_AddNumberToObject(r, "max", round2(s[k].max));
    }
    return o;
}

int ebb_whatif_json(const struct ebb_whatif *w, cJSON *root)
{
    cJSON *a, *o;
    size_t placed = 0;

    a = cJSON_AddArrayToObject(root, "placements");
    for (size_t i = 0; i < w->nplacements; i++) {
        const struct ebb_whatif_placement *p = &w->placements[i];
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "cycle", p->cycle);
        add_str(o, "pod", p->pod);
        add_str(o, "replaces", p->replaces);
        add_str(o, "from", p->from);
        add_str(o, "node", p->node);
        add_str(o, "message", p->message);
        add_str(o, "status", status_name(p->status));
        cJSON_AddItemToArray(a, o);
        placed += p->status == EBB_SCHED_PLACED;
    }
    a = cJSON_AddArrayToObject(root, "pending");
    for (size_t i = 0; i < w->npending; i++) {
        o = cJSON_CreateObject();
        add_str(o, "pod", w->pending[i].pod);
        cJSON_AddNumberToObject(o, "since", w->pending[i].since);
        add_str(o, "status", status_name(w->pending[i].status));
        add_str(o, "message", w->pending[i].message);
        cJSON_AddItemToArray(a, o);
    }
    a = cJSON_AddArrayToObject(root, "loops");
    for (size_t i = 0; i < w->nloops; i++) {
        const struct ebb_whatif_loop *l = &w->loops[i];
        cJSON *c, *n, *p;
        o = cJSON_CreateObject();
        add_str(o, "owner", l->owner);
        add_str(o, "plugin", l->plugin);
        c = cJSON_AddArrayToObject(o, "cycles");
        for (size_t k = 0; k < l->ncycles; k++)
            cJSON_AddItemToArray(c, cJSON_CreateNumber(l->cycles[k]));
        p = cJSON_AddArrayToObject(o, "pods");
        for (size_t k = 0; k < l->npods; k++)
            cJSON_AddItemToArray(p, cJSON_CreateString(l->pods[k]));
        n = cJSON_AddArrayToObject(o, "nodes");
        for (size_t k = 0; k < l->nnodes; k++)
            cJSON_AddItemToArray(n, cJSON_CreateString(l->nodes[k]));
        cJSON_AddItemToArray(a, o);
    }
    /* per step: the counts, the per-plugin evictions, the spread, and each
     * node's utilization in the order of "nodes". It replaces the plan's
     * count of cycles (summary.cycles says it): a key twice in one object
     * is JSON that strict readers refuse and others read either way. */
    cJSON_DeleteItemFromObjectCaseSensitive(root, "cycles");
    a = cJSON_AddArrayToObject(root, "cycles");
    for (size_t i = 0; i < w->nstates; i++) {
        const struct ebb_whatif_state *st = &w->states[i];
        cJSON *u, *e;
        if (st->cycle < 0)
            continue;   /* the snapshot itself: in the summary */
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "cycle", st->cycle);
        cJSON_AddNumberToObject(o, "evicted", (double)st->evicted);
        cJSON_AddNumberToObject(o, "replaced", (double)st->replaced);
        cJSON_AddNumberToObject(o, "placed", (double)st->placed);
        cJSON_AddNumberToObject(o, "unplaced", (double)st->unplaced);
        cJSON_AddNumberToObject(o, "gone", (double)st->gone);
        cJSON_AddNumberToObject(o, "pending", (double)st->pending);
        if (st->guarded[0] + st->guarded[1] + st->guarded[2] > 0) {
            cJSON *g = cJSON_AddObjectToObject(o, "refusedByLoopGuard");
            for (int k = 0; k < 3; k++)
                cJSON_AddNumberToObject(g, guard_whys[k], (double)st->guarded[k]);
        }
        e = cJSON_AddObjectToObject(o, "evictionsByPlugin");
        for (size_t k = 0; st->cycle > 0 && (size_t)st->cycle < w->ncounted_cycles && k < w->nplugins; k++)
            if (w->per_cycle[(size_t)st->cycle * w->nplugins + k])
                cJSON_AddNumberToObject(e, w->plugins[k], (double)w->per_cycle[(size_t)st->cycle * w->nplugins + k]);
        cJSON_AddItemToObject(o, "spread", spread_json(st->spread));
        u = cJSON_AddArrayToObject(o, "nodes");
        for (size_t n = 0; n < w->nnodes; n++) {
            cJSON *r = cJSON_CreateObject();
            add_str(r, "name", w->nodes[n]);
            cJSON_AddNumberToObject(r, "cpu", round2(st->util[n * 3]));
            cJSON_AddNumberToObject(r, "memory", round2(st->util[n * 3 + 1]));
            cJSON_AddNumberToObject(r, "pods", round2(st->util[n * 3 + 2]));
            cJSON_AddItemToArray(u, r);
        }
        cJSON_AddItemToArray(a, o);
    }
    o = cJSON_AddObjectToObject(root, "summary");
    cJSON_AddNumberToObject(o, "cycles", w->nstates >= 2 ? (double)w->states[w->nstates - 1].cycle : 0);
    cJSON_AddBoolToObject(o, "converged", w->converged);
    cJSON_AddNumberToObject(o, "placed", (double)placed);
    cJSON_AddNumberToObject(o, "pending", (double)w->npending);
    cJSON_AddNumberToObject(o, "loops", (double)w->nloops);
    if (guarded_total(w) > 0)
        cJSON_AddNumberToObject(o, "loopGuardRefusals", (double)guarded_total(w));
    if (w->nstates > 0)
        cJSON_AddItemToObject(o, "snapshot", spread_json(w->states[0].spread));
    a = cJSON_AddArrayToObject(o, "steps");
    for (size_t i = 1; i < w->nstates; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddNumberToObject(s, "cycle", w->states[i].cycle);
        cJSON_AddItemToObject(s, "before", spread_json(w->states[i - 1].spread));
        cJSON_AddItemToObject(s, "after", spread_json(w->states[i].spread));
        cJSON_AddItemToArray(a, s);
    }
    return 0;
}

char *ebb_whatif_plan_json(const struct ebb_whatif *w, const struct ebb_plan *p, bool pretty)
{
    cJSON *root = ebb_plan_json(p);
    char *s;

    if (root == NULL)
        return NULL;
    if (w != NULL)
        ebb_whatif_json(w, root);
    s = ebb_json_print(root, pretty);
    cJSON_Delete(root);
    return s;
}

/* ---- the table ---------------------------------------------------------------------- */

static int width(const char *s, int w)
{
    int n = s ? (int)strlen(s) : 1;
    return n > w ? n : w;
}

/* A name or message for the table, escaped for a line (names come from the
 * snapshot, messages from the scheduler model quoting them). */
#define TEXT_MAX 1024

static const char *tx(char (*buf)[TEXT_MAX], const char *s)
{
    if (s == NULL)
        return NULL;
    ebb_escape(*buf, sizeof(*buf), s, strlen(s), EBB_ESC_LINE);
    return *buf;
}

void ebb_whatif_print_table(const struct ebb_whatif *w, FILE *out)
{
    static const char *const names[3] = { "CPU", "MEMORY", "PODS" };
    char t1[TEXT_MAX], t2[TEXT_MAX], t3[TEXT_MAX], t4[TEXT_MAX];
    int wp = 3, wr = 8, wf = 4;

    fprintf(out, "\nRESCHEDULED (utilization across nodes, %% of allocatable: mean sd [min..max])\n");
    fprintf(out, "%-8s %7s %8s %6s %8s %5s %7s", "CYCLE", "EVICTED", "REPLACED", "PLACED", "UNPLACED",
            "GONE", "PENDING");
    for (int k = 0; k < 3; k++)
        fprintf(out, "  %-24s", names[k]);
    fputc('\n', out);
    for (size_t i = 0; i < w->nstates; i++) {
        const struct ebb_whatif_state *st = &w->states[i];
        char c[16];
        if (st->cycle < 0)
            snprintf(c, sizeof(c), "snapshot");
        else
            snprintf(c, sizeof(c), "%d", st->cycle);
        fprintf(out, "%-8s %7zu %8zu %6zu %8zu %5zu %7zu", c, st->evicted, st->replaced, st->placed,
                st->unplaced, st->gone, st->pending);
        for (int k = 0; k < 3; k++) {
            char cell[160];   /* up to 9.2e20 % from saturated quantities */
            snprintf(cell, sizeof(cell), "%5.1f %5.1f [%5.1f..%5.1f]", st->spread[k].mean,
                     st->spread[k].stddev, st->spread[k].min, st->spread[k].max);
            fprintf(out, "  %-24s", cell);
        }
        fputc('\n', out);
    }
    if (w->converged)
        fprintf(out, "converged: the last cycle evicted nothing\n");
    if (guarded_total(w) > 0) {
        fprintf(out, "\nLOOPGUARD (evictions refused per cycle)\n%-8s %7s %8s %11s\n", "CYCLE",
                "FUTILE", "COOLDOWN", "UNAVAILABLE");
        for (size_t i = 0; i < w->nstates; i++) {
            const struct ebb_whatif_state *st = &w->states[i];
            if (st->cycle > 0)
                fprintf(out, "%-8d %7zu %8zu %11zu\n", st->cycle, st->guarded[0], st->guarded[1],
                        st->guarded[2]);
        }
    }
    for (size_t i = 0; i < w->nplacements; i++) {
        wp = width(tx(&t1, w->placements[i].pod), wp);
        wr = width(tx(&t1, w->placements[i].replaces), wr);
        wf = width(tx(&t1, w->placements[i].from), wf);
    }
    if (w->nplacements) {
        fprintf(out, "\nMOVES\n%-5s  %-*s  %-*s  %-*s     %s\n", "CYCLE", wp, "POD", wr, "REPLACES", wf,
                "FROM", "TO");
        for (size_t i = 0; i < w->nplacements; i++) {
            const struct ebb_whatif_placement *p = &w->placements[i];
            fprintf(out, "%-5d  %-*s  %-*s  %-*s  -> %s\n", p->cycle, wp, tx(&t1, p->pod), wr,
                    p->replaces ? tx(&t2, p->replaces) : "-", wf, p->from ? tx(&t3, p->from) : "-",
                    p->node ? tx(&t4, p->node) : "(pending)");
        }
    }
    if (w->npending) {
        fprintf(out, "\nPENDING\n");
        for (size_t i = 0; i < w->npending; i++)
            fprintf(out, "%s (since cycle %d): %s\n", tx(&t1, w->pending[i].pod), w->pending[i].since,
                    w->pending[i].message ? tx(&t2, w->pending[i].message) : "");
    }
    if (w->nloops) {
        fprintf(out, "\nLOOPS (a workload evicted again by the same plugin in a later cycle)\n");
        for (size_t i = 0; i < w->nloops; i++) {
            const struct ebb_whatif_loop *l = &w->loops[i];
            fprintf(out, "%s  %s  cycles", tx(&t1, l->owner), tx(&t2, l->plugin));
            for (size_t k = 0; k < l->ncycles; k++)
                fprintf(out, "%s%d", k ? "," : " ", l->cycles[k]);
            fprintf(out, "  nodes");
            for (size_t k = 0; k < l->nnodes; k++)
                fprintf(out, "%s%s", k ? "," : " ", tx(&t1, l->nodes[k]));
            fputc('\n', out);
        }
    }
}
