/* ebb/taints.h: taints and tolerations, exact to k8s.io/api/core/v1
 * (Toleration.ToleratesTaint) and the descheduler's helpers built on it.
 * Pure functions, called from the evictor, fit checks and strategies. */
#ifndef EBB_TAINTS_H
#define EBB_TAINTS_H

#include "model.h"

/* v1.Toleration.ToleratesTaint: the toleration's effect (if set) equals the
 * taint's; its key (if set) equals the taint's; operator Exists matches any
 * value, Equal (or empty) needs equal values; with `compare`, Lt (Gt) needs
 * both values to be decimal integers in canonical form (content.
 * IsDecimalInteger: "0" or an optional '-' and no leading zero, within
 * int64) and the taint's below (above) the toleration's; without it Lt and
 * Gt tolerate nothing. The descheduler v0.36 compares (enableComparison-
 * Operators true); Koordinator v1.8.0 does not. */
bool ebb_toleration_tolerates_as(const struct ebb_toleration *t, const struct ebb_taint *taint,
                                 bool compare);
/* ebb_toleration_tolerates_as with compare, as the descheduler asks it */
bool ebb_toleration_tolerates(const struct ebb_toleration *t, const struct ebb_taint *taint);

/* a[0..n) and b[0..n) are the same tolerations in the same order, as far
 * as tolerating a taint reads them (key, value, operator, effect; not
 * tolerationSeconds): equal lists give equal answers. */
bool ebb_tolerations_same(const struct ebb_toleration *a, const struct ebb_toleration *b, size_t n);

/* Some toleration in tols[0..n) tolerates `taint` (comparing). */
bool ebb_tolerations_tolerate(const struct ebb_toleration *tols, size_t n,
                              const struct ebb_taint *taint);

/* Every taint of `node` whose effect is in `effects` (a mask of
 * EBB_EFFECT_*) is tolerated by the pod (the scheduler's TaintToleration
 * filter uses NoSchedule|NoExecute). */
bool ebb_pod_tolerates_node_taints(const struct ebb_pod *pod, const struct ebb_node *node,
                                   unsigned effects);
/* The same, Lt and Gt compared only with `compare`. */
bool ebb_pod_tolerates_node_taints_as(const struct ebb_pod *pod, const struct ebb_node *node,
                                      unsigned effects, bool compare);

/* The descheduler's utils.PodToleratesTaints (used by LowNodeUtilization to
 * pick destinations): false when the pod has fewer tolerations than the node
 * has taints; otherwise every taint, whatever its effect, is tolerated. */
bool ebb_pod_tolerates_all_taints_strict(const struct ebb_pod *pod, const struct ebb_node *node);

/* Effect name <-> EBB_EFFECT_*; unknown names give EBB_EFFECT_OTHER. */
unsigned ebb_effect_parse(const char *s);
const char *ebb_effect_name(unsigned effect);

#endif
