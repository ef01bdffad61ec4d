import RelayCore
@testable import RelayUpstream
import XCTest

/// `ToolCallAssembler`: an upstream's streamed tool calls become `tool_call_start` /
/// `tool_call_delta` / `tool_call_end` parts under the rules of docs/PROTOCOL.md §5.5, and
/// every broken rule is a violation naming the upstream and the call.
final class ToolCallAssemblerTests: XCTestCase {
    private var assembler = ToolCallAssembler(upstream: "Test")

    private func piece(_ s: String) -> JSONString { JSONString(s) }

    /// The violation `body` throws (a test failure when it throws none).
    private func violation(_ body: () throws(ToolCallViolation) -> Void, file: StaticString = #filePath, line: UInt = #line) -> String {
        do throws(ToolCallViolation) {
            try body()
            XCTFail("no violation", file: file, line: line)
            return ""
        } catch {
            return error.message
        }
    }

    func testACallStartsTakesArgumentPiecesAndEndsWithItsArgumentsParsed() throws {
        XCTAssertEqual(try assembler.start(slot: 0, id: "call_1", name: "get_weather"), .toolCallStart(id: "call_1", name: "get_weather"))
        XCTAssertEqual(try assembler.append(slot: 0, arguments: piece("{\"city\":")), .toolCallDelta(id: "call_1", arguments: "{\"city\":"))
        XCTAssertEqual(try assembler.append(slot: 0, arguments: piece("\"Riyadh\"}")), .toolCallDelta(id: "call_1", arguments: "\"Riyadh\"}"))
        XCTAssertEqual(try assembler.end(slot: 0),
                       [.toolCallEnd(id: "call_1", name: "get_weather", input: try LenientJSON.parse("{\"city\":\"Riyadh\"}"))])
        XCTAssertFalse(assembler.hasOpenCalls)
        XCTAssertNoThrow(try assembler.requireAllEnded())
    }

    func testNoArgumentsOrOnlyWhitespaceIsAnEmptyObject() throws {
        _ = try assembler.start(slot: 0, id: "a", name: "now")
        XCTAssertNil(try assembler.append(slot: 0, arguments: piece("")), "an empty piece is no delta")
        XCTAssertEqual(try assembler.end(slot: 0), [.toolCallEnd(id: "a", name: "now", input: .object([]))])
        _ = try assembler.start(slot: 1, id: "b", name: "now")
        _ = try assembler.append(slot: 1, arguments: piece(" \n\t"))
        XCTAssertEqual(try assembler.end(slot: 1).last, .toolCallEnd(id: "b", name: "now", input: .object([])))
    }

    func testInputIsAnyJSONValueTheArgumentsHold() throws {
        _ = try assembler.start(slot: 0, id: "a", name: "f")
        _ = try assembler.append(slot: 0, arguments: piece("[1, \"two\", {\"x\": null}]"))
        let end = try assembler.end(slot: 0)
        guard case .toolCallEnd(_, _, let input)? = end.last else { return XCTFail("\(end)") }
        XCTAssertEqual(input.compactJSON, "[1,\"two\",{\"x\":null}]")
    }

    func testArgumentsThatAreNotJSONAtTheEndAreRefusedNamingTheUpstreamAndTheCall() throws {
        _ = try assembler.start(slot: 0, id: "call_9", name: "lookup")
        _ = try assembler.append(slot: 0, arguments: piece("{\"secret\": \"do-not-log\""))
        let message = violation { () throws(ToolCallViolation) in _ = try assembler.end(slot: 0) }
        XCTAssertTrue(message.hasPrefix("Test upstream sent arguments for tool call \"call_9\" (lookup) that are not JSON"), message)
        XCTAssertFalse(message.contains("do-not-log"), "the arguments' text is never quoted: \(message)")
    }

    func testAStartNeedsAnIdAndAName() {
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.start(slot: 2, id: nil, name: "f") },
                       "Test upstream started the tool call at index 2 without an id")
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.start(slot: 2, id: "", name: "f") },
                       "Test upstream started the tool call at index 2 without an id")
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.start(slot: 2, id: "c", name: nil) },
                       "Test upstream started tool call \"c\" without a name")
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.start(slot: 2, id: "c", name: "") },
                       "Test upstream started tool call \"c\" without a name")
    }

    func testAnIdIsUsedOncePerAnswerEvenAfterItsCallEnded() throws {
        _ = try assembler.start(slot: 0, id: "dup", name: "f")
        _ = try assembler.end(slot: 0)
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.start(slot: 1, id: "dup", name: "g") },
                       "Test upstream started tool call \"dup\" (g) twice")
    }

    func testASlotHoldsOneOpenCall() throws {
        _ = try assembler.start(slot: 0, id: "a", name: "f")
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.start(slot: 0, id: "b", name: "g") },
                       "Test upstream started tool call \"b\" (g) at index 0 while \"a\" is open there")
    }

    func testArgumentsAndEndsOnlyForAnOpenCall() throws {
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.append(slot: 3, arguments: piece("{")) },
                       "Test upstream sent arguments for a tool call at index 3, where none is open")
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.end(slot: 3) },
                       "Test upstream ended a tool call at index 3, where none is open")
        _ = try assembler.start(slot: 3, id: "a", name: "f")
        _ = try assembler.end(slot: 3)
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.append(slot: 3, arguments: piece("}")) },
                       "Test upstream sent arguments for a tool call at index 3, where none is open", "no arguments after the end")
    }

    func testInterleavedCallsEndTogetherInTheOrderTheyStarted() throws {
        _ = try assembler.start(slot: 1, id: "b", name: "g")
        _ = try assembler.start(slot: 0, id: "a", name: "f")
        XCTAssertEqual(try assembler.append(slot: 0, arguments: piece("{\"x\":")), .toolCallDelta(id: "a", arguments: "{\"x\":"))
        XCTAssertEqual(try assembler.append(slot: 1, arguments: piece("{}")), .toolCallDelta(id: "b", arguments: "{}"))
        XCTAssertEqual(try assembler.append(slot: 0, arguments: piece("1}")), .toolCallDelta(id: "a", arguments: "1}"))
        XCTAssertEqual(assembler.openID(atSlot: 0), "a")
        XCTAssertEqual(try assembler.endAll(), [.toolCallEnd(id: "b", name: "g", input: .object([])),
                                                .toolCallEnd(id: "a", name: "f", input: try LenientJSON.parse("{\"x\":1}"))])
        XCTAssertNil(assembler.openID(atSlot: 0))
    }

    func testEndAllStopsAtTheFirstCallThatDoesNotParse() throws {
        _ = try assembler.start(slot: 0, id: "a", name: "f")
        _ = try assembler.start(slot: 1, id: "b", name: "g")
        _ = try assembler.append(slot: 0, arguments: piece("{\"x\""))
        XCTAssertTrue(violation { () throws(ToolCallViolation) in _ = try assembler.endAll() }.contains("\"a\" (f) that are not JSON"))
    }

    func testAnAnswerMayNotEndWithACallOpen() throws {
        _ = try assembler.start(slot: 4, id: "late", name: "f")
        XCTAssertTrue(assembler.hasOpenCalls)
        XCTAssertEqual(violation { () throws(ToolCallViolation) in try assembler.requireAllEnded() },
                       "Test upstream ended the answer with tool call \"late\" (f) still open")
    }

    func testArgumentsUpToTheCapPassAndOneByteMoreIsRefusedBeforeItIsPassedOn() throws {
        let cap = ToolCallAssembler.maxArgumentBytes
        XCTAssertEqual(cap, 1 << 20, "1 MiB, as docs/UPSTREAMS.md says")
        let body = String(repeating: "a", count: cap - 2)
        _ = try assembler.start(slot: 0, id: "big", name: "f")
        XCTAssertNotNil(try assembler.append(slot: 0, arguments: piece("\"")))
        XCTAssertNotNil(try assembler.append(slot: 0, arguments: piece(body)))
        XCTAssertNotNil(try assembler.append(slot: 0, arguments: piece("\"")), "exactly the cap")
        guard case .toolCallEnd(_, _, .string(let s))? = try assembler.end(slot: 0).last else { return XCTFail("a string input") }
        XCTAssertEqual(s.units.count, cap - 2)

        _ = try assembler.start(slot: 0, id: "bigger", name: "f")
        _ = try assembler.append(slot: 0, arguments: piece("\"" + body + "\""))
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.append(slot: 0, arguments: piece(" ")) },
                       "Test upstream sent more than 1048576 bytes of arguments for tool call \"bigger\" (f)")
    }

    func testTheCapCountsUTF8Bytes() throws {
        _ = try assembler.start(slot: 0, id: "u", name: "f")
        let arabic = String(repeating: "م", count: ToolCallAssembler.maxArgumentBytes / 2)  // 2 bytes each
        XCTAssertNotNil(try assembler.append(slot: 0, arguments: piece(arabic)))
        XCTAssertThrowsError(try assembler.append(slot: 0, arguments: piece("م")))
    }

    func testAnAnswerHoldsAtMostMaxCallsCalls() throws {
        for k in 0..<ToolCallAssembler.maxCalls {
            _ = try assembler.start(slot: k, id: "c\(k)", name: "f")
            _ = try assembler.end(slot: k)
        }
        XCTAssertEqual(violation { () throws(ToolCallViolation) in _ = try assembler.start(slot: 0, id: "one-more", name: "f") },
                       "Test upstream started more than 128 tool calls")
    }

    func testASurrogatePairSplitAcrossPiecesIsJoinedAndAnUnpairedHalfBecomesAReplacement() throws {
        _ = try assembler.start(slot: 0, id: "e", name: "f")
        XCTAssertEqual(try assembler.append(slot: 0, arguments: piece("\"")), .toolCallDelta(id: "e", arguments: "\""))
        XCTAssertNil(try assembler.append(slot: 0, arguments: JSONString(units: [0xD83D])), "a high half is held")
        XCTAssertEqual(try assembler.append(slot: 0, arguments: JSONString(units: [0xDE00, 0x22])), .toolCallDelta(id: "e", arguments: "😀\""))
        XCTAssertEqual(try assembler.end(slot: 0).last, .toolCallEnd(id: "e", name: "f", input: .string(JSONString("😀"))))
        XCTAssertEqual(assembler.replacedSurrogateHalves, 0)

        _ = try assembler.start(slot: 0, id: "h", name: "f")
        _ = try assembler.append(slot: 0, arguments: piece("\"a"))
        XCTAssertEqual(try assembler.append(slot: 0, arguments: JSONString(units: [0xDC00])), .toolCallDelta(id: "h", arguments: "\u{FFFD}"))
        _ = try assembler.append(slot: 0, arguments: piece("\""))
        XCTAssertEqual(try assembler.end(slot: 0), [.toolCallEnd(id: "h", name: "f", input: .string(JSONString("a\u{FFFD}")))])
        XCTAssertEqual(assembler.replacedSurrogateHalves, 1)

        // A high half still held at the end becomes U+FFFD after the JSON value: not JSON.
        _ = try assembler.start(slot: 0, id: "k", name: "f")
        _ = try assembler.append(slot: 0, arguments: piece("\"z\""))
        XCTAssertNil(try assembler.append(slot: 0, arguments: JSONString(units: [0xD83D])))
        XCTAssertTrue(violation { () throws(ToolCallViolation) in _ = try assembler.end(slot: 0) }.contains("\"k\" (f) that are not JSON"))
        XCTAssertEqual(assembler.replacedSurrogateHalves, 2)
    }
}
