--[==[
cosched.characterize - the characterization protocol of paper 001 (Haritatos
et al., "Contention-aware scheduling policies for fairness and throughput"),
Sec. 4.4 with Sec. 3.1 and Sec. 6, as a module any policy can use.

    local ch = require "cosched.characterize"
    local c = ch.new { standalone_quanta = 2, folded_quanta = 1 }   -- in init()
    -- in plan(snap):
    c:update(snap)                            -- once per plan, first
    local part = c:plan_step(snap)            -- characterization placements
    local step = { jobs = part.jobs }         -- then add the policy's own jobs:
    --   any job on part.left; only jobs of part.may_share on part.shared;
    --   nothing else on part.reserved; jobs of part.waiting stay off it too
    local i = c:info(id)                      -- class, IPCs, FP, gang_only, ready
    return { step }, c:results()              -- hand new results to the profile store

WHAT IT DOES

Every job is characterized when it is first seen and again when its phase
changes (see PHASES).  Characterizing a job means (paper 001 Sec. 4.4: "executes
it in isolation, classifies it and measures its IPC_standalone.  It then folds
the application, measures its IPC_folded and calculates its FP"):

  1. standalone, for standalone_quanta steps: the job runs alone on its own
     cores, in one last-level-cache (LLC) domain that no job other than class
     N ones may use (Sec. 3.1: "each application needs to be scheduled without
     any interference ... If there exist additional empty cores in the
     machine, they could be employed by N class applications").  The
     time-weighted means of the steps give the bandwidth profile bw = {l1, l2,
     llc}, the class (cosched.scn.classify of that profile on the cores used),
     IPC_standalone and the mean MPKI.
  2. folded, for folded_quanta steps: the same job on half of those cores, its
     LLC domain still reserved, giving IPC_folded and
         FP = 1 - IPC_folded / IPC_standalone.
     A job whose folding costs it more than lock_slowdown times its IPC
     (IPC_standalone / IPC_folded > lock_slowdown, default 2.5, i.e.
     FP > 0.6) is marked gang_only: the paper's model bounds the penalty of a
     lock-free job at a halved IPC (Sec. 4.4, FP in (0, 0.5]) and says jobs
     with lock contention show a penalty "significantly higher than 2"
     (Sec. 6, read as the slowdown IPC_standalone/IPC_folded, since FP itself
     cannot exceed 1); 2.5 is 25 % beyond that bound, above the step-to-step
     noise that phase_threshold already treats as noise.  The comparison is
     strict.

Placement, precisely.  The LLC domains are the groups of cosched.cpus.split(
snap, #llcs, "llc") when the node has two or more LLCs (one domain, all
managed CPUs, otherwise).  A core is usable when every one of its managed CPUs
is in the budget (siblings of a core are never split between a characterized
job and anybody else).  For the standalone phase the job gets
    k = min(job.threads, usable cores of the domain)
whole cores - all of their CPUs - taken in topology order from the start of
the domain; without SMT that is min(job.threads, #domain CPUs in the budget)
CPUs.  The domain is the free one with the largest such k; ties go to the
domain the job used in its previous characterization step, then to the one
with the fewest usable cores (best fit, leaves big domains to big jobs), then
to topology order.  The folded phase takes the first ceil(k_s / 2) usable
cores of a free domain (same preferences) where k_s is the k its standalone
phase was measured with: half the cores rounded up, so that no CPU runs more
than twice the threads it ran standalone.  A job measured standalone on one
core is not folded (ipc_folded and fp stay nil).  Each reserved domain holds
one characterization.  Pending jobs are placed oldest first (see pending());
a job for which no domain is free waits (part.waiting).

"Cores used" (k, the ncores given to the SCN classifier, the comparison in
PHASES) is always min(job.threads, cores touched by the job's CPUs): a job
with 4 threads on 8 cores keeps 4 of them busy.

Isolation is checked, not assumed.  Who ran where during the measured step
comes from job.last.ran and job.last.cpus (cosched-policy(7)), never from
who is frozen at snapshot time: a co-runner whose instance ended and
restarted during the step is frozen now but ran beside the job.
update() accepts a characterization step
only when the snapshot shows that the job ran (last.ran, has `last`) on
exactly the CPUs asked, that no running job other than class N ones had a CPU
in its LLC domain, and that no other job had a CPU on its cores (SMT
siblings share L1 and L2).  A step that fails this is discarded
(info.discarded) and does not count: a policy that breaks isolation stalls
its own characterizations, rather than getting wrong classes silently.

Measurements.  Steps are weighted by their wall time; a step shorter than half
of snap.quantum (an epoch cut short by a job arriving or ending) is ignored.
Only the last step of a plan is visible in the next snapshot, so put the
placements in the plan's last step (or plan one step per epoch while
c:pending() is not empty).

  IPC here is the job's: instructions per wall-clock cycle summed over its
  CPUs, computed as last.metrics.ipc * last.cpu / last.wall (ch.job_ipc).
  metrics.ipc is instructions over the cycles the job's threads ran, a
  per-CPU figure: folding a scalable job leaves it unchanged and folding a
  streaming job doubles it, which is not what the paper's FP measures
  (Sec. 4.1: S applications "do not suffer from folding", N ones "nearly
  double their execution time"; Sec. 4.4: folding "halves its IPC" at most).
  Multiplying by the CPUs the job kept busy (last.cpu / last.wall) turns it
  into the job's progress rate, so that FP = 0.5 for a job that scales
  perfectly and about 0 for a streaming one.  A policy computing FOP's
  Progress = IPC_last / IPC_standalone should use ch.job_ipc(job) for
  IPC_last, and compare a folded job against ipc_folded if it wants the
  contention penalty without the folding one.

  The standalone phase needs, in last.metrics: ipc (or instructions and
  cycles) and bw_l1, bw_l2, bw_llc; the folded phase needs ipc only (bw_llc
  when present is kept as the folded reference for PHASES); mpki is averaged
  when present.  Some profiles count the LLC with socket- or LLC-scope events
  (AMD L3 PMU) that the engine attributes to a job only when it holds every
  CPU of the domain (last.socket_owned).  When a counted standalone step that
  did not hold its whole domain comes back without a bandwidth and
  socket_owned is false, the module switches to whole-domain placements for
  the standalone phase from then on (the discarded step does not count as
  missed); when no whole domain is in the budget it places as usual.

PHASES

Paper 001 Sec. 6: "a simple and straightforward solution for our scheme,
would be to re-classify an application, whenever a phase change is
recognized"; the threshold follows paper 000 Sec. 3.4 (N-MASS re-schedules
when a process's MPKI changes by more than 20 %).  After a characterization,
every counted step of the job that is comparable to one of its reference
measurements is compared with it:
  - comparable to the standalone reference when the job ran on k_s cores
    ("cores used" as above), to the folded one when it ran on k_f cores;
  - and measured under the same conditions: no other job on its cores and,
    unless the job is class N, no running job other than class N ones in its
    LLC domain(s).  Contention is not a phase: under co-scheduling a C job's
    IPC drops and its bw_llc rises because of its co-runner (FOP's
    contention penalty), and re-characterizing it for that would loop.  An N
    job neither suffers nor causes contention (Sec. 3.2), so its co-runners
    in the LLC are no reason to skip the step.
A comparable step deviates when its IPC or its bw_llc differs from the
reference by more than phase_threshold, relatively: |x - ref| / ref for the
IPC, |x - ref| / max(ref, l1_activity * k) for bw_llc.  The IPC compared is
per cycle of the job's threads (job IPC over the CPUs it kept busy) when the
characterization measured it so: another process on the node that takes
CPU time from the job is no phase change, while in job units (times the CPU
it got) it would be one.  bw_llc is still per wall second, so such a
process does lower a memory-bound job's: a known limit (the replay
backend's bandwidths do not follow the job's CPU, so comparing them per
CPU-second needs the replay to scale too) (below the SCN
activity level, bandwidth changes are noise: an LLC-resident job going from
0.02 to 0.05 GB/s is not a new phase).  phase_confirm consecutive deviating
comparable steps (default 2: one deviating step is as likely a
hiccup - an interrupt storm, a short I/O burst - as a phase, and 2 s of
evidence costs little against a re-characterization that costs
standalone_quanta + folded_quanta quanta of exclusive LLC use) start a new
characterization; a comparable step within the threshold resets the count;
steps that are not comparable or not counted leave it as it is.  The
reference is the characterized value, not the previous step (as in paper
000), so that slow drifts are caught too.  While a job is re-characterized,
info() keeps its previous results until the new standalone phase completes
them.

DEFERRED

With folded_phase = "deferred" the folded phase is not run alone: the job
is ready (and its result handed back) once its standalone phase is in, with
ipc_folded, fp and cores_folded nil and info.folded_pending = true, and the
steps the policy runs it folded - on fewer cores than k_s ("cores used" as
above; as many as the policy gave it: flca folds on half the LLC domain,
4 cores for a 6-thread job of 8), counted, at least half a quantum long -
do the folded phase's two jobs:
  - the folded reference: a step isolated as a characterization step is
    (no other job on its cores; no running job other than class N ones in
    its LLC domain, unless the job is N itself) counts as a folded step;
    folded_quanta of them at one width set ipc_folded, fp, gang_only as the
    folded phase would.  flca's pairs beside non-N jobs never are, so under
    it ipc_folded and fp mostly stay nil (a folded step's CP then uses
    IPC_standalone as reference: cp_ref = nearest falls back);
  - the lock check: a step beside another job can only have lowered the
    job's IPC (contention), so a slowdown IPC_standalone / IPC there within
    lock_slowdown proves the job is not gang_only: nothing more is asked;
    beyond it, the folded phase runs as usual, alone on ceil(k_s / 2)
    cores, at the next plan_step() (the job is pending again, phase
    "folded"), to tell locks from contention.  The IPC is the job's, as in
    the folded phase: another process taking CPU from it can also ask for
    that quantum.  If that phase gets no measurement (give-up) the
    standalone profile stands (not degraded) and the check is not asked
    again.
A job measured folded alone so hands its result back again (a
characterization step was spent; the engine counts it as a
characterization), and so does one found gang_only from an isolated step:
the profile store must know.  What it saves: paper 001's protocol leaves the half of
the LLC domain that the folded job does not use to class N jobs only (Sec.
3.1), i.e. idle while no ready N job exists, folded_quanta quanta per
characterization: on the simulator's 4-job cells 0.3-0.7 % of the mean
throughput (flca, docs/eval/issue24.md).  What it costs: a lock-bound job
runs one pair round folded before it is measured alone; fp and ipc_folded
stay unknown for a job never run folded in isolation, so policies that age
by FP (fop, flca with ageing = fop) keep "alone", the default.  Seeded from
a stored profile without ipc_folded (one made this way), a job takes the
same route.

STORED PROFILES

A job whose snapshot entry has job.stored (the profile store's entry for
its executable, arguments, thread count and CPU model; cosched-policy(7)) is
not characterized when first seen: update() seeds its record from the entry
(class, ipc_standalone, ipc_folded, fp, mpki, bw, gang_only and, when
present, cores_standalone / cores_folded, which phase detection needs) and
the job is ready at once (info.stored = true).  An entry whose class is not
"S", "C" or "N" is ignored (the job is characterized as usual).  Phase
changes and recharacterize() work as for any characterized job.

NO COUNTERS

When the snapshot says that nothing is counted on this run (snap.counters
== "none": no PMU, --counters none) a job is never characterized: it is
ready when first seen, degraded and with its hint as class (else
"unknown"), and reason = "no counters on this run"; results() hands back its
degraded result in that same plan (cosched classify reports it at once; the
profile store never keeps a degraded result).  Spending quanta on
measurements that cannot come would only run jobs alone (paper 001's
characterization reserves the LLC domain) and delay everyone.

Otherwise, steps whose last.counted is false count toward nothing: they neither advance
a phase nor reset or feed phase detection.  So that policies never stall, a
characterization gives up after standalone_quanta + folded_quanta steps that
the job ran as asked but that gave no usable measurement ("missed"):
without a PMU that is exactly when the standalone + folded quanta have
elapsed.  The job is then ready, not characterizing, degraded = true; it keeps
what was measured (a completed standalone phase, or the results of an
earlier characterization); with nothing measured its class is its hint
job.class, else "unknown", and ipc_*, fp, mpki and bw stay nil.  A job whose characterization gave up
without a single usable step is characterized again at the first later step
that gives everything the standalone phase needs (the counters came back); a
partial failure is not retried, so a profile that counts IPC but no
bandwidth does not loop.

API

ch.defaults
    { standalone_quanta = 2, folded_quanta = 1, folded_phase = "alone", phase_threshold = 0.20,
      phase_confirm = 2, lock_slowdown = 2.5, reuse_threshold = 2,
      l1_activity = 0.15 }

ch.new([params]) -> c
    params (numbers or numeric strings, as snap.params gives them, and
    folded_phase's word; nil =
    default; unknown keys are an error):
      standalone_quanta  integer >= 1   counted steps of the standalone phase
      folded_quanta      integer >= 0   counted steps of the folded phase (0: no FP)
      folded_phase       "alone"        the folded phase alone, after the standalone one
                         | "deferred"   from the job's own folded steps (DEFERRED)
      phase_threshold    number > 0     relative change that counts as a deviation
      phase_confirm      integer >= 1   consecutive deviating comparable steps
      lock_slowdown      number > 1     IPC_standalone / IPC_folded above which gang_only
      reuse_threshold    number > 0     passed to cosched.scn (reuse factor)
      l1_activity        number >= 0    passed to cosched.scn (GB/s per core)
    Errors: "characterize.new: phase_threshold must be a number > 0, got '-1'",
    "characterize.new: unknown parameter 'foo' (accepted: ...)".

c:update(snap)
    Call once per plan(), before anything else, with the snapshot.  Creates
    a record for every new job (and starts its characterization), forgets
    jobs that left, consumes each job's last step according to what
    plan_step() asked of it in the previous epoch, and runs phase detection.
    A second call with the same snap.epoch does nothing.

c:plan_step(snap [, budget]) -> part
    budget: the CPUs the characterization may use (a list; default
    snap.cpus; a CPU that is not managed is an error).  Returns new plain
    tables:
      part.jobs       { { id =, cpus = }, ... } plan entries, ready to put in
                      a step's jobs list
      part.placements { { id =, cpus =, phase = "standalone"|"folded",
                          domain = d, llc = llc index, cores = n }, ... }
      part.reserved   all managed CPUs of the LLC domains holding a
                      placement, in the budget or not: nothing but the
                      placements and part.may_share jobs may run there
      part.shared     budget CPUs of those domains not on a placed job's
                      cores: for part.may_share jobs only
      part.left       budget CPUs outside reserved domains: for any job
      part.may_share  ids of the jobs allowed on part.shared: ready jobs of
                      class N, ascending
      part.waiting    pending jobs not placed this step, oldest first
      part.duration   snap.quantum (the recommended step duration)
    plan_step() may be called again in the same epoch (the last call is the
    one update() checks against); calling it before update(snap) for this
    epoch is an error.

c:info(id) -> table or nil
    A fresh copy (changing it changes nothing):
      class           "S"|"C"|"N"|"unknown": the measured class, else the
                      hint, else "unknown"
      measured_class, hint, reason (cosched.scn's explanation)
      ipc_standalone, ipc_folded, fp, mpki   numbers or nil
      bw              { l1 =, l2 =, llc = } GB/s, fields nil until measured
      bw_folded       { llc = }
      cores_standalone, cores_folded         k_s, k_f
      characterizing  bool;  phase "standalone"|"folded"|nil
      ready           not characterizing
      gang_only, degraded                    bools
      folded_pending  folded_phase = deferred: the folded reference not
                      measured yet (ipc_folded, fp nil)
      stored          seeded from job.stored, not characterized since
      recharacterizations   characterizations started after the first
                            (phase changes, retries, recharacterize())
      discarded       steps rejected for broken isolation or wrong CPUs

c:results() -> { result, ... }
    The characterizations completed (or given up) since the previous call,
    by job id, as plan()'s optional second value expects them:
      { id =, class = "S"|"C"|"N"|"unknown" (measured, never the hint),
        ipc_standalone =, ipc_folded =, fp =, mpki =, bw = { l1 =, l2 =,
        llc = }, gang_only =, degraded =, cores_standalone =,
        cores_folded = }
    (nil fields: not measured).  Seeded jobs give none until they are
    characterized again.  Jobs that left are dropped.

c:pending([snap]) -> { id, ... }
    Jobs under characterization, oldest first: in the order their current
    characterization started (a re-characterized job queues behind the
    others), jobs starting in the same update in snapshot order (id).

c:recharacterize(id) -> bool
    Start a new characterization of a ready job now (false if unknown or
    already characterizing).

ch.job_ipc(job) -> number or nil
    The job IPC of a snapshot job's last step (see Measurements), nil when
    not counted.

Cost: update() and plan_step() are linear in the jobs plus the CPUs of their
lists (each walked once), plus the LLC domains per pending job in
plan_step(); the topology is split once per set of managed CPUs and cached.
No randomness, no io/os: the module uses only what the policy sandbox gives.
]==]

local cpus = require "cosched.cpus"
local scn = require "cosched.scn"

local M = {}

local HUGE = math.huge
local floor, ceil, min, max, abs = math.floor, math.ceil, math.min, math.max, math.abs

M.defaults = {
  standalone_quanta = 2,
  folded_quanta = 1,
  folded_phase = "alone",
  phase_threshold = 0.20,
  phase_confirm = 2,
  lock_slowdown = 2.5,
  reuse_threshold = scn.defaults.reuse_threshold,
  l1_activity = scn.defaults.l1_activity,
}

local rules = {
  standalone_quanta = { int = true, lo = 1, what = "an integer >= 1" },
  folded_quanta     = { int = true, lo = 0, what = "an integer >= 0" },
  folded_phase      = { choices = { alone = true, deferred = true }, what = "alone or deferred" },
  phase_threshold   = { lo = 0, open = true, what = "a number > 0" },
  phase_confirm     = { int = true, lo = 1, what = "an integer >= 1" },
  lock_slowdown     = { lo = 1, open = true, what = "a number > 1" },
  reuse_threshold   = { lo = 0, open = true, what = "a number > 0" },
  l1_activity       = { lo = 0, what = "a number >= 0" },
}

local accepted = {}
for k in pairs(rules) do accepted[#accepted + 1] = k end
table.sort(accepted)

-- a finite number >= 0 from a metrics table, else nil
local function num(m, key)
  local v = m and m[key]
  if type(v) == "number" and v >= 0 and v < HUGE then return v end
  return nil
end

local function param(params, key)
  local v = params[key]
  if v == nil then return M.defaults[key] end
  local r = rules[key]
  if r.choices then
    if type(v) ~= "string" or not r.choices[v] then
      error(("characterize.new: %s must be %s, got '%s'"):format(key, r.what, tostring(v)), 3)
    end
    return v
  end
  local n = (type(v) == "number" or type(v) == "string") and tonumber(v) or nil
  if n == nil or n ~= n or n == HUGE or n == -HUGE or n < r.lo or (r.open and n == r.lo)
      or (r.int and n ~= floor(n)) then
    error(("characterize.new: %s must be %s, got '%s'"):format(key, r.what, tostring(v)), 3)
  end
  if r.int then n = floor(n) end
  return n
end

local C = {}
C.__index = C

function M.new(params)
  if params == nil then params = {} end
  if type(params) ~= "table" then
    error("characterize.new: params must be a table or nil, got '" .. tostring(params) .. "'", 2)
  end
  local unknown = {}
  for k in pairs(params) do
    if rules[k] == nil then unknown[#unknown + 1] = tostring(k) end
  end
  if #unknown > 0 then
    table.sort(unknown)
    error(("characterize.new: unknown parameter '%s' (accepted: %s)")
      :format(unknown[1], table.concat(accepted, ", ")), 2)
  end
  local p = {}
  for _, k in ipairs(accepted) do p[k] = param(params, k) end
  return setmetatable({
    p = p,
    recs = {},        -- id -> record
    queue = {},       -- { {id =, seq =}, ... } characterizations in start order
    seq = 0,
    asked = {},       -- id -> what plan_step() asked of the job this epoch
    done = {},        -- id -> true: completed since the last results()
    epoch = nil,      -- epoch of the last update()
    topo = nil,       -- cached topology (keyed on the managed CPUs)
    owned = false,    -- standalone placements take whole domains (see header)
  }, C)
end

-- The job's IPC per cycle of its threads over its last step (instructions
-- per cycle of the CPUs it kept busy, as the counters report it), and its
-- CPU per wall second then; nil when not measured.  Unlike the job IPC it
-- does not change when other processes take CPU time from the job.
local function cycle_ipc(job)
  local last = job and job.last
  if not last or not last.counted then return nil end
  local m = last.metrics
  if not m then return nil end
  local ipc = num(m, "ipc")
  if ipc == nil then
    local ins, cyc = num(m, "instructions"), num(m, "cycles")
    if ins and cyc and cyc > 0 then ipc = ins / cyc end
  end
  local wall, cpu = last.wall, last.cpu
  if ipc == nil or type(wall) ~= "number" or not (wall > 0) or type(cpu) ~= "number"
      or not (cpu >= 0) or cpu == HUGE then
    return nil
  end
  return ipc, cpu / wall
end

--- The job's IPC over its last step: instructions per wall-clock cycle,
--- summed over its CPUs (see the header); nil when not measured.
function M.job_ipc(job)
  local ipc, busy = cycle_ipc(job)
  return ipc and ipc * busy
end

-- cycle_ipc for a job that kept some CPU busy (phase detection compares it
-- with the characterization's per-cycle references); nil otherwise.
local function per_cpu(job)
  local ipc, busy = cycle_ipc(job)
  if not ipc or not (busy > 0) then return nil end
  return ipc
end

-- ------------------------------------------------------------------ topology

local function topology(self, snap)
  local key = table.concat(snap.cpus, ",")
  local t = self.topo
  if t and t.key == key then return t end
  t = { key = key, core_of = {}, core_pus = {}, dom_of = {}, doms = {} }
  local managed = cpus.set(snap.cpus)
  local topo = snap.topology or {}
  local llc_of_core, n = {}, 0
  for _, core in ipairs(topo.cores or {}) do
    local pus = {}
    for _, c in ipairs(core.pus) do
      if managed[c] and not t.core_of[c] then pus[#pus + 1] = c end
    end
    if #pus > 0 then
      n = n + 1
      t.core_pus[n] = pus
      llc_of_core[n] = core.llc
      for _, c in ipairs(pus) do t.core_of[c] = n end
    end
  end
  for _, c in ipairs(snap.cpus) do          -- a managed CPU of no listed core
    if not t.core_of[c] then
      n = n + 1
      t.core_pus[n] = { c }
      t.core_of[c] = n
    end
  end
  local groups
  local nllc = topo.llcs and #topo.llcs or 0
  if nllc >= 2 then
    local g, level = cpus.split(snap, nllc, "llc")
    if level == "llc" then groups = g end
  end
  groups = groups or { cpus.copy(snap.cpus) }
  for d, g in ipairs(groups) do
    t.doms[d] = { cpus = g, cores = {} }
    for _, c in ipairs(g) do t.dom_of[c] = d end
  end
  for k = 1, n do
    local dom = t.doms[t.dom_of[t.core_pus[k][1]]]
    dom.cores[#dom.cores + 1] = k
    if dom.llc == nil then dom.llc = llc_of_core[k] end
  end
  self.topo = t
  return t
end

-- number of distinct cores of a CPU list
local function cores_in(t, list)
  local seen, n = {}, 0
  for _, c in ipairs(list) do
    local k = t.core_of[c]
    if k and not seen[k] then
      seen[k] = true
      n = n + 1
    end
  end
  return n
end

-- ------------------------------------------------------------------ records

local function class_of(rec)
  return rec.class or rec.hint or "unknown"
end

-- may share an LLC domain with a job under characterization
local function shareable(rec)
  return rec ~= nil and not rec.characterizing and class_of(rec) == "N"
end

local function start(self, rec)
  self.seq = self.seq + 1
  rec.seq = self.seq
  rec.characterizing = true
  rec.phase = "standalone"
  rec.acc, rec.facc = nil, nil
  rec.fold_due, rec.fold_cleared, rec.forced = false, false, false
  rec.missed, rec.usable, rec.strike = 0, 0, 0
  rec.attempts = rec.attempts + 1
  if rec.attempts > 1 then rec.recharacterizations = rec.recharacterizations + 1 end
  self.queue[#self.queue + 1] = { id = rec.id, seq = rec.seq }
end

-- a characterization ends: completed (finish) or given up (give_up)
local function close(self, rec, degraded)
  self.done[rec.id] = true
  rec.characterizing = false
  rec.phase = nil
  rec.degraded = degraded
  rec.strike = 0
  rec.acc, rec.facc = nil, nil
end

local function finish(self, rec)
  close(self, rec, false)
  rec.stored = false
  rec.blind = false
end

local function give_up(self, rec)
  if rec.forced then
    -- a deferred folded check that got no measurement: the standalone
    -- profile stands, and the check is not asked for again
    close(self, rec, rec.degraded or false)
    rec.fold_due, rec.forced = false, false
    return
  end
  close(self, rec, true)
  rec.blind = rec.usable == 0
end

local function miss(self, rec)
  rec.missed = rec.missed + 1
  if rec.missed >= self.p.standalone_quanta + self.p.folded_quanta then give_up(self, rec) end
end

local function finish_standalone(self, rec)
  local a, p = rec.acc, self.p
  local bw = { l1 = a.l1 / a.w, l2 = a.l2 / a.w, llc = a.llc / a.w }
  local cls, d = scn.classify({ bw_l1 = bw.l1, bw_l2 = bw.l2, bw_llc = bw.llc, ncores = a.k },
    { reuse_threshold = p.reuse_threshold, l1_activity = p.l1_activity })
  rec.class, rec.reason, rec.bw = cls, d.reason, bw
  rec.ipc_s = a.ipc / a.w
  rec.cyc_s = a.c > 0 and { ipc = a.cipc / a.c } or nil
  rec.mpki = a.mpki_w > 0 and a.mpki / a.mpki_w or nil
  rec.k_s = a.k
  rec.ipc_f, rec.fp, rec.bw_f, rec.k_f, rec.gang_only, rec.cyc_f = nil, nil, nil, nil, false, nil
  if p.folded_quanta == 0 or ceil(a.k / 2) >= a.k then
    finish(self, rec)
  elseif p.folded_phase == "deferred" then
    finish(self, rec)                   -- ready; the folded reference later (DEFERRED)
    rec.fold_due = true
  else
    rec.phase = "folded"
    rec.acc = nil
  end
end

-- the folded reference from the accumulated folded steps
local function set_folded(self, rec)
  local a = rec.facc
  rec.ipc_f = a.ipc / a.w
  rec.cyc_f = a.c > 0 and { ipc = a.cipc / a.c } or nil
  rec.k_f = a.k
  rec.bw_f = a.llc_w > 0 and a.llc / a.llc_w or nil
  if rec.ipc_s > 0 then
    rec.fp = 1 - rec.ipc_f / rec.ipc_s
    rec.gang_only = rec.ipc_f * self.p.lock_slowdown < rec.ipc_s
  else
    rec.fp, rec.gang_only = nil, false
  end
  rec.fold_due, rec.facc = false, nil
end

local function finish_folded(self, rec)
  set_folded(self, rec)
  rec.forced = false
  finish(self, rec)
end

-- a step's wall time, job IPC and per-cycle IPC into a phase's means
local function add_step(a, job, jipc)
  local w = job.last.wall
  a.w, a.n = a.w + w, a.n + 1
  a.ipc = a.ipc + jipc * w
  local ci = per_cpu(job)
  if ci then a.c, a.cipc = a.c + w, a.cipc + ci * w end
  return w
end

-- one folded step's measurements into rec.facc; true when folded_quanta
-- steps are in
local function add_folded(self, rec, job, k, jipc)
  local a = rec.facc
  if not a or a.k ~= k then
    a = { k = k, w = 0, n = 0, ipc = 0, llc = 0, llc_w = 0, c = 0, cipc = 0 }
    rec.facc = a
  end
  local w = add_step(a, job, jipc)
  local llc = num(job.last.metrics, "bw_llc")
  if llc then a.llc, a.llc_w = a.llc + llc * w, a.llc_w + w end
  return a.n >= self.p.folded_quanta
end

-- a step the job ran as asked, isolated, long enough: use it
local function consume(self, rec, job, ask)
  local last = job.last
  if not last.counted then return miss(self, rec) end
  local m, w = last.metrics, last.wall
  local jipc = M.job_ipc(job)
  if ask.phase == "standalone" then
    local l1, l2, llc = num(m, "bw_l1"), num(m, "bw_l2"), num(m, "bw_llc")
    if not (jipc and l1 and l2 and llc) then
      if jipc and not last.socket_owned and not ask.whole and not self.owned then
        self.owned = true                 -- domain-scope LLC events: see header
        rec.discarded = rec.discarded + 1
        return
      end
      return miss(self, rec)
    end
    local a = rec.acc
    if not a or a.k ~= ask.k then       -- other core count: start the means again
      a = { k = ask.k, w = 0, n = 0, ipc = 0, l1 = 0, l2 = 0, llc = 0, mpki = 0, mpki_w = 0, c = 0, cipc = 0 }
      rec.acc = a
    end
    add_step(a, job, jipc)
    a.l1, a.l2, a.llc = a.l1 + l1 * w, a.l2 + l2 * w, a.llc + llc * w
    local mp = num(m, "mpki")
    if mp then a.mpki, a.mpki_w = a.mpki + mp * w, a.mpki_w + w end
    rec.usable = rec.usable + 1
    if a.n >= self.p.standalone_quanta then finish_standalone(self, rec) end
  else
    if not jipc then return miss(self, rec) end
    rec.usable = rec.usable + 1
    if add_folded(self, rec, job, ask.k, jipc) then finish_folded(self, rec) end
  end
end

-- the CPUs a job ran on in the last step, nil when it did not run there.
-- The engine says it (job.last.ran, job.last.cpus); frozen and cpus say what
-- holds now, which differs for a job whose instance ended and restarted
-- during the step (it ran, and is frozen now).  Snapshots without
-- last.ran (made by hand, older engines) fall back to the current state.
local function ran_on(job)
  local last = job.last
  if last ~= nil and last.ran ~= nil then
    if last.ran then return last.cpus or job.cpus end
    return nil
  end
  if not job.frozen then return job.cpus end
  return nil
end
M.ran_on = ran_on

-- no other job on the job's cores; no non-N job but itself (own = 1 when it
-- is counted among them) in its LLC domains unless any_llc
local function isolated(t, job, own, any_llc, dom_cnt, core_cnt)
  for _, c in ipairs(ran_on(job) or job.cpus) do
    local k = t.core_of[c]
    if k and (core_cnt[k] or 0) > 1 then return false end
    if not any_llc then
      local d = t.dom_of[c]
      if d and (dom_cnt[d] or 0) > own then return false end
    end
  end
  return true
end

local function rel(x, ref, floor_)
  local den = max(ref, floor_)
  if den == 0 then return x == ref and 0 or HUGE end
  return abs(x - ref) / den
end

-- a ready job ran: phase detection, or a retry once the counters work
local function watch(self, rec, job, t, dom_cnt, core_cnt)
  local last, p = job.last, self.p
  local m = last.metrics
  local jipc = M.job_ipc(job)
  if not jipc then return end
  if rec.degraded and rec.blind then
    if num(m, "bw_l1") and num(m, "bw_l2") and num(m, "bw_llc") then start(self, rec) end
    return
  end
  if not rec.ipc_s then return end
  local k = min(rec.threads, cores_in(t, ran_on(job) or job.cpus))
  local ref_ipc, ref_llc, ref_cyc
  if k == rec.k_s then
    ref_ipc, ref_llc, ref_cyc = rec.ipc_s, rec.bw and rec.bw.llc, rec.cyc_s
  elseif rec.k_f and k == rec.k_f then
    ref_ipc, ref_llc, ref_cyc = rec.ipc_f, rec.bw_f, rec.cyc_f
  else
    return
  end
  local n = class_of(rec) == "N"
  if not isolated(t, job, n and 0 or 1, n, dom_cnt, core_cnt) then return end
  local x, llc = jipc, num(m, "bw_llc")
  local ci = per_cpu(job)
  if ref_cyc and ci then
    -- per cycle, where the characterization measured it so: other
    -- processes taking CPU from the job are not a phase
    x, ref_ipc = ci, ref_cyc.ipc
  end
  local dev = rel(x, ref_ipc, 0)
  if llc and ref_llc then dev = max(dev, rel(llc, ref_llc, p.l1_activity * k)) end
  if dev > p.phase_threshold then
    rec.strike = rec.strike + 1
    if rec.strike >= p.phase_confirm then start(self, rec) end
  else
    rec.strike = 0
  end
end

-- folded_phase = deferred: a ready job that ran folded (DEFERRED)
local function fold_watch(self, rec, job, t, dom_cnt, core_cnt)
  -- folded: on fewer cores than standalone, as many as the policy gave it
  -- (flca folds on half the LLC domain: 4 cores for a 6-thread job of 8)
  local k = min(rec.threads, cores_in(t, ran_on(job) or job.cpus))
  if not (k >= 1 and k < rec.k_s) then return end
  local jipc = M.job_ipc(job)
  if not jipc then return end
  local n = class_of(rec) == "N"
  if isolated(t, job, n and 0 or 1, n, dom_cnt, core_cnt) then
    if add_folded(self, rec, job, k, jipc) then
      set_folded(self, rec)
      -- a lock-bound job is news for the profile store (and every later plan)
      if rec.gang_only then self.done[rec.id] = true end
    end
  elseif not rec.fold_cleared then
    -- a co-runner only lowers the IPC: a slowdown within the bound beside
    -- one proves the job is not lock-bound; beyond it, measure it alone
    if jipc * self.p.lock_slowdown >= rec.ipc_s then
      rec.fold_cleared = true
    else
      self.seq = self.seq + 1
      rec.seq = self.seq
      rec.characterizing, rec.phase, rec.forced = true, "folded", true
      rec.facc, rec.missed = nil, 0
      self.queue[#self.queue + 1] = { id = rec.id, seq = rec.seq }
    end
  end
end

-- a finite number (any sign) from a table, else nil
local function finite(t, key)
  local v = t and t[key]
  if type(v) == "number" and v == v and v > -HUGE and v < HUGE then return v end
  return nil
end

-- ready from a stored profile (see STORED PROFILES); false when unusable
local function seed(rec, s)
  if (type(s) ~= "table" and type(s) ~= "userdata") then return false end
  local cls = s.class
  if cls ~= "S" and cls ~= "C" and cls ~= "N" then return false end
  local bw = s.bw
  if type(bw) ~= "table" and type(bw) ~= "userdata" then bw = nil end
  rec.class, rec.reason = cls, "stored profile"
  rec.ipc_s, rec.ipc_f = num(s, "ipc_standalone"), num(s, "ipc_folded")
  rec.fp, rec.mpki = finite(s, "fp"), num(s, "mpki")
  rec.bw = { l1 = num(bw, "l1"), l2 = num(bw, "l2"), llc = num(bw, "llc") }
  local ks, kf = num(s, "cores_standalone"), num(s, "cores_folded")
  rec.k_s = (ks and ks >= 1) and floor(ks) or nil
  rec.k_f = (kf and kf >= 1) and floor(kf) or nil
  rec.gang_only = s.gang_only == true
  rec.characterizing, rec.phase, rec.degraded, rec.blind = false, nil, false, false
  rec.strike, rec.missed, rec.usable = 0, 0, 0
  rec.stored = true
  return true
end

local function check_snap(fn, snap)
  if type(snap) ~= "table" and type(snap) ~= "userdata" then
    error("characterize: " .. fn .. ": snap must be the snapshot, got '" .. tostring(snap) .. "'", 3)
  end
end

-- ------------------------------------------------------------------ API

function C:update(snap)
  check_snap("update", snap)
  if self.epoch ~= nil and snap.epoch == self.epoch then return self end
  self.epoch = snap.epoch
  local t = topology(self, snap)
  local recs = self.recs
  local gen = (self.gen or 0) + 1
  self.gen = gen
  local core_of, dom_of = t.core_of, t.dom_of

  -- one pass: records (new jobs start or are seeded), and who ran where in
  -- the last step: per core all jobs, per LLC domain the jobs that are not
  -- class N (as they were during that step); the jobs that ran are kept for
  -- the second pass, which needs the complete counts
  local dom_mark, dom_cnt, core_mark, core_cnt = {}, {}, {}, {}
  local ran, nran, nlive, nrecs = {}, 0, 0, self.nrecs or 0
  for _, job in ipairs(snap.jobs) do
    local id = job.id
    local rec = recs[id]
    if not rec then
      rec = { id = id, attempts = 0, recharacterizations = 0, discarded = 0, gang_only = false }
      recs[id] = rec
      nrecs = nrecs + 1
      if seed(rec, job.stored) then
        -- a profile without the folded reference: take it as DEFERRED says
        rec.fold_due = self.p.folded_phase == "deferred" and rec.ipc_f == nil and not rec.gang_only
          and rec.k_s ~= nil and ceil(rec.k_s / 2) < rec.k_s and (rec.ipc_s or 0) > 0
      else
        if snap.counters == "none" then
          -- nothing can be measured on this run: no quanta are spent on a
          -- characterization that cannot end (NO COUNTERS); the job is
          -- ready at once with its hint, degraded and blind
          rec.degraded, rec.blind, rec.characterizing = true, true, false
          rec.reason = "no counters on this run"
          rec.missed, rec.usable, rec.strike = 0, 0, 0
          self.done[id] = true        -- its (degraded) result, at once: never stored
        else
          start(self, rec)
        end
      end
    end
    if rec.gen ~= gen then
      rec.gen = gen
      nlive = nlive + 1
    end
    rec.hint = job.class
    rec.threads = job.threads or HUGE
    local where = ran_on(job)
    if where then
      local nonn = not shareable(rec)
      for _, c in ipairs(where) do
        local k = core_of[c]
        if k and core_mark[k] ~= id then
          core_mark[k] = id
          core_cnt[k] = (core_cnt[k] or 0) + 1
        end
        local d = dom_of[c]
        if nonn and d and dom_mark[d] ~= id then
          dom_mark[d] = id
          dom_cnt[d] = (dom_cnt[d] or 0) + 1
        end
      end
      local last = job.last
      if last ~= nil and type(last.wall) == "number" then
        nran = nran + 1
        ran[nran] = job
      end
    end
  end
  if nlive ~= nrecs then            -- forget the jobs that left
    for id, rec in pairs(recs) do
      if rec.gen ~= gen then
        recs[id] = nil
        self.asked[id] = nil
        self.done[id] = nil
        nrecs = nrecs - 1
      end
    end
  end
  self.nrecs = nrecs

  local half = (type(snap.quantum) == "number" and snap.quantum > 0) and snap.quantum / 2 or 0
  for i = 1, nran do
    local job = ran[i]
    local rec, ask, last = recs[job.id], self.asked[job.id], job.last
    do
      if rec.characterizing then
        if ask then
          if table.concat(ran_on(job), ",") ~= ask.key
              or not isolated(t, job, 1, false, dom_cnt, core_cnt) then
            rec.discarded = rec.discarded + 1
          elseif last.wall >= half then
            consume(self, rec, job, ask)
          end
        end
      elseif last.counted and last.wall >= half then
        watch(self, rec, job, t, dom_cnt, core_cnt)
        if rec.fold_due and not rec.characterizing then fold_watch(self, rec, job, t, dom_cnt, core_cnt) end
      end
    end
  end
  self.asked = {}
  return self
end

function C:pending(snap)
  if snap ~= nil and snap.epoch ~= self.epoch then
    error("characterize: pending: call c:update(snap) first in this epoch", 2)
  end
  local out, keep = {}, {}
  for _, e in ipairs(self.queue) do
    local rec = self.recs[e.id]
    if rec and rec.characterizing and rec.seq == e.seq then
      keep[#keep + 1] = e
      out[#out + 1] = e.id
    end
  end
  self.queue = keep
  return out
end

-- the domain and core count for a pending job, or nil
local function choose(self, rec, avail, ndom_cores, taken)
  local best, best_k, best_n
  local function better(d, k)
    if not best then return true end
    if k ~= best_k then return k > best_k end
    if (d == rec.last_dom) ~= (best == rec.last_dom) then return d == rec.last_dom end
    if #avail[d] ~= #avail[best] then return #avail[d] < #avail[best] end
    return d < best
  end
  if rec.phase == "standalone" then
    for pass = self.owned and 1 or 2, 2 do
      for d = 1, #avail do
        local a = #avail[d]
        if not taken[d] and a > 0 and (pass == 2 or a == ndom_cores[d]) then
          local k = min(rec.threads, a)
          if better(d, k) then
            best, best_k, best_n = d, k, (pass == 1) and a or k
          end
        end
      end
      if best then break end
    end
  else
    local want = ceil(rec.k_s / 2)
    for d = 1, #avail do
      if not taken[d] and #avail[d] >= want and better(d, want) then
        best, best_k, best_n = d, want, want
      end
    end
  end
  return best, best_n
end

function C:plan_step(snap, budget)
  check_snap("plan_step", snap)
  if snap.epoch ~= self.epoch then
    error("characterize: plan_step: call c:update(snap) first in this epoch", 2)
  end
  local t = topology(self, snap)
  local managed = cpus.set(snap.cpus)
  local blist = cpus.copy(budget or snap.cpus)
  for _, c in ipairs(blist) do
    if not managed[c] then
      error(("characterize: plan_step: budget cpu %s is not managed (managed: %s)")
        :format(tostring(c), cpus.format(snap.cpus)), 2)
    end
  end
  local bset = cpus.set(blist)

  -- usable cores (every managed CPU in the budget) per domain, topology order
  local avail, ndom_cores = {}, {}
  for d, dom in ipairs(t.doms) do
    local list = {}
    for _, k in ipairs(dom.cores) do
      local pus, whole = t.core_pus[k], true
      for _, c in ipairs(pus) do
        if not bset[c] then whole = false break end
      end
      if whole then list[#list + 1] = k end
    end
    avail[d], ndom_cores[d] = list, #dom.cores
  end

  self.asked = {}
  local part = { jobs = {}, placements = {}, waiting = {}, may_share = {},
                 reserved = {}, shared = {}, left = {}, duration = snap.quantum }
  local taken, used_core = {}, {}
  for _, id in ipairs(self:pending()) do
    local rec = self.recs[id]
    local d, n = choose(self, rec, avail, ndom_cores, taken)
    if d then
      taken[d] = true
      local list = {}
      for i = 1, n do
        local k = avail[d][i]
        used_core[k] = true
        for _, c in ipairs(t.core_pus[k]) do list[#list + 1] = c end
      end
      table.sort(list)
      local copy = {}
      for i, c in ipairs(list) do copy[i] = c end
      part.jobs[#part.jobs + 1] = { id = id, cpus = list }
      part.placements[#part.placements + 1] = { id = id, cpus = copy, phase = rec.phase,
        domain = d, llc = t.doms[d].llc, cores = n }
      self.asked[id] = { key = table.concat(list, ","), phase = rec.phase,
                         k = min(rec.threads, n), whole = #list == #t.doms[d].cpus }
      rec.last_dom = d
    else
      part.waiting[#part.waiting + 1] = id
    end
  end

  for d, dom in ipairs(t.doms) do
    if taken[d] then
      for _, c in ipairs(dom.cpus) do
        part.reserved[#part.reserved + 1] = c
        if bset[c] and not used_core[t.core_of[c]] then part.shared[#part.shared + 1] = c end
      end
    end
  end
  table.sort(part.reserved)
  table.sort(part.shared)
  for _, c in ipairs(blist) do
    if not taken[t.dom_of[c]] then part.left[#part.left + 1] = c end
  end
  for _, job in ipairs(snap.jobs) do
    if shareable(self.recs[job.id]) then part.may_share[#part.may_share + 1] = job.id end
  end
  table.sort(part.may_share)
  return part
end

-- the internal record of a job, or nil: for cosched.pairing's fast path,
-- read-only by convention (fields as set above; see info() for their meaning)
function C:info_raw(id)
  return self.recs[id]
end

function C:info(id)
  local rec = self.recs[id]
  if not rec then return nil end
  local bw = rec.bw or {}
  return {
    id = id,
    class = class_of(rec),
    measured_class = rec.class,
    hint = rec.hint,
    reason = rec.reason,
    ipc_standalone = rec.ipc_s,
    ipc_folded = rec.ipc_f,
    fp = rec.fp,
    mpki = rec.mpki,
    bw = { l1 = bw.l1, l2 = bw.l2, llc = bw.llc },
    bw_folded = { llc = rec.bw_f },
    cores_standalone = rec.k_s,
    cores_folded = rec.k_f,
    characterizing = rec.characterizing,
    phase = rec.characterizing and rec.phase or nil,
    ready = not rec.characterizing,
    gang_only = rec.gang_only,
    folded_pending = rec.fold_due or false,
    degraded = rec.degraded or false,
    stored = rec.stored or false,
    recharacterizations = rec.recharacterizations,
    discarded = rec.discarded,
  }
end

function C:results()
  local ids, out = {}, {}
  for id in pairs(self.done) do
    if self.recs[id] then ids[#ids + 1] = id end
  end
  table.sort(ids)
  for _, id in ipairs(ids) do
    local rec = self.recs[id]
    local bw = rec.bw or {}
    out[#out + 1] = {
      id = id,
      class = rec.class or "unknown",
      ipc_standalone = rec.ipc_s,
      ipc_folded = rec.ipc_f,
      fp = rec.fp,
      mpki = rec.mpki,
      bw = { l1 = bw.l1, l2 = bw.l2, llc = bw.llc },
      gang_only = rec.gang_only or false,
      degraded = rec.degraded or false,
      cores_standalone = rec.k_s,
      cores_folded = rec.k_f,
    }
  end
  self.done = {}
  return out
end

function C:recharacterize(id)
  local rec = self.recs[id]
  if not rec or rec.characterizing then return false end
  start(self, rec)
  return true
end

return M
