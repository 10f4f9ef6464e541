-- make image: ebb's image built from nothing with buildah. It holds ebb, the
-- libraries it links, the CA certificates and its Lua runtime, and nothing
-- else: no shell, no package manager, no setuid file. It runs as 65532 and
-- `ebb run --once --dry-run` works from it against the real control plane.
-- Skipped, with a message, where buildah is missing.
local shell = require("spec.shell")
local K = require("spec.integration.k8s_harness")
local shq, sh = shell.shq, shell.sh

describe("make image", function()
  if not shell.have("buildah") then
    pending("buildah is not installed: `make image` needs Debian's buildah (apt-get install buildah)")
    return
  end
  local B = os.getenv("EBB_BUILD") or "build"
  local image = "localhost/ebb:spec-" .. shell.pid()
  local bah = "buildah --storage-driver " .. (os.getenv("STORAGE_DRIVER") or "vfs")
  local ctr, root
  -- chroot by its path: the runs get no environment at all (env -i)
  local CHROOT = (select(2, sh("command -v chroot")):gsub("%s+$", ""))

  setup(function()
    local code, out = sh("make -s image B=" .. shq(B) .. " IMAGE=" .. shq(image))
    assert.equal(0, code, out)
    code, ctr = sh(bah .. " from --quiet " .. shq(image))
    assert.equal(0, code, ctr)
    ctr = ctr:gsub("%s+$", "")
    code, root = sh(bah .. " mount " .. shq(ctr))
    assert.equal(0, code, root)
    root = root:gsub("%s+$", "")
  end)

  teardown(function()
    if root then sh("umount " .. shq(root .. "/proc") .. " 2>/dev/null") end
    if ctr then sh(bah .. " rm " .. shq(ctr)) end
    sh(bah .. " rmi " .. shq(image))
  end)

  -- every path in the image, "/usr/bin/ebb" style, with its type
  local function files()
    local out = {}
    local p = io.popen("cd " .. shq(root) .. " && find . -mindepth 1 ! -type d -printf '%y %p\\n'")
    for line in p:lines() do
      local kind, path = line:match("^(%a) %.(/.*)$")
      out[#out + 1] = { kind = kind, path = path }
    end
    p:close()
    return out
  end

  it("holds ebb, its libraries, the CA certificates and its runtime: nothing else", function()
    local allowed = {
      "^/usr/bin/ebb$",
      "^/usr/lib/x86_64%-linux%-gnu/[%w%._%-]+%.so[%.%d]*$",
      "^/usr/lib64/ld%-linux%-x86%-64%.so%.2$",
      "^/usr/share/ebb/lua/ebb/[%w_]+%.lua$",
      "^/usr/share/ebb/policies/[%w_]+%.lua$",
      "^/usr/share/ebb/examples/demo%-[%w%-]+%.%a+$",
      "^/etc/ssl/certs/ca%-certificates%.crt$",
      "^/etc/passwd$", "^/etc/group$",
      "^/lib$", "^/lib64$",
    }
    local n = 0
    for _, f in ipairs(files()) do
      local ok = false
      for _, pat in ipairs(allowed) do ok = ok or f.path:match(pat) ~= nil end
      assert.is_true(ok, "unexpected in the image: " .. f.path)
      local base = f.path:match("[^/]+$")
      for _, tool in ipairs{ "sh", "bash", "dash", "busybox", "dpkg", "apt", "apt-get", "su", "sudo" } do
        assert.are_not.equal(tool, base, f.path)
      end
      n = n + 1
    end
    assert.is_true(n > 20, "files: " .. n)
    local code, out = sh("find " .. shq(root) .. " -perm /6000")
    assert.equal(0, code, out)
    assert.equal("", out, "setuid or setgid files")
    local _, user = sh(bah .. " inspect --type image --format '{{.OCIv1.Config.User}}' " .. shq(image))
    assert.equal("65532:65532", (user:gsub("%s+$", "")))
  end)

  it("runs as 65532 from its root filesystem: the runtime is found next to the binary", function()
    assert(os.execute("mkdir -p " .. shq(root .. "/proc") .. " && mountpoint -q " .. shq(root .. "/proc")
      .. " || mount -t proc proc " .. shq(root .. "/proc")))
    local ex = "/usr/share/ebb/examples/"
    local code, out = sh("env -i " .. CHROOT .. " --userspec=65532:65532 " .. shq(root) .. " /usr/bin/ebb simulate"
      .. " --snapshot " .. ex .. "demo-cluster.json --policy " .. ex .. "demo-policy.yaml"
      .. " --now 2026-11-22T12:00:00Z")
    assert.equal(0, code, out)
    assert.truthy(out:match("%d+ evictions"), out)
  end)

  describe("against kube-apiserver", function()
    if K.skip(pending) then return end
    local cp = K.cluster()
    after_each(function() cp:cleanup() end)

    it("`ebb run --once --dry-run` decides and exits 0", function()
      local ns = cp:namespace("image")
      cp:node("image-n1", { cpu = "4", memory = "8Gi" })
      cp:node("image-n2", { cpu = "4", memory = "8Gi" })   -- a cycle needs two nodes
      cp:replicaset(ns, "web", 2, { cpu = "100m", node_selector = { ["kubernetes.io/hostname"] = "image-n1" } })
      local pods = cp:wait(function()
        local p = cp:pods(ns, "app=web", "bound")
        return #p == 2 and p
      end, 30, "kube-scheduler binding the web pods")
      cp:run_pods(ns)
      cp:patch("/api/v1/nodes/image-n1", { spec = { taints = {
        { key = "maintenance", value = "true", effect = "NoSchedule" } } } })
      -- what the container reads, in a directory of its own
      local cfg = root .. "/cfg"
      assert(os.execute("mkdir -p " .. shq(cfg) .. " && cp " .. shq(cp.env.CA) .. " " .. shq(cfg .. "/ca.crt")))
      cp:write_kubeconfig(cfg .. "/kubeconfig", { token = cp.env.TOKEN })
      kc = shell.read(cfg .. "/kubeconfig"):gsub(cp.env.CA:gsub("%p", "%%%0"), "/cfg/ca.crt")
      shell.write(cfg .. "/kubeconfig", kc)
      shell.write(cfg .. "/policy.yaml", K.taints_policy(ns))
      assert(os.execute("chmod -R a+rX " .. shq(cfg)))
      -- deploy/ mounts an emptyDir at /tmp (ebb keeps the objects' text there)
      assert(os.execute("mkdir -p " .. shq(root .. "/tmp") .. " && chmod 1777 " .. shq(root .. "/tmp")))
      local args = " run --once --dry-run --kubeconfig /cfg/kubeconfig --policy /cfg/policy.yaml --port 0"
      local code, out
      local pcode, pout = sh("podman --storage-driver vfs run --rm " .. shq(image) .. " version")
      if pcode == 0 then
        code, out = sh("podman --storage-driver vfs run --rm --read-only --user 65532:65532 --network host"
          .. " -v " .. shq(cfg) .. ":/cfg:ro " .. shq(image) .. args)
      else
        io.stderr:write("\n# podman cannot run a container here (" .. (pout:match("([^\n]+)\n*$") or pout)
          .. "): the image's root filesystem runs under chroot as 65532 instead\n")
        code, out = sh("env -i " .. CHROOT .. " --userspec=65532:65532 " .. shq(root) .. " /usr/bin/ebb" .. args)
      end
      if code ~= 0 then io.stderr:write(out) end
      assert.equal(0, code, out)
      local got = {}
      for key in out:gmatch("evicted pod ([%w%-%.]+/[%w%-%.]+) from image%-n1 %(RemovePodsViolatingNodeTaints, dry run%)") do
        got[#got + 1] = key
      end
      table.sort(got)
      local want = { ns .. "/" .. pods[1].metadata.name, ns .. "/" .. pods[2].metadata.name }
      table.sort(want)
      assert.same(want, got, out)
    end)
  end)
end)
