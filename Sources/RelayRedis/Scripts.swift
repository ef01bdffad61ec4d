/// The Lua scripts of the event log (Redis `EVAL`/`EVALSHA` doc). Each runs atomically
/// on the one slot of its stream's keys.
public enum Scripts {
    /// Creates a stream's meta hash unless it exists, and takes the owner lease. The
    /// meta also records the budget hash charged for the stream and the prompt
    /// estimate, so another instance can settle it when the owner dies (issue 12).
    /// KEYS: meta, lease. ARGV: owner, sid, instance, created_ms, ttl_ms, lease_ms,
    /// budget key, prompt estimate (tokens).
    /// Returns 1 when created, 0 when the id was taken.
    public static let create = """
    if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
    redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'sid', ARGV[2], 'instance', ARGV[3],
      'state', 'running', 'last_seq', '0', 'created_ms', ARGV[4], 'budget', ARGV[7], 'prompt', ARGV[8])
    redis.call('PEXPIRE', KEYS[1], ARGV[5])
    redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[6])
    return 1
    """

    /// Ends a running stream whose owner lease lapsed (the owning instance died):
    /// appends, once and atomically, the given `error` event as the next seq, sets
    /// `state` to `failed` and publishes it (issue 4: `upstream_lost`).
    /// KEYS: events, meta, live, lease, text, offsets. ARGV: maxlen, ttl_ms, event JSON, lossless '1'/'0'.
    /// Returns {seq appended, budget key, prompt estimate} (the caller settles the
    /// budget: prompt + seq − 1 deltas), {0} when the stream is not running or the lease
    /// is held, {-1} when the stream does not exist at all (expired, or lost with Redis' data).
    public static let expireLease = """
    local st = redis.call('HMGET', KEYS[2], 'state', 'last_seq', 'budget', 'prompt')
    if not st[1] then return {-1} end
    if st[1] ~= 'running' then return {0} end
    if redis.call('EXISTS', KEYS[4]) == 1 then return {0} end
    local seq = tonumber(st[2]) + 1
    redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], seq .. '-0', 'e', ARGV[3])
    if ARGV[4] == '1' then
      redis.call('BITFIELD', KEYS[6], 'SET', 'u32', '#' .. seq, redis.call('STRLEN', KEYS[5]))
      redis.call('PEXPIRE', KEYS[5], ARGV[2])
      redis.call('PEXPIRE', KEYS[6], ARGV[2])
    end
    redis.call('HSET', KEYS[2], 'last_seq', seq, 'state', 'failed')
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
    redis.call('PUBLISH', KEYS[3], seq .. ' ' .. ARGV[3])
    return {seq, st[3] or '', st[4] or '0'}
    """

    /// Appends one event: `XADD` with explicit id `<seq>-0` and exact `MAXLEN`, the text
    /// and offset (when lossless resume is on), `HSET last_seq` (and `state` on the
    /// final event), `PUBLISH` on the live channel, and — only when the caller says the
    /// refresh is due (`RelayStreamLogic.TTLRefreshPolicy`: the first and final appends
    /// and one per interval) — `PEXPIRE` of every key. Budgets are settled outside this
    /// script (`BudgetLedger`), so it touches one slot.
    ///
    /// `last_seq` stays in the meta hash per event: it is the gap guard (`XADD` with an
    /// explicit id refuses an old or repeated seq, but not one that skips a seq, which a
    /// pipeline could send after a failed append), and it is one `HMGET` that also reads
    /// `state`, which `FINISHED` needs anyway (issue 14 measured the alternatives).
    /// KEYS: events, meta, live, text, offsets.
    /// ARGV: seq, event JSON, maxlen, ttl_ms, final state or '', delta text, lossless '1'/'0',
    /// refresh TTLs '1'/'0'.
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
      redis.call('BITFIELD', KEYS[5], 'SET', 'u32', '#' .. ARGV[1], redis.call('APPEND', KEYS[4], ARGV[6]))
    end
    if ARGV[5] ~= '' then
      redis.call('HSET', KEYS[2], 'last_seq', ARGV[1], 'state', ARGV[5])
    else
      redis.call('HSET', KEYS[2], 'last_seq', ARGV[1])
    end
    if ARGV[8] == '1' then
      redis.call('PEXPIRE', KEYS[1], ARGV[4])
      redis.call('PEXPIRE', KEYS[2], ARGV[4])
      if ARGV[7] == '1' then
        redis.call('PEXPIRE', KEYS[4], ARGV[4])
        redis.call('PEXPIRE', KEYS[5], ARGV[4])
      end
    end
    redis.call('PUBLISH', KEYS[3], ARGV[1] .. ' ' .. ARGV[2])
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

extension Scripts {
    /// Admits a new generation for a session unless it already runs `max` of them
    /// (issue 3: `RELAY_MAX_STREAMS_PER_SESSION`). The session's running streams are
    /// a sorted set, score = lease expiry (unix ms), so a crashed instance's entries
    /// lapse by themselves.
    /// Idempotent per request id (a retried POST holds the same slot).
    /// KEYS: `relay:streams:{<ownerHash>:<sid>}`. ARGV: request id, now ms, lease expiry ms, max.
    /// Returns 1 when admitted, 0 when at the limit.
    public static let admit = """
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
    if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 1 end
    if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
    redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
    if redis.call('PEXPIRETIME', KEYS[1]) < tonumber(ARGV[3]) then
      redis.call('PEXPIREAT', KEYS[1], ARGV[3])
    end
    return 1
    """
}

extension Scripts {
    /// `append` for Redis Cluster: the live channel is a sharded channel (`SPUBLISH`,
    /// Redis 7; the channel hashes to the stream's slot, so the script stays on it).
    public static let appendSharded = append.replacingOccurrences(of: "redis.call('PUBLISH'", with: "redis.call('SPUBLISH'")
    /// `expireLease` for Redis Cluster (`SPUBLISH`).
    public static let expireLeaseSharded = expireLease.replacingOccurrences(of: "redis.call('PUBLISH'", with: "redis.call('SPUBLISH'")
}
