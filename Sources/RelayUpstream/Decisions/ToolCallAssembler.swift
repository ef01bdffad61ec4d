import RelayCore

/// Assembles the tool calls an upstream streams into the relay's tool-call parts
/// (docs/PROTOCOL.md §5.5; how each upstream's calls map: docs/UPSTREAMS.md, "Parts").
///
/// Each upstream names a call's place in its stream by a `slot` (OpenAI Chat Completions:
/// `tool_calls[].index`; Anthropic Messages: the `tool_use` content block's `index`) and
/// sends the call's `id` and `name` once, at its start, then its arguments as pieces of
/// JSON text. The assembler turns those into `tool_call_start`, `tool_call_delta` and
/// `tool_call_end` parts and keeps the rules of §5.5 for every upstream:
///
/// * a call starts with a non-empty `id` and `name`, and an `id` is used once per answer;
/// * arguments and the end come only for a call that started and has not ended;
/// * a call's arguments are at most `maxArgumentBytes` (UTF-8), and an answer has at most
///   `maxCalls` calls;
/// * at its end a call's arguments (the concatenated pieces, exactly as sent to clients)
///   are parsed as JSON (`LenientJSON`); none, or only whitespace, is `{}`; arguments that
///   do not parse end nothing: the call is refused, never passed on half-read;
/// * `requireAllEnded` refuses an answer that ends with a call still open.
///
/// Any broken rule throws `ToolCallViolation`, whose message names the upstream and the
/// call (id and tool name; never the arguments' text): the dialect ends the answer with
/// `502 upstream_error`. After a violation the assembler is not used again.
///
/// Argument pieces are UTF-16 code units as the upstream's JSON escaped them: a surrogate
/// pair split across two pieces is joined (`SurrogateJoiner`, one per call), an unpaired
/// half becomes U+FFFD, as for text (docs/UPSTREAMS.md).
///
/// Pure value, no I/O.
struct ToolCallAssembler {
    /// Most bytes (UTF-8) of one call's arguments: 1 MiB. More ends the answer with
    /// `502 upstream_error` before the piece that crosses the limit is passed on.
    static let maxArgumentBytes = 1 << 20
    /// Most tool calls in one answer: 128 (a bound on what one answer holds in memory,
    /// 128 × `maxArgumentBytes`; models call a handful of tools per turn).
    static let maxCalls = 128

    /// The upstream's name in messages (`"OpenAI-compatible"`, `"Anthropic"`).
    let upstream: String

    /// A call that started and has not ended.
    private struct OpenCall {
        let slot: Int
        let id: String
        let name: String
        var arguments = ""
        var bytes = 0
        var joiner = SurrogateJoiner()
    }

    /// Open calls in the order they started.
    private var open: [OpenCall] = []
    /// Every id started in this answer.
    private var ids: Set<String> = []
    /// Unpaired surrogate halves in arguments replaced by U+FFFD so far.
    private(set) var replacedSurrogateHalves = 0

    /// - Parameter upstream: the upstream's name, for violation messages.
    init(upstream: String) {
        self.upstream = upstream
    }

    /// The id of the call open at `slot`, if any.
    func openID(atSlot slot: Int) -> String? {
        open.first { $0.slot == slot }?.id
    }

    /// Whether a call is open (started, not ended).
    var hasOpenCalls: Bool { !open.isEmpty }

    /// A call starts at `slot`.
    /// - Returns: its `tool_call_start` part.
    /// - Throws: `ToolCallViolation` when `id` or `name` is missing or empty, `id` was used
    ///   before in this answer, a call is already open at `slot`, or the answer already
    ///   has `maxCalls` calls.
    mutating func start(slot: Int, id: String?, name: String?) throws(ToolCallViolation) -> AnswerPart {
        guard let id, !id.isEmpty else {
            throw violation("started the tool call at index \(slot) without an id")
        }
        guard let name, !name.isEmpty else {
            throw violation("started tool call \"\(id)\" without a name")
        }
        guard !ids.contains(id) else {
            throw violation("started tool call \"\(id)\" (\(name)) twice")
        }
        if let other = openID(atSlot: slot) {
            throw violation("started tool call \"\(id)\" (\(name)) at index \(slot) while \"\(other)\" is open there")
        }
        guard ids.count < Self.maxCalls else {
            throw violation("started more than \(Self.maxCalls) tool calls")
        }
        ids.insert(id)
        open.append(OpenCall(slot: slot, id: id, name: name))
        return .toolCallStart(id: id, name: name)
    }

    /// A piece of the arguments of the call open at `slot`.
    /// - Parameter arguments: the piece's UTF-16 units, as the upstream's JSON string held them.
    /// - Returns: its `tool_call_delta` part; `nil` when the piece adds no text yet (empty,
    ///   or only a surrogate half held for the next piece).
    /// - Throws: `ToolCallViolation` when no call is open at `slot`, or the call's
    ///   arguments would exceed `maxArgumentBytes`.
    mutating func append(slot: Int, arguments: JSONString) throws(ToolCallViolation) -> AnswerPart? {
        guard let k = open.firstIndex(where: { $0.slot == slot }) else {
            throw violation("sent arguments for a tool call at index \(slot), where none is open")
        }
        let before = open[k].joiner.replacedHalves
        let text = open[k].joiner.append(arguments.units)
        replacedSurrogateHalves += open[k].joiner.replacedHalves - before
        return try add(text, to: k)
    }

    /// The call open at `slot` ends.
    /// - Returns: a last `tool_call_delta` when a held surrogate half becomes U+FFFD, then
    ///   the call's `tool_call_end` with its parsed arguments.
    /// - Throws: `ToolCallViolation` when no call is open at `slot`, or its arguments are
    ///   not one JSON value.
    mutating func end(slot: Int) throws(ToolCallViolation) -> [AnswerPart] {
        guard let k = open.firstIndex(where: { $0.slot == slot }) else {
            throw violation("ended a tool call at index \(slot), where none is open")
        }
        var parts: [AnswerPart] = []
        let before = open[k].joiner.replacedHalves
        let rest = open[k].joiner.finish()
        replacedSurrogateHalves += open[k].joiner.replacedHalves - before
        if let d = try add(rest, to: k) { parts.append(d) }
        let call = open.remove(at: k)
        parts.append(.toolCallEnd(id: call.id, name: call.name, input: try input(of: call)))
        return parts
    }

    /// Whether the call open at `slot` has arguments that read as one JSON value so far (none:
    /// `{}`); `false` when no call is open there.
    func argumentsParse(slot: Int) -> Bool {
        guard let call = open.first(where: { $0.slot == slot }) else { return false }
        return (try? input(of: call)) != nil
    }

    /// Every open call ends, in the order they started (OpenAI: the choice's
    /// `finish_reason`, or the end of the stream).
    /// - Throws: `ToolCallViolation` as `end(slot:)`, for the first call that fails.
    mutating func endAll() throws(ToolCallViolation) -> [AnswerPart] {
        var parts: [AnswerPart] = []
        while let first = open.first { parts += try end(slot: first.slot) }
        return parts
    }

    /// Whether an answer that ends with this (relay) `finish_reason` was cut while generating
    /// (`length`: the `max_tokens` the relay sent, or a filter): its open calls stay open, their
    /// arguments incomplete and never parsed, as when the relay cuts an answer at its grant
    /// (docs/PROTOCOL.md §5.5: only a `stop` or `tool_calls` end needs every call ended).
    static func isCut(finishReason: String) -> Bool {
        finishReason == "length" || finishReason == "content_filter"
    }

    /// Checks that no call is open (before `done`).
    /// - Throws: `ToolCallViolation` naming the first call still open.
    func requireAllEnded() throws(ToolCallViolation) {
        guard let call = open.first else { return }
        throw violation("ended the answer with tool call \"\(call.id)\" (\(call.name)) still open")
    }

    /// Appends joined `text` to the open call at `k`, within the size limit.
    private mutating func add(_ text: String, to k: Int) throws(ToolCallViolation) -> AnswerPart? {
        guard !text.isEmpty else { return nil }
        let bytes = open[k].bytes + text.utf8.count
        guard bytes <= Self.maxArgumentBytes else {
            throw violation("sent more than \(Self.maxArgumentBytes) bytes of arguments for tool call \"\(open[k].id)\" (\(open[k].name))")
        }
        open[k].bytes = bytes
        open[k].arguments += text
        return .toolCallDelta(id: open[k].id, arguments: text)
    }

    /// The call's arguments as a JSON value: `{}` for none (or only whitespace).
    private func input(of call: OpenCall) throws(ToolCallViolation) -> JSONValue {
        if call.arguments.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            return .object([])
        }
        do {
            return try LenientJSON.parse(call.arguments)
        } catch {
            throw violation("sent arguments for tool call \"\(call.id)\" (\(call.name)) that are not JSON (\(error))")
        }
    }

    private func violation(_ what: String) -> ToolCallViolation {
        ToolCallViolation(message: "\(upstream) upstream \(what)")
    }
}

/// A tool call an upstream streamed against the rules of docs/PROTOCOL.md §5.5
/// (`ToolCallAssembler`): the answer ends with `502 upstream_error` and this message.
struct ToolCallViolation: Error, Equatable {
    /// One line for people: the upstream, the call (id, tool name) and what was wrong;
    /// never the arguments' text.
    let message: String
}
