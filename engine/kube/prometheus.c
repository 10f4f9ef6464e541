/* The Prometheus metrics provider: instant queries on the loop, the bearer
 * token from a watched Secret, results as upstream judges them; see
 * include/ebb/prometheus.h.
 *
 * Sources: kubernetes-sigs/descheduler v0.36.0
 * pkg/framework/plugins/nodeutilization/usageclients.go
 * (NodeUsageFromPrometheusMetrics), pkg/descheduler/prom_client_controller.go
 * (the Secret and its key), pkg/descheduler/client/client.go, and the
 * error texts of prometheus/client_golang's api/prometheus/v1.
 */
#include <curl/curl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb.h"
#include "ebb/config.h"
#include "ebb/kube.h"
#include "ebb/prometheus.h"
#include "ebb/reload.h"

#define QUERY_PATH "/api/v1/query"
#define DEFAULT_TIMEOUT_MS 30000
#define SECRET_RETRY_MS 5000        /* after a failed GET or a watch that ended badly */
#define MAX_TOKEN 16384
#define SECRET_EVENT_MAX ((size_t)4 << 20)   /* a Secret is at most 1 MiB */

/* ---- the client ----------------------------------------------------------- */

struct query {
    struct ebb_prom *p;
    struct query *next;          /* in p->answered, waiting for the flush */
    struct ebb_kube_req *req;
    struct ebb_prom_result *result;
    char *query;
    int64_t time;
    ebb_prom_done_fn cb;
    void *ud;
    struct query *lnext, *lprev; /* in p->inflight */
};

struct ebb_prom {
    uv_loop_t *loop;
    char *url;                   /* for messages */
    struct ebb_kube *http;       /* the Prometheus server */
    long timeout_ms;
    /* the Secret */
    struct ebb_kube *kube;
    char *secret_ns, *secret_name;
    char *token;                 /* the Secret's, as last read */
    bool have_token;             /* always true without a Secret */
    bool secret_read;            /* the first GET of the Secret answered (true without one) */
    char *token_why;             /* why there is none */
    char *rv;                    /* resourceVersion to watch from */
    struct ebb_kube_req *secret_req;
    char *line;                  /* a watch event being received */
    size_t nline, capline;
    bool skipping;               /* the rest of an event too large */
    uv_timer_t retry_timer;      /* the next GET or WATCH */
    void (*on_token)(void *ud, bool have, const char *why);
    void *ud;
    /* answers handed out from the loop */
    uv_timer_t flush_timer;
    struct query *answered;
    struct query inflight;       /* list head */
    int closing;                 /* handles still to close, +1 for the http client */
    bool closed;
    void (*close_cb)(void *ud);
    void *close_ud;
};

static void query_free(struct query *q)
{
    if (q == NULL)
        return;
    ebb_prom_result_free(q->result);
    free(q->query);
    free(q);
}

static void on_flush(uv_timer_t *t)
{
    struct ebb_prom *p = t->data;
    struct query *q;

    while ((q = p->answered) != NULL) {
        struct ebb_prom_result *r = q->result;
        p->answered = q->next;
        q->result = NULL;
        q->cb(r, q->ud);
        query_free(q);
    }
}

/* Hand `r` to the query's callback from the loop, never from the caller. */
static void answer_later(struct query *q, struct ebb_prom_result *r)
{
    struct query **tail = &q->p->answered;

    q->result = r;
    q->next = NULL;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = q;
    uv_timer_start(&q->p->flush_timer, on_flush, 0, 0);
}

static void on_query_done(struct ebb_kube_req *req, int status, const char *body, size_t len,
                          void *ud)
{
    struct query *q = ud;
    struct ebb_prom *p = q->p;
    struct ebb_prom_result *r;
    (void)req;

    q->lprev->lnext = q->lnext;
    q->lnext->lprev = q->lprev;
    q->req = NULL;
    if (status < 0) {
        char msg[800];
        snprintf(msg, sizeof(msg), "Post \"%s%s\": %.*s", p->url, QUERY_PATH,
                 (int)(len > 600 ? 600 : len), body ? body : "");
        r = ebb_prom_result_parse(q->query, q->time, status, msg, strlen(msg));
    } else {
        r = ebb_prom_result_parse(q->query, q->time, status, body, len);
    }
    if (r == NULL)
        r = ebb_prom_result_failed(q->query, q->time, false, "out of memory");
    q->cb(r, q->ud);
    query_free(q);
}

int ebb_prom_query(struct ebb_prom *p, const char *query, int64_t time, ebb_prom_done_fn cb,
                   void *ud)
{
    struct ebb_kube_req_opts o = { .method = "POST", .path = QUERY_PATH,
                                   .content_type = "application/x-www-form-urlencoded",
                                   .on_done = on_query_done };
    struct query *q;
    char *esc = NULL, *body = NULL;
    char when[32];
    int rc = EBB_ENOMEM;

    if (p == NULL || query == NULL || cb == NULL)
        return EBB_EINVAL;
    if ((q = calloc(1, sizeof(*q))) == NULL || (q->query = strdup(query)) == NULL) {
        free(q);
        return EBB_ENOMEM;
    }
    q->p = p;
    q->time = time;
    q->cb = cb;
    q->ud = ud;
    if (p->closed || !p->have_token) {
        struct ebb_prom_result *r =
            p->closed ? ebb_prom_result_failed(query, time, true, "prometheus client is closing")
                      : ebb_prom_result_failed(query, time, true, "prometheus client not initialized "
                                                                  "(%s)", p->token_why);
        if (r == NULL)
            goto fail;
        answer_later(q, r);
        return 0;
    }
    snprintf(when, sizeof(when), "%lld", (long long)time);
    if ((esc = curl_easy_escape(NULL, query, (int)strlen(query))) == NULL ||
        asprintf(&body, "query=%s&time=%s", esc, when) < 0) {
        body = NULL;
        goto fail;
    }
    o.body = body;
    o.body_len = strlen(body);
    o.timeout_ms = p->timeout_ms;
    o.ud = q;
    q->lnext = p->inflight.lnext;
    q->lprev = &p->inflight;
    q->lnext->lprev = q;
    p->inflight.lnext = q;
    if ((rc = ebb_kube_request(p->http, &o, &q->req)) != 0) {
        q->lprev->lnext = q->lnext;
        q->lnext->lprev = q->lprev;
        goto fail;
    }
    curl_free(esc);
    free(body);
    return 0;
fail:
    curl_free(esc);
    free(body);
    query_free(q);
    return rc;
}

bool ebb_prom_ready(const struct ebb_prom *p)
{
    return p != NULL && p->have_token;
}

/* ---- the Secret ------------------------------------------------------------- */

static void secret_get(struct ebb_prom *p);
static void secret_watch(struct ebb_prom *p);

static void set_token(struct ebb_prom *p, const char *token, const char *why)
{
    bool had = p->have_token;

    if (token != NULL && token[0] != '\0') {
        char *copy;
        if (p->token != NULL && strcmp(p->token, token) == 0)
            return;   /* the same token: nothing to do (upstream compares too) */
        if ((copy = strdup(token)) == NULL || ebb_kube_set_token(p->http, token) != 0) {
            free(copy);
            return;
        }
        free(p->token);
        p->token = copy;
        p->have_token = true;
        free(p->token_why);
        p->token_why = NULL;
        ebb_log(EBB_LOG_INFO, "prometheus: authentication token %s from secret %s/%s",
                had ? "changed: re-read" : "read", p->secret_ns, p->secret_name);
    } else {
        bool news = had || p->token_why == NULL || strcmp(p->token_why, why) != 0;
        free(p->token);
        p->token = NULL;
        ebb_kube_set_token(p->http, NULL);
        p->have_token = false;
        free(p->token_why);
        p->token_why = strdup(why);
        if (news)   /* once per reason, not at every retry */
            ebb_log(EBB_LOG_WARN, "prometheus: no authentication token: %s", why);
    }
    if (p->on_token != NULL)
        p->on_token(p->ud, p->have_token, why);
}

/* The version to watch from, when it is one ebb can send back whole (a
 * resourceVersion of a real server is a number of a few digits). */
static void take_rv(struct ebb_prom *p, const cJSON *rv)
{
    if (!cJSON_IsString(rv) || rv->valuestring[0] == '\0' || strlen(rv->valuestring) > 127)
        return;
    free(p->rv);
    p->rv = strdup(rv->valuestring);
}

/* The token in a Secret object (the JSON the API answers), or the reason
 * there is none. */
static void take_secret(struct ebb_prom *p, const cJSON *obj)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(obj, "data");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, EBB_PROM_TOKEN_KEY);
    char why[256], *tok = NULL;

    take_rv(p, rv);
    snprintf(why, sizeof(why), "prometheus authentication token secret %s/%s missing \"%s\" data "
             "or empty", p->secret_ns, p->secret_name, EBB_PROM_TOKEN_KEY);
    if (cJSON_IsString(v) && ebb_base64_decode(v->valuestring, strlen(v->valuestring), &tok) == 0 &&
        tok[0] != '\0' && ebb_kube_token_ok(tok, strlen(tok)) && strlen(tok) < MAX_TOKEN) {
        set_token(p, tok, NULL);
    } else {
        if (cJSON_IsString(v) && tok == NULL)
            snprintf(why, sizeof(why), "secret %s/%s: \"%s\" is not base64", p->secret_ns,
                     p->secret_name, EBB_PROM_TOKEN_KEY);
        else if (tok != NULL && tok[0] != '\0')
            /* a newline, a NUL or a space would break the request's headers */
            snprintf(why, sizeof(why), "secret %s/%s: \"%s\" is not a bearer token (at most %d "
                     "characters of visible ASCII)", p->secret_ns, p->secret_name,
                     EBB_PROM_TOKEN_KEY, MAX_TOKEN - 1);
        set_token(p, NULL, why);
    }
    free(tok);
}

static void on_retry(uv_timer_t *t)
{
    struct ebb_prom *p = t->data;
    if (p->rv != NULL)
        secret_watch(p);
    else
        secret_get(p);
}

static void retry_later(struct ebb_prom *p, bool relist)
{
    if (p->closed)
        return;
    if (relist) {
        free(p->rv);
        p->rv = NULL;
    }
    uv_timer_start(&p->retry_timer, on_retry, SECRET_RETRY_MS, 0);
}

static void on_secret_get(struct ebb_kube_req *req, int status, const char *body, size_t len,
                          void *ud)
{
    struct ebb_prom *p = ud;
    cJSON *j;
    char why[512];
    (void)req;

    p->secret_req = NULL;
    if (p->closed)
        return;
    p->secret_read = true;
    if (status == 404) {
        snprintf(why, sizeof(why), "unable to get %s/%s secret", p->secret_ns, p->secret_name);
        set_token(p, NULL, why);
        /* watch for it to come: the watch needs a version, the GET gives
         * none for a missing object; look again */
        retry_later(p, true);
        return;
    }
    if (status != 200 || (j = cJSON_ParseWithLength(body, len)) == NULL) {
        char what[600], told[1024];
        snprintf(what, sizeof(what), "prometheus: GET secret %s/%s", p->secret_ns, p->secret_name);
        ebb_kube_answer_text(what, status, body, len, told, sizeof(told));
        ebb_log(EBB_LOG_WARN, "%s", told);
        if (!p->have_token && p->token_why == NULL) {
            snprintf(why, sizeof(why), "unable to get %s/%s secret", p->secret_ns, p->secret_name);
            set_token(p, NULL, why);
        }
        retry_later(p, true);
        return;
    }
    take_secret(p, j);
    cJSON_Delete(j);
    secret_watch(p);
}

static void secret_get(struct ebb_prom *p)
{
    char path[600];
    struct ebb_kube_req_opts o = { .method = "GET", .path = path, .on_done = on_secret_get,
                                   .ud = p };

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s", p->secret_ns, p->secret_name);
    if (ebb_kube_request(p->kube, &o, &p->secret_req) != 0)
        retry_later(p, true);
}

static void on_event(struct ebb_prom *p, const char *line, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(line, len);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(j, "object");

    if (!cJSON_IsString(type)) {
        ebb_log(EBB_LOG_WARN, "prometheus: the secret watch sent what is not an event");
    } else if (strcmp(type->valuestring, "ADDED") == 0 ||
               strcmp(type->valuestring, "MODIFIED") == 0) {
        take_secret(p, obj);
    } else if (strcmp(type->valuestring, "DELETED") == 0) {
        char why[512];
        take_rv(p, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                                    "resourceVersion"));
        snprintf(why, sizeof(why), "unable to get %s/%s secret", p->secret_ns, p->secret_name);
        set_token(p, NULL, why);
    } else if (strcmp(type->valuestring, "BOOKMARK") == 0) {
        take_rv(p, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                                    "resourceVersion"));
    } else if (strcmp(type->valuestring, "ERROR") == 0) {
        /* 410 Gone: the version expired; read the Secret afresh */
        free(p->rv);
        p->rv = NULL;
    }
    cJSON_Delete(j);
}

/* Event lines of the Secret's watch; one longer than SECRET_EVENT_MAX is
 * no Secret ebb wants: skipped to its end, the rest goes on. */
static void on_watch_data(struct ebb_kube_req *req, const char *data, size_t len, void *ud)
{
    struct ebb_prom *p = ud;
    (void)req;

    for (size_t i = 0; i < len; i++) {
        if (data[i] == '\n') {
            if (p->nline > 0 && !p->skipping)
                on_event(p, p->line, p->nline);
            p->nline = 0;
            p->skipping = false;
            continue;
        }
        if (p->skipping)
            continue;
        if (p->nline + 1 >= p->capline) {
            size_t cap = p->capline ? p->capline * 2 : 4096;
            char *l;
            if (cap > SECRET_EVENT_MAX || (l = realloc(p->line, cap)) == NULL) {
                ebb_log(EBB_LOG_WARN, "prometheus: a watch event of secret %s/%s larger than %zu "
                        "bytes: skipped", p->secret_ns, p->secret_name, (size_t)SECRET_EVENT_MAX);
                p->nline = 0;
                p->skipping = true;
                continue;
            }
            p->line = l;
            p->capline = cap;
        }
        p->line[p->nline++] = data[i];
    }
}

static void on_watch_done(struct ebb_kube_req *req, int status, const char *body, size_t len,
                          void *ud)
{
    struct ebb_prom *p = ud;
    (void)req;
    (void)len;

    p->secret_req = NULL;
    p->nline = 0;
    p->skipping = false;
    if (p->closed)
        return;
    if (status == 410)
        retry_later(p, true);
    else if (status == 200 && p->rv != NULL)
        secret_watch(p);   /* the server ended the watch (timeoutSeconds): go on */
    else {
        if (status != 200) {
            char what[600], told[1024];
            snprintf(what, sizeof(what), "prometheus: WATCH secret %s/%s", p->secret_ns, p->secret_name);
            ebb_kube_answer_text(what, status, body, len, told, sizeof(told));
            ebb_log(EBB_LOG_WARN, "%s", told);
        }
        retry_later(p, p->rv == NULL);
    }
}

static void secret_watch(struct ebb_prom *p)
{
    char path[900];
    struct ebb_kube_req_opts o = { .method = "GET", .path = path, .stream = true,
                                   .on_data = on_watch_data, .on_done = on_watch_done, .ud = p };

    char *rv;

    if (p->rv == NULL) {
        secret_get(p);
        return;
    }
    /* the server's text goes into the URL escaped */
    if ((rv = curl_easy_escape(NULL, p->rv, 0)) == NULL) {
        retry_later(p, false);
        return;
    }
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/%s/secrets?watch=1&fieldSelector=metadata.name%%3D%s"
             "&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=300",
             p->secret_ns, p->secret_name, rv);
    curl_free(rv);
    if (ebb_kube_request(p->kube, &o, &p->secret_req) != 0)
        retry_later(p, false);
}

/* ---- life cycle --------------------------------------------------------------- */

static void free_prom(struct ebb_prom *p)
{
    free(p->url);
    free(p->secret_ns);
    free(p->secret_name);
    free(p->token_why);
    free(p->token);
    free(p->rv);
    free(p->line);
    free(p);
}

static void closed_one(struct ebb_prom *p)
{
    if (--p->closing > 0)
        return;
    if (p->close_cb != NULL)
        p->close_cb(p->close_ud);
    free_prom(p);
}

static void closed_handle(uv_handle_t *h)
{
    closed_one(h->data);
}

static void closed_http(void *ud)
{
    closed_one(ud);
}

int ebb_prom_create(uv_loop_t *loop, const struct ebb_prom_opts *o, struct ebb_prom **out,
                    struct ebb_error *err)
{
    struct ebb_kube_config cfg = { 0 };
    struct ebb_kube_opts ko = { .max_retries = 2 };
    struct ebb_prom *p;
    size_t n;
    int rc;

    if (loop == NULL || o == NULL || o->url == NULL || out == NULL)
        return ebb_error_set(err, EBB_EINVAL, NULL, 0, NULL, "no Prometheus URL");
    if ((o->secret_name != NULL) != (o->secret_namespace != NULL) ||
        (o->secret_name != NULL && o->kube == NULL))
        return ebb_error_set(err, EBB_EINVAL, NULL, 0, NULL,
                             "a token Secret needs a namespace, a name and an API client");
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
    p->loop = loop;
    p->inflight.lnext = p->inflight.lprev = &p->inflight;
    p->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
    p->on_token = o->on_token;
    p->ud = o->ud;
    p->have_token = p->secret_read = o->secret_name == NULL;
    if ((p->url = strdup(o->url)) == NULL)
        goto nomem;
    n = strlen(p->url);
    while (n > 0 && p->url[n - 1] == '/')
        p->url[--n] = '\0';   /* request paths start with '/' */
    if (o->secret_name != NULL &&
        ((p->secret_ns = strdup(o->secret_namespace)) == NULL ||
         (p->secret_name = strdup(o->secret_name)) == NULL ||
         asprintf(&p->token_why, "secret %s/%s not read yet", o->secret_namespace,
                  o->secret_name) < 0))
        goto nomem;
    cfg.server = p->url;
    cfg.token = o->secret_name == NULL ? (char *)o->token : NULL;
    cfg.token_file = o->secret_name == NULL ? (char *)o->token_file : NULL;
    cfg.ca_file = (char *)o->ca_file;
    ko.timeout_ms = p->timeout_ms;
    if ((rc = ebb_kube_create(loop, &cfg, &ko, &p->http, err)) != 0) {
        free_prom(p);
        return rc;
    }
    uv_timer_init(loop, &p->flush_timer);
    uv_timer_init(loop, &p->retry_timer);
    p->flush_timer.data = p->retry_timer.data = p;
    p->kube = o->kube;
    if (p->secret_name != NULL)
        secret_get(p);
    *out = p;
    return 0;
nomem:
    free_prom(p);
    return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
}

void ebb_prom_close(struct ebb_prom *p, void (*cb)(void *ud), void *ud)
{
    struct query *q;

    if (p == NULL || p->closed)
        return;
    p->closed = true;
    p->close_cb = cb;
    p->close_ud = ud;
    if (p->secret_req != NULL)
        ebb_kube_cancel(p->secret_req);
    /* answers not handed out yet go now, then what is in flight (its
     * on_done runs inside the close with "cancelled") */
    on_flush(&p->flush_timer);
    while ((q = p->inflight.lnext) != &p->inflight)
        ebb_kube_cancel(q->req);
    p->closing = 3;
    uv_close((uv_handle_t *)&p->flush_timer, closed_handle);
    uv_close((uv_handle_t *)&p->retry_timer, closed_handle);
    ebb_kube_close(p->http, closed_http, p);
}

/* ---- one round on a loop of our own ------------------------------------------ */

struct slot {
    size_t *left;
    struct ebb_prom_result **to;
};

static void slot_done(struct ebb_prom_result *r, void *ud)
{
    struct slot *s = ud;
    *s->to = r;
    (*s->left)--;
}

static void noop_closed(void *ud)
{
    *(bool *)ud = true;
}

int ebb_prom_query_all(uv_loop_t *loop, const struct ebb_prom_opts *o, const char *const *queries,
                       size_t n, int64_t time, struct ebb_prom_result **out)
{
    uv_loop_t own;
    struct ebb_prom *p = NULL;
    size_t left = 0;
    struct slot *slots = NULL;
    struct ebb_error err = { 0 };
    bool closed = false;
    int rc = 0;

    if (o == NULL || (n > 0 && (queries == NULL || out == NULL)))
        return EBB_EINVAL;
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (n == 0)
        return 0;
    if (loop == NULL) {
        if (uv_loop_init(&own) != 0)
            return EBB_ENOMEM;
        loop = &own;
    }
    if ((slots = calloc(n, sizeof(*slots))) == NULL) {
        rc = EBB_ENOMEM;
        goto done;
    }
    if ((rc = ebb_prom_create(loop, o, &p, &err)) != 0) {
        for (size_t i = 0; i < n; i++)
            out[i] = ebb_prom_result_failed(queries[i], time, true, "prometheus client not "
                                            "initialized: %s", err.msg);
        rc = 0;
        goto done;
    }
    /* with a Secret, wait for its first answer before asking */
    while (!p->secret_read && uv_run(loop, UV_RUN_ONCE) != 0)
        ;
    for (size_t i = 0; i < n; i++) {
        slots[i] = (struct slot){ &left, &out[i] };
        left++;
        if (ebb_prom_query(p, queries[i], time, slot_done, &slots[i]) != 0) {
            left--;
            out[i] = ebb_prom_result_failed(queries[i], time, false, "out of memory");
        }
    }
    while (left > 0 && uv_run(loop, UV_RUN_ONCE) != 0)
        ;
    ebb_prom_close(p, noop_closed, &closed);
    while (!closed && uv_run(loop, UV_RUN_ONCE) != 0)
        ;
done:
    free(slots);
    if (loop == &own) {
        uv_run(loop, UV_RUN_DEFAULT);
        uv_loop_close(loop);
    }
    for (size_t i = 0; i < n; i++)
        if (out[i] == NULL)
            out[i] = ebb_prom_result_failed(queries[i], time, false, "no answer");
    return rc;
}

/* ---- ebb run: the policy's provider, answering the engine ---------------------- */

#define POD_CA_FILE "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"

struct ebb_prom_live {
    uv_loop_t *loop;
    struct ebb_kube *kube;
    const struct ebb_kube_config *kc;
    void (*answer)(void *ud, struct ebb_prom_result *r);
    void *ud;
    struct ebb_prom *client;     /* NULL: the policy has no Prometheus provider */
    char *sig;                   /* url, secret: what the client was made for */
    int closing;
    void (*close_cb)(void *ud);
    void *close_ud;
};

static void live_done(struct ebb_prom_result *r, void *ud)
{
    struct ebb_prom_live *l = ud;

    l->answer(l->ud, r);
}

int ebb_prom_live_query(struct ebb_prom_live *l, const char *query, int64_t time,
                        struct ebb_prom_result **now)
{
    if (l == NULL || l->client == NULL) {
        *now = ebb_prom_result_failed(query, time, true, "prometheus client not initialized");
        return 0;
    }
    if (ebb_prom_query(l->client, query, time, live_done, l) != 0) {
        *now = ebb_prom_result_failed(query, time, false, "out of memory");
        return 0;
    }
    return EBB_CYCLE_WAITING;
}

static void old_client_closed(void *ud)
{
    (void)ud;
}

int ebb_prom_live_policy(struct ebb_prom_live *l, const struct ebb_policy *pol)
{
    const struct ebb_metrics_provider *mp = ebb_prom_provider(pol);
    struct ebb_prom_opts o = { 0 };
    struct ebb_error err = { 0 };
    bool in_cluster = l->kc != NULL && l->kc->source != NULL &&
                      strcmp(l->kc->source, "in-cluster") == 0;
    char *sig = NULL;
    int rc;

    if (mp != NULL && asprintf(&sig, "%s\n%s\n%s", mp->prometheus_url,
                               mp->secret_namespace ? mp->secret_namespace : "",
                               mp->secret_name ? mp->secret_name : "") < 0)
        return EBB_ENOMEM;
    if ((sig == NULL && l->sig == NULL) || (sig != NULL && l->sig != NULL && strcmp(sig, l->sig) == 0)) {
        free(sig);
        return 0;   /* the same provider: the client (and its token) stays */
    }
    if (l->client != NULL)
        ebb_prom_close(l->client, old_client_closed, NULL);
    l->client = NULL;
    free(l->sig);
    l->sig = sig;
    if (mp == NULL)
        return 0;
    o.url = mp->prometheus_url;
    o.secret_namespace = mp->secret_namespace;
    o.secret_name = mp->secret_name;
    o.kube = l->kube;
    /* without authToken upstream sends the service account's token, and it
     * trusts the pod's CA bundle (client.CreatePrometheusClient) */
    if (mp->secret_name == NULL && in_cluster) {
        o.token = l->kc->token;
        o.token_file = l->kc->token_file;
    }
    if (in_cluster && access(POD_CA_FILE, R_OK) == 0)
        o.ca_file = POD_CA_FILE;
    if ((rc = ebb_prom_create(l->loop, &o, &l->client, &err)) != 0) {
        ebb_log(EBB_LOG_ERROR, "prometheus: %s", err.msg);
        return rc;
    }
    ebb_log(EBB_LOG_INFO, "prometheus: queries go to %s%s%s%s", mp->prometheus_url,
            mp->secret_name ? ", token from secret " : "", mp->secret_name ? mp->secret_namespace : "",
            mp->secret_name ? "/..." : "");
    return 0;
}

int ebb_prom_live_create(uv_loop_t *loop, struct ebb_kube *kube, const struct ebb_kube_config *kc,
                         const struct ebb_policy *pol,
                         void (*answer)(void *ud, struct ebb_prom_result *r), void *ud,
                         struct ebb_prom_live **out)
{
    struct ebb_prom_live *l;
    int rc;

    if (loop == NULL || pol == NULL || answer == NULL || out == NULL)
        return EBB_EINVAL;
    if ((l = calloc(1, sizeof(*l))) == NULL)
        return EBB_ENOMEM;
    *l = (struct ebb_prom_live){ .loop = loop, .kube = kube, .kc = kc, .answer = answer, .ud = ud };
    if ((rc = ebb_prom_live_policy(l, pol)) != 0 && rc == EBB_ENOMEM) {
        free(l);
        return rc;
    }
    *out = l;
    return 0;
}

bool ebb_prom_live_synced(const struct ebb_prom_live *l)
{
    return l == NULL || l->client == NULL || l->client->secret_read;
}

static void live_closed(void *ud)
{
    struct ebb_prom_live *l = ud;

    if (l->close_cb != NULL)
        l->close_cb(l->close_ud);
    free(l->sig);
    free(l);
}

void ebb_prom_live_close(struct ebb_prom_live *l, void (*cb)(void *ud), void *ud)
{
    if (l == NULL) {
        if (cb != NULL)
            cb(ud);
        return;
    }
    l->close_cb = cb;
    l->close_ud = ud;
    if (l->client == NULL) {
        live_closed(l);
        return;
    }
    ebb_prom_close(l->client, live_closed, l);
}
