-- appendStatus.lua: what an appender needs after a failed or ambiguous append (rare path,
-- docs/DATA_MODEL.md §5).
--
-- The meta `state`, the top entry's ID, the entries after the acknowledged seq, and, when
-- the lossless-resume text is confirmed stored through a seq, what Redis holds of it: that
-- seq's end offset (BITFIELD GET u32), or -1 when the text key is shorter than that offset
-- (a failover or restart can lose a text write whose reply came back while keeping the
-- acknowledged XADDs that preceded it). The state reads `taken` when the meta's ownership
-- epoch is not the caller's (another instance took the stream over, takeover.lua), whether
-- the taker is still generating or has ended the stream: a stale owner never settles.
--
-- KEYS[1] events: relay:{<ownerHash>:<requestId>}:events (stream)
-- KEYS[2] meta: relay:{…}:meta (hash)
-- KEYS[3] text: relay:{…}:text (string)
-- KEYS[4] offsets: relay:{…}:offsets (u32 end offsets at byte 4 × seq; the top bit marks a part)
-- ARGV[1] acked: the acknowledged seq (the entries after it come back)
-- ARGV[2] count: the most entries returned
-- ARGV[3] textThrough: the seq the text is confirmed stored through ('0': none)
-- ARGV[4] epoch: the caller's ownership epoch (optional: '0')
-- ARGV[5] textLength: the length the text key must have, bytes (optional: that seq's end
--         offset; its sealed records, §15)
-- Reply {}: the meta hash or the stream key is gone
-- Reply {state, top ID, entries, text end}:
--       [1] state: the meta's `state`, or `taken` (a newer ownership epoch)
--       [2] top ID: the top entry's ID `<seq>-0`, '' when none
--       [3] entries: the entries after ARGV[1], at most ARGV[2] (as XRANGE: {ID, {field, value}})
--       [4] text end: ARGV[3]'s stored end offset, bytes; -1 when not asked, or when the text
--           key is shorter

local m = redis.call('HMGET', KEYS[2], 'state', 'epoch')
local st = m[1]
if not st or redis.call('EXISTS', KEYS[1]) == 0 then return {} end
if (m[2] or '0') ~= (ARGV[4] or '0') then st = 'taken' end
local tops = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local top = ''
if #tops > 0 then top = tops[1][1] end
local textEnd = -1
if ARGV[3] ~= '0' then
  textEnd = redis.call('BITFIELD', KEYS[4], 'GET', 'u32', '#' .. ARGV[3])[1] % 2147483648
  local need = textEnd
  if ARGV[5] then need = tonumber(ARGV[5]) end
  if redis.call('STRLEN', KEYS[3]) < need then textEnd = -1 end
end
return {st, top, redis.call('XRANGE', KEYS[1], '(' .. ARGV[1] .. '-0', '+', 'COUNT', ARGV[2]), textEnd}
