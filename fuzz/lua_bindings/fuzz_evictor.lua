-- The evict plugin of the fuzzer's profile (fuzz/lua_bindings.c): its
-- filter and evict run the program in args.program, which acts through
-- ctx.api with hostile values (see _hostile.lua). It declares the kind
-- MigrationJobEvictor creates, so ctx.api:create is reachable.
local ebb = require("ebb")
local H = require("_hostile")

return {
  name = "FuzzEvictor",
  args = { program = ebb.args.string({ default = "" }) },
  creates = { apiVersion = "scheduling.koordinator.sh/v1alpha1", kind = "PodMigrationJob",
              namespaced = false },
  filter = function(ctx, pod) return H.run(ctx, "filter", pod) end,
  evict = function(ctx, pod, opts) return H.run(ctx, "evict", pod, opts) end,
}
