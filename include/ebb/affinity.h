/* ebb/affinity.h: node selectors, node affinity and pod (anti-)affinity
 * terms, exact to k8s.io/component-helpers/scheduling/corev1/nodeaffinity
 * and the scheduler's interpodaffinity term matching. Pure functions. */
#ifndef EBB_AFFINITY_H
#define EBB_AFFINITY_H

#include "model.h"

/* A NodeSelectorTerm: every matchExpression holds on the node's labels and
 * every matchField on its fields (only metadata.name is defined). A term
 * with neither matches nothing. */
bool ebb_node_term_matches(const struct ebb_node_term *t, const struct ebb_node *n);

/* The scheduler's node selector parser accepts every requirement of the
 * term (label key and values valid, the operator's number of values, Gt/Lt
 * an int64; fields In/NotIn with one value). A term it refuses matches no
 * node. Remembered on the term (engine thread only). */
bool ebb_node_term_parses(const struct ebb_node_term *t);

/* Two NodeSelectorTerms as written (ebb_req_equal for each expression and
 * field, in order). */
bool ebb_node_term_equal(const struct ebb_node_term *a, const struct ebb_node_term *b);

/* nodeaffinity.GetRequiredNodeAffinity of two pods equal as written: the
 * same nodeSelector and the same required node selector terms. (Equal up
 * to order would find more equal pods; as written finds fewer, never a
 * wrong one.) */
bool ebb_pod_node_affinity_equal(const struct ebb_pod *a, const struct ebb_pod *b);

/* The required node selector terms of `a` (NULL, or none set: every node;
 * set with no terms: no node); terms ORed. */
bool ebb_affinity_required_matches(const struct ebb_affinity *a, const struct ebb_node *n);

/* Required node affinity: some term matches (terms ORed). A pod without
 * required node affinity matches every node. */
bool ebb_pod_required_affinity_matches(const struct ebb_pod *p, const struct ebb_node *n);

/* The scheduler's PodMatchNodeSelector: spec.nodeSelector (every key/value
 * present on the node) AND required node affinity. */
bool ebb_pod_matches_node_selector(const struct ebb_pod *p, const struct ebb_node *n);

/* Sum of weights of the pod's preferred node affinity terms that match. */
int64_t ebb_pod_preferred_weight(const struct ebb_pod *p, const struct ebb_node *n);

bool ebb_pod_has_required_node_affinity(const struct ebb_pod *p);
bool ebb_pod_has_preferred_node_affinity(const struct ebb_pod *p);

/* Does pod affinity term `t` (declared by pod `owner`) select pod `other`?
 * Namespaces: the term's list, or owner's namespace when the list is empty
 * and there is no namespaceSelector; a namespaceSelector, when set, is
 * matched against `other_ns_labels` (NULL: the namespace's labels are
 * unknown, so the selector part is ignored, as the descheduler does). The
 * label selector is merged with matchLabelKeys (key In owner's value) and
 * mismatchLabelKeys (key NotIn owner's value). */
bool ebb_pod_term_selects(const struct ebb_pod_term *t, const struct ebb_pod *owner,
                          const struct ebb_pod *other,
                          const struct ebb_labels *other_ns_labels);

/* Both nodes have the term's topologyKey label with the same value. */
bool ebb_same_topology(ebb_str topology_key, const struct ebb_node *a, const struct ebb_node *b);

#endif
