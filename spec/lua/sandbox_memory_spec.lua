-- What a script makes the core keep is charged to its memory cap or
-- bounded: notes, eviction reasons, refusals, values written as JSON. And a
-- plugin that is asked about a pod (filter, preEvictionFilter, evict) cannot
-- evict. Each case runs in a child process bounded in time and memory
-- (h.bounded): before these bounds, a 32 MiB plugin drove ebb to gigabytes.
describe("the memory a plugin makes the core keep", function()
  local h = require("spec.helpers")
  local SNAP = "spec/fixtures/kubectl-list.json"

  local run = h.bad_plugin{ budget = 20000, mem = 32 << 20, limits = { seconds = 60, mb = 1024 } }

  it("charges notes to the cap", function()
    local msg, plan = run([[ while true do ebb.note(string.rep("x", 4000)) end ]])
    assert.matches("memory limit of 32 MiB exceeded", msg)
    -- what the plan kept stayed within the cap
    local bytes = 0
    for _, n in ipairs(plan.notes) do bytes = bytes + #n.message end
    assert.is_true(bytes < 32 << 20, bytes)
  end)

  it("refuses a note longer than 4096 bytes", function()
    assert.matches("a note is at most 4096 bytes %(got 5000%)", run([[ ebb.note(string.rep("x", 5000)) ]]))
  end)

  it("refuses an eviction reason longer than 1024 bytes", function()
    local msg = run([[
      local pod = ebb.pods(nodes, { phase = "all" })[1]
      ctx.evictor:evict(pod, { reason = string.rep("x", 2000) })
    ]])
    assert.matches("the reason is 2000 bytes; at most 1024", msg)
  end)

  it("charges refusals to the cap", function()
    local msg, plan = run([[
      local pod = ebb.pods(nodes, { phase = "all" })[1]
      while true do ctx.evictor:evict(pod, { reason = string.rep("r", 1000) }) end
    ]], { mem = 16 << 20 })
    assert.matches("memory limit of 16 MiB exceeded", msg)
    assert.is_true(#plan.refusals < 16 << 10, #plan.refusals)
  end)

  it("bounds a value written as JSON", function()
    local msg = run([[
      local t = {}
      for i = 1, 300000 do t[i] = i end
      ebb.json(t)
    ]])
    assert.matches("ebb.json: .*larger than an API request may be", msg)
  end)

  it("sorts the keys of a big map in n log n", function()
    -- 150k keys: an insertion sort took minutes here
    local msg = run([[
      local t = {}
      for i = 1, 150000 do t["k" .. (150000 - i)] = i end
      error("done " .. #ebb.json(t))
    ]])
    assert.matches("done %d+", msg)
  end)
end)

describe("a plugin asked about a pod", function()
  local h = require("spec.helpers")
  local SNAP = "spec/fixtures/kubectl-list.json"

  local function plan_with(ext)
    local dir = h.plugin_dir{ ["greedy.lua"] = string.format([[
      return { name = "Greedy", %s = function(ctx, pod)
        local ok, why = ctx.evictor:evict(pod, { reason = "from a filter" })
        return true
      end }
    ]], ext) }
    local plan, msg = h.bounded("simulate", {
      snapshot = SNAP, policy_dirs = { dir },
      plugins = { { name = "Greedy", ext = ext == "preevictionfilter" and "preEvictionFilter" or ext },
                  { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } } },
    }, { seconds = 60 })
    h.rmdir(dir)
    assert(plan, msg)
    return plan
  end

  for _, ext in ipairs({ "filter", "preevictionfilter" }) do
    it("cannot evict from " .. ext, function()
      local plan = plan_with(ext)
      -- the failing filter protects every pod (PodLifeTime finds none it may
      -- evict), and says why once
      assert.same({}, plan:pods())
      assert.equal(1, #plan.errors)
      assert.equal("Greedy", plan.errors[1].plugin)
      assert.matches("cannot be called from a " .. ext .. " plugin: only deschedule and balance plugins evict",
                     plan.errors[1].message)
    end)
  end
end)
