--[[
cosched.rotation - fair round-robin choice of jobs.

    local rotation = require "cosched.rotation"
    local run = rotation.pick(snap, 2)     -- the 2 jobs whose turn it is

order(snap [, jobs])
    All jobs (default snap.jobs) in the order in which they are owed CPU
    time, as a new plain list:
      1. jobs that have never run (quanta_run == 0) first;
      2. then the job that has waited longest: waited is compared in whole
         quanta (waited / snap.quantum rounded to the nearest integer), so
         that jobs stopped at the same switch count as equal even when the
         engine stopped them a few microseconds apart;
      3. then fewer quanta run first (among the jobs that ran in the last
         step, waited is 0 for all: the one that has had less goes on);
      4. then the lowest id.

pick(snap, k [, jobs])
    The first k jobs of order() (fewer if there are fewer jobs); by
    selection when k is small (O(n)), else by sorting.

first(n, k, before [, skip]) -> indices
    The first k of the indices 1..n in the order before(i, j) (a strict
    total order), leaving out those skip(i) is true for: a selection, one
    pass, O(n) comparisons plus O(k) per index that enters the k first;
    what pick() uses for small k, and the other policies' selections of the
    k oldest or most owed (cosched.ageing, cosched.pairing, cachefair).

Cost: the keys are read once per job; order() packs them into one integer
per job (never-ran bit, waited quanta, quanta run, id) and sorts integers
when they fit (ids and waits below 2^20, quanta below 2^22), else sorts
with a comparator over arrays: O(n log n); pick() with a small k is a
selection, O(n).

Why it is fair: with one step per epoch and k of n jobs per step, the jobs
not picked wait and rise to the front (rule 2), the ones picked drop to the
back, and among equals rule 3 prefers the one behind in quanta.  This is a
circular queue served k at a time: after any number of steps, every job that
was live throughout has run the same number of quanta, plus or minus one.
Policies that return several steps per epoch must rotate within the epoch
themselves (order() once, then walk the list).

The snapshot only says how long a job waited, not when it arrived: a job
that arrives later is not owed the quanta the others ran before it came;
rule 1 only makes sure it runs at once.
]]

local M = {}

local floor = math.floor

-- The keys of the jobs in parallel arrays (read once from the snapshot's
-- read-only tables), and the comparison of two positions.
local function keys(snap, jobs)
  local unit = (snap.quantum and snap.quantum > 0) and snap.quantum or 1
  local n = #jobs
  local nr, k, q, id = {}, {}, {}, {}
  for i = 1, n do
    local j = jobs[i]
    local qr = j.quanta_run
    nr[i], k[i], q[i], id[i] = qr == 0, floor(j.waited / unit + 0.5), qr, j.id
  end
  local function before(a, b)
    local na, nb = nr[a], nr[b]
    if na ~= nb then return na end
    if k[a] ~= k[b] then return k[a] > k[b] end
    if q[a] ~= q[b] then return q[a] < q[b] end
    return id[a] < id[b]
  end
  return n, before
end

-- The order packed into one integer per job when every field fits (ids
-- and waits below 2^20 quanta, quanta run below 2^22): then the sort
-- compares plain integers, no Lua comparator.  Lower sorts first.
local ID_BITS, Q_BITS, K_BITS = 20, 22, 20
local function packed(snap, jobs)
  local unit = (snap.quantum and snap.quantum > 0) and snap.quantum or 1
  local kmax, qmax, idmax = (1 << K_BITS) - 1, (1 << Q_BITS) - 1, (1 << ID_BITS) - 1
  local keys, byid = {}, {}
  for i = 1, #jobs do
    local j = jobs[i]
    local q, id = j.quanta_run, j.id
    local k = floor(j.waited / unit + 0.5)
    if not (math.type(id) == "integer" and id >= 0 and id <= idmax and math.type(q) == "integer"
            and q >= 0 and q <= qmax and k >= 0 and k <= kmax) or byid[id] then
      return nil
    end
    byid[id] = j
    keys[i] = ((q == 0 and 0 or 1) << (K_BITS + Q_BITS + ID_BITS))
      | ((kmax - k) << (Q_BITS + ID_BITS)) | (q << ID_BITS) | id
  end
  return keys, byid
end

function M.order(snap, jobs)
  jobs = jobs or snap.jobs
  local pk, byid = packed(snap, jobs)
  if pk then
    table.sort(pk)
    local list, mask = {}, (1 << ID_BITS) - 1
    for i = 1, #pk do list[i] = byid[pk[i] & mask] end
    return list
  end
  local n, before = keys(snap, jobs)
  local idx = {}
  for i = 1, n do idx[i] = i end
  table.sort(idx, before)
  local list = {}
  for i = 1, n do list[i] = jobs[idx[i]] end
  return list
end

-- The first k of order() by selection (one pass, O(n) comparisons plus O(k)
-- per job that enters the k first): what pick() needs for small k.
function M.pick(snap, k, jobs)
  jobs = jobs or snap.jobs
  local n, before = keys(snap, jobs)
  if k * 8 > n then
    local list, out = M.order(snap, jobs), {}
    for i = 1, math.min(k, #list) do out[i] = list[i] end
    return out
  end
  local best = M.first(n, k, before)
  local out = {}
  for i = 1, #best do out[i] = jobs[best[i]] end
  return out
end

function M.first(n, k, before, skip)
  local best, nb = {}, 0
  if k <= 0 then return best end
  for i = 1, n do
    if not (skip and skip(i)) and (nb < k or before(i, best[nb])) then
      local j = nb < k and nb + 1 or nb
      while j > 1 and before(i, best[j - 1]) do
        best[j] = best[j - 1]
        j = j - 1
      end
      best[j] = i
      if nb < k then nb = nb + 1 end
    end
  end
  return best
end

return M
