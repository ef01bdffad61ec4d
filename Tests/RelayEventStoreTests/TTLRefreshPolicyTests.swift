import XCTest
@testable import RelayEventStore

final class TTLRefreshPolicyTests: XCTestCase {
    func testIntervalIsATenthOfTheTTLAtMostTenSeconds() {
        XCTAssertEqual(TTLRefreshPolicy(ttlMs: 300_000).intervalMs, 10_000)
        XCTAssertEqual(TTLRefreshPolicy(ttlMs: 2_000).intervalMs, 200)
        XCTAssertEqual(TTLRefreshPolicy(ttlMs: 5).intervalMs, 1)
    }

    func testFirstAppendRefreshesThenOncePerInterval() {
        var p = TTLRefreshPolicy(ttlMs: 300_000)
        XCTAssertTrue(p.due(nowMs: 1_000, final: false), "the first append creates the keys")
        var refreshed = 0
        // 50 tokens/s for 30 s: one refresh per 10 s of appends.
        for i in 1...1_500 where p.due(nowMs: 1_000 + UInt64(i) * 20, final: false) { refreshed += 1 }
        XCTAssertEqual(refreshed, 3)
    }

    func testFinalAppendAlwaysRefreshes() {
        var p = TTLRefreshPolicy(ttlMs: 300_000)
        XCTAssertTrue(p.due(nowMs: 0, final: false))
        XCTAssertFalse(p.due(nowMs: 5, final: false))
        XCTAssertTrue(p.due(nowMs: 6, final: true))
    }

    func testRefreshesAtTheIntervalBoundaryAndNeverLetsTheGapExceedIt() {
        var p = TTLRefreshPolicy(ttlMs: 1_000)
        XCTAssertTrue(p.due(nowMs: 10, final: false))
        XCTAssertFalse(p.due(nowMs: 109, final: false))
        XCTAssertTrue(p.due(nowMs: 110, final: false))
        // A long pause: the next append refreshes.
        XCTAssertTrue(p.due(nowMs: 5_000, final: false))
        XCTAssertFalse(p.due(nowMs: 5_001, final: false))
    }
}
