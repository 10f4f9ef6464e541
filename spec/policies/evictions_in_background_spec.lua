-- EvictionsInBackground (--feature-gates EvictionsInBackground=true) on a
-- snapshot: a pod annotated request-evict-only and eviction-in-progress is
-- being evicted by someone else (KubeVirt migrating its VM). Upstream's
-- pod informer puts it in the eviction requests cache when it lists it, so
-- it counts against the limits and is not asked again; without the gate it
-- is a pod like any other. The live half (the 429 answer, the pod deleted)
-- is in spec/integration/evictions_in_background_spec.lua.
local h = require("spec.helpers")
local json = require("dkjson")
local S = require("spec.shell")

local SNAP = "spec/fixtures/kubevirt.json"
local DB = "vms/virt-launcher-db-7xq2p"

-- kubevirt.json with eviction-in-progress on the pods named
local function in_progress(names)
  local snap = json.decode(assert(S.read(SNAP)))
  for _, o in ipairs(snap.items) do
    local key = o.kind == "Pod" and o.metadata.namespace .. "/" .. o.metadata.name
    for _, n in ipairs(names) do
      if key == n then
        o.metadata.annotations["descheduler.alpha.kubernetes.io/eviction-in-progress"] = "kubevirt"
      end
    end
  end
  return json.encode(snap)
end

-- PodLifeTime over a day: every pod of vms and shop, oldest first.
local function run(o)
  return h.simulate{
    snapshot = o.snapshot_text == nil and SNAP or nil, snapshot_text = o.snapshot_text,
    plugin = "PodLifeTime", ext = "deschedule",
    args = { maxPodLifeTimeSeconds = 86400, namespaces = { include = { "vms", "shop" } } },
    evictor = { evictLocalStoragePods = true },
    top = o.top, feature_gates = o.feature_gates,
  }
end

describe("EvictionsInBackground on a snapshot", function()
  it("counts a pod being evicted in background against the node limit and does not ask again", function()
    local plan = run{ snapshot_text = in_progress({ DB }), feature_gates = "EvictionsInBackground=true",
                      top = { maxNoOfPodsToEvictPerNode = 1 } }
    -- worker-1's one eviction is the VM's migration: web stays
    assert.same({ "vms/virt-launcher-ci-4kd9s" }, plan:pods())
    assert.same({ "shop/web-5d8f7c6b9-k2m4n", "shop/api-6c7d8e9f0-p3q5r" }, plan:refused("node-limit"))
    assert.same({ "pod " .. DB .. ": eviction in background already requested" }, plan:note_messages())
  end)

  it("counts it against the total and the namespace limits", function()
    local plan = run{ snapshot_text = in_progress({ DB }), feature_gates = "EvictionsInBackground=true",
                      top = { maxNoOfPodsToEvictTotal = 2 } }
    -- PodLifeTime stops at the total limit, as upstream
    assert.same({ "vms/virt-launcher-ci-4kd9s" }, plan:pods())
    assert.same({ "shop/web-5d8f7c6b9-k2m4n" }, plan:refused("total-limit"))
    plan = run{ snapshot_text = in_progress({ DB }), feature_gates = "EvictionsInBackground=true",
                top = { maxNoOfPodsToEvictPerNamespace = 1 } }
    assert.same({ "shop/web-5d8f7c6b9-k2m4n" }, plan:pods())
    assert.same({ "vms/virt-launcher-ci-4kd9s", "shop/api-6c7d8e9f0-p3q5r" }, plan:refused("namespace-limit"))
  end)

  it("leaves a pod with request-evict-only alone until its eviction is in progress", function()
    local plan = run{ feature_gates = "EvictionsInBackground=true", top = { maxNoOfPodsToEvictPerNode = 1 } }
    assert.same({ DB, "vms/virt-launcher-ci-4kd9s" }, plan:pods())
    assert.same({}, plan:note_messages())
  end)

  it("without the gate, the annotations mean nothing", function()
    local plan = run{ snapshot_text = in_progress({ DB }), top = { maxNoOfPodsToEvictPerNode = 1 } }
    assert.same({ DB, "vms/virt-launcher-ci-4kd9s" }, plan:pods())
    plan = run{ snapshot_text = in_progress({ DB }), feature_gates = "EvictionsInBackground=false",
                top = { maxNoOfPodsToEvictPerNode = 1 } }
    assert.same({ DB, "vms/virt-launcher-ci-4kd9s" }, plan:pods())
  end)

  it("refuses a feature gate it does not know", function()
    assert.has_error(function()
      run{ feature_gates = "EvictionsInForeground=true" }
    end, 'feature_gates: "EvictionsInForeground=true" is not a list of Name=bool')
  end)
end)
