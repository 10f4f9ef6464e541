-- The spill behind pod.object during a live `ebb run` under churn: every
-- new version of a pod is appended to it, full files are reclaimed, and
-- pod.object still reads each pod's newest version. Kept only while a
-- script names pod.object: none is written for the built-in strategies,
-- and a name the scan cannot see turns it on when first read.
local R = require("spec.integration.run_harness")
local S = R.S

local DEMO = "spec/fixtures/demo-cluster.json"

-- Compares every pod's object with what the cache decoded of it.
local CHECK = [[
local ebb = require("ebb")
return {
  name = "ObjectCheck",
  deschedule = function(ctx, nodes)
    local ok, bad = 0, 0
    for _, pod in ebb.pods(nodes, { phase = "all" }):iter() do
      local o = pod.object
      local m = o and o.metadata or {}
      local want = pod.labels["ebb.dev/churn"]
      if m.name == pod.name and m.namespace == pod.namespace and m.uid == pod.uid and
         (m.labels or {})["ebb.dev/churn"] == want then
        ok = ok + 1
      else
        bad = bad + 1
      end
    end
    ebb.log("info", string.format("object check: %d ok, %d bad", ok, bad))
  end,
}
]]

local POLICY = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: ObjectCheck
  plugins:
    deschedule:
      enabled: [ObjectCheck]
]]

describe("the pod.object spill under churn", function()
  local T = R.suite(before_each, after_each)
  local dir

  after_each(function()
    if dir then S.rmdir(dir) end
    dir = nil
  end)

  it("reclaims full files and keeps reading each pod's newest version", function()
    dir = S.tmpdir()
    S.write(dir .. "/objectcheck.lua", CHECK)
    -- about 3 KB an event: 80,000 events write about 250 MB, eight 32 MB files
    T.srv = S.start{ snapshot = DEMO, "--churn", "40000", "--churn-total", "80000" }
    local run = T.start{ policy = POLICY, "--policy-dir", dir, "--interval", "1s", "--dry-run" }
    assert.is_not_nil(run:wait_log("cycle 1:", 15), run:stderr())
    assert.is_truthy(S.eventually(function()
      return T.srv:stderr():match("churn: 80000 pod events made")
    end, 60), T.srv:stderr())
    -- the watcher has read them all, or has been cut off as a slow watcher
    -- (ebb serve ends one, as kube-apiserver does) and listed the pods again
    local m = S.eventually(function()
      local text = run:metrics()
      local events = R.metric(text, "ebb_watch_events_total", '{resource="pods"}') or 0
      local lists = R.metric(text, "ebb_watch_lists_total", '{resource="pods"}') or 0
      return (events >= 80000 or (lists >= 2 and events > 0)) and
             (R.metric(text, "ebb_cache_spill_reclaims_total") or 0) >= 3 and text
    end, 60)
    assert.is_truthy(m, run:stderr())
    local size = R.metric(m, "ebb_cache_spill_bytes")
    local live = R.metric(m, "ebb_cache_spill_live_bytes")
    local reclaims = R.metric(m, "ebb_cache_spill_reclaims_total")
    assert.is_true(reclaims >= 3, "reclaims: " .. tostring(reclaims))
    assert.is_true(live > 0 and live < 1e6, "live: " .. tostring(live))
    -- the bound: twice the live bytes, 64 MB of slack, the file written
    -- to (32 MB and an event); not the 250 MB written
    assert.is_true(size < 2 * live + 97e6, "spill: " .. tostring(size))
    -- the next cycle reads every pod's object: all match the cache
    local seen = #run:stderr()
    local line = S.eventually(function()
      return run:stderr():sub(seen + 1):match("object check: (%d+) ok, (%d+) bad")
    end, 10)
    local ok, bad = run:stderr():sub(seen + 1):match("object check: (%d+) ok, (%d+) bad")
    assert.is_truthy(line, run:stderr())
    assert.equal(0, tonumber(bad))
    assert.is_true(tonumber(ok) >= 45)
  end)

  it("writes nothing when no script names pod.object (the built-in strategies)", function()
    T.srv = S.start{ snapshot = DEMO }
    local f = assert(io.open("spec/fixtures/policies/helm-default.yaml"))
    local helm = f:read("a")
    f:close()
    local run = T.start{ policy = helm, "--interval", "1s", "--dry-run" }
    assert.is_not_nil(run:wait_log("cycle 2:", 15), run:stderr())
    local m = run:metrics()
    assert.equal(0, R.metric(m, "ebb_cache_spill_bytes"), m)
    assert.is_true((R.metric(m, "ebb_watch_lists_total", '{resource="pods"}') or 0) == 1, m)
    assert.not_matches("pod.object", run:stderr())
  end)

  it("a script that reads pod.object by a computed key: nil at first, then kept and listed again", function()
    dir = S.tmpdir()
    -- the same check, the field's name made at run time: the scan of the
    -- source cannot see it
    S.write(dir .. "/objectcheck.lua", (CHECK:gsub("pod%.object", 'pod["obj" .. "ect"]')))
    T.srv = S.start{ snapshot = DEMO }
    local run = T.start{ policy = POLICY, "--policy-dir", dir, "--interval", "1s", "--dry-run" }
    local first = run:wait_log("object check: (%d+) ok, (%d+) bad", 15)
    assert.is_not_nil(first, run:stderr())
    assert.matches("object check: 0 ok, %d+ bad", run:stderr())
    assert.matches("a script read pod.object or node.object, which ebb keeps only for scripts " ..
      "that name it", run:stderr())
    assert.matches("watch pods: a script reads objects' text, kept from now on: relisting", run:stderr())
    assert.matches("watch nodes: a script reads objects' text, kept from now on: relisting", run:stderr())
    local ok = S.eventually(function()
      local good, bad = run:stderr():match("object check: (%d+) ok, 0 bad")
      return good and tonumber(good) >= 45 and good
    end, 15)
    assert.is_truthy(ok, run:stderr())
    assert.is_true(R.metric(run:metrics(), "ebb_cache_spill_bytes") > 0)
  end)
end)
