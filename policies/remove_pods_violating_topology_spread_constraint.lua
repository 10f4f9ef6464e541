-- RemovePodsViolatingTopologySpreadConstraint (balance): evicts the fewest
-- pods that bring the topology domains of each spread constraint back
-- within maxSkew, as kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint does.
-- The domain math (distinct constraints per namespace, domains, the
-- balanced check, balanceDomains with topologyBalanceNodeFit) runs in C:
-- ebb.topology_balance.
--
-- Args: namespaces, labelSelector, constraints (whenUnsatisfiable values to
-- act on; empty means [DoNotSchedule]), topologyBalanceNodeFit (default
-- true: a pod is only evicted if it fits a node of a below-average domain).
-- minDomains is not supported, as upstream.
local ebb = require("ebb")
local A = ebb.args

local M = {
  name = "RemovePodsViolatingTopologySpreadConstraint",
  args = {
    namespaces = A.namespaces(),
    labelSelector = A.label_selector(),
    constraints = A.list(A.string()),
    topologyBalanceNodeFit = A.bool({ default = true }),
  },
}

-- validation.go: each constraint must be one of the two actions; the set
-- prints as Go prints a sets.Set (a map, keys sorted).
function M.validate(a)
  for i, c in ipairs(a.constraints or {}) do
    if c ~= "DoNotSchedule" and c ~= "ScheduleAnyway" then
      return nil, string.format("constraint %s is not one of map[DoNotSchedule:{} ScheduleAnyway:{}]", c),
        A.join("constraints", i)
    end
  end
  return true
end

-- defaults.go: no constraints means the hard ones.
local function constraints(a)
  if a.constraints == nil or #a.constraints == 0 then return { "DoNotSchedule" } end
  return a.constraints
end

-- The plugin's podFilter: Evictor.Filter, labelSelector, namespaces.
local function pod_filter(ctx, a)
  local inc = a.namespaces and a.namespaces.include and #a.namespaces.include > 0
    and ebb.set(a.namespaces.include)
  local exc = a.namespaces and a.namespaces.exclude and ebb.set(a.namespaces.exclude) or {}
  return function(pod)
    if inc and not inc[pod.namespace] then return false end
    if exc[pod.namespace] then return false end
    if a.labelSelector and not a.labelSelector:matches(pod) then return false end
    return ctx.evictor:filter(pod)
  end
end

function M.balance(ctx, nodes)
  local a = ctx.args
  -- Upstream lists the pods of the cycle's nodes with podFilter (Evictor.Filter,
  -- labelSelector, namespaces; not PreEvictionFilter) and counts only those
  -- into the domains: pods that are not evictable (DaemonSet, local storage,
  -- critical, bare...) or that the labelSelector leaves out do not count,
  -- whatever the README says about labelSelector and balancing.
  local pods = ebb.pods(nodes, { filter = true, selector = a.labelSelector, namespaces = a.namespaces })
  local evict, skipped, why = ebb.topology_balance(pods, nodes, {
    constraints = constraints(a),
    node_fit = a.topologyBalanceNodeFit,
  })
  if #skipped > 0 then
    ebb.note(string.format("%d pod(s) left in place: no node of a below-average domain fits them "
      .. "(topologyBalanceNodeFit): %s", #skipped, table.concat(skipped:keys(), ", ")))
  end
  -- Upstream ranges over a map of the marked pods (random order); they come
  -- here by namespace, then name.
  local filter = pod_filter(ctx, a)
  local full = {}
  for i, pod in evict:iter() do
    -- a node that hit its limit is skipped; the filters are asked again
    if not full[pod.node] and filter(pod) and ctx.evictor:pre_eviction_filter(pod) then
      local w = why[i]
      local ok, res = ctx.evictor:evict(pod, { reason = string.format(
        "topology spread constraint %s (maxSkew %d): domain %s above the ideal average",
        w.topology_key, w.max_skew, w.domain) })
      if not ok then
        if res == "node-limit" then
          full[pod.node] = true
        elseif res == "total-limit" then
          return
        end
      end
    end
  end
end

return M
