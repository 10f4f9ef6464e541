/* serve_api.c: the API surface of `ebb serve`. Answers (metav1.Status with
 * the API server's reasons and words), discovery (/version, /api, /apis and
 * their resource lists), the routes of a request path, and the httpd
 * handler: health checks, the injected faults (--fail-fraction,
 * --latency-ms), then dispatch to the read and write handlers.
 *
 * Called on the loop thread by the httpd (ebb__serve_request) and by the
 * handlers for their answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve/serve_int.h"

/* ---- answers -------------------------------------------------------------------- */

void ebb__reply_text(struct ebb_http_req *r, int code, const char *text)
{
    ebb_http_respond(r, code, JSON, text, strlen(text));
}

/* A metav1.Status. `details` (owned, may be NULL). */
void ebb__reply_status(struct ebb_http_req *r, int code, const char *reason, const char *msg,
                       cJSON *details)
{
    cJSON *st = cJSON_CreateObject();
    char *text;

    cJSON_AddStringToObject(st, "kind", "Status");
    cJSON_AddStringToObject(st, "apiVersion", "v1");
    cJSON_AddObjectToObject(st, "metadata");
    cJSON_AddStringToObject(st, "status", code < 400 ? "Success" : "Failure");
    if (msg != NULL)
        cJSON_AddStringToObject(st, "message", msg);
    if (reason != NULL)
        cJSON_AddStringToObject(st, "reason", reason);
    if (details != NULL)
        cJSON_AddItemToObject(st, "details", details);
    if (code != 200)   /* a delete's Success leaves the code to the HTTP status */
        cJSON_AddNumberToObject(st, "code", code);
    text = cJSON_PrintUnformatted(st);
    cJSON_Delete(st);
    if (text == NULL) {
        ebb_http_respond(r, 500, NULL, NULL, 0);
        return;
    }
    ebb__reply_text(r, code, text);
    free(text);
}

cJSON *ebb__reply_details(const struct rdef *d, const char *name)
{
    cJSON *det = cJSON_CreateObject();

    if (name != NULL)
        cJSON_AddStringToObject(det, "name", name);
    if (d->group[0] != '\0')
        cJSON_AddStringToObject(det, "group", d->group);
    cJSON_AddStringToObject(det, "kind", d->plural);
    return det;
}

void ebb__reply_not_found(struct ebb_http_req *r, const struct rdef *d, const char *name)
{
    char q[128], msg[768];

    ebb__rdef_qualified(d, q, sizeof(q));
    snprintf(msg, sizeof(msg), "%s \"%s\" not found", q, name);
    ebb__reply_status(r, 404, "NotFound", msg, ebb__reply_details(d, name));
}

void ebb__reply_bad_request(struct ebb_http_req *r, const char *msg)
{
    ebb__reply_status(r, 400, "BadRequest", msg, NULL);
}

void ebb__reply_conflict(struct ebb_http_req *r, const struct rdef *d, const char *name,
                         const char *why)
{
    char q[128], msg[1024];

    ebb__rdef_qualified(d, q, sizeof(q));
    snprintf(msg, sizeof(msg), "Operation cannot be fulfilled on %s \"%s\": %s", q, name, why);
    ebb__reply_status(r, 409, "Conflict", msg, ebb__reply_details(d, name));
}

void ebb__reply_store_failed(struct ebb_http_req *r, int rc)
{
    if (rc == EBB_ELIMIT)   /* no reason: the API server passes etcd's error on as it is */
        ebb__reply_status(r, 500, NULL, "etcdserver: request is too large", NULL);
    else
        ebb__reply_internal(r, "out of memory");
}

void ebb__reply_internal(struct ebb_http_req *r, const char *why)
{
    char msg[512];
    cJSON *det = cJSON_CreateObject(), *causes = cJSON_AddArrayToObject(det, "causes"),
          *c = cJSON_CreateObject();

    cJSON_AddStringToObject(c, "message", why);
    cJSON_AddItemToArray(causes, c);
    snprintf(msg, sizeof(msg), "Internal error occurred: %s", why);
    ebb__reply_status(r, 500, "InternalError", msg, det);
}

static void reply_method_not_allowed(struct ebb_http_req *r)
{
    ebb__reply_status(r, 405, "MethodNotAllowed",
                      "the server does not allow this method on the requested resource", NULL);
}

static void reply_no_resource(struct ebb_http_req *r)
{
    ebb__reply_status(r, 404, "NotFound", "the server could not find the requested resource",
                      cJSON_CreateObject());
}

void ebb__reply_json(struct ebb_http_req *r, int code, cJSON *j)
{
    char *text = cJSON_PrintUnformatted(j);

    cJSON_Delete(j);
    if (text == NULL) {
        ebb__reply_internal(r, "out of memory");
        return;
    }
    ebb__reply_text(r, code, text);
    free(text);
}

/* The groups after the core one, in discovery order. */
static const char *const groups[] = { "policy", "scheduling.k8s.io", "coordination.k8s.io",
                                      "events.k8s.io", "metrics.k8s.io",
                                      "scheduling.koordinator.sh" };

/* ---- discovery ---------------------------------------------------------------------- */

static bool res_served(const struct server *s, int res)
{
    if (strcmp(ebb__rdefs[res].group, "scheduling.koordinator.sh") == 0)
        return s->has_koordinator;
    return strcmp(ebb__rdefs[res].group, "metrics.k8s.io") != 0 || s->has_metrics;
}

static bool group_served(const struct server *s, const char *g)
{
    for (int i = 0; i < NRES; i++)
        if (strcmp(ebb__rdefs[i].group, g) == 0 && res_served(s, i))
            return true;
    return false;
}

static const char *group_version_of(const char *g)
{
    for (int i = 0; i < NRES; i++)
        if (strcmp(ebb__rdefs[i].group, g) == 0)
            return ebb__rdefs[i].version;
    return "v1";
}

static cJSON *group_doc(const char *g, bool kind)
{
    cJSON *o = cJSON_CreateObject(), *vs, *v, *pv;
    char gv[128];

    snprintf(gv, sizeof(gv), "%s/%s", g, group_version_of(g));
    if (kind) {
        cJSON_AddStringToObject(o, "kind", "APIGroup");
        cJSON_AddStringToObject(o, "apiVersion", "v1");
    }
    cJSON_AddStringToObject(o, "name", g);
    vs = cJSON_AddArrayToObject(o, "versions");
    v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "groupVersion", gv);
    cJSON_AddStringToObject(v, "version", group_version_of(g));
    cJSON_AddItemToArray(vs, v);
    pv = cJSON_AddObjectToObject(o, "preferredVersion");
    cJSON_AddStringToObject(pv, "groupVersion", gv);
    cJSON_AddStringToObject(pv, "version", group_version_of(g));
    return o;
}

static void add_verbs(cJSON *o, unsigned verbs)
{
    static const struct { unsigned bit; const char *name; } names[] = {
        { V_CREATE, "create" }, { V_DELETE, "delete" },
        { V_DELETECOLLECTION, "deletecollection" }, { V_GET, "get" }, { V_LIST, "list" },
        { V_PATCH, "patch" }, { V_UPDATE, "update" }, { V_WATCH, "watch" },
    };
    cJSON *a = cJSON_AddArrayToObject(o, "verbs");

    for (size_t i = 0; i < EBB_ARRAY_LEN(names); i++)
        if (verbs & names[i].bit)
            cJSON_AddItemToArray(a, cJSON_CreateString(names[i].name));
}

static cJSON *resource_list(const struct server *s, const char *g)
{
    cJSON *o = cJSON_CreateObject(), *rs;
    char gv[128];

    if (g[0] == '\0')
        snprintf(gv, sizeof(gv), "v1");
    else
        snprintf(gv, sizeof(gv), "%s/%s", g, group_version_of(g));
    cJSON_AddStringToObject(o, "kind", "APIResourceList");
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "groupVersion", gv);
    rs = cJSON_AddArrayToObject(o, "resources");
    for (int i = 0; i < NRES; i++) {
        const struct rdef *d = &ebb__rdefs[i];
        cJSON *e;

        if (strcmp(d->group, g) != 0 || !res_served(s, i))
            continue;
        e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", d->plural);
        cJSON_AddStringToObject(e, "singularName", d->singular);
        cJSON_AddBoolToObject(e, "namespaced", d->namespaced);
        cJSON_AddStringToObject(e, "kind", d->kind);
        add_verbs(e, d->verbs);
        if (d->short_name != NULL)
            cJSON_AddItemToObject(e, "shortNames", cJSON_CreateStringArray(&d->short_name, 1));
        if (d->all) {
            const char *all = "all";
            cJSON_AddItemToObject(e, "categories", cJSON_CreateStringArray(&all, 1));
        }
        cJSON_AddItemToArray(rs, e);
        if (ebb__has_status(i)) {
            char sub[96];
            snprintf(sub, sizeof(sub), "%s/status", d->plural);
            e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", sub);
            cJSON_AddStringToObject(e, "singularName", "");
            cJSON_AddBoolToObject(e, "namespaced", d->namespaced);
            cJSON_AddStringToObject(e, "kind", d->kind);
            add_verbs(e, V_GET | V_PATCH | V_UPDATE);
            cJSON_AddItemToArray(rs, e);
        }
        if (i == R_PODS) {
            /* the eviction subresource: a policy/v1 Eviction posted to pods/NAME/eviction */
            e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", "pods/eviction");
            cJSON_AddStringToObject(e, "singularName", "pod");
            cJSON_AddBoolToObject(e, "namespaced", true);
            cJSON_AddStringToObject(e, "group", "policy");
            cJSON_AddStringToObject(e, "version", "v1");
            cJSON_AddStringToObject(e, "kind", "Eviction");
            add_verbs(e, V_CREATE);
            cJSON_AddItemToArray(rs, e);
        }
    }
    return o;
}

static void reply_version(struct ebb_http_req *r)
{
    static const char text[] =
        "{\"major\":\"1\",\"minor\":\"32\",\"gitVersion\":\"v1.32.0\",\"gitCommit\":\"ebb-serve-"
        EBB_VERSION "\",\"gitTreeState\":\"clean\",\"buildDate\":\"2026-01-01T00:00:00Z\","
        "\"goVersion\":\"go1.23.0\",\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}";
    ebb__reply_text(r, 200, text);
}

static void reply_api_versions(struct server *s, struct ebb_http_req *r)
{
    cJSON *o = cJSON_CreateObject(), *a, *e;
    const char *v1 = "v1";

    cJSON_AddStringToObject(o, "kind", "APIVersions");
    cJSON_AddItemToObject(o, "versions", cJSON_CreateStringArray(&v1, 1));
    a = cJSON_AddArrayToObject(o, "serverAddressByClientCIDRs");
    e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "clientCIDR", "0.0.0.0/0");
    cJSON_AddStringToObject(e, "serverAddress", s->addr);
    cJSON_AddItemToArray(a, e);
    ebb__reply_json(r, 200, o);
}

static void reply_group_list(struct server *s, struct ebb_http_req *r)
{
    cJSON *o = cJSON_CreateObject(), *a;

    cJSON_AddStringToObject(o, "kind", "APIGroupList");
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    a = cJSON_AddArrayToObject(o, "groups");
    for (size_t i = 0; i < EBB_ARRAY_LEN(groups); i++)
        if (group_served(s, groups[i]))
            cJSON_AddItemToArray(a, group_doc(groups[i], false));
    ebb__reply_json(r, 200, o);
}

/* ---- routes ---------------------------------------------------------------------------- */

/* Split the path into at most 12 segments (in `buf`). */
static int split_path(const char *path, char *buf, size_t len, char **seg, int max)
{
    int n = 0;
    char *p;

    snprintf(buf, len, "%s", path);
    for (p = strtok(buf, "/"); p != NULL; p = strtok(NULL, "/")) {
        if (n == max)
            return -1;
        seg[n++] = p;
    }
    return n;
}

static int find_res(const struct server *s, const char *group, const char *version,
                    const char *plural)
{
    for (int i = 0; i < NRES; i++)
        if (strcmp(ebb__rdefs[i].group, group) == 0 &&
            strcmp(ebb__rdefs[i].version, version) == 0 &&
            strcmp(ebb__rdefs[i].plural, plural) == 0 && res_served(s, i))
            return i;
    return -1;
}

/* seg[0..n) after the group/version prefix -> route. */
static bool parse_resource_path(const struct server *s, const char *group, const char *version,
                                char **seg, int n, struct route *rt)
{
    memset(rt, 0, sizeof(*rt));
    rt->res = -1;
    if (n > 0 && strcmp(seg[0], "watch") == 0) {
        rt->watch_path = true;
        seg++;
        n--;
    }
    if (n >= 3 && strcmp(seg[0], "namespaces") == 0) {
        rt->ns = seg[1];
        seg += 2;
        n -= 2;
        if ((rt->res = find_res(s, group, version, seg[0])) < 0 || !ebb__rdefs[rt->res].namespaced)
            return false;
    } else if (n >= 1) {
        if ((rt->res = find_res(s, group, version, seg[0])) < 0)
            return false;
    } else {
        return false;
    }
    if (n >= 2)
        rt->name = seg[1];
    if (n >= 3)
        rt->sub = seg[2];
    if (n > 3 || (rt->watch_path && rt->sub != NULL))
        return false;
    return true;
}

bool ebb__truthy(const char *v)
{
    /* runtime.Convert_Slice_string_To_bool: present and not "0" or "false" */
    return v != NULL && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0;
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static void route_request(struct server *s, struct ebb_http_req *r)
{
    const char *method = ebb_http_req_method(r), *path = ebb_http_req_path(r);
    char buf[1024], *seg[12];
    struct route rt;
    int n = split_path(path, buf, sizeof(buf), seg, 12);
    const char *group = NULL, *version = NULL;
    int off = 0;
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    unsigned verbs;

    if (n < 0) {
        reply_no_resource(r);
        return;
    }
    if (n == 1 && get && strcmp(seg[0], "version") == 0) {
        reply_version(r);
        return;
    }
    if (n >= 1 && strcmp(seg[0], "api") == 0) {
        if (n == 1 && get) {
            reply_api_versions(s, r);
            return;
        }
        if (n >= 2 && strcmp(seg[1], "v1") == 0) {
            if (n == 2 && get) {
                ebb__reply_json(r, 200, resource_list(s, ""));
                return;
            }
            group = "";
            version = "v1";
            off = 2;
        }
    } else if (n >= 1 && strcmp(seg[0], "apis") == 0) {
        if (n == 1 && get) {
            reply_group_list(s, r);
            return;
        }
        if (n >= 2 && group_served(s, seg[1])) {
            if (n == 2 && get) {
                ebb__reply_json(r, 200, group_doc(seg[1], true));
                return;
            }
            if (n >= 3 && strcmp(seg[2], group_version_of(seg[1])) == 0) {
                if (n == 3 && get) {
                    ebb__reply_json(r, 200, resource_list(s, seg[1]));
                    return;
                }
                group = seg[1];
                version = seg[2];
                off = 3;
            }
        }
    }
    if (group == NULL || !parse_resource_path(s, group, version, seg + off, n - off, &rt)) {
        reply_no_resource(r);
        return;
    }
    verbs = ebb__rdefs[rt.res].verbs;
    if (rt.sub != NULL) {
        if (rt.res == R_PODS && strcmp(rt.sub, "eviction") == 0 && strcmp(method, "POST") == 0)
            ebb__serve_evict(s, r, &rt);
        else if (rt.res == R_PODS && strcmp(rt.sub, "eviction") == 0)
            reply_method_not_allowed(r);
        else if (strcmp(rt.sub, "status") != 0 || !ebb__has_status(rt.res))
            reply_no_resource(r);
        else if (get)
            ebb__serve_get(s, r, &rt);
        else if (strcmp(method, "PUT") == 0)
            ebb__serve_update(s, r, &rt);
        else if (strcmp(method, "PATCH") == 0)
            ebb__serve_patch(s, r, &rt);
        else
            reply_method_not_allowed(r);
        return;
    }
    if (ebb__rdefs[rt.res].namespaced && rt.name != NULL && rt.ns == NULL) {
        reply_no_resource(r);   /* a namespaced object needs its namespace */
        return;
    }
    if (get) {
        bool watch = rt.watch_path || ebb__truthy(ebb_http_req_query(r, "watch"));
        if (watch && (verbs & V_WATCH))
            ebb__serve_watch(s, r, &rt);
        else if (watch)
            reply_method_not_allowed(r);
        else if (rt.name != NULL && (verbs & V_GET))
            ebb__serve_get(s, r, &rt);
        else if (rt.name == NULL && (verbs & V_LIST))
            ebb__serve_list(s, r, &rt);
        else
            reply_method_not_allowed(r);
        return;
    }
    if (rt.watch_path) {
        reply_method_not_allowed(r);
        return;
    }
    if (rt.res == R_PODS && rt.name != NULL && strcmp(method, "PATCH") == 0) {
        ebb__serve_patch_pod(s, r, &rt);
        return;
    }
    if (strcmp(method, "POST") == 0 && rt.name == NULL && (verbs & V_CREATE) &&
        (rt.ns != NULL) == ebb__rdefs[rt.res].namespaced)
        ebb__serve_create(s, r, &rt);
    else if (strcmp(method, "PUT") == 0 && rt.name != NULL && (verbs & V_UPDATE))
        ebb__serve_update(s, r, &rt);
    else if (strcmp(method, "PATCH") == 0 && rt.name != NULL && (verbs & V_PATCH))
        ebb__serve_patch(s, r, &rt);
    else if (strcmp(method, "DELETE") == 0 && rt.name == NULL && (verbs & V_DELETECOLLECTION))
        ebb__serve_delete_collection(s, r, &rt);
    else if (strcmp(method, "DELETE") == 0 && rt.name != NULL && (verbs & V_DELETE))
        ebb__serve_delete(s, r, &rt);
    else
        reply_method_not_allowed(r);
}

/* A request held back by --latency-ms. */
struct delay {
    uv_timer_t timer;            /* first: the close callback frees */
    struct server *s;
    struct ebb_http_req *req;
    struct delay *prev, *next;
};

static void on_delay_closed(uv_handle_t *h)
{
    free(h->data);
}

static void delay_free(struct delay *dl)
{
    struct server *s = dl->s;

    if (dl->prev != NULL)
        dl->prev->next = dl->next;
    else
        s->delays = dl->next;
    if (dl->next != NULL)
        dl->next->prev = dl->prev;
    uv_close((uv_handle_t *)&dl->timer, on_delay_closed);
}

static void on_delay_gone(struct ebb_http_req *req, void *ud)
{
    (void)req;
    delay_free(ud);
}

static void on_delay(uv_timer_t *t)
{
    struct delay *dl = t->data;
    struct ebb_http_req *r = dl->req;
    struct server *s = dl->s;

    ebb_http_req_on_gone(r, NULL, NULL);
    delay_free(dl);
    route_request(s, r);
}

static bool is_health(const char *path)
{
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
           strcmp(path, "/livez") == 0;
}

void ebb__serve_request(struct ebb_http_req *r, void *ud)
{
    struct server *s = ud;
    const char *path = ebb_http_req_path(r);
    const char *qs = ebb_http_req_query_string(r);

    s->nrequests++;
    ebb_log(EBB_LOG_DEBUG, "%s %s%s%s", ebb_http_req_method(r), path, qs[0] ? "?" : "", qs);
    if (is_health(path)) {
        ebb_http_respond(r, 200, "text/plain; charset=utf-8", "ok", 2);
        return;
    }
    if (s->o.fail_fraction > 0 && ebb__serve_random_unit(s) < s->o.fail_fraction) {
        ebb__reply_internal(r, "injected failure (ebb serve --fail-fraction)");
        return;
    }
    if (s->o.latency_ms > 0) {
        struct delay *dl = calloc(1, sizeof(*dl));
        if (dl != NULL) {
            dl->s = s;
            dl->req = r;
            uv_timer_init(s->loop, &dl->timer);
            dl->timer.data = dl;
            dl->next = s->delays;
            if (s->delays != NULL)
                s->delays->prev = dl;
            s->delays = dl;
            ebb_http_req_on_gone(r, on_delay_gone, dl);
            uv_timer_start(&dl->timer, on_delay, (uint64_t)s->o.latency_ms, 0);
            return;
        }
    }
    route_request(s, r);
}
