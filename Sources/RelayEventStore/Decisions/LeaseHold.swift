/// Whether an owner may send more of its answer, from until when its owner lease is known
/// held (docs/PROTOCOL.md §4.5, `LeasePolicy.knownUntil`). Past that instant a stall (a
/// paused process, a partition) may have let the lease lapse and another instance take the
/// answer over: the writer holds everything — events and text — until its owner confirms
/// the lease again (`confirmed`). Times are loop ms. Pure; one per writer, loop thread.
public struct LeaseHold: Sendable, Equatable {
    /// Until when (loop ms) the lease is known held; `.max` until the owner says (`known`).
    public private(set) var knownUntilMs: UInt64 = .max
    /// A hold is on: nothing may be sent until `confirmed`.
    public private(set) var isHeld = false

    /// What `check(nowMs:)` found.
    public enum Check: Sendable, Equatable {
        /// The lease is known held: send.
        case allowed
        /// A hold is already on (its owner was asked when it started).
        case held
        /// The clock just passed `knownUntilMs`: a hold starts now, and the owner must be
        /// asked once to confirm its lease (or learn it lost the answer).
        case holdStarted
    }

    public init() {}

    /// A refresh Redis confirmed: the lease is known held until `untilMs`. Does not end a
    /// hold; that is `confirmed`'s, once the owner checked all it must.
    public mutating func known(untilMs: UInt64) {
        if !isHeld { knownUntilMs = untilMs }
    }

    /// The owner confirmed its lease (and session slot) after a stall: known held until
    /// `untilMs`. Returns whether a hold ended (what was queued meanwhile may go now).
    @discardableResult
    public mutating func confirmed(untilMs: UInt64) -> Bool {
        knownUntilMs = untilMs
        guard isHeld else { return false }
        isHeld = false
        return true
    }

    /// Whether the writer may send at `nowMs`, starting a hold when the clock passed
    /// `knownUntilMs`.
    @inline(__always)
    public mutating func check(nowMs: UInt64) -> Check {
        if isHeld { return .held }
        guard nowMs >= knownUntilMs else { return .allowed }
        isHeld = true
        return .holdStarted
    }
}
