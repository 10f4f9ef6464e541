/* The cache: decoded objects, stable pod/node slots and the indexes the
 * cycle needs. See include/ebb/cache.h. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb/cache.h"
#include "ebb/prom_result.h"
#include "ebb/selector.h"
#include "base/map.h"

struct slots {
    void **v;
    uint32_t n, cap;        /* n: slots in use or free, cap: allocated */
    uint32_t *free;
    uint32_t nfree, free_cap;
    uint32_t live;
};

struct ptrvec {
    uint32_t n, cap;
    void **v;
};

/* PDBs by (namespace, key, value) of the first In requirement of their
 * selector; (namespace, NULL, NULL): those without a usable one. An
 * eviction checks the PDBs its pod's labels lead to, not every PDB of the
 * namespace. Slots are never emptied (a vector may be). */
struct pdb_slot {
    ebb_str ns, key, value;         /* ns == NULL: free */
    struct ptrvec v;
};

struct pdb_labels {
    struct pdb_slot *s;
    size_t cap, n;                  /* cap: a power of two */
};

struct ebb_cache {
    struct slots pods, nodes;
    struct ebb_map pod_by_key;      /* (ns, name) -> pod */
    struct ebb_map pods_by_node;    /* (node, -) -> struct ebb_podvec */
    struct ebb_map owned;           /* (uid, -) -> count of live pods */
    struct ebb_map node_by_name;    /* (name, -) -> node */
    struct ebb_node **sorted;
    uint32_t nsorted;
    bool sorted_valid;
    struct ebb_map by_kind[EBB_KIND_MAX];   /* other kinds: (ns|name, name|-) */
    struct ebb_map pdbs_by_ns;      /* (ns, -) -> struct ptrvec of pdbs */
    struct pdb_labels pdb_labels;   /* which PDBs a pod's labels can meet */
    FILE **sources;
    uint16_t nsources;
    uint64_t version;
    uint64_t content;               /* version, less hiding and showing pods */
    uint64_t epoch;
    uint32_t next_serial;
    /* the pods hidden, in the order they were (ebb_cache_hidden); a list
     * that lost one (out of memory) is `hidden_lost` until it empties */
    struct ebb_pod **hidden;
    size_t nhidden, cap_hidden;
    uint64_t hidden_epoch;
    bool hidden_lost;
    bool text_off;                  /* ebb_cache_keep_text(false) */
    bool text_wanted;               /* ebb_cache_text_asked while off */
};

static const struct ebb_podvec empty_podvec = { .sorted = true };

int ebb_cache_create(struct ebb_cache **out)
{
    struct ebb_cache *c;

    if (out == NULL)
        return EBB_EINVAL;
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return EBB_ENOMEM;
    c->next_serial = 1;
    *out = c;
    return 0;
}

static void free_object(int kind, void *o)
{
    struct ebb_object obj = { .kind = kind, .u.any = o };
    ebb_object_free(&obj);
}

void ebb_cache_destroy(struct ebb_cache *c)
{
    if (c == NULL)
        return;
    free(c->hidden);
    for (uint32_t i = 0; i < c->pods.n; i++)
        ebb_pod_free(c->pods.v[i]);
    for (uint32_t i = 0; i < c->nodes.n; i++)
        ebb_node_free(c->nodes.v[i]);
    free(c->pods.v);
    free(c->pods.free);
    free(c->nodes.v);
    free(c->nodes.free);
    ebb__map_free(&c->pod_by_key);
    for (size_t i = 0; i < c->pods_by_node.cap; i++) {
        if (ebb__map_live(&c->pods_by_node, i)) {
            struct ebb_podvec *pv = c->pods_by_node.s[i].v;
            ebb_str_release(c->pods_by_node.s[i].a);
            free(pv->v);
            free(pv);
        }
    }
    ebb__map_free(&c->pods_by_node);
    for (size_t i = 0; i < c->owned.cap; i++)
        if (ebb__map_live(&c->owned, i))
            ebb_str_release(c->owned.s[i].a);
    ebb__map_free(&c->owned);
    ebb__map_free(&c->node_by_name);
    free(c->sorted);
    for (int k = 0; k < EBB_KIND_MAX; k++) {
        struct ebb_map *m = &c->by_kind[k];
        for (size_t i = 0; i < m->cap; i++)
            if (ebb__map_live(m, i))
                free_object(k, m->s[i].v);
        ebb__map_free(m);
    }
    for (size_t i = 0; i < c->pdbs_by_ns.cap; i++) {
        if (ebb__map_live(&c->pdbs_by_ns, i)) {
            struct ptrvec *v = c->pdbs_by_ns.s[i].v;
            free(v->v);
            free(v);
        }
    }
    ebb__map_free(&c->pdbs_by_ns);
    for (size_t i = 0; i < c->pdb_labels.cap; i++)
        free(c->pdb_labels.s[i].v.v);
    free(c->pdb_labels.s);
    for (uint16_t i = 0; i < c->nsources; i++)
        if (c->sources[i] != NULL)
            fclose(c->sources[i]);
    free(c->sources);
    free(c);
}

/* ---- slots ------------------------------------------------------------- */

static int slot_take(struct slots *s, uint32_t *out)
{
    if (s->nfree > 0) {
        *out = s->free[--s->nfree];
        return 0;
    }
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 1024;
        void **v = realloc(s->v, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n] = NULL;
    *out = s->n++;
    return 0;
}

static int slot_give(struct slots *s, uint32_t i)
{
    if (s->nfree == s->free_cap) {
        uint32_t cap = s->free_cap ? s->free_cap * 2 : 256;
        uint32_t *f = realloc(s->free, cap * sizeof(*f));
        if (f == NULL)
            return EBB_ENOMEM;
        s->free = f;
        s->free_cap = cap;
    }
    s->v[i] = NULL;
    s->free[s->nfree++] = i;
    return 0;
}

static int ptrvec_push(struct ptrvec *v, void *p)
{
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 8;
        void **nv = realloc(v->v, cap * sizeof(*nv));
        if (nv == NULL)
            return EBB_ENOMEM;
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n++] = p;
    return 0;
}

static void ptrvec_remove(struct ptrvec *v, void *p)
{
    for (uint32_t i = 0; i < v->n; i++) {
        if (v->v[i] == p) {
            memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof(*v->v));
            v->n--;
            return;
        }
    }
}

/* ---- pods -------------------------------------------------------------- */

static void owned_add(struct ebb_cache *c, const struct ebb_pod *p, int delta)
{
    for (uint16_t i = 0; i < p->nowners; i++) {
        ebb_str uid = p->owners[i].uid;
        uintptr_t n;
        void *old;

        if (uid == NULL)
            continue;
        n = (uintptr_t)ebb__map_get(&c->owned, uid, NULL);
        if (n == 0 && delta > 0) {
            if (ebb__map_put(&c->owned, uid, NULL, (void *)(uintptr_t)1, &old) == 0)
                ebb_str_ref(uid);
            continue;
        }
        if (n == 0)
            continue;
        n = delta > 0 ? n + 1 : n - 1;
        if (n == 0) {
            ebb__map_del(&c->owned, uid, NULL);
            ebb_str_release(uid);
        } else {
            ebb__map_put(&c->owned, uid, NULL, (void *)n, &old);
        }
    }
}

bool ebb_pod_occupies(const struct ebb_pod *p)
{
    return p->node != NULL && p->phase != EBB_PHASE_SUCCEEDED && p->phase != EBB_PHASE_FAILED &&
           !(p->flags & EBB_POD_GONE);
}

static int64_t saturated(__int128 x)
{
    return x > INT64_MAX ? INT64_MAX : x < INT64_MIN ? INT64_MIN : (int64_t)x;
}

static void account(struct ebb_podvec *pv, const struct ebb_pod *p, int sign)
{
    if (pv == NULL || !ebb_pod_occupies(p))
        return;
    pv->nactive += sign;
    for (uint16_t i = 0; i < p->requests.n; i++) {
        int id = p->requests.q[i].id;
        pv->req[id] = saturated(pv->exact[id] += (__int128)sign * p->requests.q[i].v);
    }
    pv->nz[0] = saturated(pv->nz_exact[0] += (__int128)sign * p->nz_cpu);
    pv->nz[1] = saturated(pv->nz_exact[1] += (__int128)sign * p->nz_mem);
}

static struct ebb_podvec *node_vec(struct ebb_cache *c, ebb_str node, bool create)
{
    struct ebb_podvec *pv = ebb__map_get(&c->pods_by_node, node, NULL);
    void *old;

    if (pv != NULL || !create)
        return pv;
    if ((pv = calloc(1, sizeof(*pv))) == NULL)
        return NULL;
    pv->sorted = true;
    if (ebb__map_put(&c->pods_by_node, node, NULL, pv, &old) != 0) {
        free(pv);
        return NULL;
    }
    ebb_str_ref(node);
    return pv;
}

static void unindex_pod(struct ebb_cache *c, struct ebb_pod *p)
{
    struct ebb_podvec *pv;

    ebb__map_del(&c->pod_by_key, p->ns, p->name);
    if (p->node && (pv = node_vec(c, p->node, false)) != NULL) {
        account(pv, p, -1);
        for (uint32_t i = 0; i < pv->n; i++) {
            if (pv->v[i] == p) {
                pv->v[i] = pv->v[--pv->n];
                pv->sorted = pv->n <= 1;
                break;
            }
        }
    }
    owned_add(c, p, -1);   /* hidden pods are still counted (ebb_cache_hide_pod) */
}

static int put_pod(struct ebb_cache *c, struct ebb_pod *p)
{
    struct ebb_pod *old = ebb__map_get(&c->pod_by_key, p->ns, p->name);
    struct ebb_podvec *pv = NULL;
    uint32_t slot;
    void *prev;
    int rc;

    if (p->ns == NULL || p->name == NULL)
        return EBB_EINVAL;
    if (p->node && (pv = node_vec(c, p->node, true)) == NULL)
        return EBB_ENOMEM;
    if (pv && pv->n == pv->cap) {
        uint32_t cap = pv->cap ? pv->cap * 2 : 16;
        struct ebb_pod **v = realloc(pv->v, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        pv->v = v;
        pv->cap = cap;
    }
    if (old != NULL) {
        /* An update keeps the slot; the same uid keeps the serial so a
         * view held by a script still refers to this pod. */
        slot = old->slot;
        p->serial = old->uid == p->uid ? old->serial : c->next_serial++;
        unindex_pod(c, old);
        ebb_pod_free(old);
        c->epoch++;
        c->pods.live--;
    } else {
        if ((rc = slot_take(&c->pods, &slot)) != 0)
            return rc;
        p->serial = c->next_serial++;
    }
    p->slot = slot;
    c->pods.v[slot] = p;
    c->pods.live++;
    if ((rc = ebb__map_put(&c->pod_by_key, p->ns, p->name, p, &prev)) != 0) {
        c->pods.live--;
        slot_give(&c->pods, slot);
        return rc;
    }
    if (pv) {
        pv->v[pv->n++] = p;
        pv->sorted = pv->n <= 1;
        account(pv, p, +1);
    }
    owned_add(c, p, +1);
    return 0;
}

static void hidden_drop(struct ebb_cache *c, const struct ebb_pod *p)
{
    for (size_t i = c->nhidden; i-- > 0;)
        if (c->hidden[i] == p) {
            memmove(&c->hidden[i], &c->hidden[i + 1], (c->nhidden - i - 1) * sizeof(*c->hidden));
            c->nhidden--;
            return;
        }
}

static void hidden_clear(struct ebb_cache *c)
{
    c->nhidden = 0;
    c->hidden_lost = false;
    c->hidden_epoch++;
}

static void delete_pod(struct ebb_cache *c, struct ebb_pod *p)
{
    if (p->flags & EBB_POD_GONE)
        hidden_drop(c, p);
    unindex_pod(c, p);
    slot_give(&c->pods, p->slot);
    c->pods.live--;
    ebb_pod_free(p);
    c->epoch++;
}

/* ---- nodes ------------------------------------------------------------- */

static int put_node(struct ebb_cache *c, struct ebb_node *n)
{
    struct ebb_node *old = ebb__map_get(&c->node_by_name, n->name, NULL);
    uint32_t slot;
    void *prev;
    int rc;

    if (n->name == NULL)
        return EBB_EINVAL;
    if (old != NULL) {
        slot = old->slot;
        n->serial = old->uid == n->uid ? old->serial : c->next_serial++;
        ebb_node_free(old);
        c->epoch++;
        c->nodes.live--;
    } else {
        if ((rc = slot_take(&c->nodes, &slot)) != 0)
            return rc;
        n->serial = c->next_serial++;
    }
    n->slot = slot;
    c->nodes.v[slot] = n;
    c->nodes.live++;
    if ((rc = ebb__map_put(&c->node_by_name, n->name, NULL, n, &prev)) != 0) {
        c->nodes.live--;
        slot_give(&c->nodes, slot);
        return rc;
    }
    c->sorted_valid = false;
    return 0;
}

/* ---- other kinds ------------------------------------------------------- */

static void kind_key(const struct ebb_object *o, ebb_str *a, ebb_str *b)
{
    *a = *b = NULL;
    switch (o->kind) {
    case EBB_KIND_NAMESPACE: *a = o->u.ns->name; break;
    case EBB_KIND_PRIORITY_CLASS: *a = o->u.pc->name; break;
    case EBB_KIND_PVC: *a = o->u.pvc->ns; *b = o->u.pvc->name; break;
    case EBB_KIND_PDB: *a = o->u.pdb->ns; *b = o->u.pdb->name; break;
    case EBB_KIND_NODE_METRICS: *a = o->u.node_metrics->node; break;
    case EBB_KIND_POD_METRICS: *a = o->u.pod_metrics->ns; *b = o->u.pod_metrics->name; break;
    case EBB_KIND_KOORD_NODE_METRIC: *a = o->u.koord->node; break;
    case EBB_KIND_PROM_RESULT: *a = o->u.prom->key; break;
    case EBB_KIND_SERVICE:
    case EBB_KIND_REPLICA_SET:
    case EBB_KIND_STATEFUL_SET:
    case EBB_KIND_REPLICATION_CONTROLLER: *a = o->u.workload->ns; *b = o->u.workload->name; break;
    default: break;
    }
}

static size_t pdb_slot_hash(ebb_str ns, ebb_str key, ebb_str value)
{
    uint64_t h = (uint64_t)(uintptr_t)ns * 0x9E3779B97F4A7C15ull;
    h = (h ^ (uint64_t)(uintptr_t)key) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (uint64_t)(uintptr_t)value) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 32));
}

static struct ptrvec *pdb_slot_find(const struct pdb_labels *t, ebb_str ns, ebb_str key,
                                    ebb_str value)
{
    if (t->cap == 0 || ns == NULL)
        return NULL;
    for (size_t i = pdb_slot_hash(ns, key, value) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        struct pdb_slot *sl = &t->s[i];
        if (sl->ns == NULL)
            return NULL;
        if (sl->ns == ns && sl->key == key && sl->value == value)
            return &sl->v;
    }
}

static struct ptrvec *pdb_slot_at(struct pdb_labels *t, ebb_str ns, ebb_str key, ebb_str value)
{
    struct ptrvec *v = pdb_slot_find(t, ns, key, value);
    size_t i;

    if (v != NULL)
        return v;
    if ((t->n + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct pdb_slot *ns2 = calloc(cap, sizeof(*ns2));
        if (ns2 == NULL)
            return NULL;
        for (size_t k = 0; k < t->cap; k++) {
            if (t->s[k].ns == NULL)
                continue;
            for (i = pdb_slot_hash(t->s[k].ns, t->s[k].key, t->s[k].value) & (cap - 1); ns2[i].ns;
                 i = (i + 1) & (cap - 1))
                ;
            ns2[i] = t->s[k];
        }
        free(t->s);
        t->s = ns2;
        t->cap = cap;
    }
    for (i = pdb_slot_hash(ns, key, value) & (t->cap - 1); t->s[i].ns; i = (i + 1) & (t->cap - 1))
        ;
    t->s[i] = (struct pdb_slot){ ns, key, value, { 0, 0, NULL } };
    t->n++;
    return &t->s[i].v;
}

/* The requirement a PDB is filed under: the first In requirement of its
 * selector, if its values are all non-empty (else NULL: filed under
 * (ns, NULL, NULL)). *never: the selector is nil, empty or nothing, which
 * select nothing for an eviction: filed nowhere. */
static const struct ebb_req *pdb_anchor(const struct ebb_pdb *pdb, bool *never)
{
    const struct ebb_selector *sel = pdb->selector;

    *never = sel == NULL || ebb_selector_is_empty(sel) || (sel->flags & EBB_SEL_NOTHING);
    if (*never)
        return NULL;
    for (uint16_t i = 0; i < sel->nreqs; i++) {
        const struct ebb_req *r = &sel->reqs[i];
        if (r->op != EBB_OP_IN || r->nvalues == 0 || r->key == NULL)
            continue;
        for (uint16_t k = 0; k < r->nvalues; k++)
            if (ebb_str_len(r->values[k]) == 0)
                return NULL;
        return r;
    }
    return NULL;
}

static int pdb_label_add(struct ebb_cache *c, struct ebb_pdb *pdb)
{
    bool never;
    const struct ebb_req *r = pdb_anchor(pdb, &never);
    struct ptrvec *v;

    if (never)
        return 0;
    if (r == NULL)
        return (v = pdb_slot_at(&c->pdb_labels, pdb->ns, NULL, NULL)) ? ptrvec_push(v, pdb) : EBB_ENOMEM;
    for (uint16_t k = 0; k < r->nvalues; k++) {
        if ((v = pdb_slot_at(&c->pdb_labels, pdb->ns, r->key, r->values[k])) == NULL)
            return EBB_ENOMEM;
        if (ptrvec_push(v, pdb) != 0)
            return EBB_ENOMEM;
    }
    return 0;
}

static void pdb_label_remove(struct ebb_cache *c, const struct ebb_pdb *pdb)
{
    bool never;
    const struct ebb_req *r = pdb_anchor(pdb, &never);
    struct ptrvec *v;

    if (never)
        return;
    if (r == NULL) {
        if ((v = pdb_slot_find(&c->pdb_labels, pdb->ns, NULL, NULL)) != NULL)
            ptrvec_remove(v, (void *)pdb);
        return;
    }
    for (uint16_t k = 0; k < r->nvalues; k++)
        if ((v = pdb_slot_find(&c->pdb_labels, pdb->ns, r->key, r->values[k])) != NULL)
            ptrvec_remove(v, (void *)pdb);
}

static int pdb_index(struct ebb_cache *c, struct ebb_pdb *pdb, struct ebb_pdb *old)
{
    struct ptrvec *v = ebb__map_get(&c->pdbs_by_ns, pdb->ns, NULL);
    void *prev;

    if (v == NULL) {
        if ((v = calloc(1, sizeof(*v))) == NULL)
            return EBB_ENOMEM;
        if (ebb__map_put(&c->pdbs_by_ns, pdb->ns, NULL, v, &prev) != 0) {
            free(v);
            return EBB_ENOMEM;
        }
    }
    if (old != NULL) {
        for (uint32_t i = 0; i < v->n; i++)
            if (v->v[i] == old)
                v->v[i] = pdb;
        pdb_label_remove(c, old);
        return pdb_label_add(c, pdb);
    }
    if (ptrvec_push(v, pdb) != 0)
        return EBB_ENOMEM;
    return pdb_label_add(c, pdb);
}

static int put_other(struct ebb_cache *c, struct ebb_object *o)
{
    struct ebb_map *m = &c->by_kind[o->kind];
    ebb_str a, b;
    void *old = NULL;
    int rc;

    kind_key(o, &a, &b);
    if (a == NULL)
        return EBB_EINVAL;
    old = ebb__map_get(m, a, b);
    if (o->kind == EBB_KIND_PDB && (rc = pdb_index(c, o->u.pdb, old)) != 0)
        return rc;
    if ((rc = ebb__map_put(m, a, b, o->u.any, &old)) != 0)
        return rc;
    if (old != NULL)
        free_object(o->kind, old);
    return 0;
}

int ebb_cache_put(struct ebb_cache *c, struct ebb_object *obj)
{
    int rc;

    if (c == NULL || obj == NULL || obj->u.any == NULL)
        return EBB_EINVAL;
    switch (obj->kind) {
    case EBB_KIND_POD: rc = put_pod(c, obj->u.pod); break;
    case EBB_KIND_NODE: rc = put_node(c, obj->u.node); break;
    case EBB_KIND_NAMESPACE:
    case EBB_KIND_PRIORITY_CLASS:
    case EBB_KIND_PVC:
    case EBB_KIND_PDB:
    case EBB_KIND_NODE_METRICS:
    case EBB_KIND_POD_METRICS:
    case EBB_KIND_KOORD_NODE_METRIC:
    case EBB_KIND_PROM_RESULT: rc = put_other(c, obj); break;
    case EBB_KIND_SERVICE:
    case EBB_KIND_REPLICA_SET:
    case EBB_KIND_STATEFUL_SET:
    case EBB_KIND_REPLICATION_CONTROLLER: rc = put_other(c, obj); break;
    default: return EBB_EINVAL;
    }
    if (rc == 0) {
        c->version++;
        c->content++;
    }
    return rc;
}

int ebb_cache_delete(struct ebb_cache *c, int kind, ebb_str ns, ebb_str name)
{
    void *o;

    if (c == NULL || name == NULL)
        return EBB_EINVAL;
    switch (kind) {
    case EBB_KIND_POD: {
        struct ebb_pod *p = ebb__map_get(&c->pod_by_key, ns, name);
        if (p == NULL)
            return EBB_ENOENT;
        delete_pod(c, p);
        break;
    }
    case EBB_KIND_NODE: {
        struct ebb_node *n = ebb__map_del(&c->node_by_name, name, NULL);
        if (n == NULL)
            return EBB_ENOENT;
        slot_give(&c->nodes, n->slot);
        c->nodes.live--;
        c->sorted_valid = false;
        ebb_node_free(n);
        c->epoch++;
        break;
    }
    case EBB_KIND_PVC:
    case EBB_KIND_PDB:
    case EBB_KIND_POD_METRICS:
    case EBB_KIND_SERVICE:
    case EBB_KIND_REPLICA_SET:
    case EBB_KIND_STATEFUL_SET:
    case EBB_KIND_REPLICATION_CONTROLLER:
        if ((o = ebb__map_del(&c->by_kind[kind], ns, name)) == NULL)
            return EBB_ENOENT;
        if (kind == EBB_KIND_PDB) {
            struct ptrvec *v = ebb__map_get(&c->pdbs_by_ns, ns, NULL);
            if (v)
                ptrvec_remove(v, o);
            pdb_label_remove(c, o);
        }
        free_object(kind, o);
        break;
    case EBB_KIND_NAMESPACE:
    case EBB_KIND_PRIORITY_CLASS:
    case EBB_KIND_NODE_METRICS:
    case EBB_KIND_KOORD_NODE_METRIC:
        if ((o = ebb__map_del(&c->by_kind[kind], name, NULL)) == NULL)
            return EBB_ENOENT;
        free_object(kind, o);
        break;
    default:
        return EBB_EINVAL;
    }
    c->version++;
    c->content++;
    return 0;
}

/* ---- lookups ----------------------------------------------------------- */

struct ebb_pod *ebb_cache_pod(const struct ebb_cache *c, ebb_str ns, ebb_str name)
{
    return ebb__map_get(&c->pod_by_key, ns, name);
}

struct ebb_node *ebb_cache_node(const struct ebb_cache *c, ebb_str name)
{
    return ebb__map_get(&c->node_by_name, name, NULL);
}

struct ebb_namespace *ebb_cache_namespace(const struct ebb_cache *c, ebb_str name)
{
    return ebb__map_get(&c->by_kind[EBB_KIND_NAMESPACE], name, NULL);
}

struct ebb_priority_class *ebb_cache_priority_class(const struct ebb_cache *c, ebb_str name)
{
    return ebb__map_get(&c->by_kind[EBB_KIND_PRIORITY_CLASS], name, NULL);
}

struct ebb_pvc *ebb_cache_pvc(const struct ebb_cache *c, ebb_str ns, ebb_str name)
{
    return ebb__map_get(&c->by_kind[EBB_KIND_PVC], ns, name);
}

struct ebb_node_metrics *ebb_cache_node_metrics(const struct ebb_cache *c, ebb_str node)
{
    return ebb__map_get(&c->by_kind[EBB_KIND_NODE_METRICS], node, NULL);
}

struct ebb_workload *ebb_cache_workload(const struct ebb_cache *c, int kind, ebb_str ns,
                                        ebb_str name)
{
    if (kind < EBB_KIND_SERVICE || kind > EBB_KIND_REPLICATION_CONTROLLER)
        return NULL;
    return ebb__map_get(&c->by_kind[kind], ns, name);
}

struct ebb_pod_metrics *ebb_cache_pod_metrics(const struct ebb_cache *c, ebb_str ns, ebb_str name)
{
    return ebb__map_get(&c->by_kind[EBB_KIND_POD_METRICS], ns, name);
}

struct ebb_koord_node_metric *ebb_cache_koord_metric(const struct ebb_cache *c, ebb_str node)
{
    return ebb__map_get(&c->by_kind[EBB_KIND_KOORD_NODE_METRIC], node, NULL);
}

struct ebb_prom_result *ebb_cache_prom_result(const struct ebb_cache *c, const char *query)
{
    ebb_str q = ebb_str_find(query, strlen(query));
    return q ? ebb__map_get(&c->by_kind[EBB_KIND_PROM_RESULT], q, NULL) : NULL;
}

uint32_t ebb_cache_pod_slots(const struct ebb_cache *c)
{
    return c->pods.n;
}

struct ebb_pod *ebb_cache_pod_at(const struct ebb_cache *c, uint32_t slot)
{
    return slot < c->pods.n ? c->pods.v[slot] : NULL;
}

uint32_t ebb_cache_node_slots(const struct ebb_cache *c)
{
    return c->nodes.n;
}

struct ebb_node *ebb_cache_node_at(const struct ebb_cache *c, uint32_t slot)
{
    return slot < c->nodes.n ? c->nodes.v[slot] : NULL;
}

static int cmp_node_name(const void *a, const void *b)
{
    const struct ebb_node *x = *(struct ebb_node *const *)a, *y = *(struct ebb_node *const *)b;
    return strcmp(x->name, y->name);
}

struct ebb_node *const *ebb_cache_nodes_sorted(struct ebb_cache *c, uint32_t *n)
{
    if (!c->sorted_valid) {
        struct ebb_node **v = realloc(c->sorted, (c->nodes.live + 1) * sizeof(*v));
        uint32_t k = 0;
        if (v == NULL) {
            *n = 0;
            return NULL;
        }
        for (uint32_t i = 0; i < c->nodes.n; i++)
            if (c->nodes.v[i])
                v[k++] = c->nodes.v[i];
        qsort(v, k, sizeof(*v), cmp_node_name);
        c->sorted = v;
        c->nsorted = k;
        c->sorted_valid = true;
    }
    *n = c->nsorted;
    return c->sorted;
}

static int cmp_pod_key(const void *a, const void *b)
{
    const struct ebb_pod *x = *(struct ebb_pod *const *)a, *y = *(struct ebb_pod *const *)b;
    int r = x->ns == y->ns ? 0 : strcmp(x->ns, y->ns);
    return r ? r : strcmp(x->name, y->name);
}

const struct ebb_podvec *ebb_cache_pods_on_node(struct ebb_cache *c, ebb_str node)
{
    struct ebb_podvec *pv = node ? node_vec(c, node, false) : NULL;

    if (pv == NULL)
        return &empty_podvec;
    if (!pv->sorted) {
        qsort(pv->v, pv->n, sizeof(*pv->v), cmp_pod_key);
        pv->sorted = true;
    }
    return pv;
}

void ebb_cache_build_indexes(struct ebb_cache *c)
{
    uint32_t n;

    for (size_t i = 0; i < c->pods_by_node.cap; i++)
        if (ebb__map_live(&c->pods_by_node, i))
            ebb_cache_pods_on_node(c, c->pods_by_node.s[i].a);
    ebb_cache_nodes_sorted(c, &n);
}

uint32_t ebb_cache_count_owned(const struct ebb_cache *c, ebb_str owner_uid)
{
    return (uint32_t)(uintptr_t)ebb__map_get(&c->owned, owner_uid, NULL);
}

const struct ebb_pdb *const *ebb_cache_pdbs_in(const struct ebb_cache *c, ebb_str ns, uint32_t *n)
{
    struct ptrvec *v = ebb__map_get(&c->pdbs_by_ns, ns, NULL);

    *n = v ? v->n : 0;
    return v ? (const struct ebb_pdb *const *)v->v : NULL;
}

static void add_candidates(const struct ptrvec *v, const struct ebb_pdb **out, uint32_t max,
                           uint32_t *n)
{
    for (uint32_t i = 0; v != NULL && i < v->n; i++, (*n)++)
        if (*n < max)
            out[*n] = v->v[i];
}

uint32_t ebb_cache_pdbs_selecting(const struct ebb_cache *c, const struct ebb_pod *p,
                                  const struct ebb_pdb **out, uint32_t max)
{
    const struct ptrvec *all;
    uint32_t n = 0, k = 0;

    if (c->pdb_labels.n == 0)
        return 0;
    add_candidates(pdb_slot_find(&c->pdb_labels, p->ns, NULL, NULL), out, max, &n);
    for (uint32_t i = 0; i < p->labels.n; i++)
        if (ebb_str_len(p->labels.kv[i].value) > 0)
            add_candidates(pdb_slot_find(&c->pdb_labels, p->ns, p->labels.kv[i].key,
                                         p->labels.kv[i].value), out, max, &n);
    if (n < 2 || n > max)
        return n;
    /* from several vectors: back to the namespace's order, once each */
    all = ebb__map_get(&c->pdbs_by_ns, p->ns, NULL);
    for (uint32_t i = 0; all != NULL && i < all->n && k < n; i++) {
        for (uint32_t j = k; j < n; j++) {
            if (out[j] == all->v[i]) {
                const struct ebb_pdb *t = out[k];
                out[k++] = out[j];
                out[j] = t;
                break;
            }
        }
    }
    return k;
}

size_t ebb_cache_count(const struct ebb_cache *c, int kind)
{
    if (kind == EBB_KIND_POD)
        return c->pods.live;
    if (kind == EBB_KIND_NODE)
        return c->nodes.live;
    if (kind <= 0 || kind >= EBB_KIND_MAX)
        return 0;
    return c->by_kind[kind].live;
}

void ebb_cache_each(const struct ebb_cache *c, int kind, void (*fn)(void *obj, void *ud), void *ud)
{
    const struct slots *s = kind == EBB_KIND_POD ? &c->pods : kind == EBB_KIND_NODE ? &c->nodes : NULL;

    if (s != NULL) {
        for (uint32_t i = 0; i < s->n; i++)
            if (s->v[i])
                fn(s->v[i], ud);
        return;
    }
    if (kind <= 0 || kind >= EBB_KIND_MAX)
        return;
    for (size_t i = 0; i < c->by_kind[kind].cap; i++)
        if (ebb__map_live(&c->by_kind[kind], i))
            fn(c->by_kind[kind].s[i].v, ud);
}

void ebb_cache_hide_pod(struct ebb_cache *c, struct ebb_pod *p)
{
    if (p->flags & EBB_POD_GONE)
        return;
    /* the owner count keeps the pod: upstream's minReplicas index still
     * holds a pod whose eviction was asked (terminating until deleted), and
     * a plugin evicting several pods of one owner decided on them all from
     * one listing */
    if (p->node)
        account(node_vec(c, p->node, false), p, -1);
    p->flags |= EBB_POD_GONE;
    c->version++;
    if (c->nhidden == c->cap_hidden) {
        size_t cap = c->cap_hidden ? c->cap_hidden * 2 : 64;
        struct ebb_pod **v = realloc(c->hidden, cap * sizeof(*v));
        if (v == NULL) {
            c->hidden_lost = true;
            return;
        }
        c->hidden = v;
        c->cap_hidden = cap;
    }
    c->hidden[c->nhidden++] = p;
}

struct ebb_pod *const *ebb_cache_hidden(const struct ebb_cache *c, size_t *n, uint64_t *epoch)
{
    *n = c->nhidden;
    *epoch = c->hidden_epoch;
    return c->hidden_lost ? NULL : (struct ebb_pod *const *)c->hidden;
}

void ebb_cache_unhide_pod(struct ebb_cache *c, struct ebb_pod *p)
{
    if (!(p->flags & EBB_POD_GONE))
        return;
    p->flags &= (uint16_t)~EBB_POD_GONE;
    if (p->node)
        account(node_vec(c, p->node, false), p, +1);
    c->version++;
    hidden_drop(c, p);
}

void ebb_cache_unhide_all(struct ebb_cache *c)
{
    hidden_clear(c);
    for (uint32_t i = 0; i < c->pods.n; i++) {
        struct ebb_pod *p = c->pods.v[i];
        if (p && (p->flags & EBB_POD_GONE)) {
            p->flags &= (uint16_t)~EBB_POD_GONE;
            if (p->node)
                account(node_vec(c, p->node, false), p, +1);
            c->version++;
        }
    }
}

void ebb_cache_purge_hidden(struct ebb_cache *c)
{
    hidden_clear(c);
    for (uint32_t i = 0; i < c->pods.n; i++) {
        struct ebb_pod *p = c->pods.v[i];
        if (p && (p->flags & EBB_POD_GONE)) {
            delete_pod(c, p);
            c->version++;
            c->content++;
        }
    }
}

uint64_t ebb_cache_version(const struct ebb_cache *c)
{
    return c->version;
}

uint64_t ebb_cache_content_version(const struct ebb_cache *c)
{
    return c->content;
}

uint64_t ebb_cache_epoch(const struct ebb_cache *c)
{
    return c->epoch;
}

int ebb_cache_add_source(struct ebb_cache *c, FILE *f, uint16_t *index)
{
    FILE **v;
    uint16_t i;

    if (c == NULL || f == NULL)
        return EBB_EINVAL;
    for (i = 0; i < c->nsources; i++)
        if (c->sources[i] == NULL)   /* one ebb_cache_move_source emptied */
            break;
    if (i == c->nsources) {
        if (c->nsources == UINT16_MAX)
            return EBB_EINVAL;
        if ((v = realloc(c->sources, (c->nsources + 1u) * sizeof(*v))) == NULL)
            return EBB_ENOMEM;
        c->sources = v;
        c->nsources++;
    }
    c->sources[i] = f;
    if (index)
        *index = i;
    return 0;
}

int ebb_cache_read_source(const struct ebb_cache *c, const struct ebb_src *src, char **out,
                          size_t *len)
{
    char *buf;
    size_t got = 0;

    if (src == NULL || src->len == 0 || src->file >= c->nsources || c->sources[src->file] == NULL)
        return EBB_ENOENT;
    fflush(c->sources[src->file]);
    if ((buf = malloc((size_t)src->len + 1)) == NULL)
        return EBB_ENOMEM;
    while (got < src->len) {
        ssize_t k = pread(fileno(c->sources[src->file]), buf + got, src->len - got,
                          (off_t)(src->off + got));
        if (k <= 0) {
            free(buf);
            return EBB_EIO;
        }
        got += (size_t)k;
    }
    buf[got] = '\0';
    *out = buf;
    if (len)
        *len = got;
    return 0;
}

struct cJSON *ebb_cache_read_object(const struct ebb_cache *c, const struct ebb_src *src)
{
    char *json = NULL;
    size_t len;
    cJSON *j, *o;

    if (ebb_cache_read_source(c, src, &json, &len) != 0)
        return NULL;
    /* the object as it was decoded: a NUL escape read as U+FFFD */
    j = ebb_json_nul_scrub(json, len) ? cJSON_ParseWithLength(json, len) : NULL;
    free(json);
    if (j == NULL || !src->envelope)
        return j;
    o = cJSON_DetachItemFromObjectCaseSensitive(j, "object");
    cJSON_Delete(j);
    return o;
}

size_t ebb_cache_bytes(const struct ebb_cache *c)
{
    size_t b = sizeof(*c);

    b += (c->pods.cap + c->nodes.cap) * sizeof(void *);
    b += c->pods.live * sizeof(struct ebb_pod) + c->nodes.live * sizeof(struct ebb_node);
    b += (c->pod_by_key.cap + c->pods_by_node.cap + c->owned.cap + c->node_by_name.cap) *
         sizeof(struct ebb_map_slot);
    return b;
}

/* ---- source files: what is still read, and moving it ---------------------- */

static size_t srcs_of(const struct ebb_cache *c, uint16_t file, struct ebb_src **out)
{
    size_t k = 0;

    for (uint32_t i = 0; i < c->pods.n; i++) {
        struct ebb_pod *p = c->pods.v[i];
        if (p != NULL && p->src.len > 0 && p->src.file == file) {
            if (out)
                out[k] = &p->src;
            k++;
        }
    }
    for (uint32_t i = 0; i < c->nodes.n; i++) {
        struct ebb_node *nd = c->nodes.v[i];
        if (nd != NULL && nd->src.len > 0 && nd->src.file == file) {
            if (out)
                out[k] = &nd->src;
            k++;
        }
    }
    return k;
}

void ebb_cache_sources_live(const struct ebb_cache *c, uint64_t *live, size_t n)
{
    memset(live, 0, n * sizeof(*live));
    if (c == NULL)
        return;
    for (uint32_t i = 0; i < c->pods.n; i++) {
        const struct ebb_pod *p = c->pods.v[i];
        if (p != NULL && p->src.file < n)
            live[p->src.file] += p->src.len;
    }
    for (uint32_t i = 0; i < c->nodes.n; i++) {
        const struct ebb_node *nd = c->nodes.v[i];
        if (nd != NULL && nd->src.file < n)
            live[nd->src.file] += nd->src.len;
    }
}

static int by_off(const void *a, const void *b)
{
    const struct ebb_src *x = *(const struct ebb_src *const *)a, *y = *(const struct ebb_src *const *)b;
    return x->off < y->off ? -1 : x->off > y->off;
}

int ebb_cache_move_source(struct ebb_cache *c, uint16_t from, uint16_t to, uint64_t *moved)
{
    struct ebb_src **v = NULL;
    uint64_t *off = NULL, total = 0;
    char *buf = NULL;
    size_t n, cap = 0, i;
    FILE *old, *into;
    long at;
    int rc = EBB_ENOMEM;

    if (c == NULL || from == to || from >= c->nsources || to >= c->nsources ||
        (old = c->sources[from]) == NULL || (into = c->sources[to]) == NULL)
        return EBB_EINVAL;
    fflush(old);
    n = srcs_of(c, from, NULL);
    if ((v = malloc((n ? n : 1) * sizeof(*v))) == NULL || (off = malloc((n ? n : 1) * sizeof(*off))) == NULL)
        goto fail;
    srcs_of(c, from, v);
    qsort(v, n, sizeof(*v), by_off);   /* read the old file front to back */
    /* where the copy starts; ftell once (it flushes the write buffer) */
    if ((at = ftell(into)) < 0) {
        rc = EBB_EIO;
        goto fail;
    }
    for (i = 0; i < n; i++) {
        size_t got = 0;
        if (v[i]->len > cap) {
            char *b = realloc(buf, v[i]->len);
            if (b == NULL)
                goto fail;
            buf = b;
            cap = v[i]->len;
        }
        while (got < v[i]->len) {
            ssize_t k = pread(fileno(old), buf + got, v[i]->len - got, (off_t)(v[i]->off + got));
            if (k <= 0) {
                rc = EBB_EIO;
                goto fail;
            }
            got += (size_t)k;
        }
        if (fwrite(buf, 1, got, into) != got) {
            rc = EBB_EIO;
            goto fail;
        }
        off[i] = (uint64_t)at + total;
        total += got;
    }
    /* everything copied: only now does anything point at the copy */
    for (i = 0; i < n; i++) {
        v[i]->off = off[i];
        v[i]->file = to;
    }
    c->sources[from] = NULL;
    fclose(old);
    free(v);
    free(off);
    free(buf);
    if (moved)
        *moved = total;
    return 0;
fail:
    free(v);
    free(off);
    free(buf);
    return rc;
}

int ebb_cache_seal_source(struct ebb_cache *c, uint16_t file)
{
    FILE *f, *g;
    int fd;

    if (c == NULL || file >= c->nsources || (f = c->sources[file]) == NULL)
        return EBB_EINVAL;
    if (fflush(f) != 0 || (fd = dup(fileno(f))) < 0)
        return EBB_EIO;
    if ((g = fdopen(fd, "rb")) == NULL) {
        close(fd);
        return EBB_EIO;
    }
    c->sources[file] = g;
    fclose(f);
    return 0;
}

void ebb_cache_keep_text(struct ebb_cache *c, bool on)
{
    c->text_off = !on;
}

bool ebb_cache_keeps_text(const struct ebb_cache *c)
{
    return !c->text_off;
}

void ebb_cache_text_asked(struct ebb_cache *c)
{
    if (c->text_off)
        c->text_wanted = true;
}

bool ebb_cache_text_wanted(struct ebb_cache *c)
{
    bool w = c->text_wanted;

    c->text_wanted = false;
    return w;
}
