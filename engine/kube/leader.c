/* Lease-based leader election; see include/ebb/leader.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb/leader.h"
#include "ebb/self.h"

struct ebb_leader {
    uv_loop_t *loop;
    struct ebb_kube *kube;
    char ns[254], name[254], identity[256];
    uint64_t lease_ms, renew_ms, retry_ms;
    ebb_leader_fn fn;
    void *ud;
    uv_timer_t timer;
    bool leading;
    bool closing;
    bool busy;                  /* a request is in flight */
    const char *verb;           /* of the write in flight: "create" or "update" */
    struct ebb_kube_req *req;
    /* what we last saw of the lease */
    char rv[128];
    char holder[256];
    char acquired[64];          /* its acquireTime: kept while the holder renews */
    char record[512];           /* holder+renewTime+transitions: a change resets observed */
    int64_t transitions;
    uint64_t observed_ms;       /* loop time when `record` last changed */
    uint64_t last_renew_ms;     /* loop time of our last successful renew */
    char error[1024];            /* why the lease cannot be read or written, "" when it can */
    char told_holder[256];      /* the holder a follower last logged */
    bool told_holder_set;
    void (*closed_cb)(void *);
    void *closed_ud;
};

static void set_leading(struct ebb_leader *l, bool leading)
{
    if (l->leading == leading)
        return;
    l->leading = leading;
    ebb_log(leading ? EBB_LOG_INFO : EBB_LOG_WARN, "leader election: %s lease %s/%s as %s",
            leading ? "acquired" : "lost", l->ns, l->name, l->identity);
    if (l->fn)
        l->fn(l->ud, leading);
}

/* Every answer about the lease passes here: one that is not what the
 * protocol expects (a 403, a namespace that does not exist, a 5xx, a
 * transport failure, a body that is not a Lease) is an error named in the
 * log, once per change, and kept for /readyz until an answer is good
 * again. Expected answers are 200 (read, written), 201 (created), 404 on a
 * read (no lease yet: create it) and 409 (someone else wrote first). */
static void lease_answer(struct ebb_leader *l, const char *verb, int status, const char *body, size_t len,
                         bool readable)
{
    char what[400], err[sizeof(l->error)];   /* verb, namespace, name: a DNS label and a name */

    if (readable) {
        if (l->error[0])
            ebb_log(EBB_LOG_INFO, "leader election: lease %s/%s can be read and written again", l->ns,
                    l->name);
        l->error[0] = '\0';
        return;
    }
    snprintf(what, sizeof(what), "%.16s lease %.63s/%.253s", verb, l->ns, l->name);
    if (status >= 200 && status < 300)
        snprintf(err, sizeof(err), "%s: %d the answer is not a Lease ebb can read", what, status);
    else   /* the server's words; a transport failure without a made-up status */
        ebb_kube_answer_text(what, status, body, len, err, sizeof(err));
    if (strcmp(err, l->error) != 0)
        ebb_log(EBB_LOG_ERROR, "leader election: %s (ebb does not lead while it cannot)", err);
    memcpy(l->error, err, sizeof(err));
}

/* A follower says who leads, once per change of holder. */
static void tell_holder(struct ebb_leader *l)
{
    if (l->told_holder_set && strcmp(l->told_holder, l->holder) == 0)
        return;
    snprintf(l->told_holder, sizeof(l->told_holder), "%s", l->holder);
    l->told_holder_set = true;
    if (l->holder[0])
        ebb_log(EBB_LOG_INFO, "leader election: lease %s/%s is held by %s; standing by as %s", l->ns, l->name,
                l->holder, l->identity);
    else
        ebb_log(EBB_LOG_INFO, "leader election: lease %s/%s is free; taking it as %s", l->ns, l->name,
                l->identity);
}

static void micro_time(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%06dZ", (int)(ts.tv_nsec / 1000) % 1000000);
}

static char *lease_body(struct ebb_leader *l, const char *holder, bool create, int64_t transitions)
{
    char now[64];
    cJSON *o = cJSON_CreateObject(), *meta, *spec;
    char *s;

    micro_time(now, sizeof(now));
    cJSON_AddStringToObject(o, "apiVersion", "coordination.k8s.io/v1");
    cJSON_AddStringToObject(o, "kind", "Lease");
    meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(meta, "name", l->name);
    cJSON_AddStringToObject(meta, "namespace", l->ns);
    if (!create && l->rv[0])
        cJSON_AddStringToObject(meta, "resourceVersion", l->rv);
    spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddStringToObject(spec, "holderIdentity", holder);
    cJSON_AddNumberToObject(spec, "leaseDurationSeconds", holder[0] ? (double)(l->lease_ms / 1000) : 1);
    /* as client-go: acquireTime changes when the holder does, not on renewal */
    cJSON_AddStringToObject(spec, "acquireTime",
                            holder[0] && strcmp(holder, l->holder) == 0 && l->acquired[0] ? l->acquired : now);
    cJSON_AddStringToObject(spec, "renewTime", now);
    cJSON_AddNumberToObject(spec, "leaseTransitions", (double)transitions);
    s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static void schedule(struct ebb_leader *l, uint64_t ms);
static void try_acquire(struct ebb_leader *l);

/* A string field that fits `len` (with its NUL), or absent/null ("");
 * false for anything else: a Lease is never read from a cut value (a cut
 * holder could read as ours, a cut resourceVersion names another one). */
static bool lease_text(const cJSON *j, const char **out, size_t len)
{
    *out = "";
    if (j == NULL || cJSON_IsNull(j))
        return true;
    if (!cJSON_IsString(j) || strlen(j->valuestring) >= len)
        return false;
    *out = j->valuestring;
    return true;
}

/* Read what matters of a Lease answer; a changed record restarts the
 * expiry clock. false (and nothing changed) when the answer is not a Lease
 * ebb can read whole: the caller takes it as a failed request. */
static bool observe(struct ebb_leader *l, const char *body, size_t len)
{
    cJSON *o = cJSON_ParseWithLength(body, len);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions");
    const char *rv, *holder, *acq, *renew;
    char record[sizeof(l->record)];

    if (!cJSON_IsObject(meta) || (spec != NULL && !cJSON_IsNull(spec) && !cJSON_IsObject(spec)) ||
        !lease_text(cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"), &rv, sizeof(l->rv)) ||
        rv[0] == '\0' ||
        !lease_text(cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity"), &holder, sizeof(l->holder)) ||
        !lease_text(cJSON_GetObjectItemCaseSensitive(spec, "acquireTime"), &acq, sizeof(l->acquired)) ||
        !lease_text(cJSON_GetObjectItemCaseSensitive(spec, "renewTime"), &renew, 64)) {
        cJSON_Delete(o);
        return false;
    }
    snprintf(l->rv, sizeof(l->rv), "%s", rv);
    snprintf(l->holder, sizeof(l->holder), "%s", holder);
    snprintf(l->acquired, sizeof(l->acquired), "%s", acq);
    /* an int32 in the API: anything else is taken as 0 (never cast out of range) */
    l->transitions = cJSON_IsNumber(tr) && tr->valuedouble >= 0 && tr->valuedouble <= 2147483647.0
                         ? (int64_t)tr->valuedouble
                         : 0;
    snprintf(record, sizeof(record), "%s|%s|%lld", l->holder, renew, (long long)l->transitions);
    if (strcmp(record, l->record) != 0) {
        memcpy(l->record, record, sizeof(record));
        l->observed_ms = uv_now(l->loop);
    }
    cJSON_Delete(o);
    return true;
}

static void after_write(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct ebb_leader *l = ud;
    bool read = false;
    (void)req;

    l->busy = false;
    l->req = NULL;
    if (l->closing)
        return;
    if (status == 200 || status == 201)
        read = observe(l, body, len);
    lease_answer(l, l->verb, status, body, len, read || status == 409);
    if (status == 200 || status == 201) {
        /* the server stored our write: the Lease it answers must be ours,
         * or ebb does not lead on its word */
        if (read && strcmp(l->holder, l->identity) == 0) {
            l->last_renew_ms = uv_now(l->loop);
            set_leading(l, true);
        } else {
            l->rv[0] = '\0';   /* read it again */
            if (read || uv_now(l->loop) - l->last_renew_ms >= l->renew_ms)
                set_leading(l, false);
        }
    } else if (l->leading && uv_now(l->loop) - l->last_renew_ms >= l->renew_ms) {
        /* could not renew within the deadline: stop acting as the leader */
        set_leading(l, false);
    } else if (status == 409) {
        /* someone else wrote first: read again at the next try */
        l->rv[0] = '\0';
    }
    schedule(l, l->retry_ms);
}

static void write_lease(struct ebb_leader *l, bool create, const char *holder, int64_t transitions)
{
    char path[600];
    char *body = lease_body(l, holder, create, transitions);
    struct ebb_kube_req_opts o = { .method = create ? "POST" : "PUT", .write = true,
                                   .on_done = after_write, .ud = l };

    if (body == NULL) {
        schedule(l, l->retry_ms);
        return;
    }
    if (create)
        snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases", l->ns);
    else
        snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", l->ns, l->name);
    o.path = path;
    o.body = body;
    o.body_len = strlen(body);
    l->verb = create ? "create" : "update";
    l->busy = true;
    if (ebb_kube_request(l->kube, &o, &l->req) != 0) {
        l->busy = false;
        schedule(l, l->retry_ms);
    }
    free(body);
}

static void after_get(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct ebb_leader *l = ud;
    uint64_t now = uv_now(l->loop);
    (void)req;

    l->busy = false;
    l->req = NULL;
    if (l->closing)
        return;
    if (status == 404) {
        /* no lease yet, or no namespace: the create that follows tells */
        write_lease(l, true, l->identity, 0);
        return;
    }
    if (status != 200 || !observe(l, body, len)) {
        lease_answer(l, "read", status, body, len, false);
        if (l->leading && now - l->last_renew_ms >= l->renew_ms)
            set_leading(l, false);
        schedule(l, l->retry_ms);
        return;
    }
    lease_answer(l, "read", status, body, len, true);
    if (strcmp(l->holder, l->identity) == 0) {
        write_lease(l, false, l->identity, l->transitions);   /* renew */
        return;
    }
    if (l->leading)
        set_leading(l, false);   /* someone took it */
    tell_holder(l);
    if (l->holder[0] == '\0' || now - l->observed_ms >= l->lease_ms) {
        write_lease(l, false, l->identity, l->transitions + 1);   /* free or expired: take it */
        return;
    }
    schedule(l, l->retry_ms);
}

static void try_acquire(struct ebb_leader *l)
{
    char path[600];
    struct ebb_kube_req_opts o = { .method = "GET", .on_done = after_get, .ud = l };

    if (l->busy || l->closing)
        return;
    /* renew without an extra read while we hold it */
    if (l->leading && l->rv[0]) {
        write_lease(l, false, l->identity, l->transitions);
        return;
    }
    snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", l->ns, l->name);
    o.path = path;
    l->busy = true;
    if (ebb_kube_request(l->kube, &o, &l->req) != 0) {
        l->busy = false;
        schedule(l, l->retry_ms);
    }
}

static void on_timer(uv_timer_t *t)
{
    struct ebb_leader *l = t->data;
    if (l->leading && uv_now(l->loop) - l->last_renew_ms >= l->renew_ms)
        set_leading(l, false);
    try_acquire(l);
}

static void schedule(struct ebb_leader *l, uint64_t ms)
{
    if (!l->closing)
        uv_timer_start(&l->timer, on_timer, ms, 0);
}

int ebb_leader_create(uv_loop_t *loop, struct ebb_kube *kube, const struct ebb_leader_opts *o,
                      ebb_leader_fn fn, void *ud, struct ebb_leader **out)
{
    struct ebb_leader *l;
    char host[200] = "ebb", why[512];

    if (loop == NULL || kube == NULL || out == NULL)
        return EBB_EINVAL;
    if ((l = calloc(1, sizeof(*l))) == NULL)
        return EBB_ENOMEM;
    l->loop = loop;
    l->kube = kube;
    l->fn = fn;
    l->ud = ud;
    if (o && o->ns) {
        snprintf(l->ns, sizeof(l->ns), "%s", o->ns);
    } else if (ebb_self_namespace(l->ns, sizeof(l->ns), why, sizeof(why)) == 0) {
        /* in a pod, ebb's own namespace: its Role there is all it needs */
        ebb_log(EBB_LOG_INFO, "leader election: lease namespace %s (the service account's)", l->ns);
    } else {
        /* outside a pod, as upstream */
        snprintf(l->ns, sizeof(l->ns), "kube-system");
        ebb_log(EBB_LOG_DEBUG, "leader election: lease namespace kube-system (%s)", why);
    }
    snprintf(l->name, sizeof(l->name), "%s", o && o->name ? o->name : "descheduler");
    if (o && o->identity) {
        snprintf(l->identity, sizeof(l->identity), "%s", o->identity);
    } else {
        gethostname(host, sizeof(host) - 1);
        srand((unsigned)time(NULL) ^ (unsigned)getpid());
        snprintf(l->identity, sizeof(l->identity), "%s_%08x%08x", host, (unsigned)rand(), (unsigned)rand());
    }
    l->lease_ms = (uint64_t)((o && o->lease_s > 0 ? o->lease_s : 137) * 1000);
    l->renew_ms = (uint64_t)((o && o->renew_deadline_s > 0 ? o->renew_deadline_s : 107) * 1000);
    l->retry_ms = (uint64_t)((o && o->retry_s > 0 ? o->retry_s : 26) * 1000);
    uv_timer_init(loop, &l->timer);
    l->timer.data = l;
    *out = l;
    return 0;
}

void ebb_leader_start(struct ebb_leader *l)
{
    try_acquire(l);
}

bool ebb_leader_leading(const struct ebb_leader *l)
{
    return l->leading;
}

const char *ebb_leader_error(const struct ebb_leader *l)
{
    return l->error[0] ? l->error : NULL;
}

const char *ebb_leader_identity(const struct ebb_leader *l)
{
    return l->identity;
}

static void timer_closed(uv_handle_t *h)
{
    struct ebb_leader *l = h->data;
    void (*cb)(void *) = l->closed_cb;
    void *ud = l->closed_ud;
    free(l);
    if (cb)
        cb(ud);
}

static void finish_close(struct ebb_leader *l)
{
    uv_timer_stop(&l->timer);
    uv_close((uv_handle_t *)&l->timer, timer_closed);
}

static void after_release(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct ebb_leader *l = ud;
    (void)req;
    if (status != 200) {
        char what[600], told[1024];
        snprintf(what, sizeof(what), "leader election: releasing lease %s/%s", l->ns, l->name);
        ebb_kube_answer_text(what, status, body, len, told, sizeof(told));
        ebb_log(EBB_LOG_WARN, "%s", told);
    }
    finish_close(l);
}

void ebb_leader_close(struct ebb_leader *l, void (*cb)(void *ud), void *ud)
{
    bool was_leading = l->leading;
    struct ebb_kube_req *r = l->req;

    l->closed_cb = cb;
    l->closed_ud = ud;
    l->closing = true;
    l->req = NULL;
    if (r)
        ebb_kube_cancel(r);
    set_leading(l, false);
    if (was_leading && l->rv[0]) {
        char path[600];
        char *body = lease_body(l, "", false, l->transitions);
        struct ebb_kube_req_opts o = { .method = "PUT", .on_done = after_release, .ud = l };
        snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", l->ns, l->name);
        o.path = path;
        o.body = body;
        o.body_len = body ? strlen(body) : 0;
        if (body && ebb_kube_request(l->kube, &o, NULL) == 0) {
            free(body);
            return;
        }
        free(body);
    }
    finish_close(l);
}
