/// Server-side SSE framing, per the WHATWG HTML Living Standard §9.2
/// ("Server-sent events", the `text/event-stream` format).
///
/// The relay's events are single-line JSON, so each frame is `id:` then one
/// `data:` line then a blank line. Comments (lines starting with `:`) are used for
/// heartbeats and carry no id, so they never move a client's last event ID.
public enum SSEFrame {
    /// `retry: <ms>\n\n`: the client's reconnection delay in milliseconds (WHATWG §9.2.6).
    public static func retry(milliseconds: Int) -> String { "retry: \(milliseconds)\n\n" }

    /// The heartbeat comment `: ping\n\n` (DESIGN §2).
    public static let ping = ": ping\n\n"

    /// One event: `id: <seq>\ndata: <json>\n\n`.
    /// `json` must not contain CR or LF (JSON text from `StreamEvent.json` never does).
    public static func event(seq: UInt64, json: String) -> String {
        var s = "id: "
        s.reserveCapacity(json.utf8.count + 32)
        s.append(String(seq))
        s.append("\ndata: ")
        s.append(json)
        s.append("\n\n")
        return s
    }

    /// Content type of every stream response.
    public static let contentType = "text/event-stream"
}
