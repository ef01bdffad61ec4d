import RelayHTTP
import RelayTestKit
import XCTest

/// `ReconnectionTime`: the per-connection `retry:` spread (WHATWG HTML §9.2.6).
final class ReconnectionTimeTests: XCTestCase {
    func testEveryValueLiesWithinFiftyPercentOfOneSecondAndTheEndsAreReached() {
        XCTAssertEqual(ReconnectionTime.milliseconds(random: 0), 500, "the lowest random value gives the window's start")
        XCTAssertEqual(ReconnectionTime.milliseconds(random: 1000), 1500, "the window's end is reachable (inclusive)")
        XCTAssertEqual(ReconnectionTime.milliseconds(random: 1001), 500, "and wraps")
        var rng = SplitMix64(seed: 42)
        for _ in 0..<10_000 {
            XCTAssertTrue((500...1500).contains(ReconnectionTime.milliseconds(random: rng.next())))
        }
    }

    /// A crowd of 10,000 connections told to come back is spread over the window: every tenth
    /// of it gets between 8 % and 12 % of the crowd (uniform: 10 %), not one instant.
    func testACrowdIsSpreadEvenlyOverTheWindow() {
        var rng = SplitMix64(seed: 7)
        var buckets = [Int](repeating: 0, count: 10)
        for _ in 0..<10_000 {
            let ms = ReconnectionTime.milliseconds(random: rng.next())
            buckets[min(9, (ms - 500) / 100)] += 1
        }
        for (i, n) in buckets.enumerated() {
            XCTAssertTrue((800...1200).contains(n), "bucket \(i): \(n) of 10,000")
        }
    }

    func testOtherWindowsAndNoSpread() {
        XCTAssertEqual(ReconnectionTime.milliseconds(random: 12345, baseMs: 3000, spreadPercent: 0), 3000)
        XCTAssertEqual(ReconnectionTime.milliseconds(random: 0, baseMs: 2000, spreadPercent: 10), 1800)
        XCTAssertEqual(ReconnectionTime.milliseconds(random: 400, baseMs: 2000, spreadPercent: 10), 2200)
    }
}
