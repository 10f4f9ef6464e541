-- LoopGuard in `ebb run` against a real control plane
-- (spec/integration/k8s_harness.lua: kube-apiserver, the ReplicaSet
-- controller, kube-scheduler): a loop that really happens there (the
-- replacements of what LowNodeUtilization evicts are bound back to the node
-- they left), and the same policy with LoopGuard: no eviction, the
-- refusals in the log and the metrics, one EvictionLoopStopped Event.
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")

describe("LoopGuard against kube-apiserver", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local start = R.suite(before_each, after_each, cp).start

  local function esc(s) return (s:gsub("%p", "%%%0")) end

  local function policy(guard)
    return ([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 20, memory: 20}
      targetThresholds: {cpu: 50, memory: 50}
%s
  plugins:
    balance:
      enabled: [LowNodeUtilization]
%s
]]):format(guard and "  - name: LoopGuard" or "",
           guard and "    filter: {enabled: [LoopGuard]}\n    preEvictionFilter: {enabled: [LoopGuard]}" or "")
  end

  -- the batch node at 75% cpu: six workers pinned to it; two idle web nodes
  local function pinned_cluster(prefix)
    local ns = cp:namespace(prefix)
    local batch = cp:node(ns .. "-batch", { labels = { pool = "batch-" .. ns } })
    cp:node(ns .. "-web1", { labels = { pool = "web-" .. ns } })
    cp:node(ns .. "-web2", { labels = { pool = "web-" .. ns } })
    cp:replicaset(ns, "worker", 6, { cpu = "500m", memory = "256Mi",
                                      node_selector = { pool = "batch-" .. ns } })
    cp:wait(function() return #cp:pods(ns, "app=worker", "bound") == 6 end, 30,
      "kube-scheduler binding the workers")
    cp:run_pods(ns, "app=worker")
    return ns, batch
  end

  it("sees the loop without it: the replacements are bound back to the node they left", function()
    local ns, batch = pinned_cluster("loop")
    local run = start{ policy = policy(false), "--once" }
    assert.equal(0, run:wait(60), run:stderr())
    local evicted = run:evicted()
    assert.is_true(#evicted >= 1, run:stderr())
    cp:finish_terminating(ns)
    local bound = cp:wait(function()
      local p = cp:pods(ns, "app=worker", "bound")
      return #p == 6 and p
    end, 30, "the replacements bound")
    for _, p in ipairs(bound) do
      assert.equal(batch, p.spec.nodeName)
    end
  end)

  it("refuses those evictions as futile, counts them and warns on the workload once", function()
    local ns, batch = pinned_cluster("guard")
    local run = start{ policy = policy(true), "--interval", "1h" }
    assert.truthy(run:wait_log("cycle 1: %d+ evicted", 60), run:stderr())
    local err = run:stderr()
    assert.same({}, run:evicted())
    assert.matches("eviction refused: pod " .. esc(ns) .. "/worker%-%w+ on " .. esc(batch) ..
      " %(LowNodeUtilization%): futile: LoopGuard: its replacement would land back on " .. esc(batch), err)
    local m = run:metrics()
    assert.matches('ebb_evictions_refused_total{reason="futile",plugin="LowNodeUtilization",profile="default"} %d+', m)
    -- filters' refusals are not evictions tried: the upstream counter has none
    assert.not_matches('descheduler_pods_evicted_total{result="[^"]*",strategy="LowNodeUtilization"', m)
    local events = cp:wait(function()
      local evs = {}
      for _, ev in ipairs(cp:events(ns)) do
        if ev.reason == "EvictionLoopStopped" then evs[#evs + 1] = ev end
      end
      return #evs >= 1 and evs
    end, 10, "the EvictionLoopStopped Event")
    assert.equal(1, #events)   -- one workload, one cycle
    local ev = events[1]
    assert.equal("Warning", ev.type)
    assert.equal("ReplicaSet", ev.regarding.kind)
    assert.equal("apps/v1", ev.regarding.apiVersion)
    assert.equal("worker", ev.regarding.name)
    assert.matches("LowNodeUtilization did not evict pod " .. ns .. "/worker", ev.note, 1, true)
    assert.matches("would land back on " .. batch, ev.note, 1, true)
    -- nothing was evicted
    assert.equal(6, #cp:pods(ns, "app=worker", "live"))
  end)

  it("labels the eviction counter with the workload when asked", function()
    local ns = pinned_cluster("labels")
    local run = start{ policy = policy(false), "--interval", "1h", "--metrics-workload-labels" }
    assert.truthy(run:wait_log("cycle 1: %d+ evicted", 60), run:stderr())
    assert.is_true(#run:evicted() >= 1)
    assert.matches('descheduler_pods_evicted_total{result="success",strategy="LowNodeUtilization",' ..
      'profile="default",namespace="' .. esc(ns) .. '",node="[^"]+",workload_kind="ReplicaSet",workload="worker"} %d',
      run:metrics())
  end)
end)
