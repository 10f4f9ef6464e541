-- DeleteEvictor (evict): evicts by deleting the pod instead of asking the
-- Eviction API, as Koordinator's "Delete" evictor does
-- (pkg/descheduler/controllers/migration/evictor/evictor_delete.go). The
-- DELETE carries the pod's uid as a precondition, so a pod recreated under
-- the same name is left alone.
--
-- The API server checks PodDisruptionBudgets for evictions only, not for a
-- DELETE: the core checks them from its own view before this evictor is
-- called, as it checks the filters and the limits.
--
--   plugins:
--     evict:
--       enabled: [DeleteEvictor]
--   pluginConfig:
--   - name: DeleteEvictor
--     args:
--       gracePeriodSeconds: 0     # optional: instead of the policy's
local A = require("ebb.args")

return {
  name = "DeleteEvictor",
  args = {
    gracePeriodSeconds = A.uint(),
    propagationPolicy = A.string({ enum = { "Orphan", "Background", "Foreground" } }),
  },

  evict = function(ctx, pod, opts)
    local o = {
      gracePeriodSeconds = ctx.args.gracePeriodSeconds or opts.delete_options.gracePeriodSeconds,
      propagationPolicy = ctx.args.propagationPolicy,
    }
    return ctx.api:delete(pod, o)
  end,
}
