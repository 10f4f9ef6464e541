-- LowNodeUtilization through the real engine on the clusters of
-- spec/fixtures/build_utilization.py (allocatable 4 cpu, 16Gi, 50 pods per
-- node unless said otherwise). Expected plans follow
-- kubernetes-sigs/descheduler v0.36 pkg/framework/plugins/nodeutilization
-- (lownodeutilization.go, nodeutilization.go, usageclients.go,
-- validation.go and their tests): usage is the requests of the occupying
-- pods (protected ones included), a node is underutilized when schedulable
-- and every thresholded resource <= threshold, overutilized when one is >
-- target; sources most used first, pods lowest priority first (then
-- BestEffort < Burstable < Guaranteed, then namespace/name), evicted while
-- the source is above its target and the underutilized nodes can take
-- every resource.
local h = require("spec.helpers")

local SHOP = "spec/fixtures/utilization.json"
local EDGE = "spec/fixtures/utilization-edge.json"
local METRICS = "spec/fixtures/utilization-metrics.json"
local GPU = "spec/fixtures/utilization-gpu.json"

local function run(args, o)
  o = o or {}
  return h.simulate{ snapshot = o.snapshot or SHOP, plugin = "LowNodeUtilization", ext = "balance",
                     args = args, evictor = o.evictor, top = o.top }
end

-- worker-a-1 (80% cpu), in eviction order
local REPORT = "shop/report-api-7f9c6d5b8-l4k3j"       -- preemptible, 500m, tolerates the batch node
local CART_BE = "shop/cart-7c9d4f6b8-h5j2w"            -- BestEffort
local CART_K = "shop/cart-7c9d4f6b8-k8m2n"             -- 400m
local SEARCH = "shop/search-5b8c7d6f9-r4t6y"           -- 500m, only fits worker-a-1 (nvme affinity)
local CATALOG_K = "shop/catalog-5f7b8c9d4-k2x9q"       -- 600m Guaranteed, PDB allows 0
local CHECKOUT_P = "shop/checkout-6d5c4b3a2-p9o8i"     -- business-high, 500m
local DEBUG = "default/debug-tools"                    -- bare, 100m
-- worker-a-2 (70% cpu)
local TRANSCODER = "media/transcoder-84c6d5f7b-t6y7u"  -- 800m, tolerates dedicated but not spot
local CART_Z = "shop/cart-7c9d4f6b8-z8r2t"             -- 400m
local RECOMMENDER = "shop/recommender-9a8b7c6d5-u7i8o" -- 300m, a lone wildcard toleration
local CATALOG_M = "shop/catalog-5f7b8c9d4-m4n7p"       -- 600m Guaranteed
local CHECKOUT_W = "shop/checkout-6d5c4b3a2-w3e4r"     -- business-high, 500m

local T = { cpu = 20, memory = 20 }
local TT = { cpu = 50, memory = 50 }

describe("LowNodeUtilization", function()
  describe("with requests", function()
    it("drains the hottest node first, lowest priority first, until it is below target", function()
      -- worker-a-1: 3200m -> 2700 -> 2700 (BestEffort frees no cpu) -> 2300
      -- -> 1800 <= 2000; worker-a-2: 2800 -> 2000. worker-b-1 and
      -- worker-c-1 take them; worker-b-2 (40%) is neither; worker-c-2 is
      -- cordoned. DaemonSets, coredns, the emptyDir pod and the bare pod
      -- count in the 80% but are never candidates.
      local plan = run{ thresholds = T, targetThresholds = TT }
      assert.same({ REPORT, CART_BE, CART_K, SEARCH, TRANSCODER }, plan:pods())
      assert.same({}, plan:refused())
      assert.same({}, plan.errors)
      assert.same({
        "node worker-a-1 is above its target utilization: cpu 80.00% > 50.00% (+1200m)",
        "node worker-a-1 is above its target utilization: cpu 67.50% > 50.00% (+700m)",
        "node worker-a-1 is above its target utilization: cpu 67.50% > 50.00% (+700m)",
        "node worker-a-1 is above its target utilization: cpu 57.50% > 50.00% (+300m)",
        "node worker-a-2 is above its target utilization: cpu 70.00% > 50.00% (+800m)",
      }, plan:reasons())
      assert.equal("worker-a-1", plan.evictions[1].node)
      assert.equal("LowNodeUtilization", plan.evictions[1].plugin)
    end)

    it("stops when the underutilized nodes cannot take more cpu", function()
      -- targets 20%: worker-b-1 and worker-c-1 can take 400m + 600m; the
      -- fourth eviction overdraws it, worker-a-2 is not touched
      local plan = run{ thresholds = { cpu = 10, memory = 10 }, targetThresholds = { cpu = 20, memory = 20 } }
      assert.same({ REPORT, CART_BE, CART_K, SEARCH }, plan:pods())
    end)

    it("evicts what the Filter chain lets through", function()
      -- only worker-a-1's coredns and debug-tools are outside shop and media:
      -- both protected by default; without SystemCriticalPods coredns goes,
      -- without FailedBarePods the Running bare pod stays (only failed bare
      -- pods are freed)
      local args = { thresholds = T, targetThresholds = TT, evictableNamespaces = { exclude = { "shop", "media" } } }
      assert.same({}, run(args):pods())
      local plan = run(args, { evictor = {
        podProtections = { defaultDisabled = h.array{ "SystemCriticalPods", "FailedBarePods" } } } })
      assert.same({ "kube-system/coredns-5d78c9869d-x7k2p" }, plan:pods())
    end)

    it("does not use an unschedulable node as a destination", function()
      -- zone a and the cordoned worker-c-2 only: nothing is underutilized
      local plan = run({ thresholds = T, targetThresholds = TT },
        { top = { nodeSelector = "topology.kubernetes.io/zone!=eu-west-1b,workload!=batch" } })
      assert.same({}, plan:pods())
      assert.same({ "No node is underutilized, nothing to do here, you might tune your thresholds further" },
        plan:note_messages())
    end)

    it("evicts only pods that tolerate every taint of some destination", function()
      -- without zone b the only destination is worker-c-1 (dedicated=batch:
      -- NoSchedule, spot=true:PreferNoSchedule). report-api tolerates both;
      -- the transcoder tolerates dedicated but not the PreferNoSchedule one
      -- (every effect counts); the recommender's lone wildcard toleration
      -- tolerates both but is fewer than the node's two taints.
      local plan = run({ thresholds = T, targetThresholds = TT },
        { top = { nodeSelector = "topology.kubernetes.io/zone!=eu-west-1b" } })
      assert.same({ REPORT }, plan:pods())
    end)

    it("skips pods PreEvictionFilter refuses: nodeFit and a PDB", function()
      -- search only fits worker-a-1 (required nvme affinity); the catalog
      -- PDB refuses catalog-k2x9q and the next pod goes instead
      local plan = run({ thresholds = T, targetThresholds = TT }, { evictor = { nodeFit = true } })
      assert.same({ REPORT, CART_BE, CART_K, CHECKOUT_P, TRANSCODER }, plan:pods())
      assert.same({ CATALOG_K }, plan:refused("pdb"))
    end)

    it("stops when no more nodes than numberOfNodes are underutilized", function()
      local plan = run{ thresholds = T, targetThresholds = TT, numberOfNodes = 2 }
      assert.same({}, plan:pods())
      assert.same({ "Number of nodes underutilized (2) is less or equal than NumberOfNodes (2), nothing to do here" },
        plan:note_messages())
      plan = run{ thresholds = T, targetThresholds = TT, numberOfNodes = 1 }
      assert.same({ REPORT, CART_BE, CART_K, SEARCH, TRANSCODER }, plan:pods())
    end)

    it("stops a node at evictionLimits.node and goes on with the next", function()
      local plan = run{ thresholds = T, targetThresholds = TT, evictionLimits = { node = 2 } }
      assert.same({ REPORT, CART_BE, TRANSCODER }, plan:pods())
      assert.same({}, plan:refused())
      plan = run{ thresholds = T, targetThresholds = TT, evictionLimits = { node = 0 } }
      assert.same({}, plan:pods())
    end)

    it("moves on to the next node at the policy's per-node limit", function()
      local plan = run({ thresholds = T, targetThresholds = TT }, { top = { maxNoOfPodsToEvictPerNode = 1 } })
      assert.same({ REPORT, TRANSCODER }, plan:pods())
      assert.same({ CART_BE }, plan:refused("node-limit"))
    end)

    it("ends the plugin at the total limit", function()
      local plan = run({ thresholds = T, targetThresholds = TT }, { top = { maxNoOfPodsToEvictTotal = 3 } })
      assert.same({ REPORT, CART_BE, CART_K }, plan:pods())
      assert.same({ SEARCH }, plan:refused("total-limit"))
    end)

    it("leaves evictableNamespaces.exclude alone but counts their pods", function()
      -- worker-a-2 without the transcoder: 2800 -> 2400 -> 2100, the catalog
      -- PDB refuses, checkout brings it to 1600
      local plan = run{ thresholds = T, targetThresholds = TT, evictableNamespaces = { exclude = { "media" } } }
      assert.same({ REPORT, CART_BE, CART_K, SEARCH, CART_Z, RECOMMENDER, CHECKOUT_W }, plan:pods())
      assert.same({ CATALOG_M }, plan:refused("pdb"))
      plan = run{ thresholds = T, targetThresholds = TT, evictableNamespaces = { exclude = { "shop" } } }
      assert.same({ TRANSCODER }, plan:pods())
    end)

    it("says when every node is under its target or every node is underutilized", function()
      -- worker-a-1 at exactly 80% is not above an 80% target
      local plan = run{ thresholds = T, targetThresholds = { cpu = 80, memory = 80 } }
      assert.same({}, plan:pods())
      assert.same({ "All nodes are under target utilization, nothing to do here" }, plan:note_messages())
      plan = run({ thresholds = { cpu = 100, memory = 100 }, targetThresholds = { cpu = 100, memory = 100 } },
        { top = { nodeSelector = "kubernetes.io/hostname!=worker-c-2" } })
      assert.same({}, plan:pods())
      assert.same({ "All nodes are underutilized, nothing to do here" }, plan:note_messages())
    end)

    it("takes usage equal to the threshold as underutilized and equal to the target as fine", function()
      -- worker-b-2 at exactly 40% is underutilized: 3 such nodes > numberOfNodes 2;
      -- worker-a-2 at exactly 70% is not above target, worker-a-1 is
      local args = { thresholds = { cpu = 40, memory = 40 }, targetThresholds = { cpu = 70, memory = 70 },
                     numberOfNodes = 2 }
      assert.same({ REPORT }, run(args):pods())
      args.thresholds = { cpu = 39.99, memory = 40 }
      assert.same({}, run(args):pods())
    end)
  end)

  describe("useDeviationThresholds", function()
    it("measures thresholds from the average usage", function()
      -- average cpu (80+70+10+40+5+5)/6 = 35%: under <= 25%, over > 45%,
      -- target 1800m
      local plan = run{ useDeviationThresholds = true, thresholds = { cpu = 10 }, targetThresholds = { cpu = 10 } }
      assert.same({ REPORT, CART_BE, CART_K, SEARCH, TRANSCODER, CART_Z }, plan:pods())
      assert.equal("node worker-a-1 is above its target utilization: cpu 80.00% > 45.00% (+1400m)",
        plan.evictions[1].reason)
    end)

    it("accepts thresholds above targets and clamps to [0, 100]", function()
      -- low = 35 - 30 = 5%: the only destination is worker-c-1, the tainted
      -- batch node, which only report-api tolerates
      local plan = run{ useDeviationThresholds = true, thresholds = { cpu = 30 }, targetThresholds = { cpu = 5 } }
      assert.same({ REPORT }, plan:pods())
      -- low = clamp(35 - 100) = 0: no node is at 0%
      plan = run{ useDeviationThresholds = true, thresholds = { cpu = 100 }, targetThresholds = { cpu = 100 } }
      assert.same({}, plan:pods())
    end)
  end)

  describe("floating-point boundaries", function()
    it("compares percentages the way float64 computes them", function()
      -- 560m of 4000m is 14.000000000000002%: not <= 14
      local plan = run({ thresholds = { cpu = 14 }, targetThresholds = { cpu = 66.6 } }, { snapshot = EDGE })
      assert.same({}, plan:pods())
      assert.same({ "No node is underutilized, nothing to do here, you might tune your thresholds further" },
        plan:note_messages())
    end)

    it("truncates the target capacity as upstream does", function()
      -- 66.6 * 0.01 * 4000 = 2663.9999999999995 -> 2663m: at 2664m edge-a is
      -- still above target, so a second worker goes
      local plan = run({ thresholds = { cpu = 29 }, targetThresholds = { cpu = 66.6 } }, { snapshot = EDGE })
      assert.same({ "api/worker-6b7c8d9e0-w00", "api/worker-6b7c8d9e0-w01" }, plan:pods())
      assert.equal("node edge-a is above its target utilization: cpu 66.60% > 66.60% (+1m)",
        plan.evictions[2].reason)
      -- 2964m is exactly 74.1%: not above a 74.1% target, above 74.09%
      plan = run({ thresholds = { cpu = 40 }, targetThresholds = { cpu = 74.1 } }, { snapshot = EDGE })
      assert.same({}, plan:pods())
      plan = run({ thresholds = { cpu = 40 }, targetThresholds = { cpu = 74.09 } }, { snapshot = EDGE })
      assert.same({ "api/worker-6b7c8d9e0-w00" }, plan:pods())
    end)
  end)

  describe("extended resources", function()
    local G = { ["nvidia.com/gpu"] = 30 }
    local GT = { ["nvidia.com/gpu"] = 50 }

    it("balances a thresholded extended resource and stops when it runs out", function()
      -- gpu-1 4/4 GPUs; gpu-2 1/4 can take one more (50% target = 2);
      -- cpu-1 has no GPUs: underutilized (no percentage is 0%) but takes
      -- none. The notebook requests no GPU and goes first by name.
      local plan = run({ thresholds = G, targetThresholds = GT }, { snapshot = GPU })
      assert.same({ "ml/notebook-4d3c2b1a0-n0b00", "ml/trainer-5e4d3c2b1-ta0" }, plan:pods())
      assert.equal("node gpu-1 is above its target utilization: nvidia.com/gpu 100.00% > 50.00% (+2)",
        plan.evictions[1].reason)
    end)

    it("evicts nothing when only nodes without the resource are underutilized", function()
      local plan = run({ thresholds = G, targetThresholds = GT },
        { snapshot = GPU, top = { nodeSelector = "kubernetes.io/hostname!=gpu-2" } })
      assert.same({}, plan:pods())
    end)
  end)

  describe("metricsUtilization", function()
    local KM = { source = "KubernetesMetrics" }
    local PROVIDER = { metricsProviders = h.array{ { source = "KubernetesMetrics" } } }
    local NO_POD_METRICS = "stream/ingest-8c7d6e5f4-a0a0a"

    -- m-3 has no NodeMetrics: leave it out of the node set
    local WITH_METRICS = { metricsProviders = PROVIDER.metricsProviders,
                           nodeSelector = "kubernetes.io/hostname!=m-3" }

    it("classifies by NodeMetrics and subtracts PodMetrics usage", function()
      -- m-1 uses 3400m (85%) though it requests 1000m; m-2 uses 600m
      local plan = run({ thresholds = T, targetThresholds = TT, metricsUtilization = KM },
        { snapshot = METRICS, top = WITH_METRICS })
      assert.same({ "stream/ingest-8c7d6e5f4-a1a1a", "stream/ingest-8c7d6e5f4-b2b2b" }, plan:pods())
      assert.same({
        "pod " .. NO_POD_METRICS .. " not evicted: the pod has no PodMetrics (metrics.k8s.io)",
      }, plan:note_messages())
      assert.equal("m-1", plan.notes[1].node)
      assert.same({}, plan.errors)
      assert.equal("node m-1 is above its target utilization: cpu 85.00% > 50.00% (+1400m)",
        plan.evictions[1].reason)
    end)

    it("stops at what the destinations can take, by their metrics", function()
      -- a 30% target: m-2 (600m used) alone can take 600m
      local plan = run({ thresholds = T, targetThresholds = { cpu = 30, memory = 50 }, metricsUtilization = KM },
        { snapshot = METRICS, top = WITH_METRICS })
      assert.same({ "stream/ingest-8c7d6e5f4-a1a1a" }, plan:pods())
    end)

    it("fails the plugin for the cycle when a node of the set has no NodeMetrics, as upstream", function()
      local plan = run({ thresholds = T, targetThresholds = TT, metricsUtilization = KM },
        { snapshot = METRICS, top = PROVIDER })
      assert.same({}, plan:pods())
      assert.equal(1, #plan.errors)
      assert.equal("LowNodeUtilization", plan.errors[1].plugin)
      assert.equal('error getting node usage: unable to find node "m-3" in the collected metrics',
        plan.errors[1].message)
    end)

    it("fails the plugin when the metrics lack a thresholded resource, as upstream", function()
      -- NodeMetrics carry cpu and memory only
      local plan = run({ thresholds = { cpu = 20, ["nvidia.com/gpu"] = 20 },
                         targetThresholds = { cpu = 50, ["nvidia.com/gpu"] = 50 }, metricsUtilization = KM },
        { snapshot = METRICS, top = WITH_METRICS })
      assert.same({}, plan:pods())
      assert.equal('error getting node usage: unable to find "nvidia.com/gpu" resource for collected "m-1" node metric',
        plan.errors[1].message)
    end)

    it("gives other evictions than requests on the same cluster", function()
      -- by requests m-2 (75%) is the source and m-3 (10%) the destination
      local plan = run({ thresholds = T, targetThresholds = TT }, { snapshot = METRICS })
      assert.same({ "stream/indexer-7b6c5d4e3-e5e5e" }, plan:pods())
    end)

    it("reads the deprecated metricsServer as KubernetesMetrics", function()
      local plan = run({ thresholds = T, targetThresholds = TT, metricsUtilization = { metricsServer = true } },
        { snapshot = METRICS, top = WITH_METRICS })
      assert.same({ "stream/ingest-8c7d6e5f4-a1a1a", "stream/ingest-8c7d6e5f4-b2b2b" }, plan:pods())
    end)

    it("fails the plugin when the policy enables no metrics provider", function()
      local plan = run({ thresholds = T, targetThresholds = TT, metricsUtilization = KM }, { snapshot = METRICS })
      assert.same({}, plan:pods())
      assert.equal(1, #plan.errors)
      assert.matches("^error initializing usage client: metrics client not initialized", plan.errors[1].message)
    end)

    it("fails every cycle, not at load, without a metrics source it knows, as upstream", function()
      -- usageClientForMetrics runs at each Balance: the policy loads
      for _, c in ipairs({ { {}, "metrics source is empty" },
                           { { source = "Datadog" }, "unrecognized metrics source" } }) do
        local plan = run({ thresholds = T, targetThresholds = TT, metricsUtilization = c[1] },
          { snapshot = METRICS, top = WITH_METRICS })
        assert.same({}, plan:pods())
        assert.equal("error initializing usage client: " .. c[2], plan.errors[1].message)
      end
    end)

  end)

  -- The Prometheus source against a real server (spec/prometheus_harness.lua:
  -- Debian's prometheus with backfilled series, asked at P.NOW). Usage is
  -- MetricResource = int(value * 100) of a capacity of 100 per node:
  -- worker-a-1 85, worker-a-2 60, worker-b-1 10, worker-b-2 40, worker-c-1
  -- 12, worker-c-2 5 (cordoned). With 20/50: worker-b-1 and worker-c-1 are
  -- underutilized, worker-a-1 and worker-a-2 over, in that order. What a
  -- pod frees is not known: one pod per overutilized node per cycle.
  describe("the Prometheus source", function()
    local P = require("spec.prometheus_harness")
    if P.skip(pending) then return end
    local PROM = { metricsProviders = h.array{ { source = "Prometheus",
      prometheus = { url = "http://prometheus-k8s.monitoring.svc:9090" } } } }
    local function prom(query, extra, o)
      o = o or {}
      local args = { thresholds = { MetricResource = 20 }, targetThresholds = { MetricResource = 50 },
                     metricsUtilization = { source = "Prometheus", prometheus = { query = query } } }
      for k, v in pairs(extra or {}) do args[k] = v end
      return h.simulate{ snapshot = SHOP, plugin = "LowNodeUtilization", ext = "balance", args = args,
                         top = o.top or PROM, now = P.NOW,
                         prometheus_url = o.url == nil and P.url() or o.url or nil }
    end
    local CPU = "instance:node_cpu_utilisation:ratio"

    it("evicts one pod from each overutilized node, as upstream", function()
      local plan = prom(CPU)
      assert.same({ REPORT, TRANSCODER }, plan:pods())
      assert.same({}, plan.errors)
      assert.same({
        "node worker-a-1 is above its target utilization: MetricResource 85.00% > 50.00% (+35)",
        "node worker-a-2 is above its target utilization: MetricResource 60.00% > 50.00% (+10)",
      }, plan:reasons())
    end)

    it("evicts up to evictionLimits.node pods per node", function()
      assert.same({ REPORT, CART_BE, TRANSCODER, CART_Z },
        prom(CPU, { evictionLimits = { node = 2 } }):pods())
    end)

    it("fails the plugin for the cycle when the result is a matrix", function()
      local plan = prom(CPU .. "[5m]")
      assert.same({}, plan:pods())
      assert.equal('error getting node usage: expected query results to be of type "vector", '
        .. 'got "matrix" instead', plan.errors[1].message)
    end)

    it("fails the plugin when a node of the cycle has no sample", function()
      local plan = prom("instance:node_memory_utilisation:ratio")
      assert.same({}, plan:pods())
      assert.equal("error getting node usage: unable to find metric entry for worker-c-2",
        plan.errors[1].message)
      -- without worker-c-2 in the node set, the same query runs
      assert.same({ REPORT }, prom("instance:node_memory_utilisation:ratio", nil,
        { top = { metricsProviders = PROM.metricsProviders,
                  nodeSelector = "kubernetes.io/hostname!=worker-c-2" } }):pods())
    end)

    it("fails the plugin on a value outside [0, 1] or a sample without instance", function()
      assert.equal('error getting node usage: the collected metrics sample for "worker-a-1" has value '
        .. "1.5 outside of <0; 1> interval", prom("instance:node_load1_per_cpu:ratio").errors[1].message)
      assert.equal("error getting node usage: the collected metrics sample is missing 'instance' key",
        prom("cluster:node_cpu:ratio").errors[1].message)
    end)

    it("fails the plugin, and only it, when the server is down", function()
      local plan = h.simulate{ snapshot = SHOP, now = P.NOW, top = PROM, prometheus_url = P.down_url(),
        plugins = {
          { name = "LowNodeUtilization", ext = "balance", args = {
            thresholds = { MetricResource = 20 }, targetThresholds = { MetricResource = 50 },
            metricsUtilization = { source = "Prometheus", prometheus = { query = CPU } } } },
          { name = "HighNodeUtilization", ext = "balance", args = { thresholds = { cpu = 6 } } },
        } }
      assert.equal(1, #plan.errors)
      assert.equal("LowNodeUtilization", plan.errors[1].plugin)
      assert.matches('^error getting node usage: unable to capture prometheus metrics: Post "http://127%.0%.0%.1:%d+/api/v1/query": ',
        plan.errors[1].message)
      -- the rest of the cycle ran
      assert.is_true(#plan.evictions > 0)
      for _, e in ipairs(plan.evictions) do assert.equal("HighNodeUtilization", e.plugin) end
    end)

    it("fails the plugin on a query the server refuses, with the server's words", function()
      assert.matches('^error getting node usage: unable to capture prometheus metrics: bad_data: ',
        prom(CPU .. "{").errors[1].message)
    end)

    it("needs the policy's Prometheus provider", function()
      local plan = prom(CPU, nil, { top = {} })
      assert.matches("^error initializing usage client: prometheus client not initialized",
        plan.errors[1].message)
    end)

    it("answers from the snapshot's recorded results without a server", function()
      local plan = prom(CPU, nil, { url = false })
      assert.matches('^error initializing usage client: prometheus client not initialized %(the snapshot '
        .. 'holds no result for the query "instance:node_cpu_utilisation:ratio"', plan.errors[1].message)
    end)
  end)

  describe("the utilization API (ebb.node_usage)", function()
    -- A plugin that runs `body` and reports what it returns (a string) as
    -- its failure message, so the spec reads the API's answers.
    local function probe(body, o)
      o = o or {}
      local dir = h.plugin_dir{ ["probe.lua"] = [[
        local ebb = require("ebb")
        local function fmt(t)
          local keys = {}
          for k in pairs(t) do keys[#keys + 1] = k end
          table.sort(keys)
          local parts = {}
          for _, k in ipairs(keys) do
            local v = t[k]
            if math.type(v) == "float" then v = string.format("%.2f", v) end
            parts[#parts + 1] = k .. "=" .. tostring(v)
          end
          return "{" .. table.concat(parts, ",") .. "}"
        end
        return { name = "Probe", balance = function(ctx, nodes)
          ]] .. body .. [[
        end }
      ]] }
      local plan = h.simulate{ snapshot = o.snapshot or SHOP, policy_dirs = { dir },
        plugins = { { name = "Probe", ext = "balance" } }, top = o.top }
      h.rmdir(dir)
      assert.equal(1, #plan.errors)
      return plan.errors[1].message
    end

    it("computes usage, percentages, thresholds, classes and the budget", function()
      local out = probe([[
        local u = ebb.node_usage(nodes, { resources = { "cpu", "memory", "pods" } })
        u:set_thresholds({ cpu = 20, memory = 20 }, { cpu = 50, memory = 50 })
        local under, over = u:classify("spread")
        local sources = u:move("over", "under", { order = "descending", target = true })
        local low, high = u:thresholds()
        return false, table.concat({
          u:count(), table.concat(under:names(), " "), table.concat(over:names(), " "),
          table.concat(sources:names(), " "), fmt(u:usage("worker-a-1")), fmt(u:percent("worker-a-1")),
          fmt(u:available("worker-b-1")), fmt(u:budget()), fmt(low), fmt(high),
          u:class("worker-b-2"), u:class("worker-c-2"), tostring(u:continues("worker-a-1")),
        }, "|")
      ]])
      assert.same({ "6", "worker-b-1 worker-c-1", "worker-a-1 worker-a-2", "worker-a-1 worker-a-2",
        "{cpu=3200,memory=6381633536,pods=11}", "{cpu=80.00,memory=37.15,pods=22.00}",
        "{cpu=2000,memory=8589934592,pods=50}", "{cpu=3400,memory=15569256448,pods=94}",
        "{cpu=20.00,memory=20.00}", "{cpu=50.00,memory=50.00}", "none", "none", "true" },
        (function() local t = {} for p in out:gmatch("[^|]+") do t[#t + 1] = p end return t end)())
    end)

    it("accounts for an evicted pod and stops below target", function()
      local out = probe([[
        local u = ebb.node_usage(nodes, { resources = { "cpu", "memory", "pods" } })
        u:set_thresholds({ cpu = 20, memory = 20 }, { cpu = 50, memory = 50 })
        u:classify("spread")
        u:move("over", "under", { target = true })
        local pod = ebb.pod("shop", "catalog-5f7b8c9d4-k2x9q")
        local freed = u:pod_usage(pod)
        local again = u:take(pod)
        local more = u:take(ebb.pod("shop", "checkout-6d5c4b3a2-p9o8i"))
        return false, fmt(freed) .. " " .. tostring(again) .. " " .. tostring(more) .. " " .. fmt(u:usage("worker-a-1"))
      ]])
      -- 3200 - 600 = 2600 > 2000: go on; - 500 = 2100: still above
      assert.equal("{cpu=600,memory=1073741824,pods=1} true true {cpu=2100,memory=4234149888,pods=9}", out)
    end)

    it("filters candidates by the destinations' taints in C", function()
      local out = probe([[
        local u = ebb.node_usage(nodes, { resources = { "cpu", "memory", "pods" } })
        u:set_thresholds({ cpu = 20, memory = 20 }, { cpu = 50, memory = 50 })
        u:classify("spread")
        u:move("over", "under")
        return false, table.concat(u:candidates(ebb.pods("worker-a-2")):keys(), " ")
      ]], { top = { nodeSelector = "topology.kubernetes.io/zone!=eu-west-1b" } })
      -- only the DaemonSet pods (a wildcard among 7 tolerations) tolerate
      -- worker-c-1's two taints; the transcoder lacks spot, the
      -- recommender's lone wildcard is fewer than two
      assert.matches("^kube%-system/fluent%-bit%-%w+ kube%-system/kube%-proxy%-%w+$", out)
    end)

    it("refuses misuse with a message", function()
      assert.matches('resource "gpu" is not in this NodeUsage', probe([[
        local u = ebb.node_usage(nodes, { resources = { "cpu" } })
        u:set_thresholds({ gpu = 20 })
      ]]), 1, true)
      assert.matches("node is not in this NodeUsage", probe([[
        local u = ebb.node_usage({ "worker-a-1" }, { resources = { "cpu" } })
        u:continues("worker-a-2")
      ]]), 1, true)
      assert.matches("opts.resources must be a list", probe([[
        ebb.node_usage(nodes, {})
      ]]), 1, true)
      assert.matches("bad argument #1 to 'classify' (invalid option 'sideways')", probe([[
        ebb.node_usage(nodes, { resources = { "cpu" } }):classify("sideways")
      ]]), 1, true)
    end)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local policy, fails = h.bad_args{ plugin = "LowNodeUtilization", ext = "balance",
                                      profile = "spread", snapshot = SHOP,
                                      words = "LowNodeUtilization: " }
    local OK = "      thresholds: {cpu: 20, memory: 20}\n      targetThresholds: {cpu: 50, memory: 50}"

    it("accepts the README example", function()
      assert.is_not_nil(h.try{ snapshot = SHOP, policy_text = policy(OK) })
    end)

    it("refuses evictableNamespaces.include, even with exclude", function()
      local msg = "only Exclude namespaces can be set, inclusion is not supported"
      fails(OK .. "\n      evictableNamespaces:\n        include: [shop]", 11, ".evictableNamespaces.include", msg)
      fails(OK .. "\n      evictableNamespaces:\n        include: [shop]\n        exclude: [media]", 11,
        ".evictableNamespaces.include", msg)
    end)

    it("needs thresholds and targetThresholds", function()
      -- an absent map is reported at the start of args
      fails("      targetThresholds: {cpu: 50}", 8, ".thresholds",
        "thresholds config is not valid: no resource threshold is configured")
      fails("      thresholds: {}\n      targetThresholds: {cpu: 50}", 8, ".thresholds",
        "thresholds config is not valid: no resource threshold is configured")
      fails("      thresholds: {cpu: 20}", 8, ".targetThresholds",
        "targetThresholds config is not valid: no resource threshold is configured")
    end)

    it("keeps every percentage in [0, 100]", function()
      fails("      thresholds:\n        cpu: 20\n        memory: 120\n      targetThresholds: {cpu: 50, memory: 50}",
        10, ".thresholds.memory", "thresholds config is not valid: memory threshold not in [0, 100] range")
      fails("      thresholds: {cpu: 20}\n      targetThresholds:\n        cpu: -5", 10, ".targetThresholds.cpu",
        "targetThresholds config is not valid: cpu threshold not in [0, 100] range")
    end)

    it("needs the same resources in both maps", function()
      local msg = "thresholds and targetThresholds configured different resources"
      fails("      thresholds: {cpu: 20, memory: 20}\n      targetThresholds: {cpu: 50, memory: 50, pods: 50}",
        9, ".targetThresholds", msg)
      fails("      thresholds: {cpu: 20, memory: 20}\n      targetThresholds: {cpu: 50, pods: 50}",
        9, ".targetThresholds", msg)
    end)

    it("refuses a threshold above its target unless deviations are used", function()
      fails("      thresholds:\n        cpu: 90\n      targetThresholds: {cpu: 80}", 9, ".thresholds.cpu",
        "thresholds' cpu percentage is greater than targetThresholds'")
      fails("      thresholds:\n        cpu: 20\n        nvidia.com/gpu: 90\n      targetThresholds: {cpu: 80, nvidia.com/gpu: 20}",
        10, '.thresholds["nvidia.com/gpu"]', "thresholds' nvidia.com/gpu percentage is greater than targetThresholds'")
      assert.is_not_nil(h.try{ snapshot = SHOP, policy_text = policy(
        "      useDeviationThresholds: true\n      thresholds: {cpu: 90}\n      targetThresholds: {cpu: 80}") })
    end)

    it("checks metricsUtilization like upstream", function()
      fails(OK .. "\n      metricsUtilization:\n        metricsServer: true\n        source: KubernetesMetrics", 11,
        ".metricsUtilization", 'it is not allowed to set both "KubernetesMetrics" source and metricsServer')
      fails(OK .. "\n      metricsUtilization:\n        source: KubernetesMetrics\n        prometheus: {query: up}", 12,
        ".metricsUtilization.prometheus",
        'prometheus configuration is not allowed to set when source is set to "KubernetesMetrics"')
      fails(OK .. "\n      metricsUtilization:\n        source: Prometheus", 11, ".metricsUtilization",
        'prometheus query is required when metrics source is set to "Prometheus"')
      fails(OK .. "\n      metricsUtilization:\n        source: Prometheus\n        prometheus:\n          query: \"\"", 13,
        ".metricsUtilization.prometheus", 'prometheus query is required when metrics source is set to "Prometheus"')
    end)

    it("needs MetricResource alone in the thresholds of the Prometheus source", function()
      fails("      thresholds: {cpu: 20, memory: 20}\n      targetThresholds: {cpu: 50, memory: 50}\n"
        .. "      metricsUtilization:\n        source: Prometheus\n        prometheus: {query: up}", 8, ".thresholds",
        'thresholds are expected to specify a single instance of "MetricResource" resource, got [cpu memory] instead')
      assert.is_not_nil(h.try{ snapshot = SHOP, policy_text = policy(
        "      thresholds: {MetricResource: 20}\n      targetThresholds: {MetricResource: 50}\n"
        .. "      metricsUtilization:\n        source: Prometheus\n        prometheus: {query: up}") })
    end)



    it("decodes strictly", function()
      fails(OK .. "\n      evictableNamespace: {exclude: [media]}", 10, ".evictableNamespace", 'unknown field "evictableNamespace"')
      fails("      thresholds:\n        cpu: 20%\n      targetThresholds: {cpu: 50}", 9, ".thresholds.cpu",
        "expected a number, got a string")
      fails(OK .. "\n      evictionLimits:\n        node: -1", 11, ".evictionLimits.node", "-1 is out of range")
      fails(OK .. "\n      numberOfNodes: 1.5", 10, ".numberOfNodes", "expected an integer")
      fails(OK .. "\n      evictionModes: [OnlyThresholdingResources]", 10, ".evictionModes", 'unknown field "evictionModes"')
    end)
  end)
end)
