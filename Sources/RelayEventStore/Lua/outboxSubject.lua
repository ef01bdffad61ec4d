-- outboxSubject.lua: what the completion webhook sender needs of a message's stream before
-- an attempt (docs/DATA_MODEL.md §13), on the stream's own slot.
--
-- KEYS[1] meta: relay:{<ownerHash>:<requestId>}:meta (hash)
-- KEYS[2] events: relay:{…}:events (stream)
-- KEYS[3] delivered: relay:{…}:delivered (string: set when a client read the final event)
-- ARGV: none
-- Reply {}: the meta is gone (the stream expired)
-- Reply {state, final event, read, atrest}:
--       [1] state: the meta's `state`
--       [2] final event: the top entry's event as stored (its first field's value), '' when none
--       [3] read: 1 when the delivered key exists, else 0
--       [4] atrest: the meta's at-rest mode, '' when none

local m = redis.call('HMGET', KEYS[1], 'state', 'atrest')
local st = m[1]
if not st then return {} end
local tops = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local e = ''
if #tops > 0 then e = tops[1][2][2] or '' end
return {st, e, redis.call('EXISTS', KEYS[3]), m[2] or ''}
