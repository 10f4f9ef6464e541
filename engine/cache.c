/* The cache: decoded objects, stable pod/node slots and the indexes the
 * cycle needs. See include/ebb/cache.h. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb/cache.h"
#include "map.h"

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
    FILE **sources;
    uint16_t nsources;
    uint64_t version;
    uint64_t epoch;
    uint32_t next_serial;
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
    for (uint16_t i = 0; i < c->nsources; i++)
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

static void account(struct ebb_podvec *pv, const struct ebb_pod *p, int sign)
{
    if (pv == NULL || !ebb_pod_occupies(p))
        return;
    pv->nactive += sign;
    for (uint16_t i = 0; i < p->requests.n; i++)
        pv->req[p->requests.q[i].id] += sign * p->requests.q[i].v;
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
    if (!(p->flags & EBB_POD_GONE))
        owned_add(c, p, -1);
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

static void delete_pod(struct ebb_cache *c, struct ebb_pod *p)
{
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
    default: break;
    }
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
        return 0;
    }
    return ptrvec_push(v, pdb);
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
    case EBB_KIND_KOORD_NODE_METRIC: rc = put_other(c, obj); break;
    default: return EBB_EINVAL;
    }
    if (rc == 0)
        c->version++;
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
        if ((o = ebb__map_del(&c->by_kind[kind], ns, name)) == NULL)
            return EBB_ENOENT;
        if (kind == EBB_KIND_PDB) {
            struct ptrvec *v = ebb__map_get(&c->pdbs_by_ns, ns, NULL);
            if (v)
                ptrvec_remove(v, o);
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

struct ebb_pod_metrics *ebb_cache_pod_metrics(const struct ebb_cache *c, ebb_str ns, ebb_str name)
{
    return ebb__map_get(&c->by_kind[EBB_KIND_POD_METRICS], ns, name);
}

struct ebb_koord_node_metric *ebb_cache_koord_metric(const struct ebb_cache *c, ebb_str node)
{
    return ebb__map_get(&c->by_kind[EBB_KIND_KOORD_NODE_METRIC], node, NULL);
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
    owned_add(c, p, -1);
    if (p->node)
        account(node_vec(c, p->node, false), p, -1);
    p->flags |= EBB_POD_GONE;
    c->version++;
}

void ebb_cache_unhide_all(struct ebb_cache *c)
{
    for (uint32_t i = 0; i < c->pods.n; i++) {
        struct ebb_pod *p = c->pods.v[i];
        if (p && (p->flags & EBB_POD_GONE)) {
            p->flags &= (uint16_t)~EBB_POD_GONE;
            owned_add(c, p, +1);
            if (p->node)
                account(node_vec(c, p->node, false), p, +1);
            c->version++;
        }
    }
}

void ebb_cache_purge_hidden(struct ebb_cache *c)
{
    for (uint32_t i = 0; i < c->pods.n; i++) {
        struct ebb_pod *p = c->pods.v[i];
        if (p && (p->flags & EBB_POD_GONE)) {
            delete_pod(c, p);
            c->version++;
        }
    }
}

uint64_t ebb_cache_version(const struct ebb_cache *c)
{
    return c->version;
}

uint64_t ebb_cache_epoch(const struct ebb_cache *c)
{
    return c->epoch;
}

int ebb_cache_add_source(struct ebb_cache *c, FILE *f, uint16_t *index)
{
    FILE **v;

    if (c == NULL || f == NULL || c->nsources == UINT16_MAX)
        return EBB_EINVAL;
    if ((v = realloc(c->sources, (c->nsources + 1u) * sizeof(*v))) == NULL)
        return EBB_ENOMEM;
    c->sources = v;
    v[c->nsources] = f;
    if (index)
        *index = c->nsources;
    c->nsources++;
    return 0;
}

int ebb_cache_read_source(const struct ebb_cache *c, const struct ebb_src *src, char **out,
                          size_t *len)
{
    char *buf;
    size_t got = 0;

    if (src == NULL || src->len == 0 || src->file >= c->nsources)
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
    j = cJSON_ParseWithLength(json, len);
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
