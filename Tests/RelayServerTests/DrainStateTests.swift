import XCTest
@testable import RelayServer

/// A drain reports completion exactly once, when no generation is left.
final class DrainStateTests: XCTestCase {
    func testNothingCompletesBeforeTheDrainBegins() {
        var d = DrainState()
        XCTAssertFalse(d.completes(generationsLeft: 0))
        XCTAssertFalse(d.isDraining)
    }

    func testADrainWithGenerationsRunningCompletesOnceTheLastEnds() {
        var d = DrainState()
        d.begin()
        XCTAssertTrue(d.isDraining)
        XCTAssertFalse(d.completes(generationsLeft: 2))
        XCTAssertFalse(d.completes(generationsLeft: 1))
        XCTAssertTrue(d.completes(generationsLeft: 0))
        XCTAssertFalse(d.completes(generationsLeft: 0), "reported once only")
    }

    func testAnIdleWorkerCompletesItsDrainAtOnce() {
        var d = DrainState()
        d.begin()
        d.begin()
        XCTAssertTrue(d.completes(generationsLeft: 0))
    }
}
