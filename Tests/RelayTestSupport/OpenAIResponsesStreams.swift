import RelayCore

/// Response bodies of OpenAI's `POST /v1/responses` with `"stream": true` (API reference
/// "Streaming events"): `event: <type>` + `data: {"type":"<type>","sequence_number",…}`, no
/// `[DONE]`.
public enum OpenAIResponsesStreams {
    /// The function-calling guide's streaming example for the Responses API ("What's the
    /// weather like in Paris today?" → `get_weather`): the `function_call` item added with its
    /// `call_id` and `name`, the arguments in `response.function_call_arguments.delta` pieces,
    /// `.done` with the whole arguments, the item done; around it `response.created`,
    /// `response.in_progress` and `response.completed` with the usage.
    public static let functionCallingGuide = #"""
    event: response.created
    data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1234xyz","object":"response","created_at":1741476542,"status":"in_progress","model":"gpt-4.1-2025-04-14","output":[],"usage":null}}

    event: response.in_progress
    data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1234xyz","object":"response","created_at":1741476542,"status":"in_progress","model":"gpt-4.1-2025-04-14","output":[],"usage":null}}

    event: response.output_item.added
    data: {"type":"response.output_item.added","sequence_number":2,"response_id":"resp_1234xyz","output_index":0,"item":{"type":"function_call","id":"fc_1234xyz","call_id":"call_1234xyz","name":"get_weather","arguments":"","status":"in_progress"}}

    event: response.function_call_arguments.delta
    data: {"type":"response.function_call_arguments.delta","sequence_number":3,"response_id":"resp_1234xyz","item_id":"fc_1234xyz","output_index":0,"delta":"{\""}

    event: response.function_call_arguments.delta
    data: {"type":"response.function_call_arguments.delta","sequence_number":4,"response_id":"resp_1234xyz","item_id":"fc_1234xyz","output_index":0,"delta":"location"}

    event: response.function_call_arguments.delta
    data: {"type":"response.function_call_arguments.delta","sequence_number":5,"response_id":"resp_1234xyz","item_id":"fc_1234xyz","output_index":0,"delta":"\":\""}

    event: response.function_call_arguments.delta
    data: {"type":"response.function_call_arguments.delta","sequence_number":6,"response_id":"resp_1234xyz","item_id":"fc_1234xyz","output_index":0,"delta":"Paris"}

    event: response.function_call_arguments.delta
    data: {"type":"response.function_call_arguments.delta","sequence_number":7,"response_id":"resp_1234xyz","item_id":"fc_1234xyz","output_index":0,"delta":","}

    event: response.function_call_arguments.delta
    data: {"type":"response.function_call_arguments.delta","sequence_number":8,"response_id":"resp_1234xyz","item_id":"fc_1234xyz","output_index":0,"delta":" France"}

    event: response.function_call_arguments.delta
    data: {"type":"response.function_call_arguments.delta","sequence_number":9,"response_id":"resp_1234xyz","item_id":"fc_1234xyz","output_index":0,"delta":"\"}"}

    event: response.function_call_arguments.done
    data: {"type":"response.function_call_arguments.done","sequence_number":10,"response_id":"resp_1234xyz","item_id":"fc_1234xyz","output_index":0,"arguments":"{\"location\":\"Paris, France\"}"}

    event: response.output_item.done
    data: {"type":"response.output_item.done","sequence_number":11,"response_id":"resp_1234xyz","output_index":0,"item":{"type":"function_call","id":"fc_1234xyz","call_id":"call_1234xyz","name":"get_weather","arguments":"{\"location\":\"Paris, France\"}","status":"completed"}}

    event: response.completed
    data: {"type":"response.completed","sequence_number":12,"response":{"id":"resp_1234xyz","object":"response","created_at":1741476542,"status":"completed","model":"gpt-4.1-2025-04-14","output":[{"type":"function_call","id":"fc_1234xyz","call_id":"call_1234xyz","name":"get_weather","arguments":"{\"location\":\"Paris, France\"}","status":"completed"}],"usage":{"input_tokens":291,"input_tokens_details":{"cached_tokens":0},"output_tokens":23,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":314}}}


    """#

    /// In the shape the reasoning guide ("Reasoning summaries") and the web search tool
    /// document: a `reasoning` item whose summary arrives in two parts, a hosted
    /// `web_search_call` item, then a message whose `output_text` deltas carry a
    /// `url_citation` annotation; `response.completed` with the usage.
    public static let reasoningSummaryAndCitation = #"""
    event: response.created
    data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_68af","object":"response","status":"in_progress","model":"o4-mini-2025-04-16","output":[],"usage":null}}

    event: response.output_item.added
    data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"rs_68af","type":"reasoning","summary":[]}}

    event: response.reasoning_summary_part.added
    data: {"type":"response.reasoning_summary_part.added","sequence_number":2,"item_id":"rs_68af","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}

    event: response.reasoning_summary_text.delta
    data: {"type":"response.reasoning_summary_text.delta","sequence_number":3,"item_id":"rs_68af","output_index":0,"summary_index":0,"delta":"**Checking the forecast**"}

    event: response.reasoning_summary_text.done
    data: {"type":"response.reasoning_summary_text.done","sequence_number":4,"item_id":"rs_68af","output_index":0,"summary_index":0,"text":"**Checking the forecast**"}

    event: response.reasoning_summary_part.added
    data: {"type":"response.reasoning_summary_part.added","sequence_number":5,"item_id":"rs_68af","output_index":0,"summary_index":1,"part":{"type":"summary_text","text":""}}

    event: response.reasoning_summary_text.delta
    data: {"type":"response.reasoning_summary_text.delta","sequence_number":6,"item_id":"rs_68af","output_index":0,"summary_index":1,"delta":"I'll search"}

    event: response.reasoning_summary_text.delta
    data: {"type":"response.reasoning_summary_text.delta","sequence_number":7,"item_id":"rs_68af","output_index":0,"summary_index":1,"delta":" for today."}

    event: response.output_item.done
    data: {"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"id":"rs_68af","type":"reasoning","summary":[{"type":"summary_text","text":"**Checking the forecast**"},{"type":"summary_text","text":"I'll search for today."}]}}

    event: response.output_item.added
    data: {"type":"response.output_item.added","sequence_number":9,"output_index":1,"item":{"id":"ws_68af","type":"web_search_call","status":"in_progress"}}

    event: response.web_search_call.completed
    data: {"type":"response.web_search_call.completed","sequence_number":10,"output_index":1,"item_id":"ws_68af"}

    event: response.output_item.done
    data: {"type":"response.output_item.done","sequence_number":11,"output_index":1,"item":{"id":"ws_68af","type":"web_search_call","status":"completed","action":{"type":"search","query":"weather Paris today"}}}

    event: response.output_item.added
    data: {"type":"response.output_item.added","sequence_number":12,"output_index":2,"item":{"id":"msg_68af","type":"message","status":"in_progress","content":[],"role":"assistant"}}

    event: response.content_part.added
    data: {"type":"response.content_part.added","sequence_number":13,"item_id":"msg_68af","output_index":2,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}

    event: response.output_text.delta
    data: {"type":"response.output_text.delta","sequence_number":14,"item_id":"msg_68af","output_index":2,"content_index":0,"delta":"Sunny, 24 °C"}

    event: response.output_text.annotation.added
    data: {"type":"response.output_text.annotation.added","sequence_number":15,"item_id":"msg_68af","output_index":2,"content_index":0,"annotation_index":0,"annotation":{"type":"url_citation","start_index":0,"end_index":12,"url":"https://weather.example.com/paris","title":"Paris weather today"}}

    event: response.output_text.delta
    data: {"type":"response.output_text.delta","sequence_number":16,"item_id":"msg_68af","output_index":2,"content_index":0,"delta":" in Paris."}

    event: response.output_text.done
    data: {"type":"response.output_text.done","sequence_number":17,"item_id":"msg_68af","output_index":2,"content_index":0,"text":"Sunny, 24 °C in Paris."}

    event: response.output_item.done
    data: {"type":"response.output_item.done","sequence_number":18,"output_index":2,"item":{"id":"msg_68af","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"Sunny, 24 °C in Paris."}]}}

    event: response.completed
    data: {"type":"response.completed","sequence_number":19,"response":{"id":"resp_68af","object":"response","status":"completed","model":"o4-mini-2025-04-16","usage":{"input_tokens":320,"output_tokens":148,"output_tokens_details":{"reasoning_tokens":128},"total_tokens":468}}}


    """#

    /// One SSE event of `type` with `fields` (JSON members' text, after `type` and the
    /// sequence number).
    public static func event(_ type: String, _ seq: Int, _ fields: String) -> String {
        "event: \(type)\ndata: {\"type\":\"\(type)\",\"sequence_number\":\(seq),\(fields)}\n\n"
    }

    /// Each SSE event of an answer with a reasoning summary (pieces), two function calls
    /// whose argument deltas interleave by `output_index` (many events each), then text and
    /// `response.completed` with usage: one string per event. It reuses the pieces of
    /// `OpenAIPartStreams` (`reasoningPieces`, `calls`, `textPieces`).
    public static var reasoningTwoCallsAndText: [String] {
        let p = OpenAIPartStreams.self
        var seq = 0
        func next(_ type: String, _ fields: String) -> String {
            seq += 1
            return event(type, seq, fields)
        }
        var events = [next("response.created", "\"response\":{\"id\":\"resp_parts\",\"status\":\"in_progress\",\"output\":[]}")]
        events.append(next("response.output_item.added", "\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}"))
        events += p.reasoningPieces.map {
            next("response.reasoning_summary_text.delta", "\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":0,\"delta\":\(JSONText.quoted($0))")
        }
        let (a, b) = (p.calls[0], p.calls[1])
        for (k, c) in [a, b].enumerated() {
            events.append(next("response.output_item.added",
                               "\"output_index\":\(k + 1),\"item\":{\"type\":\"function_call\",\"id\":\"fc_\(k)\",\"call_id\":\(JSONText.quoted(c.id)),\"name\":\(JSONText.quoted(c.name)),\"arguments\":\"\"}"))
        }
        for k in 0..<max(a.pieces.count, b.pieces.count) {
            for (i, c) in [a, b].enumerated() where k < c.pieces.count {
                events.append(next("response.function_call_arguments.delta",
                                   "\"item_id\":\"fc_\(i)\",\"output_index\":\(i + 1),\"delta\":\(JSONText.quoted(c.pieces[k]))"))
            }
        }
        events.append(next("response.output_item.added", "\"output_index\":3,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}"))
        events += p.textPieces.map {
            next("response.output_text.delta", "\"item_id\":\"msg_1\",\"output_index\":3,\"content_index\":0,\"delta\":\(JSONText.quoted($0))")
        }
        for (i, c) in [a, b].enumerated() {
            events.append(next("response.function_call_arguments.done",
                               "\"item_id\":\"fc_\(i)\",\"output_index\":\(i + 1),\"arguments\":\(JSONText.quoted(c.pieces.joined()))"))
        }
        events.append(next("response.completed", "\"response\":{\"id\":\"resp_parts\",\"status\":\"completed\",\"usage\":{\"input_tokens\":40,\"output_tokens\":61,\"total_tokens\":101}}"))
        return events
    }

    /// The relay events `reasoningTwoCallsAndText` maps to, without `done`: the reasoning, both
    /// starts, the argument pieces as sent, the text, then each end at its
    /// `function_call_arguments.done`.
    public static var reasoningTwoCallsAndTextEvents: [StreamEvent] {
        let p = OpenAIPartStreams.self
        var events: [StreamEvent] = p.reasoningPieces.map { .part(.reasoning($0)) }
        let (a, b) = (p.calls[0], p.calls[1])
        events += [.part(.toolCallStart(id: a.id, name: a.name)), .part(.toolCallStart(id: b.id, name: b.name))]
        for k in 0..<max(a.pieces.count, b.pieces.count) {
            for c in [a, b] where k < c.pieces.count { events.append(.part(.toolCallDelta(id: c.id, arguments: c.pieces[k]))) }
        }
        events += p.textPieces.map { .delta($0) }
        for c in [a, b] {
            events.append(.part(.toolCallEnd(id: c.id, name: c.name, input: try! LenientJSON.parse(c.pieces.joined()))))
        }
        return events
    }
}
