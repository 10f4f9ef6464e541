/* The decoder's entry points (ebb/decode.h): an object by its kind, the
 * kinds' names, freeing what was decoded, and what becomes of an object a
 * server sent. Called by the snapshot loader (one item at a time), the
 * watch cache (one event object at a time), `ebb serve` and the
 * configuration. */
#include <stdio.h>
#include <string.h>

#include "ebb/prom_result.h"
#include "model/decode_int.h"

/* ---- kinds ------------------------------------------------------------------ */

static const struct {
    const char *kind;
    const char *group;
} kinds[EBB_KIND_MAX] = {
    [EBB_KIND_UNKNOWN] = { "Unknown", NULL },
    [EBB_KIND_POD] = { "Pod", "" },
    [EBB_KIND_NODE] = { "Node", "" },
    [EBB_KIND_NAMESPACE] = { "Namespace", "" },
    [EBB_KIND_PRIORITY_CLASS] = { "PriorityClass", "scheduling.k8s.io" },
    [EBB_KIND_PVC] = { "PersistentVolumeClaim", "" },
    [EBB_KIND_PDB] = { "PodDisruptionBudget", "policy" },
    [EBB_KIND_NODE_METRICS] = { "NodeMetrics", "metrics.k8s.io" },
    [EBB_KIND_POD_METRICS] = { "PodMetrics", "metrics.k8s.io" },
    [EBB_KIND_KOORD_NODE_METRIC] = { "NodeMetric", "slo.koordinator.sh" },
    [EBB_KIND_PROM_RESULT] = { "PrometheusQueryResult", "ebb" },
    [EBB_KIND_SERVICE] = { "Service", "" },
    [EBB_KIND_REPLICA_SET] = { "ReplicaSet", "apps" },
    [EBB_KIND_STATEFUL_SET] = { "StatefulSet", "apps" },
    [EBB_KIND_REPLICATION_CONTROLLER] = { "ReplicationController", "" },
};

const char *ebb_kind_name(int kind)
{
    return kind > 0 && kind < EBB_KIND_MAX ? kinds[kind].kind : "Unknown";
}

/* An object without apiVersion is read as the one group that has its kind
 * (hand-written fixtures often leave it out); with one, the group must
 * match. */
int ebb_decode_kind(const cJSON *obj)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const cJSON *av = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
    const char *slash;
    size_t glen;

    if (!cJSON_IsString(k))
        return EBB_KIND_UNKNOWN;
    for (int i = 1; i < EBB_KIND_MAX; i++) {
        if (strcmp(k->valuestring, kinds[i].kind) != 0)
            continue;
        if (!cJSON_IsString(av))
            return av == NULL || cJSON_IsNull(av) ? i : EBB_KIND_UNKNOWN;
        slash = strchr(av->valuestring, '/');
        glen = slash ? (size_t)(slash - av->valuestring) : 0;
        if (strlen(kinds[i].group) == glen && strncmp(av->valuestring, kinds[i].group, glen) == 0)
            return i;
    }
    return EBB_KIND_UNKNOWN;
}

/* ---- objects ------------------------------------------------------------------ */

/* Decode `obj` as `kind` (already known to be an object). */
static int decode_as(struct dec *d, const cJSON *obj, int kind, struct ebb_object *out)
{
    int rc;

    switch (kind) {
    case EBB_KIND_POD: rc = ebb__decode_pod(d, obj, &out->u.pod); break;
    case EBB_KIND_NODE: rc = ebb__decode_node(d, obj, &out->u.node); break;
    case EBB_KIND_NAMESPACE: rc = ebb__decode_namespace(d, obj, &out->u.ns); break;
    case EBB_KIND_PRIORITY_CLASS: rc = ebb__decode_priority_class(d, obj, &out->u.pc); break;
    case EBB_KIND_PVC: rc = ebb__decode_pvc(d, obj, &out->u.pvc); break;
    case EBB_KIND_PDB: rc = ebb__decode_pdb(d, obj, &out->u.pdb); break;
    case EBB_KIND_NODE_METRICS: rc = ebb__decode_node_metrics(d, obj, &out->u.node_metrics); break;
    case EBB_KIND_POD_METRICS: rc = ebb__decode_pod_metrics(d, obj, &out->u.pod_metrics); break;
    case EBB_KIND_KOORD_NODE_METRIC: rc = ebb__decode_koord(d, obj, &out->u.koord); break;
    case EBB_KIND_PROM_RESULT: rc = ebb_prom_result_decode(obj, &out->u.prom, d->err); break;
    case EBB_KIND_SERVICE:
    case EBB_KIND_REPLICA_SET:
    case EBB_KIND_STATEFUL_SET:
    case EBB_KIND_REPLICATION_CONTROLLER:
        rc = ebb__decode_workload(d, obj, kind, &out->u.workload);
        break;
    default:
        return ebb__fail(d, EBB_ENOENT, "kind", "not a kind ebb keeps");
    }
    if (rc == 0)
        out->kind = kind;
    else
        out->u.any = NULL;
    return rc;
}

int ebb_decode_object(const cJSON *obj, struct ebb_object *out, struct ebb_error *err)
{
    return ebb_decode_object_as(obj, EBB_KIND_UNKNOWN, out, err);
}

/* `obj` as `kind`, or as the kind it names. */
static int object_as(struct dec *d, const cJSON *obj, int kind, struct ebb_object *out)
{
    if (obj == NULL || out == NULL)
        return EBB_EINVAL;
    out->kind = EBB_KIND_UNKNOWN;
    out->u.any = NULL;
    if (!cJSON_IsObject(obj))
        return ebb__expected(d, NULL, "an object", obj);
    if (kind == EBB_KIND_UNKNOWN || cJSON_GetObjectItemCaseSensitive(obj, "kind") != NULL)
        kind = ebb_decode_kind(obj);
    return decode_as(d, obj, kind, out);
}

int ebb_decode_object_as(const cJSON *obj, int kind, struct ebb_object *out, struct ebb_error *err)
{
    struct dec d = DEC_INIT(err);

    return object_as(&d, obj, kind, out);
}

void ebb_object_free(struct ebb_object *o)
{
    if (o == NULL)
        return;
    switch (o->kind) {
    case EBB_KIND_POD: ebb_pod_free(o->u.pod); break;
    case EBB_KIND_NODE: ebb_node_free(o->u.node); break;
    case EBB_KIND_NAMESPACE: ebb_namespace_free(o->u.ns); break;
    case EBB_KIND_PRIORITY_CLASS: ebb_priority_class_free(o->u.pc); break;
    case EBB_KIND_PVC: ebb_pvc_free(o->u.pvc); break;
    case EBB_KIND_PDB: ebb_pdb_free(o->u.pdb); break;
    case EBB_KIND_NODE_METRICS: ebb_node_metrics_free(o->u.node_metrics); break;
    case EBB_KIND_POD_METRICS: ebb_pod_metrics_free(o->u.pod_metrics); break;
    case EBB_KIND_KOORD_NODE_METRIC: ebb_koord_node_metric_free(o->u.koord); break;
    case EBB_KIND_PROM_RESULT: ebb_prom_result_free(o->u.prom); break;
    case EBB_KIND_SERVICE:
    case EBB_KIND_REPLICA_SET:
    case EBB_KIND_STATEFUL_SET:
    case EBB_KIND_REPLICATION_CONTROLLER: ebb_workload_free(o->u.workload); break;
    default: break;
    }
    o->kind = EBB_KIND_UNKNOWN;
    o->u.any = NULL;
}

/* ---- objects from a server ------------------------------------------------------ */

const char *ebb_skip_reason(int reason)
{
    static const char *const names[EBB_SKIP_MAX] = {
        [EBB_SKIP_INVALID] = "invalid", [EBB_SKIP_WRONG_KIND] = "wrong-kind",
        [EBB_SKIP_TOO_LARGE] = "too-large", [EBB_SKIP_NOT_JSON] = "not-json",
        [EBB_SKIP_TOO_MANY] = "too-many",
    };
    return reason > 0 && reason < EBB_SKIP_MAX ? names[reason] : "unknown";
}

static bool namespaced(int kind)
{
    switch (kind) {
    case EBB_KIND_POD:
    case EBB_KIND_PVC:
    case EBB_KIND_PDB:
    case EBB_KIND_POD_METRICS:
    case EBB_KIND_SERVICE:
    case EBB_KIND_REPLICA_SET:
    case EBB_KIND_STATEFUL_SET:
    case EBB_KIND_REPLICATION_CONTROLLER: return true;
    default: return false;
    }
}

/* metadata.<key> as text fit for a message and an Event: "" unless it
 * is a string of valid UTF-8 that fits. */
static void meta_text(const cJSON *meta, const char *key, char *buf, size_t len)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(meta, key);
    size_t n;

    buf[0] = '\0';
    if (!cJSON_IsString(j) || (n = strlen(j->valuestring)) >= len ||
        !ebb_utf8_valid(j->valuestring, n))
        return;
    memcpy(buf, j->valuestring, n + 1);
}

void ebb_skip_clear(struct ebb_skip *why)
{
    why->kind = 0;
    why->reason = 0;
    why->ns[0] = why->name[0] = why->uid[0] = '\0';
    ebb_error_clear(&why->err);
}

void ebb_skip_key(const cJSON *obj, int kind, struct ebb_skip *why)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

    why->kind = kind;
    meta_text(meta, "namespace", why->ns, sizeof(why->ns));
    meta_text(meta, "name", why->name, sizeof(why->name));
    meta_text(meta, "uid", why->uid, sizeof(why->uid));
    if (namespaced(kind) && why->ns[0] == '\0')
        snprintf(why->ns, sizeof(why->ns), "default");
    else if (!namespaced(kind))
        why->ns[0] = '\0';
}

/* The one place that decides what becomes of an object a server sent.
 * Invariant: an object is kept whole or not at all, and never fails more
 * than itself: what a real API server stores but ebb cannot keep as it is
 * has been made representable before this (a NUL read as U+FFFD by
 * ebb_json_nul_scrub, resource names past the registry's bounds counted
 * as EBB_RES_UNREGISTERED by ebb__reslist); anything else ebb cannot read
 * (a field of a type or value it does not take, more entries than it
 * keeps, a quantity that is not one, another kind) is skipped alone, and
 * the caller says so (a warning, ebb_objects_skipped_total{resource,reason},
 * a Warning Event on the object). Only running out of memory is not the
 * object's fault: that is returned as is. */
int ebb_decode_from_server(const cJSON *obj, int kind, struct ebb_object *out, struct ebb_skip *why)
{
    struct dec d = DEC_INIT(NULL);
    int rc;

    if (obj == NULL || out == NULL || why == NULL)
        return EBB_EINVAL;
    ebb_skip_clear(why);
    d.err = &why->err;
    d.kept_max = EBB_OBJECT_KEPT_MAX;
    rc = object_as(&d, obj, kind, out);
    if (rc == EBB_ENOMEM)
        return rc;
    if (rc == 0 && (kind == EBB_KIND_UNKNOWN || out->kind == kind))
        return 0;
    if (rc == 0) {
        snprintf(why->err.field, sizeof(why->err.field), "kind");
        snprintf(why->err.msg, sizeof(why->err.msg), "a %s where a %s was expected",
                 ebb_kind_name(out->kind), ebb_kind_name(kind));
        ebb_object_free(out);
        why->reason = EBB_SKIP_WRONG_KIND;
    } else {
        why->reason = rc == EBB_ELIMIT ? EBB_SKIP_TOO_LARGE : EBB_SKIP_INVALID;
    }
    ebb_skip_key(obj, kind, why);
    why->err.code = EBB_ESCHEMA;
    return EBB_ESCHEMA;
}

bool ebb_json_nul_scrub(char *text, size_t len)
{
    char *p = text, *end = text + len;

    if (len > 0 && memchr(text, '\0', len) != NULL)
        return false;
    /* backslashes only occur inside strings in JSON; each escape is
     * stepped over whole, so "\\u0000" (an escaped backslash, then text)
     * stays as it is */
    while ((p = memchr(p, '\\', (size_t)(end - p))) != NULL) {
        if (end - p >= 6 && p[1] == 'u' && memcmp(p + 2, "0000", 4) == 0) {
            memcpy(p + 2, "fffd", 4);
            p += 6;
        } else {
            p += 2;
        }
        if (p >= end)
            break;
    }
    return true;
}
