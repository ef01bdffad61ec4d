/// The Redis-outage policy of a worker (issue 6): when the command connection went
/// down and came back, whether live streams are cut with `503 redis_unavailable`, and
/// whether owner leases may be judged yet. Times are loop milliseconds.
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

/// Owner-lease decisions (issue 4: an instance died mid-generation) for a stream read
/// on this worker but generated elsewhere. Times in milliseconds.
public enum LeasePolicy {
    /// Ask Redis about the owner's lease once the stream has been quiet for half a
    /// lease period.
    public static func shouldCheckOwner(nowMs: UInt64, quietSinceMs: UInt64, leaseMs: UInt64) -> Bool {
        nowMs >= quietSinceMs + leaseMs / 2
    }

    /// What `Scripts.expireLease` found.
    public enum Expiry: Sendable, Equatable {
        /// The owner still holds the lease (or the stream has ended): nothing to do.
        case ownerAlive
        /// The lease had lapsed: `upstream_lost` was appended at this seq (readers get it live).
        case ended(seq: UInt64)
        /// The stream no longer exists: readers end with `503 stream_lost`.
        case vanished
    }

    /// Reads the script's integer reply: the seq appended, 0 when nothing was needed,
    /// -1 when the stream no longer exists.
    public static func expiry(fromReply n: Int64) -> Expiry {
        if n > 0 { return .ended(seq: UInt64(n)) }
        return n < 0 ? .vanished : .ownerAlive
    }
}

/// Per-connection timing decisions of a live stream.
public enum ConnectionPolicy {
    /// A `: ping` comment is due when the connection has been quiet for `intervalMs`
    /// (DESIGN §2: every 15 s).
    public static func heartbeatDue(nowMs: UInt64, lastWriteMs: UInt64, intervalMs: UInt64) -> Bool {
        nowMs >= lastWriteMs + intervalMs
    }

    /// The connection's token expired (`exp` + leeway < now, RFC 7519 §4.1.4):
    /// the stream ends with `401 token_expired`.
    public static func tokenExpired(nowS: Int64, expiresAt: Int64?, leewayS: Int64) -> Bool {
        guard let exp = expiresAt else { return false }
        return nowS > exp + leewayS
    }
}
