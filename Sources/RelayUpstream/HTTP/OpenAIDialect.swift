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

    private struct Chunk: Decodable {
        let choices: [Choice]?
        let usage: ChunkUsage?
        let error: ChunkError?
    }
    private struct Choice: Decodable {
        let index: Int?
        let delta: Delta?
        let finish_reason: String?
    }
    private struct Delta: Decodable {
        let content: String?
    }
    private struct ChunkUsage: Decodable {
        let prompt_tokens: Int?
        let completion_tokens: Int?
    }
    private struct ChunkError: Decodable {
        let message: String?
        let type: String?
        let code: LooseString?
    }

    private let decoder = JSONDecoder()

    mutating func step(_ message: SSEMessage) throws(MalformedChunk) -> DialectStep {
        if message.data == "[DONE]" { return .end }
        let chunk: Chunk
        do {
            chunk = try decoder.decode(Chunk.self, from: Data(message.data.utf8))
        } catch {
            throw MalformedChunk(reason: "data is not a chat.completion.chunk JSON object")
        }
        if let e = chunk.error {
            let code = e.code?.value ?? e.type ?? "error"
            return .fail("upstream \(code): \(UpstreamErrorBody.oneLine(e.message ?? "error in stream"))")
        }
        if let u = chunk.usage {
            if let p = u.prompt_tokens { promptTokens = p }
            if let c = u.completion_tokens { completionTokens = c }
        }
        guard let choice = chunk.choices?.first(where: { ($0.index ?? 0) == 0 }) else { return .ignore }
        if let r = choice.finish_reason { finishReason = r }
        if let text = choice.delta?.content, !text.isEmpty { return .delta(text) }
        return .ignore
    }

    /// The request body: `{"model","messages","stream":true,"stream_options":{"include_usage":true},"max_tokens"?}`.
    /// Summary mode puts `instruction` first as a `system` message.
    static func body(model: String, messages: [ChatMessage], maxTokens: Int?, summaryInstruction: String?) -> [UInt8] {
        struct Message: Encodable { let role: String; let content: String }
        struct StreamOptions: Encodable { let include_usage: Bool }
        struct Body: Encodable {
            let model: String
            let messages: [Message]
            let stream: Bool
            let stream_options: StreamOptions
            let max_tokens: Int?
        }
        var list = messages.map { Message(role: $0.role, content: $0.content) }
        if let s = summaryInstruction { list.insert(Message(role: "system", content: s), at: 0) }
        let b = Body(model: model, messages: list, stream: true,
                     stream_options: StreamOptions(include_usage: true), max_tokens: maxTokens)
        return JSONBody.encode(b)
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
