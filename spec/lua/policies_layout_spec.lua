-- The built-in strategies share helper modules, never each other: a file of
-- policies/ that returns a plugin requires only the ebb library and helpers
-- (files starting with "_", which the registry does not take for plugins).
describe("policies/", function()
  local S = require("spec.shell")

  local function files()
    local out = {}
    local p = assert(io.popen("ls policies"))
    for name in p:lines() do
      if name:match("%.lua$") then out[#out + 1] = name end
    end
    p:close()
    return out
  end

  it("has plugins that require the ebb library and helpers only", function()
    local plugins = 0
    for _, name in ipairs(files()) do
      local src = assert(S.read("policies/" .. name))
      for mod in src:gmatch('require%(%s*"([^"]+)"%s*%)') do
        local ok = mod == "ebb" or mod:match("^ebb%.") or mod:match("^_")
        assert.is_truthy(ok, name .. " requires " .. mod .. ", not a helper module")
      end
      if not name:match("^_") then plugins = plugins + 1 end
    end
    assert.is_true(plugins >= 14)
  end)

  it("has helpers that are not plugins", function()
    local h = require("spec.helpers")
    for _, name in ipairs(files()) do
      if name:match("^_") then
        local src = assert(S.read("policies/" .. name))
        assert.is_nil(src:match('\n%s*name%s*=%s*"'), name .. " names a plugin")
      end
    end
    -- and the plugins that use one still load and run
    local plan = h.simulate{ snapshot = "spec/fixtures/utilization.json", plugin = "HighNodeUtilization",
                             ext = "balance", args = { thresholds = { cpu = 20 } } }
    assert.same({}, plan.errors)
  end)
end)
