-- `ebb test [DIR]`: the strategy author's test runner, run as a command on
-- the example directories of spec/fixtures/ebbtest (a passing strategy, a
-- failing test file, bad inputs) and on the example of docs/ebb-test.md.
describe("ebb test", function()
  local S = require("spec.shell")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
  local FIX = "spec/fixtures/ebbtest"

  -- run(args...) -> exit code, stdout, stderr
  local function run(...)
    return S.run(S.cmdline(EBB, ...))
  end

  -- `text` contains every one of the (plain) strings
  local function has(text, ...)
    for _, s in ipairs({ ... }) do
      if not text:find(s, 1, true) then
        error(string.format("expected to find:\n%s\nin:\n%s", s, text), 2)
      end
    end
  end

  local function count(text, s)
    local n, i = 0, 1
    while true do
      local j = text:find(s, i, true)
      if not j then return n end
      n, i = n + 1, j + #s
    end
  end

  describe("a passing strategy", function()
    it("passes every case and exits 0", function()
      local code, out = run("test", FIX .. "/good")
      assert.equal(0, code)
      has(out, "ok    drain_cordoned_test.yaml  9 cases\n", "\n9 passed, 0 failed\n")
      assert.equal(0, count(out, "FAIL"))
    end)

    it("prints a line per case with -v", function()
      local code, out = run("test", FIX .. "/good", "-v")
      assert.equal(0, code)
      has(out, "ok    drain_cordoned/drains the labelled node oldest first\n",
        "ok    drain_cordoned/without a selector every cordoned node is drained\n",
        "ok    drain_cordoned/one pod per cycle with maxPodsPerNode\n",
        "ok    drain_cordoned/with PodLifeTime in one profile\n")
      assert.equal(9, count(out, "ok    drain_cordoned/"))
    end)

    it("runs only the cases --run names", function()
      local code, out = run("test", FIX .. "/good", "--run", "drain_cordoned/the policy's", "-v")
      assert.equal(0, code)
      has(out, "ok    drain_cordoned/the policy's node limit stops the drain\n", "\n1 passed, 0 failed\n")
      assert.equal(1, count(out, "ok    drain_cordoned/"))
    end)

    it("tests DIR = . by default", function()
      local code, out = run("test", "--help")
      assert.equal(0, code)
      has(out, "usage: ebb test [DIR]")
      local _, text = S.sh("cd " .. FIX .. "/good && " .. os.getenv("PWD") .. "/" .. EBB
        .. " test 2>&1; echo \"exit $?\"")
      has(text, "ok    drain_cordoned_test.yaml  9 cases\n", "exit 0")
    end)
  end)

  describe("a failing test file", function()
    local code, out

    setup(function() code, out = run("test", FIX .. "/failing") end)

    it("exits 1 and counts the cases", function()
      assert.equal(1, code)
      has(out, "FAIL  drain_cordoned_test.yaml  2 of 3 cases failed\n", "\n1 passed, 2 failed\n")
      assert.is_nil(out:find("drain_cordoned/holds", 1, true))
    end)

    it("shows an ordered diff with attributes under their pod", function()
      has(out, "FAIL  drain_cordoned/order and attributes  ("
        .. FIX .. "/failing/drain_cordoned_test.yaml:13)\n"
        .. "      evictions (in order; - expected, + actual):\n"
        .. "        - shop/web-7d4b9c-9vlzt\n"
        .. "          shop/web-7d4b9c-2xk4p   [node-c, DrainCordoned, cycle 1: node node-c is cordoned for draining]\n"
        .. "              node: expected node-d, got node-c\n"
        .. "        + shop/web-7d4b9c-9vlzt   [node-c, DrainCordoned, cycle 1: node node-c is cordoned for draining]\n"
        .. "          batch/report-28391540-7hx2c   [node-c, DrainCordoned, cycle 1: node node-c is cordoned for draining]\n"
        .. "              reason: expected to contain \"too old\", got \"node node-c is cordoned for draining\"\n"
        .. "        (the same pods in a different order)\n")
    end)

    it("shows what is missing and unexpected", function()
      has(out, "FAIL  drain_cordoned/missing and unexpected  (",
        "      evictions (in any order):\n"
        .. "        missing:    shop/web-7d4b9c-h5jwd\n"
        .. "        unexpected: shop/web-7d4b9c-9vlzt   [node-c, DrainCordoned, cycle 1: node node-c is cordoned for draining]\n"
        .. "      refusals:\n"
        .. "        missing:    shop/cart-5f6d8b-q8n2w (node-limit)\n"
        .. "        unexpected: shop/cart-5f6d8b-q8n2w (pdb, by DrainCordoned, cycle 1: shop/cart: Cannot evict pod",
        "        unexpected: batch/report-28391540-7hx2c (node-limit, by DrainCordoned, cycle 1)\n"
        .. "      plugin errors:\n"
        .. "        missing:    \"DrainCordoned: attempt to index\"\n"
        .. "      notes:\n"
        .. "        unexpected: DrainCordoned: node-c: shop/cache-0 fits no other node: left for a later cycle\n")
    end)
  end)

  describe("bad input exits 2", function()
    it("an unknown key, with its line", function()
      local code, out = run("test", FIX .. "/bad/unknown-key")
      assert.equal(2, code)
      has(out, FIX .. "/bad/unknown-key/drain_cordoned_test.yaml:6: cases[0].expect: "
        .. 'unknown key "evictons" (expected one of: evictions, refusals, errors, notes, invalid)\n',
        "0 passed, 0 failed, 1 with bad input\n")
    end)

    it("broken YAML, with its line", function()
      local code, out = run("test", FIX .. "/bad/yaml")
      assert.equal(2, code)
      has(out, FIX .. "/bad/yaml/drain_cordoned_test.yaml:6: did not find expected ',' or ']'")
    end)

    it("args the plugin refuses, at their line in the test file; the other cases run", function()
      local code, out = run("test", FIX .. "/bad/args")
      assert.equal(2, code)
      has(out, "ERROR drain_cordoned/a negative cap\n      " .. FIX .. "/bad/args/drain_cordoned_test.yaml:9: "
        .. "cases[0].args.maxPodsPerNode: DrainCordoned: -1 is out of range",
        "1 passed, 0 failed, 1 with bad input\n")
    end)

    it("a missing snapshot", function()
      local code, out = run("test", FIX .. "/bad/snapshot")
      assert.equal(2, code)
      has(out, FIX .. "/bad/snapshot/drain_cordoned_test.yaml:4: cases[0].snapshot: cannot read the snapshot "
        .. FIX .. "/bad/snapshot/testdata/cluster.yaml: No such file or directory")
    end)

    it("a strategy that does not load, with its line", function()
      local code, out = run("test", FIX .. "/bad/broken-lua")
      assert.equal(2, code)
      has(out, "ERROR loading " .. FIX .. "/bad/broken-lua\n",
        FIX .. "/bad/broken-lua/evict_idle.lua:9:", "'then' expected near 'ctx'")
    end)

    it("a test file without its strategy; a strategy without tests is listed", function()
      local code, out = run("test", FIX .. "/bad/orphan")
      assert.equal(2, code)
      has(out, "ERROR " .. FIX .. "/bad/orphan/lonely_test.yaml\n"
        .. "      there is no lonely.lua beside it", "no tests  untested.lua\n")
    end)

    it("a directory without tests, a --run matching nothing, a bad flag", function()
      local code, out = run("test", FIX)
      assert.equal(2, code)
      has(out, "no *_test.yaml files")
      code, out = run("test", FIX .. "/good", "--run", "no such case")
      assert.equal(2, code)
      has(out, 'ERROR --run "no such case"\n      no case matches')
      local err
      code, _, err = run("test", FIX .. "/good", "--frobnicate")
      assert.equal(2, code)
      has(err, "unknown flag --frobnicate")
      code, _, err = run("test", FIX .. "/good", FIX .. "/failing")
      assert.equal(2, code)
      has(err, "test takes one directory")
    end)
  end)

  describe("--policy-dir", function()
    it("may name DIR itself, spelt another way", function()
      local code, out = run("test", FIX .. "/good", "--policy-dir", "./" .. FIX .. "/good/")
      assert.equal(0, code)
      has(out, "ok    drain_cordoned_test.yaml  9 cases\n")
    end)

    it("adds plugins a case names", function()
      local dir = S.tmpdir()
      assert(os.execute("mkdir " .. S.shq(dir .. "/lib") .. " " .. S.shq(dir .. "/t")))
      -- a strategy in lib/ that evicts every evictable pod of namespace batch
      S.write(dir .. "/lib/evict_batch.lua", [[
local ebb = require("ebb")
return { name = "EvictBatch", deschedule = function(ctx, nodes)
  for _, pod in ebb.pods(nodes, { evictable = true, namespaces = { include = { "batch" } } }):iter() do
    ctx.evictor:evict(pod, { reason = "batch" })
  end
end }
]])
      S.write(dir .. "/t/noop.lua", 'return { name = "Noop", deschedule = function() end }\n')
      S.write(dir .. "/t/noop_test.yaml", "snapshot: " .. os.getenv("PWD") .. "/" .. FIX
        .. "/good/testdata/cluster.yaml\ncases:\n- name: nothing\n- name: batch\n  plugin: EvictBatch\n"
        .. "  expect: {evictions: [batch/report-28391540-7hx2c]}\n")
      local code, out = run("test", dir .. "/t")
      assert.equal(2, code)
      has(out, 'cases[1].plugin: no plugin named "EvictBatch"')
      code, out = run("test", dir .. "/t", "--policy-dir", dir .. "/lib")
      S.rmdir(dir)
      assert.equal(0, code)
      has(out, "ok    noop_test.yaml  2 cases\n")
    end)
  end)

  it("runs the example of docs/ebb-test.md", function()
    local doc = assert(S.read("docs/ebb-test.md"))
    local example = doc:match("## Example.-```yaml\n(.-)```")
    assert.is_not_nil(example)
    local dir = S.tmpdir()
    local good = os.getenv("PWD") .. "/" .. FIX .. "/good"
    assert(os.execute("ln -s " .. S.shq(good .. "/drain_cordoned.lua") .. " " .. S.shq(dir .. "/")
      .. " && ln -s " .. S.shq(good .. "/testdata") .. " " .. S.shq(dir .. "/")))
    S.write(dir .. "/drain_cordoned_test.yaml", example)
    local code, out = run("test", dir, "-v")
    S.rmdir(dir)
    assert.equal(0, code)
    has(out, "ok    drain_cordoned_test.yaml  7 cases\n", "7 passed, 0 failed")
  end)
end)
