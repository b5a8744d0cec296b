-- fakenode.lua - a deterministic fake node for policy tests (tests/lua/test_policies.lua).
--
--   local fake = require "fakenode"          (package.path must include tests/lua/)
--   local node = fake.node { cores = 8, llcs = 2, quantum = 0.1 }
--   node:add { class = "S", threads = 8 }    -- a job; id 1, 2, ... in order; regions =
--                                            -- function(other ids in the step) -> its
--                                            -- OpenMP regions per second (last.regions);
--                                            -- ipc = a number or such a function (also
--                                            -- given the job's cpu count), bw =
--                                            -- { l1 =, l2 =, llc = } (counters), owner =
--                                            -- a uid (job.owner), never_frozen =
--                                            -- true (job.never_frozen)
--   local snap = node:snapshot(params)       -- read-only proxies, as the engine's
--   local ok, err = fake.validate(snap, plan)   -- the engine's plan checks
--   node:run(plan)                           -- "run" the steps: waited, quanta, last
--   local p, params = fake.load_policy(srcdir, "lbb", { split = "core" })   -- a shipped policy, init'ed
--   local LOG = fake.library()               -- the global `cosched` a policy's sandbox has; its
--                                            -- log appends "LEVEL: MSG" lines to LOG
--   LOG = fake.log_reset()                   -- a fresh LOG for the lines from now on
--
-- Topology: `cores` cores of one hardware thread each (cpus 0..cores-1), cut in
-- `llcs` contiguous LLC domains of equal size (one NUMA node and package per
-- LLC, unless `numa = N` cuts N contiguous NUMA nodes independently;
-- `numa_reverse = true` numbers them from the last cores).  No counters: every `last` has counted = false, as with --counters
-- none; with counters = true, last.metrics gets ipc (per-cpu, from job.ipc and
-- the cpus the job used) so that cosched.characterize.job_ipc works.  A job's
-- `last` is its last step that ran; with last_step = true, as the engine's,
-- the plan's last step for every job (ran = false, zero counts where frozen).

local M = {}

local function ro(t, cache)
  if type(t) ~= "table" then return t end
  cache = cache or {}
  if cache[t] then return cache[t] end
  local proxy = {}
  cache[t] = proxy
  setmetatable(proxy, {
    __index = function(_, k) return ro(t[k], cache) end,
    __newindex = function(_, k)
      error("attempt to modify field '" .. tostring(k) .. "' of a read-only table", 2)
    end,
    __len = function() return #t end,
    __pairs = function()
      return function(_, k)
        local nk, nv = next(t, k)
        if nk ~= nil then return nk, ro(nv, cache) end
      end, proxy, nil
    end,
  })
  return proxy
end
M.ro = ro

-- nnuma (default: one per LLC): NUMA nodes, contiguous blocks of cores
-- independent of the LLCs; numa_reverse: node indexes in reverse core order
-- (node 1 holds the last cores).
function M.topology(ncores, nllc, nnuma, numa_reverse)
  nllc = math.max(1, math.min(nllc, ncores))
  local per = ncores // nllc
  local nn = nnuma and math.max(1, math.min(nnuma, ncores)) or nil
  local pern = nn and ncores // nn
  local t = { cpus = {}, cores = {}, llcs = {}, numa = {} }
  for c = 0, ncores - 1 do
    local l = math.min(c // per + 1, nllc)
    local m = nn and math.min(c // pern + 1, nn) or l
    if numa_reverse then m = (nn or nllc) + 1 - m end
    t.cpus[#t.cpus + 1] = c
    t.cores[#t.cores + 1] = { index = c + 1, pus = { c }, llc = l, numa = m, package = m }
    t.llcs[l] = t.llcs[l] or { index = l, cpus = {}, size = 32 * 2 ^ 20, level = 3 }
    table.insert(t.llcs[l].cpus, c)
    t.numa[m] = t.numa[m] or { index = m, os_index = m - 1, cpus = {}, size = 2 ^ 34 }
    table.insert(t.numa[m].cpus, c)
  end
  return t
end

local Node = {}
Node.__index = Node

function M.node(o)
  o = o or {}
  local topo = M.topology(o.cores or 8, o.llcs or 1, o.numa, o.numa_reverse)
  return setmetatable({ topo = topo, jobs = {}, epoch = 0, now = 0, quantum = o.quantum or 0.1,
                        counters = o.counters or false, last_step = o.last_step, nextid = 1, runs = {} }, Node)
end

function Node:add(spec)
  spec = spec or {}
  local id = self.nextid
  self.nextid = id + 1
  local j = { id = id, name = spec.name or ("job" .. id), threads = spec.threads or #self.topo.cpus,
              class = spec.class, priority = 0, runs = 0, waited = 0.0, quanta_run = 0,
              quanta_frozen = 0, cpu_time = 0, frozen = false, cpus = self.topo.cpus,
              ipc = spec.ipc or 1.0, last_end = self.now, busy = spec.busy, team = spec.team,
              shim = spec.shim, regions = spec.regions, bw = spec.bw, owner = spec.owner,
              never_frozen = spec.never_frozen }
  self.jobs[#self.jobs + 1] = j
  self.runs[id] = {}
  return id
end

function Node:remove(id)
  for i, j in ipairs(self.jobs) do
    if j.id == id then table.remove(self.jobs, i) return end
  end
end

function Node:snapshot(params)
  self.epoch = self.epoch + 1
  local jobs = {}
  for i, j in ipairs(self.jobs) do
    jobs[i] = { id = j.id, name = j.name, threads = j.threads, class = j.class, priority = 0,
                runs = 0, waited = j.waited, quanta_run = j.quanta_run,
                quanta_frozen = j.quanta_frozen, cpu_time = j.cpu_time, frozen = j.frozen,
                cpus = j.cpus, last = j.last, team = j.team, owner = j.owner,
                never_frozen = j.never_frozen }
  end
  local snap = { api = 1, epoch = self.epoch, now = self.now, quantum = self.quantum,
                 params = params or {}, cpus = self.topo.cpus,
                 topology = { cores = self.topo.cores, llcs = self.topo.llcs, numa = self.topo.numa },
                 jobs = jobs }
  return ro(snap)
end

-- The engine's validation (cosched-policy(7), THE PLAN, Validation).
function M.validate(snap, plan)
  if type(plan) ~= "table" or #plan < 1 or #plan > 1024 then return false, "not a list of 1 to 1024 steps" end
  local live, managed, kept = {}, {}, {}
  for _, j in ipairs(snap.jobs) do live[j.id] = true; kept[j.id] = j.never_frozen end
  for _, c in ipairs(snap.cpus) do managed[c] = true end
  for s, step in ipairs(plan) do
    for k in pairs(step) do
      if k ~= "duration" and k ~= "jobs" and k ~= "shared" then return false, ("step %d: field %s"):format(s, k) end
    end
    local d = step.duration or snap.quantum
    if type(d) ~= "number" or d < 0.001 or d > 3600 then return false, ("step %d: duration %s"):format(s, tostring(d)) end
    if type(step.jobs) ~= "table" then return false, ("step %d: no jobs"):format(s) end
    if #step.jobs == 0 and #snap.jobs > 0 then return false, ("step %d: empty with live jobs"):format(s) end
    local seen, owner = {}, {}
    for _, e in ipairs(step.jobs) do
      for k in pairs(e) do
        if k ~= "id" and k ~= "cpus" and k ~= "mems" then return false, ("step %d: job field %s"):format(s, k) end
      end
      if not live[e.id] then return false, ("step %d: job %s not live"):format(s, tostring(e.id)) end
      if seen[e.id] then return false, ("step %d: job %d twice"):format(s, e.id) end
      seen[e.id] = true
      if type(e.cpus) ~= "table" or #e.cpus == 0 then return false, ("step %d: job %d: no cpus"):format(s, e.id) end
      for _, c in ipairs(e.cpus) do
        if not managed[c] then return false, ("step %d: job %d: cpu %s not managed"):format(s, e.id, tostring(c)) end
        local o = owner[c]      -- two never-frozen jobs may share, none with another
        if o and not step.shared and not (kept[e.id] and kept[o]) then
          return false, ("step %d: cpu %d given to jobs %d and %d without shared"):format(s, c, o, e.id)
        end
        if not (o and kept[e.id]) then owner[c] = e.id end
      end
    end
  end
  return true
end

-- Run a plan: each step in turn; listed jobs run (waited 0, quanta_run + 1,
-- last = this step), the others wait.  Returns the list of ids run per step.
function Node:run(plan, epoch_hook)
  local ran = {}
  for _, step in ipairs(plan) do
    local d = step.duration or self.quantum
    local on = {}
    for _, e in ipairs(step.jobs) do on[e.id] = e.cpus end
    local ids = {}
    for _, j in ipairs(self.jobs) do
      local c = on[j.id]
      if c then
        ids[#ids + 1] = j.id
        local n = #c
        local busy = math.min(n, j.threads, j.busy or math.huge)
        j.quanta_run = j.quanta_run + 1
        j.cpu_time = j.cpu_time + busy * d
        j.frozen = false
        j.cpus = c
        if j.shim then j.team = math.min(j.threads, n, j.busy or math.huge) end  -- the shim: teams follow the cores
        local others = {}
        for _, e in ipairs(step.jobs) do
          if e.id ~= j.id then others[#others + 1] = e.id end
        end
        local ipc = j.ipc
        if type(ipc) == "function" then ipc = ipc(others, n) end
        j.last = { wall = d, cpu = busy * d, ncpus = n, counted = self.counters and true or false,
                   metrics = self.counters and { ipc = ipc, bw_l1 = j.bw and j.bw.l1, bw_l2 = j.bw and j.bw.l2,
                                                 bw_llc = j.bw and j.bw.llc } or nil }
        if j.regions then                   -- OpenMP regions completed per second beside the others
          j.last.regions = math.floor(j.regions(others) * d + 0.5)
        end
        j.waited = 0
        j.last_end = self.now + d
      else
        j.quanta_frozen = j.quanta_frozen + 1
        j.frozen = true
        if self.last_step then            -- as the engine: every live job measured at the step's end
          j.last = { wall = d, cpu = 0, ncpus = #j.cpus, counted = self.counters and true or false, ran = false,
                     metrics = self.counters and { instructions = 0, cycles = 0 } or nil }
        end
      end
    end
    self.now = self.now + d
    for _, j in ipairs(self.jobs) do
      if not on[j.id] then j.waited = self.now - j.last_end end
    end
    ran[#ran + 1] = ids
  end
  return ran
end

-- fake.load_policy(srcdir, name [, opts]) -> policy table, params: loads
-- SRCDIR/lua/policies/NAME.lua, checks its name and api, and calls its init
-- with its parameters' defaults overridden by opts (an unknown key is an
-- error), as strings in a read-only table, as the engine passes them.
function M.load_policy(srcdir, name, opts)
  local p = assert(dofile(srcdir .. "/lua/policies/" .. name .. ".lua"))
  assert(p.name == name and p.api == 1, "bad policy table")
  local params = {}
  for k, d in pairs(p.params or {}) do params[k] = tostring(d.default) end
  for k, v in pairs(opts or {}) do
    assert(p.params[k], "unknown param " .. k)
    params[k] = tostring(v)
  end
  params = ro(params)
  if p.init then p.init(params) end
  return p, params
end

-- fake.table2(srcdir) -> rows, by_app: paper 001's Table 2
-- (SRCDIR/tests/fixtures/table2.csv), one row a table keyed by the header's
-- column names; bw_l1, bw_l2 and bw_llc as numbers, p_l2 and p_llc the reuse
-- columns as numbers ("-": math.huge); by_app[app] = its row.
function M.table2(srcdir)
  local path = srcdir .. "/tests/fixtures/table2.csv"
  local f = assert(io.open(path, "r"))
  local header, rows, by = nil, {}, {}
  for line in f:lines() do
    if not (line:match("^%s*$") or line:match("^#")) then   -- not blank, not a comment
      local cells = {}
      for c in (line .. ","):gmatch("([^,]*),") do cells[#cells + 1] = c end
      if not header then
        header = cells
      else
        local r = {}
        for i, h in ipairs(header) do r[h] = cells[i] end
        for _, k in ipairs({ "bw_l1", "bw_l2", "bw_llc" }) do
          r[k] = assert(tonumber(r[k]), "bad number in " .. path .. ": " .. line)
        end
        r.p_l2 = r.reuse_l2 == "-" and math.huge or assert(tonumber(r.reuse_l2))
        r.p_llc = r.reuse_llc == "-" and math.huge or assert(tonumber(r.reuse_llc))
        rows[#rows + 1] = r
        by[r.app] = r
      end
    end
  end
  f:close()
  return rows, by
end

-- The sandbox's library (cosched-policy(7)) as the global `cosched`, its log
-- kept in a table of "LEVEL: MSG" lines.
local log_lines = {}

function M.log_reset()
  log_lines = {}
  return log_lines
end

function M.library()
  cosched = { api = 1, version = "test", log = function(level, msg) log_lines[#log_lines + 1] = level .. ": " .. msg end }
  return M.log_reset()
end

return M
