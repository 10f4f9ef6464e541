-- The memory of evictions kept by `ebb run` in the ConfigMap
-- ebb-eviction-memory (key evictions.json) of ebb's namespace, against a
-- real control plane (spec/integration/k8s_harness.lua): written after a
-- cycle that evicted, read back by a process started after a SIGKILL and
-- by the next `--once` run, never written in dry run, and bounded however
-- much it is seeded with (the newest entries kept).
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")
local json = require("dkjson")

describe("the memory of evictions against kube-apiserver", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local start = R.suite(before_each, after_each, cp).start

  local POLICY = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 20, memory: 20}
      targetThresholds: {cpu: 50, memory: 50}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
]]

  -- the batch node at 75% cpu (six workers pinned to it), two idle nodes:
  -- LowNodeUtilization evicts workers, the ReplicaSet recreates them
  local function loaded_cluster(prefix)
    local ns = cp:namespace(prefix)
    cp:node(ns .. "-batch", { labels = { pool = "batch-" .. ns } })
    cp:node(ns .. "-web1", { labels = { pool = "web-" .. ns } })
    cp:node(ns .. "-web2", { labels = { pool = "web-" .. ns } })
    cp:replicaset(ns, "worker", 6, { cpu = "500m", memory = "256Mi",
                                      node_selector = { pool = "batch-" .. ns } })
    cp:wait(function() return #cp:pods(ns, "app=worker", "bound") == 6 end, 30,
      "kube-scheduler binding the workers")
    cp:run_pods(ns, "app=worker")
    return ns
  end

  local function path(home) return "/api/v1/namespaces/" .. home .. "/configmaps/ebb-eviction-memory" end

  -- the object's memory (decoded), its raw text, or nil when absent
  local function memory(home)
    local code, obj = cp:request("GET", path(home))
    if code == 404 then return nil end
    assert.equal(200, code)
    local text = obj.data["evictions.json"]
    return json.decode(text), text, obj
  end

  local function pods_of(mem)
    local t = {}
    for _, e in ipairs(mem.entries) do t[#t + 1] = e.ns .. "/" .. e.pod end
    return R.sorted(t)
  end

  it("is written by a --once run and kept and added to by the next one", function()
    local ns = loaded_cluster("mem-once")
    local home = cp:namespace("ebb-home")
    local run = start{ policy = POLICY, "--once", "--leader-elect-resource-namespace", home }
    assert.equal(0, run:wait(60), run:stderr())
    local evicted = R.sorted(run:evicted())
    assert.is_true(#evicted >= 1, run:stderr())
    local mem = assert(memory(home), "the ConfigMap was not written")
    assert.equal(1, mem.version)
    assert.same(evicted, pods_of(mem))
    for _, e in ipairs(mem.entries) do
      assert.equal("ReplicaSet", e.k)
      assert.equal("worker", e.w)
      assert.equal(ns .. "-batch", e.n)
      assert.equal("LowNodeUtilization", e.pl)
      assert.equal("default", e.pr)
      assert.is_true(math.abs(e.t - os.time()) < 120)
    end
    -- the next run reads it before its cycle: what it adds comes after
    cp:finish_terminating(ns)
    cp:wait(function() return #cp:pods(ns, "app=worker", "bound") == 6 end, 30, "the replacements")
    cp:run_pods(ns, "app=worker")
    local run2 = start{ policy = POLICY, "--once", "--leader-elect-resource-namespace", home }
    assert.equal(0, run2:wait(60), run2:stderr())
    assert.matches(#evicted .. " evictions read from the cluster", run2:stderr(), 1, true)
    local mem2 = assert(memory(home))
    local all = R.sorted((function()
      local t = {}
      for _, p in ipairs(evicted) do t[#t + 1] = p end
      for _, p in ipairs(run2:evicted()) do t[#t + 1] = p end
      return t
    end)())
    assert.same(all, pods_of(mem2))
  end)

  it("survives a SIGKILL: the restarted process reads what the killed one wrote", function()
    loaded_cluster("mem-kill")
    local home = cp:namespace("ebb-home")
    local run = start{ policy = POLICY, "--interval", "1h", "--leader-elect-resource-namespace", home }
    assert.truthy(run:wait_log("cycle 1: %d+ evicted", 60), run:stderr())
    local evicted = R.sorted(run:evicted())
    assert.is_true(#evicted >= 1, run:stderr())
    local mem = cp:wait(function() return memory(home) end, 20, "the memory written after cycle 1")
    assert.same(evicted, pods_of(mem))
    run:kill("KILL")
    assert.is_not_nil(run:wait(10))
    local _, _, before = memory(home)
    local again = start{ policy = POLICY, "--interval", "1h", "--dry-run",
                         "--leader-elect-resource-namespace", home }
    assert.truthy(again:wait_log(#evicted .. " evictions read from the cluster", 30), again:stderr())
    assert.truthy(again:wait_log("cycle 1:", 60), again:stderr())
    -- a dry run writes nothing: the object is what the killed process left
    local _, _, obj = memory(home)
    assert.equal(before.metadata.resourceVersion, obj.metadata.resourceVersion)
    assert.same(evicted, pods_of(memory(home)))
  end)

  it("stays under 1 MiB when seeded with thousands of entries, the newest kept", function()
    loaded_cluster("mem-big")
    local home = cp:namespace("ebb-home")
    -- seeded with more than ebb's bound (900 KiB) but less than a
    -- ConfigMap holds (1 MiB): ebb must drop the oldest to write it
    local entries, now, seed, n = {}, os.time(), nil, 0
    repeat
      for _ = 1, 200 do
        n = n + 1
        entries[n] = { t = now - 7200 + n // 10, ns = "seed", pod = ("web-7c9f8d6b5-%05d"):format(n),
                       uid = ("00000000-0000-4000-8000-%012d"):format(n), k = "Deployment", w = "web",
                       n = "node-" .. (n % 7), pl = "LowNodeUtilization", pr = "default" }
      end
      seed = json.encode({ version = 1, window = 86400, entries = entries })
    until #seed > 960 * 1024
    assert.is_true(#seed < 1000 * 1024)
    cp:create("/api/v1/namespaces/" .. home .. "/configmaps", {
      apiVersion = "v1", kind = "ConfigMap",
      metadata = { name = "ebb-eviction-memory", namespace = home },
      data = { ["evictions.json"] = seed } })
    local run = start{ policy = POLICY, "--once", "--leader-elect-resource-namespace", home }
    assert.equal(0, run:wait(60), run:stderr())
    local evicted = run:evicted()
    assert.is_true(#evicted >= 1, run:stderr())
    local mem, text = memory(home)
    assert.is_true(#text <= 900 * 1024, "the encoding is " .. #text .. " bytes")
    -- the evictions just made are all there, and the newest of the seed
    local kept = {}
    for _, e in ipairs(mem.entries) do kept[e.ns .. "/" .. e.pod] = true end
    for _, p in ipairs(evicted) do assert.is_true(kept[p], p .. " was dropped") end
    assert.is_true(kept[("seed/web-7c9f8d6b5-%05d"):format(n)])
    assert.is_nil(kept["seed/web-7c9f8d6b5-00001"])   -- the oldest went first
    -- oldest first, none out of order
    for i = 2, #mem.entries do assert.is_true(mem.entries[i - 1].t <= mem.entries[i].t) end
  end)
end)
