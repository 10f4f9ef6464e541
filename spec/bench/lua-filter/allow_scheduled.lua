-- A filter written in Lua: every pod the strategies list asks it, so a
-- cycle makes one call into Lua per pod (the worst case for the cost of
-- arming a time budget per call).
return {
  name = "AllowScheduled",
  filter = function(ctx, pod) return pod.node ~= nil end,
}
