--[==[
dip - DIP: DI-NUMA with priorities: priority jobs placed first and kept apart from memory-intensive co-runners.

Implements: DIP, "Distributed Intensity with Priorities", of paper 002
(Blagodurov, Zhuravlev, Kamali, Fedorova, "A Case for NUMA-Aware Contention
Management on Multicore Systems", PACT'10), on top of DI-NUMA (dinuma.lua:
devils, turtles, memory domains, mems, bounded migration, space sharing -
read its header; the planner is lua/cosched/numa_spread.lua).

The paper's words: "if some threads are deemed high-priority, the scheduler
can improve their performance significantly by preventing them from
contending with other applications. This ensures QoS and provides
performance isolation for 'important' applications"; "contention
mitigation is especially powerful in reducing the worst-case execution
times of chosen applications".

What DIP adds to DI-NUMA:
  - priority job: job.priority > 0 (job file priority=P, -1000..1000; 0, the
    default, and negative values are ordinary jobs).  The paper names no
    scale ("deemed high-priority"); higher priority is placed earlier.
  - priority jobs are placed first, by priority then intensity, each in the
    domain with the fewest devils (ties: fewest priority jobs, lowest load,
    its current domain, the node its memory is on, lowest index) - so two
    priority jobs get different domains while there are domains enough.
  - devils are kept out of priority jobs' domains when possible: a devil
    goes to the domain with the fewest devils among the domains without a
    priority job whose load would stay at most max_load threads per CPU
    (default 2: devils may crowd, time-sharing their domain, to isolate a
    priority job - the paper's trade: "it is difficult to reduce contention
    significantly for all threads"); only when no such domain has room
    does it go, by the DI-NUMA rule, to any domain.  A priority job that is
    itself a devil counts as a devil for the others' spread.
  - the imbalance that decides rebalancing (see dinuma) adds 10 per devil
    sharing a domain with a priority job: isolation outweighs the spread.
  - turtles fill by load as in DI-NUMA (they hardly contend).
Same bound on migrations, same cost accounting, same time sharing within a
domain (a priority job gets no more CPU time than others in its domain: DIP
isolates, it does not boost).  One NUMA node: nothing to isolate; DIP runs
as DI-NUMA on one node (space sharing, round robin) and says so once.

Parameters (--policy-opt key=value): devil_mpki = 10, migrate_every = 10,
min_gain = 0.5, alpha = 0.5, migrate_gbps = 1 (as dinuma), and
  max_load = 2   devils stay out of priority domains while another domain's load stays <= this (threads per CPU, > 0)

When not to use it: no job has priority > 0 (use dinuma: DIP is then the
same); more priority devils than NUMA nodes (they share domains and nothing
is isolated); when the other jobs' throughput matters as much (they crowd
into fewer domains).
]==]

local spread = require "cosched.numa_spread"

-- the parameters (devil_mpki, migrate_every, min_gain, alpha, migrate_gbps, max_load)
-- and the planner: cosched.numa_spread
return spread.policy {
  name = "dip",
  description = "DIP: DI-NUMA with priority jobs (priority > 0) placed first and isolated from devils (paper 002)",
  dip = true,         -- priorities first, and the max_load parameter
}
