import RelayTestKit
import XCTest
@testable import RelayHTTP

final class ConnectionSheddingTests: XCTestCase {
    func testReserveIsASixteenthOfTheLimitBetween16And1024() {
        XCTAssertEqual(ConnectionShedding.reserve(forLimit: 64), 16)
        XCTAssertEqual(ConnectionShedding.reserve(forLimit: 256), 16)
        XCTAssertEqual(ConnectionShedding.reserve(forLimit: 1_024), 64)
        XCTAssertEqual(ConnectionShedding.reserve(forLimit: 1_048_576), 1_024)
    }

    func testNothingIsShedBelowTheReserve() {
        var s = ConnectionShedding()
        for id in 1...10 as ClosedRange<UInt64> { s.awaitingHead(id) }
        // Limit 256, reserve 16: descriptors 0…239 leave at least 16 free.
        XCTAssertNil(s.admitted(descriptor: 239, limit: 256))
        XCTAssertNil(s.admitted(descriptor: 5, limit: 0), "no known limit")
        XCTAssertEqual(s.candidates, 10)
    }

    func testWithinTheReserveTheOldestConnectionWithoutAHeadIsShed() {
        var s = ConnectionShedding()
        for id in 1...5 as ClosedRange<UInt64> { s.awaitingHead(id) }
        s.leftCandidates(1)  // completed its head: a request (or a stream) now
        XCTAssertEqual(s.admitted(descriptor: 240, limit: 256), 2)
        XCTAssertEqual(s.admitted(descriptor: 255, limit: 256), 3)
        XCTAssertEqual(s.acceptFailed(), 4)
        XCTAssertEqual(s.candidates, 1)
        XCTAssertEqual(s.acceptFailed(), 5)
        XCTAssertNil(s.acceptFailed(), "nothing left to shed: the listener backs off")
        XCTAssertNil(s.admitted(descriptor: 255, limit: 256))
    }

    func testAConnectionIsNeverShedTwiceNorAfterItLeft() {
        var s = ConnectionShedding()
        s.awaitingHead(7)
        s.awaitingHead(7)
        s.awaitingHead(8)
        s.leftCandidates(8)
        s.leftCandidates(8)
        XCTAssertEqual(s.acceptFailed(), 7)
        XCTAssertNil(s.acceptFailed())
        s.leftCandidates(7)  // closed after being shed: no effect
        XCTAssertEqual(s.candidates, 0)
    }

    /// Random arrivals, heads and closes against a plain ordered list: the one shed is always
    /// the oldest remaining candidate, and the bookkeeping stays bounded.
    func testShedOrderMatchesAReferenceUnderRandomTraffic() {
        var rng = SplitMix64(seed: 0x5EED_F00D)
        var s = ConnectionShedding()
        var reference: [UInt64] = []
        var next: UInt64 = 0
        for _ in 0..<20_000 {
            switch rng.next() % 10 {
            case 0...4:
                next += 1
                s.awaitingHead(next)
                reference.append(next)
            case 5...7:
                guard !reference.isEmpty else { continue }
                let i = Int(rng.next() % UInt64(reference.count))
                s.leftCandidates(reference.remove(at: i))
            default:
                XCTAssertEqual(s.acceptFailed(), reference.first)
                if !reference.isEmpty { reference.removeFirst() }
            }
            XCTAssertEqual(s.candidates, reference.count)
        }
        while let first = reference.first {
            XCTAssertEqual(s.acceptFailed(), first)
            reference.removeFirst()
        }
        XCTAssertNil(s.acceptFailed())
    }
}
