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
