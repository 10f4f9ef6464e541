/* Label selectors, node selector requirements, and the affinity terms made
 * of them: metav1.LabelSelector, the map selectors of Services and
 * ReplicationControllers, v1.NodeAffinity and pod (anti-)affinity terms.
 * Called by decode_pod.c (spec.affinity, topology spread constraints),
 * decode_kinds.c (PDBs, workloads) and, through ebb/decode.h, by the
 * configuration (a plugin's labelSelector, nodeAffinity args). */
#include <stdlib.h>
#include <string.h>

#include "ebb/selector.h"
#include "model/decode_int.h"

#define REQUIRED "requiredDuringSchedulingIgnoredDuringExecution"
#define PREFERRED "preferredDuringSchedulingIgnoredDuringExecution"

/* ---- requirements ---------------------------------------------------------- */

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

/* One {key, operator, values} requirement; ctx points to its REQ_* mode.
 * Label selectors know In, NotIn, Exists, DoesNotExist; node selector
 * requirements add Gt and Lt (one integer value); node field selectors are
 * metadata.name In/NotIn one value. The value counts are the ones the API
 * validates. */
static int req_decode(struct dec *d, const cJSON *e, void *slot, void *ctx)
{
    struct ebb_req *r = slot;
    int mode = *(const int *)ctx;
    const char *op;
    const cJSON *v;
    size_t nv, i;
    int rc, k = -1;
    static const char *valid[] = {
        "In, NotIn, Exists, DoesNotExist",
        "In, NotIn, Exists, DoesNotExist, Gt, Lt",
        "In, NotIn",
    };

    if ((rc = ebb__str_at(d, e, "key", &r->key)) != 0)
        return rc;
    if (r->key == NULL)
        return ebb__fail(d, EBB_ESCHEMA, "key", "required");
    if (mode == REQ_FIELD && strcmp(r->key, "metadata.name") != 0)
        return ebb__fail(d, EBB_ESCHEMA, "key", "\"%s\" is not a node field (only metadata.name)",
                         SHOWN(r->key));
    if ((rc = ebb__text_at(d, e, "operator", &op)) != 0)
        return rc;
    if (op == NULL)
        return ebb__fail(d, EBB_ESCHEMA, "operator", "required (%s)", valid[mode]);
    for (i = 0; i < EBB_ARRAY_LEN(ops); i++)
        if (strcmp(op, ops[i].name) == 0)
            k = (int)i;
    if (k < 0 || (mode == REQ_LABEL && ops[k].op >= EBB_OP_GT) ||
        (mode == REQ_FIELD && ops[k].op > EBB_OP_NOT_IN))
        return ebb__fail(d, EBB_ESCHEMA, "operator", "\"%s\" is not a valid operator (%s)",
                         SHOWN(op), valid[mode]);
    r->op = ops[k].op;
    if ((rc = ebb__arr_at(d, e, "values", &v, &nv)) != 0)
        return rc;
    switch (r->op) {
    case EBB_OP_IN:
    case EBB_OP_NOT_IN:
        if (nv == 0)
            return ebb__fail(d, EBB_ESCHEMA, "values", "must be non-empty for %s", op);
        if (mode == REQ_FIELD && nv != 1)
            return ebb__fail(d, EBB_ESCHEMA, "values", "must have exactly one value for %s", op);
        break;
    case EBB_OP_GT:
    case EBB_OP_LT:
        if (nv != 1)
            return ebb__fail(d, EBB_ESCHEMA, "values", "must have exactly one value for %s", op);
        break;
    default:
        if (nv != 0)
            return ebb__fail(d, EBB_ESCHEMA, "values", "must be empty for %s", op);
    }
    if ((rc = ebb__strs_at(d, e, "values", &r->values, &r->nvalues)) != 0)
        return rc;
    if (r->op == EBB_OP_GT || r->op == EBB_OP_LT) {
        if (!parse_i64(r->values[0], &r->num)) {
            ebb__push(d, "values");
            ebb__push_i(d, 0);
            rc = ebb__fail(d, EBB_ESCHEMA, NULL, "\"%s\" is not an integer (%s)",
                           SHOWN(r->values[0]), op);
            ebb__pop(d);
            ebb__pop(d);
            return rc;
        }
    } else if (r->op == EBB_OP_IN || r->op == EBB_OP_NOT_IN) {
        values_sort(r);
    }
    return 0;
}

/* A list of requirements under `key` (*out NULL, *n 0 until here). */
static int reqs_at(struct dec *d, const cJSON *o, const char *key, int mode, struct ebb_req **out,
                   uint16_t *n)
{
    return ARRAY_AT(d, o, key, req_decode, &mode, *out, *n);
}

/* Every member of the map m a "key In (value)" into reqs (zeroed, one per
 * member); errors name the member. */
static int map_reqs(struct dec *d, const cJSON *m, struct ebb_req *reqs)
{
    struct ebb_req *r = reqs;
    int rc = 0;

    for (const cJSON *c = m != NULL ? m->child : NULL; rc == 0 && c != NULL; c = c->next, r++) {
        r->op = EBB_OP_IN;
        if (!cJSON_IsString(c))
            rc = ebb__expected(d, c->string, "a string", c);
        else if ((r->values = calloc(1, sizeof(*r->values))) == NULL)
            rc = ebb__nomem(d);
        else if ((rc = ebb__intern(d, c->string, c->string, &r->key)) == 0 &&
                 (rc = ebb__intern(d, c->string, c->valuestring, &r->values[0])) == 0)
            r->nvalues = 1;
    }
    return rc;
}

/* ---- label selectors ----------------------------------------------------------- */

/* metav1.LabelSelector: matchLabels become "key In (value)", then the
 * matchExpressions; {} has no requirements and matches everything. */
static int label_selector(struct dec *d, const cJSON *j, struct ebb_selector **out)
{
    struct ebb_req *reqs = NULL, *more = NULL;
    uint16_t nmore = 0;
    const cJSON *ml;
    size_t n = 0, nl;
    int rc;

    *out = NULL;
    if (!cJSON_IsObject(j))
        return ebb__expected(d, NULL, "a label selector object", j);
    if ((rc = ebb__map_at(d, j, "matchLabels", &ml, &nl)) != 0)
        return rc;
    if ((rc = reqs_at(d, j, "matchExpressions", REQ_LABEL, &more, &nmore)) != 0)
        goto fail;
    if (nl + nmore > UINT16_MAX) {
        rc = ebb__fail(d, EBB_ESCHEMA, NULL, "too many requirements");
        goto fail;
    }
    if (nl + nmore == 0) {
        free(more);
        return (*out = ebb_selector_everything()) == NULL ? ebb__nomem(d) : 0;
    }
    if ((reqs = calloc(nl + nmore, sizeof(*reqs))) == NULL) {
        rc = ebb__nomem(d);
        goto fail;
    }
    ebb__push(d, "matchLabels");
    rc = map_reqs(d, ml, reqs);
    ebb__pop(d);
    if (rc != 0)
        goto fail;
    if (nmore > 0)
        memcpy(reqs + nl, more, nmore * sizeof(*more));
    free(more);
    more = NULL;
    n = nl + nmore;
    if ((rc = ebb_selector_from_reqs(reqs, (uint16_t)n, out)) != 0) {
        rc = ebb__fail(d, rc, NULL, "cannot build the selector: %s", ebb_strerror(rc));
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

int ebb__selector_at(struct dec *d, const cJSON *o, const char *key, bool nil_nothing,
                     struct ebb_selector **out)
{
    const cJSON *j = ebb__child(o, key);
    int rc;

    *out = NULL;
    if (j != NULL) {
        ebb__push(d, key);
        rc = label_selector(d, j, out);
        ebb__pop(d);
        if (rc != 0)
            return rc;
    }
    if (*out == NULL && nil_nothing && (*out = ebb_selector_nothing()) == NULL)
        return ebb__nomem(d);
    return 0;
}

int ebb__map_selector_at(struct dec *d, const cJSON *o, const char *key,
                         struct ebb_selector **out)
{
    const cJSON *m;
    struct ebb_req *reqs;
    size_t n;
    int rc;

    *out = NULL;
    if ((rc = ebb__map_at(d, o, key, &m, &n)) != 0 || m == NULL)
        return rc;
    if (n == 0)
        return (*out = ebb_selector_everything()) == NULL ? ebb__nomem(d) : 0;
    if (n > UINT16_MAX)
        return ebb__fail(d, EBB_ESCHEMA, key, "too many requirements");
    if ((reqs = calloc(n, sizeof(*reqs))) == NULL)
        return ebb__nomem(d);
    ebb__push(d, key);
    rc = map_reqs(d, m, reqs);
    ebb__pop(d);
    if (rc == 0 && (rc = ebb_selector_from_reqs(reqs, (uint16_t)n, out)) != 0)
        rc = ebb__fail(d, rc, key, "cannot build the selector: %s", ebb_strerror(rc));
    if (rc != 0)
        reqs_free(reqs, n);
    return rc;
}

/* ---- node affinity ---------------------------------------------------------------- */

/* v1.NodeSelectorTerm (j an object) into the ebb_node_term at slot. */
static int node_term(struct dec *d, const cJSON *j, void *slot, void *ctx)
{
    struct ebb_node_term *t = slot;
    int rc;

    (void)ctx;
    if ((rc = reqs_at(d, j, "matchExpressions", REQ_NODE, &t->exprs, &t->nexprs)) != 0)
        return rc;
    return reqs_at(d, j, "matchFields", REQ_FIELD, &t->fields, &t->nfields);
}

/* v1.PreferredSchedulingTerm. */
static int pref_term(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_pref_term *t = slot;
    const cJSON *pref;
    int rc;

    if ((rc = ebb__i32_at(d, c, "weight", &t->weight, NULL)) != 0 ||
        (rc = ebb__obj_at(d, c, "preference", &pref)) != 0 || pref == NULL)
        return rc;
    ebb__push(d, "preference");
    rc = node_term(d, pref, &t->term, ctx);
    ebb__pop(d);
    return rc;
}

int ebb__node_affinity(struct dec *d, const cJSON *na, struct ebb_affinity *a)
{
    const cJSON *req;
    int rc;

    if ((rc = ebb__obj_at(d, na, REQUIRED, &req)) != 0)
        return rc;
    if (req != NULL) {
        a->has_required = true;
        ebb__push(d, REQUIRED);
        rc = ARRAY_AT(d, req, "nodeSelectorTerms", node_term, NULL, a->required, a->nrequired);
        ebb__pop(d);
        if (rc != 0)
            return rc;
    }
    return ARRAY_AT(d, na, PREFERRED, pref_term, NULL, a->preferred, a->npreferred);
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
        return ebb__expected(&d, NULL, "an object", j);
    if ((a = calloc(1, sizeof(*a))) == NULL)
        return ebb__nomem(&d);
    if ((rc = ebb__node_affinity(&d, j, a)) != 0) {
        ebb_affinity_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

/* ---- pod affinity ------------------------------------------------------------------ */

/* v1.PodAffinityTerm (j an object) into the ebb_pod_term at slot. */
static int pod_term(struct dec *d, const cJSON *j, void *slot, void *ctx)
{
    struct ebb_pod_term *t = slot;
    int rc;

    (void)ctx;
    if ((rc = ebb__selector_at(d, j, "labelSelector", true, &t->selector)) != 0)
        return rc;
    if ((rc = ebb__strs_at(d, j, "namespaces", &t->namespaces, &t->nnamespaces)) != 0)
        return rc;
    if ((rc = ebb__selector_at(d, j, "namespaceSelector", false, &t->ns_selector)) != 0)
        return rc;
    if ((rc = ebb__str_at(d, j, "topologyKey", &t->topology_key)) != 0)
        return rc;
    if ((rc = ebb__strs_at(d, j, "matchLabelKeys", &t->match_keys, &t->nmatch_keys)) != 0)
        return rc;
    return ebb__strs_at(d, j, "mismatchLabelKeys", &t->mismatch_keys, &t->nmismatch_keys);
}

/* v1.WeightedPodAffinityTerm; a missing podAffinityTerm selects nothing. */
static int weighted_term(struct dec *d, const cJSON *c, void *slot, void *ctx)
{
    struct ebb_weighted_pod_term *w = slot;
    const cJSON *t;
    int rc;

    if ((rc = ebb__i32_at(d, c, "weight", &w->weight, NULL)) != 0 ||
        (rc = ebb__obj_at(d, c, "podAffinityTerm", &t)) != 0)
        return rc;
    ebb__push(d, "podAffinityTerm");
    if (t != NULL)
        rc = pod_term(d, t, &w->term, ctx);
    else if ((w->term.selector = ebb_selector_nothing()) == NULL)
        rc = ebb__nomem(d);
    ebb__pop(d);
    return rc;
}

/* podAffinity or podAntiAffinity. */
static int pod_affinity_at(struct dec *d, const cJSON *aff, const char *key,
                           struct ebb_pod_term **req, uint16_t *nreq,
                           struct ebb_weighted_pod_term **pref, uint16_t *npref)
{
    const cJSON *pa;
    int rc;

    if ((rc = ebb__obj_at(d, aff, key, &pa)) != 0 || pa == NULL)
        return rc;
    ebb__push(d, key);
    if ((rc = ARRAY_AT(d, pa, REQUIRED, pod_term, NULL, *req, *nreq)) == 0)
        rc = ARRAY_AT(d, pa, PREFERRED, weighted_term, NULL, *pref, *npref);
    ebb__pop(d);
    return rc;
}

int ebb__affinity_at(struct dec *d, const cJSON *spec, struct ebb_affinity **out)
{
    const cJSON *aff, *na;
    struct ebb_affinity *a;
    int rc;

    if ((rc = ebb__obj_at(d, spec, "affinity", &aff)) != 0 || aff == NULL)
        return rc;
    if ((a = *out = calloc(1, sizeof(*a))) == NULL)
        return ebb__nomem(d);
    ebb__push(d, "affinity");
    if ((rc = ebb__obj_at(d, aff, "nodeAffinity", &na)) == 0 && na != NULL) {
        ebb__push(d, "nodeAffinity");
        rc = ebb__node_affinity(d, na, a);
        ebb__pop(d);
    }
    if (rc == 0)
        rc = pod_affinity_at(d, aff, "podAffinity", &a->aff_required, &a->naff_required,
                             &a->aff_preferred, &a->naff_preferred);
    if (rc == 0)
        rc = pod_affinity_at(d, aff, "podAntiAffinity", &a->anti_required, &a->nanti_required,
                             &a->anti_preferred, &a->nanti_preferred);
    ebb__pop(d);
    if (rc == 0 && !a->has_required && a->npreferred == 0 && a->naff_required == 0 &&
        a->naff_preferred == 0 && a->nanti_required == 0 && a->nanti_preferred == 0) {
        ebb_affinity_free(a);
        *out = NULL;
    }
    return rc;
}
