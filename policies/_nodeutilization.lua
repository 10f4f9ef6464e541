-- Shared by LowNodeUtilization and HighNodeUtilization (not a plugin: the
-- leading underscore keeps it out of the plugin registry). What upstream's
-- nodeutilization package has in common for both: threshold and namespace
-- validation, the resource set, the stop conditions and evictPods.
-- kubernetes-sigs/descheduler v0.36.0 pkg/framework/plugins/nodeutilization
-- (nodeutilization.go, validation.go).
local ebb = require("ebb")
local A = ebb.args

local M = {}

-- evictableNamespaces: only exclude is allowed (check_namespaces); no
-- include/exclude exclusivity check of A.namespaces(): upstream reports
-- include first
function M.evictable_namespaces()
  return A.object({ include = A.list(A.string()), exclude = A.list(A.string()) })
end

-- validateThresholds: non-empty, every value in [0, 100]. Upstream walks a
-- Go map (random order); the first problem is reported by resource name.
function M.check_thresholds(map, path, prefix)
  prefix = prefix or ""
  if map == nil or next(map) == nil then
    return nil, prefix .. "no resource threshold is configured", path
  end
  for _, name in ipairs(ebb.keys(map)) do
    local v = map[name]
    if v < 0 or v > 100 then
      return nil, string.format("%s%s threshold not in [0, 100] range", prefix, name), A.join(path, name)
    end
  end
  return true
end

function M.check_namespaces(a)
  local ns = a.evictableNamespaces
  if ns ~= nil and ns.include ~= nil and #ns.include > 0 then
    return nil, "only Exclude namespaces can be set, inclusion is not supported", "evictableNamespaces.include"
  end
  return true
end

local BASIC = { "cpu", "memory", "pods" }

-- The thresholds' resources plus cpu, memory and pods.
function M.resources(thresholds)
  local out, seen = {}, {}
  for _, r in ipairs(BASIC) do
    out[#out + 1] = r
    seen[r] = true
  end
  for _, r in ipairs(ebb.keys(thresholds)) do
    if not seen[r] then
      out[#out + 1] = r
      seen[r] = true
    end
  end
  return out
end

-- The ebb.pods query of a source's removable pods: the profile's Filter,
-- outside the excluded namespaces.
function M.candidates_query(a)
  local exclude = a.evictableNamespaces and a.evictableNamespaces.exclude
  return { filter = true, namespaces = exclude and { exclude = exclude } or nil }
end

-- evictPods for one source node: pods already filtered (Filter, namespace,
-- taints of the destinations) and sorted. Returns "total-limit" when the
-- plugin has to stop.
function M.evict_from(ctx, u, node, pods, limit)
  if #pods == 0 or not u:continues(node) then return end
  -- a source that cannot tell a pod's usage evicts "unconstrained": one pod
  -- unless there is a per-node limit, and nothing is subtracted
  local measured = u:measures_pods()
  local evicted = 0
  for _, pod in pods:iter() do
    if limit ~= nil and evicted >= limit then break end
    if ctx.evictor:pre_eviction_filter(pod) then
      local usage, why
      if measured then usage, why = u:pod_usage(pod) end
      if measured and usage == nil then
        ebb.note(string.format("pod %s not evicted: %s", pod.key, why), node)
      else
        local ok, refusal = ctx.evictor:evict(pod, { reason = u:explain(node) })
        if ok then
          -- "Currently, only a single pod eviction is allowed"
          if not measured and limit == nil then break end
          evicted = evicted + 1
          if measured and not u:take(pod) then break end
        elseif refusal == "node-limit" then
          break
        elseif refusal == "total-limit" then
          return "total-limit"
        end
        -- any other refusal (pdb, filtered, namespace-limit...): next pod
      end
    end
  end
end

-- The checks that end a run before any eviction; a note says which.
function M.nothing_to_do(u, low, high, number_of_nodes, none_high)
  if #low == 0 then
    return "No node is underutilized, nothing to do here, you might tune your thresholds further"
  end
  if #low <= number_of_nodes then
    return string.format("Number of nodes underutilized (%d) is less or equal than NumberOfNodes "
      .. "(%d), nothing to do here", #low, number_of_nodes)
  end
  if #low == u:count() then
    return "All nodes are underutilized, nothing to do here"
  end
  if #high == 0 then
    return none_high
  end
end

return M
