import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// The owner lease of a running generation is refreshed on the generation's own phase
/// (`LeasePolicy.refreshDue`: no burst of every lease at once; docs/DATA_MODEL.md "Leases
/// and lost owners"), once per
/// `leaseMs / 3`: observed from Redis while a generation runs past several leases.
final class LeaseRefreshTests: RelayTestCase {
    func testTheLeaseOfALongGenerationNeverLapsesAndIsRefreshedAboutOncePerSecond() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "40"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let stream = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 400)   // ≈ 10 s
        for _ in 0..<3 { _ = try XCTUnwrap(try stream.nextEvent()) }
        let lease = streamKey(id, "lease")
        // The session's running set and the budget's reservation expiries go with the lease
        // refresh: their one member's score (unix ms) moves forward with each.
        let sessionSet = try XCTUnwrap(try redis.cli("KEYS", "relay:streams:*").split(separator: "\n").first.map(String.init))
        let expiries = try XCTUnwrap(try redis.cli("KEYS", "relay:budget:*:expiries").split(separator: "\n").first.map(String.init))
        func score(_ key: String) throws -> Double { Double(try redis.cli("ZRANGE", key, "0", "0", "WITHSCORES").split(separator: "\n").last ?? "") ?? -1 }
        let firstScores = (try score(sessionSet), try score(expiries))
        var lowest = Int.max, rises = 0, previous = 3_000
        var setTTL = 0, ttl = 0
        // 5 s of 50 ms samples: all through, the session's running set expires with the
        // lease, and the lease exists with a TTL while the generation runs.
        try consistently(for: 5, "the running set's TTL within the lease's (\(setTTL) ms), the lease's TTL > 0 (\(ttl) ms)",
                         every: 0.05) {
            setTTL = Int(try redis.cli("PTTL", sessionSet)) ?? -2
            ttl = Int(try redis.cli("PTTL", lease)) ?? -2
            lowest = min(lowest, ttl)
            if ttl > previous + 500 { rises += 1 }   // a refresh set it back to ≈ 3,000 ms
            previous = ttl
            return (1...3_500).contains(setTTL) && ttl > 0
        }
        // Refreshed every 1,000 ms (+ one 100 ms tick): the TTL never falls below ≈ 1,900 ms.
        XCTAssertGreaterThan(lowest, 1_500, "lowest lease TTL seen: \(lowest) ms")
        XCTAssertGreaterThanOrEqual(rises, 4, "about one refresh per second over 5 s")
        XCTAssertLessThanOrEqual(rises, 6, "not refreshed on every 100 ms tick")
        XCTAssertGreaterThan(try score(sessionSet) - firstScores.0, 3_000, "the session entry's lease expiry moved forward")
        XCTAssertGreaterThan(try score(expiries) - firstScores.1, 3_000, "the reservation's lapse time moved forward")
        let rest = try stream.readAll()
        XCTAssertEqual(rest.last.flatMap { try? StreamEvent(json: $0.data) }?.isTerminal, true, "the answer ends")
    }
}
