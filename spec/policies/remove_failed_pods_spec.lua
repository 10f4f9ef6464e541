-- RemoveFailedPods through the real engine on spec/fixtures/failed.json
-- (built by spec/fixtures/build.py; NOW is 2026-11-22T12:00:00Z). Expected
-- plans follow kubernetes-sigs/descheduler v0.36.0
-- pkg/framework/plugins/removefailedpods (failedpods.go and its tests), a
-- plugin of its own: a pod is refused only when its age is less than
-- minPodLifetimeSeconds (default 3600); reasons are container waiting and
-- terminated reasons and status.reason (init containers with
-- includingInitContainers), never the phase; pods go node by node (nodes by
-- name, a node's pods by namespace/name), a node at its limit is left for
-- the next.
local h = require("spec.helpers")

local SNAP = "spec/fixtures/failed.json"

local function run(args, o)
  o = o or {}
  return h.simulate{ snapshot = SNAP, plugin = "RemoveFailedPods", args = args,
                     evictor = o.evictor, top = o.top }
end

-- Failed pods by node, in listing order
-- worker-a-1
local GPU = "batch/gpu-train-29147520-c3v4b"      -- 0 s, UnexpectedAdmissionError, no containers ran
local B4411 = "ci/build-4411-q2w3e"               -- 2 h, Error exit 1
local B4413 = "ci/build-4413-f7g8h"               -- 3600 s, Error exit 1
local BARE = "default/adhoc-migration"            -- 4 h, no owner, exit 1
local NODE_EXPORTER = "monitoring/node-exporter-e8bb1"  -- 6 h, DaemonSet with hostPath
local NODE_AFF = "web/api-5c6d7e8f9-n2b6v"        -- 3 h, reason NodeAffinity
-- worker-b-1
local ETL_INIT_ERR = "batch/etl-29145000-x8c4v"   -- 2.5 h, init Error exit 2, app waiting PodInitializing
local B4409 = "ci/build-4409-n3m4b"               -- no creationTimestamp, Error exit 1
local B4414 = "ci/build-4414-j9k0l"               -- 1800 s
local EVICTED = "web/api-5c6d7e8f9-e9r5t"         -- 1.5 h, reason Evicted, ContainerStatusUnknown 137
local OOM = "web/api-5c6d7e8f9-r4t8w"             -- 5 h, OOMKilled 137
-- worker-c-1
local ETL_INIT_OOM = "batch/etl-29145060-z5n1m"   -- 2 h 10, init OOMKilled 137, app waiting PodInitializing
local B4412 = "ci/build-4412-a5s6d"               -- 3601 s
local SHUTDOWN = "web/api-5c6d7e8f9-k7m2p"        -- 1 d, reason Shutdown, Error exit 143

local DEFAULT = { B4411, B4413, NODE_AFF, ETL_INIT_ERR, B4409, EVICTED, OOM, ETL_INIT_OOM, B4412, SHUTDOWN }

describe("RemoveFailedPods", function()
  describe("defaults", function()
    it("evicts Failed pods at least 3600 s old, node by node", function()
      -- not: build-4414 (1800 s), gpu-train (0 s), the bare pod, the
      -- DaemonSet pod, the terminating web/api-u1i2o, Running/Succeeded pods
      local plan = run(nil)
      assert.same(DEFAULT, plan:pods())
      assert.same({}, plan.refusals)
      assert.same({}, plan.errors)
      for _, e in ipairs(plan.evictions) do assert.equal("RemoveFailedPods", e.plugin) end
    end)

    it("takes an empty args map the same way", function()
      assert.same(DEFAULT, run({}):pods())
    end)

    it("ignores the web/api PDB at its limit: Failed pods are not disrupted", function()
      local plan = run{ labelSelector = { matchLabels = { app = "api" } } }
      assert.same({ NODE_AFF, EVICTED, OOM, SHUTDOWN }, plan:pods())
      assert.same({}, plan.refusals)
    end)
  end)

  describe("minPodLifetimeSeconds", function()
    it("0 takes every Failed pod, one that failed this second too", function()
      assert.same({ GPU, B4411, B4413, NODE_AFF, ETL_INIT_ERR, B4409, B4414, EVICTED, OOM,
                    ETL_INIT_OOM, B4412, SHUTDOWN }, run{ minPodLifetimeSeconds = 0 }:pods())
    end)

    it("refuses only a pod younger than the minimum: 7200 takes the 2 h old build-4411", function()
      assert.same({ B4411, NODE_AFF, ETL_INIT_ERR, B4409, OOM, ETL_INIT_OOM, SHUTDOWN },
        run{ minPodLifetimeSeconds = 7200 }:pods())
      assert.same({ NODE_AFF, ETL_INIT_ERR, B4409, OOM, ETL_INIT_OOM, SHUTDOWN },
        run{ minPodLifetimeSeconds = 7201 }:pods())
    end)

    it("counts a pod without creationTimestamp as created at Go's zero time", function()
      -- now - 0001-01-01 saturates as a time.Duration: 9223372036 s
      assert.same({ B4409 }, run{ minPodLifetimeSeconds = 9223372036 }:pods())
      assert.same({}, run{ minPodLifetimeSeconds = 9223372037 }:pods())
    end)
  end)

  describe("reasons", function()
    local cases = {
      { { "OOMKilled" }, false, { OOM } },
      { { "OOMKilled" }, true, { OOM, ETL_INIT_OOM } },
      { { "Shutdown", "NodeAffinity" }, false, { NODE_AFF, SHUTDOWN } },
      { { "Evicted" }, false, { EVICTED } },
      -- any string: RemoveFailedPods does not validate reasons
      { { "ContainerStatusUnknown" }, false, { EVICTED } },
      { { "PodInitializing" }, false, { ETL_INIT_ERR, ETL_INIT_OOM } },
      { { "Error" }, false, { B4411, B4413, B4409, B4412, SHUTDOWN } },
      { { "Error" }, true, { B4411, B4413, ETL_INIT_ERR, B4409, B4412, SHUTDOWN } },
      { { "CreateContainerConfigError" }, true, {} },
      -- the phase is not a reason
      { { "Failed" }, true, {} },
    }
    for _, c in ipairs(cases) do
      local reasons, init, want = c[1], c[2], c[3]
      it("matches " .. table.concat(reasons, ",") .. (init and " with init containers" or ""), function()
        assert.same(want, run{ reasons = reasons, includingInitContainers = init }:pods())
      end)
    end

    it("matches status.reason of a pod no container ran in", function()
      assert.same({ GPU }, run{ reasons = { "UnexpectedAdmissionError" }, minPodLifetimeSeconds = 0 }:pods())
    end)
  end)

  describe("exitCodes", function()
    it("matches terminated app containers", function()
      assert.same({ B4411, B4413, B4409, B4412 }, run{ exitCodes = { 1 } }:pods())
      assert.same({ SHUTDOWN }, run{ exitCodes = { 143 } }:pods())
      assert.same({ EVICTED, OOM }, run{ exitCodes = { 137 } }:pods())
    end)

    it("matches init containers with includingInitContainers", function()
      assert.same({}, run{ exitCodes = { 2 } }:pods())
      assert.same({ ETL_INIT_ERR }, run{ exitCodes = { 2 }, includingInitContainers = true }:pods())
      assert.same({ EVICTED, OOM, ETL_INIT_OOM },
        run{ exitCodes = { 137 }, includingInitContainers = true }:pods())
    end)

    it("is ANDed with reasons", function()
      -- Error with exit 1; the Shutdown pod's Error exited 143
      assert.same({ B4411, B4413, B4409, B4412 }, run{ reasons = { "Error" }, exitCodes = { 1 } }:pods())
      assert.same({}, run{ reasons = { "OOMKilled" }, exitCodes = { 1 } }:pods())
    end)
  end)

  describe("excludeOwnerKinds", function()
    it("leaves pods of the excluded kinds", function()
      assert.same({ NODE_AFF, EVICTED, OOM, SHUTDOWN }, run{ excludeOwnerKinds = { "Job" } }:pods())
      assert.same({ B4411, B4413, ETL_INIT_ERR, B4409, ETL_INIT_OOM, B4412 },
        run{ excludeOwnerKinds = { "ReplicaSet" }, includingInitContainers = true }:pods())
      assert.same(DEFAULT, run{ excludeOwnerKinds = { "DaemonSet" } }:pods())
      assert.same({}, run{ excludeOwnerKinds = { "Job", "ReplicaSet" } }:pods())
    end)
  end)

  describe("namespaces and labelSelector", function()
    it("filters namespaces", function()
      assert.same({ B4411, B4413, B4409, B4412 }, run{ namespaces = { include = { "ci" } } }:pods())
      assert.same({ ETL_INIT_ERR, ETL_INIT_OOM }, run{ namespaces = { exclude = { "web", "ci" } } }:pods())
    end)

    it("filters labels", function()
      assert.same({ ETL_INIT_ERR, ETL_INIT_OOM }, run{ labelSelector = { matchLabels = { app = "etl" } } }:pods())
      assert.same({ B4411, B4413, ETL_INIT_ERR, B4409, ETL_INIT_OOM, B4412 }, run{ labelSelector = {
        matchExpressions = { { key = "job-name", operator = "Exists" } } } }:pods())
    end)
  end)

  describe("with the DefaultEvictor", function()
    local WITH_BARE = { B4411, B4413, BARE, NODE_AFF, ETL_INIT_ERR, B4409, EVICTED, OOM, ETL_INIT_OOM,
                        B4412, SHUTDOWN }
    it("evicts a failed bare pod once FailedBarePods is off (legacy flag)", function()
      assert.same(WITH_BARE, run(nil, { evictor = { evictFailedBarePods = true } }):pods())
    end)

    it("evicts a failed bare pod once FailedBarePods is off (podProtections)", function()
      assert.same(WITH_BARE,
        run(nil, { evictor = { podProtections = { defaultDisabled = { "FailedBarePods" } } } }):pods())
    end)

    it("needs both DaemonSetPods and PodsWithLocalStorage off for the node-exporter pod", function()
      assert.same(DEFAULT,
        run(nil, { evictor = { podProtections = { defaultDisabled = { "DaemonSetPods" } } } }):pods())
      assert.same({ B4411, B4413, NODE_EXPORTER, NODE_AFF, ETL_INIT_ERR, B4409, EVICTED, OOM, ETL_INIT_OOM,
                    B4412, SHUTDOWN },
        run(nil, { evictor = { podProtections = {
          defaultDisabled = { "DaemonSetPods", "PodsWithLocalStorage" } } } }):pods())
    end)

    it("keeps pods that fit no other node of the evictor's nodeSelector (nodeFit)", function()
      -- only worker-a-1 is a candidate: its own pods have nowhere to go
      local plan = run(nil, { evictor = { nodeFit = true,
                                          nodeSelector = "kubernetes.io/hostname=worker-a-1" } })
      assert.same({ ETL_INIT_ERR, B4409, EVICTED, OOM, ETL_INIT_OOM, B4412, SHUTDOWN }, plan:pods())
    end)
  end)

  describe("the policy's node set and limits", function()
    it("only looks at nodes of the policy's nodeSelector", function()
      local plan = run(nil, { top = { nodeSelector = "topology.kubernetes.io/zone in (eu-west-1a,eu-west-1b)" } })
      assert.same({ B4411, B4413, NODE_AFF, ETL_INIT_ERR, B4409, EVICTED, OOM }, plan:pods())
    end)

    it("skips the cycle when fewer than two nodes are left", function()
      local plan = run(nil, { top = { nodeSelector = "topology.kubernetes.io/zone=eu-west-1a" } })
      assert.same({}, plan:pods())
      assert.equal(1, #plan.skipped)
    end)

    it("leaves a node at maxNoOfPodsToEvictPerNode for the next", function()
      -- one refusal per node, then the plugin moves on
      local plan = run(nil, { top = { maxNoOfPodsToEvictPerNode = 1 } })
      assert.same({ B4411, ETL_INIT_ERR, ETL_INIT_OOM }, plan:pods())
      assert.same({ B4413, B4409, B4412 }, plan:refused("node-limit"))
      assert.same({ B4413, B4409, B4412 }, plan:refused())
    end)

    it("stops at maxNoOfPodsToEvictTotal", function()
      local plan = run(nil, { top = { maxNoOfPodsToEvictTotal = 3 } })
      assert.same({ B4411, B4413, NODE_AFF }, plan:pods())
      assert.same({ ETL_INIT_ERR }, plan:refused())
      assert.equal("total-limit", plan.refusals[1].why)
    end)

    it("refuses pods of a namespace at maxNoOfPodsToEvictPerNamespace", function()
      local plan = run(nil, { top = { maxNoOfPodsToEvictPerNamespace = 1 } })
      assert.same({ B4411, NODE_AFF, ETL_INIT_ERR }, plan:pods())
      assert.same({ B4413, B4409, EVICTED, OOM, ETL_INIT_OOM, B4412, SHUTDOWN }, plan:refused("namespace-limit"))
    end)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local _, fails = h.bad_args{ plugin = "RemoveFailedPods", profile = "failed", snapshot = SNAP }

    it("rejects both include and exclude namespaces", function()
      fails("      reasons: [Error]\n      namespaces: {include: [web], exclude: [ci]}", 9,
            ".namespaces", "only one of Include/Exclude namespaces")
    end)

    it("rejects a negative minPodLifetimeSeconds and PodLifeTime's spelling of it", function()
      fails("      minPodLifetimeSeconds: -60", 8, ".minPodLifetimeSeconds", "out of range")
      fails("      reasons: [Error]\n      minPodLifeTimeSeconds: 60", 9, ".minPodLifeTimeSeconds",
            "unknown field")
    end)

    it("rejects reasons that are not a list of strings", function()
      fails("      reasons: OOMKilled", 8, ".reasons", "expected a list")
      fails("      reasons:\n      - Error\n      - 137", 10, ".reasons[1]", "expected a string")
    end)

    it("rejects bad exitCodes, excludeOwnerKinds and includingInitContainers", function()
      fails("      exitCodes: [1, \"2\"]", 8, ".exitCodes[1]", "expected an integer")
      fails("      excludeOwnerKinds: Job", 8, ".excludeOwnerKinds", "expected a list")
      fails("      includingInitContainers: \"true\"", 8, ".includingInitContainers", "expected a boolean")
    end)

    it("rejects a bad labelSelector", function()
      fails("      labelSelector:\n        matchExpressions:\n        - {key: app, operator: Exists, values: [x]}",
            9, ".labelSelector", "matchExpressions[0].values")
    end)
  end)
end)
