-- docs/what-if.md stays true: its worked example runs (the policy it shows,
-- the command it shows, in a scratch directory with the snapshot it names)
-- and prints what the page says, and the picture it shows is there.
local S = require("spec.integration.serve_harness")
local shell = require("spec.shell")
local h = require("spec.helpers")

local DOC = "docs/what-if.md"
local EBB = S.EBB:sub(1, 1) == "/" and S.EBB or (shell.cwd() .. "/" .. S.EBB)

-- trailing blanks of table columns are not part of what the page promises
local function trim(text)
  return (text:gsub("[ \t]+\n", "\n"):gsub("\n+$", "\n"))
end

describe("docs/what-if.md", function()
  local doc = assert(S.read(DOC), DOC)
  local all = h.code_blocks(doc)

  it("prints what the worked example says, with the policy it shows", function()
    local dir = S.tmpdir()
    local ran = 0
    assert(os.execute("cp spec/fixtures/whatif-balance.json " .. S.shq(dir)))
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
    assert.equal(1, ran)
  end)

  it("shows a picture that is in docs/", function()
    local png = assert(doc:match("!%[[^%]]*%]%(([^)]+%.png)%)"), "an image")
    local data = assert(S.read("docs/" .. png), png)
    assert.equal("\137PNG", data:sub(1, 4))
  end)
end)
