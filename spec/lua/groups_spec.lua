-- ebb.duplicates() as a script sees it: the default answer carries what a
-- strategy acts on, `details` adds the images, the feasible node names and
-- the nodes with nothing to evict. Runs on spec/fixtures/duplicates.json.
describe("ebb.duplicates", function()
  local h = require("spec.helpers")
  local SNAP = "spec/fixtures/duplicates.json"
  local OPEN = { podProtections = { defaultDisabled = h.array{ "PodsWithLocalStorage",
    "SystemCriticalPods", "FailedBarePods", "DaemonSetPods" } } }

  -- The plugin serializes the groups of namespace shop into its failure
  -- message: one line per group, fields separated by ';'.
  local function groups(opts_src)
    local dir = h.plugin_dir{ ["g.lua"] = [[
      local ebb = require("ebb")
      return { name = "Groups", balance = function(ctx, nodes)
        local pods = ebb.pods(nodes, { namespaces = { include = { "shop" } } })
        local out = {}
        for _, g in ipairs(ebb.duplicates(pods, nodes, ]] .. opts_src .. [[)) do
          local ns = {}
          for _, n in ipairs(g.nodes) do
            ns[#ns + 1] = n.node .. "=" .. n.count .. "/" .. #n.evict
          end
          out[#out + 1] = table.concat({ g.kind, g.name, g.occurrences, g.feasible, g.upper_avg,
            g.images and table.concat(g.images, ",") or "-",
            g.feasible_nodes and table.concat(g.feasible_nodes, ",") or "-",
            table.concat(ns, ",") }, ";")
        end
        return false, "groups:" .. table.concat(out, "|")
      end }
    ]] }
    local plan = h.simulate{ snapshot = SNAP, policy_dirs = { dir }, evictor = OPEN,
      plugins = { { name = "Groups", ext = "balance" } },
      top = { nodeSelector = "eks.amazonaws.com/nodegroup=general" } }
    h.rmdir(dir)
    assert.equal(1, #plan.errors)
    local list = plan.errors[1].message:match("^groups:(.*)$")
    assert.is_not_nil(list, plan.errors[1].message)
    local out = {}
    for line in list:gmatch("[^|]+") do
      local f = {}
      for v in (line .. ";"):gmatch("([^;]*);") do f[#f + 1] = v end
      out[f[1] .. "/" .. f[2]] = { occurrences = tonumber(f[3]), feasible = tonumber(f[4]),
        upper_avg = tonumber(f[5]), images = f[6], feasible_nodes = f[7], nodes = f[8] }
    end
    return out
  end

  it("answers counts and only the nodes with evictions by default", function()
    local g = groups("{}")
    -- web (5,3,1) over general-a/b/c-1: 9 pods, 3 feasible nodes, keep 3
    local web = g["ReplicaSet/web-5d8f9c7b4"]
    assert.is_not_nil(web)
    assert.same({ occurrences = 9, feasible = 3, upper_avg = 3, images = "-", feasible_nodes = "-",
                  nodes = "general-a-1=5/2" }, web)
  end)

  it("adds images, feasible node names and every node with duplicates on request", function()
    local web = groups("{ details = true }")["ReplicaSet/web-5d8f9c7b4"]
    assert.equal(3, web.feasible)
    assert.equal("general-a-1,general-b-1,general-c-1", web.feasible_nodes)
    assert.matches("^[^,]+", web.images)
    assert.equal("general-a-1=5/2,general-b-1=3/0", web.nodes)
  end)
end)
