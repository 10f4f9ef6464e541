-- AnnotatedPodLifeTime (deschedule): a pod opts in to being recycled by
-- carrying an annotation with its own maximum lifetime, a Go duration:
--
--   metadata:
--     annotations:
--       ebb/max-pod-lifetime: "24h"
--
-- PodLifeTime applies one age to every pod it selects; this lets each
-- workload say how long its pods may live (a service with a slow leak, a
-- pod that pins stale DNS or credentials), with no policy change per
-- workload. Pods past their lifetime are evicted most overdue first,
-- at most `maxPerOwner` pods of one owner per cycle, so the replicas of a
-- Deployment created together are recycled one cycle after another rather
-- than all at once. The core's filters still apply: DaemonSet, bare,
-- critical and PVC-holding pods (as the profile's DefaultEvictor says) are
-- never proposed.
local ebb = require("ebb")
local A = ebb.args

local M = {
  name = "AnnotatedPodLifeTime",
  args = {
    -- the annotation that carries a pod's maximum lifetime
    annotation = A.string({ default = "ebb/max-pod-lifetime" }),
    -- annotated lifetimes shorter than this are not honored (a typo such
    -- as "1m" must not turn a workload into a restart loop)
    minLifetime = A.duration({ default = "1h" }),
    -- pods of one owner (their controller) evicted in one cycle
    maxPerOwner = A.uint({ default = 1, min = 1 }),
    namespaces = A.namespaces(),
  },
}

function M.validate(a)
  if a.annotation == "" then
    return nil, "must not be empty", "annotation"
  end
  if a.minLifetime <= 0 then
    return nil, "must be a positive duration", "minLifetime"
  end
  return true
end

-- A Go duration string -> seconds, or nil and why.
local function lifetime(text)
  local v, _, msg = A.decode({ d = A.duration() }, { d = text })
  if v == nil then
    return nil, msg
  end
  if v.d <= 0 then
    return nil, string.format('"%s" is not a positive duration', text)
  end
  return v.d
end

-- 108000 -> "1d6h", 5400 -> "1h30m" (minutes only under a day)
local function human(seconds)
  local s = math.floor(seconds)
  local d, h, m = s // 86400, s % 86400 // 3600, s % 3600 // 60
  local out = (d > 0 and d .. "d" or "") .. (h > 0 and h .. "h" or "")
  if d == 0 and (m > 0 or out == "") then
    out = out .. m .. "m"
  end
  return out
end

local function owner_of(pod)
  for _, o in ipairs(pod.owners) do
    if o.controller then
      return pod.namespace .. "/" .. o.kind .. "/" .. o.name
    end
  end
  local o = pod.owners[1]
  return o and (pod.namespace .. "/" .. o.kind .. "/" .. o.name) or pod.key
end

function M.deschedule(ctx, nodes)
  local a = ctx.args
  local now = ebb.now()
  local key = a.annotation
  -- C narrows the set first: evictable, in the namespaces, older than the
  -- floor (no pod younger than that can be due); Lua only reads the
  -- annotation of what is left
  local pods = ebb.pods(nodes, {
    evictable = true,
    namespaces = a.namespaces,
    older_than = math.floor(a.minLifetime),
    where = function(pod) return pod:annotation(key) ~= nil end,
  })
  local overdue, limit = {}, {}
  local due = pods:filter(function(pod)
    local text = pod:annotation(key)
    local max, why = lifetime(text)
    if max == nil then
      ebb.note(string.format("%s: %s: %s", pod.key, key, why), pod.node)
      return false
    end
    if max < a.minLifetime then
      ebb.note(string.format("%s: %s %s is below minLifetime %s, not honored",
        pod.key, key, text, human(a.minLifetime)), pod.node)
      return false
    end
    local age = now - pod.created
    if age <= max then
      return false
    end
    overdue[pod], limit[pod] = age - max, text
    return true
  end)
  due:sort(function(x, y) return overdue[x] > overdue[y] end)

  local taken = {}
  for _, pod in due:iter() do
    local owner = owner_of(pod)
    if (taken[owner] or 0) < a.maxPerOwner then
      local ok, why = ctx.evictor:evict(pod, {
        reason = string.format("pod is %s old, past its %s of %s",
          human(now - pod.created), key, limit[pod]),
      })
      if ok then
        taken[owner] = (taken[owner] or 0) + 1
      elseif why == "total-limit" then
        return
      end
      -- node-limit, namespace-limit, pdb: this pod stays, others may go
    end
  end
end

return M
