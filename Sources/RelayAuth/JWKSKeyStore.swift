import Foundation
import Synchronization

/// The key set every worker's ``JWKSVerifier`` reads, shared process-wide (docs/TOKENS.md),
/// and the process-wide bookkeeping of tokens that wait for a refetch.
///
/// One fetcher (on one worker's loop) installs each new ``JWKSnapshot`` with `install`;
/// readers take the current snapshot under a short lock and then verify without it, so a
/// swap never blocks verification and a verification never sees half a set.
///
/// Unknown kids (``UnknownKidRefetch`` decides): a worker whose request names a kid the set
/// lacks asks `unknownKid(_:)`; on `.wait` it parks the request on its own loop. The store
/// tells the fetcher (its refetch handler, once per wanted fetch) and, when a fetch ends,
/// calls every worker's fetch-end handler, each of which posts onto its worker's loop: one
/// fetch wakes every parked request of the process, and no thread blocks.
public final class JWKSKeyStore: Sendable {
    private struct State {
        var snapshot: JWKSnapshot?
        var refetch: UnknownKidRefetch
        var onRefetch: (@Sendable () -> Void)?
        var fetchEndHandlers: [Int: @Sendable (FetchEnd) -> Void] = [:]
        var nextHandler = 0
        var refetchesRequested = 0
    }

    /// A fetch that ended, as told to each worker's fetch-end handler.
    public struct FetchEnd: Sendable, Equatable {
        /// When it started (the store's monotonic ms): it answers for requests that arrived
        /// until then (``UnknownKidRefetch/covers(arrivalMs:fetchStartedMs:)``).
        public var startedMs: Int64
        /// Whether a set was installed (a failed fetch confirms nothing).
        public var installed: Bool
    }

    /// What a request whose token names an unknown kid does.
    public enum KidVerdict: Sendable, Equatable {
        /// The set holds the kid now (installed meanwhile): verify again.
        case known
        /// Verify now, which refuses it (confirmed unknown recently).
        case refuse
        /// Park the request until a fetch-end handler says a fetch ended (or its own timeout).
        case wait
    }

    private let state: Mutex<State>
    private let clock: @Sendable () -> Int64

    /// - Parameters:
    ///   - minimumRefetchIntervalMs: shortest time between the starts of two fetches that
    ///     waiting tokens want, ms (`RELAY_JWT_JWKS_UNKNOWN_KID_INTERVAL`).
    ///   - negativeTTLMs: how long a kid confirmed unknown is refused without a fetch, ms.
    ///   - negativeCapacity: most kids remembered as unknown.
    ///   - nowMs: a monotonic clock in ms (injectable for tests).
    public init(minimumRefetchIntervalMs: Int, negativeTTLMs: Int = JWKSKeyStore.negativeTTLMs,
                negativeCapacity: Int = JWKSKeyStore.negativeCapacity,
                nowMs: @escaping @Sendable () -> Int64 = { Int64(DispatchTime.now().uptimeNanoseconds / 1_000_000) }) {
        state = Mutex(State(refetch: UnknownKidRefetch(intervalMs: minimumRefetchIntervalMs, negativeTTLMs: negativeTTLMs,
                                                       negativeCapacity: negativeCapacity)))
        clock = nowMs
    }

    /// Default lifetime of a negative entry, ms (10 s).
    public static let negativeTTLMs = 10_000
    /// Default capacity of the negative cache, kids.
    public static let negativeCapacity = 4096

    /// The store's monotonic clock, ms.
    public var nowMs: Int64 { clock() }

    /// The current set, nil before the first good fetch.
    public var snapshot: JWKSnapshot? { state.withLock { $0.snapshot } }

    /// `true` once a set was installed (`/readyz`).
    public var hasKeys: Bool { snapshot != nil }

    /// Whether the current set holds a key with this `kid`.
    public func holds(kid: String) -> Bool {
        snapshot?.keySet.keys.contains { $0.kid == kid } ?? false
    }

    /// Replaces the current set (the fetcher, after a good fetch, before `fetchEnded`).
    public func install(_ snapshot: JWKSnapshot) {
        state.withLock { $0.snapshot = snapshot }
    }

    /// Registers what is called (on the calling thread; it should post to the fetcher's loop)
    /// when waiting tokens want a fetch; the fetcher then asks `wantedFetchInMs()`. Replaces
    /// an earlier handler; nil removes it.
    public func setRefetchHandler(_ handler: (@Sendable () -> Void)?) {
        state.withLock { $0.onRefetch = handler }
    }

    /// Registers a worker's fetch-end handler (called on the fetcher's thread; it should post
    /// to its worker's loop). Returns the id for `removeFetchEndHandler`.
    public func addFetchEndHandler(_ handler: @escaping @Sendable (FetchEnd) -> Void) -> Int {
        state.withLock { s in
            let id = s.nextHandler
            s.nextHandler += 1
            s.fetchEndHandlers[id] = handler
            return id
        }
    }

    /// Removes a fetch-end handler (its worker stops).
    public func removeFetchEndHandler(_ id: Int) {
        _ = state.withLock { $0.fetchEndHandlers.removeValue(forKey: id) }
    }

    /// A token names `kid` (nil: a token without `kid` while no set is loaded) that the set
    /// lacks, at `nowMs` (the store's clock): known by now, refused at once, or wait.
    public func unknownKid(_ kid: String?, nowMs: Int64) -> KidVerdict {
        let (verdict, handler): (KidVerdict, (@Sendable () -> Void)?) = state.withLock { s in
            if let snap = s.snapshot, kid == nil || snap.keySet.keys.contains(where: { $0.kid == kid }) {
                return (.known, nil)
            }
            switch s.refetch.unknownKid(kid, nowMs: nowMs) {
            case .refuse: return (.refuse, nil)
            case .awaitFetchInFlight: return (.wait, nil)
            case .awaitFetch(_, let newly):
                if newly { s.refetchesRequested += 1 }
                return (.wait, newly ? s.onRefetch : nil)
            }
        }
        handler?()
        return verdict
    }

    /// In how many ms the fetch that waiting tokens want may start (0: now); nil when none is
    /// wanted or one is in flight (the fetcher's loop).
    public func wantedFetchInMs() -> Int64? {
        let now = clock()
        return state.withLock { $0.refetch.wantedFetchAtMs(nowMs: now) }.map { max(0, $0 - now) }
    }

    /// A fetch starts (any cause). Returns whether waiting tokens wanted it.
    @discardableResult
    public func fetchStarted() -> Bool {
        let now = clock()
        return state.withLock { $0.refetch.fetchStarted(nowMs: now) }
    }

    /// The fetch in flight ended; `installed` when its set was installed (`install` first).
    /// Calls every fetch-end handler.
    public func fetchEnded(installed: Bool) {
        let (start, handlers) = state.withLock { s in (s.refetch.fetchEnded(), Array(s.fetchEndHandlers.values)) }
        guard let start else { return }
        let end = FetchEnd(startedMs: start, installed: installed)
        for h in handlers { h(end) }
    }

    /// `kid` was missing from a set fetched after a token named it (a worker looking at its
    /// parked requests after `FetchEnd`): refused without a fetch for `negativeTTLMs`.
    public func confirmedUnknown(_ kid: String) {
        let now = clock()
        state.withLock { $0.refetch.confirmedUnknown(kid, nowMs: now) }
    }

    /// Fetches wanted by tokens naming unknown kids so far (tests, metrics).
    public var refetchesRequested: Int { state.withLock { $0.refetchesRequested } }
}
