-- docs/loopguard.md stays true: its example runs (the policies it shows,
-- the commands it shows, in a scratch directory with the snapshot it names)
-- and prints what the page says; the defaults it states are the code's.
local S = require("spec.integration.serve_harness")
local shell = require("spec.shell")
local h = require("spec.helpers")

local DOC = "docs/loopguard.md"
local EBB = S.EBB:sub(1, 1) == "/" and S.EBB or (shell.cwd() .. "/" .. S.EBB)

local function trim(text)
  return (text:gsub("[ \t]+\n", "\n"):gsub("\n+$", "\n"))
end

describe("docs/loopguard.md", function()
  local doc = assert(S.read(DOC), DOC)
  local all = h.code_blocks(doc)

  it("prints what the example says, without and with LoopGuard", function()
    local dir = S.tmpdir()
    local ran = 0
    assert(os.execute("cp spec/fixtures/loop-lnu.json " .. S.shq(dir)))
    for i, b in ipairs(all) do
      if b.file then
        S.write(dir .. "/" .. b.file, b.body)
      end
      if b.lang == "console" then
        local cmd = assert(b.body:match("^%$ ebb (.-)\n"), "a console block starts with $ ebb")
        local _, out = shell.sh(string.format("cd %s && %s %s", S.shq(dir), S.shq(EBB), cmd))
        local want = all[i + 1]
        assert.equal("text", want.lang, "a console block is followed by its output")
        assert.equal(trim(want.body), trim(out))
        ran = ran + 1
      end
    end
    S.rmdir(dir)
    assert.equal(2, ran)
  end)

  it("states the defaults engine/core/loopguard.c has", function()
    local src = assert(S.read("engine/core/loopguard.c"))
    assert.matches("#define LG_COOLDOWN %(10 %* 60%)", src)
    assert.matches("#define LG_MAX_COOLDOWN %(24 %* 3600%)", src)
    assert.matches("#define LG_WINDOW %(3600%)", src)
    assert.matches("| `cooldown` | `10m` |", doc, 1, true)
    assert.matches("| `cooldownWindow` | `1h` |", doc, 1, true)
    assert.matches("| `maxCooldown` | `24h` |", doc, 1, true)
    for _, p in ipairs({ "PodLifeTime", "RemovePodsHavingTooManyRestarts", "RemoveFailedPods" }) do
      assert.matches('"' .. p .. '"', src:match("restart_default%[%] = {(.-)}"))
    end
  end)
end)
