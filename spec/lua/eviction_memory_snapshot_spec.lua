-- The memory of evictions in a snapshot: `ebb record` records the ConfigMap
-- `ebb run` keeps it in (ebb-eviction-memory, key evictions.json) as the
-- item it is, and `ebb simulate`, `ebb test` and `ebb explain` start from
-- it (engine/cmd/simulate.c). Its text is read as strictly as the
-- cluster's: a bad one is an error naming the snapshot, the ConfigMap, the
-- entry and the field.
describe("the memory of evictions in a snapshot", function()
  local S = require("spec.shell")
  local json = require("dkjson")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
  local NOW = "2026-11-17T12:30:00Z"
  -- RemoveDuplicates evicts one of web's three pods on dup-1 (loop-dup.json)
  local POLICY = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: RemoveDuplicates
  - name: LoopGuard
  plugins:
    balance: {enabled: [RemoveDuplicates]}
    filter: {enabled: [LoopGuard]}
    preEvictionFilter: {enabled: [LoopGuard]}
]]
  -- 2026-11-17T11:00:00Z: web's pod evicted from dup-1 by RemoveDuplicates,
  -- its replacement (c5e7g, created at 11:59:58) landed back on dup-1
  local T = 1794913200
  local ENTRY = { t = T, ns = "shop", pod = "web-5d9c7b8f4-zz9zz", k = "Deployment", w = "web",
                  n = "dup-1", pl = "RemoveDuplicates", pr = "default", l = "dup-1",
                  r = "web-5d9c7b8f4-c5e7g", f = 3 }

  local function snapshot(data)
    local doc = json.decode(assert(S.read("spec/fixtures/loop-dup.json")))
    if data ~= nil then
      doc.items[#doc.items + 1] = { apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = "ebb-eviction-memory", namespace = "ebb-system" }, data = data }
    end
    return S.tmpfile(json.encode(doc))
  end

  local function simulate(snap, ...)
    local pol = S.tmpfile(POLICY)
    local code, out, err = S.run(S.cmdline(EBB, "simulate", "--snapshot", snap, "--policy", pol,
                                           "--now", NOW, "--output", "json", ...))
    os.remove(pol)
    return code, out, err
  end

  local function memory_text(entries)
    return json.encode({ version = 1, window = 86400, entries = entries })
  end

  it("seeds the run's memory: LoopGuard's cooldown holds a workload a past run saw bounce", function()
    local without = snapshot(nil)
    local code, out, err = simulate(without)
    assert.equal(0, code, err)
    local plan = json.decode(out)
    assert.equal(1, #plan.evictions)   -- without the memory, a duplicate goes
    os.remove(without)

    local with = snapshot({ ["evictions.json"] = memory_text({ ENTRY }) })
    code, out, err = simulate(with)
    assert.equal(0, code, err)
    assert.matches("the memory of evictions: 1 entry", err, 1, true)
    plan = json.decode(out)
    assert.equal(0, #plan.evictions)
    assert.is_true(#plan.refusals >= 1)
    for _, r in ipairs(plan.refusals) do
      assert.equal("cooldown", r.why)
      assert.matches("landed back on the node its predecessor left", r.detail, 1, true)
    end
    -- ebb explain shows the entry under the pod's workload
    local pol = S.tmpfile(POLICY)
    code, out, err = S.run(S.cmdline(EBB, "explain", "shop/web-5d9c7b8f4-c5e7g", "--snapshot", with,
                                     "--policy", pol, "--now", NOW, "--output", "json", "-q"))
    os.remove(pol)
    os.remove(with)
    assert.equal(0, code, err)
    local doc = json.decode(out)
    assert.equal(1, doc.memory.total)
    assert.equal("web-5d9c7b8f4-zz9zz", doc.memory.entries[1].pod)
    assert.is_true(doc.memory.entries[1].bounced)
  end)

  it("a ConfigMap created but never written is an empty memory", function()
    local snap = snapshot(setmetatable({}, { __jsontype = "object" }))
    local code, out, err = simulate(snap)
    os.remove(snap)
    assert.equal(0, code, err)
    assert.equal(1, #json.decode(out).evictions)
  end)

  it("a bad memory is an error naming the snapshot, the ConfigMap, the entry and the field", function()
    local bad = {}
    for k, v in pairs(ENTRY) do bad[k] = v end
    bad.t = "yesterday"
    local cases = {
      { { ["evictions.json"] = memory_text({ ENTRY, bad }) }, "entries%[1%]" },
      { { ["evictions.json"] = "{not json" }, "" },
      { { ["evictions.json"] = 42 }, "not a string" },
    }
    for _, c in ipairs(cases) do
      local snap = snapshot(c[1])
      local code, out, err = simulate(snap)
      os.remove(snap)
      assert.equal(2, code, err)
      assert.equal("", out)
      assert.matches("ConfigMap ebb%-system/ebb%-eviction%-memory data%.evictions%.json", err)
      assert.matches(c[2], err)
    end
  end)
  it("ebb.evictions{...} reads it from a Lua strategy, filtered and newest first", function()
    local dir = S.tmpdir()
    S.write(dir .. "/probe.lua", [=[
local ebb = require("ebb")
local M = { name = "MemoryProbe" }
function M.deschedule(ctx, nodes)
  ebb.note("all " .. #ebb.evictions())
  for _, e in ipairs(ebb.evictions{ namespace = "shop", kind = "Deployment", workload = "web" }) do
    ebb.note(string.format("%s %s %s %s %s %s %s %d", e.pod, e.node, e.plugin, e.profile,
      tostring(e.landed), tostring(e.replacement), tostring(e.bounced), e.time))
  end
  ebb.note("other workload " .. #ebb.evictions{ workload = "no-such-workload-anywhere" })
  ebb.note("later " .. #ebb.evictions{ since = ebb.now() })
  ebb.note("limit " .. #ebb.evictions{ limit = 1 })
  local ok, err = pcall(ebb.evictions, { workloads = "web" })
  ebb.note("typo " .. tostring(ok) .. " " .. tostring(err))
end
return M
]=])
    local older = {}
    for k, v in pairs(ENTRY) do older[k] = v end
    older.t, older.pod, older.f, older.l, older.r = T - 600, "web-5d9c7b8f4-yy8yy", nil, nil, nil
    local snap = snapshot({ ["evictions.json"] = memory_text({ older, ENTRY }) })
    local pol = S.tmpfile([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: MemoryProbe
  plugins:
    deschedule: {enabled: [MemoryProbe]}
]])
    local code, out, err = S.run(S.cmdline(EBB, "simulate", "--snapshot", snap, "--policy", pol,
      "--policy-dir", dir, "--now", NOW, "--output", "json", "-q"))
    os.remove(snap)
    os.remove(pol)
    S.rmdir(dir)
    assert.equal(0, code, err)
    local notes = {}
    for _, n in ipairs(json.decode(out).notes) do notes[#notes + 1] = n.message end
    assert.same({
      "all 2",
      "web-5d9c7b8f4-zz9zz dup-1 RemoveDuplicates default dup-1 web-5d9c7b8f4-c5e7g true " .. T,
      "web-5d9c7b8f4-yy8yy dup-1 RemoveDuplicates default nil nil false " .. (T - 600),
      "other workload 0",
      "later 0",
      "limit 1",
    }, { table.unpack(notes, 1, 6) })
    assert.matches('^typo false .*ebb%.evictions: opts: unknown option', notes[7])
  end)
end)
