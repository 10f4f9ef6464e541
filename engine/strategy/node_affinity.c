/* RemovePodsViolatingNodeAffinity's preferred-term helpers (ebb/groups.h):
 * the best preferred-affinity weight any of the given nodes offers a pod,
 * and the first node that offers more than a given weight
 * (kubernetes-sigs/descheduler pkg/framework/plugins/removepodsviolatingnodeaffinity,
 * preferredDuringSchedulingIgnoredDuringExecution). Called by the
 * ebb.best_preferred_weight and ebb.better_preferred_node bindings
 * (lua/lua_groups.c) during a cycle, on the
 * thread that runs the strategies; pods and nodes are borrowed. */
#include "ebb/affinity.h"
#include "ebb/groups.h"

int64_t ebb_pod_best_preferred_weight(const struct ebb_pod *pod, struct ebb_node *const *nodes,
                                      size_t nnodes)
{
    int64_t best = 0;

    if (pod == NULL || !ebb_pod_has_preferred_node_affinity(pod))
        return 0;
    for (size_t i = 0; i < nnodes; i++) {
        int64_t w = ebb_pod_preferred_weight(pod, nodes[i]);
        if (w > best)
            best = w;
    }
    return best;
}

const struct ebb_node *ebb_pod_better_preferred_node(const struct ebb_pod *pod, int64_t than,
                                                     struct ebb_node *const *nodes, size_t nnodes,
                                                     int64_t *weight)
{
    if (weight)
        *weight = 0;
    if (pod == NULL || !ebb_pod_has_preferred_node_affinity(pod))
        return NULL;
    for (size_t i = 0; i < nnodes; i++) {
        int64_t w = ebb_pod_preferred_weight(pod, nodes[i]);
        if (w > than) {
            if (weight)
                *weight = w;
            return nodes[i];
        }
    }
    return NULL;
}
