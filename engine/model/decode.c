/* cJSON -> the compact structs of model.h.
 *
 * One pass over each object: strings are interned, quantities parsed into
 * int64, effective requests and QoS computed, everything the engine does not
 * read (managedFields, env, probes, the last-applied annotation...) is never
 * looked at. Errors carry the path of the bad field inside the object; the
 * path is kept as a stack of pointers into the cJSON tree and formatted only
 * when something fails, so the happy path pays nothing for it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/decode.h"
#include "ebb/prom_result.h"
#include "ebb/quantity.h"
#include "ebb/selector.h"
#include "ebb/taints.h"
#include "base/vec.h"

#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"
#define MAX_DEPTH 24

/* ---- error paths --------------------------------------------------------- */

struct dec {
    struct ebb_error *err;
    int res_budget;          /* new resource names this object may register */
    size_t kept;             /* bytes of text kept ... */
    size_t kept_max;         /* ... at most (EBB_OBJECT_KEPT_MAX from a server) */
    int depth;
    struct {
        const char *key;     /* NULL: an array index */
        int idx;
    } st[MAX_DEPTH];
};

/* A user's file is not bounded by what ebb keeps of an object (the user
 * chose it); what a server sends is (ebb_decode_from_server). */
#define DEC_INIT(e) { .err = (e), .res_budget = EBB_RES_OBJECT_NEW, .kept_max = SIZE_MAX }

static void push(struct dec *d, const char *key)
{
    if (d->depth < MAX_DEPTH) {
        d->st[d->depth].key = key;
        d->st[d->depth].idx = -1;
    }
    d->depth++;
}

static void push_i(struct dec *d, int i)
{
    if (d->depth < MAX_DEPTH) {
        d->st[d->depth].key = NULL;
        d->st[d->depth].idx = i;
    }
    d->depth++;
}

static void pop(struct dec *d)
{
    d->depth--;
}

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

/* shown() into a buffer of the calling expression's life. */
#define SHOWN_MAX 96
#define SHOWN(s) ebb_decode_shown((s), (char[SHOWN_MAX]){ 0 }, SHOWN_MAX)

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
    int n = d->depth < MAX_DEPTH ? d->depth : MAX_DEPTH;
    size_t off = 0;

    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        append_seg(buf, len, &off, d->st[i].key, d->st[i].idx);
    if (last != NULL)
        append_seg(buf, len, &off, last, -1);
}

/* Fill d->err with the current path (plus `last`, may be NULL) and return
 * `code`. */
__attribute__((format(printf, 4, 5)))
static int fail(struct dec *d, int code, const char *last, const char *fmt, ...)
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

static int nomem(struct dec *d)
{
    return fail(d, EBB_ENOMEM, NULL, "out of memory");
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

static int expected(struct dec *d, const char *key, const char *what, const cJSON *j)
{
    return fail(d, EBB_ESCHEMA, key, "expected %s, got %s", what, jtype(j));
}

/* ---- typed getters: absent and null are "not set", a wrong type is an
 * error naming the field ---------------------------------------------------- */

static const cJSON *child(const cJSON *o, const char *key)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    return j == NULL || cJSON_IsNull(j) ? NULL : j;
}

/* Every string ebb keeps: valid UTF-8, or the plan could not print it. */
static int intern(struct dec *d, const char *key, const char *s, ebb_str *out)
{
    size_t n = strlen(s);

    if ((d->kept += n) > d->kept_max)
        return fail(d, EBB_ELIMIT, key, "the object holds more than %zu MiB of text: not one "
                    "a Kubernetes API server keeps (etcd: 1.5 MiB)", EBB_OBJECT_KEPT_MAX >> 20);
    if (!ebb_utf8_valid(s, n))
        return fail(d, EBB_ESCHEMA, key, "not valid UTF-8");
    if ((*out = ebb_str_intern(s, n)) == NULL)
        return fail(d, EBB_ENOMEM, key, "out of memory");
    return 0;
}

/* The raw text of a string field (NULL if absent). */
static int text_at(struct dec *d, const cJSON *o, const char *key, const char **out)
{
    const cJSON *j = child(o, key);

    *out = NULL;
    if (j == NULL)
        return 0;
    if (!cJSON_IsString(j))
        return expected(d, key, "a string", j);
    *out = j->valuestring;
    return 0;
}

static int str_at(struct dec *d, const cJSON *o, const char *key, ebb_str *out)
{
    const char *s;
    int rc;

    if ((rc = text_at(d, o, key, &s)) != 0 || s == NULL)
        return rc;
    return intern(d, key, s, out);
}

static int obj_at(struct dec *d, const cJSON *o, const char *key, const cJSON **out)
{
    const cJSON *j = child(o, key);

    *out = NULL;
    if (j == NULL)
        return 0;
    if (!cJSON_IsObject(j))
        return expected(d, key, "an object", j);
    *out = j;
    return 0;
}

/* An array field: *out is its first element (NULL when empty or absent) and
 * *n its length. */
static int arr_at(struct dec *d, const cJSON *o, const char *key, const cJSON **out, size_t *n)
{
    const cJSON *j = child(o, key), *c;

    *out = NULL;
    *n = 0;
    if (j == NULL)
        return 0;
    if (!cJSON_IsArray(j))
        return expected(d, key, "an array", j);
    for (c = j->child; c != NULL; c = c->next)
        (*n)++;
    if (*n > UINT16_MAX)
        return fail(d, EBB_ESCHEMA, key, "too many entries (%zu, at most %u)", *n,
                    (unsigned)UINT16_MAX);
    *out = j->child;
    return 0;
}

static int int_at(struct dec *d, const cJSON *o, const char *key, int64_t lo, int64_t hi,
                  int64_t *out, bool *present)
{
    const cJSON *j = child(o, key);
    double v;

    if (present)
        *present = false;
    if (j == NULL)
        return 0;
    if (!cJSON_IsNumber(j))
        return expected(d, key, "an integer", j);
    v = j->valuedouble;
    if (v != floor(v) || v < (double)lo || v > (double)hi)
        return fail(d, EBB_ESCHEMA, key, "expected an integer in [%lld, %lld], got %.17g",
                    (long long)lo, (long long)hi, v);
    *out = v >= 9223372036854775807.0 ? INT64_MAX : (int64_t)v;
    if (present)
        *present = true;
    return 0;
}

static int i32_at(struct dec *d, const cJSON *o, const char *key, int32_t *out, bool *present)
{
    int64_t v;
    bool has;
    int rc = int_at(d, o, key, INT32_MIN, INT32_MAX, &v, &has);

    if (rc == 0 && has)
        *out = (int32_t)v;
    if (present)
        *present = has;
    return rc;
}

static int bool_at(struct dec *d, const cJSON *o, const char *key, bool *out)
{
    const cJSON *j = child(o, key);

    if (j == NULL)
        return 0;
    if (!cJSON_IsBool(j))
        return expected(d, key, "a boolean", j);
    *out = cJSON_IsTrue(j);
    return 0;
}

static int time_at(struct dec *d, const cJSON *o, const char *key, int64_t *out)
{
    const char *s;
    int rc;

    *out = EBB_TIME_NONE;
    if ((rc = text_at(d, o, key, &s)) != 0 || s == NULL)
        return rc;
    if (ebb_time_parse(s, out) != 0) {
        *out = EBB_TIME_NONE;
        return fail(d, EBB_ESCHEMA, key, "\"%s\" is not an RFC 3339 time", SHOWN(s));
    }
    return 0;
}

/* A string array into interned strings (calloc'd; *n set as entries fill so
 * a half-built array frees cleanly). */
static int strs_at(struct dec *d, const cJSON *o, const char *key, ebb_str **out, uint16_t *n)
{
    const cJSON *c;
    size_t len;
    int rc, i = 0;

    if ((rc = arr_at(d, o, key, &c, &len)) != 0 || len == 0)
        return rc;
    if ((*out = calloc(len, sizeof(**out))) == NULL)
        return nomem(d);
    push(d, key);
    for (; c != NULL; c = c->next, i++) {
        if (!cJSON_IsString(c)) {
            push_i(d, i);
            rc = expected(d, NULL, "a string", c);
            pop(d);
            break;
        }
        if ((rc = intern(d, NULL, c->valuestring, &(*out)[i])) != 0)
            break;
        (*n)++;
    }
    pop(d);
    return rc;
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

static int labels_at(struct dec *d, const cJSON *o, const char *key, struct ebb_labels *out,
                     bool drop_applied)
{
    const cJSON *m, *c;
    size_t n = 0;
    int rc;

    if ((rc = obj_at(d, o, key, &m)) != 0 || m == NULL)
        return rc;
    for (c = m->child; c != NULL; c = c->next)
        n++;
    if (n == 0)
        return 0;
    if ((out->kv = calloc(n, sizeof(*out->kv))) == NULL)
        return nomem(d);
    push(d, key);
    for (c = m->child; c != NULL; c = c->next) {
        struct ebb_kv *kv = &out->kv[out->n];
        if (drop_applied && strcmp(c->string, LAST_APPLIED) == 0)
            continue;
        if (!cJSON_IsString(c)) {
            rc = expected(d, c->string, "a string", c);
            break;
        }
        if ((rc = intern(d, c->string, c->string, &kv->key)) != 0)
            break;
        out->n++;
        if ((rc = intern(d, c->string, c->valuestring, &kv->value)) != 0)
            break;
    }
    pop(d);
    if (rc == 0 && labels_sort(out) != 0)
        rc = nomem(d);
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

/* A dense resource list while a pod's requests are being summed. */
struct racc {
    uint64_t has;
    int64_t v[EBB_RES_MAX];
};

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;

    if (__builtin_add_overflow(a, b, &r))
        return a > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static void racc_add(struct racc *a, const struct racc *b)
{
    for (uint64_t m = b->has; m != 0; m &= m - 1) {
        int id = __builtin_ctzll(m);
        a->v[id] = a->has & (1ull << id) ? sat_add(a->v[id], b->v[id]) : b->v[id];
    }
    a->has |= b->has;
}

/* maxResourceList: every key of b, raised to b's value where larger. */
static void racc_max(struct racc *a, const struct racc *b)
{
    for (uint64_t m = b->has; m != 0; m &= m - 1) {
        int id = __builtin_ctzll(m);
        if (!(a->has & (1ull << id)) || b->v[id] > a->v[id])
            a->v[id] = b->v[id];
    }
    a->has |= b->has;
}

static void racc_clear(struct racc *a)
{
    for (uint64_t m = a->has; m != 0; m &= m - 1)
        a->v[__builtin_ctzll(m)] = 0;
    a->has = 0;
}

/* What a ResourceList does with a name the registry has no slot for
 * (ebb/model.h): a pod's requests count it as EBB_RES_UNREGISTERED, which
 * no node offers (the pod fits nowhere, as a resource no node lists); a
 * node's capacity, a limit or a usage leaves it out. */
enum { RES_DROP, RES_MARK };

/* Parse a ResourceList object into `a` (values replace); the member named
 * `skip` (may be NULL) is not a resource. */
static int reslist(struct dec *d, const cJSON *m, const char *skip, int unknown, struct racc *a)
{
    const cJSON *c;
    int id, rc;
    int64_t v;

    for (c = m->child; c != NULL; c = c->next) {
        if (skip != NULL && strcmp(c->string, skip) == 0)
            continue;
        if (c->string[0] == '\0' || !ebb_utf8_valid(c->string, strlen(c->string)))
            return fail(d, EBB_ESCHEMA, c->string, "not a resource name");
        if ((rc = ebb_decode_quantity(c, c->string, &v)) != 0) {
            if (cJSON_IsString(c))
                return fail(d, EBB_ESCHEMA, c->string, "\"%s\" is not a quantity",
                            SHOWN(c->valuestring));
            return expected(d, c->string, "a quantity", c);
        }
        if ((id = ebb_resource_admit(c->string, &d->res_budget)) < 0 || id >= EBB_RES_MAX) {
            /* a request of 0 asks for nothing (the scheduler skips it) */
            if (unknown == RES_DROP || v == 0)
                continue;
            id = EBB_RES_UNREGISTERED;
            v = a->has & (1ull << id) ? sat_add(a->v[id], 1) : 1;
        }
        a->v[id] = v;
        a->has |= 1ull << id;
    }
    return 0;
}

static int reslist_at(struct dec *d, const cJSON *o, const char *key, int unknown, struct racc *a)
{
    const cJSON *m;
    int rc;

    if ((rc = obj_at(d, o, key, &m)) != 0 || m == NULL)
        return rc;
    push(d, key);
    rc = reslist(d, m, NULL, unknown, a);
    pop(d);
    return rc;
}

static int racc_emit(struct dec *d, const struct racc *a, struct ebb_res *out)
{
    int n = __builtin_popcountll(a->has), i = 0;

    out->n = 0;
    out->q = NULL;
    if (n == 0)
        return 0;
    if ((out->q = malloc((size_t)n * sizeof(*out->q))) == NULL)
        return nomem(d);
    for (uint64_t m = a->has; m != 0; m &= m - 1, i++) {
        out->q[i].id = (uint16_t)__builtin_ctzll(m);
        out->q[i].v = a->v[out->q[i].id];
    }
    out->n = (uint16_t)n;
    return 0;
}

static int res_at(struct dec *d, const cJSON *o, const char *key, struct ebb_res *out)
{
    struct racc a;
    int rc;

    a.has = 0;
    if ((rc = reslist_at(d, o, key, RES_DROP, &a)) != 0)
        return rc;
    return racc_emit(d, &a, out);
}

/* ---- selectors ------------------------------------------------------------- */

static int ptr_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (const ebb_str *)a, y = (uintptr_t) * (const ebb_str *)b;
    return x < y ? -1 : x > y;
}

static void reqs_free(struct ebb_req *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ebb_req_free(&r[i]);
    free(r);
}

/* Sort In/NotIn values by pointer and drop duplicates (a set). */
static void values_sort(struct ebb_req *r)
{
    uint16_t w = 0;

    if (r->nvalues < 2)
        return;
    qsort(r->values, r->nvalues, sizeof(*r->values), ptr_cmp);
    for (uint16_t i = 0; i < r->nvalues; i++) {
        if (w > 0 && r->values[i] == r->values[w - 1])
            ebb_str_release(r->values[i]);
        else
            r->values[w++] = r->values[i];
    }
    r->nvalues = w;
}

/* Strictly an int64 in base 10, as strconv.ParseInt(s, 10, 64) reads it. */
static bool parse_i64(const char *s, int64_t *out)
{
    const char *p = s;
    bool neg = false;
    uint64_t v = 0, lim;

    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (*p == '\0')
        return false;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        if (v > (lim - (uint64_t)(*p - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

enum { REQ_LABEL, REQ_NODE, REQ_FIELD };

static const struct {
    const char *name;
    uint8_t op;
} ops[] = {
    { "In", EBB_OP_IN },
    { "NotIn", EBB_OP_NOT_IN },
    { "Exists", EBB_OP_EXISTS },
    { "DoesNotExist", EBB_OP_DOES_NOT_EXIST },
    { "Gt", EBB_OP_GT },
    { "Lt", EBB_OP_LT },
};

/* One {key, operator, values} requirement. Label selectors know In, NotIn,
 * Exists, DoesNotExist; node selector requirements add Gt and Lt (one
 * integer value); node field selectors are metadata.name In/NotIn one value.
 * The value counts are the ones the API validates. */
static int req_decode(struct dec *d, const cJSON *e, int mode, struct ebb_req *r)
{
    const char *op;
    const cJSON *v;
    size_t nv, i;
    int rc, k = -1;
    static const char *valid[] = {
        "In, NotIn, Exists, DoesNotExist",
        "In, NotIn, Exists, DoesNotExist, Gt, Lt",
        "In, NotIn",
    };

    if (!cJSON_IsObject(e))
        return expected(d, NULL, "an object", e);
    if ((rc = str_at(d, e, "key", &r->key)) != 0)
        return rc;
    if (r->key == NULL)
        return fail(d, EBB_ESCHEMA, "key", "required");
    if (mode == REQ_FIELD && strcmp(r->key, "metadata.name") != 0)
        return fail(d, EBB_ESCHEMA, "key", "\"%s\" is not a node field (only metadata.name)",
                    SHOWN(r->key));
    if ((rc = text_at(d, e, "operator", &op)) != 0)
        return rc;
    if (op == NULL)
        return fail(d, EBB_ESCHEMA, "operator", "required (%s)", valid[mode]);
    for (i = 0; i < EBB_ARRAY_LEN(ops); i++)
        if (strcmp(op, ops[i].name) == 0)
            k = (int)i;
    if (k < 0 || (mode == REQ_LABEL && ops[k].op >= EBB_OP_GT) ||
        (mode == REQ_FIELD && ops[k].op > EBB_OP_NOT_IN))
        return fail(d, EBB_ESCHEMA, "operator", "\"%s\" is not a valid operator (%s)", SHOWN(op),
                    valid[mode]);
    r->op = ops[k].op;
    if ((rc = arr_at(d, e, "values", &v, &nv)) != 0)
        return rc;
    switch (r->op) {
    case EBB_OP_IN:
    case EBB_OP_NOT_IN:
        if (nv == 0)
            return fail(d, EBB_ESCHEMA, "values", "must be non-empty for %s", op);
        if (mode == REQ_FIELD && nv != 1)
            return fail(d, EBB_ESCHEMA, "values", "must have exactly one value for %s", op);
        break;
    case EBB_OP_GT:
    case EBB_OP_LT:
        if (nv != 1)
            return fail(d, EBB_ESCHEMA, "values", "must have exactly one value for %s", op);
        break;
    default:
        if (nv != 0)
            return fail(d, EBB_ESCHEMA, "values", "must be empty for %s", op);
    }
    if ((rc = strs_at(d, e, "values", &r->values, &r->nvalues)) != 0)
        return rc;
    if (r->op == EBB_OP_GT || r->op == EBB_OP_LT) {
        if (!parse_i64(r->values[0], &r->num)) {
            push(d, "values");
            push_i(d, 0);
            rc = fail(d, EBB_ESCHEMA, NULL, "\"%s\" is not an integer (%s)", SHOWN(r->values[0]), op);
            pop(d);
            pop(d);
            return rc;
        }
    } else if (r->op == EBB_OP_IN || r->op == EBB_OP_NOT_IN) {
        values_sort(r);
    }
    return 0;
}

/* A list of requirements under `key` into a calloc'd array. */
static int reqs_at(struct dec *d, const cJSON *o, const char *key, int mode, struct ebb_req **out,
                   uint16_t *n)
{
    const cJSON *c;
    size_t len;
    int rc = 0, i = 0;

    *out = NULL;
    *n = 0;
    if ((rc = arr_at(d, o, key, &c, &len)) != 0 || len == 0)
        return rc;
    if ((*out = calloc(len, sizeof(**out))) == NULL)
        return nomem(d);
    push(d, key);
    for (; c != NULL && rc == 0; c = c->next, i++) {
        push_i(d, i);
        rc = req_decode(d, c, mode, &(*out)[i]);
        (*n)++;
        pop(d);
    }
    pop(d);
    return rc;
}

/* metav1.LabelSelector: matchLabels become "key In (value)", then the
 * matchExpressions; {} has no requirements and matches everything. */
static int label_selector(struct dec *d, const cJSON *j, struct ebb_selector **out)
{
    struct ebb_req *reqs = NULL, *more = NULL;
    uint16_t nmore = 0;
    const cJSON *ml, *c;
    size_t n = 0, nl = 0;
    int rc;

    *out = NULL;
    if (!cJSON_IsObject(j))
        return expected(d, NULL, "a label selector object", j);
    if ((rc = obj_at(d, j, "matchLabels", &ml)) != 0)
        return rc;
    if ((rc = reqs_at(d, j, "matchExpressions", REQ_LABEL, &more, &nmore)) != 0)
        goto fail;
    for (c = ml ? ml->child : NULL; c != NULL; c = c->next)
        nl++;
    if (nl + nmore > UINT16_MAX) {
        rc = fail(d, EBB_ESCHEMA, NULL, "too many requirements");
        goto fail;
    }
    if (nl + nmore == 0) {
        free(more);
        return (*out = ebb_selector_everything()) == NULL ? nomem(d) : 0;
    }
    if ((reqs = calloc(nl + nmore, sizeof(*reqs))) == NULL) {
        rc = nomem(d);
        goto fail;
    }
    push(d, "matchLabels");
    for (c = ml ? ml->child : NULL; rc == 0 && c != NULL; c = c->next, n++) {
        struct ebb_req *r = &reqs[n];
        r->op = EBB_OP_IN;
        if (!cJSON_IsString(c))
            rc = expected(d, c->string, "a string", c);
        else if ((r->values = calloc(1, sizeof(*r->values))) == NULL)
            rc = nomem(d);
        else if ((rc = intern(d, c->string, c->string, &r->key)) == 0 &&
                 (rc = intern(d, c->string, c->valuestring, &r->values[0])) == 0)
            r->nvalues = 1;
    }
    pop(d);
    if (rc != 0)
        goto fail;
    if (nmore > 0)
        memcpy(reqs + nl, more, nmore * sizeof(*more));
    free(more);
    more = NULL;
    n = nl + nmore;
    if ((rc = ebb_selector_from_reqs(reqs, (uint16_t)n, out)) != 0) {
        rc = fail(d, rc, NULL, "cannot build the selector: %s", ebb_strerror(rc));
        goto fail;
    }
    return 0;
fail:
    /* reqs entries past the ones filled are zeroed: clearing them is a no-op */
    if (reqs != NULL)
        reqs_free(reqs, more != NULL ? nl : nl + nmore);
    if (more != NULL)
        reqs_free(more, nmore);
    return rc;
}

int ebb_decode_label_selector(const cJSON *j, struct ebb_selector **out, struct ebb_error *err)
{
    struct dec d = DEC_INIT(err);

    if (out == NULL)
        return EBB_EINVAL;
    *out = NULL;
    if (j == NULL || cJSON_IsNull(j))
        return 0;
    return label_selector(&d, j, out);
}

/* A label selector field; nil gives a selector matching nothing, as every
 * user of one in the pod and PDB APIs reads it. */
static int selector_at(struct dec *d, const cJSON *o, const char *key, bool nil_nothing,
                       struct ebb_selector **out)
{
    const cJSON *j = child(o, key);
    int rc;

    *out = NULL;
    if (j != NULL) {
        push(d, key);
        rc = label_selector(d, j, out);
        pop(d);
        if (rc != 0)
            return rc;
    }
    if (*out == NULL && nil_nothing && (*out = ebb_selector_nothing()) == NULL)
        return nomem(d);
    return 0;
}

/* ---- kinds ------------------------------------------------------------------ */

static const struct {
    const char *kind;
    const char *group;
} kinds[EBB_KIND_MAX] = {
    [EBB_KIND_UNKNOWN] = { "Unknown", NULL },
    [EBB_KIND_POD] = { "Pod", "" },
    [EBB_KIND_NODE] = { "Node", "" },
    [EBB_KIND_NAMESPACE] = { "Namespace", "" },
    [EBB_KIND_PRIORITY_CLASS] = { "PriorityClass", "scheduling.k8s.io" },
    [EBB_KIND_PVC] = { "PersistentVolumeClaim", "" },
    [EBB_KIND_PDB] = { "PodDisruptionBudget", "policy" },
    [EBB_KIND_NODE_METRICS] = { "NodeMetrics", "metrics.k8s.io" },
    [EBB_KIND_POD_METRICS] = { "PodMetrics", "metrics.k8s.io" },
    [EBB_KIND_KOORD_NODE_METRIC] = { "NodeMetric", "slo.koordinator.sh" },
    [EBB_KIND_PROM_RESULT] = { "PrometheusQueryResult", "ebb" },
    [EBB_KIND_SERVICE] = { "Service", "" },
    [EBB_KIND_REPLICA_SET] = { "ReplicaSet", "apps" },
    [EBB_KIND_STATEFUL_SET] = { "StatefulSet", "apps" },
    [EBB_KIND_REPLICATION_CONTROLLER] = { "ReplicationController", "" },
};

const char *ebb_kind_name(int kind)
{
    return kind > 0 && kind < EBB_KIND_MAX ? kinds[kind].kind : "Unknown";
}

/* An object without apiVersion is read as the one group that has its kind
 * (hand-written fixtures often leave it out); with one, the group must
 * match. */
int ebb_decode_kind(const cJSON *obj)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const cJSON *av = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
    const char *slash;
    size_t glen;

    if (!cJSON_IsString(k))
        return EBB_KIND_UNKNOWN;
    for (int i = 1; i < EBB_KIND_MAX; i++) {
        if (strcmp(k->valuestring, kinds[i].kind) != 0)
            continue;
        if (!cJSON_IsString(av))
            return av == NULL || cJSON_IsNull(av) ? i : EBB_KIND_UNKNOWN;
        slash = strchr(av->valuestring, '/');
        glen = slash ? (size_t)(slash - av->valuestring) : 0;
        if (strlen(kinds[i].group) == glen && strncmp(av->valuestring, kinds[i].group, glen) == 0)
            return i;
    }
    return EBB_KIND_UNKNOWN;
}

/* ---- metadata --------------------------------------------------------------- */

/* metadata.name (required) and, for namespaced kinds, metadata.namespace
 * ("default" when left out, as kubectl applies it). */
static int meta_at(struct dec *d, const cJSON *obj, const cJSON **meta, ebb_str *ns,
                   ebb_str *name)
{
    int rc;

    if ((rc = obj_at(d, obj, "metadata", meta)) != 0)
        return rc;
    push(d, "metadata");
    if ((rc = str_at(d, *meta, "name", name)) == 0 && (*name == NULL || **name == '\0'))
        rc = fail(d, EBB_ESCHEMA, "name", "required");
    if (rc == 0 && ns != NULL) {
        if ((rc = str_at(d, *meta, "namespace", ns)) == 0 && (*ns == NULL || **ns == '\0')) {
            ebb_str_release(*ns);
            rc = intern(d, "namespace", "default", ns);
        }
    }
    pop(d);
    return rc;
}

/* ---- pods ------------------------------------------------------------------- */

static int owners_at(struct dec *d, const cJSON *meta, struct ebb_pod *p)
{
    const cJSON *c;
    size_t n;
    int rc, i = 0;

    if ((rc = arr_at(d, meta, "ownerReferences", &c, &n)) != 0 || n == 0)
        return rc;
    if ((p->owners = calloc(n, sizeof(*p->owners))) == NULL)
        return nomem(d);
    push(d, "ownerReferences");
    for (; c != NULL && rc == 0; c = c->next, i++) {
        struct ebb_owner *o = &p->owners[i];
        push_i(d, i);
        p->nowners++;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        if (rc == 0)
            rc = str_at(d, c, "kind", &o->kind);
        if (rc == 0)
            rc = str_at(d, c, "name", &o->name);
        if (rc == 0)
            rc = str_at(d, c, "uid", &o->uid);
        if (rc == 0)
            rc = bool_at(d, c, "controller", &o->controller);
        pop(d);
    }
    pop(d);
    return rc;
}

static int tolerations_at(struct dec *d, const cJSON *spec, struct ebb_pod *p)
{
    const cJSON *c;
    const char *s;
    size_t n;
    int rc, i = 0;

    if ((rc = arr_at(d, spec, "tolerations", &c, &n)) != 0 || n == 0)
        return rc;
    if ((p->tolerations = calloc(n, sizeof(*p->tolerations))) == NULL)
        return nomem(d);
    push(d, "tolerations");
    for (; c != NULL && rc == 0; c = c->next, i++) {
        struct ebb_toleration *t = &p->tolerations[i];
        push_i(d, i);
        p->ntolerations++;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        if (rc == 0)
            rc = str_at(d, c, "key", &t->key);
        if (rc == 0)
            rc = str_at(d, c, "value", &t->value);
        if (rc == 0 && (rc = text_at(d, c, "operator", &s)) == 0 && s != NULL && *s) {
            if (strcmp(s, "Exists") == 0)
                t->op = EBB_TOL_EXISTS;
            else if (strcmp(s, "Lt") == 0)
                t->op = EBB_TOL_LT;
            else if (strcmp(s, "Gt") == 0)
                t->op = EBB_TOL_GT;
            else if (strcmp(s, "Equal") != 0)
                rc = fail(d, EBB_ESCHEMA, "operator",
                          "\"%s\" is not a valid operator (Exists, Equal, Lt, Gt)", SHOWN(s));
        }
        if (rc == 0 && (rc = text_at(d, c, "effect", &s)) == 0)
            t->effect = s == NULL || *s == '\0' ? EBB_EFFECT_ALL : (uint8_t)ebb_effect_parse(s);
        if (rc == 0)
            rc = int_at(d, c, "tolerationSeconds", INT64_MIN, INT64_MAX, &t->seconds,
                        &t->has_seconds);
        pop(d);
    }
    pop(d);
    return rc;
}

static int node_term(struct dec *d, const cJSON *j, struct ebb_node_term *t)
{
    int rc;

    if (!cJSON_IsObject(j))
        return expected(d, NULL, "an object", j);
    if ((rc = reqs_at(d, j, "matchExpressions", REQ_NODE, &t->exprs, &t->nexprs)) != 0)
        return rc;
    return reqs_at(d, j, "matchFields", REQ_FIELD, &t->fields, &t->nfields);
}

static int node_affinity(struct dec *d, const cJSON *na, struct ebb_affinity *a)
{
    const cJSON *req, *c;
    size_t n;
    int rc, i = 0;

    if ((rc = obj_at(d, na, "requiredDuringSchedulingIgnoredDuringExecution", &req)) != 0)
        return rc;
    if (req != NULL) {
        a->has_required = true;
        push(d, "requiredDuringSchedulingIgnoredDuringExecution");
        if ((rc = arr_at(d, req, "nodeSelectorTerms", &c, &n)) == 0 && n > 0 &&
            (a->required = calloc(n, sizeof(*a->required))) == NULL)
            rc = nomem(d);
        push(d, "nodeSelectorTerms");
        for (; rc == 0 && c != NULL; c = c->next, i++) {
            push_i(d, i);
            a->nrequired++;
            rc = node_term(d, c, &a->required[i]);
            pop(d);
        }
        pop(d);
        pop(d);
        if (rc != 0)
            return rc;
    }
    if ((rc = arr_at(d, na, "preferredDuringSchedulingIgnoredDuringExecution", &c, &n)) != 0 ||
        n == 0)
        return rc;
    if ((a->preferred = calloc(n, sizeof(*a->preferred))) == NULL)
        return nomem(d);
    push(d, "preferredDuringSchedulingIgnoredDuringExecution");
    for (i = 0; rc == 0 && c != NULL; c = c->next, i++) {
        struct ebb_pref_term *t = &a->preferred[i];
        const cJSON *pref;
        push_i(d, i);
        a->npreferred++;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        if (rc == 0)
            rc = i32_at(d, c, "weight", &t->weight, NULL);
        if (rc == 0 && (rc = obj_at(d, c, "preference", &pref)) == 0 && pref != NULL) {
            push(d, "preference");
            rc = node_term(d, pref, &t->term);
            pop(d);
        }
        pop(d);
    }
    pop(d);
    return rc;
}

static int pod_term(struct dec *d, const cJSON *j, struct ebb_pod_term *t)
{
    int rc;

    if (!cJSON_IsObject(j))
        return expected(d, NULL, "an object", j);
    if ((rc = selector_at(d, j, "labelSelector", true, &t->selector)) != 0)
        return rc;
    if ((rc = strs_at(d, j, "namespaces", &t->namespaces, &t->nnamespaces)) != 0)
        return rc;
    if ((rc = selector_at(d, j, "namespaceSelector", false, &t->ns_selector)) != 0)
        return rc;
    if ((rc = str_at(d, j, "topologyKey", &t->topology_key)) != 0)
        return rc;
    if ((rc = strs_at(d, j, "matchLabelKeys", &t->match_keys, &t->nmatch_keys)) != 0)
        return rc;
    return strs_at(d, j, "mismatchLabelKeys", &t->mismatch_keys, &t->nmismatch_keys);
}

static int pod_terms(struct dec *d, const cJSON *o, const char *key, struct ebb_pod_term **out,
                     uint16_t *n)
{
    const cJSON *c;
    size_t len;
    int rc, i = 0;

    if ((rc = arr_at(d, o, key, &c, &len)) != 0 || len == 0)
        return rc;
    if ((*out = calloc(len, sizeof(**out))) == NULL)
        return nomem(d);
    push(d, key);
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        push_i(d, i);
        (*n)++;
        rc = pod_term(d, c, &(*out)[i]);
        pop(d);
    }
    pop(d);
    return rc;
}

static int weighted_terms(struct dec *d, const cJSON *o, const char *key,
                          struct ebb_weighted_pod_term **out, uint16_t *n)
{
    const cJSON *c, *t;
    size_t len;
    int rc, i = 0;

    if ((rc = arr_at(d, o, key, &c, &len)) != 0 || len == 0)
        return rc;
    if ((*out = calloc(len, sizeof(**out))) == NULL)
        return nomem(d);
    push(d, key);
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        struct ebb_weighted_pod_term *w = &(*out)[i];
        push_i(d, i);
        (*n)++;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        if (rc == 0)
            rc = i32_at(d, c, "weight", &w->weight, NULL);
        if (rc == 0 && (rc = obj_at(d, c, "podAffinityTerm", &t)) == 0) {
            push(d, "podAffinityTerm");
            if (t != NULL)
                rc = pod_term(d, t, &w->term);
            else if ((w->term.selector = ebb_selector_nothing()) == NULL)
                rc = nomem(d);
            pop(d);
        }
        pop(d);
    }
    pop(d);
    return rc;
}

static int affinity_at(struct dec *d, const cJSON *spec, struct ebb_pod *p)
{
    const cJSON *aff, *na, *pa, *anti;
    struct ebb_affinity *a;
    int rc;

    if ((rc = obj_at(d, spec, "affinity", &aff)) != 0 || aff == NULL)
        return rc;
    if ((a = p->affinity = calloc(1, sizeof(*a))) == NULL)
        return nomem(d);
    push(d, "affinity");
    if ((rc = obj_at(d, aff, "nodeAffinity", &na)) == 0 && na != NULL) {
        push(d, "nodeAffinity");
        rc = node_affinity(d, na, a);
        pop(d);
    }
    if (rc == 0 && (rc = obj_at(d, aff, "podAffinity", &pa)) == 0 && pa != NULL) {
        push(d, "podAffinity");
        rc = pod_terms(d, pa, "requiredDuringSchedulingIgnoredDuringExecution",
                       &a->aff_required, &a->naff_required);
        if (rc == 0)
            rc = weighted_terms(d, pa, "preferredDuringSchedulingIgnoredDuringExecution",
                                &a->aff_preferred, &a->naff_preferred);
        pop(d);
    }
    if (rc == 0 && (rc = obj_at(d, aff, "podAntiAffinity", &anti)) == 0 && anti != NULL) {
        push(d, "podAntiAffinity");
        rc = pod_terms(d, anti, "requiredDuringSchedulingIgnoredDuringExecution",
                       &a->anti_required, &a->nanti_required);
        if (rc == 0)
            rc = weighted_terms(d, anti, "preferredDuringSchedulingIgnoredDuringExecution",
                                &a->anti_preferred, &a->nanti_preferred);
        pop(d);
    }
    pop(d);
    if (rc == 0 && !a->has_required && a->npreferred == 0 && a->naff_required == 0 &&
        a->naff_preferred == 0 && a->nanti_required == 0 && a->nanti_preferred == 0) {
        ebb_affinity_free(a);
        p->affinity = NULL;
    }
    return rc;
}

static int policy_at(struct dec *d, const cJSON *o, const char *key, uint8_t *out)
{
    const char *s;
    int rc;

    if ((rc = text_at(d, o, key, &s)) != 0 || s == NULL)
        return rc;
    if (strcmp(s, "Honor") == 0)
        *out = EBB_POLICY_HONOR;
    else if (strcmp(s, "Ignore") == 0)
        *out = EBB_POLICY_IGNORE;
    else
        return fail(d, EBB_ESCHEMA, key, "\"%s\" is not a valid policy (Honor, Ignore)", SHOWN(s));
    return 0;
}

static int tsc_at(struct dec *d, const cJSON *spec, struct ebb_pod *p)
{
    const cJSON *c;
    const char *s;
    size_t n;
    int rc, i = 0;

    if ((rc = arr_at(d, spec, "topologySpreadConstraints", &c, &n)) != 0 || n == 0)
        return rc;
    if ((p->tsc = calloc(n, sizeof(*p->tsc))) == NULL)
        return nomem(d);
    push(d, "topologySpreadConstraints");
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        struct ebb_tsc *t = &p->tsc[i];
        push_i(d, i);
        p->ntsc++;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        if (rc == 0)
            rc = i32_at(d, c, "maxSkew", &t->max_skew, NULL);
        if (rc == 0)
            rc = i32_at(d, c, "minDomains", &t->min_domains, NULL);
        if (rc == 0)
            rc = str_at(d, c, "topologyKey", &t->topology_key);
        if (rc == 0 && (rc = text_at(d, c, "whenUnsatisfiable", &s)) == 0 && s != NULL) {
            if (strcmp(s, "ScheduleAnyway") == 0)
                t->when_unsatisfiable = EBB_TSC_SCHEDULE_ANYWAY;
            else if (strcmp(s, "DoNotSchedule") != 0)
                rc = fail(d, EBB_ESCHEMA, "whenUnsatisfiable",
                          "\"%s\" is not valid (DoNotSchedule, ScheduleAnyway)", SHOWN(s));
        }
        if (rc == 0)
            rc = selector_at(d, c, "labelSelector", true, &t->selector);
        if (rc == 0)
            rc = strs_at(d, c, "matchLabelKeys", &t->match_keys, &t->nmatch_keys);
        if (rc == 0)
            rc = policy_at(d, c, "nodeAffinityPolicy", &t->node_affinity_policy);
        if (rc == 0)
            rc = policy_at(d, c, "nodeTaintsPolicy", &t->node_taints_policy);
        pop(d);
    }
    pop(d);
    return rc;
}

/* What the containers of a pod add up to while they are read. */
#define NZ_CPU 100                  /* schedutil.DefaultMilliCPURequest */
#define NZ_MEM (200ll * 1024 * 1024) /* schedutil.DefaultMemoryRequest */

struct podsum {
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

static int container(struct dec *d, const cJSON *c, bool init, struct ebb_pod *p,
                     struct podsum *s)
{
    const cJSON *res;
    const char *rp;
    int rc;

    if (!cJSON_IsObject(c))
        return expected(d, NULL, "an object", c);
    racc_clear(&s->one);
    if ((rc = obj_at(d, c, "resources", &res)) != 0)
        return rc;
    if (res != NULL) {
        struct racc lim;
        bool found[2] = { false, false };

        push(d, "resources");
        rc = reslist_at(d, res, "requests", RES_MARK, &s->one);
        lim.has = 0;
        if (rc == 0)
            rc = reslist_at(d, res, "limits", RES_DROP, &lim);
        pop(d);
        if (rc != 0)
            return rc;
        for (int r = 0; r < 2; r++) {    /* EBB_RES_CPU, EBB_RES_MEMORY */
            if ((s->one.has & (1ull << r)) && s->one.v[r] > 0) {
                s->qreq[r] = sat_add(s->qreq[r], s->one.v[r]);
                s->has_qreq[r] = true;
            }
            if ((lim.has & (1ull << r)) && lim.v[r] > 0) {
                s->qlim[r] = sat_add(s->qlim[r], lim.v[r]);
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
    p->requested_mask |= s->one.has;
    int64_t nz[2];
    for (int r = 0; r < 2; r++) {   /* EBB_RES_CPU, EBB_RES_MEMORY */
        bool has = s->one.has & (1ull << r);
        nz[r] = has ? s->one.v[r] : -1;
        s->named[r] |= has;
    }
    if (!init) {
        racc_add(&s->app, &s->one);
        nz_app(s, nz);
        return 0;
    }
    if ((rc = text_at(d, c, "restartPolicy", &rp)) != 0)
        return rc;
    nz_init(s, nz, rp != NULL && strcmp(rp, "Always") == 0);
    if (rp != NULL && strcmp(rp, "Always") == 0) {
        /* A sidecar runs beside the app containers and every later init
         * container. */
        racc_add(&s->app, &s->one);
        racc_add(&s->sidecars, &s->one);
        racc_max(&s->init_max, &s->sidecars);
    } else {
        racc_add(&s->one, &s->sidecars);
        racc_max(&s->init_max, &s->one);
    }
    return 0;
}

static bool pod_level_resource(int id)
{
    const char *name = ebb_resource_name(id);

    return id == EBB_RES_CPU || id == EBB_RES_MEMORY ||
           (name != NULL && strncmp(name, "hugepages-", 10) == 0);
}

static int containers(struct dec *d, const cJSON *spec, struct ebb_pod *p, struct podsum *s)
{
    const cJSON *c;
    size_t n;
    int rc, i = 0;

    if ((rc = arr_at(d, spec, "containers", &c, &n)) != 0)
        return rc;
    if (n > 0 && (p->images = calloc(n, sizeof(*p->images))) == NULL)
        return nomem(d);
    push(d, "containers");
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        push_i(d, i);
        if ((rc = container(d, c, false, p, s)) == 0 &&
            (rc = str_at(d, c, "image", &p->images[i])) == 0)
            p->nimages++;
        pop(d);
    }
    pop(d);
    if (rc != 0 || (rc = arr_at(d, spec, "initContainers", &c, &n)) != 0)
        return rc;
    push(d, "initContainers");
    for (i = 0; rc == 0 && c != NULL; c = c->next, i++) {
        push_i(d, i);
        rc = container(d, c, true, p, s);
        pop(d);
    }
    pop(d);
    return rc;
}

/* Effective requests as k8s.io/component-helpers/resource PodRequests
 * computes them with default options: max(app + sidecars, init maxima),
 * pod-level requests (cpu, memory, hugepages-*) replacing the container sum
 * when any is set, then overhead added. */
static int pod_requests(struct dec *d, const cJSON *spec, struct ebb_pod *p, struct podsum *s)
{
    const cJSON *res;
    int rc;

    racc_max(&s->app, &s->init_max);
    for (int r = 0; r < 2; r++)
        *(r == 0 ? &p->nz_cpu : &p->nz_mem) = s->nz_app[r] > s->nz_init[r] ? s->nz_app[r] : s->nz_init[r];
    if ((rc = obj_at(d, spec, "resources", &res)) != 0)
        return rc;
    if (res != NULL) {
        struct racc *lvl = &s->one;
        bool any = false;

        racc_clear(lvl);
        push(d, "resources");
        rc = reslist_at(d, res, "requests", RES_MARK, lvl);
        pop(d);
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
    racc_clear(&s->one);
    if ((rc = reslist_at(d, spec, "overhead", RES_MARK, &s->one)) != 0)
        return rc;
    for (int r = 0; r < 2; r++)
        if (s->one.has & (1ull << r))
            *(r == 0 ? &p->nz_cpu : &p->nz_mem) = ebb_q_add(r == 0 ? p->nz_cpu : p->nz_mem, s->one.v[r]);
    racc_add(&s->app, &s->one);
    return racc_emit(d, &s->app, &p->requests);
}

/* ---- what kube-scheduler reads besides the requests -------------------------- */


static int host_ports_at(struct dec *d, const cJSON *spec, struct ebb_pod *p)
{
    const cJSON *cs, *c, *ports, *e;
    size_t n, np, total = 0;
    int rc, i = 0;

    if ((rc = arr_at(d, spec, "containers", &cs, &n)) != 0)
        return rc;
    for (c = cs; c != NULL; c = c->next) {
        const cJSON *a = child(c, "ports");
        for (e = cJSON_IsArray(a) ? a->child : NULL; e != NULL; e = e->next)
            if (!cJSON_IsObject(e) || child(e, "hostPort") != NULL)
                total++;   /* checked below */
    }
    if (total == 0)
        return 0;
    if (total > UINT16_MAX)
        return fail(d, EBB_ESCHEMA, "containers", "too many host ports");
    if ((p->host_ports = calloc(total, sizeof(*p->host_ports))) == NULL)
        return nomem(d);
    push(d, "containers");
    for (c = cs; rc == 0 && c != NULL; c = c->next, i++) {
        int k = 0;
        push_i(d, i);
        if ((rc = arr_at(d, c, "ports", &ports, &np)) == 0 && ports != NULL) {
            push(d, "ports");
            for (e = ports; rc == 0 && e != NULL; e = e->next, k++) {
                struct ebb_host_port *hp = &p->host_ports[p->nhost_ports];
                int64_t port = 0;
                push_i(d, k);
                if (!cJSON_IsObject(e))
                    rc = expected(d, NULL, "an object", e);
                else if ((rc = int_at(d, e, "hostPort", 0, 65535, &port, NULL)) == 0 && port > 0 &&
                         p->nhost_ports < total) {
                    hp->port = (int32_t)port;
                    p->nhost_ports++;
                    if ((rc = str_at(d, e, "hostIP", &hp->ip)) == 0)
                        rc = str_at(d, e, "protocol", &hp->protocol);
                }
                pop(d);
            }
            pop(d);
        }
        pop(d);
    }
    pop(d);
    return rc;
}

static int pod_sched_fields(struct dec *d, const cJSON *spec, struct ebb_pod *p)
{
    const cJSON *c, *gates;
    size_t n;
    int rc, i = 0;

    if ((rc = host_ports_at(d, spec, p)) != 0)
        return rc;
    if ((rc = arr_at(d, spec, "schedulingGates", &gates, &n)) != 0)
        return rc;
    if (n > 0)
        p->flags |= EBB_POD_SCHEDULING_GATED;
    if ((rc = arr_at(d, spec, "initContainers", &c, &n)) != 0 || n == 0)
        return rc;
    if ((p->init_images = calloc(n, sizeof(*p->init_images))) == NULL)
        return nomem(d);
    push(d, "initContainers");
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        push_i(d, i);
        if ((rc = str_at(d, c, "image", &p->init_images[i])) == 0)
            p->ninit_images++;
        pop(d);
    }
    pop(d);
    return rc;
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

static int volumes(struct dec *d, const cJSON *spec, struct ebb_pod *p)
{
    const cJSON *c, *pvc;
    size_t n;
    int rc, i = 0;

    if ((rc = arr_at(d, spec, "volumes", &c, &n)) != 0 || n == 0)
        return rc;
    push(d, "volumes");
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        push_i(d, i);
        if (!cJSON_IsObject(c)) {
            rc = expected(d, NULL, "an object", c);
        } else if (child(c, "hostPath") != NULL || child(c, "emptyDir") != NULL) {
            p->flags |= EBB_POD_LOCAL_STORAGE;
        } else if ((rc = obj_at(d, c, "persistentVolumeClaim", &pvc)) == 0 && pvc != NULL) {
            if (p->pvcs == NULL && (p->pvcs = calloc(n, sizeof(*p->pvcs))) == NULL) {
                rc = nomem(d);
            } else {
                push(d, "persistentVolumeClaim");
                if ((rc = str_at(d, pvc, "claimName", &p->pvcs[p->npvcs])) == 0 &&
                    p->pvcs[p->npvcs] != NULL)
                    p->npvcs++;
                pop(d);
            }
        }
        pop(d);
    }
    pop(d);
    return rc;
}

static int cstate(struct dec *d, const cJSON *c, const char *key, uint8_t *state, ebb_str *reason,
                  int32_t *exit_code)
{
    const cJSON *st, *t;
    int rc;

    if ((rc = obj_at(d, c, key, &st)) != 0 || st == NULL)
        return rc;
    push(d, key);
    if ((rc = obj_at(d, st, "terminated", &t)) == 0 && t != NULL) {
        *state = EBB_CSTATE_TERMINATED;
        push(d, "terminated");
        if ((rc = str_at(d, t, "reason", reason)) == 0)
            rc = i32_at(d, t, "exitCode", exit_code, NULL);
        pop(d);
    } else if (rc == 0 && (rc = obj_at(d, st, "running", &t)) == 0 && t != NULL) {
        *state = EBB_CSTATE_RUNNING;
    } else if (rc == 0 && (rc = obj_at(d, st, "waiting", &t)) == 0 && t != NULL) {
        *state = EBB_CSTATE_WAITING;
        push(d, "waiting");
        rc = str_at(d, t, "reason", reason);
        pop(d);
    }
    pop(d);
    return rc;
}

static int cstatuses(struct dec *d, const cJSON *status, const char *key, uint8_t kind,
                     struct ebb_pod *p)
{
    const cJSON *c;
    size_t n;
    int rc, i = 0;

    if ((rc = arr_at(d, status, key, &c, &n)) != 0 || n == 0)
        return rc;
    push(d, key);
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        struct ebb_cstatus *cs = &p->cstatus[p->ncstatus];
        push_i(d, i);
        p->ncstatus++;
        cs->kind = kind;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        if (rc == 0)
            rc = str_at(d, c, "name", &cs->name);
        if (rc == 0)
            rc = bool_at(d, c, "ready", &cs->ready);
        if (rc == 0)
            rc = i32_at(d, c, "restartCount", &cs->restarts, NULL);
        if (rc == 0)
            rc = cstate(d, c, "state", &cs->state, &cs->reason, &cs->exit_code);
        if (rc == 0)
            rc = cstate(d, c, "lastState", &cs->last_state, &cs->last_reason,
                        &cs->last_exit_code);
        if (kind == EBB_CONT_APP)
            p->restarts += cs->restarts;
        else if (kind == EBB_CONT_INIT)
            p->init_restarts += cs->restarts;
        pop(d);
    }
    pop(d);
    return rc;
}

static int conditions_at(struct dec *d, const cJSON *status, struct ebb_condition **out,
                         uint16_t *nout, bool *ready)
{
    const cJSON *c;
    size_t n;
    int rc, i = 0;

    if ((rc = arr_at(d, status, "conditions", &c, &n)) != 0 || n == 0)
        return rc;
    if (out != NULL && (*out = calloc(n, sizeof(**out))) == NULL)
        return nomem(d);
    push(d, "conditions");
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        struct ebb_condition tmp = { .last_transition = EBB_TIME_NONE };
        struct ebb_condition *cd = out ? &(*out)[i] : &tmp;
        push_i(d, i);
        if (out != NULL)
            (*nout)++;
        cd->last_transition = EBB_TIME_NONE;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        if (rc == 0)
            rc = str_at(d, c, "type", &cd->type);
        if (rc == 0)
            rc = str_at(d, c, "status", &cd->status);
        if (rc == 0 && out != NULL)
            rc = str_at(d, c, "reason", &cd->reason);
        if (rc == 0 && out != NULL)
            rc = time_at(d, c, "lastTransitionTime", &cd->last_transition);
        if (rc == 0 && cd->type && cd->status && strcmp(cd->type, "Ready") == 0)
            *ready = strcmp(cd->status, "True") == 0;
        if (out == NULL) {
            ebb_str_release(tmp.type);
            ebb_str_release(tmp.status);
        }
        pop(d);
    }
    pop(d);
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

    if ((rc = meta_at(d, obj, &meta, &p->ns, &p->name)) != 0)
        return rc;
    push(d, "metadata");
    if ((rc = str_at(d, meta, "uid", &p->uid)) == 0 &&
        (rc = labels_at(d, meta, "labels", &p->labels, false)) == 0 &&
        (rc = labels_at(d, meta, "annotations", &p->annotations, true)) == 0 &&
        (rc = owners_at(d, meta, p)) == 0 &&
        (rc = time_at(d, meta, "creationTimestamp", &p->created)) == 0 &&
        (rc = time_at(d, meta, "deletionTimestamp", &p->deleted)) == 0) {
        pod_annotation_flags(p);
        if (p->deleted != EBB_TIME_NONE)
            p->flags |= EBB_POD_TERMINATING;
    }
    pop(d);
    return rc;
}

static int pod_spec(struct dec *d, const cJSON *obj, struct ebb_pod *p, struct podsum *s)
{
    const cJSON *spec, *claims;
    bool has;
    size_t n;
    int rc;

    if ((rc = obj_at(d, obj, "spec", &spec)) != 0 || spec == NULL)
        return rc;
    push(d, "spec");
    if ((rc = str_at(d, spec, "nodeName", &p->node)) == 0 && p->node != NULL && *p->node == '\0') {
        ebb_str_release(p->node);
        p->node = NULL;
    }
    if (rc == 0)
        rc = str_at(d, spec, "schedulerName", &p->scheduler);
    if (rc == 0)
        rc = str_at(d, spec, "priorityClassName", &p->priority_class);
    if (rc == 0 && (rc = i32_at(d, spec, "priority", &p->priority, &has)) == 0 && has)
        p->flags |= EBB_POD_HAS_PRIORITY;
    if (rc == 0 && (rc = labels_at(d, spec, "nodeSelector", &p->node_selector, false)) == 0 &&
        p->node_selector.n > 0)
        p->flags |= EBB_POD_NODE_SELECTOR;
    if (rc == 0)
        rc = tolerations_at(d, spec, p);
    if (rc == 0)
        rc = affinity_at(d, spec, p);
    if (rc == 0)
        rc = tsc_at(d, spec, p);
    if (rc == 0)
        rc = containers(d, spec, p, s);
    if (rc == 0)
        rc = pod_requests(d, spec, p, s);
    if (rc == 0)
        rc = volumes(d, spec, p);
    if (rc == 0)
        rc = pod_sched_fields(d, spec, p);
    if (rc == 0 && (rc = arr_at(d, spec, "resourceClaims", &claims, &n)) == 0 && n > 0)
        p->flags |= EBB_POD_RESOURCE_CLAIMS;
    pop(d);
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
    if ((rc = obj_at(d, obj, "status", &status)) != 0 || status == NULL)
        return rc;
    push(d, "status");
    if ((rc = text_at(d, status, "phase", &txt)) == 0 && txt != NULL) {
        for (size_t i = 0; i < EBB_ARRAY_LEN(phases); i++)
            if (strcmp(txt, phases[i]) == 0)
                p->phase = (uint8_t)i;
    }
    if (rc == 0 && (rc = text_at(d, status, "qosClass", &txt)) == 0 && txt != NULL) {
        if (strcmp(txt, "Guaranteed") == 0)
            p->qos = EBB_QOS_GUARANTEED;
        else if (strcmp(txt, "Burstable") == 0)
            p->qos = EBB_QOS_BURSTABLE;
        else if (strcmp(txt, "BestEffort") == 0)
            p->qos = EBB_QOS_BEST_EFFORT;
    }
    if (rc == 0)
        rc = str_at(d, status, "reason", &p->reason);
    if (rc == 0)
        rc = time_at(d, status, "startTime", &p->started);
    if (rc == 0 && (rc = conditions_at(d, status, &p->conditions, &p->nconditions, &ready)) == 0 &&
        ready)
        p->flags |= EBB_POD_READY;
    for (int k = 0; rc == 0 && k < 3; k++)
        if ((rc = arr_at(d, status, keys[k], &c, &n)) == 0)
            total += n;
    if (rc == 0 && total > UINT16_MAX)
        rc = fail(d, EBB_ESCHEMA, NULL, "too many container statuses");
    if (rc == 0 && total > 0 && (p->cstatus = calloc(total, sizeof(*p->cstatus))) == NULL)
        rc = nomem(d);
    for (int k = 0; rc == 0 && k < 3 && total > 0; k++)
        rc = cstatuses(d, status, keys[k], (uint8_t)k, p);
    pop(d);
    return rc;
}

static int decode_pod(struct dec *d, const cJSON *obj, struct ebb_pod **out)
{
    struct podsum *s;
    struct ebb_pod *p;
    int rc;

    if (!cJSON_IsObject(obj))
        return expected(d, NULL, "an object", obj);
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return nomem(d);
    if ((s = calloc(1, sizeof(*s))) == NULL) {
        free(p);
        return nomem(d);
    }
    s->guaranteed = true;
    p->created = p->started = p->deleted = EBB_TIME_NONE;
    if ((rc = pod_meta(d, obj, p)) == 0 && (rc = pod_spec(d, obj, p, s)) == 0)
        rc = pod_status(d, obj, p, s);
    free(s);
    if (rc != 0) {
        ebb_pod_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int ebb_decode_pod(const cJSON *obj, struct ebb_pod **out, struct ebb_error *err)
{
    struct dec d = DEC_INIT(err);

    if (obj == NULL || out == NULL)
        return EBB_EINVAL;
    return decode_pod(&d, obj, out);
}

/* ---- nodes ------------------------------------------------------------------ */

static int taints_at(struct dec *d, const cJSON *spec, struct ebb_node *n)
{
    const cJSON *c;
    const char *s;
    size_t len;
    int rc, i = 0;

    if ((rc = arr_at(d, spec, "taints", &c, &len)) != 0 || len == 0)
        return rc;
    if ((n->taints = calloc(len, sizeof(*n->taints))) == NULL)
        return nomem(d);
    push(d, "taints");
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        struct ebb_taint *t = &n->taints[i];
        push_i(d, i);
        n->ntaints++;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        if (rc == 0)
            rc = str_at(d, c, "key", &t->key);
        if (rc == 0)
            rc = str_at(d, c, "value", &t->value);
        if (rc == 0 && (rc = text_at(d, c, "effect", &s)) == 0)
            t->effect = (uint8_t)ebb_effect_parse(s ? s : "");
        pop(d);
    }
    pop(d);
    return rc;
}

/* status.images: every name (tag and digest forms) with the size. */
static int node_images_at(struct dec *d, const cJSON *status, struct ebb_node *n)
{
    const cJSON *c;
    size_t len;
    int rc, i = 0;

    if ((rc = arr_at(d, status, "images", &c, &len)) != 0 || len == 0)
        return rc;
    if ((n->images = calloc(len, sizeof(*n->images))) == NULL)
        return nomem(d);
    push(d, "images");
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        struct ebb_node_image *im = &n->images[i];
        push_i(d, i);
        n->nimages++;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        if (rc == 0)
            rc = strs_at(d, c, "names", &im->names, &im->nnames);
        if (rc == 0)
            rc = int_at(d, c, "sizeBytes", 0, INT64_MAX, &im->size, NULL);
        pop(d);
    }
    pop(d);
    return rc;
}

static int decode_node(struct dec *d, const cJSON *obj, struct ebb_node **out)
{
    const cJSON *meta, *spec, *status;
    struct ebb_node *n;
    int rc;

    if (!cJSON_IsObject(obj))
        return expected(d, NULL, "an object", obj);
    if ((n = calloc(1, sizeof(*n))) == NULL)
        return nomem(d);
    n->created = EBB_TIME_NONE;
    n->ready = true;   /* upstream IsReady: only a Ready condition that is not True says no */
    if ((rc = meta_at(d, obj, &meta, NULL, &n->name)) != 0)
        goto fail;
    push(d, "metadata");
    if ((rc = str_at(d, meta, "uid", &n->uid)) == 0 &&
        (rc = labels_at(d, meta, "labels", &n->labels, false)) == 0 &&
        (rc = labels_at(d, meta, "annotations", &n->annotations, true)) == 0)
        rc = time_at(d, meta, "creationTimestamp", &n->created);
    pop(d);
    if (rc != 0 || (rc = obj_at(d, obj, "spec", &spec)) != 0)
        goto fail;
    push(d, "spec");
    if ((rc = bool_at(d, spec, "unschedulable", &n->unschedulable)) == 0)
        rc = taints_at(d, spec, n);
    pop(d);
    if (rc != 0 || (rc = obj_at(d, obj, "status", &status)) != 0)
        goto fail;
    push(d, "status");
    if ((rc = res_at(d, status, "capacity", &n->capacity)) == 0 &&
        (rc = res_at(d, status, "allocatable", &n->allocatable)) == 0 &&
        (rc = conditions_at(d, status, NULL, NULL, &n->ready)) == 0)
        rc = node_images_at(d, status, n);
    pop(d);
    if (rc != 0)
        goto fail;
    /* An empty allocatable means the capacity, as the descheduler reads it. */
    if (n->allocatable.n == 0 && n->capacity.n > 0) {
        size_t sz = n->capacity.n * sizeof(*n->capacity.q);
        if ((n->allocatable.q = malloc(sz)) == NULL) {
            rc = nomem(d);
            goto fail;
        }
        memcpy(n->allocatable.q, n->capacity.q, sz);
        n->allocatable.n = n->capacity.n;
    }
    *out = n;
    return 0;
fail:
    ebb_node_free(n);
    return rc;
}

int ebb_decode_node(const cJSON *obj, struct ebb_node **out, struct ebb_error *err)
{
    struct dec d = DEC_INIT(err);

    if (obj == NULL || out == NULL)
        return EBB_EINVAL;
    return decode_node(&d, obj, out);
}

/* ---- other kinds ------------------------------------------------------------- */

static int decode_namespace(struct dec *d, const cJSON *obj, struct ebb_namespace **out)
{
    struct ebb_namespace *ns;
    const cJSON *meta, *status;
    const char *phase;
    int rc;

    if ((ns = calloc(1, sizeof(*ns))) == NULL)
        return nomem(d);
    if ((rc = meta_at(d, obj, &meta, NULL, &ns->name)) == 0) {
        push(d, "metadata");
        rc = labels_at(d, meta, "labels", &ns->labels, false);
        if (rc == 0 && child(meta, "deletionTimestamp") != NULL)
            ns->terminating = true;
        pop(d);
    }
    if (rc == 0 && (rc = obj_at(d, obj, "status", &status)) == 0 && status != NULL) {
        push(d, "status");
        if ((rc = text_at(d, status, "phase", &phase)) == 0 && phase != NULL &&
            strcmp(phase, "Terminating") == 0)
            ns->terminating = true;
        pop(d);
    }
    if (rc != 0) {
        ebb_namespace_free(ns);
        return rc;
    }
    *out = ns;
    return 0;
}

static int decode_priority_class(struct dec *d, const cJSON *obj, struct ebb_priority_class **out)
{
    struct ebb_priority_class *pc;
    const cJSON *meta;
    int rc;

    if ((pc = calloc(1, sizeof(*pc))) == NULL)
        return nomem(d);
    if ((rc = meta_at(d, obj, &meta, NULL, &pc->name)) == 0 &&
        (rc = i32_at(d, obj, "value", &pc->value, NULL)) == 0)
        rc = bool_at(d, obj, "globalDefault", &pc->global_default);
    if (rc != 0) {
        ebb_priority_class_free(pc);
        return rc;
    }
    *out = pc;
    return 0;
}

static int decode_pvc(struct dec *d, const cJSON *obj, struct ebb_pvc **out)
{
    struct ebb_pvc *pvc;
    const cJSON *meta, *spec;
    int rc;

    if ((pvc = calloc(1, sizeof(*pvc))) == NULL)
        return nomem(d);
    if ((rc = meta_at(d, obj, &meta, &pvc->ns, &pvc->name)) == 0 &&
        (rc = obj_at(d, obj, "spec", &spec)) == 0) {
        push(d, "spec");
        rc = str_at(d, spec, "storageClassName", &pvc->storage_class);
        pop(d);
    }
    if (rc != 0) {
        ebb_pvc_free(pvc);
        return rc;
    }
    *out = pvc;
    return 0;
}

/* IntOrString as written ("2", "50%"). */
static int int_or_string_at(struct dec *d, const cJSON *o, const char *key, ebb_str *out)
{
    const cJSON *j = child(o, key);
    char buf[32];

    if (j == NULL)
        return 0;
    if (cJSON_IsString(j))
        return intern(d, key, j->valuestring, out);
    if (!cJSON_IsNumber(j) || j->valuedouble != floor(j->valuedouble) ||
        fabs(j->valuedouble) > 2147483647.0)
        return expected(d, key, "an integer or a percentage", j);
    snprintf(buf, sizeof(buf), "%d", (int)j->valuedouble);
    return intern(d, key, buf, out);
}

static int decode_pdb(struct dec *d, const cJSON *obj, struct ebb_pdb **out)
{
    struct ebb_pdb *pdb;
    const cJSON *meta, *spec, *status, *av;
    int rc;

    if ((pdb = calloc(1, sizeof(*pdb))) == NULL)
        return nomem(d);
    if ((rc = meta_at(d, obj, &meta, &pdb->ns, &pdb->name)) != 0)
        goto fail;
    push(d, "metadata");
    rc = int_at(d, meta, "generation", INT64_MIN, INT64_MAX, &pdb->generation, NULL);
    pop(d);
    if (rc != 0 || (rc = obj_at(d, obj, "spec", &spec)) != 0)
        goto fail;
    push(d, "spec");
    rc = selector_at(d, spec, "selector", true, &pdb->selector);
    /* policy/v1beta1 read an empty selector as "no pods" (policy/v1 as
     * "every pod"); the API server keeps that meaning when it converts. */
    av = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
    if (rc == 0 && cJSON_IsString(av) && strcmp(av->valuestring, "policy/v1beta1") == 0 &&
        ebb_selector_is_empty(pdb->selector)) {
        ebb_selector_free(pdb->selector);
        if ((pdb->selector = ebb_selector_nothing()) == NULL)
            rc = nomem(d);
    }
    if (rc == 0)
        rc = int_or_string_at(d, spec, "minAvailable", &pdb->min_available);
    if (rc == 0)
        rc = int_or_string_at(d, spec, "maxUnavailable", &pdb->max_unavailable);
    if (rc == 0)
        rc = str_at(d, spec, "unhealthyPodEvictionPolicy", &pdb->unhealthy_policy);
    pop(d);
    if (rc != 0 || (rc = obj_at(d, obj, "status", &status)) != 0)
        goto fail;
    push(d, "status");
    if ((rc = int_at(d, status, "observedGeneration", INT64_MIN, INT64_MAX,
                     &pdb->observed_generation, NULL)) == 0 &&
        (rc = i32_at(d, status, "disruptionsAllowed", &pdb->disruptions_allowed, NULL)) == 0 &&
        (rc = i32_at(d, status, "currentHealthy", &pdb->current_healthy, NULL)) == 0 &&
        (rc = i32_at(d, status, "desiredHealthy", &pdb->desired_healthy, NULL)) == 0)
        rc = i32_at(d, status, "expectedPods", &pdb->expected_pods, NULL);
    pop(d);
    if (rc != 0)
        goto fail;
    *out = pdb;
    return 0;
fail:
    ebb_pdb_free(pdb);
    return rc;
}

/* A Go duration ("10s", "1m30s", "20.5s", "150ms") in milliseconds. */
static bool parse_duration_ms(const char *s, int64_t *out)
{
    static const struct {
        const char *unit;
        double ms;
    } units[] = { { "ns", 1e-6 }, { "us", 1e-3 }, { "\xc2\xb5s", 1e-3 }, { "ms", 1 },
                  { "s", 1e3 },   { "m", 6e4 },   { "h", 3.6e6 } };
    double total = 0;
    const char *p = s;
    bool neg = false;

    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (strcmp(p, "0") == 0) {
        *out = 0;
        return true;
    }
    if (*p == '\0')
        return false;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        size_t best = 0, k;
        int u = -1;

        if (end == p || *p == '+' || *p == '-' || !(*p == '.' || (*p >= '0' && *p <= '9')))
            return false;
        for (k = 0; k < EBB_ARRAY_LEN(units); k++) {
            size_t l = strlen(units[k].unit);
            if (strncmp(end, units[k].unit, l) == 0 && l > best) {
                best = l;
                u = (int)k;
            }
        }
        if (u < 0)
            return false;
        total += v * units[u].ms;
        p = end + best;
    }
    *out = (int64_t)llround(neg ? -total : total);
    return true;
}

static int decode_node_metrics(struct dec *d, const cJSON *obj, struct ebb_node_metrics **out)
{
    struct ebb_node_metrics *m;
    const cJSON *meta;
    const char *w;
    int rc;

    if ((m = calloc(1, sizeof(*m))) == NULL)
        return nomem(d);
    m->timestamp = EBB_TIME_NONE;
    if ((rc = meta_at(d, obj, &meta, NULL, &m->node)) == 0 &&
        (rc = time_at(d, obj, "timestamp", &m->timestamp)) == 0 &&
        (rc = text_at(d, obj, "window", &w)) == 0 && w != NULL &&
        !parse_duration_ms(w, &m->window_ms))
        rc = fail(d, EBB_ESCHEMA, "window", "\"%s\" is not a duration", SHOWN(w));
    if (rc == 0)
        rc = res_at(d, obj, "usage", &m->usage);
    if (rc != 0) {
        ebb_node_metrics_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

static int decode_pod_metrics(struct dec *d, const cJSON *obj, struct ebb_pod_metrics **out)
{
    struct ebb_pod_metrics *m;
    const cJSON *meta, *c;
    struct racc sum, one;
    size_t n;
    int rc, i = 0;

    if ((m = calloc(1, sizeof(*m))) == NULL)
        return nomem(d);
    m->timestamp = EBB_TIME_NONE;
    sum.has = 0;
    if ((rc = meta_at(d, obj, &meta, &m->ns, &m->name)) == 0 &&
        (rc = time_at(d, obj, "timestamp", &m->timestamp)) == 0)
        rc = arr_at(d, obj, "containers", &c, &n);
    push(d, "containers");
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        push_i(d, i);
        one.has = 0;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        else if ((rc = reslist_at(d, c, "usage", RES_DROP, &one)) == 0)
            racc_add(&sum, &one);
        pop(d);
    }
    pop(d);
    if (rc == 0)
        rc = racc_emit(d, &sum, &m->usage);
    if (rc != 0) {
        ebb_pod_metrics_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* Koordinator's ResourceMap prints as {"resources": {...}, "devices": [...]};
 * a plain ResourceList is accepted too. */
static int resource_map_at(struct dec *d, const cJSON *o, const char *key, struct ebb_res *out)
{
    const cJSON *m, *r;
    struct racc a;
    int rc;

    if ((rc = obj_at(d, o, key, &m)) != 0 || m == NULL)
        return rc;
    a.has = 0;
    push(d, key);
    if ((rc = obj_at(d, m, "resources", &r)) == 0) {
        if (r != NULL)
            rc = reslist_at(d, m, "resources", RES_DROP, &a);
        else
            rc = reslist(d, m, "devices", RES_DROP, &a);
    }
    pop(d);
    if (rc == 0)
        rc = racc_emit(d, &a, out);
    return rc;
}

static int decode_koord(struct dec *d, const cJSON *obj, struct ebb_koord_node_metric **out)
{
    struct ebb_koord_node_metric *m;
    const cJSON *meta, *status, *nm, *c;
    size_t n;
    int rc, i = 0;

    if ((m = calloc(1, sizeof(*m))) == NULL)
        return nomem(d);
    m->update_time = EBB_TIME_NONE;
    if ((rc = meta_at(d, obj, &meta, NULL, &m->node)) != 0 ||
        (rc = obj_at(d, obj, "status", &status)) != 0 || status == NULL)
        goto done;
    push(d, "status");
    if ((rc = time_at(d, status, "updateTime", &m->update_time)) == 0 &&
        (rc = obj_at(d, status, "nodeMetric", &nm)) == 0 && nm != NULL) {
        m->has_node_metric = true;
        push(d, "nodeMetric");
        if ((rc = resource_map_at(d, nm, "nodeUsage", &m->node_usage)) == 0)
            rc = resource_map_at(d, nm, "systemUsage", &m->system_usage);
        pop(d);
    }
    if (rc == 0 && (rc = arr_at(d, status, "podsMetric", &c, &n)) == 0 && n > 0 &&
        (m->pods = calloc(n, sizeof(*m->pods))) == NULL)
        rc = nomem(d);
    push(d, "podsMetric");
    for (; rc == 0 && c != NULL; c = c->next, i++) {
        struct ebb_koord_pod_usage *u = &m->pods[i];
        push_i(d, i);
        m->npods++;
        if (!cJSON_IsObject(c))
            rc = expected(d, NULL, "an object", c);
        if (rc == 0)
            rc = str_at(d, c, "namespace", &u->ns);
        if (rc == 0)
            rc = str_at(d, c, "name", &u->name);
        if (rc == 0)
            rc = str_at(d, c, "priority", &u->priority);
        if (rc == 0)
            rc = resource_map_at(d, c, "podUsage", &u->usage);
        pop(d);
    }
    pop(d);
    pop(d);
done:
    if (rc != 0) {
        ebb_koord_node_metric_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

int ebb_decode_node_affinity(const cJSON *j, struct ebb_affinity **out, struct ebb_error *err)
{
    struct dec d = DEC_INIT(err);
    struct ebb_affinity *a;
    int rc;

    if (out == NULL)
        return EBB_EINVAL;
    *out = NULL;
    if (j == NULL || cJSON_IsNull(j))
        return 0;
    if (!cJSON_IsObject(j))
        return expected(&d, NULL, "an object", j);
    if ((a = calloc(1, sizeof(*a))) == NULL)
        return nomem(&d);
    if ((rc = node_affinity(&d, j, a)) != 0) {
        ebb_affinity_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

/* ---- Services, ReplicaSets, StatefulSets, ReplicationControllers ------------ */

/* A selector written as a plain map (Service, ReplicationController):
 * every pair a "key In (value)"; {} selects everything. */
static int map_selector_at(struct dec *d, const cJSON *o, const char *key,
                           struct ebb_selector **out)
{
    const cJSON *m, *c;
    struct ebb_req *reqs;
    size_t n = 0, i = 0;
    int rc;

    *out = NULL;
    if ((rc = obj_at(d, o, key, &m)) != 0 || m == NULL)
        return rc;
    for (c = m->child; c != NULL; c = c->next)
        n++;
    if (n == 0)
        return (*out = ebb_selector_everything()) == NULL ? nomem(d) : 0;
    if (n > UINT16_MAX)
        return fail(d, EBB_ESCHEMA, key, "too many requirements");
    if ((reqs = calloc(n, sizeof(*reqs))) == NULL)
        return nomem(d);
    push(d, key);
    for (c = m->child; rc == 0 && c != NULL; c = c->next, i++) {
        struct ebb_req *r = &reqs[i];
        r->op = EBB_OP_IN;
        if (!cJSON_IsString(c))
            rc = expected(d, c->string, "a string", c);
        else if ((r->values = calloc(1, sizeof(*r->values))) == NULL)
            rc = nomem(d);
        else if ((rc = intern(d, c->string, c->string, &r->key)) == 0 &&
                 (rc = intern(d, c->string, c->valuestring, &r->values[0])) == 0)
            r->nvalues = 1;
    }
    pop(d);
    if (rc == 0 && (rc = ebb_selector_from_reqs(reqs, (uint16_t)n, out)) != 0)
        rc = fail(d, rc, key, "cannot build the selector: %s", ebb_strerror(rc));
    if (rc != 0)
        reqs_free(reqs, n);
    return rc;
}

static int decode_workload(struct dec *d, const cJSON *obj, int kind, struct ebb_workload **out)
{
    struct ebb_workload *w;
    const cJSON *meta, *spec;
    int rc;

    if ((w = calloc(1, sizeof(*w))) == NULL)
        return nomem(d);
    w->kind = kind;
    w->replicas = -1;
    if ((rc = meta_at(d, obj, &meta, &w->ns, &w->name)) == 0) {
        push(d, "metadata");
        rc = str_at(d, meta, "uid", &w->uid);
        pop(d);
    }
    if (rc == 0 && (rc = obj_at(d, obj, "spec", &spec)) == 0 && spec != NULL) {
        push(d, "spec");
        if (kind != EBB_KIND_SERVICE)
            rc = i32_at(d, spec, "replicas", &w->replicas, NULL);
        if (rc == 0) {
            if (kind == EBB_KIND_SERVICE || kind == EBB_KIND_REPLICATION_CONTROLLER)
                rc = map_selector_at(d, spec, "selector", &w->selector);
            else
                rc = selector_at(d, spec, "selector", false, &w->selector);
        }
        pop(d);
    }
    if (rc != 0) {
        ebb_workload_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* Decode `obj` as `kind` (already known to be an object). */
static int decode_as(struct dec *d, const cJSON *obj, int kind, struct ebb_object *out)
{
    int rc;

    switch (kind) {
    case EBB_KIND_POD: rc = decode_pod(d, obj, &out->u.pod); break;
    case EBB_KIND_NODE: rc = decode_node(d, obj, &out->u.node); break;
    case EBB_KIND_NAMESPACE: rc = decode_namespace(d, obj, &out->u.ns); break;
    case EBB_KIND_PRIORITY_CLASS: rc = decode_priority_class(d, obj, &out->u.pc); break;
    case EBB_KIND_PVC: rc = decode_pvc(d, obj, &out->u.pvc); break;
    case EBB_KIND_PDB: rc = decode_pdb(d, obj, &out->u.pdb); break;
    case EBB_KIND_NODE_METRICS: rc = decode_node_metrics(d, obj, &out->u.node_metrics); break;
    case EBB_KIND_POD_METRICS: rc = decode_pod_metrics(d, obj, &out->u.pod_metrics); break;
    case EBB_KIND_KOORD_NODE_METRIC: rc = decode_koord(d, obj, &out->u.koord); break;
    case EBB_KIND_PROM_RESULT: rc = ebb_prom_result_decode(obj, &out->u.prom, d->err); break;
    case EBB_KIND_SERVICE:
    case EBB_KIND_REPLICA_SET:
    case EBB_KIND_STATEFUL_SET:
    case EBB_KIND_REPLICATION_CONTROLLER: rc = decode_workload(d, obj, kind, &out->u.workload); break;
    default:
        return fail(d, EBB_ENOENT, "kind", "not a kind ebb keeps");
    }
    if (rc == 0)
        out->kind = kind;
    else
        out->u.any = NULL;
    return rc;
}

int ebb_decode_object(const cJSON *obj, struct ebb_object *out, struct ebb_error *err)
{
    return ebb_decode_object_as(obj, EBB_KIND_UNKNOWN, out, err);
}

/* `obj` as `kind`, or as the kind it names. */
static int object_as(struct dec *d, const cJSON *obj, int kind, struct ebb_object *out)
{
    if (obj == NULL || out == NULL)
        return EBB_EINVAL;
    out->kind = EBB_KIND_UNKNOWN;
    out->u.any = NULL;
    if (!cJSON_IsObject(obj))
        return expected(d, NULL, "an object", obj);
    if (kind == EBB_KIND_UNKNOWN || cJSON_GetObjectItemCaseSensitive(obj, "kind") != NULL)
        kind = ebb_decode_kind(obj);
    return decode_as(d, obj, kind, out);
}

int ebb_decode_object_as(const cJSON *obj, int kind, struct ebb_object *out, struct ebb_error *err)
{
    struct dec d = DEC_INIT(err);

    return object_as(&d, obj, kind, out);
}

void ebb_object_free(struct ebb_object *o)
{
    if (o == NULL)
        return;
    switch (o->kind) {
    case EBB_KIND_POD: ebb_pod_free(o->u.pod); break;
    case EBB_KIND_NODE: ebb_node_free(o->u.node); break;
    case EBB_KIND_NAMESPACE: ebb_namespace_free(o->u.ns); break;
    case EBB_KIND_PRIORITY_CLASS: ebb_priority_class_free(o->u.pc); break;
    case EBB_KIND_PVC: ebb_pvc_free(o->u.pvc); break;
    case EBB_KIND_PDB: ebb_pdb_free(o->u.pdb); break;
    case EBB_KIND_NODE_METRICS: ebb_node_metrics_free(o->u.node_metrics); break;
    case EBB_KIND_POD_METRICS: ebb_pod_metrics_free(o->u.pod_metrics); break;
    case EBB_KIND_KOORD_NODE_METRIC: ebb_koord_node_metric_free(o->u.koord); break;
    case EBB_KIND_PROM_RESULT: ebb_prom_result_free(o->u.prom); break;
    case EBB_KIND_SERVICE:
    case EBB_KIND_REPLICA_SET:
    case EBB_KIND_STATEFUL_SET:
    case EBB_KIND_REPLICATION_CONTROLLER: ebb_workload_free(o->u.workload); break;
    default: break;
    }
    o->kind = EBB_KIND_UNKNOWN;
    o->u.any = NULL;
}

/* ---- objects from a server ------------------------------------------------------ */

const char *ebb_skip_reason(int reason)
{
    static const char *const names[EBB_SKIP_MAX] = {
        [EBB_SKIP_INVALID] = "invalid", [EBB_SKIP_WRONG_KIND] = "wrong-kind",
        [EBB_SKIP_TOO_LARGE] = "too-large", [EBB_SKIP_NOT_JSON] = "not-json",
        [EBB_SKIP_TOO_MANY] = "too-many",
    };
    return reason > 0 && reason < EBB_SKIP_MAX ? names[reason] : "unknown";
}

static bool namespaced(int kind)
{
    switch (kind) {
    case EBB_KIND_POD:
    case EBB_KIND_PVC:
    case EBB_KIND_PDB:
    case EBB_KIND_POD_METRICS:
    case EBB_KIND_SERVICE:
    case EBB_KIND_REPLICA_SET:
    case EBB_KIND_STATEFUL_SET:
    case EBB_KIND_REPLICATION_CONTROLLER: return true;
    default: return false;
    }
}

/* metadata.<key> as text fit for a message and an Event: "" unless it
 * is a string of valid UTF-8 that fits. */
static void meta_text(const cJSON *meta, const char *key, char *buf, size_t len)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(meta, key);
    size_t n;

    buf[0] = '\0';
    if (!cJSON_IsString(j) || (n = strlen(j->valuestring)) >= len ||
        !ebb_utf8_valid(j->valuestring, n))
        return;
    memcpy(buf, j->valuestring, n + 1);
}

void ebb_skip_key(const cJSON *obj, int kind, struct ebb_skip *why)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

    why->kind = kind;
    meta_text(meta, "namespace", why->ns, sizeof(why->ns));
    meta_text(meta, "name", why->name, sizeof(why->name));
    meta_text(meta, "uid", why->uid, sizeof(why->uid));
    if (namespaced(kind) && why->ns[0] == '\0')
        snprintf(why->ns, sizeof(why->ns), "default");
    else if (!namespaced(kind))
        why->ns[0] = '\0';
}

/* The one place that decides what becomes of an object a server sent.
 * Invariant: an object is kept whole or not at all, and never fails more
 * than itself: what a real API server stores but ebb cannot keep as it is
 * has been made representable before this (a NUL read as U+FFFD by
 * ebb_json_nul_scrub, resource names past the registry's bounds counted
 * as EBB_RES_UNREGISTERED by reslist); anything else ebb cannot read (a
 * field of a type or value it does not take, more entries than it keeps,
 * a quantity that is not one, another kind) is skipped alone, and the
 * caller says so (a warning, ebb_objects_skipped_total{resource,reason},
 * a Warning Event on the object). Only running out of memory is not the
 * object's fault: that is returned as is. */
int ebb_decode_from_server(const cJSON *obj, int kind, struct ebb_object *out, struct ebb_skip *why)
{
    struct dec d = DEC_INIT(NULL);
    int rc;

    if (obj == NULL || out == NULL || why == NULL)
        return EBB_EINVAL;
    memset(why, 0, sizeof(*why));
    d.err = &why->err;
    d.kept_max = EBB_OBJECT_KEPT_MAX;
    rc = object_as(&d, obj, kind, out);
    if (rc == EBB_ENOMEM)
        return rc;
    if (rc == 0 && (kind == EBB_KIND_UNKNOWN || out->kind == kind))
        return 0;
    if (rc == 0) {
        snprintf(why->err.field, sizeof(why->err.field), "kind");
        snprintf(why->err.msg, sizeof(why->err.msg), "a %s where a %s was expected",
                 ebb_kind_name(out->kind), ebb_kind_name(kind));
        ebb_object_free(out);
        why->reason = EBB_SKIP_WRONG_KIND;
    } else {
        why->reason = rc == EBB_ELIMIT ? EBB_SKIP_TOO_LARGE : EBB_SKIP_INVALID;
    }
    ebb_skip_key(obj, kind, why);
    why->err.code = EBB_ESCHEMA;
    return EBB_ESCHEMA;
}

bool ebb_json_nul_scrub(char *text, size_t len)
{
    char *p = text, *end = text + len;

    if (len > 0 && memchr(text, '\0', len) != NULL)
        return false;
    /* backslashes only occur inside strings in JSON; each escape is
     * stepped over whole, so "\\u0000" (an escaped backslash, then text)
     * stays as it is */
    while ((p = memchr(p, '\\', (size_t)(end - p))) != NULL) {
        if (end - p >= 6 && p[1] == 'u' && memcmp(p + 2, "0000", 4) == 0) {
            memcpy(p + 2, "fffd", 4);
            p += 6;
        } else {
            p += 2;
        }
        if (p >= end)
            break;
    }
    return true;
}
