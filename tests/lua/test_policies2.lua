-- Tests of the policies of papers 004 (lua/policies/pmugroup.lua: PMU groups,
-- Park, Kim and Jeon) and 003 (lua/policies/cachefair.lua: cache-fair,
-- Fedorova, Seltzer and Smith) and of lua/cosched/regress.lua, on
-- deterministic fake snapshots (tests/lua/fakenode.lua).
-- Run: lua5.4 tests/lua/test_policies2.lua SRCDIR     (prints TAP; exit 1 on any failure)

local srcdir = arg[1] or "."
package.path = srcdir .. "/lua/?.lua;" .. srcdir .. "/tests/lua/?.lua;" .. package.path
local fake = require "fakenode"
local LOG = fake.library()

local regress = require "cosched.regress"

local tap = require "tap"
local check, results = tap.check, tap.results
local function near(x, y, eps) return type(x) == "number" and math.abs(x - y) <= (eps or 1e-9) end

local function load_policy(name, opts) return fake.load_policy(srcdir, name, opts) end

-- a local of the policy file, reached through the upvalues of plan() (tests only)
local function upvalue(fn, want, seen)
  seen = seen or {}
  if seen[fn] then return nil end
  seen[fn] = true
  for i = 1, 255 do
    local name, v = debug.getupvalue(fn, i)
    if not name then break end
    if name == want then return v end
    if type(v) == "function" then
      local r = upvalue(v, want, seen)
      if r ~= nil then return r end
    end
  end
  return nil
end

-- fakenode's snapshot with job priorities and names kept (its own sets priority = 0)
local function snapshot(node, params)
  node.epoch = node.epoch + 1
  local jobs = {}
  for i, j in ipairs(node.jobs) do
    jobs[i] = { id = j.id, name = j.name, threads = j.threads, class = j.class, priority = j.priority or 0,
                runs = 0, waited = j.waited, quanta_run = j.quanta_run, quanta_frozen = j.quanta_frozen,
                cpu_time = j.cpu_time, frozen = j.frozen, cpus = j.cpus, last = j.last }
  end
  return fake.ro { api = 1, epoch = node.epoch, now = node.now, quantum = node.quantum, params = params or {},
                   cpus = node.topo.cpus,
                   topology = { cores = node.topo.cores, llcs = node.topo.llcs, numa = node.topo.numa },
                   jobs = jobs }
end

local function llc_of(node)
  local m = {}
  for _, core in ipairs(node.topo.cores) do for _, pu in ipairs(core.pus) do m[pu] = core.llc end end
  return m
end

-- run one epoch: plan, validate, run; metrics(job, step, entry) may set job.last.metrics
local function epoch(node, p, params, metrics)
  local snap = snapshot(node, params)
  local plan = p.plan(snap)
  local ok, err = fake.validate(snap, plan)
  if not ok then error("epoch " .. snap.epoch .. ": " .. err, 0) end
  for _, step in ipairs(plan) do
    node:run { step }
    if metrics then
      for _, e in ipairs(step.jobs) do
        for _, j in ipairs(node.jobs) do if j.id == e.id then metrics(j, step, e) end end
      end
    end
  end
  return plan, snap
end

-- ------------------------------------------------------------------ regress (Eq. 1-2)
check("regress.fit: y = 0.5 x + 0.006 over ten points -> a = 0.5, b = 0.006", function()
  local xs, ys = {}, {}
  for i = 1, 10 do xs[i] = 0.002 * i; ys[i] = 0.5 * xs[i] + 0.006 end
  local a, b = regress.fit(xs, ys)
  return near(a, 0.5, 1e-12) and near(b, 0.006, 1e-12), ("a=%s b=%s"):format(a, b)
end)
check("Eq. 2: FairMissRate = b / (1 - a n): (0.5, 0.006, 1) -> 0.012; (0.2, 0.004, 3) -> 0.01", function()
  local f1 = regress.fair_miss_rate(0.5, 0.006, 1)
  local f3 = regress.fair_miss_rate(0.2, 0.004, 3)
  -- check the fixed point: a n F + b = F
  return near(f1, 0.012, 1e-15) and near(f3, 0.01, 1e-15) and near(0.5 * 1 * f1 + 0.006, f1, 1e-15), f1 .. " " .. f3
end)
check("regress: no fit when x does not vary or < 2 points; no fair point when 1 - a n <= 0 or F <= 0", function()
  return regress.fit({ 1, 1, 1 }, { 1, 2, 3 }) == nil and regress.fit({ 1 }, { 1 }) == nil
     and regress.fair_miss_rate(1, 0.01, 1) == nil and regress.fair_miss_rate(0.6, 0.01, 2) == nil
     and regress.fair_miss_rate(0.2, -0.01, 1) == nil
end)
check("regress.fit on noisy data = the textbook least squares (Eq. 1 fitted as in Sec. 3.2)", function()
  local xs, ys = { 1, 2, 3, 4, 5 }, { 2.2, 2.8, 3.6, 4.5, 5.1 }
  local a, b = regress.fit(xs, ys)
  -- sxy = 7.5, sxx = 10 -> a = 0.75; b = 3.64 - 0.75 * 3 = 1.39
  return near(a, 0.75, 1e-12) and near(b, 1.39, 1e-12), a .. " " .. b
end)

-- ------------------------------------------------------------------ pmugroup: groups from Table 1
-- Paper 004, Table 1: row = the application's influence on others (the
-- co-runner's performance, % of standalone), column = how it is influenced.
local APPS = { "lbm", "libqu", "lu.B", "sp.B", "ua.B", "sphinx", "omnet", "stream", "cann", "ferret", "grom" }
local T1 = {
  { 35.6, 47.2, 56.0, 76.9, 70.6, 46.2, 58.6, 60.5, 79.2, 93.8, 96.4 },
  { 51.7, 63.2, 65.0, 81.7, 76.5, 58.6, 62.6, 64.6, 73.0, 93.7, 94.7 },
  { 60.3, 72.7, 75.4, 87.6, 83.7, 77.6, 77.1, 77.6, 82.3, 96.0, 96.7 },
  { 72.2, 83.4, 83.6, 93.0, 89.2, 87.4, 85.9, 87.7, 89.6, 97.4, 97.4 },
  { 77.4, 82.7, 84.0, 92.4, 92.7, 88.5, 86.6, 87.3, 90.0, 97.4, 97.2 },
  { 80.4, 86.5, 85.5, 94.8, 90.7, 87.5, 89.5, 91.6, 95.1, 98.6, 97.5 },
  { 90.1, 88.4, 88.9, 96.3, 92.1, 93.0, 89.8, 93.1, 94.9, 98.4, 97.9 },
  { 92.8, 91.2, 91.9, 97.4, 93.6, 94.5, 91.0, 95.5, 93.8, 98.6, 97.7 },
  { 97.5, 92.9, 94.2, 98.5, 94.2, 98.0, 94.9, 96.4, 97.5, 98.3, 98.2 },
  { 97.7, 95.2, 95.5, 97.8, 95.9, 99.7, 97.2, 98.0, 99.1, 99.1, 97.5 },
  { 97.7, 96.4, 97.0, 98.9, 96.5, 99.8, 99.2, 99.5, 99.8, 99.3, 97.3 },
}
local ROWMEAN = { 66.0, 71.6, 81.0, 88.2, 89.0, 90.9, 93.3, 94.4, 96.6, 97.8, 98.7 }
local COLMEAN = { 77.6, 83.4, 83.4, 92.3, 88.8, 85.2, 84.8, 87.5, 90.3, 97.5, 97.1 }
-- Sec. 5.2: "The workloads for Group 1 are lbm, libquantum, and lu.B", "Group 2
-- workloads are sphinx, omnetpp, and streamcluster", "Group 3 workloads are
-- sp.B, ua.B, canneal, ferret, gromacs".
local PAPER = { lbm = 1, libqu = 1, ["lu.B"] = 1, sphinx = 2, omnet = 2, stream = 2,
                ["sp.B"] = 3, ["ua.B"] = 3, cann = 3, ferret = 3, grom = 3 }

local GROUP = function(...) return upvalue(select(1, load_policy("pmugroup")).plan, "impl").group_jobs(...) end
local function means()
  local rm, cm = {}, {}
  for i = 1, 11 do
    local r, c = 0, 0
    for j = 1, 11 do r = r + T1[i][j]; c = c + T1[j][i] end
    rm[i], cm[i] = r / 11, c / 11
  end
  return rm, cm
end
-- The printed means are the paper's own and differ from the matrix: lbm's
-- row sums to 721.0 (65.5 on average, printed 66.0) and libquantum's column
-- to 899.8 (81.8, printed 83.4).  The model below uses the matrix; this
-- check shows that the printed means give the same groups.
check("Table 1: recomputed means within 1.7 of the printed ones; the printed means give the same groups", function()
  local rm, cm = means()
  local worst = 0
  for i = 1, 11 do worst = math.max(worst, math.abs(rm[i] - ROWMEAN[i]), math.abs(cm[i] - COLMEAN[i])) end
  if worst > 1.7 then return false, "worst gap " .. worst end
  local l = {}
  for i = 1, 11 do l[i] = { id = i, orb = (100 - ROWMEAN[i]) / 100, refs = 100 - COLMEAN[i] } end
  local gt, gr = GROUP(l, "threshold", 0.15, 12), GROUP(l, "relative")
  for i = 1, 11 do
    if gt[i] ~= PAPER[APPS[i]] or gr[i] ~= PAPER[APPS[i]] then return false, APPS[i] end
  end
  return true, worst
end)

-- Workload model: orb_full per cycle = (100 - row mean) / 100 (influence on
-- others, Sec. 5.4.2), LLC refs per kilo-cycle = 100 - column mean (how much
-- it is influenced, Sec. 5.4.3); cycles 1e9 per step.
local rm, cm = means()
local function app_metrics(i, cycles)
  cycles = cycles or 1e9
  return { cycles = cycles, orb_full = (100 - rm[i]) / 100 * cycles, llc_refs = (100 - cm[i]) * cycles / 1000,
           ipc = 1.0, instructions = cycles }
end

local pg_impl
do
  local p = load_policy("pmugroup")
  pg_impl = upvalue(p.plan, "impl")
end

local function group_string(g, idx)
  local s = {}
  for _, i in ipairs(idx) do s[#s + 1] = APPS[i] .. "=" .. tostring(g[i]) end
  return table.concat(s, " ")
end
local function expect_paper(g, idx)
  for _, i in ipairs(idx) do
    if g[i] ~= PAPER[APPS[i]] then return false, group_string(g, idx) end
  end
  return true
end
local function entries_for(idx)
  local l = {}
  for _, i in ipairs(idx) do
    local r = pg_impl.rates_of(app_metrics(i))
    l[#l + 1] = { id = i, orb = r.orb, refs = r.refs }
  end
  return l
end
local ALL = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 }

check("pmugroup threshold (0.15, 12): Table 1's 11 apps fall in the paper's groups (lbm libqu lu.B | sphinx omnet stream | sp.B ua.B cann ferret grom)", function()
  return expect_paper(pg_impl.group_jobs(entries_for(ALL), "threshold", 0.15, 12), ALL)
end)
check("pmugroup relative: 11 apps -> thirds floor(11/3) = 3, 3, 5: the paper's groups", function()
  return expect_paper(pg_impl.group_jobs(entries_for(ALL), "relative"), ALL)
end)
check("pmugroup relative: the paper's nine-app example -> 3 / 3 / 3 (without ferret, gromacs)", function()
  local idx = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }
  local g = pg_impl.group_jobs(entries_for(idx), "relative")
  local n = { 0, 0, 0 }
  for _, i in ipairs(idx) do n[g[i]] = n[g[i]] + 1 end
  local ok = expect_paper(g, idx)
  return ok and n[1] == 3 and n[2] == 3 and n[3] == 3, group_string(g, idx)
end)
check("pmugroup relative is rank-based: a six-app mix {lbm, sp.B, sphinx, cann, ferret, grom} -> 2 / 2 / 2", function()
  local idx = { 1, 4, 6, 9, 10, 11 }
  local g = pg_impl.group_jobs(entries_for(idx), "relative")
  -- orb: lbm .34, sp.B .118 top two -> group 1; refs among the rest: sphinx 14.8, cann 9.7 -> group 2
  return g[1] == 1 and g[4] == 1 and g[6] == 2 and g[9] == 2 and g[10] == 3 and g[11] == 3, group_string(g, idx)
end)
check("pmugroup threshold on the same six: only lbm is group 1, sphinx group 2, the rest 3", function()
  local idx = { 1, 4, 6, 9, 10, 11 }
  local g = pg_impl.group_jobs(entries_for(idx), "threshold", 0.15, 12)
  return g[1] == 1 and g[6] == 2 and g[4] == 3 and g[9] == 3 and g[10] == 3 and g[11] == 3, group_string(g, idx)
end)
check("pmugroup rates are per cycle: the same app at 4x the cycles (4 threads) keeps its group", function()
  local a, b = pg_impl.rates_of(app_metrics(3, 1e9)), pg_impl.rates_of(app_metrics(3, 4e9))
  return near(a.orb, b.orb) and near(a.refs, b.refs) and near(a.orb, (100 - rm[3]) / 100, 1e-12)
end)
check("pmugroup without measurements: class hints S -> 1, C -> 2, N -> 3, none -> 3", function()
  local g = pg_impl.group_jobs({ { id = 1, class = "S" }, { id = 2, class = "C" }, { id = 3, class = "N" }, { id = 4 } },
                               "relative")
  return g[1] == 1 and g[2] == 2 and g[3] == 3 and g[4] == 3
end)
check("pmugroup rates_of: no orb_full (AMD) or no cycles -> not measured; cycles from instructions/ipc", function()
  return pg_impl.rates_of { cycles = 1e9, llc_refs = 1e6 } == nil and pg_impl.rates_of { orb_full = 1, llc_refs = 1 } == nil
     and near(pg_impl.rates_of({ instructions = 2e9, ipc = 2, orb_full = 1e8, llc_refs = 1e7 }).orb, 0.1)
end)

-- the policy end to end on a counted fake node running the 11 apps
local function apps_node(cores, llcs, variant)
  local p, params = load_policy("pmugroup", { variant = variant })
  local node = fake.node { cores = cores, llcs = llcs, quantum = 0.1, counters = true }
  for i = 1, 11 do node:add { name = APPS[i] } end
  local impl = upvalue(p.plan, "impl")
  local metrics = function(j) j.last.metrics = app_metrics(j.id, 1e8 * j.last.ncpus) end
  return p, params, node, impl, metrics
end

-- no LLC domain holds a group-1 and a group-2 job in one step; returns false, why
local function apart(node, plan, groups)
  local llc = llc_of(node)
  for s, step in ipairs(plan) do
    local has = {}
    for _, e in ipairs(step.jobs) do
      local g = groups[e.id]
      for _, c in ipairs(e.cpus) do
        local d = llc[c]
        has[d] = has[d] or {}
        has[d][g] = true
        if has[d][1] and has[d][2] then return false, ("step %d: llc %d has groups 1 and 2"):format(s, d) end
      end
    end
  end
  return true
end

for _, v in ipairs { "threshold", "relative" } do
  check(("pmugroup %s, end to end: after one epoch of counted steps the 11 apps have the paper's groups; groups 1 and 2 apart"):format(v), function()
    local p, params, node, impl, metrics = apps_node(16, 2, v)
    epoch(node, p, params, metrics)
    local plan = epoch(node, p, params, metrics)
    local g = impl.last_groups
    local ok, why = expect_paper(g, ALL)
    if not ok then return false, why end
    return apart(node, plan, g)
  end)
end

-- Without orb_full (AMD profiles): group 1 by memory bandwidth per core
-- (paper 004 Sec. 5.4.1-5.4.2: the event stood in for per-core bandwidth).
-- Workload model for the bandwidth (ours; the paper's Fig. 4 is not
-- tabulated): GB/s per core = orb x 40/3, so that the default bw_threshold
-- 2 GB/s sits where orb_threshold 0.15 does.
local function amd_metrics(i, ncpus, owned_extra)
  local m = app_metrics(i, 1e8 * ncpus)
  m.orb_full = nil
  local per_core = (100 - rm[i]) / 100 * 40 / 3
  m.bw_llc = per_core * ncpus
  m.mem_bw = per_core * ncpus + (owned_extra or 0)   -- socket scope: + the neighbours' traffic
  return m
end
check("pmugroup rates_of without orb_full: bw = bw_llc per core; mem_bw per core only when the job owned its socket", function()
  local m = amd_metrics(1, 8, 50)
  local a = pg_impl.rates_of(m, { socket_owned = false }, 8)
  local b = pg_impl.rates_of(m, { socket_owned = true }, 8)
  local c = pg_impl.rates_of({ cycles = 1e9, llc_refs = 1e6, mem_bw = 40 }, { socket_owned = false }, 4)
  local d = pg_impl.rates_of({ cycles = 1e9, llc_refs = 1e6, orb_full = 1e8, bw_llc = 8 }, nil, 4)
  return a and b and a.orb == nil and near(a.bw, (100 - rm[1]) / 100 * 40 / 3) and a.bw_src == "bw_llc"
     and near(b.bw, a.bw + 50 / 8) and b.bw_src == "mem_bw"
     and c == nil                                   -- socket-scope mem_bw of a shared socket is not the job's
     and d and near(d.orb, 0.1) and near(d.bw, 2),
     ("a %s b %s c %s"):format(a and a.bw, b and b.bw, tostring(c))
end)
check("pmugroup without orb_full: Table 1's 11 apps by bandwidth give the paper's groups (threshold 2 GB/s/core and relative)", function()
  local l = {}
  for i = 1, 11 do
    local r = pg_impl.rates_of(amd_metrics(i, 4), { socket_owned = false }, 4)
    l[i] = { id = i, orb = r.orb, bw = r.bw, refs = r.refs }
  end
  local gt, mt = pg_impl.group_jobs(l, "threshold", 0.15, 12, 2)
  local gr, mr = pg_impl.group_jobs(l, "relative")
  local ok, why = expect_paper(gt, ALL)
  if not ok then return false, "threshold: " .. why end
  ok, why = expect_paper(gr, ALL)
  if not ok then return false, "relative: " .. why end
  -- the threshold matters: at 3 GB/s/core lu.B (2.5) drops out of group 1
  local g3 = pg_impl.group_jobs(l, "threshold", 0.15, 12, 3)
  return mt == "bw" and mr == "bw" and g3[3] ~= 1 and g3[1] == 1, ("metrics %s %s, lu.B at 3: %s"):format(mt, mr, g3[3])
end)
check("pmugroup: orb and bw never ranked together - mixed measurements use the metric most jobs have", function()
  local l = { { id = 1, orb = 0.3, refs = 1 }, { id = 2, orb = 0.01, refs = 1 }, { id = 3, bw = 99, refs = 1, class = "N" } }
  local g, m = pg_impl.group_jobs(l, "threshold", 0.15, 12, 2)
  return m == "orb" and g[1] == 1 and g[2] == 3 and g[3] == 3, ("%s %s %s %s"):format(m, g[1], g[2], g[3])
end)
check("pmugroup end to end on an AMD-like node (no orb_full, bw_llc counted): the paper's groups, 1 and 2 apart", function()
  local p, params = load_policy("pmugroup")
  local node = fake.node { cores = 16, llcs = 2, quantum = 0.1, counters = true }
  for i = 1, 11 do node:add { name = APPS[i] } end
  local impl = upvalue(p.plan, "impl")
  local metrics = function(j) j.last.metrics = amd_metrics(j.id, j.last.ncpus) end
  epoch(node, p, params, metrics)
  local plan = epoch(node, p, params, metrics)
  local ok, why = expect_paper(impl.last_groups, ALL)
  if not ok then return false, why end
  if impl.last_metric ~= "bw" then return false, "metric " .. tostring(impl.last_metric) end
  return apart(node, plan, impl.last_groups)
end)

-- pmugroup's plan of one epoch on a node of CORES cores and LLCS LLCs with one
-- job per class of CLASSES: the plan and the node
local function pmugroup_plan(cores, llcs, classes)
  local p, params = load_policy("pmugroup")
  local node = fake.node { cores = cores, llcs = llcs }
  for _, c in ipairs(classes) do node:add { class = c } end
  return epoch(node, p, params), node
end

-- the LLC of each job's first cpu in the plan's first step, by job id
local function first_step_llcs(node, plan)
  local llc, dom = llc_of(node), {}
  for _, e in ipairs(plan[1].jobs) do dom[e.id] = llc[e.cpus[1]] end
  return dom
end

check("pmugroup placement, 8 cores / 2 LLCs, {S,S,C,C}: one step, group 1 on one LLC, group 2 on the other", function()
  local plan, node = pmugroup_plan(8, 2, { "S", "S", "C", "C" })
  if #plan ~= 1 or #plan[1].jobs ~= 4 then return false, #plan .. " steps" end
  local dom = first_step_llcs(node, plan)
  return dom[1] == dom[2] and dom[3] == dom[4] and dom[1] ~= dom[3]
end)
check("pmugroup placement, 8 cores / 2 LLCs, {S,S,N,N}: group 1 spread, one per LLC, group 3 on the empty cores", function()
  local plan, node = pmugroup_plan(8, 2, { "S", "S", "N", "N" })
  local dom = first_step_llcs(node, plan)
  return #plan == 1 and dom[1] ~= dom[2] and dom[3] ~= dom[4]
end)
check("pmugroup placement, single LLC, {S,C,N,N}: apart in time - S and C in different steps, N fill", function()
  local plan, node = pmugroup_plan(8, 1, { "S", "C", "N", "N" })
  local step_of = {}
  for s, step in ipairs(plan) do for _, e in ipairs(step.jobs) do step_of[e.id] = s end end
  return #plan == 2 and step_of[1] ~= step_of[2] and #plan[1].jobs == 2 and #plan[2].jobs == 2,
    ("%d steps"):format(#plan)
end)
check("pmugroup: bad parameters are refused in init()", function()
  for _, o in ipairs { { variant = "x" }, { orb_threshold = "-1" }, { llc_threshold = "abc" }, { per_llc = "0" },
                       { per_llc = "1.5" } } do
    if pcall(load_policy, "pmugroup", o) then return false, "accepted " .. next(o) end
  end
  return true
end)

-- ------------------------------------------------------------------ cachefair
-- Constructed workload: job A (cache-fair) has miss rate y = 0.5 x + 0.006
-- (x = sum of its co-runners' misses per cycle), IPC = 1.2 - 20 y; the
-- best-effort jobs have fixed miss rates.  Eq. 2 with n = 1 co-runner:
-- FairMissRate = 0.006 / (1 - 0.5) = 0.012, IPC_fair = 1.2 - 20 x 0.012 = 0.96.
local BE_MPC = { 0.002, 0.004, 0.008, 0.012, 0.016 }
local function cf_node(o)
  o = o or {}
  local node = fake.node { cores = o.cores or 8, llcs = o.llcs or 1, quantum = 0.1, counters = true }
  node:add { name = "A" }
  for i = 1, o.nbe or 5 do node:add { name = "be" .. i } end
  return node
end
-- metrics after each step; hook(j) may change wall/instructions
local function cf_metrics(node, st, hook)
  local llc = llc_of(node)
  return function(j, step, e)
    local cyc = 1e8 * j.last.ncpus
    local mine = llc[e.cpus[1]]
    local y, ipc
    if j.id == 1 then
      local x = 0
      for _, o in ipairs(step.jobs) do
        if o.id ~= 1 and llc[o.cpus[1]] == mine then x = x + BE_MPC[o.id - 1] end
      end
      y = 0.5 * x + 0.006
      ipc = 1.2 - 20 * y
      st.x, st.y, st.ipc = x, y, ipc
    else
      y, ipc = BE_MPC[j.id - 1] or 0.005, 1.0
    end
    j.last.metrics = { cycles = cyc, instructions = ipc * cyc, ipc = ipc, llc_misses = y * cyc }
    if hook then hook(j) end
  end
end

-- cachefair with job A cache-fair (and opts), its state S and the node of
-- cf_node: p, params, S, node, st (the per-job state cf_metrics keeps)
local function cf_policy(opts)
  opts = opts or {}
  opts.fair = "A"
  local p, params = load_policy("cachefair", opts)
  return p, params, upvalue(p.plan, "S"), cf_node(), {}
end

check("cachefair: fair miss rate from Eq. 2 on the constructed regression = 0.012 exactly, fair IPC 0.96, after 10 samples", function()
  LOG = fake.log_reset()
  local p, params, S, node, st = cf_policy()
  local m = cf_metrics(node, st)
  local at
  for e = 1, 200 do
    local before = S.est[1] and #S.est[1].samples or 0
    epoch(node, p, params, m)
    if S.est[1].phase == "scheduling" then at = before break end
  end
  if at ~= 9 then return false, "estimated after " .. tostring(at) .. " samples, want the 10th" end
  local e = S.est[1]
  local logged = false
  for _, l in ipairs(LOG) do if l:find("fair miss rate 0.012 ", 1, true) then logged = true end end
  return e.phase == "scheduling" and near(e.a, 0.5, 1e-9) and near(e.b, 0.006, 1e-12) and near(e.fair_mr, 0.012, 1e-12)
     and near(e.ipc_fair, 0.96, 1e-9) and #e.samples == 10 and logged,
     ("a=%s b=%s fair=%s ipc_fair=%s samples=%d logged=%s"):format(e.a, e.b, e.fair_mr, e.ipc_fair, #e.samples, logged)
end)

check("cachefair sampling rules: no estimate with 9 samples; steps under half a quantum and runs under 1e7 instructions are discarded", function()
  local p, params, S, node, st = cf_policy()
  local runs = 0
  local hook = function(j)
    if j.id == 1 then
      runs = runs + 1
      if runs % 3 == 1 then j.last.wall = 0.04 end                 -- < 0.05 s: discarded
      if runs % 3 == 2 then                                         -- 5e6 instructions: discarded
        j.last.metrics.instructions = 5e6
      end
    end
  end
  local m = cf_metrics(node, st, hook)
  local max_before = 0
  for _ = 1, 400 do
    epoch(node, p, params, m)
    if S.est[1].phase == "sampling" then
      max_before = math.max(max_before, #S.est[1].samples)
    else
      break
    end
  end
  local e = S.est[1]
  return e.phase == "scheduling" and max_before == 9 and #e.samples == 10 and (e.discarded or 0) >= 18
     and near(e.fair_mr, 0.012, 1e-12),
     ("phase=%s max_before=%d samples=%d discarded=%s"):format(e.phase, max_before, #e.samples, tostring(e.discarded))
end)

-- The engine runs its fallback (every job on every cpu) when plan() fails or
-- its plan is refused.  The step measured then is not the planned one: its
-- samples must not be paired with the co-runners of the plan.  Here every
-- third epoch the plan is made but the fallback runs (refused plan), and
-- every seventh plan() "fails" (the epoch is counted, no plan is made); in
-- the fallback A's miss rate follows from all five co-runners at once.
check("cachefair: fallback steps (plan refused or plan() failed) are not sampled: Eq. 2 still gives 0.012, credits refunded", function()
  local p, params, S, node, st = cf_policy()
  local m = cf_metrics(node, st)
  local fallbacks, observed, after_fallback = 0, 0, false
  local function fallback()
    local step = { jobs = {}, shared = true }
    for _, j in ipairs(node.jobs) do step.jobs[#step.jobs + 1] = { id = j.id, cpus = node.topo.cpus } end
    node:run { step }
    for _, e in ipairs(step.jobs) do
      for _, j in ipairs(node.jobs) do if j.id == e.id then m(j, step, e) end end
    end
    fallbacks = fallbacks + 1
  end
  for e = 1, 400 do
    -- a plan() that comes right after a fallback step sees it (and only then)
    if e % 7 ~= 0 and after_fallback then observed = observed + 1 end
    after_fallback = e % 7 == 0 or e % 3 == 0
    if e % 7 == 0 then
      snapshot(node, params)                 -- plan() failed: the epoch counts, nothing planned
      fallback()
    elseif e % 3 == 0 then
      local snap = snapshot(node, params)
      assert(fake.validate(snap, p.plan(snap)))
      fallback()                             -- planned, refused: the fallback ran instead
    else
      epoch(node, p, params, m)
    end
    if S.est[1].phase == "scheduling" then break end
  end
  local e = S.est[1]
  local credits_ok = true
  for _, c in pairs(S.credit) do if math.abs(c) > 3 then credits_ok = false end end
  return e.phase == "scheduling" and near(e.fair_mr, 0.012, 1e-12) and near(e.a, 0.5, 1e-9)
     and S.foreign == observed and fallbacks > 5 and credits_ok,
     ("phase=%s fair=%s a=%s foreign=%s observed=%d fallbacks=%d"):format(e.phase, tostring(e.fair_mr),
       tostring(e.a), tostring(S.foreign), observed, fallbacks)
end)

check("cachefair compensation: owed = IPC_fair/IPC - 1 quanta for A, taken from the 5 best-effort jobs in equal parts, sums to 0", function()
  local p, params, S, node, st = cf_policy()
  local m = cf_metrics(node, st)
  for _ = 1, 200 do
    epoch(node, p, params, m)
    if S.est[1].phase == "scheduling" then break end
  end
  -- run until A runs again, then observe that run's adjustment
  local checked = 0
  for _ = 1, 50 do
    S.last_comp = nil
    local plan = epoch(node, p, params, m)
    local ran = false
    for _, e in ipairs(plan[1].jobs) do if e.id == 1 then ran = true end end
    if ran then
      local want = 0.96 / st.ipc - 1
      epoch(node, p, params, m)
      local c = S.last_comp
      if not c then return false, "no compensation" end
      local sum = 0
      for _, v in pairs(c) do sum = sum + v end
      for id = 2, 6 do
        if not near(c[id], -want / 5, 1e-12) then return false, ("be %d: %s want %s"):format(id, c[id], -want / 5) end
      end
      if not near(c[1], want, 1e-12) or not near(sum, 0, 1e-12) then
        return false, ("A: %s want %s, sum %s"):format(c[1], want, sum)
      end
      checked = checked + 1
      if checked >= 3 then return true end
    end
  end
  return false, "A ran " .. checked .. " times"
end)

check("cachefair: A below its fair IPC gets more CPU time than each best-effort job; best-effort jobs still run", function()
  -- best-effort co-runners all high-miss: A's IPC stays below fair
  local save = BE_MPC
  BE_MPC = { 0.03, 0.03, 0.03, 0.03, 0.03 }
  local ok, res, why = pcall(function()
    local p, params, S, node, st = cf_policy({ min_samples = 3 })
    -- sampling needs varying co-runners: vary them for the first epochs
    local m = cf_metrics(node, st)
    local e0
    for e = 1, 600 do
      if e == 60 then
        e0 = {}
        for _, j in ipairs(node.jobs) do e0[j.id] = j.quanta_run end
      end
      if e < 60 then BE_MPC = { 0.002, 0.006, 0.01, 0.02, 0.03 } else BE_MPC = { 0.03, 0.03, 0.03, 0.03, 0.03 } end
      epoch(node, p, params, m)
    end
    local runs = {}
    for _, j in ipairs(node.jobs) do runs[j.id] = j.quanta_run - e0[j.id] end
    local be_max = 0
    for id = 2, 6 do be_max = math.max(be_max, runs[id]) end
    -- 540 steps x 2 slots / 6 jobs = 180 fair; A is owed IPC_fair/IPC - 1 > 0
    local s = ("A %d, best-effort %d %d %d %d %d, phase %s"):format(runs[1], runs[2], runs[3], runs[4], runs[5], runs[6], S.est[1].phase)
    return runs[1] > be_max + 10 and runs[2] > 100, s
  end)
  BE_MPC = save
  if not ok then error(res, 0) end
  return res, why
end)

check("cachefair without counters: fair round robin (each job's quanta within 1 of the others) and one log line", function()
  LOG = fake.log_reset()
  local p, params = load_policy("cachefair")
  local node = fake.node { cores = 8, llcs = 1 }
  for i = 1, 5 do node:add {} end
  for _ = 1, 50 do epoch(node, p, params) end
  local lo, hi = math.huge, 0
  for _, j in ipairs(node.jobs) do lo, hi = math.min(lo, j.quanta_run), math.max(hi, j.quanta_run) end
  local n = 0
  for _, l in ipairs(LOG) do if l:find("fair round robin", 1, true) then n = n + 1 end end
  return hi - lo <= 1 and lo == 20 and n == 1, ("quanta %d..%d, logged %d"):format(lo, hi, n)
end)

check("cachefair with many jobs (selection of the running ones): 100 jobs, 2 per step, 300 epochs: each runs 6 times, +-1", function()
  local p, params = load_policy("cachefair")
  local node = fake.node { cores = 8, llcs = 1, quantum = 0.1 }
  for _ = 1, 100 do node:add {} end
  local runs = {}
  for _ = 1, 300 do
    local ran = epoch(node, p, params)
    for _, step in ipairs(ran) do for _, x in ipairs(step.jobs) do runs[x.id] = (runs[x.id] or 0) + 1 end end
  end
  local lo, hi = math.huge, 0
  for id = 1, 100 do lo, hi = math.min(lo, runs[id] or 0), math.max(hi, runs[id] or 0) end
  return lo >= 5 and hi <= 7, ("runs %d..%d"):format(lo, hi)
end)
check("cachefair: fair = priority makes jobs with priority > 0 cache-fair, others best-effort", function()
  local p, params = load_policy("cachefair")
  local S = upvalue(p.plan, "S")
  local node = fake.node { cores = 4, llcs = 1 }
  node:add {}; node:add {}; node:add {}
  node.jobs[2].priority = 1
  epoch(node, p, params)
  return S.est[2] ~= nil and S.est[1] == nil and S.est[3] == nil
end)

check("cachefair: co-runners share the LLC: on 8 cores / 2 LLCs, 6 jobs, each LLC holds 2 jobs on interleaved cores", function()
  local p, params = load_policy("cachefair")
  local node = fake.node { cores = 8, llcs = 2 }
  for _ = 1, 6 do node:add {} end
  local plan = epoch(node, p, params)
  local llc, per = llc_of(node), {}
  for _, e in ipairs(plan[1].jobs) do
    local d = llc[e.cpus[1]]
    for _, c in ipairs(e.cpus) do if llc[c] ~= d then return false, "job spans LLCs" end end
    per[d] = (per[d] or 0) + 1
  end
  return #plan[1].jobs == 4 and per[1] == 2 and per[2] == 2
end)

check("cachefair: bad parameters are refused in init()", function()
  for _, o in ipairs { { corun = "1" }, { missrate = "x" }, { min_samples = "1" }, { be_share = "1" },
                       { resample = "0" }, { max_adjust = "-1" }, { fair = "," } } do
    if pcall(load_policy, "cachefair", o) then return false, "accepted " .. next(o) end
  end
  return true
end)

-- ------------------------------------------------------------------ property tests
local cpus_mod
local TOPOS = { { 2, 1 }, { 8, 1 }, { 8, 2 }, { 8, 8 }, { 64, 1 }, { 64, 2 }, { 64, 8 },
                { 256, 1 }, { 256, 2 }, { 256, 4 }, { 256, 8 } }

-- pmugroup: valid plans (no cpu twice), groups 1 and 2 never in one LLC in a
-- step, every job runs in every epoch; hints or random counted metrics
local function prop_pmugroup(variant, counted, seeds, epochs)
  for _, topo in ipairs(TOPOS) do
    for seed = 1, seeds do
      math.randomseed(seed * 7919 + topo[1] * 31 + topo[2])
      local per = math.random(1, 3)
      local p, params = load_policy("pmugroup", { variant = variant, per_llc = per })
      local impl = upvalue(p.plan, "impl")
      local node = fake.node { cores = topo[1], llcs = topo[2], counters = counted }
      local n = math.random(1, 12)
      local prof = {}
      for i = 1, n do
        node:add { class = ({ "S", "C", "N", false })[math.random(1, 4)] or nil }
        prof[i] = math.random(1, 11)
      end
      local metrics = counted and function(j) j.last.metrics = app_metrics(prof[j.id], 1e8 * j.last.ncpus) end or nil
      for e = 1, epochs do
        local plan = epoch(node, p, params, metrics)
        local ok, why = apart(node, plan, impl.last_groups)
        if not ok then error(("%d cores/%d llcs seed %d: %s"):format(topo[1], topo[2], seed, why), 0) end
        local ran = {}
        for _, step in ipairs(plan) do for _, x in ipairs(step.jobs) do ran[x.id] = true end end
        for _, j in ipairs(node.jobs) do
          if not ran[j.id] then
            error(("%d cores/%d llcs seed %d epoch %d: job %d did not run"):format(topo[1], topo[2], seed, e, j.id), 0)
          end
        end
      end
    end
  end
  return true
end

-- pmugroup's epoch builder keeps the pending jobs in three queues (O(n G));
-- it must give exactly the steps of the plain greedy scan it replaced (every
-- pending job, in rotation order, placed where it may go, each step), kept
-- here as the reference.
local function reference_build(snap, order, grp, per_llc, ncores_of, split_of, domains)
  local n = #order
  local G = math.max(1, math.min(domains, n))
  local groups = (G == 1) and { cpus_mod.copy(snap.cpus) } or split_of(G, "llc")
  G = #groups
  local cap = {}
  for i, gc in ipairs(groups) do cap[i] = math.max(1, math.min(per_llc, ncores_of(gc))) end
  local pending = {}
  for i, j in ipairs(order) do pending[i] = j end
  local steps = {}
  while #pending > 0 and #steps < 1024 do
    local c1, c2, first12 = 0, 0, nil
    for _, j in ipairs(pending) do
      local g = grp[j.id]
      if g == 1 then c1 = c1 + 1 elseif g == 2 then c2 = c2 + 1 end
      if not first12 and g ~= 3 then first12 = g end
    end
    local color = {}
    if c1 > 0 and c2 > 0 then
      if G == 1 then color[1] = first12
      else
        local g1 = math.max(1, math.min(G - 1, math.floor(G * c1 / (c1 + c2) + 0.5)))
        for i = 1, G do color[i] = (i <= g1) and 1 or 2 end
      end
    elseif c1 > 0 or c2 > 0 then
      for i = 1, G do color[i] = (c1 > 0) and 1 or 2 end
    end
    local members, left = {}, {}
    for i = 1, G do members[i] = {} end
    for _, j in ipairs(pending) do
      local g = grp[j.id]
      local best
      for i = 1, G do
        if #members[i] < cap[i] and (g == 3 or color[i] == nil or color[i] == g) then
          if not best or #members[i] < #members[best]
              or (#members[i] == #members[best] and g == 3 and color[i] == 2 and color[best] ~= 2) then
            best = i
          end
        end
      end
      if best then local m = members[best]; m[#m + 1] = j.id else left[#left + 1] = j end
    end
    local ids = {}
    for i = 1, G do ids[i] = table.concat(members[i], ",") end
    steps[#steps + 1] = table.concat(ids, "|")
    pending = left
  end
  return steps
end

check("pmugroup build (queues by group) gives the steps of the plain greedy scan: 400 random epochs, 2-256 cores x 1-8 LLCs", function()
  local pairing = require "cosched.pairing"
  cpus_mod = require "cosched.cpus"
  for seed = 1, 400 do
    math.randomseed(seed)
    local topo = TOPOS[seed % #TOPOS + 1]
    local per = math.random(1, 3)
    local p = load_policy("pmugroup", { per_llc = per })
    local impl = upvalue(p.plan, "impl")
    local node = fake.node { cores = topo[1], llcs = topo[2] }
    local n = math.random(1, 40)
    local grp, order = {}, {}
    for i = 1, n do node:add {}; grp[i] = math.random(1, 3) end
    local snap = snapshot(node, fake.ro {})
    for i, j in ipairs(snap.jobs) do order[i] = j end
    for i = n, 2, -1 do local k = math.random(1, i); order[i], order[k] = order[k], order[i] end
    local got = {}
    for k, st in ipairs(impl.build(snap, order, grp, per)) do
      local byg = {}
      -- regroup the step's jobs by the LLC group their cpus are in
      local groups = (math.max(1, math.min(pairing.domains(snap, snap.cpus), n)) == 1) and { snap.cpus }
        or cpus_mod.split(snap, math.max(1, math.min(pairing.domains(snap, snap.cpus), n)), "llc")
      for gi, gc in ipairs(groups) do
        local set, ids = cpus_mod.set(gc), {}
        for _, e in ipairs(st.jobs) do if set[e.cpus[1]] then ids[#ids + 1] = e.id end end
        byg[gi] = table.concat(ids, ",")
      end
      got[k] = table.concat(byg, "|")
    end
    local ncores_of = function(gc) local s = cpus_mod.set(gc); local c = 0
      for _, core in ipairs(snap.topology.cores) do if s[core.pus[1]] then c = c + 1 end end
      return math.max(c, math.min(#gc, 1)) end
    local want = reference_build(snap, order, grp, per, ncores_of,
      function(k, by) return (cpus_mod.split(snap, k, by)) end, pairing.domains(snap, snap.cpus))
    if #got ~= #want then return false, ("seed %d: %d steps, want %d"):format(seed, #got, #want) end
    for k = 1, #want do
      if got[k] ~= want[k] then return false, ("seed %d step %d: %s, want %s"):format(seed, k, got[k], want[k]) end
    end
  end
  return true
end)

for _, v in ipairs { "threshold", "relative" } do
  check(("property pmugroup %s (hints): no cpu twice, groups 1/2 never share an LLC in a step, every job runs every epoch, 2-256 cores x 1-8 LLCs"):format(v),
    function() return prop_pmugroup(v, false, 4, 6) end)
  check(("property pmugroup %s (counted, Table 1 apps at random): the same"):format(v),
    function() return prop_pmugroup(v, true, 4, 6) end)
end

-- cachefair: valid plans and no job waits more than its bound:
-- without counters 2 ceil(n / S) + 1 steps; with compensation best-effort
-- jobs keep (1 - be_share) of their share: 2 ceil(n / (S (1 - be_share))) + 1
local function prop_cachefair(counted, seeds, epochs)
  local worst = 0
  for _, topo in ipairs(TOPOS) do
    for seed = 1, seeds do
      math.randomseed(seed * 104729 + topo[1] * 17 + topo[2])
      local n = math.random(1, 12)
      local nf = math.random(0, n)
      local names = {}
      for i = 1, nf do names[#names + 1] = "job" .. i end
      local p, params = load_policy("cachefair", { fair = nf > 0 and table.concat(names, ",") or "nobody", min_samples = 3 })
      local node = fake.node { cores = topo[1], llcs = topo[2], counters = counted }
      local mpc = {}
      for i = 1, n do node:add {}; mpc[i] = math.random() * 0.03 end
      local metrics = counted and function(j)
        local cyc = 1e8 * j.last.ncpus
        local ipc = 0.3 + math.random()
        j.last.metrics = { cycles = cyc, instructions = ipc * cyc, ipc = ipc, llc_misses = (mpc[j.id] * (0.5 + math.random())) * cyc }
      end or nil
      local last, gaps = {}, {}
      local C = math.min(topo[1], topo[1])
      local D = topo[2]
      local slots = math.min(n, 2 * D, topo[1])
      local bound = counted and 2 * math.ceil(n / (slots * 0.5)) + 1 or 2 * math.ceil(n / slots) + 1
      for e = 1, epochs do
        local plan = epoch(node, p, params, metrics)
        for _, x in ipairs(plan[1].jobs) do
          gaps[x.id] = math.max(gaps[x.id] or 0, e - (last[x.id] or 0))
          last[x.id] = e
        end
      end
      for _, j in ipairs(node.jobs) do
        local g = math.max(gaps[j.id] or epochs + 1, epochs + 1 - (last[j.id] or 0))
        worst = math.max(worst, g)
        if g > bound then
          error(("%d cores/%d llcs seed %d, %d jobs (%d fair): job %d waited %d steps (bound %d)")
            :format(topo[1], topo[2], seed, n, nf, j.id, g, bound), 0)
        end
      end
    end
  end
  return true, worst
end
check("property cachefair (no counters): valid plans, no job waits beyond 2 ceil(n/S) + 1 steps, 2-256 cores x 1-8 LLCs",
  function() return prop_cachefair(false, 4, 60) end)
check("property cachefair (counted, random miss rates, compensation on): valid plans, wait <= 2 ceil(2n/S) + 1",
  function() return prop_cachefair(true, 4, 150) end)

check("jobs arriving and leaving: plans stay valid (pmugroup both variants, cachefair; 8 cores, 2 LLCs, counted)", function()
  for _, cfg in ipairs { { "pmugroup", { variant = "threshold" } }, { "pmugroup", { variant = "relative" } },
                         { "cachefair", { fair = "job1,job4,job7", min_samples = 3 } } } do
    local p, params = load_policy(cfg[1], cfg[2])
    local node = fake.node { cores = 8, llcs = 2, counters = true }
    for _ = 1, 3 do node:add { class = "S" } end
    math.randomseed(42)
    local metrics = function(j)
      local cyc = 1e8 * j.last.ncpus
      j.last.metrics = app_metrics(math.random(1, 11), cyc)
      j.last.metrics.llc_misses = math.random() * 0.02 * cyc
    end
    for e = 1, 80 do
      if e % 7 == 0 then node:add { class = ({ "S", "C", "N" })[math.random(1, 3)] } end
      if e % 11 == 0 and #node.jobs > 1 then node:remove(node.jobs[math.random(1, #node.jobs)].id) end
      epoch(node, p, params, metrics)
    end
  end
  return true
end)

tap.finish()
