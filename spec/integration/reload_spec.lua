-- Hot reload and bad scripts during a live `ebb run` against `ebb serve`:
-- a changed strategy or policy runs within seconds without a restart; a
-- change that does not load leaves the running generation untouched (and
-- says so: log with file and line, metric, Warning Event); a script that
-- misbehaves at start is refused, at run time fails its own plugin only.
local R = require("spec.integration.run_harness")
local S = R.S

local DEMO = "spec/fixtures/demo-cluster.json"
local GRAFANA = "monitoring/grafana-5c8d7e6f9-r4t6y"
local CART = "shop/cart-5d7f8c6b9-t3u4v"

local write = S.write

-- A strategy that evicts one named pod, tagging the eviction with `tag`.
local function evicter(key, tag)
  local ns, name = key:match("^(.-)/(.*)$")
  return string.format([[
local ebb = require("ebb")
return {
  name = "Evicter",
  deschedule = function(ctx, nodes)
    for _, pod in ebb.pods(nodes, { namespaces = { include = { %q } } }):iter() do
      if pod.name == %q then ctx.evictor:evict(pod, { reason = %q }) end
    end
  end,
}
]], ns, name, tag)
end

local POLICY = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: Evicter
  plugins:
    deschedule:
      enabled: [Evicter]
]]

local SELF = { POD_NAME = "ebb-7d9f8c6b5-x2k4p", POD_NAMESPACE = "kube-system" }

describe("hot reload during ebb run", function()
  local srv, runs, dirs

  before_each(function() runs, dirs = {}, {} end)
  after_each(function()
    for _, r in ipairs(runs) do r:stop() end
    for _, d in ipairs(dirs) do S.rmdir(d) end
    if srv then srv:stop() end
    srv = nil
  end)

  local function scratch()
    local d = S.tmpdir()
    dirs[#dirs + 1] = d
    return d
  end

  local function start(opts)
    local r = R.start(srv, opts)
    runs[#runs + 1] = r
    return r
  end

  -- A ConfigMap volume: files are links into ..data, which links to a
  -- timestamped directory; an update writes a new directory and swaps
  -- ..data in one rename.
  local function configmap(files)
    local d = scratch()
    local function version(n, content)
      local v = string.format("..2026_11_22_12_00_%02d.%d", n, n)
      assert(os.execute("mkdir " .. S.shq(d .. "/" .. v)))
      for name, text in pairs(content) do write(d .. "/" .. v .. "/" .. name, text) end
      assert(os.execute(string.format("cd %s && ln -s %s ..data_tmp && mv -T ..data_tmp ..data",
        S.shq(d), S.shq(v))))
      for name in pairs(content) do
        os.execute(string.format("cd %s && [ -L %s ] || ln -s ..data/%s %s", S.shq(d), S.shq(name),
          S.shq(name), S.shq(name)))
      end
    end
    version(1, files)
    return d, version
  end

  it("runs a changed strategy from a ConfigMap volume without a restart", function()
    srv = S.start{ snapshot = DEMO }
    local dir, update = configmap{ ["evicter.lua"] = evicter(GRAFANA, "v1") }
    local run = start{ policy = POLICY, "--policy-dir", dir, "--interval", "1s",
                       "--reload-debounce", "200ms" }
    assert.is_not_nil(run:wait_log("evicted pod " .. GRAFANA:gsub("%-", "%%-"), 15), run:stderr())
    local m = run:metrics()
    assert.equal(1, R.metric(m, "ebb_policy_generation"))
    local hash1 = run:stderr():match("policy generation 1: hash (%x+)")
    assert.is_not_nil(hash1)
    assert.equal(1, R.metric(m, "ebb_policy_generation_info", '{hash="' .. hash1 .. '"}'))
    -- the plugin's engine reports what its state holds (Lua: its lua_State)
    assert.is_true(R.metric(m, "ebb_plugin_memory_bytes", '{plugin="Evicter",profile="default"}') > 0)

    update(2, { ["evicter.lua"] = evicter(CART, "v2") })
    local hash2 = run:wait_log("policy generation 2 active: hash (%x+)", 10)
    assert.is_not_nil(hash2, run:stderr())
    assert.not_equal(hash1, hash2)
    assert.is_not_nil(run:wait_log("evicted pod " .. CART:gsub("%-", "%%-"), 10), run:stderr())
    m = run:metrics()
    assert.equal(2, R.metric(m, "ebb_policy_generation"))
    assert.equal(1, R.metric(m, "ebb_policy_reloads_total", '{result="success"}'))
    assert.equal(1, R.metric(m, "ebb_policy_generation_info", '{hash="' .. hash2 .. '"}'))
    assert.is_nil(R.metric(m, "ebb_policy_generation_info", '{hash="' .. hash1 .. '"}'))
    -- both pods are gone from the server
    local left = {}
    for _, k in ipairs(R.pods(srv)) do left[k] = true end
    assert.is_nil(left[GRAFANA])
    assert.is_nil(left[CART])
  end)

  it("reloads a changed policy file, and on SIGHUP", function()
    srv = S.start{ snapshot = DEMO }
    local pdir = scratch()
    write(pdir .. "/evicter.lua", evicter(GRAFANA, "v1"))
    local cfg = scratch()
    -- PodLifeTime with an age no pod has: nothing happens until the edit
    local quiet = POLICY:gsub("enabled: %[Evicter%]", "enabled: [PodLifeTime]")
      :gsub("  %- name: Evicter\n", "  - name: PodLifeTime\n    args: {maxPodLifeTimeSeconds: 999999999}\n")
    write(cfg .. "/policy.yaml", quiet)
    local run = start{ policy_file = cfg .. "/policy.yaml", "--policy-dir", pdir, "--interval", "1s",
                       "--reload-debounce", "200ms" }
    assert.is_not_nil(run:wait_log("cycle 2:", 15), run:stderr())
    assert.same({}, run:evicted())
    write(cfg .. "/policy.yaml", POLICY)   -- edited in place
    assert.is_not_nil(run:wait_log("policy generation 2 active", 10), run:stderr())
    assert.is_not_nil(run:wait_log("evicted pod " .. GRAFANA:gsub("%-", "%%-"), 10), run:stderr())
    -- SIGHUP loads again even when nothing changed
    run:kill("HUP")
    assert.is_not_nil(run:wait_log("policy generation 3 active", 10), run:stderr())
    assert.matches("SIGHUP: reloading", run:stderr())
  end)

  -- A valid plugin followed by 32,000 labels and 7.7 MB of gotos to the
  -- last: each goto looks through every label (12 s of parsing).
  local function goto_bomb()
    local t = { "do return { name = 'Evicter', deschedule = function() end } end " }
    for i = 1, 32000 do t[#t + 1] = "::l" .. i .. ":: do end " end
    local labels = table.concat(t)
    return labels .. string.rep("goto l32000 ", (7700000 - #labels) // 12)
  end

  -- Every way a changed script can be wrong; each leaves generation 1
  -- running (it keeps evicting what v1 evicts) and is reported.
  local BAD = {
    { "does not compile", "local x = = 1\nreturn {}\n", "evicter%.lua:1:" },
    { "returns the wrong shape", "return { name = 'Evicter', deschedule = 42 }\n",
      "`deschedule` must be a function" },
    { "loops forever while loading", "while true do end\n", "time budget of %d+ ms exceeded" },
    { "allocates without bound while loading",
      "local t = {}\nwhile true do t[#t + 1] = string.rep('x', 1 << 20) .. #t end\n",
      "memory limit of 16 MiB exceeded" },
    { "errors while loading", "local cfg = nil\nreturn { name = cfg.name }\n",
      "evicter%.lua:2: attempt to index a nil value" },
    { "reaches for io", "io.open('/etc/passwd')\n", "undeclared global 'io'" },
    { "reaches for os", "os.execute('true')\n", "undeclared global 'os'" },
    { "reaches for debug", "debug.sethook()\n", "undeclared global 'debug'" },
    { "loads bytecode", "assert(load(string.dump(function() end)))\n", "attempt to load a binary chunk" },
    { "takes longer to parse than the budget", goto_bomb(),
      "evicter%.lua: parsing %d+ bytes took longer than the time budget of 2000 ms" },
  }

  it("keeps the running generation when a changed script is bad, and reports it", function()
    srv = S.start{ snapshot = DEMO }
    local dir, update = configmap{ ["evicter.lua"] = evicter(GRAFANA, "v1") }
    local run = start{ policy = POLICY, "--policy-dir", dir, "--interval", "1s", "--reload-debounce", "100ms",
                       "--script-timeout", "2s", "--script-memory", "16Mi", env = SELF }
    assert.is_not_nil(run:wait_log("cycle 1:", 15), run:stderr())
    for i, case in ipairs(BAD) do
      update(i + 1, { ["evicter.lua"] = case[2] })
      local n = S.eventually(function()
        local _, k = run:stderr():gsub("policy reload failed", "")
        return k >= i and k
      end, 10)
      assert.equal(i, n, case[1] .. "\n" .. run:stderr())
      local last
      for line in run:stderr():gmatch("[^\n]*policy reload failed[^\n]*") do last = line end
      assert.matches("generation 1 %(hash %x+%) keeps running", last, 1)
      assert.matches(case[3], last, 1, case[1])
    end
    local m = run:metrics()
    assert.equal(#BAD, R.metric(m, "ebb_policy_reloads_total", '{result="failure"}'))
    assert.is_nil(R.metric(m, "ebb_policy_reloads_total", '{result="success"}'))
    assert.equal(1, R.metric(m, "ebb_policy_generation"))
    -- generation 1 kept running all along: its cycles went on without errors
    assert.matches("cycle %d+: %d+ evicted, %d+ refused, 0 plugin errors", run:stderr())
    assert.is_nil(run:stderr():match("plugin errors in[^\n]*\n[^\n]*plugin default/Evicter"))
    -- a Warning Event on ebb's own pod for each
    local events = S.eventually(function()
      local _, list = srv:request("GET", "/apis/events.k8s.io/v1/namespaces/kube-system/events")
      local out = {}
      for _, ev in ipairs(list and list.items or {}) do
        if ev.reason == "PolicyReloadFailed" then out[#out + 1] = ev end
      end
      return #out >= #BAD and out
    end, 10)
    assert.is_truthy(events)
    assert.equal("Warning", events[1].type)
    assert.equal(SELF.POD_NAME, events[1].regarding.name)
    assert.matches("evicter%.lua", events[1].note)
  end)

  -- Where a failed reload is reported: ebb's own pod, found without extra
  -- environment when the downward API is not there; or the log says why.
  local SELF_CASES = {
    { "the downward API", { POD_NAME = "ebb-7d9f8c6b5-x2k4p", POD_NAMESPACE = "kube-system" },
      "kube-system", "ebb-7d9f8c6b5-x2k4p" },
    { "the service account's namespace and the hostname", { HOSTNAME = "ebb-5c8d7f9b6-q7w2r" },
      "default", "ebb-5c8d7f9b6-q7w2r", "default\n" },
    { "no pod at all", { HOSTNAME = "ebb-5c8d7f9b6-q7w2r" }, nil, nil, nil,
      "no Event about ebb can be posted %(PolicyReloadFailed%): [^\n]*not in a pod" },
  }
  for _, case in ipairs(SELF_CASES) do
    it("reports a failed reload on ebb's own pod found from " .. case[1], function()
      srv = S.start{ snapshot = DEMO }
      local d = scratch()
      local env = { EBB_SERVICEACCOUNT_NAMESPACE_FILE = d .. "/namespace" }
      for k, v in pairs(case[2]) do env[k] = v end
      if case[5] then write(d .. "/namespace", case[5]) end
      local dir, update = configmap{ ["evicter.lua"] = evicter(GRAFANA, "v1") }
      local run = start{ policy = POLICY, "--policy-dir", dir, "--interval", "1s", "--reload-debounce", "100ms",
                         env = env }
      assert.is_not_nil(run:wait_log("cycle 1:", 15), run:stderr())
      update(2, { ["evicter.lua"] = "local x = = 1\nreturn {}\n" })
      assert.is_not_nil(run:wait_log("policy reload failed", 10), run:stderr())
      if case[6] then
        assert.is_not_nil(run:wait_log(case[6], 10), run:stderr())
        return
      end
      local ev = S.eventually(function()
        local _, list = srv:request("GET", "/apis/events.k8s.io/v1/namespaces/" .. case[3] .. "/events")
        for _, e in ipairs(list and list.items or {}) do
          if e.reason == "PolicyReloadFailed" then return e end
        end
      end, 10)
      assert.is_truthy(ev, run:stderr())
      assert.equal("Pod", ev.regarding.kind)
      assert.equal(case[4], ev.regarding.name)
      assert.equal(case[3], ev.regarding.namespace)
    end)
  end

  it("refuses a bad script at start with a clear error, exit 2", function()
    srv = S.start{ snapshot = DEMO }
    for _, case in ipairs(BAD) do
      local dir = scratch()
      write(dir .. "/evicter.lua", case[2])
      local run = start{ policy = POLICY, "--policy-dir", dir, "--once", "--script-timeout", "2s",
                         "--script-memory", "16Mi" }
      assert.equal(2, run:wait(20), case[1])
      assert.matches("ebb: error: [^\n]*" .. case[3], run:stderr(), 1, case[1])
    end
  end)

  -- At run time a bad script fails its own plugin; PodLifeTime in the same
  -- profile still evicts, and the failing plugin is set aside after 3 runs.
  local RUNTIME = {
    { "errors at run time", "local t = nil; return t.x", "attempt to index a nil value" },
    { "loops forever at run time", "while true do end", "time budget of 1000 ms exceeded" },
    { "allocates without bound at run time",
      "local t = {} while true do t[#t + 1] = string.rep('x', 1 << 20) .. #t end",
      "memory limit of 16 MiB exceeded" },
  }

  for _, case in ipairs(RUNTIME) do
    it("fails only the plugin that " .. case[1] .. ", then quarantines it", function()
      srv = S.start{ snapshot = DEMO }
      local dir = scratch()
      write(dir .. "/bad.lua", "return { name = 'Bad', deschedule = function(ctx, nodes) " .. case[2] ..
        " end }\n")
      local policy = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: Bad
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 604800}
  plugins:
    deschedule:
      enabled: [Bad, PodLifeTime]
]]
      local run = start{ policy = policy, "--policy-dir", dir, "--interval", "500ms",
                         "--script-timeout", "1s", "--script-memory", "16Mi", env = SELF }
      assert.is_not_nil(run:wait_log("cycle 1:", 15), run:stderr())
      local err = run:stderr()
      assert.matches("plugin default/Bad: [^\n]*" .. case[3], err)
      -- PodLifeTime ran in the same cycle and evicted (cycle 1 of run_spec: 7)
      assert.matches("cycle 1: 7 evicted, 5 refused, 1 plugin errors", err)
      assert.is_not_nil(run:wait_log("plugin Bad %(profile default%) quarantined: failed 3 runs in a row", 20),
        run:stderr())
      local m = S.eventually(function()
        local text = run:metrics()
        return R.metric(text, "ebb_plugin_quarantined", '{plugin="Bad",profile="default"}') == 1 and text
      end, 10)
      assert.is_truthy(m, run:stderr())
      assert.is_true(R.metric(m, "ebb_script_errors_total", '{plugin="Bad",profile="default"}') >= 3)
      local ev = S.eventually(function()
        local _, list = srv:request("GET", "/apis/events.k8s.io/v1/namespaces/kube-system/events")
        for _, e in ipairs(list and list.items or {}) do
          if e.reason == "PluginQuarantined" then return e end
        end
      end, 10)
      assert.is_truthy(ev)
      assert.matches("plugin Bad of profile default quarantined", ev.note)
    end)
  end
end)
