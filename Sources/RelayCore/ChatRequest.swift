import Foundation

/// One chat message of a request: `{"role":"user","content":"…"}`, or with `content` an
/// array of parts (`ContentPart`: text and images by URL, user messages only); an assistant
/// message may carry the tool calls it made (`tool_calls`, its `content` then a string,
/// `null` or absent), and a `tool` message answers one of them:
/// `{"role":"tool","tool_call_id":…,"content":string}` (docs/PROTOCOL.md §3.1).
public struct ChatMessage: Sendable, Equatable {
    /// `system`, `user`, `assistant` or `tool`.
    public var role: String
    /// The message text (with `parts`: its text parts, joined; a tool message: the tool's
    /// output; an assistant message of tool calls sent without content: empty).
    public var content: String
    /// The parts when `content` was sent as an array; `nil` for a plain string.
    public var parts: [ContentPart]?
    /// The calls an assistant message made (`tool_calls`), in order; empty for other messages.
    public var toolCalls: [ChatToolCall] = []
    /// The call a `tool` message answers (`tool_call_id`); `nil` for other roles.
    public var toolCallID: String?

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

    /// An assistant message that made `toolCalls`, with its text (empty: none).
    public init(assistant content: String, toolCalls: [ChatToolCall]) {
        self.init(role: "assistant", content: content)
        self.toolCalls = toolCalls
    }

    /// A `tool` message: the output of call `callID`.
    public init(toolCallID callID: String, content: String) {
        self.init(role: "tool", content: content)
        self.toolCallID = callID
    }

    /// The images of `parts`.
    public var imageCount: Int {
        parts?.reduce(0) { if case .imageURL = $1 { return $0 + 1 } else { return $0 } } ?? 0
    }

    /// `content` as JSON: the string, or the array of parts; `null` for an assistant message
    /// of tool calls with no text.
    public var contentJSON: Any {
        if parts == nil, content.isEmpty, !toolCalls.isEmpty { return NSNull() }
        return parts.map { $0.map(\.jsonObject) } ?? content
    }

    /// The message as its JSON object (the inverse of `ChatRequest.parse`'s reading).
    public var jsonObject: [String: Any] {
        var o: [String: Any] = ["role": role, "content": contentJSON]
        if !toolCalls.isEmpty { o["tool_calls"] = toolCalls.map(\.jsonObject) }
        if let toolCallID { o["tool_call_id"] = toolCallID }
        return o
    }

    /// The text the prompt estimate counts for the message (docs/PROTOCOL.md §9.2): its
    /// `content`, then each tool call's name and arguments.
    public var promptText: String {
        toolCalls.isEmpty ? content : toolCalls.reduce(content) { $0 + $1.name + $1.arguments }
    }
}

/// The body of `POST /api/chat/stream` (docs/PROTOCOL.md §3):
/// `{"messages":[{"role":"user","content":"…"}], "model"?: str, "max_tokens"?: int, "mode"?: "full"|"summary"}`,
/// the sampling fields (`SamplingParameters`: `temperature`, `top_p`, `stop`, `seed`,
/// `presence_penalty`, `frequency_penalty`), and the tools the model may call (`tools`:
/// `ChatTool`; `tool_choice`: `ToolChoice`).
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
    /// The functions the model may call, in the client's order (none by default).
    public var tools: [ChatTool]
    /// Whether and which tool the model must call; `nil` leaves it to the upstream (`auto`
    /// when there are tools). Only with `tools`.
    public var toolChoice: ToolChoice?
    /// Who asked, set by the relay after admission for upstreams that are told
    /// (`CallerIdentity`); never parsed from a body, never stored with the request.
    public var caller: CallerIdentity?

    public init(messages: [ChatMessage], model: String? = nil, maxTokens: Int? = nil, mode: Mode = .full,
                sampling: SamplingParameters = SamplingParameters(), tools: [ChatTool] = [], toolChoice: ToolChoice? = nil) {
        self.messages = messages
        self.model = model
        self.maxTokens = maxTokens
        self.mode = mode
        self.sampling = sampling
        self.tools = tools
        self.toolChoice = toolChoice
    }

    static let roles: Set<String> = ["system", "user", "assistant", "tool"]
    /// The most messages a request holds, the operator's system prompt included.
    public static let maxMessages = 1000
    static let fields = Set(["messages", "model", "max_tokens", "mode", "tools", "tool_choice"] + SamplingParameters.names)

    /// Parses and validates a request body.
    /// - Throws: `APIError` 400 `invalid_json` when `body` is not a JSON object;
    ///   400 `invalid_request` for a missing or empty `messages`, a message that is not
    ///   `{role, content}` with a known role (or a tool message or tool calls of the shapes
    ///   `ChatMessage` describes), a `tool` message that answers no call an earlier assistant
    ///   message made or answers one twice, a call id used twice, an unknown field, an
    ///   out-of-range value, or `tools` / `tool_choice` against `ChatTool.parseList` /
    ///   `ToolChoice.parse`.
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
        // Call ids made so far → whether a tool message answered them yet.
        var calls: [String: Bool] = [:]
        for (i, item) in list.enumerated() {
            let message = try parseMessage(item, index: i)
            for call in message.toolCalls {
                guard calls[call.id] == nil else {
                    throw APIError.invalidRequest("messages[\(i)]: tool call id \"\(call.id)\" repeats an earlier call's")
                }
                calls[call.id] = false
            }
            if let id = message.toolCallID {
                switch calls[id] {
                case nil: throw APIError.invalidRequest("messages[\(i)].tool_call_id \"\(id)\" answers no call of an earlier assistant message")
                case true?: throw APIError.invalidRequest("messages[\(i)].tool_call_id \"\(id)\" answers a call an earlier tool message answered")
                case false?: calls[id] = true
                }
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
        if let t = obj["tools"], !(t is NSNull) {
            // Read again as `JSONValue`, which keeps the schemas' member order and number literals.
            let value: JSONValue
            do { value = try LenientJSON.parse(body) } catch { throw APIError.invalidRequest("\"tools\" cannot be read: \(error)") }
            req.tools = try ChatTool.parseList(value["tools"])
        }
        req.toolChoice = try ToolChoice.parse(obj["tool_choice"], tools: req.tools)
        return req
    }

    /// Reads message `i`: `{role, content}`, a `tool` message, or an assistant message with
    /// `tool_calls`.
    /// - Throws: `APIError` 400 `invalid_request` naming the message and what is wrong.
    static func parseMessage(_ item: Any, index i: Int) throws -> ChatMessage {
        let shape = "messages[\(i)] must be {\"role\": string, \"content\": string or array of parts}"
        guard let m = item as? [String: Any], let role = m["role"] as? String else { throw APIError.invalidRequest(shape) }
        if role == "tool" {
            guard Set(m.keys) == ["role", "tool_call_id", "content"], let id = m["tool_call_id"] as? String,
                  let content = m["content"] as? String else {
                throw APIError.invalidRequest("messages[\(i)] must be {\"role\": \"tool\", \"tool_call_id\": string, \"content\": string}")
            }
            guard ChatToolCall.isValidID(id) else { throw APIError.invalidRequest("messages[\(i)].tool_call_id must be 1 to \(ChatToolCall.maxIDBytes) bytes") }
            return ChatMessage(toolCallID: id, content: content)
        }
        let sentCalls = m["tool_calls"].map { !($0 is NSNull) } ?? false
        let contentMissing = m["content"] == nil || m["content"] is NSNull
        guard m["content"] is String || m["content"] is [Any] || (contentMissing && role == "assistant" && sentCalls) else {
            throw APIError.invalidRequest(shape)
        }
        guard roles.contains(role) else { throw APIError.invalidRequest("messages[\(i)].role must be system, user, assistant or tool") }
        if sentCalls, role != "assistant" {
            throw APIError.invalidRequest("messages[\(i)]: only assistant messages have tool_calls")
        }
        if m.keys.contains(where: { $0 != "role" && $0 != "content" && $0 != "tool_calls" }) {
            throw APIError.invalidRequest("messages[\(i)] has an unknown field")
        }
        let calls = try ChatToolCall.parseList(m["tool_calls"], message: i)
        if contentMissing, calls.isEmpty { throw APIError.invalidRequest(shape) }
        var message: ChatMessage
        if let raw = m["content"] as? [Any] {
            guard (1...100).contains(raw.count) else { throw APIError.invalidRequest("messages[\(i)].content must have 1 to 100 parts") }
            let parts = try raw.enumerated().map { try ContentPart.parse($0.element, message: i, part: $0.offset) }
            message = ChatMessage(role: role, parts: parts)
            if message.imageCount > 0, role != "user" {
                throw APIError.invalidRequest("messages[\(i)]: image parts are accepted in user messages only")
            }
        } else {
            message = ChatMessage(role: role, content: m["content"] as? String ?? "")
        }
        message.toolCalls = calls
        return message
    }

    /// `true` for JSON `true`/`false`, which Foundation also hands back as `NSNumber`.
    static func isBoolean(_ n: NSNumber) -> Bool {
        let t = String(cString: n.objCType)
        return t == "c" || t == "B"
    }

    /// The request as a JSON body (the inverse of `parse`), for clients.
    public var jsonBody: Data {
        var obj: [String: Any] = ["messages": messages.map(\.jsonObject)]
        if let model { obj["model"] = model }
        if let maxTokens { obj["max_tokens"] = maxTokens }
        if mode != .full { obj["mode"] = mode.rawValue }
        obj.merge(sampling.jsonObject) { a, _ in a }
        if let toolChoice { obj["tool_choice"] = toolChoice.jsonObject }
        var data = (try? JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys])) ?? Data()
        // `tools` as their own JSON text (`ChatTool.jsonText`): the schemas keep their member
        // order, which a JSONSerialization dictionary would lose.
        if !tools.isEmpty, data.last == UInt8(ascii: "}") {
            data.removeLast()
            data.append(contentsOf: Array(",\"tools\":\(ChatTool.jsonText(tools))}".utf8))
        }
        return data
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

    /// ``estimatePromptTokens(_:)`` of this request's messages' text (`ChatMessage.promptText`:
    /// the content, and tool calls' names and arguments), plus
    /// `ContentPart.imageTokenEstimate` per image, plus ``estimateToolTokens(_:)`` of `tools`.
    public var estimatedPromptTokens: Int {
        ChatRequest.estimatePromptTokens(messages.map(\.promptText))
            + messages.reduce(0) { $0 + $1.imageCount } * ContentPart.imageTokenEstimate
            + ChatRequest.estimateToolTokens(tools)
    }

    /// The prompt estimate of the declared tools: their JSON's UTF-8 bytes
    /// (`ChatTool.jsonText(_:)`) / 4 rounded up; 0 without tools. Units: tokens.
    public static func estimateToolTokens(_ tools: [ChatTool]) -> Int {
        tools.isEmpty ? 0 : (ChatTool.jsonText(tools).utf8.count + 3) / 4
    }

    /// The prompt estimate of a continuation of this request (docs/PROTOCOL.md §9.2): the
    /// request with `soFar`, the answer so far, as a final assistant message. Units: tokens.
    public func estimatedPromptTokens(continuing soFar: String) -> Int {
        var r = self
        r.messages.append(ChatMessage(role: "assistant", content: soFar))
        return r.estimatedPromptTokens
    }

    /// Whether any message has an image part (`RELAY_CLIENT_PARAMETERS`' `images`).
    public var hasImages: Bool { messages.contains { $0.imageCount > 0 } }

    /// What an operator lets clients send (`RELAY_CLIENT_PARAMETERS`): the sampling fields,
    /// `images` for image parts, and `tools` for `tools` and `tool_choice` (tool messages and
    /// assistant tool calls are part of the conversation and need no name).
    public static let clientParameterNames = SamplingParameters.names + ["images", "tools"]

    /// The `clientParameterNames` this request uses, in that order.
    public var clientParametersSent: [String] {
        sampling.setNames + (hasImages ? ["images"] : []) + (tools.isEmpty && toolChoice == nil ? [] : ["tools"])
    }
}
