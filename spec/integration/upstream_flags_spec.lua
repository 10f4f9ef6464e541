-- ebb started as upstream's descheduler is (no command, upstream's flags:
-- its image, Job, CronJob, Deployment and Helm chart), against `ebb serve`
-- on the demo cluster. Every flag upstream's descheduler takes is either
-- accepted and does what upstream's does, or refused with an error naming
-- it (exit 2). The flag list is upstream v0.36's `descheduler --help`.
local R = require("spec.integration.run_harness")
local S = R.S

local DEMO, LIFETIME = R.DEMO, R.LIFETIME   -- 7 evictions, 5 PDB refusals

-- klog's header: Lmmdd hh:mm:ss.uuuuuu PID file:line] msg
local KLOG = "^[IWEF]%d%d%d%d %d%d:%d%d:%d%d%.%d%d%d%d%d%d +%d+ [%w_%.]+:%d+%] (.*)$"

local function lines(text)
  local out = {}
  for line in text:gmatch("([^\n]*)\n") do out[#out + 1] = line end
  return out
end

-- Every line of a log in klog's format: the messages.
local function klog_messages(text)
  local msgs = {}
  for i, line in ipairs(lines(text)) do
    local msg = line:match(KLOG)
    assert(msg, "line " .. i .. " is not klog's: " .. line)
    msgs[#msgs + 1] = msg
  end
  return msgs
end

-- Every line of a log as component-base's JSON logger writes it: the objects.
local function json_records(text)
  local out = {}
  for i, line in ipairs(lines(text)) do
    local o = S.json.decode(line)
    assert(type(o) == "table", "line " .. i .. " is not a JSON object: " .. line)
    assert(type(o.ts) == "number" and o.ts > 1.7e9, "line " .. i .. ": ts: " .. line)
    assert(type(o.msg) == "string", "line " .. i .. ": msg: " .. line)
    assert(type(o.caller) == "string" and o.caller:match("^[%w_%.]+:%d+$"), "line " .. i .. ": caller: " .. line)
    assert(({ error = true, warning = true, info = true, debug = true })[o.level], "line " .. i .. ": level")
    assert((o.level == "info" or o.level == "debug") == (type(o.v) == "number"), "line " .. i .. ": v: " .. line)
    out[#out + 1] = o
  end
  return out
end

-- Flags ebb cannot honour, with a value as a manifest would give: exit 2 and
-- the error names the flag.
local REFUSED = {
  { "--tls-cipher-suites=TLS_AES_128_GCM_SHA256" },
  { "--tls-min-version=VersionTLS12" }, { "--tls-sni-cert-key=a.crt,a.key" },
  { "--tls-curve-preferences=X25519" }, { "--http2-max-streams-per-connection=100" },
  { "--permit-address-sharing" }, { "--permit-port-sharing" },
  { "--otel-collector-endpoint=otel:4317" }, { "--otel-transport-ca-cert=/ca.crt" },
  { "--otel-service-name=descheduler" }, { "--otel-trace-namespace=kube-system" },
  { "--otel-sample-rate=1.0" }, { "--otel-fallback-no-op-on-error" },
  { "--vmodule=lownodeutilization=4" },
  { "--log-json-info-buffer-size=0" }, { "--log-json-split-stream" },
  { "--log-text-info-buffer-size=0" }, { "--log-text-split-stream" },
  { "--enable-http2", "--enable-http2=true" }, { "--disable-http2-serving=false", "--disable-http2-serving=false" },
  { "--client-connection-content-type=application/vnd.kubernetes.protobuf", "--client-connection-content-type" },
  { "--leader-elect-resource-lock=configmaps", "--leader-elect-resource-lock" },
  { "--logging-format=xml", "--logging-format" }, { "--v=loud", "--v" }, { "--dry-run=maybe", "--dry-run" },
  { "--disable-metrics=sometimes", "--disable-metrics" }, { "--leader-elect=yes", "--leader-elect" },
  { "--descheduling-interval=often", "--interval" },
  -- ebb's own flags read with the same care
  { "--page-size=lots", "--page-size" }, { "--page-size=0", "--page-size" },
}

describe("ebb as upstream's descheduler (no command, upstream's flags)", function()
  local T = R.suite(before_each, after_each)

  local function start(...)
    return T.start{ command = false, policy = LIFETIME, ... }
  end

  it("refuses each flag it cannot honour, naming it, exit 2", function()
    T.srv = S.start{ snapshot = DEMO }
    for _, case in ipairs(REFUSED) do
      local run = start(case[1])
      assert.equal(2, run:wait(20), case[1] .. ": " .. run:stderr())
      local name = case[2] or case[1]:match("^(%-%-[%w%-]+)")
      assert.truthy(run:stderr():find("ebb: error: " .. name, 1, true), case[1] .. ": " .. run:stderr())
    end
  end)

  -- Accepted flags, each with what it must have done. Every run is
  -- `ebb --policy-config-file F [flag]`: without --descheduling-interval,
  -- one cycle and exit 0.
  local ACCEPTED = {
    { { "--dry-run" }, function(run, text)
        assert.matches("cycle 1: 7 evicted, 5 refused, 0 plugin errors in [%d%.]+ s %(dry run%)", text)
        assert.equal(T.before, #R.pods(T.srv))
      end },
    { { "--dry-run=true" }, function(run, text)
        assert.matches("%(dry run%)", text)
        assert.equal(T.before, #R.pods(T.srv))
      end },
    { { "--dry-run=false" }, function(run, text)
        assert.not_matches("dry run", text)
        assert.equal(T.before - 7, #R.pods(T.srv))
      end },
    { { "--dry-run", "--v=3" }, function(run, text) klog_messages(text) end },
    { { "--dry-run", "--v", "0" }, function(run, text) klog_messages(text) end },
    { { "--dry-run", "--logging-format=text" }, function(run, text)
        local msgs = klog_messages(text)
        assert.truthy(#msgs > 3)
      end },
    { { "--dry-run", "--logging-format", "json" }, function(run, text)
        local recs = json_records(text)
        local cycle
        for _, o in ipairs(recs) do
          if o.msg:match("^cycle 1: 7 evicted") then cycle = o end
        end
        assert.truthy(cycle, text)
        assert.equal("info", cycle.level)
        assert.equal(0, cycle.v)
      end },
    { { "--dry-run", "--disable-metrics" }, function() end },
    { { "--dry-run", "--disable-metrics=false" }, function() end },
    { { "--dry-run", "--client-connection-qps=20", "--client-connection-burst", "40" }, function() end },
    { { "--dry-run", "--client-connection-content-type=application/json" }, function() end },
    { { "--dry-run", "--feature-gates=EvictionsInBackground=true" }, function() end },
    { { "--dry-run", "--log-flush-frequency=5s" }, function() end },
    { { "--dry-run", "--enable-http2=false", "--disable-http2-serving" }, function() end },
    { { "--dry-run", "--secure-port=0" }, function(run, text) assert.not_matches("serving", text) end },
    { { "--dry-run", "--bind-address=127.0.0.1" }, function(run, text)
        assert.matches("on 127%.0%.0%.1:%d+", text)
      end },
    { { "--dry-run", "--leader-elect=false" }, function() end },
    { { "--dry-run", "--descheduling-interval=0" }, function() end },
  }

  it("accepts upstream's flags and runs once without --descheduling-interval", function()
    for _, case in ipairs(ACCEPTED) do
      T.srv = S.start{ snapshot = DEMO }
      T.before = #R.pods(T.srv)
      local run = start(table.unpack(case[1]))
      local label = table.concat(case[1], " ")
      assert.equal(0, run:wait(30), label .. ": " .. run:stderr())
      case[2](run, run:stderr())
      T.srv:stop()
      T.srv = nil
    end
  end)

  it("logs each refused eviction with its reason at the default level", function()
    T.srv = S.start{ snapshot = DEMO }
    local run = start("--dry-run")
    assert.equal(0, run:wait(30), run:stderr())
    local n = 0
    for _, msg in ipairs(klog_messages(run:stderr())) do
      if msg:match("^eviction refused: pod [%w%-%.]+/[%w%-%.]+ on %S+ %(PodLifeTime%): pdb") then n = n + 1 end
    end
    assert.equal(5, n, run:stderr())
  end)

  it("loops with --descheduling-interval, serving health but not /metrics with --disable-metrics", function()
    T.srv = S.start{ snapshot = DEMO }
    local run = start("--dry-run", "--descheduling-interval", "1h", "--disable-metrics")
    assert.truthy(run:wait_log("cycle 1: 7 evicted", 30), run:stderr())
    assert.is_nil(run:status())
    assert.equal(404, (run:http("/metrics")))
    assert.equal(200, (run:http("/healthz")))
    assert.equal(0, run:stop())
  end)

  it("takes the Lease upstream's leader-election flags name", function()
    T.srv = S.start{ snapshot = DEMO }
    local run = start("--descheduling-interval=1h", "--leader-elect", "--leader-elect-resource-name=ebb-lock",
                      "--leader-elect-resource-namespace", "default", "--leader-elect-resource-lock=leases",
                      "--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s",
                      "--leader-elect-retry-period=2s")
    local lease = S.eventually(function()
      local code, obj = T.srv:request("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/ebb-lock")
      return code == 200 and obj
    end, 20)
    assert.truthy(lease, run:stderr())
    assert.equal(15, lease.spec.leaseDurationSeconds)
  end)

  it("logs each node's utilization and class at --v=3 (none at --v=0), in both formats", function()
    local helm = S.read("spec/fixtures/policies/helm-default.yaml")
    local snapshot = S.json.decode(S.read("spec/fixtures/utilization.json"))
    local nodes = {}
    for _, item in ipairs(snapshot.items) do
      if item.kind == "Node" then nodes[#nodes + 1] = item.metadata.name end
    end
    table.sort(nodes)
    local NODE = '^"Node is (%a[%a ]+)" node="([^"]+)" usage={[^}]*"cpu":"[^"]+"[^}]*} usagePercentage={[^}]*"cpu":[%d%.]+'
    for _, case in ipairs{ { "--v=3", "text" }, { "--v=3", "json" }, { "--v=0", "text" } } do
      T.srv = S.start{ snapshot = "spec/fixtures/utilization.json" }
      local run = T.start{ command = false, policy = helm, "--dry-run", case[1], "--logging-format=" .. case[2] }
      assert.equal(0, run:wait(30), run:stderr())
      local msgs = {}
      if case[2] == "json" then
        for _, o in ipairs(json_records(run:stderr())) do msgs[#msgs + 1] = o.msg end
      else
        msgs = klog_messages(run:stderr())
      end
      local seen = {}
      for _, m in ipairs(msgs) do
        local class, node = m:match(NODE)
        if node then
          assert.truthy(({ underutilized = 1, overutilized = 1, ["appropriately utilized"] = 1 })[class], m)
          seen[#seen + 1] = node
        end
      end
      table.sort(seen)
      assert.same(case[1] == "--v=3" and nodes or {}, seen, run:stderr())
      T.srv:stop()
      T.srv = nil
    end
  end)

  it("refuses --leader-elect without an interval, as upstream does", function()
    T.srv = S.start{ snapshot = DEMO }
    local run = start("--leader-elect")
    assert.equal(2, run:wait(20))
    assert.matches("ebb: error: %-%-leader%-elect needs an interval", run:stderr())
  end)
end)
