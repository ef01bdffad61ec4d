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
        // Let the task register its sleeper, then move time.
        while true {
            await Task.yield()
            c.advance(by: 0)
            if c.nowMs() == 0 { break }
        }
        for _ in 0..<50 { await Task.yield() }
        c.advance(by: 1_000)
        let woke = try await t.value
        XCTAssertEqual(woke, 1_000)
    }

    func testSystemClockIsMonotonic() {
        let c = SystemClock()
        let a = c.nowMs(), b = c.nowMs()
        XCTAssertGreaterThanOrEqual(b, a)
    }
}
