--[==[
llcmrb - LLC miss rate balance: pairs of jobs sorted by LLC misses, top with bottom, unfolded.

Implements: paper 001 (Haritatos et al., "Contention-aware scheduling
policies for fairness and throughput"), Sec. 2, "LLC miss rate balance (LLC-MRB) scheduler [5,3]: Similar to the LBB scheduler
but it sorts the applications by their LLC miss rate."

  - Key: the job's LLC miss rate as MPKI (misses per thousand instructions):
    mpki of its characterization, else mpki of its last counted step (the
    paper's Table 2 gives misses per second).
  - Unfolded, as the paper runs it: both jobs of a pair on all the CPUs of
    their group, shared = true.

The rest (characterization, pairs, round robin, islands, parameters, when
not to use it) as in lbb, flbb, fllcmrb: see cosched.pairing.balance_policy;
hierarchy and thread counts (Sec. 6): cosched-policy(7), SHIPPED POLICIES.
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
