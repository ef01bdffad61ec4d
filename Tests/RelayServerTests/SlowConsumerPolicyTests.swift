import RelayTestKit
import XCTest
@testable import RelayServer

final class SlowConsumerPolicyTests: XCTestCase {
    func testOneEventLargerThanTheLimitThatDrainsIsNotSlow() {
        var p = SlowConsumerPolicy(limitBytes: 256 * 1024, windowMs: 2_000)
        let clock = VirtualClock()
        // A 300,000-byte delta is written, more events follow in the same loop turn.
        XCTAssertFalse(p.isSlow(pendingBytes: 300_000, nowMs: clock.loopMs))
        XCTAssertFalse(p.isSlow(pendingBytes: 300_100, nowMs: clock.loopMs))
        clock.advance(by: 5)
        XCTAssertFalse(p.isSlow(pendingBytes: 120_000, nowMs: clock.loopMs), "the client read it")
        XCTAssertNil(p.overLimitSinceMs)
        // Another large event later starts a new window.
        clock.advance(by: 10_000)
        XCTAssertFalse(p.isSlow(pendingBytes: 400_000, nowMs: clock.loopMs))
        clock.advance(by: 1_999)
        XCTAssertFalse(p.isSlow(pendingBytes: 300_000, nowMs: clock.loopMs))
    }

    func testBytesStayingAboveTheLimitForTheWindowAreSlow() {
        var p = SlowConsumerPolicy(limitBytes: 32_768, windowMs: 2_000)
        let clock = VirtualClock()
        var cutAfter: UInt64?
        // A 1 KB/s reader while events arrive at 40 KB/s: the backlog only grows.
        var pending = 0
        for step in 1...100 {
            clock.advance(by: 100)
            pending += 4_000 - 100
            if p.isSlow(pendingBytes: pending, nowMs: clock.loopMs) { cutAfter = UInt64(step) * 100; break }
        }
        let over = 900  // the backlog passed 32,768 bytes at step 9 (35,100 bytes)
        XCTAssertEqual(cutAfter, UInt64(over) + 2_000, "cut exactly one window after it went over the limit")
    }

    func testDippingUnderTheLimitRestartsTheWindow() {
        var p = SlowConsumerPolicy(limitBytes: 1_000, windowMs: 2_000)
        let clock = VirtualClock()
        XCTAssertFalse(p.isSlow(pendingBytes: 5_000, nowMs: clock.loopMs))
        clock.advance(by: 1_500)
        XCTAssertFalse(p.isSlow(pendingBytes: 900, nowMs: clock.loopMs))
        clock.advance(by: 1_000)
        XCTAssertFalse(p.isSlow(pendingBytes: 5_000, nowMs: clock.loopMs))
        clock.advance(by: 1_999)
        XCTAssertFalse(p.isSlow(pendingBytes: 5_000, nowMs: clock.loopMs))
        clock.advance(by: 1)
        XCTAssertTrue(p.isSlow(pendingBytes: 5_000, nowMs: clock.loopMs))
    }

    func testHardLimitCutsAtOnce() {
        var p = SlowConsumerPolicy(limitBytes: 1_000, windowMs: 60_000)
        XCTAssertEqual(p.hardLimitBytes, 16_000)
        XCTAssertFalse(p.isSlow(pendingBytes: 16_000, nowMs: 0))
        XCTAssertTrue(p.isSlow(pendingBytes: 16_001, nowMs: 0))
        XCTAssertEqual(SlowConsumerPolicy(limitBytes: Int.max / 2).hardLimitBytes, Int.max)
    }
}
