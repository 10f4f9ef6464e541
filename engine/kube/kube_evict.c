/* Live evictions: the Eviction API's request, an evict plugin's request,
 * their answers, and the Events. See include/ebb/kube_evict.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "ebb/kube_evict.h"
#include "ebb/self.h"

/* What the API server accepts in an events.k8s.io/v1 Event
 * (ValidateEventCreate): a note of at most 1 KiB (ebb keeps it under),
 * reason, action and reportingInstance of at most 128 bytes. */
#define NOTE_MAX 1023
#define EVENT_FIELD_MAX 128
/* What a note is composed in before it is escaped and cut to NOTE_MAX. */
#define NOTE_RAW 4096

struct ebb_kube_evict {
    struct ebb_kube *kube;
    const struct ebb_engine *engine;   /* NULL: no background evictions, no failure Events */
    ebb_kube_evict_done_fn done;
    void *ud;
    char *identity;               /* NULL: "ebb" (or the pod, for ebb's own Events) */
};

/* ---- paths ------------------------------------------------------------------ */

/* ---- bodies ------------------------------------------------------------------ */

static void micro_time(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%06dZ", (int)(ts.tv_nsec / 1000) % 1000000);
}

/* An Event's name as client-go's recorder makes it: the object's name, a
 * dot, the time in nanoseconds in hex (generateName would not do: it
 * must itself be a valid name, and "pod." is not). */
static void event_name(char *buf, size_t len, const char *object)
{
    struct timespec ts;
    int n;

    clock_gettime(CLOCK_REALTIME, &ts);
    /* a name cut to 200 must still end in a letter or digit: "x-." is no
     * DNS subdomain, and the API server would refuse the Event */
    n = snprintf(buf, len, "%.200s", object);
    while (n > 1 && (buf[n - 1] == '-' || buf[n - 1] == '.'))
        n--;
    snprintf(buf + n, len - (size_t)n, ".%llx",
             (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
}

/* A text of an Event, escaped for a line and cut to `cap` - 1 bytes with an
 * ellipsis: whatever a script, an object or a server put in it, it is
 * UTF-8 the API server keeps as it is (it would turn bytes that are not into
 * U+FFFD, three bytes each, past the limit), one line in kubectl's output,
 * and within the limit of its field. */
static void event_text(char *buf, size_t cap, const char *s)
{
    ebb_escape(buf, cap, s ? s : "", s ? strlen(s) : 0, EBB_ESC_LINE);
}

char *ebb_kube_event_body(const struct ebb_kube_event *e)
{
    char now[64], name[256], note[NOTE_MAX + 1], reason[EVENT_FIELD_MAX + 1],
        action[EVENT_FIELD_MAX + 1], instance[EVENT_FIELD_MAX + 1];
    cJSON *o, *meta, *reg;
    char *body;

    if ((o = cJSON_CreateObject()) == NULL)
        return NULL;
    micro_time(now, sizeof(now));
    event_name(name, sizeof(name), e->name);
    /* the Event's texts go through here, and only here */
    event_text(note, sizeof(note), e->note);
    event_text(reason, sizeof(reason), e->reason);
    event_text(action, sizeof(action), e->action);
    event_text(instance, sizeof(instance), e->instance ? e->instance : "ebb");
    cJSON_AddStringToObject(o, "apiVersion", "events.k8s.io/v1");
    cJSON_AddStringToObject(o, "kind", "Event");
    meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(meta, "name", name);
    cJSON_AddStringToObject(meta, "namespace", e->ns ? e->ns : "default");
    cJSON_AddStringToObject(o, "eventTime", now);
    cJSON_AddStringToObject(o, "reportingController", "ebb");
    cJSON_AddStringToObject(o, "reportingInstance", instance);
    cJSON_AddStringToObject(o, "action", action);
    cJSON_AddStringToObject(o, "reason", reason);
    cJSON_AddStringToObject(o, "type", e->type);
    cJSON_AddStringToObject(o, "note", note);
    reg = cJSON_AddObjectToObject(o, "regarding");
    cJSON_AddStringToObject(reg, "apiVersion", e->api_version ? e->api_version : "v1");
    cJSON_AddStringToObject(reg, "kind", e->kind ? e->kind : "Pod");
    if (e->ns)
        cJSON_AddStringToObject(reg, "namespace", e->ns);
    cJSON_AddStringToObject(reg, "name", e->name);
    if (e->uid)
        cJSON_AddStringToObject(reg, "uid", e->uid);
    body = ebb_json_print(o, false);
    cJSON_Delete(o);
    return body;
}

/* The Eviction's "reason" annotation holds the strategy's reason (at most
 * 1 KiB, lua_ebb.c) and who asked, escaped for a line: whole, even when
 * every byte becomes a four-byte escape. */
#define REASON_RAW 2048
#define REASON_ANNOTATION_MAX (4 * REASON_RAW)

char *ebb_kube_eviction_body(const struct ebb_eviction *ev)
{
    char raw[REASON_RAW], reason[REASON_ANNOTATION_MAX];
    cJSON *o, *meta, *ann, *del;
    char *body;
    int n;

    n = snprintf(raw, sizeof(raw), "triggered by %s/%s%s%s", ev->profile, ev->plugin,
                 ev->reason ? ": " : "", ev->reason ? ev->reason : "");
    /* a reason cut in raw is longer than reason holds: it is cut again, with the ellipsis */
    ebb_escape(reason, sizeof(reason), raw, n < 0 ? 0 : (size_t)n >= sizeof(raw) ? sizeof(raw) - 1 : (size_t)n,
               EBB_ESC_LINE);
    if ((o = cJSON_CreateObject()) == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "apiVersion", "policy/v1");
    cJSON_AddStringToObject(o, "kind", "Eviction");
    meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(meta, "name", ev->name);
    cJSON_AddStringToObject(meta, "namespace", ev->ns);
    ann = cJSON_AddObjectToObject(meta, "annotations");
    cJSON_AddStringToObject(ann, "reason", reason);
    cJSON_AddStringToObject(ann, "requested-by", "ebb");
    if (ev->grace_period >= 0) {
        del = cJSON_AddObjectToObject(o, "deleteOptions");
        cJSON_AddNumberToObject(del, "gracePeriodSeconds", (double)ev->grace_period);
    }
    body = ebb_json_print(o, false);
    cJSON_Delete(o);
    return body;
}

/* ---- answers ------------------------------------------------------------------ */

int ebb_kube_evict_outcome(const struct ebb_eviction *ev, int status, const char *body, size_t len,
                           char *msg, size_t msglen)
{
    bool creating = ev->method != NULL && strcmp(ev->method, "POST") == 0;

    /* the API server answers some refusals with 201 and a Status body of
     * "Failure" (a pod with more than one PodDisruptionBudget: code 500) */
    if ((status == 200 || status == 201) && body != NULL) {
        cJSON *j = cJSON_ParseWithLength(body, len);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "code");
        if (cJSON_IsString(st) && strcmp(st->valuestring, "Failure") == 0)
            status = cJSON_IsNumber(code) && code->valueint >= 400 ? code->valueint : 500;
        cJSON_Delete(j);
    }
    if (status >= 200 && status < 300) {
        if (msglen)
            msg[0] = '\0';
        return EBB_WHY_OK;
    }
    ebb_kube_status_message(status, body, len, msg, msglen);
    /* 429 is a budget's refusal for the Eviction API only; to an evict
     * plugin's request it is throttling, an API error. A 404 to a create
     * is a resource the cluster does not serve, not a pod gone. */
    return status == 429 && ev->method == NULL ? EBB_WHY_PDB
           : status == 404 && !creating        ? EBB_WHY_NOT_FOUND
                                               : EBB_WHY_API_ERROR;
}

/* ---- the evictor ----------------------------------------------------------------- */

int ebb_kube_evict_create(struct ebb_kube *kube, const struct ebb_engine *engine,
                          ebb_kube_evict_done_fn done, void *ud, struct ebb_kube_evict **out)
{
    struct ebb_kube_evict *ke;

    if (kube == NULL || done == NULL || out == NULL)
        return EBB_EINVAL;
    if ((ke = calloc(1, sizeof(*ke))) == NULL)
        return EBB_ENOMEM;
    ke->kube = kube;
    ke->engine = engine;
    ke->done = done;
    ke->ud = ud;
    *out = ke;
    return 0;
}

void ebb_kube_evict_destroy(struct ebb_kube_evict *ke)
{
    if (ke == NULL)
        return;
    free(ke->identity);
    free(ke);
}

int ebb_kube_evict_set_identity(struct ebb_kube_evict *ke, const char *identity)
{
    char *copy = identity ? strdup(identity) : NULL;

    if (identity != NULL && copy == NULL)
        return EBB_ENOMEM;
    free(ke->identity);
    ke->identity = copy;
    return 0;
}

static void on_event_done(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    char msg[300];
    (void)req;

    /* an Event about a pod evicted is a courtesy (debug); one about ebb
     * itself (ud set) is how a failed reload is seen: say why it is not */
    if (status != 201 && status != 200) {
        ebb_kube_answer_text("event not recorded", status, body, len, msg, sizeof(msg));
        ebb_log(ud ? EBB_LOG_WARN : EBB_LOG_DEBUG, "%s", msg);
    }
}

static void post_event(struct ebb_kube_evict *ke, const struct ebb_kube_event *e, bool self)
{
    char path[512];
    char *body = ebb_kube_event_body(e);
    struct ebb_kube_req_opts ro = { .method = "POST", .write = true, .on_done = on_event_done };

    if (body == NULL)
        return;
    snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events",
             e->ns ? e->ns : "default");
    ro.path = path;
    ro.body = body;
    ro.body_len = strlen(body);
    ro.ud = self ? ke : NULL;
    ebb_kube_request(ke->kube, &ro, NULL);
    free(body);
}

void ebb_kube_evict_event(struct ebb_kube_evict *ke, const struct ebb_kube_event *e)
{
    if (ke != NULL && e != NULL && e->name != NULL && e->name[0] != '\0')
        post_event(ke, e, false);
}

/* Normal "Descheduled" by the plugin on the pod, or a Warning when the
 * eviction failed (evictionFailureEventNotification). With an evict
 * plugin, the note says what it did: "(DeleteEvictor: delete)". */
static void pod_event(struct ebb_kube_evict *ke, const struct ebb_eviction *ev, bool ok,
                      const char *error)
{
    char note[NOTE_RAW];   /* cut to what the API takes, with an ellipsis: ebb_kube_event_body */
    struct ebb_kube_event e = {
        .ns = ev->ns, .name = ev->name, .uid = ev->uid, .type = ok ? "Normal" : "Warning",
        .reason = ok ? (ev->plugin ? ev->plugin : "NotSet") : "EvictionFailed",
        .action = "Descheduled", .note = note, .instance = ke->identity,
    };

    snprintf(note, sizeof(note), "pod eviction from %s node by ebb%s%s%s%s%s%s%s",
             ev->node ? ev->node : "", ev->evictor ? " (" : "", ev->evictor ? ev->evictor : "",
             ev->evictor ? ": " : "", ev->evictor ? ev->action : "", ev->evictor ? ")" : "",
             ok ? "" : " failed: ", ok ? "" : (error ? error : ""));
    post_event(ke, &e, false);
}

void ebb_kube_evict_self_event(struct ebb_kube_evict *ke, const char *type, const char *reason,
                               const char *note)
{
    static bool told;
    char ns[64], pod[254], why[512];
    /* the note is cut to what the API takes, with an ellipsis: ebb_kube_event_body */
    struct ebb_kube_event e = { .ns = ns, .name = pod, .type = type, .reason = reason,
                                .action = reason, .note = note };

    if (ke == NULL)
        return;
    /* ebb's own pod is found in one place (ebb_self_pod); when there is
     * none, the log says why once, and the log line of the event stands */
    if (ebb_self_pod(ns, sizeof(ns), pod, sizeof(pod), why, sizeof(why)) != 0) {
        if (!told)
            ebb_log(EBB_LOG_WARN, "no Event about ebb can be posted (%s): %s", reason, why);
        told = true;
        return;
    }
    e.instance = ke->identity ? ke->identity : pod;
    post_event(ke, &e, true);
}

struct inflight {
    struct ebb_kube_evict *ke;
    struct ebb_eviction *ev;
};

static void on_evicted(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct inflight *f = ud;
    struct ebb_kube_evict *ke = f->ke;
    struct ebb_eviction *ev = f->ev;
    char msg[768];
    int why;
    (void)req;

    free(f);
    why = ebb_kube_evict_outcome(ev, status, body, len, msg, sizeof(msg));
    if (why == EBB_WHY_OK) {
        ebb_log(EBB_LOG_INFO, "evicted pod %s/%s from %s (%s%s%s%s%s)", ev->ns, ev->name,
                ev->node ? ev->node : "-", ev->plugin, ev->evictor ? "; " : "",
                ev->evictor ? ev->evictor : "", ev->evictor ? ": " : "", ev->evictor ? ev->action : "");
        pod_event(ke, ev, true, NULL);
    } else if (ke->engine != NULL && ebb_engine_eviction_in_background(ke->engine, ev, status, msg)) {
        why = EBB_WHY_BACKGROUND;
        ebb_log(EBB_LOG_INFO, "eviction in background of pod %s/%s (%s): %s", ev->ns, ev->name, ev->plugin,
                msg);
    } else {
        const struct ebb_policy *pol = ke->engine ? ebb_engine_policy(ke->engine) : NULL;
        char told[sizeof(msg) + 16];
        /* msg is the answer's text already: only its status is added, and
         * a transport failure shows none */
        if (status < 0)
            snprintf(told, sizeof(told), "%s", msg);
        else
            snprintf(told, sizeof(told), "%d %s", status, msg);
        ebb_log(EBB_LOG_WARN, "error evicting pod %s/%s (%s%s%s): %s", ev->ns, ev->name, ev->plugin,
                ev->evictor ? "; " : "", ev->evictor ? ev->action : "", told);
        if (pol != NULL && pol->eviction_failure_events && why != EBB_WHY_NOT_FOUND)
            pod_event(ke, ev, false, msg);
    }
    ke->done(ke->ud, ev, why, msg);
}

int ebb_kube_evict_start(void *ud, struct ebb_eviction *ev)
{
    struct ebb_kube_evict *ke = ud;
    struct inflight *f;
    char path[600];
    char *body = NULL;
    struct ebb_kube_req_opts ro = { .method = "POST", .write = true, .on_done = on_evicted };
    int rc;

    if ((f = malloc(sizeof(*f))) == NULL)
        return EBB_WHY_API_ERROR;
    f->ke = ke;
    f->ev = ev;
    ro.ud = f;
    if (ev->method != NULL) {
        /* the request the profile's evict plugin chose (engine/lua/lua_evictor.c) */
        ro.method = ev->method;
        ro.path = ev->path;
        ro.body = ev->body;
        ro.body_len = ev->body ? strlen(ev->body) : 0;
        ro.content_type = ev->content_type;
    } else {
        if ((body = ebb_kube_eviction_body(ev)) == NULL ||
            ebb_api_pod_path(path, sizeof(path) - 9, ev->ns, ev->name) != 0) {
            free(body);
            free(f);
            return EBB_WHY_API_ERROR;
        }
        strcat(path, "/eviction");
        ro.path = path;
        ro.body = body;
        ro.body_len = strlen(body);
    }
    rc = ebb_kube_request(ke->kube, &ro, NULL);
    free(body);
    if (rc != 0) {
        free(f);
        return EBB_WHY_API_ERROR;
    }
    return 0;
}
