/* engine/sched/sched_int.h: what the scheduler model's files share (sched.c: the
 * cycle; sched_index.c: pods, labels, terms and topology columns;
 * sched_filter.c and sched_score.c: the plugins). Not public. */
#ifndef EBB_SCHED_INT_H
#define EBB_SCHED_INT_H

#include "ebb/sched.h"
#include "base/map.h"
#include "base/vec.h"

/* ---- indexes (sched_index.c) --------------------------------------------- */

/* Lists of ids (struct ebb_idlist, base/vec.h) may hold ids of pods gone
 * since: readers skip those and compact the list when they find it half
 * dead. */

/* A bound pod the scheduler counts. */
struct spod {
    const struct ebb_pod *pod;       /* NULL once gone */
    ebb_str ns;                      /* the pod's, read without touching it: */
    struct ebb_labels labels;        /* its labels (their array is the pod's) */
    uint32_t node;                   /* index in s->nodes */
    uint32_t slot, serial;           /* to check the cache still has it */
    bool terminating;                /* EBB_POD_TERMINATING (set only by decoding) */
};

/* A PodAffinityTerm compiled for matching: the label selector with
 * matchLabelKeys / mismatchLabelKeys resolved against the declaring pod,
 * and the namespaces. Owns its strings and selectors. */
struct cterm {
    ebb_str key;                     /* topologyKey */
    ebb_str own_ns;                  /* no namespaces and no selector: this one */
    uint16_t nns;
    ebb_str *ns;                     /* listed namespaces */
    struct ebb_selector *ns_sel;     /* namespaceSelector, or NULL */
    struct ebb_selector *sel;        /* never NULL */
    int32_t weight;                  /* preferred terms */
};

/* The values of one node label key: a domain id per node. */
struct keycol {
    ebb_str key;                     /* a reference */
    bool hostname;                   /* kubernetes.io/hostname */
    int32_t *dom;                    /* per node index: domain, or -1 without the label */
    uint32_t ndom;
    ebb_str *values;                 /* per domain (borrowed from node labels) */
};

/* Existing pods' terms of one kind, grouped when equal. */
enum { TC_REQ_AFF = 0, TC_REQ_ANTI, TC_PREF_AFF, TC_PREF_ANTI };

struct tclass {
    uint8_t kind;                    /* TC_* */
    uint64_t hash;
    struct cterm t;
    struct keycol *col;
    struct ebb_idlist members;            /* spod ids */
};

/* ---- the scheduler ------------------------------------------------------- */

struct sport {                       /* a used host port */
    ebb_str ip, proto;               /* normalized: never NULL */
    int32_t port;
};

/* What the filters and scores read of a node, together: one node's record
 * is a cache line or two, so filtering many nodes reads them in sequence
 * instead of missing on the node, its labels and its pod list. */
struct snode {
    int64_t alloc_cpu, alloc_mem, alloc_eph, alloc_pods;
    int64_t req_cpu, req_mem, req_eph;   /* the cache's sums at the last bind or sync */
    int64_t nz_cpu, nz_mem;          /* NonZeroRequested */
    uint32_t npods;                  /* pods occupying it */
    uint16_t ntaints;
    bool unschedulable;
    bool ports_dirty;                /* a pod left: rebuild from the cache */
    struct ebb_node *node;
    const struct ebb_podvec *pv;     /* the cache's pods of the node */
    uint32_t nports, cap_ports;
    struct sport *ports;
    uint32_t nimg;
    uint32_t *img;                   /* image state ids, sorted */
    uint32_t order;                  /* position in s->order */
};

/* What the common filters and scores ask of a node (sched.c fast_pass,
 * sched_score.c's cpu/memory loops), one cache line apart from the rest
 * of struct snode, by node index; a copy of snode's fields, made by
 * hot_sync() after each change of them. */
enum { HOT_UNSCHEDULABLE = 1, HOT_TAINTED = 2, HOT_FULL = 4 };

struct shot {
    int64_t alloc_cpu, alloc_mem;
    int64_t req_cpu, req_mem;
    int64_t nz_cpu, nz_mem;
    int64_t free_eph;                /* ebb_q_sub(alloc_eph, req_eph) */
    uint8_t flags;                   /* HOT_*; FULL: one more pod is over the count */
};

struct image_state {
    int64_t size;
    uint32_t nnodes;
};

/* A per-call array of int64 over nodes or domains that starts at 0 and is
 * cleared in O(1): a slot whose stamp is not the array's current one reads
 * 0. Taken from a pool for a call, returned at its end. */
struct sarr {
    uint32_t cur;
    uint32_t *stamp;
    int64_t *v;
    struct sarr *next;               /* in the pool or the call's list */
};

static inline int64_t sarr_get(const struct sarr *a, uint32_t i)
{
    return a->stamp[i] == a->cur ? a->v[i] : 0;
}

static inline void sarr_add(struct sarr *a, uint32_t i, int64_t d)
{
    if (a->stamp[i] != a->cur) {
        a->stamp[i] = a->cur;
        a->v[i] = 0;
    }
    a->v[i] += d;
}

/* Per-call counts over the domains of a column. */
struct counts {
    struct keycol *col;
    struct sarr *a;
};

/* The node affinity of pods that share it (node selector, required and
 * preferred node affinity terms): per node, whether the required part
 * matches and what the preferred part weighs, worked out on first use. */
#define PTSMEMO_C 4

/* PodTopologySpread's domains for pods of one node affinity whose hard
 * constraints have these columns and whose taints policy is Ignore: which
 * nodes count and which domains are registered. Nodes do not change, so
 * this holds for the whole run. */
struct ptsmemo {
    struct ptsmemo *next;
    uint16_t n;
    struct keycol *col[PTSMEMO_C];
    uint8_t aff[PTSMEMO_C];          /* nodeAffinityPolicy */
    uint8_t *ok[PTSMEMO_C];          /* per node: counted */
    uint8_t *reg[PTSMEMO_C];         /* per domain: registered */
    uint32_t ndomains[PTSMEMO_C];
};

struct affmemo {
    struct ebb_pod *rep;             /* a copy of the first pod with it */
    struct ptsmemo *pts;             /* its spreading domains, as asked */
    uint64_t hash;
    uint64_t used;                   /* for replacing the least recently used */
    uint8_t *match;                  /* per node: 0 not known yet, 1 matches, 2 not */
    int32_t *pref;                   /* per node: INT32_MIN not known yet */
};

#define AFFMEMO_MAX 64

struct ebb_sched {
    struct ebb_cache *cache;
    const struct ebb_sched_config *config;
    struct ebb_sched_config *own_config;
    int version;
    bool seeded;
    uint64_t rng;

    uint32_t nnodes;
    struct snode *nodes;             /* node name order */
    struct shot *hot;                /* the same order */
    uint32_t *order;                 /* kube-scheduler's list: zones round robin */
    uint32_t next_start;
    struct ebb_map node_idx;         /* (name, -) -> index + 1 */

    struct ebb_map images;           /* (image name, -) -> id + 1 */
    struct ebb_map image_of;         /* (image as a pod writes it, -) -> id + 1, keys held */
    uint32_t nimages, cap_images;
    struct image_state *image;

    uint32_t nspods, cap_spods;
    struct spod *spods;
    uint32_t *by_slot;               /* cache slot -> spod id + 1 (0: none) */
    uint32_t nby_slot;
    bool by_slot_lost;               /* a pod is missing from it: predictions sync fully */
    uint64_t hidden_epoch;           /* where ebb_sched_predict is in the cache's hidden list */
    size_t hidden_seen;
    struct ebb_map postings;         /* (label key, value) -> struct ebb_idlist * */
    struct ebb_map by_ns;            /* (namespace, -) -> struct ebb_idlist * */

    size_t ncols;
    struct keycol **cols;

    size_t nclasses, cap_classes;
    struct tclass **classes;
    struct termmemo *memo;           /* while the model is built (sched_index.c) */
    struct ebb_map class_anchor;     /* (key, value) -> struct ebb_idlist * of class ids */
    struct ebb_idlist class_free;         /* classes whose selector has no In anchor */
    uint32_t class_bucket_n;
    uint32_t *class_bucket;          /* hash -> first class id + 1 ... chained */
    uint32_t *class_next;

    struct affmemo affmemo[AFFMEMO_MAX];
    uint32_t naffmemo;
    uint64_t affmemo_clock;
    struct ebb_map indexed;          /* (label key, -): postings kept for the key */

    ebb_str hostname_key, zone_key, unsched_key, tcp, any_ip;

    /* per call */
    struct sarr *sarr_free, *sarr_taken;
    uint32_t sarr_clock;
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t stamp;
    struct ebb_sched_stats stats;
};

/* ---- sched_index.c -------------------------------------------------------- */

int ebb__sched_index_init(struct ebb_sched *s);
void ebb__sched_index_free(struct ebb_sched *s);
/* A pod bound to node index `node` enters the indexes. */
/* Pods whose affinity, namespace and labels are the same arrays compile
 * to the same classes: between these two calls (the model's build, when no
 * pod is freed, so an address names one array) the first such pod's
 * classes are remembered and the others join them. */
int ebb__sched_memo_begin(struct ebb_sched *s);
void ebb__sched_memo_end(struct ebb_sched *s);
int ebb__sched_index_add(struct ebb_sched *s, const struct ebb_pod *p, uint32_t node);
/* spods[id] is gone: mark it (lists drop it as they are read). */
void ebb__sched_index_remove(struct ebb_sched *s, uint32_t id);

/* The column of a label key (made on first use); NULL when out of memory. */
struct keycol *ebb__sched_col(struct ebb_sched *s, ebb_str key);
static inline int32_t ebb__col_dom(const struct keycol *c, uint32_t node)
{
    return c->dom[node];
}

int ebb__cterm_compile(struct ebb_sched *s, const struct ebb_pod *owner,
                       const struct ebb_pod_term *t, int32_t weight, struct cterm *out);
void ebb__cterm_clear(struct cterm *t);
/* The term selects pod p (its namespace labels nsl; NULL reads as none). */
bool ebb__cterm_matches(const struct cterm *t, ebb_str ns, const struct ebb_labels *labels,
                        const struct ebb_labels *nsl);
/* Namespace ns is in the term's set. */
bool ebb__cterm_has_ns(const struct ebb_sched *s, const struct cterm *t, ebb_str ns);

/* The labels of a namespace (an empty set when the snapshot lacks it). */
const struct ebb_labels *ebb__sched_ns_labels(const struct ebb_sched *s, ebb_str ns);

/* Call fn for every live bound pod that `sel` may select in a namespace for
 * which ns_ok says yes (ns_ok NULL: only namespace `ns`): candidates come
 * from the smallest posting of an In requirement, or from the namespace's
 * list; fn still checks the selector. Stops when fn returns false. */
typedef bool (*ebb__spod_fn)(struct ebb_sched *s, uint32_t id, void *ud);
void ebb__sched_candidates(struct ebb_sched *s, const struct ebb_selector *sel, ebb_str ns,
                           const struct cterm *ns_term, ebb__spod_fn fn, void *ud);

/* Every class whose selector may match labels l: fn(class id). */
typedef void (*ebb__class_fn)(struct ebb_sched *s, struct tclass *c, void *ud);
void ebb__sched_classes_for(struct ebb_sched *s, const struct ebb_labels *l, ebb__class_fn fn,
                            void *ud);
/* Live members of a class: fn(spod id). */
void ebb__class_members(struct ebb_sched *s, struct tclass *c, ebb__spod_fn fn, void *ud);

/* ---- per call ------------------------------------------------------------- */

/* Zeroed scratch memory for the call (ebb__sched_arena_reset at its start). */
void *ebb__sched_alloc(struct ebb_sched *s, size_t n);
/* The same, not zeroed: for a list read only below its count (a placement
 * must not clear what it will not read). */
void *ebb__sched_alloc_list(struct ebb_sched *s, size_t n);
void ebb__sched_arena_reset(struct ebb_sched *s);
struct counts *ebb__counts_new(struct ebb_sched *s, struct keycol *col);
/* An array over nnodes + 2 slots (nodes, or a column's domains and the
 * "no value" one), all 0, for the call. NULL when out of memory. */
struct sarr *ebb__sarr_take(struct ebb_sched *s);

/* ---- plugins (sched_filter.c, sched_score.c) ------------------------------ */

/* Scores run 0..MAX_SCORE (framework.MaxNodeScore). */
#define EBB_SCHED_MAX_SCORE 100

/* a * MAX_SCORE / b, exactly: allocatable and requests go up to 2^63 - 1
 * (quantities saturate, ebb/quantity.h), where upstream's int64 product
 * would wrap. Callers keep |a| <= |b|, so the result is a score. */
__extension__ typedef __int128 ebb__i128;

static inline int64_t ebb__sched_scaled(int64_t a, int64_t b)
{
    /* The usual case in a double division, which the core pipelines and a
     * 64-bit integer division it does not: for 0 <= a <= b < 2^46 both
     * a * MAX_SCORE and b are exact doubles, and a quotient that is not a
     * whole number is at least 1/b away from one, more than the
     * division's rounding error (MAX_SCORE * 2^-53), so truncating it
     * gives the integer quotient (test_sched: test_scaled_exact). */
    if (a >= 0 && a <= b && b < ((int64_t)1 << 46))
        return (int64_t)((double)(a * EBB_SCHED_MAX_SCORE) / (double)b);
    /* 128 bits only where a * MAX_SCORE would not fit in 64: the division
     * of 128-bit numbers is a call into libgcc */
    if (a >= 0 && a <= INT64_MAX / EBB_SCHED_MAX_SCORE)
        return a * EBB_SCHED_MAX_SCORE / b;
    return (int64_t)((ebb__i128)a * EBB_SCHED_MAX_SCORE / b);
}

/* What PreFilter and PreScore computed for one pod, shared by the plugins. */
struct pts_c {
    struct keycol *col;
    int32_t max_skew, min_domains;
    uint8_t aff_policy, taint_policy;    /* EBB_POLICY_HONOR / _IGNORE */
    struct ebb_selector *sel;            /* arena-owned copy or the profile's */
    bool self_match;
    struct counts *cnt;                  /* filter: matches per domain */
    const uint8_t *ok;                   /* filter: per node, counted */
    const uint8_t *reg;                  /* filter: per domain, registered */
    uint32_t ndomains;
    int64_t min;                         /* filter: global minimum */
    double weight;                       /* score: ln(topoSize + 2) */
};

struct pstate {
    struct ebb_sched *s;
    const struct ebb_pod *pod;
    const struct ebb_sched_profile *prof;
    const struct ebb_labels *ns_labels;
    uint32_t stamp;
    uint8_t nactive;
    uint8_t active[EBB_SP_MAX];          /* the filters that may fail this pod */
    /* The search's shortcut (sched.c run_filters): a node whose record has
     * none of hot_mask's flags, and room for the requests when fit_cmp,
     * passes NodeUnschedulable, TaintToleration and NodeResourcesFit; only
     * the `slow` filters are then asked; NodeAffinity, when na_memo, is
     * the memo's answer read there. */
    uint8_t hot_mask;
    bool fit_cmp;
    bool na_memo;
    uint8_t nslow;
    uint8_t slow[EBB_SP_MAX];
    /* NodeUnschedulable */
    bool tolerates_unschedulable;
    /* NodeResourcesFit */
    int64_t req[3];                      /* cpu, memory, ephemeral-storage */
    bool req_zero, req_any, req_scalars;
    /* NodeAffinity: PreFilter */
    struct affmemo *memo;            /* the pod's node affinity, per node */
    bool na_active;                      /* nodeSelector, required terms or added affinity */
    const char *prefilter_fail;          /* a PreFilter rejection, or NULL */
    uint8_t *subset;                     /* nodes a PreFilterResult keeps, or NULL: all */
    uint32_t nsubset;
    /* PodTopologySpread filter */
    uint16_t nfc;
    struct pts_c *fc;
    /* InterPodAffinity filter */
    uint16_t naff, nanti;
    struct cterm *aff, *anti;
    struct counts **aff_cnt, **anti_cnt; /* per term: its key's counts (shared per key) */
    size_t nexisting;
    struct counts **existing;            /* existing pods' anti-affinity, per key */
    bool aff_any;                        /* affinityCounts non-empty */
    bool aff_self;                       /* the pod matches all its affinity terms */
    /* scores */
    bool skip[EBB_SP_MAX];
    int64_t *fit_req, *ba_req;           /* per profile resource */
    uint32_t nimg, nimg_known;
    uint32_t *img;                       /* image ids of the containers (-1: none) */
    bool fit_cpu_mem, ba_cpu_mem;        /* the resources are cpu and memory (the defaults) */
    bool fit_most;                       /* MostAllocated (else LeastAllocated) */
    bool ba_added;                       /* the search added BalancedAllocation with Fit */
    int64_t fit_w[2];                    /* their weights (Fit) */
    uint32_t ncontainers;
    uint16_t nsc;
    struct pts_c *sc;
    bool sc_require_all;
    struct sarr *ignored;                /* per node index: ignored by PTS scoring (1) */
    uint16_t npaff;
    struct cterm *paff;                  /* preferred (anti-)affinity terms; weight < 0: anti */
    size_t ntopo;
    struct counts **topo;                /* IPA scores, per key */
    bool topo_any;
    struct sarr **hostcnt;               /* PTS scores: per constraint, per node */
    bool pts_uniform;                    /* v1.25, no constraints: 100 everywhere */
};

void ebb__sched_pstate_clear(struct pstate *ps);
uint32_t ebb__sched_node_index(const struct ebb_sched *s, ebb_str name);
const struct sport *ebb__sched_ports(struct ebb_sched *s, uint32_t node, uint32_t *n);
/* helper.DefaultSelector: the selectors of the Services selecting the pod
 * and of its controller (ReplicationController, ReplicaSet, StatefulSet)
 * when the snapshot has it, ANDed. Owned by the caller; empty: none. */
struct ebb_selector *ebb__sched_default_selector(struct ebb_sched *s, const struct ebb_pod *p);
/* The pod's spread constraints for `when` (EBB_TSC_*): its own, or when it
 * has none the profile's defaults with the default selector. */
int ebb__sched_spread_constraints(struct pstate *ps, int when, struct pts_c **out, uint16_t *n);
/* The pod's node selector and required node affinity hold on the node:
 * the memo's answer, worked out by fill the first time it is asked. */
bool ebb__sched_node_affinity_fill(struct pstate *ps, uint32_t node);
static inline bool ebb__sched_node_affinity_ok(struct pstate *ps, uint32_t node)
{
    uint8_t m = ps->memo->match[node];
    return m == 0 ? ebb__sched_node_affinity_fill(ps, node) : m == 1;
}
/* The weight of the pod's preferred node affinity terms that match it:
 * the memo's, worked out by fill the first time. */
int64_t ebb__sched_node_preferred_fill(struct pstate *ps, uint32_t node);
static inline int64_t ebb__sched_node_preferred(struct pstate *ps, uint32_t node)
{
    int32_t w = ps->memo->pref[node];
    return w == INT32_MIN ? ebb__sched_node_preferred_fill(ps, node) : w;
}
/* The memo of the pod's node affinity (ps->memo), found or made. */
int ebb__sched_affmemo(struct pstate *ps);
void ebb__sched_affmemo_free(struct ebb_sched *s);

/* Filters: 0 passes; otherwise the reasons are appended to buf (when not
 * NULL) and the status is returned (1 Unschedulable, 2
 * UnschedulableAndUnresolvable). */
int ebb__sched_prefilter(struct pstate *ps);
int ebb__sched_filter(struct pstate *ps, int plugin, uint32_t node, char *buf, size_t len);
/* Scores: PreScore over the feasible nodes, then Score and NormalizeScore. */
int ebb__sched_prescore(struct pstate *ps, const uint32_t *feasible, uint32_t n);
int64_t ebb__sched_score(struct pstate *ps, int plugin, uint32_t node);
/* Score of `plugin` for every feasible node into out[0..n). */
void ebb__sched_score_all(struct pstate *ps, int plugin, const uint32_t *feasible, uint32_t n,
                          int64_t *out);
void ebb__sched_normalize(struct pstate *ps, int plugin, const uint32_t *feasible, int64_t *scores,
                          uint32_t n);
/* For the search, which needs only the totals: when `plugin`'s normalized
 * scores can be had without the steps above (a plugin without
 * normalization over the node records, or one that scores every node
 * alike), add w times them to totals[] and return true; false: take the
 * steps above. */
bool ebb__sched_score_add(struct pstate *ps, int plugin, const uint32_t *feasible, uint32_t n, int64_t w,
                          int64_t *totals);

#endif
