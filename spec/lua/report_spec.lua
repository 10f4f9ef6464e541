-- The HTML report of a what-if run (simulate --reschedule --report), loaded
-- in headless Chromium by spec/browser/report_check.py: no console error,
-- no exception, no request but the file, every chart drawn. Pending with a
-- message where Chromium is not installed.
describe("the what-if report", function()
  local h = require("spec.helpers")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"

  local S = require("spec.shell")
  local sh = S.sh

  -- tmp(suffix) -> a path for a new temporary file ending in suffix
  local function tmp(suffix)
    local t = os.tmpname()
    os.remove(t)
    return t .. suffix
  end

  -- simulate with --report, then check it in the browser; returns the report's text and the checker's output
  local function report(snapshot, policy_text, charts, extra)
    local pol, out = tmp(".yaml"), tmp(".html")
    S.write(pol, policy_text)
    local code, msg = sh(string.format("%s simulate --snapshot %s --policy %s --now %s --reschedule %s --report %s -q",
      EBB, snapshot, pol, h.NOW, extra or "", out))
    os.remove(pol)
    assert.equal(0, code, msg)
    local text = assert(S.read(out))
    local ccode, checked = sh("timeout 180 python3 spec/browser/report_check.py " .. out .. " --charts " .. charts)
    os.remove(out)
    return text, ccode, checked
  end

  local CHARTS = "chart-nodes-cpu,chart-nodes-memory,chart-spread-cpu,chart-spread-memory,chart-spread-pods,"
    .. "chart-evictions"

  if not S.have("chromium") then
    pending("chromium is not installed: run make deps (Debian's chromium package)")
    return
  end

  it("draws a small run as sorted bars, with the loop, and loads cleanly", function()
    local policy = h.policy{ plugins = { { name = "RemovePodsViolatingNodeAffinity",
      args = { nodeAffinityType = { "preferredDuringSchedulingIgnoredDuringExecution" } } } } }
    local text, code, checked = report("spec/fixtures/whatif-loop.json", policy, CHARTS, "--cycles 3")
    assert.equal(0, code, checked)
    assert.matches('"problems": %[%]', checked)
    assert.matches("ReplicaSet shop/web%-84c6f7d9b", text)
    assert.matches("RemovePodsViolatingNodeAffinity %(12%)", text)     -- the legend counts 3 x 4
    assert.not_matches("<script", text)
    assert.not_matches("https?://", text)
  end)

  it("draws a pending pod's message, escaped", function()
    local policy = h.policy{ plugins = { { name = "RemovePodsViolatingNodeTaints" } } }
    local text, code, checked = report("spec/fixtures/whatif-pending.json", policy, CHARTS)
    assert.equal(0, code, checked)
    assert.matches("untolerated taint {dedicated: gpu}", text)
    assert.matches('no profile for scheduler &quot;volcano&quot;: left alone', text)
  end)

  it("draws a few hundred nodes as heatmaps and stays small", function()
    local snap = tmp(".json")
    local code, msg = sh(string.format("python3 spec/bench/gen_cluster.py --nodes 300 --pods 6000 --seed 3 -o %s", snap))
    assert.equal(0, code, msg)
    local policy = h.policy{ plugins = { { name = "LowNodeUtilization", ext = "balance",
      args = { thresholds = { cpu = 20, memory = 20, pods = 20 }, targetThresholds = { cpu = 50, memory = 50, pods = 50 } } } } }
    local text, ccode, checked = report(snap, policy, CHARTS .. ",chart-nodes-cpu-after,chart-nodes-memory-after")
    os.remove(snap)
    assert.equal(0, ccode, checked)
    assert.matches('aria%-label="cpu, after the last cycle"', text)
    assert.is_true(#text < 400 * 1024, "report of " .. #text .. " bytes")
  end)
end)
