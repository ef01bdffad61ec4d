import Foundation
import RelayCore
@testable import RelayUpstream
import XCTest

/// A request's tools, tool choice, assistant tool calls and tool results reach each upstream in
/// its API's shape (docs/UPSTREAMS.md): OpenAI-compatible servers get them as sent; the
/// Anthropic Messages API gets `tools` with `input_schema`, its own `tool_choice`, `tool_use`
/// and `tool_result` blocks, and a call whose arguments are not a JSON object is refused before
/// any call; an ai-sdk backend gets the calls as the AI SDK's tool parts.
final class ToolForwardingTests: XCTestCase {
    private static let schema = try! LenientJSON.parse(#"{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","maximum":1.50}},"required":["city"]}"#)
    private static let weather = ChatTool(name: "get_weather", description: "Weather of a city", parameters: schema, strict: true)
    private static let conversation = [
        ChatMessage(role: "system", content: "be brief"),
        ChatMessage(role: "user", content: "Weather in Riyadh and Jeddah?"),
        ChatMessage(assistant: "Let me check.", toolCalls: [ChatToolCall(id: "call_1", name: "get_weather", arguments: #"{"city":"Riyadh"}"#),
                                                            ChatToolCall(id: "call_2", name: "get_weather", arguments: #" {"city": "Jeddah", "days": 2} "#)]),
        ChatMessage(toolCallID: "call_1", content: "31 °C"),
        ChatMessage(toolCallID: "call_2", content: ""),
        ChatMessage(role: "user", content: "And now?"),
        ChatMessage(assistant: "", toolCalls: [ChatToolCall(id: "call_3", name: "now", arguments: "")]),
    ]

    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    func testAnOpenAICompatibleUpstreamGetsToolsCallsAndResultsAsSent() {
        let body = OpenAIDialect.body(model: "gpt-test", messages: Self.conversation, maxTokens: 100, summaryInstruction: nil,
                                      tools: [Self.weather, ChatTool(name: "now")], toolChoice: .function("now"))
        XCTAssertEqual(text(body), #"{"max_tokens":100,"messages":["#
            + #"{"content":"be brief","role":"system"},{"content":"Weather in Riyadh and Jeddah?","role":"user"},"#
            + #"{"content":"Let me check.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\":\"Riyadh\"}","name":"get_weather"},"id":"call_1","type":"function"},"#
            + #"{"function":{"arguments":" {\"city\": \"Jeddah\", \"days\": 2} ","name":"get_weather"},"id":"call_2","type":"function"}]},"#
            + #"{"content":"31 °C","role":"tool","tool_call_id":"call_1"},{"content":"","role":"tool","tool_call_id":"call_2"},"#
            + #"{"content":"And now?","role":"user"},"#
            + #"{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"","name":"now"},"id":"call_3","type":"function"}]}],"#
            + #""model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"#
            + #""tool_choice":{"function":{"name":"now"},"type":"function"},"#
            + #""tools":[{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","maximum":1.50}},"required":["city"]},"strict":true}},"#
            + #"{"type":"function","function":{"name":"now"}}]}"#)
        for (choice, json) in [(ToolChoice.auto, #""auto""#), (.none, #""none""#), (.required, #""required""#)] {
            let b = text(OpenAIDialect.body(model: "m", messages: [ChatMessage(role: "user", content: "hi")], maxTokens: nil,
                                            summaryInstruction: nil, tools: [ChatTool(name: "now")], toolChoice: choice))
            XCTAssertTrue(b.contains(#","tool_choice":\#(json),"tools":[{"type":"function","function":{"name":"now"}}]}"#), b)
        }
        let plain = text(OpenAIDialect.body(model: "m", messages: [ChatMessage(role: "user", content: "hi")], maxTokens: nil, summaryInstruction: nil))
        XCTAssertFalse(plain.contains("tool"), plain)
    }

    func testAnthropicGetsToolsWithInputSchemasToolUseAndToolResultBlocks() {
        let body = AnthropicDialect.body(model: "claude-test", messages: Self.conversation, maxTokens: 100, summaryInstruction: nil,
                                         tools: [Self.weather, ChatTool(name: "now")], toolChoice: .required)
        XCTAssertEqual(text(body), #"{"max_tokens":100,"messages":[{"content":"Weather in Riyadh and Jeddah?","role":"user"},"#
            + #"{"content":[{"text":"Let me check.","type":"text"},"#
            + #"{"id":"call_1","input":{"city":"Riyadh"},"name":"get_weather","type":"tool_use"},"#
            + #"{"id":"call_2","input":{"city":"Jeddah","days":2},"name":"get_weather","type":"tool_use"}],"role":"assistant"},"#
            + #"{"content":[{"content":"31 °C","tool_use_id":"call_1","type":"tool_result"},{"tool_use_id":"call_2","type":"tool_result"}],"role":"user"},"#
            + #"{"content":"And now?","role":"user"},"#
            + #"{"content":[{"id":"call_3","input":{},"name":"now","type":"tool_use"}],"role":"assistant"}],"#
            + #""model":"claude-test","stream":true,"system":"be brief","tool_choice":{"type":"any"},"#
            + #""tools":[{"description":"Weather of a city","input_schema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","maximum":1.50}},"required":["city"]},"name":"get_weather"},"#
            + #"{"input_schema":{"type":"object"},"name":"now"}]}"#)
        for (choice, json) in [(ToolChoice.auto, #"{"type":"auto"}"#), (.none, #"{"type":"none"}"#), (.function("now"), #"{"name":"now","type":"tool"}"#)] {
            let b = text(AnthropicDialect.body(model: "m", messages: [ChatMessage(role: "user", content: "hi")], maxTokens: 9,
                                               summaryInstruction: nil, tools: [ChatTool(name: "now")], toolChoice: choice))
            XCTAssertTrue(b.contains(#""tool_choice":\#(json),"tools":[{"input_schema":{"type":"object"},"name":"now"}]}"#), b)
        }
    }

    /// A prefill continuation (a takeover) sends the same tools and blocks, the answer so far last.
    func testAnAnthropicContinuationKeepsTheTools() {
        let b = text(AnthropicDialect.body(model: "m", messages: Array(Self.conversation.prefix(5)), maxTokens: 9, summaryInstruction: nil,
                                           prefill: "Riyadh is", tools: [Self.weather]))
        XCTAssertTrue(b.contains(#"{"content":"Riyadh is","role":"assistant"}],"#), b)
        XCTAssertTrue(b.hasSuffix(#""name":"get_weather"}]}"#), b)
    }

    func testAnthropicRefusesArgumentsThatAreNotAJSONObjectBeforeAnyCall() throws {
        let factory = HTTPUpstreamFactory(.anthropic, config: HTTPUpstreamConfig(baseURL: "http://127.0.0.1:9", apiKey: ""))
        func refusal(_ arguments: String) -> String? {
            let req = ChatRequest(messages: [ChatMessage(role: "user", content: "hi"),
                                             ChatMessage(assistant: "", toolCalls: [ChatToolCall(id: "call_9", name: "f", arguments: arguments)]),
                                             ChatMessage(toolCallID: "call_9", content: "ok")], model: "m")
            do { _ = try factory.prepare(req); return nil } catch let e as APIError { return e.message } catch { return "\(error)" }
        }
        let why = #"tool call "call_9" (f): its arguments are not a JSON object, which the anthropic upstream needs as the call's input"#
        XCTAssertEqual(refusal(#"{"city":"#), why)
        XCTAssertEqual(refusal("Riyadh"), why)
        XCTAssertEqual(refusal("[1,2]"), why)
        XCTAssertEqual(refusal("42"), why)
        XCTAssertNil(refusal(#"{"city":"Riyadh"}"#))
        XCTAssertNil(refusal(" \n"), "blank arguments are an empty input")
        let openAI = HTTPUpstreamFactory(.openAI, config: HTTPUpstreamConfig(baseURL: "http://127.0.0.1:9", apiKey: ""))
        XCTAssertNoThrow(try openAI.prepare(ChatRequest(messages: [ChatMessage(assistant: "", toolCalls: [ChatToolCall(id: "c", name: "f", arguments: "Riyadh")])],
                                                        model: "m")), "OpenAI takes the arguments as a string")
    }

    /// The Responses upstream's body carries no tools: a request with any is refused before the
    /// call rather than sent without them.
    func testTheOpenAIResponsesUpstreamRefusesToolsAndToolMessagesBeforeAnyCall() {
        let factory = HTTPUpstreamFactory(.openAIResponses, config: HTTPUpstreamConfig(baseURL: "http://127.0.0.1:9", apiKey: ""))
        func refusal(_ req: ChatRequest) -> String? {
            do { _ = try factory.prepare(req); return nil } catch let e as APIError { return e.message } catch { return "\(error)" }
        }
        let hi = ChatMessage(role: "user", content: "hi")
        XCTAssertEqual(refusal(ChatRequest(messages: [hi], model: "m", tools: [ChatTool(name: "now")])),
                       #""tools" is not supported by the openai-responses upstream"#)
        XCTAssertEqual(refusal(ChatRequest(messages: Array(Self.conversation.prefix(4)), model: "m")),
                       "tool calls and tool messages are not supported by the openai-responses upstream")
        XCTAssertNil(refusal(ChatRequest(messages: [hi], model: "m")))
    }

    /// An ai-sdk backend gets each call as a `tool-<name>` part of the assistant message, with
    /// its result when a tool message answered it; the tool messages themselves are folded in.
    func testAnAISDKBackendGetsToolPartsWithTheirOutputs() throws {
        let body = UIMessageStreamDialect.body(requestID: "r1", messages: Array(Self.conversation.dropFirst()), model: nil, maxTokens: nil,
                                               summary: false)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let messages = try XCTUnwrap(json["messages"] as? [[String: Any]])
        XCTAssertEqual(messages.map { $0["id"] as? String }, ["m1", "m2", "m3", "m4"])
        XCTAssertEqual(messages.map { $0["role"] as? String }, ["user", "assistant", "user", "assistant"])
        let parts = try XCTUnwrap(messages[1]["parts"] as? [[String: Any]])
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(parts[0]["text"] as? String, "Let me check.")
        XCTAssertEqual(parts[1]["type"] as? String, "tool-get_weather")
        XCTAssertEqual(parts[1]["toolCallId"] as? String, "call_1")
        XCTAssertEqual(parts[1]["state"] as? String, "output-available")
        XCTAssertEqual(parts[1]["input"] as? [String: String], ["city": "Riyadh"])
        XCTAssertEqual(parts[1]["output"] as? String, "31 °C")
        XCTAssertEqual(parts[2]["toolCallId"] as? String, "call_2")
        XCTAssertEqual(parts[2]["output"] as? String, "")
        let last = try XCTUnwrap(messages[3]["parts"] as? [[String: Any]])
        XCTAssertEqual(last.count, 1, "no empty text part")
        XCTAssertEqual(last[0]["type"] as? String, "tool-now")
        XCTAssertEqual(last[0]["state"] as? String, "input-available", "no tool message answered it")
        XCTAssertNil(last[0]["output"])
        XCTAssertEqual((last[0]["input"] as? [String: Any])?.isEmpty, true)
        XCTAssertFalse(String(decoding: body, as: UTF8.self).contains("\"tools\""))
    }
}
