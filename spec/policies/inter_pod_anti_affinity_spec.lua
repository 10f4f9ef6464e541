-- RemovePodsViolatingInterPodAntiAffinity through the real engine on
-- spec/fixtures/anti_affinity.json (built by spec/fixtures/build_groups.py).
-- Expected plans follow kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/removepodsviolatinginterpodantiaffinity
-- (pod_antiaffinity.go, pod_antiaffinity_test.go) and
-- utils.CheckPodsWithAntiAffinityExist: a pod's own required terms only;
-- term namespaces or its own, namespaceSelector ignored; pods of the same
-- name never count; same topologyKey value or same node; per node, lowest
-- priority first; an evicted pod no longer conflicts with anyone.
local h = require("spec.helpers")

local SNAP = "spec/fixtures/anti_affinity.json"

local function run(args, o)
  o = o or {}
  return h.simulate{ snapshot = SNAP, plugin = "RemovePodsViolatingInterPodAntiAffinity", args = args,
                     evictor = o.evictor, top = o.top }
end

local COLLECTOR_F = "iot/collector-5b6c7d8e9-f4g6h"      -- edge-1 (no zone label)
local COLLECTOR_Q = "iot/collector-5b6c7d8e9-q3w5e"      -- edge-1
local ETCD_0, ETCD_1 = "db/etcd-0", "db/etcd-1"           -- node-a-1, node-a-2 (zone a)
local WEB_A = "shop/web-7f8d9c6b5-aaaaa"                  -- node-a-1, Guaranteed
local WEB_B = "shop/web-7f8d9c6b5-bbbbb"                  -- node-a-1, Burstable
local TRAINER = "ml/trainer-9a8b7c6d5-h5j7k"              -- node-a-2, priority 0
local INFERENCE = "ml/inference-8b7c6d5e4-l2k4j"          -- node-a-2, priority 100
local EXPORTER_NEW = "jobs/exporter-6c5d4e3f2-r4t6y"      -- node-b-1
local EXPORTER_OLD = "jobs/exporter-5b4c3d2e1-k8m2p"      -- node-b-1, terminating
local ANALYTICS = "tenant-a/analytics-4e5f6a7b8-p9o8i"    -- node-b-1
local NOISY = "tenant-b/noisy-neighbor-7c8d9e0f1-m2n4b"   -- node-b-1
local ADAPTER = "monitoring/prom-adapter-6b7c8d9e0-z1x3c" -- node-c-1
local METRICS = "kube-system/metrics-server-85d9f7c6b4-x7c5v"

describe("RemovePodsViolatingInterPodAntiAffinity", function()
  it("evicts the pods whose own required anti-affinity is violated, node by node", function()
    local plan = run({})
    -- edge-1, node-a-1, node-a-2, node-b-1, node-c-1; within a node from
    -- the lowest priority / QoS up, then namespace/name
    assert.same({ COLLECTOR_F, ETCD_0, WEB_B, TRAINER, EXPORTER_NEW, ANALYTICS, ADAPTER }, plan:pods())
    assert.same({}, plan.refusals)
    assert.same({}, plan.errors)
  end)

  it("names the term's topology key and the pod that violates it", function()
    local plan = run({ namespaces = h.only("db", "shop") })
    assert.same({ ETCD_0, WEB_B }, plan:pods())
    assert.equal("pod's required anti-affinity (topology key topology.kubernetes.io/zone) is violated by "
      .. ETCD_1 .. " on node node-a-2", plan.evictions[1].reason)
    assert.equal("node-a-1", plan.evictions[1].node)
    assert.equal("pod's required anti-affinity (topology key kubernetes.io/hostname) is violated by "
      .. WEB_A .. " on node node-a-1", plan.evictions[2].reason)
  end)

  describe("topology", function()
    it("checks other nodes with the same topologyKey value: etcd-0 and etcd-1 share zone a", function()
      -- etcd-0 goes first (node-a-1); then etcd-1 is alone in zone a
      assert.same({ ETCD_0 }, run({ namespaces = h.only("db") }):pods())
    end)

    it("on a node without the topologyKey label, only the pods of that node count", function()
      -- the collector on node-c-1 (zone c) does not share a zone with edge-1's;
      -- the two on edge-1 conflict, the first goes and the other is alone
      assert.same({ COLLECTOR_F }, run({ namespaces = h.only("iot") }):pods())
    end)

    it("does not look at pods on nodes outside the cycle (a NotReady node)", function()
      assert.same({}, run({ namespaces = h.only("cache") }):pods())
    end)

    it("ignores preferred anti-affinity", function()
      assert.same({}, run({ namespaces = h.only("shop"), labelSelector = { matchLabels = { app = "api" } } }):pods())
    end)
  end)

  describe("order and removal", function()
    it("evicts the lower QoS first and then keeps the other, no longer in conflict", function()
      assert.same({ WEB_B }, run({ namespaces = h.only("shop") }):pods())
    end)

    it("evicts the lowest priority pod and so spares the ones it conflicted with", function()
      -- trainer (0) avoids inference, inference (100) and inference-canary
      -- (50) avoid trainer: trainer goes first and the others are then fine
      local plan = run({ namespaces = h.only("ml") })
      assert.same({ TRAINER }, plan:pods())
      assert.equal("pod's required anti-affinity (topology key kubernetes.io/hostname) is violated by "
        .. INFERENCE .. " on node node-a-2", plan.evictions[1].reason)
    end)

    it("counts a terminating pod as a peer though it cannot be evicted itself", function()
      local plan = run({ namespaces = h.only("jobs") })
      assert.same({ EXPORTER_NEW }, plan:pods())
      -- the old one is tried first (same priority, name order) and skipped
      -- by the evictor's filter before any request: no refusal
      assert.same({}, plan.refusals)
      assert.equal("pod's required anti-affinity (topology key kubernetes.io/hostname) is violated by "
        .. EXPORTER_OLD .. " on node node-b-1", plan.evictions[1].reason)
    end)

    it("counts a pod the evictor protects (system-cluster-critical) as a peer", function()
      assert.same({ ADAPTER }, run({ namespaces = h.only("monitoring", "kube-system") }):pods())
    end)
  end)

  describe("namespaces of a term", function()
    it("follows the namespaces a term lists, else the pod's own, even with a namespaceSelector", function()
      -- tenant-a/analytics names tenant-b; tenant-a/reports names none and
      -- tenant-a/exporter has a namespaceSelector {} (every namespace to the
      -- scheduler): the descheduler looks only in tenant-a for those two
      local plan = run({ namespaces = h.only("tenant-a", "tenant-b") })
      assert.same({ ANALYTICS }, plan:pods())
      assert.equal("pod's required anti-affinity (topology key kubernetes.io/hostname) is violated by "
        .. NOISY .. " on node node-b-1", plan.evictions[1].reason)
    end)

    it("never counts a pod with the candidate's name, even in another namespace", function()
      -- blue/queue-0 avoids app=queue in blue and green; green/queue-0 is
      -- on the same node, but upstream skips pods of the same name
      assert.same({}, run({ namespaces = h.only("blue", "green") }):pods())
    end)
  end)

  describe("namespaces and labelSelector args", function()
    it("limit the candidates and the pods their terms are checked against", function()
      -- metrics-server (kube-system) is not listed: the adapter stays
      assert.same({}, run({ namespaces = h.only("monitoring") }):pods())
      assert.same({}, run({ labelSelector = { matchLabels = { tier = "monitoring" } } }):pods())
      assert.same({ WEB_B }, run({ labelSelector = { matchLabels = { app = "web" } } }):pods())
    end)

    it("take namespaces to exclude", function()
      assert.same({ ETCD_0, WEB_B, TRAINER, ANALYTICS, ADAPTER },
        run({ namespaces = { exclude = { "iot", "jobs" } } }):pods())
    end)
  end)

  describe("with the evictor", function()
    it("keeps a pod that fits no other node with nodeFit", function()
      -- the collectors are pinned to edge nodes by their nodeSelector
      assert.same({}, run({ namespaces = h.only("iot") }, { evictor = { nodeFit = true } }):pods())
    end)

    it("moves on to the next node at the node limit", function()
      local plan = run({}, { top = { maxNoOfPodsToEvictPerNode = 1 } })
      assert.same({ COLLECTOR_F, ETCD_0, TRAINER, EXPORTER_NEW, ADAPTER }, plan:pods())
      assert.same({ WEB_B, ANALYTICS }, plan:refused("node-limit"))
      assert.same({ WEB_B, ANALYTICS }, plan:refused())
    end)

    it("stops at the total limit", function()
      local plan = run({}, { top = { maxNoOfPodsToEvictTotal = 2 } })
      assert.same({ COLLECTOR_F, ETCD_0 }, plan:pods())
      assert.same({ WEB_B }, plan:refused("total-limit"))
      assert.same({ WEB_B }, plan:refused())
    end)

    it("goes on with the next pod after any other refusal, the refused pod still a peer", function()
      -- no eviction allowed in any namespace: every request is refused
      local plan = run({ namespaces = h.only("shop") }, { top = { maxNoOfPodsToEvictPerNamespace = 0 } })
      -- web-bbbbb is refused, stays in the index, and so web-aaaaa now conflicts
      assert.same({}, plan:pods())
      assert.same({ WEB_B, WEB_A }, plan:refused("namespace-limit"))
    end)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local _, fails = h.bad_args{ plugin = "RemovePodsViolatingInterPodAntiAffinity",
                                 profile = "anti", snapshot = SNAP }

    it("rejects both include and exclude namespaces", function()
      fails("      namespaces:\n        include: [db]\n        exclude: [shop]", 9, ".namespaces",
            "only one of Include/Exclude namespaces can be set")
    end)

    it("rejects a labelSelector that does not parse", function()
      fails("      labelSelector:\n        matchExpressions:\n        - {key: app, operator: Foo, values: [a]}",
            9, ".labelSelector", '"Foo" is not a valid label selector operator')
      fails("      labelSelector:\n        matchExpressions:\n        - {key: app, operator: Exists, values: [a]}",
            9, ".labelSelector", "matchExpressions[0].values: must be empty for Exists")
    end)

    it("rejects an unknown field", function()
      fails("      topologyKey: kubernetes.io/hostname", 8, ".topologyKey", 'unknown field "topologyKey"')
    end)
  end)
end)
