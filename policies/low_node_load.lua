-- LowNodeLoad (balance): Koordinator's load-aware balancing. Nodes whose
-- measured usage (Koordinator NodeMetric, or metrics.k8s.io when a node has
-- none) is over the high thresholds give pods up, while nodes under the low
-- thresholds can take them. Semantics of koordinator-sh/koordinator v1.8.0
-- pkg/descheduler/framework/plugins/loadaware (args, defaults, conversion
-- and validation from pkg/descheduler/apis/config). Using metrics.k8s.io
-- for a node without a NodeMetric is ebb's: Koordinator skips the node.
--
-- The counting is C (ebb.node_loads: usage, thresholds of raw allocatable,
-- classification, capacity, fit with headroom, the pod order); this file
-- holds the args, the node pools, the anomaly detectors and the loop.
--
-- Where Koordinator decides by Go map or unstable sort order, ebb decides
-- by name: pools' nodes, classes and targets are in node-name order,
-- resources in name order, and ties between pods end on namespace/name.
-- Where Koordinator v1.8.0 would crash (an anomalyCondition without a
-- timeout dereferences a nil pointer), ebb uses the detector's own 60s.
local ebb = require("ebb")
local A = ebb.args

local M = { name = "LowNodeLoad" }

local DEFAULT_POOL = "__default_node_pool__"
-- defaultLoadAnomalyCondition (v1alpha2/defaults.go)
local DEFAULT_ANOMALY = { timeout = 60, consecutiveAbnormalities = 5, consecutiveNormalities = 3 }
-- anomaly.BasicDetector's own timeout when none is configured
local DETECTOR_TIMEOUT = 60
local NEVER = math.maxinteger

local function percents() return A.map(A.number()) end

local function anomaly_condition()
  return A.object({
    timeout = A.duration(),
    consecutiveAbnormalities = A.uint({ max = 4294967295 }),
    consecutiveNormalities = A.uint({ max = 4294967295 }),
  })
end

M.args = {
  paused = A.bool(),
  dryRun = A.bool(),
  numberOfNodes = A.int32(),
  nodeMetricExpirationSeconds = A.int(),
  evictableNamespaces = A.namespaces(),
  nodeSelector = A.label_selector(),
  podSelectors = A.list(A.object({ name = A.string(), selector = A.label_selector() })),
  nodeFit = A.bool(),
  useDeviationThresholds = A.bool(),
  highThresholds = percents(),
  lowThresholds = percents(),
  prodHighThresholds = percents(),
  prodLowThresholds = percents(),
  resourceWeights = A.map(A.int()),
  anomalyCondition = anomaly_condition(),
  detectorCacheTimeout = A.duration(),
  nodePools = A.list(A.object({
    name = A.string(),
    nodeSelector = A.label_selector(),
    useDeviationThresholds = A.bool(),
    highThresholds = percents(),
    lowThresholds = percents(),
    prodHighThresholds = percents(),
    prodLowThresholds = percents(),
    resourceWeights = A.map(A.int()),
    anomalyCondition = anomaly_condition(),
  })),
}

-- ---- defaults and pools ------------------------------------------------------

local function copy(t)
  local out = {}
  for k, v in pairs(t or {}) do out[k] = v end
  return out
end

-- The weights of SetDefaults_LowNodeLoadArgs: cpu and memory, plus every
-- resource of the low and high thresholds, weigh 1 unless given a weight
-- above 0; other given weights stay as written. Only the top level's: a
-- pool's own weights are taken as written (SetDefaults_LowNodeLoadNodePools).
local function default_weights(given, low, high)
  local defaults = { cpu = 1, memory = 1 }
  for k in pairs(low or {}) do defaults[k] = 1 end
  for k in pairs(high or {}) do defaults[k] = 1 end
  if given == nil then return defaults end
  local w = copy(given)
  for k, v in pairs(defaults) do
    if (w[k] or 0) <= 0 then w[k] = v end
  end
  return w
end

-- A pool's anomalyCondition: none inherits the top level's; zero counts
-- inherit the top level's counts; the timeout is never inherited.
local function pool_anomaly(given, top)
  if given == nil then return top end
  local c = copy(given)
  if (c.consecutiveAbnormalities or 0) == 0 then c.consecutiveAbnormalities = top.consecutiveAbnormalities end
  if (c.consecutiveNormalities or 0) == 0 then c.consecutiveNormalities = top.consecutiveNormalities end
  return c
end

local THRESHOLD_FIELDS = {
  { "low", "lowThresholds" }, { "high", "highThresholds" },
  { "prod_low", "prodLowThresholds" }, { "prod_high", "prodHighThresholds" },
}

-- The effective configuration: v1alpha2 defaults, the pools inheriting
-- what they leave unset (a map left out, not one written empty; the
-- selector and useDeviationThresholds are never inherited), and the
-- conversion's default pool first (conversion_plugins.go prepends
-- "__default_node_pool__", with the top-level selector, thresholds,
-- weights and anomaly condition, to the pools given). Each pool remembers
-- where each threshold map was written (`from`), so validation errors
-- point at the user's line.
function M.resolve(a)
  local r = {
    paused = a.paused or false,
    dryRun = a.dryRun or false,
    numberOfNodes = a.numberOfNodes or 0,
    nodeMetricExpirationSeconds = a.nodeMetricExpirationSeconds or 180,
    nodeFit = a.nodeFit ~= false,
    detectorCacheTimeout = a.detectorCacheTimeout or 300,
    evictableNamespaces = a.evictableNamespaces,
    selectors = {},
    pools = {},
  }
  for _, ps in ipairs(a.podSelectors or {}) do
    if ps.selector ~= nil then r.selectors[#r.selectors + 1] = ps.selector end
  end
  -- SetDefaults_LowNodeLoadArgs: an if / else-if. A written anomalyCondition
  -- gets its consecutiveAbnormalities defaulted when it has none, else its
  -- consecutiveNormalities when it has none: written without either, it
  -- keeps consecutiveNormalities 0, which validation refuses. A missing
  -- timeout stays unset (the detector's own 60s).
  local anomaly
  if a.anomalyCondition == nil then
    anomaly = copy(DEFAULT_ANOMALY)
  else
    anomaly = copy(a.anomalyCondition)
    anomaly.consecutiveAbnormalities = anomaly.consecutiveAbnormalities or 0
    anomaly.consecutiveNormalities = anomaly.consecutiveNormalities or 0
    if anomaly.consecutiveAbnormalities == 0 then
      anomaly.consecutiveAbnormalities = DEFAULT_ANOMALY.consecutiveAbnormalities
    elseif anomaly.consecutiveNormalities == 0 then
      anomaly.consecutiveNormalities = DEFAULT_ANOMALY.consecutiveNormalities
    end
  end
  local weights = default_weights(a.resourceWeights, a.lowThresholds, a.highThresholds)
  local top = {
    name = DEFAULT_POOL, default = true, selector = a.nodeSelector,
    deviation = a.useDeviationThresholds or false,
    weights = weights, anomaly = anomaly, from = {}, anomaly_from = "anomalyCondition",
  }
  for _, f in ipairs(THRESHOLD_FIELDS) do
    top[f[1]] = a[f[2]] or {}
    top.from[f[1]] = f[2]
  end
  r.pools[1] = top
  for i, p in ipairs(a.nodePools or {}) do
    local base = A.join("nodePools", i)
    local pool = {
      name = p.name or "", index = i - 1, selector = p.nodeSelector,
      deviation = p.useDeviationThresholds or false,
      anomaly = pool_anomaly(p.anomalyCondition, anomaly),
      anomaly_from = p.anomalyCondition and (base .. ".anomalyCondition") or "anomalyCondition",
      weights = p.resourceWeights or weights,
      from = {},
    }
    for _, f in ipairs(THRESHOLD_FIELDS) do
      if p[f[2]] == nil then
        pool[f[1]], pool.from[f[1]] = top[f[1]], top.from[f[1]]
      else
        pool[f[1]], pool.from[f[1]] = p[f[2]], base .. "." .. f[2]
      end
    end
    r.pools[#r.pools + 1] = pool
  end
  return r
end

-- ---- validation (validation_loadaware.go) -------------------------------------

local function negative(pool, which)
  local m = pool[which]
  for _, k in ipairs(ebb.keys(m)) do
    if m[k] < 0 then
      return string.format("invalid value %g: percentage must be greater than or equal to 0", m[k]),
        A.join(pool.from[which], k)
    end
  end
end

-- A percentage of `lo` above the one of `hi` (both as the pool has them,
-- inherited or not), pointing at whichever of the two the pool itself wrote.
local function above(pool, lo, hi, detail)
  local low, high = pool[lo], pool[hi]
  for _, k in ipairs(ebb.keys(low)) do
    if high[k] ~= nil and low[k] > high[k] then
      local at = pool.from[lo]
      if pool.index and not at:find("^nodePools") and pool.from[hi]:find("^nodePools") then
        at = pool.from[hi]
      end
      return string.format("invalid value %g: %s", low[k], detail), A.join(at, k)
    end
  end
end

-- ValidateLowLoadUtilizationArgs over the converted pools (the default pool
-- first), in its order of checks.
function M.validate(a)
  local r = M.resolve(a)
  if r.numberOfNodes < 0 then
    return nil, string.format("invalid value %d: must be greater than or equal to 0", r.numberOfNodes),
      "numberOfNodes"
  end
  -- Koordinator names the field nodeMetricExpiredSeconds in this message
  if a.nodeMetricExpirationSeconds ~= nil and a.nodeMetricExpirationSeconds <= 0 then
    return nil, string.format("invalid value %d: nodeMetricExpiredSeconds should be a positive value",
      a.nodeMetricExpirationSeconds), "nodeMetricExpirationSeconds"
  end
  -- evictableNamespaces, podSelectors and the pools' nodeSelector are
  -- checked while the args are decoded
  for _, pool in ipairs(r.pools) do
    local checks = {
      function() return negative(pool, "high") end,
      function() return negative(pool, "low") end,
      function()
        return above(pool, "low", "high", "low percentage must be less than or equal to highThresholds")
      end,
      function() return negative(pool, "prod_high") end,
      function()
        return above(pool, "prod_high", "high",
          "node percentage must be greater than or equal to prodHighThresholds")
      end,
      function() return negative(pool, "prod_low") end,
      function()
        return above(pool, "prod_low", "prod_high",
          "low percentage must be less than or equal to prodHighThresholds")
      end,
    }
    for _, check in ipairs(checks) do
      local msg, at = check()
      if msg then return nil, msg, at end
    end
    for _, count in ipairs({ "consecutiveAbnormalities", "consecutiveNormalities" }) do
      if (pool.anomaly[count] or 0) <= 0 then
        return nil, count .. " must be greater than 0", pool.anomaly_from .. "." .. count
      end
    end
  end
  return true
end

-- ---- the anomaly detector (utils/anomaly/basic_detector.go) ------------------
--
-- One state machine per node, OK <-> Anomaly, kept across cycles in
-- ctx.state like Koordinator's go-cache: an entry not refreshed (a refresh
-- happens when the node is a source) for detectorCacheTimeout is dropped.
-- Counts are in cycles; the Anomaly state lasts `timeout` on the engine
-- clock (ebb.now()), or until more than consecutiveNormalities normal marks.
-- Reset() of a detector that is already OK changes nothing: a node's
-- abnormal count survives cycles where it is low or in between.

local OK, ANOMALY = "ok", "anomaly"

local D = {}
M.detector = D

function D.new(cond)
  local timeout = cond.timeout
  if timeout == nil or timeout <= 0 then timeout = DETECTOR_TIMEOUT end
  return {
    state = OK, abnormal = 0, normal = 0, expires = nil, timeout = timeout,
    max_abnormal = cond.consecutiveAbnormalities or 0,
    max_normal = cond.consecutiveNormalities or 0,
  }
end

local function new_generation(d, now)
  d.abnormal, d.normal = 0, 0
  d.expires = d.state == ANOMALY and now + d.timeout or nil
end

local function set_state(d, s, now)
  if d.state == s then return end
  d.state = s
  new_generation(d, now)
end

local function current(d, now)
  if d.state == OK then
    if d.expires ~= nil and d.expires < now then new_generation(d, now) end
  elseif d.expires < now or d.normal > d.max_normal then
    set_state(d, OK, now)
  end
  return d.state
end

-- Mark(normality) -> the state after it
function D.mark(d, normal, now)
  local s = current(d, now)
  if normal then
    d.normal, d.abnormal = d.normal + 1, 0
    if s == ANOMALY and d.normal > d.max_normal then set_state(d, OK, now) end
  else
    d.abnormal, d.normal = d.abnormal + 1, 0
    if s == OK and d.abnormal > d.max_abnormal then set_state(d, ANOMALY, now) end
  end
  return current(d, now)
end

function D.reset(d, now) set_state(d, OK, now) end

-- the go-cache of detectors
local function cache_get(cache, name, now)
  local e = cache[name]
  if e == nil then return nil end
  if e.until_ < now then
    cache[name] = nil
    return nil
  end
  return e.d
end

local function cache_set(cache, name, d, now, ttl)
  cache[name] = { d = d, until_ = ttl > 0 and now + ttl or NEVER }
end

-- filterRealAbnormalNodes: the sources whose detector says Anomaly after
-- one more abnormal mark. consecutiveAbnormalities 1 bypasses detection.
local function abnormal_nodes(cache, sources, cond, now, ttl)
  if cond.consecutiveAbnormalities == 1 then return sources, {} end
  local out, waiting = {}, {}
  for _, n in ipairs(sources) do
    local d = cache_get(cache, n.name, now) or D.new(cond)
    if D.mark(d, false, now) == ANOMALY then
      out[#out + 1] = n
    else
      waiting[#waiting + 1] = string.format("%s: %d of %d consecutive abnormalities", n.name,
        d.abnormal, d.max_abnormal + 1)
    end
    cache_set(cache, n.name, d, now, ttl)
  end
  return out, waiting
end

local function reset_nodes(cache, nodes, now)
  for _, n in ipairs(nodes) do
    local d = cache_get(cache, n.name, now)
    if d then D.reset(d, now) end
  end
end

local function mark_normal(cache, nodes, now)
  for _, n in ipairs(nodes) do
    local d = cache_get(cache, n.name, now)
    if d then D.mark(d, true, now) end
  end
end

-- ---- one pool ------------------------------------------------------------------

local function list(...)
  local out = {}
  for _, l in ipairs({ ... }) do
    for _, n in l:iter() do out[#out + 1] = n end
  end
  return out
end

local function note(run, msg, node)
  local key = msg .. "\0" .. (node or "")
  if run.noted[key] then return end
  run.noted[key] = true
  ebb.note(msg, node)
end

-- evictPods for one source node. Once the evictor refuses for the total
-- limit, run.limited is set and no pass evicts again this cycle (every
-- later Evict would fail, as upstream goes on to find); pools still run
-- for their detectors.
local function evict_pods(run, set, src, pods, available, prod)
  local ctx, r = run.ctx, run.r
  local names = set:resources()
  local detectors = prod and run.state.prod or run.state.node
  for _, pod in pods:iter() do
    -- continueEvictionCond
    local over, why = set:overutilized(src, { prod = prod })
    if not over then
      reset_nodes(detectors, { src }, run.now)
      return
    end
    for _, res in ipairs(names) do
      if (available[res] or 0) <= 0 then return end
    end
    local reason = "node is overutilized, " .. why
    if r.dryRun then
      note(run, "dry run: would evict " .. pod.key .. " (" .. reason .. ")", src.name)
    else
      local ok, whynot = ctx.evictor:evict(pod, { reason = reason })
      if not ok then
        if whynot == "total-limit" then
          run.limited = true
          return
        end
        if whynot == "node-limit" then return end
        goto next
      end
    end
    set:evicted(src, pod, available, { prod = prod })
    ::next::
  end
end

-- balancePods over the sources, in the order given; nothing without a
-- target.
local function balance_pods(run, pool, set, sources, targets, available, prod)
  local r = run.r
  if #targets == 0 then return end
  for _, src in ipairs(sources) do
    if run.limited then return end
    local pods = ebb.pods(src, { filter = true, namespaces = r.evictableNamespaces })
    local removable = set:removable(src, pods, targets,
      { prod = prod, node_fit = r.nodeFit, selectors = r.selectors })
    if #removable > 0 then
      local ordered = set:order(src, removable, pool.weights, { prod = prod })
      evict_pods(run, set, src, ordered, available, prod)
    end
  end
end

-- evictPodsFromSourceNodes: the node pass into low and both-low nodes, then
-- the prod pass into prod-low and both-low nodes, the both-low capacity
-- capped by what the node pass left.
local function evict_from_sources(run, pool, set, c, sources, prod_sources)
  local names = set:resources()
  local total = set:available(c.low)
  local both_total = set:available(c.both)
  local prod_available = set:available(c.prod_low, { prod = true })
  local prod_both = set:available(c.both, { prod = true })
  local node_total = {}
  for _, res in ipairs(names) do node_total[res] = total[res] + both_total[res] end
  balance_pods(run, pool, set, sources, list(c.low, c.both), node_total, false)
  local prod_total = {}
  for _, res in ipairs(names) do
    if both_total[res] > node_total[res] then both_total[res] = node_total[res] end
    prod_total[res] = prod_available[res] + math.min(prod_both[res], both_total[res])
  end
  balance_pods(run, pool, set, prod_sources, list(c.prod_low, c.both), prod_total, true)
end

local function pool_note(run, pool, msg)
  note(run, "nodePool " .. pool.name .. ": " .. msg)
end

-- processOneNodePool, in Koordinator v1.8.0's order: the sources' detectors
-- are marked before anything looks for underutilized nodes, and nodes low
-- only by their prod usage count as underutilized.
local function process_pool(run, pool, nodes)
  local r, st, now = run.r, run.state, run.now
  if pool.selector ~= nil then
    nodes = nodes:filter(function(n)
      return not run.processed[n.name] and pool.selector:matches(n)
    end)
  end
  if #nodes == 0 then
    pool_note(run, pool, "no nodes to process")
    return
  end
  local set <close> = ebb.node_loads(nodes, {
    low = pool.low, high = pool.high, prod_low = pool.prod_low, prod_high = pool.prod_high,
    deviation = pool.deviation, expiration = r.nodeMetricExpirationSeconds,
  })
  for _, s in ipairs(set:skipped()) do
    note(run, "node skipped: " .. s.why, s.node)
  end
  local c = {
    low = set:nodes("low"), both = set:nodes("both_low"), prod_low = set:nodes("prod_low"),
    high = set:nodes("high"), prod_high = set:nodes("prod_high"),
  }
  local high, prod_high = list(c.high), list(c.prod_high)
  if #high == 0 and #prod_high == 0 then
    pool_note(run, pool, "no node is over its high thresholds")
    return
  end
  local ttl = r.detectorCacheTimeout
  local sources, waiting = abnormal_nodes(st.node, high, pool.anomaly, now, ttl)
  local prod_sources, prod_waiting = abnormal_nodes(st.prod, prod_high, pool.anomaly, now, ttl)
  if #sources == 0 and #prod_sources == 0 then
    for _, w in ipairs(prod_waiting) do waiting[#waiting + 1] = w .. " (prod)" end
    pool_note(run, pool, "no node was detected as anomalous yet (" .. table.concat(waiting, "; ") .. ")")
    return
  end
  local low, prod_low, both = list(c.low), list(c.prod_low), list(c.both)
  local all_low = #low + #prod_low + #both
  if all_low == 0 then
    pool_note(run, pool, "no node is underutilized")
    return
  end
  reset_nodes(st.node, low, now)
  reset_nodes(st.prod, prod_low, now)
  reset_nodes(st.node, both, now)
  if all_low <= r.numberOfNodes then
    pool_note(run, pool, string.format("%d underutilized node(s), not more than numberOfNodes (%d)",
      all_low, r.numberOfNodes))
    return
  end
  if all_low == #nodes then
    pool_note(run, pool, "all nodes are underutilized")
    return
  end
  if #sources > 0 then sources = list(set:sort(sources, pool.weights)) end
  if #prod_sources > 0 then prod_sources = list(set:sort(prod_sources, pool.weights, { prod = true })) end
  evict_from_sources(run, pool, set, c, sources, prod_sources)
  mark_normal(st.node, sources, now)
  mark_normal(st.prod, prod_sources, now)
  -- the node pass's sources only (not the prod ones), as upstream
  for _, n in ipairs(high) do run.processed[n.name] = true end
end

function M.balance(ctx, nodes)
  local st = ctx.state
  st.resolved = st.resolved or M.resolve(ctx.args)
  st.node = st.node or {}
  st.prod = st.prod or {}
  local r = st.resolved
  if r.paused then
    ebb.note("LowNodeLoad is paused and will do nothing")
    return
  end
  local run = { ctx = ctx, r = r, state = st, now = ebb.now(), processed = {}, noted = {} }
  for _, pool in ipairs(r.pools) do process_pool(run, pool, nodes) end
end

return M
