-- SoftEvictor (policies/soft_evictor.lua): evictions become a merge patch
-- of the pod's annotations with Koordinator's soft-eviction annotation
-- (apis/extension: AnnotationSoftEviction = "scheduling.koordinator.sh/
-- soft-eviction", a JSON SoftEvictionSpec), as pkg/descheduler/controllers/
-- migration/evictor/evictor_soft.go writes it. The cluster is
-- spec/fixtures/evictor.json; PodLifeTime (3600 s) asks.
local h = require("spec.helpers")
local json = require("dkjson")
local S = require("spec.shell")

local SNAP = "spec/fixtures/evictor.json"
local ANN = "scheduling.koordinator.sh/soft-eviction"
local PLAIN, PLAIN_UID = "apps/plain-0ad3d46b0-e38ab", "5efd03db-5ebe-05e3-0071-6b84d63a32b1"
local SOLO = "apps/solo-65ab3fc1f-a7229"
local G1 = "apps/guarded-a6a188013-g1"
local G2 = "apps/guarded-a6a188013-g2"

local function lifetime(apps)
  return { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 3600, labelSelector = {
    matchExpressions = { { key = "app", operator = "In", values = apps } } } } }
end

local function run(apps, o)
  o = o or {}
  return h.simulate{
    snapshot = (o.snapshot_text == nil) and SNAP or nil, snapshot_text = o.snapshot_text, top = o.top,
    policy_dirs = o.dirs,
    plugins = { o.strategy or lifetime(apps), { name = "SoftEvictor", ext = "evict", args = o.args } },
  }
end

-- the annotation a plan's eviction writes, decoded
local function spec_of(e)
  local req = json.decode(e.request)
  return json.decode(req.metadata.annotations[ANN]), req
end

describe("SoftEvictor", function()
  it("patches Koordinator's soft-eviction annotation onto the pod, nothing else", function()
    local plan = run({ "plain" })
    assert.same({ PLAIN }, plan:pods())
    local e = plan.evictions[1]
    assert.equal("patch annotations " .. ANN, e.action)
    local spec, req = spec_of(e)
    assert.same({ metadata = { uid = PLAIN_UID, annotations = { [ANN] = req.metadata.annotations[ANN] } } },
                req)
    assert.same({ initiator = "PodLifeTime", reason = e.reason, timestamp = h.NOW }, spec)
  end)

  it("carries the policy's grace period, with its own deleteOptions over it", function()
    local spec = spec_of(run({ "plain" }, { top = { gracePeriodSeconds = 30 } }).evictions[1])
    assert.same({ gracePeriodSeconds = 30 }, spec.deleteOptions)
    spec = spec_of(run({ "plain" }, { top = { gracePeriodSeconds = 30 },
      args = { deleteOptions = { gracePeriodSeconds = 5, propagationPolicy = "Background" } } })
      .evictions[1])
    assert.same({ gracePeriodSeconds = 5, propagationPolicy = "Background" }, spec.deleteOptions)
  end)

  it("falls back to the strategy's name for the reason, as GetEvictionTriggerAndReason", function()
    local dir = h.plugin_dir{ ["bare.lua"] = [[
local ebb = require("ebb")
return {
  name = "Bare",
  deschedule = function(ctx, nodes)
    for _, pod in ebb.pods(nodes, { evictable = true, selector = ebb.selector("app=plain") }):iter() do
      ctx.evictor:evict(pod)
    end
  end,
}
]] }
    local plan = run(nil, { dirs = { dir }, strategy = { name = "Bare" } })
    h.rmdir(dir)
    assert.same({ PLAIN }, plan:pods())
    local spec = spec_of(plan.evictions[1])
    assert.equal("Bare", spec.initiator)
    assert.equal("Bare", spec.reason)
  end)

  it("leaves a pod that already carries the annotation alone: its owner is moving it", function()
    local snap = json.decode(assert(S.read(SNAP)))
    for _, it in ipairs(snap.items) do
      if it.kind == "Pod" and it.metadata.name == "solo-65ab3fc1f-a7229" then
        it.metadata.annotations = it.metadata.annotations or {}
        it.metadata.annotations[ANN] = '{"initiator":"LowNodeLoad"}'
      end
    end
    local plan = run({ "plain", "solo" }, { snapshot_text = json.encode(snap) })
    assert.same({ PLAIN }, plan:pods())
    assert.same({ PLAIN, SOLO }, run({ "plain", "solo" }):pods())
  end)

  it("is held to the budgets like any eviction", function()
    local plan = run({ "guarded" })
    assert.same({ G1 }, plan:pods())
    assert.is_truthy(#plan:refused("pdb") == 2 and plan:refused("pdb")[1] == G2)
  end)
end)
