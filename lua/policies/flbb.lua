--[==[
flbb - folded LBB: lbb's pairs, each job folded on half of the cpus.

Implements: paper 001 (Haritatos et al., "Contention-aware scheduling
policies for fairness and throughput"), Sec. 2 (LBB) with Sec. 5: "The folding strategy is applied to LBB, LLC-MRB and LCA
schedulers" (TFT, Sec. 4.1)

  - Key: as lbb: bw_llc of the characterization, else mem_bw, else bw_llc
    of the last counted step.
  - Folded (TFT, Sec. 4.1): one job on each half of its group's CPUs.

The rest (characterization, pairs, round robin, islands, parameters, when
not to use it) as in lbb, llcmrb, fllcmrb: see cosched.pairing.balance_policy;
hierarchy and thread counts (Sec. 6): cosched-policy(7), SHIPPED POLICIES.
]==]

local pairing = require "cosched.pairing"

return pairing.balance_policy {
  name = "flbb",
  description = "Folded LBB: lbb's bandwidth-balanced pairs, each job on half of the cpus (paper 001 Sec. 2, 5)",
  key = "bw",      -- memory bandwidth
  fold = true,
}
