import XCTest
import RelayCore
@testable import RelayClient

/// `AnswerParts`: the parts of an answer in the order received, tool calls assembled from their
/// parts, the reasoning joined, and the part tokens (docs/PROTOCOL.md §5.5).
final class AnswerPartsTests: XCTestCase {
    let riyadh = try! LenientJSON.parse(#"{"city":"Riyadh"}"#)

    func testAToolCallIsAssembledPieceByPieceAndItsInputHandedOverWholeAtTheEnd() {
        var a = AnswerParts()
        let started = a.receive(.toolCallStart(id: "call_1", name: "get_weather"))
        XCTAssertEqual(started.toolCall, ToolCall(id: "call_1", name: "get_weather"))
        XCTAssertEqual(started.toolCall?.isEnded, false)
        XCTAssertEqual(a.receive(.toolCallDelta(id: "call_1", arguments: #"{"city":"#)).toolCall?.arguments, #"{"city":"#)
        let piece = a.receive(.toolCallDelta(id: "call_1", arguments: #""Riyadh"}"#))
        XCTAssertEqual(piece.toolCall?.arguments, #"{"city":"Riyadh"}"#)
        XCTAssertNil(piece.toolCall?.input, "no input before the call ends")
        let ended = a.receive(.toolCallEnd(id: "call_1", name: "get_weather", input: riyadh))
        XCTAssertEqual(ended.toolCall, ToolCall(id: "call_1", name: "get_weather", arguments: #"{"city":"Riyadh"}"#, input: riyadh))
        XCTAssertEqual(ended.toolCall?.isEnded, true)
        XCTAssertEqual(ended.toolCalls, [ended.toolCall!])
        XCTAssertEqual(ended.parts.count, 4)
        XCTAssertEqual(ended.tokens, 2, "each argument piece is a token")
    }

    func testInterleavedCallsAreKeptApartAndListedInTheOrderTheyStarted() {
        var a = AnswerParts()
        _ = a.receive(.toolCallStart(id: "a", name: "search"))
        _ = a.receive(.toolCallStart(id: "b", name: "get_time"))
        _ = a.receive(.toolCallDelta(id: "b", arguments: "{}"))
        _ = a.receive(.toolCallDelta(id: "a", arguments: #"{"q":1}"#))
        let u = a.receive(.toolCallEnd(id: "b", name: "get_time", input: .object([])))
        XCTAssertEqual(u.toolCalls.map(\.id), ["a", "b"])
        XCTAssertEqual(u.toolCalls.map(\.arguments), [#"{"q":1}"#, "{}"])
        XCTAssertEqual(u.toolCalls.map(\.isEnded), [false, true])
    }

    func testPartsOfACallNeverStartedOrAlreadyEndedAreListedButChangeNoCall() {
        var a = AnswerParts()
        XCTAssertNil(a.receive(.toolCallDelta(id: "ghost", arguments: "{}")).toolCall)
        XCTAssertNil(a.receive(.toolCallEnd(id: "ghost", name: "f", input: .object([]))).toolCall)
        _ = a.receive(.toolCallStart(id: "c", name: "f"))
        _ = a.receive(.toolCallEnd(id: "c", name: "f", input: .null))
        let late = a.receive(.toolCallDelta(id: "c", arguments: "late"))
        XCTAssertNil(late.toolCall)
        let again = a.receive(.toolCallStart(id: "c", name: "g"))
        XCTAssertNil(again.toolCall, "a second start for a known id changes nothing")
        XCTAssertEqual(again.toolCalls, [ToolCall(id: "c", name: "f", input: .null)], "a null input is an ended call")
        XCTAssertEqual(again.parts.count, 6, "every well-formed part is listed")
        XCTAssertEqual(again.tokens, 2, "argument pieces count as tokens whatever their call")
    }

    func testAnAgentsToolResultGivesItsEndedCallAnOutputAndOtherwiseChangesNothing() {
        var a = AnswerParts()
        _ = a.receive(.toolCallStart(id: "call_1", name: "get_weather"))
        XCTAssertNil(a.receive(.toolResult(id: "call_1", output: .string(JSONString("too early")))).toolCall)
        _ = a.receive(.toolCallEnd(id: "call_1", name: "get_weather", input: .object([])))
        let result = a.receive(.toolResult(id: "call_1", output: .null))
        XCTAssertEqual(result.toolCall, ToolCall(id: "call_1", name: "get_weather", input: .object([]), output: .null))
        XCTAssertNil(a.receive(.toolResult(id: "call_1", output: .string(JSONString("again")))).toolCall)
        let ghost = a.receive(.toolResult(id: "call_9", output: .number("1")))
        XCTAssertNil(ghost.toolCall)
        XCTAssertEqual(ghost.toolCalls, [result.toolCall!])
        XCTAssertEqual(ghost.parts.count, 6)
        XCTAssertEqual(ghost.tokens, 0, "a result is not a generated token")
    }

    func testReasoningIsJoinedAndRedactedReasoningIsNeitherShownNorCounted() {
        var a = AnswerParts()
        _ = a.receive(.reasoning("The user wants "))
        _ = a.receive(.reasoningRedacted(data: "RW5jcnlwdGVk"))
        let u = a.receive(.reasoning("the weather."))
        XCTAssertEqual(u.reasoning, "The user wants the weather.")
        XCTAssertEqual(u.tokens, 2)
        XCTAssertNil(u.toolCall)
        XCTAssertEqual(u.parts, [.reasoning("The user wants "), .reasoningRedacted(data: "RW5jcnlwdGVk"), .reasoning("the weather.")])
    }

    func testSourcesAndDataAreListedInOrderAndAreNotTokens() {
        var a = AnswerParts()
        let source = AnswerPart.source(id: "s1", url: "https://example.com", title: nil)
        let data = AnswerPart.data(name: "weather", id: "w1", value: .array([.number("41"), .bool(true)]))
        _ = a.receive(source)
        let u = a.receive(data)
        XCTAssertEqual(u.part, data)
        XCTAssertEqual(u.parts, [source, data])
        XCTAssertEqual(u.tokens, 0)
        XCTAssertEqual(u.reasoning, "")
        XCTAssertEqual(a.parts, [source, data])
    }

    func testAnEarlierUpdateKeepsWhatItSaid() {
        var a = AnswerParts()
        let first = a.receive(.toolCallStart(id: "call_1", name: "f"))
        _ = a.receive(.toolCallDelta(id: "call_1", arguments: "{}"))
        XCTAssertEqual(first.parts.count, 1)
        XCTAssertEqual(first.toolCalls.first?.arguments, "")
    }
}
