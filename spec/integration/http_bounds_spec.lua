-- Hostile clients against ebb's two HTTP servers: `ebb serve` and the
-- /metrics, /healthz, /readyz port of `ebb run`. Each attack runs for a few
-- seconds (spec/integration/http_attack.py); meanwhile and afterwards the
-- server must answer, and its peak resident memory (VmHWM) may grow by no
-- more than the bound docs/http.md states for it:
--   ebb serve    128 MiB of queued answers + 64 MiB of request bodies +
--                256 connections of about 0.6 MiB: under 256 MiB here
--                (320 MiB for 100 watches never read under --churn, whose
--                ended buffers the allocator keeps: see that spec)
--   ebb run      32 MiB of queued answers + 64 connections: under 64 MiB
-- Before these bounds, 50 clients that never read took `ebb run` to 1.3 GB
-- and `ebb serve` to 1.26 GB.
--
-- Probes: whatever the clients do (idle, trickling headers or bodies,
-- pipelining without reading, streaming watches, watches never read), a
-- new connection asking /healthz, /readyz or /livez is answered (within
-- curl's 5 s, the longest a probe is given here). Before the probe slot,
-- 64 trickling connections to `ebb run`'s port, or 256 watches to `ebb
-- serve`, had every probe refused.
local R = require("spec.integration.run_harness")
local S = R.S

local MiB = 1024 * 1024
local ATTACK = "spec/integration/http_attack.py"

local function status_kb(pid, field)
  local text = S.read("/proc/" .. pid .. "/status") or ""
  return tonumber(text:match(field .. ":%s*(%d+)")) or 0
end

-- the HTTP code of a GET, within 10 s (or `secs`; "000": no answer)
local function code_of(url, secs)
  -- -k: ebb run's HTTPS port, with its self-signed certificate
  local p = assert(io.popen("curl -sk -o /dev/null --max-time " .. (secs or 10) ..
                            " -w '%{http_code}' " .. S.shq(url)))
  local c = p:read("a")
  p:close()
  return c
end

-- Run the attacker in the background; call the result to wait for its end.
local function attack(port, mode, n, secs, path)
  local dir = S.tmpdir()
  os.execute(string.format("(python3 %s 127.0.0.1 %d %s %d %d %s >%s/out 2>&1 & echo $! >%s/pid) >/dev/null 2>&1",
                           ATTACK, port, mode, n, secs, S.shq(path or "/"), dir, dir))
  assert(S.eventually(function() return (S.read(dir .. "/out") or ""):match("ready") end, 60),
         "the attacker did not get going: " .. (S.read(dir .. "/out") or ""))
  return function()
    local done = S.eventually(function() return (S.read(dir .. "/out") or ""):match("done") end, secs + 60)
    if not done then
      os.execute("kill " .. tonumber(S.read(dir .. "/pid"):match("%d+")) .. " 2>/dev/null")
    end
    S.rmdir(dir)
    return done
  end
end

-- The attack, a request in the middle of it and one after it answered,
-- the peak memory grown by less than `bound` bytes.
local function holds(pid, port, url, bound, mode, n, path)
  local base = status_kb(pid, "VmHWM")
  local finish = attack(port, mode, n, 4, path)
  assert.equal("200", code_of(url), mode .. ": no answer during the attack")
  assert.truthy(finish())
  assert.equal("200", code_of(url), mode .. ": no answer after the attack")
  local grown = (status_kb(pid, "VmHWM") - base) * 1024
  assert.is_true(grown < bound, string.format("%s: peak memory grew by %.1f MiB (bound %d MiB)",
                                               mode, grown / MiB, bound // MiB))
  return grown
end

-- During the attack, each probe path answered with the code `want` names
-- (default "200"); the attacker ends by itself.
local function probes_answered(port, mode, n, path, want, scheme)
  local finish = attack(port, mode, n, 4, path)
  for _, p in ipairs{ "/healthz", "/readyz", "/livez" } do
    assert.equal((want or {})[p] or "200", code_of((scheme or "http") .. "://127.0.0.1:" .. port .. p, 5),
                 string.format("%s x%d: %s not answered", mode, n, p))
  end
  assert.truthy(finish())
end

-- The attack shapes every server is tried with: mode, connections, path.
local function shapes(conns, big, stream)
  local out = {
    { "idle", conns }, { "slowloris", conns, "/" }, { "slowbody", conns, "/" },
    { "slowread", conns, big },
  }
  if stream then
    out[#out + 1] = { "watch", conns, stream }
    out[#out + 1] = { "noread", conns, stream }
  end
  return out
end

describe("ebb serve under hostile clients", function()
  local srv, events

  setup(function()
    local dir = S.tmpdir()
    S.write(dir .. "/empty.json", '{"apiVersion":"v1","kind":"List","items":[]}')
    srv = S.start{ snapshot = dir .. "/empty.json" }
    S.rmdir(dir)
    assert.equal(201, (srv:request("POST", "/api/v1/namespaces",
                                   { apiVersion = "v1", kind = "Namespace", metadata = { name = "web" } })))
    -- two Events near etcd's limit: a list of them is a 2.7 MiB answer
    for i = 1, 2 do
      local code = srv:request("POST", "/api/v1/namespaces/web/events", {
        apiVersion = "v1", kind = "Event", metadata = { name = "probe-" .. i },
        involvedObject = { kind = "Pod", namespace = "web", name = "web-0" },
        reason = "Unhealthy", type = "Warning", message = string.rep("readiness probe failed ", 60000) })
      assert.equal(201, code)
    end
    events = "/api/v1/namespaces/web/events"
  end)

  teardown(function()
    if srv then srv:stop() end
  end)

  it("bounds the answers of clients that pipeline lists and never read", function()
    holds(srv.pid, srv.port, srv.url .. "/api/v1/namespaces", 256 * MiB, "slowread", 100, events)
  end)

  it("serves others while idle connections fill its connection limit", function()
    holds(srv.pid, srv.port, srv.url .. "/api/v1/namespaces", 256 * MiB, "idle", 1000)
  end)

  it("bounds bodies of clients that post 3 MiB and never finish", function()
    holds(srv.pid, srv.port, srv.url .. "/api/v1/namespaces", 256 * MiB, "post", 100, events)
  end)

  it("refuses a body declared over 3 MiB before reading it", function()
    holds(srv.pid, srv.port, srv.url .. "/api/v1/namespaces", 256 * MiB, "hugepost", 100, events)
  end)

  for _, sh in ipairs(shapes(300, "/api/v1/namespaces/web/events", "/api/v1/namespaces/web/pods?watch=1")) do
    it("answers probes while 300 clients attack: " .. sh[1], function()
      probes_answered(srv.port, sh[1], sh[2], sh[3])
    end)
  end
end)

describe("ebb serve's watches under clients that do not read", function()
  local srv

  setup(function()
    srv = S.start{ snapshot = "spec/fixtures/demo-cluster.json", "--churn", "20000" }
  end)

  teardown(function()
    if srv then srv:stop() end
  end)

  it("ends the watches rather than buffering for them, under churn", function()
    -- 100 watches of every pod never read while --churn changes pods:
    -- their events count toward the 128 MiB of unwritten answers, and the
    -- watches that hold the most are ended as the API server ends a watcher
    -- that falls behind (before: 16 MiB buffered for each, 1.6 GB).
    -- The churn starts with a watch that reads and runs until its own
    -- memory (the change history, a tick's events, the watcher's lag)
    -- has peaked: up to 130 MiB at 20,000 events a second, the generator's
    -- and not the HTTP server's, so the peak is measured from there.
    local reader = srv:watch("/api/v1/pods?watch=1", 120, true)
    local last, still = -1, 0
    S.eventually(function()   -- the peak unchanged for a second
      local now = status_kb(srv.pid, "VmHWM")
      still = now == last and still + 1 or 0
      last = now
      S.sleep(0.2)
      return still >= 5
    end, 6)
    -- The bound: 128 MiB of unwritten answers, 100 connections, and what
    -- the allocator keeps of the ended watches' buffers while new ones
    -- fill (measured 172-260 MiB on 2 cores; before the bounds, 1.6 GB).
    local ok, err = pcall(holds, srv.pid, srv.port, srv.url .. "/healthz", 320 * MiB, "noread", 100,
                          "/api/v1/pods?watch=1")
    reader:stop()
    assert(ok, err)
  end)

  it("applies no write it answers 429 under that load, and every write it answers 200", function()
    -- each PATCH adds an annotation of its own to one pod while 100 watches
    -- that never read fill the unwritten answers (before: some were answered
    -- 429, the API server's "Too many requests", and applied all the same)
    local code, list = srv:request("GET", "/api/v1/pods?limit=1")
    assert.equal(200, code)
    local pod = list.items[1].metadata
    local path = "/api/v1/namespaces/" .. pod.namespace .. "/pods/" .. pod.name
    local finish = attack(srv.port, "noread", 100, 4, "/api/v1/pods?watch=1")
    local codes = {}
    for i = 1, 30 do
      codes[i] = srv:request("PATCH", path, { metadata = { annotations = { ["ebb.dev/w" .. i] = "x" } } },
                             { ["Content-Type"] = "application/merge-patch+json" })
    end
    assert.truthy(finish())
    local c2, obj = srv:request("GET", path)
    assert.equal(200, c2)
    local ann = obj.metadata.annotations or {}
    for i, c in ipairs(codes) do
      if c == 429 then
        assert.is_nil(ann["ebb.dev/w" .. i], "PATCH " .. i .. " answered 429 and applied")
      else
        assert.equal(200, c, "PATCH " .. i)
        assert.equal("x", ann["ebb.dev/w" .. i], "PATCH " .. i .. " answered 200 and not applied")
      end
    end
  end)
end)

describe("ebb serve --reschedule under hostile clients", function()
  local srv

  teardown(function()
    if srv then srv:stop() end
  end)

  setup(function()
    srv = S.start{ snapshot = "spec/fixtures/demo-cluster.json", "--reschedule" }
  end)

  for _, sh in ipairs(shapes(300, "/api/v1/pods", "/api/v1/pods?watch=1")) do
    it("answers probes while 300 clients attack: " .. sh[1], function()
      probes_answered(srv.port, sh[1], sh[2], sh[3])
    end)
  end
end)

describe("ebb run's metrics port under hostile clients", function()
  local T = R.suite(before_each, after_each)

  local function start()
    T.srv = S.start{ snapshot = "spec/fixtures/demo-cluster.json" }
    -- plain HTTP: the attacker speaks HTTP (the TLS handshake's bounds are
    -- engine/test/test_httpd_tls.c's)
    local run = T.start{ policy_file = "spec/fixtures/demo-policy.yaml", "--interval", "1s", "--plain-http" }
    local port = tonumber(run:wait_log("on 127%.0%.0%.1:(%d+)", 15))
    assert.is_number(port, run:stderr())
    return run, port
  end

  it("bounds the answers of clients that pipeline /metrics and never read", function()
    local run, port = start()
    holds(run.pid, port, "http://127.0.0.1:" .. port .. "/healthz", 64 * MiB, "slowread", 100, "/metrics")
  end)

  it("answers probes while idle connections fill its connection limit", function()
    local run, port = start()
    holds(run.pid, port, "http://127.0.0.1:" .. port .. "/healthz", 64 * MiB, "idle", 500)
  end)

  it("refuses bodies over 64 KiB and bounds slow posts", function()
    local run, port = start()
    holds(run.pid, port, "http://127.0.0.1:" .. port .. "/healthz", 64 * MiB, "hugepost", 100, "/metrics")
    holds(run.pid, port, "http://127.0.0.1:" .. port .. "/readyz", 64 * MiB, "post", 100, "/metrics")
  end)
end)

describe("ebb run's probes under hostile clients", function()
  local srv, run, port

  setup(function()
    srv = S.start{ snapshot = "spec/fixtures/demo-cluster.json" }
    run = R.start(srv, { policy_file = "spec/fixtures/demo-policy.yaml", "--interval", "1s", "--plain-http" })
    port = tonumber(run:wait_log("on 127%.0%.0%.1:(%d+)", 15))
    assert.is_number(port, run:stderr())
    assert.truthy(S.eventually(function() return run:ready() end, 30), run:stderr())
  end)

  teardown(function()
    if run then run:stop() end
    if srv then srv:stop() end
  end)

  for _, sh in ipairs(shapes(100, "/metrics")) do
    it("answers probes while 100 clients attack: " .. sh[1], function()
      -- /livez is not served there: a 404 is an answer
      probes_answered(port, sh[1], sh[2], sh[3], { ["/livez"] = "404" })
    end)
  end
end)

-- The default, HTTPS: the attackers' bytes are no TLS handshake (idle
-- connections never start one, the others send plain HTTP and are dropped
-- at their first bytes); probes over TLS are answered all the same, and
-- the peak memory stays in the same bound.
describe("ebb run's HTTPS port under hostile clients", function()
  local srv, run, port

  setup(function()
    srv = S.start{ snapshot = "spec/fixtures/demo-cluster.json" }
    run = R.start(srv, { policy_file = "spec/fixtures/demo-policy.yaml", "--interval", "1s" })
    port = tonumber(run:wait_log("over HTTPS on 127%.0%.0%.1:(%d+)", 15))
    assert.is_number(port, run:stderr())
    assert.truthy(S.eventually(function() return run:ready() end, 30), run:stderr())
  end)

  teardown(function()
    if run then run:stop() end
    if srv then srv:stop() end
  end)

  for _, mode in ipairs{ "idle", "slowloris", "slowread" } do
    it("answers probes over TLS while 100 clients attack: " .. mode, function()
      probes_answered(port, mode, 100, "/metrics", { ["/livez"] = "404" }, "https")
    end)
  end

  it("bounds its memory while 500 connections never start their handshake", function()
    holds(run.pid, port, "https://127.0.0.1:" .. port .. "/healthz", 64 * MiB, "idle", 500)
  end)
end)
