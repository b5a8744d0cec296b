--[==[
flca - F-LCA: each epoch the K oldest jobs (waiting, contention, folding penalty), paired by LCA, folded.

Implements: F-LCA, "Folding - Link and Cache Aware", of paper 001 (Haritatos
et al., "Contention-aware scheduling policies for fairness and throughput"),
Sec. 4.4, with the characterization of Sec. 4.4 (cosched.characterize),
gang-only jobs (Sec. 6, lock contention) and LLC domains (Sec. 6, richer
memory hierarchies).

  Age = w1 * WT / (n * TQ) + w2 * CP + w3 * FP,   the paper's (w1, w2, w3) = (1, 1, 2)

  Our default is (1, 1, 1): w3 = 1, not the paper's 2, because the
  evaluation (EVALUATION.md, "F-LCA sensitivity": 90 mixes of paper 001's
  protocol on the simulated node, w3 in {0, 1, 2} on the same workloads)
  found w3 = 1 at least as good as w3 = 2 in every cell on median, mean and
  IQR, and clearly better at 8 jobs: with w3 = 2 a scalable (C or N) job's
  folding penalty FP ~ 0.5 weighs a whole unit of age, so those jobs always
  look older than streaming ones (FP ~ 0) and take the epoch's K slots; the
  S jobs ran below what Gang gives them (8 jobs, high contention: S 0.81,
  C 1.42 of Gang, median 1.01; with w3 = 1: S 1.02, C 1.28, median 1.15).
  With CP measured against IPC_standalone (below) a folded job's CP holds
  its folding loss too, so w3 = 2 counts folding about three times.
  --policy-opt w3=2 restores the paper's weights.
  "F-LCA sorts all applications by Age, and selects a constant subset of K
  applications with the highest Age to be scheduled in the next epoch, i.e.
  K time quanta. The K applications are folded, paired using LCA and
  scheduled to the system."  K = 4 with more than four jobs, else 2 (four jobs: K = 4 here, see step 3).

Plan, every epoch:
  1. Characterization: c:update(snap); c:plan_step(snap).  Jobs being
     characterized run only in their placement (standalone, then folded, in
     an LLC domain of their own); the policy schedules ready jobs in
     part.left; one ready class N job may use part.shared.  While any
     characterization is pending the epoch is a single step of one quantum
     (the module measures the plan's last step).
  2. Ages of the ready jobs (cosched.ageing):
       WT  = job.waited: seconds since the job last ran; the engine resets
             it to 0 whenever the job runs in a step (and it stays 0 while
             it runs).  So WT counts the time since the end of the job's
             last step, not its total waiting.
       n   = live jobs, TQ = snap.quantum.
       CP  = 1 - IPC_last / IPC_ref, clamped to [0, 1], from the last step
             the job ran that was counted (kept while it is frozen).
             IPC_last = ch.job_ipc(job); IPC_ref = IPC_standalone, as the
             paper says ("Progress = IPC_last_quantum / IPC_standalone",
             Sec. 4.3, which F-LCA's age reuses): a folded job's CP then
             holds its folding slowdown too, so the ageing pays a folded
             job back for both.  cp_ref = nearest takes IPC_folded instead
             when that step used a core count nearer the folded than the
             standalone one (CP as contention only, FP as folding only);
             that reading counts the folding penalty once where the paper
             can be read to count it twice.  Not counted: CP = 0.
       FP  = the characterization's 1 - IPC_folded / IPC_standalone,
             clamped to [0, 1]; unknown: 0.
     Without counters CP = FP = 0 and the age is WT / (n TQ): the K jobs
     that waited longest run - fair round robin.
  3. Selection: with D the islands of the budget (LLC domains, split by NUMA
     node: cosched.pairing.domains), the K * D oldest ready jobs (K per
     island: one F-LCA module per cache/memory island under one global
     ageing; D = 1 on the paper's flat node), sorted by age, then
     WT, then id (cosched.ageing.select).  K = parameter k, default auto
     (4 when four or more jobs are live, else 2; the paper leaves exactly
     four open: see cosched.ageing.k_default for why we take 4).
  4. Pairing: gang-only selected jobs are units of their own (Sec. 6: "resort
     to gang scheduling for them"); the others, in age order, are paired
     by LCA Algorithm 1 (cosched.pairing.lca: N with S, then C, then N; C
     with C; S with S; an odd one alone).  Class unknown counts as N.
  5. Steps (how the units share the epoch): the units are cut into rounds
     (cosched.pairing.rounds): a gang-only unit is a round alone, on all the
     budget CPUs, one quantum; the other units go D per round, unit i on
     group i of cosched.pairing.groups (each pair in its own island: LLC
     domain within one NUMA node); a pair is folded on the two halves of its group
     (cosched.cpus.split(snap, 2, split, group)); a lone job gets its whole
     group.  A round with a pair lasts pair_quanta quanta (default 2), a
     round without one quantum.  Rounds are ordered by their oldest member
     (the round holding the oldest selected job first).  Paper's case (one
     LLC, K = 4, no gang-only job): two steps of two quanta, one pair per
     step - K quanta per epoch, and each selected job gets half the node
     for two quanta, the CPU time Gang gives it in one.
     While a characterization is pending only the first round runs, one
     quantum long.
  6. An epoch runs to its end.  The engine asks for a new plan whenever a
     job's instance ends - also when it restarts at once under --window -
     which cuts the step in progress.  Paper 001's epoch is K quanta, so
     when plan() is called before the epoch's planned end (snap.now before
     the plan's start plus its steps' durations, less 5 % of a quantum of
     slack), the rest of the epoch is planned again instead of a new
     selection: the round in progress for its time left (when that is at
     least a tenth of a quantum), then the later rounds, the same units in
     the same order; jobs that left are taken out of their units (the
     partner of a departed job gets the pair's whole group), and jobs that
     arrived wait for the next epoch.  Re-sorting the rounds at every
     restart would drop the younger rounds again and again (C jobs carry
     the larger FP, so S-S rounds starved; issue #11).  Not continued: when
     a characterization is pending (its epochs are one quantum anyway) and
     with continue_epoch = no.
Starvation freedom.  Let B = w2 + w3 (CP and FP are clamped to [0, 1], so
the two terms add at most B), w1 > 0, E the longest epoch and n the number
of jobs (a fixed set of ready jobs, budget not empty).  (a) The oldest ready
job runs every epoch (its round is first, and every selected job of a round
is placed).  (b) A job j that ran in an epoch has WT_j <= E at the next
plan.  (c) Let job i have WT_i >= E + B n TQ / w1 at some plan.  Any job j
that runs from then on has, at every later plan until i runs, WT_i - WT_j >=
B n TQ / w1, hence Age_i >= w1 WT_i/(n TQ) >= w1 WT_j/(n TQ) + B >= Age_j,
with the tie broken for i by its larger WT: j stays behind i.  By (a) each
epoch in which i does not run puts one more job behind i, so i runs within
n - 1 epochs after WT_i reaches E + B n TQ / w1, i.e. within
ceil((E + B n TQ / w1) / E_min) + n epochs of its last run (E_min the
shortest epoch).  Our defaults, one LLC, K = 4, no gang-only jobs:
E = E_min = 4 TQ, B = 2: at most ceil(1 + n/2) + n epochs (the paper's
w3 = 2: B = 3, ceil(1 + 3n/4) + n).  tests/lua/
test_policies.lua checks this bound on random seeded workloads.  Jobs in
characterization are not ready; each characterization takes a bounded
number of quanta, so the bound holds once arrivals stop.

One global ageing, D islands: the K x D oldest jobs are selected once
(one ageing for the node: the F-LCA modules "closely collaborating") and
paired by one LCA pass; the rounds deal the units to the islands in NUMA
order, one per island per step.  Residual cores (below) are filled in the
same age order, so fillers are the oldest jobs not selected; a filler's WT
resets when it runs, which only ever helps it, so the starvation bound
above holds (the oldest ready job is still selected every epoch).

Cost (issue #4 asks for F-LCA's "O(log n)"): our decision is O(n log n) in
the ready jobs: every epoch walks all of them (ages, characterization) and
sorts them by age; K, D and the pairing add O(K D).  A heap of ages would
not make it O(log n): every waiting job's WT, hence its age, changes every
epoch.  BENCHMARKS.md section 5 has the measured times.
Hierarchy and thread counts (paper 001 Sec. 6): cosched-policy(7), SHIPPED POLICIES.

Parameters (--policy-opt key=value):
  k = auto           jobs per epoch per island (LLC domain / NUMA node): auto (4 if >= 4 jobs, else 2) or an even integer >= 2
  cp_ref = standalone  reference of CP's Progress: standalone (the paper) or nearest (IPC_folded for a folded step)
  w1 = 1, w2 = 1, w3 = 1   age weights (w1 > 0, w2, w3 >= 0; the paper's w3 is 2: see above)
  pair_quanta = 2    quanta per round holding a pair (integer >= 1)
  split = auto       where halves are cut: auto, llc, numa, core, pu
  characterize = yes yes: cosched.characterize; no: class hints only (unknown = N)
                     (no counters on the run: hints only, no quanta spent measuring)
  continue_epoch = yes   yes: a job's end or restart does not cut the epoch (step 6); no: select anew
  standalone_quanta, folded_quanta: passed to cosched.characterize

When not to use it: jobs with fewer threads than half the node gain nothing
from folding; jobs with heavy lock contention that the characterization
does not flag (FP within the lock_slowdown bound) suffer from folding; I/O
bound jobs (Sec. 6) belong to another scheduler.
]==]

local pairing = require "cosched.pairing"
local ageing = require "cosched.ageing"

local pool = ageing.pool()              -- id -> its entry, refilled each plan
local src, tr, k_param, split, pair_quanta, continue_epoch
-- the epoch in progress: { t0 = snap.now of its plan, rounds = { { units =,
-- gang =, dur = }, ... } } (step 6); nil when none may be continued
local epoch

-- the rest of the epoch in progress, as rounds, or nil when it is over
local function rest_of_epoch(snap, ctx)
  local ep = epoch
  if not ep or type(snap.now) ~= "number" then return nil end
  local tq = snap.quantum
  local elapsed, t, total = snap.now - ep.t0, 0, 0
  for _, r in ipairs(ep.rounds) do total = total + r.dur end
  if elapsed >= total - 0.05 * tq then return nil end
  local out = {}
  for _, r in ipairs(ep.rounds) do
    local left = t + r.dur - elapsed
    t = t + r.dur
    if left >= 0.1 * tq then
      local units = {}
      for _, u in ipairs(r.units) do
        local keep = {}
        for _, id in ipairs(u) do
          if ctx.byid[id] then keep[#keep + 1] = id end
        end
        if #keep > 0 then units[#units + 1] = keep end
      end
      if #units > 0 then
        out[#out + 1] = { units = units, gang = r.gang, dur = math.min(left, r.dur) }
      end
    end
  end
  return #out > 0 and out or nil
end
local W = { w1 = 1, w2 = 1, w3 = 1 }

local function number(params, key, lo, open)
  local v = tonumber(params[key])
  if not v or v ~= v or v == math.huge or v < lo or (open and v == lo) then
    error(("%s = '%s': expected a number %s %s"):format(key, tostring(params[key]), open and ">" or ">=", lo), 0)
  end
  return v
end

return {
  api = 1,
  name = "flca",
  description = "F-LCA: each epoch the K oldest jobs (waiting, contention, folding), LCA-paired and folded (paper 001 Sec. 4.4)",
  params = {
    k = { default = "auto", help = "jobs per epoch per island (LLC domain, split by NUMA node): auto (4 if 4 or more jobs, else 2) or an even integer >= 2" },
    cp_ref = { default = "standalone", help = "CP's reference: standalone (IPC_last / IPC_standalone, the paper) or nearest (IPC_folded for a folded step)" },
    w1 = { default = 1, help = "age weight of waiting time WT/(n TQ), > 0" },
    w2 = { default = 1, help = "age weight of the contention penalty CP, >= 0" },
    w3 = { default = 1, help = "age weight of the folding penalty FP, >= 0 (the paper's is 2)" },
    pair_quanta = { default = 2, help = "quanta each pair runs per epoch" },
    split = { default = "auto", help = "where folded halves are cut: auto, llc, numa, core or pu" },
    characterize = { default = "yes", help = "yes: classify and measure with cosched.characterize; no: use class hints" },
    continue_epoch = { default = "yes", help = "yes: a job ending or restarting mid-epoch does not cut the epoch; no: select anew" },
    standalone_quanta = { default = 2, help = "characterization: quanta measured alone" },
    folded_quanta = { default = 1, help = "characterization: quanta measured folded" },
  },

  init = function(params)
    W = { w1 = number(params, "w1", 0, true), w2 = number(params, "w2", 0), w3 = number(params, "w3", 0) }
    k_param = nil
    if params.k ~= "auto" then
      local k = tonumber(params.k)
      if not k or k < 2 or k ~= math.floor(k) or k % 2 ~= 0 then
        error(("k = '%s': expected auto or an even integer >= 2"):format(params.k), 0)
      end
      k_param = k
    end
    pair_quanta = number(params, "pair_quanta", 1)
    if pair_quanta ~= math.floor(pair_quanta) then
      error(("pair_quanta = '%s': expected an integer >= 1"):format(params.pair_quanta), 0)
    end
    split = pairing.check_split(params.split)
    if params.continue_epoch ~= "yes" and params.continue_epoch ~= "no" then
      error(("continue_epoch = '%s': expected yes or no"):format(tostring(params.continue_epoch)), 0)
    end
    continue_epoch = params.continue_epoch == "yes"
    epoch = nil
    src = pairing.source_of(params)
    if params.cp_ref ~= "standalone" and params.cp_ref ~= "nearest" then
      error(("cp_ref = '%s': expected standalone or nearest"):format(tostring(params.cp_ref)), 0)
    end
    tr = ageing.tracker(params.cp_ref)
  end,

  plan = function(snap)
    local ctx = src:begin(snap)
    tr:observe(snap, ctx.info)
    local n, tq = #snap.jobs, snap.quantum
    local entries = pool:entries(snap, ctx, tr, W, true)
    local steps = {}
    if #entries > 0 and #ctx.budget > 0 then
      -- residual cores: the ready jobs in age order (pairing.fill_holes),
      -- sorted only when a hole exists, once per plan
      local fill = { ctx = ctx, order = ageing.fill_order(ctx, entries) }
      local rounds = continue_epoch and not ctx.pending and rest_of_epoch(snap, ctx)
      if not rounds then
        rounds = {}
        local D = pairing.domains(snap, ctx.budget)
        local K = (k_param or ageing.k_default(n)) * D
        local sel = ageing.select(entries, K)
        local rank, gang, units, foldable = {}, {}, {}, {}
        for r, e in ipairs(sel) do
          rank[e.id] = r
          if e.gang then
            gang[e.id] = true
            units[#units + 1] = { e.id }
          else
            foldable[#foldable + 1] = e
          end
        end
        for _, u in ipairs(pairing.lca(foldable)) do
          units[#units + 1] = u[2] and { u[1].id, u[2].id } or { u[1].id }
        end
        rounds = pairing.rounds(units, D, gang)
        local best = {}
        for _, r in ipairs(rounds) do
          local b = math.huge
          for _, u in ipairs(r.units) do
            for _, id in ipairs(u) do b = math.min(b, rank[id]) end
          end
          best[r] = b
        end
        table.sort(rounds, function(a, b) return best[a] < best[b] end)
        if ctx.pending then rounds = { rounds[1] } end
        for _, r in ipairs(rounds) do
          local haspair = false
          for _, u in ipairs(r.units) do if #u == 2 then haspair = true end end
          r.dur = (haspair and not ctx.pending) and math.min(pair_quanta * tq, 3600) or tq
        end
        epoch = (not ctx.pending) and { t0 = snap.now, rounds = rounds } or nil
      end
      for _, r in ipairs(rounds) do
        local jobs, shared = pairing.place(snap, r.units, ctx.budget, true, split, not r.gang and fill or nil)
        steps[#steps + 1] = { duration = r.dur, jobs = jobs, shared = shared or nil }
      end
    else
      epoch = nil
    end
    local plan_steps, results = src:finish(ctx, snap, steps)
    return plan_steps, results,
      ageing.explain(snap, ctx, entries, plan_steps, n, tq, W, function(id) return tr:cp(id) end, function(id) return ageing.fp(ctx.info[id].fp) end)
  end,
}
