-- Tests of lua/cosched/scn.lua (SCN classifier, paper 001 Sec. 3, Fig. 3) against
-- Table 2 of the paper (tests/fixtures/table2.csv), plus edge cases.
-- Run: lua5.4 tests/lua/test_scn.lua SRCDIR        (prints TAP; exit 1 on any failure)

local srcdir = arg[1] or "."
package.path = srcdir .. "/lua/?.lua;" .. srcdir .. "/tests/lua/?.lua;" .. package.path
local scn = require "cosched.scn"

local NCORES = 8          -- Table 2 was measured with 8 threads on 8 cores (Sec. 4.1)
local HUGE = math.huge

-- ------------------------------------------------------------------ harness
local tap = require "tap"
local fake = require "fakenode"
local check, results = tap.check, tap.results

local function fmt(x)
    if x == HUGE then return "inf" end
    if type(x) ~= "number" then return tostring(x) end
    return string.format("%.2f", x)
end

local function mb(row, opts_ncores)
    return { bw_l1 = row.bw_l1 / 1000, bw_l2 = row.bw_l2 / 1000,
             bw_llc = row.bw_llc / 1000, ncores = opts_ncores or NCORES }
end

-- ------------------------------------------------------------------ fixture
local rows, by = fake.table2(srcdir)

check("fixture has the 19 applications of Table 2", function()
    return #rows == 19, "got " .. #rows .. " rows"
end)

-- ------------------------------------------------------------------ Table 2 classes
for _, r in ipairs(rows) do
    local cls, d = scn.classify(mb(r))
    local ok = cls == r.class
    results[#results + 1] = {
        ok = ok,
        name = ok and r.app or string.format("%s: got %s want %s (reuse l2=%s, llc=%s)",
            r.app, tostring(cls), r.class, fmt(d.reuse.l2), fmt(d.reuse.llc)),
        diag = { d.reason },
    }
end

-- ------------------------------------------------------------------ reuse factors
-- the printed factors have two decimals: computed ones must round to them
for _, r in ipairs(rows) do
    check("reuse factors of " .. r.app .. " match the printed ones", function()
        local f = scn.reuse(mb(r))
        local function near(x, p)
            if p == HUGE then return x == HUGE end
            return math.abs(x - p) <= 0.005 + 1e-9
        end
        return near(f.l2, r.p_l2) and near(f.llc, r.p_llc),
            string.format("computed l2=%.4f llc=%.4f, printed %s %s", f.l2, f.llc, r.reuse_l2, r.reuse_llc)
    end)
end

-- ------------------------------------------------------------------ zero traffic
local function expect(name, m, opts, want, want_l2, want_llc)
    check(name, function()
        local cls, d = scn.classify(m, opts)
        local good = cls == want
        if want_l2 ~= nil then good = good and d.reuse.l2 == want_l2 end
        if want_llc ~= nil then good = good and d.reuse.llc == want_llc end
        return good, string.format("got %s want %s (reuse l2=%s, llc=%s; %s)",
            tostring(cls), want, fmt(d.reuse.l2), fmt(d.reuse.llc), tostring(d.reason))
    end)
end

expect("no traffic into LLC: infinite LLC reuse -> C",
    { bw_l1 = 10, bw_l2 = 5, bw_llc = 0, ncores = 8 }, nil, "C", 2, HUGE)
expect("no traffic into L2 (LLC active): infinite L2 reuse -> N",
    { bw_l1 = 10, bw_l2 = 0, bw_llc = 3, ncores = 8 }, nil, "N", HUGE, 0)
expect("no traffic into L2 nor LLC: both infinite -> N (nothing leaves the LLC)",
    { bw_l1 = 10, bw_l2 = 0, bw_llc = 0, ncores = 8 }, nil, "N", HUGE, HUGE)
expect("no traffic at all -> N (low L1 activity)",
    { bw_l1 = 0, bw_l2 = 0, bw_llc = 0, ncores = 8 }, nil, "N", HUGE, HUGE)
expect("no traffic at all, activity rule off -> still N",
    { bw_l1 = 0, bw_l2 = 0, bw_llc = 0, ncores = 8 }, { l1_activity = 0 }, "N", HUGE, HUGE)
check("scn.reuse with zero denominators gives math.huge", function()
    local f = scn.reuse({ bw_l1 = 1, bw_l2 = 0, bw_llc = 0 })
    return f.l2 == HUGE and f.llc == HUGE, "got l2=" .. fmt(f.l2) .. " llc=" .. fmt(f.llc)
end)

-- ------------------------------------------------------------------ bad inputs
local function good_m(over)
    local m = { bw_l1 = 10, bw_l2 = 5, bw_llc = 1, ncores = 8 }
    for k, v in pairs(over) do m[k] = v end
    return m
end
local function without(k)
    local m = good_m({}); m[k] = nil; return m
end

local function expect_error(name, fn, want)
    check(name, function()
        local ok, err = pcall(fn)
        if ok then return false, "no error raised" end
        err = tostring(err)
        -- the message must name the field and point at the caller (this file)
        local at, pos = err:find(want, 1, true), err:find("test_scn.lua:%d+: scn%.")
        return at ~= nil and pos ~= nil and pos < at, "got: " .. err
    end)
end

expect_error("bw_l2 = 'x' is refused",
    function() scn.classify(good_m({ bw_l2 = "x" })) end,
    "scn.classify: bw_l2 must be a non-negative number, got 'x'")
expect_error("negative bw_l1 is refused",
    function() scn.classify(good_m({ bw_l1 = -1 })) end,
    "scn.classify: bw_l1 must be a non-negative number, got '-1'")
expect_error("missing bw_llc is refused",
    function() scn.classify(without("bw_llc")) end,
    "scn.classify: bw_llc must be a non-negative number, got 'nil'")
expect_error("NaN bw_l1 is refused",
    function() scn.classify(good_m({ bw_l1 = 0 / 0 })) end,
    "scn.classify: bw_l1 must be a non-negative number, got '")
expect_error("infinite bw_llc is refused",
    function() scn.classify(good_m({ bw_llc = HUGE })) end,
    "scn.classify: bw_llc must be a non-negative number, got 'inf'")
expect_error("ncores = 0 is refused",
    function() scn.classify(good_m({ ncores = 0 })) end,
    "scn.classify: ncores must be a positive number, got '0'")
expect_error("missing ncores is refused",
    function() scn.classify(without("ncores")) end,
    "scn.classify: ncores must be a positive number, got 'nil'")
expect_error("measurement not a table is refused",
    function() scn.classify(42) end,
    "scn.classify: measurement must be a table, got '42'")
expect_error("reuse_threshold = 0 is refused",
    function() scn.classify(good_m({}), { reuse_threshold = 0 }) end,
    "scn.classify: reuse_threshold must be a positive number, got '0'")
expect_error("negative l1_activity is refused",
    function() scn.classify(good_m({}), { l1_activity = -0.1 }) end,
    "scn.classify: l1_activity must be a non-negative number, got '-0.1'")
expect_error("unknown option is refused",
    function() scn.classify(good_m({}), { l1_activty = 0.1 }) end,
    "scn.classify: unknown option 'l1_activty'")
expect_error("opts not a table is refused",
    function() scn.classify(good_m({}), "fast") end,
    "scn.classify: opts must be a table or nil, got 'fast'")
expect_error("scn.reuse names itself",
    function() scn.reuse({ bw_l1 = 1, bw_l2 = "x", bw_llc = 1 }) end,
    "scn.reuse: bw_l2 must be a non-negative number, got 'x'")

-- ------------------------------------------------------------------ thresholds
check("defaults: reuse_threshold 2, l1_activity 0.15 GB/s per core", function()
    return scn.defaults.reuse_threshold == 2 and scn.defaults.l1_activity == 0.15
end)
check("default l1_activity lies in Table 2's window (ep < t <= trisolv, per core)", function()
    local t = scn.defaults.l1_activity * 1000
    return by.ep.bw_l1 / NCORES < t and t <= by.trisolv.bw_l1 / NCORES,
        string.format("%.1f MB/s/core not in (%.2f, %.2f]", t,
            by.ep.bw_l1 / NCORES, by.trisolv.bw_l1 / NCORES)
end)
check("explicit defaults give the same classes as no opts", function()
    for _, r in ipairs(rows) do
        local a = scn.classify(mb(r))
        local b = scn.classify(mb(r), { reuse_threshold = 2, l1_activity = 0.15 })
        if a ~= b then return false, r.app end
    end
    return true
end)

-- classify every row with opts and compare with the table's classes, except the
-- listed changes
local function changes(name, opts, ncores, changed)
    check(name, function()
        local bad = {}
        for _, r in ipairs(rows) do
            local cls = scn.classify(mb(r, ncores), opts)
            local want = changed[r.app] or r.class
            if cls ~= want then bad[#bad + 1] = r.app .. " got " .. cls .. " want " .. want end
        end
        return #bad == 0, table.concat(bad, "; ")
    end)
end

changes("reuse_threshold 1.4: jacobi's L2 reuse (1.50) now counts -> N",
    { reuse_threshold = 1.4 }, nil, { jacobi = "N" })
changes("reuse_threshold 10: moderate reusers become S",
    { reuse_threshold = 10 }, nil,
    { gemver = "S", mvt = "S", syr2k = "S", durbin = "S", ["ft.A"] = "S" })
changes("l1_activity 0: ep is classified by its reuse (LLC 97.80) -> C",
    { l1_activity = 0 }, nil, { ep = "C" })
changes("l1_activity 0.19 GB/s/core (> 182.75 MB/s): trisolv -> N",
    { l1_activity = 0.19 }, nil, { trisolv = "N" })
changes("threshold scales with ncores: on 4 cores ep is active -> C",
    nil, 4, { ep = "C" })
changes("threshold scales with ncores: on 16 cores trisolv is inactive -> N",
    nil, 16, { trisolv = "N" })

-- boundaries: a factor equal to the threshold is reuse; L1 equal to the limit is activity
expect("L2 reuse exactly 2 counts as reuse -> N",
    { bw_l1 = 4, bw_l2 = 2, bw_llc = 2, ncores = 1 }, nil, "N", 2, 1)
expect("LLC reuse exactly 2 counts as reuse -> C",
    { bw_l1 = 2, bw_l2 = 2, bw_llc = 1, ncores = 1 }, nil, "C", 1, 2)
expect("reuse just below 2 everywhere -> S",
    { bw_l1 = 3.9, bw_l2 = 2, bw_llc = 1.1, ncores = 1 }, nil, "S")
expect("equal finite reuse in L2 and LLC -> C (paper: otherwise C)",
    { bw_l1 = 9, bw_l2 = 3, bw_llc = 1, ncores = 1 }, nil, "C", 3, 3)
expect("bw_l1 equal to l1_activity x ncores is not low activity",
    { bw_l1 = 1, bw_l2 = 1, bw_llc = 1, ncores = 4 }, { l1_activity = 0.25 }, "S")
expect("bw_l1 just below l1_activity x ncores -> N",
    { bw_l1 = 0.999, bw_l2 = 1, bw_llc = 1, ncores = 4 }, { l1_activity = 0.25 }, "N")
expect("fractional ncores is accepted",
    { bw_l1 = 1, bw_l2 = 1, bw_llc = 1, ncores = 2.5 }, nil, "S")

check("details: reason string and l1_threshold", function()
    local _, d = scn.classify(mb(by.ep))
    return type(d.reason) == "string" and d.reason ~= "" and
        math.abs(d.l1_threshold - 1.2) < 1e-12, tostring(d.reason)
end)
check("opts table is not modified", function()
    local o = { reuse_threshold = 3 }
    scn.classify(good_m({}), o)
    local n = 0
    for _ in pairs(o) do n = n + 1 end
    return n == 1 and o.reuse_threshold == 3
end)

-- ------------------------------------------------------------------ sandbox
-- load the module the way the policy host does: only the safe base functions,
-- string, table, math, utf8; it must not read or write any other global
check("module loads with only the sandbox's globals and sets none", function()
    local f = assert(io.open(srcdir .. "/lua/cosched/scn.lua", "r"))
    local src = f:read("a"); f:close()
    local safe = { "assert", "error", "ipairs", "next", "pairs", "select", "tonumber",
        "tostring", "type", "setmetatable", "getmetatable", "rawequal", "rawget",
        "rawlen", "rawset", "_VERSION" }
    local env, touched = {}, {}
    for _, k in ipairs(safe) do env[k] = _G[k] end
    env.string, env.table, env.math, env.utf8 = string, table, math, utf8
    setmetatable(env, {
        __index = function(_, k) touched[#touched + 1] = "read " .. tostring(k) end,
        __newindex = function(_, k) touched[#touched + 1] = "write " .. tostring(k) end,
    })
    local chunk = assert(load(src, "=scn.lua", "t", env))
    local mod = chunk("cosched.scn", "scn.lua")
    local cls = mod.classify(mb(by["ft.A"]))
    mod.reuse(mb(by.jacobi))
    pcall(mod.classify, { bw_l1 = "x" })
    return type(mod) == "table" and cls == "N" and #touched == 0, table.concat(touched, ", ")
end)

tap.finish()
