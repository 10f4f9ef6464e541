/* Changes for event-triggered runs; see ebb/changes.h. */
#include <stdlib.h>
#include <string.h>

#include "ebb/changes.h"
#include "base/map.h"

struct fingerprint {
    uint64_t labels, taints;
    bool unschedulable, ready;
};

struct ebb_changes {
    struct ebb_map nodes;         /* (name, -) -> struct fingerprint */
    unsigned bits;
    ebb_str *pending;             /* nodes concerned, references held */
    size_t npending, cappending;
    struct ebb_map pending_set;   /* (node, -) -> 1: each node once */
    ebb_str *taken;               /* what the last take handed out */
    size_t ntaken;
};

int ebb_changes_create(struct ebb_changes **out)
{
    struct ebb_changes *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return EBB_ENOMEM;
    ebb__map_init(&c->nodes);
    ebb__map_init(&c->pending_set);
    *out = c;
    return 0;
}

static void release_all(ebb_str *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ebb_str_release(v[i]);
}

void ebb_changes_destroy(struct ebb_changes *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->nodes.cap; i++) {
        if (ebb__map_live(&c->nodes, i)) {
            ebb_str_release(c->nodes.s[i].a);
            free(c->nodes.s[i].v);
        }
    }
    ebb__map_free(&c->nodes);
    ebb__map_free(&c->pending_set);
    release_all(c->pending, c->npending);
    release_all(c->taken, c->ntaken);
    free(c->pending);
    free(c->taken);
    free(c);
}

/* Order-independent: a sum of mixed pair hashes. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static struct fingerprint fingerprint_of(const struct ebb_node *n)
{
    struct fingerprint f = { 0, 0, n->unschedulable, n->ready };

    for (uint32_t i = 0; i < n->labels.n; i++)
        f.labels += mix(((uint64_t)ebb_str_hash(n->labels.kv[i].key) << 32) ^
                        ebb_str_hash(n->labels.kv[i].value) ^ ebb_str_len(n->labels.kv[i].value));
    for (uint16_t i = 0; i < n->ntaints; i++)
        f.taints += mix(((uint64_t)ebb_str_hash(n->taints[i].key) << 32) ^
                        ((uint64_t)(n->taints[i].value ? ebb_str_hash(n->taints[i].value) : 0) << 3) ^
                        n->taints[i].effect);
    return f;
}

static void concern(struct ebb_changes *c, ebb_str node)
{
    if (node == NULL || ebb__map_get(&c->pending_set, node, NULL) != NULL)
        return;
    if (c->npending == c->cappending) {
        size_t cap = c->cappending ? c->cappending * 2 : 16;
        ebb_str *v = realloc(c->pending, cap * sizeof(*v));
        if (v == NULL)
            return;   /* the run still happens; it sees fewer nodes */
        c->pending = v;
        c->cappending = cap;
    }
    if (ebb__map_put(&c->pending_set, node, NULL, c, NULL) != 0)
        return;
    c->pending[c->npending++] = ebb_str_ref(node);
}

static unsigned node_seen(struct ebb_changes *c, const struct ebb_node *n)
{
    struct fingerprint *old = ebb__map_get(&c->nodes, n->name, NULL), now = fingerprint_of(n);
    ebb_str name = n->name;
    unsigned bits = 0;

    if (old == NULL) {
        struct fingerprint *f = malloc(sizeof(*f));
        if (f == NULL)
            return 0;
        *f = now;
        if (ebb__map_put(&c->nodes, ebb_str_ref(name), NULL, f, NULL) != 0) {
            ebb_str_release(name);
            free(f);
            return 0;
        }
        return EBB_TRIGGER_NODE_ADDED;
    }
    if (old->labels != now.labels)
        bits |= EBB_TRIGGER_NODE_LABELS;
    if (old->taints != now.taints)
        bits |= EBB_TRIGGER_NODE_TAINTS;
    if (old->unschedulable != now.unschedulable)
        bits |= EBB_TRIGGER_NODE_UNSCHEDULABLE;
    if (old->ready != now.ready)
        bits |= EBB_TRIGGER_NODE_READY;
    *old = now;
    return bits;
}

struct relist {
    struct ebb_changes *c;
    unsigned wanted, bits;
};

static void relisted(void *obj, void *ud)
{
    struct relist *rl = ud;
    const struct ebb_node *n = obj;
    unsigned bits = node_seen(rl->c, n) & rl->wanted;

    if (bits != 0) {
        rl->bits |= bits;
        concern(rl->c, n->name);
    }
}

static unsigned node_change(struct ebb_changes *c, const struct ebb_cache *cache, const char *type,
                            ebb_str name)
{
    struct fingerprint *old = ebb__map_get(&c->nodes, name, NULL);
    const struct ebb_node *n;

    if (strcmp(type, "DELETED") == 0) {
        if (old != NULL) {
            ebb__map_del(&c->nodes, name, NULL);
            free(old);
            ebb_str_release(name);
        }
        return 0;
    }
    if ((n = ebb_cache_node(cache, name)) == NULL)
        return 0;
    return node_seen(c, n);
}

unsigned ebb_changes_observe(struct ebb_changes *c, const struct ebb_cache *cache, int kind,
                             const char *type, ebb_str ns, ebb_str name, unsigned wanted)
{
    unsigned bits = 0;
    ebb_str node = NULL;

    if (kind == EBB_KIND_NODE && strcmp(type, "RELIST") == 0) {
        /* a LIST (the first, or after 410 Gone) replaced the nodes at once:
         * every node is looked at; what the list dropped came as DELETED */
        struct relist rl = { c, wanted, 0 };
        ebb_cache_each(cache, EBB_KIND_NODE, relisted, &rl);
        c->bits |= rl.bits;
        return rl.bits;
    }
    if (kind == EBB_KIND_NODE) {
        bits = node_change(c, cache, type, name) & wanted;
        node = name;
    } else if (kind == EBB_KIND_POD && (wanted & (EBB_TRIGGER_POD_ADDED | EBB_TRIGGER_POD_UPDATED))) {
        const struct ebb_pod *p = ebb_cache_pod(cache, ns, name);
        if (p == NULL || p->node == NULL)
            return 0;   /* gone, or not on a node yet */
        node = p->node;
        if (strcmp(type, "ADDED") == 0)
            bits = EBB_TRIGGER_POD_ADDED & wanted;
        else if (strcmp(type, "MODIFIED") == 0)
            bits = EBB_TRIGGER_POD_UPDATED & wanted;
    }
    if (bits != 0) {
        c->bits |= bits;
        concern(c, node);
    }
    return bits;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(ebb_str const *)a, *(ebb_str const *)b);
}

unsigned ebb_changes_take(struct ebb_changes *c, const char *const **nodes, size_t *n)
{
    unsigned bits = c->bits;

    release_all(c->taken, c->ntaken);
    free(c->taken);
    c->taken = c->pending;
    c->ntaken = c->npending;
    c->pending = NULL;
    c->npending = c->cappending = 0;
    c->bits = 0;
    ebb__map_free(&c->pending_set);
    ebb__map_init(&c->pending_set);
    if (c->ntaken > 1)
        qsort(c->taken, c->ntaken, sizeof(*c->taken), cmp_name);
    *nodes = c->taken;
    *n = c->ntaken;
    return bits;
}

/* ---- names of the changes a plugin may react to --------------------------- */

static const char *const trigger_names[EBB_TRIGGER_MAX_BIT] = {
    "node-added", "node-labels", "node-taints", "node-unschedulable", "node-ready",
    "pod-added", "pod-updated",
};

const char *ebb_trigger_name(unsigned bit)
{
    for (int i = 0; i < EBB_TRIGGER_MAX_BIT; i++)
        if (bit == 1u << i)
            return trigger_names[i];
    return "?";
}

unsigned ebb_trigger_parse(const char *name)
{
    for (int i = 0; i < EBB_TRIGGER_MAX_BIT; i++)
        if (strcmp(name, trigger_names[i]) == 0)
            return 1u << i;
    return 0;
}
