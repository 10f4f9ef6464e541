/* Node selectors, node affinity and pod (anti-)affinity terms (see
 * ebb/affinity.h). */
#include <string.h>

#include "ebb/affinity.h"
#include "ebb/selector.h"

static bool str_eq(ebb_str a, ebb_str b)
{
    return a == b || (ebb_str_len(a) == 0 && ebb_str_len(b) == 0);
}

/* A label value that already passed label validation cannot carry a sign,
 * so "is an int64" is "all digits and in range". */
static bool is_int64_text(ebb_str s)
{
    size_t n = ebb_str_len(s);
    uint64_t v = 0;

    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > ((uint64_t)INT64_MAX - (uint64_t)(s[i] - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return true;
}

/* What the scheduler's requirement constructor accepts. A term holding a
 * requirement it refuses (a value that is not a label value, Gt with two
 * values, In with none...) fails to parse and so matches no node, although
 * the API server let the pod in. */
static bool expr_valid(const struct ebb_req *r)
{
    if (ebb_label_key_problem(r->key, ebb_str_len(r->key)) != NULL)
        return false;
    for (uint16_t i = 0; i < r->nvalues; i++)
        if (ebb_label_value_problem(r->values[i], ebb_str_len(r->values[i])) != NULL)
            return false;
    switch (r->op) {
    case EBB_OP_IN:
    case EBB_OP_NOT_IN:
        return r->nvalues > 0;
    case EBB_OP_EXISTS:
    case EBB_OP_DOES_NOT_EXIST:
        return r->nvalues == 0;
    case EBB_OP_GT:
    case EBB_OP_LT:
        return r->nvalues == 1 && is_int64_text(r->values[0]);
    default:
        return false;
    }
}

/* matchFields: In/NotIn with exactly one value, anything else is a parse
 * error. A node's only field is metadata.name; any other key reads as "". */
static bool fields_valid(const struct ebb_node_term *t)
{
    for (uint16_t i = 0; i < t->nfields; i++) {
        const struct ebb_req *r = &t->fields[i];
        if ((r->op != EBB_OP_IN && r->op != EBB_OP_NOT_IN) || r->nvalues != 1)
            return false;
    }
    return true;
}

static bool fields_match(const struct ebb_node_term *t, const struct ebb_node *n)
{
    for (uint16_t i = 0; i < t->nfields; i++) {
        const struct ebb_req *r = &t->fields[i];
        ebb_str have = NULL;
        bool eq;

        if (r->key != NULL && strcmp(r->key, "metadata.name") == 0)
            have = n->name;
        eq = str_eq(have, r->values[0]);
        if (r->op == EBB_OP_IN ? !eq : eq)
            return false;
    }
    return true;
}

bool ebb_node_term_parses(const struct ebb_node_term *t)
{
    if (t->validity == 0) {
        /* whether the scheduler could parse the term never changes: check
         * once, remember on the term (engine thread only) */
        bool ok = fields_valid(t);
        for (uint16_t i = 0; ok && i < t->nexprs; i++)
            ok = expr_valid(&t->exprs[i]);
        ((struct ebb_node_term *)t)->validity = ok ? 1 : 2;
    }
    return t->validity == 1;
}

bool ebb_node_term_matches(const struct ebb_node_term *t, const struct ebb_node *n)
{
    if (t == NULL || n == NULL)
        return false;
    if (t->nexprs == 0 && t->nfields == 0)
        return false;   /* an empty term selects nothing */
    if (!ebb_node_term_parses(t))
        return false;
    for (uint16_t i = 0; i < t->nexprs; i++)
        if (!ebb_req_matches(&t->exprs[i], &n->labels))
            return false;
    /* Fields are only checked against a node that has a name. */
    if (t->nfields > 0 && ebb_str_len(n->name) > 0 && !fields_match(t, n))
        return false;
    return true;
}

bool ebb_affinity_required_matches(const struct ebb_affinity *a, const struct ebb_node *n)
{
    if (a == NULL || !a->has_required)
        return true;
    /* Terms are ORed; no terms at all matches nothing. */
    for (uint16_t i = 0; i < a->nrequired; i++)
        if (ebb_node_term_matches(&a->required[i], n))
            return true;
    return false;
}

bool ebb_pod_required_affinity_matches(const struct ebb_pod *p, const struct ebb_node *n)
{
    if (p == NULL || n == NULL)
        return false;
    return ebb_affinity_required_matches(p->affinity, n);
}

bool ebb_pod_matches_node_selector(const struct ebb_pod *p, const struct ebb_node *n)
{
    if (p == NULL || n == NULL)
        return false;
    for (uint32_t i = 0; i < p->node_selector.n; i++) {
        const struct ebb_kv *kv = &p->node_selector.kv[i];
        ebb_str have = NULL;
        if (!ebb_labels_lookup(&n->labels, kv->key, &have) || !str_eq(have, kv->value))
            return false;
    }
    return ebb_pod_required_affinity_matches(p, n);
}

int64_t ebb_pod_preferred_weight(const struct ebb_pod *p, const struct ebb_node *n)
{
    int64_t sum = 0;

    if (p == NULL || n == NULL || p->affinity == NULL)
        return 0;
    for (uint16_t i = 0; i < p->affinity->npreferred; i++) {
        const struct ebb_pref_term *t = &p->affinity->preferred[i];
        if (ebb_node_term_matches(&t->term, n))
            sum += t->weight;
    }
    return sum;
}

bool ebb_pod_has_required_node_affinity(const struct ebb_pod *p)
{
    return p != NULL && p->affinity != NULL && p->affinity->has_required;
}

bool ebb_pod_has_preferred_node_affinity(const struct ebb_pod *p)
{
    return p != NULL && p->affinity != NULL && p->affinity->npreferred > 0;
}

static bool term_namespace_ok(const struct ebb_pod_term *t, const struct ebb_pod *owner,
                              const struct ebb_pod *other,
                              const struct ebb_labels *other_ns_labels)
{
    if (t->nnamespaces > 0) {
        for (uint16_t i = 0; i < t->nnamespaces; i++)
            if (str_eq(t->namespaces[i], other->ns))
                return true;
    } else if (t->ns_selector == NULL) {
        return str_eq(owner->ns, other->ns);
    }
    /* The list and the selector are ORed; the selector needs the other
     * pod's namespace labels, and counts for nothing without them. */
    return t->ns_selector != NULL && other_ns_labels != NULL &&
           ebb_selector_matches(t->ns_selector, other_ns_labels);
}

bool ebb_pod_term_selects(const struct ebb_pod_term *t, const struct ebb_pod *owner,
                          const struct ebb_pod *other,
                          const struct ebb_labels *other_ns_labels)
{
    if (t == NULL || owner == NULL || other == NULL)
        return false;
    if (!term_namespace_ok(t, owner, other, other_ns_labels))
        return false;
    /* A nil labelSelector selects no pod; a NULL here can only be that. */
    if (t->selector == NULL || !ebb_selector_matches(t->selector, &other->labels))
        return false;
    /* matchLabelKeys: key In (owner's value); mismatchLabelKeys: key NotIn
     * (owner's value). A key the owner does not have adds nothing. */
    for (uint16_t i = 0; i < t->nmatch_keys; i++) {
        ebb_str want = NULL, have = NULL;
        if (!ebb_labels_lookup(&owner->labels, t->match_keys[i], &want))
            continue;
        if (!ebb_labels_lookup(&other->labels, t->match_keys[i], &have) || !str_eq(want, have))
            return false;
    }
    for (uint16_t i = 0; i < t->nmismatch_keys; i++) {
        ebb_str want = NULL, have = NULL;
        if (!ebb_labels_lookup(&owner->labels, t->mismatch_keys[i], &want))
            continue;
        if (ebb_labels_lookup(&other->labels, t->mismatch_keys[i], &have) && str_eq(want, have))
            return false;
    }
    return true;
}

bool ebb_same_topology(ebb_str topology_key, const struct ebb_node *a, const struct ebb_node *b)
{
    ebb_str va = NULL, vb = NULL;

    if (ebb_str_len(topology_key) == 0 || a == NULL || b == NULL)
        return false;
    return ebb_labels_lookup(&a->labels, topology_key, &va) &&
           ebb_labels_lookup(&b->labels, topology_key, &vb) && str_eq(va, vb);
}

bool ebb_node_term_equal(const struct ebb_node_term *a, const struct ebb_node_term *b)
{
    if (a->nexprs != b->nexprs || a->nfields != b->nfields)
        return false;
    for (uint16_t i = 0; i < a->nexprs; i++)
        if (!ebb_req_equal(&a->exprs[i], &b->exprs[i]))
            return false;
    for (uint16_t i = 0; i < a->nfields; i++)
        if (!ebb_req_equal(&a->fields[i], &b->fields[i]))
            return false;
    return true;
}

bool ebb_pod_node_affinity_equal(const struct ebb_pod *a, const struct ebb_pod *b)
{
    bool ha = a->affinity && a->affinity->has_required, hb = b->affinity && b->affinity->has_required;

    if (a->node_selector.n != b->node_selector.n || ha != hb)
        return false;
    for (uint32_t i = 0; i < a->node_selector.n; i++)
        if (a->node_selector.kv[i].key != b->node_selector.kv[i].key ||
            a->node_selector.kv[i].value != b->node_selector.kv[i].value)
            return false;
    if (!ha)
        return true;
    if (a->affinity->nrequired != b->affinity->nrequired)
        return false;
    for (uint16_t i = 0; i < a->affinity->nrequired; i++)
        if (!ebb_node_term_equal(&a->affinity->required[i], &b->affinity->required[i]))
            return false;
    return true;
}
