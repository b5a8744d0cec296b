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
     they stay so: the managed CPUs split into n groups by cosched.cpus.split
     (n = live jobs, following the topology), and R = the last m of them (m
     = never-frozen jobs), at most all groups but one, and no more CPUs
     than their threads (job.threads) add up to.  So R is their share
     of the node by head count - the share each would get on average if all
     n jobs were time-sliced - rounded to whole groups, at least one CPU,
     and at least one CPU is left to the others.  The never-frozen jobs all
     run on R at once (the kernel shares R between them: no plan can keep
     two jobs apart in time that the engine cannot freeze, and the engine
     accepts their overlap).
  2. The policy plans the other jobs on the rest: it is called with a view
     of the snapshot whose cpus are the managed CPUs minus R and whose jobs
     leave the never-frozen ones out (every other field is the snapshot's).
     Its selections (cosched.rotation, ageing, pairing) rotate the others in
     the cores left; none of them sees a job that is not its to schedule.
  3. Every step it returns gets the never-frozen jobs added, on R.  Its
     results and info are passed on as they are.

On a single managed CPU nothing can be kept apart and the policy gets the
whole snapshot.  When every live job is never frozen, the policy is not called: one step runs
them all on all managed CPUs (what the engine would do anyway).  A policy
that declares shares_cpus (linux, lca, ...) already runs jobs side by side
on shared CPUs and is called with the whole snapshot, never_frozen included.

The share is a choice, not a measurement: a never-frozen job gets R for all
of the time where a time-sliced job gets its cores for part of it; with m
of n jobs on a node of c CPUs that is m/n of the node rounded to whole
groups (on 2 CPUs: 1 CPU for 1 never-frozen job of 2 or of 3 jobs).  Where
R is not in a job's own allocation (its home), the engine runs the job on
its home instead (engine/switch.c): a Slurm step is never moved out of it.

Cost: only when a never-frozen job is live: one pass over the jobs, one
split of the managed CPUs, a copy of each step's job list.
]]

local cpus = require "cosched.cpus"

local M = {}

local rawlen, rawget, next, type = rawlen, rawget, next, type

-- R for m never-frozen jobs of n, as a sorted list: the last m groups of n,
-- at most all but one, and no more CPUs than `want` (their threads) when given.
function M.share(snap, n, m, want)
  local groups = cpus.split(snap, n)
  local r = {}
  for g = #groups, math.max(2, #groups - m + 1), -1 do
    local grp = groups[g]
    for i = #grp, 1, -1 do
      if want and #r >= want then break end
      r[#r + 1] = grp[i]
    end
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

--- plan(policy_plan, snap) -> steps, results, info (see the header).
function M.plan(policy_plan, snap)
  local kept, others, threads = {}, {}, 0
  local all = snap.jobs
  for i = 1, #all do
    local j = all[i]
    if j.never_frozen then
      kept[#kept + 1] = j
      local t = math.tointeger(j.threads)
      threads = (threads and t and t > 0) and threads + t or nil
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
  local r = M.share(snap, #all, #kept, threads)
  if #r == 0 then return policy_plan(snap) end    -- one CPU: nothing to keep apart
  local view = {}
  for k, v in pairs(snap) do view[k] = v end
  view.cpus = cpus.minus(snap.cpus, r)
  view.jobs = others
  local steps, results, info = policy_plan(view)
  if type(steps) ~= "table" then return steps, results, info end
  local out = {}
  for s = 1, rawlen(steps) do out[s] = with_kept(rawget(steps, s), kept, r) end
  return out, results, info
end

return M
