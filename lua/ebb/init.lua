-- require("ebb"): what a strategy needs, in one table.
--
-- The native helpers (ebb.pods, ebb.selector, ebb.node, ...) work on whole
-- sets in C; this module adds the pieces written in Lua.
local native = require("ebb.native")

local M = {}
for k, v in pairs(native) do
  M[k] = v
end

M.args = require("ebb.args")

-- ebb.set{ "a", "b" } -> { a = true, b = true }
function M.set(list)
  if list ~= nil and type(list) ~= "table" then
    error("ebb.set: expected a list, got " .. type(list), 2)
  end
  local s = {}
  for _, v in ipairs(list or {}) do
    s[v] = true
  end
  return s
end

-- ebb.keys(map) -> the map's keys, sorted: a deterministic order where
-- upstream walks a Go map. Numbers come before strings (each in their own
-- order); keys of any other type are refused.
local rank = { number = 1, string = 2 }
local function before(a, b)
  local ra, rb = rank[type(a)], rank[type(b)]
  if ra ~= rb then return ra < rb end
  return a < b
end

function M.keys(map)
  if map ~= nil and type(map) ~= "table" then
    error("ebb.keys: expected a map, got " .. type(map), 2)
  end
  local out = {}
  for k in pairs(map or {}) do
    if rank[type(k)] == nil then
      error("ebb.keys: a key of type " .. type(k) .. " has no order (numbers and strings do)", 2)
    end
    out[#out + 1] = k
  end
  table.sort(out, before)
  return out
end

return M
