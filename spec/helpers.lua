-- Shared by the busted specs: run the engine (the real C core and sandbox,
-- loaded as the ebb_core module) on fixtures and look at the plan as data.
local core = require("ebb_core")
-- Plugin failures are asserted from the plan; keep the log quiet unless asked.
core.log_level(os.getenv("EBB_LOG") or "off")

local H = {}

H.NOW = "2026-11-22T12:00:00Z"

local Plan = {}
Plan.__index = Plan

-- plan:pods() -> { "ns/name", ... } evicted, in order
function Plan:pods()
  local out = {}
  for _, e in ipairs(self.evictions) do out[#out + 1] = e.pod end
  return out
end

-- plan:refused(why) -> { "ns/name", ... } refused (for `why`, or all)
function Plan:refused(why)
  local out = {}
  for _, r in ipairs(self.refusals) do
    if why == nil or r.why == why then out[#out + 1] = r.pod end
  end
  return out
end

-- plan:note_messages() -> { message, ... } of the plan's notes, in order
function Plan:note_messages()
  local out = {}
  for _, n in ipairs(self.notes) do out[#out + 1] = n.message end
  return out
end

-- plan:reasons() -> { reason, ... } of the evictions, in order
function Plan:reasons()
  local out = {}
  for _, e in ipairs(self.evictions) do out[#out + 1] = e.reason end
  return out
end

function Plan:node(name)
  for _, n in ipairs(self.nodes) do
    if n.name == name then return n end
  end
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- A policy with one profile enabling `plugin` at its extension point, with
-- `args` (a Lua table, written as JSON, which YAML reads too).
local json_encode

local function is_array(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t and (n > 0 or getmetatable(t) == H.ARRAY)
end

H.ARRAY = {}
function H.array(t) return setmetatable(t or {}, H.ARRAY) end

json_encode = function(v)
  local t = type(v)
  if t == "table" then
    local parts = {}
    if is_array(v) then
      for _, x in ipairs(v) do parts[#parts + 1] = json_encode(x) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do
      parts[#parts + 1] = string.format("%q", k) .. ":" .. json_encode(v[k])
    end
    return "{" .. table.concat(parts, ",") .. "}"
  elseif t == "string" then
    return string.format("%q", v)
  elseif t == "nil" then
    return "null"
  end
  return tostring(v)
end
H.json = json_encode

function H.policy(o)
  local exts = o.exts or {}
  local plugins, configs = {}, {}
  local function add(name, args)
    configs[#configs + 1] = { name = name, args = args }
  end
  if o.evictor then add("DefaultEvictor", o.evictor) end
  for _, p in ipairs(o.plugins or {}) do
    add(p.name, p.args)
    local ext = p.ext or "deschedule"
    plugins[ext] = plugins[ext] or { enabled = {} }
    table.insert(plugins[ext].enabled, p.name)
  end
  local doc = {
    apiVersion = "descheduler/v1alpha2",
    kind = "DeschedulerPolicy",
    profiles = { { name = o.profile or "test", pluginConfig = configs, plugins = plugins } },
  }
  for k, v in pairs(o.top or {}) do doc[k] = v end
  return json_encode(doc)
end

-- h.simulate{ snapshot=, plugin=, args=, ext=, evictor=, top=, policy_text=,
--             policy=, policy_dirs=, now=, cycles=, prometheus_url=, feature_gates=,
--             reschedule=, scheduler_config=, scheduler_config_text=, scheduler_version=,
--             seed= }
-- -> Plan (raises on error); with reschedule, plan.whatif holds the what-if record
function H.simulate(o)
  local policy_text = o.policy_text
  if o.policy == nil and policy_text == nil then
    policy_text = H.policy{
      evictor = o.evictor,
      plugins = o.plugins or { { name = o.plugin, args = o.args, ext = o.ext } },
      top = o.top,
    }
  end
  local plan, msg = core.simulate{
    snapshot = o.snapshot,
    snapshot_text = o.snapshot_text,
    policy = o.policy,
    policy_text = policy_text,
    policy_dirs = o.policy_dirs,
    now = o.now or H.NOW,
    cycles = o.cycles,
    mem_limit = o.mem_limit,
    time_budget_ms = o.time_budget_ms,
    prometheus_url = o.prometheus_url,
    feature_gates = o.feature_gates,
    prometheus_token_file = o.prometheus_token_file,
    reschedule = o.reschedule,
    scheduler_config = o.scheduler_config,
    scheduler_config_text = o.scheduler_config_text,
    scheduler_version = o.scheduler_version,
    seed = o.seed,
  }
  if plan == nil then error(msg, 2) end
  return setmetatable(plan, Plan)
end

-- Like simulate, but returns nil, message, error record on bad input.
function H.try(o)
  local ok, res = pcall(H.simulate, o)
  if ok then return res end
  return nil, res
end

function H.check(o)
  return core.check{
    policy = o.policy,
    policy_text = o.policy_text,
    policy_dirs = o.policy_dirs,
    mem_limit = o.mem_limit,
    time_budget_ms = o.time_budget_ms,
  }
end

-- A temporary directory holding Lua plugin files { ["x.lua"] = source }.
function H.plugin_dir(files)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  for name, src in pairs(files) do write(dir .. "/" .. name, src) end
  return dir
end

function H.rmdir(dir)
  os.execute("rm -rf '" .. dir .. "'")
end

-- A Lua value (plain data: tables, strings, numbers, booleans) as a Lua
-- expression that load() reads back.
local function serialize(v)
  local t = type(v)
  if t == "table" then
    local parts = {}
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do
      parts[#parts + 1] = "[" .. serialize(k) .. "]=" .. serialize(v[k])
    end
    return "{" .. table.concat(parts, ",") .. "}"
  elseif t == "string" then
    return string.format("%q", v)
  elseif t == "number" then
    return string.format(math.type(v) == "integer" and "%d" or "%.17g", v)
  end
  return tostring(v)
end
H.serialize = serialize

-- h.bounded(fn_name, o, limits) -> what h[fn_name](o) returns (two values at
-- most), or nil, message when it raised. Calls h[fn_name](o) in a child process bounded in time (limits.seconds,
-- default 60) and address space (limits.mb, default 2048): a hostile case
-- that wedges or floods the engine fails its spec instead of hanging the
-- suite or the machine. The result comes back as data; a raised error
-- comes back as nil, message. A third value is the child's peak resident
-- memory in KiB (VmHWM), when it finished.
function H.bounded(fn_name, o, limits)
  limits = limits or {}
  local script = os.tmpname()
  local out = os.tmpname()
  write(script, "local h = require('spec.helpers')\n" ..
    "local ok, a, b = pcall(h[" .. serialize(fn_name) .. "], " .. serialize(o) .. ")\n" ..
    "local f = assert(io.open(" .. serialize(out) .. ", 'w'))\n" ..
    "if not ok then a = tostring(a) end\n" ..
    "local st = io.open('/proc/self/status')\n" ..
    "local hwm = st and tonumber(st:read('a'):match('VmHWM:%s*(%d+)'))\n" ..
    "if st then st:close() end\n" ..
    "f:write('return ', h.serialize({ ok = ok, a = a, b = b, hwm = hwm }))\n" ..
    "f:close()\n")
  local cmd = string.format("timeout -s KILL %d sh -c 'ulimit -v %d; exec lua5.4 %s' >/dev/null 2>&1",
    limits.seconds or 60, (limits.mb or 2048) * 1024, script)
  local _, _, code = os.execute(cmd)
  local f = io.open(out)
  local text = f and f:read("a") or ""
  if f then f:close() end
  os.remove(script)
  os.remove(out)
  if text == "" then
    return nil, string.format("the engine did not finish within %d s and %d MB (exit %s)",
      limits.seconds or 60, limits.mb or 2048, tostring(code))
  end
  local r = load(text)()
  if not r.ok then return nil, r.a, r.hwm end
  if type(r.a) == "table" and r.a.evictions then setmetatable(r.a, Plan) end
  return r.a, r.b, r.hwm
end

return H
