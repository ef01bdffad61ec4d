import RelayTestKit
import XCTest
@testable import RelayCluster

/// `RetryQueue`: commands waiting for a resend come out in the order they went in, each
/// no earlier than its own backoff, on a virtual clock; long random runs against a
/// reference model.
final class RetryQueueTests: XCTestCase {
    func testElementsComeOutInOrderEachAtOrAfterItsOwnDueTime() {
        let clock = VirtualClock()
        var q = RetryQueue<String>()
        let t0 = clock.loopMs
        XCTAssertNil(q.nextDueMs)
        XCTAssertEqual(q.push("xadd 5", nowMs: clock.loopMs, waitMs: 40), clock.loopMs + 40)
        // A shorter backoff queued later waits for the earlier element.
        XCTAssertEqual(q.push("xadd 6", nowMs: clock.loopMs, waitMs: 20), clock.loopMs + 40)
        clock.advance(by: 10)
        XCTAssertEqual(q.push("get", nowMs: clock.loopMs, waitMs: 80), clock.loopMs + 80)
        XCTAssertEqual(q.count, 3)
        XCTAssertEqual(q.nextDueMs, t0 + 40)
        clock.advance(by: 29)
        XCTAssertEqual(q.popDue(nowMs: clock.loopMs), [], "nothing due before 40 ms")
        clock.advance(by: 1)
        XCTAssertEqual(q.popDue(nowMs: clock.loopMs), ["xadd 5", "xadd 6"])
        XCTAssertEqual(q.nextDueMs, t0 + 90)
        clock.advance(by: 60)
        XCTAssertEqual(q.popDue(nowMs: clock.loopMs), ["get"])
        XCTAssertTrue(q.isEmpty)
        XCTAssertNil(q.nextDueMs)
    }

    func testAnElementQueuedAfterAPopWaitsBehindTheRest() {
        let clock = VirtualClock()
        var q = RetryQueue<Int>()
        let t0 = clock.loopMs
        for i in 0..<3 { q.push(i, nowMs: clock.loopMs, waitMs: 20) }
        q.push(3, nowMs: clock.loopMs, waitMs: 500)
        clock.advance(by: 20)
        let due = q.popDue(nowMs: clock.loopMs)
        XCTAssertEqual(due, [0, 1, 2])
        // 1 fails again with a short backoff: behind 3, not ahead of it.
        XCTAssertEqual(q.push(1, nowMs: clock.loopMs, waitMs: 40), t0 + 500)
        clock.advance(by: 480)
        XCTAssertEqual(q.popDue(nowMs: clock.loopMs), [3, 1])
    }

    func testRemoveAllReturnsWhatWaitsOldestFirstAndTheQueueIsReusable() {
        var q = RetryQueue<Int>()
        for i in 0..<200 { q.push(i, nowMs: 0, waitMs: UInt64(i)) }
        XCTAssertEqual(q.popDue(nowMs: 99), Array(0..<100))
        XCTAssertEqual(q.count, 100)
        XCTAssertEqual(q.removeAll(), Array(100..<200))
        XCTAssertTrue(q.isEmpty)
        q.push(7, nowMs: 1_000, waitMs: 5)
        XCTAssertEqual(q.nextDueMs, 1_005, "an emptied queue does not keep the old due times")
        XCTAssertEqual(q.popDue(nowMs: 1_005), [7])
    }

    /// 20,000 random pushes (waits 0–600 ms), clock steps (0–300 ms), pops and an
    /// occasional `removeAll`: elements come out in push order, none lost or duplicated,
    /// none before its own backoff, each due no earlier than the one before, and the
    /// head-of-line wait never adds more than the longest backoff (the grace bound:
    /// an element waits at most `maxMs` past its push, `ClusterRetryPolicy`).
    func testRandomRunsMatchTheFIFOModel() {
        for seed in UInt64(1)...5 {
            var rng = SplitMix64(seed: seed)
            let clock = VirtualClock()
            var q = RetryQueue<Int>()
            // The model: (element, own earliest due, push time) in push order.
            var model: [(e: Int, own: UInt64, pushedAt: UInt64)] = []
            var lastDue: UInt64 = 0
            var next = 0
            var out: [Int] = []
            var expectedOut: [Int] = []
            for _ in 0..<20_000 {
                switch rng.next() % 10 {
                case 0...4:
                    let wait = rng.next() % 601
                    let due = q.push(next, nowMs: clock.loopMs, waitMs: wait)
                    XCTAssertEqual(due, max(clock.loopMs + wait, model.isEmpty ? 0 : lastDue), "seed \(seed): the model's due time")
                    XCTAssertGreaterThanOrEqual(due, clock.loopMs + wait, "seed \(seed): not before its own backoff")
                    if !model.isEmpty { XCTAssertGreaterThanOrEqual(due, lastDue, "seed \(seed): behind the one before") }
                    XCTAssertLessThanOrEqual(due - clock.loopMs, 600, "seed \(seed): the head of line adds no more than the longest wait")
                    lastDue = due
                    model.append((next, due, clock.loopMs))
                    next += 1
                case 5...7:
                    clock.advance(by: Int64(rng.next() % 301))
                case 8:
                    let popped = q.popDue(nowMs: clock.loopMs)
                    let due = model.prefix { $0.own <= clock.loopMs }
                    XCTAssertEqual(popped, due.map(\.e), "seed \(seed): exactly the due ones, oldest first")
                    model.removeFirst(due.count)
                    out += popped
                    expectedOut += due.map(\.e)
                    XCTAssertEqual(q.nextDueMs, model.first?.own)
                default:
                    if rng.next() % 20 == 0 {
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
}
