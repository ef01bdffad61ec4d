-- create.lua: creates a stream unless its id is taken (docs/DATA_MODEL.md §2, §3).
--
-- Writes the meta hash (`state` running; the owner, sid and instance; the budget hash
-- charged and the prompt estimate, so another instance can settle the stream when its
-- owner dies, §9; the owner's cap `maxlen`, RELAY_BUFFER_EVENTS, which a lease expiry on
-- another instance trims with, since its text hold follows that cap: TextCheckpoint; the
-- at-rest mode `atrest`, §15, which every writer and reader of the stream goes by), the
-- owner lease, and the stream key itself, empty: the per-event XADD uses NOMKSTREAM, so a
-- stream that expired or was lost with Redis' data is never silently re-created.
-- `XADD … MAXLEN 0 0-1` adds one entry and trims it at once: an empty stream whose last
-- generated ID is 0-1, so seq 1 (1-0) is accepted; readers go by entries (XRANGE and
-- XREVRANGE return none), never by the last generated ID. A leftover stream, text,
-- offsets or request key of the same id (its meta expired first) is deleted. `last_seq`
-- is not kept per event: the top entry is the last seq; the final event and a lease
-- expiry write it. A stored request is kept with the stream's TTL, for a takeover (§6.1).
--
-- KEYS[1] meta: relay:{<ownerHash>:<requestId>}:meta (hash)
-- KEYS[2] lease: relay:{…}:lease (string: the owning instance)
-- KEYS[3] events: relay:{…}:events (stream)
-- KEYS[4] text: relay:{…}:text (deleted only)
-- KEYS[5] offsets: relay:{…}:offsets (deleted only)
-- KEYS[6] request: relay:{…}:request (string: the stored request)
-- ARGV[1] owner: the creator's token `sub`
-- ARGV[2] sid: the creator's session id
-- ARGV[3] instance: the creating worker's instance name (the lease's value)
-- ARGV[4] created_ms: creation time, unix ms
-- ARGV[5] ttl_ms: lifetime of the meta, events and request keys, ms
-- ARGV[6] lease_ms: lifetime of the lease, ms
-- ARGV[7] budget: the budget hash charged ('' for none)
-- ARGV[8] prompt: the prompt estimate, tokens
-- ARGV[9] maxlen: the owner's cap, entries
-- ARGV[10] request: the stored request (StoredRequest, sealed in a sealed stream; '' for none)
-- ARGV[11] atrest: the at-rest mode, `sealed` or `plain` (optional: `plain`)
-- Reply 1: created
-- Reply 0: the id is taken (its meta exists); nothing written

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'sid', ARGV[2], 'instance', ARGV[3],
  'state', 'running', 'created_ms', ARGV[4], 'budget', ARGV[7], 'prompt', ARGV[8], 'maxlen', ARGV[9],
  'atrest', ARGV[11] or 'plain')
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('DEL', KEYS[3], KEYS[4], KEYS[5], KEYS[6])
if ARGV[10] ~= '' then redis.call('SET', KEYS[6], ARGV[10], 'PX', ARGV[5]) end
redis.call('XADD', KEYS[3], 'MAXLEN', '0', '0-1', 'e', '')
redis.call('PEXPIRE', KEYS[3], ARGV[5])
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[6])
return 1
