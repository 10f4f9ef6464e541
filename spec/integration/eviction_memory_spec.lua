-- The memory of evictions kept in the cluster by `ebb run` (the ConfigMap
-- ebb-eviction-memory, key evictions.json, in ebb's namespace), against
-- kube-apiserver:
--   - one-shot runs (--once) in a row: each reads what the last wrote and
--     adds its own evictions;
--   - a run killed with SIGKILL and started again reads it back;
--   - a change of leader: the new leader reads what the old one wrote;
--   - after thousands of evictions the object stays under its bound, the
--     newest entries kept and the oldest dropped.
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")
local json = K.json

describe("the memory of evictions against kube-apiserver", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local runs = {}
  after_each(function()
    for _, r in ipairs(runs) do r:stop() end
    runs = {}
    cp:cleanup()
  end)

  local function start(ns, ...)
    local r = R.start(cp, { policy = K.taints_policy(ns), now = false,
      "--leader-elect-resource-namespace", ns, ... })
    runs[#runs + 1] = r
    return r
  end

  local function cm_path(ns)
    return "/api/v1/namespaces/" .. ns .. "/configmaps/ebb-eviction-memory"
  end

  -- the memory as stored: its entries (nil when there is no object) and
  -- the size of its text
  local function memory(ns)
    local code, obj = cp:request("GET", cm_path(ns))
    if code == 404 then return nil end
    assert.equal(200, code)
    local text = obj.data["evictions.json"]
    local m = assert(json.decode(text))
    assert.equal(1, m.version)
    return m.entries, #text
  end

  local function pods_of(entries)
    local out = {}
    for _, e in ipairs(entries or {}) do out[#out + 1] = e.pod end
    table.sort(out)
    return out
  end

  -- a pod bound to the tainted node: RemovePodsViolatingNodeTaints evicts it
  local function victim(ns, node, name)
    cp:pod(ns, name, { node = node, running = true })
  end

  local function cluster(prefix)
    local ns = cp:namespace(prefix)
    local n1 = cp:node(ns .. "-n1", { taints = { { key = "gone", value = "x", effect = "NoSchedule" } } })
    cp:node(ns .. "-n2")
    return ns, n1
  end

  it("one-shot runs in a row: each reads what the last wrote and adds to it", function()
    local ns, n1 = cluster("once")
    assert.is_nil(memory(ns))
    victim(ns, n1, "batch-a")
    local a = start(ns, "--once")
    assert.equal(0, a:wait(60), a:stderr())
    local e = memory(ns)
    assert.same({ "batch-a" }, pods_of(e))
    assert.equal("Pod", e[1].k)
    assert.equal("batch-a", e[1].w)
    assert.equal(n1, e[1].n)
    assert.equal("RemovePodsViolatingNodeTaints", e[1].pl)
    assert.equal("default", e[1].pr)
    assert.is_true(math.abs(e[1].t - os.time()) < 300)

    cp:finish_terminating(ns)
    victim(ns, n1, "batch-b")
    local b = start(ns, "--once")
    assert.equal(0, b:wait(60), b:stderr())
    assert.matches("1 evictions read from the cluster", b:stderr(), 1, true)
    assert.same({ "batch-a", "batch-b" }, pods_of(memory(ns)))

    -- a dry run reads it and writes nothing
    cp:finish_terminating(ns)
    victim(ns, n1, "batch-c")
    local c = start(ns, "--once", "--dry-run")
    assert.equal(0, c:wait(60), c:stderr())
    assert.matches("2 evictions read from the cluster", c:stderr(), 1, true)
    assert.same({ "batch-a", "batch-b" }, pods_of(memory(ns)))
  end)

  it("survives SIGKILL: a new process reads back what the killed one wrote", function()
    local ns, n1 = cluster("kill")
    victim(ns, n1, "web-a")
    local a = start(ns, "--interval", "1h")
    assert.truthy(a:wait_log("cycle 1: 1 evicted", 60), a:stderr())
    cp:wait(function() return #pods_of(memory(ns)) == 1 end, 30, "the memory written")
    a:kill("KILL")
    a:wait(20)
    local b = start(ns, "--interval", "1h")
    assert.truthy(b:wait_log("1 evictions read from the cluster", 60), b:stderr())
    assert.truthy(b:wait_log("cycle 1:", 60), b:stderr())
    -- its own eviction is added to what it read, not written over it
    cp:finish_terminating(ns)
    victim(ns, n1, "web-b")
    b:kill("KILL")
    b:wait(20)
    local c = start(ns, "--interval", "1h")
    assert.truthy(c:wait_log("cycle 1: 1 evicted", 60), c:stderr())
    cp:wait(function() return #pods_of(memory(ns)) == 2 end, 30, "both evictions kept")
    assert.same({ "web-a", "web-b" }, pods_of(memory(ns)))
    assert.equal("200", tostring((c:ready())))
  end)

  it("a change of leader: the new leader reads what the old one remembered", function()
    local ns, n1 = cluster("lead")
    victim(ns, n1, "svc-a")
    local opts = { "--leader-elect", "--leader-elect-lease-duration", "6s",
                   "--leader-elect-renew-deadline", "4s", "--leader-elect-retry-period", "1s",
                   "--leader-elect-resource-name", "ebb-memory", "--interval", "1h" }
    local a = start(ns, table.unpack(opts))
    assert.truthy(a:wait_log("acquired lease", 30), a:stderr())
    assert.truthy(a:wait_log("cycle 1: 1 evicted", 60), a:stderr())
    cp:wait(function() return #pods_of(memory(ns)) == 1 end, 30, "the leader's memory written")
    local b = start(ns, table.unpack(opts))
    assert.truthy(b:wait_log("is held by", 30), b:stderr())
    a:kill("TERM")
    assert.equal(0, a:wait(20), a:stderr())
    assert.truthy(b:wait_log("acquired lease", 30), b:stderr())
    assert.truthy(b:wait_log("1 evictions read from the cluster", 30), b:stderr())
  end)

  it("stays bounded after thousands of evictions, the newest kept", function()
    local ns, n1 = cluster("bound")
    -- a memory near its bound: 6000 evictions of the last hours
    local entries, now = {}, os.time()
    for i = 1, 6000 do
      entries[i] = { t = now - 6000 + i, ns = ns, pod = string.format("old-%05d", i),
                     uid = string.format("00000000-0000-4000-8000-%012d", i), k = "Deployment",
                     w = "old", n = n1, pl = "RemovePodsViolatingNodeTaints", pr = "default" }
    end
    local text = json.encode({ version = 1, window = 86400, entries = entries })
    -- what fits in a ConfigMap: the newest that do
    while #text > 1000000 do
      table.remove(entries, 1)
      text = json.encode({ version = 1, window = 86400, entries = entries })
    end
    local seeded = #entries
    cp:create("/api/v1/namespaces/" .. ns .. "/configmaps", { apiVersion = "v1", kind = "ConfigMap",
      metadata = { name = "ebb-eviction-memory", namespace = ns }, data = { ["evictions.json"] = text } })
    victim(ns, n1, "fresh")
    local a = start(ns, "--once")
    assert.equal(0, a:wait(60), a:stderr())
    local got, size = memory(ns)
    assert.is_true(size <= 900 * 1024, "the object's text is " .. size .. " bytes")
    assert.is_true(#got > 1000 and #got <= seeded)
    assert.equal("fresh", got[#got].pod)                               -- the newest kept
    assert.equal(entries[#entries].pod, got[#got - 1].pod)
    assert.is_true(got[1].t > entries[1].t)                            -- the oldest dropped
    io.stderr:write(string.format("\n# figure: memory of evictions: %d entries in %d bytes (seeded %d)\n",
      #got, size, seeded))
  end)
end)
