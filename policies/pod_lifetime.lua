-- PodLifeTime (deschedule): evicts pods that match every category of
-- criteria that is set (age, states, conditions, exit codes, owner kinds),
-- oldest first across the cluster. Semantics of kubernetes-sigs/descheduler
-- v0.36.0 pkg/framework/plugins/podlifetime (pod_lifetime.go).
--
-- Within a category the entries are ORed; categories are ANDed. Pods of
-- every phase are considered. Order: creation time, oldest first, whatever
-- the conditions (SortPodsBasedOnAge); ties keep the listing order (node by
-- name, then namespace/name; upstream's sort is not stable). A missing
-- creationTimestamp is Go's zero time: the oldest. A node that reached its
-- eviction limit is skipped pod by pod; the total limit ends the plugin.
local ebb = require("ebb")
local A = ebb.args

local ALLOWED_STATES = {
  -- pod phases
  "Running", "Pending", "Succeeded", "Failed", "Unknown",
  -- pod status reasons
  "NodeAffinity", "NodeLost", "Shutdown", "UnexpectedAdmissionError",
  -- container waiting reasons
  "PodInitializing", "ContainerCreating", "ImagePullBackOff", "CrashLoopBackOff",
  "CreateContainerConfigError", "ErrImagePull", "CreateContainerError", "InvalidImageName",
  -- container terminated reasons
  "OOMKilled", "Error", "Completed", "DeadlineExceeded", "Evicted", "ContainerCannotRun",
  "StartError",
}

local function owner_kinds()
  local s = A.object({ include = A.list(A.string()), exclude = A.list(A.string()) })
  s.check = function(v, path)
    if v.include and #v.include > 0 and v.exclude and #v.exclude > 0 then
      A.fail(path, "only one of Include/Exclude ownerKinds can be set")
    end
  end
  return s
end

local M = {
  name = "PodLifeTime",
  args = {
    namespaces = A.namespaces(),
    labelSelector = A.label_selector(),
    ownerKinds = owner_kinds(),
    maxPodLifeTimeSeconds = A.uint(),
    states = A.list(A.string()),
    conditions = A.list(A.object({
      type = A.string(),
      status = A.string(),
      reason = A.string(),
      minTimeSinceLastTransitionSeconds = A.uint(),
    })),
    exitCodes = A.list(A.int32()),
    includingInitContainers = A.bool({ default = false }),
    includingEphemeralContainers = A.bool({ default = false }),
  },
}

function M.validate(a)
  local allowed = ebb.set(ALLOWED_STATES)
  for i, s in ipairs(a.states or {}) do
    if not allowed[s] then
      local names = {}
      for _, n in ipairs(ALLOWED_STATES) do names[#names + 1] = n end
      table.sort(names)
      return nil, "states must be one of [" .. table.concat(names, " ") .. "]",
        A.join("states", i)
    end
  end
  local function unset(v) return v == nil or v == "" end
  for i, c in ipairs(a.conditions or {}) do
    if unset(c.type) and unset(c.status) and unset(c.reason)
        and c.minTimeSinceLastTransitionSeconds == nil then
      return nil, string.format("conditions[%d]: at least one of type, status, reason, or "
        .. "minTimeSinceLastTransitionSeconds must be set", i - 1), A.join("conditions", i)
    end
  end
  if a.maxPodLifeTimeSeconds == nil and #(a.states or {}) == 0 and #(a.conditions or {}) == 0
      and #(a.exitCodes or {}) == 0 then
    return nil, "at least one filtering criterion must be specified (maxPodLifeTimeSeconds, states, "
      .. "conditions, or exitCodes)"
  end
  return true
end

local function query(a)
  return {
    phase = "all",
    evictable = true,
    namespaces = a.namespaces,
    selector = a.labelSelector,
    owner_kinds = a.ownerKinds,
    older_than = a.maxPodLifeTimeSeconds,
    states = a.states,
    conditions = a.conditions,
    exit_codes = a.exitCodes,
    including_init = a.includingInitContainers,
    including_ephemeral = a.includingEphemeralContainers,
  }
end

-- One reason for the run: what the pods have in common.
local function reason_of(a)
  local parts = {}
  if a.maxPodLifeTimeSeconds then
    parts[#parts + 1] = string.format("older than %ds", a.maxPodLifeTimeSeconds)
  end
  if a.states and #a.states > 0 then
    parts[#parts + 1] = "state in [" .. table.concat(a.states, ",") .. "]"
  end
  if a.conditions and #a.conditions > 0 then parts[#parts + 1] = "matching conditions" end
  if a.exitCodes and #a.exitCodes > 0 then
    parts[#parts + 1] = "exit code in [" .. table.concat(a.exitCodes, ",") .. "]"
  end
  return "pod " .. table.concat(parts, ", ")
end

function M.deschedule(ctx, nodes)
  local a = ctx.args
  local reason = reason_of(a)
  for _, pod in ebb.pods(nodes, query(a)):sort("age"):iter() do
    local ok, why = ctx.evictor:evict(pod, { reason = reason })
    if not ok and why == "total-limit" then return end
    -- node-limit: this pod is skipped, later pods of other nodes still go
  end
end

return M
