-- ebb simulate --reschedule: evicted pods come back as their owners
-- recreate them, placed by the kube-scheduler model; the next cycle sees
-- them where they landed. Fixtures: spec/fixtures/build_whatif.py.
describe("what-if (simulate --reschedule)", function()
  local h = require("spec.helpers")

  local function policy(plugin, ext, args)
    return h.policy{ plugins = { { name = plugin, ext = ext, args = args } } }
  end

  local TAINTS = policy("RemovePodsViolatingNodeTaints", "deschedule")
  local LNU = policy("LowNodeUtilization", "balance", {
    thresholds = { cpu = 20, memory = 20 }, targetThresholds = { cpu = 50, memory = 50 } })
  local AFFINITY = policy("RemovePodsViolatingNodeAffinity", "deschedule", {
    nodeAffinityType = { "preferredDuringSchedulingIgnoredDuringExecution" } })
  local HNU = policy("HighNodeUtilization", "balance", { thresholds = { cpu = 40, memory = 40 } })

  -- A bin-packing scheduler: MostAllocated, weighed over spreading.
  local PACKING = h.PACKING_SCHEDULER

  local function run(snapshot, policy_text, extra)
    local o = { snapshot = "spec/fixtures/" .. snapshot, policy_text = policy_text, reschedule = true }
    for k, v in pairs(extra or {}) do o[k] = v end
    return h.simulate(o)
  end

  local function placement(w, pod)
    for _, p in ipairs(w.placements) do
      if p.pod == pod or p.replaces == pod then return p end
    end
  end

  -- pods (not DaemonSet ones) on a node after the last step
  local function workload_pods(plan, node)
    local n = 0
    for _, p in ipairs(plan.whatif.placements) do
      if p.node == node then n = n + 1 end
    end
    return n
  end

  local PENDING_MSG = "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint "
    .. "{dedicated: gpu}, 1 node(s) had untolerated taint {maintenance: true}."

  it("places the snapshot's pending pods before cycle 1 and leaves another scheduler's alone", function()
    local plan = run("whatif-pending.json", TAINTS, { cycles = 0 })
    local w = plan.whatif
    assert.equal(0, plan.cycles)
    assert.same({}, plan.evictions)
    -- queue order: the oldest first (report was created 30 s ago, huge 20 s)
    assert.same({ cycle = 0, pod = "batch/report-29147040-x7y9z", node = "small-2", status = "placed" },
      w.placements[1])
    assert.same({ cycle = 0, pod = "shop/huge-3f2e1d0c9-z9x7v", status = "unschedulable",
                  message = PENDING_MSG }, w.placements[2])
    assert.same({ pod = "batch/volcano-task-0", since = 0, status = "other-scheduler",
                  message = 'no profile for scheduler "volcano": left alone' }, w.pending[2])
    assert.equal(2, #w.pending)
    assert.equal(2, #w.steps)                     -- the snapshot and cycle 0
    assert.equal(1, w.steps[2].placed)
    assert.equal(2, w.steps[2].unplaced)
  end)

  it("keeps a replacement that fits nowhere pending, with the scheduler's message", function()
    local plan = run("whatif-pending.json", TAINTS)
    local w = plan.whatif
    assert.same({ "batch/etl-7d6c5b4a3-p5r7t" }, plan:pods())
    local p = placement(w, "batch/etl-7d6c5b4a3-p5r7t")
    assert.equal(1, p.cycle)
    assert.equal("small-1", p.from)
    assert.is_nil(p.node)
    assert.equal("unschedulable", p.status)
    assert.equal(PENDING_MSG, p.message)
    -- a new name from the ReplicaSet's, the same message when it is listed as pending
    assert.matches("^batch/etl%-7d6c5b4a3%-%w%w%w%w%w$", p.pod)
    assert.not_equal("batch/etl-7d6c5b4a3-p5r7t", p.pod)
    local listed
    for _, q in ipairs(w.pending) do if q.pod == p.pod then listed = q end end
    assert.same({ pod = p.pod, since = 1, status = "unschedulable", message = PENDING_MSG }, listed)
    assert.is_true(w.converged)
  end)

  it("LowNodeUtilization converges: replacements land on the idle nodes, the next cycle evicts nothing", function()
    local plan = run("whatif-balance.json", LNU)
    local w = plan.whatif
    assert.is_true(w.converged)
    assert.equal(2, plan.cycles)
    assert.equal(4, w.steps[3].evicted)
    assert.equal(0, w.steps[4].evicted)
    for _, p in ipairs(w.placements) do
      assert.equal(1, p.cycle)
      assert.matches("^worker%-%a%-1$", p.from)
      assert.matches("^worker%-%a%-2$", p.node)
    end
    local before, after = w.steps[1].spread.cpu, w.steps[#w.steps].spread.cpu
    assert.is_true(after.stddev < before.stddev / 1.5)
    assert.is_true(after.max < 50)
    assert.same({}, w.loops)
  end)

  it("reports a loop: the scheduler puts back what RemovePodsViolatingNodeAffinity evicts (issue #1707)", function()
    local plan = run("whatif-loop.json", AFFINITY, { cycles = 3 })
    local w = plan.whatif
    assert.equal(3, plan.cycles)
    assert.is_false(w.converged)
    for c = 1, 3 do assert.equal(4, w.steps[c + 2].evicted) end
    assert.equal(1, #w.loops)
    local l = w.loops[1]
    assert.equal("ReplicaSet shop/web-84c6f7d9b", l.owner)
    assert.equal("RemovePodsViolatingNodeAffinity", l.plugin)
    assert.same({ 1, 2, 3 }, l.cycles)
    table.sort(l.nodes)
    assert.same({ "hdd-1", "hdd-2" }, l.nodes)
    assert.equal(12, #l.pods)
    -- ssd-1 is full: every replacement went back to an hdd node
    for _, p in ipairs(w.placements) do assert.matches("^hdd%-%d$", p.node) end
  end)

  it("HighNodeUtilization with a MostAllocated scheduler empties nodes; LeastAllocated spreads the pods back", function()
    local plan = run("whatif-pack.json", HNU, { scheduler_config_text = PACKING })
    local w = plan.whatif
    assert.is_true(w.converged)
    assert.equal(3, workload_pods(plan, "pack-a-1"))
    for _, n in ipairs(plan.nodes) do
      if n.name ~= "pack-a-1" then
        assert.is_true(n.after.cpu < 3, n.name)     -- kube-proxy only
      end
    end
    assert.same({}, w.loops)

    plan = run("whatif-pack.json", HNU, { cycles = 3 })
    w = plan.whatif
    assert.is_false(w.converged)
    assert.equal(0, workload_pods(plan, "pack-a-1"))
    assert.equal(1, #w.loops)
    assert.equal("HighNodeUtilization", w.loops[1].plugin)
  end)

  it("replaces a StatefulSet pod under its name, a Deployment's under a new one; a failed Job pod is gone", function()
    local plan = run("demo-cluster.json", nil, { policy = "spec/fixtures/demo-policy.yaml" })
    local w = plan.whatif
    local sts = placement(w, "payments/ledger-db-0")
    assert.equal("payments/ledger-db-0", sts.pod)
    assert.equal("payments/ledger-db-0", sts.replaces)
    local fe = placement(w, "shop/frontend-6b8f9d7c5-g5h6i")
    assert.not_equal(fe.replaces, fe.pod)
    assert.equal(3, w.steps[3].gone)                  -- RemoveFailedPods' Job pods
    -- the replacements are young: PodLifeTime leaves them be
    assert.is_true(w.converged)
  end)

  it("gives a budget back once the replacement is Ready: one pod per cycle under minAvailable 5 of 6", function()
    local plan = run("whatif-pdb.json", TAINTS)
    local w = plan.whatif
    -- cycle 1 spends web-pdb's one disruption; the disruption controller
    -- gives it back when the replacement runs on new-1 or new-2, so each
    -- cycle moves one more pod until old-1 holds none
    assert.equal(7, plan.cycles)
    assert.is_true(w.converged)
    for c = 1, 6 do assert.equal(1, w.steps[c + 2].evicted, "cycle " .. c) end
    assert.equal(0, w.steps[9].evicted)
    for _, p in ipairs(w.placements) do
      assert.equal("old-1", p.from)
      assert.matches("^new%-%d$", p.node)
    end
    assert.equal(6, #w.placements)
    -- six different pods, each evicted once: staged work, not a loop
    assert.same({}, w.loops)
    -- every refusal is the budget's, with the counts the controller wrote
    assert.equal(15, #plan.refusals)               -- 5 + 4 + 3 + 2 + 1
    for _, r in ipairs(plan.refusals) do
      assert.equal("pdb", r.why)
      assert.matches("needs 5 healthy pods and has 5 currently", r.detail)
    end
  end)

  it("moves the clock on by the interval each cycle: replacements age as they would live", function()
    local LIFETIME = policy("PodLifeTime", "deschedule", { maxPodLifeTimeSeconds = 500,
      namespaces = { include = { "shop" } } })
    -- every shop pod is days old: cycle 1 evicts all 16; their replacements
    -- start at cycle 1's time and are 300 s old at cycle 2 (the default
    -- interval), 600 s at cycle 3
    local plan = run("whatif-balance.json", LIFETIME, { cycles = 4 })
    local got = {}
    for c = 1, 4 do got[c] = plan.whatif.steps[c + 2].evicted end
    assert.same({ 16, 0, 16, 0 }, got)
    plan = run("whatif-balance.json", LIFETIME, { cycles = 4, interval = 600 })
    for c = 1, 4 do got[c] = plan.whatif.steps[c + 2].evicted end
    assert.same({ 16, 16, 16, 16 }, got)
    -- each cycle evicts the replacements of the one before: a loop per workload
    local owners = {}
    for _, l in ipairs(plan.whatif.loops) do
      assert.equal("PodLifeTime", l.plugin)
      owners[#owners + 1] = l.owner
    end
    table.sort(owners)
    assert.same({ "ReplicaSet shop/api-5b7c9d8e6", "ReplicaSet shop/cache-7f9b8c6d5",
                  "ReplicaSet shop/web-6d8f7c5b4" }, owners)
  end)

  it("breaks ties the same way for the same seed", function()
    local a = run("whatif-loop.json", AFFINITY, { cycles = 2, seed = 7 })
    local b = run("whatif-loop.json", AFFINITY, { cycles = 2, seed = 7 })
    assert.same(a.whatif.placements, b.whatif.placements)
    local c = run("whatif-loop.json", AFFINITY, { cycles = 2 })
    assert.not_same(a.whatif.placements, c.whatif.placements)   -- names, at least
  end)

  it("takes the plugins and weights of a scheduler config, and refuses a bad one with file, line and field", function()
    local plan, msg = h.try{ snapshot = "spec/fixtures/whatif-pack.json", policy_text = HNU, reschedule = true,
                             scheduler_config = "sched.yaml",
                             scheduler_config_text = PACKING:gsub("weight: 5", "weight: -5") }
    assert.is_nil(plan)
    assert.matches("sched%.yaml:7: profiles%[0%]%.plugins%.multiPoint%.enabled%[0%]%.weight: bad weight %-5", msg)
  end)
end)
