-- removeLapsedInstance.lua: removes a worker's heartbeat from relay:instances only while
-- it is still lapsed (docs/DATA_MODEL.md §6.2): a worker that renewed it meanwhile stays.
--
-- KEYS[1] instances: relay:instances (sorted set: heartbeat name, score its expiry, unix ms)
-- ARGV[1] name: the heartbeat name
-- ARGV[2] now: unix ms
-- Reply 1: removed (its score was ≤ ARGV[2])
-- Reply 0: missing, or current; nothing changed

local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) <= tonumber(ARGV[2]) then return redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0
