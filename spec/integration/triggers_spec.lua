-- Event-triggered runs during a live `ebb run` against `ebb serve`: a
-- plugin that declares the changes it reacts to runs shortly after one,
-- with the nodes concerned, between the periodic cycles.
local R = require("spec.integration.run_harness")
local S = R.S

local DEMO = "spec/fixtures/demo-cluster.json"
local NODE = "ip-10-0-3-25.eu-west-1.compute.internal"
-- the active pods of NODE that no DaemonSet owns
local ON_NODE = { "shop/cart-5d7f8c6b9-z7a8b", "shop/frontend-6b8f9d7c5-m9n0p",
                  "shop/recommender-4e5f6a7b8-l5m6n" }

local TAINTS = [[
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

local now_s = require("spec.shell").now

local function taint(srv, node, taints)
  return srv:request("PATCH", "/api/v1/nodes/" .. node, { spec = { taints = taints } },
    { ["Content-Type"] = "application/merge-patch+json" })
end

describe("event-triggered runs", function()
  local T = R.suite(before_each, after_each)

  it("evicts within 2 s of a new NoSchedule taint, between periodic cycles", function()
    T.srv = S.start{ snapshot = DEMO }
    local run = T.start{ policy = TAINTS, "--interval", "1h" }
    assert.is_not_nil(run:wait_log("cycle 1:", 15), run:stderr())
    local before = #run:evicted()

    local t0 = now_s()
    local code = taint(T.srv, NODE, { { key = "maintenance", value = "true", effect = "NoSchedule" } })
    assert.equal(200, code)
    -- the first eviction of a pod of the tainted node, within 2 s
    local got = S.eventually(function()
      local ev = run:evicted()
      return #ev > before and ev
    end, 2)
    local elapsed = now_s() - t0
    assert.is_truthy(got, "no eviction within 2 s of the taint:\n" .. run:stderr())
    assert.is_true(elapsed <= 2.0, string.format("first eviction after %.2f s", elapsed))
    assert.is_not_nil(run:wait_log("triggered run, cycle 2: %d+ evicted", 5), run:stderr())
    local err = run:stderr()
    assert.matches("changes %(node%-taints%) on 1 node %(" .. NODE:gsub("[%-%.]", "%%%0") .. "%)", err)
    -- every pod evicted by the triggered run was on the tainted node
    local on = {}
    for _, k in ipairs(ON_NODE) do on[k] = true end
    local after = run:evicted()
    assert.is_true(#after > before)
    for i = before + 1, #after do assert.is_true(on[after[i]], after[i]) end
    local m = run:metrics()
    assert.equal(1, R.metric(m, "ebb_cycles_total", '{result="triggered"}'))
    assert.equal(1, R.metric(m, "ebb_cycles_total", '{result="done"}'))
  end)

  it("leaves changes no plugin reacts to alone", function()
    T.srv = S.start{ snapshot = DEMO }
    local lifetime = TAINTS:gsub("RemovePodsViolatingNodeTaints", "PodLifeTime")
      :gsub("  %- name: PodLifeTime\n", "  - name: PodLifeTime\n    args: {maxPodLifeTimeSeconds: 999999999}\n", 1)
    local run = T.start{ policy = lifetime, "--interval", "1h", "--trigger-delay", "100ms" }
    assert.is_not_nil(run:wait_log("cycle 1:", 15), run:stderr())
    assert.equal(200, (taint(T.srv, NODE, { { key = "maintenance", value = "true", effect = "NoSchedule" } })))
    S.sleep(1)
    assert.is_nil(run:stderr():match("triggered run"))
    assert.is_nil(run:stderr():match("changes %("))
  end)

  it("does not trigger on a standby without the lease", function()
    T.srv = S.start{ snapshot = DEMO }
    local lease = { "--leader-elect", "--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
                    "--leader-elect-retry-period", "500ms" }
    local a = T.start{ policy = TAINTS, "--interval", "1h", table.unpack(lease) }
    assert.is_not_nil(a:wait_log("cycle 1:", 15), a:stderr())
    local b = T.start{ policy = TAINTS, "--interval", "1h", table.unpack(lease) }
    S.sleep(1)
    assert.equal(200, (taint(T.srv, NODE, { { key = "maintenance", value = "true", effect = "NoSchedule" } })))
    assert.is_not_nil(a:wait_log("triggered run", 5), a:stderr())
    S.sleep(1.5)
    assert.is_nil(b:stderr():match("triggered run"))
    assert.same({}, b:evicted())
  end)
end)
