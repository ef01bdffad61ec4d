import Foundation
import RelayTestKit
import XCTest
@testable import RelayCore

/// The one-pass delta JSON: `StreamEvent.json` copies content that
/// `JSONText.mayNeedEscaping` passes straight into the event, and escapes the rest.
/// Hostile content — every control character, DEL, `"`, `\`, `/`, `</script>`, NUL,
/// U+2028/U+2029, U+0085, other 0xE2-lead characters, 4-byte scalars, replacement
/// characters from invalid upstream bytes — must give valid one-line JSON that decodes
/// (Foundation's `JSONSerialization`) to the same text, byte-identical to an
/// independent RFC 8259 §7 escaper written here, whichever path wrote it.
final class DeltaJSONEscapingTests: XCTestCase {
    /// RFC 8259 §7 with the relay's extra rule (U+2028/U+2029 escaped for JS), written
    /// independently of `JSONText`.
    private static func referenceDelta(_ s: String) -> String {
        var out = #"{"type":"delta","content":""#
        for u in s.unicodeScalars {
            switch u.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x2028: out += "\\u2028"
            case 0x2029: out += "\\u2029"
            case 0..<0x20: out += String(format: "\\u%04x", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + #""}"#
    }

    private static let alphabet: [String] = {
        var a = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }
        a += ["\u{7F}", "\"", "\\", "/", "</script>", "a", "Z", " ", "0", "{", "}",
              "\u{2028}", "\u{2029}", "\u{0085}", "\u{2026}", "\u{20AC}", "\u{2019}", "\u{E2}",
              "\u{FEFF}", "\u{FFFD}", "😀", "👩‍💻", "عربي", "\u{0301}", "\u{10FFFF}"]
        // Invalid UTF-8 as an upstream would send it, decoded the way the relay decodes bytes.
        a.append(String(decoding: [0xE2, 0x80], as: UTF8.self))
        a.append(String(decoding: [0xED, 0xA0, 0x80], as: UTF8.self))   // a UTF-8 encoded lone surrogate
        a.append(String(decoding: [0xC0, 0xAF, 0xFF], as: UTF8.self))
        return a
    }()

    private static func check(_ s: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let json = StreamEvent.delta(s).json
        XCTAssertEqual(json, referenceDelta(s), "content \(Array(s.unicodeScalars.map(\.value)))", file: file, line: line)
        XCTAssertFalse(json.utf8.contains { $0 < 0x20 }, "no raw control byte", file: file, line: line)
        XCTAssertFalse(json.unicodeScalars.contains { $0 == "\u{2028}" || $0 == "\u{2029}" }, file: file, line: line)
        // Valid JSON for an independent parser. (swift-corelibs-foundation's drops a
        // U+FEFF right after an escape or at the start of an escaped string, so the
        // comparison leaves U+FEFF out: `testDecodingKeepsAByteOrderMarkAfterAnEscape`.)
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        XCTAssertEqual(object?["type"] as? String, "delta", file: file, line: line)
        let noBOM = { (t: String) in String(String.UnicodeScalarView(t.unicodeScalars.filter { $0 != "\u{FEFF}" })) }
        XCTAssertEqual((object?["content"] as? String).map(noBOM), noBOM(s), "decodes to the same text", file: file, line: line)
        XCTAssertEqual(try StreamEvent(json: json), .delta(s), "the kit's decoder gets the text back exactly", file: file, line: line)
    }

    /// The byte rule `mayNeedEscaping` implements eight bytes at a time, written here
    /// one byte at a time.
    private static func referenceMayNeedEscaping(_ b: [UInt8]) -> Bool {
        b.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0xE2 }
    }

    /// Every byte value at every position of buffers of 1 to 24 bytes (whole words, a
    /// word plus a tail, tails alone), among neighbours that sit next to the flagged
    /// values (0x1F/0x20, 0x21/0x23, 0x5B/0x5D, 0xE1/0xE3, 0x7F/0x80/0xFF, which a
    /// borrow in the word test could confuse), and random buffers: the word test says
    /// what the byte rule says.
    func testMayNeedEscapingAgreesWithTheByteRuleForEveryByteAtEveryPosition() {
        let fillers: [UInt8] = [0x61, 0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xE1, 0xE3, 0xFF]
        for length in 1...24 {
            for filler in fillers {
                var buf = [UInt8](repeating: filler, count: length)
                XCTAssertEqual(buf.withUnsafeBufferPointer(JSONText.mayNeedEscaping), Self.referenceMayNeedEscaping(buf))
                for at in 0..<length {
                    for v in 0...255 {
                        buf[at] = UInt8(v)
                        let got = buf.withUnsafeBufferPointer(JSONText.mayNeedEscaping)
                        if got != Self.referenceMayNeedEscaping(buf) {
                            XCTFail("length \(length), filler \(filler), byte \(v) at \(at): \(got)")
                            return
                        }
                    }
                    buf[at] = filler
                }
            }
        }
        var rng = SplitMix64(seed: 14)
        for _ in 0..<20_000 {
            let length = Int(rng.next() % 40)
            let buf = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next() % 7 == 0 ? rng.next() : 0x40 | rng.next() & 0x3F) }
            XCTAssertEqual(buf.withUnsafeBufferPointer(JSONText.mayNeedEscaping), Self.referenceMayNeedEscaping(buf), "\(buf)")
        }
        XCTAssertFalse(JSONText.mayNeedEscaping(UnsafeBufferPointer(start: nil, count: 0)))
    }

    func testEverySingleHostileCharacter() throws {
        for s in Self.alphabet + [""] { try Self.check(s) }
        for b in UInt8(0)...UInt8(0x7F) { try Self.check("x" + String(UnicodeScalar(b)) + "y") }
    }

    /// A U+FEFF (zero width no-break space) right after an escaped character, or first
    /// in a content that holds an escape, is part of the text: the client kit's decoder
    /// (`StreamEvent(json:)`, used by `RelayStream`, `ResponseRenderer` and the `chat`
    /// command) must keep it. Foundation's `JSONSerialization` on Linux drops it.
    func testDecodingKeepsAByteOrderMarkAfterAnEscape() throws {
        for s in ["line\n\u{FEFF}next", "\u{FEFF}\n", "\"\u{FEFF}\"", "tab\t\u{FEFF}\u{FEFF}x", "\u{FEFF}plain"] {
            XCTAssertEqual(try StreamEvent(json: StreamEvent.delta(s).json), .delta(s), "content \(s.unicodeScalars.map(\.value))")
        }
        let done = StreamEvent.error(status: 502, code: "upstream_error", message: "bad\n\u{FEFF}gateway")
        XCTAssertEqual(try StreamEvent(json: done.json), done)
    }

    /// 3,000 random strings of 0–40 pieces (seeded, reproducible), a third of them
    /// needing no escaping (the one-pass path), the rest mixing hostile pieces in.
    func testRandomHostileContentMatchesTheReferenceEscaper() throws {
        var rng = SplitMix64(seed: 0x5EED_DE17A)
        let plain = ["a", "Z", " ", "…", "€", "😀", "عربي", "</script>", "/", "\u{7F}", "\u{0085}", "\u{FFFD}"]
        for round in 0..<3_000 {
            let pieces = round % 3 == 0 ? plain : Self.alphabet
            var s = ""
            for _ in 0..<Int(rng.next() % 41) { s += pieces[Int(rng.next() % UInt64(pieces.count))] }
            try Self.check(s)
        }
    }

    /// Content that is not native contiguous UTF-8 (a `String` bridged from `NSString`,
    /// a substring's copy) takes the same paths with the same result.
    func testBridgedAndSlicedContent() throws {
        let base = "head \u{2028} \"q\" </script> tail 😀"
        try Self.check(String(NSString(string: base)))
        try Self.check(String(NSString(string: "plain text only")))
        try Self.check(String(base.dropFirst(3).dropLast(2)))
    }

    /// Bytes biased to the rule's edges and to borrow-prone neighbours.
    private static let edgy: [UInt8] = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80,
                                        0x81, 0x9F, 0xA0, 0xA1, 0xA2, 0xDD, 0xE1, 0xE2, 0xE3, 0xFE, 0xFF, 0x41]

    /// `mayNeedEscaping` on unaligned slices of a larger buffer (word-at-a-time reads
    /// that start and end mid-word) agrees with the byte rule.
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
            let got = JSONText.mayNeedEscaping(b), want = Self.referenceMayNeedEscaping(Array(b))
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
}
