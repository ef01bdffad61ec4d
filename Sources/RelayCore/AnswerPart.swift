/// A typed part of an answer other than its text (docs/PROTOCOL.md §5.5): reasoning, a
/// tool call, a source, an app's data. Each is one numbered event, like a `delta`, so a
/// resume from any `Last-Event-ID` lands between two parts or inside a part's stream
/// (a tool call's argument deltas) with nothing replayed and nothing missed.
///
/// JSON shapes (`StreamEvent.part(_).json`; the relay writes fields in this order):
/// * `{"type":"reasoning","content":"…"}`
/// * `{"type":"reasoning_redacted","data":"…"}`
/// * `{"type":"tool_call_start","id":"call_1","name":"get_weather"}`
/// * `{"type":"tool_call_delta","id":"call_1","arguments":"{\"ci"}`
/// * `{"type":"tool_call_end","id":"call_1","name":"get_weather","input":{"city":"Riyadh"}}`
/// * `{"type":"tool_result","id":"call_1","output":<any JSON>}`
/// * `{"type":"source","id":"src_1","url":"https://…","title":"…"}` (`title` omitted when unknown)
/// * `{"type":"data","name":"weather","id":"w1","data":<any JSON>}` (`id` omitted when unknown)
public enum AnswerPart: Sendable, Equatable {
    /// A piece of the model's reasoning text (its "thinking"); the pieces in seq order are
    /// the reasoning. One per upstream token.
    case reasoning(String)
    /// Reasoning the upstream sent only in an opaque, encrypted form (Anthropic
    /// `redacted_thinking`): `data` is passed through as sent, never shown.
    case reasoningRedacted(data: String)
    /// A tool call begins: `id` (unique within the answer) and the tool's `name`.
    case toolCallStart(id: String, name: String)
    /// A piece of the call's arguments as JSON text; the pieces in seq order are the
    /// arguments' JSON (not valid JSON until the call ends).
    case toolCallDelta(id: String, arguments: String)
    /// The call's arguments are complete: `input` is their parsed JSON value (the
    /// concatenated `arguments` parsed; `{}` for none).
    case toolCallEnd(id: String, name: String, input: JSONValue)
    /// The output of a call that the upstream ran itself (an agent backend's tool):
    /// `output` is any JSON value, as the backend sent it.
    case toolResult(id: String, output: JSONValue)
    /// A source the answer cites.
    case source(id: String, url: String, title: String?)
    /// An app-defined part: `name` (`[A-Za-z0-9_-]`, 1–64), an optional `id`, any JSON value.
    case data(name: String, id: String?, value: JSONValue)

    /// The part's JSON `type`.
    public var type: String {
        switch self {
        case .reasoning: return "reasoning"
        case .reasoningRedacted: return "reasoning_redacted"
        case .toolCallStart: return "tool_call_start"
        case .toolCallDelta: return "tool_call_delta"
        case .toolCallEnd: return "tool_call_end"
        case .toolResult: return "tool_result"
        case .source: return "source"
        case .data: return "data"
        }
    }

    /// Every part type, as its JSON `type`.
    public static let types: Set<String> = ["reasoning", "reasoning_redacted", "tool_call_start", "tool_call_delta",
                                            "tool_call_end", "tool_result", "source", "data"]

    /// Whether the part is generated text the upstream bills as completion tokens
    /// (reasoning and argument pieces): counted one token each, like a `delta`, when the
    /// upstream reports no usage (docs/PROTOCOL.md §9.2).
    public var countsAsToken: Bool {
        switch self {
        case .reasoning, .toolCallDelta: return true
        default: return false
        }
    }

    /// The part's JSON text (one line).
    public var json: String {
        let q = JSONText.quoted
        switch self {
        case .reasoning(let c):
            return "{\"type\":\"reasoning\",\"content\":\(q(c))}"
        case .reasoningRedacted(let d):
            return "{\"type\":\"reasoning_redacted\",\"data\":\(q(d))}"
        case .toolCallStart(let id, let name):
            return "{\"type\":\"tool_call_start\",\"id\":\(q(id)),\"name\":\(q(name))}"
        case .toolCallDelta(let id, let a):
            return "{\"type\":\"tool_call_delta\",\"id\":\(q(id)),\"arguments\":\(q(a))}"
        case .toolCallEnd(let id, let name, let input):
            return "{\"type\":\"tool_call_end\",\"id\":\(q(id)),\"name\":\(q(name)),\"input\":\(input.compactJSON)}"
        case .toolResult(let id, let output):
            return "{\"type\":\"tool_result\",\"id\":\(q(id)),\"output\":\(output.compactJSON)}"
        case .source(let id, let url, let title):
            return "{\"type\":\"source\",\"id\":\(q(id)),\"url\":\(q(url))" + (title.map { ",\"title\":\(q($0))" } ?? "") + "}"
        case .data(let name, let id, let value):
            return "{\"type\":\"data\",\"name\":\(q(name))" + (id.map { ",\"id\":\(q($0))" } ?? "") + ",\"data\":\(value.compactJSON)}"
        }
    }

    /// Reads a part from a parsed event object whose `type` is one of `types`.
    /// - Throws: `StreamEventDecodingError.malformed` when a field the type requires is
    ///   missing or of the wrong JSON type, an id or name is empty, or a data part's name
    ///   is not `[A-Za-z0-9_-]{1,64}`.
    public init(type: String, object o: JSONValue) throws(StreamEventDecodingError) {
        func string(_ k: String) throws(StreamEventDecodingError) -> String {
            guard let s = o[k]?.stringValue else { throw .malformed }
            return s
        }
        func name(_ k: String) throws(StreamEventDecodingError) -> String {
            let s = try string(k)
            guard !s.isEmpty else { throw .malformed }
            return s
        }
        func optional(_ k: String) throws(StreamEventDecodingError) -> String? {
            guard let v = o[k], !v.isNull else { return nil }
            guard let s = v.stringValue else { throw .malformed }
            return s
        }
        switch type {
        case "reasoning": self = .reasoning(try string("content"))
        case "reasoning_redacted": self = .reasoningRedacted(data: try string("data"))
        case "tool_call_start": self = .toolCallStart(id: try name("id"), name: try name("name"))
        case "tool_call_delta": self = .toolCallDelta(id: try name("id"), arguments: try string("arguments"))
        case "tool_call_end":
            guard let input = o["input"] else { throw .malformed }
            self = .toolCallEnd(id: try name("id"), name: try name("name"), input: input)
        case "tool_result":
            guard let output = o["output"] else { throw .malformed }
            self = .toolResult(id: try name("id"), output: output)
        case "source": self = .source(id: try name("id"), url: try name("url"), title: try optional("title"))
        case "data":
            let n = try name("name")
            guard AnswerPart.isDataName(n), let v = o["data"] else { throw .malformed }
            self = .data(name: n, id: try optional("id"), value: v)
        default: throw .unknownType(type)
        }
    }

    /// Whether `name` may name a data part: 1–64 of `A–Z a–z 0–9 _ -` (it becomes part
    /// of a chunk type, `data-<name>`, in the AI SDK dialect).
    public static func isDataName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2D
        }
    }
}
