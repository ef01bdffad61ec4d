import Foundation
import RelayCore
import RelayTestSupport
import XCTest

/// An agent app's request through a running relay (docs/PROTOCOL.md §3.1, docs/UPSTREAMS.md):
/// tools, a tool choice and a conversation holding an earlier call and its result reach a fake
/// OpenAI-compatible upstream as sent and a fake Anthropic upstream as `input_schema` tools and
/// `tool_use` / `tool_result` blocks; the answer's new tool calls come back as part events; the
/// operator's `RELAY_CLIENT_PARAMETERS` without `tools` refuses tools (not the conversation),
/// and arguments the Messages API cannot take are refused before any call.
final class ToolRequestTests: RelayTestCase {
    private static let schema = #"{"type":"object","properties":{"zone":{"type":"string"},"city":{"type":"string"}},"required":["city"]}"#
    /// The tools as JSON text (the schema's member order is not alphabetical on purpose).
    private static let toolsJSON = #"[{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":\#(schema)}},{"type":"function","function":{"name":"get_time","parameters":\#(schema)}}]"#
    private static var messages: [[String: Any]] {
        [["role": "user", "content": "Weather in Riyadh?"],
         ["role": "assistant", "content": NSNull(),
          "tool_calls": [["id": "call_0", "type": "function", "function": ["name": "get_weather", "arguments": #"{"city":"Riyadh"}"#]]]],
         ["role": "tool", "tool_call_id": "call_0", "content": "31 °C"],
         ["role": "user", "content": "And the time, and the weather again?"]]
    }

    /// A `POST /api/chat/stream` body: `messages`, `model`, and `tools` as their JSON text.
    private func body(model: String, tools: Bool = true, choice: Any? = nil, messages: [[String: Any]] = messages) -> [UInt8] {
        var obj: [String: Any] = ["messages": messages, "model": model]
        if let choice { obj["tool_choice"] = choice }
        var text = String(decoding: try! JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys]), as: UTF8.self)
        if tools { text = String(text.dropLast()) + #","tools":\#(Self.toolsJSON)}"# }
        return Array(text.utf8)
    }

    private func post(_ relay: RelayProcess, _ body: [UInt8], token: String = RelayProcess.token(), requestID: String? = nil) throws -> SSEConnection {
        var headers = [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")]
        if let requestID { headers.append(("X-Request-Id", requestID)) }
        return try SSEConnection(port: relay.port, method: "POST", path: "/api/chat/stream", headers: headers, body: body)
    }

    private func fake(_ path: String, _ events: [String]) throws -> FakeUpstreamServer {
        let steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")] + events.map { .send(Array($0.utf8)) }
        return try FakeUpstreamServer(routes: [path: .init(steps)])
    }

    private func refusal(_ c: SSEConnection) throws -> String {
        XCTAssertEqual(c.status, 400)
        return String(decoding: try XCTUnwrap(c.readBody(timeout: 5)), as: UTF8.self)
    }

    func testAnOpenAICompatibleUpstreamGetsToolsAndTheConversationAsSentAndItsCallsComeBackAsParts() throws {
        let upstream = try fake("/v1/chat/completions", OpenAIPartStreams.reasoningTwoCallsAndText)
        defer { upstream.stop() }
        let relay = try startRelay(["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": upstream.baseURL, "UPSTREAM_MODEL": "gpt-test"])
        let events = try post(relay, body(model: "gpt-test", choice: "required")).readAll(timeout: 20)
        XCTAssertEqual(events.map(\.data), (OpenAIPartStreams.reasoningTwoCallsAndTextEvents
                                            + [.done(finishReason: "tool_calls", usage: Usage(promptTokens: 40, completionTokens: 61))]).map(\.json))
        assertSequence(events)

        let sent = try XCTUnwrap(upstream.requests.first)
        let text = String(decoding: sent.body, as: UTF8.self)
        XCTAssertTrue(text.hasSuffix(#","tools":\#(Self.toolsJSON)}"#), "the tools as sent, schema members in order: \(text)")
        XCTAssertEqual(sent.json["tool_choice"] as? String, "required")
        let messages = try XCTUnwrap(sent.json["messages"] as? [[String: Any]])
        XCTAssertEqual(messages.map { $0["role"] as? String }, ["user", "assistant", "tool", "user"])
        XCTAssertTrue(messages[1]["content"] is NSNull)
        let call = try XCTUnwrap((messages[1]["tool_calls"] as? [[String: Any]])?.first)
        XCTAssertEqual(call["id"] as? String, "call_0")
        XCTAssertEqual(call["function"] as? [String: String], ["name": "get_weather", "arguments": #"{"city":"Riyadh"}"#])
        XCTAssertEqual(messages[2]["tool_call_id"] as? String, "call_0")
        XCTAssertEqual(messages[2]["content"] as? String, "31 °C")
    }

    func testAnthropicGetsInputSchemasToolUseAndToolResultBlocksAndItsToolUsesComeBackAsParts() throws {
        let upstream = try fake("/v1/messages", AnthropicPartStreams.thinkingTwoToolUsesAndText)
        defer { upstream.stop() }
        let relay = try startRelay(["RELAY_UPSTREAM": "anthropic", "UPSTREAM_URL": upstream.baseURL, "UPSTREAM_API_KEY": "sk-test",
                                    "UPSTREAM_MODEL": "claude-test"])
        let events = try post(relay, body(model: "claude-test", choice: ["type": "function", "function": ["name": "get_time"]]))
            .readAll(timeout: 20)
        XCTAssertEqual(events.map(\.data), (AnthropicPartStreams.thinkingTwoToolUsesAndTextEvents
                                            + [.done(finishReason: "tool_calls", usage: Usage(promptTokens: 40, completionTokens: 61))]).map(\.json))
        assertSequence(events)

        let sent = try XCTUnwrap(upstream.requests.first)
        let text = String(decoding: sent.body, as: UTF8.self)
        XCTAssertTrue(text.hasSuffix(#","tools":[{"description":"Weather of a city","input_schema":\#(Self.schema),"name":"get_weather"},{"input_schema":\#(Self.schema),"name":"get_time"}]}"#), text)
        XCTAssertTrue(text.contains(#""tool_choice":{"name":"get_time","type":"tool"}"#), text)
        XCTAssertTrue(text.contains(#""messages":[{"content":"Weather in Riyadh?","role":"user"},"#
                                    + #"{"content":[{"id":"call_0","input":{"city":"Riyadh"},"name":"get_weather","type":"tool_use"}],"role":"assistant"},"#
                                    + #"{"content":[{"content":"31 °C","tool_use_id":"call_0","type":"tool_result"}],"role":"user"},"#
                                    + #"{"content":"And the time, and the weather again?","role":"user"}]"#), text)
    }

    /// The owner of an Anthropic answer to a request with tools is killed; the instance that
    /// continues it sends the same tools (schema members in the client's order), tool choice and
    /// blocks with its prefill, read back from the stored request, and the answer ends whole.
    func testAContinuationAfterATakeoverSendsTheSameToolsFromTheStoredRequest() throws {
        var answer = ContinuableAnswerUpstream(tokens: Array(repeating: ContinuableAnswerUpstream.standard.tokens, count: 4).flatMap { $0 })
        answer.pauseMsPerToken = 60
        let upstream = try FakeUpstreamServer(routes: [:])
        defer { upstream.stop() }
        upstream.setResponder("/v1/messages") { [answer] in answer.anthropicScript($0) }
        let env = ["RELAY_UPSTREAM": "anthropic", "UPSTREAM_URL": upstream.baseURL, "UPSTREAM_API_KEY": "sk-test", "UPSTREAM_MODEL": "claude-test"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 }), b = try startRelay(env)
        let token = RelayProcess.token(sub: "tools-take-\(UUID().uuidString.prefix(8))")
        let id = Chat.newID()
        let owner = try post(a, body(model: "claude-test", choice: "auto"), token: token, requestID: id)
        for _ in 0..<10 { _ = try XCTUnwrap(try owner.nextEvent()) }
        let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        _ = try XCTUnwrap(try onB.nextEvent())
        a.kill9()
        owner.close()
        _ = try onB.readAll(timeout: 30)
        let whole = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 10)
        XCTAssertEqual(Chat.text(whole), answer.text, "the whole answer, once")
        XCTAssertGreaterThanOrEqual(upstream.requests.count, 2, "the first call and the continuation")
        for (i, r) in upstream.requests.enumerated() {
            let text = String(decoding: r.body, as: UTF8.self)
            XCTAssertTrue(text.hasSuffix(#""input_schema":\#(Self.schema),"name":"get_time"}]}"#), "call \(i): \(text)")
            XCTAssertTrue(text.contains(#""tool_choice":{"type":"auto"}"#), "call \(i)")
            XCTAssertTrue(text.contains(#"{"content":[{"content":"31 °C","tool_use_id":"call_0","type":"tool_result"}],"role":"user"}"#), "call \(i)")
        }
    }

    func testTheOperatorsAllowlistGatesToolsNotTheConversationAndBadArgumentsAreRefusedBeforeTheCall() throws {
        let openAI = try UpstreamRelayTests.fakeOpenAI(replying: "It is noon.")
        defer { openAI.stop() }
        let strict = try startRelay(["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": openAI.baseURL, "UPSTREAM_MODEL": "gpt-test",
                                     "RELAY_CLIENT_PARAMETERS": "temperature"])
        let refused = try refusal(try post(strict, body(model: "gpt-test")))
        XCTAssertTrue(refused.contains(#""code":"invalid_request""#), refused)
        XCTAssertTrue(refused.contains(#"\"tools\" is not accepted by this relay (RELAY_CLIENT_PARAMETERS: temperature)"#), refused)
        let conversation = try post(strict, body(model: "gpt-test", tools: false)).readAll(timeout: 10)
        XCTAssertEqual(Chat.text(conversation), "It is noon.", "tool messages and calls are the conversation")
        XCTAssertEqual(openAI.requests.count, 1)
        let unanswered = try refusal(try post(strict, body(model: "gpt-test", tools: false, messages: [
            ["role": "user", "content": "hi"], ["role": "tool", "tool_call_id": "call_7", "content": "x"]])))
        XCTAssertTrue(unanswered.contains(#"messages[1].tool_call_id \"call_7\" answers no call of an earlier assistant message"#), unanswered)

        let anthropic = try FakeUpstreamServer(routes: [:])
        defer { anthropic.stop() }
        let relay = try startRelay(["RELAY_UPSTREAM": "anthropic", "UPSTREAM_URL": anthropic.baseURL, "UPSTREAM_MODEL": "claude-test"])
        var messages = Self.messages
        messages[1]["tool_calls"] = [["id": "call_0", "type": "function", "function": ["name": "get_weather", "arguments": "Riyadh"]]]
        let bad = try refusal(try post(relay, body(model: "claude-test", messages: messages)))
        XCTAssertTrue(bad.contains(#"tool call \"call_0\" (get_weather): its arguments are not a JSON object"#), bad)
        XCTAssertEqual(anthropic.requests.count, 0, "refused before any call")
    }
}
