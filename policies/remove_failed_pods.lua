-- RemoveFailedPods (deschedule): evicts pods in phase Failed, as upstream
-- v0.36 does it: PodLifeTime's machinery with a phase == Failed filter
-- (kubernetes-sigs/descheduler pkg/framework/plugins/removefailedpods).
-- minPodLifetimeSeconds (default 3600) becomes the lifetime, reasons the
-- states (phase, status.reason, container waiting/terminated reasons),
-- excludeOwnerKinds an exclusion of owner kinds. Oldest first; note that
-- the DefaultEvictor protects failed bare pods unless FailedBarePods is
-- disabled.
local ebb = require("ebb")
local A = ebb.args
local lifetime = require("pod_lifetime")

local M = {
  name = "RemoveFailedPods",
  args = {
    namespaces = A.namespaces(),
    labelSelector = A.label_selector(),
    excludeOwnerKinds = A.list(A.string()),
    minPodLifetimeSeconds = A.uint({ default = 3600 }),
    reasons = A.list(A.string()),
    exitCodes = A.list(A.int32()),
    includingInitContainers = A.bool({ default = false }),
  },
}

function M.deschedule(ctx, nodes)
  local a = ctx.args
  local q = lifetime.query({
    namespaces = a.namespaces,
    labelSelector = a.labelSelector,
    maxPodLifeTimeSeconds = a.minPodLifetimeSeconds,
    states = a.reasons,
    exitCodes = a.exitCodes,
    includingInitContainers = a.includingInitContainers,
    ownerKinds = (a.excludeOwnerKinds and #a.excludeOwnerKinds > 0)
      and { exclude = a.excludeOwnerKinds } or nil,
  }, { phase = "Failed" })
  local pods = ebb.pods(nodes, q):sort("age")
  local reason = string.format("pod failed over %ds ago", a.minPodLifetimeSeconds)
  lifetime.evict_all(ctx, pods, function() return reason end)
end

return M
