-- `ebb serve`: the snapshot as a Kubernetes API, checked over HTTP the way
-- client-go and ebb's live mode use it. Every test starts its own server on
-- a free port (spec/fixtures/kubectl-list.json) and stops it with SIGTERM.
local S = require("spec.integration.serve_harness")
local shell = require("spec.shell")

local function eviction(ns, name, extra)
  local e = { apiVersion = "policy/v1", kind = "Eviction",
              metadata = { name = name, namespace = ns } }
  for k, v in pairs(extra or {}) do e[k] = v end
  return e
end

local function evict(srv, ns, name, extra)
  return srv:request("POST", "/api/v1/namespaces/" .. ns .. "/pods/" .. name .. "/eviction",
                     eviction(ns, name, extra))
end

local LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"

local function lease(name, holder, rv)
  return string.format(
    '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"%s"%s},' ..
    '"spec":{"holderIdentity":"%s","leaseDurationSeconds":15}}',
    name, rv and (',"resourceVersion":"' .. rv .. '"') or "", holder)
end

describe("ebb serve", function()
  local srv

  after_each(function()
    if srv then
      local st = srv:stop()
      srv = nil
      assert.equal(0, st)
    end
  end)

  it("prints its address first and answers discovery", function()
    srv = S.start()
    assert.is_true(srv.port > 0)
    local v = srv:get("/version")
    assert.equal("1", v.major)
    assert.matches("^v1%.", v.gitVersion)

    local api = srv:get("/api")
    assert.equal("APIVersions", api.kind)
    assert.same({ "v1" }, api.versions)

    local core = srv:get("/api/v1")
    assert.equal("APIResourceList", core.kind)
    assert.equal("v1", core.groupVersion)
    local by = {}
    for _, r in ipairs(core.resources) do by[r.name] = r end
    for _, name in ipairs{ "nodes", "pods", "namespaces", "persistentvolumeclaims", "events" } do
      assert.is_table(by[name], name)
    end
    assert.equal("Pod", by.pods.kind)
    assert.is_true(by.pods.namespaced)
    assert.is_false(by.nodes.namespaced)
    assert.same({ "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch" },
                by.pods.verbs)
    assert.same({ "get", "patch", "update" }, by["pods/status"].verbs)
    assert.same({ "po" }, by.pods.shortNames)
    local ev = by["pods/eviction"]
    assert.is_table(ev)
    assert.equal("policy", ev.group)
    assert.equal("v1", ev.version)
    assert.equal("Eviction", ev.kind)
    assert.same({ "create" }, ev.verbs)

    local groups = srv:get("/apis")
    assert.equal("APIGroupList", groups.kind)
    local names = {}
    for _, g in ipairs(groups.groups) do
      names[#names + 1] = g.name
      assert.equal(g.versions[1].groupVersion, g.preferredVersion.groupVersion)
    end
    assert.same({ "policy", "scheduling.k8s.io", "coordination.k8s.io", "events.k8s.io",
                  "metrics.k8s.io" }, names)

    local pol = srv:get("/apis/policy/v1")
    assert.equal("policy/v1", pol.groupVersion)
    assert.equal("poddisruptionbudgets", pol.resources[1].name)
    assert.same({ "pdb" }, pol.resources[1].shortNames)
    local lease_res = srv:get("/apis/coordination.k8s.io/v1").resources[1]
    assert.equal("Lease", lease_res.kind)
    assert.same({ "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch" },
                lease_res.verbs)
    assert.equal("PriorityClass", srv:get("/apis/scheduling.k8s.io/v1").resources[1].kind)
    assert.equal("Event", srv:get("/apis/events.k8s.io/v1").resources[1].kind)
    local m = srv:get("/apis/metrics.k8s.io/v1beta1")
    assert.equal("NodeMetrics", m.resources[1].kind)
    assert.equal("PodMetrics", m.resources[2].kind)
    assert.same({ "get", "list" }, m.resources[1].verbs)
    assert.equal("APIGroup", srv:get("/apis/policy").kind)

    local code, st = srv:request("GET", "/apis/apps/v1")
    assert.equal(404, code)
    assert.equal("Status", st.kind)
    assert.equal("NotFound", st.reason)
  end)

  it("lists with label and field selectors, cluster-wide and per namespace", function()
    srv = S.start()
    local all = srv:get("/api/v1/pods")
    assert.equal("PodList", all.kind)
    assert.equal("v1", all.apiVersion)
    assert.is_string(all.metadata.resourceVersion)
    assert.matches("^%d+$", all.metadata.resourceVersion)
    assert.equal(10, #all.items)
    for _, p in ipairs(all.items) do assert.is_string(p.metadata.resourceVersion) end

    assert.same({ "web-7d4b9c-pend1", "web-7d4b9c-q8w4z", "web-7d4b9c-x2k9p" },
      S.names(srv:get("/api/v1/pods?labelSelector=" .. S.escape("app=web"))))
    assert.same({ "db-0", "mesh-app-66b7-tt5vb", "report-28841-7kq2d", "web-7d4b9c-q8w4z" },
      S.names(srv:get("/api/v1/pods?fieldSelector=" .. S.escape("spec.nodeName=node-b"))))
    assert.same({ "db-0", "mesh-app-66b7-tt5vb", "web-7d4b9c-q8w4z" },
      S.names(srv:get("/api/v1/namespaces/prod/pods?fieldSelector=" ..
                      S.escape("spec.nodeName=node-b"))))
    assert.same({ "web-7d4b9c-pend1" },
      S.names(srv:get("/api/v1/namespaces/prod/pods?fieldSelector=" ..
                      S.escape("spec.nodeName="))))
    assert.same({ "db-0" },
      S.names(srv:get("/api/v1/pods?labelSelector=" .. S.escape("app in (web,db),!tier"))))
    assert.same({ "db-0" },
      S.names(srv:get("/api/v1/pods?fieldSelector=" ..
                      S.escape("metadata.name=db-0,metadata.namespace=prod"))))
    assert.same({ "report-28841-7kq2d" },
      S.names(srv:get("/api/v1/pods?fieldSelector=" .. S.escape("status.phase=Failed"))))
    assert.equal(9, #srv:get("/api/v1/pods?fieldSelector=" ..
                             S.escape("status.phase!=Failed")).items)
    assert.same({ "node-a", "node-c" },
      S.names(srv:get("/api/v1/nodes?labelSelector=" .. S.escape("topology.kubernetes.io/zone=zone-a"))))
    assert.same({ "db-pdb", "web-pdb" },
      S.names(srv:get("/apis/policy/v1/namespaces/prod/poddisruptionbudgets")))
    assert.same({ "data-db-0" }, S.names(srv:get("/api/v1/persistentvolumeclaims")))
    assert.same({ "high-priority", "system-node-critical" },
      S.names(srv:get("/apis/scheduling.k8s.io/v1/priorityclasses")))
    assert.same({ "node-a", "node-b" }, S.names(srv:get("/apis/metrics.k8s.io/v1beta1/nodes")))
    assert.equal("PodMetricsList",
      srv:get("/apis/metrics.k8s.io/v1beta1/namespaces/prod/pods").kind)

    local code, st = srv:request("GET", "/api/v1/pods?fieldSelector=" .. S.escape("spec.color=red"))
    assert.equal(400, code)
    assert.equal("BadRequest", st.reason)
    assert.matches("field label not supported: spec.color", st.message, 1, true)
    code, st = srv:request("GET", "/api/v1/pods?labelSelector=" .. S.escape("app in (web"))
    assert.equal(400, code)
    assert.equal("BadRequest", st.reason)
  end)

  it("pages with limit and an opaque continue token", function()
    srv = S.start()
    local seen, pages, rv = {}, {}, nil
    local path = "/api/v1/pods?limit=4"
    repeat
      local page = srv:get(path)
      pages[#pages + 1] = #page.items
      rv = rv or page.metadata.resourceVersion
      assert.equal(rv, page.metadata.resourceVersion)
      for _, p in ipairs(page.items) do seen[#seen + 1] = p.metadata.name end
      local tok = page.metadata.continue
      if tok then
        assert.matches("^[%w_%-]+$", tok)
        assert.is_number(page.metadata.remainingItemCount)
      else
        assert.is_nil(page.metadata.remainingItemCount)
      end
      path = "/api/v1/pods?limit=4&continue=" .. (tok or "")
    until not tok
    assert.same({ 4, 4, 2 }, pages)
    table.sort(seen)
    assert.same(S.names(srv:get("/api/v1/pods")), seen)

    -- selectors and paging together
    local p1 = srv:get("/api/v1/pods?limit=2&labelSelector=" .. S.escape("app=web"))
    assert.equal(2, #p1.items)
    local p2 = srv:get("/api/v1/pods?limit=2&labelSelector=" .. S.escape("app=web") ..
                       "&continue=" .. p1.metadata.continue)
    assert.equal(1, #p2.items)
    assert.is_nil(p2.metadata.continue)

    local code, st = srv:request("GET", "/api/v1/pods?limit=4&continue=bm90LWEtdG9rZW4")
    assert.equal(400, code)
    assert.equal("BadRequest", st.reason)
  end)

  it("continues a paged list at the resourceVersion it started from", function()
    srv = S.start()
    local p1 = srv:get("/api/v1/pods?limit=5")
    assert.equal("db-0", p1.items[5].metadata.name)
    -- a pod of the second page goes away between the pages
    assert.equal(200, (srv:request("DELETE",
                                   "/api/v1/namespaces/prod/pods/web-7d4b9c-q8w4z?gracePeriodSeconds=0")))
    local p2 = srv:get("/api/v1/pods?limit=5&continue=" .. p1.metadata.continue)
    assert.equal(p1.metadata.resourceVersion, p2.metadata.resourceVersion)
    assert.same({ "mesh-app-66b7-tt5vb", "web-7d4b9c-pend1", "web-7d4b9c-q8w4z",
                  "web-7d4b9c-x2k9p", "worker-5f6d8-hh7rt" }, S.names(p2))
    -- a fresh list is the present
    local now = srv:get("/api/v1/pods")
    assert.equal(9, #now.items)
    assert.is_true(tonumber(now.metadata.resourceVersion) > tonumber(p1.metadata.resourceVersion))
    -- resourceVersionMatch=Exact lists the past too
    local past = srv:get("/api/v1/pods?resourceVersionMatch=Exact&resourceVersion=" ..
                         p1.metadata.resourceVersion)
    assert.equal(10, #past.items)
    local code, st = srv:request("GET", "/api/v1/pods?resourceVersion=999999")
    assert.equal(504, code)
    assert.equal("Timeout", st.reason)
  end)

  it("gets one object and answers 404 with a Status", function()
    srv = S.start()
    local p = srv:get("/api/v1/namespaces/prod/pods/db-0")
    assert.equal("Pod", p.kind)
    assert.equal("db-0", p.metadata.name)
    assert.matches("^%d+$", p.metadata.resourceVersion)
    assert.equal("node-a", srv:get("/api/v1/nodes/node-a").metadata.name)
    assert.equal("prod", srv:get("/api/v1/namespaces/prod").metadata.name)
    assert.equal("web-pdb",
      srv:get("/apis/policy/v1/namespaces/prod/poddisruptionbudgets/web-pdb").metadata.name)

    local code, st = srv:request("GET", "/api/v1/namespaces/prod/pods/nope")
    assert.equal(404, code)
    assert.same({ kind = "Status", apiVersion = "v1", metadata = {}, status = "Failure",
                  message = 'pods "nope" not found', reason = "NotFound",
                  details = { name = "nope", kind = "pods" }, code = 404 }, st)
    code, st = srv:request("GET", LEASES .. "/nope")
    assert.equal(404, code)
    assert.equal('leases.coordination.k8s.io "nope" not found', st.message)
    assert.equal("coordination.k8s.io", st.details.group)
  end)

  it("watches from a list's resourceVersion: the eviction is DELETED, the PDB MODIFIED", function()
    srv = S.start{ "--termination-seconds", "0.3" }
    local list = srv:get("/api/v1/namespaces/prod/pods")
    local rv = list.metadata.resourceVersion
    local pods = srv:watch("/api/v1/namespaces/prod/pods?watch=1&resourceVersion=" .. rv)
    local pdbs = srv:watch("/apis/policy/v1/watch/namespaces/prod/poddisruptionbudgets?resourceVersion=" .. rv)
    local other = srv:watch("/api/v1/pods?watch=true&resourceVersion=" .. rv ..
                            "&fieldSelector=" .. S.escape("spec.nodeName=node-b"))

    local code, st = evict(srv, "prod", "web-7d4b9c-x2k9p")
    assert.equal(201, code)
    assert.same({ kind = "Status", apiVersion = "v1", metadata = {}, status = "Success",
                  code = 201 }, st)

    -- terminating first, gone once its kubelet would have stopped it
    local term = pods:wait_for(function(e) return e.type == "MODIFIED" end)
    assert.is_table(term)
    assert.is_string(term.object.metadata.deletionTimestamp)
    assert.equal(30, term.object.metadata.deletionGracePeriodSeconds)
    local del = pods:wait_for(function(e) return e.type == "DELETED" end)
    assert.is_table(del)
    assert.equal("web-7d4b9c-x2k9p", del.object.metadata.name)
    assert.is_true(tonumber(del.object.metadata.resourceVersion) > tonumber(rv))

    local mod = pdbs:wait_for(function(e) return e.type == "MODIFIED" end)
    assert.is_table(mod)
    assert.equal("web-pdb", mod.object.metadata.name)
    assert.equal(0, mod.object.status.disruptionsAllowed)
    assert.equal(1, mod.object.status.currentHealthy)
    assert.is_string(mod.object.status.disruptedPods["web-7d4b9c-x2k9p"])
    -- the PDB changed before the pod went
    assert.is_true(tonumber(mod.object.metadata.resourceVersion) <
                   tonumber(del.object.metadata.resourceVersion))

    code = srv:request("GET", "/api/v1/namespaces/prod/pods/web-7d4b9c-x2k9p")
    assert.equal(404, code)
    local pdb = srv:get("/apis/policy/v1/namespaces/prod/poddisruptionbudgets/web-pdb")
    assert.equal(0, pdb.status.disruptionsAllowed)
    assert.equal("InsufficientPods", pdb.status.conditions[1].reason)

    -- a pod on node-a: not in the node-b watch
    assert.equal(200, (srv:request("DELETE", "/api/v1/namespaces/prod/pods/db-0")))
    local db = other:wait_for(function(e) return e.type == "DELETED" end)
    assert.equal("db-0", db.object.metadata.name)
    for _, e in ipairs(other:events()) do
      assert.are_not.equal("web-7d4b9c-x2k9p", e.object.metadata.name)
    end

    -- one object, by name: ?watch=1 on its path
    local one = srv:watch("/api/v1/namespaces/prod/pods/mesh-app-66b7-tt5vb?watch=1&resourceVersion=" .. rv)
    assert.equal(200, (srv:request("DELETE",
                                   "/api/v1/namespaces/prod/pods/web-7d4b9c-q8w4z?gracePeriodSeconds=0")))
    assert.equal(200, (srv:request("DELETE",
                                   "/api/v1/namespaces/prod/pods/mesh-app-66b7-tt5vb?gracePeriodSeconds=0")))
    local gone = one:wait_for(function(e) return e.type == "DELETED" end)
    assert.equal("mesh-app-66b7-tt5vb", gone.object.metadata.name)
    for _, e in ipairs(one:events()) do
      assert.equal("mesh-app-66b7-tt5vb", e.object.metadata.name)
    end

    -- no resourceVersion: the current objects as ADDED first
    local fresh = srv:watch("/api/v1/namespaces/prod/pods?watch=1&timeoutSeconds=1")
    assert.is_not_nil(S.eventually(function() return fresh:exit_code() end, 10))
    local added = {}
    for _, e in ipairs(fresh:events()) do
      assert.equal("ADDED", e.type)
      added[#added + 1] = e.object.metadata.name
    end
    table.sort(added)
    assert.same(S.names(srv:get("/api/v1/namespaces/prod/pods")), added)
  end)

  it("evicts as the API server does: 429 with the budget's message when a PDB forbids it", function()
    srv = S.start()
    local code, st = evict(srv, "prod", "web-7d4b9c-x2k9p")
    assert.equal(201, code)
    assert.equal("Success", st.status)

    code, st = evict(srv, "prod", "web-7d4b9c-q8w4z")
    assert.equal(429, code)
    assert.equal("Failure", st.status)
    assert.equal("TooManyRequests", st.reason)
    assert.equal("Cannot evict pod as it would violate the pod's disruption budget.", st.message)
    assert.same({ { reason = "DisruptionBudget",
                    message = "The disruption budget web-pdb needs 1 healthy pods and has 1 currently" } },
                st.details.causes)
    assert.equal(429, st.code)
    assert.equal(200, (srv:request("GET", "/api/v1/namespaces/prod/pods/web-7d4b9c-q8w4z")))

    code, st = evict(srv, "prod", "db-0")
    assert.equal(429, code)
    assert.equal("The disruption budget db-pdb needs 1 healthy pods and has 1 currently",
                 st.details.causes[1].message)

    -- pending and failed pods go without a PDB check; a pod without a PDB goes
    assert.equal(201, (evict(srv, "prod", "web-7d4b9c-pend1")))
    assert.equal(201, (evict(srv, "default", "report-28841-7kq2d")))
    assert.equal(201, (evict(srv, "prod", "worker-5f6d8-hh7rt")))

    -- dry run: the answer, no change
    assert.equal(201, (srv:request("POST",
      "/api/v1/namespaces/default/pods/debug-shell/eviction?dryRun=All",
      eviction("default", "debug-shell"))))
    assert.equal(200, (srv:request("GET", "/api/v1/namespaces/default/pods/debug-shell")))

    code, st = evict(srv, "prod", "nope")
    assert.equal(404, code)
    assert.equal('pods "nope" not found', st.message)

    code, st = srv:request("POST", "/api/v1/namespaces/prod/pods/db-0/eviction",
                           eviction("prod", "other"))
    assert.equal(400, code)
    assert.equal("name in URL does not match name in Eviction object", st.message)

    local pod = srv:get("/api/v1/namespaces/default/pods/debug-shell")
    code, st = evict(srv, "default", "debug-shell",
                     { deleteOptions = { preconditions = { uid = "not-the-uid" } } })
    assert.equal(409, code)
    assert.equal("Conflict", st.reason)
    code = evict(srv, "default", "debug-shell",
                 { deleteOptions = { preconditions = { uid = pod.metadata.uid } } })
    assert.equal(201, code)
  end)

  it("answers the other eviction cases as the API server does", function()
    local function pod(name, labels, ready)
      return { apiVersion = "v1", kind = "Pod",
               metadata = { name = name, namespace = "ns", uid = "uid-" .. name, labels = labels },
               spec = { nodeName = "n1", containers = { { name = "c", image = "i" } } },
               status = { phase = "Running",
                          conditions = { { type = "Ready", status = ready and "True" or "False" } } } }
    end
    local function pdb(name, labels, st, gen)
      return { apiVersion = "policy/v1", kind = "PodDisruptionBudget",
               metadata = { name = name, namespace = "ns", generation = gen or 1 },
               spec = { minAvailable = 1, selector = { matchLabels = labels } },
               status = { observedGeneration = 1, disruptionsAllowed = st[1],
                          currentHealthy = st[2], desiredHealthy = st[3], expectedPods = 2 } }
    end
    local dir = S.tmpdir()
    local snap = dir .. "/cluster.json"
    S.write(snap, S.json.encode({ apiVersion = "v1", kind = "List", items = {
      pod("two", { app = "x", tier = "y" }, true),
      pod("young", { app = "z" }, true),
      pod("sick", { app = "u" }, false),
      pod("neg", { app = "n" }, true),
      pdb("pdb-x", { app = "x" }, { 1, 2, 1 }),
      pdb("pdb-y", { tier = "y" }, { 1, 2, 1 }),
      pdb("pdb-z", { app = "z" }, { 1, 2, 1 }, 2),
      pdb("pdb-u", { app = "u" }, { 0, 1, 1 }),
      pdb("pdb-n", { app = "n" }, { -1, 1, 1 }),
    } }))
    srv = S.start{ snapshot = snap }
    S.rmdir(dir)

    -- two budgets: the eviction handler returns a Failure Status with code
    -- 500 as its result, which the API server writes with HTTP 201
    local code, st = evict(srv, "ns", "two")
    assert.equal(201, code)
    assert.same({ kind = "Status", apiVersion = "v1", metadata = {}, status = "Failure",
                  message = "This pod has more than one PodDisruptionBudget, which the " ..
                            "eviction subresource does not support.", code = 500 }, st)
    assert.equal(200, (srv:request("GET", "/api/v1/namespaces/ns/pods/two")))

    -- a budget whose spec the controller has not observed yet: retry in 10 s
    local raw, headers
    code, st, raw, headers = evict(srv, "ns", "young")
    assert.equal(429, code, raw)
    assert.equal("The disruption budget pdb-z is still being processed by the server.",
                 st.details.causes[1].message)
    assert.equal(10, st.details.retryAfterSeconds)
    assert.matches("\nRetry%-After: 10\r\n", headers)

    -- an unready pod while the budget is met goes without spending a disruption
    assert.equal(201, (evict(srv, "ns", "sick")))
    assert.equal(0, srv:get("/apis/policy/v1/namespaces/ns/poddisruptionbudgets/pdb-u")
                        .status.disruptionsAllowed)

    code, st = evict(srv, "ns", "neg")
    assert.equal(403, code)
    assert.equal("Forbidden", st.reason)
    assert.equal('poddisruptionbudget.policy "pdb-n" is forbidden: pdb disruptions allowed is negative',
                 st.message)
  end)

  it("sends BOOKMARK events to watches that allow them", function()
    srv = S.start{ "--bookmark-every", "0.1" }
    local list = srv:get("/api/v1/pods")
    local rv = list.metadata.resourceVersion
    local with = srv:watch("/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=" .. rv)
    local without = srv:watch("/api/v1/pods?watch=1&resourceVersion=" .. rv)
    local bm = with:wait_for(function(e) return e.type == "BOOKMARK" end)
    assert.is_table(bm)
    assert.equal("Pod", bm.object.kind)
    assert.equal("v1", bm.object.apiVersion)
    assert.equal(rv, bm.object.metadata.resourceVersion)
    -- after a change, bookmarks carry the new resourceVersion
    assert.equal(200, (srv:request("DELETE", "/api/v1/namespaces/default/pods/debug-shell")))
    local later = with:wait_for(function(e)
      return e.type == "BOOKMARK" and tonumber(e.object.metadata.resourceVersion) > tonumber(rv)
    end)
    assert.is_table(later)
    assert.is_table(without:wait_for(function(e) return e.type == "DELETED" end))
    for _, e in ipairs(without:events()) do assert.are_not.equal("BOOKMARK", e.type) end

    -- sendInitialEvents: ADDED for every object, then the initial-events-end bookmark
    local wl = srv:watch("/api/v1/namespaces/prod/pods?watch=1&sendInitialEvents=true" ..
                         "&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan")
    local endmark = wl:wait_for(function(e)
      return e.type == "BOOKMARK" and e.object.metadata.annotations ~= nil
    end)
    assert.is_table(endmark)
    assert.equal("true", endmark.object.metadata.annotations["k8s.io/initial-events-end"])
    local evs = wl:events()
    for i = 1, 6 do assert.equal("ADDED", evs[i].type) end
  end)

  it("answers 410 Gone to resourceVersions older than the last --expire-after changes", function()
    srv = S.start{ "--expire-after", "4" }
    local page = srv:get("/api/v1/pods?limit=3")
    local rv = page.metadata.resourceVersion
    -- a delete without a grace period is two changes: marked deleted, gone
    for _, name in ipairs{ "debug-shell", "report-28841-7kq2d" } do
      assert.equal(200, (srv:request("DELETE", "/api/v1/namespaces/default/pods/" .. name ..
                                               "?gracePeriodSeconds=0")))
    end
    -- four changes: rv is still in the window
    local w = srv:watch("/api/v1/pods?watch=1&timeoutSeconds=1&resourceVersion=" .. rv)
    assert.is_not_nil(S.eventually(function() return w:exit_code() end, 10))
    assert.equal(4, #w:events())
    assert.equal(200, (srv:request("DELETE", "/api/v1/namespaces/prod/pods/db-0?gracePeriodSeconds=0")))

    -- more: the watch from rv gets one ERROR event with a 410 Status
    local old = srv:watch("/api/v1/pods?watch=1&resourceVersion=" .. rv)
    assert.is_not_nil(S.eventually(function() return old:exit_code() end, 10))
    local evs = old:events()
    assert.equal(1, #evs)
    assert.equal("ERROR", evs[1].type)
    assert.equal("Status", evs[1].object.kind)
    assert.equal(410, evs[1].object.code)
    assert.equal("Expired", evs[1].object.reason)
    assert.matches("^too old resource version: " .. rv .. " %(%d+%)$", evs[1].object.message)

    -- the continue token of that time is too old as well
    local code, st = srv:request("GET", "/api/v1/pods?limit=3&continue=" .. page.metadata.continue)
    assert.equal(410, code)
    assert.equal("Expired", st.reason)
    assert.matches("continue parameter is too old", st.message, 1, true)

    -- a resourceVersion the server has not reached: the API server's 504 as an ERROR event
    local ahead = srv:watch("/api/v1/pods?watch=1&resourceVersion=99999999")
    assert.is_not_nil(S.eventually(function() return ahead:exit_code() end, 10))
    evs = ahead:events()
    assert.equal(1, #evs)
    assert.equal("ERROR", evs[1].type)
    assert.equal(504, evs[1].object.code)
    assert.equal("ResourceVersionTooLarge", evs[1].object.details.causes[1].reason)

    -- a fresh list's resourceVersion watches fine
    local now = srv:get("/api/v1/pods").metadata.resourceVersion
    local ok = srv:watch("/api/v1/pods?watch=1&resourceVersion=" .. now)
    -- a pod already terminating: a grace period of 0 ends it at once
    assert.equal(200, (srv:request("DELETE",
                                   "/api/v1/namespaces/prod/pods/mesh-app-66b7-tt5vb?gracePeriodSeconds=0")))
    assert.is_table(ok:wait_for(function(e) return e.type == "DELETED" end))
  end)

  it("deletes pods gracefully, with preconditions", function()
    srv = S.start{ graceful = true }
    local pod = srv:get("/api/v1/namespaces/default/pods/debug-shell")
    local code, st = srv:request("DELETE", "/api/v1/namespaces/default/pods/debug-shell",
      { kind = "DeleteOptions", apiVersion = "v1", preconditions = { resourceVersion = "1" } })
    assert.equal(409, code)
    assert.equal("Conflict", st.reason)
    assert.equal('Operation cannot be fulfilled on Pod "debug-shell": the ResourceVersion in ' ..
                 "the precondition (1) does not match the ResourceVersion in record (" ..
                 pod.metadata.resourceVersion .. "). The object might have been modified",
                 st.message)
    assert.same({ name = "debug-shell", kind = "Pod" }, st.details)

    -- bound and running: terminating for its grace period
    local obj
    code, obj = srv:request("DELETE", "/api/v1/namespaces/default/pods/debug-shell",
      { preconditions = { uid = pod.metadata.uid } })
    assert.equal(200, code)
    assert.equal("debug-shell", obj.metadata.name)
    assert.equal(30, obj.metadata.deletionGracePeriodSeconds)
    assert.is_string(obj.metadata.deletionTimestamp)
    local again = srv:get("/api/v1/namespaces/default/pods/debug-shell")
    assert.equal(obj.metadata.deletionTimestamp, again.metadata.deletionTimestamp)
    -- the same delete again changes nothing; a shorter grace period does
    code, again = srv:request("DELETE", "/api/v1/namespaces/default/pods/debug-shell")
    assert.equal(obj.metadata.resourceVersion, again.metadata.resourceVersion)
    code = srv:request("DELETE", "/api/v1/namespaces/default/pods/debug-shell?gracePeriodSeconds=0")
    assert.equal(200, code)
    assert.equal(404, (srv:request("GET", "/api/v1/namespaces/default/pods/debug-shell")))
    assert.equal(404, (srv:request("DELETE", "/api/v1/namespaces/default/pods/debug-shell")))
    -- a node goes at once, answered with a Status
    code, st = srv:request("DELETE", "/api/v1/nodes/node-c")
    assert.equal(200, code)
    assert.equal("Success", st.status)
    assert.equal("node-c", st.details.name)
    assert.equal(404, (srv:request("GET", "/api/v1/nodes/node-c")))
  end)

  it("keeps leases for leader election: create, update, a stale update is 409", function()
    srv = S.start()
    local code, obj = srv:request("POST", LEASES, lease("ebb", "a"))
    assert.equal(201, code)
    assert.equal("Lease", obj.kind)
    assert.equal("kube-system", obj.metadata.namespace)
    assert.is_string(obj.metadata.uid)
    assert.is_string(obj.metadata.creationTimestamp)
    local rv1 = obj.metadata.resourceVersion
    assert.matches("^%d+$", rv1)

    local st
    code, st = srv:request("POST", LEASES, lease("ebb", "b"))
    assert.equal(409, code)
    assert.equal("AlreadyExists", st.reason)
    assert.equal('leases.coordination.k8s.io "ebb" already exists', st.message)

    code, obj = srv:request("PUT", LEASES .. "/ebb", lease("ebb", "b", rv1))
    assert.equal(200, code)
    assert.equal("b", obj.spec.holderIdentity)
    local rv2 = obj.metadata.resourceVersion
    assert.is_true(tonumber(rv2) > tonumber(rv1))

    code, st = srv:request("PUT", LEASES .. "/ebb", lease("ebb", "c", rv1))
    assert.equal(409, code)
    assert.equal("Conflict", st.reason)
    assert.equal('Operation cannot be fulfilled on leases.coordination.k8s.io "ebb": the object ' ..
                 'has been modified; please apply your changes to the latest version and try again',
                 st.message)
    assert.equal("b", srv:get(LEASES .. "/ebb").spec.holderIdentity)

    -- the same content again writes nothing
    code, obj = srv:request("PUT", LEASES .. "/ebb", lease("ebb", "b", rv2))
    assert.equal(200, code)
    assert.equal(rv2, obj.metadata.resourceVersion)
    -- no resourceVersion: unconditional
    code, obj = srv:request("PUT", LEASES .. "/ebb", lease("ebb", "d"))
    assert.equal(200, code)
    assert.equal("d", obj.spec.holderIdentity)
    -- merge patch
    code, obj = srv:request("PATCH", LEASES .. "/ebb", '{"spec":{"holderIdentity":"e"}}',
                            { ["Content-Type"] = "application/merge-patch+json" })
    assert.equal(200, code)
    assert.equal("e", obj.spec.holderIdentity)
    assert.equal(15, obj.spec.leaseDurationSeconds)

    assert.equal(1, #srv:get(LEASES).items)
    code = srv:request("PUT", LEASES .. "/other", lease("other", "x"))
    assert.equal(404, code)
    code, st = srv:request("POST", "/apis/coordination.k8s.io/v1/namespaces/nowhere/leases",
                           lease("x", "a"))
    assert.equal(404, code)
    assert.equal('namespaces "nowhere" not found', st.message)
    code, st = srv:request("POST", LEASES, '{"kind":"Lease","metadata":{}}')
    assert.equal(422, code)
    assert.equal("Invalid", st.reason)

    code, st = srv:request("DELETE", LEASES .. "/ebb")
    assert.equal(200, code)
    assert.equal("Success", st.status)
    assert.equal(404, (srv:request("GET", LEASES .. "/ebb")))
  end)

  it("creates events in both event APIs", function()
    srv = S.start()
    local function event(gen)
      return { metadata = { generateName = gen }, reason = "Descheduled", note = "evicted by ebb",
        type = "Normal", action = "Evict", reportingController = "ebb", reportingInstance = "ebb-0",
        eventTime = "2026-11-22T12:00:00.000000Z",
        regarding = { kind = "Pod", namespace = "prod", name = "db-0" } }
    end
    -- events.k8s.io checks names as other kinds do: a generateName ending
    -- in '.' is refused there (kube-apiserver 1.35 answers the same)
    local code, obj = srv:request("POST", "/apis/events.k8s.io/v1/namespaces/prod/events",
                                  event("db-0."))
    assert.equal(422, code)
    assert.matches('metadata.generateName: Invalid value: "db-0."', obj.message, 1, true)
    code, obj = srv:request("POST", "/apis/events.k8s.io/v1/namespaces/prod/events", event("db-0-"))
    assert.equal(201, code)
    assert.equal("Event", obj.kind)
    assert.equal("events.k8s.io/v1", obj.apiVersion)
    assert.matches("^db%-0%-%w%w%w%w%w$", obj.metadata.name)
    local list = srv:get("/apis/events.k8s.io/v1/namespaces/prod/events?fieldSelector=" ..
                         S.escape("regarding.name=db-0"))
    assert.equal(1, #list.items)
    assert.equal("evicted by ebb", list.items[1].note)

    -- core/v1 Events: no name is checked (kube-apiserver takes "Db_0.x")
    code = srv:request("POST", "/api/v1/namespaces/prod/events",
      { apiVersion = "v1", kind = "Event", metadata = { name = "Db_0.x" }, reason = "Evicted",
        message = "m", type = "Normal", involvedObject = { kind = "Pod", namespace = "prod", name = "web-1" } })
    assert.equal(201, code)
    code, obj = srv:request("POST", "/api/v1/namespaces/prod/events",
      { apiVersion = "v1", kind = "Event", metadata = { name = "db-0.1" }, reason = "Evicted",
        message = "m", type = "Normal", count = 1,
        involvedObject = { kind = "Pod", namespace = "prod", name = "db-0" } })
    assert.equal(201, code)
    code, obj = srv:request("PATCH", "/api/v1/namespaces/prod/events/db-0.1", '{"count":2}',
                            { ["Content-Type"] = "application/strategic-merge-patch+json" })
    assert.equal(200, code)
    assert.equal(2, obj.count)
    assert.equal(1, #srv:get("/api/v1/events?fieldSelector=" ..
                             S.escape("involvedObject.name=db-0")).items)
  end)

  it("fails the share of requests --fail-fraction asks for, reproducibly by --seed", function()
    srv = S.start{ "--fail-fraction", "1" }
    local code, st = srv:request("GET", "/api/v1/pods")
    assert.equal(500, code)
    assert.equal("InternalError", st.reason)
    assert.equal(500, st.code)
    assert.equal(200, (srv:request("GET", "/healthz")))
    srv:stop()

    local function codes(seed)
      local s = S.start{ "--fail-fraction", "0.5", "--seed", seed }
      local out = {}
      for i = 1, 30 do out[i] = (s:request("GET", "/api/v1/namespaces/prod/pods/db-0")) end
      assert.equal(0, s:stop())
      return out
    end
    local a, b = codes("7"), codes("7")
    assert.same(a, b)
    local n500, n200 = 0, 0
    for _, c in ipairs(a) do
      if c == 500 then n500 = n500 + 1 elseif c == 200 then n200 = n200 + 1 end
    end
    assert.equal(30, n500 + n200)
    assert.is_true(n500 > 0 and n200 > 0)
    srv = nil
  end)

  it("answers late with --latency-ms", function()
    srv = S.start{ "--latency-ms", "300" }
    local p = assert(io.popen("curl -s -o /dev/null -w '%{http_code} %{time_total}' " ..
                              S.shq(srv.url .. "/api/v1/namespaces/prod/pods/db-0")))
    local code, secs = p:read("a"):match("(%d+) ([%d%.]+)")
    p:close()
    assert.equal("200", code)
    assert.is_true(tonumber(secs) >= 0.3)
  end)

  it("ends every watch on --close-watches-every, cleanly", function()
    srv = S.start{ "--close-watches-every", "0.3" }
    local rv = srv:get("/api/v1/pods").metadata.resourceVersion
    local w = srv:watch("/api/v1/pods?watch=1&resourceVersion=" .. rv, 20)
    -- curl sees the last chunk and exits 0 long before its own limit
    assert.equal(0, S.eventually(function() return w:exit_code() end, 15))
    assert.matches("closed %d+ watches", srv:stderr())
  end)

  it("stops cleanly on SIGINT with a watch open (exit 0)", function()
    srv = S.start()
    local w = srv:watch("/api/v1/pods?watch=1")
    assert.is_table(w:wait_for(function(e) return e.type == "ADDED" end))
    srv:kill("INT")
    assert.equal(0, srv:wait())
    -- the stream ended with its last chunk: curl exits 0
    assert.equal(0, S.eventually(function() return w:exit_code() end, 10))
  end)

  it("refuses bad flags and snapshots with exit status 2", function()
    local function run(args)
      return shell.sh(S.shq(S.EBB) .. " serve " .. args)
    end
    local code, out = run("--listen 127.0.0.1:0")
    assert.equal(2, code)
    assert.matches("serve needs --snapshot", out, 1, true)
    code, out = run("--snapshot " .. S.SNAPSHOT .. " --fail-fraction 2")
    assert.equal(2, code)
    assert.matches("--fail-fraction", out, 1, true)
    code, out = run("--snapshot " .. S.SNAPSHOT .. " --listen nowhere")
    assert.equal(2, code)
    assert.matches("HOST:PORT", out, 1, true)
    code, out = run("--snapshot spec/fixtures/does-not-exist.json")
    assert.equal(2, code)
    assert.matches("does%-not%-exist%.json", out)
  end)
end)
