--[[
linux - no co-scheduling: what the kernel does on its own.

Implements: the "CFS" baseline of Haritatos et al., "Contention-aware
scheduling policies for fairness and throughput" (paper 001), Sec. 2: every
job may run on every managed CPU at all times and the Linux scheduler places
and time-shares the threads as it sees fit.  Nothing is ever frozen.

Plan: one step, every live job on all managed CPUs, shared = true (several
jobs on the same CPUs is the point, so the step asks the engine to allow
it).  Same as the engine's fallback plan, but chosen on purpose: use it as
the baseline that the other policies are measured against.

Parameters: none.

When not to use it: when jobs contend for the memory link or the last-level
cache, or when a multithreaded job suffers from lock contention - the kernel
spreads threads of all jobs over the cores and may put two threads of one
job on a core while another job holds the rest (paper 001, Sec. 5.3).
]]

return {
  api = 1,
  name = "linux",
  description = "No co-scheduling: every job on every managed CPU, the kernel decides",
  -- jobs share CPUs: OpenMP jobs keep the passive wait policy (cosched(1) --omp-shim)
  shares_cpus = true,

  plan = function(snap)
    local step = { jobs = {}, shared = true }
    for _, job in ipairs(snap.jobs) do
      step.jobs[#step.jobs + 1] = { id = job.id, cpus = snap.cpus }
    end
    return { step }
  end,
}
