/* RemovePodsViolatingInterPodAntiAffinity's index (ebb/groups.h,
 * ebb_anti_index_*): "does this pod's own required anti-affinity select
 * another listed pod in its topology domain", answered in time
 * proportional to the domain, with evicted pods forgotten
 * (utils.CheckPodsWithAntiAffinityExist and removePodFromNamespaceMap).
 * Called by the ebb.anti_affinity_index binding (lua/lua_groups.c) during
 * a cycle, on the thread that runs the strategies, which charges the
 * index's `bytes` to the script that built it: every allocation below is
 * counted there, exactly. Building is linear in the pods; each distinct
 * term is grouped on first use. */
#include "strategy/groups_int.h"

#include "ebb/selector.h"

/* ---- a map from a pair of addresses to a uint32 ----------------------------- */

/* Hashed by address, so a lookup reads no string (ebb_map hashes through
 * the interned string's header). Order is never iterated. */
struct pair_slot {
    const void *a, *b;               /* a == NULL: free */
    uint32_t v;
};

struct pairs {
    struct pair_slot *s;
    size_t cap, n;                   /* cap: a power of two */
};

static size_t pair_hash(const void *a, const void *b)
{
    return (size_t)haddr(haddr(0, a), b);
}

static uint32_t pairs_get(const struct pairs *m, const void *a, const void *b)
{
    if (m->cap == 0 || a == NULL)
        return 0;
    for (size_t i = pair_hash(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->s[i].a == NULL)
            return 0;
        if (m->s[i].a == a && m->s[i].b == b)
            return m->s[i].v;
    }
}

/* Insert a pair known to be absent (a != NULL). */
static int pairs_add(struct pairs *m, const void *a, const void *b, uint32_t v)
{
    size_t i;

    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        struct pair_slot *ns = calloc(cap, sizeof(*ns));
        if (ns == NULL)
            return EBB_ENOMEM;
        for (size_t k = 0; k < m->cap; k++) {
            if (m->s[k].a == NULL)
                continue;
            for (i = pair_hash(m->s[k].a, m->s[k].b) & (cap - 1); ns[i].a; i = (i + 1) & (cap - 1))
                ;
            ns[i] = m->s[k];
        }
        free(m->s);
        m->s = ns;
        m->cap = cap;
    }
    for (i = pair_hash(a, b) & (m->cap - 1); m->s[i].a; i = (i + 1) & (m->cap - 1))
        ;
    m->s[i] = (struct pair_slot){ a, b, v };
    m->n++;
    return 0;
}

/* ---- the index ------------------------------------------------------------------ */

struct lrange {
    uint32_t off, n;
};

struct member {
    struct ebb_pod *pod;
    const struct ebb_node *node;
    bool alive;
};

/* The pods one kind of term selects, by topology domain. Equal terms (same
 * selector, namespaces and topology key) of different pods share a group. */
struct tgroup {
    ebb_str topo;
    const struct ebb_selector *sel;  /* borrowed from the first pod's term */
    uint16_t nns;
    ebb_str *ns;                     /* sorted by address, unique */
    uint64_t hash;
    struct ebb_map dom;              /* (label value, topo) or (node, NULL) -> ebb_idlist */
};

struct ebb_anti_index {
    struct ebb_cache *cache;
    ebb_str empty;                   /* "": stands for an empty label value */
    uint32_t n;
    struct member *m;
    struct ebb_map nodes;            /* (name, NULL) -> node */
    uint32_t *by_slot;               /* cache pod slot -> member + 1 */
    uint32_t nslots;
    bool ns_done;                    /* by_ns is built (on first use) */
    struct ebb_map by_ns;            /* (ns, NULL) -> ebb_idlist */
    struct ebb_map by_node;          /* (node, NULL) -> ebb_idlist of the members with
                                        required anti-affinity (the candidates) */
    struct ebb_map keys_done;        /* (label key, NULL) -> 1 once indexed */
    struct pairs by_label;           /* (label key, value) -> range + 1 */
    struct {                         /* members with a label value: ids[off..off+n) */
        struct lrange *v;
        uint32_t n, cap;
    } ranges;
    EBB_VEC(uint32_t) ids;
    EBB_VEC(struct tgroup *) g;
    struct htab table;               /* g by tgroup.hash */
    size_t bytes;                    /* what all of the above holds (charged to
                                        the script that made the index) */
};

static void tgroup_free(struct tgroup *g)
{
    if (g == NULL)
        return;
    ebb__idlists_free(&g->dom);
    free(g->ns);
    free(g);
}

size_t ebb_anti_index_bytes(const struct ebb_anti_index *ix)
{
    return ix != NULL ? ix->bytes : 0;
}

void ebb_anti_index_destroy(struct ebb_anti_index *ix)
{
    if (ix == NULL)
        return;
    for (size_t i = 0; i < ix->g.n; i++)
        tgroup_free(ix->g.v[i]);
    free(ix->g.v);
    free(ix->table.id);
    ebb__idlists_free(&ix->by_ns);
    ebb__idlists_free(&ix->by_node);
    free(ix->by_label.s);
    free(ix->ranges.v);
    free(ix->ids.v);
    ebb__map_free(&ix->keys_done);
    free(ix->by_slot);
    ebb__map_free(&ix->nodes);
    free(ix->m);
    ebb_str_release(ix->empty);
    free(ix);
}

int ebb_anti_index_create(struct ebb_cache *cache, struct ebb_pod *const *pods, size_t npods,
                          struct ebb_node *const *nodes, size_t nnodes,
                          const atomic_int *stop, struct ebb_anti_index **out)
{
    struct ebb_anti_index *ix;
    int rc = EBB_ENOMEM;
    ebb_str last = NULL;
    const struct ebb_node *lastnd = NULL;

    if (cache == NULL || out == NULL || (pods == NULL && npods > 0) ||
        (nodes == NULL && nnodes > 0) || npods >= UINT32_MAX)
        return EBB_EINVAL;
    if ((ix = calloc(1, sizeof(*ix))) == NULL)
        return EBB_ENOMEM;
    ix->cache = cache;
    ebb__map_init(&ix->nodes);
    ebb__map_init(&ix->by_ns);
    ebb__map_init(&ix->by_node);
    ebb__map_init(&ix->keys_done);
    if ((ix->empty = ebb_str_intern("", 0)) == NULL)
        goto fail;
    if (npods > 0 && (ix->m = calloc(npods, sizeof(*ix->m))) == NULL)
        goto fail;
    ix->nslots = ebb_cache_pod_slots(cache);
    if ((ix->by_slot = calloc(ix->nslots + 1, sizeof(*ix->by_slot))) == NULL)
        goto fail;
    for (size_t k = 0; k < nnodes; k++)
        if (ebb__map_put(&ix->nodes, nodes[k]->name, NULL, nodes[k], NULL) != 0)
            goto fail;
    ix->bytes = sizeof(*ix) + npods * sizeof(*ix->m) + (ix->nslots + 1) * sizeof(*ix->by_slot) +
                ix->nodes.cap * sizeof(*ix->nodes.s);
    for (size_t i = 0; i < npods; i++) {
        struct ebb_pod *p = pods[i];
        const struct ebb_node *nd;
        struct ebb_idlist *l;
        uint32_t id;
        if ((i & 1023) == 1023 && STOPPED(stop)) {
            rc = EBB_ELIMIT;
            goto fail;
        }
        /* pods come node by node: one lookup per node */
        if (p->node != last) {
            last = p->node;
            lastnd = p->node ? ebb__map_get(&ix->nodes, p->node, NULL) : NULL;
        }
        nd = lastnd;
        /* a pod listed twice is indexed once; pods are the cache's */
        if (nd == NULL || p->slot >= ix->nslots || ebb_cache_pod_at(cache, p->slot) != p ||
            ix->by_slot[p->slot] != 0)
            continue;
        id = ix->n++;
        ix->m[id].pod = p;
        ix->m[id].node = nd;
        ix->m[id].alive = true;
        ix->by_slot[p->slot] = id + 1;
        if (p->affinity == NULL || p->affinity->nanti_required == 0)
            continue;
        if ((l = ebb__idlist_at(&ix->by_node, p->node, NULL, &ix->bytes)) == NULL ||
            ebb__vec_push_counted(l, id, &ix->bytes) != 0)
            goto fail;
    }
    *out = ix;
    return 0;
fail:
    ebb_anti_index_destroy(ix);
    return rc;
}

/* The members by namespace, for terms without an In requirement. */
static int index_namespaces(struct ebb_anti_index *ix)
{
    if (ix->ns_done)
        return 0;
    for (uint32_t id = 0; id < ix->n; id++) {
        const struct ebb_pod *p = ix->m[id].pod;
        struct ebb_idlist *l = ebb__idlist_at(&ix->by_ns, p->ns ? p->ns : ix->empty, NULL, &ix->bytes);
        if (l == NULL || ebb__vec_push_counted(l, id, &ix->bytes) != 0)
            return EBB_ENOMEM;
    }
    ix->ns_done = true;
    return 0;
}

static ebb_str nz(const struct ebb_anti_index *ix, ebb_str s)
{
    return s != NULL ? s : ix->empty;
}

/* What index_key's arrays and maps hold. */
static size_t key_bytes(const struct ebb_anti_index *ix)
{
    return ix->ranges.cap * sizeof(*ix->ranges.v) + ix->ids.cap * sizeof(*ix->ids.v) +
           ix->by_label.cap * sizeof(*ix->by_label.s) + ix->keys_done.cap * sizeof(*ix->keys_done.s);
}

/* Index every member by its value of `key` (once per key): a counting pass
 * and a filling pass into one array, ids in listing order per value. */
static int index_key(struct ebb_anti_index *ix, ebb_str key)
{
    uint32_t first = ix->ranges.n, *rng = NULL, nfound = 0, k = 0;
    size_t off = ix->ids.n, before = key_bytes(ix);
    int rc = EBB_ENOMEM;

    if (ebb__map_get(&ix->keys_done, key, NULL) != NULL)
        return 0;
    if (ix->n > 0 && (rng = malloc(ix->n * sizeof(*rng))) == NULL)
        return EBB_ENOMEM;
    for (uint32_t id = 0; id < ix->n; id++) {
        ebb_str v = NULL;
        uint32_t r;
        if (!label_lookup(&ix->m[id].pod->labels, key, &v))
            continue;
        v = nz(ix, v);
        if ((r = pairs_get(&ix->by_label, key, v)) == 0) {
            if (ebb__vec_push(&ix->ranges, ((struct lrange){ 0, 0 })) != 0)
                goto out;
            r = ix->ranges.n;
            if (pairs_add(&ix->by_label, key, v, r) != 0)
                goto out;
        }
        ix->ranges.v[r - 1].n++;
        rng[nfound++] = r - 1;
    }
    if (ix->ids.n + nfound > UINT32_MAX || ebb__vec_reserve(&ix->ids, ix->ids.n + nfound) != 0)
        goto out;
    for (uint32_t r = first; r < ix->ranges.n; r++) {
        ix->ranges.v[r].off = (uint32_t)off;
        off += ix->ranges.v[r].n;
        ix->ranges.v[r].n = 0;
    }
    for (uint32_t id = 0; id < ix->n && k < nfound; id++) {
        ebb_str v = NULL;
        struct lrange *g;
        if (!label_lookup(&ix->m[id].pod->labels, key, &v))
            continue;
        g = &ix->ranges.v[rng[k++]];
        ix->ids.v[g->off + g->n++] = id;
    }
    ix->ids.n += nfound;
    rc = ebb__map_put(&ix->keys_done, key, NULL, (void *)1, NULL);
out:
    ix->bytes += key_bytes(ix) - before;
    free(rng);
    return rc;
}

/* The domain a node belongs to for a topology key. */
static void domain_of(const struct ebb_anti_index *ix, ebb_str topo, const struct ebb_node *n,
                      ebb_str *a, ebb_str *b)
{
    ebb_str v = NULL;

    if (label_lookup(&n->labels, topo, &v)) {
        *a = nz(ix, v);
        *b = topo;
    } else {
        *a = n->name;
        *b = NULL;
    }
}

static bool ns_in(const struct tgroup *g, ebb_str ns)
{
    for (uint16_t i = 0; i < g->nns; i++)
        if (str_eq(g->ns[i], ns))
            return true;
    return false;
}

static int consider(struct ebb_anti_index *ix, struct tgroup *g, uint32_t id)
{
    const struct member *m = &ix->m[id];
    struct ebb_idlist *l;
    ebb_str a, b;

    if (!m->alive || !ns_in(g, m->pod->ns) || !ebb_selector_matches(g->sel, &m->pod->labels))
        return 0;
    domain_of(ix, g->topo, m->node, &a, &b);
    if ((l = ebb__idlist_at(&g->dom, a, b, &ix->bytes)) == NULL ||
        ebb__vec_push_counted(l, id, &ix->bytes) != 0)
        return EBB_ENOMEM;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Fill a group's domains. Only pods that can match are looked at: those
 * carrying one of the values of the selector's first In requirement, or
 * else those of the term's namespaces. Ids are listing order, and domains
 * keep it, so the pod a violation names does not depend on the run. */
static int build_group(struct ebb_anti_index *ix, struct tgroup *g)
{
    const struct ebb_req *eq = NULL;
    struct ebb_idlist ids = { 0 };
    int rc = 0;

    if (g->sel == NULL || (g->sel->flags & EBB_SEL_NOTHING))
        return 0;     /* a nil selector selects nothing */
    for (uint16_t i = 0; i < g->sel->nreqs && eq == NULL; i++)
        if (g->sel->reqs[i].op == EBB_OP_IN && g->sel->reqs[i].nvalues > 0 && g->sel->reqs[i].key)
            eq = &g->sel->reqs[i];
    if (eq != NULL && index_key(ix, eq->key) != 0)
        return EBB_ENOMEM;
    if (eq == NULL && index_namespaces(ix) != 0)
        return EBB_ENOMEM;
    for (uint16_t j = 0; j < (eq ? eq->nvalues : g->nns) && rc == 0; j++) {
        const uint32_t *src = NULL;
        uint32_t n = 0;
        if (eq != NULL) {
            uint32_t r = pairs_get(&ix->by_label, eq->key, nz(ix, eq->values[j]));
            if (r != 0) {
                src = ix->ids.v + ix->ranges.v[r - 1].off;
                n = ix->ranges.v[r - 1].n;
            }
        } else {
            const struct ebb_idlist *l = ebb__map_get(&ix->by_ns, g->ns[j], NULL);
            if (l != NULL) {
                src = l->v;
                n = l->n;
            }
        }
        for (uint32_t k = 0; k < n && rc == 0; k++)
            rc = ebb__vec_push(&ids, src[k]);
    }
    if (rc == 0 && (eq ? eq->nvalues : g->nns) > 1)
        qsort(ids.v, ids.n, sizeof(*ids.v), cmp_u32);
    for (uint32_t k = 0; k < ids.n && rc == 0; k++)
        rc = consider(ix, g, ids.v[k]);
    ebb__vec_free(&ids);
    return rc;
}

static uint64_t sel_hash(const struct ebb_selector *s)
{
    uint64_t h = 0;

    if (s == NULL)
        return 1;
    h = hmix(h, s->flags);
    for (uint16_t i = 0; i < s->nreqs; i++) {
        const struct ebb_req *r = &s->reqs[i];
        h = hmix(haddr(h, r->key), r->op);
        for (uint16_t j = 0; j < r->nvalues; j++)
            h = haddr(h, r->values[j]);
    }
    return h;
}

static bool sel_eq(const struct ebb_selector *a, const struct ebb_selector *b)
{
    if (a == b)
        return true;
    if (a == NULL || b == NULL || a->flags != b->flags || a->nreqs != b->nreqs)
        return false;
    for (uint16_t i = 0; i < a->nreqs; i++)
        if (!ebb_req_equal(&a->reqs[i], &b->reqs[i]))
            return false;
    return true;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const ebb_str *)a, y = (uintptr_t)*(const ebb_str *)b;
    return x < y ? -1 : x > y;
}

static uint64_t tgroup_hash(const void *ix, uint32_t id)
{
    return ((const struct ebb_anti_index *)ix)->g.v[id]->hash;
}

/* The group of term t as pod p declares it, built on first use. */
static struct tgroup *group_for(struct ebb_anti_index *ix, const struct ebb_pod_term *t,
                                const struct ebb_pod *p)
{
    ebb_str one[1];
    const ebb_str *ns = t->nnamespaces > 0 ? t->namespaces : one;
    uint16_t nns = t->nnamespaces > 0 ? t->nnamespaces : 1;
    ebb_str *sorted;
    uint16_t k = 0;
    uint64_t h;
    size_t tcap = ix->table.cap;
    struct tgroup *g;

    one[0] = p->ns;
    if ((sorted = malloc(nns * sizeof(*sorted))) == NULL)
        return NULL;
    for (uint16_t i = 0; i < nns; i++)
        sorted[i] = nz(ix, ns[i]);
    qsort(sorted, nns, sizeof(*sorted), cmp_ptr);
    for (uint16_t i = 0; i < nns; i++)
        if (k == 0 || sorted[k - 1] != sorted[i])
            sorted[k++] = sorted[i];
    h = haddr(sel_hash(t->selector), t->topology_key);
    for (uint16_t i = 0; i < k; i++)
        h = haddr(h, sorted[i]);
    HTAB_FOR(&ix->table, h, j) {
        g = ix->g.v[ix->table.id[j] - 1];
        if (g->hash == h && g->topo == t->topology_key && g->nns == k &&
            memcmp(g->ns, sorted, k * sizeof(*sorted)) == 0 && sel_eq(g->sel, t->selector)) {
            free(sorted);
            return g;
        }
    }
    if ((g = calloc(1, sizeof(*g))) == NULL) {
        free(sorted);
        return NULL;
    }
    g->topo = t->topology_key;
    g->sel = t->selector;
    g->ns = sorted;
    g->nns = k;
    g->hash = h;
    ix->bytes += sizeof(*g) + nns * sizeof(*sorted);
    ebb__map_init(&g->dom);
    if (build_group(ix, g) != 0 ||
        ebb__reserve_counted(ix->g.v, ix->g.cap, ix->g.n + 1, &ix->bytes) != 0)
        goto fail;
    if (htab_add(&ix->table, h, (uint32_t)ix->g.n, ix, tgroup_hash) != 0) {
        ix->bytes += (ix->table.cap - tcap) * sizeof(*ix->table.id);
        goto fail;
    }
    ix->bytes += (ix->table.cap - tcap) * sizeof(*ix->table.id);
    ix->g.v[ix->g.n++] = g;
    return g;
fail:
    tgroup_free(g);
    return NULL;
}

const struct ebb_pod *ebb_anti_index_violation(struct ebb_anti_index *ix,
                                               const struct ebb_pod *pod, int *term)
{
    const struct ebb_node *node;

    if (term)
        *term = -1;
    if (ix == NULL || pod == NULL || pod->affinity == NULL || pod->affinity->nanti_required == 0)
        return NULL;
    if (pod->node == NULL || (node = ebb__map_get(&ix->nodes, pod->node, NULL)) == NULL)
        return NULL;
    for (uint16_t t = 0; t < pod->affinity->nanti_required; t++) {
        const struct ebb_pod_term *pt = &pod->affinity->anti_required[t];
        struct tgroup *g = group_for(ix, pt, pod);
        const struct ebb_idlist *l;
        ebb_str a, b;
        if (g == NULL)
            return NULL;   /* out of memory: no answer is the safe one */
        domain_of(ix, g->topo, node, &a, &b);
        if ((l = ebb__map_get(&g->dom, a, b)) == NULL)
            continue;
        for (uint32_t k = 0; k < l->n; k++) {
            const struct member *m = &ix->m[l->v[k]];
            /* upstream skips any pod of the same name, in any namespace */
            if (m->alive && m->pod->name != pod->name) {
                if (term)
                    *term = t;
                return m->pod;
            }
        }
    }
    return NULL;
}

int ebb_anti_index_remove(struct ebb_anti_index *ix, const struct ebb_pod *pod)
{
    uintptr_t id;

    if (ix == NULL || pod == NULL)
        return EBB_EINVAL;
    id = pod->slot < ix->nslots ? ix->by_slot[pod->slot] : 0;
    if (id == 0 || !ix->m[id - 1].alive || ix->m[id - 1].pod != pod)
        return EBB_ENOENT;
    ix->m[id - 1].alive = false;
    return 0;
}

long ebb_anti_index_candidates(const struct ebb_anti_index *ix, ebb_str node,
                               struct ebb_pod ***out)
{
    const struct ebb_idlist *l;
    struct ebb_pod **v;
    long n = 0;

    if (ix == NULL || out == NULL)
        return EBB_EINVAL;
    *out = NULL;
    if (node == NULL || (l = ebb__map_get(&ix->by_node, node, NULL)) == NULL || l->n == 0)
        return 0;
    if ((v = malloc(l->n * sizeof(*v))) == NULL)
        return EBB_ENOMEM;
    for (uint32_t k = 0; k < l->n; k++) {
        const struct member *m = &ix->m[l->v[k]];
        if (m->alive && m->pod->affinity != NULL && m->pod->affinity->nanti_required > 0)
            v[n++] = m->pod;
    }
    if (n == 0) {
        free(v);
        return 0;
    }
    *out = v;
    return n;
}
