-- `ebb serve` answering reads as the API server's watch cache and printers
-- do: meta.k8s.io Tables (what `kubectl get` asks for), the list semantics
-- of resourceVersion, limit and continue, and the refusals of bad list
-- options. The fixture is spec/fixtures/kubectl-list.json.
local S = require("spec.integration.serve_harness")

local TABLE = { Accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" }

local function column_names(t)
  local out = {}
  for _, c in ipairs(t.columnDefinitions) do out[#out + 1] = c.name end
  return out
end

local function rows_by_name(t)
  local out = {}
  for _, r in ipairs(t.rows) do out[r.object.metadata.name] = r end
  return out
end

describe("ebb serve Tables", function()
  local srv

  before_each(function() srv = S.start() end)
  after_each(function() assert.equal(0, srv:stop()) end)

  it("lists pods with kubectl's columns and cells, the metadata as the row's object", function()
    local code, t = srv:request("GET", "/api/v1/pods", nil, TABLE)
    assert.equal(200, code)
    assert.equal("Table", t.kind)
    assert.equal("meta.k8s.io/v1", t.apiVersion)
    assert.same({ "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node",
                  "Readiness Gates" }, column_names(t))
    assert.equal(1, t.columnDefinitions[6].priority)
    assert.equal("name", t.columnDefinitions[1].format)
    assert.equal(10, #t.rows)
    local by = rows_by_name(t)
    local web = by["web-7d4b9c-x2k9p"]
    assert.equal("PartialObjectMetadata", web.object.kind)
    assert.equal("prod", web.object.metadata.namespace)
    assert.same({ "web-7d4b9c-x2k9p", "2/2", "Running", "0" }, { table.unpack(web.cells, 1, 4) })
    assert.same({ "10.244.1.17", "node-a", "<none>", "<none>" }, { table.unpack(web.cells, 6, 9) })
    -- a failed pod: its container's reason, and the row marked completed
    local report = by["report-28841-7kq2d"]
    assert.equal("Error", report.cells[3])
    assert.equal("Failed", report.conditions[1].reason)
    -- restarts with the time of the last one; a pod being deleted
    assert.matches("^12 %(%w+ ago%)$", by["worker-5f6d8-hh7rt"].cells[4])
    assert.equal("CrashLoopBackOff", by["worker-5f6d8-hh7rt"].cells[3])
    assert.equal("Terminating", by["mesh-app-66b7-tt5vb"].cells[3])
    assert.same({ "0/1", "Pending" }, { table.unpack(by["web-7d4b9c-pend1"].cells, 2, 3) })
    assert.equal("<none>", by["web-7d4b9c-pend1"].cells[7])
  end)

  it("prints nodes, budgets and priority classes as the API server does", function()
    local _, nodes = srv:request("GET", "/api/v1/nodes", nil, TABLE)
    assert.same({ "Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP",
                  "OS-Image", "Kernel-Version", "Container-Runtime" }, column_names(nodes))
    local by = rows_by_name(nodes)
    assert.equal("NotReady,SchedulingDisabled", by["node-c"].cells[2])
    assert.equal("worker", by["node-a"].cells[3])
    assert.equal("<none>", by["node-b"].cells[3])
    assert.equal("10.0.0.11", by["node-a"].cells[6])

    local _, pdbs = srv:request("GET", "/apis/policy/v1/poddisruptionbudgets", nil, TABLE)
    by = rows_by_name(pdbs)
    assert.same({ "web-pdb", "1", "N/A", 1 }, { table.unpack(by["web-pdb"].cells, 1, 4) })
    assert.same({ "db-pdb", "N/A", "50%", 0 }, { table.unpack(by["db-pdb"].cells, 1, 4) })
    assert.equal("integer", pdbs.columnDefinitions[4].type)

    local _, pcs = srv:request("GET", "/apis/scheduling.k8s.io/v1/priorityclasses", nil, TABLE)
    by = rows_by_name(pcs)
    assert.same({ "high-priority", 1000000, false }, { table.unpack(by["high-priority"].cells, 1, 3) })
  end)

  it("answers one object, the full object on request, and refuses what it cannot print", function()
    local code, t = srv:request("GET", "/api/v1/namespaces/prod/pods/db-0?includeObject=Object",
                                nil, TABLE)
    assert.equal(200, code)
    assert.equal(1, #t.rows)
    assert.equal("Pod", t.rows[1].object.kind)
    assert.equal(t.rows[1].object.metadata.resourceVersion, t.metadata.resourceVersion)
    code, t = srv:request("GET", "/api/v1/namespaces/prod/pods/db-0?includeObject=None", nil, TABLE)
    assert.equal(200, code)
    assert.is_nil(t.rows[1].object)
    code, t = srv:request("GET", "/api/v1/namespaces/prod/pods/db-0", nil,
                          { Accept = "application/json;as=Table;v=v2;g=meta.k8s.io" })
    assert.equal(406, code)
    assert.equal("NotAcceptable", t.reason)
    -- without a Table in the Accept header: the object
    code, t = srv:request("GET", "/api/v1/namespaces/prod/pods/db-0", nil,
                          { Accept = "application/json" })
    assert.equal("Pod", t.kind)
  end)

  it("sends a watch's column definitions with its first event only", function()
    local wt_path = "/api/v1/namespaces/prod/pods?watch=1"
    -- the harness's watches send no Accept header: this one is curl by hand
    local dir = S.tmpdir()
    os.execute(string.format("(curl -sN --max-time 5 -H %s %s >%s/out &) >/dev/null 2>&1",
                             S.shq("Accept: " .. TABLE.Accept), S.shq(srv.url .. wt_path), dir))
    local events = S.eventually(function()
      local text = S.read(dir .. "/out") or ""
      local evs = {}
      for line in text:gmatch("([^\n]*)\n") do evs[#evs + 1] = S.json.decode(line) end
      return #evs >= 6 and evs
    end, 10)
    S.rmdir(dir)
    assert.is_table(events)
    assert.equal("ADDED", events[1].type)
    assert.equal("Table", events[1].object.kind)
    assert.equal(9, #events[1].object.columnDefinitions)
    for i = 2, #events do
      assert.equal("Table", events[i].object.kind)
      assert.is_nil(events[i].object.columnDefinitions)   -- null: left out
      assert.equal(1, #events[i].object.rows)
    end
  end)
end)

describe("ebb serve lists", function()
  local srv

  before_each(function() srv = S.start() end)
  after_each(function() assert.equal(0, srv:stop()) end)

  it("answers resourceVersion=0 from the watch cache whole, whatever the limit", function()
    local all = srv:get("/api/v1/pods?resourceVersion=0&limit=2")
    assert.equal(10, #all.items)
    assert.is_nil(all.metadata.continue)
    local page = srv:get("/api/v1/pods?limit=2")
    assert.equal(2, #page.items)
    assert.is_string(page.metadata.continue)
    assert.equal(8, page.metadata.remainingItemCount)
    -- a namespace's remaining items are its own
    page = srv:get("/api/v1/namespaces/prod/pods?limit=2")
    assert.equal(4, page.metadata.remainingItemCount)
  end)

  it("pages at an exact resourceVersion when given one with a limit", function()
    local before = srv:get("/api/v1/namespaces/prod/pods")
    assert.equal(200, (srv:request("DELETE", "/api/v1/namespaces/prod/pods/db-0?gracePeriodSeconds=0")))
    local at = srv:get("/api/v1/namespaces/prod/pods?limit=10&resourceVersion=" ..
                       before.metadata.resourceVersion)
    assert.equal(before.metadata.resourceVersion, at.metadata.resourceVersion)
    assert.same(S.names(before), S.names(at))
    local now = srv:get("/api/v1/namespaces/prod/pods?resourceVersion=" ..
                        before.metadata.resourceVersion)
    assert.equal(#before.items - 1, #now.items)
  end)

  it("refuses bad list options with the API server's codes and words", function()
    local code, st = srv:request("GET", "/api/v1/pods?resourceVersionMatch=Exact")
    assert.equal(422, code)
    assert.equal("ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: " ..
                 "resourceVersionMatch is forbidden unless resourceVersion is provided", st.message)
    code, st = srv:request("GET", "/api/v1/pods?resourceVersion=1&resourceVersionMatch=Foo")
    assert.equal(422, code)
    assert.equal("FieldValueNotSupported", st.details.causes[1].reason)
    code, st = srv:request("GET", "/api/v1/pods?resourceVersion=abc")
    assert.equal(400, code)   -- kube-apiserver v1.35's answer (500 before)
    assert.equal("BadRequest", st.reason)
    assert.matches("^invalid resource version: .*strconv.ParseUint", st.message)
    code, st = srv:request("GET", "/api/v1/pods?limit=x")
    assert.equal(400, code)
    assert.equal('strconv.ParseInt: parsing "x": invalid syntax', st.message)
    code, st = srv:request("GET", "/api/v1/pods?resourceVersion=99999")
    assert.equal(504, code)
    assert.equal("Timeout: Too large resource version: 99999, current: " ..
                 srv:get("/api/v1/pods").metadata.resourceVersion, st.message)
  end)
end)
