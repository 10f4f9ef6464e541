-- The DefaultEvictor (engine/core/default_evictor.c) and the simulated eviction
-- API (engine/core/evict.c, engine/core/pdb.c) through the real engine on
-- spec/fixtures/evictor.json (built by spec/fixtures/build.py): one small
-- workload per protection in namespace apps, labelled app=<case>. PodLifeTime
-- (maxPodLifeTimeSeconds 3600, every case is about 2 days old) asks for the
-- evictions, so a plan lists exactly the pods the evictor lets go, oldest
-- first. Expected behaviour follows kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/defaultevictor (defaultevictor.go, constraints.go,
-- validation.go, defaultevictor_test.go) and the API server's eviction
-- subresource for PodDisruptionBudgets.
local h = require("spec.helpers")

local SNAP = "spec/fixtures/evictor.json"

-- PodLifeTime over the pods labelled app in `apps` (and `more` expressions)
local function run(apps, evictor, o)
  o = o or {}
  local exprs = { { key = "app", operator = "In", values = apps } }
  for _, e in ipairs(o.more or {}) do exprs[#exprs + 1] = e end
  return h.simulate{ snapshot = SNAP, plugin = "PodLifeTime", evictor = evictor, top = o.top,
                     args = { maxPodLifeTimeSeconds = 3600, labelSelector = { matchExpressions = exprs } } }
end

local P = {
  plain = "apps/plain-0ad3d46b0-e38ab",
  mirror = "apps/mirror-worker-a-1",
  static = "apps/static-worker-a-1",
  source_api = "apps/source-api-48e605e95-c5fc2",
  mirror_evict = "apps/mirror-evict-worker-a-1",
  terminating = "apps/terminating-2269c770f-fdada",
  terminating_evict = "apps/terminating-evict-b99551526-74c57",
  critical = "apps/critical-25721cf5b-1a1b7",            -- 2000000000
  node_critical = "apps/node-critical-2fdf856cf-8bccc",  -- 2000001000
  high_prio = "apps/high-prio-37ca31ccb-4b7c9",          -- 1000000 (high-priority)
  mid_prio = "apps/mid-prio-28bfb28c3-df496",            -- 1000 (standard)
  no_prio = "apps/no-prio-7a9cb57fe-0bdb5",              -- spec.priority unset
  bare = "apps/bare-debug",
  bare_failed = "apps/bare-failed-migration",
  emptydir = "apps/emptydir-8384f7c34-4656c",
  hostpath = "apps/hostpath-def4e90c4-60588",
  ds = "apps/ds-agent-2e83b",
  pvc_gp3 = "apps/pvc-gp3-cd7dc592c-9e3a8",
  pvc_local = "apps/pvc-local-d27343bd5-0d1a1",
  pvc_ghost = "apps/pvc-ghost-3721ad080-88182",          -- claim does not exist
  pvc_noclass = "apps/pvc-noclass-2adf93aa7-cbf20",      -- claim without storageClassName
  g1 = "apps/guarded-a6a188013-g1",
  g2 = "apps/guarded-a6a188013-g2",
  g3 = "apps/guarded-a6a188013-g3",
  claims = "apps/claims-f66e3163b-bb462",
  evict_false = "apps/evict-false-debug",                -- bare, critical, emptyDir, evict: "false"
  prefer_no = "apps/prefer-no-e4d9baa91-1abec",
  prefer_no_evict = "apps/prefer-no-evict-84f82b5db-98a57",
  solo = "apps/solo-65ab3fc1f-a7229",
  trio1 = "apps/trio-e05d1f033-t1",
  trio2 = "apps/trio-e05d1f033-t2",
  multi = "apps/multi-5a6b7c8d9-m1x2y",
  young_start = "apps/young-start-947f2b0ab-cb4c7",      -- startTime 5 min ago
  no_start = "apps/no-start-08f6ce5bc-d1557",            -- no startTime
  nvme_only = "apps/nvme-only-0ebbebb60-ca35a",
  big = "apps/big-34c3cf338-a9692",
  cordoned = "apps/cordoned-ebdc5deaf-f1af0",
  anti = "apps/anti-94aa26438-d48bf",
  f1 = "apps/frozen-45de11b13-f1",
  f2 = "apps/frozen-45de11b13-f2",
  f3 = "apps/frozen-45de11b13-f3",
  k1 = "apps/flaky-8d940e17f-k1",
  k2 = "apps/flaky-8d940e17f-k2",
  s1 = "apps/steady-6597a2677-s1",
  s2 = "apps/steady-6597a2677-s2",
  s3 = "apps/steady-6597a2677-s3",
  stale = "apps/stale-f16eeeacd-29d54",
  overlap = "apps/overlap-29b6f1665-fc1e6",
  toy = "sandbox/toy-ccfac252f-625f8",
}

describe("DefaultEvictor", function()
  describe("defaults", function()
    it("never lets a protected pod go, anywhere in the cluster", function()
      local plan = h.simulate{ snapshot = SNAP, plugin = "PodLifeTime",
                               args = { maxPodLifeTimeSeconds = 3600 } }
      assert.same({
        P.plain, P.source_api, P.mirror_evict, P.terminating_evict, P.high_prio, P.mid_prio,
        P.no_prio, P.pvc_gp3, P.pvc_local, P.pvc_ghost, P.pvc_noclass, P.g1, P.claims,
        P.evict_false, P.prefer_no, P.prefer_no_evict, P.solo, P.trio1, P.trio2, P.multi,
        P.young_start, P.no_start, P.nvme_only, P.big, P.cordoned, P.anti, P.f3, P.k2, P.s3, P.toy,
      }, plan:pods())
      assert.same({ P.g2, P.g3, P.f1, P.f2, P.k1, P.s1, P.s2, P.stale }, plan:refused("pdb"))
      assert.same({ P.overlap }, plan:refused("api-error"))
      assert.equal(9, #plan.refusals)
    end)

    it("protects mirror and static pods, not a pod whose config source is the API", function()
      assert.same({ P.plain, P.source_api }, run{ "plain", "mirror", "static", "source-api" }:pods())
    end)

    it("protects terminating pods", function()
      assert.same({ P.plain }, run{ "terminating", "plain" }:pods())
    end)

    it("lets any pod with the evict annotation go, even \"false\", mirror or terminating", function()
      assert.same({ P.mirror_evict, P.terminating_evict, P.evict_false },
        run{ "mirror-evict", "terminating-evict", "evict-false" }:pods())
      assert.same({ P.mirror_evict, P.terminating_evict, P.evict_false },
        run({ "mirror-evict", "terminating-evict", "evict-false" },
            { podProtections = { extraEnabled = { "PodsWithoutPDB" } }, minPodAge = "72h" }):pods())
    end)

    it("protects bare pods; FailedBarePods off frees only the failed one", function()
      assert.same({ P.plain }, run{ "bare", "bare-failed", "plain" }:pods())
      assert.same({ P.plain, P.bare_failed }, run({ "bare", "bare-failed", "plain" },
        { evictFailedBarePods = true }):pods())
      assert.same({ P.plain, P.bare_failed }, run({ "bare", "bare-failed", "plain" },
        { podProtections = { defaultDisabled = { "FailedBarePods" } } }):pods())
    end)

    it("protects pods with local storage (emptyDir, hostPath)", function()
      assert.same({}, run{ "emptydir", "hostpath" }:pods())
      assert.same({ P.emptydir, P.hostpath }, run({ "emptydir", "hostpath" },
        { evictLocalStoragePods = true }):pods())
      assert.same({ P.emptydir, P.hostpath }, run({ "emptydir", "hostpath" },
        { podProtections = { defaultDisabled = { "PodsWithLocalStorage" } } }):pods())
    end)

    it("protects DaemonSet pods", function()
      assert.same({}, run{ "ds" }:pods())
      assert.same({ P.ds }, run({ "ds" }, { evictDaemonSetPods = true }):pods())
      assert.same({ P.ds }, run({ "ds" }, { podProtections = { defaultDisabled = { "DaemonSetPods" } } }):pods())
    end)

    it("lets pods with a PVC or a resource claim go", function()
      assert.same({ P.pvc_gp3, P.pvc_local, P.pvc_ghost, P.pvc_noclass, P.claims },
        run{ "pvc-gp3", "pvc-local", "pvc-ghost", "pvc-noclass", "claims" }:pods())
    end)
  end)

  describe("system critical pods and priorityThreshold", function()
    local APPS = { "critical", "node-critical", "high-prio", "mid-prio", "no-prio" }
    it("protects priority >= 2000000000 by default", function()
      assert.same({ P.high_prio, P.mid_prio, P.no_prio }, run(APPS):pods())
    end)

    it("protects priority >= the threshold value", function()
      assert.same({ P.mid_prio, P.no_prio }, run(APPS, { priorityThreshold = { value = 1000000 } }):pods())
      assert.same({ P.high_prio, P.mid_prio, P.no_prio },
        run(APPS, { priorityThreshold = { value = 1000001 } }):pods())
      -- a pod without spec.priority passes any threshold
      assert.same({ P.no_prio }, run(APPS, { priorityThreshold = { value = -1 } }):pods())
    end)

    it("resolves the threshold from a PriorityClass name", function()
      assert.same({ P.mid_prio, P.no_prio }, run(APPS, { priorityThreshold = { name = "high-priority" } }):pods())
      assert.same({ P.no_prio }, run(APPS, { priorityThreshold = { name = "standard" } }):pods())
      assert.same({ P.high_prio, P.mid_prio, P.no_prio },
        run(APPS, { priorityThreshold = { name = "system-cluster-critical" } }):pods())
    end)

    it("evicts nothing when the named PriorityClass does not exist", function()
      local plan, msg = h.try{ snapshot = SNAP, plugin = "PodLifeTime", args = { maxPodLifeTimeSeconds = 3600 },
                               evictor = { priorityThreshold = { name = "no-such-class" } } }
      if plan then
        assert.same({}, plan:pods())
        msg = plan.errors[1] and plan.errors[1].message
      end
      assert.is_truthy(msg and msg:find("no-such-class", 1, true), msg)
    end)

    it("disables every priority check once SystemCriticalPods is off", function()
      local all = { P.critical, P.node_critical, P.high_prio, P.mid_prio, P.no_prio }
      assert.same(all, run(APPS, { evictSystemCriticalPods = true }):pods())
      assert.same(all, run(APPS, { evictSystemCriticalPods = true, priorityThreshold = { value = 10 } }):pods())
      assert.same(all, run(APPS, { priorityThreshold = { name = "standard" },
        podProtections = { defaultDisabled = { "SystemCriticalPods" } } }):pods())
    end)

    -- upstream's setDefaultEvictor resolves priorityThreshold when the
    -- policy loads, whatever the protections: a missing PriorityClass or a
    -- value above system critical stops it even with SystemCriticalPods off
    it("still resolves priorityThreshold once SystemCriticalPods is off", function()
      local plan, msg = h.try{ snapshot = SNAP, plugin = "PodLifeTime", args = { maxPodLifeTimeSeconds = 3600 },
                               evictor = { evictSystemCriticalPods = true,
                                           priorityThreshold = { name = "no-such-class" } } }
      if plan then
        assert.same({}, plan:pods())
        msg = plan.errors[1] and plan.errors[1].message
      end
      assert.is_truthy(msg and msg:find("no-such-class", 1, true), msg)
      plan, msg = h.try{ snapshot = SNAP, plugin = "PodLifeTime", args = { maxPodLifeTimeSeconds = 3600 },
                         evictor = { evictSystemCriticalPods = true, priorityThreshold = { value = 2000000001 } } }
      assert.is_nil(plan)
      assert.is_truthy(msg:find("priority threshold can't be greater than 2000000000", 1, true), msg)
    end)
  end)

  describe("extra protections", function()
    local PVC = { "pvc-gp3", "pvc-local", "pvc-ghost", "pvc-noclass" }
    it("PodsWithPVC protects every pod with a claim", function()
      assert.same({}, run(PVC, { ignorePvcPods = true }):pods())
      assert.same({}, run(PVC, { podProtections = { extraEnabled = { "PodsWithPVC" } } }):pods())
    end)

    it("PodsWithPVC with protectedStorageClasses protects those classes and unknown ones", function()
      local function with(...)
        local scs = {}
        for _, n in ipairs{ ... } do scs[#scs + 1] = { name = n } end
        return { podProtections = { extraEnabled = { "PodsWithPVC" },
                                    config = { PodsWithPVC = { protectedStorageClasses = scs } } } }
      end
      -- a missing claim or a claim without storageClassName stays protected
      assert.same({ P.pvc_gp3 }, run(PVC, with("local-path")):pods())
      assert.same({ P.pvc_local }, run(PVC, with("gp3")):pods())
      assert.same({}, run(PVC, with("gp3", "local-path")):pods())
    end)

    it("reads protectedStorageClasses with the legacy ignorePvcPods too", function()
      assert.same({ P.pvc_gp3 }, run(PVC, { ignorePvcPods = true, podProtections = {
        config = { PodsWithPVC = { protectedStorageClasses = { { name = "local-path" } } } } } }):pods())
    end)

    -- upstream refuses an empty name only when extraEnabled lists
    -- PodsWithPVC; with the legacy boolean the list [""] names no class, so
    -- only claims it cannot read stay protected
    it("takes an empty protected class name with the legacy ignorePvcPods as a class nothing uses", function()
      assert.same({ P.pvc_gp3, P.pvc_local }, run(PVC, { ignorePvcPods = true, podProtections = {
        config = { PodsWithPVC = { protectedStorageClasses = { { name = "" } } } } } }):pods())
    end)

    it("does not turn PodsWithPVC on by configuring it", function()
      assert.same({ P.pvc_gp3, P.pvc_local, P.pvc_ghost, P.pvc_noclass }, run(PVC, { podProtections = {
        config = { PodsWithPVC = { protectedStorageClasses = { { name = "gp3" } } } } } }):pods())
    end)

    it("PodsWithoutPDB protects pods no PDB selects", function()
      for _, ev in ipairs{ { ignorePodsWithoutPDB = true },
                           { podProtections = { extraEnabled = { "PodsWithoutPDB" } } } } do
        local plan = run({ "plain", "guarded" }, ev)
        assert.same({ P.g1 }, plan:pods())
        assert.same({ P.g2, P.g3 }, plan:refused("pdb"))
      end
    end)

    it("PodsWithResourceClaims protects pods with spec.resourceClaims", function()
      assert.same({ P.plain }, run({ "plain", "claims" },
        { podProtections = { extraEnabled = { "PodsWithResourceClaims" } } }):pods())
    end)

    it("uses the lists instead of the legacy booleans once a list is given", function()
      -- evictLocalStoragePods false is not "set": the lists apply, and they
      -- keep PodsWithLocalStorage on while turning DaemonSetPods off
      assert.same({ P.ds }, run({ "emptydir", "ds" }, { evictLocalStoragePods = false,
        podProtections = { defaultDisabled = { "DaemonSetPods" } } }):pods())
      assert.same({ P.emptydir, P.ds }, run({ "emptydir", "ds" },
        { podProtections = { defaultDisabled = { "DaemonSetPods", "PodsWithLocalStorage" } } }):pods())
    end)
  end)

  describe("noEvictionPolicy", function()
    local APPS = { "plain", "prefer-no", "prefer-no-evict" }
    it("only orders by prefer-no-eviction when Preferred or unset", function()
      assert.same({ P.plain, P.prefer_no, P.prefer_no_evict }, run(APPS):pods())
      assert.same({ P.plain, P.prefer_no, P.prefer_no_evict }, run(APPS, { noEvictionPolicy = "Preferred" }):pods())
    end)

    it("protects prefer-no-eviction pods when Mandatory, unless they carry evict", function()
      assert.same({ P.plain, P.prefer_no_evict }, run(APPS, { noEvictionPolicy = "Mandatory" }):pods())
    end)
  end)

  describe("selectors", function()
    it("keeps pods the labelSelector does not match", function()
      assert.same({ P.plain }, run({ "plain", "source-api" }, { labelSelector = { matchLabels = { app = "plain" } } }):pods())
      assert.same({ P.source_api }, run({ "plain", "source-api" }, { labelSelector = {
        matchExpressions = { { key = "app", operator = "NotIn", values = { "plain" } } } } }):pods())
    end)

    it("keeps pods whose namespace the namespaceLabelSelector does not match", function()
      assert.same({ P.toy }, run({ "plain", "toy" }, { namespaceLabelSelector = { matchLabels = { env = "dev" } } }):pods())
      assert.same({ P.plain }, run({ "plain", "toy" }, { namespaceLabelSelector = {
        matchExpressions = { { key = "env", operator = "In", values = { "prod" } } } } }):pods())
      assert.same({ P.plain, P.toy }, run({ "plain", "toy" }, { namespaceLabelSelector = {
        matchExpressions = { { key = "team", operator = "Exists" } } } }):pods())
    end)

    it("applies the namespaceLabelSelector to pods with the evict annotation too", function()
      assert.same({ P.toy }, run({ "evict-false", "toy" },
        { namespaceLabelSelector = { matchLabels = { env = "dev" } } }):pods())
    end)
  end)

  describe("minReplicas", function()
    -- solo has 1 pod, trio 3 (one not scheduled yet), multi two owners;
    -- only the canary of each is asked for
    local APPS = { "solo", "trio", "multi" }
    local CANARY = { more = { { key = "track", operator = "In", values = { "canary" } } } }
    it("protects pods whose single owner has fewer pods", function()
      assert.same({ P.solo, P.trio1, P.multi }, run(APPS, nil, CANARY):pods())
      assert.same({ P.solo, P.trio1, P.multi }, run(APPS, { minReplicas = 1 }, CANARY):pods())
      assert.same({ P.trio1, P.multi }, run(APPS, { minReplicas = 2 }, CANARY):pods())
      assert.same({ P.trio1, P.multi }, run(APPS, { minReplicas = 3 }, CANARY):pods())
      assert.same({ P.multi }, run(APPS, { minReplicas = 4 }, CANARY):pods())
    end)

    -- upstream lists the candidates through Filter once and evicts them
    -- without asking again; its owner index still holds a pod whose
    -- eviction was asked, so trio keeps counting 3 pods
    it("counts the owner's pods evicted earlier in the cycle", function()
      assert.same({ P.trio1, P.trio2 }, run({ "trio" }, { minReplicas = 3 }):pods())
      assert.same({}, run({ "trio" }, { minReplicas = 4 }):pods())
    end)
  end)

  describe("minPodAge", function()
    local APPS = { "plain", "young-start", "no-start" }
    it("protects pods started less than minPodAge ago and pods not started", function()
      assert.same({ P.plain, P.young_start, P.no_start }, run(APPS):pods())
      assert.same({ P.plain }, run(APPS, { minPodAge = "10m" }):pods())
      assert.same({ P.plain }, run(APPS, { minPodAge = "5m1s" }):pods())
      -- started exactly 5 minutes ago is not younger than 5 minutes
      assert.same({ P.plain, P.young_start }, run(APPS, { minPodAge = "5m" }):pods())
      assert.same({ P.plain, P.young_start }, run(APPS, { minPodAge = "0.05h" }):pods())
      -- a fraction of a second more than its age: time.Since(start) < minPodAge
      assert.same({ P.plain }, run(APPS, { minPodAge = "5m0.5s" }):pods())
      assert.same({ P.plain }, run(APPS, { minPodAge = "300001ms" }):pods())
    end)
  end)

  describe("nodeFit", function()
    local APPS = { "plain", "nvme-only", "big", "cordoned", "anti" }
    it("keeps pods that fit on no other ready, schedulable node", function()
      assert.same({ P.plain, P.nvme_only, P.big, P.cordoned, P.anti }, run(APPS):pods())
      -- nvme-only: nodeSelector disktype=nvme; big: 3500m, worker-b-1 has
      -- about 1.6 cpu left; anti: anti-affinity with source-api on
      -- worker-b-1; worker-c-1 is cordoned
      assert.same({ P.plain, P.cordoned }, run(APPS, { nodeFit = true }):pods())
    end)

    it("only considers the nodes of its nodeSelector", function()
      assert.same({ P.plain, P.cordoned },
        run(APPS, { nodeFit = true, nodeSelector = "topology.kubernetes.io/zone=eu-west-1b" }):pods())
      assert.same({}, run(APPS, { nodeFit = true, nodeSelector = "topology.kubernetes.io/zone=eu-west-1c" }):pods())
      -- the nodeSelector alone does nothing
      assert.same({ P.plain, P.nvme_only, P.big, P.cordoned, P.anti },
        run(APPS, { nodeSelector = "topology.kubernetes.io/zone=eu-west-1c" }):pods())
    end)
  end)

  describe("PodDisruptionBudgets", function()
    it("takes a disruption from the budget for each eviction", function()
      -- guarded allows 1: the oldest goes, the next two are refused
      local plan = run{ "guarded" }
      assert.same({ P.g1 }, plan:pods())
      assert.same({ P.g2, P.g3 }, plan:refused("pdb"))
      for _, r in ipairs(plan.refusals) do
        assert.is_truthy(r.detail:find("guarded", 1, true), r.detail)
      end
    end)

    it("refuses every pod of a budget at its limit, but not a Pending one", function()
      local plan = run{ "frozen" }
      assert.same({ P.f3 }, plan:pods())
      assert.same({ P.f1, P.f2 }, plan:refused("pdb"))
    end)

    it("lets an unready pod go with AlwaysAllow", function()
      local plan = run{ "flaky" }
      assert.same({ P.k2 }, plan:pods())
      assert.same({ P.k1 }, plan:refused("pdb"))
    end)

    it("lets an unready pod go with IfHealthyBudget while the budget is healthy", function()
      local plan = run{ "steady" }
      assert.same({ P.s3 }, plan:pods())
      assert.same({ P.s1, P.s2 }, plan:refused("pdb"))
    end)

    it("refuses while the PDB controller has not observed the latest generation", function()
      local plan = run{ "stale" }
      assert.same({}, plan:pods())
      assert.same({ P.stale }, plan:refused("pdb"))
    end)

    it("refuses a pod selected by two PDBs", function()
      local plan = run{ "overlap" }
      assert.same({}, plan:pods())
      assert.same({ P.overlap }, plan:refused("api-error"))
    end)

    it("does not count refused evictions towards the limits", function()
      -- plain, guarded-g1, then four PDB refusals, and frozen-f3 is the third
      local plan = run({ "guarded", "frozen", "plain" }, nil, { top = { maxNoOfPodsToEvictTotal = 3 } })
      assert.same({ P.plain, P.g1, P.f3 }, plan:pods())
      assert.same({ P.g2, P.g3, P.f1, P.f2 }, plan:refused("pdb"))
      assert.same({ P.g2, P.g3, P.f1, P.f2 }, plan:refused())
    end)
  end)

  describe("bad args", function()
    -- DefaultEvictor args start on line 8 of this policy
    local _, fails = h.bad_args{ plugin = "DefaultEvictor", profile = "evictor", snapshot = SNAP,
                                 field = "", enabled = "PodLifeTime",
                                 after = { "  - name: PodLifeTime", "    args:",
                                           "      maxPodLifeTimeSeconds: 3600" } }

    it("rejects both priorityThreshold fields and a value above system critical", function()
      fails("      priorityThreshold: {value: 100, name: high-priority}", 8, "priorityThreshold",
            "priority threshold misconfigured, only one of priorityThreshold fields can be set")
      fails("      priorityThreshold:\n        value: 2000000001", 9, "priorityThreshold.value",
            "can't be greater than 2000000000")
    end)

    it("rejects an unknown noEvictionPolicy", function()
      fails("      noEvictionPolicy: Always", 8, "noEvictionPolicy", "Preferred")
    end)

    it("rejects unknown, misplaced and repeated protections", function()
      fails("      podProtections:\n        defaultDisabled:\n        - PodsWithPVC", 10,
            "podProtections.defaultDisabled[0]", 'invalid pod protection policy in DefaultDisabled: "PodsWithPVC". '
            .. "Valid options are: [PodsWithLocalStorage SystemCriticalPods FailedBarePods DaemonSetPods]")
      fails("      podProtections:\n        extraEnabled:\n        - PodsWithPVC\n        - DaemonSetPods", 11,
            "podProtections.extraEnabled[1]", 'invalid pod protection policy in ExtraEnabled: "DaemonSetPods". '
            .. "Valid options are: [PodsWithPVC PodsWithoutPDB PodsWithResourceClaims]")
      fails("      podProtections:\n        extraEnabled: [PodsWithoutPDB, PodsWithoutPDB]", 9,
            "podProtections.extraEnabled[1]", "PodProtections.ExtraEnabled contains duplicate entries")
      fails("      podProtections:\n        defaultDisabled: [DaemonSetPod]", 9,
            "podProtections.defaultDisabled[0]", "DaemonSetPod")
    end)

    it("rejects a protected storage class without a name", function()
      fails("      podProtections:\n        extraEnabled: [PodsWithPVC]\n        config:\n          PodsWithPVC:\n"
            .. "            protectedStorageClasses:\n            - name: \"\"", 13,
            "podProtections.config.PodsWithPVC.protectedStorageClasses[0]",
            "PodProtections.Config.PodsWithPVC.ProtectedStorageClasses[0] name cannot be empty")
    end)

    it("rejects the legacy booleans mixed with podProtections lists", function()
      fails("      evictLocalStoragePods: true\n      podProtections:\n        defaultDisabled: [DaemonSetPods]", 10,
            "podProtections", "cannot use Deprecated fields alongside PodProtections.ExtraEnabled or "
            .. "PodProtections.DefaultDisabled")
    end)

    it("rejects a bad minPodAge, nodeSelector, minReplicas or field", function()
      fails("      minPodAge: ten minutes", 8, "minPodAge", "not a duration")
      fails("      nodeFit: true\n      nodeSelector: \"zone in (a\"", 9, "nodeSelector", "")
      fails("      minReplicas: -1", 8, "minReplicas", "")
      fails("      evictPvcPods: true", 8, "evictPvcPods", "unknown")
    end)

    it("points at the line of a bad labelSelector expression", function()
      fails("      labelSelector:\n        matchExpressions:\n        - {key: app, operator: Has}", 10,
            "labelSelector.matchExpressions[0].operator", "Has")
    end)

    it("rejects a bad namespaceLabelSelector", function()
      fails("      namespaceLabelSelector:\n        matchLabels: {env: [prod]}", 9,
            "namespaceLabelSelector.matchLabels.env", "expected a string")
    end)
  end)

  describe("the demo policy on the demo cluster", function()
    it("evicts failed, misplaced and old pods and leaves protected ones", function()
      local plan = h.simulate{ snapshot = "spec/fixtures/demo-cluster.json",
                               policy = "spec/fixtures/demo-policy.yaml" }
      local by = {}
      for _, e in ipairs(plan.evictions) do
        by[e.plugin] = by[e.plugin] or {}
        table.insert(by[e.plugin], e.pod)
      end
      -- node by node: both nightly reports are on ip-10-0-2-23
      assert.same({ "batch/nightly-report-29145600-d4e5f", "batch/nightly-report-29147040-g6h7i",
                    "batch/import-customers-29146800-j8k9l" }, by.RemoveFailedPods)
      assert.same({ "shop/frontend-6b8f9d7c5-g5h6i", "shop/frontend-6b8f9d7c5-q1r2s" },
                  by.RemovePodsViolatingNodeTaints)
      assert.same({ "payments/ledger-db-0", "monitoring/grafana-5c8d7e6f9-r4t6y",
                    "batch/spark-driver-9c8b7a6d5-u1v2w", "shop/frontend-6b8f9d7c5-a1b2c",
                    "shop/frontend-6b8f9d7c5-d3e4f", "shop/cart-5d7f8c6b9-t3u4v" }, by.PodLifeTime)
      assert.equal(11, #plan.evictions)
      assert.same({ "payments/ledger-db-1", "payments/ledger-db-2", "shop/checkout-7f6e5d4c3-c9d0e",
                    "shop/checkout-7f6e5d4c3-f1g2h", "shop/checkout-7f6e5d4c3-i3j4k" }, plan:refused("pdb"))
      assert.equal(5, #plan.refusals)
    end)
  end)
end)
