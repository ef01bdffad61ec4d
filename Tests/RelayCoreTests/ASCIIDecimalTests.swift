import Foundation
import RelayTestKit
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

    /// `digits` and `write` at every power of ten (and its neighbours) and on random
    /// values: the text of `String(v)`, with no byte written before or after it.
    func testWriteTouchesOnlyItsDigitsAtEveryPowerOfTen() {
        var vs: [UInt64] = [0, UInt64.max, UInt64.max - 1, 1 << 63, (1 << 63) - 1]
        var p: UInt64 = 1
        for _ in 0..<20 { vs += [p &- 1, p, p &+ 1, p &* 5]; p &*= 10 }
        var rng = SplitMix64(seed: 10)
        for _ in 0..<100_000 { vs.append(rng.next() >> (rng.next() % 64)) }
        let out = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 1)
        defer { out.deallocate() }
        for v in vs {
            let d = ASCIIDecimal.digits(v)
            XCTAssertEqual(d, String(v).count, "\(v)")
            memset(out, 0x2A, 32)
            ASCIIDecimal.write(v, digits: d, to: out + 1)
            let b = UnsafeRawBufferPointer(start: out, count: 32)
            XCTAssertEqual(String(decoding: b[1..<(1 + d)], as: UTF8.self), String(v))
            XCTAssertEqual(b[0], 0x2A, "no write before")
            XCTAssertEqual(b[1 + d], 0x2A, "no write after \(v)")
        }
    }
}
