-- A misspelled plugin name gets the error that names the file, the line and
-- the field, and "did you mean" with the registered plugin (built-in or a
-- script of --policy-dir) it nearly matches; a name that matches nothing
-- closely gets no guess. Every enabled plugin of the bundled deployment
-- policy, every kind of slip, every place a name is written.
describe("plugin name typos", function()
  local S = require("spec.shell")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
  local POLICY = "deploy/base/policy.yaml"
  local DIR = "deploy/base/strategies"
  local text = assert(S.read(POLICY))

  local NAMES = {
    "RemoveDuplicates", "RemovePodsHavingTooManyRestarts", "RemovePodsViolatingNodeAffinity",
    "RemovePodsViolatingNodeTaints", "RemovePodsViolatingInterPodAntiAffinity",
    "RemovePodsViolatingTopologySpreadConstraint", "LowNodeUtilization",
    "AnnotatedPodLifeTime",   -- a script plugin from the directory
  }

  local SLIPS = {
    { "a letter dropped", function(n) return n:sub(1, 3) .. n:sub(5) end },
    { "neighbours swapped", function(n) return n:sub(1, 4) .. n:sub(6, 6) .. n:sub(5, 5) .. n:sub(7) end },
    { "a letter doubled", function(n) return n:sub(1, 5) .. n:sub(5) end },
    { "a letter wrong", function(n) return n:sub(1, -2) .. "z" end },
    { "case", function(n) return n:sub(1, 1):lower() .. n:sub(2, -5) .. n:sub(-4):upper() end },
    { "a plural dropped or added", function(n) return n:sub(-1) == "s" and n:sub(1, -2) or n .. "s" end },
  }

  local function line_of(t, pat)
    local n = 1
    for l in (t .. "\n"):gmatch("([^\n]*)\n") do
      if l:match(pat) then return n end
      n = n + 1
    end
  end

  local function esc(s) return (s:gsub("%p", "%%%0")) end

  local function check(policy_text)
    local tmp = S.tmpdir()
    S.write(tmp .. "/policy.yaml", policy_text)
    local code, out, err = S.run(string.format("%s check --policy %s --policy-dir %s",
      S.shq(EBB), S.shq(tmp .. "/policy.yaml"), S.shq(DIR)))
    S.rmdir(tmp)
    return code, out .. (err or ""), tmp .. "/policy.yaml"
  end

  for _, name in ipairs(NAMES) do
    for _, slip in ipairs(SLIPS) do
      local typo = slip[2](name)
      -- where the name is misspelled: everywhere (no plugin of that name),
      -- only where enabled, only in pluginConfig
      local WHERE = {
        { "everywhere", { "name: " .. name .. "\n", "- " .. name .. "\n" }, "- " .. typo, name },
        { "where enabled", { "- " .. name .. "\n" }, "- " .. typo, name },
        { "in pluginConfig", { "name: " .. name .. "\n" }, "- " .. name, typo },
      }
      for _, w in ipairs(WHERE) do
        it(string.format("%s, %s (%s), misspelled %s", name, slip[1], typo, w[1]), function()
          local bad = text
          for _, s in ipairs(w[2]) do
            local n
            bad, n = bad:gsub(esc(s), (s:gsub(esc(name), typo)))
            assert.equal(1, n, s)
          end
          local code, out, file = check(bad)
          assert.equal(2, code, out)
          local line = line_of(bad, "^%s*" .. esc(w[3]) .. "$")
          assert.matches(esc(file) .. ":" .. line .. ": profiles%[0%]%.plugins%.%a+%.enabled%[%d+%]", out)
          assert.matches('did you mean "' .. esc(w[4]) .. '"', out)
          if w[1] == "in pluginConfig" then
            assert.matches("the pluginConfig entry at line " .. line_of(bad, "name: " .. esc(typo) .. "$"), out)
          end
        end)
      end
    end
  end

  it("a misspelled pluginConfig entry that nothing enables", function()
    local bad = text:gsub("(  plugins:\n)", "  - name: PodLifeTme\n    args:\n      maxPodLifeTimeSeconds: 86400\n%1", 1)
    local code, out, file = check(bad)
    assert.equal(2, code, out)
    assert.matches(esc(file) .. ":" .. line_of(bad, "name: PodLifeTme$") .. ": profiles%[0%]%.pluginConfig%[%d+%]", out)
    assert.matches('unknown plugin "PodLifeTme" in pluginConfig; did you mean "PodLifeTime"%?', out)
  end)

  for _, far in ipairs({ "Foo", "EvictEverything", "RemovePods", "Descheduler" }) do
    it("no guess for " .. far .. ", which is near no plugin", function()
      local bad = text:gsub("name: RemoveDuplicates\n", "name: " .. far .. "\n", 1):gsub("- RemoveDuplicates\n", "- " .. far .. "\n", 1)
      local code, out = check(bad)
      assert.equal(2, code, out)
      assert.matches('non%-existing plugins: %[' .. far .. '%]', out)
      assert.not_matches("did you mean", out)
    end)
  end
  it("the guess looks at every pluginConfig entry, not the first few (70 script plugins)", function()
    local tmp = S.tmpdir()
    local cfg, en = {}, {}
    for i = 1, 70 do
      local name = string.format("Plugin%02dBalancer", i)
      S.write(string.format("%s/p%02d.lua", tmp, i), string.format(
        'return { name = "%s", deschedule = function() end }\n', name))
      cfg[#cfg + 1] = "  - name: " .. name .. "\n"
      en[#en + 1] = "        - " .. (i == 70 and "Plugin70Balancr" or name) .. "\n"
    end
    S.write(tmp .. "/policy.yaml", "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n" ..
      "profiles:\n- name: many\n  pluginConfig:\n" .. table.concat(cfg) ..
      "  plugins:\n    deschedule:\n      enabled:\n" .. table.concat(en))
    local code, out, err = S.run(string.format("%s check --policy %s --policy-dir %s",
      S.shq(EBB), S.shq(tmp .. "/policy.yaml"), S.shq(tmp)))
    S.rmdir(tmp)
    out = out .. (err or "")
    assert.equal(2, code, out)
    assert.matches('unable to find "Plugin70Balancr" plugin config', out)
    assert.matches('did you mean "Plugin70Balancer"', out)
  end)
end)
