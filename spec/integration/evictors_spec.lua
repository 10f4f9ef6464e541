-- Evict plugins live: `ebb run --once` against `ebb serve` with each shipped
-- evictor, then the server's state (pods deleted, annotations written,
-- PodMigrationJobs created) and the Events ebb posted. The cluster is
-- spec/fixtures/demo-cluster.json; PodLifeTime over 7 days asks for seven
-- evictions, and five more are refused by PodDisruptionBudgets, which the
-- core checks from its view (the API checks them for evictions only).
local R = require("spec.integration.run_harness")
local S = R.S
local json = S.json

local DEMO = "spec/fixtures/demo-cluster.json"
local ANN = "scheduling.koordinator.sh/soft-eviction"
local PMJ = "/apis/scheduling.koordinator.sh/v1alpha1/podmigrationjobs"

local EXPECTED = { "monitoring/grafana-5c8d7e6f9-r4t6y", "batch/spark-driver-9c8b7a6d5-u1v2w",
  "payments/ledger-db-0", "shop/frontend-6b8f9d7c5-a1b2c", "shop/frontend-6b8f9d7c5-d3e4f",
  "shop/frontend-6b8f9d7c5-g5h6i", "shop/cart-5d7f8c6b9-t3u4v" }

local function policy(evictor, args)
  return ([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 604800
  - name: %s
%s  plugins:
    deschedule:
      enabled: [PodLifeTime]
    evict:
      enabled: [%s]
]]):format(evictor, args or "", evictor)
end

local function set(t)
  local s = {}
  for _, v in ipairs(t) do s[v] = true end
  return s
end

-- Every pod the server has, by "ns/name".
local function pods_by_key(srv)
  local out = {}
  for _, p in ipairs(srv:get("/api/v1/pods").items) do
    out[p.metadata.namespace .. "/" .. p.metadata.name] = p
  end
  return out
end

-- The notes of the Events ebb posted, by the pod they are about.
local function event_notes(srv)
  local out = {}
  for _, e in ipairs(srv:get("/apis/events.k8s.io/v1/events").items) do
    out[e.regarding.namespace .. "/" .. e.regarding.name] = e.note
  end
  return out
end

describe("evict plugins against ebb serve", function()
  local T = R.suite(before_each, after_each)

  it("DeleteEvictor deletes the pods, with their uids, and says so in the Events", function()
    T.srv = S.start{ snapshot = DEMO }
    local before = R.pods(T.srv)
    local run = T.start{ policy = policy("DeleteEvictor", "    args:\n      gracePeriodSeconds: 0\n"),
                       "--once" }
    assert.equal(0, run:wait(30), run:stderr())
    assert.same(R.sorted(EXPECTED), R.sorted(run:evicted()))
    assert.same(R.without(before, EXPECTED), R.pods(T.srv))
    assert.matches("cycle 1: 7 evicted, 5 refused", run:stderr())
    local notes = event_notes(T.srv)
    for _, key in ipairs(EXPECTED) do
      assert.matches("by ebb %(DeleteEvictor: delete%)$", notes[key], nil, key)
    end
  end)

  it("SoftEvictor annotates the pods for their owners and deletes nothing", function()
    T.srv = S.start{ snapshot = DEMO }
    local before = R.pods(T.srv)
    local run = T.start{ policy = policy("SoftEvictor"), "--once" }
    assert.equal(0, run:wait(30), run:stderr())
    assert.same(R.sorted(EXPECTED), R.sorted(run:evicted()))
    assert.same(before, R.pods(T.srv))
    local pods, marked = pods_by_key(T.srv), set(EXPECTED)
    for key, p in pairs(pods) do
      local value = (p.metadata.annotations or {})[ANN]
      if marked[key] then
        local spec = json.decode(value)
        assert.equal("PodLifeTime", spec.initiator, key)
        assert.equal(R.NOW, spec.timestamp, key)
        assert.matches("older than", spec.reason, nil, key)
      else
        assert.is_nil(value, key)
      end
    end
    local notes = event_notes(T.srv)
    assert.matches("%(SoftEvictor: patch annotations " .. ANN:gsub("%.", "%%."):gsub("%-", "%%-") .. "%)$",
                   notes[EXPECTED[1]])

    -- the marked pods are on their way out: a second run leaves them alone
    local again = T.start{ policy = policy("SoftEvictor"), "--once" }
    assert.equal(0, again:wait(30), again:stderr())
    for _, key in ipairs(again:evicted()) do assert.is_nil(marked[key], key) end
  end)

  it("MigrationJobEvictor creates one PodMigrationJob per pod; a second run adds none", function()
    T.srv = S.start{ snapshot = DEMO, "--koordinator" }
    local before, uids = R.pods(T.srv), {}
    for key, p in pairs(pods_by_key(T.srv)) do uids[key] = p.metadata.uid end
    local run = T.start{ policy = policy("MigrationJobEvictor", "    args:\n      mode: EvictDirectly\n"),
                       "--once" }
    assert.equal(0, run:wait(30), run:stderr())
    assert.same(R.sorted(EXPECTED), R.sorted(run:evicted()))
    assert.same(before, R.pods(T.srv))
    local jobs = T.srv:get(PMJ).items
    assert.equal(#EXPECTED, #jobs)
    for _, key in ipairs(EXPECTED) do
      local ns, name = key:match("^(.-)/(.*)$")
      local j = T.srv:get(PMJ .. "/" .. uids[key])
      assert.same({ namespace = ns, name = name, uid = uids[key] }, j.spec.podRef)
      assert.equal("EvictDirectly", j.spec.mode)
      assert.equal("5m0s", j.spec.ttl)
      assert.equal("PodLifeTime", j.metadata.annotations["koordinator.sh/evict-trigger"])
      assert.matches("create PodMigrationJob " .. uids[key]:gsub("%-", "%%-") .. "%)$",
                     event_notes(T.srv)[key])
    end

    local again = T.start{ policy = policy("MigrationJobEvictor"), "--once" }
    -- the 409s are api-error outcomes: --once exits 3
    assert.equal(3, again:wait(30), again:stderr())
    assert.equal(#EXPECTED, #T.srv:get(PMJ).items)
    assert.same({}, again:evicted())
    assert.matches("409 podmigrationjobs.scheduling.koordinator.sh \"[%x%-]+\" already exists",
                   again:stderr())
  end)

  it("MigrationJobEvictor against a cluster without Koordinator: API errors, no pod touched", function()
    T.srv = S.start{ snapshot = DEMO }
    local before = R.pods(T.srv)
    local run = T.start{ policy = policy("MigrationJobEvictor"), "--once" }
    assert.equal(3, run:wait(30), run:stderr())   -- the 404s are api-error outcomes
    assert.same({}, run:evicted())
    assert.same(before, R.pods(T.srv))
    assert.matches("create PodMigrationJob [%x%-]+%): 404 the server could not find the requested "
                   .. "resource", run:stderr())
    assert.matches("cycle 1: 0 evicted, 12 refused", run:stderr())
  end)

  it("counts an evictor's refusals in the eviction metric", function()
    local dir = S.tmpdir()
    S.write(dir .. "/no.lua", [[return { name = "NoEvictor", evict = function(ctx, pod, opts) return false, "no" end }]])
    T.srv = S.start{ snapshot = DEMO }
    local run = T.start{ policy = policy("NoEvictor"), "--policy-dir", dir, "--interval", "1h" }
    assert.is_not_nil(run:wait_log("cycle 1:", 30), run:stderr())
    local m = run:metrics()
    S.rmdir(dir)
    assert.equal(1, R.metric(m, "descheduler_pods_evicted_total",
      '{result="refused by the evict plugin",strategy="PodLifeTime",profile="default",' ..
      'namespace="monitoring",node="ip-10-0-2-22.eu-west-1.compute.internal"}'), m)
    assert.matches("cycle 1: 0 evicted, 12 refused", run:stderr())
  end)
end)

describe("ebb serve answers what evict plugins send", function()
  local srv
  after_each(function() if srv then srv:stop() end srv = nil end)

  it("patches a pod's metadata, refusing a patch for another incarnation (422)", function()
    srv = S.start{ snapshot = DEMO }
    local path = "/api/v1/namespaces/shop/pods/cart-5d7f8c6b9-t3u4v"
    local uid = srv:get(path).metadata.uid
    local mp = { ["Content-Type"] = "application/merge-patch+json" }
    local code, st = srv:request("PATCH", path, { metadata = { uid = "not-" .. uid,
      annotations = { a = "b" } } }, mp)
    assert.equal(422, code)
    assert.equal("Invalid", st.reason)
    assert.matches("metadata.uid: Invalid value: \"not%-", st.message)
    assert.is_nil((srv:get(path).metadata.annotations or {}).a)
    local obj
    code, obj = srv:request("PATCH", path, { metadata = { uid = uid, annotations = { a = "b" } } }, mp)
    assert.equal(200, code)
    assert.equal("b", obj.metadata.annotations.a)
    assert.equal("b", srv:get(path).metadata.annotations.a)
  end)

  it("serves PodMigrationJobs only as a cluster with Koordinator would", function()
    srv = S.start{ snapshot = DEMO }
    local names = {}
    for _, g in ipairs(srv:get("/apis").groups) do names[#names + 1] = g.name end
    assert.is_nil(set(names)["scheduling.koordinator.sh"])
    assert.equal(404, (srv:request("GET", PMJ)))
    srv:stop()

    srv = S.start{ snapshot = DEMO, "--koordinator" }
    names = {}
    for _, g in ipairs(srv:get("/apis").groups) do names[#names + 1] = g.name end
    assert.is_true(set(names)["scheduling.koordinator.sh"])
    local res = srv:get("/apis/scheduling.koordinator.sh/v1alpha1").resources[1]
    assert.equal("PodMigrationJob", res.kind)
    assert.is_false(res.namespaced)
    local body = { apiVersion = "scheduling.koordinator.sh/v1alpha1", kind = "PodMigrationJob",
                   metadata = { name = "job-1" },
                   spec = { podRef = { namespace = "shop", name = "cart-5d7f8c6b9-t3u4v" } } }
    local code, obj = srv:request("POST", PMJ, body)
    assert.equal(201, code)
    assert.is_string(obj.metadata.uid)
    assert.equal(409, (srv:request("POST", PMJ, body)))
    assert.same({ "job-1" }, S.names(srv:get(PMJ)))
    assert.equal("cart-5d7f8c6b9-t3u4v", srv:get(PMJ .. "/job-1").spec.podRef.name)
  end)
end)
