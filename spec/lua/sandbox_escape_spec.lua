-- Every way a script could keep running past its time budget: message
-- handlers, finalizers, metamethods, coroutines, library functions in C
-- and the engine reading a plugin's values. Each case runs in a child
-- process bounded in time and memory (h.bounded), so a case the sandbox
-- does not hold fails instead of hanging the suite. In each, the hostile
-- plugin fails for the cycle and a well-behaved PodLifeTime still runs.
describe("the time budget", function()
  local h = require("spec.helpers")
  local LOOP = "function() while true do end end"

  local run = h.bad_plugin{ budget = 1000, limits = { seconds = 90 }, others_only = true }

  local function stopped(body, o)
    local msg = run(body, o)
    assert.matches("time budget of " .. ((o or {}).budget or 1000) .. " ms exceeded", msg)
    return msg
  end

  describe("stops message handlers", function()
    it("that loop after the budget stopped the function", function()
      stopped("xpcall(" .. LOOP .. ", " .. LOOP .. ")")
    end)

    it("that loop on the script's own error", function()
      stopped("xpcall(error, " .. LOOP .. ")")
    end)

    it("that raise again and again", function()
      stopped([[
        local function h(m) error(m) end
        while true do xpcall(function() while true do end end, h) end
      ]])
    end)
  end)

  describe("has no finalizers", function()
    it("refuses a metatable with __gc, naming the line", function()
      local msg = run("for i = 1, 1e6 do setmetatable({}, { __gc = " .. LOOP .. " }) end")
      assert.matches("bad%.lua:3: .*__gc", msg)
    end)

    it("hides the metatables of the engine's objects", function()
      local msg = run([[
        local l = ebb.pods(nodes, { phase = "all" })
        local mt = getmetatable(l)
        mt.__gc = ]] .. LOOP .. [[
        for i = 1, 1e6 do ebb.pods(nodes, { phase = "all" }) end
      ]])
      assert.matches("nil value", msg)
    end)

    it("refuses one made at file load, in ebb check", function()
      local dir = h.plugin_dir{ ["fin.lua"] = "setmetatable({}, { __gc = " .. LOOP .. " })\n" ..
                                              "return { name = 'Fin', deschedule = function() end }\n" }
      local ok, msg = h.bounded("check", {
        policy_text = h.policy{ plugins = { { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } } } },
        policy_dirs = { dir }, time_budget_ms = 1000 }, { seconds = 90 })
      h.rmdir(dir)
      assert.is_nil(ok)
      assert.matches("fin%.lua:1: .*__gc", msg)
    end)
  end)

  describe("stops metamethods", function()
    it("__tostring called from C", function()
      stopped("tostring(setmetatable({}, { __tostring = " .. LOOP .. " }))")
    end)

    it("__index called from a library function", function()
      stopped("table.concat(setmetatable({}, { __index = " .. LOOP .. " }), ',', 1, 2)")
    end)

    it("__close at the end of a block and while an error unwinds", function()
      stopped("do local x <close> = setmetatable({}, { __close = " .. LOOP .. " }) end")
      stopped([[
        pcall(function()
          local x <close> = setmetatable({}, { __close = ]] .. LOOP .. [[ })
          error("boom")
        end)
        while true do end
      ]])
    end)
  end)

  describe("stops coroutines", function()
    it("closing one whose __close loops", function()
      stopped([[
        local co = coroutine.create(function()
          local x <close> = setmetatable({}, { __close = ]] .. LOOP .. [[ })
          coroutine.yield()
        end)
        coroutine.resume(co)
        coroutine.close(co)
      ]])
    end)

    it("a wrapped one that fails with a __close that loops", function()
      stopped([[
        local f = coroutine.wrap(function()
          local x <close> = setmetatable({}, { __close = ]] .. LOOP .. [[ })
          coroutine.yield()
          error("boom")
        end)
        f()
        pcall(f)
      ]])
    end)

    it("a yield with no coroutine to go to, past a __close that loops", function()
      local msg = run([[
        local x <close> = setmetatable({}, { __close = ]] .. LOOP .. [[ })
        coroutine.yield()
      ]])
      assert.matches("coroutine.yield outside a coroutine", msg)
    end)

    it("one that resumes itself through pcall", function()
      stopped([[
        local co
        co = coroutine.wrap(function() while true do pcall(coroutine.yield) end end)
        while true do pcall(co) end
      ]])
    end)
  end)

  describe("stops library functions in C", function()
    local S = "local s = string.rep('a', 300000) "

    it("pattern matching that backtracks", function()
      stopped(S .. "string.find(s, '.-.-.-b')")
      stopped(S .. "string.match(s, '.-.-.-b')")
      stopped(S .. "string.gsub(s, '.-.-.-b', '')")
      stopped(S .. "for x in string.gmatch(s, '.-.-.-b') do end")
      stopped(S .. "s:find('(a*)*b')")
    end)

    it("string.rep of nothing, many times, at once", function()
      assert.matches("bad%.lua:3: nothing", run("error(string.rep('', math.maxinteger) .. 'nothing')"))
      assert.matches("bad%.lua:3: nothing", run("error(string.rep('', 1e15, '') .. 'nothing')"))
    end)

    it("table.concat of values a C function makes", function()
      stopped("table.concat(setmetatable({}, { __index = table.concat }), '', 1, math.maxinteger)")
    end)

    it("table.move over a huge range", function()
      stopped("table.move({}, 1, math.maxinteger // 2, 1, {})")
    end)

    it("table.insert and table.remove on a table that says it is huge", function()
      local T = "setmetatable({}, { __len = function() return math.maxinteger - 1 end })"
      stopped("table.insert(" .. T .. ", 1, 'x')")
      stopped("table.remove(" .. T .. ", 1)")
    end)

    it("table.sort of a huge table made by C functions", function()
      local T = "setmetatable({}, { __len = function() return %s end, __index = rawlen, __newindex = rawequal })"
      -- the elements are copied out first: more than the cap holds fails at once
      assert.matches("memory limit of 64 MiB exceeded", run("table.sort(" .. T:format("(1 << 31) - 2") .. ")"))
      stopped("table.sort(" .. T:format("1 << 22") .. ", function(a, b) return a < b end)", { mem = 512 << 20 })
    end)

    it("string.format over a long format", function()
      -- how soon it stops is measured by spec/bench/budget_escape
      stopped("while true do string.format(F) end", { top = "local F = string.rep('%%', 1 << 20)\n" })
    end)
  end)

  describe("stops the engine's own reads of a plugin's values", function()
    local POLICY = h.policy{ plugins = { { name = "Lazy" } } }

    local function check(src)
      local dir = h.plugin_dir{ ["lazy.lua"] = src }
      local ok, msg = h.bounded("check", { policy_text = POLICY, policy_dirs = { dir }, time_budget_ms = 1000 },
        { seconds = 90 })
      h.rmdir(dir)
      return ok, msg
    end

    it("a plugin table whose __index loops: its fields are read as they are", function()
      local ok, msg = check("return setmetatable({ name = 'Lazy' }, { __index = " .. LOOP .. " })\n")
      assert.is_nil(ok)
      assert.matches("lazy%.lua: the plugin table has none of deschedule", msg)
    end)

    it("a module whose fields the engine reads, tampered with", function()
      local ok, msg = check([[
        local A = require("ebb.args")
        rawset(A, "decode", nil)
        setmetatable(A, { __index = ]] .. LOOP .. [[ })
        return { name = 'Lazy', deschedule = function() end }
      ]])
      assert.is_nil(ok)
      assert.matches("attempt to call a nil value", msg)
    end)

    it("a global table without require: an error, not a crash", function()
      local ok, msg = check([[
        rawset(_G, "require", nil)
        return { name = 'Lazy', deschedule = function() end }
      ]])
      assert.is_nil(ok)
      assert.matches("undeclared global 'require'", msg)
    end)
  end)
end)
