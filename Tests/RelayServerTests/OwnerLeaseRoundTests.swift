import XCTest
@testable import RelayServer

/// The owner-lease schedule on a virtual clock: refreshes on each generation's own
/// phase, owners judged every third of a lease and only once Redis has been up a lease.
final class OwnerLeaseRoundTests: XCTestCase {
    let lease: UInt64 = 3_000

    func testAnOwnedGenerationRefreshesEveryThirdOfALeaseOnItsOwnPhase() {
        XCTAssertFalse(OwnerLeaseRound.refreshDue(nowMs: 1_999, lastRefreshMs: 1_000, leaseMs: lease))
        XCTAssertTrue(OwnerLeaseRound.refreshDue(nowMs: 2_000, lastRefreshMs: 1_000, leaseMs: lease))
        XCTAssertFalse(OwnerLeaseRound.refreshDue(nowMs: 2_000, lastRefreshMs: 1_050, leaseMs: lease))
    }

    func testOwnersAreJudgedAtMostEveryThirdOfALease() {
        var round = OwnerLeaseRound()
        var outage = RedisOutage()
        outage.connected(nowMs: 0)
        var judged: [UInt64] = []
        for now in stride(from: UInt64(3_000), through: 6_000, by: 100) where round.judgesOwners(nowMs: now, leaseMs: lease, outage: outage) {
            judged.append(now)
        }
        XCTAssertEqual(judged, [3_000, 4_000, 5_000, 6_000])
    }

    func testOwnersAreNotJudgedUntilRedisHasBeenUpForAWholeLease() {
        var round = OwnerLeaseRound()
        var outage = RedisOutage()
        outage.connected(nowMs: 0)
        outage.disconnected(nowMs: 10_000)
        outage.connected(nowMs: 12_000)
        XCTAssertFalse(round.judgesOwners(nowMs: 13_000, leaseMs: lease, outage: outage))
        XCTAssertEqual(round.judgedMs, 13_000, "a due round that could not judge still counts")
        XCTAssertFalse(round.judgesOwners(nowMs: 14_000, leaseMs: lease, outage: outage))
        XCTAssertTrue(round.judgesOwners(nowMs: 15_000, leaseMs: lease, outage: outage))
    }

    func testOnlyStreamsQuietForHalfALeaseAreChecked() {
        let streams: [(id: String, quietSinceMs: UInt64?)] = [("a", 8_500), ("b", 8_499), ("c", nil), ("d", 9_900)]
        XCTAssertEqual(OwnerLeaseRound.streamsToCheck(streams, nowMs: 10_000, leaseMs: lease), ["a", "b"])
    }
}
