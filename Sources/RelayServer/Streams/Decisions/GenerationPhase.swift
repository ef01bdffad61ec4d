/// Where a generation is in its life (docs/ARCHITECTURE.md, "Generation"), and the only
/// transitions between those places. Pure: `Generation` performs what a transition
/// allows (start the upstream, emit, settle, release the lease and the session slot).
///
/// ```
/// waiting ──start──▶ generating ──final event / hand-over / refused append──▶ ended(why)
///    └──────────── final event (cancel before start) / hand-over ───────────────▶ ended(why)
/// any ──teardown──▶ tornDown(why)
/// ```
///
/// A generation that ended because its final event was sent may still learn, from the
/// store's reply, that its appends were refused (another instance took the stream over, or
/// the stream is gone): that ending replaces the first one, since it decides who holds the
/// lease and the session slot and who settles.
public enum GenerationPhase: Sendable, Equatable {
    /// Why a generation stopped producing events.
    public enum Ending: Sendable, Equatable {
        /// Its final event (`done` or `error`) was emitted; it settles once the event is stored.
        case finalEvent
        /// It stopped so another instance continues the stream (a drain's timeout,
        /// docs/PROTOCOL.md §4.5): no final event, no settlement, the lease dropped at once.
        case handedOver
        /// Its appends were refused because another instance took the stream over: the taker
        /// holds the lease and the session slot and settles.
        case takenOver
        /// Its appends were refused because the stream expired or was ended elsewhere:
        /// it settles what it generated.
        case storeRefused
    }

    /// Made; the upstream is not called yet (a continuation waiting for its session slot, or
    /// a stream whose `DELETE` came first). An ending now charges nothing of its own.
    case waiting
    /// The upstream was called: events flow.
    case generating
    /// No more events (`upstreamCalled`: whether the upstream was ever called).
    case ended(Ending, upstreamCalled: Bool)
    /// `teardown` ran: inert (its ending, if it had one).
    case tornDown(Ending?, upstreamCalled: Bool)

    /// No more events will be produced.
    @inline(__always)
    public var isFinished: Bool {
        switch self {
        case .waiting, .generating: return false
        case .ended, .tornDown: return true
        }
    }

    /// The upstream was called at some point.
    public var upstreamCalled: Bool {
        switch self {
        case .waiting: return false
        case .generating: return true
        case .ended(_, let called), .tornDown(_, let called): return called
        }
    }

    /// Why it ended, if it did.
    public var ending: Ending? {
        switch self {
        case .waiting, .generating: return nil
        case .ended(let e, _): return e
        case .tornDown(let e, _): return e
        }
    }

    /// `teardown` ran.
    public var isTornDown: Bool {
        if case .tornDown = self { return true }
        return false
    }

    /// Calls the upstream: only from `waiting`. Returns whether to call it.
    public mutating func start() -> Bool {
        guard self == .waiting else { return false }
        self = .generating
        return true
    }

    /// Stops producing events for `why`. From `waiting` or `generating` any ending; once
    /// ended, only a refused append (`takenOver`, `storeRefused`) replaces the ending (see the
    /// type's documentation). Returns whether the phase changed.
    @discardableResult
    public mutating func end(_ why: Ending) -> Bool {
        switch self {
        case .waiting, .generating:
            self = .ended(why, upstreamCalled: upstreamCalled)
            return true
        case .ended(let e, let called):
            guard why == .takenOver || why == .storeRefused, e != .takenOver else { return false }
            self = .ended(why, upstreamCalled: called)
            return true
        case .tornDown:
            return false
        }
    }

    /// Makes the generation inert, keeping its ending. Returns whether it was not already.
    public mutating func tearDown() -> Bool {
        guard !isTornDown else { return false }
        self = .tornDown(ending, upstreamCalled: upstreamCalled)
        return true
    }
}
