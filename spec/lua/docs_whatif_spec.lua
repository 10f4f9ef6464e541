-- docs/what-if.md stays true: its worked example runs (the policy it shows,
-- the command it shows, in a scratch directory with the snapshot it names)
-- and prints what the page says, and the picture it shows is there.
local S = require("spec.integration.serve_harness")
local h = require("spec.helpers")

local DOC = "docs/what-if.md"

describe("docs/what-if.md", function()
  local doc = assert(S.read(DOC), DOC)
  local all = h.code_blocks(doc)

  it("prints what the worked example says, with the policy it shows", function()
    assert.equal(1, h.run_doc_examples(all, "spec/fixtures/whatif-balance.json"))
  end)

  it("shows a picture that is in docs/", function()
    local png = assert(doc:match("!%[[^%]]*%]%(([^)]+%.png)%)"), "an image")
    local data = assert(S.read("docs/" .. png), png)
    assert.equal("\137PNG", data:sub(1, 4))
  end)
end)
