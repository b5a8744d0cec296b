--[==[
fop - fair on progress: every quantum the two oldest jobs run, folded; age = waiting + contention.

Implements: Fair on Progress (FOP) of paper 001 (Haritatos et al.,
"Contention-aware scheduling policies for fairness and throughput"),
Sec. 4.3:
    Progress = IPC_last_quantum / IPC_standalone,  CP = 1 - Progress,
    Age = WT / (n * TQ) + CP
"Every time quantum, the scheduler selects the applications with the highest
age, thus rewarding applications that have fallen behind."

Reading: "the applications" (plural) with the highest age: FOP is presented
right after TFT (Sec. 4.1) and before F-LCA combines the two, as the
mechanism that decides WHICH applications run; we run it on TFT's mechanism:
each quantum the k oldest jobs (k = 2 per LLC group, parameter k) run, in
age order two by two, each pair folded on the two halves of its group.  No
class pairing (that is LCA's, Sec. 4.2; flca's paper variant has both).

Plan: every epoch, one step of one quantum.
  - Ages (cosched.ageing, weights (1, 1, 0)): WT = job.waited, the seconds
    since the job last ran, which the engine resets to 0 when it runs; n =
    live jobs; TQ = snap.quantum; CP from the job's last quantum that ran
    and was counted: Progress = ch.job_ipc(job) / IPC_standalone (the job's
    IPC as cosched.characterize defines it), CP clamped to [0, 1]; a job
    keeps its CP while frozen (its "last quantum" is the last one it ran).
    Without counters CP = 0 and FOP is round robin by waiting time (the job
    that waited longest first, ties by id).
  - Selection: ready jobs sorted by age (then WT, then id).  If the oldest is
    gang-only (Sec. 6, lock contention) it runs alone on all the CPUs;
    otherwise the k oldest non-gang jobs run: pairs (1st, 2nd), (3rd, 4th),
    ..., pair i on group i of cosched.pairing.groups (G = pairs,
    at most one per island when k = auto), folded on the group's halves
    (cosched.cpus.split(snap, 2, split, group)); an odd one out gets its
    whole group.  One ready job: all the CPUs.
  - Characterization (cosched.characterize, Sec. 4.4 protocol): as in flca;
    jobs being characterized run in their placement, the others in
    part.left, one ready N job in part.shared.  Without counters the class
    hint is all there is (FOP does not use classes).
  Starvation-free: the oldest ready job runs every quantum, and CP <= 1
  while WT grows without bound (see flca's proof with w3 = 0).

Hierarchy and thread counts (paper 001 Sec. 6): cosched-policy(7), SHIPPED POLICIES.

Parameters (--policy-opt key=value):
  k = auto              jobs run per quantum: auto = 2 per island (LLC domain, split by NUMA node); an integer >= 1
  split = auto          where halves are cut: auto, llc, numa, core, pu
  characterize = yes    yes: cosched.characterize measures IPC_standalone; no: hints only
  standalone_quanta, folded_quanta: passed to cosched.characterize

When not to use it: FOP trades throughput for fairness (Sec. 4.3: "granting
more time slots to applications suffering from interference, increases the
possibility of interference itself"); it pairs jobs blindly - use flca.
]==]

local pairing = require "cosched.pairing"
local ageing = require "cosched.ageing"

local pool = ageing.pool()              -- id -> its entry, refilled each plan
local src, tr, k_param, split
local W = { w1 = 1, w2 = 1, w3 = 0 }

return {
  api = 1,
  name = "fop",
  description = "FOP: each quantum the oldest jobs (waiting + contention penalty) run, folded in pairs (paper 001 Sec. 4.3)",
  params = {
    k = { default = "auto", help = "jobs per quantum: auto (2 per island: LLC domain, split by NUMA node) or an integer >= 1" },
    split = { default = "auto", help = "where folded halves are cut: auto, llc, numa, core or pu" },
    characterize = { default = "yes", help = "yes: measure IPC_standalone with cosched.characterize; no: hints only" },
    standalone_quanta = { default = 2, help = "characterization: quanta measured alone" },
    folded_quanta = { default = 1, help = "characterization: quanta measured folded" },
  },

  init = function(params)
    if params.k ~= "auto" then
      k_param = tonumber(params.k)
      if not k_param or k_param < 1 or k_param ~= math.floor(k_param) then
        error(("k = '%s': expected auto or an integer >= 1"):format(params.k), 0)
      end
    end
    split = pairing.check_split(params.split)
    src = pairing.source_of(params)
    tr = ageing.tracker("standalone")
  end,

  plan = function(snap)
    local ctx = src:begin(snap)
    tr:observe(snap, ctx.info)
    local n, tq = #snap.jobs, snap.quantum
    local entries = pool:entries(snap, ctx, tr, W, false)   -- FOP's age: no FP term
    local steps = {}
    if #entries > 0 and #ctx.budget > 0 then
      -- the oldest job; unless it is gang-only, the k oldest non-gang jobs
      -- (a selection, not a sort: cosched.ageing.top)
      local oldest = ageing.top(entries, 1)[1]
      local units = {}
      if oldest.gang then
        units[1] = { oldest.id }
      else
        local k = k_param or 2 * pairing.domains(snap, ctx.budget)
        local cur
        for _, e in ipairs(ageing.top(entries, k, function(x) return x.gang end)) do
          if cur and #cur == 1 then
            cur[2] = e.id
          else
            cur = { e.id }
            units[#units + 1] = cur
          end
        end
      end
      local fill = not oldest.gang and { ctx = ctx, order = ageing.fill_order(ctx, entries) } or nil
      local jobs, shared = pairing.place(snap, units, ctx.budget, true, split, fill)
      steps[1] = { duration = tq, jobs = jobs, shared = shared or nil }
    end
    local plan_steps, results = src:finish(ctx, snap, steps)
    return plan_steps, results,
      ageing.explain(snap, ctx, entries, plan_steps, n, tq, W, function(id) return tr:cp(id) end, nil)
  end,
}
