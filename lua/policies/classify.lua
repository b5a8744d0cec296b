--[[
classify - characterize jobs, then let them run: the policy of `cosched classify`.

Implements: the characterization of paper 001 (Haritatos et al.,
"Contention-aware scheduling policies for fairness and throughput"),
Sec. 4.4, through cosched.characterize: each job runs alone in a
last-level-cache domain for standalone_quanta quanta (class, IPC_standalone,
bandwidths, MPKI), then folded on half of its cores for folded_quanta quanta
(IPC_folded, FP, gang_only).  A job found in the profile store (job.stored)
is ready at once, unless cosched runs with --reprofile.

Plan: every epoch, one step of one quantum:
  - the characterization placements of cosched.characterize;
  - every ready job on the CPUs outside the reserved LLC domains (all
    managed CPUs when nothing is being characterized), sharing them (the
    kernel time-shares) when there are several;
  - with nothing placed and nothing ready (cannot happen with one job): every
    job on every CPU, as the linux policy.
The results (c:results()) go back to cosched as plan()'s second value: the
profile store keeps them, and `cosched classify` prints them and, unless
--to-end, stops the job once it has its result.

Meant for one job (`cosched classify -- CMD`); with several, ready jobs keep
out of the reserved domains but share the rest of the node.
]]

local ch = require "cosched.characterize"

local c

return {
  api = 1,
  name = "classify",
  description = "characterize each job (class, IPC, FP; paper 001 Sec. 4.4), then run it on every free cpu",
  -- ready jobs share the cpus the measured job leaves: OpenMP jobs keep passive waiting, no shim
  shares_cpus = true,
  params = {
    standalone_quanta = { default = ch.defaults.standalone_quanta, help = "quanta measured alone" },
    folded_quanta = { default = ch.defaults.folded_quanta, help = "quanta measured folded (0: no FP)" },
  },
  init = function(params)
    c = ch.new { standalone_quanta = params.standalone_quanta, folded_quanta = params.folded_quanta }
  end,
  plan = function(snap)
    c:update(snap)
    local part = c:plan_step(snap)
    local jobs, placed = {}, {}
    for _, e in ipairs(part.jobs) do
      jobs[#jobs + 1] = e
      placed[e.id] = true
    end
    local free = #part.jobs > 0 and part.left or snap.cpus
    if #free > 0 then
      for _, job in ipairs(snap.jobs) do
        local i = c:info(job.id)
        if not placed[job.id] and i and i.ready then jobs[#jobs + 1] = { id = job.id, cpus = free } end
      end
    end
    if #jobs == 0 then
      for _, job in ipairs(snap.jobs) do jobs[#jobs + 1] = { id = job.id, cpus = snap.cpus } end
    end
    return { { duration = part.duration, jobs = jobs, shared = true } }, c:results()
  end,
}
