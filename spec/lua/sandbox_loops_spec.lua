-- What runs in C where no hook fires, driven by a script: library functions
-- that loop (table.unpack over colliding keys, a pattern set as long as the
-- memory allows, warn's pieces), Lua's parser (load() from a script, the
-- engine's own loading of plugin files and modules), and the files require
-- opens. Each case runs in a child process bounded in time and memory
-- (h.bounded): a case the sandbox does not hold fails instead of hanging.
describe("the sandbox's C loops", function()
  local h = require("spec.helpers")
  local shell = require("spec.shell")
  local SNAP = "spec/fixtures/kubectl-list.json"
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"

  -- A plugin "Bad" whose deschedule runs `body` (after `top` at file load),
  -- next to a well-behaved PodLifeTime. -> Bad's one error message.
  local run = h.bad_plugin{ budget = 1000, limits = { seconds = 90 } }

  -- `ebb check` of a policy with the plugins of `files` (Bad enabled).
  local function check(files)
    local dir = h.plugin_dir(files)
    local ok, msg = h.bounded("check", {
      policy_text = h.policy{ plugins = { { name = "Bad" } } }, policy_dirs = { dir },
      time_budget_ms = 1000 }, { seconds = 90 })
    h.rmdir(dir)
    return ok, msg
  end

  -- 32,000 labels, then backward gotos to the last one up to `size` bytes:
  -- each goto looks through every label (12 s of parsing for 7.7 MB in
  -- stock Lua). `head` comes first (a chunk that returns at once).
  local function label_bomb(size, head)
    local t = { head or "" }
    for i = 1, 32000 do t[#t + 1] = "::l" .. i .. ":: do end " end
    local labels = table.concat(t)
    local g = "goto l32000 "
    return labels .. string.rep(g, (size - #labels) // #g)
  end

  -- The same, built inside the sandbox.
  local BOMB_IN_SANDBOX = [[
    local function label_bomb(size)
      local t = {}
      for i = 1, 32000 do t[#t + 1] = "::l" .. i .. ":: do end " end
      local labels = table.concat(t)
      return labels .. string.rep("goto l32000 ", (size - #labels) // 12)
    end
  ]]

  describe("library functions", function()
    it("table.unpack over integer keys that all collide: stopped in it", function()
      -- 8,192 keys, multiples of 2^13 - 1, in one chain of the hash part:
      -- each of 900,000 lookups walks it (8 s in stock Lua)
      local msg = run("return select('#', table.unpack(T, 1, 900000))", { top = [[
        local T = {}
        for i = 1, 1 << 13 do T[i * ((1 << 13) - 1)] = true end
      ]] })
      assert.matches("time budget of 1000 ms exceeded", msg)
      assert.matches("in function 'table.unpack'", msg)
    end)

    it("a pattern set of 100 MB tried on each character: stopped", function()
      -- each character reads the whole set: Lua's string.find, and ours
      -- when it looked every 1,024 characters, ran minutes
      local msg = run("return string.find(S, SET .. '*x')", { mem = 512 << 20, top = [[
        local SET = "[" .. string.rep("a", 100000000) .. "b]"
        local S = string.rep("b", 1000)
      ]] })
      assert.matches("time budget of 1000 ms exceeded", msg)
      assert.matches("in function 'string.find'", msg)
    end)

    it("string.gsub with a replacement of 20 million empty captures: stopped", function()
      -- the template is read once a match and adds nothing: 0.36 s a match,
      -- and the match looked at the budget every 340 matches
      local msg = run("return string.gsub(string.rep('a', 1000), '(x?)', T)",
        { mem = 256 << 20, top = "local T = string.rep('%1', 20000000)\n" })
      assert.matches("time budget of 1000 ms exceeded", msg)
      assert.matches("in function 'string.gsub'", msg)
    end)

    it("warn: one log line whatever the number of pieces", function()
      local dir = h.plugin_dir{ ["bad.lua"] = [[
        return { name = "Bad", deschedule = function()
          local t = {}
          for i = 1, 200000 do t[i] = "piece " .. i .. "; " end
          warn(table.unpack(t))
          warn("@on")
        end }
      ]] }
      local pol = os.tmpname()
      shell.write(pol, h.policy{ plugins = { { name = "Bad" } } })
      local code, out = shell.sh("timeout 60 " .. EBB .. " simulate --snapshot " .. SNAP .. " --policy " ..
                                 pol .. " --policy-dir " .. dir .. " --now " .. h.NOW)
      os.remove(pol)
      h.rmdir(dir)
      assert.equal(0, code, out)
      local lines = 0
      for line in out:gmatch("[^\n]+") do
        if line:find("[Bad] warning:", 1, true) then lines = lines + 1 end
      end
      assert.equal(1, lines)
      assert.matches("%[Bad%] warning: piece 1; piece 2; piece 3; ", out)
      assert.matches("%[cut%]", out)
    end)
  end)

  describe("load() from a script", function()
    it("refuses more than 64 KiB of source, at once", function()
      local msg = run(BOMB_IN_SANDBOX .. [[
        local f, e = load(label_bomb(7700000))
        error("load: " .. tostring(f) .. ", " .. tostring(e))
      ]])
      assert.matches("load: nil, chunk of 7699%d%d%d bytes: load%(%) takes at most 64 KiB of source", msg)
    end)

    it("refuses more than 64 KiB from a reader function", function()
      local msg = run(BOMB_IN_SANDBOX .. [[
        local src, at = label_bomb(7700000), 1
        local f, e = load(function()
          local piece = src:sub(at, at + (1 << 20) - 1)
          at = at + (1 << 20)
          return piece
        end)
        error("load: " .. tostring(f) .. ", " .. tostring(e))
      ]])
      assert.matches("load: nil, chunk larger than 64 KiB: load%(%) takes at most that much source", msg)
    end)

    it("stops the call when the budget runs out in a reader function", function()
      local msg = run([[
        local f, e = load(function() while true do end end)
        error("survived: " .. tostring(e))
      ]])
      assert.matches("time budget of 1000 ms exceeded", msg)
      assert.not_matches("survived", msg)
    end)

    it("keeps Lua's load: text only, chunk names, env, reader pieces", function()
      local msg = run([[
        local out = {}
        local function put(...) out[#out + 1] = table.concat({ ... }, "|") end
        put(load("return x + 1", "=mine", "t", { x = 41 })())
        put(select(2, load("x = = 1", "=mine")))
        put(select(2, load("\27Lua binary")))
        put(select(2, load("return 1", "b", "b")) or "mode b ignored")
        local pieces, i = { "return ", "'a'", "", "junk junk" }, 0
        put(load(function() i = i + 1 return pieces[i] end)())
        put(load(string.rep(" ", 65536 - 8) .. "return 7")())
        put(select(2, load(function() return {} end)))
        error("out: " .. table.concat(out, "\n"))
      ]])
      -- error messages keep one line: a newline in one is written \n
      msg = msg:gsub("\\n", "\n")
      assert.matches("out: 42\n", msg, 1, true)
      assert.matches("mine:1: unexpected symbol near '='", msg, 1, true)
      assert.matches("attempt to load a binary chunk (mode is 't')", msg, 1, true)
      assert.matches("\nmode b ignored\n", msg, 1, true)
      -- an empty piece ends the chunk, as in Lua
      assert.matches("\na\n", msg, 1, true)
      assert.matches("\n7\n", msg, 1, true)
      assert.matches("reader function must return a string", msg, 1, true)
    end)
  end)

  describe("the engine's loading of plugin files and modules", function()
    it("stops parsing a plugin file at the budget", function()
      local ok, msg = check{ ["bad.lua"] = label_bomb(7700000,
        "do return { name = 'Bad', deschedule = function() end } end ") }
      assert.is_nil(ok)
      assert.matches("bad%.lua: parsing 7%d+ bytes took longer than the time budget of 1000 ms", msg)
    end)

    it("stops parsing a module at the budget, in require", function()
      local ok, msg = check{
        ["bad.lua"] = "local b = require('bomb')\nreturn { name = 'Bad', deschedule = function() end }\n",
        ["bomb.lua"] = label_bomb(7700000, "do return {} end "),
      }
      assert.is_nil(ok)
      assert.matches("bad%.lua:1: time budget of 1000 ms exceeded", msg)
      assert.matches("in function 'require'", msg)
    end)

    it("refuses a chunk with more distinct constants than one parse step may rehash", function()
      -- 65,537 integer constants, all multiples of 2^17 - 1: the parser's
      -- table of them rebuilt in one step, 5 s in stock Lua
      local t = { "do return { name = 'Bad', deschedule = function() end } end local x\n" }
      for i = 1, (1 << 16) + 1 do t[#t + 1] = "x = " .. i * ((1 << 17) - 1) .. "\n" end
      local ok, msg = check{ ["bad.lua"] = table.concat(t) }
      assert.is_nil(ok)
      assert.matches("bad%.lua: too many distinct names, strings and numbers in one chunk %(at most 32768%)", msg)
    end)

    it("loads a chunk with many distinct constants below that", function()
      local t = { "local x\n" }
      for i = 1, 20000 do t[#t + 1] = "x = " .. i * 7919 .. "\n" end
      t[#t + 1] = "return { name = 'Bad', deschedule = function() end }\n"
      local ok, msg = check{ ["bad.lua"] = table.concat(t) }
      assert.truthy(ok, msg)
    end)
  end)

  describe("require", function()
    local function fifo_check(rel)
      local dir = h.plugin_dir{ ["bad.lua"] = "local x = require('helper')\n" ..
                                              "return { name = 'Bad', deschedule = function() end }\n" }
      assert(os.execute("mkdir -p '" .. dir .. "/helper' && mkfifo '" .. dir .. "/" .. rel .. "'"))
      local ok, msg = h.bounded("check", {
        policy_text = h.policy{ plugins = { { name = "Bad" } } }, policy_dirs = { dir },
        time_budget_ms = 1000 }, { seconds = 20 })
      h.rmdir(dir)
      return ok, msg
    end

    it("refuses a module that is a FIFO, at once", function()
      local ok, msg = fifo_check("helper/init.lua")
      assert.is_nil(ok)
      assert.matches("cannot read module 'helper' from .*/helper/init%.lua: a FIFO, not a file", msg)
      ok, msg = fifo_check("helper.lua")
      assert.is_nil(ok)
      assert.matches("cannot read module 'helper' from .*/helper%.lua: a FIFO, not a file", msg)
    end)

    it("refuses a module that is a directory", function()
      local dir = h.plugin_dir{ ["bad.lua"] = "local x = require('helper')\n" ..
                                              "return { name = 'Bad', deschedule = function() end }\n" }
      assert(os.execute("mkdir -p '" .. dir .. "/helper.lua'"))
      local ok, msg = h.bounded("check", {
        policy_text = h.policy{ plugins = { { name = "Bad" } } }, policy_dirs = { dir },
        time_budget_ms = 1000 }, { seconds = 20 })
      h.rmdir(dir)
      assert.is_nil(ok)
      assert.matches("cannot read module 'helper' from .*/helper%.lua: a directory, not a file", msg)
    end)
  end)
end)
