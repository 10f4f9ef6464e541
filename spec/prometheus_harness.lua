-- A real Prometheus server for the specs (Debian's `prometheus` package,
-- installed by `make deps`): ONE per busted process, started on 127.0.0.1
-- on first use with the series below backfilled through `promtool tsdb
-- create-blocks-from openmetrics`, and stopped when the process exits.
-- Where prometheus or promtool is missing, the specs that need them are
-- skipped with a message saying so.
--
--   local P = require("spec.prometheus_harness")
--   describe("...", function()
--     if P.skip(pending) then return end
--     local url = P.url()              -- "http://127.0.0.1:PORT"
--     ...  h.simulate{ ..., prometheus_url = url, now = P.NOW }
--   end)
--
-- Every series has a sample each minute over the 30 minutes up to P.NOW
-- (the specs' clock, 2026-11-22T12:00:00Z): an instant query at P.NOW sees
-- the values below. P.down_url() is a URL nothing listens on.
local P = {}

P.NOW = "2026-11-22T12:00:00Z"
local NOW_S = 1795348800   -- P.NOW in seconds since the epoch

-- name -> { {labels, value}, ... }
P.SERIES = {
  -- the nodes of spec/fixtures/utilization.json
  ["instance:node_cpu_utilisation:ratio"] = {
    { { instance = "worker-a-1" }, 0.85 }, { { instance = "worker-a-2" }, 0.6 },
    { { instance = "worker-b-1" }, 0.1 }, { { instance = "worker-b-2" }, 0.4 },
    { { instance = "worker-c-1" }, 0.12 }, { { instance = "worker-c-2" }, 0.05 },
    -- nodes the integration specs make in a real control plane
    { { instance = "prom-n1" }, 0.9 }, { { instance = "prom-n2" }, 0.05 },
  },
  -- worker-c-2 is not scraped
  ["instance:node_memory_utilisation:ratio"] = {
    { { instance = "worker-a-1" }, 0.7 }, { { instance = "worker-a-2" }, 0.3 },
    { { instance = "worker-b-1" }, 0.2 }, { { instance = "worker-b-2" }, 0.2 },
    { { instance = "worker-c-1" }, 0.1 },
  },
  -- a load average: 1.5 on worker-a-1 is no ratio
  ["instance:node_load1_per_cpu:ratio"] = {
    { { instance = "worker-a-1" }, 1.5 }, { { instance = "worker-a-2" }, 0.5 },
    { { instance = "worker-b-1" }, 0.1 }, { { instance = "worker-b-2" }, 0.2 },
    { { instance = "worker-c-1" }, 0.1 }, { { instance = "worker-c-2" }, 0.1 },
  },
  -- a cluster-wide figure: no instance label
  ["cluster:node_cpu:ratio"] = { { { cluster = "main" }, 0.5 } },
}

local shell = require("spec.shell")
local shq, sh, read, write, have = shell.shq, shell.sh, shell.read, shell.write, shell.have

-- Why the specs cannot run here, or nil.
function P.missing()
  for _, b in ipairs({ "prometheus", "promtool", "curl" }) do
    if not have(b) then
      return b .. " is not installed (Debian's prometheus package; `make deps` installs it): "
        .. "the specs against a real Prometheus server are skipped"
    end
  end
end

function P.skip(pending)
  local why = P.missing()
  if why then
    pending(why)
    return true
  end
  return false
end

local free_port = shell.free_port
P.free_port = free_port

local function openmetrics()
  local lines, names = {}, {}
  for name in pairs(P.SERIES) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    lines[#lines + 1] = "# TYPE " .. name .. " gauge"
    for t = NOW_S - 1800, NOW_S, 60 do
      for _, s in ipairs(P.SERIES[name]) do
        local keys, ls = {}, {}
        for k in pairs(s[1]) do keys[#keys + 1] = k end
        table.sort(keys)
        for _, k in ipairs(keys) do ls[#ls + 1] = string.format('%s="%s"', k, s[1][k]) end
        lines[#lines + 1] = string.format("%s{%s} %s %d", name, table.concat(ls, ","),
          tostring(s[2]), t)
      end
    end
  end
  lines[#lines + 1] = "# EOF"
  return table.concat(lines, "\n") .. "\n"
end

-- ---- the one server of the process (kept in the registry: busted reloads
-- modules between spec files) ------------------------------------------------

local REG = debug.getregistry()
local KEY = "ebb.prometheus_harness"

local function teardown(st)
  if st.down then return end
  st.down = true
  os.execute(string.format("kill %d 2>/dev/null; sleep 0.2; rm -rf %s", st.pid, shq(st.dir)))
end

local my_pid = shell.pid

local function start()
  local why = P.missing()
  if why then error(why) end
  local _, dir = sh("mktemp -d /tmp/ebb-prometheus.XXXXXX")
  dir = dir:match("%S+")
  write(dir .. "/data.om", openmetrics())
  local code, out = sh(string.format("cd %s && promtool tsdb create-blocks-from openmetrics data.om tsdb",
    shq(dir)))
  if code ~= 0 then error("promtool could not backfill: " .. out) end
  write(dir .. "/prometheus.yml", "global:\n  scrape_interval: 1h\n")
  local port = free_port()
  local cmd = string.format("cd %s && (prometheus --config.file=prometheus.yml --storage.tsdb.path=tsdb "
    .. "--storage.tsdb.retention.time=100y --web.listen-address=127.0.0.1:%d >log 2>&1 & echo $! >pid)",
    shq(dir), port)
  os.execute(cmd)
  local st = { dir = dir, port = port, pid = tonumber(read(dir .. "/pid")) }
  st.sentinel = setmetatable({}, { __gc = function() teardown(st) end })
  REG[KEY] = st
  -- stop it if this process dies without closing its state
  os.execute(string.format("setsid sh -c %s >/dev/null 2>&1 </dev/null &",
    shq(string.format("while kill -0 %d 2>/dev/null; do sleep 1; done; kill %d 2>/dev/null; rm -rf %s",
      my_pid(), st.pid, shq(dir)))))
  for _ = 1, 300 do
    if os.execute(string.format("curl -sf http://127.0.0.1:%d/-/ready >/dev/null", port)) == true then
      return st
    end
    os.execute("sleep 0.1")
  end
  local log = read(dir .. "/log") or ""
  teardown(st)
  REG[KEY] = nil
  error("prometheus did not become ready in 30 s:\n" .. log:sub(-2000))
end

local function state()
  local st = REG[KEY]
  if st == nil or st.down then st = start() end
  return st
end

-- The server's URL (started on the first call).
function P.url()
  return string.format("http://127.0.0.1:%d", state().port)
end

-- A URL nothing answers on.
function P.down_url()
  return string.format("http://127.0.0.1:%d", free_port())
end

-- What the server answers an instant query at P.NOW (decoded JSON).
function P.query(q)
  local json = require("dkjson")
  local _, out = sh(string.format("curl -s %s/api/v1/query --data-urlencode %s --data-urlencode time=%d",
    P.url(), shq("query=" .. q), NOW_S))
  return json.decode(out)
end

return P
