/// One dispatched Server-Sent Event, as produced by `SSEParser` when a blank line ends a
/// block that had at least one `data` field (WHATWG HTML Living Standard §9.2.6,
/// "Interpreting an event stream", steps to dispatch the event).
///
/// All three strings are decoded from UTF-8 with the spec's "UTF-8 decode": each invalid byte
/// sequence becomes one U+FFFD per maximal subpart.
public struct SSEMessage: Sendable, Equatable {
    /// The event type: the value of the block's last `event:` field, or `"message"` when the
    /// block had no `event` field or only an empty one (§9.2.6 dispatch step 6).
    public var type: String
    /// The `data` field values of the block joined with `"\n"` (U+000A); the single trailing
    /// LF the spec's data buffer ends with is removed (§9.2.6 dispatch step 3). May be empty
    /// (a block with a bare `data` / `data:` line).
    public var data: String
    /// The parser's last event ID string at the time of dispatch (§9.2.6 dispatch step 1 and 5):
    /// the latest accepted `id` field of this block or of an earlier one; `""` when none has
    /// been seen or the last one was empty.
    public var lastEventId: String

    /// Creates a message. Defaults follow the spec: type `"message"`, last event ID `""`.
    /// - Parameters:
    ///   - type: event type (`"message"` when the stream sent none).
    ///   - data: event data, lines joined with `"\n"`, no trailing LF.
    ///   - lastEventId: last event ID string at dispatch.
    public init(type: String = "message", data: String, lastEventId: String = "") {
        self.type = type
        self.data = data
        self.lastEventId = lastEventId
    }
}
