-- Input a user can get wrong, or make huge: each is a clear error naming
-- the file and field (or line), or is read in bounded time. The cases that
-- used to hang or take minutes run in a child bounded in time and memory
-- (h.bounded, or `timeout` around the binary), so they fail, not hang.
describe("inputs", function()
  local h = require("spec.helpers")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
  local SNAP = "spec/fixtures/kubectl-list.json"
  local POLICY = "spec/fixtures/demo-policy.yaml"

  local S = require("spec.shell")

  -- ebb args... in at most `seconds`, 1 GB -> exit code, stderr
  local function ebb(args, seconds)
    local err = os.tmpname()
    local cmd = string.format("timeout -s KILL %d sh -c 'ulimit -v 1048576; exec %s %s' >/dev/null 2>%s",
      seconds or 30, EBB, args, err)
    local _, _, code = os.execute(cmd)
    local stderr = assert(S.read(err))
    os.remove(err)
    return code, stderr
  end

  describe("files that are not files", function()
    it("refuses a character device as the snapshot", function()
      local code, err = ebb("simulate --snapshot /dev/zero --policy " .. POLICY)
      assert.equal(2, code)
      assert.matches("/dev/zero: a character device, not a file", err)
    end)

    it("refuses a FIFO as the snapshot without waiting for a writer", function()
      local fifo = os.tmpname()
      os.remove(fifo)
      assert(os.execute("mkfifo " .. fifo))
      local code, err = ebb("simulate --snapshot " .. fifo .. " --policy " .. POLICY)
      os.remove(fifo)
      assert.equal(2, code)
      assert.matches("a FIFO, not a file", err)
    end)

    it("refuses a character device as the kubeconfig and as the policy", function()
      local code, err = ebb("record -o /dev/null --kubeconfig /dev/zero")
      assert.is_not.equal(0, code)
      assert.matches("/dev/zero: a character device, not a file", err)
      code, err = ebb("check --policy /dev/zero")
      assert.equal(2, code)
      assert.matches("/dev/zero: a character device, not a file", err)
    end)
  end)

  describe("snapshots", function()
    local base = assert(S.read(SNAP))

    local function try(text)
      local path = S.tmpfile(text)
      local plan, msg = h.bounded("simulate", { snapshot = path, plugin = "PodLifeTime",
                                                args = { maxPodLifeTimeSeconds = 60 } }, { seconds = 60 })
      os.remove(path)
      return plan, msg
    end

    it("refuses null", function()
      local plan, msg = try("null\n")
      assert.is_nil(plan)
      assert.matches(":1: the snapshot is null", msg)
    end)

    it("takes a List without items as an empty one, as kubectl does", function()
      local plan = try('{"apiVersion": "v1", "kind": "List"}')
      assert.same({}, plan.evictions)
    end)

    -- the fixture's first item of `kind`, and the fixture with `item` added first
    local function item_of(kind)
      for it in base:gmatch("\n        (%{.-\n        %})") do
        if it:find('\n            "kind": "' .. kind .. '"', 1, true) then return it end
      end
    end
    local function with(item)
      return (base:gsub('"items": %[', function() return '"items": [\n' .. item .. "," end, 1))
    end

    it("refuses a pod twice, a node twice and a uid on two pods", function()
      local pod, node = item_of("Pod"), item_of("Node")
      assert.is_truthy(pod and node, "a pod and a node in the fixture")
      local plan, msg = try(with(pod))
      assert.is_nil(plan)
      assert.matches("items%[%d+%]: the Pod [%w%-]+/[%w%-]+ is already items%[0%]", msg)
      local renamed = pod:gsub('"name": "([^"]+)",(%s*)"namespace"', '"name": "%1-copy",%2"namespace"', 1)
      plan, msg = try(with(renamed))
      assert.is_nil(plan)
      assert.matches("the Pod uid [%w%-]+ is already items%[0%]", msg)
      plan, msg = try(with(node))
      assert.is_nil(plan)
      assert.matches("the Node [%w%-]+ is already items%[0%]", msg)
    end)

    it("refuses invalid UTF-8 in a name, naming the field", function()
      local plan, msg = try((base:gsub('"name": "debug%-shell"', '"name": "debug-\xc3\x28shell"', 1)))
      assert.is_nil(plan)
      assert.matches("items%[%d+%]%.metadata%.name: not valid UTF%-8", msg)
    end)

    it("reads \\u0000 as U+FFFD, as the API server keeps a NUL in annotations and free text", function()
      local plan = assert(try((base:gsub('"name": "debug%-shell"', '"name": "debug\\u0000shell"', 1))))
      assert.equal("default/debug\u{FFFD}shell", plan:pods()[1])
      -- an escaped backslash before u0000 is text, not a NUL
      plan = try((base:gsub('"name": "debug%-shell"', '"name": "debug\\\\u0000shell"', 1)))
      assert.equal("default/debug\\u0000shell", plan:pods()[1])
    end)

    it("refuses a raw NUL byte in JSON, naming the line", function()
      local plan, msg = try((base:gsub('"name": "debug%-shell"', '"name": "debug\0shell"', 1)))
      assert.is_nil(plan)
      assert.matches(":%d+: items%[%d+%]: a NUL byte in the JSON text", msg)
    end)

    it("reads \\0 in a YAML snapshot as U+FFFD", function()
      local plan = assert(try(assert(S.read("spec/fixtures/kubectl-list.yaml")):gsub("name: debug%-shell", 'name: "debug\\0shell"', 1)))
      assert.equal("default/debug\u{FFFD}shell", plan:pods()[1])
    end)

    it("sorts a pod's labels in n log n (400,000 of them, in reverse order)", function()
      local labels = {}
      for i = 400000, 1, -1 do labels[#labels + 1] = string.format('"k%07d": "v"', i) end
      local big = base:gsub('"labels": {', '"labels": {' .. table.concat(labels, ", ") .. ", ", 1)
      local plan, msg = try(big)
      assert(plan, msg)
    end)

    it("sums huge requests without wrapping: a full node is never shown under-used", function()
      local huge = base:gsub('"memory": "[%w%.]+"', '"memory": "9223372036854775807Ei"')
      local plan, msg = try(huge)
      assert(plan, msg)
      for _, n in ipairs(plan.nodes) do
        assert.is_true(n.before.memory >= 0, n.name)
      end
      assert.is_true(#plan.nodes > 0)
    end)
  end)

  describe("policies", function()
    it("refuse a second YAML document, naming its line", function()
      local one = h.policy{ plugins = { { name = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } } } }
      local ok, msg = h.check{ policy_text = one .. "\n---\n" .. one .. "\n" }
      assert.is_nil(ok)
      assert.matches(":3: a second YAML document", msg)
      assert.is_true(h.check{ policy_text = one .. "\n---\n" })   -- an empty one is nothing
    end)

    it("load 2,000 profiles", function()
      local t = { "apiVersion: descheduler/v1alpha2", "kind: DeschedulerPolicy", "profiles:" }
      for i = 1, 2000 do
        t[#t + 1] = string.format("- name: p%d\n  pluginConfig:\n  - name: PodLifeTime\n    args: "
          .. "{maxPodLifeTimeSeconds: 600}\n  plugins:\n    deschedule:\n      enabled: [PodLifeTime]", i)
      end
      local ok, msg = h.bounded("check", { policy_text = table.concat(t, "\n") .. "\n" }, { seconds = 120 })
      assert.is_true(ok, msg)
    end)
  end)

  describe("flags", function()
    it("refuse --qps NaN and inf", function()
      for _, v in ipairs({ "NaN", "inf", "-1", "0" }) do
        local code, err = ebb("run --policy " .. POLICY .. " --qps " .. v)
        assert.equal(2, code, v)
        assert.is_truthy(err:find('--qps: "' .. v .. '" is not a positive number', 1, true), err)
      end
    end)
  end)

  describe("selectors", function()
    it("parse 10 selectors of 65,000 values each in n log n", function()
      local dir = h.plugin_dir{ ["sel.lua"] = [[
        local ebb = require("ebb")
        return { name = "Sel", deschedule = function(ctx, nodes)
          local vals = {}
          for i = 65000, 1, -1 do vals[#vals + 1] = "v" .. i end
          local text = "app in (" .. table.concat(vals, ",") .. ")"
          for i = 1, 10 do ebb.selector(text) end
          return false, "parsed"
        end }
      ]] }
      local plan, msg = h.bounded("simulate", { snapshot = SNAP, policy_dirs = { dir },
                                                plugins = { { name = "Sel" } } }, { seconds = 60 })
      h.rmdir(dir)
      assert(plan, msg)
      assert.equal("parsed", plan.errors[1].message)
    end)

    it("refuse a selector string over 1 MiB", function()
      local dir = h.plugin_dir{ ["sel.lua"] = [[
        local ebb = require("ebb")
        return { name = "Sel", deschedule = function(ctx, nodes)
          ebb.selector("app in (" .. string.rep("v,", 600000) .. "w)")
        end }
      ]] }
      local plan = h.simulate{ snapshot = SNAP, policy_dirs = { dir }, plugins = { { name = "Sel" } } }
      h.rmdir(dir)
      assert.matches("a label selector string is at most 1 MiB", plan.errors[1].message)
    end)
  end)

  describe("plugins", function()
    local function returning(value)
      local dir = h.plugin_dir{ ["ret.lua"] = "return { name = 'Ret', deschedule = function() return " ..
                                               value .. " end }\n" }
      local plan = h.simulate{ snapshot = SNAP, policy_dirs = { dir }, plugins = { { name = "Ret" } } }
      h.rmdir(dir)
      return plan.errors[1] and plan.errors[1].message
    end

    it("succeed by returning nothing or true", function()
      assert.is_nil(returning(""))
      assert.is_nil(returning("nil"))
      assert.is_nil(returning("true"))
    end)

    it("fail by returning false and a message, or anything else", function()
      assert.equal("no metrics", returning("false, 'no metrics'"))
      assert.equal("no metrics", returning("nil, 'no metrics'"))
      assert.matches("returned false: a deschedule function returns nothing or true", returning("false"))
      assert.matches("returned number: a deschedule function", returning("42"))
      assert.matches("returned table: a deschedule function", returning("{}"))
    end)
  end)
end)
