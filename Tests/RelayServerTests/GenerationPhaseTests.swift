import XCTest
@testable import RelayServer

/// A generation's life (`GenerationPhase`): the upstream is called once, from waiting only;
/// the first ending stands unless a refused append replaces it; teardown keeps the ending.
final class GenerationPhaseTests: XCTestCase {
    func testTheUpstreamIsCalledOnceAndNeverAfterAnEnding() {
        var p = GenerationPhase.waiting
        XCTAssertFalse(p.isFinished)
        XCTAssertFalse(p.upstreamCalled)
        XCTAssertTrue(p.start())
        XCTAssertEqual(p, .generating)
        XCTAssertFalse(p.start(), "started once")
        var cancelledFirst = GenerationPhase.waiting
        XCTAssertTrue(cancelledFirst.end(.finalEvent))   // a DELETE before the start
        XCTAssertFalse(cancelledFirst.start(), "an ended generation never calls its upstream")
        XCTAssertEqual(cancelledFirst, .ended(.finalEvent, upstreamCalled: false), "it charges nothing of its own")
    }

    func testTheFirstEndingStandsExceptForARefusedAppend() {
        var p = GenerationPhase.generating
        XCTAssertTrue(p.end(.finalEvent))
        XCTAssertTrue(p.isFinished)
        XCTAssertFalse(p.end(.handedOver), "a hand-over after the final event changes nothing")
        XCTAssertEqual(p.ending, .finalEvent)
        // The store refuses the final event: the stream was taken over meanwhile.
        XCTAssertTrue(p.end(.takenOver))
        XCTAssertEqual(p, .ended(.takenOver, upstreamCalled: true))
        XCTAssertFalse(p.end(.storeRefused), "taken over stays taken over: the taker settles")
        var gone = GenerationPhase.generating
        gone.end(.finalEvent)
        XCTAssertTrue(gone.end(.storeRefused))
        XCTAssertEqual(gone.ending, .storeRefused)
        var handed = GenerationPhase.generating
        XCTAssertTrue(handed.end(.handedOver))
        XCTAssertFalse(handed.end(.finalEvent))
        XCTAssertEqual(handed.ending, .handedOver)
    }

    func testTeardownKeepsTheEndingAndHappensOnce() {
        var p = GenerationPhase.generating
        p.end(.takenOver)
        XCTAssertTrue(p.tearDown())
        XCTAssertEqual(p, .tornDown(.takenOver, upstreamCalled: true))
        XCTAssertFalse(p.tearDown())
        XCTAssertFalse(p.end(.storeRefused), "inert after teardown")
        XCTAssertTrue(p.isFinished)
        var stopped = GenerationPhase.generating   // the worker stops under a running generation
        XCTAssertTrue(stopped.tearDown())
        XCTAssertEqual(stopped, .tornDown(nil, upstreamCalled: true))
        XCTAssertTrue(stopped.isFinished)
    }
}
