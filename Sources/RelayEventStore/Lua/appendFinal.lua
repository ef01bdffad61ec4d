-- appendFinal.lua: appends the final event of a generation, `done` or `error`
-- (docs/DATA_MODEL.md §5; once per stream, so a script is affordable).
--
-- Refuses unless the stream is `running` under the writer's ownership epoch and its top
-- entry is seq − 1; then XADD (exact MAXLEN), the fence (XSETID to the largest entry ID,
-- 18446744073709551615-18446744073709551615: any later XADD, a lapsed owner's pipelined
-- one, is refused with "The stream has exhausted the last possible ID", Redis XSETID and
-- XADD docs), the retained answer when given (SET answer … PX, §14: the record exists
-- exactly when the stream ended with `done`), the text and offsets the appender had not
-- written yet (TextCheckpoint: positional, so text an earlier write already stored is
-- rewritten with the same bytes), HSET state and last_seq, and PEXPIRE of every key. A
-- taken-over stream (epoch ≠ 0) is first set back to the previous entry's ID (takeover.lua
-- fences it between appends). It does not publish: the appender publishes every event
-- after its XADD was acknowledged, in seq order (StreamAppender).
--
-- KEYS[1] events: relay:{<ownerHash>:<requestId>}:events (stream)
-- KEYS[2] meta: relay:{…}:meta (hash)
-- KEYS[3] text: relay:{…}:text (string)
-- KEYS[4] offsets: relay:{…}:offsets (u32 end offsets at byte 4 × seq)
-- KEYS[5] answer: relay:{…}:answer (string: the RetainedAnswer)
-- KEYS[6] request: relay:{…}:request (optional; its TTL is refreshed too)
-- ARGV[1] seq: the final event's seq
-- ARGV[2] event: the event as stored (its JSON, or sealed)
-- ARGV[3] maxlen: the cap, entries (exact MAXLEN)
-- ARGV[4] ttl_ms: lifetime of every key, ms
-- ARGV[5] state: the final state, `done`, `cancelled` or `failed`
-- ARGV[6] lossless: '1' to write and expire the text and offsets, else '0'
-- ARGV[7] record: the retained answer ('' for none)
-- ARGV[8] retention_ms: the record's lifetime, ms
-- ARGV[9] epoch: the writer's ownership epoch ('0' for the stream's creator)
-- ARGV[10] text start: where the buffered text goes in the text key, bytes (optional, with ARGV[11])
-- ARGV[11] text: the buffered text ('' for none; optional)
-- ARGV[12…] offsets: a (seq, offsets value) pair per buffered event: the end offset in bytes, plus 2^31 when the piece is a part (StoredPiece)
-- Reply seq: the final event was appended at this seq (an integer)
-- Error NOSTREAM: the meta hash or the stream key is gone (expired, or lost)
-- Error FINISHED <state>: the stream has ended already
-- Error FINISHED taken: another instance took the stream over (the writer's epoch is stale)
-- Error OUTOFORDER <top seq>: seq is not the top entry's seq + 1

local st = redis.call('HMGET', KEYS[2], 'state', 'epoch')
if not st[1] then return redis.error_reply('NOSTREAM stream expired') end
if st[1] ~= 'running' then return redis.error_reply('FINISHED ' .. st[1]) end
if (st[2] or '0') ~= ARGV[9] then return redis.error_reply('FINISHED taken') end
local tops = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local top = 0
if #tops > 0 then top = tonumber(string.match(tops[1][1], '^(%d+)')) end
local seq = tonumber(ARGV[1])
if seq ~= top + 1 then return redis.error_reply('OUTOFORDER ' .. top) end
if ARGV[9] ~= '0' then redis.call('XSETID', KEYS[1], (seq == 1) and '0-1' or ((seq - 1) .. '-0')) end
if not redis.call('XADD', KEYS[1], 'NOMKSTREAM', 'MAXLEN', ARGV[3], ARGV[1] .. '-0', 'e', ARGV[2]) then
  return redis.error_reply('NOSTREAM stream expired')
end
redis.call('XSETID', KEYS[1], '18446744073709551615-18446744073709551615')
if ARGV[7] ~= '' then redis.call('SET', KEYS[5], ARGV[7], 'PX', ARGV[8]) end
if ARGV[6] == '1' then
  if #ARGV >= 11 then
    if ARGV[11] ~= '' then redis.call('SETRANGE', KEYS[3], ARGV[10], ARGV[11]) end
    local bf = {}
    for i = 12, #ARGV - 1, 2 do
      bf[#bf + 1] = 'SET'; bf[#bf + 1] = 'u32'; bf[#bf + 1] = '#' .. ARGV[i]; bf[#bf + 1] = ARGV[i + 1]
    end
    if #bf > 0 then redis.call('BITFIELD', KEYS[4], unpack(bf)) end
  end
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[4], ARGV[4])
end
redis.call('HSET', KEYS[2], 'last_seq', ARGV[1], 'state', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
if KEYS[6] then redis.call('PEXPIRE', KEYS[6], ARGV[4]) end
return seq
