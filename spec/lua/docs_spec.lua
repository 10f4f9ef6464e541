-- Every sample of docs/writing-strategies.md runs: the files it shows
-- (```lua file=... / ```yaml file=...) are written into a scratch directory
-- laid out as the guide says, with spec/fixtures/docs-cluster.json as the
-- recorded cluster, and every command of a ```console block runs there and
-- must succeed; a ```text block right after one is output it must print.
local S = require("spec.integration.serve_harness")

local DOC = "docs/writing-strategies.md"
local ROOT = (function()
  local p = assert(io.popen("pwd"))
  local d = p:read("l")
  p:close()
  return d
end)()
local EBB = S.EBB:sub(1, 1) == "/" and S.EBB or (ROOT .. "/" .. S.EBB)

local function blocks(text)
  local out = {}
  for info, body in text:gmatch("\n```([^\n]*)\n(.-)\n```") do
    local lang, attrs = info:match("^(%S*)%s*(.*)$")
    out[#out + 1] = { lang = lang, file = attrs:match("file=(%S+)"), body = body .. "\n" }
  end
  return out
end

local function have(cmd)
  return os.execute("command -v " .. cmd .. " >/dev/null 2>&1") == true
end

describe("docs/writing-strategies.md", function()
  local doc = S.read(DOC)
  local all = blocks(assert(doc, DOC))
  local dir

  setup(function()
    dir = S.tmpdir()
    assert(os.execute("mkdir -p " .. S.shq(dir .. "/strategies/testdata")))
    assert(os.execute("cp spec/fixtures/docs-cluster.json " .. S.shq(dir .. "/strategies/testdata/cluster.json")))
    for _, b in ipairs(all) do
      if b.file then
        local f = assert(io.open(dir .. "/" .. b.file, "wb"))
        f:write(b.body)
        f:close()
      end
    end
  end)
  teardown(function() os.execute("rm -rf " .. S.shq(dir)) end)

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
          if tool ~= "ebb" and not have(tool) then
            pending(tool .. " is not installed")
            return
          end
          local line = cmd
          if tool == "ebb" then line = S.shq(EBB) .. cmd:sub(4) end
          local p = assert(io.popen(string.format("cd %s && EBB_HOME=%s %s 2>&1; echo \"exit=$?\"",
            S.shq(dir), S.shq(ROOT), line)))
          local out = p:read("a")
          p:close()
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
    local f = assert(io.open(dir .. "/strategies/maintenance_drain_test.yaml", "rb"))
    local text = f:read("a")
    f:close()
    local broken = text:gsub("maxPerNode: 2", "maxPerNode: 3", 1)
    os.execute("mkdir -p " .. S.shq(dir .. "/broken/testdata"))
    os.execute("cp " .. S.shq(dir .. "/strategies/maintenance_drain.lua") .. " " .. S.shq(dir .. "/broken/"))
    os.execute("cp " .. S.shq(dir .. "/strategies/testdata/cluster.json") .. " " .. S.shq(dir .. "/broken/testdata/"))
    f = assert(io.open(dir .. "/broken/maintenance_drain_test.yaml", "wb"))
    f:write(broken)
    f:close()
    local p = assert(io.popen(string.format("cd %s && EBB_HOME=%s %s test broken 2>&1; echo \"exit=$?\"",
      S.shq(dir), S.shq(ROOT), S.shq(EBB))))
    local out = p:read("a")
    p:close()
    assert.matches("exit=1\n$", out)
    assert.matches("FAIL  maintenance_drain/stops at maxPerNode", out)
    assert.matches("4 passed, 1 failed", out)
  end)
end)
