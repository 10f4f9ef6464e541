-- RemovePodsHavingTooManyRestarts through the real engine on
-- spec/fixtures/restarts.json (built by spec/fixtures/build_groups.py).
-- Expected plans follow kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/removepodshavingtoomanyrestarts (toomanyrestarts.go,
-- toomanyrestarts_test.go, validation.go): pods of every phase; restarts of
-- app containers (+ init containers with includingInitContainers) >= the
-- threshold; states: phase or a waiting container's reason; per node, most
-- restarts first.
local h = require("spec.helpers")

local SNAP = "spec/fixtures/restarts.json"

local function run(args, o)
  o = o or {}
  return h.simulate{ snapshot = SNAP, plugin = "RemovePodsHavingTooManyRestarts", args = args,
                     evictor = o.evictor, top = o.top }
end

-- node-a-1
local R24, R25, R26 = "shop/api-7d8e9f0a1-r24", "shop/api-7d8e9f0a1-r25", "shop/api-7d8e9f0a1-r26"
local R99 = "shop/api-7d8e9f0a1-r99"                  -- 99, waiting in CrashLoopBackOff
local WORKER = "shop/worker-6c7d8e9f0-m2n3b"           -- 20 + 5 in its init container
local GATEWAY = "shop/gateway-5b6c7d8e9-v4c5x"         -- 15 + 15 in two containers
-- node-b-1
local SEARCH = "shop/search-4a5b6c7d8-k9j8h"           -- Pending, init container crash-looping, 40
local QUEUE = "shop/queue-3f4a5b6c7-g7f6d"             -- 30, running
local FLAPPY = "shop/flappy-2e3f4a5b6-s5a4p"           -- 50, waiting in CrashLoopBackOff
local IMPORT = "batch/import-29145600-q8w7e"           -- Failed job pod, 30
-- node-c-1
local ETL = "batch/etl-1d2e3f4a5-b3n4m"                -- 70, CrashLoopBackOff

describe("RemovePodsHavingTooManyRestarts", function()
  describe("threshold", function()
    it("evicts pods with at least podRestartThreshold restarts, most first on each node", function()
      local plan = run({ podRestartThreshold = 25 })
      -- 25 is enough, 24 is not; worker has only 20 without its init
      -- container; the Failed job pod counts (every phase); the DaemonSet,
      -- the mirror pod and the terminating api-r88 are never evicted
      assert.same({ R99, GATEWAY, R26, R25, FLAPPY, IMPORT, QUEUE, ETL }, plan:pods())
      assert.same({}, plan.refusals)
      assert.same({}, plan.errors)
      assert.equal("99 container restarts, at or above the threshold of 25", plan.evictions[1].reason)
      assert.equal("node-a-1", plan.evictions[1].node)
    end)

    it("moves with the threshold", function()
      assert.same({ R99, GATEWAY, R26, FLAPPY, IMPORT, QUEUE, ETL }, run({ podRestartThreshold = 26 }):pods())
      assert.same({ R99, GATEWAY, R26, R25, R24, FLAPPY, IMPORT, QUEUE, ETL }, run({ podRestartThreshold = 24 }):pods())
      assert.same({ R99 }, run({ podRestartThreshold = 71 }):pods())
      assert.same({}, run({ podRestartThreshold = 100 }):pods())
    end)

    it("adds init container restarts with includingInitContainers", function()
      local plan = run({ podRestartThreshold = 25, includingInitContainers = true })
      -- worker reaches 25 (ties keep namespace/name order), search's init
      -- container restarted 40 times
      assert.same({ R99, GATEWAY, R26, R25, WORKER, FLAPPY, SEARCH, IMPORT, QUEUE, ETL }, plan:pods())
      assert.equal("25 container restarts (init containers included), at or above the threshold of 25",
        plan.evictions[5].reason)
    end)
  end)

  describe("states", function()
    it("CrashLoopBackOff: a container waiting for that reason", function()
      assert.same({ R99, FLAPPY, ETL }, run({ podRestartThreshold = 1, states = { "CrashLoopBackOff" } }):pods())
    end)

    it("CrashLoopBackOff with includingInitContainers: init containers waiting count too", function()
      assert.same({ R99, FLAPPY, SEARCH, ETL },
        run({ podRestartThreshold = 1, states = { "CrashLoopBackOff" }, includingInitContainers = true }):pods())
    end)

    it("Running: the pod's phase, whatever its containers do", function()
      -- not the Pending search pod, not the Failed job pod
      assert.same({ R99, GATEWAY, R26, R25, R24, WORKER, FLAPPY, QUEUE, ETL },
        run({ podRestartThreshold = 1, states = { "Running" } }):pods())
    end)

    it("either of both", function()
      assert.same({ R99, GATEWAY, R26, R25, FLAPPY, QUEUE, ETL },
        run({ podRestartThreshold = 25, states = { "Running", "CrashLoopBackOff" } }):pods())
    end)
  end)

  describe("namespaces and labelSelector", function()
    it("narrow the pods looked at", function()
      assert.same({ IMPORT, ETL }, run({ podRestartThreshold = 25, namespaces = h.only("batch") }):pods())
      assert.same({ R99, GATEWAY, R26, R25, FLAPPY, QUEUE },
        run({ podRestartThreshold = 25, namespaces = { exclude = { "batch" } } }):pods())
      assert.same({ R99, R26, R25, FLAPPY, QUEUE },
        run({ podRestartThreshold = 25, labelSelector = { matchLabels = { tier = "backend" } } }):pods())
    end)
  end)

  describe("with the evictor", function()
    it("evicts DaemonSet and mirror pods only when the evictor allows them", function()
      local plan = run({ podRestartThreshold = 25, namespaces = h.only("kube-system") },
                       { evictor = { podProtections = { defaultDisabled = { "DaemonSetPods", "SystemCriticalPods" } } } })
      -- the DaemonSet's pods go (cp-a-1 first by name); the mirror pod of
      -- etcd never does
      assert.same({ "kube-system/fluent-bit-695e8", "kube-system/fluent-bit-57e27",
                    "kube-system/fluent-bit-96597", "kube-system/fluent-bit-46a49" }, plan:pods())
    end)

    it("moves on to the next node at the node limit", function()
      local plan = run({ podRestartThreshold = 25 }, { top = { maxNoOfPodsToEvictPerNode = 2 } })
      assert.same({ R99, GATEWAY, FLAPPY, IMPORT, ETL }, plan:pods())
      assert.same({ R26, QUEUE }, plan:refused("node-limit"))
      assert.same({ R26, QUEUE }, plan:refused())
    end)

    it("stops at the total limit", function()
      local plan = run({ podRestartThreshold = 25 }, { top = { maxNoOfPodsToEvictTotal = 3 } })
      assert.same({ R99, GATEWAY, R26 }, plan:pods())
      assert.same({ R25 }, plan:refused("total-limit"))
      assert.same({ R25 }, plan:refused())
    end)

    it("goes on with the next pod after any other refusal", function()
      local plan = run({ podRestartThreshold = 25 }, { top = { maxNoOfPodsToEvictPerNamespace = 2 } })
      assert.same({ R99, GATEWAY, IMPORT, ETL }, plan:pods())
      assert.same({ R26, R25, FLAPPY, QUEUE }, plan:refused("namespace-limit"))
    end)
  end)

  describe("bad args", function()
    -- args start on line 8 of this policy
    local _, fails = h.bad_args{ plugin = "RemovePodsHavingTooManyRestarts", profile = "restarts",
                                 snapshot = SNAP }

    it("needs a threshold of at least 1", function()
      fails("      includingInitContainers: true", 8, ".podRestartThreshold",
            "invalid PodsHavingTooManyRestarts threshold")
      fails("      podRestartThreshold: 0", 8, ".podRestartThreshold", "invalid PodsHavingTooManyRestarts threshold")
      fails("      podRestartThreshold: -3", 8, ".podRestartThreshold", "invalid PodsHavingTooManyRestarts threshold")
    end)

    it("rejects a threshold that is not an int32", function()
      fails("      podRestartThreshold: 2147483648", 8, ".podRestartThreshold", "out of range")
      fails("      podRestartThreshold: 2.5", 8, ".podRestartThreshold", "expected an integer")
    end)

    it("accepts only Running and CrashLoopBackOff as states", function()
      fails("      podRestartThreshold: 3\n      states:\n      - Running\n      - Pending", 11, ".states[1]",
            "states must be one of [CrashLoopBackOff Running]")
      fails("      podRestartThreshold: 3\n      states: [OOMKilled]", 9, ".states[0]",
            "states must be one of [CrashLoopBackOff Running]")
    end)

    it("rejects both include and exclude namespaces, before the threshold", function()
      fails("      namespaces:\n        include: [a]\n        exclude: [b]", 9, ".namespaces",
            "only one of Include/Exclude namespaces can be set")
    end)

    it("rejects a labelSelector that does not parse and an unknown field", function()
      fails("      podRestartThreshold: 3\n      labelSelector: {matchLabels: {app: [x]}}", 9, ".labelSelector",
            "matchLabels")
      fails("      podRestartThreshold: 3\n      includeInitContainers: true", 9, ".includeInitContainers",
            "unknown field")
    end)
  end)
end)
