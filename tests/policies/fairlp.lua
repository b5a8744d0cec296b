-- test policy: call cosched.fair_lp once, in the first plan, on a case solved
-- by hand and on bad arguments, and log what it returned or raised (one line
-- each, "fair_lp ..."); then run every job on every cpu
local function show(label, ...)
  local ok, x, why = pcall(cosched.fair_lp, ...)
  if not ok then
    cosched.log("info", "fair_lp " .. label .. " error " .. tostring(x))
  elseif not x then
    cosched.log("info", "fair_lp " .. label .. " nil " .. tostring(why))
  else
    local parts = {}
    for i, v in ipairs(x) do parts[i] = ("%.6f"):format(v) end
    cosched.log("info", "fair_lp " .. label .. " x " .. table.concat(parts, " "))
  end
end

return { api = 1, name = "fairlp", description = "test: cosched.fair_lp's answers and refusals",
  plan = function(snap)
    if snap.epoch == 1 then
      cosched.log("info", "fair_lp present " .. tostring(cosched.fair_lp ~= nil))
      if cosched.fair_lp then
        -- x alone (1, 0), y alone (0, 1), the pair (0.9, 0.3); floor 1/2:
        -- the pair 5/7 of the time, y alone 2/7 (the sum 8/7 at most)
        show("hand", { { 1, 0 }, { 0, 1 }, { 0.9, 0.3 } }, 0.5)
        show("perjob", { { 1, 0 }, { 0, 1 }, { 0.9, 0.3 } }, { 0.25, 0.5 })
        show("infeasible", { { 0.1, 0.1 } }, 0.5)
        show("string", { { 1, "a" } }, 0.5)
        show("nan", { { 1, 0 / 0 } }, 0.5)
        show("ragged", { { 1, 0 }, { 1 } }, 0.5)
        show("floorlen", { { 1, 0 } }, { 1 })
        show("empty", {}, 0.5)
        show("negfloor", { { 1, 0 } }, -1)
        show("strfloor", { { 1, 0 } }, "0.5")
        show("notlist", { 5 }, 0.5)
        local big = {}
        for c = 1, 300 do
          local row = {}
          for j = 1, 64 do row[j] = 1 end
          big[c] = row
        end
        show("big", big, 0)
      end
    end
    local jobs = {}
    for i, j in ipairs(snap.jobs) do jobs[i] = { id = j.id, cpus = snap.cpus } end
    return { { jobs = jobs, shared = true } }
  end }
