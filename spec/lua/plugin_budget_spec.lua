-- A plugin past its time budget is set aside for the rest of the cycle: a
-- filter called once per pod that loops costs one budget a cycle, not one
-- per pod; what it would have answered is "no" (the pods stay); it is
-- reported once a cycle. Counted through the plan: each plugin counts its
-- calls in ctx.state, and its deschedule function notes the count of the
-- cycles before.
describe("a plugin past its budget", function()
  local h = require("spec.helpers")
  local snap

  setup(function()
    -- 300 Deployment pods on three nodes (spec/fixtures/build_busy.py)
    snap = os.tmpname()
    assert(os.execute("python3 spec/fixtures/build_busy.py > " .. snap))
  end)

  teardown(function() os.remove(snap) end)

  local LOOP = "while true do end"

  -- A plugin "Stuck" with `ext` (filter, preevictionfilter or evict) counting
  -- its calls and then running `body`, and a deschedule function noting the
  -- calls counted so far.
  local function stuck(ext, body)
    return [[
      local ebb = require("ebb")
      return {
        name = "Stuck",
        deschedule = function(ctx)
          ebb.note("calls so far: " .. tostring(ctx.state.calls or 0))
        end,
        ]] .. ext .. [[ = function(ctx)
          ctx.state.calls = (ctx.state.calls or 0) + 1
          ]] .. body .. [[
        end,
      }
    ]]
  end

  -- The policy: Stuck at `ext` and first in deschedule, with a budget of
  -- 50 ms, then PodLifeTime (60 s: the calls of Stuck it makes run in its
  -- time) asking to evict every pod older than a minute (all 300).
  local function policy(ext)
    local plugins = { deschedule = { enabled = h.array{ "Stuck", "PodLifeTime" } } }
    plugins[ext] = { enabled = h.array{ "Stuck" } }
    return h.json{
      apiVersion = "descheduler/v1alpha2", kind = "DeschedulerPolicy",
      profiles = h.array{ {
        name = "busy",
        pluginConfig = h.array{ { name = "Stuck", limits = { timeout = "50ms" } },
                                { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } } },
        plugins = plugins,
      } },
    }
  end

  local function run(ext, src, cycles)
    local dir = h.plugin_dir{ ["stuck.lua"] = src }
    local plan, msg = h.bounded("simulate", {
      snapshot = snap, policy_text = policy(ext), policy_dirs = { dir }, cycles = cycles,
      time_budget_ms = 60000,
    }, { seconds = 120 })
    h.rmdir(dir)
    assert(plan, msg)
    return plan
  end

  local function errors_of(plan, plugin)
    local out = {}
    for _, e in ipairs(plan.errors) do
      if e.plugin == plugin then out[#out + 1] = e end
    end
    return out
  end

  for _, ext in ipairs({ "filter", "preEvictionFilter" }) do
    local fn = ext:lower()
    it(ext .. " that loops: called once a cycle, answers no for every pod, reported once", function()
      local plan = run(ext, stuck(fn, LOOP), 3)
      -- cycle 2 notes cycle 1's calls, cycle 3 both cycles'
      assert.same({ "calls so far: 0", "calls so far: 1", "calls so far: 2" }, plan:note_messages())
      assert.same({}, plan:pods())
      local errs = errors_of(plan, "Stuck")
      assert.equal(3, #errs)
      for c, e in ipairs(errs) do
        assert.equal(c, e.cycle)
        assert.matches("^" .. fn .. " %(set aside for the rest of the cycle: it answers no for every pod", e.message)
        assert.matches("time budget of 50 ms exceeded", e.message)
      end
    end)
  end

  it("a filter that fails without running out of time is still asked about every pod", function()
    local plan = run("filter", stuck("filter", "error('no')"), 2)
    assert.same({ "calls so far: 0", "calls so far: 300" }, plan:note_messages())   -- once each: none passes
    assert.same({}, plan:pods())
    assert.equal(2, #errors_of(plan, "Stuck"))   -- once a cycle, as before
  end)

  it("a filter that answers is asked about every pod", function()
    -- twice each: PodLifeTime lists the pods that pass the filters, and the
    -- evictor checks them again
    local plan = run("filter", stuck("filter", "return true"), 2)
    assert.same({ "calls so far: 0", "calls so far: 600" }, plan:note_messages())
    assert.equal(300, #plan:pods())
    assert.equal(0, #errors_of(plan, "Stuck"))
  end)

  it("an evict plugin that loops: called once a cycle, the pods after it refused as `evictor`", function()
    local plan = run("evict", stuck("evict", LOOP), 2)
    assert.same({ "calls so far: 0", "calls so far: 1" }, plan:note_messages())
    assert.same({}, plan:pods())
    local errs = errors_of(plan, "Stuck")
    assert.equal(2, #errs)
    local aside = 0
    for _, r in ipairs(plan.refusals) do
      if r.why == "evictor" and (r.detail or ""):match("set aside for the rest of the cycle") then
        aside = aside + 1
      end
    end
    assert.equal(2 * 300, #plan:refused("evictor"))
    assert.equal(2 * 299, aside)
  end)
end)
