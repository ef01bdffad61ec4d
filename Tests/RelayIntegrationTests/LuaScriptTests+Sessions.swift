import Foundation
import RelayBudgets
import RelayCore
@testable import RelayEventStore
import RelayRedis
import XCTest

/// `LuaScriptTests`: instances, sessions and cancels (docs/DATA_MODEL.md §6.2, §7, §8), and
/// the budget ledger (§9).
extension LuaScriptTests {
    // MARK: heartbeat, removeLapsedInstance

    var instances: [String] { [InstanceRegistry.instancesKey] }

    func testHeartbeatTellsAMissingOrLapsedHeartbeatFromACurrentOne() throws {
        XCTAssertTrue(try reply(Scripts.heartbeat, instances, ["w1", "2000", "1000"]).wasMissingOrLapsed, "missing")
        XCTAssertEqual(try redis.cli("ZSCORE", InstanceRegistry.instancesKey, "w1"), "2000")
        XCTAssertFalse(try reply(Scripts.heartbeat, instances, ["w1", "3000", "1500"]).wasMissingOrLapsed, "current")
        XCTAssertTrue(try reply(Scripts.heartbeat, instances, ["w1", "9000", "3000"]).wasMissingOrLapsed, "lapsed at its expiry")
        XCTAssertEqual(try redis.cli("ZSCORE", InstanceRegistry.instancesKey, "w1"), "9000")
    }

    func testRemoveLapsedInstanceRemovesOnlyAHeartbeatStillLapsed() throws {
        try redis.cli("ZADD", InstanceRegistry.instancesKey, "1000", "w1", "5000", "w2")
        XCTAssertFalse(try reply(Scripts.removeLapsedInstance, instances, ["w2", "2000"]).removed, "current")
        XCTAssertTrue(try reply(Scripts.removeLapsedInstance, instances, ["w1", "2000"]).removed)
        XCTAssertFalse(try reply(Scripts.removeLapsedInstance, instances, ["w1", "2000"]).removed, "missing")
        XCTAssertEqual(try redis.cli("ZRANGE", InstanceRegistry.instancesKey, "0", "-1"), "w2")
    }

    // MARK: admit

    func testAdmitHoldsOneSlotPerRequestUpToTheLimitAndDropsLapsedEntries() throws {
        let key = [SessionStore.streamsKey(owner: "h0", sid: "s1")]
        let t = Int64(Date().timeIntervalSince1970 * 1000)   // the key's expiry is a real time
        func args(_ id: String, now: Int64, expiry: Int64) -> [String] { [id, String(now), String(expiry), "2"] }
        XCTAssertEqual(try reply(Scripts.admit, key, args("r1", now: t, expiry: t + 4000)), .admitted)
        XCTAssertEqual(try reply(Scripts.admit, key, args("r2", now: t, expiry: t + 5000)), .admitted)
        XCTAssertEqual(try reply(Scripts.admit, key, args("r3", now: t, expiry: t + 4000)), .atLimit)
        XCTAssertEqual(try reply(Scripts.admit, key, args("r1", now: t, expiry: t + 4000)), .admitted, "a retried request holds its slot")
        XCTAssertEqual(try redis.cli("ZCARD", key[0]), "2")
        XCTAssertEqual(try redis.cli("PEXPIRETIME", key[0]), String(t + 5000), "the latest entry's expiry")
        XCTAssertEqual(try reply(Scripts.admit, key, args("r3", now: t + 4000, expiry: t + 8000)), .admitted, "r1 lapsed")
        XCTAssertEqual(try redis.cli("ZRANGE", key[0], "0", "-1"), "r2\nr3")
        XCTAssertEqual(try redis.cli("PEXPIRETIME", key[0]), String(t + 8000))
    }

    // MARK: requestCancel

    func testRequestCancelLeavesTheMarkerForAStreamNotCreatedYetOrRunning() throws {
        XCTAssertEqual(try reply(Scripts.requestCancel, [k.meta, k.cancel], ["alice", "60000"]), .pending)
        XCTAssertEqual(try redis.cli("EXISTS", k.cancel), "1")
        try redis.cli("DEL", k.cancel)
        try createStream()
        XCTAssertEqual(try reply(Scripts.requestCancel, [k.meta, k.cancel], ["alice", "60000"]), .stream(.running))
        XCTAssertEqual(try redis.cli("EXISTS", k.cancel), "1")
    }

    func testRequestCancelWritesNothingForAnotherOwnerOrAnEndedStream() throws {
        try createStream()
        XCTAssertEqual(try reply(Scripts.requestCancel, [k.meta, k.cancel], ["bob", "60000"]), .otherOwner)
        XCTAssertEqual(try redis.cli("EXISTS", k.cancel), "0")
        try redis.cli("HSET", k.meta, "state", "done")
        XCTAssertEqual(try reply(Scripts.requestCancel, [k.meta, k.cancel], ["alice", "60000"]), .stream(.done))
        XCTAssertEqual(try redis.cli("EXISTS", k.cancel), "0")
    }

    // MARK: budgets: reserve, settle, extend, read

    var budget: [String] {
        let key = BudgetLedger.key(ownerHash: "h0", period: "2026-01")
        return [key, BudgetLedger.expiriesKey(key)]
    }

    /// ARGV of `reserve` for request `id` at now 1000 (lapse 31000): limit 1000 tokens.
    func reserveArgs(_ id: String, prompt: Int = 100, wanted: Int = 300, minimum: Int = 50) -> [String] {
        [id, "1000", "31000", "1000", String(prompt), String(wanted), String(minimum), "3456000000"]
    }

    func testReserveGrantsOncePerIdAndRefusesWhatNoLongerFits() throws {
        XCTAssertEqual(try reply(BudgetScripts.reserve, budget, reserveArgs("r1")), .granted(tokens: 400))
        XCTAssertEqual(try reply(BudgetScripts.reserve, budget, reserveArgs("r1")), .granted(tokens: 400), "a repeated id")
        XCTAssertEqual(try redis.cli("HMGET", budget[0], "reserved", "r:r1"), "400\n400")
        XCTAssertEqual(try redis.cli("ZSCORE", budget[1], "r1"), "31000")
        XCTAssertEqual(try reply(BudgetScripts.reserve, budget, reserveArgs("r2", wanted: 1000, minimum: 600)), .refused(remaining: 600))
        XCTAssertEqual(try reply(BudgetScripts.reserve, budget, reserveArgs("r3", wanted: 1000, minimum: 100)), .granted(tokens: 600),
                       "clamped to what remains")
    }

    func testSettleChargesOnceAndASettledIdIsNotReservedAgain() throws {
        XCTAssertEqual(try reply(BudgetScripts.reserve, budget, reserveArgs("r1")), .granted(tokens: 400))
        XCTAssertEqual(try reply(BudgetScripts.settle, budget, ["r1", "350", "3456000000"]), .settled(tokens: 350))
        XCTAssertEqual(try redis.cli("HMGET", budget[0], "used", "reserved", "r:r1", "s:r1"), "350\n0\n\n350")
        XCTAssertEqual(try reply(BudgetScripts.settle, budget, ["r1", "999", "3456000000"]), .alreadySettled)
        XCTAssertEqual(try redis.cli("HGET", budget[0], "used"), "350", "charged once")
        XCTAssertEqual(try reply(BudgetScripts.reserve, budget, reserveArgs("r1")), .settled)
    }

    func testExtendGrowsAHeldReservationWithinTheLimitOnly() throws {
        XCTAssertEqual(try reply(BudgetScripts.extend, budget, ["r1", "100", "1000", "40000"]), .noReservation)
        XCTAssertEqual(try reply(BudgetScripts.reserve, budget, reserveArgs("r1")), .granted(tokens: 400))
        XCTAssertEqual(try reply(BudgetScripts.extend, budget, ["r1", "100", "1000", "40000"]), .extended)
        XCTAssertEqual(try redis.cli("HMGET", budget[0], "reserved", "r:r1"), "500\n500")
        XCTAssertEqual(try redis.cli("ZSCORE", budget[1], "r1"), "40000")
        XCTAssertEqual(try reply(BudgetScripts.extend, budget, ["r1", "600", "1000", "50000"]), .refused(remaining: 500))
        XCTAssertEqual(try redis.cli("HGET", budget[0], "reserved"), "500", "nothing changed")
    }

    func testReadReleasesLapsedReservationsBeforeItCounts() throws {
        XCTAssertEqual(try reply(BudgetScripts.read, budget, ["1000"]), BudgetLedger.Usage(used: 0, reserved: 0))
        XCTAssertEqual(try reply(BudgetScripts.reserve, budget, reserveArgs("r1")), .granted(tokens: 400))
        _ = try reply(BudgetScripts.settle, budget, ["r0", "70", "3456000000"])
        XCTAssertEqual(try reply(BudgetScripts.read, budget, ["30000"]), BudgetLedger.Usage(used: 70, reserved: 400))
        XCTAssertEqual(try reply(BudgetScripts.read, budget, ["31000"]), BudgetLedger.Usage(used: 70, reserved: 0), "r1 lapsed at 31000")
        XCTAssertEqual(try redis.cli("HEXISTS", budget[0], "r:r1"), "0")
    }
}
