--[==[
fllcmrb - folded LLC-MRB: llcmrb's pairs, each job folded on half of the cpus.

Implements: paper 001 (Haritatos et al., "Contention-aware scheduling
policies for fairness and throughput"), Sec. 2 (LLC-MRB) with Sec. 5: "The folding strategy is applied to LBB, LLC-MRB and
LCA schedulers" (TFT, Sec. 4.1)

  - Key: as llcmrb: mpki of the characterization, else of the last counted step.
  - Folded (TFT, Sec. 4.1): one job on each half of its group's CPUs.

The rest (characterization, pairs, round robin, islands, parameters, when
not to use it) as in lbb, llcmrb, flbb: see cosched.pairing.balance_policy;
hierarchy and thread counts (Sec. 6): cosched-policy(7), SHIPPED POLICIES.
]==]

local pairing = require "cosched.pairing"

return pairing.balance_policy {
  name = "fllcmrb",
  description = "Folded LLC-MRB: llcmrb's miss-rate-balanced pairs, each job on half of the cpus (paper 001 Sec. 2, 5)",
  key = "mpki",      -- LLC misses per 1000 instructions
  fold = true,
}
