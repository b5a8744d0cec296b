-- Tests of lua/cosched/never_frozen.lua: every shipped policy that does not
-- share cpus, run through it as the policy host does when a job is never
-- frozen, on deterministic fake snapshots (tests/lua/fakenode.lua).
-- Run: lua5.4 tests/lua/test_never_frozen.lua SRCDIR   (prints TAP; exit 1 on any failure)

local srcdir = arg[1] or "."
package.path = srcdir .. "/lua/?.lua;" .. srcdir .. "/tests/lua/?.lua;" .. package.path
local fake = require "fakenode"
fake.library()
local nf = require "cosched.never_frozen"
local cpus = require "cosched.cpus"
local tap = require "tap"
local check = tap.check

-- the shipped policies that time-slice (shares_cpus not declared)
local function slicers()
  local out = {}
  local ls = assert(io.popen("ls '" .. srcdir .. "/lua/policies'"))
  for f in ls:lines() do
    local name = f:match("^(.-)%.lua$")
    if name then
      local p = fake.load_policy(srcdir, name)
      if not p.shares_cpus then out[#out + 1] = name end
    end
  end
  ls:close()
  table.sort(out)
  return out
end

-- epochs of policy `name` on a node of `cores` cores (llcs LLC domains)
-- with the jobs of `specs`; every plan through never_frozen.plan.  Returns
-- nil or what went wrong, and the quanta each job ran.
local function run(name, cores, llcs, specs, epochs)
  local node = fake.node { cores = cores, llcs = llcs, numa = llcs }
  for _, s in ipairs(specs) do node:add(s) end
  local p, params = fake.load_policy(srcdir, name)
  local kept_on
  for e = 1, epochs do
    local snap = node:snapshot(params)
    local plan = nf.plan(p.plan, snap)
    local ok, err = fake.validate(snap, plan)
    if not ok then return ("epoch %d: %s"):format(e, err) end
    for s, step in ipairs(plan) do
      local on, kept = {}, {}
      for _, ent in ipairs(step.jobs) do on[ent.id] = ent.cpus end
      for _, j in ipairs(node.jobs) do
        if j.never_frozen then
          if not on[j.id] then return ("epoch %d step %d: never-frozen job %d left out"):format(e, s, j.id) end
          kept[#kept + 1] = on[j.id]
        end
      end
      local r = kept[1]
      for _, k in ipairs(kept) do
        if cpus.format(k) ~= cpus.format(r) then return ("epoch %d: never-frozen jobs apart"):format(e) end
      end
      kept_on = kept_on or cpus.format(r)
      if cpus.format(r) ~= kept_on then
        return ("epoch %d: never-frozen jobs moved from %s to %s"):format(e, kept_on, cpus.format(r))
      end
      for _, j in ipairs(node.jobs) do
        if not j.never_frozen and on[j.id] and cpus.overlap(on[j.id], r) > 0 then
          return ("epoch %d step %d: job %d on %s, never-frozen jobs on %s"):format(e, s, j.id,
            cpus.format(on[j.id]), cpus.format(r))
        end
      end
    end
    node:run(plan)
  end
  local q = {}
  for _, j in ipairs(node.jobs) do q[j.id] = j.quanta_run end
  return nil, q, kept_on
end

for _, name in ipairs(slicers()) do
  for _, shape in ipairs({ { 2, 1 }, { 8, 2 }, { 16, 4 } }) do
    local cores, llcs = shape[1], shape[2]
    check(("%s on %d cores: one never-frozen job of four runs in every step on cores no other job gets, the others all run"):format(name, cores), function()
      local specs = { { class = "S" }, { class = "C", never_frozen = true }, { class = "N" }, {} }
      local err, q, r = run(name, cores, llcs, specs, 40)
      if err then return false, err end
      local want = ({ [2] = "1", [8] = "6-7", [16] = "12-15" })[cores]   -- a quarter of the node, the last cores
      for id = 1, 4 do
        if q[id] == 0 then return false, ("job %d never ran"):format(id) end
      end
      return r == want, ("kept on %s (want %s); quanta %d %d %d %d"):format(r, want, q[1], q[2], q[3], q[4])
    end)
  end
end

check("two never-frozen jobs of three on 8 cores share two thirds of the node, the third job has the rest", function()
  local err, q, r = run("gang", 8, 2, { { never_frozen = true }, {}, { never_frozen = true } }, 10)
  if err then return false, err end
  return r == "3-7" and q[2] == 10, ("kept on %s, job 2 ran %d quanta of 10"):format(tostring(r), q[2])
end)

check("a never-frozen job keeps no more cpus than it has threads: the others get the rest", function()
  local err, q, r = run("tft", 8, 2, { { never_frozen = true, threads = 1 }, {}, {} }, 10)
  if err then return false, err end
  return r == "7", ("kept on %s"):format(tostring(r))
end)

-- a node of 8 cores of 2 hardware threads, siblings i and i + 8 (as Linux
-- numbers them on most x86 machines), one LLC; jobs as given
local function smt_snapshot(jobs)
  local cores, all = {}, {}
  for i = 0, 7 do cores[#cores + 1] = { index = i + 1, pus = { i, i + 8 }, llc = 1, numa = 1, package = 1 } end
  for c = 0, 15 do all[#all + 1] = c end
  local list = {}
  for i, j in ipairs(jobs) do
    list[i] = { id = i, name = "j" .. i, threads = j.threads or 8, priority = 0, runs = 0, waited = 0.0,
                quanta_run = 0, quanta_frozen = 0, cpu_time = 0, frozen = false, cpus = j.home or all,
                home = j.home, never_frozen = j.never_frozen }
  end
  return fake.ro { api = 1, epoch = 1, now = 0, quantum = 0.1, params = {}, cpus = all,
                   topology = { cores = cores, llcs = { { index = 1, cpus = all, size = 1 << 25, level = 3 } },
                                numa = { { index = 1, os_index = 0, cpus = all, size = 1 << 30 } } },
                   jobs = list }
end

-- every core wholly in r or wholly out of it
local function whole_cores(r)
  local s = cpus.set(r)
  for i = 0, 7 do
    if (s[i] or false) ~= (s[i + 8] or false) then return false end
  end
  return true
end

check("hyperthreads: R is whole cores, its size counted in cores, capped by the job's threads in cores", function()
  local snap = smt_snapshot { { never_frozen = true }, {} }
  local r = nf.share(snap, 2, 1, 8)
  local capped = nf.share(snap, 2, 1, 2)
  return whole_cores(r) and #r == 8 and whole_cores(capped) and #capped == 4,
    ("R %s, capped at 2 cores %s"):format(cpus.format(r), cpus.format(capped))
end)

check("hyperthreads, more jobs than cores: R is one whole core", function()
  local jobs = { { never_frozen = true } }
  for i = 2, 20 do jobs[i] = {} end
  local r = nf.share(smt_snapshot(jobs), 20, 1, 8)
  return whole_cores(r) and #r == 2, cpus.format(r)
end)

check("R within the never-frozen job's own cpus (job.home): a step of 2 cores on 8 keeps its own", function()
  local snap = smt_snapshot { { never_frozen = true, threads = 2, home = { 0, 1, 8, 9 } }, {}, {} }
  local p = fake.load_policy(srcdir, "tft")
  local plan = nf.plan(p.plan, snap)
  local ok, err = fake.validate(snap, plan)
  if not ok then return false, err end
  for _, step in ipairs(plan) do
    for _, e in ipairs(step.jobs) do
      if e.id == 1 and cpus.format(e.cpus) ~= "0-1,8-9" then return false, "kept on " .. cpus.format(e.cpus) end
      if e.id ~= 1 and cpus.overlap(e.cpus, { 0, 1, 8, 9 }) > 0 then return false, "job " .. e.id .. " on " .. cpus.format(e.cpus) end
    end
  end
  return true
end)

-- what is wrong with a view's topology, or nil: it must be the node's
-- (`full`) cut to the view's cpus as the engine cuts it to the managed ones
-- (cosched-policy(7) SNAPSHOT): cores and LLCs with none of them left out,
-- the rest numbered by position (core.llc following its LLC), every NUMA
-- node kept with its cpus cut
local function cut_wrong(view, full)
  local t, mine, seen = view.topology, cpus.set(view.cpus), {}
  if #t.numa ~= #full.numa then return ("%d numa nodes of %d"):format(#t.numa, #full.numa) end
  for i, core in ipairs(t.cores) do
    local llc, node = t.llcs[core.llc], t.numa[core.numa]
    if core.index ~= i then return ("core %d has index %s"):format(i, tostring(core.index)) end
    if #core.pus == 0 then return ("core %d has no cpu"):format(i) end
    if not llc or cpus.overlap(core.pus, llc.cpus) ~= #core.pus then
      return ("core %d (%s) in llc %s of other cpus"):format(i, cpus.format(core.pus), tostring(core.llc))
    end
    if not node or cpus.overlap(core.pus, node.cpus) ~= #core.pus then
      return ("core %d (%s) in numa node %s of other cpus"):format(i, cpus.format(core.pus), tostring(core.numa))
    end
    for _, c in ipairs(core.pus) do
      if not mine[c] then return ("core %d holds cpu %d, not the view's"):format(i, c) end
      seen[#seen + 1] = c
    end
  end
  if cpus.format(seen) ~= cpus.format(view.cpus) then return "the cores hold " .. cpus.format(seen) end
  for i, l in ipairs(t.llcs) do
    if l.index ~= i or #l.cpus == 0 or cpus.overlap(l.cpus, view.cpus) ~= #l.cpus then
      return ("llc %d: index %s, cpus %s"):format(i, tostring(l.index), cpus.format(l.cpus))
    end
  end
  for i, d in ipairs(t.numa) do
    local want = cpus.format(cpus.minus(full.numa[i].cpus, cpus.minus(full.numa[i].cpus, view.cpus)))
    if cpus.format(d.cpus) ~= want or d.os_index ~= full.numa[i].os_index then
      return ("numa node %d: cpus %s (want %s)"):format(i, cpus.format(d.cpus), want)
    end
  end
end

check("the view's topology is the node's cut to the view's cpus (R the last LLC): cores and LLCs left out, every NUMA node kept", function()
  local node = fake.node { cores = 16, llcs = 4, numa = 4 }
  node:add { never_frozen = true, threads = 4 }
  for _ = 1, 3 do node:add { threads = 4 } end
  local snap, seen = node:snapshot({}), nil
  nf.plan(function(view) seen = view return {} end, snap)
  local t = seen.topology
  local err = cut_wrong(seen, snap.topology)
  if err then return false, err end
  return #t.cores == 12 and #t.llcs == 3 and #t.numa[4].cpus == 0,
    ("%d cores, %d llcs (want 12, 3), numa 4 holds %s"):format(#t.cores, #t.llcs, cpus.format(t.numa[4].cpus))
end)

check("the view's topology when R is the first LLC (the never-frozen job's home), with hyperthreads: numbered again", function()
  -- 8 cores of 2 hardware threads (siblings i, i + 8), 4 LLCs of 2 cores, 2 NUMA nodes of 4
  local cores, llcs, all = {}, {}, {}
  for i = 0, 7 do
    local l = i // 2 + 1
    cores[#cores + 1] = { index = i + 1, pus = { i, i + 8 }, llc = l, numa = i // 4 + 1, package = i // 4 + 1 }
    llcs[l] = llcs[l] or { index = l, cpus = {}, size = 1 << 24, level = 3 }
    table.insert(llcs[l].cpus, i)
    table.insert(llcs[l].cpus, i + 8)
  end
  for c = 0, 15 do all[#all + 1] = c end
  for _, l in ipairs(llcs) do table.sort(l.cpus) end
  local numa = { { index = 1, os_index = 0, cpus = { 0, 1, 2, 3, 8, 9, 10, 11 }, size = 1 << 30 },
                 { index = 2, os_index = 1, cpus = { 4, 5, 6, 7, 12, 13, 14, 15 }, size = 1 << 30 } }
  local jobs = {}
  for i = 1, 3 do
    jobs[i] = { id = i, name = "j" .. i, threads = 4, priority = 0, runs = 0, waited = 0.0, quanta_run = 0,
                quanta_frozen = 0, cpu_time = 0, frozen = false, cpus = all }
  end
  jobs[1].never_frozen, jobs[1].home, jobs[1].cpus = true, { 0, 1, 8, 9 }, { 0, 1, 8, 9 }
  local snap = fake.ro { api = 1, epoch = 1, now = 0, quantum = 0.1, params = {}, cpus = all,
                         topology = { cores = cores, llcs = llcs, numa = numa }, jobs = jobs }
  local seen
  nf.plan(function(view) seen = view return {} end, snap)
  local err = cut_wrong(seen, snap.topology)
  if err then return false, err end
  local t = seen.topology
  return cpus.format(seen.cpus) == "2-7,10-15" and #t.llcs == 3 and t.cores[1].llc == 1
    and cpus.format(t.llcs[1].cpus) == "2-3,10-11" and cpus.format(t.numa[1].cpus) == "2-3,10-11",
    ("view %s, %d llcs, core 1 in llc %s"):format(cpus.format(seen.cpus), #t.llcs, tostring(t.cores[1].llc))
end)

check("flca with one LLC kept: the three new jobs are characterized at once, each in its own LLC", function()
  local node = fake.node { cores = 16, llcs = 4, numa = 4 }
  node:add { never_frozen = true, threads = 4 }
  for _ = 1, 3 do node:add { threads = 4 } end
  local p, params = fake.load_policy(srcdir, "flca")
  local plan = nf.plan(p.plan, node:snapshot(params))
  local on = {}
  for _, ent in ipairs(plan[1].jobs) do on[#on + 1] = ent.id .. "@" .. cpus.format(ent.cpus) end
  table.sort(on)
  local got = table.concat(on, " ")
  return got == "1@12-15 2@0-3 3@4-7 4@8-11", got
end)

check("every job never frozen: one step, all on all cpus, the policy not called", function()
  local node = fake.node { cores = 4 }
  node:add { never_frozen = true }
  node:add { never_frozen = true }
  local called = false
  local plan = nf.plan(function() called = true end, node:snapshot({}))
  local ok, err = fake.validate(node:snapshot({}), plan)
  return ok and not called and #plan == 1 and #plan[1].jobs == 2 and cpus.format(plan[1].jobs[2].cpus) == "0-3",
    tostring(err)
end)

check("no never-frozen job: the policy's own plan, untouched", function()
  local node = fake.node { cores = 4 }
  node:add {}
  local mine = { { jobs = { { id = 1, cpus = { 0 } } } } }
  return nf.plan(function() return mine end, node:snapshot({})) == mine
end)

check("one managed cpu: nothing to keep apart, the policy sees every job", function()
  local node = fake.node { cores = 1 }
  node:add { never_frozen = true }
  node:add {}
  local seen
  nf.plan(function(snap) seen = #snap.jobs return {} end, node:snapshot({}))
  return seen == 2, tostring(seen)
end)

check("the policy's steps are copied, not changed (a policy may keep its plan from one epoch to the next)", function()
  local node = fake.node { cores = 2 }
  node:add { never_frozen = true }
  node:add {}
  local mine = { { duration = 0.5, jobs = { { id = 2, cpus = { 0 } } } } }
  local plan = nf.plan(function() return mine end, node:snapshot({}))
  return #mine[1].jobs == 1 and #plan[1].jobs == 2 and plan[1].duration == 0.5, "steps changed"
end)

tap.finish()
