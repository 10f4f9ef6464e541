-- MigrationJobEvictor (policies/migration_job_evictor.lua): evictions
-- become Koordinator PodMigrationJobs (apis/scheduling/v1alpha1,
-- cluster-scoped), filled as Koordinator's MigrationController fills them
-- (pkg/descheduler/controllers/migration/evict.go CreatePodMigrationJob;
-- defaults from apis/config/v1alpha2 SetDefaults_MigrationControllerArgs:
-- mode ReservationFirst, ttl 5m). The cluster is spec/fixtures/evictor.json;
-- PodLifeTime (3600 s) asks.
local h = require("spec.helpers")
local json = require("dkjson")
local S = require("spec.shell")

local SNAP = "spec/fixtures/evictor.json"
local PLAIN, PLAIN_UID = "apps/plain-0ad3d46b0-e38ab", "5efd03db-5ebe-05e3-0071-6b84d63a32b1"
local SOLO = "apps/solo-65ab3fc1f-a7229"
local G2 = "apps/guarded-a6a188013-g2"
local G3 = "apps/guarded-a6a188013-g3"

local function run(apps, o)
  o = o or {}
  return h.simulate{
    snapshot = (o.snapshot_text == nil) and SNAP or nil, snapshot_text = o.snapshot_text,
    top = o.top,
    plugins = {
      { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 3600, labelSelector = {
        matchExpressions = { { key = "app", operator = "In", values = apps } } } } },
      { name = "MigrationJobEvictor", ext = "evict", args = o.args },
    },
  }
end

local function job(plan, i) return json.decode(plan.evictions[i or 1].request) end

describe("MigrationJobEvictor", function()
  it("creates a PodMigrationJob for the pod as Koordinator's MigrationController does", function()
    local plan = run({ "plain" })
    assert.same({ PLAIN }, plan:pods())
    local e = plan.evictions[1]
    assert.equal("create PodMigrationJob " .. PLAIN_UID, e.action)
    assert.same({
      apiVersion = "scheduling.koordinator.sh/v1alpha1",
      kind = "PodMigrationJob",
      metadata = {
        name = PLAIN_UID,
        annotations = {
          ["koordinator.sh/evict-trigger"] = "PodLifeTime",
          ["koordinator.sh/evict-reason"] = e.reason,
        },
      },
      spec = {
        podRef = { namespace = "apps", name = "plain-0ad3d46b0-e38ab", uid = PLAIN_UID },
        mode = "ReservationFirst",
        ttl = "5m0s",
      },
    }, job(plan))
  end)

  it("takes mode, ttl, paused, deleteOptions and the evict-policy label from its args", function()
    local j = job(run({ "plain" }, { top = { gracePeriodSeconds = 30 }, args = {
      mode = "EvictDirectly", ttl = "90s", paused = true,
      deleteOptions = { propagationPolicy = "Background" }, evictionPolicy = "SoftEviction" } }))
    assert.equal("EvictDirectly", j.spec.mode)
    assert.equal("1m30s", j.spec.ttl)
    assert.is_true(j.spec.paused)
    assert.same({ gracePeriodSeconds = 30, propagationPolicy = "Background" }, j.spec.deleteOptions)
    assert.same({ ["koordinator.sh/evict-policy"] = "SoftEviction" }, j.metadata.labels)
    assert.equal(0, (job(run({ "plain" }, { top = { gracePeriodSeconds = 30 },
      args = { deleteOptions = { gracePeriodSeconds = 0 } } })).spec.deleteOptions.gracePeriodSeconds))
  end)

  it("writes the ttl as Go prints a metav1.Duration", function()
    for given, want in pairs({ ["5m"] = "5m0s", ["1h"] = "1h0m0s", ["1h2m3s"] = "1h2m3s",
                               ["45s"] = "45s", ["1500ms"] = "1.5s", ["250ms"] = "250ms",
                               ["2h30m"] = "2h30m0s" }) do
      assert.equal(want, job(run({ "plain" }, { args = { ttl = given } })).spec.ttl, given)
    end
  end)

  it("names the job after the pod's uid: one job per pod, whoever asks again", function()
    local plan = run({ "plain", "solo" })
    assert.same({ PLAIN, SOLO }, plan:pods())
    assert.equal(PLAIN_UID, job(plan, 1).metadata.name)
    assert.equal("4681f68a-8f5c-aaed-232e-a79c306f3b64", job(plan, 2).metadata.name)
  end)

  it("declines a pod without a uid: a job could not refer to it", function()
    local snap = json.decode(assert(S.read(SNAP)))
    for _, it in ipairs(snap.items) do
      if it.kind == "Pod" and it.metadata.name == "solo-65ab3fc1f-a7229" then it.metadata.uid = nil end
    end
    local plan = run({ "plain", "solo" }, { snapshot_text = json.encode(snap) })
    assert.same({ PLAIN }, plan:pods())
    assert.same({ SOLO }, plan:refused("evictor"))
    assert.equal("MigrationJobEvictor: the pod has no uid to refer to", plan.refusals[1].detail)
  end)

  it("creates no job for a pod a budget protects", function()
    local plan = run({ "guarded" })
    assert.same({ G2, G3 }, plan:refused("pdb"))
    assert.equal(1, #plan.evictions)
  end)

  it("refuses bad args with the field", function()
    for args, words in pairs({
      [{ mode = "Now" }] = "args.mode: MigrationJobEvictor: \"Now\" is not one of ReservationFirst, EvictDirectly",
      [{ ttl = "soon" }] = "args.ttl: MigrationJobEvictor: \"soon\" is not a duration",
      [{ ttl = "-5m" }] = "args.ttl: MigrationJobEvictor: must be a positive duration",
      [{ evictionPolicy = "Drain" }] = "args.evictionPolicy: MigrationJobEvictor: \"Drain\" is not one of",
      [{ deleteOptions = { grace = 1 } }] = "args.deleteOptions.grace: MigrationJobEvictor: unknown field",
    }) do
      local plan, msg = h.try{ snapshot = SNAP, plugins = {
        { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 3600 } },
        { name = "MigrationJobEvictor", ext = "evict", args = args } } }
      assert.is_nil(plan)
      assert.is_truthy(msg:find(words, 1, true), msg)
    end
  end)
end)
