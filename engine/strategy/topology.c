/* RemovePodsViolatingTopologySpreadConstraint's domain math; see
 * include/ebb/topology.h for what is computed and how it maps to upstream.
 *
 * Costs, per namespace of P pods with C distinct constraints over N nodes:
 * collecting is O(P x constraints per pod) with a hash on the merged
 * constraint. The nodes' values of each topology key are read once per
 * object (an ordinal per distinct value, per node). Counting one constraint
 * creates its domains in O(values) when every node is eligible (no node
 * selection under Honor, taints Ignored), else O(N) policy checks, then
 * checks the selector of its candidates only (the pods a (key, value) index
 * of the namespace gives for its narrowest In requirement, else all P).
 * Balancing sorts the domains and their pods and runs at most one fit check
 * per pod of a source domain.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/affinity.h"
#include "ebb/fit.h"
#include "ebb/selector.h"
#include "ebb/taints.h"
#include "ebb/topology.h"
#include "base/map.h"
#include "base/vec.h"

#define NONE UINT32_MAX

enum { MARK_NONE = 0, MARK_SKIPPED = 1, MARK_EVICT = 2 };

/* A requirement of a merged selector, by reference: the strings belong to
 * the loaded pods (their constraint's selector, their labels). */
struct reqref {
    ebb_str key;
    uint8_t op;
    uint16_t nvalues;
    const ebb_str *values;
    int64_t num;
};

/* What a constraint is compared and hashed by, beside the public part. */
struct cons_key {
    uint64_t hash;
    uint32_t next;                  /* hash chain */
    uint32_t r0, nr;                /* its requirements in t->refs */
    bool nothing;                   /* the labelSelector was nil */
};

struct range {
    uint32_t off, n;
};

struct lentry {
    ebb_str key, value;
    uint32_t pod;
};

/* The nodes' values of one topology key, computed once per object: each
 * distinct value gets an ordinal in value order, each node the ordinal of
 * its value (-1: no such label). */
struct keyinfo {
    ebb_str key;
    int32_t *ord;                   /* per node */
    ebb_str *vals;                  /* by ordinal */
    uint32_t nvals;
};

struct ebb_topology {
    struct ebb_cache *cache;
    struct ebb_topology_opts opts;
    struct ebb_node *const *nodes;
    size_t nnodes;
    struct ebb_map node_at;         /* (name, -) -> index + 1 */
    struct keyinfo *keys;
    size_t nkeys, keycap;

    /* the loaded namespace */
    struct ebb_pod *const *pods;
    size_t npods, podcap;
    uint32_t *pod_node;             /* index in nodes, NONE: not in the set */
    uint8_t *evictable;             /* 0 unknown, 1 no, 2 yes */
    uint8_t *fits;                  /* valid when fit_gen[i] == gen */
    uint32_t *fit_gen;
    uint32_t gen;
    uint8_t *mark;                  /* MARK_* */
    ebb_str *mark_key, *mark_value;
    int32_t *mark_skew;
    uint32_t *scratch, *scratch2;   /* candidates, sort buffers */

    struct ebb_topo_constraint *cons;
    struct cons_key *ck;
    size_t ncons, conscap, ckcap;
    uint32_t *buckets;
    size_t nbuckets;
    struct reqref *refs;
    size_t nrefs, refcap;
    struct reqref *tmp;             /* the constraint being collected */
    size_t tmpcap;

    /* (label key, value) -> the pods carrying it, built on demand one key
     * at a time (the keys the constraints' In requirements name) */
    bool indexed;                   /* indexing is on for the namespace */
    struct ebb_map keys_done;       /* (key, -) -> 1 once indexed */
    struct ebb_map label_at;        /* -> range index + 1 */
    struct lentry *lent;
    size_t nlent, lentcap;
    struct range *ranges;
    size_t nranges, rangecap;
    uint32_t *kv_range;             /* per label of the key being indexed: its range */
    size_t kvcap;

    /* the constraint counted last */
    size_t counted;
    const struct keyinfo *ckey;     /* its key */
    struct ebb_topo_domains dom;
    uint32_t *dom_of;               /* ordinal -> domain index + 1 */
    uint32_t *dom_ord;              /* domain index -> ordinal */
    size_t domofcap, domordcap;
    struct ebb_node **below;        /* the nodes of the below-average domains:
                                       belowbuf, or a kept list */
    size_t nbelow;
    struct ebb_node **belowbuf;
    size_t belowcap;
    struct belowset *bsets;         /* kept lists, see below_nodes */
    size_t nbsets, bsetcap;

    /* which nodes pass the inclusion policies, per distinct (policies,
     * node selection, tolerations): constraints share a few */
    struct elig *elig;
    size_t nelig, eligcap;
};

struct elig {
    uint64_t hash;
    const struct ebb_pod *pod;      /* stands for the ones equal to it */
    uint8_t affinity_policy, taints_policy;
    uint8_t *ok;                    /* per node */
};

#define MAX_ELIG 1024               /* past this, nodes are checked each time */

/* The nodes below the average for one topology key, one set of eligible
 * nodes and one set of below-average values: constraints over the same
 * few zones meet the same few sets, and the list is as long as the nodes. */
struct belowset {
    ebb_str key;
    long elig;                      /* index in elig, -1: every node */
    uint64_t mask;                  /* bit per ordinal below the average */
    struct ebb_node **nodes;
    size_t n;
};

#define MAX_BELOWSETS 256

/* ---- small helpers ------------------------------------------------------- */

static bool stopped(const struct ebb_topology *t)
{
    return t->opts.stop != NULL && *t->opts.stop != 0;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t pv(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y ? -1 : x > y;
}

/* Stable merge sort of indices; cmp(ud, a, b) < 0 when a goes first. */
typedef int (*idx_cmp)(const void *ud, uint32_t a, uint32_t b);

static void msort(uint32_t *v, uint32_t *tmp, size_t n, idx_cmp cmp, const void *ud)
{
    size_t h, i, j, k;

    if (n < 2)
        return;
    if (n <= 8) {
        for (i = 1; i < n; i++) {
            uint32_t x = v[i];
            for (j = i; j > 0 && cmp(ud, x, v[j - 1]) < 0; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    h = n / 2;
    msort(v, tmp, h, cmp, ud);
    msort(v + h, tmp, n - h, cmp, ud);
    for (i = 0, j = h, k = 0; i < h && j < n;)
        tmp[k++] = cmp(ud, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof(*v));
}

/* ---- equality of the parts a constraint carries from its pod -------------- */

static bool tolerations_equal(const struct ebb_pod *a, const struct ebb_pod *b)
{
    if (a->ntolerations != b->ntolerations)
        return false;
    for (uint16_t i = 0; i < a->ntolerations; i++) {
        const struct ebb_toleration *x = &a->tolerations[i], *y = &b->tolerations[i];
        if (x->key != y->key || x->value != y->value || x->op != y->op || x->effect != y->effect ||
            x->has_seconds != y->has_seconds || (x->has_seconds && x->seconds != y->seconds))
            return false;
    }
    return true;
}

static uint64_t hash_node_affinity(uint64_t h, const struct ebb_pod *p)
{
    for (uint32_t i = 0; i < p->node_selector.n; i++)
        h = mix(mix(h, pv(p->node_selector.kv[i].key)), pv(p->node_selector.kv[i].value));
    if (p->affinity && p->affinity->has_required)
        h = mix(h, 1000u + p->affinity->nrequired);
    return h;
}

static uint64_t hash_tolerations(uint64_t h, const struct ebb_pod *p)
{
    for (uint16_t i = 0; i < p->ntolerations; i++)
        h = mix(mix(h, pv(p->tolerations[i].key)), pv(p->tolerations[i].value));
    return mix(h, p->ntolerations);
}

/* ---- merged selectors ----------------------------------------------------- */

static int ref_cmp(const struct reqref *a, const struct reqref *b)
{
    int c = ebb_str_cmp(a->key, b->key);

    if (c != 0)
        return c;
    if (a->op != b->op)
        return a->op < b->op ? -1 : 1;
    if (a->nvalues != b->nvalues)
        return a->nvalues < b->nvalues ? -1 : 1;
    for (uint16_t i = 0; i < a->nvalues; i++)
        if (a->values[i] != b->values[i])
            return cmp_ptr(a->values[i], b->values[i]);
    return a->num < b->num ? -1 : a->num > b->num;
}

static const ebb_str *label_slot(const struct ebb_labels *l, ebb_str key)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (l->kv[i].key == key)
            return &l->kv[i].value;
    return NULL;
}

/* The constraint's selector merged with the pod's values of matchLabelKeys
 * (mergeLabelSetWithSelector) into t->tmp, in canonical order. A nil
 * selector stays nil: its Requirements() are not ok, so nothing is merged. */
static int merge_into_tmp(struct ebb_topology *t, const struct ebb_tsc *c, const struct ebb_pod *p,
                          size_t *n, bool *nothing)
{
    size_t k = 0;

    *n = 0;
    *nothing = c->selector == NULL || (c->selector->flags & EBB_SEL_NOTHING);
    if (*nothing)
        return 0;
    if (ebb__grow((void **)&t->tmp, &t->tmpcap, (size_t)c->nmatch_keys + c->selector->nreqs + 1,
             sizeof(*t->tmp)) != 0)
        return EBB_ENOMEM;
    for (uint16_t i = 0; i < c->nmatch_keys; i++) {
        const ebb_str *v = label_slot(&p->labels, c->match_keys[i]);
        bool dup = false;
        if (v == NULL)
            continue;
        for (size_t j = 0; j < k && !dup; j++)   /* a labels.Set: one per key */
            dup = t->tmp[j].key == c->match_keys[i];
        if (dup)
            continue;
        t->tmp[k++] = (struct reqref){ c->match_keys[i], EBB_OP_IN, 1, v, 0 };
    }
    for (uint16_t i = 0; i < c->selector->nreqs; i++) {
        const struct ebb_req *r = &c->selector->reqs[i];
        t->tmp[k++] = (struct reqref){ r->key, r->op, r->nvalues, r->values, r->num };
    }
    for (size_t i = 1; i < k; i++) {
        struct reqref x = t->tmp[i];
        size_t j = i;
        for (; j > 0 && ref_cmp(&x, &t->tmp[j - 1]) < 0; j--)
            t->tmp[j] = t->tmp[j - 1];
        t->tmp[j] = x;
    }
    *n = k;
    return 0;
}

static struct ebb_selector *build_selector(const struct reqref *r, size_t n, bool nothing)
{
    struct ebb_selector *s = NULL;
    struct ebb_req *reqs;

    if (nothing)
        return ebb_selector_nothing();
    if ((reqs = calloc(n ? n : 1, sizeof(*reqs))) == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        reqs[i].key = ebb_str_ref(r[i].key);
        reqs[i].op = r[i].op;
        reqs[i].num = r[i].num;
        if (r[i].nvalues > 0 && (reqs[i].values = calloc(r[i].nvalues, sizeof(ebb_str))) == NULL)
            goto fail;
        reqs[i].nvalues = r[i].nvalues;
        for (uint16_t j = 0; j < r[i].nvalues; j++)
            reqs[i].values[j] = ebb_str_ref(r[i].values[j]);
    }
    if (ebb_selector_from_reqs(reqs, (uint16_t)n, &s) == 0)
        return s;
fail:
    for (size_t i = 0; i < n; i++)
        ebb_req_free(&reqs[i]);
    free(reqs);
    return NULL;
}

/* ---- create / destroy ------------------------------------------------------ */

int ebb_topology_create(struct ebb_cache *c, struct ebb_node *const *nodes, size_t nnodes,
                        const struct ebb_topology_opts *opts, struct ebb_topology **out)
{
    struct ebb_topology *t;

    if (c == NULL || (nodes == NULL && nnodes > 0) || opts == NULL || out == NULL)
        return EBB_EINVAL;
    if ((t = calloc(1, sizeof(*t))) == NULL)
        return EBB_ENOMEM;
    t->cache = c;
    t->opts = *opts;
    t->nodes = nodes;
    t->nnodes = nnodes;
    t->counted = SIZE_MAX;
    ebb__map_init(&t->node_at);
    ebb__map_init(&t->label_at);
    ebb__map_init(&t->keys_done);
    for (size_t i = 0; i < nnodes; i++) {
        /* a name given twice keeps its first node */
        if (ebb__map_get(&t->node_at, nodes[i]->name, NULL) == NULL &&
            ebb__map_put(&t->node_at, nodes[i]->name, NULL, (void *)(uintptr_t)(i + 1), NULL) != 0) {
            ebb_topology_destroy(t);
            return EBB_ENOMEM;
        }
    }
    *out = t;
    return 0;
}

static void clear_constraints(struct ebb_topology *t)
{
    for (size_t i = 0; i < t->ncons; i++)
        ebb_selector_free(t->cons[i].selector);
    t->ncons = 0;
    t->nrefs = 0;
}

void ebb_topology_destroy(struct ebb_topology *t)
{
    if (t == NULL)
        return;
    clear_constraints(t);
    for (size_t i = 0; i < t->dom.cap; i++)
        free(t->dom.v[i].pods);
    free(t->dom.v);
    ebb__map_free(&t->node_at);
    ebb__map_free(&t->label_at);
    ebb__map_free(&t->keys_done);
    free(t->kv_range);
    for (size_t i = 0; i < t->nkeys; i++) {
        free(t->keys[i].ord);
        free(t->keys[i].vals);
    }
    free(t->keys);
    free(t->dom_of);
    free(t->dom_ord);
    free(t->pod_node);
    free(t->evictable);
    free(t->fits);
    free(t->fit_gen);
    free(t->mark);
    free(t->mark_key);
    free(t->mark_value);
    free(t->mark_skew);
    free(t->scratch);
    free(t->scratch2);
    free(t->cons);
    free(t->ck);
    free(t->buckets);
    free(t->refs);
    free(t->tmp);
    free(t->lent);
    free(t->ranges);
    free(t->belowbuf);
    for (size_t i = 0; i < t->nbsets; i++)
        free(t->bsets[i].nodes);
    free(t->bsets);
    for (size_t i = 0; i < t->nelig; i++)
        free(t->elig[i].ok);
    free(t->elig);
    free(t);
}

/* ---- load: the distinct constraints of a namespace ------------------------- */

static int pod_arrays(struct ebb_topology *t, size_t n)
{
    size_t cap = t->podcap;

    if (n <= t->podcap)
        return 0;
    /* parallel arrays: each grows from a copy of the one capacity, so that
     * all get the same answer; podcap moves only when all have grown */
#define RE(field)                                                        \
    cap = t->podcap;                                                     \
    if (ebb__reserve(t->field, cap, n) != 0)                             \
        return EBB_ENOMEM;
    RE(pod_node) RE(evictable) RE(fits) RE(fit_gen) RE(mark) RE(mark_key) RE(mark_value) RE(mark_skew)
    RE(scratch) RE(scratch2)
#undef RE
    t->podcap = cap;
    return 0;
}

static bool same_constraint(const struct ebb_topology *t, size_t i, const struct ebb_tsc *c,
                            const struct ebb_pod *p, uint8_t nap, uint8_t ntp,
                            size_t n, bool nothing, uint64_t h)
{
    const struct ebb_topo_constraint *x = &t->cons[i];
    const struct cons_key *k = &t->ck[i];

    if (k->hash != h || x->max_skew != c->max_skew || x->topology_key != c->topology_key ||
        x->affinity_policy != nap || x->taints_policy != ntp || k->nothing != nothing || k->nr != n)
        return false;
    for (size_t j = 0; j < n; j++)
        if (ref_cmp(&t->refs[k->r0 + j], &t->tmp[j]) != 0)
            return false;
    if (nap == EBB_POLICY_HONOR && !ebb_pod_node_affinity_equal(x->pod, p))
        return false;
    if (ntp == EBB_POLICY_HONOR && !tolerations_equal(x->pod, p))
        return false;
    return true;
}

static int rehash(struct ebb_topology *t)
{
    size_t nb = t->nbuckets ? t->nbuckets * 2 : 64;
    uint32_t *b = malloc(nb * sizeof(*b));

    if (b == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < nb; i++)
        b[i] = NONE;
    for (size_t i = 0; i < t->ncons; i++) {
        size_t s = (size_t)(t->ck[i].hash & (nb - 1));
        t->ck[i].next = b[s];
        b[s] = (uint32_t)i;
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = nb;
    return 0;
}

static int add_constraint(struct ebb_topology *t, const struct ebb_tsc *c, const struct ebb_pod *p)
{
    uint8_t nap = c->node_affinity_policy == EBB_POLICY_UNSET ? EBB_POLICY_HONOR : c->node_affinity_policy;
    uint8_t ntp = c->node_taints_policy == EBB_POLICY_UNSET ? EBB_POLICY_IGNORE : c->node_taints_policy;
    size_t n, slot, i;
    bool nothing;
    uint64_t h;
    int rc;

    if ((rc = merge_into_tmp(t, c, p, &n, &nothing)) != 0)
        return rc;
    h = mix(mix(mix(mix(0, (uint64_t)(uint32_t)c->max_skew), pv(c->topology_key)), nap * 4u + ntp),
            nothing);
    for (i = 0; i < n; i++) {
        h = mix(mix(mix(h, pv(t->tmp[i].key)), t->tmp[i].op), (uint64_t)t->tmp[i].num);
        for (uint16_t j = 0; j < t->tmp[i].nvalues; j++)
            h = mix(h, pv(t->tmp[i].values[j]));
    }
    if (nap == EBB_POLICY_HONOR)
        h = hash_node_affinity(h, p);
    if (ntp == EBB_POLICY_HONOR)
        h = hash_tolerations(h, p);

    if (t->nbuckets == 0 && (rc = rehash(t)) != 0)
        return rc;
    for (i = t->buckets[h & (t->nbuckets - 1)]; i != NONE; i = t->ck[i].next)
        if (same_constraint(t, i, c, p, nap, ntp, n, nothing, h))
            return 0;

    if ((rc = ebb__grow((void **)&t->cons, &t->conscap, t->ncons + 1, sizeof(*t->cons))) != 0 ||
        (rc = ebb__grow((void **)&t->ck, &t->ckcap, t->ncons + 1, sizeof(*t->ck))) != 0)
        return rc;
    if ((rc = ebb__grow((void **)&t->refs, &t->refcap, t->nrefs + n + 1, sizeof(*t->refs))) != 0)
        return rc;
    i = t->ncons;
    t->cons[i] = (struct ebb_topo_constraint){
        .max_skew = c->max_skew,
        .when = c->when_unsatisfiable,
        .affinity_policy = nap,
        .taints_policy = ntp,
        .topology_key = c->topology_key,
        .selector = build_selector(t->tmp, n, nothing),
        .pod = p,
    };
    if (t->cons[i].selector == NULL)
        return EBB_ENOMEM;
    memcpy(&t->refs[t->nrefs], t->tmp, n * sizeof(*t->refs));
    t->ck[i] = (struct cons_key){ .hash = h, .r0 = (uint32_t)t->nrefs, .nr = (uint32_t)n,
                                  .nothing = nothing };
    t->nrefs += n;
    t->ncons++;
    if (t->ncons * 2 > t->nbuckets)
        return rehash(t);
    slot = (size_t)(h & (t->nbuckets - 1));
    t->ck[i].next = t->buckets[slot];
    t->buckets[slot] = (uint32_t)i;
    return 0;
}

int ebb_topology_load(struct ebb_topology *t, struct ebb_pod *const *pods, size_t npods)
{
    int rc;

    if (t == NULL || (pods == NULL && npods > 0) || npods >= NONE)
        return EBB_EINVAL;
    clear_constraints(t);
    if (t->buckets)
        for (size_t i = 0; i < t->nbuckets; i++)
            t->buckets[i] = NONE;
    t->indexed = false;
    t->counted = SIZE_MAX;
    t->dom.n = 0;
    t->pods = pods;
    t->npods = npods;
    if ((rc = pod_arrays(t, npods)) != 0) {
        t->pods = NULL;
        t->npods = 0;
        return rc;
    }
    if (npods > 0) {
        memset(t->evictable, 0, npods * sizeof(*t->evictable));
        memset(t->mark, 0, npods * sizeof(*t->mark));
        memset(t->fit_gen, 0, npods * sizeof(*t->fit_gen));
    }
    t->gen = 0;
    for (size_t i = 0; i < npods; i++) {
        const struct ebb_pod *p = pods[i];
        uintptr_t n = p->node ? (uintptr_t)ebb__map_get(&t->node_at, p->node, NULL) : 0;
        if ((i & 1023) == 1023 && stopped(t))
            return EBB_ELIMIT;
        t->pod_node[i] = n ? (uint32_t)(n - 1) : NONE;
        for (uint16_t k = 0; k < p->ntsc; k++) {
            /* only the whenUnsatisfiable values asked for */
            if (!(t->opts.when & (1u << p->tsc[k].when_unsatisfiable)))
                continue;
            if ((rc = add_constraint(t, &p->tsc[k], p)) != 0)
                return rc;
        }
    }
    return 0;
}

size_t ebb_topology_nconstraints(const struct ebb_topology *t)
{
    return t ? t->ncons : 0;
}

const struct ebb_topo_constraint *ebb_topology_constraint(const struct ebb_topology *t, size_t i)
{
    return t && i < t->ncons ? &t->cons[i] : NULL;
}

/* ---- the (label key, value) index ------------------------------------------ */

/* Turn indexing on for the loaded namespace: keys come with index_key. */
static void start_index(struct ebb_topology *t)
{
    ebb__map_free(&t->label_at);
    ebb__map_free(&t->keys_done);
    t->nranges = 0;
    t->nlent = 0;
    t->indexed = true;
}

/* Index the pods by their value of `key`: one range per value, the pods of a
 * range in listing order. A counting pass, then a filling pass: linear in
 * the pods, where sorting every (key, value, pod) of the namespace was not. */
static int index_key(struct ebb_topology *t, ebb_str key)
{
    size_t first = t->nranges, nkv = 0, k = 0, off = t->nlent;

    if (key == NULL || ebb__map_get(&t->keys_done, key, NULL) != NULL)
        return 0;
    for (size_t i = 0; i < t->npods; i++) {
        const struct ebb_labels *l = &t->pods[i]->labels;
        for (uint32_t j = 0; j < l->n; j++) {
            uintptr_t r;
            if (l->kv[j].key != key)
                continue;
            if (ebb__grow((void **)&t->kv_range, &t->kvcap, nkv + 1, sizeof(*t->kv_range)) != 0)
                return EBB_ENOMEM;
            if ((r = (uintptr_t)ebb__map_get(&t->label_at, key, l->kv[j].value)) == 0) {
                if (ebb__grow((void **)&t->ranges, &t->rangecap, t->nranges + 1, sizeof(*t->ranges)) != 0)
                    return EBB_ENOMEM;
                t->ranges[t->nranges++] = (struct range){ 0, 0 };
                r = t->nranges;
                if (ebb__map_put(&t->label_at, key, l->kv[j].value, (void *)r, NULL) != 0)
                    return EBB_ENOMEM;
            }
            t->ranges[r - 1].n++;
            t->kv_range[nkv++] = (uint32_t)(r - 1);
        }
    }
    if (ebb__grow((void **)&t->lent, &t->lentcap, t->nlent + nkv + 1, sizeof(*t->lent)) != 0)
        return EBB_ENOMEM;
    for (size_t r = first; r < t->nranges; r++) {
        t->ranges[r].off = (uint32_t)off;
        off += t->ranges[r].n;
        t->ranges[r].n = 0;
    }
    for (size_t i = 0; i < t->npods; i++) {
        const struct ebb_labels *l = &t->pods[i]->labels;
        for (uint32_t j = 0; j < l->n; j++) {
            struct range *g;
            if (l->kv[j].key != key)
                continue;
            g = &t->ranges[t->kv_range[k++]];
            t->lent[g->off + g->n++] = (struct lentry){ key, l->kv[j].value, (uint32_t)i };
        }
    }
    t->nlent += nkv;
    return ebb__map_put(&t->keys_done, key, NULL, (void *)1, NULL);
}

static const struct range *range_of(const struct ebb_topology *t, ebb_str key, ebb_str value)
{
    uintptr_t r = (uintptr_t)ebb__map_get(&t->label_at, key, value);
    return r ? &t->ranges[r - 1] : NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The pods worth a selector check for constraint ci, in listing order, in
 * t->scratch; SIZE_MAX when every pod is (no usable In requirement). */
static size_t candidates(struct ebb_topology *t, size_t ci)
{
    const struct cons_key *k = &t->ck[ci];
    size_t best = SIZE_MAX, bestn = SIZE_MAX, n = 0;

    if (k->nothing)
        return 0;
    if (!t->indexed)
        return SIZE_MAX;
    for (size_t i = 0; i < k->nr; i++) {
        const struct reqref *r = &t->refs[k->r0 + i];
        size_t total = 0;
        if (r->op != EBB_OP_IN)
            continue;
        if (index_key(t, r->key) != 0)
            return SIZE_MAX;   /* out of memory: check every pod instead */
        for (uint16_t j = 0; j < r->nvalues; j++) {
            const struct range *g = range_of(t, r->key, r->values[j]);
            total += g ? g->n : 0;
        }
        if (total < bestn) {
            bestn = total;
            best = i;
        }
    }
    if (best == SIZE_MAX || bestn >= t->npods)
        return SIZE_MAX;
    {
        const struct reqref *r = &t->refs[k->r0 + best];
        for (uint16_t j = 0; j < r->nvalues; j++) {
            const struct range *g = range_of(t, r->key, r->values[j]);
            for (uint32_t x = 0; g && x < g->n; x++)
                t->scratch[n++] = t->lent[g->off + x].pod;
        }
        if (r->nvalues > 1)
            qsort(t->scratch, n, sizeof(*t->scratch), cmp_u32);
    }
    return n;
}

/* ---- counting -------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return ebb_str_cmp(*(const ebb_str *)a, *(const ebb_str *)b);
}

/* The nodes' values of `key`, built on first use. */
static const struct keyinfo *key_info(struct ebb_topology *t, ebb_str key)
{
    struct keyinfo *k;
    size_t n = 0;

    for (size_t i = 0; i < t->nkeys; i++)
        if (t->keys[i].key == key)
            return &t->keys[i];
    if (ebb__grow((void **)&t->keys, &t->keycap, t->nkeys + 1, sizeof(*t->keys)) != 0)
        return NULL;
    k = &t->keys[t->nkeys];
    memset(k, 0, sizeof(*k));
    k->key = key;
    if ((k->ord = malloc((t->nnodes + 1) * sizeof(*k->ord))) == NULL ||
        (k->vals = malloc((t->nnodes + 1) * sizeof(*k->vals))) == NULL) {
        free(k->ord);
        return NULL;
    }
    for (size_t i = 0; i < t->nnodes; i++) {
        ebb_str v = ebb_labels_get(&t->nodes[i]->labels, key);
        if (v != NULL)
            k->vals[n++] = v;
    }
    qsort(k->vals, n, sizeof(*k->vals), cmp_str);
    for (size_t i = 0; i < n; i++)
        if (k->nvals == 0 || k->vals[k->nvals - 1] != k->vals[i])
            k->vals[k->nvals++] = k->vals[i];
    for (size_t i = 0; i < t->nnodes; i++) {
        ebb_str v = ebb_labels_get(&t->nodes[i]->labels, key);
        const ebb_str *at = v ? bsearch(&v, k->vals, k->nvals, sizeof(*k->vals), cmp_str) : NULL;
        k->ord[i] = at ? (int32_t)(at - k->vals) : -1;
    }
    t->nkeys++;
    return k;
}

/* matchNodeInclusionPolicies */
static bool eligible(const struct ebb_topo_constraint *c, const struct ebb_node *n)
{
    if (c->affinity_policy == EBB_POLICY_HONOR && !ebb_pod_matches_node_selector(c->pod, n))
        return false;
    if (c->taints_policy == EBB_POLICY_HONOR &&
        !ebb_pod_tolerates_node_taints(c->pod, n, EBB_EFFECT_NO_SCHEDULE | EBB_EFFECT_NO_EXECUTE))
        return false;
    return true;
}

/* eligible() of constraint c for every node, as an index in t->elig, or -1
 * (out of memory, or too many distinct ones kept): then ask eligible(). */
static long eligible_index(struct ebb_topology *t, const struct ebb_topo_constraint *c)
{
    bool ha = c->affinity_policy == EBB_POLICY_HONOR, ht = c->taints_policy == EBB_POLICY_HONOR;
    uint64_t h = mix(mix(0, c->affinity_policy), c->taints_policy);
    struct elig *e;

    if (ha)
        h = hash_node_affinity(h, c->pod);
    if (ht)
        h = hash_tolerations(h, c->pod);
    for (size_t i = 0; i < t->nelig; i++) {
        e = &t->elig[i];
        if (e->hash == h && e->affinity_policy == c->affinity_policy &&
            e->taints_policy == c->taints_policy && (!ha || ebb_pod_node_affinity_equal(e->pod, c->pod)) &&
            (!ht || tolerations_equal(e->pod, c->pod)))
            return (long)i;
    }
    if (t->nelig == MAX_ELIG || ebb__grow((void **)&t->elig, &t->eligcap, t->nelig + 1, sizeof(*t->elig)) != 0)
        return -1;
    e = &t->elig[t->nelig];
    if ((e->ok = malloc(t->nnodes + 1)) == NULL)
        return -1;
    e->hash = h;
    e->pod = c->pod;
    e->affinity_policy = c->affinity_policy;
    e->taints_policy = c->taints_policy;
    for (size_t i = 0; i < t->nnodes; i++)
        e->ok[i] = eligible(c, t->nodes[i]);
    return (long)t->nelig++;
}

static const uint8_t *eligible_nodes(struct ebb_topology *t, const struct ebb_topo_constraint *c)
{
    long i = eligible_index(t, c);
    return i >= 0 ? t->elig[i].ok : NULL;
}

/* Every node passes the inclusion policies: nothing to check per node. */
static bool every_node_eligible(const struct ebb_topo_constraint *c)
{
    const struct ebb_pod *p = c->pod;
    bool selects = p->node_selector.n > 0 || (p->affinity && p->affinity->has_required);
    return (c->affinity_policy != EBB_POLICY_HONOR || !selects) && c->taints_policy != EBB_POLICY_HONOR;
}

/* The domain of ordinal `ord`, created empty on first use. */
static struct ebb_topo_domain *domain(struct ebb_topology *t, int32_t ord)
{
    struct ebb_topo_domain *d;

    if (t->dom_of[ord] != 0)
        return &t->dom.v[t->dom_of[ord] - 1];
    if (t->dom.n == t->dom.cap) {
        size_t old = t->dom.cap;
        if (ebb__vec_reserve(&t->dom, t->dom.n + 1) != 0)
            return NULL;
        memset(t->dom.v + old, 0, (t->dom.cap - old) * sizeof(*t->dom.v));
    }
    if (ebb__grow((void **)&t->dom_ord, &t->domordcap, t->dom.cap, sizeof(*t->dom_ord)) != 0)
        return NULL;
    t->dom_ord[t->dom.n] = (uint32_t)ord;
    t->dom_of[ord] = (uint32_t)(t->dom.n + 1);
    d = &t->dom.v[t->dom.n++];
    d->value = t->ckey->vals[ord];
    d->size = d->npods = 0;     /* the slot keeps its buffer */
    return d;
}

static int domain_push(struct ebb_topo_domain *d, uint32_t pod)
{
    if (d->npods == d->cap && ebb__reserve(d->pods, d->cap, (size_t)d->npods + 1) != 0)
        return EBB_ENOMEM;
    d->pods[d->npods++] = pod;
    d->size = d->npods;
    return 0;
}

/* Domains were created by ordinal as met; put them in ordinal (= value)
 * order. A counting sort through dom_of: every ordinal maps to one slot. */
static void sort_domains_by_value(struct ebb_topology *t)
{
    uint32_t nvals = t->ckey->nvals;
    size_t k = 0;

    for (uint32_t o = 0; o < nvals; o++) {
        uint32_t at = t->dom_of[o];
        if (at == 0)
            continue;
        /* swap slot at-1 into position k (slots keep their buffers) */
        if (at - 1 != k) {
            struct ebb_topo_domain tmp = t->dom.v[k];
            uint32_t ok = t->dom_ord[k];
            t->dom.v[k] = t->dom.v[at - 1];
            t->dom.v[at - 1] = tmp;
            t->dom_ord[at - 1] = ok;
            t->dom_of[ok] = at;
            t->dom_ord[k] = o;
            t->dom_of[o] = (uint32_t)(k + 1);
        }
        k++;
    }
}

int ebb_topology_count(struct ebb_topology *t, size_t ci, const struct ebb_topo_domains **out)
{
    const struct ebb_topo_constraint *c;
    const struct keyinfo *key;
    size_t n;

    if (t == NULL || ci >= t->ncons)
        return EBB_EINVAL;
    c = &t->cons[ci];
    t->counted = SIZE_MAX;
    t->dom.n = 0;
    t->dom.sum = 0;
    if ((key = key_info(t, c->topology_key)) == NULL)
        return EBB_ENOMEM;
    t->ckey = key;
    if (ebb__grow((void **)&t->dom_of, &t->domofcap, key->nvals + 1, sizeof(*t->dom_of)) != 0)
        return EBB_ENOMEM;
    memset(t->dom_of, 0, key->nvals * sizeof(*t->dom_of));
    /* more than one constraint over the namespace: index it once */
    if (!t->indexed && t->ncons > 1)
        start_index(t);

    /* every value of a node that passes the inclusion policies, even with
     * no pod: a topology may have 0 pods */
    if (every_node_eligible(c)) {
        for (uint32_t o = 0; o < key->nvals; o++)
            if (domain(t, (int32_t)o) == NULL)
                return EBB_ENOMEM;
    } else {
        const uint8_t *ok = eligible_nodes(t, c);
        /* until every value has its domain: not every node per constraint */
        for (size_t i = 0; i < t->nnodes && t->dom.n < key->nvals; i++) {
            int32_t o = key->ord[i];
            if (o >= 0 && t->dom_of[o] == 0 && (ok ? ok[i] : eligible(c, t->nodes[i])) &&
                domain(t, o) == NULL)
                return EBB_ENOMEM;
        }
    }
    n = candidates(t, ci);
    for (size_t k = 0; k < (n == SIZE_MAX ? t->npods : n); k++) {
        uint32_t i = n == SIZE_MAX ? (uint32_t)k : t->scratch[k];
        const struct ebb_pod *p = t->pods[i];
        struct ebb_topo_domain *d;
        int32_t o;

        if ((k & 1023) == 1023 && stopped(t))
            return EBB_ELIMIT;
        if (p->flags & EBB_POD_TERMINATING)
            continue;
        if (!ebb_selector_matches(c->selector, &p->labels))
            continue;
        /* a pod of a node outside the set, or of one without the key, is
         * not counted; a node failing the policies still gets its domain
         * created by its pods (upstream appends to the map) */
        if (t->pod_node[i] == NONE || (o = key->ord[t->pod_node[i]]) < 0)
            continue;
        if ((d = domain(t, o)) == NULL || domain_push(d, i) != 0)
            return EBB_ENOMEM;
        t->dom.sum++;
    }
    sort_domains_by_value(t);
    t->counted = ci;
    if (out)
        *out = &t->dom;
    return 0;
}

bool ebb_topology_is_balanced(const struct ebb_topo_domains *d, int32_t max_skew)
{
    uint32_t lo = UINT32_MAX, hi = 0;

    if (d == NULL || d->n == 0)
        return true;
    for (size_t i = 0; i < d->n; i++) {
        if (d->v[i].size < lo)
            lo = d->v[i].size;
        if (d->v[i].size > hi)
            hi = d->v[i].size;
    }
    return (int64_t)hi - lo <= max_skew;
}

/* ---- balanceDomains ------------------------------------------------------------ */

static int cmp_domain_size(const void *a, const void *b)
{
    const struct ebb_topo_domain *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    return ebb_str_cmp(x->value, y->value);
}

static bool is_evictable(struct ebb_topology *t, uint32_t i)
{
    if (t->opts.evictable == NULL)
        return true;
    if (t->evictable[i] == 0)
        t->evictable[i] = t->opts.evictable(t->pods[i], t->opts.ud) ? 2 : 1;
    return t->evictable[i] == 2;
}

/* hasSelectorOrAffinity: a nodeSelector or any node affinity. */
static bool has_selector_or_affinity(const struct ebb_pod *p)
{
    return (p->flags & EBB_POD_NODE_SELECTOR) ||
           (p->affinity != NULL && (p->affinity->has_required || p->affinity->npreferred > 0));
}

static int group_of(struct ebb_topology *t, uint32_t i)
{
    if (!is_evictable(t, i))
        return 0;
    return has_selector_or_affinity(t->pods[i]) ? 1 : 2;
}

/* sortDomains' pod order: non-evictable, then with a selector/affinity,
 * then the rest; inside a group ascending priority with unset first (the
 * tail is taken first). Upstream's sort.Slice is not stable and its
 * comparator says "less" both ways on equal priorities: ties keep the
 * listing order here. */
static int cmp_in_domain(const void *ud, uint32_t a, uint32_t b)
{
    struct ebb_topology *t = (struct ebb_topology *)ud;
    int ga = group_of(t, a), gb = group_of(t, b);
    const struct ebb_pod *x = t->pods[a], *y = t->pods[b];
    bool hx, hy;

    if (ga != gb)
        return ga < gb ? -1 : 1;
    if (ga == 0)
        return 0;
    hx = x->flags & EBB_POD_HAS_PRIORITY;
    hy = y->flags & EBB_POD_HAS_PRIORITY;
    if (hx != hy)
        return hx ? 1 : -1;
    if (hx && x->priority != y->priority)
        return x->priority < y->priority ? -1 : 1;
    return 0;
}

/* t->below: the eligible nodes of the domains (counted last) whose size is
 * below `ideal`, in node order. Kept per (key, eligible nodes, values below)
 * when the key has at most 64 values. */
static int below_nodes(struct ebb_topology *t, const struct ebb_topo_constraint *c, double ideal)
{
    const struct ebb_topo_domains *d = &t->dom;
    bool all = every_node_eligible(c);
    long ei = all ? -1 : eligible_index(t, c);
    const uint8_t *ok = ei >= 0 ? t->elig[ei].ok : NULL;
    bool keep = t->ckey->nvals <= 64 && (all || ok != NULL);
    uint64_t mask = 0;
    struct belowset *bs;
    size_t n = 0;

    if (keep) {
        for (uint32_t o = 0; o < t->ckey->nvals; o++) {
            uint32_t x = t->dom_of[o];
            if (x != 0 && (double)d->v[x - 1].size < ideal)
                mask |= 1ull << o;
        }
        for (size_t i = 0; i < t->nbsets; i++) {
            bs = &t->bsets[i];
            if (bs->key == c->topology_key && bs->elig == ei && bs->mask == mask) {
                t->below = bs->nodes;
                t->nbelow = bs->n;
                return 0;
            }
        }
    }
    for (size_t k = 0; k < t->nnodes; k++) {
        int32_t o = t->ckey->ord[k];
        uint32_t x;
        if (o < 0 || (x = t->dom_of[o]) == 0 || !((double)d->v[x - 1].size < ideal) ||
            !(all || (ok ? ok[k] : eligible(c, t->nodes[k]))))
            continue;
        if (ebb__grow((void **)&t->belowbuf, &t->belowcap, n + 1, sizeof(*t->belowbuf)) != 0)
            return EBB_ENOMEM;
        t->belowbuf[n++] = t->nodes[k];
    }
    t->below = t->belowbuf;
    t->nbelow = n;
    if (!keep || t->nbsets == MAX_BELOWSETS ||
        ebb__grow((void **)&t->bsets, &t->bsetcap, t->nbsets + 1, sizeof(*t->bsets)) != 0)
        return 0;
    bs = &t->bsets[t->nbsets];
    if ((bs->nodes = malloc((n + 1) * sizeof(*bs->nodes))) == NULL)
        return 0;
    memcpy(bs->nodes, t->belowbuf, n * sizeof(*bs->nodes));
    bs->key = c->topology_key;
    bs->elig = ei;
    bs->mask = mask;
    bs->n = n;
    t->nbsets++;
    return 0;
}

/* node.PodFitsAnyOtherNode against the nodes of the below-average domains,
 * once per pod and constraint. */
static bool fits_below(struct ebb_topology *t, uint32_t i)
{
    if (t->fit_gen[i] != t->gen) {
        t->fits[i] = ebb_pod_fits_any_other_node(t->cache, t->pods[i], t->below, t->nbelow);
        t->fit_gen[i] = t->gen;
    }
    return t->fits[i];
}

static int cmp_fit_last(const void *ud, uint32_t a, uint32_t b)
{
    struct ebb_topology *t = (struct ebb_topology *)ud;
    bool fa = fits_below(t, a), fb = fits_below(t, b);
    return fa == fb ? 0 : (fa ? 1 : -1);
}

int ebb_topology_balance(struct ebb_topology *t, size_t ci)
{
    const struct ebb_topo_constraint *c;
    struct ebb_topo_domains *d;
    double ideal;
    size_t i, j;
    int rc;

    if (t == NULL || ci >= t->ncons)
        return EBB_EINVAL;
    if (t->counted != ci)
        return EBB_ESTATE;
    c = &t->cons[ci];
    d = &t->dom;
    if (d->n == 0)
        return 0;
    t->counted = SIZE_MAX;   /* the domains are spent */
    ideal = (double)d->sum / (double)d->n;

    /* filterNodesBelowIdealAvg over the eligible nodes, with the sizes
     * before any move */
    if ((rc = below_nodes(t, c, ideal)) != 0)
        return rc;
    if (++t->gen == 0) {   /* the fit memo's generation wrapped */
        memset(t->fit_gen, 0, t->npods * sizeof(*t->fit_gen));
        t->gen = 1;
    }

    /* sortDomains: ascending size; ties by value (random upstream) */
    qsort(d->v, d->n, sizeof(*d->v), cmp_domain_size);
    for (size_t k = 0; k < d->n; k++) {
        if (stopped(t))
            return EBB_ELIMIT;
        msort(d->v[k].pods, t->scratch2, d->v[k].npods, cmp_in_domain, t);
    }

    i = 0;
    j = d->n - 1;
    while (i < j) {
        struct ebb_topo_domain *di, *dj;
        double skew, above, below, half;
        int64_t move;

        if (stopped(t))
            return EBB_ELIMIT;
        /* j has no more to give without falling below the average: the
         * next one (once per round, as upstream) */
        if ((double)d->v[j].size <= ideal)
            j--;
        di = &d->v[i];
        dj = &d->v[j];
        skew = (double)((int64_t)dj->size - (int64_t)di->size);
        if ((int64_t)skew <= c->max_skew) {
            i++;
            continue;
        }
        above = ceil((double)dj->size - ideal);
        below = ceil(ideal - (double)di->size);
        half = ceil((skew - (double)c->max_skew) / 2);
        move = (int64_t)fmin(fmin(above, below), half);
        if (move <= 0) {
            i++;
            continue;
        }
        /* prefer, at the tail, pods that fit a node below the average */
        msort(dj->pods, t->scratch2, dj->size, cmp_fit_last, t);
        for (uint32_t k = dj->size - (uint32_t)move; k < dj->size; k++) {
            uint32_t p = dj->pods[k];
            if (t->opts.node_fit && !fits_below(t, p)) {
                if (t->mark[p] == MARK_NONE)
                    t->mark[p] = MARK_SKIPPED;
                continue;   /* still counted as moved */
            }
            if (t->mark[p] != MARK_EVICT) {
                t->mark[p] = MARK_EVICT;
                t->mark_key[p] = c->topology_key;
                t->mark_value[p] = dj->value;
                t->mark_skew[p] = c->max_skew;
            }
        }
        dj->size -= (uint32_t)move;
        dj->npods = dj->size;
        di->size += (uint32_t)move;
    }
    return 0;
}

/* ---- results -------------------------------------------------------------------- */

static int cmp_by_name(const void *ud, uint32_t a, uint32_t b)
{
    const struct ebb_topology *t = ud;
    int c = ebb_str_cmp(t->pods[a]->ns, t->pods[b]->ns);
    return c ? c : ebb_str_cmp(t->pods[a]->name, t->pods[b]->name);
}

size_t ebb_topology_marked(const struct ebb_topology *t, bool skipped, uint32_t *out)
{
    uint8_t want = skipped ? MARK_SKIPPED : MARK_EVICT;
    size_t n = 0;

    if (t == NULL || out == NULL)
        return 0;
    for (size_t i = 0; i < t->npods; i++)
        if (t->mark[i] == want)
            out[n++] = (uint32_t)i;
    msort(out, t->scratch2, n, cmp_by_name, t);
    return n;
}

bool ebb_topology_mark_reason(const struct ebb_topology *t, uint32_t idx, ebb_str *topology_key,
                              ebb_str *value, int32_t *max_skew)
{
    if (t == NULL || idx >= t->npods || t->mark[idx] != MARK_EVICT)
        return false;
    if (topology_key)
        *topology_key = t->mark_key[idx];
    if (value)
        *value = t->mark_value[idx];
    if (max_skew)
        *max_skew = t->mark_skew[idx];
    return true;
}

struct nsbucket {
    ebb_str ns;
    uint32_t n, off;
};

/* By name; off holds the order met while sorting (NULL buckets tie). */
static int cmp_bucket(const void *a, const void *b)
{
    const struct nsbucket *x = a, *y = b;
    int c = ebb_str_cmp(x->ns, y->ns);
    return c ? c : (x->off < y->off ? -1 : x->off > y->off);
}

/* A stable bucket sort: pods by namespace name, in listing order within
 * one; linear in the pods, plus sorting the namespaces. */
int ebb_topology_by_namespace(struct ebb_pod *const *pods, size_t n, struct ebb_pod **out)
{
    struct ebb_map at;                  /* (ns, -) -> bucket + 1 */
    struct nsbucket *b = NULL;
    uint32_t *bucket = NULL, *rank = NULL;
    size_t nb = 0, cap = 0;
    int rc = EBB_ENOMEM;

    if (n == 0)
        return 0;
    if (n >= NONE)
        return EBB_EINVAL;
    ebb__map_init(&at);
    if ((bucket = malloc(n * sizeof(*bucket))) == NULL)
        goto out;
    for (size_t i = 0; i < n; i++) {
        ebb_str ns = pods[i]->ns;
        uintptr_t k = ns ? (uintptr_t)ebb__map_get(&at, ns, NULL) : 0;
        if (k == 0) {
            /* a pod without a namespace (none in a cache) gets a bucket of
             * its own: they sort first, as ebb_str_cmp puts NULL first */
            if (ebb__grow((void **)&b, &cap, nb + 1, sizeof(*b)) != 0)
                goto out;
            b[nb++] = (struct nsbucket){ ns, 0, 0 };
            k = nb;
            if (ns != NULL && ebb__map_put(&at, ns, NULL, (void *)k, NULL) != 0)
                goto out;
        }
        b[k - 1].n++;
        bucket[i] = (uint32_t)(k - 1);
    }
    /* the buckets by name: the order they were met in goes to a rank */
    if ((rank = malloc(nb * sizeof(*rank))) == NULL)
        goto out;
    for (size_t k = 0; k < nb; k++)
        b[k].off = (uint32_t)k;
    qsort(b, nb, sizeof(*b), cmp_bucket);
    for (size_t k = 0, off = 0; k < nb; k++) {
        rank[b[k].off] = (uint32_t)k;
        b[k].off = (uint32_t)off;
        off += b[k].n;
    }
    for (size_t i = 0; i < n; i++)
        out[b[rank[bucket[i]]].off++] = pods[i];
    rc = 0;
out:
    ebb__map_free(&at);
    free(b);
    free(bucket);
    free(rank);
    return rc;
}

void ebb_topology_result_free(struct ebb_topology_result *r)
{
    if (r == NULL)
        return;
    free(r->evict);
    free(r->skipped);
    free(r->keys);
    free(r->values);
    free(r->max_skews);
    memset(r, 0, sizeof(*r));
}

static void unload(struct ebb_topology *t)
{
    clear_constraints(t);
    t->pods = NULL;
    t->npods = 0;
    t->counted = SIZE_MAX;
    t->indexed = false;
    t->dom.n = 0;
}

int ebb_topology_plan(struct ebb_topology *t, struct ebb_pod *const *pods, size_t npods,
                      struct ebb_topology_result *out)
{
    struct ebb_pod **byns = NULL;
    uint32_t *idx = NULL;
    int rc = EBB_ENOMEM;
    size_t s, e;

    if (t == NULL || out == NULL || (pods == NULL && npods > 0))
        return EBB_EINVAL;
    memset(out, 0, sizeof(*out));
    if (npods == 0)
        return 0;
    if ((byns = malloc(npods * sizeof(*byns))) == NULL || (idx = malloc(npods * sizeof(*idx))) == NULL ||
        (out->evict = malloc(npods * sizeof(*out->evict))) == NULL ||
        (out->skipped = malloc(npods * sizeof(*out->skipped))) == NULL ||
        (out->keys = malloc(npods * sizeof(*out->keys))) == NULL ||
        (out->values = malloc(npods * sizeof(*out->values))) == NULL ||
        (out->max_skews = malloc(npods * sizeof(*out->max_skews))) == NULL)
        goto fail;
    if ((rc = ebb_topology_by_namespace(pods, npods, byns)) != 0)
        goto fail;
    /* namespaces in name order (upstream ranges over a map) */
    for (s = 0; s < npods; s = e) {
        size_t n;
        for (e = s + 1; e < npods && byns[e]->ns == byns[s]->ns; e++)
            ;
        if ((rc = ebb_topology_load(t, byns + s, e - s)) != 0)
            goto fail;
        for (size_t ci = 0; ci < t->ncons; ci++) {
            const struct ebb_topo_domains *d;
            if ((rc = ebb_topology_count(t, ci, &d)) != 0)
                goto fail;
            if (ebb_topology_is_balanced(d, t->cons[ci].max_skew))
                continue;
            if ((rc = ebb_topology_balance(t, ci)) != 0)
                goto fail;
        }
        n = ebb_topology_marked(t, false, idx);
        for (size_t k = 0; k < n; k++) {
            size_t o = out->nevict++;
            out->evict[o] = t->pods[idx[k]];
            ebb_topology_mark_reason(t, idx[k], &out->keys[o], &out->values[o], &out->max_skews[o]);
        }
        n = ebb_topology_marked(t, true, idx);
        for (size_t k = 0; k < n; k++)
            out->skipped[out->nskipped++] = t->pods[idx[k]];
    }
    unload(t);
    free(byns);
    free(idx);
    return 0;
fail:
    unload(t);
    free(byns);
    free(idx);
    ebb_topology_result_free(out);
    return rc;
}
