-- GCRA (the generic cell rate algorithm) for one key, as teams deploy it in
-- Redis: the key holds the theoretical arrival time (TAT). The caller
-- passes the time as an argument, so a replay on a virtual clock decides as
-- the same script would live (a live deployment passes its own clock, or
-- reads redis.call("TIME")).
--
-- KEYS[1]  the key's TAT
-- ARGV[1]  now, ns        ARGV[2]  emission interval T, ns
-- ARGV[3]  tolerance tau = T * (burst - 1), ns        ARGV[4]  cells n
-- Returns 1 (admitted, TAT advanced) or 0 (denied, TAT untouched).
--
-- Lua numbers are doubles: the arithmetic is exact for times below 2^53 ns
-- (104 days). No expiry is set: an expiry runs on Redis's wall clock, which
-- a virtual-time replay must not depend on.
local now = tonumber(ARGV[1])
local t = tonumber(ARGV[2])
local tau = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local extra = t * (n - 1)
if n < 1 or extra > tau then
  return 0
end
local tat = tonumber(redis.call("GET", KEYS[1])) or now
local earliest = tat + extra - tau
if now < earliest then
  return 0
end
local next_tat = math.max(tat, now) + t + extra
redis.call("SET", KEYS[1], string.format("%.0f", next_tat))
return 1
