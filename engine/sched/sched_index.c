/* The scheduler model's indexes (see sched_int.h): the bound pods it
 * counts, postings of their labels, the existing pods' affinity terms
 * grouped into classes, and one column of domains per topology key. Lists
 * are append-only; a pod that leaves is marked, and the lists drop it when
 * they are next read. */
#include <stdlib.h>
#include <string.h>

#include "ebb/affinity.h"
#include "ebb/selector.h"
#include "sched/sched_int.h"
#include "base/vec.h"

/* ---- lists ---------------------------------------------------------------- */

/* Read the live pods of a list; compacts it when half of it is gone. */
static void spod_list_each(struct ebb_sched *s, struct ebb_idlist *l, bool (*fn)(struct ebb_sched *,
                           uint32_t, void *), void *ud)
{
    uint32_t dead = 0;

    for (uint32_t i = 0; i < l->n; i++) {
        uint32_t id = l->v[i];
        if (s->spods[id].pod == NULL) {
            dead++;
            continue;
        }
        if (!fn(s, id, ud))
            break;
    }
    if (dead * 2 > l->n) {
        uint32_t k = 0;
        for (uint32_t i = 0; i < l->n; i++)
            if (s->spods[l->v[i]].pod != NULL)
                l->v[k++] = l->v[i];
        l->n = k;
    }
}

static uint32_t list_len(const struct ebb_map *m, ebb_str a, ebb_str b)
{
    const struct ebb_idlist *l = ebb__map_get(m, a, b);
    return l ? l->n : 0;
}

/* ---- namespaces ----------------------------------------------------------- */

static const struct ebb_labels no_labels = { 0, NULL };

const struct ebb_labels *ebb__sched_ns_labels(const struct ebb_sched *s, ebb_str ns)
{
    const struct ebb_namespace *n = ns ? ebb_cache_namespace(s->cache, ns) : NULL;
    return n ? &n->labels : &no_labels;
}

/* ---- compiled terms ------------------------------------------------------- */

void ebb__cterm_clear(struct cterm *t)
{
    if (t == NULL)
        return;
    ebb_str_release(t->key);
    ebb_str_release(t->own_ns);
    for (uint16_t i = 0; i < t->nns; i++)
        ebb_str_release(t->ns[i]);
    free(t->ns);
    ebb_selector_free(t->ns_sel);
    ebb_selector_free(t->sel);
    memset(t, 0, sizeof(*t));
}

/* Add "key In (v)" or "key NotIn (v)" for each of keys present on the pod. */
static int merge_keys(struct ebb_selector *sel, const ebb_str *keys, uint16_t n, uint8_t op,
                      const struct ebb_pod *owner)
{
    for (uint16_t i = 0; i < n; i++) {
        ebb_str v;
        struct ebb_req *r;
        if (!ebb_labels_lookup(&owner->labels, keys[i], &v))
            continue;
        if ((r = realloc(sel->reqs, (sel->nreqs + 1u) * sizeof(*r))) == NULL)
            return EBB_ENOMEM;
        sel->reqs = r;
        r = &sel->reqs[sel->nreqs];
        memset(r, 0, sizeof(*r));
        if ((r->values = malloc(sizeof(*r->values))) == NULL)
            return EBB_ENOMEM;
        r->key = ebb_str_ref(keys[i]);
        r->op = op;
        r->values[0] = ebb_str_ref(v);
        r->nvalues = 1;
        sel->nreqs++;
    }
    return 0;
}

int ebb__cterm_compile(struct ebb_sched *s, const struct ebb_pod *owner,
                       const struct ebb_pod_term *t, int32_t weight, struct cterm *out)
{
    (void)s;
    memset(out, 0, sizeof(*out));
    out->weight = weight;
    out->key = ebb_str_ref(t->topology_key);
    if (t->nnamespaces == 0 && t->ns_selector == NULL) {
        out->own_ns = ebb_str_ref(owner->ns);
    } else if (t->nnamespaces > 0) {
        if ((out->ns = malloc(t->nnamespaces * sizeof(*out->ns))) == NULL)
            goto fail;
        for (; out->nns < t->nnamespaces; out->nns++)
            out->ns[out->nns] = ebb_str_ref(t->namespaces[out->nns]);
    }
    if (t->ns_selector != NULL && (out->ns_sel = ebb_selector_dup(t->ns_selector)) == NULL)
        goto fail;
    out->sel = t->selector ? ebb_selector_dup(t->selector) : ebb_selector_nothing();
    if (out->sel == NULL)
        goto fail;
    if (!(out->sel->flags & EBB_SEL_NOTHING) &&
        (merge_keys(out->sel, t->match_keys, t->nmatch_keys, EBB_OP_IN, owner) != 0 ||
         merge_keys(out->sel, t->mismatch_keys, t->nmismatch_keys, EBB_OP_NOT_IN, owner) != 0))
        goto fail;
    return 0;
fail:
    ebb__cterm_clear(out);
    return EBB_ENOMEM;
}

bool ebb__cterm_has_ns(const struct ebb_sched *s, const struct cterm *t, ebb_str ns)
{
    if (t->own_ns != NULL)
        return ns == t->own_ns;
    for (uint16_t i = 0; i < t->nns; i++)
        if (t->ns[i] == ns)
            return true;
    return t->ns_sel != NULL && ebb_selector_matches(t->ns_sel, ebb__sched_ns_labels(s, ns));
}

bool ebb__cterm_matches(const struct cterm *t, ebb_str ns, const struct ebb_labels *labels,
                        const struct ebb_labels *nsl)
{
    bool in = false;

    if (t->own_ns != NULL) {
        in = ns == t->own_ns;
    } else {
        for (uint16_t i = 0; i < t->nns && !in; i++)
            in = t->ns[i] == ns;
        if (!in && t->ns_sel != NULL)
            in = ebb_selector_matches(t->ns_sel, nsl ? nsl : &no_labels);
    }
    return in && ebb_selector_matches(t->sel, labels);
}

/* ---- columns --------------------------------------------------------------- */

struct keycol *ebb__sched_col(struct ebb_sched *s, ebb_str key)
{
    struct keycol *c, **v;
    struct ebb_map ids;

    for (size_t i = 0; i < s->ncols; i++)
        if (s->cols[i]->key == key)
            return s->cols[i];
    if ((v = realloc(s->cols, (s->ncols + 1) * sizeof(*v))) == NULL)
        return NULL;
    s->cols = v;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return NULL;
    c->key = ebb_str_ref(key);
    c->hostname = key == s->hostname_key;
    c->dom = malloc((s->nnodes + 1) * sizeof(*c->dom));
    c->values = malloc((s->nnodes + 1) * sizeof(*c->values));
    if (c->dom == NULL || c->values == NULL)
        goto fail;
    ebb__map_init(&ids);
    for (uint32_t i = 0; i < s->nnodes; i++) {
        ebb_str val;
        void *id;
        c->dom[i] = -1;
        if (key == NULL || !ebb_labels_lookup(&s->nodes[i].node->labels, key, &val))
            continue;
        if ((id = ebb__map_get(&ids, val, NULL)) == NULL) {
            c->values[c->ndom] = val;
            id = (void *)(uintptr_t)++c->ndom;
            if (ebb__map_put(&ids, val, NULL, id, NULL) != 0) {
                ebb__map_free(&ids);
                goto fail;
            }
        }
        c->dom[i] = (int32_t)((uintptr_t)id - 1);
    }
    ebb__map_free(&ids);
    s->cols[s->ncols++] = c;
    return c;
fail:
    ebb_str_release(c->key);
    free(c->dom);
    free(c->values);
    free(c);
    return NULL;
}

/* ---- term classes ------------------------------------------------------------ */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ull;
}

static uint64_t sel_hash(uint64_t h, const struct ebb_selector *sel)
{
    if (sel == NULL)
        return mix(h, 1);
    h = mix(h, sel->flags);
    for (uint16_t i = 0; i < sel->nreqs; i++) {
        const struct ebb_req *r = &sel->reqs[i];
        h = mix(mix(h, (uintptr_t)r->key), r->op);
        for (uint16_t k = 0; k < r->nvalues; k++)
            h = mix(h, (uintptr_t)r->values[k]);
    }
    return h;
}

static uint64_t cterm_hash(uint8_t kind, const struct cterm *t)
{
    uint64_t h = mix(mix(mix(kind, (uint64_t)(int64_t)t->weight), (uintptr_t)t->key),
                     (uintptr_t)t->own_ns);
    for (uint16_t i = 0; i < t->nns; i++)
        h = mix(h, (uintptr_t)t->ns[i]);
    return sel_hash(sel_hash(h, t->ns_sel), t->sel);
}

static bool sel_equal(const struct ebb_selector *a, const struct ebb_selector *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    if (a->flags != b->flags || a->nreqs != b->nreqs)
        return false;
    for (uint16_t i = 0; i < a->nreqs; i++)
        if (!ebb_req_equal(&a->reqs[i], &b->reqs[i]))
            return false;
    return true;
}

static bool cterm_equal(const struct cterm *a, const struct cterm *b)
{
    if (a->key != b->key || a->own_ns != b->own_ns || a->nns != b->nns || a->weight != b->weight)
        return false;
    for (uint16_t i = 0; i < a->nns; i++)
        if (a->ns[i] != b->ns[i])
            return false;
    return sel_equal(a->ns_sel, b->ns_sel) && sel_equal(a->sel, b->sel);
}

static void class_free(struct tclass *c)
{
    if (c == NULL)
        return;
    ebb__cterm_clear(&c->t);
    free(c->members.v);
    free(c);
}

static int buckets_grow(struct ebb_sched *s)
{
    uint32_t n = s->class_bucket_n ? s->class_bucket_n * 2 : 256;
    uint32_t *b = calloc(n, sizeof(*b));

    if (b == NULL)
        return EBB_ENOMEM;
    free(s->class_bucket);
    s->class_bucket = b;
    s->class_bucket_n = n;
    for (size_t i = 0; i < s->nclasses; i++) {
        uint32_t h = (uint32_t)(s->classes[i]->hash & (n - 1));
        s->class_next[i] = b[h];
        b[h] = (uint32_t)i + 1;
    }
    return 0;
}

/* The class of a term (its compiled form moves into a new class, or is
 * cleared when an equal one exists); NULL when out of memory. */
static struct tclass *class_for(struct ebb_sched *s, uint8_t kind, struct cterm *t)
{
    uint64_t h = cterm_hash(kind, t);
    struct tclass *c;
    uint32_t at;

    if (s->class_bucket_n) {
        for (at = s->class_bucket[h & (s->class_bucket_n - 1)]; at != 0; at = s->class_next[at - 1]) {
            c = s->classes[at - 1];
            if (c->hash == h && c->kind == kind && cterm_equal(&c->t, t)) {
                ebb__cterm_clear(t);
                return c;
            }
        }
    }
    if (s->nclasses + 1 > s->cap_classes) {
        /* parallel arrays: each grows from a copy of the one capacity */
        size_t cap = s->cap_classes, cap_next = s->cap_classes;
        if (ebb__reserve(s->classes, cap, s->nclasses + 1) != 0 ||
            ebb__reserve(s->class_next, cap_next, s->nclasses + 1) != 0)
            return NULL;
        s->cap_classes = cap;
    }
    if ((s->nclasses + 1) * 2 > s->class_bucket_n && buckets_grow(s) != 0)
        return NULL;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return NULL;
    c->kind = kind;
    c->hash = h;
    c->t = *t;
    memset(t, 0, sizeof(*t));
    if (c->t.key != NULL && (c->col = ebb__sched_col(s, c->t.key)) == NULL) {
        class_free(c);
        return NULL;
    }
    /* anchored at every value of its first In requirement: a pod matches
     * only if it carries one of them */
    const struct ebb_req *in = NULL;
    for (uint16_t i = 0; i < c->t.sel->nreqs && in == NULL; i++)
        if (c->t.sel->reqs[i].op == EBB_OP_IN)
            in = &c->t.sel->reqs[i];
    uint32_t id = (uint32_t)s->nclasses;
    if (in != NULL) {
        for (uint16_t k = 0; k < in->nvalues; k++) {
            struct ebb_idlist *l = ebb__idlist_at(&s->class_anchor, in->key, in->values[k], NULL);
            if (l == NULL || ebb__vec_push(l, id) != 0) {
                class_free(c);
                return NULL;
            }
        }
    } else if (ebb__vec_push(&s->class_free, id) != 0) {
        class_free(c);
        return NULL;
    }
    s->classes[s->nclasses] = c;
    at = (uint32_t)(h & (s->class_bucket_n - 1));
    s->class_next[s->nclasses] = s->class_bucket[at];
    s->class_bucket[at] = id + 1;
    s->nclasses++;
    return c;
}

/* ---- classes remembered while the model is built -------------------------- */

struct memo_ent {
    const struct ebb_affinity *aff;  /* NULL: an empty slot */
    const struct ebb_kv *kv;
    ebb_str ns;
    uint32_t n;
    struct tclass **v;               /* the classes the first pod joined, in order */
};

struct termmemo {
    size_t cap, n;
    struct memo_ent *e;
};

int ebb__sched_memo_begin(struct ebb_sched *s)
{
    return (s->memo = calloc(1, sizeof(*s->memo))) == NULL ? EBB_ENOMEM : 0;
}

void ebb__sched_memo_end(struct ebb_sched *s)
{
    struct termmemo *m = s->memo;

    if (m == NULL)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->e[i].v);
    free(m->e);
    free(m);
    s->memo = NULL;
}

static size_t memo_hash(const void *aff, const void *kv, ebb_str ns)
{
    uint64_t h = ((uintptr_t)aff * 0x9e3779b97f4a7c15ull) ^ ((uintptr_t)kv * 0xff51afd7ed558ccdull) ^ (uintptr_t)ns;
    return (size_t)(h ^ (h >> 29));
}

static int memo_grow(struct termmemo *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    struct memo_ent *e = calloc(cap, sizeof(*e));

    if (e == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->e[i].aff == NULL)
            continue;
        size_t j = memo_hash(m->e[i].aff, m->e[i].kv, m->e[i].ns) & (cap - 1);
        while (e[j].aff != NULL)
            j = (j + 1) & (cap - 1);
        e[j] = m->e[i];
    }
    free(m->e);
    m->e = e;
    m->cap = cap;
    return 0;
}

/* p's entry (aff set), or the empty slot to fill for it; NULL when out of
 * memory. */
static struct memo_ent *memo_at(struct termmemo *m, const struct ebb_pod *p)
{
    size_t i;

    if ((m->n + 1) * 2 > m->cap && memo_grow(m) != 0)
        return NULL;
    i = memo_hash(p->affinity, p->labels.kv, p->ns) & (m->cap - 1);
    while (m->e[i].aff != NULL &&
           (m->e[i].aff != p->affinity || m->e[i].kv != p->labels.kv || m->e[i].ns != p->ns))
        i = (i + 1) & (m->cap - 1);
    return &m->e[i];
}

struct joined {
    struct tclass **v;
    size_t n, cap;
};

static int add_terms(struct ebb_sched *s, const struct ebb_pod *p, uint32_t id, uint8_t kind,
                     const struct ebb_pod_term *terms, const struct ebb_weighted_pod_term *wterms,
                     uint16_t n, struct joined *joined)
{
    for (uint16_t i = 0; i < n; i++) {
        const struct ebb_pod_term *t = terms ? &terms[i] : &wterms[i].term;
        struct cterm ct;
        struct tclass *c;
        if (t->selector != NULL && (t->selector->flags & EBB_SEL_NOTHING))
            continue;   /* selects no pod: no class needed */
        if (ebb__cterm_compile(s, p, t, terms ? 0 : wterms[i].weight, &ct) != 0)
            return EBB_ENOMEM;
        if ((c = class_for(s, kind, &ct)) == NULL) {
            ebb__cterm_clear(&ct);
            return EBB_ENOMEM;
        }
        if (ebb__vec_push(&c->members, id) != 0 || (joined != NULL && ebb__vec_push(joined, c) != 0))
            return EBB_ENOMEM;
    }
    return 0;
}

void ebb__sched_classes_for(struct ebb_sched *s, const struct ebb_labels *l, ebb__class_fn fn,
                            void *ud)
{
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ebb_idlist *cl = ebb__map_get(&s->class_anchor, l->kv[i].key, l->kv[i].value);
        for (uint32_t k = 0; cl != NULL && k < cl->n; k++)
            fn(s, s->classes[cl->v[k]], ud);
    }
    for (uint32_t k = 0; k < s->class_free.n; k++)
        fn(s, s->classes[s->class_free.v[k]], ud);
}

void ebb__class_members(struct ebb_sched *s, struct tclass *c, ebb__spod_fn fn, void *ud)
{
    spod_list_each(s, &c->members, fn, ud);
}

/* ---- pods ---------------------------------------------------------------------- */

int ebb__sched_index_add(struct ebb_sched *s, const struct ebb_pod *p, uint32_t node)
{
    uint32_t id;
    struct ebb_idlist *l;
    int rc;

    if (s->nspods == s->cap_spods) {
        size_t cap = s->cap_spods;
        if ((rc = ebb__grow((void **)&s->spods, &cap, s->nspods + 1, sizeof(*s->spods))) != 0)
            return rc;
        s->cap_spods = (uint32_t)cap;
    }
    id = s->nspods;
    s->spods[id] = (struct spod){ p, p->ns, p->labels, node, p->slot, p->serial,
                                  (p->flags & EBB_POD_TERMINATING) != 0 };
    for (uint32_t i = 0; i < p->labels.n; i++) {
        if (ebb__map_get(&s->indexed, p->labels.kv[i].key, NULL) == NULL)
            continue;   /* no selector asked for this key yet */
        if ((l = ebb__idlist_at(&s->postings, p->labels.kv[i].key, p->labels.kv[i].value, NULL)) == NULL ||
            ebb__vec_push(l, id) != 0)
            return EBB_ENOMEM;
    }
    if ((l = ebb__idlist_at(&s->by_ns, p->ns, NULL, NULL)) == NULL || ebb__vec_push(l, id) != 0)
        return EBB_ENOMEM;
    s->nspods++;   /* from here the lists refer to it */
    if (p->affinity != NULL) {
        const struct ebb_affinity *a = p->affinity;
        struct memo_ent *me = s->memo != NULL ? memo_at(s->memo, p) : NULL;
        struct joined j = { 0 };
        if (me != NULL && me->aff != NULL) {
            for (uint32_t k = 0; k < me->n; k++)
                if (ebb__vec_push(&me->v[k]->members, id) != 0)
                    return EBB_ENOMEM;
            return 0;
        }
        if ((rc = add_terms(s, p, id, TC_REQ_AFF, a->aff_required, NULL, a->naff_required, me ? &j : NULL)) != 0 ||
            (rc = add_terms(s, p, id, TC_REQ_ANTI, a->anti_required, NULL, a->nanti_required, me ? &j : NULL)) != 0 ||
            (rc = add_terms(s, p, id, TC_PREF_AFF, NULL, a->aff_preferred, a->naff_preferred, me ? &j : NULL)) != 0 ||
            (rc = add_terms(s, p, id, TC_PREF_ANTI, NULL, a->anti_preferred, a->nanti_preferred, me ? &j : NULL)) !=
                0) {
            free(j.v);
            return rc;
        }
        if (me != NULL) {
            *me = (struct memo_ent){ a, p->labels.kv, p->ns, (uint32_t)j.n, j.v };
            s->memo->n++;
        }
    }
    return 0;
}

void ebb__sched_index_remove(struct ebb_sched *s, uint32_t id)
{
    s->spods[id].pod = NULL;
}

/* ---- candidates of a selector ---------------------------------------------------- */

/* Postings of a label key are made the first time a selector reads the
 * key: keys no selector names (versions, hashes, pod names) cost nothing. */
static int index_key(struct ebb_sched *s, ebb_str key)
{
    if (ebb__map_get(&s->indexed, key, NULL) != NULL)
        return 0;
    if (ebb__map_put(&s->indexed, key, NULL, (void *)1, NULL) != 0)
        return EBB_ENOMEM;
    for (uint32_t id = 0; id < s->nspods; id++) {
        const struct spod *sp = &s->spods[id];
        ebb_str v;
        struct ebb_idlist *l;
        if (sp->pod == NULL || !ebb_labels_lookup(&sp->labels, key, &v))
            continue;
        if ((l = ebb__idlist_at(&s->postings, key, v, NULL)) == NULL || ebb__vec_push(l, id) != 0) {
            ebb__map_del(&s->indexed, key, NULL);
            return EBB_ENOMEM;
        }
    }
    return 0;
}

struct cand_ctx {
    const struct ebb_selector *sel;
    const struct ebb_req *known;     /* the requirement the list read holds for */
    ebb_str ns;
    const struct cterm *ns_term;
    ebb__spod_fn fn;
    void *ud;
    bool stop;
};

static bool cand_one(struct ebb_sched *s, uint32_t id, void *ud)
{
    struct cand_ctx *cx = ud;
    const struct spod *sp = &s->spods[id];

    if (cx->ns_term ? !ebb__cterm_has_ns(s, cx->ns_term, sp->ns) : sp->ns != cx->ns)
        return true;
    for (uint16_t i = 0; i < cx->sel->nreqs; i++)
        if (&cx->sel->reqs[i] != cx->known && !ebb_req_matches(&cx->sel->reqs[i], &sp->labels))
            return true;
    if (!cx->fn(s, id, cx->ud))
        cx->stop = true;
    return !cx->stop;
}

void ebb__sched_candidates(struct ebb_sched *s, const struct ebb_selector *sel, ebb_str ns,
                           const struct cterm *ns_term, ebb__spod_fn fn, void *ud)
{
    struct cand_ctx cx = { sel, NULL, ns, ns_term, fn, ud, false };
    const struct ebb_req *best = NULL;
    uint64_t best_n = UINT64_MAX, ns_n = UINT64_MAX;

    if (sel == NULL || (sel->flags & EBB_SEL_NOTHING))
        return;
    for (uint16_t i = 0; i < sel->nreqs; i++) {
        const struct ebb_req *r = &sel->reqs[i];
        uint64_t n = 0;
        if (r->op != EBB_OP_IN || index_key(s, r->key) != 0)
            continue;
        for (uint16_t k = 0; k < r->nvalues; k++)
            n += list_len(&s->postings, r->key, r->values[k]);
        if (n < best_n) {
            best_n = n;
            best = r;
        }
    }
    if (ns_term == NULL) {
        ns_n = list_len(&s->by_ns, ns, NULL);
    } else if (ns_term->own_ns != NULL) {
        ns_n = list_len(&s->by_ns, ns_term->own_ns, NULL);
    } else if (ns_term->ns_sel == NULL) {
        ns_n = 0;
        for (uint16_t i = 0; i < ns_term->nns; i++)
            ns_n += list_len(&s->by_ns, ns_term->ns[i], NULL);
    }
    if (best != NULL && best_n <= ns_n) {
        cx.known = best;   /* every pod of its postings meets it */
        for (uint16_t k = 0; k < best->nvalues && !cx.stop; k++) {
            struct ebb_idlist *l = ebb__map_get(&s->postings, best->key, best->values[k]);
            if (l != NULL)
                spod_list_each(s, l, cand_one, &cx);
        }
        return;
    }
    if (ns_term == NULL || ns_term->own_ns != NULL) {
        struct ebb_idlist *l = ebb__map_get(&s->by_ns, ns_term ? ns_term->own_ns : ns, NULL);
        if (l != NULL)
            spod_list_each(s, l, cand_one, &cx);
        return;
    }
    if (ns_term->ns_sel == NULL) {
        for (uint16_t i = 0; i < ns_term->nns && !cx.stop; i++) {
            struct ebb_idlist *l = ebb__map_get(&s->by_ns, ns_term->ns[i], NULL);
            /* a namespace listed twice is read once */
            bool seen = false;
            for (uint16_t k = 0; k < i; k++)
                seen |= ns_term->ns[k] == ns_term->ns[i];
            if (l != NULL && !seen)
                spod_list_each(s, l, cand_one, &cx);
        }
        return;
    }
    for (size_t i = 0; i < s->by_ns.cap && !cx.stop; i++)
        if (ebb__map_live(&s->by_ns, i))
            spod_list_each(s, s->by_ns.s[i].v, cand_one, &cx);
}

/* ---- life -------------------------------------------------------------------------- */

int ebb__sched_index_init(struct ebb_sched *s)
{
    ebb__map_init(&s->postings);
    ebb__map_init(&s->by_ns);
    ebb__map_init(&s->class_anchor);
    ebb__map_init(&s->indexed);
    return 0;
}

void ebb__sched_index_free(struct ebb_sched *s)
{
    ebb__idlists_free(&s->postings);
    ebb__idlists_free(&s->by_ns);
    ebb__idlists_free(&s->class_anchor);
    ebb__map_free(&s->indexed);
    free(s->class_free.v);
    for (size_t i = 0; i < s->nclasses; i++)
        class_free(s->classes[i]);
    free(s->classes);
    free(s->class_next);
    free(s->class_bucket);
    for (size_t i = 0; i < s->ncols; i++) {
        ebb_str_release(s->cols[i]->key);
        free(s->cols[i]->dom);
        free(s->cols[i]->values);
        free(s->cols[i]);
    }
    free(s->cols);
    free(s->spods);
}
