/* ebb/decode.h: cJSON -> the compact structs of model.h.
 *
 * Called by the snapshot loader (one item at a time) and by the watch cache
 * (one event object at a time). Only what the engine needs is kept;
 * managedFields, env, commands and the last-applied annotation are dropped;
 * the full object stays readable through ebb_src.
 *
 * Errors name the field that is wrong, relative to the object
 * ("spec.containers[1].resources.requests.cpu: \"12x\" is not a quantity");
 * the caller prefixes the item and file.
 */
#ifndef EBB_DECODE_H
#define EBB_DECODE_H

#include "model.h"

struct cJSON;
struct ebb_prom_result;

enum ebb_kind {
    EBB_KIND_UNKNOWN = 0,
    EBB_KIND_POD,
    EBB_KIND_NODE,
    EBB_KIND_NAMESPACE,
    EBB_KIND_PRIORITY_CLASS,
    EBB_KIND_PVC,
    EBB_KIND_PDB,
    EBB_KIND_NODE_METRICS,        /* metrics.k8s.io NodeMetrics */
    EBB_KIND_POD_METRICS,         /* metrics.k8s.io PodMetrics */
    EBB_KIND_KOORD_NODE_METRIC,   /* slo.koordinator.sh NodeMetric */
    EBB_KIND_PROM_RESULT,         /* ebb PrometheusQueryResult (ebb record --policy) */
    EBB_KIND_SERVICE,             /* the four kinds of struct ebb_workload */
    EBB_KIND_REPLICA_SET,
    EBB_KIND_STATEFUL_SET,
    EBB_KIND_REPLICATION_CONTROLLER,
    EBB_KIND_MAX,
};

const char *ebb_kind_name(int kind);   /* "Pod", "Node", ... */

/* Kind of an object from its "kind" and "apiVersion" (group checked: a
 * "Pod" of another group is unknown). */
int ebb_decode_kind(const struct cJSON *obj);

struct ebb_object {
    int kind;
    union {
        struct ebb_pod *pod;
        struct ebb_node *node;
        struct ebb_namespace *ns;
        struct ebb_priority_class *pc;
        struct ebb_pvc *pvc;
        struct ebb_pdb *pdb;
        struct ebb_node_metrics *node_metrics;
        struct ebb_pod_metrics *pod_metrics;
        struct ebb_koord_node_metric *koord;
        struct ebb_prom_result *prom;
        struct ebb_workload *workload;  /* the four workload kinds */
        void *any;
    } u;
};

/* Decode `obj` of a known kind; out->u is owned by the caller (free with
 * ebb_object_free). EBB_ESCHEMA with err->field/msg set on a bad field. */
int ebb_decode_object(const struct cJSON *obj, struct ebb_object *out, struct ebb_error *err);
/* The same for an item of a List the API server answered: it leaves kind
 * and apiVersion off the items (they are the List's), so an item that names
 * no kind is decoded as `kind`, the kind of the resource listed. One that
 * names a kind is decoded as that kind (the caller compares out->kind). */
int ebb_decode_object_as(const struct cJSON *obj, int kind, struct ebb_object *out,
                         struct ebb_error *err);
void ebb_object_free(struct ebb_object *o);

int ebb_decode_pod(const struct cJSON *obj, struct ebb_pod **out, struct ebb_error *err);
int ebb_decode_node(const struct cJSON *obj, struct ebb_node **out, struct ebb_error *err);

/* metav1.LabelSelector JSON ({matchLabels, matchExpressions}). A JSON null
 * or absent selector gives *out = NULL; callers that need "nil matches
 * nothing" substitute ebb_selector_nothing(). */
int ebb_decode_label_selector(const struct cJSON *j, struct ebb_selector **out,
                              struct ebb_error *err);

/* v1.NodeAffinity JSON (required node selector terms and preferred
 * terms), as in a pod's spec.affinity.nodeAffinity; NULL in: *out NULL. */
int ebb_decode_node_affinity(const struct cJSON *j, struct ebb_affinity **out,
                             struct ebb_error *err);

/* ---- objects from a server (LIST items, watch events, metrics polls) ---- */

/* Why an object was skipped; ebb_skip_reason() names it as the `reason`
 * label of ebb_objects_skipped_total. */
enum {
    EBB_SKIP_INVALID = 1,   /* "invalid": a field ebb cannot read (the message names it) */
    EBB_SKIP_WRONG_KIND,    /* "wrong-kind": another kind than the resource listed */
    EBB_SKIP_TOO_LARGE,     /* "too-large": past EBB_OBJECT_MAX, EBB_JSON_TREE_MAX
                             * (ebb/snapshot.h) or EBB_OBJECT_KEPT_MAX */
    EBB_SKIP_NOT_JSON,      /* "not-json": not JSON, or a raw NUL byte in it */
    EBB_SKIP_TOO_MANY,      /* "too-many": more of its resource than ebb keeps
                             * (EBB_LIST_OBJECTS_MAX, ebb/watch.h) */
    EBB_SKIP_MAX,
};
const char *ebb_skip_reason(int reason);

/* What ebb keeps of one object: at most this much text (interned strings;
 * a real object's are within etcd's 1.5 MiB). More: EBB_ELIMIT. */
#define EBB_OBJECT_KEPT_MAX ((size_t)2 << 20)

struct ebb_skip {
    int kind;                 /* what it was read as */
    int reason;               /* EBB_SKIP_* */
    char ns[254];             /* "" for cluster-scoped kinds or when unreadable */
    char name[254];           /* "" when the object names itself in no way ebb reads */
    char uid[64];
    struct ebb_error err;     /* field and message */
};

/* Decide what becomes of `obj`, an object a server sent for the resource
 * of `kind` (EBB_KIND_UNKNOWN: any kind ebb keeps): 0 and *out (the
 * caller's, ebb_object_free) when it is kept; EBB_ESCHEMA and *why when it
 * is skipped alone (never failing its page or stream); EBB_ENOMEM. */
int ebb_decode_from_server(const struct cJSON *obj, int kind, struct ebb_object *out,
                           struct ebb_skip *why);
/* Nothing skipped: kind and reason 0, the texts empty (their first bytes:
 * ebb_error_clear). */
void ebb_skip_clear(struct ebb_skip *why);
/* Fill why->kind, ns, name and uid from what `obj` says (as far as it can
 * be read: "" otherwise). */
void ebb_skip_key(const struct cJSON *obj, int kind, struct ebb_skip *why);

/* Make a JSON text's NUL characters harmless before cJSON reads it: every
 * "\u0000" escape becomes "\ufffd" (U+FFFD, the same length, in place),
 * as C strings cannot hold a NUL and the API server accepts one in
 * annotation values and free text. false when the text holds a raw NUL
 * byte, which JSON forbids (the text is then not JSON). */
bool ebb_json_nul_scrub(char *text, size_t len);

/* Text a server or a file sent, as a message shows it: into buf, at most
 * len - 1 bytes (cut after a whole character, "..." then), control
 * characters and bytes that are not UTF-8 as '?'. Returns buf. */
const char *ebb_decode_shown(const char *s, char *buf, size_t len);

/* A quantity that may be a JSON string or number. */
int ebb_decode_quantity(const struct cJSON *j, const char *resource, int64_t *out);

#endif
