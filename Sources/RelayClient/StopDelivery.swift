import Foundation

/// The background delivery of `DELETE /api/chat/stream/{id}` after a Stop
/// (`CLIENT_RULES.md` "Stop"): the UI gets `stopped` at once; the request is retried
/// across base URLs so a stopped answer is not generated (and billed) in full.
/// Counted here rather than in the telemetry record, which stays exactly
/// `{requestId, tokensReceived, latencyMs, reconnections}` (DESIGN §8).
public final class StopDelivery: Sendable {
    /// Attempts per `DELETE`.
    public static let maxAttempts = 3
    /// Wait between attempts, ms.
    public static let retryDelayMs: Int64 = 1_000
    /// Timeout of one attempt, ms.
    public static let timeoutMs: Int64 = 10_000

    /// Counters since the client was created.
    public struct Counts: Sendable, Equatable {
        /// Stops whose `DELETE` was started.
        public var requested = 0
        /// HTTP requests sent (≥ `requested`; retries included).
        public var attempts = 0
        /// `DELETE`s a relay answered (202, or 404 for a stream already gone).
        public var delivered = 0
        /// `DELETE`s given up after every attempt failed.
        public var failed = 0
        /// Started and not yet delivered or given up.
        public var inFlight: Int { requested - delivered - failed }
        public init() {}
    }

    private let box = LockedBox<(counts: Counts, tasks: [Task<Void, Never>])>((Counts(), []))

    init() {}

    var counts: Counts { box.value.counts }
    func started() { box.mutate { $0.counts.requested += 1 } }
    func attempted() { box.mutate { $0.counts.attempts += 1 } }
    func finished(delivered: Bool) {
        box.mutate { if delivered { $0.counts.delivered += 1 } else { $0.counts.failed += 1 } }
    }
    func track(_ t: Task<Void, Never>) { box.mutate { $0.tasks.append(t) } }
    func pending() -> [Task<Void, Never>] { box.value.tasks }
}
