-- RemoveFailedPods through the real engine on spec/fixtures/failed.json
-- (built by spec/fixtures/build.py; NOW is 2026-11-22T12:00:00Z). In
-- kubernetes-sigs/descheduler v0.36 the plugin delegates to PodLifeTime with
-- a phase == Failed filter: minPodLifetimeSeconds (default 3600) is the
-- lifetime (strictly greater), reasons are PodLifeTime states (pod phase,
-- status.reason, waiting and terminated reasons, init containers with
-- includingInitContainers), excludeOwnerKinds an owner kind exclusion, and
-- pods go oldest first across the cluster. Cases follow
-- removefailedpods/failedpods_test.go.
local h = require("spec.helpers")

local SNAP = "spec/fixtures/failed.json"

local function run(args, o)
  o = o or {}
  return h.simulate{ snapshot = SNAP, plugin = "RemoveFailedPods", args = args,
                     evictor = o.evictor, top = o.top }
end

-- Failed pods, oldest first
local SHUTDOWN = "web/api-5c6d7e8f9-k7m2p"        -- 1 d, worker-c-1, reason Shutdown, exit 143
local OOM = "web/api-5c6d7e8f9-r4t8w"             -- 5 h, worker-b-1, OOMKilled 137
local BARE = "default/adhoc-migration"            -- 4 h, worker-a-1, no owner, exit 1
local NODE_AFF = "web/api-5c6d7e8f9-n2b6v"        -- 3 h, worker-a-1, reason NodeAffinity
local ETL_INIT_ERR = "batch/etl-29145000-x8c4v"   -- 2.5 h, worker-b-1, init Error exit 2
local ETL_INIT_OOM = "batch/etl-29145060-z5n1m"   -- 2 h 10, worker-c-1, init OOMKilled 137
local B4411 = "ci/build-4411-q2w3e"               -- 2 h, worker-a-1, Error exit 1
local EVICTED = "web/api-5c6d7e8f9-e9r5t"         -- 1.5 h, worker-b-1, reason Evicted, 137
local B4412 = "ci/build-4412-a5s6d"               -- 3601 s, worker-c-1
local B4413 = "ci/build-4413-f7g8h"               -- 3600 s, worker-a-1
local B4414 = "ci/build-4414-j9k0l"               -- 1800 s, worker-b-1
local NODE_EXPORTER = "monitoring/node-exporter-e8bb1"  -- 6 h, DaemonSet with hostPath

local DEFAULT = { SHUTDOWN, OOM, NODE_AFF, ETL_INIT_ERR, ETL_INIT_OOM, B4411, EVICTED, B4412 }

describe("RemoveFailedPods", function()
  describe("defaults", function()
    it("evicts Failed pods older than 3600 s, oldest first across nodes", function()
      -- not: build-4413 (exactly 3600 s), build-4414, the bare pod, the
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
      assert.same({ SHUTDOWN, OOM, NODE_AFF, EVICTED }, plan:pods())
      assert.same({}, plan.refusals)
    end)
  end)

  describe("minPodLifetimeSeconds", function()
    it("0 takes every Failed pod", function()
      local want = { table.unpack(DEFAULT) }
      want[#want + 1] = B4413
      want[#want + 1] = B4414
      assert.same(want, run{ minPodLifetimeSeconds = 0 }:pods())
    end)

    it("is strict: 7200 leaves the 2 h old build-4411", function()
      assert.same({ SHUTDOWN, OOM, NODE_AFF, ETL_INIT_ERR, ETL_INIT_OOM },
        run{ minPodLifetimeSeconds = 7200 }:pods())
      assert.same({ SHUTDOWN, OOM, NODE_AFF, ETL_INIT_ERR, ETL_INIT_OOM, B4411 },
        run{ minPodLifetimeSeconds = 7199 }:pods())
    end)
  end)

  describe("reasons", function()
    local cases = {
      { { "OOMKilled" }, false, { OOM } },
      { { "OOMKilled" }, true, { OOM, ETL_INIT_OOM } },
      { { "Shutdown", "NodeAffinity" }, false, { SHUTDOWN, NODE_AFF } },
      { { "Evicted" }, false, { EVICTED } },
      -- not a PodLifeTime state, but RemoveFailedPods does not validate reasons
      { { "ContainerStatusUnknown" }, false, { EVICTED } },
      { { "PodInitializing" }, false, { ETL_INIT_ERR, ETL_INIT_OOM } },
      { { "Error" }, false, { SHUTDOWN, B4411, B4412 } },
      { { "Error" }, true, { SHUTDOWN, ETL_INIT_ERR, B4411, B4412 } },
      { { "CreateContainerConfigError" }, true, {} },
    }
    for _, c in ipairs(cases) do
      local reasons, init, want = c[1], c[2], c[3]
      it("matches " .. table.concat(reasons, ",") .. (init and " with init containers" or ""), function()
        assert.same(want, run{ reasons = reasons, includingInitContainers = init }:pods())
      end)
    end
  end)

  describe("exitCodes", function()
    it("matches terminated app containers", function()
      assert.same({ B4411, B4412 }, run{ exitCodes = { 1 } }:pods())
      assert.same({ SHUTDOWN }, run{ exitCodes = { 143 } }:pods())
      assert.same({ OOM, EVICTED }, run{ exitCodes = { 137 } }:pods())
    end)

    it("matches init containers with includingInitContainers", function()
      assert.same({}, run{ exitCodes = { 2 } }:pods())
      assert.same({ ETL_INIT_ERR }, run{ exitCodes = { 2 }, includingInitContainers = true }:pods())
      assert.same({ OOM, ETL_INIT_OOM, EVICTED },
        run{ exitCodes = { 137 }, includingInitContainers = true }:pods())
    end)

    it("is ANDed with reasons", function()
      -- Error with exit 1; the Shutdown pod's Error exited 143
      assert.same({ B4411, B4412 }, run{ reasons = { "Error" }, exitCodes = { 1 } }:pods())
      assert.same({}, run{ reasons = { "OOMKilled" }, exitCodes = { 1 } }:pods())
    end)
  end)

  describe("excludeOwnerKinds", function()
    it("leaves pods of the excluded kinds", function()
      assert.same({ SHUTDOWN, OOM, NODE_AFF, EVICTED }, run{ excludeOwnerKinds = { "Job" } }:pods())
      assert.same({ ETL_INIT_ERR, ETL_INIT_OOM, B4411, B4412 },
        run{ excludeOwnerKinds = { "ReplicaSet" }, includingInitContainers = true }:pods())
      assert.same(DEFAULT, run{ excludeOwnerKinds = { "DaemonSet" } }:pods())
      assert.same({}, run{ excludeOwnerKinds = { "Job", "ReplicaSet" } }:pods())
    end)
  end)

  describe("namespaces and labelSelector", function()
    it("filters namespaces", function()
      assert.same({ B4411, B4412 }, run{ namespaces = { include = { "ci" } } }:pods())
      assert.same({ ETL_INIT_ERR, ETL_INIT_OOM }, run{ namespaces = { exclude = { "web", "ci" } } }:pods())
    end)

    it("filters labels", function()
      assert.same({ ETL_INIT_ERR, ETL_INIT_OOM }, run{ labelSelector = { matchLabels = { app = "etl" } } }:pods())
      assert.same({ ETL_INIT_ERR, ETL_INIT_OOM, B4411, B4412 }, run{ labelSelector = {
        matchExpressions = { { key = "job-name", operator = "Exists" } } } }:pods())
    end)
  end)

  describe("with the DefaultEvictor", function()
    it("evicts a failed bare pod once FailedBarePods is off (legacy flag)", function()
      assert.same({ SHUTDOWN, OOM, BARE, NODE_AFF, ETL_INIT_ERR, ETL_INIT_OOM, B4411, EVICTED, B4412 },
        run(nil, { evictor = { evictFailedBarePods = true } }):pods())
    end)

    it("evicts a failed bare pod once FailedBarePods is off (podProtections)", function()
      assert.same({ SHUTDOWN, OOM, BARE, NODE_AFF, ETL_INIT_ERR, ETL_INIT_OOM, B4411, EVICTED, B4412 },
        run(nil, { evictor = { podProtections = { defaultDisabled = { "FailedBarePods" } } } }):pods())
    end)

    it("needs both DaemonSetPods and PodsWithLocalStorage off for the node-exporter pod", function()
      assert.same(DEFAULT,
        run(nil, { evictor = { podProtections = { defaultDisabled = { "DaemonSetPods" } } } }):pods())
      assert.same({ SHUTDOWN, NODE_EXPORTER, OOM, NODE_AFF, ETL_INIT_ERR, ETL_INIT_OOM, B4411, EVICTED, B4412 },
        run(nil, { evictor = { podProtections = {
          defaultDisabled = { "DaemonSetPods", "PodsWithLocalStorage" } } } }):pods())
    end)

    it("keeps pods that fit no other node of the evictor's nodeSelector (nodeFit)", function()
      -- only worker-a-1 is a candidate: its own pods have nowhere to go
      local plan = run(nil, { evictor = { nodeFit = true,
                                          nodeSelector = "kubernetes.io/hostname=worker-a-1" } })
      assert.same({ SHUTDOWN, OOM, ETL_INIT_ERR, ETL_INIT_OOM, EVICTED, B4412 }, plan:pods())
    end)
  end)

  describe("the policy's node set and limits", function()
    it("only looks at nodes of the policy's nodeSelector", function()
      local plan = run(nil, { top = { nodeSelector = "topology.kubernetes.io/zone in (eu-west-1a,eu-west-1b)" } })
      assert.same({ OOM, NODE_AFF, ETL_INIT_ERR, B4411, EVICTED }, plan:pods())
    end)

    it("skips the cycle when fewer than two nodes are left", function()
      local plan = run(nil, { top = { nodeSelector = "topology.kubernetes.io/zone=eu-west-1a" } })
      assert.same({}, plan:pods())
      assert.equal(1, #plan.skipped)
    end)

    it("skips a pod whose node is at maxNoOfPodsToEvictPerNode and goes on", function()
      local plan = run(nil, { top = { maxNoOfPodsToEvictPerNode = 1 } })
      assert.same({ SHUTDOWN, OOM, NODE_AFF }, plan:pods())
      assert.same({ ETL_INIT_ERR, ETL_INIT_OOM, B4411, EVICTED, B4412 }, plan:refused("node-limit"))
    end)

    it("stops at maxNoOfPodsToEvictTotal", function()
      local plan = run(nil, { top = { maxNoOfPodsToEvictTotal = 3 } })
      assert.same({ SHUTDOWN, OOM, NODE_AFF }, plan:pods())
      assert.same({ ETL_INIT_ERR }, plan:refused())
      assert.equal("total-limit", plan.refusals[1].why)
    end)

    it("refuses pods of a namespace at maxNoOfPodsToEvictPerNamespace", function()
      local plan = run(nil, { top = { maxNoOfPodsToEvictPerNamespace = 1 } })
      assert.same({ SHUTDOWN, ETL_INIT_ERR, B4411 }, plan:pods())
      assert.same({ OOM, NODE_AFF, ETL_INIT_OOM, EVICTED, B4412 }, plan:refused("namespace-limit"))
    end)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local function policy(args_yaml)
      return table.concat({
        "apiVersion: descheduler/v1alpha2",
        "kind: DeschedulerPolicy",
        "profiles:",
        "- name: failed",
        "  pluginConfig:",
        "  - name: RemoveFailedPods",
        "    args:",
        args_yaml,
        "  plugins:",
        "    deschedule:",
        "      enabled: [RemoveFailedPods]",
        "",
      }, "\n")
    end
    local function fails(args_yaml, line, field, words)
      local plan, msg = h.try{ snapshot = SNAP, policy_text = policy(args_yaml) }
      assert.is_nil(plan)
      assert.is_truthy(msg:find(":" .. line .. ": ", 1, true), msg)
      assert.is_truthy(msg:find("profiles[0].pluginConfig[0].args" .. field .. ": ", 1, true), msg)
      assert.is_truthy(msg:find(words, 1, true), msg)
    end

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
