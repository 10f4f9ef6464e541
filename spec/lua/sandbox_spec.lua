-- Every sandbox rule, shown failing: a script that breaks one fails its own
-- plugin for the cycle, is reported in the plan, and the others still run.
describe("the Lua sandbox", function()
  local h = require("spec.helpers")
  local SNAP = "spec/fixtures/kubectl-list.json"

  -- A plugin whose deschedule body is `body`; a well-behaved PodLifeTime
  -- runs after it in the same profile.
  local run = h.bad_plugin{ budget = 300, others_only = true }

  it("has no io library", function()
    assert.matches("undeclared global 'io'", run([[ io.open("/etc/passwd") ]]))
  end)

  it("has no os library", function()
    assert.matches("undeclared global 'os'", run([[ os.exit(1) ]]))
  end)

  it("has no debug library, dofile, loadfile or collectgarbage", function()
    assert.matches("undeclared global 'debug'", run([[ debug.sethook() ]]))
    assert.matches("undeclared global 'dofile'", run([[ dofile("/etc/passwd") ]]))
    assert.matches("undeclared global 'loadfile'", run([[ loadfile("/etc/passwd") ]]))
    assert.matches("undeclared global 'collectgarbage'", run([[ collectgarbage("stop") ]]))
  end)

  it("refuses binary chunks", function()
    local msg = run([[
      local f, err = load(string.dump(function() return 1 end))
      error(err)
    ]])
    assert.matches("attempt to load a binary chunk", msg)
  end)

  it("only requires modules from lua/ and the policy directories", function()
    assert.matches("module 'io' not found", run([[ require("io") ]]))
    assert.matches("not allowed", run([[ require("../../etc/passwd") ]]))
  end)

  it("raises on writing a global", function()
    assert.matches("assignment to undeclared global 'leaked'", run([[ leaked = 1 ]]))
  end)

  it("stops a runaway loop even inside the script's own pcall", function()
    local msg = run([[
      while true do
        pcall(function() while true do end end)
      end
    ]], { budget = 200 })
    assert.matches("time budget of 200 ms exceeded", msg)
  end)

  it("stops a loop in a native helper's callback", function()
    local msg = run([[
      ebb.pods(nodes, { phase = "all", where = function() while true do end end })
    ]], { budget = 200 })
    assert.matches("time budget", msg)
  end)

  it("caps memory", function()
    local msg = run([[
      local t = {}
      while true do t[#t + 1] = string.rep("x", 1 << 20) .. #t end
    ]], { mem = 16 << 20 })
    assert.matches("memory limit of 16 MiB exceeded", msg)
  end)

  it("caps memory held in native lists", function()
    local msg = run([[
      local l = ebb.pods(nodes, { phase = "all" })
      local p = l[1]
      while true do l:append(p) end
    ]], { mem = 8 << 20, budget = 10000 })
    assert.matches("memory", msg)
  end)

  it("keeps pods read-only", function()
    assert.matches("read%-only", run([[
      local p = ebb.pods(nodes, { phase = "all" })[1]
      p.name = "x"
    ]]))
  end)

  it("reports a plugin that returns false and a message", function()
    assert.equal("cannot decide", run([[ return false, "cannot decide" ]]))
  end)

  it("stops a loop inside a coroutine of the script, and the code that resumed it", function()
    local msg = run([[
      local co = coroutine.wrap(function() while true do end end)
      while true do pcall(co) end
    ]], { budget = 200 })
    assert.matches("time budget of 200 ms exceeded", msg)
    -- resume returns the error to the resumer, which cannot go on either
    msg = run([[
      local co = coroutine.create(function() while true do end end)
      local ok, err = coroutine.resume(co)
      while true do end
    ]], { budget = 200 })
    assert.matches("time budget of 200 ms exceeded", msg)
    -- a coroutine made after the budget expired is stopped at once
    msg = run([[
      local co = coroutine.create(function() while true do end end)
      pcall(coroutine.resume, co)
      while true do pcall(coroutine.wrap(function() while true do end end)) end
    ]], { budget = 200 })
    assert.matches("time budget of 200 ms exceeded", msg)
  end)

  it("runs coroutines of the script as Lua does", function()
    -- a generator: the results prove the values went through resume/yield
    local msg = run([[
      local gen = coroutine.wrap(function(a) local b = coroutine.yield(a + 1); coroutine.yield(b * 2) end)
      local co = coroutine.create(function(x) error("boom " .. x) end)
      local ok, err = coroutine.resume(co, 7)
      return false, string.format("%d %d %s %s %s", gen(1), gen(21), tostring(ok), err:match("boom 7"),
        coroutine.status(co))
    ]])
    assert.equal("2 42 false boom 7 dead", msg)
  end)

  it("refuses a yield that has no coroutine of the script to go to", function()
    assert.matches("coroutine.yield outside a coroutine", run([[ coroutine.yield(1) ]]))
  end)
end)

describe("per-plugin limits in the policy", function()
  local h = require("spec.helpers")
  local SNAP = "spec/fixtures/kubectl-list.json"

  local function policy(limits, name)
    return string.format([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: %s
    limits: %s
  plugins:
    deschedule:
      enabled: [%s]
]], name or "Greedy", limits, name or "Greedy")
  end

  local dir
  setup(function()
    dir = h.plugin_dir{ ["greedy.lua"] = [[
      return { name = "Greedy", deschedule = function(ctx, nodes)
        local t = {}
        for i = 1, 40 do t[i] = string.rep("x", 1 << 20) .. i end   -- 40 MiB
        local deadline = 0
        for i = 1, 3e7 do deadline = deadline + i end                 -- a while
        return true
      end }
    ]] }
  end)
  teardown(function() h.rmdir(dir) end)

  it("caps one plugin's memory below the default", function()
    local plan = h.simulate{ snapshot = SNAP, policy_dirs = { dir }, policy_text = policy("{memory: 16Mi}") }
    assert.equal(1, #plan.errors)
    assert.matches("memory limit of 16 MiB exceeded", plan.errors[1].message)
  end)

  it("gives one plugin a shorter time budget", function()
    local plan = h.simulate{ snapshot = SNAP, policy_dirs = { dir }, policy_text = policy("{timeout: 50ms}") }
    assert.equal(1, #plan.errors)
    assert.matches("time budget of 50 ms exceeded", plan.errors[1].message)
  end)

  it("lets a plugin run with limits that fit it", function()
    local plan = h.simulate{ snapshot = SNAP, policy_dirs = { dir },
                             policy_text = policy("{memory: 256Mi, timeout: 1m}") }
    assert.same({}, plan.errors)
  end)

  it("names the line and field of a bad limit", function()
    local cases = {
      { "{memory: lots}", 7, "profiles%[0%]%.pluginConfig%[0%]%.limits%.memory", "not a quantity" },
      { "{memory: 100Ki}", 7, "limits%.memory", "between 1Mi and 16Gi" },
      { "{timeout: 10}", 7, "limits%.timeout", "a duration" },
      { "{timeout: -1s}", 7, "limits%.timeout", "positive duration" },
      { "{quarantineAfter: -1}", 7, "limits%.quarantineAfter", "must not be negative" },
      { "[1, 2]", 7, "limits", "expected a map" },
    }
    for _, c in ipairs(cases) do
      local res, msg = h.check{ policy_text = policy(c[1]), policy_dirs = { dir } }
      assert.is_nil(res, c[1])
      assert.matches(":" .. c[2] .. ":", msg, 1, false)
      assert.matches(c[3], msg)
      assert.matches(c[4], msg)
    end
  end)
end)

describe("quarantine", function()
  local h = require("spec.helpers")
  local SNAP = "spec/fixtures/kubectl-list.json"

  local function plan_for(limits, cycles)
    local dir = h.plugin_dir{ ["flaky.lua"] = [[
      return { name = "Flaky", deschedule = function(ctx, nodes)
        error("cannot reach the inventory service")
      end }
    ]] }
    local plan = h.simulate{ snapshot = SNAP, policy_dirs = { dir }, cycles = cycles, policy_text = string.format([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: Flaky
    %s
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 60}
  plugins:
    deschedule:
      enabled: [Flaky, PodLifeTime]
]], limits) }
    h.rmdir(dir)
    return plan
  end

  local function cycles_of(list)
    local out = {}
    for _, x in ipairs(list) do out[#out + 1] = x.cycle end
    return out
  end

  it("sets a plugin that keeps failing aside with a doubling backoff", function()
    local plan = plan_for("limits: {}", 16)
    -- fails in 1, 2, 3: quarantined through 4; the trial in 5 fails: through
    -- 7; the trial in 8 fails: through 12; then 13 fails: through 21
    assert.same({ 1, 2, 3, 5, 8, 13 }, cycles_of(plan.errors))
    local quarantined, skipped = {}, {}
    for _, n in ipairs(plan.notes) do
      assert.equal("Flaky", n.plugin)
      if n.message:match("^quarantined") then quarantined[#quarantined + 1] = n.cycle .. ": " .. n.message
      else skipped[#skipped + 1] = n.cycle end
    end
    assert.same({
      "3: quarantined: failed 3 runs in a row; skipped for the next 1 cycle, then tried again",
      "5: quarantined: failed 4 runs in a row; skipped for the next 2 cycles, then tried again",
      "8: quarantined: failed 5 runs in a row; skipped for the next 4 cycles, then tried again",
      "13: quarantined: failed 6 runs in a row; skipped for the next 8 cycles, then tried again",
    }, quarantined)
    assert.same({ 4, 6, 7, 9, 10, 11, 12, 14, 15, 16 }, skipped)
    -- the other plugin ran every cycle: the pods older than a minute went in cycle 1
    assert.is_true(#plan.evictions > 0)
    for _, e in ipairs(plan.evictions) do assert.equal("PodLifeTime", e.plugin) end
  end)

  it("follows quarantineAfter from the policy, and 0 never quarantines", function()
    assert.same({ 1, 3, 6 }, cycles_of(plan_for("limits: {quarantineAfter: 1}", 8).errors))
    local plan = plan_for("limits: {quarantineAfter: 0}", 6)
    assert.same({ 1, 2, 3, 4, 5, 6 }, cycles_of(plan.errors))
    assert.same({}, plan.notes)
  end)
end)

describe("loading Lua plugins", function()
  local h = require("spec.helpers")
  local POLICY = h.policy{ plugins = { { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } } } }

  local function check_dir(files)
    local dir = h.plugin_dir(files)
    local ok, msg = h.check{ policy_text = POLICY, policy_dirs = { dir } }
    h.rmdir(dir)
    return ok, msg, dir
  end

  it("names the file and line of a syntax error", function()
    local ok, msg = check_dir{ ["broken.lua"] = "return {\n  name = 'X',\n  deschedule = function( end }\n" }
    assert.is_nil(ok)
    assert.matches("broken%.lua:3:", msg)
  end)

  it("refuses a file that does not return a plugin table", function()
    local ok, msg = check_dir{ ["nothing.lua"] = "return 42\n" }
    assert.is_nil(ok)
    assert.matches("nothing%.lua: a plugin file must return a table %(got number%)", msg)
  end)

  it("refuses a table without a name", function()
    local ok, msg = check_dir{ ["anon.lua"] = "return { deschedule = function() end }\n" }
    assert.is_nil(ok)
    assert.matches("anon%.lua: name: the plugin table needs a `name`", msg)
  end)

  it("refuses a table without any extension point", function()
    local ok, msg = check_dir{ ["idle.lua"] = "return { name = 'Idle' }\n" }
    assert.is_nil(ok)
    assert.matches("has none of deschedule, balance, filter, preevictionfilter", msg)
  end)

  it("refuses a name registered twice", function()
    local ok, msg = check_dir{ ["dup.lua"] = "return { name = 'PodLifeTime', deschedule = function() end }\n" }
    assert.is_nil(ok)
    assert.matches('plugin "PodLifeTime" is already registered by .*policies/pod_lifetime%.lua', msg)
  end)

  it("reports an error at load time with its line", function()
    local ok, msg = check_dir{ ["boom.lua"] = "local x = 1\nerror('no config')\n" }
    assert.is_nil(ok)
    assert.matches("boom%.lua:2: no config", msg)
  end)

  it("skips files that start with . or _ (ConfigMap ..data links, helpers)", function()
    local ok = check_dir{ ["_helper.lua"] = "return 1\n", ["..2026_01_01.lua"] = "return 2\n" }
    assert.is_true(ok)
  end)

  it("takes the changes a plugin reacts to, and refuses ones ebb does not report", function()
    assert.is_true(check_dir{ ["t.lua"] = "return { name = 'T', triggers = { 'node-taints', 'pod-added' }, "
                                          .. "deschedule = function() end }\n" })
    local ok, msg = check_dir{ ["t.lua"] = "return { name = 'T', triggers = { 'node-taints', 'node-taint' }, "
                                           .. "deschedule = function() end }\n" }
    assert.is_nil(ok)
    assert.matches('t%.lua: triggers: triggers%[2%]: "node%-taint" is not a change ebb reports %(one of: '
                   .. 'node%-added, node%-labels, node%-taints, node%-unschedulable, node%-ready, pod%-added, '
                   .. 'pod%-updated%)', msg)
    ok, msg = check_dir{ ["t.lua"] = "return { name = 'T', triggers = 'node-taints', deschedule = function() end }\n" }
    assert.is_nil(ok)
    assert.matches("`triggers` must be a list", msg)
    ok, msg = check_dir{ ["t.lua"] = "return { name = 'T', triggers = { 'node-labels' }, "
                                     .. "filter = function() return true end }\n" }
    assert.is_nil(ok)
    assert.matches("`triggers` needs a deschedule or balance function", msg)
  end)
end)
