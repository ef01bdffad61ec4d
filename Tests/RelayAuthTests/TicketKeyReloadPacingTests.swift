import RelayAuth
import XCTest

final class TicketKeyReloadPacingTests: XCTestCase {
    func testTheFirstReloadStartsAtOnceAndTheNextWaitsOutTheInterval() {
        var p = TicketKeyReloadPacing(intervalMs: 1_000)
        XCTAssertEqual(p.delayMs(nowMs: 5_000), 0)
        p.started(nowMs: 5_000)
        XCTAssertEqual(p.delayMs(nowMs: 5_000), 1_000)
        XCTAssertEqual(p.delayMs(nowMs: 5_400), 600)
        XCTAssertEqual(p.delayMs(nowMs: 6_000), 0)
        XCTAssertEqual(p.delayMs(nowMs: 9_000), 0)
    }

    func testAZeroIntervalIsRaisedToOneMillisecond() {
        var p = TicketKeyReloadPacing(intervalMs: 0)
        p.started(nowMs: 10)
        XCTAssertEqual(p.delayMs(nowMs: 10), 1)
    }
}
