import RelayCore
import RelayRedis

/// Session-level state in Redis (docs/DATA_MODEL.md §8): revocation markers
/// (global by `sid`) and the running generations of each session, keyed by the
/// owner (`OwnerHash` of `sub`) and `sid`. Budgets: `BudgetLedger`. Loop thread only.
public final class SessionStore {
    private let connection: any RedisCommandChannel
    private let scripts: ScriptRunner
    /// The refresh commands, written in place (loop thread).
    private let command = RESPCommand(capacity: 256)

    public init(connection: any RedisCommandChannel, scripts: ScriptRunner) {
        self.connection = connection
        self.scripts = scripts
    }

    /// Key of a session's running streams (sorted set, score = lease expiry ms), per
    /// owner: two users whose tokens carry the same `sid` have independent limits.
    public static func streamsKey(owner: String, sid: String) -> String { "relay:streams:{\(owner):\(sid)}" }

    /// Whether `relay:revoked:{sid}` exists (`EXISTS`). One round trip; callers send
    /// their next command right after (pipelined) when they can.
    public func isRevoked(sid: String, done: @escaping (Result<Bool, RedisFailure>) -> Void) {
        connection.send(["EXISTS", StreamKeys.revoked(sid: sid)]) { r in
            if let f = r.failure { return done(.failure(f)) }
            done(.success(r.int == 1))
        }
    }

    /// The read-ticket key every instance shares (docs/PROTOCOL.md §2.5): stores `candidate`
    /// (64 hex digits) at `relay:read-ticket-key` unless a key is already there (`SET NX`), then
    /// reads what is there (`GET`, pipelined on the same connection, so it sees the winner of
    /// any race). `done` gets the stored value (nil: none, deleted in between), or the failure.
    public func loadReadTicketKey(candidate: String, done: @escaping (Result<String?, RedisFailure>) -> Void) {
        connection.send(["SET", StreamKeys.readTicketKey, candidate, "NX"], nil)
        connection.send(["GET", StreamKeys.readTicketKey]) { r in
            if let f = r.failure { return done(.failure(f)) }
            done(.success(r.reply.string))
        }
    }

    /// Marks the session revoked for `ttlMs`, then publishes it on `relay:revocations`
    /// (every worker of every instance cuts its live streams). Idempotent. The marker is
    /// written before the publish (one connection, commands run in order): a request
    /// that registers its streams and then checks the marker (`StreamHub.recheckRevocation`) sees any
    /// revocation whose message it could have missed.
    public func revoke(sid: String, ttlMs: Int, done: @escaping (Result<Void, RedisFailure>) -> Void) {
        connection.send(["SET", StreamKeys.revoked(sid: sid), "1", "PX", String(ttlMs)], nil)
        connection.send(["PUBLISH", StreamKeys.revocationsChannel, sid]) { r in
            if let f = r.failure { return done(.failure(f)) }
            done(.success(()))
        }
    }

    /// Admits a generation for the session unless `max` already run (`Scripts.admit`);
    /// idempotent per `id`. `owner`: `OwnerHash` of the token's `sub`.
    public func admit(owner: String, sid: String, id: RequestID, nowMs: Int64, leaseMs: Int, max: Int,
                      done: @escaping (Result<Bool, RedisFailure>) -> Void) {
        scripts.run(Scripts.admit, keys: [SessionStore.streamsKey(owner: owner, sid: sid)],
                    args: [id.value, String(nowMs), String(nowMs + Int64(leaseMs)), String(max)]) { r in
            done(r.map { $0 == .admitted })
        }
    }

    /// Extends a running generation's entry (with the lease refresh): `ZADD <streamsKey>
    /// XX CH <untilMs> <id>` and `PEXPIREAT <streamsKey> <untilMs>` (unix ms).
    /// `streamsKey`: `streamsKey(owner:sid:)` of the generation, kept by its owner (this
    /// runs for every running generation every `EventLog.leaseMs / 3`). `missing` runs when
    /// the entry was not there to extend (`ZADD XX CH` changed nothing, Redis `ZADD` doc): it
    /// lapsed while its owner stalled past the lease, and another answer may hold the slot
    /// now — the caller admits it again (`admit`) or stops.
    public func refresh(streamsKey key: String, id: RequestID, untilMs: Int64, missing: @escaping () -> Void) {
        let c = command
        c.start(argumentCount: 6)
        c.add(constant: "ZADD")
        c.add(key)
        c.add(constant: "XX")
        c.add(constant: "CH")
        c.add(Int(untilMs))
        c.add(id.value)
        connection.send(c, view: { v in if case .integer(0) = v.reply { missing() } })
        c.start(argumentCount: 3)
        c.add(constant: "PEXPIREAT")
        c.add(key)
        c.add(Int(untilMs))
        connection.send(c, view: RedisReplyView.unread)
    }

    /// Removes a finished generation from its session's running set.
    public func release(owner: String, sid: String, id: RequestID) {
        connection.send(["ZREM", SessionStore.streamsKey(owner: owner, sid: sid), id.value], nil)
    }
}
