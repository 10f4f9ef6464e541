-- RemoveDuplicates through the real engine on spec/fixtures/duplicates.json
-- (built by spec/fixtures/build_groups.py; NOW is 2026-11-22T12:00:00Z).
-- Expected plans follow kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/removeduplicates (removeduplicates.go and the cases
-- of removeduplicates_test.go): a pod is a duplicate of a pod seen before it
-- on its node with the same owner x image keys; every node keeps
-- ceil(pods of the owner key / feasible nodes) of them; feasible nodes are
-- those the duplicates could land on by taints, nodeSelector and required
-- node affinity, and with fewer than two nothing happens. Owner keys go by
-- namespace, kind, name, nodes by name (upstream: Go map order).
local h = require("spec.helpers")

local SNAP = "spec/fixtures/duplicates.json"
local GENERAL = "eks.amazonaws.com/nodegroup=general"
local GENERAL_CP = "eks.amazonaws.com/nodegroup in (general,control-plane)"
local function hosts(...) return "kubernetes.io/hostname in (" .. table.concat({ ... }, ",") .. ")" end

local function run(args, o)
  o = o or {}
  return h.simulate{ snapshot = SNAP, plugin = "RemoveDuplicates", ext = "balance", args = args,
                     evictor = o.evictor, top = o.top or { nodeSelector = o.nodes or GENERAL } }
end

-- shop: web (5,3,1) over general-a/b/c-1, cart and checkout 3 each on
-- general-a-1, search (1,3,5), redis (StatefulSet) 2 on general-b-1;
-- shop-staging: web of the same name, 3 on general-b-1
local CART_2, CART_3 = "shop/cart-7c9d4f6b8-g8m2n", "shop/cart-7c9d4f6b8-s5w3x"
local CHECKOUT_2, CHECKOUT_3 = "shop/checkout-6b5c4d3e2-m4p7r", "shop/checkout-6b5c4d3e2-x2z6q"
local SEARCH_B3 = "shop/search-8f7e6d5c4-r9c4d"
local SEARCH_C4, SEARCH_C5 = "shop/search-8f7e6d5c4-x4m9n", "shop/search-8f7e6d5c4-z7p2q"
local WEB_A4, WEB_A5 = "shop/web-5d8f9c7b4-h8s3t", "shop/web-5d8f9c7b4-k5v9w"
local REDIS_1 = "shop/redis-1"
local STAGING_2, STAGING_3 = "shop-staging/web-5d8f9c7b4-p6z2b", "shop-staging/web-5d8f9c7b4-r9c4d"

-- the 3rd, 4th and 5th pod of a (5,3,1) spread on general-a-1, 3rd on general-b-1
local function a3(ns, rs) return ns .. "/" .. rs .. "-f2q6r" end
local function a4(ns, rs) return ns .. "/" .. rs .. "-h8s3t" end
local function a5(ns, rs) return ns .. "/" .. rs .. "-k5v9w" end
local function b3(ns, rs) return ns .. "/" .. rs .. "-r9c4d" end

describe("RemoveDuplicates", function()
  describe("spreading", function()
    it("keeps ceil(pods / feasible nodes) per node and evicts the rest, owner by owner", function()
      local plan = run({ namespaces = h.only("shop", "shop-staging") })
      -- cart, checkout: 3 on one node of 3 -> keep 1; search (1,3,5) and web
      -- (5,3,1) -> keep 3; redis 2 on one node -> keep 1; shop-staging's web is
      -- another owner key although the ReplicaSet has the same name
      assert.same({ CART_2, CART_3, CHECKOUT_2, CHECKOUT_3, SEARCH_C4, SEARCH_C5, WEB_A4, WEB_A5,
                    REDIS_1, STAGING_2, STAGING_3 }, plan:pods())
      assert.same({}, plan.refusals)
      assert.same({}, plan.notes)
      assert.same({}, plan.errors)
    end)

    it("says how many copies were on the node and the average kept", function()
      local plan = run({ namespaces = h.only("shop") })
      local by = {}
      for _, e in ipairs(plan.evictions) do by[e.pod] = e end
      assert.equal("general-a-1", by[WEB_A4].node)
      assert.equal("5 replicas of ReplicaSet shop/web-5d8f9c7b4 on node general-a-1, above the average of 3",
        by[WEB_A4].reason)
      assert.equal("3 replicas of ReplicaSet shop/cart-7c9d4f6b8 on node general-a-1, above the average of 1",
        by[CART_3].reason)
      assert.equal("2 replicas of StatefulSet shop/redis on node general-b-1, above the average of 1",
        by[REDIS_1].reason)
      assert.equal("RemoveDuplicates", by[REDIS_1].plugin)
    end)

    it("counts only the nodes of the cycle: with general-c-1 left out (5,3) keeps 4", function()
      local plan = run({ namespaces = h.only("shop") }, { nodes = hosts("general-a-1", "general-b-1") })
      -- cart 3/2 -> 2; search (1,3) -> 2, from general-b-1; web (5,3) -> 4;
      -- redis 2/2 -> 1
      assert.same({ CART_3, CHECKOUT_3, SEARCH_B3, WEB_A5, REDIS_1 }, plan:pods())
    end)

    it("lets all other nodes count when the pods tolerate the control plane", function()
      -- gateway tolerates nothing: 3 feasible nodes, keep 3; edge-proxy
      -- tolerates the control-plane taint: 6 nodes, keep 2 -> 3 from
      -- general-a-1 and 1 from general-b-1
      local plan = run({ namespaces = h.only("edge") }, { nodes = GENERAL_CP })
      assert.same({ a3("edge", "edge-proxy-7a6b5c4d3"), a4("edge", "edge-proxy-7a6b5c4d3"),
                    a5("edge", "edge-proxy-7a6b5c4d3"), b3("edge", "edge-proxy-7a6b5c4d3"),
                    a4("edge", "gateway-6f5d4c3b2"), a5("edge", "gateway-6f5d4c3b2") }, plan:pods())
      assert.equal("5 replicas of ReplicaSet edge/edge-proxy-7a6b5c4d3 on node general-a-1, above the average of 2",
        plan.evictions[1].reason)
      -- on the general nodes only, both keep 3
      plan = run({ namespaces = h.only("edge") })
      assert.same({ a4("edge", "edge-proxy-7a6b5c4d3"), a5("edge", "edge-proxy-7a6b5c4d3"),
                    a4("edge", "gateway-6f5d4c3b2"), a5("edge", "gateway-6f5d4c3b2") }, plan:pods())
    end)

    it("leaves out the nodes the required node affinity refuses", function()
      -- tolerates the control plane, but DoesNotExist on its role label
      local plan = run({ namespaces = h.only("analytics") }, { nodes = GENERAL_CP })
      assert.same({ a4("analytics", "spark-history-9c8b7a6d5"), a5("analytics", "spark-history-9c8b7a6d5") },
        plan:pods())
    end)

    it("leaves out the nodes the nodeSelector refuses, and skips owners with no feasible node", function()
      local plan = run({ namespaces = h.only("payments") }, { nodes = GENERAL_CP })
      -- ledger-api: nodegroup=general -> 3 nodes; legacy-batch wants an nvme
      -- node there is none of: its duplicate stays
      assert.same({ a4("payments", "ledger-api-4d3c2b1a9"), a5("payments", "ledger-api-4d3c2b1a9") },
        plan:pods())
      assert.same({ "ReplicaSet payments/legacy-batch-6e5d4c3b2: fewer than two feasible nodes for its "
                    .. "duplicates to land on, skipped" }, plan:note_messages())
    end)

    it("runs every owner of every namespace in namespace, kind, name order", function()
      local plan = run({})
      assert.same({
        a4("analytics", "spark-history-9c8b7a6d5"), a5("analytics", "spark-history-9c8b7a6d5"),
        a4("batch", "ingest-58c9d7f6b"), a5("batch", "ingest-58c9d7f6b"),
        a4("edge", "edge-proxy-7a6b5c4d3"), a5("edge", "edge-proxy-7a6b5c4d3"),
        a4("edge", "gateway-6f5d4c3b2"), a5("edge", "gateway-6f5d4c3b2"),
        a4("payments", "ledger-api-4d3c2b1a9"), a5("payments", "ledger-api-4d3c2b1a9"),
        CART_2, CART_3, CHECKOUT_2, CHECKOUT_3, SEARCH_C4, SEARCH_C5, WEB_A4, WEB_A5, REDIS_1,
        STAGING_2, STAGING_3,
      }, plan:pods())
      assert.same({}, plan.refusals)
      assert.equal(1, #plan.notes)
    end)
  end)

  describe("what a duplicate is", function()
    it("needs the same images: one owner with other images, or a sidecar in one pod, is no duplicate", function()
      -- media: an Argo workflow's steps (blender, ffmpeg), a transcoder with
      -- and one without the mesh sidecar, a pod with two containers of one image
      local plan = run({ namespaces = h.only("media") })
      assert.same({}, plan:pods())
      assert.same({}, plan.notes)
    end)

    it("evicts a pod with two owners once, under its first owner key", function()
      -- batch: every pod is owned by ingest-58c9d7f6b and ingest-legacy-6d5c4b3a2;
      -- upstream asks to evict the same two pods again for the second owner
      local plan = run({ namespaces = h.only("batch") })
      assert.same({ a4("batch", "ingest-58c9d7f6b"), a5("batch", "ingest-58c9d7f6b") }, plan:pods())
      assert.same({}, plan.refusals)
    end)

    it("skips owners of an excluded kind", function()
      assert.same({ REDIS_1 }, run({ namespaces = h.only("shop"), excludeOwnerKinds = { "ReplicaSet" } }):pods())
      assert.same({ CART_2, CART_3, CHECKOUT_2, CHECKOUT_3, SEARCH_C4, SEARCH_C5, WEB_A4, WEB_A5 },
        run({ namespaces = h.only("shop"), excludeOwnerKinds = { "StatefulSet", "Job" } }):pods())
      -- a pod is skipped when any of its owners is of an excluded kind
      assert.same({}, run({ namespaces = h.only("batch"), excludeOwnerKinds = { "ReplicaSet" } }):pods())
    end)

    it("never considers protected pods: critical, with local storage, mirror, DaemonSet, bare", function()
      local plan = run({ namespaces = h.only("kube-system", "default") }, { nodes = GENERAL_CP })
      assert.same({}, plan:pods())
      assert.same({}, plan.notes)
      -- with local storage allowed, query-cache (3 on general-c-1) keeps 1;
      -- coredns stays (system-cluster-critical)
      plan = run({ namespaces = h.only("kube-system") },
                 { evictor = { podProtections = { defaultDisabled = { "PodsWithLocalStorage" } } } })
      assert.same({ "kube-system/query-cache-7b9f6d5c8-v5h3j", "kube-system/query-cache-7b9f6d5c8-w8k6l" },
        plan:pods())
    end)

    it("takes namespaces to exclude", function()
      local plan = run({ namespaces = { exclude = { "shop", "shop-staging", "analytics", "batch", "payments" } } })
      assert.same({ a4("edge", "edge-proxy-7a6b5c4d3"), a5("edge", "edge-proxy-7a6b5c4d3"),
                    a4("edge", "gateway-6f5d4c3b2"), a5("edge", "gateway-6f5d4c3b2") }, plan:pods())
    end)
  end)

  -- upstream's cases run on two-node clusters; nodeFit looks at every ready
  -- node matching the DefaultEvictor's own nodeSelector, so that is set too
  describe("with the evictor's nodeFit", function()
    local function fit(nodes) return { nodeFit = true, nodeSelector = nodes } end

    it("keeps pods whose only other node is tainted either way", function()
      local nodes = hosts("general-a-1", "gpu-a-1")
      -- without nodeFit the gpu taint leaves one feasible node: skipped
      local plan = run({ namespaces = h.only("shop") }, { nodes = nodes })
      assert.same({}, plan:pods())
      assert.same({
        "ReplicaSet shop/cart-7c9d4f6b8: fewer than two feasible nodes for its duplicates to land on, skipped",
        "ReplicaSet shop/checkout-6b5c4d3e2: fewer than two feasible nodes for its duplicates to land on, skipped",
        "ReplicaSet shop/web-5d8f9c7b4: fewer than two feasible nodes for its duplicates to land on, skipped",
      }, plan:note_messages())
      -- with it the pods are not even candidates
      plan = run({ namespaces = h.only("shop") }, { nodes = nodes, evictor = fit(nodes) })
      assert.same({}, plan:pods())
      assert.same({}, plan.notes)
    end)

    it("counts a cordoned node as feasible, unless nodeFit asks", function()
      -- general-b-2 is unschedulable (without the cordon taint yet):
      -- getTargetNodes does not look at spec.unschedulable, so 3 / 2 -> keep 2
      local nodes = hosts("general-a-1", "general-b-2")
      assert.same({ CART_3, CHECKOUT_3, WEB_A4, WEB_A5 }, run({ namespaces = h.only("shop") }, { nodes = nodes }):pods())
      assert.same({}, run({ namespaces = h.only("shop") }, { nodes = nodes, evictor = fit(nodes) }):pods())
    end)

    it("with nodeFit, keeps the pods that do not fit the small node's free cpu", function()
      -- small-c-1 has 230m left: checkout (100m) fits, cart (500m) and web
      -- (250m + 50m) do not; resources are not part of the feasible nodes
      local nodes = hosts("general-a-1", "small-c-1")
      assert.same({ CART_3, CHECKOUT_3, WEB_A4, WEB_A5 }, run({ namespaces = h.only("shop") }, { nodes = nodes }):pods())
      assert.same({ CHECKOUT_3 }, run({ namespaces = h.only("shop") }, { nodes = nodes, evictor = fit(nodes) }):pods())
    end)
  end)

  describe("limits", function()
    it("moves on to the owner's next node at the node limit", function()
      local plan = run({ namespaces = h.only("shop") }, { top = { nodeSelector = GENERAL, maxNoOfPodsToEvictPerNode = 1 } })
      assert.same({ CART_2, SEARCH_C4, REDIS_1 }, plan:pods())
      assert.same({ CART_3, CHECKOUT_2, SEARCH_C5, WEB_A4 }, plan:refused("node-limit"))
      assert.same({ CART_3, CHECKOUT_2, SEARCH_C5, WEB_A4 }, plan:refused())
    end)

    it("stops at the total limit", function()
      local plan = run({ namespaces = h.only("shop", "shop-staging") },
                       { top = { nodeSelector = GENERAL, maxNoOfPodsToEvictTotal = 3 } })
      assert.same({ CART_2, CART_3, CHECKOUT_2 }, plan:pods())
      assert.same({ CHECKOUT_3 }, plan:refused())
    end)

    it("goes on with the next pod after any other refusal", function()
      local plan = run({ namespaces = h.only("shop", "shop-staging") },
                       { top = { nodeSelector = GENERAL, maxNoOfPodsToEvictPerNamespace = 2 } })
      assert.same({ CART_2, CART_3, STAGING_2, STAGING_3 }, plan:pods())
      assert.same({ CHECKOUT_2, CHECKOUT_3, SEARCH_C4, SEARCH_C5, WEB_A4, WEB_A5, REDIS_1 },
        plan:refused("namespace-limit"))
    end)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local _, fails = h.bad_args{ plugin = "RemoveDuplicates", ext = "balance", profile = "dups",
                                 snapshot = SNAP }

    it("rejects both include and exclude namespaces", function()
      fails("      excludeOwnerKinds: [Job]\n      namespaces:\n        include: [default]\n        exclude: [kube-system]",
            10, ".namespaces", "only one of Include/Exclude namespaces can be set")
    end)

    it("rejects excludeOwnerKinds that is not a list of strings", function()
      fails("      excludeOwnerKinds: ReplicaSet", 8, ".excludeOwnerKinds", "expected a list")
      fails("      excludeOwnerKinds: [Job, 3]", 8, ".excludeOwnerKinds[1]", "expected a string")
    end)

    it("rejects fields it does not have, such as labelSelector", function()
      fails("      labelSelector: {matchLabels: {app: web}}", 8, ".labelSelector", 'unknown field "labelSelector"')
    end)

    it("accepts a plugin config without args", function()
      local text = table.concat({
        "apiVersion: descheduler/v1alpha2",
        "kind: DeschedulerPolicy",
        "nodeSelector: " .. GENERAL,
        "profiles:",
        "- name: dups",
        "  pluginConfig:",
        "  - name: RemoveDuplicates",
        "  plugins:",
        "    balance:",
        "      enabled: [RemoveDuplicates]",
        "",
      }, "\n")
      assert.same(run({}):pods(), h.simulate{ snapshot = SNAP, policy_text = text }:pods())
    end)
  end)
end)
