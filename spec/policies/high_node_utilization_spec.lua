-- HighNodeUtilization through the real engine on
-- spec/fixtures/utilization-pack.json (built by
-- spec/fixtures/build_utilization.py; 4 cpu, 16Gi, 50 pods per node).
-- Expected plans follow kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/nodeutilization (highnodeutilization.go,
-- nodeutilization.go, validation.go and their tests): a node is
-- underutilized when every thresholded resource is <= its threshold,
-- cordoned nodes included; every other schedulable node is a target that
-- can take up to its allocatable. Sources least used first, pods lowest
-- priority first, evicted while the targets can take every resource.
local h = require("spec.helpers")

local PACK = "spec/fixtures/utilization-pack.json"
local SHOP = "spec/fixtures/utilization.json"

local function run(args, o)
  o = o or {}
  return h.simulate{ snapshot = o.snapshot or PACK, plugin = "HighNodeUtilization", ext = "balance",
                     args = args, evictor = o.evictor, top = o.top }
end

-- pool-3 (10%, cordoned): a DaemonSet pod and
local NOTIFIER = "ops/notifier-5f6a7b8c9-p3a01"      -- 300m, tolerates team=ml
-- pool-1 (20%)
local MAILER = "apps/mailer-2c3d4e5f6-p1b02"         -- BestEffort
local BILLING = "apps/billing-1b2c3d4e5-p1a01"       -- 300m
local PDF = "apps/pdf-3d4e5f6a7-p1c03"               -- 500m, tolerates team=ml
-- pool-5 (30%): a bare pod and
local SEARCH_B = "apps/search-7b8c9d0e1-p5b02"       -- 400m
local SEARCH_A = "apps/search-7b8c9d0e1-p5a01"       -- business-high, 600m

local T = { cpu = 30 }

describe("HighNodeUtilization", function()
  it("drains the least used nodes first into the fuller ones until they are full", function()
    -- under: pool-3 (cordoned, still a source), pool-1, pool-5 (exactly
    -- 30%); targets pool-2 and pool-4 can take 600m + 400m of cpu: the pdf
    -- eviction overdraws it and pool-5 is not touched
    local plan = run{ thresholds = T }
    assert.same({ NOTIFIER, MAILER, BILLING, PDF }, plan:pods())
    assert.same({}, plan:refused())
    assert.same({}, plan.errors)
    assert.equal("node pool-3 is underutilized: cpu 10.00% <= 30.00%", plan.evictions[1].reason)
    assert.equal("pool-3", plan.evictions[1].node)
    assert.equal("node pool-1 is underutilized: cpu 20.00% <= 30.00%", plan.evictions[2].reason)
  end)

  it("evicts only pods requesting a thresholded resource with OnlyThresholdingResources", function()
    local plan = run{ thresholds = T, evictionModes = { "OnlyThresholdingResources" } }
    assert.same({ NOTIFIER, BILLING, PDF }, plan:pods())
  end)

  it("evicts only pods that tolerate some target's taints", function()
    -- without pool-2 the only target is pool-4 (team=ml:NoSchedule), 400m free
    local plan = run({ thresholds = T }, { top = { nodeSelector = "pool!=big" } })
    assert.same({ NOTIFIER, PDF }, plan:pods())
  end)

  it("leaves evictableNamespaces.exclude alone", function()
    -- without the notifier the budget reaches pool-5; its bare pod is
    -- protected and the business-high search pod comes last
    local plan = run{ thresholds = T, evictableNamespaces = { exclude = { "ops" } } }
    assert.same({ MAILER, BILLING, PDF, SEARCH_B }, plan:pods())
  end)

  it("moves on at the policy's per-node limit and has no limit of its own", function()
    local plan = run({ thresholds = T }, { top = { maxNoOfPodsToEvictPerNode = 1 } })
    assert.same({ NOTIFIER, MAILER, SEARCH_B }, plan:pods())
    assert.same({ BILLING, SEARCH_A }, plan:refused("node-limit"))
  end)

  it("ends at the total limit", function()
    local plan = run({ thresholds = T }, { top = { maxNoOfPodsToEvictTotal = 2 } })
    assert.same({ NOTIFIER, MAILER }, plan:pods())
    assert.same({ BILLING }, plan:refused("total-limit"))
  end)

  it("skips pods PreEvictionFilter refuses (nodeFit)", function()
    -- with nodeFit a pod must fit another schedulable node: pool-2 has 600m
    -- free, enough for each of them
    local plan = run({ thresholds = T }, { evictor = { nodeFit = true } })
    assert.same({ NOTIFIER, MAILER, BILLING, PDF }, plan:pods())
    -- DefaultEvictor's nodeSelector leaves only pool-4 (team=ml, 400m free)
    -- to fit on: the notifier does; pdf tolerates it but needs 500m
    plan = run({ thresholds = T }, { evictor = { nodeFit = true, nodeSelector = "pool=ml" } })
    assert.same({ NOTIFIER }, plan:pods())
  end)

  it("stops when no more nodes than numberOfNodes are underutilized", function()
    local plan = run{ thresholds = T, numberOfNodes = 3 }
    assert.same({}, plan:pods())
    assert.same({ "Number of nodes underutilized (3) is less or equal than NumberOfNodes (3), nothing to do here" },
      plan:note_messages())
    assert.same({ NOTIFIER, MAILER, BILLING, PDF }, run{ thresholds = T, numberOfNodes = 2 }:pods())
  end)

  it("does nothing when every node is underutilized (issue #725)", function()
    local plan = run{ thresholds = { cpu = 95 } }
    assert.same({}, plan:pods())
    assert.same({ "All nodes are underutilized, nothing to do here" }, plan:note_messages())
  end)

  it("does nothing without a schedulable target", function()
    -- pool-6 (70%) is cordoned: not a target
    local plan = run({ thresholds = T }, { top = { nodeSelector = "kubernetes.io/hostname in (pool-1,pool-3,pool-6)" } })
    assert.same({}, plan:pods())
    assert.same({ "No node is available to schedule the pods, nothing to do here" }, plan:note_messages())
  end)

  it("says when no node is underutilized", function()
    local plan = run{ thresholds = { cpu = 5 } }
    assert.same({}, plan:pods())
    assert.same({ "No node is underutilized, nothing to do here, you might tune your thresholds further" },
      plan:note_messages())
  end)

  it("needs every thresholded resource under its threshold", function()
    -- memory 9.38% on pool-1 and 14.06% on pool-5 are over 9%
    local plan = run{ thresholds = { cpu = 30, memory = 9 } }
    assert.same({ NOTIFIER }, plan:pods())
  end)

  it("counts protected pods in the usage and never evicts them", function()
    -- the shop cluster at 45%: zone a (80%, 70%) takes 2000m. Least used
    -- first: worker-c-2 holds DaemonSets only, worker-c-1 the batch export
    -- (no cpu request), worker-b-1 a frontend, worker-b-2 three pods
    -- (media/ before shop/ at equal priority)
    local plan = run({ thresholds = { cpu = 45 } }, { snapshot = SHOP })
    assert.same({ "batch/export-2f3e4d5c6-v3b4n", "shop/frontend-5c6d7e8f9-a1s2d",
                  "media/thumbnailer-3a4b5c6d7-z1x2c", "shop/frontend-5c6d7e8f9-f3g4h",
                  "shop/inventory-4b5c6d7e8-j5k6l" }, plan:pods())
    assert.equal("node worker-c-1 is underutilized: cpu 5.00% <= 45.00%", plan.evictions[1].reason)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local policy, fails = h.bad_args{ plugin = "HighNodeUtilization", ext = "balance",
                                      profile = "pack", snapshot = PACK,
                                      words = "HighNodeUtilization: " }

    it("accepts the README example", function()
      assert.is_not_nil(h.try{ snapshot = PACK, policy_text = policy(
        "      thresholds:\n        cpu: 20\n        memory: 20\n        pods: 20\n"
        .. "      evictionModes: [OnlyThresholdingResources]") })
    end)

    it("refuses evictableNamespaces.include", function()
      fails("      thresholds: {cpu: 20}\n      evictableNamespaces:\n        include: [apps]", 10,
        ".evictableNamespaces.include", "only Exclude namespaces can be set, inclusion is not supported")
    end)

    it("needs thresholds in [0, 100]", function()
      fails("      numberOfNodes: 1", 8, ".thresholds", "no resource threshold is configured")
      fails("      thresholds: {}", 8, ".thresholds", "no resource threshold is configured")
      fails("      thresholds:\n        cpu: 50\n        memory: 150", 10, ".thresholds.memory",
        "memory threshold not in [0, 100] range")
      fails("      thresholds:\n        cpu: -1", 9, ".thresholds.cpu", "cpu threshold not in [0, 100] range")
    end)

    it("knows one eviction mode", function()
      fails("      thresholds: {cpu: 20}\n      evictionModes:\n      - OnlyThresholdingResources\n      - InvalidMode",
        11, ".evictionModes[1]", "invalid eviction mode InvalidMode")
    end)

    it("decodes strictly: no targets, no metrics", function()
      fails("      thresholds: {cpu: 20}\n      targetThresholds: {cpu: 50}", 9, ".targetThresholds",
        'unknown field "targetThresholds"')
      fails("      thresholds: {cpu: 20}\n      metricsUtilization: {metricsServer: true}", 9, ".metricsUtilization",
        'unknown field "metricsUtilization"')
      fails("      thresholds: {cpu: 20}\n      evictionLimits: {node: 1}", 9, ".evictionLimits",
        'unknown field "evictionLimits"')
    end)
  end)
end)
