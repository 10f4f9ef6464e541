-- `ebb explain NAMESPACE/POD` (engine/cmd/explain.c) on recorded clusters:
-- spec/fixtures/demo-cluster.json (6 nodes, 45 pods: Deployments with
-- PodDisruptionBudgets, a StatefulSet, DaemonSets, critical and bare pods)
-- under its 7-day PodLifeTime policy, and spec/fixtures/loop-lnu.json (a
-- LowNodeUtilization loop) under LoopGuard. Each case checks the JSON
-- against what `ebb simulate` decides for the same pod, and the text.
describe("ebb explain", function()
  local S = require("spec.shell")
  local json = require("dkjson")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
  local DEMO = "spec/fixtures/demo-cluster.json"
  local NOW = "2026-11-22T12:00:00Z"

  local LIFETIME = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
%s
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 604800
  plugins:
    deschedule:
      enabled: [PodLifeTime]
]]

  local LOOPGUARD = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 20, memory: 20}
      targetThresholds: {cpu: 50, memory: 50}
  - name: LoopGuard
  plugins:
    balance:
      enabled: [LowNodeUtilization]
    filter:
      enabled: [LoopGuard]
    preEvictionFilter:
      enabled: [LoopGuard]
]]

  local files = {}
  local function policy(text)
    local p = S.tmpfile(text)
    files[#files + 1] = p
    return p
  end
  teardown(function() for _, f in ipairs(files) do os.remove(f) end end)

  local function explain(pod, pol, extra)
    local args = { "explain", pod, "--snapshot", DEMO, "--policy", pol, "--now", NOW, "-q" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    return S.run(S.cmdline(EBB, table.unpack(args)))
  end

  local function explain_json(pod, pol, snapshot)
    local code, out, err = explain(pod, pol, { "--output", "json" })
    if snapshot then
      code, out, err = S.run(S.cmdline(EBB, "explain", pod, "--snapshot", snapshot, "--policy", pol,
                                       "--output", "json", "-q"))
    end
    assert.are.equal(0, code, err)
    return assert(json.decode(out, 1, json.null)), out
  end

  local function filter(doc, profile, plugin, ext)
    for _, p in ipairs(doc.profiles) do
      if p.name == profile then
        for _, f in ipairs(p.filters) do
          if f.plugin == plugin and f.extensionPoint == ext then return f end
        end
      end
    end
  end

  local function strategy(doc, profile, plugin)
    for _, p in ipairs(doc.profiles) do
      if p.name == profile then
        for _, s in ipairs(p.strategies) do
          if s.plugin == plugin then return s end
        end
      end
    end
  end

  local lifetime
  setup(function() lifetime = policy(LIFETIME:format("")) end)

  it("an evicted pod: the strategy's eviction, the limits counted, the memory's entry", function()
    local d = explain_json("shop/frontend-6b8f9d7c5-a1b2c", lifetime)
    assert.is_true(d.evicted)
    local s = strategy(d, "default", "PodLifeTime")
    assert.is_true(s.candidate)
    assert.are.equal(1, #s.evictions)
    assert.are.same({ outcome = "evicted", why = "ok", detail = "", refusedBy = json.null },
                    s.evictions[1])
    assert.are.equal("evictable", filter(d, "default", "DefaultEvictor", "filter").verdict)
    -- 7 evictions in the cycle, 3 from the pod's node, 4 in shop; no limits set
    assert.are.same({ max = json.null, used = 7 }, d.limits.total)
    assert.are.same({ max = json.null, used = 3 }, d.limits.perNode)
    assert.are.same({ max = json.null, used = 4 }, d.limits.perNamespace)
    -- the Deployment (through its ReplicaSet) brings it back elsewhere
    assert.are.same({ kind = "Deployment", name = "frontend" }, d.pod.workload)
    assert.are.same({ kind = "ReplicaSet", name = "frontend-6b8f9d7c5" }, d.replacement.recreatedBy)
    assert.are.equal("placed", d.replacement.status)
    assert.is_string(d.replacement.node)
    assert.are_not.equal(d.pod.node, d.replacement.node)
    -- the memory holds the cycle's three frontend evictions, this one among them
    assert.are.equal(3, d.memory.total)
    local mine
    for _, e in ipairs(d.memory.entries) do
      if e.pod == "frontend-6b8f9d7c5-a1b2c" then mine = e end
    end
    assert.are.equal("PodLifeTime", mine.plugin)
    assert.are.equal(NOW, mine.at)
    assert.are.equal(d.pod.node, mine.node)
  end)

  it("a DaemonSet pod of system-critical priority with hostPath volumes: DefaultEvictor's reasons in upstream's words", function()
    local d = explain_json("kube-system/kube-proxy-4456a", lifetime)
    assert.is_false(d.evicted)
    local f = filter(d, "default", "DefaultEvictor", "filter")
    assert.are.equal("protected", f.verdict)
    assert.are.equal("pod has system critical priority, pod has local storage and descheduler is "
                     .. "not configured with evictLocalStoragePods, pod is related to daemonset and "
                     .. "descheduler is not configured with evictDaemonSetPods", f.reason)
    -- PodLifeTime listed it and the filter said no: no eviction asked
    local s = strategy(d, "default", "PodLifeTime")
    assert.is_true(s.candidate)
    assert.are.equal(0, #s.evictions)
    assert.are.equal("DaemonSet", d.replacement.recreatedBy.kind)
  end)

  it("a pod with an emptyDir and a bare pod: each protection alone, and no replacement for the bare pod", function()
    local d = explain_json("monitoring/prometheus-7b9c6d5e4-q8w2e", lifetime)
    assert.are.equal("pod has local storage and descheduler is not configured with evictLocalStoragePods",
                     filter(d, "default", "DefaultEvictor", "filter").reason)
    d = explain_json("default/netshoot-debug", lifetime)
    assert.are.equal("pod does not have any ownerRefs", filter(d, "default", "DefaultEvictor", "filter").reason)
    assert.are.equal(json.null, d.replacement.recreatedBy)
    assert.are.equal("gone", d.replacement.status)
    assert.are.same({ kind = "Pod", name = "netshoot-debug" }, d.pod.workload)
    local _, text = explain("default/netshoot-debug", lifetime)
    assert.matches("replacement: none: no controller recreates it", text, 1, true)
  end)

  it("a pod refused by its PodDisruptionBudget: the budget's name and numbers", function()
    local d = explain_json("shop/checkout-7f6e5d4c3-c9d0e", lifetime)
    assert.is_false(d.evicted)
    local ev = strategy(d, "default", "PodLifeTime").evictions
    assert.are.equal(1, #ev)
    assert.are.equal("refused", ev[1].outcome)
    assert.are.equal("pdb", ev[1].why)
    assert.matches("The disruption budget checkout needs 3 healthy pods and has 3 currently",
                   ev[1].detail, 1, true)
    assert.are.equal(1, #d.podDisruptionBudgets)
    local b = d.podDisruptionBudgets[1]
    assert.are.equal("checkout", b.name)
    assert.are.equal("3", b.minAvailable)
    assert.are.equal(3, b.currentHealthy)
    assert.are.equal(0, b.disruptionsAllowed)
  end)

  it("a pod whose budget the cycle spends: what it allowed and what is left", function()
    -- ledger-db-0 goes, then ledger-db-1 and -2 are refused (needs 2, has 2)
    local d = explain_json("payments/ledger-db-0", lifetime)
    assert.is_true(d.evicted)
    local b = d.podDisruptionBudgets[1]
    assert.are.equal("ledger-db", b.name)
    assert.are.equal(1, b.disruptionsAllowed)
    assert.are.same({ disruptionsAllowed = 0, currentHealthy = 2 }, b.afterCycle)
    assert.are.equal("StatefulSet", d.replacement.recreatedBy.kind)
  end)

  it("a pod no strategy selects: not a candidate, and the text says so", function()
    local d = explain_json("shop/frontend-6b8f9d7c5-j7k8l", lifetime)
    local s = strategy(d, "default", "PodLifeTime")
    assert.is_false(s.candidate)
    assert.are.equal(0, s.filterChecks)
    assert.are.equal(0, #s.evictions)
    local code, text = explain("shop/frontend-6b8f9d7c5-j7k8l", lifetime)
    assert.are.equal(0, code)
    assert.matches("PodLifeTime%s+not a candidate %(never asked about the pod%)", text)
    assert.matches("not evicted in this cycle", text, 1, true)
  end)

  it("a pod refused by the per-node limit: which limit, how full", function()
    local d = explain_json("shop/frontend-6b8f9d7c5-a1b2c",
                           policy(LIFETIME:format("maxNoOfPodsToEvictPerNode: 1")))
    local ev = strategy(d, "default", "PodLifeTime").evictions
    assert.are.equal("node-limit", ev[1].why)
    assert.are.equal("maxNoOfPodsToEvictPerNode 1 reached on node " .. d.pod.node, ev[1].detail)
    assert.are.same({ max = 1, used = 1 }, d.limits.perNode)
  end)

  it("a LoopGuard refusal: the filter that refused and its reason; the predicted bounce", function()
    local d = explain_json("batch/worker-7b9d5c8f6-a2c4e", policy(LOOPGUARD), "spec/fixtures/loop-lnu.json")
    assert.is_false(d.evicted)
    -- listing, LoopGuard lets every pod through; it vetoes the eviction
    assert.are.equal("evictable", filter(d, "default", "LoopGuard", "filter").verdict)
    local ev = strategy(d, "default", "LowNodeUtilization").evictions
    assert.are.equal(1, #ev)
    assert.are.equal("futile", ev[1].why)
    assert.are.equal("LoopGuard", ev[1].refusedBy)
    assert.matches("^LoopGuard: its replacement would land back on pool%-batch%-1", ev[1].detail)
    assert.are.equal("pool-batch-1", d.replacement.node)
  end)

  it("prints the same plan as ebb simulate: observing the pod decides nothing", function()
    local _, plain = S.run(S.cmdline(EBB, "simulate", "--snapshot", DEMO, "--policy", lifetime,
                                     "--now", NOW, "--output", "json", "-q"))
    local plan = assert(json.decode(plain))
    local evicted = {}
    for _, e in ipairs(plan.evictions) do evicted[e.pod] = true end
    for _, pod in ipairs({ "shop/frontend-6b8f9d7c5-a1b2c", "shop/checkout-7f6e5d4c3-c9d0e",
                           "payments/ledger-db-0", "kube-system/kube-proxy-4456a" }) do
      assert.are.equal(evicted[pod] == true, explain_json(pod, lifetime).evicted, pod)
    end
    assert.are.equal(7, explain_json("shop/cart-5d7f8c6b9-t3u4v", lifetime).limits.total.used)
  end)

  it("the JSON's shape: documented keys, version and kind", function()
    local d = explain_json("shop/frontend-6b8f9d7c5-a1b2c", lifetime)
    assert.are.equal("ebb.dev/v1", d.apiVersion)
    assert.are.equal("Explanation", d.kind)
    assert.are.equal("snapshot", d.source)
    assert.are.equal(DEMO, d.input)
    for _, k in ipairs({ "pod", "profiles", "evicted", "limits", "podDisruptionBudgets",
                         "replacement", "memory" }) do
      assert.is_not_nil(d[k], k)
    end
    for _, k in ipairs({ "namespace", "name", "node", "workload" }) do assert.is_not_nil(d.pod[k], k) end
    for _, k in ipairs({ "perNode", "perNamespace", "total" }) do assert.is_not_nil(d.limits[k], k) end
    for _, k in ipairs({ "recreatedBy", "status", "node", "message" }) do
      assert.is_not_nil(d.replacement[k], k)
    end
    for _, k in ipairs({ "windowSeconds", "total", "entries" }) do assert.is_not_nil(d.memory[k], k) end
    local f = d.profiles[1].filters[1]
    for _, k in ipairs({ "plugin", "extensionPoint", "verdict", "reason" }) do assert.is_not_nil(f[k], k) end
  end)

  it("an unknown pod is an error naming it, the snapshot and the nearest pod", function()
    local code, out, err = explain("shop/frontend-6b8f9d7c5-a1b2d", lifetime)
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.matches(DEMO .. ": pod shop/frontend-6b8f9d7c5-a1b2d is not in the snapshot (45 pods); "
                   .. "did you mean shop/frontend-6b8f9d7c5-a1b2c?", err, 1, true)
  end)

  it("a Lua filter's verdict (a script gives no reason), and no eviction asked past it", function()
    -- a site filter keeping the payments namespace, in a policy directory
    local dir = S.tmpdir()
    S.write(dir .. "/keep_payments.lua", [[
return {
  name = "KeepPayments",
  filter = function(ctx, pod) return pod.namespace ~= "payments" end,
}
]])
    local pol = policy([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: KeepPayments
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 604800
  plugins:
    filter:
      enabled: [KeepPayments]
    deschedule:
      enabled: [PodLifeTime]
]])
    local code, out, err = S.run(S.cmdline(EBB, "explain", "payments/ledger-db-0", "--snapshot", DEMO,
                                           "--policy", pol, "--policy-dir", dir, "--now", NOW,
                                           "--output", "json", "-q"))
    S.rmdir(dir)
    assert.are.equal(0, code, err)
    local d = assert(json.decode(out, 1, json.null))
    assert.is_false(d.evicted)
    assert.are.equal("evictable", filter(d, "default", "DefaultEvictor", "filter").verdict)
    local f = filter(d, "default", "KeepPayments", "filter")
    assert.are.equal("protected", f.verdict)
    assert.are.equal("", f.reason)
    local s = strategy(d, "default", "PodLifeTime")
    assert.is_true(s.candidate)
    assert.are.equal(0, #s.evictions)   -- listing, the filters said no: nothing asked
  end)

  it("a Pending pod: no node limit applies, nothing replaces it", function()
    local code, out, err = S.run(S.cmdline(EBB, "explain", "prod/web-7d4b9c-pend1", "--snapshot",
                                           "spec/fixtures/kubectl-list.json", "--policy", lifetime,
                                           "--now", NOW, "--output", "json", "-q"))
    assert.are.equal(0, code, err)
    local d = assert(json.decode(out, 1, json.null))
    assert.are.equal(json.null, d.pod.node)
    assert.are.equal("unscheduled", d.replacement.status)
    assert.are.equal("ReplicaSet", d.replacement.recreatedBy.kind)
    assert.is_false(strategy(d, "default", "PodLifeTime").candidate)
    local _, text = S.run(S.cmdline(EBB, "explain", "prod/web-7d4b9c-pend1", "--snapshot",
                                    "spec/fixtures/kubectl-list.json", "--policy", lifetime, "--now", NOW, "-q"))
    assert.matches("pod prod/web-7d4b9c-pend1 on no node", text, 1, true)
    assert.matches("per node      none applies: the pod is on no node", text, 1, true)
  end)

  it("docs/explain.md's examples are what it prints", function()
    local doc = assert(S.read("docs/explain.md"))
    local n = 0
    for pod, shown in doc:gmatch("%$ ebb explain (%S+) %-%-snapshot spec/fixtures/demo%-cluster%.json \\\n"
                                 .. "    %-%-policy spec/fixtures/demo%-policy%.yaml %-%-now 2026%-11%-22T12:00:00Z\n(.-)```") do
      n = n + 1
      local code, out = S.run(S.cmdline(EBB, "explain", pod, "--snapshot", DEMO, "--policy",
                                        "spec/fixtures/demo-policy.yaml", "--now", NOW, "-q"))
      assert.are.equal(0, code)
      shown = shown:gsub("%.%.%.\n$", "")
      assert.are.equal(shown, out:sub(1, #shown), pod)
    end
    assert.are.equal(2, n)
  end)

  it("bad flags and arguments are errors naming them", function()
    local cases = {
      { { "explain", "frontend", "--snapshot", DEMO, "--policy", lifetime }, "\"frontend\" is not NAMESPACE/POD" },
      { { "explain", "--snapshot", DEMO, "--policy", lifetime }, "explain needs the pod" },
      { { "explain", "shop/x", "--snapshot", DEMO }, "explain needs --policy FILE" },
      { { "explain", "shop/x", "--policy", lifetime }, "one of --snapshot FILE or --kubeconfig FILE" },
      { { "explain", "shop/x", "--policy", lifetime, "--snapshot", DEMO, "--kubeconfig", "kc" }, "not both" },
      { { "explain", "shop/x", "--policy", lifetime, "--snapshot", DEMO, "--output", "yaml" },
        "--output: \"yaml\" is not text or json" },
      { { "explain", "shop/x", "shop/y", "--policy", lifetime, "--snapshot", DEMO }, "unexpected argument \"shop/y\"" },
      { { "explain", "shop/x", "--policy", lifetime, "--snapshot", DEMO, "--now", "noon" }, "--now: \"noon\"" },
      { { "explain", "shop/x", "--policy", lifetime, "--snapshot", DEMO, "--bogus" }, "--bogus" },
    }
    for _, c in ipairs(cases) do
      local code, _, err = S.run(S.cmdline(EBB, table.unpack(c[1])))
      assert.are.equal(2, code, table.concat(c[1], " "))
      assert.matches(c[2], err, 1, true)
    end
  end)
end)
