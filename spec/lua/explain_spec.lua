-- `ebb explain NAMESPACE/POD` (engine/cmd/explain.c): why a policy evicts a
-- pod or not. Every pod of the demo cluster is explained and held to what
-- `ebb simulate` decides on the same snapshot and policy; then the cases a
-- user asks about: an evicted pod, pods the DefaultEvictor protects (with
-- upstream's words), a PodDisruptionBudget's refusal, a pod no strategy
-- wanted, LoopGuard's refusal, and the inputs a user can get wrong.
describe("ebb explain", function()
  local S = require("spec.shell")
  local json = require("dkjson")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
  local DEMO = "spec/fixtures/demo-cluster.json"
  local POLICY = "spec/fixtures/demo-policy.yaml"
  local NOW = "2026-11-22T12:00:00Z"
  local TAINTED = "ip-10-0-2-23.eu-west-1.compute.internal"

  local function explain(pod, ...)
    local code, out, err = S.run(S.cmdline(EBB, "explain", pod, "--snapshot", DEMO, "--policy", POLICY,
                                           "--now", NOW, "-q", ...))
    return code, out, err
  end

  local function explain_json(pod)
    local code, out, err = explain(pod, "--output", "json")
    assert.equal(0, code, err)
    local doc = json.decode(out)
    assert.is_table(doc, out)
    return doc
  end

  local function plan()
    local code, out, err = S.run(S.cmdline(EBB, "simulate", "--snapshot", DEMO, "--policy", POLICY,
                                           "--now", NOW, "--output", "json", "-q"))
    assert.equal(0, code, err)
    return json.decode(out)
  end

  local function pods_of(path)
    local doc = json.decode(assert(S.read(path)))
    local out = {}
    for _, it in ipairs(doc.items) do
      if it.kind == "Pod" then out[#out + 1] = it.metadata.namespace .. "/" .. it.metadata.name end
    end
    return out
  end

  local function strategy(doc, name)
    for _, s in ipairs(doc.profiles[1].strategies) do
      if s.plugin == name then return s end
    end
  end

  local function filter(doc, plugin, ext)
    for _, f in ipairs(doc.profiles[1].filters) do
      if f.plugin == plugin and f.extension == ext then return f end
    end
  end

  it("agrees with `ebb simulate` on every pod of the demo cluster", function()
    local p = plan()
    local evicted, refused = {}, {}
    for _, e in ipairs(p.evictions) do evicted[e.pod] = e end
    for _, r in ipairs(p.refusals) do refused[r.pod] = r end
    local pods = pods_of(DEMO)
    assert.is_true(#pods >= 40)
    local n_evicted, n_protected = 0, 0
    for _, key in ipairs(pods) do
      local doc = explain_json(key)
      local ns, name = key:match("^(.-)/(.*)$")
      assert.equal(ns, doc.namespace)
      assert.equal(name, doc.pod)
      local protected = false
      for _, f in ipairs(doc.profiles[1].filters) do
        if not f.evictable then
          protected = true
          -- the DefaultEvictor always says why
          if f.plugin == "DefaultEvictor" then assert.is_string(f.reason, key) end
        end
      end
      local by = {}
      for _, s in ipairs(doc.profiles[1].strategies) do
        assert.equal(#s.outcomes > 0, s.candidate, key)
        for _, o in ipairs(s.outcomes) do
          if o.outcome == "evicted" then by[#by + 1] = s.plugin end
        end
      end
      if evicted[key] then
        n_evicted = n_evicted + 1
        assert.same({ evicted[key].plugin }, by, key)
        assert.is_false(protected, key)
      else
        assert.same({}, by, key)
      end
      if refused[key] then
        assert.is_true(strategy(doc, refused[key].plugin).candidate, key)
      end
      if protected then n_protected = n_protected + 1 end
    end
    assert.equal(#p.evictions, n_evicted)
    assert.is_true(n_protected >= 10)   -- DaemonSet, static, bare and critical pods
  end)

  it("an evicted pod: the strategy, its reason, its workload and where the replacement lands", function()
    local doc = explain_json("shop/frontend-6b8f9d7c5-g5h6i")
    assert.same({ kind = "Deployment", name = "frontend" }, doc.workload)
    assert.equal(TAINTED, doc.node)
    local s = strategy(doc, "RemovePodsViolatingNodeTaints")
    assert.is_true(s.candidate)
    assert.equal("evicted", s.outcomes[1].outcome)
    assert.matches("does not tolerate a taint", s.outcomes[1].reason)
    assert.is_false(strategy(doc, "PodLifeTime").candidate)
    assert.equal("ReplicaSet shop/frontend-6b8f9d7c5", doc.replacement.recreatedBy)
    assert.equal("placed", doc.replacement.prediction)
    -- the scheduler model does not put it back on the node whose taint it does not tolerate
    assert.is_string(doc.replacement.node)
    assert.are_not.equal(TAINTED, doc.replacement.node)
    assert.is_true(doc.limits.total.evicted >= 1)
    assert.is_nil(doc.limits.total.max)   -- the policy sets no limit
  end)

  it("pods the DefaultEvictor protects, in upstream's words", function()
    local cases = {
      { "kube-system/kube-proxy-4456a", "pod has system critical priority and is protected against eviction" },
      { "default/netshoot-debug", "pod does not have any ownerRefs" },
    }
    for _, c in ipairs(cases) do
      local doc = explain_json(c[1])
      local f = filter(doc, "DefaultEvictor", "filter")
      assert.is_false(f.evictable, c[1])
      assert.equal(c[2], f.reason)
      for _, s in ipairs(doc.profiles[1].strategies) do assert.is_false(s.candidate, c[1]) end
    end
    local code, out = explain("default/netshoot-debug")
    assert.equal(0, code)
    assert.matches("DefaultEvictor%s+filter%s+protects it: pod does not have any ownerRefs", out)
    assert.matches("replacement: nothing recreates it", out)
  end)

  it("a pod its PodDisruptionBudget holds: the refusal and the budget's numbers", function()
    local doc = explain_json("payments/ledger-db-1")
    local s = strategy(doc, "PodLifeTime")
    assert.is_true(s.candidate)
    assert.equal("refused", s.outcomes[1].outcome)
    assert.equal("pdb", s.outcomes[1].why)
    assert.matches("disruption budget ledger%-db needs 2 healthy pods and has 2", s.outcomes[1].detail)
    assert.equal(1, #doc.podDisruptionBudgets)
    local b = doc.podDisruptionBudgets[1]
    assert.equal("ledger-db", b.name)
    assert.equal("1", b.maxUnavailable)
    assert.equal(3, b.expectedPods)
    assert.same({ kind = "StatefulSet", name = "ledger-db" }, doc.workload)
    assert.equal("StatefulSet payments/ledger-db", doc.replacement.recreatedBy)
  end)

  it("a pod no strategy wanted says so for each", function()
    local code, out = explain("shop/cart-5d7f8c6b9-w5x6y")
    assert.equal(0, code)
    local n = 0
    for _ in out:gmatch("not a candidate: it did not ask to evict the pod") do n = n + 1 end
    assert.equal(3, n)
    assert.matches("podDisruptionBudgets: none selects the pod", out)
  end)

  it("LoopGuard's refusal comes with its reason and the memory of the cycle's evictions", function()
    local pol = S.tmpfile([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: RemoveDuplicates
  - name: LoopGuard
  plugins:
    balance: {enabled: [RemoveDuplicates]}
    filter: {enabled: [LoopGuard]}
    preEvictionFilter: {enabled: [LoopGuard]}
]])
    local code, out, err = S.run(S.cmdline(EBB, "explain", "shop/web-5d9c7b8f4-c5e7g", "--snapshot",
      "spec/fixtures/loop-dup.json", "--policy", pol, "-q", "--output", "json"))
    os.remove(pol)
    assert.equal(0, code, err)
    local doc = json.decode(out)
    local s = doc.profiles[1].strategies[1]
    assert.equal("RemoveDuplicates", s.plugin)
    assert.equal("refused", s.outcomes[1].outcome)
    assert.equal("unavailable", s.outcomes[1].why)
    assert.matches("^LoopGuard: Deployment shop/web has 1 of 3 pods unavailable", s.outcomes[1].detail)
    -- LoopGuard answers at eviction time: as a filter of candidates it says yes
    local f = filter(doc, "LoopGuard", "filter")
    assert.is_true(f.evictable)
    -- the memory shown is what it held before the cycle: nothing yet
    assert.same({}, doc.memory)
  end)

  it("names what a user got wrong", function()
    local cases = {
      { { "shop/frontend-6b8f9d7c5-g5h6j" }, "pod shop/frontend%-6b8f9d7c5%-g5h6j is not in the snapshot; did you mean shop/frontend%-6b8f9d7c5%-g5h6i%?" },
      { { "nowhere/web-1" }, "pod nowhere/web%-1 is not in the snapshot %(no pod in namespace nowhere%)" },
      { { "frontend" }, '"frontend" is not NAMESPACE/POD' },
      { { "a/b/c" }, '"a/b/c" is not NAMESPACE/POD' },
      { { "shop/" }, '"shop/" is not NAMESPACE/POD' },
      { { "shop/x", "--output", "yaml" }, '%-%-output: "yaml" is not text or json' },
      { { "shop/x", "--now", "yesterday" }, '%-%-now: "yesterday" is not an RFC 3339 time' },
      { { "shop/x", "shop/y" }, "explain needs one pod, NAMESPACE/POD %(more than one given%)" },
    }
    for _, c in ipairs(cases) do
      local code, out, err = explain(table.unpack(c[1]))
      assert.equal(2, code, table.concat(c[1], " "))
      assert.equal("", out)
      assert.matches(c[2], err)
    end
    local code, _, err = S.run(S.cmdline(EBB, "explain", "shop/x", "--policy", POLICY))
    assert.equal(2, code)
    assert.matches("explain needs %-%-policy and one of %-%-snapshot or %-%-kubeconfig", err)
    code, _, err = S.run(S.cmdline(EBB, "explain", "shop/x", "--snapshot", DEMO, "--policy",
                                   "spec/fixtures/nonexistent.yaml"))
    assert.equal(2, code)
    assert.matches("spec/fixtures/nonexistent%.yaml", err)
  end)
  it("docs/explain.md shows what it prints", function()
    local doc = assert(S.read("docs/explain.md"))
    local block = doc:match("%$ ebb explain payments/ledger%-db%-1 [^\n]*\n[^\n]*\n(.-)```")
    assert.is_string(block)
    local code, out = explain("payments/ledger-db-1")
    assert.equal(0, code)
    assert.equal(out, block)
    block = doc:match("%$ ebb explain kube%-system/kube%-proxy%-4456a [^\n]*\n[^\n]*\n(.-)%.%.%.\n```")
    assert.is_string(block)
    code, out = explain("kube-system/kube-proxy-4456a")
    assert.equal(0, code)
    assert.equal(block, out:sub(1, #block))
  end)
end)
