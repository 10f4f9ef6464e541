-- RemovePodsViolatingNodeAffinity through the real engine on
-- spec/fixtures/node_affinity.json (built by spec/fixtures/build_groups.py).
-- Expected plans follow kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/removepodsviolatingnodeaffinity (node_affinity.go,
-- node_affinity_test.go, validation.go): types in the order given, nodes by
-- name; required: has required affinity, its node does not match
-- nodeSelector + required affinity, fits some node; preferred: has
-- preferred terms, fits some node, best weight on any node above its node's.
--
-- Nodes: gpu-b-1 (tainted, accelerator=nvidia-a10g), od-a-1 (on-demand,
-- ssd), od-b-1 (on-demand), od-c-1 (on-demand, cordoned), spot-a-1,
-- spot-c-1.
local h = require("spec.helpers")

local SNAP = "spec/fixtures/node_affinity.json"
local REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
local PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

local function run(args, o)
  o = o or {}
  return h.simulate{ snapshot = SNAP, plugin = "RemovePodsViolatingNodeAffinity", args = args,
                     evictor = o.evictor, top = o.top }
end

-- required
local INVOICE_SPOT_A = "billing/invoice-6c7d8e9f0-a1s2d"  -- on-demand required, on spot-a-1
local INVOICE_SPOT_C = "billing/invoice-6c7d8e9f0-j5k6l"  -- same, on spot-c-1
local CRAWLER = "search/crawler-1b2c3d4e5-z5x6c"         -- on-demand required + prefers zone b, spot-a-1
local LEDGER = "billing/ledger-5b6c7d8e9-q7w8e"          -- any zone, nodeSelector ssd, spot-c-1
local FRAMES_GPU = "render/frames-gpu-8f9a0b1c2-n5m6q"   -- needs the gpu node, tolerates it
-- preferred
local QUERY = "search/query-4e5f6a7b8-a9s0d"             -- prefers an accelerator (80), od-a-1
local SUGGEST = "search/suggest-6a7b8c9d0-e2r3t"         -- prefers an accelerator (60), fits od-a-1 only
local RANKER = "search/ranker-2c3d4e5f6-j3k4l"           -- 30 here (od-b-1), 40 on od-a-1
local INDEXER_C = "search/indexer-5f6a7b8c9-t5y6u"       -- prefers zone a (50), on spot-c-1

local REQUIRED_PLAN = { INVOICE_SPOT_A, CRAWLER, INVOICE_SPOT_C, LEDGER, FRAMES_GPU }
local PREFERRED_PLAN = { QUERY, SUGGEST, RANKER, CRAWLER, INDEXER_C }

describe("RemovePodsViolatingNodeAffinity", function()
  describe("required", function()
    it("evicts pods whose node no longer matches their required affinity and nodeSelector", function()
      local plan = run({ nodeAffinityType = { REQUIRED } })
      assert.same(REQUIRED_PLAN, plan:pods())
      assert.same({}, plan.refusals)
      assert.same({}, plan.notes)
      assert.equal("pod does not match the required node affinity of node spot-a-1", plan.evictions[1].reason)
      assert.equal("spot-a-1", plan.evictions[1].node)
    end)

    it("keeps the pods that fit no node: a tainted one, a cordoned one, one nobody labels", function()
      -- render/frames wants the gpu node without tolerating its taint;
      -- billing/archiver wants on-demand in zone c (od-c-1 is cordoned);
      -- render/preview wants an nvidia-h100 no node has
      local plan = run({ nodeAffinityType = { REQUIRED }, namespaces = h.only("render", "billing") })
      assert.same({ INVOICE_SPOT_A, INVOICE_SPOT_C, LEDGER, FRAMES_GPU }, plan:pods())
    end)

    it("needs required node affinity: a nodeSelector alone does not count", function()
      -- billing/reporting has nodeSelector disktype=ssd on spot-c-1, no affinity
      local plan = run({ nodeAffinityType = { REQUIRED },
                         labelSelector = { matchLabels = { app = "reporting" } } })
      assert.same({}, plan:pods())
    end)

    it("never evicts a terminating pod", function()
      -- billing/invoice-...-p0z9x is on spot-a-1 too, being deleted
      local plan = run({ nodeAffinityType = { REQUIRED }, labelSelector = { matchLabels = { app = "invoice" } } })
      assert.same({ INVOICE_SPOT_A, INVOICE_SPOT_C }, plan:pods())
    end)
  end)

  describe("preferred", function()
    it("evicts pods that prefer another node more than their own", function()
      local plan = run({ nodeAffinityType = { PREFERRED } })
      -- search/indexer on od-a-1 already has the best weight, search/cache
      -- (20 for zone a, 20 for zone b) is on zone b: equal is not better
      assert.same(PREFERRED_PLAN, plan:pods())
      assert.equal("pod prefers other nodes: preferred node affinity weight 30 on node od-b-1, "
        .. "40 on node od-a-1", plan.evictions[3].reason)
    end)

    it("takes the best weight over every node, also one the pod cannot use", function()
      -- search/query's best node is the tainted gpu node; it fits od-a-1 (its
      -- own) so it goes, and may come back: upstream issue #1707
      local plan = run({ nodeAffinityType = { PREFERRED }, labelSelector = { matchLabels = { app = "query" } } })
      assert.same({ QUERY }, plan:pods())
      assert.equal("pod prefers other nodes: preferred node affinity weight 0 on node od-a-1, "
        .. "80 on node gpu-b-1", plan.evictions[1].reason)
    end)
  end)

  describe("nodeAffinityType", function()
    it("runs the types in the order given", function()
      -- crawler goes in the required pass and is gone for the preferred one
      assert.same({ INVOICE_SPOT_A, CRAWLER, INVOICE_SPOT_C, LEDGER, FRAMES_GPU, QUERY, SUGGEST, RANKER, INDEXER_C },
        run({ nodeAffinityType = { REQUIRED, PREFERRED } }):pods())
      assert.same({ QUERY, SUGGEST, RANKER, CRAWLER, INDEXER_C, INVOICE_SPOT_A, INVOICE_SPOT_C, LEDGER, FRAMES_GPU },
        run({ nodeAffinityType = { PREFERRED, REQUIRED } }):pods())
    end)

    it("notes a type it does not know and runs the others", function()
      local plan = run({ nodeAffinityType = { "requiredDuringSchedulingRequiredDuringExecution" } })
      assert.same({}, plan:pods())
      assert.equal(1, #plan.notes)
      assert.equal('invalid nodeAffinityType "requiredDuringSchedulingRequiredDuringExecution": expected '
        .. REQUIRED .. " or " .. PREFERRED, plan.notes[1].message)
      assert.equal("RemovePodsViolatingNodeAffinity", plan.notes[1].plugin)
      plan = run({ nodeAffinityType = { "requiredDuringSchedulingRequiredDuringExecution", REQUIRED } })
      assert.same(REQUIRED_PLAN, plan:pods())
      assert.equal(1, #plan.notes)
    end)
  end)

  describe("namespaces and labelSelector", function()
    it("narrow the pods looked at", function()
      assert.same({ QUERY, SUGGEST, RANKER, CRAWLER, INDEXER_C },
        run({ nodeAffinityType = { PREFERRED }, namespaces = h.only("search") }):pods())
      assert.same({ CRAWLER, QUERY, SUGGEST, RANKER, INDEXER_C },
        run({ nodeAffinityType = { REQUIRED, PREFERRED }, namespaces = h.only("search") }):pods())
      assert.same({ INVOICE_SPOT_A, INVOICE_SPOT_C, LEDGER },
        run({ nodeAffinityType = { REQUIRED }, namespaces = { exclude = { "search", "render" } } }):pods())
    end)
  end)

  describe("with the evictor", function()
    it("with nodeFit also needs another node the pod fits", function()
      -- the plugin asks for a fit on any node, its own included; nodeFit asks
      -- for another: search/suggest fits only od-a-1, where it runs
      assert.same({ QUERY, RANKER, CRAWLER, INDEXER_C },
        run({ nodeAffinityType = { PREFERRED } }, { evictor = { nodeFit = true } }):pods())
      assert.same(REQUIRED_PLAN, run({ nodeAffinityType = { REQUIRED } }, { evictor = { nodeFit = true } }):pods())
    end)

    it("moves on to the next node at the node limit, in each pass", function()
      local plan = run({ nodeAffinityType = { REQUIRED, PREFERRED } }, { top = { maxNoOfPodsToEvictPerNode = 1 } })
      assert.same({ INVOICE_SPOT_A, INVOICE_SPOT_C, QUERY, RANKER }, plan:pods())
      -- crawler is refused twice: once per pass
      assert.same({ CRAWLER, LEDGER, SUGGEST, CRAWLER, INDEXER_C }, plan:refused("node-limit"))
    end)

    it("ends a pass at the total limit; the next type still runs and meets it", function()
      local plan = run({ nodeAffinityType = { REQUIRED, PREFERRED } }, { top = { maxNoOfPodsToEvictTotal = 1 } })
      assert.same({ INVOICE_SPOT_A }, plan:pods())
      assert.same({ CRAWLER, QUERY }, plan:refused("total-limit"))
      assert.same({ CRAWLER, QUERY }, plan:refused())
    end)

    it("goes on with the next pod after any other refusal", function()
      local plan = run({ nodeAffinityType = { REQUIRED } }, { top = { maxNoOfPodsToEvictPerNamespace = 1 } })
      -- billing: one eviction, then its pods are refused; others go on
      assert.same({ INVOICE_SPOT_A, CRAWLER, FRAMES_GPU }, plan:pods())
      assert.same({ INVOICE_SPOT_C, LEDGER }, plan:refused("namespace-limit"))
    end)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local _, fails = h.bad_args{ plugin = "RemovePodsViolatingNodeAffinity", profile = "affinity",
                                 snapshot = SNAP }

    it("needs nodeAffinityType", function()
      fails("      namespaces: {include: [billing]}", 8, ".nodeAffinityType", "nodeAffinityType needs to be set")
      fails("      nodeAffinityType: []", 8, ".nodeAffinityType", "nodeAffinityType needs to be set")
    end)

    it("rejects a nodeAffinityType that is not a list of strings", function()
      fails("      nodeAffinityType: " .. REQUIRED, 8, ".nodeAffinityType", "expected a list")
    end)

    it("rejects both include and exclude namespaces", function()
      fails("      nodeAffinityType: [" .. REQUIRED .. "]\n      namespaces:\n        include: [a]\n        exclude: [b]",
            10, ".namespaces", "only one of Include/Exclude namespaces can be set")
    end)

    it("rejects a labelSelector that does not parse", function()
      fails("      nodeAffinityType: [" .. REQUIRED .. "]\n      labelSelector:\n        matchExpressions:\n"
            .. "        - {key: app, operator: In}", 10, ".labelSelector", "matchExpressions[0].values")
    end)

    it("rejects an unknown field", function()
      fails("      nodeAffinityTypes: [" .. REQUIRED .. "]", 8, ".nodeAffinityTypes", 'unknown field')
    end)
  end)
end)
