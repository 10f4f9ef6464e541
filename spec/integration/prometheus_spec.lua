-- The Prometheus metrics provider end to end, against a real Prometheus
-- server (spec/prometheus_harness.lua): `ebb run` asks it on the loop,
-- `ebb record --policy` stores its answers in the snapshot and `ebb
-- simulate` decides the same from them; against a real kube-apiserver
-- (spec/integration/k8s_harness.lua), the bearer token comes from a Secret
-- that ebb's service account may only get and watch, and a changed Secret
-- is used from the next query on.
local P = require("spec.prometheus_harness")
local R = require("spec.integration.run_harness")
local S = R.S
local h = require("spec.helpers")
local json = require("dkjson")

local SHOP = "spec/fixtures/utilization.json"
local CPU = "instance:node_cpu_utilisation:ratio"

-- LowNodeUtilization on the Prometheus source, 20/50 of MetricResource.
local function policy(url, extra)
  return string.format([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
%s
metricsProviders:
- source: Prometheus
  prometheus:
    url: %s
profiles:
- name: default
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {MetricResource: 20}
      targetThresholds: {MetricResource: 50}
      metricsUtilization:
        source: Prometheus
        prometheus: {query: "%s"}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
]], extra or "", url, CPU)
end

local sh = require("spec.shell").sh

describe("Prometheus with ebb serve", function()
  if P.skip(pending) then return end
  local T = R.suite(before_each, after_each)

  -- worker-a-1 (85) and worker-a-2 (60) over 50%: one pod each
  local WANT = { "shop/report-api-7f9c6d5b8-l4k3j", "media/transcoder-84c6d5f7b-t6y7u" }

  it("ebb run asks the server on the loop and evicts as simulate decides", function()
    T.srv = S.start{ snapshot = SHOP }
    local run = T.start{ policy = policy(P.url()), now = P.NOW, "--once" }
    assert.equal(0, run:wait(60), run:stderr())
    assert.same(WANT, run:evicted())
    assert.matches("prometheus: queries go to " .. P.url():gsub("%p", "%%%0"), run:stderr())
  end)

  it("ebb run fails only the plugin when the server is down", function()
    T.srv = S.start{ snapshot = SHOP }
    local run = T.start{ policy = policy(P.down_url()), now = P.NOW, "--once" }
    assert.equal(0, run:wait(60), run:stderr())
    assert.same({}, run:evicted())
    assert.matches("plugin LowNodeUtilization %(profile default%) failed: error getting node usage: "
      .. "unable to capture prometheus metrics: Post ", run:stderr())
  end)

  it("ebb record --policy stores the answers; simulate decides the same from them", function()
    T.srv = S.start{ snapshot = SHOP }
    local dir = S.tmpdir()
    local kc, pol, snap = dir .. "/kubeconfig", dir .. "/policy.yaml", dir .. "/cluster.json"
    S.write(kc, string.format("apiVersion: v1\nkind: Config\ncurrent-context: s\nclusters: [{name: s, cluster: "
      .. "{server: \"%s\"}}]\ncontexts: [{name: s, context: {cluster: s}}]\n", T.srv.url))
    -- the policy names the in-cluster URL; the recording asks the local server
    S.write(pol, policy("http://prometheus-k8s.monitoring.svc:9090"))
    local code, out = sh(string.format("%s record -o %s --kubeconfig %s --policy %s --prometheus-url %s --now %s",
      S.shq(S.EBB), S.shq(snap), S.shq(kc), S.shq(pol), S.shq(P.url()), P.NOW))
    assert.equal(0, code, out)
    local doc = json.decode(S.read(snap))
    local rec
    for _, it in ipairs(doc.items) do
      if it.kind == "PrometheusQueryResult" then rec = it end
    end
    assert.is_not_nil(rec, "no PrometheusQueryResult item")
    assert.equal(CPU, rec.query)
    assert.equal(P.NOW, rec.time)
    assert.equal("vector", rec.data.resultType)
    -- no server now: the recorded answer decides
    local plan = h.simulate{ snapshot = snap, policy = pol, now = P.NOW }
    assert.same(WANT, plan:pods())
    assert.same({}, plan.errors)
    -- and the same as asking the server
    assert.same(WANT, h.simulate{ snapshot = SHOP, policy = pol, now = P.NOW,
                                  prometheus_url = P.url() }:pods())
    S.rmdir(dir)
  end)
end)

-- A proxy in front of Prometheus that writes down the Authorization header
-- of every query (Prometheus itself checks no bearer token).
local PROXY = [[
import http.server, sys, urllib.request
target, log = sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(log, "a") as f:
            f.write((self.headers.get("Authorization") or "-") + "\n")
        req = urllib.request.Request(target + self.path, data=body, method="POST",
                                     headers={"Content-Type": self.headers.get("Content-Type")})
        with urllib.request.urlopen(req) as r:
            data = r.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
]]

describe("Prometheus token from a Secret, against kube-apiserver", function()
  if P.skip(pending) then return end
  local K = require("spec.integration.k8s_harness")
  if K.skip(pending) then return end
  local cp = K.cluster()
  local runs, pids, dirs = {}, {}, {}
  after_each(function()
    for _, r in ipairs(runs) do r:stop() end
    for _, pid in ipairs(pids) do os.execute("kill " .. pid .. " 2>/dev/null") end
    for _, d in ipairs(dirs) do S.rmdir(d) end
    runs, pids, dirs = {}, {}, {}
    cp:cleanup()
  end)

  local function b64(s)
    local _, out = sh("printf %s " .. S.shq(s) .. " | base64 -w0")
    return out
  end

  -- ebb's ServiceAccount with deploy/'s ClusterRole and the Role of
  -- deploy/components/prometheus-token (its namespace and Secret name
  -- changed as its comment says); a kubeconfig with its token
  local function service_account(ns, secret_ns, secret)
    local _, rbac = sh("python3 -c " .. S.shq([[
import json, sys, yaml
docs = list(yaml.safe_load_all(open("deploy/base/rbac.yaml"))) + \
       list(yaml.safe_load_all(open("deploy/components/prometheus-token/role.yaml")))
print(json.dumps(docs))]]))
    local docs = json.decode(rbac)
    cp:service_account(ns, "ebb")
    for _, d in ipairs(docs) do
      if d.kind == "ClusterRole" then
        d.metadata.name = ns .. "-ebb"
        cp:create("/apis/rbac.authorization.k8s.io/v1/clusterroles", d)
      elseif d.kind == "ClusterRoleBinding" then
        d.metadata.name = ns .. "-ebb"
        d.roleRef.name = ns .. "-ebb"
        d.subjects = { { kind = "ServiceAccount", name = "ebb", namespace = ns } }
        cp:create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", d)
      elseif d.kind == "Role" then
        d.metadata.namespace = secret_ns
        d.rules[1].resourceNames = { secret }
        cp:create("/apis/rbac.authorization.k8s.io/v1/namespaces/" .. secret_ns .. "/roles", d)
      elseif d.kind == "RoleBinding" then
        d.metadata.namespace = secret_ns
        d.subjects = { { kind = "ServiceAccount", name = "ebb", namespace = ns } }
        cp:create("/apis/rbac.authorization.k8s.io/v1/namespaces/" .. secret_ns .. "/rolebindings", d)
      end
    end
    local dir = S.tmpdir()
    dirs[#dirs + 1] = dir
    cp:write_kubeconfig(dir .. "/kubeconfig", { token = cp:token(ns, "ebb") })
    return dir .. "/kubeconfig", dir
  end

  it("reads the token from the Secret with get/watch only, and re-reads it when it changes", function()
    local ns = cp:namespace("prom")
    local mon = cp:namespace("monitoring")
    cp:create("/api/v1/namespaces/" .. mon .. "/secrets", { apiVersion = "v1", kind = "Secret",
      metadata = { name = "prom-token" }, data = { prometheusAuthToken = b64("token-A") } })
    -- another Secret of the namespace ebb may not read
    cp:create("/api/v1/namespaces/" .. mon .. "/secrets", { apiVersion = "v1", kind = "Secret",
      metadata = { name = "other" }, data = { prometheusAuthToken = b64("nope") } })
    local kubeconfig, dir = service_account(ns, mon, "prom-token")
    -- prom-n1 at 90%, prom-n2 at 5%: one pod of prom-n1 goes each cycle
    cp:node("prom-n1", { labels = { ["ebb-spec"] = ns } })
    cp:node("prom-n2", { labels = { ["ebb-spec"] = ns } })
    local rs = cp:replicaset(ns, "web", 4, { cpu = "10m", node_selector = { ["kubernetes.io/hostname"] = "prom-n1" } })
    assert.is_not_nil(rs)
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 4 end, 30, "web bound")
    cp:run_pods(ns)
    local port = P.free_port()
    local log = dir .. "/auth.log"
    S.write(dir .. "/proxy.py", PROXY)
    local _, pid = sh(string.format("python3 %s %d %s %s >/dev/null 2>&1 & echo $!", S.shq(dir .. "/proxy.py"),
      port, S.shq(P.url()), S.shq(log)))
    pids[#pids + 1] = tonumber(pid:match("%d+"))
    local pol = policy(string.format("http://127.0.0.1:%d", port), "nodeSelector: ebb-spec=" .. ns)
      :gsub("    url: ([^\n]+)\n", "    url: %1\n    authToken:\n      secretReference: {namespace: "
        .. mon .. ", name: prom-token}\n", 1)
    local run = R.start(cp, { policy = pol, kubeconfig = kubeconfig, now = P.NOW, "--interval", "2s" })
    runs[#runs + 1] = run
    local function tokens()
      local out = {}
      for l in (S.read(log) or ""):gmatch("[^\n]+") do out[#out + 1] = l end
      return out
    end
    assert.is_truthy(S.eventually(function() return tokens()[1] end, 60), run:stderr())
    assert.equal("Bearer token-A", tokens()[1])
    assert.matches("authentication token read from secret " .. mon:gsub("%p", "%%%0") .. "/prom%-token",
      run:stderr())
    -- rotated: the next queries carry the new token
    cp:patch("/api/v1/namespaces/" .. mon .. "/secrets/prom-token", { data = { prometheusAuthToken = b64("token-B") } })
    assert.is_truthy(S.eventually(function()
      local t = tokens()
      return t[#t] == "Bearer token-B"
    end, 30), table.concat(tokens(), ",") .. "\n" .. run:stderr())
    assert.matches("authentication token changed: re%-read from secret", run:stderr())
    -- no request was refused for want of permission
    assert.is_nil(run:stderr():match("WATCH secret [^\n]*: 403"), run:stderr())
    assert.is_nil(run:stderr():match("GET secret [^\n]*: 403"), run:stderr())
    assert.is_true(#run:evicted() >= 1, run:stderr())
  end)
end)
