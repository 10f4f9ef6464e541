-- `ebb serve` against the real API server: the same requests to both (the
-- control plane of spec/integration/k8s_harness.lua, and an `ebb serve` of
-- an empty snapshot), comparing status codes, kinds, reasons and messages,
-- and the fields ebb and kubectl depend on. Skipped, with a message, where
-- ../shared/k8s is missing.
--
-- What differs still, on purpose or for want of a reason to model it; the
-- comparisons below leave these out and say so where they do:
--   * managedFields: ebb serve tracks no field managers (server-side apply
--     is not served).
--   * The disruption controller: ebb serve has none. A created PDB keeps the
--     zero status the API server starts it with until a client writes its
--     status (or an eviction spends it); the real one is computed from pods.
--   * Column descriptions of Tables are ebb's own words; names, types,
--     formats, priorities and cells are the API server's.
--   * Quantities are stored as written; the API server canonicalizes them
--     ("1000m" -> "1"). Tables print binary ones canonically on both.
--   * Events: core/v1 and events.k8s.io/v1 are two stores in ebb serve, one
--     (converted) in the API server.
--   * A pod's spec is checked for the fields an update may change, not
--     validated in full; of a create only names, containers and images are.
--     The API server appends a diff of the spec to its 422; ebb serve does
--     not (messages are compared up to their first line).
--   * No ServiceAccount admission (off in the test control plane too), no
--     LimitRanger or ResourceQuota.
--   * A list or watch at a resourceVersion ahead of the server: 504 at once
--     (the API server waits up to 3 s for its cache first; its watch of
--     v1.25 waits silently).
--   * The resourceVersion of a list from the watch cache is the server's
--     latest, not the last one that resource saw.
--   * A bound pod being deleted is gone after its grace period (or
--     --termination-seconds), as a kubelet finishes it; the test control
--     plane has no kubelet, so there it stays terminating.
--   * A deleted namespace is emptied and gone at once (its pods without a
--     grace period); the namespace controller takes its time.
--   * A deletecollection answers with the objects as each delete left them,
--     kind and apiVersion included.
--   * /version says v1.32 while the Tables follow the printers of v1.25 (the
--     test control plane's); they differ only in PVCs' VolumeAttributesClass
--     column, which v1.29 added.
--   * A patch whose result the API server cannot decode (a label that is a
--     number) is answered 422 with the result in the message: the API
--     server's has its managedFields, ebb serve's not (compared from the
--     decoder's words on). A strategic merge patch is applied as a merge
--     patch, so its decode errors are a merge patch's.
--   * An owner reference is checked for its apiVersion, kind, name and uid;
--     two controllers among them are not refused.
local K = require("spec.integration.k8s_harness")
local S = require("spec.integration.serve_harness")
local json = S.json

local TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

describe("ebb serve conforms to kube-apiserver", function()
  if K.skip(pending) then return end

  local cp, srv, dir, ns, n

  -- the same request to both: { real = {code, obj}, ebb = {code, obj} }
  local function real_request(method, path, body, headers)
    local out = dir .. "/real.body"
    local cmd = { "curl -s --max-time 30 -o", S.shq(out), "-w '%{http_code}'", "-X", method,
                  "--cacert", S.shq(cp.env.CA),
                  "-H", S.shq("Authorization: Bearer " .. cp.env.TOKEN) }
    headers = headers or {}
    if body ~= nil then
      if type(body) == "table" then body = json.encode(body) end
      S.write(dir .. "/real.req", body)
      if not headers["Content-Type"] then headers["Content-Type"] = "application/json" end
      cmd[#cmd + 1] = "--data-binary @" .. S.shq(dir .. "/real.req")
    end
    for k, v in pairs(headers) do cmd[#cmd + 1] = "-H " .. S.shq(k .. ": " .. v) end
    cmd[#cmd + 1] = S.shq(cp.env.APISERVER .. path)
    os.remove(out)
    local p = assert(io.popen(table.concat(cmd, " ")))
    local code = tonumber(p:read("a"))
    p:close()
    return code, json.decode(S.read(out) or "")
  end

  local function both(method, path, body, headers)
    local hr, he = {}, {}
    for k, v in pairs(headers or {}) do hr[k] = v; he[k] = v end
    local rc, ro = real_request(method, path, body, hr)
    local ec, eo = srv:request(method, path, body, he)
    return { code = rc, obj = ro }, { code = ec, obj = eo }
  end

  -- A message without what differs by nature between two servers: uids,
  -- resourceVersions, and the Go diff the API server appends to some.
  local function words(msg)
    if msg == nil then return nil end
    msg = msg:gsub("%x+%-%x+%-%x+%-%x+%-%x+", "<uid>"):gsub("in record %(%d+%)", "in record (<rv>)")
    return (msg:gsub("\n.*$", ""))
  end

  -- a Status as far as clients read it
  local function status_of(r)
    local o = r.obj or {}
    local det = o.details and { name = o.details.name, group = o.details.group,
                                kind = o.details.kind } or nil
    return { code = r.code, kind = o.kind, status = o.status, reason = o.reason,
             message = words(o.message), details = det }
  end

  local function same_status(method, path, body, headers)
    local r, e = both(method, path, body, headers)
    assert.same(status_of(r), status_of(e))
    return r, e
  end

  local function pick(obj, paths)
    local out = {}
    for _, p in ipairs(paths) do
      local v = obj
      for part in p:gmatch("[^%.]+") do
        if type(v) ~= "table" then v = nil; break end
        v = v[tonumber(part) or part]
      end
      out[p] = v
    end
    return out
  end

  local function pod(name, extra)
    local p = { apiVersion = "v1", kind = "Pod", metadata = { name = name, labels = { app = name } },
                spec = { nodeName = "conf-node-" .. n,
                         containers = { { name = "app", image = "registry.local/app:1.2" } } } }
    for k, v in pairs(extra or {}) do p.spec[k] = v end
    return p
  end

  local function cells_without(t, skip)
    local out = {}
    for i, c in ipairs(t.rows[1].cells) do
      if not skip[i] then out[#out + 1] = c end
    end
    return out
  end

  local function columns(t)
    local out = {}
    for _, c in ipairs(t.columnDefinitions) do
      out[#out + 1] = { c.name, c.type, c.format, c.priority }
    end
    return out
  end

  setup(function()
    cp = K.cluster()
    dir = S.tmpdir()
    S.write(dir .. "/empty.json", '{"apiVersion":"v1","kind":"List","items":[]}')
    srv = S.start{ snapshot = dir .. "/empty.json", graceful = true }
    ns = cp:namespace("conf")
    n = ns:match("%d+$")
    assert.equal(201, (srv:request("POST", "/api/v1/namespaces",
                                   { apiVersion = "v1", kind = "Namespace", metadata = { name = ns } })))
    -- a node on both, Ready through its status
    local node = { apiVersion = "v1", kind = "Node", metadata = { name = "conf-node-" .. n,
                   labels = { ["node-role.kubernetes.io/worker"] = "" } } }
    cp:create("/api/v1/nodes", node)
    assert.equal(201, (srv:request("POST", "/api/v1/nodes", node)))
    local st = { status = { conditions = { { type = "Ready", status = "True", reason = "KubeletReady",
                   lastHeartbeatTime = K.rfc3339(), lastTransitionTime = K.rfc3339() } },
                 addresses = { { type = "InternalIP", address = "10.9.0.1" } },
                 capacity = { cpu = "4", memory = "8Gi", pods = "110" },
                 allocatable = { cpu = "4", memory = "8Gi", pods = "110" },
                 nodeInfo = { kubeletVersion = "v1.25.0", osImage = "Debian GNU/Linux 12",
                              kernelVersion = "6.1.0", containerRuntimeVersion = "containerd://1.7",
                              machineID = "", systemUUID = "", bootID = "", kubeProxyVersion = "",
                              operatingSystem = "linux", architecture = "amd64" } } }
    local mp = { ["Content-Type"] = "application/merge-patch+json" }
    local r, e = both("PATCH", "/api/v1/nodes/conf-node-" .. n .. "/status", st, mp)
    assert.equal(200, r.code)
    assert.equal(200, e.code)
    local pc = { apiVersion = "scheduling.k8s.io/v1", kind = "PriorityClass",
                 metadata = { name = "conf-pc-" .. n }, value = 1000 }
    cp:create("/apis/scheduling.k8s.io/v1/priorityclasses", pc)
    assert.equal(201, (srv:request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc)))
  end)

  teardown(function()
    if srv then srv:stop() end
    if cp then cp:cleanup() end
    if dir then S.rmdir(dir) end
  end)

  it("serves the same resources and verbs", function()
    local r, e = both("GET", "/api/v1")
    local function verbs(list)
      local out = {}
      for _, res in ipairs(list.resources) do
        local v = {}
        for _, verb in ipairs(res.verbs) do v[#v + 1] = verb end
        table.sort(v)
        out[res.name] = table.concat(v, ",")
      end
      return out
    end
    local rv, ev = verbs(r.obj), verbs(e.obj)
    for name, v in pairs(ev) do
      assert.equal(rv[name], v, name)
    end
    for _, name in ipairs{ "pods", "pods/status", "pods/eviction", "nodes", "nodes/status",
                           "namespaces", "events", "persistentvolumeclaims" } do
      assert.is_string(ev[name], name)
    end
  end)

  it("creates pods with the same defaults, admission and status", function()
    local fields = { "kind", "apiVersion", "metadata.namespace", "spec.priority",
      "spec.priorityClassName", "spec.preemptionPolicy", "spec.restartPolicy",
      "spec.terminationGracePeriodSeconds", "spec.dnsPolicy", "spec.schedulerName",
      "spec.enableServiceLinks", "spec.tolerations", "spec.containers.1.imagePullPolicy",
      "spec.containers.1.terminationMessagePath", "spec.containers.1.terminationMessagePolicy",
      "spec.containers.1.resources", "status" }
    local cases = {
      { "best", {} },
      { "burst", { priorityClassName = "conf-pc-" .. n,
                   containers = { { name = "app", image = "registry.local/app",
                                    resources = { requests = { cpu = "100m" } } } } } },
      { "guar", { containers = { { name = "app", image = "app@sha256:" .. ("a"):rep(64),
                                   resources = { limits = { cpu = "1", memory = "1Gi" } } } },
                  tolerations = { { operator = "Exists" } } } },
    }
    for _, c in ipairs(cases) do
      local r, e = both("POST", "/api/v1/namespaces/" .. ns .. "/pods", pod(c[1], c[2]))
      assert.equal(201, r.code, c[1])
      assert.equal(201, e.code, c[1])
      assert.same(pick(r.obj, fields), pick(e.obj, fields), c[1])
      for _, o in ipairs{ r.obj, e.obj } do
        assert.matches("^%x+%-%x+%-%x+%-%x+%-%x+$", o.metadata.uid)
        assert.matches("^%d+$", o.metadata.resourceVersion)
        assert.is_string(o.metadata.creationTimestamp)
      end
    end
  end)

  it("refuses the same creates with the same codes and words", function()
    local path = "/api/v1/namespaces/" .. ns .. "/pods"
    assert.equal(201, (same_status("POST", path, pod("dup"))).code)
    same_status("POST", path, pod("dup"))
    same_status("POST", path, pod("Bad_Name"))
    same_status("POST", path, { metadata = { name = "nocont" }, spec = K.object() })
    same_status("POST", path, { metadata = { name = "noimg" },
                                spec = { containers = { { name = "c" } } } })
    same_status("POST", path, { metadata = K.object(),
                                spec = { containers = { { name = "c", image = "i" } } } })
    same_status("POST", path, pod("nopc", { priorityClassName = "conf-nope" }))
    same_status("POST", path, pod("prio", { priority = 7 }))
    same_status("POST", "/api/v1/namespaces/conf-nowhere/pods", pod("x"))
    same_status("POST", path, { kind = "Pod", metadata = { name = "other-ns", namespace = "elsewhere" },
                                spec = { containers = { { name = "c", image = "i" } } } })
    same_status("POST", "/api/v1/namespaces", { metadata = { name = "a.b" } })
    same_status("POST", "/apis/coordination.k8s.io/v1/namespaces/" .. ns .. "/leases",
                { metadata = K.object() })
    same_status("GET", path .. "/nope")
    same_status("GET", "/apis/coordination.k8s.io/v1/namespaces/" .. ns .. "/leases/nope")
  end)

  it("keeps a status to its subresource and a pod's spec to what may change", function()
    local path = "/api/v1/namespaces/" .. ns .. "/pods/st"
    assert.equal(201, (both("POST", "/api/v1/namespaces/" .. ns .. "/pods", pod("st"))).code)
    local mp = { ["Content-Type"] = "application/merge-patch+json" }
    local r, e = both("PATCH", path, { metadata = { labels = { x = "y" } },
                                       status = { phase = "Running" } }, mp)
    assert.same(pick(r.obj, { "metadata.labels", "status.phase" }),
                pick(e.obj, { "metadata.labels", "status.phase" }))
    same_status("PATCH", path, { spec = { nodeName = "elsewhere" } }, mp)
    local running = { status = { phase = "Running", podIP = "10.9.1.1", podIPs = { { ip = "10.9.1.1" } },
      conditions = { { type = "Ready", status = "True" } },
      containerStatuses = { { name = "app", ready = true, restartCount = 2, image = "app", imageID = "",
        state = { running = { startedAt = K.rfc3339(-60) } },
        lastState = { terminated = { exitCode = 1, finishedAt = K.rfc3339(-3600) } } } } } }
    r, e = both("PATCH", path .. "/status", running, mp)
    assert.equal(200, r.code)
    assert.equal(200, e.code)
    assert.same(pick(r.obj, { "status.phase", "status.podIP", "spec.nodeName" }),
                pick(e.obj, { "status.phase", "status.podIP", "spec.nodeName" }))
  end)

  it("prints the same Tables", function()
    local paths = {
      { "/api/v1/namespaces/" .. ns .. "/pods/st", { [5] = true } },
      { "/api/v1/nodes/conf-node-" .. n, { [4] = true } },
      { "/api/v1/namespaces/" .. ns, { [3] = true } },
      { "/apis/scheduling.k8s.io/v1/priorityclasses/conf-pc-" .. n, { [4] = true } },
    }
    for _, p in ipairs(paths) do
      local r, e = both("GET", p[1], nil, { Accept = TABLE })
      assert.equal(200, r.code, p[1])
      assert.equal(200, e.code, p[1])
      assert.equal("Table", e.obj.kind)
      assert.same(columns(r.obj), columns(e.obj), p[1])
      assert.same(cells_without(r.obj, p[2]), cells_without(e.obj, p[2]), p[1])
      assert.equal(r.obj.rows[1].object.kind, e.obj.rows[1].object.kind)
    end
    local r, e = both("GET", "/api/v1/namespaces/" .. ns .. "/pods", nil, { Accept = TABLE })
    assert.equal(#r.obj.rows, #e.obj.rows)
    local b = both("POST", "/apis/policy/v1/namespaces/" .. ns .. "/poddisruptionbudgets",
                   { metadata = { name = "tbl" }, spec = { maxUnavailable = "25%",
                     selector = { matchLabels = { app = "none" } } } })
    assert.equal(201, b.code)
    r, e = both("GET", "/apis/policy/v1/namespaces/" .. ns .. "/poddisruptionbudgets/tbl", nil,
                { Accept = TABLE })
    assert.same(columns(r.obj), columns(e.obj))
    assert.same({ table.unpack(r.obj.rows[1].cells, 1, 3) }, { table.unpack(e.obj.rows[1].cells, 1, 3) })
  end)

  it("lists as the API server does: whole from the cache at 0, paged otherwise", function()
    local path = "/api/v1/namespaces/" .. ns .. "/pods"
    local r, e = both("GET", path .. "?resourceVersion=0&limit=1")
    assert.equal(#r.obj.items, #e.obj.items)
    assert.is_true(#e.obj.items > 1)
    assert.is_nil(e.obj.metadata.continue)
    r, e = both("GET", path .. "?limit=1")
    assert.equal(1, #e.obj.items)
    assert.equal(r.obj.metadata.remainingItemCount, e.obj.metadata.remainingItemCount)
    assert.equal(r.obj.items[1].metadata.name, e.obj.items[1].metadata.name)
    -- items leave kind and apiVersion to the list
    assert.is_nil(r.obj.items[1].kind)
    assert.is_nil(e.obj.items[1].kind)
    assert.equal(r.obj.kind, e.obj.kind)
    same_status("GET", path .. "?resourceVersionMatch=Exact")
    same_status("GET", path .. "?resourceVersion=1&resourceVersionMatch=Foo")
    same_status("GET", path .. "?resourceVersion=0&resourceVersionMatch=Exact")
    same_status("GET", path .. "?resourceVersion=abc")
    same_status("GET", path .. "?limit=x")
    same_status("GET", path .. "?fieldSelector=spec.nope%3Dx")
  end)

  it("deletes pods gracefully, with the same answers and preconditions", function()
    local base = "/api/v1/namespaces/" .. ns .. "/pods"
    assert.equal(201, (both("POST", base, pod("del"))).code)
    same_status("DELETE", base .. "/del", { preconditions = { uid = "not-its-uid" } })
    local fields = { "kind", "metadata.name", "metadata.deletionGracePeriodSeconds" }
    local r, e = both("DELETE", base .. "/del")
    assert.equal(200, r.code)
    assert.equal(200, e.code)
    assert.same(pick(r.obj, fields), pick(e.obj, fields))
    assert.is_string(e.obj.metadata.deletionTimestamp)
    -- again: nothing changes; with no grace period: gone
    local r2, e2 = both("DELETE", base .. "/del")
    assert.equal(r.obj.metadata.resourceVersion, r2.obj.metadata.resourceVersion)
    assert.equal(e.obj.metadata.resourceVersion, e2.obj.metadata.resourceVersion)
    assert.equal(200, (both("DELETE", base .. "/del?gracePeriodSeconds=0")).code)
    same_status("GET", base .. "/del")
    -- never scheduled: gone at once
    local unbound = pod("unbound")
    unbound.spec.nodeName = nil
    unbound.spec.schedulerName = "nobody"   -- not for kube-scheduler to bind
    assert.equal(201, (both("POST", base, unbound)).code)
    r, e = both("DELETE", base .. "/unbound")
    assert.same(pick(r.obj, fields), pick(e.obj, fields))
    assert.equal(0, e.obj.metadata.deletionGracePeriodSeconds)
    same_status("GET", base .. "/unbound")
  end)

  it("evicts with the same answers", function()
    local base = "/api/v1/namespaces/" .. ns .. "/pods"
    assert.equal(201, (both("POST", base, pod("ev"))).code)
    local function eviction(name, extra)
      local b = { apiVersion = "policy/v1", kind = "Eviction", metadata = { name = name, namespace = ns } }
      for k, v in pairs(extra or {}) do b[k] = v end
      return b
    end
    same_status("POST", base .. "/ev/eviction", eviction("other"))
    same_status("POST", base .. "/nope/eviction", eviction("nope"))
    same_status("POST", base .. "/ev/eviction",
                eviction("ev", { deleteOptions = { preconditions = { uid = "x" } } }))
    same_status("POST", base .. "/ev/eviction", eviction("ev"))
    local r, e = both("GET", base .. "/ev")
    assert.equal(30, r.obj.metadata.deletionGracePeriodSeconds)
    assert.equal(30, e.obj.metadata.deletionGracePeriodSeconds)
  end)

  it("keeps leases with the same conflicts and Status answers", function()
    local base = "/apis/coordination.k8s.io/v1/namespaces/" .. ns .. "/leases"
    local lease = { apiVersion = "coordination.k8s.io/v1", kind = "Lease", metadata = { name = "le" },
                    spec = { holderIdentity = "a", leaseDurationSeconds = 15 } }
    assert.equal(201, (both("POST", base, lease)).code)
    lease.metadata.resourceVersion = "1"
    same_status("PUT", base .. "/le", lease)
    same_status("DELETE", base .. "/le", { preconditions = { resourceVersion = "1" } })
    local r, e = both("DELETE", base .. "/le")
    assert.same(status_of(r), status_of(e))
    assert.is_string(e.obj.details.uid)
  end)

  it("answers a namespace's deletion with it terminating", function()
    local name = "conf-gone-" .. n
    local r, e = both("POST", "/api/v1/namespaces", { metadata = { name = name } })
    assert.equal(201, r.code)
    assert.equal(201, e.code)
    assert.same(pick(r.obj, { "kind", "status.phase", "spec.finalizers" }),
                pick(e.obj, { "kind", "status.phase", "spec.finalizers" }))
    assert.equal(name, e.obj.metadata.labels["kubernetes.io/metadata.name"])
    r, e = both("DELETE", "/api/v1/namespaces/" .. name)
    assert.equal(200, r.code)
    assert.equal(200, e.code)
    assert.same(pick(r.obj, { "kind", "status.phase" }), pick(e.obj, { "kind", "status.phase" }))
    assert.is_string(e.obj.metadata.deletionTimestamp)
  end)

  -- Metadata as kube-apiserver decodes and validates it (ValidateObjectMeta):
  -- names, generateName, labels, annotations, finalizers, owner references,
  -- and the JSON types of them, for creates, updates and patches of pods,
  -- nodes and namespaces. Each refusal must match code, reason and words;
  -- each acceptance must store the same labels and annotations.
  describe("metadata", function()
    local MP = { ["Content-Type"] = "application/merge-patch+json" }
    local k = 0

    local function uniq(p)
      k = k + 1
      return string.format("%s-%s-%d", p, n, k)
    end

    -- kinds to try, each a collection and an object around `meta`
    local function kinds()
      return {
        { what = "pod", path = "/api/v1/namespaces/" .. ns .. "/pods", make = function(meta)
            return { apiVersion = "v1", kind = "Pod", metadata = meta,
                     spec = { containers = { { name = "c", image = "registry.local/c:1" } } } }
          end },
        { what = "node", path = "/api/v1/nodes", make = function(meta)
            return { apiVersion = "v1", kind = "Node", metadata = meta }
          end },
        { what = "namespace", path = "/api/v1/namespaces", make = function(meta)
            return { apiVersion = "v1", kind = "Namespace", metadata = meta }
          end },
      }
    end

    -- "... is invalid: REST": the message without the object's name (a
    -- generated one differs)
    local function after_name(m)
      return m and (m:match("is invalid: (.*)$") or m) or nil
    end

    local function same_refusal(method, path, body, headers, what)
      local r, e = both(method, path, body, headers)
      local sr, se = status_of(r), status_of(e)
      sr.message, se.message = after_name(sr.message), after_name(se.message)
      local gen = type(body) == "table" and type(body.metadata) == "table" and body.metadata.generateName
      if type(gen) == "string" and gen ~= "" then
        -- the name made of it: its first 58 characters and 5 random ones
        local stem = gen:sub(1, 58):gsub("%p", "%%%0")
        for _, st in ipairs{ sr, se } do
          if st.message then
            st.message = st.message:gsub('"' .. stem .. '[a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9]"',
                                         '"' .. gen:sub(1, 58) .. '<random>"')
          end
        end
      end
      if sr.details then sr.details.name = nil end
      if se.details then se.details.name = nil end
      assert.same(sr, se, what)
      return r, e
    end

    local bad_keys = { "bad key", "a/b/c", "Example.com/x", "/x", "x/", "", ("k"):rep(64),
                       ("a"):rep(254) .. "/k", "-k", "k-", "example.com/-k", "a_b.c/k" }
    local good_keys = { "k_.-9", "example.com/My.Name", "a/b", ("k"):rep(63), "K" }
    local bad_values = { "bad value", ("x"):rep(64), "-v", "v-", "v\u{e9}", "a\nb", "a\"b" }
    local good_values = { "", "A.b_c-9", ("x"):rep(63) }

    it("refuses the labels kube-apiserver refuses on create, with its words", function()
      for _, kd in ipairs(kinds()) do
        for _, key in ipairs(bad_keys) do
          local r = same_refusal("POST", kd.path, kd.make({ name = uniq("lk"), labels = { [key] = "v" } }),
                                 nil, kd.what .. " label key " .. key)
          assert.equal(422, r.code, kd.what .. " label key " .. key)
        end
        for _, v in ipairs(bad_values) do
          local r = same_refusal("POST", kd.path, kd.make({ name = uniq("lv"), labels = { k = v } }),
                                 nil, kd.what .. " label value " .. v)
          assert.equal(422, r.code, kd.what .. " label value " .. v)
        end
      end
    end)

    it("refuses the annotations, finalizers and owners kube-apiserver refuses", function()
      local big = ("a"):rep(256 * 1024)
      local cases = {
        { annotations = { ["bad key"] = "v" } }, { annotations = { ["a/b/c"] = "v" } },
        { annotations = { [""] = "v" } }, { annotations = { k = big } },
        { annotations = { a = big:sub(1, 200000), b = big:sub(1, 62144) } },
        { finalizers = { "bad key", "nodomain", "kubernetes", "a/b/c" } },
        { ownerReferences = { { kind = "ReplicaSet" } } },
        { ownerReferences = { { apiVersion = "apps/", kind = "", name = "x", uid = "u" } } },
      }
      for _, kd in ipairs(kinds()) do
        for i, c in ipairs(cases) do
          c.name = uniq("an")
          local r = same_refusal("POST", kd.path, kd.make(c), nil, kd.what .. " case " .. i)
          assert.equal(422, r.code, kd.what .. " case " .. i)
        end
      end
    end)

    it("refuses names and generateNames as kube-apiserver does", function()
      local path = "/api/v1/namespaces/" .. ns .. "/pods"
      local pod = kinds()[1].make
      same_refusal("POST", path, pod({ name = ("x"):rep(254) }))
      same_refusal("POST", path, pod({ name = "z\"6" }))
      same_refusal("POST", path, pod({ generateName = "Bad_" }))
      same_refusal("POST", path, pod({ generateName = ("x"):rep(300) }))
      same_refusal("POST", "/api/v1/namespaces", { metadata = { name = ("x"):rep(64) } })
      same_refusal("POST", "/api/v1/namespaces", { metadata = { generateName = "Gen-" } })
      same_refusal("POST", "/api/v1/nodes", { metadata = { generateName = "Gen" } })
      -- Events: core/v1 checks no name, events.k8s.io does
      local r0, e0 = both("POST", "/api/v1/namespaces/" .. ns .. "/events",
        { apiVersion = "v1", kind = "Event", metadata = { name = "Db_0.x" }, reason = "R", message = "m",
          type = "Normal", involvedObject = { kind = "Pod", namespace = ns, name = "p" } })
      assert.equal(201, r0.code)
      assert.equal(201, e0.code)
      same_refusal("POST", "/apis/events.k8s.io/v1/namespaces/" .. ns .. "/events",
        { apiVersion = "events.k8s.io/v1", kind = "Event", metadata = { generateName = "db-0." },
          reason = "R", note = "n", type = "Normal", action = "Evict", reportingController = "ebb",
          reportingInstance = "ebb-0", eventTime = "2026-11-22T12:00:00.000000Z",
          regarding = { kind = "Pod", namespace = ns, name = "p" } })
      -- a long generateName is cut to 58 characters before the 5 random ones
      local r, e = both("POST", path, pod({ generateName = ("g"):rep(70) }))
      assert.equal(201, r.code)
      assert.equal(201, e.code)
      assert.equal(#r.obj.metadata.name, #e.obj.metadata.name)
      assert.equal(r.obj.metadata.name:sub(1, 58), e.obj.metadata.name:sub(1, 58))
    end)

    it("refuses metadata of the wrong JSON type as kube-apiserver decodes it", function()
      local cases = {
        { labels = { k = 1 } }, { labels = { k = true } }, { labels = { k = K.object() } },
        { labels = "x" }, { labels = { "x" } }, { annotations = { k = 1 } },
        { finalizers = "x" }, { finalizers = { 1 } }, { generateName = 5 }, { namespace = 5 },
      }
      for _, kd in ipairs(kinds()) do
        for i, c in ipairs(cases) do
          if c.generateName == nil then c.name = uniq("ty") end
          local r = same_refusal("POST", kd.path, kd.make(c), nil, kd.what .. " case " .. i)
          assert.equal(400, r.code, kd.what .. " case " .. i)
        end
        same_refusal("POST", kd.path, kd.make(5), nil, kd.what .. " metadata 5")
        same_refusal("POST", kd.path, kd.make({ name = 5 }), nil, kd.what .. " name 5")
      end
    end)

    it("stores the labels and annotations kube-apiserver stores", function()
      for _, kd in ipairs(kinds()) do
        local labels, ann = { nul = json.null }, { nul = json.null, ["Upper.Case/Key"] = "any value at all" }
        for i, key in ipairs(good_keys) do labels[key] = good_values[(i % #good_values) + 1] end
        local name = uniq("ok")
        local r, e = both("POST", kd.path, kd.make({ name = name, labels = labels, annotations = ann }))
        assert.equal(201, r.code, kd.what)
        assert.equal(201, e.code, kd.what)
        for _, key in ipairs(good_keys) do
          assert.equal(r.obj.metadata.labels[key], e.obj.metadata.labels[key], kd.what .. " " .. key)
        end
        assert.equal("", e.obj.metadata.labels.nul)
        assert.same(r.obj.metadata.annotations, e.obj.metadata.annotations)
        both("DELETE", kd.path .. "/" .. name)
      end
    end)

    it("refuses the same metadata on updates and patches", function()
      for _, kd in ipairs(kinds()) do
        local name = uniq("up")
        local path = kd.path .. "/" .. name
        local r, e = both("POST", kd.path, kd.make({ name = name }))
        assert.equal(201, r.code, kd.what)
        assert.equal(201, e.code, kd.what)
        for _, meta in ipairs{ { labels = { ["bad key"] = "v" } }, { labels = { k = "-v" } },
                               { annotations = { ["a/b/c"] = "v" } },
                               { annotations = { k = ("a"):rep(256 * 1024) } },
                               { finalizers = { "nodomain" } }, { generateName = "Bad_" } } do
          local pr = same_refusal("PATCH", path, { metadata = meta }, MP, kd.what .. " patch")
          assert.equal(422, pr.code)
          -- PUT: each server's own object, changed the same way
          local rc, ro = real_request("GET", path)
          local ec, eo = srv:request("GET", path)
          assert.equal(200, rc)
          assert.equal(200, ec)
          for key, v in pairs(meta) do ro.metadata[key] = v; eo.metadata[key] = v end
          local pc, po = real_request("PUT", path, ro)
          local qc, qo = srv:request("PUT", path, eo)
          assert.same({ pc, po.reason, after_name(words(po.message)) },
                      { qc, qo.reason, after_name(words(qo.message)) }, kd.what .. " put")
        end
        if kd.what == "pod" then
          same_refusal("PATCH", path .. "/status", { metadata = { labels = { ["bad key"] = "v" } } }, MP,
                       "pod status")
        end
        -- a patch whose result does not decode: 422 with the decoder's words
        local pr, pe = both("PATCH", path, { metadata = { labels = { k = 1 } } }, MP)
        assert.equal(pr.code, pe.code)
        assert.equal(422, pe.code)
        assert.equal(pr.obj.reason, pe.obj.reason)
        assert.equal(pr.obj.message:match("\": (json: .*)$"), pe.obj.message:match("\": (json: .*)$"))
        assert.equal(' "" is invalid: patch: Invalid value: ', pe.obj.message:sub(1, 38))
        both("DELETE", path)
      end
    end)
  end)

  it("caps request bodies and stored objects as the API server and etcd do", function()
    local base = "/api/v1/namespaces/" .. ns .. "/events"
    local function event(name, size)
      return { apiVersion = "v1", kind = "Event", metadata = { name = name },
               involvedObject = { kind = "Pod", namespace = ns, name = "web-0" },
               reason = "Probe", type = "Normal", message = string.rep("m", size) }
    end
    -- a body over 3 MiB: 413 before it is decoded
    local r, e = same_status("POST", base, event("ev-huge", 3200 * 1024))
    assert.equal(413, e.code)
    assert.equal("Request entity too large: limit is 3145728", e.obj.message)
    -- under 3 MiB but over etcd's 1.5 MiB for one object: etcd's words in a 500
    r, e = same_status("POST", base, event("ev-large", 1600 * 1024))
    assert.equal(500, e.code)
    assert.equal("etcdserver: request is too large", e.obj.message)
    -- just under: kept by both; growing it past the limit fails the same way
    r, e = both("POST", base, event("ev-fits", 1400 * 1024))
    assert.equal(201, r.code)
    assert.equal(201, e.code)
    local grow = { ["Content-Type"] = "application/merge-patch+json" }
    same_status("PATCH", base .. "/ev-fits", { message = string.rep("g", 1600 * 1024) }, grow)
    r, e = both("GET", base .. "/ev-fits")
    assert.equal(#r.obj.message, #e.obj.message)
    assert.equal(1400 * 1024, #e.obj.message)
  end)
end)
