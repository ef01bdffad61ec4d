import Foundation
import XCTest
@testable import RelayCore
import RelayTestKit

/// Red team (issue 14, session 8): the word-at-a-time escaping test on unaligned slices
/// of a larger buffer, the delta JSON decoded back, `WireFrame` against a string-built
/// reference at the chunk-size hex boundaries, `ASCIIDecimal` at every power of ten.
final class RedTeam2CoreTests: XCTestCase {
    private static func reference(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        b.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0xE2 }
    }

    /// Bytes biased to the rule's edges and to borrow-prone neighbours.
    private static let edgy: [UInt8] = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80,
                                        0x81, 0x9F, 0xA0, 0xA1, 0xA2, 0xDD, 0xE1, 0xE2, 0xE3, 0xFE, 0xFF, 0x41]

    func testMayNeedEscapingOnUnalignedSlicesOfALargerBuffer() {
        var rng = SplitMix64(seed: 0xA11_9E0)
        let big = UnsafeMutablePointer<UInt8>.allocate(capacity: 512)
        defer { big.deallocate() }
        for _ in 0..<200_000 {
            for i in 0..<96 {
                let r = rng.next()
                // Mostly "safe" bytes with rare edge bytes, so a wrong false shows up.
                big[i] = r % 5 == 0 ? Self.edgy[Int((r >> 8) % UInt64(Self.edgy.count))]
                                    : (r % 7 == 0 ? UInt8(truncatingIfNeeded: r >> 16) : UInt8(0x23 + (r >> 24) % 0x39))
            }
            let off = Int(rng.next() % 17), len = Int(rng.next() % 70)
            let b = UnsafeBufferPointer(start: big + off, count: len)
            let got = JSONText.mayNeedEscaping(b), want = Self.reference(b)
            if got != want {
                XCTFail("off \(off) len \(len): \(Array(b)) got \(got)")
                return
            }
        }
    }

    /// One "bad" byte anywhere in an otherwise clean word, every clean filler byte value
    /// (all 256 × the bad ones), at each of the 8 lanes, at an odd base address.
    func testEveryFillerWithOneBadByteInEachLane() {
        let bad: [UInt8] = Array(0..<0x20) + [0x22, 0x5C, 0xE2]
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 32)
        defer { p.deallocate() }
        for filler in 0...255 {
            let f = UInt8(filler)
            if bad.contains(f) { continue }
            for lane in 0..<8 {
                for x in bad {
                    for i in 0..<32 { p[i] = f }
                    p[3 + lane] = x
                    XCTAssertTrue(JSONText.mayNeedEscaping(UnsafeBufferPointer(start: p + 3, count: 8)), "\(f) \(lane) \(x)")
                    XCTAssertTrue(JSONText.mayNeedEscaping(UnsafeBufferPointer(start: p + 3, count: 16)))
                }
            }
            XCTAssertFalse(JSONText.mayNeedEscaping(UnsafeBufferPointer(start: p + 3, count: 0)))
            for i in 0..<32 { p[i] = f }
            XCTAssertFalse(JSONText.mayNeedEscaping(UnsafeBufferPointer(start: p + 1, count: 29)), "\(f)")
        }
    }

    /// Random Unicode deltas: the event JSON is one line without raw control characters,
    /// quotes or U+2028/2029 inside the string, and decodes back to the content.
    func testDeltaJSONRoundTripsAndStaysOneSafeLine() throws {
        var rng = SplitMix64(seed: 0xDE17A)
        let scalars: [Unicode.Scalar] = ["a", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1F}", "\u{7F}", "\u{2028}", "\u{2029}",
                                         "\u{2027}", "\u{202A}", "\u{20AC}", "\u{2000}", "é", "\u{FEFF}", "👩", "ب", "/"]
        for _ in 0..<20_000 {
            var s = String.UnicodeScalarView()
            for _ in 0..<Int(rng.next() % 40) { s.append(scalars[Int(rng.next() % UInt64(scalars.count))]) }
            let content = String(s)
            let json = StreamEvent.delta(content).json
            let bytes = Array(json.utf8)
            XCTAssertFalse(bytes.contains { $0 < 0x20 }, "raw control in \(json.debugDescription)")
            XCTAssertFalse(json.unicodeScalars.contains { $0 == "\u{2028}" || $0 == "\u{2029}" })
            guard case .delta(let back) = try StreamEvent(json: json) else { return XCTFail("not a delta") }
            XCTAssertEqual(Array(back.unicodeScalars), Array(content.unicodeScalars), json.debugDescription)
        }
    }

    /// `WireFrame.event` against a string-built chunk, for data lengths around each hex
    /// digit boundary and seqs at every power of ten; `==` and `bytes` consistent.
    func testWireFrameMatchesAStringBuiltChunkAtHexBoundaries() {
        var lengths: [Int] = []
        for b in [0xF, 0xFF, 0xFFF, 0xFFFF] { lengths += [b - 1, b, b + 1, b + 2] }
        var seqs: [UInt64] = [0, UInt64.max, UInt64.max - 1]
        var p: UInt64 = 1
        for _ in 0..<19 { seqs += [p - 1, p, p + 1]; p &*= 10 }
        for seq in seqs {
            let fixed = "id: \(seq)\ndata: ".utf8.count + 2
            // The 64 KiB lengths for one seq only (debug-build comparisons of 64 KiB arrays are slow).
            for L in lengths where L > fixed && (L < 0xFFF0 || seq == 0) {
                let json = String(repeating: "x", count: L - fixed)
                let f = WireFrame.event(seq: seq, json: json)
                let sse = "id: \(seq)\ndata: \(json)\n\n"
                XCTAssertEqual(sse.utf8.count, L)
                let want = Array((String(L, radix: 16) + "\r\n" + sse + "\r\n").utf8)
                XCTAssertEqual(f.bytes, want, "seq \(seq) L \(L)")
                XCTAssertEqual(f.count, want.count)
                XCTAssertEqual(Array(f.bytes[f.body]), Array(sse.utf8))
                XCTAssertEqual(f, WireFrame(text: sse))
                XCTAssertNotEqual(f, WireFrame(text: sse.replacingOccurrences(of: "data", with: "datA")))
                f.withUnsafeBytes { XCTAssertEqual(Array($0), want) }
            }
        }
    }

    func testASCIIDecimalAtEveryPowerOfTen() {
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
