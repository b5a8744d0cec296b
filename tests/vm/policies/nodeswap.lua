--[==[
nodeswap - a test policy for the VM test bed (tests/vm/30-numa.bats), not a
scheduling policy: it exists to move jobs between NUMA nodes on a schedule
the test knows, so that the test can see whether their memory follows.

Plan: every epoch, one step; job k (in snapshot order, from 0) runs on all
CPUs of NUMA node (k + floor(epoch / period)) mod nodes, with mems = that
node: every `period` epochs each job moves, cores and memory, to the next
node, `moves` times at most, then it stays where it is (so that a test can
look at the moved job without racing the next move).  Needs at least two
NUMA nodes with managed CPUs (one node: every job stays on it).

Parameters:
  period = 4   epochs a job stays on a node (integer >= 1)
  moves  = 0   moves in all (integer >= 0; 0: no limit)
]==]

local period, moves = 4, 0

return {
  api = 1,
  name = "nodeswap",
  description = "test only: every job moves to the next NUMA node (cores and mems) every `period` epochs",
  params = {
    period = { default = 4, help = "epochs a job stays on a node" },
    moves = { default = 0, help = "moves in all, then stay (0: no limit)" },
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
    local entries = {}
    for k, job in ipairs(snap.jobs) do
      if #nodes == 0 then
        entries[#entries + 1] = { id = job.id, cpus = snap.cpus }
      else
        local step = snap.epoch // period
        if moves > 0 and step > moves then step = moves end
        local n = nodes[(k - 1 + step) % #nodes + 1]
        entries[#entries + 1] = { id = job.id, cpus = n.cpus, mems = { n.os_index } }
      end
    end
    return { { shared = true, jobs = entries } }
  end,
}
