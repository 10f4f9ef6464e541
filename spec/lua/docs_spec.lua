-- Every sample of docs/writing-strategies.md runs: the files it shows
-- (```lua file=... / ```yaml file=...) are written into a scratch directory
-- laid out as the guide says, with spec/fixtures/docs-cluster.json as the
-- recorded cluster, and every command of a ```console block runs there and
-- must succeed; a ```text block right after one is output it must print.
local S = require("spec.integration.serve_harness")
local shell = require("spec.shell")
local h = require("spec.helpers")

local DOC = "docs/writing-strategies.md"
local ROOT = shell.cwd()
local EBB = S.EBB:sub(1, 1) == "/" and S.EBB or (ROOT .. "/" .. S.EBB)

describe("docs/writing-strategies.md", function()
  local doc = S.read(DOC)
  local all = h.code_blocks(assert(doc, DOC))
  local dir

  setup(function()
    dir = S.tmpdir()
    assert(os.execute("mkdir -p " .. S.shq(dir .. "/strategies/testdata")))
    assert(os.execute("cp spec/fixtures/docs-cluster.json " .. S.shq(dir .. "/strategies/testdata/cluster.json")))
    for _, b in ipairs(all) do
      if b.file then
        S.write(dir .. "/" .. b.file, b.body)
      end
    end
  end)
  teardown(function() S.rmdir(dir) end)

  it("gives every Lua and YAML sample a file, so that it is run", function()
    local files = 0
    for _, b in ipairs(all) do
      if b.lang == "lua" or b.lang == "yaml" then
        assert.is_not_nil(b.file, "a sample without file=:\n" .. b.body)
        files = files + 1
      end
      assert.is_true(b.lang == "lua" or b.lang == "yaml" or b.lang == "console" or b.lang == "text",
        "a sample of an unexpected kind: " .. b.lang)
    end
    assert.equal(3, files)
  end)

  -- the commands, in order, each with the output the guide shows
  local n = 0
  for i, b in ipairs(all) do
    if b.lang == "console" then
      for cmd in b.body:gmatch("%$ ([^\n]+)") do
        n = n + 1
        local expected = all[i + 1] and all[i + 1].lang == "text" and all[i + 1].body
        local tool = cmd:match("^(%S+)")
        it(string.format("runs `%s`", cmd), function()
          if tool ~= "ebb" and not shell.have(tool) then
            pending(tool .. " is not installed")
            return
          end
          local line = cmd
          if tool == "ebb" then line = S.shq(EBB) .. cmd:sub(4) end
          local _, out = shell.sh(string.format("cd %s && EBB_HOME=%s %s 2>&1; echo \"exit=$?\"",
            S.shq(dir), S.shq(ROOT), line))
          assert.matches("exit=0\n$", out, 1, cmd .. "\n" .. out)
          if expected then
            for want in expected:gmatch("[^\n]+") do
              assert.is_truthy(out:find(want, 1, true), "missing `" .. want .. "` in:\n" .. out)
            end
          end
          if tool == "kubectl" then
            assert.matches("name: ebb%-strategies", out)
            assert.matches("maintenance_drain%.lua: |", out)
          end
        end)
      end
    end
  end

  it("has commands to run", function()
    assert.is_true(n >= 4)
  end)

  it("shows a failing strategy test as a failure", function()
    -- the guide's test file is a real test: break one expectation
    local text = assert(S.read(dir .. "/strategies/maintenance_drain_test.yaml"))
    local broken = text:gsub("maxPerNode: 2", "maxPerNode: 3", 1)
    os.execute("mkdir -p " .. S.shq(dir .. "/broken/testdata"))
    os.execute("cp " .. S.shq(dir .. "/strategies/maintenance_drain.lua") .. " " .. S.shq(dir .. "/broken/"))
    os.execute("cp " .. S.shq(dir .. "/strategies/testdata/cluster.json") .. " " .. S.shq(dir .. "/broken/testdata/"))
    S.write(dir .. "/broken/maintenance_drain_test.yaml", broken)
    local _, out = shell.sh(string.format("cd %s && EBB_HOME=%s %s test broken 2>&1; echo \"exit=$?\"",
      S.shq(dir), S.shq(ROOT), S.shq(EBB)))
    assert.matches("exit=1\n$", out)
    assert.matches("FAIL  maintenance_drain/stops at maxPerNode", out)
    assert.matches("4 passed, 1 failed", out)
  end)
end)
