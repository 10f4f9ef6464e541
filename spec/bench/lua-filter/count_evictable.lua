-- Lists every evictable pod of the cycle: the profile's filters (the Lua
-- one included) are asked about each pod once.
local ebb = require("ebb")
return {
  name = "CountEvictable",
  deschedule = function(ctx, nodes)
    ebb.note(#ebb.pods(nodes, { evictable = true }) .. " evictable pods")
  end,
}
