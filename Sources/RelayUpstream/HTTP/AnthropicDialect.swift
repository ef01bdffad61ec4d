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
///   call still open is refused). A block that stops with input that does not parse is the
///   cut of a `max_tokens` stop reason (the call stays open, docs/PROTOCOL.md §5.5) or else a
///   broken rule, refused at the stop reason. An `input_json_delta` for a block that started as no
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
    /// `tool_use` blocks that stopped with input that does not parse, by `index`, kept open
    /// until the stop reason says why: `max_tokens` (a cut, the relay's grant sent as
    /// `max_tokens`) leaves them open as docs/PROTOCOL.md §5.5 does; any other end is the
    /// broken rule it always was.
    private var unparsedStops: [Int] = []

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
        // A cut answer's calls stay open (`ToolCallAssembler.isCut`).
        if let r = finishReason, ToolCallAssembler.isCut(finishReason: r) { return [] }
        if let failed = failUnparsedStop() { return failed }
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
            if !toolCalls.argumentsParse(slot: index) {
                unparsedStops.append(index)   // cut by max_tokens, or broken: the stop reason tells
                return []
            }
            return parts { (t: inout ToolCallAssembler) throws(ToolCallViolation) in try t.end(slot: index) }
        case "message_delta":
            let reason = try e.object("delta")?.string("stop_reason")
            if let u = try e.object("usage") { try record(u) }
            if let r = reason { finishReason = Self.finishReason(for: r.text) }
            if let r = finishReason, !ToolCallAssembler.isCut(finishReason: r), let failed = failUnparsedStop() { return failed }
            return []
        case "message_stop":
            return [.end]
        default:  // future types
            return []
        }
    }

    /// The failure of the first `tool_use` block that stopped with input that does not parse
    /// (`unparsedStops`), in an answer that was not cut; `nil` when there is none.
    private mutating func failUnparsedStop() -> [DialectStep]? {
        guard let index = unparsedStops.first else { return nil }
        unparsedStops.removeAll()
        return parts { (t: inout ToolCallAssembler) throws(ToolCallViolation) in try t.end(slot: index) }
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
    ///
    /// Tools, as the Messages API takes them (docs "Tool use"): each tool as
    /// `{"description"?,"input_schema","name"}` (`input_schema` the tool's `parameters`, members
    /// in the client's order, or `{"type":"object"}`; OpenAI's `strict` is not sent), last in
    /// the body; `tool_choice` `auto` → `{"type":"auto"}`, `none` → `{"type":"none"}`,
    /// `required` → `{"type":"any"}`, a function → `{"type":"tool","name"}`; an assistant
    /// message's calls as `tool_use` blocks after its text, and each run of consecutive `tool`
    /// messages as one `user` message of `tool_result` blocks (`AnthropicMessage`).
    static func body(model: String, messages: [ChatMessage], maxTokens: Int, summaryInstruction: String?,
                     prefill: String? = nil, sampling: SamplingParameters = SamplingParameters(),
                     tools: [ChatTool] = [], toolChoice: ToolChoice? = nil) -> [UInt8] {
        struct Body: Encodable {
            let model: String
            let max_tokens: Int
            let stream: Bool
            let system: String?
            let messages: [AnthropicMessage]
            let temperature: Double?
            let top_p: Double?
            let stop_sequences: [String]?
            let tool_choice: AnthropicToolChoice?
        }
        var system = messages.filter { $0.role == "system" }.map(\.content)
        if let s = summaryInstruction { system.insert(s, at: 0) }
        var rest = AnthropicMessage.list(messages.filter { $0.role != "system" })
        if let p = prefill, !p.isEmpty { rest.append(AnthropicMessage(ChatMessage(role: "assistant", content: p))) }
        let b = Body(model: model, max_tokens: maxTokens, stream: true,
                     system: system.isEmpty ? nil : system.joined(separator: "\n\n"), messages: rest,
                     temperature: sampling.temperature, top_p: sampling.topP, stop_sequences: sampling.stop,
                     tool_choice: toolChoice.map(AnthropicToolChoice.init))
        return JSONBody.appending(tools.isEmpty ? [] : [("tools", toolsJSON(tools))], to: JSONBody.encode(b))
    }

    /// The Messages API's `tools`: `[{"description"?,"input_schema","name"}]` as JSON text.
    static func toolsJSON(_ tools: [ChatTool]) -> String {
        "[" + tools.map { t in
            var out = "{"
            if let d = t.description { out += "\"description\":" + JSONText.quoted(d) + "," }
            out += "\"input_schema\":" + (t.parameters?.compactJSON ?? #"{"type":"object"}"#)
            return out + ",\"name\":" + JSONText.quoted(t.name) + "}"
        }.joined(separator: ",") + "]"
    }

    /// A call's arguments as the `input` of a `tool_use` block: the JSON object they hold
    /// (empty or blank arguments: `{}`); `nil` when they are not a JSON object.
    static func input(of call: ChatToolCall) -> JSONValue? {
        if call.arguments.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) { return .object([]) }
        guard let v = try? LenientJSON.parse(call.arguments), case .object = v else { return nil }
        return v
    }

    /// Why the Messages API cannot take the tool calls of `messages`, as a client error: a
    /// `tool_use` block's `input` is a JSON object, so arguments that are not one cannot be
    /// sent (`input(of:)`). `nil`: it can.
    static func refusal(ofToolCallsIn messages: [ChatMessage]) -> String? {
        for m in messages {
            for call in m.toolCalls where input(of: call) == nil {
                return "tool call \"\(call.id)\" (\(call.name)): its arguments are not a JSON object, which the anthropic upstream needs as the call's input"
            }
        }
        return nil
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

/// `tool_choice` as the Messages API takes it: `{"type":"auto"|"none"|"any"}` or
/// `{"type":"tool","name"}`.
struct AnthropicToolChoice: Encodable {
    let type: String
    let name: String?

    init(_ c: ToolChoice) {
        switch c {
        case .auto: (type, name) = ("auto", nil)
        case .none: (type, name) = ("none", nil)
        case .required: (type, name) = ("any", nil)
        case .function(let n): (type, name) = ("tool", n)
        }
    }
}

/// A message as the Messages API takes it: `content` a string, or content blocks for a message
/// sent with parts — `{"type":"text","text"}` and, for an image by URL,
/// `{"type":"image","source":{"type":"url","url"}}` (OpenAI's `detail` has no equivalent).
/// An assistant message with tool calls is blocks: its text (when not empty), then one
/// `{"type":"tool_use","id","name","input"}` per call (`AnthropicDialect.input(of:)`; member
/// order of `input` as the encoder sorts it). A run of `tool` messages is one `user` message of
/// `{"type":"tool_result","tool_use_id","content"?}` blocks (`content` left out when empty).
struct AnthropicMessage: Encodable {
    private let message: ChatMessage?
    private let results: [ChatMessage]
    init(_ m: ChatMessage) { message = m; results = [] }
    private init(results: [ChatMessage]) { message = nil; self.results = results }

    /// `messages` (no `system` among them) as the API's list: each run of `tool` messages
    /// becomes one message of results.
    static func list(_ messages: [ChatMessage]) -> [AnthropicMessage] {
        var out: [AnthropicMessage] = []
        var run: [ChatMessage] = []
        for m in messages {
            if m.role == "tool" {
                run.append(m)
                continue
            }
            if !run.isEmpty { out.append(AnthropicMessage(results: run)); run = [] }
            out.append(AnthropicMessage(m))
        }
        if !run.isEmpty { out.append(AnthropicMessage(results: run)) }
        return out
    }

    private struct Source: Encodable { let type: String; let url: String }
    private struct Block: Encodable {
        var type: String
        var text: String?
        var source: Source?
        var id: String?
        var name: String?
        var input: EncodableJSON?
        var tool_use_id: String?
        var content: String?
    }
    private enum Keys: String, CodingKey { case role, content }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        guard let message else {
            try c.encode("user", forKey: .role)
            return try c.encode(results.map {
                Block(type: "tool_result", tool_use_id: $0.toolCallID ?? "", content: $0.content.isEmpty ? nil : $0.content)
            }, forKey: .content)
        }
        try c.encode(message.role, forKey: .role)
        if message.parts == nil, message.toolCalls.isEmpty { return try c.encode(message.content, forKey: .content) }
        var blocks = message.parts.map {
            $0.map { p -> Block in
                switch p {
                case .text(let t): return Block(type: "text", text: t)
                case .imageURL(let url, _): return Block(type: "image", source: Source(type: "url", url: url))
                }
            }
        } ?? (message.content.isEmpty ? [] : [Block(type: "text", text: message.content)])
        for call in message.toolCalls {
            blocks.append(Block(type: "tool_use", id: call.id, name: call.name,
                                input: EncodableJSON(AnthropicDialect.input(of: call) ?? .object([]))))
        }
        try c.encode(blocks, forKey: .content)
    }
}

/// A `JSONValue` for `JSONEncoder`: numbers as `Int` when integral and in range, else as
/// `Double` (a literal beyond a finite `Double` as its text); object members in the encoder's
/// order.
struct EncodableJSON: Encodable {
    let value: JSONValue
    init(_ v: JSONValue) { value = v }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: Encoder) throws {
        switch value {
        case .object(let members):
            var c = encoder.container(keyedBy: Key.self)
            for m in members { try c.encode(EncodableJSON(m.value), forKey: Key(stringValue: m.name.text)) }
        case .array(let items):
            var c = encoder.unkeyedContainer()
            for v in items { try c.encode(EncodableJSON(v)) }
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .bool(let b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case .string(let s):
            var c = encoder.singleValueContainer()
            try c.encode(s.text)
        case .number(let literal):
            var c = encoder.singleValueContainer()
            if let i = Int(literal) {
                try c.encode(i)
            } else if let d = Double(literal), d.isFinite {
                try c.encode(d)
            } else {
                try c.encode(literal)  // beyond a Double (1e400): its text
            }
        }
    }
}
