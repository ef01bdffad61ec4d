import Foundation
import Glibc
import RelayLoop
import XCTest

/// `EventLoop.nowMs` is the monotonic clock libevent's timers run on, not the wall clock:
/// deadlines and retry times computed from it do not move when the system clock is
/// stepped, and `now - start` never goes negative.
final class EventLoopClockTests: XCTestCase {
    private static func ms(_ clock: clockid_t) -> UInt64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }

    func testNowIsTheCoarseMonotonicClockNotTheWallClock() throws {
        let loop = try EventLoop()
        let before = Self.ms(CLOCK_MONOTONIC)
        let now = loop.nowMs
        let after = Self.ms(CLOCK_MONOTONIC)
        // The coarse clock lags the precise one by at most one kernel tick (clock_getres).
        var res = timespec()
        clock_getres(CLOCK_MONOTONIC_COARSE, &res)
        let tickMs = UInt64(res.tv_sec) * 1000 + UInt64(res.tv_nsec) / 1_000_000 + 1
        XCTAssertLessThanOrEqual(now, after, "not ahead of CLOCK_MONOTONIC")
        XCTAssertGreaterThanOrEqual(now + tickMs, before, "within a tick of CLOCK_MONOTONIC")
        let wall = Self.ms(CLOCK_REALTIME)
        XCTAssertGreaterThan(wall > now ? wall - now : now - wall, 24 * 3_600_000, "the wall clock is another clock")
    }

    func testNowNeverGoesBackwards() throws {
        let loop = try EventLoop()
        var last = loop.nowMs
        for _ in 0..<100_000 {
            let n = loop.nowMs
            XCTAssertGreaterThanOrEqual(n, last)
            last = n
        }
    }
}
