-- heartbeat.lua: a worker's heartbeat (docs/DATA_MODEL.md §6.2): ZADD of its name with its
-- expiry, telling whether it had been missing or lapsed (other instances' sweeps may
-- then have forgotten its streams, or removed it).
--
-- KEYS[1] instances: relay:instances (sorted set: heartbeat name, score its expiry, unix ms)
-- ARGV[1] name: the worker's heartbeat name
-- ARGV[2] expiry: when this heartbeat lapses, unix ms
-- ARGV[3] now: unix ms
-- Reply 1: the member was missing, or its previous score had lapsed by ARGV[3]
-- Reply 0: it was current

local old = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if (not old) or tonumber(old) <= tonumber(ARGV[3]) then return 1 end
return 0
