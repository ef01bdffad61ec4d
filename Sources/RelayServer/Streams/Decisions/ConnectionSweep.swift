/// What a worker's periodic sweep does with one live client connection (docs/PROTOCOL.md
/// §4): the Redis-outage cut first, then the token's expiry, then — for a connection
/// that stays — the backpressure check and a heartbeat when the connection has been
/// quiet. Pure: times are given, in milliseconds (`nowMs`, loop clock) and seconds
/// (`nowS`, wall clock, for the token's `exp`).
public enum ConnectionSweep {
    /// The sweep's verdict for one connection.
    public enum Verdict: Sendable, Equatable {
        /// Redis has been away longer than the outage grace: end with `503 redis_unavailable`.
        case redisUnavailable
        /// The connection's token expired mid-stream: end with `401 token_expired`.
        case tokenExpired
        /// The connection stays; `heartbeatDue`: write a `: ping` comment unless the
        /// backpressure check closes it first.
        case keep(heartbeatDue: Bool)
    }

    /// Judges one connection.
    /// - Parameters:
    ///   - redisCut: `RedisOutage.cutsStreams` now.
    ///   - lastWriteMs: when the client last got bytes (event or heartbeat), loop ms.
    ///   - tokenExpiresAt: the token's `exp`, unix seconds (`nil`: none).
    ///   - leewayS: the clock-skew leeway for `exp`, seconds.
    ///   - heartbeatMs: the heartbeat interval, ms.
    public static func verdict(nowMs: UInt64, nowS: Int64, redisCut: Bool, lastWriteMs: UInt64,
                               tokenExpiresAt: Int64?, leewayS: Int64, heartbeatMs: UInt64) -> Verdict {
        if redisCut { return .redisUnavailable }
        if ConnectionPolicy.tokenExpired(nowS: nowS, expiresAt: tokenExpiresAt, leewayS: leewayS) { return .tokenExpired }
        return .keep(heartbeatDue: ConnectionPolicy.heartbeatDue(nowMs: nowMs, lastWriteMs: lastWriteMs, intervalMs: heartbeatMs))
    }

    /// How often the sweep runs for a heartbeat interval of `heartbeatMs`: a quarter of
    /// it, between 10 ms and 1 s, so a heartbeat is at most that late.
    public static func intervalMs(heartbeatMs: UInt64) -> UInt64 {
        max(10, min(1000, heartbeatMs / 4))
    }
}
