/* Pods: metadata and owners, tolerations, affinity and topology spread,
 * the effective requests (as k8s.io/component-helpers computes them) and
 * QoS, what kube-scheduler reads besides (host ports, images, gates),
 * volumes, container statuses and conditions. Called by decode_object.c
 * and, through ebb_decode_pod (ebb/decode.h), by the tests and the
 * scheduler's fixtures. */
#include <stdlib.h>
#include <string.h>

#include "ebb/quantity.h"
#include "ebb/taints.h"
#include "model/decode_int.h"

/* ---- metadata --------------------------------------------------------------- */

static int owner(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_owner *o = slot;
    int rc;

    (void)ctx;
    if ((rc = ebb__str_at(d, c, "kind", &o->kind)) == 0 &&
        (rc = ebb__str_at(d, c, "name", &o->name)) == 0 &&
        (rc = ebb__str_at(d, c, "uid", &o->uid)) == 0)
        rc = ebb__bool_at(d, c, "controller", &o->controller);
    return rc;
}

static void pod_annotation_flags(struct ebb_pod *p)
{
    for (uint32_t i = 0; i < p->annotations.n; i++) {
        const char *k = p->annotations.kv[i].key;
        if (strcmp(k, "kubernetes.io/config.mirror") == 0)
            p->flags |= EBB_POD_MIRROR;
        else if (strcmp(k, "kubernetes.io/config.source") == 0 &&
                 strcmp(p->annotations.kv[i].value, "api") != 0)
            p->flags |= EBB_POD_STATIC;
        else if (strcmp(k, "descheduler.alpha.kubernetes.io/evict") == 0)
            p->flags |= EBB_POD_EVICT_ANNOTATION;
        else if (strcmp(k, "descheduler.alpha.kubernetes.io/prefer-no-eviction") == 0)
            p->flags |= EBB_POD_PREFER_NO_EVICTION;
    }
}

static int pod_meta(struct dec *d, const cJSON *obj, struct ebb_pod *p)
{
    const cJSON *meta;
    int rc;

    if ((rc = ebb__meta_at(d, obj, &meta, &p->ns, &p->name)) != 0)
        return rc;
    ebb__push(d, "metadata");
    if ((rc = ebb__str_at(d, meta, "uid", &p->uid)) == 0 &&
        (rc = ebb__labels_at(d, meta, "labels", &p->labels, false)) == 0 &&
        (rc = ebb__labels_at(d, meta, "annotations", &p->annotations, true)) == 0 &&
        (rc = ARRAY_AT(d, meta, "ownerReferences", owner, NULL, p->owners, p->nowners)) == 0 &&
        (rc = ebb__time_at(d, meta, "creationTimestamp", &p->created)) == 0 &&
        (rc = ebb__time_at(d, meta, "deletionTimestamp", &p->deleted)) == 0) {
        pod_annotation_flags(p);
        if (p->deleted != EBB_TIME_NONE)
            p->flags |= EBB_POD_TERMINATING;
    }
    ebb__pop(d);
    return rc;
}

/* ---- tolerations and topology spread ------------------------------------------ */

static int toleration(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_toleration *t = slot;
    const char *s;
    int rc;

    (void)ctx;
    if ((rc = ebb__str_at(d, c, "key", &t->key)) != 0 ||
        (rc = ebb__str_at(d, c, "value", &t->value)) != 0 ||
        (rc = ebb__text_at(d, c, "operator", &s)) != 0)
        return rc;
    if (s != NULL && *s) {
        if (strcmp(s, "Exists") == 0)
            t->op = EBB_TOL_EXISTS;
        else if (strcmp(s, "Lt") == 0)
            t->op = EBB_TOL_LT;
        else if (strcmp(s, "Gt") == 0)
            t->op = EBB_TOL_GT;
        else if (strcmp(s, "Equal") != 0)
            return ebb__fail(d, EBB_ESCHEMA, "operator",
                             "\"%s\" is not a valid operator (Exists, Equal, Lt, Gt)", SHOWN(s));
    }
    if ((rc = ebb__text_at(d, c, "effect", &s)) != 0)
        return rc;
    t->effect = s == NULL || *s == '\0' ? EBB_EFFECT_ALL : (uint8_t)ebb_effect_parse(s);
    return ebb__int_at(d, c, "tolerationSeconds", INT64_MIN, INT64_MAX, &t->seconds,
                       &t->has_seconds);
}

static int policy_at(struct dec *d, const cJSON *o, const char *key, uint8_t *out)
{
    const char *s;
    int rc;

    if ((rc = ebb__text_at(d, o, key, &s)) != 0 || s == NULL)
        return rc;
    if (strcmp(s, "Honor") == 0)
        *out = EBB_POLICY_HONOR;
    else if (strcmp(s, "Ignore") == 0)
        *out = EBB_POLICY_IGNORE;
    else
        return ebb__fail(d, EBB_ESCHEMA, key, "\"%s\" is not a valid policy (Honor, Ignore)",
                         SHOWN(s));
    return 0;
}

static int spread_constraint(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_tsc *t = slot;
    const char *s;
    int rc;

    (void)ctx;
    if ((rc = ebb__i32_at(d, c, "maxSkew", &t->max_skew, NULL)) != 0 ||
        (rc = ebb__i32_at(d, c, "minDomains", &t->min_domains, NULL)) != 0 ||
        (rc = ebb__str_at(d, c, "topologyKey", &t->topology_key)) != 0 ||
        (rc = ebb__text_at(d, c, "whenUnsatisfiable", &s)) != 0)
        return rc;
    if (s != NULL) {
        if (strcmp(s, "ScheduleAnyway") == 0)
            t->when_unsatisfiable = EBB_TSC_SCHEDULE_ANYWAY;
        else if (strcmp(s, "DoNotSchedule") != 0)
            return ebb__fail(d, EBB_ESCHEMA, "whenUnsatisfiable",
                             "\"%s\" is not valid (DoNotSchedule, ScheduleAnyway)", SHOWN(s));
    }
    if ((rc = ebb__selector_at(d, c, "labelSelector", true, &t->selector)) != 0 ||
        (rc = ebb__strs_at(d, c, "matchLabelKeys", &t->match_keys, &t->nmatch_keys)) != 0 ||
        (rc = policy_at(d, c, "nodeAffinityPolicy", &t->node_affinity_policy)) != 0)
        return rc;
    return policy_at(d, c, "nodeTaintsPolicy", &t->node_taints_policy);
}

/* ---- containers and requests ------------------------------------------------------ */

/* What the containers of a pod add up to while they are read. */
#define NZ_CPU 100                  /* schedutil.DefaultMilliCPURequest */
#define NZ_MEM (200ll * 1024 * 1024) /* schedutil.DefaultMemoryRequest */

struct podsum {
    struct ebb_pod *pod;
    struct racc app;        /* app containers + restartable init containers */
    struct racc sidecars;   /* restartable init containers seen so far */
    struct racc init_max;   /* max over init containers of their in-flight use */
    struct racc one;        /* scratch: one container */
    /* QoS (cpu and memory only, zero values ignored) */
    int64_t qreq[2], qlim[2];
    bool has_qreq[2], has_qlim[2];
    bool guaranteed;
    /* cpu and memory with the scheduler's defaults for what a container
     * leaves out (NodeInfo.NonZeroRequested): same sums as above */
    int64_t nz_app[2], nz_side[2], nz_init[2];
    bool named[2];
};

/* The non-zero sums: a container that names no cpu (memory) request
 * counts 100m (200Mi). v[r] < 0: not named. */
static void nz_app(struct podsum *s, const int64_t *v)
{
    for (int r = 0; r < 2; r++)
        s->nz_app[r] = ebb_q_add(s->nz_app[r], v[r] < 0 ? (r == 0 ? NZ_CPU : NZ_MEM) : v[r]);
}

static void nz_init(struct podsum *s, const int64_t *v, bool sidecar)
{
    for (int r = 0; r < 2; r++) {
        int64_t x = v[r] < 0 ? (r == 0 ? NZ_CPU : NZ_MEM) : v[r];
        /* sums of quantities saturate (ebb/quantity.h) */
        if (sidecar) {
            s->nz_app[r] = ebb_q_add(s->nz_app[r], x);
            s->nz_side[r] = ebb_q_add(s->nz_side[r], x);
            if (s->nz_side[r] > s->nz_init[r])
                s->nz_init[r] = s->nz_side[r];
        } else if (ebb_q_add(x, s->nz_side[r]) > s->nz_init[r]) {
            s->nz_init[r] = ebb_q_add(x, s->nz_side[r]);
        }
    }
}

static int container(struct dec *d, const cJSON *c, bool init, struct podsum *s)
{
    const cJSON *res;
    const char *rp;
    int rc;

    ebb__racc_clear(&s->one);
    if ((rc = ebb__obj_at(d, c, "resources", &res)) != 0)
        return rc;
    if (res != NULL) {
        struct racc lim;
        bool found[2] = { false, false };

        ebb__push(d, "resources");
        rc = ebb__reslist_at(d, res, "requests", RES_MARK, &s->one);
        lim.has = 0;
        if (rc == 0)
            rc = ebb__reslist_at(d, res, "limits", RES_DROP, &lim);
        ebb__pop(d);
        if (rc != 0)
            return rc;
        for (int r = 0; r < 2; r++) {    /* EBB_RES_CPU, EBB_RES_MEMORY */
            if ((s->one.has & (1ull << r)) && s->one.v[r] > 0) {
                s->qreq[r] = ebb_q_add(s->qreq[r], s->one.v[r]);
                s->has_qreq[r] = true;
            }
            if ((lim.has & (1ull << r)) && lim.v[r] > 0) {
                s->qlim[r] = ebb_q_add(s->qlim[r], lim.v[r]);
                s->has_qlim[r] = true;
                found[r] = true;
            }
        }
        if (!found[0] || !found[1])
            s->guaranteed = false;
    } else {
        s->guaranteed = false;
    }
    /* a request that is written counts, even "0" (as upstream's
     * OnlyThresholdingResources reads the container's request keys) */
    s->pod->requested_mask |= s->one.has;
    int64_t nz[2];
    for (int r = 0; r < 2; r++) {   /* EBB_RES_CPU, EBB_RES_MEMORY */
        bool has = s->one.has & (1ull << r);
        nz[r] = has ? s->one.v[r] : -1;
        s->named[r] |= has;
    }
    if (!init) {
        ebb__racc_add(&s->app, &s->one);
        nz_app(s, nz);
        return 0;
    }
    if ((rc = ebb__text_at(d, c, "restartPolicy", &rp)) != 0)
        return rc;
    nz_init(s, nz, rp != NULL && strcmp(rp, "Always") == 0);
    if (rp != NULL && strcmp(rp, "Always") == 0) {
        /* A sidecar runs beside the app containers and every later init
         * container. */
        ebb__racc_add(&s->app, &s->one);
        ebb__racc_add(&s->sidecars, &s->one);
        ebb__racc_max(&s->init_max, &s->sidecars);
    } else {
        ebb__racc_add(&s->one, &s->sidecars);
        ebb__racc_max(&s->init_max, &s->one);
    }
    return 0;
}

/* A container's image into slot (an ebb_str). */
static int image(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    (void)ctx;
    return ebb__str_at(d, c, "image", slot);
}

static int app_container(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    int rc = container(d, c, false, ctx);

    return rc != 0 ? rc : image(d, c, slot, NULL);
}

static int init_container(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    (void)slot;
    return container(d, c, true, ctx);
}

static bool pod_level_resource(int id)
{
    const char *name = ebb_resource_name(id);

    return id == EBB_RES_CPU || id == EBB_RES_MEMORY ||
           (name != NULL && strncmp(name, "hugepages-", 10) == 0);
}

/* Effective requests as k8s.io/component-helpers/resource PodRequests
 * computes them with default options: max(app + sidecars, init maxima),
 * pod-level requests (cpu, memory, hugepages-*) replacing the container sum
 * when any is set, then overhead added. */
static int pod_requests(struct dec *d, const cJSON *spec, struct ebb_pod *p, struct podsum *s)
{
    const cJSON *res;
    int rc;

    ebb__racc_max(&s->app, &s->init_max);
    for (int r = 0; r < 2; r++)
        *(r == 0 ? &p->nz_cpu : &p->nz_mem) = s->nz_app[r] > s->nz_init[r] ? s->nz_app[r] : s->nz_init[r];
    if ((rc = ebb__obj_at(d, spec, "resources", &res)) != 0)
        return rc;
    if (res != NULL) {
        struct racc *lvl = &s->one;
        bool any = false;

        ebb__racc_clear(lvl);
        ebb__push(d, "resources");
        rc = ebb__reslist_at(d, res, "requests", RES_MARK, lvl);
        ebb__pop(d);
        if (rc != 0)
            return rc;
        for (uint64_t m = lvl->has; m != 0; m &= m - 1)
            any |= pod_level_resource(__builtin_ctzll(m));
        /* pod-level requests: a default only where no container and not
         * the pod names the resource (getNonMissingContainerRequests) */
        for (int r = 0; any && r < 2; r++) {
            if (lvl->has & (1ull << r))
                *(r == 0 ? &p->nz_cpu : &p->nz_mem) = lvl->v[r];
            else if (s->named[r])
                *(r == 0 ? &p->nz_cpu : &p->nz_mem) = s->app.has & (1ull << r) ? s->app.v[r] : 0;
        }
        for (uint64_t m = lvl->has; any && m != 0; m &= m - 1) {
            int id = __builtin_ctzll(m);
            if (pod_level_resource(id)) {
                s->app.v[id] = lvl->v[id];
                s->app.has |= 1ull << id;
            }
        }
    }
    ebb__racc_clear(&s->one);
    if ((rc = ebb__reslist_at(d, spec, "overhead", RES_MARK, &s->one)) != 0)
        return rc;
    for (int r = 0; r < 2; r++)
        if (s->one.has & (1ull << r))
            *(r == 0 ? &p->nz_cpu : &p->nz_mem) = ebb_q_add(r == 0 ? p->nz_cpu : p->nz_mem, s->one.v[r]);
    ebb__racc_add(&s->app, &s->one);
    return ebb__racc_emit(d, &s->app, &p->requests);
}

static uint8_t pod_qos(const struct podsum *s)
{
    bool any = s->has_qreq[0] || s->has_qreq[1] || s->has_qlim[0] || s->has_qlim[1];
    bool g = s->guaranteed;

    if (!any)
        return EBB_QOS_BEST_EFFORT;
    for (int r = 0; r < 2 && g; r++)
        if (s->has_qreq[r] && (!s->has_qlim[r] || s->qlim[r] != s->qreq[r]))
            g = false;
    if (g && s->has_qreq[0] + s->has_qreq[1] == s->has_qlim[0] + s->has_qlim[1])
        return EBB_QOS_GUARANTEED;
    return EBB_QOS_BURSTABLE;
}

/* ---- what kube-scheduler reads besides the requests -------------------------- */

struct ports {
    struct ebb_pod *pod;
    size_t room;            /* entries of pod->host_ports */
};

/* A containers[].ports[] entry: kept when it has a hostPort. */
static int host_port(struct dec *d, const cJSON *e, void *slot, void *ctx)
{
    struct ports *x = ctx;
    struct ebb_pod *p = x->pod;
    struct ebb_host_port *hp;
    int64_t port = 0;
    int rc;

    (void)slot;
    if ((rc = ebb__int_at(d, e, "hostPort", 0, 65535, &port, NULL)) != 0 || port <= 0 ||
        p->nhost_ports >= x->room)
        return rc;
    hp = &p->host_ports[p->nhost_ports++];
    hp->port = (int32_t)port;
    if ((rc = ebb__str_at(d, e, "hostIP", &hp->ip)) == 0)
        rc = ebb__str_at(d, e, "protocol", &hp->protocol);
    return rc;
}

static int container_ports(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    (void)slot;
    return EACH_AT(d, c, "ports", host_port, ctx);
}

static int host_ports_at(struct dec *d, const cJSON *spec, struct ebb_pod *p)
{
    const cJSON *cs, *c, *e;
    struct ports x = { .pod = p };
    size_t n;
    int rc;

    if ((rc = ebb__arr_at(d, spec, "containers", &cs, &n)) != 0)
        return rc;
    for (c = cs; c != NULL; c = c->next) {
        const cJSON *a = ebb__child(c, "ports");
        for (e = cJSON_IsArray(a) ? a->child : NULL; e != NULL; e = e->next)
            if (!cJSON_IsObject(e) || ebb__child(e, "hostPort") != NULL)
                x.room++;   /* checked below */
    }
    if (x.room == 0)
        return 0;
    if (x.room > UINT16_MAX)
        return ebb__fail(d, EBB_ESCHEMA, "containers", "too many host ports");
    if ((p->host_ports = calloc(x.room, sizeof(*p->host_ports))) == NULL)
        return ebb__nomem(d);
    return EACH_AT(d, spec, "containers", container_ports, &x);
}

static int pod_sched_fields(struct dec *d, const cJSON *spec, struct ebb_pod *p)
{
    const cJSON *gates;
    size_t n;
    int rc;

    if ((rc = host_ports_at(d, spec, p)) != 0)
        return rc;
    if ((rc = ebb__arr_at(d, spec, "schedulingGates", &gates, &n)) != 0)
        return rc;
    if (n > 0)
        p->flags |= EBB_POD_SCHEDULING_GATED;
    return ARRAY_AT(d, spec, "initContainers", image, NULL, p->init_images, p->ninit_images);
}

/* A volume: local storage flagged, a claim's name kept. */
static int volume(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_pod *p = ctx;
    const cJSON *pvc;
    int rc;

    (void)slot;
    if (ebb__child(c, "hostPath") != NULL || ebb__child(c, "emptyDir") != NULL) {
        p->flags |= EBB_POD_LOCAL_STORAGE;
        return 0;
    }
    if ((rc = ebb__obj_at(d, c, "persistentVolumeClaim", &pvc)) != 0 || pvc == NULL)
        return rc;
    if (p->pvcs == NULL) {
        /* room for this volume's claim and every later one's */
        size_t left = 0;
        for (const cJSON *v = c; v != NULL; v = v->next)
            left++;
        if ((p->pvcs = calloc(left, sizeof(*p->pvcs))) == NULL)
            return ebb__nomem(d);
    }
    ebb__push(d, "persistentVolumeClaim");
    if ((rc = ebb__str_at(d, pvc, "claimName", &p->pvcs[p->npvcs])) == 0 &&
        p->pvcs[p->npvcs] != NULL)
        p->npvcs++;
    ebb__pop(d);
    return rc;
}

/* ---- status ------------------------------------------------------------------ */

static int cstate(struct dec *d, const cJSON *c, const char *key, uint8_t *state, ebb_str *reason,
                  int32_t *exit_code)
{
    const cJSON *st, *t;
    int rc;

    if ((rc = ebb__obj_at(d, c, key, &st)) != 0 || st == NULL)
        return rc;
    ebb__push(d, key);
    if ((rc = ebb__obj_at(d, st, "terminated", &t)) == 0 && t != NULL) {
        *state = EBB_CSTATE_TERMINATED;
        ebb__push(d, "terminated");
        if ((rc = ebb__str_at(d, t, "reason", reason)) == 0)
            rc = ebb__i32_at(d, t, "exitCode", exit_code, NULL);
        ebb__pop(d);
    } else if (rc == 0 && (rc = ebb__obj_at(d, st, "running", &t)) == 0 && t != NULL) {
        *state = EBB_CSTATE_RUNNING;
    } else if (rc == 0 && (rc = ebb__obj_at(d, st, "waiting", &t)) == 0 && t != NULL) {
        *state = EBB_CSTATE_WAITING;
        ebb__push(d, "waiting");
        rc = ebb__str_at(d, t, "reason", reason);
        ebb__pop(d);
    }
    ebb__pop(d);
    return rc;
}

struct statuses {
    struct ebb_pod *pod;    /* pod->cstatus has room for every entry of the three */
    uint8_t kind;           /* EBB_CONT_* */
};

static int cstatus(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    const struct statuses *x = ctx;
    struct ebb_pod *p = x->pod;
    struct ebb_cstatus *cs = &p->cstatus[p->ncstatus++];
    int rc;

    (void)slot;
    cs->kind = x->kind;
    if ((rc = ebb__str_at(d, c, "name", &cs->name)) == 0 &&
        (rc = ebb__bool_at(d, c, "ready", &cs->ready)) == 0 &&
        (rc = ebb__i32_at(d, c, "restartCount", &cs->restarts, NULL)) == 0 &&
        (rc = cstate(d, c, "state", &cs->state, &cs->reason, &cs->exit_code)) == 0)
        rc = cstate(d, c, "lastState", &cs->last_state, &cs->last_reason, &cs->last_exit_code);
    if (x->kind == EBB_CONT_APP)
        p->restarts += cs->restarts;
    else if (x->kind == EBB_CONT_INIT)
        p->init_restarts += cs->restarts;
    return rc;
}

/* ---- the pod ---------------------------------------------------------------------- */

static int pod_spec(struct dec *d, const cJSON *obj, struct ebb_pod *p, struct podsum *s)
{
    const cJSON *spec, *claims;
    bool has;
    size_t n;
    int rc;

    if ((rc = ebb__obj_at(d, obj, "spec", &spec)) != 0 || spec == NULL)
        return rc;
    ebb__push(d, "spec");
    if ((rc = ebb__str_at(d, spec, "nodeName", &p->node)) == 0 && p->node != NULL &&
        *p->node == '\0') {
        ebb_str_release(p->node);
        p->node = NULL;
    }
    if (rc == 0)
        rc = ebb__str_at(d, spec, "schedulerName", &p->scheduler);
    if (rc == 0)
        rc = ebb__str_at(d, spec, "priorityClassName", &p->priority_class);
    if (rc == 0 && (rc = ebb__i32_at(d, spec, "priority", &p->priority, &has)) == 0 && has)
        p->flags |= EBB_POD_HAS_PRIORITY;
    if (rc == 0 && (rc = ebb__labels_at(d, spec, "nodeSelector", &p->node_selector, false)) == 0 &&
        p->node_selector.n > 0)
        p->flags |= EBB_POD_NODE_SELECTOR;
    if (rc == 0)
        rc = ARRAY_AT(d, spec, "tolerations", toleration, NULL, p->tolerations, p->ntolerations);
    if (rc == 0)
        rc = ebb__affinity_at(d, spec, &p->affinity);
    if (rc == 0)
        rc = ARRAY_AT(d, spec, "topologySpreadConstraints", spread_constraint, NULL, p->tsc,
                      p->ntsc);
    if (rc == 0)
        rc = ARRAY_AT(d, spec, "containers", app_container, s, p->images, p->nimages);
    if (rc == 0)
        rc = EACH_AT(d, spec, "initContainers", init_container, s);
    if (rc == 0)
        rc = pod_requests(d, spec, p, s);
    if (rc == 0)
        rc = EACH_AT(d, spec, "volumes", volume, p);
    if (rc == 0)
        rc = pod_sched_fields(d, spec, p);
    if (rc == 0 && (rc = ebb__arr_at(d, spec, "resourceClaims", &claims, &n)) == 0 && n > 0)
        p->flags |= EBB_POD_RESOURCE_CLAIMS;
    ebb__pop(d);
    return rc;
}

static int pod_status(struct dec *d, const cJSON *obj, struct ebb_pod *p, const struct podsum *s)
{
    static const char *phases[] = { "Unknown", "Pending", "Running", "Succeeded", "Failed" };
    static const char *keys[] = { "containerStatuses", "initContainerStatuses",
                                  "ephemeralContainerStatuses" };
    const cJSON *status, *c;
    const char *txt;
    size_t n, total = 0;
    bool ready = false;
    int rc;

    p->qos = pod_qos(s);
    if ((rc = ebb__obj_at(d, obj, "status", &status)) != 0 || status == NULL)
        return rc;
    ebb__push(d, "status");
    if ((rc = ebb__text_at(d, status, "phase", &txt)) == 0 && txt != NULL) {
        for (size_t i = 0; i < EBB_ARRAY_LEN(phases); i++)
            if (strcmp(txt, phases[i]) == 0)
                p->phase = (uint8_t)i;
    }
    if (rc == 0 && (rc = ebb__text_at(d, status, "qosClass", &txt)) == 0 && txt != NULL) {
        if (strcmp(txt, "Guaranteed") == 0)
            p->qos = EBB_QOS_GUARANTEED;
        else if (strcmp(txt, "Burstable") == 0)
            p->qos = EBB_QOS_BURSTABLE;
        else if (strcmp(txt, "BestEffort") == 0)
            p->qos = EBB_QOS_BEST_EFFORT;
    }
    if (rc == 0)
        rc = ebb__str_at(d, status, "reason", &p->reason);
    if (rc == 0)
        rc = ebb__time_at(d, status, "startTime", &p->started);
    if (rc == 0 &&
        (rc = ebb__conditions_at(d, status, &p->conditions, &p->nconditions, &ready)) == 0 && ready)
        p->flags |= EBB_POD_READY;
    for (int k = 0; rc == 0 && k < 3; k++)
        if ((rc = ebb__arr_at(d, status, keys[k], &c, &n)) == 0)
            total += n;
    if (rc == 0 && total > UINT16_MAX)
        rc = ebb__fail(d, EBB_ESCHEMA, NULL, "too many container statuses");
    if (rc == 0 && total > 0 && (p->cstatus = calloc(total, sizeof(*p->cstatus))) == NULL)
        rc = ebb__nomem(d);
    for (int k = 0; rc == 0 && k < 3 && total > 0; k++)
        rc = EACH_AT(d, status, keys[k], cstatus, (&(struct statuses){ p, (uint8_t)k }));
    ebb__pop(d);
    return rc;
}

int ebb__decode_pod(struct dec *d, const cJSON *obj, struct ebb_pod **out)
{
    struct podsum *s;
    struct ebb_pod *p;
    int rc;

    if (!cJSON_IsObject(obj))
        return ebb__expected(d, NULL, "an object", obj);
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return ebb__nomem(d);
    if ((s = calloc(1, sizeof(*s))) == NULL) {
        free(p);
        return ebb__nomem(d);
    }
    s->pod = p;
    s->guaranteed = true;
    p->created = p->started = p->deleted = EBB_TIME_NONE;
    if ((rc = pod_meta(d, obj, p)) == 0 && (rc = pod_spec(d, obj, p, s)) == 0)
        rc = pod_status(d, obj, p, s);
    free(s);
    if (rc != 0) {
        ebb_pod_free(p);
        return rc;
    }
    ebb_pod_share(p);
    *out = p;
    return 0;
}

int ebb_decode_pod(const cJSON *obj, struct ebb_pod **out, struct ebb_error *err)
{
    struct dec d = DEC_INIT(err);

    if (obj == NULL || out == NULL)
        return EBB_EINVAL;
    return ebb__decode_pod(&d, obj, out);
}
