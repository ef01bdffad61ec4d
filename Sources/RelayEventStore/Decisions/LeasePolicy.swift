/// Owner-lease decisions (an instance died mid-generation: docs/DATA_MODEL.md §6) for a
/// stream read on this worker but generated elsewhere. Times in milliseconds.
public enum LeasePolicy {
    /// How often the worker looks for owned generations whose lease is due, ms. Each
    /// generation is refreshed on its own phase (`refreshDue`), so a worker owning 500
    /// generations sends their refresh commands spread over the interval, not as one
    /// burst of 2,000 commands that delays every `XADD` queued behind it (docs/BENCHMARKS.md).
    public static let refreshTickMs: UInt64 = 100

    /// Whether an owned generation's lease (with its session slot and budget
    /// reservation) is due for a refresh: `intervalMs` (a third of the lease) since its
    /// last refresh, or since it started (`Scripts.create` took the lease then).
    public static func refreshDue(nowMs: UInt64, lastRefreshMs: UInt64, intervalMs: UInt64) -> Bool {
        nowMs >= lastRefreshMs &+ intervalMs
    }

    /// Until when an owner knows its lease is held, loop ms: the lease (`leaseMs`) counted
    /// from when the refresh that Redis confirmed was sent (`sentAtMs`; Redis set the lease at
    /// or after that), less a sixth for reply and scheduling delays. Past it a stall (a paused
    /// process, a partition) may have let the lease lapse and another instance take the
    /// answer over, so the owner sends nothing more until a refresh confirms it again.
    public static func knownUntil(sentAtMs: UInt64, leaseMs: UInt64) -> UInt64 {
        sentAtMs &+ leaseMs &- leaseMs / 6
    }

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
