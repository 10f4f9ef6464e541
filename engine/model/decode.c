/* The decode state, the typed getters, the one array reader, and the shapes
 * several kinds share (labels, resource lists, metadata, conditions): what
 * every decode_*.c file reads an object with (decode_int.h).
 *
 * One pass over each object: strings are interned, quantities parsed into
 * int64, everything the engine does not read (managedFields, env, probes,
 * the last-applied annotation...) is never looked at. Errors carry the path
 * of the bad field inside the object, formatted only when something fails. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/quantity.h"
#include "base/vec.h"
#include "model/decode_int.h"

#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

/* ---- error paths --------------------------------------------------------- */

/* See ebb/decode.h: an error names what was wrong without carrying what
 * would break a log line, an Event or a terminal. */
const char *ebb_decode_shown(const char *s, char *buf, size_t len)
{
    size_t o = 0;

    if (len < 4) {
        if (len > 0)
            buf[0] = '\0';
        return buf;
    }
    if (s == NULL)
        s = "";
    while (*s != '\0') {
        unsigned char c = (unsigned char)*s;
        size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (n == 0 || !ebb_utf8_valid(s, n) || strnlen(s, n) < n)
            n = 1, c = '?';
        if (o + n + 4 > len) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (n == 1)
            buf[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
        else
            memcpy(buf + o, s, n), o += n;
        s += n;
    }
    buf[o] = '\0';
    return buf;
}

static void append_seg(char *buf, size_t len, size_t *off, const char *key, int idx)
{
    int k;

    if (*off + 1 >= len)
        return;
    if (key != NULL)
        k = snprintf(buf + *off, len - *off, "%s%s", *off ? "." : "", SHOWN(key));
    else
        k = snprintf(buf + *off, len - *off, "[%d]", idx);
    if (k > 0)
        *off = (size_t)k >= len - *off ? len - 1 : *off + (size_t)k;
}

/* "spec.containers[1].resources" (+ "." last when last is not NULL). */
static void format_path(const struct dec *d, const char *last, char *buf, size_t len)
{
    int n = d->depth < DEC_MAX_DEPTH ? d->depth : DEC_MAX_DEPTH;
    size_t off = 0;

    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        append_seg(buf, len, &off, d->st[i].key, d->st[i].idx);
    if (last != NULL)
        append_seg(buf, len, &off, last, -1);
}

int ebb__fail(struct dec *d, int code, const char *last, const char *fmt, ...)
{
    /* larger than ebb_error's: what is longer is cut there, with an ellipsis */
    char field[1024], msg[2048];
    va_list ap;

    if (d->err == NULL)
        return code;
    format_path(d, last, field, sizeof(field));
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* through ebb_error_set: escaped like every error message (a value quoted
     * in it is an object's) */
    return ebb_error_set(d->err, code, NULL, 0, field, "%s", msg);
}

int ebb__nomem(struct dec *d)
{
    return ebb__fail(d, EBB_ENOMEM, NULL, "out of memory");
}

static const char *jtype(const cJSON *j)
{
    if (cJSON_IsString(j))
        return "a string";
    if (cJSON_IsNumber(j))
        return "a number";
    if (cJSON_IsBool(j))
        return "a boolean";
    if (cJSON_IsArray(j))
        return "an array";
    if (cJSON_IsObject(j))
        return "an object";
    return "null";
}

int ebb__expected(struct dec *d, const char *key, const char *what, const cJSON *j)
{
    return ebb__fail(d, EBB_ESCHEMA, key, "expected %s, got %s", what, jtype(j));
}

/* ---- typed getters --------------------------------------------------------- */

int ebb__intern(struct dec *d, const char *key, const char *s, ebb_str *out)
{
    size_t n = strlen(s);

    if ((d->kept += n) > d->kept_max)
        return ebb__fail(d, EBB_ELIMIT, key, "the object holds more than %zu MiB of text: not "
                         "one a Kubernetes API server keeps (etcd: 1.5 MiB)",
                         EBB_OBJECT_KEPT_MAX >> 20);
    if (!ebb_utf8_valid(s, n))
        return ebb__fail(d, EBB_ESCHEMA, key, "not valid UTF-8");
    if ((*out = ebb_str_intern(s, n)) == NULL)
        return ebb__fail(d, EBB_ENOMEM, key, "out of memory");
    return 0;
}

/* o[key] into *out when it is of `type` (cJSON type bits), NULL when
 * absent or null; any other value is an error naming key ("expected
 * <what>"). Every typed getter reads through here. */
static inline __attribute__((always_inline)) int typed_at(struct dec *d, const cJSON *o,
                                                          const char *key, int type,
                                                          const char *what, const cJSON **out)
{
    const cJSON *j = ebb__child(o, key);

    *out = NULL;
    if (j == NULL)
        return 0;
    if ((j->type & type) == 0)
        return ebb__expected(d, key, what, j);
    *out = j;
    return 0;
}

int ebb__text_at(struct dec *d, const cJSON *o, const char *key, const char **out)
{
    const cJSON *j;
    int rc = typed_at(d, o, key, cJSON_String, "a string", &j);

    *out = j != NULL ? j->valuestring : NULL;
    return rc;
}

int ebb__obj_at(struct dec *d, const cJSON *o, const char *key, const cJSON **out)
{
    return typed_at(d, o, key, cJSON_Object, "an object", out);
}

/* ebb__arr_at's body, inlined into the array reader: every array field
 * decode reads passes here, most of them present and short. */
static inline __attribute__((always_inline)) int arr_at(struct dec *d, const cJSON *o,
                                                        const char *key, const cJSON **first,
                                                        size_t *n)
{
    const cJSON *j, *c;
    int rc;

    *first = NULL;
    *n = 0;
    if ((rc = typed_at(d, o, key, cJSON_Array, "an array", &j)) != 0 || j == NULL)
        return rc;
    for (c = j->child; c != NULL; c = c->next)
        (*n)++;
    if (*n > UINT16_MAX)
        return ebb__fail(d, EBB_ESCHEMA, key, "too many entries (%zu, at most %u)", *n,
                         (unsigned)UINT16_MAX);
    *first = j->child;
    return 0;
}

int ebb__arr_at(struct dec *d, const cJSON *o, const char *key, const cJSON **first, size_t *n)
{
    return arr_at(d, o, key, first, n);
}

int ebb__int_at(struct dec *d, const cJSON *o, const char *key, int64_t lo, int64_t hi,
                int64_t *out, bool *present)
{
    const cJSON *j;
    double v;
    int rc;

    if (present)
        *present = false;
    if ((rc = typed_at(d, o, key, cJSON_Number, "an integer", &j)) != 0 || j == NULL)
        return rc;
    v = j->valuedouble;
    if (v != floor(v) || v < (double)lo || v > (double)hi)
        return ebb__fail(d, EBB_ESCHEMA, key, "expected an integer in [%lld, %lld], got %.17g",
                         (long long)lo, (long long)hi, v);
    *out = v >= 9223372036854775807.0 ? INT64_MAX : (int64_t)v;
    if (present)
        *present = true;
    return 0;
}

int ebb__i32_at(struct dec *d, const cJSON *o, const char *key, int32_t *out, bool *present)
{
    int64_t v;
    bool has;
    int rc = ebb__int_at(d, o, key, INT32_MIN, INT32_MAX, &v, &has);

    if (rc == 0 && has)
        *out = (int32_t)v;
    if (present)
        *present = has;
    return rc;
}

int ebb__bool_at(struct dec *d, const cJSON *o, const char *key, bool *out)
{
    const cJSON *j;
    int rc = typed_at(d, o, key, cJSON_True | cJSON_False, "a boolean", &j);

    if (j != NULL)
        *out = cJSON_IsTrue(j);
    return rc;
}

int ebb__time_at(struct dec *d, const cJSON *o, const char *key, int64_t *out)
{
    const char *s;
    int rc;

    *out = EBB_TIME_NONE;
    if ((rc = ebb__text_at(d, o, key, &s)) != 0 || s == NULL)
        return rc;
    if (ebb_time_parse(s, out) != 0) {
        *out = EBB_TIME_NONE;
        return ebb__fail(d, EBB_ESCHEMA, key, "\"%s\" is not an RFC 3339 time", SHOWN(s));
    }
    return 0;
}

/* ---- the one array reader ---------------------------------------------------- */

/* Invariant: every array field decode reads, of every kind, goes through
 * here (the ARRAY_AT, EACH_AT and ebb__strs_at of decode_int.h; a field
 * only counted goes through ebb__arr_at). So an array is checked in one
 * place with the same words wherever it is: its type, its bound
 * (UINT16_MAX, what the model's counts hold), each entry's type; each
 * error names the field, or the entry as field[i]; and what is half built
 * when an entry fails belongs to the owner, who frees it (each entry is
 * counted before it is read, in an array made zeroed). */
int ebb__array_at(struct dec *d, const cJSON *o, const char *key, int type, ebb__entry_fn *fn,
                  void *ctx, size_t size, void *arrp, uint16_t *n)
{
    const cJSON *e;
    char *arr = NULL;
    size_t len;
    int rc, i = 0;

    if ((rc = arr_at(d, o, key, &e, &len)) != 0 || len == 0)
        return rc;
    if (size > 0) {
        if ((arr = calloc(len, size)) == NULL)
            return ebb__nomem(d);
        /* the caller's pointer is a T *: set through its bytes */
        memcpy(arrp, &arr, sizeof(arr));
    }
    ebb__push(d, key);
    for (; rc == 0 && e != NULL; e = e->next, i++) {
        ebb__push_i(d, i);
        if ((e->type & type) == 0) {
            rc = ebb__expected(d, NULL, type == cJSON_String ? "a string" : "an object", e);
        } else {
            if (n != NULL)
                (*n)++;
            rc = fn(d, e, arr != NULL ? arr + (size_t)i * size : NULL, ctx);
        }
        ebb__pop(d);
    }
    ebb__pop(d);
    return rc;
}

static int str_entry(struct dec *d, const cJSON *e, void *slot, void *ctx)
{
    (void)ctx;
    return ebb__intern(d, NULL, e->valuestring, slot);
}

int ebb__strs_at(struct dec *d, const cJSON *o, const char *key, ebb_str **out, uint16_t *n)
{
    return ebb__array_at(d, o, key, cJSON_String, str_entry, NULL, sizeof(**out), out, n);
}

/* ---- labels ---------------------------------------------------------------- */

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct ebb_kv *)a)->key, ((const struct ebb_kv *)b)->key);
}

/* Sort by key (strcmp), stable, then drop earlier duplicates: a JSON object
 * with a key twice means the last value, as Go decodes it. Kubernetes prints
 * maps sorted, so the common case is one comparison per entry; any order is
 * O(n log n). */
static int labels_sort(struct ebb_labels *l)
{
    uint32_t i, w;

    if (ebb__sort_stable(l->kv, l->n, sizeof(*l->kv), kv_cmp) != 0)
        return EBB_ENOMEM;
    for (i = 1, w = 1; i < l->n; i++) {
        if (l->kv[i].key == l->kv[w - 1].key) {
            ebb_str_release(l->kv[w - 1].key);
            ebb_str_release(l->kv[w - 1].value);
            l->kv[w - 1] = l->kv[i];
        } else {
            l->kv[w++] = l->kv[i];
        }
    }
    if (l->n > 0)
        l->n = w;
    return 0;
}

int ebb__map_at(struct dec *d, const cJSON *o, const char *key, const cJSON **m, size_t *n)
{
    int rc = ebb__obj_at(d, o, key, m);

    *n = 0;
    for (const cJSON *c = *m != NULL ? (*m)->child : NULL; c != NULL; c = c->next)
        (*n)++;
    return rc;
}

int ebb__labels_at(struct dec *d, const cJSON *o, const char *key, struct ebb_labels *out,
                   bool drop_applied)
{
    const cJSON *m, *c;
    size_t n;
    int rc;

    if ((rc = ebb__map_at(d, o, key, &m, &n)) != 0 || n == 0)
        return rc;
    if ((out->kv = calloc(n, sizeof(*out->kv))) == NULL)
        return ebb__nomem(d);
    ebb__push(d, key);
    for (c = m->child; c != NULL; c = c->next) {
        struct ebb_kv *kv = &out->kv[out->n];
        if (drop_applied && strcmp(c->string, LAST_APPLIED) == 0)
            continue;
        if (!cJSON_IsString(c)) {
            rc = ebb__expected(d, c->string, "a string", c);
            break;
        }
        if ((rc = ebb__intern(d, c->string, c->string, &kv->key)) != 0)
            break;
        out->n++;
        if ((rc = ebb__intern(d, c->string, c->valuestring, &kv->value)) != 0)
            break;
    }
    ebb__pop(d);
    if (rc == 0 && labels_sort(out) != 0)
        rc = ebb__nomem(d);
    return rc;
}

/* ---- quantities and resource lists ----------------------------------------- */

int ebb_decode_quantity(const cJSON *j, const char *resource, int64_t *out)
{
    char buf[64], *e;

    if (j == NULL || resource == NULL || out == NULL)
        return EBB_EINVAL;
    if (cJSON_IsString(j))
        return ebb_quantity_parse_resource(resource, j->valuestring, out) == 0 ? 0
                                                                               : EBB_EPARSE;
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble))
        return EBB_ESCHEMA;
    /* 15 significant digits print every decimal a person writes exactly
     * (0.1 stays "0.1"); the quantity parser then rounds as the API does. */
    snprintf(buf, sizeof(buf), "%.15g", j->valuedouble);
    if ((e = strstr(buf, "e+")) != NULL)
        memmove(e + 1, e + 2, strlen(e + 2) + 1);
    return ebb_quantity_parse_resource(resource, buf, out) == 0 ? 0 : EBB_EPARSE;
}

void ebb__racc_add(struct racc *a, const struct racc *b)
{
    for (uint64_t m = b->has; m != 0; m &= m - 1) {
        int id = __builtin_ctzll(m);
        a->v[id] = a->has & (1ull << id) ? ebb_q_add(a->v[id], b->v[id]) : b->v[id];
    }
    a->has |= b->has;
}

/* maxResourceList: every key of b, raised to b's value where larger. */
void ebb__racc_max(struct racc *a, const struct racc *b)
{
    for (uint64_t m = b->has; m != 0; m &= m - 1) {
        int id = __builtin_ctzll(m);
        if (!(a->has & (1ull << id)) || b->v[id] > a->v[id])
            a->v[id] = b->v[id];
    }
    a->has |= b->has;
}

void ebb__racc_clear(struct racc *a)
{
    for (uint64_t m = a->has; m != 0; m &= m - 1)
        a->v[__builtin_ctzll(m)] = 0;
    a->has = 0;
}

int ebb__reslist(struct dec *d, const cJSON *m, const char *skip, int unknown, struct racc *a)
{
    const cJSON *c;
    int id, rc;
    int64_t v;

    for (c = m->child; c != NULL; c = c->next) {
        if (skip != NULL && strcmp(c->string, skip) == 0)
            continue;
        if (c->string[0] == '\0' || !ebb_utf8_valid(c->string, strlen(c->string)))
            return ebb__fail(d, EBB_ESCHEMA, c->string, "not a resource name");
        if ((rc = ebb_decode_quantity(c, c->string, &v)) != 0) {
            if (cJSON_IsString(c))
                return ebb__fail(d, EBB_ESCHEMA, c->string, "\"%s\" is not a quantity",
                                 SHOWN(c->valuestring));
            return ebb__expected(d, c->string, "a quantity", c);
        }
        if ((id = ebb_resource_admit(c->string, &d->res_budget)) < 0 || id >= EBB_RES_MAX) {
            /* a request of 0 asks for nothing (the scheduler skips it) */
            if (unknown == RES_DROP || v == 0)
                continue;
            id = EBB_RES_UNREGISTERED;
            v = a->has & (1ull << id) ? ebb_q_add(a->v[id], 1) : 1;
        }
        a->v[id] = v;
        a->has |= 1ull << id;
    }
    return 0;
}

int ebb__reslist_at(struct dec *d, const cJSON *o, const char *key, int unknown, struct racc *a)
{
    const cJSON *m;
    int rc;

    if ((rc = ebb__obj_at(d, o, key, &m)) != 0 || m == NULL)
        return rc;
    ebb__push(d, key);
    rc = ebb__reslist(d, m, NULL, unknown, a);
    ebb__pop(d);
    return rc;
}

int ebb__racc_emit(struct dec *d, const struct racc *a, struct ebb_res *out)
{
    int n = __builtin_popcountll(a->has), i = 0;

    out->n = 0;
    out->q = NULL;
    if (n == 0)
        return 0;
    /* zeroed: the padding too, so that equal lists are equal bytes (ebb/share.h) */
    if ((out->q = calloc((size_t)n, sizeof(*out->q))) == NULL)
        return ebb__nomem(d);
    for (uint64_t m = a->has; m != 0; m &= m - 1, i++) {
        out->q[i].id = (uint16_t)__builtin_ctzll(m);
        out->q[i].v = a->v[out->q[i].id];
    }
    out->n = (uint16_t)n;
    return 0;
}

int ebb__res_at(struct dec *d, const cJSON *o, const char *key, struct ebb_res *out)
{
    struct racc a;
    int rc;

    a.has = 0;
    if ((rc = ebb__reslist_at(d, o, key, RES_DROP, &a)) != 0)
        return rc;
    return ebb__racc_emit(d, &a, out);
}

/* ---- metadata and conditions ------------------------------------------------- */

int ebb__meta_at(struct dec *d, const cJSON *obj, const cJSON **meta, ebb_str *ns, ebb_str *name)
{
    int rc;

    if ((rc = ebb__obj_at(d, obj, "metadata", meta)) != 0)
        return rc;
    ebb__push(d, "metadata");
    if ((rc = ebb__str_at(d, *meta, "name", name)) == 0 && (*name == NULL || **name == '\0'))
        rc = ebb__fail(d, EBB_ESCHEMA, "name", "required");
    if (rc == 0 && ns != NULL) {
        if ((rc = ebb__str_at(d, *meta, "namespace", ns)) == 0 && (*ns == NULL || **ns == '\0')) {
            ebb_str_release(*ns);
            rc = ebb__intern(d, "namespace", "default", ns);
        }
    }
    ebb__pop(d);
    return rc;
}

/* One condition into slot, or only read for Ready (slot NULL: a node's). */
static int condition(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_condition tmp = { .last_transition = EBB_TIME_NONE };
    struct ebb_condition *cd = slot != NULL ? slot : &tmp;
    bool *ready = ctx;
    int rc;

    cd->last_transition = EBB_TIME_NONE;
    if ((rc = ebb__str_at(d, c, "type", &cd->type)) == 0 &&
        (rc = ebb__str_at(d, c, "status", &cd->status)) == 0 && slot != NULL &&
        (rc = ebb__str_at(d, c, "reason", &cd->reason)) == 0)
        rc = ebb__time_at(d, c, "lastTransitionTime", &cd->last_transition);
    if (rc == 0 && cd->type && cd->status && strcmp(cd->type, "Ready") == 0)
        *ready = strcmp(cd->status, "True") == 0;
    if (slot == NULL) {
        ebb_str_release(tmp.type);
        ebb_str_release(tmp.status);
    }
    return rc;
}

int ebb__conditions_at(struct dec *d, const cJSON *status, struct ebb_condition **out,
                       uint16_t *nout, bool *ready)
{
    if (out != NULL)
        return ARRAY_AT(d, status, "conditions", condition, ready, *out, *nout);
    return EACH_AT(d, status, "conditions", condition, ready);
}
