-- How C reads what a script hands it (engine/lua/lua_read.c): raw (no
-- metamethod of the script's runs), each value once, lengths bounded before
-- anything is sized from them, no NUL where a string becomes C text; and
-- what a binding makes for a script counts toward its memory cap
-- (engine/lua/lua_charge.c). Every case runs in a child process bounded in time
-- and memory (h.bounded): before these rules some of them wrote past a heap
-- block, took gigabytes under a 32 MiB cap, or evicted what a check never
-- saw.
describe("what a script hands the engine", function()
  local h = require("spec.helpers")
  local SNAP = "spec/fixtures/kubectl-list.json"

  -- Runs `body` as a deschedule plugin; returns the plan (or nil, why).
  local function run(body, o)
    o = o or {}
    local dir = h.plugin_dir{ ["probe.lua"] = [[
      local ebb = require("ebb")
      return { name = "Probe", deschedule = function(ctx, nodes)
      ]] .. body .. [[
      end }
    ]] }
    local plan, msg = h.bounded("simulate", {
      snapshot = o.snapshot or SNAP, policy_dirs = { dir },
      plugins = { { name = "Probe" } },
      time_budget_ms = o.budget or 20000, mem_limit = o.mem or 32 << 20,
    }, { seconds = o.seconds or 60, mb = o.mb or 1024 })
    h.rmdir(dir)
    assert(plan, msg)
    return plan
  end

  -- The plugin's one outcome: its error message (a plugin reports what it
  -- found by raising "out: ...").
  local function outcome(body, o)
    local plan = run(body, o)
    assert.equal(1, #plan.errors, "one plugin error expected")
    return plan.errors[1].message, plan
  end

  -- A table whose every metamethod counts its calls in `calls` and answers
  -- something new each time.
  local HOSTILE = [[
    local calls = 0
    local function hostile(raw)
      return setmetatable(raw or {}, {
        __index = function(t, k) calls = calls + 1
          return calls % 2 == 0 and { app = "web" } or setmetatable({}, getmetatable(t)) end,
        __len = function() calls = calls + 1 return calls % 2 == 0 and (1 << 61) or -1 end,
        __pairs = function(t) calls = calls + 1 return next, {}, nil end,
        __newindex = function() calls = calls + 1 end,
        __eq = function() calls = calls + 1 return true end,
        __tostring = function() calls = calls + 1 return "x" end,
      })
    end
  ]]

  describe("is read raw: no metamethod of the script's runs", function()
    -- each row: a call given hostile tables; what the engine answers does
    -- not matter here (a clean error is fine), only that it never called
    -- into them and did not crash
    local rows = {
      { "ebb.selector", "pcall(ebb.selector, hostile())" },
      { "ebb.selector matchLabels", "pcall(ebb.selector, { matchLabels = hostile() })" },
      { "ebb.selector matchExpressions", "pcall(ebb.selector, { matchExpressions = hostile() })" },
      { "ebb.selector values", [[pcall(ebb.selector, { matchExpressions = {
          { key = "app", operator = "In", values = hostile({ "web" }) } } })]] },
      { "sel:matches", "pcall(function() return ebb.selector('app=web'):matches(hostile()) end)" },
      { "ebb.pods opts", "pcall(ebb.pods, nodes, hostile())" },
      { "ebb.pods opts.namespaces", "pcall(ebb.pods, nodes, { namespaces = hostile() })" },
      { "ebb.pods opts.states", "pcall(ebb.pods, nodes, { states = hostile() })" },
      { "ebb.pods opts.conditions", "pcall(ebb.pods, nodes, { conditions = { hostile() } })" },
      { "ebb.pods nodes", "pcall(ebb.pods, hostile({ 'node-a' }))" },
      { "ebb.fits_any nodes", "pcall(ebb.fits_any, ebb.pods(nil, { phase = 'all' })[1], hostile())" },
      { "ebb.duplicates opts", "pcall(ebb.duplicates, ebb.pods(nodes), nil, hostile())" },
      { "ebb.node_usage opts", "pcall(ebb.node_usage, nodes, hostile({ resources = hostile({ 'cpu' }) }))" },
      { "ebb.node_loads opts", "pcall(ebb.node_loads, nodes, hostile({ low = hostile() }))" },
      { "ebb.topology_balance opts", "pcall(ebb.topology_balance, ebb.pods(nodes), nodes, hostile())" },
      { "ebb.json", "pcall(ebb.json, hostile({ a = hostile({ 1, 2 }) }))" },
      { "pod:tolerates", "pcall(function() local p = ebb.pods(nil, { phase = 'all' })[1] return p:tolerates(nodes[1], hostile()) end)" },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local msg = outcome(HOSTILE .. row[2] .. "\n error('out: ' .. calls)")
        assert.equal("0", msg:match("out: (%d+)"), msg)
      end)
    end
  end)

  it("compiles a selector from the table it holds, not from what __index answers", function()
    -- matchLabels answered differently on each read sized an array from the
    -- first answer and filled it from the second: a heap overflow
    local msg = outcome(HOSTILE .. [[
      local spec = hostile()
      local sel = ebb.selector(spec)
      local all = #ebb.pods(nodes, { phase = "all" })
      error("out: " .. calls .. " " .. #ebb.pods(nodes, { phase = "all", selector = sel }) .. "/" .. all)
    ]])
    local calls, got, all = msg:match("out: (%d+) (%d+)/(%d+)")
    assert.equal("0", calls)
    assert.equal(all, got)   -- an empty selector: everything
  end)

  it("takes a list's length raw: __len cannot make a LoadSet read past a list", function()
    local msg = outcome(HOSTILE .. [[
      local set = ebb.node_loads(nodes, { low = { cpu = 20 }, high = { cpu = 80 } })
      local pods = hostile({ ebb.pods(nodes, { phase = "all" })[1] })
      local ok1, r1 = pcall(set.order, set, nodes[1], pods, { cpu = 1 })
      local ok2, r2 = pcall(set.removable, set, nodes[1], pods, nodes)
      error("out: " .. calls .. " " .. tostring(ok1 and #r1 or r1) .. " " .. tostring(ok2 and #r2 or r2))
    ]], { snapshot = "spec/fixtures/loadaware-cluster.json" })
    local calls, n1, n2 = msg:match("out: (%w+) (%w+) (%w+)")
    assert.equal("0", calls, msg)
    -- never a count from __len: the list holds one pod
    assert.is_true(n1 == "false" or tonumber(n1) <= 1, msg)
    assert.is_true(n2 == "false" or tonumber(n2) <= 1, msg)
  end)

  it("refuses a selector with more values than it can hold, rather than cut them", function()
    -- 70,000 NotIn values kept 4,464 (a 16-bit count): pods named in the
    -- rest matched
    local msg = outcome([[
      local v = {}
      for i = 1, 70000 do v[i] = "n" .. i end
      ebb.selector({ matchExpressions = { { key = "app", operator = "NotIn", values = v } } })
    ]])
    assert.matches("matchExpressions%[0%]%.values: expected a list of at most 65535 items, got 70000", msg)
  end)

  it("matches a table of labels whatever its size", function()
    -- the table form was read into 128 slots: a label past them did not count
    local msg = outcome([[
      local labels = {}
      for i = 1, 5000 do labels["example.com/l" .. i] = "v" .. i end
      labels.app = "web"
      local sel = ebb.selector("app=web")
      local pod = ebb.pods(nodes, { phase = "all", selector = sel })[1]   -- interns app=web
      error("out: " .. tostring(sel:matches(labels)))
    ]])
    assert.matches("out: true", msg)
  end)

  it("refuses an exit code past int32 instead of cutting it to another", function()
    local msg = outcome([[ ebb.pods(nodes, { exit_codes = { (1 << 32) + 1 } }) ]])
    assert.matches("exit_codes'%[1%]: expected an integer from %-2147483648 to 2147483647, got number 4294967297", msg)
  end)

  it("shows a bad value cut and escaped: a message stays one short line", function()
    local msg = outcome([[ ebb.pods(nodes, { phase = "x\n\27[2J" .. string.rep("y", 50) }) ]])
    assert.matches([[option 'phase': expected active, all]], msg)
    assert.matches([[got string "x\x0a\x1b%[2Jyyy]], msg)
    assert.is_true(#msg < 2000, #msg)
  end)

  describe("a request body a custom evictor writes", function()
    local function evictor(body)
      local dir = h.plugin_dir{ ["mig.lua"] = [[
        return { name = "Mig",
          creates = { apiVersion = "scheduling.koordinator.sh/v1alpha1", kind = "PodMigrationJob",
                      namespaced = false },
          evict = function(ctx, pod)
            local other = "kube-system"
            ]] .. body .. [[
            return true
          end }
      ]] }
      local plan, msg = h.bounded("simulate", {
        snapshot = "spec/fixtures/evictor.json", policy_dirs = { dir },
        plugins = {
          { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 3600, labelSelector = {
            matchExpressions = { { key = "app", operator = "In", values = { "plain" } } } } } },
          { name = "Mig", ext = "evict" },
        },
      }, { seconds = 60, mb = 1024 })
      h.rmdir(dir)
      assert(plan, msg)
      return plan
    end

    local function refused(body, words)
      local plan = evictor(body)
      assert.same({}, plan:pods())
      assert.is_true(#plan.refusals > 0)
      for _, r in ipairs(plan.refusals) do
        assert.equal("evictor", r.why)
        assert.is_truthy(r.detail:find(words, 1, true), r.detail)
      end
    end

    it("refuses a key with a NUL: it would reach the server as a second podRef", function()
      refused([[ctx.api:create({ metadata = { generateName = "m-" }, spec = {
          podRef = { name = pod.name, namespace = pod.namespace },
          ["podRef\0x"] = { name = "kube-apiserver-master", namespace = other } } })]],
        "a map key with a NUL byte")
    end)

    it("refuses keys that differ only in case: a reader folding case takes either", function()
      refused([[ctx.api:create({ metadata = { generateName = "m-" }, spec = {
          podRef = { name = pod.name, namespace = pod.namespace },
          podref = { name = "kube-apiserver-master", namespace = other } } })]],
        "two keys of one map differ only in case")
    end)

    it("checks a field written in another case as the field", function()
      refused([[ctx.api:create({ metadata = { generateName = "m-" }, Spec = {
          PodRef = { name = "kube-apiserver-master", namespace = other } } })]],
        "spec.podRef must be the pod the call is for")
    end)

    it("refuses a key that is not ASCII (a look-alike of a field name)", function()
      refused([[ctx.api:create({ metadata = { generateName = "m-" }, ["\u{17F}pec"] = {
          podRef = { name = "kube-apiserver-master", namespace = other } } })]],
        "a key of a request body is printable ASCII")
    end)
  end)

  describe("what the engine makes for a script counts toward its cap", function()
    -- each kept in a table so nothing is collected: before, they were
    -- malloc'd outside the cap (a gigabyte under 32 MiB)
    local rows = {
      { "Selector", [[
          local v = {}
          for i = 1, 2000 do v[i] = "value-" .. i end
          local keep = {}
          for i = 1, 1e6 do keep[i] = ebb.selector({ matchExpressions = {
            { key = "k" .. i, operator = "In", values = v } } }) end ]] },
      { "AntiAffinityIndex", [[
          local pods = ebb.pods(nodes, { phase = "all" })
          for _ = 1, 6 do pods:append(pods) end
          local keep = {}
          for i = 1, 1e6 do keep[i] = ebb.anti_affinity_index(pods) end ]] },
      { "LoadSet", [[
          local keep = {}
          for i = 1, 1e7 do keep[i] = ebb.node_loads(nodes, { low = { cpu = 20 }, high = { cpu = 80 } }) end ]] },
      { "NodeUsage", [[
          local keep = {}
          for i = 1, 1e7 do keep[i] = ebb.node_usage(nodes, { resources = { "cpu", "memory" } }) end ]] },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local msg = outcome(row[2], { mem = 32 << 20, mb = 900, seconds = 120 })
        assert.matches("memory limit of 32 MiB exceeded", msg)
      end)
    end

    it("gives back what a script drops", function()
      -- a million selectors made and dropped stay under an 8 MiB cap
      local msg = outcome([[
        for i = 1, 200000 do ebb.selector({ matchLabels = { app = "web" .. i % 100 } }) end
        error("out: done")
      ]], { mem = 8 << 20 })
      assert.matches("out: done", msg)
    end)
  end)
end)
