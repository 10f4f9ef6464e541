-- LowNodeUtilization (balance): evicts pods from overutilized nodes so the
-- scheduler can place them on underutilized ones. Semantics of
-- kubernetes-sigs/descheduler v0.36 pkg/framework/plugins/nodeutilization
-- (lownodeutilization.go, nodeutilization.go, usageclients.go,
-- validation.go, classifier/, normalizer/).
--
-- Usage is the requests of the pods occupying each node (or, with
-- metricsUtilization, the metrics.k8s.io NodeMetrics), in percent of the
-- node's allocatable, for the thresholds' resources plus cpu, memory and
-- pods. A node is underutilized when it is schedulable and every
-- thresholded resource is <= its threshold, overutilized when some
-- thresholded resource is > its target (first match wins); with
-- useDeviationThresholds both are distances from the average usage.
-- Sources are the overutilized nodes, most used first (sum of the raw usage,
-- ties by node name where upstream's order is that of a Go map); on each,
-- the pods passing the profile's Filter, lowest priority first, that
-- tolerate the taints of some underutilized node, are outside the excluded
-- namespaces and pass PreEvictionFilter are evicted while the node is still
-- above its target for some resource and the underutilized nodes can still
-- take every resource. The eviction's reason says which resource was over
-- and by how much.
--
-- With metrics, a node of the set without NodeMetrics (or metrics without a
-- resource of the set) fails the plugin for the cycle with upstream's
-- message, evicting nothing. Where ebb differs: the Prometheus source cannot
-- run here (no Prometheus server to query): its args are checked exactly,
-- and a run reports a plugin failure.
local ebb = require("ebb")
local A = ebb.args

local METRIC_RESOURCE = "MetricResource"
local BASIC = { "cpu", "memory", "pods" }

local M = {
  name = "LowNodeUtilization",
  args = {
    useDeviationThresholds = A.bool({ default = false }),
    thresholds = A.map(A.number()),
    targetThresholds = A.map(A.number()),
    numberOfNodes = A.int({ default = 0 }),
    metricsUtilization = A.object({
      metricsServer = A.bool({ default = false }),   -- deprecated: source KubernetesMetrics
      source = A.string(),
      prometheus = A.object({ query = A.string() }),
    }),
    -- only exclude is allowed (validate); no include/exclude exclusivity
    -- check of A.namespaces(): upstream reports include first
    evictableNamespaces = A.object({ include = A.list(A.string()), exclude = A.list(A.string()) }),
    evictionLimits = A.object({ node = A.uint() }),
  },
}

-- Sorted keys: upstream walks Go maps here (random order); we report the
-- first problem by resource name.
local function keys(map)
  local out = {}
  for k in pairs(map or {}) do out[#out + 1] = k end
  table.sort(out)
  return out
end
M.keys = keys

-- The field path of a map key, as ebb.args writes it.
local function field(path, key)
  if key:find("[%./%[%]]") then return path .. '["' .. key .. '"]' end
  return path .. "." .. key
end
M.field = field

-- validateThresholds: non-empty, every value in [0, 100].
function M.check_thresholds(map, path, prefix)
  prefix = prefix or ""
  if map == nil or next(map) == nil then
    return nil, prefix .. "no resource threshold is configured", path
  end
  for _, name in ipairs(keys(map)) do
    local v = map[name]
    if v < 0 or v > 100 then
      return nil, string.format("%s%s threshold not in [0, 100] range", prefix, name), field(path, name)
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

-- ValidateLowNodeUtilizationArgs, then what NewLowNodeUtilization refuses
-- when it builds the plugin (Prometheus thresholds, the metrics source).
function M.validate(a)
  local ok, msg, path = M.check_namespaces(a)
  if not ok then return nil, msg, path end
  ok, msg, path = M.check_thresholds(a.thresholds, "thresholds", "thresholds config is not valid: ")
  if not ok then return nil, msg, path end
  ok, msg, path = M.check_thresholds(a.targetThresholds, "targetThresholds",
    "targetThresholds config is not valid: ")
  if not ok then return nil, msg, path end
  local low, high = keys(a.thresholds), keys(a.targetThresholds)
  if #low ~= #high then
    return nil, "thresholds and targetThresholds configured different resources", "targetThresholds"
  end
  for _, name in ipairs(low) do
    local target = a.targetThresholds[name]
    if target == nil then
      return nil, "thresholds and targetThresholds configured different resources", "targetThresholds"
    elseif a.thresholds[name] > target and not a.useDeviationThresholds then
      return nil, string.format("thresholds' %s percentage is greater than targetThresholds'", name),
        field("thresholds", name)
    end
  end
  local mu = a.metricsUtilization
  if mu ~= nil then
    if mu.source == "KubernetesMetrics" and mu.metricsServer then
      return nil, 'it is not allowed to set both "KubernetesMetrics" source and metricsServer',
        "metricsUtilization"
    end
    if mu.source == "KubernetesMetrics" and mu.prometheus ~= nil then
      return nil, 'prometheus configuration is not allowed to set when source is set to "KubernetesMetrics"',
        "metricsUtilization.prometheus"
    end
    if mu.source == "Prometheus" and (mu.prometheus == nil or (mu.prometheus.query or "") == "") then
      return nil, 'prometheus query is required when metrics source is set to "Prometheus"',
        mu.prometheus == nil and "metricsUtilization" or "metricsUtilization.prometheus"
    end
    -- plugin build (lownodeutilization.go)
    if mu.source == "Prometheus" then
      for _, which in ipairs({ "thresholds", "targetThresholds" }) do
        local names = keys(a[which])
        if #names ~= 1 or names[1] ~= METRIC_RESOURCE then
          return nil, string.format('%s are expected to specify a single instance of "%s" resource, got [%s] instead',
            which, METRIC_RESOURCE, table.concat(names, " ")), which
        end
      end
    end
    -- an unknown or empty source fails at each run, as upstream's
    -- usageClientForMetrics does, not at load
  end
  return true
end

-- The thresholds' resources plus cpu, memory and pods.
function M.resources(thresholds)
  local out, seen = {}, {}
  for _, r in ipairs(BASIC) do
    out[#out + 1] = r
    seen[r] = true
  end
  for _, r in ipairs(keys(thresholds)) do
    if not seen[r] then
      out[#out + 1] = r
      seen[r] = true
    end
  end
  return out
end

-- The source (KubernetesMetrics or requests) or a plugin failure
-- (usageClientForMetrics, run at each Balance upstream).
local function usage_source(a)
  local mu = a.metricsUtilization
  local function fail(why) return nil, "error initializing usage client: " .. why end
  if mu == nil then return "requests" end
  if mu.metricsServer or mu.source == "KubernetesMetrics" then
    if not ebb.metrics_provider("KubernetesMetrics") then
      return fail("metrics client not initialized (the policy enables no KubernetesMetrics "
        .. "metrics provider: metricsProviders: [{source: KubernetesMetrics}])")
    end
    return "metrics"
  end
  if mu.source == "Prometheus" then
    return nil, string.format("the Prometheus metrics source needs a Prometheus server to run "
      .. "the query %q; ebb does not query Prometheus: use source KubernetesMetrics (NodeMetrics "
      .. "and PodMetrics) or leave metricsUtilization out (requests)", mu.prometheus.query)
  end
  if (mu.source or "") ~= "" then return fail("unrecognized metrics source") end
  return fail("metrics source is empty")
end

-- evictPods for one source node: pods already filtered (Filter, namespace,
-- taints of the destinations) and sorted. Returns "total-limit" when the
-- plugin has to stop.
function M.evict_from(ctx, u, node, pods, limit)
  if #pods == 0 or not u:continues(node) then return end
  local evicted = 0
  for _, pod in pods:iter() do
    if limit ~= nil and evicted >= limit then break end
    if ctx.evictor:pre_eviction_filter(pod) then
      local usage, why = u:pod_usage(pod)
      if usage == nil then
        ebb.note(string.format("pod %s not evicted: %s", pod.key, why), node)
      else
        local ok, refusal = ctx.evictor:evict(pod, { reason = u:explain(node) })
        if ok then
          evicted = evicted + 1
          if not u:take(pod) then break end
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

function M.balance(ctx, nodes)
  local a = ctx.args
  local source, err = usage_source(a)
  if source == nil then return false, err end
  local u <close> = ebb.node_usage(nodes, { resources = M.resources(a.thresholds), source = source })
  -- usageClient.sync fails on the first node (or resource) the metrics miss
  local missing = u:skipped()[1]
  if missing ~= nil then return false, "error getting node usage: " .. missing.reason end
  u:set_thresholds(a.thresholds, a.targetThresholds, a.useDeviationThresholds)
  local low, high = u:classify("spread")
  local stop = M.nothing_to_do(u, low, high, a.numberOfNodes,
    "All nodes are under target utilization, nothing to do here")
  if stop then
    ebb.note(stop)
    return
  end
  local limit = a.evictionLimits and a.evictionLimits.node
  local exclude = a.evictableNamespaces and a.evictableNamespaces.exclude
  local query = { filter = true, namespaces = exclude and { exclude = exclude } or nil }
  for _, node in u:move("over", "under", { order = "descending", target = true }):iter() do
    local pods = u:candidates(ebb.pods(node, query)):sort("priority")
    if M.evict_from(ctx, u, node, pods, limit) == "total-limit" then return end
  end
end

return M
