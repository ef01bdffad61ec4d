import Foundation

/// Token counts of one generation, as reported by the upstream (or counted by the
/// simulated upstream). Units: tokens.
public struct Usage: Sendable, Equatable, Codable {
    /// Tokens of the prompt (the request's messages).
    public var promptTokens: Int
    /// Tokens generated.
    public var completionTokens: Int
    /// `promptTokens + completionTokens` unless the upstream says otherwise.
    public var totalTokens: Int

    public init(promptTokens: Int, completionTokens: Int, totalTokens: Int? = nil) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
        self.totalTokens = totalTokens ?? (promptTokens + completionTokens)
    }

    enum CodingKeys: String, CodingKey {
        case promptTokens = "prompt_tokens"
        case completionTokens = "completion_tokens"
        case totalTokens = "total_tokens"
    }
}

/// One event of a chat stream, as carried in an SSE `data:` line (docs/PROTOCOL.md §5).
///
/// JSON shapes:
/// * `{"type":"delta","content":"…"}`
/// * `{"type":"done","finish_reason":"stop","usage":{"prompt_tokens":…,"completion_tokens":…,"total_tokens":…}}`
/// * `{"type":"error","status":401,"code":"session_revoked","message":"…"}`
/// * a typed part (`AnswerPart`): `{"type":"reasoning",…}`, `{"type":"tool_call_start",…}`, …
public enum StreamEvent: Sendable, Equatable {
    /// A piece of generated text.
    case delta(String)
    /// A typed part other than text (reasoning, a tool call's start, arguments or end, a
    /// source, app data): not terminal, numbered like a `delta`.
    case part(AnswerPart)
    /// The generation finished; `finishReason` is `stop`, `length`, `cancelled`, …;
    /// `budgetLimited`: the token budget's grant, not the request, cut the answer
    /// (written as `"budget_limited":true`, omitted when false).
    case done(finishReason: FinishReason, usage: Usage, budgetLimited: Bool = false)
    /// The stream failed; `status` is the HTTP-like status (401, 502, 503, …).
    case error(status: Int, code: ErrorCode, message: String)

    /// `true` for `done` and `error`: the relay ends the response after it.
    public var isTerminal: Bool {
        switch self {
        case .delta, .part: return false
        case .done, .error: return true
        }
    }

    /// The event's JSON text: one line, no newlines (they are escaped).
    public var json: String {
        switch self {
        case .delta(let content):
            // One per token: written in one pass into one allocation when the content
            // needs no escaping (the usual case), else escaped.
            var c = content
            if let plain = c.withUTF8({ StreamEvent.plainDeltaJSON($0) }) { return plain }
            var s = StreamEvent.deltaHead.description
            s.reserveCapacity(content.utf8.count + 32)
            JSONText.appendEscaped(content, to: &s)
            s.append("\"}")
            return s
        case .part(let p):
            return p.json
        case .done(let reason, let u, let budgetLimited):
            let limited = budgetLimited ? ",\"budget_limited\":true" : ""
            return "{\"type\":\"done\",\"finish_reason\":\(JSONText.quoted(reason.rawValue)),\"usage\":{\"prompt_tokens\":\(u.promptTokens),\"completion_tokens\":\(u.completionTokens),\"total_tokens\":\(u.totalTokens)}\(limited)}"
        case .error(let status, let code, let message):
            return "{\"type\":\"error\",\"status\":\(status),\"code\":\(JSONText.quoted(code.rawValue)),\"message\":\(JSONText.quoted(message))}"
        }
    }

    /// The delta's JSON up to its content.
    private static let deltaHead: StaticString = "{\"type\":\"delta\",\"content\":\""

    /// `{"type":"delta","content":"<content>"}` for content that needs no JSON
    /// escaping (`JSONText.mayNeedEscaping`), else `nil`.
    private static func plainDeltaJSON(_ content: UnsafeBufferPointer<UInt8>) -> String? {
        guard !JSONText.mayNeedEscaping(content) else { return nil }
        let head = deltaHead
        let total = head.utf8CodeUnitCount + content.count + 2
        return String(unsafeUninitializedCapacity: total) { out in
            let base = out.baseAddress!
            base.initialize(from: head.utf8Start, count: head.utf8CodeUnitCount)
            var at = head.utf8CodeUnitCount
            if let src = content.baseAddress, content.count > 0 { (base + at).initialize(from: src, count: content.count) }
            at += content.count
            base[at] = 0x22   // "
            base[at + 1] = 0x7D   // }
            return total
        }
    }

    /// Decodes an event from its JSON text.
    /// - Throws: `StreamEventDecodingError` when the text is not JSON, not an object,
    ///   or lacks the fields its `type` requires.
    public init(json: String) throws {
        try self.init(jsonData: Data(json.utf8))
    }

    /// Decodes an event from UTF-8 JSON bytes. See `init(json:)`.
    ///
    /// Read with `LenientJSON` (RFC 8259), not `JSONSerialization`: swift-corelibs-
    /// foundation's parser drops a U+FEFF at the start of a string and right after an
    /// escape (it decodes each run between escapes as a document, BOM stripped), which
    /// would lose text from a delta such as `"\n\u{FEFF}…"`.
    public init(jsonData: Data) throws {
        guard let obj = try? LenientJSON.parse(jsonData), let type = obj["type"]?.stringValue else {
            throw StreamEventDecodingError.malformed
        }
        switch type {
        case "delta":
            guard let c = obj["content"]?.stringValue else { throw StreamEventDecodingError.malformed }
            self = .delta(c)
        case "done":
            let reason = obj["finish_reason"]?.stringValue ?? "stop"
            let u = obj["usage"]
            let p = u?["prompt_tokens"]?.intValue ?? 0
            let c = u?["completion_tokens"]?.intValue ?? 0
            let t = u?["total_tokens"]?.intValue ?? (p + c)
            self = .done(finishReason: FinishReason(rawValue: reason), usage: Usage(promptTokens: p, completionTokens: c, totalTokens: t),
                         budgetLimited: obj["budget_limited"] == .bool(true))
        case "error":
            self = .error(status: obj["status"]?.intValue ?? 500,
                          code: ErrorCode(rawValue: obj["code"]?.stringValue ?? "error"),
                          message: obj["message"]?.stringValue ?? "")
        default:
            guard AnswerPart.types.contains(type) else { throw StreamEventDecodingError.unknownType(type) }
            self = .part(try AnswerPart(type: type, object: obj))
        }
    }
}

/// Why an event's JSON could not be decoded.
public enum StreamEventDecodingError: Error, Equatable {
    /// Not a JSON object with a string `type` and the fields that type requires.
    case malformed
    /// A `type` other than `delta`, `done`, `error` and the part types (`AnswerPart.types`).
    case unknownType(String)
}

/// What a stored event is: its JSON `type`.
public enum StreamEventKind: UInt8, Sendable, Equatable {
    /// `{"type":"delta",…}`: a piece of the answer.
    case delta
    /// `{"type":"done",…}`: the answer finished (terminal).
    case done
    /// `{"type":"error",…}`: the stream failed (terminal).
    case error
    /// Any other type the relay writes: a typed part (`AnswerPart`), not terminal.
    case part
}

/// A stream event with its position in the stream: `seq` counts from 1 within a
/// request, +1 per event, no gaps (docs/PROTOCOL.md §5). It is the SSE `id` and the
/// Redis stream entry ID `<seq>-0`. It carries the event's JSON, encoded once, and its
/// kind, so nothing downstream reads the text to learn what the event is.
public struct SequencedEvent: Sendable, Equatable {
    /// Position in the stream, from 1.
    public let seq: UInt64
    /// The event's JSON text (as stored in Redis and sent on the wire).
    public let json: String
    /// What the event is.
    public let kind: StreamEventKind

    /// An event by its JSON (stored, published, or acknowledged by the appender): its
    /// kind is read once from the `type` the relay writes first (`{"type":"delta"`,
    /// `{"type":"done"`, `{"type":"error"`; anything else is a part).
    public init(seq: UInt64, json: String) {
        self.seq = seq
        var json = json   // `withUTF8` makes a bridged string contiguous; a native one is read as is
        self.kind = json.withUTF8(SequencedEvent.kind)
        self.json = json
    }

    /// `true` for `done` and `error`: the relay ends the response after it.
    @inline(__always) public var isTerminal: Bool { kind == .done || kind == .error }

    /// The kind named by the JSON's leading `{"type":"…"`, compared as UTF-8 bytes in
    /// place (`String.hasPrefix` compares by Unicode canonical equivalence, and the
    /// generic `utf8.starts(with:)` walks the view index by index: ten times the cost
    /// per delivered event; docs/BENCHMARKS.md). The prefixes are ASCII.
    static func kind(_ json: UnsafeBufferPointer<UInt8>) -> StreamEventKind {
        func starts(with prefix: StaticString) -> Bool {
            prefix.utf8CodeUnitCount <= json.count && memcmp(json.baseAddress!, prefix.utf8Start, prefix.utf8CodeUnitCount) == 0
        }
        if starts(with: "{\"type\":\"delta\"") { return .delta }
        if starts(with: "{\"type\":\"done\"") { return .done }
        if starts(with: "{\"type\":\"error\"") { return .error }
        return .part
    }
}
