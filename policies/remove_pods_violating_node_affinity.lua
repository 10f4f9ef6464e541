-- RemovePodsViolatingNodeAffinity (deschedule): evicts pods whose node
-- affinity is no longer met by their node. Semantics of
-- kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/removepodsviolatingnodeaffinity (node_affinity.go).
--
-- For each entry of nodeAffinityType in order, node by node (by name), the
-- active pods passing the profile's Filter and PreEvictionFilter,
-- `namespaces` and `labelSelector` are listed with the test of the type:
--   requiredDuringSchedulingIgnoredDuringExecution: the pod has required
--     node affinity, its node no longer matches its nodeSelector and
--     required affinity, and it fits some node of the cycle (NodeFit, its
--     own node included);
--   preferredDuringSchedulingIgnoredDuringExecution: the pod has preferred
--     terms, it fits some node, and the best weight it gives to any node of
--     the cycle is above the weight of its node. The best node need not be
--     one the pod fits (upstream; the loop of issue #1707).
-- The test runs for every pod of a node before any of them is evicted, as
-- upstream lists with it. Any other type is noted and skipped (upstream
-- logs "Invalid nodeAffinityType"). The node limit moves on to the next
-- node; the total limit ends the pass of that type (upstream returns from
-- processNodes only, so the next type still runs and meets the limit);
-- any other refusal moves on to the next pod.
local ebb = require("ebb")
local A = ebb.args

local REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
local PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

local M = {
  name = "RemovePodsViolatingNodeAffinity",
  -- a node whose labels change may stop matching its pods' required
  -- affinity: the run is handed the nodes whose labels changed, and the
  -- targets a pod could move to are still every node of the cycle
  triggers = { "node-labels" },
  args = {
    namespaces = A.namespaces(),
    labelSelector = A.label_selector(),
    nodeAffinityType = A.list(A.string()),
  },
}

function M.validate(a)
  if a.nodeAffinityType == nil or #a.nodeAffinityType == 0 then
    return nil, "nodeAffinityType needs to be set", "nodeAffinityType"
  end
  return true
end

-- The listing test of each type: the ebb.pods options that test in C
-- (node_affinity: the pod has node affinity of that kind, before the
-- filters; off_node: its node no longer matches it, after them, as
-- upstream orders them), then function(pod, node, targets) -> reason | nil
-- on the pods that pass; targets are the cycle's nodes (the same as the
-- nodes handed to deschedule, except in a run triggered by a change)
local QUERY = {
  [REQUIRED] = { node_affinity = "required", off_node = true },
  [PREFERRED] = { node_affinity = "preferred" },
}
local TESTS = {
  [REQUIRED] = function(pod, node, nodes)
    if ebb.fits_any(pod, nodes) then
      return "pod does not match the required node affinity of node " .. node.name
    end
  end,
  [PREFERRED] = function(pod, node, nodes)
    -- upstream: best weight over the nodes > weight here; the first better
    -- node answers the same without weighing them all
    local here = pod:preferred_weight(node)
    local better, weight = ebb.better_preferred_node(pod, here, nodes)
    if better ~= nil and ebb.fits_any(pod, nodes) then
      return string.format("pod prefers other nodes: preferred node affinity weight %d on node %s, "
        .. "%d on node %s", here, node.name, weight, better.name)
    end
  end,
}

-- One pass over the nodes for one type.
local function process(ctx, nodes, kind)
  local a = ctx.args
  local targets = ebb.nodes("cycle")
  local test = TESTS[kind]
  for _, node in nodes:iter() do
    local reasons = {}
    local pods = ebb.pods(node, {
      node_affinity = QUERY[kind].node_affinity, off_node = QUERY[kind].off_node,
      evictable = true, namespaces = a.namespaces, selector = a.labelSelector,
      where = function(pod)
        local why = test(pod, node, targets)
        reasons[pod] = why
        return why ~= nil
      end,
    })
    for _, pod in pods:iter() do
      local ok, why = ctx.evictor:evict(pod, { reason = reasons[pod] })
      if not ok and why == "node-limit" then break end
      if not ok and why == "total-limit" then return end
    end
  end
end

function M.deschedule(ctx, nodes)
  for _, kind in ipairs(ctx.args.nodeAffinityType) do
    if TESTS[kind] == nil then
      ebb.note(string.format('invalid nodeAffinityType "%s": expected %s or %s', kind, REQUIRED, PREFERRED))
    else
      process(ctx, nodes, kind)
    end
  end
end

return M
