import RelayRedis

/// The completion webhooks' outbox in Redis (docs/DATA_MODEL.md §13): every message due,
/// shared by all instances, so a message survives the instance that ended its answer and
/// the one that was sending it.
///
/// Keys, one Redis Cluster slot (hash tag `{relay:webhooks}`):
/// * `relay:webhooks:{relay:webhooks}:due` — sorted set, member the `webhook-id`, score the
///   Redis time (ms) it is next due; while an instance holds a claim, the claim's end;
/// * `…:msgs` — hash `webhook-id` → the message's record (`<scoped request id> <ended ms> <sub>`);
/// * `…:attempts` — hash `webhook-id` → attempts made so far;
/// * `…:claims` — hash `webhook-id` → the token of the instance sending it now;
/// * `…:sent` — sorted set of `webhook-id`s given up or delivered, score the Redis time
///   (ms); kept 24 h so a late second enqueue of the same answer is refused;
/// * `…:needkeys` — hash `webhook-id` → 1 for a message whose final event is sealed under a
///   key the instance that tried it lacks: instances without keys leave it to those with
///   them (they claim it only once it has waited `keylessPatienceMs`, to drop it when its
///   stream expired), so a mixed fleet during a switch to encryption still sends it.
///
/// All times are Redis's clock (`TIME` inside the scripts), so instances with skewed
/// clocks agree on what is due and on when a claim lapsed. Each script runs atomically:
/// one instance claims a message at a time, and only the holder of the current claim can
/// settle it. Loop thread only.
public final class CompletionWebhookOutbox {
    private let connection: any RedisCommandChannel
    private let scripts: ScriptRunner
    /// Opens the final event sealed at rest (docs/DATA_MODEL.md §15); the worker's.
    private let cipher: AtRestCipher?

    /// The outbox's keys (due, msgs, attempts, claims, sent).
    public static let keys: [String] = ["due", "msgs", "attempts", "claims", "sent", "needkeys"].map { "relay:webhooks:{relay:webhooks}:" + $0 }

    /// How long a message needing keys waits before an instance without keys claims it
    /// again (to find its stream expired and drop it), ms.
    public static let keylessPatienceMs = 30_000

    /// How long a delivered or dropped id is remembered against a second enqueue, ms.
    public static let sentMemoryMs = 86_400_000

    /// - Parameter cipher: the worker's (`EventLog.cipher`): the final event is read by
    ///   its stream's `AtRestMode` like every other stored value.
    public init(connection: any RedisCommandChannel, scripts: ScriptRunner, cipher: AtRestCipher? = nil) {
        self.cipher = cipher
        self.connection = connection
        self.scripts = scripts
    }

    /// The scripts to `SCRIPT LOAD` on every (re)connection.
    public static var allScripts: [String] { [enqueueScript, claimScript, settleScript, subjectScript] }

    /// Redis time in ms inside a script (sets `now`). `TIME` is allowed before writes with
    /// effects replication, Redis ≥ 5's default and 7's only mode.
    private static let nowLua = """
    if redis.replicate_commands then redis.replicate_commands() end
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    """

    /// KEYS: due, msgs, attempts, claims, sent. ARGV: id, record, delay ms.
    /// Returns 1 when queued, 0 when the id is queued already or was sent or given up.
    static let enqueueScript = """
    \(nowLua)
    if redis.call('ZSCORE', KEYS[5], ARGV[1]) then return 0 end
    if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
    return 1
    """

    /// Claims up to ARGV[3] due messages for ARGV[1] ms under token ARGV[2]: each one's
    /// score moves to the claim's end (another instance takes it again only once the
    /// claim lapsed) and its claim token is set. Forgets `sent` ids older than ARGV[4] ms.
    /// A claimer without keys (ARGV[5] '0') skips a message marked as needing keys until it
    /// has been due ARGV[6] ms.
    /// KEYS: due, msgs, attempts, claims, sent, needkeys.
    /// Returns a flat array: id, record, attempts so far, for each claimed message.
    static let claimScript = """
    \(nowLua)
    redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - tonumber(ARGV[4]))
    local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
    local out = {}
    for i = 1, #due, 2 do
      local id = due[i]
      local rec = redis.call('HGET', KEYS[2], id)
      if rec and ARGV[5] == '0' and redis.call('HEXISTS', KEYS[6], id) == 1
         and tonumber(due[i + 1]) > now - tonumber(ARGV[6]) then
        -- needs keys this claimer lacks: left due for one that has them
      elseif rec then
        redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), id)
        redis.call('HSET', KEYS[4], id, ARGV[2])
        out[#out + 1] = id
        out[#out + 1] = rec
        out[#out + 1] = redis.call('HGET', KEYS[3], id) or '0'
      else
        redis.call('ZREM', KEYS[1], id)
      end
    end
    return out
    """

    /// Settles message ARGV[1] claimed under token ARGV[2]: ARGV[3] is `done` (delivered,
    /// or given up: forgotten, remembered in `sent`), `retry` (one more attempt counted,
    /// due again in ARGV[4] ms), `later` (not attempted: due again in ARGV[4] ms) or
    /// `needkeys` (as `later`, and marked as needing keys the claimer lacks).
    /// KEYS: due, msgs, attempts, claims, sent, needkeys.
    /// Returns 1, or 0 when the claim is no longer this one's (it lapsed and another
    /// instance claimed the message; nothing is changed).
    static let settleScript = """
    \(nowLua)
    if redis.call('HGET', KEYS[4], ARGV[1]) ~= ARGV[2] then return 0 end
    redis.call('HDEL', KEYS[4], ARGV[1])
    if ARGV[3] == 'done' then
      redis.call('ZREM', KEYS[1], ARGV[1])
      redis.call('HDEL', KEYS[2], ARGV[1])
      redis.call('HDEL', KEYS[3], ARGV[1])
      redis.call('HDEL', KEYS[6], ARGV[1])
      redis.call('ZADD', KEYS[5], now, ARGV[1])
      return 1
    end
    if ARGV[3] == 'retry' then redis.call('HINCRBY', KEYS[3], ARGV[1], 1) end
    if ARGV[3] == 'needkeys' then redis.call('HSET', KEYS[6], ARGV[1], 1) end
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
    return 1
    """

    /// One claimed message.
    public struct Claimed: Equatable, Sendable {
        /// The `webhook-id`.
        public let id: String
        /// The stream's scoped request id (`<owner hash>:<request id>`).
        public let scopedID: String
        /// The token's `sub` of the stream's owner.
        public let sub: String
        /// When the answer ended, Unix ms (the ending instance's clock).
        public let endedMs: Int64
        /// Attempts made before this claim.
        public let attempts: Int
    }

    /// Queues message `id` of stream `scopedID` owned by `sub`, which ended at `endedMs`
    /// (Unix ms), first due in `delayMs`. Idempotent per id. `done` gets `true` when
    /// queued, `false` when it was already queued or sent, `nil` on a Redis failure.
    public func enqueue(id: String, scopedID: String, sub: String, endedMs: Int64, delayMs: Int,
                        done: @escaping (Bool?) -> Void) {
        scripts.run(Self.enqueueScript, keys: Self.keys, args: [id, "\(scopedID) \(endedMs) \(sub)", String(delayMs)]) { r in
            done(r.errorMessage == nil ? r.int == 1 : nil)
        }
    }

    /// Claims up to `limit` due messages for `claimMs` under `token`. `done` gets them
    /// (empty on a Redis failure).
    public func claim(token: String, claimMs: Int, limit: Int, done: @escaping ([Claimed]) -> Void) {
        scripts.run(Self.claimScript, keys: Self.keys,
                    args: [String(claimMs), token, String(limit), String(Self.sentMemoryMs), cipher != nil ? "1" : "0",
                           String(Self.keylessPatienceMs)]) { r in
            guard let a = r.array else { return done([]) }
            var out: [Claimed] = []
            var i = 0
            while i + 2 < a.count {
                if let id = a[i].string, let rec = a[i + 1].string {
                    let parts = rec.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
                    if parts.count == 3, let ended = Int64(parts[1]) {
                        out.append(Claimed(id: id, scopedID: String(parts[0]), sub: String(parts[2]), endedMs: ended,
                                           attempts: Int(a[i + 2].string ?? "0") ?? 0))
                    }
                }
                i += 3
            }
            done(out)
        }
    }

    /// How a claimed message is settled.
    public enum Settlement: Sendable, Equatable {
        /// Delivered or given up: removed, and remembered against a second enqueue.
        case done
        /// An attempt failed: counted, due again after `afterMs`.
        case retry(afterMs: Int)
        /// Not attempted (the answer's end is not stored yet): due again after `afterMs`.
        case later(afterMs: Int)
        /// Not attempted: the final event is sealed under a key this instance lacks; due
        /// again after `afterMs`, for instances with keys (`keylessPatienceMs`).
        case needsKeys(afterMs: Int)
    }

    /// Settles claimed message `id` held under `token`. `done` gets `true` when settled,
    /// `false` when the claim had lapsed and was taken by another instance, `nil` on a
    /// Redis failure (the claim then lapses and the message is claimed again).
    public func settle(id: String, token: String, _ s: Settlement, done: @escaping (Bool?) -> Void) {
        let args: [String]
        switch s {
        case .done: args = [id, token, "done", "0"]
        case .retry(let ms): args = [id, token, "retry", String(ms)]
        case .later(let ms): args = [id, token, "later", String(ms)]
        case .needsKeys(let ms): args = [id, token, "needkeys", String(ms)]
        }
        scripts.run(Self.settleScript, keys: Self.keys, args: args) { r in
            done(r.errorMessage == nil ? r.int == 1 : nil)
        }
    }

    /// What the sender needs of stream `keys` before an attempt: its meta `state`
    /// (`nil` when the stream expired), its top entry's event as stored, whether a client
    /// read its final event (`StreamKeys.delivered`), and its at-rest mode (the meta's
    /// `atrest`, '' when none). One script on the stream's slot.
    /// KEYS: meta, events, delivered.
    static let subjectScript = """
    local m = redis.call('HMGET', KEYS[1], 'state', 'atrest')
    local st = m[1]
    if not st then return {} end
    local tops = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
    local e = ''
    if #tops > 0 then e = tops[1][2][2] or '' end
    return {st, e, redis.call('EXISTS', KEYS[3]), m[2] or ''}
    """

    /// What the stream says about a due message.
    public enum Subject: Equatable, Sendable {
        /// The stream's keys are gone (expired): nothing to report.
        case gone
        /// The stream still runs (its final event is not stored yet).
        case running
        /// The stream ended with `finalEventJSON` (opened: plaintext JSON); `read`: some
        /// client got that event.
        case ended(finalEventJSON: String, read: Bool)
        /// The final event is stored but does not open here (a key this relay lacks,
        /// another key under the same kid, plaintext in a sealed stream, damage).
        case unreadable(AtRestOpenError)
        /// Redis could not be asked.
        case unknown
    }

    /// Reads the subject of a message about stream `streamKeys`.
    public func subject(_ streamKeys: StreamKeys, done: @escaping (Subject) -> Void) {
        scripts.run(Self.subjectScript, keys: [streamKeys.meta, streamKeys.events, streamKeys.delivered], args: []) { [cipher] r in
            guard r.errorMessage == nil, let a = r.array else { return done(.unknown) }
            guard a.count >= 3, let state = a[0].string else { return done(.gone) }
            if state == "running" { return done(.running) }
            let mode = AtRestMode.of(metaField: a.count > 3 ? a[3].string : nil, haveKeys: cipher != nil)
            do throws(AtRestOpenError) {
                let json = try AtRestValue.open(a[1].string ?? "", key: streamKeys.events, mode: mode, cipher: cipher)
                done(.ended(finalEventJSON: json, read: a[2].int == 1))
            } catch {
                done(.unreadable(error))
            }
        }
    }

    /// Records that a client was written stream `streamKeys`' final event: the webhook of
    /// its answer is not sent (kept `ttlMs`, the stream's TTL).
    public func markRead(_ streamKeys: StreamKeys, ttlMs: Int) {
        connection.send(["SET", streamKeys.delivered, "1", "PX", String(ttlMs)], nil)
    }
}
