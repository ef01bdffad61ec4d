import Foundation
import RelayCore
import XCTest

/// `LenientJSON` (RFC 8259 with exact string escapes) and `SurrogateJoiner`.
final class LenientJSONTests: XCTestCase {
    private func parse(_ s: String) throws -> JSONValue { try LenientJSON.parse(s) }

    func testValuesOfEveryKind() throws {
        let v = try parse(#" {"a":[1,-2.5e3,true,false,null],"b":{"c":"d"},"e":"x\"\\\/\b\f\n\r\t\u00e9"} "#)
        XCTAssertEqual(v["a"], .array([.number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null]))
        XCTAssertEqual(v["b"]?["c"]?.stringValue, "d")
        XCTAssertEqual(v["e"]?.stringValue, "x\"\\/\u{08}\u{0C}\n\r\té")
        XCTAssertNil(v["missing"])
        XCTAssertEqual(try parse("12").intValue, 12)
        XCTAssertEqual(try parse("12.0").intValue, 12)
        XCTAssertEqual(try parse("1e3").intValue, 1000)
        XCTAssertNil(try parse("1.5").intValue)
        XCTAssertNil(try parse("1e400").intValue)
        XCTAssertEqual(try parse("\"\"").stringValue, "")
        XCTAssertEqual(try parse("[]"), .array([]))
        XCTAssertEqual(try parse("{}"), .object([]))
    }

    func testRepeatedNameReadsTheLast() throws {
        XCTAssertEqual(try parse(#"{"a":1,"a":2}"#)["a"]?.intValue, 2)
    }

    func testLoneSurrogateEscapesAreKeptAsUnits() throws {
        XCTAssertEqual(try parse(#""\ud83d""#).stringUnits?.units, [0xD83D])
        XCTAssertEqual(try parse(#""\uDE00x""#).stringUnits?.units, [0xDE00, 0x78])
        XCTAssertEqual(try parse(#""\ud83d\ude00""#).stringValue, "😀")
        XCTAssertEqual(try parse(#""a\ud83db""#).stringValue, "a\u{FFFD}b")
    }

    func testInvalidUTF8InStringsBecomesReplacementCharacters() throws {
        let bytes: [UInt8] = [0x22, 0x61, 0xFF, 0x62, 0xE2, 0x82, 0x22]  // "a<FF>b<E2 82>"
        XCTAssertEqual(try LenientJSON.parse(bytes).stringValue, "a\u{FFFD}b\u{FFFD}")
        let ok: [UInt8] = [0x22] + Array("مرحبا 👋🏽".utf8) + [0x22]
        XCTAssertEqual(try LenientJSON.parse(ok).stringValue, "مرحبا 👋🏽")
    }

    func testRejectsWhatRFC8259Rejects() {
        let bad = ["", " ", "{", "[1,]", "{\"a\"}", "{\"a\":}", "{a:1}", "01", "1.", ".5", "-", "1e", "+1",
                   "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"a\nb\"", "\"\u{0}\"",
                   "1 2", "[1 2]", "{\"a\":1,}", "'a'", "NaN", "[\"a\",]", "{\"a\":1 \"b\":2}"]
        for s in bad {
            XCTAssertThrowsError(try parse(s), "accepted \(s.debugDescription)")
        }
    }

    func testNestingIsBounded() throws {
        let ok = String(repeating: "[", count: LenientJSON.maxDepth) + String(repeating: "]", count: LenientJSON.maxDepth)
        XCTAssertNoThrow(try parse(ok))
        let deep = String(repeating: "[", count: 100_000)
        XCTAssertThrowsError(try parse(deep)) { XCTAssertTrue("\($0)".contains("nesting")) }
    }

    func testAgreesWithFoundationOnWellFormedDocuments() throws {
        let docs = [#"{"choices":[{"index":0,"delta":{"content":"Clause 3 — café"},"finish_reason":null}],"usage":null}"#,
                    #"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ملخّص 🇸🇦"}}"#,
                    #"[0,-7,1.25,"\u0041\u00e9\u4e2d\ud83d\ude00"]"#]
        for d in docs {
            let mine = try parse(d)
            let theirs = try JSONSerialization.jsonObject(with: Data(d.utf8), options: [.fragmentsAllowed])
            XCTAssertEqual(render(mine), render(foundation: theirs), d)
        }
    }

    private func render(_ v: JSONValue) -> String {
        switch v {
        case .null: return "null"
        case .bool(let b): return b ? "1.0" : "0.0"  // Foundation gives NSNumber for both
        case .number(let n): return "\(Double(n)!)"
        case .string(let s): return s.text.debugDescription
        case .array(let a): return "[" + a.map(render).joined(separator: ",") + "]"
        case .object(let m): return "{" + m.map { "\($0.name.text.debugDescription):\(render($0.value))" }.sorted().joined(separator: ",") + "}"
        }
    }

    private func render(foundation v: Any) -> String {
        switch v {
        case is NSNull: return "null"
        case let s as String: return s.debugDescription
        case let a as [Any]: return "[" + a.map { render(foundation: $0) }.joined(separator: ",") + "]"
        case let o as [String: Any]: return "{" + o.map { "\($0.key.debugDescription):\(render(foundation: $0.value))" }.sorted().joined(separator: ",") + "}"
        case let n as NSNumber:
            return "\(n.doubleValue)"
        default: return "?"
        }
    }
}

final class SurrogateJoinerTests: XCTestCase {
    func testEmojiSplitAcrossTwoPiecesIsJoined() {
        var j = SurrogateJoiner()
        XCTAssertEqual(j.append([0xD83D]), "")
        XCTAssertTrue(j.isHolding)
        XCTAssertEqual(j.append([0xDE00]), "😀")
        XCTAssertEqual(j.finish(), "")
        XCTAssertEqual(j.replacedHalves, 0)
    }

    func testSplitInsideText() {
        var j = SurrogateJoiner()
        XCTAssertEqual(j.append(Array("ab".utf16) + [0xD83D]), "ab")
        XCTAssertEqual(j.append([0xDC4B] + Array(" hi".utf16)), "👋 hi")
    }

    func testUnpairedHalvesBecomeReplacementCharacters() {
        var j = SurrogateJoiner()
        XCTAssertEqual(j.append([0xD83D]), "")
        XCTAssertEqual(j.append(Array("x".utf16)), "\u{FFFD}x")
        XCTAssertEqual(j.append([0xDE00, 0x61]), "\u{FFFD}a")
        XCTAssertEqual(j.append([0xD800, 0xD801, 0xDC00]), "\u{FFFD}𐐀")
        XCTAssertEqual(j.append([0xDBFF]), "")
        XCTAssertEqual(j.finish(), "\u{FFFD}")
        XCTAssertEqual(j.replacedHalves, 4)
        XCTAssertEqual(j.finish(), "")
    }

    /// Any split of any unit sequence gives the text of decoding it whole.
    func testSplitsEqualWholeDecoding() {
        var rng = SystemRandomNumberGenerator()
        let alphabet: [UInt16] = [0x41, 0xE9, 0x4E2D, 0xD83D, 0xDE00, 0xDBFF, 0xDC00, 0xFFFD, 0x0A]
        for _ in 0..<2_000 {
            let units = (0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            var j = SurrogateJoiner()
            var out = ""
            var rest = units[...]
            while !rest.isEmpty {
                let k = Int.random(in: 0...rest.count, using: &rng)
                out += j.append(Array(rest.prefix(k)))
                rest = rest.dropFirst(k)
            }
            out += j.finish()
            XCTAssertEqual(out, String(decoding: units, as: UTF16.self), "\(units)")
        }
    }
}
