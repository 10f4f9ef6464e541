-- `ebb explain NAMESPACE/POD --kubeconfig` against a real control plane
-- (spec/integration/k8s_harness.lua: kube-apiserver, the ReplicaSet and
-- disruption controllers, kube-scheduler): the cluster listed as `ebb
-- record` lists it and one cycle explained, nothing evicted for real.
-- Two workers of ReplicaSet "web", pinned to a node that is then tainted
-- NoSchedule, under a PodDisruptionBudget that allows one disruption; a
-- bare pod on the same node.
local K = require("spec.integration.k8s_harness")
local S = require("spec.shell")
local json = require("dkjson")

describe("ebb explain against kube-apiserver", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
  local ns, tainted, policy

  setup(function()
    ns = cp:namespace("explain")
    tainted = cp:node(ns .. "-a", { labels = { pool = "a-" .. ns } })
    cp:node(ns .. "-b", { labels = { pool = "b-" .. ns } })
    cp:replicaset(ns, "web", 2, { cpu = "100m", memory = "64Mi", node_selector = { pool = "a-" .. ns } })
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 2 end, 30,
      "kube-scheduler binding the web pods")
    cp:run_pods(ns, "app=web")
    cp:pod(ns, "debug", { node = tainted, running = true, labels = { app = "debug" } })
    cp:pdb(ns, "web", { app = "web" }, { maxUnavailable = 1 })
    cp:wait_pdb(ns, "web", function(s) return s.disruptionsAllowed == 1 end)
    cp:patch("/api/v1/nodes/" .. tainted, { spec = { taints = {
      { key = "dedicated", value = "maintenance", effect = "NoSchedule" } } } })
    policy = S.tmpfile(K.taints_policy(ns))
  end)

  teardown(function()
    os.remove(policy)
    cp:cleanup()
  end)

  local function explain(pod, ...)
    return S.run(S.cmdline(EBB, "explain", pod, "--kubeconfig", cp.kubeconfig, "--policy", policy, "-q", ...))
  end

  local function explain_json(pod)
    local code, out, err = explain(pod, "--output", "json")
    assert.equal(0, code, err)
    return assert(json.decode(out, 1, json.null))
  end

  local function web_pods()
    local names = {}
    for _, p in ipairs(cp:pods(ns, "app=web", "live")) do names[#names + 1] = p.metadata.name end
    table.sort(names)
    return names
  end

  it("explains the pods of the tainted node: one evicted, one refused by the budget, the bare pod protected", function()
    local pods = web_pods()
    assert.equal(2, #pods)
    local outcomes = {}
    for _, name in ipairs(pods) do
      local d = explain_json(ns .. "/" .. name)
      assert.equal("cluster", d.source)
      assert.equal(tainted, d.pod.node)
      assert.same({ kind = "ReplicaSet", name = "web" }, d.pod.workload)
      local s = d.profiles[1].strategies[1]
      assert.equal("RemovePodsViolatingNodeTaints", s.plugin)
      assert.is_true(s.candidate)
      assert.equal(1, #s.evictions)
      outcomes[#outcomes + 1] = s.evictions[1].why
      -- the budget as the disruption controller wrote it
      assert.equal(1, #d.podDisruptionBudgets)
      assert.equal("web", d.podDisruptionBudgets[1].name)
      assert.equal(1, d.podDisruptionBudgets[1].disruptionsAllowed)
      assert.equal(2, d.podDisruptionBudgets[1].currentHealthy)
      -- the only node of its pool is tainted: the replacement stays Pending
      assert.equal("ReplicaSet", d.replacement.recreatedBy.kind)
      assert.equal("pending", d.replacement.status)
      assert.matches("taint", d.replacement.message)
    end
    table.sort(outcomes)
    -- the cycle goes through the pods in name order: the first takes the budget's one disruption
    assert.same({ "ok", "pdb" }, outcomes)
    local d = explain_json(ns .. "/" .. pods[2])
    local ev = d.profiles[1].strategies[1].evictions[1]
    assert.equal("refused", ev.outcome)
    assert.matches("The disruption budget web needs 1 healthy pods and has 1 currently", ev.detail, 1, true)
    assert.same({ disruptionsAllowed = 0, currentHealthy = 1 }, d.podDisruptionBudgets[1].afterCycle)

    d = explain_json(ns .. "/debug")
    assert.is_false(d.evicted)
    assert.equal("protected", d.profiles[1].filters[1].verdict)
    assert.equal("pod does not have any ownerRefs", d.profiles[1].filters[1].reason)
    assert.equal("gone", d.replacement.status)

    -- explaining evicted nothing for real
    assert.same(pods, web_pods())
    assert.equal(1, #cp:pods(ns, "app=debug", "live"))
  end)

  it("prints the text explanation", function()
    local code, out, err = explain(ns .. "/debug")
    assert.equal(0, code, err)
    assert.matches("pod " .. ns .. "/debug on " .. tainted .. " (Pod debug)", out, 1, true)
    assert.matches("not evicted in this cycle (cluster " .. cp.kubeconfig, out, 1, true)
    assert.matches("filter%s+DefaultEvictor%s+protected: pod does not have any ownerRefs", out)
  end)

  it("names a pod the cluster does not hold, with the nearest one", function()
    local code, out, err = explain(ns .. "/debugg")
    assert.equal(2, code)
    assert.equal("", out)
    assert.matches("pod " .. ns .. "/debugg is not in the cluster", err, 1, true)
    assert.matches("did you mean " .. ns .. "/debug?", err, 1, true)
  end)

  it("a kubeconfig that does not exist is an error naming it", function()
    local code, _, err = S.run(S.cmdline(EBB, "explain", ns .. "/debug", "--kubeconfig", "no-such-kubeconfig",
                                         "--policy", policy))
    assert.is_true(code ~= 0)
    assert.matches("no-such-kubeconfig", err, 1, true)
  end)
end)
