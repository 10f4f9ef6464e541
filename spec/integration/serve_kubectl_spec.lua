-- The real kubectl against `ebb serve`: discovery, get, a short watch that
-- sees an eviction. Skipped, with a message, when kubectl is not installed.
local S = require("spec.integration.serve_harness")
local shell = require("spec.shell")

local function have_kubectl()
  return os.execute("command -v kubectl >/dev/null 2>&1") == true
end

describe("ebb serve with kubectl", function()
  if not have_kubectl() then
    it("needs kubectl on PATH", function()
      pending("kubectl is not installed: the kubectl checks of ebb serve are skipped")
    end)
    return
  end

  local srv, dir, kubeconfig

  -- kubectl with a kubeconfig of its own (no credentials from the user's),
  -- a private discovery cache, and a time limit.
  local function kubectl(args, secs)
    return shell.sh(string.format("timeout %d kubectl --kubeconfig %s --cache-dir %s --server %s %s",
                                  secs or 30, S.shq(kubeconfig), S.shq(dir .. "/cache"),
                                  S.shq(srv.url), args))
  end

  before_each(function()
    srv = S.start()
    dir = S.tmpdir()
    kubeconfig = dir .. "/config"
    S.write(kubeconfig, string.format([[
apiVersion: v1
kind: Config
clusters:
- name: ebb
  cluster:
    server: %s
contexts:
- name: ebb
  context:
    cluster: ebb
    user: ebb
users:
- name: ebb
  user: {}
current-context: ebb
]], srv.url))
  end)

  after_each(function()
    assert.equal(0, srv:stop())
    S.rmdir(dir)
  end)

  it("kubectl get pods -A lists every pod", function()
    local code, out = kubectl("get pods -A")
    assert.equal(0, code, out)
    assert.matches("^NAMESPACE%s+NAME%s", out)
    for _, name in ipairs{ "debug-shell", "report-28841-7kq2d", "fluentd-7x2lq",
                           "kube-apiserver-node-a", "db-0", "mesh-app-66b7-tt5vb",
                           "web-7d4b9c-pend1", "web-7d4b9c-q8w4z", "web-7d4b9c-x2k9p",
                           "worker-5f6d8-hh7rt" } do
      assert.matches("\n%S+%s+" .. name:gsub("%-", "%%-") .. "%s", out)
    end
  end)

  it("kubectl reads nodes, PDBs, objects as JSON, and lists the API resources", function()
    local code, out = kubectl("get nodes")
    assert.equal(0, code, out)
    assert.matches("node%-a", out)
    assert.matches("node%-c", out)
    code, out = kubectl("get pdb -n prod")
    assert.equal(0, code, out)
    assert.matches("web%-pdb", out)
    code, out = kubectl("get pods -n prod -l app=web --field-selector spec.nodeName=node-b -o name")
    assert.equal(0, code, out)
    assert.equal("pod/web-7d4b9c-q8w4z\n", out)
    code, out = kubectl("get pod db-0 -n prod -o jsonpath={.spec.nodeName}")
    assert.equal(0, code, out)
    assert.equal("node-b", out)
    code, out = kubectl("get pod nope -n prod")
    assert.are_not.equal(0, code)
    assert.matches('pods "nope" not found', out, 1, true)
    code, out = kubectl("api-resources")
    assert.equal(0, code, out)
    for _, r in ipairs{ "pods", "nodes", "poddisruptionbudgets", "leases", "priorityclasses",
                        "events" } do
      assert.matches("\n" .. r .. "%s", out)
    end
  end)

  it("kubectl get pods -w sees an eviction", function()
    local out = dir .. "/watch"
    os.execute(string.format(
      "(timeout 20 kubectl --kubeconfig %s --cache-dir %s --server %s get pods -n prod -w " ..
      ">%s 2>&1 & echo $! >%s.pid) >/dev/null 2>&1", S.shq(kubeconfig), S.shq(dir .. "/cache"),
      S.shq(srv.url), out, out))
    local listed = S.eventually(function()
      local text = S.read(out) or ""
      return text:match("worker%-5f6d8%-hh7rt") and text
    end, 20)
    assert.is_string(listed)
    assert.equal(1, select(2, listed:gsub("web%-7d4b9c%-x2k9p", "")))
    -- kubectl has listed and is watching from that resourceVersion
    local code = srv:request("POST", "/api/v1/namespaces/prod/pods/web-7d4b9c-x2k9p/eviction",
      { apiVersion = "policy/v1", kind = "Eviction",
        metadata = { name = "web-7d4b9c-x2k9p", namespace = "prod" } })
    assert.equal(201, code)
    local seen = S.eventually(function()
      local text = S.read(out) or ""
      return select(2, text:gsub("web%-7d4b9c%-x2k9p", "")) >= 2 and text
    end, 20)
    local pid = tonumber((S.read(out .. ".pid") or ""):match("%d+"))
    if pid then os.execute("kill -TERM " .. pid .. " 2>/dev/null") end
    assert.is_string(seen, S.read(out))
  end)
end)
