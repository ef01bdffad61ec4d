import Foundation
import RelayCore

/// The OpenAI Chat Completions streaming format (`POST /v1/chat/completions` with
/// `"stream": true`, API reference "Chat Completions → The chat completion chunk object"),
/// also spoken by vLLM, llama.cpp server, Ollama and LiteLLM.
///
/// Each SSE `data:` is a JSON chunk
/// `{"id","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role"?,"content"?,"tool_calls"?,"reasoning_content"?},"finish_reason":null|"stop"|"length"|"tool_calls"|…}],"usage":null|{…}}`;
/// with `stream_options.include_usage` a last chunk has `"choices":[]` and
/// `"usage":{"prompt_tokens","completion_tokens","total_tokens"}`; the stream ends with
/// `data: [DONE]`. A mid-stream failure arrives as `data: {"error":{"message","type","code"}}`.
///
/// Parts (docs/PROTOCOL.md §5.5, docs/UPSTREAMS.md "Parts"), from choice 0's `delta`, in this
/// order within a chunk:
/// * `reasoning_content` (DeepSeek, vLLM, llama.cpp server), else `reasoning` (OpenRouter,
///   newer vLLM): a `reasoning` piece; a server that sends both sends the same text, taken once.
/// * `content`: a text delta.
/// * `tool_calls[]` (guide "Function calling", streaming): keyed by `index` (its position in
///   the array when a server omits it); the first piece of an index carries `id` and
///   `function.name` (→ `tool_call_start`), every piece may carry `function.arguments` text
///   (→ `tool_call_delta`); an `id` or `name` a later piece repeats is ignored. Calls may
///   interleave by index.
/// * `finish_reason`: every open call ends (`tool_call_end`, arguments parsed), in the
///   order they started; so does the end of the stream. `"tool_calls"` passes through. A cut
///   (`length`, `content_filter`) leaves the open calls open, their arguments incomplete
///   (docs/PROTOCOL.md §5.5), as the relay's own cut at the grant does.
/// Broken call rules (`ToolCallAssembler`) end the answer with `.fail`.
struct OpenAIDialect: UpstreamDialect {
    static let name = "OpenAI-compatible"

    private(set) var finishReason: String?
    private(set) var promptTokens: Int?
    private(set) var completionTokens: Int?
    private var toolCalls = ToolCallAssembler(upstream: OpenAIDialect.name)
    var replacedArgumentHalves: Int { toolCalls.replacedSurrogateHalves }

    mutating func step(_ message: SSEMessage) throws(MalformedChunk) -> [DialectStep] {
        if message.data == "[DONE]" { return [.end] }
        let chunk = try Self.json(message, what: "data")
        guard chunk.isObject else { return [.skip("chunk is not a JSON object")] }
        if let e = chunk["error"], !e.isNull {  // the error shape, whatever its inner types
            let code = e.looseText("code") ?? e.looseText("type") ?? "error"
            let text = e.stringValue ?? e["message"]?.stringValue ?? "error in stream"
            return [.fail("upstream \(code): \(UpstreamErrorBody.oneLine(text))")]
        }
        let read: Chunk
        do throws(ShapeMismatch) {
            read = try Chunk(chunk)
        } catch {
            return [.skip(error.reason)]
        }
        return apply(read)
    }

    mutating func streamEnded() -> [DialectStep] {
        // A cut answer's calls stay open (`ToolCallAssembler.isCut`).
        if let r = finishReason, ToolCallAssembler.isCut(finishReason: r) { return [] }
        do throws(ToolCallViolation) {
            return try toolCalls.endAll().map(DialectStep.part)
        } catch {
            return [.fail(error.message)]
        }
    }

    /// Records what `chunk` reports and maps its pieces, in order: reasoning, text, tool-call
    /// pieces, then (on a finish reason) the ends of the open calls.
    private mutating func apply(_ chunk: Chunk) -> [DialectStep] {
        if let p = chunk.promptTokens { promptTokens = p }
        if let c = chunk.completionTokens { completionTokens = c }
        if let r = chunk.finishReason { finishReason = r }
        var steps: [DialectStep] = []
        if let r = chunk.reasoning { steps.append(.reasoning(r)) }
        if let t = chunk.text, !t.units.isEmpty { steps.append(.delta(t)) }
        do throws(ToolCallViolation) {
            for piece in chunk.toolCalls {
                if toolCalls.openID(atSlot: piece.index) == nil {
                    steps.append(.part(try toolCalls.start(slot: piece.index, id: piece.id, name: piece.name)))
                }
                if let a = piece.arguments, let d = try toolCalls.append(slot: piece.index, arguments: a) {
                    steps.append(.part(d))
                }
            }
            if let r = chunk.finishReason, !ToolCallAssembler.isCut(finishReason: r) {
                steps += try toolCalls.endAll().map(DialectStep.part)
            }
        } catch {
            steps.append(.fail(error.message))
        }
        return steps
    }

    /// The documented fields of one chunk (choice 0 and usage), every type checked before
    /// anything is recorded.
    private struct Chunk {
        var promptTokens: Int?
        var completionTokens: Int?
        var finishReason: String?
        var reasoning: JSONString?
        var text: JSONString?
        var toolCalls: [ToolCallPiece] = []

        /// - Throws: `ShapeMismatch` when a documented field has another JSON type (the
        ///   reasoning fields, not in OpenAI's own reference, are read when they are
        ///   non-empty strings and ignored otherwise).
        init(_ chunk: JSONValue) throws(ShapeMismatch) {
            let usage = try chunk.object("usage")
            promptTokens = try usage?.int("prompt_tokens")
            completionTokens = try usage?.int("completion_tokens")
            var choice: JSONValue?
            for c in try chunk.array("choices") ?? [] {
                guard c.isObject else { throw ShapeMismatch(reason: "a choice is not an object") }
                if (try c.int("index") ?? 0) == 0 {
                    choice = c
                    break
                }
            }
            finishReason = try choice?.string("finish_reason")?.text
            let delta = try choice?.object("delta")
            text = try delta?.string("content")
            reasoning = ["reasoning_content", "reasoning"].lazy
                .compactMap { delta?[$0]?.stringUnits }.first { !$0.units.isEmpty }
            for (position, call) in (try delta?.array("tool_calls") ?? []).enumerated() {
                guard call.isObject else { throw ShapeMismatch(reason: "a tool call is not an object") }
                toolCalls.append(try ToolCallPiece(call, position: position))
            }
        }
    }

    /// One `delta.tool_calls[]` item.
    private struct ToolCallPiece {
        /// `index`, else the item's position in the array.
        let index: Int
        let id: String?
        let name: String?
        /// `function.arguments`: a string as documented; an object or array (sent by some
        /// servers) is taken as its compact JSON text.
        let arguments: JSONString?

        init(_ call: JSONValue, position: Int) throws(ShapeMismatch) {
            index = try call.int("index") ?? position
            id = try call.string("id")?.text
            let function = try call.object("function")
            name = try function?.string("name")?.text
            guard let a = function?["arguments"], !a.isNull else {
                arguments = nil
                return
            }
            switch a {
            case .string(let s): arguments = s
            case .object, .array: arguments = JSONString(a.compactJSON)
            default: throw ShapeMismatch(reason: "\"arguments\" is not a string")
            }
        }
    }

    /// The request body: `{"model","messages","stream":true,"stream_options":{"include_usage":true},"max_tokens"?}`
    /// and the request's sampling fields (`SamplingParameters`) under their own names.
    /// Summary mode puts `instruction` first as a `system` message.
    ///
    /// Tools go as the API reference names them, as the client sent them: `tools` (each
    /// `ChatTool.jsonText`, the schema's members in the client's order, last in the body),
    /// `tool_choice`, assistant messages' `tool_calls` and `tool` messages (`OpenAIMessage`).
    ///
    /// `max_completion_tokens` is deliberately not sent next to `max_tokens`: OpenAI answers
    /// `400 invalid_parameter_combination` ("Setting 'max_tokens' and 'max_completion_tokens'
    /// at the same time is not supported"), and other compatible servers refuse the pair too.
    /// An upstream that ignores `max_tokens` is cut by the relay itself at the grant
    /// (`BudgetArithmetic.CompletionCap`, `Generation`).
    ///
    /// A continuation (`continuing`) with a non-empty `prefill` (the answer so far without
    /// its trailing whitespace) puts it last as `{"role":"assistant","content":prefill}`;
    /// `.vllm` adds vLLM's extra parameters `"continue_final_message":true,
    /// "add_generation_prompt":false` (the chat template leaves that message open, the
    /// model continues it); `.llamaCpp` sends the message alone (llama-server continues a
    /// final assistant message by default). Without a prefill (nothing but whitespace so
    /// far) the body is a plain request.
    static func body(model: String, messages: [ChatMessage], maxTokens: Int?, summaryInstruction: String?,
                     prefill: String? = nil, continuing: HTTPContinuation = .off,
                     sampling: SamplingParameters = SamplingParameters(), tools: [ChatTool] = [],
                     toolChoice: ToolChoice? = nil) -> [UInt8] {
        struct StreamOptions: Encodable { let include_usage: Bool }
        struct Body: Encodable {
            let model: String
            let messages: [OpenAIMessage]
            let stream: Bool
            let stream_options: StreamOptions
            let max_tokens: Int?
            let continue_final_message: Bool?
            let add_generation_prompt: Bool?
            let temperature: Double?
            let top_p: Double?
            let stop: [String]?
            let seed: Int?
            let presence_penalty: Double?
            let frequency_penalty: Double?
            let tool_choice: OpenAIToolChoice?
        }
        var list = messages.map { OpenAIMessage($0) }
        if let s = summaryInstruction { list.insert(OpenAIMessage(ChatMessage(role: "system", content: s)), at: 0) }
        let continues = prefill.map { !$0.isEmpty } ?? false
        if continues, let p = prefill { list.append(OpenAIMessage(ChatMessage(role: "assistant", content: p))) }
        let vllm = continues && continuing == .vllm
        let b = Body(model: model, messages: list, stream: true,
                     stream_options: StreamOptions(include_usage: true), max_tokens: maxTokens,
                     continue_final_message: vllm ? true : nil, add_generation_prompt: vllm ? false : nil,
                     temperature: sampling.temperature, top_p: sampling.topP, stop: sampling.stop, seed: sampling.seed,
                     presence_penalty: sampling.presencePenalty, frequency_penalty: sampling.frequencyPenalty,
                     tool_choice: toolChoice.map(OpenAIToolChoice.init))
        return JSONBody.appending(tools.isEmpty ? [] : [("tools", ChatTool.jsonText(tools))], to: JSONBody.encode(b))
    }
}

/// `tool_choice` as the Chat Completions API takes it: `"auto"`, `"none"`, `"required"`, or
/// `{"type":"function","function":{"name"}}`.
struct OpenAIToolChoice: Encodable {
    let choice: ToolChoice
    init(_ c: ToolChoice) { choice = c }

    private struct Function: Encodable { let name: String }
    private struct Named: Encodable { let type: String; let function: Function }

    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch choice {
        case .auto: try c.encode("auto")
        case .none: try c.encode("none")
        case .required: try c.encode("required")
        case .function(let name): try c.encode(Named(type: "function", function: Function(name: name)))
        }
    }
}

/// A message as OpenAI's Chat Completions API takes it: `content` a string, or the array of
/// parts as sent (`{"type":"text","text"}`, `{"type":"image_url","image_url":{"url","detail"?}}`);
/// an assistant message's `tool_calls` (`{"id","type":"function","function":{"name","arguments"}}`,
/// its `content` `null` when it has no text) and a `tool` message's `tool_call_id`.
struct OpenAIMessage: Encodable {
    let message: ChatMessage
    init(_ m: ChatMessage) { message = m }

    private struct Image: Encodable { let url: String; let detail: String? }
    private struct Part: Encodable { let type: String; let text: String?; let image_url: Image? }
    private struct Function: Encodable { let name: String; let arguments: String }
    private struct Call: Encodable { let id: String; let type: String; let function: Function }
    private enum Keys: String, CodingKey { case role, content, tool_calls, tool_call_id }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(message.role, forKey: .role)
        if let id = message.toolCallID { try c.encode(id, forKey: .tool_call_id) }
        if !message.toolCalls.isEmpty {
            try c.encode(message.toolCalls.map { Call(id: $0.id, type: "function", function: Function(name: $0.name, arguments: $0.arguments)) },
                         forKey: .tool_calls)
            if message.parts == nil, message.content.isEmpty { return try c.encodeNil(forKey: .content) }
        }
        guard let parts = message.parts else { return try c.encode(message.content, forKey: .content) }
        try c.encode(parts.map { p -> Part in
            switch p {
            case .text(let t): return Part(type: "text", text: t, image_url: nil)
            case .imageURL(let url, let detail): return Part(type: "image_url", text: nil, image_url: Image(url: url, detail: detail))
            }
        }, forKey: .content)
    }
}

/// JSON request bodies: sorted keys, `/` not escaped, `nil` optionals omitted.
enum JSONBody {
    static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings, ints and bools cannot fail.
        return Array((try? e.encode(value)) ?? Data("{}".utf8))
    }

    /// `object` (an encoded JSON object) with `members` — names and their values as JSON
    /// text, written as they are — added at its end: values whose member order and number
    /// literals must reach the upstream unchanged (a tool's JSON Schema).
    static func appending(_ members: [(name: String, json: String)], to object: [UInt8]) -> [UInt8] {
        guard !members.isEmpty, object.last == UInt8(ascii: "}") else { return object }
        var out = Array(object.dropLast())
        var empty = out.allSatisfy { $0 != UInt8(ascii: "\"") }  // `{` alone: no member yet
        for m in members {
            out += Array("\(empty ? "" : ",")\(JSONText.quoted(m.name)):\(m.json)".utf8)
            empty = false
        }
        return out + [UInt8(ascii: "}")]
    }
}
