/* Label selectors: the string form's lexer and parser, requirement matching
 * and printing (see ebb/selector.h).
 *
 * The parser follows the grammar of labels.Parse token for token, so the
 * same strings are accepted and refused: "in"/"notin" are keywords only
 * where an operator is expected, "x=" means the empty value, "x in ()" the
 * set {""}, and every key and value is validated as the API validates label
 * keys and values. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/selector.h"
#include "base/vec.h"

/* ---- validation (label keys and values) -------------------------------- */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], the shape of a label value and
 * of the name part of a key. */
static bool is_label_token(const char *s, size_t n)
{
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

static bool is_dns_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* RFC 1123 subdomain, lowercase: labels [a-z0-9]([-a-z0-9]*[a-z0-9])?
 * joined by dots, 253 characters at most (no per-label limit). */
static bool is_dns_subdomain(const char *s, size_t n)
{
    size_t b = 0;

    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (i == b || !is_dns_lower_alnum(s[b]) || !is_dns_lower_alnum(s[i - 1]))
            return false;
        for (size_t j = b; j < i; j++)
            if (!is_dns_lower_alnum(s[j]) && s[j] != '-')
                return false;
        b = i + 1;
    }
    return true;
}

const char *ebb_label_key_problem(const char *s, size_t n)
{
    const char *slash, *name = s;
    size_t nlen = n;

    if (s == NULL || n == 0)
        return "name part must be non-empty";
    slash = memchr(s, '/', n);
    if (slash != NULL) {
        size_t plen = (size_t)(slash - s);
        if (memchr(slash + 1, '/', n - plen - 1) != NULL)
            return "a valid label key must be a name with an optional DNS subdomain prefix "
                   "and '/' (e.g. 'example.com/MyName')";
        if (plen == 0)
            return "prefix part must be non-empty";
        if (plen > 253)
            return "prefix part must be no more than 253 characters";
        if (!is_dns_subdomain(s, plen))
            return "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                   "alphanumeric characters, '-' or '.', and must start and end with an "
                   "alphanumeric character";
        name = slash + 1;
        nlen = n - plen - 1;
    }
    if (nlen == 0)
        return "name part must be non-empty";
    if (nlen > 63)
        return "name part must be no more than 63 characters";
    if (!is_label_token(name, nlen))
        return "name part must consist of alphanumeric characters, '-', '_' or '.', and "
               "must start and end with an alphanumeric character";
    return NULL;
}

const char *ebb_label_value_problem(const char *s, size_t n)
{
    if (s == NULL)
        return NULL;
    if (n > 63)
        return "must be no more than 63 characters";
    if (n > 0 && !is_label_token(s, n))
        return "a valid label must be an empty string or consist of alphanumeric "
               "characters, '-', '_' or '.', and must start and end with an alphanumeric "
               "character";
    return NULL;
}

/* strconv.ParseInt(s, 10, 64) */
static bool parse_int64(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0, lim;

    if (s == NULL)
        return false;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i == n)
        return false;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        if (v > (lim - (uint64_t)(s[i] - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* ---- matching ---------------------------------------------------------- */

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const ebb_str *)a, y = (uintptr_t)*(const ebb_str *)b;
    return x < y ? -1 : x > y;
}

static bool req_has_value(const struct ebb_req *r, ebb_str v)
{
    if (ebb_str_len(v) == 0) {
        for (uint16_t i = 0; i < r->nvalues; i++)
            if (ebb_str_len(r->values[i]) == 0)
                return true;
        return false;
    }
    if (r->nvalues > 8)
        return bsearch(&v, r->values, r->nvalues, sizeof(*r->values), cmp_ptr) != NULL;
    for (uint16_t i = 0; i < r->nvalues; i++)
        if (r->values[i] == v)
            return true;
    return false;
}

bool ebb_req_matches(const struct ebb_req *r, const struct ebb_labels *l)
{
    ebb_str v = NULL;
    bool present;
    int64_t n;

    if (r == NULL)
        return false;
    present = ebb_labels_lookup(l, r->key, &v);
    switch (r->op) {
    case EBB_OP_IN:
        return present && req_has_value(r, v);
    case EBB_OP_NOT_IN:
        return !present || !req_has_value(r, v);
    case EBB_OP_EXISTS:
        return present;
    case EBB_OP_DOES_NOT_EXIST:
        return !present;
    case EBB_OP_GT:
    case EBB_OP_LT:
        if (!present || !parse_int64(v, ebb_str_len(v), &n))
            return false;
        return r->op == EBB_OP_GT ? n > r->num : n < r->num;
    default:
        return false;
    }
}

bool ebb_selector_matches(const struct ebb_selector *s, const struct ebb_labels *l)
{
    if (s == NULL)
        return true;
    if (s->flags & EBB_SEL_NOTHING)
        return false;
    for (uint16_t i = 0; i < s->nreqs; i++)
        if (!ebb_req_matches(&s->reqs[i], l))
            return false;
    return true;
}

bool ebb_selector_is_empty(const struct ebb_selector *s)
{
    return s == NULL || (s->nreqs == 0 && !(s->flags & EBB_SEL_NOTHING));
}

/* ---- construction ------------------------------------------------------ */

static int req_cmp(const void *a, const void *b)
{
    return ebb_str_cmp(((const struct ebb_req *)a)->key, ((const struct ebb_req *)b)->key);
}

/* Stable, so requirements on the same key keep the order they came in. */
static int sort_reqs(struct ebb_req *reqs, uint16_t n)
{
    return ebb__sort_stable(reqs, n, sizeof(*reqs), req_cmp);
}

/* Sort values by pointer (what matching searches) and drop repeats. */
static void normalize_values(struct ebb_req *r)
{
    uint16_t k = 0;

    if (r->values == NULL || r->nvalues < 2)
        return;
    qsort(r->values, r->nvalues, sizeof(*r->values), cmp_ptr);
    for (uint16_t i = 0; i < r->nvalues; i++) {
        if (k > 0 && r->values[k - 1] == r->values[i])
            ebb_str_release(r->values[i]);
        else
            r->values[k++] = r->values[i];
    }
    r->nvalues = k;
}

int ebb_selector_from_reqs(struct ebb_req *reqs, uint16_t n, struct ebb_selector **out)
{
    struct ebb_selector *s;

    if (out == NULL || (reqs == NULL && n > 0))
        return EBB_EINVAL;
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return EBB_ENOMEM;
    for (uint16_t i = 0; i < n; i++)
        normalize_values(&reqs[i]);
    if (sort_reqs(reqs, n) != 0) {
        free(s);
        return EBB_ENOMEM;
    }
    if (n == 0) {
        free(reqs);
        reqs = NULL;
    }
    s->reqs = reqs;
    s->nreqs = n;
    *out = s;
    return 0;
}

size_t ebb_selector_bytes(const struct ebb_selector *s)
{
    size_t n;

    if (s == NULL)
        return 0;
    n = sizeof(*s) + (size_t)s->nreqs * sizeof(*s->reqs);
    for (uint16_t i = 0; i < s->nreqs; i++) {
        const struct ebb_req *r = &s->reqs[i];
        n += ebb_str_len(r->key) + 1 + (size_t)r->nvalues * sizeof(*r->values);
        for (uint16_t j = 0; j < r->nvalues; j++)
            n += ebb_str_len(r->values[j]) + 1;
    }
    return n;
}

struct ebb_selector *ebb_selector_nothing(void)
{
    struct ebb_selector *s = calloc(1, sizeof(*s));

    if (s != NULL)
        s->flags = EBB_SEL_NOTHING;
    return s;
}

struct ebb_selector *ebb_selector_everything(void)
{
    return calloc(1, sizeof(struct ebb_selector));
}

struct ebb_selector *ebb_selector_dup(const struct ebb_selector *s)
{
    struct ebb_selector *d;

    if (s == NULL || (d = calloc(1, sizeof(*d))) == NULL)
        return NULL;
    d->flags = s->flags;
    if (s->nreqs > 0 && (d->reqs = calloc(s->nreqs, sizeof(*d->reqs))) == NULL)
        goto fail;
    for (uint16_t i = 0; i < s->nreqs; i++) {
        const struct ebb_req *r = &s->reqs[i];
        struct ebb_req *c = &d->reqs[i];

        d->nreqs = (uint16_t)(i + 1);
        if (r->nvalues > 0 && (c->values = calloc(r->nvalues, sizeof(*c->values))) == NULL)
            goto fail;
        c->key = ebb_str_ref(r->key);
        c->op = r->op;
        c->num = r->num;
        c->nvalues = r->nvalues;
        for (uint16_t j = 0; j < r->nvalues; j++)
            c->values[j] = ebb_str_ref(r->values[j]);
    }
    return d;
fail:
    ebb_selector_free(d);
    return NULL;
}

/* ---- the string form: lexer ---------------------------------------------- */

enum tok {
    T_EOS,
    T_CLOSE,
    T_COMMA,
    T_NOT,
    T_DEQ,
    T_EQ,
    T_GT,
    T_ID,
    T_IN,
    T_LT,
    T_NEQ,
    T_NOTIN,
    T_OPEN,
};

struct token {
    int tok;
    size_t at, len;   /* the literal: input[at .. at+len) */
};

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
    return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static struct token lex(const char *s, size_t *pos)
{
    struct token t = { T_EOS, 0, 0 };
    size_t p = *pos, b;

    while (s[p] != '\0' && is_space(s[p]))
        p++;
    t.at = p;
    if (s[p] == '\0') {
        *pos = p;
        return t;
    }
    if (is_special(s[p])) {
        /* Longest operator: "!=" and "==" are the only two-character ones. */
        t.len = (s[p] == '!' || s[p] == '=') && s[p + 1] == '=' ? 2 : 1;
        switch (s[p]) {
        case '=': t.tok = t.len == 2 ? T_DEQ : T_EQ; break;
        case '!': t.tok = t.len == 2 ? T_NEQ : T_NOT; break;
        case '(': t.tok = T_OPEN; break;
        case ')': t.tok = T_CLOSE; break;
        case ',': t.tok = T_COMMA; break;
        case '>': t.tok = T_GT; break;
        default: t.tok = T_LT; break;
        }
        *pos = p + t.len;
        return t;
    }
    for (b = p; s[p] != '\0' && !is_special(s[p]) && !is_space(s[p]); p++)
        ;
    t.len = p - b;
    t.tok = T_ID;
    if (t.len == 2 && memcmp(s + b, "in", 2) == 0)
        t.tok = T_IN;
    else if (t.len == 5 && memcmp(s + b, "notin", 5) == 0)
        t.tok = T_NOTIN;
    *pos = p;
    return t;
}

/* ---- the string form: parser --------------------------------------------- */

enum ctx { KEY_AND_OPERATOR, VALUES };

enum sel_op { OP_IN, OP_NOT_IN, OP_EQ, OP_DEQ, OP_NEQ, OP_GT, OP_LT, OP_EXISTS, OP_DNE };

struct slice {
    const char *s;
    size_t n;
};

struct parser {
    const char *in;
    struct token *toks;
    size_t ntoks, cur;
    struct ebb_error *err;
    /* the value set of the requirement being parsed */
    struct slice *vals;
    size_t nvals, capvals;
    /* requirements parsed so far */
    struct ebb_req *reqs;
    size_t nreqs, capreqs;
};

static int perr(struct parser *p, const struct token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The message says what was found and expected, and where (1-based). */
static int perr(struct parser *p, const struct token *t, const char *fmt, ...)
{
    va_list ap;
    int k;

    if (p->err == NULL)
        return EBB_EPARSE;
    p->err->code = EBB_EPARSE;
    va_start(ap, fmt);
    k = vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
    va_end(ap);
    if (k >= 0 && (size_t)k < sizeof(p->err->msg))
        snprintf(p->err->msg + k, sizeof(p->err->msg) - (size_t)k, " (at character %zu)",
                 t->at + 1);
    return EBB_EPARSE;
}

/* `in`/`notin` are plain identifiers where a key or value is expected. */
static int kind(const struct token *t, enum ctx c)
{
    if (c == VALUES && (t->tok == T_IN || t->tok == T_NOTIN))
        return T_ID;
    return t->tok;
}

static const struct token *peek(struct parser *p)
{
    return &p->toks[p->cur];
}

static const struct token *next(struct parser *p)
{
    const struct token *t = &p->toks[p->cur];

    if (p->cur + 1 < p->ntoks)   /* the end token repeats forever */
        p->cur++;
    return t;
}

#define LIT(p, t) (int)(t)->len, (p)->in + (t)->at

/* Repeats are dropped once the values are sorted (add_requirement). */
static int add_value(struct parser *p, const char *s, size_t n)
{
    if (p->nvals == p->capvals) {
        size_t cap = p->capvals ? p->capvals * 2 : 4;
        struct slice *v = realloc(p->vals, cap * sizeof(*v));
        if (v == NULL)
            return EBB_ENOMEM;
        p->vals = v;
        p->capvals = cap;
    }
    p->vals[p->nvals].s = s;
    p->vals[p->nvals].n = n;
    p->nvals++;
    return 0;
}

static int parse_key_and_infer_op(struct parser *p, const struct token **key, int *op)
{
    const struct token *t = next(p);
    const char *why;
    int k;

    *op = -1;
    if (kind(t, VALUES) == T_NOT) {
        *op = OP_DNE;
        t = next(p);
    }
    if (kind(t, VALUES) != T_ID)
        return perr(p, t, "unable to parse requirement: found '%.*s', expected: identifier",
                    LIT(p, t));
    if ((why = ebb_label_key_problem(p->in + t->at, t->len)) != NULL)
        return perr(p, t, "unable to parse requirement: invalid label key \"%.*s\": %s",
                    LIT(p, t), why);
    *key = t;
    k = kind(peek(p), VALUES);
    if ((k == T_EOS || k == T_COMMA) && *op != OP_DNE)
        *op = OP_EXISTS;
    return 0;
}

static int parse_operator(struct parser *p, int *op)
{
    const struct token *t = next(p);

    switch (kind(t, KEY_AND_OPERATOR)) {
    case T_IN: *op = OP_IN; return 0;
    case T_NOTIN: *op = OP_NOT_IN; return 0;
    case T_EQ: *op = OP_EQ; return 0;
    case T_DEQ: *op = OP_DEQ; return 0;
    case T_NEQ: *op = OP_NEQ; return 0;
    case T_GT: *op = OP_GT; return 0;
    case T_LT: *op = OP_LT; return 0;
    default:
        return perr(p, t, "unable to parse requirement: found '%.*s', expected: "
                    "in, notin, =, ==, !=, gt, lt", LIT(p, t));
    }
}

/* A comma-separated list of possibly empty values, after "(" and before ")". */
static int parse_identifiers_list(struct parser *p)
{
    int rc;

    for (;;) {
        const struct token *t = next(p), *t2;

        switch (kind(t, VALUES)) {
        case T_ID:
            if ((rc = add_value(p, p->in + t->at, t->len)) != 0)
                return rc;
            t2 = peek(p);
            switch (kind(t2, VALUES)) {
            case T_COMMA:
                continue;
            case T_CLOSE:
                return 0;
            default:
                return perr(p, t2, "unable to parse requirement: found '%.*s', expected: "
                            "',' or ')'", LIT(p, t2));
            }
        case T_COMMA:
            /* An empty element: "(,a)", "(a,)", "(a,,b)". */
            if (p->nvals == 0 && (rc = add_value(p, "", 0)) != 0)
                return rc;
            t2 = peek(p);
            if (kind(t2, VALUES) == T_CLOSE)
                return add_value(p, "", 0);
            if (kind(t2, VALUES) == T_COMMA) {
                /* ",," swallows the second comma: "(a,,b)" is {"", a, b}
                 * but "(a,,)" is refused, as the API does. */
                next(p);
                if ((rc = add_value(p, "", 0)) != 0)
                    return rc;
            }
            break;
        default:
            return perr(p, t, "unable to parse requirement: found '%.*s', expected: "
                        "',', or identifier", LIT(p, t));
        }
    }
}

static int parse_values(struct parser *p)
{
    const struct token *t = next(p);
    int rc;

    if (kind(t, VALUES) != T_OPEN)
        return perr(p, t, "unable to parse requirement: found '%.*s' expected: '('", LIT(p, t));
    t = peek(p);
    switch (kind(t, VALUES)) {
    case T_ID:
    case T_COMMA:
        if ((rc = parse_identifiers_list(p)) != 0)
            return rc;
        t = next(p);
        if (kind(t, VALUES) != T_CLOSE)
            return perr(p, t, "unable to parse requirement: found '%.*s', expected: ')'",
                        LIT(p, t));
        return 0;
    case T_CLOSE:
        next(p);   /* "()" is the set {""} */
        return add_value(p, "", 0);
    default:
        return perr(p, t, "unable to parse requirement: found '%.*s', expected: ',', ')' "
                    "or identifier", LIT(p, t));
    }
}

static int parse_exact_value(struct parser *p)
{
    const struct token *t = peek(p);

    if (kind(t, VALUES) == T_EOS || kind(t, VALUES) == T_COMMA)
        return add_value(p, "", 0);   /* "x=" is the empty value */
    t = next(p);
    if (kind(t, VALUES) == T_ID)
        return add_value(p, p->in + t->at, t->len);
    return perr(p, t, "unable to parse requirement: found '%.*s', expected: identifier",
                LIT(p, t));
}

static int cmp_slice(const void *a, const void *b)
{
    const struct slice *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);

    return c != 0 ? c : (x->n > y->n) - (x->n < y->n);
}

/* Check the requirement as the API's constructor does and append it. */
static int add_requirement(struct parser *p, const struct token *key, int op)
{
    struct ebb_req r = { 0 };
    const char *why;
    int rc = EBB_ENOMEM;

    if (p->nvals > 1) {
        size_t k = 1;
        qsort(p->vals, p->nvals, sizeof(*p->vals), cmp_slice);
        for (size_t i = 1; i < p->nvals; i++)
            if (cmp_slice(&p->vals[k - 1], &p->vals[i]) != 0)
                p->vals[k++] = p->vals[i];
        p->nvals = k;
    }
    if ((op == OP_GT || op == OP_LT) &&
        (p->nvals != 1 || !parse_int64(p->vals[0].s, p->vals[0].n, &r.num)))
        return perr(p, key, "unable to parse requirement: for 'Gt', 'Lt' operators, the "
                    "value of \"%.*s\" must be an integer", LIT(p, key));
    for (size_t i = 0; i < p->nvals; i++)
        if ((why = ebb_label_value_problem(p->vals[i].s, p->vals[i].n)) != NULL)
            return perr(p, key, "unable to parse requirement: invalid label value \"%.*s\" "
                        "for key \"%.*s\": %s", (int)p->vals[i].n, p->vals[i].s, LIT(p, key),
                        why);
    if (p->nvals > UINT16_MAX || p->nreqs >= UINT16_MAX)
        return perr(p, key, "unable to parse requirement: too many values or requirements");

    switch (op) {
    case OP_IN: case OP_EQ: case OP_DEQ: r.op = EBB_OP_IN; break;
    case OP_NOT_IN: case OP_NEQ: r.op = EBB_OP_NOT_IN; break;
    case OP_GT: r.op = EBB_OP_GT; break;
    case OP_LT: r.op = EBB_OP_LT; break;
    case OP_EXISTS: r.op = EBB_OP_EXISTS; break;
    default: r.op = EBB_OP_DOES_NOT_EXIST; break;
    }
    if ((r.key = ebb_str_intern(p->in + key->at, key->len)) == NULL)
        goto fail;
    if (p->nvals > 0 && (r.values = calloc(p->nvals, sizeof(*r.values))) == NULL)
        goto fail;
    for (size_t i = 0; i < p->nvals; i++) {
        if ((r.values[i] = ebb_str_intern(p->vals[i].s, p->vals[i].n)) == NULL)
            goto fail;
        r.nvalues = (uint16_t)(i + 1);
    }
    normalize_values(&r);
    if (p->nreqs == p->capreqs) {
        size_t cap = p->capreqs ? p->capreqs * 2 : 4;
        struct ebb_req *v = realloc(p->reqs, cap * sizeof(*v));
        if (v == NULL)
            goto fail;
        p->reqs = v;
        p->capreqs = cap;
    }
    p->reqs[p->nreqs++] = r;
    return 0;
fail:
    ebb_req_free(&r);
    return rc;
}

static int parse_requirement(struct parser *p)
{
    const struct token *key = NULL;
    int op, rc;

    p->nvals = 0;
    if ((rc = parse_key_and_infer_op(p, &key, &op)) != 0)
        return rc;
    if (op == OP_EXISTS || op == OP_DNE)
        return add_requirement(p, key, op);
    if ((rc = parse_operator(p, &op)) != 0)
        return rc;
    if (op == OP_IN || op == OP_NOT_IN)
        rc = parse_values(p);
    else
        rc = parse_exact_value(p);
    if (rc != 0)
        return rc;
    return add_requirement(p, key, op);
}

static int parse_all(struct parser *p)
{
    int rc;

    for (;;) {
        const struct token *t = peek(p);

        switch (kind(t, VALUES)) {
        case T_ID:
        case T_NOT:
            if ((rc = parse_requirement(p)) != 0)
                return rc;
            t = next(p);
            switch (kind(t, VALUES)) {
            case T_EOS:
                return 0;
            case T_COMMA:
                t = peek(p);
                if (kind(t, VALUES) != T_ID && kind(t, VALUES) != T_NOT)
                    return perr(p, t, "found '%.*s', expected: identifier after ','",
                                LIT(p, t));
                break;
            default:
                return perr(p, t, "found '%.*s', expected: ',' or 'end of string'", LIT(p, t));
            }
            break;
        case T_EOS:
            return 0;
        default:
            return perr(p, t, "found '%.*s', expected: !, identifier, or 'end of string'",
                        LIT(p, t));
        }
    }
}

int ebb_selector_parse(const char *s, struct ebb_selector **out, struct ebb_error *err)
{
    struct parser p = { .in = s, .err = err };
    size_t pos = 0, cap = 0;
    int rc = EBB_ENOMEM;

    if (s == NULL || out == NULL)
        return EBB_EINVAL;
    for (;;) {
        struct token t = lex(s, &pos);
        if (p.ntoks == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct token *v = realloc(p.toks, ncap * sizeof(*v));
            if (v == NULL)
                goto fail;
            p.toks = v;
            cap = ncap;
        }
        p.toks[p.ntoks++] = t;
        if (t.tok == T_EOS)
            break;
    }
    if ((rc = parse_all(&p)) != 0)
        goto fail;
    if ((rc = ebb_selector_from_reqs(p.reqs, (uint16_t)p.nreqs, out)) != 0)
        goto fail;
    free(p.toks);
    free(p.vals);
    return 0;
fail:
    for (size_t i = 0; i < p.nreqs; i++)
        ebb_req_free(&p.reqs[i]);
    free(p.reqs);
    free(p.toks);
    free(p.vals);
    if (rc == EBB_ENOMEM && err != NULL) {
        err->code = rc;
        snprintf(err->msg, sizeof(err->msg), "out of memory parsing selector");
    }
    return rc;
}

/* ---- printing ---------------------------------------------------------- */

struct out {
    char *buf;
    size_t len, off;
};

static void put(struct out *o, const char *s)
{
    size_t n = strlen(s);

    if (o->off + 1 >= o->len)
        return;
    if (n > o->len - 1 - o->off)
        n = o->len - 1 - o->off;
    memcpy(o->buf + o->off, s, n);
    o->off += n;
    o->buf[o->off] = '\0';
}

static int cmp_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Values in text order (as the API prints them): a sorted copy, printed
 * until the buffer is full. Without memory for the copy, each round prints
 * the smallest value greater than the previous one, and rounds stop with
 * the buffer: a text of `len` bytes never costs more than len rounds. */
static void put_values(struct out *o, const struct ebb_req *r)
{
    const char *prev = NULL;
    const char **v = r->nvalues > 1 ? malloc(r->nvalues * sizeof(*v)) : NULL;

    if (v != NULL) {
        for (uint32_t i = 0; i < r->nvalues; i++)
            v[i] = r->values[i] ? r->values[i] : "";
        qsort(v, r->nvalues, sizeof(*v), cmp_text);
        for (uint32_t k = 0; k < r->nvalues && o->off + 1 < o->len; k++) {
            if (k > 0)
                put(o, ",");
            put(o, v[k]);
        }
        free(v);
        return;
    }
    for (uint32_t k = 0; k < r->nvalues && o->off + 1 < o->len; k++) {
        const char *best = NULL;
        for (uint32_t i = 0; i < r->nvalues; i++) {
            const char *x = r->values[i] ? r->values[i] : "";
            if ((prev == NULL || strcmp(x, prev) > 0) && (best == NULL || strcmp(x, best) < 0))
                best = x;
        }
        if (best == NULL)
            break;
        if (k > 0)
            put(o, ",");
        put(o, best);
        prev = best;
    }
}

void ebb_selector_format(const struct ebb_selector *s, char *buf, size_t len)
{
    struct out o = { buf, len, 0 };

    if (buf == NULL || len == 0)
        return;
    buf[0] = '\0';
    if (s == NULL || (s->flags & EBB_SEL_NOTHING))
        return;
    for (uint16_t i = 0; i < s->nreqs; i++) {
        const struct ebb_req *r = &s->reqs[i];
        const char *key = r->key ? r->key : "";

        if (i > 0)
            put(&o, ",");
        switch (r->op) {
        case EBB_OP_IN:
        case EBB_OP_NOT_IN:
            put(&o, key);
            /* One value prints as the equality form it most often came from. */
            if (r->nvalues == 1) {
                put(&o, r->op == EBB_OP_IN ? "=" : "!=");
                put_values(&o, r);
            } else {
                put(&o, r->op == EBB_OP_IN ? " in (" : " notin (");
                put_values(&o, r);
                put(&o, ")");
            }
            break;
        case EBB_OP_EXISTS:
            put(&o, key);
            break;
        case EBB_OP_DOES_NOT_EXIST:
            put(&o, "!");
            put(&o, key);
            break;
        case EBB_OP_GT:
        case EBB_OP_LT: {
            char num[24];
            put(&o, key);
            put(&o, r->op == EBB_OP_GT ? ">" : "<");
            if (r->nvalues == 1) {
                put_values(&o, r);
            } else {
                snprintf(num, sizeof(num), "%lld", (long long)r->num);
                put(&o, num);
            }
            break;
        }
        default:
            put(&o, key);
            put(&o, "?");
            break;
        }
    }
}

bool ebb_req_equal(const struct ebb_req *a, const struct ebb_req *b)
{
    if (a->key != b->key || a->op != b->op || a->nvalues != b->nvalues || a->num != b->num)
        return false;
    for (uint16_t i = 0; i < a->nvalues; i++)
        if (a->values[i] != b->values[i])
            return false;
    return true;
}
