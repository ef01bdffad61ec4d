import XCTest
import RelayCore
@testable import RelayClient

/// The `conformance/CLIENT_RULES.md` reconnect decisions (token expiry, `Retry-After`,
/// background and foreground), on the pure policy
/// (virtual times, fixed jitter).
final class ReconnectRulesTests: XCTestCase {
    let stream = "text/event-stream"

    /// A policy streaming with `seq` 1…5 received at `now` 0.
    func streaming() -> ReconnectPolicy {
        var p = ReconnectPolicy()
        _ = p.start(now: 0)
        _ = p.responseOpened(status: 200, contentType: stream, now: 0)
        for i in 1...5 { _ = p.eventReceived(seq: UInt64(i), event: .delta("x"), now: 0) }
        return p
    }

    func e(_ status: Int, _ code: ErrorCode) -> APIError { APIError(status: status, code: code, message: code.rawValue) }

    /// A policy that dropped at 0 and is reconnecting (attempt 1) at 1 s.
    func reconnecting() -> ReconnectPolicy {
        var p = streaming()
        _ = p.connectionLost(now: 0)
        _ = p.tick(now: 1_000)
        return p
    }

    func test503WaitsTheLongerOfRetryAfterAndBackoffPlusJitter() {
        var p = streaming()
        XCTAssertEqual(p.connectionLost(jitterMs: 30, now: 100), .wait(until: 1_130))
        XCTAssertEqual(p.tick(now: 1_130), .reconnect(lastEventId: 5))
        XCTAssertEqual(p.responseOpened(status: 503, contentType: nil, error: e(503, "not_ready"), retryAfterMs: 5_000,
                                        jitterMs: 10, now: 1_200), .wait(until: 6_210))
        XCTAssertEqual(p.tick(now: 6_210), .reconnect(lastEventId: 5))
        // Without Retry-After (a draining relay): the backoff.
        XCTAssertEqual(p.responseOpened(status: 503, contentType: nil, now: 6_300), .wait(until: 7_300))
        XCTAssertEqual(p.tick(now: 7_300), .reconnect(lastEventId: 5))
        // The 503s counted toward the 3: the next failure needs a manual resume.
        XCTAssertEqual(p.responseOpened(status: 503, contentType: nil, retryAfterMs: 1_000, now: 7_400), .finish(.needsResume))
    }

    func test503OnTheFirstRequestIsRetryableToo() {
        var p = ReconnectPolicy(backoffMs: 3_000)
        _ = p.start(now: 0)
        XCTAssertEqual(p.responseOpened(status: 503, contentType: nil, retryAfterMs: 1_000, jitterMs: 250, now: 0), .wait(until: 3_250))
        XCTAssertEqual(p.tick(now: 3_250), .reconnect(lastEventId: 0), "before any event: re-send the POST")
    }

    func testRetryAfterParsing() {
        XCTAssertEqual(ReconnectPolicy.retryAfterMs("1"), 1_000)
        XCTAssertEqual(ReconnectPolicy.retryAfterMs(" 2 "), 2_000)
        XCTAssertNil(ReconnectPolicy.retryAfterMs(nil))
        XCTAssertNil(ReconnectPolicy.retryAfterMs("soon"))
        let now = Date(timeIntervalSince1970: 1_000_000)
        XCTAssertEqual(ReconnectPolicy.retryAfterMs("Mon, 12 Jan 1970 13:46:50 GMT", date: now), 10_000)
    }

    func testTokenExpiredEventRefreshesAndResumesAfterJitterOnly() {
        var p = streaming()
        XCTAssertEqual(p.eventReceived(seq: 5, event: .error(status: 401, code: "token_expired", message: ""), jitterMs: 40, now: 50),
                       .wait(until: 90))
        XCTAssertTrue(p.freshTokenNeeded)
        XCTAssertEqual(p.tick(now: 90), .reconnect(lastEventId: 5))
        p.freshTokenFetched()
        XCTAssertFalse(p.freshTokenNeeded)
        // The fresh token works: events flow; a later expiry is a new one.
        _ = p.responseOpened(status: 200, contentType: stream, now: 100)
        _ = p.eventReceived(seq: 6, event: .delta("y"), now: 100)
        XCTAssertEqual(p.eventReceived(seq: 6, event: .error(status: 401, code: "token_expired", message: ""), now: 200), .wait(until: 200))
        XCTAssertEqual(p.tick(now: 200), .reconnect(lastEventId: 6))
    }

    func testA401AfterTheFreshTokenFails() {
        var p = reconnecting()
        XCTAssertEqual(p.responseOpened(status: 401, contentType: nil, error: e(401, "unauthorized"), now: 1_000), .wait(until: 1_000))
        XCTAssertTrue(p.freshTokenNeeded)
        XCTAssertEqual(p.tick(now: 1_000), .reconnect(lastEventId: 5))
        p.freshTokenFetched()
        XCTAssertEqual(p.responseOpened(status: 401, contentType: nil, error: e(401, "token_expired"), now: 1_100),
                       .finish(.failed(status: 401, code: "token_expired", message: "token_expired")))
    }

    func testTokenRefreshCountsTowardTheThree() {
        var p = reconnecting()
        _ = p.connectionLost(now: 1_000)
        _ = p.tick(now: 2_000)
        XCTAssertEqual(p.responseOpened(status: 401, contentType: nil, error: e(401, "token_expired"), now: 2_000), .wait(until: 2_000))
        _ = p.tick(now: 2_000)
        XCTAssertEqual(p.connectionLost(now: 2_100), .finish(.needsResume))
    }

    func testSessionRevokedAndA401ToTheFirstRequestAreTerminal() {
        var p = streaming()
        XCTAssertEqual(p.eventReceived(seq: 5, event: .error(status: 401, code: "session_revoked", message: "m"), now: 0),
                       .finish(.failed(status: 401, code: "session_revoked", message: "m")))
        var q = reconnecting()
        XCTAssertEqual(q.responseOpened(status: 401, contentType: nil, error: e(401, "session_revoked"), now: 1_000),
                       .finish(.failed(status: 401, code: "session_revoked", message: "session_revoked")))
        var r = ReconnectPolicy()
        _ = r.start(now: 0)
        XCTAssertEqual(r.responseOpened(status: 401, contentType: nil, error: e(401, "token_expired"), now: 0),
                       .finish(.failed(status: 401, code: "token_expired", message: "token_expired")))
        var s = reconnecting()
        XCTAssertEqual(s.responseOpened(status: 429, contentType: nil, error: e(429, "rate_limited"), now: 1_000),
                       .finish(.failed(status: 429, code: "rate_limited", message: "rate_limited")))
    }

    func testHardTimeoutCountsOnlyForegroundConnectedTime() {
        var p = streaming()
        p.enterBackground(now: 10_000)
        XCTAssertEqual(p.tick(now: 100_000), .none, "90 s in the background do not count")
        XCTAssertEqual(p.enterForeground(now: 100_000), .none)
        XCTAssertEqual(p.tick(now: 149_999), .none, "10 s + 49.999 s")
        XCTAssertEqual(p.activeSinceLastEvent(now: 149_999), 59_999)
        XCTAssertEqual(p.tick(now: 150_000), .finish(.timedOut))
    }

    func testWaitingBetweenReconnectionsDoesNotCountTowardTheTimeout() {
        var p = streaming()
        _ = p.connectionLost(now: 50_000)           // 50 s connected
        XCTAssertEqual(p.tick(now: 59_000), .reconnect(lastEventId: 5))   // 9 s waiting (3 s would do; a long wait to show it)
        XCTAssertEqual(p.tick(now: 68_999), .none)   // 50 + 9.999 s connected
        XCTAssertEqual(p.tick(now: 69_000), .finish(.timedOut))
    }

    func testDropInTheBackgroundWaitsForTheForeground() {
        var p = streaming()
        p.enterBackground(now: 1_000)
        XCTAssertEqual(p.connectionLost(now: 2_000), .none)
        XCTAssertEqual(p.state, .suspended)
        XCTAssertEqual(p.tick(now: 200_000), .none)
        XCTAssertEqual(p.enterForeground(now: 290_000), .reconnect(lastEventId: 5), "within 5 min of the last event: at once")
        XCTAssertEqual(p.reconnections, 1)
    }

    func testWaitThatEndsInTheBackgroundWaitsForTheForeground() {
        var p = streaming()
        XCTAssertEqual(p.connectionLost(now: 0), .wait(until: 1_000))
        p.enterBackground(now: 500)
        XCTAssertEqual(p.tick(now: 1_000), .none)
        XCTAssertEqual(p.state, .suspended)
        XCTAssertEqual(p.enterForeground(now: 5_000), .reconnect(lastEventId: 5))
        XCTAssertEqual(p.state, .connecting(attempt: 1))
    }

    func testForegroundAfterFiveMinutesMakesOneLateResume() {
        var p = streaming()
        p.enterBackground(now: 0)
        _ = p.connectionLost(now: 1)
        XCTAssertEqual(p.enterForeground(now: 300_001), .reconnect(lastEventId: 5))
        XCTAssertTrue(p.lateResumed)
        XCTAssertEqual(p.responseOpened(status: 404, contentType: "application/json",
                                        error: APIError(status: 404, code: "stream_not_found", message: ""), now: 300_100),
                       .finish(.needsResume), "not retained: expired, not a failure")
    }

    func testALateResumeThatDropsRetriesWithoutTheIdleRule() {
        var p = streaming()
        p.enterBackground(now: 0)
        p.enterForeground(now: 600_000)   // still streaming: the drop is seen after the foreground
        XCTAssertEqual(p.connectionLost(now: 600_010), .reconnect(lastEventId: 5), "late resume at once")
        XCTAssertEqual(p.connectionLost(now: 600_020), .wait(until: 601_020), "the late resume's drop waits as usual")
        XCTAssertEqual(p.tick(now: 601_020), .reconnect(lastEventId: 5))
        XCTAssertEqual(p.responseOpened(status: 200, contentType: "text/event-stream", now: 601_100), .none)
        XCTAssertEqual(p.eventReceived(seq: 9, event: .delta("rest"), now: 601_200), .none)
        XCTAssertFalse(p.lateResumed)
    }

    func testAnAnswerSilentForFiveMinutesInTheForegroundStillNeedsResume() {
        // Never backgrounded since its last event: a running answer idle > 5 min.
        var p = streaming()
        XCTAssertEqual(p.connectionLost(now: 10), .wait(until: 1_010))
        XCTAssertEqual(p.tick(now: 300_001), .finish(.needsResume))
    }
}
