import Foundation

/// A deterministic LLM for `FakeUpstreamServer` that speaks the OpenAI chat completions and the
/// Anthropic Messages streaming formats and honours a final assistant message the way each
/// server documents it: it always answers `tokens` (one delta per token), and when the request
/// ends with an assistant message whose content is a prefix of that answer, it continues from
/// where the prefix ends (mid-token too: the rest of the cut token first), so a prefix cut at
/// any point plus its continuation is the answer exactly.
///
/// Per API, what a real server does with a final assistant message:
/// * Anthropic (`anthropicScript`): continued (prefill). A final assistant content that ends
///   in whitespace is refused with 400 `invalid_request_error`, as the API does; with
///   `prefillSupported == false` any final assistant message is refused with 400 (models that
///   "do not support assistant message prefill").
/// * OpenAI-compatible (`openAIScript`, `OpenAIServer`): vLLM continues it only with
///   `"continue_final_message": true` and `"add_generation_prompt": false` (both true: 400, as
///   vLLM); llama-server continues it as is; OpenAI itself starts a new message after it (the
///   whole answer again).
///
/// `max_tokens` cuts the stream (`max_tokens` / `length`); usage reports input tokens as the
/// Characters of all message contents and output tokens as the deltas sent.
public struct ContinuableAnswerUpstream: Sendable {
    /// What an OpenAI-compatible server does with a final assistant message.
    public enum OpenAIServer: Sendable {
        /// vLLM: continues with `continue_final_message` + `add_generation_prompt: false`.
        case vllm
        /// llama-server: continues a final assistant message.
        case llamaCpp
        /// OpenAI: answers after it (starts over).
        case openAI
    }

    /// The answer's tokens, in order; their concatenation is `text`.
    public let tokens: [String]
    /// Whether the Anthropic model takes a prefill at all.
    public var prefillSupported = true
    /// Pause after each text delta, ms (0: the whole stream in one write). A paced answer
    /// lets a test stop the relay generating it midway.
    public var pauseMsPerToken = 0

    /// The whole answer.
    public var text: String { tokens.joined() }

    /// - Parameter tokens: the answer, one delta each (non-empty strings).
    public init(tokens: [String]) { self.tokens = tokens }

    /// An answer with ASCII, multi-space runs, line breaks and indentation, a token that ends
    /// in a space, Arabic with a diacritic and an emoji flag.
    public static let standard = ContinuableAnswerUpstream(tokens: [
        "Clause", " 3", " of", " the", " lease", ":", "\n\n", "-", " The", " tenant", " pays", "  ", " on",
        " the", " first", " day", ",", " e.g. ", "the", " 1st", ".", "\n", "  ", "-", " ملخّص", " 🇸🇦",
        " done", ".",
    ])

    // MARK: Anthropic

    /// The response to an Anthropic `POST /v1/messages` request.
    public func anthropicScript(_ request: FakeUpstreamServer.Request) -> FakeUpstreamServer.Script {
        let body = request.json
        let messages = body["messages"] as? [[String: Any]] ?? []
        guard let maxTokens = body["max_tokens"] as? Int, maxTokens >= 1 else {
            return Self.error(400, anthropic: "invalid_request_error", "max_tokens: Field required")
        }
        var prefix = ""
        if let last = messages.last, last["role"] as? String == "assistant" {
            guard prefillSupported else {
                return Self.error(400, anthropic: "invalid_request_error",
                                  "This model does not support assistant message prefill. The conversation must end with a user message.")
            }
            prefix = last["content"] as? String ?? ""
            if prefix.last?.isWhitespace == true {
                return Self.error(400, anthropic: "invalid_request_error", "messages: final assistant content cannot end with trailing whitespace")
            }
        }
        guard let rest = continuation(after: prefix) else {
            return Self.error(400, anthropic: "invalid_request_error", "fake: the prefill is not a prefix of the answer")
        }
        let sent = Array(rest.prefix(maxTokens))
        var sse = Self.event("message_start", ["type": "message_start", "message": [
            "id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": body["model"] ?? "m",
            "stop_reason": NSNull(), "stop_sequence": NSNull(),
            "usage": ["input_tokens": Self.inputTokens(messages, system: body["system"] as? String), "output_tokens": 1]]])
        sse += Self.event("content_block_start", ["type": "content_block_start", "index": 0, "content_block": ["type": "text", "text": ""]])
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")]
        for t in sent {
            sse += Self.event("content_block_delta", ["type": "content_block_delta", "index": 0, "delta": ["type": "text_delta", "text": t]])
            flush(&sse, into: &steps)
        }
        sse += Self.event("content_block_stop", ["type": "content_block_stop", "index": 0])
        sse += Self.event("message_delta", ["type": "message_delta",
                                            "delta": ["stop_reason": sent.count < rest.count ? "max_tokens" : "end_turn", "stop_sequence": NSNull()],
                                            "usage": ["output_tokens": sent.count]])
        sse += Self.event("message_stop", ["type": "message_stop"])
        return .init(steps + [.send(Array(sse.utf8))])
    }

    // MARK: OpenAI-compatible

    /// The response to an OpenAI-compatible `POST /v1/chat/completions` request, as `server`.
    public func openAIScript(_ request: FakeUpstreamServer.Request, as server: OpenAIServer) -> FakeUpstreamServer.Script {
        let body = request.json
        let messages = body["messages"] as? [[String: Any]] ?? []
        let continueFinal = body["continue_final_message"] as? Bool ?? false
        let addGenerationPrompt = body["add_generation_prompt"] as? Bool ?? true
        var prefix = ""
        if let last = messages.last, last["role"] as? String == "assistant" {
            let content = last["content"] as? String ?? ""
            switch server {
            case .vllm:
                if continueFinal && addGenerationPrompt {
                    return Self.error(400, openAI: "BadRequestError",
                                      "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
                }
                if continueFinal { prefix = content }
            case .llamaCpp:
                prefix = content
            case .openAI:
                break
            }
        }
        guard let rest = continuation(after: prefix) else {
            return Self.error(400, openAI: "invalid_request_error", "fake: the final assistant message is not a prefix of the answer")
        }
        let maxTokens = body["max_tokens"] as? Int ?? Int.max
        let sent = Array(rest.prefix(maxTokens))
        func chunk(_ choices: [[String: Any]], usage: Any = NSNull()) -> String {
            "data: " + Self.json(["id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1694268190,
                                  "model": body["model"] ?? "m", "choices": choices, "usage": usage]) + "\n\n"
        }
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")]
        var sse = chunk([["index": 0, "delta": ["role": "assistant", "content": ""], "finish_reason": NSNull()]])
        for t in sent {
            sse += chunk([["index": 0, "delta": ["content": t], "finish_reason": NSNull()]])
            flush(&sse, into: &steps)
        }
        sse += chunk([["index": 0, "delta": [:] as [String: Any], "finish_reason": sent.count < rest.count ? "length" : "stop"]])
        let prompt = Self.inputTokens(messages, system: nil)
        sse += chunk([], usage: ["prompt_tokens": prompt, "completion_tokens": sent.count, "total_tokens": prompt + sent.count])
        sse += "data: [DONE]\n\n"
        return .init(steps + [.send(Array(sse.utf8))])
    }

    /// With pacing, sends what is pending now and pauses; without, keeps collecting.
    private func flush(_ pending: inout String, into steps: inout [FakeUpstreamServer.Step]) {
        guard pauseMsPerToken > 0 else { return }
        steps.append(.send(Array(pending.utf8)))
        steps.append(.pause(ms: pauseMsPerToken))
        pending = ""
    }

    // MARK: the deterministic answer

    /// The tokens that follow `prefix` in the answer (the cut token's rest first when the
    /// prefix ends inside one); `nil` when `prefix` does not start the answer. Compared by
    /// Unicode scalars.
    public func continuation(after prefix: String) -> [String]? {
        let p = Array(prefix.unicodeScalars)
        guard Array(text.unicodeScalars).starts(with: p) else { return nil }
        var start = 0
        for (i, t) in tokens.enumerated() {
            let scalars = Array(t.unicodeScalars)
            let end = start + scalars.count
            if p.count <= start { return Array(tokens[i...]) }
            if p.count < end {
                var tail = String.UnicodeScalarView()
                tail.append(contentsOf: scalars[(p.count - start)...])
                return [String(tail)] + tokens[(i + 1)...]
            }
            start = end
        }
        return []
    }

    // MARK: encoding

    static func inputTokens(_ messages: [[String: Any]], system: String?) -> Int {
        messages.reduce(system?.count ?? 0) { $0 + (($1["content"] as? String)?.count ?? 0) }
    }

    static func json(_ value: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func event(_ type: String, _ value: [String: Any]) -> String {
        "event: \(type)\ndata: \(json(value))\n\n"
    }

    static func error(_ status: Int, anthropic type: String, _ message: String) -> FakeUpstreamServer.Script {
        .init([.head(status: status, contentType: "application/json"),
               .send(Array(json(["type": "error", "error": ["type": type, "message": message]]).utf8))])
    }

    static func error(_ status: Int, openAI type: String, _ message: String) -> FakeUpstreamServer.Script {
        .init([.head(status: status, contentType: "application/json"),
               .send(Array(json(["object": "error", "error": ["type": type, "message": message, "code": status, "param": NSNull()]]).utf8))])
    }
}
