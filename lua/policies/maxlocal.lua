--[==[
maxlocal - maximum-local: every job's threads on the NUMA node that holds its memory, while cores last.

Implements: the maximum-local scheme of paper 000 (Majo and Gross, "Memory
Management in NUMA Multicore Systems: Trapped between Cache Contention and
Interconnect Overhead"), Sec. 3.3, Algorithm 2 (map_maxlocal), the
"maximum-local" policy of the evaluation (Sec. 4.3: "similar to N-MASS,
except it does not include the cache-aware refinement step").  nmass is
the same plus the refinement (Alg. 3).  Helpers: cosched.numa.

  "The maximum-local scheme maximizes data locality in the system by mapping
  processes onto their home nodes in descending order of their NUMA
  penalty."  "get_next_available_core(p) returns the next free core,
  preferably from processor p.  If there are no free cores on processor p,
  the function returns a free core from a different processor."

Plan, every epoch: one step of `epoch` seconds (default 1 s, Sec. 3.4 "We
select an epoch length of 1s"; independent of --quantum).
  1. Home: job.memory (pages, nodes = { [os_index] = fraction }, home) gives
     the job's home node (the node with the largest share of its resident
     memory: the paper assumes all of it on one node and, Sec. 5, "OSs
     provide information about the distribution of pages ... can be used to
     determine a program's preferred home processor if the program's memory
     is scattered").  No job.memory: no home (placed where most cores are
     free, after the homed jobs of equal rank).
  2. Order (Alg. 1 lines 2-3 and the merge of Alg. 2, which amounts to one
     list in descending NUMA penalty): NUMA penalty estimated from the
     MPKI (job.last.metrics.mpki of the last counted step, kept while the
     job does not run, else job.stored.mpki), np = 1.05 + 0.015 x MPKI
     (Sec. 4.5, see nmass.lua for how the coefficients were read), when
     every job's MPKI is known; then the job's share of memory on its home
     node, then pages, then id.  Without counters the order is by memory
     share alone.
  3. Mapping (Alg. 2, any number of nodes): a job needs min(threads,
     managed cores) cores (the paper maps one single-threaded process per
     core; a job's threads take whole cores, hyperthreads together); it
     takes free cores of its home node while there are any, and the rest on
     the other nodes in descending share of its memory, then most free
     cores.  Within a node a job keeps the cores it holds, else the lowest
     free ones.  Memory is not moved (mems unset): the threads go to the
     memory (Sec. 2: "we assume that the home processor of a process cannot
     be changed (i.e., data cannot be migrated)").
  4. Remap only when the set of jobs, a job's home node or the managed CPUs
     change, or a job's MPKI moved by more than `remap` (20 %) relative to
     the value the mapping was made with (Sec. 3.4: "The scheduler is
     invoked if a process's MPKI changes by more than 20% relative to the
     previous scheduler epoch"; we compare with the mapping's value so that
     a slow drift also counts).  Otherwise the previous CPUs are kept
     (Sec. 3.4: "The costs of re-schedules ... can be high").
Space sharing: every job runs on its own cores, none is frozen, as long as
the jobs' cores add up to at most the managed cores.  Oversubscribed (more
cores asked than the node has): the paper's mapping is space-only ("n equals
at most the number of cores", Sec. 3.3 Limitations; "if the OS scheduler
decides on the temporal multiplexing ... N-MASS can refine this mapping"),
so the temporal part is ours: each epoch the jobs in cosched.rotation order
(never ran, waited longest, fewer quanta, id), each taken while its cores
still fit, are mapped as above and the others are frozen for the epoch.  A
job left out rises in the order: it runs within n - 1 epochs (n jobs); jobs
of equal size run equally often, plus or minus one epoch.

Parameters (--policy-opt key=value):
  epoch = 1              seconds per step (0.001 - 3600)
  np_intercept = 1.05    NUMA penalty estimate np = a + b x MPKI (ordering only)
  np_slope = 0.015
  remap = 0.2            remap when a job's MPKI moved by more than this fraction

When not to use it: unbalanced memory (most jobs' memory on one node) puts
all memory-bound jobs on one last-level cache - the paper's case for N-MASS
(Sec. 4.3, maps 0000, 1100); multithreaded jobs that share data across
nodes (Sec. 5: "We do not consider multithreaded programs with a shared
address space"); a one-node machine (nothing to choose: every job is local).
]==]

return require("cosched.numa").policy {
  name = "maxlocal",
  description = "Maximum-local: each job's threads on its memory's NUMA node while cores last (paper 000 Alg. 2)",
  refine = false,
}
