import XCTest
@testable import RelayServer

/// What a resume answers from a retained answer (docs/PROTOCOL.md §6.5): another owner's
/// record is 404, a position past the final seq 400, the final seq 204, the last delta
/// only the done, anything earlier one rest-of-text delta with id final − 1 then done.
final class RetainedResumeDecisionTests: XCTestCase {
    func testEveryPositionOfAFinishedAnswer() {
        let n: UInt64 = 61
        XCTAssertEqual(RetainedResumeDecision.decide(ownedByCaller: false, finalSeq: n, lastEventID: 3), .notFound)
        for k in UInt64(0)...59 {
            XCTAssertEqual(RetainedResumeDecision.decide(ownedByCaller: true, finalSeq: n, lastEventID: k),
                           .stream, "from \(k)")
        }
        XCTAssertEqual(RetainedResumeDecision.decide(ownedByCaller: true, finalSeq: n, lastEventID: 60), .stream)
        XCTAssertEqual(RetainedResumeDecision.decide(ownedByCaller: true, finalSeq: n, lastEventID: 61), .noContent)
        XCTAssertEqual(RetainedResumeDecision.decide(ownedByCaller: true, finalSeq: n, lastEventID: 62), .beyondEnd(finalSeq: 61))
    }

    func testAnAnswerWithoutDeltasIsOnlyItsDone() {
        XCTAssertEqual(RetainedResumeDecision.decide(ownedByCaller: true, finalSeq: 1, lastEventID: 0), .stream)
        XCTAssertEqual(RetainedResumeDecision.decide(ownedByCaller: true, finalSeq: 1, lastEventID: 1), .noContent)
    }
}
