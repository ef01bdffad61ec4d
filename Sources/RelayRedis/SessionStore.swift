import RelayCore

/// Session-level state in Redis (DESIGN §3, issue 3): revocation markers, token
/// budgets, and the running generations of each session. Loop thread only.
public final class SessionStore {
    private let connection: RedisConnection
    private let scripts: ScriptRunner

    public init(connection: RedisConnection, scripts: ScriptRunner) {
        self.connection = connection
        self.scripts = scripts
    }

    /// Key of a session's running streams (sorted set, score = lease expiry ms).
    public static func streamsKey(sid: String) -> String { "relay:streams:{\(sid)}" }

    /// Whether `relay:revoked:{sid}` exists (`EXISTS`). One round trip; callers send
    /// their next command right after (pipelined) when they can.
    public func isRevoked(sid: String, done: @escaping (Result<Bool, RedisFailure>) -> Void) {
        connection.send(["EXISTS", StreamKeys.revoked(sid: sid)]) { r in
            if let e = r.errorMessage { return done(.failure(RedisFailure(e))) }
            done(.success(r.int == 1))
        }
    }

    /// Marks the session revoked for `ttlMs` and publishes it on `relay:revocations`
    /// (every worker of every instance cuts its live streams). Idempotent.
    public func revoke(sid: String, ttlMs: Int, done: @escaping (Result<Void, RedisFailure>) -> Void) {
        connection.send(["SET", StreamKeys.revoked(sid: sid), "1", "PX", String(ttlMs)], nil)
        connection.send(["PUBLISH", StreamKeys.revocationsChannel, sid]) { r in
            if let e = r.errorMessage { return done(.failure(RedisFailure(e))) }
            done(.success(()))
        }
    }

    /// Tokens used by `user` in `period` (`YYYY-MM`).
    public func budgetUsed(user: String, period: String, done: @escaping (Result<Int, RedisFailure>) -> Void) {
        connection.send(["GET", StreamKeys.budget(user: user, period: period)]) { r in
            if let e = r.errorMessage { return done(.failure(RedisFailure(e))) }
            done(.success(Int(r.int ?? 0)))
        }
    }

    /// Admits a generation for the session unless `max` already run (`Scripts.admit`).
    public func admit(sid: String, id: RequestID, nowMs: Int64, leaseMs: Int, max: Int,
                      done: @escaping (Result<Bool, RedisFailure>) -> Void) {
        scripts.run(Scripts.admit, keys: [SessionStore.streamsKey(sid: sid)],
                    args: [id.value, String(nowMs), String(nowMs + Int64(leaseMs)), String(max)]) { r in
            if let e = r.errorMessage { return done(.failure(RedisFailure(e))) }
            done(.success(r.int == 1))
        }
    }

    /// Extends a running generation's entry (with the lease refresh).
    public func refresh(sid: String, id: RequestID, untilMs: Int64) {
        let key = SessionStore.streamsKey(sid: sid)
        connection.send(["ZADD", key, "XX", String(untilMs), id.value], nil)
        connection.send(["PEXPIREAT", key, String(untilMs)], nil)
    }

    /// Removes a finished generation from its session's running set.
    public func release(sid: String, id: RequestID) {
        connection.send(["ZREM", SessionStore.streamsKey(sid: sid), id.value], nil)
    }
}
