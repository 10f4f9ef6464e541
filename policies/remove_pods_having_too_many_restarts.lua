-- RemovePodsHavingTooManyRestarts (deschedule): evicts pods whose
-- containers restarted at least podRestartThreshold times. Semantics of
-- kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/removepodshavingtoomanyrestarts (toomanyrestarts.go,
-- validation.go; the order by restarts is PR #1686).
--
-- Per node (by name): pods of every phase passing the profile's Filter and
-- PreEvictionFilter, `namespaces` and `labelSelector`, whose restart count
-- (app containers, plus init containers with includingInitContainers) is
-- >= podRestartThreshold and, when `states` is set, whose phase is one of
-- them or one of whose app (and, with includingInitContainers, init)
-- containers is waiting for one of them as its reason. Evicted most
-- restarts first (ties in namespace/name order; upstream's sort is not
-- stable). The node limit moves on to the next node, the total limit ends
-- the plugin, any other refusal moves on to the next pod.
local ebb = require("ebb")
local A = ebb.args

local ALLOWED_STATES = { "Running", "CrashLoopBackOff" }

local M = {
  name = "RemovePodsHavingTooManyRestarts",
  args = {
    namespaces = A.namespaces(),
    labelSelector = A.label_selector(),
    podRestartThreshold = A.int32({ default = 0 }),
    includingInitContainers = A.bool({ default = false }),
    states = A.list(A.string()),
  },
}

function M.validate(a)
  if a.podRestartThreshold < 1 then
    return nil, "invalid PodsHavingTooManyRestarts threshold", "podRestartThreshold"
  end
  local allowed = ebb.set(ALLOWED_STATES)
  for i, s in ipairs(a.states or {}) do
    if not allowed[s] then
      local names = { table.unpack(ALLOWED_STATES) }
      table.sort(names)
      return nil, "states must be one of [" .. table.concat(names, " ") .. "]",
        A.join("states", i)
    end
  end
  return true
end

-- Upstream's states test: the pod's phase, or a container waiting with the
-- reason (status.reason and terminated reasons do not count).
local function in_states(pod, states, with_init)
  if states[pod.phase] then return true end
  for _, c in ipairs(pod.container_statuses) do
    if (c.kind == "app" or (with_init and c.kind == "init")) and c.state == "waiting"
        and c.reason ~= nil and states[c.reason] then
      return true
    end
  end
  return false
end

function M.deschedule(ctx, nodes)
  local a = ctx.args
  local with_init = a.includingInitContainers
  local states = a.states and #a.states > 0 and ebb.set(a.states) or nil
  for _, node in nodes:iter() do
    local pods = ebb.pods(node, {
      phase = "all", evictable = true, namespaces = a.namespaces, selector = a.labelSelector,
      min_restarts = a.podRestartThreshold, including_init = with_init,
      where = states and function(pod) return in_states(pod, states, with_init) end,
    }):sort("restarts", with_init)
    for _, pod in pods:iter() do
      local restarts = pod.restarts + (with_init and pod.init_restarts or 0)
      local ok, why = ctx.evictor:evict(pod, { reason = string.format(
        "%d container restarts%s, at or above the threshold of %d", restarts,
        with_init and " (init containers included)" or "", a.podRestartThreshold) })
      if not ok and why == "node-limit" then break end
      if not ok and why == "total-limit" then return end
    end
  end
end

return M
