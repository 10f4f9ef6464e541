-- The ebb command line: exit status and messages for good and bad input.
describe("ebb (command line)", function()
  local h = require("spec.helpers")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
  local SNAP = "spec/fixtures/kubectl-list.json"

  local S = require("spec.shell")

  -- run(args...) -> exit code, stdout, stderr
  local function run(...)
    return S.run(S.cmdline(EBB, ...))
  end

  local GOOD = h.policy{ plugins = { { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } } } }

  it("simulates and prints a table, exit 0", function()
    local pol = S.tmpfile(GOOD)
    local code, out = run("simulate", "--snapshot", SNAP, "--policy", pol, "--now", h.NOW)
    os.remove(pol)
    assert.equal(0, code)
    assert.matches("EVICTIONS", out)
    assert.matches("PodLifeTime%s+prod/web%-7d4b9c%-x2k9p", out)
  end)

  it("prints the plan as JSON with evictions, refusals and nodes", function()
    local pol = S.tmpfile(GOOD)
    local code, out = run("simulate", "--snapshot", SNAP, "--policy", pol, "--now", h.NOW,
      "--output", "json")
    os.remove(pol)
    assert.equal(0, code)
    assert.matches('"evictions":%s*%[', out)
    assert.matches('"refusals":%s*%[', out)
    assert.matches('"nodes":%s*%[', out)
    assert.matches('"before":%s*{%s*"cpu":', out)
  end)

  it("checks a good policy", function()
    local pol = S.tmpfile(GOOD)
    local code, out = run("check", "--policy", pol)
    os.remove(pol)
    assert.equal(0, code)
    assert.matches(": ok", out)
  end)

  it("exits 2 naming the line of an unknown plugin", function()
    local pol = S.tmpfile([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: PodLifeTimes
  plugins:
    deschedule:
      enabled:
      - PodLifeTimes
]])
    local code, _, err = run("check", "--policy", pol)
    assert.equal(2, code)
    assert.matches(pol:gsub("%p", "%%%0") .. ":10: profiles%[0%]%.plugins%.deschedule%.enabled%[0%]: "
      .. 'profile "p" configures deschedule extension point of non%-existing plugins: %[PodLifeTimes%]', err)
    os.remove(pol)
  end)

  it("exits 2 naming the line and field of an unknown arg", function()
    local pol = S.tmpfile([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 60
      maxPodLifetimeSecond: 10
  plugins:
    deschedule:
      enabled: [PodLifeTime]
]])
    local code, _, err = run("check", "--policy", pol)
    assert.equal(2, code)
    assert.matches(":9: profiles%[0%]%.pluginConfig%[0%]%.args%.maxPodLifetimeSecond: "
      .. 'PodLifeTime: unknown field "maxPodLifetimeSecond"', err)
    os.remove(pol)
  end)

  it("exits 2 on a label selector whose matchLabels or matchExpressions has the wrong shape", function()
    local cases = {
      { "matchLabels: 3", "matchLabels: expected a map of strings, got number" },
      { "matchLabels: app", "matchLabels: expected a map of strings, got string" },
      { 'matchExpressions: "app"', "matchExpressions: expected a list, got string" },
    }
    for _, c in ipairs(cases) do
      local pol = S.tmpfile(string.format([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 60
      labelSelector:
        %s
  plugins:
    deschedule:
      enabled: [PodLifeTime]
]], c[1]))
      local code, _, err = run("check", "--policy", pol)
      os.remove(pol)
      assert.equal(2, code, c[1])
      assert.matches(":10: profiles%[0%]%.pluginConfig%[0%]%.args%.labelSelector: PodLifeTime: "
        .. c[2]:gsub("%p", "%%%0"), err)
    end
  end)

  it("exits 2 naming the line of an arg of the wrong type", function()
    local pol = S.tmpfile([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args:
      nodeFit: "yes please"
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 60}
  plugins:
    deschedule:
      enabled: [PodLifeTime]
]])
    local code, _, err = run("check", "--policy", pol)
    assert.equal(2, code)
    assert.matches(":8: profiles%[0%]%.pluginConfig%[0%]%.args%.nodeFit: DefaultEvictor: expected a boolean, got a string", err)
    os.remove(pol)
  end)

  it("exits 2 on a validation error of a Lua plugin", function()
    local pol = S.tmpfile([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: RemovePodsViolatingNodeTaints
    args:
      excludedTaints: [dedicated]
      includedTaints: [gpu]
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
]])
    local code, _, err = run("check", "--policy", pol)
    assert.equal(2, code)
    assert.matches(":8: profiles%[0%]%.pluginConfig%[0%]%.args: RemovePodsViolatingNodeTaints: "
      .. "either includedTaints or excludedTaints can be set, but not both", err)
    os.remove(pol)
  end)

  it("exits 2 on a malformed snapshot and prints no plan", function()
    local pol = S.tmpfile(GOOD)
    local snap = S.tmpfile('{"apiVersion":"v1","kind":"List","items":[\n{"kind":"Pod","apiVersion":"v1",\n"metadata":{"name":"x"')
    local code, out, err = run("simulate", "--snapshot", snap, "--policy", pol)
    os.remove(pol)
    os.remove(snap)
    assert.equal(2, code)
    assert.equal("", out)
    assert.matches("ebb: error: " .. snap:gsub("%p", "%%%0") .. ":2:", err)
  end)

  it("exits 2 on a snapshot that does not exist", function()
    local pol = S.tmpfile(GOOD)
    local code, out, err = run("simulate", "--snapshot", "/nonexistent/cluster.json", "--policy", pol)
    os.remove(pol)
    assert.equal(2, code)
    assert.equal("", out)
    assert.matches("/nonexistent/cluster%.json", err)
  end)

  it("exits 2 on a policy that is not YAML", function()
    local pol = S.tmpfile("apiVersion: descheduler/v1alpha2\nkind: [DeschedulerPolicy\n")
    local code, _, err = run("check", "--policy", pol)
    os.remove(pol)
    assert.equal(2, code)
    assert.matches(":%d+:", err)
  end)

  it("exits 2 on a bad flag value", function()
    local code, _, err = run("simulate", "--snapshot", SNAP, "--policy", "x", "--now", "yesterday")
    assert.equal(2, code)
    assert.matches('%-%-now: "yesterday" is not an RFC 3339 time', err)
    code, _, err = run("simulate", "--snapshot", SNAP, "--policy", "x", "--cycles", "0")
    assert.equal(2, code)
    assert.matches("%-%-cycles", err)
    code, _, err = run("simulate", "--bogus")
    assert.equal(2, code)
    assert.matches("unknown flag %-%-bogus", err)
  end)

  it("exits 2 when a policy directory holds a broken strategy", function()
    local pol = S.tmpfile(GOOD)
    local dir = h.plugin_dir{ ["mine.lua"] = "return { name = 'Mine', deschedule = 42 }\n" }
    local code, _, err = run("check", "--policy", pol, "--policy-dir", dir)
    os.remove(pol)
    h.rmdir(dir)
    assert.equal(2, code)
    assert.matches("mine%.lua: deschedule: `deschedule` must be a function", err)
  end)

  it("reports a failing strategy in the plan and still exits 0", function()
    local dir = h.plugin_dir{ ["crash.lua"] = "return { name = 'Crash', deschedule = function() error('boom') end }\n" }
    local pol = S.tmpfile(h.policy{ plugins = { { name = "Crash" },
      { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } } } })
    local code, out = run("simulate", "--snapshot", SNAP, "--policy", pol, "--policy-dir", dir, "--now", h.NOW, "-q")
    os.remove(pol)
    h.rmdir(dir)
    assert.equal(0, code)
    assert.matches("PLUGIN ERRORS", out)
    assert.matches("test/Crash: .*crash%.lua:1: boom", out)
    assert.matches("PodLifeTime", out)
  end)

  describe("--reschedule", function()
    local WHATIF = "spec/fixtures/whatif-pending.json"
    local TAINTS = h.policy{ plugins = { { name = "RemovePodsViolatingNodeTaints" } } }

    it("prints the moves, the pending pods and a summary per cycle", function()
      local pol = S.tmpfile(TAINTS)
      local code, out = run("simulate", "--snapshot", WHATIF, "--policy", pol, "--now", h.NOW, "--reschedule")
      os.remove(pol)
      assert.equal(0, code)
      assert.matches("RESCHEDULED", out)
      assert.matches("\n1 +1 +1 +0 +3 +0 +3 ", out)      -- cycle 1: 1 evicted and replaced; 3 wait
      assert.matches("MOVES", out)
      assert.matches("1 +batch/etl%-7d6c5b4a3%-%w+ +batch/etl%-7d6c5b4a3%-p5r7t +small%-1 +%-> %(pending%)", out)
      assert.matches("PENDING\nshop/huge%-3f2e1d0c9%-z9x7v %(since cycle 0%): 0/3 nodes are available: ", out)
      assert.matches("converged: the last cycle evicted nothing", out)
    end)

    it("adds placements, pending, loops, cycles and a summary to the JSON", function()
      local pol = S.tmpfile(TAINTS)
      local code, out = run("simulate", "--snapshot", WHATIF, "--policy", pol, "--now", h.NOW, "--reschedule",
        "--cycles", "1", "--output", "json")
      os.remove(pol)
      assert.equal(0, code)
      assert.matches('"placements":%s*%[%s*{%s*"cycle":%s*0,%s*"pod":%s*"batch/report%-29147040%-x7y9z",%s*'
        .. '"replaces":%s*null,%s*"from":%s*null,%s*"node":%s*"small%-2",%s*"message":%s*null', out)
      assert.matches('"pending":%s*%[', out)
      assert.matches('"loops":%s*%[%s*%]', out)
      assert.matches('"summary":%s*{%s*"cycles":%s*1,%s*"converged":%s*false', out)
      assert.matches('"before":%s*{%s*"cpu":%s*{%s*"mean":', out)
    end)

    it("exits 2 naming file, line and field of a bad scheduler config, before any work", function()
      local pol = S.tmpfile(TAINTS)
      local conf = S.tmpfile([[
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: NodeResourceFit
        weight: 2
]])
      local code, out, err = run("simulate", "--snapshot", WHATIF, "--policy", pol, "--reschedule",
        "--scheduler-config", conf)
      assert.equal(2, code)
      assert.equal("", out)
      assert.matches(conf:gsub("%p", "%%%0") .. ":8: profiles%[0%]%.plugins%.score%.enabled%[0%]%.name: "
        .. 'unknown plugin "NodeResourceFit"', err)
      S.write(conf, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        .. "profiles:\n- pluginConfig:\n  - {name: InterPodAffinity, args: {hardPodAffinityWeight: 200}}\n")
      code, _, err = run("simulate", "--snapshot", WHATIF, "--policy", pol, "--reschedule", "--scheduler-config", conf)
      assert.equal(2, code)
      assert.matches(":5: profiles%[0%]%.pluginConfig%[0%]%.args%.hardPodAffinityWeight: 200 is out of range", err)
      os.remove(conf)
      code, _, err = run("simulate", "--snapshot", WHATIF, "--policy", pol, "--reschedule",
        "--scheduler-config", "/nonexistent/sched.yaml")
      assert.equal(2, code)
      assert.matches("/nonexistent/sched%.yaml", err)
      os.remove(pol)
    end)

    it("exits 2 on a snapshot whose pods are on nodes it does not have", function()
      local text = assert(S.read(WHATIF))
      local snap = S.tmpfile((text:gsub('"nodeName": "small%-2"', '"nodeName": "small-9"', 1)))
      local pol = S.tmpfile(TAINTS)
      local code, out, err = run("simulate", "--snapshot", snap, "--policy", pol, "--reschedule")
      assert.equal(2, code)
      assert.equal("", out)
      assert.matches(snap:gsub("%p", "%%%0") .. ":%d+: spec%.nodeName: pod kube%-system/kube%-proxy%-%w+ is "
        .. 'bound to node "small%-9", which the snapshot does not have', err)
      os.remove(snap)
      os.remove(pol)
    end)

    it("exits 2 on what needs --reschedule, and on a bad seed or scheduler version", function()
      local cases = {
        { { "--seed", "3" }, "%-%-seed needs %-%-reschedule" },
        { { "--scheduler-config", "x.yaml" }, "%-%-scheduler%-config needs %-%-reschedule" },
        { { "--report", "r.html" }, "%-%-report needs %-%-reschedule" },
        { { "--reschedule", "--seed", "-1" }, '%-%-seed: "%-1" is not a number' },
        { { "--reschedule", "--scheduler-version", "1.99" }, '%-%-scheduler%-version: "1.99" is not latest or v1.25' },
      }
      for _, c in ipairs(cases) do
        local code, _, err = run("simulate", "--snapshot", WHATIF, "--policy", "x", table.unpack(c[1]))
        assert.equal(2, code)
        assert.matches(c[2], err)
      end
    end)
  end)

  it("record refuses a page size that is not a whole number in range, naming the flag", function()
    for _, v in ipairs({ "", "0", "-5", "10x", " 10", "100001", "99999999999999999999", "1e3" }) do
      local code, out, err = run("record", "-o", "never-written.json", "--page-size", v)
      assert.equal(2, code, v)
      assert.equal("", out)
      assert.matches('^ebb: error: %-%-page%-size: "' .. v:gsub("%p", "%%%0") .. '" is not a number from 1 to 100000\n$', err)
    end
    assert.is_nil(io.open("never-written.json"))
  end)

  it("run's integer flags refuse what is not a whole number in range, overflow too, naming the flag", function()
    -- an int cast of a long once took 4294967297 for a burst of 1 and
    -- 4294967296 for port 0
    local cases = {
      { "--burst", { "0", "-1", "4294967297", "10x", "" }, 1, 100000 },
      { "--port", { "-1", "65536", "4294967296", "80 " }, 0, 65535 },
      { "--secure-port", { "4294967296", "1e3" }, 0, 65535 },
      { "--page-size", { "0", "4294967297", "99999999999999999999" }, 1, 100000 },
    }
    for _, c in ipairs(cases) do
      for _, v in ipairs(c[2]) do
        local code, out, err = run("run", "--policy", "never-read.yaml", c[1], v)
        assert.equal(2, code, c[1] .. " " .. v)
        assert.equal("", out)
        assert.matches('^ebb: error: ' .. c[1]:gsub("%p", "%%%0") .. ': "' .. v:gsub("%p", "%%%0") ..
          '" is not a number from ' .. c[3] .. ' to ' .. c[4] .. '\n$', err)
      end
    end
  end)

  it("prints its version", function()
    local code, out = run("version")
    assert.equal(0, code)
    assert.matches("^ebb %d+%.%d+%.%d+", out)
  end)
end)
