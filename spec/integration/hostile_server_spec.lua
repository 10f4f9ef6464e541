-- `ebb run` against a hostile API server (spec/integration/hostile_apiserver.py):
-- answers a real server never gives, for pods, while every other resource
-- is answered as a real server would. Whatever the server sends, ebb's
-- memory stays within its bounds (README "Bounds"), /healthz answers, and
-- /readyz says truthfully which resource is not current, naming it. Each
-- run is watched for a few seconds; its peak resident memory is printed as
-- a "# figure:" line, and a run that goes past ABORT_MB is stopped at once.
local S = require("spec.integration.serve_harness")
local R = require("spec.integration.run_harness")

local PEAK_MB = 200    -- ebb run's peak resident memory, whatever the server sends
local ABORT_MB = 600   -- past this the run is stopped (the machine is shared)
local WATCH_S = 8

local POLICY = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: RemovePodsViolatingNodeTaints
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
]]

local function figure(fmt, ...)
  io.stderr:write("# figure: " .. string.format(fmt, ...) .. "\n")
end

local function hostile(mode)
  local dir = S.tmpdir()
  os.execute(string.format("python3 spec/integration/hostile_apiserver.py --mode %s --port-file %s " ..
    ">%s/log 2>&1 & echo $! >%s/pid", mode, S.shq(dir .. "/port"), S.shq(dir), S.shq(dir)))
  local port = assert(S.eventually(function() return S.read(dir .. "/port") end, 10), "the hostile server did not start")
  local pid = S.read(dir .. "/pid"):match("%d+")
  return { url = "http://127.0.0.1:" .. port, dir = dir, pid = pid }
end

local function stop_hostile(h)
  os.execute("kill " .. h.pid .. " 2>/dev/null")
  S.rmdir(h.dir)
end

-- kB of a /proc/PID/status field (VmRSS, VmHWM), or nil once it is gone.
local function status_kb(pid, field)
  local s = S.read("/proc/" .. pid .. "/status")
  return s and tonumber(s:match(field .. ":%s*(%d+)"))
end

-- Run ebb against the server for WATCH_S seconds (stopped at once past
-- ABORT_MB); its peak resident memory in MiB, and the run (still going).
local function watch(h, extra)
  local opts = { policy = POLICY, "--max-stale", "2s", "--sync-timeout", "120s" }
  for _, a in ipairs(extra or {}) do opts[#opts + 1] = a end
  local run = R.start(h, opts)
  local t0 = os.time()
  while os.time() - t0 < WATCH_S do
    local rss = status_kb(run.pid, "VmRSS")
    if rss == nil then break end
    if rss > ABORT_MB * 1024 then
      run:kill("KILL")
      error(string.format("ebb run went past %d MiB resident (%d MiB): stopped", ABORT_MB, rss // 1024))
    end
    S.sleep(0.1)
  end
  local peak = (status_kb(run.pid, "VmHWM") or 0) / 1024
  return peak, run
end

describe("ebb run against a hostile API server", function()
  local runs, servers = {}, {}
  after_each(function()
    for _, r in ipairs(runs) do r:stop() end
    for _, h in ipairs(servers) do stop_hostile(h) end
    runs, servers = {}, {}
  end)

  local function start(mode, extra)
    local h = hostile(mode)
    servers[#servers + 1] = h
    local peak, run = watch(h, extra)
    runs[#runs + 1] = run
    figure("hostile server (%s): ebb run's peak resident memory %.0f MiB in %d s", mode, peak, WATCH_S)
    assert.is_nil(run:status(), "ebb run exited: " .. run:stderr())
    assert.is_true(peak < PEAK_MB, string.format("peak %.0f MiB", peak))
    assert.equal(200, (run:get("/healthz")))
    return run
  end

  it("a LIST answered \"Content-Length: 10 GB\" is refused before it is read; pods are not current, /readyz says so", function()
    local run = start("length")
    local ok, body = run:ready()
    assert.is_false(ok)
    assert.matches("not current: pods %(not synced: LIST /api/v1/pods[^)]*larger than", body)
    assert.not_matches("nodes %(", body)
  end)

  it("a LIST whose items never end: never more than the items asked for, memory bounded", function()
    local run = start("endless")
    local ok, body = run:ready()
    assert.is_false(ok)
    assert.matches("pods %(not synced: LIST /api/v1/pods: more items than", body)
  end)

  it("items larger than what ebb reads of one object are skipped alone, never held", function()
    local run = start("big")
    local m = assert(run:metrics())
    assert.is_true((R.metric(m, "ebb_objects_skipped_total", '{resource="pods",reason="too-large"}') or 0) >= 1)
    local ok, body = run:ready()
    assert.is_false(ok)   -- the List itself never ends
    assert.matches("pods %(not synced", body)
  end)

  it("a watch event that never ends: relisted, memory bounded", function()
    local run = start("line")
    assert.matches("a watch event larger than %d+ MiB; relisting", run:stderr())
  end)

  it("a watch the server accepts and breaks, again and again, is stale: /readyz names it after --max-stale", function()
    local run = start("stale")
    local ok, body = run:ready()
    assert.is_false(ok)
    assert.matches("not current: pods %(broken for %d+ ms: the watch answered an ERROR event", body)
    -- and it is not retried in a tight loop: the backoff grows
    local m = assert(run:metrics())
    assert.is_true(R.metric(m, "ebb_watch_resumes_total", '{resource="pods"}') < 20)
  end)

  it("a Lease write answered with what is not a Lease held by ebb: ebb does not lead on it", function()
    local run = start("lease", { "--leader-elect", "--leader-elect-retry-period", "1s" })
    assert.not_matches("acquired lease", run:stderr())
    assert.equal(0, R.metric(assert(run:metrics()), "ebb_leader"))
    -- and it says so: not silence
    local ok, body = run:ready()
    assert.is_false(ok)
    assert.matches("leader election: create lease kube%-system/descheduler: 201 the answer is not a Lease", body)
  end)

  -- A Lease ebb cannot read or write, whatever the reason, is an error in
  -- the log (once, named) and on /readyz, never a silent standby.
  local LEASE_FAILS = {
    { "lease403", "read lease ebb%-system/descheduler: 403 [^\n]*cannot get resource \"leases\"" },
    { "leasens", "create lease ebb%-system/descheduler: 404 namespaces \"ebb%-system\" not found" },
    { "lease500", "read lease ebb%-system/descheduler: 500 etcdserver: request timed out" },
  }
  for _, case in ipairs(LEASE_FAILS) do
    it("a Lease ebb cannot use (" .. case[1] .. ") is an error in the log and on /readyz", function()
      local run = start(case[1], { "--leader-elect", "--leader-elect-retry-period", "1s",
                                   "--leader-elect-resource-namespace", "ebb-system" })
      local err = run:stderr()
      assert.matches("leader election: " .. case[2], err)
      local _, n = err:gsub("leader election: [^\n]*ebb does not lead while it cannot", "")
      assert.equal(1, n, err)   -- once per change, not every retry
      assert.equal(0, R.metric(assert(run:metrics()), "ebb_leader"))
      local ok, body = run:ready()
      assert.is_false(ok)
      assert.matches("leader election: " .. case[2], body)
    end)
  end
end)
