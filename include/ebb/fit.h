/* ebb/fit.h: would a pod fit on a node, as the descheduler decides it
 * (pkg/descheduler/node/node.go NodeFit): node selector and required node
 * affinity, NoSchedule/NoExecute taints, requests against what the node's
 * occupying pods already request (only when the node is not the pod's own),
 * a free pod slot, the node being schedulable, and the pod's own required
 * anti-affinity against the pods on that node. Used by DefaultEvictor's
 * nodeFit and by strategies through ebb.fits(). Engine thread only. */
#ifndef EBB_FIT_H
#define EBB_FIT_H

#include "cache.h"

/* true when `pod` fits `node`; otherwise false and a static reason ("node is not
 * schedulable", "insufficient cpu", ...) in *why (may be NULL). */
bool ebb_node_fit(struct ebb_cache *c, const struct ebb_pod *pod, const struct ebb_node *node,
                  const char **why);
/* The same, with Lt/Gt tolerations compared only with `compare`
 * (ebb_toleration_tolerates_as): ebb_node_fit compares, as the descheduler
 * v0.36 does; Koordinator v1.8.0's NodeFit does not. */
bool ebb_node_fit_as(struct ebb_cache *c, const struct ebb_pod *pod, const struct ebb_node *node,
                     const char **why, bool compare);

/* Some node of nodes[0..n) other than the pod's own passes ebb_node_fit. */
bool ebb_pod_fits_any_other_node(struct ebb_cache *c, const struct ebb_pod *pod,
                                 struct ebb_node *const *nodes, size_t n);
/* Some node of nodes[0..n) passes ebb_node_fit (its own included). */
bool ebb_pod_fits_any_node(struct ebb_cache *c, const struct ebb_pod *pod,
                           struct ebb_node *const *nodes, size_t n);

/* The nodes the descheduler considers ready (upstream IsReady: no Ready
 * condition that is not True; unschedulable nodes count). */
static inline bool ebb_node_is_ready(const struct ebb_node *n)
{
    return n->ready;
}

#endif
