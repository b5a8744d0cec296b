--[==[
nodeswap - a test policy for the VM test bed (tests/vm/30-numa.bats), not a
scheduling policy: it exists to move jobs between NUMA nodes on a schedule
the test knows, so that the test can see whether their memory follows.

Plan: every epoch, one step; job k (in snapshot order, from 0) runs on all
CPUs of NUMA node (k + m) mod nodes, with mems = that node, where m is the
number of moves the job has made.  A job moves to the next node (cores and
memory) once it has been on its node for `period` epochs - counted, with
settle = P > 0, from the first epoch at which job.memory showed at least P
pages, 90 % of them on that node - and it moves `moves` times at most, then
it stays where it is (so that a test can look at the moved job without
racing the next move).  settle makes the schedule independent of how fast
the machine is: on a slow emulated VM a job may take longer than `period`
epochs to write its pages, and a move before that moves nothing worth
checking.  Needs at least two NUMA nodes with managed CPUs (one node: every
job stays on it).

Parameters:
  period = 4   epochs a job stays on a node (integer >= 1)
  moves  = 0   moves in all (integer >= 0; 0: no limit)
  settle = 0   pages a job must have, 90 % on its node, before its period
               starts (integer >= 0; 0: from its arrival on the node)
]==]

local period, moves, settle = 4, 0, 0
local moved, since = {}, {}   -- per job id: moves made, epoch its period started

return {
  api = 1,
  name = "nodeswap",
  description = "test only: every job moves to the next NUMA node (cores and mems) after `period` epochs on one",
  params = {
    period = { default = 4, help = "epochs a job stays on a node" },
    moves = { default = 0, help = "moves in all, then stay (0: no limit)" },
    settle = { default = 0, help = "pages (90 % on the node) before a job's period starts (0: at once)" },
  },

  init = function(params)
    period = math.tointeger(tonumber(params.period))
    if not period or period < 1 then
      return nil, "period must be an integer >= 1"
    end
    moves = math.tointeger(tonumber(params.moves))
    if not moves or moves < 0 then
      return nil, "moves must be an integer >= 0"
    end
    settle = math.tointeger(tonumber(params.settle))
    if not settle or settle < 0 then
      return nil, "settle must be an integer >= 0"
    end
  end,

  plan = function(snap)
    local managed, nodes = {}, {}
    for _, c in ipairs(snap.cpus) do managed[c] = true end
    for idx, node in ipairs(snap.topology.numa) do
      local cpus = {}
      for _, core in ipairs(snap.topology.cores) do
        if core.numa == idx then
          for _, c in ipairs(core.pus) do
            if managed[c] then cpus[#cpus + 1] = c end
          end
        end
      end
      if #cpus > 0 then nodes[#nodes + 1] = { os_index = node.os_index, cpus = cpus } end
    end
    local entries, live = {}, {}
    for k, job in ipairs(snap.jobs) do
      live[job.id] = true
      if #nodes == 0 then
        entries[#entries + 1] = { id = job.id, cpus = snap.cpus }
      else
        local m = moved[job.id] or 0
        local n = nodes[(k - 1 + m) % #nodes + 1]
        if not since[job.id] then
          local mem = job.memory
          local frac = mem and mem.nodes and mem.nodes[n.os_index] or 0
          if settle == 0 or (mem and (mem.pages or 0) >= settle and frac >= 0.9) then
            since[job.id] = snap.epoch
          end
        end
        if since[job.id] and snap.epoch - since[job.id] >= period and (moves == 0 or m < moves) then
          moved[job.id], since[job.id] = m + 1, settle == 0 and snap.epoch or nil
          n = nodes[(k + m) % #nodes + 1]
        end
        entries[#entries + 1] = { id = job.id, cpus = n.cpus, mems = { n.os_index } }
      end
    end
    for id in pairs(moved) do if not live[id] then moved[id], since[id] = nil, nil end end
    for id in pairs(since) do if not live[id] then since[id] = nil end end
    return { { shared = true, jobs = entries } }
  end,
}
