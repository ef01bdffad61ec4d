import RelayTestKit
import XCTest
@testable import RelayHTTP

final class AcceptBackoffTests: XCTestCase {
    func testPauseDoublesUpToTheCapAndResetsOnSuccess() {
        var b = AcceptBackoff(initialMs: 10, maxMs: 200, logEveryMs: 1_000)
        let clock = VirtualClock()
        var pauses: [UInt64] = []
        for _ in 0..<7 {
            pauses.append(b.failed(nowMs: clock.loopMs).pauseMs)
            clock.advance(by: 1)
        }
        XCTAssertEqual(pauses, [10, 20, 40, 80, 160, 200, 200])
        XCTAssertEqual(b.consecutiveFailures, 7)
        b.succeeded()
        XCTAssertEqual(b.consecutiveFailures, 0)
        XCTAssertEqual(b.failed(nowMs: clock.loopMs).pauseMs, 10)
    }

    func testLogsAtMostOncePerIntervalWithTheCountSinceTheLastLine() {
        var b = AcceptBackoff(initialMs: 10, maxMs: 200, logEveryMs: 1_000)
        let clock = VirtualClock()
        XCTAssertEqual(b.failed(nowMs: clock.loopMs).logCount, 1, "the first failure is logged at once")
        var logged: [Int] = []
        // 5 s of failures every 100 ms: one line per second, each counting ten failures.
        for _ in 0..<50 {
            clock.advance(by: 100)
            if let n = b.failed(nowMs: clock.loopMs).logCount { logged.append(n) }
        }
        XCTAssertEqual(logged, [10, 10, 10, 10, 10])
        XCTAssertEqual(b.consecutiveFailures, 51)
    }
}
