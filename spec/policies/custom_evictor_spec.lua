-- Evict plugins (a profile's plugins.evict, engine/core/evict.c and
-- engine/lua/lua_evictor.c) through the real engine: what the core still
-- enforces around any evictor, and what a plugin's ctx.api refuses. The
-- cluster is spec/fixtures/evictor.json (one small workload per case in
-- namespace apps, labelled app=<case>, all about two days old); PodLifeTime
-- (maxPodLifeTimeSeconds 3600) asks for the evictions, oldest first.
local h = require("spec.helpers")

local SNAP = "spec/fixtures/evictor.json"

local PLAIN = "apps/plain-0ad3d46b0-e38ab"
local SOLO = "apps/solo-65ab3fc1f-a7229"
local MULTI = "apps/multi-5a6b7c8d9-m1x2y"
local BIG = "apps/big-34c3cf338-a9692"
local MIRROR = "apps/mirror-worker-a-1"              -- protected by DefaultEvictor
local G1 = "apps/guarded-a6a188013-g1"               -- one PDB, one disruption allowed
local G2 = "apps/guarded-a6a188013-g2"
local G3 = "apps/guarded-a6a188013-g3"

-- Evictors written for these specs. Each records what reached it with
-- ebb.note, so a spec can tell "refused before the evictor" from "after".
local PLUGINS = {
  ["note.lua"] = [[
local ebb = require("ebb")
return {
  name = "NoteEvictor",
  evict = function(ctx, pod, opts)
    ebb.note(string.format("%s by %s/%s: %s, grace %s", pod.key, tostring(opts.plugin),
      opts.profile, tostring(opts.reason), tostring(opts.delete_options.gracePeriodSeconds)))
    return ctx.api:evict()
  end,
}
]],
  ["picky.lua"] = [[
local ebb = require("ebb")
return {
  name = "PickyEvictor",
  filter = function(ctx, pod) return pod:label("app") ~= "solo" end,
  evict = function(ctx, pod, opts)
    ebb.note(pod.key)
    return ctx.api:evict({ gracePeriodSeconds = 5 })
  end,
}
]],
  ["decliner.lua"] = [[
local ebb = require("ebb")
return {
  name = "Decliner",
  evict = function(ctx, pod, opts)
    ebb.note(pod.key)
    if pod:label("app") == "solo" then
      ctx.api:delete()             -- chosen, then thought better of: nothing is done
      return false, "not today"
    end
    return ctx.api:evict()
  end,
}
]],
  ["liar.lua"] = [[
return { name = "Liar", evict = function(ctx, pod, opts) return true end }
]],
  ["other.lua"] = [[
local ebb = require("ebb")
return {
  name = "OtherPod",
  evict = function(ctx, pod, opts)
    local other = ebb.pod("apps", pod.name == "solo-65ab3fc1f-a7229" and "plain-0ad3d46b0-e38ab"
                                  or "solo-65ab3fc1f-a7229")
    return ctx.api:delete(other)
  end,
}
]],
  ["twice.lua"] = [[
return {
  name = "Twice",
  evict = function(ctx, pod, opts)
    ctx.api:evict()
    return ctx.api:delete()
  end,
}
]],
  ["kinds.lua"] = [[
return {
  name = "Kinds",
  creates = { apiVersion = "v1", kind = "ConfigMap" },
  evict = function(ctx, pod, opts)
    return ctx.api:create({ apiVersion = "v1", kind = "Secret", metadata = { name = pod.name } })
  end,
}
]],
  ["undeclared.lua"] = [[
return {
  name = "Undeclared",
  evict = function(ctx, pod, opts)
    return ctx.api:create({ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x" } })
  end,
}
]],
  ["spec_patch.lua"] = [[
return {
  name = "SpecPatch",
  evict = function(ctx, pod, opts)
    return ctx.api:patch({ spec = { nodeName = "worker-b-1" } })
  end,
}
]],
  ["rename.lua"] = [[
return {
  name = "Rename",
  evict = function(ctx, pod, opts)
    return ctx.api:patch({ metadata = { name = "someone-else", labels = { moved = "yes" } } })
  end,
}
]],
  ["stash.lua"] = [[
return {
  name = "Stash",
  evict = function(ctx, pod, opts)
    if ctx.state.api then return ctx.state.api:evict() end
    ctx.state.api = ctx.api
    return ctx.api:evict()
  end,
}
]],
  ["recurse.lua"] = [[
return {
  name = "Recurse",
  evict = function(ctx, pod, opts)
    return ctx.evictor:evict(pod)
  end,
}
]],
  ["configmap.lua"] = [[
local ebb = require("ebb")
return {
  name = "ConfigMapEvictor",
  creates = { apiVersion = "v1", kind = "ConfigMap" },
  evict = function(ctx, pod, opts)
    return ctx.api:create({ metadata = { generateName = pod.name .. "-" },
                            data = { pod = pod.key, empty = {}, list = { 1, 2.5, ebb.null } } })
  end,
}
]],
  ["json_bad.lua"] = [[
local ebb = require("ebb")
return {
  name = "JsonBad",
  evict = function(ctx, pod, opts)
    return ctx.api:patch({ metadata = { annotations = { x = ebb.json({ spec = { f = print } }) } } })
  end,
}
]],
  ["wrong_ref.lua"] = [[
return {
  name = "WrongRef",
  creates = { apiVersion = "scheduling.koordinator.sh/v1alpha1", kind = "PodMigrationJob",
              namespaced = false },
  evict = function(ctx, pod, opts)
    return ctx.api:create({ metadata = { name = "job-1" },
                            spec = { podRef = { namespace = "apps", name = "someone-else" } } })
  end,
}
]],
}

local dir

setup(function() dir = h.plugin_dir(PLUGINS) end)
teardown(function() h.rmdir(dir) end)

-- PodLifeTime over the apps labelled `apps`, through evict plugin `evictor`
local function run(apps, evictor, o)
  o = o or {}
  return h.simulate{
    snapshot = SNAP, policy_dirs = { dir }, top = o.top, evictor = o.default_evictor,
    plugins = {
      { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 3600, labelSelector = {
        matchExpressions = { { key = "app", operator = "In", values = apps } } } } },
      { name = evictor, ext = "evict", args = o.args },
    },
  }
end

local function refusal(plan, pod)
  for _, r in ipairs(plan.refusals) do
    if r.pod == pod then return r end
  end
end

describe("evict plugins", function()
  describe("around the evictor, the core", function()
    it("calls the evictor with the strategy, profile, reason and the policy's grace period", function()
      local plan = run({ "plain" }, "NoteEvictor", { top = { gracePeriodSeconds = 30 } })
      assert.same({ PLAIN }, plan:pods())
      assert.same({ PLAIN .. " by PodLifeTime/test: " .. plan.evictions[1].reason .. ", grace 30" },
                  plan:note_messages())
      assert.equal("evict", plan.evictions[1].action)
      assert.equal("NoteEvictor", plan.notes[1].plugin)
    end)

    it("never lets a pod DefaultEvictor protects reach the evictor", function()
      local plan = run({ "plain", "mirror" }, "NoteEvictor")
      assert.same({ PLAIN }, plan:pods())
      assert.equal(1, #plan.notes)
      assert.is_nil(plan.notes[1].message:find(MIRROR, 1, true))
    end)

    it("enforces the limits before the evictor is called", function()
      local plan = run({ "plain", "solo", "multi", "big" }, "NoteEvictor",
                       { top = { maxNoOfPodsToEvictTotal = 2 } })
      assert.same({ PLAIN, SOLO }, plan:pods())
      assert.equal(2, #plan.notes)
      plan = run({ "plain", "solo", "multi", "big" }, "NoteEvictor",
                 { top = { maxNoOfPodsToEvictPerNode = 1 } })
      -- plain, solo and big share worker-a-1; multi is on worker-b-1
      assert.same({ PLAIN, MULTI }, plan:pods())
      assert.same({ SOLO, BIG }, plan:refused("node-limit"))
      assert.equal(2, #plan.notes)
    end)

    it("checks PodDisruptionBudgets first, whatever the evictor does", function()
      local plan = run({ "guarded" }, "NoteEvictor")
      assert.same({ G1 }, plan:pods())
      assert.same({ G2, G3 }, plan:refused("pdb"))
      assert.same({ G1 }, (function()
        local out = {}
        for _, m in ipairs(plan:note_messages()) do out[#out + 1] = m:match("^(%S+)") end
        return out
      end)())
    end)

    it("applies the evictor's own filter on top of the profile's, in listings too", function()
      local plan = run({ "plain", "solo", "multi" }, "PickyEvictor")
      assert.same({ PLAIN, MULTI }, plan:pods())
      -- PodLifeTime lists evictable pods only: solo is not even proposed
      assert.is_nil(refusal(plan, SOLO))
      assert.same({ PLAIN, MULTI }, plan:note_messages())
    end)

    it("reports a declined eviction as an \"evictor\" refusal and does nothing", function()
      local plan = run({ "plain", "solo", "multi" }, "Decliner")
      assert.same({ PLAIN, MULTI }, plan:pods())
      local r = refusal(plan, SOLO)
      assert.equal("evictor", r.why)
      assert.equal("Decliner: not today", r.detail)
      assert.same({}, plan.errors)
      assert.same({ PLAIN, SOLO, MULTI }, plan:note_messages())
    end)

    it("records what the evictor created, with the object, in the plan", function()
      local plan = run({ "plain" }, "ConfigMapEvictor")
      assert.same({ PLAIN }, plan:pods())
      local e = plan.evictions[1]
      assert.equal("create ConfigMap apps/plain-0ad3d46b0-e38ab-*", e.action)
      assert.equal('{"apiVersion":"v1","data":{"empty":{},"list":[1,2.5,null],'
        .. '"pod":"apps/plain-0ad3d46b0-e38ab"},"kind":"ConfigMap","metadata":{"generateName":'
        .. '"plain-0ad3d46b0-e38ab-","namespace":"apps"}}', e.request)
    end)
  end)

  describe("an evictor that oversteps fails the call, and nothing is evicted", function()
    local function fails(evictor, words)
      local plan = run({ "plain", "solo" }, evictor)
      assert.same({}, plan:pods())
      assert.same({ PLAIN, SOLO }, plan:refused("evictor"))
      for _, r in ipairs(plan.refusals) do
        assert.is_truthy(r.detail:find(evictor .. " failed: ", 1, true), r.detail)
        assert.is_truthy(r.detail:find(words, 1, true), r.detail)
      end
      assert.equal(2, #plan.errors)
      assert.equal(evictor, plan.errors[1].plugin)
      assert.is_truthy(plan.errors[1].message:find(words, 1, true), plan.errors[1].message)
      return plan
    end

    it("acting on another pod", function()
      fails("OtherPod", "ctx.api:delete: the handle acts only on pod apps/")
    end)

    it("a second action", function()
      fails("Twice", "ctx.api:delete: one action per evict() call, and this call has already "
                     .. "asked to evict")
    end)

    it("a kind it does not declare", function()
      fails("Kinds", "ctx.api:create: the plugin creates only ConfigMap (v1), not Secret (v1)")
    end)

    it("creating without a `creates` declaration", function()
      fails("Undeclared", "ctx.api:create: the plugin table declares no `creates`")
    end)

    it("a patch beyond the pod's labels and annotations", function()
      fails("SpecPatch", "only metadata.labels and metadata.annotations of the pod can be "
                         .. "patched, not spec")
      fails("Rename", "can be patched, not metadata.name")
    end)

    it("a created object that refers to another pod", function()
      fails("WrongRef", "ctx.api:create: spec.podRef must be the pod the call is for")
    end)

    it("an annotation that is not text, or a value JSON cannot hold", function()
      fails("JsonBad", "ebb.json: spec.f: a function cannot be written as JSON")
    end)

    it("returning true without acting", function()
      fails("Liar", "returned true without an action")
    end)

    it("evicting through the evictor from inside it", function()
      fails("Recurse", "cannot be called from inside an evict plugin's evict()")
    end)

    it("keeping the handle for a later call", function()
      local plan = run({ "plain", "solo" }, "Stash")
      assert.same({ PLAIN }, plan:pods())
      local r = refusal(plan, SOLO)
      assert.equal("evictor", r.why)
      assert.is_truthy(r.detail:find("this handle is spent", 1, true), r.detail)
    end)
  end)

  describe("policies", function()
    local function policy(evict_list)
      return table.concat({
        "apiVersion: descheduler/v1alpha2",            -- 1
        "kind: DeschedulerPolicy",                     -- 2
        "profiles:",                                   -- 3
        "- name: p",                                   -- 4
        "  pluginConfig:",                             -- 5
        "  - name: PodLifeTime",                       -- 6
        "    args: {maxPodLifeTimeSeconds: 3600}",     -- 7
        "  - name: DeleteEvictor",                     -- 8
        "  - name: SoftEvictor",                       -- 9
        "  plugins:",                                  -- 10
        "    deschedule:",                             -- 11
        "      enabled: [PodLifeTime]",                -- 12
        "    evict:",                                  -- 13
        "      enabled:",                              -- 14
        evict_list,                                    -- 15, 16
      }, "\n") .. "\n"
    end

    it("refuse two evict plugins in one profile, naming the file, line and field", function()
      local text = policy("      - DeleteEvictor\n      - SoftEvictor")
      local plan, msg = h.try{ snapshot = SNAP, policy_text = text }
      assert.is_nil(plan)
      assert.is_truthy(msg:find(":16: profiles[0].plugins.evict.enabled: only one evict plugin "
        .. "can be enabled per profile: profile \"p\" enables \"DeleteEvictor\" (line 15) and "
        .. "\"SoftEvictor\" (line 16)", 1, true), msg)
      local ok, cmsg = h.check{ policy_text = text }
      assert.is_nil(ok)
      assert.is_truthy(cmsg:find("only one evict plugin", 1, true), cmsg)
      assert.is_not_nil(h.try{ snapshot = SNAP, policy_text = policy("      - DeleteEvictor") })
    end)

    it("take Koordinator's DefaultEvictor under evict as the Eviction API", function()
      local text = policy("      - DefaultEvictor")
      local plan = h.simulate{ snapshot = SNAP, policy_text = text }
      assert.is_true(#plan.evictions > 0)
      for _, e in ipairs(plan.evictions) do assert.is_nil(e.action) end
      local _, msg = h.try{ snapshot = SNAP, policy_text = policy("      - DefaultEvictor\n      - SoftEvictor") }
      assert.is_truthy(msg:find("only one evict plugin can be enabled per profile", 1, true), msg)
    end)

    it("refuse a plugin without evict() under evict", function()
      local text = policy("      - PodLifeTime")
      local plan, msg = h.try{ snapshot = SNAP, policy_text = text }
      assert.is_nil(plan)
      assert.is_truthy(msg:find(":15: profiles[0].plugins.evict.enabled[0]: ", 1, true), msg)
      assert.is_truthy(msg:find("the plugin does not implement evict", 1, true), msg)
    end)

    it("refuse a malformed `creates` when the file is loaded", function()
      for src, words in pairs({
        ["return { name = 'C1', creates = { kind = 'X' }, evict = function() end }"] =
          "creates.apiVersion: not an apiVersion",
        ["return { name = 'C2', creates = { apiVersion = 'v1', kind = 'lower' }, evict = function() end }"] =
          "creates.kind: not a Kind",
        ["return { name = 'C3', creates = { apiVersion = 'v1', kind = 'X', scope = 1 }, evict = function() end }"] =
          "creates: an unknown key",
        ["return { name = 'C4', creates = { apiVersion = 'v1', kind = 'X' }, deschedule = function() end }"] =
          "creates: `creates` declares what an evict plugin creates",
      }) do
        local bad = h.plugin_dir{ ["c.lua"] = src }
        local plan, msg = h.try{ snapshot = SNAP, policy_dirs = { bad }, plugin = "PodLifeTime",
                                 args = { maxPodLifeTimeSeconds = 3600 } }
        h.rmdir(bad)
        assert.is_nil(plan)
        assert.is_truthy(msg:find("c.lua", 1, true), msg)
        assert.is_truthy(msg:find(words, 1, true), msg)
      end
    end)
  end)
end)
