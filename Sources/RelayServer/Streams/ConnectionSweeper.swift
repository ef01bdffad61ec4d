import RelayCore

/// The worker's periodic sweep of its live client connections and their
/// backpressure (docs/PROTOCOL.md §4): ends streams when Redis has been away longer
/// than `RELAY_REDIS_OUTAGE_GRACE` or the connection's token expired, closes slow
/// consumers, and writes `: ping` heartbeats on quiet connections. Decides with
/// `ConnectionSweep` and `SlowConsumerPolicy`. Loop thread only.
final class ConnectionSweeper {
    private let metrics: Metrics
    private let outage: RedisOutageWatch
    private let heartbeatMs: UInt64
    private let graceMs: UInt64
    private let leewayS: Int64
    /// `RELAY_MAX_PENDING_BYTES`, read once (checked on every write).
    private let maxPendingBytes: Int

    init(settings: StreamSettings, metrics: Metrics, outage: RedisOutageWatch) {
        self.metrics = metrics
        self.outage = outage
        heartbeatMs = settings.heartbeatMs
        graceMs = settings.redisOutageGraceMs
        leewayS = settings.tokenLeewayS
        maxPendingBytes = settings.maxPendingBytes
    }

    /// How often `sweep` runs, ms (`ConnectionSweep.intervalMs`).
    var intervalMs: UInt64 { ConnectionSweep.intervalMs(heartbeatMs: heartbeatMs) }

    /// Sweeps `subscriptions` once. `nowMs`: loop clock; `nowS`: wall clock, unix seconds.
    func sweep(_ subscriptions: [Subscription], nowMs: UInt64, nowS: Int64) {
        let cut = outage.state.cutsStreams(nowMs: nowMs, graceMs: graceMs)
        for s in subscriptions {
            switch ConnectionSweep.verdict(nowMs: nowMs, nowS: nowS, redisCut: cut, lastWriteMs: s.lastWriteMs,
                                           tokenExpiresAt: s.tokenExpiry, leewayS: leewayS, heartbeatMs: heartbeatMs) {
            case .redisUnavailable:
                s.fail(APIError(.redisUnavailable, "Redis has been unreachable for more than \(graceMs) ms"))
            case .tokenExpired:
                s.fail(.tokenExpired)
            case .keep(let heartbeatDue):
                if isSlowConsumer(s, nowMs: nowMs) { continue }
                if heartbeatDue { s.heartbeat(nowMs: nowMs) }
            }
        }
    }

    /// Closes a connection whose unsent output stayed above `RELAY_MAX_PENDING_BYTES`
    /// for `SlowConsumerPolicy.windowMs` (or passed its hard limit) and returns true:
    /// the client resumes from Redis later; memory stays bounded however slowly clients
    /// read, and one large event never cuts a client that reads at full speed.
    func isSlowConsumer(_ s: Subscription, nowMs: UInt64) -> Bool {
        let pending = s.sink.pendingOutputBytes
        // The common case (nothing much queued, never over the limit) decides nothing: no
        // policy state to create or update, and no copy of the config per event.
        if pending <= maxPendingBytes && s.backpressure?.overLimitSinceMs == nil { return false }
        var policy = s.backpressure ?? SlowConsumerPolicy(limitBytes: maxPendingBytes)
        let slow = policy.isSlow(pendingBytes: pending, nowMs: nowMs)
        s.backpressure = policy
        guard slow else { return false }
        metrics.add(.slowConsumerDisconnects)
        Log.warn("slow consumer disconnected", ["requestId": s.id.value, "pendingBytes": pending])
        s.abort()
        return true
    }
}
