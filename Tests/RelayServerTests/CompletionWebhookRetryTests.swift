import XCTest
import RelayTestKit
@testable import RelayServer

/// `CompletionWebhookRetry`: what an attempt's answer means, the backoff and its bound.
final class CompletionWebhookRetryTests: XCTestCase {
    let retry = CompletionWebhookRetry(maxAttempts: 5, baseMs: 1_000, capMs: 6_000)

    func testAny2xxIsADelivery() {
        for status in [200, 201, 202, 204, 299] {
            XCTAssertEqual(retry.next(afterAttempt: 1, .answered(status: status), random: 0), .delivered, "\(status)")
        }
    }

    func testGoneDropsAtOnceWhateverTheAttempt() {
        XCTAssertEqual(retry.next(afterAttempt: 1, .answered(status: 410), random: 0), .drop(.gone))
    }

    func testOtherStatusesAndNoAnswerAreRetriedUntilTheLastAttempt() {
        let failures: [CompletionWebhookRetry.Attempt] = [.answered(status: 500), .answered(status: 404), .answered(status: 301),
                                                           .answered(status: 429), .noAnswer(reason: "curl 28: timeout")]
        for f in failures {
            for attempt in 1..<5 {
                guard case .retry = retry.next(afterAttempt: attempt, f, random: 0) else {
                    return XCTFail("\(f) on attempt \(attempt) is retried")
                }
            }
            XCTAssertEqual(retry.next(afterAttempt: 5, f, random: 0), .drop(.exhausted), "\(f) after the last attempt")
        }
    }

    func testBackoffDoublesWithEqualJitterAndStopsAtTheCap() {
        var rng = SplitMix64(seed: 7)
        for (n, nominal) in [(1, 1_000), (2, 2_000), (3, 4_000), (4, 6_000), (5, 6_000), (40, 6_000)] {
            XCTAssertEqual(retry.backoffMs(retry: n, random: 0), nominal / 2, "retry \(n): shortest")
            XCTAssertEqual(retry.backoffMs(retry: n, random: UInt64(nominal - nominal / 2)), nominal, "retry \(n): longest")
            for _ in 0..<200 {
                let d = retry.backoffMs(retry: n, random: rng.next())
                XCTAssertTrue((nominal / 2...nominal).contains(d), "retry \(n): \(d) within [\(nominal / 2), \(nominal)]")
            }
        }
    }

    func testARetryScheduleOverAVirtualClockStaysWithinItsBound() {
        // Attempts of one message against a receiver that always fails: the total wait is
        // bounded by the sum of the nominal delays, and the message ends dropped.
        let clock = VirtualClock(startMs: 0)
        var rng = SplitMix64(seed: 11)
        var attempt = 1
        var waits: [Int] = []
        while case .retry(let ms) = retry.next(afterAttempt: attempt, .answered(status: 503), random: rng.next()) {
            waits.append(ms)
            clock.advance(by: Int64(ms))
            attempt += 1
        }
        XCTAssertEqual(attempt, 5, "five attempts, then dropped")
        XCTAssertEqual(waits.count, 4)
        XCTAssertLessThanOrEqual(clock.nowMs(), 1_000 + 2_000 + 4_000 + 6_000)
        XCTAssertGreaterThanOrEqual(clock.nowMs(), (1_000 + 2_000 + 4_000 + 6_000) / 2)
    }

    func testHugeBasesDoNotOverflow() {
        let r = CompletionWebhookRetry(maxAttempts: 100, baseMs: 600_000)
        XCTAssertEqual(r.backoffMs(retry: 99, random: 0), CompletionWebhookRetry.defaultCapMs / 2)
    }
}
