import Foundation

/// One chat message of a request: `{"role":"user","content":"…"}`, or with `content` an
/// array of parts (`ContentPart`: text and images by URL, user messages only).
public struct ChatMessage: Sendable, Equatable {
    /// `system`, `user` or `assistant`.
    public var role: String
    /// The message text (with `parts`: its text parts, joined).
    public var content: String
    /// The parts when `content` was sent as an array; `nil` for a plain string.
    public var parts: [ContentPart]?

    public init(role: String, content: String) {
        self.role = role
        self.content = content
        self.parts = nil
    }

    /// A message of `parts`; its `content` is the text parts joined.
    public init(role: String, parts: [ContentPart]) {
        self.role = role
        self.parts = parts
        self.content = parts.compactMap { if case .text(let t) = $0 { return t } else { return nil } }.joined()
    }

    /// The images of `parts`.
    public var imageCount: Int {
        parts?.reduce(0) { if case .imageURL = $1 { return $0 + 1 } else { return $0 } } ?? 0
    }

    /// `content` as JSON: the string, or the array of parts.
    public var contentJSON: Any { parts.map { $0.map(\.jsonObject) } ?? content }
}

/// The body of `POST /api/chat/stream` (docs/PROTOCOL.md §3):
/// `{"messages":[{"role":"user","content":"…"}], "model"?: str, "max_tokens"?: int, "mode"?: "full"|"summary"}`
/// and the sampling fields (`SamplingParameters`: `temperature`, `top_p`, `stop`, `seed`,
/// `presence_penalty`, `frequency_penalty`).
public struct ChatRequest: Sendable, Equatable {
    /// `full` (default) or `summary` (shorter answer, capped `max_tokens`).
    public enum Mode: String, Sendable { case full, summary }

    /// The conversation, at least one message.
    public var messages: [ChatMessage]
    /// Model name; `nil` lets the upstream adapter choose.
    public var model: String?
    /// Maximum tokens to generate, 1…1,000,000; `nil` for the upstream's default.
    public var maxTokens: Int?
    /// Answer mode.
    public var mode: Mode
    /// Sampling settings, forwarded to the upstream (none set by default).
    public var sampling: SamplingParameters
    /// Who asked, set by the relay after admission for upstreams that are told
    /// (`CallerIdentity`); never parsed from a body, never stored with the request.
    public var caller: CallerIdentity?

    public init(messages: [ChatMessage], model: String? = nil, maxTokens: Int? = nil, mode: Mode = .full,
                sampling: SamplingParameters = SamplingParameters()) {
        self.messages = messages
        self.model = model
        self.maxTokens = maxTokens
        self.mode = mode
        self.sampling = sampling
    }

    static let roles: Set<String> = ["system", "user", "assistant"]
    /// The most messages a request holds, the operator's system prompt included.
    public static let maxMessages = 1000
    static let fields = Set(["messages", "model", "max_tokens", "mode"] + SamplingParameters.names)

    /// Parses and validates a request body.
    /// - Throws: `APIError` 400 `invalid_json` when `body` is not a JSON object;
    ///   400 `invalid_request` for a missing or empty `messages`, a message that is not
    ///   `{role, content}` with a known role, an unknown field, or an out-of-range value.
    public static func parse(_ body: Data) throws -> ChatRequest {
        let any: Any
        do {
            any = try JSONSerialization.jsonObject(with: body, options: [])
        } catch {
            throw APIError.invalidJSON("body is not valid JSON")
        }
        guard let obj = any as? [String: Any] else { throw APIError.invalidJSON("body must be a JSON object") }
        if let unknown = obj.keys.sorted().first(where: { !fields.contains($0) }) {
            throw APIError.invalidRequest("unknown field \"\(unknown)\"")
        }
        guard let rawMessages = obj["messages"] else { throw APIError.invalidRequest("\"messages\" is required") }
        guard let list = rawMessages as? [Any] else { throw APIError.invalidRequest("\"messages\" must be an array") }
        guard !list.isEmpty else { throw APIError.invalidRequest("\"messages\" must not be empty") }
        guard list.count <= maxMessages else { throw APIError.invalidRequest("at most \(maxMessages) messages") }
        var messages: [ChatMessage] = []
        messages.reserveCapacity(list.count)
        for (i, item) in list.enumerated() {
            guard let m = item as? [String: Any], let role = m["role"] as? String,
                  m["content"] is String || m["content"] is [Any] else {
                throw APIError.invalidRequest("messages[\(i)] must be {\"role\": string, \"content\": string or array of parts}")
            }
            guard roles.contains(role) else { throw APIError.invalidRequest("messages[\(i)].role must be system, user or assistant") }
            if m.keys.contains(where: { $0 != "role" && $0 != "content" }) {
                throw APIError.invalidRequest("messages[\(i)] has an unknown field")
            }
            if let content = m["content"] as? String {
                messages.append(ChatMessage(role: role, content: content))
                continue
            }
            let raw = m["content"] as! [Any]
            guard (1...100).contains(raw.count) else { throw APIError.invalidRequest("messages[\(i)].content must have 1 to 100 parts") }
            let parts = try raw.enumerated().map { try ContentPart.parse($0.element, message: i, part: $0.offset) }
            let message = ChatMessage(role: role, parts: parts)
            if message.imageCount > 0, role != "user" {
                throw APIError.invalidRequest("messages[\(i)]: image parts are accepted in user messages only")
            }
            messages.append(message)
        }
        var req = ChatRequest(messages: messages)
        if let model = obj["model"], !(model is NSNull) {
            guard let s = model as? String, !s.isEmpty, s.utf8.count <= 200 else {
                throw APIError.invalidRequest("\"model\" must be a non-empty string of at most 200 bytes")
            }
            req.model = s
        }
        if let mt = obj["max_tokens"], !(mt is NSNull) {
            guard let n = mt as? NSNumber, !Self.isBoolean(n), n.doubleValue == n.doubleValue.rounded(),
                  n.doubleValue >= 1, n.doubleValue <= 1_000_000 else {
                throw APIError.invalidRequest("\"max_tokens\" must be an integer from 1 to 1000000")
            }
            req.maxTokens = n.intValue
        }
        if let mode = obj["mode"], !(mode is NSNull) {
            guard let s = mode as? String, let m = Mode(rawValue: s) else {
                throw APIError.invalidRequest("\"mode\" must be \"full\" or \"summary\"")
            }
            req.mode = m
        }
        req.sampling = try SamplingParameters.parse(obj)
        return req
    }

    /// `true` for JSON `true`/`false`, which Foundation also hands back as `NSNumber`.
    static func isBoolean(_ n: NSNumber) -> Bool {
        let t = String(cString: n.objCType)
        return t == "c" || t == "B"
    }

    /// The request as a JSON body (the inverse of `parse`), for clients.
    public var jsonBody: Data {
        var obj: [String: Any] = ["messages": messages.map { ["role": $0.role, "content": $0.contentJSON] }]
        if let model { obj["model"] = model }
        if let maxTokens { obj["max_tokens"] = maxTokens }
        if mode != .full { obj["mode"] = mode.rawValue }
        obj.merge(sampling.jsonObject) { a, _ in a }
        return (try? JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys])) ?? Data()
    }
}

extension ChatRequest {
    /// Tokens added per message for its role and framing (OpenAI's chat format adds
    /// 3–4 per message; 4 keeps the estimate on the high side).
    public static let perMessageOverheadTokens = 4

    /// The relay's prompt estimate (docs/PROTOCOL.md §9), used to reserve budget before the
    /// upstream reports usage, and as the prompt count when it reports none: for each
    /// message, its content's UTF-8 bytes / 4 rounded up, plus
    /// ``perMessageOverheadTokens``. English BPE tokenizers average about 4 bytes per
    /// token, so this is close for English, over-estimates scripts whose letters take
    /// 2–3 UTF-8 bytes (Arabic, Cyrillic) and under-estimates text made of many
    /// one-byte tokens (digits, punctuation runs). Units: tokens.
    public static func estimatePromptTokens<S: Sequence>(_ contents: S) -> Int where S.Element == String {
        contents.reduce(0) { $0 + ($1.utf8.count + 3) / 4 + perMessageOverheadTokens }
    }

    /// ``estimatePromptTokens(_:)`` of this request's messages' text, plus
    /// `ContentPart.imageTokenEstimate` per image.
    public var estimatedPromptTokens: Int {
        ChatRequest.estimatePromptTokens(messages.map(\.content))
            + messages.reduce(0) { $0 + $1.imageCount } * ContentPart.imageTokenEstimate
    }

    /// Whether any message has an image part (`RELAY_CLIENT_PARAMETERS`' `images`).
    public var hasImages: Bool { messages.contains { $0.imageCount > 0 } }

    /// What an operator lets clients send (`RELAY_CLIENT_PARAMETERS`): the sampling fields, and
    /// `images` for image parts.
    public static let clientParameterNames = SamplingParameters.names + ["images"]

    /// The `clientParameterNames` this request uses, in that order.
    public var clientParametersSent: [String] { sampling.setNames + (hasImages ? ["images"] : []) }
}
