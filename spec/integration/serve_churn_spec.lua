-- `ebb serve --churn`: pod events for benchmarks of a watcher's ingest,
-- checked the way a watcher sees them. Every test starts its own server on
-- a free port (spec/fixtures/kubectl-list.json) and stops it with SIGTERM.
local S = require("spec.integration.serve_harness")
local shell = require("spec.shell")

local function count(evs, t)
  local n = 0
  for _, e in ipairs(evs) do
    if e.type == t then n = n + 1 end
  end
  return n
end

describe("ebb serve --churn", function()
  local srv

  after_each(function()
    if srv then
      local st = srv:stop()
      srv = nil
      assert.equal(0, st)
    end
  end)

  it("starts with the first pods watch and changes pods with the next resourceVersions", function()
    srv = S.start{ "--churn", "2000", "--churn-total", "40" }
    local before = srv:get("/api/v1/pods")
    -- nothing happens while nobody watches pods
    local nodes = srv:watch("/api/v1/nodes?watch=1&resourceVersion=" .. before.metadata.resourceVersion)
    S.sleep(0.3)
    assert.equal(before.metadata.resourceVersion, srv:get("/api/v1/pods").metadata.resourceVersion)
    nodes:stop()

    local w = srv:watch("/api/v1/pods?watch=1&resourceVersion=" .. before.metadata.resourceVersion)
    local evs = S.eventually(function()
      local e = w:events()
      return #e >= 40 and e
    end, 20)
    assert.is_table(evs)
    assert.equal(40, #evs)
    -- of every 20: one pod added, one of those deleted, the others changed
    assert.equal(2, count(evs, "ADDED"))
    assert.equal(2, count(evs, "DELETED"))
    assert.equal(36, count(evs, "MODIFIED"))
    local last = tonumber(before.metadata.resourceVersion)
    for _, e in ipairs(evs) do
      local rv = tonumber(e.object.metadata.resourceVersion)
      assert.is_true(rv == last + 1, "resourceVersion " .. rv .. " after " .. last)
      last = rv
    end

    local added, deleted, labels, notes, restarts = {}, {}, 0, 0, 0
    local original = {}
    for _, p in ipairs(before.items) do original[p.metadata.namespace .. "/" .. p.metadata.name] = p end
    for _, e in ipairs(evs) do
      local m = e.object.metadata
      local key = m.namespace .. "/" .. m.name
      if e.type == "ADDED" then
        assert.matches("%-churn%-%d+$", m.name)
        assert.is_nil(original[key])
        added[#added + 1] = key
      elseif e.type == "DELETED" then
        deleted[#deleted + 1] = key
      else
        local was = assert(original[key], key .. " is not a pod of the snapshot")
        assert.equal(was.metadata.uid, m.uid)
        if (m.labels or {})["ebb.dev/churn"] then labels = labels + 1 end
        if (m.annotations or {})["ebb.dev/churn-note"] then notes = notes + 1 end
        local cs = (e.object.status or {}).containerStatuses
        local wcs = (was.status or {}).containerStatuses
        if cs and wcs and cs[1].restartCount > wcs[1].restartCount then restarts = restarts + 1 end
      end
    end
    assert.is_true(labels > 0 and notes > 0 and restarts > 0)
    -- the pods it added go again, oldest first; the snapshot's stay
    assert.same(added, deleted)
    local after = srv:get("/api/v1/pods")
    assert.same(S.names(before), S.names(after))
    assert.equal(tostring(last), after.metadata.resourceVersion)
    assert.matches("churn: 40 pod events made", S.eventually(function()
      return srv:stderr():match("churn: 40 pod events made") and srv:stderr()
    end, 10), 1, true)
    w:stop()
  end)

  it("a changed pod reads back as the watch saw it", function()
    srv = S.start{ "--churn", "1000", "--churn-total", "9" }
    local rv = srv:get("/api/v1/pods").metadata.resourceVersion
    local w = srv:watch("/api/v1/pods?watch=1&resourceVersion=" .. rv)
    local ev = w:wait_for(function(e) return e.type == "MODIFIED" end, 20)
    assert.is_table(ev)
    local m = ev.object.metadata
    local final
    -- the last event about that pod is what a GET answers
    S.eventually(function() return #w:events() >= 9 end, 20)
    for _, e in ipairs(w:events()) do
      if e.object.metadata.name == m.name and e.object.metadata.namespace == m.namespace then
        final = e.object
      end
    end
    local got = srv:get("/api/v1/namespaces/" .. m.namespace .. "/pods/" .. m.name)
    assert.same(final, got)
    w:stop()
  end)

  it("refuses a rate that is not a positive number, and a total without a rate", function()
    local function run(args)
      return shell.sh(S.shq(S.EBB) .. " serve --snapshot " .. S.SNAPSHOT .. " " .. args)
    end
    local code, out = run("--churn 0")
    assert.equal(2, code)
    assert.matches("--churn: \"0\"", out, 1, true)
    code, out = run("--churn fast")
    assert.equal(2, code)
    assert.matches("--churn: \"fast\"", out, 1, true)
    code, out = run("--churn 10 --churn-total 0")
    assert.equal(2, code)
    assert.matches("--churn-total", out, 1, true)
    code, out = run("--churn-total 5")
    assert.equal(2, code)
    assert.matches("--churn-total needs --churn", out, 1, true)
  end)
end)
