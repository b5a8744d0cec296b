--[==[
cosched.numa_spread - the planner behind the dinuma and dip policies (paper
002: Blagodurov, Zhuravlev, Kamali, Fedorova, "A Case for NUMA-Aware
Contention Management on Multicore Systems").  Memory-intensive jobs
("devils") are spread over the memory domains (NUMA nodes), the others
("turtles") fill, and every job's cores AND memory (mems) follow its domain.
The policy files' headers give the paper's words behind each choice.

    local spread = require "cosched.numa_spread"
    local p = spread.new { name = "dinuma", devil_mpki = 10, migrate_every = 10,
                           min_gain = 0.5, alpha = 0.5, dip = false, max_load = 2 }
    return p:plan(snap)                   -- one step, one quantum

domains(snap) -> doms, nnodes
    The memory domains: the NUMA nodes that hold managed CPUs, in topology
    order, each { key, index, os_index, cpus (managed CPUs in core order,
    hyperthreads of a core together), n = #cpus }; nnodes = #topology.numa
    (memory-only nodes included).  Cores without a NUMA node form one extra
    domain without os_index (no mems for it).

p:plan(snap) -> steps
    Assignment (who is in which domain), migration accounting, then the
    step: each domain's jobs in cosched.rotation order take min(threads,
    CPUs left) CPUs of the domain until the domain is full (space sharing;
    more threads than CPUs: round robin time sharing inside the domain).
    Every entry gets mems = { its domain's os_index } when the topology has
    two or more NUMA nodes (none with a single node: nothing to choose).

p.assign[id] = domain key; p.moved_at[id] = epoch of the job's last
domain change; p.stats = { migrations, pages, seconds, log = { {id, pages,
seconds, from, to, epoch}, ... } }; p.devil(id), p.intensity(id) - for
tests and messages.  seconds is an ESTIMATE (migrate_seconds): pages x 4096
bytes / migrate_gbps (default 1 GB/s, a round figure, not measured).

migrate_seconds(pages [, gbps]) -> estimated seconds to move the pages.

check(params [, keys]) -> the parameters as numbers, or error "key = 'v':
    expected ..." (keys.max_load: dip's max_load too).
policy(spec) -> the whole policy table of dinuma (spec = { name =,
    description = }) or dip (spec.dip = true: max_load too, priorities):
    the parameters, init (check, then new) and plan.
]==]

local rotation = require "cosched.rotation"

local M = {}

local function finite(x)
  return type(x) == "number" and x == x and x ~= math.huge and x ~= -math.huge
end

-- ------------------------------------------------------------------ domains

function M.domains(snap)
  local managed = {}
  for _, c in ipairs(snap.cpus) do managed[c] = true end
  local doms, byidx = {}, {}
  for _, core in ipairs(snap.topology.cores) do
    local idx = core.numa or 0               -- 0: cores of no NUMA node
    for _, c in ipairs(core.pus) do
      if managed[c] then
        local d = byidx[idx]
        if not d then
          local node = idx > 0 and snap.topology.numa[idx] or nil
          d = { index = idx, os_index = node and node.os_index or nil,
                key = node and ("n" .. node.os_index) or "none", cpus = {} }
          byidx[idx] = d
          doms[#doms + 1] = d
        end
        d.cpus[#d.cpus + 1] = c
        managed[c] = nil
      end
    end
  end
  local rest = {}                            -- managed CPUs of no listed core
  for _, c in ipairs(snap.cpus) do if managed[c] then rest[#rest + 1] = c end end
  if #rest > 0 then
    local d = byidx[0]
    if not d then
      d = { index = 0, key = "none", cpus = {} }
      doms[#doms + 1] = d
    end
    for _, c in ipairs(rest) do d.cpus[#d.cpus + 1] = c end
  end
  for _, d in ipairs(doms) do d.n = #d.cpus end
  return doms, #snap.topology.numa
end

-- ------------------------------------------------------------------ migration time

-- An ESTIMATE of the time a migration takes, not a measurement: the pages
-- (job.memory.pages counts 4 KiB pages: resident bytes / 4096) times 4096
-- bytes over migrate_gbps GB/s.  The default, 1 GB/s, is our round figure
-- for the kernel's page migration (cpuset.memory_migrate and migrate_pages
-- copy page by page in the kernel, unmapping and remapping each page, well
-- below the memory's own bandwidth); it is not measured on this machine
-- (BENCHMARKS.md has no such number) and is a parameter.
M.MIGRATE_GBPS = 1.0
M.PAGE_BYTES = 4096

function M.migrate_seconds(pages, gbps)
  return pages * M.PAGE_BYTES / ((gbps or M.MIGRATE_GBPS) * 1e9)
end

-- ------------------------------------------------------------------ planner

local P = {}
P.__index = P

function M.new(o)
  local p = setmetatable({
    name = o.name or "numa_spread",
    devil_mpki = tonumber(o.devil_mpki) or 10,
    migrate_every = tonumber(o.migrate_every) or 10,
    min_gain = tonumber(o.min_gain) or 0.5,
    alpha = tonumber(o.alpha) or 0.5,
    dip = o.dip and true or false,
    max_load = tonumber(o.max_load) or 2,
    migrate_gbps = tonumber(o.migrate_gbps) or M.MIGRATE_GBPS,
    log = o.log or function(level, msg) cosched.log(level, msg) end,
    assign = {}, moved_at = {}, x = {}, seen_q = {}, said = {},
    stats = { migrations = 0, pages = 0, seconds = 0, log = {} },
    cur = {},                               -- per-epoch info by id
  }, P)
  return p
end

function P:once(key, level, msg)
  if not self.said[key] then
    self.said[key] = true
    self.log(level, msg)
  end
end

-- The job's memory intensity: EWMA (alpha) of the MPKI of its counted
-- steps, taken once per step it ran; else the profile store's mpki; else nil.
function P:observe(job)
  local last = job.last
  local m = last and last.counted and last.metrics and last.metrics.mpki
  if finite(m) and (self.seen_q[job.id] or -1) < job.quanta_run then
    self.seen_q[job.id] = job.quanta_run
    local old = self.x[job.id]
    self.x[job.id] = old and (self.alpha * m + (1 - self.alpha) * old) or m
  end
  local x = self.x[job.id]
  if x == nil and job.stored and finite(job.stored.mpki) then x = job.stored.mpki end
  return x
end

-- Classify every live job: { id, job, x, devil, prio, threads, home, sortx }.
function P:classify(snap)
  local cur, hinted = {}, false
  for _, job in ipairs(snap.jobs) do
    local x = self:observe(job)
    local class = job.class or (job.stored and job.stored.class)
    local devil
    if x ~= nil then
      devil = x > self.devil_mpki
    else
      devil = class == "S"
      hinted = true
    end
    local mem = job.memory
    local home = mem and mem.home
    cur[job.id] = {
      id = job.id, job = job, x = x, devil = devil,
      prio = self.dip and (job.priority or 0) > 0 or false,
      priority = job.priority or 0,
      threads = math.max(1, job.threads or 1), home = home,
      -- sort key: measured MPKI, else a nominal one from the class hint
      sortx = x or (devil and 2 * self.devil_mpki) or (class == "C" and self.devil_mpki / 2) or 0,
    }
  end
  if hinted then
    self:once("hints", "info", ("no MPKI measured for some jobs: class hint S counts as devil (memory-intensive), "
      .. "others as turtles, until counters give MPKI > devil_mpki = %g"):format(self.devil_mpki))
  end
  return cur
end

-- Per-domain tallies of an assignment (id -> key) over the infos in cur.
local function tally(doms, cur, assign)
  local t = {}
  for i, d in ipairs(doms) do
    t[d.key] = { i = i, d = d, devils = 0, prio = 0, pdevils = 0, load = 0, isum = 0 }
  end
  for id, key in pairs(assign) do
    local e, s = cur[id], t[key]
    if e and s then
      s.load = s.load + e.threads
      s.isum = s.isum + e.sortx
      if e.prio then s.prio = s.prio + 1 end
      if e.devil then
        s.devils = s.devils + 1
        if e.prio then s.pdevils = s.pdevils + 1 end
      end
    end
  end
  return t
end

local function add(t, key, e, sign)
  local s = t[key]
  s.load = s.load + sign * e.threads
  s.isum = s.isum + sign * e.sortx
  if e.prio then s.prio = s.prio + sign end
  if e.devil then
    s.devils = s.devils + sign
    if e.prio then s.pdevils = s.pdevils + sign end
  end
end

-- Imbalance of an assignment: spread of devil counts (max - min over the
-- domains) + spread of load (threads per CPU); DIP adds 10 per devil that
-- shares a domain with a priority job (not counting priority devils).
function P:score(doms, cur, assign)
  local t = tally(doms, cur, assign)
  local dmin, dmax, lmin, lmax, conflicts = math.huge, -math.huge, math.huge, -math.huge, 0
  for _, d in ipairs(doms) do
    local s = t[d.key]
    dmin, dmax = math.min(dmin, s.devils), math.max(dmax, s.devils)
    local l = s.load / d.n
    lmin, lmax = math.min(lmin, l), math.max(lmax, l)
    if self.dip and s.prio > 0 then conflicts = conflicts + (s.devils - s.pdevils) end
  end
  return (dmax - dmin) + (lmax - lmin) + 10 * conflicts
end

-- Lexicographic minimum over the domains of key(s) (a list of numbers).
local function argmin(doms, t, ok, key)
  local best, bk
  for _, d in ipairs(doms) do
    local s = t[d.key]
    if not ok or ok(s) then
      local k = key(s)
      local better = not best
      if not better then
        for i = 1, #k do
          if k[i] ~= bk[i] then better = k[i] < bk[i] break end
        end
      end
      if better then best, bk = d, k end
    end
  end
  return best
end

-- Greedy DI-NUMA / DIP placement of the jobs in list (infos), adding to the
-- assignment `assign` (whose tallies are t).  prev[id] = the job's current
-- domain key (kept on ties).
function P:place(doms, t, assign, list, prev)
  local order = {}
  for _, e in ipairs(list) do order[#order + 1] = e end
  local function rank(e) return e.prio and 1 or (e.devil and 2 or 3) end
  table.sort(order, function(a, b)
    local ra, rb = rank(a), rank(b)
    if ra ~= rb then return ra < rb end
    if a.prio and a.priority ~= b.priority then return a.priority > b.priority end
    if a.sortx ~= b.sortx then return a.sortx > b.sortx end
    return a.id < b.id
  end)
  for _, e in ipairs(order) do
    local here = prev[e.id]
    local homekey = e.home and ("n" .. e.home)
    local function stay(s) return s.d.key == here and 0 or 1 end
    local function home(s) return s.d.key == homekey and 0 or 1 end
    local function load(s) return (s.load + e.threads) / s.d.n end
    local d
    if e.prio then
      -- DIP: "priority jobs placed first, in the domain with the fewest devils"
      d = argmin(doms, t, nil, function(s)
        return { s.devils, s.prio, load(s), stay(s), home(s), s.i } end)
    elseif e.devil then
      local ok
      if self.dip then
        -- DIP: devils out of priority jobs' domains while another domain
        -- has room (load at most max_load threads per CPU)
        local function free(s) return s.prio == 0 and load(s) <= self.max_load end
        if argmin(doms, t, free, function(s) return { s.i } end) then ok = free end
      end
      d = argmin(doms, t, ok, function(s)
        return { s.devils, s.isum, stay(s), home(s), load(s), s.i } end)
    else
      d = argmin(doms, t, nil, function(s)
        return { load(s), stay(s), home(s), s.isum, s.i } end)
    end
    assign[e.id] = d.key
    add(t, d.key, e, 1)
  end
end

-- Account a memory migration of job e to domain d (from = the domain it
-- left, nil when first placed).
function P:migrate(snap, e, d, from)
  local mem = e.job.memory
  local pages, src
  if mem and finite(mem.pages) then
    local on = mem.nodes and mem.nodes[d.os_index] or 0
    if not finite(on) then on = 0 end
    pages = math.floor(mem.pages * math.max(0, 1 - on) + 0.5)
    src = mem.home
    if src == d.os_index and mem.nodes then
      -- home is already the target: name the node most of the rest comes from
      local best = 0
      for os, f in pairs(mem.nodes) do
        if os ~= d.os_index and finite(f) and f > best then src, best = os, f end
      end
    end
  end
  if src == nil and from then src = from.os_index end
  local secs = pages and M.migrate_seconds(pages, self.migrate_gbps) or nil
  local rec = { id = e.id, pages = pages, seconds = secs, from = src, to = d.os_index, epoch = snap.epoch }
  if from == nil and (pages == nil or pages == 0) then
    self.log("debug", ("job %d: memory confined to node %d"):format(e.id, d.os_index))
    return
  end
  self.stats.migrations = self.stats.migrations + 1
  self.stats.pages = self.stats.pages + (pages or 0)
  self.stats.seconds = self.stats.seconds + (secs or 0)
  self.stats.log[#self.stats.log + 1] = rec
  self.log("info", ("job %d: migrating %s pages node %s→%d%s"):format(e.id,
    pages and tostring(pages) or "?", src and tostring(src) or "?", d.os_index,
    secs and (" (estimated %.3g s at %g GB/s)"):format(secs, self.migrate_gbps) or ""))
end

function P:plan(snap)
  if #snap.jobs == 0 then return { { jobs = {} } } end
  local doms, nnodes = M.domains(snap)
  local use_mems = nnodes >= 2
  if #doms == 1 then
    self:once("one-domain", "info", ("one memory domain (%s): nothing to spread or migrate; "
      .. "jobs space-share its CPUs, round robin when threads exceed CPUs%s"):format(
      doms[1].os_index and ("NUMA node " .. doms[1].os_index) or "no NUMA node",
      use_mems and "" or ", mems left alone"))
  end
  local bykey = {}
  for _, d in ipairs(doms) do bykey[d.key] = d end
  local cur = self:classify(snap)
  self.cur = cur
  -- forget jobs that left; jobs whose domain vanished are placed again
  for id in pairs(self.assign) do
    if not cur[id] or not bykey[self.assign[id]] then
      self.assign[id] = nil
      if not cur[id] then self.moved_at[id], self.x[id], self.seen_q[id] = nil, nil, nil end
    end
  end
  -- phase A: new jobs, on top of the current assignment
  local new = {}
  for _, job in ipairs(snap.jobs) do
    if not self.assign[job.id] then new[#new + 1] = cur[job.id] end
  end
  if #new > 0 then
    local t = tally(doms, cur, self.assign)
    -- place into a copy and commit after: plan() can be stopped anywhere
    -- (its time limit, e.g. the first plan on a slow machine), and a job
    -- left in assign without moved_at made every later plan() fail on
    -- "arithmetic on a nil value" in phase B (seen in the VM, tests/vm)
    local placed = {}
    for id, key in pairs(self.assign) do placed[id] = key end
    self:place(doms, t, placed, new, {})
    for _, e in ipairs(new) do self.moved_at[e.id] = snap.epoch end
    self.assign = placed
    for _, e in ipairs(new) do
      if use_mems and bykey[self.assign[e.id]].os_index then
        self:migrate(snap, e, bykey[self.assign[e.id]], nil)
      end
    end
  end
  -- phase B: rebalance the jobs whose bound allows a move
  if #doms > 1 then
    local movable, fixed = {}, {}
    for id, key in pairs(self.assign) do
      if snap.epoch - self.moved_at[id] >= self.migrate_every then
        movable[#movable + 1] = cur[id]
      else
        fixed[id] = key
      end
    end
    if #movable > 0 then
      local t = tally(doms, cur, fixed)
      local target = {}
      for id, key in pairs(fixed) do target[id] = key end
      self:place(doms, t, target, movable, self.assign)
      local before, after = self:score(doms, cur, self.assign), self:score(doms, cur, target)
      if before - after > self.min_gain then
        table.sort(movable, function(a, b) return a.id < b.id end)
        for _, e in ipairs(movable) do
          local from, to = self.assign[e.id], target[e.id]
          if from ~= to then
            self.assign[e.id] = to
            self.moved_at[e.id] = snap.epoch
            self.log("debug", ("job %d (%s, mpki %s): domain %s -> %s, imbalance %.2f -> %.2f"):format(
              e.id, e.devil and "devil" or "turtle", e.x and ("%.1f"):format(e.x) or "?", from, to, before, after))
            if use_mems and bykey[to].os_index then self:migrate(snap, e, bykey[to], bykey[from]) end
          end
        end
      end
    end
  end
  -- the step: per domain, rotation order, each job min(threads, left) CPUs
  local per = {}
  for _, job in ipairs(snap.jobs) do
    local key = self.assign[job.id]
    per[key] = per[key] or {}
    table.insert(per[key], job)
  end
  local entries = {}
  for _, d in ipairs(doms) do
    local list = per[d.key]
    if list then
      local pos = 1
      for _, job in ipairs(rotation.order(snap, list)) do
        if pos > d.n then break end
        local k = math.min(cur[job.id].threads, d.n - pos + 1)
        local c = {}
        for i = pos, pos + k - 1 do c[#c + 1] = d.cpus[i] end
        pos = pos + k
        table.sort(c)
        local ent = { id = job.id, cpus = c }
        if use_mems and d.os_index then ent.mems = { d.os_index } end
        entries[#entries + 1] = ent
      end
    end
  end
  return { { jobs = entries } }
end

function P:devil(id) return self.cur[id] and self.cur[id].devil end
function P:intensity(id) return self.cur[id] and self.cur[id].x end

-- Parameter checks shared by both policies (raise on a bad value).
function M.check(params, keys)
  local out = {}
  local function num(key, lo, open, int)
    local v = tonumber(params[key])
    if not v or v ~= v or v == math.huge or v < lo or (open and v == lo) or (int and v ~= math.floor(v)) then
      error(("%s = '%s': expected %s %s %s"):format(key, tostring(params[key]),
        int and "an integer" or "a number", open and ">" or ">=", lo), 0)
    end
    out[key] = v
  end
  num("devil_mpki", 0)
  num("migrate_every", 1, false, true)
  num("min_gain", 0)
  num("alpha", 0, true)
  if out.alpha > 1 then error(("alpha = '%s': expected a number in (0, 1]"):format(params.alpha), 0) end
  if keys and keys.max_load then num("max_load", 0, true) end
  if params.migrate_gbps ~= nil then num("migrate_gbps", 0, true) end
  return out
end


function M.policy(spec)
  local planner
  local params = {
    devil_mpki = { default = 10, help = "devil (memory-intensive) when MPKI > devil_mpki; no counters: class S" },
    migrate_every = { default = 10, help = "a job changes domain (its memory migrates) at most once per this many epochs" },
    min_gain = { default = 0.5, help = "rebalance only when the imbalance drops by more than this" },
    alpha = { default = 0.5, help = "EWMA weight of the newest MPKI sample, in (0, 1]" },
    migrate_gbps = { default = 1, help = "page migration rate (GB/s) for the ESTIMATED migration time in the log" },
  }
  if spec.dip then
    params.max_load = { default = 2,
      help = "devils avoid priority jobs' domains while another domain's threads per CPU stay <= this" }
  end
  return {
    api = 1,
    name = spec.name,
    description = spec.description,
    params = params,
    init = function(p)
      local v = M.check(p, spec.dip and { max_load = true } or nil)
      v.name, v.dip = spec.name, spec.dip or nil
      planner = M.new(v)
    end,
    plan = function(snap)
      return planner:plan(snap)
    end,
  }
end

return M
