-- `ebb run --once`'s exit status: 0 when the cycle ran, whatever the policy
-- refused (PodDisruptionBudgets, limits, filters); 3 when an eviction failed
-- for another reason (the API server answered 5xx or 403).
-- Each fault class against ebb serve's fault injection, and a 403 from a
-- real kube-apiserver whose RBAC grants no pods/eviction.
local R = require("spec.integration.run_harness")
local K = require("spec.integration.k8s_harness")

local DEMO = "spec/fixtures/demo-cluster.json"

-- PodLifeTime over `age` seconds (7 days), `lifetime` more of its args,
-- `top` the policy's limits
local function policy(lifetime, top, age)
  return ([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
%s
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: %d
      %s
  plugins:
    deschedule:
      enabled: [PodLifeTime]
]]):format(top or "", age or 604800, lifetime or "")
end

describe("ebb run --once exit status against ebb serve", function()
  local T = R.suite(before_each, after_each)

  -- { what, serve flags, policy, expected exit, a line the log must have }
  local CASES = {
    { "PDB refusals only", {}, policy(), 0, "5 refused" },
    { "the total limit refuses", {}, policy(nil, "maxNoOfPodsToEvictTotal: 1"), 0, "cycle 1: 1 evicted" },
    { "the per-node limit refuses", {}, policy(nil, "maxNoOfPodsToEvictPerNode: 1"), 0, "cycle 1: 3 evicted, 9 refused" },
    { "a namespace filter leaves everything", {}, policy('namespaces: {include: ["none"]}'), 0, "0 evicted" },
    { "5xx answers to evictions", { "--fail-fraction", "0.3", "--seed", "7" }, policy(), 3,
      "evictions failed %(api%-error%): exit 3" },
  }
  for _, c in ipairs(CASES) do
    it(c[1] .. ": exit " .. c[4], function()
      local sopts = { snapshot = DEMO }
      for _, f in ipairs(c[2]) do sopts[#sopts + 1] = f end
      T.srv = R.S.start(sopts)
      local run = T.start{ policy = c[3], "--once" }
      local code = run:wait(90)
      assert.equal(c[4], code, run:stderr())
      assert.matches(c[5], run:stderr())
    end)
  end
end)

describe("ebb run --once exit status against kube-apiserver", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local runs = {}
  after_each(function()
    for _, r in ipairs(runs) do r:stop() end
    runs = {}
    cp:cleanup{ wait = true }
  end)

  it("a 403 to the eviction (RBAC grants no pods/eviction): exit 3, the server's message logged", function()
    local ns = cp:namespace("exit403")
    local n1 = ns .. "-n1"
    cp:node(n1)
    cp:node(ns .. "-n2")
    cp:replicaset(ns, "web", 1)
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 1 end, 30, "web bound")
    cp:run_pods(ns)
    K.sleep(2.1)   -- older than the policy's 1 s: 2 s past a creationTimestamp cut to the second
    local sa = cp:service_account(ns, "reader")
    local role = cp:create("/apis/rbac.authorization.k8s.io/v1/clusterroles", { apiVersion = "rbac.authorization.k8s.io/v1",
      kind = "ClusterRole", metadata = { name = ns .. "-reader" },
      rules = { { apiGroups = { "" }, resources = { "nodes", "namespaces", "pods", "persistentvolumeclaims" },
                  verbs = { "list", "watch" } },
                { apiGroups = { "scheduling.k8s.io" }, resources = { "priorityclasses" }, verbs = { "list", "watch" } },
                { apiGroups = { "policy" }, resources = { "poddisruptionbudgets" }, verbs = { "list", "watch" } } } })
    cp:create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", { apiVersion = "rbac.authorization.k8s.io/v1",
      kind = "ClusterRoleBinding", metadata = { name = ns .. "-reader" },
      roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = role.metadata.name },
      subjects = { { kind = "ServiceAccount", name = sa.metadata and sa.metadata.name or "reader", namespace = ns } } })
    local kc = cp:write_kubeconfig(cp.dir .. "/exit403.kubeconfig", { token = cp:token(ns, "reader") })
    local run = R.start(cp, { kubeconfig = kc, now = false,
      policy = policy('namespaces: {include: ["' .. ns .. '"]}', nil, 1), "--once" })
    runs[#runs + 1] = run
    local code = run:wait(90)
    assert.equal(3, code, run:stderr())
    assert.matches("403", run:stderr())
    assert.matches("evictions failed %(api%-error%): exit 3", run:stderr())
  end)
end)
