--[==[
cosched.cpus - CPU lists, and splitting the managed CPUs into groups that
follow the node's topology.

    local cpus = require "cosched.cpus"
    local groups, level = cpus.split(snap, 2)      -- two halves
    -- level: "llc", "numa", "core" or "pu": the boundaries the groups follow

A CPU list is a Lua sequence of PU OS indexes (what snap.cpus and
snap.topology.*.cpus hold).  Every function here returns fresh, plain,
sorted tables that the caller may modify; the snapshot's own lists are
read-only.

split(snap, k [, by [, within]])
    Split the managed CPUs (or only those in the list `within`) into k
    contiguous groups of nearly equal size and return them with the name of
    the level whose boundaries they follow.  `by` is "auto" (default),
    "llc", "numa", "core" or "pu".
      auto: the first of these that works -
        llc   when there are at least k last-level-cache domains and cutting
              at their boundaries gives groups within 25 % of the ideal size
              (or no worse than the best cut between cores);
        numa  the same with NUMA nodes;
        core  cut between cores (hyperthreads of a core stay together);
        pu    cut between hardware threads (fewer cores than k), still in
              topology order.
      llc/numa/core/pu: that level when it has at least k units, whatever
        the balance; else the next finer level.
    With fewer than k CPUs the result has fewer (one-CPU) groups; with no
    CPUs, no groups.

hsplit(snap, k [, within])
    Hierarchical split for placing k units (paper 001 Sec. 6, "richer
    memory hierarchies": F-LCA "in an hierarchical mode, with separate F-LCA
    modules" per NUMA/cache island).  The NUMA nodes of within, in NUMA
    order: k <= nodes: k contiguous groups of whole nodes; k > nodes: the k
    groups are dealt to the nodes in proportion to their CPUs (largest
    remainder, at least one each) and each node is split by split(..,
    "llc", node): so no group spans two NUMA nodes, and the groups come in
    NUMA order, LLC domains inside.  One NUMA node: split(snap, k, "llc").

numa_nodes(snap, within) -> { { numa = index|false, cpus }, ... } in NUMA order.

units(snap, level, within) -> { {cpus...}, ... }
    The CPUs of the list within grouped by level ("llc", "numa", "core" or
    "pu"), one group per unit, in topology order (nil when a core has no
    such domain).

copy(list), set(list), count(list, set), overlap(a, b), union(a, b), minus(a, b),
format(list)
    See each function below.

Cost: split() walks the topology through the read-only snapshot; on a
128-CPU node it takes a few hundred microseconds.  The result depends only
on the managed CPUs, so a policy that splits every epoch should cache it
(tft keys its cache on table.concat(snap.cpus, ",")).
]==]

local M = {}

local floor, abs = math.floor, math.abs

--- Plain sorted copy of a list, duplicates removed.
function M.copy(list)
  local seen, out = {}, {}
  for _, c in ipairs(list) do
    if not seen[c] then
      seen[c] = true
      out[#out + 1] = c
    end
  end
  table.sort(out)
  return out
end

--- { [cpu] = true } for a list.
function M.set(list)
  local s = {}
  for _, c in ipairs(list) do s[c] = true end
  return s
end

--- Number of distinct CPUs of list that are in set (a table from set()).
function M.count(list, set)
  local n, seen = 0, {}
  for _, c in ipairs(list) do
    if set[c] and not seen[c] then
      seen[c] = true
      n = n + 1
    end
  end
  return n
end

--- Number of CPUs present in both lists.
function M.overlap(a, b)
  return M.count(a, M.set(b))
end

--- Sorted union of two lists.
function M.union(a, b)
  local all = {}
  for _, c in ipairs(a) do all[#all + 1] = c end
  for _, c in ipairs(b) do all[#all + 1] = c end
  return M.copy(all)
end

--- CPUs of a that are not in b, sorted.
function M.minus(a, b)
  local s, out = M.set(b), {}
  for _, c in ipairs(M.copy(a)) do
    if not s[c] then out[#out + 1] = c end
  end
  return out
end

--- "0-3,8,10-11" (the kernel's cpulist format).
function M.format(list)
  local l, parts, i = M.copy(list), {}, 1
  while i <= #l do
    local j = i
    while j < #l and l[j + 1] == l[j] + 1 do j = j + 1 end
    parts[#parts + 1] = (j > i) and (l[i] .. "-" .. l[j]) or tostring(l[i])
    i = j + 1
  end
  return table.concat(parts, ",")
end

--- Units of a level, in topology order: { {cpus...}, ... }, or nil when the
--- level does not apply (a core without that domain).
function M.units(snap, level, within)
  local units, byid = {}, {}
  local keep = M.set(within)
  if level == "pu" then
    -- core by core, so that hyperthreads of a core stay next to each other
    for _, core in ipairs(snap.topology.cores) do
      for _, c in ipairs(core.pus) do
        if keep[c] then
          units[#units + 1] = { c }
          keep[c] = nil
        end
      end
    end
    for _, c in ipairs(within) do            -- CPUs of no listed core
      if keep[c] then units[#units + 1] = { c } end
    end
    return units
  end
  for _, core in ipairs(snap.topology.cores) do
    local pus = {}
    for _, c in ipairs(core.pus) do
      if keep[c] then pus[#pus + 1] = c end
    end
    if #pus > 0 then
      local id
      if level == "core" then
        id = core.index
      else
        id = core[level]              -- core.llc or core.numa
        if id == nil then return nil end
      end
      local u = byid[id]
      if not u then
        u = {}
        byid[id] = u
        units[#units + 1] = u
      end
      for _, c in ipairs(pus) do u[#u + 1] = c end
    end
  end
  return units
end

-- Cut the sequence of units into k contiguous groups whose sizes are as close
-- as possible to total/k (each cut at the unit boundary nearest to its ideal
-- position).  Needs #units >= k.
local function cut(units, k)
  local total, prefix = 0, { [0] = 0 }
  for i, u in ipairs(units) do
    total = total + #u
    prefix[i] = total
  end
  local n, cuts, last = #units, {}, 0
  for g = 1, k - 1 do
    local ideal = total * g / k
    -- leave at least one unit for each remaining group
    local lo, hi = last + 1, n - (k - g)
    local best = lo
    for i = lo, hi do
      if abs(prefix[i] - ideal) < abs(prefix[best] - ideal) then best = i end
    end
    cuts[g] = best
    last = best
  end
  cuts[k] = n
  local groups, from = {}, 1
  for g = 1, k do
    local grp = {}
    for i = from, cuts[g] do
      for _, c in ipairs(units[i]) do grp[#grp + 1] = c end
    end
    table.sort(grp)
    groups[g] = grp
    from = cuts[g] + 1
  end
  return groups
end

-- Largest distance of a group's size from total/k, and total/k.
local function maxdev(groups, k)
  local total, dev = 0, 0
  for _, g in ipairs(groups) do total = total + #g end
  local ideal = total / k
  for _, g in ipairs(groups) do
    if abs(#g - ideal) > dev then dev = abs(#g - ideal) end
  end
  return dev, ideal
end

local order = { llc = 1, numa = 2, core = 3, pu = 4 }
local levels = { "llc", "numa", "core", "pu" }

--- NUMA nodes of a cpu list, in NUMA order (core.numa ascending; cores
--- without one last): { { numa = index or false, cpus = {...} }, ... }.
function M.numa_nodes(snap, within)
  local keep, byid, nodes = M.set(within), {}, {}
  for _, core in ipairs(snap.topology.cores) do
    local id = core.numa or false
    for _, c in ipairs(core.pus) do
      if keep[c] then
        local n = byid[id]
        if not n then
          n = { numa = id, cpus = {} }
          byid[id] = n
          nodes[#nodes + 1] = n
        end
        n.cpus[#n.cpus + 1] = c
        keep[c] = nil
      end
    end
  end
  table.sort(nodes, function(a, b)
    if a.numa == false or b.numa == false then return b.numa == false and a.numa ~= false end
    return a.numa < b.numa
  end)
  for _, n in ipairs(nodes) do table.sort(n.cpus) end
  return nodes
end

--- See the header (hsplit).
function M.hsplit(snap, k, within)
  within = M.copy(within or snap.cpus)
  local nodes = M.numa_nodes(snap, within)
  if #nodes <= 1 or #within < k then return M.split(snap, k, "llc", within) end
  if k <= #nodes then
    -- whole nodes per group, contiguous in NUMA order
    local units = {}
    for i, n in ipairs(nodes) do units[i] = n.cpus end
    return cut(units, k), "numa"
  end
  -- k groups dealt to the nodes in proportion to their cpus (largest
  -- remainder, at least one each, at most one per cpu), split inside each
  local total, alloc, rem, sum = #within, {}, {}, 0
  for i, n in ipairs(nodes) do
    local share = k * #n.cpus / total
    alloc[i] = math.max(1, math.min(#n.cpus, floor(share)))
    rem[i] = share - floor(share)
    sum = sum + alloc[i]
  end
  while sum ~= k do
    local best
    for i, n in ipairs(nodes) do
      if sum < k and alloc[i] < #n.cpus and (not best or rem[i] > rem[best]) then best = i end
      if sum > k and alloc[i] > 1 and (not best or rem[i] < rem[best]) then best = i end
    end
    if not best then break end
    local d = sum < k and 1 or -1
    alloc[best], sum, rem[best] = alloc[best] + d, sum + d, rem[best] - d
  end
  local groups = {}
  for i, n in ipairs(nodes) do
    for _, g in ipairs((M.split(snap, alloc[i], "llc", n.cpus))) do groups[#groups + 1] = g end
  end
  return groups, "numa"
end

--- See the header.
function M.split(snap, k, by, within)
  by = by or "auto"
  assert(type(k) == "number" and k >= 1 and floor(k) == k,
         "cpus.split: k must be a positive integer")
  assert(by == "auto" or order[by], "cpus.split: by must be auto, llc, numa, core or pu")
  within = M.copy(within or snap.cpus)
  if #within == 0 then return {}, "pu" end
  if #within < k then
    local groups = {}
    for i, c in ipairs(within) do groups[i] = { c } end
    return groups, "pu"
  end
  local first = (by == "auto") and 1 or order[by]
  local finest                            -- deviation of a cut between cores
  for i = first, #levels do
    local level = levels[i]
    local units = M.units(snap, level, within)
    if units and #units >= k and (level ~= "llc" and level ~= "numa" or #units > 1) then
      local groups = cut(units, k)
      if by ~= "auto" or level == "core" or level == "pu" then
        return groups, level
      end
      if not finest then
        local cores = M.units(snap, "core", within)
        if #cores < k then cores = M.units(snap, "pu", within) end
        finest = maxdev(cut(cores, k), k)
      end
      local dev, ideal = maxdev(groups, k)
      if dev <= math.max(0.25 * ideal, finest) then
        return groups, level
      end
    end
  end
  error("cpus.split: no split found")   -- unreachable: pu always works
end

return M
