/* serve_write.c: writes of `ebb serve`. Create, update (with the
 * resourceVersion check), JSON merge and strategic merge patches (as merge
 * patches), delete with preconditions, and POST pods/NAME/eviction decided
 * by the PodDisruptionBudget rules of engine/pdb.c, which then updates the
 * budget's status as the disruption controller would. The PATCH an evict
 * plugin sends (metadata.uid a precondition) is answered here too.
 *
 * Called on the loop thread by the dispatch (serve_api.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_int.h"

/* ---- create, update, patch, delete ---------------------------------------------------------- */

static bool dry_run(struct ebb_http_req *r)
{
    const char *d = ebb_http_req_query(r, "dryRun");
    return d != NULL && strcmp(d, "All") == 0;
}

/* The request body as a JSON object; NULL when answered (400). */
static cJSON *body_object(struct ebb_http_req *r, const struct rdef *d)
{
    size_t len;
    const char *body = ebb_http_req_body(r, &len);
    cJSON *j;
    char msg[300];

    if (len == 0) {
        ebb__reply_bad_request(r, "the body of the request was in an unknown format - accepted "
                               "media types include: application/json");
        return NULL;
    }
    if ((j = cJSON_ParseWithLength(body, len)) == NULL || !cJSON_IsObject(j)) {
        const char *at = cJSON_GetErrorPtr();
        snprintf(msg, sizeof(msg), "couldn't get version/kind; json parse error near: %.40s",
                 j == NULL && at != NULL ? at : body);
        cJSON_Delete(j);
        ebb__reply_bad_request(r, msg);
        return NULL;
    }
    if (d != NULL) {
        const char *kind = ebb__json_str(j, "kind");
        if (kind != NULL && strcmp(kind, d->kind) != 0) {
            char gv[128];
            ebb__rdef_group_version(d, gv, sizeof(gv));
            snprintf(msg, sizeof(msg), "the body of the request kind \"%.60s\" is not %s, %s",
                     kind, d->kind, gv);
            cJSON_Delete(j);
            ebb__reply_bad_request(r, msg);
            return NULL;
        }
    }
    return j;
}

/* Namespace checks shared by create and update. false: answered. */
static bool check_namespace(struct server *s, struct ebb_http_req *r, const struct route *rt,
                            cJSON *obj)
{
    cJSON *meta = ebb__json_meta(obj);
    const char *ns = ebb__json_str(meta, "namespace");

    if (!ebb__rdefs[rt->res].namespaced) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "namespace");
        return true;
    }
    if (ns != NULL && ns[0] != '\0' && strcmp(ns, rt->ns) != 0) {
        ebb__reply_bad_request(r, "the namespace of the provided object does not match the "
                               "namespace sent on the request");
        return false;
    }
    if (s->stores[R_NAMESPACES].n > 0 && ebb__store_get(s, R_NAMESPACES, rt->ns) == NULL) {
        ebb__reply_not_found(r, &ebb__rdefs[R_NAMESPACES], rt->ns);
        return false;
    }
    ebb__json_set_str(meta, "namespace", rt->ns);
    return true;
}

/* kind and apiVersion, first as the API server writes them. */
static void fill_type(const struct rdef *d, cJSON *obj)
{
    char gv[128];
    cJSON *first = obj->child;

    ebb__rdef_group_version(d, gv, sizeof(gv));
    if (first != NULL && first->string != NULL && strcmp(first->string, "kind") == 0 &&
        first->next != NULL && first->next->string != NULL &&
        strcmp(first->next->string, "apiVersion") == 0) {
        ebb__json_set_str(obj, "kind", d->kind);
        ebb__json_set_str(obj, "apiVersion", gv);
        return;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "kind");
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "apiVersion");
    first = obj->child;
    obj->child = NULL;
    cJSON_AddStringToObject(obj, "kind", d->kind);
    cJSON_AddStringToObject(obj, "apiVersion", gv);
    if (first != NULL && obj->child != NULL) {
        /* re-attach the rest after the two new members */
        cJSON *last = obj->child->next;
        last->next = first;
        first->prev = last;
        for (cJSON *c = first; c != NULL; c = c->next)
            obj->child->prev = c;   /* cJSON keeps the tail in child->prev */
    }
}

static void reply_invalid_name(struct ebb_http_req *r, const struct rdef *d)
{
    char msg[300];
    cJSON *det = cJSON_CreateObject(), *causes, *c;

    snprintf(msg, sizeof(msg), "%s.%s \"\" is invalid: metadata.name: Required value: name or "
                               "generateName is required",
             d->kind, d->group);
    if (d->group[0] != '\0')
        cJSON_AddStringToObject(det, "group", d->group);
    cJSON_AddStringToObject(det, "kind", d->kind);
    causes = cJSON_AddArrayToObject(det, "causes");
    c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "reason", "FieldValueRequired");
    cJSON_AddStringToObject(c, "message", "Required value: name or generateName is required");
    cJSON_AddStringToObject(c, "field", "metadata.name");
    cJSON_AddItemToArray(causes, c);
    ebb__reply_status(r, 422, "Invalid", msg, det);
}

void ebb__serve_create(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &ebb__rdefs[rt->res];
    cJSON *obj = body_object(r, d), *meta;
    const char *name, *gen;
    char uid[40], ts[32], buf[300], q[128];
    struct ver *v;

    if (obj == NULL)
        return;
    if (!check_namespace(s, r, rt, obj)) {
        cJSON_Delete(obj);
        return;
    }
    meta = ebb__json_meta(obj);
    name = ebb__json_str(meta, "name");
    gen = ebb__json_str(meta, "generateName");
    if ((name == NULL || name[0] == '\0') && gen != NULL && gen[0] != '\0') {
        static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
        size_t n = (size_t)snprintf(buf, sizeof(buf), "%.240s", gen);
        for (int i = 0; i < 5 && n + 1 < sizeof(buf); i++)
            buf[n++] = alnum[ebb__serve_random(s) % (sizeof(alnum) - 1)];
        buf[n] = '\0';
        ebb__json_set_str(meta, "name", buf);
        name = ebb__json_str(meta, "name");
    }
    if (name == NULL || name[0] == '\0') {
        cJSON_Delete(obj);
        reply_invalid_name(r, d);
        return;
    }
    if (ebb__store_lookup(s, rt->res, rt->ns, name) != NULL) {
        char msg[400];
        ebb__rdef_qualified(d, q, sizeof(q));
        snprintf(msg, sizeof(msg), "%s \"%s\" already exists", q, name);
        ebb__reply_status(r, 409, "AlreadyExists", msg, ebb__reply_details(d, name));
        cJSON_Delete(obj);
        return;
    }
    fill_type(d, obj);
    ebb__serve_uid(s, uid, sizeof(uid));
    ebb__json_set_str(meta, "uid", uid);
    ebb__serve_now(ts, sizeof(ts));
    ebb__json_set_str(meta, "creationTimestamp", ts);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "deletionTimestamp");
    if (dry_run(r)) {
        ebb__reply_json(r, 201, obj);
        return;
    }
    if (ebb__store_put(s, rt->res, obj, &v) != 0) {
        ebb__reply_internal(r, "out of memory");
        return;
    }
    ebb__reply_text(r, 201, ebb__ver_text(v));
}

/* Replace an existing object with `obj` (owned): the checks of an update. */
static void replace(struct server *s, struct ebb_http_req *r, const struct route *rt, cJSON *obj,
                    int ok_code)
{
    const struct rdef *d = &ebb__rdefs[rt->res];
    struct ver *cur = ebb__store_lookup(s, rt->res, rt->ns, rt->name), *v;
    cJSON *meta, *cmeta, *cobj;
    const char *name, *rv;
    char msg[400], currv[24];
    bool same;

    if (!check_namespace(s, r, rt, obj)) {
        cJSON_Delete(obj);
        return;
    }
    meta = ebb__json_meta(obj);
    name = ebb__json_str(meta, "name");
    if (name != NULL && name[0] != '\0' && strcmp(name, rt->name) != 0) {
        snprintf(msg, sizeof(msg),
                 "the name of the object (%.100s) does not match the name on the URL (%.100s)",
                 name, rt->name);
        cJSON_Delete(obj);
        ebb__reply_bad_request(r, msg);
        return;
    }
    if (cur == NULL) {
        cJSON_Delete(obj);
        ebb__reply_not_found(r, d, rt->name);
        return;
    }
    snprintf(currv, sizeof(currv), "%" PRIu64, cur->rv);
    rv = ebb__json_str(meta, "resourceVersion");
    if (rv != NULL && rv[0] != '\0' && strcmp(rv, currv) != 0) {
        cJSON_Delete(obj);
        ebb__reply_conflict(r, d, rt->name,
                            "the object has been modified; please apply your changes to the latest "
                            "version and try again");
        return;
    }
    /* what the server owns comes from the stored object */
    if ((cobj = ebb__ver_json(cur)) == NULL) {
        cJSON_Delete(obj);
        ebb__reply_internal(r, "out of memory");
        return;
    }
    cmeta = cJSON_GetObjectItemCaseSensitive(cobj, "metadata");
    ebb__json_set_str(meta, "name", rt->name);
    ebb__json_set(meta, "uid", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cmeta, "uid"), 1));
    ebb__json_set(meta, "creationTimestamp",
                  cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cmeta, "creationTimestamp"), 1));
    ebb__json_set_str(meta, "resourceVersion", currv);
    fill_type(d, obj);
    same = cJSON_Compare(obj, cobj, true);
    cJSON_Delete(cobj);
    if (same) {
        /* a no-op update writes nothing and keeps the resourceVersion */
        cJSON_Delete(obj);
        ebb__reply_text(r, ok_code, ebb__ver_text(cur));
        return;
    }
    if (dry_run(r)) {
        ebb__reply_json(r, ok_code, obj);
        return;
    }
    if (ebb__store_put(s, rt->res, obj, &v) != 0) {
        ebb__reply_internal(r, "out of memory");
        return;
    }
    ebb__reply_text(r, ok_code, ebb__ver_text(v));
}

void ebb__serve_update(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    cJSON *obj = body_object(r, &ebb__rdefs[rt->res]);

    if (obj != NULL)
        replace(s, r, rt, obj, 200);
}

/* RFC 7386 JSON merge patch: target (owned) <- patch. */
static cJSON *merge_patch(cJSON *target, const cJSON *patch)
{
    const cJSON *p;

    if (!cJSON_IsObject(patch)) {
        cJSON_Delete(target);
        return cJSON_Duplicate(patch, true);
    }
    if (!cJSON_IsObject(target)) {
        cJSON_Delete(target);
        target = cJSON_CreateObject();
    }
    cJSON_ArrayForEach(p, patch) {
        cJSON *cur = cJSON_GetObjectItemCaseSensitive(target, p->string);
        if (cJSON_IsNull(p)) {
            cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
            continue;
        }
        ebb__json_set(target, p->string, merge_patch(cur ? cJSON_Duplicate(cur, true) : NULL, p));
    }
    return target;
}

void ebb__serve_patch(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const char *ct = ebb_http_req_header(r, "Content-Type");
    struct ver *cur = ebb__store_lookup(s, rt->res, rt->ns, rt->name);
    cJSON *patch, *obj;

    if (ct == NULL || (strncmp(ct, "application/merge-patch+json", 28) != 0 &&
                       strncmp(ct, "application/strategic-merge-patch+json", 38) != 0)) {
        char msg[200];
        snprintf(msg, sizeof(msg), "the body of the request was in an unknown format - accepted "
                                   "media types include: application/merge-patch+json, "
                                   "application/strategic-merge-patch+json");
        ebb__reply_status(r, 415, "UnsupportedMediaType", msg, NULL);
        return;
    }
    if (cur == NULL) {
        ebb__reply_not_found(r, &ebb__rdefs[rt->res], rt->name);
        return;
    }
    if ((patch = body_object(r, NULL)) == NULL)
        return;
    obj = merge_patch(ebb__ver_json(cur), patch);
    cJSON_Delete(patch);
    replace(s, r, rt, obj, 200);
}

/* DeleteOptions.preconditions against the stored object. false: answered (409). */
static bool check_preconditions(struct ebb_http_req *r, const struct rdef *d, const char *name,
                                const cJSON *opts, const struct ver *cur)
{
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(opts, "preconditions");
    const char *uid = ebb__json_str(pre, "uid"), *rv = ebb__json_str(pre, "resourceVersion");
    const char *cuid = cur->uid;
    char why[300], crv[24];

    snprintf(crv, sizeof(crv), "%" PRIu64, cur->rv);
    if (uid != NULL && strcmp(uid, cuid) != 0) {
        snprintf(why, sizeof(why),
                 "Precondition failed: UID in precondition: %.80s, UID in object meta: %.80s", uid,
                 cuid);
        ebb__reply_conflict(r, d, name, why);
        return false;
    }
    if (rv != NULL && strcmp(rv, crv) != 0) {
        snprintf(why, sizeof(why),
                 "Precondition failed: ResourceVersion in precondition: %.40s, ResourceVersion "
                 "in object meta: %.40s",
                 rv, crv);
        ebb__reply_conflict(r, d, name, why);
        return false;
    }
    return true;
}

static void forget_pod(struct server *s, const char *ns, const char *name)
{
    ebb_str ins = ebb_str_find(ns, strlen(ns)), iname = ebb_str_find(name, strlen(name));

    if (ins != NULL && iname != NULL)
        ebb_cache_delete(s->cache, EBB_KIND_POD, ins, iname);
}

void ebb__serve_delete(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &ebb__rdefs[rt->res];
    struct ver *cur = ebb__store_lookup(s, rt->res, rt->ns, rt->name), *gone;
    size_t len;
    cJSON *opts = NULL, *det;
    char key[640];
    const char *uid;

    if (cur == NULL) {
        ebb__reply_not_found(r, d, rt->name);
        return;
    }
    ebb_http_req_body(r, &len);
    if (len > 0 && (opts = body_object(r, NULL)) == NULL)
        return;
    if (!check_preconditions(r, d, rt->name, opts, cur)) {
        cJSON_Delete(opts);
        return;
    }
    cJSON_Delete(opts);
    if (dry_run(r)) {
        ebb__reply_text(r, 200, ebb__ver_text(cur));
        return;
    }
    snprintf(key, sizeof(key), "%s", cur->key);
    if (rt->res == R_PODS)
        forget_pod(s, cur->ns, cur->name);
    det = ebb__reply_details(d, rt->name);
    uid = cur->uid;
    if (uid[0] != '\0')
        cJSON_AddStringToObject(det, "uid", uid);
    if (ebb__store_delete(s, rt->res, key, &gone) != 0) {
        cJSON_Delete(det);
        ebb__reply_internal(r, "out of memory");
        return;
    }
    if (rt->res == R_PODS) {
        /* pods answer with the object (ReturnDeletedObject) */
        cJSON_Delete(det);
        ebb__reply_text(r, 200, ebb__ver_text(gone));
    } else {
        ebb__reply_status(r, 200, NULL, NULL, det);
    }
    ebb__ver_release(gone);
}

/* ---- eviction ------------------------------------------------------------------------------ */

/* The PDB's status after an eviction took one disruption from it. */
static void pdb_after_eviction(struct server *s, const struct ebb_pdb *pdb, const char *pod)
{
    struct ebb_pdb_state *st = ebb__map_get(&s->pdb_state, pdb->ns, pdb->name);
    struct ver *cur = ebb__store_lookup(s, R_PDBS, pdb->ns, pdb->name);
    cJSON *obj, *status, *dp, *conds, *c;
    char ts[32];

    if (st == NULL || cur == NULL || (obj = ebb__ver_json(cur)) == NULL)
        return;
    ebb__serve_now(ts, sizeof(ts));
    status = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(status)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        status = cJSON_AddObjectToObject(obj, "status");
    }
    ebb__json_set(status, "disruptionsAllowed", cJSON_CreateNumber(st->allowed));
    ebb__json_set(status, "currentHealthy", cJSON_CreateNumber(st->healthy));
    dp = cJSON_GetObjectItemCaseSensitive(status, "disruptedPods");
    if (!cJSON_IsObject(dp)) {
        cJSON_DeleteItemFromObjectCaseSensitive(status, "disruptedPods");
        dp = cJSON_AddObjectToObject(status, "disruptedPods");
    }
    ebb__json_set_str(dp, pod, ts);
    if (st->allowed <= 0) {
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

void ebb__serve_evict(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &ebb__rdefs[R_PODS];
    cJSON *ev = body_object(r, NULL), *opts;
    struct ver *cur;
    struct ebb_pod *pod;
    const struct ebb_pdb *which = NULL;
    const char *name, *kind;
    char msg[512], key[640];
    bool dry;
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
    dry = dry_run(r);
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
    if (!check_preconditions(r, d, rt->name, opts, cur)) {
        cJSON_Delete(ev);
        return;
    }
    cJSON_Delete(ev);
    pod = ebb_cache_pod(s->cache, ebb_str_find(rt->ns, strlen(rt->ns)),
                        ebb_str_find(rt->name, strlen(rt->name)));
    if (pod == NULL) {
        ebb__reply_internal(r, "the pod is served but not in the cache");
        return;
    }
    verdict = ebb__pdb_decide(s->cache, pod, &s->pdb_state, &which, msg, sizeof(msg));
    switch (verdict) {
    case EBB_PDB_REFUSE:
        reply_pdb_refusal(r, msg);
        return;
    case EBB_PDB_ERROR:
        if (strstr(msg, "more than one PodDisruptionBudget") != NULL) {
            /* returned as a Status object by the create handler: HTTP 201,
             * the failure in the body, as the API server does */
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
        return;
    default:
        break;
    }
    if (!dry) {
        if (verdict == EBB_PDB_ALLOW_DECREMENT && which != NULL) {
            ebb__pdb_commit(&s->pdb_state, which, pod);
            pdb_after_eviction(s, which, rt->name);
        }
        snprintf(key, sizeof(key), "%s", cur->key);
        forget_pod(s, rt->ns, rt->name);
        if (ebb__store_delete(s, R_PODS, key, NULL) != 0) {
            ebb__reply_internal(r, "out of memory");
            return;
        }
        ebb_log(EBB_LOG_INFO, "evicted pod %s/%s", rt->ns, rt->name);
    }
    ebb__reply_status(r, 201, NULL, NULL, NULL);
}

/* ---- what evict plugins send ---------------------------------------------------------------- */

/* PATCH pods/NAME (merge or strategic merge): what SoftEvictor-like plugins
 * send. A metadata.uid in the patch is the precondition it is in the API
 * server: a different uid is an immutable field changed, 422. The cache
 * the PDB rules read keeps the pod as loaded (labels a budget selects are
 * not what evictors patch). */
void ebb__serve_patch_pod(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    struct ver *cur = ebb__store_lookup(s, R_PODS, rt->ns, rt->name);
    size_t len;
    const char *body = ebb_http_req_body(r, &len);
    cJSON *patch = cur != NULL && len > 0 ? cJSON_ParseWithLength(body, len) : NULL;
    const char *uid = ebb__json_meta_str(patch, "uid");

    if (uid != NULL && strcmp(uid, cur->uid) != 0) {
        char msg[400];
        cJSON *det = cJSON_CreateObject(), *causes, *c;
        snprintf(msg, sizeof(msg), "Pod \"%.100s\" is invalid: metadata.uid: Invalid value: "
                                   "\"%.60s\": field is immutable", rt->name, uid);
        cJSON_AddStringToObject(det, "name", rt->name);
        cJSON_AddStringToObject(det, "kind", "Pod");
        causes = cJSON_AddArrayToObject(det, "causes");
        c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "reason", "FieldValueInvalid");
        cJSON_AddStringToObject(c, "message", strstr(msg, "Invalid value: "));
        cJSON_AddStringToObject(c, "field", "metadata.uid");
        cJSON_AddItemToArray(causes, c);
        cJSON_Delete(patch);
        ebb__reply_status(r, 422, "Invalid", msg, det);
        return;
    }
    cJSON_Delete(patch);
    ebb__serve_patch(s, r, rt);
}
