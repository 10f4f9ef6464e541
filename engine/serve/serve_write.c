/* serve_write.c: writes of `ebb serve`, as the API server's generic
 * registry makes them. Create (server-owned fields, 409 AlreadyExists),
 * update with the resourceVersion check, JSON merge and strategic merge
 * patches (as merge patches), the status subresource, delete with
 * preconditions. Pods are deleted gracefully: deletionTimestamp and
 * deletionGracePeriodSeconds set (MODIFIED), then gone (MODIFIED with a
 * grace of 0, DELETED) once the grace period is over, as a kubelet
 * finishes them; immediately when not bound to a node or already done. An
 * object with finalizers stays, marked deleted, until an update empties
 * them. A namespace is marked Terminating, emptied (its pods without a
 * grace period) and gone at once, as its controller would do it. What admission and each kind's strategy add is in serve_admit.c.
 *
 * Called on the loop thread by the dispatch (serve_api.c), the eviction
 * handler (serve_evict.c) and the termination timer. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_int.h"

/* ---- requests ---------------------------------------------------------------------------- */

bool ebb__dry_run(struct ebb_http_req *r)
{
    const char *d = ebb_http_req_query(r, "dryRun");
    return d != NULL && strcmp(d, "All") == 0;
}

/* Whether a JSON text holds the escape \u0000 (an odd run of backslashes
 * before the 'u'): a NUL inside a string. */
static bool has_nul_escape(const char *body, size_t len)
{
    for (size_t i = 0; i + 5 < len; i++) {
        size_t k = 0;
        if (body[i] != '\\' || body[i + 1] != 'u' || strncmp(body + i + 2, "0000", 4) != 0)
            continue;
        while (k < i && body[i - 1 - k] == '\\')
            k++;
        if (k % 2 == 0)
            return true;
    }
    return false;
}

/* The request body as a JSON object; NULL when answered (400). */
cJSON *ebb__body_object(struct ebb_http_req *r, const struct rdef *d)
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
    if (has_nul_escape(body, len) || memchr(body, '\0', len) != NULL) {
        /* cJSON ends a string at its NUL: "a\u0000b" would be stored as "a"
         * (a label key the API server refuses stored as one it accepts) */
        snprintf(msg, sizeof(msg), "the object provided is unrecognized (must be of type %s): "
                                   "a string holds a NUL character (\\u0000), which ebb serve "
                                   "cannot store",
                 d != NULL ? d->kind : "DeleteOptions");
        ebb__reply_bad_request(r, msg);
        return NULL;
    }
    if ((j = cJSON_ParseWithLength(body, len)) == NULL || !cJSON_IsObject(j)) {
        snprintf(msg, sizeof(msg), "the object provided is unrecognized (must be of type %s): "
                                   "couldn't get version/kind; json parse error (%.40s)",
                 d != NULL ? d->kind : "DeleteOptions", body);
        cJSON_Delete(j);
        ebb__reply_bad_request(r, msg);
        return NULL;
    }
    if (d != NULL) {
        const char *kind = ebb__json_str(j, "kind"), *av = ebb__json_str(j, "apiVersion");
        if (kind != NULL && kind[0] != '\0' && strcmp(kind, d->kind) != 0) {
            const char *ver = av && strchr(av, '/') ? strchr(av, '/') + 1 : av ? av : d->version;
            snprintf(msg, sizeof(msg), "%.60s in version \"%.20s\" cannot be handled as a %s: "
                                       "converting (%.20s.%.60s) to (%.*s.%s): unknown conversion",
                     kind, ver, d->kind, ver, kind,
                     (int)strcspn(d->group[0] ? d->group : "core", "."),
                     d->group[0] ? d->group : "core", d->kind);
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
    /* a snapshot without Namespace objects has every namespace its objects
     * name; one that no cluster can have is not found either way */
    if ((s->stores[R_NAMESPACES].n > 0 && ebb__store_get(s, R_NAMESPACES, rt->ns) == NULL) ||
        !ebb__dns_label(rt->ns)) {
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

/* ---- create -------------------------------------------------------------------------------- */

void ebb__serve_create(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &ebb__rdefs[rt->res];
    cJSON *obj = ebb__body_object(r, d), *meta;
    const char *name, *gen;
    char uid[40], ts[32], buf[300], q[128];
    struct ver *v;
    int rc;

    if (obj == NULL)
        return;
    if (!ebb__meta_decode(r, d, obj, false) || !check_namespace(s, r, rt, obj)) {
        cJSON_Delete(obj);
        return;
    }
    meta = ebb__json_meta(obj);
    name = ebb__json_str(meta, "name");
    gen = ebb__json_str(meta, "generateName");
    if ((name == NULL || name[0] == '\0') && gen != NULL && gen[0] != '\0') {
        /* names.SimpleNameGenerator: the prefix cut to 58, then 5 random */
        static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
        size_t n = (size_t)snprintf(buf, sizeof(buf), "%.58s", gen);
        for (int i = 0; i < 5 && n + 1 < sizeof(buf); i++)
            buf[n++] = alnum[ebb__serve_random(s) % (sizeof(alnum) - 1)];
        buf[n] = '\0';
        ebb__json_set_str(meta, "name", buf);
    }
    fill_type(d, obj);
    if (!ebb__admit_create(s, r, rt->res, rt->ns, obj)) {
        cJSON_Delete(obj);
        return;
    }
    meta = ebb__json_meta(obj);
    name = ebb__json_str(meta, "name");
    if (ebb__store_lookup(s, rt->res, rt->ns, name) != NULL) {
        char msg[400];
        ebb__rdef_qualified(d, q, sizeof(q));
        snprintf(msg, sizeof(msg), "%s \"%s\" already exists", q, name);
        ebb__reply_status(r, 409, "AlreadyExists", msg, ebb__reply_details(d, name));
        cJSON_Delete(obj);
        return;
    }
    ebb__serve_uid(s, uid, sizeof(uid));
    ebb__json_set_str(meta, "uid", uid);
    ebb__serve_now(ts, sizeof(ts));
    ebb__json_set_str(meta, "creationTimestamp", ts);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "deletionTimestamp");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "deletionGracePeriodSeconds");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "selfLink");
    if (ebb__dry_run(r)) {
        ebb__reply_json(r, 201, obj);
        return;
    }
    if ((rc = ebb__store_put(s, rt->res, obj, &v)) != 0) {
        ebb__reply_store_failed(r, rc);
        return;
    }
    ebb__reply_text(r, 201, ebb__ver_text(v));
}

/* ---- update, patch, status ------------------------------------------------------------------- */

static bool has_finalizers(const cJSON *obj)
{
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "finalizers")) > 0;
}

static int remove_object(struct server *s, int res, const char *key, struct ver **out);

/* Replace an existing object with `obj` (owned): the checks of an update;
 * `status`: through the status subresource. */
static void replace(struct server *s, struct ebb_http_req *r, const struct route *rt, cJSON *obj,
                    bool status)
{
    const struct rdef *d = &ebb__rdefs[rt->res];
    struct ver *cur = ebb__store_lookup(s, rt->res, rt->ns, rt->name), *v;
    cJSON *meta, *cmeta, *cobj;
    const char *name, *rv;
    char msg[400], currv[24];
    bool same;
    int rc;

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
    if ((cobj = ebb__ver_json(cur)) == NULL) {
        cJSON_Delete(obj);
        ebb__reply_internal(r, "out of memory");
        return;
    }
    fill_type(d, obj);
    if (!ebb__admit_update(r, rt->res, &obj, cobj, status)) {
        cJSON_Delete(obj);
        cJSON_Delete(cobj);
        return;
    }
    meta = ebb__json_meta(obj);
    snprintf(currv, sizeof(currv), "%" PRIu64, cur->rv);
    rv = ebb__json_str(meta, "resourceVersion");
    if (rv != NULL && rv[0] != '\0' && strcmp(rv, currv) != 0) {
        cJSON_Delete(obj);
        cJSON_Delete(cobj);
        ebb__reply_conflict(r, d, rt->name,
                            "the object has been modified; please apply your changes to the latest "
                            "version and try again");
        return;
    }
    /* what the server owns comes from the stored object */
    cmeta = cJSON_GetObjectItemCaseSensitive(cobj, "metadata");
    ebb__json_set_str(meta, "name", rt->name);
    {
        static const char *const owned[] = { "uid", "creationTimestamp", "deletionTimestamp",
                                             "deletionGracePeriodSeconds" };
        for (size_t i = 0; i < EBB_ARRAY_LEN(owned); i++) {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(cmeta, owned[i]);
            if (o != NULL)
                ebb__json_set(meta, owned[i], cJSON_Duplicate(o, true));
            else
                cJSON_DeleteItemFromObjectCaseSensitive(meta, owned[i]);
        }
    }
    ebb__json_set_str(meta, "resourceVersion", currv);
    same = cJSON_Compare(obj, cobj, true);
    cJSON_Delete(cobj);
    if (same) {
        /* a no-op update writes nothing and keeps the resourceVersion */
        cJSON_Delete(obj);
        ebb__reply_text(r, 200, ebb__ver_text(cur));
        return;
    }
    if (ebb__dry_run(r)) {
        ebb__reply_json(r, 200, obj);
        return;
    }
    if (ebb__json_str(meta, "deletionTimestamp") != NULL && !has_finalizers(obj)) {
        /* the last finalizer of an object being deleted is gone: so is the object */
        struct ver *gone;
        if ((rc = ebb__store_put(s, rt->res, obj, &v)) != 0 ||
            (rc = remove_object(s, rt->res, v->key, &gone)) != 0) {
            ebb__reply_store_failed(r, rc);
            return;
        }
        ebb__reply_text(r, 200, ebb__ver_text(gone));
        ebb__ver_release(gone);
        return;
    }
    if ((rc = ebb__store_put(s, rt->res, obj, &v)) != 0) {
        ebb__reply_store_failed(r, rc);
        return;
    }
    ebb__reply_text(r, 200, ebb__ver_text(v));
}

void ebb__serve_update(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    cJSON *obj = ebb__body_object(r, &ebb__rdefs[rt->res]);

    if (obj == NULL)
        return;
    if (!ebb__meta_decode(r, &ebb__rdefs[rt->res], obj, false)) {
        cJSON_Delete(obj);
        return;
    }
    replace(s, r, rt, obj, rt->sub != NULL);
}

void ebb__serve_patch(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const char *ct = ebb_http_req_header(r, "Content-Type");
    struct ver *cur = ebb__store_lookup(s, rt->res, rt->ns, rt->name);
    cJSON *patch, *obj;

    if (ct == NULL || (strncmp(ct, "application/merge-patch+json", 28) != 0 &&
                       strncmp(ct, "application/strategic-merge-patch+json", 38) != 0)) {
        ebb__reply_status(r, 415, "UnsupportedMediaType", "415: Unsupported Media Type",
                          cJSON_CreateObject());
        return;
    }
    if (cur == NULL) {
        ebb__reply_not_found(r, &ebb__rdefs[rt->res], rt->name);
        return;
    }
    if ((patch = ebb__body_object(r, NULL)) == NULL)
        return;
    obj = merge_patch(ebb__ver_json(cur), patch);
    cJSON_Delete(patch);
    if (obj == NULL) {
        ebb__reply_internal(r, "out of memory");
        return;
    }
    if (!ebb__meta_decode(r, &ebb__rdefs[rt->res], obj, true)) {
        cJSON_Delete(obj);
        return;
    }
    replace(s, r, rt, obj, rt->sub != NULL);
}

/* ---- delete -------------------------------------------------------------------------------- */

/* DeleteOptions.preconditions against the stored object. false: answered (409). */
bool ebb__check_preconditions(struct ebb_http_req *r, const struct rdef *d, const char *name,
                              const cJSON *opts, const struct ver *cur)
{
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(opts, "preconditions");
    const char *uid = ebb__json_str(pre, "uid"), *rv = ebb__json_str(pre, "resourceVersion");
    char msg[600], crv[24], what[128];
    cJSON *det;

    snprintf(crv, sizeof(crv), "%" PRIu64, cur->rv);
    snprintf(what, sizeof(what), "%s%s%s", d->kind, d->group[0] ? "." : "", d->group);
    if (uid != NULL && strcmp(uid, cur->uid) != 0)
        snprintf(msg, sizeof(msg),
                 "Operation cannot be fulfilled on %s \"%.100s\": the UID in the precondition "
                 "(%.80s) does not match the UID in record (%.80s). The object might have been "
                 "deleted and then recreated",
                 what, name, uid, cur->uid);
    else if (rv != NULL && strcmp(rv, crv) != 0)
        snprintf(msg, sizeof(msg),
                 "Operation cannot be fulfilled on %s \"%.100s\": the ResourceVersion in the "
                 "precondition (%.40s) does not match the ResourceVersion in record (%s). The "
                 "object might have been modified",
                 what, name, rv, crv);
    else
        return true;
    det = cJSON_CreateObject();
    cJSON_AddStringToObject(det, "name", name);
    if (d->group[0] != '\0')
        cJSON_AddStringToObject(det, "group", d->group);
    cJSON_AddStringToObject(det, "kind", d->kind);
    ebb__reply_status(r, 409, "Conflict", msg, det);
    return false;
}

/* The object gone from the store: DELETED. *out: its last version. */
static int remove_object(struct server *s, int res, const char *key, struct ver **out)
{
    char copy[640];

    snprintf(copy, sizeof(copy), "%s", key);   /* `key` may be the version's, released here */
    return ebb__store_delete(s, res, copy, out);
}

/* `cur` with deletionTimestamp `ts` and deletionGracePeriodSeconds `grace`:
 * MODIFIED. *out: the new version, borrowed. */
static int mark_deleted(struct server *s, int res, const struct ver *cur, const char *ts,
                        long long grace, struct ver **out)
{
    cJSON *obj = ebb__ver_json(cur), *meta;

    if (obj == NULL)
        return EBB_ENOMEM;
    meta = ebb__json_meta(obj);
    ebb__json_set_str(meta, "deletionTimestamp", ts);
    ebb__json_set(meta, "deletionGracePeriodSeconds", cJSON_CreateNumber((double)grace));
    return ebb__store_put(s, res, obj, out);
}

/* podStrategy.CheckGracefulDelete: the grace period a delete gets. */
static long long pod_grace(const cJSON *pod, long long asked)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    const cJSON *tg = cJSON_GetObjectItemCaseSensitive(spec, "terminationGracePeriodSeconds");
    const char *node = ebb__json_str(spec, "nodeName");
    const char *phase = ebb__json_str(cJSON_GetObjectItemCaseSensitive(pod, "status"), "phase");
    /* absent: the API's default, as the API server would have stored it */
    long long g = asked >= 0 ? asked : cJSON_IsNumber(tg) ? (long long)tg->valuedouble : 30;

    if (node == NULL || node[0] == '\0')
        g = 0;   /* never scheduled: nothing to stop */
    if (phase != NULL && (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0))
        g = 0;   /* done already */
    return g < 0 ? 1 : g;
}

/* The terminating pods a kubelet would finish, soonest first. */
struct stopping {
    uint64_t due;                /* uv_now() */
    char *key;
    char uid[64];
};

static void stops_arm(struct server *s)
{
    uint64_t now = uv_now(s->loop);

    if (s->nstops == 0 || s->stopping) {
        uv_timer_stop(&s->stop_timer);
        return;
    }
    uv_timer_start(&s->stop_timer, ebb__on_stop_timer,
                   s->stops[0].due > now ? s->stops[0].due - now : 0, 0);
}

static void stops_add(struct server *s, const struct ver *pod, uint64_t due)
{
    size_t i = 0;

    for (size_t k = 0; k < s->nstops; k++) {
        if (strcmp(s->stops[k].key, pod->key) == 0) {
            /* a shorter grace period: the same pod sooner */
            free(s->stops[k].key);
            memmove(s->stops + k, s->stops + k + 1, (s->nstops - k - 1) * sizeof(*s->stops));
            s->nstops--;
            break;
        }
    }
    if (s->nstops == s->stops_cap) {
        size_t cap = s->stops_cap ? s->stops_cap * 2 : 16;
        struct stopping *p = realloc(s->stops, cap * sizeof(*p));
        if (p == NULL)
            return;
        s->stops = p;
        s->stops_cap = cap;
    }
    while (i < s->nstops && s->stops[i].due <= due)
        i++;
    memmove(s->stops + i + 1, s->stops + i, (s->nstops - i) * sizeof(*s->stops));
    if ((s->stops[i].key = strdup(pod->key)) == NULL) {
        memmove(s->stops + i, s->stops + i + 1, (s->nstops - i) * sizeof(*s->stops));
        return;
    }
    s->stops[i].due = due;
    snprintf(s->stops[i].uid, sizeof(s->stops[i].uid), "%s", pod->uid);
    s->nstops++;
    stops_arm(s);
}

void ebb__stops_free(struct server *s)
{
    for (size_t i = 0; i < s->nstops; i++)
        free(s->stops[i].key);
    free(s->stops);
    s->stops = NULL;
    s->nstops = s->stops_cap = 0;
}

/* Finish a pod as its kubelet does once the containers stopped: a delete
 * with a grace period of 0 (MODIFIED), then gone unless finalizers hold it. */
static void finish_pod(struct server *s, const struct ver *cur)
{
    cJSON *obj = ebb__ver_json(cur);
    const char *ts;
    char stamp[40];
    struct ver *v;
    bool held;

    if (obj == NULL)
        return;
    held = has_finalizers(obj);
    ts = ebb__json_meta_str(obj, "deletionTimestamp");
    snprintf(stamp, sizeof(stamp), "%s", ts ? ts : "");
    cJSON_Delete(obj);
    if (mark_deleted(s, R_PODS, cur, stamp, 0, &v) != 0 || held)
        return;
    remove_object(s, R_PODS, v->key, NULL);
}

void ebb__on_stop_timer(uv_timer_t *t)
{
    struct server *s = t->data;
    uint64_t now = uv_now(s->loop);

    while (s->nstops > 0 && s->stops[0].due <= now) {
        struct stopping st = s->stops[0];
        struct ver *cur;

        memmove(s->stops, s->stops + 1, (s->nstops - 1) * sizeof(*s->stops));
        s->nstops--;
        cur = ebb__store_get(s, R_PODS, st.key);
        if (cur != NULL && strcmp(cur->uid, st.uid) == 0)
            finish_pod(s, cur);
        free(st.key);
    }
    stops_arm(s);
}

/* What the namespace controller does, at once: everything in namespace
 * `ns` deleted (pods without a grace period). */
static int empty_namespace(struct server *s, const char *ns)
{
    char lo[330], hi[330];
    int rc = 0;

    snprintf(lo, sizeof(lo), "%s/", ns);
    snprintf(hi, sizeof(hi), "%s0", ns);   /* right after every "ns/..." */
    for (int res = 0; res < NRES && rc == 0; res++) {
        struct store *st = &s->stores[res];
        char **keys;
        size_t a, b, n;
        bool found;

        if (!ebb__rdefs[res].namespaced)
            continue;
        a = ebb__ver_find(st->v, st->n, lo, &found);
        b = ebb__ver_find(st->v, st->n, hi, &found);
        if (b <= a)
            continue;
        if ((keys = calloc(b - a, sizeof(*keys))) == NULL)
            return EBB_ENOMEM;
        for (n = 0; n < b - a && (keys[n] = strdup(st->v[a + n]->key)) != NULL; n++)
            ;
        for (size_t i = 0; i < n; i++) {
            struct ver *v = ebb__store_get(s, res, keys[i]), *gone = NULL;
            if (v != NULL && rc == 0 && (rc = ebb__delete_object(s, res, v, 0, false, &gone)) == 0)
                ebb__ver_release(gone);
            free(keys[i]);
        }
        free(keys);
    }
    return rc;
}

int ebb__delete_object(struct server *s, int res, struct ver *cur, long long grace, bool dry,
                       struct ver **out)
{
    cJSON *obj = ebb__ver_json(cur), *meta;
    const cJSON *dg;
    const char *dts;
    char ts[40];
    struct ver *v;
    long long period = 0;
    bool held, graceful;
    int rc;

    if (obj == NULL)
        return EBB_ENOMEM;
    meta = ebb__json_meta(obj);
    held = has_finalizers(obj);
    dts = ebb__json_str(meta, "deletionTimestamp");
    dg = cJSON_GetObjectItemCaseSensitive(meta, "deletionGracePeriodSeconds");
    graceful = res == R_PODS;
    if (graceful)
        period = pod_grace(obj, grace);
    if (dts != NULL) {
        /* being deleted already: only a shorter grace period changes anything */
        long long was = cJSON_IsNumber(dg) ? (long long)dg->valuedouble : 0;
        int64_t t = 0;
        bool bad = ebb_time_parse(dts, &t) != 0;
        cJSON_Delete(obj);
        if (was == 0 && !held && !dry)   /* left marked without a grace period: now gone */
            return remove_object(s, res, cur->key, out);
        if (!graceful || was == 0 || period >= was || bad) {
            *out = ebb__ver_ref(cur);
            return 0;
        }
        ebb_time_format(t - was + period, ts, sizeof(ts));
        if (dry) {
            *out = ebb__ver_ref(cur);
            return 0;
        }
        if ((rc = mark_deleted(s, res, cur, ts, period, &v)) != 0)
            return rc;
        if (period == 0 && !held)
            return remove_object(s, res, v->key, out);
        stops_add(s, v, uv_now(s->loop) + (uint64_t)period * 1000);
        *out = ebb__ver_ref(v);
        return 0;
    }
    cJSON_Delete(obj);
    if (dry) {
        *out = ebb__ver_ref(cur);
        return 0;
    }
    if (res == R_NAMESPACES) {
        /* Terminating, emptied, gone: the answer is the namespace terminating */
        char name[320];
        cJSON *ns = ebb__ver_json(cur);
        snprintf(name, sizeof(name), "%s", cur->name);
        if (ns == NULL)
            return EBB_ENOMEM;
        ebb__serve_now(ts, sizeof(ts));
        ebb__json_set_str(ebb__json_meta(ns), "deletionTimestamp", ts);
        ebb__json_set_str(ebb__json_child(ns, "status"), "phase", "Terminating");
        if ((rc = ebb__store_put(s, res, ns, &v)) != 0)
            return rc;
        *out = ebb__ver_ref(v);
        if ((rc = empty_namespace(s, name)) != 0)
            return rc;
        return remove_object(s, res, name, NULL);
    }
    if (!graceful && !held)
        return remove_object(s, res, cur->key, out);
    {
        int64_t now = (int64_t)time(NULL);
        ebb_time_format(now + period, ts, sizeof(ts));
    }
    if ((rc = mark_deleted(s, res, cur, ts, period, &v)) != 0)
        return rc;
    if (period == 0 && !held)
        return remove_object(s, res, v->key, out);
    if (graceful && period > 0) {
        double cap = s->o.termination_seconds;
        uint64_t ms = (uint64_t)period * 1000;
        if (cap >= 0 && cap * 1000.0 < (double)ms)
            ms = (uint64_t)(cap * 1000.0);
        stops_add(s, v, uv_now(s->loop) + ms);
    }
    *out = ebb__ver_ref(v);
    return 0;
}

/* DeleteOptions.gracePeriodSeconds, from the body or the query; -1: none. */
long long ebb__grace_of(struct ebb_http_req *r, const cJSON *opts)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(opts, "gracePeriodSeconds");
    const char *q = ebb_http_req_query(r, "gracePeriodSeconds");

    if (cJSON_IsNumber(g))
        return (long long)g->valuedouble;
    if (q != NULL && q[0] != '\0')
        return strtoll(q, NULL, 10);
    return -1;
}

void ebb__serve_delete(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &ebb__rdefs[rt->res];
    struct ver *cur = ebb__store_lookup(s, rt->res, rt->ns, rt->name), *gone;
    size_t len;
    cJSON *opts = NULL, *det;
    const cJSON *dr, *x;
    long long grace;
    bool dry = ebb__dry_run(r);

    if (cur == NULL) {
        ebb__reply_not_found(r, d, rt->name);
        return;
    }
    ebb_http_req_body(r, &len);
    if (len > 0 && (opts = ebb__body_object(r, NULL)) == NULL)
        return;
    if (!ebb__check_preconditions(r, d, rt->name, opts, cur)) {
        cJSON_Delete(opts);
        return;
    }
    grace = ebb__grace_of(r, opts);
    dr = cJSON_GetObjectItemCaseSensitive(opts, "dryRun");
    cJSON_ArrayForEach(x, dr)
        dry |= cJSON_IsString(x) && strcmp(x->valuestring, "All") == 0;
    cJSON_Delete(opts);
    det = ebb__reply_details(d, rt->name);
    if (cur->uid[0] != '\0')
        cJSON_AddStringToObject(det, "uid", cur->uid);
    if (ebb__delete_object(s, rt->res, cur, grace, dry, &gone) != 0) {
        cJSON_Delete(det);
        ebb__reply_internal(r, "out of memory");
        return;
    }
    if (rt->res == R_PODS || rt->res == R_NAMESPACES ||
        ebb__store_get(s, rt->res, gone->key) != NULL) {
        /* pods answer with the object (ReturnDeletedObject), a namespace
         * with itself terminating, an object its finalizers keep with it */
        cJSON_Delete(det);
        ebb__reply_text(r, 200, ebb__ver_text(gone));
    } else {
        ebb__reply_status(r, 200, NULL, NULL, det);
    }
    ebb__ver_release(gone);
}

void ebb__serve_delete_collection(struct server *s, struct ebb_http_req *r,
                                  const struct route *rt)
{
    const struct rdef *d = &ebb__rdefs[rt->res];
    struct store *st = &s->stores[rt->res];
    struct filter f;
    struct sb out = { 0 };
    char **keys = NULL, gv[128];
    size_t n = 0, sent = 0;
    cJSON *opts = NULL;
    long long grace;
    bool dry = ebb__dry_run(r);
    int rc = 0;

    ebb_http_req_body(r, &n);
    if (n > 0 && (opts = ebb__body_object(r, NULL)) == NULL)
        return;
    grace = ebb__grace_of(r, opts);
    cJSON_Delete(opts);
    if (!ebb__request_filter(r, rt, &f))
        return;
    /* the keys first: every delete changes the store */
    if (st->n > 0 && (keys = calloc(st->n, sizeof(*keys))) == NULL)
        rc = EBB_ENOMEM;
    n = 0;
    for (size_t i = 0; rc == 0 && i < st->n; i++)
        if (ebb__filter_match(&f, st->v[i]) && (keys[n++] = strdup(st->v[i]->key)) == NULL)
            rc = EBB_ENOMEM;
    ebb__filter_free(&f);
    ebb__rdef_group_version(d, gv, sizeof(gv));
    ebb__sb_printf(&out, "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",\"items\":[", d->kind, gv);
    for (size_t i = 0; i < n; i++) {
        struct ver *v = keys[i] ? ebb__store_get(s, rt->res, keys[i]) : NULL, *gone;
        if (v != NULL && rc == 0 &&
            (rc = ebb__delete_object(s, rt->res, v, grace, dry, &gone)) == 0) {
            if (sent++ > 0)
                ebb__sb_add(&out, ",", 1);
            ebb__sb_add(&out, gone->text, gone->len);
            ebb__ver_release(gone);
        }
        free(keys[i]);
    }
    free(keys);
    ebb__sb_printf(&out, "],\"metadata\":{\"resourceVersion\":\"%" PRIu64 "\"}}", s->rv);
    if (rc != 0 || out.oom)
        ebb__reply_internal(r, "out of memory");
    else
        ebb_http_respond(r, 200, JSON, out.p, out.n);
    free(out.p);
}
