-- read.lua: a budget's `used` and `reserved` (docs/DATA_MODEL.md §9), the reservations
-- lapsed by ARGV[1] released first.
--
-- KEYS[1] budget: relay:budget:{u:<ownerHash>}:<YYYY-MM> (hash of tokens: used, reserved,
--         r:<id> a reservation, s:<id> a settlement)
-- KEYS[2] expiries: the budget key + `:expiries` (sorted set: id, score its lapse time, unix ms)
-- ARGV[1] now: unix ms
-- Reply {used, reserved}: tokens charged, tokens held (integers; 0 when missing)

for _, r in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])) do
  local g = redis.call('HGET', KEYS[1], 'r:' .. r)
  if g then
    redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(g))
    redis.call('HDEL', KEYS[1], 'r:' .. r)
  end
  redis.call('ZREM', KEYS[2], r)
end
return {tonumber(redis.call('HGET', KEYS[1], 'used') or '0'), tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')}
