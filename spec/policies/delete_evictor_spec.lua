-- DeleteEvictor (policies/delete_evictor.lua): evictions become a DELETE of
-- the pod with its uid as a precondition, as Koordinator's "Delete" evictor
-- (pkg/descheduler/controllers/migration/evictor/evictor_delete.go). The
-- cluster is spec/fixtures/evictor.json; PodLifeTime (3600 s) asks.
local h = require("spec.helpers")
local json = require("dkjson")

local SNAP = "spec/fixtures/evictor.json"
local PLAIN, PLAIN_UID = "apps/plain-0ad3d46b0-e38ab", "5efd03db-5ebe-05e3-0071-6b84d63a32b1"
local G1 = "apps/guarded-a6a188013-g1"
local G2 = "apps/guarded-a6a188013-g2"
local G3 = "apps/guarded-a6a188013-g3"

local function run(apps, args, top)
  return h.simulate{
    snapshot = SNAP, top = top,
    plugins = {
      { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 3600, labelSelector = {
        matchExpressions = { { key = "app", operator = "In", values = apps } } } } },
      { name = "DeleteEvictor", ext = "evict", args = args },
    },
  }
end

describe("DeleteEvictor", function()
  it("deletes the pod, with its uid as a precondition", function()
    local plan = run({ "plain" })
    assert.same({ PLAIN }, plan:pods())
    local e = plan.evictions[1]
    assert.equal("delete", e.action)
    assert.same({ apiVersion = "v1", kind = "DeleteOptions", preconditions = { uid = PLAIN_UID } },
                json.decode(e.request))
  end)

  it("uses the policy's gracePeriodSeconds unless its own args say otherwise", function()
    local req = json.decode(run({ "plain" }, nil, { gracePeriodSeconds = 30 }).evictions[1].request)
    assert.equal(30, req.gracePeriodSeconds)
    req = json.decode(run({ "plain" }, { gracePeriodSeconds = 0, propagationPolicy = "Foreground" },
                          { gracePeriodSeconds = 30 }).evictions[1].request)
    assert.equal(0, req.gracePeriodSeconds)
    assert.equal("Foreground", req.propagationPolicy)
  end)

  it("deletes only what the budgets allow: the core checks them, the API would not", function()
    local plan = run({ "guarded" })
    assert.same({ G1 }, plan:pods())
    assert.same({ G2, G3 }, plan:refused("pdb"))
  end)

  it("refuses bad args with the field", function()
    for args, words in pairs({
      [{ gracePeriodSeconds = -1 }] = "args.gracePeriodSeconds: DeleteEvictor: -1 is out of range",
      [{ propagationPolicy = "Later" }] = "args.propagationPolicy: DeleteEvictor: \"Later\" is not one of",
      [{ grace = 1 }] = "args.grace: DeleteEvictor: unknown field \"grace\"",
    }) do
      local plan, msg = h.try{ snapshot = SNAP, plugins = {
        { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 3600 } },
        { name = "DeleteEvictor", ext = "evict", args = args } } }
      assert.is_nil(plan)
      assert.is_truthy(msg:find(words, 1, true), msg)
    end
  end)
end)
