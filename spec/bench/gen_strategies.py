#!/usr/bin/env python3
"""Generate a policy directory of N Lua strategies for the reload benchmark.

Each strategy is a realistic custom plugin (args with defaults and a
validate, native queries, sorting, NodeFit, notes, a require of a shared
module), differing in name and in the label it acts on, so a reload has N
files to read, check and instantiate, plus the built-in plugins.

    python3 spec/bench/gen_strategies.py -n 20 -o spec/bench/out/strategies
    # writes DIR/*.lua, DIR/_common.lua and DIR/../policy-strategies.yaml
"""
import argparse
import os

COMMON = '''-- shared by the generated strategies
local M = {}
function M.reason(name, node) return name .. ": pod moved off node " .. node end
return M
'''

STRATEGY = '''-- Generated strategy {i}: moves pods off nodes labelled {label}=true,
-- lowest priority first, when they fit elsewhere.
local ebb = require("ebb")
local common = require("_common")
local A = ebb.args

local M = {{
  name = "Generated{i:02d}",
  triggers = {{ "node-labels" }},
  args = {{
    maxPerNode = A.uint({{ default = 2 }}),
    minAgeSeconds = A.uint({{ default = 3600 }}),
    namespaces = A.namespaces(),
    labelSelector = A.label_selector(),
  }},
}}

function M.validate(a)
  if a.maxPerNode > 100 then return nil, "maxPerNode: at most 100", "maxPerNode" end
  return true
end

function M.deschedule(ctx, nodes)
  local a = ctx.args
  local flagged = nodes:filter(function(n) return n:label("{label}") == "true" end)
  local others = ebb.nodes("cycle"):filter(function(n) return n:label("{label}") ~= "true" end)
  for _, node in flagged:iter() do
    local pods = ebb.pods(node, {{ evictable = true, namespaces = a.namespaces,
                                   selector = a.labelSelector, older_than = a.minAgeSeconds }})
    local moved = 0
    for _, pod in pods:sort("priority"):iter() do
      if moved >= a.maxPerNode then break end
      if ebb.fits_any(pod, others) then
        local ok, why = ctx.evictor:evict(pod, {{ reason = common.reason(M.name, node.name) }})
        if ok then moved = moved + 1 elseif why == "total-limit" then return end
      else
        ebb.note("no other node fits " .. pod.key, node.name)
      end
    end
  end
end

return M
'''

POLICY_HEAD = '''apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 5
maxNoOfPodsToEvictTotal: 50
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
    args: {{evictLocalStoragePods: true}}
  - name: RemovePodsViolatingNodeTaints
  - name: LowNodeUtilization
    args:
      thresholds: {{cpu: 20, memory: 20, pods: 20}}
      targetThresholds: {{cpu: 50, memory: 50, pods: 50}}
{configs}  plugins:
    deschedule:
      enabled: [{names}, RemovePodsViolatingNodeTaints]
    balance:
      enabled: [LowNodeUtilization]
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("-o", required=True)
    o = ap.parse_args()
    os.makedirs(o.o, exist_ok=True)
    with open(os.path.join(o.o, "_common.lua"), "w") as f:
        f.write(COMMON)
    names = []
    configs = ""
    for i in range(1, o.n + 1):
        name = "Generated%02d" % i
        names.append(name)
        with open(os.path.join(o.o, "generated_%02d.lua" % i), "w") as f:
            f.write(STRATEGY.format(i=i, label="maintenance.example.com/pool-%02d" % i))
        configs += "  - name: %s\n    args: {maxPerNode: %d, namespaces: {exclude: [kube-system]}}\n" % (name, 1 + i % 3)
    with open(os.path.join(os.path.dirname(os.path.abspath(o.o)), "policy-strategies.yaml"), "w") as f:
        f.write(POLICY_HEAD.format(configs=configs, names=", ".join(names)))


if __name__ == "__main__":
    main()
