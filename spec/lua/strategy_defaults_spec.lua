-- A field left out of a policy takes its schema's default, and the plugin
-- sees the default in the same form as a written value (seconds for a
-- duration, an integer for a quantity). A default the schema cannot accept
-- is the script's error, raised when the script is loaded, never a Lua
-- error in the middle of a cycle.
describe("args defaults", function()
  local h = require("spec.helpers")
  local S = require("spec.shell")

  -- kind, schema expression, the value the plugin must see (nil: the
  -- declaration must be refused, and the message must match `refused`)
  local ROWS = {
    { "duration written", 'A.duration({ default = "1h" })', 3600 },
    { "duration written, compound", 'A.duration({ default = "1h30m" })', 5400 },
    { "duration as seconds", "A.duration({ default = 300 })", 300 },
    { "duration zero", 'A.duration({ default = "0s" })', 0 },
    { "quantity written", 'A.quantity("memory", { default = "1Gi" })', 1073741824 },
    { "quantity cpu written", 'A.quantity("cpu", { default = "250m" })', 250 },
    { "quantity as integer", 'A.quantity("cpu", { default = 500 })', 500 },
    { "uint", "A.uint({ default = 7 })", 7 },
    { "int32", "A.int32({ default = -3 })", -3 },
    { "bool", "A.bool({ default = true })", true },
    { "string", 'A.string({ default = "x" })', "x" },
    { "string in enum", 'A.string({ default = "a", enum = { "a", "b" } })', "a" },
    { "uint given a string", 'A.uint({ default = "5" })', nil, "default: expected an integer, got a string" },
    { "uint below its min", "A.uint({ default = 0, min = 1 })", nil, "default: 0 is out of range" },
    { "bool given a string", 'A.bool({ default = "yes" })', nil, "default: expected a boolean, got a string" },
    { "string outside enum", 'A.string({ default = "c", enum = { "a", "b" } })', nil,
      'default: "c" is not one of a, b' },
    { "duration not a duration", 'A.duration({ default = "soon" })', nil, 'default: "soon" is not a duration' },
    { "duration given a bool", "A.duration({ default = false })", nil, "default: expected a duration string" },
  }

  local POLICY = h.policy{ plugins = { { name = "Defaults" } } }

  for _, row in ipairs(ROWS) do
    it(row[1] .. ": " .. row[2], function()
      local want = row[3]
      local lit = type(want) == "string" and string.format("%q", want) or tostring(want)
      local dir = h.plugin_dir{ ["defaults.lua"] = string.format([[
        local A = require("ebb.args")
        return {
          name = "Defaults",
          args = { f = %s },
          validate = function(a)
            if a.f ~= %s or math.type(a.f) ~= math.type(%s) then
              return nil, "the plugin sees " .. tostring(a.f), "f"
            end
            return true
          end,
          deschedule = function() end,
        }
      ]], row[2], lit, lit) }
      local ok, msg = h.check{ policy_text = POLICY, policy_dirs = { dir } }
      h.rmdir(dir)
      if want ~= nil then
        assert.is_truthy(ok, msg)
      else
        assert.is_nil(ok)
        assert.matches("defaults%.lua", msg)
        assert.matches(row[4], msg, 1, true)
        assert.not_matches("attempt to", msg)
      end
    end)
  end

  -- Every bundled strategy, enabled with no args at all on a realistic
  -- cluster: it runs, or its args are refused with a message naming the
  -- field; it never fails with a Lua error.
  local function scripts()
    local out = {}
    for _, dir in ipairs({ "policies", "deploy/base/strategies" }) do
      local p = assert(io.popen("ls " .. dir))
      for name in p:lines() do
        if name:match("%.lua$") and not name:match("^_") then
          local src = assert(S.read(dir .. "/" .. name))
          local plugin = src:match('name%s*=%s*"(%u%w+)"')
          local ext = src:match("function M%.(deschedule)%(") or src:match("function M%.(balance)%(")
          if plugin and ext then
            out[#out + 1] = { dir = dir, file = name, plugin = plugin, ext = ext }
          end
        end
      end
      p:close()
    end
    return out
  end

  for _, s in ipairs(scripts()) do
    it(s.plugin .. " (" .. s.dir .. "/" .. s.file .. ") with no args", function()
      local plan, msg = h.try{
        snapshot = "spec/fixtures/deploy-cluster.json",
        plugin = s.plugin, ext = s.ext,
        policy_dirs = s.dir ~= "policies" and { s.dir } or nil,
      }
      if plan == nil then
        msg = tostring(msg)
        assert.not_matches("attempt to", msg)
        assert.not_matches("traceback", msg)
        assert.matches("args", msg)
      end
    end)
  end

  it("AnnotatedPodLifeTime with minLifetime left out acts as with its default, 1h", function()
    local function run(args)
      return h.simulate{
        snapshot = "spec/fixtures/deploy-cluster.json",
        plugin = "AnnotatedPodLifeTime", args = args,
        policy_dirs = { "deploy/base/strategies" },
        now = "2026-11-22T12:00:00Z",
      }
    end
    local with = run({ minLifetime = "1h" })
    local without = run(nil)
    assert.is_true(#without:pods() > 0)
    assert.same(with:pods(), without:pods())
    assert.same(with:note_messages(), without:note_messages())
  end)
end)
