/* The scheduling cycle of the kube-scheduler model (see ebb/sched.h):
 * the node list and its rotation, filtering up to numFeasibleNodesToFind,
 * scoring, selectHost, the FailedScheduling message, and the accounting
 * of bound pods. The plugins are in sched_filter.c and sched_score.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/quantity.h"
#include "ebb/sched.h"
#include "sched/sched_int.h"
#include "base/vec.h"

static const char *const plugin_names[EBB_SP_MAX] = {
    [EBB_SP_NODE_UNSCHEDULABLE] = "NodeUnschedulable",
    [EBB_SP_NODE_NAME] = "NodeName",
    [EBB_SP_TAINT_TOLERATION] = "TaintToleration",
    [EBB_SP_NODE_AFFINITY] = "NodeAffinity",
    [EBB_SP_NODE_PORTS] = "NodePorts",
    [EBB_SP_NODE_RESOURCES_FIT] = "NodeResourcesFit",
    [EBB_SP_POD_TOPOLOGY_SPREAD] = "PodTopologySpread",
    [EBB_SP_INTER_POD_AFFINITY] = "InterPodAffinity",
    [EBB_SP_BALANCED_ALLOCATION] = "NodeResourcesBalancedAllocation",
    [EBB_SP_IMAGE_LOCALITY] = "ImageLocality",
};

const char *ebb_sched_plugin_name(int id)
{
    return id >= 0 && id < EBB_SP_MAX ? plugin_names[id] : NULL;
}

int ebb_sched_plugin_id(const char *name)
{
    for (int i = 0; name != NULL && i < EBB_SP_MAX; i++)
        if (strcmp(name, plugin_names[i]) == 0)
            return i;
    return -1;
}

uint32_t ebb_sched_nodes_to_find(int32_t percentage, uint32_t n)
{
    int64_t p = percentage, k;

    if (n < 100 || p >= 100)
        return n;
    if (p <= 0) {
        p = 50 - (int64_t)n / 125;
        if (p < 5)
            p = 5;
    }
    k = (int64_t)n * p / 100;
    return k < 100 ? 100 : (uint32_t)k;
}

/* ---- scratch ------------------------------------------------------------- */

struct chunk {
    struct chunk *next;
    size_t len, cap;
    max_align_t data[];
};

void ebb__sched_arena_reset(struct ebb_sched *s)
{
    struct chunk *c = (struct chunk *)s->arena, *next;
    size_t total = 0;

    if (c == NULL)
        return;
    for (struct chunk *k = c; k != NULL; k = k->next)
        total += k->len;
    if (c->next == NULL) {
        c->len = 0;
        return;
    }
    /* one chunk the size of everything the call used, next time */
    for (c = (struct chunk *)s->arena; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    s->arena = NULL;
    if ((c = malloc(sizeof(*c) + total * 2)) != NULL) {
        c->next = NULL;
        c->len = 0;
        c->cap = total * 2;
        s->arena = (char *)c;
    }
}

void *ebb__sched_alloc_list(struct ebb_sched *s, size_t n)
{
    struct chunk *c = (struct chunk *)s->arena;
    void *p;

    n = (n + 15) & ~(size_t)15;
    if (c == NULL || c->len + n > c->cap) {
        size_t cap = n > 65536 ? n : 65536;
        struct chunk *k = malloc(sizeof(*k) + cap);
        if (k == NULL)
            return NULL;
        k->next = c;
        k->len = 0;
        k->cap = cap;
        s->arena = (char *)k;
        c = k;
    }
    p = (char *)c->data + c->len;
    c->len += n;
    return p;
}

void *ebb__sched_alloc(struct ebb_sched *s, size_t n)
{
    void *p = ebb__sched_alloc_list(s, n);

    if (p != NULL)
        memset(p, 0, n);
    return p;
}

struct sarr *ebb__sarr_take(struct ebb_sched *s)
{
    struct sarr *a = s->sarr_free;

    if (a != NULL) {
        s->sarr_free = a->next;
    } else {
        if ((a = calloc(1, sizeof(*a))) == NULL)
            return NULL;
        if ((a->stamp = calloc(s->nnodes + 2, sizeof(*a->stamp))) == NULL ||
            (a->v = malloc((s->nnodes + 2) * sizeof(*a->v))) == NULL) {
            free(a->stamp);
            free(a);
            return NULL;
        }
    }
    if (++s->sarr_clock == 0) {
        /* the stamps went round: clear every array once */
        for (struct sarr *k = s->sarr_free; k != NULL; k = k->next)
            memset(k->stamp, 0, (s->nnodes + 2) * sizeof(*k->stamp));
        for (struct sarr *k = s->sarr_taken; k != NULL; k = k->next)
            memset(k->stamp, 0, (s->nnodes + 2) * sizeof(*k->stamp));
        memset(a->stamp, 0, (s->nnodes + 2) * sizeof(*a->stamp));
        s->sarr_clock = 1;
    }
    a->cur = s->sarr_clock;
    a->next = s->sarr_taken;
    s->sarr_taken = a;
    return a;
}

/* The call's arrays go back to the pool. */
static void sarr_release(struct ebb_sched *s)
{
    while (s->sarr_taken != NULL) {
        struct sarr *a = s->sarr_taken;
        s->sarr_taken = a->next;
        a->next = s->sarr_free;
        s->sarr_free = a;
    }
}

static void sarr_free_all(struct ebb_sched *s)
{
    sarr_release(s);
    while (s->sarr_free != NULL) {
        struct sarr *a = s->sarr_free;
        s->sarr_free = a->next;
        free(a->stamp);
        free(a->v);
        free(a);
    }
}

struct counts *ebb__counts_new(struct ebb_sched *s, struct keycol *col)
{
    struct counts *c = ebb__sched_alloc(s, sizeof(*c));

    if (c == NULL || (c->a = ebb__sarr_take(s)) == NULL)
        return NULL;
    c->col = col;
    return c;
}

/* splitmix64 */
static uint64_t rng_next(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- nodes ---------------------------------------------------------------- */

uint32_t ebb__sched_node_index(const struct ebb_sched *s, ebb_str name)
{
    void *v = name ? ebb__map_get(&s->node_idx, name, NULL) : NULL;
    return v ? (uint32_t)((uintptr_t)v - 1) : UINT32_MAX;
}

static int port_add(struct ebb_sched *s, struct snode *n, const struct ebb_host_port *hp)
{
    struct sport *p;

    if (n->nports == n->cap_ports && ebb__reserve(n->ports, n->cap_ports, (size_t)n->nports + 1) != 0)
        return EBB_ENOMEM;
    p = &n->ports[n->nports++];
    p->ip = hp->ip && hp->ip[0] ? hp->ip : s->any_ip;
    p->proto = hp->protocol && hp->protocol[0] ? hp->protocol : s->tcp;
    p->port = hp->port;
    return 0;
}

/* The host ports of the pods on a node, again (a pod left it). */
static int ports_rebuild(struct ebb_sched *s, struct snode *n)
{
    const struct ebb_podvec *pv = n->pv;
    int rc;

    n->nports = 0;
    n->ports_dirty = false;
    for (uint32_t i = 0; pv != NULL && i < pv->n; i++) {
        const struct ebb_pod *p = pv->v[i];
        if (!ebb_pod_occupies(p))
            continue;
        for (uint16_t k = 0; k < p->nhost_ports; k++)
            if ((rc = port_add(s, n, &p->host_ports[k])) != 0)
                return rc;
    }
    return 0;
}

const struct sport *ebb__sched_ports(struct ebb_sched *s, uint32_t node, uint32_t *n)
{
    struct snode *sn = &s->nodes[node];

    if (sn->ports_dirty && ports_rebuild(s, sn) != 0)
        sn->ports_dirty = true;   /* out of memory: the list read is what is left */
    *n = sn->nports;
    return sn->ports;
}

/* struct shot from node i's record. */
static void hot_sync(struct ebb_sched *s, uint32_t i)
{
    const struct snode *n = &s->nodes[i];

    s->hot[i] = (struct shot){
        .alloc_cpu = n->alloc_cpu, .alloc_mem = n->alloc_mem,
        .req_cpu = n->req_cpu, .req_mem = n->req_mem,
        .nz_cpu = n->nz_cpu, .nz_mem = n->nz_mem,
        .free_eph = ebb_q_sub(n->alloc_eph, n->req_eph),
        .flags = (uint8_t)((n->unschedulable ? HOT_UNSCHEDULABLE : 0) | (n->ntaints ? HOT_TAINTED : 0) |
                           ((int64_t)n->npods + 1 > n->alloc_pods ? HOT_FULL : 0)),
    };
}

/* Node i's sums as the cache keeps them (after a bind or a sync). */
static void mirror(struct ebb_sched *s, uint32_t i)
{
    struct snode *n = &s->nodes[i];
    const struct ebb_podvec *pv = n->pv;

    n->req_cpu = pv ? pv->req[EBB_RES_CPU] : 0;
    n->req_mem = pv ? pv->req[EBB_RES_MEMORY] : 0;
    n->req_eph = pv ? pv->req[EBB_RES_EPHEMERAL] : 0;
    n->nz_cpu = pv ? pv->nz[0] : 0;
    n->nz_mem = pv ? pv->nz[1] : 0;
    n->npods = pv ? pv->nactive : 0;
    hot_sync(s, i);
}

/* A pod starts occupying node i. */
static int account(struct ebb_sched *s, const struct ebb_pod *p, uint32_t i)
{
    struct snode *n = &s->nodes[i];
    int rc;

    /* its sums are the cache's (mirror) */
    for (uint16_t k = 0; k < p->nhost_ports; k++)
        if (!n->ports_dirty && (rc = port_add(s, n, &p->host_ports[k])) != 0)
            return rc;
    if ((rc = ebb__sched_index_add(s, p, i)) != 0)
        return rc;
    s->spods[s->nspods - 1].node = i;
    if (p->slot >= s->nby_slot) {
        /* without it a prediction forgets pods by a full sync instead */
        uint32_t want = p->slot + 1 > 2 * s->nby_slot ? p->slot + 1 : 2 * s->nby_slot;
        uint32_t *v = realloc(s->by_slot, (size_t)want * sizeof(*v));
        if (v == NULL) {
            s->by_slot_lost = true;
            return 0;
        }
        memset(v + s->nby_slot, 0, (size_t)(want - s->nby_slot) * sizeof(*v));
        s->by_slot = v;
        s->nby_slot = want;
    }
    s->by_slot[p->slot] = s->nspods;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int image_id(struct ebb_sched *s, ebb_str name, int64_t size, uint32_t *out)
{
    void *v = ebb__map_get(&s->images, name, NULL);
    size_t cap = s->cap_images;
    int rc;

    if (v != NULL) {
        *out = (uint32_t)((uintptr_t)v - 1);
        return 0;
    }
    if ((rc = ebb__grow((void **)&s->image, &cap, s->nimages + 1, sizeof(*s->image))) != 0)
        return rc;
    s->cap_images = (uint32_t)cap;
    if ((rc = ebb__map_put(&s->images, name, NULL, (void *)(uintptr_t)(s->nimages + 1), NULL)) != 0)
        return rc;
    s->image[s->nimages] = (struct image_state){ size, 0 };
    *out = s->nimages++;
    return 0;
}

static int nodes_build(struct ebb_sched *s)
{
    uint32_t n;
    struct ebb_node *const *all = ebb_cache_nodes_sorted(s->cache, &n);
    ebb_str region_key = ebb_str_find("topology.kubernetes.io/region", 29);
    ebb_str zone_old = ebb_str_find("failure-domain.beta.kubernetes.io/zone", 38);
    ebb_str region_old = ebb_str_find("failure-domain.beta.kubernetes.io/region", 40);
    struct ebb_map zones;
    uint32_t nzones = 0, *zone_of = NULL, *zone_count = NULL, *zone_next = NULL;
    int rc = EBB_ENOMEM;

    if ((s->nodes = calloc(n + 1, sizeof(*s->nodes))) == NULL ||
        (s->hot = aligned_alloc(64, (n + 1) * sizeof(*s->hot))) == NULL ||
        (s->order = calloc(n + 1, sizeof(*s->order))) == NULL ||
        (zone_of = calloc(n + 1, sizeof(*zone_of))) == NULL ||
        (zone_count = calloc(n + 1, sizeof(*zone_count))) == NULL ||
        (zone_next = calloc(n + 1, sizeof(*zone_next))) == NULL)
        goto out;
    ebb__map_init(&zones);
    s->nnodes = n;
    for (uint32_t i = 0; i < n; i++) {
        struct snode *sn = &s->nodes[i];
        struct ebb_node *node = all[i];
        ebb_str zone = ebb_labels_get(&node->labels, s->zone_key);
        ebb_str region = ebb_labels_get(&node->labels, region_key);
        void *z;
        sn->node = node;
        sn->pv = ebb_cache_pods_on_node(s->cache, node->name);
        sn->alloc_cpu = ebb_res_get(&node->allocatable, EBB_RES_CPU);
        sn->alloc_mem = ebb_res_get(&node->allocatable, EBB_RES_MEMORY);
        sn->alloc_eph = ebb_res_get(&node->allocatable, EBB_RES_EPHEMERAL);
        sn->alloc_pods = ebb_res_get(&node->allocatable, EBB_RES_PODS);
        sn->unschedulable = node->unschedulable;
        sn->ntaints = node->ntaints;
        mirror(s, i);
        if ((rc = ebb__map_put(&s->node_idx, node->name, NULL, (void *)(uintptr_t)(i + 1), NULL)) != 0)
            goto out_zones;
        rc = EBB_ENOMEM;
        /* utilnode.GetZoneKey: region and zone, the GA labels first */
        if (zone == NULL && zone_old != NULL)
            zone = ebb_labels_get(&node->labels, zone_old);
        if (region == NULL && region_old != NULL)
            region = ebb_labels_get(&node->labels, region_old);
        ebb_str zkey = zone ? zone : s->any_ip;   /* any non-NULL map key */
        ebb_str rkey = region ? region : s->any_ip;
        if (zone == NULL && region == NULL)
            zkey = rkey = s->tcp;                  /* the "" zone */
        if ((z = ebb__map_get(&zones, rkey, zkey)) == NULL) {
            z = (void *)(uintptr_t)++nzones;
            if (ebb__map_put(&zones, rkey, zkey, z, NULL) != 0)
                goto out_zones;
        }
        zone_of[i] = (uint32_t)(uintptr_t)z - 1;
        zone_count[zone_of[i]]++;
        /* images */
        if (node->nimages > 0) {
            uint32_t total = 0;
            for (uint16_t k = 0; k < node->nimages; k++)
                total += node->images[k].nnames;
            if ((sn->img = malloc((total + 1) * sizeof(*sn->img))) == NULL)
                goto out_zones;
            for (uint16_t k = 0; k < node->nimages; k++) {
                for (uint16_t j = 0; j < node->images[k].nnames; j++) {
                    uint32_t id;
                    bool dup = false;
                    if (node->images[k].names[j] == NULL)
                        continue;
                    if ((rc = image_id(s, node->images[k].names[j], node->images[k].size, &id)) != 0)
                        goto out_zones;
                    rc = EBB_ENOMEM;
                    for (uint32_t m = 0; m < sn->nimg && !dup; m++)
                        dup = sn->img[m] == id;
                    if (!dup) {
                        sn->img[sn->nimg++] = id;
                        s->image[id].nnodes++;
                    }
                }
            }
            qsort(sn->img, sn->nimg, sizeof(*sn->img), cmp_u32);
        }
    }
    /* nodeTree.list(): zones in the order their first node came (by name,
     * as a LIST returns them), then one node of each zone in turn */
    {
        uint32_t k = 0, *pos = zone_next;   /* per zone: nodes taken */
        uint32_t **members = calloc(nzones + 1, sizeof(*members));
        if (members == NULL)
            goto out_zones;
        for (uint32_t z = 0; z < nzones; z++) {
            if ((members[z] = malloc((zone_count[z] + 1) * sizeof(**members))) == NULL) {
                for (uint32_t y = 0; y <= z; y++)
                    free(members[y]);
                free(members);
                goto out_zones;
            }
            pos[z] = 0;
        }
        for (uint32_t i = 0; i < n; i++)
            members[zone_of[i]][pos[zone_of[i]]++] = i;
        for (uint32_t round = 0; k < n; round++)
            for (uint32_t z = 0; z < nzones; z++)
                if (round < zone_count[z]) {
                    s->nodes[members[z][round]].order = k;
                    s->order[k++] = members[z][round];
                }
        for (uint32_t z = 0; z < nzones; z++)
            free(members[z]);
        free(members);
    }
    rc = 0;
out_zones:
    ebb__map_free(&zones);
out:
    free(zone_of);
    free(zone_count);
    free(zone_next);
    return rc;
}

/* ---- life ------------------------------------------------------------------- */

#define BUILD_AHEAD 4

/* Ask for the cache lines of a pod that ebb_pod_occupies reads (slot to
 * flags) and, for counting it, those of its labels, affinity, requests and
 * ports: a pod spans five lines and a miss on each is what counting the
 * pods of a cluster costs. A hint: the pod may even be gone. */
static inline void prefetch_pod(const struct ebb_pod *p, bool counting)
{
    __builtin_prefetch(&p->slot);
    __builtin_prefetch(&p->flags);
    if (counting) {
        __builtin_prefetch(&p->labels);
        __builtin_prefetch(&p->affinity);
        __builtin_prefetch(&p->nz_cpu);
    }
}

static int pods_build(struct ebb_sched *s)
{
    int rc;

    if ((rc = ebb__sched_memo_begin(s)) != 0)
        return rc;
    /* a node's pods are anywhere in memory: the one some places ahead is
     * fetched while this one is counted */
    for (uint32_t i = 0; i < s->nnodes && rc == 0; i++) {
        const struct ebb_podvec *pv = s->nodes[i].pv;
        for (uint32_t k = 0; pv != NULL && k < pv->n && rc == 0; k++) {
            if (k + BUILD_AHEAD < pv->n)
                prefetch_pod(pv->v[k + BUILD_AHEAD], true);
            if (ebb_pod_occupies(pv->v[k]))
                rc = account(s, pv->v[k], i);
        }
    }
    ebb__sched_memo_end(s);
    return rc;
}

int ebb_sched_create(struct ebb_cache *c, const struct ebb_sched_opts *opts, struct ebb_sched **out)
{
    struct ebb_sched *s;
    int rc = EBB_ENOMEM;

    if (c == NULL || out == NULL)
        return EBB_EINVAL;
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return EBB_ENOMEM;
    s->cache = c;
    ebb__map_init(&s->node_idx);
    ebb__map_init(&s->images);
    ebb__map_init(&s->image_of);
    ebb__sched_index_init(s);
    if (opts != NULL) {
        s->config = opts->config;
        s->version = opts->version;
        s->seeded = opts->seeded;
        s->rng = opts->seed;
    }
    if (s->config == NULL) {
        if ((rc = ebb_sched_config_default(&s->own_config)) != 0)
            goto fail;
        s->config = s->own_config;
        rc = EBB_ENOMEM;
    }
    if ((s->hostname_key = ebb_str_cstr("kubernetes.io/hostname")) == NULL ||
        (s->zone_key = ebb_str_cstr("topology.kubernetes.io/zone")) == NULL ||
        (s->unsched_key = ebb_str_cstr("node.kubernetes.io/unschedulable")) == NULL ||
        (s->tcp = ebb_str_cstr("TCP")) == NULL || (s->any_ip = ebb_str_cstr("0.0.0.0")) == NULL)
        goto fail;
    if ((rc = nodes_build(s)) != 0 || (rc = pods_build(s)) != 0)
        goto fail;
    *out = s;
    return 0;
fail:
    ebb_sched_destroy(s);
    return rc;
}

void ebb_sched_destroy(struct ebb_sched *s)
{
    struct chunk *c, *next;

    if (s == NULL)
        return;
    ebb__sched_index_free(s);
    ebb__sched_affmemo_free(s);
    sarr_free_all(s);
    for (uint32_t i = 0; s->nodes != NULL && i < s->nnodes; i++) {
        free(s->nodes[i].ports);
        free(s->nodes[i].img);
    }
    free(s->nodes);
    free(s->hot);
    free(s->order);
    ebb__map_free(&s->node_idx);
    ebb__map_free(&s->images);
    for (size_t i = 0; i < s->image_of.cap; i++)
        if (ebb__map_live(&s->image_of, i))
            ebb_str_release(s->image_of.s[i].a);
    ebb__map_free(&s->image_of);
    free(s->image);
    free(s->by_slot);
    for (c = (struct chunk *)s->arena; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    ebb_str_release(s->hostname_key);
    ebb_str_release(s->zone_key);
    ebb_str_release(s->unsched_key);
    ebb_str_release(s->tcp);
    ebb_str_release(s->any_ip);
    ebb_sched_config_free(s->own_config);
    free(s);
}

/* A pod the scheduler counted has left its node when the cache no longer
 * has it in its slot, hides it, or it finished. */
static bool spod_gone(const struct ebb_sched *s, const struct spod *sp)
{
    const struct ebb_pod *p = ebb_cache_pod_at(s->cache, sp->slot);

    return p != sp->pod || p->serial != sp->serial || !ebb_pod_occupies(p);
}

/* spods[id] left its node. */
static void forget(struct ebb_sched *s, uint32_t id)
{
    struct spod *sp = &s->spods[id];
    struct snode *n = &s->nodes[sp->node];

    /* the pod may be freed already: its node's sums and ports are read
     * back from what is left */
    n->ports_dirty = true;
    if (sp->slot < s->nby_slot && s->by_slot[sp->slot] == id + 1)
        s->by_slot[sp->slot] = 0;
    sp->pod = NULL;
    mirror(s, sp->node);
    ebb__sched_index_remove(s, id);
}

#define SYNC_AHEAD 16

int ebb_sched_sync(struct ebb_sched *s)
{
    if (s == NULL)
        return EBB_EINVAL;
    /* every counted pod is read, in no order the cache keeps: the pod
     * some places ahead is fetched while this one is checked */
    for (uint32_t id = 0; id < s->nspods; id++) {
        if (id + SYNC_AHEAD < s->nspods && s->spods[id + SYNC_AHEAD].pod != NULL)
            prefetch_pod(s->spods[id + SYNC_AHEAD].pod, false);
        if (s->spods[id].pod != NULL && spod_gone(s, &s->spods[id]))
            forget(s, id);
    }
    return 0;
}

/* The pods the cache hid since the last call: forgotten one by one from
 * its list of hidden pods (a cycle's evictions), not by a sync over every
 * pod; a full sync when the list is not whole. */
static int forget_hidden(struct ebb_sched *s)
{
    struct ebb_pod *const *h;
    uint64_t epoch;
    size_t n;

    if ((h = ebb_cache_hidden(s->cache, &n, &epoch)) == NULL || s->by_slot_lost)
        return ebb_sched_sync(s);
    if (epoch != s->hidden_epoch || s->hidden_seen > n) {
        s->hidden_epoch = epoch;
        s->hidden_seen = 0;
    }
    for (; s->hidden_seen < n; s->hidden_seen++) {
        const struct ebb_pod *p = h[s->hidden_seen];
        uint32_t id = p->slot < s->nby_slot ? s->by_slot[p->slot] : 0;
        if (id == 0)
            continue;   /* not one the scheduler counts */
        if (s->spods[id - 1].pod == p && s->spods[id - 1].serial == p->serial)
            forget(s, id - 1);
    }
    return 0;
}

int ebb_sched_predict(struct ebb_sched *s, struct ebb_pod *leaving, const struct ebb_pod *pod,
                      struct ebb_sched_result *r)
{
    struct ebb_sched_stats st;
    uint32_t i = UINT32_MAX, start;
    uint64_t rng;
    int rc, rc2;

    if (s == NULL || pod == NULL || r == NULL)
        return EBB_EINVAL;
    if (leaving != NULL && ebb_pod_occupies(leaving) &&
        (i = ebb__sched_node_index(s, leaving->node)) != UINT32_MAX)
        ebb_cache_hide_pod(s->cache, leaving);
    rc = forget_hidden(s);
    start = s->next_start;
    rng = s->rng;
    st = s->stats;
    if (rc == 0)
        rc = ebb_sched_schedule(s, pod, r);
    s->next_start = start;
    s->rng = rng;
    s->stats = st;
    if (i != UINT32_MAX) {
        /* back as it was: the cache's sums, then the scheduler's own (it
         * was the last of the cache's hidden list: the place stays right) */
        ebb_cache_unhide_pod(s->cache, leaving);
        if (s->hidden_seen > 0)
            s->hidden_seen--;
        mirror(s, i);
        if ((rc2 = account(s, leaving, i)) != 0 && rc == 0)
            rc = rc2;
    }
    return rc;
}

int ebb_sched_bind(struct ebb_sched *s, struct ebb_pod *pod, const struct ebb_node *node)
{
    struct ebb_object obj = { .kind = EBB_KIND_POD };
    uint32_t i;
    ebb_str name;
    int rc;

    if (s == NULL || pod == NULL || node == NULL) {
        rc = EBB_EINVAL;
        goto fail;
    }
    if ((i = ebb__sched_node_index(s, node->name)) == UINT32_MAX) {
        rc = EBB_ENOENT;
        goto fail;
    }
    if ((name = ebb_str_ref(node->name)) == NULL) {
        rc = EBB_ENOMEM;
        goto fail;
    }
    ebb_str_release(pod->node);
    pod->node = name;
    obj.u.pod = pod;
    if ((rc = ebb_cache_put(s->cache, &obj)) != 0)
        goto fail;
    /* a node that had no pod read the cache's shared empty list until now
     * (asked only then: asking sorts the node's pods) */
    if (s->nodes[i].pv == NULL || s->nodes[i].pv->cap == 0)
        s->nodes[i].pv = ebb_cache_pods_on_node(s->cache, node->name);
    mirror(s, i);
    if (!ebb_pod_occupies(pod))
        return 0;
    return account(s, pod, i);

fail:
    ebb_pod_free(pod);
    return rc;
}

void ebb_sched_get_stats(const struct ebb_sched *s, struct ebb_sched_stats *out)
{
    *out = s->stats;
}

/* ---- the cycle ---------------------------------------------------------------- */

/* A histogram of failure reasons, for FitError.Error(). */
struct reasons {
    size_t n, cap;
    struct { char *text; uint32_t count; } *v;
};

static int reasons_add(struct reasons *h, const char *text, size_t len, uint32_t count)
{
    for (size_t i = 0; i < h->n; i++) {
        if (strlen(h->v[i].text) == len && memcmp(h->v[i].text, text, len) == 0) {
            h->v[i].count += count;
            return 0;
        }
    }
    if (ebb__grow((void **)&h->v, &h->cap, h->n + 1, sizeof(*h->v)) != 0)
        return EBB_ENOMEM;
    if ((h->v[h->n].text = strndup(text, len)) == NULL)
        return EBB_ENOMEM;
    h->v[h->n++].count = count;
    return 0;
}

/* Reasons of one node: "a\x1fb" (unit separator between reasons). */
static int reasons_add_node(struct reasons *h, const char *buf)
{
    int rc;

    while (*buf) {
        const char *end = strchr(buf, '\x1f');
        size_t len = end ? (size_t)(end - buf) : strlen(buf);
        if ((rc = reasons_add(h, buf, len, 1)) != 0)
            return rc;
        buf += len + (end ? 1 : 0);
    }
    return 0;
}

static void reasons_free(struct reasons *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->v[i].text);
    free(h->v);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "0/N nodes are available: 1 Insufficient memory, 3 Insufficient cpu." */
static void fit_error(struct reasons *h, uint32_t nall, char *out, size_t len)
{
    char **items = calloc(h->n + 1, sizeof(*items));
    size_t off;

    off = (size_t)snprintf(out, len, "0/%u nodes are available:", nall);
    if (items == NULL) {
        snprintf(out + off, len - off, " (out of memory)");
        return;
    }
    for (size_t i = 0; i < h->n; i++) {
        size_t n = strlen(h->v[i].text) + 16;
        if ((items[i] = malloc(n)) != NULL)
            snprintf(items[i], n, "%u %s", h->v[i].count, h->v[i].text);
    }
    qsort(items, h->n, sizeof(*items), cmp_str);
    for (size_t i = 0; i < h->n; i++) {
        if (items[i] != NULL && off < len)
            off += (size_t)snprintf(out + off, len - off, "%s%s", i ? ", " : " ", items[i]);
        free(items[i]);
    }
    if (off < len)
        snprintf(out + off, len - off, ".");
    free(items);
}

/* How far ahead the search fetches node records. */
#define SEARCH_AHEAD 8

/* The pod's cpu, memory and ephemeral requests fit what the node has free. */
static inline bool hot_room(const struct pstate *ps, const struct shot *h)
{
    return ps->req[0] <= ebb_q_sub(h->alloc_cpu, h->req_cpu) &&
           ps->req[1] <= ebb_q_sub(h->alloc_mem, h->req_mem) && ps->req[2] <= h->free_eph;
}

/* The common filters that pass, decided from the node's record alone
 * (false: ask the filter itself). */
static inline bool fast_pass(const struct pstate *ps, int plugin, uint32_t node)
{
    const struct shot *h = &ps->s->hot[node];

    switch (plugin) {
    case EBB_SP_NODE_UNSCHEDULABLE:
        return !(h->flags & HOT_UNSCHEDULABLE) || ps->tolerates_unschedulable;
    case EBB_SP_TAINT_TOLERATION:
        return !(h->flags & HOT_TAINTED);
    case EBB_SP_NODE_RESOURCES_FIT:
        if (ps->req_scalars || (h->flags & HOT_FULL))
            return false;
        if (ps->req_zero && ps->s->version != EBB_SCHED_V1_25)
            return true;
        return hot_room(ps, h);
    default:
        return false;
    }
}

/* Run the pod's filters on one node: 0 feasible, or the worst status.
 * Newest: up to the first failing filter; v1.25: all. With buf, the
 * reasons too ("\x1f" between two): only needed when no node fits, so
 * the search itself formats nothing. */
static int run_filters(struct pstate *ps, uint32_t node, char *buf, size_t len)
{
    size_t off = 0;
    int worst = 0;

    if (buf == NULL) {
        /* the search asks only feasible or not: the shortcut, when the
         * node's record settles the common filters (else each is asked) */
        const struct shot *h = &ps->s->hot[node];
        if (!(h->flags & ps->hot_mask) &&
            (!ps->fit_cmp || hot_room(ps, h))) {
            if (ps->na_memo && !ebb__sched_node_affinity_ok(ps, node))
                return 2;   /* UnschedulableAndUnresolvable */
            for (uint8_t f = 0; f < ps->nslow; f++)
                if ((worst = ebb__sched_filter(ps, ps->slow[f], node, NULL, 0)) != 0)
                    return worst;
            return 0;
        }
    } else {
        buf[0] = '\0';
    }
    for (uint8_t f = 0; f < ps->nactive; f++) {
        char one[512];
        size_t n;
        int st;
        if (buf == NULL && fast_pass(ps, ps->active[f], node))
            continue;
        if (buf != NULL)
            one[0] = '\0';
        if ((st = ebb__sched_filter(ps, ps->active[f], node, buf ? one : NULL, sizeof(one))) == 0)
            continue;
        if (st > worst)
            worst = st;
        if (ps->s->version != EBB_SCHED_V1_25 && buf == NULL)
            break;
        if (buf != NULL) {
            n = strlen(one);
            if (off > 0 && off + 1 < len)
                buf[off++] = '\x1f';
            if (off + n >= len)
                n = off < len ? len - off - 1 : 0;
            memcpy(buf + off, one, n);
            off += n;
            buf[off] = '\0';
        }
        if (ps->s->version != EBB_SCHED_V1_25)
            break;
    }
    return worst;
}

static bool has_scoring(const struct ebb_sched_profile *p)
{
    for (int i = 0; i < EBB_SP_MAX; i++)
        if (p->weight[i] > 0)
            return true;
    return false;
}

static const char *gated_msg = "Scheduling is blocked due to non-empty scheduling gates";

/* Set up a call: the profile, the arena, PreFilter. Returns 0, or a status
 * EBB_SCHED_* with r->message filled. */
static int begin(struct ebb_sched *s, const struct ebb_pod *pod, struct pstate *ps,
                 struct ebb_sched_result *r)
{
    const char *sched = pod->scheduler && pod->scheduler[0] ? pod->scheduler : "default-scheduler";
    int rc;

    memset(ps, 0, sizeof(*ps));
    ps->s = s;
    ps->pod = pod;
    if ((ps->prof = ebb_sched_config_profile(s->config, sched)) == NULL) {
        snprintf(r->message, sizeof(r->message), "no profile for scheduler \"%s\": left alone", sched);
        return EBB_SCHED_NO_PROFILE;
    }
    if ((pod->flags & EBB_POD_SCHEDULING_GATED) && ps->prof->scheduling_gates) {
        snprintf(r->message, sizeof(r->message), "%s", gated_msg);
        return EBB_SCHED_GATED;
    }
    if (s->nnodes == 0) {
        snprintf(r->message, sizeof(r->message), "no nodes available to schedule pods");
        return EBB_SCHED_UNSCHEDULABLE;
    }
    ebb__sched_arena_reset(s);
    sarr_release(s);
    ps->stamp = ++s->stamp;
    ps->ns_labels = ebb__sched_ns_labels(s, pod->ns);
    if ((rc = ebb__sched_prefilter(ps)) != 0)
        return rc;
    if (ps->prefilter_fail != NULL) {
        snprintf(r->message, sizeof(r->message), "0/%u nodes are available: %s.", s->nnodes,
                 ps->prefilter_fail);
        return EBB_SCHED_UNSCHEDULABLE;
    }
    return 0;
}

/* Score the feasible nodes into totals[]; per-plugin normalized scores go
 * to norm[p][i] when norm is not NULL. */
static int score_nodes(struct pstate *ps, const uint32_t *feasible, uint32_t n, int64_t *totals,
                       int64_t **raw, int64_t **norm)
{
    struct ebb_sched *s = ps->s;
    int64_t *sc = ebb__sched_alloc_list(s, (n + 1) * sizeof(*sc));
    int rc;

    if (sc == NULL)
        return EBB_ENOMEM;
    if ((rc = ebb__sched_prescore(ps, feasible, n)) != 0)
        return rc;
    for (int p = 0; p < EBB_SP_MAX; p++) {
        int64_t w = ps->prof->weight[p];
        if (w <= 0)
            continue;
        if (ps->skip[p]) {
            /* 0 everywhere: the totals stay */
            if (norm)
                memset(norm[p], 0, n * sizeof(*sc));
            continue;
        }
        /* the search asks only the totals: the plugins that can add to
         * them directly do */
        if (raw == NULL && norm == NULL && ebb__sched_score_add(ps, p, feasible, n, w, totals))
            continue;
        ebb__sched_score_all(ps, p, feasible, n, sc);
        if (raw)
            memcpy(raw[p], sc, n * sizeof(*sc));
        ebb__sched_normalize(ps, p, feasible, sc, n);
        if (norm)
            memcpy(norm[p], sc, n * sizeof(*sc));
        for (uint32_t i = 0; i < n; i++)
            totals[i] += sc[i] * w;
    }
    s->stats.nodes_scored += n;
    return 0;
}

static int schedule(struct ebb_sched *s, const struct ebb_pod *pod, struct pstate *ps,
                    struct ebb_sched_result *r)
{
    struct reasons h = { 0 };
    const uint32_t *list;
    uint32_t nlist = 0, *feasible, nfeasible = 0, k, processed = 0;
    int64_t *totals;
    char buf[512];
    int rc;

    memset(r, 0, sizeof(*r));
    s->stats.scheduled++;
    if ((rc = begin(s, pod, ps, r)) != 0) {
        r->status = rc;
        if (rc == EBB_SCHED_UNSCHEDULABLE)
            s->stats.unschedulable++;
        return rc < 0 ? rc : 0;
    }
    /* the nodes to filter: all, or what NodeAffinity's PreFilter kept */
    if (ps->subset == NULL) {
        list = s->order;
        nlist = s->nnodes;
    } else {
        uint32_t *sub = ebb__sched_alloc(s, (ps->nsubset + 1) * sizeof(*sub));
        if (sub == NULL)
            return EBB_ENOMEM;
        for (uint32_t i = 0; i < s->nnodes; i++)
            if (ps->subset[s->order[i]])
                sub[nlist++] = s->order[i];
        list = sub;
    }
    k = ebb_sched_nodes_to_find(ps->prof->percentage >= 0 ? ps->prof->percentage
                                                          : s->config->percentage, nlist);
    if (!has_scoring(ps->prof))
        k = 1;
    if ((feasible = ebb__sched_alloc_list(s, (k + 1) * sizeof(*feasible))) == NULL)
        return EBB_ENOMEM;
    /* from next_start round the list; the position wraps without a division
     * per node (a quarter of this loop's own time when it had one). The
     * list is in zone order, not memory order: the record of the node a
     * few places ahead is fetched while this one is filtered. */
    uint32_t dist = nlist > SEARCH_AHEAD ? SEARCH_AHEAD : 0;
    for (uint32_t i = 0, at = s->next_start % nlist; i < nlist && nfeasible < k; i++) {
        uint32_t node = list[at], ahead = at + dist;
        __builtin_prefetch(&s->hot[list[ahead >= nlist ? ahead - nlist : ahead]]);
        if (++at == nlist)
            at = 0;
        processed++;
        if (run_filters(ps, node, NULL, 0) == 0)
            feasible[nfeasible++] = node;
    }
    s->stats.nodes_filtered += processed;
    r->evaluated = processed;
    r->feasible = nfeasible;
    s->next_start = (s->next_start + processed) % s->nnodes;
    if (nfeasible == 0) {
        /* every node failed: now their reasons, for the message */
        for (uint32_t i = 0; i < nlist; i++) {
            run_filters(ps, list[i], buf, sizeof(buf));
            if ((rc = reasons_add_node(&h, buf)) != 0) {
                reasons_free(&h);
                return rc;
            }
        }
        /* nodes a PreFilterResult left out (newest: with a status) */
        if (ps->subset != NULL && nlist < s->nnodes && s->version != EBB_SCHED_V1_25) {
            const char *why = "node(s) didn't satisfy plugin(s) [NodeAffinity]";
            if ((rc = reasons_add(&h, why, strlen(why), s->nnodes - nlist)) != 0) {
                reasons_free(&h);
                return rc;
            }
        }
        fit_error(&h, s->nnodes, r->message, sizeof(r->message));
        reasons_free(&h);
        r->status = EBB_SCHED_UNSCHEDULABLE;
        s->stats.unschedulable++;
        return 0;
    }
    reasons_free(&h);
    r->status = EBB_SCHED_PLACED;
    s->stats.placed++;
    if (nfeasible == 1) {
        r->node = s->nodes[feasible[0]].node;
        return 0;
    }
    if ((totals = ebb__sched_alloc(s, (nfeasible + 1) * sizeof(*totals))) == NULL)
        return EBB_ENOMEM;
    if ((rc = score_nodes(ps, feasible, nfeasible, totals, NULL, NULL)) != 0)
        return rc;
    /* selectHost */
    uint32_t best = 0, ties = 1;
    for (uint32_t i = 1; i < nfeasible; i++) {
        if (totals[i] > totals[best]) {
            best = i;
            ties = 1;
        } else if (totals[i] == totals[best]) {
            ties++;
            if (s->seeded ? rng_next(&s->rng) % ties == 0 : feasible[i] < feasible[best])
                best = i;
        }
    }
    r->node = s->nodes[feasible[best]].node;
    r->score = totals[best];
    return 0;
}

int ebb_sched_schedule(struct ebb_sched *s, const struct ebb_pod *pod, struct ebb_sched_result *r)
{
    struct pstate ps;
    int rc;

    if (s == NULL || pod == NULL || r == NULL)
        return EBB_EINVAL;
    memset(&ps, 0, sizeof(ps));
    rc = schedule(s, pod, &ps, r);
    ebb__sched_pstate_clear(&ps);
    return rc;
}

static void copy_text(char *dst, size_t n, const char *src)
{
    size_t len = strlen(src);

    if (len >= n)
        len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

int ebb_sched_explain(struct ebb_sched *s, const struct ebb_pod *pod,
                      struct ebb_sched_node_eval **out, size_t *nout)
{
    struct ebb_sched_result r;
    struct ebb_sched_node_eval *ev;
    struct pstate ps;
    uint32_t *feasible, nf = 0;
    int64_t *totals, *raw[EBB_SP_MAX], *norm[EBB_SP_MAX];
    int rc;

    if (s == NULL || pod == NULL || out == NULL || nout == NULL)
        return EBB_EINVAL;
    *out = NULL;
    *nout = 0;
    if ((ev = calloc(s->nnodes + 1, sizeof(*ev))) == NULL)
        return EBB_ENOMEM;
    memset(&r, 0, sizeof(r));
    if ((rc = begin(s, pod, &ps, &r)) != 0) {
        for (uint32_t i = 0; i < s->nnodes; i++) {
            ev[i].node = s->nodes[i].node;
            copy_text(ev[i].reasons, sizeof(ev[i].reasons), r.message);
        }
        *out = ev;
        *nout = s->nnodes;
        ebb__sched_pstate_clear(&ps);
        return rc < 0 ? rc : 0;
    }
    if ((feasible = ebb__sched_alloc(s, (s->nnodes + 1) * sizeof(*feasible))) == NULL)
        goto nomem;
    for (uint32_t i = 0; i < s->nnodes; i++) {
        char buf[512];
        ev[i].node = s->nodes[i].node;
        if (ps.subset != NULL && !ps.subset[i]) {
            snprintf(ev[i].reasons, sizeof(ev[i].reasons), "node(s) didn't satisfy plugin(s) [NodeAffinity]");
            continue;
        }
        if (run_filters(&ps, i, buf, sizeof(buf)) == 0) {
            ev[i].feasible = true;
            feasible[nf++] = i;
        } else {
            for (char *c = buf; *c; c++)
                if (*c == '\x1f')
                    *c = ';';
            copy_text(ev[i].reasons, sizeof(ev[i].reasons), buf);
        }
    }
    if (nf > 0) {
        if ((totals = ebb__sched_alloc(s, (nf + 1) * sizeof(*totals))) == NULL)
            goto nomem;
        for (int p = 0; p < EBB_SP_MAX; p++)
            if ((raw[p] = ebb__sched_alloc(s, (nf + 1) * sizeof(int64_t))) == NULL ||
                (norm[p] = ebb__sched_alloc(s, (nf + 1) * sizeof(int64_t))) == NULL)
                goto nomem;
        if ((rc = score_nodes(&ps, feasible, nf, totals, raw, norm)) != 0) {
            ebb__sched_pstate_clear(&ps);
            free(ev);
            return rc;
        }
        for (uint32_t i = 0; i < nf; i++) {
            struct ebb_sched_node_eval *e = &ev[feasible[i]];
            e->total = totals[i];
            for (int p = 0; p < EBB_SP_MAX; p++) {
                e->raw[p] = raw[p][i];
                e->norm[p] = norm[p][i];
            }
        }
    }
    *out = ev;
    *nout = s->nnodes;
    ebb__sched_pstate_clear(&ps);
    return 0;
nomem:
    ebb__sched_pstate_clear(&ps);
    free(ev);
    return EBB_ENOMEM;
}
