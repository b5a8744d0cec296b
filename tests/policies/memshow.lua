return { api = 1, name = "memshow", description = "test: log job.memory",
  plan = function(snap)
    for _, j in ipairs(snap.jobs) do
      if j.memory then
        cosched.log("info", string.format("job %d memory pages %.0f home %d node0 %.2f", j.id, j.memory.pages, j.memory.home, j.memory.nodes[0] or -1))
      else
        cosched.log("info", string.format("job %d memory unknown", j.id))
      end
    end
    local jobs = {}
    for _, j in ipairs(snap.jobs) do jobs[#jobs+1] = { id = j.id, cpus = snap.cpus } end
    return { { shared = true, jobs = jobs } }
  end }
