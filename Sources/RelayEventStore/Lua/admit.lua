-- admit.lua: admits a new generation for a session unless it already runs `max` of them
-- (RELAY_MAX_STREAMS_PER_SESSION, docs/DATA_MODEL.md §8).
--
-- The session's running streams are a sorted set, score = lease expiry (unix ms), so a
-- crashed instance's entries lapse by themselves; they are dropped first. Idempotent per
-- request id (a retried POST holds the same slot). The key's expiry is only ever moved
-- later (PEXPIREAT to the new entry's).
--
-- KEYS[1] streams: relay:streams:{<ownerHash>:<sid>} (sorted set: request id, score its lapse time)
-- ARGV[1] id: the request id
-- ARGV[2] now: unix ms (entries scored at or before it have lapsed)
-- ARGV[3] expiry: the new entry's lapse time, unix ms
-- ARGV[4] max: the most running generations of the session
-- Reply 1: admitted (or already admitted under this id)
-- Reply 0: at the limit; nothing written

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 1 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
if redis.call('PEXPIRETIME', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
end
return 1
