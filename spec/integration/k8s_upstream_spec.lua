-- ebb started as upstream's image starts the descheduler, against a real
-- kube-apiserver (spec/integration/k8s_harness.lua):
--   ebb --policy-config-file F --kubeconfig K --dry-run
-- one cycle, exit 0, every log line klog's.
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")
local S = R.S

local KLOG = "^[IWEF]%d%d%d%d %d%d:%d%d:%d%d%.%d%d%d%d%d%d +%d+ [%w_%.]+:%d+%] "

describe("ebb as upstream's descheduler against kube-apiserver", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local start = R.suite(before_each, after_each, cp).start

  it("runs one cycle with upstream's flags and exits 0 (dry run)", function()
    local ns = cp:namespace("upstream")
    local n1 = ns .. "-n1"
    cp:node(n1)
    cp:node(ns .. "-n2")   -- somewhere to go: the cycle needs two ready nodes
    cp:replicaset(ns, "web", 2, { cpu = "100m", node_selector = { ["kubernetes.io/hostname"] = n1 } })
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 2 end, 30, "kube-scheduler binding the web pods")
    cp:patch("/api/v1/nodes/" .. n1, { spec = { taints = {
      { key = "dedicated", value = "gpu", effect = "NoSchedule" } } } })
    local dir = S.tmpdir()
    local policy = dir .. "/policy.yaml"
    S.write(policy, K.taints_policy(ns))
    local run = start{ command = false, "--policy-config-file", policy, "--dry-run", "--v", "3" }
    assert.equal(0, run:wait(60), run:stderr())
    local err = run:stderr()
    local n = 0
    for line in err:gmatch("([^\n]*)\n") do
      assert.truthy(line:match(KLOG), line)
      if line:match("evicted pod " .. ns:gsub("%p", "%%%0") .. "/[%w%-%.]+ from [%w%-%.]+ %(RemovePodsViolatingNodeTaints, dry run%)") then
        n = n + 1
      end
    end
    assert.equal(2, n, err)
    assert.equal(2, #cp:pods(ns, "app=web", "live"))
    S.rmdir(dir)
  end)
end)
