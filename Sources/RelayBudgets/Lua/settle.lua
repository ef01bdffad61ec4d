-- settle.lua: settles a request once, on every ending (docs/DATA_MODEL.md §9): releases
-- its reservation, adds the tokens charged to `used`, records `s:<id>` and refreshes the
-- hash's TTL. A second settlement of the same id changes nothing.
--
-- KEYS[1] budget: relay:budget:{u:<ownerHash>}:<YYYY-MM> (hash of tokens: used, reserved,
--         r:<id> a reservation, s:<id> a settlement)
-- KEYS[2] expiries: the budget key + `:expiries` (sorted set: id, score its lapse time, unix ms)
-- ARGV[1] id: the request id
-- ARGV[2] tokens: the tokens charged
-- ARGV[3] ttl_ms: the hash's lifetime, ms
-- Reply tokens: settled now, charging ARGV[2] tokens (an integer ≥ 0)
-- Reply -1: the id was settled before; nothing changed

if redis.call('HEXISTS', KEYS[1], 's:' .. ARGV[1]) == 1 then return -1 end
local g = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
if g then
  redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(g))
  redis.call('HDEL', KEYS[1], 'r:' .. ARGV[1])
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'used', ARGV[2])
redis.call('HSET', KEYS[1], 's:' .. ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return tonumber(ARGV[2])
