/* Taints and tolerations (see ebb/taints.h). */
#include <string.h>

#include "ebb/taints.h"

/* Interned strings: equal text is the same pointer, except that an absent
 * string (NULL) and the empty one mean the same thing to the API. */
static bool str_eq(ebb_str a, ebb_str b)
{
    return a == b || (ebb_str_len(a) == 0 && ebb_str_len(b) == 0);
}

/* content.IsDecimalInteger and strconv.ParseInt(s, 10, 64) */
static bool decimal_int64(ebb_str s, int64_t *out)
{
    size_t n = ebb_str_len(s), i = 0;
    uint64_t v = 0, max = (uint64_t)INT64_MAX;
    bool neg;

    if (n == 0)
        return false;
    neg = s[0] == '-';
    if (neg) {
        if (n == 1)
            return false;
        i = 1;
        max++;                                  /* -9223372036854775808 */
    }
    if (s[i] == '0') {
        *out = 0;
        return n == 1;                          /* "0" only: no "-0", no "01" */
    }
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        if (v > (max - (uint64_t)(s[i] - '0')) / 10)
            return false;                       /* out of int64 */
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return true;
}

bool ebb_toleration_tolerates(const struct ebb_toleration *t, const struct ebb_taint *taint)
{
    return ebb_toleration_tolerates_as(t, taint, true);
}

bool ebb_toleration_tolerates_as(const struct ebb_toleration *t, const struct ebb_taint *taint,
                                 bool compare)
{
    int64_t tv, xv;

    if (t == NULL || taint == NULL)
        return false;
    if (t->effect != EBB_EFFECT_ALL && t->effect != taint->effect)
        return false;
    /* An empty key matches every key whatever the operator; the API only
     * allows it with Exists, but an Equal one still compares values. */
    if (ebb_str_len(t->key) > 0 && !str_eq(t->key, taint->key))
        return false;
    switch (t->op) {
    case EBB_TOL_EQUAL:
        return str_eq(t->value, taint->value);
    case EBB_TOL_EXISTS:
        return true;
    case EBB_TOL_LT:
    case EBB_TOL_GT:
        if (!compare || !decimal_int64(t->value, &tv) || !decimal_int64(taint->value, &xv))
            return false;
        return t->op == EBB_TOL_LT ? xv < tv : xv > tv;
    default:
        return false;   /* an operator the API does not define tolerates nothing */
    }
}

bool ebb_tolerations_tolerate(const struct ebb_toleration *tols, size_t n,
                              const struct ebb_taint *taint)
{
    if (tols == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        if (ebb_toleration_tolerates(&tols[i], taint))
            return true;
    return false;
}

bool ebb_pod_tolerates_node_taints(const struct ebb_pod *pod, const struct ebb_node *node,
                                   unsigned effects)
{
    return ebb_pod_tolerates_node_taints_as(pod, node, effects, true);
}

static bool tolerate_as(const struct ebb_toleration *tols, size_t n, const struct ebb_taint *taint,
                        bool compare)
{
    for (size_t i = 0; tols != NULL && i < n; i++)
        if (ebb_toleration_tolerates_as(&tols[i], taint, compare))
            return true;
    return false;
}

bool ebb_pod_tolerates_node_taints_as(const struct ebb_pod *pod, const struct ebb_node *node,
                                      unsigned effects, bool compare)
{
    if (pod == NULL || node == NULL)
        return false;
    for (uint16_t i = 0; i < node->ntaints; i++) {
        const struct ebb_taint *taint = &node->taints[i];
        if ((taint->effect & effects) == 0)
            continue;
        if (!tolerate_as(pod->tolerations, pod->ntolerations, taint, compare))
            return false;
    }
    return true;
}

bool ebb_pod_tolerates_all_taints_strict(const struct ebb_pod *pod, const struct ebb_node *node)
{
    if (pod == NULL || node == NULL)
        return false;
    /* The descheduler counts first: one wildcard toleration is not enough
     * for a node with two taints. */
    if (pod->ntolerations < node->ntaints)
        return false;
    for (uint16_t i = 0; i < node->ntaints; i++)
        if (!ebb_tolerations_tolerate(pod->tolerations, pod->ntolerations, &node->taints[i]))
            return false;
    return true;
}

unsigned ebb_effect_parse(const char *s)
{
    if (s == NULL || s[0] == '\0')
        return EBB_EFFECT_ALL;
    if (strcmp(s, "NoSchedule") == 0)
        return EBB_EFFECT_NO_SCHEDULE;
    if (strcmp(s, "PreferNoSchedule") == 0)
        return EBB_EFFECT_PREFER_NO_SCHEDULE;
    if (strcmp(s, "NoExecute") == 0)
        return EBB_EFFECT_NO_EXECUTE;
    return EBB_EFFECT_OTHER;
}

const char *ebb_effect_name(unsigned effect)
{
    switch (effect) {
    case EBB_EFFECT_ALL: return "";
    case EBB_EFFECT_NO_SCHEDULE: return "NoSchedule";
    case EBB_EFFECT_PREFER_NO_SCHEDULE: return "PreferNoSchedule";
    case EBB_EFFECT_NO_EXECUTE: return "NoExecute";
    default: return "Unknown";
    }
}

bool ebb_tolerations_same(const struct ebb_toleration *a, const struct ebb_toleration *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].key != b[i].key || a[i].value != b[i].value || a[i].op != b[i].op ||
            a[i].effect != b[i].effect)
            return false;
    return true;
}
