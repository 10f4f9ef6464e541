-- One object never fails the others, against a real kube-apiserver
-- (spec/integration/k8s_harness.lua). The server stores objects ebb cannot
-- keep as they are: a NUL character in an annotation value, a pod asking
-- for 70 distinct extended resources (more names than ebb has slots for),
-- a pod with more tolerations than ebb keeps for a list. Anyone who may
-- create a pod can create them; none of them may stop ebb from syncing,
-- from watching or from acting on the other pods.
--
-- The first two are accepted (the NUL read as U+FFFD, the resources ebb
-- has no slot for as "<unregistered>", which no node offers); the third is
-- skipped alone: a warning naming the pod and the field, a count in
-- ebb_objects_skipped_total{resource,reason} and a Warning Event on it.
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")

local TOLERATIONS = 66000   -- past the 65,535 entries ebb keeps for a list

describe("ebb run and objects it cannot keep as they are (kube-apiserver)", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local start = R.suite(before_each, after_each, cp).start

  -- What the pods belong to (a bare pod is never evicted): an object the
  -- garbage collector finds, that no controller acts on.
  local function owner(ns)
    return cp:create("/api/v1/namespaces/" .. ns .. "/configmaps",
      { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "owner", namespace = ns } })
  end

  local function owned_by(o)
    return { { apiVersion = "v1", kind = "ConfigMap", name = o.metadata.name, uid = o.metadata.uid,
               controller = true } }
  end

  -- The three pods, bound to `node` (tainted: each of them violates the
  -- taint, so the plugin wants every one it can see off the node).
  local function odd_pods(ns, node, o)
    cp:pod(ns, "nul", { node = node, owner = o, annotations = { note = "before\0after" } })
    local res = {}
    for i = 1, 70 do res[string.format("example.com/dev-%d", i)] = "1" end
    cp:create("/api/v1/namespaces/" .. ns .. "/pods", {
      apiVersion = "v1", kind = "Pod", metadata = { name = "devices", namespace = ns, ownerReferences = owned_by(o) },
      spec = { nodeName = node, containers = { { name = "app", image = "registry.k8s.io/pause:3.9",
        resources = { requests = res, limits = res } } } } })
    local tol = {}
    for i = 1, TOLERATIONS do tol[i] = { key = "k" .. i } end
    cp:create("/api/v1/namespaces/" .. ns .. "/pods", {
      apiVersion = "v1", kind = "Pod", metadata = { name = "tolerant", namespace = ns, ownerReferences = owned_by(o) },
      spec = { nodeName = node, tolerations = tol,
               containers = { { name = "app", image = "registry.k8s.io/pause:3.9" } } } })
  end

  local function tainted_node(ns)
    local n1, o = ns .. "-n1", owner(ns)
    cp:node(n1, { taints = { { key = "dedicated", value = "gpu", effect = "NoSchedule" } } })
    cp:node(ns .. "-n2")
    cp:pod(ns, "plain", { node = n1, owner = o })
    return n1, o
  end

  local function skip_events(ns)
    local out = {}
    for _, ev in ipairs(cp:events(ns)) do
      if ev.reportingController == "ebb" and ev.reason == "ObjectSkipped" then out[#out + 1] = ev end
    end
    return out
  end

  it("in a LIST: syncs, keeps the NUL and the 70 resources, skips the 66,000 tolerations alone", function()
    local ns = cp:namespace("odd")
    local n1, o = tainted_node(ns)
    odd_pods(ns, n1, o)
    local run = start{ policy = K.taints_policy(ns), "--once", "--sync-timeout", "20s" }
    assert.equal(0, run:wait(60), run:stderr())
    local err = run:stderr()
    assert.matches("caches synced", err)
    assert.same({ ns .. "/devices", ns .. "/nul", ns .. "/plain" }, R.sorted(run:evicted()), err)
    assert.matches("skipped pod " .. ns:gsub("%-", "%%-") .. "/tolerant: spec%.tolerations: too many entries", err)
    local evs = cp:wait(function() local e = skip_events(ns); return #e > 0 and e end, 10, "the ObjectSkipped Event")
    assert.equal(1, #evs)
    assert.equal("Warning", evs[1].type)
    assert.equal("Pod", evs[1].regarding.kind)
    assert.equal("tolerant", evs[1].regarding.name)
    assert.matches("spec%.tolerations", evs[1].note)
  end)

  it("in a watch: applies the others, skips the one it cannot keep, never resumes in a loop, stays ready", function()
    local ns = cp:namespace("oddw")
    local n1, o = tainted_node(ns)
    local run = start{ policy = K.taints_policy(ns), "--dry-run", "--interval", "1h" }
    cp:wait(function() return run:ready() end, 30, "ebb ready")
    odd_pods(ns, n1, o)
    cp:pod(ns, "after", { node = n1, owner = o })
    run:wait_log("skipped pod " .. ns:gsub("%-", "%%-") .. "/tolerant", 15)
    -- the events after the bad one were applied: a later pod is seen
    cp:wait(function()
      local m = run:metrics()
      return m and (R.metric(m, "ebb_cache_objects", '{kind="Pod"}') or 0) >= 4
    end, 15, "the pods after the skipped one in ebb's cache")
    local m = assert(run:metrics())
    assert.equal(1, R.metric(m, "ebb_objects_skipped_total", '{resource="pods",reason="invalid"}'))
    assert.equal(0, R.metric(m, "ebb_watch_resumes_total", '{resource="pods"}'))
    assert.is_true((run:ready()))
    -- deleting it is applied too (its DELETED event carries the same object)
    cp:delete("/api/v1/namespaces/" .. ns .. "/pods/tolerant", "?gracePeriodSeconds=0")
    cp:pod(ns, "later", { node = n1, owner = o })
    cp:wait(function()
      local mm = run:metrics()
      return mm and (R.metric(mm, "ebb_watch_events_total", '{resource="pods"}') or 0) >= 6
    end, 15, "the events after the deletion")
    m = assert(run:metrics())
    assert.equal(0, R.metric(m, "ebb_watch_resumes_total", '{resource="pods"}'))
    assert.is_true((run:ready()))
    assert.not_matches("resuming", run:stderr())
  end)
end)
