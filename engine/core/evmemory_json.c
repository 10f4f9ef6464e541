/* The memory of evictions as JSON (ebb/evmemory.h): what `ebb run` keeps in
 * its ConfigMap (engine/kube/memory_store.c), which `ebb record` records
 * in a snapshot as the item it is (read back by cmd/simulate.c).
 *
 *   {"version":1,"window":86400,"entries":[
 *     {"t":1764320000,"ns":"shop","pod":"web-7c9f8d6b5-x2x4q","uid":"…",
 *      "k":"Deployment","w":"web","n":"node-a","pl":"LowNodeUtilization",
 *      "pr":"default","l":"node-b","r":"web-7c9f8d6b5-p8k2m","f":1,
 *      "b":["…"]}, …]}
 *
 * Keys are short because the object is bounded (EBB_EVMEM_MAX_BYTES): the
 * fewer bytes an entry takes, the more of the window fits. uid, l, r, f and
 * b (the peers: uids of the workload's pods created in the eviction's
 * second, there before it) are left out when absent or zero.
 *
 * Invariants: the encoding never exceeds its bound: entries are taken from
 * the newest back while they fit, so what is dropped is always the oldest;
 * the entries it holds are oldest first. Decoding is all or nothing: on any
 * error the memory is left empty (its window kept), never half-read; entries
 * out of time order are put in order, and an entry repeating one already
 * read (same time, namespace, pod and uid) is read once, its landing kept
 * from whichever copy knows it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/evmemory.h"

#define VERSION 1
/* What a decoder reads whole: the bound of the encoding with room for a
 * hand-edited object's whitespace, and a ConfigMap's own 1 MiB limit. */
#define MAX_TEXT ((size_t)1 << 20)
/* Times: 0 .. the end of year 9999 (what a Kubernetes timestamp can say). */
#define MAX_TIME INT64_C(253402300799)
/* A window: one second .. a year. */
#define MAX_WINDOW (366 * 24 * 3600)
/* The room the envelope {"version":1,"window":N,"entries":[]} takes. */
#define ENVELOPE 64

/* ---- encode ---------------------------------------------------------------- */

static bool add_str(cJSON *o, const char *key, ebb_str s)
{
    return s == NULL || cJSON_AddStringToObject(o, key, s) != NULL;
}

static cJSON *entry_json(const struct ebb_evmem_entry *e)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL)
        return NULL;
    if (cJSON_AddNumberToObject(o, "t", (double)e->at) == NULL || !add_str(o, "ns", e->ns) ||
        !add_str(o, "pod", e->pod) || !add_str(o, "uid", e->uid) || !add_str(o, "k", e->kind) ||
        !add_str(o, "w", e->workload) || !add_str(o, "n", e->node) ||
        !add_str(o, "pl", e->plugin) || !add_str(o, "pr", e->profile) ||
        !add_str(o, "l", e->landed) || !add_str(o, "r", e->replacement) ||
        (e->flags != 0 && cJSON_AddNumberToObject(o, "f", (double)e->flags) == NULL)) {
        cJSON_Delete(o);
        return NULL;
    }
    if (e->npeers > 0) {
        cJSON *b = cJSON_AddArrayToObject(o, "b");
        for (uint8_t i = 0; b != NULL && i < e->npeers; i++)
            if (!cJSON_AddItemToArray(b, cJSON_CreateString(e->peers[i])))
                b = NULL;
        if (b == NULL) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

char *ebb_evmem_encode(const struct ebb_evmem *m, size_t max_bytes, size_t *len)
{
    cJSON *root = NULL, *arr, **kept = NULL;
    size_t nkept = 0, used = ENVELOPE;
    char *text = NULL;

    if (max_bytes == 0)
        max_bytes = EBB_EVMEM_MAX_BYTES;
    if (m->n > 0 && (kept = malloc(m->n * sizeof(*kept))) == NULL)
        return NULL;
    root = cJSON_CreateObject();
    if (root == NULL || cJSON_AddNumberToObject(root, "version", VERSION) == NULL ||
        cJSON_AddNumberToObject(root, "window",
                                (double)(m->window > 0 ? m->window : EBB_EVMEM_WINDOW_DEFAULT)) == NULL ||
        (arr = cJSON_AddArrayToObject(root, "entries")) == NULL)
        goto out;
    /* Newest first, while they fit: each entry costs its own text and a
     * comma. */
    for (size_t i = m->n; i-- > 0;) {
        cJSON *o = entry_json(&m->v[i]);
        char *t;
        size_t tl;

        if (o == NULL || (t = cJSON_PrintUnformatted(o)) == NULL) {
            cJSON_Delete(o);
            goto out;
        }
        tl = strlen(t) + 1;
        cJSON_free(t);
        if (used + tl > max_bytes) {
            cJSON_Delete(o);
            break;
        }
        used += tl;
        kept[nkept++] = o;
    }
    while (nkept > 0)
        cJSON_AddItemToArray(arr, kept[--nkept]);
    text = cJSON_PrintUnformatted(root);
    if (text != NULL) {
        *len = strlen(text);
        /* by construction; a cut encoding would be worse than none */
        if (*len > max_bytes) {
            cJSON_free(text);
            text = NULL;
        }
    }
out:
    while (nkept > 0)
        cJSON_Delete(kept[--nkept]);
    free(kept);
    cJSON_Delete(root);
    return text;
}

/* ---- decode ---------------------------------------------------------------- */

enum name_kind { NAME_SUBDOMAIN, NAME_LABEL, NAME_KIND, NAME_TEXT, NAME_UID };

/* Kubernetes' rules for each kind of name: a DNS-1123 subdomain (pods,
 * nodes, workloads), a DNS-1123 label (namespaces), a kind (letters and
 * digits, an upper-case first), a plugin's or profile's name (printable
 * ASCII but spaces), a uid (hex digits and dashes). */
static bool name_ok(const char *s, size_t n, enum name_kind k)
{
    size_t max = k == NAME_LABEL || k == NAME_KIND ? 63 : k == NAME_UID ? 64 : k == NAME_TEXT ? 128 : 253;

    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool lower = (c >= 'a' && c <= 'z'), digit = (c >= '0' && c <= '9');
        switch (k) {
        case NAME_SUBDOMAIN:
        case NAME_LABEL:
            if (!(lower || digit || c == '-' || (c == '.' && k == NAME_SUBDOMAIN)))
                return false;
            if ((i == 0 || i == n - 1) && !(lower || digit))
                return false;
            break;
        case NAME_KIND:
            if (!(lower || digit || (c >= 'A' && c <= 'Z')) || (i == 0 && !(c >= 'A' && c <= 'Z')))
                return false;
            break;
        case NAME_TEXT:
            if (c <= ' ' || c > '~')
                return false;
            break;
        case NAME_UID:
            if (!(digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-'))
                return false;
            break;
        }
    }
    return true;
}

struct field {
    const char *key;
    enum name_kind kind;
    bool required;
    size_t off;
};

#define F(key, kind, req, member) { key, kind, req, offsetof(struct ebb_evmem_entry, member) }
static const struct field FIELDS[] = {
    F("ns", NAME_LABEL, true, ns),          F("pod", NAME_SUBDOMAIN, true, pod),
    F("uid", NAME_UID, false, uid),         F("k", NAME_KIND, true, kind),
    F("w", NAME_SUBDOMAIN, true, workload), F("n", NAME_SUBDOMAIN, true, node),
    F("pl", NAME_TEXT, true, plugin),       F("pr", NAME_TEXT, true, profile),
    F("l", NAME_SUBDOMAIN, false, landed),  F("r", NAME_SUBDOMAIN, false, replacement),
};
#undef F

static ebb_str *member(struct ebb_evmem_entry *e, const struct field *f)
{
    return (ebb_str *)((char *)e + f->off);
}

static void entry_drop(struct ebb_evmem_entry *e)
{
    for (size_t i = 0; i < EBB_ARRAY_LEN(FIELDS); i++)
        ebb_str_release(*member(e, &FIELDS[i]));
    for (uint8_t i = 0; i < e->npeers; i++)
        ebb_str_release(e->peers[i]);
    e->npeers = 0;
}

/* A whole number in [lo, hi] (JSON numbers are doubles: the bounds are
 * well inside 2^53). */
static bool int_in(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    double d;

    if (!cJSON_IsNumber(v))
        return false;
    d = v->valuedouble;
    if (!(d >= (double)lo && d <= (double)hi) || d != (double)(int64_t)d)
        return false;
    *out = (int64_t)d;
    return true;
}

static int bad(struct ebb_error *err, int code, const char *source, size_t i, const char *field,
               const char *fmt, const char *what)
{
    char where[64];

    if (i == SIZE_MAX)
        snprintf(where, sizeof(where), "%s", field);
    else
        snprintf(where, sizeof(where), "entries[%zu].%s", i, field);
    return ebb_error_set(err, code, source, 0, where, fmt, what);
}

/* Read entry `i` into *e (its strings interned, the caller's references). */
static int entry_read(const cJSON *o, size_t i, const char *source, struct ebb_evmem_entry *e,
                      struct ebb_error *err)
{
    const cJSON *v;
    int64_t x;
    uint32_t seen = 0;

    memset(e, 0, sizeof(*e));
    if (!cJSON_IsObject(o))
        return bad(err, EBB_ESCHEMA, source, i, "", "%s", "an entry must be an object");
    /* each key known, and once: cJSON would read the first of two */
    cJSON_ArrayForEach(v, o) {
        size_t k = strcmp(v->string, "t") == 0   ? EBB_ARRAY_LEN(FIELDS)
                   : strcmp(v->string, "f") == 0 ? EBB_ARRAY_LEN(FIELDS) + 1
                   : strcmp(v->string, "b") == 0 ? EBB_ARRAY_LEN(FIELDS) + 2 : 0;
        if (k == 0)
            while (k < EBB_ARRAY_LEN(FIELDS) && strcmp(v->string, FIELDS[k].key) != 0)
                k++;
        if (k == EBB_ARRAY_LEN(FIELDS) && strcmp(v->string, "t") != 0)
            return bad(err, EBB_ESCHEMA, source, i, v->string, "%s",
                       "unknown field (known: t ns pod uid k w n pl pr l r f b)");
        if (seen & (1u << k))
            return bad(err, EBB_ESCHEMA, source, i, v->string, "%s", "given twice");
        seen |= 1u << k;
    }
    v = cJSON_GetObjectItemCaseSensitive(o, "t");
    if (!int_in(v, 0, MAX_TIME, &e->at))
        return bad(err, EBB_ESCHEMA, source, i, "t", "%s",
                   v == NULL ? "missing (the eviction's time, unix seconds)"
                             : "must be a whole number of unix seconds, 0 to 253402300799");
    v = cJSON_GetObjectItemCaseSensitive(o, "f");
    if (v != NULL) {
        if (!int_in(v, 0, EBB_EVMEM_LANDED | EBB_EVMEM_BOUNCED | EBB_EVMEM_PEERS_CUT, &x))
            return bad(err, EBB_ESCHEMA, source, i, "f", "%s",
                       "must be a whole number of the flags 1 (landed), 2 (bounced) and 4 "
                       "(peers cut)");
        e->flags = (uint32_t)x;
    }
    v = cJSON_GetObjectItemCaseSensitive(o, "b");
    if (v != NULL) {
        const cJSON *u;
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > EBB_EVMEM_PEERS_MAX)
            return bad(err, EBB_ESCHEMA, source, i, "b", "%s",
                       "must be a list of up to 8 uids (the pods there in the eviction's second)");
        cJSON_ArrayForEach(u, v) {
            if (!cJSON_IsString(u) || !name_ok(u->valuestring, strlen(u->valuestring), NAME_UID)) {
                entry_drop(e);
                return bad(err, EBB_ESCHEMA, source, i, "b", "%s",
                           "must be a list of uids (hex digits and dashes, up to 64)");
            }
            if ((e->peers[e->npeers] = ebb_str_intern(u->valuestring, strlen(u->valuestring))) == NULL) {
                entry_drop(e);
                return ebb_error_set(err, EBB_ENOMEM, source, 0, NULL, "out of memory");
            }
            e->npeers++;
        }
    }
    for (size_t k = 0; k < EBB_ARRAY_LEN(FIELDS); k++) {
        const struct field *f = &FIELDS[k];
        size_t n;

        v = cJSON_GetObjectItemCaseSensitive(o, f->key);
        if (v == NULL) {
            if (f->required) {
                entry_drop(e);
                return bad(err, EBB_ESCHEMA, source, i, f->key, "%s", "missing");
            }
            continue;
        }
        if (!cJSON_IsString(v) || !name_ok(v->valuestring, n = strlen(v->valuestring), f->kind)) {
            entry_drop(e);
            return bad(err, EBB_ESCHEMA, source, i, f->key, "%s",
                       f->kind == NAME_LABEL ? "must be a namespace name (a DNS-1123 label)"
                       : f->kind == NAME_KIND ? "must be a kind (\"Deployment\", up to 63 letters and digits)"
                       : f->kind == NAME_TEXT ? "must be a name of up to 128 printable characters"
                       : f->kind == NAME_UID  ? "must be a uid (hex digits and dashes, up to 64)"
                                              : "must be a Kubernetes name (a DNS-1123 subdomain)");
        }
        if ((*member(e, f) = ebb_str_intern(v->valuestring, n)) == NULL) {
            entry_drop(e);
            return ebb_error_set(err, EBB_ENOMEM, source, 0, NULL, "out of memory");
        }
    }
    if ((e->flags & EBB_EVMEM_LANDED) != 0 && e->landed == NULL) {
        entry_drop(e);
        return bad(err, EBB_ESCHEMA, source, i, "f", "%s",
                   "says landed (1) but the entry has no \"l\" (the node it landed on)");
    }
    if ((e->flags & EBB_EVMEM_PEERS_CUT) != 0 && e->npeers < EBB_EVMEM_PEERS_MAX) {
        entry_drop(e);
        return bad(err, EBB_ESCHEMA, source, i, "f", "%s",
                   "says peers cut (4) but \"b\" holds fewer than 8 uids");
    }
    if ((e->flags & EBB_EVMEM_BOUNCED) != 0 && (e->flags & EBB_EVMEM_LANDED) == 0) {
        entry_drop(e);
        return bad(err, EBB_ESCHEMA, source, i, "f", "%s", "says bounced (2) but not landed (1)");
    }
    return 0;
}

/* The entry already read that `e` repeats, or NULL. Entries mostly come in
 * time order: the scan starts at the newest and stops below e->at. */
static struct ebb_evmem_entry *repeated(struct ebb_evmem *m, const struct ebb_evmem_entry *e)
{
    for (size_t i = m->n; i-- > 0;) {
        struct ebb_evmem_entry *o = &m->v[i];
        if (o->at < e->at)
            break;
        if (o->at == e->at && o->ns == e->ns && o->pod == e->pod && o->uid == e->uid)
            return o;
    }
    return NULL;
}

static int decode(struct ebb_evmem *m, const cJSON *root, const char *source, struct ebb_error *err)
{
    const cJSON *v, *entries;
    int64_t x;
    size_t i = 0;
    unsigned seen = 0;

    if (!cJSON_IsObject(root))
        return ebb_error_set(err, EBB_ESCHEMA, source, 0, NULL,
                             "the memory of evictions must be a JSON object "
                             "{\"version\":1,\"window\":S,\"entries\":[...]}");
    cJSON_ArrayForEach(v, root) {
        int k = strcmp(v->string, "version") == 0 ? 0 : strcmp(v->string, "window") == 0 ? 1
                : strcmp(v->string, "entries") == 0 ? 2 : -1;
        if (k < 0)
            return bad(err, EBB_ESCHEMA, source, SIZE_MAX, v->string, "%s",
                       "unknown field (known: version window entries)");
        if (seen & (1u << k))
            return bad(err, EBB_ESCHEMA, source, SIZE_MAX, v->string, "%s", "given twice");
        seen |= 1u << k;
    }
    v = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!int_in(v, VERSION, VERSION, &x))
        return bad(err, EBB_ESCHEMA, source, SIZE_MAX, "version", "%s",
                   v == NULL ? "missing (this ebb reads version 1)"
                             : "this ebb reads version 1 (written by a newer ebb?)");
    v = cJSON_GetObjectItemCaseSensitive(root, "window");
    if (v != NULL) {
        if (!int_in(v, 1, MAX_WINDOW, &x))
            return bad(err, EBB_ESCHEMA, source, SIZE_MAX, "window", "%s",
                       "must be a whole number of seconds, 1 to 31622400 (366 days)");
        m->window = x;
    }
    entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
    if (!cJSON_IsArray(entries))
        return bad(err, EBB_ESCHEMA, source, SIZE_MAX, "entries", "%s",
                   entries == NULL ? "missing (a list of evictions)" : "must be a list");
    cJSON_ArrayForEach(v, entries) {
        struct ebb_evmem_entry e, *o;
        int rc = entry_read(v, i, source, &e, err);

        if (rc != 0)
            return rc;
        if ((o = repeated(m, &e)) != NULL) {
            /* the copy that knows where the replacement landed wins */
            if ((e.flags & EBB_EVMEM_LANDED) && !(o->flags & EBB_EVMEM_LANDED)) {
                ebb_str_release(o->landed);
                ebb_str_release(o->replacement);
                o->landed = ebb_str_ref(e.landed);
                o->replacement = ebb_str_ref(e.replacement);
                o->flags = e.flags;
            }
        } else {
            rc = ebb_evmem_add(m, &e);
        }
        entry_drop(&e);
        if (rc != 0)
            return ebb_error_set(err, rc, source, 0, NULL, "out of memory");
        i++;
    }
    return 0;
}

int ebb_evmem_decode(struct ebb_evmem *m, const char *text, size_t len, const char *source,
                     struct ebb_error *err)
{
    int64_t window = m->window;
    cJSON *root;
    int rc;

    ebb_evmem_free(m);
    if (source == NULL)
        source = "memory of evictions";
    if (len > MAX_TEXT)
        return ebb_error_set(err, EBB_ELIMIT, source, 0, NULL,
                             "the memory of evictions is %zu bytes, more than the 1 MiB it may be", len);
    root = cJSON_ParseWithLength(text, len);
    if (root == NULL)
        return ebb_error_set(err, EBB_EPARSE, source, 0, NULL,
                             "the memory of evictions is not JSON (near byte %zu)",
                             cJSON_GetErrorPtr() != NULL && cJSON_GetErrorPtr() >= text
                                 ? (size_t)(cJSON_GetErrorPtr() - text) : (size_t)0);
    rc = decode(m, root, source, err);
    cJSON_Delete(root);
    if (rc != 0) {
        ebb_evmem_free(m);
        m->window = window;
    }
    m->dirty = false;
    m->generation++;
    return rc;
}
