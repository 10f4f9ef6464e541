-- `ebb serve --reschedule`: the served cluster replaces the pods evicted
-- through the API as their controllers would and places the replacements
-- with the scheduler model, so `ebb run` cycles against a cluster that
-- behaves like one. The cluster is spec/fixtures/demo-cluster.json.
local R = require("spec.integration.run_harness")
local S = R.S
local shell = require("spec.shell")

local DEMO, LIFETIME = R.DEMO, R.LIFETIME   -- 7 evictions, 5 PDB refusals

local EVICTED = { "monitoring/grafana-5c8d7e6f9-r4t6y", "batch/spark-driver-9c8b7a6d5-u1v2w",
  "payments/ledger-db-0", "shop/frontend-6b8f9d7c5-a1b2c", "shop/frontend-6b8f9d7c5-d3e4f",
  "shop/frontend-6b8f9d7c5-g5h6i", "shop/cart-5d7f8c6b9-t3u4v" }

local CONTROL_PLANE = "ip-10-0-1-10.eu-west-1.compute.internal"   -- tainted NoSchedule
local BATCH = "ip-10-0-2-23.eu-west-1.compute.internal"           -- dedicated=batch:NoSchedule

local function pods(srv)
  local code, list = srv:request("GET", "/api/v1/pods")
  assert.equal(200, code)
  local by = {}
  for _, p in ipairs(list.items) do by[p.metadata.namespace .. "/" .. p.metadata.name] = p end
  return by, #list.items
end

-- The pods whose name starts with `prefix`, created after the snapshot.
local function new_pods(by, prefix, before)
  local out = {}
  for k, p in pairs(by) do
    if k:sub(1, #prefix) == prefix and not before[k] then out[#out + 1] = p end
  end
  return out
end

describe("ebb serve --reschedule", function()
  local T = R.suite(before_each, after_each)

  it("replaces every evicted pod its owner recreates and places it; later cycles see the replacements", function()
    T.srv = S.start{ snapshot = DEMO, "--reschedule" }
    local before, n0 = pods(T.srv)
    local run = T.start{ policy = LIFETIME, "--interval", "1s" }
    assert.truthy(run:wait_log("cycle 3: ", 30), run:stderr())
    local err = run:stderr()
    run:kill()
    assert.matches("cycle 1: 7 evicted, 5 refused", err)
    -- the replacements are young: PodLifeTime leaves them be
    assert.matches("cycle 2: 0 evicted, 5 refused", err)
    assert.matches("cycle 3: 0 evicted, 5 refused", err)
    local after, n1 = pods(T.srv)
    -- one pod gone for good: none (every evicted pod has a controller)
    assert.equal(n0, n1)
    for _, k in ipairs(EVICTED) do
      if k ~= "payments/ledger-db-0" then assert.is_nil(after[k], k) end
    end
    -- the StatefulSet pod is back under its name, a new pod
    local db = after["payments/ledger-db-0"]
    assert.not_equal(before["payments/ledger-db-0"].metadata.uid, db.metadata.uid)
    -- the ReplicaSets' pods under new names, as many as were evicted
    local fronts = new_pods(after, "shop/frontend-6b8f9d7c5-", before)
    assert.equal(3, #fronts)
    local placed = { db }
    for _, p in ipairs(fronts) do placed[#placed + 1] = p end
    for _, prefix in ipairs{ "shop/cart-5d7f8c6b9-", "monitoring/grafana-5c8d7e6f9-",
                             "batch/spark-driver-9c8b7a6d5-" } do
      local v = new_pods(after, prefix, before)
      assert.equal(1, #v, prefix)
      placed[#placed + 1] = v[1]
    end
    for _, p in ipairs(placed) do
      local name = p.metadata.namespace .. "/" .. p.metadata.name
      assert.equal("Running", p.status.phase, name)
      assert.is_string(p.spec.nodeName, name)
      -- the taints keep them off two nodes (the spark driver tolerates batch)
      assert.not_equal(CONTROL_PLANE, p.spec.nodeName, name)
      if not name:match("^batch/") then assert.not_equal(BATCH, p.spec.nodeName, name) end
    end
    assert.same(before["payments/ledger-db-0"].metadata.labels, db.metadata.labels)
  end)

  it("keeps a replacement that fits nowhere Pending with the scheduler's message", function()
    -- the cart pods ask for a disk type no node has
    local dir = S.tmpdir()
    local snap = dir .. "/cluster.json"
    assert.is_true(os.execute(string.format([[python3 - %s %s <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for it in d["items"]:
    if it["kind"] == "Pod" and it["metadata"]["name"].startswith("cart-"):
        it["spec"]["nodeSelector"] = {"disktype": "nvme"}
json.dump(d, open(sys.argv[2], "w"))
EOF]], DEMO, snap)))
    T.srv = S.start{ snapshot = snap, "--reschedule" }
    local before = pods(T.srv)
    local run = T.start{ policy = LIFETIME, "--once" }
    assert.equal(0, run:wait(30), run:stderr())
    local after = pods(T.srv)
    S.rmdir(dir)
    local v = new_pods(after, "shop/cart-5d7f8c6b9-", before)
    assert.equal(1, #v)
    local p = v[1]
    assert.is_nil(p.spec.nodeName)
    assert.equal("Pending", p.status.phase)
    local cond = p.status.conditions[1]
    assert.equal("PodScheduled", cond.type)
    assert.equal("False", cond.status)
    assert.equal("Unschedulable", cond.reason)
    assert.equal("0/6 nodes are available: 1 node(s) had untolerated taint {dedicated: batch}, "
      .. "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
      .. "4 node(s) didn't match Pod's node affinity/selector.", cond.message)
    assert.matches("pending: 0/6 nodes are available", T.srv:stderr())
  end)

  it("refuses a bad scheduler config with its file, line and field, exit 2", function()
    local dir = S.tmpdir()
    S.write(dir .. "/sched.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" ..
            "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    score:\n" ..
            "      enabled: [{name: NodeResourcesFit, weight: -5}]\n")
    local _, out = shell.sh(string.format("%s serve --snapshot %s --listen 127.0.0.1:0 --reschedule " ..
      "--scheduler-config %s 2>&1; echo \"exit $?\"", S.shq(S.EBB), DEMO, S.shq(dir .. "/sched.yaml")))
    S.rmdir(dir)
    assert.matches("exit 2\n$", out)
    assert.matches("sched%.yaml:7: profiles%[0%]%.plugins%.score%.enabled%[0%]%.weight: bad weight %-5", out)
    assert.not_matches("serving on", out)
  end)
end)
