-- `ebb run`'s /metrics, /healthz and /readyz over HTTPS, as upstream's
-- descheduler serves them on its secure port, against a real kube-apiserver
-- (spec/integration/k8s_harness.lua): a self-signed certificate made at
-- start (in memory, or written to --cert-dir and trusted from there with
-- curl --cacert), the pair given with --tls-cert-file and
-- --tls-private-key-file, plain HTTP refused on the TLS port and served
-- only with --plain-http, and every certificate mistake an error naming
-- its flag and file (exit 2).
local K = require("spec.integration.k8s_harness")
local R = require("spec.integration.run_harness")
local S = R.S

-- curl's exit status and output ("%{http_code}" after the body).
local function curl(args)
  local p = assert(io.popen("curl -s --max-time 10 -w '\\n%{http_code}' " .. args .. " 2>/dev/null; echo \" $?\""))
  local text = p:read("a")
  p:close()
  local body, code, rc = text:match("^(.*)\n(%d+) (%d+)\n?$")
  return tonumber(rc), tonumber(code), body
end

local function port_of(run)
  local port = run:wait_log("over HTTPS? on 127%.0%.0%.1:(%d+)", 30)
  assert(port, "no serving line: " .. run:stderr())
  return port
end

describe("ebb run serves its metrics over HTTPS", function()
  if K.skip(pending) then return end
  local cp = K.cluster()
  local start = R.suite(before_each, after_each, cp).start
  local policy = K.taints_policy(cp:namespace("tls"))

  it("by default with a self-signed certificate kept in memory; plain HTTP is refused there", function()
    local run = start{ policy = policy, "--dry-run", "--interval", "1h" }
    local port = port_of(run)
    assert.matches("over HTTPS on 127%.0%.0%.1:%d+ %(self%-signed certificate, in memory%)", run:stderr())
    local rc, code, body = curl("-k https://127.0.0.1:" .. port .. "/metrics")
    assert.equal(0, rc)
    assert.equal(200, code)
    assert.matches("\nebb_leader 1", "\n" .. body)
    assert.equal(200, select(2, curl("-k https://127.0.0.1:" .. port .. "/healthz")))
    -- not signed by a CA the system trusts: curl's 60
    assert.equal(60, (curl("https://127.0.0.1:" .. port .. "/healthz")))
    -- plain HTTP to the TLS port: no HTTP answer at all
    rc, code = curl("http://127.0.0.1:" .. port .. "/healthz")
    assert.is_not.equal(0, rc)
    assert.equal(0, code)
    -- the harness reads it the same way
    assert.equal(200, (run:http("/healthz")))
  end)

  it("writes its self-signed pair to --cert-dir, and a client trusting it verifies localhost and 127.0.0.1", function()
    local dir = S.tmpdir()
    local run = start{ policy = policy, "--dry-run", "--interval", "1h", "--cert-dir", dir .. "/certs" }
    local port = port_of(run)
    local crt, key = dir .. "/certs/apiserver.crt", dir .. "/certs/apiserver.key"
    assert.matches("BEGIN CERTIFICATE", S.read(crt))
    local p = io.popen("stat -c %a " .. S.shq(key))
    assert.equal("600", p:read("l"))
    p:close()
    for _, host in ipairs{ "localhost", "127.0.0.1" } do
      local rc, code, body = curl("--cacert " .. S.shq(crt) .. " https://" .. host .. ":" .. port .. "/metrics")
      assert.equal(0, rc, host)
      assert.equal(200, code, host)
      assert.matches("ebb_", body)
    end
    -- the SANs upstream's clients expect of a local serving certificate
    p = io.popen("openssl x509 -noout -ext subjectAltName -in " .. S.shq(crt) .. " 2>/dev/null")
    local sans = p:read("a")
    p:close()
    if sans ~= "" then
      assert.matches("DNS:localhost", sans)
      assert.matches("IP Address:127%.0%.0%.1", sans)
    end
    run:stop()
    -- the given pair, as a Secret mounted for --tls-cert-file/--tls-private-key-file
    local given = start{ policy = policy, "--dry-run", "--interval", "1h",
                         "--tls-cert-file", crt, "--tls-private-key-file", key }
    port = port_of(given)
    assert.not_matches("self%-signed", given:stderr())
    local rc, code = curl("--cacert " .. S.shq(crt) .. " https://localhost:" .. port .. "/healthz")
    assert.equal(0, rc)
    assert.equal(200, code)
    S.rmdir(dir)
  end)

  it("serves plain HTTP only with --plain-http", function()
    local run = start{ policy = policy, "--dry-run", "--interval", "1h", "--plain-http" }
    local port = run:wait_log("over HTTP on 127%.0%.0%.1:(%d+)", 30)
    assert(port, run:stderr())
    local rc, code, body = curl("http://127.0.0.1:" .. port .. "/metrics")
    assert.equal(0, rc)
    assert.equal(200, code)
    assert.matches("ebb_", body)
    assert.is_not.equal(0, (curl("-k https://127.0.0.1:" .. port .. "/healthz")))
  end)

  it("names the flag and the file of a certificate it cannot serve (exit 2)", function()
    local dir = S.tmpdir()
    -- a real pair to get wrong, and a second one for a key that does not match
    local mk = start{ policy = policy, "--dry-run", "--interval", "1h", "--cert-dir", dir .. "/a" }
    port_of(mk)
    mk:stop()
    mk = start{ policy = policy, "--dry-run", "--interval", "1h", "--cert-dir", dir .. "/b" }
    port_of(mk)
    mk:stop()
    local crt, key, other = dir .. "/a/apiserver.crt", dir .. "/a/apiserver.key", dir .. "/b/apiserver.key"
    local cases = {
      { { "--tls-cert-file", dir .. "/missing.crt", "--tls-private-key-file", key },
        "%-%-tls%-cert%-file: cannot read: No such file" , dir .. "/missing.crt" },
      { { "--tls-cert-file", key, "--tls-private-key-file", key },
        "%-%-tls%-cert%-file: not a PEM certificate", key },
      { { "--tls-cert-file", crt, "--tls-private-key-file", crt },
        "%-%-tls%-private%-key%-file: not a PEM private key", crt },
      { { "--tls-cert-file", crt, "--tls-private-key-file", other },
        "%-%-tls%-private%-key%-file: the private key does not match the certificate", other },
      { { "--tls-cert-file", crt }, "%-%-tls%-cert%-file needs %-%-tls%-private%-key%-file" },
      { { "--plain-http", "--cert-dir", dir }, "%-%-plain%-http serves no TLS: drop %-%-cert%-dir" },
    }
    for _, c in ipairs(cases) do
      local opts = { policy = policy, "--dry-run", "--interval", "1h" }
      for _, a in ipairs(c[1]) do opts[#opts + 1] = a end
      local run = start(opts)
      assert.equal(2, run:wait(30), table.concat(c[1], " ") .. ": " .. run:stderr())
      assert.matches(c[2], run:stderr())
      if c[3] then assert.truthy(run:stderr():find(c[3], 1, true), run:stderr()) end
      assert.not_matches("serving", run:stderr())
    end
    S.rmdir(dir)
  end)
end)
