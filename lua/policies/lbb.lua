--[==[
lbb - link bandwidth balance: pairs of jobs sorted by memory bandwidth, top with bottom, unfolded.

Implements: paper 001 (Haritatos et al., "Contention-aware scheduling
policies for fairness and throughput"), Sec. 2, "Link bandwidth balance (LBB) scheduler [20,3]: It sorts applications by bandwidth
consumption and forms execution groups by selecting the first from the top and
bottom of the list, then the second from the top and bottom and so on.  All threads
of an application are executed within the same time quantum."

  - Key: the job's memory bandwidth: bw_llc of its characterization (the
    bandwidth into the LLC, i.e. from memory, measured standalone), else mem_bw,
    else bw_llc of its last counted step.
  - Unfolded, as the paper runs it: both jobs of a pair on all the CPUs of
    their group, shared = true.

The rest (characterization, pairs, round robin, islands, parameters, when
not to use it) as in llcmrb, flbb, fllcmrb: see cosched.pairing.balance_policy;
hierarchy and thread counts (Sec. 6): cosched-policy(7), SHIPPED POLICIES.
]==]

local pairing = require "cosched.pairing"

return pairing.balance_policy {
  name = "lbb",
  description = "LBB: jobs paired by memory bandwidth (top with bottom), both on all cpus (paper 001 Sec. 2)",
  -- pairs run unfolded on the same cpus: OpenMP jobs keep passive waiting, no shim
  shares_cpus = true,
  key = "bw",      -- memory bandwidth
  fold = false,
}
