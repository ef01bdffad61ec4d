/// Response bodies of Anthropic's `POST /v1/messages` with `"stream": true`, written from the
/// "Streaming Messages" documentation: `event: <type>` + `data: {"type":"<type>",…}` for
/// message_start, content_block_start, ping, content_block_delta (text_delta),
/// content_block_stop, message_delta (stop_reason, cumulative usage), message_stop; and the
/// `error` event and error bodies from the "Errors" page.
public enum AnthropicFixtures {
    public static func event(_ type: String, _ json: String) -> String {
        "event: \(type)\ndata: \(json)\n\n"
    }

    public static func messageStart(input: Int) -> String {
        event("message_start", "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":\(input),\"output_tokens\":1}}}")
    }

    public static let blockStart = event("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}")
    public static let ping = event("ping", "{\"type\": \"ping\"}")
    public static let blockStop = event("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
    public static let messageStop = event("message_stop", "{\"type\":\"message_stop\"}")

    public static func text(_ t: String) -> String {
        event("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\(t)\"}}")
    }

    public static func messageDelta(stop: String, output: Int) -> String {
        event("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"\(stop)\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":\(output)}}")
    }

    public static let pieces = ["Hello", "! Clause", " 3", " — ملخّص", " 🇸🇦"]

    /// A whole, normal stream.
    public static var normal: String {
        messageStart(input: 25) + blockStart + ping + pieces.map(text).joined() + blockStop
            + messageDelta(stop: "end_turn", output: 15) + messageStop
    }

    /// Stopped by max_tokens.
    public static var maxTokens: String {
        messageStart(input: 10) + blockStart + text("Trunc") + blockStop + messageDelta(stop: "max_tokens", output: 1) + messageStop
    }

    /// An `error` event after some text.
    public static var midStreamError: String {
        messageStart(input: 25) + blockStart + text("Partial") + ping
            + event("error", "{\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}")
    }

    public static let rateLimited = "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"}}"
    public static let authentication = "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}"
    public static let apiError = "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}"
}
