--[==[
dinuma - DI-NUMA: memory-intensive jobs ("devils") spread over the NUMA nodes, each job's memory migrated with it.

Implements: DI-NUMA, "Distributed Intensity with NUMA awareness", of paper
002 (Blagodurov, Zhuravlev, Kamali, Fedorova, "A Case for NUMA-Aware
Contention Management on Multicore Systems", PACT'10).  The planner is
lua/cosched/numa_spread.lua; dip.lua is the same with priorities.

The paper's words behind each choice:
  - memory domains: "cores share parts of the memory hierarchy, which we
    term memory domains"; "there are multiple memory nodes, one per memory
    domain ... each node has its own memory controller".  A domain here is
    a NUMA node (topology.numa) holding managed CPUs.
  - devils and turtles: "memory-intensive applications, i.e., applications
    that are characterized by a high rate of requests to main memory ...
    devils. Applications with a low rate of memory requests are referred to
    as turtles".  The rate is the job's LLC MPKI (misses per thousand
    instructions, an EWMA over its counted steps, weight alpha; else the
    profile store's mpki): devil when MPKI > devil_mpki.  The paper (a
    two-page abstract) defers the threshold ("a more precise definition of
    these classes is provided later") and gives no number: devil_mpki = 10
    is our default (STREAM-like jobs measure tens of MPKI, compute-bound
    ones well under 1); calibrate per CPU.  Without counters the class hint
    decides: S (streaming) is a devil, C, N or none a turtle (logged once).
  - spreading AND memory: "not only must memory-intensive applications
    themselves be separated on different memory domains, but so must be
    their memory" ("contention for memory controllers is the dominant cause
    of performance degradation").  Jobs are sorted by intensity; the devils
    go one by one to the domain with the fewest devils (ties: least summed
    intensity, the job's current domain, the node its memory is on, lowest
    load, lowest index); the turtles then fill, each to the domain with the
    lowest load (threads per CPU).  Every plan entry gets cpus inside its
    domain and mems = { domain's os_index }: the engine confines the job's
    memory there, and with cgroup1 (cpuset.memory_migrate) moves its pages.
    The paper's DI (its ref. [4]) balances summed miss rates; we balance
    devil counts per memory controller, intensity breaking ties.
  - migration bounded: "Memory migration incurs overhead ... reap the
    benefits of contention-aware scheduling on NUMA systems while avoiding
    excessive memory migration overheads".  A job changes domain (and its
    memory moves) at most once per migrate_every epochs: jobs placed or
    moved less than migrate_every epochs ago are fixed; the others are
    placed again by the rule above, and the new placement is taken only
    when it lowers the imbalance - (max - min devils per domain) + (max -
    min threads per CPU) - by more than min_gain.  So a job whose intensity
    oscillates around devil_mpki moves at most once per migrate_every
    epochs, and only for a real gain.  A new job is placed at once.
  - cost accounted: pages moved = job.memory.pages x (1 - fraction of its
    pages already on the target node), logged at info as "job X: migrating
    N pages node a→b" (a = job.memory.home, else the domain it left; "?"
    when job.memory is absent), counted in the planner's stats.  A first
    placement whose memory is already on the node moves nothing and is
    logged at debug only.  Time: the log line and the stats also give an
    ESTIMATE of the migration time, pages x 4 KiB / migrate_gbps (default
    1 GB/s: our round figure for the kernel's page-by-page migration, not
    a measurement, and labelled "estimated" in the message): "job X:
    migrating N pages node a→b (estimated T s at 1 GB/s)".  The paper's
    text gives no rate.  The time is accounted, not used to decide: the
    bound on migrations stays migrate_every.

Step, every epoch (one step of one quantum): jobs are space-shared: in each
domain, the domain's jobs in cosched.rotation order (never ran, then longest
waited, ...) each take min(threads, CPUs left) CPUs of the domain, in core
order, until the domain is full.  With more threads than CPUs in a domain
the jobs that do not fit sit out and time-share the domain round robin: a
job waits at most (jobs in its domain - 1) epochs while the assignment
holds.  Jobs never share a CPU (shared is never set).

One NUMA node (or one with managed CPUs): nothing to spread; the policy
space-shares the node with round robin as above and says so once; with a
single node no mems are given (nothing to choose).  Memory-only nodes are
never a job's domain.

Not done: the paper's online thread migration between domains inside an
epoch (cosched plans per epoch); per-page or partial migration (mems moves
a job's whole memory); a job's memory left elsewhere despite mems (cgroup2
without memory_migrate) is not re-migrated - the engine writes mems only
when they change.  The characterization protocol (cosched.characterize) is
not used: it isolates jobs in LLC domains, which conflicts with the NUMA
placement; intensity is measured online from each step, as DI does.

Parameters (--policy-opt key=value):
  devil_mpki = 10     devil when MPKI > devil_mpki (number >= 0)
  migrate_every = 10  epochs between two domain changes (memory migrations) of a job (integer >= 1)
  min_gain = 0.5      move only when the imbalance drops by more than this (>= 0)
  alpha = 0.5         EWMA weight of the newest MPKI sample (0 < alpha <= 1)
  migrate_gbps = 1    page migration rate for the estimated migration time (GB/s, > 0)

When not to use it: a single NUMA node (nothing to gain; use tft/flca for
cache contention); jobs whose memory must stay where it is (huge, pinned or
shared memory: migration costs more than contention); jobs sized for the
whole node that barely use memory (space sharing only time-shares them);
latency-critical jobs (use dip and give them priority > 0).
]==]

local spread = require "cosched.numa_spread"

-- the parameters (devil_mpki, migrate_every, min_gain, alpha, migrate_gbps)
-- and the planner: cosched.numa_spread
return spread.policy {
  name = "dinuma",
  description = "DI-NUMA: memory-intensive jobs spread over NUMA nodes, memory migrated with them (paper 002)",
}
