-- Tests of lua/cosched/characterize.lua (the characterization protocol of paper 001,
-- Sec. 4.4 with Sec. 3.1 and 6) on deterministic fake snapshots.
-- Run: lua5.4 tests/lua/test_characterize.lua SRCDIR      (prints TAP; exit 1 on any failure)
--
-- A small simulated node (Sim below) plays the engine: every epoch it builds a
-- read-only snapshot with the documented fields, the module consumes it
-- (update), proposes its placements (plan_step), a test policy merges them
-- into a step, and the node "runs" the step: each job gets metrics that follow
-- from the cores it was given (a streaming job's job IPC and bandwidths do not
-- change with its cores, a scalable job's grow with them, a lock-bound job
-- collapses when folded), the bandwidths of paper 001's Table 2
-- (tests/fixtures/table2.csv) measured with 8 threads on 8 cores, and the
-- per-core IPCs of the same table.  Frozen jobs get what the engine gives
-- them: a `last` with zero counts.

local srcdir = arg[1] or "."
package.path = srcdir .. "/lua/?.lua;" .. srcdir .. "/tests/lua/?.lua;" .. package.path
local ch = require "cosched.characterize"

local HUGE = math.huge

-- ------------------------------------------------------------------ harness
local tap = require "tap"
local fake = require "fakenode"
local check = tap.check

local function near(x, y, eps)
    return type(x) == "number" and type(y) == "number" and math.abs(x - y) <= (eps or 1e-9) * math.max(1, math.abs(y))
end

local function f(x)
    if type(x) ~= "number" then return tostring(x) end
    return string.format("%.6g", x)
end

local function list_eq(a, b)
    if #a ~= #b then return false end
    for i = 1, #a do if a[i] ~= b[i] then return false end end
    return true
end

local function fmt_list(l)
    local s = {}
    for i, v in ipairs(l) do s[i] = tostring(v) end
    return "{" .. table.concat(s, ",") .. "}"
end

local function set_of(l)
    local s = {}
    for _, v in ipairs(l) do s[v] = true end
    return s
end

-- ------------------------------------------------------------------ Table 2
local rows, row = fake.table2(srcdir)

-- per-core IPC column of Table 2 (paper 001), not in the fixture
local table2_ipc = {
    jacobi = 0.487, stream = 0.664, gesummv = 0.486, trisolv = 0.438, gemver = 0.445,
    mvt = 0.393, syr2k = 1.934, ["2mm"] = 0.363, ["3mm"] = 0.351, cholesky = 1.611,
    gemm = 0.377, syrk = 2.287, trmm = 2.165, durbin = 0.347, gramschmidt = 0.219,
    ludcmp = 0.431, ["ft.A"] = 0.957, ep = 0.747, doitgen = 1.429,
}

-- A behaviour from a Table 2 row: job IPC and bandwidths on 8 cores; how they
-- scale with the cores k the job keeps busy: S jobs are bandwidth-bound (no
-- change), C and N jobs scale linearly (what Sec. 4.1 / Fig. 6 reports).
local function app(name, over)
    local r = assert(row[name], name)
    local b = {
        name = name, class = r.class, j8 = 8 * table2_ipc[name],
        bw8 = { l1 = r.bw_l1 / 1000, l2 = r.bw_l2 / 1000, llc = r.bw_llc / 1000 },
        alpha = r.class == "S" and 0 or 1,
    }
    for k, v in pairs(over or {}) do b[k] = v end
    return b
end

-- ------------------------------------------------------------------ read-only proxies (as the engine's)
local ro = fake.ro

local function copy(v)
    if type(v) ~= "table" then return v end
    local o = {}
    for k, x in pairs(v) do o[k] = copy(x) end
    return o
end

-- ------------------------------------------------------------------ topologies
local function topology(ncpu, llc_of, core_of, package_of)
    local t = { cpus = {}, cores = {}, llcs = {}, numa = {} }
    local cores = {}
    for c = 0, ncpu - 1 do
        t.cpus[#t.cpus + 1] = c
        local k = core_of(c)
        if not cores[k] then
            cores[k] = { index = k, pus = {}, llc = llc_of(c), numa = package_of(c), package = package_of(c) }
        end
        local core = cores[k]
        core.pus[#core.pus + 1] = c
        local l = llc_of(c)
        t.llcs[l] = t.llcs[l] or { index = l, cpus = {}, size = 16 * 2 ^ 20, level = 3 }
        table.insert(t.llcs[l].cpus, c)
        local n = package_of(c)
        t.numa[n] = t.numa[n] or { index = n, os_index = n - 1, cpus = {}, size = 64 * 2 ^ 30 }
        table.insert(t.numa[n].cpus, c)
    end
    for k = 1, #cores do t.cores[k] = cores[k] end
    return t
end

-- 8 cores, one LLC (paper 001's Sandy Bridge E5-4620, Table 1)
local function flat8()
    return topology(8, function() return 1 end, function(c) return c + 1 end, function() return 1 end)
end
-- 2 packages x 2 LLCs x 4 cores: cpus 0-3 LLC 1, 4-7 LLC 2 (package 1), 8-11 LLC 3, 12-15 LLC 4
local function pk2l2c4()
    return topology(16, function(c) return c // 4 + 1 end, function(c) return c + 1 end,
        function(c) return c // 8 + 1 end)
end
-- 4 cores x 2 hardware threads, one LLC: core k holds cpus k-1 and k+3
local function smt4x2()
    return topology(8, function() return 1 end, function(c) return c % 4 + 1 end, function() return 1 end)
end

-- ------------------------------------------------------------------ simulated node
local FREQ = 2.5e9                -- cycles per second of a busy cpu

local Sim = {}
Sim.__index = Sim

function Sim.new(topo, o)
    o = o or {}
    local s = setmetatable({
        topo = topo, jobs = {}, epoch = 0, now = 0, quantum = 1, pmu = true,
        uncounted = {}, uncore_llc = false, budget = o.budget, violations = {}, trace = {},
        llc_of = {}, core_of = {}, llc_cpus = {}, nextid = 1, placed_phases = {},
    }, Sim)
    for _, core in ipairs(topo.cores) do
        for _, c in ipairs(core.pus) do
            s.llc_of[c] = core.llc
            s.core_of[c] = core.index
        end
    end
    for _, l in ipairs(topo.llcs) do s.llc_cpus[l.index] = l.cpus end
    return s
end

function Sim:add(beh, threads, hint)
    local id = self.nextid
    self.nextid = id + 1
    local j = { id = id, name = beh.name, threads = threads or 8, hint = hint, beh = beh,
                ipc_mult = 1, bw_mult = 1, frozen = true, cpus = copy(self.topo.cpus), last = nil,
                quanta_run = 0, quanta_frozen = 0, waited = 0, cpu_time = 0 }
    self.jobs[#self.jobs + 1] = j
    return id
end

function Sim:job(id)
    for _, j in ipairs(self.jobs) do if j.id == id then return j end end
end

function Sim:remove(id)
    for i, j in ipairs(self.jobs) do
        if j.id == id then table.remove(self.jobs, i) return end
    end
end

function Sim:snapshot()
    self.epoch = self.epoch + 1
    local jobs = {}
    for _, j in ipairs(self.jobs) do
        jobs[#jobs + 1] = { id = j.id, name = j.name, threads = j.threads, class = j.hint, priority = 0,
            runs = 0, waited = j.waited, quanta_run = j.quanta_run, quanta_frozen = j.quanta_frozen,
            cpu_time = j.cpu_time, frozen = j.frozen, cpus = copy(j.cpus), last = copy(j.last),
            stored = copy(j.stored) }
    end
    return ro({ api = 1, epoch = self.epoch, now = self.now, quantum = self.quantum, params = {},
        counters = self.counters_name or "perf",
        cpus = copy(self.topo.cpus),
        topology = { cores = copy(self.topo.cores), llcs = copy(self.topo.llcs), numa = copy(self.topo.numa) },
        jobs = jobs })
end

-- the snapshot of the coming epoch, updated into c (idempotent until the next step)
function Sim:look(c)
    if not self.snap then
        self.snap = self:snapshot()
        c:update(self.snap)
    end
    return self.snap
end

local function ncores_of(sim, cpus)
    local seen, n = {}, 0
    for _, c in ipairs(cpus) do
        local k = sim.core_of[c]
        if not seen[k] then seen[k] = true; n = n + 1 end
    end
    return n
end

function Sim:owns_llcs(cpus)
    local s = set_of(cpus)
    for _, c in ipairs(cpus) do
        for _, x in ipairs(self.llc_cpus[self.llc_of[c]]) do
            if not s[x] then return false end
        end
    end
    return true
end

function Sim:execute(step, wall)
    wall = wall or self.quantum
    local run, seen = {}, {}
    for _, e in ipairs(step.jobs) do
        if run[e.id] then self.violations[#self.violations + 1] = "job " .. e.id .. " twice in a step" end
        run[e.id] = e.cpus
        for _, c in ipairs(e.cpus) do
            if seen[c] then
                self.violations[#self.violations + 1] = ("epoch %d: cpu %d given to jobs %d and %d")
                    :format(self.epoch, c, seen[c], e.id)
            end
            seen[c] = e.id
        end
    end
    -- which running jobs share an LLC with a running S or C job (true class)
    local llc_busy = {}
    for _, j in ipairs(self.jobs) do
        if run[j.id] and (j.beh.class == "S" or j.beh.class == "C") then
            for _, c in ipairs(run[j.id]) do
                local l = self.llc_of[c]
                llc_busy[l] = llc_busy[l] or {}
                llc_busy[l][j.id] = true
            end
        end
    end
    local counted = self.pmu and not self.uncounted[self.epoch]
    for _, j in ipairs(self.jobs) do
        local cpus = run[j.id]
        if cpus then
            local b = j.beh
            local k = math.min(j.threads, ncores_of(self, cpus))
            local busy = math.min(j.threads, #cpus)
            local scale = b.scale and b.scale(k) or (k / 8) ^ b.alpha
            local jipc = b.j8 * scale * j.ipc_mult
            local bscale = (k / 8) ^ b.alpha * j.bw_mult
            local noise = 1
            if b.noisy then noise = (j.quanta_run % 2 == 0) and 1.03 or 0.97 end
            if b.contend then
                local hit = false
                for _, c in ipairs(cpus) do
                    for other in pairs(llc_busy[self.llc_of[c]] or {}) do
                        if other ~= j.id then hit = true end
                    end
                end
                if hit then jipc = jipc * b.contend end
            end
            -- cpu_mult: the share of its cores' time the job gets (another
            -- process on the node takes the rest): its rates per wall second
            -- shrink with it, its rates per CPU-second do not
            local share = j.cpu_mult or 1
            local bw = { l1 = b.bw8.l1 * bscale * noise * share, l2 = b.bw8.l2 * bscale * noise * share,
                         llc = b.bw8.llc * bscale * noise * share }
            local ins = jipc * share * FREQ * wall
            local m = { ipc = jipc / busy, instructions = ins, cycles = busy * share * FREQ * wall,
                        bw_l1 = bw.l1, bw_l2 = bw.l2, bw_llc = bw.llc,
                        llc_misses = bw.llc * 1e9 * wall / 64 }
            if ins > 0 then m.mpki = 1000 * m.llc_misses / ins end
            local owned = self:owns_llcs(cpus)
            if self.uncore_llc and not owned then
                m.bw_l2, m.bw_llc, m.llc_misses, m.mpki = nil, nil, nil, nil
            end
            j.frozen = false
            j.cpus = copy(cpus)
            j.last = { wall = wall, cpu = busy * share * wall, ncpus = #cpus, counted = counted,
                       socket_owned = counted and owned, metrics = counted and m or nil,
                       ran = true, cpus = copy(cpus) }
            if self.restarts and self.restarts[j.id] then
                -- its instance ended and a new one started during the step,
                -- as the engine does under --window: frozen on its home now
                j.frozen = true
                j.cpus = copy(self.topo.cpus)
            end
            j.quanta_run = j.quanta_run + 1
            j.waited = 0
            j.cpu_time = j.cpu_time + busy * wall
        else
            j.frozen = true
            -- the engine measures every live job at a step's end: zero counts
            j.last = { wall = wall, cpu = 0, ncpus = #j.cpus, counted = self.pmu, socket_owned = false, ran = false,
                       metrics = self.pmu and { instructions = 0, cycles = 0, bw_l1 = 0, bw_l2 = 0,
                                                bw_llc = 0, llc_misses = 0 } or nil }
            j.quanta_frozen = j.quanta_frozen + 1
            j.waited = j.waited + wall
        end
    end
    self.now = self.now + wall
    self.snap = nil
end

-- invariants of a plan_step() result
function Sim:check_part(snap, part, c)
    local v = self.violations
    local function bad(msg) v[#v + 1] = ("epoch %d: %s"):format(snap.epoch, msg) end
    local budget = set_of(self.budget or self.topo.cpus)
    local used, llcs, reserved_want = {}, {}, {}
    local pending = c:pending(snap)
    local pend = set_of(pending)
    for _, e in ipairs(part.jobs) do
        if not pend[e.id] then bad("job " .. e.id .. " placed but not pending") end
        local l = self.llc_of[e.cpus[1]]
        if llcs[l] then bad("two placements in LLC " .. l) end
        llcs[l] = true
        for _, x in ipairs(self.llc_cpus[l]) do reserved_want[#reserved_want + 1] = x end
        for _, cpu in ipairs(e.cpus) do
            if not budget[cpu] then bad("job " .. e.id .. " placed on cpu " .. cpu .. " outside the budget") end
            if used[cpu] then bad("cpu " .. cpu .. " placed twice") end
            if self.llc_of[cpu] ~= l then bad("job " .. e.id .. " placed across LLCs") end
            used[cpu] = e.id
        end
    end
    table.sort(reserved_want)
    if not list_eq(part.reserved, reserved_want) then
        bad("reserved " .. fmt_list(part.reserved) .. " want " .. fmt_list(reserved_want))
    end
    local used_cores = {}
    for cpu in pairs(used) do used_cores[self.core_of[cpu]] = true end
    local res = set_of(part.reserved)
    for _, cpu in ipairs(part.shared) do
        if not budget[cpu] then bad("shared cpu " .. cpu .. " outside the budget") end
        if not res[cpu] then bad("shared cpu " .. cpu .. " not reserved") end
        if used_cores[self.core_of[cpu]] then bad("shared cpu " .. cpu .. " on a placed job's core") end
    end
    local want_left = {}
    for _, cpu in ipairs(self.budget or self.topo.cpus) do
        if not res[cpu] then want_left[#want_left + 1] = cpu end
    end
    table.sort(want_left)
    if not list_eq(part.left, want_left) then bad("left " .. fmt_list(part.left) .. " want " .. fmt_list(want_left)) end
    for _, id in ipairs(part.may_share) do
        local i = c:info(id)
        if not (i and i.ready and i.class == "N") then bad("job " .. id .. " may share but is not a ready N job") end
    end
    local n = #part.jobs + #part.waiting
    if n ~= #pending then bad("placed + waiting = " .. n .. ", pending = " .. #pending) end
    for _, e in ipairs(part.placements) do self.placed_phases[#self.placed_phases + 1] = e.phase end
end

-- the step a policy built: only placements and may_share jobs in reserved domains
function Sim:check_step(part, step)
    local placed, may, res, shared = {}, set_of(part.may_share), set_of(part.reserved), set_of(part.shared)
    for _, e in ipairs(part.jobs) do placed[e.id] = true end
    for _, e in ipairs(step.jobs) do
        if not placed[e.id] then
            for _, cpu in ipairs(e.cpus) do
                if res[cpu] and not (may[e.id] and shared[cpu]) then
                    self.violations[#self.violations + 1] = ("epoch %d: job %d on reserved cpu %d")
                        :format(self.epoch, e.id, cpu)
                end
            end
        end
    end
end

-- The test policy: the placements; the first ready N job on the shared cpus;
-- the ready job that ran least on the left cpus; with nothing to
-- characterize, gang over the ready jobs.
local function default_policy(sim, snap, part, c)
    local step, taken = { jobs = {} }, {}
    for _, e in ipairs(part.jobs) do
        step.jobs[#step.jobs + 1] = { id = e.id, cpus = e.cpus }
        taken[e.id] = true
    end
    if #part.shared > 0 and #part.may_share > 0 then
        local id = part.may_share[1]
        step.jobs[#step.jobs + 1] = { id = id, cpus = part.shared }
        taken[id] = true
    end
    local function least()
        local best
        for _, j in ipairs(snap.jobs) do
            local i = c:info(j.id)
            if not taken[j.id] and i and i.ready and (not best or j.quanta_run < best.quanta_run) then best = j end
        end
        return best
    end
    if #part.left > 0 and #part.jobs > 0 then
        local j = least()
        if j then
            step.jobs[#step.jobs + 1] = { id = j.id, cpus = part.left }
            taken[j.id] = true
        end
    end
    if #step.jobs == 0 then
        local j = least()
        if j then step.jobs[1] = { id = j.id, cpus = copy(sim.budget or sim.topo.cpus) } end
    end
    return step
end

local function trace_of(part, step)
    local s = {}
    for _, e in ipairs(part.placements) do s[#s + 1] = e.id .. ":" .. e.phase .. fmt_list(e.cpus) end
    s[#s + 1] = "|"
    for _, e in ipairs(step.jobs) do s[#s + 1] = e.id .. fmt_list(e.cpus) end
    return table.concat(s, " ")
end

function Sim:epoch_(c, policy, wall)
    local snap = self:look(c)
    local part = c:plan_step(snap, self.budget)
    self:check_part(snap, part, c)
    local step = (policy or default_policy)(self, snap, part, c)
    self:check_step(part, step)
    self.trace[#self.trace + 1] = trace_of(part, step)
    self:execute(step, wall)
    return part, step
end

function Sim:run(c, n, policy)
    for _ = 1, n do self:epoch_(c, policy) end
end

-- run one job alone from its arrival until ready (or max steps); info after
local function characterize(beh, o)
    o = o or {}
    local sim = Sim.new(o.topo or flat8())
    local c = ch.new(o.params)
    local id = sim:add(beh, o.threads or 8, o.hint)
    local steps = 0
    repeat
        sim:epoch_(c)
        steps = steps + 1
        sim:look(c)
    until c:info(id).ready or steps >= (o.max or 20)
    return c:info(id), sim, c, id, steps
end

-- ------------------------------------------------------------------ parameters
check("defaults: 2 standalone, 1 folded, threshold 0.20, confirm 2, lock_slowdown 2.5", function()
    local d = ch.defaults
    return d.standalone_quanta == 2 and d.folded_quanta == 1 and d.folded_phase == "alone" and d.phase_threshold == 0.20
        and d.phase_confirm == 2 and d.lock_slowdown == 2.5 and d.reuse_threshold == 2
        and d.l1_activity == 0.15
end)

local function expect_error(name, fn, want)
    check(name, function()
        local ok, err = pcall(fn)
        if ok then return false, "no error raised" end
        err = tostring(err)
        local at = err:find(want, 1, true)
        local pos = err:find("test_characterize.lua:%d+: characterize")
        return at ~= nil and pos ~= nil and pos < at, "got: " .. err
    end)
end

expect_error("standalone_quanta = 0 is refused", function() ch.new { standalone_quanta = 0 } end,
    "characterize.new: standalone_quanta must be an integer >= 1, got '0'")
expect_error("standalone_quanta = 1.5 is refused", function() ch.new { standalone_quanta = 1.5 } end,
    "characterize.new: standalone_quanta must be an integer >= 1, got '1.5'")
expect_error("folded_quanta = '-1' is refused", function() ch.new { folded_quanta = "-1" } end,
    "characterize.new: folded_quanta must be an integer >= 0, got '-1'")
expect_error("phase_threshold = 0 is refused", function() ch.new { phase_threshold = 0 } end,
    "characterize.new: phase_threshold must be a number > 0, got '0'")
expect_error("phase_threshold = 'abc' is refused", function() ch.new { phase_threshold = "abc" } end,
    "characterize.new: phase_threshold must be a number > 0, got 'abc'")
expect_error("phase_confirm = 0 is refused", function() ch.new { phase_confirm = 0 } end,
    "characterize.new: phase_confirm must be an integer >= 1, got '0'")
expect_error("lock_slowdown = 1 is refused", function() ch.new { lock_slowdown = 1 } end,
    "characterize.new: lock_slowdown must be a number > 1, got '1'")
expect_error("reuse_threshold = 0 is refused", function() ch.new { reuse_threshold = 0 } end,
    "characterize.new: reuse_threshold must be a number > 0, got '0'")
expect_error("l1_activity = -0.1 is refused", function() ch.new { l1_activity = -0.1 } end,
    "characterize.new: l1_activity must be a number >= 0, got '-0.1'")
expect_error("l1_activity = inf is refused", function() ch.new { l1_activity = HUGE } end,
    "characterize.new: l1_activity must be a number >= 0, got 'inf'")
expect_error("a boolean is refused", function() ch.new { phase_confirm = true } end,
    "characterize.new: phase_confirm must be an integer >= 1, got 'true'")
expect_error("an unknown parameter is refused, naming the accepted ones",
    function() ch.new { phase_treshold = 0.3 } end,
    "characterize.new: unknown parameter 'phase_treshold' (accepted: folded_phase, folded_quanta, l1_activity, " ..
    "lock_slowdown, phase_confirm, phase_threshold, reuse_threshold, standalone_quanta)")
expect_error("folded_phase other than alone or deferred is refused", function() ch.new { folded_phase = "later" } end,
    "characterize.new: folded_phase must be alone or deferred, got 'later'")
expect_error("params that are not a table are refused", function() ch.new(5) end,
    "characterize.new: params must be a table or nil, got '5'")

check("numeric strings are accepted (snap.params gives strings): standalone_quanta='3'", function()
    local sim = Sim.new(flat8())
    local c = ch.new { standalone_quanta = "3", folded_quanta = "1", phase_threshold = "0.25" }
    local id = sim:add(app("stream"))
    sim:run(c, 2); sim:look(c)
    local p2 = c:info(id).phase
    sim:run(c, 1); sim:look(c)
    local p3 = c:info(id).phase
    return p2 == "standalone" and p3 == "folded", "after 2: " .. tostring(p2) .. ", after 3: " .. tostring(p3)
end)

-- ------------------------------------------------------------------ Table 2: class after the standalone quanta
for _, r in ipairs(rows) do
    check("Table 2 " .. r.app .. ": class " .. r.class .. " and bandwidth means after 2 standalone steps (8 cores)",
        function()
            local sim = Sim.new(flat8())
            local c = ch.new()
            local id = sim:add(app(r.app, { noisy = true }))
            sim:run(c, 1); sim:look(c)
            local i1 = c:info(id)
            if not (i1.characterizing and i1.phase == "standalone" and i1.class == "unknown") then
                return false, "after 1 step: phase " .. tostring(i1.phase) .. " class " .. i1.class
            end
            sim:run(c, 1); sim:look(c)
            local i = c:info(id)
            local bw_ok = near(i.bw.l1, r.bw_l1 / 1000) and near(i.bw.l2, r.bw_l2 / 1000)
                and near(i.bw.llc, r.bw_llc / 1000)
            return i.class == r.class and i.phase == "folded" and i.cores_standalone == 8 and bw_ok
                and not i.ready,
                ("class %s phase %s cores %s bw %s/%s/%s"):format(i.class, tostring(i.phase),
                    tostring(i.cores_standalone), f(i.bw.l1), f(i.bw.l2), f(i.bw.llc))
        end)
end

check("2x2x4 topology: an 8-thread job gets one LLC domain (4 cores), classes hold (stream S, 3mm C, ep N)",
    function()
        local bad = {}
        for _, name in ipairs({ "stream", "3mm", "ep" }) do
            local i, sim = characterize(app(name), { topo = pk2l2c4() })
            local want = row[name].class
            if i.class ~= want or i.cores_standalone ~= 4 or i.cores_folded ~= 2 or not i.ready then
                bad[#bad + 1] = ("%s: class %s cores %s/%s"):format(name, i.class,
                    tostring(i.cores_standalone), tostring(i.cores_folded))
            end
            if #sim.violations > 0 then bad[#bad + 1] = sim.violations[1] end
        end
        return #bad == 0, table.concat(bad, "; ")
    end)

check("placement phases: standalone, standalone, folded; then ready, no more placements", function()
    local i, sim = characterize(app("gemm"))
    local p = sim.placed_phases
    return list_eq(p, { "standalone", "standalone", "folded" }) and i.ready and not i.characterizing
        and i.phase == nil, fmt_list(p)
end)

check("standalone on min(threads, domain cores): 4 threads on flat8 get cpus 0-3, folded 0-1", function()
    local sim = Sim.new(flat8())
    local c = ch.new()
    sim:add(app("ep"), 4)
    local p1 = sim:epoch_(c)
    sim:epoch_(c)
    local p3 = sim:epoch_(c)
    return list_eq(p1.jobs[1].cpus, { 0, 1, 2, 3 }) and list_eq(p1.shared, { 4, 5, 6, 7 })
        and list_eq(p3.jobs[1].cpus, { 0, 1 }) and p3.placements[1].phase == "folded"
        and list_eq(p3.shared, { 2, 3, 4, 5, 6, 7 }),
        fmt_list(p1.jobs[1].cpus) .. " " .. fmt_list(p3.jobs[1].cpus)
end)

check("SMT: 2 threads get 2 whole cores (both hardware threads), siblings are not shared", function()
    local sim = Sim.new(smt4x2())
    local c = ch.new()
    local id = sim:add(app("ep"), 2)
    local p = sim:epoch_(c)
    sim:run(c, 2); sim:look(c)
    local i = c:info(id)
    return list_eq(p.jobs[1].cpus, { 0, 1, 4, 5 }) and list_eq(p.shared, { 2, 3, 6, 7 })
        and i.cores_standalone == 2 and i.cores_folded == 1 and i.ready and i.class == "N",
        fmt_list(p.jobs[1].cpus) .. " shared " .. fmt_list(p.shared)
end)

check("odd core counts fold to half rounded up: 3 threads, 3 cores standalone, 2 folded", function()
    local sim = Sim.new(flat8())
    local c = ch.new()
    local id = sim:add(app("ep"), 3)
    sim:run(c, 2)
    local p3 = sim:epoch_(c)
    sim:look(c)
    local i = c:info(id)
    return i.ready and i.cores_standalone == 3 and i.cores_folded == 2 and list_eq(p3.jobs[1].cpus, { 0, 1 })
        and near(i.fp, 1 / 3), ("cores %s/%s fp %s"):format(tostring(i.cores_standalone),
            tostring(i.cores_folded), f(i.fp))
end)

check("a one-thread job is not folded: ready after the standalone quanta, fp nil", function()
    local i, sim = characterize(app("ep"), { threads = 1 })
    return i.ready and i.cores_standalone == 1 and i.ipc_folded == nil and i.fp == nil
        and #sim.placed_phases == 2 and not i.degraded, fmt_list(sim.placed_phases)
end)

check("folded_quanta = 0: no folded phase, fp nil", function()
    local i, sim = characterize(app("ep"), { params = { folded_quanta = 0 } })
    return i.ready and i.fp == nil and #sim.placed_phases == 2, fmt_list(sim.placed_phases)
end)

-- ------------------------------------------------------------------ IPC and FP
check("IPC_standalone is the job IPC: metrics.ipc x cpu/wall (= Table 2 IPC x 8 for ep)", function()
    local i = characterize(app("ep"))
    return near(i.ipc_standalone, 8 * 0.747), f(i.ipc_standalone)
end)

local function fp_case(name, beh, want_fp, want_gang)
    check(name, function()
        local i = characterize(beh)
        local fp_ok = near(i.fp, 1 - i.ipc_folded / i.ipc_standalone, 1e-12) and near(i.fp, want_fp, 1e-9)
        return i.ready and fp_ok and i.gang_only == want_gang,
            ("fp %s (want %s) ipc %s/%s gang_only %s"):format(f(i.fp), f(want_fp), f(i.ipc_standalone),
                f(i.ipc_folded), tostring(i.gang_only))
    end)
end

fp_case("streaming job (stream, S): IPC folded = IPC standalone, FP = 0, not gang_only",
    app("stream"), 0, false)
fp_case("compute job (ep, N): folding halves its IPC, FP = 0.5, not gang_only", app("ep"), 0.5, false)
fp_case("cache job (3mm, C) scaling as k^0.9: FP = 1 - 0.5^0.9", app("3mm", { alpha = 0.9 }),
    1 - 0.5 ^ 0.9, false)
fp_case("lock-contended job: folded IPC 0.3x standalone, FP = 0.7, gang_only",
    app("ep", { scale = function(k) return k >= 8 and 1 or 0.3 end }), 0.7, true)
fp_case("boundary: IPC_standalone/IPC_folded = 2.5 exactly is not gang_only (strict)",
    { name = "b25", class = "N", j8 = 4, bw8 = { l1 = 0.1, l2 = 0.1, llc = 0 }, alpha = 1,
      scale = function(k) return k >= 8 and 1 or 0.4 end }, 0.6, false)
fp_case("boundary: slowdown 1/0.39 > 2.5 is gang_only",
    { name = "b26", class = "N", j8 = 4, bw8 = { l1 = 0.1, l2 = 0.1, llc = 0 }, alpha = 1,
      scale = function(k) return k >= 8 and 1 or 0.39 end }, 0.61, true)
check("lock_slowdown = 4 keeps the 0.3x job out of gang_only", function()
    local i = characterize(app("ep", { scale = function(k) return k >= 8 and 1 or 0.3 end }),
        { params = { lock_slowdown = 4 } })
    return i.ready and not i.gang_only and near(i.fp, 0.7), f(i.fp)
end)

check("mpki is the mean of the standalone steps' mpki", function()
    local i = characterize(app("3mm"))
    local want = 1000 * (0.570 * 1e9 / 64) / (8 * 0.351 * FREQ)
    return near(i.mpki, want, 1e-9), f(i.mpki) .. " want " .. f(want)
end)

-- ------------------------------------------------------------------ phase changes
-- characterize one job alone, then run it alone on all cpus (gang): every step
-- is comparable to the standalone reference
local function phased(beh, o)
    o = o or {}
    local sim = Sim.new(o.topo or flat8())
    local c = ch.new(o.params)
    local id = sim:add(beh, o.threads or 8)
    sim:run(c, 3)
    sim:look(c)
    assert(c:info(id).ready, "not ready after 3 steps")
    return sim, c, id, sim:job(id)
end

check("IPC -30% for 2 comparable steps triggers a re-characterization (not after 1)", function()
    local sim, c, id, j = phased(app("gemm"))
    local ref = c:info(id).ipc_standalone
    j.ipc_mult = 0.7
    sim:run(c, 1); sim:look(c)
    local after1 = c:info(id)
    sim:run(c, 1); sim:look(c)
    local after2 = c:info(id)
    local pend = c:pending(sim.snap)
    return not after1.characterizing and after2.characterizing and after2.phase == "standalone"
        and after2.recharacterizations == 1 and not after2.ready and list_eq(pend, { id })
        and after2.ipc_standalone == ref and after2.class == "C",
        ("after 1: %s, after 2: %s (%d)"):format(tostring(after1.characterizing),
            tostring(after2.characterizing), after2.recharacterizations)
end)

check("after the re-characterization the new IPC is the reference: no further trigger", function()
    local sim, c, id, j = phased(app("gemm"))
    local old = c:info(id).ipc_standalone
    j.ipc_mult = 0.7
    sim:run(c, 2 + 3 + 10); sim:look(c)
    local i = c:info(id)
    return i.ready and i.recharacterizations == 1 and near(i.ipc_standalone, 0.7 * old),
        ("recharacterizations %d ipc %s (old %s)"):format(i.recharacterizations, f(i.ipc_standalone), f(old))
end)

check("IPC -15% for 10 comparable steps does not trigger", function()
    local sim, c, id, j = phased(app("gemm"))
    j.ipc_mult = 0.85
    sim:run(c, 10); sim:look(c)
    local i = c:info(id)
    return i.ready and i.recharacterizations == 0, "recharacterizations " .. i.recharacterizations
end)

check("IPC -30% on single steps separated by normal ones does not trigger", function()
    local sim, c, id, j = phased(app("gemm"))
    for _ = 1, 4 do
        j.ipc_mult = 0.7; sim:run(c, 1)
        j.ipc_mult = 1.0; sim:run(c, 1)
    end
    sim:look(c)
    return c:info(id).recharacterizations == 0, "recharacterizations " .. c:info(id).recharacterizations
end)

check("another process taking half the job's CPU is not a phase (IPC per cycle); a phase under it still is", function()
    -- gemm: its bw_llc is below the activity level (bw_llc is compared per wall second: see PHASES)
    local sim, c, id, j = phased(app("gemm"))
    j.cpu_mult = 0.5
    sim:run(c, 6); sim:look(c)
    local quiet = c:info(id).recharacterizations
    j.ipc_mult = 0.6
    sim:run(c, 2); sim:look(c)
    local i = c:info(id)
    return quiet == 0 and i.characterizing and i.recharacterizations == 1,
        ("under load: %d; then a phase: %s %d"):format(quiet, tostring(i.characterizing), i.recharacterizations)
end)

check("IPC +30% (a faster phase) triggers too", function()
    local sim, c, id, j = phased(app("gemm"))
    j.ipc_mult = 1.3
    sim:run(c, 2); sim:look(c)
    return c:info(id).characterizing
end)

check("bw_llc +30% at unchanged IPC triggers (stream, 10.4 GB/s into the LLC)", function()
    local sim, c, id, j = phased(app("stream"))
    j.bw_mult = 1.3
    sim:run(c, 2); sim:look(c)
    local i = c:info(id)
    return i.characterizing and i.recharacterizations == 1
end)

check("bw_llc +30% below the activity level is noise (gemm: 0.019 GB/s into the LLC)", function()
    local sim, c, id, j = phased(app("gemm"))
    j.bw_mult = 1.3
    sim:run(c, 6); sim:look(c)
    return not c:info(id).characterizing and c:info(id).recharacterizations == 0
end)

check("an uncounted step between two deviating ones neither counts nor resets", function()
    local sim, c, id, j = phased(app("gemm"))
    j.ipc_mult = 0.7
    sim:run(c, 1)
    sim.uncounted[sim.epoch + 1] = true
    sim:run(c, 1); sim:look(c)
    local mid = c:info(id).characterizing
    sim:run(c, 1); sim:look(c)
    return not mid and c:info(id).characterizing
end)

check("phase_confirm = 3 needs 3 deviating steps", function()
    local sim, c, id, j = phased(app("gemm"), { params = { phase_confirm = 3 } })
    j.ipc_mult = 0.7
    sim:run(c, 2); sim:look(c)
    local two = c:info(id).characterizing
    sim:run(c, 1); sim:look(c)
    return not two and c:info(id).characterizing
end)

check("folded steps compare with IPC_folded: -30% on 4 cores triggers", function()
    local sim, c, id, j = phased(app("gemm"))
    local function half(_, snap, part, cc)
        return { jobs = { { id = id, cpus = { 0, 1, 2, 3 } } } }
    end
    sim:run(c, 3, half); sim:look(c)
    local calm = c:info(id).characterizing
    j.ipc_mult = 0.7
    sim:run(c, 2, half); sim:look(c)
    return not calm and c:info(id).characterizing
end)

check("steps on other core counts are not comparable: -30% on 2 cores does not trigger", function()
    local sim, c, id, j = phased(app("gemm"))
    j.ipc_mult = 0.7
    sim:run(c, 5, function() return { jobs = { { id = id, cpus = { 0, 1 } } } } end); sim:look(c)
    return not c:info(id).characterizing
end)

-- two characterized jobs side by side in the same LLC, folded (tft): contention, not phases
local function pair_policy(a, b)
    return function() return { jobs = { { id = a, cpus = { 0, 1, 2, 3 } }, { id = b, cpus = { 4, 5, 6, 7 } } } } end
end

-- 3mm (losing 40% to contention) and stream on flat8, characterized alone
-- first: sim, c, their ids, and whether both are ready
local function characterized_pair()
    local sim = Sim.new(flat8())
    local c = ch.new()
    local a = sim:add(app("3mm", { contend = 0.6 }))
    local b = sim:add(app("stream"))
    sim:run(c, 6); sim:look(c)
    return sim, c, a, b, c:info(a).ready and c:info(b).ready
end

check("contention is not a phase: 3mm (C) loses 40% next to stream (S) in its LLC, no re-characterization",
    function()
        local sim, c, a, b, ready = characterized_pair()
        if not ready then return false, "not characterized" end
        sim:run(c, 10, pair_policy(a, b)); sim:look(c)
        return c:info(a).recharacterizations == 0 and c:info(b).recharacterizations == 0
            and #sim.violations == 0, table.concat(sim.violations, "; ")
    end)

check("a co-runner that restarted during the step still ran there: 3mm beside a restarting stream is not a phase",
    function()
        -- issue #11 cause 3: judged from who is frozen at snapshot time, the
        -- restarted stream looked absent, 3mm's contended steps were compared
        -- with its clean reference, and it was characterized again
        local sim, c, a, b, ready = characterized_pair()
        if not ready then return false, "not characterized" end
        sim.restarts = { [b] = true }
        sim:run(c, 10, pair_policy(a, b)); sim:look(c)
        return c:info(a).recharacterizations == 0 and c:info(b).recharacterizations == 0
            and #sim.violations == 0, ("a %d b %d %s"):format(c:info(a).recharacterizations,
                c:info(b).recharacterizations, table.concat(sim.violations, "; "))
    end)

check("no counters on the run (snap.counters = none): no characterization quanta, ready at once with the hint",
    function()
        local sim = Sim.new(flat8())
        sim.counters_name = "none"
        local c = ch.new()
        local a = sim:add(app("stream"), 8, "S")
        local b = sim:add(app("3mm"))
        local snap = sim:look(c)
        local part = c:plan_step(snap)
        local ia, ib = c:info(a), c:info(b)
        return #part.jobs == 0 and #part.waiting == 0 and ia.ready and ib.ready and ia.class == "S"
            and ib.class == "unknown" and ia.degraded and ia.reason == "no counters on this run",
            ("placed %d waiting %d class %s/%s"):format(#part.jobs, #part.waiting, ia.class, ib.class)
    end)

-- a flat8 node, a characterization module and one job per app named, added
-- in order: sim, c and the jobs' ids
local function flat8_with(...)
    local sim, c, ids = Sim.new(flat8()), ch.new(), {}
    for i, name in ipairs({ ... }) do ids[i] = sim:add(app(name)) end
    return sim, c, table.unpack(ids)
end

check("an N job's steps stay comparable next to an S co-runner: ep -30% beside stream triggers", function()
    local sim, c, a, b = flat8_with("ep", "stream")
    sim:run(c, 6); sim:look(c)
    sim:run(c, 3, pair_policy(a, b)); sim:look(c)
    local calm = c:info(a).characterizing
    sim:job(a).ipc_mult = 0.7
    sim:run(c, 2, pair_policy(a, b)); sim:look(c)
    return not calm and c:info(a).characterizing and c:info(b).recharacterizations == 0
end)

check("jobs in different LLC domains are comparable (2x2x4): a phase of one is seen", function()
    local sim = Sim.new(pk2l2c4())
    local c = ch.new()
    local a = sim:add(app("3mm"))
    local b = sim:add(app("stream"))
    sim:run(c, 3); sim:look(c)              -- both characterized at once, one LLC each
    if not (c:info(a).ready and c:info(b).ready) then return false, "not ready after 3 steps" end
    local function split() return { jobs = { { id = a, cpus = { 0, 1, 2, 3 } }, { id = b, cpus = { 4, 5, 6, 7 } } } } end
    sim:job(a).ipc_mult = 0.7
    sim:run(c, 2, split); sim:look(c)
    return c:info(a).characterizing and c:info(b).recharacterizations == 0 and #sim.violations == 0,
        table.concat(sim.violations, "; ")
end)

check("recharacterize(id) queues a ready job behind the others, oldest first", function()
    local sim, c, a, b = flat8_with("ep", "stream")
    sim:run(c, 1)
    local d = sim:add(app("gemm"))
    local snap = sim:look(c)
    local p1 = c:pending(snap)
    sim:run(c, 2); sim:look(c)               -- a done
    local ok1 = c:recharacterize(a)
    local ok2 = c:recharacterize(b)          -- already characterizing
    local p2 = c:pending(sim.snap)
    return list_eq(p1, { a, b, d }) and ok1 and not ok2 and list_eq(p2, { b, d, a })
        and c:info(a).recharacterizations == 1, fmt_list(p1) .. " " .. fmt_list(p2)
end)

-- ------------------------------------------------------------------ uncounted steps, no PMU
check("uncounted steps do not count: 2 missed steps delay the characterization by 2", function()
    local sim, c, id = flat8_with("stream")
    sim.uncounted[1] = true
    sim.uncounted[3] = true
    sim:run(c, 2); sim:look(c)
    local p2 = c:info(id).phase
    sim:run(c, 2); sim:look(c)
    local p4 = c:info(id).phase
    sim:run(c, 1); sim:look(c)
    local i = c:info(id)
    return p2 == "standalone" and p4 == "folded" and i.ready and not i.degraded and i.class == "S"
        and near(i.bw.llc, 10.411), ("%s %s %s"):format(tostring(p2), tostring(p4), tostring(i.ready))
end)

check("frozen steps do not count: a pending job the policy leaves frozen makes no progress", function()
    local sim, c, a, b = flat8_with("ep", "stream")
    sim:run(c, 3); sim:look(c)               -- a done, b pending
    local keep_b_frozen = function() return { jobs = { { id = a, cpus = { 0, 1, 2, 3, 4, 5, 6, 7 } } } } end
    sim:run(c, 5, keep_b_frozen); sim:look(c)
    local i = c:info(b)
    return i.characterizing and i.phase == "standalone" and not i.ready and i.discarded == 0
        and i.class == "unknown"
end)

check("short steps (< half a quantum, epoch cut short) are ignored", function()
    local sim, c, id = flat8_with("ep")
    local snap = sim:look(c)
    sim:execute({ jobs = c:plan_step(snap).jobs }, 0.3)
    snap = sim:look(c)
    local i1 = c:info(id)
    sim:execute({ jobs = c:plan_step(snap).jobs }, 0.6)
    sim:look(c)
    local i2 = c:info(id)
    sim:run(c, 1); sim:look(c)
    return i1.phase == "standalone" and i2.phase == "standalone" and c:info(id).phase == "folded"
end)

check("no PMU: ready after standalone+folded quanta, class = hint, degraded, no IPC", function()
    local sim = Sim.new(flat8())
    sim.pmu = false
    local c = ch.new()
    local a = sim:add(app("stream"), 8, "S")
    local b = sim:add(app("ep"), 8, nil)
    local seen = {}
    for s = 1, 3 do
        sim:epoch_(c); sim:look(c)
        seen[s] = c:info(a).ready
    end
    local ia = c:info(a)
    for _ = 1, 3 do sim:epoch_(c) end
    sim:look(c)
    local ib = c:info(b)
    sim:run(c, 10); sim:look(c)
    local later = c:info(a)
    local phases = sim.placed_phases
    return not seen[1] and not seen[2] and seen[3] and ia.class == "S" and ia.degraded
        and ia.ipc_standalone == nil and ia.fp == nil and not ia.characterizing and ia.phase == nil
        and not ia.gang_only and ib.ready and ib.class == "unknown" and ib.degraded
        and #c:pending(sim.snap) == 0 and later.recharacterizations == 0
        and list_eq(phases, { "standalone", "standalone", "standalone", "standalone", "standalone", "standalone" }),
        ("a: %s %s %s, b: %s %s, phases %s"):format(tostring(seen[3]), ia.class, tostring(ia.degraded),
            tostring(ib.ready), ib.class, fmt_list(phases))
end)

check("counters that come back: a job degraded without any measurement is characterized again", function()
    local sim = Sim.new(flat8())
    sim.pmu = false
    local c = ch.new()
    local id = sim:add(app("3mm"), 8, "N")
    sim:run(c, 3); sim:look(c)
    local before = c:info(id)
    sim.pmu = true
    sim:run(c, 1); sim:look(c)
    local retry = c:info(id)
    sim:run(c, 3); sim:look(c)
    local after = c:info(id)
    return before.degraded and before.class == "N" and retry.characterizing
        and after.ready and not after.degraded and after.class == "C" and after.recharacterizations == 1,
        ("%s %s %s"):format(before.class, tostring(retry.characterizing), after.class)
end)

-- ------------------------------------------------------------------ jobs that leave
check("a job leaving mid-characterization is forgotten; the next pending job is placed", function()
    local sim, c, a, b, d = flat8_with("ep", "stream", "gemm")
    sim:run(c, 1)
    sim:remove(a)
    sim:remove(d)
    local snap = sim:look(c)
    local part = c:plan_step(snap)
    return c:info(a) == nil and c:info(d) == nil and list_eq(c:pending(snap), { b })
        and #part.jobs == 1 and part.jobs[1].id == b and #part.waiting == 0,
        fmt_list(c:pending(snap))
end)

check("a job leaving in its folded phase is forgotten", function()
    local sim, c, a, b = flat8_with("ep", "stream")
    sim:run(c, 2); sim:look(c)
    local was = c:info(a).phase
    sim:remove(a)                            -- ends during the step planned now
    sim:run(c, 1); sim:look(c)
    local gone = c:info(a) == nil and list_eq(c:pending(sim.snap), { b })
    sim:run(c, 3); sim:look(c)
    return was == "folded" and gone and c:info(b).ready and #sim.violations == 0
end)

-- ------------------------------------------------------------------ who shares with a job under characterization
check("only ready N jobs may share: ep (N) runs beside the 4-thread stream's characterization", function()
    local sim, c, n, x = flat8_with("ep", "3mm")
    sim:run(c, 6)
    local s = sim:add(app("stream"), 4)
    sim:look(c)
    local ready_before = c:info(n).ready and c:info(x).ready
    local part, step = sim:epoch_(c)
    local ran_shared = false
    for _, e in ipairs(step.jobs) do
        if e.id == n and list_eq(e.cpus, { 4, 5, 6, 7 }) then ran_shared = true end
    end
    sim:run(c, 2); sim:look(c)
    local i = c:info(s)
    return ready_before and list_eq(part.may_share, { n }) and ran_shared and i.ready and i.class == "S"
        and i.discarded == 0 and c:info(x).class == "C" and #sim.violations == 0,
        ("may_share %s ran %s ready %s discarded %d %s"):format(fmt_list(part.may_share),
            tostring(ran_shared), tostring(i.ready), i.discarded, table.concat(sim.violations, "; "))
end)

check("a C job in the reserved LLC breaks isolation: the step is discarded", function()
    local sim, c, x = flat8_with("3mm")
    sim:run(c, 3)
    local s = sim:add(app("stream"), 4)
    local rogue = function(_, _, part) return { jobs = { part.jobs[1], { id = x, cpus = part.shared } } } end
    sim:run(c, 2, rogue); sim:look(c)
    local i = c:info(s)
    return i.phase == "standalone" and i.discarded == 2 and not i.ready and #sim.violations > 0,
        ("phase %s discarded %d violations %d"):format(tostring(i.phase), i.discarded, #sim.violations)
end)

check("SMT: an N job on other cores of the LLC is fine, one on the job's own cores (shared step) is not", function()
    local sim = Sim.new(smt4x2())
    local c = ch.new()
    local n = sim:add(app("ep"))
    sim:run(c, 3)
    local s = sim:add(app("stream"), 2)
    local rogue = function(_, _, part) return { jobs = { part.jobs[1], { id = n, cpus = { 2, 3, 6, 7 } } } } end
    local sib = function(_, _, part) return { jobs = { part.jobs[1], { id = n, cpus = { 2, 3, 5 } } } } end
    sim:run(c, 1, rogue); sim:look(c)
    local ok = c:info(s).discarded == 0
    -- the job holds whole cores {0,4} and {1,5}: cpu 5 can only be reached by
    -- sharing its cpus (a shared = true step), which the module must reject
    local snap = sim:look(c)
    local part = c:plan_step(snap)
    sim:execute(sib(nil, nil, part))
    sim:look(c)
    return ok and c:info(s).discarded == 1, "discarded " .. c:info(s).discarded
end)

check("a job run on other cpus than asked is discarded, not counted", function()
    local sim, c, id = flat8_with("ep")
    sim:run(c, 1, function() return { jobs = { { id = id, cpus = { 0, 1, 2 } } } } end)
    sim:look(c)
    local i = c:info(id)
    return i.discarded == 1 and i.phase == "standalone"
end)

-- ------------------------------------------------------------------ placements: no overlap, within budget
check("2x2x4, 7 jobs, budget = LLCs 2-4: one placement per LLC, all inside the budget, all characterized",
    function()
        local sim = Sim.new(pk2l2c4(), { budget = { 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 } })
        local c = ch.new()
        local ids = {}
        local apps = { { "stream", 8 }, { "3mm", 4 }, { "ep", 2 }, { "gemm", 16 }, { "jacobi", 3 },
                       { "doitgen", 1 }, { "mvt", 4 } }
        for _, a in ipairs(apps) do ids[#ids + 1] = sim:add(app(a[1]), a[2]) end
        local maxp = 0
        for _ = 1, 12 do
            local part = sim:epoch_(c)
            maxp = math.max(maxp, #part.jobs)
        end
        sim:look(c)
        local bad = {}
        for k, id in ipairs(ids) do
            local i = c:info(id)
            if not i.ready or i.class ~= row[apps[k][1]].class then
                bad[#bad + 1] = apps[k][1] .. " " .. i.class .. " ready " .. tostring(i.ready)
            end
        end
        return #sim.violations == 0 and #bad == 0 and maxp == 3,
            ("max placements %d; %s; %s"):format(maxp, table.concat(bad, ", "),
                table.concat(sim.violations, "; "))
    end)

check("budget cutting an LLC: 2 cpus of LLC 2 give k = 2 there, placements stay inside", function()
    local sim = Sim.new(pk2l2c4(), { budget = { 0, 1, 2, 3, 4, 5 } })
    local c = ch.new()
    local a = sim:add(app("stream"), 8)
    local b = sim:add(app("ep"), 8)
    local part = sim:epoch_(c)
    sim:run(c, 2); sim:look(c)
    return #part.jobs == 2 and list_eq(part.jobs[1].cpus, { 0, 1, 2, 3 }) and list_eq(part.jobs[2].cpus, { 4, 5 })
        and list_eq(part.left, {}) and list_eq(part.shared, {}) and c:info(b).cores_standalone == 2
        and c:info(a).cores_standalone == 4 and #sim.violations == 0,
        fmt_list(part.jobs[1].cpus) .. " " .. fmt_list(part.jobs[2] and part.jobs[2].cpus or {}) ..
        " " .. table.concat(sim.violations, "; ")
end)

check("best fit: a 2-thread job takes the smaller free domain, leaving the whole LLC to the big one", function()
    local sim = Sim.new(pk2l2c4(), { budget = { 0, 1, 2, 3, 4, 5 } })
    local c = ch.new()
    local a = sim:add(app("ep"), 2)
    local b = sim:add(app("stream"), 8)
    local part = sim:epoch_(c)
    local pa, pb
    for _, e in ipairs(part.jobs) do
        if e.id == a then pa = e.cpus else pb = e.cpus end
    end
    return pa and pb and list_eq(pa, { 4, 5 }) and list_eq(pb, { 0, 1, 2, 3 }),
        fmt_list(pa or {}) .. " " .. fmt_list(pb or {})
end)

check("a budget cpu that is not managed is refused", function()
    local sim = Sim.new(flat8())
    local c = ch.new()
    sim:add(app("ep"))
    local snap = sim:look(c)
    local ok, err = pcall(c.plan_step, c, snap, { 0, 9 })
    return not ok and tostring(err):find("characterize: plan_step: budget cpu 9 is not managed (managed: 0-7)", 1, true),
        tostring(err)
end)

check("placements never overlap and stay in the budget over a long mixed run (2x2x4)", function()
    local sim = Sim.new(pk2l2c4(), { budget = { 0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15 } })
    local c = ch.new()
    local names = { "stream", "3mm", "ep", "gemm", "jacobi", "doitgen", "mvt", "syrk", "trisolv" }
    for k = 1, 5 do sim:add(app(names[k]), (k % 3 + 1) * 2) end
    for e = 1, 40 do
        if e == 7 then sim:add(app(names[6]), 4) end
        if e == 9 then sim:remove(2) end
        if e == 13 then sim:add(app(names[7]), 16); sim:add(app(names[8]), 1) end
        if e == 20 then sim:job(1).ipc_mult = 0.6 end
        sim:epoch_(c)
    end
    sim:look(c)
    local notready = {}
    for _, j in ipairs(sim.jobs) do
        if not c:info(j.id).ready then notready[#notready + 1] = j.id end
    end
    return #sim.violations == 0 and #notready == 0 and c:info(1).recharacterizations >= 1,
        table.concat(sim.violations, "; ") .. " not ready " .. fmt_list(notready)
end)

-- ------------------------------------------------------------------ LLC events owned per domain (AMD L3 PMU)
check("LLC events counted per domain: the module switches to whole-domain standalone placements", function()
    local sim = Sim.new(flat8())
    sim.uncore_llc = true
    local c = ch.new()
    local id = sim:add(app("stream"), 4)
    local p1 = sim:epoch_(c)
    local p2 = sim:epoch_(c)
    sim:run(c, 2); sim:look(c)
    local i = c:info(id)
    return list_eq(p1.jobs[1].cpus, { 0, 1, 2, 3 }) and #p2.jobs[1].cpus == 8 and list_eq(p2.shared, {})
        and i.ready and i.class == "S" and i.cores_standalone == 4 and i.cores_folded == 2
        and i.discarded == 1 and not i.degraded and near(i.bw.llc, 10.411 * 0.5 ^ 0),
        ("%s %s class %s cores %s discarded %d"):format(fmt_list(p1.jobs[1].cpus), fmt_list(p2.jobs[1].cpus),
            i.class, tostring(i.cores_standalone), i.discarded)
end)

-- ------------------------------------------------------------------ API contract
check("plan_step before update in an epoch is an error", function()
    local sim = Sim.new(flat8())
    local c = ch.new()
    sim:add(app("ep"))
    local snap = sim:snapshot()
    local ok, err = pcall(c.plan_step, c, snap)
    return not ok and tostring(err):find("call c:update(snap) first", 1, true), tostring(err)
end)

check("update twice with the same snapshot consumes the step once", function()
    local sim, c, id = flat8_with("ep")
    sim:run(c, 1)
    local snap = sim:look(c)
    c:update(snap)
    c:update(snap)
    local i = c:info(id)
    sim:run(c, 1); sim:look(c)
    return i.phase == "standalone" and c:info(id).phase == "folded"
end)

check("info() returns a copy: changing it changes nothing", function()
    local i, _, c, id = characterize(app("ep"))
    i.class = "S"; i.bw.l1 = -1; i.ready = false
    local again = c:info(id)
    return again.class == "N" and again.bw.l1 > 0 and again.ready and c:info(12345) == nil
end)

check("a class hint is reported until measured, then the measurement wins", function()
    local sim = Sim.new(flat8())
    local c = ch.new()
    local id = sim:add(app("stream"), 8, "N")
    sim:look(c)
    local first = c:info(id)
    sim:run(c, 2); sim:look(c)
    local i = c:info(id)
    return first.class == "N" and first.hint == "N" and i.class == "S" and i.measured_class == "S"
end)

check("ch.job_ipc: nil when not counted, metrics.ipc x cpu/wall otherwise", function()
    return ch.job_ipc({ last = { counted = false, wall = 1, cpu = 4 } }) == nil
        and ch.job_ipc({ last = { counted = true, wall = 2, cpu = 8, metrics = { ipc = 0.5 } } }) == 2
        and ch.job_ipc({ last = { counted = true, wall = 1, cpu = 2,
                                  metrics = { instructions = 30, cycles = 10 } } }) == 6
        and ch.job_ipc({ frozen = true }) == nil
end)

check("snapshots are read-only proxies: the module never writes to them", function()
    -- every scenario above ran on proxies that raise on writes; one more with
    -- everything at once, checking nothing raised
    local sim = Sim.new(pk2l2c4())
    local c = ch.new()
    for _, n in ipairs({ "stream", "ep", "3mm", "gemm", "mvt" }) do sim:add(app(n), 4) end
    sim:run(c, 15)
    return #sim.violations == 0, table.concat(sim.violations, "; ")
end)

-- ------------------------------------------------------------------ determinism
check("deterministic: the same scenario twice gives the same placements and steps", function()
    local function scenario()
        local sim = Sim.new(pk2l2c4(), { budget = { 0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15 } })
        local c = ch.new()
        for k, n in ipairs({ "stream", "ep", "3mm", "gemm", "mvt", "doitgen" }) do sim:add(app(n), k * 2) end
        for e = 1, 25 do
            if e == 10 then sim:job(2).ipc_mult = 0.6 end
            if e == 12 then sim:remove(4) end
            sim:epoch_(c)
        end
        return table.concat(sim.trace, "\n")
    end
    local a, b = scenario(), scenario()
    return a == b and #a > 0
end)

-- ------------------------------------------------------------------ sandbox
check("module loads with only the sandbox's globals and sets none", function()
    local safe = { "assert", "error", "ipairs", "next", "pairs", "pcall", "select", "tonumber",
        "tostring", "type", "xpcall", "setmetatable", "getmetatable", "rawequal", "rawget",
        "rawlen", "rawset", "_VERSION" }
    local env, touched, loaded = {}, {}, {}
    for _, k in ipairs(safe) do env[k] = _G[k] end
    env.string, env.table, env.math, env.utf8 = string, table, math, utf8
    env.require = function(name)
        if loaded[name] == nil then
            local path = srcdir .. "/lua/" .. name:gsub("%.", "/") .. ".lua"
            local fh = assert(io.open(path, "r"))
            local src = fh:read("a")
            fh:close()
            loaded[name] = assert(load(src, "=" .. name, "t", env))(name)
        end
        return loaded[name]
    end
    setmetatable(env, {
        __index = function(_, k) touched[#touched + 1] = "read " .. tostring(k) end,
        __newindex = function(_, k) touched[#touched + 1] = "write " .. tostring(k) end,
    })
    local mod = env.require("cosched.characterize")
    local sim = Sim.new(pk2l2c4())
    local c = mod.new()
    sim:add(app("stream"), 4); sim:add(app("ep"), 8)
    sim:run(c, 6)
    sim:look(c)
    local ok = c:info(1).ready and c:info(2).ready
    return type(mod) == "table" and ok and #touched == 0, table.concat(touched, ", ")
end)

-- ------------------------------------------------------------------ stored profiles, results()
local function stored_of(i)
    return { class = i.class, ipc_standalone = i.ipc_standalone, ipc_folded = i.ipc_folded, fp = i.fp,
             mpki = i.mpki, bw = { l1 = i.bw.l1, l2 = i.bw.l2, llc = i.bw.llc }, gang_only = i.gang_only,
             cores_standalone = i.cores_standalone, cores_folded = i.cores_folded, age = 10 }
end

check("results(): a completed characterization once, with info()'s values, then nothing", function()
    local i, _, c, id = characterize(app("syrk"))
    local r = c:results()
    local again = c:results()
    local x = r[1]
    return #r == 1 and #again == 0 and x.id == id and x.class == i.class and x.class == "C"
        and near(x.ipc_standalone, i.ipc_standalone) and near(x.ipc_folded, i.ipc_folded)
        and near(x.fp, i.fp) and near(x.bw.llc, i.bw.llc) and near(x.mpki, i.mpki)
        and x.gang_only == false and x.degraded == false
        and x.cores_standalone == i.cores_standalone and x.cores_folded == i.cores_folded,
        ("#r %d, #again %d, class %s"):format(#r, #again, tostring(x and x.class))
end)

check("results(): nothing while characterizing", function()
    local sim = Sim.new(flat8())
    local c = ch.new()
    sim:add(app("stream"), 8)
    sim:run(c, 1)
    sim:look(c)
    return #c:results() == 0 and c:info(1).characterizing
end)

check("results(): a characterization given up without counters is degraded, class unknown", function()
    local sim = Sim.new(flat8())
    sim.pmu = false
    local c = ch.new()
    sim:add(app("stream"), 8, "S")
    sim:run(c, 3)
    sim:look(c)
    local r = c:results()
    return #r == 1 and r[1].degraded == true and r[1].class == "unknown" and r[1].ipc_standalone == nil
        and c:info(1).class == "S", #r == 1 and tostring(r[1].class) or ("#r " .. #r)
end)

-- gemm characterized once (i0), then a new gemm job seeded with that result
-- in job.stored: i0, sim, c, the job's id
local function seeded_gemm()
    local i0 = characterize(app("gemm"))
    local sim = Sim.new(flat8())
    local c = ch.new()
    local id = sim:add(app("gemm"), 8)
    sim:job(id).stored = stored_of(i0)
    return i0, sim, c, id
end

check("job.stored: the job is ready at once with the stored values, never placed", function()
    local i0, sim, c, id = seeded_gemm()
    local snap = sim:look(c)
    local part = c:plan_step(snap)
    local i = c:info(id)
    return #part.jobs == 0 and #c:pending(snap) == 0 and i.ready and i.stored and not i.characterizing
        and i.class == i0.class and near(i.ipc_standalone, i0.ipc_standalone)
        and near(i.fp, i0.fp) and near(i.bw.l2, i0.bw.l2) and i.cores_standalone == i0.cores_standalone
        and #c:results() == 0, ("placed %d, class %s, stored %s"):format(#part.jobs, i.class, tostring(i.stored))
end)

check("job.stored: the seeded job's phase change is detected and its new result handed back", function()
    local i0, sim, c, id = seeded_gemm()
    sim:job(id).ipc_mult = 0.5                -- not what was stored: a new phase
    sim:run(c, 2)
    sim:look(c)
    local started = c:info(id).characterizing
    sim:run(c, 4)
    sim:look(c)
    local r = c:results()
    return started and #r == 1 and r[1].id == id and near(r[1].ipc_standalone, i0.ipc_standalone * 0.5)
        and not c:info(id).stored, ("started %s, #r %d"):format(tostring(started), #r)
end)

check("job.stored with a class other than S, C, N is ignored: characterized as usual", function()
    local sim = Sim.new(flat8())
    local c = ch.new()
    local id = sim:add(app("stream"), 8)
    sim:job(id).stored = { class = "X", ipc_standalone = 1 }
    sim:look(c)
    return c:info(id).characterizing and not c:info(id).stored
end)

check("job.stored without bw or numbers: ready, class kept, measurements nil", function()
    local sim = Sim.new(flat8())
    local c = ch.new()
    local id = sim:add(app("stream"), 8)
    sim:job(id).stored = { class = "S", gang_only = true }
    sim:look(c)
    local i = c:info(id)
    return i.ready and i.class == "S" and i.gang_only and i.ipc_standalone == nil and i.bw.llc == nil
end)

-- ------------------------------------------------------------------ folded_phase = deferred
local DEFER = { folded_phase = "deferred" }

-- one job characterized alone with folded_phase = deferred, its result taken
local function deferred(beh)
    local i, sim, c, id, steps = characterize(beh, { params = DEFER })
    return i, sim, c, id, steps, c:results()
end

-- a policy: job a folded on cpus 0-3 and, when given, b on 4-7
local function folded_policy(a, b)
    return function()
        local jobs = { { id = a, cpus = { 0, 1, 2, 3 } } }
        if b then jobs[2] = { id = b, cpus = { 4, 5, 6, 7 } } end
        return { jobs = jobs }
    end
end

check("deferred: ready after the standalone phase, no folded quantum, the result handed back then", function()
    local i, sim, _, id, steps, r = deferred(app("3mm"))
    local folded = false
    for _, p in ipairs(sim.placed_phases) do if p == "folded" then folded = true end end
    return i.ready and steps == 2 and not folded and i.folded_pending and i.ipc_folded == nil
        and i.fp == nil and not i.gang_only and #r == 1 and r[1].ipc_folded == nil,
        ("steps %d folded %s pending %s #r %d"):format(steps, tostring(folded), tostring(i.folded_pending), #r)
end)

check("deferred: a folded step without a non-N co-runner in the LLC is the folded measurement (ep, FP 0.5)", function()
    local _, sim, c, id = deferred(app("ep"))
    sim:run(c, 1, folded_policy(id)); sim:look(c)
    local i = c:info(id)
    return not i.folded_pending and near(i.fp, 0.5) and i.cores_folded == 4 and not i.gang_only
        and #c:results() == 0, ("fp %s pending %s"):format(f(i.fp), tostring(i.folded_pending))
end)

-- 3mm, characterized (deferred), then folded beside stream, losing `contend`
-- of its IPC to it: its info, sim, c, its id and stream's
local function deferred_beside_stream(over)
    local sim, c = Sim.new(flat8()), ch.new(DEFER)
    local a = sim:add(app("3mm", over))
    local b = sim:add(app("stream"))
    sim:run(c, 4); sim:look(c)
    c:results()
    sim:run(c, 1, folded_policy(a, b)); sim:look(c)
    return c:info(a), sim, c, a, b
end

check("deferred: folded beside an S job and slowed within lock_slowdown: not lock-bound, no quantum spent", function()
    -- 3mm folded keeps 0.5 of its IPC, beside stream 0.9 of that: 2.2x < 2.5
    local i = deferred_beside_stream { contend = 0.9 }
    return i.ready and not i.characterizing and not i.gang_only and i.ipc_folded == nil and i.folded_pending,
        ("ready %s gang_only %s"):format(tostring(i.ready), tostring(i.gang_only))
end)

check("deferred: slowed beyond lock_slowdown beside a co-runner, the job is measured folded alone: contention, not locks", function()
    -- 0.5 x 0.6 = 0.3 of its IPC beside stream (3.3x): alone folded it keeps 0.5
    local i, sim, c, a = deferred_beside_stream { contend = 0.6 }
    local asked = i.characterizing and i.phase == "folded"
    local part = c:plan_step(sim:look(c))
    local alone = #part.jobs == 1 and part.jobs[1].id == a and #part.jobs[1].cpus == 4
    sim:run(c, 1); sim:look(c)
    local j = c:info(a)
    local r = c:results()
    return asked and alone and j.ready and not j.gang_only and near(j.fp, 0.5) and #r == 1 and r[1].id == a
        and near(r[1].ipc_folded, j.ipc_folded), ("asked %s alone %s fp %s #r %d"):format(tostring(asked),
        tostring(alone), f(j.fp), #r)
end)

check("deferred: a lock-bound C job (folded IPC 0.3x) is found gang_only, and its result handed back", function()
    local i = deferred_beside_stream { scale = function(k) return k >= 8 and 1 or 0.3 end }
    local _, sim, c, a = deferred_beside_stream { scale = function(k) return k >= 8 and 1 or 0.3 end }
    sim:run(c, 1); sim:look(c)
    local j = c:info(a)
    local r = c:results()
    return i.characterizing and j.gang_only and near(j.fp, 0.7) and #r == 1 and r[1].gang_only == true,
        ("gang_only %s fp %s #r %d"):format(tostring(j.gang_only), f(j.fp), #r)
end)

check("deferred: once cleared, a later slowdown beyond the bound beside a co-runner asks for nothing", function()
    local _, sim, c, a, b = deferred_beside_stream { contend = 0.9 }
    sim:job(a).ipc_mult = 0.6
    sim:run(c, 1, folded_policy(a, b)); sim:look(c)
    local i = c:info(a)
    return i.ready and not i.characterizing, tostring(i.phase)
end)

check("deferred: a stored profile without the folded reference takes it from the job's folded steps", function()
    local i0 = characterize(app("gemm"), { params = DEFER })
    local sim, c = Sim.new(flat8()), ch.new(DEFER)
    local id = sim:add(app("gemm"), 8)
    sim:job(id).stored = stored_of(i0)
    sim:look(c)
    local pending = c:info(id).folded_pending and c:info(id).ready
    sim:run(c, 1, folded_policy(id)); sim:look(c)
    local i = c:info(id)
    return pending and not i.folded_pending and near(i.fp, 0.5), ("pending %s fp %s"):format(tostring(pending), f(i.fp))
end)

check("deferred: a 6-thread job folded on 4 of 8 cores (flca's halves) is checked there: lock-bound, found gang_only", function()
    -- k_s = 6; the policy folds it on 4 cores, not ceil(6 / 2) = 3: the
    -- check must take the width it got (it never ran on 3 before the fix)
    local sim, c = Sim.new(flat8()), ch.new(DEFER)
    local a = sim:add(app("3mm", { scale = function(k) return k >= 6 and 1 or 0.3 end }), 6)
    local b = sim:add(app("stream"))
    sim:run(c, 4); sim:look(c)
    sim:run(c, 1, folded_policy(a, b)); sim:look(c)
    local asked = c:info(a).characterizing
    sim:run(c, 1); sim:look(c)
    local i = c:info(a)
    return asked and i.gang_only and i.cores_folded == 3, ("asked %s gang_only %s k_f %s"):format(tostring(asked),
        tostring(i.gang_only), tostring(i.cores_folded))
end)

check("deferred: a forced folded check without a measurement gives up without degrading the job, and is not asked again", function()
    local i, sim, c, a, b = deferred_beside_stream { contend = 0.6 }
    if not (i.characterizing and i.phase == "folded") then return false, "not asked" end
    for e = sim.epoch, sim.epoch + 2 do sim.uncounted[e] = true end
    sim:run(c, 3); sim:look(c)
    local j = c:info(a)
    sim:run(c, 2, folded_policy(a, b)); sim:look(c)
    local k = c:info(a)
    return j.ready and not j.degraded and not j.folded_pending and k.ready and not k.characterizing,
        ("ready %s degraded %s pending %s later %s"):format(tostring(j.ready), tostring(j.degraded),
        tostring(j.folded_pending), tostring(k.characterizing))
end)

check("alone (the default): a stored profile without the folded reference stays so", function()
    local i0 = characterize(app("gemm"), { params = DEFER })
    local sim, c = Sim.new(flat8()), ch.new()
    local id = sim:add(app("gemm"), 8)
    sim:job(id).stored = stored_of(i0)
    sim:run(c, 1, folded_policy(id)); sim:look(c)
    local i = c:info(id)
    return not i.folded_pending and i.fp == nil
end)

tap.finish()
