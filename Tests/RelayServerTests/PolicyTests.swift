import RelayTestKit
import XCTest
@testable import RelayServer
import RelayEventStore

/// `RedisOutage`, `LeasePolicy`, `ConnectionPolicy` on a virtual clock.
final class PolicyTests: XCTestCase {
    func testStreamsAreCutOnlyAfterTheGraceAndTheFirstLossCounts() {
        let clock = VirtualClock()
        var o = RedisOutage()
        o.connected(nowMs: clock.loopMs)
        XCTAssertFalse(o.cutsStreams(nowMs: clock.loopMs + 1_000_000, graceMs: 5_000), "up: never cut")
        o.disconnected(nowMs: clock.loopMs)
        let down = clock.loopMs
        clock.advance(by: 3_000)
        o.disconnected(nowMs: clock.loopMs)   // a later failure does not restart the grace
        XCTAssertEqual(o.downSinceMs, down)
        clock.advance(by: 1_999)
        XCTAssertFalse(o.cutsStreams(nowMs: clock.loopMs, graceMs: 5_000))
        clock.advance(by: 1)
        XCTAssertTrue(o.cutsStreams(nowMs: clock.loopMs, graceMs: 5_000))
        o.connected(nowMs: clock.loopMs)
        XCTAssertFalse(o.cutsStreams(nowMs: clock.loopMs, graceMs: 5_000))
    }

    func testLeasesAreJudgedOnlyAWholeLeaseAfterReconnecting() {
        let clock = VirtualClock()
        var o = RedisOutage()
        XCTAssertTrue(o.leasesJudgeable(nowMs: 3_000, leaseMs: 3_000))
        XCTAssertFalse(o.leasesJudgeable(nowMs: 2_999, leaseMs: 3_000))
        clock.advance(by: 10_000)
        o.connected(nowMs: clock.loopMs)
        clock.advance(by: 2_999)
        XCTAssertFalse(o.leasesJudgeable(nowMs: clock.loopMs, leaseMs: 3_000))
        clock.advance(by: 1)
        XCTAssertTrue(o.leasesJudgeable(nowMs: clock.loopMs, leaseMs: 3_000))
    }

    func testOwnerIsAskedAfterHalfALeaseOfQuiet() {
        XCTAssertFalse(LeasePolicy.shouldCheckOwner(nowMs: 2_499, quietSinceMs: 1_000, leaseMs: 3_000))
        XCTAssertTrue(LeasePolicy.shouldCheckOwner(nowMs: 2_500, quietSinceMs: 1_000, leaseMs: 3_000))
    }

    /// Each owned generation's lease is refreshed on its own phase (not all at once): 500
    /// generations started over half a second, a worker ticking every 100 ms for 10 s.
    /// Every lease is refreshed at most `interval + tick` after the last (well inside
    /// the 3 s lease), and no tick refreshes more than the generations started within
    /// one tick of each other (not all 500 in one tick).
    func testLeasesAreRefreshedOnEachGenerationsOwnPhase() {
        let clock = VirtualClock()
        clock.advance(by: 50_000)
        let interval: UInt64 = 1_000, tick = LeasePolicy.refreshTickMs
        var last = (0..<500).map { i in clock.loopMs + UInt64(i) }   // one start per ms
        var longestGap: UInt64 = 0, busiestTick = 0, refreshes = 0
        for _ in 0..<100 {
            clock.advance(by: Int64(tick))
            var thisTick = 0
            for i in last.indices where LeasePolicy.refreshDue(nowMs: clock.loopMs, lastRefreshMs: last[i], intervalMs: interval) {
                longestGap = max(longestGap, clock.loopMs - last[i])
                last[i] = clock.loopMs
                thisTick += 1
            }
            busiestTick = max(busiestTick, thisTick)
            refreshes += thisTick
        }
        XCTAssertLessThanOrEqual(longestGap, interval + tick)
        XCTAssertGreaterThanOrEqual(longestGap, interval)
        XCTAssertLessThanOrEqual(busiestTick, Int(tick) + 1)
        XCTAssertGreaterThanOrEqual(refreshes, 500 * 8, "each generation about once per second")
        XCTAssertFalse(LeasePolicy.refreshDue(nowMs: 1_999, lastRefreshMs: 1_000, intervalMs: 1_000))
        XCTAssertTrue(LeasePolicy.refreshDue(nowMs: 2_000, lastRefreshMs: 1_000, intervalMs: 1_000))
    }

    func testLeaseExpiryRepliesAreRead() {
        XCTAssertEqual(LeasePolicy.expiry(fromReply: 0), .ownerAlive)
        XCTAssertEqual(LeasePolicy.expiry(fromReply: 42), .ended(seq: 42))
        XCTAssertEqual(LeasePolicy.expiry(fromReply: -1), .vanished)
    }

    func testHeartbeatIsDueAfterTheIntervalOfQuiet() {
        let clock = VirtualClock()
        let last = clock.loopMs
        clock.advance(by: 14_999)
        XCTAssertFalse(ConnectionPolicy.heartbeatDue(nowMs: clock.loopMs, lastWriteMs: last, intervalMs: 15_000))
        clock.advance(by: 1)
        XCTAssertTrue(ConnectionPolicy.heartbeatDue(nowMs: clock.loopMs, lastWriteMs: last, intervalMs: 15_000))
    }

    func testTokenExpiryHonoursTheLeeway() {
        XCTAssertFalse(ConnectionPolicy.tokenExpired(nowS: 1_000, expiresAt: nil, leewayS: 0))
        XCTAssertFalse(ConnectionPolicy.tokenExpired(nowS: 1_030, expiresAt: 1_000, leewayS: 30))
        XCTAssertTrue(ConnectionPolicy.tokenExpired(nowS: 1_031, expiresAt: 1_000, leewayS: 30))
    }
}
