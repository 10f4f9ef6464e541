-- RemovePodsViolatingInterPodAntiAffinity (deschedule): evicts pods whose
-- own requiredDuringSchedulingIgnoredDuringExecution pod anti-affinity is
-- violated by another pod in the same topology domain. Semantics of
-- kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/removepodsviolatinginterpodantiaffinity
-- (pod_antiaffinity.go, utils.CheckPodsWithAntiAffinityExist).
--
-- The pods considered, as candidates and as the pods terms are checked
-- against, are the active pods of the cycle's nodes matching `namespaces`
-- and `labelSelector`; the evictor's filters are not applied to them, only
-- to a candidate before it is evicted. A term selects pods in its
-- namespaces (the pod's own when it lists none; namespaceSelector is
-- ignored, as upstream), matching its labelSelector, other than pods of
-- the candidate's name, on the candidate's node or on a node with the same
-- value of the term's topologyKey. Preferred anti-affinity is not handled
-- (upstream issue #250).
--
-- Per node (by name), candidates go from the lowest priority up (no
-- priority first, then QoS BestEffort < Burstable < Guaranteed, then pods
-- without prefer-no-eviction first; ties in namespace/name order, where
-- upstream's sort is not stable). An evicted pod leaves the index, so the
-- pods it conflicted with are not evicted for it. The node limit moves on
-- to the next node, the total limit ends the plugin, any other refusal
-- moves on to the next pod. The checks run in C (ebb.anti_affinity_index):
-- a check costs the size of one topology domain, not the number of pods.
local ebb = require("ebb")
local A = ebb.args

local M = {
  name = "RemovePodsViolatingInterPodAntiAffinity",
  args = {
    namespaces = A.namespaces(),
    labelSelector = A.label_selector(),
  },
}

function M.deschedule(ctx, nodes)
  local a = ctx.args
  local pods = ebb.pods(nodes, { namespaces = a.namespaces, selector = a.labelSelector })
  local index = ebb.anti_affinity_index(pods, nodes)
  local ev = ctx.evictor
  for _, node in nodes:iter() do
    local candidates = index:candidates(node):sort("priority")
    for _, pod in candidates:iter() do
      local peer, key = index:violation(pod)
      if peer ~= nil and ev:filter(pod) and ev:pre_eviction_filter(pod) then
        local ok, why = ev:evict(pod, { reason = string.format(
          "pod's required anti-affinity (topology key %s) is violated by %s on node %s",
          key, peer.key, peer.node) })
        if ok then
          index:remove(pod)
        elseif why == "node-limit" then
          break
        elseif why == "total-limit" then
          return
        end
      end
    end
  end
end

return M
