-- RemoveDuplicates (balance): spreads the pods of one owner that run the
-- same images more evenly, by evicting the extra copies on a node.
-- Semantics of kubernetes-sigs/descheduler v0.36
-- pkg/framework/plugins/removeduplicates (removeduplicates.go).
--
-- Candidates: active pods that pass the profile's Filter and
-- PreEvictionFilter and `namespaces` (no labelSelector upstream), with
-- owners, none of whose owner kinds is in excludeOwnerKinds. On each node,
-- a pod whose owner x image keys equal those of a pod seen before it on
-- that node is a duplicate. For every owner key (namespace, kind, name,
-- images) with duplicates: the feasible nodes are those its duplicates
-- could land on by taints (NoSchedule/NoExecute), nodeSelector and
-- required node affinity (resources are not considered; DefaultEvictor
-- nodeFit does that at listing); with fewer than two nothing happens,
-- otherwise every node keeps upper_avg = ceil(pods of the owner key /
-- feasible nodes) and the duplicates beyond are evicted.
--
-- The grouping and the arithmetic are ebb.duplicates (engine/strategy/groups.c).
-- Order: upstream walks Go maps, so its order is random; here owner keys
-- go by namespace, kind, name, images and nodes by name, duplicates in
-- listing order (namespace/name). A node that reached its eviction limit
-- moves on to the owner's next node, the total limit ends the plugin, any
-- other refusal moves on to the next pod. A pod that is a duplicate under
-- two owners (two ownerReferences) is evicted once: upstream asks the API
-- a second time and gets "not found" (dry run) or a no-op.
local ebb = require("ebb")
local A = ebb.args

local M = {
  name = "RemoveDuplicates",
  args = {
    namespaces = A.namespaces(),
    excludeOwnerKinds = A.list(A.string()),
  },
}

local function owner(g)
  return string.format("%s %s/%s", g.kind, g.namespace, g.name)
end

function M.balance(ctx, nodes)
  local a = ctx.args
  local pods = ebb.pods(nodes, { evictable = true, namespaces = a.namespaces })
  local groups = ebb.duplicates(pods, nodes, { exclude_kinds = a.excludeOwnerKinds })
  for _, g in ipairs(groups) do
    if g.upper_avg == 0 then
      -- a pod's nodes count only when there are two of them: none here
      ebb.note(string.format("%s: fewer than two feasible nodes for its duplicates to land on, skipped",
        owner(g)))
    else
      for _, n in ipairs(g.nodes) do
        local reason = string.format("%d replicas of %s on node %s, above the average of %d",
          n.count, owner(g), n.node, g.upper_avg)
        for _, pod in n.evict:iter() do
          if not pod.gone then
            local ok, why = ctx.evictor:evict(pod, { reason = reason })
            if not ok and why == "node-limit" then break end
            if not ok and why == "total-limit" then return end
          end
        end
      end
    end
  end
end

return M
