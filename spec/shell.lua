-- Small shell and file helpers for the spec harnesses.
local M = {}

-- shq(s) -> s quoted for sh
function M.shq(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- sh(cmd) -> exit code, stdout and stderr together
function M.sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local _, _, code = p:close()
  return code, out
end

-- read(path) -> the file's bytes, or nil where it cannot be opened
function M.read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

function M.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- have(bin) -> whether bin is on PATH
function M.have(bin)
  return os.execute("command -v " .. bin .. " >/dev/null 2>&1") == true
end

return M
