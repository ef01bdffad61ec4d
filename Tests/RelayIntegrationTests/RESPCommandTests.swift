import RelayCore
import RelayRedis
import XCTest
import RelayEventStore

/// `RESPCommand` (the append path's commands written straight in RESP): the
/// exact bytes of the Redis protocol ("Redis serialization protocol specification":
/// `*<argc>\r\n`, then `$<len>\r\n<bytes>\r\n` per argument), integers as their decimal
/// text, the live payload as `LivePayload.message`, and the arguments read back for a
/// channel that routes by argument (`ClusterClient`).
final class RESPCommandTests: XCTestCase {
    private func text(_ c: RESPCommand) -> String { String(decoding: c.bytes, as: UTF8.self) }

    func testAnXADDIsWrittenInRESPWithIntegersAsDecimalText() {
        let c = RESPCommand(capacity: 64)
        c.start(argumentCount: 8)
        c.add(constant: "XADD")
        c.add("relay:{r1}:events")
        c.add(constant: "NOMKSTREAM")
        c.add(constant: "MAXLEN")
        c.add(1000)
        c.add(entryID: 12345678901)
        c.add(constant: "e")
        c.add("{\"content\":\"é\"}")
        XCTAssertTrue(c.isComplete)
        XCTAssertEqual(text(c), "*8\r\n$4\r\nXADD\r\n$17\r\nrelay:{r1}:events\r\n$10\r\nNOMKSTREAM\r\n$6\r\nMAXLEN\r\n"
                       + "$4\r\n1000\r\n$13\r\n12345678901-0\r\n$1\r\ne\r\n$16\r\n{\"content\":\"é\"}\r\n")
    }

    /// A run of arguments written once (`RESPArguments`) gives the same bytes as the
    /// arguments added one by one, counts as its arguments, and reads back as them; a
    /// run can be reused from command to command.
    func testArgumentRunsMatchArgumentByArgument() {
        let head = RESPArguments(["XADD", "relay:{مرحبا}:events", "NOMKSTREAM", ""])
        XCTAssertEqual(head.count, 4)
        let a = RESPCommand(capacity: 64), b = RESPCommand(capacity: 64)
        for seq: UInt64 in [1, 99, 123_456] {
            a.start(argumentCount: 8)
            a.add(head)
            a.add(Int(seq) * 3)
            a.add(-Int(seq))
            a.add("tail")
            a.add(entryID: seq)
            b.start(argumentCount: 8)
            for arg in ["XADD", "relay:{مرحبا}:events", "NOMKSTREAM", ""] { b.add(arg) }
            b.add(String(seq * 3))
            b.add("-\(seq)")
            b.add("tail")
            b.add("\(seq)-0")
            XCTAssertTrue(a.isComplete)
            XCTAssertEqual(text(a), text(b))
            XCTAssertEqual(a.arguments(), ["XADD", "relay:{مرحبا}:events", "NOMKSTREAM", "", "\(seq * 3)", "-\(seq)", "tail", "\(seq)-0"])
        }
    }

    /// Zero, the largest integer, an empty argument and binary bytes (the offsets'
    /// `SETRANGE`: CR LF, NUL and invalid UTF-8 inside a bulk string, length-prefixed).
    func testZeroMaxEmptyAndBinaryArguments() {
        let c = RESPCommand()
        c.start(argumentCount: 6)
        c.add(constant: "SETRANGE")
        c.add(0)
        c.add(UInt64.max)
        c.add("")
        c.add(entryID: 0)
        let binary: [UInt8] = [0x0D, 0x0A, 0x00, 0xFF, 0xC3, 0x28]
        binary.withUnsafeBufferPointer { c.add(bytes: $0) }
        XCTAssertEqual(c.encoded, Array("*6\r\n$8\r\nSETRANGE\r\n$1\r\n0\r\n$20\r\n18446744073709551615\r\n$0\r\n\r\n$3\r\n0-0\r\n$6\r\n".utf8) + binary + [13, 10])
    }

    /// A negative integer is written as given (Redis refuses it where it must not be
    /// negative), never changed into another value.
    func testNegativeIntegersKeepTheirSign() {
        let c = RESPCommand()
        c.start(argumentCount: 3)
        c.add(-5)
        c.add(Int.min)
        c.add(7)
        XCTAssertEqual(text(c), "*3\r\n$2\r\n-5\r\n$20\r\n-9223372036854775808\r\n$1\r\n7\r\n")
        XCTAssertEqual(c.arguments(), ["-5", "-9223372036854775808", "7"])
    }

    func testTheLivePayloadArgumentIsLivePayloadMessage() {
        let c = RESPCommand()
        let json = "{\"type\":\"delta\",\"content\":\"x y\"}"
        c.start(argumentCount: 1)
        c.add(seq: 42, space: json)
        let message = LivePayload.message(seq: 42, json: json)
        XCTAssertEqual(text(c), "*1\r\n$\(message.utf8.count)\r\n\(message)\r\n")
        XCTAssertEqual(c.arguments(), [message])
        XCTAssertEqual(LivePayload.parse(Array(c.arguments()[0].utf8)), SequencedEvent(seq: 42, json: json))
    }

    /// A command larger than the buffer grows it; restarting drops the previous command;
    /// the arguments read back are the ones added.
    func testGrowthRestartAndArgumentsReadBack() {
        let c = RESPCommand(capacity: 64)
        c.start(argumentCount: 2)
        c.add(constant: "SET")
        XCTAssertFalse(c.isComplete)
        c.add(String(repeating: "z", count: 5000))
        XCTAssertTrue(c.isComplete)
        XCTAssertEqual(c.arguments(), ["SET", String(repeating: "z", count: 5000)])
        c.start(argumentCount: 4)
        c.add(constant: "SETRANGE")
        c.add("relay:{a}:text")
        c.add(300)
        c.add("مرحبا\r\n")
        XCTAssertEqual(c.arguments(), ["SETRANGE", "relay:{a}:text", "300", "مرحبا\r\n"])
        XCTAssertEqual(c.count, c.bytes.count)
        XCTAssertTrue(text(c).hasPrefix("*4\r\n$8\r\nSETRANGE\r\n"))
    }

    /// A buffer grown by one huge command (a 1 MiB delta; a `SETRANGE` of a group of
    /// them) is given back at the next `start`; one that stays under
    /// `RESPCommand.retainLimit` is kept from command to command.
    func testABufferGrownPastTheRetainLimitIsGivenBackAtTheNextStart() {
        let c = RESPCommand(capacity: 4096)
        c.start(argumentCount: 2)
        c.add(constant: "SET")
        c.add(String(repeating: "x", count: 4 << 20))
        XCTAssertGreaterThan(c.capacity, 4 << 20)
        XCTAssertEqual(c.arguments().last?.utf8.count, 4 << 20)
        c.start(argumentCount: 1)
        c.add(constant: "PING")
        XCTAssertEqual(c.capacity, 4096, "the huge buffer was given back")
        XCTAssertEqual(text(c), "*1\r\n$4\r\nPING\r\n")
        c.start(argumentCount: 2)
        c.add(constant: "SET")
        c.add(String(repeating: "y", count: 30_000))
        let grown = c.capacity
        XCTAssertGreaterThan(grown, 30_000)
        c.start(argumentCount: 1)
        c.add(constant: "PING")
        XCTAssertEqual(c.capacity, grown, "a buffer under the retain limit is kept")
        XCTAssertEqual(text(c), "*1\r\n$4\r\nPING\r\n")
    }

    /// `RESPCommand`'s retain limit: a buffer grown past it goes back to its
    /// initial size at the next `start` (and only then: the huge command's bytes stay
    /// valid until it); one grown to exactly the limit is kept; `encoded` outlives the
    /// shrink; a command larger than the initial capacity given at `init` never shrinks
    /// below it.
    func testTheReusedBufferShrinksBackAfterAHugeCommand() throws {
        let c = RESPCommand()
        let initial = c.capacity
        c.start(argumentCount: 2)
        c.add(constant: "SET")
        let huge = binaryValue(1, 3_000_000)
        c.add(huge)
        XCTAssertGreaterThan(c.capacity, RESPCommand.retainLimit)
        let kept = c.encoded
        XCTAssertEqual(c.arguments().last?.utf8.count, 3_000_000, "the huge command is intact until the next start")
        c.start(argumentCount: 1)
        c.add(constant: "PING")
        XCTAssertEqual(c.capacity, initial, "given back at the next start")
        XCTAssertEqual(c.arguments(), ["PING"])
        XCTAssertEqual(kept.count, 4 + 9 + 10 + 3_000_000 + 2, "encoded kept its bytes")
        XCTAssertTrue(kept.suffix(2) == [13, 10])
        // Grown to exactly the limit: kept (not past it).
        c.start(argumentCount: 1)
        c.add(binaryValue(2, RESPCommand.retainLimit / 2 + 100))
        XCTAssertEqual(c.capacity, RESPCommand.retainLimit)
        c.start(argumentCount: 1)
        XCTAssertEqual(c.capacity, RESPCommand.retainLimit, "a buffer at the limit is kept")
        // A large initial capacity is the floor.
        let big = RESPCommand(capacity: 200_000)
        big.start(argumentCount: 1)
        big.add(binaryValue(3, 1_000_000))
        big.start(argumentCount: 1)
        XCTAssertEqual(big.capacity, 200_000)
    }
}

/// Sizes across `RESPCommand`'s retain limit (64 KiB) and its initial 1 KiB.
let sizesAcrossTheRetainLimit = [3, 70_000, 0, 2_000_000, 17, RESPCommand.retainLimit - 40, 1, RESPCommand.retainLimit + 1, 1023, 5]

/// Value `i` of `size` bytes for commands across the retain limit: binary (CR LF, NUL,
/// RESP markers, é), distinct per `i`.
func binaryValue(_ i: Int, _ size: Int) -> String {
    let unit = "\r\n\u{0}é\(i)*$"
    var s = String(repeating: unit, count: size / max(1, unit.utf8.count) + 1)
    while s.utf8.count > size { s.removeLast() }
    while s.utf8.count < size { s += "z" }
    return s
}
