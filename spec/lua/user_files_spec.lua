-- Files a user names are opened without waiting and read only when they
-- are regular files (ebb_file_open / ebb_file_read in engine/base/common.c): a
-- FIFO in their place is refused with its name, never waited on. The
-- modules require reads are spec/lua/sandbox_loops_spec.lua's.
describe("files a user names", function()
  local h = require("spec.helpers")
  local shell = require("spec.shell")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"

  local dir
  before_each(function() dir = h.plugin_dir{} end)
  after_each(function() h.rmdir(dir) end)

  local function fifo(name)
    assert(os.execute("mkfifo " .. shell.shq(dir .. "/" .. name)))
    return dir .. "/" .. name
  end

  it("a plugin file in a policy directory that is a FIFO", function()
    fifo("stuck.lua")
    local ok, msg = h.bounded("check", {
      policy_text = h.policy{ plugins = { { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } } } },
      policy_dirs = { dir } }, { seconds = 20 })
    assert.is_nil(ok)
    assert.matches("stuck%.lua: a FIFO, not a file: ebb reads files only", msg)
  end)

  it("a Prometheus token file that is a FIFO: the query goes without it", function()
    local token = fifo("token")
    local pol = dir .. "/policy.yaml"
    shell.write(pol, [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
metricsProviders:
- source: Prometheus
  prometheus: {url: "http://127.0.0.1:9"}
profiles:
- name: default
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {MetricResource: 20}
      targetThresholds: {MetricResource: 50}
      metricsUtilization: {source: Prometheus, prometheus: {query: "instance:node_cpu:rate:sum"}}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
]])
    local code, out = shell.sh("timeout 20 " .. EBB .. " simulate --snapshot spec/fixtures/demo-cluster.json" ..
      " --policy " .. shell.shq(pol) .. " --prometheus-url http://127.0.0.1:9 --prometheus-token-file " ..
      shell.shq(token) .. " --now " .. h.NOW)
    assert.not_equal(124, code, "ebb waited on the FIFO")
    assert.matches("token file [^\n]*/token: a FIFO, not a file", out)
  end)
end)
