--[[
gang - gang scheduling: one job at a time on all managed CPUs, round robin.

Implements: the Gang scheduler of Haritatos et al., "Contention-aware
scheduling policies for fairness and throughput" (paper 001), Sec. 2 (after
Feitelson and Rudolph): all threads of one application run together in a
time quantum, and the applications take turns.  It is the reference of the
paper's evaluation: throughput is reported normalised to Gang.

Plan: every epoch, one step of one quantum in which the job whose turn it is
runs on all managed CPUs; every other job is frozen.  Whose turn it is comes
from cosched.rotation: the job that never ran, else the one that waited
longest (in whole quanta), ties broken by fewer quanta run, then lowest id.
Since the job that just ran has waited 0 and goes to the back, this is plain
round robin, fair by construction: over any n consecutive quanta with n
live jobs, each job runs exactly once; a job that arrives runs next.

Parameters: none.  Job priorities and classes are ignored.

Threads: a job with fewer threads than CPUs leaves the rest idle during its
quantum; a job with more threads than CPUs is time-shared by the kernel on
them.

When not to use it: jobs that do not scale to the whole node (memory-bound,
"S" jobs; paper 001 Sec. 4.1, Fig. 6) waste most of it while they run - use
tft; jobs with far fewer threads than CPUs waste it too; interactive or I/O
jobs suffer from being frozen (n - 1) quanta out of n.  Its strength is lock
contention: every thread of the running job runs at the same time.
]]

local rotation = require "cosched.rotation"

return {
  api = 1,
  name = "gang",
  description = "Gang scheduling: one job at a time on all managed CPUs, round robin",

  plan = function(snap)
    local job = rotation.pick(snap, 1)[1]
    if not job then
      return { { jobs = {} } }          -- nothing live: an empty step
    end
    return { { jobs = { { id = job.id, cpus = snap.cpus } } } }
  end,
}
