/* YAML/JSON text -> struct ebb_val, built from libyaml events.
 *
 * The event API (not libyaml's document loader) is used because typing a
 * scalar the way sigs.k8s.io/yaml does needs to know whether a tag was
 * written and how the scalar was quoted; the loader folds both into a
 * default tag. Anchors keep a private copy of their value, so an alias is a
 * copy and the tree never shares nodes: every node has one owner. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "ebb/val.h"

#define MAX_DEPTH 512
/* Nodes an alias may copy in one document: the "billion laughs" guard
 * (go-yaml has the same kind of limit on excessive aliasing). */
#define MAX_ALIAS_NODES 1000000

#define YAML_TAG_PREFIX "tag:yaml.org,2002:"

struct anchor {
    char *name;
    struct ebb_val *v;          /* private copy, freed with the parser */
};

struct parser {
    yaml_parser_t yp;
    const char *file;
    const char *buf;
    size_t len;
    struct ebb_error *err;
    struct anchor *anchors;
    size_t nanchors, capanchors;
    size_t alias_budget;
    int depth;
    size_t pathlen;
    char path[256];
};

/* ---- small helpers -------------------------------------------------------- */

static char *memdup0(const char *s, size_t len)
{
    char *d = malloc(len + 1);

    if (d == NULL)
        return NULL;
    if (len > 0)
        memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

static struct ebb_val *val_alloc(int type, int line, int col)
{
    struct ebb_val *v = calloc(1, sizeof(*v));

    if (v == NULL)
        return NULL;
    v->type = (uint8_t)type;
    v->line = line;
    v->col = col;
    return v;
}

static int perr(struct parser *p, int code, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int perr(struct parser *p, int code, int line, const char *fmt, ...)
{
    char msg[sizeof(p->err->msg)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ebb_error_set(p->err, code, p->file, line, p->path, "%s", msg);
}

static int line_of(const yaml_mark_t *m)
{
    return (int)m->line + 1;
}

static int col_of(const yaml_mark_t *m)
{
    return (int)m->column + 1;
}

/* Line of a byte offset (reader errors carry only an offset). */
static int line_at_offset(const struct parser *p, size_t off)
{
    int line = 1;

    for (size_t i = 0; i < off && i < p->len; i++)
        if (p->buf[i] == '\n')
            line++;
    return line;
}

static int yaml_fail(struct parser *p)
{
    yaml_parser_t *yp = &p->yp;

    p->pathlen = 0;
    p->path[0] = '\0';
    switch (yp->error) {
    case YAML_MEMORY_ERROR:
        return perr(p, EBB_ENOMEM, 0, "out of memory while parsing");
    case YAML_READER_ERROR:
        if (yp->problem_value != -1)
            return perr(p, EBB_EPARSE, line_at_offset(p, yp->problem_offset),
                        "%s: #%X at byte %zu", yp->problem, (unsigned)yp->problem_value,
                        yp->problem_offset);
        return perr(p, EBB_EPARSE, line_at_offset(p, yp->problem_offset), "%s at byte %zu",
                    yp->problem, yp->problem_offset);
    default:
        /* Found only at the end of the input: the construct that was left
         * open is where the user has to look. */
        if (yp->context != NULL && yp->problem_mark.index >= p->len)
            return perr(p, EBB_EPARSE, line_of(&yp->context_mark), "%s at the end of the input "
                        "(%s at line %d, column %d)", yp->problem, yp->context,
                        line_of(&yp->context_mark), col_of(&yp->context_mark));
        if (yp->context != NULL)
            return perr(p, EBB_EPARSE, line_of(&yp->problem_mark),
                        "%s at column %d (%s at line %d)", yp->problem,
                        col_of(&yp->problem_mark), yp->context, line_of(&yp->context_mark));
        return perr(p, EBB_EPARSE, line_of(&yp->problem_mark), "%s at column %d",
                    yp->problem ? yp->problem : "invalid YAML", col_of(&yp->problem_mark));
    }
}

static int next_event(struct parser *p, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&p->yp, ev))
        return yaml_fail(p);
    return 0;
}

/* ---- the path of the node being built, for error messages ------------------ */

static bool key_needs_quotes(const char *k)
{
    if (*k == '\0')
        return true;
    for (; *k; k++)
        if (*k == '.' || *k == '[' || *k == ']' || *k == '"')
            return true;
    return false;
}

static size_t path_push_key(struct parser *p, const char *key)
{
    size_t old = p->pathlen;
    int k;

    if (key_needs_quotes(key))
        k = snprintf(p->path + old, sizeof(p->path) - old, "[\"%s\"]", key);
    else
        k = snprintf(p->path + old, sizeof(p->path) - old, "%s%s", old ? "." : "", key);
    if (k > 0)
        p->pathlen = old + (size_t)k < sizeof(p->path) ? old + (size_t)k : sizeof(p->path) - 1;
    return old;
}

static size_t path_push_index(struct parser *p, size_t i)
{
    size_t old = p->pathlen;
    int k = snprintf(p->path + old, sizeof(p->path) - old, "[%zu]", i);

    if (k > 0)
        p->pathlen = old + (size_t)k < sizeof(p->path) ? old + (size_t)k : sizeof(p->path) - 1;
    return old;
}

static void path_pop(struct parser *p, size_t old)
{
    p->pathlen = old;
    p->path[old] = '\0';
}

/* ---- scalar typing (go-yaml v2 resolve, as sigs.k8s.io/yaml uses it) ------- */

enum { W_FALSE, W_TRUE, W_NULL, W_NAN, W_PINF, W_NINF };

static const struct {
    const char *s;
    uint8_t kind;
} words[] = {
    {"y", W_TRUE}, {"Y", W_TRUE}, {"yes", W_TRUE}, {"Yes", W_TRUE}, {"YES", W_TRUE},
    {"true", W_TRUE}, {"True", W_TRUE}, {"TRUE", W_TRUE},
    {"on", W_TRUE}, {"On", W_TRUE}, {"ON", W_TRUE},
    {"n", W_FALSE}, {"N", W_FALSE}, {"no", W_FALSE}, {"No", W_FALSE}, {"NO", W_FALSE},
    {"false", W_FALSE}, {"False", W_FALSE}, {"FALSE", W_FALSE},
    {"off", W_FALSE}, {"Off", W_FALSE}, {"OFF", W_FALSE},
    {"", W_NULL}, {"~", W_NULL}, {"null", W_NULL}, {"Null", W_NULL}, {"NULL", W_NULL},
    {".nan", W_NAN}, {".NaN", W_NAN}, {".NAN", W_NAN},
    {".inf", W_PINF}, {".Inf", W_PINF}, {".INF", W_PINF},
    {"+.inf", W_PINF}, {"+.Inf", W_PINF}, {"+.INF", W_PINF},
    {"-.inf", W_NINF}, {"-.Inf", W_NINF}, {"-.INF", W_NINF},
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* strconv.ParseInt(s, 0, 64) syntax without underscores: sign, then 0x/0o/0b
 * or a leading 0 (octal), or decimal. The magnitude must fit 64 bits. */
static bool parse_go_int(const char *s, size_t n, bool *neg, bool *sign, uint64_t *mag)
{
    size_t i = 0;
    unsigned base = 10;
    uint64_t m = 0;

    *neg = *sign = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) {
        *neg = s[i] == '-';
        *sign = true;
        i++;
    }
    if (i >= n)
        return false;
    if (s[i] == '0' && i + 1 < n) {
        char c = (char)(s[i + 1] | 0x20);
        if (c == 'x')
            base = 16, i += 2;
        else if (c == 'o')
            base = 8, i += 2;
        else if (c == 'b')
            base = 2, i += 2;
        else
            base = 8, i += 1;
        if (i >= n)
            return false;
    }
    for (; i < n; i++) {
        char c = s[i];
        unsigned d;
        if (is_digit(c))
            d = (unsigned)(c - '0');
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (unsigned)((c | 0x20) - 'a' + 10);
        else
            return false;
        if (d >= base || m > (UINT64_MAX - d) / base)
            return false;
        m = m * base + d;
    }
    *mag = m;
    return true;
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool yaml_float_syntax(const char *s, size_t n)
{
    size_t i = 0, d = 0;

    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    if (i < n && s[i] == '.') {
        for (i++; i < n && is_digit(s[i]); i++)
            d++;
    } else {
        for (; i < n && is_digit(s[i]); i++)
            d++;
        if (d > 0 && i < n && s[i] == '.')
            for (i++; i < n && is_digit(s[i]); i++)
                ;
    }
    if (d == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t e = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (; i < n && is_digit(s[i]); i++)
            e++;
        if (e == 0)
            return false;
    }
    return i == n;
}

/* strtod on a checked decimal literal; an overflow is not a float (Go's
 * ParseFloat reports a range error and the scalar stays a string). */
static bool to_double(const char *s, size_t n, double *out)
{
    char buf[128], *t = n < sizeof(buf) ? buf : malloc(n + 1);
    double d;

    if (t == NULL)
        return false;
    memcpy(t, s, n);
    t[n] = '\0';
    d = strtod(t, NULL);
    if (t != buf)
        free(t);
    if (isinf(d))
        return false;
    *out = d;
    return true;
}

/* Type a plain, untagged scalar. Returns the type; numbers and booleans are
 * stored in *v. Anything unrecognised is a string (the caller fills it). */
static int resolve_plain(const char *s, size_t n, struct ebb_val *v)
{
    if (n <= 6) {
        for (size_t i = 0; i < EBB_ARRAY_LEN(words); i++) {
            if (strlen(words[i].s) != n || memcmp(words[i].s, s, n) != 0)
                continue;
            switch (words[i].kind) {
            case W_FALSE: v->u.b = false; return EBB_VAL_BOOL;
            case W_TRUE: v->u.b = true; return EBB_VAL_BOOL;
            case W_NULL: return EBB_VAL_NULL;
            case W_NAN: v->u.f = NAN; return EBB_VAL_FLOAT;
            case W_PINF: v->u.f = INFINITY; return EBB_VAL_FLOAT;
            default: v->u.f = -INFINITY; return EBB_VAL_FLOAT;
            }
        }
    }
    if (s[0] == '.') {
        size_t i = 1, d = 0;
        for (; i < n && is_digit(s[i]); i++)
            d++;
        if (d > 0 && yaml_float_syntax(s, n) && to_double(s, n, &v->u.f))
            return EBB_VAL_FLOAT;
        return EBB_VAL_STRING;
    }
    if (is_digit(s[0]) || s[0] == '+' || s[0] == '-') {
        char sbuf[128] = "", *plain = n < sizeof(sbuf) ? sbuf : malloc(n + 1);
        size_t m = 0;
        bool neg, sign;
        uint64_t mag;
        int type = EBB_VAL_STRING;

        if (plain == NULL)
            return EBB_VAL_STRING;
        for (size_t i = 0; i < n; i++)
            if (s[i] != '_')
                plain[m++] = s[i];
        if (parse_go_int(plain, m, &neg, &sign, &mag) &&
            (neg ? mag <= (uint64_t)INT64_MAX + 1 : true)) {
            if (!neg && mag <= (uint64_t)INT64_MAX) {
                v->u.i = (int64_t)mag;
                type = EBB_VAL_INT;
            } else if (neg) {
                v->u.i = mag == 0 ? 0 : -(int64_t)(mag - 1) - 1;
                type = EBB_VAL_INT;
            } else if (!sign) {
                /* Beyond int64: go-yaml gives a uint64; kept as a float. */
                v->u.f = (double)mag;
                type = EBB_VAL_FLOAT;
            }
        }
        if (type == EBB_VAL_STRING && yaml_float_syntax(plain, m) &&
            to_double(plain, m, &v->u.f))
            type = EBB_VAL_FLOAT;
        if (plain != sbuf)
            free(plain);
        return type;
    }
    return EBB_VAL_STRING;
}

/* "tag:yaml.org,2002:int" -> "int", to be printed after "!!" */
static const char *short_tag(const char *tag)
{
    return tag + strlen(YAML_TAG_PREFIX);
}

static const char *tag_of_type(int type)
{
    switch (type) {
    case EBB_VAL_NULL: return "!!null";
    case EBB_VAL_BOOL: return "!!bool";
    case EBB_VAL_INT: return "!!int";
    case EBB_VAL_FLOAT: return "!!float";
    default: return "!!str";
    }
}

static int build_scalar(struct parser *p, const yaml_event_t *ev, struct ebb_val **out)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    struct ebb_val tmp = {0};
    struct ebb_val *v;
    int type = EBB_VAL_STRING;
    int line = line_of(&ev->start_mark);

    if (tag == NULL) {
        if (ev->data.scalar.plain_implicit && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
            type = resolve_plain(s, n, &tmp);
    } else if (strncmp(tag, YAML_TAG_PREFIX, strlen(YAML_TAG_PREFIX)) == 0) {
        const char *t = tag + strlen(YAML_TAG_PREFIX);
        int want = -1;

        if (strcmp(t, "int") == 0)
            want = EBB_VAL_INT;
        else if (strcmp(t, "float") == 0)
            want = EBB_VAL_FLOAT;
        else if (strcmp(t, "bool") == 0)
            want = EBB_VAL_BOOL;
        else if (strcmp(t, "null") == 0)
            want = EBB_VAL_NULL;
        else if (strcmp(t, "binary") == 0)
            return perr(p, EBB_EPARSE, line, "the !!binary tag is not supported");
        else if (strcmp(t, "timestamp") == 0) {
            /* Kept as its text, as go-yaml hands timestamps to JSON. */
            if (!(n > 4 && is_digit(s[0]) && is_digit(s[1]) && is_digit(s[2]) &&
                  is_digit(s[3]) && s[4] == '-')) {
                return perr(p, EBB_EPARSE, line, "cannot decode \"%.*s\" as !!timestamp",
                            (int)(n > 64 ? 64 : n), s);
            }
        }
        if (want >= 0) {
            type = resolve_plain(s, n, &tmp);
            if (want == EBB_VAL_FLOAT && type == EBB_VAL_INT) {
                tmp.u.f = (double)tmp.u.i;
                type = EBB_VAL_FLOAT;
            }
            if (type != want) {
                return perr(p, EBB_EPARSE, line, "cannot decode %s \"%.*s\" as !!%s",
                            tag_of_type(type), (int)(n > 64 ? 64 : n), s, short_tag(tag));
            }
        }
    }
    /* Any other tag (local "!x", "!", !!str, !!merge...) leaves a string. */
    if ((v = val_alloc(type, line, col_of(&ev->start_mark))) == NULL)
        return perr(p, EBB_ENOMEM, line, "out of memory");
    if (type == EBB_VAL_STRING) {
        if ((v->u.str.s = memdup0(s, n)) == NULL) {
            free(v);
            return perr(p, EBB_ENOMEM, line, "out of memory");
        }
        v->u.str.len = n;
    } else {
        v->u = tmp.u;
    }
    *out = v;
    return 0;
}

/* ---- copies (aliases, ebb_val_dup) ---------------------------------------- */

static struct ebb_val *dup_rec(const struct ebb_val *v, size_t *budget)
{
    struct ebb_val *d;

    if (*budget == 0)
        return NULL;
    (*budget)--;
    if ((d = val_alloc(v->type, v->line, v->col)) == NULL)
        return NULL;
    switch (v->type) {
    case EBB_VAL_STRING:
        if ((d->u.str.s = memdup0(v->u.str.s, v->u.str.len)) == NULL)
            goto fail;
        d->u.str.len = v->u.str.len;
        break;
    case EBB_VAL_SEQ:
        if (v->u.seq.n == 0)
            break;
        if ((d->u.seq.items = calloc(v->u.seq.n, sizeof(*d->u.seq.items))) == NULL)
            goto fail;
        for (size_t i = 0; i < v->u.seq.n; i++) {
            if ((d->u.seq.items[i] = dup_rec(v->u.seq.items[i], budget)) == NULL)
                goto fail;
            d->u.seq.n = i + 1;
        }
        break;
    case EBB_VAL_MAP:
        if (v->u.map.n == 0)
            break;
        d->u.map.keys = calloc(v->u.map.n, sizeof(*d->u.map.keys));
        d->u.map.key_lines = calloc(v->u.map.n, sizeof(*d->u.map.key_lines));
        d->u.map.vals = calloc(v->u.map.n, sizeof(*d->u.map.vals));
        if (!d->u.map.keys || !d->u.map.key_lines || !d->u.map.vals)
            goto fail;
        for (size_t i = 0; i < v->u.map.n; i++) {
            if ((d->u.map.keys[i] = strdup(v->u.map.keys[i])) == NULL)
                goto fail;
            d->u.map.key_lines[i] = v->u.map.key_lines[i];
            if ((d->u.map.vals[i] = dup_rec(v->u.map.vals[i], budget)) == NULL) {
                free(d->u.map.keys[i]);
                goto fail;
            }
            d->u.map.n = i + 1;
        }
        break;
    default:
        d->u = v->u;
        break;
    }
    return d;
fail:
    ebb_val_free(d);
    return NULL;
}

struct ebb_val *ebb_val_dup(const struct ebb_val *v)
{
    size_t budget = SIZE_MAX;

    return v ? dup_rec(v, &budget) : NULL;
}

bool ebb_val_equal(const struct ebb_val *a, const struct ebb_val *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case EBB_VAL_NULL: return true;
    case EBB_VAL_BOOL: return a->u.b == b->u.b;
    case EBB_VAL_INT: return a->u.i == b->u.i;
    case EBB_VAL_FLOAT: return a->u.f == b->u.f;
    case EBB_VAL_STRING:
        return a->u.str.len == b->u.str.len && memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
    case EBB_VAL_SEQ:
        if (a->u.seq.n != b->u.seq.n)
            return false;
        for (size_t i = 0; i < a->u.seq.n; i++)
            if (!ebb_val_equal(a->u.seq.items[i], b->u.seq.items[i]))
                return false;
        return true;
    case EBB_VAL_MAP:
        if (a->u.map.n != b->u.map.n)
            return false;
        for (size_t i = 0; i < a->u.map.n; i++) {
            const struct ebb_val *o = ebb_val_get(b, a->u.map.keys[i]);
            if (o == NULL || !ebb_val_equal(a->u.map.vals[i], o))
                return false;
        }
        return true;
    default:
        return false;
    }
}

/* ---- collections ------------------------------------------------------------ */

static int parse_node(struct parser *p, yaml_event_t *ev, struct ebb_val **out);

static int register_anchor(struct parser *p, const char *name, const struct ebb_val *v)
{
    struct anchor a;

    if (p->nanchors == p->capanchors) {
        size_t cap = p->capanchors ? p->capanchors * 2 : 8;
        struct anchor *na = realloc(p->anchors, cap * sizeof(*na));
        if (na == NULL)
            return perr(p, EBB_ENOMEM, v->line, "out of memory");
        p->anchors = na;
        p->capanchors = cap;
    }
    a.name = strdup(name);
    a.v = ebb_val_dup(v);
    if (a.name == NULL || a.v == NULL) {
        free(a.name);
        ebb_val_free(a.v);
        return perr(p, EBB_ENOMEM, v->line, "out of memory");
    }
    p->anchors[p->nanchors++] = a;
    return 0;
}

static int build_alias(struct parser *p, const yaml_event_t *ev, struct ebb_val **out)
{
    const char *name = (const char *)ev->data.alias.anchor;
    int line = line_of(&ev->start_mark);
    struct ebb_val *v;

    /* The latest definition of a name wins, as YAML redefinition says. */
    for (size_t i = p->nanchors; i-- > 0;) {
        if (strcmp(p->anchors[i].name, name) != 0)
            continue;
        if ((v = dup_rec(p->anchors[i].v, &p->alias_budget)) == NULL) {
            if (p->alias_budget == 0)
                return perr(p, EBB_EPARSE, line,
                            "document contains excessive aliasing (alias *%s)", name);
            return perr(p, EBB_ENOMEM, line, "out of memory");
        }
        v->line = line;
        v->col = col_of(&ev->start_mark);
        *out = v;
        return 0;
    }
    return perr(p, EBB_EPARSE, line, "unknown anchor '%s' referenced", name);
}

static int build_seq(struct parser *p, struct ebb_val *seq)
{
    size_t cap = 0;
    int rc;

    for (;;) {
        yaml_event_t ev;
        struct ebb_val *item;
        size_t old;

        if ((rc = next_event(p, &ev)) < 0)
            return rc;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        old = path_push_index(p, seq->u.seq.n);
        rc = parse_node(p, &ev, &item);
        yaml_event_delete(&ev);
        path_pop(p, old);
        if (rc < 0)
            return rc;
        if (seq->u.seq.n == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            struct ebb_val **ni = realloc(seq->u.seq.items, ncap * sizeof(*ni));
            if (ni == NULL) {
                ebb_val_free(item);
                return perr(p, EBB_ENOMEM, seq->line, "out of memory");
            }
            seq->u.seq.items = ni;
            cap = ncap;
        }
        seq->u.seq.items[seq->u.seq.n++] = item;
    }
}

/* A map key as sigs.k8s.io/yaml turns it into a JSON key: strings as they
 * are, numbers and booleans in Go's text form; null and collections are
 * refused. */
static int key_text(struct parser *p, const struct ebb_val *k, char **out)
{
    char buf[64];

    switch (k->type) {
    case EBB_VAL_STRING:
        *out = memdup0(k->u.str.s, k->u.str.len);
        break;
    case EBB_VAL_BOOL:
        *out = strdup(k->u.b ? "true" : "false");
        break;
    case EBB_VAL_INT:
        snprintf(buf, sizeof(buf), "%lld", (long long)k->u.i);
        *out = strdup(buf);
        break;
    case EBB_VAL_FLOAT: {
        /* strconv.FormatFloat(f, 'g', -1, 32): shortest float32 digits,
         * exponent form below 1e-4 and from 1e+06. */
        float f = (float)k->u.f;
        int prec = 1, exp;
        char e[32];

        if (isnan(f)) {
            *out = strdup(".nan");
            break;
        }
        if (isinf(f)) {
            *out = strdup(f > 0 ? ".inf" : "-.inf");
            break;
        }
        for (; prec < 9; prec++) {
            snprintf(e, sizeof(e), "%.*e", prec - 1, (double)f);
            if ((float)strtod(e, NULL) == f)
                break;
        }
        snprintf(e, sizeof(e), "%.*e", prec - 1, (double)f);
        exp = f == 0 ? 0 : atoi(strchr(e, 'e') + 1);
        if (exp < -4 || exp >= 6)
            snprintf(buf, sizeof(buf), "%s", e);
        else
            snprintf(buf, sizeof(buf), "%.*f", prec - 1 - exp > 0 ? prec - 1 - exp : 0,
                     (double)f);
        *out = strdup(buf);
        break;
    }
    default:
        return perr(p, EBB_EPARSE, k->line, "unsupported map key of type %s",
                    ebb_val_type_name(k->type));
    }
    if (*out == NULL)
        return perr(p, EBB_ENOMEM, k->line, "out of memory");
    return 0;
}

struct entry {
    char *key;
    int key_line;
    bool merge;
    bool moved;                 /* key and value now belong to the map */
    struct ebb_val *v;
};

static void entries_free(struct entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (e[i].moved)
            continue;
        free(e[i].key);
        ebb_val_free(e[i].v);
    }
    free(e);
}

static int cmp_entry_idx(const void *a, const void *b, void *arg)
{
    const struct entry *e = arg;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(e[i].key, e[j].key);

    return c ? c : (i < j ? -1 : i > j);
}

static int map_append(struct ebb_val *m, size_t *cap, char *key, int key_line,
                      struct ebb_val *v)
{
    if (m->u.map.n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        char **nk = realloc(m->u.map.keys, ncap * sizeof(*nk));
        if (nk == NULL)
            return EBB_ENOMEM;
        m->u.map.keys = nk;
        int *nl = realloc(m->u.map.key_lines, ncap * sizeof(*nl));
        if (nl == NULL)
            return EBB_ENOMEM;
        m->u.map.key_lines = nl;
        struct ebb_val **nv = realloc(m->u.map.vals, ncap * sizeof(*nv));
        if (nv == NULL)
            return EBB_ENOMEM;
        m->u.map.vals = nv;
        *cap = ncap;
    }
    m->u.map.keys[m->u.map.n] = key;
    m->u.map.key_lines[m->u.map.n] = key_line;
    m->u.map.vals[m->u.map.n] = v;
    m->u.map.n++;
    return 0;
}

static bool map_has(const struct ebb_val *m, const char *key)
{
    for (size_t i = 0; i < m->u.map.n; i++)
        if (strcmp(m->u.map.keys[i], key) == 0)
            return true;
    return false;
}

static bool sorted_has(const struct entry *e, const size_t *idx, size_t n, const char *key)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(e[idx[mid]].key, key);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

static const char *a_type_name(int type)
{
    return type == EBB_VAL_INT ? "an integer" : type == EBB_VAL_NULL ? "null"
         : type == EBB_VAL_BOOL ? "a boolean" : type == EBB_VAL_FLOAT ? "a float"
         : type == EBB_VAL_STRING ? "a string" : type == EBB_VAL_SEQ ? "a list" : "a map";
}

/* Merge sources of one "<<" value, earliest first (earlier maps win). */
static int merge_sources(struct parser *p, struct entry *e, struct ebb_val ***src, size_t *n)
{
    struct ebb_val *v = e->v;

    if (v->type == EBB_VAL_MAP) {
        *src = &e->v;
        *n = 1;
        return 0;
    }
    if (v->type == EBB_VAL_SEQ) {
        for (size_t i = 0; i < v->u.seq.n; i++)
            if (v->u.seq.items[i]->type != EBB_VAL_MAP)
                return perr(p, EBB_EPARSE, v->u.seq.items[i]->line,
                            "map merge requires a map or a list of maps, got a list holding %s",
                            a_type_name(v->u.seq.items[i]->type));
        *src = v->u.seq.items;
        *n = v->u.seq.n;
        return 0;
    }
    return perr(p, EBB_EPARSE, e->key_line, "map merge requires a map or a list of maps, got %s",
                a_type_name(v->type));
}

/* Lay out the collected entries: explicit keys in order, each "<<" replaced
 * by the keys it brings that no explicit key and no earlier merge set. */
static int finish_map(struct parser *p, struct ebb_val *m, struct entry *e, size_t n)
{
    size_t *idx = NULL, nexp = 0, cap = 0;
    int rc = 0;

    if ((idx = malloc((n ? n : 1) * sizeof(*idx))) == NULL)
        return perr(p, EBB_ENOMEM, m->line, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (!e[i].merge)
            idx[nexp++] = i;
    qsort_r(idx, nexp, sizeof(*idx), cmp_entry_idx, e);
    for (size_t i = 1; i < nexp; i++) {
        const struct entry *a = &e[idx[i - 1]], *b = &e[idx[i]];
        if (strcmp(a->key, b->key) == 0) {
            size_t old = path_push_key(p, b->key);
            rc = perr(p, EBB_EPARSE, b->key_line, "key \"%s\" is defined twice (lines %d and %d)",
                      b->key, a->key_line, b->key_line);
            path_pop(p, old);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct ebb_val **src = NULL;
        size_t nsrc = 0;

        if (!e[i].merge) {
            if (map_append(m, &cap, e[i].key, e[i].key_line, e[i].v) < 0) {
                rc = perr(p, EBB_ENOMEM, m->line, "out of memory");
                goto out;
            }
            e[i].moved = true;   /* the key stays readable for the lookups below */
            continue;
        }
        if ((rc = merge_sources(p, &e[i], &src, &nsrc)) < 0)
            goto out;
        for (size_t s = 0; s < nsrc; s++) {
            struct ebb_val *sm = src[s];
            for (size_t k = 0; k < sm->u.map.n; k++) {
                const char *key = sm->u.map.keys[k];
                if (sorted_has(e, idx, nexp, key) || map_has(m, key))
                    continue;
                if (map_append(m, &cap, sm->u.map.keys[k], sm->u.map.key_lines[k],
                               sm->u.map.vals[k]) < 0) {
                    rc = perr(p, EBB_ENOMEM, m->line, "out of memory");
                    goto out;
                }
                sm->u.map.keys[k] = NULL;
                sm->u.map.vals[k] = NULL;
            }
        }
    }
out:
    free(idx);
    return rc;
}

static int build_map(struct parser *p, struct ebb_val *m)
{
    struct entry *e = NULL;
    size_t n = 0, cap = 0;
    int rc;

    for (;;) {
        yaml_event_t ev;
        struct ebb_val *k = NULL, *v = NULL;
        struct entry cur = {0};
        size_t old;

        if ((rc = next_event(p, &ev)) < 0)
            goto fail;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        cur.key_line = line_of(&ev.start_mark);
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
            rc = perr(p, EBB_EPARSE, cur.key_line, "unsupported map key of type %s",
                      ev.type == YAML_MAPPING_START_EVENT ? "map" : "list");
            yaml_event_delete(&ev);
            goto fail;
        }
        /* A plain "<<" (or one tagged !!merge) is a merge key; quoted is not. */
        if (ev.type == YAML_SCALAR_EVENT && ev.data.scalar.length == 2 &&
            memcmp(ev.data.scalar.value, "<<", 2) == 0 &&
            ((ev.data.scalar.tag == NULL && ev.data.scalar.plain_implicit) ||
             (ev.data.scalar.tag != NULL &&
              strcmp((const char *)ev.data.scalar.tag, YAML_TAG_PREFIX "merge") == 0)))
            cur.merge = true;
        rc = parse_node(p, &ev, &k);
        yaml_event_delete(&ev);
        if (rc < 0)
            goto fail;
        rc = key_text(p, k, &cur.key);
        ebb_val_free(k);
        if (rc < 0)
            goto fail;
        if ((rc = next_event(p, &ev)) < 0) {
            free(cur.key);
            goto fail;
        }
        old = path_push_key(p, cur.key);
        rc = parse_node(p, &ev, &v);
        yaml_event_delete(&ev);
        path_pop(p, old);
        if (rc < 0) {
            free(cur.key);
            goto fail;
        }
        cur.v = v;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct entry *ne = realloc(e, ncap * sizeof(*ne));
            if (ne == NULL) {
                free(cur.key);
                ebb_val_free(cur.v);
                rc = perr(p, EBB_ENOMEM, m->line, "out of memory");
                goto fail;
            }
            e = ne;
            cap = ncap;
        }
        e[n++] = cur;
    }
    rc = finish_map(p, m, e, n);
fail:
    entries_free(e, n);
    return rc;
}

static int parse_node(struct parser *p, yaml_event_t *ev, struct ebb_val **out)
{
    const char *anchor = NULL;
    struct ebb_val *v = NULL;
    int rc = 0;

    *out = NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        anchor = (const char *)ev->data.scalar.anchor;
        if ((rc = build_scalar(p, ev, &v)) < 0)
            return rc;
        break;
    case YAML_ALIAS_EVENT:
        return build_alias(p, ev, out);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool is_map = ev->type == YAML_MAPPING_START_EVENT;
        anchor = (const char *)(is_map ? ev->data.mapping_start.anchor
                                       : ev->data.sequence_start.anchor);
        if (p->depth >= MAX_DEPTH)
            return perr(p, EBB_EPARSE, line_of(&ev->start_mark),
                        "document nested too deeply (more than %d levels)", MAX_DEPTH);
        v = val_alloc(is_map ? EBB_VAL_MAP : EBB_VAL_SEQ, line_of(&ev->start_mark),
                      col_of(&ev->start_mark));
        if (v == NULL)
            return perr(p, EBB_ENOMEM, line_of(&ev->start_mark), "out of memory");
        p->depth++;
        rc = is_map ? build_map(p, v) : build_seq(p, v);
        p->depth--;
        if (rc < 0) {
            ebb_val_free(v);
            return rc;
        }
        break;
    }
    default:
        return perr(p, EBB_EPARSE, line_of(&ev->start_mark), "unexpected YAML event %d",
                    (int)ev->type);
    }
    if (anchor != NULL && (rc = register_anchor(p, anchor, v)) < 0) {
        ebb_val_free(v);
        return rc;
    }
    *out = v;
    return 0;
}

static void parser_reset_doc(struct parser *p)
{
    for (size_t i = 0; i < p->nanchors; i++) {
        free(p->anchors[i].name);
        ebb_val_free(p->anchors[i].v);
    }
    p->nanchors = 0;
    p->alias_budget = MAX_ALIAS_NODES;
    p->depth = 0;
    p->pathlen = 0;
    p->path[0] = '\0';
}

/* One document after its DOCUMENT-START event, through DOCUMENT-END. */
static int parse_document(struct parser *p, struct ebb_val **out)
{
    yaml_event_t ev;
    struct ebb_val *root = NULL;
    int rc;

    parser_reset_doc(p);
    if ((rc = next_event(p, &ev)) < 0)
        return rc;
    rc = parse_node(p, &ev, &root);
    yaml_event_delete(&ev);
    if (rc < 0)
        return rc;
    if ((rc = next_event(p, &ev)) < 0) {
        ebb_val_free(root);
        return rc;
    }
    yaml_event_delete(&ev);   /* DOCUMENT-END */
    *out = root;
    return 0;
}

/* Up to `max` documents; *vals grows as they are parsed. */
static int parse_stream(struct parser *p, size_t max, struct ebb_val ***vals, size_t *n)
{
    size_t cap = 0;
    yaml_event_t ev;
    int rc;

    *vals = NULL;
    *n = 0;
    if ((rc = next_event(p, &ev)) < 0)   /* STREAM-START */
        return rc;
    yaml_event_delete(&ev);
    while (*n < max) {
        struct ebb_val *doc;

        if ((rc = next_event(p, &ev)) < 0)
            return rc;
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        yaml_event_delete(&ev);       /* DOCUMENT-START */
        if ((rc = parse_document(p, &doc)) < 0)
            return rc;
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            struct ebb_val **nv = realloc(*vals, ncap * sizeof(*nv));
            if (nv == NULL) {
                ebb_val_free(doc);
                return perr(p, EBB_ENOMEM, 0, "out of memory");
            }
            *vals = nv;
            cap = ncap;
        }
        (*vals)[(*n)++] = doc;
    }
    return 0;
}

static int run(const char *buf, size_t len, const char *file, size_t max,
               struct ebb_val ***vals, size_t *n, struct ebb_error *err)
{
    struct parser p;
    int rc;

    memset(&p, 0, sizeof(p));
    p.file = file;
    p.buf = buf;
    p.len = len;
    p.err = err;
    if (err != NULL)
        ebb_error_clear(err);
    if (!yaml_parser_initialize(&p.yp))
        return ebb_error_set(err, EBB_ENOMEM, file, 0, NULL, "out of memory");
    yaml_parser_set_input_string(&p.yp, (const unsigned char *)buf, len);
    rc = parse_stream(&p, max, vals, n);
    parser_reset_doc(&p);
    free(p.anchors);
    yaml_parser_delete(&p.yp);
    if (rc < 0) {
        for (size_t i = 0; i < *n; i++)
            ebb_val_free((*vals)[i]);
        free(*vals);
        *vals = NULL;
        *n = 0;
    }
    return rc;
}

int ebb_val_parse(const char *buf, size_t len, const char *file, struct ebb_val **out,
                  struct ebb_error *err)
{
    struct ebb_val **vals;
    size_t n;
    int rc;

    if (buf == NULL || out == NULL)
        return EBB_EINVAL;
    if ((rc = run(buf, len, file, 1, &vals, &n, err)) < 0)
        return rc;
    if (n == 0) {
        free(vals);
        if ((*out = val_alloc(EBB_VAL_NULL, 1, 1)) == NULL)
            return ebb_error_set(err, EBB_ENOMEM, file, 0, NULL, "out of memory");
        return 0;
    }
    *out = vals[0];
    free(vals);
    return 0;
}

int ebb_val_parse_all(const char *buf, size_t len, const char *file, struct ebb_val ***out,
                      size_t *n, struct ebb_error *err)
{
    if (buf == NULL || out == NULL || n == NULL)
        return EBB_EINVAL;
    return run(buf, len, file, SIZE_MAX, out, n, err);
}

int ebb_val_load(const char *path, struct ebb_val **out, struct ebb_error *err)
{
    char *buf;
    size_t len;
    int rc;

    if (path == NULL || out == NULL)
        return EBB_EINVAL;
    if ((rc = ebb_file_read(path, EBB_MAX_YAML, &buf, &len, err)) != 0)
        return rc;
    rc = ebb_val_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

/* ---- lifetime, lookups ------------------------------------------------------ */

void ebb_val_free(struct ebb_val *v)
{
    if (v == NULL)
        return;
    switch (v->type) {
    case EBB_VAL_STRING:
        free(v->u.str.s);
        break;
    case EBB_VAL_SEQ:
        for (size_t i = 0; i < v->u.seq.n; i++)
            ebb_val_free(v->u.seq.items[i]);
        free(v->u.seq.items);
        break;
    case EBB_VAL_MAP:
        for (size_t i = 0; i < v->u.map.n; i++) {
            free(v->u.map.keys[i]);
            ebb_val_free(v->u.map.vals[i]);
        }
        free(v->u.map.keys);
        free(v->u.map.key_lines);
        free(v->u.map.vals);
        break;
    default:
        break;
    }
    free(v);
}

static ssize_t map_find(const struct ebb_val *v, const char *key, size_t len)
{
    if (v == NULL || v->type != EBB_VAL_MAP)
        return -1;
    for (size_t i = 0; i < v->u.map.n; i++)
        if (strncmp(v->u.map.keys[i], key, len) == 0 && v->u.map.keys[i][len] == '\0')
            return (ssize_t)i;
    return -1;
}

struct ebb_val *ebb_val_get(const struct ebb_val *v, const char *key)
{
    ssize_t i;

    if (key == NULL || (i = map_find(v, key, strlen(key))) < 0)
        return NULL;
    return v->u.map.vals[i];
}

int ebb_val_key_line(const struct ebb_val *v, const char *key)
{
    ssize_t i;

    if (key == NULL || (i = map_find(v, key, strlen(key))) < 0)
        return 0;
    return v->u.map.key_lines[i];
}

/* Path walk. `best` remembers the node reached at the furthest point of the
 * path, for ebb_val_line_for. A plain segment that names no key is retried
 * with the following ".x" parts joined on, so "thresholds.nvidia.com/gpu"
 * finds the key "nvidia.com/gpu" even unquoted. */
struct walk {
    const char *start;
    const struct ebb_val *best;
    size_t best_pos;
};

static const struct ebb_val *walk(struct walk *w, const struct ebb_val *v, const char *s)
{
    size_t pos = (size_t)(s - w->start);

    if (pos >= w->best_pos || w->best == NULL) {
        w->best = v;
        w->best_pos = pos;
    }
    if (*s == '\0')
        return v;
    if (*s == '[') {
        if (is_digit(s[1])) {
            char *end;
            unsigned long long i = strtoull(s + 1, &end, 10);
            if (*end != ']' || v->type != EBB_VAL_SEQ || i >= v->u.seq.n)
                return NULL;
            return walk(w, v->u.seq.items[i], end + 1);
        }
        if (s[1] == '"' || s[1] == '\'') {
            char q = s[1], key[256];
            const char *c = s + 2;
            size_t n = 0;
            ssize_t i;

            for (; *c && *c != q; c++) {
                if (*c == '\\' && c[1] != '\0')
                    c++;
                if (n + 1 < sizeof(key))
                    key[n++] = *c;
            }
            key[n] = '\0';
            if (*c != q || c[1] != ']' || (i = map_find(v, key, n)) < 0)
                return NULL;
            return walk(w, v->u.map.vals[i], c + 2);
        }
        return NULL;
    }
    if (*s == '.')
        s++;
    for (const char *e = s;;) {
        ssize_t i;
        while (*e && *e != '.' && *e != '[')
            e++;
        if (e > s && (i = map_find(v, s, (size_t)(e - s))) >= 0) {
            const struct ebb_val *r = walk(w, v->u.map.vals[i], e);
            if (r != NULL)
                return r;
        }
        if (*e != '.')
            return NULL;
        e++;
    }
}

const struct ebb_val *ebb_val_at(const struct ebb_val *root, const char *path)
{
    struct walk w = {path, NULL, 0};

    if (root == NULL || path == NULL)
        return NULL;
    return walk(&w, root, path);
}

int ebb_val_line_for(const struct ebb_val *root, const char *path)
{
    struct walk w = {path, NULL, 0};
    const struct ebb_val *v;

    if (root == NULL || path == NULL)
        return 0;
    if ((v = walk(&w, root, path)) != NULL)
        return v->line;
    return w.best ? w.best->line : 0;
}

const char *ebb_val_type_name(int type)
{
    switch (type) {
    case EBB_VAL_NULL: return "null";
    case EBB_VAL_BOOL: return "boolean";
    case EBB_VAL_INT: return "integer";
    case EBB_VAL_FLOAT: return "float";
    case EBB_VAL_STRING: return "string";
    case EBB_VAL_SEQ: return "list";
    case EBB_VAL_MAP: return "map";
    default: return "unknown";
    }
}

/* ---- constructors ----------------------------------------------------------- */

struct ebb_val *ebb_val_new(int type, int line)
{
    struct ebb_val *v;

    if (type < EBB_VAL_NULL || type > EBB_VAL_MAP)
        return NULL;
    if ((v = val_alloc(type, line, 0)) == NULL)
        return NULL;
    if (type == EBB_VAL_STRING && (v->u.str.s = calloc(1, 1)) == NULL) {
        free(v);
        return NULL;
    }
    return v;
}

struct ebb_val *ebb_val_new_string(const char *s, int line)
{
    struct ebb_val *v;

    if (s == NULL || (v = val_alloc(EBB_VAL_STRING, line, 0)) == NULL)
        return NULL;
    v->u.str.len = strlen(s);
    if ((v->u.str.s = memdup0(s, v->u.str.len)) == NULL) {
        free(v);
        return NULL;
    }
    return v;
}

/* Both take `v` whatever happens: it is freed when it cannot be stored. */
int ebb_val_map_put(struct ebb_val *map, const char *key, struct ebb_val *v)
{
    ssize_t i;
    size_t n;
    char *k;

    if (map == NULL || map->type != EBB_VAL_MAP || key == NULL || v == NULL) {
        ebb_val_free(v);
        return EBB_EINVAL;
    }
    if ((i = map_find(map, key, strlen(key))) >= 0) {
        ebb_val_free(map->u.map.vals[i]);
        map->u.map.vals[i] = v;
        map->u.map.key_lines[i] = v->line;
        return 0;
    }
    n = map->u.map.n;
    char **nk = realloc(map->u.map.keys, (n + 1) * sizeof(*nk));
    if (nk != NULL)
        map->u.map.keys = nk;
    int *nl = realloc(map->u.map.key_lines, (n + 1) * sizeof(*nl));
    if (nl != NULL)
        map->u.map.key_lines = nl;
    struct ebb_val **nv = realloc(map->u.map.vals, (n + 1) * sizeof(*nv));
    if (nv != NULL)
        map->u.map.vals = nv;
    if (nk == NULL || nl == NULL || nv == NULL || (k = strdup(key)) == NULL) {
        ebb_val_free(v);
        return EBB_ENOMEM;
    }
    map->u.map.keys[n] = k;
    map->u.map.key_lines[n] = v->line;
    map->u.map.vals[n] = v;
    map->u.map.n = n + 1;
    return 0;
}

int ebb_val_seq_push(struct ebb_val *seq, struct ebb_val *v)
{
    struct ebb_val **ni;

    if (seq == NULL || seq->type != EBB_VAL_SEQ || v == NULL) {
        ebb_val_free(v);
        return EBB_EINVAL;
    }
    if ((ni = realloc(seq->u.seq.items, (seq->u.seq.n + 1) * sizeof(*ni))) == NULL) {
        ebb_val_free(v);
        return EBB_ENOMEM;
    }
    seq->u.seq.items = ni;
    ni[seq->u.seq.n++] = v;
    return 0;
}

/* ---- cJSON ------------------------------------------------------------------ */

/* Integers a double holds exactly are numbers; larger ones are raw number
 * text so no digit is lost on the way to decode.c. */
#define EBB_EXACT_DOUBLE_INT (INT64_C(1) << 53)

struct cJSON *ebb_val_to_cjson(const struct ebb_val *v)
{
    cJSON *j = NULL;

    if (v == NULL)
        return NULL;
    switch (v->type) {
    case EBB_VAL_NULL:
        return cJSON_CreateNull();
    case EBB_VAL_BOOL:
        return cJSON_CreateBool(v->u.b);
    case EBB_VAL_INT:
        if (v->u.i >= -EBB_EXACT_DOUBLE_INT && v->u.i <= EBB_EXACT_DOUBLE_INT)
            return cJSON_CreateNumber((double)v->u.i);
        else {
            char buf[32];
            snprintf(buf, sizeof(buf), "%lld", (long long)v->u.i);
            return cJSON_CreateRaw(buf);
        }
    case EBB_VAL_FLOAT:
        return cJSON_CreateNumber(v->u.f);
    case EBB_VAL_STRING:
        return cJSON_CreateString(v->u.str.s);
    case EBB_VAL_SEQ:
        if ((j = cJSON_CreateArray()) == NULL)
            return NULL;
        for (size_t i = 0; i < v->u.seq.n; i++) {
            cJSON *c = ebb_val_to_cjson(v->u.seq.items[i]);
            if (c == NULL || !cJSON_AddItemToArray(j, c)) {
                cJSON_Delete(c);
                cJSON_Delete(j);
                return NULL;
            }
        }
        return j;
    case EBB_VAL_MAP:
        if ((j = cJSON_CreateObject()) == NULL)
            return NULL;
        for (size_t i = 0; i < v->u.map.n; i++) {
            cJSON *c = ebb_val_to_cjson(v->u.map.vals[i]);
            if (c == NULL || !cJSON_AddItemToObject(j, v->u.map.keys[i], c)) {
                cJSON_Delete(c);
                cJSON_Delete(j);
                return NULL;
            }
        }
        return j;
    default:
        return NULL;
    }
}
