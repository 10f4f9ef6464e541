-- Shared by the busted specs: run the engine (the real C core and sandbox,
-- loaded as the ebb_core module) on fixtures and look at the plan as data.
local core = require("ebb_core")
local S = require("spec.shell")
-- busted's assert in a spec file; this module's own `assert` is Lua's
local luassert = require("luassert")
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
--             seed=, interval= }
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
    interval = o.interval,
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

-- A temporary directory holding Lua plugin files { ["x.lua"] = source };
-- h.rmdir(dir) removes it.
function H.plugin_dir(files)
  local dir = S.tmpdir()
  for name, src in pairs(files) do S.write(dir .. "/" .. name, src) end
  return dir
end

H.rmdir = S.rmdir

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
  S.write(script, "local h = require('spec.helpers')\n" ..
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
  local text = S.read(out) or ""
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

-- A bin-packing kube-scheduler (a KubeSchedulerConfiguration: MostAllocated,
-- weighed over spreading), for what-ifs where the scheduler and a
-- descheduler that spreads pods undo each other.
H.PACKING_SCHEDULER = [[
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: NodeResourcesFit, weight: 5}]
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
]]

-- code_blocks(markdown) -> { {lang=, file=, body=}, ... }: the fenced
-- blocks of a page, in order; `file` from an info string's "file=NAME"
function H.code_blocks(text)
  local out = {}
  for info, body in text:gmatch("\n```([^\n]*)\n(.-)\n```") do
    local lang, attrs = info:match("^(%S*)%s*(.*)$")
    out[#out + 1] = { lang = lang, file = attrs:match("file=(%S+)"), body = body .. "\n" }
  end
  return out
end

-- run_doc_examples(blocks, fixture) -> how many commands ran: a doc page's
-- worked example kept true. The samples with a file= (the policies it
-- shows) are written into a scratch directory, with `fixture` (the snapshot
-- the page names) copied in; each ```console block's "$ ebb ..." runs there
-- and must print the ```text block that follows it (trailing blanks of
-- table columns are not part of what the page promises).
function H.run_doc_examples(blocks, fixture)
  local ebb = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
  if ebb:sub(1, 1) ~= "/" then ebb = S.cwd() .. "/" .. ebb end
  local function trim(text)
    return (text:gsub("[ \t]+\n", "\n"):gsub("\n+$", "\n"))
  end
  local dir = S.tmpdir()
  local ran = 0
  assert(os.execute("cp " .. S.shq(fixture) .. " " .. S.shq(dir)))
  for i, b in ipairs(blocks) do
    if b.file then
      S.write(dir .. "/" .. b.file, b.body)
    end
    if b.lang == "console" then
      local cmd = assert(b.body:match("^%$ ebb (.-)\n"), "a console block starts with $ ebb")
      local _, out = S.sh(string.format("cd %s && %s %s", S.shq(dir), S.shq(ebb), cmd))
      local want = blocks[i + 1]
      luassert.equal("text", want.lang, "a console block is followed by its output")
      luassert.equal(trim(want.body), trim(out))
      ran = ran + 1
    end
  end
  S.rmdir(dir)
  return ran
end

-- only(ns...) -> the args' { include = { ns... } } namespaces filter
function H.only(...)
  return { include = H.array{ ... } }
end

-- h.bad_args{ plugin=, snapshot=, ext= ("deschedule"), profile= ("test"),
--             field= ("profiles[0].pluginConfig[0].args"), words= (""),
--             after= { policy lines after the plugin's args }, enabled= (plugin) }
-- -> policy, fails
-- policy(args_yaml): a policy in which `plugin`'s args are args_yaml, whose
-- first line is line 8 of the text; the `after` lines follow (another
-- plugin's config), and the profile enables `enabled` at `ext`.
-- fails(args_yaml, line, field, words): that policy does not load, and the
-- message names line `line`, the field o.field .. field and says o.words .. words.
function H.bad_args(o)
  local enabled = o.enabled or o.plugin
  local prefix = o.field or "profiles[0].pluginConfig[0].args"
  local function policy(args_yaml)
    local lines = {
      "apiVersion: descheduler/v1alpha2",
      "kind: DeschedulerPolicy",
      "profiles:",
      "- name: " .. (o.profile or "test"),
      "  pluginConfig:",
      "  - name: " .. o.plugin,
      "    args:",
      args_yaml,
    }
    for _, l in ipairs(o.after or {}) do lines[#lines + 1] = l end
    for _, l in ipairs({ "  plugins:", "    " .. (o.ext or "deschedule") .. ":",
                         "      enabled: [" .. enabled .. "]", "" }) do
      lines[#lines + 1] = l
    end
    return table.concat(lines, "\n")
  end
  local function fails(args_yaml, line, field, words)
    local plan, msg = H.try{ snapshot = o.snapshot, policy_text = policy(args_yaml) }
    luassert.is_nil(plan)
    luassert.is_truthy(msg:find(":" .. line .. ": ", 1, true), msg)
    luassert.is_truthy(msg:find(prefix .. field .. ": ", 1, true), msg)
    luassert.is_truthy(msg:find((o.words or "") .. words, 1, true), msg)
  end
  return policy, fails
end

-- h.bad_plugin{ budget=, mem=, limits=, others_only= }
-- -> run(body [, { top=, budget=, mem= }])
-- run: a plugin "Bad" whose deschedule runs `body` (after `top` at file
-- load, with `ebb` required), then a well-behaved PodLifeTime (60 s) in the
-- same profile, on spec/fixtures/kubectl-list.json, with the time budget
-- and memory cap given (run's own over the defaults). With `limits`, in a
-- child bounded by them (h.bounded). Asserts that Bad failed, alone, and
-- that PodLifeTime still evicted (with `others_only`, that it alone did:
-- Bad evicted nothing before it failed); returns Bad's error message and
-- the plan.
function H.bad_plugin(defaults)
  return function(body, o)
    o = o or {}
    local dir = H.plugin_dir{ ["bad.lua"] = (o.top or "") .. [[
      local ebb = require("ebb")
      return { name = "Bad", deschedule = function(ctx, nodes)
      ]] .. body .. [[
      end }
    ]] }
    local args = {
      snapshot = "spec/fixtures/kubectl-list.json", policy_dirs = { dir },
      plugins = { { name = "Bad" }, { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } } },
      time_budget_ms = o.budget or defaults.budget, mem_limit = o.mem or defaults.mem,
    }
    local plan, msg
    if defaults.limits then
      plan, msg = H.bounded("simulate", args, defaults.limits)
    else
      plan, msg = H.try(args)
    end
    H.rmdir(dir)
    assert(plan, msg)
    luassert.equal(1, #plan.errors, "one plugin error expected")
    luassert.equal("Bad", plan.errors[1].plugin)
    luassert.is_true(#plan:pods() > 0, "the other plugin ran")
    if defaults.others_only then
      for _, e in ipairs(plan.evictions) do luassert.equal("PodLifeTime", e.plugin) end
    end
    return plan.errors[1].message, plan
  end
end

return H
