-- `ebb test` warns when a case expects something of a pod the snapshot does
-- not hold (a typo in namespace/name, a pod renamed in the fixture): such an
-- expectation can never be met, or is met for a reason that is not the one
-- written. The warning names the test file, the line of the expectation,
-- the pod and the snapshot, in every place a case names a pod.
describe("ebb test: expected pods not in the snapshot", function()
  local S = require("spec.shell")
  local EBB = (os.getenv("EBB_BUILD") or "build") .. "/ebb"
  local GOOD = "spec/fixtures/ebbtest/good"

  local HEAD = [[
snapshot: testdata/cluster.yaml
now: "2026-11-22T12:00:00Z"
args:
  nodeSelector:
    matchLabels: {drain.example.com/ready: "true"}
cases:
- name: the case
  expect:
]]

  -- expectation lines (after HEAD), and the absent pod it names (nil: none)
  local ROWS = {
    { "a list of evictions", "    evictions:\n    - shop/web-7d4b9c-2xk4p\n    - shop/web-7d4b9c-9vltz\n", "shop/web-7d4b9c-9vltz" },
    { "an eviction as a map", "    evictions:\n    - {pod: shop/web-7d4b9c-2xk4p}\n    - {pod: shp/web-7d4b9c-9vlzt, node: node-c}\n", "shp/web-7d4b9c-9vlzt" },
    { "unordered evictions", "    evictions:\n      unordered:\n      - batch/report-28391540-7hx2c\n      - shop/web-7d4b9c-2xk4\n", "shop/web-7d4b9c-2xk4" },
    { "a refusal", "    refusals:\n    - {pod: shop/cart-5f6d8b-q8n2x, why: pdb}\n", "shop/cart-5f6d8b-q8n2x" },
    { "every pod present", "    refusals:\n    - {pod: shop/cart-5f6d8b-q8n2w, why: pdb}\n", nil },
    { "an evicted pod present", "    evictions:\n    - shop/web-7d4b9c-2xk4p\n    - shop/web-7d4b9c-9vlzt\n    - batch/report-28391540-7hx2c\n", nil },
  }

  for _, row in ipairs(ROWS) do
    it(row[1], function()
      local tmp = S.tmpdir()
      S.sh("cp -r " .. S.shq(GOOD) .. "/. " .. S.shq(tmp))
      local text = HEAD .. row[2]
      S.write(tmp .. "/drain_cordoned_test.yaml", text)
      local _, out, err = S.run(S.cmdline(EBB, "test", tmp))
      out = out .. (err or "")
      S.rmdir(tmp)
      if row[3] == nil then
        assert.not_matches("not in the snapshot", out)
        return
      end
      local line, n = nil, 0
      for l in text:gmatch("([^\n]*)\n") do
        n = n + 1
        if l:find(row[3], 1, true) then line = n end
      end
      local want = string.format('%s/drain_cordoned_test.yaml:%d: cases[0].expect: pod "%s" is not in the snapshot testdata/cluster.yaml',
        tmp, line, row[3])
      assert.is_truthy(out:find("warning: " .. want, 1, true), out)
    end)
  end
end)
