import RelayTestKit
import XCTest
@testable import RelayServer

final class ReplayAdmissionTests: XCTestCase {
    func testReadsBeyondTheLimitWaitAndStartInArrivalOrder() {
        var a = ReplayAdmission(maxInFlight: 2)
        XCTAssertTrue(a.request(1))
        XCTAssertTrue(a.request(2))
        XCTAssertFalse(a.request(3))
        XCTAssertFalse(a.request(4))
        XCTAssertEqual(a.inFlight, 2)
        XCTAssertEqual(a.queued, 2)
        XCTAssertEqual(a.finished(), 3, "the slot passes to the longest-waiting read")
        XCTAssertEqual(a.inFlight, 2)
        XCTAssertEqual(a.finished(), 4)
        XCTAssertEqual(a.queued, 0)
        XCTAssertNil(a.finished())
        XCTAssertEqual(a.inFlight, 1)
        XCTAssertNil(a.finished())
        XCTAssertEqual(a.inFlight, 0)
    }

    func testANewReadDoesNotOvertakeWaitingOnes() {
        var a = ReplayAdmission(maxInFlight: 1)
        XCTAssertTrue(a.request(1))
        XCTAssertFalse(a.request(2))
        // A slot is free only through finished(), which hands it to 2: a read arriving now waits.
        XCTAssertEqual(a.finished(), 2)
        XCTAssertFalse(a.request(3))
        XCTAssertEqual(a.finished(), 3)
    }

    /// Reads whose clients left while they waited are passed over when a slot frees: the slot
    /// goes to the longest-waiting read still wanted, and the skipped ones are named.
    func testAFreedSlotSkipsReadsNobodyWantsAnyMore() {
        var a = ReplayAdmission(maxInFlight: 1)
        XCTAssertTrue(a.request(1))
        for t: UInt64 in 2...5 { XCTAssertFalse(a.request(t)) }
        let gone: Set<UInt64> = [2, 3, 5]
        XCTAssertEqual(a.finished(skipping: gone.contains), .init(next: 4, skipped: [2, 3]))
        XCTAssertEqual(a.inFlight, 1)
        XCTAssertEqual(a.queued, 1)
        XCTAssertEqual(a.finished(skipping: gone.contains), .init(next: nil, skipped: [5]),
                       "the last waiting read was unwanted: the slot is freed")
        XCTAssertEqual(a.inFlight, 0)
        XCTAssertEqual(a.queued, 0)
        XCTAssertTrue(a.request(6), "a free slot starts the next read at once")
    }

    /// A burst of 3,000 resumes on one worker: never more than the limit in flight, each read
    /// started exactly once, in arrival order, whatever order the replies come back in.
    func testABurstNeverExceedsTheLimitAndEveryReadStartsOnce() {
        let limit = 32
        var a = ReplayAdmission(maxInFlight: limit)
        var rng = SplitMix64(seed: 3_000)
        var started: [UInt64] = []
        var outstanding = 0
        var peak = 0
        var next: UInt64 = 0
        while next < 3_000 || outstanding > 0 {
            // Arrivals come faster than replies: up to 20 requests, then up to 5 replies.
            for _ in 0..<(rng.next() % 20) where next < 3_000 {
                next += 1
                if a.request(next) {
                    started.append(next)
                    outstanding += 1
                }
            }
            for _ in 0..<(rng.next() % 5 + 1) where outstanding > 0 {
                outstanding -= 1
                if let t = a.finished() {
                    started.append(t)
                    outstanding += 1
                }
            }
            peak = max(peak, outstanding)
            XCTAssertLessThanOrEqual(a.inFlight, limit)
            XCTAssertEqual(a.inFlight, outstanding)
        }
        XCTAssertEqual(peak, limit, "the window was used")
        XCTAssertEqual(started, Array(1...3_000), "each read started once, in arrival order")
        XCTAssertEqual(a.queued, 0)
    }
}
