-- extend.lua: grows a request's reservation by some tokens when the limit still has them
-- free, and pushes its lapse time out (docs/DATA_MODEL.md §9): a continuation's re-sent
-- prompt is reserved before it is sent (docs/PROTOCOL.md §4.5, §9.2).
--
-- KEYS[1] budget: relay:budget:{u:<ownerHash>}:<YYYY-MM> (hash of tokens: used, reserved,
--         r:<id> a reservation, s:<id> a settlement)
-- KEYS[2] expiries: the budget key + `:expiries` (sorted set: id, score its lapse time, unix ms)
-- ARGV[1] id: the request id
-- ARGV[2] tokens: the tokens added
-- ARGV[3] limit: the budget's limit, tokens
-- ARGV[4] lapse: the reservation's new lapse time, unix ms
-- Reply {1, 0}: extended
-- Reply {0, remaining}: refused (fewer than ARGV[2] free); remaining = limit − used −
--       reserved, tokens (≥ 0); nothing changed
-- Reply {-1, 0}: no reservation is held under the id (it lapsed, or was settled)

local held = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
if not held then return {-1, 0} end
local used = tonumber(redis.call('HGET', KEYS[1], 'used') or '0')
local reserved = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')
local remaining = tonumber(ARGV[3]) - used - reserved
if remaining < tonumber(ARGV[2]) then return {0, math.max(0, remaining)} end
redis.call('HINCRBY', KEYS[1], 'r:' .. ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'reserved', ARGV[2])
redis.call('ZADD', KEYS[2], 'XX', ARGV[4], ARGV[1])
return {1, 0}
