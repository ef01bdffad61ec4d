import XCTest
import RelayCore
@testable import RelayClient

final class ReconnectPolicyTests: XCTestCase {
    let delta = StreamEvent.delta("x")
    let done = StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: 2))

    /// A policy that is streaming at t = 0 after event 5.
    func streaming(backoff: Int64 = 1_000) -> ReconnectPolicy {
        var p = ReconnectPolicy(backoffMs: backoff)
        XCTAssertEqual(p.start(now: 0), .sendRequest)
        XCTAssertEqual(p.responseOpened(status: 200, contentType: "text/event-stream", now: 0), .none)
        XCTAssertEqual(p.eventReceived(seq: 5, event: delta, now: 0), .none)
        return p
    }

    func testFirstDropWaitsAFullJitterThenResumesFromLastEventID() {
        var p = streaming()
        XCTAssertEqual(p.connectionLost(random: 0.5, now: 100), .wait(until: 600), "floor(0.5 × 1001) = 500 ms")
        XCTAssertEqual(p.nextDeadline, 600)
        XCTAssertEqual(p.tick(now: 599), .none)
        XCTAssertEqual(p.tick(now: 600), .reconnect(lastEventId: 5))
        XCTAssertEqual(p.state, .connecting(attempt: 1))
        XCTAssertEqual(p.reconnections, 1)
    }

    func testTheFullJitterSpansTheWholeBackoff() {
        for (r, wait) in [(0.0, Int64(0)), (0.5, 500), (0.999, 999), (1.0.nextDown, 1_000)] {
            var p = streaming()
            XCTAssertEqual(p.connectionLost(random: r, now: 0), .wait(until: wait), "r = \(r)")
        }
        XCTAssertEqual(ReconnectPolicy.dropWaitMs(backoffMs: 1_000, reconnectionsInARow: 0, random: 1), 1_000, "clamped below 1")
        XCTAssertEqual(ReconnectPolicy.dropWaitMs(backoffMs: 1_000, reconnectionsInARow: 0, random: -3), 0)
        XCTAssertEqual(ReconnectPolicy.dropWaitMs(backoffMs: 1_000, reconnectionsInARow: 0, random: .nan), 0)
        XCTAssertEqual(ReconnectPolicy.jitterMs(random: .infinity), 0)
        XCTAssertEqual(ReconnectPolicy.jitterMs(random: 7), 250)
    }

    func testACrowdDroppedAtOneInstantSpreadsOverTheWholeBackoff() {
        var perTenth = [Int](repeating: 0, count: 10)
        for i in 0..<1_000 {
            var p = streaming()
            guard case .wait(let until) = p.connectionLost(random: (Double(i) + 0.5) / 1_000, now: 0) else {
                return XCTFail("a drop waits")
            }
            perTenth[min(9, Int(until / 100))] += 1
        }
        XCTAssertTrue(perTenth.allSatisfy { (99...101).contains($0) }, "each 100 ms of the backoff holds a tenth: \(perTenth)")
    }

    func testSlowRTTSpreadsTheFirstWaitOverThreeSeconds() {
        var p = streaming(backoff: NetworkAdvice(NetworkConditions(rttMs: 800)).reconnectBackoffMs)
        XCTAssertEqual(p.connectionLost(random: 0.999, now: 0), .wait(until: 2_997))
        XCTAssertEqual(p.tick(now: 2_997), .reconnect(lastEventId: 5))
        XCTAssertEqual(p.connectionLost(random: 0.999, now: 3_000), .wait(until: 6_250), "the second: 3 s + 250 ms")
    }

    func testThreeFailedReconnectionsThenNeedsResume() {
        var p = streaming()
        var now: Int64 = 0
        for (attempt, wait) in [(1, Int64(0)), (2, 1_000), (3, 1_000)] {
            XCTAssertEqual(p.connectionLost(now: now), .wait(until: now + wait),
                           "r = 0: the first at once, the 2nd and 3rd after the backoff")
            now += 1_000
            XCTAssertEqual(p.tick(now: now), .reconnect(lastEventId: 5), "attempt \(attempt)")
        }
        XCTAssertEqual(p.connectionLost(now: now), .finish(.needsResume))
        XCTAssertEqual(p.state, .ended(.needsResume))
        XCTAssertEqual(p.reconnections, 3)
    }

    func testAnEventResetsTheAttemptCount() {
        var p = streaming()
        var now: Int64 = 0
        for i in 0..<10 {
            XCTAssertEqual(p.connectionLost(random: 0.5, now: now), .wait(until: now + 500),
                           "after an event the streak starts again: the full jitter")
            now += 1_000
            XCTAssertEqual(p.tick(now: now), .reconnect(lastEventId: 5 + UInt64(i)))
            _ = p.responseOpened(status: 200, contentType: "text/event-stream", now: now)
            _ = p.eventReceived(seq: 6 + UInt64(i), event: delta, now: now)
        }
        XCTAssertEqual(p.state, .streaming)
        XCTAssertEqual(p.reconnections, 10)
    }

    func testManualResumeResendsTheWholeRequest() {
        var p = streaming()
        var now: Int64 = 0
        for _ in 1...3 { _ = p.connectionLost(now: now); now += 1_000; _ = p.tick(now: now) }
        _ = p.connectionLost(now: now)
        XCTAssertEqual(p.resume(now: now), .sendRequest)
        XCTAssertEqual(p.lastEventId, 0)
        XCTAssertEqual(p.state, .connecting(attempt: 0))
        XCTAssertEqual(p.reconnections, 4)
    }

    func testNoResumeAfterFiveIdleMinutes() {
        var p = streaming()
        // The app was suspended: the drop is noticed 5 min + 1 ms after the last event.
        XCTAssertEqual(p.connectionLost(now: 300_001), .finish(.needsResume))
        var q = streaming()
        XCTAssertEqual(q.connectionLost(random: 0.5, now: 1_000), .wait(until: 1_500))
        XCTAssertEqual(q.tick(now: 300_001), .finish(.needsResume), "suspended while waiting")
    }

    func testHardTimeoutWithoutDone() {
        var p = streaming()
        XCTAssertEqual(p.nextDeadline, 60_000)
        XCTAssertEqual(p.tick(now: 59_999), .none)
        _ = p.eventReceived(seq: 6, event: delta, now: 30_000)
        XCTAssertEqual(p.tick(now: 89_999), .none, "each event restarts the 60 s")
        XCTAssertEqual(p.tick(now: 90_000), .finish(.timedOut))
        XCTAssertTrue(Completion.timedOut.offersRetry)
        XCTAssertEqual(p.resume(now: 90_001), .sendRequest)
    }

    func testHardTimeoutAppliesBeforeTheFirstEvent() {
        var p = ReconnectPolicy()
        _ = p.start(now: 0)
        XCTAssertEqual(p.tick(now: 60_000), .finish(.timedOut))
    }

    func testDoneAndErrorAreTerminal() {
        var p = streaming()
        XCTAssertEqual(p.eventReceived(seq: 6, event: done, now: 1), .finish(.finished(finishReason: "stop")))
        XCTAssertEqual(p.connectionLost(now: 2), .none)
        XCTAssertEqual(p.tick(now: 100_000), .none)
        var q = streaming()
        let err = StreamEvent.error(status: 401, code: "session_revoked", message: "revoked")
        XCTAssertEqual(q.eventReceived(seq: 6, event: err, now: 1), .finish(.failed(status: 401, code: "session_revoked", message: "revoked")))
        XCTAssertEqual(q.connectionLost(now: 2), .none, "a revoked session is not a reconnect loop")
        XCTAssertEqual(q.resume(now: 3), .none)
    }

    func testCancelledDoneIsAStop() {
        var p = streaming()
        let cancelled = StreamEvent.done(finishReason: "cancelled", usage: Usage(promptTokens: 0, completionTokens: 0))
        XCTAssertEqual(p.eventReceived(seq: 6, event: cancelled, now: 1), .finish(.stopped))
    }

    func testNon200FailsWithoutReconnect() {
        var p = ReconnectPolicy()
        _ = p.start(now: 0)
        let e = APIError(status: 429, code: "token_budget_exhausted", message: "no tokens left")
        XCTAssertEqual(p.responseOpened(status: 429, contentType: "application/json", error: e, now: 1),
                       .finish(.failed(status: 429, code: "token_budget_exhausted", message: "no tokens left")))
        XCTAssertEqual(p.connectionLost(now: 2), .none)
    }

    func testWrongContentTypeFailsWithoutReconnect() {
        var p = ReconnectPolicy()
        _ = p.start(now: 0)
        guard case .finish(.failed(200, "bad_content_type", _)) = p.responseOpened(status: 200, contentType: "text/html", now: 1) else {
            return XCTFail("expected a failure")
        }
        XCTAssertEqual(p.connectionLost(now: 2), .none)
    }

    func testContentTypeParametersAndCase() {
        XCTAssertTrue(ReconnectPolicy.isEventStream("text/event-stream"))
        XCTAssertTrue(ReconnectPolicy.isEventStream("Text/Event-Stream; charset=utf-8"))
        XCTAssertFalse(ReconnectPolicy.isEventStream("text/event-streamx"))
        XCTAssertFalse(ReconnectPolicy.isEventStream(nil))
    }

    func testUserStopIsNeverANetworkFailure() {
        var p = streaming()
        XCTAssertEqual(p.stop(), .stop)
        XCTAssertEqual(p.state, .ended(.stopped))
        XCTAssertEqual(p.connectionLost(now: 1), .none, "the cancelled connection's error is ignored")
        XCTAssertEqual(p.tick(now: 100_000), .none)
        XCTAssertEqual(p.stop(), .none)
        XCTAssertEqual(p.resume(now: 2), .none)
    }

    func testStopWhileWaitingToReconnect() {
        var p = streaming()
        _ = p.connectionLost(now: 0)
        XCTAssertEqual(p.stop(), .stop)
        XCTAssertEqual(p.tick(now: 5_000), .none, "no reconnection after stop")
    }

    func testEventsBeforeHeadersOrAfterEndAreIgnored() {
        var p = ReconnectPolicy()
        XCTAssertEqual(p.eventReceived(seq: 1, event: delta, now: 0), .none)
        XCTAssertEqual(p.connectionLost(now: 0), .none)
        XCTAssertEqual(p.lastEventId, 0)
        XCTAssertEqual(p.start(now: 0), .sendRequest)
        XCTAssertEqual(p.start(now: 0), .none)
    }
}
