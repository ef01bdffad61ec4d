/// When a token naming a `kid` the key set does not hold waits for a refetch of the JWKS, and
/// when that refetch may start (docs/TOKENS.md "Unknown kids"). Pure: no clock, no I/O; the
/// ``JWKSKeyStore`` holds it under its lock and passes a monotonic clock in ms.
///
/// * A kid **confirmed unknown** — missing from a set fetched after a token named it — is
///   remembered for `negativeTTLMs` in a bounded negative cache (`negativeCapacity` kids, the
///   oldest forgotten first): tokens naming it are refused at once and cause no fetch.
/// * Any other unknown kid (or any token while no set is loaded) waits for a fetch that
///   **starts after it arrived**: one in flight may hold an older document, so a waiter that
///   arrived during a fetch is looked at again when it ends (``covers(arrivalMs:fetchStartedMs:)``)
///   and then wants the next one.
/// * Fetches wanted by waiters start at most once per `intervalMs` (counted from the start of
///   the previous fetch, whatever caused it), and one fetch serves every waiter of the process.
///
/// So a key published at any moment verifies on its first use within about `intervalMs` plus
/// two fetch times, whatever kids were named before it (unless that same kid was named and
/// confirmed unknown within `negativeTTLMs`); and made-up kids cost the identity provider at
/// most one request per `intervalMs` however many there are.
public struct UnknownKidRefetch: Sendable, Equatable {
    /// Shortest time between the starts of two fetches wanted by waiters, ms.
    public let intervalMs: Int64
    /// How long a kid confirmed unknown is refused without a fetch, ms.
    public let negativeTTLMs: Int64
    /// Most kids remembered as unknown.
    public let negativeCapacity: Int
    /// Longest kid that may wait for a fetch or be remembered, bytes; a longer one is refused at once.
    public static let maxKidBytes = 256

    /// Kid → when its negative entry lapses (monotonic ms).
    private var negative: [String: Int64] = [:]
    /// The negative cache's kids, oldest first (may hold kids already forgotten).
    private var negativeOrder: [String] = []
    /// When the last fetch started (monotonic ms), nil before the first.
    public private(set) var lastStartMs: Int64?
    /// When the fetch in flight started, nil when none is.
    public private(set) var inFlightSinceMs: Int64?
    /// A waiter needs a fetch that has not started yet.
    public private(set) var wanted = false

    /// - Parameters: see the properties; values below 1 are raised to 1.
    public init(intervalMs: Int, negativeTTLMs: Int, negativeCapacity: Int) {
        self.intervalMs = Int64(max(1, intervalMs))
        self.negativeTTLMs = Int64(max(1, negativeTTLMs))
        self.negativeCapacity = max(1, negativeCapacity)
    }

    /// What a request whose token names an unknown kid does.
    public enum Verdict: Sendable, Equatable {
        /// Refused now (401): the kid was confirmed unknown recently, or is too long.
        case refuse
        /// Waits for the fetch in flight to end, then is looked at again.
        case awaitFetchInFlight
        /// Waits for a fetch that may start at `atMs` (monotonic); `newlyWanted` when this
        /// request is the one that made it wanted (the fetcher is told once).
        case awaitFetch(atMs: Int64, newlyWanted: Bool)
    }

    /// A token names `kid` (nil: no kid, with no set loaded), unknown to the current set, at
    /// `nowMs`.
    public mutating func unknownKid(_ kid: String?, nowMs: Int64) -> Verdict {
        if let kid {
            if kid.utf8.count > Self.maxKidBytes { return .refuse }
            if let until = negative[kid] {
                if until > nowMs { return .refuse }
                negative[kid] = nil
            }
        }
        if inFlightSinceMs != nil { return .awaitFetchInFlight }
        let newly = !wanted
        wanted = true
        return .awaitFetch(atMs: dueMs(nowMs: nowMs), newlyWanted: newly)
    }

    /// When the wanted fetch may start (monotonic ms, never before `nowMs`); nil when no
    /// fetch is wanted or one is in flight.
    public func wantedFetchAtMs(nowMs: Int64) -> Int64? {
        guard wanted, inFlightSinceMs == nil else { return nil }
        return dueMs(nowMs: nowMs)
    }

    private func dueMs(nowMs: Int64) -> Int64 {
        guard let last = lastStartMs else { return nowMs }
        return max(nowMs, last + intervalMs)
    }

    /// A fetch (wanted, scheduled refresh or retry) started at `nowMs`: it serves every
    /// waiter that arrived until now.
    /// - Returns: whether waiters wanted it.
    @discardableResult
    public mutating func fetchStarted(nowMs: Int64) -> Bool {
        let served = wanted
        wanted = false
        lastStartMs = nowMs
        inFlightSinceMs = nowMs
        return served
    }

    /// The fetch in flight ended (installed or failed).
    /// - Returns: when it started (monotonic ms), nil when none was in flight.
    @discardableResult
    public mutating func fetchEnded() -> Int64? {
        defer { inFlightSinceMs = nil }
        return inFlightSinceMs
    }

    /// Whether a fetch that started at `fetchStartedMs` answers for a waiter that arrived at
    /// `arrivalMs`: only a fetch that started after the token arrived can have seen a key
    /// published before it.
    public static func covers(arrivalMs: Int64, fetchStartedMs: Int64) -> Bool { arrivalMs <= fetchStartedMs }

    /// `kid` was missing from a set fetched after a token named it: remembered until
    /// `nowMs + negativeTTLMs`.
    public mutating func confirmedUnknown(_ kid: String, nowMs: Int64) {
        guard kid.utf8.count <= Self.maxKidBytes else { return }
        if negative[kid] == nil { negativeOrder.append(kid) }
        negative[kid] = nowMs + negativeTTLMs
        while negative.count > negativeCapacity, !negativeOrder.isEmpty {
            negative[negativeOrder.removeFirst()] = nil
        }
        // Forgotten kids leave the order list too, so it stays within twice the capacity.
        if negativeOrder.count > 2 * negativeCapacity { negativeOrder.removeAll { negative[$0] == nil } }
    }

    /// Kids currently remembered as unknown (lapsed ones included until looked up).
    public var negativeCount: Int { negative.count }
}
