-- RemovePodsViolatingNodeTaints (deschedule): evicts pods that do not
-- tolerate a NoSchedule taint of their node (and PreferNoSchedule with
-- includePreferNoSchedule). excludedTaints / includedTaints entries are
-- "key" or "key=value" (the value form only matches a non-empty value).
-- NoExecute taints are left to the taint manager. Per node, pods are taken
-- in namespace/name order; the node limit moves on to the next node, the
-- total limit ends the plugin. Semantics of kubernetes-sigs/descheduler
-- v0.36 pkg/framework/plugins/removepodsviolatingnodetaints.
local ebb = require("ebb")
local A = ebb.args

local M = {
  name = "RemovePodsViolatingNodeTaints",
  -- a taint added to a node is acted on within seconds, not at the next
  -- cycle: the run is handed the nodes whose taints changed
  triggers = { "node-taints" },
  args = {
    namespaces = A.namespaces(),
    labelSelector = A.label_selector(),
    includePreferNoSchedule = A.bool({ default = false }),
    excludedTaints = A.list(A.string()),
    includedTaints = A.list(A.string()),
  },
}

function M.validate(a)
  if a.excludedTaints and #a.excludedTaints > 0 and a.includedTaints and #a.includedTaints > 0 then
    return nil, "either includedTaints or excludedTaints can be set, but not both"
  end
  return true
end

local function listed(set, taint)
  return set[taint.key] or (taint.value ~= "" and set[taint.key .. "=" .. taint.value]) or false
end

function M.deschedule(ctx, nodes)
  local a = ctx.args
  local excluded = ebb.set(a.excludedTaints)
  local included = a.includedTaints and ebb.set(a.includedTaints)
  local keep = function(t)
    local effect = t.effect == "NoSchedule" or (a.includePreferNoSchedule and t.effect == "PreferNoSchedule")
    return effect and not listed(excluded, t) and (included == nil or listed(included, t))
  end
  for _, node in nodes:iter() do
    local taints = ebb.taint_set(node, keep)
    if taints ~= nil then
      local pods = ebb.pods(node, {
        evictable = true, namespaces = a.namespaces, selector = a.labelSelector,
      })
      for _, pod in pods:iter() do
        if not pod:tolerates_all(taints) then
          local ok, why = ctx.evictor:evict(pod, { reason = "pod does not tolerate a taint of node " .. node.name })
          if not ok and why == "node-limit" then break end
          if not ok and why == "total-limit" then return end
        end
      end
    end
  end
end

return M
