--[==[
cachefair - cache-fair: CPU time compensates cache-fair jobs for unfair LLC sharing, taken from best-effort jobs.

Implements: the cache-fair algorithm of paper 003 (Fedorova, Seltzer and
Smith, "Improving Performance Isolation on Chip Multiprocessors via an
Operating System Scheduler", PACT 2007), Sec. 2 (algorithm), 3.1 (fair miss
rate, Eq. 1-2), 4 (sampling and scheduling phases), on cosched's epochs.
"If the thread executes fewer instructions per cycle than it would under
fair cache allocation, the scheduler increases that thread's CPU
timeslice."

Classes (Sec. 2: "a cache-fair class and a best-effort class"; "A user
specifies a thread's class in the same way as she specifies a thread's
priority").  Our choice: parameter fair = priority (default): a job whose
job-file priority is > 0 (job.priority) is cache-fair, every other job is
best-effort; or fair = NAME,NAME,...: the jobs with these names are
cache-fair.  Nothing is added to the engine.

Base schedule: time-shared, deficit round robin.  Every epoch is one step
of one quantum (the snapshot holds the measurements of each job's LAST step
only, so every step must be observed).  S = min(jobs, corun x D, cores)
jobs run per step, D the LLC domains; they are dealt over G = min(D,
ceil(S / corun)) groups of whole LLC domains (cosched.cpus.split(snap, G,
"llc")), and the k jobs of a group get its cores interleaved (core i to job
i mod k) so that all of them share all of the group's LLCs: they are each
other's co-runners ("a run is the contiguous time interval when a group of
co-runners runs simultaneously").  Each job has a credit in quanta: every
step, each live job gains S / n (its fair share), the S jobs with the most
credit run (jobs never run first; ties in an order that changes every epoch
so that co-runners vary, which the regression needs: credits are compared
in whole quanta, floor(credit), and the order inside one whole quantum
changes every epoch) and pay 1.  Credits are kept at mean 0.  With no compensation this is fair round robin: every
job gets S/n of the steps, give or take one.

Miss rate: misses per cycle, MPC = llc_misses / cycles (Sec. 3.1: "we
define the miss rate as the number of misses per cycle"), both summed over
the job's threads, i.e. per core; fallback mpki x ipc / 1000.  Per-core
rates compare because co-runners get equal core counts.  missrate = mpki
uses misses per kilo-instruction instead.  IPC: metrics.ipc (or
instructions / cycles), per core.

Sampling phase (Sec. 4): after each step, a cache-fair job A that ran
gives one sample (x = sum of its co-runners' miss rates, y = A's miss rate,
A's IPC) when: the step was counted for A and for every co-runner; it had
exactly n = corun - 1 co-runners (Eq. 2's n); its wall time was at least
half a quantum; and it retired at least min_instructions instructions when
instructions are counted (paper: "discards measurements from runs where the
cache-fair thread executed fewer than 10 million instructions (to eliminate
cold-start effects)").  Other steps are discarded.  With at least
min_samples (10; "We collect at least ten data samples") samples:
    a, b = least squares of y = a x + b                     (Eq. 1)
    FairMissRate = b / (1 - a n)                            (Eq. 2)
    (cosched.regress).  A fit without a valid fair point (x does not vary,
    1 - a n <= 0, non-positive result) keeps sampling, on the latest
    4 x min_samples samples.
Only the planned step is observed.  The snapshot shows each job's last
step, whoever planned it: after a plan() that failed (the engine counts it
in snap.epoch) or a plan the engine refused, the last step was the
engine's fallback, every job on every cpu.  Pairing its miss rates with
the co-runners of our plan would put wrong points into the regression (the
paper's sample is "the contiguous time interval when a group of co-runners
runs simultaneously": those co-runners, not others).  So a step is ours only
when the previous plan was made in the previous epoch and every job that
ran since was planned, on the number of cpus planned; otherwise nothing is
sampled or compensated from it, the cache-fair jobs count it as discarded,
and the credit the planned jobs paid for it is refunded (in the fallback
every job ran alike).
Fair IPC model (paper 003 defers it to [14]; ours, stated): IPC as a linear
function of the job's own miss rate over the same samples, IPC = c MR + d,
so IPC_fair = c FairMissRate + d (the mean IPC when MR does not vary);
it must be > 0.
Scheduling phase: after each valid step (same rules, co-runners not needed)
    r = IPC_fair / IPC_actual - 1, clamped to [-max_adjust, max_adjust]
    owed = r x wall / quantum   quanta
("computes how many instructions the thread would have completed if its IPC
had been fair ... computes the adjustment to the next CPU timeslice so that
by the end of that timeslice the thread completes as many instructions as
it would if its IPC were fair": extra time = wall x (IPC_fair / IPC - 1)).
A's credit gains owed; the sum T of all cache-fair jobs' owed quanta is
taken from the live best-effort jobs in equal parts ("spreads compensatory
adjustments evenly among all best-effort threads"), so every adjustment
sums to zero.  |T| per step is capped at be_share x (S/n) x (number of
best-effort jobs), i.e. a fraction be_share of the best-effort jobs' own
share, so best-effort jobs keep at least (1 - be_share) of their share and
never starve.  No best-effort job: no compensation (nowhere to take the
time from; logged once).  After resample valid scheduling-phase runs the
sampling phase starts again (paper: sampling ends after 100 million
instructions and repeats "every time a thread has completed one billion
instructions": ten times as long; we count runs, default 10 x 10).
Compensation needs time sharing: when every job runs every step (n <= S)
there is no CPU time to move; estimates are still made.
Without counters nothing is sampled: fair round robin (logged once).

Parameters (--policy-opt key=value):
  fair = priority        priority (job.priority > 0 is cache-fair) or job names, comma-separated
  corun = 2              jobs sharing an LLC group per step (>= 2; Eq. 2's n = corun - 1)
  missrate = mpc         mpc (misses per cycle, the paper's) or mpki
  min_samples = 10       samples before the fair miss rate is estimated
  min_instructions = 1e7 a run with fewer instructions (when counted) is discarded
  max_adjust = 0.5       bound of |IPC_fair / IPC - 1| per run
  be_share = 0.5         largest fraction of the best-effort share moved per step
  resample = 100         scheduling-phase runs before sampling again

When not to use it: few jobs or jobs with similar cache behaviour give the
regression little variation (paper Sec. 3.2: "low variation in the miss
rates used for regression analysis results in a low-fidelity linear
equation"); the goal is performance isolation, not throughput.
]==]

local cpus = require "cosched.cpus"
local regress = require "cosched.regress"
local rotation = require "cosched.rotation"

local S                                  -- state, see reset()

local function reset(p)
  S = {
    p = p,
    credit = {},        -- id -> quanta owed (mean 0)
    est = {},           -- id -> cache-fair job's record: { phase, samples, fit..., runs }
    prev = nil,         -- previous step: { epoch, corun = { [id] = { ids } }, ran = { [id] = true } }
    seen_runs = {},     -- id -> quanta_run at the previous plan
    logged = {},
    last_comp = nil,    -- the last adjustment: { [id] = quanta }, sums to 0
    ever_counted = false,
  }
end

local function finite(x)
  return type(x) == "number" and x == x and x > -math.huge and x < math.huge
end

local function log_once(key, level, msg)
  if not S.logged[key] then
    S.logged[key] = true
    cosched.log(level, msg)
  end
end

local function miss_rate(m)
  if not m then return nil end
  if S.p.missrate == "mpki" then
    if finite(m.mpki) then return m.mpki end
    if finite(m.llc_misses) and finite(m.instructions) and m.instructions > 0 then
      return 1000 * m.llc_misses / m.instructions
    end
    return nil
  end
  if finite(m.llc_misses) and finite(m.cycles) and m.cycles > 0 then return m.llc_misses / m.cycles end
  if finite(m.mpki) and finite(m.ipc) then return m.mpki * m.ipc / 1000 end
  return nil
end

local function ipc_of(m)
  if not m then return nil end
  if finite(m.ipc) and m.ipc > 0 then return m.ipc end
  if finite(m.instructions) and finite(m.cycles) and m.cycles > 0 and m.instructions > 0 then
    return m.instructions / m.cycles
  end
  return nil
end

local function is_fair(job)
  local f = S.p.fair
  if f.priority then return (job.priority or 0) > 0 end
  return f.names[job.name] == true
end

-- the step just observed for job: its metrics if it ran, was counted and is long enough
local function valid_run(job, q)
  if not S.prev or not S.prev.ran[job.id] then return nil end
  if (S.seen_runs[job.id] or -1) >= job.quanta_run then return nil end
  local last = job.last
  if not last or not last.counted or not last.metrics then return nil end
  if not (finite(last.wall) and last.wall >= 0.5 * q) then return nil, "short" end
  local m = last.metrics
  if finite(m.instructions) and m.instructions < S.p.min_instructions then return nil, "short" end
  return m
end

local function estimate(e)
  local xs, ys, mrs, ipcs = {}, {}, {}, {}
  for i, s in ipairs(e.samples) do
    xs[i], ys[i], mrs[i], ipcs[i] = s.x, s.y, s.y, s.ipc
  end
  local a, b = regress.fit(xs, ys)
  if not a then return nil, b end
  local n = S.p.corun - 1
  local fair, why = regress.fair_miss_rate(a, b, n)
  if not fair then return nil, why end
  local ipc_fair
  local c, d = regress.fit(mrs, ipcs)
  if c then ipc_fair = c * fair + d else ipc_fair = regress.mean(ipcs) end
  if not (finite(ipc_fair) and ipc_fair > 0) then
    return nil, ("fair IPC %.6g is not positive"):format(ipc_fair or 0 / 0)
  end
  return { a = a, b = b, n = n, fair_mr = fair, c = c, d = d, ipc_fair = ipc_fair }
end

-- Was the last step the one our previous plan asked for?  Not when plan()
-- failed in between (the engine counts every call in snap.epoch and runs
-- its fallback - every job on every cpu - for a failed one), nor when the
-- engine refused the plan or replaced it: then a job ran that we did not
-- plan, or a planned job ran on another number of cpus.  Returns nil when
-- it was ours, else why not.
local function foreign_step(snap)
  local prev = S.prev
  if not prev then return nil end
  if prev.epoch ~= snap.epoch - 1 then
    return ("plan() of epoch %d failed or was skipped"):format(snap.epoch - 1)
  end
  for _, job in ipairs(snap.jobs) do
    local seen = S.seen_runs[job.id]
    if seen and seen < job.quanta_run then               -- ran since we last looked
      if not prev.ran[job.id] then
        return ("job %d ran without being planned"):format(job.id)
      end
      local want, last = prev.ncpus[job.id], job.last
      if not last or last.ncpus ~= want then
        return ("job %d ran on %s cpus, planned %d"):format(job.id, tostring(last and last.ncpus), want)
      end
    end
  end
  return nil
end

-- observe the last step: samples, estimates, compensation (returns owed quanta per cache-fair job)
local function observe(snap, byid)
  local q, p = snap.quantum, S.p
  local owed = {}
  for _, job in ipairs(snap.jobs) do
    local e = S.est[job.id]
    if e then
      local m, why = valid_run(job, q)
      if m then
        local y, ipc = miss_rate(m), ipc_of(m)
        if e.phase == "sampling" then
          local co = S.prev.corun[job.id] or {}
          local x, ok = 0, (#co == p.corun - 1) and y ~= nil and ipc ~= nil
          for _, cid in ipairs(co) do
            local cj = byid[cid]
            local cm = cj and cj.last and cj.last.counted and cj.last.metrics
            local cy = cm and (S.seen_runs[cid] or -1) < cj.quanta_run and miss_rate(cm)
            if not cy then ok = false break end
            x = x + cy
          end
          if ok then
            e.samples[#e.samples + 1] = { x = x, y = y, ipc = ipc }
            while #e.samples > 4 * p.min_samples do table.remove(e.samples, 1) end
            if #e.samples >= p.min_samples then
              local fit, err = estimate(e)
              if fit then
                for k, v in pairs(fit) do e[k] = v end
                e.phase, e.runs = "scheduling", 0
                cosched.log("info", ("job %d (%s): fair miss rate %.6g (a = %.6g, b = %.6g, n = %d, %d samples), fair IPC %.6g")
                  :format(job.id, job.name or "?", e.fair_mr, e.a, e.b, e.n, #e.samples, e.ipc_fair))
              else
                cosched.log("debug", ("job %d: no fair miss rate yet: %s"):format(job.id, err))
              end
            end
          else
            e.discarded = (e.discarded or 0) + 1
          end
        elseif ipc then
          local r = e.ipc_fair / ipc - 1
          r = math.max(-p.max_adjust, math.min(p.max_adjust, r))
          owed[job.id] = r * job.last.wall / q
          e.runs = e.runs + 1
          if e.runs >= p.resample then
            e.phase, e.samples, e.runs = "sampling", {}, 0
            cosched.log("debug", ("job %d: sampling again"):format(job.id))
          end
        end
      elseif why == "short" then
        e.discarded = (e.discarded or 0) + 1
      end
    end
  end
  return owed
end

-- a deterministic per-epoch shuffle key (integer mixing, 64-bit wrap-around)
local function hashkey(id, epoch)
  local h = (id * 0x9E3779B1 + epoch * 0x85EBCA77) & 0xffffffff
  h = ((h ~ (h >> 15)) * 0x2C1B3C6D) & 0xffffffff
  h = ((h ~ (h >> 12)) * 0x297A2D39) & 0xffffffff
  return h ~ (h >> 15)
end

local function interleave(snap, group, k)
  local set, parts, i = cpus.set(group), {}, 0
  for j = 1, k do parts[j] = {} end
  for _, core in ipairs(snap.topology.cores) do
    local mine = {}
    for _, pu in ipairs(core.pus) do if set[pu] then mine[#mine + 1] = pu end end
    if #mine > 0 then
      local t = parts[i % k + 1]
      for _, pu in ipairs(mine) do t[#t + 1] = pu end
      i = i + 1
    end
  end
  for j = 1, k do table.sort(parts[j]) end
  return parts, i
end

local group_cache = {}
local function llc_groups(snap, G)
  local key = G .. "|" .. table.concat(snap.cpus, ",")
  local v = group_cache[key]
  if not v then
    v = (G == 1) and { cpus.copy(snap.cpus) } or (cpus.split(snap, G, "llc"))
    group_cache = { [key] = v }
    v = group_cache[key]
  end
  return v
end

local function count_cores(snap)
  local n = 0
  for _, core in ipairs(snap.topology.cores) do if #core.pus > 0 then n = n + 1 end end
  return math.max(n, 1)
end

local function count_llcs(snap)
  local seen, n = {}, 0
  for _, core in ipairs(snap.topology.cores) do
    local l = core.llc or 0
    if not seen[l] then seen[l], n = true, n + 1 end
  end
  return math.max(n, 1)
end

local function plan(snap)
  local p, q = S.p, snap.quantum
  local byid, live, n = {}, {}, #snap.jobs
  for _, job in ipairs(snap.jobs) do
    byid[job.id], live[job.id] = job, true
    if S.credit[job.id] == nil then S.credit[job.id] = 0 end
    local fair = is_fair(job)
    if fair and not S.est[job.id] then
      S.est[job.id] = { phase = "sampling", samples = {}, runs = 0 }
    elseif not fair then
      S.est[job.id] = nil
    end
    if job.last and job.last.counted then S.ever_counted = true end
  end
  for id in pairs(S.credit) do
    if not live[id] then S.credit[id], S.est[id], S.seen_runs[id] = nil, nil, nil end
  end
  if n == 0 then
    S.prev = nil
    return { { jobs = {} } }
  end
  if not S.ever_counted then
    for _, job in ipairs(snap.jobs) do
      if job.last then
        log_once("nocounters", "info", "no counted steps (no counters?): no miss rates, fair round robin")
        break
      end
    end
  end

  local D, C = count_llcs(snap), count_cores(snap)
  local slots = math.min(n, p.corun * D, C)

  -- compensation from the last step, if it was ours: the samples of a
  -- fallback step must not be attributed to the co-runners we planned
  local foreign = foreign_step(snap)
  if foreign then
    cosched.log("debug", "last step not as planned (" .. foreign .. "): not sampled, no compensation")
    for id in pairs(S.prev.ran) do
      if S.credit[id] then S.credit[id] = S.credit[id] + 1 end     -- refund: every job ran alike
      local e = S.est[id]
      if e then e.discarded = (e.discarded or 0) + 1 end
    end
    S.foreign = (S.foreign or 0) + 1
    S.prev = nil
  end
  local owed = observe(snap, byid)
  local T, comp = 0, {}
  for id, o in pairs(owed) do T = T + o end
  local be = {}
  for _, job in ipairs(snap.jobs) do if not S.est[job.id] then be[#be + 1] = job.id end end
  if next(owed) then
    if #be == 0 then
      log_once("nobe", "info", "no best-effort job: no CPU time to move, no compensation")
    else
      local cap = p.be_share * (slots / n) * #be
      local f = (math.abs(T) > cap) and cap / math.abs(T) or 1
      local sum = 0
      for id, o in pairs(owed) do comp[id] = o * f sum = sum + o * f end
      for _, id in ipairs(be) do comp[id] = (comp[id] or 0) - sum / #be end
      for id, c in pairs(comp) do S.credit[id] = S.credit[id] + c end
      S.last_comp = comp
      local parts = {}
      for _, job in ipairs(snap.jobs) do
        if comp[job.id] then parts[#parts + 1] = ("%d:%+.4f"):format(job.id, comp[job.id]) end
      end
      cosched.log("debug", "compensation (quanta): " .. table.concat(parts, " "))
    end
  end
  for _, job in ipairs(snap.jobs) do S.seen_runs[job.id] = job.quanta_run end

  -- fair share, mean 0
  local mean = 0
  for _, job in ipairs(snap.jobs) do
    S.credit[job.id] = S.credit[job.id] + slots / n
    mean = mean + S.credit[job.id]
  end
  mean = mean / n
  for _, job in ipairs(snap.jobs) do S.credit[job.id] = S.credit[job.id] - mean end

  -- the slots jobs first in this order: never ran, more whole credit, the
  -- epoch's shuffle key, id.  Keys in arrays, read once; a selection of the
  -- first slots (one pass) rather than a sort of all n.
  local jobs = snap.jobs
  local nr, cr, hk, ids = {}, {}, {}, {}
  for i = 1, n do
    local job = jobs[i]
    local id = job.id
    nr[i], cr[i], hk[i], ids[i] = job.quanta_run == 0, math.floor(S.credit[id] + 1e-9), hashkey(id, snap.epoch), id
  end
  local function before(a, b)
    if nr[a] ~= nr[b] then return nr[a] end
    if cr[a] ~= cr[b] then return cr[a] > cr[b] end
    if hk[a] ~= hk[b] then return hk[a] < hk[b] end
    return ids[a] < ids[b]
  end
  local best
  if slots * 8 > n then                       -- most of them: sort
    best = {}
    for i = 1, n do best[i] = i end
    table.sort(best, before)
    for i = n, slots + 1, -1 do best[i] = nil end
  else                                        -- a few: select
    best = rotation.first(n, slots, before)
  end
  local order = {}
  for i = 1, #best do order[i] = jobs[best[i]] end

  local G = math.max(1, math.min(D, math.ceil(slots / p.corun)))
  local groups = llc_groups(snap, G)
  G = #groups
  local members = {}
  for g = 1, G do members[g] = {} end
  for i = 1, slots do
    local m = members[(i - 1) % G + 1]
    m[#m + 1] = order[i].id
  end
  local jobs, prev = {}, { epoch = snap.epoch, corun = {}, ran = {}, ncpus = {} }
  for g = 1, G do
    local m = members[g]
    if #m > 0 then
      local parts, nc = interleave(snap, groups[g], #m)
      local k = math.min(#m, nc)
      for i = 1, k do
        local id = m[i]
        jobs[#jobs + 1] = { id = id, cpus = parts[i] }
        S.credit[id] = S.credit[id] - 1
        prev.ran[id] = true
        prev.ncpus[id] = #parts[i]
        local co = {}
        for j = 1, k do if j ~= i then co[#co + 1] = m[j] end end
        prev.corun[id] = co
      end
    end
  end
  S.prev = prev
  return { { duration = q, jobs = jobs } }
end

local function num(params, key, lo, int)
  local v = tonumber(params[key])
  if not finite(v) or v < lo or (int and v ~= math.floor(v)) then
    error(("%s = '%s': expected %s >= %s"):format(key, tostring(params[key]), int and "an integer" or "a number", lo), 0)
  end
  return v
end

return {
  api = 1,
  name = "cachefair",
  description = "Cache-fair: extra CPU time for cache-fair jobs below their fair IPC, taken from best-effort jobs (paper 003)",
  params = {
    fair = { default = "priority", help = "cache-fair jobs: priority (job priority > 0) or job names, comma-separated" },
    corun = { default = 2, help = "jobs sharing an LLC group per step (integer >= 2)" },
    missrate = { default = "mpc", help = "miss rate: mpc (misses per cycle) or mpki" },
    min_samples = { default = 10, help = "samples before the fair miss rate is estimated (integer >= 2)" },
    min_instructions = { default = 1e7, help = "runs retiring fewer instructions are discarded" },
    max_adjust = { default = 0.5, help = "bound of |IPC_fair / IPC - 1| per run" },
    be_share = { default = 0.5, help = "largest fraction of the best-effort share moved per step, in [0, 1)" },
    resample = { default = 100, help = "scheduling-phase runs before sampling again (integer >= 1)" },
  },

  init = function(params)
    local p = {}
    if params.fair == "priority" then
      p.fair = { priority = true }
    else
      local names = {}
      for name in tostring(params.fair):gmatch("[^,]+") do names[name] = true end
      if next(names) == nil then error("fair = '': expected priority or job names", 0) end
      p.fair = { names = names }
    end
    p.corun = num(params, "corun", 2, true)
    if params.missrate ~= "mpc" and params.missrate ~= "mpki" then
      error(("missrate = '%s': expected mpc or mpki"):format(tostring(params.missrate)), 0)
    end
    p.missrate = params.missrate
    p.min_samples = num(params, "min_samples", 2, true)
    p.min_instructions = num(params, "min_instructions", 0)
    p.max_adjust = num(params, "max_adjust", 0)
    p.be_share = num(params, "be_share", 0)
    if p.be_share >= 1 then error(("be_share = '%s': expected a number in [0, 1)"):format(params.be_share), 0) end
    p.resample = num(params, "resample", 1, true)
    reset(p)
  end,

  plan = function(snap) return plan(snap) end,
}
