-- A policy generation's hash is its content: the policy's bytes and, for each
-- --policy-dir in order, every file's name relative to that directory and
-- its bytes. However the directory is spelled, the same content is the
-- same generation; any byte or name that changes is a new one.
describe("generation hash", function()
  local S = require("spec.shell")
  local EBB = S.cwd() .. "/" .. (os.getenv("EBB_BUILD") or "build") .. "/ebb"

  local root

  before_each(function()
    root = S.tmpdir()
    S.sh("mkdir -p " .. S.shq(root .. "/site/strategies/lib"))
    S.write(root .. "/site/policy.yaml", assert(S.read("deploy/base/policy.yaml")))
    S.write(root .. "/site/strategies/annotated_pod_lifetime.lua",
      assert(S.read("deploy/base/strategies/annotated_pod_lifetime.lua")))
    S.write(root .. "/site/strategies/lib/util.lua", "return { two = 2 }\n")
    S.sh("ln -s site " .. S.shq(root .. "/link"))
  end)

  after_each(function()
    S.rmdir(root)
  end)

  -- the hash `ebb check` prints, run from `cwd` with the spelling `dir`
  local function hash(cwd, policy, dir)
    local code, out, err = S.run(string.format("cd %s && %s check --policy %s --policy-dir %s",
      S.shq(cwd), S.shq(EBB), S.shq(policy), S.shq(dir)))
    assert.equal(0, code, out .. (err or ""))
    local h = out:match("generation hash (%x+)")
    assert.is_truthy(h, out)
    return h
  end

  it("is the same however --policy-dir and --policy are spelled", function()
    local w = root .. "/site"
    local spellings = {
      { w, "policy.yaml", "strategies" },
      { w, "policy.yaml", "strategies/" },
      { w, "./policy.yaml", "./strategies" },
      { w, "policy.yaml", "./strategies//" },
      { w, w .. "/policy.yaml", w .. "/strategies" },
      { root, "site/policy.yaml", "site/strategies" },
      { root, "link/policy.yaml", "link/strategies" },
      { root, root .. "/link/policy.yaml", root .. "/link/strategies/" },
      { w .. "/strategies", "../policy.yaml", "." },
      { w .. "/strategies/lib", "../../policy.yaml", ".." },
    }
    local first = hash(table.unpack(spellings[1]))
    for _, s in ipairs(spellings) do
      assert.equal(first, hash(table.unpack(s)), table.concat(s, " "))
    end
  end)

  it("changes with every byte and name of the content", function()
    local w = root .. "/site"
    local base = hash(w, "policy.yaml", "strategies")
    local seen = { [base] = "unchanged" }
    local changes = {
      { "a byte of a script", function()
        local p = w .. "/strategies/annotated_pod_lifetime.lua"
        S.write(p, (assert(S.read(p)):gsub('default = "1h"', 'default = "2h"', 1)))
      end },
      { "a byte of a module in a subdirectory", function()
        S.write(w .. "/strategies/lib/util.lua", "return { two = 3 }\n")
      end },
      { "a file renamed", function()
        S.sh("mv " .. S.shq(w .. "/strategies/lib/util.lua") .. " " .. S.shq(w .. "/strategies/lib/util2.lua"))
      end },
      { "a directory renamed", function()
        S.sh("mv " .. S.shq(w .. "/strategies/lib") .. " " .. S.shq(w .. "/strategies/lib2"))
      end },
      { "a file moved one directory down", function()
        S.sh("mkdir " .. S.shq(w .. "/strategies/lib/x") .. " && mv " .. S.shq(w .. "/strategies/lib/util.lua")
          .. " " .. S.shq(w .. "/strategies/lib/x/util.lua"))
      end },
      { "a byte of the policy", function()
        local p = w .. "/policy.yaml"
        S.write(p, (assert(S.read(p)):gsub("maxPerOwner: 1", "maxPerOwner: 2", 1)))
      end },
    }
    for _, c in ipairs(changes) do
      -- each change from the base content
      S.rmdir(w)
      S.sh("mkdir -p " .. S.shq(w .. "/strategies/lib"))
      S.write(w .. "/policy.yaml", assert(S.read("deploy/base/policy.yaml")))
      S.write(w .. "/strategies/annotated_pod_lifetime.lua",
        assert(S.read("deploy/base/strategies/annotated_pod_lifetime.lua")))
      S.write(w .. "/strategies/lib/util.lua", "return { two = 2 }\n")
      assert.equal(base, hash(w, "policy.yaml", "strategies"))
      c[2]()
      local h = hash(w, "policy.yaml", "strategies")
      assert.is_nil(seen[h], c[1] .. " gives the hash of " .. tostring(seen[h]))
      seen[h] = c[1]
    end
  end)
end)
