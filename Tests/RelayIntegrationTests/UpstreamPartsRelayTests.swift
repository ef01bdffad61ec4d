import Foundation
import RelayCore
import RelayTestSupport
import XCTest

/// Parts from a real HTTP upstream through a relay process (docs/PROTOCOL.md §5.5,
/// docs/UPSTREAMS.md "Parts"): a fake upstream of each API (OpenAI chat completions, OpenAI
/// Responses, Anthropic Messages) streams reasoning, two tool
/// calls whose arguments arrive over many chunks, and text; the client reads the part events
/// in order, numbered 1… without gaps, then `done` with `finish_reason` `tool_calls`, and a
/// resume from inside a call's arguments gets the rest once.
final class UpstreamPartsRelayTests: RelayTestCase {
    /// A fake upstream at `path` sending each of `events` as its own write.
    private func fake(_ path: String, _ events: [String]) throws -> FakeUpstreamServer {
        let steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")] + events.map { .send(Array($0.utf8)) }
        return try FakeUpstreamServer(routes: [path: .init(steps)])
    }

    private func relay(_ api: String, _ fake: FakeUpstreamServer, model: String) throws -> RelayProcess {
        try startRelay(["RELAY_UPSTREAM": api, "UPSTREAM_URL": fake.baseURL, "UPSTREAM_API_KEY": "sk-test", "UPSTREAM_MODEL": model])
    }

    /// Streams one answer from `relay` and checks it is `expected` then `done` (`tool_calls`,
    /// the upstream's usage), seq 1…; then resumes from the middle of the first call's
    /// arguments and checks the rest.
    private func assertParts(_ relay: RelayProcess, model: String, expected: [StreamEvent], usage: Usage,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let token = RelayProcess.token()
        let id = Chat.newID()
        let events = try Chat.start(port: relay.port, token: token, requestID: id, model: model).readAll(timeout: 20)
        let done = StreamEvent.done(finishReason: "tool_calls", usage: usage)
        XCTAssertEqual(events.map(\.data), (expected + [done]).map(\.json), file: file, line: line)
        assertSequence(events, file: file, line: line)
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "done", file: file, line: line)

        let inside = try XCTUnwrap(expected.firstIndex { if case .part(.toolCallDelta) = $0 { return true } else { return false } },
                                   file: file, line: line) + 2
        let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: String(inside)).readAll(timeout: 20)
        XCTAssertEqual(rest.map(\.data), Array(events.dropFirst(inside)).map(\.data), "resumed inside the arguments", file: file, line: line)
        assertSequence(rest, from: UInt64(inside) + 1, file: file, line: line)
    }

    func testOpenAIReasoningTwoToolCallsAndTextReachTheClientAsPartEvents() throws {
        let upstream = try fake("/v1/chat/completions", OpenAIPartStreams.reasoningTwoCallsAndText)
        defer { upstream.stop() }
        let r = try relay("openai", upstream, model: "gpt-test")
        try assertParts(r, model: "gpt-test", expected: OpenAIPartStreams.reasoningTwoCallsAndTextEvents,
                        usage: Usage(promptTokens: 40, completionTokens: 61))
    }

    func testAnthropicThinkingTwoToolUsesAndTextReachTheClientAsPartEvents() throws {
        let upstream = try fake("/v1/messages", AnthropicPartStreams.thinkingTwoToolUsesAndText)
        defer { upstream.stop() }
        let r = try relay("anthropic", upstream, model: "claude-test")
        try assertParts(r, model: "claude-test", expected: AnthropicPartStreams.thinkingTwoToolUsesAndTextEvents,
                        usage: Usage(promptTokens: 40, completionTokens: 61))
    }

    func testOpenAIResponsesReasoningTwoFunctionCallsAndTextReachTheClientAsPartEvents() throws {
        let upstream = try fake("/v1/responses", OpenAIResponsesStreams.reasoningTwoCallsAndText)
        defer { upstream.stop() }
        let r = try relay("openai-responses", upstream, model: "gpt-test")
        try assertParts(r, model: "gpt-test", expected: OpenAIResponsesStreams.reasoningTwoCallsAndTextEvents,
                        usage: Usage(promptTokens: 40, completionTokens: 61))
        let body = try XCTUnwrap(upstream.requests.first).json
        XCTAssertEqual(body["stream"] as? Bool, true)
        XCTAssertEqual(body["store"] as? Bool, false)
        XCTAssertNotNil(body["input"] as? [[String: Any]])
    }

    /// A call whose arguments do not parse ends the stored answer with one `error` event
    /// and no `tool_call_end` (docs/PROTOCOL.md §5.5).
    func testArgumentsThatDoNotParseEndTheAnswerWithAnUpstreamError() throws {
        let events = [OpenAIPartStreams.toolCall(index: 0, id: "call_bad", name: "get_weather", arguments: "{\"city\":"),
                      OpenAIPartStreams.chunk("{}", finish: "tool_calls"), "data: [DONE]\n\n"]
        let upstream = try fake("/v1/chat/completions", events)
        defer { upstream.stop() }
        let r = try relay("openai", upstream, model: "gpt-test")
        let id = Chat.newID()
        let got = try Chat.start(port: r.port, token: RelayProcess.token(), requestID: id, model: "gpt-test").readAll(timeout: 20)
        assertSequence(got)
        XCTAssertEqual(got.count, 3, got.map(\.data).joined(separator: "\n"))
        guard case .error(502, "upstream_error", let message)? = try? StreamEvent(json: got.last?.data ?? "") else {
            return XCTFail("ends with upstream_error: \(got.map(\.data))")
        }
        XCTAssertTrue(message.contains("tool call \"call_bad\" (get_weather)"), message)
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "failed")
    }
}
