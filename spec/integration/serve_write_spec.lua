-- `ebb serve` writing as the API server does where clients notice: creates
-- get the server's fields, defaults and admission (priority, default
-- tolerations), names are validated, the status subresource is the only
-- way to change a status, finalizers hold a deleted object, and a pod
-- deleted or evicted stays terminating for its grace period.
local S = require("spec.integration.serve_harness")

local PODS = "/api/v1/namespaces/prod/pods"

local function object()   -- encoded {} rather than []
  return setmetatable({}, { __jsontype = "object" })
end

local function pod(name, extra)
  local p = { apiVersion = "v1", kind = "Pod", metadata = { name = name, labels = { app = "web" } },
              spec = { nodeName = "node-a",
                       containers = { { name = "app", image = "nginx:1.27",
                                        resources = { limits = { cpu = "500m", memory = "256Mi" } } } } } }
  for k, v in pairs(extra or {}) do p.spec[k] = v end
  return p
end

describe("ebb serve writes", function()
  local srv

  after_each(function()
    if srv then assert.equal(0, srv:stop()) end
    srv = nil
  end)

  it("creates a pod with the server's fields, defaults and admission", function()
    srv = S.start()
    local code, p = srv:request("POST", PODS, pod("api-1", { priorityClassName = "high-priority" }))
    assert.equal(201, code)
    assert.matches("^%x+%-%x+%-4%x+%-%x+%-%x+$", p.metadata.uid)
    assert.matches("^%d+$", p.metadata.resourceVersion)
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT", p.metadata.creationTimestamp)
    assert.equal(1000000, p.spec.priority)
    assert.equal("PreemptLowerPriority", p.spec.preemptionPolicy)
    assert.equal(30, p.spec.terminationGracePeriodSeconds)
    assert.equal("Always", p.spec.restartPolicy)
    assert.equal("default-scheduler", p.spec.schedulerName)
    local c = p.spec.containers[1]
    assert.equal("IfNotPresent", c.imagePullPolicy)
    assert.same({ cpu = "500m", memory = "256Mi" }, c.resources.requests)   -- from the limits
    assert.same({ phase = "Pending", qosClass = "Guaranteed" }, p.status)
    local keys = {}
    for _, t in ipairs(p.spec.tolerations) do keys[#keys + 1] = t.key .. "=" .. t.tolerationSeconds end
    assert.same({ "node.kubernetes.io/not-ready=300", "node.kubernetes.io/unreachable=300" }, keys)
    -- it is listed and watched like any pod
    assert.equal("api-1", srv:get(PODS .. "/api-1").metadata.name)
  end)

  it("refuses what the API server refuses, in its words", function()
    srv = S.start()
    assert.equal(201, (srv:request("POST", PODS, pod("dup"))))
    local code, st = srv:request("POST", PODS, pod("dup"))
    assert.equal(409, code)
    assert.same({ kind = "Status", apiVersion = "v1", metadata = {}, status = "Failure",
                  message = 'pods "dup" already exists', reason = "AlreadyExists",
                  details = { name = "dup", kind = "pods" }, code = 409 }, st)
    code, st = srv:request("POST", PODS, pod("Bad_Name"))
    assert.equal(422, code)
    assert.matches('^Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a ' ..
                   "lowercase RFC 1123 subdomain", st.message)
    assert.equal("metadata.name", st.details.causes[1].field)
    code, st = srv:request("POST", PODS, { metadata = { name = "empty" }, spec = object() })
    assert.equal(422, code)
    assert.equal('Pod "empty" is invalid: spec.containers: Required value', st.message)
    code, st = srv:request("POST", PODS, pod("nopc", { priorityClassName = "nope" }))
    assert.equal(403, code)
    assert.equal('pods "nopc" is forbidden: no PriorityClass with name nope was found', st.message)
    code, st = srv:request("POST", "/api/v1/namespaces", { metadata = { name = "a.b" } })
    assert.equal(422, code)
    assert.equal('Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots',
                 st.message)   -- a subdomain where a label is wanted, in kube-apiserver 1.35's words
    code, st = srv:request("POST", "/api/v1/namespaces", { metadata = { name = "A_b" } })
    assert.equal(422, code)
    assert.matches("RFC 1123 label", st.message)
    code, st = srv:request("POST", "/apis/coordination.k8s.io/v1/namespaces/prod/leases",
                           { metadata = object() })
    assert.equal(422, code)
    assert.equal('Lease.coordination.k8s.io "" is invalid: metadata.name: Required value: name ' ..
                 "or generateName is required", st.message)
  end)

  it("changes a status through the status subresource only", function()
    srv = S.start()
    assert.equal(201, (srv:request("POST", PODS, pod("st"))))
    local mp = { ["Content-Type"] = "application/merge-patch+json" }
    -- through the object: the status stays the server's
    local code, p = srv:request("PATCH", PODS .. "/st",
                                { metadata = { labels = { x = "y" } }, status = { phase = "Running" } }, mp)
    assert.equal(200, code)
    assert.equal("y", p.metadata.labels.x)
    assert.equal("Pending", p.status.phase)
    code, p = srv:request("PATCH", PODS .. "/st/status", { status = { phase = "Running" },
                                                          spec = { nodeName = "node-b" } }, mp)
    assert.equal(200, code)
    assert.equal("Running", p.status.phase)
    assert.equal("node-a", p.spec.nodeName)
    -- a pod's spec is all but immutable
    code, p = srv:request("PATCH", PODS .. "/st", { spec = { nodeName = "node-b" } }, mp)
    assert.equal(422, code)
    assert.matches("pod updates may not change fields other than", p.message, 1, true)
    -- a created budget waits for the disruption controller
    code, p = srv:request("POST", "/apis/policy/v1/namespaces/prod/poddisruptionbudgets",
      { metadata = { name = "new-pdb" }, spec = { minAvailable = 1,
                                                  selector = { matchLabels = { app = "web" } } } })
    assert.equal(201, code)
    assert.equal(1, p.metadata.generation)
    assert.same({ disruptionsAllowed = 0, currentHealthy = 0, desiredHealthy = 0, expectedPods = 0 },
                p.status)
  end)

  it("keeps an object with finalizers, marked deleted, until they are gone", function()
    srv = S.start()
    local lease = "/apis/coordination.k8s.io/v1/namespaces/prod/leases/held"
    local code = srv:request("POST", "/apis/coordination.k8s.io/v1/namespaces/prod/leases",
                             { metadata = { name = "held", finalizers = { "ebb.dev/hold" } },
                               spec = { holderIdentity = "a" } })
    assert.equal(201, code)
    local obj
    code, obj = srv:request("DELETE", lease)
    assert.equal(200, code)
    assert.equal("Lease", obj.kind)
    assert.is_string(obj.metadata.deletionTimestamp)
    assert.equal(200, (srv:request("GET", lease)))
    code = srv:request("PATCH", lease, { metadata = { finalizers = S.json.null } },
                       { ["Content-Type"] = "application/merge-patch+json" })
    assert.equal(200, code)
    assert.equal(404, (srv:request("GET", lease)))
  end)

  it("evicts gracefully: terminating for the grace period, then gone", function()
    srv = S.start{ "--termination-seconds", "1" }
    local DEF = "/api/v1/namespaces/default/pods"
    local list = srv:get(DEF)
    local w = srv:watch(DEF .. "?watch=1&resourceVersion=" .. list.metadata.resourceVersion)
    local code = srv:request("POST", DEF .. "/debug-shell/eviction",
      { apiVersion = "policy/v1", kind = "Eviction",
        metadata = { name = "debug-shell", namespace = "default" } })
    assert.equal(201, code)
    local p = srv:get(DEF .. "/debug-shell")
    assert.is_string(p.metadata.deletionTimestamp)
    local del = w:wait_for(function(e) return e.type == "DELETED" end)
    assert.is_table(del)
    local types = {}
    for _, e in ipairs(w:events()) do types[#types + 1] = e.type end
    -- marked, finished by its kubelet (a grace period of 0), gone
    assert.same({ "MODIFIED", "MODIFIED", "DELETED" }, types)
    assert.equal(0, del.object.metadata.deletionGracePeriodSeconds)
    assert.equal(404, (srv:request("GET", DEF .. "/debug-shell")))
  end)

  it("deletes a namespace with what is in it", function()
    srv = S.start{ graceful = true }
    local code, ns = srv:request("DELETE", "/api/v1/namespaces/prod")
    assert.equal(200, code)
    assert.equal("Namespace", ns.kind)
    assert.equal("Terminating", ns.status.phase)
    assert.is_string(ns.metadata.deletionTimestamp)
    assert.equal(404, (srv:request("GET", "/api/v1/namespaces/prod")))
    assert.same({}, srv:get(PODS).items)
    assert.same({}, srv:get("/apis/policy/v1/namespaces/prod/poddisruptionbudgets").items)
    assert.equal(2, #srv:get("/api/v1/namespaces/default/pods").items)
  end)

  it("deletes a collection by its selectors, each object as one delete would", function()
    srv = S.start()
    local code, list = srv:request("DELETE", PODS .. "?labelSelector=" .. S.escape("app=web"))
    assert.equal(200, code)
    assert.equal("PodList", list.kind)
    local gone = S.names(list)
    assert.is_true(#gone >= 2)
    for _, p in ipairs(list.items) do assert.is_string(p.metadata.deletionTimestamp) end
    local left = S.names(srv:get(PODS .. "?labelSelector=" .. S.escape("app=web")))
    assert.same({}, left)
    assert.equal(405, (srv:request("DELETE", "/api/v1/namespaces")))
  end)

  -- Labels, annotations and names as kube-apiserver validates them (the
  -- same cases against the real server: serve_conformance_spec.lua); each
  -- refused one is not stored, each accepted one is stored as sent.
  it("validates labels, annotations and names on every write, whatever the kind", function()
    srv = S.start()
    local mp = { ["Content-Type"] = "application/merge-patch+json" }
    local bad = {
      { labels = { ["bad key"] = "v" } }, { labels = { ["a/b/c"] = "v" } },
      { labels = { ["Example.com/x"] = "v" } }, { labels = { ["/x"] = "v" } },
      { labels = { ["x/"] = "v" } }, { labels = { [("k"):rep(64)] = "v" } },
      { labels = { [("a"):rep(254) .. "/k"] = "v" } }, { labels = { k = "bad value" } },
      { labels = { k = ("v"):rep(64) } }, { labels = { k = "-v" } }, { labels = { k = "a\nb" } },
      { annotations = { ["bad key"] = "v" } }, { annotations = { k = ("a"):rep(256 * 1024 + 1) } },
      { finalizers = { "nodomain" } }, { ownerReferences = { { kind = "ReplicaSet" } } },
      { generateName = "Bad_" },
    }
    local kinds = {
      { PODS, function(m) local p = pod("x"); p.metadata = m; return p end },
      { "/api/v1/nodes", function(m) return { apiVersion = "v1", kind = "Node", metadata = m } end },
      { "/api/v1/namespaces", function(m) return { apiVersion = "v1", kind = "Namespace", metadata = m } end },
    }
    for ki, kd in ipairs(kinds) do
      local base = "keep-" .. ki
      assert.equal(201, (srv:request("POST", kd[1], kd[2]({ name = base }))))
      for i, m in ipairs(bad) do
        local name = "bad-" .. ki .. "-" .. i
        m.name = m.generateName == nil and name or nil
        local code, st = srv:request("POST", kd[1], kd[2](m))
        assert.equal(422, code, kd[1] .. " case " .. i)
        assert.equal("Invalid", st.reason)
        assert.matches("^metadata%.", st.details.causes[1].field)
        assert.equal(404, (srv:request("GET", kd[1] .. "/" .. name)), kd[1] .. " case " .. i .. " stored")
        m.name = nil
        code = srv:request("PATCH", kd[1] .. "/" .. base, { metadata = m }, mp)
        assert.equal(422, code, kd[1] .. " patch case " .. i)
      end
      local kept = srv:get(kd[1] .. "/" .. base).metadata
      assert.is_nil(kept.finalizers)
      assert.is_nil((kept.annotations or {})["bad key"])
      -- what the API server takes: a null value is "", case in annotation keys
      local code, ok = srv:request("POST", kd[1], kd[2]({ name = "good-" .. ki,
        labels = { ["example.com/My.Name"] = "A.b_c-9", ["k_.-9"] = "", nul = S.json.null },
        annotations = { ["Upper.Case/Key"] = "any value at all" } }))
      assert.equal(201, code, kd[1])
      assert.equal("", ok.metadata.labels.nul)
      assert.equal("A.b_c-9", ok.metadata.labels["example.com/My.Name"])
      assert.equal("any value at all", ok.metadata.annotations["Upper.Case/Key"])
    end
  end)

  it("refuses metadata of the wrong JSON type and a NUL it cannot store", function()
    srv = S.start()
    for _, m in ipairs{ { name = "t1", labels = { k = 1 } }, { name = "t2", labels = "x" },
                        { name = "t3", annotations = { k = true } }, { name = 5 },
                        { name = "t4", finalizers = { 1 } } } do
      local code, st = srv:request("POST", PODS, { apiVersion = "v1", kind = "Pod", metadata = m,
        spec = { containers = { { name = "c", image = "i" } } } })
      assert.equal(400, code)
      assert.matches('^Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal ', st.message)
    end
    -- "a\u0000b" would be cut to "a" by the JSON reader: refused, not stored as "a"
    local code = srv:request("POST", PODS,
      '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"nul","labels":{"a\\u0000b":"v"}},' ..
      '"spec":{"containers":[{"name":"c","image":"i"}]}}')
    assert.equal(400, code)
    assert.equal(404, (srv:request("GET", PODS .. "/nul")))
    -- an escaped backslash before u0000 is no NUL
    code = srv:request("POST", PODS,
      '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bs","annotations":{"k":"a\\\\u0000"}},' ..
      '"spec":{"containers":[{"name":"c","image":"i"}]}}')
    assert.equal(201, code)
  end)

  it("creates nothing in a namespace no cluster can have, namespaces or not in the snapshot", function()
    local dir = S.tmpdir()
    S.write(dir .. "/empty.json", '{"apiVersion":"v1","kind":"List","items":[]}')
    srv = S.start{ snapshot = dir .. "/empty.json" }
    S.rmdir(dir)
    for _, ns in ipairs{ "Bad_NS", "a.b", ("x"):rep(64) } do
      local code, st = srv:request("POST", "/api/v1/namespaces/" .. ns .. "/pods",
        { apiVersion = "v1", kind = "Pod", metadata = { name = "p" },
          spec = { containers = { { name = "c", image = "i" } } } })
      assert.equal(404, code, ns)
      assert.equal('namespaces "' .. ns .. '" not found', st.message)
    end
    assert.equal(201, (srv:request("POST", "/api/v1/namespaces/fine/pods",
      { apiVersion = "v1", kind = "Pod", metadata = { name = "p" },
        spec = { containers = { { name = "c", image = "i" } } } })))
  end)
end)
