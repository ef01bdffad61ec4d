import XCTest
@testable import RelayCore

/// `ASCIIDecimal` writes RESP lengths and SSE ids in place: every digit count boundary
/// up to `UInt64.max` gives the same text as `String(v)`.
final class ASCIIDecimalTests: XCTestCase {
    func testDigitsAndTextMatchStringAtEveryPowerOfTen() {
        var values: [UInt64] = [0, 1, 9, UInt64.max, UInt64.max - 1]
        var p: UInt64 = 10
        for _ in 1...19 {
            values += [p - 1, p, p + 1]
            if p > UInt64.max / 10 { break }
            p *= 10
        }
        for v in values {
            let n = ASCIIDecimal.digits(v)
            XCTAssertEqual(n, String(v).count, "digits(\(v))")
            var bytes = [UInt8](repeating: 0, count: n)
            bytes.withUnsafeMutableBytes { ASCIIDecimal.write(v, digits: n, to: $0.baseAddress!) }
            XCTAssertEqual(String(decoding: bytes, as: UTF8.self), String(v))
        }
    }

    /// Every value below 100,000 (odd and even digit counts, each pair of the table) and
    /// 100,000 random ones across the whole range.
    func testTextMatchesStringForSmallAndRandomValues() {
        var rng = SystemRandomNumberGenerator()
        let values = Array(UInt64(0)..<100_000) + (0..<100_000).map { _ in rng.next() >> (rng.next() % 64) }
        var bytes = [UInt8](repeating: 0, count: 20)
        for v in values {
            let n = ASCIIDecimal.digits(v)
            bytes.withUnsafeMutableBytes { ASCIIDecimal.write(v, digits: n, to: $0.baseAddress!) }
            let text = String(decoding: bytes[..<n], as: UTF8.self)
            if text != String(v) { return XCTFail("\(v) written as \(text)") }
        }
    }
}
