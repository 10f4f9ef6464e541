-- make install: the binary and its Lua runtime under PREFIX; the tree runs
-- wherever it is copied, without EBB_HOME, from any working directory.
local shell = require("spec.shell")
local shq, sh = shell.shq, shell.sh

local function scratch()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p " .. shq(d)))
  return d
end

describe("make install", function()
  local root, prefix, moved
  setup(function()
    root = scratch()
    prefix = root .. "/prefix"
    moved = root .. "/elsewhere/opt"
    local code, out = sh("make -s install B=" .. shq(os.getenv("EBB_BUILD") or "build")
      .. " PREFIX=" .. shq(prefix))
    assert.equal(0, code, out)
    assert(os.execute("mkdir -p " .. shq(root .. "/elsewhere") .. " && cp -a " .. shq(prefix)
      .. " " .. shq(moved)))
    assert(os.execute("rm -rf " .. shq(prefix)))
  end)
  teardown(function() os.execute("rm -rf " .. shq(root)) end)

  it("lays out bin/ebb and share/ebb with every built-in strategy and the library", function()
    assert.truthy(shell.read(moved .. "/bin/ebb"))
    assert.truthy(shell.read(moved .. "/share/ebb/lua/ebb/init.lua"))
    for f in io.popen("ls policies"):lines() do
      assert.truthy(shell.read(moved .. "/share/ebb/policies/" .. f), "policies/" .. f)
    end
  end)

  it("a copied tree simulates the bundled demo without EBB_HOME, from another directory", function()
    local ex = moved .. "/share/ebb/examples/"
    local code, out = sh("cd / && env -u EBB_HOME " .. shq(moved .. "/bin/ebb")
      .. " simulate --snapshot " .. shq(ex .. "demo-cluster.json") .. " --policy "
      .. shq(ex .. "demo-policy.yaml") .. " --now 2026-11-22T12:00:00Z --output json")
    assert.equal(0, code, out)
    assert.truthy(out:match('"evictions"'), out)
    assert.falsy(out:match("cannot find the directory"), out)
  end)

  it("EBB_HOME still overrides: a home without the runtime is not found there", function()
    local ex = moved .. "/share/ebb/examples/"
    local code, out = sh("cd / && EBB_HOME=" .. shq(root) .. " " .. shq(moved .. "/bin/ebb")
      .. " simulate --snapshot " .. shq(ex .. "demo-cluster.json") .. " --policy "
      .. shq(ex .. "demo-policy.yaml"))
    assert.are_not.equal(0, code)
    assert.truthy(out:find(root .. "/policies: cannot open directory", 1, true), out)
  end)
end)
