/* serve_resched.c: `ebb serve --reschedule`, the served cluster with a
 * replica controller and kube-scheduler in it.
 *
 * A pod evicted through the API whose owner would recreate it
 * (ebb_whatif_recreator: ReplicaSet, ReplicationController, StatefulSet,
 * Job) gets a replacement, as `ebb simulate --reschedule` makes them: the
 * same spec and labels, a new name and uid (a StatefulSet pod keeps its
 * name and comes back once the old pod is gone; the others at once, as
 * their controllers do not wait for a terminating pod), placed by the
 * scheduler model (ebb/sched.h). A placed replacement is stored bound and
 * Running and Ready; one that fits nowhere is stored Pending with
 * PodScheduled False and the FailedScheduling message. Clients see it as
 * an ADDED event like any other.
 *
 * The model reads the server's cache, whose pods then follow every write
 * to the pods store (the nodes stay as loaded: the model's node indexes do
 * not change). A deletion costs a pass over the scheduler's pods. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ebb/sched.h"
#include "ebb/whatif.h"
#include "serve/serve_int.h"
#include "base/vec.h"

/* A StatefulSet pod evicted while it terminates: its replacement waits for
 * it to be gone. */
struct resched_wait {
    char *key;                   /* "ns/name" */
    cJSON *json;                 /* the evicted pod as it was */
};

struct resched {
    struct ebb_sched_config *config;
    struct ebb_sched *sched;
    uint64_t rng;                /* names of replacements */
    struct resched_wait *waits;
    size_t nwaits, cap;
    size_t replaced, placed, pending;
};

int ebb__resched_start(struct server *s, struct ebb_error *err)
{
    struct resched *r = calloc(1, sizeof(*r));
    struct ebb_sched_opts so = { 0 };
    int rc;

    if (r == NULL)
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
    r->rng = s->o.seed ^ 0x5eedfaceULL;
    if (s->o.scheduler_config != NULL &&
        (rc = ebb_sched_config_load(s->o.scheduler_config, &r->config, err)) != 0)
        goto fail;
    so.config = r->config;
    if ((rc = ebb_sched_create(s->cache, &so, &r->sched)) != 0) {
        ebb_error_set(err, rc, NULL, 0, NULL, "the scheduler model: %s", ebb_strerror(rc));
        goto fail;
    }
    s->resched = r;
    return 0;
fail:
    ebb_sched_config_free(r->config);
    free(r);
    return rc;
}

void ebb__resched_free(struct server *s)
{
    struct resched *r = s->resched;

    if (r == NULL)
        return;
    for (size_t i = 0; i < r->nwaits; i++) {
        free(r->waits[i].key);
        cJSON_Delete(r->waits[i].json);
    }
    free(r->waits);
    ebb_sched_destroy(r->sched);
    ebb_sched_config_free(r->config);
    free(r);
    s->resched = NULL;
}

/* The cache's pod of `ns`/`name` goes, and the scheduler forgets it. */
static void forget(struct resched *r, struct ebb_cache *c, const char *ns, const char *name)
{
    if (ebb_cache_delete(c, EBB_KIND_POD, ebb_str_find(ns, strlen(ns)),
                         ebb_str_find(name, strlen(name))) == 0)
        ebb_sched_sync(r->sched);
}

static void make_replacement(struct server *s, const cJSON *old_json);

/* The cache's pods follow the pods store: a new version replaces the old
 * (bound ones through the scheduler, which counts them), a deleted pod
 * goes, and a StatefulSet pod waiting for it comes back. */
void ebb__resched_follow(struct server *s, const struct ver *v, bool deleted)
{
    struct resched *r = s->resched;
    struct ebb_error err = { 0 };
    struct ebb_node *node;
    struct ebb_pod *pod = NULL;
    cJSON *json;

    if (r == NULL)
        return;
    forget(r, s->cache, v->ns, v->name);
    if (deleted) {
        for (size_t i = 0; i < r->nwaits; i++) {
            if (strcmp(r->waits[i].key, v->key) != 0)
                continue;
            json = r->waits[i].json;
            free(r->waits[i].key);
            r->waits[i] = r->waits[--r->nwaits];
            make_replacement(s, json);
            cJSON_Delete(json);
            break;
        }
        return;
    }
    if ((json = ebb__ver_json(v)) == NULL)
        return;
    if (ebb_decode_pod(json, &pod, &err) != 0) {
        ebb_log(EBB_LOG_WARN, "pod %s: %s: the scheduler model does not see it", v->key, err.msg);
        cJSON_Delete(json);
        return;
    }
    cJSON_Delete(json);
    node = pod->node != NULL ? ebb_cache_node(s->cache, pod->node) : NULL;
    if (node != NULL) {
        if (ebb_sched_bind(r->sched, pod, node) != 0)   /* takes pod */
            ebb_log(EBB_LOG_WARN, "pod %s: the scheduler model could not account for it", v->key);
    } else {
        struct ebb_object o = { .kind = EBB_KIND_POD, .u.pod = pod };
        if (ebb_cache_put(s->cache, &o) != 0)
            ebb_pod_free(pod);
    }
}

/* ---- replacements -------------------------------------------------------------------------- */

static void add_condition(cJSON *conds, const char *type, const char *status, const char *reason,
                          const char *message, const char *now)
{
    cJSON *c = cJSON_CreateObject();

    if (c == NULL)
        return;
    cJSON_AddStringToObject(c, "type", type);
    cJSON_AddStringToObject(c, "status", status);
    cJSON_AddStringToObject(c, "lastTransitionTime", now);
    if (reason != NULL)
        cJSON_AddStringToObject(c, "reason", reason);
    if (message != NULL)
        cJSON_AddStringToObject(c, "message", message);
    cJSON_AddItemToArray(conds, c);
}

/* Running and Ready since `now`: every app container running, every init
 * container completed, no restarts. */
static cJSON *running_status(const cJSON *spec, const char *now)
{
    static const char *const lists[][2] = { { "initContainers", "initContainerStatuses" },
                                            { "containers", "containerStatuses" } };
    cJSON *st = cJSON_CreateObject(), *conds;
    const cJSON *c;

    if (st == NULL)
        return NULL;
    cJSON_AddStringToObject(st, "phase", "Running");
    conds = cJSON_AddArrayToObject(st, "conditions");
    add_condition(conds, "PodScheduled", "True", NULL, NULL, now);
    add_condition(conds, "Initialized", "True", NULL, NULL, now);
    add_condition(conds, "ContainersReady", "True", NULL, NULL, now);
    add_condition(conds, "Ready", "True", NULL, NULL, now);
    cJSON_AddStringToObject(st, "startTime", now);
    for (int k = 0; k < 2; k++) {
        const cJSON *cs = cJSON_GetObjectItemCaseSensitive(spec, lists[k][0]);
        cJSON *out;
        if (!cJSON_IsArray(cs) || (out = cJSON_AddArrayToObject(st, lists[k][1])) == NULL)
            continue;
        cJSON_ArrayForEach(c, cs) {
            cJSON *x = cJSON_CreateObject(), *state, *inner;
            const char *name = ebb__json_str(c, "name"), *image = ebb__json_str(c, "image");
            if (x == NULL)
                continue;
            cJSON_AddStringToObject(x, "name", name ? name : "");
            cJSON_AddStringToObject(x, "image", image ? image : "");
            cJSON_AddStringToObject(x, "imageID", "");
            cJSON_AddBoolToObject(x, "ready", k == 1);
            cJSON_AddBoolToObject(x, "started", k == 1);
            cJSON_AddNumberToObject(x, "restartCount", 0);
            state = cJSON_AddObjectToObject(x, "state");
            inner = cJSON_AddObjectToObject(state, k == 1 ? "running" : "terminated");
            cJSON_AddStringToObject(inner, "startedAt", now);
            if (k == 0) {
                cJSON_AddNumberToObject(inner, "exitCode", 0);
                cJSON_AddStringToObject(inner, "reason", "Completed");
                cJSON_AddStringToObject(inner, "finishedAt", now);
            }
            cJSON_AddItemToArray(out, x);
        }
    }
    return st;
}

static cJSON *pending_status(const char *reason, const char *message, const char *now)
{
    cJSON *st = cJSON_CreateObject();

    if (st == NULL)
        return NULL;
    cJSON_AddStringToObject(st, "phase", "Pending");
    add_condition(cJSON_AddArrayToObject(st, "conditions"), "PodScheduled", "False", reason, message, now);
    return st;
}

/* The replacement of `old_json` (an evicted pod, decoded again here): made
 * from it, scheduled, stored. Failures are logged: the eviction stands. */
static void make_replacement(struct server *s, const cJSON *old_json)
{
    struct resched *r = s->resched;
    struct ebb_error err = { 0 };
    struct ebb_pod *old = NULL, *rep = NULL, *pod = NULL;
    struct ebb_sched_result res;
    cJSON *json = NULL, *meta, *spec, *st;
    char now[40], uid[40];
    const char *key = ebb__json_meta_str(old_json, "name");

    if (ebb_decode_pod(old_json, &old, &err) != 0) {
        ebb_log(EBB_LOG_WARN, "pod %s: %s: not replaced", key ? key : "?", err.msg);
        return;
    }
    if (ebb_whatif_recreator(s->cache, old) == NULL)
        goto out;   /* a bare pod (or an owner that does not recreate it): gone */
    ebb__serve_now(now, sizeof(now));
    ebb__serve_uid(s, uid, sizeof(uid));
    if ((rep = ebb_whatif_replacement(s->cache, old, (int64_t)time(NULL), &r->rng)) == NULL ||
        (json = cJSON_Duplicate(old_json, true)) == NULL)
        goto oom;
    meta = ebb__json_meta(json);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "deletionTimestamp");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "deletionGracePeriodSeconds");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    ebb__json_set_str(meta, "name", rep->name);
    ebb__json_set_str(meta, "uid", uid);
    ebb__json_set_str(meta, "creationTimestamp", now);
    spec = ebb__json_child(json, "spec");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "nodeName");
    cJSON_DeleteItemFromObjectCaseSensitive(json, "status");
    if (ebb_decode_pod(json, &pod, &err) != 0) {
        ebb_log(EBB_LOG_WARN, "pod %s/%s: %s: not replaced", rep->ns, rep->name, err.msg);
        goto out;
    }
    if (ebb_sched_schedule(r->sched, pod, &res) != 0)
        goto oom;
    r->replaced++;
    if (res.status == EBB_SCHED_PLACED) {
        ebb__json_set_str(spec, "nodeName", res.node->name);
        st = running_status(spec, now);
        r->placed++;
        ebb_log(EBB_LOG_INFO, "replaced pod %s/%s with %s on %s", old->ns, old->name, rep->name,
                res.node->name);
    } else {
        st = pending_status(res.status == EBB_SCHED_GATED ? "SchedulingGated" : "Unschedulable",
                            res.message, now);
        r->pending++;
        ebb_log(EBB_LOG_INFO, "replaced pod %s/%s with %s: pending: %s", old->ns, old->name,
                rep->name, res.message);
    }
    if (st == NULL)
        goto oom;
    cJSON_AddItemToObject(json, "status", st);
    if (ebb__store_put(s, R_PODS, json, NULL) != 0) {
        json = NULL;   /* the store took it */
        goto oom;
    }
    json = NULL;
    goto out;
oom:
    ebb_log(EBB_LOG_ERROR, "pod %s: out of memory: not replaced", key ? key : "?");
out:
    cJSON_Delete(json);
    ebb_pod_free(pod);
    ebb_pod_free(rep);
    ebb_pod_free(old);
}

void ebb__resched_evicted(struct server *s, const cJSON *old_json)
{
    struct resched *r = s->resched;
    const char *ns = ebb__json_meta_str(old_json, "namespace"), *name = ebb__json_meta_str(old_json, "name");
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(ebb__json_meta((cJSON *)old_json), "ownerReferences");
    const cJSON *ref;
    bool sts = false;
    char key[600];

    if (r == NULL || ns == NULL || name == NULL)
        return;
    cJSON_ArrayForEach(ref, refs) {
        const char *kind = ebb__json_str(ref, "kind");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref, "controller")) && kind != NULL &&
            strcmp(kind, "StatefulSet") == 0)
            sts = true;
    }
    if (!sts || ebb__store_lookup(s, R_PODS, ns, name) == NULL) {
        make_replacement(s, old_json);
        return;
    }
    /* a StatefulSet pod comes back under its name once the old one is gone */
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (ebb__grow((void **)&r->waits, &r->cap, r->nwaits + 1, sizeof(*r->waits)) != 0)
        return;
    if ((r->waits[r->nwaits].key = strdup(key)) == NULL ||
        (r->waits[r->nwaits].json = cJSON_Duplicate(old_json, true)) == NULL) {
        free(r->waits[r->nwaits].key);
        return;
    }
    r->nwaits++;
}
