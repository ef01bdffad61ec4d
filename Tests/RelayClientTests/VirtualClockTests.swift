import XCTest
@testable import RelayClient

final class VirtualClockTests: XCTestCase {
    func testTimeMovesOnlyWhenAdvanced() {
        let c = VirtualClock(startMs: 0)
        XCTAssertEqual(c.nowMs(), 0)
        c.advance(by: 50)
        XCTAssertEqual(c.nowMs(), 50)
    }

    func testSleepWakesWhenAdvancedPastDeadline() async throws {
        let c = VirtualClock(startMs: 0)
        let t = Task { try await c.sleep(ms: 1_000); return c.nowMs() }
        // Wait (5 s real deadline) until the task has registered its sleeper, then move
        // time: short of the deadline it keeps sleeping, at the deadline it wakes.
        let deadline = Date().addingTimeInterval(5)
        while c.sleeperCount == 0 {
            guard Date() < deadline else { t.cancel(); return XCTFail("the sleeper never registered") }
            await Task.yield()
        }
        c.advance(by: 999)
        XCTAssertEqual(c.sleeperCount, 1, "not woken before its deadline")
        c.advance(by: 1)
        let woke = try await t.value
        XCTAssertEqual(woke, 1_000)
    }

    func testSystemClockIsMonotonic() {
        let c = SystemClock()
        let a = c.nowMs(), b = c.nowMs()
        XCTAssertGreaterThanOrEqual(b, a)
    }
}
