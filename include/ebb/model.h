/* ebb/model.h: the compact structs the cache holds.
 *
 * decode.c fills them from JSON (once; the cJSON tree is then freed), the
 * cache owns them, strategies read them through lua_pod.c / lua_node.c, and
 * the hot helpers (usage, fit, selectors) work on them directly.
 *
 * Conventions: strings are ebb_str (interned, one reference held by the
 * owning object); times are seconds since the epoch or EBB_TIME_NONE;
 * quantities are int64: cpu in milli-cores, everything else in base units
 * (bytes, count); arrays are (pointer, count) pairs owned by the object.
 */
#ifndef EBB_MODEL_H
#define EBB_MODEL_H

#include "common.h"
#include "str.h"

/* ---- resources --------------------------------------------------------- */

/* Resource ids: the four the scheduler always tracks, EBB_RES_UNREGISTERED,
 * then any other name (nvidia.com/gpu, hugepages-2Mi, ...) gets the next id
 * on first sight. Ids are bits of 64-bit masks (requested_mask, racc in
 * decode.c, usage and load-aware sets): every id is below EBB_RES_MAX.
 *
 * The table is process-wide and never shrinks, so what may fill it is
 * bounded, in shares that cannot take each other's ids:
 * - objects (pods, nodes, metrics: anyone who may create a pod) register at
 *   most EBB_RES_OBJECTS_MAX - EBB_RES_FIXED names in all, one object at
 *   most EBB_RES_OBJECT_NEW of its own (ebb_resource_admit);
 * - the rest, EBB_RES_MAX - EBB_RES_OBJECTS_MAX names, is the
 *   configuration's (the policy's thresholds, the scheduler config), of
 *   which scripts may register at most EBB_RES_SCRIPTS_MAX names no object
 *   has (ebb_resource_script): a strategy's thresholds on a resource the
 *   cluster lacks still work, and no script can take the configuration's
 *   last ids or any object's.
 * A resource a pod asks for that finds no slot is counted as
 * EBB_RES_UNREGISTERED: no node offers it, so the pod fits no node, which
 * is what the scheduler would say of a resource no node lists (nodes drop
 * the names they cannot register). */
enum {
    EBB_RES_CPU = 0,        /* milli-cores */
    EBB_RES_MEMORY = 1,     /* bytes */
    EBB_RES_PODS = 2,       /* count */
    EBB_RES_EPHEMERAL = 3,  /* bytes ("ephemeral-storage") */
    EBB_RES_UNREGISTERED = 4, /* "<unregistered>": names past the bounds below */
    EBB_RES_FIXED = 5,
    EBB_RES_OBJECT_NEW = 16,  /* new names one object may register */
    EBB_RES_OBJECTS_MAX = 48, /* FIXED + the objects' share */
    EBB_RES_SCRIPTS_MAX = 8,  /* of the configuration's share, what scripts may take */
    EBB_RES_MAX = 64,       /* ids beyond this are refused */
};

/* id for a resource name, registering it if new in the configuration's
 * share; -1 when that share is full. For the configuration (trusted, read
 * once per policy). */
int ebb_resource_id(const char *name);
/* The same for a name a script gives, within EBB_RES_SCRIPTS_MAX. */
int ebb_resource_script(const char *name);
/* id for a name from an object: known names resolve; a new one is
 * registered only while *budget > 0 (then decremented) and the objects'
 * share has room; -1 otherwise. */
int ebb_resource_admit(const char *name, int *budget);
/* id for a name without registering: -1 if never seen. */
int ebb_resource_find(const char *name);
const char *ebb_resource_name(int id);
int ebb_resource_count(void);

struct ebb_rq {
    uint16_t id;
    int64_t v;
};

/* A sparse resource list sorted by id. */
struct ebb_res {
    uint16_t n;
    struct ebb_rq *q;
};

int64_t ebb_res_get(const struct ebb_res *r, int id);          /* 0 if absent */
bool ebb_res_has(const struct ebb_res *r, int id);
int ebb_res_set(struct ebb_res *r, int id, int64_t v);          /* insert/replace */
void ebb_res_free(struct ebb_res *r);

/* ---- labels, selectors ------------------------------------------------- */

struct ebb_kv {
    ebb_str key;
    ebb_str value;
};

/* A string map sorted by key (strcmp order). */
struct ebb_labels {
    uint32_t n;
    struct ebb_kv *kv;
};

/* Value for `key` (an interned string or one from ebb_str_find), or NULL. */
ebb_str ebb_labels_get(const struct ebb_labels *l, ebb_str key);
/* The same as present-or-not: true and *val set when `key` is in l. */
bool ebb_labels_lookup(const struct ebb_labels *l, ebb_str key, ebb_str *val);
ebb_str ebb_labels_getc(const struct ebb_labels *l, const char *key);
void ebb_labels_free(struct ebb_labels *l);

enum ebb_op {
    EBB_OP_IN,
    EBB_OP_NOT_IN,
    EBB_OP_EXISTS,
    EBB_OP_DOES_NOT_EXIST,
    EBB_OP_GT,      /* node selector requirements only */
    EBB_OP_LT,
};

struct ebb_req {
    ebb_str key;
    uint8_t op;          /* enum ebb_op */
    uint16_t nvalues;
    ebb_str *values;     /* sorted by pointer for In/NotIn; Gt/Lt: one value */
    int64_t num;         /* Gt/Lt: the parsed integer */
};

/* A compiled label selector (metav1.LabelSelector or the string form).
 * EBB_SEL_NOTHING is what a nil selector means where the API says "nil
 * matches nothing" (pod affinity terms, PDBs); an empty selector {} has
 * no requirements and matches everything. */
enum { EBB_SEL_NOTHING = 1 };

struct ebb_selector {
    uint16_t nreqs;
    uint8_t flags;
    struct ebb_req *reqs;   /* ANDed */
};

void ebb_req_free(struct ebb_req *r);

/* ---- taints and tolerations -------------------------------------------- */

enum ebb_effect {
    EBB_EFFECT_ALL = 0,           /* toleration with no effect: all effects */
    EBB_EFFECT_NO_SCHEDULE = 1,
    EBB_EFFECT_PREFER_NO_SCHEDULE = 2,
    EBB_EFFECT_NO_EXECUTE = 4,
    EBB_EFFECT_OTHER = 8,         /* an effect string the API does not define */
};

struct ebb_taint {
    ebb_str key;
    ebb_str value;
    uint8_t effect;
};

/* Lt and Gt compare integer values (k8s.io/api v0.35+, feature
 * TaintTolerationComparisonOperators) */
enum ebb_tol_op { EBB_TOL_EQUAL = 0, EBB_TOL_EXISTS = 1, EBB_TOL_LT = 2, EBB_TOL_GT = 3 };

struct ebb_toleration {
    ebb_str key;             /* NULL/"" with Exists: every key */
    ebb_str value;
    uint8_t op;
    uint8_t effect;          /* EBB_EFFECT_ALL when empty */
    bool has_seconds;
    int64_t seconds;
};

/* ---- affinity ---------------------------------------------------------- */

struct ebb_node_term {           /* v1.NodeSelectorTerm */
    uint16_t nexprs, nfields;
    uint8_t validity;            /* 0 not checked yet, 1 parses, 2 does not (affinity.c) */
    struct ebb_req *exprs;       /* matchExpressions on node labels */
    struct ebb_req *fields;      /* matchFields (metadata.name only) */
};

struct ebb_pref_term {           /* v1.PreferredSchedulingTerm */
    int32_t weight;
    struct ebb_node_term term;
};

struct ebb_pod_term {            /* v1.PodAffinityTerm */
    struct ebb_selector *selector;      /* never NULL: nil is EBB_SEL_NOTHING */
    uint16_t nnamespaces;
    ebb_str *namespaces;
    struct ebb_selector *ns_selector;   /* NULL: not set; {} : every namespace */
    ebb_str topology_key;
    uint16_t nmatch_keys, nmismatch_keys;
    ebb_str *match_keys;                /* matchLabelKeys */
    ebb_str *mismatch_keys;             /* mismatchLabelKeys */
};

struct ebb_weighted_pod_term {
    int32_t weight;
    struct ebb_pod_term term;
};

struct ebb_affinity {
    /* node affinity */
    bool has_required;                  /* requiredDuringScheduling... set */
    uint16_t nrequired;                 /* its nodeSelectorTerms (ORed) */
    struct ebb_node_term *required;
    uint16_t npreferred;
    struct ebb_pref_term *preferred;
    /* pod affinity / anti-affinity */
    uint16_t naff_required, naff_preferred, nanti_required, nanti_preferred;
    struct ebb_pod_term *aff_required;
    struct ebb_weighted_pod_term *aff_preferred;
    struct ebb_pod_term *anti_required;
    struct ebb_weighted_pod_term *anti_preferred;
};

/* ---- topology spread --------------------------------------------------- */

enum { EBB_TSC_DO_NOT_SCHEDULE = 0, EBB_TSC_SCHEDULE_ANYWAY = 1 };
enum { EBB_POLICY_UNSET = 0, EBB_POLICY_HONOR = 1, EBB_POLICY_IGNORE = 2 };

struct ebb_tsc {
    int32_t max_skew;
    int32_t min_domains;                /* 0 when unset */
    ebb_str topology_key;
    uint8_t when_unsatisfiable;
    uint8_t node_affinity_policy;       /* EBB_POLICY_* */
    uint8_t node_taints_policy;
    struct ebb_selector *selector;      /* never NULL: nil is EBB_SEL_NOTHING */
    uint16_t nmatch_keys;
    ebb_str *match_keys;
};

/* ---- pods -------------------------------------------------------------- */

enum ebb_phase {
    EBB_PHASE_UNKNOWN = 0,   /* "Unknown" or absent */
    EBB_PHASE_PENDING,
    EBB_PHASE_RUNNING,
    EBB_PHASE_SUCCEEDED,
    EBB_PHASE_FAILED,
};

enum ebb_qos { EBB_QOS_BEST_EFFORT = 0, EBB_QOS_BURSTABLE = 1, EBB_QOS_GUARANTEED = 2 };

enum {
    EBB_POD_MIRROR = 1 << 0,              /* kubernetes.io/config.mirror */
    EBB_POD_STATIC = 1 << 1,              /* config.source present and != "api" */
    EBB_POD_LOCAL_STORAGE = 1 << 2,       /* a hostPath or emptyDir volume */
    EBB_POD_RESOURCE_CLAIMS = 1 << 3,     /* spec.resourceClaims non-empty */
    EBB_POD_EVICT_ANNOTATION = 1 << 4,    /* descheduler.alpha.kubernetes.io/evict */
    EBB_POD_PREFER_NO_EVICTION = 1 << 5,  /* ...prefer-no-eviction */
    EBB_POD_HAS_PRIORITY = 1 << 6,        /* spec.priority set */
    EBB_POD_TERMINATING = 1 << 7,         /* metadata.deletionTimestamp set */
    EBB_POD_NODE_SELECTOR = 1 << 8,       /* spec.nodeSelector non-empty */
    EBB_POD_READY = 1 << 9,               /* condition Ready == True */
    EBB_POD_SCHEDULING_GATED = 1 << 10,   /* spec.schedulingGates non-empty */
    EBB_POD_GONE = 1 << 15,               /* evicted in this cycle: hidden */
};

struct ebb_owner {
    ebb_str kind;
    ebb_str name;
    ebb_str uid;
    bool controller;
};

enum { EBB_CONT_APP = 0, EBB_CONT_INIT = 1, EBB_CONT_EPHEMERAL = 2 };
enum { EBB_CSTATE_NONE = 0, EBB_CSTATE_WAITING, EBB_CSTATE_RUNNING, EBB_CSTATE_TERMINATED };

/* One entry of status.{initC,c,ephemeralC}ontainerStatuses. */
struct ebb_cstatus {
    ebb_str name;
    uint8_t kind;                /* EBB_CONT_* */
    uint8_t state;               /* EBB_CSTATE_* of .state */
    bool ready;
    ebb_str reason;              /* state.waiting.reason or state.terminated.reason */
    int32_t exit_code;           /* state.terminated.exitCode */
    int32_t restarts;
    uint8_t last_state;          /* EBB_CSTATE_* of .lastState */
    ebb_str last_reason;         /* lastState.terminated.reason */
    int32_t last_exit_code;
};

/* A containers[].ports[] entry with a hostPort (the scheduler's NodePorts). */
struct ebb_host_port {
    ebb_str ip;                  /* hostIP; NULL or "": 0.0.0.0 */
    ebb_str protocol;            /* NULL or "": TCP */
    int32_t port;
};

struct ebb_condition {
    ebb_str type;
    ebb_str status;
    ebb_str reason;
    int64_t last_transition;     /* EBB_TIME_NONE when absent */
};

/* Where the full object can be read back from (pod.object): a byte range of
 * JSON in a file the cache keeps open. len == 0: not available. */
struct ebb_src {
    uint64_t off;
    uint32_t len;
    uint16_t file;               /* index in the cache's source files */
    uint8_t envelope;            /* the bytes are a watch event: the object is its "object" */
};

struct ebb_pod {
    uint32_t slot;               /* index in cache->pods */
    uint32_t serial;             /* bumps when the slot is reused */
    ebb_str ns, name, uid;
    ebb_str node;                /* spec.nodeName; NULL if unscheduled */
    ebb_str priority_class;      /* spec.priorityClassName */
    ebb_str reason;              /* status.reason */
    ebb_str scheduler;           /* spec.schedulerName */
    uint8_t phase;               /* enum ebb_phase */
    uint8_t qos;                 /* enum ebb_qos (status.qosClass or computed) */
    uint16_t flags;              /* EBB_POD_* */
    int32_t priority;            /* valid when EBB_POD_HAS_PRIORITY */
    int64_t created;             /* metadata.creationTimestamp */
    int64_t started;             /* status.startTime */
    int64_t deleted;             /* metadata.deletionTimestamp */
    struct ebb_labels labels;
    struct ebb_labels annotations;   /* last-applied-configuration left out */
    struct ebb_labels node_selector;
    uint16_t nowners, ntolerations, ncstatus, nconditions, nimages, npvcs, ntsc;
    struct ebb_owner *owners;
    struct ebb_toleration *tolerations;
    struct ebb_cstatus *cstatus;
    struct ebb_condition *conditions;
    ebb_str *images;             /* spec.containers[].image, in order */
    ebb_str *pvcs;               /* persistentVolumeClaim claim names */
    struct ebb_tsc *tsc;
    struct ebb_affinity *affinity;   /* NULL when spec.affinity is empty */
    struct ebb_res requests;     /* effective requests, as the scheduler counts */
    uint64_t requested_mask;     /* bit id: some container writes a request for id (even 0) */
    int32_t restarts;            /* sum over app container statuses */
    int32_t init_restarts;       /* sum over init container statuses */
    struct ebb_src src;
    /* What kube-scheduler reads besides the above (engine/sched*.c). */
    int64_t nz_cpu, nz_mem;      /* requests with 100m / 200Mi for each container
                                    that names no cpu / memory request (scoring) */
    uint16_t nhost_ports, ninit_images;
    struct ebb_host_port *host_ports;   /* app containers' ports with a hostPort */
    ebb_str *init_images;        /* spec.initContainers[].image, in order */
};

/* ---- nodes ------------------------------------------------------------- */

struct ebb_node_image {          /* status.images[] */
    uint16_t nnames;
    ebb_str *names;
    int64_t size;                /* sizeBytes */
};

struct ebb_node {
    uint32_t slot;
    uint32_t serial;
    ebb_str name, uid;
    bool unschedulable;          /* spec.unschedulable */
    bool ready;                  /* no Ready condition, or Ready == True (upstream IsReady) */
    uint16_t ntaints;
    struct ebb_taint *taints;
    int64_t created;
    struct ebb_labels labels;
    struct ebb_labels annotations;
    struct ebb_res allocatable;  /* falls back to capacity when empty */
    struct ebb_res capacity;
    struct ebb_src src;
    uint16_t nimages;
    struct ebb_node_image *images;   /* status.images (ImageLocality) */
};

/* ---- other kinds ------------------------------------------------------- */

struct ebb_namespace {
    ebb_str name;
    struct ebb_labels labels;
    bool terminating;
};

struct ebb_priority_class {
    ebb_str name;
    int32_t value;
    bool global_default;
};

struct ebb_pvc {
    ebb_str ns, name;
    ebb_str storage_class;       /* spec.storageClassName; NULL if unset */
};

struct ebb_pdb {
    ebb_str ns, name;
    struct ebb_selector *selector;   /* never NULL: nil is EBB_SEL_NOTHING */
    int64_t generation;
    int64_t observed_generation;
    int32_t disruptions_allowed;
    int32_t current_healthy, desired_healthy, expected_pods;
    ebb_str unhealthy_policy;        /* spec.unhealthyPodEvictionPolicy */
    ebb_str min_available;           /* as written: "2" or "50%"; NULL if unset */
    ebb_str max_unavailable;
};

/* Service, ReplicaSet, StatefulSet, ReplicationController: the objects
 * whose selectors kube-scheduler's default topology spreading reads, and the
 * owners that recreate an evicted pod. */
struct ebb_workload {
    int kind;                        /* EBB_KIND_SERVICE, ... */
    ebb_str ns, name, uid;
    int32_t replicas;                /* spec.replicas; -1 when unset or a Service */
    struct ebb_selector *selector;   /* NULL: none (a Service without one selects nothing) */
    struct ebb_owner owner;          /* the controller ownerReference (a ReplicaSet's
                                        Deployment); kind NULL: none */
};

/* metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics (pod: summed over
 * containers). */
struct ebb_node_metrics {
    ebb_str node;
    int64_t timestamp;
    int64_t window_ms;
    struct ebb_res usage;
};

struct ebb_pod_metrics {
    ebb_str ns, name;
    int64_t timestamp;
    struct ebb_res usage;
};

/* Koordinator slo.koordinator.sh/v1alpha1 NodeMetric. */
struct ebb_koord_pod_usage {
    ebb_str ns, name;
    ebb_str priority;            /* koordinator.sh/priority-class of the pod, if given */
    struct ebb_res usage;
};

struct ebb_koord_node_metric {
    ebb_str node;
    int64_t update_time;         /* status.updateTime */
    bool has_node_metric;        /* status.nodeMetric is there (not null), maybe empty */
    struct ebb_res node_usage;   /* status.nodeMetric.nodeUsage */
    struct ebb_res system_usage; /* status.nodeMetric.systemUsage */
    uint32_t npods;
    struct ebb_koord_pod_usage *pods;   /* status.podsMetric[] */
};

/* ---- destructors (NULL-safe; release every interned string) ------------ */

void ebb_pod_free(struct ebb_pod *p);
void ebb_node_free(struct ebb_node *n);
void ebb_namespace_free(struct ebb_namespace *ns);
void ebb_priority_class_free(struct ebb_priority_class *pc);
void ebb_pvc_free(struct ebb_pvc *pvc);
void ebb_pdb_free(struct ebb_pdb *pdb);
void ebb_node_metrics_free(struct ebb_node_metrics *m);
void ebb_pod_metrics_free(struct ebb_pod_metrics *m);
void ebb_koord_node_metric_free(struct ebb_koord_node_metric *m);
void ebb_workload_free(struct ebb_workload *w);
void ebb_selector_free(struct ebb_selector *s);
void ebb_affinity_free(struct ebb_affinity *a);
void ebb_pod_term_clear(struct ebb_pod_term *t);
void ebb_node_term_clear(struct ebb_node_term *t);

/* A pod's arrays may be held by other pods too (ebb/share.h): they are
 * read freely and never written in place.
 *
 * A copy of p holding the same arrays (src, slot and serial copied as they
 * are): NULL when out of memory. The copy's own fields (name, node,
 * phase...) are its to change; an array is replaced, or made its own first
 * (ebb_pod_own_cstatus), never written. */
struct ebb_pod *ebb_pod_clone(const struct ebb_pod *p);
/* Trade each array of a decoded pod for an identical one other pods already
 * hold, where there is one (the decoder's last step). */
void ebb_pod_share(struct ebb_pod *p);
/* Make p->cstatus p's own, to write: 0 or EBB_ENOMEM (p unchanged). */
int ebb_pod_own_cstatus(struct ebb_pod *p);
/* Let go of p's conditions / container statuses (NULL and 0 after). */
void ebb_pod_drop_conditions(struct ebb_pod *p);
void ebb_pod_drop_cstatus(struct ebb_pod *p);

/* "ns/name" into buf; returns buf. */
const char *ebb_pod_key(const struct ebb_pod *p, char *buf, size_t len);

#endif
