-- SoftEvictor (evict): asks the pod's owner to move it instead of evicting
-- it, as Koordinator's soft eviction does
-- (pkg/descheduler/controllers/migration/evictor/evictor_soft.go): the pod
-- gets the annotation scheduling.koordinator.sh/soft-eviction whose value
-- is a JSON SoftEvictionSpec (apis/extension):
--
--   {"deleteOptions": {...}, "initiator": "<strategy>",
--    "reason": "<reason>", "timestamp": "2026-11-22T12:00:00Z"}
--
-- initiator is the strategy that asked (Koordinator's evict-trigger),
-- reason its reason, else the strategy, else "NotSet" (as
-- GetEvictionTriggerAndReason); deleteOptions are the policy's
-- gracePeriodSeconds with this plugin's deleteOptions over them (left out
-- when empty). Only the pod's annotations are patched, with its uid as a
-- precondition. A controller that understands the annotation (an owner
-- that implements soft eviction) does the rest; nothing else does.
--
-- Filter: a pod that already carries the annotation is on its way out and
-- is not evictable again (strategies do not count it, and it is not
-- annotated twice).
local ebb = require("ebb")
local A = ebb.args

local ANNOTATION = "scheduling.koordinator.sh/soft-eviction"

return {
  name = "SoftEvictor",
  args = {
    deleteOptions = A.object({
      gracePeriodSeconds = A.uint(),
      propagationPolicy = A.string({ enum = { "Orphan", "Background", "Foreground" } }),
    }),
  },

  filter = function(ctx, pod)
    return pod:annotation(ANNOTATION) == nil
  end,

  evict = function(ctx, pod, opts)
    local del = {}
    for k, v in pairs(opts.delete_options) do del[k] = v end
    for k, v in pairs(ctx.args.deleteOptions or {}) do del[k] = v end
    local spec = {
      timestamp = ebb.rfc3339(),
      initiator = opts.plugin,
      reason = (opts.reason ~= nil and opts.reason ~= "") and opts.reason or opts.plugin or "NotSet",
    }
    if next(del) ~= nil then spec.deleteOptions = del end
    return ctx.api:patch({ metadata = { annotations = { [ANNOTATION] = ebb.json(spec) } } })
  end,
}
