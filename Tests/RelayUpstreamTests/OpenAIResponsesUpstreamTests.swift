import RelayTestSupport
import Foundation
import RelayCore
@testable import RelayUpstream
import XCTest

/// `RELAY_UPSTREAM=openai-responses` against the fake server (docs/UPSTREAMS.md
/// "openai-responses"): the `POST /v1/responses` request, and its semantic events mapped to
/// text, reasoning, tool-call and source events, `done` and `error`.
final class OpenAIResponsesUpstreamTests: UpstreamTestCase {
    typealias S = OpenAIResponsesStreams

    private func lines(_ events: [StreamEvent]) -> [String] { events.map(\.json) }

    private func stream(_ events: [String]) -> FakeUpstreamServer.Script {
        .init([.head(status: 200, contentType: "text/event-stream")] + events.map { .send($0.bytes) })
    }

    private let completed = S.event("response.completed", 99, "\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":7,\"output_tokens\":3,\"total_tokens\":10}}")
    private func text(_ t: String) -> String {
        S.event("response.output_text.delta", 5, "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\(JSONText.quoted(t))")
    }
    private func callAdded(_ index: Int, callID: String?, name: String?) -> String {
        let id = callID.map { ",\"call_id\":\(JSONText.quoted($0))" } ?? ""
        let n = name.map { ",\"name\":\(JSONText.quoted($0))" } ?? ""
        return S.event("response.output_item.added", 2, "\"output_index\":\(index),\"item\":{\"type\":\"function_call\",\"id\":\"fc_\(index)\"\(id)\(n),\"arguments\":\"\"}")
    }
    private func arguments(_ index: Int, _ delta: String) -> String {
        S.event("response.function_call_arguments.delta", 3, "\"item_id\":\"fc_\(index)\",\"output_index\":\(index),\"delta\":\(JSONText.quoted(delta))")
    }
    private func argumentsDone(_ index: Int, _ whole: String) -> String {
        S.event("response.function_call_arguments.done", 4, "\"item_id\":\"fc_\(index)\",\"output_index\":\(index),\"arguments\":\(JSONText.quoted(whole))")
    }

    func testRequestGoesToV1ResponsesWithTheMessagesAsInputAndStoreOff() throws {
        let req = ChatRequest(messages: [ChatMessage(role: "system", content: "Be terse."), ChatMessage(role: "user", content: "Hi")],
                              model: "gpt-4.1", maxTokens: 300)
        let (events, s) = try runOpenAIResponses(Self.sse(text("Hello") + completed), request: req)
        XCTAssertEqual(events, [.delta("Hello"), .done(finishReason: "stop", usage: Usage(promptTokens: 7, completionTokens: 3))])
        let r = try XCTUnwrap(s.requests.first)
        XCTAssertEqual(r.path, Self.responsesPath)
        XCTAssertEqual(r.headers["authorization"], "Bearer sk-test")
        XCTAssertEqual(r.headers["accept"], "text/event-stream")
        let json = r.json
        XCTAssertEqual(json["model"] as? String, "gpt-4.1")
        XCTAssertEqual(json["stream"] as? Bool, true)
        XCTAssertEqual(json["store"] as? Bool, false)
        XCTAssertEqual(json["max_output_tokens"] as? Int, 300)
        XCTAssertNil(json["max_tokens"])
        XCTAssertNil(json["messages"])
        XCTAssertNil(json["instructions"])
        XCTAssertEqual(json["input"] as? [[String: String]], [["role": "system", "content": "Be terse."], ["role": "user", "content": "Hi"]])
    }

    func testSummaryModeSendsTheInstructionAndACappedMaxOutputTokensOfAtLeastSixteen() throws {
        var req = Self.question
        req.mode = .summary
        let (_, s) = try runOpenAIResponses(Self.sse(completed), request: req) { $0.summaryMaxTokens = 400 }
        let json = try XCTUnwrap(s.requests.first).json
        XCTAssertEqual(json["max_output_tokens"] as? Int, 400)
        XCTAssertTrue((json["instructions"] as? String)?.hasPrefix("Answer with a short summary") == true)

        req.mode = .full
        req.maxTokens = 5  // under the API's minimum of 16: the relay cuts at 5 itself
        let (_, s2) = try runOpenAIResponses(Self.sse(completed), request: req)
        XCTAssertEqual(try XCTUnwrap(s2.requests.first).json["max_output_tokens"] as? Int, 16)
    }

    func testImagePartsBecomeInputImageParts() throws {
        let msg = ChatMessage(role: "user", parts: [.text("What is this?"), .imageURL("https://img.example.com/a.png", detail: "low")])
        let (_, s) = try runOpenAIResponses(Self.sse(completed), request: ChatRequest(messages: [msg]))
        let input = try XCTUnwrap(try XCTUnwrap(s.requests.first).json["input"] as? [[String: Any]])
        let content = try XCTUnwrap(input.first?["content"] as? [[String: String]])
        XCTAssertEqual(content, [["type": "input_text", "text": "What is this?"],
                                 ["type": "input_image", "image_url": "https://img.example.com/a.png", "detail": "low"]])
    }

    /// The Responses API has no `stop`, `seed` or penalties: refused before any call.
    func testSamplingFieldsTheAPILacksAreRefused() throws {
        let s = try server([:])
        let factory = HTTPUpstreamFactory(.openAIResponses, config: config(s), multi: harness.multi)
        for (sampling, field) in [(SamplingParameters(stop: ["x"]), "stop"), (SamplingParameters(seed: 1), "seed"),
                                  (SamplingParameters(presencePenalty: 0.5), "presence_penalty"),
                                  (SamplingParameters(frequencyPenalty: 0.5), "frequency_penalty")] {
            var req = Self.question
            req.sampling = sampling
            XCTAssertThrowsError(try factory.prepare(req)) { e in
                XCTAssertEqual((e as? APIError)?.code, .invalidRequest)
                XCTAssertTrue("\(e)".contains("\"\(field)\" is not supported by the openai-responses upstream"), "\(e)")
            }
        }
        var ok = Self.question
        ok.sampling = SamplingParameters(temperature: 1.5, topP: 0.9)
        XCTAssertNoThrow(try factory.prepare(ok))
        XCTAssertEqual(s.requests.count, 0)
    }

    func testFunctionCallingGuideStreamBecomesOneToolCallNamedByItsCallId() throws {
        let (events, _) = try runOpenAIResponses(Self.sse(S.functionCallingGuide))
        let pieces = ["{\\\"", "location", "\\\":\\\"", "Paris", ",", " France", "\\\"}"]
        XCTAssertEqual(lines(events),
                       ["{\"type\":\"tool_call_start\",\"id\":\"call_1234xyz\",\"name\":\"get_weather\"}"]
                       + pieces.map { "{\"type\":\"tool_call_delta\",\"id\":\"call_1234xyz\",\"arguments\":\"\($0)\"}" }
                       + ["{\"type\":\"tool_call_end\",\"id\":\"call_1234xyz\",\"name\":\"get_weather\",\"input\":{\"location\":\"Paris, France\"}}",
                          "{\"type\":\"done\",\"finish_reason\":\"tool_calls\",\"usage\":{\"prompt_tokens\":291,\"completion_tokens\":23,\"total_tokens\":314}}"])
        assertMultiIdle()
    }

    /// Reasoning summary parts are separated by a blank line; the hosted web search makes no
    /// part; the URL citation is a source.
    func testReasoningSummaryHostedSearchAndURLCitation() throws {
        let (events, _) = try runOpenAIResponses(Self.sse(S.reasoningSummaryAndCitation))
        XCTAssertEqual(events, [
            .part(.reasoning("**Checking the forecast**")), .part(.reasoning("\n\n")), .part(.reasoning("I'll search")),
            .part(.reasoning(" for today.")), .delta("Sunny, 24 °C"),
            .part(.source(id: "src_1", url: "https://weather.example.com/paris", title: "Paris weather today")),
            .delta(" in Paris."), .done(finishReason: "stop", usage: Usage(promptTokens: 320, completionTokens: 148)),
        ])
    }

    func testReasoningTwoInterleavedCallsAndTextInOrderThenDone() throws {
        let (events, _) = try runOpenAIResponses(stream(S.reasoningTwoCallsAndText))
        XCTAssertEqual(Array(events.dropLast()), S.reasoningTwoCallsAndTextEvents)
        XCTAssertEqual(events.last, .done(finishReason: "tool_calls", usage: Usage(promptTokens: 40, completionTokens: 61)))
    }

    /// Arguments sent only whole, in `.done`, are the call's one piece; a call ended by its
    /// item's `output_item.done` (no arguments `.done`) ends there.
    func testArgumentsOnlyInDoneAndCallsEndedByTheirItem() throws {
        let body = callAdded(0, callID: "call_a", name: "f") + argumentsDone(0, "{\"x\":1}")
            + callAdded(1, callID: "call_b", name: "g") + arguments(1, "{}")
            + S.event("response.output_item.done", 6, "\"output_index\":1,\"item\":{\"type\":\"function_call\",\"call_id\":\"call_b\",\"name\":\"g\",\"arguments\":\"{}\"}")
            + completed
        let (events, _) = try runOpenAIResponses(Self.sse(body))
        XCTAssertEqual(events, [.part(.toolCallStart(id: "call_a", name: "f")), .part(.toolCallDelta(id: "call_a", arguments: "{\"x\":1}")),
                                .part(.toolCallEnd(id: "call_a", name: "f", input: try LenientJSON.parse("{\"x\":1}"))),
                                .part(.toolCallStart(id: "call_b", name: "g")), .part(.toolCallDelta(id: "call_b", arguments: "{}")),
                                .part(.toolCallEnd(id: "call_b", name: "g", input: .object([]))),
                                .done(finishReason: "tool_calls", usage: Usage(promptTokens: 7, completionTokens: 3))])
    }

    func testIncompleteIsLengthOrContentFilter() throws {
        for (reason, finish) in [("max_output_tokens", "length"), ("content_filter", "content_filter")] {
            let incomplete = S.event("response.incomplete", 9, "\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"\(reason)\"},\"usage\":{\"input_tokens\":7,\"output_tokens\":16}}")
            let (events, _) = try runOpenAIResponses(Self.sse(text("Cut") + incomplete))
            XCTAssertEqual(events, [.delta("Cut"), .done(finishReason: FinishReason(rawValue: finish), usage: Usage(promptTokens: 7, completionTokens: 16))])
        }
    }

    /// A response cut at `max_output_tokens` (the relay's grant) inside a function call: the call
    /// stays open with its incomplete arguments and the answer ends `length` (docs/PROTOCOL.md
    /// §5.5), as when the relay cuts it itself; never a 502 for arguments that could not be whole.
    func testAResponseCutInsideACallLeavesItOpenAndEndsWithLength() throws {
        let itemDone = S.event("response.output_item.done", 5, "\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_0\",\"call_id\":\"call_a\",\"name\":\"f\",\"arguments\":\"{\\\"city\\\":\",\"status\":\"incomplete\"}")
        let incomplete = S.event("response.incomplete", 9, "\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":7,\"output_tokens\":16}}")
        let (events, _) = try runOpenAIResponses(Self.sse(callAdded(0, callID: "call_a", name: "f") + arguments(0, "{\"city\":") + itemDone + incomplete))
        XCTAssertEqual(events, [.part(.toolCallStart(id: "call_a", name: "f")), .part(.toolCallDelta(id: "call_a", arguments: "{\"city\":")),
                                .done(finishReason: "length", usage: Usage(promptTokens: 7, completionTokens: 16))])
    }

    func testFailedResponseAndErrorEventEndTheAnswerWithUpstreamError() throws {
        let failed = S.event("response.failed", 9, "\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model failed to generate a response.\"}}")
        let (a, _) = try runOpenAIResponses(Self.sse(text("Part") + failed))
        XCTAssertEqual(a.first, .delta("Part"))
        assertEndsWithError(a, status: 502, code: "upstream_error", containing: "upstream server_error: The model failed to generate a response.")

        let error = S.event("error", 3, "\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached\",\"param\":null")
        let (b, _) = try runOpenAIResponses(Self.sse(error))
        assertEndsWithError(b, status: 502, code: "upstream_error", containing: "upstream rate_limit_exceeded: Rate limit reached")
        XCTAssertEqual(b.count, 1)
    }

    /// There is no `[DONE]`: a close before `response.completed` is a broken stream.
    func testACloseBeforeTheResponseCompletedIsAnError() throws {
        let (events, _) = try runOpenAIResponses(Self.sse(text("Half"), chunked: false))
        XCTAssertEqual(events.first, .delta("Half"))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "closed the stream before its end")
    }

    func testBrokenCallsEndTheAnswerNamingTheUpstreamAndTheCall() throws {
        let (noID, _) = try runOpenAIResponses(Self.sse(callAdded(0, callID: nil, name: "f") + completed))
        assertEndsWithError(noID, status: 502, code: "upstream_error", containing: "OpenAI Responses upstream started the tool call at index 0 without an id")

        let (notJSON, _) = try runOpenAIResponses(Self.sse(callAdded(0, callID: "call_x", name: "f") + arguments(0, "{\"a\":") + argumentsDone(0, "{\"a\":") + completed))
        assertEndsWithError(notJSON, status: 502, code: "upstream_error",
                            containing: "OpenAI Responses upstream sent arguments for tool call \"call_x\" (f) that are not JSON")
        XCTAssertFalse(notJSON.contains { if case .part(.toolCallEnd) = $0 { return true } else { return false } })

        let (open, _) = try runOpenAIResponses(Self.sse(callAdded(0, callID: "call_o", name: "f") + arguments(0, "{}") + completed))
        assertEndsWithError(open, status: 502, code: "upstream_error", containing: "ended the answer with tool call \"call_o\" (f) still open")

        let (stray, _) = try runOpenAIResponses(Self.sse(arguments(4, "{}") + completed))
        assertEndsWithError(stray, status: 502, code: "upstream_error", containing: "sent arguments for a tool call at index 4, where none is open")
    }
}
