-- reserve.lua: reserves tokens for a request at admission (docs/DATA_MODEL.md §9),
-- idempotent per request id.
--
-- Releases the reservations lapsed by ARGV[2] first. Then grants
-- min(prompt + wanted, limit − used − reserved) when at least max(1, min(minimum, wanted))
-- completion tokens fit (the rule of BudgetArithmetic.grant), records `r:<id>`, adds it
-- to `reserved`, schedules its lapse and sets both keys' TTL.
--
-- KEYS[1] budget: relay:budget:{u:<ownerHash>}:<YYYY-MM> (hash of tokens: used, reserved,
--         r:<id> a reservation, s:<id> a settlement)
-- KEYS[2] expiries: the budget key + `:expiries` (sorted set: id, score its lapse time, unix ms)
-- ARGV[1] id: the request id
-- ARGV[2] now: unix ms (reservations lapsed by then are released)
-- ARGV[3] lapse: when this reservation lapses unless refreshed, unix ms
-- ARGV[4] limit: the budget's limit, tokens
-- ARGV[5] prompt: the prompt estimate, tokens
-- ARGV[6] wanted: the completion tokens wanted
-- ARGV[7] minimum: the fewest completion tokens worth a generation
-- ARGV[8] ttl_ms: lifetime of both keys, ms
-- Reply {1, tokens}: granted, tokens held (also for an id reserved before: its tokens)
-- Reply {0, remaining}: refused; remaining = limit − used − reserved, tokens (≥ 0)
-- Reply {2, 0}: the id was settled already (its stream ran before)

for _, r in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])) do
  local g = redis.call('HGET', KEYS[1], 'r:' .. r)
  if g then
    redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(g))
    redis.call('HDEL', KEYS[1], 'r:' .. r)
  end
  redis.call('ZREM', KEYS[2], r)
end
local held = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
if held then return {1, tonumber(held)} end
if redis.call('HEXISTS', KEYS[1], 's:' .. ARGV[1]) == 1 then return {2, 0} end
local used = tonumber(redis.call('HGET', KEYS[1], 'used') or '0')
local reserved = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')
local remaining = tonumber(ARGV[4]) - used - reserved
if remaining < 0 then remaining = 0 end
local prompt = tonumber(ARGV[5])
local wanted = tonumber(ARGV[6])
local grant = math.min(prompt + wanted, remaining)
if grant - prompt < math.max(1, math.min(tonumber(ARGV[7]), wanted)) then return {0, remaining} end
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], grant)
redis.call('HINCRBY', KEYS[1], 'reserved', grant)
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
redis.call('PEXPIRE', KEYS[2], ARGV[8])
return {1, grant}
