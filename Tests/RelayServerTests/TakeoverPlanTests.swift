import RelayRedis
import XCTest
@testable import RelayEventStore
@testable import RelayServer

/// What an instance does with a lapsed owner's answer (`TakeoverPlan`), the same whether a
/// reader noticed the lapse or the sweep found the owner's heartbeat gone; and which plans
/// leave the stream in the dead worker's set for a later sweep.
final class TakeoverPlanTests: XCTestCase {
    func testEveryAnswerOfTheScriptHasOnePlan() {
        let taken = EventLog.TakenStream(epoch: 1, topSeq: 40, request: "{}", prefix: "", prefixPieces: [], retained: [],
                                         continuations: 1, owner: "alice", sid: "s", priorPrompt: 12)
        let ended = EventLog.EndedStream(state: "done", budgetKey: "relay:budget:{u:x}:2026-12", prompt: 12, lastSeq: 41, finalEvent: nil)
        XCTAssertEqual(TakeoverPlan.plan(.success(.taken(taken))), .continueHere)
        XCTAssertEqual(TakeoverPlan.plan(.success(.notContinuable)), .endUpstreamLost)
        XCTAssertEqual(TakeoverPlan.plan(.success(.vanished)), .endReadersStreamLost)
        XCTAssertEqual(TakeoverPlan.plan(.success(.ended(ended))), .settleEnded, "an owner dead before settling is settled again")
        XCTAssertEqual(TakeoverPlan.plan(.success(.ownerAlive)), .leave)
        XCTAssertEqual(TakeoverPlan.plan(.success(.needsKeys)), .leaveForARelayWithKeys)
        XCTAssertEqual(TakeoverPlan.plan(.failure(.disconnected("connection lost"))), .retryLater)
    }

    func testTheSweepKeepsOnlyWhatAnotherRelayOrALaterRoundCanDo() {
        XCTAssertFalse(TakeoverPlan.leaveForARelayWithKeys.sweepIsDone, "left in the set for a relay with keys")
        XCTAssertFalse(TakeoverPlan.retryLater.sweepIsDone, "Redis failed: a later sweep tries again")
        for done in [TakeoverPlan.continueHere, .endUpstreamLost, .endReadersStreamLost, .settleEnded, .leave] {
            XCTAssertTrue(done.sweepIsDone, "\(done)")
        }
    }
}
