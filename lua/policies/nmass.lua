--[==[
nmass - N-MASS: maximum-local mapping, then move low-penalty jobs off cache-loaded NUMA nodes.

Implements: the NUMA-Multicore-Aware Scheduling Scheme of paper 000 (Majo
and Gross, "Memory Management in NUMA Multicore Systems: Trapped between
Cache Contention and Interconnect Overhead"), Sec. 3.3-3.4, Algorithms 1-3,
with the NUMA penalty estimated from the MPKI as in Sec. 4.5.  Helpers:
cosched.numa.  Steps 1-2 (order, maximum-local mapping), remapping and time
sharing are those of maxlocal.lua (see its header); this file adds Step 3.

  Alg. 1: "First, for each processor, it sorts the list of processes homed
  on the processor in descending order of the processes' NUMA penalty.
  Second, it maps the processes onto the system using the maximum-local
  policy.  If the pressure on the memory system ... is unbalanced, then in
  the third step the algorithm refines the mapping."

Step 3, cache-aware refinement (Alg. 3), for any number of NUMA nodes:
  - pressure of a node = sum of the MPKI of the threads on its cores ("we
    estimate cache pressure based on the MPKI", Sec. 3.2; the paper's
    processes are single-threaded, one per core, so this is its
    sum{mpki_p}), the MPKI of threads that run away from their memory
    multiplied by their penalty ("the algorithm accounts for the
    performance penalty of remote execution by multiplying the MPKI of
    remotely mapped processes with their respective NUMA penalty").  A job
    whose memory is split runs on node k with penalty 1 + (np - 1) x (share
    of its memory not on k).
  - one refinement step moves one job, then pressures are recomputed, until
    no move is accepted (the listing's "until decision != CURRENT" can only
    terminate as "repeat while a move was made").  The source is the node
    with the highest pressure per core, the destination the lowest (then
    the next ones): Sec. 3.1, Fig. 6, "some processes ... are scheduled onto
    the cache with the smaller pressure".  The listing compares the two
    back() costs and may pick the direction from the less loaded node; we
    move from the loaded one only.
  - the job moved: the back of the source's list (lowest NUMA penalty:
    "the function back(l) returns the last element", lists in descending
    penalty, moved jobs pushed to the front and not moved again), skipping
    jobs that span nodes, do not fit in the destination's free cores
    (line 15: a move needs a free core there) or have an MPKI below
    min_mpki = 1 (Sec. 4.5: "non-memory-bound programs (programs with a
    MPKI smaller than 1)": they put no pressure worth moving and would pay
    the penalty for nothing).
  - accepted when the destination's new pressure, p_d + mpki x threads x
    np, is below interconnect_mpki = 60 (line 16 "pressure_1 < THRESHOLD";
    Sec. 3.4 "We select 60 MPKI for the threshold ... a cache pressure of
    around 60 MPKI corresponds to the saturation limit of the cross-chip
    interconnect of our evaluation machine") and the pair's imbalance
    |p_s/cores_s - p_d/cores_d| shrinks (Fig. 6.(c): "The amount of cache
    pressure transferred ... is less than D/2").  With more than two nodes
    the threshold applies to each destination node.
NUMA penalty: Sec. 4.5, "we estimate the NUMA penalty based on the MPKI
rate, fitting a simple linear model ... The resulting model's slope
intercept and slope are 0.015 and 1.05, respectively."  Read literally
(intercept 0.015, slope 1.05) a program of 20 MPKI would have a penalty of
21, against the measured range "between 1.0 and 1.46" (Sec. 4.1) and the
minimum of 1 (Sec. 3.2); we read the two numbers the other way round:
np = 1.05 + 0.015 x MPKI, never below 1 (np_intercept, np_slope).
Which MPKI (cosched.numa.np_of): the profile store's when it has the job
(job.stored.mpki), else the last epoch's.  The paper's best variant uses
"perfect information about the NUMA penalty of the programs from
profile-based program traces", measured "by executing the program twice,
once locally and once remotely. During the measurements all cores are
inactive, except the core that executes the program" (Sec. 3.2, 4).  Our
profile store keeps no such penalty (the characterization runs a job alone
but never remotely on purpose); it keeps the MPKI measured while the job ran
alone, which is what the Sec. 4.5 model was fitted on (Fig. 7: penalty
against MPKI of the same profiling runs).  So the stored MPKI gives the
penalty, and the live MPKI - inflated by co-runners - only when there is no
stored one.  Pressure always uses the live MPKI (Alg. 3: "the MPKI of the
last scheduler epoch").  We do not estimate the penalty on line from IPCs:
"On-line techniques to estimate the NUMA penalty are difficult to construct
with the PMU of current CPU models" (Sec. 4.5).
MPKI: job.last.metrics.mpki of the job's last counted step (the paper: "the
MPKI of the last scheduler epoch"), kept while the job does not run, else
job.stored.mpki.  cosched.characterize is not used: its isolated runs would
break the space sharing the paper measures under.
No MPKI (no counters, or a profile without mpki): the refinement cannot
work, so N-MASS says so once (cosched.log info) and maps as maxlocal.  A job
whose MPKI is not known yet (first epoch) defers the refinement; the first
MPKI then triggers a remap.
One NUMA node: nothing to refine; the mapping is maxlocal's.

Parameters (--policy-opt key=value):
  epoch = 1                seconds per step (0.001 - 3600)
  interconnect_mpki = 60   destination pressure a move must stay below (Alg. 3 line 16)
  min_mpki = 1             jobs below this MPKI are never moved
  np_intercept = 1.05      NUMA penalty np = a + b x MPKI
  np_slope = 0.015
  remap = 0.2              remap when a job's MPKI moved by more than this fraction

When not to use it: without counters (it is maxlocal); on machines other
than the paper's 2 x 4-core Nehalem set interconnect_mpki for the
interconnect's saturation point (60 is that machine's, for 4 cores per
node), and np_intercept/np_slope if the penalty of remote access differs;
multithreaded jobs sharing data across nodes (Sec. 5); balanced memory
allocation gains nothing over maxlocal (Sec. 4.3, 5).
]==]

return require("cosched.numa").policy {
  name = "nmass",
  description = "N-MASS: maximum-local, then low-penalty jobs moved off cache-loaded NUMA nodes (paper 000 Alg. 1-3)",
  refine = true,
}
