-- outboxEnqueue.lua: queues a completion webhook message in the shared outbox
-- (docs/DATA_MODEL.md §13), once per id: a message already queued, delivered or given up
-- is not queued again. Times are Redis's clock (TIME, as in outboxClaim.lua).
--
-- KEYS[1] due: relay:webhooks:{relay:webhooks}:due (sorted set: id, score when next due, ms)
-- KEYS[2] msgs: relay:webhooks:{relay:webhooks}:msgs (hash: id → record)
-- KEYS[3] attempts: relay:webhooks:{relay:webhooks}:attempts (hash; unused here)
-- KEYS[4] claims: relay:webhooks:{relay:webhooks}:claims (hash; unused here)
-- KEYS[5] sent: relay:webhooks:{relay:webhooks}:sent (sorted set: ids delivered or given up)
-- KEYS[6] needkeys: relay:webhooks:{relay:webhooks}:needkeys (hash; unused here)
-- ARGV[1] id: the `webhook-id`
-- ARGV[2] record: `<scoped request id> <ended, unix ms> <sub>`
-- ARGV[3] delay_ms: first due this long from now, ms
-- Reply 1: queued
-- Reply 0: the id is queued already, or was delivered or given up; nothing changed

if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZSCORE', KEYS[5], ARGV[1]) then return 0 end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
return 1
