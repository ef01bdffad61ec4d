import RelayRedis
/// The Lua scripts of the event log (Redis `EVAL`/`EVALSHA` doc). Each runs atomically
/// on the one slot of its stream's keys.
public enum Scripts {
    /// Creates a stream unless its id is taken: the meta hash, the owner lease, and the
    /// stream key itself, empty (the per-event `XADD` uses `NOMKSTREAM`, so a
    /// stream that expired or was lost with Redis' data is never silently re-created).
    /// `XADD … MAXLEN 0 0-1` adds one entry and trims it at once: an empty stream whose
    /// last generated ID is `0-1`, so seq 1 (`1-0`) is accepted; readers go by entries
    /// (`XRANGE`/`XREVRANGE` return none), never by the last generated ID. A leftover
    /// stream, text or offsets key of the same id (its meta expired first) is deleted.
    /// The meta also records the budget hash charged for the stream and the prompt
    /// estimate, so another instance can settle it when the owner dies (docs/DATA_MODEL.md §9), and
    /// the owner's cap (`maxlen`, `RELAY_BUFFER_EVENTS`), which a lease expiry on
    /// another instance trims with (its text hold follows that cap: `TextCheckpoint`).
    /// `last_seq` is not kept per event: the top entry is the last seq; the final event
    /// and a lease expiry write it.
    /// With a stored request (`StoredRequest`, ARGV 10, '' for none) it is kept in the
    /// request key with the stream's TTL, for a takeover (docs/DATA_MODEL.md §6.1).
    /// The meta records the stream's `AtRestMode` (`atrest`, docs/DATA_MODEL.md §15): every
    /// writer and reader of the stream goes by it.
    /// KEYS: meta, lease, events, text, offsets, request. ARGV: owner, sid, instance, created_ms,
    /// ttl_ms, lease_ms, budget key, prompt estimate (tokens), cap (entries), stored request,
    /// at-rest mode (`sealed` or `plain`).
    /// Returns 1 when created, 0 when the id was taken.
    public static let create = """
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
    """

    /// The largest stream entry ID: `XSETID` to it fences a stream after its terminal
    /// event, so any later `XADD` (a lapsed owner's pipelined appends) is refused with
    /// "The stream has exhausted the last possible ID" (Redis `XSETID`, `XADD` docs).
    public static let fenceID = "18446744073709551615-18446744073709551615"

    /// The seq of a stream's top entry, 0 when it holds none (Lua snippet: sets `top`).
    static let topSeqLua = """
    local tops = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
    local top = 0
    if #tops > 0 then top = tonumber(string.match(tops[1][1], '^(%d+)')) end
    """

    /// Ends a running stream whose owner lease lapsed (the owning instance died or
    /// stalled): appends, once and atomically, the given `error` event as the next seq
    /// (the top entry + 1, exact `MAXLEN` of the owner's cap as the meta records it —
    /// this instance's when none is recorded — since the owner holds back its events
    /// by its own cap until their text is stored: `TextCheckpoint`), fences the stream (`XSETID` to `fenceID`: the old owner's
    /// later `XADD`s are refused, so nothing follows the terminal event), sets `state` to
    /// `failed` and `last_seq`, and publishes it (`upstream_lost`, docs/DATA_MODEL.md §6).
    /// The event is written in the stream's `AtRestMode`: ARGV 3 as this relay stores new
    /// streams' events (sealed when it has keys), ARGV 5 the plaintext, used in a stream the
    /// meta marks `plain`.
    /// KEYS: events, meta, live, lease, text, offsets. ARGV: maxlen (when the meta records none), ttl_ms, event JSON, lossless '1'/'0', plaintext event JSON,
    /// whether the caller has keys '1'/'0' (without: a sealed stream is left alone, `{0}`).
    /// Returns {seq appended, budget key, prompt estimate} (the caller settles the
    /// budget: prompt + seq − 1 deltas), {0} when the stream is not running or the lease
    /// is held, {-1} when the stream does not exist at all (expired, or lost with Redis' data).
    public static let expireLease = """
    local st = redis.call('HMGET', KEYS[2], 'state', 'budget', 'prompt', 'maxlen', 'atrest')
    if not st[1] then return {-1} end
    local ev = ARGV[3]
    if st[5] == 'plain' and ARGV[5] then ev = ARGV[5] end
    -- A relay without keys (ARGV 6 '0') cannot seal the event of a sealed stream: it leaves
    -- the stream to one that can.
    if st[5] == 'sealed' and ARGV[6] == '0' then return {0} end
    if st[1] ~= 'running' then return {0} end
    if redis.call('EXISTS', KEYS[4]) == 1 then return {0} end
    \(topSeqLua)
    local seq = top + 1
    -- A taken-over stream is fenced between its new owner's appends (`takeover`).
    redis.call('XSETID', KEYS[1], (top == 0) and '0-1' or (top .. '-0'))
    redis.call('XADD', KEYS[1], 'MAXLEN', st[4] or ARGV[1], seq .. '-0', 'e', ev)
    redis.call('XSETID', KEYS[1], '\(fenceID)')
    if ARGV[4] == '1' then
      -- No text or offset for the terminal event: a catch-up only ever reads the text
      -- of events older than the oldest retained entry, and the entries after the
      -- owner's last text write are retained (TextCheckpoint).
      redis.call('PEXPIRE', KEYS[5], ARGV[2])
      redis.call('PEXPIRE', KEYS[6], ARGV[2])
    end
    redis.call('HSET', KEYS[2], 'last_seq', seq, 'state', 'failed')
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
    redis.call('PUBLISH', KEYS[3], seq .. ' ' .. ev)
    return {seq, st[2] or '', st[3] or '0'}
    """

    /// Appends the final event of a generation (`done` or `error`; once per stream, so
    /// a script is affordable): refuses unless the stream is `running` and its top entry
    /// is seq − 1, then `XADD` (exact `MAXLEN`), the fence (`XSETID` to `fenceID`), the
    /// text and offsets the appender had not written yet (`TextCheckpoint`: positional,
    /// so text an earlier write already stored is rewritten with the same bytes),
    /// `HSET state, last_seq`, and `PEXPIRE` of every key. It does not publish: the
    /// appender publishes every event after its `XADD` was acknowledged, in seq order
    /// (`StreamAppender`).
    /// With the `done` of an answer kept for `RELAY_ANSWER_RETENTION`, the same call writes
    /// its `RetainedAnswer` (`SET answer <record> PX <retention>`), so the record exists
    /// exactly when the stream ended with `done` (docs/DATA_MODEL.md §14).
    /// KEYS: events, meta, text, offsets, answer, request (its TTL refreshed too).
    /// ARGV: seq, event JSON, maxlen, ttl_ms, final state, lossless '1'/'0', the record
    /// ('' for none), its lifetime ms, the writer's ownership epoch ('0' for the stream's
    /// creator, `takeover`), then when text is buffered: text start offset (bytes), the
    /// text, and a (seq, end offset) pair per buffered event.
    /// Errors: `NOSTREAM` (meta or stream gone), `FINISHED <state>` (stream already
    /// ended), `FINISHED taken` (another instance took the stream over: a stale epoch),
    /// `OUTOFORDER <top seq>` (seq is not top + 1). Returns seq.
    public static let appendFinal = """
    local st = redis.call('HMGET', KEYS[2], 'state', 'epoch')
    if not st[1] then return redis.error_reply('NOSTREAM stream expired') end
    if st[1] ~= 'running' then return redis.error_reply('FINISHED ' .. st[1]) end
    if (st[2] or '0') ~= ARGV[9] then return redis.error_reply('FINISHED taken') end
    \(topSeqLua)
    local seq = tonumber(ARGV[1])
    if seq ~= top + 1 then return redis.error_reply('OUTOFORDER ' .. top) end
    if ARGV[9] ~= '0' then redis.call('XSETID', KEYS[1], \(unfenceLua)) end
    if not redis.call('XADD', KEYS[1], 'NOMKSTREAM', 'MAXLEN', ARGV[3], ARGV[1] .. '-0', 'e', ARGV[2]) then
      return redis.error_reply('NOSTREAM stream expired')
    end
    redis.call('XSETID', KEYS[1], '\(fenceID)')
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
    """

    /// What an appender needs after a failed or ambiguous append (rare path): the meta
    /// `state`, the top entry's ID, the entries after the acknowledged seq, and — when
    /// its lossless-resume text is confirmed stored through a seq — what Redis holds of
    /// it: that seq's end offset (`BITFIELD GET u32`), or -1 when the `text` key is
    /// shorter than that offset (a failover or restart can lose a text write whose
    /// reply came back while keeping the acknowledged `XADD`s that preceded it).
    /// The state is reported as `taken` when the meta's ownership epoch is not the
    /// caller's (another instance took the stream over, `takeover`), whether the taker is
    /// still generating or has ended the stream: a stale owner never settles.
    /// KEYS: events, meta, text, offsets. ARGV: acknowledged seq, most entries to
    /// return, seq the text is confirmed through ('0': none), the caller's epoch, and
    /// optionally the length the `text` key must have (its sealed records,
    /// docs/DATA_MODEL.md §15; default: that seq's end offset).
    /// Returns {} when the meta hash or the stream key is gone, else
    /// {state, top entry ID or '', entries (as `XRANGE`), stored end offset or -1 (-1
    /// too when not asked)}.
    public static let appendStatus = """
    local m = redis.call('HMGET', KEYS[2], 'state', 'epoch')
    local st = m[1]
    if not st or redis.call('EXISTS', KEYS[1]) == 0 then return {} end
    if (m[2] or '0') ~= (ARGV[4] or '0') then st = 'taken' end
    local tops = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
    local top = ''
    if #tops > 0 then top = tops[1][1] end
    local textEnd = -1
    if ARGV[3] ~= '0' then
      textEnd = redis.call('BITFIELD', KEYS[4], 'GET', 'u32', '#' .. ARGV[3])[1]
      local need = textEnd
      if ARGV[5] then need = tonumber(ARGV[5]) end
      if redis.call('STRLEN', KEYS[3]) < need then textEnd = -1 end
    end
    return {st, top, redis.call('XRANGE', KEYS[1], '(' .. ARGV[1] .. '-0', '+', 'COUNT', ARGV[2]), textEnd}
    """

    /// Reads what a resume needs in one round trip.
    /// KEYS: meta, events, text. Returns nil when the stream does not exist, else
    /// {owner, state, top entry ID or '' (the last seq), first retained entry ID or '',
    /// sid, text length}.
    public static let open = """
    local m = redis.call('HMGET', KEYS[1], 'owner', 'state', 'sid')
    if not m[1] then return nil end
    local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
    local fid = ''
    if #first > 0 then fid = first[1][1] end
    local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
    local lid = ''
    if #last > 0 then lid = last[1][1] end
    return {m[1], m[2], lid, fid, m[3] or '', redis.call('STRLEN', KEYS[3])}
    """

    /// The text and the end offsets of events `from+1 … to`, for a lossless catch-up
    /// (docs/DATA_MODEL.md §4). KEYS: text, offsets, meta. ARGV: from, to, whether the
    /// caller has keys '1'/'0' (the mode of a stream whose meta records none).
    /// Returns nil when the text has expired; else
    /// `{start, end, ends, text, sealed}`: `start` the end offset of event `from` (0 for
    /// 0), `end` that of event `to`, `ends` the `offsets` key's 4 bytes per seq
    /// `from+1 … to` (`OffsetRuns`), `text` the bytes `start ..< end` — or, in a stream
    /// sealed at rest (the meta's `atrest`, docs/DATA_MODEL.md §15), the whole text key,
    /// whose records the relay opens before it cuts — and `sealed` 1 or 0.
    public static let catchUp = """
    if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
    local from = tonumber(ARGV[1])
    local to = tonumber(ARGV[2])
    local o = redis.call('BITFIELD', KEYS[2], 'GET', 'u32', '#' .. ARGV[1], 'GET', 'u32', '#' .. ARGV[2])
    local s = o[1]
    local e = o[2]
    if from == 0 then s = 0 end
    local ends = redis.call('GETRANGE', KEYS[2], 4 * (from + 1), 4 * to + 3)
    local mode = KEYS[3] and redis.call('HGET', KEYS[3], 'atrest')
    if mode == 'sealed' or (not mode and ARGV[3] == '1') then
      return {s, e, ends, redis.call('GET', KEYS[1]), 1}
    end
    if e <= s then return {s, e, ends, '', 0} end
    return {s, e, ends, redis.call('GETRANGE', KEYS[1], s, e - 1), 0}
    """
}

extension Scripts {
    /// A worker's heartbeat (docs/DATA_MODEL.md §6.2): `ZADD relay:instances` (KEYS[1])
    /// ARGV[2] (expiry, unix ms) ARGV[1] (heartbeat name); returns 1 when the member was
    /// missing or its previous score had lapsed by ARGV[3] (now, unix ms) — other
    /// instances' sweeps may have forgotten its streams meanwhile — else 0.
    public static let heartbeat = """
    local old = redis.call('ZSCORE', KEYS[1], ARGV[1])
    redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
    if (not old) or tonumber(old) <= tonumber(ARGV[3]) then return 1 end
    return 0
    """

    /// Admits a new generation for a session unless it already runs `max` of them
    /// (`RELAY_MAX_STREAMS_PER_SESSION`, docs/DATA_MODEL.md §8). The session's running streams are
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
    /// A `DELETE` of a stream (docs/PROTOCOL.md §7): reads the stream's owner and state and
    /// leaves the cancel marker (`SET … PX`) when no stream of the id exists yet or it is
    /// running. A generation reads the marker after it was registered on its worker and
    /// before it calls the upstream (register first, then check), so a `DELETE` that
    /// reached any instance before the stream was created, or before its generation could
    /// hear `relay:cancel`, still stops it. Ids are scoped by owner (`RequestID.scoped(by:)`),
    /// so the marker is the caller's alone; it shares the stream's hash tag (one slot).
    /// KEYS: meta, cancel marker. ARGV: owner (`sub`), marker lifetime ms.
    /// Returns `pending` (no stream yet: marker left), `other` (the meta names another
    /// owner: nothing written), or the stream's state (`running`: marker left).
    public static let requestCancel = """
    local m = redis.call('HMGET', KEYS[1], 'owner', 'state')
    if not m[1] then
      redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
      return 'pending'
    end
    if m[1] ~= ARGV[1] then return 'other' end
    if m[2] == 'running' then redis.call('SET', KEYS[2], '1', 'PX', ARGV[2]) end
    return m[2] or ''
    """
}

extension Scripts {
    /// `expireLease` for Redis Cluster: the live channel is a sharded channel
    /// (`SPUBLISH`, Redis 7; the channel hashes to the stream's slot, so the script stays on it).
    public static let expireLeaseSharded = expireLease.replacingOccurrences(of: "redis.call('PUBLISH'", with: "redis.call('SPUBLISH'")
}

extension Scripts {
    /// The ID a taken-over stream's last generated ID is set back to before its new
    /// owner's append (Lua expression; `seq` is the appended seq): the previous entry's
    /// `<seq - 1>-0`, or `0-1` before the first (the empty stream `create` made). `XSETID`
    /// refuses an ID below the top entry, so a seq already stored is refused too.
    static let unfenceLua = "(seq == 1) and '0-1' or ((seq - 1) .. '-0')"

    /// Takes over a running stream whose owner lease lapsed (docs/DATA_MODEL.md §6.1), at
    /// most once per lapse and only under the continuation limit: bumps the meta's
    /// ownership `epoch` and `continuations`, sets the lease to the taker, and fences the
    /// stream (`XSETID` to `fenceID`): the lapsed owner's pipelined `XADD`s are refused
    /// from now on, and the new owner appends with `appendFenced`, which checks its epoch.
    /// Nothing is changed when the stream is not running, its lease is held, the limit
    /// is reached, no request is stored, or the text so far cannot be rebuilt (entries
    /// trimmed and no lossless-resume text): the caller then ends it with `expireLease`.
    /// KEYS: events, meta, lease, text, offsets, request.
    /// ARGV: taker instance, lease_ms, most continuations, ttl_ms, lossless '1'/'0', whether
    /// the taker has keys '1'/'0' (the mode of a stream whose meta records none).
    /// Each non-negative reply ends with the stream's at-rest mode (the meta's `atrest`,
    /// '' when none): the taker reads and writes the stream by it. {-3}: the stream is sealed
    /// and the taker has no keys; nothing is changed (a relay with keys takes it).
    /// Returns {-1} when the stream does not exist, {0} when its lease is held, {3, state,
    /// budget key, prompt tokens charged, last seq, the final entry (as `XREVRANGE`)} when it
    /// has ended (its settlement may be lost with its owner: `EventLog.EndedStream`), {-2} when it cannot be continued (limit reached,
    /// no stored request, text not rebuildable), else {1, new epoch, top seq, stored
    /// request, text of the events before the oldest retained entry, retained entries
    /// (as `XRANGE`), continuations so far (this one included), owner, sid, prompt tokens
    /// charged so far (the meta's `prompt`: the first call's estimate plus each earlier
    /// continuation's re-sent prompt), the offsets key ('' without lossless resume), the
    /// whole text key when sealed (its records; the text before the oldest entry is then
    /// '' and cut by the relay, `EventLog.taken`)}.
    public static let takeover = """
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
    \(topSeqLua)
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
          local e = redis.call('BITFIELD', KEYS[5], 'GET', 'u32', '#' .. (first - 1))[1]
          if e > 0 then prefix = redis.call('GETRANGE', KEYS[4], 0, e - 1) end
        end
      end
    elseif top > 0 then
      return {-2}
    end
    local epoch = tonumber(st[2] or '0') + 1
    redis.call('HSET', KEYS[2], 'epoch', epoch, 'continuations', n + 1, 'instance', ARGV[1])
    redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
    redis.call('XSETID', KEYS[1], '\(fenceID)')
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    redis.call('PEXPIRE', KEYS[6], ARGV[4])
    return {1, epoch, top, req, prefix, entries, n + 1, st[4] or '', st[5] or '', st[6] or '0', offsets, whole, atrest}
    """

    /// One non-final append of a taken-over stream's new owner (docs/DATA_MODEL.md §6.1):
    /// refuses unless the stream is `running` under the writer's epoch, then sets the
    /// last generated ID back (`unfenceLua`), `XADD`s (`MAXLEN` when given) and fences it
    /// again (`fenceID`), so only this epoch's appends are ever stored.
    /// KEYS: events, meta. ARGV: seq, event JSON, epoch, maxlen or ''.
    /// Errors: `NOSTREAM`, `FINISHED <state>`, `FINISHED taken` (stale epoch), and
    /// `XSETID`'s refusal when the seq is already stored. Returns seq.
    public static let appendFenced = """
    local st = redis.call('HMGET', KEYS[2], 'state', 'epoch')
    if not st[1] or redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('NOSTREAM stream expired') end
    if st[1] ~= 'running' then return redis.error_reply('FINISHED ' .. st[1]) end
    if (st[2] or '0') ~= ARGV[3] then return redis.error_reply('FINISHED taken') end
    local seq = tonumber(ARGV[1])
    redis.call('XSETID', KEYS[1], \(unfenceLua))
    if ARGV[4] ~= '' then
      redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[4], ARGV[1] .. '-0', 'e', ARGV[2])
    else
      redis.call('XADD', KEYS[1], ARGV[1] .. '-0', 'e', ARGV[2])
    end
    redis.call('XSETID', KEYS[1], '\(fenceID)')
    return seq
    """

    /// Refreshes a running generation's owner lease only while it is still the owner
    /// (docs/DATA_MODEL.md §6.1): the meta's ownership epoch is the caller's and the lease
    /// is the caller's or has lapsed unclaimed. An owner that stalled past its lease and
    /// woke after a takeover must not write the taker's lease over (the taker's lease
    /// would then lapse with the woken owner, and a third instance take the stream again).
    /// KEYS: lease, meta. ARGV: instance, lease ms, epoch.
    /// Returns 1 when refreshed, 0 when the stream no longer runs (ended or gone: the
    /// owner's next append says how), -1 when another instance took it over.
    public static let refreshLease = """
    local m = redis.call('HMGET', KEYS[2], 'state', 'epoch')
    if m[1] ~= 'running' then return 0 end
    if (m[2] or '0') ~= ARGV[3] then return -1 end
    local holder = redis.call('GET', KEYS[1])
    if holder and holder ~= ARGV[1] then return -1 end
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
    """

    /// Releases a lease only while it names the caller's instance (`Lua/releaseLease.lua`:
    /// KEYS lease; ARGV instance). Reply: `ReleaseLeaseReply`.
    public static let releaseLease = LuaScript<ReleaseLeaseReply>(file: "releaseLease.lua", bytes: PackageResources.releaseLease_lua)

    /// The reply of `releaseLease`.
    public struct ReleaseLeaseReply: ScriptReply, Equatable {
        /// `true` when the lease named the caller's instance and was deleted; `false` when
        /// it names another instance or is gone (nothing changed).
        public var released: Bool

        public init(reply: RedisReply) throws(RedisFailure) {
            guard let n = reply.int, n == 0 || n == 1 else { throw .unexpectedReply("releaseLease.lua", reply) }
            released = n == 1
        }
    }
}

extension Scripts {
    /// Removes a worker's heartbeat from `relay:instances` (KEYS[1]) only while it is
    /// still lapsed: ARGV[1] = heartbeat name, ARGV[2] = now, unix ms. Returns 1 if removed.
    public static let removeLapsedInstance = """
    local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
    if s and tonumber(s) <= tonumber(ARGV[2]) then return redis.call('ZREM', KEYS[1], ARGV[1]) end
    return 0
    """
}
