-- tap.lua - the TAP harness shared by the Lua test scripts (tests/lua/test_*.lua):
--   local tap = require "tap"
--   local check = tap.check          -- check(name, fn): fn returns ok [, why]; errors are failures;
--                                    -- ok with a table of strings: those lines follow as "# " diagnostics
--   tap.results[#tap.results + 1] = { ok =, name = [, diag = {...}] }   -- a result made by hand
--   ...
--   tap.finish()                     -- prints "1..N" and the lines (and "# F of N failed");
--                                    -- exits 1 on any failure
local M = { results = {} }

function M.check(name, fn)
  local ok, a, b = pcall(fn)
  local r = M.results
  if not ok then
    r[#r + 1] = { ok = false, name = name .. ": error: " .. tostring(a) }
  elseif a then
    r[#r + 1] = { ok = true, name = name, diag = b }
  else
    r[#r + 1] = { ok = false, name = name .. (b and (": " .. tostring(b)) or "") }
  end
end

function M.finish()
  print("1.." .. #M.results)
  local failed = 0
  for i, r in ipairs(M.results) do
    print(("%s %d - %s"):format(r.ok and "ok" or "not ok", i, r.name))
    if type(r.diag) == "table" then
      for _, l in ipairs(r.diag) do print("# " .. l) end
    end
    if not r.ok then failed = failed + 1 end
  end
  if failed > 0 then print(("# %d of %d failed"):format(failed, #M.results)) end
  os.exit(failed == 0 and 0 or 1)
end

return M
