import XCTest
@testable import RelayServer

/// The connection sweep's verdicts, in their order of precedence, on a virtual clock.
final class ConnectionSweepTests: XCTestCase {
    private func verdict(nowMs: UInt64, nowS: Int64 = 1_000, cut: Bool = false, lastWriteMs: UInt64 = 0,
                         exp: Int64? = nil, leeway: Int64 = 0, heartbeatMs: UInt64 = 15_000) -> ConnectionSweep.Verdict {
        ConnectionSweep.verdict(nowMs: nowMs, nowS: nowS, redisCut: cut, lastWriteMs: lastWriteMs,
                                tokenExpiresAt: exp, leewayS: leeway, heartbeatMs: heartbeatMs)
    }

    func testAQuietConnectionGetsAHeartbeatOnceTheIntervalHasPassed() {
        XCTAssertEqual(verdict(nowMs: 14_999, lastWriteMs: 0), .keep(heartbeatDue: false))
        XCTAssertEqual(verdict(nowMs: 15_000, lastWriteMs: 0), .keep(heartbeatDue: true))
        XCTAssertEqual(verdict(nowMs: 20_000, lastWriteMs: 10_000), .keep(heartbeatDue: false))
    }

    func testATokenExpiredPastItsLeewayEndsTheStream() {
        XCTAssertEqual(verdict(nowMs: 1, nowS: 1_005, exp: 1_000, leeway: 5), .keep(heartbeatDue: false))
        XCTAssertEqual(verdict(nowMs: 1, nowS: 1_006, exp: 1_000, leeway: 5), .tokenExpired)
        XCTAssertEqual(verdict(nowMs: 1, nowS: 9_999_999, exp: nil), .keep(heartbeatDue: false))
    }

    func testARedisOutageCutComesBeforeEverythingElse() {
        XCTAssertEqual(verdict(nowMs: 99_000, nowS: 9_999, cut: true, exp: 1), .redisUnavailable)
    }

    func testTheSweepRunsFourTimesPerHeartbeatBetweenTenMillisecondsAndOneSecond() {
        XCTAssertEqual(ConnectionSweep.intervalMs(heartbeatMs: 15_000), 1_000)
        XCTAssertEqual(ConnectionSweep.intervalMs(heartbeatMs: 2_000), 500)
        XCTAssertEqual(ConnectionSweep.intervalMs(heartbeatMs: 20), 10)
    }
}
