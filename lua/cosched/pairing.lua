--[==[
cosched.pairing - pairing and placing jobs for the contention-aware policies
of paper 001 (Haritatos et al., "Contention-aware scheduling policies for
fairness and throughput"): lbb, llcmrb, flbb, fllcmrb, lca, fop, flca.

    local pairing = require "cosched.pairing"
    local units = pairing.lca { {id = 1, class = "N"}, {id = 2, class = "S"} }
    -- units = { { a, b }, { c }, ... }: the entries given, in pairs (or alone)

PURE PAIRING FUNCTIONS (no snapshot, no state)

lca(list) -> units
    Algorithm 1 of paper 001 (Sec. 4.2), O(n).  list: entries { id =,
    class = } in the order of preference (the lists S, C and N keep it).
    A class other than S, C or N (nil, "unknown") counts as N.
        foreach x in N: y <- popFromFirstNonEmpty(S, C, N); co-schedule(x, y)
        foreach x in C: y <- popFromFirstNonEmpty(C);       co-schedule(x, y)
        foreach x in S: y <- popFrom(S);                    co-schedule(x, y)
    "foreach x in L" takes x from the front of L (so an x is never paired
    with itself, and a y popped from the list being walked is not visited
    again); every pop is from the front.  When the lists are empty, x runs
    alone: the unit { x }.  Every entry appears in exactly one unit.  Each
    entry is touched a constant number of times: O(n).

match(list, score) -> units
    A maximum-weight matching of the entries under score(a, b) (symmetric;
    ties: the first found, in list order): every matching is tried up to 10
    entries (945 for 10), a greedy one above (pairs by score, descending);
    with an odd count one entry is left alone.  F-LCA's pairing = measured.

weighted(list, npairs, score, ok) -> units
    At most npairs disjoint pairs of the entries of list (in the order of
    preference: the oldest first) with the largest sum of score(a, b): as
    many pairs as the list allows first, then as few pairs that are not
    ok(a, b) as possible, then the largest sum (ties: the first found, in
    list order).  Every choice is tried up to 10 entries (9,496 for 10), a
    greedy one above (pairs ok first, then by score, descending).  Entries
    not chosen are not in units.  F-LCA's select = weighted.

compatible(a, b) -> bool
    LCA's rule for two classes: N with anything, S with S, C with C (never
    S with C); unknown counts as N.

complete(units, order, taken [, allow]) -> units
    Pair completion (F-LCA, issue #24): each unit of one entry x (LCA's
    leftover) takes the first entry y of order (candidates in the policy's
    order of preference: the oldest first) that is not taken (taken[id]),
    not gang-only (y.gang) and compatible with x; y is then taken.  A
    leftover with no such candidate stays alone (allow(x, y), when given,
    replaces LCA's rule: whether x and y may pair, for measured pairing).  The leftovers choose in
    order's order (the oldest first).  In place; O(units + order x leftovers).

pair_lone(units, order, taken) -> units
    After complete: each unit of one class S entry (S does not scale: alone
    it leaves its group's cores next to useless) takes the first entry of
    order that is alone in units or not taken, of any class and not
    gang-only; a single it takes is emptied (units with no entry are to be
    skipped).  In place.

topbottom(list, key) -> units
    LBB / LLC-MRB (Sec. 2): "sorts applications by [key] and forms execution
    groups by selecting the first from the top and bottom of the list, then
    the second from the top and bottom and so on".  key(entry) -> number;
    sorted descending, ties by ascending id.  With an odd count the middle
    entry is a unit alone.  O(n log n) (the sort).

PLACEMENT

domains(snap, budget) -> D
    Number of cache/memory islands that have CPUs in budget: distinct (LLC
    domain, NUMA node) pairs, i.e. LLC domains, each cut further where it
    spans several NUMA nodes (an LLC shared by two sub-NUMA clusters: two
    memory links).  >= 1 when budget is not empty.  Paper 001 Sec. 6: "F-LCA
    needs to operate in an hierarchical mode, with separate F-LCA modules
    closely collaborating ... both space and time sharing NUMA/cache
    islands": one unit per island per step.

groups(snap, g, budget) -> list of g CPU lists
    g = 1: the budget itself; g >= 2: cosched.cpus.hsplit(snap, g, budget):
    the NUMA nodes in NUMA order, each cut into its share of the g groups at
    LLC boundaries (else between cores), so that no group spans two NUMA
    nodes when g >= nodes; g < nodes: whole nodes per group.  Cached per
    (budget, g).

rounds(units, D, gang) -> { { units = {...}, gang = bool }, ... }
    Cuts an ordered list of units into steps: a unit whose first job is in
    the set gang (gang_only jobs, paper 001 Sec. 6) is a round of its own;
    the others go D per round, in order (one per LLC group).

place(snap, units, budget, fold, split [, fill]) -> jobs, shared
    One step's job entries for units of job ids (each { id } or { id, id }):
    unit i gets group i of groups(snap, #units, budget); a single job gets its
    whole group; a pair, folded (fold = true), gets the two halves of the
    group (cpus.split(snap, 2, split, group): LLC boundaries when the group
    spans several LLCs, else between cores); unfolded, both jobs get the
    whole group and shared = true (the kernel time-shares them: "all threads
    of an application are executed within the same time quantum", Sec. 2).
    A group of one CPU cannot be folded: that pair shares it (shared = true).
    Units beyond the number of groups the budget allows are not placed
    (returned as the third value, a count of placed units).
    fill = { ctx = src:begin's ctx, order = function -> ready jobs in the
    policy's order of preference, threads = optional function(job) -> the
    threads the job keeps busy (default job.threads), any = optional true:
    fill_holes' last pass } (nil: the old behaviour, nothing trimmed):
    arbitrary thread counts (Sec. 6).  A job with fewer threads
    than the cores of its part gets that many whole cores (the first ones
    in topology order); an unfolded pair gets the larger of the two counts,
    both on the same cores.  The cores left in a group are its hole, filled
    by fill_holes.
fill_holes(snap, jobs, holes, fill)
    Sec. 6: "reuse N applications to fill empty cores" and "building groups
    of residual threads with non-conflicting behaviors".  Each hole, in
    group order, takes from fill.order() first the class N jobs not in the
    step, then jobs of a class that does not conflict with the group's jobs
    under LCA's rule (never S beside C in one LLC group); never gang-only
    jobs (they run alone); each filler gets min(threads, cores left) whole
    cores of the hole, which no other job of the step has.  With fill.any,
    cores still left then go to the first waiting jobs of any class
    (work-conserving: a core to nobody while a job waits frozen is worse
    than S beside C).  fill.order() is
    called only when a hole exists: full-width jobs cost nothing.

CHARACTERIZATION GLUE

source(params) -> src
    params.characterize: "yes" (cosched.characterize decides the class, IPCs,
    FP and gang_only) or "no" (class hints only).  src:init(chparams).
src:begin(snap) -> ctx
    Calls c:update(snap) and c:plan_step(snap); ctx.part is the
    characterization part (nil when characterize = no or nothing is
    pending), ctx.budget the CPUs free for the policy's own jobs (part.left,
    or every managed CPU), ctx.ready the snapshot jobs ready to schedule
    (in snapshot order), ctx.info[id] = { class (S, C or N: the measured
    class, else the hint, else N), bw_llc, mem_bw, mpki, ipc_standalone,
    ipc_folded, fp, cores_standalone, cores_folded, gang_only } for them,
    ctx.pending whether a characterization needs the plan to be one step.
src:finish(ctx, snap, steps) -> steps, results
    Puts the characterization placements in the last step (the only one
    when ctx.pending), lends part.shared to one ready class N job that the
    step does not run (Sec. 3.1: "empty cores ... could be employed by N
    class applications"), fills an empty step with every live job on every
    CPU (shared; cannot happen with a live job, kept as a safety net) and
    returns c:results() for the profile store.
]==]

local cpus = require "cosched.cpus"
local ch = require "cosched.characterize"

local M = {}

local CLASSES = { S = true, C = true, N = true }

function M.norm_class(c)
  return CLASSES[c] and c or "N"
end

-- ------------------------------------------------------------------ pairing

function M.lca(list)
  local L = { S = {}, C = {}, N = {} }
  for _, e in ipairs(list) do
    local l = L[M.norm_class(e.class)]
    l[#l + 1] = e
  end
  local head = { S = 1, C = 1, N = 1 }
  local function pop(name)
    local l, h = L[name], head[name]
    if h <= #l then
      head[name] = h + 1
      return l[h]
    end
    return nil
  end
  local function pop_first(...)
    for i = 1, select("#", ...) do
      local y = pop((select(i, ...)))
      if y then return y end
    end
    return nil
  end
  local units = {}
  local function cosched_(x, y)
    units[#units + 1] = y and { x, y } or { x }
  end
  while true do                         -- foreach x in N
    local x = pop("N")
    if not x then break end
    cosched_(x, pop_first("S", "C", "N"))
  end
  while true do                         -- foreach x in C
    local x = pop("C")
    if not x then break end
    cosched_(x, pop("C"))
  end
  while true do                         -- foreach x in S
    local x = pop("S")
    if not x then break end
    cosched_(x, pop("S"))
  end
  return units
end

-- the units of a maximum-weight matching of list (entries) under
-- score(a, b) (symmetric): exhaustive up to 10 entries, greedy above; with
-- an odd count one entry is left alone (the one whose absence scores best)
function M.match(list, score)
  local n = #list
  if n <= 1 then return n == 1 and { { list[1] } } or {} end
  if n > 10 then
    -- greedy: weighted's, every pair allowed, then the one left alone
    local units, used = M.weighted(list, n // 2, score, function() return true end), {}
    for _, u in ipairs(units) do used[u[1]], used[u[2]] = true, true end
    for _, e in ipairs(list) do if not used[e] then units[#units + 1] = { e } end end
    return units
  end
  local best, bestv, cur, used = nil, -math.huge, {}, {}
  local alone_ok = n % 2 == 1
  local function rec(v, lone)
    local i = 1
    while i <= n and used[i] do i = i + 1 end
    if i > n then
      if v > bestv + 1e-12 then
        bestv = v
        best = {}
        for k, u in ipairs(cur) do best[k] = u end
      end
      return
    end
    used[i] = true
    if alone_ok and not lone then
      cur[#cur + 1] = { list[i] }
      rec(v, true)
      cur[#cur] = nil
    end
    for j = i + 1, n do
      if not used[j] then
        used[j] = true
        cur[#cur + 1] = { list[i], list[j] }
        rec(v + score(list[i], list[j]), lone)
        cur[#cur] = nil
        used[j] = false
      end
    end
    used[i] = false
  end
  rec(0, false)
  return best
end

function M.weighted(list, npairs, score, ok)
  local n = #list
  npairs = math.min(npairs, n // 2)
  if npairs <= 0 then return {} end
  if n > 10 then
    -- greedy: every pair i < j numbered m in (i, j) order, the numbers
    -- sorted by (ok, score) descending, then m (i, then j) ascending, each
    -- pair taken when both members are still free; flat arrays, no table
    -- per pair (64 candidates: 2,016 pairs every plan).  Keeping each job's
    -- best free partner instead of sorting was slower: with scores that tie
    -- (untried pairs) most jobs look again after every pick
    local oks, scs, is, js, idx, m = {}, {}, {}, {}, {}, 0
    for i = 1, n do
      for j = i + 1, n do
        m = m + 1
        oks[m], scs[m], is[m], js[m], idx[m] = ok(list[i], list[j]) and 1 or 0, score(list[i], list[j]), i, j, m
      end
    end
    table.sort(idx, function(a, b)
      if oks[a] ~= oks[b] then return oks[a] > oks[b] end
      if scs[a] ~= scs[b] then return scs[a] > scs[b] end
      return a < b
    end)
    local used, units = {}, {}
    for _, c in ipairs(idx) do
      if #units >= npairs then break end
      local i, j = is[c], js[c]
      if not used[i] and not used[j] then
        used[i], used[j] = true, true
        units[#units + 1] = { list[i], list[j] }
      end
    end
    return units
  end
  local key = {}                         -- key[i][j] = { ok, score } for i < j
  for i = 1, n do
    key[i] = {}
    for j = i + 1, n do key[i][j] = { ok(list[i], list[j]) and 1 or 0, score(list[i], list[j]) } end
  end
  -- exhaustive: (pairs, ok pairs, score), compared in that order
  local best, bp, bo, bs = {}, -1, -1, -math.huge
  local cur, used = {}, {}
  local function rec(i, p, o, v)
    while i <= n and used[i] do i = i + 1 end
    if p == npairs or i > n then
      if p > bp or (p == bp and (o > bo or (o == bo and v > bs + 1e-12))) then
        bp, bo, bs = p, o, v
        best = {}
        for k, u in ipairs(cur) do best[k] = u end
      end
      return
    end
    used[i] = true
    for j = i + 1, n do
      if not used[j] then
        used[j] = true
        cur[#cur + 1] = { list[i], list[j] }
        rec(i + 1, p + 1, o + key[i][j][1], v + key[i][j][2])
        cur[#cur] = nil
        used[j] = false
      end
    end
    used[i] = false
    rec(i + 1, p, o, v)                   -- i not chosen
  end
  rec(1, 0, 0, 0)
  return best
end

-- LCA's rule for a pair: N goes with anything, S with S, C with C
function M.compatible(a, b)
  a, b = M.norm_class(a), M.norm_class(b)
  return a == "N" or b == "N" or a == b
end

function M.complete(units, order, taken, allow)
  local singles = {}
  for _, u in ipairs(units) do
    if #u == 1 then singles[#singles + 1] = u end
  end
  if #singles == 0 then return units end
  local pos = {}
  for i, e in ipairs(order) do pos[e.id] = i end
  -- the oldest leftover chooses first
  table.sort(singles, function(a, b) return (pos[a[1].id] or math.huge) < (pos[b[1].id] or math.huge) end)
  local from = 1
  for _, u in ipairs(singles) do
    local x = u[1]
    while order[from] and taken[order[from].id] do from = from + 1 end
    for i = from, #order do
      local y = order[i]
      if not taken[y.id] and not y.gang and (allow and allow(x, y) or not allow and M.compatible(x.class, y.class)) then
        u[2] = y
        taken[y.id] = true
        break
      end
    end
  end
  return units
end

function M.pair_lone(units, order, taken)
  local pos, single = {}, {}
  for i, e in ipairs(order) do pos[e.id] = i end
  local singles = {}
  for _, u in ipairs(units) do
    if #u == 1 then singles[#singles + 1] = u; single[u[1].id] = u end
  end
  if #singles == 0 then return units end
  table.sort(singles, function(a, b) return (pos[a[1].id] or math.huge) < (pos[b[1].id] or math.huge) end)
  for _, u in ipairs(singles) do
    local x = u[1]
    if x and not u[2] and M.norm_class(x.class) == "S" then
      for _, y in ipairs(order) do
        local su = single[y.id]
        if y.id ~= x.id and not y.gang and ((su and su[1] == y and not su[2]) or not taken[y.id]) then
          u[2] = y
          taken[y.id] = true
          if su then su[1] = nil; single[y.id] = nil end
          single[x.id] = nil
          break
        end
      end
    end
  end
  return units
end

function M.topbottom(list, key)
  local l, k = {}, {}
  for i, e in ipairs(list) do
    l[i] = e
    k[e] = key(e)
  end
  table.sort(l, function(a, b)
    if k[a] ~= k[b] then return k[a] > k[b] end
    return a.id < b.id
  end)
  local units, i, j = {}, 1, #l
  while i < j do
    units[#units + 1] = { l[i], l[j] }
    i, j = i + 1, j - 1
  end
  if i == j then units[#units + 1] = { l[i] } end
  return units
end

-- ------------------------------------------------------------------ placement

local cache = {}      -- "g|budget" -> groups;  "d|budget" -> D;  "h|split|group" -> halves
local ncache = 0

-- the cache holds results for one topology: a new one (another node, a test's
-- fake snapshot) empties it; the topology is read once per snapshot
local last_snap, topo_key = nil, nil
local function topology_key(snap)
  if snap ~= last_snap then
    local parts = {}
    for i, core in ipairs(snap.topology.cores) do
      parts[i] = table.concat(core.pus, ".") .. ":" .. tostring(core.llc) .. ":" .. tostring(core.numa)
    end
    local key = table.concat(parts, ",")
    if key ~= topo_key then cache, ncache = {}, 0 end
    last_snap, topo_key = snap, key
  end
end

local function cached(snap, key, fn)
  topology_key(snap)
  local v = cache[key]
  if v == nil then
    if ncache > 4096 then cache, ncache = {}, 0 end
    v = fn()
    cache[key] = v
    ncache = ncache + 1
  end
  return v
end

function M.domains(snap, budget)
  local key = "d|" .. table.concat(budget, ",")
  return cached(snap, key, function()
    local set, seen, n = cpus.set(budget), {}, 0
    for _, core in ipairs(snap.topology.cores) do
      for _, pu in ipairs(core.pus) do
        if set[pu] then
          local l = (core.llc or 0) .. "/" .. (core.numa or 0)
          if not seen[l] then
            seen[l] = true
            n = n + 1
          end
          break
        end
      end
    end
    if n == 0 and #budget > 0 then n = 1 end
    return n
  end)
end

function M.groups(snap, g, budget)
  local key = "g|" .. g .. "|" .. table.concat(budget, ",")
  return cached(snap, key, function()
    if g <= 1 then return { cpus.copy(budget) } end
    return (cpus.hsplit(snap, g, budget))
  end)
end

-- The cores of a cpu list in topology order, each the list of its PUs in
-- the list: { {pu, ...}, ... }.  Cached per list (identity, then content).
local function cores_of(snap, list)
  local key = "c|" .. table.concat(list, ",")
  return cached(snap, key, function()
    local set, out = cpus.set(list), {}
    for _, core in ipairs(snap.topology.cores) do
      local mine
      for _, pu in ipairs(core.pus) do
        if set[pu] then
          mine = mine or {}
          mine[#mine + 1] = pu
          set[pu] = nil
        end
      end
      if mine then out[#out + 1] = mine end
    end
    for _, pu in ipairs(list) do            -- PUs of no listed core: one each
      if set[pu] then out[#out + 1] = { pu } end
    end
    return out
  end)
end
M.cores_of = cores_of

-- flatten cores[from..to] into a sorted cpu list
local function flat(cores, from, to)
  local out = {}
  for i = from, to do
    for _, pu in ipairs(cores[i]) do out[#out + 1] = pu end
  end
  table.sort(out)
  return out
end

-- LCA's rule for filling residual cores: never S beside C in one LLC group
local CONFLICT = { S = "C", C = "S" }

local function halves(snap, group, split)
  local key = "h|" .. split .. "|" .. table.concat(group, ",")
  return cached(snap, key, function()
    return (cpus.split(snap, 2, split, group))
  end)
end

function M.rounds(units, D, gang)
  local out, cur = {}, nil
  for _, u in ipairs(units) do
    if gang and gang[u[1]] then
      out[#out + 1] = { units = { u }, gang = true }
      cur = nil                           -- keep the order: later units go after it
    else
      if not cur or #cur.units >= D then
        cur = { units = {}, gang = false }
        out[#out + 1] = cur
      end
      cur.units[#cur.units + 1] = u
    end
  end
  return out
end

function M.place(snap, units, budget, fold, split, fill)
  local jobs, shared = {}, false
  if #units == 0 or #budget == 0 then return jobs, false, 0 end
  local groups = M.groups(snap, math.min(#units, #budget), budget)
  local placed = 0
  local byid = fill and fill.ctx.byid
  local holes                                 -- group index -> { cores, from, classes }
  -- a job on cpu list c: trimmed to its thread count in whole cores when it
  -- has fewer threads than c has cores; the cores left are the group's hole
  local function put(id, c, gi, same_as)
    local job = byid and byid[id]
    local t = job and (fill.threads and fill.threads(job) or job.threads)
    if not t or t >= #c then
      jobs[#jobs + 1] = { id = id, cpus = c }
      return
    end
    local cores = cores_of(snap, c)
    if t >= #cores then
      jobs[#jobs + 1] = { id = id, cpus = c }
      return
    end
    holes = holes or {}
    local h = holes[gi]
    if not h then
      h = { cores = {}, classes = {}, members = units[gi] }
      holes[gi] = h
    end
    jobs[#jobs + 1] = { id = id, cpus = same_as or flat(cores, 1, t) }
    if not same_as then
      for i = t + 1, #cores do h.cores[#h.cores + 1] = cores[i] end
    end
    return jobs[#jobs].cpus
  end
  for i, u in ipairs(units) do
    local g = groups[i]
    if not g then break end
    placed = i
    if #u == 1 then
      put(u[1], g, i)
    else
      local h = fold and #g >= 2 and halves(snap, g, split or "auto") or nil
      if h and #h == 2 then
        put(u[1], h[1], i)
        put(u[2], h[2], i)
      else
        -- unfolded: both on the same cpus (the kernel time-shares them);
        -- trimmed to the larger thread count, one hole for the pair
        local function th(id)
          local job = byid and byid[id]
          return job and (fill.threads and fill.threads(job) or job.threads) or math.huge
        end
        local ta, tb = th(u[1]), th(u[2])
        local first, second = u[1], u[2]
        if tb > ta then first, second = u[2], u[1] end
        local c = put(first, g, i)
        jobs[#jobs + 1] = { id = second, cpus = c or g }
        shared = true
      end
    end
  end
  if holes and fill then M.fill_holes(snap, jobs, holes, fill) end
  return jobs, shared, placed
end

--[[ Residual cores (paper 001 Sec. 6, "Arbitrary number of threads per
application": "reuse N applications to fill empty cores", "building groups of
residual threads with non-conflicting behaviors").  holes[gi] = the cores of
LLC group gi that its jobs' threads leave empty.  Candidates: fill.order()
-> ready snapshot jobs in the policy's order of preference (called only
when there is a hole); jobs already in the step and gang-only jobs are
skipped.  Each hole takes first class N candidates, then candidates whose
class does not conflict with the group's (LCA's rule: never S beside C);
each filler gets min(threads, cores left) whole cores from the front of the
hole.  Fillers never share a core with anyone. ]]
function M.fill_holes(snap, jobs, holes, fill)
  local ctx = fill.ctx
  local busy = {}
  for _, e in ipairs(jobs) do busy[e.id] = true end
  -- the candidates by class, each queue in the policy's order (ranks);
  -- built once per plan (fill.queues), the jobs of this step skipped
  local order = fill.order()
  local q = fill.queues
  if not q then
    q = { N = {}, S = {}, C = {} }
    for rank, job in ipairs(order) do
      local inf = ctx.info[job.id]
      if inf and not inf.gang_only then
        local l = q[inf.class] or q.N
        l[#l + 1] = rank
      end
    end
    fill.queues = q
  end
  local head = { N = 1, S = 1, C = 1 }
  local function skip(cls)
    local l, h = q[cls], head[cls]
    while l[h] and busy[order[l[h]].id] do h = h + 1 end
    head[cls] = h
    return l[h]
  end
  local gis = {}
  for gi in pairs(holes) do gis[#gis + 1] = gi end
  table.sort(gis)
  for _, gi in ipairs(gis) do
    local h = holes[gi]
    local cores, pos = h.cores, 1
    for _, id in ipairs(h.members) do
      local inf = ctx.info[id]
      if inf then h.classes[inf.class] = true end
    end
    local function take(cls)
      local job = order[q[cls][head[cls]]]
      head[cls] = head[cls] + 1
      busy[job.id] = true
      local left = #cores - pos + 1
      local t = math.max(1, math.min((fill.threads and fill.threads(job)) or job.threads or left, left))
      jobs[#jobs + 1] = { id = job.id, cpus = flat(cores, pos, pos + t - 1) }
      pos = pos + t
      h.classes[cls] = true
    end
    -- pass 1: class N ("reuse N applications to fill empty cores")
    while pos <= #cores and skip("N") do take("N") end
    -- pass 2: S or C, whichever comes first in the order and does not
    -- conflict with the group (never S beside C)
    while pos <= #cores do
      local rs = not h.classes.C and skip("S") or nil
      local rc = not h.classes.S and skip("C") or nil
      if rs and (not rc or rs < rc) then take("S")
      elseif rc then take("C")
      else break end
    end
    -- pass 3 (fill.any): a core left to nobody while a job waits frozen is
    -- worse than S beside C: the first candidates of either class
    while fill.any and pos <= #cores do
      local rs, rc = skip("S"), skip("C")
      if rs and (not rc or rs < rc) then take("S")
      elseif rc then take("C")
      else break end
    end
    h.left = #cores - pos + 1             -- cores nobody took
  end
end

-- ------------------------------------------------------------------ characterization glue

local INF = math.huge
local function finite(x)
  return type(x) == "number" and x == x and x > -INF and x < INF and x or nil
end

local Src = {}
Src.__index = Src

function M.source(params)
  local mode = params and params.characterize or "yes"
  if mode ~= "yes" and mode ~= "no" then
    error(("characterize = '%s': expected yes or no"):format(tostring(mode)), 0)
  end
  return setmetatable({ mode = mode }, Src)
end

--- source(), then init(), from a policy's parameters (characterize,
--- standalone_quanta, folded_quanta) and cosched.characterize's folded_phase
--- (nil: its default): the source of lca, flca, fop and the balance policies.
function M.source_of(params, folded_phase)
  local src = M.source { characterize = params.characterize }
  src:init { standalone_quanta = params.standalone_quanta, folded_quanta = params.folded_quanta,
             folded_phase = folded_phase }
  return src
end

function Src:init(chparams)
  if self.mode == "yes" then self.c = ch.new(chparams or {}) end
end

function Src:begin(snap)
  local ctx = { budget = snap.cpus, ready = {}, info = {}, byid = {}, pending = false }
  local c = self.c
  if c then
    c:update(snap)
    local part = c:plan_step(snap)
    ctx.part = part
    ctx.pending = #part.jobs > 0 or #part.waiting > 0
    if #part.jobs > 0 then ctx.budget = part.left end
  end
  -- c:info_raw() is the record itself (read-only here): no copies per job.
  -- The info tables are kept per job and refilled in place every epoch (a
  -- fresh table per job and epoch was most of this function's garbage);
  -- they are valid until the next begin().
  local ready, info, byid, nready = ctx.ready, ctx.info, ctx.byid, 0
  local norm = M.norm_class
  local keep = self.info_keep
  if not keep or self.info_n > 2 * #snap.jobs + 64 then
    keep, self.info_n = {}, 0
    self.info_keep = keep
  end
  for _, job in ipairs(snap.jobs) do
    local id = job.id
    local r = c and c:info_raw(id)
    if not c or (r and not r.characterizing) then
      local last = job.last
      local m = last and last.counted and last.metrics or nil
      local e = keep[id]
      if not e then
        e = {}
        keep[id] = e
        self.info_n = self.info_n + 1
      end
      if r then
        local bw = r.bw
        e.class, e.bw_llc, e.mpki = norm(r.class or r.hint or "unknown"), finite(bw and bw.llc), finite(r.mpki)
        e.ipc_standalone, e.ipc_folded, e.fp = finite(r.ipc_s), finite(r.ipc_f), finite(r.fp)
        e.cores_standalone, e.cores_folded, e.gang_only = r.k_s, r.k_f, r.gang_only and true or false
      else
        e.class, e.bw_llc, e.mpki = norm(job.class), nil, nil
        e.ipc_standalone, e.ipc_folded, e.fp = nil, nil, nil
        e.cores_standalone, e.cores_folded, e.gang_only = nil, nil, false
      end
      if m then
        e.last_bw_llc, e.last_mem_bw, e.last_mpki = finite(m.bw_llc), finite(m.mem_bw), finite(m.mpki)
      else
        e.last_bw_llc, e.last_mem_bw, e.last_mpki = nil, nil, nil
      end
      nready = nready + 1
      ready[nready] = job
      info[id] = e
      byid[id] = job
    end
  end
  return ctx
end

function Src:finish(ctx, snap, steps)
  if #steps == 0 then steps[1] = { jobs = {} } end
  local part = ctx.part
  if part and #part.jobs > 0 then
    local last = steps[#steps]
    for _, e in ipairs(part.jobs) do last.jobs[#last.jobs + 1] = e end
    if #part.shared > 0 then
      local running, may = {}, {}
      for _, s in ipairs(steps) do
        for _, e in ipairs(s.jobs) do running[e.id] = true end
      end
      for _, id in ipairs(part.may_share) do may[id] = true end
      -- the ready N job that waited longest, not running in this plan
      local best
      for _, job in ipairs(ctx.ready) do
        if may[job.id] and not running[job.id]
            and (not best or job.waited > best.waited) then
          best = job
        end
      end
      if best then last.jobs[#last.jobs + 1] = { id = best.id, cpus = part.shared } end
    end
  end
  for _, s in ipairs(steps) do
    if #s.jobs == 0 and #snap.jobs > 0 then       -- safety net: never an invalid plan
      for _, job in ipairs(snap.jobs) do s.jobs[#s.jobs + 1] = { id = job.id, cpus = snap.cpus } end
      s.shared = true
    end
  end
  return steps, self.c and self.c:results() or nil
end

-- ------------------------------------------------------------------ static pairs, rotated (lbb, llcmrb, flbb, fllcmrb, lca)

--[[ M.static(opts) -> plan function state for the policies whose pairs are
formed once per set of ready jobs (paper 001 Sec. 5: "pairs are statically
determined at the start of the scheduling") and served round robin, one
step of one quantum per epoch:
  opts.pair(entries, ctx) -> units of entries { id =, class = }
  opts.fold  bool; opts.split  level for the halves
The pairs are recomputed when the ready jobs or their gang_only flags change
(a job arrives, ends, or finishes its characterization).  Each epoch the
units are ordered as cosched.rotation orders jobs (a unit never run first,
then the longest waited in whole quanta, then fewer quanta run, then lowest
id; a unit's figures are those of its members, which run together); the
first unit is taken, and if it is not gang_only, up to D - 1 more non-gang
units (D = LLC domains of the budget), one per LLC group. ]]
local rotation = require "cosched.rotation"

local floor, HUGE = math.floor, math.huge

-- a (unit index) comes before b in cosched.rotation's order of the units'
-- figures (never run first, longer wait in whole quanta, fewer quanta, id)
local function before(a, b, uq, uk, uid)
  local na, nb = uq[a] == 0, uq[b] == 0
  if na ~= nb then return na end
  if uk[a] ~= uk[b] then return uk[a] > uk[b] end
  if uq[a] ~= uq[b] then return uq[a] < uq[b] end
  return uid[a] < uid[b]
end

function M.static(opts)
  -- the units are cached with the ready ids and gang_only flags they were
  -- formed from (compared in place each epoch, no signature string), the
  -- position in the ready list -> unit index, and each unit's lowest id
  local st = { ids = {}, gang = {}, n = -1, units = nil, uof = nil, uid = nil }
  return function(src, snap)
    local ctx = src:begin(snap)
    local ready, info = ctx.ready, ctx.info
    local nready = #ready
    local same = nready == st.n
    local sids, sgang = st.ids, st.gang
    if same then
      for i = 1, nready do
        local id = ready[i].id
        if sids[i] ~= id or sgang[i] ~= info[id].gang_only then same = false break end
      end
    end
    if not same then
      local entries, units = {}, {}
      sids, sgang = {}, {}
      for i, job in ipairs(ready) do
        local id = job.id
        local e = info[id]
        sids[i], sgang[i] = id, e.gang_only
        if e.gang_only then
          units[#units + 1] = { id }
        else
          entries[#entries + 1] = { id = id, class = e.class, info = e }
        end
      end
      for _, u in ipairs(opts.pair(entries, ctx)) do
        units[#units + 1] = #u == 2 and { u[1].id, u[2].id } or { u[1].id }
      end
      local pos, uof, uid = {}, {}, {}
      for i, id in ipairs(sids) do pos[id] = i end
      for k, u in ipairs(units) do
        local lo = HUGE
        for _, id in ipairs(u) do
          uof[pos[id]] = k
          if id < lo then lo = id end
        end
        uid[k] = lo
      end
      st.ids, st.gang, st.n, st.units, st.uof, st.uid = sids, sgang, nready, units, uof, uid
    end
    local units, uof, uid = st.units, st.uof, st.uid
    local nu = #units
    -- each unit's figures: the longest wait and the fewest quanta of its
    -- members (they run together, except when one also fills residual
    -- cores elsewhere: the unit is then owed what its least served member
    -- is owed, so that filling never starves a partner)
    local uw, uq = {}, {}
    for k = 1, nu do uw[k], uq[k] = -HUGE, HUGE end
    for i = 1, nready do
      local job, k = ready[i], uof[i]
      local w, q = job.waited, job.quanta_run
      if w > uw[k] then uw[k] = w end
      if q < uq[k] then uq[k] = q end
    end
    local steps = {}
    if nu > 0 and #ctx.budget > 0 then
      local unit = (snap.quantum and snap.quantum > 0) and snap.quantum or 1
      local uk = uw
      for k = 1, nu do uk[k] = floor(uw[k] / unit + 0.5) end
      -- the first unit in rotation order, then (unless it is gang_only) the
      -- next D - 1 units in that order that are not gang_only: a selection,
      -- the same as sorting them all (the order is total: ids are unique)
      local first = 1
      for k = 2, nu do
        if before(k, first, uq, uk, uid) then first = k end
      end
      local pick = { units[first] }
      if not info[units[first][1]].gang_only then
        local D = M.domains(snap, ctx.budget)
        local want = D - 1
        if want > 0 then
          local best = rotation.first(nu, want,      -- sorted, at most want unit indices
            function(a, b) return before(a, b, uq, uk, uid) end,
            function(k) return k == first or info[units[k][1]].gang_only end)
          for j = 1, #best do pick[#pick + 1] = units[best[j]] end
        end
      end
      local memo
      local fill = not info[pick[1][1]].gang_only and {
        ctx = ctx, order = function() memo = memo or rotation.order(snap, ready); return memo end } or nil
      local jobs, shared = M.place(snap, pick, ctx.budget, opts.fold, opts.split, fill)
      steps[1] = { duration = snap.quantum, jobs = jobs, shared = shared or nil }
    end
    return src:finish(ctx, snap, steps)
  end
end

-- the measured sort key of an entry, else nil
function M.key_of(e, which)
  if which == "bw" then
    return e.bw_llc or e.last_mem_bw or e.last_bw_llc
  end
  return e.mpki or e.last_mpki
end

-- class rank used when some ready job has no measured key: S > C > N
M.class_rank = { S = 3, C = 2, N = 1 }

-- key function for topbottom over entries: measured keys when every entry has
-- one, else the class rank for all (mixing the two would compare apples and
-- pears)
function M.sort_key(entries, which)
  local all = true
  for _, e in ipairs(entries) do
    if M.key_of(e.info, which) == nil then all = false break end
  end
  if all then
    return function(e) return M.key_of(e.info, which) end, "measured"
  end
  return function(e) return M.class_rank[e.class] end, "class"
end

M.split_levels = { auto = true, llc = true, numa = true, core = true, pu = true }

--- The split parameter of a folding policy, checked: split, or an error.
function M.check_split(split)
  if not M.split_levels[split] then
    error(("split = '%s': expected auto, llc, numa, core or pu"):format(split), 0)
  end
  return split
end

--[==[ M.balance_policy(spec) -> the whole policy table of a statically paired,
sort-balanced policy: lbb, llcmrb and their folded variants flbb, fllcmrb
(paper 001, Sec. 2 and 5), which differ only in name, sort key and fold.
spec = { name =, description =, key = "bw" | "mpki", fold = bool, shares_cpus = bool }.
Their files point here for what they share:

Plan: every epoch, one step of one quantum.
  - Jobs: cosched.characterize characterizes every job when it arrives (and on
    a phase change); until it is ready a job runs only in its characterization
    placement (an LLC domain of its own), the policy's own jobs use part.left
    and one ready class N job may use part.shared.  Without counters (or with
    --policy-opt characterize=no) nothing is measured: the class is the job's
    hint (job.class), unknown counts as N, and the key is the class rank.
  - Key (spec.key, key_of above): "bw", the job's memory bandwidth: bw_llc of
    its characterization (the bandwidth into the LLC, i.e. from memory,
    measured standalone), else mem_bw, else bw_llc of its last counted step;
    "mpki", its LLC miss rate as MPKI (misses per thousand instructions): mpki
    of its characterization, else mpki of its last counted step.  The paper's
    Table 2 gives misses per second; per instruction is what cosched counts
    and does not grow with the cores a job is given.
    When some ready job has no measured key, every job is sorted by its class
    rank instead, S > C > N (S streams from memory and misses the LLC, C reuses
    the LLC, N neither), ties by id: mixing measured and ranked keys would
    compare unlike things (sort_key above).
  - Pairs (topbottom): sorted by key, descending; the first with the last, the
    second with the second last, ...; with an odd count the middle job runs
    alone.  Gang-only jobs (characterization found FP "significantly higher
    than 2", Sec. 6: lock contention) are not paired: each is a unit of its
    own that runs alone on all the CPUs.  The pairs are formed once per set of
    ready jobs and kept (Sec. 5: "pairs are statically determined at the start
    of the scheduling"); a job arriving, ending or becoming ready forms them
    again (static above).
  - Rotation: the units (pairs, singles) take turns round robin: each epoch
    the unit owed most runs (cosched.rotation's order over units: never ran,
    then waited longest in whole quanta, then fewer quanta, then lowest id).
    With U units on a one-LLC node every unit runs once in any U consecutive
    quanta (no starvation).  A unit's figures are its most owed member's
    (longest wait, fewest quanta): a member that also ran as a filler of
    residual cores never makes its partner wait longer.
  - Multi-LLC and NUMA nodes (Sec. 6, "richer memory hierarchies"): with D
    islands (LLC domains, split by NUMA node), up to D non-gang units run in
    the same step, unit i on group i of groups (G = units run, at most D; see
    "Hierarchy and thread counts" in cosched-policy(7), SHIPPED POLICIES):
    pairs are placed per island, so co-runners share a cache and a memory link
    only within a pair.  Round robin then serves D units per quantum.
  - fold = false (lbb, llcmrb): each pair runs unfolded, as the paper runs it:
    both jobs on ALL the CPUs of their group with shared = true, so that all
    threads of both applications run in the quantum and the kernel time-shares
    them (2p threads on p cores in the paper's setting);
    fold = true (flbb, fllcmrb): each pair is folded (TFT, Sec. 4.1): its
    group of CPUs is cut in two halves with cosched.cpus.split (LLC boundaries
    when the group spans several LLCs, else between cores; parameter split),
    one job per half, no CPU shared;
  - a single job (odd count, gang-only, only one ready) gets its whole group.

Parameters (--policy-opt key=value):
  split = auto          where halves are cut (folded policies): auto, llc, numa, core, pu
  characterize = yes    yes: cosched.characterize classifies and measures; no: hints only
  standalone_quanta, folded_quanta: passed to cosched.characterize

Threads: a job gets its group (or half) whatever its thread count (Sec. 6,
arbitrary thread counts, is not addressed beyond this).

When not to use them: the pairs are static, so one bad pair stays bad for the
whole run (Sec. 5: "a pair exhibiting high contention, once created by these
schedulers, is used for the entire execution"); unfolded (lbb, llcmrb), pairs
double the threads per core: jobs that do not scale are better folded (flbb,
fllcmrb); folded, S-C pairs still thrash the cache (use flca, which pairs by
measured speed, or class, and ages). ]==]
function M.balance_policy(spec)
  local src, plan
  return {
    api = 1,
    name = spec.name,
    description = spec.description,
    shares_cpus = spec.shares_cpus,
    params = {
      split = { default = "auto", help = "where folded halves are cut: auto, llc, numa, core or pu" },
      characterize = { default = "yes", help = "yes: measure classes with cosched.characterize; no: use class hints" },
      standalone_quanta = { default = 2, help = "characterization: quanta measured alone" },
      folded_quanta = { default = 1, help = "characterization: quanta measured folded" },
    },
    init = function(params)
      plan = M.static {
        fold = spec.fold,
        split = M.check_split(params.split),
        pair = function(entries)
          return M.topbottom(entries, (M.sort_key(entries, spec.key)))
        end,
      }
      src = M.source_of(params)
    end,
    plan = function(snap)
      return plan(src, snap)
    end,
  }
end

return M
