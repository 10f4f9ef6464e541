/* The resource-name registry, sparse resource lists, label maps and the
 * destructors of every cached object (see ebb/model.h).
 *
 * Destructors that take a pointer to a heap object (pod, node, selector,
 * affinity...) free the object itself; the ones for embedded values
 * (ebb_res, ebb_labels, ebb_req, terms) release what the value holds and
 * leave it empty, so a second call is harmless. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "ebb/affinity.h"
#include "ebb/model.h"
#include "ebb/selector.h"
#include "ebb/share.h"

/* ---- resources --------------------------------------------------------- */

/* Process-wide and never shrinking: ids are baked into every ebb_res and
 * into requested_mask bits, so a name keeps its id for the process's life.
 * The copies stay reachable from this table until exit. */
static const char *fixed_names[EBB_RES_FIXED] = {
    "cpu", "memory", "pods", "ephemeral-storage", "<unregistered>",
};
static char *extra_names[EBB_RES_MAX];
static int nresources = EBB_RES_FIXED;

const char *ebb_resource_name(int id)
{
    if (id < 0 || id >= nresources)
        return NULL;
    return id < EBB_RES_FIXED ? fixed_names[id] : extra_names[id];
}

int ebb_resource_find(const char *name)
{
    if (name == NULL)
        return -1;
    for (int id = 0; id < nresources; id++)
        if (strcmp(ebb_resource_name(id), name) == 0)
            return id;
    return -1;
}

/* Names registered by objects and by everything else (the policy, the
 * scheduler configuration, scripts) count apart, each against its own
 * share, so neither can take the other's ids. */
static int nobjects, nothers, nscripts;

static int resource_add(const char *name)
{
    char *copy;

    if (nresources >= EBB_RES_MAX || (copy = strdup(name)) == NULL)
        return -1;
    extra_names[nresources] = copy;
    return nresources++;
}

int ebb_resource_id(const char *name)
{
    int id = ebb_resource_find(name);

    if (id >= 0 || name == NULL || nothers >= EBB_RES_MAX - EBB_RES_OBJECTS_MAX)
        return id;
    if ((id = resource_add(name)) >= 0)
        nothers++;
    return id;
}

int ebb_resource_script(const char *name)
{
    int id = ebb_resource_find(name);

    if (id >= 0 || name == NULL || nscripts >= EBB_RES_SCRIPTS_MAX)
        return id;
    if ((id = ebb_resource_id(name)) >= 0)
        nscripts++;
    return id;
}

/* The bounds that keep one object (anyone who may create a pod) from
 * filling the table for everyone: see ebb/model.h. */
int ebb_resource_admit(const char *name, int *budget)
{
    int id = ebb_resource_find(name);

    if (id >= 0 || name == NULL || budget == NULL || *budget <= 0 ||
        nobjects >= EBB_RES_OBJECTS_MAX - EBB_RES_FIXED)
        return id;
    if ((id = resource_add(name)) >= 0) {
        nobjects++;
        (*budget)--;
    }
    return id;
}

int ebb_resource_count(void)
{
    return nresources;
}

/* The flat arrays a pod holds, by kind (ebb/share.h): an element's size and
 * where its strings are. Each is dropped the same way whether it is shared
 * or private: its strings and memory go with the last holder. */
#define STRS(...) (sizeof((size_t[]){ __VA_ARGS__ }) / sizeof(size_t)), { __VA_ARGS__ }
static const struct flat {
    size_t size;
    size_t nstr;
    size_t str[3];               /* offsets of the element's ebb_str fields */
} flat[] = {
    [EBB_SHARE_KV] = { sizeof(struct ebb_kv), STRS(offsetof(struct ebb_kv, key), offsetof(struct ebb_kv, value)) },
    [EBB_SHARE_OWNERS] = { sizeof(struct ebb_owner), STRS(offsetof(struct ebb_owner, kind),
                                                          offsetof(struct ebb_owner, name),
                                                          offsetof(struct ebb_owner, uid)) },
    [EBB_SHARE_TOLERATIONS] = { sizeof(struct ebb_toleration), STRS(offsetof(struct ebb_toleration, key),
                                                                    offsetof(struct ebb_toleration, value)) },
    [EBB_SHARE_CSTATUS] = { sizeof(struct ebb_cstatus), STRS(offsetof(struct ebb_cstatus, name),
                                                             offsetof(struct ebb_cstatus, reason),
                                                             offsetof(struct ebb_cstatus, last_reason)) },
    [EBB_SHARE_CONDITIONS] = { sizeof(struct ebb_condition), STRS(offsetof(struct ebb_condition, type),
                                                                  offsetof(struct ebb_condition, status),
                                                                  offsetof(struct ebb_condition, reason)) },
    [EBB_SHARE_STRS] = { sizeof(ebb_str), STRS(0) },
    [EBB_SHARE_RQ] = { sizeof(struct ebb_rq), 0, { 0 } },
    [EBB_SHARE_HOST_PORTS] = { sizeof(struct ebb_host_port), STRS(offsetof(struct ebb_host_port, ip),
                                                                  offsetof(struct ebb_host_port, protocol)) },
};
#undef STRS

static void flat_strs(int kind, void *a, size_t n, ebb_str (*each)(ebb_str), void (*drop)(ebb_str))
{
    const struct flat *f = &flat[kind];

    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < f->nstr; j++) {
            ebb_str s = *(ebb_str *)((char *)a + i * f->size + f->str[j]);
            if (each != NULL)
                each(s);
            else
                drop(s);
        }
}

static void drop(int kind, void *a, size_t n)
{
    if (!ebb_share_release(kind, a, n * flat[kind].size))
        return;
    flat_strs(kind, a, n, NULL, ebb_str_release);
    free(a);
}

/* *a, n elements of `kind`, made the caller's own to write: 0 or
 * EBB_ENOMEM (*a unchanged). */
static int own(int kind, void **a, size_t n)
{
    size_t bytes = n * flat[kind].size;
    void *c;

    if (!ebb_share_is(kind, *a, bytes))
        return 0;
    if ((c = malloc(bytes)) == NULL)
        return EBB_ENOMEM;
    memcpy(c, *a, bytes);
    flat_strs(kind, c, n, ebb_str_ref, NULL);
    drop(kind, *a, n);
    *a = c;
    return 0;
}

/* Index of `id` in r->q, or of the slot where it would be inserted. */
static uint16_t res_slot(const struct ebb_res *r, int id)
{
    uint16_t lo = 0, hi = r->n;

    while (lo < hi) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (r->q[mid].id < id)
            lo = (uint16_t)(mid + 1);
        else
            hi = mid;
    }
    return lo;
}

int64_t ebb_res_get(const struct ebb_res *r, int id)
{
    uint16_t i;

    if (r == NULL || r->n == 0)
        return 0;
    i = res_slot(r, id);
    return i < r->n && r->q[i].id == id ? r->q[i].v : 0;
}

bool ebb_res_has(const struct ebb_res *r, int id)
{
    uint16_t i;

    if (r == NULL || r->n == 0)
        return false;
    i = res_slot(r, id);
    return i < r->n && r->q[i].id == id;
}

int ebb_res_set(struct ebb_res *r, int id, int64_t v)
{
    struct ebb_rq *q;
    uint16_t i;

    if (r == NULL || id < 0 || id >= EBB_RES_MAX)
        return EBB_EINVAL;
    if (own(EBB_SHARE_RQ, (void **)&r->q, r->n) != 0)
        return EBB_ENOMEM;   /* held by other objects too: written in a copy */
    i = res_slot(r, id);
    if (i < r->n && r->q[i].id == id) {
        r->q[i].v = v;
        return 0;
    }
    /* Lists are short (a handful of resources): grow one at a time. */
    if ((q = realloc(r->q, ((size_t)r->n + 1) * sizeof(*q))) == NULL)
        return EBB_ENOMEM;
    memmove(q + i + 1, q + i, (size_t)(r->n - i) * sizeof(*q));
    q[i].id = (uint16_t)id;
    q[i].v = v;
    r->q = q;
    r->n++;
    return 0;
}

void ebb_res_free(struct ebb_res *r)
{
    if (r == NULL)
        return;
    drop(EBB_SHARE_RQ, r->q, r->n);
    r->q = NULL;
    r->n = 0;
}

/* ---- labels ------------------------------------------------------------ */

bool ebb_labels_lookup(const struct ebb_labels *l, ebb_str key, ebb_str *val)
{
    if (l == NULL || key == NULL)
        return false;
    /* Interned: the same text is the same pointer, so no strcmp. Label
     * maps are small enough that a scan beats a binary search by text. */
    for (uint32_t i = 0; i < l->n; i++) {
        if (l->kv[i].key == key) {
            *val = l->kv[i].value;
            return true;
        }
    }
    return false;
}

ebb_str ebb_labels_get(const struct ebb_labels *l, ebb_str key)
{
    ebb_str v = NULL;

    return ebb_labels_lookup(l, key, &v) ? v : NULL;
}

ebb_str ebb_labels_getc(const struct ebb_labels *l, const char *key)
{
    if (key == NULL)
        return NULL;
    return ebb_labels_get(l, ebb_str_find(key, strlen(key)));
}

void ebb_labels_free(struct ebb_labels *l)
{
    if (l == NULL)
        return;
    drop(EBB_SHARE_KV, l->kv, l->n);
    l->kv = NULL;
    l->n = 0;
}

/* ---- selectors and requirements ---------------------------------------- */

static void release_strs(ebb_str *v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        ebb_str_release(v[i]);
    free(v);
}

void ebb_req_free(struct ebb_req *r)
{
    if (r == NULL)
        return;
    ebb_str_release(r->key);
    release_strs(r->values, r->nvalues);
    memset(r, 0, sizeof(*r));
}

static void free_reqs(struct ebb_req *reqs, size_t n)
{
    if (reqs == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        ebb_req_free(&reqs[i]);
    free(reqs);
}

void ebb_selector_free(struct ebb_selector *s)
{
    if (s == NULL)
        return;
    free_reqs(s->reqs, s->nreqs);
    free(s);
}

/* ---- affinity ---------------------------------------------------------- */

void ebb_node_term_clear(struct ebb_node_term *t)
{
    if (t == NULL)
        return;
    free_reqs(t->exprs, t->nexprs);
    free_reqs(t->fields, t->nfields);
    memset(t, 0, sizeof(*t));
}

void ebb_pod_term_clear(struct ebb_pod_term *t)
{
    if (t == NULL)
        return;
    ebb_selector_free(t->selector);
    release_strs(t->namespaces, t->nnamespaces);
    ebb_selector_free(t->ns_selector);
    ebb_str_release(t->topology_key);
    release_strs(t->match_keys, t->nmatch_keys);
    release_strs(t->mismatch_keys, t->nmismatch_keys);
    memset(t, 0, sizeof(*t));
}

static void free_pod_terms(struct ebb_pod_term *t, size_t n)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        ebb_pod_term_clear(&t[i]);
    free(t);
}

static void free_weighted_terms(struct ebb_weighted_pod_term *t, size_t n)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        ebb_pod_term_clear(&t[i].term);
    free(t);
}

void ebb_affinity_free(struct ebb_affinity *a)
{
    if (a == NULL)
        return;
    if (a->required != NULL) {
        for (uint16_t i = 0; i < a->nrequired; i++)
            ebb_node_term_clear(&a->required[i]);
        free(a->required);
    }
    if (a->preferred != NULL) {
        for (uint16_t i = 0; i < a->npreferred; i++)
            ebb_node_term_clear(&a->preferred[i].term);
        free(a->preferred);
    }
    free_pod_terms(a->aff_required, a->naff_required);
    free_weighted_terms(a->aff_preferred, a->naff_preferred);
    free_pod_terms(a->anti_required, a->nanti_required);
    free_weighted_terms(a->anti_preferred, a->nanti_preferred);
    free(a);
}

/* ---- pods and nodes ---------------------------------------------------- */

static void tsc_clear(struct ebb_tsc *t)
{
    ebb_str_release(t->topology_key);
    ebb_selector_free(t->selector);
    release_strs(t->match_keys, t->nmatch_keys);
}

/* ---- affinity and spread constraints compared by content ------------------
 * (ebb/share.h's deep kinds). Interned strings compare by pointer; In and
 * NotIn values are sorted by pointer, so equal sets are equal arrays. A
 * node term's `validity` is a note of the matcher's, not content. */

static uint64_t mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

static uint64_t strs_hash(uint64_t h, const ebb_str *v, size_t n)
{
    h = mix(h, n);
    for (size_t i = 0; i < n; i++)
        h = mix(h, (uintptr_t)v[i]);
    return h;
}

static bool strs_same(const ebb_str *a, const ebb_str *b, size_t n)
{
    return n == 0 || memcmp(a, b, n * sizeof(*a)) == 0;
}

static uint64_t reqs_hash(uint64_t h, const struct ebb_req *r, size_t n)
{
    h = mix(h, n);
    for (size_t i = 0; i < n; i++) {
        h = mix(mix(mix(h, (uintptr_t)r[i].key), r[i].op), (uint64_t)r[i].num);
        h = strs_hash(h, r[i].values, r[i].nvalues);
    }
    return h;
}

static bool reqs_same(const struct ebb_req *a, const struct ebb_req *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!ebb_req_equal(&a[i], &b[i]))
            return false;
    return true;
}

static uint64_t sel_hash(uint64_t h, const struct ebb_selector *s)
{
    if (s == NULL)
        return mix(h, 0x5e1);
    return reqs_hash(mix(h, s->flags), s->reqs, s->nreqs);
}

static bool sel_same(const struct ebb_selector *a, const struct ebb_selector *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return a->flags == b->flags && a->nreqs == b->nreqs && reqs_same(a->reqs, b->reqs, a->nreqs);
}

static uint64_t node_term_hash(uint64_t h, const struct ebb_node_term *t)
{
    return reqs_hash(reqs_hash(h, t->exprs, t->nexprs), t->fields, t->nfields);
}

static uint64_t pod_term_hash(uint64_t h, const struct ebb_pod_term *t)
{
    h = strs_hash(sel_hash(h, t->selector), t->namespaces, t->nnamespaces);
    h = mix(sel_hash(h, t->ns_selector), (uintptr_t)t->topology_key);
    return strs_hash(strs_hash(h, t->match_keys, t->nmatch_keys), t->mismatch_keys, t->nmismatch_keys);
}

static bool pod_term_same(const struct ebb_pod_term *a, const struct ebb_pod_term *b)
{
    return sel_same(a->selector, b->selector) && a->nnamespaces == b->nnamespaces &&
           strs_same(a->namespaces, b->namespaces, a->nnamespaces) && sel_same(a->ns_selector, b->ns_selector) &&
           a->topology_key == b->topology_key && a->nmatch_keys == b->nmatch_keys &&
           strs_same(a->match_keys, b->match_keys, a->nmatch_keys) && a->nmismatch_keys == b->nmismatch_keys &&
           strs_same(a->mismatch_keys, b->mismatch_keys, a->nmismatch_keys);
}

static uint64_t pod_terms_hash(uint64_t h, const struct ebb_pod_term *t, size_t n)
{
    h = mix(h, n);
    for (size_t i = 0; i < n; i++)
        h = pod_term_hash(h, &t[i]);
    return h;
}

static uint64_t weighted_hash(uint64_t h, const struct ebb_weighted_pod_term *t, size_t n)
{
    h = mix(h, n);
    for (size_t i = 0; i < n; i++)
        h = pod_term_hash(mix(h, (uint64_t)t[i].weight), &t[i].term);
    return h;
}

static bool pod_terms_same(const struct ebb_pod_term *a, const struct ebb_pod_term *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!pod_term_same(&a[i], &b[i]))
            return false;
    return true;
}

static bool weighted_same(const struct ebb_weighted_pod_term *a, const struct ebb_weighted_pod_term *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].weight != b[i].weight || !pod_term_same(&a[i].term, &b[i].term))
            return false;
    return true;
}

static uint32_t affinity_hash(const struct ebb_affinity *a)
{
    uint64_t h = mix(0xaff, ((uint64_t)a->has_required << 32) | a->nrequired);

    for (uint16_t i = 0; i < a->nrequired; i++)
        h = node_term_hash(h, &a->required[i]);
    h = mix(h, a->npreferred);
    for (uint16_t i = 0; i < a->npreferred; i++)
        h = node_term_hash(mix(h, (uint64_t)a->preferred[i].weight), &a->preferred[i].term);
    h = pod_terms_hash(h, a->aff_required, a->naff_required);
    h = weighted_hash(h, a->aff_preferred, a->naff_preferred);
    h = pod_terms_hash(h, a->anti_required, a->nanti_required);
    h = weighted_hash(h, a->anti_preferred, a->nanti_preferred);
    return (uint32_t)(h ^ (h >> 29));
}

static bool affinity_same(const void *x, const void *y, size_t n)
{
    const struct ebb_affinity *a = x, *b = y;

    (void)n;   /* one */
    if (a->has_required != b->has_required || a->nrequired != b->nrequired || a->npreferred != b->npreferred ||
        a->naff_required != b->naff_required || a->naff_preferred != b->naff_preferred ||
        a->nanti_required != b->nanti_required || a->nanti_preferred != b->nanti_preferred)
        return false;
    for (uint16_t i = 0; i < a->nrequired; i++)
        if (!ebb_node_term_equal(&a->required[i], &b->required[i]))
            return false;
    for (uint16_t i = 0; i < a->npreferred; i++)
        if (a->preferred[i].weight != b->preferred[i].weight ||
            !ebb_node_term_equal(&a->preferred[i].term, &b->preferred[i].term))
            return false;
    return pod_terms_same(a->aff_required, b->aff_required, a->naff_required) &&
           pod_terms_same(a->anti_required, b->anti_required, a->nanti_required) &&
           weighted_same(a->aff_preferred, b->aff_preferred, a->naff_preferred) &&
           weighted_same(a->anti_preferred, b->anti_preferred, a->nanti_preferred);
}

static uint32_t tsc_hash(const struct ebb_tsc *t, size_t n)
{
    uint64_t h = mix(0x75c, n);

    for (size_t i = 0; i < n; i++) {
        h = mix(mix(h, ((uint64_t)(uint32_t)t[i].max_skew << 32) | (uint32_t)t[i].min_domains),
                (uintptr_t)t[i].topology_key);
        h = mix(h, (uint64_t)t[i].when_unsatisfiable << 16 | (uint64_t)t[i].node_affinity_policy << 8 |
                       t[i].node_taints_policy);
        h = strs_hash(sel_hash(h, t[i].selector), t[i].match_keys, t[i].nmatch_keys);
    }
    return (uint32_t)(h ^ (h >> 29));
}

static bool tsc_same(const void *x, const void *y, size_t n)
{
    const struct ebb_tsc *a = x, *b = y;

    for (size_t i = 0; i < n; i++)
        if (a[i].max_skew != b[i].max_skew || a[i].min_domains != b[i].min_domains ||
            a[i].topology_key != b[i].topology_key || a[i].when_unsatisfiable != b[i].when_unsatisfiable ||
            a[i].node_affinity_policy != b[i].node_affinity_policy ||
            a[i].node_taints_policy != b[i].node_taints_policy || !sel_same(a[i].selector, b[i].selector) ||
            a[i].nmatch_keys != b[i].nmatch_keys || !strs_same(a[i].match_keys, b[i].match_keys, a[i].nmatch_keys))
            return false;
    return true;
}

static void drop_tsc(struct ebb_tsc *t, uint16_t n)
{
    if (t == NULL || (n > 0 && !ebb_share_release_deep(t, tsc_hash(t, n))))
        return;
    for (uint16_t i = 0; i < n; i++)
        tsc_clear(&t[i]);
    free(t);
}

static void drop_affinity(struct ebb_affinity *a)
{
    if (a != NULL && ebb_share_release_deep(a, affinity_hash(a)))
        ebb_affinity_free(a);
}

/* Every flat array of a pod, once: freeing, copying and sharing a pod walk
 * this list, so an array added to struct ebb_pod and here is handled by
 * all three. (tsc and affinity hold arrays of their own: beside it.) */
#define POD_FLAT(X)                                                              \
    X(EBB_SHARE_KV, labels.kv, labels.n)                                         \
    X(EBB_SHARE_KV, annotations.kv, annotations.n)                               \
    X(EBB_SHARE_KV, node_selector.kv, node_selector.n)                           \
    X(EBB_SHARE_OWNERS, owners, nowners)                                         \
    X(EBB_SHARE_TOLERATIONS, tolerations, ntolerations)                          \
    X(EBB_SHARE_CSTATUS, cstatus, ncstatus)                                      \
    X(EBB_SHARE_CONDITIONS, conditions, nconditions)                             \
    X(EBB_SHARE_STRS, images, nimages)                                           \
    X(EBB_SHARE_STRS, pvcs, npvcs)                                               \
    X(EBB_SHARE_STRS, init_images, ninit_images)                                 \
    X(EBB_SHARE_HOST_PORTS, host_ports, nhost_ports)                             \
    X(EBB_SHARE_RQ, requests.q, requests.n)

void ebb_pod_free(struct ebb_pod *p)
{
    if (p == NULL)
        return;
    ebb_str_release(p->ns);
    ebb_str_release(p->name);
    ebb_str_release(p->uid);
    ebb_str_release(p->node);
    ebb_str_release(p->priority_class);
    ebb_str_release(p->reason);
    ebb_str_release(p->scheduler);
#define DROP(kind, arr, n) drop(kind, (void *)p->arr, p->n);
    POD_FLAT(DROP)
#undef DROP
    drop_tsc(p->tsc, p->ntsc);
    drop_affinity(p->affinity);
    free(p);
}

void ebb_pod_drop_conditions(struct ebb_pod *p)
{
    drop(EBB_SHARE_CONDITIONS, p->conditions, p->nconditions);
    p->conditions = NULL;
    p->nconditions = 0;
}

void ebb_pod_drop_cstatus(struct ebb_pod *p)
{
    drop(EBB_SHARE_CSTATUS, p->cstatus, p->ncstatus);
    p->cstatus = NULL;
    p->ncstatus = 0;
}

void ebb_node_free(struct ebb_node *n)
{
    if (n == NULL)
        return;
    ebb_str_release(n->name);
    ebb_str_release(n->uid);
    if (n->taints != NULL) {
        for (uint16_t i = 0; i < n->ntaints; i++) {
            ebb_str_release(n->taints[i].key);
            ebb_str_release(n->taints[i].value);
        }
        free(n->taints);
    }
    ebb_labels_free(&n->labels);
    ebb_labels_free(&n->annotations);
    ebb_res_free(&n->allocatable);
    ebb_res_free(&n->capacity);
    if (n->images != NULL) {
        for (uint16_t i = 0; i < n->nimages; i++)
            release_strs(n->images[i].names, n->images[i].nnames);
        free(n->images);
    }
    free(n);
}

/* ---- other kinds ------------------------------------------------------- */

void ebb_namespace_free(struct ebb_namespace *ns)
{
    if (ns == NULL)
        return;
    ebb_str_release(ns->name);
    ebb_labels_free(&ns->labels);
    free(ns);
}

void ebb_priority_class_free(struct ebb_priority_class *pc)
{
    if (pc == NULL)
        return;
    ebb_str_release(pc->name);
    free(pc);
}

void ebb_pvc_free(struct ebb_pvc *pvc)
{
    if (pvc == NULL)
        return;
    ebb_str_release(pvc->ns);
    ebb_str_release(pvc->name);
    ebb_str_release(pvc->storage_class);
    free(pvc);
}

void ebb_pdb_free(struct ebb_pdb *pdb)
{
    if (pdb == NULL)
        return;
    ebb_str_release(pdb->ns);
    ebb_str_release(pdb->name);
    ebb_selector_free(pdb->selector);
    ebb_str_release(pdb->unhealthy_policy);
    ebb_str_release(pdb->min_available);
    ebb_str_release(pdb->max_unavailable);
    free(pdb);
}

void ebb_node_metrics_free(struct ebb_node_metrics *m)
{
    if (m == NULL)
        return;
    ebb_str_release(m->node);
    ebb_res_free(&m->usage);
    free(m);
}

void ebb_pod_metrics_free(struct ebb_pod_metrics *m)
{
    if (m == NULL)
        return;
    ebb_str_release(m->ns);
    ebb_str_release(m->name);
    ebb_res_free(&m->usage);
    free(m);
}

void ebb_koord_node_metric_free(struct ebb_koord_node_metric *m)
{
    if (m == NULL)
        return;
    ebb_str_release(m->node);
    ebb_res_free(&m->node_usage);
    ebb_res_free(&m->system_usage);
    if (m->pods != NULL) {
        for (uint32_t i = 0; i < m->npods; i++) {
            ebb_str_release(m->pods[i].ns);
            ebb_str_release(m->pods[i].name);
            ebb_str_release(m->pods[i].priority);
            ebb_res_free(&m->pods[i].usage);
        }
        free(m->pods);
    }
    free(m);
}

const char *ebb_pod_key(const struct ebb_pod *p, char *buf, size_t len)
{
    if (buf == NULL || len == 0)
        return buf;
    if (p == NULL) {
        buf[0] = '\0';
        return buf;
    }
    /* hot in the evictor: no printf */
    size_t a = ebb_str_len(p->ns), b = ebb_str_len(p->name);
    if (a + b + 2 > len) {
        snprintf(buf, len, "%s/%s", p->ns ? p->ns : "", p->name ? p->name : "");
        return buf;
    }
    if (a)
        memcpy(buf, p->ns, a);
    buf[a] = '/';
    if (b)
        memcpy(buf + a + 1, p->name, b);
    buf[a + b + 1] = '\0';
    return buf;
}

/* ---- copies ------------------------------------------------------------ */

/* A copy holds the same arrays as its original (ebb/share.h): a replacement
 * or a memo costs a reference per array, not a copy of each and of every
 * string reference in it. */
struct ebb_pod *ebb_pod_clone(const struct ebb_pod *p)
{
    struct ebb_pod *c;
    bool ok = true;

    if (p == NULL || (c = malloc(sizeof(*c))) == NULL)
        return NULL;
    *c = *p;
    /* nothing below is held yet: a failure drops what has been taken */
#define NONE(kind, arr, n) c->arr = NULL, c->n = 0;
    POD_FLAT(NONE)
#undef NONE
    c->tsc = NULL, c->ntsc = 0, c->affinity = NULL;
    ebb_str_ref(c->ns), ebb_str_ref(c->name), ebb_str_ref(c->uid), ebb_str_ref(c->node);
    ebb_str_ref(c->priority_class), ebb_str_ref(c->reason), ebb_str_ref(c->scheduler);
#define TAKE(kind, arr, n)                                                       \
    if (ok && p->arr != NULL && p->n > 0 &&                                      \
        (ok = ebb_share_ref(kind, p->arr, p->n * sizeof(*p->arr))))              \
        c->arr = p->arr, c->n = p->n;
    POD_FLAT(TAKE)
#undef TAKE
    if (ok && p->tsc != NULL && p->ntsc > 0 &&
        (ok = ebb_share_ref_deep(EBB_SHARE_TSC, p->tsc, p->ntsc, tsc_hash(p->tsc, p->ntsc))))
        c->tsc = p->tsc, c->ntsc = p->ntsc;
    if (ok && p->affinity != NULL &&
        (ok = ebb_share_ref_deep(EBB_SHARE_AFFINITY, p->affinity, 1, affinity_hash(p->affinity))))
        c->affinity = p->affinity;
    if (!ok) {
        ebb_pod_free(c);
        return NULL;
    }
    return c;
}

void ebb_pod_share(struct ebb_pod *p)
{
    void *s;

    if (p == NULL)
        return;
    /* conditions are each pod's own (their times): not offered */
#define SHARE(kind, arr, n)                                                      \
    if (kind != EBB_SHARE_CONDITIONS &&                                          \
        (s = ebb_share_intern(kind, (void *)p->arr, p->n * sizeof(*p->arr))) != p->arr) { \
        drop(kind, (void *)p->arr, p->n);                                        \
        p->arr = s;                                                              \
    }
    POD_FLAT(SHARE)
#undef SHARE
    if (p->tsc != NULL && p->ntsc > 0 &&
        (s = ebb_share_intern_deep(EBB_SHARE_TSC, p->tsc, p->ntsc, tsc_hash(p->tsc, p->ntsc), tsc_same)) != p->tsc) {
        drop_tsc(p->tsc, p->ntsc);
        p->tsc = s;
    }
    if (p->affinity != NULL &&
        (s = ebb_share_intern_deep(EBB_SHARE_AFFINITY, p->affinity, 1, affinity_hash(p->affinity), affinity_same)) !=
            p->affinity) {
        drop_affinity(p->affinity);
        p->affinity = s;
    }
}

int ebb_pod_own_cstatus(struct ebb_pod *p)
{
    return own(EBB_SHARE_CSTATUS, (void **)&p->cstatus, p->ncstatus);
}

void ebb_workload_free(struct ebb_workload *w)
{
    if (w == NULL)
        return;
    ebb_str_release(w->ns);
    ebb_str_release(w->name);
    ebb_str_release(w->uid);
    ebb_str_release(w->owner.kind);
    ebb_str_release(w->owner.name);
    ebb_str_release(w->owner.uid);
    ebb_selector_free(w->selector);
    free(w);
}
