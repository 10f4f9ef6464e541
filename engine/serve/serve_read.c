/* serve_read.c: reads of `ebb serve`, as the API server's watch cache
 * answers them. GET of one object; LIST with label and field selectors,
 * paging (limit, continue tokens encoded as etcd3's) and lists at an older
 * resourceVersion rebuilt from the history; WATCH from a resourceVersion
 * (replayed from the history, 410 Expired once it fell out), with
 * bookmarks, timeouts, and events held back and sent in one write while
 * the churn makes a tick's worth.
 *
 * Called on the loop thread by the dispatch (serve_api.c), the store
 * (ebb__watch_notify) and the command's timers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_int.h"

static const char *const ev_names[] = { "ADDED", "MODIFIED", "DELETED" };

/* ---- get ------------------------------------------------------------------------------------ */

void ebb__serve_get(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    struct ver *v = ebb__store_lookup(s, rt->res, rt->ns, rt->name);
    struct table_view view;

    if (ebb__table_negotiate(r, &view) != 0)
        return;
    if (v == NULL) {
        ebb__reply_not_found(r, &ebb__rdefs[rt->res], rt->name);
        return;
    }
    if (view.table) {
        cJSON *t = ebb__table_new(rt->res, &view, true);
        char rvs[24];
        snprintf(rvs, sizeof(rvs), "%" PRIu64, v->rv);
        cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(t, "metadata"), "resourceVersion",
                                rvs);
        if (ebb__table_add_row(t, rt->res, &view, v->text, v->len) != 0) {
            cJSON_Delete(t);
            ebb__reply_internal(r, "out of memory");
            return;
        }
        ebb__reply_json(r, 200, t);
        return;
    }
    ebb__reply_text(r, 200, ebb__ver_text(v));
}

/* ---- list ---------------------------------------------------------------------------- */

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64_encode(const char *in, size_t n, struct sb *out)
{
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
        char q[4];
        size_t k = 2;
        if (i + 1 < n) {
            v |= (uint32_t)(unsigned char)in[i + 1] << 8;
            k = 3;
        }
        if (i + 2 < n) {
            v |= (unsigned char)in[i + 2];
            k = 4;
        }
        q[0] = b64url[v >> 18 & 63];
        q[1] = b64url[v >> 12 & 63];
        q[2] = b64url[v >> 6 & 63];
        q[3] = b64url[v & 63];
        ebb__sb_add(out, q, k);
    }
}

static int b64_decode(const char *in, struct sb *out)
{
    uint32_t v = 0;
    int bits = 0;

    for (; *in && *in != '='; in++) {
        const char *p = strchr(b64url, *in);
        if (p == NULL || *in == '\0')
            return EBB_EPARSE;
        v = v << 6 | (uint32_t)(p - b64url);
        bits += 6;
        if (bits >= 8) {
            char ch = (char)(v >> (bits - 8) & 0xff);
            bits -= 8;
            ebb__sb_add(out, &ch, 1);
        }
    }
    return out->oom ? EBB_ENOMEM : 0;
}

/* {"v":"meta.k8s.io/v1","rv":N,"start":"KEY"}: what etcd3's store encodes,
 * minus the trailing NUL (the list goes on strictly after KEY). */
static void continue_token(uint64_t rv, const char *key, struct sb *out)
{
    cJSON *o = cJSON_CreateObject();
    char *text;

    cJSON_AddStringToObject(o, "v", "meta.k8s.io/v1");
    cJSON_AddNumberToObject(o, "rv", (double)rv);
    cJSON_AddStringToObject(o, "start", key);
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (text != NULL)
        b64_encode(text, strlen(text), out);
    free(text);
}

static int parse_continue(const char *tok, uint64_t *rv, char *key, size_t keylen)
{
    struct sb raw = { 0 };
    cJSON *o;
    const cJSON *v, *r, *st;
    int rc = EBB_EPARSE;

    if (b64_decode(tok, &raw) != 0 || raw.p == NULL) {
        free(raw.p);
        return EBB_EPARSE;
    }
    o = cJSON_ParseWithLength(raw.p, raw.n);
    free(raw.p);
    v = cJSON_GetObjectItemCaseSensitive(o, "v");
    r = cJSON_GetObjectItemCaseSensitive(o, "rv");
    st = cJSON_GetObjectItemCaseSensitive(o, "start");
    if (cJSON_IsString(v) && strcmp(v->valuestring, "meta.k8s.io/v1") == 0 && cJSON_IsNumber(r) &&
        r->valuedouble >= 1 && cJSON_IsString(st)) {
        *rv = (uint64_t)r->valuedouble;
        snprintf(key, keylen, "%s", st->valuestring);
        rc = 0;
    }
    cJSON_Delete(o);
    return rc;
}

static int parse_rv(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (s == NULL || *s < '0' || *s > '9')
        return EBB_EPARSE;
    v = strtoull(s, &end, 10);
    if (*end != '\0')
        return EBB_EPARSE;
    *out = v;
    return 0;
}

/* Label and field selectors of a request, plus the route's namespace and
 * name. false: answered (400). */
bool ebb__request_filter(struct ebb_http_req *r, const struct route *rt, struct filter *f)
{
    const struct rdef *d = &ebb__rdefs[rt->res];
    const char *ls = ebb_http_req_query(r, "labelSelector");
    const char *fs = ebb_http_req_query(r, "fieldSelector");
    char msg[900];
    int rc;

    memset(f, 0, sizeof(*f));
    if (rt->ns != NULL && (f->ns = strdup(rt->ns)) == NULL)
        goto oom;
    if (ls != NULL && ls[0] != '\0') {
        struct ebb_error err = { 0 };
        if (ebb_selector_parse(ls, &f->labels, &err) != 0) {
            ebb__reply_bad_request(r, err.msg);
            ebb__filter_free(f);
            return false;
        }
    }
    if (fs != NULL && (rc = ebb__filter_parse_fields(d, fs, f, msg, sizeof(msg))) != 0) {
        if (rc == EBB_ENOMEM)
            goto oom;
        ebb__reply_bad_request(r, msg);
        ebb__filter_free(f);
        return false;
    }
    if (rt->name != NULL) {
        /* /watch/.../NAME or NAME?watch=1: a watch of one object */
        struct fsel *nf = realloc(f->fields, (f->nfields + 1) * sizeof(*nf));
        if (nf == NULL)
            goto oom;
        f->fields = nf;
        nf[f->nfields].idx = FIELD_NAME;
        nf[f->nfields].neq = false;
        if ((nf[f->nfields].value = strdup(rt->name)) == NULL)
            goto oom;
        f->nfields++;
    }
    return true;
oom:
    ebb__filter_free(f);
    ebb__reply_internal(r, "out of memory");
    return false;
}

static const char expired_continue[] =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list.";

static void reply_too_large_rv(struct ebb_http_req *r, uint64_t want, uint64_t have)
{
    char msg[160];
    cJSON *det = cJSON_CreateObject(), *causes = cJSON_AddArrayToObject(det, "causes"),
          *c = cJSON_CreateObject();

    snprintf(msg, sizeof(msg),
             "Timeout: Too large resource version: %" PRIu64 ", current: %" PRIu64, want, have);
    cJSON_AddStringToObject(c, "reason", "ResourceVersionTooLarge");
    cJSON_AddStringToObject(c, "message", "Too large resource version");
    cJSON_AddItemToArray(causes, c);
    cJSON_AddNumberToObject(det, "retryAfterSeconds", 1);
    ebb_http_add_header(r, "Retry-After", "1");
    ebb__reply_status(r, 504, "Timeout", msg, det);
}

/* A metav1.ListOptions the API server's validation refuses: 422. */
static void reply_invalid_options(struct ebb_http_req *r, const char *reason, const char *detail)
{
    char msg[400];
    cJSON *det = cJSON_CreateObject(), *causes, *c;

    snprintf(msg, sizeof(msg), "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: %s",
             detail);
    cJSON_AddStringToObject(det, "group", "meta.k8s.io");
    cJSON_AddStringToObject(det, "kind", "ListOptions");
    causes = cJSON_AddArrayToObject(det, "causes");
    c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "reason", reason);
    cJSON_AddStringToObject(c, "message", detail);
    cJSON_AddStringToObject(c, "field", "resourceVersionMatch");
    cJSON_AddItemToArray(causes, c);
    ebb__reply_status(r, 422, "Invalid", msg, det);
}

/* A query parameter the API server parses as an integer (strconv.ParseInt);
 * false: answered (400). Absent or empty: *out untouched. */
static bool query_int(struct ebb_http_req *r, const char *key, long long *out)
{
    const char *v = ebb_http_req_query(r, key);
    char *end, msg[200];
    long long n;

    if (v == NULL || v[0] == '\0')
        return true;
    n = strtoll(v, &end, 10);
    if (*end != '\0' || end == v) {
        snprintf(msg, sizeof(msg), "strconv.ParseInt: parsing \"%.100s\": invalid syntax", v);
        ebb__reply_bad_request(r, msg);
        return false;
    }
    *out = n;
    return true;
}

/* The resourceVersion of a list or watch; false: answered (400 BadRequest,
 * the API server's own answer to a resourceVersion that is not a number). */
static bool query_rv(struct ebb_http_req *r, const char *rvq, uint64_t *out)
{
    char msg[400];

    if (parse_rv(rvq, out) == 0)
        return true;
    snprintf(msg, sizeof(msg),
             "invalid resource version: resourceVersion: Invalid value: \"%.100s\": "
             "strconv.ParseUint: parsing \"%.100s\": invalid syntax",
             rvq, rvq);
    ebb__reply_status(r, 400, "BadRequest", msg, NULL);
    return false;
}

/* Where a list is answered from, as the API server decides it: the watch
 * cache (resourceVersion "0", or N without a limit: the latest state, whole,
 * whatever the limit) or etcd (no resourceVersion, a continue token, a
 * limit with N, or resourceVersionMatch=Exact: paged, at N exactly for a
 * limit with N or Exact). Sets *at and *paged; false: answered. */
static bool list_source(struct server *s, struct ebb_http_req *r, uint64_t *at, bool *paged,
                        char *start, size_t startlen)
{
    const char *tok = ebb_http_req_query(r, "continue");
    const char *rvq = ebb_http_req_query(r, "resourceVersion");
    const char *match = ebb_http_req_query(r, "resourceVersionMatch");
    long long limit = 0;
    bool has_rv = rvq != NULL && rvq[0] != '\0', has_tok = tok != NULL && tok[0] != '\0';
    bool exact = match != NULL && strcmp(match, "Exact") == 0;
    uint64_t want = 0;

    if (!query_int(r, "limit", &limit))
        return false;
    if (match != NULL && match[0] != '\0') {
        if (!exact && strcmp(match, "NotOlderThan") != 0) {
            char detail[200];
            snprintf(detail, sizeof(detail),
                     "Unsupported value: \"%.60s\": supported values: \"Exact\", "
                     "\"NotOlderThan\", \"\"",
                     match);
            reply_invalid_options(r, "FieldValueNotSupported", detail);
            return false;
        }
        if (!has_rv) {
            reply_invalid_options(r, "FieldValueForbidden",
                                  "Forbidden: resourceVersionMatch is forbidden unless "
                                  "resourceVersion is provided");
            return false;
        }
        if (has_tok) {
            reply_invalid_options(r, "FieldValueForbidden",
                                  "Forbidden: resourceVersionMatch is forbidden when continue is "
                                  "provided");
            return false;
        }
        if (exact && strcmp(rvq, "0") == 0) {
            reply_invalid_options(r, "FieldValueForbidden",
                                  "Forbidden: resourceVersionMatch \"exact\" is forbidden for "
                                  "resourceVersion \"0\"");
            return false;
        }
    }
    *at = s->rv;
    *paged = true;
    if (has_tok) {
        if (has_rv && strcmp(rvq, "0") != 0) {
            ebb__reply_bad_request(r, "specifying resource version is not allowed when using "
                                   "continue");
            return false;
        }
        if (parse_continue(tok, at, start, startlen) != 0) {
            ebb__reply_bad_request(r, "invalid continue token: continue key is not valid: the "
                                   "continue token is malformed");
            return false;
        }
        if (*at < s->compacted) {
            ebb__reply_status(r, 410, "Expired", expired_continue, NULL);
            return false;
        }
        if (*at > s->rv)
            *at = s->rv;
        return true;
    }
    if (!has_rv)
        return true;
    if (!query_rv(r, rvq, &want))
        return false;
    if (want == 0) {
        *paged = false;   /* the watch cache: all of it */
        return true;
    }
    if (exact || (limit > 0 && (match == NULL || match[0] == '\0'))) {
        /* etcd at that revision */
        if (want > s->rv) {
            ebb__reply_status(r, 500, NULL,
                              "etcdserver: mvcc: required revision is a future revision", NULL);
            return false;
        }
        if (want < s->compacted) {
            ebb__reply_status(r, 410, "Expired",
                              "The resourceVersion for the provided list is too old.", NULL);
            return false;
        }
        *at = want;
        return true;
    }
    if (want > s->rv) {
        reply_too_large_rv(r, want, s->rv);
        return false;
    }
    *paged = limit > 0;   /* NotOlderThan with a limit: etcd, the latest; else the cache */
    return true;
}

/* Where the keys of namespace `ns` end in a sorted list ("ns0" sorts right
 * after every "ns/..."); n when `ns` is NULL. */
static size_t ns_end(struct ver *const *list, size_t n, const char *ns)
{
    char key[320];
    bool found;

    if (ns == NULL)
        return n;
    snprintf(key, sizeof(key), "%s0", ns);
    return ebb__ver_find(list, n, key, &found);
}

/* A list's items, as objects or as Table rows. */
struct list_out {
    struct sb items;
    cJSON *table;                /* NULL: objects */
    const struct table_view *view;
    int res;
    bool failed;
};

/* Past a leading `"key":"value",` of `p` (NULL: not there). */
static const char *skip_member(const char *p, const char *key)
{
    size_t n = strlen(key);
    const char *end;

    if (p[0] != '"' || strncmp(p + 1, key, n) != 0 || strncmp(p + 1 + n, "\":\"", 3) != 0)
        return NULL;
    p += n + 4;
    if ((end = strpbrk(p, "\"\\")) == NULL || *end != '"' || end[1] != ',')
        return NULL;
    return end + 2;
}

static void list_add(struct list_out *lo, const struct ver *v, bool first)
{
    const char *p, *rest;

    if (lo->table != NULL) {
        if (ebb__table_add_row(lo->table, lo->res, lo->view, v->text, v->len) != 0)
            lo->failed = true;
        return;
    }
    if (!first)
        ebb__sb_add(&lo->items, ",", 1);
    /* the API server leaves kind and apiVersion to the List */
    p = v->text + 1;
    if ((rest = skip_member(p, "kind")) != NULL)
        rest = skip_member(rest, "apiVersion");
    else if ((rest = skip_member(p, "apiVersion")) != NULL)
        rest = skip_member(rest, "kind");
    if (rest == NULL) {
        ebb__sb_add(&lo->items, v->text, v->len);
        return;
    }
    ebb__sb_add(&lo->items, "{", 1);
    ebb__sb_add(&lo->items, rest, v->len - (size_t)(rest - v->text));
}

void ebb__serve_list(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const struct rdef *d = &ebb__rdefs[rt->res];
    struct table_view view;
    struct list_out lo = { .res = rt->res, .view = &view };
    struct filter f;
    struct ver **list = NULL;
    struct sb out = { 0 }, cont = { 0 };
    char start[640] = "", gv[128], rvs[24];
    uint64_t at;
    size_t n = 0, i, sent = 0, limit = 0, remaining = 0;
    bool found, more = false, owned = false, paged;
    long long l = 0;
    const char *last = NULL;

    if (ebb__table_negotiate(r, &view) != 0 ||
        !list_source(s, r, &at, &paged, start, sizeof(start)))
        return;
    if (paged && query_int(r, "limit", &l) && l > 0)
        limit = (size_t)l;
    if (!ebb__request_filter(r, rt, &f))
        return;
    if (at == s->rv) {
        list = s->stores[rt->res].v;
        n = s->stores[rt->res].n;
    } else {
        if ((list = ebb__store_view_at(s, rt->res, at, &n)) == NULL) {
            ebb__filter_free(&f);
            ebb__reply_internal(r, "out of memory");
            return;
        }
        owned = true;
    }
    if (view.table)
        lo.table = ebb__table_new(rt->res, &view, true);
    i = 0;
    if (start[0] != '\0') {
        i = ebb__ver_find(list, n, start, &found);
        if (found)
            i++;
    }
    for (; i < n && !lo.failed; i++) {
        if (!ebb__filter_match(&f, list[i]))
            continue;
        if (limit > 0 && sent == limit) {
            more = true;
            break;
        }
        list_add(&lo, list[i], sent++ == 0);
        last = list[i]->key;
    }
    if (more && last != NULL) {
        continue_token(at, last, &cont);
        if (f.labels == NULL && f.nfields == 0)
            remaining = ns_end(list, n, f.ns) - i;
    }
    snprintf(rvs, sizeof(rvs), "%" PRIu64, at);
    if (lo.table != NULL) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(lo.table, "metadata");
        char *text;
        cJSON_AddStringToObject(meta, "resourceVersion", rvs);
        if (cont.n > 0 && !cont.oom)
            cJSON_AddStringToObject(meta, "continue", cont.p);
        if (remaining > 0)
            cJSON_AddNumberToObject(meta, "remainingItemCount", (double)remaining);
        if (!lo.failed && (text = cJSON_PrintUnformatted(lo.table)) != NULL) {
            ebb__sb_puts(&out, text);
            free(text);
        } else {
            out.oom = true;
        }
        cJSON_Delete(lo.table);
    } else {
        ebb__rdef_group_version(d, gv, sizeof(gv));
        ebb__sb_printf(&out,
                       "{\"kind\":\"%sList\",\"apiVersion\":\"%s\",\"metadata\":{"
                       "\"resourceVersion\":\"%s\"",
                       d->kind, gv, rvs);
        if (cont.n > 0) {
            ebb__sb_puts(&out, ",\"continue\":\"");
            ebb__sb_add(&out, cont.p, cont.n);
            ebb__sb_puts(&out, "\"");
            if (remaining > 0)
                ebb__sb_printf(&out, ",\"remainingItemCount\":%zu", remaining);
        }
        ebb__sb_puts(&out, "},\"items\":[");
        if (lo.items.n > 0)
            ebb__sb_add(&out, lo.items.p, lo.items.n);
        ebb__sb_puts(&out, "]}");
        out.oom |= lo.items.oom || cont.oom;
    }
    free(lo.items.p);
    free(cont.p);
    ebb__filter_free(&f);
    if (owned)
        free(list);
    if (out.oom)
        ebb__reply_internal(r, "out of memory");
    else
        ebb_http_respond(r, 200, JSON, out.p, out.n);
    free(out.p);
}

/* ---- watch ------------------------------------------------------------------------------- */

struct watch {
    uv_timer_t timer;            /* timeoutSeconds; first: the close callback frees */
    struct server *s;
    struct ebb_http_req *req;    /* NULL once ended or gone */
    int res;
    struct filter f;
    bool bookmarks;
    struct table_view view;      /* Tables (kubectl get -w): headers with the first event */
    bool headers_sent;
    struct watch *prev, *next;
};

static void on_watch_timer_closed(uv_handle_t *h)
{
    struct watch *w = h->data;
    ebb__filter_free(&w->f);
    free(w);
}

/* Forget a watch whose request is over (ended or gone). */
static void watch_free(struct watch *w)
{
    struct server *s = w->s;

    if (w->prev != NULL)
        w->prev->next = w->next;
    else if (s->watches == w)
        s->watches = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    w->req = NULL;
    uv_close((uv_handle_t *)&w->timer, on_watch_timer_closed);
}

/* End the stream cleanly (timeout, --close-watches-every). */
static void watch_end(struct watch *w)
{
    if (w->req != NULL)
        ebb_http_stream_end(w->req);
    watch_free(w);
}

static void on_watch_gone(struct ebb_http_req *req, void *ud)
{
    (void)req;
    watch_free(ud);
}

/* One event line. false: the client is gone (the watch is freed). While
 * the server holds events, the line is held by the httpd (counted toward
 * its caps like a written one: a watcher that does not read is ended, not
 * buffered for) and goes out with the others in one write (watch_flush). */
static bool watch_send(struct watch *w, const char *type, const char *obj)
{
    struct sb b = { 0 };
    int rc;

    ebb__sb_printf(&b, "{\"type\":\"%s\",\"object\":", type);
    ebb__sb_puts(&b, obj);
    ebb__sb_puts(&b, "}\n");
    if (b.oom)
        rc = EBB_ENOMEM;
    else if (w->s->holding)
        rc = ebb_http_stream_hold(w->req, b.p, b.n);
    else
        rc = ebb_http_stream_write(w->req, b.p, b.n);
    free(b.p);
    if (rc != 0) {
        if (rc == EBB_ENOMEM)
            ebb_http_req_abort(w->req);
        watch_free(w);
        return false;
    }
    return true;
}

/* Send what was held. false: the client is gone (the watch is freed). */
static bool watch_flush(struct watch *w)
{
    if (ebb_http_stream_flush(w->req) != 0) {
        watch_free(w);
        return false;
    }
    return true;
}

static bool watch_bookmark(struct watch *w, bool initial_end)
{
    const struct rdef *d = &ebb__rdefs[w->res];
    char gv[128], obj[512];

    ebb__rdef_group_version(d, gv, sizeof(gv));
    snprintf(obj, sizeof(obj),
             "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%" PRIu64
             "\",\"creationTimestamp\":null%s}}",
             d->kind, gv, w->s->rv,
             initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}" : "");
    return watch_send(w, "BOOKMARK", obj);
}

/* An object event: the object's text, or a Table of its row. */
static bool watch_send_ver(struct watch *w, const char *type, const struct ver *v)
{
    cJSON *t;
    char rvs[24], *text;
    bool ok;

    if (!w->view.table)
        return watch_send(w, type, v->text);
    t = ebb__table_new(w->res, &w->view, !w->headers_sent);
    snprintf(rvs, sizeof(rvs), "%" PRIu64, v->rv);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(t, "metadata"), "resourceVersion",
                            rvs);
    text = ebb__table_add_row(t, w->res, &w->view, v->text, v->len) == 0
               ? cJSON_PrintUnformatted(t) : NULL;
    cJSON_Delete(t);
    if (text == NULL) {
        ebb_http_req_abort(w->req);
        watch_free(w);
        return false;
    }
    w->headers_sent = true;
    ok = watch_send(w, type, text);
    free(text);
    return ok;
}

/* What a change looks like through a watch's filter (-1: nothing). */
static int seen_as(const struct watch *w, const struct ev *e)
{
    bool now = ebb__filter_match(&w->f, e->obj);
    bool before = e->type == EV_MODIFIED && ebb__filter_match(&w->f, e->prev);

    switch (e->type) {
    case EV_ADDED: return now ? EV_ADDED : -1;
    case EV_DELETED: return now ? EV_DELETED : -1;
    default:
        if (now)
            return before ? EV_MODIFIED : EV_ADDED;
        return before ? EV_DELETED : -1;
    }
}

static bool watch_event(struct watch *w, const struct ev *e)
{
    int t = seen_as(w, e);
    return t < 0 || watch_send_ver(w, ev_names[t], e->obj);
}

void ebb__watch_notify(struct server *s, const struct ev *e)
{
    struct watch *w, *next;

    for (w = s->watches; w != NULL; w = next) {
        next = w->next;
        if (w->res == e->res && w->req != NULL)
            watch_event(w, e);
    }
}

static void on_watch_timeout(uv_timer_t *t)
{
    watch_end(t->data);
}

/* A watch that cannot start: one ERROR event with the Status, then the end
 * of the stream (the cacher's error watcher). */
static void reply_watch_error(struct ebb_http_req *r, const char *status)
{
    struct sb b = { 0 };

    ebb__sb_puts(&b, "{\"type\":\"ERROR\",\"object\":");
    ebb__sb_puts(&b, status);
    ebb__sb_puts(&b, "}\n");
    if (b.oom) {
        ebb_http_respond(r, 500, NULL, NULL, 0);
    } else if (ebb_http_stream_begin(r, 200, JSON) == 0 &&
               ebb_http_stream_write(r, b.p, b.n) == 0) {
        ebb_http_stream_end(r);
    }
    free(b.p);
}

static void reply_watch_expired(struct ebb_http_req *r, uint64_t want, uint64_t oldest)
{
    char st[400];

    snprintf(st, sizeof(st),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"too old resource version: %" PRIu64 " (%" PRIu64 ")\","
             "\"reason\":\"Expired\",\"code\":410}",
             want, oldest);
    reply_watch_error(r, st);
}

static void reply_watch_too_large(struct ebb_http_req *r, uint64_t want, uint64_t have)
{
    char st[600];

    snprintf(st, sizeof(st),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"Too large resource version: %" PRIu64 ", current: %" PRIu64 "\","
             "\"reason\":\"Timeout\",\"details\":{\"causes\":[{\"reason\":"
             "\"ResourceVersionTooLarge\",\"message\":\"Too large resource version\"}],"
             "\"retryAfterSeconds\":1},\"code\":504}",
             want, have);
    reply_watch_error(r, st);
}

void ebb__serve_watch(struct server *s, struct ebb_http_req *r, const struct route *rt)
{
    const char *rvq = ebb_http_req_query(r, "resourceVersion");
    bool initial = ebb__truthy(ebb_http_req_query(r, "sendInitialEvents"));
    struct table_view view;
    struct watch *w;
    uint64_t from = 0;
    long long secs = 0;
    bool replay = false;

    if (ebb__table_negotiate(r, &view) != 0 || !query_int(r, "timeoutSeconds", &secs))
        return;
    if (initial && s->o.watch_list == WL_REFUSE) {
        reply_invalid_options(r, "FieldValueForbidden", "Forbidden: resourceVersionMatch is forbidden for watch");
        return;
    }
    if (initial && s->o.watch_list == WL_ERROR) {
        reply_watch_error(r, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                             "\"message\":\"a watch stream was requested by the client but the required storage "
                             "feature RequestWatchProgress is disabled\",\"reason\":\"InternalError\",\"code\":500}");
        return;
    }
    if (rvq != NULL && rvq[0] != '\0' && strcmp(rvq, "0") != 0 && !initial) {
        if (!query_rv(r, rvq, &from))
            return;
        if (from < s->compacted) {
            reply_watch_expired(r, from, s->compacted);
            return;
        }
        if (from > s->rv) {
            reply_watch_too_large(r, from, s->rv);
            return;
        }
        replay = true;
    }
    if ((w = calloc(1, sizeof(*w))) == NULL) {
        ebb__reply_internal(r, "out of memory");
        return;
    }
    if (!ebb__request_filter(r, rt, &w->f)) {
        free(w);
        return;
    }
    w->s = s;
    w->res = rt->res;
    w->bookmarks = ebb__truthy(ebb_http_req_query(r, "allowWatchBookmarks"));
    w->view = view;
    uv_timer_init(s->loop, &w->timer);
    w->timer.data = w;
    w->next = s->watches;
    if (s->watches != NULL)
        s->watches->prev = w;
    s->watches = w;
    if (ebb_http_stream_begin(r, 200, JSON) != 0) {
        watch_free(w);
        return;
    }
    w->req = r;
    ebb_http_req_on_gone(r, on_watch_gone, w);
    if (replay) {
        for (size_t k = 0; k < s->log_n; k++) {
            struct ev *e = ebb__events_at(s, k);
            if (e->rv > from && e->res == w->res && !watch_event(w, e))
                return;
        }
    } else {
        struct store *st = &s->stores[w->res];
        for (size_t i = 0; i < st->n; i++)
            if (ebb__filter_match(&w->f, st->v[i]) &&
                !watch_send_ver(w, "ADDED", st->v[i]))
                return;
        if (initial && w->bookmarks && s->o.watch_list != WL_NO_BOOKMARK &&
            !watch_bookmark(w, s->o.watch_list != WL_NO_ANNOTATION))
            return;
    }
    if (secs > 0)
        uv_timer_start(&w->timer, on_watch_timeout, (uint64_t)secs * 1000, 0);
    if (w->res == R_PODS)
        ebb__churn_start(s);
}

void ebb__watch_bookmark_all(struct server *s)
{
    struct watch *w, *next;

    for (w = s->watches; w != NULL; w = next) {
        next = w->next;
        if (w->bookmarks && w->req != NULL)
            watch_bookmark(w, false);
    }
}

size_t ebb__watch_end_all(struct server *s)
{
    struct watch *w, *next;
    size_t n = 0;

    for (w = s->watches; w != NULL; w = next) {
        next = w->next;
        watch_end(w);
        n++;
    }
    return n;
}

void ebb__watch_flush_all(struct server *s)
{
    for (struct watch *w = s->watches, *next; w != NULL; w = next) {
        next = w->next;
        if (w->req != NULL)
            watch_flush(w);
    }
}

bool ebb__watch_lagging(struct server *s, int res, size_t bytes)
{
    for (struct watch *w = s->watches; w != NULL; w = w->next)
        if (w->res == res && w->req != NULL && ebb_http_stream_unsent(w->req) > bytes)
            return true;
    return false;
}
