/// When a cluster client re-reads the slot map (`CLUSTER SLOTS`): on a `MOVED`, on a
/// lost node connection, on a command for a slot nobody serves, and periodically while
/// the map is incomplete — coalesced so a burst of redirects (every pipelined append of
/// a moved slot answers `MOVED`) costs one refresh in flight, at most one per
/// `minIntervalMs`. Times are loop ms.
public struct TopologyRefresh: Sendable, Equatable {
    /// Why a refresh was asked for (for logs and metrics).
    public enum Trigger: String, Sendable { case startup, moved, connectionLost, uncoveredSlot, periodic }

    /// Smallest gap between two refreshes, ms.
    public var minIntervalMs: UInt64
    /// `true` while a `CLUSTER SLOTS` is in flight.
    public private(set) var inFlight = false
    /// A refresh was asked for while one was in flight or too recent.
    public private(set) var wanted = false
    private var lastStartMs: UInt64?

    public init(minIntervalMs: UInt64 = 100) {
        self.minIntervalMs = minIntervalMs
    }

    /// What to do now.
    public enum Action: Sendable, Equatable {
        /// Send `CLUSTER SLOTS` now.
        case refreshNow
        /// Check again after this many ms.
        case refreshAfter(UInt64)
        /// One is in flight; its completion will start the next.
        case coalesced
    }

    /// A trigger fired.
    public mutating func request(_ trigger: Trigger, nowMs: UInt64) -> Action {
        if inFlight { wanted = true; return .coalesced }
        if let last = lastStartMs, nowMs < last + minIntervalMs {
            wanted = true
            return .refreshAfter(last + minIntervalMs - nowMs)
        }
        inFlight = true
        wanted = false
        lastStartMs = nowMs
        return .refreshNow
    }

    /// The refresh in flight ended (answered or failed). Returns `true` when another
    /// was asked for meanwhile (call `request(_:nowMs:)` again).
    public mutating func finished() -> Bool {
        inFlight = false
        let again = wanted
        wanted = false
        return again
    }
}
