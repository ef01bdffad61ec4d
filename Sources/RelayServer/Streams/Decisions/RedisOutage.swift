/// The Redis-outage policy of a worker (docs/PROTOCOL.md §8, docs/ARCHITECTURE.md): when
/// the command connection went down and came back, whether live streams are cut with
/// `503 redis_unavailable`, and whether owner leases may be judged yet. Times are loop milliseconds.
public struct RedisOutage: Sendable, Equatable {
    /// When the connection was lost (or a command found it down); `nil` while up.
    public private(set) var downSinceMs: UInt64?
    /// When the connection last came up.
    public private(set) var upSinceMs: UInt64 = 0

    public init() {}

    /// The connection came up.
    public mutating func connected(nowMs: UInt64) {
        downSinceMs = nil
        upSinceMs = nowMs
    }

    /// The connection was lost; the first loss counts.
    public mutating func disconnected(nowMs: UInt64) {
        if downSinceMs == nil { downSinceMs = nowMs }
    }

    /// `true` once Redis has been away for `graceMs` (`RELAY_REDIS_OUTAGE_GRACE`):
    /// every live stream ends with `503 redis_unavailable`.
    public func cutsStreams(nowMs: UInt64, graceMs: UInt64) -> Bool {
        downSinceMs.map { nowMs >= $0 + graceMs } ?? false
    }

    /// `true` once the connection has been up for a whole lease period, so owners
    /// had a chance to refresh leases that lapsed during the outage.
    public func leasesJudgeable(nowMs: UInt64, leaseMs: UInt64) -> Bool {
        nowMs >= upSinceMs + leaseMs
    }
}
