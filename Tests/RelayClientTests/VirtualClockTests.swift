import RelayTestKit
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
        do {
            try await eventually(5, "the sleeper to register", every: 0.001) { c.sleeperCount > 0 }
        } catch {
            c.advance(by: 1_000)   // lets the task end
            throw error
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
