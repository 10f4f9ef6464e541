describe("ebb_core", function()
  local h = require("spec.helpers")
  it("simulates PodLifeTime on the kubectl fixture", function()
    local plan = h.simulate{ snapshot = "spec/fixtures/kubectl-list.json",
      plugin = "PodLifeTime", args = { maxPodLifeTimeSeconds = 60 } }
    assert.is_true(#plan:pods() > 0)
  end)
end)
