import Foundation
import RelayCore

/// The background delivery of `DELETE /api/chat/stream/{id}` after a Stop
/// (`conformance/CLIENT_RULES.md` "Stop"): the UI gets `stopped` at once; the request is retried
/// across base URLs so a stopped answer is not generated (and billed) in full.
/// Counted here rather than in the telemetry record, which stays exactly
/// `{requestId, tokensReceived, latencyMs, reconnections}` (`conformance/CLIENT_RULES.md`).
public final class StopDelivery: Sendable {
    /// Attempts per `DELETE`.
    public static let maxAttempts = 3
    /// Wait between attempts, ms.
    public static let retryDelayMs: Int64 = 1_000
    /// Timeout of one attempt, ms.
    public static let timeoutMs: Int64 = 10_000

    /// Whether an answer with `status` is retried (within `maxAttempts`) rather than
    /// final: a `404` may come from a relay that has not seen the answer's `POST` yet
    /// and does not keep cancels for streams to come (docs/PROTOCOL.md §7: a relay that
    /// does answers `202` `"state":"pending"`). Any other answer below 500 is final.
    public static func retriesNotFound(status: Int) -> Bool { status == 404 }

    /// Counters since the client was created.
    public struct Counts: Sendable, Equatable {
        /// Stops whose `DELETE` was started.
        public var requested = 0
        /// HTTP requests sent (≥ `requested`; retries included).
        public var attempts = 0
        /// `DELETE`s a relay answered (202, or 404 on every attempt for a stream already gone).
        public var delivered = 0
        /// `DELETE`s given up after every attempt failed.
        public var failed = 0
        /// Started and not yet delivered or given up.
        public var inFlight: Int { requested - delivered - failed }
        public init() {}
    }

    private let box = LockedBox<(counts: Counts, tasks: [Int: Task<Void, Never>], nextId: Int)>((Counts(), [:], 0))

    init() {}

    var counts: Counts { box.value.counts }
    func attempted() { box.mutate { $0.counts.attempts += 1 } }

    /// Runs `deliver` (returning whether a relay answered) in the background and counts it.
    func start(_ deliver: @escaping @Sendable () async -> Bool) {
        box.mutate { s in
            s.counts.requested += 1
            let id = s.nextId
            s.nextId += 1
            // The task cannot finish before it is registered: it needs the lock to count.
            s.tasks[id] = Task {
                let delivered = await deliver()
                self.box.mutate { s in
                    if delivered { s.counts.delivered += 1 } else { s.counts.failed += 1 }
                    s.tasks[id] = nil
                }
            }
        }
    }

    /// The deliveries still running.
    func pending() -> [Task<Void, Never>] { Array(box.value.tasks.values) }
}
