import RelayEventStore
/// The schedule of a worker's owner-lease rounds (docs/DATA_MODEL.md §6), every
/// `LeasePolicy.refreshTickMs`: which owned generations refresh their lease now, and
/// whether the owners of streams read here but generated elsewhere are judged now.
/// Pure: times are loop milliseconds, given by the caller.
public struct OwnerLeaseRound: Sendable, Equatable {
    /// When owners were last judged, loop ms.
    public private(set) var judgedMs: UInt64 = 0

    public init() {}

    /// Whether an owned generation refreshes its lease now: a third of the lease since
    /// its last refresh (each generation on its own phase, so refreshes spread over the
    /// interval instead of leaving as one burst).
    public static func refreshDue(nowMs: UInt64, lastRefreshMs: UInt64, leaseMs: UInt64) -> Bool {
        LeasePolicy.refreshDue(nowMs: nowMs, lastRefreshMs: lastRefreshMs, intervalMs: leaseMs / 3)
    }

    /// Whether this round judges owners: at most every third of a lease, and only once
    /// Redis has been up for a whole lease (`RedisOutage.leasesJudgeable`), so an owner
    /// had the chance to refresh a lease that lapsed during an outage. A round that is
    /// due but not judgeable still counts as a round.
    public mutating func judgesOwners(nowMs: UInt64, leaseMs: UInt64, outage: RedisOutage) -> Bool {
        guard LeasePolicy.refreshDue(nowMs: nowMs, lastRefreshMs: judgedMs, intervalMs: leaseMs / 3) else { return false }
        judgedMs = nowMs
        return outage.leasesJudgeable(nowMs: nowMs, leaseMs: leaseMs)
    }

    /// The streams whose owner's lease is asked about: those quiet for half a lease
    /// (`LeasePolicy.shouldCheckOwner`). `quietSinceMs`: when the stream's readers here
    /// last got an event, loop ms; `nil` for a stream with no reader.
    public static func streamsToCheck<ID>(_ streams: [(id: ID, quietSinceMs: UInt64?)], nowMs: UInt64, leaseMs: UInt64) -> [ID] {
        streams.compactMap { s in
            guard let q = s.quietSinceMs, LeasePolicy.shouldCheckOwner(nowMs: nowMs, quietSinceMs: q, leaseMs: leaseMs) else { return nil }
            return s.id
        }
    }
}
