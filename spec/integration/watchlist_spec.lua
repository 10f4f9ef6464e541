-- The initial sync by a streaming list (a WATCH with sendInitialEvents=true,
-- resourceVersionMatch=NotOlderThan and bookmarks, as client-go's WatchList)
-- and its fallback to paged LIST, per resource, where the server refuses it:
-- against `ebb serve` for the refusals a server can make (--watch-list), and
-- against the real kube-apiserver v1.35, whose audit log says which requests
-- ebb made. (v1.25 refuses it with 422: k8s_v125_spec.lua.)
local R = require("spec.integration.run_harness")
local K = require("spec.integration.k8s_harness")
local S = R.S

local DEMO, LIFETIME = R.DEMO, R.LIFETIME   -- 7 evictions, 5 PDB refusals
local RESOURCES = { "nodes", "namespaces", "priorityclasses", "persistentvolumeclaims",
  "poddisruptionbudgets", "pods" }
local ALL = table.concat(RESOURCES, ", ")

-- The requests `ebb serve -v` logged: how many LISTs (limit=) and streaming
-- lists (sendInitialEvents=true).
local function requests(srv)
  local lists, streams = 0, 0
  for line in srv:stderr():gmatch("[^\n]+") do
    if line:match("GET /[%w/%.%-]+%?limit=") then lists = lists + 1 end
    if line:match("GET /[%w/%.%-]+%?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan") then
      streams = streams + 1
    end
  end
  return lists, streams
end

local function count(text, pattern)
  local _, n = text:gsub(pattern, "")
  return n
end

describe("ebb run's streaming list against ebb serve", function()
  local T = R.suite(before_each, after_each)

  it("syncs every resource by a streaming list where it is offered: no LIST, the same cycle", function()
    T.srv = S.start{ snapshot = DEMO, "-v" }
    local run = T.start{ policy = LIFETIME, "--once", "--dry-run" }
    assert.equal(0, run:wait(30), run:stderr())
    local err = run:stderr()
    assert.matches("caches synced in [%d%.]+ s: 6 nodes, 45 pods %(streaming list: " .. ALL:gsub("%-", "%%-")
      .. "; paged LIST: none%)", err)
    assert.matches("cycle 1: 7 evicted, 5 refused", err)
    local lists, streams = requests(T.srv)
    assert.equal(0, lists, T.srv:stderr())
    assert.equal(#RESOURCES, streams)
  end)

  it("counts the streamed lists in /metrics, and the watch goes on in the same stream", function()
    T.srv = S.start{ snapshot = DEMO, "-v" }
    local run = T.start{ policy = LIFETIME:gsub("604800", "999999999"), "--interval", "1s" }
    assert.is_not_nil(run:wait_log("cycle 1:", 15), run:stderr())
    local m = run:metrics()
    for _, r in ipairs(RESOURCES) do
      assert.equal(1, R.metric(m, "ebb_watch_streamed_lists_total", '{resource="' .. r .. '"}'), r)
      assert.equal(1, R.metric(m, "ebb_watch_lists_total", '{resource="' .. r .. '"}'), r)
      assert.equal(1, R.metric(m, "ebb_watch_up", '{resource="' .. r .. '"}'), r)
    end
    -- a change after the initial events arrives on the stream ebb has
    local code = T.srv:request("DELETE", "/api/v1/namespaces/shop/pods/frontend-6b8f9d7c5-a1b2c")
    assert.equal(200, code)
    assert.is_truthy(S.eventually(function()
      local pods = R.metric(run:metrics(), "ebb_cache_objects", '{kind="Pod"}')
      return pods == 44
    end, 10), run:stderr())
    local lists, streams = requests(T.srv)
    assert.equal(0, lists)
    assert.equal(#RESOURCES, streams)   -- no second watch: the stream went on
    assert.is_true(run:ready())
  end)

  for _, case in ipairs{
    { "refuse", "422 ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: " ..
      "resourceVersionMatch is forbidden for watch" },
    { "error", "an ERROR event: 500 a watch stream was requested by the client but the required " ..
      "storage feature RequestWatchProgress is disabled" },
    { "no-bookmark", "no initial-events-end bookmark after 10.0 s without an object" },
    { "no-annotation", "no initial-events-end bookmark after 10.0 s without an object" },
  } do
    local mode, why = case[1], case[2]
    it("falls back to paged LIST, per resource and said once, where the server answers " .. mode, function()
      T.srv = S.start{ snapshot = DEMO, "-v", "--watch-list", mode }
      local run = T.start{ policy = LIFETIME, "--once", "--dry-run" }
      assert.equal(0, run:wait(40), run:stderr())
      local err = run:stderr()
      for _, r in ipairs(RESOURCES) do
        local said = "watch " .. r .. ": the server does not offer a streaming list %([^\n]-" ..
          why:gsub("[%(%)%.%-%+%*%?%[%]%^%$]", "%%%0")
        assert.matches(said, err)
        assert.equal(1, count(err, "watch " .. r .. ": the server does not offer a streaming list"))
      end
      assert.matches("caches synced in [%d%.]+ s: 6 nodes, 45 pods %(streaming list: none; paged LIST: "
        .. ALL:gsub("%-", "%%-") .. "%)", err)
      -- the same cycle as from a LIST
      assert.matches("cycle 1: 7 evicted, 5 refused", err)
      local lists, streams = requests(T.srv)
      assert.equal(#RESOURCES, streams)
      assert.equal(#RESOURCES, lists)
    end)
  end

  it("--sync-mode=list never asks for a streaming list", function()
    T.srv = S.start{ snapshot = DEMO, "-v" }
    local run = T.start{ policy = LIFETIME, "--once", "--dry-run", "--sync-mode=list" }
    assert.equal(0, run:wait(30), run:stderr())
    assert.matches("%(streaming list: none; paged LIST: " .. ALL:gsub("%-", "%%-") .. "%)", run:stderr())
    local lists, streams = requests(T.srv)
    assert.equal(0, streams)
    assert.equal(#RESOURCES, lists)
  end)

  it("--sync-mode=watchlist never falls back: not ready, and /readyz says why", function()
    T.srv = S.start{ snapshot = DEMO, "-v", "--watch-list", "refuse" }
    local run = T.start{ policy = LIFETIME, "--interval", "1s", "--sync-mode", "watchlist" }
    local why = S.eventually(function()
      local ok, text = run:ready()
      return not ok and text and text:match("streaming list refused %(%-%-sync%-mode=watchlist%)") and text
    end, 15)
    assert.is_truthy(why, run:stderr())
    assert.matches("pods %(not synced: streaming list refused", why)
    local lists, streams = requests(T.srv)
    assert.equal(0, lists)
    assert.is_true(streams > #RESOURCES)   -- asked again, with backoff
  end)

  it("refuses a --sync-mode it does not know, naming the flag", function()
    T.srv = S.start{ snapshot = DEMO }
    local run = T.start{ policy = LIFETIME, "--once", "--sync-mode", "stream" }
    assert.equal(2, run:wait(10))
    assert.matches('ebb: error: %-%-sync%-mode: "stream" is not auto, list or watchlist', run:stderr())
  end)
end)

-- ebb's requests in the audit log since `from`: verb and URI.
local function ebb_requests(cp, from)
  local out = {}
  for _, ev in ipairs(cp:audit_events(from)) do
    if (ev.userAgent or ""):match("^ebb/") then out[#out + 1] = ev end
  end
  return out
end

describe("ebb run's streaming list against kube-apiserver v1.35", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local start = R.suite(before_each, after_each, cp).start

  local function workload(prefix)
    local ns = cp:namespace(prefix)
    cp:node(ns .. "-n1")
    cp:replicaset(ns, "web", 3, { cpu = "100m" })
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 3 end, 30, "web bound")
    cp:run_pods(ns)
    return ns
  end

  it("with its watch cache on an etcd without progress requests: an ERROR event, paged LIST, said once", function()
    -- etcd 3.4.23 (Debian): the watch cache cannot serve a consistent
    -- streaming list, and says so in an ERROR event
    local log = cp:audit()
    local ns = workload("wl-refused")
    local from = cp:audit_size()
    local run = start{ policy = K.taints_policy(ns), "--once", "--dry-run" }
    assert.equal(0, run:wait(60), run:stderr())
    local err = run:stderr()
    assert.matches("watch pods: the server does not offer a streaming list %(an ERROR event: 500 a watch " ..
      "stream was requested by the client but the required storage feature RequestWatchProgress is disabled%)", err)
    assert.matches("paged LIST: " .. ALL:gsub("%-", "%%-") .. "%)", err)
    local streamed, listed = 0, 0
    for _, ev in ipairs(ebb_requests(cp, from)) do
      local o = ev.objectRef or {}
      if o.resource == "pods" and ev.verb == "watch" and ev.requestURI:match("sendInitialEvents=true") then
        streamed = streamed + 1
      end
      if o.resource == "pods" and ev.verb == "list" then listed = listed + 1 end
    end
    assert.equal(1, streamed, log)
    assert.equal(1, listed, log)
  end)

  it("without its watch cache: synced by streaming lists, no LIST in the audit log; deletes arrive", function()
    cp:audit()
    cp:restart_apiserver{ extra = { "--watch-cache=false" } }
    local ns = workload("wl-stream")
    local from = cp:audit_size()
    local run = start{ policy = K.taints_policy(ns), "--interval", "1s" }
    assert.is_not_nil(run:wait_log("cycle 1:", 60), run:stderr())
    local err = run:stderr()
    assert.matches("%(streaming list: " .. ALL:gsub("%-", "%%-") .. "; paged LIST: none%)", err)
    assert.not_matches("does not offer a streaming list", err)
    -- after the initial events the same stream is the watch: a pod created
    -- and then deleted arrives, then goes
    local n0 = R.metric(run:metrics(), "ebb_cache_objects", '{kind="Pod"}')
    cp:pod(ns, "solo", { node = ns .. "-n1" })
    cp:wait(function() return R.metric(run:metrics(), "ebb_cache_objects", '{kind="Pod"}') == n0 + 1 end, 20,
      "the new pod seen by ebb")
    cp:delete("/api/v1/namespaces/" .. ns .. "/pods/solo", "?gracePeriodSeconds=0")
    cp:wait(function() return R.metric(run:metrics(), "ebb_cache_objects", '{kind="Pod"}') == n0 end, 20,
      "the delete seen by ebb")
    local m = run:metrics()
    for _, r in ipairs(RESOURCES) do
      assert.equal(1, R.metric(m, "ebb_watch_streamed_lists_total", '{resource="' .. r .. '"}'), r)
    end
    -- a watch is in the audit log once it ends (ResponseComplete)
    run:stop()
    local lists, streams
    cp:wait(function()
      lists, streams = 0, 0
      for _, ev in ipairs(ebb_requests(cp, from)) do
        if ev.verb == "list" then lists = lists + 1 end
        if ev.verb == "watch" and ev.requestURI:match("sendInitialEvents=true") then streams = streams + 1 end
      end
      return streams >= #RESOURCES
    end, 15, "ebb's streaming lists in the audit log")
    assert.equal(0, lists)
    assert.equal(#RESOURCES, streams)
    cp:restart_apiserver{ without = { "--watch-cache" } }   -- the watch cache back, for what runs after
  end)
end)
