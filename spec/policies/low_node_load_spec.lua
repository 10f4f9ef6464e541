-- LowNodeLoad through the real engine on the fixtures of
-- spec/fixtures/build_loadaware.py (NOW is 2026-11-22T12:00:00Z; every node
-- allocates 8 cpu / 32Gi / 110 pods unless said otherwise). Expected plans
-- follow koordinator-sh/koordinator pkg/descheduler/framework/plugins/
-- loadaware (low_node_load.go, utilization_util.go, low_node_load_test.go),
-- utils/sorter, utils/anomaly and apis/config (defaults, conversion,
-- validation). Each expectation is worked out in the comment above it.
local h = require("spec.helpers")

local CLUSTER = "spec/fixtures/loadaware-cluster.json"
local ORDER = "spec/fixtures/loadaware-order.json"
local FIT = "spec/fixtures/loadaware-fit.json"
local POOLS = "spec/fixtures/loadaware-pools.json"
local METRICS = "spec/fixtures/loadaware-metrics.json"
local EDGES = "spec/fixtures/loadaware-edges.json"

-- loadaware-cluster.json
local ETL = "batch/etl-28850110-zt6v2"              -- worker-1, Job, koord-batch, 1000m / 1Gi
local CHECKOUT = "shop/checkout-6d4f8b9c7-2xk9p"    -- worker-1, Burstable, 1500m / 2Gi
local CATALOG = "shop/catalog-7b9c5d6f8-h4j2m"      -- worker-1, Burstable, 1000m / 2Gi
local SEARCH = "shop/search-5f6a7c8d9-q8w3e"        -- worker-1, Guaranteed, 2000m / 3Gi
local FRONTEND_M = "shop/frontend-5c8d7b6f4-m2n4p"  -- worker-2, Prod, 1500m / 6.75Gi
local RECO_W = "shop/recommender-8f9d7c6b5-w4x5y"   -- worker-6 (stale), 1500m, newest

local function merge(base, extra)
  local out = {}
  for k, v in pairs(base or {}) do out[k] = v end
  for k, v in pairs(extra or {}) do out[k] = v end
  return out
end

-- The common case: 30% / 65-70%, detection bypassed (as in low_node_load_test.go).
local BASE = {
  lowThresholds = { cpu = 30, memory = 30 },
  highThresholds = { cpu = 65, memory = 70 },
  anomalyCondition = { consecutiveAbnormalities = 1 },
}

local function run(snapshot, args, o)
  o = o or {}
  return h.simulate{ snapshot = snapshot, plugin = "LowNodeLoad", ext = "balance", args = args,
                     cycles = o.cycles, evictor = o.evictor, top = o.top }
end

local function notes(plan)
  local out = {}
  for _, n in ipairs(plan.notes) do
    out[#out + 1] = (n.node and (n.node .. ": ") or "") .. n.message
  end
  return out
end

local function cycles_of(plan)
  local out = {}
  for _, e in ipairs(plan.evictions) do out[#out + 1] = e.cycle end
  return out
end

local function has(list, s)
  for _, v in ipairs(list) do if v == s then return true end end
  return false
end

local function hostnames(...)
  return { matchExpressions = { { key = "kubernetes.io/hostname", operator = "In",
                                  values = h.array{ ... } } } }
end

describe("LowNodeLoad", function()
  describe("classification and balancing", function()
    -- worker-1 87.5% cpu > 65% is the source; worker-3 (20%) and worker-4
    -- (15%) are under 30% and schedulable; worker-5 is cordoned. Capacity:
    -- (5200-1600) + (5200-1200) = 7600m. nodeFit reserves: etl, catalog and
    -- checkout land on worker-3 (1600 -> 5100m <= 5200m), search on worker-4.
    -- Order: etl (koord-batch) before the Prod pods; checkout and catalog
    -- (Burstable) before search (Guaranteed); checkout's 1500m is nearer
    -- the 1800m excess than catalog's 1000m. After etl (6000m) and checkout
    -- (4500m <= 5200m) the node is no longer over: the loop stops.
    it("evicts from the overutilized node until it is under its high thresholds", function()
      local plan = run(CLUSTER, BASE)
      assert.same({ ETL, CHECKOUT }, plan:pods())
      assert.same({ "node is overutilized, node cpu usage(87.50%)>threshold(65.00%)",
                    "node is overutilized, node cpu usage(75.00%)>threshold(65.00%)" },
                  { plan.evictions[1].reason, plan.evictions[2].reason })
      assert.equal("worker-1", plan.evictions[1].node)
    end)

    it("never treats nodes without a usable metric as idle, and says so", function()
      local plan = run(CLUSTER, BASE)
      assert.same({
        "worker-6: node skipped: NodeMetric expired: updated 600s ago, nodeMetricExpirationSeconds is 180",
        "worker-7: node skipped: no NodeMetric (slo.koordinator.sh) or NodeMetrics (metrics.k8s.io) for the node",
      }, notes(plan))
    end)

    -- With 900s worker-6's NodeMetric (600s old) counts: 7500m, 93.75% cpu.
    -- Weighted score (cpu+memory)/2: worker-6 (937+328)/2 = 632 beats
    -- worker-1 (875+375)/2 = 625. worker-6's pods reserve worker-3 (g7h8j,
    -- 4600m) and worker-4 (w4x5y, 4200m); the newest, w4x5y, goes (7500 ->
    -- 4500m). worker-1 then finds only etl still fitting (worker-4 5200m).
    it("counts a metric younger than nodeMetricExpirationSeconds", function()
      local plan = run(CLUSTER, merge(BASE, { nodeMetricExpirationSeconds = 900 }))
      assert.same({ RECO_W, ETL }, plan:pods())
    end)

    it("does nothing without an underutilized node (the other one is cordoned)", function()
      local plan = run(CLUSTER, merge(BASE, { nodeSelector = hostnames("worker-1", "worker-5") }))
      assert.same({}, plan:pods())
      assert.same({ "nodePool __default_node_pool__: no node is underutilized" }, notes(plan))
    end)

    -- every node under its low thresholds means no source: Koordinator
    -- stops on that first ("All nodes are under target utilization")
    it("does nothing when every node is underutilized", function()
      local plan = run(CLUSTER, merge(BASE, { nodeSelector = hostnames("worker-3", "worker-4") }))
      assert.same({}, plan:pods())
      assert.same({ "nodePool __default_node_pool__: no node is over its high thresholds" }, notes(plan))
    end)

    -- Underutilized: worker-3 and worker-4 (both low), and worker-2, in
    -- between for node usage but under the prod low thresholds (unset:
    -- 100%): allLowNodes counts all three.
    it("acts only when more than numberOfNodes nodes are underutilized, prod-low ones included", function()
      local plan = run(CLUSTER, merge(BASE, { numberOfNodes = 3 }))
      assert.same({}, plan:pods())
      assert.is_true(has(notes(plan),
        "nodePool __default_node_pool__: 3 underutilized node(s), not more than numberOfNodes (3)"))
      assert.same({ ETL, CHECKOUT }, run(CLUSTER, merge(BASE, { numberOfNodes = 2 })):pods())
    end)

    -- Only the DaemonSet and the StatefulSet with an emptyDir match: both
    -- are protected by DefaultEvictor ("no evictable pods").
    it("evicts nothing when the candidates are protected", function()
      local plan = run(CLUSTER, merge(BASE, {
        podSelectors = { { name = "infra", selector = { matchExpressions = {
          { key = "app", operator = "In", values = h.array{ "fluentd", "redis" } } } } } },
      }))
      assert.same({}, plan:pods())
    end)

    -- nodeFit off: low 20% (1600m) keeps worker-3 and -4 low, high 30%
    -- (2400m) makes worker-1 and worker-2 sources; capacity (2400-1600) +
    -- (2400-1200) = 2000m. etl leaves 1000m, checkout -500m: worker-1 stops
    -- and worker-2 (next by score) stops at once.
    it("stops when the targets' capacity is used up", function()
      local plan = run(CLUSTER, merge(BASE, {
        nodeFit = false,
        lowThresholds = { cpu = 20, memory = 20 },
        highThresholds = { cpu = 30, memory = 70 },
      }))
      assert.same({ ETL, CHECKOUT }, plan:pods())
    end)
  end)

  describe("namespaces and podSelectors", function()
    it("leaves excluded namespaces alone", function()
      local plan = run(CLUSTER, merge(BASE, { evictableNamespaces = { exclude = { "shop" } } }))
      -- etl alone brings worker-1 to 6000m: still over, but nothing is left
      assert.same({ ETL }, plan:pods())
    end)

    it("takes only included namespaces", function()
      -- checkout (7000 -> 5500m) then catalog (-> 4500m)
      local plan = run(CLUSTER, merge(BASE, { evictableNamespaces = { include = { "shop" } } }))
      assert.same({ CHECKOUT, CATALOG }, plan:pods())
    end)

    it("ORs podSelectors", function()
      local search = { name = "search", selector = { matchLabels = { app = "search" } } }
      local batch = { name = "batch", selector = { matchLabels = { tier = "batch" } } }
      assert.same({ SEARCH }, run(CLUSTER, merge(BASE, { podSelectors = { search } })):pods())
      -- etl (Batch) first: 6000m, then search: 4000m
      assert.same({ ETL, SEARCH }, run(CLUSTER, merge(BASE, { podSelectors = { search, batch } })):pods())
    end)
  end)

  describe("deviation thresholds", function()
    -- Means over the 5 measured nodes: cpu (87.5+50+20+15+10)/5 = 36.5%,
    -- memory (37.5+50+18.75+12.5+9.375)/5 = 25.625%. With 10/10 the window
    -- is cpu 26.5-46.5% (2120-3720m), memory 15.625-35.625%. worker-1 and
    -- worker-2 are over, worker-4 (1200m, 4Gi) is the only low node:
    -- capacity 2520m. etl and catalog fit worker-4 under 3720m (2200, then
    -- 3200m); checkout and search do not. worker-2's frontends (1500m) no
    -- longer fit after those reservations.
    it("uses the pool's mean usage -/+ the thresholds", function()
      local plan = run(CLUSTER, {
        useDeviationThresholds = true,
        lowThresholds = { cpu = 10, memory = 10 },
        highThresholds = { cpu = 10, memory = 10 },
        anomalyCondition = { consecutiveAbnormalities = 1 },
      })
      assert.same({ ETL, CATALOG }, plan:pods())
      assert.equal("node is overutilized, node cpu usage(87.50%)>threshold(46.50%), "
        .. "node memory usage(37.50%)>threshold(35.62%)", plan.evictions[1].reason)
    end)
  end)

  describe("prod thresholds", function()
    -- prod usage counts Prod-class pods only (no koordinator labels: a
    -- Burstable or Guaranteed pod is LS/LSR, hence Prod). With prod 10-30%:
    -- worker-2 is in between node-wise but its prod usage is 3300m (fluentd
    -- + two frontends, 41.25%) > 2400m: a prod source. worker-3 (prod
    -- 1100m) is low, worker-4 (prod 700m) low on both. The node pass is the
    -- one of the first test; then the prod pass moves Prod pods from worker-2
    -- into worker-4 only: capacity min(2400-700, left by the node pass) =
    -- 1700m; the first frontend (700 -> 2200m) fits, the second does not.
    it("balances prod usage after node usage", function()
      local plan = run(CLUSTER, merge(BASE, {
        prodLowThresholds = { cpu = 10 },
        prodHighThresholds = { cpu = 30 },
      }))
      assert.same({ ETL, CHECKOUT, FRONTEND_M }, plan:pods())
      assert.equal("node is overutilized, prod cpu usage(41.25%)>threshold(30.00%)",
                   plan.evictions[3].reason)
      assert.equal("worker-2", plan.evictions[3].node)
    end)
  end)

  describe("order", function()
    -- hot-cpu: 7200m (90%) / 8Gi; hot-mem: 5600m (70%) / 28Gi (87.5%).
    -- Scores (used * 1000 / allocatable, weighted): default cpu=1 memory=1:
    -- hot-cpu (900+250)/2 = 575, hot-mem (700+875)/2 = 787; cpu=4:
    -- hot-cpu (3600+250)/5 = 770, hot-mem (2800+875)/5 = 735.
    -- On hot-cpu (excess 2000m) every pod is below the excess, so within a
    -- tie the larger usage goes first. The order: crawler-a (Free), etl-c
    -- (Batch, no priority = 0), etl-b (Batch, priority 5500), api-d (Mid),
    -- then Prod: Burstable with Koordinator QoS LS: web-f (deletion cost
    -- -100), web-k and web-e (300m; k is newer), web-i (200m), web-l (180m;
    -- an unknown priority-class label falls back to its QoS: Prod), web-g
    -- (eviction cost 50); Burstable labelled LSE: web-m; Guaranteed: web-h.
    -- web-j has no pod metric (no fit without one), web-pinned has
    -- eviction-cost 2147483647. After web-m the node is at 5030m.
    -- hot-mem (over in cpu by 400m and memory by 2.4Gi): spark-exec-1
    -- scores (2 + 1.4)/2, spark-exec-2 (0.75 + 1.6)/2; one is enough.
    local HOT_CPU = {
      "apps/crawler-a-6c5d4-aa111", "apps/etl-c-8e7f6-cc333", "apps/etl-b-7d6e5-bb222",
      "apps/api-d-9f8a7-dd444", "apps/web-f-2b3c4-ff666", "apps/web-k-7a8b9-kk111",
      "apps/web-e-1a2b3-ee555", "apps/web-i-5e6f7-ii999", "apps/web-l-8b9c0-ll222",
      "apps/web-g-3c4d5-gg777", "apps/web-m-9c0d1-mm333",
    }
    local ORDER_ARGS = {
      lowThresholds = { cpu = 30, memory = 30 },
      highThresholds = { cpu = 65, memory = 80 },
      anomalyCondition = { consecutiveAbnormalities = 1 },
    }

    it("takes the pods of a source in Koordinator's order", function()
      local plan = run(ORDER, ORDER_ARGS)
      local want = { "analytics/spark-exec-1" }
      for _, k in ipairs(HOT_CPU) do want[#want + 1] = k end
      assert.same(want, plan:pods())
    end)

    it("orders sources by their weighted usage", function()
      local plan = run(ORDER, merge(ORDER_ARGS, { resourceWeights = { cpu = 4 } }))
      local want = {}
      for _, k in ipairs(HOT_CPU) do want[#want + 1] = k end
      want[#want + 1] = "analytics/spark-exec-1"
      assert.same(want, plan:pods())
    end)
  end)

  describe("nodeFit with the targets' headroom", function()
    -- fit-src 7000m (excess 1800m over 65%). Targets by name: t-small
    -- (2200m: room for 3000m), t-taint (dedicated=gpu:NoSchedule). In
    -- listing order: a-ssd wants disktype=ssd (nowhere); b, c, d (1000m
    -- each) reserve t-small up to 5200m; e (1800m) then fits nowhere,
    -- though alone it would have fitted t-small; f tolerates the taint and
    -- goes to t-taint. Order: b, c, d tie at 1000/1800 -> newest first (d,
    -- c, b), then f. d (6000m), c (5000m), stop.
    it("moves only pods that fit a target under its high threshold, reserving as it goes", function()
      assert.same({ "fit/d-q3-8e9f0a1b2-d4d4d", "fit/c-q2-7d8e9f0a1-c3c3c" }, run(FIT, BASE):pods())
    end)

    -- Without nodeFit every pod is a candidate: e's 1800m is exactly the
    -- excess (ratio 1 scores 1/1 + 1 = 2, the best): it alone suffices.
    it("without nodeFit picks the pod whose usage matches the excess", function()
      assert.same({ "fit/e-q4-9f0a1b2c3-e5e5e" }, run(FIT, merge(BASE, { nodeFit = false })):pods())
    end)
  end)

  describe("node pools", function()
    -- web-1 and batch-1: 6400m (80%), four 1200m pods each (created 4, 3,
    -- 2, 1 days ago); web-2 1600m, batch-2 1200m. With 30/70% one pod
    -- brings a node to 5200m. Reservations: web-2 takes three web pods
    -- (2800, 4000, 5200m): the newest (q2r3s) fits nowhere, so k8l9m goes.
    local FRONT_K = "web/frontend-7f8c9d6b5-k8l9m"
    local FRONT_F = "web/frontend-7f8c9d6b5-f5g6h"
    local WORKER_T = "batch/worker-5d6e7f8a9-t4v5w"
    local WORKER_N = "batch/worker-5d6e7f8a9-n9p2q"
    local function pool(name, selector, extra)
      return merge({ name = name, nodeSelector = selector and { matchLabels = selector } or nil },
                   extra)
    end
    local THR = { lowThresholds = { cpu = 30 }, highThresholds = { cpu = 70 } }
    local BYPASS = { consecutiveAbnormalities = 1 }

    -- The default pool runs first (no top-level thresholds: memory at
    -- 100%, no source). "main" selects every node but skips web-1, already
    -- a source of "web"; batch-1's pods reserve batch-2 then web-2: all four
    -- fit, the newest goes.
    it("runs pools in order and skips nodes an earlier pool used as sources", function()
      local plan = run(POOLS, { anomalyCondition = BYPASS, nodePools = {
        pool("web", { pool = "web" }, THR), pool("main", { cluster = "main" }, THR) } })
      assert.same({ FRONT_K, WORKER_T }, plan:pods())
      assert.same({ "nodePool __default_node_pool__: no node is over its high thresholds" }, notes(plan))
    end)

    -- A pool without a selector takes every node, sources of earlier pools
    -- included: web-1's stale metric still says 80%. batch-1 (score
    -- (800+500)/2) before web-1 ((800+375)/2); web-1's pods now reserve
    -- web-2 after batch-1's: f5g6h is the newest that fits.
    it("does not skip processed nodes in a pool without a selector", function()
      local plan = run(POOLS, { anomalyCondition = BYPASS, nodePools = {
        pool("web", { pool = "web" }, THR), pool("main", nil, THR) } })
      assert.same({ FRONT_K, WORKER_T, FRONT_F }, plan:pods())
    end)

    -- The conversion puts the default pool (the top-level thresholds, no
    -- selector) first: every node. batch-1 (score (800+500)/2) before web-1
    -- ((800+375)/2); batch-1's pods reserve batch-2 three times and web-2
    -- once: the newest, t4v5w, goes. web-1's find room for two in web-2
    -- (2800, 4000, 5200m): f5g6h is the newest of those. "batch" inherits
    -- the thresholds but its selector leaves batch-1 out, a source of the
    -- default pool: batch-2 alone has no source.
    it("inherits unset fields and runs the default pool first", function()
      local plan = run(POOLS, merge(THR, { anomalyCondition = BYPASS, nodePools = {
        pool("batch", { pool = "batch" }) } }))
      assert.same({ WORKER_T, FRONT_F }, plan:pods())
      assert.same({ "nodePool batch: no node is over its high thresholds" }, notes(plan))
    end)

    -- The pool's anomalyCondition has no counts: it inherits the top
    -- level's 2 (keeping its own timeout): a source in the third cycle.
    it("inherits anomaly counts a pool leaves at zero", function()
      local args = { anomalyCondition = { consecutiveAbnormalities = 2 }, nodePools = {
        pool("web", { pool = "web" }, merge(THR, { anomalyCondition = { timeout = "1m" } })) } }
      assert.same({}, run(POOLS, args, { cycles = 2 }):pods())
      local plan = run(POOLS, args, { cycles = 3 })
      assert.same({ FRONT_K }, plan:pods())
      assert.same({ 3 }, cycles_of(plan))
    end)
  end)

  -- What Koordinator v1.8.0 decides where ebb used to differ
  -- (loadaware-edges.json; each scenario on its own nodes).
  describe("at v1.8.0's edges", function()
    local function scenario(name, extra) return merge({ nodeSelector = "scenario=" .. name }, extra) end

    -- s-fresh's NodeMetric has status.nodeMetric {} and no podsMetric: zero
    -- usage, a target. s-partial's lists pods but has no status.nodeMetric:
    -- skipped. s-hot 7000m: two 2000m carts fit s-fresh (2000, 4000m; not
    -- a third), the newer of them goes and s-hot is at 5000m <= 5200m.
    it("uses a NodeMetric whose status.nodeMetric is empty, skips one without it", function()
      local plan = run(EDGES, BASE, { top = scenario("shapes") })
      assert.same({ "shop/cart-5b6c7d8e9-b3b3b" }, plan:pods())
      assert.same({ "s-partial: node skipped: NodeMetric has no status.nodeMetric" }, notes(plan))
      plan = run(EDGES, BASE, { top = { nodeSelector = "kubernetes.io/hostname in (s-hot,s-fresh)" } })
      assert.same({ "shop/cart-5b6c7d8e9-b3b3b" }, plan:pods())
      plan = run(EDGES, BASE, { top = { nodeSelector = "kubernetes.io/hostname in (s-hot,s-partial)" } })
      assert.same({}, plan:pods())
      assert.is_true(has(notes(plan), "nodePool __default_node_pool__: no node is underutilized"))
    end)

    -- prod 20-50%: p-hot is in between node-wise (61.25%) but its Prod pods
    -- use 4300m (53.75%) > 4000m: a prod source. p-calm (37.5%) is low only
    -- by its prod usage (300m): that counts as underutilized. Into p-calm's
    -- 3700m of prod room three 1000m api pods fit (1300, 2300, 3300m); the
    -- newest of them goes and p-hot's prod usage is 3300m.
    it("counts nodes underutilized only by prod usage as targets", function()
      local plan = run(EDGES, merge(BASE, {
        highThresholds = { cpu = 70, memory = 70 },
        prodLowThresholds = { cpu = 20, memory = 20 },
        prodHighThresholds = { cpu = 50, memory = 50 },
      }), { top = scenario("prod") })
      assert.same({ "shop/api-7c8d9e0f1-c3c3c" }, plan:pods())
      assert.equal("node is overutilized, prod cpu usage(53.75%)>threshold(50.00%)", plan.evictions[1].reason)
    end)

    -- PodLifeTime takes one cleanup Job a cycle from c-drain (node limit
    -- 1); with two pods left (cycle 2) it is under the pods threshold (2.2
    -- of 110). c-hot's detector is marked from cycle 1 on, low node or not:
    -- the third mark (consecutiveAbnormalities 2) makes it a source in cycle
    -- 3, when c-drain has been low since cycle 2. Two renders fit c-drain
    -- (2800, 4800m): the newer of them goes.
    it("marks the detectors before looking for underutilized nodes", function()
      local plan = h.simulate{ snapshot = EDGES, cycles = 4,
        top = { nodeSelector = "scenario=cycles", maxNoOfPodsToEvictPerNode = 1 },
        plugins = {
          { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 7 * 86400,
                                           namespaces = { include = { "batch" } } } },
          { name = "LowNodeLoad", ext = "balance", args = {
            lowThresholds = { cpu = 30, memory = 30, pods = 2 },
            highThresholds = { cpu = 65, memory = 70, pods = 100 },
            anomalyCondition = { consecutiveAbnormalities = 2 } } },
        } }
      local lnl = {}
      for _, e in ipairs(plan.evictions) do
        if e.plugin == "LowNodeLoad" then lnl[#lnl + 1] = e.cycle .. " " .. e.pod end
      end
      assert.same({ "3 shop/render-0f1a2b3c4-l2l2l" }, lnl)
    end)

    -- Once the total limit is hit every later Evict fails, but the pools
    -- after still run and mark their detectors. nodeFit off. "cycles" (50%,
    -- detection bypassed): c-hot's NodeMetric says 7000m every cycle, so it
    -- evicts one render a cycle (newest first) and meets the limit with the
    -- next, in cycles 1 and 2; in cycle 3 the last render goes and nothing
    -- is refused. "shapes" (consecutiveAbnormalities 2) is marked in cycles
    -- 1, 2 and 3: s-hot is a source in cycle 3 (refused, the limit is
    -- spent) and its cart goes in cycle 4, when "cycles" has nothing left.
    it("keeps running the pools for their detectors once the total limit is hit", function()
      local function pool(name, high, abnormal)
        return { name = name, nodeSelector = { matchLabels = { scenario = name } },
                 lowThresholds = { cpu = 30 }, highThresholds = { cpu = high },
                 anomalyCondition = { consecutiveAbnormalities = abnormal } }
      end
      local plan = run(EDGES, { nodeFit = false, nodePools = { pool("cycles", 50, 1), pool("shapes", 65, 2) } },
        { cycles = 4, top = { maxNoOfPodsToEvictTotal = 1, nodeSelector = "scenario in (shapes,cycles)" } })
      local got, refused = {}, {}
      for _, e in ipairs(plan.evictions) do got[#got + 1] = e.cycle .. " " .. e.pod end
      for _, r in ipairs(plan.refusals) do refused[#refused + 1] = r.cycle .. " " .. r.pod .. " " .. r.why end
      assert.same({ "1 shop/render-0f1a2b3c4-m3m3m", "2 shop/render-0f1a2b3c4-l2l2l",
                    "3 shop/render-0f1a2b3c4-k1k1k", "4 shop/cart-5b6c7d8e9-c4c4c" }, got)
      assert.same({ "1 shop/render-0f1a2b3c4-l2l2l total-limit", "2 shop/render-0f1a2b3c4-k1k1k total-limit",
                    "3 shop/cart-5b6c7d8e9-c4c4c total-limit" }, refused)
    end)
  end)

  describe("anomaly detection over cycles", function()
    local DEFAULTS = { lowThresholds = BASE.lowThresholds, highThresholds = BASE.highThresholds }

    it("waits for more than 5 consecutive abnormal cycles by default", function()
      local plan = run(CLUSTER, DEFAULTS, { cycles = 5 })
      assert.same({}, plan:pods())
      assert.is_true(has(notes(plan), "nodePool __default_node_pool__: no node was detected as "
        .. "anomalous yet (worker-1: 5 of 6 consecutive abnormalities)"))
      plan = run(CLUSTER, DEFAULTS, { cycles = 6 })
      assert.same({ ETL, CHECKOUT }, plan:pods())
      assert.same({ 6, 6 }, cycles_of(plan))
    end)

    -- Cycle 6 stops at catalog because worker-1 is no longer over: that
    -- resets its detector, so it takes 6 more abnormal cycles. The snapshot
    -- does not change, so in cycle 12 the same NodeMetric (7000m) still
    -- says worker-1 is hot: catalog and search go.
    it("starts counting again after the node was relieved", function()
      local plan = run(CLUSTER, DEFAULTS, { cycles = 12 })
      assert.same({ ETL, CHECKOUT, CATALOG, SEARCH }, plan:pods())
      assert.same({ 6, 6, 12, 12 }, cycles_of(plan))
    end)

    it("bypasses detection with consecutiveAbnormalities 1", function()
      local plan = run(CLUSTER, BASE, { cycles = 2 })
      assert.same({ ETL, CHECKOUT, CATALOG, SEARCH }, plan:pods())
      assert.same({ 1, 1, 2, 2 }, cycles_of(plan))
    end)

    it("counts to consecutiveAbnormalities + 1", function()
      local args = merge(DEFAULTS, { anomalyCondition = { consecutiveAbnormalities = 2 } })
      assert.same({}, run(CLUSTER, args, { cycles = 2 }):pods())
      assert.same({ 3, 3 }, cycles_of(run(CLUSTER, args, { cycles = 3 })))
    end)
  end)

  describe("metrics.k8s.io and raw allocatable", function()
    -- No koordlet: NodeMetrics/PodMetrics. m-norm's allocatable says 16 cpu
    -- (CPU normalization) but its raw-allocatable annotation 8: 6000m is
    -- 75% > 65%, a source. m-hot (87.5%) first: x1 (1000m), x2 (900m; x3 has
    -- no PodMetrics); then m-norm: y1's 800m is its whole excess.
    it("uses NodeMetrics, PodMetrics and the raw allocatable", function()
      local plan = run(METRICS, BASE)
      assert.same({ "apps/x1-6b7c8d9e0-aa1", "apps/x2-7c8d9e0f1-bb2", "apps/y1-9e0f1a2b3-dd4" },
                  plan:pods())
      assert.equal("node is overutilized, node cpu usage(75.00%)>threshold(65.00%)",
                   plan.evictions[3].reason)
    end)
  end)

  describe("switches", function()
    it("only notes what it would do in dryRun, booking the usage as gone", function()
      -- the same two as for real: after them worker-1 is at 4500m
      local plan = run(CLUSTER, merge(BASE, { dryRun = true }))
      assert.same({}, plan:pods())
      local n = notes(plan)
      assert.same({
        "worker-1: dry run: would evict " .. ETL .. " (node is overutilized, node cpu usage(87.50%)>threshold(65.00%))",
        "worker-1: dry run: would evict " .. CHECKOUT .. " (node is overutilized, node cpu usage(75.00%)>threshold(65.00%))",
      }, { n[3], n[4] })
      assert.equal(4, #n)
    end)

    it("does nothing when paused", function()
      local plan = run(CLUSTER, merge(BASE, { paused = true }))
      assert.same({}, plan:pods())
      assert.same({ "LowNodeLoad is paused and will do nothing" }, notes(plan))
    end)

    it("stops at the evictor's node limit", function()
      local plan = run(CLUSTER, BASE, { top = { maxNoOfPodsToEvictPerNode = 1 } })
      assert.same({ ETL }, plan:pods())
    end)
  end)

  describe("the LoadSet", function()
    -- A probe plugin that reports what it computes as its failure message.
    local function probe(snapshot, body)
      local dir = h.plugin_dir{ ["probe.lua"] = [[
        local ebb = require("ebb")
        return { name = "Probe", balance = function(ctx, nodes)
          local out = {}
          local function add(...) for _, v in ipairs({ ... }) do out[#out + 1] = tostring(v) end end
          ]] .. body .. [[
          return false, "probe:" .. table.concat(out, ",")
        end }
      ]] }
      local plan = h.simulate{ snapshot = snapshot, policy_dirs = { dir },
                               plugins = { { name = "Probe", ext = "balance" } } }
      h.rmdir(dir)
      assert.equal(1, #plan.errors)
      local list = plan.errors[1].message:match("^probe:(.*)$")
      assert.is_not_nil(list, plan.errors[1].message)
      local out = {}
      for k in (list .. ","):gmatch("([^,]*),") do out[#out + 1] = k end
      return out
    end

    it("classifies with Koordinator's classes", function()
      -- prod thresholds unset are 100%: low nodes are both-low, nodes in
      -- between are prod-low
      assert.same({ "worker-1", "", "worker-3", "worker-4", "worker-2", "worker-5",
                    "worker-6", "worker-7" }, probe(CLUSTER, [[
        local set = ebb.node_loads(nodes, { low = { cpu = 30, memory = 30 },
                                            high = { cpu = 65, memory = 70 } })
        for _, c in ipairs({ "high", "low", "both_low", "prod_low", "normal", "skipped" }) do
          local names = set:nodes(c):names()
          add(#names == 0 and "" or table.concat(names, ","))
        end
      ]]))
    end)

    it("measures systemUsage plus every podsMetric entry, prod usage and pods", function()
      -- worker-1: 7000m / 12Gi, of which 500m / 2Gi systemUsage; prod: the
      -- pods but the Batch Job: 5500m / 9Gi; thresholds of 8000m / 32Gi
      assert.same({ "7000", "12884901888", "5500", "9663676416", "6", "5", "8000", "2400",
                    "5200", "24051816857", "koordinator" }, probe(CLUSTER, [[
        local set = ebb.node_loads(nodes, { low = { cpu = 30, memory = 30 },
                                            high = { cpu = 65, memory = 70 } })
        local u = set:usage("worker-1")
        add(u.usage.cpu, u.usage.memory, u.prod.cpu, u.prod.memory, u.usage.pods, u.prod.pods,
            u.allocatable.cpu, u.low.cpu, u.high.cpu, u.high.memory, u.source)
      ]]))
    end)

    it("reads the raw allocatable and metrics.k8s.io", function()
      assert.same({ "8000", "6000", "metrics", "75.0", "high", "800" }, probe(METRICS, [[
        local set = ebb.node_loads(nodes, { low = { cpu = 30 }, high = { cpu = 65 } })
        local u = set:usage("m-norm")
        add(u.allocatable.cpu, u.usage.cpu, u.source, string.format("%.1f", u.percent.cpu),
            set:class("m-norm"), set:pod_usage(ebb.pod("apps", "y1-9e0f1a2b3-dd4")).cpu)
      ]]))
    end)

    it("orders every candidate, the unmeasured after the measured", function()
      assert.same({ "crawler-a-6c5d4-aa111", "etl-c-8e7f6-cc333", "etl-b-7d6e5-bb222",
                    "api-d-9f8a7-dd444", "web-f-2b3c4-ff666", "web-k-7a8b9-kk111",
                    "web-e-1a2b3-ee555", "web-i-5e6f7-ii999", "web-l-8b9c0-ll222",
                    "web-j-6f7a8-jj000", "web-g-3c4d5-gg777", "web-m-9c0d1-mm333",
                    "web-h-4d5e6-hh888" }, probe(ORDER, [[
        local set = ebb.node_loads(nodes, { low = { cpu = 30 }, high = { cpu = 65 } })
        local pods = ebb.pods("hot-cpu", { filter = true })
        local candidates = set:removable("hot-cpu", pods, set:nodes("both_low"), { node_fit = false })
        for _, p in set:order("hot-cpu", candidates, { cpu = 1, memory = 1 }):iter() do add(p.name) end
      ]]))
    end)

    it("knows Koordinator's priority and QoS classes", function()
      assert.same({ "Free", "LS", "Batch", "LS", "Batch", "BE", "Mid", "LS", "Prod", "LSR",
                    "Prod", "LS", "Prod", "LSE" }, probe(ORDER, [[
        for _, n in ipairs({ "crawler-a-6c5d4-aa111", "etl-b-7d6e5-bb222", "etl-c-8e7f6-cc333",
                             "api-d-9f8a7-dd444", "web-h-4d5e6-hh888", "web-l-8b9c0-ll222",
                             "web-m-9c0d1-mm333" }) do
          add(ebb.koord_class(ebb.pod("apps", n)))
        end
      ]]))
    end)

    it("books reservations and evictions", function()
      -- worker-3 takes etl's 1000m (2600m); capacity is then (5200-2600) +
      -- (5200-1200) = 6600m; evicting checkout from worker-1 takes its
      -- 1500m off the node (5500m, still over) and off the capacity
      assert.same({ "true", "2600", "false", "5500", "5100", "true" }, probe(CLUSTER, [[
        local set = ebb.node_loads(nodes, { low = { cpu = 30, memory = 30 },
                                            high = { cpu = 65, memory = 70 } })
        local etl = ebb.pod("batch", "etl-28850110-zt6v2")
        local fits = set:removable("worker-1", { etl }, { "worker-3" }, { node_fit = true })
        add(#fits == 1, set:usage("worker-3").usage.cpu)
        -- a pod the node's metric does not list is never booked
        add(set:evicted("worker-1", ebb.pod("kube-system", "fluentd-k2j5m"), {}))
        local avail = set:available({ "worker-3", "worker-4" })
        set:evicted("worker-1", ebb.pod("shop", "checkout-6d4f8b9c7-2xk9p"), avail)
        add(set:usage("worker-1").usage.cpu, avail.cpu)
        add((set:overutilized("worker-1")))
      ]]))
    end)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local policy, fails = h.bad_args{ plugin = "LowNodeLoad", ext = "balance", profile = "load",
                                      snapshot = CLUSTER }

    it("rejects a negative numberOfNodes", function()
      fails("      numberOfNodes: -1", 8, ".numberOfNodes",
            "invalid value -1: must be greater than or equal to 0")
    end)

    it("rejects a nodeMetricExpirationSeconds that is not positive", function()
      fails("      lowThresholds: {cpu: 20}\n      nodeMetricExpirationSeconds: 0", 9,
            ".nodeMetricExpirationSeconds", "nodeMetricExpiredSeconds should be a positive value")
    end)

    it("rejects both include and exclude namespaces", function()
      fails("      evictableNamespaces:\n        include: [a]\n        exclude: [b]", 9,
            ".evictableNamespaces", "only one of Include/Exclude namespaces can be set")
    end)

    it("rejects a bad pod selector and a bad pool selector", function()
      fails("      podSelectors:\n      - name: web\n        selector:\n          matchExpressions:\n"
            .. "          - {key: app, operator: In}", 11, ".podSelectors[0].selector",
            "matchExpressions[0].values")
      fails("      nodePools:\n      - name: a\n        nodeSelector:\n          matchExpressions:\n"
            .. "          - {key: pool, operator: Sometimes, values: [a]}", 11,
            ".nodePools[0].nodeSelector", "not a valid label selector operator")
    end)

    it("rejects negative percentages", function()
      fails("      lowThresholds: {cpu: 20}\n      highThresholds:\n        cpu: -5", 10,
            ".highThresholds.cpu", "percentage must be greater than or equal to 0")
      fails("      lowThresholds:\n        cpu: 20\n        memory: -1\n      highThresholds: {cpu: 50}",
            10, ".lowThresholds.memory", "percentage must be greater than or equal to 0")
    end)

    it("rejects a low threshold above the high one", function()
      fails("      lowThresholds:\n        cpu: 80\n      highThresholds:\n        cpu: 60", 9,
            ".lowThresholds.cpu", "invalid value 80: low percentage must be less than or equal to highThresholds")
      fails("      prodLowThresholds:\n        cpu: 40\n      prodHighThresholds:\n        cpu: 30", 9,
            ".prodLowThresholds.cpu",
            "invalid value 40: low percentage must be less than or equal to prodHighThresholds")
    end)

    it("rejects prod high thresholds above the high ones", function()
      fails("      highThresholds:\n        cpu: 60\n      prodHighThresholds:\n        cpu: 70", 11,
            ".prodHighThresholds.cpu",
            "invalid value 70: node percentage must be greater than or equal to prodHighThresholds")
      fails("      highThresholds: {cpu: 60}\n      nodePools:\n      - name: a\n        prodHighThresholds:\n"
            .. "          cpu: 65", 12, ".nodePools[0].prodHighThresholds.cpu",
            "node percentage must be greater than or equal to prodHighThresholds")
    end)

    -- SetDefaults_LowNodeLoadArgs defaults consecutiveNormalities only when
    -- consecutiveAbnormalities was given: written without either, it stays 0
    it("rejects an anomalyCondition whose consecutiveNormalities ends up 0", function()
      fails("      anomalyCondition:\n        timeout: 2m", 9, ".anomalyCondition.consecutiveNormalities",
            "consecutiveNormalities must be greater than 0")
      fails("      anomalyCondition:\n        consecutiveNormalities: 0", 9,
            ".anomalyCondition.consecutiveNormalities", "consecutiveNormalities must be greater than 0")
      -- with consecutiveAbnormalities, a 0 consecutiveNormalities is defaulted to 3
      assert.is_not_nil(h.try{ snapshot = CLUSTER, policy_text = policy(
        "      anomalyCondition:\n        consecutiveAbnormalities: 3\n        consecutiveNormalities: 0") })
    end)

    it("points at the pool's own threshold when the other is inherited", function()
      fails("      lowThresholds: {cpu: 20}\n      highThresholds: {cpu: 60}\n      nodePools:\n"
            .. "      - name: a\n        lowThresholds:\n          cpu: 70", 13,
            ".nodePools[0].lowThresholds.cpu", "low percentage must be less than or equal")
      fails("      lowThresholds: {cpu: 50}\n      highThresholds: {cpu: 60}\n      nodePools:\n"
            .. "      - name: a\n        highThresholds:\n          cpu: 40", 13,
            ".nodePools[0].highThresholds.cpu", "low percentage must be less than or equal")
    end)

    it("rejects wrong types and unknown fields", function()
      fails("      highThresholds:\n        cpu: high", 9, ".highThresholds.cpu", "expected a number")
      fails("      anomalyCondition:\n        consecutiveAbnormalities: -1", 9,
            ".anomalyCondition.consecutiveAbnormalities", "out of range")
      fails("      anomalyCondition:\n        timeout: soon", 9, ".anomalyCondition.timeout",
            "is not a duration")
      fails("      resourceWeights:\n        cpu: 1.5", 9, ".resourceWeights.cpu", "expected an integer")
      fails("      lowThreshold: {cpu: 20}", 8, ".lowThreshold", "unknown field")
      fails("      nodePools:\n      - name: a\n        thresholds: {cpu: 20}", 10,
            ".nodePools[0].thresholds", "unknown field")
      fails("      detectorCacheTimeout: 5", 8, ".detectorCacheTimeout", "expected a duration")
    end)
  end)
end)

-- The args' defaults and the detector, from the policy file itself (plain
-- Lua, no engine: lua/ebb/init.lua and args.lua over a stub of the native
-- module, whose functions only decoding args would call).
describe("LowNodeLoad internals", function()
  local function load_policy()
    local loaded = { ["ebb.native"] = { null = {} } }
    local env
    local function req(name)
      if loaded[name] == nil then
        local path = "lua/" .. name:gsub("%.", "/") .. ".lua"
        if name == "ebb" then path = "lua/ebb/init.lua" end
        loaded[name] = assert(loadfile(path, "t", env))()
      end
      return loaded[name]
    end
    env = setmetatable({ require = req }, { __index = _G })
    return assert(loadfile("policies/low_node_load.lua", "t", env))()
  end
  local M = load_policy()

  describe("defaults (SetDefaults_LowNodeLoadArgs, conversion)", function()
    it("fills the top level", function()
      local r = M.resolve({})
      assert.is_true(r.nodeFit)
      assert.equal(180, r.nodeMetricExpirationSeconds)
      assert.equal(300, r.detectorCacheTimeout)
      assert.equal(0, r.numberOfNodes)
      assert.equal(1, #r.pools)
      assert.equal("__default_node_pool__", r.pools[1].name)
      assert.same({ timeout = 60, consecutiveAbnormalities = 5, consecutiveNormalities = 3 },
                  r.pools[1].anomaly)
      assert.same({ cpu = 1, memory = 1 }, r.pools[1].weights)
    end)

    it("defaults only consecutiveAbnormalities of a written anomalyCondition (if / else if)", function()
      assert.same({ timeout = 10, consecutiveAbnormalities = 5, consecutiveNormalities = 0 },
                  M.resolve({ anomalyCondition = { timeout = 10 } }).pools[1].anomaly)
      assert.same({ consecutiveAbnormalities = 5, consecutiveNormalities = 3 },
                  M.resolve({ anomalyCondition = { consecutiveNormalities = 3 } }).pools[1].anomaly)
      -- else if: with consecutiveAbnormalities given, consecutiveNormalities gets its 3
      assert.same({ consecutiveAbnormalities = 2, consecutiveNormalities = 3 },
                  M.resolve({ anomalyCondition = { consecutiveAbnormalities = 2 } }).pools[1].anomaly)
    end)

    it("puts the default pool first; pools keep their own weights, deviation and empty maps", function()
      local r = M.resolve({ lowThresholds = { cpu = 20 }, highThresholds = { cpu = 80 },
                            useDeviationThresholds = true, nodePools = {
        { name = "own", resourceWeights = { memory = 4 }, lowThresholds = {} } } })
      assert.same({ "__default_node_pool__", "own" }, { r.pools[1].name, r.pools[2].name })
      assert.same({ memory = 4 }, r.pools[2].weights)
      assert.is_false(r.pools[2].deviation)
      assert.same({}, r.pools[2].low)
      assert.same({ cpu = 80 }, r.pools[2].high)
    end)

    it("weighs threshold resources and keeps given weights above 0", function()
      local r = M.resolve({ lowThresholds = { cpu = 30, memory = 30, pods = 10 },
                            resourceWeights = { cpu = 10, memory = 0, ["nvidia.com/gpu"] = 0 } })
      assert.same({ cpu = 10, memory = 1, pods = 1, ["nvidia.com/gpu"] = 0 }, r.pools[1].weights)
    end)

    -- TestSetDefaults_NodePoolsUseDefaultArgsFromLowNodeLoadArgs
    it("lets pools inherit what they leave unset", function()
      local r = M.resolve({
        highThresholds = { cpu = 80 }, lowThresholds = { cpu = 20 },
        prodHighThresholds = { cpu = 90 }, prodLowThresholds = { cpu = 10 },
        resourceWeights = { cpu = 2 },
        anomalyCondition = { timeout = 120, consecutiveAbnormalities = 10, consecutiveNormalities = 5 },
        nodePools = {
          { name = "plain" },
          { name = "own", highThresholds = { cpu = 70 },
            anomalyCondition = { timeout = 60, consecutiveAbnormalities = 0 } },
          { name = "counts", anomalyCondition = { consecutiveAbnormalities = 3, consecutiveNormalities = 2 } },
        },
      })
      local default, plain, own, counts = r.pools[1], r.pools[2], r.pools[3], r.pools[4]
      assert.same({ cpu = 80 }, plain.high)
      assert.same({ cpu = 10 }, plain.prod_low)
      assert.same({ cpu = 2, memory = 1 }, plain.weights)
      assert.same({ timeout = 120, consecutiveAbnormalities = 10, consecutiveNormalities = 5 }, plain.anomaly)
      assert.same({ cpu = 70 }, own.high)
      assert.same({ cpu = 20 }, own.low)
      assert.same({ timeout = 60, consecutiveAbnormalities = 10, consecutiveNormalities = 5 }, own.anomaly)
      -- the timeout is not inherited
      assert.same({ consecutiveAbnormalities = 3, consecutiveNormalities = 2 }, counts.anomaly)
      assert.equal("__default_node_pool__", default.name)
      assert.equal(4, #r.pools)
    end)
  end)

  describe("the anomaly detector (BasicDetector)", function()
    local D = M.detector
    local T = 1000

    it("turns anomalous on the abnormality after consecutiveAbnormalities", function()
      local d = D.new({ consecutiveAbnormalities = 5, consecutiveNormalities = 3 })
      for _ = 1, 5 do assert.equal("ok", D.mark(d, false, T)) end
      assert.equal("anomaly", D.mark(d, false, T))
    end)

    it("turns normal after more than consecutiveNormalities normal marks", function()
      local d = D.new({ consecutiveAbnormalities = 1, consecutiveNormalities = 3 })
      D.mark(d, false, T)
      assert.equal("anomaly", D.mark(d, false, T))
      for _ = 1, 3 do assert.equal("anomaly", D.mark(d, true, T)) end
      assert.equal("ok", D.mark(d, true, T))
    end)

    it("forgets normal marks on an abnormal one", function()
      local d = D.new({ consecutiveAbnormalities = 0, consecutiveNormalities = 1 })
      assert.equal("anomaly", D.mark(d, false, T))
      assert.equal("anomaly", D.mark(d, true, T))
      assert.equal("anomaly", D.mark(d, false, T))
      assert.equal("anomaly", D.mark(d, true, T))
      assert.equal("ok", D.mark(d, true, T))
    end)

    it("leaves the anomaly state after its timeout (60s when unset)", function()
      local d = D.new({ consecutiveAbnormalities = 0, consecutiveNormalities = 3 })
      assert.equal("anomaly", D.mark(d, false, T))
      assert.equal("anomaly", D.mark(d, false, T + 60))
      -- past the timeout the state is OK again and the mark counts anew
      assert.equal("ok", D.mark(d, true, T + 61))
      d = D.new({ timeout = 300, consecutiveAbnormalities = 0, consecutiveNormalities = 3 })
      D.mark(d, false, T)
      assert.equal("anomaly", D.mark(d, false, T + 299))
    end)

    it("goes back to normal after one normal mark with consecutiveNormalities 0", function()
      local d = D.new({ consecutiveAbnormalities = 0, consecutiveNormalities = 0 })
      assert.equal("anomaly", D.mark(d, false, T))
      assert.equal("ok", D.mark(d, true, T))
    end)

    it("keeps the abnormal count when reset while still OK", function()
      local d = D.new({ consecutiveAbnormalities = 2, consecutiveNormalities = 3 })
      D.mark(d, false, T)
      D.mark(d, false, T)
      D.reset(d, T)
      assert.equal("anomaly", D.mark(d, false, T))
      D.reset(d, T)
      assert.equal("ok", D.mark(d, false, T))
    end)
  end)
end)
