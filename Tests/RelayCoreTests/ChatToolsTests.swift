import Foundation
import RelayConfiguration
import RelayCore
import XCTest

/// Tools in a request (docs/PROTOCOL.md §3.1): `tools` and `tool_choice` in OpenAI's Chat
/// Completions shape, assistant messages' `tool_calls` and the `tool` messages answering them;
/// every other shape is a 400 naming where it is; the body round-trips (the stored request a
/// takeover continues), the schemas keep their member order, and the prompt estimate counts it all.
final class ChatToolsTests: XCTestCase {
    private static let weather = #"{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","maximum":1.50}},"required":["city"]},"strict":true}}"#
    private static let conversation = #"""
    [{"role":"user","content":"Weather in Riyadh?"},
     {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Riyadh\"}"}}]},
     {"role":"tool","tool_call_id":"call_1","content":"{\"temp\":31}"}]
    """#

    private func parse(_ body: String) throws -> ChatRequest {
        try ChatRequest.parse(Data(body.utf8))
    }

    /// The message of the 400 `parse` throws for `body`, `nil` when it is accepted.
    private func refusal(_ body: String) -> String? {
        do {
            _ = try parse(body)
            return nil
        } catch let e as APIError {
            XCTAssertEqual(e.status, 400)
            XCTAssertEqual(e.code, .invalidRequest)
            return e.message
        } catch {
            return "\(error)"
        }
    }

    private func withTools(_ tools: String, choice: String? = nil) -> String {
        #"{"messages":[{"role":"user","content":"hi"}],"tools":\#(tools)"# + (choice.map { #","tool_choice":\#($0)"# } ?? "") + "}"
    }

    private func withMessages(_ messages: String) -> String { #"{"messages":\#(messages)}"# }

    func testToolsAChoiceACallAndItsResultAreRead() throws {
        let r = try parse(#"{"messages":\#(Self.conversation),"tools":[\#(Self.weather),{"type":"function","function":{"name":"now"}}],"tool_choice":"required"}"#)
        XCTAssertEqual(r.tools.map(\.name), ["get_weather", "now"])
        XCTAssertEqual(r.tools[0].description, "Weather of a city")
        XCTAssertEqual(r.tools[0].strict, true)
        XCTAssertEqual(r.tools[0].parameters?.compactJSON,
                       #"{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","maximum":1.50}},"required":["city"]}"#,
                       "the schema as sent: member order and number literals kept")
        XCTAssertEqual(r.tools[1], ChatTool(name: "now"))
        XCTAssertEqual(r.toolChoice, .required)
        XCTAssertEqual(r.messages[1], ChatMessage(assistant: "", toolCalls: [ChatToolCall(id: "call_1", name: "get_weather", arguments: #"{"city":"Riyadh"}"#)]))
        XCTAssertEqual(r.messages[2], ChatMessage(toolCallID: "call_1", content: #"{"temp":31}"#))
        XCTAssertEqual(r.clientParametersSent, ["tools"])
        XCTAssertEqual(try parse(withTools("[]")).tools, [], "an empty list is no tools")
        XCTAssertEqual(try parse(withTools("null")).clientParametersSent, [])
        XCTAssertEqual(try parse(withTools("[\(Self.weather)]", choice: #"{"type":"function","function":{"name":"get_weather"}}"#)).toolChoice,
                       .function("get_weather"))
        for (text, choice) in [("auto", ToolChoice.auto), ("none", .none), ("required", .required)] {
            XCTAssertEqual(try parse(withTools("[\(Self.weather)]", choice: "\"\(text)\"")).toolChoice, choice)
        }
        // An assistant message may have text and calls; content absent is null.
        let both = try parse(withMessages(#"[{"role":"assistant","content":"Looking.","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":""}}]},{"role":"tool","tool_call_id":"a","content":""}]"#))
        XCTAssertEqual(both.messages[0].content, "Looking.")
        XCTAssertEqual(try parse(withMessages(#"[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}]"#)).messages[0].content, "")
    }

    /// The body a client re-sends and a takeover stores parses back to the same request, the
    /// tools written as their own JSON text (`ChatTool.jsonText`).
    func testTheBodyRoundTripsWithTheToolsAsSent() throws {
        let r = try parse(#"{"messages":\#(Self.conversation),"tools":[\#(Self.weather)],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"temperature":0.5}"#)
        let body = String(decoding: r.jsonBody, as: UTF8.self)
        XCTAssertTrue(body.hasSuffix(#","tools":[\#(Self.weather)]}"#), body)
        XCTAssertTrue(body.contains(#""content":null"#), body)
        XCTAssertEqual(try ChatRequest.parse(r.jsonBody), r)
        XCTAssertEqual(ChatTool.jsonText(r.tools), "[\(Self.weather)]")
    }

    func testEveryToolRuleIsA400NamingTheToolAndTheRule() {
        let shape = #"tools[0] must be {"type": "function", "function": {"name": string, …}}"#
        XCTAssertEqual(refusal(withTools(#"{"type":"function"}"#)), #""tools" must be an array of at most 128 tools"#)
        XCTAssertEqual(refusal(withTools(#"[7]"#)), shape)
        XCTAssertEqual(refusal(withTools(#"[{"type":"retrieval","function":{"name":"f"}}]"#)), shape)
        XCTAssertEqual(refusal(withTools(#"[{"type":"function"}]"#)), shape)
        XCTAssertEqual(refusal(withTools(#"[{"type":"function","function":{"name":"f"},"x":1}]"#)), shape)
        XCTAssertEqual(refusal(withTools(#"[{"type":"function","function":"f"}]"#)), shape)
        XCTAssertEqual(refusal(withTools(#"[{"type":"function","function":{"name":"f","examples":[]}}]"#)),
                       #"tools[0].function has an unknown field "examples" (known: name, description, parameters, strict)"#)
        let name = "tools[1].function.name must be " + ChatTool.nameRule
        for bad in [#""""#, #""get weather""#, #""wetter_für""#, "7", "\"\(String(repeating: "a", count: 65))\""] {
            XCTAssertEqual(refusal(withTools(#"[{"type":"function","function":{"name":"ok"}},{"type":"function","function":{"name":\#(bad)}}]"#)), name, bad)
        }
        XCTAssertNil(refusal(withTools(#"[{"type":"function","function":{"name":"\#(String(repeating: "a", count: 64))"}},{"type":"function","function":{"name":"A-z_09"}}]"#)))
        XCTAssertEqual(refusal(withTools(#"[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}},{"type":"function","function":{"name":"f"}}]"#)),
                       #"tools[2].function.name "f" repeats tools[0]'s: tool names must be unique"#)
        XCTAssertEqual(refusal(withTools(#"[{"type":"function","function":{"name":"f","description":1}}]"#)), "tools[0].function.description must be a string")
        XCTAssertEqual(refusal(withTools(#"[{"type":"function","function":{"name":"f","parameters":"{}"}}]"#)),
                       "tools[0].function.parameters must be a JSON object (a JSON Schema)")
        XCTAssertEqual(refusal(withTools(#"[{"type":"function","function":{"name":"f","parameters":[]}}]"#)),
                       "tools[0].function.parameters must be a JSON object (a JSON Schema)")
        XCTAssertEqual(refusal(withTools(#"[{"type":"function","function":{"name":"f","strict":"yes"}}]"#)), "tools[0].function.strict must be true or false")

        let many = (0...128).map { #"{"type":"function","function":{"name":"f\#($0)"}}"# }
        XCTAssertEqual(refusal(withTools("[\(many.joined(separator: ","))]")), #""tools" has 129 tools, at most 128"#)
        XCTAssertNil(refusal(withTools("[\(many.dropLast().joined(separator: ","))]")), "128 is fine")
        func sized(_ n: Int) -> String { #"[{"type":"function","function":{"name":"big","description":"\#(String(repeating: "d", count: n))"}}]"# }
        let fits = sized(ChatTool.maxJSONBytes - sized(0).utf8.count)
        XCTAssertEqual(fits.utf8.count, ChatTool.maxJSONBytes)
        XCTAssertNil(refusal(withTools(fits)), "256 KiB is fine")
        let over = sized(ChatTool.maxJSONBytes - sized(0).utf8.count + 1)
        XCTAssertEqual(refusal(withTools(over)), "\"tools\" takes \(ChatTool.maxJSONBytes + 1) bytes of JSON, at most \(ChatTool.maxJSONBytes)")
    }

    func testEveryToolChoiceRuleIsA400() {
        let tools = "[\(Self.weather)]"
        let shape = #""tool_choice" must be "auto", "none", "required" or {"type": "function", "function": {"name": string}}"#
        for bad in [#""any""#, "true", #"{"type":"function"}"#, #"{"type":"tool","function":{"name":"get_weather"}}"#,
                    #"{"type":"function","function":{"name":"get_weather","x":1}}"#, #"{"type":"function","function":{"name":7}}"#] {
            XCTAssertEqual(refusal(withTools(tools, choice: bad)), shape, bad)
        }
        XCTAssertEqual(refusal(withTools(tools, choice: #"{"type":"function","function":{"name":"get_time"}}"#)),
                       #""tool_choice" names "get_time", which is not one of "tools""#)
        XCTAssertEqual(refusal(withTools("[]", choice: #""auto""#)), #""tool_choice" needs "tools""#)
        XCTAssertEqual(refusal(#"{"messages":[{"role":"user","content":"hi"}],"tool_choice":"none"}"#), #""tool_choice" needs "tools""#)
    }

    func testEveryToolMessageAndToolCallRuleIsA400NamingTheMessage() {
        let call = #"{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}"#
        let asked = #"{"role":"assistant","content":null,"tool_calls":[\#(call)]}"#
        let shape = #"messages[1].tool_calls[0] must be {"id": string, "type": "function", "function": {"name": string, "arguments": string}}"#
        func calls(_ c: String) -> String { withMessages(#"[{"role":"user","content":"hi"},{"role":"assistant","content":"","tool_calls":\#(c)}]"#) }
        XCTAssertEqual(refusal(calls("{}")), "messages[1].tool_calls must be an array of at most 128 calls")
        XCTAssertEqual(refusal(calls("[" + Array(repeating: call, count: 129).joined(separator: ",") + "]")),
                       "messages[1].tool_calls must be an array of at most 128 calls")
        XCTAssertEqual(refusal(calls(#"[{"id":"a","type":"function","function":{"name":"f"}}]"#)), shape)
        XCTAssertEqual(refusal(calls(#"[{"id":"a","type":"custom","function":{"name":"f","arguments":"{}"}}]"#)), shape)
        XCTAssertEqual(refusal(calls(#"[{"type":"function","function":{"name":"f","arguments":"{}"}}]"#)), shape)
        XCTAssertEqual(refusal(calls(#"[{"id":"a","type":"function","function":{"name":"f","arguments":{"city":"Riyadh"}}}]"#)),
                       "messages[1].tool_calls[0].function.arguments must be a string (the arguments as JSON text)")
        XCTAssertEqual(refusal(calls(#"[{"id":"","type":"function","function":{"name":"f","arguments":"{}"}}]"#)),
                       "messages[1].tool_calls[0].id must be 1 to 256 bytes")
        XCTAssertEqual(refusal(calls(#"[{"id":"a","type":"function","function":{"name":"f g","arguments":"{}"}}]"#)),
                       "messages[1].tool_calls[0].function.name must be " + ChatTool.nameRule)
        XCTAssertEqual(refusal(calls("[\(call),\(call)]")), #"messages[1]: tool call id "call_1" repeats an earlier call's"#)
        XCTAssertEqual(refusal(withMessages(#"[{"role":"user","content":"hi","tool_calls":[\#(call)]}]"#)),
                       "messages[0]: only assistant messages have tool_calls")
        XCTAssertEqual(refusal(withMessages(#"[{"role":"assistant","content":null}]"#)),
                       #"messages[0] must be {"role": string, "content": string or array of parts}"#, "null content needs tool calls")
        XCTAssertEqual(refusal(withMessages(#"[{"role":"assistant","tool_calls":[]}]"#)),
                       #"messages[0] must be {"role": string, "content": string or array of parts}"#)
        XCTAssertEqual(refusal(withMessages(#"[{"role":"assistant","content":"x","tool_calls":[\#(call)],"name":"bot"}]"#)),
                       "messages[0] has an unknown field")

        let toolShape = #"messages[1] must be {"role": "tool", "tool_call_id": string, "content": string}"#
        XCTAssertEqual(refusal(withMessages(#"[\#(asked),{"role":"tool","content":"ok"}]"#)), toolShape)
        XCTAssertEqual(refusal(withMessages(#"[\#(asked),{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"ok"}]}]"#)), toolShape)
        XCTAssertEqual(refusal(withMessages(#"[\#(asked),{"role":"tool","tool_call_id":"call_1","content":"ok","name":"f"}]"#)), toolShape)
        XCTAssertEqual(refusal(withMessages(#"[\#(asked),{"role":"tool","tool_call_id":"","content":"ok"}]"#)),
                       "messages[1].tool_call_id must be 1 to 256 bytes")
        XCTAssertEqual(refusal(withMessages(#"[\#(asked),{"role":"tool","tool_call_id":"call_2","content":"ok"}]"#)),
                       #"messages[1].tool_call_id "call_2" answers no call of an earlier assistant message"#)
        XCTAssertEqual(refusal(withMessages(#"[{"role":"tool","tool_call_id":"call_1","content":"ok"},\#(asked)]"#)),
                       #"messages[0].tool_call_id "call_1" answers no call of an earlier assistant message"#, "the call must come first")
        XCTAssertEqual(refusal(withMessages(#"[\#(asked),{"role":"tool","tool_call_id":"call_1","content":"a"},{"role":"tool","tool_call_id":"call_1","content":"b"}]"#)),
                       #"messages[2].tool_call_id "call_1" answers a call an earlier tool message answered"#)
        XCTAssertEqual(refusal(withMessages(#"[{"role":"user","content":"hi","tool_call_id":"call_1"}]"#)), "messages[0] has an unknown field")
        XCTAssertEqual(refusal(withMessages(#"[{"role":"function","content":"x"}]"#)), "messages[0].role must be system, user, assistant or tool")
        XCTAssertEqual(refusal(#"{"messages":[{"role":"user","content":"hi"}],"functions":[]}"#), #"unknown field "functions""#)
    }

    /// The prompt estimate (docs/PROTOCOL.md §9.2) counts the tools' JSON, each call's name and
    /// arguments, and tool messages' content.
    func testThePromptEstimateCountsToolsCallsAndResults() throws {
        let r = try parse(#"{"messages":\#(Self.conversation),"tools":[\#(Self.weather)]}"#)
        let text = ChatRequest.estimatePromptTokens(["Weather in Riyadh?", #"get_weather{"city":"Riyadh"}"#, #"{"temp":31}"#])
        let tools = (Self.weather.utf8.count + 2 + 3) / 4
        XCTAssertEqual(ChatRequest.estimateToolTokens(r.tools), tools)
        XCTAssertEqual(r.estimatedPromptTokens, text + tools)
        XCTAssertEqual(ChatRequest.estimateToolTokens([]), 0)
        XCTAssertEqual(r.estimatedPromptTokens(continuing: "It is"), text + tools + ChatRequest.estimatePromptTokens(["It is"]),
                       "a continuation re-sends the tools too")
    }

    func testTheOperatorsAllowlistKnowsToolsAndAllowsThemByDefault() throws {
        XCTAssertTrue(ChatRequest.clientParameterNames.contains("tools"))
        let c = try RelayConfig.load(environment: [:], arguments: [], defaultWorkers: 1)
        XCTAssertTrue(c.clientParameters.contains("tools"), "agent apps need them")
        XCTAssertEqual(try RelayConfig.load(environment: ["RELAY_CLIENT_PARAMETERS": "tools,images"], arguments: [], defaultWorkers: 1).clientParameters,
                       ["tools", "images"])
        let onlyChoice = try parse(withTools("[\(Self.weather)]", choice: #""none""#))
        XCTAssertEqual(onlyChoice.clientParametersSent, ["tools"])
        let conversationOnly = try parse(withMessages(Self.conversation))
        XCTAssertEqual(conversationOnly.clientParametersSent, [], "tool messages and calls are the conversation, not gated")
    }
}
