/// Bounded concurrency of one worker's replay reads (docs/OPERATIONS.md "Resume bursts"):
/// at most `maxInFlight` of its subscriptions' Redis reads (`XRANGE` of a replay, the text
/// read of a lossless catch-up) are outstanding at once; the others wait in arrival order and
/// start one by one as earlier ones are answered. A burst of thousands of resumes then costs
/// the worker's Redis connection a steady window of reads instead of one pipeline of
/// thousands, behind which its live streams' appends and reads would wait.
///
/// Pure: the caller names each read by a ticket, starts it when `request` or `finished`
/// returns it, and reports its end with `finished()` exactly once.
public struct ReplayAdmission: Sendable, Equatable {
    /// Reads that may be outstanding at once (≥ 1).
    public let maxInFlight: Int
    /// Reads started and not yet finished.
    public private(set) var inFlight = 0
    private var waiting: [UInt64] = []
    private var head = 0

    /// - Parameter maxInFlight: clamped to ≥ 1.
    public init(maxInFlight: Int) {
        self.maxInFlight = max(1, maxInFlight)
    }

    /// Reads waiting for a slot.
    public var queued: Int { waiting.count - head }

    /// A read asks to start: `true` when it starts now (a slot is taken), `false` when it
    /// waits (a later `finished()` returns its ticket).
    public mutating func request(_ ticket: UInt64) -> Bool {
        if inFlight < maxInFlight && queued == 0 {
            inFlight += 1
            return true
        }
        waiting.append(ticket)
        return false
    }

    /// Where a freed slot went: the read to start now (`nil`: the slot is free) and the
    /// waiting reads passed over because nobody wants them any more, in arrival order.
    public struct Handoff: Sendable, Equatable {
        /// The ticket to start now, or `nil` when the slot was freed.
        public var next: UInt64?
        /// Waiting tickets dropped unread: their client left while they waited.
        public var skipped: [UInt64]
    }

    /// A started read was answered (or failed): its slot passes to the longest-waiting read,
    /// whose ticket is returned (start it now), or is freed (`nil`).
    public mutating func finished() -> UInt64? {
        finished(skipping: { _ in false }).next
    }

    /// A started read was answered (or failed): its slot passes to the longest-waiting read
    /// that is still wanted; waiting reads for which `unwanted` is true on the way (their
    /// client left while they waited) are dropped without taking the slot, so the clients
    /// still there do not wait behind reads nobody will get (docs/OPERATIONS.md "Resume
    /// bursts").
    public mutating func finished(skipping unwanted: (UInt64) -> Bool) -> Handoff {
        precondition(inFlight > 0, "finished() without a started read")
        var skipped: [UInt64] = []
        while head < waiting.count {
            let next = waiting[head]
            head += 1
            compact()
            if unwanted(next) {
                skipped.append(next)
                continue
            }
            return Handoff(next: next, skipped: skipped)
        }
        inFlight -= 1
        return Handoff(next: nil, skipped: skipped)
    }

    private mutating func compact() {
        if head == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
    }
}
