import RelayCore

/// Anthropic Messages streams that carry parts (docs/PROTOCOL.md §5.5): tool use, extended
/// thinking, citations, as SSE response bodies of `POST /v1/messages` with `"stream": true`.
public enum AnthropicPartStreams {
    /// "Streaming Messages", the example "Streaming request with tool use": a text block
    /// ("Okay, let's check the weather for San Francisco, CA:"), then a `tool_use` block
    /// (`get_weather`) whose input arrives as `input_json_delta` pieces (the first one
    /// empty), `stop_reason: "tool_use"`.
    public static let toolUse = #"""
    event: message_start
    data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},"content":[],"stop_reason":null}}

    event: content_block_start
    data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

    event: ping
    data: {"type": "ping"}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":","}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" let"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'s"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" check"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" weather"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" for"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" San"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" Francisco"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":","}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" CA"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":":"}}

    event: content_block_stop
    data: {"type":"content_block_stop","index":0}

    event: content_block_start
    data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"San"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" Francisc"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"o,"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" CA\""}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":", "}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"unit\": \"fah"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"renheit\"}"}}

    event: content_block_stop
    data: {"type":"content_block_stop","index":1}

    event: message_delta
    data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

    event: message_stop
    data: {"type":"message_stop"}


    """#

    /// "Streaming Messages", the example "Streaming request with extended thinking": a
    /// `thinking` block (`thinking_delta` pieces, then a `signature_delta`), then a text
    /// block, `stop_reason: "end_turn"`; no usage in `message_start` or `message_delta`, as
    /// in the example (the relay estimates it).
    public static let extendedThinking = #"""
    event: message_start
    data: {"type": "message_start", "message": {"id": "msg_01JS7jHiU5s8n2VnUY5xBa9v", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null}}

    event: content_block_start
    data: {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}

    event: content_block_delta
    data: {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147"}}

    event: content_block_delta
    data: {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "\n462 = 3 × 147 + 21\n147 = 7 × 21 + 0\n\nSo GCD(1071, 462) = 21"}}

    event: content_block_delta
    data: {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds1mUdVVbQ1Q7bJvN7p8jY4aqPqQ6fR9c"}}

    event: content_block_stop
    data: {"type": "content_block_stop", "index": 0}

    event: content_block_start
    data: {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}

    event: content_block_delta
    data: {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "The greatest common divisor of 1071 and 462 is **21**."}}

    event: content_block_stop
    data: {"type": "content_block_stop", "index": 1}

    event: message_delta
    data: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}}

    event: message_stop
    data: {"type": "message_stop"}


    """#

    /// In the shape of the web search tool's streaming example ("Web search tool",
    /// "Streaming"): the `server_tool_use` block Anthropic runs itself (its
    /// `input_json_delta` pieces), the `web_search_tool_result` block, then text blocks with
    /// `citations_delta`s: a `web_search_result_location` with a URL, the same URL cited
    /// again, and a document's `char_location` (no URL); a `redacted_thinking` block first.
    public static let webSearchWithCitations = #"""
    event: message_start
    data: {"type":"message_start","message":{"id":"msg_01G626jE5dCCVPqswTRVmkXf","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2679,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}}

    event: content_block_start
    data: {"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pLmN3kG2B0="}}

    event: content_block_stop
    data: {"type":"content_block_stop","index":0}

    event: content_block_start
    data: {"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","name":"web_search","input":{}}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\":\"weather NYC today\"}"}}

    event: content_block_stop
    data: {"type":"content_block_stop","index":1}

    event: content_block_start
    data: {"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","content":[{"type":"web_search_result","title":"Weather in New York City in May 2025 (New York)","url":"https://world-weather.info/forecast/usa/new_york/may-2025/","encrypted_content":"Ev0DCioIAxgCIiQ3NmU4ZmI4OC1k","page_age":null}]}}

    event: content_block_stop
    data: {"type":"content_block_stop","index":2}

    event: content_block_start
    data: {"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"Here's the current weather in New York City: "}}

    event: content_block_stop
    data: {"type":"content_block_stop","index":3}

    event: content_block_start
    data: {"type":"content_block_start","index":4,"content_block":{"type":"text","text":"","citations":[]}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":4,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","cited_text":"Partly sunny, high of 68°F.","url":"https://world-weather.info/forecast/usa/new_york/may-2025/","title":"Weather in New York City in May 2025 (New York)","encrypted_index":"Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm"}}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"partly sunny, with a high of 68°F"}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":4,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","cited_text":"High 68°F.","url":"https://world-weather.info/forecast/usa/new_york/may-2025/","title":"Weather in New York City in May 2025 (New York)","encrypted_index":"Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNn"}}}

    event: content_block_delta
    data: {"type":"content_block_delta","index":4,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"The grass is green.","document_index":0,"document_title":"Example Document","start_char_index":0,"end_char_index":20}}}

    event: content_block_stop
    data: {"type":"content_block_stop","index":4}

    event: message_delta
    data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":510,"server_tool_use":{"web_search_requests":1}}}

    event: message_stop
    data: {"type":"message_stop"}


    """#

    /// One SSE event.
    public static func event(_ type: String, _ json: String) -> String {
        "event: \(type)\ndata: \(json)\n\n"
    }

    /// `content_block_start` of `block` (a JSON object's text) at `index`.
    public static func blockStart(_ index: Int, _ block: String) -> String {
        event("content_block_start", "{\"type\":\"content_block_start\",\"index\":\(index),\"content_block\":\(block)}")
    }

    /// `content_block_delta` of `delta` (a JSON object's text) at `index`.
    public static func blockDelta(_ index: Int, _ delta: String) -> String {
        event("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":\(index),\"delta\":\(delta)}")
    }

    /// `content_block_stop` at `index`.
    public static func blockStop(_ index: Int) -> String {
        event("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":\(index)}")
    }

    /// A `tool_use` block's start.
    public static func toolUseStart(_ index: Int, id: String, name: String) -> String {
        blockStart(index, "{\"type\":\"tool_use\",\"id\":\(JSONText.quoted(id)),\"name\":\(JSONText.quoted(name)),\"input\":{}}")
    }

    /// An `input_json_delta` piece (JSON-escaped here).
    public static func inputJSON(_ index: Int, _ partial: String) -> String {
        blockDelta(index, "{\"type\":\"input_json_delta\",\"partial_json\":\(JSONText.quoted(partial))}")
    }

    /// The thinking pieces of `thinkingTwoToolUsesAndText`.
    public static let thinkingPieces = ["The user", " asks for", " weather", " and time", " in Riyadh."]
    /// The text pieces of `thinkingTwoToolUsesAndText`.
    public static let textPieces = ["Checking", " both", " now."]
    /// The two `tool_use` blocks of `thinkingTwoToolUsesAndText`: id, name, `partial_json`
    /// pieces (their concatenation is the input's JSON).
    public static let calls: [(id: String, name: String, pieces: [String])] = [
        ("toolu_01Weather", "get_weather", ["", "{\"", "city", "\": \"", "Riy", "adh", "\", \"", "unit", "\": \"", "c", "\"}"]),
        ("toolu_02Time", "get_time", ["", "{\"zo", "ne\":", " \"Asia", "/Riy", "adh\"", "}"]),
    ]

    /// Each SSE event of an answer with a `thinking` block (`thinking_delta` pieces and a
    /// signature), a text block, and two `tool_use` blocks whose input arrives over many
    /// `input_json_delta` pieces, `stop_reason: "tool_use"`: one string per event.
    public static var thinkingTwoToolUsesAndText: [String] {
        var events = [event("message_start", "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_parts\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-test\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":40,\"output_tokens\":1}}}")]
        events.append(blockStart(0, "{\"type\":\"thinking\",\"thinking\":\"\"}"))
        events += thinkingPieces.map { blockDelta(0, "{\"type\":\"thinking_delta\",\"thinking\":\(JSONText.quoted($0))}") }
        events.append(blockDelta(0, "{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAhIM1gbcDa9GJwZA\"}"))
        events.append(blockStop(0))
        events.append(blockStart(1, "{\"type\":\"text\",\"text\":\"\"}"))
        events += textPieces.map { blockDelta(1, "{\"type\":\"text_delta\",\"text\":\(JSONText.quoted($0))}") }
        events.append(blockStop(1))
        for (k, c) in calls.enumerated() {
            events.append(toolUseStart(2 + k, id: c.id, name: c.name))
            events += c.pieces.map { inputJSON(2 + k, $0) }
            events.append(blockStop(2 + k))
        }
        events.append(event("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":61}}"))
        events.append(event("message_stop", "{\"type\":\"message_stop\"}"))
        return events
    }

    /// The relay events `thinkingTwoToolUsesAndText` maps to, without `done`.
    public static var thinkingTwoToolUsesAndTextEvents: [StreamEvent] {
        var events: [StreamEvent] = thinkingPieces.map { .part(.reasoning($0)) }
        events += textPieces.map { .delta($0) }
        for c in calls {
            events.append(.part(.toolCallStart(id: c.id, name: c.name)))
            events += c.pieces.filter { !$0.isEmpty }.map { .part(.toolCallDelta(id: c.id, arguments: $0)) }
            events.append(.part(.toolCallEnd(id: c.id, name: c.name, input: try! LenientJSON.parse(c.pieces.joined()))))
        }
        return events
    }
}
