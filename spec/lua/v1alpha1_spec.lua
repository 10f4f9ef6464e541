-- descheduler/v1alpha1 policies: converted as upstream v0.30 converted them.
--
-- The cases are upstream's own (v0.30.0 pkg/descheduler/policyconfig_test.go:
-- TestV1alpha1ToV1alpha2 and the v1alpha1 cases of TestDecodeVersionedPolicy),
-- each v1alpha1 input written as the YAML a user would write and each
-- expected result as the v1alpha2 profiles, plugins and args. Upstream
-- sorted the profiles by name before comparing; so does `same_profiles`.
-- Args that upstream left at their zero value are absent here (the
-- plugins' defaults are those zero values), and upstream's empty
-- priorityThreshold ({value: nil}) is no priorityThreshold.
describe("descheduler/v1alpha1 policies", function()
  local h = require("spec.helpers")
  local S = require("spec.shell")
  local json = require("dkjson")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"

  local function run(...) return S.run(S.cmdline(EBB, ...)) end

  -- convert(text) -> decoded v1alpha2 document, stderr | nil, stderr, code
  local function convert(text)
    local f = S.tmpfile(text)
    local code, out, err = run("convert", f, "--output", "json")
    os.remove(f)
    if code ~= 0 then return nil, err, code end
    return json.decode(out), err
  end

  local function by_name(profiles)
    local t = {}
    for _, p in ipairs(profiles) do t[#t + 1] = p end
    table.sort(t, function(a, b) return a.name < b.name end)
    return t
  end

  local function same_profiles(want, got)
    assert.same(by_name(want), by_name(got.profiles))
  end

  -- The profile upstream makes for one strategy.
  local BALANCE = { RemoveDuplicates = true, LowNodeUtilization = true, HighNodeUtilization = true,
    RemovePodsViolatingTopologySpreadConstraint = true }
  local function profile(name, args, evictor)
    local plugins = {
      filter = { enabled = { "DefaultEvictor" } },
      preEvictionFilter = { enabled = { "DefaultEvictor" } },
    }
    plugins[BALANCE[name] and "balance" or "deschedule"] = { enabled = { name } }
    return {
      name = "strategy-" .. name .. "-profile",
      pluginConfig = {
        { name = "DefaultEvictor", args = evictor or json.decode("{}") },
        { name = name, args = args or json.decode("{}") },
      },
      plugins = plugins,
    }
  end

  local T20 = { cpu = 20, memory = 20, pods = 20 }
  local T50 = { cpu = 50, memory = 50, pods = 50 }
  local HEAD = 'apiVersion: "descheduler/v1alpha1"\nkind: "DeschedulerPolicy"\n'

  local cases = {
    {
      "RemoveFailedPods enabled, LowNodeUtilization disabled strategies to profile",
      HEAD .. [[
strategies:
  "RemoveDuplicates":
    enabled: true
    params:
      namespaces:
        exclude:
        - "test2"
  "LowNodeUtilization":
    enabled: false
    params:
      nodeResourceUtilizationThresholds:
        thresholds: {"cpu": 20, "memory": 20, "pods": 20}
        targetThresholds: {"cpu": 50, "memory": 50, "pods": 50}
]],
      { profile("RemoveDuplicates", { namespaces = { exclude = { "test2" } } }) },
    },
    {
      "convert global policy fields to defaultevictor",
      HEAD .. [[
evictFailedBarePods: true
evictLocalStoragePods: true
evictSystemCriticalPods: true
evictDaemonSetPods: true
ignorePvcPods: true
strategies:
  "RemoveDuplicates":
    enabled: true
    params:
      namespaces:
        exclude:
        - "test2"
]],
      { profile("RemoveDuplicates", { namespaces = { exclude = { "test2" } } }, {
        evictLocalStoragePods = true, evictDaemonSetPods = true, evictSystemCriticalPods = true,
        ignorePvcPods = true, evictFailedBarePods = true }) },
    },
    {
      "convert all strategies",
      HEAD .. [[
strategies:
  "RemoveDuplicates":
    enabled: true
    params: {}
  "LowNodeUtilization":
    enabled: true
    params:
      nodeResourceUtilizationThresholds:
        thresholds: {"cpu": 20, "memory": 20, "pods": 20}
        targetThresholds: {"cpu": 50, "memory": 50, "pods": 50}
  "HighNodeUtilization":
    enabled: true
    params:
      nodeResourceUtilizationThresholds:
        thresholds: {"cpu": 20, "memory": 20, "pods": 20}
  "RemoveFailedPods":
    enabled: true
    params: {}
  "RemovePodsHavingTooManyRestarts":
    enabled: true
    params:
      podsHavingTooManyRestarts:
        podRestartThreshold: 100
  "RemovePodsViolatingInterPodAntiAffinity":
    enabled: true
    params: {}
  "RemovePodsViolatingNodeAffinity":
    enabled: true
    params:
      nodeAffinityType:
      - "requiredDuringSchedulingIgnoredDuringExecution"
  "RemovePodsViolatingNodeTaints":
    enabled: true
    params: {}
  "RemovePodsViolatingTopologySpreadConstraint":
    enabled: true
    params: {}
]],
      {
        profile("HighNodeUtilization", { thresholds = T20 }),
        profile("LowNodeUtilization", { thresholds = T20, targetThresholds = T50 }),
        profile("RemoveDuplicates"),
        profile("RemoveFailedPods"),
        profile("RemovePodsHavingTooManyRestarts", { podRestartThreshold = 100 }),
        profile("RemovePodsViolatingInterPodAntiAffinity"),
        profile("RemovePodsViolatingNodeAffinity",
          { nodeAffinityType = { "requiredDuringSchedulingIgnoredDuringExecution" } }),
        profile("RemovePodsViolatingNodeTaints"),
        profile("RemovePodsViolatingTopologySpreadConstraint",
          { constraints = { "DoNotSchedule" }, topologyBalanceNodeFit = true }),
      },
    },
    {
      "pass in all params to check args",
      HEAD .. [[
strategies:
  "RemoveDuplicates":
    enabled: true
    params:
      removeDuplicates:
        excludeOwnerKinds: ["ReplicaSet"]
  "LowNodeUtilization":
    enabled: true
    params:
      nodeResourceUtilizationThresholds:
        thresholds: {"cpu": 20, "memory": 20, "pods": 20}
        targetThresholds: {"cpu": 50, "memory": 50, "pods": 50}
        useDeviationThresholds: true
        numberOfNodes: 3
  "HighNodeUtilization":
    enabled: true
    params:
      nodeResourceUtilizationThresholds:
        thresholds: {"cpu": 20, "memory": 20, "pods": 20}
  "RemoveFailedPods":
    enabled: true
    params:
      failedPods:
        minPodLifetimeSeconds: 3600
        excludeOwnerKinds: ["Job"]
        reasons: ["NodeAffinity"]
        includingInitContainers: true
  "RemovePodsHavingTooManyRestarts":
    enabled: true
    params:
      podsHavingTooManyRestarts:
        podRestartThreshold: 100
        includingInitContainers: true
  "RemovePodsViolatingInterPodAntiAffinity":
    enabled: true
    params: {}
  "RemovePodsViolatingNodeAffinity":
    enabled: true
    params:
      nodeAffinityType: ["requiredDuringSchedulingIgnoredDuringExecution"]
  "RemovePodsViolatingNodeTaints":
    enabled: true
    params:
      excludedTaints: ["dedicated=special-user", "reserved"]
  "RemovePodsViolatingTopologySpreadConstraint":
    enabled: true
    params:
      includeSoftConstraints: true
]],
      {
        profile("HighNodeUtilization", { thresholds = T20 }),
        profile("LowNodeUtilization", { thresholds = T20, targetThresholds = T50,
          useDeviationThresholds = true, numberOfNodes = 3 }),
        profile("RemoveDuplicates", { excludeOwnerKinds = { "ReplicaSet" } }),
        profile("RemoveFailedPods", { minPodLifetimeSeconds = 3600, excludeOwnerKinds = { "Job" },
          reasons = { "NodeAffinity" }, includingInitContainers = true }),
        profile("RemovePodsHavingTooManyRestarts",
          { podRestartThreshold = 100, includingInitContainers = true }),
        profile("RemovePodsViolatingInterPodAntiAffinity"),
        profile("RemovePodsViolatingNodeAffinity",
          { nodeAffinityType = { "requiredDuringSchedulingIgnoredDuringExecution" } }),
        profile("RemovePodsViolatingNodeTaints",
          { excludedTaints = { "dedicated=special-user", "reserved" } }),
        profile("RemovePodsViolatingTopologySpreadConstraint",
          { constraints = { "DoNotSchedule", "ScheduleAnyway" }, topologyBalanceNodeFit = true }),
      },
    },
    {
      "v1alpha1 to internal (TestDecodeVersionedPolicy)",
      HEAD .. [[
strategies:
  "PodLifeTime":
    enabled: true
    params:
      podLifeTime:
        maxPodLifeTimeSeconds: 5
      namespaces:
        include:
          - "testleaderelection-a"
]],
      { profile("PodLifeTime", { namespaces = { include = { "testleaderelection-a" } },
        maxPodLifeTimeSeconds = 5 }) },
    },
    {
      -- upstream's loader then resolves the class name to its value
      -- (DefaultEvictor's defaulting, with the API server), as ebb does
      "v1alpha1 to internal with priorityThreshold (TestDecodeVersionedPolicy)",
      HEAD .. [[
strategies:
  "PodLifeTime":
    enabled: true
    params:
      podLifeTime:
        maxPodLifeTimeSeconds: 5
      namespaces:
        include:
          - "testleaderelection-a"
      thresholdPriority: null
      thresholdPriorityClassName: prioritym
]],
      { profile("PodLifeTime", { namespaces = { include = { "testleaderelection-a" } },
        maxPodLifeTimeSeconds = 5 }, { priorityThreshold = { name = "prioritym" } }) },
    },
    -- Beyond upstream's tests, from its conversion code: nodeFit (never for
    -- PodLifeTime), podStatusPhases before states, thresholdPriority, the
    -- top-level fields a v1alpha2 policy keeps.
    {
      "nodeFit, thresholdPriority, podStatusPhases and the policy-wide fields",
      HEAD .. [[
nodeSelector: "node-role.kubernetes.io/worker="
maxNoOfPodsToEvictPerNode: 5
maxNoOfPodsToEvictPerNamespace: 2
strategies:
  "PodLifeTime":
    enabled: true
    params:
      nodeFit: true
      podLifeTime:
        maxPodLifeTimeSeconds: 86400
        podStatusPhases: ["Pending"]
        states: ["ContainerCreating"]
  "RemovePodsViolatingNodeTaints":
    enabled: true
    weight: 3
    params:
      nodeFit: true
      thresholdPriority: 10000
      includePreferNoSchedule: true
      labelSelector:
        matchLabels: {app: web}
]],
      {
        profile("PodLifeTime", { maxPodLifeTimeSeconds = 86400,
          states = { "Pending", "ContainerCreating" } }),
        profile("RemovePodsViolatingNodeTaints", { includePreferNoSchedule = true,
          labelSelector = { matchLabels = { app = "web" } } },
          { nodeFit = true, priorityThreshold = { value = 10000 } }),
      },
      top = { nodeSelector = "node-role.kubernetes.io/worker=", maxNoOfPodsToEvictPerNode = 5,
              maxNoOfPodsToEvictPerNamespace = 2 },
    },
  }

  for _, c in ipairs(cases) do
    local what, text, want = c[1], c[2], c[3]

    it("converts as upstream: " .. what, function()
      local got, err = convert(text)
      assert.is_not_nil(got, err)
      assert.equal("descheduler/v1alpha2", got.apiVersion)
      assert.equal("DeschedulerPolicy", got.kind)
      same_profiles(want, got)
      for k, v in pairs(c.top or {}) do assert.same(v, got[k]) end
    end)

    it("loads with a warning naming the file, and its YAML loads too: " .. what, function()
      local f = S.tmpfile(text)
      local code, out, err = run("check", "--policy", f)
      assert.equal(0, code, err)
      assert.matches(": ok", out)
      assert.matches(f:gsub("%p", "%%%0") .. ":1: apiVersion: descheduler/v1alpha1 is deprecated",
        err)
      local yc, yaml = run("convert", f)
      os.remove(f)
      assert.equal(0, yc)
      local g = S.tmpfile(yaml)
      code, out, err = run("check", "--policy", g)
      os.remove(g)
      assert.equal(0, code, err)
      assert.matches(": ok", out)
      assert.not_matches("v1alpha1", err)
    end)
  end

  it("plans the same evictions from the v1alpha1 file and from its conversion", function()
    local text = HEAD .. [[
evictLocalStoragePods: true
strategies:
  "PodLifeTime":
    enabled: true
    params:
      podLifeTime:
        maxPodLifeTimeSeconds: 60
  "RemoveDuplicates":
    enabled: true
]]
    local f = S.tmpfile(text)
    local _, yaml = run("convert", f)
    os.remove(f)
    local a = h.simulate{ snapshot = "spec/fixtures/kubectl-list.json", policy_text = text }
    local b = h.simulate{ snapshot = "spec/fixtures/kubectl-list.json", policy_text = yaml }
    assert.is_true(#a:pods() > 0)
    assert.same(a:pods(), b:pods())
  end)

  -- Errors: upstream's two (unknown strategy, both priority fields) and
  -- the loader's own, each naming file, line and field.
  local bad = {
    { "an unknown strategy name", "strategies:\n  InvalidName:\n    enabled: true\n    params: {}\n",
      4, "strategies%.InvalidName", 'unknown strategy name "InvalidName"' },
    { "a disabled unknown strategy too (upstream looked names up first)",
      "strategies:\n  Foo:\n    enabled: false\n", 4, "strategies%.Foo", "unknown strategy name" },
    { "both thresholdPriority and thresholdPriorityClassName", [[
strategies:
  "LowNodeUtilization":
    enabled: true
    params:
      thresholdPriority: 100
      thresholdPriorityClassName: "name"
      nodeResourceUtilizationThresholds:
        thresholds: {"cpu": 20}
        targetThresholds: {"cpu": 50}
]], 8, "strategies%.LowNodeUtilization%.params%.thresholdPriorityClassName",
      "priority threshold misconfigured for plugin LowNodeUtilization" },
    { "enabled that is not a boolean", "strategies:\n  PodLifeTime:\n    enabled: \"yes\"\n",
      5, "strategies%.PodLifeTime%.enabled", "expected a boolean, got a string" },
    { "params that is not a map", "strategies:\n  PodLifeTime:\n    enabled: true\n    params: []\n",
      6, "strategies%.PodLifeTime%.params", "expected a map" },
    { "a policy-wide switch that is not a boolean", "evictLocalStoragePods: 1\nstrategies: {}\n",
      3, "evictLocalStoragePods", "expected a boolean" },
    { "maxPodLifeTimeSeconds below zero", [[
strategies:
  PodLifeTime:
    enabled: true
    params:
      podLifeTime:
        maxPodLifeTimeSeconds: -1
]], 8, "strategies%.PodLifeTime%.params%.podLifeTime%.maxPodLifeTimeSeconds", "" },
    { "a list of strings holding a number", [[
strategies:
  RemovePodsViolatingNodeTaints:
    enabled: true
    params:
      excludedTaints: [reserved, 5]
]], 7, "strategies%.RemovePodsViolatingNodeTaints%.params%.excludedTaints%[1%]", "string" },
    { "the wrong kind", "strategies: {}\n", 2, "kind", "unsupported kind" },
    -- found by the plugin's own check, on the converted args, at the
    -- user's line
    { "a threshold out of range (the plugin's check, at the v1alpha1 line)", [[
strategies:
  LowNodeUtilization:
    enabled: true
    params:
      nodeResourceUtilizationThresholds:
        thresholds: {"cpu": 120}
        targetThresholds: {"cpu": 50}
]], 8, "thresholds%.cpu", "not in %[0, 100%] range" },
  }
  for _, b in ipairs(bad) do
    local what, body, line, field, msg = b[1], b[2], b[3], b[4], b[5]
    it("refuses " .. what .. ", naming file, line and field", function()
      local head = HEAD
      if what == "the wrong kind" then
        head = 'apiVersion: "descheduler/v1alpha1"\nkind: "Policy"\n'
      end
      local f = S.tmpfile(head .. body)
      for _, cmd in ipairs({ "check", "convert" }) do
        local code, _, err
        if cmd == "check" then code, _, err = run("check", "--policy", f)
        else code, _, err = run("convert", f) end
        assert.equal(2, code, err)
        assert.matches(f:gsub("%p", "%%%0") .. ":" .. line .. ": [^\n]*" .. field, err)
        assert.matches(msg, err)
      end
      os.remove(f)
    end)
  end

  it("warns of unknown fields and of params upstream's conversion dropped", function()
    local f = S.tmpfile(HEAD .. [[
strategies:
  RemovePodsViolatingNodeTaints:
    enabled: true
    params:
      includedTaints: [reserved]
      nodeFitt: true
]])
    local code, _, err = run("check", "--policy", f)
    os.remove(f)
    assert.equal(0, code, err)
    assert.matches(":7: strategies%.RemovePodsViolatingNodeTaints%.params%.includedTaints: "
      .. "RemovePodsViolatingNodeTaints does not take includedTaints", err)
    assert.matches(":8: strategies%.RemovePodsViolatingNodeTaints%.params%.nodeFitt: unknown field",
      err)
  end)

  it("ebb convert refuses a v1alpha2 policy and a missing file", function()
    local f = S.tmpfile(h.policy{ plugins = { { name = "PodLifeTime",
      args = { maxPodLifeTimeSeconds = 60 } } } })
    local code, _, err = run("convert", f)
    os.remove(f)
    assert.equal(2, code)
    assert.matches("only v1alpha1 policies are converted", err)
    code = run("convert")
    assert.equal(2, code)
  end)
end)
