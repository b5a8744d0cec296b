--[==[
lca - link and cache awareness: jobs paired by SCN class with Algorithm 1, unfolded.

Implements: the LCA co-scheduling algorithm of paper 001 (Haritatos et al.,
"Contention-aware scheduling policies for fairness and throughput"), Sec. 4.2,
Algorithm 1, as evaluated in Sec. 5.  "The core idea behind this scheme is to
prevent C and S applications from running at the same time under the same
shared cache."  Plain lca is NOT folded: Sec. 5 lists LCA among "LBB,
LLC-MRB and LCA proposed in literature (see Section 2)" and says "The folding
strategy is applied to LBB, LLC-MRB and LCA schedulers", i.e. folding is
the paper's addition on top of them (flca is the folded, aged version); the
literature LCA, like LBB, runs "all threads of an application ... within the
same time quantum".

Plan: every epoch, one step of one quantum.
  - Jobs and classes: cosched.characterize characterizes every job when it
    arrives (and on a phase change): class S, C or N from cosched.scn.  Until
    it is ready a job runs only in its characterization placement; the
    policy's own jobs use part.left and one ready class N job may use
    part.shared.  Without counters (or --policy-opt characterize=no) the class
    is the job's hint (job.class); a job without one (class "unknown") counts
    as N - it is then paired first, with an S if there is one, which is the
    pairing that hurts least if the guess is wrong.
  - Pairs (cosched.pairing.lca, Algorithm 1, O(n)), over the ready jobs in
    id order:
        foreach x in N: y <- popFromFirstNonEmpty(S, C, N); co-schedule(x, y)
        foreach x in C: y <- popFromFirstNonEmpty(C);       co-schedule(x, y)
        foreach x in S: y <- popFrom(S);                    co-schedule(x, y)
    "it pairs them with S, which cause the greatest harm. When no more S can
    be found, it pairs them with C ... When all the N have been scheduled ...
    pairing applications from the same class"; x and y are taken from the
    front of their lists; an x left without partner runs alone.  E.g.
    classes {N,S,C,C,S,N} for jobs 1..6 give (1,2) (6,5) (3,4).
    Gang-only jobs (lock contention, Sec. 6) are units of their own and run
    alone on all the CPUs.  The pairs are formed once per set of ready jobs
    (Sec. 5: "pairs are statically determined at the start").
  - Rotation and multi-LLC/NUMA placement as lbb: the unit owed most runs
    each quantum (cosched.rotation over units; a unit's figures are its most
    owed member's), up to D non-gang units per step on a node with D islands
    (LLC domains split by NUMA node), unit i on group i of
    cosched.pairing.groups; each pair on ALL the CPUs of its group with shared = true
    (the kernel time-shares the two jobs' threads); a single job gets its
    whole group.

Hierarchy and thread counts (paper 001 Sec. 6): cosched-policy(7), SHIPPED POLICIES.

Parameters (--policy-opt key=value):
  characterize = yes    yes: classify with cosched.characterize; no: hints only
  standalone_quanta, folded_quanta: passed to cosched.characterize

When not to use it: misclassified jobs stay badly paired for the whole run
(Sec. 5: "LCA's, LLB's and LLC-MRB's wide IQR are due to misclassifications
... and to the fact that pairs are statically determined"); unfolded pairs
put two threads on every core, which hurts jobs that scale; use flca.
]==]

local pairing = require "cosched.pairing"

local src, plan                         -- set by init()

return {
  api = 1,
  name = "lca",
  description = "LCA: jobs paired by SCN class (Algorithm 1), both on all cpus, round robin (paper 001 Sec. 4.2)",
  -- pairs run unfolded on the same cpus: OpenMP jobs keep passive waiting, no shim
  shares_cpus = true,
  params = {
    characterize = { default = "yes", help = "yes: measure classes with cosched.characterize; no: use class hints" },
    standalone_quanta = { default = 2, help = "characterization: quanta measured alone" },
    folded_quanta = { default = 1, help = "characterization: quanta measured folded" },
  },

  init = function(params)
    plan = pairing.static { fold = false, pair = pairing.lca }
    src = pairing.source_of(params)
  end,

  plan = function(snap)
    return plan(src, snap)
  end,
}
