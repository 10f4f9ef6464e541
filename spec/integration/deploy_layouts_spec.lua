-- deploy/'s two layouts are exclusive, and ebb record has its grants:
-- - every object of the Deployment layout (base) and of the CronJob overlay
--   carries app.kubernetes.io/part-of=ebb, and each renders exactly one
--   workload, so `kubectl apply -k LAYOUT --prune -l
--   app.kubernetes.io/part-of=ebb` (deploy/README.md) removes the other;
--   against the real control plane, switching either way leaves one;
-- - components/record grants what engine/cmd/record.c lists beyond the
--   base (every kind it lists, metrics included), and `ebb record` with the ServiceAccount's token is refused
--   without it and records with it.
-- Rendering needs kubectl with kustomize v5 and PyYAML; the live cases need
-- ../shared/k8s (k8s_harness.lua); each is pending with the reason otherwise.
local K = require("spec.integration.k8s_harness")
local shell = require("spec.shell")
local json = K.json
local shq, sh = shell.shq, shell.sh
local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
local SELECTOR = "app.kubernetes.io/part-of=ebb"

local function tools_missing()
  if os.execute("command -v kubectl >/dev/null 2>&1") ~= true then
    return "kubectl is not installed: deploy/'s layouts are not checked"
  end
  local code, out = sh("kubectl version --client -o json")
  local v = code == 0 and out:match('"kustomizeVersion"%s*:%s*"v(%d+)')
  if not v or tonumber(v) < 5 then
    return "kubectl has no kustomize v5: deploy/'s layouts are not checked"
  end
  if os.execute("python3 -c 'import yaml' >/dev/null 2>&1") ~= true then
    return "PyYAML is not installed (Debian: python3-yaml): deploy/'s layouts are not checked"
  end
  return nil
end
local MISSING = tools_missing()

local TO_JSON = "python3 -c 'import json, sys, yaml; "
  .. "json.dump([d for d in yaml.safe_load_all(sys.stdin) if d is not None], sys.stdout)'"

local function render(dir)
  local code, out = sh("kubectl kustomize " .. shq(dir) .. " | " .. TO_JSON)
  assert(code == 0, "kubectl kustomize " .. dir .. ": " .. out)
  return json.decode(out)
end

local WORKLOADS = { Deployment = true, CronJob = true, Job = true, DaemonSet = true, StatefulSet = true }

local function workloads(objs)
  local w = {}
  for _, o in ipairs(objs) do
    if WORKLOADS[o.kind] then w[#w + 1] = o.kind .. "/" .. o.metadata.name end
  end
  return w
end

describe("deploy/ layouts", function()
  if MISSING then
    it("needs kubectl with kustomize v5 and PyYAML", function() pending(MISSING) end)
    return
  end

  for _, case in ipairs({ { "deploy/base", "Deployment/ebb" }, { "deploy/overlays/cronjob", "CronJob/ebb" },
                          { "deploy/overlays/dry-run", "Deployment/ebb" } }) do
    it(case[1] .. ": one workload, every object labelled for --prune -l " .. SELECTOR, function()
      local objs = render(case[1])
      assert.same({ case[2] }, workloads(objs))
      for _, o in ipairs(objs) do
        local labels = o.metadata.labels or {}
        assert.equal("ebb", labels["app.kubernetes.io/part-of"],
          case[1] .. ": " .. o.kind .. "/" .. o.metadata.name .. " lacks " .. SELECTOR)
      end
    end)
  end

  it("components/record: list on what record reads beyond the base, for ebb's ServiceAccount", function()
    local objs = render("deploy/components/record")
    local role, binding
    for _, o in ipairs(objs) do
      if o.kind == "ClusterRole" then role = o end
      if o.kind == "ClusterRoleBinding" then binding = o end
    end
    assert.is_table(role)
    assert.is_table(binding)
    local granted = {}
    for _, r in ipairs(role.rules) do
      assert.same({ "list" }, r.verbs)
      for _, g in ipairs(r.apiGroups) do
        for _, res in ipairs(r.resources) do granted[#granted + 1] = g .. "/" .. res end
      end
    end
    table.sort(granted)
    assert.same({ "/replicationcontrollers", "/services", "apps/replicasets", "apps/statefulsets",
                  "metrics.k8s.io/nodes", "metrics.k8s.io/pods", "slo.koordinator.sh/nodemetrics" }, granted)
    assert.same({ { kind = "ServiceAccount", name = "ebb", namespace = "ebb-system" } }, binding.subjects)
    assert.equal(role.metadata.name, binding.roleRef.name)
  end)
end)

describe("deploy/ against kube-apiserver", function()
  if MISSING then
    it("needs kubectl with kustomize v5 and PyYAML", function() pending(MISSING) end)
    return
  end
  if K.skip(pending) then return end
  local cp = K.cluster()

  local function kubectl(args)
    return sh("kubectl --kubeconfig " .. shq(cp.kubeconfig) .. " " .. args)
  end
  local function apply(dir, prune)
    local code, out = kubectl("apply -k " .. shq(dir) .. (prune and (" --prune -l " .. SELECTOR) or ""))
    assert.equal(0, code, out)
  end
  local function exists(path)
    return (cp:request("GET", path)) == 200
  end
  local DEPLOYMENT = "/apis/apps/v1/namespaces/ebb-system/deployments/ebb"
  local CRONJOB = "/apis/batch/v1/namespaces/ebb-system/cronjobs/ebb"

  after_each(function()
    kubectl("delete -k deploy/overlays/cronjob --ignore-not-found --wait=false")
    kubectl("delete -k deploy/components/record --ignore-not-found")
    kubectl("delete -k deploy/base --ignore-not-found --wait=false")
    cp:wait(function() return (cp:request("GET", "/api/v1/namespaces/ebb-system")) == 404 end, 60,
      "ebb-system deleted")
    cp:cleanup{ wait = true }
  end)

  it("apply --prune -l " .. SELECTOR .. " switches layouts and leaves one workload", function()
    apply("deploy/base")
    assert.is_true(exists(DEPLOYMENT))
    apply("deploy/overlays/cronjob", true)
    assert.is_true(exists(CRONJOB))
    cp:wait(function() return not exists(DEPLOYMENT) end, 30, "the Deployment pruned")
    apply("deploy/base", true)
    assert.is_true(exists(DEPLOYMENT))
    cp:wait(function() return not exists(CRONJOB) end, 30, "the CronJob pruned")
  end)

  it("ebb record with the ServiceAccount: without components/record the spreading kinds are left out and said, with it recorded", function()
    local ns = cp:namespace("record")
    cp:node(ns .. "-n1")
    cp:create("/api/v1/namespaces/" .. ns .. "/services", { apiVersion = "v1", kind = "Service",
      metadata = { name = "web" }, spec = { selector = { app = "web" }, ports = { { port = 80 } } } })
    cp:replicaset(ns, "web", 1)
    apply("deploy/base")
    local kc = cp:write_kubeconfig(cp.dir .. "/ebb-record.kubeconfig", { token = cp:token("ebb-system", "ebb") })
    local out = cp.dir .. "/record.json"
    local function kinds_of()
      local snap = json.decode(assert(shell.read(out)))
      local kinds = {}
      for _, it in ipairs(snap.items) do
        if it.metadata.namespace == ns then kinds[it.kind] = true end
      end
      return kinds
    end
    local code, msg = sh(EBB .. " record -o " .. shq(out) .. " --kubeconfig " .. shq(kc))
    assert.equal(0, code, msg)
    assert.truthy(msg:find("record: Service objects left out of the snapshot: LIST /api/v1/services: 403", 1, true), msg)
    assert.truthy(msg:find("record: ReplicaSet objects left out of the snapshot", 1, true), msg)
    local kinds = kinds_of()
    assert.is_nil(kinds.Service, "no Service without the grant")
    assert.is_true(kinds.Pod, "the pods recorded")

    apply("deploy/components/record")
    local ok = pcall(cp.wait, cp, function()
      code, msg = sh(EBB .. " record -o " .. shq(out) .. " --kubeconfig " .. shq(kc))
      return code == 0 and not msg:find("Service objects left out", 1, true)
    end, 30)
    assert(ok, "ebb record with components/record: " .. msg)
    assert.falsy(msg:find("left out of the snapshot: LIST /api/v1/services", 1, true), msg)
    kinds = kinds_of()
    assert.is_true(kinds.Service, "the Service recorded")
    assert.is_true(kinds.ReplicaSet, "the ReplicaSet recorded")
  end)
end)
