-- ebb.args: plugin args schemas, decoded strictly.
--
-- A plugin declares its args as a table of field -> type:
--
--   local A = require("ebb.args")
--   return {
--     name = "PodLifeTime",
--     args = {
--       maxPodLifeTimeSeconds = A.uint(),
--       states = A.list(A.string()),
--       namespaces = A.namespaces(),
--       labelSelector = A.label_selector(),
--     },
--     ...
--   }
--
-- Decoding follows upstream's strict JSON decoding: an unknown field is an
-- error, a value of the wrong type is an error, null is absent, absent
-- fields take their `default` (or stay nil). Errors carry the path of the
-- field ("namespaces.include[2]") so the engine can point at the line.
local native = require("ebb.native")

local A = {}

local SEQ, MAP = "seq", "map"

-- Values from a policy file carry their YAML type in a protected metatable
-- (getmetatable gives "ebb.seq" / "ebb.map"), so an empty list and an empty
-- map differ.
local function yaml_type(v)
  local mt = getmetatable(v)
  if mt == "ebb.seq" then return SEQ end
  if mt == "ebb.map" then return MAP end
  -- a plain Lua table (from a test or another plugin): guess by its keys
  if next(v) == nil then return nil end
  if v[1] ~= nil then return SEQ end
  return MAP
end

local function typename(v)
  local t = type(v)
  if t == "table" then
    local y = yaml_type(v)
    return y == SEQ and "a list" or "a map"
  elseif t == "number" then
    return math.type(v) == "integer" and "an integer" or "a number"
  elseif t == "string" then
    return "a string"
  elseif t == "boolean" then
    return "a boolean"
  end
  return t
end

-- A.join(path, key): the field path of a map key or (1-based) list index,
-- as errors name it: "a.b", "a[0]", 'a["nvidia.com/gpu"]'.
local function join(path, key)
  if type(key) == "number" then
    return (path or "") .. "[" .. (key - 1) .. "]"
  end
  if path == nil or path == "" then return key end
  if key:find("[%./%[%]]") then
    return path .. '["' .. key .. '"]'
  end
  return path .. "." .. key
end

A.join = join

local Fail = {}
Fail.__index = Fail

local function fail(path, fmt, ...)
  error(setmetatable({ path = path or "", msg = string.format(fmt, ...) }, Fail), 0)
end
A.fail = fail

local function is_null(v)
  return v == nil or v == native.null
end

local decode

-- Invariant: a plugin sees a field it was not given in the same form as one
-- it was given. Every schema is made here, so a scalar default is decoded
-- here, once, as if a policy had written it ("1h" -> 3600, "1Gi" -> an
-- integer); a duration or quantity default may also be given already
-- decoded (seconds, an integer). A default the schema refuses is the
-- script's error, raised when the script is loaded, naming the default.
-- Table defaults are decoded at each use (decode), so each gets a copy.
local function mk(kind, opts, extra)
  local s = { kind = kind }
  for k, v in pairs(opts or {}) do s[k] = v end
  for k, v in pairs(extra or {}) do s[k] = v end
  local d = s.default
  if d ~= nil and type(d) ~= "table"
      and not ((kind == "duration" or kind == "quantity") and math.type(d) ~= nil) then
    local ok, v = pcall(decode, s, d, "default")
    if not ok then
      local why = type(v) == "table" and (v.path .. ": " .. v.msg) or tostring(v)
      error(string.format("A.%s: %s", kind, why), 3)
    end
    s.default = v
  end
  return s
end

function A.bool(o) return mk("bool", o) end
function A.string(o) return mk("string", o) end
function A.number(o) return mk("number", o) end
function A.int(o) return mk("int", o, { min = (o and o.min) or math.mininteger, max = (o and o.max) or math.maxinteger }) end
function A.int32(o) return mk("int", o, { min = (o and o.min) or -2147483648, max = (o and o.max) or 2147483647 }) end
function A.uint(o) return mk("int", o, { min = (o and o.min) or 0, max = (o and o.max) or math.maxinteger }) end
function A.list(item, o) return mk("list", o, { item = item }) end
function A.map(value, o) return mk("map", o, { value = value }) end
function A.object(fields, o) return mk("object", o, { fields = fields }) end
function A.any(o) return mk("any", o) end
-- a Go duration string ("5m", "1h30m") -> seconds
function A.duration(o) return mk("duration", o) end
-- a quantity ("100m", "1Gi") -> integer (cpu in millicores)
function A.quantity(resource, o) return mk("quantity", o, { resource = resource or "memory" }) end
-- metav1.LabelSelector -> a compiled selector (sel:matches(pod))
function A.label_selector(o) return mk("label_selector", o) end

-- {include = [...], exclude = [...]} with at most one of the two.
function A.namespaces(o)
  local s = A.object({ include = A.list(A.string()), exclude = A.list(A.string()) }, o)
  s.check = function(v, path)
    if v.include and #v.include > 0 and v.exclude and #v.exclude > 0 then
      fail(path, "only one of Include/Exclude namespaces can be set")
    end
  end
  return s
end

local function decode_fields(fields, raw, path)
  local yt = yaml_type(raw)
  if yt == SEQ then fail(path, "expected a map, got a list") end
  local out = {}
  for k, v in pairs(raw) do
    if type(k) ~= "string" then
      fail(path, "expected a map with string keys")
    end
    if fields[k] == nil then
      fail(join(path, k), 'unknown field "%s"', k)
    end
  end
  for k, s in pairs(fields) do
    out[k] = decode(s, raw[k], join(path, k))
  end
  return out
end

local DURATION_UNITS = { ns = 1e-9, us = 1e-6, ["µs"] = 1e-6, ms = 1e-3, s = 1, m = 60, h = 3600 }

local function parse_duration(s)
  local sign, rest = s:match("^([+-]?)(.*)$")
  if rest == "0" then return 0 end
  if rest == "" then return nil end
  local total = 0
  while rest ~= "" do
    local num, unit, tail = rest:match("^([%d%.]+)([a-zµ]+)(.*)$")
    if not num or not DURATION_UNITS[unit] or not tonumber(num) then return nil end
    total = total + tonumber(num) * DURATION_UNITS[unit]
    rest = tail
  end
  return sign == "-" and -total or total
end

decode = function(s, raw, path)
  if is_null(raw) then
    if s.default ~= nil then
      if type(s.default) == "table" then
        -- a fresh copy each time, decoded like a written value
        return decode(s, s.default, path)
      end
      return s.default
    end
    return nil
  end
  local k, v = s.kind, nil
  if k == "any" then
    v = raw
  elseif k == "bool" then
    if type(raw) ~= "boolean" then fail(path, "expected a boolean, got %s", typename(raw)) end
    v = raw
  elseif k == "string" then
    if type(raw) ~= "string" then fail(path, "expected a string, got %s", typename(raw)) end
    if s.enum then
      local ok = false
      for _, e in ipairs(s.enum) do ok = ok or e == raw end
      if not ok then fail(path, '"%s" is not one of %s', raw, table.concat(s.enum, ", ")) end
    end
    v = raw
  elseif k == "number" then
    if type(raw) ~= "number" then fail(path, "expected a number, got %s", typename(raw)) end
    if (s.min and raw < s.min) or (s.max and raw > s.max) then
      fail(path, "%s is out of range [%s, %s]", tostring(raw), tostring(s.min), tostring(s.max))
    end
    v = raw
  elseif k == "int" then
    local i = math.tointeger(raw)
    if type(raw) ~= "number" or i == nil then fail(path, "expected an integer, got %s", typename(raw)) end
    if i < s.min or i > s.max then
      fail(path, "%d is out of range [%d, %d]", i, s.min, s.max)
    end
    v = i
  elseif k == "duration" then
    if type(raw) ~= "string" then fail(path, "expected a duration string, got %s", typename(raw)) end
    v = parse_duration(raw)
    if v == nil then fail(path, '"%s" is not a duration (e.g. "5m", "1h30m")', raw) end
  elseif k == "quantity" then
    if type(raw) ~= "string" and type(raw) ~= "number" then
      fail(path, "expected a quantity, got %s", typename(raw))
    end
    local q, err = native.quantity(tostring(raw), s.resource)
    if q == nil then fail(path, "%s", err) end
    v = q
  elseif k == "list" then
    if type(raw) ~= "table" or yaml_type(raw) == MAP then
      fail(path, "expected a list, got %s", typename(raw))
    end
    v = {}
    for i = 1, #raw do
      v[i] = decode(s.item, raw[i], join(path, i))
    end
  elseif k == "map" then
    if type(raw) ~= "table" or yaml_type(raw) == SEQ then
      fail(path, "expected a map, got %s", typename(raw))
    end
    v = {}
    for key, val in pairs(raw) do
      v[key] = decode(s.value, val, join(path, key))
    end
  elseif k == "object" then
    if type(raw) ~= "table" then fail(path, "expected a map, got %s", typename(raw)) end
    v = decode_fields(s.fields, raw, path)
  elseif k == "label_selector" then
    if type(raw) ~= "table" or yaml_type(raw) == SEQ then
      fail(path, "expected a label selector, got %s", typename(raw))
    end
    for key in pairs(raw) do
      if key ~= "matchLabels" and key ~= "matchExpressions" then
        fail(join(path, key), 'unknown field "%s"', key)
      end
    end
    local ok, sel = pcall(native.selector, raw)
    if not ok then fail(path, "%s", tostring(sel):gsub("^[^:]*:%d+: ", "")) end
    v = sel
  else
    error("unknown schema kind " .. tostring(k))
  end
  if s.check then s.check(v, path) end
  return v
end

-- A.decode(schema, raw) -> args | nil, path, message
-- schema: a table of field -> type (the plugin's `args`), or nil to accept
-- any map unchanged.
function A.decode(schema, raw)
  if raw ~= nil and type(raw) ~= "table" then
    return nil, "", "expected a map of args, got " .. typename(raw)
  end
  if schema == nil then
    return raw or {}
  end
  local ok, res = pcall(decode_fields, schema, raw or {}, "")
  if ok then return res end
  if getmetatable(res) == Fail then
    return nil, res.path, res.msg
  end
  error(res, 0)
end

return A
