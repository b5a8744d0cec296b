--[==[
llcmrb - LLC miss rate balance: pairs of jobs sorted by LLC misses, top with bottom, unfolded.

Implements: paper 001 (Haritatos et al., "Contention-aware scheduling
policies for fairness and throughput"), Sec. 2, "LLC miss rate balance (LLC-MRB) scheduler [5,3]: Similar to the LBB scheduler
but it sorts the applications by their LLC miss rate."

Plan: every epoch, one step of one quantum.
  - Jobs: cosched.characterize characterizes every job when it arrives (and on
    a phase change); until it is ready a job runs only in its characterization
    placement (an LLC domain of its own), the policy's own jobs use part.left
    and one ready class N job may use part.shared.  Without counters (or with
    --policy-opt characterize=no) nothing is measured: the class is the job's
    hint (job.class), unknown counts as N, and the key is the class rank.
  - Key: the job's LLC miss rate as MPKI (misses per thousand instructions):
    mpki of its characterization, else mpki of its last counted step.  The paper's
    Table 2 gives misses per second; per instruction is what cosched counts and
    does not grow with the cores a job is given.
    When some ready job has no measured key, every job is sorted by its class
    rank instead, S > C > N (S streams from memory and misses the LLC, C reuses
    the LLC, N neither), ties by id: mixing measured and ranked keys would
    compare unlike things.
  - Pairs (cosched.pairing.topbottom): sorted by key, descending; the first
    with the last, the second with the second last, ...; with an odd count
    the middle job runs alone.  Gang-only jobs (characterization found
    FP "significantly higher than 2", Sec. 6: lock contention) are not
    paired: each is a unit of its own that runs alone on all the CPUs.
    The pairs are formed once per set of ready jobs and kept (Sec. 5: "pairs
    are statically determined at the start of the scheduling"); a job
    arriving, ending or becoming ready forms them again.
  - Rotation: the units (pairs, singles) take turns round robin: each epoch
    the unit owed most runs (cosched.rotation's order over units: never ran,
    then waited longest in whole quanta, then fewer quanta, then lowest id).
    With U units on a one-LLC node every unit runs once in any U consecutive
    quanta (no starvation).  A unit's figures are its most owed member's
    (longest wait, fewest quanta): a member that also ran as a filler of
    residual cores never makes its partner wait longer.
  - Multi-LLC and NUMA nodes (Sec. 6, "richer memory hierarchies"): with D
    islands (LLC domains, split by NUMA node), up to D non-gang units run in
    the same step, unit i on group i of cosched.pairing.groups (G = units
    run, at most D; see "Hierarchy" below): pairs are placed per island, so
    co-runners share a cache and a memory link only within a pair.  Round
    robin then serves D units per quantum.
  - each pair runs unfolded, as the paper runs it: both jobs on ALL the CPUs of
    their group with shared = true, so that all threads of both applications
    run in the quantum and the kernel time-shares them (2p threads on p cores
    in the paper's setting);
  - a single job (odd count, gang-only, only one ready) gets its whole group.

Hierarchy and thread counts (paper 001 Sec. 6): cosched-policy(7), SHIPPED POLICIES.

Parameters (--policy-opt key=value):
  split = auto          where halves are cut (folded policies): auto, llc, numa, core, pu
  characterize = yes    yes: cosched.characterize classifies and measures; no: hints only
  standalone_quanta, folded_quanta: passed to cosched.characterize

Threads: a job gets its group (or half) whatever its thread count (Sec. 6,
arbitrary thread counts, is not addressed beyond this).

When not to use it: the pairs are static, so one bad pair stays bad for the
whole run (Sec. 5: "a pair exhibiting high contention, once created by these
schedulers, is used for the entire execution");
unfolded pairs double the threads per core; jobs that do not scale are better folded (flbb, fllcmrb).
]==]

local pairing = require "cosched.pairing"

return pairing.balance_policy {
  name = "llcmrb",
  description = "LLC-MRB: jobs paired by LLC miss rate (top with bottom), both on all cpus (paper 001 Sec. 2)",
  -- pairs run unfolded on the same cpus: OpenMP jobs keep passive waiting, no shim
  shares_cpus = true,
  key = "mpki",      -- LLC misses per 1000 instructions
  fold = false,
}
