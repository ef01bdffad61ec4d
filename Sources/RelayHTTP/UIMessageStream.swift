import RelayCore

/// The AI SDK's UI Message Stream protocol (v1), the wire format `useChat` reads, as a
/// dialect of the relay's stream (docs/PROTOCOL.md §4.6): the same stored events, written
/// as UI message chunks, one SSE event each, ended by `data: [DONE]`.
///
/// | relay event | chunks |
/// |---|---|
/// | (response start) | `{"type":"start","messageId":"<request id>"}` |
/// | `delta` | `text-start` (when no text part is open), `text-delta` |
/// | `reasoning` | `reasoning-start` (when none is open), `reasoning-delta` |
/// | `reasoning_redacted` | `reasoning-start` with `providerMetadata.anthropic.redactedData`, `reasoning-end` |
/// | `tool_call_start` / `_delta` / `_end` | `tool-input-start` / `tool-input-delta` / `tool-input-available` |
/// | `tool_result` | `tool-output-available` |
/// | `source` | `source-url` |
/// | `data` | `data-<name>` |
/// | `done` | `finish` (with `finishReason` and the usage as `messageMetadata`), then `[DONE]` |
/// | `error`, or an error the relay raises | `error` (`errorText`: `<code>: <message>`), then `[DONE]` |
///
/// An open text or reasoning part is closed (`text-end`, `reasoning-end`) before a chunk of
/// any other kind, so the parts keep the events' order. Part ids are `text-<seq>` and
/// `reasoning-<seq>`, the seq of the event that opened them.
///
/// **Ids.** A chunk that carries a stored event has `id: <seq>`; a chunk the dialect adds
/// (`start`, the opening and closing chunks, `finish`'s `[DONE]`) repeats the last seq
/// written before it (`start`: the resume's `Last-Event-ID`, 0 for a new answer). So a
/// client that resumes from the last id it holds gets every event after it once, and a
/// resume that lands inside a text or reasoning part opens a new part (the chunks of the
/// AI SDK need a `*-start` before a `*-delta` on every response). A resume that lands inside
/// a tool call's arguments writes none of that call's remaining `tool-input-delta`s (the AI
/// SDK refuses them without a `tool-input-start` on the same response, and an argument piece
/// does not name the tool): the call's `tool-input-available` carries the whole input. Pure:
/// it only builds bytes.
public struct UIMessageStream: Sendable {
    /// The response header that marks the protocol (`x-vercel-ai-ui-message-stream: v1`).
    public static let header = (name: "x-vercel-ai-ui-message-stream", value: "v1")

    private var openText: String?
    private var openReasoning: String?
    /// Tool calls whose `tool-input-start` this response wrote. The AI SDK keeps a call's
    /// streamed input per response and refuses a `tool-input-delta` for a call it did not see
    /// start on the same response (`useChat` ends in its error state); the chunk of a
    /// `tool_call_start` names the tool, which a later argument piece does not.
    private var startedCalls: Set<String> = []
    /// The last seq written (chunks the dialect adds repeat it).
    private var lastSeq: UInt64
    /// `[DONE]` was written: nothing more is.
    public private(set) var isFinished = false

    /// - Parameter lastSeq: the seq the response continues after (a resume's
    ///   `Last-Event-ID`, 0 for a new answer).
    public init(after lastSeq: UInt64) {
        self.lastSeq = lastSeq
    }

    /// The response's first chunk: `start` with the client's request id as `messageId`.
    public mutating func start(messageId: String) -> WireFrame {
        var text = ""
        chunk("{\"type\":\"start\",\"messageId\":\(JSONText.quoted(messageId))}", seq: lastSeq, to: &text)
        return WireFrame(text: text)
    }

    /// The chunks of `events` (seq order) as one write; `nil` when they add none (an event
    /// that does not decode, or anything after `[DONE]`).
    public mutating func frame<C: Collection>(_ events: C) -> WireFrame? where C.Element == SequencedEvent {
        var text = ""
        for e in events { append(e, to: &text) }
        return text.isEmpty ? nil : WireFrame(text: text)
    }

    /// An error the relay raises itself (docs/PROTOCOL.md §8): `error`, then `[DONE]`; its
    /// id repeats the last seq written, as in the relay's own format.
    public mutating func error(_ e: APIError) -> WireFrame? {
        guard !isFinished else { return nil }
        var text = ""
        closeOpen(to: &text)
        chunk("{\"type\":\"error\",\"errorText\":\(JSONText.quoted("\(e.code.rawValue): \(e.message)"))}", seq: lastSeq, to: &text)
        finish(to: &text)
        return WireFrame(text: text)
    }

    private mutating func append(_ e: SequencedEvent, to text: inout String) {
        guard !isFinished, let event = try? StreamEvent(json: e.json) else { return }
        let q = JSONText.quoted
        switch event {
        case .delta(let t):
            if openReasoning != nil { closeOpen(to: &text) }
            if openText == nil {
                openText = "text-\(e.seq)"
                chunk("{\"type\":\"text-start\",\"id\":\(q(openText!))}", seq: lastSeq, to: &text)
            }
            chunk("{\"type\":\"text-delta\",\"id\":\(q(openText!)),\"delta\":\(q(t))}", seq: e.seq, to: &text)
        case .part(.reasoning(let t)):
            if openText != nil { closeOpen(to: &text) }
            if openReasoning == nil {
                openReasoning = "reasoning-\(e.seq)"
                chunk("{\"type\":\"reasoning-start\",\"id\":\(q(openReasoning!))}", seq: lastSeq, to: &text)
            }
            chunk("{\"type\":\"reasoning-delta\",\"id\":\(q(openReasoning!)),\"delta\":\(q(t))}", seq: e.seq, to: &text)
        case .part(let p):
            // A resume that lands inside a call's arguments: its remaining pieces are not
            // written (the client's tool part keeps the input it had), and
            // `tool-input-available` gives the whole input.
            if case .toolCallDelta(let id, _) = p, !startedCalls.contains(id) { return }
            closeOpen(to: &text)
            switch p {
            case .reasoningRedacted(let data):
                let id = q("reasoning-\(e.seq)")
                chunk("{\"type\":\"reasoning-start\",\"id\":\(id),\"providerMetadata\":{\"anthropic\":{\"redactedData\":\(q(data))}}}",
                      seq: lastSeq, to: &text)
                chunk("{\"type\":\"reasoning-end\",\"id\":\(id)}", seq: e.seq, to: &text)
            case .toolCallStart(let id, let name):
                startedCalls.insert(id)
                chunk("{\"type\":\"tool-input-start\",\"toolCallId\":\(q(id)),\"toolName\":\(q(name))}", seq: e.seq, to: &text)
            case .toolCallDelta(let id, let a):
                chunk("{\"type\":\"tool-input-delta\",\"toolCallId\":\(q(id)),\"inputTextDelta\":\(q(a))}", seq: e.seq, to: &text)
            case .toolCallEnd(let id, let name, let input):
                chunk("{\"type\":\"tool-input-available\",\"toolCallId\":\(q(id)),\"toolName\":\(q(name)),\"input\":\(input.compactJSON)}",
                      seq: e.seq, to: &text)
            case .toolResult(let id, let output):
                chunk("{\"type\":\"tool-output-available\",\"toolCallId\":\(q(id)),\"output\":\(output.compactJSON)}", seq: e.seq, to: &text)
            case .source(let id, let url, let title):
                chunk("{\"type\":\"source-url\",\"sourceId\":\(q(id)),\"url\":\(q(url))" + (title.map { ",\"title\":\(q($0))" } ?? "") + "}",
                      seq: e.seq, to: &text)
            case .data(let name, let id, let value):
                chunk("{\"type\":\(q("data-" + name))" + (id.map { ",\"id\":\(q($0))" } ?? "") + ",\"data\":\(value.compactJSON)}",
                      seq: e.seq, to: &text)
            case .reasoning:
                break   // handled above
            }
        case .done(let reason, let u, let limited):
            closeOpen(to: &text)
            let usage = "{\"promptTokens\":\(u.promptTokens),\"completionTokens\":\(u.completionTokens),\"totalTokens\":\(u.totalTokens)"
                + (limited ? ",\"budgetLimited\":true" : "") + "}"
            chunk("{\"type\":\"finish\",\"finishReason\":\(q(UIMessageStream.finishReason(reason))),\"messageMetadata\":{\"usage\":\(usage)}}",
                  seq: e.seq, to: &text)
            finish(to: &text)
        case .error(_, let code, let message):
            closeOpen(to: &text)
            chunk("{\"type\":\"error\",\"errorText\":\(q("\(code.rawValue): \(message)"))}", seq: e.seq, to: &text)
            finish(to: &text)
        }
    }

    /// The AI SDK's finish reason for a relay `finish_reason` (`stop`, `length`,
    /// `content-filter`, `tool-calls`, `error`, `other`).
    static func finishReason(_ r: FinishReason) -> String {
        switch r.rawValue {
        case "stop": return "stop"
        case "length": return "length"
        case "tool_calls": return "tool-calls"
        case "content_filter": return "content-filter"
        default: return "other"
        }
    }

    private mutating func closeOpen(to text: inout String) {
        if let id = openText {
            chunk("{\"type\":\"text-end\",\"id\":\(JSONText.quoted(id))}", seq: lastSeq, to: &text)
            openText = nil
        }
        if let id = openReasoning {
            chunk("{\"type\":\"reasoning-end\",\"id\":\(JSONText.quoted(id))}", seq: lastSeq, to: &text)
            openReasoning = nil
        }
    }

    private mutating func finish(to text: inout String) {
        text += "data: [DONE]\nid: \(lastSeq)\n\n"
        isFinished = true
    }

    private mutating func chunk(_ json: String, seq: UInt64, to text: inout String) {
        WireFrame.appendText(seq: seq, json: json, to: &text)
        lastSeq = seq
    }
}
