--[==[
pmugroup - PMU groups: jobs grouped by offcore-request-buffer-full and LLC references; group 1 kept apart from group 2.

Implements: the application-characteristic-based scheduler of paper 004
(Park, Kim and Jeon, "Scheduling algorithms for multicore systems based on
application characteristics"), Sec. 5.2 (groups), 5.4 (PMU events), 5.5
(classification and placement), in both versions of Sec. 6: "a version that
applies a threshold value for PMU events and a version that identifies
application groups relatively in descending order of PMU event values".

Groups (Sec. 5.2):
  1  "lbm, libquantum, and lu.B. They have a big impact on the performance
     of other workloads" - found by the Offcore Request Buffer Full event
     (Sec. 5.4.2: "to distinguish between cores with high impact and cores
     that are not affected"): metric orb_full;
  2  "sphinx, omnetpp, and streamcluster ... their performance drops
     significantly by Group 1" - found by the LLC Reference event (Sec.
     5.4.3: "The LLC Reference event can tell how much the core is affected
     by other workloads"): metric llc_refs;
  3  the rest ("sp.B, ua.B, canneal, ferret, gromacs").
  Sec. 5.5: "we use Offcore Request Buffer Full event numbers to identify
  applications that are estimated to be Group 1, and Group 2 to the
  remaining workloads do. Other groups are group 3."

Rates.  The paper reads per-core counts over fixed 10 s periods; cosched's
jobs are multithreaded and steps vary in length, so the counts are divided
by the job's cycles in the step (both summed over its threads):
  orb  = orb_full / cycles              (share of cycles the SQ was full)
  refs = 1000 * llc_refs / cycles       (LLC references per kilo-cycle)
which are the paper's per-core-per-time rates up to the clock frequency.  A
job keeps the rates of the last counted step it ran (the paper re-reads the
PMU periodically; a frozen job keeps its last reading).  cycles missing:
instructions / ipc is used; llc_refs missing: the job counts as not
measured.

Without orb_full (the AMD profiles declare it unavailable: Zen has no event
for a full miss queue): group 1 by memory bandwidth per core.  The paper
picked orb_full only because the bandwidth could not be read per core:
"Group 1 workloads have high memory bandwidth usage and are detrimental to
the performance of other workloads" and "It would be nice to be able to
monitor the memory bandwidth usage per core using the PMU, but currently
PMU can not monitor the memory bandwidth usage per core. Therefore, we
decided to use the PMU to monitor Offcore Request Buffer Full events"
(Sec. 5.4.1-5.4.2).  So where the event is missing we go back to the
quantity it stands for:
  bw = mem_bw / cores  when the job owned its socket(s) in the step
       (job.last.socket_owned: the memory-controller counts are its own);
  bw = bw_llc / cores  otherwise (inbound into the LLC from memory, counted
       per core: the job's own traffic; mem_bw is socket scope and would
       charge the job with its neighbours' traffic);
cores = min(threads, ncpus of the step), GB/s per core like the paper's
per-core reading.  Threshold variant: group 1 when bw >= bw_threshold
(default 2 GB/s per core: our choice, the paper's Fig. 4 is not tabulated;
machine-dependent like the others); relative variant: ranked by bw instead
of orb.  The two are never mixed: when some measured jobs have orb and
others only bw, the metric most of them have is used and the others count
as not measured.  Logged once (info) when bw is used.

variant = threshold (Sec. 6.1): group 1 when orb >= orb_threshold, else
  group 2 when refs >= llc_threshold, else group 3.  "The threshold value is
  used for the PMU event value at the time of identification, and this value
  is determined based on the PMU event values analyzed above" - the paper
  gives no number in its text (its Figs. 5 and 6 are not tabulated), so the
  defaults are our choice: orb_threshold = 0.15 and llc_threshold = 12 per
  kilo-cycle.  They separate the paper's groups on the workload model used
  in tests/lua/test_policies2.lua, where each application of Table 1 gets
  orb = (100 - its row mean)/100 (influence on others, 1 - slowdown it
  causes) and refs = 100 - its column mean (how much it is influenced):
  lu.B 0.19 >= 0.15 > sp.B 0.118; streamcluster 12.5 >= 12 > ua.B 11.2.
  Real counts differ per CPU (profiles/README.md: "Thresholds from the paper
  do not carry over"): calibrate with --policy-opt, or use variant=relative.
variant = relative (Sec. 6.3): "if nine applications are running, three
  applications with high Offcore Request Buffer Full event counts are
  classified as Group 1, three as Group 2 with the highest LLC Reference
  event value, and the remaining three applications as Group 3".  With m
  measured jobs: the floor(m/3) highest orb are group 1, the floor(m/3)
  highest refs among the others group 2, the rest group 3 (ties: lower id
  first).  Table 1's eleven applications give 3/3/5, the paper's groups.
Not measured (no counters, --counters none, the first steps of a job):
  the class hint stands for the group - S (streaming, hurts others) -> 1,
  C (cache-sensitive, hurt by others) -> 2, N or none -> 3.  Logged once.

Placement (Sec. 5.5): "placing Group 1 applications in isolation from Group
2 applications"; Fig. 8: "group 1 applications and group 2 applications are
allocated to each processor"; "If there are only Group 1 workloads ...
divide Group 1 workloads to minimize contention for shared resources and
place Group 3 workloads on empty cores"; "Group 2 workloads are deployed
with Group 3 workloads to protect and Group 1 workloads are deployed
independently from Group 2".  A processor of the paper has its own LLC, so
our processor is a last-level-cache domain.  Every epoch is one round in
which every live job runs once, one quantum, in steps built greedily:
  - G = min(D, live jobs) groups of whole LLC domains
    (cosched.cpus.split(snap, G, "llc")), each holding at most per_llc jobs
    per step (and no more than its cores), each job on its part of the group
    (cosched.cpus.split(snap, k, "auto", group));
  - jobs are taken in cosched.rotation order (owed most first);
  - HARD RULE: a group never holds a group-1 and a group-2 job in the same
    step.  When both kinds wait, the groups are coloured 1 or 2 in
    proportion to how many of each wait (at least one each when G >= 2);
  - group 1 spreads: a group-1 job goes to the group-1-coloured group with
    the fewest jobs; group 2 likewise; group 3 fills: the group with the
    fewest jobs, ties to groups coloured 2 ("deployed with Group 3").
Single-LLC nodes (D = 1), adaptation: there is one processor, so "kept
apart" becomes kept apart in time: each step's colour is that of the first
group-1 or group-2 job in rotation order, and the other kind waits for a
later step of the epoch; group 3 jobs join either.
Cost: the steps are built with the pending jobs in three queues (one per
group, in rotation order), merged by rotation rank; a queue whose head
finds no place is skipped for the rest of the step (nothing after it could
go there either).  O(n G) per epoch plus the rotation sort.  At 1,000 jobs
on one LLC the epoch has 500 steps (BENCHMARKS.md, section 5).
Every job runs in every epoch that is not cut short (at most n steps);
an epoch cut short by a job arriving or ending is followed by one that
starts with the jobs that waited longest.  tests/lua/test_policies2.lua
checks, on 2-256 cores with 1-8 LLCs: no cpu given twice, no LLC domain
with a group-1 and a group-2 job in one step, every job runs every epoch.

Parameters (--policy-opt key=value):
  variant = threshold    threshold | relative
  orb_threshold = 0.15   group 1: orb_full per cycle at or above this
  llc_threshold = 12     group 2: LLC references per 1000 cycles at or above this
  bw_threshold = 2       group 1 without orb_full: GB/s of memory bandwidth per core at or above this
  per_llc = 2            jobs per LLC group per step (integer >= 1)

When not to use it: the paper's gains need "enough competition for shared
resources"; with few group-1 jobs spreading them costs little and
separating them (one step each on a single LLC) costs throughput; the
paper placed single-threaded applications one per core, here a job gets
only its share of an LLC group's cores in a step.
]==]

local cpus = require "cosched.cpus"
local rotation = require "cosched.rotation"
local pairing = require "cosched.pairing"

local impl = {
  variant = "threshold", orb_threshold = 0.15, llc_threshold = 12, bw_threshold = 2, per_llc = 2,
  rates = {},            -- id -> { orb =, refs =, runs = quanta_run when read }
  logged = {},
}

local HINT = { S = 1, C = 2, N = 3 }

local function finite(x)
  return type(x) == "number" and x == x and x > -math.huge and x < math.huge
end

-- rates of one counted step, or nil.  last: job.last (for socket_owned);
-- cores: the cores the job's threads used in the step.
--   orb  = orb_full / cycles, refs = 1000 * llc_refs / cycles (see header);
--   bw   = memory bandwidth per core, GB/s: mem_bw when the job owned its
--          socket(s) (socket-scope counts are then its own), else bw_llc;
--          group 1's metric where orb_full is unavailable (see header).
-- nil when llc_refs or cycles are missing, or both orb_full and a bandwidth.
function impl.rates_of(m, last, cores)
  if not m then return nil end
  local cyc = m.cycles
  if not (finite(cyc) and cyc > 0) and finite(m.instructions) and finite(m.ipc) and m.ipc > 0 then
    cyc = m.instructions / m.ipc
  end
  if not (finite(cyc) and cyc > 0) or not finite(m.llc_refs) then return nil end
  local r = { refs = 1000 * m.llc_refs / cyc }
  if finite(m.orb_full) then r.orb = m.orb_full / cyc end
  local owned = last and last.socket_owned and finite(m.mem_bw)
  local bw = owned and m.mem_bw or (finite(m.bw_llc) and m.bw_llc) or nil
  if bw then
    r.bw = bw / math.max(1, cores or 1)
    r.bw_src = owned and "mem_bw" or "bw_llc"
  end
  if r.orb == nil and r.bw == nil then return nil end
  return r
end

-- The group-1 metric of a list of measured entries: "orb" when every one
-- has orb (the paper's event), else "bw" when every one has bw; else nil
-- (mixed: no common metric).  Mixing the two would rank apples and pears.
function impl.metric_of(measured)
  local orb, bw = true, true
  for _, e in ipairs(measured) do
    if e.orb == nil then orb = false end
    if e.bw == nil then bw = false end
  end
  return orb and "orb" or bw and "bw" or nil
end

-- groups of a list { id =, class =, orb =, bw =, refs = } (orb, bw, refs
-- nil when not measured) -> { [id] = 1 | 2 | 3 }, and the group-1 metric
-- used ("orb", "bw" or nil when nobody was measured).  Thresholds
-- (threshold variant): orb_full per cycle, LLC refs per kilo-cycle, GB/s
-- per core.
function impl.group_jobs(list, variant, t_orb, t_refs, t_bw)
  local g, measured = {}, {}
  for _, e in ipairs(list) do
    if (e.orb ~= nil or e.bw ~= nil) and e.refs ~= nil then
      measured[#measured + 1] = e
    else
      g[e.id] = HINT[e.class] or 3
    end
  end
  local key = impl.metric_of(measured)
  if not key and #measured > 0 then
    -- mixed: the metric most of them have; the others count as not measured
    local no, nb = 0, 0
    for _, e in ipairs(measured) do
      if e.orb ~= nil then no = no + 1 end
      if e.bw ~= nil then nb = nb + 1 end
    end
    key = no >= nb and "orb" or "bw"
    local keep = {}
    for _, e in ipairs(measured) do
      if e[key] ~= nil then keep[#keep + 1] = e else g[e.id] = HINT[e.class] or 3 end
    end
    measured = keep
  end
  if variant == "threshold" then
    local th = key == "bw" and (t_bw or impl.bw_threshold) or t_orb
    for _, e in ipairs(measured) do
      g[e.id] = (e[key] >= th) and 1 or (e.refs >= t_refs) and 2 or 3
    end
  else
    local k = #measured // 3
    local by = function(f)
      return function(a, b)
        if a[f] ~= b[f] then return a[f] > b[f] end
        return a.id < b.id
      end
    end
    local l = {}
    for i, e in ipairs(measured) do l[i] = e end
    if key then table.sort(l, by(key)) end
    local rest = {}
    for i, e in ipairs(l) do
      if i <= k then g[e.id] = 1 else rest[#rest + 1] = e end
    end
    table.sort(rest, by("refs"))
    for i, e in ipairs(rest) do g[e.id] = (i <= k) and 2 or 3 end
  end
  return g, #measured > 0 and key or nil
end

local split_cache, split_n = {}, 0
local function split(snap, k, by, within)
  local key = k .. "|" .. by .. "|" .. table.concat(within or snap.cpus, ",")
  local v = split_cache[key]
  if not v then
    if split_n > 2048 then split_cache, split_n = {}, 0 end
    v = (cpus.split(snap, k, by, within))
    split_cache[key] = v
    split_n = split_n + 1
  end
  return v
end

-- how many cores (jobs can be given whole cores) a cpu list spans
local function ncores(snap, list)
  local set, n = cpus.set(list), 0
  for _, core in ipairs(snap.topology.cores) do
    for _, pu in ipairs(core.pus) do
      if set[pu] then n = n + 1 break end
    end
  end
  return math.max(n, math.min(#list, 1))
end

-- the steps of one epoch.  order: jobs in rotation order; grp: id -> group.
-- Each step takes the jobs still pending in rotation order and places each
-- where it may go, skipping those it may not.  Once a job of group g finds
-- no place, no later job of group g does either in that step (capacities
-- only fill up, colours are fixed per step), so the pending jobs are kept
-- in three queues (one per group, each in rotation order) and a step merges
-- the heads of the queues still placeable, by rotation rank: the same steps
-- as scanning the whole pending list every step, in O(n G) per epoch
-- instead of O(n^2 / per_llc).
function impl.build(snap, order, grp, per_llc)
  local n = #order
  local G = math.max(1, math.min(pairing.domains(snap, snap.cpus), n))
  local groups = (G == 1) and { cpus.copy(snap.cpus) } or split(snap, G, "llc")
  G = #groups
  local cap = {}
  for i, gc in ipairs(groups) do cap[i] = math.max(1, math.min(per_llc, ncores(snap, gc))) end
  local q, head = { {}, {}, {} }, { 1, 1, 1 }
  for rank, j in ipairs(order) do
    local l = q[grp[j.id]]
    l[#l + 1] = rank
  end
  local left = n
  local steps = {}
  local members, count, color = {}, {}, {}
  local parts_of = {}                    -- group i -> k -> its k parts (this epoch)
  for i = 1, G do parts_of[i] = {} end
  while left > 0 and #steps < 1024 do
    local c1, c2 = #q[1] - head[1] + 1, #q[2] - head[2] + 1
    local r1, r2 = q[1][head[1]], q[2][head[2]]
    local first12 = (r1 and (not r2 or r1 < r2)) and 1 or (r2 and 2) or nil
    for i = 1, G do color[i] = nil end
    if c1 > 0 and c2 > 0 then
      if G == 1 then
        color[1] = first12                 -- single processor: apart in time
      else
        local g1 = math.max(1, math.min(G - 1, math.floor(G * c1 / (c1 + c2) + 0.5)))
        for i = 1, G do color[i] = (i <= g1) and 1 or 2 end
      end
    elseif c1 > 0 or c2 > 0 then
      for i = 1, G do color[i] = (c1 > 0) and 1 or 2 end
    end
    for i = 1, G do members[i], count[i] = {}, 0 end
    local blocked = { false, false, false }
    while true do
      -- the pending job first in rotation order among the unblocked queues
      local g, rank
      for k = 1, 3 do
        local r = not blocked[k] and q[k][head[k]]
        if r and (not rank or r < rank) then g, rank = k, r end
      end
      if not g then break end
      local best
      for i = 1, G do
        if count[i] < cap[i] and (g == 3 or color[i] == nil or color[i] == g) then
          if not best or count[i] < count[best]
              or (count[i] == count[best] and g == 3 and color[i] == 2 and color[best] ~= 2) then
            best = i
          end
        end
      end
      if best then
        count[best] = count[best] + 1
        members[best][count[best]] = order[rank].id
        head[g] = head[g] + 1
        left = left - 1
      else
        blocked[g] = true
      end
    end
    local jobs = {}
    for i = 1, G do
      local m = members[i]
      if #m > 0 then
        local pc = parts_of[i]
        local parts = pc[#m]
        if not parts then
          parts = (#m == 1) and { groups[i] } or split(snap, #m, "auto", groups[i])
          pc[#m] = parts
        end
        for k, id in ipairs(m) do
          jobs[#jobs + 1] = { id = id, cpus = parts[k] or groups[i] }
        end
      end
    end
    steps[#steps + 1] = { duration = snap.quantum, jobs = jobs }
  end
  return steps
end

return {
  api = 1,
  name = "pmugroup",
  description = "PMU groups (orb_full, llc_refs): group 1 kept off the LLC domains of group 2 (paper 004 Sec. 5.5)",
  params = {
    variant = { default = "threshold", help = "threshold (fixed event thresholds) or relative (thirds by rank)" },
    orb_threshold = { default = 0.15, help = "group 1: orb_full per cycle at or above this (threshold variant)" },
    llc_threshold = { default = 12, help = "group 2: LLC references per 1000 cycles at or above this (threshold variant)" },
    bw_threshold = { default = 2, help = "group 1 where orb_full is unavailable: GB/s of memory bandwidth per core at or above this" },
    per_llc = { default = 2, help = "jobs sharing an LLC group in one step (integer >= 1)" },
  },

  init = function(params)
    if params.variant ~= "threshold" and params.variant ~= "relative" then
      error(("variant = '%s': expected threshold or relative"):format(tostring(params.variant)), 0)
    end
    impl.variant = params.variant
    for _, k in ipairs { "orb_threshold", "llc_threshold", "bw_threshold" } do
      local v = tonumber(params[k])
      if not finite(v) or v < 0 then
        error(("%s = '%s': expected a number >= 0"):format(k, tostring(params[k])), 0)
      end
      impl[k] = v
    end
    local p = tonumber(params.per_llc)
    if not p or p < 1 or p ~= math.floor(p) then
      error(("per_llc = '%s': expected an integer >= 1"):format(tostring(params.per_llc)), 0)
    end
    impl.per_llc = p
    impl.rates, impl.logged = {}, {}
  end,

  plan = function(snap)
    local live, list, counted_any = {}, {}, false
    for _, job in ipairs(snap.jobs) do
      live[job.id] = true
      local r = impl.rates[job.id]
      local last = job.last
      if last and last.counted then
        counted_any = true
        if not r or r.runs < job.quanta_run then
          local got = impl.rates_of(last.metrics, last,
            math.min(job.threads or math.huge, last.ncpus or math.huge))
          if got then
            got.runs = job.quanta_run
            impl.rates[job.id], r = got, got
          end
        end
      end
      list[#list + 1] = { id = job.id, class = job.class, orb = r and r.orb, bw = r and r.bw,
                          refs = r and r.refs }
    end
    for id in pairs(impl.rates) do
      if not live[id] then impl.rates[id] = nil end
    end
    if #snap.jobs > 0 and not counted_any and not impl.logged.hints then
      local anylast = false
      for _, job in ipairs(snap.jobs) do if job.last then anylast = true end end
      if anylast then
        impl.logged.hints = true
        cosched.log("info", "no counted steps (no counters?): groups from class hints (S -> 1, C -> 2, N/none -> 3)")
      end
    end
    if counted_any and not impl.logged.orb and next(impl.rates) == nil then
      impl.logged.orb = true
      cosched.log("warn", "counted steps lack llc_refs or cycles, or both orb_full and bw_llc/mem_bw: groups from class hints")
    end
    local grp, metric = impl.group_jobs(list, impl.variant, impl.orb_threshold, impl.llc_threshold,
      impl.bw_threshold)
    if metric == "bw" and not impl.logged.bw then
      impl.logged.bw = true
      cosched.log("info", "no orb_full in the counted steps (this CPU's profile has none): group 1 by memory "
        .. "bandwidth per core (mem_bw when the job owned its socket, else bw_llc), paper 004 Sec. 5.4.1")
    end
    impl.last_groups, impl.last_metric = grp, metric
    if #snap.jobs == 0 then return { { jobs = {} } } end
    local steps = impl.build(snap, rotation.order(snap), grp, impl.per_llc)
    impl.last_steps = steps
    return steps
  end,
}
