import XCTest
@testable import RelayServer

/// Every answer a resume can get (docs/PROTOCOL.md §6.2), decided from what opening the
/// stream found and the client's position.
final class ResumeDecisionTests: XCTestCase {
    private func found(owned: Bool = true, finished: Bool = false, lastSeq: UInt64 = 10, first: UInt64? = 1,
                       text: Int = 100) -> ResumeDecision.Found {
        .init(ownedByCaller: owned, finished: finished, lastSeq: lastSeq, firstRetainedSeq: first, textLength: text)
    }

    func testAMissingOrForeignStreamIsNotFound() {
        XCTAssertEqual(ResumeDecision.decide(nil, lastEventID: 0, lossless: true), .notFound)
        XCTAssertEqual(ResumeDecision.decide(found(owned: false), lastEventID: 0, lossless: true), .notFound)
    }

    func testAPositionPastTheLastEventIsRefused() {
        XCTAssertEqual(ResumeDecision.decide(found(lastSeq: 10), lastEventID: 11, lossless: true), .beyondEnd(lastSeq: 10))
    }

    func testEveryPositionInsideTheWindowStreamsWithoutCatchUp() {
        for k in UInt64(0)...9 {
            XCTAssertEqual(ResumeDecision.decide(found(lastSeq: 10, first: 1), lastEventID: k, lossless: false), .stream(catchUp: false), "k=\(k)")
        }
    }

    func testAFinishedStreamResumedFromItsFinalEventIsNoContent() {
        XCTAssertEqual(ResumeDecision.decide(found(finished: true, lastSeq: 10), lastEventID: 10, lossless: true), .noContent)
        XCTAssertEqual(ResumeDecision.decide(found(finished: true, lastSeq: 10), lastEventID: 9, lossless: true), .stream(catchUp: false))
        XCTAssertEqual(ResumeDecision.decide(found(finished: false, lastSeq: 10), lastEventID: 10, lossless: true), .stream(catchUp: false),
                       "a running stream at its tail waits for the next event")
    }

    func testAPositionBehindTheWindowIsCaughtUpFromTheTextOrIsAGap() {
        let f = found(lastSeq: 300, first: 101, text: 5_000)
        XCTAssertEqual(ResumeDecision.decide(f, lastEventID: 99, lossless: true), .stream(catchUp: true))
        XCTAssertEqual(ResumeDecision.decide(f, lastEventID: 100, lossless: true), .stream(catchUp: false), "the oldest kept is the next one")
        XCTAssertEqual(ResumeDecision.decide(f, lastEventID: 99, lossless: false), .gap(oldestKept: 101))
        XCTAssertEqual(ResumeDecision.decide(found(lastSeq: 300, first: 101, text: 0), lastEventID: 99, lossless: true), .gap(oldestKept: 101),
                       "lossless, but the text expired")
    }

    func testAStreamWithNoEventRetainedAndNoneGeneratedStreams() {
        XCTAssertEqual(ResumeDecision.decide(found(lastSeq: 0, first: nil, text: 0), lastEventID: 0, lossless: true), .stream(catchUp: false))
        XCTAssertEqual(ResumeDecision.decide(found(lastSeq: 0, first: nil, text: 0), lastEventID: 0, lossless: false), .stream(catchUp: false))
    }
}
