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

  local function workloads_of(entries)
    local out = {}
    for _, e in ipairs(entries or {}) do out[#out + 1] = e.w end
    table.sort(out)
    return out
  end

  -- a ReplicaSet's pod on a node of its own, then the node tainted:
  -- RemovePodsViolatingNodeTaints evicts it (its replacement, held to that
  -- node, stays pending)
  local function victim(ns, name)
    local node = cp:node(ns .. "-" .. name)
    cp:replicaset(ns, name, 1, { node_selector = { ["kubernetes.io/hostname"] = node } })
    cp:wait(function() return #cp:pods(ns, "app=" .. name, "bound") == 1 end, 30, name .. " bound")
    cp:run_pods(ns)
    cp:patch("/api/v1/nodes/" .. node, { spec = { taints = { { key = "gone", value = "x", effect = "NoSchedule" } } } })
    return node
  end

  local function cluster(prefix)
    local ns = cp:namespace(prefix)
    cp:node(ns .. "-spare")   -- the plugin needs two ready nodes
    return ns
  end

  it("one-shot runs in a row: each reads what the last wrote and adds to it", function()
    local ns = cluster("once")
    assert.is_nil(memory(ns))
    local n1 = victim(ns, "batch-a")
    local a = start(ns, "--once")
    assert.equal(0, a:wait(60), a:stderr())
    local e = memory(ns)
    assert.same({ "batch-a" }, workloads_of(e), a:stderr())
    assert.equal("ReplicaSet", e[1].k)
    assert.matches("^batch%-a%-", e[1].pod)
    assert.equal(n1, e[1].n)
    assert.equal("RemovePodsViolatingNodeTaints", e[1].pl)
    assert.equal("default", e[1].pr)
    assert.is_true(math.abs(e[1].t - os.time()) < 300)

    victim(ns, "batch-b")
    local b = start(ns, "--once")
    assert.equal(0, b:wait(60), b:stderr())
    assert.matches("1 evictions read from the cluster", b:stderr(), 1, true)
    assert.same({ "batch-a", "batch-b" }, workloads_of(memory(ns)))

    -- a dry run reads it and writes nothing
    victim(ns, "batch-c")
    local c = start(ns, "--once", "--dry-run")
    assert.equal(0, c:wait(60), c:stderr())
    assert.matches("2 evictions read from the cluster", c:stderr(), 1, true)
    assert.same({ "batch-a", "batch-b" }, workloads_of(memory(ns)))
  end)

  it("ebb record includes it, and ebb explain on the recording shows it", function()
    local S, sh = R.S, require("spec.shell")
    local ns = cluster("record")
    victim(ns, "batch-a")
    local a = start(ns, "--once")
    assert.equal(0, a:wait(60), a:stderr())
    assert.same({ "batch-a" }, workloads_of(memory(ns)))
    local dir = S.tmpdir()
    local snap = dir .. "/cluster.json"
    local function record(mem_ns)
      return sh.run(string.format("%s record -o %s --kubeconfig %s --eviction-memory-namespace %s",
        S.shq(S.EBB), S.shq(snap), S.shq(cp.kubeconfig), S.shq(mem_ns)))
    end
    local code, _, err = record(ns)
    assert.equal(0, code, err)
    local found
    for _, it in ipairs(json.decode(assert(S.read(snap))).items) do
      if it.kind == "ConfigMap" and it.metadata.name == "ebb-eviction-memory" then found = it end
    end
    assert.is_table(found, "the memory's ConfigMap in the snapshot")
    assert.equal(ns, found.metadata.namespace)
    assert.same({ "batch-a" }, workloads_of(json.decode(found.data["evictions.json"]).entries))
    -- the replacement (held to the tainted node, pending): its workload's entry
    local pod = cp:pods(ns, "app=batch-a", "live")[1]
    S.write(dir .. "/policy.yaml", K.taints_policy(ns))
    local out
    code, out, err = sh.run(string.format("%s explain %s --snapshot %s --policy %s --output json",
      S.shq(S.EBB), S.shq(ns .. "/" .. pod.metadata.name), S.shq(snap), S.shq(dir .. "/policy.yaml")))
    assert.equal(0, code, err)
    assert.matches("the memory of evictions: 1 entry", err, 1, true)
    local doc = json.decode(out)
    assert.equal(1, doc.memory.total)
    assert.equal(found.metadata.namespace, doc.pod.namespace)
    -- where there is none: the record goes on without it, and says so
    code, _, err = record(ns .. "-none")
    assert.equal(0, code, err)
    assert.matches("no memory of evictions in namespace " .. ns:gsub("%-", "%%-") .. "%-none", err)
    S.rmdir(dir)
  end)

  it("survives SIGKILL: a new process reads back what the killed one wrote", function()
    local ns = cluster("kill")
    victim(ns, "web-a")
    local a = start(ns, "--interval", "1h")
    assert.truthy(a:wait_log("cycle 1: 1 evicted", 60), a:stderr())
    cp:wait(function() return #workloads_of(memory(ns)) == 1 end, 30, "the memory written")
    a:kill("KILL")
    a:wait(20)
    local b = start(ns, "--interval", "1h")
    assert.truthy(b:wait_log("1 evictions read from the cluster", 60), b:stderr())
    assert.truthy(b:wait_log("cycle 1:", 60), b:stderr())
    -- its own eviction is added to what it read, not written over it
    victim(ns, "web-b")
    b:kill("KILL")
    b:wait(20)
    local c = start(ns, "--interval", "1h")
    assert.truthy(c:wait_log("cycle 1: 1 evicted", 60), c:stderr())
    cp:wait(function() return #workloads_of(memory(ns)) == 2 end, 30, "both evictions kept")
    assert.same({ "web-a", "web-b" }, workloads_of(memory(ns)))
    assert.is_true((c:ready()))
  end)

  it("a change of leader: the new leader reads what the old one remembered", function()
    local ns = cluster("lead")
    victim(ns, "svc-a")
    local opts = { "--leader-elect", "--leader-elect-lease-duration", "6s",
                   "--leader-elect-renew-deadline", "4s", "--leader-elect-retry-period", "1s",
                   "--leader-elect-resource-name", "ebb-memory", "--interval", "1h" }
    local a = start(ns, table.unpack(opts))
    assert.truthy(a:wait_log("acquired lease", 30), a:stderr())
    assert.truthy(a:wait_log("cycle 1: 1 evicted", 60), a:stderr())
    cp:wait(function() return #workloads_of(memory(ns)) == 1 end, 30, "the leader's memory written")
    local b = start(ns, table.unpack(opts))
    assert.truthy(b:wait_log("is held by", 30), b:stderr())
    a:kill("TERM")
    assert.equal(0, a:wait(20), a:stderr())
    assert.truthy(b:wait_log("acquired lease", 30), b:stderr())
    assert.truthy(b:wait_log("1 evictions read from the cluster", 30), b:stderr())
  end)

  it("stays bounded after thousands of evictions, the newest kept", function()
    local ns = cluster("bound")
    local n1 = ns .. "-old"
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
    victim(ns, "fresh")
    local a = start(ns, "--once")
    assert.equal(0, a:wait(60), a:stderr())
    local got, size = memory(ns)
    assert.is_true(size <= 900 * 1024, "the object's text is " .. size .. " bytes")
    assert.is_true(#got > 1000 and #got <= seeded)
    assert.equal("fresh", got[#got].w)                               -- the newest kept
    assert.equal(entries[#entries].pod, got[#got - 1].pod)
    assert.is_true(got[1].t > entries[1].t)                            -- the oldest dropped
    io.stderr:write(string.format("\n# figure: memory of evictions: %d entries in %d bytes (seeded %d)\n",
      #got, size, seeded))
  end)
end)
