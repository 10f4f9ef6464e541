-- Cases for the sandbox's own string and table functions (lua_string.c,
-- lua_table.c): test_lua_string and test_lua_table run this chunk in a
-- stock Lua state and in a sandbox and compare what it returns, line by
-- line. It returns a function(section) -> text, one line per case.
-- Only locals: the sandbox's globals are strict.
-- Bytes outside printable ASCII as \ddd;, so that each case stays one line
-- and a message shows what differs (string.byte and string.char are Lua's
-- own in the sandbox too).
local function escape(s)
  local r = {}
  for i = 1, #s do
    local b = string.byte(s, i)
    r[i] = (b < 32 or b > 126 or b == 92) and "\\" .. b .. ";" or string.char(b)
  end
  return table.concat(r)
end

local function show(v)
  local t = type(v)
  if t == "string" then return "s" .. #v .. ":" .. escape(v) end
  if t == "number" then return math.type(v) .. ":" .. tostring(v) end
  return t .. ":" .. tostring(v)
end

local function strip(e)
  -- the chunk name differs between the two states
  return (tostring(e):gsub("^[^:]*:%d+: ", ""))
end

local out = {}
local function put(label, ok, ...)
  local line = label .. " => " .. tostring(ok)
  if not ok then
    line = line .. " " .. escape(strip((...)))
  else
    for i = 1, select("#", ...) do line = line .. " " .. show((select(i, ...))) end
  end
  out[#out + 1] = line
end

local function try(label, f, ...)
  put(label, pcall(f, ...))
end

local sections = {}

local SUBJECTS = {
  "", "a", "hello world", "aaa", "aaab", "a.b-c", "  x  y  ", "[[x]]", "(a(b)c)",
  "THE (quick) fox", "abc\0def", "x=1, y=22, z=333", "key = value", "\195\188n\195\175",
  "%d%%", "$^", "f(a,b)", "1.5e10", "foo.bar.baz", "aXbXXc", "]]", "a-b",
}
local PATTERNS = {
  "a", "a*", "a+", "a-", "a?", ".", ".-", "^a", "a$", "^$", "%a+", "%d+", "%s*", "%w+",
  "%p", "%u", "%l+", "%x+", "%c", "%g+", "%S+", "%A", "[a-c]+", "[^a-c]+", "[%a_][%w_]*",
  "[]]", "[^]]", "[a-]", "[-a]", "(a)", "(a*)", "()a()", "(%a+)%s*=%s*(%w+)", "%b()",
  "%b[]", "%bxy", "%f[%w]%w+", "%f[%W]", "(a)%1", "((a)(b))", "(.-)%.", "^(%s*)(.-)(%s*)$",
  "%", "[a", "(", ")", "%1", "(()", "%b", "%f", "%fa", "[%", "x*$", "\0", "[%z]", ".-b",
  "a.-b", "(h)(e)(l)(l)(o)", "%.", "%%", "[%a-]", "[a-%]", "^", "$", "a$b", "^^", "X+",
  "()", "(x?)", "[%]]", "[]-a]", "%f[%z]", "(.)%1", "((.)%2)", "()()()", "[^%s]+$",
  "%d+%.?%d*", "(%w+)%.?", "%b%%", "[\0-\31]", "[\200-\255]+", ".+$", "^.-$", "(%d)(%d?)",
}
local INITS = { false, 1, 2, -1, -3, 0, 100 }

function sections.find()
  for si, s in ipairs(SUBJECTS) do
    for pi, p in ipairs(PATTERNS) do
      for _, init in ipairs(INITS) do
        local i = init or nil
        local label = si .. "/" .. pi .. "/" .. tostring(init)
        try("find " .. label, string.find, s, p, i)
        try("plain " .. label, string.find, s, p, i or 1, true)
        try("match " .. label, string.match, s, p, i)
      end
    end
  end
end

function sections.gmatch()
  for si, s in ipairs(SUBJECTS) do
    for pi, p in ipairs(PATTERNS) do
      for _, init in ipairs({ false, 2, -2 }) do
        try("gmatch " .. si .. "/" .. pi .. "/" .. tostring(init), function()
          local r = {}
          for a, b, c in string.gmatch(s, p, init or nil) do
            r[#r + 1] = show(a) .. "|" .. show(b) .. "|" .. show(c)
            if #r > 40 then break end
          end
          local t = ""
          for _, x in ipairs(r) do t = t .. x .. ";" end
          return t
        end)
      end
    end
  end
end

local REPLS = {
  "%0", "<%1>", "%%", "%2", "x", "", "%", "%x", "[%1|%2]",
  function(...) return select("#", ...) .. ":" .. tostring((...)) end,
  function() return false end,
  function() return 12 end,
  function() return {} end,
  { a = "A", hello = "HI", ["1"] = "one", x = false },
}

function sections.gsub()
  for si, s in ipairs(SUBJECTS) do
    for pi, p in ipairs(PATTERNS) do
      for ri, r in ipairs(REPLS) do
        try("gsub " .. si .. "/" .. pi .. "/" .. ri, string.gsub, s, p, r)
      end
      for _, n in ipairs({ 1, 0, -1, 2.0 }) do
        try("gsub " .. si .. "/" .. pi .. "/n" .. tostring(n), string.gsub, s, p, "<%0>", n)
      end
    end
  end
  try("gsub bad repl", string.gsub, "abc", "b", true)
  try("gsub number repl", string.gsub, "abc", "b", 42)
  try("gsub number subject", string.gsub, 12345, "3", "x")
end

function sections.format()
  local T = setmetatable({}, { __tostring = function() return "T!" end })
  local N = setmetatable({}, { __tostring = function() return 42 end })
  local long = string.rep("y", 150)
  local cases = {
    { "%d", 42 }, { "%5d|", 42 }, { "%-5d|", 42 }, { "%05d", 42 }, { "%+d", 42 }, { "% d", 42 },
    { "%.3d", 7 }, { "%x", 255 }, { "%X", 255 }, { "%#x", 255 }, { "%o", 8 }, { "%#o", 8 },
    { "%c", 65 }, { "%5c|", 65 }, { "%-3c|", 66 }, { "%c", 0 }, { "%s", "abc" }, { "%10s|", "abc" },
    { "%-10s|", "abc" }, { "%.2s", "abc" }, { "%5.1s|", "abc" }, { "%s", 12 }, { "%s", 1.5 },
    { "%s", true }, { "%s", nil }, { "%s", T }, { "%5s", T }, { "%s", N }, { "%s", long },
    { "%5s", long }, { "%.3s", long }, { "%200s", "x" }, { "%s", "a\0b" }, { "%5s", "a\0b" },
    { "%q", "a\nb\"c\0d\1" .. "1\r\\" }, { "%q", 1 / 3 }, { "%q", math.mininteger }, { "%q", 1e300 },
    { "%q", 1 / 0 }, { "%q", -1 / 0 }, { "%q", 0 / 0 }, { "%q", 7 }, { "%q", 2.0 }, { "%q", true },
    { "%q", nil }, { "%q", {} }, { "%5q", "x" }, { "%g", 1e20 }, { "%.3f", math.pi },
    { "%10.4f|", math.pi }, { "%-10.2e|", math.pi }, { "%E", 12345.678 }, { "%a", 1.0 }, { "%A", 0.5 },
    { "%G", 1e-10 }, { "%#g", 1.0 }, { "%+.0f", 2.5 }, { "%i", 3 }, { "%u", 3 }, { "%%" }, { "abc" },
    { "%" }, { "%y", 1 }, { "%123d", 1 }, { "%.123f", 1 }, { "%#d", 1 }, { "%+x", 1 }, { "% u", 1 },
    { "%.2c", 65 }, { "%#s", "x" }, { "%0s", "x" }, { "%d", 1.5 }, { "%d", "10" }, { "%d", "x" },
    { "%d", 2 ^ 53 }, { "%x", -1 }, { "%d" }, { "%d %d", 1 }, { "%.99f", 1 }, { "%99.99f", 1e308 },
    { "%-99.99e|", -1e-308 }, { "%.0f", 0.5 }, { "%5.1f|%-5d|%s", 1.25, 3, "z" }, { "%p", nil },
    { "%p", 1 }, { "%------5d", 1 }, { "%00005d", 1 }, { "%-05d|", 3 }, { "%s %s", "a" },
    { "%z" }, { "100%" }, { "%5%" }, { "%l", 1 }, { "%ld", 1 },
    { "%-------5d|", 1 }, { "%" .. string.rep("-", 19) .. "5d|", 1 }, { "%" .. string.rep("-", 20) .. "5d", 1 },
    { "%" .. string.rep("0", 25) .. "d", 1 }, { "%F", 1 }, { "%5.5.5f", 1 }, { "%5-d", 1 }, { "%.c", 65 },
    { "%-0s", "x" }, { "% s", "x" }, { "%5", 1 }, { "%5" }, { "%y" }, { "%5\0d", 1 }, { "%.f", 2.5 },
    { "%5.f|", 2.5 }, { "%.s|", "abc" }, { "%5.3p", {} }, { "%-5p|", nil }, { "%10.3x|", 255 },
    { "%#5.3o|", 8 }, { "%+.3d", -5 }, { "%d", math.mininteger }, { "%5s", string.rep("w", 100) },
    { "%.150s", "x" }, { "%s", setmetatable({}, { __tostring = function() return {} end }) },
    { "%c", 256 + 65 }, { "%i", 2 ^ 63 }, { "%x", "0x10" }, { "%a", "1" }, { "%q", "\r\n\0" .. "9" },
    { "%q", "\200\255" }, { "%q", -0.0 }, { "%q", math.maxinteger }, { "%q", 0.1 }, { "%5.1+d", 1 },
    { "%#.3c", 65 }, { "%05.1f|", -1.5 }, { "%.0e", 1e300 }, { "%99.99f", -1e308 }, { "%G", 0 / 0 },
    { "%f", 1 / 0 }, { "%-+ #0g", 1.0 }, { "%+ d", 1 }, { "%s%s%s", 1, 2 }, { "%d", nil },
  }
  for i, c in ipairs(cases) do
    try("format " .. i .. " " .. c[1], string.format, table.unpack(c, 1, #c))
  end
  try("format none", string.format)
  try("format number", string.format, 12)
end

function sections.rep()
  local cases = {
    -- not ("", 1e15): Lua's own loops that many times (the sandbox's answers at once)
    { "ab", 3 }, { "ab", 3, "," }, { "", 5 }, { "x", 0 }, { "x", -1 }, { "", 1e3 },
    { "a", 2, "" }, { "abc", 1, "--" }, { "ab", 5, "" }, { "", 4, "-" }, { "xyz", 7, "<>" },
    { 12, 3 }, { "a", 2.0 }, { "a", 2.5 }, { "a" }, { "a", "3" }, { {}, 2 },
    { "ab", math.maxinteger }, { "ab", 1 << 40, "x" },
  }
  for i, c in ipairs(cases) do try("rep " .. i, string.rep, table.unpack(c, 1, 3)) end
end

-- Long repetitions against the bytes they must have: (s .. sep) doubled
-- with the concatenation operator and cut (string.sub is Lua's own in the
-- sandbox too). The sizes cross the 1 MiB pieces rep copies at a time, with
-- units that do and do not divide them, and a unit longer than a piece.
function sections.rep_long()
  local function first_difference(a, b)
    if #a ~= #b then return "length " .. #a .. " vs " .. #b end
    local lo, hi = 1, #a
    if a == b then return "none" end
    while lo < hi do
      local mid = (lo + hi) // 2
      if string.sub(a, lo, mid) ~= string.sub(b, lo, mid) then hi = mid else lo = mid + 1 end
    end
    return "byte " .. lo
  end
  local MiB = 1 << 20
  local units = { { "x", "" }, { "abc", "" }, { "ab", "," }, { "hello", "<->" }, { "0123456", "" },
                  { string.rep("q", MiB + 3), "" }, { "z", string.rep("-", MiB // 2 + 1) } }
  for ui, u in ipairs(units) do
    local s, sep = u[1], u[2]
    local unit = #s + #sep
    for _, bytes in ipairs({ MiB - 1, MiB + 1, 2 * MiB + 7, 5 * MiB // 2, 3 * MiB, 7 * MiB + 5 }) do
      local n = bytes // unit + 1
      local total = n * unit - #sep
      local want = s .. sep
      while #want < total do want = want .. want end
      want = string.sub(want, 1, total)
      local got = string.rep(s, n, sep)
      put("rep_long " .. ui .. "/" .. n, true, #got, first_difference(got, want))
    end
  end
end

-- The other functions that work a piece at a time, on input past their
-- pieces (format's text between conversions and %q, patterns over long
-- subjects): each result shown as its length and a digest of its bytes.
local function digest(v)
  if type(v) ~= "string" then return show(v) end
  local h = 0
  for i = 1, #v, 97 do h = (h * 31 + string.byte(v, i)) % 4294967291 end
  return "s" .. #v .. "#" .. h .. ":" .. escape(string.sub(v, 1, 20)) .. ".." .. escape(string.sub(v, -20))
end

function sections.long()
  local MiB = 1 << 20
  local text = string.rep("ab%", 3 * MiB // 3 + 1)   -- a '%' every 3 bytes
  local plain = string.rep("xyz", MiB + 5)
  local function put_long(label, ok, ...)
    local line = label .. " => " .. tostring(ok)
    if not ok then line = line .. " " .. escape(strip((...)))
    else for i = 1, select("#", ...) do line = line .. " " .. digest((select(i, ...))) end end
    out[#out + 1] = line
  end
  local function try_long(label, f, ...) put_long(label, pcall(f, ...)) end
  try_long("format text", string.format, plain .. "%d" .. plain .. "%s", 42, "end")
  try_long("format %%", string.format, (string.gsub(text, "%%", "%%%%")))
  try_long("format many", string.format, string.rep("%d,", 200), table.unpack((function()
    local t = {} for i = 1, 200 do t[i] = i * 7 end return t end)()))
  try_long("format %q", string.format, "%q", string.rep("a\0b\n\"\1\0019", 40000))
  try_long("find plain", string.find, plain .. "needle", "needle", 1, true)
  try_long("find init", string.find, plain, "zx", -10)
  try_long("find pattern", string.find, plain .. "q", "(x)(y)z*q")
  try_long("match tail", string.match, plain, "(.-)(z)$")
  try_long("gsub all", string.gsub, plain, "y", "YY")
  try_long("gsub captures", string.gsub, plain, "(x)(y)", "%2%1", 1000000)
  try_long("gsub anchored", string.gsub, plain, "^xyz", "")
  try_long("gmatch count", function()
    local n = 0 for _ in string.gmatch(plain, "yz") do n = n + 1 end return n end)
  try_long("rep sep", string.rep, "abc", MiB // 2, "--")
  local t = {}
  for i = 1, 200000 do t[i] = tostring(i % 977) end
  try_long("concat", table.concat, t, ",")
  try_long("concat range", table.concat, t, "", 1000, 150000)
  local u = {}
  for i = 1, 20000 do u[i] = (i * 7919) % 20011 end
  table.sort(u)
  try_long("sort", table.concat, u, " ")
  local w = {}
  for i = 1, 20000 do w[i] = (i * 7919) % 20011 end
  table.sort(w, function(a, b) return a > b end)
  try_long("sort desc", table.concat, w, " ")
  local m = {}
  for i = 1, 100000 do m[i] = i end
  table.move(m, 1, 100000, 50001)
  try_long("move up", table.concat, m, ",")
  for i = 1, 1000 do table.insert(m, 1, i) end
  for i = 1, 500 do table.remove(m, 7) end
  try_long("insert remove", table.concat, m, ",")
end

-- A proxy whose reads and writes go through metamethods to `t`.
local function proxy(t, log)
  return setmetatable({}, {
    __index = function(_, k) log[#log + 1] = "r" .. tostring(k); return t[k] end,
    __newindex = function(_, k, v) log[#log + 1] = "w" .. tostring(k); t[k] = v end,
    __len = function() return #t end,
  })
end

local function dump(t, n)
  local s = ""
  for i = 1, n or #t do s = s .. show(t[i]) .. " " end
  return s
end

function sections.concat()
  local cases = {
    { { 1, 2, 3 } }, { { 1, 2, 3 }, ", " }, { { 1, 2, 3 }, ",", 2 }, { { 1, 2, 3 }, ",", 2, 3 },
    { {}, "," }, { { 1, {}, 3 } }, { { 1, 2 }, ",", 3, 2 }, { { "a", "b" }, 7 }, { { 1.5, "x", 2 }, "" },
    { { 1, 2, 3 }, ",", -1, 1 }, { { [0] = "z", "a" }, "-", 0 }, { { 1, nil, 3 }, ",", 1, 3 },
    { "abc" }, { { 1 }, {} }, { { "a", "b", "c" }, ",", 1, 2.0 }, { { "a" }, ",", 1, 1.5 },
  }
  for i, c in ipairs(cases) do try("concat " .. i, table.concat, table.unpack(c, 1, 4)) end
  local log = {}
  try("concat proxy", table.concat, proxy({ "a", "b", "c" }, log), "+")
  put("concat proxy log", true, table.concat(log, ","))
end

function sections.insert_remove()
  local function run(label, f)
    local t = { "a", "b", "c" }
    local log = {}
    try(label, f, t, proxy(t, log))
    put(label .. " after", true, dump(t, 5), #t)
    local l = ""
    for _, x in ipairs(log) do l = l .. x .. "," end
    put(label .. " log", true, l)
  end
  run("insert end", function(t) table.insert(t, "d") end)
  run("insert 1", function(t) table.insert(t, 1, "z") end)
  run("insert 2", function(t) table.insert(t, 2, "z") end)
  run("insert 4", function(t) table.insert(t, 4, "z") end)
  run("insert 5", function(t) table.insert(t, 5, "z") end)
  run("insert 0", function(t) table.insert(t, 0, "z") end)
  run("insert nil", function(t) table.insert(t, 2, nil) end)
  run("insert args", function(t) table.insert(t, 1, 2, 3) end)
  run("insert one", function(t) table.insert(t) end)
  run("insert proxy", function(_, p) table.insert(p, 1, "z") end)
  run("insert string", function() table.insert("abc", "d") end)
  run("insert float pos", function(t) table.insert(t, 2.0, "z") end)
  run("remove", function(t) return table.remove(t) end)
  run("remove 1", function(t) return table.remove(t, 1) end)
  run("remove 3", function(t) return table.remove(t, 3) end)
  run("remove 4", function(t) return table.remove(t, 4) end)
  run("remove 5", function(t) return table.remove(t, 5) end)
  run("remove 0", function(t) return table.remove(t, 0) end)
  run("remove empty", function() local e = {} return table.remove(e), #e end)
  run("remove empty 0", function() local e = { [0] = "x" } return table.remove(e, 0), e[0] end)
  run("remove proxy", function(_, p) return table.remove(p, 1) end)
end

function sections.move()
  local function base() return { 1, 2, 3, 4, 5 } end
  local cases = {
    { 1, 3, 2 }, { 2, 5, 1 }, { 1, 5, 3 }, { 3, 5, 1 }, { 1, 0, 1 }, { 1, 3, 6 }, { 0, 2, 1 },
    { -2, 0, 1 }, { 1, 3, 1 },
  }
  for i, c in ipairs(cases) do
    local t = base()
    try("move " .. i, function() return dump(table.move(t, c[1], c[2], c[3]), 8) end)
    local t1, t2 = base(), { "x", "y" }
    try("move2 " .. i, function() return dump(table.move(t1, c[1], c[2], c[3], t2), 8) end)
  end
  try("move too many", table.move, {}, -1, math.maxinteger, 1)
  try("move wrap", table.move, {}, 1, 10, math.maxinteger - 2)
  try("move not table", table.move, "x", 1, 2, 3)
  local log = {}
  local src = { "a", "b", "c" }
  try("move proxy", function() return dump(table.move(proxy(src, log), 1, 3, 2), 5) end)
  put("move proxy log", true, table.concat(log, ","))
end

function sections.unpack()
  local t = { "a", "b", "c", nil, "e" }
  local function all(...) local r = {} for i = 1, select("#", ...) do r[i] = show((select(i, ...))) end
    return select("#", ...) .. ": " .. table.concat(r, " ") end
  local cases = {
    { { 1, 2, 3 } }, { t }, { t, 2 }, { t, 2, 5 }, { t, 3, 2 }, { {}, 1, 0 }, { {}, 0, 0 },
    { t, -2, 1 }, { t, math.maxinteger - 1, math.maxinteger }, { t, math.mininteger, math.mininteger + 2 },
    { t, 1, 1e6 }, { t, 1, 999990 - 1 }, { t, math.mininteger, math.maxinteger }, { "abc", 1, 2 }, { "abc" },
    { nil }, { t, 1.5 }, { t, "2", "3" }, { t, 1, "x" }, { 12, 1, 1 }, { { [0] = "z", "a" }, 0, 1 },
  }
  for i, c in ipairs(cases) do
    try("unpack " .. i, function() return all(table.unpack(c[1], c[2], c[3])) end)
  end
  local log = {}
  try("unpack proxy", function() return all(table.unpack(proxy({ "x", "y", "z" }, log))) end)
  put("unpack proxy log", true, table.concat(log, ","))
end

function sections.sort()
  local function sorted(t, f)
    table.sort(t, f)
    return dump(t)
  end
  local cases = {
    {}, { 1 }, { 2, 1 }, { 3, 1, 2 }, { 5, 4, 3, 2, 1 }, { 1, 2, 3, 4, 5 }, { "b", "a", "c" },
    { 10, -3, 7.5, 0, 2 ^ 60, -1e300 },
  }
  for i, c in ipairs(cases) do
    local t = {}
    for k, v in ipairs(c) do t[k] = v end
    try("sort " .. i, sorted, t)
    local u = {}
    for k, v in ipairs(c) do u[k] = v end
    try("sort desc " .. i, sorted, u, function(a, b) return a > b end)
  end
  local big = {}
  for i = 1, 1000 do big[i] = (i * 7919) % 1009 + i / 10000 end
  try("sort big", sorted, big)
  try("sort mixed", sorted, { 1, "a" })
  try("sort nil comparator", sorted, { 2, 1 }, nil)
  try("sort bad comparator", sorted, { 2, 1 }, 3)
  try("sort erroring comparator", sorted, { 2, 1 }, function() error("cmp") end)
  try("sort string", table.sort, "abc")
  local log = {}
  local t = { "c", "a", "b" }
  try("sort proxy", function() table.sort(proxy(t, log)) return dump(t) end)
end

return function(section)
  out = {}
  sections[section]()
  return table.concat(out, "\n")
end
