import XCTest
@testable import RelayUpstream

/// `BenchUpstream.content`: the load generator parses `t=<µs>;n=<k>;` from every bench
/// delta, padded with `x` to `tokenBytes`.
final class BenchUpstreamContentTests: XCTestCase {
    /// The format spelled out independently (interpolation), for comparison.
    private func reference(_ micros: UInt64, _ k: Int) -> String {
        var s = "t=\(micros);n=\(k);"
        if s.utf8.count < BenchUpstream.tokenBytes { s += String(repeating: "x", count: BenchUpstream.tokenBytes - s.utf8.count) }
        return s
    }

    func testMatchesTheDocumentedFormat() {
        XCTAssertEqual(BenchUpstream.content(micros: 1_733_000_000_123_456, k: 7), "t=1733000000123456;n=7;xxxxxxxxx")
        XCTAssertEqual(BenchUpstream.content(micros: 1_733_000_000_123_456, k: 7).utf8.count, BenchUpstream.tokenBytes)
    }

    func testEdgesAndLongValues() {
        for (m, k) in [(UInt64(0), 0), (9, 9), (10, 10), (1_733_000_000_123_456, 1_000_000), (UInt64.max, Int.max)] {
            XCTAssertEqual(BenchUpstream.content(micros: m, k: k), reference(m, k), "micros \(m) k \(k)")
        }
        XCTAssertGreaterThan(BenchUpstream.content(micros: .max, k: .max).utf8.count, BenchUpstream.tokenBytes, "never truncated")
    }
}
