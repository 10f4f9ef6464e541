-- `ebb serve` for integration specs: start the built binary on a free port,
-- talk to it with curl, watch in the background, stop it with a signal.
--
--   local S = require("spec.integration.serve_harness")
--   local srv = S.start{ "--expire-after", "5" }       -- extra flags
--   local code, obj = srv:request("GET", "/api/v1/pods")
--   local w = srv:watch("/api/v1/pods?watch=1&resourceVersion=" .. rv)
--   w:wait_for(function(ev) return ev.type == "DELETED" end)
--   w:stop(); assert.equal(0, srv:stop())
--
-- Servers and watches are processes of their own, tracked by pid and
-- stopped by pid; each has a scratch directory of its own.
local json = require("dkjson")   -- ships with busted (lua-busted depends on it)

local S = {}
S.json = json
S.EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
S.SNAPSHOT = "spec/fixtures/kubectl-list.json"

-- the shell and file helpers (spec/shell.lua), for this file and the
-- specs that use it
local shell = require("spec.shell")
local shq, read, write, sleep, tmpdir = shell.shq, shell.read, shell.write, shell.sleep, shell.tmpdir
S.shq, S.read, S.write, S.sleep, S.tmpdir, S.rmdir = shq, read, write, sleep, tmpdir, shell.rmdir

-- Poll `fn` until it returns a truthy value (returned) or `secs` pass (nil).
function S.eventually(fn, secs)
  local tries = math.floor((secs or 10) / 0.05)
  for _ = 1, tries do
    local v = fn()
    if v then return v end
    sleep(0.05)
  end
  return fn()
end

local function alive(pid)
  return os.execute("kill -0 " .. pid .. " 2>/dev/null") == true
end

local Server = {}
Server.__index = Server

-- Start `ebb serve` with the snapshot (opts.snapshot or the fixture) and
-- the extra flags in opts (an array). Errors if it does not say where it
-- listens within 10 s. A deleted or evicted pod stops at once (as most
-- containers do on SIGTERM: --termination-seconds 0) unless opts.graceful
-- or the flags say otherwise: then it is gone after its grace period.
function S.start(opts)
  opts = opts or {}
  local dir = tmpdir()
  local args = {}
  local timed = opts.graceful
  for _, a in ipairs(opts) do
    args[#args + 1] = shq(a)
    timed = timed or a == "--termination-seconds"
  end
  if not timed then
    args[#args + 1] = "--termination-seconds 0"
  end
  local cmd = string.format(
    "(%s serve --snapshot %s --listen 127.0.0.1:0 %s >%s/out 2>%s/err & echo $! >%s/pid; " ..
    "wait $!; echo $? >%s/status) >/dev/null 2>&1 &",
    shq(S.EBB), shq(opts.snapshot or S.SNAPSHOT), table.concat(args, " "),
    dir, dir, dir, dir)
  os.execute(cmd)
  local srv = setmetatable({ dir = dir, watches = {} }, Server)
  local port = S.eventually(function()
    local out = read(dir .. "/out") or ""
    return out:match("^serving on 127%.0%.0%.1:(%d+)\n")
  end, 10)
  srv.pid = tonumber((read(dir .. "/pid") or ""):match("%d+"))
  if not port then
    local err = read(dir .. "/err") or ""
    if srv.pid and alive(srv.pid) then os.execute("kill -KILL " .. srv.pid) end
    error("ebb serve did not start: " .. err)
  end
  srv.port = tonumber(port)
  srv.url = "http://127.0.0.1:" .. port
  return srv
end

-- The exit status, once the server has exited (nil if it is running).
function Server:status()
  local s = read(self.dir .. "/status")
  return s and tonumber(s:match("%d+"))
end

function Server:stderr()
  return read(self.dir .. "/err") or ""
end

-- Send a signal (default TERM) to the server.
function Server:kill(signal)
  if self:status() == nil then
    os.execute("kill -" .. (signal or "TERM") .. " " .. self.pid .. " 2>/dev/null")
  end
end

-- Wait (at most 10 s) for the server to exit; its status, or nil.
function Server:wait()
  return S.eventually(function() return self:status() end, 10)
end

-- Signal (default TERM), wait for the exit, stop the watches left, remove
-- the scratch directory; returns the exit status.
function Server:stop(signal)
  self:kill(signal)
  local st = self:wait()
  if st == nil then os.execute("kill -KILL " .. self.pid .. " 2>/dev/null") end
  for _, w in ipairs(self.watches) do w:stop() end
  shell.rmdir(self.dir)
  return st
end

-- request(method, path[, body[, headers]]) -> http code, decoded body (or
-- nil), raw body, raw response headers. A table body is sent as JSON.
function Server:request(method, path, body, headers)
  local out, hdr = self.dir .. "/body", self.dir .. "/headers"
  local cmd = { "curl -s --max-time 20 -o", shq(out), "-D", shq(hdr),
                "-w '%{http_code}'", "-X", method }
  headers = headers or {}
  if body ~= nil then
    if type(body) == "table" then body = json.encode(body) end
    write(self.dir .. "/req", body)
    if not headers["Content-Type"] then headers["Content-Type"] = "application/json" end
    cmd[#cmd + 1] = "--data-binary @" .. shq(self.dir .. "/req")
  end
  for k, v in pairs(headers) do cmd[#cmd + 1] = "-H " .. shq(k .. ": " .. v) end
  cmd[#cmd + 1] = shq(self.url .. path)
  os.remove(out)
  local p = assert(io.popen(table.concat(cmd, " ")))
  local code = tonumber(p:read("a"))
  p:close()
  local raw = read(out) or ""
  return code, json.decode(raw), raw, read(hdr) or ""
end

-- GET path -> decoded object; errors unless the answer is 200.
function Server:get(path)
  local code, obj, raw = self:request("GET", path)
  if code ~= 200 then error(path .. ": " .. tostring(code) .. " " .. raw, 2) end
  return obj
end

-- ---- background watches -----------------------------------------------------

local Watch = {}
Watch.__index = Watch

-- Start a streaming GET of `path` (curl in the background, at most
-- `max_secs`, default 30). Events accumulate in a file, or with `discard`
-- are read and dropped (a watch that only keeps a stream going).
function Server:watch(path, max_secs, discard)
  local n = #self.watches + 1
  local w = setmetatable({ file = self.dir .. "/watch" .. n, code = self.dir .. "/watch" .. n .. ".rc" }, Watch)
  os.execute(string.format(
    "(curl -sN --max-time %d %s >%s 2>/dev/null & echo $! >%s.pid; wait $!; echo $? >%s) " ..
    ">/dev/null 2>&1 &", max_secs or 30, shq(self.url .. path), discard and "/dev/null" or w.file,
    w.file, w.code))
  w.pid = S.eventually(function()
    return tonumber((read(w.file .. ".pid") or ""):match("%d+"))
  end, 5)
  self.watches[#self.watches + 1] = w
  return w
end

-- The events received so far, decoded (a torn last line is left out).
function Watch:events()
  local text = read(self.file) or ""
  local evs = {}
  for line in text:gmatch("([^\n]*)\n") do
    if line ~= "" then evs[#evs + 1] = json.decode(line) end
  end
  return evs
end

-- Wait for an event `pred(ev)` accepts; returns it, or nil after `secs`.
function Watch:wait_for(pred, secs)
  return S.eventually(function()
    for _, ev in ipairs(self:events()) do
      if pred(ev) then return ev end
    end
  end, secs or 10)
end

-- curl's exit status once the stream has ended (nil while it runs).
function Watch:exit_code()
  local s = read(self.code)
  return s and tonumber(s:match("%d+"))
end

function Watch:stop()
  if self:exit_code() == nil and self.pid then
    os.execute("kill -TERM " .. self.pid .. " 2>/dev/null")
  end
end

-- ---- small helpers for assertions ------------------------------------------

function S.names(list)
  local out = {}
  for _, it in ipairs(list.items or list) do out[#out + 1] = it.metadata.name end
  table.sort(out)
  return out
end

function S.escape(s)
  return (s:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", c:byte()) end))
end

return S
