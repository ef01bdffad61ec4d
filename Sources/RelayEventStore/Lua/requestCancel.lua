-- requestCancel.lua: a DELETE of a stream (docs/PROTOCOL.md §7, docs/DATA_MODEL.md §7).
--
-- Reads the stream's owner and state and leaves the cancel marker (SET … PX) when no
-- stream of the id exists yet or it is running. A generation reads the marker after it
-- was registered on its worker and before it calls the upstream (register first, then
-- check), so a DELETE that reached any instance before the stream was created, or before
-- its generation could hear relay:cancel, still stops it. Ids are scoped by owner
-- (RequestID.scoped(by:)), so the marker is the caller's alone; it shares the stream's
-- hash tag (one slot).
--
-- KEYS[1] meta: relay:{<ownerHash>:<requestId>}:meta (hash)
-- KEYS[2] cancel: relay:{…}:cancel (string: the marker)
-- ARGV[1] owner: the caller's token `sub`
-- ARGV[2] marker_ms: the marker's lifetime, ms
-- Reply 'pending': no stream of the id exists (yet); the marker was left
-- Reply 'other': the meta names another owner; nothing written
-- Reply <state>: the stream's state (`running`: the marker was left too); '' when the
--       meta has no state

local m = redis.call('HMGET', KEYS[1], 'owner', 'state')
if not m[1] then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
  return 'pending'
end
if m[1] ~= ARGV[1] then return 'other' end
if m[2] == 'running' then redis.call('SET', KEYS[2], '1', 'PX', ARGV[2]) end
return m[2] or ''
