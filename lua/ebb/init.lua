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
  local s = {}
  for _, v in ipairs(list or {}) do
    s[v] = true
  end
  return s
end

-- ebb.keys(map) -> the map's keys, sorted: a deterministic order where
-- upstream walks a Go map
function M.keys(map)
  local out = {}
  for k in pairs(map or {}) do out[#out + 1] = k end
  table.sort(out)
  return out
end

return M
