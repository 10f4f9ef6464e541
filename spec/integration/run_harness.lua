-- `ebb run` for integration specs: the built binary against `ebb serve`
-- (spec/integration/serve_harness.lua) on 127.0.0.1, each run a process of
-- its own with a scratch directory, a kubeconfig pointing at the server,
-- its stderr in a file, and /metrics on a free port (HTTPS with its
-- self-signed certificate, as ebb serves by default; plain HTTP when the
-- flags hold --plain-http).
--
--   local R = require("spec.integration.run_harness")
--   local run = R.start(srv, { policy = "...yaml text...", "--once" })
--   assert.equal(0, run:wait())
--   assert.matches("evicted pod", run:stderr())
local S = require("spec.integration.serve_harness")
local shell = require("spec.shell")

local R = {}
R.NOW = "2026-11-22T12:00:00Z"

-- The bundled demo cluster, and the policy the `ebb run` specs run on it:
-- PodLifeTime over 7 days, 7 evictions (6 of them with an owner that
-- recreates the pod) and 5 PDB refusals at R.NOW.
R.DEMO = "spec/fixtures/demo-cluster.json"
R.LIFETIME = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 604800
  plugins:
    deschedule:
      enabled: [PodLifeTime]
]]

local Run = {}
Run.__index = Run

-- R.start(srv, opts): srv is `ebb serve` (serve_harness) or a real control
-- plane (k8s_harness: its admin kubeconfig, or opts.kubeconfig);
-- opts.policy (YAML text), opts.policy_file (a path),
-- opts.now (default R.NOW; false for the wall clock), opts.env (a table of
-- environment variables), opts.binary (default build/ebb; build/ebb-test
-- has the test hooks), plus extra flags as array items. /metrics is
-- served on a free port.
function R.start(srv, opts)
  opts = opts or {}
  local dir = S.tmpdir()
  local kubeconfig = opts.kubeconfig or srv.kubeconfig   -- a real control plane's (k8s_harness)
  if not kubeconfig then
    kubeconfig = dir .. "/kubeconfig"
    S.write(kubeconfig, string.format([[
apiVersion: v1
kind: Config
clusters:
- name: serve
  cluster: {server: "%s"}
users:
- name: ebb
  user: {token: "spec-token"}
contexts:
- name: serve
  context: {cluster: serve, user: ebb}
current-context: serve
]], srv.url))
  end
  local policy = opts.policy_file
  if opts.policy then
    policy = dir .. "/policy.yaml"
    S.write(policy, opts.policy)
  end
  -- a free port for /metrics (--port 0 would switch the server off)
  local mport = tostring(shell.free_port())
  -- opts.command == false: no `run`, upstream's way of starting the binary
  local args = { "run", "--kubeconfig", kubeconfig, "--port", mport, "--bind-address", "127.0.0.1" }
  if opts.command == false then table.remove(args, 1) end
  if policy then   -- else the flags name it
    args[#args + 1] = "--policy"
    args[#args + 1] = policy
  end
  if opts.now ~= false then
    args[#args + 1] = "--now"
    args[#args + 1] = opts.now or R.NOW
  end
  for _, a in ipairs(opts) do args[#args + 1] = a end
  local q = {}
  for _, a in ipairs(args) do q[#q + 1] = S.shq(a) end
  -- opts.env: extra environment (POD_NAME, POD_NAMESPACE, ...)
  local env = {}
  for k, v in pairs(opts.env or {}) do env[#env + 1] = k .. "=" .. S.shq(v) end
  table.sort(env)
  os.execute(string.format(
    "(%s %s %s >%s/out 2>%s/err & echo $! >%s/pid; wait $!; echo $? >%s/status) >/dev/null 2>&1 &",
    #env > 0 and ("env " .. table.concat(env, " ")) or "", S.shq(opts.binary or S.EBB), table.concat(q, " "),
    dir, dir, dir, dir))
  local plain = false
  for _, a in ipairs(args) do plain = plain or a == "--plain-http" or a == "--plain-http=true" end
  local run = setmetatable({ dir = dir, scheme = plain and "http" or "https" }, Run)
  run.pid = S.eventually(function() return tonumber((S.read(dir .. "/pid") or ""):match("%d+")) end, 5)
  return run
end

function Run:stderr()
  return S.read(self.dir .. "/err") or ""
end

function Run:status()
  local s = S.read(self.dir .. "/status")
  return s and tonumber(s:match("%d+"))
end

-- Wait for the process to exit (at most `secs`, default 20); its status.
function Run:wait(secs)
  return S.eventually(function() return self:status() end, secs or 20)
end

function Run:kill(signal)
  if self:status() == nil then
    os.execute("kill -" .. (signal or "TERM") .. " " .. self.pid .. " 2>/dev/null")
  end
end

-- Stop (TERM), wait, clean up; the exit status.
function Run:stop()
  self:kill("TERM")
  local st = self:wait(20)
  if st == nil then os.execute("kill -KILL " .. self.pid .. " 2>/dev/null") end
  S.rmdir(self.dir)
  return st
end

-- Wait until stderr matches `pattern`; the match, or nil after `secs`.
function Run:wait_log(pattern, secs)
  return S.eventually(function() return self:stderr():match(pattern) end, secs or 15)
end

-- Every "evicted pod ns/name" the run logged, in order.
function Run:evicted()
  local out = {}
  for key in self:stderr():gmatch("evicted pod ([%w%-%.]+/[%w%-%.]+)") do out[#out + 1] = key end
  return out
end

-- The base URL of ebb's own port (from the log line), or nil.
function Run:url()
  local port = self:wait_log("on 127%.0%.0%.1:(%d+)", 10)
  return port and (self.scheme .. "://127.0.0.1:" .. port)
end

-- GET path on ebb's own port -> status, body (-k: the self-signed
-- certificate; spec/integration/metrics_tls_spec.lua checks it properly).
function Run:http(path)
  local url = self:url()
  if not url then return nil end
  local p = assert(io.popen("curl -sk --max-time 5 -w '\n%{http_code}' " .. url .. path))
  local text = p:read("a")
  p:close()
  local body, code = text:match("^(.*)\n(%d+)$")
  return tonumber(code), body
end

-- /metrics as text (nil when it does not answer).
function Run:metrics()
  local code, text = self:http("/metrics")
  return code == 200 and text or nil
end

-- /readyz: true when ready, else false and what it says.
function Run:ready()
  local code, body = self:http("/readyz")
  return code == 200, body
end

-- GET `path` of the run's HTTP server: status code and body.
Run.get = Run.http

-- The value of one metric series in a /metrics text (nil when absent).
function R.metric(text, name, labels)
  for line in (text or ""):gmatch("[^\n]+") do
    local n, l, v = line:match("^([%w_]+)(%b{}) ([%d%.eE%+%-]+)$")
    if not n then
      n, v = line:match("^([%w_]+) ([%d%.eE%+%-]+)$")
      l = "{}"
    end
    if n == name and (labels == nil or l == labels) then return tonumber(v) end
  end
end

-- Pods the server still has, as "ns/name" (sorted).
function R.pods(srv)
  local list = srv:get("/api/v1/pods")
  local out = {}
  for _, p in ipairs(list.items) do out[#out + 1] = p.metadata.namespace .. "/" .. p.metadata.name end
  table.sort(out)
  return out
end

-- Inside a describe(): what a test starts is stopped after it (busted's
-- hooks are the spec file's, so it hands them over).
--   local T = R.suite(before_each, after_each)
--   T.srv = S.start{ snapshot = ... }; local run = T.start{ policy = ..., "--once" }
-- With `shared`, a real control plane (k8s_harness) kept for the whole file:
-- runs use the wall clock unless opts.now says otherwise, and what a test
-- made in the cluster is cleaned up after it (cp:cleanup()).
--   local start = R.suite(before_each, after_each, K.cluster()).start
function R.suite(before_each, after_each, shared)
  local T = { runs = {}, srv = shared }
  before_each(function() T.runs = {} end)
  after_each(function()
    for _, r in ipairs(T.runs) do r:stop() end
    T.runs = {}
    if shared then
      shared:cleanup()
    else
      if T.srv then T.srv:stop() end
      T.srv = nil
    end
  end)
  function T.start(opts)
    if shared and opts.now == nil then opts.now = false end
    local r = R.start(T.srv, opts)
    T.runs[#T.runs + 1] = r
    return r
  end
  return T
end

-- A sorted copy of a list.
function R.sorted(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  return c
end

-- The items of `all` that are not in `gone`, in order.
function R.without(all, gone)
  local g, out = {}, {}
  for _, k in ipairs(gone) do g[k] = true end
  for _, k in ipairs(all) do if not g[k] then out[#out + 1] = k end end
  return out
end

R.S = S
return R
