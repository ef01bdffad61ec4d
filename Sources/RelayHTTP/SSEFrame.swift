import RelayCore
/// The SSE lines of the relay's stream responses, per the WHATWG HTML Living Standard
/// §9.2 ("Server-sent events", the `text/event-stream` format): `retry:`, the heartbeat
/// comment, and events as text (framed by `WireFrame`).
///
/// The relay's events are single-line JSON, so each frame is one `data:` line, then `id:`,
/// then a blank line. The `id:` comes last so that an event cut anywhere before its blank
/// line carries no id a client could keep: WHATWG §9.2.6 sets the last event ID only when the
/// event is dispatched, but some SSE parsers store it as soon as the `id:` line is read and
/// would skip the cut event on reconnect. Comments (lines starting with `:`) are used for
/// heartbeats and carry no id, so they never move a client's last event ID.
public enum SSEFrame {
    /// `retry: <ms>\n`: the client's reconnection delay in milliseconds (WHATWG §9.2.6), a
    /// field line put in front of the first event of a response (`HTTPExchange.startStream`):
    /// a block with `retry:` and no `data:` dispatches nothing per WHATWG, yet some SSE
    /// libraries surface it as an empty message.
    public static func retry(milliseconds: Int) -> String { "retry: \(milliseconds)\n" }

    /// The heartbeat comment `: ping\n` (docs/PROTOCOL.md §4.1): one comment line that ends no
    /// block. It is written between events, so it opens the next event's block, where WHATWG
    /// §9.2.6 ignores it; a blank line after it would make a block of its own, which parsers
    /// that dispatch on every blank line (Azure `fetch-event-source`) surface as an empty message.
    public static let ping = ": ping\n"

    /// One event as SSE text, `data: <json>\nid: <seq>\n\n` (`WireFrame.appendText`, the
    /// body of `WireFrame.event(seq:json:)`). `json` must not contain CR or LF (JSON text
    /// from `StreamEvent.json` never does).
    public static func event(seq: UInt64, json: String) -> String {
        var s = ""
        WireFrame.appendText(seq: seq, json: json, to: &s)
        return s
    }

    /// Content type of every stream response, and of the `204` that ends a finished one: the
    /// SSE MIME type (WHATWG §9.2.5; an `EventSource` compares the essence only) with the
    /// charset the stream is always encoded in, so a generic HTTP client does not fall back to
    /// ISO-8859-1 for `text/*` (RFC 9110 §8.3.1, WHATWG §9.2.5: always UTF-8).
    public static let contentType = "text/event-stream; charset=utf-8"
}
