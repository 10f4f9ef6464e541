-- make bench: the initial sync of a synthetic cluster from a real
-- kube-apiserver (../shared/k8s; skipped with a message where it is
-- missing). The cluster (gen_cluster.py) is created through the API by
-- load_cluster.py; then, best of three each:
--   ebb:     `ebb run --once --dry-run` with a policy that evicts nothing;
--            the sync time is ebb's own ("caches synced in X s": nodes, pods,
--            namespaces, priority classes, PVCs, PDBs, LISTed in pages of
--            500 at once), CPU and peak memory are the process's
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

local ebb = {}
for _ = 1, 3 do
  local r = timed(string.format("%s/ebb run --once --dry-run --policy %s --kubeconfig %s --port 0 --sync-timeout 10m",
    sh(B), sh(dir .. "/quiet.yaml"), sh(cp.kubeconfig)))
  local secs, nodes, pods = r.out:match("caches synced in ([%d.]+) s: (%d+) nodes, (%d+) pods")
  assert(secs, "no sync line: " .. r.out:sub(1, 2000))
  r.sync = tonumber(secs)
  r.what = nodes .. " nodes, " .. pods .. " pods"
  ebb[#ebb + 1] = r
end
local e = best(ebb, "sync")
print(string.format("  ebb run --once: synced %s in %.2f s (process %.2f s, %.2f s CPU, peak RSS %.1f MB)",
  e.what, e.sync, e.wall, e.cpu, e.rss))

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
