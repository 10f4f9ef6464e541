-- RemovePodsViolatingTopologySpreadConstraint through the real engine on the
-- snapshots of spec/fixtures/build_topology.py. Expected plans follow
-- kubernetes-sigs/descheduler v0.36 topologyspreadconstraint.go and the
-- scenarios of its unit tests, restated on realistic clusters:
--
--  * pods are listed node by node (nodes by name), a node's pods by
--    namespace/name, with the profile's Filter, labelSelector and
--    namespaces: only those pods are counted into domains;
--  * per namespace, per distinct constraint: domains from every node value
--    of the key passing the inclusion policies; balanced if max - min <=
--    maxSkew; else balanceDomains: ideal = sum / #domains, domains by size,
--    movePods = min(ceil(size_j - ideal), ceil(ideal - size_i),
--    ceil((skew - maxSkew) / 2)) taken from the tail of domain j, whose pods
--    are ordered pinned (nodeSelector/affinity) before free, ascending
--    priority, then listing order, and re-sorted so pods fitting a node of a
--    below-average domain are last;
--  * evictions by namespace, then name.
--
-- topology-zones.json (eu-west-1a/b/c, two workers each, a tainted control
-- plane in 1a, edge-1 without zone labels):
local h = require("spec.helpers")

local ZONES = "spec/fixtures/topology-zones.json"
local POOLS = "spec/fixtures/topology-pools.json"
local CAPACITY = "spec/fixtures/topology-capacity.json"
local PLUGIN = "RemovePodsViolatingTopologySpreadConstraint"

local function run(snapshot, args, o)
  o = o or {}
  return h.simulate{ snapshot = snapshot, plugin = PLUGIN, ext = "balance", args = args,
                     evictor = o.evictor, top = o.top }
end

-- checkout 8/7/0, ideal 5: [c0 b7 a8] -> 3 from a (the tail: worker-a-2's
-- last three by name), then a=5 gives way to b: 2 from b (worker-b-2's last two)
local CHECKOUT = {
  "checkout/checkout-6d5f7c8b9-q1r2s", "checkout/checkout-6d5f7c8b9-t3u4v",
  "checkout/checkout-6d5f7c8b9-v3w4x", "checkout/checkout-6d5f7c8b9-w5x6y",
  "checkout/checkout-6d5f7c8b9-y5z6a",
}
-- invoicer 6/2/1 maxSkew 1, ideal 3: 2 from a to c, then 1 from a to b
local BILLING = { "billing/invoicer-4f3e2d1c0-m4d", "billing/invoicer-4f3e2d1c0-m5e",
                  "billing/invoicer-4f3e2d1c0-m6f" }
-- orders-api 6/2/1 maxSkew 2: 2 from a to c, then every pair is within 2
local ORDERS = { "orders/orders-api-59b8c7d6e-k5e", "orders/orders-api-59b8c7d6e-k6f" }
-- hostname key, 8 domains (control plane and edge-1 included: taints are
-- Ignored by default), ideal 0.5: worker-a-1 gives one pod to each of the
-- first two empty domains
local ML = { "ml/inference-3a2b1c0d9-h8j1k", "ml/inference-3a2b1c0d9-m3n5p" }
local PINNED_FREE = "pinned/reporting-2b4d6f8a1-m2n4q"
-- the priority 1000 consumers are taken first: the tail of ascending priority
local QUEUE = { "queue/consumer-critical-7a6b5c4d3-e3f4g", "queue/consumer-critical-7a6b5c4d3-j5k6l" }
-- matchLabelKeys: the old ReplicaSet alone is 2/1/0
local ROLLOUT = "rollout/frontend-5c6d7e8f9-d9e0f"

local function concat(...)
  local out = {}
  for _, t in ipairs({ ... }) do
    for _, v in ipairs(type(t) == "table" and t or { t }) do out[#out + 1] = v end
  end
  return out
end

local DEFAULT = concat(BILLING, CHECKOUT, ML, ORDERS, PINNED_FREE, QUEUE, ROLLOUT)

describe("RemovePodsViolatingTopologySpreadConstraint", function()
  describe("zones", function()
    it("evicts what balances each namespace's constraints, by namespace then name", function()
      local plan = run(ZONES, nil)
      assert.same(DEFAULT, plan:pods())
      assert.same({}, plan:refused())
      assert.same({}, plan.errors)
      for _, e in ipairs(plan.evictions) do assert.equal(PLUGIN, e.plugin) end
      assert.equal("topology spread constraint topology.kubernetes.io/zone (maxSkew 1): "
        .. "domain eu-west-1a above the ideal average", plan.evictions[1].reason)
      assert.equal("worker-a-2", plan.evictions[1].node)
    end)

    it("leaves a balanced topology alone", function()
      -- web 2/2/1 (its hostname constraint is soft)
      assert.same({}, run(ZONES, { namespaces = h.only("storefront") }):pods())
    end)

    it("moves up to half the skew, the giver's surplus and the taker's need: [8,7,0]", function()
      assert.same(CHECKOUT, run(ZONES, { namespaces = h.only("checkout") }):pods())
    end)

    it("tolerates more with maxSkew 2", function()
      assert.same(ORDERS, run(ZONES, { namespaces = h.only("orders") }):pods())
      assert.same(BILLING, run(ZONES, { namespaces = h.only("billing") }):pods())
    end)

    it("acts on ScheduleAnyway constraints only when configured", function()
      assert.same({}, run(ZONES, { namespaces = h.only("catalog") }):pods())
      -- search 3/1/0, ideal 1.33: one from zone a (worker-a-2's k1m3n is last)
      local both = run(ZONES, { constraints = h.array{ "DoNotSchedule", "ScheduleAnyway" } })
      assert.same(concat(BILLING, "catalog/search-8e7d6c5b4-k1m3n",
                         CHECKOUT, ML, ORDERS, PINNED_FREE, QUEUE, ROLLOUT), both:pods())
      -- soft only: the hard ones elsewhere are not looked at; storefront's
      -- soft hostname constraint is balanced (one web pod on five of 8 nodes)
      assert.same({ "catalog/search-8e7d6c5b4-k1m3n" },
                  run(ZONES, { constraints = h.array{ "ScheduleAnyway" } }):pods())
      -- an empty list means the default
      assert.same(DEFAULT, run(ZONES, { constraints = h.array{} }):pods())
    end)

    it("balances a hostname key over every node that has it", function()
      assert.same(ML, run(ZONES, { namespaces = h.only("ml") }):pods())
    end)

    it("takes pods pinned by nodeSelector or node affinity last, and keeps those that fit nowhere else", function()
      -- the pinned pods have their own constraints (Honor: their node
      -- selection is part of it) whose only domain is zone a; the free pod's
      -- constraint sees 4/0/0 and moves 2 then 1: the pinned ones taken
      -- fit no node of zones b and c
      local plan = run(ZONES, { namespaces = h.only("pinned") })
      assert.same({ PINNED_FREE }, plan:pods())
      assert.same({ "2 pod(s) left in place: no node of a below-average domain fits them "
        .. "(topologyBalanceNodeFit): pinned/reporting-2b4d6f8a1-b3d5f, pinned/reporting-2b4d6f8a1-f7h9k" },
        plan:note_messages())
      -- without topologyBalanceNodeFit they go too
      plan = run(ZONES, { namespaces = h.only("pinned"), topologyBalanceNodeFit = false })
      assert.same({ "pinned/reporting-2b4d6f8a1-b3d5f", "pinned/reporting-2b4d6f8a1-f7h9k", PINNED_FREE },
                  plan:pods())
      assert.same({}, plan:note_messages())
    end)

    it("takes the highest priority first within a domain (upstream's tail order)", function()
      assert.same(QUEUE, run(ZONES, { namespaces = h.only("queue") }):pods())
    end)

    it("counts only pods its labelSelector matches", function()
      -- the batch consumers alone are 2/1/1: balanced
      assert.same({}, run(ZONES, { namespaces = h.only("queue"), labelSelector = {
        matchLabels = { app = "consumer-batch" } } }):pods())
      assert.same(BILLING, run(ZONES, { labelSelector = { matchLabels = { app = "invoicer" } } }):pods())
      assert.same(concat(BILLING, ML, ORDERS, PINNED_FREE, QUEUE, ROLLOUT),
        run(ZONES, { labelSelector = { matchExpressions = h.array{
          { key = "app", operator = "NotIn", values = h.array{ "checkout" } } } } }):pods())
    end)

    it("counts only pods the evictor's Filter lets through", function()
      -- the emptyDir session-cache pods are protected: session-api is 1/1/1
      assert.same({}, run(ZONES, { namespaces = h.only("sessions") }):pods())
      -- unprotected they count: 3/1/1, one goes (worker-a-2's cache pod is last)
      assert.same({ "sessions/session-cache-5a4b3c2d1-r3s4t" },
        run(ZONES, { namespaces = h.only("sessions") },
            { evictor = { podProtections = { defaultDisabled = h.array{ "PodsWithLocalStorage" } } } }):pods())
    end)

    it("spreads each ReplicaSet on its own with matchLabelKeys", function()
      assert.same({ ROLLOUT }, run(ZONES, { namespaces = h.only("rollout") }):pods())
      -- old and new one pod each in zone a: 1/0/0 twice, within maxSkew
      assert.same({}, run(ZONES, { namespaces = h.only("canary") }):pods())
    end)

    it("does not count pods on nodes without the key, nor terminating pods", function()
      assert.same({}, run(ZONES, { namespaces = h.only("telemetry") }):pods())
      assert.same({}, run(ZONES, { namespaces = h.only("ingest") }):pods())
    end)

    it("honours namespaces include and exclude", function()
      assert.same(concat(CHECKOUT, ML), run(ZONES, { namespaces = h.only("ml", "checkout") }):pods())
      assert.same(concat(BILLING, ML, ORDERS, PINNED_FREE, QUEUE, ROLLOUT),
        run(ZONES, { namespaces = { exclude = h.array{ "checkout" } } }):pods())
    end)
  end)

  describe("node inclusion policies (topology-pools.json)", function()
    -- zones a and b: general-* (amd64) and arm-* (arm64); zone c: gpu-c-1
    -- only, tainted nvidia.com/gpu=present:NoSchedule
    it("counts a tainted zone by default (nodeTaintsPolicy Ignore) and keeps what cannot go there", function()
      local plan = run(POOLS, { namespaces = h.only("payments") })
      assert.same({}, plan:pods())
      assert.same({ "1 pod(s) left in place: no node of a below-average domain fits them "
        .. "(topologyBalanceNodeFit): payments/ledger-4d5e6f7a8-m7n8p" }, plan:note_messages())
      assert.same({ "payments/ledger-4d5e6f7a8-m7n8p" },
                  run(POOLS, { namespaces = h.only("payments"), topologyBalanceNodeFit = false }):pods())
    end)

    it("leaves an untolerated tainted zone out with nodeTaintsPolicy Honor", function()
      assert.same({}, run(POOLS, { namespaces = h.only("wallet"), topologyBalanceNodeFit = false }):pods())
    end)

    it("moves pods that tolerate the taint into that zone", function()
      assert.same({ "render/renderer-1f2e3d4c5-p1q2r" }, run(POOLS, { namespaces = h.only("render") }):pods())
    end)

    it("counts only the zones of the pod's node selection with nodeAffinityPolicy Honor (the default)", function()
      -- arm64 nodes in zones a and b: 4/0 -> 2
      assert.same({ "arm/api-6b7c8d9e0-g6h7j", "arm/api-6b7c8d9e0-k8m9n" },
                  run(POOLS, { namespaces = h.only("arm") }):pods())
      -- Ignore: 4/0/0, ideal 1.33 -> 2 then 1; they fit arm-b-1
      assert.same({ "arm-any/api-6b7c8d9e0-d4e5f", "arm-any/api-6b7c8d9e0-g6h7j",
                    "arm-any/api-6b7c8d9e0-k8m9n" }, run(POOLS, { namespaces = h.only("arm-any") }):pods())
    end)
  end)

  describe("topologyBalanceNodeFit (topology-capacity.json)", function()
    -- small-a-1 has 430m free; aggregator pods request 500m, renderer 100m;
    -- both Deployments are 2/3/4 and zone a is the only below-average one
    it("evicts only pods that fit a node of a below-average domain", function()
      local plan = run(CAPACITY, nil)
      assert.same({ "reports/renderer-7d8c9b0a1-x5y6z" }, plan:pods())
      assert.same({ "1 pod(s) left in place: no node of a below-average domain fits them "
        .. "(topologyBalanceNodeFit): analytics/aggregator-2e3f4a5b6-z1a2b" }, plan:note_messages())
    end)

    it("evicts regardless when off, to make room by scale-up", function()
      local expect = { "analytics/aggregator-2e3f4a5b6-z1a2b", "reports/renderer-7d8c9b0a1-x5y6z" }
      assert.same(expect, run(CAPACITY, { topologyBalanceNodeFit = false }):pods())
      -- the evictor's nodeFit (PreEvictionFilter) only asks for any other node
      assert.same(expect, run(CAPACITY, { topologyBalanceNodeFit = false }, { evictor = { nodeFit = true } }):pods())
    end)
  end)

  describe("eviction", function()
    it("skips the pods of a node that hit its limit", function()
      local plan = run(ZONES, nil, { top = { maxNoOfPodsToEvictPerNode = 1 } })
      -- worker-a-2, worker-b-2 and worker-a-1 each give one; the first pod
      -- refused on each marks the node, its later pods are not tried
      assert.same({ "billing/invoicer-4f3e2d1c0-m4d", "checkout/checkout-6d5f7c8b9-v3w4x",
                    "ml/inference-3a2b1c0d9-h8j1k" }, plan:pods())
      assert.same({ "billing/invoicer-4f3e2d1c0-m5e", "checkout/checkout-6d5f7c8b9-y5z6a",
                    "ml/inference-3a2b1c0d9-m3n5p" }, plan:refused("node-limit"))
      assert.same(3, #plan:refused())
    end)

    it("stops at the total limit", function()
      local plan = run(ZONES, nil, { top = { maxNoOfPodsToEvictTotal = 4 } })
      assert.same(concat(BILLING, CHECKOUT[1]), plan:pods())
      assert.same({ CHECKOUT[2] }, plan:refused())
    end)

    it("goes on after a namespace limit", function()
      local plan = run(ZONES, nil, { top = { maxNoOfPodsToEvictPerNamespace = 1 } })
      assert.same({ BILLING[1], CHECKOUT[1], ML[1], ORDERS[1], PINNED_FREE, QUEUE[1], ROLLOUT }, plan:pods())
      assert.equal(#DEFAULT - 7, #plan:refused("namespace-limit"))
    end)

    it("asks PreEvictionFilter before evicting, not when counting", function()
      local plan = run(ZONES, nil, { evictor = { namespaceLabelSelector = {
        matchLabels = { ["kubernetes.io/metadata.name"] = "checkout" } } } })
      assert.same(CHECKOUT, plan:pods())
      assert.same({}, plan:refused())
    end)
  end)

  describe("the native helpers", function()
    -- A plugin that reports ebb.topology_domains as its failure message.
    local function domains(snapshot, opts_src, ns)
      local dir = h.plugin_dir{ ["d.lua"] = [[
        local ebb = require("ebb")
        return { name = "Domains", balance = function(ctx, nodes)
          local pods = ebb.pods(nodes, { filter = true, namespaces = { include = { "]] .. ns .. [[" } } })
          local out = {}
          for _, c in ipairs(ebb.topology_domains(pods, nodes, ]] .. opts_src .. [[)) do
            local d = {}
            for _, x in ipairs(c.domains) do d[#d + 1] = x.value .. "=" .. x.count end
            out[#out + 1] = table.concat({ c.namespace, c.topology_key, c.max_skew, c.when,
              c.node_affinity_policy, c.node_taints_policy, c.selector, c.pod,
              tostring(c.balanced), table.concat(d, ",") }, "|")
          end
          return false, "domains:" .. table.concat(out, ";")
        end }
      ]] }
      local plan = h.simulate{ snapshot = snapshot, policy_dirs = { dir },
                               plugins = { { name = "Domains", ext = "balance" } } }
      h.rmdir(dir)
      assert.equal(1, #plan.errors)
      local list = plan.errors[1].message:match("domains:(.*)$")
      assert.is_not_nil(list, plan.errors[1].message)
      local out = {}
      for c in list:gmatch("[^;]+") do out[#out + 1] = c end
      return out
    end

    it("keeps one constraint per distinct merged constraint", function()
      -- queue: two Deployments declare the same constraint; the first pod
      -- listed (worker-a-1, by name) stands for it
      assert.same({ "queue|topology.kubernetes.io/zone|1|DoNotSchedule|Honor|Ignore|"
        .. "app.kubernetes.io/part-of=queue|queue/consumer-batch-1d2e3f4a5-p7q8r|false|"
        .. "eu-west-1a=4,eu-west-1b=1,eu-west-1c=1" }, domains(ZONES, "nil", "queue"))
      -- rollout: matchLabelKeys makes one per ReplicaSet
      assert.same({
        "rollout|topology.kubernetes.io/zone|1|DoNotSchedule|Honor|Ignore|"
          .. "app=frontend,pod-template-hash=5c6d7e8f9|rollout/frontend-5c6d7e8f9-a7b8c|false|"
          .. "eu-west-1a=2,eu-west-1b=1,eu-west-1c=0",
        "rollout|topology.kubernetes.io/zone|1|DoNotSchedule|Honor|Ignore|"
          .. "app=frontend,pod-template-hash=7f8e9d0c1|rollout/frontend-7f8e9d0c1-k3m4n|true|"
          .. "eu-west-1a=1,eu-west-1b=0,eu-west-1c=0",
      }, domains(ZONES, "nil", "rollout"))
    end)

    it("splits by node selection under nodeAffinityPolicy Honor", function()
      -- pinned: the nodeSelector pods, the affinity pod, the free pod; the
      -- pinned constraints have zone a as their only domain
      assert.same({
        "pinned|topology.kubernetes.io/zone|1|DoNotSchedule|Honor|Ignore|app=reporting|"
          .. "pinned/reporting-2b4d6f8a1-a2c4e|true|eu-west-1a=4",
        "pinned|topology.kubernetes.io/zone|1|DoNotSchedule|Honor|Ignore|app=reporting|"
          .. "pinned/reporting-2b4d6f8a1-f7h9k|true|eu-west-1a=4",
        "pinned|topology.kubernetes.io/zone|1|DoNotSchedule|Honor|Ignore|app=reporting|"
          .. "pinned/reporting-2b4d6f8a1-m2n4q|false|eu-west-1a=4,eu-west-1b=0,eu-west-1c=0",
      }, domains(ZONES, "nil", "pinned"))
    end)

    it("takes soft constraints on request and counts every node with the key", function()
      assert.same({
        "storefront|topology.kubernetes.io/zone|1|DoNotSchedule|Honor|Ignore|app=web|"
          .. "storefront/web-7c9d8b6f5-b4k2x|true|eu-west-1a=2,eu-west-1b=2,eu-west-1c=1",
        "storefront|kubernetes.io/hostname|1|ScheduleAnyway|Honor|Ignore|app=web|"
          .. "storefront/web-7c9d8b6f5-b4k2x|true|control-plane-a-1=0,edge-1=0,worker-a-1=1,"
          .. "worker-a-2=1,worker-b-1=1,worker-b-2=1,worker-c-1=1,worker-c-2=0",
      }, domains(ZONES, "{ constraints = { 'DoNotSchedule', 'ScheduleAnyway' } }", "storefront"))
    end)

    it("leaves a tainted zone out under nodeTaintsPolicy Honor unless tolerated", function()
      assert.same({ "wallet|topology.kubernetes.io/zone|1|DoNotSchedule|Honor|Honor|app=wallet-api|"
        .. "wallet/wallet-api-8a7b6c5d4-c3d4e|true|eu-west-1a=2,eu-west-1b=2" }, domains(POOLS, "nil", "wallet"))
      assert.same({ "render|topology.kubernetes.io/zone|1|DoNotSchedule|Honor|Honor|app=renderer|"
        .. "render/renderer-1f2e3d4c5-d5e6f|false|eu-west-1a=2,eu-west-1b=2,eu-west-1c=0" },
        domains(POOLS, "nil", "render"))
    end)

    it("takes a plain list of pods as well as a PodList", function()
      local dir = h.plugin_dir{ ["l.lua"] = [[
        local ebb = require("ebb")
        return { name = "PlainList", balance = function(ctx, nodes)
          local list = {}
          for _, p in ebb.pods(nodes, { filter = true }):iter() do list[#list + 1] = p end
          local evict, skipped, why = ebb.topology_balance(list, nodes)
          return false, "evict:" .. table.concat(evict:keys(), ",") .. ";" .. #skipped .. ";"
            .. why[1].topology_key .. "=" .. why[1].domain .. "/" .. why[1].max_skew
        end }
      ]] }
      local plan = h.simulate{ snapshot = ZONES, policy_dirs = { dir },
                               plugins = { { name = "PlainList", ext = "balance" } } }
      h.rmdir(dir)
      assert.equal(1, #plan.errors, plan.errors[1] and plan.errors[1].message)
      assert.equal("evict:" .. table.concat(DEFAULT, ",") .. ";2;topology.kubernetes.io/zone=eu-west-1a/1",
                   plan.errors[1].message:match("evict:.*$"))
    end)

    it("rejects an unknown constraint action", function()
      local dir = h.plugin_dir{ ["b.lua"] = [[
        local ebb = require("ebb")
        return { name = "BadOpts", balance = function(ctx, nodes)
          ebb.topology_balance(ebb.pods(nodes), nodes, { constraints = { "Sometimes" } })
        end }
      ]] }
      local plan = h.simulate{ snapshot = ZONES, policy_dirs = { dir },
                               plugins = { { name = "BadOpts", ext = "balance" } } }
      h.rmdir(dir)
      assert.equal(1, #plan.errors)
      assert.matches('constraints%[1%]: expected "DoNotSchedule" or "ScheduleAnyway"', plan.errors[1].message)
    end)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local policy, fails = h.bad_args{ plugin = "RemovePodsViolatingTopologySpreadConstraint",
                                      ext = "balance", profile = "spread", snapshot = ZONES }

    it("rejects a constraint that is not DoNotSchedule or ScheduleAnyway", function()
      fails("      constraints:\n      - DoNotSchedule\n      - Sometimes", 10, ".constraints[1]",
            "constraint Sometimes is not one of map[DoNotSchedule:{} ScheduleAnyway:{}]")
      fails("      constraints: ScheduleAnyway", 8, ".constraints", "expected a list")
    end)

    it("rejects both include and exclude namespaces", function()
      fails("      namespaces:\n        include: [a]\n        exclude: [b]", 9, ".namespaces",
            "only one of Include/Exclude namespaces can be set")
    end)

    it("rejects a bad labelSelector", function()
      fails("      labelSelector:\n        matchExpressions:\n        - {key: app, operator: In}", 9,
            ".labelSelector", "matchExpressions[0].values")
    end)

    it("rejects the removed includeSoftConstraints and a non-boolean topologyBalanceNodeFit", function()
      fails("      includeSoftConstraints: true", 8, ".includeSoftConstraints", "unknown field")
      fails("      constraints: [ScheduleAnyway]\n      topologyBalanceNodeFit: 1", 9,
            ".topologyBalanceNodeFit", "expected a boolean")
    end)

    it("accepts the defaults written out", function()
      local plan = h.simulate{ snapshot = ZONES, policy_text = policy(
        "      constraints: [DoNotSchedule]\n      topologyBalanceNodeFit: true\n      labelSelector: null") }
      assert.same(DEFAULT, plan:pods())
    end)
  end)
end)
