-- deploy/'s RBAC is least privilege, proven on a real kube-apiserver (RBAC
-- authorization on; spec/integration/k8s_harness.lua): the manifests are
-- rendered (kubectl kustomize, or spec/integration/render_deploy.py where
-- kubectl is missing), their Namespace, ServiceAccount, roles and bindings
-- applied, and `ebb run` runs with a token of that ServiceAccount and the
-- workload's own arguments. The API server's audit log then shows every
-- request ebb made: none may be refused (403), and every grant must have
-- been used by at least one request. For the base (the Deployment: leader
-- election, evictions, Events), the CronJob overlay (no Lease), and the
-- LowNodeLoad component's extra grant.
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")
local S = R.S
local json = K.json

local USER = "system:serviceaccount:ebb-system:ebb"

local shell = require("spec.shell")
local sh = shell.sh

local function have_kustomize()
  if os.execute("command -v kubectl >/dev/null 2>&1") ~= true then return false end
  local code, out = sh("kubectl version --client -o json")
  local v = code == 0 and out:match('"kustomizeVersion"%s*:%s*"v(%d+)')
  return v ~= nil and tonumber(v) >= 5
end

local KUSTOMIZE = have_kustomize()
local TO_JSON = "python3 -c 'import json, sys, yaml; " ..
  "json.dump([d for d in yaml.safe_load_all(sys.stdin) if d is not None], sys.stdout)'"

-- kubectl kustomize of `dir` plus `components`, through a scratch
-- kustomization (kustomize takes relative paths only).
local function kustomize(dir, components)
  local tmp = S.tmpdir()
  local up = tmp:gsub("[^/]+", ".."):sub(2)
  local cwd = shell.cwd()
  local lines = { "apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization", "resources:",
                  "- " .. up .. cwd .. "/" .. dir, "components:" }
  for _, c in ipairs(components) do lines[#lines + 1] = "- " .. up .. cwd .. "/" .. c end
  shell.write(tmp .. "/kustomization.yaml", table.concat(lines, "\n") .. "\n")
  local code, out = sh("kubectl kustomize " .. S.shq(tmp) .. " | " .. TO_JSON)
  shell.rmdir(tmp)
  assert(code == 0, "kubectl kustomize " .. dir .. ": " .. out)
  return json.decode(out)
end

local function lite(dir, components)
  local args = { "python3 spec/integration/render_deploy.py", S.shq(dir) }
  for _, c in ipairs(components) do args[#args + 1] = S.shq(c) end
  local code, out = sh(table.concat(args, " "))
  assert(code == 0, "render_deploy.py " .. dir .. ": " .. out)
  return json.decode(out)
end

local RBAC_KINDS = { Namespace = "/api/v1/namespaces", ServiceAccount = "/api/v1/namespaces/%s/serviceaccounts",
  ClusterRole = "/apis/rbac.authorization.k8s.io/v1/clusterroles",
  ClusterRoleBinding = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
  Role = "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
  RoleBinding = "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings" }

-- Every key a rule, a roleRef or a subject has, so that equal objects
-- encode alike (dkjson writes other keys in table order).
local KEYORDER = { "apiGroups", "resources", "resourceNames", "nonResourceURLs", "verbs", "apiGroup", "kind",
                   "name", "namespace" }

-- Who may do what, as data both renderers must agree on.
local function rbac_view(objs)
  local out = {}
  for _, o in ipairs(objs) do
    if RBAC_KINDS[o.kind] then
      out[#out + 1] = json.encode({ o.kind, o.metadata.namespace or "", o.metadata.name, o.rules or {},
                                    o.roleRef or {}, o.subjects or {} }, { keyorder = KEYORDER })
    end
  end
  table.sort(out)
  return out
end

-- Every (group, resource, name, verb, namespace) a role bound to USER grants.
local function grants(objs)
  local roles, bound, out = {}, {}, {}
  for _, o in ipairs(objs) do
    if o.kind == "ClusterRole" or o.kind == "Role" then
      roles[o.kind .. "/" .. (o.metadata.namespace or "") .. "/" .. o.metadata.name] = o
    end
  end
  for _, o in ipairs(objs) do
    if o.kind == "ClusterRoleBinding" or o.kind == "RoleBinding" then
      for _, s in ipairs(o.subjects or {}) do
        if s.kind == "ServiceAccount" and "system:serviceaccount:" .. s.namespace .. ":" .. s.name == USER then
          local ns = o.kind == "RoleBinding" and o.metadata.namespace or ""
          bound[#bound + 1] = { role = roles[o.roleRef.kind .. "/" .. (o.roleRef.kind == "Role" and ns or "") ..
                                              "/" .. o.roleRef.name], ns = ns ~= "" and ns or nil }
        end
      end
    end
  end
  for _, b in ipairs(bound) do
    assert(b.role, "a binding names a role that is not there")
    for _, r in ipairs(b.role.rules) do
      for _, g in ipairs(r.apiGroups) do
        for _, res in ipairs(r.resources) do
          for _, name in ipairs(r.resourceNames or { "*" }) do
            for _, v in ipairs(r.verbs) do
              out[#out + 1] = { group = g, resource = res, name = name, verb = v, ns = b.ns,
                                role = b.role.metadata.name }
            end
          end
        end
      end
    end
  end
  return out
end

local function grant_text(g)
  return string.format("%s %s%s%s%s (%s)", g.verb, g.group == "" and "" or g.group .. "/", g.resource,
    g.name ~= "*" and " " .. g.name or "", g.ns and " in " .. g.ns or "", g.role)
end

local function request_text(ev)
  local o = ev.objectRef or {}
  return string.format("%s %s%s%s %s/%s -> %s", ev.verb, o.apiGroup and o.apiGroup .. "/" or "",
    o.resource or ev.requestURI, o.subresource and "/" .. o.subresource or "", o.namespace or "",
    o.name or "", tostring((ev.responseStatus or {}).code))
end

local function uses(ev, g)
  local o = ev.objectRef
  if not o then return false end
  local res = o.resource .. (o.subresource and "/" .. o.subresource or "")
  return ev.verb == g.verb and (o.apiGroup or "") == g.group and res == g.resource and
    (g.name == "*" or o.name == g.name) and (g.ns == nil or o.namespace == g.ns)
end

-- What the audit log says of USER's requests since `from`: those refused,
-- and the grants no request used.
local function verdict(cp, from, granted)
  local evs = cp:audit_events(from, USER)
  local refused, unused = {}, {}
  for _, ev in ipairs(evs) do
    if (ev.responseStatus or {}).code == 403 then refused[#refused + 1] = request_text(ev) end
  end
  for _, g in ipairs(granted) do
    local used = false
    for _, ev in ipairs(evs) do
      if uses(ev, g) then used = true break end
    end
    if not used then unused[#unused + 1] = grant_text(g) end
  end
  return #evs, refused, unused
end

local function the(objs, kind)
  for _, o in ipairs(objs) do
    if o.kind == kind then return o end
  end
  error("no " .. kind .. " rendered")
end

local function arg_of(args, name)
  for _, a in ipairs(args) do
    local v = a:match("^" .. name:gsub("%-", "%%-") .. "=(.*)$")
    if v then return v end
  end
end

-- The workload's arguments as `ebb run` takes them here: the ConfigMap
-- mounts are the files beside them in deploy/base, $(POD_NAMESPACE) is
-- ebb-system, and the port is the harness's.
local function local_args(args)
  local out = {}
  for i = 2, #args do
    local a = args[i]:gsub("%$%(POD_NAMESPACE%)", "ebb-system")
    if a:match("^%-%-policy=") then a = "--policy=deploy/base/policy.yaml"
    elseif a:match("^%-%-policy%-dir=") then a = "--policy-dir=deploy/base/strategies"
    elseif a:match("^%-%-port=") then a = nil end
    if a then out[#out + 1] = a end
  end
  return out
end

describe("deploy/ RBAC on a real kube-apiserver", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local runs = {}
  setup(function() cp:audit() end)
  after_each(function()
    for _, r in ipairs(runs) do r:stop() end
    runs = {}
    cp:cleanup{ wait = true }   -- ebb-system is made again by the next case
  end)

  local function render(dir, components)
    components = components or {}
    local objs = lite(dir, components)
    if KUSTOMIZE then
      local k = kustomize(dir, components)
      assert.same(rbac_view(k), rbac_view(objs), "render_deploy.py disagrees with kubectl kustomize")
      objs = k
    end
    return objs
  end

  -- The RBAC objects applied as the admin; a kubeconfig with a token of
  -- the ServiceAccount.
  local function apply(objs)
    for _, kind in ipairs({ "Namespace", "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding",
                            "RoleBinding" }) do
      for _, o in ipairs(objs) do
        if o.kind == kind then cp:create(RBAC_KINDS[kind]:format(o.metadata.namespace), o) end
      end
    end
    local token = cp:token("ebb-system", "ebb")
    return cp:write_kubeconfig(cp.dir .. "/ebb-sa.kubeconfig", { token = token })
  end

  -- A tainted node under two ReplicaSet pods: the base policy's
  -- RemovePodsViolatingNodeTaints evicts them (the Eviction API, Events).
  -- Its LoopGuard lets one of the two go at a time (maxUnavailablePerWorkload:
  -- 1 below 4 replicas): the other once the replacement, bound to n2, runs.
  local function workload()
    local ns = cp:namespace("rbac")
    local n1, n2 = ns .. "-n1", ns .. "-n2"
    cp:node(n1)
    cp:node(n2, { unschedulable = true })
    cp:replicaset(ns, "web", 2)
    cp:wait(function() return #cp:pods(ns, "app=web", "bound") == 2 end, 30, "web bound")
    cp:run_pods(ns)
    cp:patch("/api/v1/nodes/" .. n2, { spec = { unschedulable = false } })
    cp:patch("/api/v1/nodes/" .. n1, { spec = { taints = { { key = "rbac", value = "x", effect = "NoSchedule" } } } })
    local web = {}
    for _, p in ipairs(cp:pods(ns, "app=web")) do web[#web + 1] = ns .. "/" .. p.metadata.name end
    return ns, web
  end

  -- The kubelet's part: what kube-scheduler bound runs, what was evicted goes.
  local function kubelet(ns)
    cp:run_pods(ns)
    cp:finish_terminating(ns)
  end

  local function check(from, objs, only_roles)
    local granted = grants(objs)
    if only_roles then
      local keep = {}
      for _, g in ipairs(granted) do
        if only_roles[g.role] then keep[#keep + 1] = g end
      end
      granted = keep
    end
    assert.is_true(#granted > 0)
    -- kube-apiserver writes a request's ResponseComplete audit event after
    -- the client has its answer: the last requests of a run that just
    -- exited may reach the log a moment later, so a grant not yet seen used
    -- is looked for again for a few seconds
    local n, refused, unused
    pcall(cp.wait, cp, function()
      n, refused, unused = verdict(cp, from, granted)
      return #unused == 0
    end, 10)
    assert.is_true(n > 0, "no request of " .. USER .. " in the audit log")
    assert.same({}, refused, "refused (403): " .. table.concat(refused, "; "))
    assert.same({}, unused, "granted but never used: " .. table.concat(unused, "; "))
  end

  it("base (Deployment, leader election): every request allowed, every grant used", function()
    local objs = render("deploy/base")
    local args = local_args(the(objs, "Deployment").spec.template.spec.containers[1].args)
    assert.equal("ebb-system", arg_of(args, "--leader-elect-resource-namespace"))
    local kc = apply(objs)
    local ns, web = workload()
    local from = cp:audit_size()
    -- renewals every second, so the Lease's update is used before SIGTERM
    -- releases it; cycles every 2 s, so one follows the Lease's acquisition
    -- (a cycle of a replica not yet leading evicts nothing)
    args[#args + 1] = "--leader-elect-retry-period=1s"
    args[#args + 1] = "--interval=2s"
    args.kubeconfig = kc
    args.env = { POD_NAME = "ebb-0", POD_NAMESPACE = "ebb-system" }
    args.now = false
    local run = R.start(cp, args)
    runs[#runs + 1] = run
    local ok, err = pcall(cp.wait, cp, function()
      kubelet(ns)
      return #run:evicted() == #web
    end, 120, "the evictions by the leader")
    assert(ok, tostring(err) .. "\n" .. run:stderr())
    cp:wait(function()
      local code, l = cp:request("GET", "/apis/coordination.k8s.io/v1/namespaces/ebb-system/leases/descheduler")
      return code == 200 and l.spec.renewTime ~= l.spec.acquireTime
    end, 15, "a renewal of the Lease")
    local evicted = R.sorted(run:evicted())
    assert.equal(0, run:stop())   -- releases the Lease (and removes the run's log)
    check(from, objs)
    assert.same(R.sorted(web), evicted)
  end)

  it("CronJob overlay (--once, no Lease): every request allowed, every grant used", function()
    local objs = render("deploy/overlays/cronjob")
    for _, o in ipairs(objs) do
      assert.is_false(o.kind == "Role" and o.metadata.name == "ebb-leader-election",
        "the CronJob runs without leader election: no Lease grant")
    end
    local args = local_args(the(objs, "CronJob").spec.jobTemplate.spec.template.spec.containers[1].args)
    local kc = apply(objs)
    local ns, web = workload()
    local from = cp:audit_size()
    args.kubeconfig = kc
    args.env = { POD_NAME = "ebb-cron-0", POD_NAMESPACE = "ebb-system" }
    args.now = false
    local run = R.start(cp, args)
    runs[#runs + 1] = run
    assert.equal(0, run:wait(60), run:stderr())
    local evicted = run:evicted()
    assert.equal(1, #evicted, run:stderr())   -- one at a time (LoopGuard)
    -- the replacement runs on n2; the next run evicts the other pod, and
    -- the memory of evictions it finds is updated, not created
    cp:wait(function()
      kubelet(ns)
      -- two pods, both running, the evicted one gone (a pod being deleted
      -- counts as unavailable, and LoopGuard would hold the other back)
      local live, up = cp:pods(ns, "app=web", "live"), 0
      for _, p in ipairs(live) do
        if (p.status or {}).phase == "Running" then up = up + 1 end
      end
      return #live == 2 and up == 2 and #cp:pods(ns, "app=web", "terminating") == 0
    end, 30, "the replacement running")
    local run2 = R.start(cp, args)
    runs[#runs + 1] = run2
    assert.equal(0, run2:wait(60), run2:stderr())
    for _, p in ipairs(run2:evicted()) do evicted[#evicted + 1] = p end
    check(from, objs)
    assert.same(R.sorted(web), R.sorted(evicted))
  end)

  it("LowNodeLoad's component: its grant is used, and no request is refused", function()
    -- what Koordinator and metrics-server serve, as custom resources
    cp:crd{ group = "slo.koordinator.sh", version = "v1alpha1", kind = "NodeMetric", plural = "nodemetrics",
            scope = "Cluster" }
    cp:crd{ group = "metrics.k8s.io", version = "v1beta1", kind = "NodeMetrics", plural = "nodes",
            scope = "Cluster" }
    cp:crd{ group = "metrics.k8s.io", version = "v1beta1", kind = "PodMetrics", plural = "pods",
            scope = "Namespaced" }
    local objs = render("deploy/overlays/cronjob", { "deploy/components/low-node-load" })
    local kc = apply(objs)
    local dir = S.tmpdir()
    shell.write(dir .. "/policy.yaml", [[
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: load
  pluginConfig:
  - name: DefaultEvictor
  - name: LowNodeLoad
    args:
      lowThresholds: {cpu: 30, memory: 30}
      highThresholds: {cpu: 70, memory: 70}
  plugins:
    balance:
      enabled: [LowNodeLoad]
]])
    local from = cp:audit_size()
    -- outside a pod, ebb's namespace (the memory of evictions') is the flag's
    local run = R.start(cp, { policy_file = dir .. "/policy.yaml", kubeconfig = kc, now = false, "--once",
                              "--leader-elect-resource-namespace", "ebb-system" })
    runs[#runs + 1] = run
    assert.equal(0, run:wait(60), run:stderr())
    shell.rmdir(dir)
    check(from, objs, { ["ebb-low-node-load"] = true })
    local _, refused = verdict(cp, from, {})
    assert.same({}, refused)
  end)
end)
