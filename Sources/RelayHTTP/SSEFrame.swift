import RelayCore
/// The SSE lines of the relay's stream responses, per the WHATWG HTML Living Standard
/// §9.2 ("Server-sent events", the `text/event-stream` format): `retry:`, the heartbeat
/// comment, and events as text (framed by `WireFrame`).
///
/// The relay's events are single-line JSON, so each frame is `id:` then one
/// `data:` line then a blank line. Comments (lines starting with `:`) are used for
/// heartbeats and carry no id, so they never move a client's last event ID.
public enum SSEFrame {
    /// `retry: <ms>\n\n`: the client's reconnection delay in milliseconds (WHATWG §9.2.6).
    public static func retry(milliseconds: Int) -> String { "retry: \(milliseconds)\n\n" }

    /// The heartbeat comment `: ping\n\n` (docs/PROTOCOL.md §4).
    public static let ping = ": ping\n\n"

    /// One event as SSE text, `id: <seq>\ndata: <json>\n\n` (`WireFrame.appendText`, the
    /// body of `WireFrame.event(seq:json:)`). `json` must not contain CR or LF (JSON text
    /// from `StreamEvent.json` never does).
    public static func event(seq: UInt64, json: String) -> String {
        var s = ""
        WireFrame.appendText(seq: seq, json: json, to: &s)
        return s
    }

    /// Content type of every stream response.
    public static let contentType = "text/event-stream"
}
