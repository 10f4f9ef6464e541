-- Leader election against kube-apiserver, with two and then three
-- `ebb run --leader-elect` of one Lease:
--   - one leads and the other says who holds the Lease;
--   - SIGTERM releases the Lease (holderIdentity emptied), so the standby
--     takes it at its next retry;
--   - SIGKILL releases nothing, so a standby waits for the lease duration;
--   - a new leader runs a cycle at once.
-- It asserts the mechanism, never a time. The takeover times it measures,
-- with the short durations below, are printed as figures; docs/ scales them
-- to the defaults.
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")
local shell = require("spec.shell")

describe("leader election against kube-apiserver", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local runs = {}
  after_each(function()
    for _, r in ipairs(runs) do r:stop() end
    runs = {}
    cp:cleanup()
  end)

  local LEASE_S, RENEW_S, RETRY_S = 6, 4, 1

  local function start(ns)
    local r = R.start(cp, { policy = K.taints_policy(ns), now = false,
      "--leader-elect", "--leader-elect-lease-duration", LEASE_S .. "s",
      "--leader-elect-renew-deadline", RENEW_S .. "s", "--leader-elect-retry-period", RETRY_S .. "s",
      "--leader-elect-resource-namespace", ns, "--leader-elect-resource-name", "ebb-takeover",
      "--interval", "1h" })
    runs[#runs + 1] = r
    return r
  end

  local function lease(ns)
    return cp:get("/apis/coordination.k8s.io/v1/namespaces/" .. ns .. "/leases/ebb-takeover")
  end

  -- the log after its first match of `pattern` (nil when it never comes)
  local function after(run, pattern, secs)
    if not run:wait_log(pattern, secs) then return nil end
    local err = run:stderr()
    local _, e = err:find(pattern)
    return err:sub(e + 1)
  end

  it("hands the Lease over at once on SIGTERM, after the lease duration on SIGKILL", function()
    local ns = cp:namespace("lead")
    cp:node(ns .. "-n1", { cpu = "4", memory = "8Gi" })
    cp:node(ns .. "-n2", { cpu = "4", memory = "8Gi" })
    local a = start(ns)
    assert.truthy(a:wait_log("acquired lease " .. ns:gsub("%-", "%%-") .. "/ebb%-takeover", 30), a:stderr())
    local b = start(ns)
    assert.truthy(b:wait_log("is held by", 30), b:stderr())
    local holder_a = lease(ns).spec.holderIdentity
    assert.is_string(holder_a)

    -- SIGTERM: a releases, b takes over and runs a cycle at once
    local t0 = shell.now()
    a:kill("TERM")
    assert.equal(0, a:wait(20), a:stderr())
    local rest = after(b, "acquired lease", 30)
    local t_term = shell.now() - t0
    assert.truthy(rest, b:stderr())
    assert.truthy(rest:match("cycle 1: %d+ evicted") or rest:match("cycle skipped"), b:stderr())
    local holder_b = lease(ns).spec.holderIdentity
    assert.is_string(holder_b)
    assert.are_not.equal(holder_a, holder_b)

    -- SIGKILL: b releases nothing; c waits for the lease to run out
    local c = start(ns)
    assert.truthy(c:wait_log("is held by", 30), c:stderr())
    t0 = shell.now()
    b:kill("KILL")
    assert.truthy(after(c, "acquired lease", LEASE_S * 3 + 30), c:stderr())
    local t_kill = shell.now() - t0
    assert.are_not.equal(holder_b, lease(ns).spec.holderIdentity)
    io.stderr:write(string.format("\n# figure: leader takeover after SIGTERM %.1f s, after SIGKILL %.1f s"
      .. " (lease %d s, renew %d s, retry %d s)\n", t_term, t_kill, LEASE_S, RENEW_S, RETRY_S))
  end)
end)
