import RelayCore
import RelayRedis
import RelayTestKit
import XCTest
import RelayEventStore

/// `RESPCommand` fuzzed: random commands of odd arguments written one
/// after another into one small reused buffer match an independent RESP encoding of the
/// same arguments byte for byte (a bulk length is the UTF-8 byte count, never a
/// character count), read back (`arguments()`) as the same strings, and come out of
/// `encoded` (what the cluster path resends) exactly, binary arguments included.
final class RESPCommandFuzzTests: XCTestCase {
    /// Pieces whose UTF-8 length differs from their character count, RESP and SSE
    /// markers, line and paragraph separators, NUL, noncharacters, the last scalar.
    private static let pieces = ["a", "é", "e\u{301}", "م", "َ", "مَرْحَبًا", "👩‍👩‍👧‍👦", "🇸🇦", "\u{2028}", "\u{2029}",
                                 "\u{0}", "\r", "\n", "\r\n", "$", "*", "$3\r\n", "*2\r\n", "\u{FFFF}", "\u{10FFFF}",
                                 "\\", "\"", "\t", " ", "-0", "#", String(repeating: "x", count: 700)]

    /// Integers around every decimal-length boundary, and the extremes.
    private static func integer(_ rng: inout SplitMix64) -> UInt64 {
        switch rng.next() % 4 {
        case 0: return [0, 1, 9, 10, UInt64.max, UInt64.max - 1, 9_999_999_999_999_999_999, 10_000_000_000_000_000_000][Int(rng.next() % 8)]
        case 1:
            var p: UInt64 = 1
            for _ in 0..<(rng.next() % 19) { p *= 10 }
            return rng.next() % 2 == 0 ? p : p - 1
        case 2: return rng.next() % 1000
        default: return rng.next()
        }
    }

    private static func string(_ rng: inout SplitMix64) -> String {
        (0..<Int(rng.next() % 12)).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }.joined()
    }

    /// The reference: `*<n>\r\n` then `$<UTF-8 byte count>\r\n<bytes>\r\n` per argument
    /// ("Redis serialization protocol specification", bulk strings).
    private static func reference(_ args: [[UInt8]]) -> [UInt8] {
        var out = Array("*\(args.count)\r\n".utf8)
        for a in args { out += Array("$\(a.count)\r\n".utf8) + a + [13, 10] }
        return out
    }

    func testRandomCommandsMatchTheReferenceEncodingAndReadBack() {
        var rng = SplitMix64(seed: 0x5EED_0014)
        let c = RESPCommand(capacity: 64)
        for round in 0..<3000 {
            let n = 1 + Int(rng.next() % 10)
            var expected: [String] = []
            var binary: [Int: [UInt8]] = [:]   // arguments that are not UTF-8 text
            c.start(argumentCount: n)
            for _ in 0..<n {
                switch rng.next() % 7 {
                case 0:
                    let s = Self.string(&rng)
                    c.add(s)
                    expected.append(s)
                case 1:
                    let v = Self.integer(&rng)
                    c.add(v)
                    expected.append(String(v))
                case 2:
                    let v = Self.integer(&rng)
                    c.add(entryID: v)
                    expected.append("\(v)-0")
                case 3:
                    // Binary (the offsets' SETRANGE): any bytes, CR LF and invalid UTF-8 too.
                    let b = (0..<Int(rng.next() % 40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    b.withUnsafeBufferPointer { c.add(bytes: $0) }
                    binary[expected.count] = b
                    expected.append(String(decoding: b, as: UTF8.self))
                case 4:
                    let v = Self.integer(&rng), s = Self.string(&rng)
                    c.add(seq: v, space: s)
                    expected.append(LivePayload.message(seq: v, json: s))
                case 5:
                    let v = Int(truncatingIfNeeded: Self.integer(&rng) >> 1)
                    c.add(v)
                    expected.append(String(v))
                default:
                    c.add(constant: "XADD")
                    expected.append("XADD")
                }
            }
            XCTAssertTrue(c.isComplete)
            let exact = expected.enumerated().map { binary[$0.offset] ?? Array($0.element.utf8) }
            XCTAssertEqual(Array(c.bytes), Self.reference(exact), "round \(round): \(exact.map(\.count))")
            XCTAssertEqual(c.encoded, Self.reference(exact), "round \(round): encoded")
            XCTAssertEqual(c.count, c.bytes.count)
            XCTAssertEqual(c.arguments().map { Array($0.utf8) }, expected.map { Array($0.utf8) }, "round \(round): read back")
        }
    }
}
