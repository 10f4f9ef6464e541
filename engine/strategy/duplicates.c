/* RemoveDuplicates' whole-set math (ebb/groups.h, ebb_dups_*): the pods of
 * every node grouped by owner x image keys, each owner's duplicates, the
 * nodes they could go to and which of them to evict
 * (kubernetes-sigs/descheduler pkg/framework/plugins/removeduplicates).
 * Called by the ebb.duplicates binding (lua/lua_groups.c) during a cycle,
 * on the thread that runs the strategies; pods and nodes are the cache's,
 * borrowed. Linear in the pods given, plus each group's distinct
 * placements over the nodes. */
#include "strategy/groups_int.h"

#include "ebb/affinity.h"
#include "ebb/taints.h"

/* ---- scratch ---------------------------------------------------------------- */

struct podv {
    struct ebb_pod **v;
    uint32_t n, cap;                 /* uint32_t: they move into ebb_dup_node */
};

/* A text built in place, NUL-terminated. */
struct buf {
    char *v;
    size_t n, cap;
};

/* Room for a text of n bytes (and its NUL) in b. */
static int buf_reserve(struct buf *b, size_t n)
{
    return n == SIZE_MAX ? EBB_ENOMEM : ebb__vec_reserve(b, n + 1);
}

static void buf_put(struct buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;   /* room was reserved by the caller */
    memcpy(b->v + b->n, s ? s : "", n);
    b->n += n;
    b->v[b->n] = '\0';
}

static void buf_putc(struct buf *b, char c)
{
    b->v[b->n++] = c;
    b->v[b->n] = '\0';
}

static int cmp_cstr(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return strcmp(x ? x : "", y ? y : "");
}

/* ---- where a duplicate could go --------------------------------------------- */

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

/* ---- grouping -------------------------------------------------------------- */

struct gnode {
    ebb_str node;
    struct podv dups;
};

struct grp {
    ebb_str ns, kind, name;
    ebb_str images;                  /* a reference */
    uint64_t hash;                   /* of (ns, kind, name, images) by address */
    uint32_t occ;
    struct {
        struct gnode *v;
        uint32_t n, cap;
    } nodes;
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

/* A pod's images as a set of addresses, and what they join to. */
struct imgset {
    uint64_t hash;
    uint32_t off, n;                 /* iptr[off .. off + n) */
    ebb_str joined;
};

struct dupstate {
    EBB_VEC(struct grp) g;
    /* the text path (see add_pod_text) */
    struct ebb_map gidx;             /* (owner key, NULL) -> index + 1; holds a ref to the key */
    struct ebb_map seen;             /* (node, key list) -> 1; holds a ref to the key list */
    struct buf b;                    /* scratch: keys */
    struct buf kl;                   /* scratch: the joined key list */
    const char **imgs;               /* scratch */
    const char **keys;               /* scratch */
    size_t capimgs, capkeys;
    /* the address path (see add_pod_fast) */
    ebb_str empty;                   /* "" (a reference): what an absent string joins as */
    struct htab gtab;                /* g by grp.hash */
    struct htab stab;                /* sk by seenkeys.hash */
    EBB_VEC(struct seenkeys) sk;
    EBB_VEC(struct tuple) tup;       /* the tuples of sk[] */
    struct tuple *scratch;
    size_t capscratch;
    EBB_VEC(ebb_str) held;           /* joined image lists interned here (references) */
    struct htab itab;                /* is by imgset.hash */
    EBB_VEC(struct imgset) is;
    EBB_VEC(ebb_str) iptr;           /* the images of is[], by address */
    ebb_str *iscratch;
    size_t capiscratch;
};

static void dupstate_free(struct dupstate *s)
{
    for (size_t i = 0; i < s->g.n; i++) {
        for (uint32_t j = 0; j < s->g.v[i].nodes.n; j++)
            free(s->g.v[i].nodes.v[j].dups.v);
        free(s->g.v[i].nodes.v);
        ebb_str_release(s->g.v[i].images);
    }
    free(s->g.v);
    for (size_t i = 0; i < s->gidx.cap; i++)
        if (ebb__map_live(&s->gidx, i))
            ebb_str_release(s->gidx.s[i].a);
    ebb__map_free(&s->gidx);
    for (size_t i = 0; i < s->seen.cap; i++)
        if (ebb__map_live(&s->seen, i))
            ebb_str_release(s->seen.s[i].b);
    ebb__map_free(&s->seen);
    free(s->b.v);
    free(s->kl.v);
    free(s->imgs);
    free(s->keys);
    ebb_str_release(s->empty);
    free(s->gtab.id);
    free(s->stab.id);
    free(s->sk.v);
    free(s->tup.v);
    free(s->scratch);
    for (size_t i = 0; i < s->held.n; i++)
        ebb_str_release(s->held.v[i]);
    free(s->held.v);
    free(s->itab.id);
    free(s->is.v);
    free(s->iptr.v);
    free(s->iscratch);
}

static void dupstate_init(struct dupstate *s)
{
    memset(s, 0, sizeof(*s));
    ebb__map_init(&s->gidx);
    ebb__map_init(&s->seen);
}

static bool kind_excluded(ebb_str kind, const ebb_str *ex, size_t nex)
{
    for (size_t i = 0; i < nex; i++)
        if (ex[i] != NULL && ex[i] == kind)
            return true;
    return false;
}

/* A new group for an owner key at g.v[g.n], not yet counted in g.n; NULL
 * when out of memory. Both paths make their groups here. */
static struct grp *group_new(struct dupstate *s, ebb_str ns, ebb_str kind, ebb_str name)
{
    struct grp *g;

    if (ebb__vec_reserve(&s->g, s->g.n + 1) != 0)
        return NULL;
    g = &s->g.v[s->g.n];
    memset(g, 0, sizeof(*g));
    g->ns = ns;
    g->kind = kind;
    g->name = name;
    return g;
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

    s->b.n = 0;
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
    found = ebb_str_find(s->b.v, s->b.n);
    if (found != NULL && (idx = (uintptr_t)ebb__map_get(&s->gidx, found, NULL)) != 0)
        return (long)idx - 1;
    if ((g = group_new(s, p->ns, o->kind, o->name)) == NULL)
        return EBB_ENOMEM;
    if ((key = ebb_str_intern(s->b.v, s->b.n)) == NULL)
        return EBB_ENOMEM;
    if ((g->images = ebb_str_cstr(images)) == NULL) {
        ebb_str_release(key);
        return EBB_ENOMEM;
    }
    if (ebb__map_put(&s->gidx, key, NULL, (void *)(uintptr_t)(s->g.n + 1), NULL) != 0) {
        ebb_str_release(key);
        ebb_str_release(g->images);
        return EBB_ENOMEM;
    }
    return (long)s->g.n++;
}

static int group_add_dup(struct grp *g, struct ebb_pod *p)
{
    struct gnode *gn = NULL;

    /* a group has duplicates on few nodes: a scan is enough */
    for (uint32_t i = 0; i < g->nodes.n && gn == NULL; i++)
        if (g->nodes.v[i].node == p->node)
            gn = &g->nodes.v[i];
    if (gn == NULL) {
        if (ebb__vec_push(&g->nodes, (struct gnode){ .node = p->node }) != 0)
            return EBB_ENOMEM;
        gn = &g->nodes.v[g->nodes.n - 1];
    }
    return ebb__vec_push(&gn->dups, p);
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
    if (ebb__reserve(s->imgs, s->capimgs, p->nimages) != 0)
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
    if (ebb__reserve(s->keys, s->capkeys, nkeys) != 0)
        return EBB_ENOMEM;
    s->b.n = 0;
    if (buf_reserve(&s->b, need + imglen + 1) != 0)
        return EBB_ENOMEM;
    for (uint16_t o = 0, k = 0; o < p->nowners; o++) {
        for (uint16_t i = 0; i < p->nimages; i++, k++) {
            s->keys[k] = s->b.v + s->b.n;
            buf_put(&s->b, p->ns);
            buf_putc(&s->b, '/');
            buf_put(&s->b, p->owners[o].kind);
            buf_putc(&s->b, '/');
            buf_put(&s->b, p->owners[o].name);
            buf_putc(&s->b, '/');
            buf_put(&s->b, s->imgs[i]);
            s->b.n++;   /* keep the NUL */
        }
    }
    qsort(s->keys, nkeys, sizeof(*s->keys), cmp_cstr);
    s->kl.n = 0;
    if (buf_reserve(&s->kl, s->b.n + 1) != 0)
        return EBB_ENOMEM;
    for (size_t k = 0; k < nkeys; k++) {
        if (k > 0)
            buf_putc(&s->kl, '\x1e');
        buf_put(&s->kl, s->keys[k]);
    }

    /* owner keys: the images sorted and joined by "#" (s->b is free again) */
    s->b.n = 0;
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
        char *images = strdup(s->b.v);
        if (images == NULL)
            goto out;
        for (uint16_t o = 0; o < p->nowners; o++) {
            if ((gidx[o] = group_of(s, p, &p->owners[o], images)) < 0) {
                free(images);
                goto out;
            }
            s->g.v[gidx[o]].occ++;
        }
        free(images);
    }

    found = ebb_str_find(s->kl.v, s->kl.n);
    dup = found != NULL && ebb__map_get(&s->seen, p->node, found) != NULL;
    if (dup) {
        for (uint16_t o = 0; o < p->nowners; o++)
            if (group_add_dup(&s->g.v[gidx[o]], p) != 0)
                goto out;
    } else {
        ebb_str kl = ebb_str_intern(s->kl.v, s->kl.n);
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

/* ---- grouping by address ------------------------------------------------------ */

/* The text keys above hash every byte of two strings per pod. Interned
 * strings compare by address, so the same grouping is a hash over
 * addresses: an owner key is (namespace, kind, name, joined images), a key
 * list the multiset of (kind, name, image) triples of the pod's namespace.
 * A triple stands for its text "ns/kind/name/image" only when namespace,
 * kind and name hold no '/' (else two triples could join to one text): an
 * owner key with one sends the whole call down the text path. */
#define FALLBACK 1

static uint64_t grp_hash(const void *s, uint32_t id)
{
    return ((const struct dupstate *)s)->g.v[id].hash;
}

static uint64_t sk_hash(const void *s, uint32_t id)
{
    return ((const struct dupstate *)s)->sk.v[id].hash;
}

static uint64_t is_hash(const void *s, uint32_t id)
{
    return ((const struct dupstate *)s)->is.v[id].hash;
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

/* The images of a pod joined as upstream's imagesHash (sorted, "#"), as an
 * interned string: the image itself for one container. */
static ebb_str join_text(struct dupstate *s, const struct ebb_pod *p)
{
    size_t len = 0;
    ebb_str j;

    if (ebb__reserve(s->imgs, s->capimgs, p->nimages) != 0)
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
    s->b.n = 0;
    if (buf_reserve(&s->b, len + 1) != 0)
        return NULL;
    for (uint16_t i = 0; i < p->nimages; i++) {
        if (i > 0)
            buf_putc(&s->b, '#');
        buf_put(&s->b, s->imgs[i]);
    }
    if ((j = ebb_str_find(s->b.v, s->b.n)) != NULL)
        return j;   /* alive through the call: nothing is released meanwhile */
    if (ebb__vec_reserve(&s->held, s->held.n + 1) != 0 ||
        (j = ebb_str_intern(s->b.v, s->b.n)) == NULL)
        return NULL;
    s->held.v[s->held.n++] = j;
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
    if (ebb__reserve(s->iscratch, s->capiscratch, n) != 0)
        return NULL;
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
    HTAB_FOR(&s->itab, h, k) {
        const struct imgset *e = &s->is.v[s->itab.id[k] - 1];
        if (e->hash == h && e->n == n && memcmp(&s->iptr.v[e->off], s->iscratch, n * sizeof(ebb_str)) == 0)
            return e->joined;
    }
    if ((j = join_text(s, p)) == NULL)
        return NULL;
    if (s->iptr.n + n > UINT32_MAX || ebb__vec_reserve(&s->is, s->is.n + 1) != 0 ||
        ebb__vec_reserve(&s->iptr, s->iptr.n + n) != 0)
        return NULL;
    memcpy(&s->iptr.v[s->iptr.n], s->iscratch, n * sizeof(ebb_str));
    s->is.v[s->is.n] = (struct imgset){ h, (uint32_t)s->iptr.n, n, j };
    s->iptr.n += n;
    s->is.n++;
    if (htab_add(&s->itab, h, (uint32_t)(s->is.n - 1), s, is_hash) != 0)
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

    HTAB_FOR(&s->gtab, h, j) {
        g = &s->g.v[s->gtab.id[j] - 1];
        if (g->hash == h && g->ns == ns && g->kind == kind && g->name == name && g->images == images)
            return (long)(s->gtab.id[j] - 1);
    }
    if (has_slash(ns) || has_slash(kind) || has_slash(name))
        return GROUP_TEXT;
    if ((g = group_new(s, ns, kind, name)) == NULL)
        return EBB_ENOMEM;
    g->hash = h;
    g->images = ebb_str_ref(images);
    s->g.n++;
    if (htab_add(&s->gtab, h, (uint32_t)(s->g.n - 1), s, grp_hash) != 0)
        return EBB_ENOMEM;   /* the group stays, unindexed: freed with the state */
    return (long)(s->g.n - 1);
}

/* Room for npods pods of one owner and one image, so that the arrays are
 * not copied as they grow. */
static int reserve_fast(struct dupstate *s, size_t npods)
{
    if (htab_reserve(&s->stab, npods, s, sk_hash) != 0)
        return EBB_ENOMEM;
    if (npods == 0)
        return 0;
    if (ebb__vec_reserve(&s->sk, npods) != 0 || ebb__vec_reserve(&s->tup, npods) != 0)
        return EBB_ENOMEM;
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
        s->g.v[gidx[o]].occ++;
    }

    /* the key list: every owner x image triple, in address order */
    nkeys = (size_t)p->nowners * p->nimages;
    if (ebb__reserve(s->scratch, s->capscratch, nkeys) != 0)
        goto out;
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
    HTAB_FOR(&s->stab, h, j) {
        const struct seenkeys *sk = &s->sk.v[s->stab.id[j] - 1];
        if (sk->hash == h && sk->node == p->node && sk->ns == p->ns && sk->n == nkeys &&
            memcmp(&s->tup.v[sk->off], s->scratch, nkeys * sizeof(*s->scratch)) == 0) {
            /* a duplicate: under every owner key of it */
            for (uint16_t o = 0; o < p->nowners; o++)
                if (group_add_dup(&s->g.v[gidx[o]], p) != 0)
                    goto out;
            rc = 0;
            goto out;
        }
    }
    if (s->tup.n + nkeys > UINT32_MAX || ebb__vec_reserve(&s->sk, s->sk.n + 1) != 0 ||
        ebb__vec_reserve(&s->tup, s->tup.n + nkeys) != 0)
        goto out;
    memcpy(&s->tup.v[s->tup.n], s->scratch, nkeys * sizeof(*s->scratch));
    s->sk.v[s->sk.n] = (struct seenkeys){ p->node, p->ns, h, (uint32_t)s->tup.n, (uint32_t)nkeys };
    s->tup.n += nkeys;
    s->sk.n++;
    if (htab_add(&s->stab, h, (uint32_t)(s->sk.n - 1), s, sk_hash) != 0)
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

/* ---- targets and decisions ---------------------------------------------------- */

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
    EBB_VEC(struct placement) kept;
    bool nodes_sorted;               /* nodes[] come by name: targets need no sort */
};

static void placements_free(struct placements *pl)
{
    for (size_t i = 0; i < pl->kept.n; i++)
        free(pl->kept.v[i].hit);
    ebb__vec_free(&pl->kept);
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

    for (size_t i = 0; i < pl->kept.n; i++) {
        if (pl->kept.v[i].hash == h && same_placement(pl->kept.v[i].rep, p)) {
            *count = pl->kept.v[i].count;
            return pl->kept.v[i].hit;
        }
    }
    if (pl->kept.n < MAX_PLACEMENTS) {
        if (ebb__vec_reserve(&pl->kept, pl->kept.n + 1) != 0 || (hit = malloc(nnodes + 1)) == NULL)
            return NULL;
    }
    for (size_t k = 0; k < nnodes; k++)
        if ((hit[k] = feasible(p, nodes[k])))
            n++;
    if (hit != scratch)
        pl->kept.v[pl->kept.n++] = (struct placement){ p, h, n, hit };
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
            if (!known && ebb__vec_push(&reps, p) != 0)
                goto nomem;
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
    ebb__vec_free(&reps);
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
    ebb__vec_free(&reps);
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

/* Group every candidate pod: by address, or as text when an owner key
 * needs it (see FALLBACK). */
static int group_pods(struct dupstate *s, struct ebb_pod *const *pods, size_t npods,
                      const ebb_str *ex, size_t nex, const atomic_int *stop)
{
    int rc = 0;

    if ((s->empty = ebb_str_intern("", 0)) == NULL || reserve_fast(s, npods) != 0)
        return EBB_ENOMEM;
    for (size_t i = 0; i < npods; i++) {
        if ((i & 1023) == 1023 && STOPPED(stop))
            return EBB_ELIMIT;
        if ((rc = add_pod_fast(s, pods[i], ex, nex)) == FALLBACK)
            break;
        if (rc != 0)
            return rc;
    }
    if (rc != FALLBACK)
        return 0;
    dupstate_free(s);
    dupstate_init(s);
    for (size_t i = 0; i < npods; i++) {
        if ((i & 1023) == 1023 && STOPPED(stop))
            return EBB_ELIMIT;
        if ((rc = add_pod_text(s, pods[i], ex, nex)) != 0)
            return rc;
    }
    return 0;
}

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
    int rc;

    if (out == NULL || (pods == NULL && npods > 0) || (nodes == NULL && nnodes > 0) ||
        (exclude_kinds == NULL && nexclude > 0))
        return EBB_EINVAL;
    dupstate_init(&s);
    ebb__map_init(&bynode);
    if ((rc = group_pods(&s, pods, npods, exclude_kinds, nexclude, stop)) != 0)
        goto fail;
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
    for (size_t i = 0; i < s.g.n; i++)
        if (s.g.v[i].nodes.n > 0)
            d->ngroups++;
    if (d->ngroups > 0 && (d->groups = calloc(d->ngroups, sizeof(*d->groups))) == NULL) {
        d->ngroups = 0;
        goto fail;
    }
    d->ngroups = 0;
    for (size_t i = 0; i < s.g.n; i++) {
        struct grp *sg = &s.g.v[i];
        struct ebb_dup_group *g;
        if (sg->nodes.n == 0)
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
        if ((g->nodes = calloc(sg->nodes.n, sizeof(*g->nodes))) == NULL)
            goto fail;
        for (uint32_t j = 0; j < sg->nodes.n; j++) {
            struct ebb_dup_node *dn = &g->nodes[g->nnodes++];
            dn->node_name = sg->nodes.v[j].node;
            dn->node = ebb__map_get(&bynode, dn->node_name, NULL);
            dn->ndups = sg->nodes.v[j].dups.n;
            dn->dups = sg->nodes.v[j].dups.v;   /* the array moves */
            sg->nodes.v[j].dups.v = NULL;
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
