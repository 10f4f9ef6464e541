/* The memory of evictions kept in the cluster (ebb/memstore.h): GET, PUT
 * and POST of one ConfigMap through the kube client, on the loop thread, the
 * way leader.c keeps its Lease. `ebb run` (cmd/run_memory.c) loads it at
 * start and when it becomes the leader, and saves it at most once a cycle.
 *
 * Invariants: at most one request in flight (`req`); a write carries the
 * resourceVersion last read or written (`rv`), so a write never overwrites
 * an object changed since, and a 409 is answered by one read, one merge
 * and one more write, never a loop; nothing is written before a load has
 * succeeded once (`loaded`), so an object ebb could not read is never
 * overwritten blindly; every answer that is not the expected one is kept
 * in `error` (for /readyz) and logged once per change. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/kube.h"
#include "ebb/memstore.h"

enum op { OP_NONE, OP_LOAD, OP_WRITE, OP_CONFLICT_READ };

struct ebb_memstore {
    struct ebb_kube *kube;
    char ns[64];
    ebb_memstore_load_cb on_load;
    void *ud;
    struct ebb_kube_req *req;
    enum op op;
    bool loaded, exists, save_failed, load_wanted, retried;
    char rv[128];
    char *text;                 /* the save in flight (or waiting) */
    size_t len;
    char *next;                 /* a save asked while busy */
    size_t next_len;
    struct ebb_evmem read;      /* the last load's memory (handed to on_load) */
    char error[1024];
    char source[160];           /* "ConfigMap ns/name" */
};

static void fail(struct ebb_memstore *s, const char *verb, int status, const char *body, size_t len)
{
    char what[256], err[sizeof(s->error)];

    snprintf(what, sizeof(what), "%s %s", verb, s->source);
    ebb_kube_answer_text(what, status, body, len, err, sizeof(err));
    if (status == 403)
        snprintf(err + strlen(err), sizeof(err) - strlen(err),
                 " (ebb needs %s on configmaps named " EBB_MEMSTORE_NAME " in %s: deploy/base/rbac.yaml)",
                 strcmp(verb, "read") == 0 ? "get" : strcmp(verb, "create") == 0 ? "create" : "update",
                 s->ns);
    if (strcmp(err, s->error) != 0)
        ebb_log(EBB_LOG_ERROR, "memory of evictions: %s", err);
    memcpy(s->error, err, sizeof(err));
}

static void fine(struct ebb_memstore *s)
{
    if (s->error[0])
        ebb_log(EBB_LOG_INFO, "memory of evictions: %s can be read and written again", s->source);
    s->error[0] = '\0';
}

int ebb_memstore_create(struct ebb_kube *kube, const char *ns, ebb_memstore_load_cb on_load, void *ud,
                        struct ebb_memstore **out)
{
    struct ebb_memstore *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return EBB_ENOMEM;
    s->kube = kube;
    snprintf(s->ns, sizeof(s->ns), "%s", ns);
    snprintf(s->source, sizeof(s->source), "ConfigMap %s/" EBB_MEMSTORE_NAME, s->ns);
    s->on_load = on_load;
    s->ud = ud;
    ebb_evmem_init(&s->read, 0);
    *out = s;
    return 0;
}

void ebb_memstore_destroy(struct ebb_memstore *s)
{
    if (s == NULL)
        return;
    if (s->req != NULL)
        ebb_kube_cancel(s->req);
    free(s->text);
    free(s->next);
    ebb_evmem_free(&s->read);
    free(s);
}

void ebb_memstore_stop_reading(struct ebb_memstore *s)
{
    if (s == NULL)
        return;
    s->load_wanted = false;
    if (s->req != NULL && s->op == OP_LOAD)
        ebb_kube_cancel(s->req);   /* on_done runs now, with EBB_ESTATE */
}

bool ebb_memstore_loaded(const struct ebb_memstore *s) { return s->loaded; }
bool ebb_memstore_save_failed(const struct ebb_memstore *s) { return s->save_failed; }
bool ebb_memstore_busy(const struct ebb_memstore *s) { return s->op != OP_NONE; }
const char *ebb_memstore_error(const struct ebb_memstore *s) { return s->error[0] ? s->error : NULL; }
struct ebb_evmem *ebb_memstore_read(struct ebb_memstore *s) { return &s->read; }

/* ---- merge ------------------------------------------------------------------------ */

int ebb_memstore_merge(struct ebb_evmem *into, const struct ebb_evmem *from)
{
    for (size_t i = 0; i < from->n; i++) {
        const struct ebb_evmem_entry *e = &from->v[i];
        struct ebb_evmem_entry *o = NULL;
        int rc;

        /* both sorted by time: the same eviction has the same `at` */
        for (size_t k = into->n; k-- > 0 && into->v[k].at >= e->at;)
            if (into->v[k].at == e->at && into->v[k].ns == e->ns && into->v[k].pod == e->pod &&
                into->v[k].uid == e->uid) {
                o = &into->v[k];
                break;
            }
        if (o == NULL) {
            if ((rc = ebb_evmem_add(into, e)) != 0)
                return rc;
        } else if ((e->flags & EBB_EVMEM_LANDED) && !(o->flags & EBB_EVMEM_LANDED)) {
            ebb_str_release(o->landed);
            ebb_str_release(o->replacement);
            o->landed = ebb_str_ref(e->landed);
            o->replacement = ebb_str_ref(e->replacement);
            o->flags = e->flags;
            into->dirty = true;
            into->generation++;
        }
    }
    return 0;
}

/* ---- the object ------------------------------------------------------------------- */

static void start_next(struct ebb_memstore *s);

/* The ConfigMap's resourceVersion and the text under its key (NULL when
 * the key is absent) from a GET/PUT/POST answer; false when the answer is
 * not a ConfigMap. */
static bool configmap_read(struct ebb_memstore *s, const char *body, size_t len, cJSON **root,
                           const char **text)
{
    const cJSON *rv, *data, *v;

    *text = NULL;
    *root = cJSON_ParseWithLength(body, len);
    rv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(*root, "metadata"),
                                          "resourceVersion");
    if (!cJSON_IsString(rv) || strlen(rv->valuestring) >= sizeof(s->rv)) {
        cJSON_Delete(*root);
        *root = NULL;
        return false;
    }
    snprintf(s->rv, sizeof(s->rv), "%s", rv->valuestring);
    data = cJSON_GetObjectItemCaseSensitive(*root, "data");
    v = cJSON_GetObjectItemCaseSensitive(data, EBB_MEMSTORE_KEY);
    if (cJSON_IsString(v))
        *text = v->valuestring;
    return true;
}

static char *configmap_body(struct ebb_memstore *s, const char *text)
{
    cJSON *o = cJSON_CreateObject(), *md, *labels, *data;
    char *out = NULL;

    if (o == NULL || cJSON_AddStringToObject(o, "apiVersion", "v1") == NULL ||
        cJSON_AddStringToObject(o, "kind", "ConfigMap") == NULL ||
        (md = cJSON_AddObjectToObject(o, "metadata")) == NULL ||
        cJSON_AddStringToObject(md, "name", EBB_MEMSTORE_NAME) == NULL ||
        cJSON_AddStringToObject(md, "namespace", s->ns) == NULL ||
        (s->exists && cJSON_AddStringToObject(md, "resourceVersion", s->rv) == NULL) ||
        (labels = cJSON_AddObjectToObject(md, "labels")) == NULL ||
        cJSON_AddStringToObject(labels, "app.kubernetes.io/name", "ebb") == NULL ||
        cJSON_AddStringToObject(labels, "app.kubernetes.io/component", "eviction-memory") == NULL ||
        (data = cJSON_AddObjectToObject(o, "data")) == NULL ||
        cJSON_AddStringToObject(data, EBB_MEMSTORE_KEY, text) == NULL)
        goto out;
    out = cJSON_PrintUnformatted(o);
out:
    cJSON_Delete(o);
    return out;
}

static void on_done(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud);

static void request(struct ebb_memstore *s, enum op op, const char *method, const char *body)
{
    char path[256];
    struct ebb_kube_req_opts o = { .method = method, .on_done = on_done, .ud = s };

    if (strcmp(method, "POST") == 0)
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", s->ns);
    else
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/" EBB_MEMSTORE_NAME, s->ns);
    o.path = path;
    o.body = body;
    o.body_len = body ? strlen(body) : 0;
    o.write = body != NULL;
    o.max_bytes = 4u << 20;
    s->op = op;
    if (ebb_kube_request(s->kube, &o, &s->req) != 0) {
        s->op = OP_NONE;
        s->req = NULL;
        if (op == OP_LOAD && s->on_load)
            s->on_load(s->ud, false, &s->read);
        else if (op != OP_LOAD)
            s->save_failed = true;
    }
}

static void write_text(struct ebb_memstore *s)
{
    char *body = configmap_body(s, s->text);

    if (body == NULL) {
        s->save_failed = true;
        return;
    }
    request(s, OP_WRITE, s->exists ? "PUT" : "POST", body);
    free(body);
}

/* A 409: what the object holds now merged with what we meant to write,
 * bounded again, written once more. */
static void conflict_merge(struct ebb_memstore *s, const char *text)
{
    struct ebb_evmem theirs, ours;
    struct ebb_error err = { 0 };
    char *merged;
    size_t len;

    ebb_evmem_init(&theirs, 0);
    ebb_evmem_init(&ours, 0);
    if (text != NULL && ebb_evmem_decode(&theirs, text, strlen(text), s->source, &err) != 0)
        ebb_log(EBB_LOG_WARN, "memory of evictions: %s: %s (replaced by ebb's)", s->source, err.msg);
    if (ebb_evmem_decode(&ours, s->text, s->len, "ebb's memory", &err) == 0 &&
        ebb_memstore_merge(&ours, &theirs) == 0 &&
        (merged = ebb_evmem_encode(&ours, 0, &len)) != NULL) {
        free(s->text);
        s->text = merged;
        s->len = len;
    }
    ebb_evmem_free(&theirs);
    ebb_evmem_free(&ours);
    s->retried = true;
    write_text(s);
}

static void on_done(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct ebb_memstore *s = ud;
    enum op op = s->op;
    const char *text;
    cJSON *root = NULL;
    (void)req;

    s->req = NULL;
    s->op = OP_NONE;
    if (status == EBB_ESTATE)
        return;   /* cancelled: the store is going */
    switch (op) {
    case OP_LOAD: {
        struct ebb_error err = { 0 };
        bool ok = true;

        ebb_evmem_free(&s->read);
        ebb_evmem_init(&s->read, 0);
        if (status == 404) {
            s->exists = false;
            s->rv[0] = '\0';
            fine(s);
        } else if (status == 200 && configmap_read(s, body, len, &root, &text)) {
            s->exists = true;
            if (text != NULL && ebb_evmem_decode(&s->read, text, strlen(text), s->source, &err) != 0) {
                /* unreadable content: said, and replaced by the next save
                 * (the object is ebb's alone) */
                char msg[sizeof(s->error)];
                ebb_error_format(&err, msg, sizeof(msg));
                if (strcmp(msg, s->error) != 0)
                    ebb_log(EBB_LOG_ERROR, "memory of evictions: %s (starting from an empty memory; "
                            "the next save replaces it)", msg);
                snprintf(s->error, sizeof(s->error), "%s", msg);
            } else {
                fine(s);
            }
            cJSON_Delete(root);
        } else {
            fail(s, "read", status, body, len);
            ok = false;
        }
        if (ok) {
            s->loaded = true;
            /* a save made before this read lacks what it brought: the
             * caller merges it and saves again */
            if (s->next != NULL) {
                free(s->next);
                s->next = NULL;
                s->save_failed = true;
            }
        }
        if (s->on_load)
            s->on_load(s->ud, ok, &s->read);
        break;
    }
    case OP_WRITE:
        if ((status == 200 || status == 201) && configmap_read(s, body, len, &root, &text)) {
            s->exists = true;
            s->save_failed = false;
            s->retried = false;
            cJSON_Delete(root);
            fine(s);
        } else if ((status == 409 || (status == 404 && s->exists)) && !s->retried) {
            /* someone wrote first (an old leader), or the object went: read, merge, once */
            s->exists = false;
            request(s, OP_CONFLICT_READ, "GET", NULL);
            return;
        } else {
            fail(s, s->exists ? "update" : "create", status, body, len);
            s->save_failed = true;
            s->retried = false;
            s->rv[0] = '\0';
            s->exists = false;
            s->loaded = s->loaded && status != 409;   /* a second 409: read before writing again */
        }
        break;
    case OP_CONFLICT_READ:
        if (status == 200 && configmap_read(s, body, len, &root, &text)) {
            s->exists = true;
            conflict_merge(s, text);
            cJSON_Delete(root);
            return;
        }
        if (status == 404) {
            s->exists = false;
            conflict_merge(s, NULL);
            return;
        }
        fail(s, "read", status, body, len);
        s->save_failed = true;
        s->retried = false;
        break;
    case OP_NONE:
        break;
    }
    start_next(s);
}

static void start_next(struct ebb_memstore *s)
{
    if (s->op != OP_NONE)
        return;
    if (s->load_wanted) {
        s->load_wanted = false;
        request(s, OP_LOAD, "GET", NULL);
        return;
    }
    if (s->next != NULL && s->loaded) {
        free(s->text);
        s->text = s->next;
        s->len = s->next_len;
        s->next = NULL;
        write_text(s);
    }
}

void ebb_memstore_load(struct ebb_memstore *s)
{
    s->load_wanted = true;
    start_next(s);
}

void ebb_memstore_save(struct ebb_memstore *s, const char *text, size_t len)
{
    char *copy = malloc(len + 1);

    if (copy == NULL) {
        s->save_failed = true;
        return;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    free(s->next);
    s->next = copy;
    s->next_len = len;
    start_next(s);
}
