--[[
cosched.rotation - fair round-robin choice of jobs.

    local rotation = require "cosched.rotation"
    local run = rotation.pick(snap, 2)     -- the 2 jobs whose turn it is

order(snap [, jobs])
    All jobs (default snap.jobs) in the order in which they are owed CPU
    time, as a new plain list:
      1. jobs that have never run (quanta_run == 0) first;
      2. then the job that has waited longest: waited is compared in whole
         quanta (waited / snap.quantum rounded to the nearest integer), so
         that jobs stopped at the same switch count as equal even when the
         engine stopped them a few microseconds apart;
      3. then fewer quanta run first (among the jobs that ran in the last
         step, waited is 0 for all: the one that has had less goes on);
      4. then the lowest id.

pick(snap, k [, jobs])
    The first k jobs of order() (fewer if there are fewer jobs).

Why it is fair: with one step per epoch and k of n jobs per step, the jobs
not picked wait and rise to the front (rule 2), the ones picked drop to the
back, and among equals rule 3 prefers the one behind in quanta.  This is a
circular queue served k at a time: after any number of steps, every job that
was live throughout has run the same number of quanta, plus or minus one.
Policies that return several steps per epoch must rotate within the epoch
themselves (order() once, then walk the list).

The snapshot only says how long a job waited, not when it arrived: a job
that arrives later is not owed the quanta the others ran before it came;
rule 1 only makes sure it runs at once.
]]

local M = {}

local floor = math.floor

function M.order(snap, jobs)
  jobs = jobs or snap.jobs
  local unit = (snap.quantum and snap.quantum > 0) and snap.quantum or 1
  local list, key = {}, {}
  for i, j in ipairs(jobs) do
    list[i] = j
    key[j] = floor(j.waited / unit + 0.5)
  end
  table.sort(list, function(a, b)
    local na, nb = a.quanta_run == 0, b.quanta_run == 0
    if na ~= nb then return na end
    if key[a] ~= key[b] then return key[a] > key[b] end
    if a.quanta_run ~= b.quanta_run then return a.quanta_run < b.quanta_run end
    return a.id < b.id
  end)
  return list
end

function M.pick(snap, k, jobs)
  local list, out = M.order(snap, jobs), {}
  for i = 1, math.min(k, #list) do out[i] = list[i] end
  return out
end

return M
