-- EvictionsInBackground end to end: `ebb serve --evict-in-background`
-- answers the eviction of a pod annotated request-evict-only as KubeVirt's
-- interceptor does (429 "... Eviction triggered evacuation of VMI ...") and
-- marks the pod eviction-in-progress; `ebb run --feature-gates
-- EvictionsInBackground=true` takes that for an eviction going on: counted
-- against the limits while the pod lasts, not asked again, reported as
-- result="background" and as "success" once the pod is deleted.
local R = require("spec.integration.run_harness")
local S = R.S

local SNAP = "spec/fixtures/kubevirt.json"
local DB, CI = "vms/virt-launcher-db-7xq2p", "vms/virt-launcher-ci-4kd9s"
local WEB, API = "shop/web-5d8f7c6b9-k2m4n", "shop/api-6c7d8e9f0-p3q5r"

-- PodLifeTime over a day, oldest first: db (worker-1), ci (worker-2), web
-- (worker-1), api (worker-2); one eviction per node and cycle.
local POLICY = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 1
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
    args:
      evictLocalStoragePods: true
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 86400
      namespaces:
        include: [vms, shop]
  plugins:
    deschedule:
      enabled: [PodLifeTime]
]]

local function series(result, ns, node)
  return string.format('{result="%s",strategy="PodLifeTime",profile="default",namespace="%s",node="%s"}',
                       result, ns, node)
end

local function count(text, pattern)
  local _, n = text:gsub(pattern, "")
  return n
end

local function esc(s)
  return (s:gsub("%-", "%%-"))
end

describe("EvictionsInBackground against ebb serve --evict-in-background", function()
  local T = R.suite(before_each, after_each)

  it("tracks the evictions KubeVirt takes over until their pods are gone", function()
    T.srv = S.start{ snapshot = SNAP, "--evict-in-background" }
    local run = T.start{ policy = POLICY, "--feature-gates", "EvictionsInBackground=true",
                         "--interval", "1s" }
    assert.is_not_nil(run:wait_log("cycle 2:", 30), run:stderr())
    local err = run:stderr()
    -- cycle 1: both VMs migrate; each holds its node's one eviction
    assert.matches("eviction in background of pod " .. esc(DB) .. " %(PodLifeTime%): admission webhook " ..
                   "\"virt%-launcher%-eviction%-interceptor%.kubevirt%.io\" denied the request: Eviction " ..
                   "triggered evacuation of VMI \"vms/db\"", err)
    assert.matches("cycle 1: 0 evicted, 4 refused", err)
    -- cycle 2: not asked again
    assert.matches("pod " .. esc(DB) .. ": eviction in background already requested", err)
    assert.equal(1, count(err, "eviction in background of pod " .. esc(DB) .. " %("))
    assert.equal(1, count(err, "eviction in background of pod " .. esc(CI) .. " %("))
    assert.same({}, run:evicted())
    -- the server marked both pods and kept them
    local db = T.srv:get("/api/v1/namespaces/vms/pods/virt-launcher-db-7xq2p")
    assert.equal("kubevirt", db.metadata.annotations["descheduler.alpha.kubernetes.io/eviction-in-progress"])
    local m = run:metrics()
    assert.equal(1, R.metric(m, "descheduler_pods_evicted_total", series("background", "vms", "worker-1")), m)
    assert.equal(1, R.metric(m, "descheduler_pods_evicted_total", series("background", "vms", "worker-2")), m)
    assert.is_true(R.metric(m, "descheduler_pods_evicted_total",
      series("maximum number of evicted pods per node reached", "shop", "worker-1")) >= 2, m)

    -- db's VM has migrated: its pod is deleted, the eviction a success,
    -- and worker-1's limit is free for web
    local code = T.srv:request("DELETE", "/api/v1/namespaces/vms/pods/virt-launcher-db-7xq2p")
    assert.equal(200, code)
    assert.is_not_nil(run:wait_log("eviction in background of pod " .. esc(DB) .. " done: the pod is gone", 15),
                      run:stderr())
    assert.is_not_nil(run:wait_log("evicted pod " .. esc(WEB), 15), run:stderr())
    m = run:metrics()
    assert.equal(1, R.metric(m, "descheduler_pods_evicted_total", series("success", "vms", "worker-1")), m)
    assert.equal(1, R.metric(m, "descheduler_pods_evicted_total", series("success", "shop", "worker-1")), m)
    -- ci's migration still goes on: api waits, and ci is still asked once
    assert.is_nil(R.metric(m, "descheduler_pods_evicted_total", series("success", "vms", "worker-2")), m)
    assert.same({ WEB }, run:evicted())
    assert.equal(1, count(run:stderr(), "eviction in background of pod " .. esc(CI) .. " %("))
    assert.equal(0, run:stop())
  end)

  it("without the gate, the 429 is an error and the pod is asked again", function()
    T.srv = S.start{ snapshot = SNAP, "--evict-in-background" }
    local run = T.start{ policy = POLICY, "--once" }
    assert.equal(0, run:wait(30), run:stderr())
    local err = run:stderr()
    assert.matches("error evicting pod " .. esc(DB) .. " %(PodLifeTime%): 429 admission webhook", err)
    -- the refusals leave the node limits unspent: web and api go
    assert.same(R.sorted({ WEB, API }), R.sorted(run:evicted()))
    assert.matches("cycle 1: 2 evicted, 2 refused", err)
    local again = T.start{ policy = POLICY, "--once" }
    assert.equal(0, again:wait(30), again:stderr())
    assert.matches("error evicting pod " .. esc(DB) .. " %(PodLifeTime%): 429", again:stderr())
  end)

  it("a new run picks up the evictions in progress from the pods it lists", function()
    T.srv = S.start{ snapshot = SNAP, "--evict-in-background" }
    local first = T.start{ policy = POLICY, "--feature-gates", "EvictionsInBackground=true", "--once" }
    assert.equal(0, first:wait(30), first:stderr())
    assert.matches("cycle 1: 0 evicted, 4 refused", first:stderr())
    -- the annotation the server set tells the next run: no request, limits held
    local second = T.start{ policy = POLICY, "--feature-gates", "EvictionsInBackground=true", "--once" }
    assert.equal(0, second:wait(30), second:stderr())
    local err = second:stderr()
    assert.matches("pod " .. esc(DB) .. ": eviction in background already requested", err)
    assert.matches("pod " .. esc(CI) .. ": eviction in background already requested", err)
    assert.equal(0, count(err, "eviction in background of pod "))
    assert.same({}, second:evicted())
    assert.matches("cycle 1: 0 evicted, 2 refused", err)
  end)

  it("refuses an unknown feature gate before it talks to the cluster", function()
    T.srv = S.start{ snapshot = SNAP }
    local run = T.start{ policy = POLICY, "--feature-gates", "EvictionsInForeground=true", "--once" }
    assert.equal(2, run:wait(10))
    assert.matches("%-%-feature%-gates: unrecognized feature gate: EvictionsInForeground %(known: " ..
                   "EvictionsInBackground%)", run:stderr())
  end)
end)
