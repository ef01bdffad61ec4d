import XCTest
@testable import RelayAuth

/// ``UnknownKidRefetch`` on a virtual clock (ms passed in): who waits, when fetches start,
/// the negative cache, and what floods of made-up kids cost.
final class UnknownKidRefetchTests: XCTestCase {
    private func decisions(interval: Int = 1_000, ttl: Int = 10_000, capacity: Int = 4_096) -> UnknownKidRefetch {
        UnknownKidRefetch(intervalMs: interval, negativeTTLMs: ttl, negativeCapacity: capacity)
    }

    func testTheFirstUnknownKidWantsAFetchNowAndLaterOnesShareIt() {
        var d = decisions()
        XCTAssertEqual(d.unknownKid("k1", nowMs: 0), .awaitFetch(atMs: 0, newlyWanted: true))
        XCTAssertEqual(d.unknownKid("k2", nowMs: 5), .awaitFetch(atMs: 5, newlyWanted: false))
        XCTAssertTrue(d.fetchStarted(nowMs: 5))
        XCTAssertEqual(d.unknownKid("k3", nowMs: 20), .awaitFetchInFlight, "arrived during the fetch: looked at again at its end")
        XCTAssertNil(d.wantedFetchAtMs(nowMs: 20))
        XCTAssertEqual(d.fetchEnded(), 5)
        XCTAssertNil(d.fetchEnded(), "nothing in flight any more")
        XCTAssertTrue(UnknownKidRefetch.covers(arrivalMs: 0, fetchStartedMs: 5))
        XCTAssertTrue(UnknownKidRefetch.covers(arrivalMs: 5, fetchStartedMs: 5))
        XCTAssertFalse(UnknownKidRefetch.covers(arrivalMs: 20, fetchStartedMs: 5))
    }

    func testFetchesWantedByWaitersStartAtMostOncePerIntervalWhateverCausedThePreviousOne() {
        var d = decisions(interval: 1_000)
        d.fetchStarted(nowMs: 100)   // a scheduled refresh
        _ = d.fetchEnded()
        XCTAssertEqual(d.unknownKid("new", nowMs: 300), .awaitFetch(atMs: 1_100, newlyWanted: true))
        XCTAssertEqual(d.wantedFetchAtMs(nowMs: 600), 1_100)
        XCTAssertEqual(d.wantedFetchAtMs(nowMs: 1_500), 1_500, "never in the past")
        XCTAssertFalse(decisions().wantedFetchAtMs(nowMs: 0) != nil, "nothing wanted")
    }

    func testARealKeyAfterJunkKidsWaitsAtMostOneIntervalAndTwoFetches() {
        // A junk kid starts a fetch at 0 (50 ms); the real key is published at 10 and used at 10.
        var d = decisions(interval: 1_000)
        XCTAssertEqual(d.unknownKid("junk", nowMs: 0), .awaitFetch(atMs: 0, newlyWanted: true))
        d.fetchStarted(nowMs: 0)
        XCTAssertEqual(d.unknownKid("real", nowMs: 10), .awaitFetchInFlight)
        let start = d.fetchEnded()!
        // The junk waiter was answered by that fetch: confirmed unknown.
        XCTAssertTrue(UnknownKidRefetch.covers(arrivalMs: 0, fetchStartedMs: start))
        d.confirmedUnknown("junk", nowMs: 50)
        // The real one arrived during it: it wants the next fetch, one interval after the first.
        XCTAssertFalse(UnknownKidRefetch.covers(arrivalMs: 10, fetchStartedMs: start))
        XCTAssertEqual(d.unknownKid("real", nowMs: 50), .awaitFetch(atMs: 1_000, newlyWanted: true))
        // More junk meanwhile changes nothing for it.
        XCTAssertEqual(d.unknownKid("junk", nowMs: 60), .refuse)
        XCTAssertEqual(d.unknownKid("junk-2", nowMs: 70), .awaitFetch(atMs: 1_000, newlyWanted: false))
        XCTAssertEqual(d.wantedFetchAtMs(nowMs: 999), 1_000)
    }

    func testTheNegativeCacheLapsesAndIsBounded() {
        var d = decisions(ttl: 10_000, capacity: 3)
        d.confirmedUnknown("a", nowMs: 0)
        XCTAssertEqual(d.unknownKid("a", nowMs: 9_999), .refuse)
        XCTAssertEqual(d.unknownKid("a", nowMs: 10_000), .awaitFetch(atMs: 10_000, newlyWanted: true), "lapsed")
        for k in ["b", "c", "d", "e"] { d.confirmedUnknown(k, nowMs: 20_000) }
        XCTAssertEqual(d.negativeCount, 3)
        XCTAssertNotEqual(d.unknownKid("b", nowMs: 20_001), .refuse, "the oldest is forgotten first")
        XCTAssertEqual(d.unknownKid("e", nowMs: 20_001), .refuse)
        var many = decisions(capacity: 100)
        for i in 0..<10_000 { many.confirmedUnknown("junk-\(i)", nowMs: Int64(i)) }
        XCTAssertEqual(many.negativeCount, 100)
    }

    func testAnOverlongKidIsRefusedAtOnceAndNeverRemembered() {
        var d = decisions()
        let long = String(repeating: "k", count: UnknownKidRefetch.maxKidBytes + 1)
        XCTAssertEqual(d.unknownKid(long, nowMs: 0), .refuse)
        d.confirmedUnknown(long, nowMs: 0)
        XCTAssertEqual(d.negativeCount, 0)
        XCTAssertFalse(d.wanted)
    }

    func testNoSetYetATokenWithoutKidWantsAFetch() {
        var d = decisions()
        XCTAssertEqual(d.unknownKid(nil, nowMs: 0), .awaitFetch(atMs: 0, newlyWanted: true))
    }

    /// 10,000 tokens, each naming a different made-up kid, arriving over 3 s, with 50 ms
    /// fetches: the fetches wanted by waiters are about one per interval.
    func testTenThousandJunkKidsCostAboutOneFetchPerInterval() {
        var d = decisions(interval: 1_000)
        var fetches = 0
        var inFlightEndsAt: Int64?
        var waiting: [(kid: String, arrival: Int64)] = []
        var refused = 0
        for i in 0..<10_000 {
            let now = Int64(i) * 3_000 / 10_000
            if let end = inFlightEndsAt, end <= now {
                let start = d.fetchEnded()!
                inFlightEndsAt = nil
                var still: [(kid: String, arrival: Int64)] = []
                for w in waiting {
                    if UnknownKidRefetch.covers(arrivalMs: w.arrival, fetchStartedMs: start) {
                        d.confirmedUnknown(w.kid, nowMs: now)
                        refused += 1
                    } else if d.unknownKid(w.kid, nowMs: now) == .refuse {
                        refused += 1
                    } else {
                        still.append(w)
                    }
                }
                waiting = still
            }
            if inFlightEndsAt == nil, let at = d.wantedFetchAtMs(nowMs: now), at <= now {
                d.fetchStarted(nowMs: now)
                fetches += 1
                inFlightEndsAt = now + 50
            }
            switch d.unknownKid("junk-\(i)", nowMs: now) {
            case .refuse: refused += 1
            case .awaitFetch, .awaitFetchInFlight: waiting.append(("junk-\(i)", now))
            }
        }
        XCTAssertLessThanOrEqual(fetches, 4, "one at once, then one per second of the flood")
        XCTAssertGreaterThanOrEqual(fetches, 3)
        print("10,000 junk kids over 3 s: \(fetches) fetches, \(refused) refused so far, \(waiting.count) still waiting")
    }
}
