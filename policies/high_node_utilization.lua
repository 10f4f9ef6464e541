-- HighNodeUtilization (balance): evicts pods from underutilized nodes so
-- the scheduler (with MostAllocated scoring) packs them onto fuller nodes
-- and the emptied nodes can be scaled down. Semantics of
-- kubernetes-sigs/descheduler v0.36 pkg/framework/plugins/nodeutilization
-- (highnodeutilization.go, nodeutilization.go, validation.go).
--
-- Usage is the requests of the pods occupying each node, in percent of its
-- allocatable, for the thresholds' resources plus cpu, memory and pods
-- (there is no metrics source). A node is underutilized when every
-- thresholded resource is <= its threshold, unschedulable nodes included;
-- every other schedulable node is a target, able to take up to its full
-- allocatable. Sources are the underutilized nodes, least used first (sum of
-- the raw usage, ties by node name where upstream's order is that of a Go
-- map); on each, the pods passing the profile's Filter (and, with the
-- OnlyThresholdingResources eviction mode, requesting a thresholded
-- resource), lowest priority first, that tolerate the taints of some target,
-- are outside the excluded namespaces and pass PreEvictionFilter are evicted
-- while the targets can still take every resource: the whole node is
-- drained if they can. No per-node plugin limit.
local ebb = require("ebb")
local A = ebb.args
local nu = require("_nodeutilization")

local ONLY_THRESHOLDING = "OnlyThresholdingResources"

local M = {
  name = "HighNodeUtilization",
  args = {
    thresholds = A.map(A.number()),
    numberOfNodes = A.int({ default = 0 }),
    evictionModes = A.list(A.string()),
    evictableNamespaces = nu.evictable_namespaces(),
  },
}

-- ValidateHighNodeUtilizationArgs.
function M.validate(a)
  local ok, msg, path = nu.check_namespaces(a)
  if not ok then return nil, msg, path end
  ok, msg, path = nu.check_thresholds(a.thresholds, "thresholds")
  if not ok then return nil, msg, path end
  for i, mode in ipairs(a.evictionModes or {}) do
    if mode ~= ONLY_THRESHOLDING then
      return nil, "invalid eviction mode " .. mode, A.join("evictionModes", i)
    end
  end
  return true
end

function M.balance(ctx, nodes)
  local a = ctx.args
  local u <close> = ebb.node_usage(nodes, { resources = nu.resources(a.thresholds) })
  u:set_thresholds(a.thresholds)   -- targets: 100% of every thresholded resource
  local low, targets = u:classify("pack")
  local stop = nu.nothing_to_do(u, low, targets, a.numberOfNodes,
    "No node is available to schedule the pods, nothing to do here")
  if stop then
    ebb.note(stop)
    return
  end
  local only = false
  for _, mode in ipairs(a.evictionModes or {}) do only = only or mode == ONLY_THRESHOLDING end
  local requesting = only and { requesting = ebb.keys(a.thresholds) } or nil
  local query = nu.candidates_query(a)
  for _, node in u:move("under", "over", { order = "ascending" }):iter() do
    local pods = u:candidates(ebb.pods(node, query), requesting):sort("priority")
    if nu.evict_from(ctx, u, node, pods, nil) == "total-limit" then return end
  end
end

return M
