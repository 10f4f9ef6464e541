-- MigrationJobEvictor (evict): hands each eviction to Koordinator's
-- migration controller as a PodMigrationJob
-- (apis/scheduling/v1alpha1, cluster-scoped), filled as Koordinator's own
-- MigrationController fills it (pkg/descheduler/controllers/migration/
-- evict.go CreatePodMigrationJob):
--
--   metadata.annotations: koordinator.sh/evict-trigger = the strategy,
--                         koordinator.sh/evict-reason = its reason
--   spec.podRef: {namespace, name, uid}; spec.mode, spec.ttl; spec.paused;
--   spec.deleteOptions: the policy's gracePeriodSeconds with this plugin's
--                       deleteOptions over them (left out when empty)
--
-- Defaults as MigrationControllerArgs: mode ReservationFirst, ttl 5m.
-- evictionPolicy, when set, labels the job koordinator.sh/evict-policy
-- (Eviction, Delete or SoftEviction: how the controller evicts the pod).
--
-- The job is named after the pod's uid (Koordinator uses a random UUID):
-- a second request for the same pod, in a later cycle or after a retry,
-- is refused by the API (409 AlreadyExists) instead of starting a second
-- migration.
local ebb = require("ebb")
local A = ebb.args

-- seconds -> a Go duration string as metav1.Duration prints it ("5m0s")
local function go_duration(sec)
  local ms = math.floor(sec * 1000 + 0.5)
  if ms == 0 then return "0s" end
  if ms < 1000 then return string.format("%dms", ms) end
  local h, m = ms // 3600000, (ms // 60000) % 60
  local s, frac = (ms // 1000) % 60, ms % 1000
  local secs = frac == 0 and tostring(s) or (string.format("%d.%03d", s, frac):gsub("0+$", ""))
  if h > 0 then return string.format("%dh%dm%ss", h, m, secs) end
  if m > 0 then return string.format("%dm%ss", m, secs) end
  return secs .. "s"
end

return {
  name = "MigrationJobEvictor",
  creates = {
    apiVersion = "scheduling.koordinator.sh/v1alpha1",
    kind = "PodMigrationJob",
    resource = "podmigrationjobs",
    namespaced = false,
  },
  args = {
    mode = A.string({ default = "ReservationFirst", enum = { "ReservationFirst", "EvictDirectly" } }),
    ttl = A.duration({ default = 300 }),
    paused = A.bool({ default = false }),
    deleteOptions = A.object({
      gracePeriodSeconds = A.uint(),
      propagationPolicy = A.string({ enum = { "Orphan", "Background", "Foreground" } }),
    }),
    evictionPolicy = A.string({ enum = { "Eviction", "Delete", "SoftEviction" } }),
  },

  validate = function(a)
    if a.ttl <= 0 then return nil, "must be a positive duration", "ttl" end
    return true
  end,

  evict = function(ctx, pod, opts)
    local a = ctx.args
    if pod.uid == nil then return false, "the pod has no uid to refer to" end
    local del = {}
    for k, v in pairs(opts.delete_options) do del[k] = v end
    for k, v in pairs(a.deleteOptions or {}) do del[k] = v end
    local annotations = { ["koordinator.sh/evict-trigger"] = opts.plugin }
    if opts.reason ~= nil and opts.reason ~= "" then
      annotations["koordinator.sh/evict-reason"] = opts.reason
    end
    local job = {
      metadata = { name = pod.uid, annotations = annotations },
      spec = {
        podRef = { namespace = pod.namespace, name = pod.name, uid = pod.uid },
        mode = a.mode,
        ttl = go_duration(a.ttl),
      },
    }
    if a.paused then job.spec.paused = true end
    if next(del) ~= nil then job.spec.deleteOptions = del end
    if a.evictionPolicy then
      job.metadata.labels = { ["koordinator.sh/evict-policy"] = a.evictionPolicy }
    end
    return ctx.api:create(job)
  end,
}
