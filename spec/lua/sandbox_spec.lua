-- Every sandbox rule, shown failing: a script that breaks one fails its own
-- plugin for the cycle, is reported in the plan, and the others still run.
describe("the Lua sandbox", function()
  local h = require("spec.helpers")
  local SNAP = "spec/fixtures/kubectl-list.json"

  -- A plugin whose deschedule body is `body`; a well-behaved PodLifeTime
  -- runs after it in the same profile.
  local function run(body, o)
    o = o or {}
    local dir = h.plugin_dir{ ["bad.lua"] = [[
      local ebb = require("ebb")
      return { name = "Bad", deschedule = function(ctx, nodes)
      ]] .. body .. [[
      end }
    ]] }
    local plan = h.simulate{
      snapshot = SNAP, policy_dirs = { dir },
      plugins = { { name = "Bad" }, { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } } },
      time_budget_ms = o.budget or 300, mem_limit = o.mem,
    }
    h.rmdir(dir)
    assert.equal(1, #plan.errors, "one plugin error expected")
    assert.equal("Bad", plan.errors[1].plugin)
    -- the other plugin was not affected
    assert.is_true(#plan:pods() > 0)
    for _, e in ipairs(plan.evictions) do assert.equal("PodLifeTime", e.plugin) end
    return plan.errors[1].message
  end

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
    ]], { mem = 8 << 20 })
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
end)
