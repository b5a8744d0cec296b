--[==[
flca - F-LCA: each epoch K jobs, folded in pairs: the jobs most behind their gang share, in the pairs measured to run best.

Implements: F-LCA, "Folding - Link and Cache Aware", of paper 001 (Haritatos
et al., "Contention-aware scheduling policies for fairness and throughput"),
Sec. 4.4, with the characterization of Sec. 4.4 (cosched.characterize),
gang-only jobs (Sec. 6, lock contention) and LLC domains (Sec. 6, richer
memory hierarchies).

The defaults and paper 001's policy.  Paper 001's F-LCA ages every job by
FOP's Age (below), selects the K oldest and pairs them by LCA's class rule
(S not beside C; our lone = any and holes = any, below, relax it for a
lone S job and for spare cores); with this file's other defaults that
policy is

  --policy flca:ageing=fop:select=oldest:pairing=lca

By default flca keeps F-LCA's three parts - folding, pairs chosen against
contention, ageing by lost progress - and takes these decisions from
measurement instead of from the classes:
  ageing = progress   a job's age is the progress it is short of against
                      plain gang ("Progress ageing" below), not FOP's rates;
  select = weighted   with more ready jobs than K, the K / 2 pairs that serve
                      the most owed jobs at their best measured speeds
                      ("Weighted selection", step 3);
  pairing = measured  the pairs that maximise the jobs' measured speeds
                      beside each other, learnt per pair of jobs, trusted
                      after one sample (confidence = 1; "Measured pairing");
                      a pair LCA forbids only when one of its members has
                      given a speed;
  schedule = fair     when every ready job runs in the epoch (n = K), its
                      time shared among pairs and jobs alone by the fair
                      linear program over their measured speeds ("The
                      fair schedule", step 5).
Measured (EVALUATION.md, "A second seed"; docs/eval/issue24.md, "The
defaults"): in the simulator, both model readings (paper001: S apps
bandwidth-bound, the calibrated model; latbound: the latency-bound
what-if) and paper 004's matrix, two seeds, 44 cells, the defaults' mean
of mix means is at or above tft's with paired wins >= losses in all 44
(before the fair schedule, below, in 43: paper001 4 high+N seed 1 was W-L
5-6, now 12-3; docs/eval/issue24.md), paper 001's F-LCA's in about a third; at 8 jobs,
medium and high contention, IQR 0.06-0.23, 0.92-0.96 of the fair bound,
the least-served job at 0.79 of the max-min bound or more; paper001 8
high 1.04 of gang (tft 1.02, paper 001's F-LCA 1.01; the fair bound is
1.17 of gang there), latbound 8 high 1.31 (tft 1.28, paper 001's F-LCA
1.26).
On real OpenMP jobs without counters (BENCHMARKS.md section 8c, 8d) their
makespan was within the runs' spread of the best of linux, gang and tft.
What it gives up: LCA's rule is no longer a guarantee (a pair it forbids
runs when its members are measured faster together than in the pairs it
allows: S apps that share one memory link, paper001), and learning costs:
trying each untried pair once at four jobs put the defaults up to 0.005
below LCA's pairs in the cells where those were best (4 medium, 4 high+N
of the former uncalibrated bandwidth-bound what-if, docs/eval/issue24.md).  Without counters or OpenMP region counts no speed is learnt
and the pairs follow LCA's rule (class hints; jobs without hints count as
N, so they pair by age).  The region counts are the job's own word: a job
can choose its partner by them while every live job is its owner's; while
jobs of several owners (job.owner) are live its counts value every partner
alike, it counts as silent for LCA's rule, and its speed in the ledger is
at least 1 (cosched-policy(7), region counts; region_progress = no removes
the lever altogether).

  Age = w1 * WT / (n * TQ) + w2 * CP + w3 * FP,   the paper's (w1, w2, w3) = (1, 1, 2)

  Our default is (1, 1, 1): w3 = 1, not the paper's 2, because the
  evaluation (EVALUATION.md, "F-LCA sensitivity": 90 mixes of paper 001's
  protocol on the simulated node, w3 in {0, 1, 2} on the same workloads)
  found w3 = 1 at least as good as w3 = 2 in every cell on median, mean and
  IQR, and clearly better at 8 jobs: with w3 = 2 a scalable (C or N) job's
  folding penalty FP ~ 0.5 weighs a whole unit of age, so those jobs always
  look older than streaming ones (FP ~ 0) and take the epoch's K slots; the
  S jobs ran below what Gang gives them (8 jobs, high contention: S 0.81,
  C 1.42 of Gang, median 1.01; with w3 = 1: S 1.02, C 1.28, median 1.15).
  (Measured with cp_ref = standalone, under which a folded job's CP holds
  its folding loss too, so w3 = 2 counted folding about three times.)
  --policy-opt w3=2 restores the paper's weights.
  "F-LCA sorts all applications by Age, and selects a constant subset of K
  applications with the highest Age to be scheduled in the next epoch, i.e.
  K time quanta. The K applications are folded, paired using LCA and
  scheduled to the system."  K = 4 with more than four jobs, else 2 (four jobs: K = 4 here, see step 3).

Plan, every epoch:
  1. Characterization: c:update(snap); c:plan_step(snap).  Jobs being
     characterized run only in their placement (standalone, then folded, in
     an LLC domain of their own); the policy schedules ready jobs in
     part.left; one ready class N job may use part.shared.  While any
     characterization is pending the epoch is a single step of one quantum
     (the module measures the plan's last step).
     The folded quantum (folded_phase = auto): with ageing = progress,
     deferred (cosched.characterize, DEFERRED): the job is ready after its
     standalone quanta, and its pair rounds check it for lock contention (a
     slowdown within lock_slowdown beside a partner rules it out); only a
     job slowed beyond it is measured folded alone (locks or contention?).
     IPC_folded and FP come only from folded steps without a non-N
     partner, so under flca they mostly stay unknown.  Paper 001's protocol
     (alone) runs the job folded alone, its domain's other half open to
     ready N jobs only: idle while none is ready, i.e. when jobs arrive
     together.  Measured (docs/eval/issue24.md, "Characterization without
     an idle half"): in the simulator's 4-job cells, 0.3-0.7 % of the mean;
     paper004 4 low went from below tft (1.045 vs 1.047, both seeds) to
     above it (1.052).  Progress ageing needs IPC_standalone only (FP and
     IPC_folded serve FOP's Age and CP's reference), so ageing = fop keeps
     the paper's protocol (alone).
  2. Ages of the ready jobs (cosched.ageing):
       WT  = job.waited: seconds since the job last ran; the engine resets
             it to 0 whenever the job runs in a step (and it stays 0 while
             it runs).  So WT counts the time since the end of the job's
             last step, not its total waiting.
       n   = live jobs, TQ = snap.quantum.
       CP  = 1 - IPC_last / IPC_ref, clamped to [0, 1], from the last step
             the job ran that was counted (kept while it is frozen).
             IPC_last = ch.job_ipc(job).  IPC_ref (cp_ref = nearest, the
             default): IPC_folded when that step used a core count nearer
             the folded than the standalone one, else IPC_standalone: CP is
             the contention penalty only, and folding is counted once, by
             FP.  cp_ref = standalone reads the paper literally ("Progress =
             IPC_last_quantum / IPC_standalone", Sec. 4.3, written for FOP,
             which does not fold): a folded job's CP then holds its folding
             loss and FP adds it again, so a folded C job looked 0.7-0.9
             age units older than a folded S job and got 1.26x Gang's CPU,
             S 0.73x (issue #24).  Not counted: CP = 0.
       FP  = the characterization's 1 - IPC_folded / IPC_standalone,
             clamped to [0, 1]; unknown: 0.
     Without counters FP = 0, and CP comes from what the job's last step
     has (cosched.ageing.tracker, said as the job's "signal"): its OpenMP
     region throughput when it completed 8 regions or more (region_progress
     = yes: regions per second against its own best of late at that width,
     the CPU share it got times the work it did per CPU second, so memory
     contention shows too, which CPU time cannot see), else its CPU time
     (cpu_progress = yes: its CPU per core against its own best of late, so
     another process on its cores makes it older); with both = no CP = 0
     too and the age is WT / (n TQ): the K jobs that waited longest run -
     fair round robin.
  3. Selection: with D the islands of the budget (LLC domains, split by NUMA
     node: cosched.pairing.domains), the K * D oldest ready jobs (K per
     island: one F-LCA module per cache/memory island under one global
     ageing; D = 1 on the paper's flat node), sorted by age, then
     WT, then id (cosched.ageing.select).  K = parameter k, default auto
     (4 when four or more jobs are live, else 2; the paper leaves exactly
     four open: see cosched.ageing.k_default for why we take 4).
     Weighted selection (select = weighted, the default): when more
     ready jobs than K * D wait, the K * D jobs are chosen as K * D / 2
     pairs at once (cosched.pairing.weighted) among the max(10, 2 K D)
     oldest: the pairs whose sum over both members of w x max(its measured
     speed beside the other, 0.25) is largest, w = age + 0.01 for a job
     behind (age > 0), else 0.01 / r^alpha (below) (speeds as
     pairing = measured learns them; untried: 1.5), LCA's rule kept (a pair
     it forbids only where no choice of compatible pairs fills the epoch)
     unless pairing = measured.  The pairs are the units of step 4 (no
     completion, no lone rule); a gang-only oldest job, or n <= K * D,
     falls back to the K oldest.  With ageing = progress the age is what
     the job is owed (below): a job behind its gang share is served in the
     pairs where it progresses best, and the surplus (what the node gives
     beyond every job's gang share) goes to jobs at or ahead of their share
     (age <= 0) by weight 0.01 / r^alpha (at most 0.01: a job that arrives
     starts level with the least owed, before any progress), r = the progress the job made
     since it arrived over gang's (ageing ledger:ratio): the alpha-fair
     rule of network utility maximisation (Mo and Walrand: alpha = 0 the
     largest total, to the pairs that run fastest; 1 proportional
     fairness; to infinity max-min).  That is drift-plus-penalty
     (max-weight scheduling with virtual queues for the constraint "every
     job at least its gang share", V = 0.01 / r^alpha per job, the
     gradient of sum r^(1-alpha) / (1-alpha)); the queues here are not
     reflected at 0 (a job ahead keeps its lead: with reflection the IQR of
     paper001 8 high, seed 2, rose from 0.19 to 0.45, mean 1.327 -> 1.302).
     alpha = 3, measured (docs/eval/issue24.md, "Counting progress right,
     and sharing the surplus"): in the simulator's 8-job cells alpha = 0
     held most jobs at their share exactly (median 1.01 of gang) and gave
     the surplus to a few (IQR 0.43-0.46 at latbound 8 high, the what-if);
     alpha = 2 left it at 0.33-0.34, alpha = 3 0.22-0.24 with the mean
     above tft's in every cell (W >= L), alpha = 4 tied tft's wins and
     losses where alpha = 3 kept a margin, alpha = 8 fell below tft in
     three cells; on held-out mixes (seeds 3 and 4, 22 cells) alpha = 3
     kept both (IQR <= 0.23), alpha = 4 lost one.
     Starvation: FOP's bound below does not cover it; a waiting
     job's age grows without bound and its claim with it (its speed counts
     at least 0.25), so it is chosen once it outweighs the others (a test:
     a job at a twentieth of its speed beside everyone waits at most a few
     tens of epochs; without the 0.25 floor it stopped running).  It is the max-weight rule of queueing theory
     (serve the configuration with the largest backlog-weighted rate), with
     the age as the backlog: what F-LCA's selection of the K oldest
     approximates without the rates.
  Progress ageing (ageing = progress, the default): the age is what the
     job is owed, in quanta: the progress plain gang would have given it
     since it arrived (dt / n per interval dt, n live jobs) less the
     progress it made (its Progress, IPC_last / IPC_standalone with
     counters, else its region throughput against its own best, else 1,
     times the CPU seconds it got over the cores it kept busy:
     cosched.ageing.ledger), instead of w1 WT / (n TQ) + w2 CP + w3 FP.
     FOP ages a job for the rate at which it progresses (CP, FP); the ledger
     for the progress it is short of, like CFS's virtual runtime counted in
     progress instead of CPU time: "Fair on Progress" (Sec. 4.3: "enabling
     all the applications to progress at a similar pace") kept exactly.
     The ages `cosched status` shows are then owed / TQ (the wt, cp and fp
     terms beside them stay FOP's, for reference).
     Measured: "The defaults and paper 001's policy" above.
  4. Pairing: gang-only selected jobs are units of their own (Sec. 6: "resort
     to gang scheduling for them"); the others, in age order, are paired
     by LCA Algorithm 1 (cosched.pairing.lca: N with S, then C, then N; C
     with C; S with S; an odd one alone).  Class unknown counts as N.
     Pair completion (complete = yes): a job LCA leaves alone (an odd
     number of S and of C among the selected) takes the oldest unselected
     ready job LCA allows beside it (cosched.pairing.complete: N with any,
     S with S, C with C), the oldest leftover first; alone otherwise.  A
     lone S job forfeits its folding gain for a whole quantum and leaves
     its half of the node to no one else: 27.7 % of node time on one of
     the evaluation's 8-job mixes before (issue #24).
     Lone S (lone = any): an S job still alone (no compatible job left,
     e.g. n = K = 4 with 2 S, 1 C, 1 N: LCA pairs N with S and leaves an S
     and a C) takes the oldest job that is alone or unselected, whatever
     its class (pairing.pair_lone): an S job does not scale, so alone it
     gains nearly nothing from the other half of the node while the other
     job waits frozen.  Measured on the evaluation's high-contention mixes
     with N apps (4 jobs): mean of mix means 1.19 -> 1.36 of Gang (tft
     1.37); no cell worse.  lone = alone: both alone, as Algorithm 1.
  5. Steps (how the units share the epoch): the units are cut into rounds
     (cosched.pairing.rounds): a gang-only unit is a round alone, on all the
     budget CPUs, one quantum; the other units go D per round, unit i on
     group i of cosched.pairing.groups (each pair in its own island: LLC
     domain within one NUMA node); a pair is folded on the two halves of its group
     (cosched.cpus.split(snap, 2, split, group)); a lone job gets its whole
     group.  A round with a pair lasts pair_quanta quanta (default 2), a
     round without one quantum.  Rounds are ordered by their oldest member
     (the round holding the oldest selected job first).  Paper's case (one
     LLC, K = 4, no gang-only job): two steps of two quanta, one pair per
     step - K quanta per epoch, and each selected job gets half the node
     for two quanta, the CPU time Gang gives it in one.
     While a characterization is pending only the first round runs, one
     quantum long.
  Cores per job (threads = used): a job gets as many whole cores as the
     threads it keeps busy (cosched.ageing.busy_threads: job.team, the
     OpenMP team size, when the job reports one smaller than the cores it
     ran on - a team that fills them is only the shim following the cores
     - or has not run yet; else from last.cpu / last.wall, trimmed after
     two steps in a row that left half a CPU or more idle; its declared
     width again one run in 8 and whenever it uses it); the cores left are filled (pairing.fill_holes), and with holes =
     any those no compatible job takes go to waiting jobs of any class:
     never a core to nobody while a job waits frozen.
  Measured pairing (pairing = measured, the default; docs/eval/issue24.md):
     instead of LCA's rule, the selected jobs are
     paired to maximise the sum over both members of est[job][partner], a
     job's speed beside that partner job, learned from the steps the
     policy ran (each job's last step was beside the partner the previous
     plan gave it), smoothed (weight 0.3 per new sample); a pair measured
     fewer than `confidence` times counts as 1.5, above any folded speed,
     so untried pairs are tried; the round that tries one runs last in its
     epoch (only the plan's last step is measured: run first, the try taught
     nothing and the pair, still untried, was chosen again - on one of the
     evaluation's 4-job mixes a pair was tried four epochs running, never
     learnt).  confidence = 1 (the default): one sample
     decides, later ones refine it; 3 tried each pair three times before
     trusting it, which cost 0.001-0.020 of the mean of mix means in each
     of 44 simulated cells, 6 of them with 5 % counter noise
     (docs/eval/issue24.md).  Pair completion then takes the oldest
     unselected job of any class.  The speed is the job's Progress from
     cosched.ageing's tracker (tr.fresh): IPC_last / IPC_standalone with
     counters, else its region throughput against its own best at that
     width; a job without either learns nothing.  A pair LCA forbids runs
     only when one of its members has given a speed (spoke: tr.fresh, for
     the live job): while no ready job has, the pairing is LCA's, and class
     hints keep S away from C where nothing can be measured (no counters,
     no OpenMP region counts; jobs without hints, N, pair by age); once
     some have, such a silent pair scores FORBIDDEN below any other.  A
     job that ran only as a filler of residual cores in its last step, or
     alone, learns nothing from it.
     Why per job and not per class pair: a class is a coarse summary of
     two behaviours (how much a job hurts, how much it suffers), and jobs
     of one class differ in both: in the simulator's paper 001 model
     (latency-bound what-if) jacobi (S), folded, keeps 0.29 of its speed beside stream (S) and
     0.87 beside trisolv (S), so one S-S estimate is wrong for both pairs; without counters every
     unhinted job is N and one N-N estimate tells no pair from another.
     Measured on the evaluation's mixes (docs/eval/issue24.md, "Measured
     pairing per job"): per job at least as good as per class pair in 15
     of 18 cells, within 0.006 in the other 3.
  Round durations (round_time = age): when every ready job is selected
     (n = K) the rounds' durations are proportional to their jobs' mean
     age, within 0.5-1.5 of the even share (the epoch's length kept); the
     default (equal) gives each round pair_quanta quanta.  The fair
     schedule below, where it applies, takes the place of both.
  The fair schedule (schedule = fair, the default): when every ready job
     is selected (n = K) in two rounds or more (four jobs or more: at
     K = 2 the one pair round stays) on one island (D = 1), pairing is
     measured, no job is gang-only, no characterization is pending, every
     selected job's speed is measured against alone (tr.signal "ipc":
     counters), every pair of them has an estimate, and they are at most
     12 (cosched.fair_lp's bound of 1024 rates), the epoch is not one pairing in equal rounds but the time
     fractions of the fair linear program (cosched.fair_lp, GLPK) over
     every pair folded (its members at their est beside each other) and
     every job alone on the whole budget (at 1): every job at least 1/n of
     its progress alone - its gang share - plus its debt in the ledger
     (ageing = progress) spread over DEBT_EPOCHS = 4 epochs (at most
     another 1/n), and the most
     progress in all (`cosched simulate --bound` solves the same program
     with the model's true speeds: its "fair" bound).  Each configuration
     with a tenth of a quantum or more is a round of its fraction of the
     epoch's length.  Why: one pairing in equal rounds gives no job its
     share when every partner slows it below half - a C job beside an S
     one kept 0.12 of its speed alone, half its gang share, in the
     evaluation's 4-job mixes - and cannot give the surplus to the pairs
     that make it; the program runs such a job alone part of the time and
     puts an N job beside two others (the bound's own schedule on that
     mix: total 1.133 -> 1.266, the fair bound 1.280).  The debt term
     is what keeps a rate that noise overestimated from holding a job
     below its share for good (5 % counter noise, latbound 4 medium: the
     least-served job at 0.59 of its gang share without it, in the
     prototype, 0.93 with it; docs/eval/issue24.md).  Two things it does
     not yet do: the ledger credits a job's CPU time in a plan at the
     speed of the plan's last step, so the debt reads a job that ran alone
     and paired in one epoch at one of the two speeds; and the halves a
     pair of the program's rounds gets follow halves = alternate's record
     of the matching, not of those rounds.
     Where it does not apply - no counters (region speeds are against the
     job's own best, not against alone), several islands, a pair still
     untried, cosched built without GLPK - the matching stays; schedule =
     matching keeps it always.
  6. An epoch runs to its end.  The engine asks for a new plan whenever a
     job's instance ends - also when it restarts at once under --window -
     which cuts the step in progress.  Paper 001's epoch is K quanta, so
     when plan() is called before the epoch's planned end (snap.now before
     the plan's start plus its steps' durations, less 5 % of a quantum of
     slack), the rest of the epoch is planned again instead of a new
     selection: the round in progress for its time left (when that is at
     least a tenth of a quantum), then the later rounds, the same units in
     the same order; jobs that left are taken out of their units, and the
     partner of a departed job takes the oldest ready job that LCA allows
     beside it, first one of no unit of the epoch, else one of a later or
     earlier round (it runs now and again in its round) - departures = fill:
     its half never idles while a job waits, as under tft.  (Taking only
     jobs of no unit, as before, left the partner alone on the whole node
     while the epoch's other jobs waited frozen for their round: on the real
     five-kernel mix beside a CPU-bound process, 0.75 s and 1.8 s of one job
     alone on 2 cores with one of them loaded, in every traced run.)
     departures = keep: the partner gets the pair's whole group.  Other
     jobs that arrived wait for the next epoch.  Re-sorting the rounds at every
     restart would drop the younger rounds again and again (C jobs carry
     the larger FP, so S-S rounds starved; issue #11).  Not continued: when
     a characterization is pending (its epochs are one quantum anyway) and
     with continue_epoch = no.
Starvation freedom (ageing = fop, select = oldest: paper 001's F-LCA; for
the defaults see "Starvation" in step 3).  Let B = w2 + w3 (CP and FP are clamped to [0, 1], so
the two terms add at most B), w1 > 0, E the longest epoch and n the number
of jobs (a fixed set of ready jobs, budget not empty).  (a) The oldest ready
job runs every epoch (its round is first, and every selected job of a round
is placed).  (b) A job j that ran in an epoch has WT_j <= E at the next
plan.  (c) Let job i have WT_i >= E + B n TQ / w1 at some plan.  Any job j
that runs from then on has, at every later plan until i runs, WT_i - WT_j >=
B n TQ / w1, hence Age_i >= w1 WT_i/(n TQ) >= w1 WT_j/(n TQ) + B >= Age_j,
with the tie broken for i by its larger WT: j stays behind i.  By (a) each
epoch in which i does not run puts one more job behind i, so i runs within
n - 1 epochs after WT_i reaches E + B n TQ / w1, i.e. within
ceil((E + B n TQ / w1) / E_min) + n epochs of its last run (E_min the
shortest epoch).  Our defaults, one LLC, K = 4, no gang-only jobs:
E = E_min = 4 TQ, B = 2: at most ceil(1 + n/2) + n epochs (the paper's
w3 = 2: B = 3, ceil(1 + 3n/4) + n).  tests/lua/
test_policies.lua checks this bound on random seeded workloads.  Jobs in
characterization are not ready; each characterization takes a bounded
number of quanta, so the bound holds once arrivals stop.

With ageing = progress and select = oldest the age is what a job is owed (above): while it
waits that grows by dt / n, while another runs it grows by dt / n less the
progress that job makes (> 0: speeds count at least MIN_SPEED), so every
waiting job gains on every running one, and by (a) the most owed runs each
epoch: a waiting job becomes the most owed, and runs, within its gap to the
others over the least progress rate (no closed bound is claimed; new jobs
start level with the least owed, so gaps start small).

One global ageing, D islands: the K x D oldest jobs are selected once
(one ageing for the node: the F-LCA modules "closely collaborating") and
paired by one LCA pass; the rounds deal the units to the islands in NUMA
order, one per island per step.  Residual cores (below) are filled in the
same age order, so fillers are the oldest jobs not selected; a filler's WT
resets when it runs, which only ever helps it, so the starvation bound
above holds (the oldest ready job is still selected every epoch).

Cost (issue #4 asks for F-LCA's "O(log n)"): our decision is O(n log n) in
the ready jobs: every epoch walks all of them (ages, characterization) and
sorts them by age; K, D and the pairing add O(K D).  select = weighted (the
default) takes the max(10, 2 K D) oldest in one pass (O(n)) and scores
their pairs: at most 9,496 choices for 10, else every pair of them scored
and sorted (O((K D)^2 log(K D))).  A heap of ages would
not make it O(log n): every waiting job's WT, hence its age, changes every
epoch.  BENCHMARKS.md section 5 has the measured times.
Hierarchy and thread counts (paper 001 Sec. 6): cosched-policy(7), SHIPPED POLICIES.

Parameters (--policy-opt key=value):
  k = auto           jobs per epoch per island (LLC domain / NUMA node): auto (4 if >= 4 jobs, else 2) or an even integer >= 2
  cp_ref = nearest   reference of CP's Progress: nearest (IPC_folded for a folded step) or standalone (the paper, literally)
  complete = yes     pair completion (step 4); no: LCA's leftover runs alone
  lone = any         an S job still alone after completion takes the oldest job alone or unselected, any class
  departures = fill  a departed job's half to the oldest compatible waiting job (step 6); keep: to its partner
  holes = any        cores no compatible job fills go to any waiting job; compatible: they stay idle
  threads = used     cores from the threads a job keeps busy; declared: job.threads
  round_time = equal at n = K: equal rounds; age: in proportion to the rounds' ages
  region_progress = yes  without counters, CP from OpenMP region throughput where the last step
                     completed 8 or more regions (cosched.ageing.tracker); no: CPU time only
  cpu_progress = yes without counters, CP from CPU time (cosched.ageing.tracker): a job's CPU per
                     core held against its own recent best; no: CP = 0 without counters (or regions)
  halves = alternate the member of a pair that had the second half of its group last time gets the
                     first (halves differ on a real node: another process on one core, SMT
                     siblings); fixed: the older member on the first half
                     (both defaults since the work-conserving departures: on the real five-kernel
                     mix, interleaved, median of 5, makespan 1.00x tft's quiet and 1.03x beside a
                     CPU-bound process, against 1.05x both without them; no effect in the
                     simulator, whose halves are identical and whose jobs have counters;
                     BENCHMARKS.md section 8c)
  pairing = measured lca: Algorithm 1; measured: the pairs of the selected jobs that maximise the sum of
                     their measured speeds beside each other (pairing.match), learned per pair of
                     jobs ("Measured pairing" above)
  confidence = 1     pairing = measured: samples before a pair's estimate is trusted
  alpha = 3          select = weighted with ageing = progress: how the surplus beyond the
                     gang shares is shared (step 3): 0 to the fastest pairs, larger more
                     evenly; 0 to 16
  ageing = progress  fop: Age = w1 WT/(n TQ) + w2 CP + w3 FP; progress: what the job is owed
                     against gang's progress (Progress ageing above)
  select = weighted  oldest: the K oldest, then paired; weighted: pairs by age x measured
                     speed when more than K jobs are ready (Weighted selection above)
  w1 = 1, w2 = 1, w3 = 1   FOP's age weights, ageing = fop (w1 > 0, w2, w3 >= 0; the paper's w3 is 2: see above)
  pair_quanta = 2    quanta per round holding a pair (integer >= 1)
  split = auto       where halves are cut: auto, llc, numa, core, pu
  characterize = yes yes: cosched.characterize; no: class hints only (unknown = N)
                     (no counters on the run: hints only, no quanta spent measuring)
  continue_epoch = yes   yes: a job's end or restart does not cut the epoch (step 6); no: select anew
  standalone_quanta, folded_quanta: passed to cosched.characterize
  folded_phase = auto  the characterization's folded quanta: alone (paper 001), deferred
                     (the lock check from the job's pair rounds; alone only for a job slowed beyond
                     lock_slowdown beside its partner), auto: deferred with ageing =
                     progress, alone with fop (step 1)

When not to use it: jobs with fewer threads than half the node gain nothing
from folding; jobs with heavy lock contention that the characterization
does not flag (FP within the lock_slowdown bound) suffer from folding; I/O
bound jobs (Sec. 6) belong to another scheduler.
]==]

local pairing = require "cosched.pairing"
local ageing = require "cosched.ageing"

local pool = ageing.pool()              -- id -> its entry, refilled each plan
local src, tr, k_param, split, pair_quanta, continue_epoch
local complete, depart_fill, holes_any, round_age, used_threads, lone_any, alternate, fair_schedule
-- the half each job of a pair got in its last pair round: 1 or 2 (halves = alternate)
local half_of = {}
-- pairing = measured: est[a][b] = { v =, n = }: job a's speed beside job b
-- (its Progress: tr.fresh), smoothed; partner[id] = the partner the last
-- plan gave the job (false: alone)
local measured, confidence, est, partner
-- spoke[id]: the live job has given a speed (tr.fresh) at least once.  With
-- pairing = measured, a pair LCA forbids may run only when one of its members
-- has spoken (something can be learnt of it); while no ready job has, the
-- pairing is LCA's
local spoke
-- A job's OpenMP region counts are its own word (the shim's page).  While
-- jobs of more than one owner are live (job.owner, a Slurm step's uid:
-- mixed), a job whose last speed came from its region counts (regions[id])
-- is valued beside every partner at any[id], its speed beside whoever it
-- ran with, and counts as silent for LCA's rule (speaks); in the ledger
-- its speed counts at least 1 (ledger_speeds): its counts can neither
-- choose its partner nor take other users' time, and its class hint keeps
-- it from the pairs LCA forbids.  With one owner (cosched run, one user's
-- steps) they learn pairs and age it as counters do.
local any, regions, mixed
-- ageing = progress: the ledger of what each job is owed (cosched.ageing.ledger);
-- select = weighted: pairs by weighted measured speed (step 3 below)
local ledger, weighted
local OPTIMISTIC = 1.5                  -- an untried pair's value: above any folded speed, so it is tried
local ALPHA = 0.3                       -- weight of a new sample

local function sample(row, key, rel)
  local e = row[key]
  if not e then row[key] = { v = rel, n = 1 }
  else e.v, e.n = e.v + ALPHA * (rel - e.v), e.n + 1 end
end

-- are jobs of more than one owner live (job.owner; nil counts as one owner)
local function several_owners(snap)
  local first
  for _, job in ipairs(snap.jobs) do
    if first == nil then first = job.owner or false
    elseif (job.owner or false) ~= first then return true end
  end
  return false
end

-- the ledger's speeds: tr.fresh, but while several owners are live a speed
-- from the job's own region counts counts at least 1 (the job cannot claim
-- to be slowed and take other users' time; it is charged its CPU as without
-- a signal)
local function ledger_speeds()
  if not mixed then return tr.fresh end
  local t = {}
  for id, rel in pairs(tr.fresh) do
    t[id] = (tr.signal[id] == "regions" and rel == rel) and math.max(rel, 1) or rel
  end
  return t
end

local function learn(snap)
  for id, rel in pairs(tr.fresh) do
    regions[id] = tr.signal[id] == "regions" or nil
    local other = partner[id]
    if other and rel == rel and rel >= 0 and rel < 4 then
      est[id] = est[id] or {}
      sample(est[id], other, rel)
      if regions[id] then sample(any, id, rel) end
    end
  end
  for id in pairs(tr.fresh) do spoke[id] = true end
  -- forget the estimates of and about jobs that left, their partners and
  -- whether they spoke
  local live, gone = {}, nil
  for _, job in ipairs(snap.jobs) do live[job.id] = true end
  for _, t in ipairs { est, partner, spoke, any, regions } do
    for id in pairs(t) do
      if not live[id] then gone = gone or {}; gone[#gone + 1] = id end
    end
  end
  if gone then
    for _, id in ipairs(gone) do est[id], partner[id], spoke[id], any[id], regions[id] = nil, nil, nil, nil, nil end
    for _, row in pairs(est) do
      for _, id in ipairs(gone) do row[id] = nil end
    end
  end
end

local function value(a, b)
  local e
  if mixed and regions[a] then e = any[a] else e = est[a] and est[a][b] end
  if not e or e.n < confidence then return OPTIMISTIC end
  return e.v
end

-- schedule = fair (step 5 of the header): the epoch as time fractions over
-- the configurations of the selected jobs `ids` - each pair folded, at the
-- speeds measured beside each other, and each job alone, at 1 - from the
-- fair linear program (cosched.fair_lp): every job at least 1/n of its
-- progress alone plus a part of what the ledger says it is owed, the most
-- progress in all.  Returns the rounds, or nil (an untried pair, a speed
-- not measured against alone, no solver, no solution: the matching stays).
local DEBT_EPOCHS = 4                   -- a debt is repaid over about this many epochs
local function fair_rounds(ids, total, tq, order)
  -- the library's bound: 1024 rates (n (n + 1) / 2 configurations of n jobs)
  if not cosched.fair_lp or #ids * (#ids + 1) // 2 * #ids > 1024 then return nil end
  local cfg, rates = {}, {}
  for a = 1, #ids do
    if tr.signal[ids[a]] ~= "ipc" then return nil end
    local row = {}
    for j = 1, #ids do row[j] = 0 end
    row[a] = 1
    cfg[#cfg + 1], rates[#rates + 1] = { ids[a] }, row
    for b = a + 1, #ids do
      local va, vb = value(ids[a], ids[b]), value(ids[b], ids[a])
      if va == OPTIMISTIC or vb == OPTIMISTIC then return nil end
      row = {}
      for j = 1, #ids do row[j] = 0 end
      row[a], row[b] = math.max(va, 0), math.max(vb, 0)
      cfg[#cfg + 1], rates[#rates + 1] = order(ids[a], ids[b]), row
    end
  end
  local floor, n = {}, #ids
  for j, id in ipairs(ids) do
    local owed = ledger and ledger.owed[id] or 0
    floor[j] = 1 / n + math.min(math.max(owed, 0) / (DEBT_EPOCHS * total), 1 / n)
  end
  local x = cosched.fair_lp(rates, floor) or cosched.fair_lp(rates, 1 / n)
  if not x then return nil end
  local out, kept = {}, 0
  for c = 1, #cfg do
    if x[c] * total >= 0.1 * tq then kept = kept + x[c] end
  end
  for c = 1, #cfg do
    if x[c] * total >= 0.1 * tq then
      out[#out + 1] = { units = { cfg[c] }, gang = false, dur = total * x[c] / kept }
    end
  end
  return out
end

-- does a round hold a pair whose estimate is not trusted yet (value: OPTIMISTIC)
local function untried(r)
  for _, u in ipairs(r.units) do
    if u[2] and (value(u[1], u[2]) == OPTIMISTIC or value(u[2], u[1]) == OPTIMISTIC) then return true end
  end
  return false
end

-- may x and y (entries, or { class =, id = }) share a pair: LCA's rule, or,
-- with by_speed (measured pairing, some ready job has spoken), any pair one
-- of whose members has spoken
-- has the job given a speed that may choose its partner (a region-count
-- job while several owners are live has not: it stays silent, so LCA's
-- class rule holds for it)
local function speaks(id)
  return spoke[id] and not (mixed and regions[id])
end

local function allowed(x, y, by_speed)
  return pairing.compatible(x.class, y.class) or (by_speed and (speaks(x.id) or speaks(y.id))) or false
end

-- measured pairing's score; a pair LCA forbids whose members have both
-- stayed silent scores FORBIDDEN below any other, so it runs only where no
-- other matching exists
local FORBIDDEN = 100
local function pair_score(x, y)
  return value(x.id, y.id) + value(y.id, x.id) - (allowed(x, y, true) and 0 or FORBIDDEN)
end

-- select = weighted: each member's speed beside the other (at least
-- MIN_SCORE_SPEED: a job slow beside everyone keeps a claim that grows with
-- its age) weighted by its age when it is owed (ageing = progress: what it
-- is behind gang), plus V = 0.01; a job at or ahead of its share weighs V
-- / ratio^alpha (at most V), ratio its progress over gang's (ledger:ratio;
-- 1 without the ledger), so that the surplus is shared alpha-fairly (step 3)
local MIN_SCORE_SPEED = 0.25
local alpha
local function weight(e)
  if e.age > 0 then return e.age + 0.01 end
  if alpha == 0 or not ledger then return 0.01 end
  -- at most V: a job that arrived late starts level with the least owed
  -- (age <= 0) before it made any progress (ratio near 0)
  return 0.01 * math.min(1, ledger:ratio(e.id) ^ -alpha)
end
-- (weights: per candidate, set once per selection before the pairs are scored)
local weights = {}
local function weighted_score(x, y)
  return weights[x.id] * math.max(value(x.id, y.id), MIN_SCORE_SPEED)
       + weights[y.id] * math.max(value(y.id, x.id), MIN_SCORE_SPEED)
end
-- the epoch in progress: { t0 = snap.now of its plan, rounds = { { units =,
-- gang =, dur = }, ... } } (step 6); nil when none may be continued
local epoch

-- the ready entries in age order (oldest first), sorted once per plan
local function age_order(st)
  if not st.order then st.order = ageing.select(st.entries, #st.entries) end
  return st.order
end

-- the rest of the epoch in progress, as rounds, or nil when it is over.
-- st = { entries = this plan's aged entries }: with departures = fill, a
-- pair whose member left takes the oldest compatible ready job that is in
-- no unit of the epoch, else the oldest in no unit of this round (the epoch
-- record is updated: it keeps the new pair)
local function rest_of_epoch(snap, ctx, st)
  local ep = epoch
  if not ep or type(snap.now) ~= "number" then return nil end
  local tq = snap.quantum
  local elapsed, t, total = snap.now - ep.t0, 0, 0
  for _, r in ipairs(ep.rounds) do total = total + r.dur end
  if elapsed >= total - 0.05 * tq then return nil end
  local out = {}
  for _, r in ipairs(ep.rounds) do
    local left = t + r.dur - elapsed
    t = t + r.dur
    if left >= 0.1 * tq then
      local units = {}
      for _, u in ipairs(r.units) do
        local keep = {}
        for _, id in ipairs(u) do
          if ctx.byid[id] then keep[#keep + 1] = id end
        end
        if #keep == 1 and #u == 2 and depart_fill and not r.gang then
          local info, here = ctx.info[keep[1]], {}
          local x = info and { class = info.class, id = keep[1] }
          for _, v in ipairs(r.units) do
            for _, id in ipairs(v) do here[id] = true end
          end
          -- first a job of no unit of the epoch (it would not run in it),
          -- then one of another round (it runs now and in its round too)
          for pass = 1, 2 do
            for _, y in ipairs(age_order(st)) do
              if not here[y.id] and (pass == 2 or not ep.member[y.id]) and not y.gang and x
                 and allowed(x, y, st.by_speed) then
                ep.member[y.id] = true
                keep[2] = y.id
                u[1], u[2] = keep[1], y.id
                break
              end
            end
            if keep[2] then break end
          end
        end
        if #keep > 0 then units[#units + 1] = keep end
      end
      if #units > 0 then
        out[#out + 1] = { units = units, gang = r.gang, dur = math.min(left, r.dur) }
      end
    end
  end
  return #out > 0 and out or nil
end
local W = { w1 = 1, w2 = 1, w3 = 1 }

local function number(params, key, lo, open)
  local v = tonumber(params[key])
  if not v or v ~= v or v == math.huge or v < lo or (open and v == lo) then
    error(("%s = '%s': expected a number %s %s"):format(key, tostring(params[key]), open and ">" or ">=", lo), 0)
  end
  return v
end

return {
  api = 1,
  name = "flca",
  description = "F-LCA: each epoch K jobs folded in pairs, the most behind their gang share in the pairs measured best (paper 001 Sec. 4.4)",
  params = {
    k = { default = "auto", help = "jobs per epoch per island (LLC domain, split by NUMA node): auto (4 if 4 or more jobs, else 2) or an even integer >= 2" },
    cp_ref = { default = "nearest", help = "CP's reference: nearest (IPC_folded for a folded step: CP is contention only, folding counted once by FP) or standalone (IPC_last / IPC_standalone)" },
    complete = { default = "yes", help = "yes: an LCA leftover takes the oldest unselected compatible job as partner; no: it runs alone" },
    lone = { default = "any", help = "any: an S job left without a compatible partner takes the oldest job alone or unselected, of any class; alone: it runs alone" },
    departures = { default = "fill", help = "fill: a job leaving mid-epoch leaves its cores to the oldest compatible waiting job; keep: to its partner" },
    holes = { default = "any", help = "any: cores no compatible job fills go to any waiting job; compatible: they stay idle (LCA's rule first)" },
    pairing = { default = "measured", help = "lca: paper 001's Algorithm 1; measured: pairs that maximise the jobs' measured speed beside each other, learned per pair of jobs (untried pairs tried first)" },
    ageing = { default = "progress", help = "fop: paper 001's Age (waiting, contention, folding); progress: the progress gang would have given the job since it arrived less what it made (cosched.ageing.ledger)" },
    select = { default = "weighted", help = "oldest: the K oldest jobs, then paired; weighted: the K / 2 pairs whose members' measured speeds beside each other, weighted by age, add up most (LCA's rule kept unless pairing = measured and one of the pair has given a speed)" },
    confidence = { default = 1, help = "pairing = measured: samples of a pair of jobs before its estimate is trusted" },
    alpha = { default = 3, help = "select = weighted, ageing = progress: how the surplus beyond the gang shares is shared, alpha-fair: 0 to the fastest pairs, larger more evenly (a job weighs 1 / (its progress over gang's)^alpha)" },
    region_progress = { default = "yes", help = "yes: without counters, CP from the job's OpenMP region throughput (regions per second against its own best of late) where its last step completed 8 or more regions, else from CPU time; no: CPU time only" },
    cpu_progress = { default = "yes", help = "yes: without counters, CP from CPU time, a job's CPU per core held against its own best of late (another process on its cores slows it); no: CP = 0 without counters" },
    halves = { default = "alternate", help = "alternate: a pair's member that had the second half of its cores last time gets the first; fixed: the older member first" },
    schedule = { default = "fair", help = "at n = K: fair: the epoch's time shared among pairs and jobs alone by the fair linear program over the measured speeds (every job at least its gang share, the most progress in all); matching: one pairing in equal rounds" },
    round_time = { default = "equal", help = "at n = K (every job selected): equal rounds, or age: round durations in proportion to the rounds' ages" },
    threads = { default = "used", help = "used: a job gets as many cores as the threads it keeps busy (CPU time per step, job.team), with hysteresis; declared: job.threads" },
    w1 = { default = 1, help = "age weight of waiting time WT/(n TQ), > 0" },
    w2 = { default = 1, help = "age weight of the contention penalty CP, >= 0" },
    w3 = { default = 1, help = "age weight of the folding penalty FP, >= 0 (the paper's is 2)" },
    pair_quanta = { default = 2, help = "quanta each pair runs per epoch" },
    split = { default = "auto", help = "where folded halves are cut: auto, llc, numa, core or pu" },
    characterize = { default = "yes", help = "yes: classify and measure with cosched.characterize; no: use class hints" },
    continue_epoch = { default = "yes", help = "yes: a job ending or restarting mid-epoch does not cut the epoch; no: select anew" },
    standalone_quanta = { default = 2, help = "characterization: quanta measured alone" },
    folded_quanta = { default = 1, help = "characterization: quanta measured folded" },
    folded_phase = { default = "auto", help = "characterization's folded quanta: alone (paper 001: folded alone, half the LLC domain idle), deferred (from the job's own folded steps; alone only for a job that may be lock-bound), auto (deferred with ageing = progress, alone with fop, whose age needs FP)" },
  },

  init = function(params)
    W = { w1 = number(params, "w1", 0, true), w2 = number(params, "w2", 0), w3 = number(params, "w3", 0) }
    k_param = nil
    if params.k ~= "auto" then
      local k = tonumber(params.k)
      if not k or k < 2 or k ~= math.floor(k) or k % 2 ~= 0 then
        error(("k = '%s': expected auto or an even integer >= 2"):format(params.k), 0)
      end
      k_param = k
    end
    pair_quanta = number(params, "pair_quanta", 1)
    if pair_quanta ~= math.floor(pair_quanta) then
      error(("pair_quanta = '%s': expected an integer >= 1"):format(params.pair_quanta), 0)
    end
    split = pairing.check_split(params.split)
    if params.continue_epoch ~= "yes" and params.continue_epoch ~= "no" then
      error(("continue_epoch = '%s': expected yes or no"):format(tostring(params.continue_epoch)), 0)
    end
    continue_epoch = params.continue_epoch == "yes"
    epoch = nil
    local fold = params.folded_phase
    if fold ~= "auto" and fold ~= "alone" and fold ~= "deferred" then
      error(("folded_phase = '%s': expected auto, alone or deferred"):format(tostring(fold)), 0)
    end
    if fold == "auto" then fold = params.ageing == "fop" and "alone" or "deferred" end
    src = pairing.source_of(params, fold)
    if params.cp_ref ~= "standalone" and params.cp_ref ~= "nearest" then
      error(("cp_ref = '%s': expected standalone or nearest"):format(tostring(params.cp_ref)), 0)
    end
    local function choice(key, a, b)
      local v = params[key]
      if v ~= a and v ~= b then
        error(("%s = '%s': expected %s or %s"):format(key, tostring(v), a, b), 0)
      end
      return v == a
    end
    tr = ageing.tracker(params.cp_ref, choice("cpu_progress", "yes", "no"), choice("region_progress", "yes", "no"))
    complete = choice("complete", "yes", "no")
    lone_any = choice("lone", "any", "alone")
    depart_fill = choice("departures", "fill", "keep")
    holes_any = choice("holes", "any", "compatible")
    round_age = choice("round_time", "age", "equal")
    fair_schedule = choice("schedule", "fair", "matching")
    alternate = choice("halves", "alternate", "fixed")
    half_of = {}
    used_threads = choice("threads", "used", "declared") and ageing.busy_threads() or nil
    measured = choice("pairing", "measured", "lca")
    confidence = number(params, "confidence", 1)
    alpha = tonumber(params.alpha)
    if not alpha or not (alpha >= 0 and alpha <= 16) then
      error(("alpha = '%s': expected a number from 0 to 16"):format(tostring(params.alpha)), 0)
    end
    est, partner, spoke, any, regions, mixed = {}, {}, {}, {}, {}, false
    ledger = choice("ageing", "progress", "fop") and ageing.ledger() or nil
    weighted = choice("select", "weighted", "oldest")
  end,

  plan = function(snap)
    local ctx = src:begin(snap)
    tr:observe(snap, ctx.info)
    mixed = several_owners(snap)
    if measured or weighted then
      learn(snap)
    end
    if ledger then ledger:observe(snap, ledger_speeds(), tr.signal) end
    if used_threads then used_threads:observe(snap) end
    local n, tq = #snap.jobs, snap.quantum
    local entries = pool:entries(snap, ctx, tr, W, true)
    if ledger and ledger.now then   -- no clock (no snap.now): FOP's ages
      for _, e in ipairs(entries) do e.age = (ledger.owed[e.id] or 0) / tq end
    end
    -- measured pairing once a ready job has given a speed, LCA's rule before
    local by_speed = false
    if measured then
      for _, e in ipairs(entries) do
        if speaks(e.id) then by_speed = true break end
      end
    end
    local st = { entries = entries, by_speed = by_speed }
    local steps = {}
    if #entries > 0 and #ctx.budget > 0 then
      -- residual cores: the ready jobs in age order (pairing.fill_holes),
      -- sorted only when a hole exists, once per plan
      local fill = { ctx = ctx, order = ageing.fill_order(ctx, entries), any = holes_any or nil,
                     threads = used_threads and function(job) return used_threads:get(job) end or nil }
      local rounds = continue_epoch and not ctx.pending and rest_of_epoch(snap, ctx, st)
      if not rounds then
        rounds = {}
        local D = pairing.domains(snap, ctx.budget)
        local K = (k_param or ageing.k_default(n)) * D
        local sel, chosen = nil, nil
        local oldest = weighted and #entries > K and ageing.top(entries, 1)[1]
        if oldest and not oldest.gang then
          -- select = weighted (more ready jobs than K: a choice to make):
          -- the K jobs in K / 2 pairs whose members' measured speeds beside
          -- each other, weighted by age, add up most
          -- among the max(10, 2 K) oldest that are not gang-only (a
          -- one-pass selection, not a sort of every ready job)
          local cand = ageing.top(entries, math.max(10, 2 * K), function(e) return e.gang end)
          local function ok(a, b) return allowed(a, b, by_speed) end
          weights = {}
          for _, e in ipairs(cand) do weights[e.id] = weight(e) end
          chosen = pairing.weighted(cand, K // 2, weighted_score, ok)
          sel = {}
          for _, u in ipairs(chosen) do sel[#sel + 1], sel[#sel + 2] = u[1], u[2] end
          table.sort(sel, ageing.older)
        end
        if not chosen or #chosen == 0 then sel, chosen = ageing.select(entries, K), nil end
        local rank, gang, units, foldable, member, age = {}, {}, {}, {}, {}, {}
        for r, e in ipairs(sel) do
          rank[e.id] = r
          member[e.id] = true
          if e.gang then
            gang[e.id] = true
            units[#units + 1] = { e.id }
          else
            foldable[#foldable + 1] = e
          end
        end
        local lunits = chosen or (by_speed and pairing.match(foldable, pair_score) or pairing.lca(foldable))
        if complete and #sel < #entries and not chosen then
          for _, u in ipairs(lunits) do
            if not u[2] then
              pairing.complete(lunits, age_order(st), member, by_speed and function(a, b) return allowed(a, b, true) end or nil)
              break
            end
          end
        end
        -- a leftover that cannot use a whole group (class S: it does not
        -- scale) and found no compatible partner takes the oldest job still
        -- alone or unselected, whatever its class (lone = any): a lone S job
        -- would leave half its cores idle in effect while that job waits
        if lone_any and not by_speed and not chosen then pairing.pair_lone(lunits, age_order(st), member) end
        -- a pair's member that had the second half last time gets the first
        -- (halves = alternate): halves differ on a real node (another
        -- process on one core, SMT siblings), and a job always second would
        -- always get the worse one
        local function turn(id) return half_of[id] == 2 and 2 or half_of[id] == 1 and 0 or 1 end
        for _, u in ipairs(lunits) do
          if u[1] and u[2] then
            local a, b = u[1].id, u[2].id
            if alternate and turn(b) > turn(a) then a, b = b, a end
            units[#units + 1] = { a, b }
          elseif u[1] then
            units[#units + 1] = { u[1].id }
          end
        end
        if alternate then
          local live = {}
          for _, u in ipairs(units) do
            if u[2] then live[u[1]], live[u[2]] = 1, 2 end
          end
          for id in pairs(half_of) do
            if not ctx.byid[id] then half_of[id] = nil end
          end
          for id, h in pairs(live) do half_of[id] = h end
        end
        for _, e in ipairs(entries) do age[e.id] = e.age end
        rounds = pairing.rounds(units, D, gang)
        local best = {}
        for _, r in ipairs(rounds) do
          local b = math.huge
          for _, u in ipairs(r.units) do
            for _, id in ipairs(u) do b = math.min(b, rank[id] or math.huge) end
          end
          best[r] = b
        end
        table.sort(rounds, function(a, b) return best[a] < best[b] end)
        if ctx.pending then rounds = { rounds[1] } end
        -- only the plan's last step is measured (job.last): a round that
        -- tries a pair goes last, else the try teaches nothing and the
        -- untried pair, still valued OPTIMISTIC, is chosen again
        if measured and #rounds >= 2 and not untried(rounds[#rounds]) then
          for i = 1, #rounds - 1 do
            if untried(rounds[i]) then
              local r = table.remove(rounds, i)
              rounds[#rounds + 1] = r
              break
            end
          end
        end
        for _, r in ipairs(rounds) do
          local haspair = false
          for _, u in ipairs(r.units) do if #u == 2 then haspair = true end end
          r.dur = (haspair and not ctx.pending) and math.min(pair_quanta * tq, 3600) or tq
        end
        -- n = K: every ready job runs every epoch, so selection cannot
        -- favour the older; the rounds' durations do (round_time = age)
        if round_age and not ctx.pending and #sel == #entries and #rounds >= 2 then
          local total, wsum, w = 0, 0, {}
          for _, r in ipairs(rounds) do
            local a, m = 0, 0
            for _, u in ipairs(r.units) do
              for _, id in ipairs(u) do a, m = a + (age[id] or 0), m + 1 end
            end
            w[r] = math.max(a / math.max(m, 1), 1e-3)
            total, wsum = total + r.dur, wsum + w[r]
          end
          for _, r in ipairs(rounds) do
            local even = total / #rounds
            r.dur = math.max(0.5 * even, math.min(1.5 * even, total * w[r] / wsum))
          end
        end
        -- schedule = fair: at n = K the fair program's time fractions over
        -- pairs and jobs alone, once every pair of the selected jobs is measured
        if fair_schedule and measured and not ctx.pending and #sel == #entries and D == 1 and #rounds >= 2 then
          local ids, total, plain = {}, 0, true
          for _, r in ipairs(rounds) do
            plain = plain and not r.gang
            total = total + r.dur
            for _, u in ipairs(r.units) do
              for _, id in ipairs(u) do ids[#ids + 1] = id end
            end
          end
          local fr = plain and fair_rounds(ids, total, tq, function(a, b)
            if alternate and turn(b) > turn(a) then return { b, a } end
            return { a, b }
          end)
          if fr then rounds = fr end
        end
        epoch = (not ctx.pending) and { t0 = snap.now, rounds = rounds, member = member } or nil
      end
      for _, r in ipairs(rounds) do
        local jobs, shared = pairing.place(snap, r.units, ctx.budget, true, split, not r.gang and fill or nil)
        steps[#steps + 1] = { duration = r.dur, jobs = jobs, shared = shared or nil }
        -- each job's partner in the last step it runs in: its unit's other
        -- member; alone, or a filler of residual cores (pairing.fill_holes):
        -- false, nothing learnt
        if measured or weighted then
          local mate = {}
          for _, u in ipairs(r.units) do
            if u[2] then mate[u[1]], mate[u[2]] = u[2], u[1] end
          end
          for _, j in ipairs(jobs) do partner[j.id] = mate[j.id] or false end
        end
      end
    else
      epoch = nil
    end
    local plan_steps, results = src:finish(ctx, snap, steps)
    if ledger then ledger:planned(plan_steps, snap) end
    return plan_steps, results,
      ageing.explain(snap, ctx, entries, plan_steps, n, tq, W, function(id) return tr:cp(id) end, function(id) return ageing.fp(ctx.info[id].fp) end,
      function(id) return tr.signal[id] end,
      -- ageing = progress: the age is what the job is owed, in quanta
      ledger and ledger.now and function(id) return (ledger.owed[id] or 0) / tq end or nil)
  end,
}
