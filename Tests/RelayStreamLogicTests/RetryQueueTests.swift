import RelayStreamLogic
import XCTest

/// `RetryQueue`: commands waiting for a resend come out in the order they went in, each
/// no earlier than its own backoff, on a virtual clock.
final class RetryQueueTests: XCTestCase {
    func testElementsComeOutInOrderEachAtOrAfterItsOwnDueTime() {
        var clock = VirtualClock()
        var q = RetryQueue<String>()
        let t0 = clock.nowMs
        XCTAssertNil(q.nextDueMs)
        XCTAssertEqual(q.push("xadd 5", nowMs: clock.nowMs, waitMs: 40), clock.nowMs + 40)
        // A shorter backoff queued later waits for the earlier element.
        XCTAssertEqual(q.push("xadd 6", nowMs: clock.nowMs, waitMs: 20), clock.nowMs + 40)
        clock.advance(10)
        XCTAssertEqual(q.push("get", nowMs: clock.nowMs, waitMs: 80), clock.nowMs + 80)
        XCTAssertEqual(q.count, 3)
        XCTAssertEqual(q.nextDueMs, t0 + 40)
        clock.advance(29)
        XCTAssertEqual(q.popDue(nowMs: clock.nowMs), [], "nothing due before 40 ms")
        clock.advance(1)
        XCTAssertEqual(q.popDue(nowMs: clock.nowMs), ["xadd 5", "xadd 6"])
        XCTAssertEqual(q.nextDueMs, t0 + 90)
        clock.advance(60)
        XCTAssertEqual(q.popDue(nowMs: clock.nowMs), ["get"])
        XCTAssertTrue(q.isEmpty)
        XCTAssertNil(q.nextDueMs)
    }

    func testAnElementQueuedAfterAPopWaitsBehindTheRest() {
        var clock = VirtualClock()
        var q = RetryQueue<Int>()
        let t0 = clock.nowMs
        for i in 0..<3 { q.push(i, nowMs: clock.nowMs, waitMs: 20) }
        q.push(3, nowMs: clock.nowMs, waitMs: 500)
        clock.advance(20)
        let due = q.popDue(nowMs: clock.nowMs)
        XCTAssertEqual(due, [0, 1, 2])
        // 1 fails again with a short backoff: behind 3, not ahead of it.
        XCTAssertEqual(q.push(1, nowMs: clock.nowMs, waitMs: 40), t0 + 500)
        clock.advance(480)
        XCTAssertEqual(q.popDue(nowMs: clock.nowMs), [3, 1])
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
}
