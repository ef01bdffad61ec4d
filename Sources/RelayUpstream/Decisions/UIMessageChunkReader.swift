import RelayCore

/// Reads an agent backend's AI SDK UI Message Stream (v1) into the relay's events
/// (docs/AGENTS.md, "Your own backend"; the chunk shapes of the AI SDK's
/// ui-message-chunks.ts): the inverse of the relay's own `format=ai-sdk` dialect.
///
/// | chunk | relay event |
/// |---|---|
/// | `text-delta` | `delta` |
/// | `reasoning-delta` | `reasoning` |
/// | `reasoning-start` with `providerMetadata.anthropic.redactedData` | `reasoning_redacted` |
/// | `tool-input-start` / `tool-input-delta` / `tool-input-available` | `tool_call_start` / `_delta` / `_end` (a call whose input arrives whole, without a start, gets its start first) |
/// | `tool-output-available` | `tool_result`; `tool-output-error` → `tool_result` with `{"error": errorText}` |
/// | `source-url` | `source` |
/// | `data-<name>` | `data` (a name that is not `[A-Za-z0-9_-]{1,64}` fails the answer) |
/// | `finish` | the end, its `finishReason` mapped back (`tool-calls` → `tool_calls`, …); `[DONE]` without one: `stop` |
/// | `error`, `abort` | the answer fails with the backend's text |
/// | `start`, `start-step`, `finish-step`, `text-start/-end`, `reasoning-start/-end`, `message-metadata`, `file`, `source-document`, `tool-input-error`, `tool-approval-request` | nothing |
///
/// The rules of docs/PROTOCOL.md §5.5 hold: a call's deltas and end come after its start, a
/// call id starts once, a call's arguments are at most `maxArgumentBytes`, every started call
/// ends before a `stop` or `tool_calls` end (a cut answer, `length`, may leave one open, as
/// the relay's own cut does); anything else is a
/// `ChunkViolation` and the answer ends with `502 upstream_error`. Pure value, no I/O.
struct UIMessageChunkReader {
    /// Most UTF-8 bytes of one call's streamed arguments (1 MiB).
    static let maxArgumentBytes = 1 << 20

    /// What one chunk means.
    enum Step: Equatable {
        /// Events to emit, in order (none for a chunk that carries nothing).
        case events([StreamEvent])
        /// The stream's end (`finish` or `[DONE]`); the finish reason if the chunk gave one.
        case end(finishReason: String?)
        /// The backend reported a failure (`error`, `abort`).
        case fail(String)
    }

    /// A chunk that breaks the protocol's rules (the text says how).
    struct ChunkViolation: Error, Equatable {
        let reason: String
    }

    /// Calls started and not ended: id → (name, argument bytes so far).
    private var open: [String: (name: String, bytes: Int)] = [:]
    /// Every call id started.
    private var started: Set<String> = []
    /// Calls that ended (a result may follow).
    private var ended: Set<String> = []
    /// The UTF-16 code units of the last `text-delta` or `reasoning-delta` read, as the chunk
    /// escaped them: half of a surrogate pair split across two chunks is kept, for the
    /// upstream's joiner to pair (docs/PROTOCOL.md §5.2); the events carry the text repaired.
    private(set) var lastDeltaUnits: JSONString?
    /// A `finish` came (a `[DONE]` after it ends nothing more).
    private var finished = false
    /// Completion tokens counted: one per text, reasoning and argument delta.
    private(set) var tokens = 0

    /// Maps one chunk (`data` of one SSE event).
    /// - Throws: `ChunkViolation` for JSON that is not a chunk object, or a chunk against the
    ///   rules above.
    mutating func read(_ data: String) throws(ChunkViolation) -> Step {
        if data == "[DONE]" {
            // The end without a `finish` is a `stop`: every call must have ended (§5.5).
            if !finished, let open = openCalls { throw ChunkViolation(reason: "[DONE] with tool call \(open) still open") }
            return .end(finishReason: nil)
        }
        guard let c = try? LenientJSON.parse(data), case .object = c, let type = c["type"]?.stringValue else {
            throw ChunkViolation(reason: "a chunk that is not a JSON object with a type")
        }
        func string(_ k: String) throws(ChunkViolation) -> String {
            guard let s = c[k]?.stringValue else { throw ChunkViolation(reason: "\(type) without a string \(k)") }
            return s
        }
        func codeUnits(_ k: String) throws(ChunkViolation) -> JSONString {
            guard case .string(let units)? = c[k] else { throw ChunkViolation(reason: "\(type) without a string \(k)") }
            return units
        }
        func id(_ k: String) throws(ChunkViolation) -> String {
            let s = try string(k)
            guard !s.isEmpty else { throw ChunkViolation(reason: "\(type) with an empty \(k)") }
            return s
        }
        switch type {
        case "text-delta":
            tokens += 1
            let units = try codeUnits("delta")
            lastDeltaUnits = units
            return .events([.delta(units.text)])
        case "reasoning-delta":
            tokens += 1
            let units = try codeUnits("delta")
            lastDeltaUnits = units
            return .events([.part(.reasoning(units.text))])
        case "reasoning-start":
            if let redacted = c["providerMetadata"]?["anthropic"]?["redactedData"]?.stringValue {
                return .events([.part(.reasoningRedacted(data: redacted))])
            }
            return .events([])
        case "tool-input-start":
            let callID = try id("toolCallId"), name = try id("toolName")
            guard !started.contains(callID) else { throw ChunkViolation(reason: "tool call \(callID) started twice") }
            started.insert(callID)
            open[callID] = (name, 0)
            return .events([.part(.toolCallStart(id: callID, name: name))])
        case "tool-input-delta":
            let callID = try id("toolCallId"), piece = try string("inputTextDelta")
            guard var call = open[callID] else { throw ChunkViolation(reason: "tool-input-delta for \(callID), which is not open") }
            call.bytes += piece.utf8.count
            guard call.bytes <= Self.maxArgumentBytes else {
                throw ChunkViolation(reason: "tool call \(callID) (\(call.name)): arguments over \(Self.maxArgumentBytes) bytes")
            }
            open[callID] = call
            tokens += 1
            return .events([.part(.toolCallDelta(id: callID, arguments: piece))])
        case "tool-input-available":
            let callID = try id("toolCallId"), name = try id("toolName")
            guard let input = c["input"] else { throw ChunkViolation(reason: "tool-input-available for \(callID) without input") }
            var out: [StreamEvent] = []
            if open[callID] == nil {
                guard !started.contains(callID) else { throw ChunkViolation(reason: "tool call \(callID) ended twice") }
                started.insert(callID)
                out.append(.part(.toolCallStart(id: callID, name: name)))
            }
            open[callID] = nil
            ended.insert(callID)
            out.append(.part(.toolCallEnd(id: callID, name: name, input: input)))
            return .events(out)
        case "tool-output-available", "tool-output-error":
            let callID = try id("toolCallId")
            guard ended.contains(callID) else { throw ChunkViolation(reason: "\(type) for \(callID), whose input never came") }
            let output: JSONValue
            if type == "tool-output-error" {
                output = .object([JSONMember(name: JSONString("error"), value: .string(JSONString(try string("errorText"))))])
            } else {
                guard let o = c["output"] else { throw ChunkViolation(reason: "tool-output-available for \(callID) without output") }
                output = o
            }
            return .events([.part(.toolResult(id: callID, output: output))])
        case "source-url":
            let title = c["title"]?.stringValue
            return .events([.part(.source(id: try id("sourceId"), url: try id("url"), title: title))])
        case "finish":
            let reason = c["finishReason"]?.stringValue.map(Self.relayFinishReason)
            // A call may stay open only in an answer that was cut (`length`, a filter, …):
            // never before a `stop` or `tool_calls` (docs/PROTOCOL.md §5.5).
            if let open = openCalls, Self.requiresEndedCalls(reason ?? "stop") {
                throw ChunkViolation(reason: "finish (\(reason ?? "stop")) with tool call \(open) still open")
            }
            finished = true
            return .end(finishReason: reason)
        case "error":
            return .fail(c["errorText"]?.stringValue ?? "error")
        case "abort":
            return .fail("aborted" + (c["reason"]?.stringValue.map { ": \($0)" } ?? ""))
        default:
            if type.hasPrefix("data-") {
                let name = String(type.dropFirst(5))
                guard AnswerPart.isDataName(name) else { throw ChunkViolation(reason: "data part name \"\(name.prefix(64))\" is not [A-Za-z0-9_-]{1,64}") }
                guard let value = c["data"] else { throw ChunkViolation(reason: "\(type) without data") }
                if c["transient"] == .bool(true) { return .events([]) }   // not part of the message
                return .events([.part(.data(name: name, id: c["id"]?.stringValue, value: value))])
            }
            return .events([])
        }
    }

    /// The calls still open, sorted and joined; `nil` when none is.
    private var openCalls: String? { open.isEmpty ? nil : open.keys.sorted().joined(separator: ", ") }

    /// Whether a `done` with this (relay) finish reason needs every started call ended:
    /// `stop` and `tool_calls` (docs/PROTOCOL.md §5.5); a cut answer may leave one open.
    static func requiresEndedCalls(_ relayReason: String) -> Bool {
        relayReason == "stop" || relayReason == "tool_calls"
    }

    /// The relay's `finish_reason` for an AI SDK finish reason.
    static func relayFinishReason(_ r: String) -> String {
        switch r {
        case "tool-calls": return "tool_calls"
        case "content-filter": return "content_filter"
        default: return r
        }
    }
}
