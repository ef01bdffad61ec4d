/// When a reload of the read-ticket key (docs/PROTOCOL.md §2.5) asked for by a ticket
/// naming an unknown key may start. Such tickets come unauthenticated, so each one must not
/// cost Redis a round trip: reloads they ask for start at most once per `intervalMs`
/// (counted from the start of the previous one), and every ticket waiting meanwhile is
/// looked at again when that one reload ends. A key rotated on another instance still
/// verifies within about `intervalMs` plus one round trip.
///
/// Pure: the caller passes a monotonic clock in ms.
public struct TicketKeyReloadPacing: Sendable, Equatable {
    /// Shortest time between the starts of two reloads asked for by unknown keys, ms.
    public let intervalMs: UInt64
    /// When the last such reload started (monotonic ms), nil before the first.
    public private(set) var lastStartMs: UInt64?

    /// - Parameter intervalMs: raised to 1 when lower.
    public init(intervalMs: UInt64 = 1_000) {
        self.intervalMs = max(1, intervalMs)
    }

    /// How long, ms, before a reload may start at `nowMs` (0: now).
    public func delayMs(nowMs: UInt64) -> UInt64 {
        guard let last = lastStartMs else { return 0 }
        let next = last + intervalMs
        return next > nowMs ? next - nowMs : 0
    }

    /// A reload started at `nowMs`.
    public mutating func started(nowMs: UInt64) { lastStartMs = nowMs }
}
