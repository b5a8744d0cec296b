-- test policy: characterize every job (cosched.characterize) and report
local ch = require "cosched.characterize"
local c
return { api = 1, name = "phasepol", description = "test: characterize and report",
  init = function(params) c = ch.new({}) end,
  plan = function(snap)
    c:update(snap)
    local part = c:plan_step(snap)
    local jobs, placed = {}, {}
    for _, e in ipairs(part.jobs) do jobs[#jobs + 1] = e; placed[e.id] = true end
    for _, j in ipairs(snap.jobs) do
      if not placed[j.id] and #part.left > 0 then
        jobs[#jobs + 1] = { id = j.id, cpus = part.left }
        break
      end
    end
    for _, j in ipairs(snap.jobs) do
      local i = c:info(j.id)
      cosched.log("info", string.format("epoch %d job %d class %s ready %s characterizing %s rechar %d",
        snap.epoch, j.id, tostring(i.class), tostring(i.ready), tostring(i.characterizing),
        i.recharacterizations or 0))
    end
    return { { jobs = jobs } }
  end }
