-- docs/what-if.md stays true: its worked example runs (the policy it shows,
-- the command it shows, in a scratch directory with the snapshot it names)
-- and prints what the page says, and the picture it shows is there.
local S = require("spec.integration.serve_harness")

local DOC = "docs/what-if.md"
local EBB = S.EBB:sub(1, 1) == "/" and S.EBB or (function()
  local p = assert(io.popen("pwd"))
  local d = p:read("l")
  p:close()
  return d .. "/" .. S.EBB
end)()

local function blocks(text)
  local out = {}
  for info, body in text:gmatch("\n```([^\n]*)\n(.-)\n```") do
    local lang, attrs = info:match("^(%S*)%s*(.*)$")
    out[#out + 1] = { lang = lang, file = attrs:match("file=(%S+)"), body = body .. "\n" }
  end
  return out
end

-- trailing blanks of table columns are not part of what the page promises
local function trim(text)
  return (text:gsub("[ \t]+\n", "\n"):gsub("\n+$", "\n"))
end

describe("docs/what-if.md", function()
  local doc = assert(S.read(DOC), DOC)
  local all = blocks(doc)

  it("prints what the worked example says, with the policy it shows", function()
    local dir = S.tmpdir()
    local ran = 0
    assert(os.execute("cp spec/fixtures/whatif-balance.json " .. S.shq(dir)))
    for i, b in ipairs(all) do
      if b.file then
        local f = assert(io.open(dir .. "/" .. b.file, "wb"))
        f:write(b.body)
        f:close()
      end
      if b.lang == "console" then
        local cmd = assert(b.body:match("^%$ ebb (.-)\n"), "a console block starts with $ ebb")
        local p = assert(io.popen(string.format("cd %s && %s %s 2>&1", S.shq(dir),
          S.shq(EBB), cmd)))
        local out = p:read("a")
        p:close()
        local want = all[i + 1]
        assert.equal("text", want.lang, "a console block is followed by its output")
        assert.equal(trim(want.body), trim(out))
        ran = ran + 1
      end
    end
    os.execute("rm -rf " .. S.shq(dir))
    assert.equal(1, ran)
  end)

  it("shows a picture that is in docs/", function()
    local png = assert(doc:match("!%[[^%]]*%]%(([^)]+%.png)%)"), "an image")
    local data = assert(S.read("docs/" .. png), png)
    assert.equal("\137PNG", data:sub(1, 4))
  end)
end)
