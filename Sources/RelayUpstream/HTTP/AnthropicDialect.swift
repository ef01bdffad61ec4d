import Foundation
import RelayCore

/// The Anthropic Messages API streaming format (`POST /v1/messages` with `"stream": true`,
/// docs "Streaming Messages").
///
/// Events, each `event: <type>` plus `data: {"type":"<type>",…}`: `message_start`
/// (`message.usage.input_tokens`/`output_tokens`), `content_block_start`, `content_block_delta`
/// (`delta.type` `text_delta` with `delta.text`; other delta types carry no text),
/// `content_block_stop`, `message_delta` (`delta.stop_reason`, cumulative `usage.output_tokens`),
/// `message_stop` (end), `ping` (keep-alive), `error` (`error.type`, `error.message`, e.g.
/// `overloaded_error`). Unknown event types are ignored, as the docs ask.
///
/// Stop reasons map to the relay's: `end_turn`/`stop_sequence` → `stop`, `max_tokens` →
/// `length`, `tool_use` → `tool_calls`, `refusal` → `content_filter`; others pass through.
/// Prompt tokens are `input_tokens` plus cache creation and cache read input tokens.
struct AnthropicDialect: UpstreamDialect {
    static let name = "Anthropic"

    private(set) var finishReason: String?
    private(set) var promptTokens: Int?
    private(set) var completionTokens: Int?

    private struct Event: Decodable {
        let type: String?
        let message: Message?
        let delta: Delta?
        let usage: EventUsage?
        let error: EventError?
    }
    private struct Message: Decodable {
        let usage: EventUsage?
    }
    private struct Delta: Decodable {
        let type: String?
        let text: String?
        let stop_reason: String?
    }
    private struct EventUsage: Decodable {
        let input_tokens: Int?
        let output_tokens: Int?
        let cache_creation_input_tokens: Int?
        let cache_read_input_tokens: Int?
    }
    private struct EventError: Decodable {
        let type: String?
        let message: String?
    }

    private let decoder = JSONDecoder()

    /// The relay's `finish_reason` for an Anthropic `stop_reason`.
    static func finishReason(for stopReason: String) -> String {
        switch stopReason {
        case "end_turn", "stop_sequence": return "stop"
        case "max_tokens": return "length"
        case "tool_use": return "tool_calls"
        case "refusal": return "content_filter"
        default: return stopReason
        }
    }

    mutating func step(_ message: SSEMessage) throws(MalformedChunk) -> DialectStep {
        if message.type == "ping" { return .ignore }
        let e: Event
        do {
            e = try decoder.decode(Event.self, from: Data(message.data.utf8))
        } catch {
            throw MalformedChunk(reason: "data of event \"\(message.type)\" is not the documented JSON object")
        }
        switch e.type ?? message.type {
        case "message_start":
            if let u = e.message?.usage { record(u) }
            return .ignore
        case "content_block_delta":
            guard let d = e.delta else { throw MalformedChunk(reason: "content_block_delta without delta") }
            if d.type == "text_delta" {
                guard let t = d.text else { throw MalformedChunk(reason: "text_delta without text") }
                return .delta(t)
            }
            return .ignore
        case "message_delta":
            if let r = e.delta?.stop_reason { finishReason = Self.finishReason(for: r) }
            if let u = e.usage { record(u) }
            return .ignore
        case "message_stop":
            return .end
        case "error":
            let kind = e.error?.type ?? "error"
            return .fail("upstream \(kind): \(UpstreamErrorBody.oneLine(e.error?.message ?? "error in stream"))")
        default:  // ping, content_block_start, content_block_stop, future types
            return .ignore
        }
    }

    private mutating func record(_ u: EventUsage) {
        if let i = u.input_tokens {
            promptTokens = i + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0)
        }
        if let o = u.output_tokens { completionTokens = o }
    }

    /// The request body: `{"model","max_tokens","stream":true,"system"?,"messages"}`, system
    /// messages moved (in order, joined by a blank line) to `system`, after the summary
    /// instruction when there is one.
    static func body(model: String, messages: [ChatMessage], maxTokens: Int, summaryInstruction: String?) -> [UInt8] {
        struct Message: Encodable { let role: String; let content: String }
        struct Body: Encodable {
            let model: String
            let max_tokens: Int
            let stream: Bool
            let system: String?
            let messages: [Message]
        }
        var system = messages.filter { $0.role == "system" }.map(\.content)
        if let s = summaryInstruction { system.insert(s, at: 0) }
        let rest = messages.filter { $0.role != "system" }.map { Message(role: $0.role, content: $0.content) }
        let b = Body(model: model, max_tokens: maxTokens, stream: true,
                     system: system.isEmpty ? nil : system.joined(separator: "\n\n"), messages: rest)
        return JSONBody.encode(b)
    }
}
