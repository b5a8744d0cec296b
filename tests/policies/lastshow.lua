-- test policy: fold the jobs two by two on the halves of the node, one pair
-- a step, and log, for every job that ran in the last step, the CPUs the
-- snapshot says it was given (last.ncpus) and ran on (last.cpus); "restarted"
-- when its instance ended during that step (job.runs moved on)
local runs = {}
return { api = 1, name = "lastshow", description = "test: log last.ncpus against last.cpus",
  plan = function(snap)
    for _, j in ipairs(snap.jobs) do
      if j.last and j.last.ran then
        cosched.log("info", string.format("job %d %s ncpus %d cpus %d", j.id,
          runs[j.id] and runs[j.id] ~= j.runs and "restarted" or "ran", j.last.ncpus, #j.last.cpus))
      end
      runs[j.id] = j.runs
    end
    local half = #snap.cpus // 2
    local lo, hi = {}, {}
    for i, c in ipairs(snap.cpus) do table.insert(i <= half and lo or hi, c) end
    local a = snap.jobs[1 + (2 * snap.epoch) % #snap.jobs]
    local b = snap.jobs[1 + (2 * snap.epoch + 1) % #snap.jobs]
    local jobs = { { id = a.id, cpus = lo } }
    if b ~= a then jobs[2] = { id = b.id, cpus = hi } end
    return { { jobs = jobs } }
  end }
