-- Tests of the NUMA policies of paper 000 (Majo and Gross: lua/policies/maxlocal.lua,
-- lua/policies/nmass.lua) and their module lua/cosched/numa.lua, on fake snapshots
-- carrying job.memory (where each job's memory is) and last.metrics.mpki.
-- Run: lua5.4 tests/lua/test_numa.lua SRCDIR     (prints TAP; exit 1 on any failure)

local srcdir = arg[1] or "."
package.path = srcdir .. "/lua/?.lua;" .. srcdir .. "/tests/lua/?.lua;" .. package.path
local fake = require "fakenode"
local LOG = fake.library()

local numa = require "cosched.numa"

local tap = require "tap"
local check, results = tap.check, tap.results
local function near(x, y) return type(x) == "number" and math.abs(x - y) < 1e-9 end

-- ------------------------------------------------------------------ fake node with NUMA memory
-- topology: ncores cores of smt PUs each, cut in nnodes contiguous NUMA nodes
-- (one LLC and package per node); node i has os_index os[i] (default i - 1);
-- memonly adds a node without cpus.
local function topology(ncores, nnodes, smt, os, memonly)
  smt = smt or 1
  local t = { cpus = {}, cores = {}, llcs = {}, numa = {} }
  local per = ncores // nnodes
  for c = 0, ncores - 1 do
    local k = math.min(c // per + 1, nnodes)
    local pus = {}
    for h = 0, smt - 1 do pus[#pus + 1] = c + h * ncores end
    t.cores[#t.cores + 1] = { index = c + 1, pus = pus, llc = k, numa = k, package = k }
    t.numa[k] = t.numa[k] or { index = k, os_index = os and os[k] or (k - 1), cpus = {}, size = 2 ^ 34 }
    t.llcs[k] = t.llcs[k] or { index = k, cpus = {}, size = 8 * 2 ^ 20, level = 3 }
    for _, p in ipairs(pus) do
      t.cpus[#t.cpus + 1] = p
      table.insert(t.numa[k].cpus, p)
      table.insert(t.llcs[k].cpus, p)
    end
  end
  if memonly then
    t.numa[#t.numa + 1] = { index = #t.numa + 1, os_index = 99, cpus = {}, size = 2 ^ 34 }
  end
  table.sort(t.cpus)
  for _, n in ipairs(t.numa) do table.sort(n.cpus) end
  return t
end

-- job spec: { id, threads, home = os, nodes = { [os] = f }, pages, mpki, counted,
--             cpus, waited, quanta_run, stored }
local function snapshot(topo, jobs, epoch)
  local list = {}
  for i, j in ipairs(jobs) do
    local mem
    if j.home or j.nodes then
      mem = { pages = j.pages or 1000, nodes = j.nodes or { [j.home] = 1.0 }, home = j.home }
    end
    local last = j.last
    if not last and j.ran then
      last = { wall = 1, cpu = 1, ncpus = 1, counted = j.counted ~= false,
               metrics = (j.counted ~= false and j.mpki) and { mpki = j.mpki } or nil }
    end
    list[i] = { id = j.id or i, name = "j" .. (j.id or i), threads = j.threads or 1, priority = 0, runs = 0,
                waited = j.waited or 0, quanta_run = j.quanta_run or 0, quanta_frozen = 0,
                cpu_time = 0, frozen = false, cpus = j.cpus or topo.cpus, last = last,
                memory = mem, stored = j.stored }
  end
  return fake.ro { api = 1, epoch = epoch or 1, now = 0, quantum = 0.1, params = {}, cpus = topo.cpus,
                   topology = { cores = topo.cores, llcs = topo.llcs, numa = topo.numa }, jobs = list }
end

local function load_policy(name, opts) return fake.load_policy(srcdir, name, opts) end

local function plan_ok(snap, plan)
  local ok, err = fake.validate(snap, plan)
  if not ok then error(err, 0) end
  return plan
end

-- os index of the node holding each job's cpus, as a string in job order ("?" if
-- none, "*" if several)
local function node_string(topo, plan, njobs)
  local os_of = {}
  for _, n in ipairs(topo.numa) do for _, c in ipairs(n.cpus) do os_of[c] = n.os_index end end
  local by = {}
  for _, e in ipairs(plan[1].jobs) do
    local o
    for _, c in ipairs(e.cpus) do
      if o == nil then o = os_of[c] elseif o ~= os_of[c] then o = "*" end
    end
    by[e.id] = tostring(o)
  end
  local s = {}
  for i = 1, njobs do s[i] = by[i] or "?" end
  return table.concat(s)
end

-- ------------------------------------------------------------------ module basics
check("np estimate (Sec. 4.5): 1.05 + 0.015 x MPKI; 22 MPKI -> 1.38; never below 1; nil -> nil", function()
  return near(numa.np_estimate(22), 1.38) and near(numa.np_estimate(0), 1.05)
     and numa.np_estimate(10, 0.5, 0.01) == 1 and numa.np_estimate(nil) == nil
end)
check("penalty: 1 at home, np remote, 1 + (np-1) x remote share for split memory", function()
  local u = { np = 1.4, frac = { [1] = 0.75, [2] = 0.25 } }
  return near(numa.penalty(u, 1), 1.1) and near(numa.penalty(u, 2), 1.3)
     and near(numa.penalty({ np = 1.4, frac = { [1] = 1 } }, 2), 1.4) and numa.penalty({ np = 1.4 }, 2) == 1
end)
check("capacity per node in cores: 2 x 4 cores x 2 PUs -> 4, 4; memory-only node 0; os_index kept", function()
  local t = numa.nodes(snapshot(topology(8, 2, 2, { 3, 5 }, true), {}))
  return #t.list == 3 and t.list[1].cap == 4 and t.list[2].cap == 4 and t.list[3].cap == 0
     and t.list[1].os == 3 and t.by_os[5] == t.list[2] and t.ncores == 8
     and #t.list[1].cores[1] == 2, ("%d nodes caps %d %d"):format(#t.list, t.list[1].cap, t.list[2].cap)
end)
check("memory_of: home = largest share; fractions normalised; unknown os ignored", function()
  local topo = topology(8, 2, 1, { 0, 1 })
  local snap = snapshot(topo, { { nodes = { [0] = 0.3, [1] = 0.6, [7] = 0.1 } } })
  local t = numa.nodes(snap)
  local m = numa.memory_of(snap.jobs[1], t)
  return m.home == 2 and near(m.frac[1], 1 / 3) and near(m.frac[2], 2 / 3)
     and numa.memory_of(snapshot(topo, { {} }).jobs[1], t) == nil
end)

-- ------------------------------------------------------------------ Table 3 allocation maps
-- The paper's machine: 2 processors x 4 cores, one process (threads = 1) per
-- core.  Allocation map m_i = home processor of the i-th process (Eq. 2).
-- MPKIs: the text gives no per-program values (Fig. 7 only plots them); these
-- are assumed, in line with the text: memory-bound programs of WL9 (mcf, milc,
-- soplex, lbm) at 20-30 MPKI, the compute-bound ones (C) below 1 MPKI ("non-
-- memory-bound programs (programs with a MPKI smaller than 1)", Sec. 4.5),
-- sphinx (C in WL1 and WL7) at 2.  NUMA penalty: Sec. 4.5 model,
-- np = 1.05 + 0.015 MPKI.
local WL9 = { { "mcf", 30 }, { "milc", 25 }, { "soplex", 22 }, { "lbm", 28 } }
local WL1 = { { "soplex", 22 }, { "sphinx", 2 }, { "gamess", 0.3 }, { "namd", 0.2 } }
local WL11 = { { "mcf", 30 }, { "milc", 25 }, { "soplex", 22 }, { "lbm", 28 },
               { "gobmk", 0.5 }, { "perlbench", 0.4 }, { "namd", 0.2 }, { "povray", 0.1 } }

local function workload(wl, map)
  local jobs = {}
  for i, p in ipairs(wl) do
    jobs[i] = { id = i, threads = 1, home = tonumber(map:sub(i, i)), mpki = p[2], ran = true, cpus = {} }
  end
  return jobs
end

-- Expected N-MASS maps, computed by hand from Alg. 2/3 (pressures p0/p1 in MPKI,
-- np: mcf 1.50, lbm 1.47, milc 1.425, soplex 1.38, sphinx 1.08; threshold 60):
local TABLE3 = {
  -- WL9: every balanced or 3:1 map where the node with one process holds >= 28
  -- MPKI cannot take another process below 60: no move.
  { WL9, "1100", "1100" },  -- p1 55 p0 50: milc -> 0 gives p0 85.6 >= 60
  { WL9, "1010", "1010" },  -- p0 53 p1 52: milc -> 1 gives 87.6
  { WL9, "1001", "1001" },  -- p1 58 p0 47: lbm -> 0 gives 88.2
  { WL9, "1000", "1000" },  -- p0 75 p1 30: soplex -> 1 gives 30 + 30.36 = 60.36 >= 60
  { WL9, "0100", "0110" },  -- p0 80 p1 25: soplex -> 1: 55.36 < 60, |58 - 55.36| < 55
  { WL9, "0010", "0110" },  -- p0 83 p1 22: back of M0 is milc: 57.6 < 60, |58 - 57.6| < 61
  { WL9, "0001", "0011" },  -- p0 77 p1 28: soplex -> 1: 58.36; then lbm -> 0 gives 96
  { WL9, "0000", "0010" },  -- p0 105: soplex -> 1 (30.36); milc next: 66.0 >= 60
  -- WL1: gamess and namd (< 1 MPKI) never move; sphinx moves when it lowers the gap
  { WL1, "1100", "1000" },  -- p1 24 p0 0.5: sphinx -> 0 (|22 - 2.66| < 23.5); soplex overshoots
  { WL1, "1010", "1010" },  -- p1 22.3 p0 2.2: soplex -> 0 gives |0.3 - 32.6| > 20.1
  { WL1, "1001", "1001" },
  { WL1, "1000", "1000" },
  { WL1, "0100", "0100" },  -- soplex -> 1 gives |0.5 - 32.4| > 20.5
  { WL1, "0010", "0110" },  -- p0 24.2: sphinx -> 1: |22.2 - 2.46| < 23.9
  { WL1, "0001", "0101" },
  { WL1, "0000", "0100" },  -- p0 24.5: sphinx -> 1; soplex next overshoots
}
for _, c in ipairs(TABLE3) do
  local wlname = c[1] == WL9 and "WL9" or "WL1"
  check(("Table 3 map %s, %s: maxlocal keeps every process home (%s)"):format(c[2], wlname, c[2]), function()
    local topo = topology(8, 2)
    local p = load_policy("maxlocal")
    local snap = snapshot(topo, workload(c[1], c[2]))
    local got = node_string(topo, plan_ok(snap, p.plan(snap)), 4)
    return got == c[2], "got " .. got
  end)
  check(("Table 3 map %s, %s: N-MASS maps %s"):format(c[2], wlname, c[3]), function()
    local topo = topology(8, 2)
    local p = load_policy("nmass")
    local snap = snapshot(topo, workload(c[1], c[2]))
    local got = node_string(topo, plan_ok(snap, p.plan(snap)), 4)
    return got == c[3], "got " .. got
  end)
end
check("8 processes, WL11 map 00000000: maxlocal keeps the 4 highest-penalty (mcf, lbm, milc, soplex) home, spills the rest; N-MASS cannot move (no free core)", function()
  local topo = topology(8, 2)
  local m = load_policy("maxlocal")
  local n = load_policy("nmass")
  local snap = snapshot(topo, workload(WL11, "00000000"))
  local a = node_string(topo, plan_ok(snap, m.plan(snap)), 8)
  local b = node_string(topo, plan_ok(snap, n.plan(snap)), 8)
  return a == "00001111" and b == "00001111", a .. " / " .. b
end)
check("WL11 map 11110000 (4 processes per node): maxlocal keeps all 8 home", function()
  local topo = topology(8, 2)
  local m = load_policy("maxlocal")
  local snap = snapshot(topo, workload(WL11, "11110000"))
  local a = node_string(topo, plan_ok(snap, m.plan(snap)), 8)
  return a == "11110000", a
end)

-- ------------------------------------------------------------------ Alg. 3 details
local function units_for(t, specs)
  local u = {}
  for i, s in ipairs(specs) do
    u[i] = { id = i, need = s.need or 1, mpki = s.mpki, np = s.np or 1, pages = s.pages or 0,
             home = t.by_os[s.home].i, frac = { [t.by_os[s.home].i] = 1 } }
  end
  return u
end
check("one job per refinement step: 4 x 10 MPKI homed on node 0 (np 1): moves job 4, then job 3, then stops", function()
  local t = numa.nodes(snapshot(topology(8, 2), {}))
  local units = units_for(t, { { mpki = 10, home = 0, pages = 4 }, { mpki = 10, home = 0, pages = 3 },
                               { mpki = 10, home = 0, pages = 2 }, { mpki = 10, home = 0, pages = 1 } })
  local place = numa.maxlocal(t, units)
  local _, moves, p = numa.refine(t, units, place, { threshold = 60, min_mpki = 1 })
  local ids = {}
  for i, mv in ipairs(moves) do ids[i] = ("%d:%d>%d"):format(mv.id, mv.from, mv.to) end
  local s = table.concat(ids, " ")
  return s == "4:1>2 3:1>2" and near(p[1], 20) and near(p[2], 20), s
end)
check("60-MPKI threshold: a move to 29.9 + 30 = 59.9 is made, to 30 + 30 = 60 is not", function()
  local t = numa.nodes(snapshot(topology(8, 2), {}))
  local function run(other)
    local units = units_for(t, { { mpki = 40, home = 0, pages = 2 }, { mpki = 30, home = 0, pages = 1 },
                                 { mpki = other, home = 1 } })
    local _, moves = numa.refine(t, units, numa.maxlocal(t, units), { threshold = 60, min_mpki = 1 })
    return #moves
  end
  local a, b = run(29.9), run(30)
  return a == 1 and b == 0, ("moves %d / %d"):format(a, b)
end)
check("threshold is a parameter: WL9 map 1000 moves soplex with interconnect_mpki=61 (60.36 < 61)", function()
  local topo = topology(8, 2)
  local p = load_policy("nmass", { interconnect_mpki = 61 })
  local snap = snapshot(topo, workload(WL9, "1000"))
  local got = node_string(topo, plan_ok(snap, p.plan(snap)), 4)
  return got == "1010", got
end)
check("three nodes: pressure moves to the least loaded node, one job, then stops", function()
  -- 3 nodes x 2 cores, np 1: A 30 and B 20 home on node 0, C 10 homed on node 0
  -- spills to node 1 (p 50 / 10 / 0); B moves to node 2 (|15 - 10| < 25); A
  -- would not lower any gap
  local t = numa.nodes(snapshot(topology(6, 3), {}))
  local units = units_for(t, { { mpki = 30, home = 0, pages = 3 }, { mpki = 20, home = 0, pages = 2 },
                               { mpki = 10, home = 0, pages = 1 } })
  local place = numa.maxlocal(t, units)
  local spilled = place[3][2] == 1
  local newp, moves = numa.refine(t, units, place, { threshold = 60, min_mpki = 1 })
  return spilled and #moves == 1 and moves[1].id == 2 and newp[2][3] == 1 and newp[1][1] == 1,
    ("%d moves"):format(#moves)
end)

-- ------------------------------------------------------------------ remapping (Sec. 3.4)
-- WL9 homed as MAP ("0000": every job on node 0) on 8 cores and 2 nodes under
-- POLICY, with a fresh LOG: the topology, the policy and the jobs
local function wl9_on(policy, map)
  LOG = fake.log_reset()
  return topology(8, 2), load_policy(policy), workload(WL9, map)
end

check("20 % rule: mcf's MPKI -15 % keeps the mapping (soplex home), -23 % remaps (soplex -> node 1)", function()
  local topo, p, jobs = wl9_on("nmass", "1000")
  local snap = snapshot(topo, jobs)
  local plan = plan_ok(snap, p.plan(snap))
  local first = node_string(topo, plan, 4)
  for _, e in ipairs(plan[1].jobs) do jobs[e.id].cpus = e.cpus end
  jobs[1].mpki = 25.5                           -- -15 %: a fresh mapping would move soplex (55.86 < 60)
  snap = snapshot(topo, jobs, 2)
  local second = node_string(topo, plan_ok(snap, p.plan(snap)), 4)
  local fresh = load_policy("nmass")
  local would = node_string(topo, fresh.plan(snap), 4)
  jobs[1].mpki = 23                             -- -23.3 %
  snap = snapshot(topo, jobs, 3)
  local third = node_string(topo, plan_ok(snap, p.plan(snap)), 4)
  return first == "1000" and second == "1000" and would == "1010" and third == "1010",
    table.concat({ first, second, would, third }, " ")
end)
check("remap keeps cpus: a job that stays on its node keeps its cores; a job leaving triggers a remap", function()
  local topo, p, jobs = wl9_on("nmass", "0000")
  local snap = snapshot(topo, jobs)
  local plan = p.plan(snap)
  local cpus1 = {}
  for _, e in ipairs(plan[1].jobs) do jobs[e.id].cpus = e.cpus; cpus1[e.id] = table.concat(e.cpus, ",") end
  table.remove(jobs, 3)                         -- soplex (on node 1) leaves
  snap = snapshot(topo, jobs, 2)
  plan = plan_ok(snap, p.plan(snap))
  local s = node_string(topo, plan, 4)
  -- now p0 = 83 with mcf, milc, lbm; back of M0 is milc: 35.6 < 60 and |58 - 35.6| < 83
  for _, e in ipairs(plan[1].jobs) do
    if e.id ~= 2 and table.concat(e.cpus, ",") ~= cpus1[e.id] then return false, "job " .. e.id .. " moved" end
  end
  return s == "01?0", s
end)
check("one step per epoch lasting `epoch` seconds (default 1 s, not the quantum); epoch=0.5 honoured", function()
  local topo = topology(8, 2)
  local snap = snapshot(topo, workload(WL9, "0101"))
  local a = load_policy("nmass").plan(snap)
  local b = load_policy("maxlocal", { epoch = 0.5 }).plan(snap)
  return #a == 1 and a[1].duration == 1 and b[1].duration == 0.5 and a[1].jobs[1].mems == nil
end)
check("bad parameters are refused by init()", function()
  local bad = { { "nmass", { interconnect_mpki = 0 } }, { "nmass", { epoch = 0 } }, { "maxlocal", { remap = "x" } },
                { "nmass", { np_slope = -1 } } }
  for _, c in ipairs(bad) do
    if pcall(load_policy, c[1], c[2]) then return false, c[1] .. " accepted a bad value" end
  end
  return true
end)

-- ------------------------------------------------------------------ without counters
check("no counters: N-MASS maps as maximum-local (WL9 0000 stays 0000) and says so once", function()
  local topo, p, jobs = wl9_on("nmass", "0000")
  for _, j in ipairs(jobs) do j.counted = false end
  local got = {}
  for e = 1, 3 do
    local snap = snapshot(topo, jobs, e)
    got[e] = node_string(topo, plan_ok(snap, p.plan(snap)), 4)
  end
  local n = 0
  for _, l in ipairs(LOG) do if l:find("maximum%-local") and l:find("no MPKI") then n = n + 1 end end
  return got[1] == "0000" and got[3] == "0000" and n == 1, got[1] .. " messages " .. n
end)
check("no counters, maxlocal: no message about MPKI; stored MPKI is used when there", function()
  local topo, p, jobs = wl9_on("maxlocal", "0000")
  for _, j in ipairs(jobs) do j.counted = false end
  local snap = snapshot(topo, jobs)
  p.plan(snap)
  for _, l in ipairs(LOG) do if l:find("MPKI") then return false, l end end
  -- nmass with stored MPKIs refines without counters
  for _, j in ipairs(jobs) do j.stored = { mpki = j.mpki } end
  local n = load_policy("nmass")
  snap = snapshot(topo, jobs)
  local got = node_string(topo, plan_ok(snap, n.plan(snap)), 4)
  return got == "0010", got
end)
check("np from the profile store: stored MPKI 40 -> 1.65 (source store) over the live 5 MPKI; live only -> 1.125; none -> nil", function()
  local a, sa = numa.np_of({ stored = { mpki = 40 } }, 5)
  local b, sb = numa.np_of({}, 5)
  local c, sc = numa.np_of({ stored = { class = "S" } }, nil)
  local d, sd = numa.np_of({ stored = { mpki = 40 } }, 5, 1.0, 0.01)
  return near(a, 1.65) and sa == "store" and near(b, 1.125) and sb == "mpki" and c == nil and sc == nil
     and near(d, 1.4) and sd == "store", ("%s %s %s %s %s"):format(a, sa, b, sb, tostring(c))
end)
check("nmass orders by the stored penalty: of two jobs homed on a 1-core node the one with the larger stored MPKI stays home, whatever the live MPKI", function()
  local topo = topology(2, 2)
  local jobs = {
    { id = 1, home = 0, ran = true, mpki = 30, stored = { mpki = 2 } },   -- live np 1.5, stored 1.08
    { id = 2, home = 0, ran = true, mpki = 10, stored = { mpki = 40 } },  -- live np 1.2, stored 1.65
  }
  local p = load_policy("nmass")
  local with = node_string(topo, plan_ok(snapshot(topo, jobs), p.plan(snapshot(topo, jobs))), 2)
  for _, j in ipairs(jobs) do j.stored = nil end
  local p2 = load_policy("nmass")
  local without = node_string(topo, plan_ok(snapshot(topo, jobs), p2.plan(snapshot(topo, jobs))), 2)
  return with == "10" and without == "01", "with store " .. with .. ", without " .. without
end)
check("first epoch (MPKI not measured yet): maximum-local, no message; the first MPKI remaps", function()
  local topo, p, jobs = wl9_on("nmass", "0000")
  for _, j in ipairs(jobs) do j.ran = false end
  local snap = snapshot(topo, jobs)
  local a = node_string(topo, plan_ok(snap, p.plan(snap)), 4)
  for _, j in ipairs(jobs) do j.ran = true end
  snap = snapshot(topo, jobs, 2)
  local b = node_string(topo, plan_ok(snap, p.plan(snap)), 4)
  for _, l in ipairs(LOG) do if l:find("no MPKI") then return false, l end end
  return a == "0000" and b == "0010", a .. " " .. b
end)
check("one NUMA node (this machine): every job on its own cores, no refinement", function()
  local topo = topology(2, 1)
  local p = load_policy("nmass")
  local snap = snapshot(topo, { { home = 0, mpki = 50, ran = true }, { home = 0, mpki = 50, ran = true } })
  local plan = plan_ok(snap, p.plan(snap))
  return #plan[1].jobs == 2 and #plan[1].jobs[1].cpus == 1
end)

-- ------------------------------------------------------------------ properties
-- Random seeded workloads over 2-8 NUMA nodes and 2-256 cores (1 or 2 PUs per
-- core, os indexes not equal to list positions, sometimes a memory-only node),
-- both policies, 3-20 jobs of random threads, homes (some unknown, some split),
-- MPKIs (with or without counters), arrivals and departures.  Each epoch:
-- the plan passes the engine's checks (no cpu given twice), one step of
-- `epoch` s; when the jobs' cores fit, every job runs on exactly its cores,
-- and under maxlocal a job off its home leaves no free core there; when they
-- do not fit, every job runs at least once in any n consecutive epochs, and
-- with equal thread counts the run counts differ by at most one.
local function core_of(topo)
  local m = {}
  for _, c in ipairs(topo.cores) do for _, p in ipairs(c.pus) do m[p] = c end end
  return m
end

local function simulate(seed, name)
  math.randomseed(seed)
  local nn = math.random(2, 8)
  local ncores = math.random(nn, 256)
  if seed % 5 == 0 then ncores = math.random(nn, 2 * nn) end
  local smt = math.random(1, 2)
  local os = {}
  for k = 1, nn do os[k] = 2 * k + 1 end
  local topo = topology(ncores, nn, smt, os, seed % 3 == 0)
  local corep = core_of(topo)
  local os_node = {}
  for _, n in ipairs(topo.numa) do for _, c in ipairs(n.cpus) do os_node[c] = n.os_index end end
  local counters = seed % 4 ~= 0
  local equal = seed % 7 == 0
  local p = load_policy(name)
  local jobs, nextid = {}, 1
  local function add()
    local j = { id = nextid, threads = equal and 1 or math.random(1, math.max(1, ncores // math.random(1, 6))),
                mpki = math.random() * 40, counted = counters, cpus = topo.cpus, runs = 0, waited = 0, quanta_run = 0 }
    local r = math.random()
    if r < 0.6 then j.home = topo.numa[math.random(1, #topo.numa)].os_index
    elseif r < 0.85 then
      local a, b = topo.numa[math.random(1, nn)].os_index, topo.numa[math.random(1, nn)].os_index
      j.nodes = { [a] = 0.7 }
      j.nodes[b] = (j.nodes[b] or 0) + 0.3
    end
    nextid = nextid + 1
    jobs[#jobs + 1] = j
  end
  for _ = 1, math.random(3, 20) do add() end
  local lastrun, since = {}, {}
  for e = 1, 40 do
    if e % 13 == 0 then add() end
    if e % 17 == 0 and #jobs > 1 then table.remove(jobs, math.random(1, #jobs)) end
    local snap = snapshot(topo, jobs, e)
    local plan = p.plan(snap)
    local ok, err = fake.validate(snap, plan)
    if not ok then return false, ("seed %d %s epoch %d: %s"):format(seed, name, e, err) end
    if #plan ~= 1 or plan[1].duration ~= 1 then return false, "not one step of 1 s" end
    local total = 0
    for _, j in ipairs(jobs) do total = total + math.min(j.threads, ncores) end
    local on = {}
    for _, ent in ipairs(plan[1].jobs) do on[ent.id] = ent.cpus end
    local t = numa.nodes(snap)
    for _, j in ipairs(jobs) do
      local c = on[j.id]
      if total <= ncores then
        if not c then return false, ("seed %d %s epoch %d: job %d not placed"):format(seed, name, e, j.id) end
        local cores = {}
        local n = 0
        for _, cpu in ipairs(c) do
          if not cores[corep[cpu]] then cores[corep[cpu]] = true; n = n + 1 end
        end
        if n ~= math.min(j.threads, ncores) or #c ~= n * smt then
          return false, ("seed %d %s: job %d got %d cores for %d threads"):format(seed, name, j.id, n, j.threads)
        end
        if name == "maxlocal" and j.home then
          local off = false
          for _, cpu in ipairs(c) do if os_node[cpu] ~= j.home then off = true end end
          if off then
            local used = 0
            for _, ent in ipairs(plan[1].jobs) do
              for _, cpu in ipairs(ent.cpus) do if os_node[cpu] == j.home then used = used + 1 end end
            end
            if used < t.by_os[j.home].cap * smt then
              return false, ("seed %d: job %d off home with free cores there"):format(seed, j.id)
            end
          end
        end
      end
    end
    -- run the step
    for _, j in ipairs(jobs) do
      since[j.id] = since[j.id] or e
      if on[j.id] then
        j.quanta_run = j.quanta_run + 1
        j.runs = j.runs + 1
        j.waited = 0
        j.cpus = on[j.id]
        j.ran = true
        j.mpki = j.mpki * (0.85 + 0.3 * math.random())
        lastrun[j.id] = e
      else
        j.waited = j.waited + 1
        local ref = lastrun[j.id] or since[j.id] - 1
        if e - ref >= #jobs + 1 and total > ncores then
          return false, ("seed %d %s: job %d waited %d epochs with %d jobs"):format(seed, name, j.id, e - ref, #jobs)
        end
      end
    end
    if equal and e < 13 then
      local lo, hi = math.huge, 0
      for _, j in ipairs(jobs) do lo = math.min(lo, j.runs); hi = math.max(hi, j.runs) end
      if hi - lo > 1 then return false, ("seed %d: equal jobs ran %d..%d times"):format(seed, lo, hi) end
    end
  end
  return true
end
for _, name in ipairs { "maxlocal", "nmass" } do
  check(name .. ": property tests, 60 seeded workloads over 2-8 nodes, 2-256 cores", function()
    for seed = 1, 60 do
      local ok, err = simulate(seed, name)
      if not ok then return false, err end
    end
    return true
  end)
end
check("oversubscribed (8 one-thread jobs, 2 x 2 cores): 4 run per epoch, all equally often; cosched.log says time-sharing", function()
  LOG = fake.log_reset()
  local topo = topology(4, 2)
  local p = load_policy("nmass")
  local jobs = {}
  for i = 1, 8 do jobs[i] = { id = i, threads = 1, home = i % 2, mpki = 10, ran = false, waited = 0, quanta_run = 0 } end
  local runs = {}
  for e = 1, 8 do
    local snap = snapshot(topo, jobs, e)
    local plan = plan_ok(snap, p.plan(snap))
    if #plan[1].jobs ~= 4 then return false, "epoch " .. e .. ": " .. #plan[1].jobs .. " jobs" end
    local on = {}
    for _, ent in ipairs(plan[1].jobs) do on[ent.id] = ent.cpus end
    for _, j in ipairs(jobs) do
      if on[j.id] then
        j.quanta_run, j.waited, j.cpus, j.ran = j.quanta_run + 1, 0, on[j.id], true
        runs[j.id] = (runs[j.id] or 0) + 1
      else
        j.waited = j.waited + 1
      end
    end
  end
  for i = 1, 8 do if runs[i] ~= 4 then return false, "job " .. i .. " ran " .. tostring(runs[i]) end end
  local said = false
  for _, l in ipairs(LOG) do if l:find("time%-sharing") then said = true end end
  return said
end)

-- ------------------------------------------------------------------ report
tap.finish()
