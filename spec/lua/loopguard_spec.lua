-- LoopGuard (engine/core/loopguard.c): a built-in filter and
-- preEvictionFilter that stops eviction loops. Looping clusters are
-- policies that evict in every cycle of `ebb simulate --reschedule
-- --cycles 10`; control clusters are evictions that do useful work.
-- Fixtures: spec/fixtures/build_loopguard.py and build_whatif.py.
describe("LoopGuard", function()
  local h = require("spec.helpers")

  -- A profile with `plugin` at `ext`, and LoopGuard (args: nil for none,
  -- false to leave it out) under filter and preEvictionFilter.
  local function policy(plugin, ext, args, guard)
    local configs = { { name = plugin, args = args } }
    local plugins = { [ext] = { enabled = { plugin } } }
    if guard ~= false then
      configs[#configs + 1] = { name = "LoopGuard", args = guard }
      plugins.filter = { enabled = { "LoopGuard" } }
      plugins.preEvictionFilter = { enabled = { "LoopGuard" } }
    end
    return h.json{
      apiVersion = "descheduler/v1alpha2", kind = "DeschedulerPolicy",
      profiles = { { name = "default", pluginConfig = configs, plugins = plugins } },
    }
  end

  local PACKING = h.PACKING_SCHEDULER

  local LNU = { "LowNodeUtilization", "balance",
                { thresholds = { cpu = 20, memory = 20 }, targetThresholds = { cpu = 50, memory = 50 } } }
  local HNU = { "HighNodeUtilization", "balance", { thresholds = { cpu = 40, memory = 40 } } }
  local AFFINITY = { "RemovePodsViolatingNodeAffinity", "deschedule",
                     { nodeAffinityType = { "preferredDuringSchedulingIgnoredDuringExecution" } } }
  local DUP = { "RemoveDuplicates", "balance", nil }
  local SPREAD = { "RemovePodsViolatingTopologySpreadConstraint", "balance",
                   { constraints = { "DoNotSchedule", "ScheduleAnyway" }, topologyBalanceNodeFit = false } }
  local TAINTS = { "RemovePodsViolatingNodeTaints", "deschedule", nil }

  local function run(snapshot, p, guard, extra)
    local o = { snapshot = "spec/fixtures/" .. snapshot, policy_text = policy(p[1], p[2], p[3], guard),
                reschedule = true, cycles = 10 }
    for k, v in pairs(extra or {}) do o[k] = v end
    return h.simulate(o)
  end

  -- evictions per cycle 1..10
  local function per_cycle(plan)
    local n = {}
    for c = 1, 10 do n[c] = 0 end
    for _, e in ipairs(plan.evictions) do n[e.cycle] = n[e.cycle] + 1 end
    return n
  end

  local function refusals(plan, why)
    local out = {}
    for _, r in ipairs(plan.refusals) do
      if r.why == why then out[#out + 1] = r end
    end
    return out
  end

  local function last_step(plan)
    return plan.whatif.steps[#plan.whatif.steps]
  end

  local LOOPS = {
    { "loop-lnu.json", LNU },
    { "loop-dup.json", DUP },
    { "loop-spread.json", SPREAD },
    { "whatif-loop.json", AFFINITY },
    { "whatif-pack.json", HNU },
    { "whatif-balance.json", LNU, { scheduler_config_text = PACKING } },
  }

  for _, l in ipairs(LOOPS) do
    it("stops the loop of " .. l[2][1] .. " on " .. l[1] .. " by cycle 2", function()
      local without = run(l[1], l[2], false, l[3])
      local n = per_cycle(without)
      -- today: it still evicts in the tenth cycle, and the what-if calls it a loop
      assert.is_true(n[10] > 0, l[1] .. " does not loop without LoopGuard")
      assert.is_true(#without.whatif.loops > 0)

      local with = run(l[1], l[2], nil, l[3])
      n = per_cycle(with)
      for c = 2, 10 do
        assert.equal(0, n[c], "cycle " .. c .. " evicted with LoopGuard")
      end
      assert.same({}, with.whatif.loops)
      assert.is_true(with.whatif.converged)
      -- every refusal says it is LoopGuard's and why
      local guarded = 0
      for _, r in ipairs(with.refusals) do
        if r.why == "futile" or r.why == "cooldown" or r.why == "unavailable" then
          guarded = guarded + 1
          assert.matches("^LoopGuard: ", r.detail)
          assert.equal(l[2][1], r.plugin)
        end
      end
      assert.is_true(guarded > 0)
    end)
  end

  local CONTROLS = {
    { "whatif-balance.json", LNU },
    { "whatif-pdb.json", TAINTS },
    { "whatif-pack.json", HNU, { scheduler_config_text = PACKING } },
    { "control-dup.json", DUP },
    { "control-spread.json", SPREAD },
  }

  for _, c in ipairs(CONTROLS) do
    it("lets " .. c[2][1] .. " on " .. c[1] .. " converge as it does without it", function()
      local without = run(c[1], c[2], false, c[3])
      local with = run(c[1], c[2], nil, c[3])
      assert.is_true(without.whatif.converged)
      assert.is_true(with.whatif.converged)
      assert.same({}, with.whatif.loops)
      local a, b = last_step(without), last_step(with)
      -- the same number of pods moved, and a balance at least as even
      assert.equal(#without.evictions, #with.evictions)
      assert.is_true(b.spread.cpu.stddev <= a.spread.cpu.stddev + 0.01,
        ("cpu spread %.2f with LoopGuard, %.2f without"):format(b.spread.cpu.stddev, a.spread.cpu.stddev))
      assert.is_true(b.spread.cpu.max <= a.spread.cpu.max + 0.01)
    end)
  end

  it("ends every control but whatif-balance with each node where it ends without it", function()
    for _, c in ipairs(CONTROLS) do
      if c[1] ~= "whatif-balance.json" then
        local a = last_step(run(c[1], c[2], false, c[3]))
        local b = last_step(run(c[1], c[2], nil, c[3]))
        for node, u in pairs(a.nodes) do
          assert.near(u.cpu, b.nodes[node].cpu, 0.01, c[1] .. " " .. node)
        end
      end
    end
  end)

  it("refuses as futile an eviction whose replacement lands back on the node it leaves", function()
    local plan = run("whatif-loop.json", AFFINITY, nil, { cycles = 1 })
    local f = refusals(plan, "futile")
    assert.equal(4, #f)
    for _, r in ipairs(f) do
      assert.matches("would land back on " .. r.node .. ", the node it leaves", r.detail, 1, true)
    end
    assert.same({}, plan.evictions)
  end)

  it("refuses as futile a LowNodeUtilization move onto a node as busy as the one it leaves", function()
    -- a bin-packing scheduler puts what LowNodeUtilization takes off
    -- worker-a-1 (62.5% cpu) onto worker-b-1 (62.5%), and back
    local plan = run("whatif-balance.json", LNU, nil, { cycles = 1, scheduler_config_text = PACKING })
    local busy = 0
    for _, r in ipairs(refusals(plan, "futile")) do
      if r.detail:find("which would then be as busy as", 1, true) then
        busy = busy + 1
        assert.matches("would land on worker%-[ab]%-1, which would then be as busy as worker%-[ab]%-1 is now", r.detail)
      end
    end
    assert.is_true(busy > 0)
    assert.same({}, plan.evictions)
  end)

  it("holds a workload whose replacement landed back for maxCooldown (bouncePrediction off)", function()
    local plan = run("whatif-loop.json", AFFINITY, { bouncePrediction = false }, { cycles = 4 })
    local n = per_cycle(plan)
    -- cycle 1 evicts (at most 2 of the 4 web pods: availability), the
    -- replacements land back where they were, and the workload rests
    assert.is_true(n[1] > 0 and n[1] <= 2)
    assert.same({ 0, 0, 0 }, { n[2], n[3], n[4] })
    local c = refusals(plan, "cooldown")
    assert.is_true(#c > 0)
    local seen_loop = false
    for _, r in ipairs(c) do
      if r.detail:find("is in a loop", 1, true) then
        seen_loop = true
        assert.matches("cooldown at its maximum 24h", r.detail, 1, true)
        assert.matches("Deployment shop/web", r.detail, 1, true)
      end
    end
    assert.is_true(seen_loop)
  end)

  it("grows the cooldown of a workload's new pods with each cycle it was evicted in", function()
    -- no prediction, no bounce: HighNodeUtilization moves the pack's
    -- replacements around; each later cycle finds the workload cooling
    local plan = run("whatif-pack.json", HNU, { bouncePrediction = false, cooldown = "5m",
                                                 maxCooldown = "1h" }, { cycles = 6 })
    local texts = {}
    for _, r in ipairs(refusals(plan, "cooldown")) do texts[#texts + 1] = r.detail end
    local all = table.concat(texts, "\n")
    assert.matches("Deployment batch/worker", all, 1, true)
    -- "is in a loop" (a replacement the same plugin evicts again) or a
    -- cooldown that doubled: either way longer than the 5m base
    assert.is_true(all:find("cooldown 10m", 1, true) ~= nil or all:find("is in a loop", 1, true) ~= nil)
    assert.is_true(#plan.evictions < 30)
  end)

  it("keeps a workload's pods down to maxUnavailablePerWorkload (default: 1 below 4 replicas)", function()
    local plan = run("control-dup.json", DUP, nil, { cycles = 1 })
    assert.equal(1, #plan.evictions)
    local u = refusals(plan, "unavailable")
    assert.equal(1, #u)
    assert.matches("Deployment shop/web has 1 of 3 pods unavailable (1 evicted in this cycle), at most 1 allowed",
      u[1].detail, 1, true)
    -- 2 allowed: both duplicates go in cycle 1
    plan = run("control-dup.json", DUP, { maxUnavailablePerWorkload = 2 }, { cycles = 1 })
    assert.equal(2, #plan.evictions)
    plan = run("control-dup.json", DUP, { maxUnavailablePerWorkload = "67%" }, { cycles = 1 })
    assert.equal(2, #plan.evictions)
  end)

  it("counts LoopGuard's refusals per cycle in the what-if", function()
    local plan = run("loop-lnu.json", LNU)
    local s = plan.whatif.steps
    local futile = 0
    for _, st in ipairs(s) do
      if st.cycle > 0 then futile = futile + st.guarded.futile end
    end
    assert.equal(#refusals(plan, "futile"), futile)
    assert.is_true(futile > 0)
  end)

  it("leaves a policy without it as it was: no refusal of its kinds", function()
    for _, l in ipairs(LOOPS) do
      local plan = run(l[1], l[2], false, l[3])
      for _, r in ipairs(plan.refusals) do
        assert.is_not.equal("futile", r.why)
        assert.is_not.equal("cooldown", r.why)
        assert.is_not.equal("unavailable", r.why)
      end
    end
  end)

  it("asks no prediction for the plugins that evict a pod for its age or restarts", function()
    -- deploy/'s policy (LoopGuard with its restartPlugins) on the deploy
    -- fixture: the pods PodLifeTime-like plugins restart would land back
    -- where they were, which is no loop: evicted as without LoopGuard
    local text = assert(io.open("deploy/base/policy.yaml")):read("a")
    local function sim(t)
      return h.simulate{ snapshot = "spec/fixtures/deploy-cluster.json", policy_text = t,
                         policy_dirs = { "deploy/base/strategies" } }
    end
    local with = sim(text)
    assert.equal(3, #with.evictions)
    assert.same({}, with.refusals)
    -- without restartPlugins, the Lua strategy's evictions are predicted
    local bare = text:gsub("    args:\n      # plugins that evict a pod for its age.-      restartPlugins: %[AnnotatedPodLifeTime%]\n", "")
    assert.is_not.equal(text, bare)
    local plan = sim(bare)
    assert.equal(1, #plan.evictions)
    assert.equal("RemovePodsHavingTooManyRestarts", plan.evictions[1].plugin)
    for _, r in ipairs(plan.refusals) do
      assert.equal("futile", r.why)
      assert.equal("AnnotatedPodLifeTime", r.plugin)
    end
  end)

  describe("args", function()
    local function bad(args)
      local plan, msg = h.try{ snapshot = "spec/fixtures/whatif-loop.json",
                               policy_text = policy(AFFINITY[1], AFFINITY[2], AFFINITY[3], args) }
      assert.is_nil(plan)
      return msg
    end

    it("are all optional", function()
      assert.is_not_nil(h.simulate{ snapshot = "spec/fixtures/whatif-loop.json",
                                    policy_text = policy(AFFINITY[1], AFFINITY[2], AFFINITY[3], nil) })
    end)

    it("name the field of a bad value", function()
      assert.matches("pluginConfig%[1%]%.args%.cooldown.*\"soon\" is not a positive duration", bad{ cooldown = "soon" })
      assert.matches("maxCooldown.*must not be shorter than cooldown", bad{ cooldown = "2h", maxCooldown = "1h" })
      assert.matches("cooldownWindow.*\"0s\" is not a positive duration", bad{ cooldownWindow = "0s" })
      assert.matches("maxUnavailablePerWorkload.*string is not a percentage: \"150%%\"",
        bad{ maxUnavailablePerWorkload = "150%" })
      assert.matches("maxUnavailablePerWorkload.*at least 1", bad{ maxUnavailablePerWorkload = 0 })
      assert.matches("bouncePrediction.*expected a boolean", bad{ bouncePrediction = "yes" })
      assert.matches("coolDown", bad{ coolDown = "5m" })
      assert.matches("restartPlugins%[1%].*must not be empty", bad{ restartPlugins = { "PodLifeTime", "" } })
      assert.matches("restartPlugins.*expected", bad{ restartPlugins = "PodLifeTime" })
    end)
  end)
end)
