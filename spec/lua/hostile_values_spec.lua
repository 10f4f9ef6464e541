-- Every binding a strategy can call, with every kind of hostile value: the
-- class, not the case. For each ebb.* function, each method of the objects
-- they return and of ctx.evictor and ctx.api, and each of their arguments
-- and option fields, a row per hostile shape (fuzz/lua_bindings/_hostile.lua
-- makes them, as the libFuzzer target fuzz/lua_bindings.c does): integers
-- at the edges, NaN and infinity, strings with NUL, invalid UTF-8 or a
-- megabyte, deep, cyclic, sparse and huge tables, tables whose metamethods
-- answer differently on each call, raise, yield, or whose __len is 2^61 or
-- -1, tables changed while read, callbacks that raise or yield, coroutines,
-- objects of another type.
--
-- Each row runs as a call into a plugin of its own cycle in a child process
-- bounded in time and memory (h.bounded), on spec/fixtures/demo-cluster.json,
-- and must:
--   * leave the process alive (a group of rows whose child died is split
--     until the row that kills it is found);
--   * never have a metamethod of an argument called while the binding runs
--     (the engine reads a script's values raw, once);
--   * fail with an error that names the argument or field, or succeed (with
--     the right answer where the row says what that is);
--   * finish within the call's time budget and memory cap;
--   * evict no protected pod, and send no request naming another pod.
local h = require("spec.helpers")

local SNAP = "spec/fixtures/demo-cluster.json"
local HOSTILE = "fuzz/lua_bindings"
local BUDGET_MS = 3000
local CHUNK = 40                    -- rows per child process

-- ---- the shapes ---------------------------------------------------------------

-- own: an error from the value itself (a callback that raises) is the
-- script's own, and may come back as it is; big: a memory limit is a fair
-- answer.
local SHAPES = {
  { "NaN", "(0/0)" },
  { "infinity", "(1/0)" },
  { "math.mininteger", "math.mininteger" },
  { "math.maxinteger", "math.maxinteger" },
  { "2^61", "(1 << 61)" },
  { "-1", "-1" },
  { "2^53 + 1 as a float", "(2^53 + 1.0)" },
  { "a string with NUL", "'a\\0b'" },
  { "invalid UTF-8", "'\\xff\\xfe\\xc0\\x80'" },
  { "a string of 1 MiB", "string.rep('x', (1 << 20) + 1)", big = true },
  { "a table 200 deep", "H.deep(200)" },
  { "a cyclic table", "H.cyc()" },
  { "a sparse list", "H.sparse()" },
  { "a list of 70000 strings", "H.big(70000)", big = true },
  { "__index answering differently on each call", "H.meta({}, 'flip')" },
  { "metamethods that raise", "H.meta({}, 'raise')" },
  { "metamethods that yield", "H.meta({}, 'yield')" },
  { "__len of 2^61", "H.meta({ H.pod(1) }, 'huge')" },
  { "__len of -1", "H.meta({ H.pod(1) }, 'neg')" },
  { "a table changed while it is read", "H.meta({ 'a', 'b', x = 1 }, 'mutate')" },
  { "a function that raises", "H.cb('raise')", own = true },
  { "a function that yields", "H.cb('yield')", own = true },
  { "a coroutine", "H.co(4)" },
  { "another kind of object", "H.d.usage" },
  { "ebb.null", "ebb.null" },
}

-- ---- the bindings ---------------------------------------------------------------

-- Plausible arguments, as Lua text; an options table is a map of its fields
-- (each field gets every shape too). H, ctx, nodes, ebb and A1 (an evict
-- plugin's pod) are in scope.
local POD = "H.pod(20)"
local NODE = "H.node(2)"
local NODES = "ebb.nodes('all')"
local PODS = "ebb.pods(nil, { phase = 'all' })"
local W = "{ cpu = 1, memory = 1 }"
local function opts(t) return { fields = t } end

-- name, function (text), receiver (text) or nil, arguments; lua: written
-- in Lua (its metamethod calls are the language's); evictor: runs inside
-- an evict plugin's evict(), where ctx.api acts on pod A1.
local BINDINGS = {
  { "ebb.pods", "ebb.pods", nil, { NODES, opts {
    phase = "'all'", namespaces = "{ include = { 'shop', 'batch' } }", selector = "ebb.selector('app')",
    owner_kinds = "{ exclude = { 'DaemonSet' } }", older_than = "60", min_age = "60", min_restarts = "0",
    states = "{ 'Running' }", reasons = "{ 'Evicted' }", conditions = "{ { type = 'Ready', status = 'True' } }",
    exit_codes = "{ 1 }", including_init = "true", node_affinity = "'required'", off_node = "false",
    filter = "true", where = "function() return true end" } } },
  { "ebb.pods (namespaces)", "ebb.pods", nil, { "nil", "{ namespaces = %s }" },
    inner = { 2, opts { include = "{ 'shop' }", exclude = "{ 'kube-system' }" } } },
  { "ebb.pods (conditions[1])", "ebb.pods", nil, { "nil", "{ conditions = { %s } }" },
    inner = { 2, opts { type = "'Ready'", status = "'True'", reason = "'x'", minTimeSinceLastTransitionSeconds = "60" } } },
  { "ebb.pod", "ebb.pod", nil, { "'shop'", "'cart-5d7f8c6b9-w5x6y'" } },
  { "ebb.node", "ebb.node", nil, { "H.nodename(1)" } },
  { "ebb.nodes", "ebb.nodes", nil, { "'all'" } },
  { "ebb.selector", "ebb.selector", nil, { opts {
    matchLabels = "{ app = 'web' }",
    matchExpressions = "{ { key = 'tier', operator = 'In', values = { 'a', 'b' } } }" } } },
  { "ebb.selector (matchExpressions[1])", "ebb.selector", nil, { "{ matchExpressions = { %s } }" },
    inner = { 1, opts { key = "'tier'", operator = "'In'", values = "{ 'a', 'b' }" } } },
  { "ebb.selector (string)", "ebb.selector", nil, { "'app=web,tier in (a,b)'" } },
  { "ebb.namespace_labels", "ebb.namespace_labels", nil, { "'shop'" } },
  { "ebb.priority_class", "ebb.priority_class", nil, { "'business-critical'" } },
  { "ebb.quantity", "ebb.quantity", nil, { "'100m'", "'cpu'" } },
  { "ebb.now", "ebb.now", nil, {} },
  { "ebb.log", "ebb.log", nil, { "'info'", "'a line'" } },
  { "ebb.note", "ebb.note", nil, { "'a note'", "H.nodename(1)" } },
  { "ebb.evictions", "ebb.evictions", nil, { opts {
    namespace = "'shop'", kind = "'Deployment'", workload = "'web'", node = "H.nodename(1)",
    plugin = "'LowNodeUtilization'", profile = "'default'", since = "0", limit = "10" } } },
  { "ebb.taint_set", "ebb.taint_set", nil, { "H.node(1)", "function() return true end" } },
  { "ebb.fits", "ebb.fits", nil, { POD, NODE } },
  { "ebb.fits_any_other", "ebb.fits_any_other", nil, { POD, NODES } },
  { "ebb.fits_any", "ebb.fits_any", nil, { POD, NODES } },
  { "ebb.node_usage", "ebb.node_usage", nil, { NODES, opts {
    resources = "{ 'cpu', 'memory', 'pods' }", source = "'requests'" } } },
  { "ebb.node_usage (prometheus)", "ebb.node_usage", nil, { NODES, opts {
    resources = "{ 'cpu' }", source = "'prometheus'", samples = "{ [H.nodename(1)] = 0.5 }" } } },
  { "ebb.metrics_provider", "ebb.metrics_provider", nil, { "'KubernetesMetrics'" } },
  { "ebb.topology_balance", "ebb.topology_balance", nil, { PODS, NODES, opts {
    constraints = "{ 'DoNotSchedule' }", node_fit = "true" } } },
  { "ebb.topology_domains", "ebb.topology_domains", nil, { PODS, NODES, opts {
    constraints = "{ 'DoNotSchedule', 'ScheduleAnyway' }" } } },
  { "ebb.duplicates", "ebb.duplicates", nil, { PODS, NODES, opts {
    exclude_kinds = "{ 'Job' }", details = "true" } } },
  { "ebb.anti_affinity_index", "ebb.anti_affinity_index", nil, { PODS, NODES } },
  { "ebb.best_preferred_weight", "ebb.best_preferred_weight", nil, { POD, NODES } },
  { "ebb.better_preferred_node", "ebb.better_preferred_node", nil, { POD, "0", NODES } },
  { "ebb.node_loads", "ebb.node_loads", nil, { NODES, opts {
    low = "{ cpu = 20, memory = 20 }", high = "{ cpu = 50, memory = 50 }",
    prod_low = "{ cpu = 10 }", prod_high = "{ cpu = 40 }", deviation = "false", expiration = "180" } } },
  { "ebb.koord_class", "ebb.koord_class", nil, { POD } },
  { "ebb.json", "ebb.json", nil, { opts { a = "{ 1, 2 }", b = "'c'", c = "ebb.null" } } },
  { "ebb.rfc3339", "ebb.rfc3339", nil, { "0" } },
  { "ebb.prometheus_query", "ebb.prometheus_query", nil, { "'up'" } },
  { "ebb.set", "ebb.set", nil, { "{ 'a', 'b' }" }, lua = true },
  { "ebb.keys", "ebb.keys", nil, { "{ a = 1, b = 2 }" }, lua = true },
  { "ebb.args.decode", "ebb.args.decode", nil, {
    "ebb.args.object({ a = ebb.args.int(), s = ebb.args.label_selector() })",
    "{ a = 1, s = { matchLabels = { app = 'web' } } }" }, lua = true },

  { "Pod:label", "H.m('pod', 'label')", "H.pod(1)", { "'app'" } },
  { "Pod:annotation", "H.m('pod', 'annotation')", "H.pod(1)", { "'x'" } },
  { "Pod:has_owner_kind", "H.m('pod', 'has_owner_kind')", "H.pod(1)", { "'ReplicaSet'" } },
  { "Pod:tolerates", "H.m('pod', 'tolerates')", "H.pod(1)", { "H.node(1)", "{ 'NoSchedule' }" } },
  { "Pod:tolerates_all", "H.m('pod', 'tolerates_all')", "H.pod(1)", { "H.d.taintset" } },
  { "Pod:matches_node_selector", "H.m('pod', 'matches_node_selector')", "H.pod(1)", { NODE } },
  { "Pod:preferred_weight", "H.m('pod', 'preferred_weight')", "H.pod(1)", { NODE } },
  { "Pod:has_node_affinity", "H.m('pod', 'has_node_affinity')", "H.pod(1)", { "'required'" } },
  { "Pod:request", "H.m('pod', 'request')", "H.pod(1)", { "'cpu'" } },
  { "Pod[key]", "function(p, k) return p[k] end", "H.pod(1)", { "'object'" }, op = true },
  { "Node:label", "H.m('node', 'label')", "H.node(1)", { "'kubernetes.io/hostname'" } },
  { "Node:annotation", "H.m('node', 'annotation')", "H.node(1)", { "'x'" } },
  { "Node:allocatable_of", "H.m('node', 'allocatable_of')", "H.node(1)", { "'cpu'" } },
  { "Node[key]", "function(n, k) return n[k] end", "H.node(1)", { "'taints'" }, op = true },

  { "PodList:iter", "H.m('podlist', 'iter')", PODS, {} },
  { "PodList:sort", "H.m('podlist', 'sort')", PODS, { "'restarts'", "true" } },
  { "PodList:sort (function)", "H.m('podlist', 'sort')", PODS, { "function(a, b) return a.name < b.name end" } },
  { "PodList:filter", "H.m('podlist', 'filter')", PODS, { "function() return true end" } },
  { "PodList:slice", "H.m('podlist', 'slice')", PODS, { "2", "5" } },
  { "PodList:reverse", "H.m('podlist', 'reverse')", PODS, {} },
  { "PodList:append", "H.m('podlist', 'append')", PODS, { POD } },
  { "PodList:keys", "H.m('podlist', 'keys')", PODS, {} },
  { "PodList:by_node", "H.m('podlist', 'by_node')", PODS, {} },
  { "PodList:requests", "H.m('podlist', 'requests')", PODS, {} },
  { "PodList[i]", "function(l, i) return l[i] end", PODS, { "1" }, op = true },
  { "NodeList:iter", "H.m('nodelist', 'iter')", NODES, {} },
  { "NodeList:names", "H.m('nodelist', 'names')", NODES, {} },
  { "NodeList:filter", "H.m('nodelist', 'filter')", NODES, { "function() return true end" } },
  { "NodeList[i]", "function(l, i) return l[i] end", NODES, { "1" }, op = true },
  { "Selector:matches", "H.m('selector', 'matches')", "ebb.selector('app')", { "{ app = 'web' }" } },

  { "AntiAffinityIndex:violation", "H.m('anti', 'violation')", "H.d.anti", { POD } },
  { "AntiAffinityIndex:remove", "H.m('anti', 'remove')", "H.d.anti", { POD } },
  { "AntiAffinityIndex:candidates", "H.m('anti', 'candidates')", "H.d.anti", { NODE } },

  { "LoadSet:nodes", "H.m('loadset', 'nodes')", "H.d.loadset", { "'skipped'" } },
  { "LoadSet:skipped", "H.m('loadset', 'skipped')", "H.d.loadset", {} },
  { "LoadSet:class", "H.m('loadset', 'class')", "H.d.loadset", { NODE } },
  { "LoadSet:resources", "H.m('loadset', 'resources')", "H.d.loadset", {} },
  { "LoadSet:usage", "H.m('loadset', 'usage')", "H.d.loadset", { NODE } },
  { "LoadSet:overutilized", "H.m('loadset', 'overutilized')", "H.d.loadset", { NODE, opts { prod = "true" } } },
  { "LoadSet:score", "H.m('loadset', 'score')", "H.d.loadset", { NODE, W, opts { prod = "false" } } },
  { "LoadSet:sort", "H.m('loadset', 'sort')", "H.d.loadset", { NODES, W, opts { prod = "false", ascending = "true" } } },
  { "LoadSet:available", "H.m('loadset', 'available')", "H.d.loadset", { NODES, opts { prod = "true" } } },
  { "LoadSet:removable", "H.m('loadset', 'removable')", "H.d.loadset", { NODE, PODS, NODES, opts {
    prod = "false", selectors = "{ ebb.selector('app') }", node_fit = "true" } } },
  { "LoadSet:order", "H.m('loadset', 'order')", "H.d.loadset", { NODE, PODS, W, opts { prod = "false" } } },
  { "LoadSet:evicted", "H.m('loadset', 'evicted')", "H.d.loadset", { NODE, POD, "{ cpu = 100, memory = 100 }",
    opts { prod = "false" } } },
  { "LoadSet:pod_usage", "H.m('loadset', 'pod_usage')", "H.d.loadset", { POD } },
  { "LoadSet:pod_score", "H.m('loadset', 'pod_score')", "H.d.loadset", { NODE, POD, W, opts { prod = "false" } } },

  { "NodeUsage:count", "H.m('usage', 'count')", "H.d.usage", {} },
  { "NodeUsage:nodes", "H.m('usage', 'nodes')", "H.d.usage", {} },
  { "NodeUsage:skipped", "H.m('usage', 'skipped')", "H.d.usage", {} },
  { "NodeUsage:set_thresholds", "H.m('usage', 'set_thresholds')", "H.d.usage",
    { "{ cpu = 20, memory = 20 }", "{ cpu = 50, memory = 50 }", "false" }, words = { "thresholds" } },
  { "NodeUsage:thresholds", "H.m('usage', 'thresholds')", "H.d.usage", {} },
  { "NodeUsage:classify", "H.m('usage', 'classify')", "H.d.usage", { "'spread'" } },
  { "NodeUsage:class", "H.m('usage', 'class')", "H.d.usage", { NODE } },
  { "NodeUsage:move", "H.m('usage', 'move')", "H.d.usage", { "'over'", "'under'", opts {
    order = "'ascending'", target = "true" } } },
  { "NodeUsage:continues", "H.m('usage', 'continues')", "H.d.usage", { NODE } },
  { "NodeUsage:tolerated", "H.m('usage', 'tolerated')", "H.d.usage", { POD } },
  { "NodeUsage:candidates", "H.m('usage', 'candidates')", "H.d.usage", { PODS, opts { requesting = "{ 'cpu' }" } } },
  { "NodeUsage:pod_usage", "H.m('usage', 'pod_usage')", "H.d.usage", { POD } },
  { "NodeUsage:measures_pods", "H.m('usage', 'measures_pods')", "H.d.usage", {} },
  { "NodeUsage:take", "H.m('usage', 'take')", "H.d.usage", { POD } },
  { "NodeUsage:explain", "H.m('usage', 'explain')", "H.d.usage", { NODE } },
  { "NodeUsage:usage", "H.m('usage', 'usage')", "H.d.usage", { NODE } },
  { "NodeUsage:available", "H.m('usage', 'available')", "H.d.usage", { NODE } },
  { "NodeUsage:percent", "H.m('usage', 'percent')", "H.d.usage", { NODE } },
  { "NodeUsage:budget", "H.m('usage', 'budget')", "H.d.usage", {} },
  { "TaintSet#", "function(s) return #s end", "H.d.taintset", {}, op = true },

  { "Evictor:evict", "H.m('evictor', 'evict')", "ctx.evictor", { "H.evictable(1)", opts { reason = "'r'" } } },
  { "Evictor:filter", "H.m('evictor', 'filter')", "ctx.evictor", { POD } },
  { "Evictor:pre_eviction_filter", "H.m('evictor', 'pre_eviction_filter')", "ctx.evictor", { POD } },
  { "Evictor:evicted", "H.m('evictor', 'evicted')", "ctx.evictor", { NODE } },
  { "Evictor:node_limit_reached", "H.m('evictor', 'node_limit_reached')", "ctx.evictor", { NODE } },
  { "Evictor:total_limit_reached", "H.m('evictor', 'total_limit_reached')", "ctx.evictor", {} },

  { "EvictorApi:evict", "H.m('api', 'evict')", "ctx.api", { opts { gracePeriodSeconds = "30" } }, evictor = true },
  { "EvictorApi:delete", "H.m('api', 'delete')", "ctx.api", { opts {
    gracePeriodSeconds = "30", propagationPolicy = "'Background'" } }, evictor = true },
  { "EvictorApi:patch", "H.m('api', 'patch')", "ctx.api", { opts {
    metadata = "{ labels = { drain = 'yes' } }" } }, evictor = true },
  { "EvictorApi:patch (labels)", "H.m('api', 'patch')", "ctx.api", { "{ metadata = { labels = %s } }" },
    inner = { 1, opts { drain = "'yes'", gone = "ebb.null" } }, evictor = true },
  { "EvictorApi:create", "H.m('api', 'create')", "ctx.api", { opts {
    metadata = "{ name = 'pmj-' .. A1.uid }", spec = "{ podRef = { name = A1.name, namespace = A1.namespace } }",
    kind = "'PodMigrationJob'", apiVersion = "'scheduling.koordinator.sh/v1alpha1'" } }, evictor = true },
  { "EvictorApi:create (spec.podRef)", "H.m('api', 'create')", "ctx.api",
    { "{ metadata = { name = 'pmj-x' }, spec = { podRef = %s } }" },
    inner = { 1, opts { name = "A1.name", namespace = "A1.namespace", uid = "A1.uid" } }, evictor = true },
}

-- ---- rows ---------------------------------------------------------------------------

local function render_opts(fields, over_field, over_text)
  local keys = {}
  for k in pairs(fields) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    parts[#parts + 1] = k .. " = " .. (k == over_field and over_text or fields[k])
  end
  return "{ " .. table.concat(parts, ", ") .. " }"
end

local function render_arg(a, over_field, over_text)
  if type(a) == "table" then return render_opts(a.fields, over_field, over_text) end
  return a
end

-- The Lua text calling binding b with argument `pos` replaced by `text`
-- (pos 0: the receiver; field: a field of that options argument).
local function call_text(b, pos, field, text)
  local args = {}
  if b[3] then args[#args + 1] = pos == 0 and text or b[3] end
  for i, a in ipairs(b[4]) do
    local t
    if b.inner and b.inner[1] == i then
      -- a table inside the argument: its fields, or the whole of it
      if pos == i and field then
        t = a:format(render_opts(b.inner[2].fields, field, text))
      elseif pos == i then
        t = a:format(text)
      else
        t = a:format(render_opts(b.inner[2].fields))
      end
    elseif pos == i then
      t = field and render_arg(a, field, text) or text
    else
      t = render_arg(a)
    end
    args[#args + 1] = t
  end
  return string.format("return H.%s(%q, %s%s%s)", b.lua and "lcall" or "call", b[1], b[2],
    #args > 0 and ", " or "", table.concat(args, ", "))
end

-- Where each binding can take a hostile value: its receiver, its
-- arguments, the fields of its options.
local function positions(b)
  local out = {}
  -- an operator's receiver is Lua's to check (indexing a number is Lua's error)
  if b[3] and not b.op then out[#out + 1] = { pos = 0, label = "the receiver" } end
  for i, a in ipairs(b[4]) do
    local label = "argument " .. i
    if b.inner and b.inner[1] == i then
      out[#out + 1] = { pos = i, label = "the inner table", plain = render_opts(b.inner[2].fields) }
      for f in pairs(b.inner[2].fields) do out[#out + 1] = { pos = i, field = f, label = "field " .. f } end
    elseif type(a) == "table" then
      out[#out + 1] = { pos = i, label = label, plain = render_arg(a) }
      for f in pairs(a.fields) do out[#out + 1] = { pos = i, field = f, label = label .. " field " .. f } end
    else
      out[#out + 1] = { pos = i, label = label, plain = a:match("^{") and a or nil }
    end
  end
  table.sort(out, function(x, y) return x.label < y.label end)
  return out
end

local ROWS, BY_KEY = {}, {}
for _, b in ipairs(BINDINGS) do
  for _, p in ipairs(positions(b)) do
    local key = b[1] .. ", " .. p.label
    BY_KEY[key] = { binding = b, rows = {} }
    for _, s in ipairs(SHAPES) do
      local row = { binding = b[1], evictor = b.evictor, lua = b.lua, shape = s, field = p.field,
                    code = "local H, ctx, nodes, ebb, A1 = ...\n" .. call_text(b, p.pos, p.field, s[2]) }
      ROWS[#ROWS + 1] = row
      row.id = #ROWS
      table.insert(BY_KEY[key].rows, row)
    end
    -- the plausible table behind counting metamethods: raw reads never
    -- call them, and read what is there
    if p.plain then
      local row = { binding = b[1], evictor = b.evictor, lua = b.lua, counted = true,
                    shape = { "the plausible table behind counting metamethods", "" },
                    code = "local H, ctx, nodes, ebb, A1 = ...\n" ..
                      call_text(b, p.pos, nil, "H.counted(" .. p.plain .. ")") }
      ROWS[#ROWS + 1] = row
      row.id = #ROWS
      table.insert(BY_KEY[key].rows, row)
    end
  end
end

-- ---- running rows ---------------------------------------------------------------------

-- The plugins of one child: "Hostile" runs row ROWS[cycle] (cycle 1 also
-- lists the protected pods), "HostileEvictor" is the profile's evict plugin
-- and runs the rows that need ctx.api for the eviction the strategy asks
-- for with reason "row N".
local RUNNER = [==[
local ebb = require("ebb")
local H = require("_hostile")
local ROWS = require("_rows")
local M = {}

local function esc(s)
  return (tostring(s):gsub("[^ -~]", function(c) return string.format("\\%03d", c:byte()) end):gsub("|", "/"))
end

-- what a row returned (an engine object by its type alone: its __tostring
-- is a binding of its own)
local function describe(v)
  if type(v) ~= "string" and type(v) ~= "number" and type(v) ~= "boolean" then return type(v) end
  return tostring(v)
end

function M.run(i, ctx, nodes, pod)
  local row = ROWS[i]
  H.reset(ctx)
  local reports = {}
  H.report = function(t) reports[#reports + 1] = t end
  local f = assert(load(row.code, "=row", "t"))
  local ok, a = pcall(f, H, ctx, nodes, ebb, pod)
  local err = H.errors[row.binding]
  local hits = {}
  for k, n in pairs(H.hits) do hits[#hits + 1] = k .. " (" .. n .. ")" end
  table.sort(hits)
  local status = not ok and "raised" or err ~= nil and "error" or "ok"
  local text = tostring(not ok and a or err or describe(a))
  ebb.note(string.format("row|%d|%s|%d|%s|%s|%d|%s", i, status, H.nhits, esc(table.concat(hits, "; ")),
    esc(table.concat(reports, "; ")), #text, esc(text):sub(1, 1500)))
  return status
end

function M.protected()
  for _, p in ebb.pods(ebb.nodes("all"), { phase = "all" }):iter() do
    local daemon = p:has_owner_kind("DaemonSet")
    if p.is_mirror or p.is_static or p.terminating or p.has_local_storage or #p.owners == 0 or daemon or
      (p.priority or 0) >= 2000000000 then
      ebb.note("protected|" .. p.key)
    end
  end
end
return M
]==]

local STRATEGY = [==[
local ebb = require("ebb")
local R = require("_runner")
local ROWS = require("_rows")
return {
  name = "Hostile",
  deschedule = function(ctx, nodes)
    ctx.state.cycle = (ctx.state.cycle or 0) + 1
    local i = ctx.state.cycle
    if i == 1 then R.protected() end
    local row = ROWS[i]
    if row == nil then return end
    if not row.evictor then return R.run(i, ctx, nodes) end
    for _, p in ebb.pods(nil, { evictable = true }):iter() do
      local ok, why = ctx.evictor:evict(p, { reason = "row " .. i })
      if ok or why == "evictor" then return end
    end
    ebb.note("row|" .. i .. "|skipped|0|||15|no pod to evict")
  end,
}
]==]

local EVICTOR = [==[
local R = require("_runner")
local ROWS = require("_rows")
return {
  name = "HostileEvictor",
  creates = { apiVersion = "scheduling.koordinator.sh/v1alpha1", kind = "PodMigrationJob", namespaced = false },
  evict = function(ctx, pod, opts)
    local i = tonumber(type(opts.reason) == "string" and opts.reason:match("^row (%d+)$"))
    if i == nil then
      ctx.api:evict()
      return true
    end
    local status = R.run(i, ctx, nil, pod)
    -- the pod stays for the next rows unless the row's request is looked at
    return ROWS[i].keep == true and status == "ok", "row done"
  end,
}
]==]

local function policy_text()
  return h.json({
    apiVersion = "descheduler/v1alpha2",
    kind = "DeschedulerPolicy",
    profiles = { {
      name = "hostile",
      pluginConfig = {
        { name = "DefaultEvictor", args = {} },
        { name = "Hostile", limits = { quarantineAfter = 0 } },
        { name = "HostileEvictor", limits = { quarantineAfter = 0 } },
      },
      plugins = {
        deschedule = { enabled = { "Hostile" } },
        evict = { enabled = { "HostileEvictor" } },
      },
    } },
  })
end

-- Run `rows` in one child: -> { [row id] = result }, protected set, plan;
-- or nil, why when the child did not finish.
local function run_child(rows, o)
  o = o or {}
  local src = {}
  for k, row in ipairs(rows) do
    src[k] = string.format("{ binding = %q, code = %q, evictor = %s, keep = %s }", row.binding, row.code,
      tostring(row.evictor == true), tostring(row.keep == true))
  end
  local dir = h.plugin_dir {
    ["_rows.lua"] = "return {\n" .. table.concat(src, ",\n") .. "\n}\n",
    ["_runner.lua"] = RUNNER,
    ["hostile.lua"] = STRATEGY,
    ["hostile_evictor.lua"] = EVICTOR,
  }
  local plan, msg, hwm = h.bounded("simulate", {
    snapshot = SNAP, policy_dirs = { HOSTILE, dir }, policy_text = policy_text(), cycles = #rows + 1,
    time_budget_ms = o.budget or BUDGET_MS, mem_limit = o.mem or (64 << 20),
  }, { seconds = o.seconds or (20 + #rows * 4), mb = o.mb or 2048 })
  h.rmdir(dir)
  if plan == nil then return nil, msg, hwm end
  local results, protected = {}, {}
  for _, n in ipairs(plan.notes) do
    local m = n.message or ""
    local i, status, nhits, hits, reports, len, text =
      m:match("^row|(%d+)|([^|]*)|(%d+)|([^|]*)|([^|]*)|(%d+)|(.*)$")
    if i then
      results[rows[tonumber(i)].id] = { status = status, nhits = tonumber(nhits), hits = hits,
                                        reports = reports, len = tonumber(len), text = text }
    end
    local key = m:match("^protected|(.*)$")
    if key then protected[key] = true end
  end
  -- a call stopped (budget, memory cap) left no note: its cycle's error
  -- says why (cycle i runs row i)
  for _, e in ipairs(plan.errors) do
    local row = rows[e.cycle or 0]
    if row ~= nil and results[row.id] == nil then
      results[row.id] = { status = "stopped", nhits = 0, hits = "", reports = "", text = e.message or "" }
    end
  end
  return results, protected, plan, hwm
end

-- Results of every row, children split where one died.
local RESULTS, PROTECTED, EVICTED = {}, {}, {}
local function run_rows(rows)
  local results, protected, plan = run_child(rows)
  if results == nil then
    -- the engine refused the setup itself: a mistake here, not a finding
    assert(tostring(protected):match("^the engine did not finish"), protected)
    if #rows == 1 then
      RESULTS[rows[1].id] = { status = "died", nhits = 0, hits = "", reports = "", text = protected or "" }
      return
    end
    local half = #rows // 2
    run_rows(table.move(rows, 1, half, 1, {}))
    run_rows(table.move(rows, half + 1, #rows, 1, {}))
    return
  end
  for id, r in pairs(results) do RESULTS[id] = r end
  for k in pairs(protected) do PROTECTED[k] = true end
  for _, e in ipairs(plan.evictions) do EVICTED[#EVICTED + 1] = e end
end

local ran = {}
local function results_for(key)
  local entry = BY_KEY[key]
  if not ran[entry.binding] then
    ran[entry.binding] = true
    local all = {}
    for _, e in pairs(BY_KEY) do
      if e.binding == entry.binding then
        for _, r in ipairs(e.rows) do all[#all + 1] = r end
      end
    end
    table.sort(all, function(a, b) return a.id < b.id end)
    for i = 1, #all, CHUNK do run_rows(table.move(all, i, math.min(i + CHUNK - 1, #all), 1, {})) end
  end
  return entry.rows
end

-- ---- what a row must show ---------------------------------------------------------------

-- The words an error may use to name what was wrong: "argument", the
-- binding's name, the fields of its options.
local WORDS = {}
local GENERIC = { "argument", "expected", "must be", "is not", "not a ", "invalid", "unknown", "too many",
                  "at most", "no node", "no pod", "no field", "no method", "not in this", "cannot" }
local function base(name) return (name:gsub(" %b()$", "")) end
for _, b in ipairs(BINDINGS) do
  local w = WORDS[base(b[1])] or { b[1]:match("[:.]([%w_]+)") or b[1], table.unpack(GENERIC) }
  WORDS[base(b[1])] = w
  for _, a in ipairs(b[4]) do
    if type(a) == "table" then for f in pairs(a.fields) do w[#w + 1] = f end end
  end
  if b.inner then for f in pairs(b.inner[2].fields) do w[#w + 1] = f end end
  for _, x in ipairs(b.words or {}) do w[#w + 1] = x end
end

local function names_it(row, text)
  for _, w in ipairs(WORDS[base(row.binding)] or {}) do
    if text:find(w, 1, true) then return true end
  end
  return false
end

local function judge(row, r)
  if r == nil then return "no result (the row did not run)" end
  if r.status == "died" then return "the engine did not survive: " .. r.text end
  if r.status == "skipped" then return "the row did not run: " .. r.text end
  if r.nhits > 0 then return "the engine called metamethods of an argument: " .. r.hits end
  if r.reports ~= "" then return "a wrong answer: " .. r.reports end
  -- a callback that raises or yields, or a helper written in Lua looping
  -- over a table whose metamethods never end: the script's own doing
  if row.shape.own or (row.lua and r.status ~= "raised") then return nil end
  -- (a value written whole, its NUL escaped as JSON does, is not cut)
  if row.shape[1] == "a string with NUL" and not r.text:find("a\\u0000b", 1, true) and
     (r.text:find("\"a\"", 1, true) or r.text:find("'a'", 1, true)) then
    return "the message cuts the value at its NUL: " .. r.text:sub(1, 300)
  end
  if r.status == "stopped" then
    -- the budget or the cap stopped it: fair for what is big
    if (r.text:find("memory limit", 1, true) or r.text:find("time budget", 1, true)) and row.shape.big then
      return nil
    end
    return "stopped by its limits: " .. r.text:sub(1, 300)
  end
  if r.status == "error" and r.len and r.len > 2048 then
    return string.format("an error message of %d bytes (the value quoted whole): %s", r.len, r.text:sub(1, 100))
  end
  if r.status == "raised" then return "the row raised outside the call: " .. r.text:sub(1, 300) end
  if r.status == "error" then
    if row.shape.own then return nil end
    if r.text:find("memory limit", 1, true) and row.shape.big then return nil end
    if not names_it(row, r.text) then return "an error that does not say what was wrong: " .. r.text:sub(1, 300) end
  end
  return nil
end

describe("every binding with hostile values", function()
  local keys = {}
  for k in pairs(BY_KEY) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, key in ipairs(keys) do
    it(key, function()
      local failed = {}
      for _, row in ipairs(results_for(key)) do
        local why = judge(row, RESULTS[row.id])
        if why then failed[#failed + 1] = "  " .. row.shape[1] .. ": " .. why end
      end
      assert(#failed == 0, string.format("%s: %d of %d shapes failed:\n%s\n", key, #failed,
        #BY_KEY[key].rows, table.concat(failed, "\n")))
    end)
  end

  it("evicts no protected pod, whatever the rows asked", function()
    -- every binding above has run by now (busted runs these in order)
    for _, key in ipairs(keys) do results_for(key) end
    local bad = {}
    for _, e in ipairs(EVICTED) do
      if PROTECTED[e.pod] then bad[#bad + 1] = e.pod .. " (" .. tostring(e.reason) .. ")" end
    end
    assert(next(PROTECTED) ~= nil, "the protected pods were listed")
    assert(#bad == 0, "protected pods evicted: " .. table.concat(bad, ", "))
  end)
end)

-- ---- the cases known to break ---------------------------------------------------------

describe("hostile values known to break the engine", function()
  -- One row run alone: -> its result, the plan, the child's peak RSS (KiB).
  local function one(code, o)
    o = o or {}
    local row = { id = 0, binding = o.binding or "?", evictor = o.evictor, keep = o.keep,
                  code = "local H, ctx, nodes, ebb, A1 = ...\n" .. code }
    local results, protected, plan, hwm = run_child({ row }, o)
    if results == nil then return nil, protected end
    return results[0], plan, hwm, protected
  end

  local function clean(r, why)
    assert(r, "the engine did not survive: " .. tostring(why))
    assert.equal(0, r.nhits, "the engine called metamethods of an argument: " .. r.hits)
    assert.equal("", r.reports, r.reports)
  end

  it("ebb.selector reads matchLabels once (a table answering a bigger map the second time)", function()
    local r, why = one([[
      local spec = H.flip("matchLabels", { app = "web" }, H.bigmap(1000))
      local s = H.call("ebb.selector", ebb.selector, spec)
      -- read raw, spec has no matchLabels: the selector selects everything
      return s and tostring(s)
    ]], { binding = "ebb.selector" })
    clean(r, why)
  end)

  for _, len in ipairs({ { "1 << 61", "huge" }, { "-1", "neg" } }) do
    for _, m in ipairs({ "order", "removable" }) do
      it("LoadSet:" .. m .. " takes the length of a list of pods raw (__len answering " .. len[1] .. ")", function()
        local r, why = one(string.format([[
          local set = H.d.loadset
          local node = H.node(2)
          local pods = H.meta({ H.pod(1), H.pod(2) }, %q, 2)
          local l = H.call("LoadSet:%s", H.m("loadset", %q), set, node, pods, %s)
          return l and #l
        ]], len[2], m, m, m == "order" and "{ cpu = 1 }" or "ebb.nodes('all')"), { binding = "LoadSet:" .. m })
        clean(r, why)
        if r.status == "ok" then
          local n = tonumber(r.text)
          assert(n == nil or (n >= 0 and n <= 2), "a list of 2 pods gave " .. r.text .. " pods")
        else
          assert.is_true(r.text:find("argument", 1, true) ~= nil or r.text:find("pods", 1, true) ~= nil, r.text)
        end
      end)
    end
  end

  it("ctx.api:create sends no second podRef under a key with a NUL (\"podRef\\0x\")", function()
    -- which of two keys C reads as "podRef" comes first depends on where
    -- the table puts them (its hash seed is random, its size is the
    -- row's): 20 tables of different sizes, one create each, the pod kept
    -- only when the create was taken
    local rows = {}
    for k = 1, 20 do
      rows[k] = { id = k, binding = "EvictorApi:create", evictor = true, keep = true, code = string.format([[
        local H, ctx, nodes, ebb, A1 = ...
        local other = H.pod(1)
        local spec = { podRef = { name = A1.name, namespace = A1.namespace } }
        for i = 1, %d do spec["f" .. i] = i end
        spec["podRef\0" .. string.rep("x", %d)] = { name = other.name, namespace = other.namespace }
        return H.call("EvictorApi:create", H.m("api", "create"), ctx.api, {
          metadata = { name = "pmj-" .. A1.uid }, spec = spec })
      ]], k * 3, k) }
    end
    local results, protected, plan = run_child(rows)
    assert(results, "the engine did not survive: " .. tostring(protected))
    for k = 1, #rows do
      clean(results[k], "row " .. k)
      if results[k].status == "error" then assert.matches("podRef", results[k].text) end
    end
    for _, e in ipairs(plan.evictions) do
      local req = e.request or ""
      local _, n = req:gsub('"podRef', "")
      assert.equal(1, n, "one podRef in the request for " .. e.pod .. ": " .. req)
      local ns, name = e.pod:match("^([^/]+)/(.*)$")
      assert.truthy(req:find('"name":"' .. name .. '"', 1, true), req)
      assert.truthy(req:find('"namespace":"' .. ns .. '"', 1, true), req)
    end
  end)

  it("ebb.json writes no key twice (a key with a NUL)", function()
    local r, why = one([[
      return H.call("ebb.json", ebb.json, { ["a\0b"] = 1, a = 2 })
    ]], { binding = "ebb.json" })
    clean(r, why)
    if r.status == "error" then
      assert.matches("NUL", r.text)
    else
      -- {"a":2,"a\u0000b":1}: the key "a" once
      local _, n = r.text:gsub('"a":', "")
      assert.equal(1, n, "the key a once: " .. r.text)
    end
  end)

  it("ctx.api:patch sends no label twice (a key with a NUL)", function()
    local rows = {}
    for k = 1, 8 do
      rows[k] = { id = k, binding = "EvictorApi:patch", evictor = true, keep = true, code = string.format([[
        local H, ctx, nodes, ebb, A1 = ...
        local labels = { drain = "no" }
        for i = 1, %d do labels["f" .. i] = "x" end
        labels["drain\0" .. string.rep("x", %d)] = "yes"
        return H.call("EvictorApi:patch", H.m("api", "patch"), ctx.api, { metadata = { labels = labels } })
      ]], k * 3, k) }
    end
    local results, protected, plan = run_child(rows)
    assert(results, "the engine did not survive: " .. tostring(protected))
    for k = 1, #rows do
      clean(results[k], "row " .. k)
      if results[k].status == "error" then assert.matches("drain", results[k].text) end
    end
    for _, e in ipairs(plan.evictions) do
      local _, n = (e.request or ""):gsub('"drain', "")
      assert.equal(1, n, "one label drain in the request for " .. e.pod .. ": " .. tostring(e.request))
    end
  end)

  for _, form in ipairs({ "table", "string" }) do
    it("a selector keeps all of 70,000 NotIn values (" .. form .. " form)", function()
      local r, why = one(string.format([[
        local pod
        for _, p in ebb.pods(ebb.nodes("all"), { phase = "all" }):iter() do
          if p:label("app") then pod = p; break end
        end
        -- the pod's own value first: a count kept in 16 bits keeps only
        -- the last 4464 of them
        local values = H.big(70000)
        values[1] = pod:label("app")
        local spec = %s
        local s = H.call("ebb.selector", ebb.selector, spec)
        if s == nil then return "refused" end
        -- the pod's own value is listed: NotIn must not match it
        return tostring(s:matches(pod))
      ]], form == "table" and "{ matchExpressions = { { key = 'app', operator = 'NotIn', values = values } } }"
                            or "'app notin (' .. table.concat(values, ',') .. ')'"), { binding = "ebb.selector" })
      clean(r, why)
      if r.status == "error" then
        -- refusing it is fair if the message says why
        assert.truthy(r.text:find("values", 1, true) or r.text:find("selector", 1, true), r.text)
      else
        assert.equal("false", r.text, "the pod whose label is the first of 70,000 values is not matched")
      end
    end)
  end

  it("printing a Selector of 60,000 values is stopped by the call's budget", function()
    -- each print is one C call: quadratic in the values, it runs on for
    -- seconds after the 1 s budget expired, which a 15 s bound on the
    -- whole child notices (the budget alone says the same either way)
    local r, why = one([[
      local s = ebb.selector({ matchExpressions = { { key = "x", operator = "NotIn", values = H.big(60000) } } })
      for _ = 1, 5 do H.call("Selector:__tostring", tostring, s) end
      return "printed"
    ]], { binding = "Selector:__tostring", budget = 1000, seconds = 15 })
    clean(r, why)
  end)

  it("a plugin cannot fill the process-wide table of resource names", function()
    local r, why = one([[
      H.call("ebb.node_usage", ebb.node_usage, nil, { resources = H.big(70) })
      H.call("ebb.node_loads", ebb.node_loads, ebb.nodes("all"), { low = H.bigmap(70, 10) })
      -- scripts have a share of their own (ebb/model.h): names an object
      -- has still resolve, and the objects' share is untouched (test_model)
      local ok1, u = pcall(ebb.node_usage, nil, { resources = { "cpu", "memory" } })
      local ok2, v = pcall(ebb.node_usage, nil, { resources = { "example.com/after" } })
      H.errors["ebb.node_usage"] = nil
      return (ok1 and "ok" or tostring(u)) .. " ; " .. (ok2 and "ok" or tostring(v))
    ]], { binding = "ebb.node_usage" })
    clean(r, why)
    assert.matches("^ok ; ", r.text)
    -- a name no object has is refused once the scripts' share is used, saying so
    assert.truthy(r.text:find("; ok", 1, true) or r.text:find("scripts may name at most 8", 1, true), r.text)
  end)

  -- What a loop making native objects costs, against a child that does
  -- nothing: the objects are charged to the 32 MiB cap (and freed with
  -- them), so the process stays within the cap and the engine's own.
  local baseline
  local function base()
    if baseline == nil then
      local r, _, hwm = one([[ return ebb.now() ]], { mem = 32 << 20 })
      assert(r and hwm, "the baseline child finished")
      baseline = hwm
    end
    return baseline
  end
  for _, make in ipairs({
    { "Selector", [[ebb.selector({ matchLabels = { app = "web" }, matchExpressions = { { key = "tier", operator = "In", values = { "a", "b", "c" } } } })]] },
    { "AntiAffinityIndex", [[ebb.anti_affinity_index(pods)]] },
    { "LoadSet", [[ebb.node_loads(ebb.nodes("all"), { low = { cpu = 20, memory = 20 }, high = { cpu = 50, memory = 50 } })]] },
    { "NodeUsage", [[ebb.node_usage(nil, { resources = { "cpu", "memory", "pods" } })]] },
  }) do
    it("a loop making " .. make[1] .. " objects stays within a 32 MiB cap", function()
      local r, plan, hwm = one(string.format([[
        local pods = ebb.pods(nil, { phase = "all" })
        local keep = {}
        for i = 1, 1e7 do keep[i] = %s end
      ]], make[2]), { mem = 32 << 20, budget = 20000, seconds = 120, mb = 4096 })
      assert(r or plan, "the engine did not survive: " .. tostring(plan))
      local grown = (hwm or math.huge) - base()
      assert(grown < (32 + 64) * 1024, string.format("resident memory grew by %d MiB under a 32 MiB cap",
        grown // 1024))
    end)
  end
end)
