/* serve_evict.c: POST pods/NAME/eviction, as the API server's eviction
 * subresource answers it (pkg/registry/core/pod/storage/eviction.go): the
 * pod's PodDisruptionBudget decided by the rules of engine/core/pdb.c on the
 * budgets as stored (the cache follows every write to them), the budget's
 * status then spent as the disruption controller would see it, and the pod
 * deleted gracefully. The PATCH an evict plugin sends (metadata.uid a
 * precondition) is answered here too.
 *
 * Called on the loop thread by the dispatch (serve_api.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/background.h"
#include "serve/serve_int.h"

/* The PDB's status after an eviction took one disruption from it: what
 * the budget allowed less one, the pod no longer healthy if it was. */
static void pdb_after_eviction(struct server *s, const struct ebb_pdb *pdb, const char *pod,
                               bool ready)
{
    struct ver *cur = ebb__store_lookup(s, R_PDBS, pdb->ns, pdb->name);
    cJSON *obj, *status, *dp, *conds, *c;
    int allowed = pdb->disruptions_allowed - 1;
    char ts[32];

    if (cur == NULL || (obj = ebb__ver_json(cur)) == NULL)
        return;
    ebb__serve_now(ts, sizeof(ts));
    status = ebb__json_child(obj, "status");
    ebb__json_set(status, "disruptionsAllowed", cJSON_CreateNumber(allowed));
    ebb__json_set(status, "currentHealthy",
                  cJSON_CreateNumber(pdb->current_healthy - (ready ? 1 : 0)));
    dp = ebb__json_child(status, "disruptedPods");
    ebb__json_set_str(dp, pod, ts);
    if (allowed <= 0) {
        /* pdbhelper.UpdateDisruptionAllowedCondition */
        conds = cJSON_GetObjectItemCaseSensitive(status, "conditions");
        if (!cJSON_IsArray(conds)) {
            cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
            conds = cJSON_AddArrayToObject(status, "conditions");
        }
        cJSON_ArrayForEach(c, conds) {
            const char *type = ebb__json_str(c, "type");
            if (type != NULL && strcmp(type, "DisruptionAllowed") == 0)
                break;
        }
        if (c == NULL) {
            c = cJSON_CreateObject();
            cJSON_AddItemToArray(conds, c);
            ebb__json_set_str(c, "type", "DisruptionAllowed");
        }
        if (ebb__json_str(c, "status") == NULL || strcmp(ebb__json_str(c, "status"), "False") != 0)
            ebb__json_set_str(c, "lastTransitionTime", ts);
        ebb__json_set_str(c, "status", "False");
        ebb__json_set_str(c, "reason", "InsufficientPods");
        ebb__json_set_str(c, "message", "");
        ebb__json_set(c, "observedGeneration",
                      cJSON_CreateNumber((double)pdb->observed_generation));
    }
    ebb__store_put(s, R_PDBS, obj, NULL);
}

/* 429 with the API server's message, the budget's words as the cause. */
static void reply_pdb_refusal(struct ebb_http_req *r, const char *msg)
{
    static const char head[] = "Cannot evict pod as it would violate the pod's disruption budget.";
    const char *cause = msg;
    bool processing = strstr(msg, "is still being processed") != NULL;
    cJSON *det = cJSON_CreateObject(), *causes, *c;

    if (strncmp(msg, head, sizeof(head) - 1) == 0) {
        cause = msg + sizeof(head) - 1;
        while (*cause == ' ')
            cause++;
    }
    if (processing) {
        cJSON_AddNumberToObject(det, "retryAfterSeconds", 10);
        ebb_http_add_header(r, "Retry-After", "10");
    }
    causes = cJSON_AddArrayToObject(det, "causes");
    c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "reason", "DisruptionBudget");
    cJSON_AddStringToObject(c, "message", cause);
    cJSON_AddItemToArray(causes, c);
    ebb__reply_status(r, 429, "TooManyRequests", head, det);
}

/* The PDB verdict's errors: 201 with a failure Status in the body for a pod
 * under two budgets (as the API server answers), 403 for a negative budget. */
static void reply_pdb_error(struct ebb_http_req *r, const char *msg, const struct ebb_pdb *which)
{
    if (strstr(msg, "more than one PodDisruptionBudget") != NULL) {
        cJSON *st = cJSON_CreateObject();
        cJSON_AddStringToObject(st, "kind", "Status");
        cJSON_AddStringToObject(st, "apiVersion", "v1");
        cJSON_AddObjectToObject(st, "metadata");
        cJSON_AddStringToObject(st, "status", "Failure");
        cJSON_AddStringToObject(st, "message", msg);
        cJSON_AddNumberToObject(st, "code", 500);
        ebb__reply_json(r, 201, st);
    } else {
        char full[600];
        cJSON *det = cJSON_CreateObject();
        snprintf(full, sizeof(full),
                 "poddisruptionbudget.policy \"%s\" is forbidden: pdb disruptions allowed is "
                 "negative",
                 which ? which->name : "");
        cJSON_AddStringToObject(det, "name", which ? which->name : "");
        cJSON_AddStringToObject(det, "group", "policy");
        cJSON_AddStringToObject(det, "kind", "poddisruptionbudget");
        ebb__reply_status(r, 403, "Forbidden", full, det);
    }
}

/* --evict-in-background: KubeVirt's eviction interceptor (an admission
 * webhook on pods/eviction, so before any budget is looked at) answers for
 * a virtual machine's pod by live-migrating it: 429 in its words, and the
 * pod marked eviction-in-progress while the migration lasts (here: until
 * the pod is deleted). Returns whether it answered. */
static bool evacuate(struct server *s, struct ebb_http_req *r, const struct route *rt,
                     const struct ver *cur, bool dry)
{
    cJSON *json = ebb__ver_json(cur), *ann, *owner;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    const char *vmi = rt->name;
    char msg[700];

    /* the virtual machine is the pod's VirtualMachineInstance owner */
    cJSON_ArrayForEach(owner, cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences")) {
        const char *kind = ebb__json_str(owner, "kind"), *name = ebb__json_str(owner, "name");
        if (kind != NULL && name != NULL && strcmp(kind, "VirtualMachineInstance") == 0)
            vmi = name;
    }
    ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
    if (!cJSON_HasObjectItem(ann, EBB_ANNOTATION_REQUEST_EVICT_ONLY)) {
        cJSON_Delete(json);
        return false;
    }
    snprintf(msg, sizeof(msg),
             "admission webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" denied the "
             "request: " EBB_EVICTION_IN_BACKGROUND_TEXT " of VMI \"%s/%s\"", rt->ns, vmi);
    if (!dry && !cJSON_HasObjectItem(ann, EBB_ANNOTATION_EVICTION_IN_PROGRESS)) {
        ebb__json_set_str(ebb__json_child(ebb__json_child(json, "metadata"), "annotations"),
                          EBB_ANNOTATION_EVICTION_IN_PROGRESS, "kubevirt");
        ebb__store_put(s, R_PODS, json, NULL);
        json = NULL;
        ebb_log(EBB_LOG_INFO, "eviction of pod %s/%s: evacuation in background", rt->ns, rt->name);
    }
    cJSON_Delete(json);
    ebb__reply_status(r, 429, "TooManyRequests", msg, NULL);
    return true;
}

void ebb__serve_evict(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &ebb__rdefs[R_PODS];
    cJSON *ev = ebb__body_object(r, NULL), *opts, *json;
    struct ver *cur, *gone;
    struct ebb_pod *pod = NULL;
    struct ebb_error err = { 0 };
    const struct ebb_pdb *which = NULL;
    const char *name, *kind;
    char msg[512];
    long long grace;
    bool dry, ready;
    int verdict;

    if (ev == NULL)
        return;
    kind = ebb__json_str(ev, "kind");
    if (kind != NULL && strcmp(kind, "Eviction") != 0) {
        cJSON_Delete(ev);
        ebb__reply_bad_request(r, "not a Eviction object");
        return;
    }
    name = ebb__json_meta_str(ev, "name");
    if (name == NULL || strcmp(name, rt->name) != 0) {
        cJSON_Delete(ev);
        ebb__reply_bad_request(r, "name in URL does not match name in Eviction object");
        return;
    }
    opts = cJSON_GetObjectItemCaseSensitive(ev, "deleteOptions");
    dry = ebb__dry_run(r);
    if (cJSON_IsObject(opts)) {
        const cJSON *dr = cJSON_GetObjectItemCaseSensitive(opts, "dryRun"), *x;
        cJSON_ArrayForEach(x, dr)
            if (cJSON_IsString(x) && strcmp(x->valuestring, "All") == 0)
                dry = true;
    }
    if ((cur = ebb__store_lookup(s, R_PODS, rt->ns, rt->name)) == NULL) {
        cJSON_Delete(ev);
        ebb__reply_not_found(r, d, rt->name);
        return;
    }
    if (!ebb__check_preconditions(r, d, rt->name, opts, cur)) {
        cJSON_Delete(ev);
        return;
    }
    grace = ebb__grace_of(r, opts);
    cJSON_Delete(ev);
    if (s->o.evict_in_background && evacuate(s, r, rt, cur, dry))
        return;
    /* the pod as stored now, decoded for the budget rules */
    json = ebb__ver_json(cur);
    if (json == NULL || ebb_decode_pod(json, &pod, &err) != 0) {
        cJSON_Delete(json);
        ebb__reply_internal(r, json == NULL ? "out of memory" : err.msg);
        return;
    }
    cJSON_Delete(json);
    verdict = ebb__pdb_decide(s->cache, pod, NULL, &which, msg, sizeof(msg));
    ready = (pod->flags & EBB_POD_READY) != 0;
    ebb_pod_free(pod);
    if (verdict == EBB_PDB_REFUSE) {
        reply_pdb_refusal(r, msg);
        return;
    }
    if (verdict == EBB_PDB_ERROR) {
        reply_pdb_error(r, msg, which);
        return;
    }
    if (!dry && verdict == EBB_PDB_ALLOW_DECREMENT && which != NULL)
        pdb_after_eviction(s, which, rt->name, ready);
    /* the pod as it was, for its replacement (--reschedule) */
    json = s->resched != NULL && !dry ? ebb__ver_json(cur) : NULL;
    if (ebb__delete_object(s, R_PODS, cur, grace, dry, &gone) != 0) {
        cJSON_Delete(json);
        ebb__reply_internal(r, "out of memory");
        return;
    }
    ebb__ver_release(gone);
    if (!dry)
        ebb_log(EBB_LOG_INFO, "evicted pod %s/%s", rt->ns, rt->name);
    if (json != NULL) {
        ebb__resched_evicted(s, json);
        cJSON_Delete(json);
    }
    ebb__reply_status(r, 201, NULL, NULL, NULL);
}

/* ---- what evict plugins send ---------------------------------------------------------------- */

/* PATCH pods/NAME (merge or strategic merge): what SoftEvictor-like plugins
 * send. A metadata.uid in the patch is the precondition it is in the API
 * server: a different uid is an immutable field changed, 422. */
void ebb__serve_patch_pod(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    struct ver *cur = ebb__store_lookup(s, R_PODS, rt->ns, rt->name);
    size_t len;
    const char *body = ebb_http_req_body(r, &len);
    cJSON *patch = cur != NULL && len > 0 ? cJSON_ParseWithLength(body, len) : NULL;
    const char *uid = ebb__json_meta_str(patch, "uid");

    if (uid != NULL && strcmp(uid, cur->uid) != 0) {
        struct invalid iv = { 0 };
        char detail[200];
        snprintf(detail, sizeof(detail), "Invalid value: \"%.60s\": field is immutable", uid);
        ebb__invalid_add(&iv, "FieldValueInvalid", "metadata.uid", detail);
        cJSON_Delete(patch);
        ebb__invalid_reply(r, &ebb__rdefs[R_PODS], rt->name, &iv);
        return;
    }
    cJSON_Delete(patch);
    ebb__serve_patch(s, r, rt);
}
