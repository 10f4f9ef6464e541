-- RemovePodsViolatingNodeTaints through the real engine on
-- spec/fixtures/taints.json (built by spec/fixtures/build.py). Expected plans
-- follow kubernetes-sigs/descheduler v0.36 removepodsviolatingnodetaints
-- (node_taint.go, node_taint_test.go): NoSchedule taints (plus
-- PreferNoSchedule with includePreferNoSchedule), never NoExecute;
-- excludedTaints / includedTaints entries are "key" or "key=value", the
-- value form never matching an empty value; includedTaints unset means all.
-- Nodes are walked in name order, a node's pods by namespace/name; the node
-- limit moves on to the next node, the total limit ends the plugin.
--
--   cp-1         node-role.kubernetes.io/control-plane:NoSchedule (no value)
--   general-b-1  maintenance=scheduled:PreferNoSchedule
--   general-e-1  no taints
--   gpu-a-1      dedicated=gpu:NoSchedule
--   infra-d-1    dedicated=infra:NoSchedule, storage=ssd:NoSchedule
--   spot-c-1     spot=true:NoExecute
local h = require("spec.helpers")
local S = require("spec.shell")

local SNAP = "spec/fixtures/taints.json"
local PLUGIN = "RemovePodsViolatingNodeTaints"

local function run(args, o)
  o = o or {}
  return h.simulate{ snapshot = SNAP, plugin = PLUGIN, args = args, evictor = o.evictor, top = o.top }
end

-- cp-1: no toleration for the control-plane taint
local DASH = "ops/dashboard-7b6c5d4e3-q1w2e"
-- general-b-1: no toleration for maintenance:PreferNoSchedule
local FE_PREF = "web/frontend-5f4e3d2c1-a1s2d"
-- gpu-a-1
local FLUENT = "logging/fluent-bit-8ada6"             -- DaemonSet, hostPath, no toleration
local NB_NONE = "ml/notebook-4c5d6e7f8-m5n6b"         -- no toleration
local NB_WRONG_VALUE = "ml/notebook-4c5d6e7f8-q7w8e"  -- dedicated=cpu:NoSchedule
local PRE_WRONG_EFFECT = "ml/preproc-3b4c5d6e7-r9t0y" -- dedicated=gpu:NoExecute
-- infra-d-1
local CACHE_SSD = "data/cache-8f9a0b1c2-a3s4d"        -- storage=ssd and dedicated=gpu
local CACHE_NONE = "data/cache-8f9a0b1c2-f5g6h"       -- none; cache PDB allows 1
local PG0 = "data/pg-0"                               -- dedicated=infra only

local DEFAULT = { DASH, NB_NONE, NB_WRONG_VALUE, PRE_WRONG_EFFECT, CACHE_SSD, PG0 }

describe("RemovePodsViolatingNodeTaints", function()
  describe("NoSchedule taints", function()
    it("evicts pods that do not tolerate them, node by node", function()
      -- stay: trainers (Equal with effect, Exists without effect, Equal by
      -- an empty operator), sweeper (empty key, Exists), metrics-agent,
      -- pg-1 (both taints), the mirror apiserver, the DaemonSet and the bare
      -- scratchpad (protected), the Succeeded batch-infer pod (not active),
      -- frontends on the PreferNoSchedule, untainted and NoExecute nodes
      local plan = run(nil)
      assert.same(DEFAULT, plan:pods())
      assert.same({ CACHE_NONE }, plan:refused("pdb"))
      assert.same({ CACHE_NONE }, plan:refused())
      assert.same({}, plan.errors)
      for _, e in ipairs(plan.evictions) do assert.equal(PLUGIN, e.plugin) end
    end)

    it("takes PreferNoSchedule taints with includePreferNoSchedule", function()
      local plan = run{ includePreferNoSchedule = true }
      assert.same({ DASH, FE_PREF, NB_NONE, NB_WRONG_VALUE, PRE_WRONG_EFFECT, CACHE_SSD, PG0 }, plan:pods())
      assert.same({ CACHE_NONE }, plan:refused("pdb"))
    end)

    it("never takes NoExecute taints", function()
      assert.same({}, run{ includedTaints = { "spot" } }:pods())
      assert.same({}, run{ includedTaints = { "spot=true" }, includePreferNoSchedule = true }:pods())
    end)
  end)

  -- k8s.io/api v0.35+ tolerations with operator Lt or Gt compare integer
  -- values; the descheduler v0.36 asks ToleratesTaint with the comparison
  -- on. general-e-1 gets example.com/sla=950:NoSchedule and its frontend
  -- one toleration of that key.
  describe("Lt and Gt tolerations", function()
    local json = require("dkjson")
    local FE_E = "web/frontend-5f4e3d2c1-j5k6l"
    local function with_sla(op, value)
      local snap = json.decode(assert(S.read(SNAP)))
      for _, it in ipairs(snap.items) do
        if it.kind == "Node" and it.metadata.name == "general-e-1" then
          it.spec.taints = { { key = "example.com/sla", value = "950", effect = "NoSchedule" } }
        elseif it.kind == "Pod" and it.metadata.name == "frontend-5f4e3d2c1-j5k6l" then
          table.insert(it.spec.tolerations, { key = "example.com/sla", operator = op, value = value,
                                              effect = "NoSchedule" })
        end
      end
      return h.simulate{ snapshot_text = json.encode(snap), plugin = PLUGIN,
                         args = { includedTaints = { "example.com/sla" } } }:pods()
    end

    it("tolerate a taint whose value is above (Gt) or below (Lt) theirs", function()
      assert.same({}, with_sla("Gt", "900"))
      assert.same({}, with_sla("Lt", "1000"))
      assert.same({}, with_sla("Gt", "-5"))
      assert.same({ FE_E }, with_sla("Gt", "950"))
      assert.same({ FE_E }, with_sla("Lt", "950"))
      assert.same({ FE_E }, with_sla("Lt", "20"))
    end)

    it("tolerate nothing unless both values are canonical decimal integers", function()
      assert.same({ FE_E }, with_sla("Gt", "0900"))
      assert.same({ FE_E }, with_sla("Gt", "+900"))
      assert.same({ FE_E }, with_sla("Lt", "1e3"))
      assert.same({ FE_E }, with_sla("Lt", "99999999999999999999"))
      assert.same({}, with_sla("Gt", "0"))
    end)
  end)

  describe("includedTaints", function()
    local cases = {
      { { "dedicated" }, false, { NB_NONE, NB_WRONG_VALUE, PRE_WRONG_EFFECT, CACHE_SSD }, { CACHE_NONE } },
      { { "dedicated=infra" }, false, { CACHE_SSD }, { CACHE_NONE } },
      -- on infra-d-1 only storage counts: cache-f5g6h goes first this time
      { { "dedicated=gpu", "storage" }, false, { NB_NONE, NB_WRONG_VALUE, PRE_WRONG_EFFECT, CACHE_NONE, PG0 }, {} },
      { { "maintenance" }, false, {}, {} },
      { { "maintenance=scheduled" }, true, { FE_PREF }, {} },
      { { "maintenance=other" }, true, {}, {} },
      -- "key=" never matches a taint without a value
      { { "node-role.kubernetes.io/control-plane=" }, false, {}, {} },
      { { "node-role.kubernetes.io/control-plane" }, false, { DASH }, {} },
    }
    for _, c in ipairs(cases) do
      it("keeps only " .. table.concat(c[1], ",") .. (c[2] and " (with PreferNoSchedule)" or ""), function()
        local plan = run{ includedTaints = c[1], includePreferNoSchedule = c[2] }
        assert.same(c[3], plan:pods())
        assert.same(c[4], plan:refused("pdb"))
      end)
    end

    it("includes nothing when given an empty list (set, unlike unset)", function()
      assert.same({}, run{ includedTaints = h.array() }:pods())
    end)
  end)

  describe("excludedTaints", function()
    local cases = {
      { { "dedicated" }, { DASH, CACHE_NONE, PG0 }, {} },
      { { "storage=ssd" }, { DASH, NB_NONE, NB_WRONG_VALUE, PRE_WRONG_EFFECT, CACHE_SSD }, { CACHE_NONE } },
      { { "storage=hdd" }, DEFAULT, { CACHE_NONE } },
      { { "node-role.kubernetes.io/control-plane" },
        { NB_NONE, NB_WRONG_VALUE, PRE_WRONG_EFFECT, CACHE_SSD, PG0 }, { CACHE_NONE } },
      -- "key=" does not exclude a taint without a value
      { { "node-role.kubernetes.io/control-plane=" }, DEFAULT, { CACHE_NONE } },
      { { "dedicated=gpu", "dedicated=infra", "storage" }, { DASH }, {} },
    }
    for _, c in ipairs(cases) do
      it("leaves out " .. table.concat(c[1], ","), function()
        local plan = run{ excludedTaints = c[1] }
        assert.same(c[2], plan:pods())
        assert.same(c[3], plan:refused("pdb"))
      end)
    end

    it("excludes nothing when given an empty list", function()
      assert.same(DEFAULT, run{ excludedTaints = h.array() }:pods())
    end)
  end)

  describe("namespaces and labelSelector", function()
    it("filters namespaces", function()
      assert.same({ NB_NONE, NB_WRONG_VALUE, PRE_WRONG_EFFECT }, run{ namespaces = { include = { "ml" } } }:pods())
      assert.same({ DASH }, run{ namespaces = { exclude = { "ml", "data" } } }:pods())
    end)

    it("filters labels", function()
      assert.same({ NB_NONE, NB_WRONG_VALUE },
        run{ labelSelector = { matchExpressions = { { key = "app", operator = "In", values = { "notebook" } } } } }:pods())
      local plan = run{ namespaces = { include = { "data" } }, labelSelector = { matchLabels = { app = "pg" } } }
      assert.same({ PG0 }, plan:pods())
      assert.same({}, plan.refusals)
    end)
  end)

  describe("with the DefaultEvictor", function()
    it("evicts the DaemonSet pod once DaemonSetPods and PodsWithLocalStorage are off", function()
      local plan = run(nil, { evictor = { evictDaemonSetPods = true, evictLocalStoragePods = true } })
      assert.same({ DASH, FLUENT, NB_NONE, NB_WRONG_VALUE, PRE_WRONG_EFFECT, CACHE_SSD, PG0 }, plan:pods())
    end)

    it("still keeps the Running bare pod with FailedBarePods off", function()
      assert.same(DEFAULT, run(nil, { evictor = { evictFailedBarePods = true } }):pods())
    end)

    it("with nodeFit keeps pods that tolerate no other candidate node", function()
      -- every pod fits general-e-1 ...
      assert.same(DEFAULT, run(nil, { evictor = { nodeFit = true } }):pods())
      -- ... but among cp-1, gpu-a-1 and infra-d-1 only cache-a3s4d (which
      -- tolerates dedicated=gpu) has somewhere to go
      local plan = run(nil, { evictor = { nodeFit = true,
        nodeSelector = "kubernetes.io/hostname in (cp-1,gpu-a-1,infra-d-1)" } })
      assert.same({ CACHE_SSD }, plan:pods())
      assert.same({}, plan.refusals)
    end)
  end)

  describe("eviction limits", function()
    it("moves to the next node at maxNoOfPodsToEvictPerNode", function()
      local plan = run(nil, { top = { maxNoOfPodsToEvictPerNode = 1 } })
      assert.same({ DASH, NB_NONE, CACHE_SSD }, plan:pods())
      -- one refusal per full node: the rest of that node is not tried
      assert.same({ NB_WRONG_VALUE, CACHE_NONE }, plan:refused("node-limit"))
      assert.same({ NB_WRONG_VALUE, CACHE_NONE }, plan:refused())
    end)

    it("keeps going on a node after a PDB refusal, which does not count", function()
      local plan = run(nil, { top = { maxNoOfPodsToEvictPerNode = 2 } })
      assert.same({ DASH, NB_NONE, NB_WRONG_VALUE, CACHE_SSD, PG0 }, plan:pods())
      assert.same({ PRE_WRONG_EFFECT }, plan:refused("node-limit"))
      assert.same({ CACHE_NONE }, plan:refused("pdb"))
    end)

    it("stops at maxNoOfPodsToEvictTotal", function()
      local plan = run(nil, { top = { maxNoOfPodsToEvictTotal = 2 } })
      assert.same({ DASH, NB_NONE }, plan:pods())
      assert.same({ NB_WRONG_VALUE }, plan:refused())
      assert.equal("total-limit", plan.refusals[1].why)
    end)

    it("refuses the rest of a namespace at maxNoOfPodsToEvictPerNamespace and goes on", function()
      local plan = run(nil, { top = { maxNoOfPodsToEvictPerNamespace = 1 } })
      assert.same({ DASH, NB_NONE, CACHE_SSD }, plan:pods())
      assert.same({ NB_WRONG_VALUE, PRE_WRONG_EFFECT, CACHE_NONE, PG0 }, plan:refused("namespace-limit"))
    end)
  end)

  describe("bad args", function()
    local _, fails = h.bad_args{ plugin = PLUGIN, profile = "taints", snapshot = SNAP }

    it("rejects includedTaints together with excludedTaints", function()
      fails("      includedTaints: [dedicated]\n      excludedTaints: [storage]", 8, "",
            "either includedTaints or excludedTaints can be set, but not both")
    end)

    it("rejects both include and exclude namespaces", function()
      fails("      namespaces:\n        include: [ml]\n        exclude: [data]", 9, ".namespaces",
            "only one of Include/Exclude namespaces")
    end)

    it("rejects fields of the wrong type and unknown fields", function()
      fails("      includePreferNoSchedule: \"yes\"", 8, ".includePreferNoSchedule", "expected a boolean")
      fails("      excludedTaints: dedicated=gpu", 8, ".excludedTaints", "expected a list")
      fails("      includedTaints:\n      - dedicated\n      - {key: storage}", 10, ".includedTaints[1]",
            "expected a string")
      fails("      includeNoExecute: true", 8, ".includeNoExecute", "unknown field")
    end)

    it("rejects a bad labelSelector", function()
      fails("      labelSelector:\n        matchLabels: {app: [notebook]}", 9, ".labelSelector", "")
    end)
  end)
end)
