-- docs/loopguard.md stays true: its example runs (the policies it shows,
-- the commands it shows, in a scratch directory with the snapshot it names)
-- and prints what the page says; the defaults it states are the code's.
local S = require("spec.integration.serve_harness")
local h = require("spec.helpers")

local DOC = "docs/loopguard.md"

describe("docs/loopguard.md", function()
  local doc = assert(S.read(DOC), DOC)
  local all = h.code_blocks(doc)

  it("prints what the example says, without and with LoopGuard", function()
    assert.equal(2, h.run_doc_examples(all, "spec/fixtures/loop-lnu.json"))
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
