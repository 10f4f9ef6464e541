/* Nodes and every other kind ebb keeps but pods: Namespaces,
 * PriorityClasses, PersistentVolumeClaims, PodDisruptionBudgets,
 * metrics.k8s.io NodeMetrics and PodMetrics, Koordinator's NodeMetric, and
 * the workloads topology spreading reads (Services, ReplicaSets,
 * StatefulSets, ReplicationControllers). Called by decode_object.c and,
 * through ebb_decode_node (ebb/decode.h), by the tests. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/selector.h"
#include "ebb/taints.h"
#include "model/decode_int.h"

/* ---- nodes ------------------------------------------------------------------ */

static int taint(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_taint *t = slot;
    const char *s;
    int rc;

    (void)ctx;
    if ((rc = ebb__str_at(d, c, "key", &t->key)) == 0 &&
        (rc = ebb__str_at(d, c, "value", &t->value)) == 0 &&
        (rc = ebb__text_at(d, c, "effect", &s)) == 0)
        t->effect = (uint8_t)ebb_effect_parse(s ? s : "");
    return rc;
}

/* status.images[]: every name (tag and digest forms) with the size. */
static int node_image(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_node_image *im = slot;
    int rc;

    (void)ctx;
    if ((rc = ebb__strs_at(d, c, "names", &im->names, &im->nnames)) != 0)
        return rc;
    return ebb__int_at(d, c, "sizeBytes", 0, INT64_MAX, &im->size, NULL);
}

int ebb__decode_node(struct dec *d, const cJSON *obj, struct ebb_node **out)
{
    const cJSON *meta, *spec, *status;
    struct ebb_node *n;
    int rc;

    if (!cJSON_IsObject(obj))
        return ebb__expected(d, NULL, "an object", obj);
    if ((n = calloc(1, sizeof(*n))) == NULL)
        return ebb__nomem(d);
    n->created = EBB_TIME_NONE;
    n->ready = true;   /* upstream IsReady: only a Ready condition that is not True says no */
    if ((rc = ebb__meta_at(d, obj, &meta, NULL, &n->name)) != 0)
        goto fail;
    ebb__push(d, "metadata");
    if ((rc = ebb__str_at(d, meta, "uid", &n->uid)) == 0 &&
        (rc = ebb__labels_at(d, meta, "labels", &n->labels, false)) == 0 &&
        (rc = ebb__labels_at(d, meta, "annotations", &n->annotations, true)) == 0)
        rc = ebb__time_at(d, meta, "creationTimestamp", &n->created);
    ebb__pop(d);
    if (rc != 0 || (rc = ebb__obj_at(d, obj, "spec", &spec)) != 0)
        goto fail;
    ebb__push(d, "spec");
    if ((rc = ebb__bool_at(d, spec, "unschedulable", &n->unschedulable)) == 0)
        rc = ARRAY_AT(d, spec, "taints", taint, NULL, n->taints, n->ntaints);
    ebb__pop(d);
    if (rc != 0 || (rc = ebb__obj_at(d, obj, "status", &status)) != 0)
        goto fail;
    ebb__push(d, "status");
    if ((rc = ebb__res_at(d, status, "capacity", &n->capacity)) == 0 &&
        (rc = ebb__res_at(d, status, "allocatable", &n->allocatable)) == 0 &&
        (rc = ebb__conditions_at(d, status, NULL, NULL, &n->ready)) == 0)
        rc = ARRAY_AT(d, status, "images", node_image, NULL, n->images, n->nimages);
    ebb__pop(d);
    if (rc != 0)
        goto fail;
    /* An empty allocatable means the capacity, as the descheduler reads it. */
    if (n->allocatable.n == 0 && n->capacity.n > 0) {
        size_t sz = n->capacity.n * sizeof(*n->capacity.q);
        if ((n->allocatable.q = malloc(sz)) == NULL) {
            rc = ebb__nomem(d);
            goto fail;
        }
        memcpy(n->allocatable.q, n->capacity.q, sz);
        n->allocatable.n = n->capacity.n;
    }
    *out = n;
    return 0;
fail:
    ebb_node_free(n);
    return rc;
}

int ebb_decode_node(const cJSON *obj, struct ebb_node **out, struct ebb_error *err)
{
    struct dec d = DEC_INIT(err);

    if (obj == NULL || out == NULL)
        return EBB_EINVAL;
    return ebb__decode_node(&d, obj, out);
}

/* ---- namespaces, priority classes, claims ---------------------------------------- */

int ebb__decode_namespace(struct dec *d, const cJSON *obj, struct ebb_namespace **out)
{
    struct ebb_namespace *ns;
    const cJSON *meta, *status;
    const char *phase;
    int rc;

    if ((ns = calloc(1, sizeof(*ns))) == NULL)
        return ebb__nomem(d);
    if ((rc = ebb__meta_at(d, obj, &meta, NULL, &ns->name)) == 0) {
        ebb__push(d, "metadata");
        rc = ebb__labels_at(d, meta, "labels", &ns->labels, false);
        if (rc == 0 && ebb__child(meta, "deletionTimestamp") != NULL)
            ns->terminating = true;
        ebb__pop(d);
    }
    if (rc == 0 && (rc = ebb__obj_at(d, obj, "status", &status)) == 0 && status != NULL) {
        ebb__push(d, "status");
        if ((rc = ebb__text_at(d, status, "phase", &phase)) == 0 && phase != NULL &&
            strcmp(phase, "Terminating") == 0)
            ns->terminating = true;
        ebb__pop(d);
    }
    if (rc != 0) {
        ebb_namespace_free(ns);
        return rc;
    }
    *out = ns;
    return 0;
}

int ebb__decode_priority_class(struct dec *d, const cJSON *obj, struct ebb_priority_class **out)
{
    struct ebb_priority_class *pc;
    const cJSON *meta;
    int rc;

    if ((pc = calloc(1, sizeof(*pc))) == NULL)
        return ebb__nomem(d);
    if ((rc = ebb__meta_at(d, obj, &meta, NULL, &pc->name)) == 0 &&
        (rc = ebb__i32_at(d, obj, "value", &pc->value, NULL)) == 0)
        rc = ebb__bool_at(d, obj, "globalDefault", &pc->global_default);
    if (rc != 0) {
        ebb_priority_class_free(pc);
        return rc;
    }
    *out = pc;
    return 0;
}

int ebb__decode_pvc(struct dec *d, const cJSON *obj, struct ebb_pvc **out)
{
    struct ebb_pvc *pvc;
    const cJSON *meta, *spec;
    int rc;

    if ((pvc = calloc(1, sizeof(*pvc))) == NULL)
        return ebb__nomem(d);
    if ((rc = ebb__meta_at(d, obj, &meta, &pvc->ns, &pvc->name)) == 0 &&
        (rc = ebb__obj_at(d, obj, "spec", &spec)) == 0) {
        ebb__push(d, "spec");
        rc = ebb__str_at(d, spec, "storageClassName", &pvc->storage_class);
        ebb__pop(d);
    }
    if (rc != 0) {
        ebb_pvc_free(pvc);
        return rc;
    }
    *out = pvc;
    return 0;
}

/* ---- disruption budgets ----------------------------------------------------------- */

/* IntOrString as written ("2", "50%"). */
static int int_or_string_at(struct dec *d, const cJSON *o, const char *key, ebb_str *out)
{
    const cJSON *j = ebb__child(o, key);
    char buf[32];

    if (j == NULL)
        return 0;
    if (cJSON_IsString(j))
        return ebb__intern(d, key, j->valuestring, out);
    if (!cJSON_IsNumber(j) || j->valuedouble != floor(j->valuedouble) ||
        fabs(j->valuedouble) > 2147483647.0)
        return ebb__expected(d, key, "an integer or a percentage", j);
    snprintf(buf, sizeof(buf), "%d", (int)j->valuedouble);
    return ebb__intern(d, key, buf, out);
}

int ebb__decode_pdb(struct dec *d, const cJSON *obj, struct ebb_pdb **out)
{
    struct ebb_pdb *pdb;
    const cJSON *meta, *spec, *status, *av;
    int rc;

    if ((pdb = calloc(1, sizeof(*pdb))) == NULL)
        return ebb__nomem(d);
    if ((rc = ebb__meta_at(d, obj, &meta, &pdb->ns, &pdb->name)) != 0)
        goto fail;
    ebb__push(d, "metadata");
    rc = ebb__int_at(d, meta, "generation", INT64_MIN, INT64_MAX, &pdb->generation, NULL);
    ebb__pop(d);
    if (rc != 0 || (rc = ebb__obj_at(d, obj, "spec", &spec)) != 0)
        goto fail;
    ebb__push(d, "spec");
    rc = ebb__selector_at(d, spec, "selector", true, &pdb->selector);
    /* policy/v1beta1 read an empty selector as "no pods" (policy/v1 as
     * "every pod"); the API server keeps that meaning when it converts. */
    av = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
    if (rc == 0 && cJSON_IsString(av) && strcmp(av->valuestring, "policy/v1beta1") == 0 &&
        ebb_selector_is_empty(pdb->selector)) {
        ebb_selector_free(pdb->selector);
        if ((pdb->selector = ebb_selector_nothing()) == NULL)
            rc = ebb__nomem(d);
    }
    if (rc == 0)
        rc = int_or_string_at(d, spec, "minAvailable", &pdb->min_available);
    if (rc == 0)
        rc = int_or_string_at(d, spec, "maxUnavailable", &pdb->max_unavailable);
    if (rc == 0)
        rc = ebb__str_at(d, spec, "unhealthyPodEvictionPolicy", &pdb->unhealthy_policy);
    ebb__pop(d);
    if (rc != 0 || (rc = ebb__obj_at(d, obj, "status", &status)) != 0)
        goto fail;
    ebb__push(d, "status");
    if ((rc = ebb__int_at(d, status, "observedGeneration", INT64_MIN, INT64_MAX,
                          &pdb->observed_generation, NULL)) == 0 &&
        (rc = ebb__i32_at(d, status, "disruptionsAllowed", &pdb->disruptions_allowed, NULL)) == 0 &&
        (rc = ebb__i32_at(d, status, "currentHealthy", &pdb->current_healthy, NULL)) == 0 &&
        (rc = ebb__i32_at(d, status, "desiredHealthy", &pdb->desired_healthy, NULL)) == 0)
        rc = ebb__i32_at(d, status, "expectedPods", &pdb->expected_pods, NULL);
    ebb__pop(d);
    if (rc != 0)
        goto fail;
    *out = pdb;
    return 0;
fail:
    ebb_pdb_free(pdb);
    return rc;
}

/* ---- metrics ---------------------------------------------------------------------- */

/* A Go duration ("10s", "1m30s", "20.5s", "150ms") in milliseconds, the
 * nearest (ebb_duration_parse reads it as Go does). */
static bool parse_duration_ms(const char *s, int64_t *out)
{
    int64_t ns;

    if (ebb_duration_parse(s, &ns) != 0)
        return false;
    *out = ns / 1000000 + (ns % 1000000 >= 500000) - (ns % 1000000 <= -500000);
    return true;
}

int ebb__decode_node_metrics(struct dec *d, const cJSON *obj, struct ebb_node_metrics **out)
{
    struct ebb_node_metrics *m;
    const cJSON *meta;
    const char *w;
    int rc;

    if ((m = calloc(1, sizeof(*m))) == NULL)
        return ebb__nomem(d);
    m->timestamp = EBB_TIME_NONE;
    if ((rc = ebb__meta_at(d, obj, &meta, NULL, &m->node)) == 0 &&
        (rc = ebb__time_at(d, obj, "timestamp", &m->timestamp)) == 0 &&
        (rc = ebb__text_at(d, obj, "window", &w)) == 0 && w != NULL &&
        !parse_duration_ms(w, &m->window_ms))
        rc = ebb__fail(d, EBB_ESCHEMA, "window", "\"%s\" is not a duration", SHOWN(w));
    if (rc == 0)
        rc = ebb__res_at(d, obj, "usage", &m->usage);
    if (rc != 0) {
        ebb_node_metrics_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* One container's usage, added to the sum at ctx. */
static int container_usage(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct racc one;
    int rc;

    (void)slot;
    one.has = 0;
    if ((rc = ebb__reslist_at(d, c, "usage", RES_DROP, &one)) == 0)
        ebb__racc_add(ctx, &one);
    return rc;
}

int ebb__decode_pod_metrics(struct dec *d, const cJSON *obj, struct ebb_pod_metrics **out)
{
    struct ebb_pod_metrics *m;
    const cJSON *meta;
    struct racc sum;
    int rc;

    if ((m = calloc(1, sizeof(*m))) == NULL)
        return ebb__nomem(d);
    m->timestamp = EBB_TIME_NONE;
    sum.has = 0;
    if ((rc = ebb__meta_at(d, obj, &meta, &m->ns, &m->name)) == 0 &&
        (rc = ebb__time_at(d, obj, "timestamp", &m->timestamp)) == 0 &&
        (rc = EACH_AT(d, obj, "containers", container_usage, &sum)) == 0)
        rc = ebb__racc_emit(d, &sum, &m->usage);
    if (rc != 0) {
        ebb_pod_metrics_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* Koordinator's ResourceMap prints as {"resources": {...}, "devices": [...]};
 * a plain ResourceList is accepted too. */
static int resource_map_at(struct dec *d, const cJSON *o, const char *key, struct ebb_res *out)
{
    const cJSON *m, *r;
    struct racc a;
    int rc;

    if ((rc = ebb__obj_at(d, o, key, &m)) != 0 || m == NULL)
        return rc;
    a.has = 0;
    ebb__push(d, key);
    if ((rc = ebb__obj_at(d, m, "resources", &r)) == 0) {
        if (r != NULL)
            rc = ebb__reslist_at(d, m, "resources", RES_DROP, &a);
        else
            rc = ebb__reslist(d, m, "devices", RES_DROP, &a);
    }
    ebb__pop(d);
    if (rc == 0)
        rc = ebb__racc_emit(d, &a, out);
    return rc;
}

static int koord_pod(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_koord_pod_usage *u = slot;
    int rc;

    (void)ctx;
    if ((rc = ebb__str_at(d, c, "namespace", &u->ns)) == 0 &&
        (rc = ebb__str_at(d, c, "name", &u->name)) == 0 &&
        (rc = ebb__str_at(d, c, "priority", &u->priority)) == 0)
        rc = resource_map_at(d, c, "podUsage", &u->usage);
    return rc;
}

int ebb__decode_koord(struct dec *d, const cJSON *obj, struct ebb_koord_node_metric **out)
{
    struct ebb_koord_node_metric *m;
    const cJSON *meta, *status, *nm;
    uint16_t npods = 0;
    int rc;

    if ((m = calloc(1, sizeof(*m))) == NULL)
        return ebb__nomem(d);
    m->update_time = EBB_TIME_NONE;
    if ((rc = ebb__meta_at(d, obj, &meta, NULL, &m->node)) != 0 ||
        (rc = ebb__obj_at(d, obj, "status", &status)) != 0 || status == NULL)
        goto done;
    ebb__push(d, "status");
    if ((rc = ebb__time_at(d, status, "updateTime", &m->update_time)) == 0 &&
        (rc = ebb__obj_at(d, status, "nodeMetric", &nm)) == 0 && nm != NULL) {
        m->has_node_metric = true;
        ebb__push(d, "nodeMetric");
        if ((rc = resource_map_at(d, nm, "nodeUsage", &m->node_usage)) == 0)
            rc = resource_map_at(d, nm, "systemUsage", &m->system_usage);
        ebb__pop(d);
    }
    if (rc == 0)
        rc = ARRAY_AT(d, status, "podsMetric", koord_pod, NULL, m->pods, npods);
    m->npods = npods;
    ebb__pop(d);
done:
    if (rc != 0) {
        ebb_koord_node_metric_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* ---- Services, ReplicaSets, StatefulSets, ReplicationControllers ------------ */

/* One ownerReferences entry: the first with controller: true goes to
 * *ctx (a struct ebb_owner), the others are checked and dropped. */
static int controller_owner(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_owner o = { 0 }, *keep = ctx;
    int rc;

    (void)slot;
    if ((rc = ebb__str_at(d, c, "kind", &o.kind)) == 0 &&
        (rc = ebb__str_at(d, c, "name", &o.name)) == 0 &&
        (rc = ebb__str_at(d, c, "uid", &o.uid)) == 0)
        rc = ebb__bool_at(d, c, "controller", &o.controller);
    if (rc == 0 && o.controller && keep->kind == NULL && o.kind != NULL && o.name != NULL) {
        *keep = o;
        return 0;
    }
    ebb_str_release(o.kind);
    ebb_str_release(o.name);
    ebb_str_release(o.uid);
    return rc;
}

int ebb__decode_workload(struct dec *d, const cJSON *obj, int kind, struct ebb_workload **out)
{
    struct ebb_workload *w;
    const cJSON *meta, *spec;
    int rc;

    if ((w = calloc(1, sizeof(*w))) == NULL)
        return ebb__nomem(d);
    w->kind = kind;
    w->replicas = -1;
    if ((rc = ebb__meta_at(d, obj, &meta, &w->ns, &w->name)) == 0) {
        ebb__push(d, "metadata");
        if ((rc = ebb__str_at(d, meta, "uid", &w->uid)) == 0)
            rc = EACH_AT(d, meta, "ownerReferences", controller_owner, &w->owner);
        ebb__pop(d);
    }
    if (rc == 0 && (rc = ebb__obj_at(d, obj, "spec", &spec)) == 0 && spec != NULL) {
        ebb__push(d, "spec");
        if (kind != EBB_KIND_SERVICE)
            rc = ebb__i32_at(d, spec, "replicas", &w->replicas, NULL);
        if (rc == 0) {
            if (kind == EBB_KIND_SERVICE || kind == EBB_KIND_REPLICATION_CONTROLLER)
                rc = ebb__map_selector_at(d, spec, "selector", &w->selector);
            else
                rc = ebb__selector_at(d, spec, "selector", false, &w->selector);
        }
        ebb__pop(d);
    }
    if (rc != 0) {
        ebb_workload_free(w);
        return rc;
    }
    *out = w;
    return 0;
}
