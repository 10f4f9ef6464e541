-- The compatibility subset against kube-apiserver v1.25 (../shared/k8s
-- --version 1.25), with ONE control plane of that version started for this
-- file and stopped at its end: the caches sync, evictions go through the
-- Eviction API with a PodDisruptionBudget the disruption controller
-- computed (what it refuses stays; the streaming list refused with 422,
-- paged LISTs instead), the Lease is taken, and what `ebb
-- record` writes `ebb simulate` decides the same on. The full live suite
-- runs against v1.35 (k8s_*_spec.lua).
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")
local shell = require("spec.shell")
local shq, sh = shell.shq, shell.sh
local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
local VERSION = "1.25"

local function policy(ns)
  return ([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 1
      namespaces: {include: ["%s"]}
  plugins:
    deschedule:
      enabled: [PodLifeTime]
]]):format(ns)
end

describe("against kube-apiserver v1.25", function()
  if K.skip(pending, VERSION) then return end
  local cp
  local runs = {}
  setup(function() cp = K.cluster{ version = VERSION } end)
  teardown(function() if cp then cp:down() end end)
  after_each(function()
    for _, r in ipairs(runs) do r:stop() end
    runs = {}
    cp:cleanup{ wait = true }
  end)

  -- three ReplicaSet pods, Running, under a PDB that allows one disruption
  local function workload(prefix)
    local ns = cp:namespace(prefix)
    cp:node(ns .. "-n1")
    cp:node(ns .. "-n2")
    cp:replicaset(ns, "web", 3)
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 3 end, 30, "web bound")
    cp:run_pods(ns)
    cp:pdb(ns, "web", { app = "web" }, { minAvailable = 2 })
    cp:wait_pdb(ns, "web", function(s) return s.disruptionsAllowed == 1 end)
    -- older than the policy's 1 s as PodLifeTime counts: whole seconds since
    -- a creationTimestamp cut to the second, so 2 s after the pods were made
    -- (1.5 s was not enough when the PDB settled quickly: an age of 1)
    K.sleep(2.1)
    return ns
  end

  it("is v1.25", function()
    local v = cp:get("/version")
    assert.equal("1", v.major)
    assert.equal("25", v.minor:match("%d+"))
  end)

  it("syncs and evicts through the Eviction API; the PDB refuses the rest, exit 0", function()
    local ns = workload("v125")
    local run = R.start(cp, { policy = policy(ns), now = false, "--once" })
    runs[#runs + 1] = run
    assert.equal(0, run:wait(90), run:stderr())
    assert.matches("caches synced", run:stderr())
    -- v1.25 has no streaming list: its 422 makes every resource paged, said once each
    local err = run:stderr()
    for _, r in ipairs{ "nodes", "namespaces", "priorityclasses", "persistentvolumeclaims",
      "poddisruptionbudgets", "pods" } do
      local _, n = err:gsub("watch " .. r .. ": the server does not offer a streaming list %(WATCH [^\n]- %(streaming " ..
        "list%): 422 ListOptions%.meta%.k8s%.io \"\" is invalid: [^\n]*resourceVersionMatch is forbidden for watch", "")
      assert.equal(1, n, r .. "\n" .. err)
    end
    assert.matches("%(streaming list: none; paged LIST: nodes, namespaces, priorityclasses, " ..
      "persistentvolumeclaims, poddisruptionbudgets, pods%)", err)
    assert.equal(1, #run:evicted(), run:stderr())
    assert.matches("429", run:stderr())
    assert.matches("cycle 1: 1 evicted, 2 refused", run:stderr())
  end)

  it("takes the Lease with --leader-elect", function()
    local ns = cp:namespace("v125-lease")
    local run = R.start(cp, { policy = policy(ns), now = false, "--leader-elect", "--interval", "1s",
      "--leader-elect-resource-namespace", ns })
    runs[#runs + 1] = run
    assert.is_not_nil(run:wait_log("acquired lease", 30), run:stderr())
    local lease = cp:get("/apis/coordination.k8s.io/v1/namespaces/" .. ns .. "/leases/descheduler")
    assert.is_string(lease.spec.holderIdentity)
  end)

  it("ebb record writes what ebb simulate decides the same on", function()
    local ns = workload("v125-rec")
    local out = cp.dir .. "/v125-record.json"
    local code, msg = sh(EBB .. " record -o " .. shq(out) .. " --kubeconfig " .. shq(cp.kubeconfig))
    assert.equal(0, code, msg)
    local pfile = cp.dir .. "/v125-policy.yaml"
    shell.write(pfile, policy(ns))
    local text, err
    code, text, err = shell.run(EBB .. " simulate --snapshot " .. shq(out) .. " --policy " .. shq(pfile)
      .. " --output json")
    assert.equal(0, code, err)
    local plan = K.json.decode(text)
    -- what was recorded and decided, should this ever differ: with ebb
    -- explain's account of every pod
    local why = msg .. "\n" .. text .. "\n" .. err
    if #plan.evictions ~= 1 then
      for _, p in ipairs(cp:pods(ns, "app=web")) do
        local _, ex, exerr = shell.run(EBB .. " explain " .. shq(ns .. "/" .. p.metadata.name) .. " --snapshot " ..
          shq(out) .. " --policy " .. shq(pfile))
        why = why .. "\n" .. ex .. exerr
      end
    end
    assert.equal(1, #plan.evictions, why)
    assert.equal(2, #plan.refusals, why)
    for _, r in ipairs(plan.refusals) do assert.equal("pdb", r.why) end
  end)
end)
