import XCTest
import RelayTestKit
@testable import RelayServer

/// The orphan sweep's pacing (docs/DATA_MODEL.md §6.2): heartbeat expiry, jittered sweep
/// waits, the choice of a lapsed instance, and giving up a sweep whose reply never came.
final class OrphanSweepPacingTests: XCTestCase {
    let pacing = OrphanSweepPacing(heartbeatMs: 1_000, heartbeatTTLMs: 5_000, sweepMs: 1_000, batch: 16)

    func testAHeartbeatLastsItsTTLPastTheRenewalAndOutlivesTheOwnerLease() {
        let clock = VirtualClock(startMs: 1_700_000_000_000)
        XCTAssertEqual(pacing.heartbeatExpiry(wallMs: clock.nowMs()), 1_700_000_005_000)
        XCTAssertGreaterThan(OrphanSweepPacing().heartbeatTTLMs, UInt64(3_000), "longer than the owner lease (EventLog.leaseMs)")
        XCTAssertGreaterThan(OrphanSweepPacing().heartbeatTTLMs, OrphanSweepPacing().heartbeatMs * 2, "a late renewal or two does not kill")
    }

    func testSweepWaitsSpreadBetweenHalfAndOneAndAHalfPeriods() {
        XCTAssertEqual(pacing.nextSweepDelayMs(unit: 0), 500)
        XCTAssertEqual(pacing.nextSweepDelayMs(unit: 0.5), 1_000)
        XCTAssertEqual(pacing.nextSweepDelayMs(unit: 0.999_999), 1_499)
        XCTAssertEqual(pacing.nextSweepDelayMs(unit: 7), 1_499, "an out-of-range draw is clamped")
        XCTAssertEqual(pacing.nextSweepDelayMs(unit: -1), 500)
        XCTAssertEqual(OrphanSweepPacing(sweepMs: 0).nextSweepDelayMs(unit: 0), 1, "never a zero wait")
    }

    func testASweepPicksALapsedInstanceOtherThanItselfSpreadByTheDraw() {
        let lapsed = ["a#0@1", "me#0@2", "b#0@3"]
        XCTAssertNil(pacing.pick([], me: "me#0@2", unit: 0.3))
        XCTAssertNil(pacing.pick(["me#0@2"], me: "me#0@2", unit: 0.3), "a worker never sweeps itself")
        XCTAssertEqual(pacing.pick(lapsed, me: "me#0@2", unit: 0), "a#0@1")
        XCTAssertEqual(pacing.pick(lapsed, me: "me#0@2", unit: 0.49), "a#0@1")
        XCTAssertEqual(pacing.pick(lapsed, me: "me#0@2", unit: 0.5), "b#0@3")
        XCTAssertEqual(pacing.pick(lapsed, me: "me#0@2", unit: 1), "b#0@3", "an out-of-range draw is clamped")
    }

    func testASweepInFlightBlocksTheNextUntilATTLPassesWithoutItsReply() {
        let clock = VirtualClock(startMs: 10_000)
        XCTAssertTrue(pacing.mayStart(nowMs: clock.loopMs, inFlightSinceMs: nil))
        let started = clock.loopMs
        clock.advance(by: 1_000)
        XCTAssertFalse(pacing.mayStart(nowMs: clock.loopMs, inFlightSinceMs: started), "one sweep at a time")
        clock.advance(by: 3_999)
        XCTAssertFalse(pacing.mayStart(nowMs: clock.loopMs, inFlightSinceMs: started))
        clock.advance(by: 1)
        XCTAssertTrue(pacing.mayStart(nowMs: clock.loopMs, inFlightSinceMs: started), "a lost reply does not stop the sweeps")
    }

    func testAnOwnedSetMemberIsReadBackAsTheScopedRequestID() {
        let id = OrphanSweeper.requestID("0123abcd:abcdefghijklmnop1234")
        XCTAssertEqual(id?.value, "0123abcd:abcdefghijklmnop1234")
        XCTAssertNil(OrphanSweeper.requestID("no-colon-here-at-all-1234"))
        XCTAssertNil(OrphanSweeper.requestID("hash:short"), "an id the relay would refuse is not taken over")
    }
}
