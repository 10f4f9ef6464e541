/* The kube-scheduler model's PreScore, Score and NormalizeScore (see
 * ebb/sched.h and SCHEDULER.md section 4): TaintToleration, NodeAffinity,
 * NodeResourcesFit (LeastAllocated, MostAllocated,
 * RequestedToCapacityRatio), NodeResourcesBalancedAllocation,
 * ImageLocality, PodTopologySpread and InterPodAffinity. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ebb/quantity.h"
#include "ebb/affinity.h"
#include "ebb/selector.h"
#include "ebb/taints.h"
#include "sched/sched_int.h"

#define MAX_SCORE EBB_SCHED_MAX_SCORE
#define MIN_IMAGE (23ll * 1024 * 1024)
#define MAX_IMAGE (1000ll * 1024 * 1024)

/* ---- NodeResourcesFit and BalancedAllocation --------------------------------- */

/* The pod's request of a resource: cpu and memory with the non-zero
 * defaults for Fit's score (nonzero), real ones for BalancedAllocation. */
static int64_t pod_request(const struct ebb_pod *p, int id, bool nonzero)
{
    if (nonzero && id == EBB_RES_CPU)
        return p->nz_cpu;
    if (nonzero && id == EBB_RES_MEMORY)
        return p->nz_mem;
    return ebb_res_get(&p->requests, id);
}

/* calculateResourceAllocatableRequest: (allocatable, requested + pod); a
 * scalar the pod does not request, or the node lacks, is (0, 0). */
static void alloc_req(const struct snode *n, int id, int64_t pod, bool nonzero, int64_t *alloc,
                      int64_t *req)
{
    const struct ebb_podvec *pv = n->pv;

    *alloc = *req = 0;
    switch (id) {
    case EBB_RES_CPU:
        *alloc = n->alloc_cpu;
        *req = ebb_q_add(nonzero ? n->nz_cpu : n->req_cpu, pod);
        return;
    case EBB_RES_MEMORY:
        *alloc = n->alloc_mem;
        *req = ebb_q_add(nonzero ? n->nz_mem : n->req_mem, pod);
        return;
    case EBB_RES_EPHEMERAL:
        *alloc = n->alloc_eph;
        *req = ebb_q_add(n->req_eph, pod);
        return;
    case EBB_RES_PODS:
        return;
    default:
        if (pod == 0 || !ebb_res_has(&n->node->allocatable, id))
            return;
        *alloc = ebb_res_get(&n->node->allocatable, id);
        *req = ebb_q_add(pv ? pv->req[id] : 0, pod);
        return;
    }
}

/* helper.BuildBrokenLinearFunction over shape points scaled to 0..100. */
static int64_t broken_linear(const struct ebb_sched_profile *pr, int64_t u)
{
    for (size_t i = 0; i < pr->nshape; i++) {
        if (u <= pr->shape[i].utilization) {
            if (i == 0)
                return pr->shape[0].score * 10;
            int64_t s0 = pr->shape[i - 1].score * 10, s1 = pr->shape[i].score * 10;
            int64_t u0 = pr->shape[i - 1].utilization, u1 = pr->shape[i].utilization;
            return s0 + (s1 - s0) * (u - u0) / (u1 - u0);
        }
    }
    return pr->nshape ? pr->shape[pr->nshape - 1].score * 10 : 0;
}

/* One resource's LeastAllocated (free share) or MostAllocated (used
 * share, capped at allocatable) score, 0..100; alloc > 0. */
static inline int64_t fit_one(bool most, int64_t req, int64_t alloc)
{
    if (most)
        return ebb__sched_scaled(req > alloc ? alloc : req, alloc);
    return req > alloc ? 0 : ebb__sched_scaled(ebb_q_sub(alloc, req), alloc);
}

static int64_t fit_score(struct pstate *ps, uint32_t node)
{
    const struct ebb_sched_profile *pr = ps->prof;
    const struct snode *n = &ps->s->nodes[node];
    int64_t sum = 0, wsum = 0;

    for (size_t i = 0; i < pr->nfit_resources; i++) {
        int64_t alloc, req, s, w = pr->fit_resources[i].weight;
        alloc_req(n, pr->fit_resources[i].id, ps->fit_req[i], true, &alloc, &req);
        if (alloc == 0)
            continue;
        if (pr->fit_strategy == EBB_SCHED_RTCR) {
            s = broken_linear(pr, req > alloc ? 100 : ebb__sched_scaled(req, alloc));
            if (s <= 0)
                continue;   /* only resources scoring above 0 count */
        } else {
            s = fit_one(pr->fit_strategy == EBB_SCHED_MOST_ALLOCATED, req, alloc);
        }
        sum += s * w;
        wsum += w;
    }
    if (wsum == 0)
        return 0;
    if (pr->fit_strategy == EBB_SCHED_RTCR)
        return (int64_t)llround((double)sum / (double)wsum);
    return sum / wsum;
}

static int64_t balanced_score(struct pstate *ps, uint32_t node)
{
    const struct ebb_sched_profile *pr = ps->prof;
    const struct snode *n = &ps->s->nodes[node];
    double f[EBB_RES_MAX], total = 0, std = 0;
    size_t k = 0;

    for (size_t i = 0; i < pr->nba_resources && k < EBB_RES_MAX; i++) {
        int64_t alloc, req;
        alloc_req(n, pr->ba_resources[i].id, ps->ba_req[i], false, &alloc, &req);
        if (alloc == 0)
            continue;
        f[k] = (double)req / (double)alloc;
        if (f[k] > 1)
            f[k] = 1;
        total += f[k++];
    }
    if (k == 2) {
        std = fabs((f[0] - f[1]) / 2);
    } else if (k > 2) {
        double mean = total / (double)k, sum = 0;
        for (size_t i = 0; i < k; i++)
            sum += (f[i] - mean) * (f[i] - mean);
        std = sqrt(sum / (double)k);
    }
    return (int64_t)((1 - std) * (double)MAX_SCORE);
}

/* ---- ImageLocality --------------------------------------------------------------- */

/* The image state id of a container image, normalized as the scheduler
 * does (":latest" when no tag follows the last '/'); UINT32_MAX: no node
 * has it. */
static uint32_t image_find(const struct ebb_sched *s, ebb_str image)
{
    char buf[1024];
    const char *colon, *slash;
    size_t len;
    ebb_str name;
    void *v;

    if (image == NULL)
        return UINT32_MAX;
    colon = strrchr(image, ':');
    slash = strrchr(image, '/');
    len = strlen(image);
    if (colon == NULL || (slash != NULL && colon < slash)) {
        if (len + 8 > sizeof(buf))
            return UINT32_MAX;
        memcpy(buf, image, len);
        memcpy(buf + len, ":latest", 8);
        name = ebb_str_find(buf, len + 7);
    } else {
        name = image;
    }
    if (name == NULL || (v = ebb__map_get(&s->images, name, NULL)) == NULL)
        return UINT32_MAX;
    return (uint32_t)((uintptr_t)v - 1);
}

/* The same, remembered per image string as pods write it: the pods of a
 * template name the same images placement after placement. */
static uint32_t image_lookup(struct ebb_sched *s, ebb_str image)
{
    void *v = image ? ebb__map_get(&s->image_of, image, NULL) : NULL;
    uint32_t id;

    if (v != NULL)
        return (uint32_t)((uintptr_t)v - 1);
    id = image_find(s, image);
    /* out of memory only forgets it */
    if (image != NULL &&
        ebb__map_put(&s->image_of, ebb_str_ref(image), NULL, (void *)((uintptr_t)id + 1), NULL) != 0)
        ebb_str_release(image);
    return id;
}

static bool node_has_image(const struct snode *n, uint32_t id)
{
    uint32_t lo = 0, hi = n->nimg;

    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (n->img[mid] == id)
            return true;
        if (n->img[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static int64_t image_score(struct pstate *ps, uint32_t node)
{
    const struct ebb_sched *s = ps->s;
    const struct snode *n = &s->nodes[node];
    int64_t sum = 0, max = MAX_IMAGE * (int64_t)ps->ncontainers;

    for (uint32_t i = 0; i < ps->nimg && n->nimg > 0; i++) {
        uint32_t id = ps->img[i];
        if (id == UINT32_MAX || !node_has_image(n, id))
            continue;
        sum = ebb_q_add(sum, ebb_q_of_double((double)s->image[id].size *
                                             ((double)s->image[id].nnodes / (double)s->nnodes)));
    }
    if (sum < MIN_IMAGE)
        sum = MIN_IMAGE;
    else if (sum > max)
        sum = max;
    if (max <= MIN_IMAGE)
        return 0;
    return MAX_SCORE * (sum - MIN_IMAGE) / (max - MIN_IMAGE);
}

/* ---- PodTopologySpread ------------------------------------------------------------- */

struct host_ctx {
    const struct pts_c *c;
    struct sarr *cnt;
};

static bool host_one(struct ebb_sched *s, uint32_t id, void *ud)
{
    struct host_ctx *cx = ud;
    const struct spod *sp = &s->spods[id];

    if (!sp->terminating)
        sarr_add(cx->cnt, sp->node, 1);
    return true;
}

struct zone_ctx {
    struct pstate *ps;
    const struct pts_c *c;
    struct counts *cnt;
    const struct sarr *reg;
};

/* Whether a node's pods count for a constraint at PreScore. */
static bool prescore_node_counts(struct pstate *ps, const struct pts_c *c, uint32_t node)
{
    if (ps->sc_require_all)
        for (uint16_t i = 0; i < ps->nsc; i++)
            if (ps->sc[i].col->dom[node] < 0)
                return false;
    if (ps->s->version == EBB_SCHED_V1_25)
        return ebb__sched_node_affinity_ok(ps, node);
    if (c->aff_policy == EBB_POLICY_HONOR && !ebb__sched_node_affinity_ok(ps, node))
        return false;
    if (c->taint_policy == EBB_POLICY_HONOR &&
        !ebb_pod_tolerates_node_taints(ps->pod, ps->s->nodes[node].node,
                                       EBB_EFFECT_NO_SCHEDULE | EBB_EFFECT_NO_EXECUTE))
        return false;
    return true;
}

static bool zone_one(struct ebb_sched *s, uint32_t id, void *ud)
{
    struct zone_ctx *cx = ud;
    const struct spod *sp = &s->spods[id];
    int32_t dom = cx->c->col->dom[sp->node];
    uint32_t d = dom < 0 ? cx->c->col->ndom : (uint32_t)dom;   /* ndom: the "" value */

    if (sp->terminating || !sarr_get(cx->reg, d))
        return true;
    if (prescore_node_counts(cx->ps, cx->c, sp->node))
        sarr_add(cx->cnt->a, d, 1);
    return true;
}

static int spread_prescore(struct pstate *ps, const uint32_t *feasible, uint32_t n)
{
    struct ebb_sched *s = ps->s;
    uint32_t nignored = 0;
    int rc;

    if ((rc = ebb__sched_spread_constraints(ps, EBB_TSC_SCHEDULE_ANYWAY, &ps->sc, &ps->nsc)) != 0)
        return rc;
    if (ps->nsc == 0) {
        if (s->version == EBB_SCHED_V1_25)
            ps->pts_uniform = true;
        else
            ps->skip[EBB_SP_POD_TOPOLOGY_SPREAD] = true;
        return 0;
    }
    ps->sc_require_all = ps->pod->ntsc > 0 || !ps->prof->spread_system;
    if ((ps->ignored = ebb__sarr_take(s)) == NULL)
        return EBB_ENOMEM;
    struct sarr **reg = ebb__sched_alloc(s, ps->nsc * sizeof(*reg));
    uint32_t *size = ebb__sched_alloc(s, ps->nsc * sizeof(*size));
    if (reg == NULL || size == NULL)
        return EBB_ENOMEM;
    for (uint16_t i = 0; i < ps->nsc; i++)
        if ((reg[i] = ebb__sarr_take(s)) == NULL)
            return EBB_ENOMEM;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t node = feasible[k];
        bool all = true;
        for (uint16_t i = 0; i < ps->nsc && ps->sc_require_all && all; i++)
            all = ps->sc[i].col->dom[node] >= 0;
        if (!all) {
            sarr_add(ps->ignored, node, 1);
            nignored++;
            continue;
        }
        for (uint16_t i = 0; i < ps->nsc; i++) {
            int32_t dom = ps->sc[i].col->dom[node];
            uint32_t d = dom < 0 ? ps->sc[i].col->ndom : (uint32_t)dom;
            if (ps->sc[i].col->hostname)
                continue;
            if (!sarr_get(reg[i], d)) {
                sarr_add(reg[i], d, 1);
                size[i]++;
            }
        }
    }
    for (uint16_t i = 0; i < ps->nsc; i++) {
        struct pts_c *c = &ps->sc[i];
        uint32_t sz = c->col->hostname ? n - nignored : size[i];
        c->weight = log((double)sz + 2);
        if (ebb_selector_is_empty(c->sel))
            continue;   /* counts nothing */
        if (c->col->hostname) {
            struct host_ctx hx = { c, NULL };
            if (ps->hostcnt == NULL && (ps->hostcnt = ebb__sched_alloc(s, ps->nsc * sizeof(*ps->hostcnt))) == NULL)
                return EBB_ENOMEM;
            if ((hx.cnt = ps->hostcnt[i] = ebb__sarr_take(s)) == NULL)
                return EBB_ENOMEM;
            ebb__sched_candidates(s, c->sel, ps->pod->ns, NULL, host_one, &hx);
        } else {
            struct zone_ctx zx = { ps, c, NULL, reg[i] };
            if ((c->cnt = ebb__counts_new(s, c->col)) == NULL)
                return EBB_ENOMEM;
            zx.cnt = c->cnt;
            ebb__sched_candidates(s, c->sel, ps->pod->ns, NULL, zone_one, &zx);
        }
    }
    return 0;
}

static int64_t spread_score(struct pstate *ps, uint32_t node)
{
    double score = 0;

    if (sarr_get(ps->ignored, node))
        return 0;
    for (uint16_t i = 0; i < ps->nsc; i++) {
        const struct pts_c *c = &ps->sc[i];
        int32_t dom = c->col->dom[node];
        int64_t cnt = 0;
        if (dom < 0)
            continue;
        if (ebb_selector_is_empty(c->sel))
            cnt = 0;
        else if (c->col->hostname)
            cnt = sarr_get(ps->hostcnt[i], node);
        else
            cnt = sarr_get(c->cnt->a, (uint32_t)dom);
        score += (double)cnt * c->weight + (double)(c->max_skew - 1);
    }
    return (int64_t)llround(score);
}

/* ---- InterPodAffinity --------------------------------------------------------------- */

struct topo_ctx {
    struct pstate *ps;
    struct counts *cnt;
    int64_t w;
    int rc;
};

static struct counts *topo_for(struct pstate *ps, struct keycol *col)
{
    for (size_t i = 0; i < ps->ntopo; i++)
        if (ps->topo[i]->col == col)
            return ps->topo[i];
    if ((ps->topo[ps->ntopo] = ebb__counts_new(ps->s, col)) == NULL)
        return NULL;
    return ps->topo[ps->ntopo++];
}

static bool topo_add(struct ebb_sched *s, uint32_t id, void *ud)
{
    struct topo_ctx *cx = ud;
    const struct spod *sp = &s->spods[id];
    int32_t dom = cx->cnt->col->dom[sp->node];

    /* a node without labels adds nothing; one without the key neither */
    if (dom >= 0 && s->nodes[sp->node].node->labels.n > 0) {
        sarr_add(cx->cnt->a, (uint32_t)dom, cx->w);
        cx->ps->topo_any = true;
    }
    return true;
}

static void topo_class(struct ebb_sched *s, struct tclass *c, void *ud)
{
    struct topo_ctx *cx = ud;
    struct pstate *ps = cx->ps;
    int64_t w;

    if (cx->rc != 0 || c->col == NULL)
        return;
    switch (c->kind) {
    case TC_REQ_AFF: w = ps->prof->hard_pod_affinity_weight; break;
    case TC_PREF_AFF: w = c->t.weight; break;
    case TC_PREF_ANTI: w = -(int64_t)c->t.weight; break;
    default: return;
    }
    if (w == 0 || !ebb__cterm_matches(&c->t, ps->pod->ns, &ps->pod->labels, ps->ns_labels))
        return;
    if ((cx->cnt = topo_for(ps, c->col)) == NULL) {
        cx->rc = EBB_ENOMEM;
        return;
    }
    cx->w = w;
    ebb__class_members(s, c, topo_add, cx);
}

static int ipa_prescore(struct pstate *ps)
{
    struct ebb_sched *s = ps->s;
    const struct ebb_affinity *a = ps->pod->affinity;
    struct topo_ctx cx = { ps, NULL, 0, 0 };
    uint16_t np = a ? (uint16_t)(a->naff_preferred + a->nanti_preferred) : 0;

    if (np == 0 && ps->prof->ignore_preferred_terms_of_existing_pods) {
        ps->skip[EBB_SP_INTER_POD_AFFINITY] = true;
        return 0;
    }
    if ((ps->topo = ebb__sched_alloc_list(s, (s->ncols + s->nclasses + np + 1) * sizeof(*ps->topo))) == NULL)
        return EBB_ENOMEM;
    if (np > 0) {
        if ((ps->paff = ebb__sched_alloc(s, np * sizeof(*ps->paff))) == NULL)
            return EBB_ENOMEM;
        for (uint16_t i = 0; i < np; i++) {
            bool anti = i >= a->naff_preferred;
            const struct ebb_weighted_pod_term *wt =
                anti ? &a->anti_preferred[i - a->naff_preferred] : &a->aff_preferred[i];
            struct keycol *col;
            ps->npaff = (uint16_t)(i + 1);
            if (ebb__cterm_compile(s, ps->pod, &wt->term, anti ? -wt->weight : wt->weight,
                                   &ps->paff[i]) != 0)
                return EBB_ENOMEM;
            if (ps->paff[i].key == NULL)
                continue;
            if ((col = ebb__sched_col(s, ps->paff[i].key)) == NULL || (cx.cnt = topo_for(ps, col)) == NULL)
                return EBB_ENOMEM;
            cx.w = ps->paff[i].weight;
            ebb__sched_candidates(s, ps->paff[i].sel, ps->pod->ns, &ps->paff[i], topo_add, &cx);
        }
    }
    ebb__sched_classes_for(s, &ps->pod->labels, topo_class, &cx);
    return cx.rc;
}

static int64_t ipa_score(struct pstate *ps, uint32_t node)
{
    int64_t sum = 0;

    for (size_t i = 0; i < ps->ntopo; i++) {
        int32_t dom = ps->topo[i]->col->dom[node];
        if (dom >= 0)
            sum += sarr_get(ps->topo[i]->a, (uint32_t)dom);
    }
    return sum;
}

/* ---- the extension points ------------------------------------------------------------ */

int ebb__sched_prescore(struct pstate *ps, const uint32_t *feasible, uint32_t n)
{
    struct ebb_sched *s = ps->s;
    const struct ebb_sched_profile *pr = ps->prof;
    const struct ebb_pod *p = ps->pod;
    const struct ebb_affinity *a = p->affinity;
    bool latest = s->version != EBB_SCHED_V1_25;
    int rc;

    if (pr->weight[EBB_SP_NODE_AFFINITY] > 0 && latest && (a == NULL || a->npreferred == 0) &&
        (pr->added_affinity == NULL || pr->added_affinity->npreferred == 0))
        ps->skip[EBB_SP_NODE_AFFINITY] = true;
    if (pr->weight[EBB_SP_NODE_RESOURCES_FIT] > 0) {
        if ((ps->fit_req = ebb__sched_alloc(s, (pr->nfit_resources + 1) * sizeof(int64_t))) == NULL)
            return EBB_ENOMEM;
        for (size_t i = 0; i < pr->nfit_resources; i++)
            ps->fit_req[i] = pod_request(p, pr->fit_resources[i].id, true);
        ps->fit_cpu_mem = pr->nfit_resources == 2 && pr->fit_strategy != EBB_SCHED_RTCR &&
                          pr->fit_resources[0].id == EBB_RES_CPU && pr->fit_resources[1].id == EBB_RES_MEMORY;
        if (ps->fit_cpu_mem) {
            ps->fit_most = pr->fit_strategy == EBB_SCHED_MOST_ALLOCATED;
            ps->fit_w[0] = pr->fit_resources[0].weight;
            ps->fit_w[1] = pr->fit_resources[1].weight;
        }
    }
    if (pr->weight[EBB_SP_BALANCED_ALLOCATION] > 0) {
        bool zero = true;
        if ((ps->ba_req = ebb__sched_alloc(s, (pr->nba_resources + 1) * sizeof(int64_t))) == NULL)
            return EBB_ENOMEM;
        for (size_t i = 0; i < pr->nba_resources; i++) {
            ps->ba_req[i] = pod_request(p, pr->ba_resources[i].id, false);
            zero &= ps->ba_req[i] == 0;
        }
        if (zero && latest)
            ps->skip[EBB_SP_BALANCED_ALLOCATION] = true;   /* a best-effort pod */
        ps->ba_cpu_mem = pr->nba_resources == 2 && pr->ba_resources[0].id == EBB_RES_CPU &&
                         pr->ba_resources[1].id == EBB_RES_MEMORY;
    }
    if (pr->weight[EBB_SP_IMAGE_LOCALITY] > 0) {
        uint32_t ninit = latest ? p->ninit_images : 0;
        ps->ncontainers = p->nimages + ninit;
        if ((ps->img = ebb__sched_alloc(s, (ps->ncontainers + 1) * sizeof(*ps->img))) == NULL)
            return EBB_ENOMEM;
        for (uint32_t i = 0; i < ninit; i++)
            ps->img[ps->nimg++] = image_lookup(s, p->init_images[i]);
        for (uint32_t i = 0; i < p->nimages; i++)
            ps->img[ps->nimg++] = image_lookup(s, p->images[i]);
        for (uint32_t i = 0; i < ps->nimg; i++)
            ps->nimg_known += ps->img[i] != UINT32_MAX;
    }
    if (pr->weight[EBB_SP_POD_TOPOLOGY_SPREAD] > 0 && (rc = spread_prescore(ps, feasible, n)) != 0)
        return rc;
    if (pr->weight[EBB_SP_INTER_POD_AFFINITY] > 0 && (rc = ipa_prescore(ps)) != 0)
        return rc;
    return 0;
}

static int64_t taint_score(struct pstate *ps, uint32_t node)
{
    const struct ebb_node *n = ps->s->nodes[node].node;
    const struct ebb_pod *p = ps->pod;
    int64_t count = 0;

    if (ps->s->nodes[node].ntaints == 0)
        return 0;

    for (uint16_t i = 0; i < n->ntaints; i++) {
        const struct ebb_taint *t = &n->taints[i];
        bool tolerated = false;
        if (t->effect != EBB_EFFECT_PREFER_NO_SCHEDULE)
            continue;
        /* only tolerations with no effect or PreferNoSchedule count */
        for (uint16_t k = 0; k < p->ntolerations && !tolerated; k++) {
            const struct ebb_toleration *tol = &p->tolerations[k];
            if (tol->effect != EBB_EFFECT_ALL && tol->effect != EBB_EFFECT_PREFER_NO_SCHEDULE)
                continue;
            tolerated = ebb_toleration_tolerates(tol, t);
        }
        count += !tolerated;
    }
    return count;
}

static int64_t affinity_score(struct pstate *ps, uint32_t node)
{
    const struct ebb_affinity *added = ps->prof->added_affinity;
    int64_t sum = ebb__sched_node_preferred(ps, node);

    /* the node object only for the profile's own terms */
    for (uint16_t i = 0; added != NULL && i < added->npreferred; i++)
        if (ebb_node_term_matches(&added->preferred[i].term, ps->s->nodes[node].node))
            sum += added->preferred[i].weight;
    return sum;
}

int64_t ebb__sched_score(struct pstate *ps, int plugin, uint32_t node)
{
    switch (plugin) {
    case EBB_SP_TAINT_TOLERATION: return taint_score(ps, node);
    case EBB_SP_NODE_AFFINITY: return affinity_score(ps, node);
    case EBB_SP_NODE_RESOURCES_FIT: return fit_score(ps, node);
    case EBB_SP_BALANCED_ALLOCATION: return balanced_score(ps, node);
    case EBB_SP_IMAGE_LOCALITY: return image_score(ps, node);
    case EBB_SP_POD_TOPOLOGY_SPREAD: return ps->pts_uniform ? 0 : spread_score(ps, node);
    case EBB_SP_INTER_POD_AFFINITY: return ipa_score(ps, node);
    default: return 0;
    }
}

/* LeastAllocated / MostAllocated over cpu and memory, from the node's record. */
static inline int64_t fit_cpu_mem(const struct pstate *ps, const struct shot *n)
{
    int64_t alloc[2] = { n->alloc_cpu, n->alloc_mem };
    int64_t req[2] = { ebb_q_add(n->nz_cpu, ps->fit_req[0]), ebb_q_add(n->nz_mem, ps->fit_req[1]) };
    int64_t sum = 0, wsum = 0, s[2];
    bool most = ps->fit_most;

    for (int r = 0; r < 2; r++) {
        if (alloc[r] == 0)
            continue;
        s[r] = fit_one(most, req[r], alloc[r]);
        sum += s[r] * ps->fit_w[r];
        wsum += ps->fit_w[r];
    }
    /* equal positive weights (the defaults): w(s0 + s1) / 2w is the
     * halved sum of two scores of 0..100, without a 64-bit division */
    if (alloc[0] != 0 && alloc[1] != 0 && ps->fit_w[0] == ps->fit_w[1] && ps->fit_w[0] > 0)
        return (s[0] + s[1]) >> 1;
    return wsum ? sum / wsum : 0;
}

static inline int64_t balanced_cpu_mem(const struct pstate *ps, const struct shot *n)
{
    double f[2];
    int k = 0;

    if (n->alloc_cpu != 0) {
        f[k] = (double)ebb_q_add(n->req_cpu, ps->ba_req[0]) / (double)n->alloc_cpu;
        f[k] = f[k] > 1 ? 1 : f[k];
        k++;
    }
    if (n->alloc_mem != 0) {
        f[k] = (double)ebb_q_add(n->req_mem, ps->ba_req[1]) / (double)n->alloc_mem;
        f[k] = f[k] > 1 ? 1 : f[k];
        k++;
    }
    return (int64_t)((1 - (k == 2 ? fabs((f[0] - f[1]) / 2) : 0)) * (double)MAX_SCORE);
}

/* ImageLocality with no image known on any node, InterPodAffinity with no
 * term that counts anywhere: the plugin scores 0 on every node. */
static inline bool nothing_counts(const struct pstate *ps, int plugin)
{
    return (plugin == EBB_SP_IMAGE_LOCALITY && ps->nimg_known == 0) ||
           (plugin == EBB_SP_INTER_POD_AFFINITY && ps->ntopo == 0);
}

void ebb__sched_score_all(struct pstate *ps, int plugin, const uint32_t *feasible, uint32_t n,
                          int64_t *out)
{
    const struct shot *hot = ps->s->hot;

    switch (plugin) {
    case EBB_SP_TAINT_TOLERATION:
        for (uint32_t i = 0; i < n; i++)
            out[i] = (hot[feasible[i]].flags & HOT_TAINTED) ? taint_score(ps, feasible[i]) : 0;
        return;
    case EBB_SP_NODE_AFFINITY:
        if (ps->prof->added_affinity == NULL) {   /* the pod's own terms: the memo */
            for (uint32_t i = 0; i < n; i++)
                out[i] = ebb__sched_node_preferred(ps, feasible[i]);
            return;
        }
        break;
    case EBB_SP_NODE_RESOURCES_FIT:
        if (ps->fit_cpu_mem) {
            for (uint32_t i = 0; i < n; i++)
                out[i] = fit_cpu_mem(ps, &hot[feasible[i]]);
            return;
        }
        break;
    case EBB_SP_BALANCED_ALLOCATION:
        if (ps->ba_cpu_mem) {
            for (uint32_t i = 0; i < n; i++)
                out[i] = balanced_cpu_mem(ps, &hot[feasible[i]]);
            return;
        }
        break;
    case EBB_SP_IMAGE_LOCALITY:
    case EBB_SP_INTER_POD_AFFINITY:
        if (nothing_counts(ps, plugin)) {
            memset(out, 0, n * sizeof(*out));
            return;
        }
        break;
    default:
        break;
    }
    for (uint32_t i = 0; i < n; i++)
        out[i] = ebb__sched_score(ps, plugin, feasible[i]);
}

bool ebb__sched_score_add(struct pstate *ps, int plugin, const uint32_t *feasible, uint32_t n, int64_t w,
                          int64_t *totals)
{
    const struct shot *hot = ps->s->hot;
    int64_t all;

    switch (plugin) {
    case EBB_SP_TAINT_TOLERATION:
        /* no node tainted: 0 everywhere, reversed to MAX_SCORE */
        for (uint32_t i = 0; i < n; i++)
            if (hot[feasible[i]].flags & HOT_TAINTED)
                return false;
        all = MAX_SCORE;
        break;
    case EBB_SP_NODE_RESOURCES_FIT:
        if (!ps->fit_cpu_mem)
            return false;
        if (ps->ba_cpu_mem && !ps->skip[EBB_SP_BALANCED_ALLOCATION] &&
            ps->prof->weight[EBB_SP_BALANCED_ALLOCATION] > 0) {
            /* both from one read of each node's record */
            int64_t wb = ps->prof->weight[EBB_SP_BALANCED_ALLOCATION];
            for (uint32_t i = 0; i < n; i++) {
                const struct shot *h = &hot[feasible[i]];
                totals[i] += fit_cpu_mem(ps, h) * w + balanced_cpu_mem(ps, h) * wb;
            }
            ps->ba_added = true;
            return true;
        }
        for (uint32_t i = 0; i < n; i++)
            totals[i] += fit_cpu_mem(ps, &hot[feasible[i]]) * w;
        return true;
    case EBB_SP_BALANCED_ALLOCATION:
        if (ps->ba_added)
            return true;
        if (!ps->ba_cpu_mem)
            return false;
        for (uint32_t i = 0; i < n; i++)
            totals[i] += balanced_cpu_mem(ps, &hot[feasible[i]]) * w;
        return true;
    case EBB_SP_IMAGE_LOCALITY:
    case EBB_SP_INTER_POD_AFFINITY:
        /* 0 everywhere: ImageLocality is not normalized, InterPodAffinity
         * normalizes all zeros to 0 */
        return nothing_counts(ps, plugin);
    case EBB_SP_POD_TOPOLOGY_SPREAD:
        if (!ps->pts_uniform)
            return false;
        all = MAX_SCORE;
        break;
    default:
        return false;
    }
    for (uint32_t i = 0; i < n; i++)
        totals[i] += all * w;
    return true;
}

/* helper.DefaultNormalizeScore */
static void default_normalize(int64_t *sc, uint32_t n, bool reverse)
{
    int64_t max = 0;

    for (uint32_t i = 0; i < n; i++)
        if (sc[i] > max)
            max = sc[i];
    for (uint32_t i = 0; i < n; i++) {
        if (max == 0) {
            sc[i] = reverse ? MAX_SCORE : sc[i];
            continue;
        }
        sc[i] = MAX_SCORE * sc[i] / max;
        if (reverse)
            sc[i] = MAX_SCORE - sc[i];
    }
}

void ebb__sched_normalize(struct pstate *ps, int plugin, const uint32_t *feasible, int64_t *sc,
                          uint32_t n)
{
    switch (plugin) {
    case EBB_SP_TAINT_TOLERATION:
        default_normalize(sc, n, true);
        return;
    case EBB_SP_NODE_AFFINITY:
        default_normalize(sc, n, false);
        return;
    case EBB_SP_POD_TOPOLOGY_SPREAD: {
        int64_t min = INT64_MAX, max = 0;
        if (ps->pts_uniform) {
            for (uint32_t i = 0; i < n; i++)
                sc[i] = MAX_SCORE;
            return;
        }
        for (uint32_t i = 0; i < n; i++) {
            if (sarr_get(ps->ignored, feasible[i]))
                continue;
            if (sc[i] < min)
                min = sc[i];
            if (sc[i] > max)
                max = sc[i];
        }
        for (uint32_t i = 0; i < n; i++) {
            if (sarr_get(ps->ignored, feasible[i]))
                sc[i] = 0;
            else if (max == 0)
                sc[i] = MAX_SCORE;
            else
                sc[i] = MAX_SCORE * (max + min - sc[i]) / max;
        }
        return;
    }
    case EBB_SP_INTER_POD_AFFINITY: {
        int64_t min = INT64_MAX, max = INT64_MIN;
        if (!ps->topo_any)
            return;
        for (uint32_t i = 0; i < n; i++) {
            if (sc[i] > max)
                max = sc[i];
            if (sc[i] < min)
                min = sc[i];
        }
        for (uint32_t i = 0; i < n; i++) {
            double f = 0;
            if (max - min > 0)
                f = (double)MAX_SCORE * ((double)(sc[i] - min) / (double)(max - min));
            sc[i] = (int64_t)f;
        }
        return;
    }
    default:
        return;
    }
}
