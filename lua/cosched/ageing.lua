--[==[
cosched.ageing - the ages of FOP and F-LCA (paper 001, Haritatos et al.,
"Contention-aware scheduling policies for fairness and throughput",
Sec. 4.3 and 4.4).

    Progress = IPC_last_quantum / IPC_standalone              (Sec. 4.3)
    CP       = 1 - Progress                                   (contention penalty)
    Age      = w1 * WT / (n * TQ) + w2 * CP + w3 * FP          (Sec. 4.4; FOP: w = (1, 1, 0))

The paper measures Progress by IPC, from hardware counters.  Where there are
none (VMs, clouds) the tracker below stands in for IPC_last / IPC_ref with a
job's OpenMP region throughput against its own best of late, else its CPU
time per core against its own best of late (tr.signal says which).

progress(ipc_last, ipc_ref) -> number or nil
    ipc_last / ipc_ref; nil when either is missing or ipc_ref <= 0.
cp(progress) -> number
    1 - progress clamped to [0, 1] (0 when progress is nil: nothing
    measured, no penalty).  The paper has CP in [0, 1); a job that runs
    faster than its reference (progress > 1: a quieter node, more cores than
    when characterized) has no penalty, not a negative one.
fp(x) -> number
    FP clamped to [0, 1]; nil -> 0.  The paper's FP is in (0, 0.5] (Sec.
    4.4); jobs beyond the lock_slowdown bound are gang_only and not aged
    against folded ones anyway.
age(wt, n, tq, cp, fp, w) -> number
    w = { w1 =, w2 =, w3 = }; WT and TQ in seconds, n the number of jobs.
bound(w) -> w2 + w3: the largest value the CP and FP terms can add.
pool() -> pool; pool:entries(snap, ctx, tr, w, with_fp) -> list
    FOP's and F-LCA's aged entries: one { id, wt, class, gang, age } per
    ready job of ctx (pairing's src:begin), in ctx.ready's order; age from
    age(WT, #snap.jobs, snap.quantum, tr:cp(id), FP, w), FP = fp(the job's
    fp) with with_fp (F-LCA), else 0 (FOP: no FP term).  The entry tables
    are kept in the pool by id and refilled each plan (no garbage per
    epoch); valid until the next call.
fill_order(ctx, entries) -> function
    pairing.place's fill.order for them: the ready jobs (ctx.byid) in age
    order (select), sorted once, on the first call (only when a hole exists).
k_default(n) -> 4 when n >= 4, else 2 (Sec. 4.4: "K = 4 for workloads with
    more than four applications, and K = 2 for workloads with less than four
    applications"; the paper leaves n = 4 open.  We take K = 4 there: with
    K = 2 the two jobs selected together are the two oldest, and when they
    are an S and a C job LCA may not pair them, so each runs alone - gang
    behaviour for half of every epoch; with K = 4 the four jobs are paired
    among themselves (S with S, C with C) every epoch.  Measured in the
    simulator on the paper's 4-job medium-contention mixes: 0.84 of the
    best schedule with K = 2, 0.99 with K = 4 (issue #11); the choice is
    the policy parameter k, so k = 2 restores the other reading).
select(entries, k) -> the k oldest entries { id =, age =, wt = }, sorted by
    age descending, then WT descending, then id ascending (a new list).
    A full sort when k is more than an eighth of the entries, else top().
top(entries, k [, skip]) -> the same by selection: one pass keeping the k
    oldest in order, O(n) comparisons plus O(k) per entry that enters (few
    when k is small); entries for which skip(e) is true are left out.
older(a, b) -> a comes before b in that order.

busy_threads([probe]) -> bt
    The threads each job keeps busy (F-LCA's threads = used).
bt:observe(snap)
    A job that ran since the previous observe and left half a CPU or more of
    the CPUs it was given idle (last.cpu / last.wall < last.ncpus - 0.5) in
    two such steps in a row is trimmed to ceil(used - 0.2) threads (at
    least 1; the larger of the two); a step in which it was given more
    than that and used them (within half a CPU) undoes the trim.
    job.team (the OpenMP team size the shim reports) caps the job when it
    is smaller than the cores the job ran on in its last step, or when the
    job has not run yet; a team that fills its cores says nothing (the
    shim sizes teams to the cores held: a job folded to one core reports
    1), and a wider team than the cap lifts it.
bt:get(job) -> threads
    The team cap, else the trimmed count, each capped by job.threads,
    except one run in `probe` (default 8), when it is job.threads again so
    that a team sized while folded can grow; else job.threads.

tracker(reference [, cpu_progress [, region_progress]]) -> tr
    Keeps each job's last contention penalty between epochs.
    reference = "standalone": Progress against IPC_standalone, literally
    (FOP); "nearest": against IPC_folded when the job's last step used a
    core count closer to cores_folded than to cores_standalone, else
    IPC_standalone (F-LCA: the folding penalty is the FP term, CP is the
    contention one; see cosched.characterize, Measurements).
tr:observe(snap, info)
    info[id] = { ipc_standalone =, ipc_folded =, cores_standalone =,
    cores_folded = } (as cosched.pairing's ctx.info).  A job whose
    quanta_run grew since the previous observe and whose last step was
    counted (cosched.characterize.job_ipc) gets a new CP; otherwise it
    keeps the one it had (the "last quantum" is the last one it ran).
    Without counters (or without IPC_ref: characterize = no) the paper has
    no Progress; such a job gets one from the first of these its last step
    has:
    "regions" (region_progress): its OpenMP region throughput, the outermost
      regions it completed per wall second (last.regions / last.wall),
      against the best such rate it had lately at the same width (the cores
      it could use, min(last.ncpus, threads); with reference = standalone
      the best at any width, so a folded step's CP holds its folding loss as
      the paper's does).  Regions per wall second are the CPU share it got
      times the work it did per CPU second, so one ratio sees both a
      process on its cores (fewer CPU seconds; spinning OpenMP waits hide
      that from CPU time, not from regions) and memory contention (the
      same CPU seconds, less work: a STREAM triad beside another stream
      completes 0.62-0.79x the regions per second it does beside a compute
      kernel, BENCHMARKS.md 12a), which CPU time cannot see.  Taken only
      when the step has at least 8 regions (MIN_REGIONS: the regions cut
      by the step's two ends make a count off by less than one, so 8 keeps
      that error under 12.5 %; a job whose regions are long, or a step cut
      short, says nothing), last.cpu > 0 and at most 1e7 regions per CPU second (an
      OpenMP fork-join costs 0.5 us or more, BENCHMARKS.md 12a): else the
      CPU signal.  The job writes its own count: a false one moves its own
      CP, hence its own age, within [0, w2] as true contention does, never
      another job's CP (but a job that is older runs sooner: one that
      over-reports once looks contended, at no cost, until its best decays;
      region_progress = no where jobs' counts are not trusted).  Under
      F-LCA's ageing = progress the same count is the job's speed in the
      ledger (below): the age is then not bounded, but the speed is at
      least MIN_SPEED, so a job that under-reports is credited at most 4x
      too little progress: it runs up to 4x its share, at the others'
      expense.  It assumes the regions of a job do similar work: a
      phase of longer regions looks like contention until the best decays.
    "cpu" (cpu_progress): its CPU per core in the last step (last.cpu /
      (last.wall min(last.ncpus, threads))) against the best such rate it
      had lately, so that another process on its cores shows as contention
      while a job that sleeps or runs serially by nature does not.
    "Lately": the maximum, decayed by 2 % per step measured so (BEST_DECAY).
    IPC is preferred to both (a job measured by IPC once keeps to it).
tr:cp(id) -> number (0 when never measured)
tr.signal[id] -> "ipc", "regions" or "cpu": what the job's CP was measured
    from (nil: never measured)
ledger() -> lg: what each job is owed against plain gang's progress (F-LCA's
    ageing = progress; below, at its definition); lg:planned(steps, snap)
    after each plan, so that its next observe knows each job's width
tr.fresh[id] -> the speed of the jobs measured anew by the last observe:
    IPC_last / IPC_standalone (against alone on the node); for a job with
    no IPC_standalone (no counters, or characterize = no) whose CP came
    from regions, its Progress from them (against its own best, as its CP);
    else nil
]==]

local ch = require "cosched.characterize"
local rotation = require "cosched.rotation"

local M = {}

M.defaults = { w1 = 1, w2 = 1, w3 = 2 }

function M.progress(ipc_last, ipc_ref)
  if type(ipc_last) ~= "number" or type(ipc_ref) ~= "number" or not (ipc_ref > 0) then return nil end
  return ipc_last / ipc_ref
end

local function clamp01(x)
  if x ~= x then return 0 end
  return math.max(0, math.min(1, x))
end

function M.cp(progress)
  if progress == nil then return 0 end
  return clamp01(1 - progress)
end

function M.fp(x)
  if type(x) ~= "number" then return 0 end
  return clamp01(x)
end

function M.age(wt, n, tq, cp, fp, w)
  w = w or M.defaults
  return w.w1 * wt / (math.max(n, 1) * tq) + w.w2 * (cp or 0) + w.w3 * (fp or 0)
end

-- plan()'s third value for `cosched status` (cosched-policy(7)): per job its
-- class, age, the age's weighted terms (wt = w1 WT/(n TQ), cp = w2 CP,
-- fp = w3 FP; they add up to age), whether this epoch's plan runs it, and
-- for jobs still being characterized just that.  nil unless snap.explain
-- (only the node engine reads it).  cp_of(id), fp_of(id): the unweighted
-- penalties the ages were computed with (nil: 0); signal_of(id): what CP was
-- measured from ("ipc", "regions", "cpu"; nil: not measured), the job's "signal".
function M.explain(snap, ctx, entries, steps, n, tq, w, cp_of, fp_of, signal_of, owed_of)
  if not snap.explain then return nil end
  w = w or M.defaults
  local runs, info = {}, {}
  for _, st in ipairs(steps) do
    for _, e in ipairs(st.jobs or {}) do runs[e.id] = true end
  end
  for _, job in ipairs(snap.jobs) do
    info[job.id] = { characterizing = true, selected = runs[job.id] or false }
  end
  for _, x in ipairs(entries) do
    local e = ctx.info[x.id] or {}
    info[x.id] = {
      class = e.class or "unknown",
      age = x.age,
      wt = w.w1 * x.wt / (math.max(n, 1) * tq),
      cp = w.w2 * ((cp_of and cp_of(x.id)) or 0),
      fp = w.w3 * ((fp_of and fp_of(x.id)) or 0),
      selected = runs[x.id] or false,
      signal = signal_of and signal_of(x.id) or nil,
      owed = owed_of and owed_of(x.id) or nil,
    }
  end
  return info
end

function M.bound(w)
  return w.w2 + w.w3
end

function M.k_default(n)
  return n >= 4 and 4 or 2
end

local function older(a, b)
  if a.age ~= b.age then return a.age > b.age end
  if a.wt ~= b.wt then return a.wt > b.wt end
  return a.id < b.id
end
M.older = older

function M.select(entries, k)
  local n = #entries
  if k >= n or k * 8 > n then                 -- most of them: sort
    -- positions sorted on keys read once into arrays (cheaper comparisons)
    local age, wt, id, idx = {}, {}, {}, {}
    for i = 1, n do
      local e = entries[i]
      age[i], wt[i], id[i], idx[i] = e.age, e.wt, e.id, i
    end
    table.sort(idx, function(a, b)
      if age[a] ~= age[b] then return age[a] > age[b] end
      if wt[a] ~= wt[b] then return wt[a] > wt[b] end
      return id[a] < id[b]
    end)
    local l = {}
    for i = 1, math.min(k, n) do l[i] = entries[idx[i]] end
    return l
  end
  return M.top(entries, k)
end

function M.top(entries, k, skip)
  local best = rotation.first(#entries, k,
    function(a, b) return older(entries[a], entries[b]) end,
    skip and function(i) return skip(entries[i]) end)
  for i = 1, #best do best[i] = entries[best[i]] end
  return best
end

local T = {}
T.__index = T

function M.tracker(reference, cpu_progress, region_progress)
  if reference ~= "standalone" and reference ~= "nearest" then
    error("ageing.tracker: reference must be 'standalone' or 'nearest'", 2)
  end
  return setmetatable({ ref = reference, cps = {}, runs = {}, best = {}, signal = {}, cpu = cpu_progress,
                        regions = region_progress, rbest = {}, rsteps = {} }, T)
end

-- the cores the job could keep busy in its last step: min(ncpus, threads)
local function width(job)
  local l = job.last
  return math.min(l.ncpus, (type(job.threads) == "number" and job.threads >= 1) and job.threads or l.ncpus)
end

-- CPU per core the job's last step gave it (its threads' CPU time over the
-- step's wall time and the cores it could keep busy), nil when not known
local function cpu_rate(job)
  local l = job.last
  if not l or l.ran == false or type(l.cpu) ~= "number" or type(l.wall) ~= "number" or not (l.wall > 0)
      or type(l.ncpus) ~= "number" or l.ncpus < 1 then
    return nil
  end
  return l.cpu / (l.wall * width(job))
end

-- the decay per measured step of a job's best rate (its reference)
local BEST_DECAY = 0.98
-- the fewest regions in a step that make a rate (the regions cut by the
-- step's ends make the count off by less than one)
local MIN_REGIONS = 8
-- the most regions per CPU second believed (a fork-join costs >= 0.5 us)
local MAX_REGIONS_PER_CPU_S = 1e7

-- outermost OpenMP regions per wall second in the job's last step, nil when
-- it ran no such step, or the count is missing, too small or not credible
local function region_rate(job)
  local l = job.last
  if not l or l.ran == false then return nil end
  local r, cpu, wall = l.regions, l.cpu, l.wall
  if type(r) ~= "number" or not (r >= MIN_REGIONS) or r == math.huge
      or type(cpu) ~= "number" or not (cpu > 0) or cpu == math.huge
      or type(wall) ~= "number" or not (wall > 0) or wall == math.huge
      or type(l.ncpus) ~= "number" or l.ncpus < 1 or r / cpu > MAX_REGIONS_PER_CPU_S then
    return nil
  end
  return r / wall
end

function T:observe(snap, info)
  local live = {}
  self.fresh = {}
  for _, job in ipairs(snap.jobs) do
    local id = job.id
    live[id] = true
    local i = info[id]
    local new = (self.runs[id] or -1) < job.quanta_run
    if i and new then
      local ipc = ch.job_ipc(job)
      local ref = i.ipc_standalone
      if self.ref == "nearest" and i.ipc_folded and i.cores_folded and i.cores_standalone then
        local n = math.min(job.threads or math.huge, job.last and job.last.ncpus or math.huge)
        if math.abs(n - i.cores_folded) < math.abs(n - i.cores_standalone) then ref = i.ipc_folded end
      end
      local p = M.progress(ipc, ref)
      if p then self.cps[id], self.signal[id] = M.cp(p), "ipc" end
      self.fresh[id] = M.progress(ipc, i.ipc_standalone)
    end
    if new and self.signal[id] ~= "ipc" then
      -- no counters: the CPU the job got per core against the best it got
      -- lately (another process on its cores, not its own nature, lowers
      -- it); its best is kept up to date even when regions are used
      local r = self.cpu and cpu_rate(job)
      local cpu_p
      if r and r > 0 then
        local b = math.max((self.best[id] or 0) * BEST_DECAY, r)
        self.best[id] = b
        cpu_p = r / b
      end
      -- its regions per second against its best at this width (or at any
      -- width for reference = standalone), decayed per step so measured
      local q = self.regions and region_rate(job)
      if q then
        local k = self.ref == "nearest" and width(job) or 0
        local n = (self.rsteps[id] or 0) + 1
        self.rsteps[id] = n
        local bs = self.rbest[id] or {}
        self.rbest[id] = bs
        local old = bs[k]
        local b = math.max(old and old.v * BEST_DECAY ^ (n - old.at) or 0, q)
        bs[k] = { v = b, at = n }
        self.cps[id], self.signal[id] = M.cp(q / b), "regions"
        if not (i and i.ipc_standalone) then self.fresh[id] = q / b end
      elseif cpu_p then
        self.cps[id], self.signal[id] = M.cp(cpu_p), "cpu"
      end
    end
    self.runs[id] = job.quanta_run
  end
  for id in pairs(self.runs) do
    if not live[id] then
      self.runs[id], self.cps[id], self.best[id], self.signal[id] = nil, nil, nil, nil
      self.rbest[id], self.rsteps[id] = nil, nil
    end
  end
end

function T:cp(id)
  return self.cps[id] or 0
end


local P = {}
P.__index = P

function M.pool()
  return setmetatable({ n = 0, of = {} }, P)
end

function P:entries(snap, ctx, tr, w, with_fp)
  local n, tq = #snap.jobs, snap.quantum
  if self.n > 2 * n + 64 then self.of, self.n = {}, 0 end   -- forget ended jobs now and then
  local of, info, entries = self.of, ctx.info, {}
  for i, job in ipairs(ctx.ready) do
    local id, e = job.id, info[job.id]
    local x = of[id]
    if not x then x = { id = id }; of[id] = x; self.n = self.n + 1 end
    x.wt, x.class, x.gang = job.waited, e.class, e.gang_only
    x.age = M.age(job.waited, n, tq, tr:cp(id), with_fp and M.fp(e.fp) or 0, w)
    entries[i] = x
  end
  return entries
end

local B = {}
B.__index = B

function M.busy_threads(probe)
  return setmetatable({ eff = {}, low = {}, want = {}, runs = {}, at = {}, cap = {}, probe = probe or 8 }, B)
end

function B:observe(snap)
  local live = {}
  for _, job in ipairs(snap.jobs) do
    local id = job.id
    live[id] = true
    local l = job.last
    local team = job.team
    if type(team) == "number" and team >= 1 and team == team then
      -- the OpenMP team says how many threads the job keeps busy only when
      -- it is smaller than the cores the job ran on: the shim sizes a team
      -- to the cores held, so a team that fills them says nothing (a job
      -- folded to one core reports 1, and capping it there would keep it
      -- there).  Before the job ran at all, its team is all there is.
      local ran = (self.runs[id] or -1) < job.quanta_run and l and l.ran ~= false and type(l.ncpus) == "number"
      if not l or (ran and team < l.ncpus) then
        if self.cap[id] ~= team then self.cap[id], self.at[id] = team, job.quanta_run end
      elseif ran and self.cap[id] and team > self.cap[id] then
        self.cap[id] = nil                          -- it started a wider team: declared again
      end
    end
    if (self.runs[id] or -1) < job.quanta_run and l and l.ran ~= false
        and type(l.wall) == "number" and l.wall > 0 and type(l.cpu) == "number" and type(l.ncpus) == "number" then
      local u, given = l.cpu / l.wall, l.ncpus
      if u < given - 0.5 then                       -- half a CPU or more of its cores idle
        self.low[id] = (self.low[id] or 0) + 1
        self.want[id] = math.max(self.want[id] or 0, math.max(1, math.ceil(u - 0.2)))
        if self.low[id] >= 2 then                   -- twice in a row: trim
          if not self.eff[id] or self.want[id] < self.eff[id] then self.at[id] = job.quanta_run end
          self.eff[id] = self.want[id]
          self.low[id], self.want[id] = 0, nil
        end
      else
        self.low[id], self.want[id] = 0, nil
        local e = self.eff[id]
        if e and given > e then self.eff[id] = nil end  -- given more and used it: declared again
      end
    end
    self.runs[id] = job.quanta_run
  end
  for id in pairs(self.runs) do
    if not live[id] then
      self.runs[id], self.eff[id], self.low[id], self.want[id], self.at[id], self.cap[id] = nil, nil, nil, nil, nil, nil
    end
  end
end

function B:get(job)
  local t = job.threads
  local c = self.cap[job.id]
  if c then
    if t and c >= t then return t end
    if (job.quanta_run - (self.at[job.id] or 0)) % self.probe == self.probe - 1 then return t end
    return c
  end
  local e = self.eff[job.id]
  if not e or (t and e >= t) then return t end
  -- a trimmed job gets its declared threads one run in `probe` (a team
  -- sized while folded grows only when it is given more cores)
  if (job.quanta_run - (self.at[job.id] or 0)) % self.probe == self.probe - 1 then return t end
  return e
end

function M.fill_order(ctx, entries)
  local memo
  return function()
    if not memo then
      memo = {}
      for i, e in ipairs(M.select(entries, #entries)) do memo[i] = ctx.byid[e.id] end
    end
    return memo
  end
end

-- ledger() -> lg: ageing = progress (F-LCA option): what each job is owed.
--   lg:observe(snap, fresh, signal): owed[id] grows by dt / n for every live
--   job (n = live jobs, dt = the virtual or wall time since the last
--   observe: the share of progress plain gang would give it, in standalone
--   seconds) and falls by the progress the job made since: speed x its CPU
--   seconds since the last observe / a width.  speed = the job's latest
--   Progress (fresh[id]), at least MIN_SPEED, 1 when it has none.  With
--   signal[id] == "ipc" (IPC_last / IPC_standalone: progress per second of running;
--   the tracker's tr.signal)
--   the width is the cores it could keep busy, so CPU / width is the time it
--   ran: the CPUs the last plan gave it (lg:planned: per step min(threads,
--   its CPUs), weighted by the steps' durations), else those of its last
--   step (job.last.ncpus) - which is the plan's last step only: a job that
--   ran in the first round of two was frozen in the last one, with the
--   whole node as its cpus, so its progress counted half; otherwise (region throughput against its own best at that width,
--   or nothing) the width is the cores it has alone (min(threads, node
--   CPUs)): without any signal the ledger is fair on CPU time.  CPU time,
--   not the step's wall time, so that a step seen by two plans counts once.
--   A job seen for the first time starts level with the least owed live job
--   (as CFS starts a task at min_vruntime), not at 0: after a long run the
--   others may be far behind or ahead of gang.
--   lg.owed[id]: seconds of standalone progress the job is behind gang (< 0:
--   ahead).  lg:ratio(id): the progress it made since it arrived over
--   gang's (dt / n summed), 1 until that is a standalone second.  Jobs that left are forgotten.  A speed counts at least
--   MIN_SPEED (0.25): the region signal is the job's own count (its OpenMP
--   page), and a job that reports itself slow would otherwise be owed
--   without bound, at the others' expense; so no job, lying or truly
--   slowed, is owed more than 4x its CPU share for its progress.
local LG = {}
LG.__index = LG
local MIN_SPEED = 0.25

function M.ledger()
  return setmetatable({ owed = {}, speed = {}, cpu = {}, now = nil, width = {}, gang = {}, start = {} }, LG)
end

-- the widths the plan gives its jobs, for the next observe
function LG:planned(steps, snap)
  local threads, cs, ds = {}, {}, {}
  for _, job in ipairs(snap.jobs) do
    local t = job.threads
    if type(t) == "number" and t >= 1 then threads[job.id] = t end
  end
  for _, st in ipairs(steps) do
    local d = (type(st.duration) == "number" and st.duration > 0) and st.duration or snap.quantum or 1
    for _, e in ipairs(st.jobs) do
      local k = math.min(#e.cpus, threads[e.id] or #e.cpus)
      cs[e.id], ds[e.id] = (cs[e.id] or 0) + k * d, (ds[e.id] or 0) + d
    end
  end
  local w = {}
  for id, c in pairs(cs) do
    if ds[id] > 0 and c > 0 then w[id] = c / ds[id] end
  end
  self.width = w
end

-- the job's progress since it arrived over what plain gang would have given
-- it (1: its gang share; 2: twice), from at least one standalone second of
-- gang progress on (1 before), at least 0.05
function LG:ratio(id)
  local g = self.gang[id]
  if not g or g < 1 then return 1 end
  return math.max((g - (self.owed[id] - self.start[id])) / g, 0.05)
end

function LG:observe(snap, fresh, signal)
  local now = snap.now
  if type(now) ~= "number" then return end
  local n = #snap.jobs
  local dt = self.now and math.max(0, now - self.now) or 0
  self.now = now
  local ncpu = type(snap.cpus) == "table" and #snap.cpus or 0
  local owed, speed, seen, live = self.owed, self.speed, self.cpu, {}
  -- a job seen for the first time starts level with the least owed live
  -- job (CFS's min_vruntime): not behind by the whole run so far, nor ahead
  local floor
  for _, job in ipairs(snap.jobs) do
    local o = owed[job.id]
    if o and (not floor or o < floor) then floor = o end
  end
  for _, job in ipairs(snap.jobs) do
    local id = job.id
    live[id] = true
    local threads = (type(job.threads) == "number" and job.threads >= 1) and job.threads or nil
    if owed[id] then
      owed[id] = owed[id] + dt / math.max(n, 1)
      self.gang[id] = self.gang[id] + dt / math.max(n, 1)
    else
      owed[id] = floor or 0
      self.gang[id], self.start[id] = 0, owed[id]
    end
    local rel = fresh and fresh[id]
    if type(rel) == "number" and rel == rel and rel >= 0 and rel < 4 then speed[id] = math.max(rel, MIN_SPEED) end
    local c, l = job.cpu_time, job.last
    if type(c) == "number" and c == c and c < math.huge then
      local dc = seen[id] and c - seen[id] or 0
      seen[id] = c
      if dc > 0 and l and type(l.ncpus) == "number" and l.ncpus >= 1 then
        -- IPC_last / IPC_standalone is progress per second of running: the
        -- seconds it ran are its CPU over the cores it kept busy.  Any other
        -- speed (regions against the job's own best at that width, or none)
        -- says nothing of width: its CPU over the cores it has alone
        local width = (signal and signal[id] == "ipc") and (self.width[id] or math.min(l.ncpus, threads or l.ncpus))
                      or math.max(1, math.min(threads or ncpu, ncpu > 0 and ncpu or threads or 1))
        owed[id] = owed[id] - (speed[id] or 1) * dc / width
      end
    end
  end
  for id in pairs(owed) do
    if not live[id] then owed[id], speed[id], seen[id], self.gang[id], self.start[id] = nil, nil, nil, nil, nil end
  end
end

return M
