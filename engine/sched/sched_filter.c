/* The kube-scheduler model's PreFilter and Filter plugins (see
 * ebb/sched.h and SCHEDULER.md section 3): NodeUnschedulable, NodeName,
 * TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
 * PodTopologySpread and InterPodAffinity, with their failure reasons. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/quantity.h"
#include "ebb/affinity.h"
#include "ebb/selector.h"
#include "ebb/taints.h"
#include "sched/sched_int.h"

enum { OK = 0, UNSCHEDULABLE = 1, UNRESOLVABLE = 2 };

static const char *const r_unschedulable = "node(s) were unschedulable";
static const char *const r_node_name = "node(s) didn't match the requested node name";
static const char *const r_affinity = "node(s) didn't match Pod's node affinity/selector";
static const char *const r_enforced = "node(s) didn't match scheduler-enforced node affinity";
static const char *const r_conflict = "pod affinity terms conflict";
static const char *const r_ports = "node(s) didn't have free ports for the requested pod ports";
static const char *const r_spread = "node(s) didn't match pod topology spread constraints";
static const char *const r_spread_label =
    "node(s) didn't match pod topology spread constraints (missing required label)";
static const char *const r_pod_aff = "node(s) didn't match pod affinity rules";
static const char *const r_pod_anti = "node(s) didn't match pod anti-affinity rules";
static const char *const r_existing_anti = "node(s) didn't satisfy existing pods anti-affinity rules";

/* Append a reason ("\x1f" between two). Only when reasons are asked for:
 * the search asks the status alone, millions of times, and a variadic
 * call costs it even when it returns at once. */
#define say(buf, ...) do { if ((buf) != NULL) say_at((buf), __VA_ARGS__); } while (0)

static void say_at(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say_at(char *buf, size_t len, const char *fmt, ...)
{
    size_t off;
    va_list ap;

    off = strlen(buf);
    if (off > 0 && off + 1 < len) {
        buf[off++] = '\x1f';
        buf[off] = '\0';
    }
    if (off >= len)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + off, len - off, fmt, ap);
    va_end(ap);
}

static bool filter_enabled(const struct ebb_sched_profile *p, int id)
{
    for (uint8_t i = 0; i < p->nfilters; i++)
        if (p->filters[i] == id)
            return true;
    return false;
}

/* ---- the profile's default spreading selector ------------------------------ */

static int add_reqs(struct ebb_selector *to, const struct ebb_selector *from)
{
    struct ebb_selector *d;
    struct ebb_req *r;

    if (from == NULL || from->nreqs == 0)
        return 0;
    if ((d = ebb_selector_dup(from)) == NULL)
        return EBB_ENOMEM;
    if ((r = realloc(to->reqs, (size_t)(to->nreqs + d->nreqs) * sizeof(*r))) == NULL) {
        ebb_selector_free(d);
        return EBB_ENOMEM;
    }
    to->reqs = r;
    memcpy(to->reqs + to->nreqs, d->reqs, d->nreqs * sizeof(*r));
    to->nreqs = (uint16_t)(to->nreqs + d->nreqs);
    free(d->reqs);
    free(d);
    return 0;
}

struct svc_ctx {
    const struct ebb_pod *pod;
    struct ebb_selector *sel;
    int rc;
};

static void svc_one(void *obj, void *ud)
{
    const struct ebb_workload *w = obj;
    struct svc_ctx *cx = ud;

    /* a Service without a selector selects no pod */
    if (cx->rc == 0 && w->ns == cx->pod->ns && w->selector != NULL &&
        ebb_selector_matches(w->selector, &cx->pod->labels))
        cx->rc = add_reqs(cx->sel, w->selector);
}

/* helper.DefaultSelector: the selectors of the Services selecting the pod
 * and of its controller (ReplicationController, ReplicaSet, StatefulSet)
 * when the snapshot has it, ANDed. Owned by the caller; empty: none. */
struct ebb_selector *ebb__sched_default_selector(struct ebb_sched *s, const struct ebb_pod *p)
{
    struct ebb_selector *sel = ebb_selector_everything();
    struct svc_ctx cx = { p, sel, 0 };

    if (sel == NULL)
        return NULL;
    ebb_cache_each(s->cache, EBB_KIND_SERVICE, svc_one, &cx);
    for (uint16_t i = 0; cx.rc == 0 && i < p->nowners; i++) {
        const struct ebb_owner *o = &p->owners[i];
        const struct ebb_workload *w = NULL;
        int kind = 0;
        if (!o->controller || o->kind == NULL)
            continue;
        if (strcmp(o->kind, "ReplicationController") == 0)
            kind = EBB_KIND_REPLICATION_CONTROLLER;
        else if (strcmp(o->kind, "ReplicaSet") == 0)
            kind = EBB_KIND_REPLICA_SET;
        else if (strcmp(o->kind, "StatefulSet") == 0)
            kind = EBB_KIND_STATEFUL_SET;
        if (kind != 0 && (w = ebb_cache_workload(s->cache, kind, p->ns, o->name)) != NULL)
            cx.rc = add_reqs(sel, w->selector);
        break;   /* the controller is the one owner with controller: true */
    }
    if (cx.rc != 0) {
        ebb_selector_free(sel);
        return NULL;
    }
    return sel;
}

/* ---- PreFilter -------------------------------------------------------------- */

/* matchLabelKeys: "key In (the pod's value)" for each key the pod has. */
static int merge_match_keys(struct ebb_selector *sel, const struct ebb_tsc *t, const struct ebb_pod *p)
{
    for (uint16_t i = 0; i < t->nmatch_keys; i++) {
        ebb_str v;
        struct ebb_req r = { 0 }, *reqs;
        if (!ebb_labels_lookup(&p->labels, t->match_keys[i], &v))
            continue;
        if ((r.values = malloc(sizeof(*r.values))) == NULL)
            return EBB_ENOMEM;
        if ((reqs = realloc(sel->reqs, (sel->nreqs + 1u) * sizeof(*reqs))) == NULL) {
            free(r.values);
            return EBB_ENOMEM;
        }
        r.key = ebb_str_ref(t->match_keys[i]);
        r.op = EBB_OP_IN;
        r.values[0] = ebb_str_ref(v);
        r.nvalues = 1;
        sel->reqs = reqs;
        sel->reqs[sel->nreqs++] = r;
    }
    return 0;
}

/* The constraints of the pod for `when` (EBB_TSC_*): its own, or when it
 * has none the profile's defaults with the default selector. */
int ebb__sched_spread_constraints(struct pstate *ps, int when, struct pts_c **out, uint16_t *n)
{
    struct ebb_sched *s = ps->s;
    const struct ebb_pod *p = ps->pod;
    const struct ebb_sched_profile *pr = ps->prof;
    static const struct ebb_tsc system[2] = {
        { 3, 0, NULL, EBB_TSC_SCHEDULE_ANYWAY, EBB_POLICY_UNSET, EBB_POLICY_UNSET, NULL, 0, NULL },
        { 5, 0, NULL, EBB_TSC_SCHEDULE_ANYWAY, EBB_POLICY_UNSET, EBB_POLICY_UNSET, NULL, 0, NULL },
    };
    const struct ebb_tsc *src = p->tsc;
    uint16_t nsrc = p->ntsc, k = 0;
    struct ebb_selector *dflt = NULL;
    struct pts_c *c;
    bool latest = s->version != EBB_SCHED_V1_25;

    *out = NULL;
    *n = 0;
    if (nsrc == 0) {
        src = pr->spread_system ? system : pr->spread_defaults;
        nsrc = pr->spread_system ? 2 : pr->nspread_defaults;
    }
    if ((c = ebb__sched_alloc(s, (nsrc + 1u) * sizeof(*c))) == NULL)
        return EBB_ENOMEM;
    for (uint16_t i = 0; i < nsrc; i++) {
        const struct ebb_tsc *t = &src[i];
        struct pts_c *pc = &c[k];
        ebb_str key = t->topology_key;
        if (t->when_unsatisfiable != when)
            continue;
        if (src == system)
            key = i == 0 ? s->hostname_key : s->zone_key;
        if (src != p->tsc) {
            if (dflt == NULL && (dflt = ebb__sched_default_selector(s, p)) == NULL)
                return EBB_ENOMEM;
            if (ebb_selector_is_empty(dflt))
                break;   /* no Service nor controller: no default constraints */
            pc->sel = ebb_selector_dup(dflt);
        } else {
            pc->sel = t->selector ? ebb_selector_dup(t->selector) : ebb_selector_nothing();
            if (pc->sel != NULL && latest && !(pc->sel->flags & EBB_SEL_NOTHING) &&
                merge_match_keys(pc->sel, t, p) != 0) {
                ebb_selector_free(pc->sel);
                pc->sel = NULL;
            }
        }
        if (pc->sel == NULL || (pc->col = ebb__sched_col(s, key)) == NULL) {
            ebb_selector_free(pc->sel);
            ebb_selector_free(dflt);
            for (uint16_t j = 0; j < k; j++)
                ebb_selector_free(c[j].sel);
            return EBB_ENOMEM;
        }
        pc->max_skew = t->max_skew;
        pc->min_domains = latest && t->min_domains > 0 ? t->min_domains : 1;
        pc->aff_policy = latest && t->node_affinity_policy == EBB_POLICY_IGNORE ? EBB_POLICY_IGNORE
                                                                                : EBB_POLICY_HONOR;
        pc->taint_policy = latest && t->node_taints_policy == EBB_POLICY_HONOR ? EBB_POLICY_HONOR
                                                                                : EBB_POLICY_IGNORE;
        pc->self_match = ebb_selector_matches(pc->sel, &p->labels);
        k++;
    }
    ebb_selector_free(dflt);
    *out = c;
    *n = k;
    return 0;
}

/* ---- node affinity, per node, memoized -------------------------------------- */

static uint64_t hmix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ull;
}

static uint64_t term_hash(uint64_t h, const struct ebb_node_term *t)
{
    for (int f = 0; f < 2; f++) {
        const struct ebb_req *r = f ? t->fields : t->exprs;
        uint16_t n = f ? t->nfields : t->nexprs;
        h = hmix(h, n);
        for (uint16_t i = 0; i < n; i++) {
            h = hmix(hmix(h, (uintptr_t)r[i].key), r[i].op);
            for (uint16_t k = 0; k < r[i].nvalues; k++)
                h = hmix(h, (uintptr_t)r[i].values[k]);
        }
    }
    return h;
}

static void ptsmemo_free(struct ptsmemo *m)
{
    while (m != NULL) {
        struct ptsmemo *next = m->next;
        for (uint16_t i = 0; i < m->n; i++) {
            free(m->ok[i]);
            free(m->reg[i]);
        }
        free(m);
        m = next;
    }
}

static uint64_t affinity_hash(const struct ebb_pod *p)
{
    const struct ebb_affinity *a = p->affinity;
    uint64_t h = 0x51ed270b;

    for (uint32_t i = 0; i < p->node_selector.n; i++)
        h = hmix(hmix(h, (uintptr_t)p->node_selector.kv[i].key), (uintptr_t)p->node_selector.kv[i].value);
    if (a == NULL)
        return h;
    h = hmix(h, a->has_required);
    for (uint16_t i = 0; i < a->nrequired; i++)
        h = term_hash(h, &a->required[i]);
    h = hmix(h, a->npreferred);
    for (uint16_t i = 0; i < a->npreferred; i++)
        h = term_hash(hmix(h, (uint64_t)(int64_t)a->preferred[i].weight), &a->preferred[i].term);
    return h;
}

static bool affinity_same(const struct ebb_pod *a, const struct ebb_pod *b)
{
    uint16_t na = a->affinity ? a->affinity->npreferred : 0, nb = b->affinity ? b->affinity->npreferred : 0;

    if (!ebb_pod_node_affinity_equal(a, b) || na != nb)
        return false;
    for (uint16_t i = 0; i < na; i++)
        if (a->affinity->preferred[i].weight != b->affinity->preferred[i].weight ||
            !ebb_node_term_equal(&a->affinity->preferred[i].term, &b->affinity->preferred[i].term))
            return false;
    return true;
}

int ebb__sched_affmemo(struct pstate *ps)
{
    struct ebb_sched *s = ps->s;
    uint64_t h = affinity_hash(ps->pod);
    struct affmemo *m = NULL;

    for (uint32_t i = 0; i < s->naffmemo; i++) {
        if (s->affmemo[i].hash == h && affinity_same(s->affmemo[i].rep, ps->pod)) {
            m = &s->affmemo[i];
            break;
        }
    }
    if (m == NULL) {
        if (s->naffmemo < AFFMEMO_MAX) {
            m = &s->affmemo[s->naffmemo];
            if ((m->match = malloc(s->nnodes + 1)) == NULL ||
                (m->pref = malloc((s->nnodes + 1) * sizeof(*m->pref))) == NULL)
                return EBB_ENOMEM;
            s->naffmemo++;
        } else {
            m = &s->affmemo[0];
            for (uint32_t i = 1; i < s->naffmemo; i++)
                if (s->affmemo[i].used < m->used)
                    m = &s->affmemo[i];
            ebb_pod_free(m->rep);
            ptsmemo_free(m->pts);
        }
        m->pts = NULL;
        if ((m->rep = ebb_pod_clone(ps->pod)) == NULL)
            return EBB_ENOMEM;
        m->hash = h;
        memset(m->match, 0, s->nnodes);
        for (uint32_t i = 0; i < s->nnodes; i++)
            m->pref[i] = INT32_MIN;
    }
    m->used = ++s->affmemo_clock;
    ps->memo = m;
    return 0;
}

void ebb__sched_affmemo_free(struct ebb_sched *s)
{
    for (uint32_t i = 0; i < s->naffmemo; i++) {
        ebb_pod_free(s->affmemo[i].rep);
        ptsmemo_free(s->affmemo[i].pts);
        free(s->affmemo[i].match);
        free(s->affmemo[i].pref);
    }
    s->naffmemo = 0;
}

bool ebb__sched_node_affinity_fill(struct pstate *ps, uint32_t node)
{
    uint8_t *m = &ps->memo->match[node];

    *m = ebb_pod_matches_node_selector(ps->pod, ps->s->nodes[node].node) ? 1 : 2;
    return *m == 1;
}

int64_t ebb__sched_node_preferred_fill(struct pstate *ps, uint32_t node)
{
    int32_t *w = &ps->memo->pref[node];
    int64_t v = ebb_pod_preferred_weight(ps->pod, ps->s->nodes[node].node);

    *w = v > INT32_MAX ? INT32_MAX : v < INT32_MIN + 1 ? INT32_MIN + 1 : (int32_t)v;
    return *w;
}

static bool tolerates_do_not_schedule(const struct ebb_pod *p, const struct ebb_node *n)
{
    return ebb_pod_tolerates_node_taints(p, n, EBB_EFFECT_NO_SCHEDULE | EBB_EFFECT_NO_EXECUTE);
}

struct count_ctx {
    struct pstate *ps;
    struct pts_c *c;
    const uint8_t *node_ok;          /* per node: counted */
};

static bool count_one(struct ebb_sched *s, uint32_t id, void *ud)
{
    struct count_ctx *cx = ud;
    const struct spod *sp = &s->spods[id];
    int32_t dom;

    if (sp->terminating)
        return true;
    if (!cx->node_ok[sp->node])
        return true;
    if ((dom = cx->c->col->dom[sp->node]) >= 0)
        sarr_add(cx->c->cnt->a, (uint32_t)dom, 1);
    return true;
}

/* The nodes each hard constraint counts and the domains it registers: every
 * node with all the constraints' keys that the inclusion policies let in
 * (v1.25: the pod's node affinity). Into m, whose arrays are zeroed. */
static void spread_domains(struct pstate *ps, struct ptsmemo *m)
{
    struct ebb_sched *s = ps->s;

    for (uint32_t n = 0; n < s->nnodes; n++) {
        int aff = -1, taint = -1;
        bool all = true;
        for (uint16_t i = 0; i < ps->nfc && all; i++)
            all = ps->fc[i].col->dom[n] >= 0;
        if (!all)
            continue;
        for (uint16_t i = 0; i < ps->nfc; i++) {
            const struct pts_c *c = &ps->fc[i];
            uint32_t d = (uint32_t)c->col->dom[n];
            if (c->aff_policy == EBB_POLICY_HONOR) {
                if (aff < 0)
                    aff = ebb__sched_node_affinity_ok(ps, n);
                if (!aff)
                    continue;
            }
            if (c->taint_policy == EBB_POLICY_HONOR) {
                if (taint < 0)
                    taint = tolerates_do_not_schedule(ps->pod, s->nodes[n].node);
                if (!taint)
                    continue;
            }
            m->ok[i][n] = 1;
            if (!m->reg[i][d]) {
                m->reg[i][d] = 1;
                m->ndomains[i]++;
            }
        }
    }
}

/* The domains of the pod's hard constraints: remembered with its node
 * affinity when its taints do not matter, else worked out for the call. */
static int spread_domains_for(struct pstate *ps, struct ptsmemo **out)
{
    struct ebb_sched *s = ps->s;
    bool keep = ps->nfc <= PTSMEMO_C;
    struct ptsmemo *m;

    for (uint16_t i = 0; i < ps->nfc && keep; i++)
        keep = ps->fc[i].taint_policy != EBB_POLICY_HONOR;
    for (m = keep ? ps->memo->pts : NULL; m != NULL; m = m->next) {
        bool same = m->n == ps->nfc;
        for (uint16_t i = 0; i < m->n && same; i++)
            same = m->col[i] == ps->fc[i].col && m->aff[i] == ps->fc[i].aff_policy;
        if (same) {
            *out = m;
            return 0;
        }
    }
    if (!keep) {
        if ((m = ebb__sched_alloc(s, sizeof(*m))) == NULL)
            return EBB_ENOMEM;
        m->n = ps->nfc;
        for (uint16_t i = 0; i < ps->nfc; i++)
            if ((m->ok[i] = ebb__sched_alloc(s, s->nnodes + 1)) == NULL ||
                (m->reg[i] = ebb__sched_alloc(s, ps->fc[i].col->ndom + 1)) == NULL)
                return EBB_ENOMEM;
        spread_domains(ps, m);
        *out = m;
        return 0;
    }
    if ((m = calloc(1, sizeof(*m))) == NULL)
        return EBB_ENOMEM;
    m->n = ps->nfc;
    for (uint16_t i = 0; i < ps->nfc; i++) {
        m->col[i] = ps->fc[i].col;
        m->aff[i] = ps->fc[i].aff_policy;
        m->n = (uint16_t)(i + 1);
        if ((m->ok[i] = calloc(s->nnodes + 1, 1)) == NULL ||
            (m->reg[i] = calloc(ps->fc[i].col->ndom + 1, 1)) == NULL) {
            ptsmemo_free(m);
            return EBB_ENOMEM;
        }
    }
    spread_domains(ps, m);
    m->next = ps->memo->pts;
    ps->memo->pts = m;
    *out = m;
    return 0;
}

static int spread_prefilter(struct pstate *ps)
{
    struct ebb_sched *s = ps->s;
    struct ptsmemo *m;
    int rc;

    if ((rc = ebb__sched_spread_constraints(ps, EBB_TSC_DO_NOT_SCHEDULE, &ps->fc, &ps->nfc)) != 0)
        return rc;
    if (ps->nfc == 0)
        return 0;
    if ((rc = spread_domains_for(ps, &m)) != 0)
        return rc;
    for (uint16_t i = 0; i < ps->nfc; i++) {
        struct pts_c *c = &ps->fc[i];
        struct count_ctx cx = { ps, c, m->ok[i] };
        if ((c->cnt = ebb__counts_new(s, c->col)) == NULL)
            return EBB_ENOMEM;
        c->ok = m->ok[i];
        c->reg = m->reg[i];
        c->ndomains = m->ndomains[i];
        if (!ebb_selector_is_empty(c->sel))
            ebb__sched_candidates(s, c->sel, ps->pod->ns, NULL, count_one, &cx);
        c->min = INT64_MAX;
        for (uint32_t d = 0; d < c->col->ndom; d++)
            if (c->reg[d] && sarr_get(c->cnt->a, d) < c->min)
                c->min = sarr_get(c->cnt->a, d);
        if (c->ndomains < (uint32_t)c->min_domains)
            c->min = 0;
    }
    return 0;
}

/* Counts per column for the call: the one of `col` in list[0..*n), made if
 * missing. */
static struct counts *counts_for(struct ebb_sched *s, struct counts **list, size_t *n,
                                 struct keycol *col)
{
    for (size_t i = 0; i < *n; i++)
        if (list[i]->col == col)
            return list[i];
    if ((list[*n] = ebb__counts_new(s, col)) == NULL)
        return NULL;
    return list[(*n)++];
}

struct aff_ctx {
    struct pstate *ps;
    struct cterm *terms;
    uint16_t nterms;
    struct counts **cnt;             /* per term */
    bool all;                        /* the pod must match every term (affinity) */
    bool *any;
};

static bool aff_one(struct ebb_sched *s, uint32_t id, void *ud)
{
    struct aff_ctx *cx = ud;
    const struct spod *sp = &s->spods[id];
    const struct ebb_labels *nsl = ebb__sched_ns_labels(s, sp->ns);

    if (cx->all) {
        for (uint16_t t = 1; t < cx->nterms; t++)   /* term 0 chose it */
            if (!ebb__cterm_matches(&cx->terms[t], sp->ns, &sp->labels, nsl))
                return true;
        for (uint16_t t = 0; t < cx->nterms; t++) {
            int32_t dom = cx->cnt[t]->col->dom[sp->node];
            if (dom >= 0) {
                sarr_add(cx->cnt[t]->a, (uint32_t)dom, 1);
                *cx->any = true;
            }
        }
        return true;
    }
    /* anti-affinity: called per term (cx->terms is that one term) */
    int32_t dom = cx->cnt[0]->col->dom[sp->node];
    if (dom >= 0) {
        sarr_add(cx->cnt[0]->a, (uint32_t)dom, 1);
        *cx->any = true;
    }
    return true;
}

struct existing_ctx {
    struct pstate *ps;
    struct counts *cnt;
    int rc;
};

static bool existing_member(struct ebb_sched *s, uint32_t id, void *ud)
{
    struct existing_ctx *cx = ud;
    int32_t dom = cx->cnt->col->dom[s->spods[id].node];

    if (dom >= 0)
        sarr_add(cx->cnt->a, (uint32_t)dom, 1);
    return true;
}

static void existing_class(struct ebb_sched *s, struct tclass *c, void *ud)
{
    struct existing_ctx *cx = ud;
    struct pstate *ps = cx->ps;

    if (cx->rc != 0 || c->kind != TC_REQ_ANTI || c->col == NULL ||
        !ebb__cterm_matches(&c->t, ps->pod->ns, &ps->pod->labels, ps->ns_labels))
        return;
    if ((cx->cnt = counts_for(s, ps->existing, &ps->nexisting, c->col)) == NULL) {
        cx->rc = EBB_ENOMEM;
        return;
    }
    ebb__class_members(s, c, existing_member, cx);
}

static int compile_terms(struct pstate *ps, const struct ebb_pod_term *src, uint16_t n,
                         struct cterm **out, struct counts ***cnt, struct counts **list,
                         size_t *nlist)
{
    struct ebb_sched *s = ps->s;

    if (n == 0)
        return 0;
    if ((*out = ebb__sched_alloc(s, n * sizeof(**out))) == NULL ||
        (*cnt = ebb__sched_alloc(s, n * sizeof(**cnt))) == NULL)
        return EBB_ENOMEM;
    for (uint16_t i = 0; i < n; i++) {
        struct keycol *col;
        if (ebb__cterm_compile(s, ps->pod, &src[i], 0, &(*out)[i]) != 0)
            return EBB_ENOMEM;
        if ((col = ebb__sched_col(s, (*out)[i].key)) == NULL ||
            ((*cnt)[i] = counts_for(s, list, nlist, col)) == NULL)
            return EBB_ENOMEM;
    }
    return 0;
}

static int ipa_prefilter(struct pstate *ps)
{
    struct ebb_sched *s = ps->s;
    const struct ebb_affinity *a = ps->pod->affinity;
    struct existing_ctx ex = { ps, NULL, 0 };
    struct counts **aff_list, **anti_list;
    size_t naff_list = 0, nanti_list = 0;
    bool any = false;
    int rc;

    if ((ps->existing = ebb__sched_alloc_list(s, (s->ncols + s->nclasses + 1) * sizeof(*ps->existing))) == NULL)
        return EBB_ENOMEM;
    ebb__sched_classes_for(s, &ps->pod->labels, existing_class, &ex);
    if (ex.rc != 0)
        return ex.rc;
    if (a == NULL || (a->naff_required == 0 && a->nanti_required == 0))
        return 0;
    if ((aff_list = ebb__sched_alloc(s, (a->naff_required + 1u) * sizeof(*aff_list))) == NULL ||
        (anti_list = ebb__sched_alloc(s, (a->nanti_required + 1u) * sizeof(*anti_list))) == NULL)
        return EBB_ENOMEM;
    /* counted in ps->naff / ps->nanti as they compile, so a failure clears them */
    if ((rc = compile_terms(ps, a->aff_required, a->naff_required, &ps->aff, &ps->aff_cnt, aff_list,
                            &naff_list)) != 0) {
        ps->naff = a->naff_required;
        return rc;
    }
    ps->naff = a->naff_required;
    if ((rc = compile_terms(ps, a->anti_required, a->nanti_required, &ps->anti, &ps->anti_cnt,
                            anti_list, &nanti_list)) != 0) {
        ps->nanti = a->nanti_required;
        return rc;
    }
    ps->nanti = a->nanti_required;
    if (ps->naff > 0) {
        struct aff_ctx cx = { ps, ps->aff, ps->naff, ps->aff_cnt, true, &ps->aff_any };
        ebb__sched_candidates(s, ps->aff[0].sel, ps->pod->ns, &ps->aff[0], aff_one, &cx);
        ps->aff_self = true;
        for (uint16_t t = 0; t < ps->naff && ps->aff_self; t++)
            ps->aff_self = ebb__cterm_matches(&ps->aff[t], ps->pod->ns, &ps->pod->labels, ps->ns_labels);
    }
    for (uint16_t t = 0; t < ps->nanti; t++) {
        struct aff_ctx cx = { ps, &ps->anti[t], 1, &ps->anti_cnt[t], false, &any };
        ebb__sched_candidates(s, ps->anti[t].sel, ps->pod->ns, &ps->anti[t], aff_one, &cx);
    }
    return 0;
}

uint32_t ebb__sched_node_index(const struct ebb_sched *s, ebb_str name);

/* NodeAffinity's PreFilterResult: when every required term names nodes
 * (metadata.name In, the names of one term intersected), only those nodes
 * are filtered; terms that each name nothing conflict. */
static int node_affinity_prefilter(struct pstate *ps)
{
    struct ebb_sched *s = ps->s;
    const struct ebb_affinity *a = ps->pod->affinity;
    bool required = a != NULL && a->has_required, any = false;
    uint8_t *subset;

    ps->na_active = required || ps->pod->node_selector.n > 0 ||
                    (ps->prof->added_affinity && ps->prof->added_affinity->has_required);
    if (!required || a->nrequired == 0)
        return 0;
    if ((subset = ebb__sched_alloc(s, s->nnodes + 1)) == NULL)
        return EBB_ENOMEM;
    for (uint16_t t = 0; t < a->nrequired; t++) {
        const struct ebb_node_term *nt = &a->required[t];
        const ebb_str *first = NULL;
        ebb_str *names = NULL;
        uint16_t nnames = 0;
        for (uint16_t f = 0; f < nt->nfields; f++) {
            const struct ebb_req *r = &nt->fields[f];
            if (r->op != EBB_OP_IN || r->key == NULL || strcmp(r->key, "metadata.name") != 0)
                continue;
            if (first == NULL) {
                if ((names = ebb__sched_alloc(s, (r->nvalues + 1u) * sizeof(*names))) == NULL)
                    return EBB_ENOMEM;
                memcpy(names, r->values, r->nvalues * sizeof(*names));
                nnames = r->nvalues;
                first = r->values;
                continue;
            }
            uint16_t k = 0;
            for (uint16_t i = 0; i < nnames; i++) {
                bool in = false;
                for (uint16_t v = 0; v < r->nvalues && !in; v++)
                    in = r->values[v] == names[i];
                if (in)
                    names[k++] = names[i];
            }
            nnames = k;
        }
        if (first == NULL)
            return 0;   /* a term without names: any node may match it */
        for (uint16_t i = 0; i < nnames; i++) {
            uint32_t n = ebb__sched_node_index(s, names[i]);
            any = true;
            if (n != UINT32_MAX && !subset[n]) {
                subset[n] = 1;
                ps->nsubset++;
            }
        }
    }
    ps->subset = subset;
    if (!any)
        ps->prefilter_fail = r_conflict;
    return 0;
}

void ebb__sched_pstate_clear(struct pstate *ps)
{
    for (uint16_t i = 0; ps->fc != NULL && i < ps->nfc; i++)
        ebb_selector_free(ps->fc[i].sel);
    for (uint16_t i = 0; ps->sc != NULL && i < ps->nsc; i++)
        ebb_selector_free(ps->sc[i].sel);
    for (uint16_t i = 0; ps->aff != NULL && i < ps->naff; i++)
        ebb__cterm_clear(&ps->aff[i]);
    for (uint16_t i = 0; ps->anti != NULL && i < ps->nanti; i++)
        ebb__cterm_clear(&ps->anti[i]);
    for (uint16_t i = 0; ps->paff != NULL && i < ps->npaff; i++)
        ebb__cterm_clear(&ps->paff[i]);
    ps->nfc = ps->nsc = ps->naff = ps->nanti = ps->npaff = 0;
}

int ebb__sched_prefilter(struct pstate *ps)
{
    const struct ebb_pod *p = ps->pod;
    const struct ebb_taint unsched = { ps->s->unsched_key, NULL, EBB_EFFECT_NO_SCHEDULE };
    int rc;

    ps->tolerates_unschedulable = ebb_tolerations_tolerate(p->tolerations, p->ntolerations, &unsched);
    if ((rc = ebb__sched_affmemo(ps)) != 0)
        return rc;
    ps->req[0] = ebb_res_get(&p->requests, EBB_RES_CPU);
    ps->req[1] = ebb_res_get(&p->requests, EBB_RES_MEMORY);
    ps->req[2] = ebb_res_get(&p->requests, EBB_RES_EPHEMERAL);
    ps->req_zero = true;
    for (uint16_t i = 0; i < p->requests.n; i++) {
        int id = p->requests.q[i].id;
        if (id == EBB_RES_PODS)
            continue;
        ps->req_any = true;
        ps->req_zero &= p->requests.q[i].v == 0;
        ps->req_scalars |= id != EBB_RES_CPU && id != EBB_RES_MEMORY && id != EBB_RES_EPHEMERAL;
    }
    if (filter_enabled(ps->prof, EBB_SP_NODE_AFFINITY) && (rc = node_affinity_prefilter(ps)) != 0)
        return rc;
    if (ps->prefilter_fail != NULL)
        return 0;
    if (filter_enabled(ps->prof, EBB_SP_POD_TOPOLOGY_SPREAD) && (rc = spread_prefilter(ps)) != 0)
        return rc;
    if (filter_enabled(ps->prof, EBB_SP_INTER_POD_AFFINITY) && (rc = ipa_prefilter(ps)) != 0)
        return rc;
    /* the filters that can fail this pod, in order: the others pass every node */
    ps->nactive = 0;
    for (uint8_t i = 0; i < ps->prof->nfilters; i++) {
        int f = ps->prof->filters[i];
        if ((f == EBB_SP_NODE_NAME && p->node == NULL) ||
            (f == EBB_SP_NODE_AFFINITY && !ps->na_active) ||
            (f == EBB_SP_NODE_PORTS && p->nhost_ports == 0) ||
            (f == EBB_SP_POD_TOPOLOGY_SPREAD && ps->nfc == 0) ||
            (f == EBB_SP_INTER_POD_AFFINITY && ps->naff == 0 && ps->nanti == 0 && ps->nexisting == 0))
            continue;
        ps->active[ps->nactive++] = (uint8_t)f;
    }
    /* what sched.c's fast_pass decides from the node's record alone */
    ps->hot_mask = 0;
    ps->fit_cmp = false;
    ps->na_memo = false;
    ps->nslow = 0;
    for (uint8_t i = 0; i < ps->nactive; i++) {
        int f = ps->active[i];
        if (f == EBB_SP_NODE_UNSCHEDULABLE) {
            ps->hot_mask |= ps->tolerates_unschedulable ? 0 : HOT_UNSCHEDULABLE;
        } else if (f == EBB_SP_TAINT_TOLERATION) {
            ps->hot_mask |= HOT_TAINTED;
        } else if (f == EBB_SP_NODE_RESOURCES_FIT && !ps->req_scalars) {
            ps->hot_mask |= HOT_FULL;
            ps->fit_cmp = !(ps->req_zero && ps->s->version != EBB_SCHED_V1_25);
        } else if (f == EBB_SP_NODE_AFFINITY && ps->prof->added_affinity == NULL) {
            ps->na_memo = true;
        } else {
            ps->slow[ps->nslow++] = (uint8_t)f;
        }
    }
    return 0;
}

/* ---- Filter ------------------------------------------------------------------ */

static int filter_ports(struct pstate *ps, uint32_t node, char *buf, size_t len)
{
    struct ebb_sched *s = ps->s;
    const struct ebb_pod *p = ps->pod;
    const struct sport *used;
    uint32_t nused;

    if (p->nhost_ports == 0)
        return OK;
    used = ebb__sched_ports(s, node, &nused);
    for (uint16_t i = 0; i < p->nhost_ports; i++) {
        const struct ebb_host_port *w = &p->host_ports[i];
        ebb_str ip = w->ip && w->ip[0] ? w->ip : s->any_ip;
        ebb_str proto = w->protocol && w->protocol[0] ? w->protocol : s->tcp;
        if (w->port <= 0)
            continue;
        for (uint32_t k = 0; k < nused; k++) {
            if (used[k].port != w->port || used[k].proto != proto)
                continue;
            if (ip == s->any_ip || used[k].ip == s->any_ip || used[k].ip == ip) {
                say(buf, len, "%s", r_ports);
                return UNSCHEDULABLE;
            }
        }
    }
    return OK;
}

static bool is_extended(const char *name)
{
    return strchr(name, '/') != NULL && strstr(name, "kubernetes.io/") == NULL &&
           strncmp(name, "requests.", 9) != 0;
}

static bool ignored(const struct ebb_sched_profile *pr, const char *name)
{
    const char *slash;

    if (!is_extended(name))
        return false;
    for (size_t i = 0; i < pr->nignored; i++)
        if (strcmp(pr->ignored[i], name) == 0)
            return true;
    slash = strchr(name, '/');
    for (size_t i = 0; i < pr->nignored_groups; i++)
        if (strlen(pr->ignored_groups[i]) == (size_t)(slash - name) &&
            strncmp(pr->ignored_groups[i], name, (size_t)(slash - name)) == 0)
            return true;
    return false;
}

static int filter_fit(struct pstate *ps, uint32_t node, char *buf, size_t len)
{
    struct ebb_sched *s = ps->s;
    const struct snode *sn = &s->nodes[node];
    const struct ebb_pod *p = ps->pod;
    static const int basic[3] = { EBB_RES_CPU, EBB_RES_MEMORY, EBB_RES_EPHEMERAL };
    const int64_t alloc[3] = { sn->alloc_cpu, sn->alloc_mem, sn->alloc_eph };
    const int64_t used[3] = { sn->req_cpu, sn->req_mem, sn->req_eph };
    int st = OK;
    bool zero = true;

    if ((int64_t)sn->npods + 1 > sn->alloc_pods) {
        say(buf, len, "Too many pods");
        st = UNSCHEDULABLE;
    }
    zero = ps->req_zero;
    if (zero && s->version != EBB_SCHED_V1_25)
        return st;
    if (zero && !ps->req_any)   /* v1.25: every ResourceList entry counts, even "0" */
        return st;
    for (int k = 0; k < 3; k++) {
        int64_t want = ps->req[k];
        if (want <= 0 && s->version != EBB_SCHED_V1_25)
            continue;
        if (want > ebb_q_sub(alloc[k], used[k])) {
            say(buf, len, "Insufficient %s", ebb_resource_name(basic[k]));
            if (want > alloc[k])
                st = UNRESOLVABLE;
            else if (st == OK)
                st = UNSCHEDULABLE;
        }
    }
    for (uint16_t i = 0; i < p->requests.n && ps->req_scalars; i++) {
        int id = p->requests.q[i].id;
        int64_t want = p->requests.q[i].v, have;
        const char *name;
        if (id == EBB_RES_CPU || id == EBB_RES_MEMORY || id == EBB_RES_EPHEMERAL || id == EBB_RES_PODS)
            continue;
        if (want == 0 || (name = ebb_resource_name(id)) == NULL || ignored(ps->prof, name))
            continue;
        have = ebb_res_get(&sn->node->allocatable, id);
        if (want > ebb_q_sub(have, sn->pv ? sn->pv->req[id] : 0)) {
            say(buf, len, "Insufficient %s", name);
            if (want > have)
                st = UNRESOLVABLE;
            else if (st == OK)
                st = UNSCHEDULABLE;
        }
    }
    return st;
}

static int filter_spread(struct pstate *ps, uint32_t node, char *buf, size_t len)
{
    for (uint16_t i = 0; i < ps->nfc; i++) {
        const struct pts_c *c = &ps->fc[i];
        int32_t dom = c->col->dom[node];
        if (dom < 0) {
            say(buf, len, "%s", r_spread_label);
            return UNRESOLVABLE;
        }
        if (c->ndomains == 0)
            continue;   /* no domain to compare with */
        if (sarr_get(c->cnt->a, (uint32_t)dom) + (c->self_match ? 1 : 0) - c->min > c->max_skew) {
            say(buf, len, "%s", r_spread);
            return UNSCHEDULABLE;
        }
    }
    return OK;
}

static int filter_ipa(struct pstate *ps, uint32_t node, char *buf, size_t len)
{
    bool exist = true;

    for (uint16_t t = 0; t < ps->naff; t++) {
        int32_t dom = ps->aff_cnt[t]->col->dom[node];
        if (dom < 0) {
            say(buf, len, "%s", r_pod_aff);
            return UNRESOLVABLE;
        }
        if (sarr_get(ps->aff_cnt[t]->a, (uint32_t)dom) <= 0)
            exist = false;
    }
    if (!exist && !(!ps->aff_any && ps->aff_self)) {
        say(buf, len, "%s", r_pod_aff);
        return UNRESOLVABLE;
    }
    for (uint16_t t = 0; t < ps->nanti; t++) {
        int32_t dom = ps->anti_cnt[t]->col->dom[node];
        if (dom >= 0 && sarr_get(ps->anti_cnt[t]->a, (uint32_t)dom) > 0) {
            say(buf, len, "%s", r_pod_anti);
            return UNSCHEDULABLE;
        }
    }
    for (size_t i = 0; i < ps->nexisting; i++) {
        int32_t dom = ps->existing[i]->col->dom[node];
        if (dom >= 0 && sarr_get(ps->existing[i]->a, (uint32_t)dom) > 0) {
            say(buf, len, "%s", r_existing_anti);
            return UNSCHEDULABLE;
        }
    }
    return OK;
}

int ebb__sched_filter(struct pstate *ps, int plugin, uint32_t node, char *buf, size_t len)
{
    const struct ebb_pod *p = ps->pod;
    /* the node's object is read only by the filters that need it: a cache
     * line the others skip */
    const struct ebb_node *n;

    switch (plugin) {
    case EBB_SP_NODE_UNSCHEDULABLE:
        if (ps->s->nodes[node].unschedulable && !ps->tolerates_unschedulable) {
            say(buf, len, "%s", r_unschedulable);
            return UNRESOLVABLE;
        }
        return OK;
    case EBB_SP_NODE_NAME:
        if (p->node != NULL && p->node != (n = ps->s->nodes[node].node)->name) {
            say(buf, len, "%s", r_node_name);
            return UNRESOLVABLE;
        }
        return OK;
    case EBB_SP_TAINT_TOLERATION:
        if (ps->s->nodes[node].ntaints == 0)
            return OK;
        n = ps->s->nodes[node].node;
        for (uint16_t i = 0; i < n->ntaints; i++) {
            const struct ebb_taint *t = &n->taints[i];
            if (!(t->effect & (EBB_EFFECT_NO_SCHEDULE | EBB_EFFECT_NO_EXECUTE)))
                continue;
            if (!ebb_tolerations_tolerate(p->tolerations, p->ntolerations, t)) {
                say(buf, len, "node(s) had untolerated taint {%s: %s}", t->key ? t->key : "",
                    t->value ? t->value : "");
                return UNRESOLVABLE;
            }
        }
        return OK;
    case EBB_SP_NODE_AFFINITY:
        if (!ps->na_active)
            return OK;
        if (ps->prof->added_affinity != NULL &&
            !ebb_affinity_required_matches(ps->prof->added_affinity, ps->s->nodes[node].node)) {
            say(buf, len, "%s", r_enforced);
            return UNRESOLVABLE;
        }
        if (!ebb__sched_node_affinity_ok(ps, node)) {
            say(buf, len, "%s", r_affinity);
            return UNRESOLVABLE;
        }
        return OK;
    case EBB_SP_NODE_PORTS:
        return filter_ports(ps, node, buf, len);
    case EBB_SP_NODE_RESOURCES_FIT:
        return filter_fit(ps, node, buf, len);
    case EBB_SP_POD_TOPOLOGY_SPREAD:
        return filter_spread(ps, node, buf, len);
    case EBB_SP_INTER_POD_AFFINITY:
        return filter_ipa(ps, node, buf, len);
    default:
        return OK;
    }
}
