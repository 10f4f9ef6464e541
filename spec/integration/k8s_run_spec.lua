-- `ebb run` against a real kube-apiserver (spec/integration/k8s_harness.lua):
-- the LIST answers of a real server (items without kind or apiVersion),
-- the caches sync, and a cycle decides and evicts through the real
-- Eviction API.
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")

describe("ebb run against kube-apiserver", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local start = R.suite(before_each, after_each, cp).start

  -- two nodes; the pods of ReplicaSet "web" on the first, which is then
  -- tainted: RemovePodsViolatingNodeTaints wants them off it
  local function tainted_cluster(prefix)
    local ns = cp:namespace(prefix)
    local n1, n2 = ns .. "-n1", ns .. "-n2"
    cp:node(n1)
    cp:node(n2)
    cp:replicaset(ns, "web", 2, { cpu = "100m", node_selector = { ["kubernetes.io/hostname"] = n1 } })
    local pods = cp:wait(function()
      local p = cp:pods(ns, "app=web", "bound")
      return #p == 2 and p
    end, 30, "kube-scheduler binding the web pods")
    cp:patch("/api/v1/nodes/" .. n1, { spec = { taints = {
      { key = "dedicated", value = "gpu", effect = "NoSchedule" } } } })
    return ns, n1, { ns .. "/" .. pods[1].metadata.name, ns .. "/" .. pods[2].metadata.name }
  end

  it("syncs from the real server's lists and runs a cycle on them (dry run)", function()
    local ns, n1, keys = tainted_cluster("sync")
    local run = start{ policy = K.taints_policy(ns), "--once", "--dry-run" }
    assert.equal(0, run:wait(60), run:stderr())
    local err = run:stderr()
    assert.not_matches("every item names its kind", err)
    assert.matches("caches synced in [%d.]+ s: %d+ nodes, %d+ pods", err)
    local got = {}
    for key, node in err:gmatch("evicted pod ([%w%-%.]+/[%w%-%.]+) from ([%w%-%.]+) %(RemovePodsViolatingNodeTaints, dry run%)") do
      assert.equal(n1, node)
      got[#got + 1] = key
    end
    assert.same(R.sorted(keys), R.sorted(got))
    -- a dry run leaves them be
    assert.equal(2, #cp:pods(ns, "app=web", "live"))
  end)

  -- As client-go, ebb asks for gzip: the real server encodes a LIST answer
  -- over 128 KB (here: a pod with a 200 KB annotation in the pods LIST);
  -- disable-compression in the kubeconfig turns it off, as there. The
  -- sync line says what the answers were and what came over the wire.
  it("asks for gzip-encoded answers unless the kubeconfig says disable-compression", function()
    local ns = cp:namespace("gzip")
    cp:pod(ns, "notes", { annotations = { ["example.com/notes"] = string.rep("gzip me ", 25000) } })
    local function answers(kubeconfig)
      local run = start{ policy = K.taints_policy(ns), kubeconfig = kubeconfig, "--once", "--dry-run" }
      assert.equal(0, run:wait(60), run:stderr())
      local decoded, received = run:stderr():match("answers ([%d.]+) MB, ([%d.]+) MB received")
      assert.is_not_nil(decoded, run:stderr())
      return tonumber(decoded), tonumber(received)
    end
    local decoded, received = answers(nil)
    assert.is_true(decoded >= 0.2, tostring(decoded))
    assert.is_true(received < decoded / 2, received .. " MB received for " .. decoded .. " MB")
    local path = cp:write_kubeconfig(os.tmpname(), { token = cp.env.TOKEN }, { ["disable-compression"] = true })
    local decoded2, received2 = answers(path)
    os.remove(path)
    assert.is_true(decoded2 >= 0.2, tostring(decoded2))
    assert.is_true(received2 >= decoded2, received2 .. " MB received for " .. decoded2 .. " MB")
  end)

  it("evicts through the real Eviction API: the pods terminate and Events are recorded", function()
    local ns, _, keys = tainted_cluster("evict")
    local run = start{ policy = K.taints_policy(ns), "--once" }
    assert.equal(0, run:wait(60), run:stderr())
    assert.same(R.sorted(keys), R.sorted(run:evicted()))
    -- without a kubelet, an evicted pod stays Terminating for its grace period
    local terminating = {}
    for _, p in ipairs(cp:pods(ns, "app=web", "terminating")) do
      terminating[#terminating + 1] = ns .. "/" .. p.metadata.name
    end
    assert.same(R.sorted(keys), R.sorted(terminating))
    -- the real server validated and stored ebb's Events (kube-scheduler's
    -- are there too)
    local events = cp:wait(function()
      local evs = {}
      for _, ev in ipairs(cp:events(ns)) do
        if ev.reportingController == "ebb" then evs[#evs + 1] = ev end
      end
      return #evs >= 2 and evs
    end, 10, "ebb's Descheduled events")
    local about = {}
    for _, ev in ipairs(events) do
      assert.equal("Normal", ev.type)
      assert.equal("RemovePodsViolatingNodeTaints", ev.reason)
      assert.equal("Descheduled", ev.action)
      assert.equal("Pod", ev.regarding.kind)
      about[#about + 1] = ns .. "/" .. ev.regarding.name
    end
    assert.same(R.sorted(keys), R.sorted(about))
  end)
end)
