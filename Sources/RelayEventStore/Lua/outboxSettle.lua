-- outboxSettle.lua: settles a claimed completion webhook message, only under its current
-- claim token (docs/DATA_MODEL.md §13). Times are Redis's clock (TIME, as in
-- outboxClaim.lua).
--
-- `done` (delivered, or given up) forgets the message and remembers its id in `sent`;
-- `retry` counts one more attempt and makes it due again after ARGV[4]; `later` (not
-- attempted) makes it due again after ARGV[4]; `needkeys` does as `later` and marks it as
-- needing keys the claimer lacks.
--
-- KEYS[1] due: relay:webhooks:{relay:webhooks}:due (sorted set: id, score when next due, ms)
-- KEYS[2] msgs: relay:webhooks:{relay:webhooks}:msgs (hash: id → record)
-- KEYS[3] attempts: relay:webhooks:{relay:webhooks}:attempts (hash: id → attempts made)
-- KEYS[4] claims: relay:webhooks:{relay:webhooks}:claims (hash: id → claim token)
-- KEYS[5] sent: relay:webhooks:{relay:webhooks}:sent (sorted set: ids delivered or given up, ms)
-- KEYS[6] needkeys: relay:webhooks:{relay:webhooks}:needkeys (hash: id → 1)
-- ARGV[1] id: the `webhook-id`
-- ARGV[2] token: the claim's token
-- ARGV[3] outcome: `done`, `retry`, `later` or `needkeys`
-- ARGV[4] after_ms: due again this long from now, ms (unused with `done`)
-- Reply 1: settled
-- Reply 0: the claim is no longer this token's (it lapsed and another instance claimed
--       the message); nothing changed

if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('HGET', KEYS[4], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[4], ARGV[1])
if ARGV[3] == 'done' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[3], ARGV[1])
  redis.call('HDEL', KEYS[6], ARGV[1])
  redis.call('ZADD', KEYS[5], now, ARGV[1])
  return 1
end
if ARGV[3] == 'retry' then redis.call('HINCRBY', KEYS[3], ARGV[1], 1) end
if ARGV[3] == 'needkeys' then redis.call('HSET', KEYS[6], ARGV[1], 1) end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
return 1
