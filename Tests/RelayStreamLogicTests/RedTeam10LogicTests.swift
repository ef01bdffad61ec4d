import RelayStreamLogic
import XCTest

/// Red team 10, pure logic: `RetryQueue` against a reference model over long random
/// runs on a virtual clock, and `ClusterRetryPolicy` bounds the queue relies on.
final class RedTeam10LogicTests: XCTestCase {
    /// SplitMix64: a seeded generator, so a failure replays.
    struct SplitMix {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: UInt64) -> UInt64 { next() % n }
    }

    /// 20,000 random pushes (waits 0–600 ms), clock steps (0–300 ms), pops and an
    /// occasional `removeAll`: elements come out in push order, none lost or duplicated,
    /// none before its own backoff, each due no earlier than the one before, and the
    /// head-of-line wait never adds more than the longest backoff (the grace bound:
    /// an element waits at most `maxMs` past its push, `ClusterRetryPolicy`).
    func testRandomRunsMatchTheFIFOModel() {
        for seed in UInt64(1)...5 {
            var rng = SplitMix(state: seed)
            var clock = VirtualClock()
            var q = RetryQueue<Int>()
            // The model: (element, own earliest due, push time) in push order.
            var model: [(e: Int, own: UInt64, pushedAt: UInt64)] = []
            var lastDue: UInt64 = 0
            var next = 0
            var out: [Int] = []
            var expectedOut: [Int] = []
            for _ in 0..<20_000 {
                switch rng.below(10) {
                case 0...4:
                    let wait = rng.below(601)
                    let due = q.push(next, nowMs: clock.nowMs, waitMs: wait)
                    XCTAssertEqual(due, max(clock.nowMs + wait, model.isEmpty ? 0 : lastDue), "seed \(seed): the model's due time")
                    XCTAssertGreaterThanOrEqual(due, clock.nowMs + wait, "seed \(seed): not before its own backoff")
                    if !model.isEmpty { XCTAssertGreaterThanOrEqual(due, lastDue, "seed \(seed): behind the one before") }
                    XCTAssertLessThanOrEqual(due - clock.nowMs, 600, "seed \(seed): the head of line adds no more than the longest wait")
                    lastDue = due
                    model.append((next, due, clock.nowMs))
                    next += 1
                case 5...7:
                    clock.advance(rng.below(301))
                case 8:
                    let popped = q.popDue(nowMs: clock.nowMs)
                    let due = model.prefix { $0.own <= clock.nowMs }
                    XCTAssertEqual(popped, due.map(\.e), "seed \(seed): exactly the due ones, oldest first")
                    model.removeFirst(due.count)
                    out += popped
                    expectedOut += due.map(\.e)
                    XCTAssertEqual(q.nextDueMs, model.first?.own)
                default:
                    if rng.below(20) == 0 {
                        let rest = q.removeAll()
                        XCTAssertEqual(rest, model.map(\.e), "seed \(seed): removeAll returns what waits, in order")
                        out += rest
                        expectedOut += model.map(\.e)
                        model.removeAll()
                    }
                }
                XCTAssertEqual(q.count, model.count)
                XCTAssertEqual(q.isEmpty, model.isEmpty)
            }
            out += q.removeAll()
            XCTAssertEqual(out, Array(0..<next), "seed \(seed): every element once, in push order")
        }
    }

    /// The grace bound the client relies on: a command's last resend is pushed while
    /// `nowMs + delay ≤ first + grace`, and the queue adds at most `maxMs` of head-of-line
    /// wait, so its answer comes no later than `grace + maxMs` after its first failure.
    func testTheGraceBoundsEachCommandToGracePlusOneBackoffStep() {
        let p = ClusterRetryPolicy(graceMs: 2_000)
        var clock = VirtualClock()
        let first = clock.nowMs
        var attempt = 1
        var lastPush = first
        while let d = p.delay(attempt: attempt, firstFailureMs: first, nowMs: clock.nowMs) {
            lastPush = clock.nowMs
            clock.advance(d + 1)   // resent when due, failed again 1 ms later
            attempt += 1
        }
        XCTAssertLessThanOrEqual(lastPush + p.maxMs - first, p.graceMs + p.maxMs)
        XCTAssertLessThanOrEqual(clock.nowMs - first, p.graceMs + p.maxMs + UInt64(attempt), "answered within grace + maxMs")
        XCTAssertGreaterThan(attempt, p.immediateRedirects)
    }
}
