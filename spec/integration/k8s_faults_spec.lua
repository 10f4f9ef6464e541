-- Faults of a real control plane (spec/integration/k8s_harness.lua), each
-- bounded in time: caches that cannot sync (a 403 ends the run at once), kube-apiserver
-- restarted under a running ebb (with and without its watch cache), etcd
-- compacted under it (410 Gone, relist), its token rotated on disk. What
-- each took is printed as a "# figure:" line (the report's numbers; no
-- assertion is made on time beyond the bounds a test waits).
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")

local RESOURCES = { "nodes", "namespaces", "priorityclasses", "persistentvolumeclaims",
                    "poddisruptionbudgets", "pods" }

local function figure(fmt, ...)
  io.stderr:write("# figure: " .. string.format(fmt, ...) .. "\n")
end

-- Per resource: LIST rounds and watch resumes, from /metrics.
local function counts(run)
  local m = assert(run:metrics(), "no /metrics")
  local out = {}
  for _, r in ipairs(RESOURCES) do
    local l = '{resource="' .. r .. '"}'
    out[r] = { lists = R.metric(m, "ebb_watch_lists_total", l), resumes = R.metric(m, "ebb_watch_resumes_total", l) }
  end
  out.stale = R.metric(m, "ebb_cycles_skipped_total", '{reason="stale"}') or 0
  out.cycles = R.metric(m, "ebb_cycles_total", '{result="done"}') or 0
  return out
end

describe("ebb run and a failing control plane", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local start = R.suite(before_each, after_each, cp).start
  teardown(function()
    -- later specs get the server as the harness started it
    cp:restart_apiserver{ without = { "--watch-cache" } }
  end)

  it("gives up at once on a 403, exit 1, naming the refused resource and the server's answer whole", function()
    local ns = cp:namespace("nosync")
    cp:service_account(ns, "nobody")
    local kc = cp:write_kubeconfig(cp.dir .. "/nobody.kubeconfig", { token = cp:token(ns, "nobody") })
    local t0 = K.now()
    local run = start{ policy = K.taints_policy(ns), kubeconfig = kc, "--once", "--sync-timeout", "60s" }
    assert.equal(1, run:wait(30), run:stderr())
    figure("403 before the first sync: exit 1 after %.1f s (--sync-timeout 60s)", K.now() - t0)
    local err = run:stderr()
    local line = err:match("E%d%d%d%d [^\n]*%] the caches cannot sync: ([^\n]+)")
    assert.is_string(line, err)
    assert.matches("^LIST /[^ ]+: 403 [%w.]+ is forbidden: User \"system:serviceaccount:" ..
      ns:gsub("%-", "%%-") .. ":nobody\" cannot list resource", line)
    assert.not_matches("sync%-timeout", err)
    assert.not_matches("cycle 1", err)
  end)

  it("gives up after --sync-timeout, exit 1, naming every resource that did not sync and why", function()
    -- an API server that takes connections and never answers: nothing is
    -- refused, so only --sync-timeout ends the wait
    local shell = require("spec.shell")
    local port = shell.free_port()
    local dir = R.S.tmpdir()
    os.execute(string.format([[python3 -c 'import socket,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", %d)); s.listen(64)
c=[]
while True: c.append(s.accept()[0])' >/dev/null 2>&1 & echo $! >%s/pid]], port, dir))
    local kc = dir .. "/kubeconfig"
    R.S.write(kc, string.format([[
apiVersion: v1
kind: Config
clusters: [{name: mute, cluster: {server: "http://127.0.0.1:%d"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: mute, context: {cluster: mute, user: u}}]
current-context: mute
]], port))
    R.S.sleep(0.5)
    local t0 = K.now()
    local run = start{ policy = K.taints_policy("default"), kubeconfig = kc, "--once", "--sync-timeout", "3s" }
    local code = run:wait(30)
    os.execute("kill $(cat " .. K.shq(dir .. "/pid") .. ") 2>/dev/null")
    R.S.rmdir(dir)
    assert.equal(1, code, run:stderr())
    figure("--sync-timeout 3s: exit 1 after %.1f s", K.now() - t0)
    local err = run:stderr()
    local line = err:match("E%d%d%d%d [^\n]*%] the caches did not sync within 3 s %(%-%-sync%-timeout%): ([^\n]+)")
    assert.is_string(line, err)
    for _, r in ipairs(RESOURCES) do
      assert.matches(r .. " %(", line)
    end
    assert.not_matches("cycle 1", err)
  end)

  -- Restart kube-apiserver under a running ebb. The last write before it
  -- is to a pod: the pods watch can resume from its resourceVersion. Ready
  -- again as soon as every watch is back, never waiting for an event; no
  -- cycle while the view is stale.
  -- Whether a watch can resume is the server's to say: a new watch cache
  -- serves resourceVersions from its first list on, so any write between
  -- the pod's and that list (the server's own leases, a controller's
  -- event) makes it answer 410. The pod is touched again until it is the
  -- newest revision in etcd just before the stop; `quiet` says whether
  -- etcd's revision was still the pod's once the server was down.
  local function restart_under(run, ns, what)
    local pod = cp:pods(ns)[1]
    local before, rv
    for _ = 1, 10 do
      local got = cp:patch("/api/v1/namespaces/" .. ns .. "/pods/" .. pod.metadata.name,
        { metadata = { labels = { touched = string.format("%d", math.floor(K.now() * 1000)) } } })
      rv = tonumber(got.metadata.resourceVersion)
      cp:wait(function() return run:ready() end, 10, "ebb ready before the restart")
      before = counts(run)
      if cp:etcd_revision() == rv then break end
    end
    local t0 = K.now()
    cp:stop_apiserver()
    local quiet = cp:etcd_revision() == rv
    local down = cp:wait(function()
      local ok, body = run:ready()
      return not ok and body
    end, 20, "ebb not ready while kube-apiserver is down")
    assert.matches("not current: [%a.]+ %(broken for %d+ ms", down)
    K.sleep(2)
    local t1 = K.now()
    cp:start_apiserver{ settle = false }
    local t2 = K.now()
    cp:wait(function() return run:ready() end, 30, "ebb ready after the restart")
    local t3 = K.now()
    cp:settle()
    figure("kube-apiserver restart (%s): down %.1f s, up in %.1f s; ebb ready %.2f s after /readyz of the server",
      what, t1 - t0, t2 - t1, t3 - t2)
    -- the next cycle runs
    cp:wait(function() return counts(run).cycles > before.cycles end, 10, "a cycle after the restart")
    local after = counts(run)
    assert.is_true(after.stale > before.stale, "cycles were skipped while the view was stale")
    local relisted = {}
    for _, r in ipairs(RESOURCES) do
      if after[r].lists > before[r].lists then relisted[#relisted + 1] = r end
    end
    figure("kube-apiserver restart (%s): relisted: %s%s", what,
      #relisted > 0 and table.concat(relisted, ", ") or "none",
      quiet and "" or " (etcd written after the pod before the server stopped)")
    return before, after, relisted
  end

  it("after kube-apiserver restarts, is ready as soon as the watches are back; pods resume where they were", function()
    local ns = cp:namespace("restart")
    cp:node(ns .. "-n1")
    cp:replicaset(ns, "web", 2, { cpu = "100m" })
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 2 end, 30, "web bound")
    local run = start{ policy = K.taints_policy(ns), "--interval", "1s", "--max-stale", "1s" }
    cp:wait(function() return run:ready() end, 30, "ebb ready")
    local before, after = restart_under(run, ns, "watch cache on")
    local err = run:stderr()
    if err:find("watch pods: resourceVersion expired (410): relisting", 1, true) then
      -- the server refused the resume (a write of its own came between the
      -- pod's and its new cache's list): one relist, nothing else
      figure("kube-apiserver restart (watch cache on): the server answered the pods watch 410")
      assert.equal(before.pods.lists + 1, after.pods.lists, err)
    else
      -- the pods watch resumed from its resourceVersion: no LIST
      assert.equal(before.pods.lists, after.pods.lists, err)
      assert.is_true(after.pods.resumes > before.pods.resumes, err)
    end
    -- the others had versions older than the new watch cache: 410, relisted
    assert.matches("watch nodes: resourceVersion expired %(410%): relisting", run:stderr())
  end)

  it("without the API server's watch cache, every watch resumes from its resourceVersion: no relist", function()
    cp:restart_apiserver{ extra = { "--watch-cache=false" } }
    local ns = cp:namespace("nocache")
    cp:node(ns .. "-n1")
    cp:replicaset(ns, "web", 2, { cpu = "100m" })
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 2 end, 30, "web bound")
    local run = start{ policy = K.taints_policy(ns), "--interval", "1s", "--max-stale", "1s" }
    cp:wait(function() return run:ready() end, 30, "ebb ready")
    local _, _, relisted = restart_under(run, ns, "watch cache off")
    assert.same({}, relisted)
    assert.not_matches("relisting", run:stderr())
    -- namespaces, priority classes, PVCs, PDBs: quiet, no event since; ready anyway
    for _, r in ipairs({ "namespaces", "priorityclasses", "persistentvolumeclaims", "poddisruptionbudgets" }) do
      assert.matches("watch " .. r .. ": resumed from resourceVersion %d+", run:stderr())
    end
  end)
  it("etcd compacted under it: the watches get 410 Gone from etcd and relist; ready again once the lists are in", function()
    -- without the watch cache a watch is etcd's: one from a compacted
    -- revision is refused (410 Gone), where the test above resumed
    cp:restart_apiserver{ extra = { "--watch-cache=false" } }
    local ns = cp:namespace("compact")
    cp:node(ns .. "-n1")
    cp:replicaset(ns, "web", 2, { cpu = "100m" })
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 2 end, 30, "web bound")
    local run = start{ policy = K.taints_policy(ns), "--interval", "1s", "--max-stale", "1s" }
    cp:wait(function() return run:ready() end, 30, "ebb ready")
    local before = counts(run)
    -- writes after everything ebb has seen, then every revision a watch of
    -- ebb's would start from compacted away (a watch from N starts at N+1)
    for _, name in ipairs({ "bump-1", "bump-2" }) do
      cp:create("/api/v1/namespaces/" .. ns .. "/configmaps",
        { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name }, data = { a = "b" } })
    end
    local rev = cp:etcd_revision()
    cp:etcd_compact(rev)
    figure("etcd compacted at revision %d", rev)
    -- established watches outlive a compaction; a restart makes ebb watch again
    cp:stop_apiserver()
    cp:start_apiserver{ settle = false }
    local t0 = K.now()
    cp:wait(function() return run:ready() end, 60, "ebb ready after the relists")
    local t1 = K.now()
    cp:settle()
    local after = counts(run)
    local relisted = {}
    for _, r in ipairs(RESOURCES) do
      if after[r].lists > before[r].lists then relisted[#relisted + 1] = r end
    end
    figure("etcd compaction + kube-apiserver restart: every watch 410, relisted (%s); ebb ready %.2f s after /readyz of the server",
      table.concat(relisted, ", "), t1 - t0)
    assert.same(RESOURCES, relisted)
    for _, r in ipairs(RESOURCES) do
      assert.matches("watch " .. r .. ": resourceVersion expired %(410%): relisting", run:stderr())
    end
    -- the relisted view is whole: both pods still there, a cycle ran on it
    cp:wait(function() return counts(run).cycles > after.cycles end, 10, "a cycle after the relist")
    assert.equal(#cp:pods(nil), R.metric(run:metrics(), "ebb_cache_objects", '{kind="Pod"}'))
    cp:restart_apiserver{ without = { "--watch-cache" } }
  end)

  it("reads a rotated token from disk: new requests carry it once the old one is revoked", function()
    local ns = cp:namespace("rotate")
    local n1 = ns .. "-n1"
    cp:node(n1)
    cp:node(ns .. "-n2")
    cp:replicaset(ns, "web", 2, { node_selector = { ["kubernetes.io/hostname"] = n1 } })
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 2 end, 30, "web bound")
    cp:service_account(ns, "ebb")
    cp:create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRoleBinding", metadata = { name = ns .. "-ebb" },
      roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "cluster-admin" },
      subjects = { { kind = "ServiceAccount", name = "ebb", namespace = ns } } })
    -- two tokens, each bound to a Secret: deleting the Secret revokes it
    for _, s in ipairs({ "one", "two" }) do
      cp:create("/api/v1/namespaces/" .. ns .. "/secrets",
        { apiVersion = "v1", kind = "Secret", metadata = { name = s }, type = "Opaque" })
    end
    local old = cp:token(ns, "ebb", { secret = "one" })
    local new = cp:token(ns, "ebb", { secret = "two" })
    -- as a kubelet projects it: DIR/token -> ..data/token, ..data -> a dated directory
    local dir = R.S.tmpdir()
    local function project(token, stamp)
      os.execute(string.format("mkdir -p %s/%s && printf %%s %s >%s/%s/token && ln -sfn %s %s/..data_tmp && mv -T %s/..data_tmp %s/..data",
        dir, stamp, K.shq(token), dir, stamp, stamp, dir, dir, dir))
    end
    project(old, "..2026_01")
    os.execute(string.format("ln -s ..data/token %s/token", dir))
    local kc = cp:write_kubeconfig(dir .. "/kubeconfig", { token_file = dir .. "/token" })
    local run = start{ policy = K.taints_policy(ns), kubeconfig = kc, "--interval", "1s" }
    cp:wait(function() return run:ready() end, 30, "ebb ready on the first token")
    -- rotate, then revoke the old token
    project(new, "..2026_02")
    cp:delete("/api/v1/namespaces/" .. ns .. "/secrets/one")
    cp:wait(function()
      return (cp:request("GET", "/api/v1/namespaces/" .. ns .. "/pods", nil, { token = old })) == 401
    end, 10, "the old token refused")
    assert.equal(200, (cp:request("GET", "/api/v1/namespaces/" .. ns .. "/pods", nil, { token = new })))
    -- new requests (evictions, Events) and watches made again after a
    -- restart all carry the new token
    cp:patch("/api/v1/nodes/" .. n1, { spec = { taints = { { key = "rotate", value = "x", effect = "NoSchedule" } } } })
    cp:wait(function() return #run:evicted() == 2 end, 60, "evictions with the new token")
    cp:restart_apiserver()
    cp:wait(function() return run:ready() end, 60, "ebb ready after the restart")
    local err = run:stderr()
    for _, refused in ipairs({ "answered 401", "ended: 401", "%): 401 ", "401 Unauthorized" }) do
      assert.not_matches(refused, err)
    end
    os.execute("rm -rf " .. K.shq(dir))
  end)
end)
