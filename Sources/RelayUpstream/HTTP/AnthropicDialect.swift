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
        let e = try Self.json(message, what: "data of event \"\(message.type)\"")
        guard e.isObject else { return .skip("data of event \"\(message.type)\" is not a JSON object") }
        let type = e["type"]?.stringValue ?? message.type
        if type == "error" || message.type == "error" {  // the error shape, whatever its inner types
            let err = e["error"]
            let kind = err?["type"]?.stringValue ?? "error"
            let text = err?["message"]?.stringValue ?? err?.stringValue ?? "error in stream"
            return .fail("upstream \(kind): \(UpstreamErrorBody.oneLine(text))")
        }
        do throws(ShapeMismatch) {
            return try interpret(e, type: type)
        } catch {
            return .skip("\(type): \(error.reason)")
        }
    }

    /// Reads the documented fields of one event, checking all types before recording anything.
    private mutating func interpret(_ e: JSONValue, type: String) throws(ShapeMismatch) -> DialectStep {
        switch type {
        case "message_start":
            guard let message = try e.object("message") else { throw ShapeMismatch(reason: "no \"message\"") }
            if let u = try message.object("usage") { try record(u) }
            return .ignore
        case "content_block_delta":
            guard let d = try e.object("delta") else { throw ShapeMismatch(reason: "no \"delta\"") }
            guard try d.string("type")?.text == "text_delta" else { return .ignore }
            guard let t = try d.string("text") else { throw ShapeMismatch(reason: "text_delta without \"text\"") }
            return t.units.isEmpty ? .ignore : .delta(t)
        case "message_delta":
            let reason = try e.object("delta")?.string("stop_reason")
            if let u = try e.object("usage") { try record(u) }
            if let r = reason { finishReason = Self.finishReason(for: r.text) }
            return .ignore
        case "message_stop":
            return .end
        default:  // content_block_start, content_block_stop, future types
            return .ignore
        }
    }

    private mutating func record(_ u: JSONValue) throws(ShapeMismatch) {
        let input = try u.int("input_tokens")
        let creation = try u.int("cache_creation_input_tokens") ?? 0
        let read = try u.int("cache_read_input_tokens") ?? 0
        let output = try u.int("output_tokens")
        if let i = input { promptTokens = i + creation + read }
        if let o = output { completionTokens = o }
    }

    /// The request body: `{"model","max_tokens","stream":true,"system"?,"messages"}`, system
    /// messages moved (in order, joined by a blank line) to `system`, after the summary
    /// instruction when there is one. A non-empty `prefill` (the answer so far, without
    /// trailing whitespace: the API refuses a final assistant content ending in whitespace)
    /// goes last as `{"role":"assistant","content":prefill}`, which the model continues
    /// ("Prefill Claude's response").
    ///
    /// Sampling: `temperature`, `top_p` and `stop` (as `stop_sequences`) are sent; the Messages
    /// API has no `seed` or penalties (`refusal(of:)` refuses them before the call).
    static func body(model: String, messages: [ChatMessage], maxTokens: Int, summaryInstruction: String?,
                     prefill: String? = nil, sampling: SamplingParameters = SamplingParameters()) -> [UInt8] {
        struct Body: Encodable {
            let model: String
            let max_tokens: Int
            let stream: Bool
            let system: String?
            let messages: [AnthropicMessage]
            let temperature: Double?
            let top_p: Double?
            let stop_sequences: [String]?
        }
        var system = messages.filter { $0.role == "system" }.map(\.content)
        if let s = summaryInstruction { system.insert(s, at: 0) }
        var rest = messages.filter { $0.role != "system" }.map { AnthropicMessage($0) }
        if let p = prefill, !p.isEmpty { rest.append(AnthropicMessage(ChatMessage(role: "assistant", content: p))) }
        let b = Body(model: model, max_tokens: maxTokens, stream: true,
                     system: system.isEmpty ? nil : system.joined(separator: "\n\n"), messages: rest,
                     temperature: sampling.temperature, top_p: sampling.topP, stop_sequences: sampling.stop)
        return JSONBody.encode(b)
    }

    /// Why the Messages API cannot take `sampling`, as a client error: `seed` and the
    /// penalties do not exist there, and its `temperature` is 0…1. `nil`: it can.
    static func refusal(of sampling: SamplingParameters) -> String? {
        for (name, set) in [("seed", sampling.seed != nil), ("presence_penalty", sampling.presencePenalty != nil),
                            ("frequency_penalty", sampling.frequencyPenalty != nil)] where set {
            return "\"\(name)\" is not supported by the anthropic upstream"
        }
        if let t = sampling.temperature, t > 1 { return "\"temperature\" must be from 0 to 1 for the anthropic upstream" }
        return nil
    }
}

/// A message as the Messages API takes it: `content` a string, or content blocks for a message
/// sent with parts — `{"type":"text","text"}` and, for an image by URL,
/// `{"type":"image","source":{"type":"url","url"}}` (OpenAI's `detail` has no equivalent).
struct AnthropicMessage: Encodable {
    let message: ChatMessage
    init(_ m: ChatMessage) { message = m }

    private struct Source: Encodable { let type: String; let url: String }
    private struct Block: Encodable { let type: String; let text: String?; let source: Source? }
    private enum Keys: String, CodingKey { case role, content }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(message.role, forKey: .role)
        guard let parts = message.parts else { return try c.encode(message.content, forKey: .content) }
        try c.encode(parts.map { p -> Block in
            switch p {
            case .text(let t): return Block(type: "text", text: t, source: nil)
            case .imageURL(let url, _): return Block(type: "image", text: nil, source: Source(type: "url", url: url))
            }
        }, forKey: .content)
    }
}
