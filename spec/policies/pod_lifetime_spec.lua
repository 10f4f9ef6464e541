-- PodLifeTime through the real engine on spec/fixtures/lifetime.json (built
-- by spec/fixtures/build.py; NOW is 2026-11-22T12:00:00Z). Expected plans
-- follow kubernetes-sigs/descheduler v0.36 pkg/framework/plugins/podlifetime
-- (pod_lifetime.go, pod_lifetime_test.go, validation.go): categories ANDed,
-- entries ORed, pods of every phase, oldest first across the cluster by
-- creation time whatever the conditions (v0.36.0 SortPodsBasedOnAge), age
-- strictly greater than the limit, node limit skips the pod, total limit
-- ends the plugin.
local h = require("spec.helpers")

local SNAP = "spec/fixtures/lifetime.json"

local function run(args, o)
  o = o or {}
  return h.simulate{ snapshot = SNAP, plugin = "PodLifeTime", args = args,
                     evictor = o.evictor, top = o.top }
end

-- shop: ages around 600 s, a PDB on catalog (1 disruption allowed)
local SEARCH0 = "shop/search-0"                      -- 10 d, worker-c-1, PVC
local CAT_K = "shop/catalog-5f7b8c9d4-k2x9q"         -- 3 d, worker-b-1
local CART_PEND = "shop/cart-7c9d4f6b8-p3nd1"        -- 2 d, worker-b-1, Pending
local CAT_M = "shop/catalog-5f7b8c9d4-m4n7p"         -- 1 d, worker-a-1
local CAT_Z = "shop/catalog-5f7b8c9d4-z8r2t"         -- 12 h, worker-c-1
local CART_601 = "shop/cart-7c9d4f6b8-h5j2w"         -- 601 s, worker-a-1
local CART_600 = "shop/cart-7c9d4f6b8-q9v3x"         -- 600 s, worker-b-1
local CART_599 = "shop/cart-7c9d4f6b8-t7k4m"         -- 599 s, worker-c-1

-- states
local IMG_PULL = "states/img-pull-72ecd9064-p2k4x"
local CRASHY = "states/crashy-4a316bf63-r4t6y"
local CREATING = "states/creating-8889c8889-s8d2f"
local INIT_CFG = "states/init-cfg-f6649b07d-f3g5h"
local INIT_OOM = "states/init-oom-e3ce44191-j6k8l"
local DEBUGGED = "states/debugged-fdae7e433-m9n1b"
local OOM_RESTARTED = "states/oom-restarted-57946d599-v5c7x"
local OOM_NOW = "states/oom-now-096888632-z3x5c"
local LOST = "states/lost-270a6ae13-q2w4e"
local SHUTDOWN = "states/shutdown-5b13d8554-e5r7t"
local EVICTED = "states/evicted-a3af29ce0-y8u1i"
local REPORT_OK = "states/report-29145600-o3p5a"
local HEALTHY = "states/healthy-74d7a4d5c-a1s3d"
local ADMISSION = "states/admission-fbb21e9b6-g4h6j"
local DEADLINE = "states/report-29145780-k9l1z"

-- conds
local OLD_DONE = "conds/report-29144200-b7n3m"       -- created 1 d, completed 30 min ago
local LEGACY = "conds/legacy-5b4a3c2d1-k8j6h"        -- Ready False without lastTransitionTime
local GATED = "conds/gated-6c5b4a3d2-p3o5i"          -- Ready False 5 h, ContainersReady False 5 min
local WARMUP = "conds/warmup-8e7d6c5b4-n5m7b"        -- Pending, no conditions
local MIGRATE = "conds/migrate-7d6c5b4a3-l2k4j"      -- Pending, all conditions 4 h old
local STALE_DONE = "conds/export-29145300-d4f6g"     -- created 3 h, completed 2 h ago
local RECENT_DONE = "conds/export-29145900-h7j9k"    -- created 15 min, completed 1 min ago

-- exits
local LEDGER = "exits/ledger-0"                      -- StatefulSet, 7 d
local IMPORT_1 = "exits/import-29140000-a1b2c"       -- Job, Failed, exit 1
local IMPORT_2 = "exits/import-29141000-d3e4f"       -- Job, Failed, exit 2
local WORKER_1 = "exits/worker-6f5e4d3c2-g5h6i"      -- ReplicaSet, Failed, exit 1
local WORKER_INIT3 = "exits/worker-6f5e4d3c2-j7k8l"  -- ReplicaSet, Failed, init exit 3
local CLEANUP = "exits/cleanup-29142000-m9n0o"       -- Job, Succeeded, exit 0

describe("PodLifeTime", function()
  describe("age", function()
    it("evicts pods older than maxPodLifeTimeSeconds, oldest first across nodes", function()
      local plan = run{ maxPodLifeTimeSeconds = 600, namespaces = h.only("shop") }
      -- exactly 600 s is not older than 600 s; a creationTimestamp in the
      -- future is never old; the catalog PDB allows one disruption
      assert.same({ SEARCH0, CAT_K, CART_PEND, CART_601 }, plan:pods())
      assert.same({ CAT_M, CAT_Z }, plan:refused("pdb"))
      assert.same({ CAT_M, CAT_Z }, plan:refused())
      assert.same({}, plan.errors)
    end)

    it("moves the boundary with the limit: 599 takes the 600 s pod, not the 599 s one", function()
      local plan = run{ maxPodLifeTimeSeconds = 599, namespaces = h.only("shop") }
      assert.same({ SEARCH0, CAT_K, CART_PEND, CART_601, CART_600 }, plan:pods())
    end)

    it("with 0 takes every pod created in the past, never one created in the future", function()
      local plan = run{ maxPodLifeTimeSeconds = 0, namespaces = h.only("shop") }
      assert.same({ SEARCH0, CAT_K, CART_PEND, CART_601, CART_600, CART_599 }, plan:pods())
      assert.same({ CAT_M, CAT_Z }, plan:refused("pdb"))
    end)

    it("counts a pod without creationTimestamp as created at Go's zero time: oldest, saturated", function()
      -- failed.json's ci/build-4409 has no creationTimestamp; now minus
      -- 0001-01-01 saturates as a time.Duration at 9223372036 s
      local function on_failed(args)
        return h.simulate{ snapshot = "spec/fixtures/failed.json", plugin = "PodLifeTime", args = args }
      end
      -- build-4409 (worker-b-1) before build-4410 (worker-c-1, 3.5 h),
      -- build-4411 (worker-a-1, 2 h) and build-4412 (3601 s)
      local plan = on_failed{ maxPodLifeTimeSeconds = 3600, namespaces = h.only("ci") }
      assert.same({ "ci/build-4409-n3m4b", "ci/build-4410-z1x2c", "ci/build-4411-q2w3e",
                    "ci/build-4412-a5s6d" }, plan:pods())
      assert.same({ "ci/build-4409-n3m4b" }, on_failed{ maxPodLifeTimeSeconds = 9223372035 }:pods())
      assert.same({}, on_failed{ maxPodLifeTimeSeconds = 9223372036 }:pods())
    end)

    it("never sees unscheduled pods, pods on NotReady nodes, terminating or protected pods", function()
      -- older than 5 days: shop/cart-x4r8d (no node, 8 d), shop/search-1
      -- (NotReady worker-d-1, 9 d), shop/cart-b3n6c (terminating, 6 d),
      -- default/debug-shell (bare), default/scratch (emptyDir), kube-proxy
      -- (DaemonSet, critical), coredns (system-cluster-critical)
      local plan = run{ maxPodLifeTimeSeconds = 5 * 86400 }
      assert.same({ SEARCH0, LEDGER }, plan:pods())
      assert.same({}, plan.refusals)
    end)

    it("orders the whole cluster by age, whatever the phase, and skips protected pods", function()
      local plan = run{ maxPodLifeTimeSeconds = 600 }
      assert.same({
        SEARCH0, LEDGER, CAT_K, CART_PEND, OLD_DONE, LEGACY, IMPORT_1, GATED, IMPORT_2, WARMUP,
        IMG_PULL, CRASHY, CREATING, INIT_CFG, INIT_OOM, MIGRATE, DEBUGGED, WORKER_1,
        OOM_RESTARTED, OOM_NOW, LOST, SHUTDOWN, EVICTED, REPORT_OK, WORKER_INIT3, STALE_DONE,
        HEALTHY, ADMISSION, DEADLINE, CLEANUP, RECENT_DONE, CART_601,
      }, plan:pods())
      assert.same({ CAT_M, CAT_Z }, plan:refused("pdb"))
      for _, e in ipairs(plan.evictions) do
        assert.is_nil(e.pod:match("^kube%-system/"), e.pod)
        assert.is_nil(e.pod:match("^default/"), e.pod)
        assert.equal("PodLifeTime", e.plugin)
      end
    end)
  end)

  describe("states", function()
    local cases = {
      { { "ImagePullBackOff" }, {}, { IMG_PULL } },
      { { "CrashLoopBackOff" }, {}, { CRASHY } },
      { { "ContainerCreating" }, {}, { CREATING } },
      -- app containers wait for PodInitializing behind an init container
      { { "PodInitializing" }, {}, { INIT_CFG, INIT_OOM } },
      { { "CreateContainerConfigError" }, {}, {} },
      { { "CreateContainerConfigError" }, { includingInitContainers = true }, { INIT_CFG } },
      -- a terminated reason counts; a lastState does not (oom-restarted)
      { { "OOMKilled" }, {}, { OOM_NOW } },
      { { "OOMKilled" }, { includingInitContainers = true }, { INIT_OOM, OOM_NOW } },
      { { "OOMKilled" }, { includingEphemeralContainers = true }, { DEBUGGED, OOM_NOW } },
      { { "OOMKilled" }, { includingInitContainers = true, includingEphemeralContainers = true },
        { INIT_OOM, DEBUGGED, OOM_NOW } },
      { { "Error" }, {}, { SHUTDOWN, DEADLINE } },
      { { "Completed" }, {}, { REPORT_OK } },
      { { "Evicted" }, {}, { EVICTED } },
      { { "NodeLost" }, {}, { LOST } },
      { { "Unknown" }, {}, { LOST } },
      { { "Shutdown" }, {}, { SHUTDOWN } },
      { { "UnexpectedAdmissionError" }, {}, { ADMISSION } },
      { { "DeadlineExceeded" }, {}, { DEADLINE } },
      { { "Pending" }, {}, { IMG_PULL, CREATING, INIT_CFG, INIT_OOM } },
      { { "Running" }, {}, { CRASHY, DEBUGGED, OOM_RESTARTED, OOM_NOW, HEALTHY } },
      { { "Succeeded" }, {}, { REPORT_OK } },
      { { "Failed" }, {}, { SHUTDOWN, EVICTED, ADMISSION, DEADLINE } },
      { { "ImagePullBackOff", "NodeLost", "Completed" }, {}, { IMG_PULL, LOST, REPORT_OK } },
      { { "StartError", "ContainerCannotRun", "InvalidImageName", "ErrImagePull",
          "CreateContainerError", "NodeAffinity" }, {}, {} },
    }
    for _, c in ipairs(cases) do
      local states, flags, want = c[1], c[2], c[3]
      local label = table.concat(states, ",")
      for k in pairs(flags) do label = label .. " +" .. k end
      it("matches " .. label, function()
        local args = { states = states, namespaces = h.only("states") }
        for k, v in pairs(flags) do args[k] = v end
        assert.same(want, run(args):pods())
      end)
    end

    it("ANDs states with maxPodLifeTimeSeconds", function()
      -- waiting pods older than 16500 s: img-pull (5 h) and creating (4 h
      -- 40); init-cfg and init-oom (PodInitializing) are younger
      local plan = run{ states = { "ImagePullBackOff", "ContainerCreating", "PodInitializing" },
                        maxPodLifeTimeSeconds = 16500, namespaces = h.only("states") }
      assert.same({ IMG_PULL, CREATING }, plan:pods())
    end)
  end)

  describe("conditions", function()
    it("matches on the fields that are set, in creation order without a transition threshold", function()
      local plan = run{ conditions = { { reason = "PodCompleted", status = "True" } },
                        namespaces = h.only("conds") }
      assert.same({ OLD_DONE, STALE_DONE, RECENT_DONE }, plan:pods())
    end)

    it("matches a condition type alone", function()
      local plan = run{ conditions = { { type = "Ready" } }, namespaces = h.only("conds") }
      -- warmup has no conditions at all
      assert.same({ OLD_DONE, LEGACY, GATED, MIGRATE, STALE_DONE, RECENT_DONE }, plan:pods())
    end)

    it("requires the transition to be old enough, and still orders by creation", function()
      -- export-29145900 completed 1 min ago (< 300 s); report-29144200
      -- (created 1 d ago, completed 30 min ago) goes before export-29145300
      -- (created 3 h ago, completed 2 h ago)
      local plan = run{ conditions = { { reason = "PodCompleted", status = "True",
                                         minTimeSinceLastTransitionSeconds = 300 } },
                        namespaces = h.only("conds") }
      assert.same({ OLD_DONE, STALE_DONE }, plan:pods())
    end)

    it("matches any of several condition filters, in creation order", function()
      -- Ready/ContainersReady False for 10 min: migrate 4 h,
      -- export-29145300 2 h, report-29144200 30 min, gated 5 h; legacy has
      -- no lastTransitionTime, export-29145900 is too recent
      local plan = run{ conditions = {
                          { type = "Ready", status = "False", minTimeSinceLastTransitionSeconds = 600 },
                          { type = "ContainersReady", status = "False",
                            minTimeSinceLastTransitionSeconds = 600 } },
                        namespaces = h.only("conds") }
      assert.same({ OLD_DONE, GATED, MIGRATE, STALE_DONE }, plan:pods())
    end)

    it("matches through one old enough condition though another is recent", function()
      -- gated matches through Ready (5 h) though its ContainersReady
      -- flipped 5 min ago; created before migrate, it goes first
      local plan = run{ conditions = { { status = "False", reason = "ContainersNotReady",
                                         minTimeSinceLastTransitionSeconds = 3600 } },
                        namespaces = h.only("conds") }
      assert.same({ GATED, MIGRATE }, plan:pods())
    end)

    it("with only minTimeSinceLastTransitionSeconds matches any old enough condition", function()
      -- some condition at least 4 h old: legacy (7 h), migrate (exactly
      -- 4 h: old enough), report-29144200 (scheduled 1 d ago), gated (6 h);
      -- not export-29145300 (3 h), export-29145900, nor warmup (none)
      local plan = run{ conditions = { { minTimeSinceLastTransitionSeconds = 4 * 3600 } },
                        namespaces = h.only("conds") }
      assert.same({ OLD_DONE, LEGACY, GATED, MIGRATE }, plan:pods())
    end)

    it("treats an empty field of a condition filter as unset", function()
      -- upstream checks `filter.Type != ""`: type "" is not compared
      local plan = run{ conditions = { { type = "", reason = "PodCompleted", status = "True",
                                         minTimeSinceLastTransitionSeconds = 300 } },
                        namespaces = h.only("conds") }
      assert.same({ OLD_DONE, STALE_DONE }, plan:pods())
    end)

    it("ANDs conditions with states", function()
      -- Succeeded and PodCompleted for 5 min (upstream's user scenario)
      assert.same({ OLD_DONE, STALE_DONE },
        run{ states = { "Succeeded" },
             conditions = { { reason = "PodCompleted", status = "True",
                              minTimeSinceLastTransitionSeconds = 300 } },
             namespaces = h.only("conds") }:pods())
      -- Succeeded with a condition at least 4 h old: only report-29144200
      assert.same({ OLD_DONE },
        run{ states = { "Succeeded" }, conditions = { { minTimeSinceLastTransitionSeconds = 4 * 3600 } },
             namespaces = h.only("conds") }:pods())
      -- Pending: warmup has no conditions, so no transition is old enough
      assert.same({ MIGRATE },
        run{ states = { "Pending" }, conditions = { { minTimeSinceLastTransitionSeconds = 300 } },
             namespaces = h.only("conds") }:pods())
    end)
  end)

  describe("exit codes and owner kinds", function()
    local E = h.only("exits")
    it("matches terminated app containers' exit codes", function()
      assert.same({ IMPORT_1, WORKER_1 }, run{ exitCodes = { 1 }, namespaces = E }:pods())
      assert.same({ IMPORT_2 }, run{ exitCodes = { 2 }, namespaces = E }:pods())
      assert.same({ CLEANUP }, run{ exitCodes = { 0 }, namespaces = E }:pods())
      assert.same({ IMPORT_1, IMPORT_2, WORKER_1 }, run{ exitCodes = { 2, 1 }, namespaces = E }:pods())
    end)

    it("looks at init containers only with includingInitContainers", function()
      assert.same({}, run{ exitCodes = { 3 }, namespaces = E }:pods())
      assert.same({ WORKER_INIT3 },
        run{ exitCodes = { 3 }, includingInitContainers = true, namespaces = E }:pods())
    end)

    it("excludes owner kinds; a bare pod is still protected by the evictor", function()
      local plan = run{ maxPodLifeTimeSeconds = 0, ownerKinds = { exclude = { "Job" } }, namespaces = E }
      assert.same({ LEDGER, WORKER_1, WORKER_INIT3 }, plan:pods())
    end)

    it("includes owner kinds", function()
      assert.same({ IMPORT_1, IMPORT_2, CLEANUP },
        run{ maxPodLifeTimeSeconds = 0, ownerKinds = { include = { "Job" } }, namespaces = E }:pods())
      assert.same({ LEDGER },
        run{ maxPodLifeTimeSeconds = 0, ownerKinds = { include = { "StatefulSet", "DaemonSet" } },
             namespaces = E }:pods())
    end)

    it("combines owner kinds with states as upstream's tests do", function()
      assert.same({ WORKER_1, WORKER_INIT3 },
        run{ states = { "Failed" }, ownerKinds = { exclude = { "Job" } }, namespaces = E }:pods())
      assert.same({ IMPORT_1, IMPORT_2 },
        run{ states = { "Failed" }, ownerKinds = { include = { "Job" } }, namespaces = E }:pods())
      -- the failed-pod removal recipe: Failed, any age, not a Job
      assert.same({ WORKER_1, WORKER_INIT3 },
        run{ states = { "Failed" }, maxPodLifeTimeSeconds = 0,
             ownerKinds = { exclude = { "Job" } }, namespaces = E }:pods())
    end)

    it("ANDs exit codes with owner kinds and age", function()
      assert.same({ IMPORT_1, IMPORT_2 },
        run{ exitCodes = { 1, 2 }, ownerKinds = { include = { "Job" } }, namespaces = E }:pods())
      assert.same({ IMPORT_1 },
        run{ exitCodes = { 1, 2 }, maxPodLifeTimeSeconds = 5 * 3600 + 30, namespaces = E }:pods())
    end)
  end)

  describe("namespaces and labelSelector", function()
    it("excludes namespaces", function()
      local plan = run{ maxPodLifeTimeSeconds = 5 * 86400, namespaces = { exclude = { "shop" } } }
      assert.same({ LEDGER }, plan:pods())
    end)

    it("includes several namespaces, still oldest first across them", function()
      local plan = run{ maxPodLifeTimeSeconds = 86400, namespaces = h.only("exits", "conds", "shop") }
      assert.same({ SEARCH0, LEDGER, CAT_K, CART_PEND, OLD_DONE }, plan:pods())
    end)

    it("filters by matchLabels", function()
      local plan = run{ maxPodLifeTimeSeconds = 600, labelSelector = { matchLabels = { app = "catalog" } } }
      assert.same({ CAT_K }, plan:pods())
      assert.same({ CAT_M, CAT_Z }, plan:refused("pdb"))
    end)

    it("filters by matchExpressions", function()
      assert.same({ CART_PEND, CART_601 },
        run{ maxPodLifeTimeSeconds = 600, namespaces = h.only("shop"), labelSelector = {
          matchExpressions = { { key = "tier", operator = "In", values = { "frontend" } } } } }:pods())
      assert.same({ SEARCH0 },
        run{ maxPodLifeTimeSeconds = 600, namespaces = h.only("shop"), labelSelector = {
          matchExpressions = { { key = "app", operator = "NotIn", values = { "catalog", "cart" } } } } }:pods())
      assert.same({ LEDGER },
        run{ maxPodLifeTimeSeconds = 600, labelSelector = {
          matchExpressions = { { key = "statefulset.kubernetes.io/pod-name", operator = "Exists" },
                               { key = "tier", operator = "DoesNotExist" } } } }:pods())
    end)
  end)

  describe("eviction limits", function()
    local SHOP = h.only("shop")
    it("skips a pod whose node is at maxNoOfPodsToEvictPerNode and goes on", function()
      -- worker-c-1: search-0; worker-b-1: catalog-k2x9q, then cart-p3nd1 is
      -- skipped and catalog-m4n7p on worker-a-1 still goes to the API (the
      -- PDB refuses it, which does not count); cart-h5j2w then takes a-1
      local plan = run({ maxPodLifeTimeSeconds = 600, namespaces = SHOP },
                       { top = { maxNoOfPodsToEvictPerNode = 1 } })
      assert.same({ SEARCH0, CAT_K, CART_601 }, plan:pods())
      assert.same({ CART_PEND, CAT_Z }, plan:refused("node-limit"))
      assert.same({ CAT_M }, plan:refused("pdb"))
    end)

    it("stops at maxNoOfPodsToEvictTotal", function()
      local plan = run({ maxPodLifeTimeSeconds = 600, namespaces = SHOP },
                       { top = { maxNoOfPodsToEvictTotal = 2 } })
      assert.same({ SEARCH0, CAT_K }, plan:pods())
      assert.same({ CART_PEND }, plan:refused())
      assert.same({ CART_PEND }, plan:refused("total-limit"))
    end)

    it("keeps going past maxNoOfPodsToEvictPerNamespace, one namespace at a time", function()
      local plan = run({ maxPodLifeTimeSeconds = 600, namespaces = h.only("shop", "exits") },
                       { top = { maxNoOfPodsToEvictPerNamespace = 1 } })
      assert.same({ SEARCH0, LEDGER }, plan:pods())
      assert.same({ CAT_K, CART_PEND, CAT_M, CAT_Z, IMPORT_1, IMPORT_2, WORKER_1, WORKER_INIT3,
                    CLEANUP, CART_601 }, plan:refused("namespace-limit"))
      assert.same({}, plan:refused("pdb"))
    end)

    it("combines the limits: total over namespace over node", function()
      local plan = run({ maxPodLifeTimeSeconds = 600, namespaces = h.only("shop", "exits") },
                       { top = { maxNoOfPodsToEvictPerNode = 2, maxNoOfPodsToEvictPerNamespace = 2,
                                 maxNoOfPodsToEvictTotal = 4 } })
      -- search-0 (c), ledger (b), catalog-k2x9q (b: 2, shop: 2), then
      -- cart-p3nd1 (worker-b-1 full: the node is checked before the
      -- namespace), catalog-m4n7p and -z8r2t (shop full), import-1 (a): 4
      -- evictions, import-2 stops the plugin
      assert.same({ SEARCH0, LEDGER, CAT_K, IMPORT_1 }, plan:pods())
      assert.same({ CART_PEND }, plan:refused("node-limit"))
      assert.same({ CAT_M, CAT_Z }, plan:refused("namespace-limit"))
      assert.same({ IMPORT_2 }, plan:refused("total-limit"))
      assert.equal(4, #plan.refusals)
    end)
  end)

  describe("with the evictor's settings", function()
    it("keeps pods with a PVC when ignorePvcPods is set", function()
      local plan = run({ maxPodLifeTimeSeconds = 600, namespaces = h.only("shop") },
                       { evictor = { ignorePvcPods = true } })
      assert.same({ CAT_K, CART_PEND, CART_601 }, plan:pods())
    end)

    it("with nodeFit only counts Ready nodes as somewhere to go", function()
      -- candidates worker-a-1 and the NotReady worker-d-1: pods on a-1 have
      -- nowhere to go; catalog-z8r2t could go, but the PDB is used up
      local plan = run({ maxPodLifeTimeSeconds = 600, namespaces = h.only("shop") },
                       { evictor = { nodeFit = true,
                                     nodeSelector = "kubernetes.io/hostname in (worker-a-1,worker-d-1)" } })
      assert.same({ SEARCH0, CAT_K, CART_PEND }, plan:pods())
      assert.same({ CAT_Z }, plan:refused("pdb"))
    end)

    it("evicts a bare pod and local storage once those protections are off", function()
      local plan = run({ maxPodLifeTimeSeconds = 5 * 86400, namespaces = h.only("default") },
                       { evictor = { podProtections = { defaultDisabled = {
                         "PodsWithLocalStorage", "FailedBarePods" } } } })
      -- the bare pod is Running: FailedBarePods off frees only failed ones
      assert.same({ "default/scratch-6b7c8d9e0f-w4k8s" }, plan:pods())
    end)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local _, fails = h.bad_args{ plugin = "PodLifeTime", profile = "lifetime", snapshot = SNAP }

    it("needs at least one filtering criterion", function()
      fails("      namespaces: {include: [shop]}", 8, "",
            "at least one filtering criterion must be specified (maxPodLifeTimeSeconds, states, conditions, or exitCodes)")
    end)

    it("rejects an unknown state", function()
      fails("      states:\n      - Running\n      - ContainerStatusUnknown", 10, ".states[1]",
            "states must be one of")
    end)

    it("rejects an empty condition filter", function()
      fails("      conditions:\n      - type: Ready\n      - {}", 10, ".conditions[1]",
            "at least one of type, status, reason, or minTimeSinceLastTransitionSeconds")
    end)

    it("rejects a condition filter whose fields are all empty strings", function()
      fails("      conditions:\n      - {type: \"\", status: \"\", reason: \"\"}", 9, ".conditions[0]",
            "at least one of type, status, reason, or minTimeSinceLastTransitionSeconds")
    end)

    it("rejects both include and exclude namespaces", function()
      -- the line of the value (its first key), as for every map
      fails("      maxPodLifeTimeSeconds: 60\n      namespaces:\n        include: [a]\n        exclude: [b]",
            10, ".namespaces", "only one of Include/Exclude namespaces")
    end)

    it("rejects both include and exclude owner kinds", function()
      fails("      states: [Failed]\n      ownerKinds:\n        include: [Job]\n        exclude: [ReplicaSet]",
            10, ".ownerKinds", "only one of Include/Exclude ownerKinds can be set")
    end)

    it("rejects a negative or fractional maxPodLifeTimeSeconds", function()
      fails("      maxPodLifeTimeSeconds: -1", 8, ".maxPodLifeTimeSeconds", "out of range")
      fails("      maxPodLifeTimeSeconds: 1.5", 8, ".maxPodLifeTimeSeconds", "integer")
    end)

    it("rejects an exit code outside int32", function()
      fails("      exitCodes: [1, 4294967296]", 8, ".exitCodes[1]", "out of range")
    end)

    it("rejects an unknown field and a bad labelSelector", function()
      fails("      maxPodLifeTimeSeconds: 60\n      maxPodLifetimeSeconds: 60", 9,
            ".maxPodLifetimeSeconds", "unknown field")
      fails("      maxPodLifeTimeSeconds: 60\n      labelSelector:\n        matchExpressions:\n"
            .. "        - {key: app, operator: In}", 10, ".labelSelector", "matchExpressions[0].values")
    end)
  end)
end)
