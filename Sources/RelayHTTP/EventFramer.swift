import RelayCore

/// The relay's one event framer: every read format writes the same events — the same
/// seq, the same JSON, whether live, replayed, caught up from the text key or read back
/// from a retained answer — through it.
///
/// * The relay's SSE stream (docs/PROTOCOL.md §4; WHATWG HTML §9.2): one event per
///   `data: <json>\nid: <seq>\n\n` block, the id last (`SSEFrame`), as HTTP/1.1 chunks
///   (`WireFrame`).
/// * The offset reads (docs/PROTOCOL.md §12): a catch-up or long-poll body is the events'
///   JSON as one array; a Durable Streams SSE read (Durable Streams PROTOCOL.md §5.8) sends
///   that array as one `data` event, then a `control` event with the stream's offsets.
///
/// An event's JSON is one line (`StreamEvent.json`, and the stored events are checked to be
/// one-line JSON objects when read), so no format needs to split or escape it.
public enum EventFramer {
    // MARK: The relay's SSE stream

    /// One event as one chunk, built once per worker and shared by every subscriber.
    @inline(__always)
    public static func sse(_ e: SequencedEvent) -> WireFrame { WireFrame.event(seq: e.seq, json: e.json) }

    /// Events in seq order as one chunk (a replayed batch leaves in one write).
    /// - Precondition: `events` is not empty.
    public static func sse<C: Collection>(_ events: C) -> WireFrame where C.Element == SequencedEvent {
        if events.count == 1, let e = events.first { return sse(e) }
        var text = ""
        for e in events { WireFrame.appendText(seq: e.seq, json: e.json, to: &text) }
        return WireFrame(text: text)
    }

    /// An `error` event the relay raises itself (revoked session, expired token, gap,
    /// outage; docs/PROTOCOL.md §8): it is not stored, so its id repeats `lastSeq`, the last
    /// seq the client got, and a resume with that `Last-Event-ID` loses nothing.
    public static func sseError(_ e: APIError, lastSeq: UInt64) -> WireFrame {
        WireFrame.event(seq: lastSeq, json: e.asEvent.json)
    }

    // MARK: Offset reads

    /// The events' JSON as one array, `[<json>,<json>,…]` (`[]` for none): a catch-up or
    /// long-poll body (`application/json`), and a Durable Streams SSE `data` event's data.
    public static func jsonArray<C: Collection>(_ events: C) -> String where C.Element == SequencedEvent {
        var out = "["
        out.reserveCapacity(events.reduce(2) { $0 + $1.json.utf8.count + 1 })
        var first = true
        for e in events {
            if !first { out += "," }
            first = false
            out += e.json
        }
        out += "]"
        return out
    }

    /// One step of a Durable Streams SSE read (Durable Streams PROTOCOL.md §5.8): the events
    /// as one `event: data` whose data is their JSON array (none when there are no events),
    /// then `event: control` with `control` (the offsets' JSON object). Field values follow
    /// the colon without a space, as the Durable Streams servers write them (a space would be
    /// stripped by WHATWG §9.2.6 parsers either way).
    public static func durableSSE<C: Collection>(_ events: C, control: String) -> WireFrame where C.Element == SequencedEvent {
        var text = ""
        if !events.isEmpty { text += "event: data\ndata:\(jsonArray(events))\n\n" }
        text += "event: control\ndata:\(control)\n\n"
        return WireFrame(text: text)
    }
}
