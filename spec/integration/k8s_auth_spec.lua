-- Credentials against a real control plane (spec/integration/k8s_harness.lua):
-- a kubeconfig with an exec credential plugin (a script printing an
-- ExecCredential with a ServiceAccount's token, as EKS's, GKE's and AKS's
-- plugins do), the plugin run again on a 401, and credentials the server
-- refuses: a bad token (401) and a token without the rights (403) end ebb
-- run and ebb record at once with the server's message, never after
-- --sync-timeout.
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")
local S = R.S
local json = K.json

local function figure(fmt, ...)
  io.stderr:write("# figure: " .. string.format(fmt, ...) .. "\n")
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- A kubeconfig whose user runs `plugin` (exec, v1).
local function exec_kubeconfig(cp, path, plugin, extra)
  write(path, string.format([[
apiVersion: v1
kind: Config
clusters:
- name: spec
  cluster: {server: %s, certificate-authority: %s}
users:
- name: spec
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: %s
      args: [get-token, --cluster, "spec cluster"]
      env: [{name: SPEC_PROFILE, value: live}]
      interactiveMode: Never
      provideClusterInfo: true
%s
contexts:
- name: spec
  context: {cluster: spec, user: spec}
current-context: spec
]], json.encode(cp.env.APISERVER), json.encode(cp.env.CA), json.encode(plugin), extra or ""))
  return path
end

-- A plugin script: prints the tokens of `tokens` in turn (the last one
-- from then on), counting its runs in DIR/runs, and checking what
-- client-go hands a plugin (args, env, KUBERNETES_EXEC_INFO with the
-- cluster's server).
local function plugin(dir, cp, tokens, expiry)
  local lines = { "#!/bin/sh", "set -e",
    '[ "$1" = get-token ] && [ "$3" = "spec cluster" ] || { echo "bad args: $*" >&2; exit 3; }',
    '[ "$SPEC_PROFILE" = live ] || { echo "no env" >&2; exit 4; }',
    string.format('case "$KUBERNETES_EXEC_INFO" in *%s*) ;; *) echo "no cluster info" >&2; exit 5;; esac',
      K.shq('"server":"' .. cp.env.APISERVER .. '"')),
    string.format("d=%s", K.shq(dir)),
    'n=$(cat "$d/runs" 2>/dev/null || echo 0); n=$((n+1)); echo $n >"$d/runs"' }
  for i, t in ipairs(tokens) do
    lines[#lines + 1] = string.format('[ $n -ge %d ] && tok=%s', i, K.shq(t)) .. " || true"
  end
  lines[#lines + 1] = string.format(
    [[printf '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"%%s"%s}}\n' "$tok"]],
    expiry and string.format(',"expirationTimestamp":"%s"', expiry) or "")
  local path = dir .. "/plugin"
  write(path, table.concat(lines, "\n") .. "\n")
  os.execute("chmod +x " .. K.shq(path))
  return path
end

local function runs(dir)
  return tonumber((S.read(dir .. "/runs") or "0"):match("%d+")) or 0
end

-- ebb record -o FILE with the kubeconfig: exit status, stderr
local function record(kc, dir)
  local ok = os.execute(string.format("timeout 60 %s record -o %s --kubeconfig %s 2>%s/record.err", S.shq(S.EBB),
    S.shq(dir .. "/cluster.json"), S.shq(kc), dir))
  return ok, S.read(dir .. "/record.err") or ""
end

describe("ebb and credentials a managed cluster gives", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local start = R.suite(before_each, after_each, cp).start

  local function admin_sa(ns)
    cp:service_account(ns, "ebb")
    cp:create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRoleBinding", metadata = { name = ns .. "-ebb" },
      roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "cluster-admin" },
      subjects = { { kind = "ServiceAccount", name = "ebb", namespace = ns } } })
    return cp:token(ns, "ebb")
  end

  it("an exec plugin's token: ebb record and a run's sync and cycle work, the plugin run once", function()
    local ns = cp:namespace("exec")
    local n1 = ns .. "-n1"
    cp:node(n1)
    cp:node(ns .. "-n2")
    cp:replicaset(ns, "web", 1, { node_selector = { ["kubernetes.io/hostname"] = n1 } })
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 1 end, 30, "web bound")
    cp:patch("/api/v1/nodes/" .. n1, { spec = { taints = { { key = "gone", value = "x", effect = "NoSchedule" } } } })
    cp:run_pods(ns)
    local pod = cp:pods(ns, "app=web")[1].metadata.name
    local dir = S.tmpdir()
    local kc = exec_kubeconfig(cp, dir .. "/kubeconfig", plugin(dir, cp, { admin_sa(ns) }))
    local ok, err = record(kc, dir)
    assert.is_true(ok, err)
    local snap = json.decode(S.read(dir .. "/cluster.json"))
    local found = false
    for _, it in ipairs(snap.items) do
      found = found or (it.kind == "Pod" and it.metadata.name == pod and it.metadata.namespace == ns)
    end
    assert.is_true(found, "the recording holds the pod")
    assert.equal(1, runs(dir))   -- no expirationTimestamp: cached for the whole record
    local run = start{ policy = K.taints_policy(ns), kubeconfig = kc, "--once", "--dry-run" }
    assert.equal(0, run:wait(60), run:stderr())
    assert.matches("evicted pod " .. ns .. "/" .. pod .. " from " .. n1, run:stderr(), 1, true)
    assert.equal(2, runs(dir))   -- once for the run, whatever its number of requests
    S.rmdir(dir)
  end)

  it("re-runs the plugin on a 401 (once per request) and then uses its new token", function()
    local ns = cp:namespace("exec401")
    local dir = S.tmpdir()
    -- first answer: a token the server refuses; then a good one
    local kc = exec_kubeconfig(cp, dir .. "/kubeconfig", plugin(dir, cp, { "not-a-valid-token", admin_sa(ns) }))
    local ok, err = record(kc, dir)
    assert.is_true(ok, err)
    assert.equal(2, runs(dir))
    -- a plugin that only ever gives a refused token: the second 401 is the answer
    local dir2 = S.tmpdir()
    local kc2 = exec_kubeconfig(cp, dir2 .. "/kubeconfig", plugin(dir2, cp, { "not-a-valid-token" }))
    ok, err = record(kc2, dir2)
    assert.is_falsy(ok)
    assert.matches("401 Unauthorized", err, 1, true)
    assert.equal(2, runs(dir2))
    S.rmdir(dir)
    S.rmdir(dir2)
  end)

  it("a plugin that takes seconds runs off the loop: /healthz is answered meanwhile, one run serves the whole sync", function()
    local ns = cp:namespace("execslow")
    local dir = S.tmpdir()
    local path = plugin(dir, cp, { admin_sa(ns) })
    -- 4 s before it counts its run and answers, as a cloud CLI fetching a token
    os.execute(string.format("sed -i '2a sleep 4' %s", K.shq(path)))
    local kc = exec_kubeconfig(cp, dir .. "/kubeconfig", path)
    local run = start{ policy = K.taints_policy(ns), kubeconfig = kc, "--interval", "1s" }
    local code = run:http("/healthz")
    assert.equal(200, code, run:stderr())
    local ready, body = run:ready()
    assert.is_false(ready)
    assert.matches("not current", body)
    -- answered while the plugin still slept (on the loop thread the answer
    -- waits for the plugin, which has counted its run by then)
    assert.equal(0, runs(dir))
    cp:wait(function() return run:ready() end, 60, "ebb ready once the plugin answered")
    assert.equal(1, runs(dir))   -- every LIST and WATCH of the sync waited for the same run
    S.rmdir(dir)
  end)

  it("an expired credential (expirationTimestamp past) is not used again: the plugin runs per request", function()
    local ns = cp:namespace("execexp")
    local dir = S.tmpdir()
    local kc = exec_kubeconfig(cp, dir .. "/kubeconfig", plugin(dir, cp, { admin_sa(ns) }, "2020-01-01T00:00:00Z"))
    local ok, err = record(kc, dir)
    assert.is_true(ok, err)
    assert.is_true(runs(dir) > 1, "ran " .. runs(dir) .. " times")
    S.rmdir(dir)
  end)

  it("an exec plugin's client certificate (clientCertificateData, clientKeyData): ebb record works", function()
    local dir = S.tmpdir()
    local pki = cp.env.CA:match("^(.*)/[^/]+$")
    -- a client certificate the API server's client CA signed, in system:masters
    assert.is_true(os.execute(string.format(
      "cd %s && openssl genrsa -out client.key 2048 2>/dev/null && " ..
      "openssl req -new -key client.key -subj /O=system:masters/CN=ebb-exec -out client.csr 2>/dev/null && " ..
      "openssl x509 -req -in client.csr -CA %s -CAkey %s -CAcreateserial -days 1 -out client.crt 2>/dev/null",
      K.shq(dir), K.shq(cp.env.CA), K.shq(pki .. "/ca.key"))))
    write(dir .. "/cred.json", json.encode({ kind = "ExecCredential", apiVersion = "client.authentication.k8s.io/v1",
      status = { clientCertificateData = S.read(dir .. "/client.crt"), clientKeyData = S.read(dir .. "/client.key") } }))
    write(dir .. "/plugin", "#!/bin/sh\nexec cat " .. K.shq(dir .. "/cred.json") .. "\n")
    os.execute("chmod +x " .. K.shq(dir .. "/plugin"))
    local kc = exec_kubeconfig(cp, dir .. "/kubeconfig", dir .. "/plugin")
    local ok, err = record(kc, dir)
    assert.is_true(ok, err)
    assert.is_table(json.decode(S.read(dir .. "/cluster.json")).items)
    S.rmdir(dir)
  end)

  it("a plugin that is not installed: its installHint, the kubeconfig's field, in record and run", function()
    local dir = S.tmpdir()
    local kc = exec_kubeconfig(cp, dir .. "/kubeconfig", "ebb-spec-no-such-plugin",
      "      installHint: 'ebb-spec-no-such-plugin is missing: install it from your cloud SDK'")
    local ok, err = record(kc, dir)
    assert.is_falsy(ok)
    assert.matches("users[0].user.exec: exec plugin ebb-spec-no-such-plugin", err, 1, true)
    assert.matches("install it from your cloud SDK", err, 1, true)
    -- ebb run: at once, not after --sync-timeout
    local run = start{ policy = K.taints_policy("default"), kubeconfig = kc, "--once" }
    assert.equal(1, run:wait(30), run:stderr())
    assert.matches("the caches cannot sync: [^\n]*users%[0%]%.user%.exec: exec plugin ebb%-spec%-no%-such%-plugin",
      run:stderr())
    assert.matches("install it from your cloud SDK", run:stderr(), 1, true)
    S.rmdir(dir)
  end)

  it("a bad token (401): ebb run and ebb record end at once with the server's message", function()
    local dir = S.tmpdir()
    local kc = cp:write_kubeconfig(dir .. "/kubeconfig", { token = "not-a-valid-token" })
    local t0 = K.now()
    local run = start{ policy = K.taints_policy("default"), kubeconfig = kc, "--once" }
    -- --sync-timeout is 2 minutes: ending within 30 s is ending at once
    assert.equal(1, run:wait(30), run:stderr())
    figure("401: ebb run --once exit 1 after %.1f s", K.now() - t0)
    local err = run:stderr()
    assert.matches("the caches cannot sync: LIST /[^\n]* 401 Unauthorized", err)
    assert.not_matches("sync%-timeout", err)
    local ok, rerr = record(kc, dir)
    assert.is_falsy(ok)
    assert.matches("LIST /api/v1/[%w]+: 401 Unauthorized", rerr)
    S.rmdir(dir)
  end)

  it("a token without list rights (403): printed whole, with verb and resource", function()
    local ns = cp:namespace("forbid")
    cp:service_account(ns, "nobody")
    local dir = S.tmpdir()
    local kc = cp:write_kubeconfig(dir .. "/kubeconfig", { token = cp:token(ns, "nobody") })
    local run = start{ policy = K.taints_policy(ns), kubeconfig = kc, "--once" }
    assert.equal(1, run:wait(30), run:stderr())
    local who = 'User "system:serviceaccount:' .. ns .. ':nobody" cannot list resource "'
    local line = run:stderr():match("the caches cannot sync: ([^\n]+)")
    assert.is_string(line, run:stderr())
    assert.matches("^LIST /[^ ]+: 403 [%w.]+ is forbidden: ", line)
    assert.matches(who, line, 1, true)
    assert.matches("at the cluster scope", line, 1, true)   -- the message's end: not cut
    local ok, rerr = record(kc, dir)
    assert.is_falsy(ok)
    assert.matches("LIST /api/v1/[%w]+: 403 [%w]+ is forbidden: ", rerr)
    assert.matches(who, rerr, 1, true)
    assert.matches("at the cluster scope", rerr, 1, true)
    S.rmdir(dir)
  end)

  it("ebb record without grants for the optional resources: the rest recorded, each left out said", function()
    local ns = cp:namespace("rec-part")
    cp:node(ns .. "-n1")
    cp:replicaset(ns, "web", 1)
    cp:service_account(ns, "recorder")
    -- what a run reads, and nothing of what only --reschedule's spreading reads
    cp:create("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
      apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRole", metadata = { name = ns .. "-recorder" },
      rules = {
        { apiGroups = { "" }, resources = { "nodes", "namespaces", "pods", "persistentvolumeclaims" },
          verbs = { "list" } },
        { apiGroups = { "scheduling.k8s.io" }, resources = { "priorityclasses" }, verbs = { "list" } },
        { apiGroups = { "policy" }, resources = { "poddisruptionbudgets" }, verbs = { "list" } } } })
    cp:create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRoleBinding", metadata = { name = ns .. "-recorder" },
      roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = ns .. "-recorder" },
      subjects = { { kind = "ServiceAccount", name = "recorder", namespace = ns } } })
    local dir = S.tmpdir()
    local kc = cp:write_kubeconfig(dir .. "/kubeconfig", { token = cp:token(ns, "recorder") })
    local ok, rerr
    -- the binding takes a moment to be seen by the authorizer
    cp:wait(function()
      ok, rerr = record(kc, dir)
      return ok
    end, 20, "ebb record with the partial grant")
    for _, kind in ipairs{ "Service", "ReplicationController", "ReplicaSet", "StatefulSet" } do
      assert.matches("record: " .. kind .. " objects left out of the snapshot: LIST /[^ ]+: 403 [%w.]+ is " ..
        "forbidden: [^\n]*; ebb simulate %-%-reschedule spreads replacements without them", rerr)
    end
    local snap = K.json.decode(S.read(dir .. "/cluster.json"))
    local kinds = {}
    for _, it in ipairs(snap.items) do kinds[it.kind] = (kinds[it.kind] or 0) + 1 end
    assert.is_nil(kinds.Service)
    assert.is_nil(kinds.ReplicaSet)
    assert.is_true((kinds.Pod or 0) >= 1 and (kinds.Node or 0) >= 1, rerr)
    -- a required resource refused still fails the whole recording
    cp:request("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/" .. ns .. "-recorder")
    cp:wait(function()
      ok, rerr = record(kc, dir)
      return not ok
    end, 20, "ebb record refused without the grants")
    assert.matches("LIST /api/v1/nodes: 403", rerr)
    S.rmdir(dir)
  end)
end)
