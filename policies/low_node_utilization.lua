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
-- message, evicting nothing. With the Prometheus source (the policy's
-- Prometheus metrics provider), the usage is the instant query's value per
-- node (MetricResource, in percent of 100): a query that fails, a result
-- that is no vector, a node without a sample or a value outside [0, 1]
-- fails the plugin for the cycle. What evicting a pod frees is then not
-- known: one pod per overutilized node per cycle, unless evictionLimits.node
-- says how many.
local ebb = require("ebb")
local A = ebb.args
local nu = require("_nodeutilization")

local METRIC_RESOURCE = "MetricResource"

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
    evictableNamespaces = nu.evictable_namespaces(),
    evictionLimits = A.object({ node = A.uint() }),
  },
}

-- ValidateLowNodeUtilizationArgs, then what NewLowNodeUtilization refuses
-- when it builds the plugin (Prometheus thresholds, the metrics source).
function M.validate(a)
  local ok, msg, path = nu.check_namespaces(a)
  if not ok then return nil, msg, path end
  ok, msg, path = nu.check_thresholds(a.thresholds, "thresholds", "thresholds config is not valid: ")
  if not ok then return nil, msg, path end
  ok, msg, path = nu.check_thresholds(a.targetThresholds, "targetThresholds",
    "targetThresholds config is not valid: ")
  if not ok then return nil, msg, path end
  local low, high = ebb.keys(a.thresholds), ebb.keys(a.targetThresholds)
  if #low ~= #high then
    return nil, "thresholds and targetThresholds configured different resources", "targetThresholds"
  end
  for _, name in ipairs(low) do
    local target = a.targetThresholds[name]
    if target == nil then
      return nil, "thresholds and targetThresholds configured different resources", "targetThresholds"
    elseif a.thresholds[name] > target and not a.useDeviationThresholds then
      return nil, string.format("thresholds' %s percentage is greater than targetThresholds'", name),
        A.join("thresholds", name)
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
        local names = ebb.keys(a[which])
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

-- The usage set of the metrics source, or nil and the plugin's failure
-- (upstream: usageClientForMetrics, then the usage client's sync, at each
-- Balance).
local function usage_of(a, nodes)
  local mu = a.metricsUtilization
  local function fail(why) return nil, "error initializing usage client: " .. why end
  if mu == nil then
    return ebb.node_usage(nodes, { resources = nu.resources(a.thresholds) })
  end
  if mu.metricsServer or mu.source == "KubernetesMetrics" then
    if not ebb.metrics_provider("KubernetesMetrics") then
      return fail("metrics client not initialized (the policy enables no KubernetesMetrics "
        .. "metrics provider: metricsProviders: [{source: KubernetesMetrics}])")
    end
    return ebb.node_usage(nodes, { resources = nu.resources(a.thresholds), source = "metrics" })
  end
  if mu.source == "Prometheus" then
    local samples, why, stage = ebb.prometheus_query(mu.prometheus.query)
    if samples == nil then
      if stage == "client" then return fail(why) end
      return nil, "error getting node usage: " .. why
    end
    return ebb.node_usage(nodes, { resources = { METRIC_RESOURCE }, source = "prometheus",
                                   samples = samples })
  end
  if (mu.source or "") ~= "" then return fail("unrecognized metrics source") end
  return fail("metrics source is empty")
end

-- The query `ebb record --policy` stores and `ebb run` asks.
function M.prometheus_queries(a)
  local mu = a.metricsUtilization
  if mu ~= nil and mu.source == "Prometheus" then return { mu.prometheus.query } end
  return {}
end

function M.balance(ctx, nodes)
  local a = ctx.args
  local u <close>, err = usage_of(a, nodes)
  if u == nil then return false, err end
  -- usageClient.sync fails on the first node (or resource) the metrics miss
  local missing = u:skipped()[1]
  if missing ~= nil then return false, "error getting node usage: " .. missing.reason end
  u:set_thresholds(a.thresholds, a.targetThresholds, a.useDeviationThresholds)
  local low, high = u:classify("spread")
  local stop = nu.nothing_to_do(u, low, high, a.numberOfNodes,
    "All nodes are under target utilization, nothing to do here")
  if stop then
    ebb.note(stop)
    return
  end
  local limit = a.evictionLimits and a.evictionLimits.node
  local query = nu.candidates_query(a)
  for _, node in u:move("over", "under", { order = "descending", target = true }):iter() do
    local pods = u:candidates(ebb.pods(node, query)):sort("priority")
    if nu.evict_from(ctx, u, node, pods, limit) == "total-limit" then return end
  end
end

return M
