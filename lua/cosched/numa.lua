--[==[
cosched.numa - NUMA helpers and the mapping steps of maximum-local and
N-MASS (paper 000: Majo and Gross, "Memory Management in NUMA Multicore
Systems: Trapped between Cache Contention and Interconnect Overhead",
Alg. 1-3), generalised from the paper's two processors to any number of
NUMA nodes and from single-threaded processes to jobs of several threads.
The policies lua/policies/maxlocal.lua and lua/policies/nmass.lua are built
with policy() below; their headers give the paper's words behind each
choice.

    local numa = require "cosched.numa"
    local t = numa.nodes(snap)            -- nodes with managed cores, capacity in cores
    local np = numa.np_estimate(mpki)     -- NUMA penalty, Sec. 4.5 linear model

nodes(snap)
    The NUMA nodes of snap.topology.numa as { list = { node, ... }, by_os =
    { [os_index] = node }, ncores = N }, node = { k = index into
    topology.numa, os = os_index, cores = { core, ... }, cap = cores }.  The
    capacity of a node is the number of managed cores whose core.numa is the
    node (hyperthreads of a core count once: the paper disables SMT and maps
    one process per core).  Memory-only nodes have cap 0.  Cores without a
    numa field all go to one pseudo node (os = -1).  Cached on the managed
    CPUs and the node list.

np_estimate(mpki [, intercept [, slope]])
    NUMA penalty (Eq. 1, CPI_remote / CPI_local) estimated linearly from the
    MPKI, Sec. 4.5: intercept 1.05, slope 0.015 per MPKI by default, never
    below 1 (the penalty's minimum, Sec. 3.2).  nil for an unknown MPKI.

np_of(job, mpki [, intercept [, slope]]) -> np, source
    The penalty N-MASS uses: from the profile store when it has the job
    (np_estimate of job.stored.mpki, the MPKI measured with the job alone:
    source "store"), else np_estimate(mpki) of the last epoch (source
    "mpki"); nil when neither is known.  See the function for why the
    stored MPKI and not a stored penalty.

penalty(unit, k)
    The penalty of running unit (see units below) on node k:
    1 + (np - 1) * (1 - share of its memory on k); 1 when the memory or np
    is unknown.  For the paper's processes (all memory on one node) this is
    1 at home and np elsewhere.

maxlocal(t, units)          Algorithm 2 (map_maxlocal)
refine(t, units, place, o)  Algorithm 3 (refine_mapping)
assign(t, units, place, current)   node counts -> CPU lists
select(snap, need, ncores)  the jobs that run this epoch when oversubscribed
policy(spec)                a whole policy (maxlocal or nmass)
    See each function below.

Units (one per job that runs this epoch): { id, need = cores, home = node
k or nil, frac = { [k] = share } or nil, pages, mpki (or nil), np (or nil),
order = rank in the maximum-local order }.
Placements: { [id] = { [k] = cores on node k } }.
]==]

local rotation = require "cosched.rotation"

local M = {}

local floor, abs, max, min = math.floor, math.abs, math.max, math.min

M.defaults = {
  epoch = 1.0,               -- Sec. 3.4: "We select an epoch length of 1s"
  interconnect_mpki = 60,    -- Sec. 3.4: "We select 60 MPKI for the threshold"
  np_intercept = 1.05,       -- Sec. 4.5 (see np_estimate)
  np_slope = 0.015,
  min_mpki = 1,              -- Sec. 4.5: "non-memory-bound programs (programs with a MPKI smaller than 1)"
  remap = 0.20,              -- Sec. 3.4: "if a process's MPKI changes by more than 20%"
}

-- ------------------------------------------------------------------ topology

local cache = { key = nil }

function M.nodes(snap)
  local topo = snap.topology
  local parts = { table.concat(snap.cpus, ",") }
  for _, n in ipairs(topo.numa or {}) do parts[#parts + 1] = tostring(n.os_index) end
  local key = table.concat(parts, "|")
  if cache.key == key then return cache.t end
  local list, by_os, byk = {}, {}, {}
  for _, n in ipairs(topo.numa or {}) do
    local node = { k = n.index, os = n.os_index, cores = {}, cap = 0 }
    list[#list + 1] = node
    by_os[n.os_index] = node
    byk[n.index] = node
  end
  local managed, ncores, pseudo = {}, 0, nil
  for _, c in ipairs(snap.cpus) do managed[c] = true end
  for _, core in ipairs(topo.cores) do
    local pus = {}
    for _, c in ipairs(core.pus) do
      if managed[c] then pus[#pus + 1] = c end
    end
    if #pus > 0 then
      local node = core.numa and byk[core.numa]
      if not node then
        if not pseudo then
          pseudo = { k = #list + 1, os = -1, cores = {}, cap = 0 }
          list[#list + 1] = pseudo
        end
        node = pseudo
      end
      node.cores[#node.cores + 1] = pus
      node.cap = node.cap + 1
      ncores = ncores + 1
    end
  end
  local byidx = {}
  for i, node in ipairs(list) do node.i = i; byidx[node.k] = node end
  local t = { list = list, by_os = by_os, byk = byidx, ncores = ncores }
  cache = { key = key, t = t }
  return t
end

-- ------------------------------------------------------------------ estimates

function M.np_estimate(mpki, intercept, slope)
  if type(mpki) ~= "number" then return nil end
  intercept = intercept or M.defaults.np_intercept
  slope = slope or M.defaults.np_slope
  return max(1, intercept + slope * mpki)
end

function M.penalty(u, i)
  if not u.np or not u.frac then return 1 end
  return 1 + (u.np - 1) * (1 - (u.frac[i] or 0))
end

--- NUMA penalty of a job and where it came from: "store" when the profile
--- store has the job's MPKI (job.stored.mpki, measured by the
--- characterization with the job alone in an LLC domain), estimated from it
--- with the Sec. 4.5 model; else "mpki": the same model on mpki (the last
--- epoch's MPKI, as the paper's on-line variant); nil, nil when neither.
--- The store holds no measured CPI_remote / CPI_local (Eq. 1): the paper
--- measured it by running each program alone twice, local and remote, which
--- the characterization does not do; the stored MPKI is the closest thing,
--- and it is what the paper's model was fitted on ("During the
--- measurements all cores are inactive, except the core that executes the
--- program"; Fig. 7 plots that penalty against MPKI), whereas the live MPKI
--- is inflated by co-runners' cache pressure.
function M.np_of(job, mpki, intercept, slope)
  local s = job.stored
  local sm = s and s.mpki
  if type(sm) == "number" and sm == sm and sm >= 0 and sm < math.huge then
    return M.np_estimate(sm, intercept, slope), "store"
  end
  if mpki == nil then return nil, nil end
  return M.np_estimate(mpki, intercept, slope), "mpki"
end

--- MPKI of a job's last counted step, else the profile store's, else nil.
function M.mpki_of(job)
  local last = job.last
  if last and last.counted and last.metrics then
    local m = last.metrics.mpki
    if type(m) == "number" and m == m and m >= 0 and m < math.huge then return m end
  end
  local s = job.stored
  if s and type(s.mpki) == "number" then return s.mpki end
  return nil
end

--- Memory of a job over the nodes of t: frac = { [node i] = share }, home =
--- node i, pages; nil when job.memory is absent or names no known node.
function M.memory_of(job, t)
  local mem = job.memory
  if not mem or not mem.nodes then return nil end
  local frac, total = {}, 0
  for os, f in pairs(mem.nodes) do
    local node = t.by_os[tonumber(os)]
    f = tonumber(f)
    if node and f and f > 0 then
      frac[node.i] = (frac[node.i] or 0) + f
      total = total + f
    end
  end
  if total <= 0 then return nil end
  local home, best = nil, -1
  for i, f in pairs(frac) do
    frac[i] = f / total
    if frac[i] > best or (frac[i] == best and i < home) then home, best = i, frac[i] end
  end
  local h = mem.home and t.by_os[tonumber(mem.home)]
  if h and frac[h.i] and frac[h.i] >= best then home = h.i end
  return { frac = frac, home = home, pages = tonumber(mem.pages) or 0 }
end

-- ------------------------------------------------------------------ Algorithm 2

-- The maximum-local order: descending NUMA penalty (Alg. 1 lines 2-3, the
-- merge of Alg. 2) when every unit has one, then descending share of memory
-- on the home node, then more pages, then lower id.
function M.order(units)
  local all_np = true
  for _, u in ipairs(units) do if not u.np then all_np = false end end
  local list = {}
  for i, u in ipairs(units) do list[i] = u end
  table.sort(list, function(a, b)
    if all_np and a.np ~= b.np then return a.np > b.np end
    local fa = a.home and a.frac[a.home] or -1
    local fb = b.home and b.frac[b.home] or -1
    if fa ~= fb then return fa > fb end
    if (a.pages or 0) ~= (b.pages or 0) then return (a.pages or 0) > (b.pages or 0) end
    return a.id < b.id
  end)
  for r, u in ipairs(list) do u.order = r end
  return list
end

--- Algorithm 2 generalised: units in maximum-local order; each takes free
--- cores on its home node while there are any (get_next_available_core(home)),
--- the rest on the other nodes in descending share of its memory, then the
--- cores it holds there now (u.cur = { [node i] = cores }: no needless
--- moves), then most free cores, then node order.  Units without known
--- memory go by the last three.  Returns place and the free cores left.
function M.maxlocal(t, units)
  local free, place = {}, {}
  for i, node in ipairs(t.list) do free[i] = node.cap end
  for _, u in ipairs(M.order(units)) do
    local p, left = {}, u.need
    if u.home and free[u.home] > 0 then
      local n = min(left, free[u.home])
      p[u.home], free[u.home], left = n, free[u.home] - n, left - n
    end
    if left > 0 then
      local cand = {}
      for i in ipairs(t.list) do
        if free[i] > 0 then cand[#cand + 1] = i end
      end
      table.sort(cand, function(a, b)
        local fa = u.frac and u.frac[a] or 0
        local fb = u.frac and u.frac[b] or 0
        if fa ~= fb then return fa > fb end
        local ca = u.cur and u.cur[a] or 0
        local cb = u.cur and u.cur[b] or 0
        if ca ~= cb then return ca > cb end
        if free[a] ~= free[b] then return free[a] > free[b] end
        return a < b
      end)
      for _, i in ipairs(cand) do
        if left == 0 then break end
        local n = min(left, free[i])
        p[i], free[i], left = (p[i] or 0) + n, free[i] - n, left - n
      end
    end
    place[u.id] = p
  end
  return place, free
end

-- ------------------------------------------------------------------ Algorithm 3

--- Pressure per node: sum over cores of the MPKI of the thread on it, the
--- MPKI of threads that run away from their memory multiplied by their
--- penalty (Alg. 3 lines 3-4, 8-12).
function M.pressure(t, units, place)
  local p = {}
  for i in ipairs(t.list) do p[i] = 0 end
  for _, u in ipairs(units) do
    for i, n in pairs(place[u.id]) do
      p[i] = p[i] + (u.mpki or 0) * n * M.penalty(u, i)
    end
  end
  return p
end

--- Algorithm 3 generalised.  o = { threshold, min_mpki }.  Repeats refinement
--- steps, each moving at most one unit, until none is accepted:
---   source s, destination t: every pair of nodes with cores, s in
---     descending pressure per core, t in ascending, rho_t < rho_s;
---   candidate: the units wholly on s, from the back of M_s (lowest NUMA
---     penalty first: maximum-local order, moved units pushed to the front)
---     that were not moved yet, have an MPKI >= min_mpki and fit in the free
---     cores of t;
---   accepted when the new pressure of t, p_t + mpki * need * penalty(t),
---     is below threshold (Alg. 3 line 16) and the pair's imbalance
---     |p_s/cap_s - p_t/cap_t| shrinks (Sec. 3.1, Fig. 6: pressure moves
---     from the loaded cache to the other, less than D/2).
--- Returns the new placement and the list of moves { id, from, to } in order.
function M.refine(t, units, place, o)
  local threshold = o.threshold or M.defaults.interconnect_mpki
  local min_mpki = o.min_mpki or M.defaults.min_mpki
  local free = {}
  for i, node in ipairs(t.list) do free[i] = node.cap end
  local newp = {}
  for _, u in ipairs(units) do
    local c = {}
    for i, n in pairs(place[u.id]) do c[i] = n; free[i] = free[i] - n end
    newp[u.id] = c
  end
  local p = M.pressure(t, units, newp)
  -- M_k: units wholly on node k, in maximum-local order
  local lists = {}
  for i in ipairs(t.list) do lists[i] = {} end
  local sorted = {}
  for i, u in ipairs(units) do sorted[i] = u end
  table.sort(sorted, function(a, b) return a.order < b.order end)
  for _, u in ipairs(sorted) do
    local only, cnt = nil, 0
    for i in pairs(newp[u.id]) do only, cnt = i, cnt + 1 end
    if cnt == 1 then table.insert(lists[only], u) end
  end
  local moved, moves = {}, {}
  local function rho(i) return p[i] / t.list[i].cap end
  while true do
    local idx = {}
    for i, node in ipairs(t.list) do if node.cap > 0 then idx[#idx + 1] = i end end
    local desc, asc = {}, {}
    for j, i in ipairs(idx) do desc[j], asc[j] = i, i end
    table.sort(desc, function(a, b) if rho(a) ~= rho(b) then return rho(a) > rho(b) end return a < b end)
    table.sort(asc, function(a, b) if rho(a) ~= rho(b) then return rho(a) < rho(b) end return a < b end)
    local done = false
    for _, s in ipairs(desc) do
      for _, d in ipairs(asc) do
        if rho(d) >= rho(s) then break end
        local Ms = lists[s]
        for pos = #Ms, 1, -1 do
          local u = Ms[pos]
          if not moved[u.id] and u.mpki and u.mpki >= min_mpki and u.need <= free[d] then
            local ps = p[s] - u.mpki * u.need * M.penalty(u, s)
            local pd = p[d] + u.mpki * u.need * M.penalty(u, d)
            local before = abs(rho(s) - rho(d))
            local after = abs(ps / t.list[s].cap - pd / t.list[d].cap)
            if pd < threshold and after < before - 1e-12 then
              table.remove(Ms, pos)
              table.insert(lists[d], 1, u)            -- push_front(M_d)
              p[s], p[d] = ps, pd
              free[s], free[d] = free[s] + u.need, free[d] - u.need
              newp[u.id] = { [d] = u.need }
              moved[u.id] = true
              moves[#moves + 1] = { id = u.id, from = s, to = d }
              done = true
              break
            end
          end
        end
        if done then break end
      end
      if done then break end
    end
    if not done then break end
  end
  return newp, moves, p
end

-- ------------------------------------------------------------------ cores

--- Node counts -> CPU lists.  A unit keeps the cores it holds now (current:
--- { [id] = cpu list }) on a node where it keeps cores; the rest are the
--- node's lowest free cores.  All PUs of a core go to the same unit.
function M.assign(t, units, place, current)
  local out, taken = {}, {}
  local want = {}
  for _, u in ipairs(units) do
    want[u.id] = {}
    for i, n in pairs(place[u.id]) do want[u.id][i] = n end
    out[u.id] = {}
  end
  local sorted = {}
  for i, u in ipairs(units) do sorted[i] = u end
  table.sort(sorted, function(a, b) return (a.order or a.id) < (b.order or b.id) end)
  local function give(u, i, ci)
    local node = t.list[i]
    taken[node.cores[ci]] = true
    for _, c in ipairs(node.cores[ci]) do out[u.id][#out[u.id] + 1] = c end
    want[u.id][i] = want[u.id][i] - 1
  end
  -- pass 1: keep current cores
  for _, u in ipairs(sorted) do
    local cur = {}
    for _, c in ipairs(current and current[u.id] or {}) do cur[c] = true end
    for i, n in pairs(want[u.id]) do
      for ci, core in ipairs(t.list[i].cores) do
        if want[u.id][i] == 0 then break end
        if not taken[core] and cur[core[1]] then give(u, i, ci) end
      end
    end
  end
  -- pass 2: lowest free cores
  for _, u in ipairs(sorted) do
    for i, n in pairs(want[u.id]) do
      for ci, core in ipairs(t.list[i].cores) do
        if want[u.id][i] == 0 then break end
        if not taken[core] then give(u, i, ci) end
      end
    end
    table.sort(out[u.id])
  end
  return out
end

-- ------------------------------------------------------------------ time sharing

--- { [node i] = cores of the list on node i } (a core counts when its first
--- PU is in the list).
function M.held(t, list)
  local set, out = {}, {}
  for _, c in ipairs(list or {}) do set[c] = true end
  for i, node in ipairs(t.list) do
    for _, core in ipairs(node.cores) do
      if set[core[1]] then out[i] = (out[i] or 0) + 1 end
    end
  end
  return out
end

--- Cores a job asks for: its threads, at most the node's cores, at least 1.
function M.need(job, ncores)
  return max(1, min(job.threads or ncores, ncores))
end

--- When the jobs' cores add up to more than the node has: the jobs in
--- cosched.rotation order (never ran, waited longest, fewer quanta, id),
--- each taken when its cores still fit (the first always does).  A job left
--- out waits, rises in the order and is taken within n - 1 epochs.
function M.select(snap, ncores)
  local total = 0
  for _, job in ipairs(snap.jobs) do total = total + M.need(job, ncores) end
  if total <= ncores then
    local all = {}
    for i, job in ipairs(snap.jobs) do all[i] = job end
    return all, false
  end
  local out, left = {}, ncores
  for _, job in ipairs(rotation.order(snap)) do
    local n = M.need(job, ncores)
    if n <= left then
      out[#out + 1] = job
      left = left - n
    end
  end
  return out, true
end

-- ------------------------------------------------------------------ policies

local function num(params, key, lo, hi, open)
  local v = tonumber(params[key])
  if not v or v ~= v or v < lo or (open and v == lo) or (hi and v > hi) then
    error(("%s = '%s': expected a number %s %s%s"):format(key, tostring(params[key]),
      open and ">" or ">=", lo, hi and (" and <= " .. hi) or ""), 0)
  end
  return v
end

--- A whole policy: spec = { name, description, refine = true|false }.
function M.policy(spec)
  local o, said = {}, {}
  local known = {}       -- last known MPKI per job id
  local mapping = { key = nil }
  local function once(key, level, msg)
    if not said[key] then said[key] = true; cosched.log(level, msg) end
  end

  local params = {
    epoch = { default = M.defaults.epoch, help = "seconds per epoch (one step), independent of the quantum" },
    np_intercept = { default = M.defaults.np_intercept, help = "NUMA penalty estimate: intercept (np = a + b x MPKI)" },
    np_slope = { default = M.defaults.np_slope, help = "NUMA penalty estimate: slope per MPKI" },
    remap = { default = M.defaults.remap, help = "remap when a job's MPKI moved by more than this fraction" },
  }
  if spec.refine then
    params.interconnect_mpki = { default = M.defaults.interconnect_mpki,
      help = "no move that brings a node's cache pressure (MPKI) to this or above" }
    params.min_mpki = { default = M.defaults.min_mpki, help = "jobs below this MPKI are never moved off the maximum-local map" }
  end

  local function units_of(snap, t, jobs)
    local units = {}
    for _, job in ipairs(jobs) do
      local m = M.mpki_of(job)
      if m then known[job.id] = m else m = known[job.id] end
      local mem = M.memory_of(job, t)
      local np, src = M.np_of(job, m, o.np_intercept, o.np_slope)
      local u = { id = job.id, need = M.need(job, t.ncores), mpki = m, np = np, np_src = src }
      if mem then u.home, u.frac, u.pages = mem.home, mem.frac, mem.pages end
      u.cur = M.held(t, job.cpus)
      units[#units + 1] = u
    end
    return units
  end

  local function why_remap(key, units)
    if mapping.key ~= key then return "jobs, homes or cpus changed" end
    for _, u in ipairs(units) do
      local m0 = mapping.mpki[u.id]
      if (m0 == nil) ~= (u.mpki == nil) then return ("job %d: MPKI now known"):format(u.id) end
      if m0 and abs(u.mpki - m0) > o.remap * m0 then
        return ("job %d: MPKI %.3g -> %.3g (> %g %%)"):format(u.id, m0, u.mpki, 100 * o.remap)
      end
    end
    return nil
  end

  return {
    api = 1,
    name = spec.name,
    description = spec.description,
    params = params,

    init = function(p)
      o.epoch = num(p, "epoch", 0.001, 3600)
      o.np_intercept = num(p, "np_intercept", 0)
      o.np_slope = num(p, "np_slope", 0)
      o.remap = num(p, "remap", 0)
      if spec.refine then
        o.threshold = num(p, "interconnect_mpki", 0, nil, true)
        o.min_mpki = num(p, "min_mpki", 0)
      end
    end,

    plan = function(snap)
      if #snap.jobs == 0 then return { { jobs = {} } } end
      local t = M.nodes(snap)
      local jobs, over = M.select(snap, t.ncores)
      if over then
        once("over", "info", "more threads than cores: time-sharing, jobs in round robin, each epoch's jobs mapped by " .. spec.name)
      end
      local units = units_of(snap, t, jobs)
      local live = {}
      for _, job in ipairs(snap.jobs) do live[job.id] = true end
      for id in pairs(known) do if not live[id] then known[id] = nil end end
      local kp = { table.concat(snap.cpus, ",") }
      for _, u in ipairs(units) do kp[#kp + 1] = ("%d:%s:%d"):format(u.id, tostring(u.home), u.need) end
      local key = table.concat(kp, " ")
      local why = why_remap(key, units)
      if why then
        local place = M.maxlocal(t, units)
        local moved = {}
        if spec.refine then
          local missing
          for _, u in ipairs(units) do if not u.mpki then missing = missing or u.id end end
          if missing then
            local measured = false
            for _, job in ipairs(jobs) do if job.last then measured = true end end
            if measured then
              once("nompki", "info", ("no MPKI for job %d (no counters, or no mpki metric): running as maximum-local, without the cache-aware refinement"):format(missing))
            end
          elseif #t.list > 1 then
            local moves
            place, moves = M.refine(t, units, place, o)
            for _, mv in ipairs(moves) do
              moved[#moved + 1] = ("job %d node %d->%d"):format(mv.id, t.list[mv.from].os, t.list[mv.to].os)
            end
          end
        end
        local current = {}
        for _, job in ipairs(jobs) do current[job.id] = job.cpus end
        local cpus = M.assign(t, units, place, current)
        local mp = {}
        for _, u in ipairs(units) do mp[u.id] = u.mpki end
        mapping = { key = key, mpki = mp, cpus = cpus }
        cosched.log("debug", ("epoch %d: remap (%s); refinement moves: %s"):format(snap.epoch, why,
          #moved > 0 and table.concat(moved, ", ") or "none"))
      end
      local entries = {}
      for _, u in ipairs(units) do entries[#entries + 1] = { id = u.id, cpus = mapping.cpus[u.id] } end
      return { { duration = o.epoch, jobs = entries } }
    end,
  }
end

return M
