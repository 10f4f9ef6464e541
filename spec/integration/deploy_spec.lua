-- deploy/: the kustomize base and overlays render with `kubectl kustomize`,
-- carry what the deployment promises (the RBAC ebb uses and nothing more, the
-- restricted securityContext, directory mounts, probes, leader election,
-- the CronJob's schedule), and the command lines they render run: the
-- policy and the example strategy pass `ebb check`, make the expected
-- decisions in `ebb simulate`, and the Deployment's, the CronJob's and the
-- dry run's own arguments drive `ebb run` against `ebb serve`. The
-- Dockerfile installs the packages of exactly the libraries ebb links and
-- lays out lua/ and policies/ where the binary finds them.
--
-- Rendering needs kubectl (with kustomize v5, kubectl 1.27 or later) and
-- PyYAML (Debian: python3-yaml) to read the output; the cases that need
-- either are pending, with the reason, when it is missing.
local R = require("spec.integration.run_harness")
local S = R.S
local shell = require("spec.shell")
local json = S.json

local FIXTURE = "spec/fixtures/deploy-cluster.json"
local POLICY = "deploy/base/policy.yaml"
local STRATEGIES = "deploy/base/strategies"

-- ---- tools -------------------------------------------------------------------

local run = shell.sh   -- exit code, stdout and stderr together

local function kustomize_missing()
  if os.execute("command -v kubectl >/dev/null 2>&1") ~= true then
    return "kubectl is not installed: the deploy/ rendering checks are skipped"
  end
  local code, out = run("kubectl version --client -o json")
  local v = code == 0 and out:match('"kustomizeVersion"%s*:%s*"v(%d+)')
  if not v then
    return "kubectl has no kustomize (kubectl version --client): the deploy/ rendering checks are skipped"
  end
  if tonumber(v) < 5 then
    return "kubectl's kustomize is v" .. v .. ", deploy/ needs v5 (kubectl 1.27 or later): skipped"
  end
  if os.execute("python3 -c 'import yaml' >/dev/null 2>&1") ~= true then
    return "PyYAML is not installed (Debian: python3-yaml): the deploy/ rendering checks are skipped"
  end
  return nil
end
local MISSING = kustomize_missing()

-- `kubectl kustomize DIR` as a list of objects.
local TO_JSON = "python3 -c 'import json, sys, yaml; "
  .. "json.dump([d for d in yaml.safe_load_all(sys.stdin) if d is not None], sys.stdout)'"

local function render(dir)
  local tmp = os.tmpname()
  local code, out = run("kubectl kustomize " .. S.shq(dir) .. " >" .. tmp)
  assert(code == 0, "kubectl kustomize " .. dir .. " failed:\n" .. out)
  local _, text = shell.run(TO_JSON .. " <" .. tmp)
  local objs = json.decode(text)
  os.remove(tmp)
  assert.is_table(objs)
  assert.is_true(#objs > 0, dir .. " renders nothing")
  return objs
end

-- A kustomization of its own in a scratch directory over deploy/ (kustomize
-- takes relative paths only): resources and components relative to the
-- checkout.
local function render_with(resources, components)
  local dir = S.tmpdir()
  local up = dir:gsub("[^/]+", ".."):sub(2)          -- /tmp/x -> ../..
  local cwd = shell.cwd()
  local function rel(p) return up .. cwd .. "/" .. p end
  local lines = { "apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization", "resources:" }
  for _, r in ipairs(resources) do lines[#lines + 1] = "- " .. rel(r) end
  lines[#lines + 1] = "components:"
  for _, c in ipairs(components) do lines[#lines + 1] = "- " .. rel(c) end
  shell.write(dir .. "/kustomization.yaml", table.concat(lines, "\n") .. "\n")
  local ok, objs = pcall(render, dir)
  shell.rmdir(dir)
  assert(ok, objs)
  return objs
end

local function find(objs, kind, name)
  local out = {}
  for _, o in ipairs(objs) do
    if o.kind == kind and (name == nil or o.metadata.name == name) then out[#out + 1] = o end
  end
  return out
end

local function one(objs, kind, name)
  local found = find(objs, kind, name)
  assert.equal(1, #found, "expected one " .. kind .. " " .. tostring(name))
  return found[1]
end

local function kinds(objs)
  local out = {}
  for _, o in ipairs(objs) do
    out[#out + 1] = o.kind .. "/" .. (o.metadata.namespace or "") .. "/" .. o.metadata.name
  end
  table.sort(out)
  return out
end

local function contains(list, v)
  for _, x in ipairs(list or {}) do
    if x == v then return true end
  end
  return false
end

local function ebb_version()
  local code, out = run(S.shq(S.EBB) .. " version")
  assert.equal(0, code, out)
  return assert(out:match("^ebb (%S+)"), out)
end

-- ---- what ebb is granted: what it uses, and nothing more (proven against a
-- real kube-apiserver by spec/integration/k8s_rbac_spec.lua); compared as
-- "group resource name verb" -------------------------------------------------------

local EBB_RULES = {
  { "", { "nodes", "namespaces", "pods", "persistentvolumeclaims" }, nil, { "list", "watch" } },
  { "scheduling.k8s.io", { "priorityclasses" }, nil, { "list", "watch" } },
  { "policy", { "poddisruptionbudgets" }, nil, { "list", "watch" } },
  { "", { "pods/eviction" }, nil, { "create" } },
  { "events.k8s.io", { "events" }, nil, { "create" } },
}

-- leader election, in ebb's own namespace only
local LEASE_RULES = {
  { "coordination.k8s.io", { "leases" }, nil, { "create" } },
  { "coordination.k8s.io", { "leases" }, { "descheduler" }, { "get", "update" } },
}

local function grants(rules)
  local out, seen = {}, {}
  for _, r in ipairs(rules) do
    local groups, resources, names, verbs = r.apiGroups or r[1], r.resources or r[2],
      r.resourceNames or r[3], r.verbs or r[4]
    if type(groups) == "string" then groups = { groups } end
    for _, g in ipairs(groups) do
      for _, res in ipairs(resources) do
        for _, n in ipairs(names or { "*" }) do
          for _, v in ipairs(verbs) do
            local k = string.format("%s %s %s %s", g == "" and "core" or g, res, n, v)
            if not seen[k] then
              seen[k] = true
              out[#out + 1] = k
            end
          end
        end
      end
    end
  end
  table.sort(out)
  return out
end

-- ---- the pod both workloads run -------------------------------------------------

local function flag(args, name)
  for _, a in ipairs(args) do
    local v = a:match("^" .. name:gsub("%-", "%%-") .. "=(.*)$")
    if v then return v end
  end
end

local function dirname(p) return (p:match("^(.*)/[^/]+$")) end

-- Everything the deployment promises of ebb's pod, whichever workload runs it.
local function check_pod(spec, objs, what)
  local psc = spec.securityContext or {}
  assert.is_true(psc.runAsNonRoot, what .. ": pod runAsNonRoot")
  assert.is_true(psc.runAsUser and psc.runAsUser > 0, what .. ": a non-root uid")
  assert.equal(1, #spec.containers, what)
  local c = spec.containers[1]
  local sc = c.securityContext or {}
  assert.is_false(sc.allowPrivilegeEscalation, what .. ": allowPrivilegeEscalation")
  assert.is_true(sc.readOnlyRootFilesystem, what .. ": readOnlyRootFilesystem")
  assert.is_not_true(sc.privileged, what .. ": privileged")
  assert.is_not_false(sc.runAsNonRoot, what .. ": container runAsNonRoot")
  assert.same({ "ALL" }, sc.capabilities and sc.capabilities.drop, what .. ": drop ALL")
  assert.is_nil(sc.capabilities.add, what .. ": no capability added")
  local seccomp = (sc.seccompProfile or psc.seccompProfile or {}).type
  assert.equal("RuntimeDefault", seccomp, what .. ": seccomp")
  assert.is_nil(spec.hostNetwork, what)
  assert.is_nil(spec.hostPID, what)
  assert.equal("system-cluster-critical", spec.priorityClassName, what)

  -- the service account is the one bound to the ClusterRole
  local sa = one(objs, "ServiceAccount", spec.serviceAccountName)
  local crb = one(objs, "ClusterRoleBinding")
  assert.same({ { kind = "ServiceAccount", name = sa.metadata.name, namespace = sa.metadata.namespace } },
    crb.subjects, what)
  assert.equal(one(objs, "ClusterRole").metadata.name, crb.roleRef.name)

  -- the image is this version of ebb, its entrypoint runs `ebb run`
  assert.equal("ebb:" .. ebb_version(), c.image, what)
  assert.is_nil(c.command, what .. ": the image's entrypoint is ebb")
  assert.equal("run", c.args[1], what)

  -- the policy and the strategies: whole ConfigMap directories, no subPath
  local mounts, volumes = {}, {}
  for _, m in ipairs(c.volumeMounts) do
    assert.is_nil(m.subPath, what .. ": " .. m.name .. " is mounted with subPath")
    mounts[m.mountPath] = m
  end
  for _, v in ipairs(spec.volumes) do volumes[v.name] = v end
  local policy = assert(flag(c.args, "--policy"), what .. ": --policy")
  local pm = assert(mounts[dirname(policy)], what .. ": nothing mounted at " .. dirname(policy))
  local pcm = volumes[pm.name].configMap
  assert.equal("ebb-policy", pcm.name, what)
  assert.is_not_nil(one(objs, "ConfigMap", "ebb-policy").data[policy:match("[^/]+$")], what)
  local dir = assert(flag(c.args, "--policy-dir"), what .. ": --policy-dir")
  local sm = assert(mounts[dir], what .. ": nothing mounted at " .. dir)
  assert.equal("ebb-strategies", volumes[sm.name].configMap.name, what)
  assert.is_true(pm.readOnly and sm.readOnly, what)
  -- the only writable place, for the watch cache's file
  local tmp = assert(mounts["/tmp"], what .. ": /tmp")
  assert.is_table(volumes[tmp.name].emptyDir, what)

  -- who the pod is, from the downward API
  local env = {}
  for _, e in ipairs(c.env) do env[e.name] = e.valueFrom and e.valueFrom.fieldRef.fieldPath end
  assert.equal("metadata.name", env.POD_NAME, what)
  assert.equal("metadata.namespace", env.POD_NAMESPACE, what)

  -- no placement forced on anyone
  assert.is_nil(spec.nodeSelector, what)
  assert.is_nil(spec.tolerations, what)
  return c
end

local function deployment_pod(objs)
  local d = one(objs, "Deployment", "ebb")
  return d.spec.template.spec, d
end

local function cronjob_pod(objs)
  local cj = one(objs, "CronJob", "ebb")
  return cj.spec.jobTemplate.spec.template.spec, cj
end

-- ---- the rendered manifests ------------------------------------------------------

describe("deploy/ renders", function()
  if MISSING then
    it("needs kubectl with kustomize v5 and PyYAML", function() pending(MISSING) end)
    return
  end

  local base, cron, dry
  setup(function()
    base = render("deploy/base")
    cron = render("deploy/overlays/cronjob")
    dry = render("deploy/overlays/dry-run")
  end)

  it("base: a namespace, RBAC, the two ConfigMaps and the Deployment, nothing else", function()
    assert.same({
      "ClusterRole//ebb", "ClusterRoleBinding//ebb", "ConfigMap/ebb-system/ebb-policy",
      "ConfigMap/ebb-system/ebb-strategies", "Deployment/ebb-system/ebb", "Namespace//ebb-system",
      "Role/ebb-system/ebb-eviction-memory", "Role/ebb-system/ebb-leader-election",
      "RoleBinding/ebb-system/ebb-eviction-memory", "RoleBinding/ebb-system/ebb-leader-election",
      "ServiceAccount/ebb-system/ebb",
    }, kinds(base))
    local ns = one(base, "Namespace", "ebb-system")
    assert.equal("restricted", ns.metadata.labels["pod-security.kubernetes.io/enforce"])
  end)

  it("grants what ebb uses: reads, evictions and Events cluster-wide, the Lease in its namespace", function()
    local role = one(base, "ClusterRole", "ebb")
    assert.same(grants(EBB_RULES), grants(role.rules))
    assert.is_nil(role.aggregationRule)
    local lease = one(base, "Role", "ebb-leader-election")
    assert.equal("ebb-system", lease.metadata.namespace)
    assert.same(grants(LEASE_RULES), grants(lease.rules))
    local rb = one(base, "RoleBinding", "ebb-leader-election")
    assert.same({ kind = "Role", name = "ebb-leader-election", apiGroup = "rbac.authorization.k8s.io" }, rb.roleRef)
    assert.same({ { kind = "ServiceAccount", name = "ebb", namespace = "ebb-system" } }, rb.subjects)
    -- the memory of evictions: one ConfigMap by name, create alone unnamed
    local mem = one(base, "Role", "ebb-eviction-memory")
    assert.equal("ebb-system", mem.metadata.namespace)
    assert.same(grants({
      { apiGroups = { "" }, resources = { "configmaps" }, verbs = { "create" } },
      { apiGroups = { "" }, resources = { "configmaps" }, resourceNames = { "ebb-eviction-memory" },
        verbs = { "get", "update" } },
    }), grants(mem.rules))
  end)

  it("base: 2 replicas with leader election, probes on ebb's port, the restricted pod", function()
    local spec, d = deployment_pod(base)
    assert.equal(2, d.spec.replicas)
    local c = check_pod(spec, base, "Deployment")
    assert.is_true(contains(c.args, "--leader-elect"))
    assert.is_nil(flag(c.args, "--leader-elect"), "--leader-elect=... would be read as a value")
    assert.is_false(contains(c.args, "--once"))
    assert.is_false(contains(c.args, "--dry-run"))
    -- the Lease: the name RBAC allows, in the pod's own namespace
    assert.is_nil(flag(c.args, "--leader-elect-resource-name"))
    assert.equal("$(POD_NAMESPACE)", flag(c.args, "--leader-elect-resource-namespace"))
    assert.equal("5m", flag(c.args, "--interval"))
    -- probes and metrics on the port ebb serves
    local port = tonumber(flag(c.args, "--port"))
    assert.equal(10258, port)
    assert.equal(1, #c.ports)
    assert.equal(port, c.ports[1].containerPort)
    for probe, path in pairs({ livenessProbe = "/healthz", readinessProbe = "/readyz" }) do
      local g = c[probe].httpGet
      assert.equal(path, g.path, probe)
      assert.is_true(g.port == port or g.port == c.ports[1].name, probe)
      assert.equal("HTTPS", g.scheme, probe)
    end
    -- the selector picks the template's pods
    for k, v in pairs(d.spec.selector.matchLabels) do
      assert.equal(v, d.spec.template.metadata.labels[k])
    end
  end)

  it("generates the ConfigMaps from the canonical files, with fixed names", function()
    local policy = one(base, "ConfigMap", "ebb-policy")
    assert.same({ ["policy.yaml"] = assert(shell.read(POLICY)) }, policy.data)
    -- every strategy in the directory is in the ConfigMap, byte for byte
    local want = {}
    local p = assert(io.popen("ls " .. STRATEGIES))
    for name in p:lines() do
      if name:match("%.lua$") then want[name] = assert(shell.read(STRATEGIES .. "/" .. name)) end
    end
    p:close()
    assert.is_not_nil(next(want))
    assert.same(want, one(base, "ConfigMap", "ebb-strategies").data)
  end)

  it("cronjob: every 15 minutes, --once, no Deployment, the same pod", function()
    assert.same({}, find(cron, "Deployment"))
    local spec, cj = cronjob_pod(cron)
    assert.equal("*/15 * * * *", cj.spec.schedule)
    assert.equal("Forbid", cj.spec.concurrencyPolicy)
    assert.equal("Never", spec.restartPolicy)
    local c = check_pod(spec, cron, "CronJob")
    assert.is_true(contains(c.args, "--once"))
    assert.is_false(contains(c.args, "--leader-elect"))
    assert.is_false(contains(c.args, "--dry-run"))
    -- the rest is the base's, but for the Lease's grant (no leader election)
    local rest = {}
    for _, o in ipairs(base) do
      -- the CronJob keeps the memory of evictions' Role, not the Lease's
      if o.kind ~= "Deployment" and o.metadata.name ~= "ebb-leader-election" then rest[#rest + 1] = o end
    end
    local others = {}
    for _, o in ipairs(cron) do
      if o.kind ~= "CronJob" then others[#others + 1] = o end
    end
    assert.same(rest, others)
    -- the same pod as the Deployment's, but for its arguments and probes
    local dspec = deployment_pod(base)
    assert.same(dspec.securityContext, spec.securityContext)
    assert.same(dspec.volumes, spec.volumes)
    local dc = dspec.containers[1]
    for _, k in ipairs({ "image", "env", "volumeMounts", "securityContext", "resources" }) do
      assert.same(dc[k], c[k], k)
    end
    assert.equal(flag(dc.args, "--policy"), flag(c.args, "--policy"))
    assert.equal(flag(dc.args, "--policy-dir"), flag(c.args, "--policy-dir"))
  end)

  it("dry-run: the base Deployment with --dry-run added, nothing else changed", function()
    local spec = deployment_pod(dry)
    local c = check_pod(spec, dry, "dry-run Deployment")
    local bc = deployment_pod(base).containers[1]
    local want = {}
    for i, a in ipairs(bc.args) do want[i] = a end
    want[#want + 1] = "--dry-run"
    assert.same(want, c.args)
    c.args = bc.args
    assert.same(base, dry)
  end)

  it("the dry-run component also turns the CronJob into a dry run", function()
    local objs = render_with({ "deploy/overlays/cronjob" }, { "deploy/components/dry-run" })
    local c = cronjob_pod(objs).containers[1]
    assert.equal("--dry-run", c.args[#c.args])
    assert.is_true(contains(c.args, "--once"))
  end)

  it("service-monitor: a Service over the pods' metrics port and a ServiceMonitor that selects it", function()
    local objs = render_with({ "deploy/base" }, { "deploy/components/service-monitor" })
    local svc, sm = one(objs, "Service", "ebb-metrics"), one(objs, "ServiceMonitor", "ebb")
    local pod = deployment_pod(objs)
    local tmpl = one(objs, "Deployment").spec.template.metadata.labels
    assert.equal("ebb-system", svc.metadata.namespace)
    assert.equal("ebb-system", sm.metadata.namespace)
    -- the Service selects the Deployment's pods, by the port the container names
    for k, v in pairs(svc.spec.selector) do assert.equal(v, tmpl[k], "selector " .. k) end
    local names = {}
    for _, p in ipairs(pod.containers[1].ports) do names[p.name] = p.containerPort end
    local sp = svc.spec.ports[1]
    assert.equal(names[sp.targetPort], sp.port, "Service port " .. tostring(sp.targetPort))
    -- the ServiceMonitor selects the Service and scrapes a port it has
    for k, v in pairs(sm.spec.selector.matchLabels) do assert.equal(v, svc.metadata.labels[k], "label " .. k) end
    assert.equal(sp.name, sm.spec.endpoints[1].port)
    assert.equal("/metrics", sm.spec.endpoints[1].path)
    -- ebb serves HTTPS with a self-signed certificate by default (as upstream's
    -- chart scrapes it): no verification, no plain HTTP flag in the pod
    assert.equal("https", sm.spec.endpoints[1].scheme)
    assert.is_true(sm.spec.endpoints[1].tlsConfig.insecureSkipVerify)
    assert.is_false(contains(pod.containers[1].args, "--plain-http"))
  end)

  it("node-placement: a nodeSelector and tolerations for ebb's own pod, on request", function()
    for _, layout in ipairs({ { "deploy/base", deployment_pod }, { "deploy/overlays/cronjob", cronjob_pod } }) do
      local objs = render_with({ layout[1] }, { "deploy/components/node-placement" })
      local spec = layout[2](objs)
      assert.is_table(spec.nodeSelector, layout[1])
      assert.is_not_nil(next(spec.nodeSelector), layout[1])
      assert.is_true(#spec.tolerations > 0, layout[1])
      for _, t in ipairs(spec.tolerations) do
        assert.is_string(t.key)
        assert.is_true(t.effect == "NoSchedule" or t.effect == "NoExecute" or t.effect == "PreferNoSchedule")
      end
    end
  end)
end)

-- ---- the policy and the example strategy ------------------------------------------

-- What deploy/base's policy does to spec/fixtures/deploy-cluster.json (see
-- spec/fixtures/build_deploy.py for why each pod is there).
local CYCLE1 = {
  { "RemovePodsHavingTooManyRestarts", "shop/recommender-4e5f6a7b8-l5m6n" },
  { "AnnotatedPodLifeTime", "shop/cart-6d9f7b8c4-f4g7h" },
  { "AnnotatedPodLifeTime", "search/api-5b7c9d2e1-c3d6e" },
}
local CYCLE2 = {
  { "AnnotatedPodLifeTime", "shop/cart-6d9f7b8c4-k2l5m" },
  { "AnnotatedPodLifeTime", "search/api-5b7c9d2e1-t9v2w" },
}

local function keys(list)
  local out = {}
  for i, e in ipairs(list) do out[i] = e[2] end
  return out
end

local function simulate(extra)
  local code, out, err = shell.run(string.format("%s simulate --snapshot %s --policy %s --policy-dir %s "
    .. "--now %s --output json %s", S.shq(S.EBB), FIXTURE, POLICY, STRATEGIES, R.NOW, extra or ""))
  assert.equal(0, code, out .. err)
  return assert(json.decode(out), out)
end

describe("deploy/base policy", function()
  it("passes ebb check with the strategies directory", function()
    local code, out = run(string.format("%s check --policy %s --policy-dir %s",
      S.shq(S.EBB), POLICY, STRATEGIES))
    assert.equal(0, code, out)
    assert.matches("ok", out)
    -- and names a strategy that only the directory provides
    code, out = run(string.format("%s check --policy %s", S.shq(S.EBB), POLICY))
    assert.equal(2, code, out)
    assert.matches("AnnotatedPodLifeTime", out)
  end)

  it("refuses the strategy's bad args, naming the line and field", function()
    local text = assert(shell.read(POLICY))
    local tmp = S.tmpdir()
    for _, case in ipairs({
      { "minLifetime: 1h", "minLifetime: 0s", "args%.minLifetime: AnnotatedPodLifeTime: must be a positive duration" },
      { "minLifetime: 1h", "minLifetime: soon", 'args%.minLifetime: AnnotatedPodLifeTime: "soon" is not a duration' },
      { "maxPerOwner: 1", "maxPerOwner: 0", "args%.maxPerOwner: AnnotatedPodLifeTime: 0 is out of range" },
      { "annotation: ebb/max%-pod%-lifetime", 'annotation: ""', "args%.annotation: AnnotatedPodLifeTime: must not be empty" },
    }) do
      local bad, n = text:gsub(case[1], case[2])
      assert.equal(1, n, case[1])
      shell.write(tmp .. "/policy.yaml", bad)
      local line
      local i = 0
      for l in (bad .. "\n"):gmatch("([^\n]*)\n") do
        i = i + 1
        if l:find(case[2], 1, true) then line = i end
      end
      local code, out = run(string.format("%s check --policy %s/policy.yaml --policy-dir %s",
        S.shq(S.EBB), tmp, STRATEGIES))
      assert.equal(2, code, out)
      assert.matches("policy%.yaml:" .. line .. ": profiles%[0%]%.pluginConfig%[8%]%." .. case[3], out)
    end
    shell.rmdir(tmp)
  end)

  it("recycles opted-in pods, most overdue first, one per owner per cycle", function()
    local plan = simulate("--cycles 2")
    local got = {}
    for _, e in ipairs(plan.evictions) do
      got[#got + 1] = { e.cycle, e.plugin, e.pod }
    end
    local want = {}
    for _, e in ipairs(CYCLE1) do want[#want + 1] = { 1, e[1], e[2] } end
    for _, e in ipairs(CYCLE2) do want[#want + 1] = { 2, e[1], e[2] } end
    assert.same(want, got)
    assert.equal("pod is 1d6h old, past its ebb/max-pod-lifetime of 24h", plan.evictions[2].reason)
    assert.equal("pod is 5h old, past its ebb/max-pod-lifetime of 1h30m", plan.evictions[3].reason)
    assert.same({}, plan.refusals or {})
  end)

  it("notes the values it will not honor, and leaves those pods alone", function()
    local plan = simulate()
    local notes = {}
    for _, n in ipairs(plan.notes or {}) do
      if n.plugin == "AnnotatedPodLifeTime" then notes[#notes + 1] = n.message end
    end
    assert.same({
      'shop/worker-8c7b6a5d4-z1x2c: ebb/max-pod-lifetime: "forever" is not a duration (e.g. "5m", "1h30m")',
      "shop/thumbnailer-3f4e5d6c7-v5b6n: ebb/max-pod-lifetime 10m is below minLifetime 1h, not honored",
    }, notes)
  end)
end)

-- ---- the rendered command lines, run -------------------------------------------------

describe("deploy/ command lines against ebb serve", function()
  if MISSING then
    it("needs kubectl with kustomize v5 and PyYAML", function() pending(MISSING) end)
    return
  end

  local srv, runs = nil, {}
  after_each(function()
    for _, r in ipairs(runs) do r:stop() end
    runs = {}
    if srv then srv:stop() end
    srv = nil
  end)

  -- `ebb run` with a container's arguments and environment, its mounts
  -- mapped back to the files in deploy/base and the downward API filled in
  -- (a made-up pod name, the namespace); the harness picks the port.
  local function start(c, namespace)
    local opts = { policy_file = POLICY, env = {} }
    local downward = { ["metadata.name"] = "ebb-7d4b9c6f5-x2k8p", ["metadata.namespace"] = namespace }
    for _, e in ipairs(c.env) do
      opts.env[e.name] = e.value or assert(downward[e.valueFrom.fieldRef.fieldPath], e.name)
    end
    assert.equal("run", c.args[1])
    for i = 2, #c.args do
      local a = c.args[i]
        :gsub("^(%-%-policy=)/etc/ebb/policy/", "%1deploy/base/")
        :gsub("^(%-%-policy%-dir=)/etc/ebb/strategies$", "%1" .. STRATEGIES)
        :gsub("%$%(POD_NAMESPACE%)", namespace)
      if not a:match("^%-%-port=") then opts[#opts + 1] = a end
    end
    local r = R.start(srv, opts)
    runs[#runs + 1] = r
    return r
  end

  local function readyz(r)
    local port = r:wait_log("on 127%.0%.0%.1:(%d+)", 10)
    local code, out = run("curl -sk -o /dev/null -w '%{http_code}' --max-time 5 https://127.0.0.1:"
      .. tostring(port) .. "/readyz")
    return code == 0 and out
  end

  it("the Deployment's: takes the Lease in its namespace, evicts cycle 1's pods, is ready", function()
    local spec, d = deployment_pod(render("deploy/base"))
    srv = S.start{ snapshot = FIXTURE }
    local r = start(spec.containers[1], d.metadata.namespace)
    assert.is_not_nil(r:wait_log("acquired lease ebb%-system/descheduler", 15), r:stderr())
    assert.is_not_nil(r:wait_log("cycle 1:", 15), r:stderr())
    assert.same(keys(CYCLE1), r:evicted())
    assert.equal("200", S.eventually(function() return readyz(r) == "200" and "200" end, 10))
    local lease = srv:get("/apis/coordination.k8s.io/v1/namespaces/ebb-system/leases/descheduler")
    assert.is_string(lease.spec.holderIdentity)
    assert.equal(0, r:stop())
    runs = {}
  end)

  it("the CronJob's: one cycle, the same evictions, exit 0", function()
    local spec, cj = cronjob_pod(render("deploy/overlays/cronjob"))
    srv = S.start{ snapshot = FIXTURE }
    local r = start(spec.containers[1], cj.metadata.namespace)
    assert.equal(0, r:wait(30), r:stderr())
    assert.same(keys(CYCLE1), r:evicted())
  end)

  it("the dry run's: decides as the Deployment does, evicts nothing", function()
    local spec, d = deployment_pod(render("deploy/overlays/dry-run"))
    srv = S.start{ snapshot = FIXTURE }
    local before = R.pods(srv)
    local r = start(spec.containers[1], d.metadata.namespace)
    assert.is_not_nil(r:wait_log("cycle 1:", 20), r:stderr())
    assert.same(keys(CYCLE1), r:evicted())
    local n = 0
    for line in r:stderr():gmatch("evicted pod [^\n]*") do
      assert.matches("dry run%)$", line)
      n = n + 1
    end
    assert.equal(#CYCLE1, n)
    assert.same(before, R.pods(srv))
  end)
end)

-- ---- the image ----------------------------------------------------------------------

describe("Dockerfile", function()
  local text = assert(shell.read("Dockerfile"))
  local runtime = assert(text:match("\nFROM debian:bookworm%-slim\n(.*)$"), "a bookworm-slim runtime stage")

  it("builds on bookworm with make all and runs on bookworm-slim as uid 65532", function()
    assert.matches("^[^\n]*\n.-FROM debian:bookworm AS build\n", text)
    assert.matches("\nRUN make deps", text)
    assert.matches("\nRUN make all\n", text)
    assert.matches('\nUSER 65532:65532\n', runtime)
    assert.matches('\nENTRYPOINT %["/usr/local/bin/ebb"%]\n', runtime)
    -- the uid the manifests run as
    for _, f in ipairs({ "deploy/base/deployment.yaml", "deploy/overlays/cronjob/cronjob.yaml" }) do
      assert.matches("runAsUser: 65532\n", assert(shell.read(f)), f)
    end
  end)

  it("installs exactly the packages of the libraries ebb links, and CA certificates", function()
    if os.execute("command -v readelf >/dev/null && command -v dpkg >/dev/null") ~= true then
      pending("readelf or dpkg is missing: the runtime package list is not checked")
      return
    end
    local listed = {}
    local pkgs = assert(runtime:match("apt%-get install %-y %-%-no%-install%-recommends(.-)&&"))
    for p in pkgs:gmatch("[%w%.%+%-]+") do
      if p ~= "\\" then listed[#listed + 1] = p end
    end
    table.sort(listed)
    -- what the dynamic linker needs, by package (libc6 is in every Debian image)
    local need, seen = { "ca-certificates" }, {}
    local code, out = run("readelf -d " .. S.shq(S.EBB))
    assert.equal(0, code, out)
    local _, ldd = run("ldd " .. S.shq(S.EBB))
    for lib in out:gmatch("NEEDED%)%s+Shared library: %[([^%]]+)%]") do
      local path = assert(ldd:match(lib:gsub("%p", "%%%0") .. " => (%S+)"), lib)
      -- dpkg knows a library by the path its package installed: the link
      -- (libm.so.6) or the file it points to (libcurl.so.4.8.0), under /usr
      -- or not (merged /usr)
      local pkg
      local _, real = run("readlink -f " .. S.shq(path))
      real = real:gsub("%s+$", "")
      for _, cand in ipairs({ path, real, (path:gsub("^/usr/", "/")), (real:gsub("^/usr/", "/")) }) do
        local c, owner = run("dpkg -S " .. S.shq(cand))
        pkg = pkg or (c == 0 and owner:match("^([^:]+)"))
      end
      assert.is_string(pkg, "no package owns " .. path)
      if pkg ~= "libc6" and not seen[pkg] then
        seen[pkg] = true
        need[#need + 1] = pkg
      end
    end
    table.sort(need)
    assert.same(need, listed)
  end)

  it("lays out lua/ and policies/ where the binary finds them", function()
    -- what the build stage puts in /out and the runtime stage copies to /
    assert.matches("install %-D %-m 0755 build/ebb /out/usr/local/bin/ebb", text)
    assert.matches("cp %-R lua policies /out/usr/local/share/ebb/", text)
    assert.matches("COPY %-%-from=build /out/ /", runtime)
    -- that layout, without EBB_HOME, from another directory
    local root = S.tmpdir()
    local cwd = shell.cwd()
    assert(os.execute(string.format("mkdir -p %s/usr/local/bin %s/usr/local/share/ebb && "
      .. "cp %s %s/usr/local/bin/ebb && cp -R lua policies %s/usr/local/share/ebb/",
      root, root, S.shq(S.EBB), root, root)))
    local code, out = run(string.format("cd / && env -u EBB_HOME %s/usr/local/bin/ebb check "
      .. "--policy %s/%s --policy-dir %s/%s", root, cwd, POLICY, cwd, STRATEGIES))
    shell.rmdir(root)
    assert.equal(0, code, out)
    assert.matches("policy%.yaml: ok", out)
  end)
end)
