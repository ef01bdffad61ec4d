/// The Lua scripts of the event log (Redis `EVAL`/`EVALSHA` doc). Each runs atomically
/// on the one slot of its stream's keys.
public enum Scripts {
    /// Creates a stream's meta hash unless it exists.
    /// KEYS: meta. ARGV: owner, sid, instance, created_ms, ttl_ms.
    /// Returns 1 when created, 0 when the id was taken.
    public static let create = """
    if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
    redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'sid', ARGV[2], 'instance', ARGV[3],
      'state', 'running', 'last_seq', '0', 'created_ms', ARGV[4])
    redis.call('PEXPIRE', KEYS[1], ARGV[5])
    return 1
    """

    /// Appends one event: `XADD` with explicit id `<seq>-0` and exact `MAXLEN`, the text
    /// and offset (when lossless resume is on), `HSET last_seq` (and `state` on the
    /// final event), `PEXPIRE` of every key, `PUBLISH` on the live channel, and on the
    /// final event the budget `INCRBY`.
    /// KEYS: events, meta, live, text, offsets, budget (or any key when unused).
    /// ARGV: seq, event JSON, maxlen, ttl_ms, final state or '', delta text, lossless '1'/'0',
    ///       budget tokens or '', budget ttl_ms.
    /// Errors: `NOSTREAM` (meta gone), `FINISHED <state>` (stream already ended),
    /// `OUTOFORDER <last_seq>` (seq is not last_seq + 1). Returns seq.
    public static let append = """
    local st = redis.call('HMGET', KEYS[2], 'state', 'last_seq')
    if not st[1] then return redis.error_reply('NOSTREAM stream expired') end
    if st[1] ~= 'running' then return redis.error_reply('FINISHED ' .. st[1]) end
    local seq = tonumber(ARGV[1])
    if seq ~= tonumber(st[2]) + 1 then return redis.error_reply('OUTOFORDER ' .. st[2]) end
    redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], ARGV[1] .. '-0', 'e', ARGV[2])
    if ARGV[7] == '1' then
      local len = redis.call('APPEND', KEYS[4], ARGV[6])
      redis.call('BITFIELD', KEYS[5], 'SET', 'u32', '#' .. ARGV[1], len)
      redis.call('PEXPIRE', KEYS[4], ARGV[4])
      redis.call('PEXPIRE', KEYS[5], ARGV[4])
    end
    if ARGV[5] ~= '' then
      redis.call('HSET', KEYS[2], 'last_seq', ARGV[1], 'state', ARGV[5])
    else
      redis.call('HSET', KEYS[2], 'last_seq', ARGV[1])
    end
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    redis.call('PUBLISH', KEYS[3], ARGV[1] .. ' ' .. ARGV[2])
    if ARGV[8] ~= '' then
      redis.call('INCRBY', KEYS[6], ARGV[8])
      redis.call('PEXPIRE', KEYS[6], ARGV[9])
    end
    return seq
    """

    /// Reads what a resume needs in one round trip.
    /// KEYS: meta, events, text. Returns nil when the stream does not exist, else
    /// {owner, state, last_seq, first retained entry ID or '', sid, text length}.
    public static let open = """
    local m = redis.call('HMGET', KEYS[1], 'owner', 'state', 'last_seq', 'sid')
    if not m[1] then return nil end
    local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
    local fid = ''
    if #first > 0 then fid = first[1][1] end
    return {m[1], m[2], m[3], fid, m[4] or '', redis.call('STRLEN', KEYS[3])}
    """

    /// The text between the end of event `from` and the end of event `to` (bytes),
    /// for a lossless catch-up. KEYS: text, offsets. ARGV: from, to.
    /// Returns {start offset, text} or nil when the text has expired.
    public static let catchUp = """
    if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
    local o = redis.call('BITFIELD', KEYS[2], 'GET', 'u32', '#' .. ARGV[1], 'GET', 'u32', '#' .. ARGV[2])
    local s = o[1]
    local e = o[2]
    if tonumber(ARGV[1]) == 0 then s = 0 end
    if e <= s then return {s, ''} end
    return {s, redis.call('GETRANGE', KEYS[1], s, e - 1)}
    """
}
