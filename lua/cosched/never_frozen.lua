--[[
cosched.never_frozen - cores of their own for jobs the engine will not freeze.

The engine never freezes some jobs (job.never_frozen in the snapshot): under
Slurm, a step that spans nodes (its other nodes would run on while this one
waits), a step whose job's time limit is at its partition's MaxTime (no update
could give it the frozen time back), and a step until Slurm says how far its
job's limit may grow (cosched-spank(8)).  Such a job runs in every step,
whatever a plan says.  A policy that time-slices the node does not know
that: left to itself it gives the job's cores to others, which share them
with it in steps the policy meant to be theirs alone (under gang, beside one
never-frozen step, the other ran in every turn on all cores, beside it: the
rotation counts a never-frozen job as run every quantum).

So the policy host runs a policy that does not declare shares_cpus through
plan() below whenever a live job is never frozen (the engine calls it; a
policy need not and should not):

  1. The never-frozen jobs get a part R of the managed CPUs for as long as
     they stay so, in whole cores: as many cores as the last m of n groups
     of the managed CPUs hold (cosched.cpus.split, following the topology;
     n = live jobs, at most one group per core; m = never-frozen jobs), at
     most all groups but one, and no more cores than their threads
     (job.threads) add up to.  So R is their share of the node by head
     count - what each would get on average if all n jobs were time-sliced
     - in whole groups, at least one core, and at least one core is left to
     the others.  R is taken from the last cores, in topology order, of the
     never-frozen jobs' own CPUs (job.home: a Slurm step's allocation) when
     each of them has one, else of the managed CPUs: where the groups fall
     on a node the jobs may wholly use.  The never-frozen jobs all run on R
     at once (the kernel shares R between them: no plan can keep two jobs
     apart in time that the engine cannot freeze, and the engine accepts
     their overlap).
  2. The policy plans the other jobs on the rest: it is called with a view
     of the snapshot whose cpus are the managed CPUs minus R, whose jobs
     leave the never-frozen ones out, and whose topology is cut to those
     CPUs as the snapshot's is cut to the managed ones (cores and LLCs
     without one left out, the rest numbered from 1 again, every NUMA node
     kept with its cpus cut); every other field is the snapshot's.  So a
     policy that counts LLCs (cosched.characterize's per-LLC domains,
     cachefair's slots) counts those it may use, not the node's.  Its selections (cosched.rotation, ageing, pairing)
     rotate the others in the cores left; none of them sees a job that is
     not its to schedule (the other jobs' own lists - cpus, home, last.cpus
     - may still name CPUs of R).
  3. Every step it returns gets the never-frozen jobs added, on R.  Its
     results and info are passed on as they are.

On a single managed core nothing can be kept apart and the policy gets the
whole snapshot.  When every live job is never frozen, the policy is not
called: one step runs them all on all managed CPUs (what the engine would do
anyway).  A policy that declares shares_cpus (linux, lca, ...) already runs
jobs side by side on shared CPUs and is called with the whole snapshot,
never_frozen included.

The share is a choice, not a measurement: a never-frozen job gets R for all
of the time where a time-sliced job gets its cores for part of it; with m
of n jobs on a node of c cores that is m/n of the node rounded to whole
groups (on 2 cores: 1 core for 1 never-frozen job of 2 or of 3 jobs).
Policies plan the whole node, not each job's home: another job whose home
lies inside R is planned elsewhere and the engine runs it on its home
(engine/switch.c: a Slurm step is never moved out of its allocation),
beside the never-frozen ones.  A step waiting for Slurm's answer on its
limit (at most 10 s) is never frozen too: its arrival and the answer each
move the other jobs' cores once.

Cost: only when a never-frozen job is live: one pass over the jobs, one
split of the managed CPUs, one copy of the topology cut to the CPUs left, a
copy of each step's job list.
]]

local cpus = require "cosched.cpus"

local M = {}

local rawlen, rawget, next, type = rawlen, rawget, next, type

-- R for m never-frozen jobs of n, as a sorted list of whole cores: as many
-- cores as the last m of n groups of the managed CPUs hold (at most all
-- groups but one), no more than `want` cores (their threads) when given, the
-- last ones in topology order of `within` (their homes) or of the managed CPUs.
function M.share(snap, n, m, want, within)
  local all = cpus.units(snap, "core", snap.cpus)
  local groups = cpus.split(snap, math.min(n, #all))
  local t = 0
  for g = #groups, math.max(2, #groups - m + 1), -1 do
    t = t + #cpus.units(snap, "core", groups[g])
  end
  if want and want < t then t = want end
  local pool = within and cpus.units(snap, "core", within) or all
  local r = {}
  for i = #pool, math.max(1, #pool - t + 1), -1 do
    for _, c in ipairs(pool[i]) do r[#r + 1] = c end
  end
  table.sort(r)
  return r
end

-- A step as the policy returned it, with the never-frozen jobs added on r.
-- What is not a table is left as it is: the engine's checks name it.
local function with_kept(st, kept, r)
  if type(st) ~= "table" or type(rawget(st, "jobs")) ~= "table" then return st end
  local out = {}
  for k, v in next, st do out[k] = v end
  local jobs, src = {}, rawget(st, "jobs")
  for i = 1, rawlen(src) do jobs[i] = rawget(src, i) end
  for i = 1, #kept do jobs[#jobs + 1] = { id = kept[i].id, cpus = r } end
  out.jobs = jobs
  return out
end

-- A shallow copy through pairs (the snapshot's read-only tables answer it).
local function copy(t)
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  return out
end

-- The topology `topo` cut to the CPUs of the set `keep`, as the engine cuts
-- the node's to the managed CPUs (cosched-policy(7) SNAPSHOT): cores and
-- LLCs holding none of them are left out and the others numbered from 1
-- again (core.llc follows its LLC), every NUMA node is kept with its cpus
-- cut; every other field (sizes, levels, packages, os_index) as it is.
local function cut_topology(topo, keep)
  local function within(list)
    local out = {}
    for _, c in ipairs(list or {}) do
      if keep[c] then out[#out + 1] = c end
    end
    return out
  end
  local llcs, renumbered = {}, {}
  for i, l in ipairs(topo.llcs or {}) do
    local c = within(l.cpus)
    if #c > 0 then
      local n = copy(l)
      n.cpus, n.index = c, #llcs + 1
      llcs[n.index], renumbered[i] = n, n.index
    end
  end
  local numa = {}
  for i, d in ipairs(topo.numa or {}) do
    numa[i] = copy(d)
    numa[i].cpus = within(d.cpus)
  end
  local cores = {}
  for _, core in ipairs(topo.cores or {}) do
    local p = within(core.pus)
    if #p > 0 then
      local n = copy(core)
      n.pus, n.index = p, #cores + 1
      if core.llc ~= nil then n.llc = renumbered[core.llc] end
      cores[n.index] = n
    end
  end
  local out = copy(topo)
  out.cores, out.llcs, out.numa = cores, llcs, numa
  return out
end

--- plan(policy_plan, snap) -> steps, results, info (see the header).
function M.plan(policy_plan, snap)
  local kept, others, threads, homes = {}, {}, 0, {}
  local all = snap.jobs
  for i = 1, #all do
    local j = all[i]
    if j.never_frozen then
      kept[#kept + 1] = j
      local t = math.tointeger(j.threads)
      threads = (threads and t and t > 0) and threads + t or nil
      if homes and j.home then
        for _, c in ipairs(j.home) do homes[#homes + 1] = c end
      else
        homes = nil                 -- one of them may run anywhere
      end
    else
      others[#others + 1] = j
    end
  end
  if #kept == 0 then return policy_plan(snap) end
  if #others == 0 then
    local jobs = {}
    for i = 1, #kept do jobs[i] = { id = kept[i].id, cpus = snap.cpus } end
    return { { jobs = jobs } }
  end
  local r = M.share(snap, #all, #kept, threads, homes)
  if #r == 0 then return policy_plan(snap) end    -- one core: nothing to keep apart
  local view = copy(snap)
  view.cpus = cpus.minus(snap.cpus, r)
  view.jobs = others
  if snap.topology then view.topology = cut_topology(snap.topology, cpus.set(view.cpus)) end
  local steps, results, info = policy_plan(view)
  if type(steps) ~= "table" then return steps, results, info end
  local out = {}
  for s = 1, rawlen(steps) do out[s] = with_kept(rawget(steps, s), kept, r) end
  return out, results, info
end

return M
