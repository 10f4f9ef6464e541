-- What ebb writes is valid whatever a strategy or an object puts in it: the
-- JSON plan is UTF-8 a strict reader takes (spec/strict_json.py), a NUL in a
-- note is kept, the table, the log, `ebb test`'s output and the HTML report
-- hold one record per line and no control byte, error messages that would be
-- too long end in an ellipsis, and quantities past int64 saturate instead of
-- wrapping. Each hostile string is tried in every place a strategy can put
-- text: notes (with a node name), eviction reasons, an evictor's refusal, an
-- evictor's patch, a plugin error, print and ebb.log.
local h = require("spec.helpers")
local S = require("spec.shell")

local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
local SNAP = "spec/fixtures/kubectl-list.json"

-- Lua source for the hostile strings: every kind of byte a C string, a JSON
-- writer or a terminal can get wrong.
local HOSTILE_SRC = [[{
  "a\0b",                                  -- NUL inside
  "bad \xff\xfe byte",                     -- bytes that start nothing
  "cut \xc3",                              -- a sequence cut short at the end
  "cut \xe2\x82 inside",                   -- ... and in the middle
  "overlong \xc0\x80 \xe0\x80\xaf",        -- overlong forms (a NUL and a '/')
  "surrogate \xed\xa0\x80\xed\xbf\xbf",    -- UTF-16 surrogates
  "beyond \xf4\x90\x80\x80 \xf8\x88\x80\x80\x80",
  "line1\nebb: error: forged\r\t\x1b[31mred\x1b[0m\x07\x7f\x08\x0c",
  "csi \xc2\x9b31m nel \xc2\x85 ls \xe2\x80\xa8 ps \xe2\x80\xa9 rlo \xe2\x80\xae",
  'quote " backslash \\ slash / <b>&amp;</b>',
  "\0",
  "",
  string.rep("\xe2\x82\xac", 1300),        -- 3,900 bytes of euro signs
}]]

local STRATEGY = [[
local ebb = require("ebb")
local H = ]] .. HOSTILE_SRC .. [[

-- every string but the longest in one reason, the NUL last
local R = table.concat(H, " | ", 2, #H - 1) .. " | " .. H[1]

return {
  name = "Hostile",
  deschedule = function(ctx, nodes)
    -- profile "hostile" evicts the pods of namespace default, its twin with
    -- the evictor those of prod: the first profile leaves them for it
    local ns = ctx.profile == "hostile" and "default" or "prod"
    for _, pod in ebb.pods(nodes, { evictable = true }):iter() do
      if pod.namespace == ns then ctx.evictor:evict(pod, { reason = R }) end
    end
    for _, s in ipairs(H) do
      ebb.note(s)
      ebb.note(s, s)
      print(s)
      print("two", s, "args")
      ebb.log("warn", s)
    end
    error(table.concat(H, " | "))
  end,
}
]]

-- Patches the first pod with the strategy's reason, refuses the others with it.
local EVICTOR = [[
local n = 0
return {
  name = "HostileEvictor",
  evict = function(ctx, pod, opts)
    n = n + 1
    if n % 2 == 0 then return false, opts.reason end
    ctx.api:patch({ metadata = { annotations = { ["example.com/why"] = opts.reason } } })
    return true
  end,
}
]]

local POLICY = [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: hostile
  pluginConfig:
  - name: DefaultEvictor
    args: {evictSystemCriticalPods: true, evictLocalStoragePods: true, nodeFit: false}
  - name: Hostile
  plugins:
    deschedule: {enabled: [Hostile]}
- name: hostile-evictor
  pluginConfig:
  - name: DefaultEvictor
    args: {evictSystemCriticalPods: true, evictLocalStoragePods: true, nodeFit: false}
  - name: Hostile
  - name: HostileEvictor
  plugins:
    deschedule: {enabled: [Hostile]}
    evict: {enabled: [HostileEvictor]}
]]

local NHOSTILE = select(2, HOSTILE_SRC:gsub("\n  [\"'s]", ""))

local dir, policy

local run = S.run

local function simulate(args)
  return run(string.format("%s simulate --snapshot %s --policy %s --policy-dir %s --now %s %s",
    EBB, SNAP, S.shq(policy), S.shq(dir), h.NOW, args or ""))
end

-- strict(text) -> exit code, the document in ASCII JSON (or the reason it was refused)
local function strict(text)
  local f = S.tmpfile(text)
  local code, out = S.sh("python3 spec/strict_json.py < " .. f)
  os.remove(f)
  return code, out
end

-- The bytes a line of text for a person may not hold: controls but tab
-- (escaped by ebb, so never there either), DEL, and what is not UTF-8.
local function bad_line(line)
  local c = line:find("[%z\1-\31\127]")
  if c then return string.format("control byte %d at %d", line:byte(c), c) end
  if utf8.len(line) == nil then return "not UTF-8" end
  if line:find("\xc2[\x80-\x9f]") then return "a C1 control" end
  if line:find("\xe2\x80[\xa8\xa9\xaa-\xae]") then return "a line separator or bidi control" end
end

local function lines(text)
  local out = {}
  for l in text:gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end

setup(function()
  dir = h.plugin_dir({ ["hostile.lua"] = STRATEGY, ["hostile_evictor.lua"] = EVICTOR })
  policy = dir .. "/policy.yaml"
  S.write(policy, POLICY)
end)
teardown(function() h.rmdir(dir) end)

describe("ebb simulate --output json with hostile strings", function()
  it("prints UTF-8 JSON that a strict reader takes", function()
    local code, out, err = simulate("--output json")
    assert.equal(0, code, err)
    local scode, doc = strict(out)
    assert.equal(0, scode, doc)
    -- every place was reached
    assert.matches('"notes": %[{', doc)
    assert.matches('"errors": %[{', doc)
    assert.matches('"evictions": %[{', doc)
    assert.matches('"why": "evictor"', doc)
    assert.matches('"action": "patch annotations', doc)
  end)

  it("prints UTF-8 JSON with --reschedule too", function()
    local code, out, err = simulate("--output json --reschedule --cycles 1")
    assert.equal(0, code, err)
    local scode, doc = strict(out)
    assert.equal(0, scode, doc)
    assert.matches('"placements":', doc)
  end)

  it("replaces what is not UTF-8 with U+FFFD and escapes controls, keeping the rest", function()
    local _, out = simulate("--output json")
    local _, doc = strict(out)
    assert.truthy(doc:find('"message": "bad \\ufffd\\ufffd byte"', 1, true), doc:sub(1, 2000))
    assert.truthy(doc:find('"message": "cut \\ufffd"', 1, true))
    assert.truthy(doc:find('"message": "line1\\nebb: error: forged\\r\\t\\u001b[31mred\\u001b[0m\\u0007\\u007f'
      .. '\\b\\f"', 1, true))
    assert.truthy(doc:find('"message": "quote \\" backslash \\\\ slash / <b>&amp;</b>"', 1, true))
    assert.truthy(doc:find('"message": "' .. string.rep("\\u20ac", 1300) .. '"', 1, true))
  end)
end)

describe("a NUL in a note", function()
  it("is kept in the JSON plan as \\u0000", function()
    local _, out = simulate("--output json")
    local _, doc = strict(out)
    assert.truthy(doc:find('"message": "a\\u0000b"', 1, true), doc:sub(1, 2000))
    assert.truthy(doc:find('"message": "\\u0000"', 1, true))
    -- and in the node it names
    assert.truthy(doc:find('"node": "a\\u0000b"', 1, true))
  end)

  it("is kept in the table as \\x00", function()
    local code, out, err = simulate("")
    assert.equal(0, code, err)
    assert.truthy(out:find("hostile/Hostile: a\\x00b\n", 1, true), out)
    assert.truthy(out:find("hostile/Hostile a\\x00b: a\\x00b\n", 1, true), out)
  end)

  it("is kept in the plan a Lua caller reads", function()
    local plan = h.simulate{ snapshot = SNAP, policy = policy, policy_dirs = { dir } }
    local msgs = plan:note_messages()
    assert.equal("a\0b", msgs[1])
    assert.equal("\0", msgs[21])
  end)
end)

describe("the table", function()
  it("holds one line per entry and no control byte", function()
    local code, out, err = simulate("")
    assert.equal(0, code, err)
    for i, l in ipairs(lines(out)) do
      assert.is_nil(bad_line(l), "line " .. i .. ": " .. l)
    end
    -- two notes per string and one plugin error, in each of the two profiles
    local entries = select(2, out:gsub("\ncycle 1  hostile[%w-]*/Hostile", ""))
    assert.equal(2 * (2 * NHOSTILE + 1), entries)
  end)
end)

describe("the log", function()
  it("has one record per line, each escaped, whatever a script prints", function()
    local code, _, err = simulate("--output json")
    assert.equal(0, code, err)
    local records = 0
    for i, l in ipairs(lines(err)) do
      assert.matches("^ebb: %a+: ", l, "line " .. i)
      assert.is_nil(bad_line(l), "line " .. i .. ": " .. l)
      if l:find("[Hostile] ", 1, true) then records = records + 1 end
    end
    -- print twice and ebb.log once per string, in each of the two profiles
    assert.equal(2 * 3 * NHOSTILE, records)
    assert.truthy(err:find("ebb: warning: [Hostile] line1\\nebb: error: forged\\r\\t\\x1b[31mred\\x1b[0m"
      .. "\\x07\\x7f\\x08\\x0c\n", 1, true), err)
    assert.truthy(err:find("ebb: info: [Hostile] two\\ta\\x00b\\targs\n", 1, true), err)
    assert.truthy(err:find("ebb: warning: [Hostile] a\\x00b\n", 1, true), err)
    assert.truthy(err:find("ebb: info: [Hostile] csi \\u009b31m nel \\u0085 ls \\u2028 ps \\u2029 rlo \\u202e\n",
      1, true), err)
  end)
end)

describe("error messages", function()
  it("are one line, and a huge name in one is cut with an ellipsis", function()
    -- a plugin name no plugin has, with an ESC, as JSON (which YAML reads)
    local name = "Evil\\u001b[2J" .. string.rep("x", 5000)
    local pol = S.tmpfile((h.policy{ plugins = { { name = "NAME" } } }:gsub("NAME", name)))
    local code, out, err = run(EBB .. " check --policy " .. pol)
    os.remove(pol)
    assert.equal(2, code, out)
    local ls = lines(err)
    assert.equal(1, #ls, err)
    assert.is_nil(bad_line(ls[1]), ls[1])
    assert.matches("Evil\\x1b%[2Jxxxx", ls[1])
    assert.matches("\u{2026}$", ls[1])
  end)
end)

describe("quantities past int64", function()
  local big

  setup(function()
    local text = assert(S.read(SNAP))
    -- web-7d4b9c-x2k9p on node-a asks for 1e400 of cpu and memory
    local n
    text, n = text:gsub('("name": "web%-7d4b9c%-x2k9p".-"requests": {)(.-)(})',
      '%1"cpu": "1e400", "memory": "1e400"%3', 1)
    assert.equal(1, n)
    big = S.tmpfile(text)
  end)
  teardown(function() os.remove(big) end)

  it("saturate: utilization is a large positive number in JSON and in the table", function()
    local pol = S.tmpfile(h.policy{ plugins = { { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 600 } } } })
    local code, out, err = run(string.format("%s simulate --snapshot %s --policy %s --now %s --output json",
      EBB, big, pol, h.NOW))
    assert.equal(0, code, err)
    local scode, doc = strict(out)
    assert.equal(0, scode, doc)
    -- before: PodLifeTime evicts that pod
    local cpu = assert(doc:match('"before": {"cpu": ([^,]+), "memory": [^,]+, "pods": [^}]+}, "name": "node%-a"'),
      doc)
    assert.is_true(tonumber(cpu) > 1e6, cpu)
    code, out, err = run(string.format("%s simulate --snapshot %s --policy %s --now %s", EBB, big, pol, h.NOW))
    os.remove(pol)
    assert.equal(0, code, err)
    assert.is_nil(out:match("\nnode%-a [^\n]*%-%d"), out)
  end)

  it("saturate in what a strategy reads", function()
    local src = [[
local ebb = require("ebb")
return { name = "Big", deschedule = function(ctx, nodes)
  for _, pod in ebb.pods(nodes):iter() do
    local r = pod.requests
    ebb.note(pod.name .. " " .. tostring(r.cpu) .. " " .. tostring(r.memory))
  end
end }]]
    local d = h.plugin_dir({ ["big.lua"] = src })
    local plan = h.simulate{ snapshot = big, plugin = "Big", policy_dirs = { d } }
    h.rmdir(d)
    local found
    for _, m in ipairs(plan:note_messages()) do
      if m:find("^web%-7d4b9c%-x2k9p ") then found = m end
    end
    assert.equal("web-7d4b9c-x2k9p " .. math.maxinteger .. " " .. math.maxinteger, found)
  end)
end)

describe("the HTML report", function()
  it("escapes every name, holds no control byte, cuts long names between characters", function()
    -- node-a renamed: an ESC, markup, then two-byte characters, so that
    -- the label's cut (its last 43 bytes) falls inside one
    local name = "node-\\u001b[2J<b>&x" .. string.rep("\\u00e9", 40) .. "-a"
    local text = assert(S.read(SNAP)):gsub('"node%-a"', '"' .. name .. '"')
    local snap, html = S.tmpfile(text), os.tmpname()
    local pol = S.tmpfile(h.policy{ plugins = { { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 600 } } } })
    local code, out, err = run(string.format("%s simulate --snapshot %s --policy %s --now %s --reschedule "
      .. "--report %s", EBB, snap, pol, h.NOW, html))
    local report = S.read(html) or ""
    os.remove(snap)
    os.remove(pol)
    os.remove(html)
    assert.equal(0, code, err)
    assert.is_nil(report:find("[%z\1-\8\11-\31\127]"))
    assert.is_not_nil(utf8.len(report))
    assert.truthy(report:find("node-\\x1b[2J&lt;b&gt;&amp;x\u{e9}", 1, true))
    assert.is_nil(report:find("<b>&x", 1, true))
    -- the table and the log too
    for i, l in ipairs(lines(out)) do assert.is_nil(bad_line(l), "line " .. i .. ": " .. l) end
    for i, l in ipairs(lines(err)) do assert.is_nil(bad_line(l), "line " .. i .. ": " .. l) end
  end)
end)

describe("ebb test's report", function()
  it("shows a hostile reason, note and case name inside their lines", function()
    local d = h.plugin_dir({
      ["hostile.lua"] = STRATEGY,
      ["hostile_test.yaml"] = [[
snapshot: testdata/cluster.json
evictor: {evictSystemCriticalPods: true, evictLocalStoragePods: true, nodeFit: false}
cases:
- name: "evil \e[2J\r\nFAIL forged"
  expect:
    evictions:
    - {pod: default/debug-shell, reason: "something else"}
    notes: ["not there"]
]],
    })
    assert(os.execute("mkdir -p " .. S.shq(d .. "/testdata") .. " && cp " .. SNAP .. " " .. S.shq(d .. "/testdata/cluster.json")))
    -- ebb test uses profile "test": the strategy evicts the pods of prod there
    local code, out, err = run(EBB .. " test " .. S.shq(d))
    h.rmdir(d)
    assert.equal(1, code, out .. err)
    for i, l in ipairs(lines(out)) do assert.is_nil(bad_line(l), "line " .. i .. ": " .. l) end
    assert.truthy(out:find("FAIL  hostile/evil \\x1b[2J\\r\\nFAIL forged  (", 1, true), out)
    assert.truthy(out:find("unexpected: Hostile: a\\x00b\n", 1, true), out)
    assert.truthy(out:find("line1\\nebb: error: forged\\r\\t\\x1b[31mred", 1, true), out)
    assert.is_nil(out:find("\nFAIL forged", 1, true))
  end)
end)
