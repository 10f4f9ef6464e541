-- `ebb run` in a real control plane (spec/integration/k8s_harness.lua):
-- evictions through the real Eviction API with PodDisruptionBudgets whose
-- status the disruption controller computes, the ReplicaSet controller and
-- kube-scheduler replacing what ebb evicted and the next cycles seeing it,
-- Events as the real server validates them, leader election on a real
-- Lease, hot reload, and `ebb record` + `ebb simulate` agreeing with
-- `ebb run --once --dry-run`. The harness plays the kubelet: it marks bound
-- pods Running and Ready and finishes pods that terminate.
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")
local S = R.S
local shell = require("spec.shell")
local json = K.json

local write = S.write

local function names(pods)
  local out = {}
  for _, p in ipairs(pods) do out[#out + 1] = p.metadata.namespace .. "/" .. p.metadata.name end
  table.sort(out)
  return out
end

local function taint(cp, node, key)
  cp:patch("/api/v1/nodes/" .. node, { spec = { taints = { { key = key or "dedicated", value = "x",
                                                               effect = "NoSchedule" } } } })
end

describe("ebb run in a real control plane", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local start = R.suite(before_each, after_each, cp).start

  -- Three pods of ReplicaSet db on n1 under a PDB that lets one go at a
  -- time; n1 is tainted. Each cycle the real Eviction API lets one pod go
  -- and answers 429 for the others; the ReplicaSet controller replaces it,
  -- kube-scheduler binds the replacement to n2, and once it is Ready the
  -- disruption controller allows the next eviction, which a later cycle
  -- makes. At the end every db pod is on n2 and none was evicted twice.
  it("drains a tainted node one pod at a time through the Eviction API, as the PDB allows", function()
    local ns = cp:namespace("drain")
    local n1, n2 = ns .. "-n1", ns .. "-n2"
    cp:node(n1)
    cp:node(n2, { unschedulable = true })
    cp:replicaset(ns, "db", 3, { cpu = "100m" })
    local original = cp:wait(function()
      local p = cp:pods(ns, "app=db", "bound")
      return #p == 3 and p
    end, 30, "db bound to n1")
    for _, p in ipairs(original) do assert.equal(n1, p.spec.nodeName) end
    cp:run_pods(ns)
    cp:pdb(ns, "db", { app = "db" }, { minAvailable = 2 })
    cp:wait_pdb(ns, "db", function(s) return s.disruptionsAllowed == 1 and s.currentHealthy == 3 end)
    cp:patch("/api/v1/nodes/" .. n2, { spec = { unschedulable = false } })
    taint(cp, n1)

    local run = start{ policy = K.taints_policy(ns, "evictionFailureEventNotification: true"),
                       "--interval", "2s" }
    cp:wait(function()
      cp:run_pods(ns)              -- the kubelet starts what kube-scheduler bound
      cp:finish_terminating(ns)    -- and finishes what was evicted
      local live = cp:pods(ns, "app=db", "live")
      if #live ~= 3 then return false end
      for _, p in ipairs(live) do
        if p.spec.nodeName ~= n2 or (p.status or {}).phase ~= "Running" then return false end
      end
      return true
    end, 120, "every db pod replaced on n2")
    local err = run:stderr()
    -- exactly the three original pods, each once
    assert.same(names(original), R.sorted(run:evicted()))
    -- refused by the real server, in its words, until the replacement was ready
    assert.matches("error evicting pod " .. ns:gsub("%-", "%%-") .. "/db%-%w+ %(RemovePodsViolatingNodeTaints%): " ..
      "429 Cannot evict pod as it would violate the pod's disruption budget%. " ..
      "The disruption budget db needs 2 healthy pods and has 2 currently", err)
    -- one eviction per cycle at most: the budget allowed one at a time
    for cycle, n in err:gmatch("cycle (%d+): (%d+) evicted") do
      assert.is_true(tonumber(n) <= 1, "cycle " .. cycle .. " evicted " .. n)
    end
    -- the Events the real server stored: Descheduled for each eviction,
    -- EvictionFailed (evictionFailureEventNotification) for the refusals
    local normal, warning = {}, {}
    for _, ev in ipairs(cp:events(ns)) do
      if ev.reportingController == "ebb" then
        if ev.type == "Normal" then
          normal[ns .. "/" .. ev.regarding.name] = true
        else
          assert.equal("EvictionFailed", ev.reason)
          assert.matches("disruption budget", ev.note)
          warning[#warning + 1] = ev
        end
      end
    end
    for _, key in ipairs(names(original)) do assert.is_true(normal[key], key) end
    assert.is_true(#warning > 0)
  end)

  it("holds a real Lease: only the holder evicts, the other takes over when it stops", function()
    local ns = cp:namespace("lease")
    local n1, n2 = ns .. "-n1", ns .. "-n2"
    cp:node(n1)
    cp:node(n2)
    cp:replicaset(ns, "first", 2, { node_selector = { ["kubernetes.io/hostname"] = n1 } })
    cp:replicaset(ns, "second", 2, { node_selector = { ["kubernetes.io/hostname"] = n2 } })
    cp:wait(function() return #cp:pods(ns, nil, "bound") == 4 end, 30, "4 pods bound")
    local first = names(cp:pods(ns, "app=first"))
    local second = names(cp:pods(ns, "app=second"))
    local le = { "--leader-elect", "--leader-elect-resource-namespace", ns,
                 "--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "4s",
                 "--leader-elect-retry-period", "1s", "--interval", "1s" }
    local policy = K.taints_policy(ns)
    local a = start{ policy = policy, table.unpack(le) }
    local a_id = a:wait_log("leader election: acquired lease " .. ns:gsub("%-", "%%-") .. "/descheduler as (%S+)", 30)
    assert.is_string(a_id, a:stderr())
    local b = start{ policy = policy, table.unpack(le) }
    cp:wait(function() return b:ready() end, 30, "the standby synced")
    local lease = cp:get("/apis/coordination.k8s.io/v1/namespaces/" .. ns .. "/leases/descheduler")
    assert.equal(a_id, lease.spec.holderIdentity)
    assert.equal(6, lease.spec.leaseDurationSeconds)
    -- renewals move renewTime, not acquireTime (as client-go's)
    local renewed = cp:wait(function()
      local l = cp:get("/apis/coordination.k8s.io/v1/namespaces/" .. ns .. "/leases/descheduler")
      return l.spec.renewTime ~= lease.spec.renewTime and l
    end, 10, "a renewal")
    assert.equal(lease.spec.acquireTime, renewed.spec.acquireTime)
    -- the holder evicts what the taint on n1 concerns; the standby nothing
    taint(cp, n1)
    cp:wait(function() return #a:evicted() == 2 end, 30, "the leader's evictions")
    assert.same(first, R.sorted(a:evicted()))
    assert.same({}, b:evicted())
    -- SIGTERM: the leader releases the Lease and the standby takes it
    assert.equal(0, a:stop())
    local b_id = b:wait_log("leader election: acquired lease " .. ns:gsub("%-", "%%-") .. "/descheduler as (%S+)", 20)
    assert.is_string(b_id, b:stderr())
    assert.not_equal(a_id, b_id)
    lease = cp:get("/apis/coordination.k8s.io/v1/namespaces/" .. ns .. "/leases/descheduler")
    assert.equal(b_id, lease.spec.holderIdentity)
    assert.is_true(lease.spec.leaseTransitions >= 1)
    taint(cp, n2)
    cp:wait(function() return #b:evicted() == 2 end, 30, "the new leader's evictions")
    assert.same(second, R.sorted(b:evicted()))
  end)

  it("reloads a changed policy, keeps the last good one on a broken edit, and says so in a real Event", function()
    local ns = cp:namespace("reload")
    local n1 = ns .. "-n1"
    cp:node(n1)
    cp:node(ns .. "-n2")
    cp:replicaset(ns, "web", 2, { node_selector = { ["kubernetes.io/hostname"] = n1 } })
    cp:wait(function() return #cp:pods(ns, nil, "bound") == 2 end, 30, "web bound")
    local web = names(cp:pods(ns))
    taint(cp, n1)
    local dir = S.tmpdir()
    local policy = dir .. "/policy.yaml"
    write(policy, K.taints_policy("some-other-namespace"))
    local run = start{ policy_file = policy, "--interval", "1s", "--reload-debounce", "200ms",
                       env = { POD_NAME = "ebb-0", POD_NAMESPACE = ns } }
    run:wait_log("cycle 2:", 20)
    assert.same({}, run:evicted())
    -- a broken edit: refused, the running generation stays, a Warning Event
    write(policy, K.taints_policy(ns):gsub("RemovePodsViolatingNodeTaints%]", "NoSuchPlugin]"))
    assert.is_string(run:wait_log("policy reload failed, generation 1", 20), run:stderr())
    local ev = cp:wait(function()
      for _, e in ipairs(cp:events(ns)) do
        if e.reason == "PolicyReloadFailed" then return e end
      end
    end, 10, "the PolicyReloadFailed Event")
    assert.equal("Warning", ev.type)
    assert.equal("ebb-0", ev.regarding.name)
    assert.matches("NoSuchPlugin", ev.note)
    -- a good edit: the next generation evicts the pods of this namespace
    write(policy, K.taints_policy(ns))
    assert.is_string(run:wait_log("policy generation 2 active", 20), run:stderr())
    cp:wait(function() return #run:evicted() == 2 end, 30, "evictions by generation 2")
    assert.same(web, R.sorted(run:evicted()))
    S.rmdir(dir)
  end)

  it("ebb record, then ebb simulate on the recording, plans what ebb run --once --dry-run does", function()
    local ns = cp:namespace("record")
    local n1, n2, n3 = ns .. "-n1", ns .. "-n2", ns .. "-n3"
    cp:node(n1)
    cp:node(n2, { unschedulable = true })
    cp:node(n3, { unschedulable = true })
    -- duplicates: both dup pods on n1, other nodes able to take them
    cp:replicaset(ns, "dup", 2, { cpu = "100m" })
    cp:wait(function() return #cp:pods(ns, "app=dup", "bound") == 2 end, 30, "dup bound")
    -- taints: web on n2, then n2 tainted
    cp:patch("/api/v1/nodes/" .. n2, { spec = { unschedulable = false } })
    cp:replicaset(ns, "web", 2, { cpu = "100m", node_selector = { ["kubernetes.io/hostname"] = n2 } })
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 2 end, 30, "web bound")
    taint(cp, n2)
    cp:patch("/api/v1/nodes/" .. n3, { spec = { unschedulable = false } })
    cp:run_pods(ns)
    local policy = string.format([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: RemovePodsViolatingNodeTaints
    args: {namespaces: {include: [%s]}}
  - name: RemoveDuplicates
    args: {namespaces: {include: [%s]}}
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
    balance:
      enabled: [RemoveDuplicates]
]], ns, ns)
    local when = K.rfc3339()
    local run = start{ policy = policy, now = when, "--once", "--dry-run" }
    assert.equal(0, run:wait(60), run:stderr())
    local live = {}
    for pod, node, plugin in run:stderr():gmatch("evicted pod (%S+) from (%S+) %((%w+), dry run%)") do
      live[#live + 1] = { pod = pod, node = node, plugin = plugin }
    end
    assert.equal(3, #live)   -- two by the taint, one duplicate
    local dir = S.tmpdir()
    local code = os.execute(string.format("%s record -o %s --kubeconfig %s 2>%s/record.err", S.shq(S.EBB),
      S.shq(dir .. "/cluster.json"), S.shq(cp.kubeconfig), dir))
    assert.is_true(code, S.read(dir .. "/record.err"))
    write(dir .. "/policy.yaml", policy)
    local _, out = shell.run(string.format("%s simulate --snapshot %s --policy %s --now %s --output json",
      S.shq(S.EBB), S.shq(dir .. "/cluster.json"), S.shq(dir .. "/policy.yaml"), when))
    local plan = json.decode(out)
    S.rmdir(dir)
    local sim = {}
    for _, e in ipairs(plan.evictions) do sim[#sim + 1] = { pod = e.pod, node = e.node, plugin = e.plugin } end
    assert.same(live, sim)
  end)
end)
