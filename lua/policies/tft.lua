--[[
tft - thread folding: two jobs at a time, each on half of the managed CPUs.

Implements: the Thread Folding Technique (TFT) of Haritatos et al.,
"Contention-aware scheduling policies for fairness and throughput" (paper
001), Sec. 4.1.  Where Gang gives the whole node to one job per quantum, TFT
folds each job onto half of the cores and runs two jobs side by side every
quantum: over a window each job gets the same CPU time as under Gang, but
jobs that do not scale (memory-bound "S" jobs, self-interference) lose
nothing by having half the cores and run twice as often.

Plan: every epoch, one step of one quantum:
  - the managed CPUs are split in two halves with cosched.cpus.split: the
    halves follow last-level-cache domains when there are several (and the
    cut is balanced), else NUMA nodes, else they are plain halves cut between
    cores (hyperthreads of one core stay together);
  - the two jobs whose turn it is (cosched.rotation: never ran, else waited
    longest in whole quanta, then fewer quanta run, then lowest id) get one
    half each; the other jobs are frozen.  A job that keeps running keeps
    the half it had (warm caches); a job coming back from a pause gets its
    old half when the running one does not hold it.
  Fairness: with n live jobs, the pairs rotate as a circular queue served
  two at a time; over any number of steps every job (live throughout) runs
  the same number of quanta, plus or minus one.  With an odd n, one job
  sits out each quantum and a different one next time.
  Special cases:
  - one live job: it runs alone on ALL managed CPUs.  Folding it onto half
    (the paper's TFT applied to a single application) would leave the other
    half idle for nothing; the pair forms again as soon as a second job is
    live.
  - one managed CPU: nothing to fold; tft degenerates to gang (one job per
    quantum, round robin) and says so once in the log.
  - no live job: an empty step.
  Memory placement (mems) is left alone.

Threads versus CPUs: a job gets its half whatever its thread count.  With
more threads than CPUs in its half (the usual case: a job sized for the
whole node) the kernel time-shares its threads inside the half - that is
the folding.  With fewer threads than CPUs in the half, the rest of the
half stays idle (cosched does not lend it to the partner), except when the
job runs alone, where it gets every CPU and idles even more of them.

Parameters (--policy-opt key=value):
  split = auto   where to cut the halves: auto (as above), llc, numa, core
                 or pu; a level that has fewer than two domains falls back
                 to the next finer one (logged once).

When not to use it: a cache-sensitive ("C") job paired with a streaming
("S") job loses throughput to cache thrashing (paper 001 Sec. 4.1, Fig. 7;
lca and f-lca pair jobs by class to avoid it); jobs with heavy lock
contention or barriers every few microseconds prefer gang, where all their
threads run at once (Sec. 6); jobs sized to half the node gain nothing.
]]

local cpus = require "cosched.cpus"
local rotation = require "cosched.rotation"

local split_by = "auto"
local said = {}                     -- log lines already written

local function once(key, msg)
  if not said[key] then
    said[key] = true
    cosched.log("info", msg)
  end
end

local levels = { auto = true, llc = true, numa = true, core = true, pu = true }

-- The halves depend only on the managed CPUs: split once, reuse.
local cache = { key = nil }

local function halves_of(snap)
  local key = table.concat(snap.cpus, ",")
  if cache.key ~= key then
    local groups, level = cpus.split(snap, 2, split_by)
    cache = { key = key, groups = groups, sets = { cpus.set(groups[1]), cpus.set(groups[2]) } }
    once("split:" .. key, ("halves follow %s boundaries: %s | %s"):format(
      level, cpus.format(groups[1]), cpus.format(groups[2])))
    if split_by ~= "auto" and level ~= split_by then
      once("fallback:" .. level, ("split = %s: fewer than two %s domains, cut at %s level")
        :format(split_by, split_by, level))
    end
  end
  return cache
end

return {
  api = 1,
  name = "tft",
  description = "Thread folding (TFT): two jobs at a time, each on half of the managed CPUs",
  params = {
    split = { default = "auto", help = "where to cut the halves: auto, llc, numa, core or pu" },
  },

  init = function(params)
    if not levels[params.split] then
      error(("split = '%s': expected auto, llc, numa, core or pu"):format(params.split), 0)
    end
    split_by = params.split
  end,

  plan = function(snap)
    local jobs = snap.jobs
    if #jobs == 0 then
      return { { jobs = {} } }
    end
    if #snap.cpus == 1 then
      once("one-cpu", "one managed CPU: nothing to fold, running as gang (one job per quantum)")
      local job = rotation.pick(snap, 1)[1]
      return { { jobs = { { id = job.id, cpus = snap.cpus } } } }
    end
    if #jobs == 1 then
      return { { jobs = { { id = jobs[1].id, cpus = snap.cpus } } } }
    end

    local h = halves_of(snap)
    local pair = rotation.pick(snap, 2)
    local a, b = pair[1], pair[2]
    -- keep a job on the half it holds: the running jobs' claims (warm
    -- caches) decide first, a frozen job's (it ran there a while ago) next
    local function claims(first, second)
      local running, all = 0, 0
      for half, job in ipairs { first, second } do
        local n = cpus.count(job.cpus, h.sets[half])
        all = all + n
        if not job.frozen then running = running + n end
      end
      return running, all
    end
    local run_keep, all_keep = claims(a, b)
    local run_swap, all_swap = claims(b, a)
    if run_swap > run_keep or (run_swap == run_keep and all_swap > all_keep) then
      a, b = b, a
    end
    local halves = h.groups
    return { {
      jobs = {
        { id = a.id, cpus = halves[1] },
        { id = b.id, cpus = halves[2] },
      },
    } }
  end,
}
