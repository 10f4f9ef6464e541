/* Whole-set helpers for the strategies that compare pods with each other:
 * RemoveDuplicates' owner groups and the anti-affinity index (see
 * ebb/groups.h). Everything here is linear in the pods it is given, plus
 * the size of the groups or topology domains a caller asks about. */
#include <stdlib.h>
#include <string.h>

#include "ebb/affinity.h"
#include "ebb/groups.h"
#include "ebb/selector.h"
#include "ebb/taints.h"
#include "base/map.h"

/* ---- small growable arrays ---------------------------------------------- */

struct podv {
    uint32_t n, cap;
    struct ebb_pod **v;
};

static int podv_push(struct podv *pv, struct ebb_pod *p)
{
    if (pv->n == pv->cap) {
        uint32_t cap = pv->cap ? pv->cap * 2 : 4;
        struct ebb_pod **v = realloc(pv->v, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        pv->v = v;
        pv->cap = cap;
    }
    pv->v[pv->n++] = p;
    return 0;
}

struct idv {
    uint32_t n, cap;
    uint32_t *v;
};

/* `bytes` (may be NULL) counts what the vector grows by. */
static int idv_push(struct idv *iv, uint32_t id, size_t *bytes)
{
    if (iv->n == iv->cap) {
        uint32_t cap = iv->cap ? iv->cap * 2 : 4;
        uint32_t *v = realloc(iv->v, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        if (bytes != NULL)
            *bytes += (size_t)(cap - iv->cap) * sizeof(*v);
        iv->v = v;
        iv->cap = cap;
    }
    iv->v[iv->n++] = id;
    return 0;
}

/* The idv stored under (a, b) in m, created on first use; `bytes` counts
 * what the map and the new vector hold. */
static struct idv *idv_at(struct ebb_map *m, ebb_str a, ebb_str b, size_t *bytes)
{
    struct idv *iv = ebb__map_get(m, a, b);
    size_t cap = m->cap;

    if (iv != NULL)
        return iv;
    if ((iv = calloc(1, sizeof(*iv))) == NULL)
        return NULL;
    if (ebb__map_put(m, a, b, iv, NULL) != 0) {
        free(iv);
        return NULL;
    }
    *bytes += sizeof(*iv) + (m->cap - cap) * sizeof(*m->s);
    return iv;
}

static void idv_map_free(struct ebb_map *m)
{
    for (size_t i = 0; i < m->cap; i++) {
        if (ebb__map_live(m, i)) {
            struct idv *iv = m->s[i].v;
            free(iv->v);
            free(iv);
        }
    }
    ebb__map_free(m);
}

struct buf {
    char *p;
    size_t len, cap;
};

static int buf_reserve(struct buf *b, size_t n)
{
    if (n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *p;
        while (cap < n + 1)
            cap *= 2;
        if ((p = realloc(b->p, cap)) == NULL)
            return EBB_ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    return 0;
}

static void buf_put(struct buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;   /* room was reserved by the caller */
    memcpy(b->p + b->len, s ? s : "", n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_putc(struct buf *b, char c)
{
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
}

static int cmp_cstr(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return strcmp(x ? x : "", y ? y : "");
}

/* Present or not, and the value (NULL when empty). */
/* ebb_labels_lookup, where an empty key is in no label map. */
static bool label_lookup(const struct ebb_labels *l, ebb_str key, ebb_str *val)
{
    return ebb_str_len(key) > 0 && ebb_labels_lookup(l, key, val);
}

static bool str_eq(ebb_str a, ebb_str b)
{
    return a == b || (ebb_str_len(a) == 0 && ebb_str_len(b) == 0);
}

/* ---- RemoveDuplicates: where a duplicate could go ----------------------- */

/* Some required node affinity term fails to parse. nodeaffinity's Match
 * then returns (false, err) unless another term matches, and upstream's
 * getTargetNodes only skips a node on (false, nil). */
static bool required_unparsable(const struct ebb_pod *p)
{
    const struct ebb_affinity *a = p->affinity;

    if (a == NULL || !a->has_required)
        return false;
    for (uint16_t t = 0; t < a->nrequired; t++)
        if (!ebb_node_term_parses(&a->required[t]))
            return true;
    return false;
}

static bool node_selector_labels_match(const struct ebb_pod *p, const struct ebb_node *n)
{
    for (uint32_t i = 0; i < p->node_selector.n; i++) {
        ebb_str have = NULL;
        if (!label_lookup(&n->labels, p->node_selector.kv[i].key, &have) ||
            !str_eq(have, p->node_selector.kv[i].value))
            return false;
    }
    return true;
}

/* getTargetNodes' test: NoSchedule and NoExecute taints tolerated, and
 * utils.PodMatchNodeSelector does not say a clean "no". */
static bool feasible(const struct ebb_pod *p, const struct ebb_node *n)
{
    if (!ebb_pod_tolerates_node_taints(p, n, EBB_EFFECT_NO_SCHEDULE | EBB_EFFECT_NO_EXECUTE))
        return false;
    if (ebb_pod_matches_node_selector(p, n))
        return true;
    return node_selector_labels_match(p, n) && required_unparsable(p);
}

/* Two pods that land on the same nodes for sure: equal tolerations,
 * nodeSelector and required node affinity. Upstream compares these up to
 * order; comparing them as written only finds fewer equal pods, and as
 * equal pods give equal answers the result is the same. */
static bool same_placement(const struct ebb_pod *a, const struct ebb_pod *b)
{
    return a->ntolerations == b->ntolerations &&
           ebb_tolerations_same(a->tolerations, b->tolerations, a->ntolerations) &&
           ebb_pod_node_affinity_equal(a, b);
}

/* ---- RemoveDuplicates: grouping ------------------------------------------ */

struct gnode {
    ebb_str node;
    struct podv dups;
};

struct grp {
    ebb_str ns, kind, name;
    ebb_str images;                  /* a reference */
    uint64_t hash;                   /* of (ns, kind, name, images) by address */
    uint32_t occ;
    uint32_t nnodes, capnodes;
    struct gnode *nodes;
};

/* One owner x image key of a pod, by address: with interned strings and no
 * '/' inside namespace, kind or name, equal keys are equal triples. */
struct tuple {
    ebb_str kind, name, image;
};

/* A key list seen on a node: its tuples are tup[off .. off + n). */
struct seenkeys {
    ebb_str node, ns;
    uint64_t hash;
    uint32_t off, n;
};

/* Open addressing over ids + 1, by a 64-bit hash; callers compare. */
struct htab {
    size_t cap, n;                   /* cap: a power of two */
    uint32_t *id;
};

struct dupstate {
    struct grp *g;
    size_t ng, capg;
    /* the text path (see add_pod_text) */
    struct ebb_map gidx;             /* (owner key, NULL) -> index + 1; holds a ref to the key */
    struct ebb_map seen;             /* (node, key list) -> 1; holds a ref to the key list */
    struct buf b;                    /* scratch: keys */
    struct buf kl;                   /* scratch: the joined key list */
    const char **imgs;
    const char **keys;
    size_t capimgs, capkeys;
    /* the address path (see add_pod_fast) */
    ebb_str empty;                   /* "" (a reference): what an absent string joins as */
    struct htab gtab;                /* groups by grp.hash */
    struct htab stab;                /* sk by seenkeys.hash */
    struct seenkeys *sk;
    size_t nsk, capsk;
    struct tuple *tup;               /* the tuples of sk[] */
    size_t ntup, captup;
    struct tuple *scratch;
    size_t capscratch;
    ebb_str *held;                   /* joined image lists interned here (references) */
    size_t nheld, capheld;
    struct htab itab;                /* is by imgset.hash */
    struct imgset *is;
    size_t nis, capis;
    ebb_str *iptr;                   /* the images of is[], by address */
    size_t niptr, capiptr;
    ebb_str *iscratch;
    size_t capiscratch;
};

/* A pod's images as a set of addresses, and what they join to. */
struct imgset {
    uint64_t hash;
    uint32_t off, n;                 /* iptr[off .. off + n) */
    ebb_str joined;
};

static void dupstate_free(struct dupstate *s)
{
    for (size_t i = 0; i < s->ng; i++) {
        for (uint32_t j = 0; j < s->g[i].nnodes; j++)
            free(s->g[i].nodes[j].dups.v);
        free(s->g[i].nodes);
        ebb_str_release(s->g[i].images);
    }
    free(s->g);
    for (size_t i = 0; i < s->gidx.cap; i++)
        if (ebb__map_live(&s->gidx, i))
            ebb_str_release(s->gidx.s[i].a);
    ebb__map_free(&s->gidx);
    for (size_t i = 0; i < s->seen.cap; i++)
        if (ebb__map_live(&s->seen, i))
            ebb_str_release(s->seen.s[i].b);
    ebb__map_free(&s->seen);
    free(s->b.p);
    free(s->kl.p);
    free(s->imgs);
    free(s->keys);
    ebb_str_release(s->empty);
    free(s->gtab.id);
    free(s->stab.id);
    free(s->sk);
    free(s->tup);
    free(s->scratch);
    for (size_t i = 0; i < s->nheld; i++)
        ebb_str_release(s->held[i]);
    free(s->held);
    free(s->itab.id);
    free(s->is);
    free(s->iptr);
    free(s->iscratch);
}

static bool kind_excluded(ebb_str kind, const ebb_str *ex, size_t nex)
{
    for (size_t i = 0; i < nex; i++)
        if (ex[i] != NULL && ex[i] == kind)
            return true;
    return false;
}

/* The group of owner key (ns, kind, name, images) -> index, created on
 * first use. */
static long group_of(struct dupstate *s, const struct ebb_pod *p, const struct ebb_owner *o,
                     const char *images)
{
    size_t need = ebb_str_len(p->ns) + ebb_str_len(o->kind) + ebb_str_len(o->name) + strlen(images) + 4;
    ebb_str key, found;
    uintptr_t idx;
    struct grp *g;

    s->b.len = 0;
    if (buf_reserve(&s->b, need) != 0)
        return EBB_ENOMEM;
    /* \x1f cannot appear in any of the parts */
    buf_put(&s->b, p->ns);
    buf_putc(&s->b, '\x1f');
    buf_put(&s->b, o->kind);
    buf_putc(&s->b, '\x1f');
    buf_put(&s->b, o->name);
    buf_putc(&s->b, '\x1f');
    buf_put(&s->b, images);
    found = ebb_str_find(s->b.p, s->b.len);
    if (found != NULL && (idx = (uintptr_t)ebb__map_get(&s->gidx, found, NULL)) != 0)
        return (long)idx - 1;
    if (s->ng == s->capg) {
        size_t cap = s->capg ? s->capg * 2 : 16;
        struct grp *v = realloc(s->g, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        s->g = v;
        s->capg = cap;
    }
    if ((key = ebb_str_intern(s->b.p, s->b.len)) == NULL)
        return EBB_ENOMEM;
    g = &s->g[s->ng];
    memset(g, 0, sizeof(*g));
    if ((g->images = ebb_str_cstr(images)) == NULL) {
        ebb_str_release(key);
        return EBB_ENOMEM;
    }
    if (ebb__map_put(&s->gidx, key, NULL, (void *)(uintptr_t)(s->ng + 1), NULL) != 0) {
        ebb_str_release(key);
        ebb_str_release(g->images);
        return EBB_ENOMEM;
    }
    g->ns = p->ns;
    g->kind = o->kind;
    g->name = o->name;
    return (long)s->ng++;
}

static int group_add_dup(struct grp *g, struct ebb_pod *p)
{
    struct gnode *gn = NULL;

    /* a group has duplicates on few nodes: a scan is enough */
    for (uint32_t i = 0; i < g->nnodes && gn == NULL; i++)
        if (g->nodes[i].node == p->node)
            gn = &g->nodes[i];
    if (gn == NULL) {
        if (g->nnodes == g->capnodes) {
            uint32_t cap = g->capnodes ? g->capnodes * 2 : 4;
            struct gnode *v = realloc(g->nodes, cap * sizeof(*v));
            if (v == NULL)
                return EBB_ENOMEM;
            g->nodes = v;
            g->capnodes = cap;
        }
        gn = &g->nodes[g->nnodes++];
        memset(gn, 0, sizeof(*gn));
        gn->node = p->node;
    }
    return podv_push(&gn->dups, p);
}

static int grow_ptrs(const char ***v, size_t *cap, size_t n)
{
    if (n > *cap) {
        const char **p = realloc(*v, n * sizeof(*p));
        if (p == NULL)
            return EBB_ENOMEM;
        *v = p;
        *cap = n;
    }
    return 0;
}

/* A pod RemoveDuplicates groups: owned, with images, on a node, and no
 * owner of an excluded kind. */
static bool dup_candidate(const struct ebb_pod *p, const ebb_str *ex, size_t nex)
{
    if (p->nowners == 0 || p->nimages == 0 || p->node == NULL)
        return false;
    for (uint16_t i = 0; i < p->nowners; i++)
        if (kind_excluded(p->owners[i].kind, ex, nex))
            return false;
    return true;
}

/* The key text of upstream, built and interned: exact whatever the strings
 * hold, and the path taken when add_pod_fast cannot vouch for addresses. */
static int add_pod_text(struct dupstate *s, struct ebb_pod *p, const ebb_str *ex, size_t nex)
{
    size_t nkeys, need, imglen = 0;
    ebb_str found;
    bool dup;
    long gi[64];
    long *gidx = gi;
    int rc = EBB_ENOMEM;

    if (!dup_candidate(p, ex, nex))
        return 0;
    if (grow_ptrs(&s->imgs, &s->capimgs, p->nimages) != 0)
        return EBB_ENOMEM;
    for (uint16_t i = 0; i < p->nimages; i++) {
        s->imgs[i] = p->images[i] ? p->images[i] : "";
        imglen += strlen(s->imgs[i]) + 1;
    }
    qsort(s->imgs, p->nimages, sizeof(*s->imgs), cmp_cstr);

    /* every owner x image key, each NUL-terminated in s->b, then sorted */
    nkeys = (size_t)p->nowners * p->nimages;
    need = 0;
    for (uint16_t o = 0; o < p->nowners; o++)
        need += p->nimages * (ebb_str_len(p->ns) + ebb_str_len(p->owners[o].kind) +
                              ebb_str_len(p->owners[o].name) + 3) + imglen;
    if (grow_ptrs(&s->keys, &s->capkeys, nkeys) != 0)
        return EBB_ENOMEM;
    s->b.len = 0;
    if (buf_reserve(&s->b, need + imglen + 1) != 0)
        return EBB_ENOMEM;
    for (uint16_t o = 0, k = 0; o < p->nowners; o++) {
        for (uint16_t i = 0; i < p->nimages; i++, k++) {
            s->keys[k] = s->b.p + s->b.len;
            buf_put(&s->b, p->ns);
            buf_putc(&s->b, '/');
            buf_put(&s->b, p->owners[o].kind);
            buf_putc(&s->b, '/');
            buf_put(&s->b, p->owners[o].name);
            buf_putc(&s->b, '/');
            buf_put(&s->b, s->imgs[i]);
            s->b.len++;   /* keep the NUL */
        }
    }
    qsort(s->keys, nkeys, sizeof(*s->keys), cmp_cstr);
    s->kl.len = 0;
    if (buf_reserve(&s->kl, s->b.len + 1) != 0)
        return EBB_ENOMEM;
    for (size_t k = 0; k < nkeys; k++) {
        if (k > 0)
            buf_putc(&s->kl, '\x1e');
        buf_put(&s->kl, s->keys[k]);
    }

    /* owner keys: the images sorted and joined by "#" (s->b is free again) */
    s->b.len = 0;
    if (buf_reserve(&s->b, imglen + 1) != 0)
        return EBB_ENOMEM;
    for (uint16_t i = 0; i < p->nimages; i++) {
        if (i > 0)
            buf_putc(&s->b, '#');
        buf_put(&s->b, s->imgs[i]);
    }
    if (p->nowners > EBB_ARRAY_LEN(gi) && (gidx = malloc(p->nowners * sizeof(*gidx))) == NULL)
        return EBB_ENOMEM;
    {
        /* group_of reuses s->b: keep the images text aside */
        char *images = strdup(s->b.p);
        if (images == NULL)
            goto out;
        for (uint16_t o = 0; o < p->nowners; o++) {
            if ((gidx[o] = group_of(s, p, &p->owners[o], images)) < 0) {
                free(images);
                goto out;
            }
            s->g[gidx[o]].occ++;
        }
        free(images);
    }

    found = ebb_str_find(s->kl.p, s->kl.len);
    dup = found != NULL && ebb__map_get(&s->seen, p->node, found) != NULL;
    if (dup) {
        for (uint16_t o = 0; o < p->nowners; o++)
            if (group_add_dup(&s->g[gidx[o]], p) != 0)
                goto out;
    } else {
        ebb_str kl = ebb_str_intern(s->kl.p, s->kl.len);
        if (kl == NULL)
            goto out;
        if (ebb__map_put(&s->seen, p->node, kl, (void *)1, NULL) != 0) {
            ebb_str_release(kl);
            goto out;
        }
    }
    rc = 0;
out:
    if (gidx != gi)
        free(gidx);
    return rc;
}

/* ---- RemoveDuplicates: grouping by address -------------------------------- */

/* The text keys above hash every byte of two strings per pod. Interned
 * strings compare by address, so the same grouping is a hash over
 * addresses: an owner key is (namespace, kind, name, joined images), a key
 * list the multiset of (kind, name, image) triples of the pod's namespace.
 * A triple stands for its text "ns/kind/name/image" only when namespace,
 * kind and name hold no '/' (else two triples could join to one text): an
 * owner key with one sends the whole call down the text path. */
#define FALLBACK 1

static uint64_t hmix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static uint64_t haddr(uint64_t h, const void *p)
{
    return hmix(h, (uint64_t)(uintptr_t)p);
}

static int htab_grow(struct htab *t, const void *owner, uint64_t (*hash_of)(const void *, uint32_t))
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    uint32_t *v = calloc(cap, sizeof(*v));

    if (v == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < t->cap; i++) {
        size_t j;
        if (t->id[i] == 0)
            continue;
        for (j = hash_of(owner, t->id[i] - 1) & (cap - 1); v[j] != 0; j = (j + 1) & (cap - 1))
            ;
        v[j] = t->id[i];
    }
    free(t->id);
    t->id = v;
    t->cap = cap;
    return 0;
}

/* The slot to insert `id` of hash h into (the caller found no equal entry). */
static int htab_add(struct htab *t, uint64_t h, uint32_t id, const void *owner,
                    uint64_t (*hash_of)(const void *, uint32_t))
{
    size_t j;

    if ((t->n + 1) * 2 > t->cap && htab_grow(t, owner, hash_of) != 0)
        return EBB_ENOMEM;
    for (j = h & (t->cap - 1); t->id[j] != 0; j = (j + 1) & (t->cap - 1))
        ;
    t->id[j] = id + 1;
    t->n++;
    return 0;
}

static uint64_t grp_hash(const void *s, uint32_t id)
{
    return ((const struct dupstate *)s)->g[id].hash;
}

static uint64_t sk_hash(const void *s, uint32_t id)
{
    return ((const struct dupstate *)s)->sk[id].hash;
}

static bool has_slash(ebb_str s)
{
    return s != NULL && strchr(s, '/') != NULL;
}

static int cmp_tuple(const struct tuple *a, const struct tuple *b)
{
    if (a->kind != b->kind)
        return (uintptr_t)a->kind < (uintptr_t)b->kind ? -1 : 1;
    if (a->name != b->name)
        return (uintptr_t)a->name < (uintptr_t)b->name ? -1 : 1;
    if (a->image != b->image)
        return (uintptr_t)a->image < (uintptr_t)b->image ? -1 : 1;
    return 0;
}

static uint64_t is_hash(const void *s, uint32_t id)
{
    return ((const struct dupstate *)s)->is[id].hash;
}

/* The images of a pod joined as upstream's imagesHash (sorted, "#"), as an
 * interned string: the image itself for one container. */
static ebb_str join_text(struct dupstate *s, const struct ebb_pod *p)
{
    size_t len = 0;
    ebb_str j;

    if (grow_ptrs(&s->imgs, &s->capimgs, p->nimages) != 0)
        return NULL;
    for (uint16_t i = 0; i < p->nimages; i++) {
        const char *im = p->images[i] ? p->images[i] : "";
        uint16_t k = i;
        /* insertion sort: a pod has a handful of containers */
        while (k > 0 && strcmp(s->imgs[k - 1], im) > 0) {
            s->imgs[k] = s->imgs[k - 1];
            k--;
        }
        s->imgs[k] = im;
        len += strlen(im) + 1;
    }
    s->b.len = 0;
    if (buf_reserve(&s->b, len + 1) != 0)
        return NULL;
    for (uint16_t i = 0; i < p->nimages; i++) {
        if (i > 0)
            buf_putc(&s->b, '#');
        buf_put(&s->b, s->imgs[i]);
    }
    if ((j = ebb_str_find(s->b.p, s->b.len)) != NULL)
        return j;   /* alive through the call: nothing is released meanwhile */
    if (s->nheld == s->capheld) {
        size_t cap = s->capheld ? s->capheld * 2 : 16;
        ebb_str *v = realloc(s->held, cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        s->held = v;
        s->capheld = cap;
    }
    if ((j = ebb_str_intern(s->b.p, s->b.len)) == NULL)
        return NULL;
    s->held[s->nheld++] = j;
    return j;
}

/* join_text, remembered by the set of image addresses: pods with several
 * containers repeat a few sets (an app and its sidecars). */
static ebb_str joined_images(struct dupstate *s, const struct ebb_pod *p)
{
    uint16_t n = p->nimages;
    uint64_t h;
    ebb_str j;

    if (n == 1)
        return p->images[0] ? p->images[0] : s->empty;
    if (n > s->capiscratch) {
        ebb_str *v = realloc(s->iscratch, n * sizeof(*v));
        if (v == NULL)
            return NULL;
        s->iscratch = v;
        s->capiscratch = n;
    }
    for (uint16_t i = 0; i < n; i++) {
        ebb_str im = p->images[i] ? p->images[i] : s->empty;
        uint16_t k = i;
        while (k > 0 && (uintptr_t)s->iscratch[k - 1] > (uintptr_t)im) {
            s->iscratch[k] = s->iscratch[k - 1];
            k--;
        }
        s->iscratch[k] = im;
    }
    h = hmix(0, n);
    for (uint16_t i = 0; i < n; i++)
        h = haddr(h, s->iscratch[i]);
    for (size_t k = s->itab.cap ? h & (s->itab.cap - 1) : 0; s->itab.cap && s->itab.id[k] != 0;
         k = (k + 1) & (s->itab.cap - 1)) {
        const struct imgset *e = &s->is[s->itab.id[k] - 1];
        if (e->hash == h && e->n == n && memcmp(&s->iptr[e->off], s->iscratch, n * sizeof(ebb_str)) == 0)
            return e->joined;
    }
    if ((j = join_text(s, p)) == NULL)
        return NULL;
    if (s->nis == s->capis) {
        size_t cap = s->capis ? s->capis * 2 : 64;
        struct imgset *v = realloc(s->is, cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        s->is = v;
        s->capis = cap;
    }
    if (s->niptr + n > s->capiptr) {
        size_t cap = s->capiptr ? s->capiptr * 2 : 256;
        ebb_str *v;
        while (cap < s->niptr + n)
            cap *= 2;
        if ((v = realloc(s->iptr, cap * sizeof(*v))) == NULL)
            return NULL;
        s->iptr = v;
        s->capiptr = cap;
    }
    memcpy(&s->iptr[s->niptr], s->iscratch, n * sizeof(ebb_str));
    s->is[s->nis] = (struct imgset){ h, (uint32_t)s->niptr, n, j };
    s->niptr += n;
    s->nis++;
    if (htab_add(&s->itab, h, (uint32_t)(s->nis - 1), s, is_hash) != 0)
        return NULL;
    return j;
}

/* The group of an owner key, made on first use; GROUP_TEXT when its
 * namespace, kind or name holds a '/' (checked once per owner key: every
 * owner of every pod comes through here). */
#define GROUP_TEXT (-1000L)

static long group_fast(struct dupstate *s, ebb_str ns, ebb_str kind, ebb_str name, ebb_str images)
{
    uint64_t h = haddr(haddr(haddr(haddr(0, ns), kind), name), images);
    struct grp *g;

    for (size_t j = s->gtab.cap ? h & (s->gtab.cap - 1) : 0; s->gtab.cap && s->gtab.id[j] != 0;
         j = (j + 1) & (s->gtab.cap - 1)) {
        g = &s->g[s->gtab.id[j] - 1];
        if (g->hash == h && g->ns == ns && g->kind == kind && g->name == name && g->images == images)
            return (long)(s->gtab.id[j] - 1);
    }
    if (has_slash(ns) || has_slash(kind) || has_slash(name))
        return GROUP_TEXT;
    if (s->ng == s->capg) {
        size_t cap = s->capg ? s->capg * 2 : 16;
        struct grp *v = realloc(s->g, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        s->g = v;
        s->capg = cap;
    }
    g = &s->g[s->ng];
    memset(g, 0, sizeof(*g));
    g->ns = ns;
    g->kind = kind;
    g->name = name;
    g->hash = h;
    g->images = ebb_str_ref(images);
    s->ng++;
    if (htab_add(&s->gtab, h, (uint32_t)(s->ng - 1), s, grp_hash) != 0)
        return EBB_ENOMEM;   /* the group stays, unindexed: freed with the state */
    return (long)(s->ng - 1);
}

/* Room for npods pods of one owner and one image, so that the arrays are
 * not copied as they grow. */
static int reserve_fast(struct dupstate *s, size_t npods)
{
    size_t cap = 1024;

    while (cap < npods * 2)
        cap *= 2;
    if ((s->stab.id = calloc(cap, sizeof(*s->stab.id))) == NULL)
        return EBB_ENOMEM;
    s->stab.cap = cap;
    if (npods == 0)
        return 0;
    if ((s->sk = malloc(npods * sizeof(*s->sk))) == NULL ||
        (s->tup = malloc(npods * sizeof(*s->tup))) == NULL)
        return EBB_ENOMEM;
    s->capsk = s->captup = npods;
    return 0;
}

/* add_pod_text's result for pods whose strings allow it; FALLBACK when a
 * namespace, kind or name holds a '/' (see group_fast). */
static int add_pod_fast(struct dupstate *s, struct ebb_pod *p, const ebb_str *ex, size_t nex)
{
    ebb_str images;
    size_t nkeys;
    uint64_t h;
    long gi[64];
    long *gidx = gi;
    int rc = EBB_ENOMEM;

    if (!dup_candidate(p, ex, nex))
        return 0;
    if ((images = joined_images(s, p)) == NULL)
        return EBB_ENOMEM;
    if (p->nowners > EBB_ARRAY_LEN(gi) && (gidx = malloc(p->nowners * sizeof(*gidx))) == NULL)
        return EBB_ENOMEM;
    for (uint16_t o = 0; o < p->nowners; o++) {
        const struct ebb_owner *ow = &p->owners[o];
        if ((gidx[o] = group_fast(s, p->ns ? p->ns : s->empty, ow->kind ? ow->kind : s->empty,
                                  ow->name ? ow->name : s->empty, images)) < 0) {
            if (gidx[o] == GROUP_TEXT)
                rc = FALLBACK;
            goto out;
        }
        s->g[gidx[o]].occ++;
    }

    /* the key list: every owner x image triple, in address order */
    nkeys = (size_t)p->nowners * p->nimages;
    if (nkeys > s->capscratch) {
        struct tuple *v = realloc(s->scratch, nkeys * sizeof(*v));
        if (v == NULL)
            goto out;
        s->scratch = v;
        s->capscratch = nkeys;
    }
    for (size_t k = 0; k < nkeys; k++) {
        const struct ebb_owner *ow = &p->owners[k / p->nimages];
        ebb_str im = p->images[k % p->nimages];
        struct tuple t = { ow->kind ? ow->kind : s->empty, ow->name ? ow->name : s->empty,
                           im ? im : s->empty };
        size_t at = k;
        while (at > 0 && cmp_tuple(&s->scratch[at - 1], &t) > 0) {
            s->scratch[at] = s->scratch[at - 1];
            at--;
        }
        s->scratch[at] = t;
    }
    h = haddr(haddr(hmix(0, nkeys), p->node), p->ns);
    for (size_t k = 0; k < nkeys; k++)
        h = haddr(haddr(haddr(h, s->scratch[k].kind), s->scratch[k].name), s->scratch[k].image);
    for (size_t j = s->stab.cap ? h & (s->stab.cap - 1) : 0; s->stab.cap && s->stab.id[j] != 0;
         j = (j + 1) & (s->stab.cap - 1)) {
        const struct seenkeys *sk = &s->sk[s->stab.id[j] - 1];
        if (sk->hash == h && sk->node == p->node && sk->ns == p->ns && sk->n == nkeys &&
            memcmp(&s->tup[sk->off], s->scratch, nkeys * sizeof(*s->scratch)) == 0) {
            /* a duplicate: under every owner key of it */
            for (uint16_t o = 0; o < p->nowners; o++)
                if (group_add_dup(&s->g[gidx[o]], p) != 0)
                    goto out;
            rc = 0;
            goto out;
        }
    }
    if (s->nsk == s->capsk) {
        size_t cap = s->capsk ? s->capsk * 2 : 1024;
        struct seenkeys *v = realloc(s->sk, cap * sizeof(*v));
        if (v == NULL)
            goto out;
        s->sk = v;
        s->capsk = cap;
    }
    if (s->ntup + nkeys > s->captup) {
        size_t cap = s->captup ? s->captup * 2 : 4096;
        struct tuple *v;
        while (cap < s->ntup + nkeys)
            cap *= 2;
        if ((v = realloc(s->tup, cap * sizeof(*v))) == NULL)
            goto out;
        s->tup = v;
        s->captup = cap;
    }
    if (s->ntup + nkeys > UINT32_MAX)
        goto out;
    memcpy(&s->tup[s->ntup], s->scratch, nkeys * sizeof(*s->scratch));
    s->sk[s->nsk] = (struct seenkeys){ p->node, p->ns, h, (uint32_t)s->ntup, (uint32_t)nkeys };
    s->ntup += nkeys;
    s->nsk++;
    if (htab_add(&s->stab, h, (uint32_t)(s->nsk - 1), s, sk_hash) != 0)
        goto out;
    rc = 0;
out:
    if (gidx != gi)
        free(gidx);
    return rc;
}

static int cmp_group(const void *a, const void *b)
{
    const struct ebb_dup_group *x = a, *y = b;
    int r;

    if ((r = ebb_str_cmp(x->ns, y->ns)) != 0 || (r = ebb_str_cmp(x->kind, y->kind)) != 0 ||
        (r = ebb_str_cmp(x->name, y->name)) != 0)
        return r;
    return ebb_str_cmp(x->images, y->images);
}

static int cmp_dup_node(const void *a, const void *b)
{
    const struct ebb_dup_node *x = a, *y = b;
    return ebb_str_cmp(x->node_name, y->node_name);
}

static int cmp_node_ptr(const void *a, const void *b)
{
    const struct ebb_node *x = *(const struct ebb_node *const *)a;
    const struct ebb_node *y = *(const struct ebb_node *const *)b;
    return ebb_str_cmp(x->name, y->name);
}

/* What one placement (tolerations, nodeSelector, required node affinity)
 * gives over the nodes. Owners share a handful of placements, so the
 * answers are kept across groups: a group costs its distinct placements'
 * lookups, not a feasibility check of every node. */
struct placement {
    const struct ebb_pod *rep;
    uint64_t hash;
    size_t count;                    /* feasible nodes */
    bool *hit;                       /* per node */
};

#define MAX_PLACEMENTS 1024          /* past this, answers are not kept */

struct placements {
    struct placement *v;
    size_t n, cap;
    bool nodes_sorted;               /* nodes[] come by name: targets need no sort */
};

static void placements_free(struct placements *pl)
{
    for (size_t i = 0; i < pl->n; i++)
        free(pl->v[i].hit);
    free(pl->v);
}

static uint64_t req_hash(uint64_t h, const struct ebb_req *r)
{
    h = hmix(haddr(h, r->key), ((uint64_t)r->op << 32) | r->nvalues);
    h = hmix(h, (uint64_t)r->num);
    for (uint16_t i = 0; i < r->nvalues; i++)
        h = haddr(h, r->values[i]);
    return h;
}

/* A hash of what same_placement compares. */
static uint64_t placement_hash(const struct ebb_pod *p)
{
    const struct ebb_affinity *a = p->affinity;
    bool r = a && a->has_required;
    uint64_t h = hmix(hmix(hmix(0, p->ntolerations), p->node_selector.n), r);

    for (uint16_t i = 0; i < p->ntolerations; i++) {
        const struct ebb_toleration *t = &p->tolerations[i];
        h = hmix(haddr(haddr(h, t->key), t->value), ((uint64_t)t->op << 8) | t->effect);
    }
    for (uint32_t i = 0; i < p->node_selector.n; i++)
        h = haddr(haddr(h, p->node_selector.kv[i].key), p->node_selector.kv[i].value);
    for (uint16_t t = 0; r && t < a->nrequired; t++) {
        const struct ebb_node_term *nt = &a->required[t];
        h = hmix(h, ((uint64_t)nt->nexprs << 16) | nt->nfields);
        for (uint16_t i = 0; i < nt->nexprs; i++)
            h = req_hash(h, &nt->exprs[i]);
        for (uint16_t i = 0; i < nt->nfields; i++)
            h = req_hash(h, &nt->fields[i]);
    }
    return h;
}

/* The feasible nodes of p's placement: *count of them, flags per node in
 * the returned array (kept, or `scratch` once MAX_PLACEMENTS are kept);
 * NULL when out of memory. */
static const bool *placement_hits(struct placements *pl, const struct ebb_pod *p,
                                  struct ebb_node *const *nodes, size_t nnodes, bool *scratch,
                                  size_t *count)
{
    uint64_t h = placement_hash(p);
    bool *hit = scratch;
    size_t n = 0;

    for (size_t i = 0; i < pl->n; i++) {
        if (pl->v[i].hash == h && same_placement(pl->v[i].rep, p)) {
            *count = pl->v[i].count;
            return pl->v[i].hit;
        }
    }
    if (pl->n < MAX_PLACEMENTS) {
        if (pl->n == pl->cap) {
            size_t cap = pl->cap ? pl->cap * 2 : 16;
            struct placement *v = realloc(pl->v, cap * sizeof(*v));
            if (v == NULL)
                return NULL;
            pl->v = v;
            pl->cap = cap;
        }
        if ((hit = malloc(nnodes + 1)) == NULL)
            return NULL;
    }
    for (size_t k = 0; k < nnodes; k++)
        if ((hit[k] = feasible(p, nodes[k])))
            n++;
    if (hit != scratch)
        pl->v[pl->n++] = (struct placement){ p, h, n, hit };
    *count = n;
    return hit;
}

/* Fill a group's feasible nodes, ntargets, upper_avg and first_evict
 * (getTargetNodes and the loop after it). `hit` is a scratch array of
 * nnodes. A group whose duplicates share one placement (most do) points at
 * that placement's answer: no pass over the nodes per group. */
static int decide(struct ebb_dup_group *g, struct ebb_node *const *nodes, size_t nnodes,
                  bool *hit, struct placements *pl)
{
    struct podv reps = { 0 };
    uint32_t ntargets = 0;
    bool *mark = NULL;

    for (uint32_t i = 0; i < g->nnodes; i++) {
        for (uint32_t j = 0; j < g->nodes[i].ndups; j++) {
            struct ebb_pod *p = g->nodes[i].dups[j];
            bool known = false;
            for (uint32_t r = 0; r < reps.n && !known; r++)
                known = same_placement(reps.v[r], p);
            if (!known && podv_push(&reps, p) != 0) {
                free(reps.v);
                return EBB_ENOMEM;
            }
        }
    }
    for (uint32_t r = 0; r < reps.n; r++) {
        size_t count = 0;
        const bool *h = placement_hits(pl, reps.v[r], nodes, nnodes, hit, &count);
        if (h == NULL)
            goto nomem;
        if (count <= 1)
            continue;   /* a pod's nodes count only when there are two */
        if (reps.n == 1 && h != hit) {
            g->feasible = h;
            ntargets = (uint32_t)count;
            break;
        }
        if (mark == NULL && (mark = calloc(nnodes + 1, sizeof(*mark))) == NULL)
            goto nomem;
        for (size_t k = 0; k < nnodes; k++)
            mark[k] = mark[k] || h[k];
    }
    free(reps.v);
    if (mark != NULL) {
        for (size_t k = 0; k < nnodes; k++)
            ntargets += mark[k];
        g->feasible = mark;
        g->owns_feasible = true;
    }
    g->ntargets = ntargets;
    g->upper_avg = ntargets >= 2 ? (g->occurrences + ntargets - 1) / ntargets : 0;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        struct ebb_dup_node *dn = &g->nodes[i];
        dn->first_evict = dn->ndups;
        /* the duplicates leave out the first pod: ndups + 1 on the node */
        if (g->upper_avg > 0 && dn->ndups + 1 > g->upper_avg)
            dn->first_evict = g->upper_avg - 1;
    }
    return 0;
nomem:
    free(reps.v);
    free(mark);
    return EBB_ENOMEM;
}

struct ebb_dups_private {
    struct ebb_node **nodes;         /* a copy of the nodes given */
    size_t nnodes;
    struct placements pl;            /* the answers groups point at */
};

int ebb_dups_targets(struct ebb_dups *d, size_t i)
{
    struct ebb_dup_group *g;
    uint32_t n = 0;

    if (d == NULL || i >= d->ngroups)
        return EBB_EINVAL;
    g = &d->groups[i];
    if (g->targets != NULL || g->ntargets == 0 || g->feasible == NULL)
        return 0;
    if ((g->targets = malloc(g->ntargets * sizeof(*g->targets))) == NULL)
        return EBB_ENOMEM;
    for (size_t k = 0; k < d->priv->nnodes && n < g->ntargets; k++)
        if (g->feasible[k])
            g->targets[n++] = d->priv->nodes[k];
    if (!d->priv->pl.nodes_sorted)
        qsort(g->targets, n, sizeof(*g->targets), cmp_node_ptr);
    return 0;
}

void ebb_dups_destroy(struct ebb_dups *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; i < d->ngroups; i++) {
        struct ebb_dup_group *g = &d->groups[i];
        for (uint32_t j = 0; j < g->nnodes; j++)
            free(g->nodes[j].dups);
        free(g->nodes);
        free(g->targets);
        if (g->owns_feasible)
            free((void *)g->feasible);
        ebb_str_release(g->images);
    }
    free(d->groups);
    if (d->priv != NULL) {
        free(d->priv->nodes);
        placements_free(&d->priv->pl);
        free(d->priv);
    }
    free(d);
}

#define STOPPED(stop) ((stop) != NULL && *(stop) != 0)

int ebb_dups_find(struct ebb_pod *const *pods, size_t npods,
                  struct ebb_node *const *nodes, size_t nnodes,
                  const ebb_str *exclude_kinds, size_t nexclude,
                  const atomic_int *stop, struct ebb_dups **out)
{
    struct dupstate s;
    struct ebb_dups *d = NULL;
    struct ebb_dups_private *pv = NULL;
    bool *hit = NULL;
    struct ebb_map bynode;
    int rc = EBB_ENOMEM;

    if (out == NULL || (pods == NULL && npods > 0) || (nodes == NULL && nnodes > 0) ||
        (exclude_kinds == NULL && nexclude > 0))
        return EBB_EINVAL;
    memset(&s, 0, sizeof(s));
    ebb__map_init(&s.gidx);
    ebb__map_init(&s.seen);
    ebb__map_init(&bynode);
    if ((s.empty = ebb_str_intern("", 0)) == NULL || reserve_fast(&s, npods) != 0)
        goto fail;
    for (size_t i = 0; i < npods; i++) {
        if ((i & 1023) == 1023 && STOPPED(stop)) {
            rc = EBB_ELIMIT;
            goto fail;
        }
        if ((rc = add_pod_fast(&s, pods[i], exclude_kinds, nexclude)) == FALLBACK)
            break;
        if (rc != 0)
            goto fail;
    }
    if (rc == FALLBACK) {
        dupstate_free(&s);
        memset(&s, 0, sizeof(s));
        ebb__map_init(&s.gidx);
        ebb__map_init(&s.seen);
        for (size_t i = 0; i < npods; i++) {
            if ((i & 1023) == 1023 && STOPPED(stop)) {
                rc = EBB_ELIMIT;
                goto fail;
            }
            if ((rc = add_pod_text(&s, pods[i], exclude_kinds, nexclude)) != 0)
                goto fail;
        }
    }
    rc = EBB_ENOMEM;
    if ((d = calloc(1, sizeof(*d))) == NULL || (d->priv = pv = calloc(1, sizeof(*pv))) == NULL)
        goto fail;
    if ((pv->nodes = malloc((nnodes + 1) * sizeof(*pv->nodes))) == NULL ||
        (hit = calloc(nnodes + 1, sizeof(*hit))) == NULL)
        goto fail;
    pv->nnodes = nnodes;
    pv->pl.nodes_sorted = true;
    for (size_t k = 0; k < nnodes; k++) {
        pv->nodes[k] = nodes[k];
        if (ebb__map_put(&bynode, nodes[k]->name, NULL, nodes[k], NULL) != 0)
            goto fail;
        if (k > 0 && ebb_str_cmp(nodes[k - 1]->name, nodes[k]->name) >= 0)
            pv->pl.nodes_sorted = false;
    }
    for (size_t i = 0; i < s.ng; i++)
        if (s.g[i].nnodes > 0)
            d->ngroups++;
    if (d->ngroups > 0 && (d->groups = calloc(d->ngroups, sizeof(*d->groups))) == NULL) {
        d->ngroups = 0;
        goto fail;
    }
    d->ngroups = 0;
    for (size_t i = 0; i < s.ng; i++) {
        struct grp *sg = &s.g[i];
        struct ebb_dup_group *g;
        if (sg->nnodes == 0)
            continue;
        if (STOPPED(stop)) {   /* a group's check may visit every node */
            rc = EBB_ELIMIT;
            goto fail;
        }
        g = &d->groups[d->ngroups++];
        g->ns = sg->ns;
        g->kind = sg->kind;
        g->name = sg->name;
        g->images = sg->images;       /* the reference moves */
        sg->images = NULL;
        g->occurrences = sg->occ;
        if ((g->nodes = calloc(sg->nnodes, sizeof(*g->nodes))) == NULL)
            goto fail;
        for (uint32_t j = 0; j < sg->nnodes; j++) {
            struct ebb_dup_node *dn = &g->nodes[g->nnodes++];
            dn->node_name = sg->nodes[j].node;
            dn->node = ebb__map_get(&bynode, dn->node_name, NULL);
            dn->ndups = sg->nodes[j].dups.n;
            dn->dups = sg->nodes[j].dups.v;   /* the array moves */
            sg->nodes[j].dups.v = NULL;
        }
        qsort(g->nodes, g->nnodes, sizeof(*g->nodes), cmp_dup_node);
        if ((rc = decide(g, nodes, nnodes, hit, &pv->pl)) != 0)
            goto fail;
        rc = EBB_ENOMEM;
    }
    if (d->ngroups > 1)
        qsort(d->groups, d->ngroups, sizeof(*d->groups), cmp_group);
    free(hit);
    ebb__map_free(&bynode);
    dupstate_free(&s);
    *out = d;
    return 0;
fail:
    free(hit);
    ebb__map_free(&bynode);
    dupstate_free(&s);
    ebb_dups_destroy(d);
    return rc;
}

/* ---- the anti-affinity index -------------------------------------------- */

/* An open-addressing map from a pair of addresses to a uint32: hashed by
 * address, so a lookup reads no string (ebb_map hashes through the
 * interned string's header). Order is never iterated. */
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
    struct ebb_map dom;              /* (label value, topo) or (node, NULL) -> idv */
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
    struct ebb_map by_ns;            /* (ns, NULL) -> idv */
    struct ebb_map by_node;          /* (node, NULL) -> idv of the members with
                                        required anti-affinity (the candidates) */
    struct ebb_map keys_done;        /* (label key, NULL) -> 1 once indexed */
    struct pairs by_label;           /* (label key, value) -> range + 1 */
    struct lrange *ranges;           /* members with a label value: ids[off..off+n) */
    uint32_t nranges, capranges;
    uint32_t *ids;
    size_t nids, capids;
    size_t ng, capg;
    struct tgroup **g;
    size_t tcap;                     /* power of two */
    uint32_t *table;                 /* group index + 1, open addressing by hash */
    size_t bytes;                    /* what all of the above holds (charged to
                                        the script that made the index) */
};

static void tgroup_free(struct tgroup *g)
{
    if (g == NULL)
        return;
    idv_map_free(&g->dom);
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
    for (size_t i = 0; i < ix->ng; i++)
        tgroup_free(ix->g[i]);
    free(ix->g);
    free(ix->table);
    idv_map_free(&ix->by_ns);
    idv_map_free(&ix->by_node);
    free(ix->by_label.s);
    free(ix->ranges);
    free(ix->ids);
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
        struct idv *iv;
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
        if ((iv = idv_at(&ix->by_node, p->node, NULL, &ix->bytes)) == NULL ||
            idv_push(iv, id, &ix->bytes) != 0)
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
        struct idv *iv = idv_at(&ix->by_ns, p->ns ? p->ns : ix->empty, NULL, &ix->bytes);
        if (iv == NULL || idv_push(iv, id, &ix->bytes) != 0)
            return EBB_ENOMEM;
    }
    ix->ns_done = true;
    return 0;
}

static ebb_str nz(const struct ebb_anti_index *ix, ebb_str s)
{
    return s != NULL ? s : ix->empty;
}

/* Index every member by its value of `key` (once per key): a counting pass
 * and a filling pass into one array, ids in listing order per value. */
static int index_key(struct ebb_anti_index *ix, ebb_str key)
{
    uint32_t first = ix->nranges, *rng = NULL, nfound = 0, k = 0;
    size_t off = ix->nids, before = ix->capranges * sizeof(*ix->ranges) +
                                    ix->capids * sizeof(*ix->ids) +
                                    ix->by_label.cap * sizeof(*ix->by_label.s) +
                                    ix->keys_done.cap * sizeof(*ix->keys_done.s);
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
            if (ix->nranges == ix->capranges) {
                uint32_t cap = ix->capranges ? ix->capranges * 2 : 64;
                struct lrange *nr = realloc(ix->ranges, cap * sizeof(*nr));
                if (nr == NULL)
                    goto out;
                ix->ranges = nr;
                ix->capranges = cap;
            }
            ix->ranges[ix->nranges++] = (struct lrange){ 0, 0 };
            r = ix->nranges;
            if (pairs_add(&ix->by_label, key, v, r) != 0)
                goto out;
        }
        ix->ranges[r - 1].n++;
        rng[nfound++] = r - 1;
    }
    if (ix->nids + nfound > ix->capids) {
        size_t cap = ix->capids ? ix->capids : 1024;
        uint32_t *ni;
        while (cap < ix->nids + nfound)
            cap *= 2;
        if ((ni = realloc(ix->ids, cap * sizeof(*ni))) == NULL)
            goto out;
        ix->ids = ni;
        ix->capids = cap;
    }
    for (uint32_t r = first; r < ix->nranges; r++) {
        ix->ranges[r].off = (uint32_t)off;
        off += ix->ranges[r].n;
        ix->ranges[r].n = 0;
    }
    for (uint32_t id = 0; id < ix->n && k < nfound; id++) {
        ebb_str v = NULL;
        struct lrange *g;
        if (!label_lookup(&ix->m[id].pod->labels, key, &v))
            continue;
        g = &ix->ranges[rng[k++]];
        ix->ids[g->off + g->n++] = id;
    }
    ix->nids += nfound;
    rc = ebb__map_put(&ix->keys_done, key, NULL, (void *)1, NULL);
out:
    ix->bytes += ix->capranges * sizeof(*ix->ranges) + ix->capids * sizeof(*ix->ids) +
                 ix->by_label.cap * sizeof(*ix->by_label.s) +
                 ix->keys_done.cap * sizeof(*ix->keys_done.s) - before;
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
    struct idv *iv;
    ebb_str a, b;

    if (!m->alive || !ns_in(g, m->pod->ns) || !ebb_selector_matches(g->sel, &m->pod->labels))
        return 0;
    domain_of(ix, g->topo, m->node, &a, &b);
    if ((iv = idv_at(&g->dom, a, b, &ix->bytes)) == NULL || idv_push(iv, id, &ix->bytes) != 0)
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
    struct idv ids = { 0 };
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
                src = ix->ids + ix->ranges[r - 1].off;
                n = ix->ranges[r - 1].n;
            }
        } else {
            const struct idv *iv = ebb__map_get(&ix->by_ns, g->ns[j], NULL);
            if (iv != NULL) {
                src = iv->v;
                n = iv->n;
            }
        }
        for (uint32_t k = 0; k < n && rc == 0; k++)
            rc = idv_push(&ids, src[k], NULL);
    }
    if (rc == 0 && (eq ? eq->nvalues : g->nns) > 1)
        qsort(ids.v, ids.n, sizeof(*ids.v), cmp_u32);
    for (uint32_t k = 0; k < ids.n && rc == 0; k++)
        rc = consider(ix, g, ids.v[k]);
    free(ids.v);
    return rc;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t sel_hash(const struct ebb_selector *s)
{
    uint64_t h = 0;

    if (s == NULL)
        return 1;
    h = mix(h, s->flags);
    for (uint16_t i = 0; i < s->nreqs; i++) {
        const struct ebb_req *r = &s->reqs[i];
        h = mix(h, (uintptr_t)r->key);
        h = mix(h, r->op);
        for (uint16_t j = 0; j < r->nvalues; j++)
            h = mix(h, (uintptr_t)r->values[j]);
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

static int table_grow(struct ebb_anti_index *ix)
{
    size_t cap = ix->tcap ? ix->tcap * 2 : 64;
    uint32_t *t = calloc(cap, sizeof(*t));

    if (t == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < ix->ng; i++) {
        size_t j = (size_t)ix->g[i]->hash & (cap - 1);
        while (t[j] != 0)
            j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)i + 1;
    }
    free(ix->table);
    ix->bytes += (cap - ix->tcap) * sizeof(*t);
    ix->table = t;
    ix->tcap = cap;
    return 0;
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
    h = mix(sel_hash(t->selector), (uintptr_t)t->topology_key);
    for (uint16_t i = 0; i < k; i++)
        h = mix(h, (uintptr_t)sorted[i]);
    if (ix->tcap > 0) {
        for (size_t j = (size_t)h & (ix->tcap - 1); ix->table[j] != 0; j = (j + 1) & (ix->tcap - 1)) {
            g = ix->g[ix->table[j] - 1];
            if (g->hash == h && g->topo == t->topology_key && g->nns == k &&
                memcmp(g->ns, sorted, k * sizeof(*sorted)) == 0 && sel_eq(g->sel, t->selector)) {
                free(sorted);
                return g;
            }
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
    if (build_group(ix, g) != 0)
        goto fail;
    if (ix->ng == ix->capg) {
        size_t cap = ix->capg ? ix->capg * 2 : 16;
        struct tgroup **v = realloc(ix->g, cap * sizeof(*v));
        if (v == NULL)
            goto fail;
        ix->bytes += (cap - ix->capg) * sizeof(*v);
        ix->g = v;
        ix->capg = cap;
    }
    if ((ix->ng + 1) * 2 > ix->tcap && table_grow(ix) != 0)
        goto fail;
    ix->g[ix->ng++] = g;
    {
        size_t j = (size_t)h & (ix->tcap - 1);
        while (ix->table[j] != 0)
            j = (j + 1) & (ix->tcap - 1);
        ix->table[j] = (uint32_t)ix->ng;
    }
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
        const struct idv *iv;
        ebb_str a, b;
        if (g == NULL)
            return NULL;   /* out of memory: no answer is the safe one */
        domain_of(ix, g->topo, node, &a, &b);
        if ((iv = ebb__map_get(&g->dom, a, b)) == NULL)
            continue;
        for (uint32_t k = 0; k < iv->n; k++) {
            const struct member *m = &ix->m[iv->v[k]];
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
    const struct idv *iv;
    struct ebb_pod **v;
    long n = 0;

    if (ix == NULL || out == NULL)
        return EBB_EINVAL;
    *out = NULL;
    if (node == NULL || (iv = ebb__map_get(&ix->by_node, node, NULL)) == NULL || iv->n == 0)
        return 0;
    if ((v = malloc(iv->n * sizeof(*v))) == NULL)
        return EBB_ENOMEM;
    for (uint32_t k = 0; k < iv->n; k++) {
        const struct member *m = &ix->m[iv->v[k]];
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

/* ---- node affinity ------------------------------------------------------ */

int64_t ebb_pod_best_preferred_weight(const struct ebb_pod *pod, struct ebb_node *const *nodes,
                                      size_t nnodes)
{
    int64_t best = 0;

    if (pod == NULL || !ebb_pod_has_preferred_node_affinity(pod))
        return 0;
    for (size_t i = 0; i < nnodes; i++) {
        int64_t w = ebb_pod_preferred_weight(pod, nodes[i]);
        if (w > best)
            best = w;
    }
    return best;
}

const struct ebb_node *ebb_pod_better_preferred_node(const struct ebb_pod *pod, int64_t than,
                                                     struct ebb_node *const *nodes, size_t nnodes,
                                                     int64_t *weight)
{
    if (weight)
        *weight = 0;
    if (pod == NULL || !ebb_pod_has_preferred_node_affinity(pod))
        return NULL;
    for (size_t i = 0; i < nnodes; i++) {
        int64_t w = ebb_pod_preferred_weight(pod, nodes[i]);
        if (w > than) {
            if (weight)
                *weight = w;
            return nodes[i];
        }
    }
    return NULL;
}
