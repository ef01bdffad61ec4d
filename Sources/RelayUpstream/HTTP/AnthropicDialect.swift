import Foundation
import RelayCore

/// The Anthropic Messages API streaming format (`POST /v1/messages` with `"stream": true`,
/// docs "Streaming Messages").
///
/// Events, each `event: <type>` plus `data: {"type":"<type>",…}`: `message_start`
/// (`message.usage.input_tokens`/`output_tokens`), `content_block_start`, `content_block_delta`,
/// `content_block_stop`, `message_delta` (`delta.stop_reason`, cumulative `usage.output_tokens`),
/// `message_stop` (end), `ping` (keep-alive), `error` (`error.type`, `error.message`, e.g.
/// `overloaded_error`). Unknown event types, block types and delta types are ignored, as the
/// docs ask.
///
/// Content blocks, by their `index` (docs/PROTOCOL.md §5.5, docs/UPSTREAMS.md "Parts"):
/// * `text`: each `text_delta`'s `text` is a text delta; a `citations_delta`'s `citation`
///   with a `url` (`web_search_result_location`; a `search_result_location` whose `source`
///   is an http(s) URL) is a `source` part, once per URL per answer, with ids `src_1`,
///   `src_2`, … in order of first citation and the citation's `title`; citations of
///   documents without a URL are left out.
/// * `thinking` (extended thinking): each `thinking_delta`'s `thinking` is a `reasoning`
///   piece; `signature_delta` is ignored.
/// * `redacted_thinking`: its `data` (at the block's start) is a `reasoning_redacted` part.
/// * `tool_use`: the start's `id` and `name` are a `tool_call_start`, each
///   `input_json_delta`'s `partial_json` a `tool_call_delta`, the block's
///   `content_block_stop` the `tool_call_end` (`ToolCallAssembler`; a `message_stop` with a
///   call still open is refused). An `input_json_delta` for a block that started as no
///   `tool_use` is refused; one of a `server_tool_use` block (a tool Anthropic runs itself,
///   such as web search) is ignored, as is the block.
///
/// Stop reasons map to the relay's: `end_turn`/`stop_sequence` → `stop`, `max_tokens` →
/// `length`, `tool_use` → `tool_calls`, `refusal` → `content_filter`; others pass through.
/// Prompt tokens are `input_tokens` plus cache creation and cache read input tokens.
struct AnthropicDialect: UpstreamDialect {
    static let name = "Anthropic"

    private(set) var finishReason: String?
    private(set) var promptTokens: Int?
    private(set) var completionTokens: Int?
    private var toolCalls = ToolCallAssembler(upstream: AnthropicDialect.name)
    var replacedArgumentHalves: Int { toolCalls.replacedSurrogateHalves }

    /// What each started content block is, by `index`.
    private var blocks: [Int: Block] = [:]
    /// Cited URLs → their source ids, in order of first citation.
    private var sources: [String: String] = [:]

    /// The kinds of content block the dialect tells apart.
    private enum Block {
        case text, thinking, redactedThinking, toolUse
        /// `server_tool_use` and every other kind: its deltas are ignored.
        case other
    }

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

    mutating func step(_ message: SSEMessage) throws(MalformedChunk) -> [DialectStep] {
        if message.type == "ping" { return [] }
        let e = try Self.json(message, what: "data of event \"\(message.type)\"")
        guard e.isObject else { return [.skip("data of event \"\(message.type)\" is not a JSON object")] }
        let type = e["type"]?.stringValue ?? message.type
        if type == "error" || message.type == "error" {  // the error shape, whatever its inner types
            let err = e["error"]
            let kind = err?["type"]?.stringValue ?? "error"
            let text = err?["message"]?.stringValue ?? err?.stringValue ?? "error in stream"
            return [.fail("upstream \(kind): \(UpstreamErrorBody.oneLine(text))")]
        }
        do throws(ShapeMismatch) {
            return try interpret(e, type: type)
        } catch {
            return [.skip("\(type): \(error.reason)")]
        }
    }

    mutating func streamEnded() -> [DialectStep] {
        do throws(ToolCallViolation) {
            try toolCalls.requireAllEnded()
            return []
        } catch {
            return [.fail(error.message)]
        }
    }

    /// Reads the documented fields of one event, checking all types before recording anything.
    private mutating func interpret(_ e: JSONValue, type: String) throws(ShapeMismatch) -> [DialectStep] {
        switch type {
        case "message_start":
            guard let message = try e.object("message") else { throw ShapeMismatch(reason: "no \"message\"") }
            if let u = try message.object("usage") { try record(u) }
            return []
        case "content_block_start":
            return try blockStart(e)
        case "content_block_delta":
            return try blockDelta(e)
        case "content_block_stop":
            guard let index = try e.int("index") else { throw ShapeMismatch(reason: "no \"index\"") }
            guard blocks.removeValue(forKey: index) == .toolUse else { return [] }
            return parts { (t: inout ToolCallAssembler) throws(ToolCallViolation) in try t.end(slot: index) }
        case "message_delta":
            let reason = try e.object("delta")?.string("stop_reason")
            if let u = try e.object("usage") { try record(u) }
            if let r = reason { finishReason = Self.finishReason(for: r.text) }
            return []
        case "message_stop":
            return [.end]
        default:  // future types
            return []
        }
    }

    /// `content_block_start`: remembers the block's kind; a thinking block's initial text, a
    /// redacted block's data and a tool call's start are parts.
    private mutating func blockStart(_ e: JSONValue) throws(ShapeMismatch) -> [DialectStep] {
        guard let index = try e.int("index") else { throw ShapeMismatch(reason: "no \"index\"") }
        guard let block = try e.object("content_block") else { throw ShapeMismatch(reason: "no \"content_block\"") }
        switch try block.string("type")?.text {
        case "text":
            blocks[index] = .text
            return []
        case "thinking":
            let initial = try block.string("thinking")
            blocks[index] = .thinking
            return initial.map { $0.units.isEmpty ? [] : [.reasoning($0)] } ?? []
        case "redacted_thinking":
            guard let data = try block.string("data") else { throw ShapeMismatch(reason: "redacted_thinking without \"data\"") }
            blocks[index] = .redactedThinking
            return [.part(.reasoningRedacted(data: data.text))]
        case "tool_use":
            let id = try block.string("id")?.text
            let name = try block.string("name")?.text
            blocks[index] = .toolUse
            return parts { (t: inout ToolCallAssembler) throws(ToolCallViolation) in [try t.start(slot: index, id: id, name: name)] }
        default:
            blocks[index] = .other
            return []
        }
    }

    /// `content_block_delta`: text, reasoning, argument pieces and citations.
    private mutating func blockDelta(_ e: JSONValue) throws(ShapeMismatch) -> [DialectStep] {
        guard let d = try e.object("delta") else { throw ShapeMismatch(reason: "no \"delta\"") }
        switch try d.string("type")?.text {
        case "text_delta":
            guard let t = try d.string("text") else { throw ShapeMismatch(reason: "text_delta without \"text\"") }
            return t.units.isEmpty ? [] : [.delta(t)]
        case "thinking_delta":
            guard let t = try d.string("thinking") else { throw ShapeMismatch(reason: "thinking_delta without \"thinking\"") }
            return t.units.isEmpty ? [] : [.reasoning(t)]
        case "input_json_delta":
            guard let index = try e.int("index") else { throw ShapeMismatch(reason: "no \"index\"") }
            guard let json = try d.string("partial_json") else { throw ShapeMismatch(reason: "input_json_delta without \"partial_json\"") }
            if blocks[index] == .other { return [] }  // a server tool's input
            return parts { (t: inout ToolCallAssembler) throws(ToolCallViolation) in
                try t.append(slot: index, arguments: json).map { [$0] } ?? []
            }
        case "citations_delta":
            guard let c = try d.object("citation") else { throw ShapeMismatch(reason: "citations_delta without \"citation\"") }
            return try source(of: c).map { [.part($0)] } ?? []
        default:  // signature_delta, future delta types
            return []
        }
    }

    /// The `source` part of a citation with a URL not cited before; `nil` otherwise.
    private mutating func source(of citation: JSONValue) throws(ShapeMismatch) -> AnswerPart? {
        let title = try citation.string("title")?.text
        var url = try citation.string("url")?.text
        if url == nil, try citation.string("type")?.text == "search_result_location",
           let s = try citation.string("source")?.text, s.lowercased().hasPrefix("https://") || s.lowercased().hasPrefix("http://") {
            url = s
        }
        guard let url, !url.isEmpty, sources[url] == nil else { return nil }
        let id = "src_\(sources.count + 1)"
        sources[url] = id
        return .source(id: id, url: url, title: title.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// The parts `body` makes with the tool-call assembler, or `.fail` when it throws.
    private mutating func parts(_ body: (inout ToolCallAssembler) throws(ToolCallViolation) -> [AnswerPart]) -> [DialectStep] {
        do throws(ToolCallViolation) {
            return try body(&toolCalls).map(DialectStep.part)
        } catch {
            return [.fail(error.message)]
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
