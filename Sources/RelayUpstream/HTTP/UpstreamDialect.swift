import RelayCore

/// One thing an upstream SSE message means for the relay's stream (a message may mean
/// several, in order; a role chunk, a ping or an unknown event type means none).
enum DialectStep: Equatable {
    /// Generated text, as UTF-16 code units: it may begin or end with half of a surrogate pair
    /// that the upstream split across chunks (`SurrogateJoiner` pairs them).
    case delta(JSONString)
    /// A piece of the model's reasoning, as UTF-16 code units (joined like `delta`): a
    /// `reasoning` part (docs/PROTOCOL.md §5.5).
    case reasoning(JSONString)
    /// A complete typed part other than reasoning text: a tool call's start, argument piece
    /// or end (`ToolCallAssembler`), redacted reasoning, a source.
    case part(AnswerPart)
    /// The upstream's explicit end of stream (`data: [DONE]`, `message_stop`).
    case end
    /// The upstream reported an error inside the stream (the dialect's error shape), or
    /// broke the rules of parts (`ToolCallViolation`); the text explains it.
    case fail(String)
    /// Valid JSON of a shape the format does not document (docs/UPSTREAMS.md): skipped and
    /// counted, the stream goes on. The text says what was unexpected.
    case skip(String)
}

/// An upstream message that is not JSON at all (or not the format's framing).
struct MalformedChunk: Error {
    let reason: String
}

/// A JSON chunk whose fields do not have the documented types (see `DialectStep.skip`).
struct ShapeMismatch: Error {
    let reason: String
}

/// One upstream streaming format: maps its SSE messages to `DialectStep`s and remembers what
/// the stream reported along the way (finish reason, token counts, open tool calls).
protocol UpstreamDialect {
    /// Maps one dispatched SSE message.
    /// - Throws: `MalformedChunk` when the data is not JSON (`LenientJSON`); valid JSON of an
    ///   unexpected shape is `.skip`, not an error.
    mutating func step(_ message: SSEMessage) throws(MalformedChunk) -> [DialectStep]
    /// The stream reached its end (its end marker, or a close after a finish reason): what
    /// is still open ends now (OpenAI ends its open tool calls), or is refused (`.fail`:
    /// a call the format ends explicitly that never ended). Never `.end`.
    mutating func streamEnded() -> [DialectStep]
    /// The relay's `finish_reason` reported so far (`stop`, `length`, …), if any.
    var finishReason: String? { get }
    /// Prompt tokens reported by the upstream, if any.
    var promptTokens: Int? { get }
    /// Completion tokens reported by the upstream, if any.
    var completionTokens: Int? { get }
    /// Unpaired surrogate halves in tool-call arguments replaced by U+FFFD so far.
    var replacedArgumentHalves: Int { get }
    /// Name used in error messages (`"OpenAI-compatible"`, `"Anthropic"`).
    static var name: String { get }
}

extension UpstreamDialect {
    /// The message's data as JSON (`LenientJSON`: lone surrogate escapes kept).
    /// - Throws: `MalformedChunk` naming `what` when the data is not one JSON value.
    static func json(_ message: SSEMessage, what: String) throws(MalformedChunk) -> JSONValue {
        do {
            return try LenientJSON.parse(message.data.utf8)
        } catch {
            throw MalformedChunk(reason: "\(what) is not JSON (\(error))")
        }
    }
}

/// Typed, optional field access for dialects: absent and `null` read as `nil`, any other
/// type than the documented one throws `ShapeMismatch`.
extension JSONValue {
    func object(_ key: String) throws(ShapeMismatch) -> JSONValue? {
        guard let v = self[key], !v.isNull else { return nil }
        guard case .object = v else { throw ShapeMismatch(reason: "\"\(key)\" is not an object") }
        return v
    }

    func array(_ key: String) throws(ShapeMismatch) -> [JSONValue]? {
        guard let v = self[key], !v.isNull else { return nil }
        guard case .array(let items) = v else { throw ShapeMismatch(reason: "\"\(key)\" is not an array") }
        return items
    }

    func string(_ key: String) throws(ShapeMismatch) -> JSONString? {
        guard let v = self[key], !v.isNull else { return nil }
        guard let s = v.stringUnits else { throw ShapeMismatch(reason: "\"\(key)\" is not a string") }
        return s
    }

    func int(_ key: String) throws(ShapeMismatch) -> Int? {
        guard let v = self[key], !v.isNull else { return nil }
        guard let i = v.intValue else { throw ShapeMismatch(reason: "\"\(key)\" is not an integer") }
        return i
    }

    /// A string or an integer read as text (OpenAI's `error.code`); anything else is `nil`.
    func looseText(_ key: String) -> String? {
        guard let v = self[key] else { return nil }
        if let s = v.stringValue { return s }
        return v.intValue.map(String.init)
    }

    var isObject: Bool {
        if case .object = self { return true }
        return false
    }
}
