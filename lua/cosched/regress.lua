--[==[
cosched.regress - least squares and the fair-miss-rate model of paper 003
(Fedorova, Seltzer and Smith, "Improving Performance Isolation on Chip
Multiprocessors via an Operating System Scheduler", PACT 2007, Sec. 3.1).

    local regress = require "cosched.regress"
    local a, b = regress.fit({ 0.002, 0.004, 0.008 }, { 0.007, 0.008, 0.010 })
    local fair = regress.fair_miss_rate(a, b, 1)        -- b / (1 - a n)

fit(xs, ys) -> a, b  |  nil, reason
    Ordinary least squares of y = a x + b over the pairs (xs[i], ys[i]).
    nil when there are fewer than two pairs, a value is not a finite number,
    or the xs do not vary (var(x) = 0: no line through the points).  The
    sums are taken about the means (numerically stable for small rates).

fair_miss_rate(a, b, n) -> rate  |  nil, reason
    Eq. 1, MissRate(A) = a * sum_{i=1..n} MissRate(C_i) + b, with the paper's
    definition of fairness, FairMissRate(A) = MissRate(A) = MissRate(C_i) for
    all i, gives FairMissRate(A) = a n FairMissRate(A) + b, hence Eq. 2:
        FairMissRate(A) = b / (1 - a n)
    n is the number of co-runners.  nil when 1 - a n <= 0 (no fixed point:
    the co-runners' misses would have to be negative or infinite) or the
    result is not a positive finite number (a low-fidelity fit: the paper,
    Sec. 3.2, warns that low variation in the samples gives one).

predict(a, b, x) -> a x + b.

mean(xs) -> the arithmetic mean (nil for an empty list).
]==]

local M = {}

local function finite(x)
  return type(x) == "number" and x == x and x > -math.huge and x < math.huge
end

function M.mean(xs)
  local n = #xs
  if n == 0 then return nil end
  local s = 0
  for i = 1, n do s = s + xs[i] end
  return s / n
end

function M.fit(xs, ys)
  local n = #xs
  if n ~= #ys then return nil, "xs and ys differ in length" end
  if n < 2 then return nil, "fewer than two samples" end
  for i = 1, n do
    if not finite(xs[i]) or not finite(ys[i]) then return nil, "a sample is not a finite number" end
  end
  local mx, my = M.mean(xs), M.mean(ys)
  local sxx, sxy = 0, 0
  for i = 1, n do
    local dx = xs[i] - mx
    sxx = sxx + dx * dx
    sxy = sxy + dx * (ys[i] - my)
  end
  if not (sxx > 0) or sxx <= 1e-30 * math.max(1, mx * mx) * n then
    return nil, "the co-runner miss rates do not vary"
  end
  local a = sxy / sxx
  return a, my - a * mx
end

function M.predict(a, b, x)
  return a * x + b
end

function M.fair_miss_rate(a, b, n)
  if not finite(a) or not finite(b) or type(n) ~= "number" or n < 0 then
    return nil, "bad coefficients"
  end
  local den = 1 - a * n
  if not (den > 0) then
    return nil, ("1 - a n = %.6g <= 0: no fair point"):format(den)
  end
  local f = b / den
  if not finite(f) or not (f > 0) then
    return nil, ("fair miss rate %.6g is not positive"):format(f)
  end
  return f
end

return M
