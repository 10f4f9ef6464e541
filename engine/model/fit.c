/* NodeFit, as upstream decides it; see include/ebb/fit.h. The node's used
 * requests come from the cache's per-node sums, so a check is O(resources
 * the pod requests) plus the anti-affinity scan when the pod has terms. */
#include <string.h>

#include "ebb/affinity.h"
#include "ebb/fit.h"
#include "ebb/quantity.h"
#include "ebb/taints.h"

static bool fits_requests(struct ebb_cache *c, const struct ebb_pod *pod,
                          const struct ebb_node *node, const char **why)
{
    const struct ebb_podvec *pv = ebb_cache_pods_on_node(c, node->name);

    for (uint16_t i = 0; i < pod->requests.n; i++) {
        int id = pod->requests.q[i].id;
        int64_t used = id == EBB_RES_PODS ? pv->nactive : pv->req[id];
        /* a resource the node does not list has nothing available */
        int64_t avail = ebb_q_sub(ebb_res_get(&node->allocatable, id), used);
        if (pod->requests.q[i].v > avail) {
            if (why) {
                static char buf[128];
                strcpy(buf, "insufficient ");
                strncat(buf, ebb_resource_name(id), sizeof(buf) - strlen(buf) - 1);
                *why = buf;
            }
            return false;
        }
    }
    if (ebb_q_sub(ebb_res_get(&node->allocatable, EBB_RES_PODS), (int64_t)pv->nactive) <= 0) {
        if (why)
            *why = "insufficient pods";
        return false;
    }
    return true;
}

/* The pod's own required anti-affinity terms against pods on the node:
 * same namespace set, selector match, any pod but one of the same name, and
 * the node carries the term's topology key. */
static bool anti_affinity_conflict(struct ebb_cache *c, const struct ebb_pod *pod,
                                   const struct ebb_node *node)
{
    const struct ebb_podvec *pv;

    if (pod->affinity == NULL || pod->affinity->nanti_required == 0)
        return false;
    pv = ebb_cache_pods_on_node(c, node->name);
    for (uint16_t t = 0; t < pod->affinity->nanti_required; t++) {
        const struct ebb_pod_term *term = &pod->affinity->anti_required[t];
        if (term->topology_key == NULL || ebb_labels_get(&node->labels, term->topology_key) == NULL)
            continue;
        for (uint32_t i = 0; i < pv->n; i++) {
            const struct ebb_pod *other = pv->v[i];
            if (!ebb_pod_occupies(other) || other->name == pod->name)
                continue;
            if (ebb_pod_term_selects(term, pod, other, NULL))
                return true;
        }
    }
    return false;
}

bool ebb_node_fit(struct ebb_cache *c, const struct ebb_pod *pod, const struct ebb_node *node,
                  const char **why)
{
    return ebb_node_fit_as(c, pod, node, why, true);
}

bool ebb_node_fit_as(struct ebb_cache *c, const struct ebb_pod *pod, const struct ebb_node *node,
                     const char **why, bool compare)
{
    if (!ebb_pod_matches_node_selector(pod, node)) {
        if (why)
            *why = "pod node selector does not match the node label";
        return false;
    }
    if (!ebb_pod_tolerates_node_taints_as(pod, node, EBB_EFFECT_NO_SCHEDULE | EBB_EFFECT_NO_EXECUTE,
                                          compare)) {
        if (why)
            *why = "pod does not tolerate taints on the node";
        return false;
    }
    if ((pod->node == NULL || pod->node != node->name) && !fits_requests(c, pod, node, why))
        return false;
    if (node->unschedulable) {
        if (why)
            *why = "node is not schedulable";
        return false;
    }
    if (anti_affinity_conflict(c, pod, node)) {
        if (why)
            *why = "pod matches inter-pod anti-affinity rule of other pod on node";
        return false;
    }
    return true;
}

bool ebb_pod_fits_any_other_node(struct ebb_cache *c, const struct ebb_pod *pod,
                                 struct ebb_node *const *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (nodes[i]->name != pod->node && ebb_node_fit(c, pod, nodes[i], NULL))
            return true;
    return false;
}

bool ebb_pod_fits_any_node(struct ebb_cache *c, const struct ebb_pod *pod,
                           struct ebb_node *const *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ebb_node_fit(c, pod, nodes[i], NULL))
            return true;
    return false;
}
