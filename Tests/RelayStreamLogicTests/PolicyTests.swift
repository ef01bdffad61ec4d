import XCTest
@testable import RelayStreamLogic

/// `RedisOutage`, `LeasePolicy`, `ConnectionPolicy` on a virtual clock.
final class PolicyTests: XCTestCase {
    func testStreamsAreCutOnlyAfterTheGraceAndTheFirstLossCounts() {
        var clock = VirtualClock()
        var o = RedisOutage()
        o.connected(nowMs: clock.nowMs)
        XCTAssertFalse(o.cutsStreams(nowMs: clock.nowMs + 1_000_000, graceMs: 5_000), "up: never cut")
        o.disconnected(nowMs: clock.nowMs)
        let down = clock.nowMs
        clock.advance(3_000)
        o.disconnected(nowMs: clock.nowMs)   // a later failure does not restart the grace
        XCTAssertEqual(o.downSinceMs, down)
        clock.advance(1_999)
        XCTAssertFalse(o.cutsStreams(nowMs: clock.nowMs, graceMs: 5_000))
        clock.advance(1)
        XCTAssertTrue(o.cutsStreams(nowMs: clock.nowMs, graceMs: 5_000))
        o.connected(nowMs: clock.nowMs)
        XCTAssertFalse(o.cutsStreams(nowMs: clock.nowMs, graceMs: 5_000))
    }

    func testLeasesAreJudgedOnlyAWholeLeaseAfterReconnecting() {
        var clock = VirtualClock()
        var o = RedisOutage()
        XCTAssertTrue(o.leasesJudgeable(nowMs: 3_000, leaseMs: 3_000))
        XCTAssertFalse(o.leasesJudgeable(nowMs: 2_999, leaseMs: 3_000))
        clock.advance(10_000)
        o.connected(nowMs: clock.nowMs)
        clock.advance(2_999)
        XCTAssertFalse(o.leasesJudgeable(nowMs: clock.nowMs, leaseMs: 3_000))
        clock.advance(1)
        XCTAssertTrue(o.leasesJudgeable(nowMs: clock.nowMs, leaseMs: 3_000))
    }

    func testOwnerIsAskedAfterHalfALeaseOfQuiet() {
        XCTAssertFalse(LeasePolicy.shouldCheckOwner(nowMs: 2_499, quietSinceMs: 1_000, leaseMs: 3_000))
        XCTAssertTrue(LeasePolicy.shouldCheckOwner(nowMs: 2_500, quietSinceMs: 1_000, leaseMs: 3_000))
    }

    func testLeaseExpiryRepliesAreRead() {
        XCTAssertEqual(LeasePolicy.expiry(fromReply: 0), .ownerAlive)
        XCTAssertEqual(LeasePolicy.expiry(fromReply: 42), .ended(seq: 42))
        XCTAssertEqual(LeasePolicy.expiry(fromReply: -1), .vanished)
    }

    func testHeartbeatIsDueAfterTheIntervalOfQuiet() {
        var clock = VirtualClock()
        let last = clock.nowMs
        clock.advance(14_999)
        XCTAssertFalse(ConnectionPolicy.heartbeatDue(nowMs: clock.nowMs, lastWriteMs: last, intervalMs: 15_000))
        clock.advance(1)
        XCTAssertTrue(ConnectionPolicy.heartbeatDue(nowMs: clock.nowMs, lastWriteMs: last, intervalMs: 15_000))
    }

    func testTokenExpiryHonoursTheLeeway() {
        XCTAssertFalse(ConnectionPolicy.tokenExpired(nowS: 1_000, expiresAt: nil, leewayS: 0))
        XCTAssertFalse(ConnectionPolicy.tokenExpired(nowS: 1_030, expiresAt: 1_000, leewayS: 30))
        XCTAssertTrue(ConnectionPolicy.tokenExpired(nowS: 1_031, expiresAt: 1_000, leewayS: 30))
    }
}
