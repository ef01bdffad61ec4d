-- appendFenced.lua: one non-final append of a taken-over stream's new owner
-- (docs/DATA_MODEL.md §6.1).
--
-- Refuses unless the stream is `running` under the writer's ownership epoch and the seq is
-- the top entry's + 1 (a resend of a stored seq, or a hole, is `OUTOFORDER`: the writer's
-- tail read decides, docs/DATA_MODEL.md §5), then sets the last generated ID back (to
-- `<seq − 1>-0`, or 0-1 before the first entry), XADDs (MAXLEN when given) and fences the
-- stream again (XSETID to the largest entry ID), so only this epoch's appends are ever stored.
--
-- KEYS[1] events: relay:{<ownerHash>:<requestId>}:events (stream)
-- KEYS[2] meta: relay:{…}:meta (hash)
-- ARGV[1] seq: the event's seq
-- ARGV[2] event: the event as stored (its JSON, or sealed)
-- ARGV[3] epoch: the writer's ownership epoch
-- ARGV[4] maxlen: the cap, entries (exact MAXLEN), or '' for no trim
-- Reply seq: the event was appended at this seq (an integer)
-- Error NOSTREAM: the meta hash or the stream key is gone
-- Error FINISHED <state>: the stream has ended
-- Error FINISHED taken: another instance took the stream over (the writer's epoch is stale)
-- Error OUTOFORDER <top seq>: seq is not the top entry's seq + 1 (already stored, or a hole)

local st = redis.call('HMGET', KEYS[2], 'state', 'epoch')
if not st[1] or redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('NOSTREAM stream expired') end
if st[1] ~= 'running' then return redis.error_reply('FINISHED ' .. st[1]) end
if (st[2] or '0') ~= ARGV[3] then return redis.error_reply('FINISHED taken') end
local tops = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local top = 0
if #tops > 0 then top = tonumber(string.match(tops[1][1], '^(%d+)')) end
local seq = tonumber(ARGV[1])
if seq ~= top + 1 then return redis.error_reply('OUTOFORDER ' .. top) end
redis.call('XSETID', KEYS[1], (seq == 1) and '0-1' or ((seq - 1) .. '-0'))
if ARGV[4] ~= '' then
  redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[4], ARGV[1] .. '-0', 'e', ARGV[2])
else
  redis.call('XADD', KEYS[1], ARGV[1] .. '-0', 'e', ARGV[2])
end
redis.call('XSETID', KEYS[1], '18446744073709551615-18446744073709551615')
return seq
