import Foundation
import RelayCore

/// The OpenAI Responses API streaming format (`POST /v1/responses` with `"stream": true`, API
/// reference "Streaming events", guides "Streaming API responses", "Function calling" and
/// "Reasoning"), `RELAY_UPSTREAM=openai-responses`.
///
/// Each SSE event is `event: <type>` plus `data: {"type":"<type>","sequence_number",…}`;
/// there is no `[DONE]`: the stream ends after its terminal event.
/// * `response.output_text.delta` (`delta`): text.
/// * `response.reasoning_summary_text.delta` and `response.reasoning_text.delta` (`delta`): a
///   `reasoning` piece; `response.reasoning_summary_part.added` with `summary_index` > 0
///   puts a blank line (`"\n\n"`) between two summary parts.
/// * `response.output_item.added` with a `function_call` item (`call_id`, `name`) at
///   `output_index`: `tool_call_start` (the id is the `call_id`, which the app answers with a
///   `function_call_output`); `response.function_call_arguments.delta` (`output_index`,
///   `delta`): `tool_call_delta`; `response.function_call_arguments.done` (its `arguments` sent
///   as the one piece when no delta came), or else the item's `response.output_item.done`:
///   `tool_call_end` (`ToolCallAssembler`); an item done with `"status":"incomplete"` (the
///   response was cut) leaves its call open. Items of other types (messages, reasoning, hosted
///   tools such as `web_search_call`) start no call.
/// * `response.output_text.annotation.added` with a `url_citation` (`url`, `title`): a
///   `source`, once per URL per answer (ids `src_1`, `src_2`, …).
/// * `response.completed` (`response.usage.input_tokens` / `output_tokens`): the end;
///   `finish_reason` `tool_calls` when the answer made a call, else `stop`.
///   `response.incomplete`: the end with `incomplete_details.reason` `max_output_tokens` →
///   `length`, `content_filter` → `content_filter` (others pass through).
/// * `response.failed` (`response.error.code` / `message`) and `error` (`code`, `message`):
///   `.fail`.
/// Other event types (`response.created`, `response.in_progress`, content parts, refusals,
/// hosted tools' progress, …) are ignored.
struct OpenAIResponsesDialect: UpstreamDialect {
    static let name = "OpenAI Responses"

    private(set) var finishReason: String?
    private(set) var promptTokens: Int?
    private(set) var completionTokens: Int?
    private var toolCalls = ToolCallAssembler(upstream: OpenAIResponsesDialect.name)
    var replacedArgumentHalves: Int { toolCalls.replacedSurrogateHalves }
    /// `output_index` of each call that had an argument delta.
    private var hadArguments: Set<Int> = []
    /// Whether the answer made a tool call.
    private var calledTools = false
    /// Cited URLs → their source ids.
    private var sources: [String: String] = [:]

    mutating func step(_ message: SSEMessage) throws(MalformedChunk) -> [DialectStep] {
        let e = try Self.json(message, what: "data of event \"\(message.type)\"")
        guard e.isObject else { return [.skip("data of event \"\(message.type)\" is not a JSON object")] }
        let type = e["type"]?.stringValue ?? message.type
        if type == "error" {  // the error shape, whatever its inner types
            let code = e.looseText("code") ?? e["error"]?.looseText("code") ?? "error"
            let text = e["message"]?.stringValue ?? e["error"]?["message"]?.stringValue ?? "error in stream"
            return [.fail("upstream \(code): \(UpstreamErrorBody.oneLine(text))")]
        }
        if type == "response.failed" {
            let err = e["response"]?["error"]
            let code = err?.looseText("code") ?? "response_failed"
            let text = err?["message"]?.stringValue ?? "the response failed"
            return [.fail("upstream \(code): \(UpstreamErrorBody.oneLine(text))")]
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
        do throws(ToolCallViolation) {
            try toolCalls.requireAllEnded()
            return []
        } catch {
            return [.fail(error.message)]
        }
    }

    /// Reads the documented fields of one event, checking their types before recording anything.
    private mutating func interpret(_ e: JSONValue, type: String) throws(ShapeMismatch) -> [DialectStep] {
        switch type {
        case "response.output_text.delta":
            guard let d = try e.string("delta") else { throw ShapeMismatch(reason: "no \"delta\"") }
            return d.units.isEmpty ? [] : [.delta(d)]
        case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
            guard let d = try e.string("delta") else { throw ShapeMismatch(reason: "no \"delta\"") }
            return d.units.isEmpty ? [] : [.reasoning(d)]
        case "response.reasoning_summary_part.added":
            return (try e.int("summary_index") ?? 0) > 0 ? [.reasoning(JSONString("\n\n"))] : []
        case "response.output_item.added":
            guard let item = try e.object("item") else { throw ShapeMismatch(reason: "no \"item\"") }
            guard try item.string("type")?.text == "function_call" else { return [] }
            let index = try outputIndex(e)
            let id = try item.string("call_id")?.text
            let name = try item.string("name")?.text
            calledTools = true
            return parts { (t: inout ToolCallAssembler) throws(ToolCallViolation) in [try t.start(slot: index, id: id, name: name)] }
        case "response.function_call_arguments.delta":
            let index = try outputIndex(e)
            guard let d = try e.string("delta") else { throw ShapeMismatch(reason: "no \"delta\"") }
            hadArguments.insert(index)
            return parts { (t: inout ToolCallAssembler) throws(ToolCallViolation) in
                try t.append(slot: index, arguments: d).map { [$0] } ?? []
            }
        case "response.function_call_arguments.done":
            let index = try outputIndex(e)
            let whole = try e.string("arguments")
            let first = !hadArguments.contains(index)
            return parts { (t: inout ToolCallAssembler) throws(ToolCallViolation) in
                var out: [AnswerPart] = []
                if first, let whole, let d = try t.append(slot: index, arguments: whole) { out.append(d) }
                return out + (try t.end(slot: index))
            }
        case "response.output_item.done":
            let index = try outputIndex(e)
            let item = try e.object("item")
            guard try item?.string("type")?.text == "function_call", toolCalls.openID(atSlot: index) != nil else { return [] }
            // A call the response cut (`max_output_tokens`) stays open: its arguments are incomplete.
            if try item?.string("status")?.text == "incomplete" { return [] }
            return parts { (t: inout ToolCallAssembler) throws(ToolCallViolation) in try t.end(slot: index) }
        case "response.output_text.annotation.added":
            guard let a = try e.object("annotation"), try a.string("type")?.text == "url_citation" else { return [] }
            return try source(of: a).map { [.part($0)] } ?? []
        case "response.completed", "response.incomplete":
            let response = try e.object("response")
            let usage = try response?.object("usage")
            let input = try usage?.int("input_tokens")
            let output = try usage?.int("output_tokens")
            let reason = try response?.object("incomplete_details")?.string("reason")?.text
            if let input { promptTokens = input }
            if let output { completionTokens = output }
            if type == "response.incomplete" {
                finishReason = Self.finishReason(forIncomplete: reason)
            } else {
                finishReason = calledTools ? "tool_calls" : "stop"
            }
            return [.end]
        default:
            return []
        }
    }

    /// The relay's `finish_reason` for a `response.incomplete`'s `incomplete_details.reason`.
    static func finishReason(forIncomplete reason: String?) -> String {
        switch reason {
        case "max_output_tokens"?: return "length"
        case "content_filter"?: return "content_filter"
        case let r?: return r
        case nil: return "length"
        }
    }

    private func outputIndex(_ e: JSONValue) throws(ShapeMismatch) -> Int {
        guard let i = try e.int("output_index") else { throw ShapeMismatch(reason: "no \"output_index\"") }
        return i
    }

    /// The `source` part of a URL citation not cited before; `nil` otherwise.
    private mutating func source(of annotation: JSONValue) throws(ShapeMismatch) -> AnswerPart? {
        let title = try annotation.string("title")?.text
        guard let url = try annotation.string("url")?.text, !url.isEmpty, sources[url] == nil else { return nil }
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

    /// The Responses API's lowest `max_output_tokens` (a lower value is refused with 400).
    static let minimumMaxOutputTokens = 16

    /// The request body: `{"model","input","stream":true,"store":false,"instructions"?,
    /// "max_output_tokens"?,"temperature"?,"top_p"?}`. `input` is the messages in order, each
    /// `{"role","content"}` with `content` a string, or for a message sent with parts an array
    /// of `{"type":"input_text","text"}` and `{"type":"input_image","image_url","detail"?}`
    /// (`output_text` for an assistant's text). Summary mode's instruction goes in
    /// `instructions`. `max_output_tokens` is at least `minimumMaxOutputTokens` (the relay
    /// cuts a smaller grant itself). `store: false`: the relay keeps the answer, OpenAI need not.
    static func body(model: String, messages: [ChatMessage], maxTokens: Int?, summaryInstruction: String?,
                     sampling: SamplingParameters = SamplingParameters()) -> [UInt8] {
        struct Body: Encodable {
            let model: String
            let input: [ResponsesInputMessage]
            let stream: Bool
            let store: Bool
            let instructions: String?
            let max_output_tokens: Int?
            let temperature: Double?
            let top_p: Double?
        }
        let b = Body(model: model, input: messages.map(ResponsesInputMessage.init), stream: true, store: false,
                     instructions: summaryInstruction, max_output_tokens: maxTokens.map { max($0, minimumMaxOutputTokens) },
                     temperature: sampling.temperature, top_p: sampling.topP)
        return JSONBody.encode(b)
    }

    /// Why the Responses API cannot take `sampling`, as a client error: it has no `stop`,
    /// `seed` or penalties. `nil`: it can.
    static func refusal(of sampling: SamplingParameters) -> String? {
        for (name, set) in [("stop", sampling.stop != nil), ("seed", sampling.seed != nil),
                            ("presence_penalty", sampling.presencePenalty != nil),
                            ("frequency_penalty", sampling.frequencyPenalty != nil)] where set {
            return "\"\(name)\" is not supported by the openai-responses upstream"
        }
        return nil
    }
}

/// A message as the Responses API's `input` takes it: `content` a string, or input parts for
/// a message sent with parts (`input_text` / `output_text` for an assistant, `input_image`
/// with the URL and `detail`).
struct ResponsesInputMessage: Encodable {
    let message: ChatMessage
    init(_ m: ChatMessage) { message = m }

    private struct Part: Encodable { let type: String; let text: String?; let image_url: String?; let detail: String? }
    private enum Keys: String, CodingKey { case role, content }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(message.role, forKey: .role)
        guard let parts = message.parts else { return try c.encode(message.content, forKey: .content) }
        let textType = message.role == "assistant" ? "output_text" : "input_text"
        try c.encode(parts.map { p -> Part in
            switch p {
            case .text(let t): return Part(type: textType, text: t, image_url: nil, detail: nil)
            case .imageURL(let url, let detail): return Part(type: "input_image", text: nil, image_url: url, detail: detail)
            }
        }, forKey: .content)
    }
}
