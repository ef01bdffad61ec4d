-- outboxClaim.lua: claims due completion webhook messages for one instance
-- (docs/DATA_MODEL.md §13).
--
-- Each claimed message's score moves to the claim's end (another instance takes it again
-- only once the claim lapsed) and its claim token is set. Ids in `sent` older than
-- sent_ms are forgotten; a due id without a record is dropped. A claimer without keys
-- (haveKeys '0') skips a message marked as needing keys until it has been due
-- patience_ms (then only to drop it once its stream expired). Times are Redis's clock
-- (TIME: allowed before writes with effects replication, Redis ≥ 5's default and 7's
-- only mode), so instances with skewed clocks agree on what is due.
--
-- KEYS[1] due: relay:webhooks:{relay:webhooks}:due (sorted set: id, score when next due, ms)
-- KEYS[2] msgs: relay:webhooks:{relay:webhooks}:msgs (hash: id → record)
-- KEYS[3] attempts: relay:webhooks:{relay:webhooks}:attempts (hash: id → attempts made)
-- KEYS[4] claims: relay:webhooks:{relay:webhooks}:claims (hash: id → claim token)
-- KEYS[5] sent: relay:webhooks:{relay:webhooks}:sent (sorted set: ids delivered or given up, ms)
-- KEYS[6] needkeys: relay:webhooks:{relay:webhooks}:needkeys (hash: id → 1)
-- ARGV[1] claim_ms: how long the claim holds, ms
-- ARGV[2] token: the claim's token
-- ARGV[3] limit: the most messages claimed
-- ARGV[4] sent_ms: how long a sent id is remembered, ms
-- ARGV[5] haveKeys: whether the claimer has keys, '1' or '0'
-- ARGV[6] patience_ms: how long a message needing keys waits for a claimer with keys, ms
-- Reply {id, record, attempts, …}: a flat array, three elements per claimed message ({} for none):
--       id: the `webhook-id`
--       record: `<scoped request id> <ended, unix ms> <sub>`
--       attempts: attempts made before this claim (decimal text)

if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - tonumber(ARGV[4]))
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for i = 1, #due, 2 do
  local id = due[i]
  local rec = redis.call('HGET', KEYS[2], id)
  if rec and ARGV[5] == '0' and redis.call('HEXISTS', KEYS[6], id) == 1
     and tonumber(due[i + 1]) > now - tonumber(ARGV[6]) then
    -- needs keys this claimer lacks: left due for one that has them
  elseif rec then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), id)
    redis.call('HSET', KEYS[4], id, ARGV[2])
    out[#out + 1] = id
    out[#out + 1] = rec
    out[#out + 1] = redis.call('HGET', KEYS[3], id) or '0'
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out
