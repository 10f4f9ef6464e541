-- make bench: the initial sync of a synthetic cluster from a real
-- kube-apiserver (../shared/k8s; skipped with a message where it is
-- missing). The cluster (gen_cluster.py) is created through the API by
-- load_cluster.py; then, best of three each:
--   ebb:     `ebb run --once --dry-run` with a policy that evicts nothing;
--            the sync time is ebb's own ("caches synced in X s": nodes, pods,
--            namespaces, priority classes, PVCs, PDBs, all at once), CPU and
--            peak memory are the process's, and the API server's peak RSS
--            during that run (its VmHWM, reset before each run through
--            /proc/PID/clear_refs where this user may). Both ways:
--            --sync-mode=list (paged LIST, 500 a page) and
--            --sync-mode=watchlist (the streaming list, a WATCH with
--            sendInitialEvents). An API server with its watch cache on an
--            etcd without progress requests (etcd < 3.4.31, as Debian's
--            3.4.23) refuses the streaming list; it is measured then with
--            the watch cache off (--watch-cache=false, served from etcd),
--            and paged LIST both with and without the watch cache; paged
--            LIST also with disable-compression (answers not gzip-encoded).
--   kubectl: `kubectl get pods -A -o json` (pods only, pages of 500), or
--            where kubectl is missing, curl making the same requests
-- Usage: lua5.4 spec/bench/k8s_sync.lua BUILD_DIR SNAPSHOT
package.path = "./?.lua;./lua/?.lua;" .. package.path
local K = require("spec.integration.k8s_harness")
local shell = require("spec.shell")

local B, SNAP = arg[1] or "build", arg[2]
local sh = shell.shq
local run = shell.sh

local why = K.missing()
if why then
  print("== initial sync from kube-apiserver: skipped (" .. why .. ")")
  return
end
assert(SNAP, "usage: k8s_sync.lua BUILD_DIR SNAPSHOT")

print("== initial sync from kube-apiserver: " .. SNAP)
-- no controllers, no scheduler: the pods' owners are not in the API (the
-- garbage collector would delete them) and they are bound already
local cp = K.cluster{ controllers = false, scheduler = false }
local code, out = run(string.format("python3 spec/bench/load_cluster.py %s %s %s %s",
  sh(SNAP), sh(cp.env.APISERVER), sh(cp.env.TOKEN), sh(cp.env.CA)))
if code ~= 0 then error("load_cluster.py: " .. out) end
local loaded = {}
for n, kind in out:gmatch("loaded (%d+) (%a+)") do loaded[#loaded + 1] = n .. " " .. kind end
print(string.format("  loaded through the API in %s s: %s", out:match("([%d.]+)%s*$"), table.concat(loaded, ", ")))

local dir = cp.dir
shell.write(dir .. "/quiet.yaml", [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: quiet
  pluginConfig:
  - name: DefaultEvictor
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 999999999}
  plugins:
    deschedule:
      enabled: [PodLifeTime]
]])

-- GNU time: elapsed, user, system seconds, peak RSS (KB)
local TIME = "/usr/bin/time -f 'time: %e %U %S %M'"

local function timed(cmd)
  local c, o = run(TIME .. " " .. cmd)
  if c ~= 0 then error(cmd .. ": " .. o) end
  local e, u, s, m = o:match("time: ([%d.]+) ([%d.]+) ([%d.]+) (%d+)")
  return { wall = tonumber(e), cpu = tonumber(u) + tonumber(s), rss = tonumber(m) / 1024, out = o }
end

local function best(list, key)
  table.sort(list, function(a, b) return a[key] < b[key] end)
  return list[1]
end

-- The API server's resident memory now and at its peak (MB), and a reset
-- of the peak (false where /proc/PID/clear_refs is not writable).
local function apiserver_pid()
  return tonumber((shell.read(dir .. "/run/kube-apiserver.pid") or ""):match("%d+"))
end
local function apiserver_rss()
  local st = shell.read("/proc/" .. apiserver_pid() .. "/status") or ""
  return tonumber(st:match("VmRSS:%s*(%d+)") or 0) / 1024, tonumber(st:match("VmHWM:%s*(%d+)") or 0) / 1024
end
local function reset_peak()
  local f = io.open("/proc/" .. apiserver_pid() .. "/clear_refs", "w")
  if not f then return false end
  local ok = f:write("5")
  f:close()
  return ok and true or false
end

-- What the API server spent so far, from its /metrics: bytes its Go heap
-- allocated and CPU seconds.
local function apiserver_spent()
  local c, text = run(string.format("curl -sf --cacert %s -H %s %s", sh(cp.env.CA),
    sh("Authorization: Bearer " .. cp.env.TOKEN), sh(cp.env.APISERVER .. "/metrics")))
  if c ~= 0 then return 0, 0 end
  return tonumber(text:match("\ngo_memstats_alloc_bytes_total ([%d%.e%+]+)") or 0),
    tonumber(text:match("\nprocess_cpu_seconds_total ([%d%.e%+]+)") or 0)
end

-- An admin kubeconfig with disable-compression: answers not gzip-encoded.
local plain_kc = cp:write_kubeconfig(dir .. "/kubeconfig-identity", { token = cp.env.TOKEN },
  { ["disable-compression"] = true })

-- best of three `ebb run --once` syncs in this mode (kubeconfig: the
-- admin's, or plain_kc)
local function ebb_sync(mode, kubeconfig)
  local runs = {}
  for _ = 1, 3 do
    local before = apiserver_rss()
    local reset = reset_peak()
    local alloc0, cpu0 = apiserver_spent()
    local r = timed(string.format("%s/ebb run --once --dry-run --policy %s --kubeconfig %s --port 0 " ..
      "--sync-timeout 10m --sync-mode %s", sh(B), sh(dir .. "/quiet.yaml"), sh(kubeconfig or cp.kubeconfig), mode))
    local secs, nodes, pods = r.out:match("caches synced in ([%d.]+) s: (%d+) nodes, (%d+) pods")
    assert(secs, "no sync line: " .. r.out:sub(1, 2000))
    local how = r.out:match("caches synced in [^\n]-%((streaming list: [^\n]-)%)")
    local wire = r.out:match("caches synced in [^\n]-; (answers [%d.]+ MB, [%d.]+ MB received)")
    how = how and wire and how .. "; " .. wire or how
    r.sync = tonumber(secs)
    r.what = nodes .. " nodes, " .. pods .. " pods"
    r.how = how
    local _, peak = apiserver_rss()
    local alloc1, cpu1 = apiserver_spent()
    r.api_before, r.api_peak, r.api_reset = before, peak, reset
    r.api_alloc, r.api_cpu = (alloc1 - alloc0) / 1048576, cpu1 - cpu0
    runs[#runs + 1] = r
  end
  local e = best(runs, "sync")
  print(string.format("    --sync-mode=%-9s%s synced %s in %.2f s (process %.2f s, %.2f s CPU, peak RSS %.1f MB); " ..
    "kube-apiserver: peak RSS %.0f MB%s (%.0f MB before), %.0f MB allocated, %.2f s CPU", mode,
    kubeconfig and " (disable-compression)" or "", e.what, e.sync,
    e.wall, e.cpu, e.rss, e.api_peak, e.api_reset and "" or " since its start", e.api_before, e.api_alloc, e.api_cpu))
  print("      " .. (e.how or "?"))
  return e
end

print("  ebb run --once --dry-run, kube-apiserver with its watch cache (the default):")
local e = ebb_sync("list")
ebb_sync("list", plain_kc)
local have_kubectl = os.execute("command -v kubectl >/dev/null 2>&1") == true
local kc = {}
for _ = 1, 3 do
  local r
  if have_kubectl then
    r = timed(string.format("sh -c %s", sh(string.format("kubectl --kubeconfig %s get pods -A -o json >/dev/null",
      sh(cp.kubeconfig)))))
  else
    -- what kubectl asks: GET /api/v1/pods?limit=500, then each continue token
    r = timed(string.format("sh -c %s", sh(string.format(
      [[c=; while :; do curl -sf --cacert %s -H 'Authorization: Bearer %s' -H 'Accept: application/json' ]] ..
      [["%s/api/v1/pods?limit=500${c:+&continue=$c}" >%s/page.json || exit 1; ]] ..
      [[c=$(python3 -c 'import json,sys,urllib.parse; print(urllib.parse.quote(json.load(open(sys.argv[1]))["metadata"].get("continue","")))' %s/page.json); ]] ..
      [=[[ -n "$c" ] || break; done]=], cp.env.CA, cp.env.TOKEN, cp.env.APISERVER, dir, dir))))
  end
  kc[#kc + 1] = r
end
local k = best(kc, "wall")
print(string.format("  %s: %.2f s (%.2f s CPU, peak RSS %.1f MB)",
  have_kubectl and "kubectl get pods -A -o json" or "curl, kubectl's requests (kubectl is not installed)",
  k.wall, k.cpu, k.rss))
print(string.format("  ebb's sync / kubectl's pod list: x%.2f", e.sync / k.wall))

-- the streaming list, served by etcd: the API server without its watch cache
cp:restart_apiserver{ extra = { "--watch-cache=false" }, settle = false }
print("  ebb run --once --dry-run, kube-apiserver --watch-cache=false:")
local wl = ebb_sync("watchlist")
local li = ebb_sync("list")
ebb_sync("list", plain_kc)
print(string.format("  streaming list / paged LIST: sync x%.2f, ebb CPU x%.2f, ebb peak RSS x%.2f, " ..
  "kube-apiserver peak RSS x%.2f, allocated x%.2f, CPU x%.2f", wl.sync / li.sync, wl.cpu / li.cpu, wl.rss / li.rss,
  wl.api_peak / li.api_peak, wl.api_alloc / li.api_alloc, wl.api_cpu / li.api_cpu))
