import Foundation
import Synchronization

/// The key set every worker's ``JWKSVerifier`` reads, shared process-wide (docs/TOKENS.md).
///
/// One fetcher (on one worker's loop) installs each new ``JWKSnapshot`` with `install`;
/// readers take the current snapshot under a short lock and then verify without it, so a
/// swap never blocks verification and a verification never sees half a set. A token that
/// names an unknown `kid` calls `unknownKid()`, which asks the fetcher for a refetch through
/// the handler it registered, at most once per `minimumIntervalMs` across all workers
/// (``RefetchGate``).
public final class JWKSKeyStore: Sendable {
    private struct State {
        var snapshot: JWKSnapshot?
        var gate: RefetchGate
        var onRefetch: (@Sendable () -> Void)?
        var refetchesRequested = 0
    }

    private let state: Mutex<State>
    private let nowMs: @Sendable () -> Int64

    /// - Parameters:
    ///   - minimumRefetchIntervalMs: shortest time between unknown-`kid` refetches, ms.
    ///   - nowMs: a monotonic clock in ms (injectable for tests).
    public init(minimumRefetchIntervalMs: Int,
                nowMs: @escaping @Sendable () -> Int64 = { Int64(DispatchTime.now().uptimeNanoseconds / 1_000_000) }) {
        state = Mutex(State(gate: RefetchGate(minimumIntervalMs: minimumRefetchIntervalMs)))
        self.nowMs = nowMs
    }

    /// The current set, nil before the first good fetch.
    public var snapshot: JWKSnapshot? { state.withLock { $0.snapshot } }

    /// `true` once a set was installed (`/readyz`).
    public var hasKeys: Bool { snapshot != nil }

    /// Replaces the current set (the fetcher, after a good fetch).
    public func install(_ snapshot: JWKSnapshot) {
        state.withLock { $0.snapshot = snapshot }
    }

    /// Registers what `unknownKid()` calls to start a refetch (any thread; it should post
    /// to the fetcher's loop). Replaces an earlier handler; nil removes it.
    public func setRefetchHandler(_ handler: (@Sendable () -> Void)?) {
        state.withLock { $0.onRefetch = handler }
    }

    /// A token named a `kid` the set does not have: requests a refetch unless one was
    /// requested less than `minimumRefetchIntervalMs` ago.
    /// - Returns: whether a refetch was requested.
    @discardableResult
    public func unknownKid() -> Bool {
        let now = nowMs()
        let handler: (@Sendable () -> Void)? = state.withLock { s in
            guard s.gate.allow(nowMs: now) else { return nil }
            s.refetchesRequested += 1
            return s.onRefetch
        }
        handler?()
        return handler != nil
    }

    /// Unknown-`kid` refetches requested so far (tests, metrics).
    public var refetchesRequested: Int { state.withLock { $0.refetchesRequested } }
}
