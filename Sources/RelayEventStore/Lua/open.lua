-- open.lua: reads what a resume needs of a stream in one round trip (docs/DATA_MODEL.md §3).
--
-- KEYS[1] meta: relay:{<ownerHash>:<requestId>}:meta (hash)
-- KEYS[2] events: relay:{…}:events (stream)
-- KEYS[3] text: relay:{…}:text (string)
-- ARGV: none
-- Reply nil: the stream does not exist (no meta: never created, expired, or lost)
-- Reply {owner, state, last ID, first ID, sid, text length}:
--       [1] owner: the meta's `owner` (the creator's `sub`)
--       [2] state: the meta's `state` (running, done, cancelled, failed); nil when missing
--       [3] last ID: the top entry's ID `<seq>-0` (the last seq), '' when none is retained
--       [4] first ID: the oldest retained entry's ID, '' when none
--       [5] sid: the meta's `sid`, '' when missing
--       [6] text length: the text key's length (STRLEN), bytes; 0 when missing

local m = redis.call('HMGET', KEYS[1], 'owner', 'state', 'sid')
if not m[1] then return nil end
local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
local fid = ''
if #first > 0 then fid = first[1][1] end
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local lid = ''
if #last > 0 then lid = last[1][1] end
return {m[1], m[2], lid, fid, m[3] or '', redis.call('STRLEN', KEYS[3])}
