-- A script that hangs where its time budget cannot stop it cannot stop
-- `ebb run` from serving. build/ebb-test's ebb.test_hang sleeps in C, as a
-- native call that hangs would: the loop thread still answers /metrics,
-- /healthz fails naming the plugin, the Lease goes to a standby at once,
-- and SIGTERM ends the process.
local R = require("spec.integration.run_harness")
local S = R.S
local shell = require("spec.shell")

local DEMO = "spec/fixtures/demo-cluster.json"
local TEST_EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb-test"

local HANG = [[
local ebb = require("ebb")
return {
  name = "Hang",
  deschedule = function(ctx, nodes)
    ebb.test_hang(600)
  end,
}
]]

local POLICY = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: Hang
    limits: {timeout: 1s}
  plugins:
    deschedule:
      enabled: [Hang]
]]

-- Evicts nothing: the standby's policy.
local QUIET = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 999999999
  plugins:
    deschedule:
      enabled: [PodLifeTime]
]]

local LE = { "--leader-elect", "--leader-elect-lease-duration", "30s",
  "--leader-elect-renew-deadline", "20s", "--leader-elect-retry-period", "500ms",
  "--leader-elect-resource-namespace", "kube-system", "--interval", "1s" }

local LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/descheduler"

local function with_le(opts)
  for _, f in ipairs(LE) do opts[#opts + 1] = f end
  return opts
end

describe("ebb run with a script stuck in a native call", function()
  local T = R.suite(before_each, after_each)

  it("still serves, fails /healthz naming the plugin, gives up the lease and exits on SIGTERM", function()
    T.srv = S.start{ snapshot = DEMO }
    local dir = S.tmpdir()
    shell.write(dir .. "/hang.lua", HANG)
    local a = T.start(with_le{ binary = TEST_EBB, policy = POLICY, "--policy-dir", dir })
    assert.is_not_nil(a:wait_log("acquired lease", 15), a:stderr())
    local held = T.srv:get(LEASE).spec.holderIdentity
    assert.matches("_", held)

    -- the budget's stop does not reach a sleeping C call: the process says so
    assert.is_not_nil(a:wait_log("plugin Hang %(profile default%) has run [%d.]+ s past its time " ..
      "budget of 1000 ms and does not stop: no more cycles, no evictions, giving up the lease", 30),
      a:stderr())
    local code, body = a:get("/healthz")
    assert.equal(500, code)
    assert.matches("plugin Hang %(profile default%) has run [%d.]+ s past its time budget", body)
    local m = a:metrics()
    assert.equal(1, R.metric(m, "ebb_plugin_stuck", '{plugin="Hang",profile="default"}'))
    assert.equal(0, R.metric(m, "ebb_leader"))
    assert.equal(200, (a:get("/readyz")))

    -- the lease was released (not left to expire in 30 s): a standby leads
    assert.is_not_nil(a:wait_log("lease released: a standby can lead", 10), a:stderr())
    local b = T.start(with_le{ policy = QUIET })
    assert.is_not_nil(b:wait_log("acquired lease", 10), b:stderr())
    assert.not_equal(held, T.srv:get(LEASE).spec.holderIdentity)

    -- SIGTERM: the process leaves without the script thread
    a:kill("TERM")
    assert.equal(1, a:wait(15), a:stderr())
    assert.matches("exiting after 4000 ms without the script thread: plugin Hang", a:stderr())
    -- the standby still serves
    assert.equal(200, (b:get("/healthz")))
  end)
end)
