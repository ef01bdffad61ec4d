-- expireLeaseSharded.lua: expireLease.lua for a Redis Cluster, where the live channel is a
-- sharded channel: SPUBLISH (Redis 7) in place of PUBLISH, and nothing else differs. The
-- channel hashes to the stream's slot, so the script stays on it (docs/DATA_MODEL.md §6, §11).
--
-- Appends, once and atomically, the given `error` event (`upstream_lost`) as the next seq
-- (the top entry + 1; exact MAXLEN of the owner's cap as the meta records it, this
-- instance's when none is recorded, since the owner holds back its events by its own cap
-- until their text is stored: TextCheckpoint), fences the stream (XSETID to the largest
-- entry ID: the old owner's later XADDs are refused, so nothing follows the terminal
-- event), sets `state` failed and `last_seq`, and publishes it on the live channel
-- (`<seq> <event>`, LivePayload). The event is written in the stream's at-rest mode
-- (§15): as this relay stores new streams' events (ARGV[3]: sealed when it has keys), or
-- as plaintext (ARGV[5]) in a stream the meta marks `plain`. With a single Redis
-- expireLease.lua runs instead (PUBLISH).
--
-- KEYS[1] events: relay:{<ownerHash>:<requestId>}:events (stream)
-- KEYS[2] meta: relay:{…}:meta (hash)
-- KEYS[3] live: relay:{…}:live (sharded pub/sub channel)
-- KEYS[4] lease: relay:{…}:lease (string)
-- KEYS[5] text: relay:{…}:text (its TTL refreshed with lossless resume)
-- KEYS[6] offsets: relay:{…}:offsets (its TTL refreshed with lossless resume)
-- ARGV[1] maxlen: the cap, entries, when the meta records none
-- ARGV[2] ttl_ms: lifetime of every key, ms
-- ARGV[3] event: the error event as this relay stores new streams' events
-- ARGV[4] lossless: '1' or '0'
-- ARGV[5] plain event: the event's plaintext JSON (optional)
-- ARGV[6] haveKeys: whether the caller has keys, '1' or '0' (without: a sealed stream is
--         left to a relay with keys)
-- Reply {-1}: the stream does not exist (no meta: expired, or lost with Redis' data)
-- Reply {0}: nothing done: the stream is not running, its lease is held, or it is sealed
--       and the caller has no keys
-- Reply {seq, budget, prompt}: the event was appended at this seq:
--       [1] seq: the appended seq (an integer ≥ 1)
--       [2] budget: the meta's budget hash, '' for none
--       [3] prompt: the meta's prompt estimate, tokens ('0' when none): the caller settles
--           the budget, prompt + seq − 1 deltas

local st = redis.call('HMGET', KEYS[2], 'state', 'budget', 'prompt', 'maxlen', 'atrest')
if not st[1] then return {-1} end
local ev = ARGV[3]
if st[5] == 'plain' and ARGV[5] then ev = ARGV[5] end
-- A relay without keys (ARGV 6 '0') cannot seal the event of a sealed stream: it leaves
-- the stream to one that can.
if st[5] == 'sealed' and ARGV[6] == '0' then return {0} end
if st[1] ~= 'running' then return {0} end
if redis.call('EXISTS', KEYS[4]) == 1 then return {0} end
local tops = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local top = 0
if #tops > 0 then top = tonumber(string.match(tops[1][1], '^(%d+)')) end
local seq = top + 1
-- A taken-over stream is fenced between its new owner's appends (`takeover`).
redis.call('XSETID', KEYS[1], (top == 0) and '0-1' or (top .. '-0'))
redis.call('XADD', KEYS[1], 'MAXLEN', st[4] or ARGV[1], seq .. '-0', 'e', ev)
redis.call('XSETID', KEYS[1], '18446744073709551615-18446744073709551615')
if ARGV[4] == '1' then
  -- No text or offset for the terminal event: a catch-up only ever reads the text
  -- of events older than the oldest retained entry, and the entries after the
  -- owner's last text write are retained (TextCheckpoint).
  redis.call('PEXPIRE', KEYS[5], ARGV[2])
  redis.call('PEXPIRE', KEYS[6], ARGV[2])
end
redis.call('HSET', KEYS[2], 'last_seq', seq, 'state', 'failed')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('SPUBLISH', KEYS[3], seq .. ' ' .. ev)
return {seq, st[2] or '', st[3] or '0'}
