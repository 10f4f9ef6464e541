-- A real Kubernetes control plane for the specs: etcd, kube-apiserver,
-- kube-controller-manager and kube-scheduler from ../shared/k8s (see its
-- README.md), ONE per busted process, started on first use and stopped when
-- the process exits. Where ../shared/k8s is missing (a user's clone), the
-- specs that need it are skipped with a message saying so.
--
--   local K = require("spec.integration.k8s_harness")
--   describe("ebb run against kube-apiserver", function()
--     if K.skip(pending) then return end  -- pending("...why...") where missing
--     local cp = K.cluster()              -- the shared control plane
--                                         -- (K.cluster{ controllers = false, scheduler = false }:
--                                         -- the API server alone, if it starts first)
--     after_each(function() cp:cleanup() end)
--     it("...", function()
--       local ns = cp:namespace("evict")  -- a fresh namespace, "evict-<n>"
--       cp:node("n1", { cpu = "4", memory = "8Gi", labels = {...}, taints = {...} })
--       local rs = cp:replicaset(ns, "web", 3, { cpu = "100m" })
--       cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 3 end, 30, "web bound")
--       cp:run_pods(ns)                   -- Running and Ready, as a kubelet would say
--       cp:pdb(ns, "web", { app = "web" }, { minAvailable = 2 })
--       local run = R.start(cp, { policy = "...", "--once" })   -- run_harness
--     end)
--   end)
--
-- The cluster (methods on the object K.cluster() returns):
--   cp.env                  APISERVER, TOKEN (admin), CA, ETCD, KUBECONFIG (admin)
--   cp.kubeconfig           the admin kubeconfig (what run_harness's R.start uses)
--   cp.dir                  its directory (build/k8s/run-PID; logs/ has every log)
--   cp:request(method, path[, body[, opts]]) -> code, decoded body, raw body
--                           opts.token (default admin), opts.content_type
--                           (default application/json; a table body is encoded)
--   cp:get(path), cp:create(path, obj), cp:patch(path, obj[, type]),
--   cp:delete(path[, query]) -> decoded answer; error unless 2xx (404 is fine
--                           for delete). create and the helpers below record
--                           what they made for cp:cleanup().
--   cp:namespace(prefix)    a fresh namespace "<prefix>-<n>"; its name
--   cp:node(name, opts)     a Node made Ready through /status: opts.cpu ("4"),
--                           memory ("8Gi"), pods ("110"), labels, taints,
--                           unschedulable, ready (default true)
--   cp:pod(ns, name, opts)  a Pod: opts.node (bound there), labels,
--                           annotations, cpu, memory (requests), owner (an
--                           object: its controller), priority_class,
--                           tolerations, node_selector, affinity, running
--                           (Running and Ready at once); the created object
--   cp:replicaset(ns, name, replicas, opts)  apps/v1, pods labelled
--                           app=<name> (opts.labels, cpu, memory,
--                           tolerations, node_selector, affinity, spread)
--   cp:pdb(ns, name, match_labels, spec)   policy/v1 (spec: minAvailable or
--                           maxUnavailable); the disruption controller fills
--                           its status (cp:wait_pdb(ns, name) waits for it)
--   cp:priority_class(name, value)
--   cp:service_account(ns, name), cp:token(ns, sa[, opts]) -> a bearer token
--                           from the TokenRequest API (opts.seconds, default
--                           3600; opts.secret: bound to that Secret, so
--                           deleting it revokes the token)
--   cp:write_kubeconfig(path, { token = ... } or { token_file = ... }[, cluster])
--                           cluster: more fields of its cluster, as
--                           { ["disable-compression"] = true }
--   cp:pods(ns[, selector[, which]]) -> Pod objects; which: "bound",
--                           "pending", "terminating", "live" (not terminating)
--   cp:run_pods(ns[, selector])   what a kubelet reports: bound pods Running,
--                           Ready, with container statuses
--   cp:finish_terminating(ns)     what a kubelet does after the grace period:
--                           terminating pods deleted for good
--   cp:events(ns)           events.k8s.io/v1 Events of the namespace
--   cp:wait(fn, secs, what) fn() until truthy (returned); error naming
--                           `what` after secs
--   cp:crd{ group, version, kind, plural, scope }   a CustomResourceDefinition
--                           (objects may hold anything), once Established
--   cp:cleanup([{ wait = true }])  delete what the helpers made (namespaces
--                           with their pods, force; nodes; cluster-scoped
--                           objects), newest first; wait: until the
--                           namespaces are gone (to make one of the same
--                           name again)
--   cp:restart_apiserver{ extra = {flags}, without = {names}, down = secs,
--                         grace = secs }
--                           kube-apiserver only (same ports, same etcd):
--                           stopped (SIGTERM, SIGKILL after `grace`, 5 s),
--                           left down `down` seconds, started with
--                           its own flags plus the extra ones (they stay for
--                           later restarts; `without` drops some by name,
--                           e.g. "--watch-cache"); returns when /readyz is ok
--   cp:stop_apiserver([grace]), cp:start_apiserver{ extra, without, settle }
--                           the two halves; a start ends with cp:settle()
--                           unless settle = false
--   cp:settle()             kube-controller-manager and kube-scheduler
--                           restarted (they back off while the API server
--                           is away) and proven to work: a canary
--                           ReplicaSet's pod created and bound
--   cp:audit()              make sure the API server writes an audit log
--                           (restarts it once with --audit-*); the log's path
--   cp:audit_events(from, user) -> audit events (ResponseComplete) of `user`
--                           logged from byte offset `from` (cp:audit_size())
--   cp:etcd_revision(), cp:etcd_compact(rev)   etcd through its HTTP gateway
--
-- The binaries are decompressed once into build/k8s/bin and hard-linked into
-- each run's directory; a run's directory is removed when it ends.
local json = require("dkjson")

local K = {}
K.json = json

-- A table dkjson encodes as an object even when it is empty.
function K.object(t)
  return setmetatable(t or {}, { __jsontype = "object" })
end

-- the shell and file helpers (spec/shell.lua), for this file and the
-- specs that use it
local shell = require("spec.shell")
local shq, read, write, sh, sleep, now = shell.shq, shell.read, shell.write, shell.sh, shell.sleep,
  shell.now
K.shq, K.sleep, K.now = shq, sleep, now

local function abspath(p)
  local pp = assert(io.popen("cd " .. shq(p) .. " 2>/dev/null && pwd"))
  local out = pp:read("l")
  pp:close()
  return out
end

-- ../shared/k8s, or $EBB_K8S_DIR.
local function k8s_dir()
  return os.getenv("EBB_K8S_DIR") or "../shared/k8s"
end

-- The folder of ../shared/k8s with a version's binaries: bin/ (1.35, the
-- default) or bin-VERSION/.
local function bin_of(version)
  return (version == nil or version == "1.35") and "bin" or ("bin-" .. version)
end

-- Why the control plane (of `version`, default 1.35) cannot be used here, or nil.
function K.missing(version)
  local d = k8s_dir()
  if not read(d .. "/control-plane") then
    return d .. "/control-plane does not exist: the specs against a real Kubernetes " ..
      "control plane are skipped"
  end
  for _, b in ipairs({ "kube-apiserver", "kube-controller-manager", "kube-scheduler" }) do
    local f = io.open(d .. "/" .. bin_of(version) .. "/" .. b .. ".xz", "rb")
    if f then f:close() else
      return d .. "/" .. bin_of(version) .. "/" .. b .. ".xz is missing: the specs against a real control plane are skipped"
    end
  end
  if os.execute("test -x /usr/bin/etcd") ~= true then
    return "etcd is not installed (Debian: etcd-server): the specs against a real control " ..
      "plane are skipped"
  end
  return nil
end

-- Inside a describe(), given busted's `pending` (it lives in the spec
-- file's environment, not in _G): declares the block pending with the
-- reason and returns true where the control plane is missing.
function K.skip(pending, version)
  local why = K.missing(version)
  if why then
    pending(why)
    return true
  end
  return false
end

-- ---- the shared state --------------------------------------------------------
-- busted restores package.loaded between spec files, so this module may be
-- loaded again; the one control plane of the process is kept in the Lua
-- registry, which busted leaves alone, and stopped by a finalizer when the
-- state closes (busted exits with os.exit(code, true)); a watchdog process
-- stops it too if the process dies without closing.

local REG = debug.getregistry()
local KEY = "ebb.k8s_harness"

local Cluster = {}
Cluster.__index = Cluster

local function teardown(st)
  if st.down then return end
  st.down = true
  os.execute(string.format("%s down %s >/dev/null 2>&1; rm -rf %s", shq(st.cp), shq(st.dir), shq(st.dir)))
end

local my_pid = shell.pid

-- build/k8s/bin/<binary>, decompressed once (again when the .xz is newer).
local function cached_binaries(root, src, bin)
  os.execute("mkdir -p " .. shq(root .. "/" .. bin))
  for _, b in ipairs({ "kube-apiserver", "kube-controller-manager", "kube-scheduler" }) do
    local out, xz = root .. "/" .. bin .. "/" .. b, src .. "/" .. bin .. "/" .. b .. ".xz"
    if os.execute(string.format("test -x %s && test ! %s -nt %s", shq(out), shq(xz), shq(out))) ~= true then
      local code, msg = sh(string.format("xz -dc %s >%s.tmp.%d && chmod +x %s.tmp.%d && mv %s.tmp.%d %s",
        shq(xz), shq(out), my_pid(), shq(out), my_pid(), shq(out), my_pid(), shq(out)))
      if code ~= 0 then error("cannot decompress " .. xz .. ": " .. msg) end
    end
  end
end

local function parse_env(text)
  local env = {}
  for k, v in text:gmatch("([%w_]+)=([^\n]*)") do env[k] = v end
  return env
end

-- The controllers the specs rely on: ReplicaSets recreate evicted pods, the
-- disruption controller computes PDB status, the garbage collector and the
-- namespace controller clean up.
K.CONTROLLERS = "replicaset,disruption,garbagecollector,namespace"

local function start(opts, key)
  local why = K.missing(opts.version)
  if why then error(why) end
  local src = abspath(k8s_dir())
  local root = abspath(os.getenv("EBB_BUILD") or "build")
  if not root then error("the build directory does not exist: make first") end
  root = root .. "/k8s"
  local bin = bin_of(opts.version)
  cached_binaries(root, src, bin)
  local pid = my_pid()
  local dir = root .. "/run-" .. pid .. (opts.version and ("-" .. opts.version) or "")
  -- control-plane up runs DIR/bin-VERSION's binaries
  local run_bin = "bin-" .. (opts.version or "1.35")
  os.execute(string.format("rm -rf %s && mkdir -p %s/bin %s/%s", shq(dir), shq(dir), shq(dir), run_bin))
  for _, b in ipairs({ "kube-apiserver", "kube-controller-manager", "kube-scheduler" }) do
    -- a hard link: `control-plane down` checks /proc/PID/exe against DIR/bin
    for _, to in ipairs(bin == "bin" and { "bin", run_bin } or { run_bin }) do
      os.execute(string.format("ln %s/%s/%s %s/%s/%s 2>/dev/null || cp %s/%s/%s %s/%s/%s",
        shq(root), bin, b, shq(dir), to, b, shq(root), bin, b, shq(dir), to, b))
    end
  end
  local st = { cp = src .. "/control-plane", dir = dir, pid = pid }
  st.sentinel = setmetatable({}, { __gc = function() teardown(st) end })
  REG[key] = st
  -- the watchdog: stops the control plane once this process is gone
  os.execute(string.format("setsid sh -c %s >/dev/null 2>&1 </dev/null &",
    shq(string.format("while kill -0 %d 2>/dev/null; do sleep 1; done; %s down %s; rm -rf %s",
      pid, shq(st.cp), shq(dir), shq(dir)))))
  local t0 = now()
  local controllers = opts.controllers == nil and K.CONTROLLERS or opts.controllers
  local code, out = sh(string.format("timeout 120 %s up %s%s%s", shq(st.cp), shq(dir),
    controllers and controllers ~= "" and (" --kcm " .. controllers) or "",
    opts.scheduler == false and "" or " --scheduler") .. (opts.version and (" --version " .. opts.version) or ""))
  if code ~= 0 then
    local log = read(dir .. "/logs/kube-apiserver.log") or ""
    teardown(st)
    REG[key] = nil
    error("the control plane did not start (" .. tostring(code) .. "): " .. out .. "\n" .. log:sub(-2000))
  end
  st.env = parse_env(read(dir .. "/env") or "")
  st.started_in = now() - t0
  return st
end

-- The control plane of this process (started on the first call, with
-- `opts`: controllers = the kube-controller-manager list (K.CONTROLLERS;
-- false: none), scheduler = false for none; later calls get that one).
-- opts.version = "1.25": a control plane of that version, one per process
-- too, beside the default one.
function K.cluster(opts)
  opts = opts or {}
  local key = opts.version and (KEY .. "@" .. opts.version) or KEY
  local st = REG[key]
  if st == nil or st.down then st = start(opts, key) end
  return setmetatable({ st = st, env = st.env, dir = st.dir, kubeconfig = st.env.KUBECONFIG,
                        url = st.env.APISERVER }, Cluster)
end

-- Stop this control plane now (a spec file that started one of another
-- version, so that it does not run beside the default one).
function Cluster:down()
  teardown(self.st)
end

-- ---- requests -----------------------------------------------------------------

function Cluster:request(method, path, body, opts)
  opts = opts or {}
  local d = self.dir
  local out, hdr = d .. "/resp.body", d .. "/resp.hdr"
  local cmd = { "curl -s --max-time 60 -o", shq(out), "-w '%{http_code}'", "-X", method,
                "--cacert", shq(self.env.CA),
                "-H", shq("Authorization: Bearer " .. (opts.token or self.env.TOKEN)) }
  if body ~= nil then
    if type(body) == "table" then body = json.encode(body) end
    write(d .. "/req.body", body)
    cmd[#cmd + 1] = "-H " .. shq("Content-Type: " .. (opts.content_type or "application/json"))
    cmd[#cmd + 1] = "--data-binary @" .. shq(d .. "/req.body")
  end
  cmd[#cmd + 1] = shq(self.env.APISERVER .. path)
  os.remove(out)
  local p = assert(io.popen(table.concat(cmd, " ")))
  local code = tonumber(p:read("a"))
  p:close()
  local raw = read(out) or ""
  return code, json.decode(raw), raw
end

local function must(code, obj, raw, what, ok404)
  if code and (code >= 200 and code < 300 or (ok404 and code == 404)) then return obj end
  error(what .. ": " .. tostring(code) .. " " .. raw, 3)
end

function Cluster:get(path)
  local code, obj, raw = self:request("GET", path)
  return must(code, obj, raw, "GET " .. path)
end

local function track(self, kind, path)
  local st = self.st
  st.made = st.made or {}
  st.made[#st.made + 1] = { kind = kind, path = path }
end

-- POST obj to the collection `path`; recorded for cleanup.
function Cluster:create(path, obj)
  local code, got, raw = self:request("POST", path, obj)
  got = must(code, got, raw, "POST " .. path)
  local name = got.metadata and got.metadata.name
  if name then track(self, got.kind, path .. "/" .. name) end
  return got
end

function Cluster:patch(path, obj, ptype)
  local code, got, raw = self:request("PATCH", path, obj,
    { content_type = ptype or "application/merge-patch+json" })
  return must(code, got, raw, "PATCH " .. path)
end

function Cluster:delete(path, query)
  local code, got, raw = self:request("DELETE", path .. (query or ""))
  return must(code, got, raw, "DELETE " .. path, true)
end

function Cluster:wait(fn, secs, what)
  local deadline = now() + (secs or 30)
  repeat
    local v = fn()
    if v then return v end
    sleep(0.2)
  until now() > deadline
  local v = fn()
  if v then return v end
  error("timed out after " .. (secs or 30) .. " s waiting for " .. (what or "a condition"), 2)
end

-- ---- objects ---------------------------------------------------------------------

function Cluster:namespace(prefix)
  local st = self.st
  st.nns = (st.nns or 0) + 1
  local name = string.format("%s-%d", prefix, st.nns)
  self:create("/api/v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = name } })
  return name
end

function Cluster:node(name, opts)
  opts = opts or {}
  local labels = { ["kubernetes.io/hostname"] = name, ["kubernetes.io/os"] = "linux" }
  for k, v in pairs(opts.labels or {}) do labels[k] = v end
  self:create("/api/v1/nodes", { apiVersion = "v1", kind = "Node",
    metadata = { name = name, labels = labels },
    spec = K.object{ taints = opts.taints, unschedulable = opts.unschedulable } })
  local res = { cpu = opts.cpu or "4", memory = opts.memory or "8Gi", pods = opts.pods or "110" }
  local ready = opts.ready == false and "False" or "True"
  self:patch("/api/v1/nodes/" .. name .. "/status", { status = {
    capacity = res, allocatable = res,
    conditions = { { type = "Ready", status = ready, reason = ready == "True" and "KubeletReady" or "KubeletNotReady",
                     message = "set by the spec harness", lastHeartbeatTime = K.rfc3339(),
                     lastTransitionTime = K.rfc3339() } },
    addresses = { { type = "InternalIP", address = "10.1.0." .. (#(self.st.made or {}) % 250 + 1) },
                  { type = "Hostname", address = name } },
  } })
  return name
end

-- A policy evicting the pods of namespace `ns` that violate NodeTaints (the
-- live specs' plugin: a taint on a node is all a test needs); `extra` is
-- top-level policy text (e.g. "evictionFailureEventNotification: true").
function K.taints_policy(ns, extra)
  return string.format([[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
%s
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: RemovePodsViolatingNodeTaints
    args:
      namespaces:
        include: [%s]
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
]], extra or "", ns)
end

function K.rfc3339(offset_s)
  local t = os.time() + (offset_s or 0)
  return os.date("!%Y-%m-%dT%H:%M:%SZ", t)
end

local function container(opts)
  local req = {}
  if opts.cpu then req.cpu = opts.cpu end
  if opts.memory then req.memory = opts.memory end
  return { name = "app", image = "registry.k8s.io/pause:3.9",
           resources = next(req) and { requests = req } or nil }
end

local function pod_spec(opts)
  return { containers = { container(opts) }, nodeName = opts.node, tolerations = opts.tolerations,
           nodeSelector = opts.node_selector, affinity = opts.affinity,
           topologySpreadConstraints = opts.spread, priorityClassName = opts.priority_class,
           terminationGracePeriodSeconds = opts.grace or 30 }
end

function Cluster:pod(ns, name, opts)
  opts = opts or {}
  local meta = { name = name, namespace = ns, labels = opts.labels, annotations = opts.annotations }
  if opts.owner then
    local o = opts.owner
    meta.ownerReferences = { { apiVersion = o.apiVersion, kind = o.kind, name = o.metadata.name,
                               uid = o.metadata.uid, controller = true, blockOwnerDeletion = true } }
  end
  local pod = self:create("/api/v1/namespaces/" .. ns .. "/pods",
    { apiVersion = "v1", kind = "Pod", metadata = meta, spec = pod_spec(opts) })
  if opts.running then pod = self:set_running(pod) end
  return pod
end

function Cluster:replicaset(ns, name, replicas, opts)
  opts = opts or {}
  local labels = { app = name }
  for k, v in pairs(opts.labels or {}) do labels[k] = v end
  return self:create("/apis/apps/v1/namespaces/" .. ns .. "/replicasets", {
    apiVersion = "apps/v1", kind = "ReplicaSet", metadata = { name = name, namespace = ns, labels = labels },
    spec = { replicas = replicas, selector = { matchLabels = { app = name } },
             template = { metadata = { labels = labels, annotations = opts.annotations },
                          spec = pod_spec(opts) } } })
end

function Cluster:pdb(ns, name, match_labels, spec)
  local s = { selector = { matchLabels = match_labels } }
  for k, v in pairs(spec or {}) do s[k] = v end
  return self:create("/apis/policy/v1/namespaces/" .. ns .. "/poddisruptionbudgets", {
    apiVersion = "policy/v1", kind = "PodDisruptionBudget", metadata = { name = name, namespace = ns },
    spec = s })
end

-- The PDB once the disruption controller has computed its status for the
-- pods there are now (observedGeneration caught up, expectedPods > 0).
function Cluster:wait_pdb(ns, name, pred)
  return self:wait(function()
    local p = self:get("/apis/policy/v1/namespaces/" .. ns .. "/poddisruptionbudgets/" .. name)
    local s = p.status or {}
    if s.observedGeneration == p.metadata.generation and (s.expectedPods or 0) > 0 and
       (pred == nil or pred(s)) then
      return p
    end
  end, 30, "PodDisruptionBudget " .. ns .. "/" .. name .. " status")
end

function Cluster:priority_class(name, value)
  return self:create("/apis/scheduling.k8s.io/v1/priorityclasses", {
    apiVersion = "scheduling.k8s.io/v1", kind = "PriorityClass", metadata = { name = name }, value = value })
end

function Cluster:service_account(ns, name)
  return self:create("/api/v1/namespaces/" .. ns .. "/serviceaccounts",
    { apiVersion = "v1", kind = "ServiceAccount", metadata = { name = name, namespace = ns } })
end

function Cluster:token(ns, sa, opts)
  opts = opts or {}
  local spec = { expirationSeconds = opts.seconds or 3600 }
  if opts.secret then
    local s = self:get("/api/v1/namespaces/" .. ns .. "/secrets/" .. opts.secret)
    spec.boundObjectRef = { apiVersion = "v1", kind = "Secret", name = opts.secret, uid = s.metadata.uid }
  end
  local code, obj, raw = self:request("POST", "/api/v1/namespaces/" .. ns .. "/serviceaccounts/" .. sa .. "/token",
    { apiVersion = "authentication.k8s.io/v1", kind = "TokenRequest", spec = spec })
  return must(code, obj, raw, "TokenRequest " .. ns .. "/" .. sa).status.token
end

function Cluster:write_kubeconfig(path, user, cluster)
  local u = user.token_file and string.format("tokenFile: %s", json.encode(user.token_file))
            or string.format("token: %s", json.encode(user.token))
  local extra, keys = {}, {}
  for k in pairs(cluster or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do extra[#extra + 1] = string.format(", %s: %s", k, json.encode(cluster[k])) end
  write(path, string.format([[
apiVersion: v1
kind: Config
clusters:
- name: spec
  cluster: {server: %s, certificate-authority: %s%s}
users:
- name: spec
  user: {%s}
contexts:
- name: spec
  context: {cluster: spec, user: spec}
current-context: spec
]], json.encode(self.env.APISERVER), json.encode(self.env.CA), table.concat(extra), u))
  return path
end

local function escape(s)
  return (s:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", c:byte()) end))
end
K.escape = escape

function Cluster:pods(ns, selector, which)
  local path = (ns and ("/api/v1/namespaces/" .. ns .. "/pods") or "/api/v1/pods") ..
    (selector and ("?labelSelector=" .. escape(selector)) or "")
  local out = {}
  for _, p in ipairs(self:get(path).items) do
    local term = p.metadata.deletionTimestamp ~= nil
    if which == nil or (which == "bound" and p.spec.nodeName and not term) or
       (which == "pending" and not p.spec.nodeName and not term) or
       (which == "terminating" and term) or (which == "live" and not term) then
      out[#out + 1] = p
    end
  end
  table.sort(out, function(a, b) return a.metadata.name < b.metadata.name end)
  return out
end

-- What a kubelet reports for a started pod.
function Cluster:set_running(pod)
  local t = K.rfc3339(-60)
  return self:patch("/api/v1/namespaces/" .. pod.metadata.namespace .. "/pods/" .. pod.metadata.name .. "/status",
    { status = {
      phase = "Running", startTime = t, podIP = "10.2.0.1", hostIP = "10.1.0.1",
      conditions = { { type = "Initialized", status = "True", lastTransitionTime = t },
                     { type = "Ready", status = "True", lastTransitionTime = t },
                     { type = "ContainersReady", status = "True", lastTransitionTime = t },
                     { type = "PodScheduled", status = "True", lastTransitionTime = t } },
      containerStatuses = { { name = "app", ready = true, started = true, restartCount = 0,
                              image = "registry.k8s.io/pause:3.9", imageID = "", containerID = "containerd://spec",
                              state = { running = { startedAt = t } } } },
    } })
end

function Cluster:run_pods(ns, selector)
  local n = 0
  for _, p in ipairs(self:pods(ns, selector, "bound")) do
    if (p.status or {}).phase ~= "Running" then
      self:set_running(p)
      n = n + 1
    end
  end
  return n
end

function Cluster:finish_terminating(ns)
  local n = 0
  for _, p in ipairs(self:pods(ns, nil, "terminating")) do
    self:delete("/api/v1/namespaces/" .. ns .. "/pods/" .. p.metadata.name, "?gracePeriodSeconds=0")
    n = n + 1
  end
  return n
end

function Cluster:events(ns)
  return self:get("/apis/events.k8s.io/v1/namespaces/" .. ns .. "/events").items
end

-- Delete what the helpers made, newest first. Pods go with no grace period
-- (there is no kubelet to finish them); the namespace controller removes
-- the rest of a namespace.
function Cluster:cleanup(opts)
  local made = self.st.made or {}
  self.st.made = {}
  local nss = {}
  for i = #made, 1, -1 do
    local m = made[i]
    if m.kind == "Namespace" then
      nss[#nss + 1] = m.path
    elseif m.kind == "Pod" then
      self:delete(m.path, "?gracePeriodSeconds=0")
    else
      self:delete(m.path, m.kind == "ReplicaSet" and "?propagationPolicy=Orphan" or nil)
    end
  end
  for _, path in ipairs(nss) do
    local ns = path:match("[^/]+$")
    self:request("DELETE", "/api/v1/namespaces/" .. ns .. "/pods?gracePeriodSeconds=0")
    self:delete(path)
  end
  if opts and opts.wait then
    for _, path in ipairs(nss) do
      self:wait(function() return (self:request("GET", path)) == 404 end, 60, path .. " deleted")
    end
  end
end

-- A CustomResourceDefinition whose objects may hold anything, served once
-- it is Established (for what another component serves: Koordinator's
-- NodeMetric, metrics-server's NodeMetrics). opts: group, version, kind,
-- plural, scope ("Cluster" or "Namespaced").
function Cluster:crd(opts)
  local name = opts.plural .. "." .. opts.group
  local meta = { name = name }
  if opts.group:match("k8s%.io$") or opts.group:match("kubernetes%.io$") then
    -- groups of the Kubernetes project need this to be served
    meta.annotations = { ["api-approved.kubernetes.io"] = "unapproved, test only" }
  end
  self:create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
    apiVersion = "apiextensions.k8s.io/v1", kind = "CustomResourceDefinition", metadata = meta,
    spec = { group = opts.group, scope = opts.scope or "Cluster",
             names = { kind = opts.kind, plural = opts.plural, listKind = opts.kind .. "List",
                       singular = opts.kind:lower() },
             versions = { { name = opts.version, served = true, storage = true,
                            schema = { openAPIV3Schema = { type = "object",
                                       ["x-kubernetes-preserve-unknown-fields"] = true } } } } } })
  return self:wait(function()
    local c = self:get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" .. name)
    for _, cond in ipairs((c.status or {}).conditions or {}) do
      if cond.type == "Established" and cond.status == "True" then return c end
    end
  end, 30, name .. " established")
end

-- ---- the API server process ---------------------------------------------------------

local function apiserver_pid(self)
  return tonumber((read(self.dir .. "/run/kube-apiserver.pid") or ""):match("%d+"))
end

local function alive(pid)
  return pid and os.execute("kill -0 " .. pid .. " 2>/dev/null") == true
end

local function cmdline(pid)
  local raw = assert(read("/proc/" .. tostring(pid) .. "/cmdline"), "process " .. tostring(pid) .. " is not running")
  local args = {}
  for a in raw:gmatch("([^%z]*)%z") do args[#args + 1] = a end
  return args
end

-- SIGTERM to the process of DIR/run/<name>.pid, SIGKILL after `grace`
-- seconds (default 5), as a kubelet stops a pod (kube-apiserver drains its
-- watches for up to a minute); returns its command line.
local function stop_process(self, name, grace)
  local pid = tonumber((read(self.dir .. "/run/" .. name .. ".pid") or ""):match("%d+"))
  local args = cmdline(pid)
  os.execute("kill -TERM " .. pid .. " 2>/dev/null")
  for _ = 1, math.floor((grace or 5) / 0.2) do
    if not alive(pid) then break end
    sleep(0.2)
  end
  if alive(pid) then
    os.execute("kill -KILL " .. pid .. " 2>/dev/null")
    while alive(pid) do sleep(0.1) end
  end
  os.remove(self.dir .. "/run/" .. name .. ".pid")
  return args
end

-- Start `args` as DIR/run/<name>.pid, its output appended to its log
-- (`control-plane down` stops it as it stops the others).
local function start_process(self, name, args)
  local q = {}
  for i, a in ipairs(args) do q[i] = shq(a) end
  os.execute(string.format("nohup %s >>%s 2>&1 </dev/null & echo $! >%s", table.concat(q, " "),
    shq(self.dir .. "/logs/" .. name .. ".log"), shq(self.dir .. "/run/" .. name .. ".pid")))
end

function Cluster:stop_apiserver(grace)
  local args = stop_process(self, "kube-apiserver", grace)
  self.st.apiserver_args = self.st.apiserver_args or args
end

function Cluster:readyz()
  local p = assert(io.popen(string.format("curl -s --max-time 5 --cacert %s -H %s %s/readyz",
    shq(self.env.CA), shq("Authorization: Bearer " .. self.env.TOKEN), self.env.APISERVER)))
  local out = p:read("a")
  p:close()
  return out == "ok"
end

local function flag_name(a)
  return a:match("^(%-%-[^=]+)")
end

-- Start it again with the flags it was started with, plus the extra flags
-- given to this and earlier restarts (opts.extra replaces flags of the
-- same name; opts.without names extra flags to drop); returns once /readyz
-- is ok and (unless opts.settle is false) the controllers work again.
function Cluster:start_apiserver(opts)
  opts = opts or {}
  local extra, without = opts.extra, opts.without
  local st = self.st
  local keep = {}
  local gone = {}
  for _, e in ipairs(extra or {}) do gone[flag_name(e)] = true end
  for _, w in ipairs(without or {}) do gone[w] = true end
  for _, e in ipairs(st.apiserver_extra or {}) do
    if not gone[flag_name(e)] then keep[#keep + 1] = e end
  end
  for _, e in ipairs(extra or {}) do keep[#keep + 1] = e end
  st.apiserver_extra = keep
  local args, drop = {}, {}
  for _, e in ipairs(keep) do drop[flag_name(e)] = true end
  for i, a in ipairs(st.apiserver_args) do
    if i == 1 or not drop[flag_name(a) or ""] then args[#args + 1] = a end
  end
  for _, e in ipairs(keep) do args[#args + 1] = e end
  start_process(self, "kube-apiserver", args)
  local pid = apiserver_pid(self)
  self:wait(function()
    if not alive(pid) then
      error("kube-apiserver exited: " .. (read(self.dir .. "/logs/kube-apiserver.log") or ""):sub(-1500))
    end
    return self:readyz()
  end, 60, "kube-apiserver /readyz")
  if opts.settle ~= false then self:settle() end
end

-- kube-controller-manager and kube-scheduler back off for up to half a
-- minute while the API server is away; started again, they are back at
-- once. A ReplicaSet of one pod then proves both work (the one creates the
-- pod, the other binds it).
function Cluster:settle()
  local have = 0
  for _, name in ipairs({ "kube-controller-manager", "kube-scheduler" }) do
    if read(self.dir .. "/run/" .. name .. ".pid") then
      start_process(self, name, stop_process(self, name, 5))
      have = have + 1
    end
  end
  if have < 2 then return end   -- a control plane without them (K.cluster's options)
  local made = #(self.st.made or {})
  local node = "harness-canary"
  self:node(node)
  self:replicaset("default", node, 1, { node_selector = { ["kubernetes.io/hostname"] = node } })
  self:wait(function() return #self:pods("default", "app=" .. node, "bound") == 1 end, 90,
    "kube-controller-manager and kube-scheduler after the restart")
  self:delete("/apis/apps/v1/namespaces/default/replicasets/" .. node, "?propagationPolicy=Orphan")
  self:request("DELETE", "/api/v1/namespaces/default/pods?gracePeriodSeconds=0&labelSelector=app%3D" .. node)
  self:delete("/api/v1/nodes/" .. node)
  for i = #self.st.made, made + 1, -1 do self.st.made[i] = nil end   -- gone already
end

function Cluster:restart_apiserver(opts)
  opts = opts or {}
  self:stop_apiserver(opts.grace)
  if opts.down then sleep(opts.down) end
  self:start_apiserver(opts)
end

local AUDIT_POLICY = [[
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
]]

function Cluster:audit()
  local st = self.st
  local log = self.dir .. "/logs/audit.log"
  if st.audit then return log end
  write(self.dir .. "/audit-policy.yaml", AUDIT_POLICY)
  self:restart_apiserver{ extra = { "--audit-policy-file=" .. self.dir .. "/audit-policy.yaml",
    "--audit-log-path=" .. log, "--audit-log-format=json", "--audit-log-mode=blocking" } }
  st.audit = true
  return log
end

function Cluster:audit_size()
  local f = io.open(self.dir .. "/logs/audit.log", "rb")
  if not f then return 0 end
  local n = f:seek("end")
  f:close()
  return n
end

function Cluster:audit_events(from, user)
  local f = io.open(self.dir .. "/logs/audit.log", "rb")
  local out = {}
  if not f then return out end
  f:seek("set", from or 0)
  for line in f:lines() do
    local ev = json.decode(line)
    if ev and ev.stage == "ResponseComplete" and (user == nil or (ev.user or {}).username == user) then
      out[#out + 1] = ev
    end
  end
  f:close()
  return out
end

-- ---- etcd -----------------------------------------------------------------------------

local function etcd(self, path, body)
  local p = assert(io.popen(string.format("curl -s --max-time 30 -X POST %s -d %s",
    shq(self.env.ETCD .. path), shq(json.encode(body)))))
  local out = p:read("a")
  p:close()
  return json.decode(out) or {}
end

function Cluster:etcd_revision()
  local r = etcd(self, "/v3/kv/range", { key = "Zm9v" })   -- "foo": any key gives the header
  return tonumber(r.header and r.header.revision)
end

function Cluster:etcd_compact(rev)
  local r = etcd(self, "/v3/kv/compaction", { revision = tostring(rev), physical = true })
  if r.error then error("etcd compaction: " .. tostring(r.error)) end
  return r
end

K.Cluster = Cluster
return K
