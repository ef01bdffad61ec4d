import RelayCore
import RelayTestKit
import XCTest
@testable import RelayHTTP

final class RetryAfterTests: XCTestCase {
    func testEvery503AndTooManyStreamsCarryItButNotAnExhaustedBudget() {
        XCTAssertTrue(RetryAfter.applies(status: 503, code: .notReady))
        XCTAssertTrue(RetryAfter.applies(status: 503, code: .tooManyPendingRequests))
        XCTAssertTrue(RetryAfter.applies(status: 503, code: .redisUnavailable))
        XCTAssertTrue(RetryAfter.applies(status: 429, code: .tooManyStreams))
        XCTAssertFalse(RetryAfter.applies(status: 429, code: .tokenBudgetExhausted), "the budget returns next month")
        XCTAssertFalse(RetryAfter.applies(status: 408, code: .requestTimeout))
        XCTAssertFalse(RetryAfter.applies(status: 500, code: .internalError))
    }

    /// Whole seconds (RFC 9110 §10.2.3) within 1–3, every value drawn, none favoured much.
    func testDelaysAreWholeSecondsSpreadOverTheWindow() {
        var random = SplitMix64(seed: 42)
        var counts: [Int: Int] = [:]
        let n = 3_000
        for _ in 0..<n {
            let v = RetryAfter.overload.headerValue(using: &random)
            XCTAssertNotNil(Int(v), "delay-seconds is digits only: \(v)")
            counts[Int(v) ?? -1, default: 0] += 1
        }
        XCTAssertEqual(Set(counts.keys), [1, 2, 3])
        for (v, c) in counts {
            XCTAssertGreaterThan(c, n / 3 - n / 10, "value \(v) drawn \(c) times of \(n)")
            XCTAssertLessThan(c, n / 3 + n / 10, "value \(v) drawn \(c) times of \(n)")
        }
    }

    /// The same random source gives the same delays (the draw is the caller's source, nothing else).
    func testTheDrawComesOnlyFromTheInjectedSource() {
        var a = SplitMix64(seed: 7)
        var b = SplitMix64(seed: 7)
        let w = RetryAfter(minSeconds: 2, maxSeconds: 9)
        XCTAssertEqual((0..<50).map { _ in w.seconds(using: &a) }, (0..<50).map { _ in w.seconds(using: &b) })
    }

    func testTheWindowIsClampedToAtLeastOneSecond() {
        var random = SplitMix64(seed: 1)
        let w = RetryAfter(minSeconds: 0, maxSeconds: -4)
        XCTAssertEqual(w.minSeconds, 1)
        XCTAssertEqual(w.maxSeconds, 1)
        XCTAssertEqual(w.seconds(using: &random), 1)
    }
}
