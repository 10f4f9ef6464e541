-- What the docs say about ebb is what the code does: the guide names the
-- bundled snapshot it runs on, and the leader takeover is described with
-- the timings engine/kube/leader.c uses (no "at once").
describe("docs say what is true", function()
  local S = require("spec.shell")
  local GUIDE = assert(S.read("docs/writing-strategies.md"))
  local DEPLOY = assert(S.read("deploy/README.md"))
  local LEADER = assert(S.read("engine/kube/leader.c"))

  it("the guide names the bundled snapshot its cluster is, by path", function()
    assert.matches("spec/fixtures/docs%-cluster%.json", GUIDE)
    assert.matches("spec/fixtures/build_docs%.py", GUIDE)
    assert.is_truthy(S.read("spec/fixtures/docs-cluster.json"))
    -- and it is the snapshot the guide's samples run on
    assert.matches("cp spec/fixtures/docs%-cluster%.json", assert(S.read("spec/lua/docs_spec.lua")))
  end)

  -- the defaults leader.c falls back to, in seconds
  local function default(field)
    local v = LEADER:match("o%->" .. field .. " > 0 %? o%->" .. field .. " : (%d+)%)")
    assert.is_truthy(v, field)
    return v
  end

  for _, row in ipairs({
    { "lease duration", "lease_s" },
    { "renew deadline", "renew_deadline_s" },
    { "retry period", "retry_s" },
  }) do
    it("deploy/README.md gives the " .. row[1] .. " leader.c uses", function()
      local v = default(row[2])
      assert.is_truthy(DEPLOY:find(row[1] .. " " .. v .. " s", 1, true),
        "deploy/README.md does not say: " .. row[1] .. " " .. v .. " s")
    end)
  end

  for _, doc in ipairs({ "README.md", "deploy/README.md", "docs/writing-strategies.md" }) do
    it(doc .. " promises no takeover at once", function()
      local text = assert(S.read(doc)):gsub("%s+", " ")
      assert.is_nil(text:find("takes over %(at once"), doc)
      assert.is_nil(text:find("takes over at once", 1, true), doc)
    end)
  end
end)
