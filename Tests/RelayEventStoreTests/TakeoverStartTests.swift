import RelayCore
import RelayRedis
import XCTest
@testable import RelayEventStore

/// What a continuation after a takeover starts from (docs/DATA_MODEL.md §6.1): the append
/// queue after the stored top seq, the text checkpoint after the stored text, the stored
/// request's one encode/decode pair, and how a stale writer recognises the takeover.
final class TakeoverStartTests: XCTestCase {
    func testAQueueStartedAfterTheStoredTopSendsFromTheNextSeqAndATakenStateFailsIt() {
        var q = AppendQueue<String>(maxGroup: 4, ackedSeq: 41)
        XCTAssertEqual(q.ackedSeq, 41)
        let sent = q.enqueue(seq: 42, "a", sendableThrough: .max)
        XCTAssertEqual(sent.map(\.seq), [42])
        XCTAssertEqual(q.replied(seq: 42, .stored), .drained)
        XCTAssertEqual(q.ackedSeq, 42)
        _ = q.enqueue(seq: 43, "b", sendableThrough: .max)
        XCTAssertEqual(q.replied(seq: 43, .refused), .verify)
        let (acked, next) = q.verified(StoredTail(state: "taken", topSeq: 42, entries: [])) { $0 == $1 }
        XCTAssertEqual(acked.count, 0)
        XCTAssertEqual(next, .failed)
        XCTAssertEqual(q.failure, .takenOver)
    }

    func testACheckpointStartedAfterTheStoredTextOffsetsTheContinuationsText() {
        var c = TextCheckpoint(trim: StreamTrim(maxLen: 200), confirmedSeq: 10, confirmedEnd: 25)
        XCTAssertEqual(c.textEnd, 25)
        XCTAssertEqual(c.add(seq: 11, text: "héllo"), 25)
        XCTAssertEqual(c.textEnd, 31)
        let w = c.take()
        XCTAssertEqual(w?.start, 25)
        XCTAssertEqual(w?.offsets.map(\.seq), [11])
        XCTAssertEqual(w?.offsets.map(\.end), [31])
    }

    func testTheStoredRequestRoundTripsAndRefusesAnythingElse() throws {
        let r = StoredRequest(request: ChatRequest(messages: [ChatMessage(role: "system", content: "be brief"),
                                                              ChatMessage(role: "user", content: "دعنا \u{FEFF}\"quoted\"\n")],
                                                   model: "simulated-ar", maxTokens: 321, mode: .summary),
                              budgetKey: "relay:budget:{u:abc}:2026-12", promptEstimate: 17, reservedTokens: 338, limitedByBudget: true,
                              budgetLimit: 500_000)
        XCTAssertEqual(try StoredRequest.decode(r.encoded()), r)
        XCTAssertThrowsError(try StoredRequest.decode(""))
        XCTAssertThrowsError(try StoredRequest.decode("{\"v\":2}"))
        XCTAssertThrowsError(try StoredRequest.decode(r.encoded().replacingOccurrences(of: "\"v\":1", with: "\"v\":2")))
    }

    /// A request with tools, a tool choice, an assistant's calls and a tool's result comes back
    /// whole, each schema with its members in the client's order and its number literals (a
    /// continuation sends the upstream the same tools as the first call); the form written
    /// before the request was kept as text still reads.
    func testTheStoredRequestKeepsToolsCallsAndResultsAsSent() throws {
        let schema = try LenientJSON.parse(#"{"type":"object","properties":{"zeta":{"type":"number","minimum":0.10},"alpha":{"type":"string"}}}"#)
        let request = ChatRequest(
            messages: [ChatMessage(role: "user", content: "Weather?"),
                       ChatMessage(assistant: "", toolCalls: [ChatToolCall(id: "call_1", name: "get_weather", arguments: #"{"city":"Riyadh"}"#)]),
                       ChatMessage(toolCallID: "call_1", content: "31 °C"),
                       ChatMessage(assistant: "Checking again.", toolCalls: [ChatToolCall(id: "call_2", name: "now", arguments: "")])],
            model: "gpt-test", maxTokens: 50,
            tools: [ChatTool(name: "get_weather", description: "Weather", parameters: schema, strict: true), ChatTool(name: "now")],
            toolChoice: .function("now"))
        let r = StoredRequest(request: request, budgetKey: "k", promptEstimate: 90, reservedTokens: 140, limitedByBudget: false,
                              budgetLimit: 20_000)
        let decoded = try StoredRequest.decode(r.encoded())
        XCTAssertEqual(decoded, r)
        XCTAssertEqual(decoded.request.tools.first?.parameters?.compactJSON,
                       #"{"type":"object","properties":{"zeta":{"type":"number","minimum":0.10},"alpha":{"type":"string"}}}"#)

        let older = #"{"budget":"k","limit":9,"limited":false,"prompt":1,"request":{"messages":[{"content":"hi","role":"user"}]},"reserved":2,"v":1}"#
        XCTAssertEqual(try StoredRequest.decode(older).request, ChatRequest(messages: [ChatMessage(role: "user", content: "hi")]))
    }
}
