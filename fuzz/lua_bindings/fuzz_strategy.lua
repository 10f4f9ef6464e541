-- The deschedule and balance side of the fuzzer's plugin pair
-- (fuzz/lua_bindings.c): runs the program in args.program, which calls the
-- engine's bindings with hostile values (see _hostile.lua).
local ebb = require("ebb")
local H = require("_hostile")

return {
  name = "FuzzStrategy",
  args = { program = ebb.args.string({ default = "" }) },
  deschedule = function(ctx, nodes) return H.run(ctx, "deschedule", nodes) end,
  balance = function(ctx, nodes) return H.run(ctx, "balance", nodes) end,
}
