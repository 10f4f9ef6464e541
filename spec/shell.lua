-- The shell and file helpers of every spec and harness: the one home of
-- reading and writing files, quoting for sh, running commands and scratch
-- files and directories. It loads nothing of ebb (spec/helpers.lua loads
-- the engine as a Lua module), so the harnesses and benchmarks that drive
-- the built binary use it too.
local M = {}

-- shq(s) -> s quoted for sh, whatever it holds
function M.shq(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- cmdline(prog, args...) -> prog followed by each argument quoted for sh
function M.cmdline(prog, ...)
  local words = { prog }
  for _, a in ipairs({ ... }) do words[#words + 1] = M.shq(a) end
  return table.concat(words, " ")
end

-- sh(cmd) -> exit code, stdout and stderr together
function M.sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local _, _, code = p:close()
  return code, out
end

-- run(cmd) -> exit code, stdout, stderr (apart)
function M.run(cmd)
  local err = os.tmpname()
  local p = assert(io.popen(cmd .. " 2>" .. err, "r"))
  local out = p:read("a")
  local _, _, code = p:close()
  local stderr = M.read(err) or ""
  os.remove(err)
  return code, out, stderr
end

-- line(cmd) -> the first line cmd prints (nil when none)
function M.line(cmd)
  local p = assert(io.popen(cmd))
  local l = p:read("l")
  p:close()
  return l
end

-- read(path) -> the file's bytes, or nil and io.open's message where it
-- cannot be opened (assert(read(path)) fails as assert(io.open(path)) does)
function M.read(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("a")
  f:close()
  return s
end

function M.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- tmpfile(text) -> the path of a new temporary file holding text
function M.tmpfile(text)
  local path = os.tmpname()
  M.write(path, text)
  return path
end

-- tmpdir() -> the path of a new empty temporary directory (mktemp: in
-- $TMPDIR, made by this call alone)
function M.tmpdir()
  return assert(M.line("mktemp -d -t ebb-spec.XXXXXX"), "mktemp -d failed")
end

-- rmdir(dir): dir and everything in it removed
function M.rmdir(dir)
  os.execute("rm -rf " .. M.shq(dir))
end

-- have(bin) -> whether bin is on PATH
function M.have(bin)
  return os.execute("command -v " .. M.shq(bin) .. " >/dev/null 2>&1") == true
end

-- cwd() -> the working directory
function M.cwd()
  return M.line("pwd")
end

-- now() -> the wall clock in seconds, with fractions
function M.now()
  return tonumber(M.line("date +%s.%N"))
end

function M.sleep(s)
  os.execute("sleep " .. s)
end

-- pid() -> the process id of this Lua process (the parent of the shell
-- io.popen starts)
function M.pid()
  return tonumber(M.line("echo $PPID"))
end

-- free_port() -> a TCP port of 127.0.0.1 nothing listened on when asked
function M.free_port()
  local _, out = M.sh("python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); "
    .. "print(s.getsockname()[1])'")
  return assert(tonumber(out:match("%d+")), "no free port: " .. out)
end

return M
