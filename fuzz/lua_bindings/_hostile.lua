-- Hostile values for the engine's bindings, made inside the sandbox: tables
-- whose metamethods answer differently on each call, raise or yield, huge,
-- negative and NaN lengths, deep, cyclic and sparse tables, callbacks that
-- misbehave (raise, yield, loop, change the object they are called on),
-- coroutines, and the engine's own objects where another one is expected.
--
-- Shared by the libFuzzer target fuzz/lua_bindings.c (the programs it
-- generates call these; they run through fuzz_strategy.lua and
-- fuzz_evictor.lua in this directory) and by spec/lua/hostile_values_spec.lua.
--
-- What the engine must do with a script's values is read them raw, once:
-- no metamethod of an argument may run while a binding (a C function) runs.
-- H.call(name, f, ...) calls a binding with H.native = name; a metamethod
-- of a value made here that fires meanwhile was called by the engine, and
-- is recorded in H.hits["name: __index"] (and handed to H.report). Callbacks
-- made by H.cb are the script's own code: H.native is nil while they run.
local ebb = require("ebb")

local H = {
  ebb = ebb,
  count = 0,         -- metamethod calls on values made here, by anyone
  hits = {},         -- ["binding: event"] = calls made while the binding ran
  nhits = 0,         -- distinct keys of hits
  native = nil,      -- the binding running (H.call), nil while Lua runs
  errors = {},       -- [binding] = the last error it raised
  V = {},            -- the generated program's slots
  report = nil,      -- function(text): once per distinct hit or wrong result
  -- a PodList longer than this is a wrong answer whatever made it (every
  -- pod of a fixture many times over: what a negative or huge length gives)
  max_list = 1 << 20,
}

local function note(text)
  if H.report then H.report(text) end
end

-- A metamethod of a hostile value fired.
local function hit(event)
  H.count = H.count + 1
  local b = H.native
  if b ~= nil then
    local k = b .. ": " .. event
    local n = H.hits[k]
    if n == nil then
      H.nhits = H.nhits + 1
      note("the engine called " .. event .. " of an argument in " .. b)
    end
    H.hits[k] = (n or 0) + 1
  end
end
H.hit = hit

-- ---- values ---------------------------------------------------------------

-- n distinct strings "v1".."vn" (or n copies of v) in a list
function H.big(n, v)
  local t = {}
  for i = 1, n do t[i] = v == nil and ("v" .. i) or v end
  return t
end

-- a map of n keys "k1".."kn" to v (default "v")
function H.bigmap(n, v)
  local t = {}
  for i = 1, n do t["k" .. i] = v == nil and "v" or v end
  return t
end

-- n nested tables; inner is the innermost value
function H.deep(n, inner)
  local t = inner == nil and {} or inner
  for _ = 1, n do t = { t, x = t } end
  return t
end

-- a table that holds itself, as a list item and under common field names
function H.cyc()
  local t = {}
  t[1], t.t, t.metadata, t.matchLabels, t.labels, t.spec = t, t, t, t, t, t
  return t
end

-- a list with a hole and a far index: its length is any border
function H.sparse(n)
  return { 1, nil, 3, [n or 1000000] = 4, [0] = 0, [-1] = -1 }
end

-- A table whose lookups of `key` answer a, then b, then a ... (raw: empty):
-- the first read and the second read of one field differ.
function H.flip(key, a, b)
  local n = 0
  return setmetatable({}, {
    __index = function(_, k)
      hit("__index")
      if k ~= key then return nil end
      n = n + 1
      if n % 2 == 1 then return a end
      return b
    end,
  })
end

-- Metamethod behaviours, by name (or number, as the fuzzer picks them).
local HOW = { "count", "flip", "raise", "yield", "mutate", "huge", "neg", "nan", "wrongtype", "reenter" }
H.HOW = HOW

-- What each behaviour answers for __len, call after call.
local function len_answer(how, t, n)
  if how == "flip" then
    local v = { 1, 1 << 61, -1, 0, math.maxinteger, 2 ^ 31 }
    return v[(n - 1) % #v + 1]
  elseif how == "huge" then return 1 << 61
  elseif how == "neg" then return -1
  elseif how == "nan" then return 0 / 0
  elseif how == "wrongtype" then return "12"
  end
  return rawlen(t)
end

local function index_answer(how, t, k, n)
  if how == "flip" then
    if n % 3 == 1 then return { k = "v" } end
    if n % 3 == 2 then return H.bigmap(1000) end
    return "flipped"
  elseif how == "huge" then return string.rep("x", 1 << 20)
  elseif how == "neg" then return -1
  elseif how == "nan" then return 0 / 0
  elseif how == "wrongtype" then return H.pod(1) or print
  end
  return nil
end

-- Set metamethods on t that behave as `how`; `mask` picks which (bits in
-- the order of MM below; default all). Returns t.
local MM = { "__index", "__len", "__pairs", "__eq", "__lt", "__le", "__tostring", "__call",
             "__concat", "__newindex", "__name", "__close", "__unm", "__metatable" }
H.MM = MM

function H.meta(t, how, mask)
  if type(how) == "number" then how = HOW[(how - 1) % #HOW + 1] end
  mask = mask or -1
  local calls = 0
  local mt = {}
  local function on(i) return mask & (1 << (i - 1)) ~= 0 end
  local function act(event, ...)
    calls = calls + 1
    hit(event)
    if how == "raise" then error(event .. " raised", 2) end
    if how == "yield" then return coroutine.yield(event) end
    if how == "mutate" then
      -- the table changes under whoever reads it: keys appear and go
      for i = 1, 64 do rawset(t, "m" .. calls .. "_" .. i, i) end
      for i = rawlen(t), 1, -1 do rawset(t, i, nil) end
    end
    if how == "reenter" and H.again then H.again() end
    return calls
  end
  if on(1) then mt.__index = function(tab, k) local n = act("__index", k); return index_answer(how, tab, k, n) end end
  if on(2) then mt.__len = function(tab) local n = act("__len"); return len_answer(how, tab, n) end end
  if on(3) then
    mt.__pairs = function(tab)
      local n = act("__pairs")
      if how == "flip" and n % 2 == 0 then
        local i = 0
        return function() i = i + 1; if i <= 1000 then return "p" .. i, "v" end end, tab, nil
      end
      return next, tab, nil
    end
  end
  if on(4) then mt.__eq = function() return act("__eq") % 2 == 0 end end
  if on(5) then mt.__lt = function() return act("__lt") % 2 == 0 end end
  if on(6) then mt.__le = function() return act("__le") % 2 == 1 end end
  if on(7) then
    mt.__tostring = function()
      local n = act("__tostring")
      if how == "huge" then return string.rep("t", 1 << 20) end
      if how == "wrongtype" then return {} end
      if how == "flip" then return n % 2 == 0 and "a\0b" or "\xff\xfe" end
      return "hostile"
    end
  end
  if on(8) then mt.__call = function() return act("__call") end end
  if on(9) then mt.__concat = function() act("__concat"); return "c" end end
  if on(10) then mt.__newindex = function(tab, k, v) act("__newindex"); rawset(tab, k, v) end end
  if on(11) then mt.__name = (how == "flip") and "ebb.seq" or "ebb.Pod" end
  if on(12) then mt.__close = function() act("__close") end end
  if on(13) then mt.__unm = function() return act("__unm") end end
  if on(14) then mt.__metatable = (how == "flip") and "ebb.seq" or "ebb.map" end
  return setmetatable(t, mt)
end

-- A table with counting metamethods for what it lacks: raw reads see its
-- data as it is, so an engine that reads raw never calls them (the count
-- stays 0) and gets the right answer.
function H.counted(t)
  return setmetatable(t, {
    __index = function() hit("__index") end,
    __len = function(tab) hit("__len"); return rawlen(tab) end,
    __pairs = function(tab) hit("__pairs"); return next, tab, nil end,
    __eq = function() hit("__eq"); return false end,
    __lt = function() hit("__lt"); return false end,
    __le = function() hit("__le"); return false end,
    __tostring = function() hit("__tostring"); return "counted" end,
    __call = function() hit("__call") end,
    __concat = function() hit("__concat"); return "" end,
    __newindex = function(tab, k, v) hit("__newindex"); rawset(tab, k, v) end,
  })
end

-- ---- callbacks and coroutines -----------------------------------------------

local CB = { "true", "false", "nil", "alternate", "raise", "raise-table", "yield", "spin",
             "append", "reenter", "evict", "hostile", "many", "sort-again" }
H.CB = CB

-- A function for a binding to call (a `where`, a sort order, a taint
-- filter). While it runs H.native is nil: it is the script's own code.
function H.cb(how)
  if type(how) == "number" then how = CB[(how - 1) % #CB + 1] end
  local calls = 0
  return function(a, b)
    local saved = H.native
    H.native = nil
    calls = calls + 1
    local r
    if how == "true" then r = true
    elseif how == "false" then r = false
    elseif how == "alternate" then r = calls % 2 == 0
    elseif how == "raise" then error("callback raised")
    elseif how == "raise-table" then error(setmetatable({}, { __tostring = function() return "x" end }))
    elseif how == "yield" then r = coroutine.yield(a)
    elseif how == "spin" then while true do end
    elseif how == "append" then
      -- change the list the binding is walking
      local l = H.recv
      if l ~= nil then pcall(function() l:append(l) end); pcall(function() l:append(a) end) end
      r = calls % 3 == 0
    elseif how == "reenter" then
      if H.again then H.again() end
      r = true
    elseif how == "evict" then
      if H.ctx and H.ctx.evictor and type(a) == "userdata" then
        pcall(H.ctx.evictor.evict, H.ctx.evictor, a, { reason = "from a callback" })
      end
      r = true
    elseif how == "hostile" then r = H.meta({}, "raise")
    elseif how == "many" then H.native = saved; return true, false, 1, 2, 3
    elseif how == "sort-again" then
      local l = H.recv
      if l ~= nil then pcall(function() l:sort("age") end) end
      r = calls % 2 == 0
    end
    H.native = saved
    return r
  end
end

-- A coroutine in the state `how` names: suspended, dead, or one that yields
-- forever.
function H.co(how)
  if how == 1 then return coroutine.create(function() end) end
  if how == 2 then
    local c = coroutine.create(function() return 1 end)
    coroutine.resume(c)
    return c
  end
  if how == 3 then
    local c = coroutine.create(function() error("dead by error") end)
    coroutine.resume(c)
    return c
  end
  local c = coroutine.create(function() while true do coroutine.yield(1) end end)
  coroutine.resume(c)
  return c
end

-- Run f in a coroutine of the script, resuming it while it yields (a yield
-- from a metamethod or a callback lands here when it can).
function H.inco(f)
  local co = coroutine.create(f)
  for _ = 1, 16 do
    local ok = coroutine.resume(co)
    if not ok or coroutine.status(co) == "dead" then return end
  end
end

-- ---- the cluster's objects ----------------------------------------------------

local all_pods, all_nodes
local function pods()
  if all_pods == nil then
    local ok, l = pcall(ebb.pods, ebb.nodes("all"), { phase = "all" })
    all_pods = ok and l or false
  end
  return all_pods or nil
end
local function nodes()
  if all_nodes == nil then
    local ok, l = pcall(ebb.nodes, "all")
    all_nodes = ok and l or false
  end
  return all_nodes or nil
end

-- The i-th pod / node of the cluster (any, protected ones included).
function H.pod(i)
  local l = pods()
  if l == nil or #l == 0 then return nil end
  return l[(i - 1) % #l + 1]
end
function H.node(i)
  local l = nodes()
  if l == nil or #l == 0 then return nil end
  return l[(i - 1) % #l + 1]
end
-- The k-th pod the profile's filters let go (a pod an eviction can take).
function H.evictable(k)
  local ok, l = pcall(ebb.pods, nil, { evictable = true })
  if not ok or #l == 0 then return nil end
  return l[((k or 1) - 1) % #l + 1]
end
function H.nodename(i) local n = H.node(i); return n and n.name or "no-such-node" end
function H.podns(i) local p = H.pod(i); return p and p.namespace or "default" end
function H.podname(i) local p = H.pod(i); return p and p.name or "no-such-pod" end

-- Default objects of each kind, made once per call into the plugin.
local makers = {
  pod = function() return H.pod(1) end,
  node = function() return H.node(1) end,
  podlist = function() return ebb.pods(nil, { phase = "all" }) end,
  nodelist = function() return ebb.nodes("all") end,
  selector = function() return ebb.selector("app") end,
  anti = function() return ebb.anti_affinity_index(ebb.pods(nil, { phase = "all" })) end,
  loadset = function()
    return ebb.node_loads(ebb.nodes("all"), { low = { cpu = 20, memory = 20 }, high = { cpu = 50, memory = 50 } })
  end,
  usage = function() return ebb.node_usage(nil, { resources = { "cpu", "memory", "pods" } }) end,
  taintset = function()
    for _, n in ebb.nodes("all"):iter() do
      local s = ebb.taint_set(n, function() return true end)
      if s then return s end
    end
  end,
  evictor = function() return H.ctx and H.ctx.evictor end,
  api = function() return H.ctx and H.ctx.api end,
}
H.KINDS = { "pod", "node", "podlist", "nodelist", "selector", "anti", "loadset", "usage",
            "taintset", "evictor", "api" }

H.d = setmetatable({}, {
  __index = function(d, kind)
    local f = makers[kind]
    if f == nil then return nil end
    local ok, v = pcall(f)
    v = ok and v or false
    rawset(d, kind, v)
    return v or nil
  end,
})

-- The method `name` of the default object of `kind` (nil when there is none).
function H.m(kind, name)
  local o = H.d[kind]
  if o == nil then return nil end
  local ok, f = pcall(function() return o[name] end)
  return ok and f or nil
end

-- ---- calling --------------------------------------------------------------------

local function describe(v)
  local ok, s = pcall(tostring, v)
  return ok and type(s) == "string" and s or type(v)
end

-- Answers no binding may give, whatever it was handed.
local function check(name, ok, r)
  if not ok then
    if type(r) == "string" and #r > 0 and not r:find("%S") then
      note(name .. " raised an empty message")
    end
    return
  end
  if type(r) == "userdata" then
    local s = describe(r)
    local okl, n = pcall(function() return #r end)
    if okl and math.type(n) == "integer" and s:match("^PodList") and (n < 0 or n > H.max_list) then
      note(name .. " returned a PodList of " .. n .. " pods")
    end
    if okl and math.type(n) == "integer" and s:match("^NodeList") and (n < 0 or n > H.max_list) then
      note(name .. " returned a NodeList of " .. n .. " nodes")
    end
  end
end

-- Call binding f (a C function) as `name`: metamethods of arguments that
-- fire meanwhile are the engine's doing. Returns what f returned, or nil
-- (the error is kept in H.errors[name]).
function H.call(name, f, ...)
  if f == nil then return nil end
  local saved_recv, saved_again = H.recv, H.again
  local args = table.pack(...)
  local depth = 0
  -- a callback or metamethod that calls the same binding again, at most
  -- 3 deep
  H.again = function()
    if depth >= 3 then return end
    depth = depth + 1
    local s = H.native
    H.native = name
    pcall(f, table.unpack(args, 1, args.n))
    H.native = s
    depth = depth - 1
  end
  H.recv = args[1]
  H.native = name
  local r = table.pack(pcall(f, ...))
  H.native = nil
  H.recv, H.again = saved_recv, saved_again
  check(name, r[1], r[2])
  if not r[1] then
    H.errors[name] = r[2]
    return nil
  end
  return table.unpack(r, 2, r.n)
end

-- The same for a binding written in Lua (ebb.set, ebb.args): its
-- metamethod calls are Lua's semantics, not the engine reading a value.
function H.lcall(name, f, ...)
  if f == nil then return nil end
  local r = table.pack(pcall(f, ...))
  if not r[1] then
    H.errors[name] = r[2]
    return nil
  end
  return table.unpack(r, 2, r.n)
end

-- Operators on a value. The engine's objects implement theirs in C; a
-- table's own metamethods are Lua's to call, so these calls are not
-- flagged (H.lcall), only their answers checked.
local OPS = {
  len = function(a) return #a end,
  eq = function(a, b) return a == b end,
  lt = function(a, b) return a < b end,
  le = function(a, b) return a <= b end,
  concat = function(a, b) return a .. b end,
  tostring = function(a) return tostring(a) end,
  call = function(a, b) return a(b) end,
  get = function(a, b) return a[b] end,
  set = function(a, b, c) a[b] = c end,
  iter = function(a)
    local n = 0
    for _ in a:iter() do n = n + 1; if n > 100000 then break end end
    return n
  end,
  pairs = function(a) local n = 0; for _ in pairs(a) do n = n + 1 end; return n end,
  close = function(a) local x <close> = a; return x end,
}
H.OPS = { "len", "eq", "lt", "le", "concat", "tostring", "call", "get", "set", "iter", "pairs", "close" }

function H.op(op, a, b, c)
  local r = table.pack(pcall(OPS[op], a, b, c))
  check("operator " .. op, r[1], r[2])
  if not r[1] then
    H.errors["operator " .. op] = r[2]
    return nil
  end
  return table.unpack(r, 2, r.n)
end

-- What an evict section returns: true (after choosing an action when none
-- was), false with a reason, or a value the engine must not trust.
function H.evret(how, ctx)
  if how == 1 then return false, "declined by the fuzzer" end
  if how == 2 then return H.meta({}, "raise") end
  if how == 3 then return true, H.meta({}, "raise") end
  if how == 4 then return false, H.meta({}, "raise") end
  if how == 5 then return true end
  if how == 6 then return false, "a\0b\xff\n" end
  if ctx and ctx.api then pcall(ctx.api.evict, ctx.api) end
  return true
end

-- ---- the plugins' entry ------------------------------------------------------

-- Run the program in ctx.args.program for one call into the plugin:
-- phase "deschedule", "balance", "filter" (a = pod) or "evict" (a = pod,
-- b = opts). The program is compiled once per state.
function H.run(ctx, phase, a, b)
  local f = H.compiled
  if f == nil then
    local err
    f, err = load(ctx.args.program, "=program", "t")
    if f == nil then error("ebb-fuzz: the program does not compile: " .. tostring(err), 0) end
    H.compiled = f
  end
  H.reset(ctx)
  H.report = function(text) pcall(ebb.note, "ebb-fuzz: " .. text) end
  return f(H, phase, ctx, a, b)
end

-- Fresh slots, defaults and counts for a call into the plugin (lists
-- of an earlier cycle are stale).
function H.reset(ctx)
  all_pods, all_nodes = nil, nil
  H.ctx = ctx
  H.V = {}
  H.d = setmetatable({}, getmetatable(H.d))
  H.again = nil
  H.count, H.hits, H.nhits, H.errors = 0, {}, 0, {}
end

return H
