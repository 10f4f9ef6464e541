-- ebb.pods(): the native pod query every strategy builds on. Each case runs
-- a plugin that evicts exactly what the query returns, in order, with every
-- DefaultEvictor protection switched off, so the plan shows the query.
describe("ebb.pods", function()
  local h = require("spec.helpers")
  local SNAP = "spec/fixtures/kubectl-list.json"
  local OPEN = { podProtections = { defaultDisabled = h.array{ "PodsWithLocalStorage",
    "SystemCriticalPods", "FailedBarePods", "DaemonSetPods" } } }

  -- The plugin reports the keys the query returned (in order) as its
  -- failure message, so the plan carries the query's result untouched.
  local function query(opts_src, sort, snapshot)
    local dir = h.plugin_dir{ ["q.lua"] = [[
      local ebb = require("ebb")
      return { name = "Query", deschedule = function(ctx, nodes)
        local pods = ebb.pods(nodes, ]] .. opts_src .. [[)
        ]] .. (sort and ("pods:sort(" .. sort .. ")") or "") .. [[
        return false, "pods:" .. table.concat(pods:keys(), ",")
      end }
    ]] }
    local plan = h.simulate{ snapshot = snapshot or SNAP, policy_dirs = { dir }, evictor = OPEN,
      plugins = { { name = "Query" } } }
    h.rmdir(dir)
    assert.equal(1, #plan.errors)
    local list = plan.errors[1].message:match("^pods:(.*)$")
    assert.is_not_nil(list, plan.errors[1].message)
    local out = {}
    for k in list:gmatch("[^,]+") do out[#out + 1] = k end
    return out
  end

  it("lists active pods node by node, namespace/name within a node", function()
    -- node-a, node-b, node-c; the Failed job pod and the unscheduled pod are
    -- not listed; the terminating pod is (it is still active)
    assert.same({ "default/debug-shell", "kube-system/fluentd-7x2lq",
      "kube-system/kube-apiserver-node-a", "prod/web-7d4b9c-x2k9p", "prod/worker-5f6d8-hh7rt",
      "prod/db-0", "prod/mesh-app-66b7-tt5vb", "prod/web-7d4b9c-q8w4z" }, query("{}"))
  end)

  it("takes every phase with phase = 'all' and one phase by name", function()
    local all = query("{ phase = 'all' }")
    assert.equal(9, #all)   -- every bound pod
    assert.same({ "default/report-28841-7kq2d" }, query("{ phase = 'Failed' }"))
  end)

  it("matches phase names given in states", function()
    -- phases are not interned strings: this is matched by name
    assert.equal(8, #query("{ phase = 'all', states = { 'Running' } }"))
    assert.same({ "default/report-28841-7kq2d" }, query("{ phase = 'all', states = { 'Failed' } }"))
  end)

  it("filters namespaces", function()
    assert.same({ "default/debug-shell" }, query("{ namespaces = { include = { 'default' } } }"))
    assert.same({ "default/debug-shell", "default/report-28841-7kq2d" },
      query("{ phase = 'all', namespaces = { include = { 'default' } } }"))
    for _, key in ipairs(query("{ namespaces = { exclude = { 'prod', 'kube-system' } } }")) do
      assert.matches("^default/", key)
    end
    assert.same({}, query("{ namespaces = { include = { 'no-such-namespace' } } }"))
  end)

  it("filters by a label selector in both forms", function()
    assert.same({ "prod/web-7d4b9c-x2k9p", "prod/web-7d4b9c-q8w4z" },
      query("{ selector = ebb.selector('app=web') }"))
    assert.same({ "prod/web-7d4b9c-x2k9p", "prod/web-7d4b9c-q8w4z" },
      query("{ selector = ebb.selector({ matchExpressions = { { key = 'app', operator = 'In', values = { 'web' } } } }) }"))
  end)

  it("filters owner kinds", function()
    assert.same({ "kube-system/fluentd-7x2lq" },
      query("{ owner_kinds = { include = { 'DaemonSet' } } }"))
    assert.same({ "default/debug-shell", "kube-system/fluentd-7x2lq", "kube-system/kube-apiserver-node-a",
      "prod/db-0" }, query("{ owner_kinds = { exclude = { 'ReplicaSet' } } }"))
  end)

  it("sorts oldest first, stably", function()
    -- every pod of the fixture has the same creation time: order unchanged
    assert.same(query("{ phase = 'all' }"), query("{ phase = 'all' }", "'age'"))
  end)

  it("applies the profile's evictor filters on request", function()
    -- with every protection off only the terminating and mirror pods are out
    assert.same({ "default/debug-shell", "kube-system/fluentd-7x2lq", "prod/web-7d4b9c-x2k9p",
      "prod/worker-5f6d8-hh7rt", "prod/db-0", "prod/web-7d4b9c-q8w4z" }, query("{ evictable = true }"))
  end)

  it("selects by the kind of node affinity a pod has, and pods their node no longer matches", function()
    local NA = "spec/fixtures/node_affinity.json"
    assert.same({ "billing/invoice-6c7d8e9f0-f3g4h", "billing/invoice-6c7d8e9f0-a1s2d",
      "billing/invoice-6c7d8e9f0-p0z9x", "render/preview-9a0b1c2d3-w7e8r",
      "search/crawler-1b2c3d4e5-z5x6c", "billing/archiver-3f4a5b6c7-u1i2o",
      "billing/invoice-6c7d8e9f0-j5k6l", "billing/ledger-5b6c7d8e9-q7w8e",
      "render/frames-7e8f9a0b1-c3v4b", "render/frames-gpu-8f9a0b1c2-n5m6q" },
      query("{ node_affinity = 'required' }", nil, NA))
    assert.same({ "search/indexer-5f6a7b8c9-i7o8p", "search/query-4e5f6a7b8-a9s0d",
      "search/suggest-6a7b8c9d0-e2r3t", "search/cache-3d4e5f6a7-f1g2h",
      "search/ranker-2c3d4e5f6-j3k4l", "search/crawler-1b2c3d4e5-z5x6c",
      "search/indexer-5f6a7b8c9-t5y6u" }, query("{ node_affinity = 'preferred' }", nil, NA))
    -- nodeSelector and required affinity against the pod's node
    assert.same({ "billing/invoice-6c7d8e9f0-a1s2d", "billing/invoice-6c7d8e9f0-p0z9x",
      "render/preview-9a0b1c2d3-w7e8r", "search/crawler-1b2c3d4e5-z5x6c",
      "billing/archiver-3f4a5b6c7-u1i2o", "billing/invoice-6c7d8e9f0-j5k6l",
      "billing/ledger-5b6c7d8e9-q7w8e", "billing/reporting-4a5b6c7d8-r9t0y",
      "render/frames-7e8f9a0b1-c3v4b", "render/frames-gpu-8f9a0b1c2-n5m6q" },
      query("{ off_node = true }", nil, NA))
    assert.same({}, query("{ off_node = true }"))
    local ok, err = pcall(query, "{ node_affinity = 'sometimes' }")
    assert.is_false(ok)
    assert.matches("node_affinity", tostring(err))
  end)

  it("applies a Lua predicate last", function()
    assert.same({ "prod/db-0" }, query("{ where = function(p) return p.name == 'db-0' end }"))
  end)
end)
