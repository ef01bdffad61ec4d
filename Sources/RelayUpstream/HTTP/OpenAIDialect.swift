import Foundation
import RelayCore

/// The OpenAI Chat Completions streaming format (`POST /v1/chat/completions` with
/// `"stream": true`, API reference "Chat Completions → The chat completion chunk object"),
/// also spoken by vLLM, llama.cpp server, Ollama and LiteLLM.
///
/// Each SSE `data:` is a JSON chunk
/// `{"id","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role"?,"content"?},"finish_reason":null|"stop"|"length"|…}],"usage":null|{…}}`;
/// with `stream_options.include_usage` a last chunk has `"choices":[]` and
/// `"usage":{"prompt_tokens","completion_tokens","total_tokens"}`; the stream ends with
/// `data: [DONE]`. A mid-stream failure arrives as `data: {"error":{"message","type","code"}}`.
struct OpenAIDialect: UpstreamDialect {
    static let name = "OpenAI-compatible"

    private(set) var finishReason: String?
    private(set) var promptTokens: Int?
    private(set) var completionTokens: Int?

    mutating func step(_ message: SSEMessage) throws(MalformedChunk) -> DialectStep {
        if message.data == "[DONE]" { return .end }
        let chunk = try Self.json(message, what: "data")
        guard chunk.isObject else { return .skip("chunk is not a JSON object") }
        if let e = chunk["error"], !e.isNull {  // the error shape, whatever its inner types
            let code = e.looseText("code") ?? e.looseText("type") ?? "error"
            let text = e.stringValue ?? e["message"]?.stringValue ?? "error in stream"
            return .fail("upstream \(code): \(UpstreamErrorBody.oneLine(text))")
        }
        do throws(ShapeMismatch) {
            return try interpret(chunk)
        } catch {
            return .skip(error.reason)
        }
    }

    /// Reads the documented fields, checking all types before recording anything.
    private mutating func interpret(_ chunk: JSONValue) throws(ShapeMismatch) -> DialectStep {
        let usage = try chunk.object("usage")
        let prompt = try usage?.int("prompt_tokens")
        let completion = try usage?.int("completion_tokens")
        var choice: JSONValue?
        for c in try chunk.array("choices") ?? [] {
            guard c.isObject else { throw ShapeMismatch(reason: "a choice is not an object") }
            if (try c.int("index") ?? 0) == 0 {
                choice = c
                break
            }
        }
        let reason = try choice?.string("finish_reason")
        let text = try choice?.object("delta")?.string("content")
        if let p = prompt { promptTokens = p }
        if let c = completion { completionTokens = c }
        if let r = reason { finishReason = r.text }
        if let text, !text.units.isEmpty { return .delta(text) }
        return .ignore
    }

    /// The request body: `{"model","messages","stream":true,"stream_options":{"include_usage":true},"max_tokens"?}`
    /// and the request's sampling fields (`SamplingParameters`) under their own names.
    /// Summary mode puts `instruction` first as a `system` message.
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
                     sampling: SamplingParameters = SamplingParameters()) -> [UInt8] {
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
                     presence_penalty: sampling.presencePenalty, frequency_penalty: sampling.frequencyPenalty)
        return JSONBody.encode(b)
    }
}

/// A message as OpenAI's Chat Completions API takes it: `content` a string, or the array of
/// parts as sent (`{"type":"text","text"}`, `{"type":"image_url","image_url":{"url","detail"?}}`).
struct OpenAIMessage: Encodable {
    let message: ChatMessage
    init(_ m: ChatMessage) { message = m }

    private struct Image: Encodable { let url: String; let detail: String? }
    private struct Part: Encodable { let type: String; let text: String?; let image_url: Image? }
    private enum Keys: String, CodingKey { case role, content }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(message.role, forKey: .role)
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
}
