-- `ebb run` against `ebb serve` on 127.0.0.1: the live path end to end
-- (list + watch, the Eviction API, PDB refusals, faults, staleness, leader
-- election, SIGTERM, dry run). The cluster is spec/fixtures/demo-cluster.json
-- and the clock is fixed at its reference time.
local R = require("spec.integration.run_harness")
local S = R.S

local DEMO, LIFETIME = R.DEMO, R.LIFETIME   -- 7 evictions, 5 PDB refusals

-- Evicts nothing (an age no pod has), to watch the caches alone.
local QUIET = LIFETIME:gsub("604800", "999999999")

local EXPECTED = { "monitoring/grafana-5c8d7e6f9-r4t6y", "batch/spark-driver-9c8b7a6d5-u1v2w",
  "payments/ledger-db-0", "shop/frontend-6b8f9d7c5-a1b2c", "shop/frontend-6b8f9d7c5-d3e4f",
  "shop/frontend-6b8f9d7c5-g5h6i", "shop/cart-5d7f8c6b9-t3u4v" }

describe("ebb run against ebb serve", function()
  local T = R.suite(before_each, after_each)

  it("syncs, then evicts through the Eviction API, and the pods are gone", function()
    T.srv = S.start{ snapshot = DEMO }
    local before = R.pods(T.srv)
    local run = T.start{ policy = LIFETIME, "--once" }
    assert.equal(0, run:wait(30), run:stderr())
    assert.same(R.sorted(EXPECTED), R.sorted(run:evicted()))
    assert.same(R.without(before, EXPECTED), R.pods(T.srv))
    assert.matches("cycle 1: 7 evicted, 5 refused", run:stderr())
  end)

  it("reports what a PodDisruptionBudget refuses and does not retry it", function()
    T.srv = S.start{ snapshot = DEMO }
    local run = T.start{ policy = LIFETIME, "--once" }
    assert.equal(0, run:wait(30))
    local err = run:stderr()
    assert.matches("error evicting pod payments/ledger%-db%-1 %(PodLifeTime%): 429 Cannot evict pod as it " ..
      "would violate the pod's disruption budget", err)
    local _, n = err:gsub("error evicting pod payments/ledger%-db%-1", "")
    assert.equal(1, n)
    -- the refused pods are still there
    local pods = R.pods(T.srv)
    local has = {}
    for _, k in ipairs(pods) do has[k] = true end
    assert.is_true(has["payments/ledger-db-1"])
    assert.is_true(has["shop/checkout-7f6e5d4c3-c9d0e"])
  end)

  it("writes nothing in a dry run", function()
    T.srv = S.start{ snapshot = DEMO }
    local before = R.pods(T.srv)
    local run = T.start{ policy = LIFETIME, "--once", "--dry-run" }
    assert.equal(0, run:wait(30), run:stderr())
    assert.same(before, R.pods(T.srv))
    assert.matches("cycle 1: 7 evicted, 5 refused, 0 plugin errors in [%d%.]+ s %(dry run%)", run:stderr())
  end)

  it("resumes dropped watches from their resourceVersion without relisting", function()
    T.srv = S.start{ snapshot = DEMO, "--close-watches-every", "1" }
    local run = T.start{ policy = QUIET, "--interval", "1s" }
    assert.is_not_nil(run:wait_log("cycle 1:", 15), run:stderr())
    S.sleep(3.5)
    local m = run:metrics()
    assert.equal(1, R.metric(m, "ebb_watch_lists_total", '{resource="pods"}'))
    assert.is_true(R.metric(m, "ebb_watch_resumes_total", '{resource="pods"}') >= 2)
    assert.equal(1, R.metric(m, "ebb_watch_synced", '{resource="pods"}'))
  end)

  it("relists after 410 Gone", function()
    -- versions older than the last change expire; evictions make changes
    T.srv = S.start{ snapshot = DEMO, "--expire-after", "1", "--close-watches-every", "1" }
    local run = T.start{ policy = LIFETIME, "--interval", "1s" }
    local res = run:wait_log("watch ([%w.]+): resourceVersion expired %(410%): relisting", 20)
    assert.is_not_nil(res, run:stderr())
    local m = S.eventually(function()
      local text = run:metrics()
      return (R.metric(text, "ebb_watch_lists_total", '{resource="' .. res .. '"}') or 0) >= 2 and text
    end, 10)
    assert.is_truthy(m)
    assert.equal(1, R.metric(m, "ebb_watch_synced", '{resource="' .. res .. '"}'))
  end)

  it("gets through 500s with backoff", function()
    T.srv = S.start{ snapshot = DEMO, "--fail-fraction", "0.3", "--seed", "7" }
    local run = T.start{ policy = LIFETIME, "--once" }
    -- reads were retried until the caches synced; writes were not retried, so
    -- an eviction answered 500 is an api-error (exit 3) and the others went through
    assert.equal(3, run:wait(60), run:stderr())
    local evicted = run:evicted()
    assert.is_true(#evicted >= 1)
    -- among PodLifeTime's 12 picks: the 7 expected and the 5 their PDBs
    -- refuse (where an eviction of one of a PDB's pods failed with 500, the
    -- server lets another of its pods go)
    local picks = { "payments/ledger-db-1", "payments/ledger-db-2", "shop/checkout-7f6e5d4c3-c9d0e",
      "shop/checkout-7f6e5d4c3-f1g2h", "shop/checkout-7f6e5d4c3-i3j4k" }
    for _, e in ipairs(EXPECTED) do picks[#picks + 1] = e end
    for _, k in ipairs(evicted) do
      local ok = false
      for _, e in ipairs(picks) do ok = ok or e == k end
      assert.is_true(ok, k)
    end
    assert.matches("cycle 1: %d+ evicted, %d+ refused", run:stderr())
  end)

  it("skips cycles while a watch is broken for longer than --max-stale", function()
    T.srv = S.start{ snapshot = DEMO }
    local run = T.start{ policy = QUIET, "--interval", "1s", "--max-stale", "1s" }
    assert.is_not_nil(run:wait_log("cycle 1:", 15), run:stderr())
    T.srv:stop("KILL")
    T.srv = nil
    assert.is_not_nil(run:wait_log("cycle skipped: stale: the [%w.]+ watch has been broken for", 15),
      run:stderr())
  end)

  it("evicts from one instance only with --leader-elect, and hands over on SIGTERM", function()
    T.srv = S.start{ snapshot = DEMO }
    local le = { "--leader-elect", "--leader-elect-lease-duration", "3s",
      "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms",
      "--leader-elect-resource-namespace", "kube-system", "--interval", "1s" }
    local a_opts = { policy = QUIET }
    for _, f in ipairs(le) do a_opts[#a_opts + 1] = f end
    local a = T.start(a_opts)
    assert.is_not_nil(a:wait_log("acquired lease", 15), a:stderr())
    local b_opts = { policy = QUIET }
    for _, f in ipairs(le) do b_opts[#b_opts + 1] = f end
    local b = T.start(b_opts)
    S.sleep(2)
    assert.is_nil(b:stderr():match("acquired lease"))
    local lease = T.srv:get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/descheduler")
    assert.matches("_", lease.spec.holderIdentity)
    -- a releases the lease on SIGTERM; b takes it without waiting for expiry
    assert.equal(0, a:stop())
    assert.is_not_nil(b:wait_log("acquired lease", 5), b:stderr())
  end)

  it("only the leader evicts", function()
    T.srv = S.start{ snapshot = DEMO }
    local le = { "--leader-elect", "--leader-elect-lease-duration", "3s",
      "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms", "--interval", "1s" }
    local a = T.start((function() local o = { policy = LIFETIME } for _, f in ipairs(le) do o[#o + 1] = f end return o end)())
    assert.is_not_nil(a:wait_log("cycle 1:", 15), a:stderr())
    local b = T.start((function() local o = { policy = LIFETIME } for _, f in ipairs(le) do o[#o + 1] = f end return o end)())
    S.sleep(3)
    assert.same(R.sorted(EXPECTED), R.sorted(a:evicted()))
    assert.same({}, b:evicted())
    assert.is_nil(b:stderr():match("cycle %d+:"))
  end)

  it("stops evicting on SIGTERM mid-cycle, finishes what is in flight and exits 0", function()
    T.srv = S.start{ snapshot = DEMO, "--latency-ms", "400" }
    local run = T.start{ policy = LIFETIME, "--interval", "1m" }
    assert.is_not_nil(run:wait_log("evicted pod", 30), run:stderr())
    run:kill("TERM")
    assert.equal(0, run:wait(20), run:stderr())
    local err = run:stderr()
    assert.matches("SIGTERM: no new evictions", err)
    -- fewer than all: the cycle stopped sending once the signal came
    assert.is_true(#run:evicted() < #EXPECTED)
    assert.is_true(#run:evicted() >= 1)
  end)
end)
