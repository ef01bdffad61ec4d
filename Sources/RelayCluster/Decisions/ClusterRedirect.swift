/// What a cluster client does with an error reply (Redis Cluster spec, "Redirection
/// and resharding", "ASK redirection"; `TRYAGAIN` and `CLUSTERDOWN` in the same spec).
public enum ClusterRedirect: Sendable, Equatable {
    /// `MOVED <slot> <host:port>`: the slot lives on `node` for good; update the slot
    /// map, resend there and refresh the whole map.
    case moved(slot: Int, node: ClusterNode)
    /// `ASK <slot> <host:port>`: during a migration this one command goes to `node`,
    /// preceded by `ASKING`; the slot map is not changed.
    case ask(slot: Int, node: ClusterNode)
    /// `TRYAGAIN` (a multi-key command during a migration whose keys are split) or
    /// `CLUSTERDOWN` (the cluster cannot serve the slot, e.g. while a failover runs):
    /// retry after a backoff, within `RELAY_REDIS_OUTAGE_GRACE`.
    case retryLater
    /// A `MOVED`/`ASK` whose address could not be used (`?:port`): refresh the map and
    /// retry later.
    case refreshThenRetry
    /// Any other reply: hand it to the caller.
    case none

    /// Classifies an error text (`nil` = not an error).
    public init(error: String?) {
        guard let e = error else { self = .none; return }
        let w = e.split(separator: " ", omittingEmptySubsequences: true)
        guard let kind = w.first else { self = .none; return }
        switch kind {
        case "MOVED", "ASK":
            guard w.count >= 3, let slot = Int(w[1]), slot >= 0, slot < HashSlot.count else { self = .none; return }
            guard let node = ClusterNode(w[2]) else { self = .refreshThenRetry; return }
            self = kind == "MOVED" ? .moved(slot: slot, node: node) : .ask(slot: slot, node: node)
        case "TRYAGAIN", "CLUSTERDOWN":
            self = .retryLater
        default:
            self = .none
        }
    }
}

/// Retry timing for `TRYAGAIN` / `CLUSTERDOWN` / an unreachable slot owner: capped
/// exponential backoff (`firstMs` doubling to `maxMs`), given up once the first
/// failure is `graceMs` old (`RELAY_REDIS_OUTAGE_GRACE`). Times are loop ms.
public struct ClusterRetryPolicy: Sendable, Equatable {
    public var firstMs: UInt64
    public var maxMs: UInt64
    public var graceMs: UInt64
    /// Redirects (`MOVED`/`ASK`) followed for one command before the caller gets the
    /// redirect as its reply (the grace bounds the time they take).
    public var maxRedirects: Int
    /// Redirects followed at once; each further `MOVED` waits for the backoff, like a
    /// `TRYAGAIN` (an `ASK` is always followed at once): while a migration's `CLUSTER
    /// SETSLOT … NODE` reaches the nodes one at a time, the old and the new owner
    /// redirect to each other for a moment (Redis Cluster spec, "Redirection and
    /// resharding").
    public var immediateRedirects: Int

    public init(firstMs: UInt64 = 20, maxMs: UInt64 = 500, graceMs: UInt64, maxRedirects: Int = 16, immediateRedirects: Int = 1) {
        self.firstMs = firstMs
        self.maxMs = maxMs
        self.graceMs = graceMs
        self.maxRedirects = maxRedirects
        self.immediateRedirects = immediateRedirects
    }

    /// The wait before retry number `attempt` (1-based) of a command that first failed
    /// at `firstFailureMs`; `nil` when the grace is used up (deliver the error).
    public func delay(attempt: Int, firstFailureMs: UInt64, nowMs: UInt64) -> UInt64? {
        let shift = UInt64(min(max(attempt - 1, 0), 20))
        let d = min(maxMs, firstMs << shift)
        guard nowMs + d <= firstFailureMs + graceMs else { return nil }
        return d
    }
}
