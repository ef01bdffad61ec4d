-- takeover.lua: takes over a running stream whose owner lease lapsed (docs/DATA_MODEL.md
-- §6.1), at most once per lapse and only under the continuation limit.
--
-- Bumps the meta's ownership `epoch` and `continuations`, sets the lease to the taker, and
-- fences the stream (XSETID to the largest entry ID): the lapsed owner's pipelined XADDs
-- are refused from now on, and the new owner appends with appendFenced.lua, which checks
-- its epoch. Nothing is changed when the stream is not running, its lease is held, the
-- limit is reached, no request is stored, or the text so far cannot be rebuilt (entries
-- trimmed and no lossless-resume text): the caller then ends it with expireLease.lua. A
-- relay without keys cannot read a sealed stream: it leaves it to one that can (§15).
-- Every reply but {-1}, {0}, {-2} and {-3} ends with the stream's at-rest mode (the
-- meta's `atrest`, '' when none): the taker reads and writes the stream by it.
--
-- KEYS[1] events: relay:{<ownerHash>:<requestId>}:events (stream)
-- KEYS[2] meta: relay:{…}:meta (hash)
-- KEYS[3] lease: relay:{…}:lease (string)
-- KEYS[4] text: relay:{…}:text (string)
-- KEYS[5] offsets: relay:{…}:offsets (u32 end offsets at byte 4 × seq; the top bit marks a part)
-- KEYS[6] request: relay:{…}:request (string: the stored request)
-- ARGV[1] instance: the taker's instance name (the lease's new value)
-- ARGV[2] lease_ms: the lease's lifetime, ms
-- ARGV[3] maxContinuations: the most continuations of one stream
-- ARGV[4] ttl_ms: lifetime of the events, meta and request keys, ms
-- ARGV[5] lossless: '1' or '0'
-- ARGV[6] haveKeys: whether the taker has keys, '1' or '0' (the mode of a stream whose
--         meta records none)
-- Reply {-1}: the stream does not exist
-- Reply {0}: its lease is held (the owner is alive)
-- Reply {-2}: it cannot be continued (limit reached, no stored request, text not rebuildable)
-- Reply {-3}: it is sealed and the taker has no keys; nothing changed
-- Reply {3, state, budget, prompt, last seq, final entry, atrest}: it has ended (its
--       settlement may be lost with its owner: EventLog.EndedStream):
--       [2] state: `done`, `cancelled` or `failed`
--       [3] budget: the budget hash charged, '' for none
--       [4] prompt: prompt tokens charged (the meta's `prompt`), '0' when none
--       [5] last seq: the meta's `last_seq`, '0' when none
--       [6] final entry: the top entry (as XREVRANGE … COUNT 1: {} or {{ID, {field, value}}})
--       [7] atrest: the meta's at-rest mode, '' when none
-- Reply {1, epoch, top seq, request, prefix, entries, continuations, owner, sid, prompt,
--       offsets, whole text, atrest}: taken over:
--       [2] epoch: the new ownership epoch (an integer ≥ 1)
--       [3] top seq: the top entry's seq (an integer, 0 when none)
--       [4] request: the stored request, as stored (sealed in a sealed stream)
--       [5] prefix: the text of the events before the oldest retained entry ('' when every
--           event is retained, or the stream is sealed: the relay cuts it, EventLog.taken)
--       [6] entries: every retained entry (as XRANGE: {ID, {field, value}} each)
--       [7] continuations: continuations so far, this one included (an integer)
--       [8] owner: the meta's `owner`, '' when missing
--       [9] sid: the meta's `sid`, '' when missing
--       [10] prompt: prompt tokens charged so far (the meta's `prompt`: the first call's
--           estimate plus each earlier continuation's re-sent prompt), '0' when none
--       [11] offsets: the whole offsets key ('' without lossless resume)
--       [12] whole text: the whole text key when sealed (its records), else ''
--       [13] atrest: the meta's at-rest mode, '' when none

local st = redis.call('HMGET', KEYS[2], 'state', 'epoch', 'continuations', 'owner', 'sid', 'prompt', 'budget', 'last_seq', 'atrest')
if not st[1] then return {-1} end
local atrest = st[9] or ''
if st[1] ~= 'running' then
  return {3, st[1], st[7] or '', st[6] or '0', st[8] or '0', redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1), atrest}
end
-- A relay without keys cannot read a sealed stream: it leaves it to one that can,
-- changing nothing (DATA_MODEL.md §15).
if atrest == 'sealed' and ARGV[6] ~= '1' then return {-3} end
local sealed = atrest == 'sealed' or (atrest == '' and ARGV[6] == '1')
if redis.call('EXISTS', KEYS[3]) == 1 then return {0} end
local n = tonumber(st[3] or '0')
if n >= tonumber(ARGV[3]) then return {-2} end
local req = redis.call('GET', KEYS[6])
if not req then return {-2} end
local tops = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local top = 0
if #tops > 0 then top = tonumber(string.match(tops[1][1], '^(%d+)')) end
local entries = redis.call('XRANGE', KEYS[1], '-', '+')
local prefix = ''
local offsets = ''
local whole = ''
if ARGV[5] == '1' then
  offsets = redis.call('GET', KEYS[5]) or ''
  if sealed then whole = redis.call('GET', KEYS[4]) or '' end
end
if #entries > 0 then
  local first = tonumber(string.match(entries[1][1], '^(%d+)'))
  if first > 1 then
    if ARGV[5] ~= '1' or redis.call('EXISTS', KEYS[4]) == 0 then return {-2} end
    if not sealed then
      local e = redis.call('BITFIELD', KEYS[5], 'GET', 'u32', '#' .. (first - 1))[1] % 2147483648
      if e > 0 then prefix = redis.call('GETRANGE', KEYS[4], 0, e - 1) end
    end
  end
elseif top > 0 then
  return {-2}
end
local epoch = tonumber(st[2] or '0') + 1
redis.call('HSET', KEYS[2], 'epoch', epoch, 'continuations', n + 1, 'instance', ARGV[1])
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
redis.call('XSETID', KEYS[1], '18446744073709551615-18446744073709551615')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('PEXPIRE', KEYS[6], ARGV[4])
return {1, epoch, top, req, prefix, entries, n + 1, st[4] or '', st[5] or '', st[6] or '0', offsets, whole, atrest}
