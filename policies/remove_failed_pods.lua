-- RemoveFailedPods (deschedule): evicts pods in phase Failed. Semantics of
-- kubernetes-sigs/descheduler v0.36 pkg/framework/plugins/removefailedpods
-- (failedpods.go, defaults.go, validation.go): a plugin of its own, not
-- PodLifeTime underneath.
--
-- A pod is a candidate when it is Failed, passes the profile's Filter and
-- PreEvictionFilter, the namespaces and the labelSelector, and:
-- - its age is not less than minPodLifetimeSeconds (default 3600): a pod
--   exactly that old goes, and 0 takes a pod that failed this second;
-- - no owner reference has a kind in excludeOwnerKinds;
-- - with reasons: a container's waiting or terminated reason, or
--   status.reason, is in the list (init containers too with
--   includingInitContainers); the pod phase is not a reason;
-- - with exitCodes: a terminated container's exit code is in the list
--   (init containers too with includingInitContainers).
-- Pods go node by node in listing order (nodes by name, a node's pods by
-- namespace/name where upstream's order is its informer's). A node that
-- reached its eviction limit is left for the next; the total limit ends the
-- plugin. The DefaultEvictor protects failed bare pods unless FailedBarePods
-- is disabled.
local ebb = require("ebb")
local A = ebb.args

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

local function nonempty(list) return list ~= nil and #list > 0 and list or nil end

function M.deschedule(ctx, nodes)
  local a = ctx.args
  local query = {
    phase = "Failed",
    evictable = true,
    namespaces = a.namespaces,
    selector = a.labelSelector,
    min_age = a.minPodLifetimeSeconds,
    owner_kinds = nonempty(a.excludeOwnerKinds) and { exclude = a.excludeOwnerKinds },
    reasons = nonempty(a.reasons),
    exit_codes = nonempty(a.exitCodes),
    including_init = a.includingInitContainers,
  }
  local reason = string.format("failed pod at least %ds old", a.minPodLifetimeSeconds)
  for _, node in nodes:iter() do
    for _, pod in ebb.pods(node, query):iter() do
      local ok, why = ctx.evictor:evict(pod, { reason = reason })
      if not ok and why == "node-limit" then break end
      if not ok and why == "total-limit" then return end
    end
  end
end

return M
