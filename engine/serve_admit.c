/* serve_admit.c: what the API server does to an object between a write
 * request and the store, where clients notice it. The admission plugins
 * of a cluster (NamespaceLifecycle, Priority, DefaultTolerationSeconds),
 * the defaults of pods and namespaces (pkg/apis/core/v1/defaults.go), the
 * validation of names and of a pod's containers, and each kind's strategy:
 * the status a create starts from, what an update of the object or of its
 * status subresource may change, metadata.generation.
 *
 * Called on the loop thread by the write handlers (serve_write.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/quantity.h"
#include "serve_int.h"

/* ---- 422 Invalid ------------------------------------------------------------------------ */

void ebb__invalid_add(struct invalid *iv, const char *reason, const char *field,
                      const char *detail)
{
    cJSON *c;

    if (iv->causes == NULL)
        iv->causes = cJSON_CreateArray();
    c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "reason", reason);
    cJSON_AddStringToObject(c, "message", detail);
    cJSON_AddStringToObject(c, "field", field);
    cJSON_AddItemToArray(iv->causes, c);
    ebb__sb_printf(&iv->text, "%s%s: %s", iv->n++ ? ", " : "", field, detail);
}

bool ebb__invalid_reply(struct ebb_http_req *r, const struct rdef *d, const char *name,
                        struct invalid *iv)
{
    char msg[2048];
    cJSON *det;

    if (iv->n == 0) {
        free(iv->text.p);
        return false;
    }
    snprintf(msg, sizeof(msg), "%s%s%s \"%s\" is invalid: %s%s%s", d->kind,
             d->group[0] ? "." : "", d->group, name ? name : "", iv->n > 1 ? "[" : "",
             iv->text.p ? iv->text.p : "", iv->n > 1 ? "]" : "");
    det = cJSON_CreateObject();
    if (name != NULL && name[0] != '\0')
        cJSON_AddStringToObject(det, "name", name);
    if (d->group[0] != '\0')
        cJSON_AddStringToObject(det, "group", d->group);
    cJSON_AddStringToObject(det, "kind", d->kind);
    cJSON_AddItemToObject(det, "causes", iv->causes);
    ebb__reply_status(r, 422, "Invalid", msg, det);
    free(iv->text.p);
    memset(iv, 0, sizeof(*iv));
    return true;
}

/* 403: an admission plugin said no. */
static void reply_forbidden(struct ebb_http_req *r, const struct rdef *d, const char *name,
                            const char *why, cJSON *causes)
{
    char q[128], msg[1024];
    cJSON *det = ebb__reply_details(d, name);

    ebb__rdef_qualified(d, q, sizeof(q));
    snprintf(msg, sizeof(msg), "%s \"%s\" is forbidden: %s", q, name, why);
    if (causes != NULL)
        cJSON_AddItemToObject(det, "causes", causes);
    ebb__reply_status(r, 403, "Forbidden", msg, det);
}

/* ---- names --------------------------------------------------------------------------------- */

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* IsDNS1123Label */
static bool dns_label(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

/* IsDNS1123Subdomain */
static bool dns_subdomain(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 253)
        return false;
    for (const char *p = s; *p;) {
        size_t k = strcspn(p, ".");
        for (size_t i = 0; i < k; i++)
            if (!alnum(p[i]) && p[i] != '-')
                return false;
        if (k == 0 || !alnum(p[0]) || !alnum(p[k - 1]))
            return false;
        p += k;
        if (*p == '.' && *++p == '\0')
            return false;
    }
    return true;
}

static void check_name(struct invalid *iv, int res, const char *name)
{
    char detail[700];

    if (res == R_NAMESPACES) {
        if (dns_label(name, strlen(name)))
            return;
        snprintf(detail, sizeof(detail),
                 "Invalid value: \"%.253s\": a lowercase RFC 1123 label must consist of lower "
                 "case alphanumeric characters or '-', and must start and end with an "
                 "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                 name);
    } else {
        if (dns_subdomain(name))
            return;
        snprintf(detail, sizeof(detail),
                 "Invalid value: \"%.253s\": a lowercase RFC 1123 subdomain must consist of "
                 "lower case alphanumeric characters, '-' or '.', and must start and end with an "
                 "alphanumeric character (e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                 name);
    }
    ebb__invalid_add(iv, "FieldValueInvalid", "metadata.name", detail);
}

/* ---- pods ---------------------------------------------------------------------------------- */

static void default_str(cJSON *obj, const char *key, const char *value)
{
    const char *v = ebb__json_str(obj, key);

    if (v == NULL || v[0] == '\0')
        ebb__json_set_str(obj, key, value);
}

/* Always for ":latest" or no tag, IfNotPresent otherwise (a digest too). */
static const char *pull_policy(const char *image)
{
    const char *slash = strrchr(image, '/'), *name = slash ? slash + 1 : image;
    const char *colon = strchr(name, ':');

    if (strchr(image, '@') != NULL)
        return "IfNotPresent";
    return colon == NULL || strcmp(colon + 1, "latest") == 0 ? "Always" : "IfNotPresent";
}

static void default_container(cJSON *c)
{
    const char *image = ebb__json_str(c, "image");
    cJSON *res = ebb__json_child(c, "resources"), *limits, *requests, *l, *p;

    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    if (image != NULL)
        default_str(c, "imagePullPolicy", pull_policy(image));
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c, "ports"))
        default_str(p, "protocol", "TCP");
    /* a limit without a request: the request is the limit */
    limits = cJSON_GetObjectItemCaseSensitive(res, "limits");
    if (cJSON_IsObject(limits) && cJSON_GetArraySize(limits) > 0) {
        requests = ebb__json_child(res, "requests");
        cJSON_ArrayForEach(l, limits)
            if (cJSON_GetObjectItemCaseSensitive(requests, l->string) == NULL)
                cJSON_AddItemToObject(requests, l->string, cJSON_Duplicate(l, true));
    }
}

/* v1qos.GetPodQOS over cpu and memory. */
static const char *qos_class(const cJSON *spec)
{
    static const char *const lists[] = { "containers", "initContainers" };
    int64_t req[2] = { 0, 0 }, lim[2] = { 0, 0 };
    bool any_req = false, any_lim = false, guaranteed = true;

    for (size_t k = 0; k < EBB_ARRAY_LEN(lists); k++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[k])) {
            const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
            int found = 0;
            for (int r = 0; r < 2; r++) {
                const char *name = r == 0 ? "cpu" : "memory";
                const char *rq = ebb__json_str(cJSON_GetObjectItemCaseSensitive(res, "requests"),
                                               name);
                const char *lm = ebb__json_str(cJSON_GetObjectItemCaseSensitive(res, "limits"),
                                               name);
                int64_t v;
                if (rq != NULL && ebb_quantity_parse_resource(name, rq, &v) == 0 && v > 0) {
                    req[r] = ebb_q_add(req[r], v);   /* sums of quantities saturate */
                    any_req = true;
                }
                if (lm != NULL && ebb_quantity_parse_resource(name, lm, &v) == 0 && v > 0) {
                    lim[r] = ebb_q_add(lim[r], v);
                    any_lim = true;
                    found++;
                }
            }
            if (found < 2)
                guaranteed = false;
        }
    }
    if (!any_req && !any_lim)
        return "BestEffort";
    if (guaranteed && req[0] == lim[0] && req[1] == lim[1])
        return "Guaranteed";
    return "Burstable";
}

/* DefaultTolerationSeconds: tolerate not-ready and unreachable nodes 300 s. */
static void default_tolerations(cJSON *spec)
{
    static const char *const keys[] = { "node.kubernetes.io/not-ready",
                                        "node.kubernetes.io/unreachable" };
    cJSON *tols = cJSON_GetObjectItemCaseSensitive(spec, "tolerations"), *t;

    for (size_t k = 0; k < EBB_ARRAY_LEN(keys); k++) {
        bool tolerated = false;
        cJSON_ArrayForEach(t, tols) {
            const char *key = ebb__json_str(t, "key"), *effect = ebb__json_str(t, "effect");
            if ((key == NULL || key[0] == '\0' || strcmp(key, keys[k]) == 0) &&
                (effect == NULL || effect[0] == '\0' || strcmp(effect, "NoExecute") == 0))
                tolerated = true;
        }
        if (tolerated)
            continue;
        if (!cJSON_IsArray(tols)) {
            cJSON_DeleteItemFromObjectCaseSensitive(spec, "tolerations");
            tols = cJSON_AddArrayToObject(spec, "tolerations");
        }
        t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "key", keys[k]);
        cJSON_AddStringToObject(t, "operator", "Exists");
        cJSON_AddStringToObject(t, "effect", "NoExecute");
        cJSON_AddNumberToObject(t, "tolerationSeconds", 300);
        cJSON_AddItemToArray(tols, t);
    }
}

/* The Priority admission plugin. false: answered (403). */
static bool admit_priority(struct server *s, struct ebb_http_req *r, const char *name,
                           cJSON *spec)
{
    /* the classes every cluster has */
    static const struct { const char *name; double value; } builtin[] = {
        { "system-cluster-critical", 2000000000 }, { "system-node-critical", 2000001000 },
    };
    const char *pcname = ebb__json_str(spec, "priorityClassName"), *policy = NULL;
    const cJSON *given = cJSON_GetObjectItemCaseSensitive(spec, "priority");
    struct store *st = &s->stores[R_PRIORITY_CLASSES];
    cJSON *pc = NULL;
    double value = 0;
    char why[300];

    if (pcname != NULL && pcname[0] != '\0') {
        struct ver *v = ebb__store_get(s, R_PRIORITY_CLASSES, pcname);
        bool found = v != NULL && (pc = ebb__ver_json(v)) != NULL;
        for (size_t i = 0; !found && i < EBB_ARRAY_LEN(builtin); i++)
            if (strcmp(builtin[i].name, pcname) == 0) {
                value = builtin[i].value;
                found = true;
            }
        if (!found) {
            snprintf(why, sizeof(why), "no PriorityClass with name %.200s was found", pcname);
            reply_forbidden(r, &ebb__rdefs[R_PODS], name, why, NULL);
            return false;
        }
    } else {
        for (size_t i = 0; i < st->n && pc == NULL; i++) {
            cJSON *j = ebb__ver_json(st->v[i]);
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "globalDefault")))
                pc = j;
            else
                cJSON_Delete(j);
        }
        if (pc != NULL)
            ebb__json_set_str(spec, "priorityClassName", ebb__json_meta_str(pc, "name"));
    }
    if (pc != NULL) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(pc, "value");
        value = cJSON_IsNumber(v) ? v->valuedouble : 0;
        policy = ebb__json_str(pc, "preemptionPolicy");
    }
    if (cJSON_IsNumber(given) && given->valuedouble != value) {
        snprintf(why, sizeof(why),
                 "the integer value of priority (%.0f) must not be provided in pod spec; priority "
                 "admission controller computed %.0f from the given PriorityClass name",
                 given->valuedouble, value);
        cJSON_Delete(pc);
        reply_forbidden(r, &ebb__rdefs[R_PODS], name, why, NULL);
        return false;
    }
    ebb__json_set(spec, "priority", cJSON_CreateNumber(value));
    ebb__json_set_str(spec, "preemptionPolicy", policy ? policy : "PreemptLowerPriority");
    cJSON_Delete(pc);
    return true;
}

static void check_pod(struct invalid *iv, const cJSON *spec)
{
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(spec, "containers"), *c;
    char field[64];
    int i = 0;

    if (cJSON_GetArraySize(cs) == 0) {
        ebb__invalid_add(iv, "FieldValueRequired", "spec.containers", "Required value");
        return;
    }
    cJSON_ArrayForEach(c, cs) {
        const char *n = ebb__json_str(c, "name"), *img = ebb__json_str(c, "image");
        if (n == NULL || n[0] == '\0') {
            snprintf(field, sizeof(field), "spec.containers[%d].name", i);
            ebb__invalid_add(iv, "FieldValueRequired", field, "Required value");
        }
        if (img == NULL || img[0] == '\0') {
            snprintf(field, sizeof(field), "spec.containers[%d].image", i);
            ebb__invalid_add(iv, "FieldValueRequired", field, "Required value");
        }
        i++;
    }
}

static bool create_pod(struct server *s, struct ebb_http_req *r, const char *name, cJSON *pod)
{
    cJSON *spec = ebb__json_child(pod, "spec"), *c, *status;
    static const char *const lists[] = { "containers", "initContainers" };

    if (!admit_priority(s, r, name, spec))
        return false;
    default_tolerations(spec);
    default_str(spec, "restartPolicy", "Always");
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "schedulerName", "default-scheduler");
    ebb__json_child(spec, "securityContext");
    if (cJSON_GetObjectItemCaseSensitive(spec, "terminationGracePeriodSeconds") == NULL)
        cJSON_AddNumberToObject(spec, "terminationGracePeriodSeconds", 30);
    if (cJSON_GetObjectItemCaseSensitive(spec, "enableServiceLinks") == NULL)
        cJSON_AddBoolToObject(spec, "enableServiceLinks", true);
    for (size_t k = 0; k < EBB_ARRAY_LEN(lists); k++)
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[k]))
            if (cJSON_IsObject(c))
                default_container(c);
    /* a pod starts Pending: its status is the kubelet's to write */
    status = cJSON_CreateObject();
    cJSON_AddStringToObject(status, "phase", "Pending");
    cJSON_AddStringToObject(status, "qosClass", qos_class(spec));
    ebb__json_set(pod, "status", status);
    return true;
}

/* ---- the strategies ------------------------------------------------------------------------ */

bool ebb__has_status(int res)
{
    return res == R_PODS || res == R_NODES || res == R_NAMESPACES || res == R_PVCS ||
           res == R_PDBS;
}

static void namespace_defaults(cJSON *ns, const char *name)
{
    cJSON *spec = ebb__json_child(ns, "spec");
    cJSON *fins = cJSON_GetObjectItemCaseSensitive(spec, "finalizers");
    const cJSON *f;
    bool has = false;

    ebb__json_set_str(ebb__json_child(ebb__json_meta(ns), "labels"), "kubernetes.io/metadata.name",
                      name);
    cJSON_ArrayForEach(f, fins)
        has |= cJSON_IsString(f) && strcmp(f->valuestring, "kubernetes") == 0;
    if (!has) {
        if (!cJSON_IsArray(fins)) {
            cJSON_DeleteItemFromObjectCaseSensitive(spec, "finalizers");
            fins = cJSON_AddArrayToObject(spec, "finalizers");
        }
        cJSON_AddItemToArray(fins, cJSON_CreateString("kubernetes"));
    }
}

static void check_namespace_state(struct server *s, struct ebb_http_req *r, int res,
                                   const char *ns, const char *name, bool *ok)
{
    struct ver *v;
    cJSON *obj;
    const char *phase;

    *ok = true;
    if (!ebb__rdefs[res].namespaced || (v = ebb__store_get(s, R_NAMESPACES, ns)) == NULL ||
        (obj = ebb__ver_json(v)) == NULL)
        return;
    phase = ebb__json_str(cJSON_GetObjectItemCaseSensitive(obj, "status"), "phase");
    if (ebb__json_meta_str(obj, "deletionTimestamp") != NULL ||
        (phase != NULL && strcmp(phase, "Terminating") == 0)) {
        char why[400], cmsg[300];
        cJSON *causes = cJSON_CreateArray(), *c = cJSON_CreateObject();
        snprintf(why, sizeof(why), "unable to create new content in namespace %s because it is "
                                   "being terminated", ns);
        snprintf(cmsg, sizeof(cmsg), "namespace %s is being terminated", ns);
        cJSON_AddStringToObject(c, "reason", "NamespaceTerminating");
        cJSON_AddStringToObject(c, "message", cmsg);
        cJSON_AddStringToObject(c, "field", "metadata.namespace");
        cJSON_AddItemToArray(causes, c);
        reply_forbidden(r, &ebb__rdefs[res], name, why, causes);
        *ok = false;
    }
    cJSON_Delete(obj);
}

bool ebb__admit_create(struct server *s, struct ebb_http_req *r, int res, const char *ns,
                       cJSON *obj)
{
    const struct rdef *d = &ebb__rdefs[res];
    cJSON *meta = ebb__json_meta(obj);
    const char *name = ebb__json_str(meta, "name");
    struct invalid iv = { 0 };
    bool ok;

    if (name == NULL)
        name = "";
    check_namespace_state(s, r, res, ns, name, &ok);
    if (!ok)
        return false;
    if (res == R_PODS && !create_pod(s, r, name, obj))
        return false;
    if (name[0] == '\0')
        ebb__invalid_add(&iv, "FieldValueRequired", "metadata.name",
                         "Required value: name or generateName is required");
    else
        check_name(&iv, res, name);
    if (res == R_PODS)
        check_pod(&iv, cJSON_GetObjectItemCaseSensitive(obj, "spec"));
    if (ebb__invalid_reply(r, d, name, &iv))
        return false;
    switch (res) {
    case R_NAMESPACES: {
        cJSON *st = cJSON_CreateObject();
        namespace_defaults(obj, name);
        cJSON_AddStringToObject(st, "phase", "Active");
        ebb__json_set(obj, "status", st);
        break;
    }
    case R_PVCS: {
        cJSON *st = cJSON_CreateObject();
        cJSON_AddStringToObject(st, "phase", "Pending");
        ebb__json_set(obj, "status", st);
        break;
    }
    case R_PDBS: {
        /* the disruption controller's to fill */
        cJSON *st = cJSON_CreateObject();
        cJSON_AddNumberToObject(st, "disruptionsAllowed", 0);
        cJSON_AddNumberToObject(st, "currentHealthy", 0);
        cJSON_AddNumberToObject(st, "desiredHealthy", 0);
        cJSON_AddNumberToObject(st, "expectedPods", 0);
        ebb__json_set(obj, "status", st);
        break;
    }
    default:
        break;
    }
    if (res == R_PDBS || res == R_POD_MIGRATION_JOBS)
        ebb__json_set(meta, "generation", cJSON_CreateNumber(1));
    else
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "generation");
    return true;
}

/* A pod update may change images, activeDeadlineSeconds, tolerations
 * (adding to them) and terminationGracePeriodSeconds, nothing else of
 * the spec (ValidatePodUpdate). */
static bool pod_spec_update_ok(const cJSON *spec, const cJSON *old)
{
    static const char *const free_keys[] = { "activeDeadlineSeconds",
                                             "terminationGracePeriodSeconds", "tolerations" };
    static const char *const lists[] = { "containers", "initContainers" };
    cJSON *a = cJSON_Duplicate(spec, true), *b = cJSON_Duplicate(old, true);
    const cJSON *t, *u;
    bool ok;

    /* every old toleration is still there */
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(old, "tolerations")) {
        bool kept = false;
        cJSON_ArrayForEach(u, cJSON_GetObjectItemCaseSensitive(spec, "tolerations"))
            kept |= cJSON_Compare(t, u, true);
        if (!kept) {
            cJSON_Delete(a);
            cJSON_Delete(b);
            return false;
        }
    }
    for (size_t i = 0; i < EBB_ARRAY_LEN(free_keys); i++) {
        cJSON_DeleteItemFromObjectCaseSensitive(a, free_keys[i]);
        cJSON_DeleteItemFromObjectCaseSensitive(b, free_keys[i]);
    }
    for (size_t k = 0; k < EBB_ARRAY_LEN(lists); k++) {
        cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(a, lists[k]))
            cJSON_DeleteItemFromObjectCaseSensitive(c, "image");
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(b, lists[k]))
            cJSON_DeleteItemFromObjectCaseSensitive(c, "image");
    }
    ok = cJSON_Compare(a, b, true);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return ok;
}

bool ebb__admit_update(struct ebb_http_req *r, int res, cJSON **objp, const cJSON *old,
                       bool status)
{
    const struct rdef *d = &ebb__rdefs[res];
    const char *name = ebb__json_meta_str(old, "name");
    struct invalid iv = { 0 };
    cJSON *obj = *objp;

    if (status) {
        /* the status subresource: the stored object with the new status */
        cJSON *copy = cJSON_Duplicate(old, true);
        cJSON *st = cJSON_DetachItemFromObjectCaseSensitive(obj, "status");
        cJSON *rv = cJSON_DetachItemFromObjectCaseSensitive(ebb__json_meta(obj),
                                                            "resourceVersion");
        ebb__json_set(copy, "status", st != NULL ? st : cJSON_CreateObject());
        if (rv != NULL)
            ebb__json_set(ebb__json_meta(copy), "resourceVersion", rv);
        else
            cJSON_DeleteItemFromObjectCaseSensitive(ebb__json_meta(copy), "resourceVersion");
        cJSON_Delete(obj);
        *objp = copy;
        return true;
    }
    if (ebb__has_status(res)) {
        const cJSON *ost = cJSON_GetObjectItemCaseSensitive(old, "status");
        if (ost != NULL)
            ebb__json_set(obj, "status", cJSON_Duplicate(ost, true));
        else
            cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    }
    if (res == R_PODS &&
        !pod_spec_update_ok(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
                            cJSON_GetObjectItemCaseSensitive(old, "spec")))
        ebb__invalid_add(&iv, "FieldValueForbidden", "spec",
                         "Forbidden: pod updates may not change fields other than "
                         "`spec.containers[*].image`, `spec.initContainers[*].image`, "
                         "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to "
                         "existing tolerations) or `spec.terminationGracePeriodSeconds` (allow it "
                         "to be set to 1 if it was previously negative)");
    if (ebb__invalid_reply(r, d, name, &iv))
        return false;
    if (res == R_NAMESPACES) {
        const cJSON *ofins = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(old, "spec"), "finalizers");
        namespace_defaults(obj, name ? name : "");
        if (ofins != NULL)   /* spec.finalizers change through namespaces/NAME/finalize only */
            ebb__json_set(ebb__json_child(obj, "spec"), "finalizers", cJSON_Duplicate(ofins, true));
    }
    {
        const cJSON *og = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(old,
                                                                                 "metadata"),
                                                           "generation");
        cJSON *meta = ebb__json_meta(obj);
        if (og == NULL) {
            cJSON_DeleteItemFromObjectCaseSensitive(meta, "generation");
        } else {
            /* a change of the spec is a new generation */
            bool changed = !cJSON_Compare(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
                                          cJSON_GetObjectItemCaseSensitive(old, "spec"), true);
            ebb__json_set(meta, "generation", cJSON_CreateNumber(og->valuedouble + changed));
        }
    }
    return true;
}
