import RelayCore

/// OpenAI-compatible chat completion streams that carry parts (docs/PROTOCOL.md §5.5): tool
/// calls and reasoning, as SSE response bodies of `POST /v1/chat/completions` with
/// `"stream": true`.
public enum OpenAIPartStreams {
    /// OpenAI's function-calling guide, "Streaming": the answer to "What's the weather like in
    /// Paris today?" with a `get_weather` tool, as the guide lists its `delta.tool_calls`
    /// (the first piece carries `id`, `type` and `function.name` with empty arguments; the
    /// later ones `id`, `type` and `name` null and a piece of `function.arguments`), each in
    /// its `chat.completion.chunk`, then the chunk with `finish_reason: "tool_calls"`, the
    /// usage chunk (`stream_options.include_usage`) and `[DONE]`.
    public static let functionCallingGuide = #"""
    data: {"id":"chatcmpl-AaDcLTvkAz9cQzJ6rvY2C4TkaAhkd","object":"chat.completion.chunk","created":1733162241,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_831e067d82","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

    data: {"id":"chatcmpl-AaDcLTvkAz9cQzJ6rvY2C4TkaAhkd","object":"chat.completion.chunk","created":1733162241,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_831e067d82","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":null,"type":null,"function":{"name":null,"arguments":"{\""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

    data: {"id":"chatcmpl-AaDcLTvkAz9cQzJ6rvY2C4TkaAhkd","object":"chat.completion.chunk","created":1733162241,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_831e067d82","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":null,"type":null,"function":{"name":null,"arguments":"location"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

    data: {"id":"chatcmpl-AaDcLTvkAz9cQzJ6rvY2C4TkaAhkd","object":"chat.completion.chunk","created":1733162241,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_831e067d82","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":null,"type":null,"function":{"name":null,"arguments":"\":\""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

    data: {"id":"chatcmpl-AaDcLTvkAz9cQzJ6rvY2C4TkaAhkd","object":"chat.completion.chunk","created":1733162241,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_831e067d82","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":null,"type":null,"function":{"name":null,"arguments":"Paris"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

    data: {"id":"chatcmpl-AaDcLTvkAz9cQzJ6rvY2C4TkaAhkd","object":"chat.completion.chunk","created":1733162241,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_831e067d82","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":null,"type":null,"function":{"name":null,"arguments":","}}]},"logprobs":null,"finish_reason":null}],"usage":null}

    data: {"id":"chatcmpl-AaDcLTvkAz9cQzJ6rvY2C4TkaAhkd","object":"chat.completion.chunk","created":1733162241,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_831e067d82","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":null,"type":null,"function":{"name":null,"arguments":" France"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

    data: {"id":"chatcmpl-AaDcLTvkAz9cQzJ6rvY2C4TkaAhkd","object":"chat.completion.chunk","created":1733162241,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_831e067d82","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":null,"type":null,"function":{"name":null,"arguments":"\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

    data: {"id":"chatcmpl-AaDcLTvkAz9cQzJ6rvY2C4TkaAhkd","object":"chat.completion.chunk","created":1733162241,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_831e067d82","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

    data: {"id":"chatcmpl-AaDcLTvkAz9cQzJ6rvY2C4TkaAhkd","object":"chat.completion.chunk","created":1733162241,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_831e067d82","choices":[],"usage":{"prompt_tokens":73,"completion_tokens":16,"total_tokens":89}}

    data: [DONE]


    """#

    /// In the shape DeepSeek's guide "Reasoning Model (deepseek-reasoner)" documents for
    /// streaming (also vLLM's and llama.cpp server's reasoning output): the chain of thought in `delta.reasoning_content` with `content` null, then the answer in
    /// `delta.content` with `reasoning_content` null, `finish_reason: "stop"`, usage, `[DONE]`.
    public static let deepSeekReasoner = #"""
    data: {"id":"5e5e0dfc-6b0f-4a1e-9d55-2c3a8b8f0b11","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_5417b77867_prod0225","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":""},"logprobs":null,"finish_reason":null}]}

    data: {"id":"5e5e0dfc-6b0f-4a1e-9d55-2c3a8b8f0b11","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_5417b77867_prod0225","choices":[{"index":0,"delta":{"content":null,"reasoning_content":"Compare"},"logprobs":null,"finish_reason":null}]}

    data: {"id":"5e5e0dfc-6b0f-4a1e-9d55-2c3a8b8f0b11","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_5417b77867_prod0225","choices":[{"index":0,"delta":{"content":null,"reasoning_content":" 9.11 and 9.8:"},"logprobs":null,"finish_reason":null}]}

    data: {"id":"5e5e0dfc-6b0f-4a1e-9d55-2c3a8b8f0b11","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_5417b77867_prod0225","choices":[{"index":0,"delta":{"content":null,"reasoning_content":" 0.80 > 0.11."},"logprobs":null,"finish_reason":null}]}

    data: {"id":"5e5e0dfc-6b0f-4a1e-9d55-2c3a8b8f0b11","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_5417b77867_prod0225","choices":[{"index":0,"delta":{"content":"9.8","reasoning_content":null},"logprobs":null,"finish_reason":null}]}

    data: {"id":"5e5e0dfc-6b0f-4a1e-9d55-2c3a8b8f0b11","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_5417b77867_prod0225","choices":[{"index":0,"delta":{"content":" is greater.","reasoning_content":null},"logprobs":null,"finish_reason":null}]}

    data: {"id":"5e5e0dfc-6b0f-4a1e-9d55-2c3a8b8f0b11","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_5417b77867_prod0225","choices":[{"index":0,"delta":{"content":"","reasoning_content":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":15,"completion_tokens":12,"total_tokens":27,"completion_tokens_details":{"reasoning_tokens":8}}}

    data: [DONE]


    """#

    /// One chunk of choice 0 with `delta` (a JSON object's text) and `finish_reason`
    /// (`nil`: null).
    public static func chunk(_ delta: String, finish: String? = nil) -> String {
        let reason = finish.map { "\"\($0)\"" } ?? "null"
        return "data: {\"id\":\"chatcmpl-parts\",\"object\":\"chat.completion.chunk\",\"created\":1733162241,\"model\":\"gpt-test\",\"choices\":[{\"index\":0,\"delta\":\(delta),\"logprobs\":null,\"finish_reason\":\(reason)}]}\n\n"
    }

    /// A chunk whose `delta.tool_calls` holds one piece: `index`, and `id` + `name` when
    /// given (the call's first piece), and `arguments` (JSON-escaped here).
    public static func toolCall(index: Int, id: String? = nil, name: String? = nil, arguments: String) -> String {
        var head = "\"index\":\(index)"
        if let id { head += ",\"id\":\(JSONText.quoted(id)),\"type\":\"function\"" }
        let fn = (name.map { "\"name\":\(JSONText.quoted($0))," } ?? "") + "\"arguments\":\(JSONText.quoted(arguments))"
        return chunk("{\"tool_calls\":[{\(head),\"function\":{\(fn)}}]}")
    }

    /// A chunk with a `reasoning_content` piece.
    public static func reasoning(_ text: String) -> String {
        chunk("{\"content\":null,\"reasoning_content\":\(JSONText.quoted(text))}")
    }

    /// A chunk with a `content` piece.
    public static func content(_ text: String) -> String {
        chunk("{\"content\":\(JSONText.quoted(text))}")
    }

    /// The reasoning pieces of `reasoningTwoCallsAndText`.
    public static let reasoningPieces = ["The user", " wants", " weather", " and time", " in Riyadh."]
    /// The text pieces of `reasoningTwoCallsAndText`.
    public static let textPieces = ["Checking", " both", " now."]
    /// The two calls of `reasoningTwoCallsAndText`: id, name, argument pieces (their
    /// concatenation is the arguments' JSON).
    public static let calls: [(id: String, name: String, pieces: [String])] = [
        ("call_weather_1", "get_weather", ["{\"", "city", "\":\"", "Riy", "adh", "\",\"", "unit", "\":\"", "c", "\"}"]),
        ("call_time_2", "get_time", ["{\"", "zone", "\":", " \"Asia", "/Riy", "adh\"", "}"]),
    ]

    /// Each SSE event of an answer with reasoning (`reasoning_content`, DeepSeek style), two
    /// tool calls whose argument pieces interleave by index (many chunks each), then text,
    /// `finish_reason: "tool_calls"`, usage, `[DONE]`: one string per event, so a fake
    /// upstream can send them one by one.
    public static var reasoningTwoCallsAndText: [String] {
        var events = [chunk("{\"role\":\"assistant\",\"content\":null}")]
        events += reasoningPieces.map(reasoning)
        let (a, b) = (calls[0], calls[1])
        events.append(toolCall(index: 0, id: a.id, name: a.name, arguments: ""))
        events.append(toolCall(index: 1, id: b.id, name: b.name, arguments: ""))
        for k in 0..<max(a.pieces.count, b.pieces.count) {
            if k < a.pieces.count { events.append(toolCall(index: 0, arguments: a.pieces[k])) }
            if k < b.pieces.count { events.append(toolCall(index: 1, arguments: b.pieces[k])) }
        }
        events += textPieces.map(content)
        events.append(chunk("{}", finish: "tool_calls"))
        events.append("data: {\"id\":\"chatcmpl-parts\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":61,\"total_tokens\":101}}\n\n")
        events.append("data: [DONE]\n\n")
        return events
    }

    /// The relay events `reasoningTwoCallsAndText` maps to, without `done`: reasoning
    /// pieces, both starts, the argument pieces interleaved as sent, the text, then both
    /// ends at the finish reason in the order the calls started.
    public static var reasoningTwoCallsAndTextEvents: [StreamEvent] {
        var events: [StreamEvent] = reasoningPieces.map { .part(.reasoning($0)) }
        let (a, b) = (calls[0], calls[1])
        events.append(.part(.toolCallStart(id: a.id, name: a.name)))
        events.append(.part(.toolCallStart(id: b.id, name: b.name)))
        for k in 0..<max(a.pieces.count, b.pieces.count) {
            if k < a.pieces.count { events.append(.part(.toolCallDelta(id: a.id, arguments: a.pieces[k]))) }
            if k < b.pieces.count { events.append(.part(.toolCallDelta(id: b.id, arguments: b.pieces[k]))) }
        }
        events += textPieces.map { .delta($0) }
        for c in [a, b] {
            events.append(.part(.toolCallEnd(id: c.id, name: c.name, input: try! LenientJSON.parse(c.pieces.joined()))))
        }
        return events
    }
}
