import Foundation
import RelayCore

/// The offset reads of an answer (docs/PROTOCOL.md §12; the Durable Streams read protocol,
/// its §5.6 catch-up, §5.7 long-poll, §5.8 SSE, §8 offsets, §10.1 cursors): what a
/// `GET /api/chat/stream/{id}?offset=…[&live=…]` answers, from what opening the stream
/// found (`ResumeDecision.Found`) and the client's offset. Pure: the caller reads, waits
/// and writes.
///
/// Offsets map onto seqs: `-1` is before the first event (seq 0), `now` the current
/// tail (the stream's last seq), and any 1–20 decimal digits the seq of the last event
/// the client has (`offset=N` means what `Last-Event-ID: N` means). The relay emits a
/// seq zero-padded to 20 digits, so offsets of one stream sort lexicographically in seq
/// order (DS §8); it never emits `-1` or `now`.
public enum OffsetReadDecision: Sendable, Equatable {
    /// `404 stream_not_found` (no such stream, or another user's).
    case notFound
    /// `400 invalid_offset`: the offset is past the stream's last event.
    case beyondEnd(lastSeq: UInt64)
    /// `409 resume_gap`: as on the SSE resume (docs/PROTOCOL.md §6.3).
    case gap(oldestKept: UInt64)
    /// The answer has ended and the client has its final event: catch-up `200 []`,
    /// long-poll `204`, SSE one `control` event; all with `Stream-Closed: true` and
    /// `Stream-Next-Offset` = `finalSeq`. Never waits (DS §5.7 "Stream Closure Behavior").
    case closed(finalSeq: UInt64)
    /// Events exist after `after`: read them (`catchUp`: the first are older than the
    /// retained window, one lossless catch-up delta first, docs/PROTOCOL.md §6.3).
    case read(after: UInt64, catchUp: Bool)
    /// Nothing after `at` yet and the answer runs: catch-up answers `200 []` with
    /// `Stream-Up-To-Date: true`; long-poll and SSE wait for the next event.
    case tail(at: UInt64)

    /// Decides. `found`: `nil` when the stream does not exist. `lossless`: `RELAY_LOSSLESS_RESUME`.
    public static func decide(_ found: ResumeDecision.Found?, offset: ReadOffset, lossless: Bool) -> OffsetReadDecision {
        guard let f = found, f.ownedByCaller else { return .notFound }
        let position: UInt64
        switch offset {
        case .start: position = 0
        case .now: position = f.lastSeq
        case .after(let seq): position = seq
        }
        switch ResumeDecision.decide(f, lastEventID: position, lossless: lossless) {
        case .notFound: return .notFound
        case .beyondEnd(let last): return .beyondEnd(lastSeq: last)
        case .gap(let oldest): return .gap(oldestKept: oldest)
        case .noContent: return .closed(finalSeq: f.lastSeq)
        case .stream(let catchUp):
            return position < f.lastSeq ? .read(after: position, catchUp: catchUp) : .tail(at: position)
        }
    }
}

/// The `offset` query parameter of an offset read (DS §8).
public enum ReadOffset: Sendable, Equatable {
    /// `-1`: before the first event.
    case start
    /// `now`: the current tail.
    case now
    /// The seq of the last event the client has.
    case after(UInt64)

    /// Parses `-1`, `now` or 1–20 ASCII decimal digits (a value above `UInt64.max` is
    /// refused). Throws `400 invalid_offset`.
    public static func parse(_ raw: String) throws -> ReadOffset {
        if raw == "-1" { return .start }
        if raw == "now" { return .now }
        let utf8 = raw.utf8
        guard (1...20).contains(utf8.count), utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let v = UInt64(raw) else {
            throw APIError(.invalidOffset, "offset must be -1, now, or an offset this relay sent (1–20 digits), got \(JSONText.quoted(String(raw.prefix(40))))")
        }
        return .after(v)
    }

    /// The wire form of the position after event `seq`: 20 digits, zero-padded, so that
    /// offsets sort lexicographically (DS §8).
    public static func format(_ seq: UInt64) -> String {
        let digits = String(seq)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }
}

/// The `live` query parameter of an offset read.
public enum ReadMode: String, Sendable, Equatable {
    /// No `live`: one catch-up response (DS §5.6).
    case catchUp = ""
    /// `live=long-poll` (DS §5.7).
    case longPoll = "long-poll"
    /// `live=sse` (DS §5.8).
    case sse = "sse"

    /// Parses `live` (`nil`: catch-up). Throws `400 invalid_offset` for another value
    /// (`auto` is a client-side mode of the DS clients, never sent).
    public static func parse(_ raw: String?) throws -> ReadMode {
        guard let raw else { return .catchUp }
        guard !raw.isEmpty, let m = ReadMode(rawValue: raw) else {
            throw APIError(.invalidOffset, "live must be long-poll or sse, got \(JSONText.quoted(String(raw.prefix(40))))")
        }
        return m
    }
}

/// What one offset-read response carries (a catch-up or long-poll body, or one SSE
/// `data` + `control` pair): the events to send and the `Stream-*` headers (DS §5.6).
public struct OffsetReadBatch: Sendable, Equatable {
    /// The events, in seq order, strictly after the request's offset.
    public var events: [SequencedEvent]
    /// `Stream-Next-Offset`: the seq of the last event sent, or the request's position
    /// when none is.
    public var nextSeq: UInt64
    /// `Stream-Up-To-Date: true`: the batch reaches the stored tail as read.
    public var upToDate: Bool
    /// `Stream-Closed: true`: the batch ends with (or the client already had) the final
    /// event, `done` or `error`.
    public var closed: Bool
    /// The request's position: the batch holds the events after it.
    public var after: UInt64

    /// Takes the events after `position` from `read` (in seq order, as the reader
    /// returned them), at most `maxBytes` of
    /// event JSON (but always at least one event, so a read always advances).
    public init(after position: UInt64, read: [SequencedEvent], maxBytes: Int) {
        var taken: [SequencedEvent] = []
        var bytes = 0
        var truncated = false
        var last = position
        after = position
        for e in read where e.seq > last {
            let size = e.json.utf8.count + 1
            if !taken.isEmpty && bytes + size > maxBytes {
                truncated = true
                break
            }
            taken.append(e)
            bytes += size
            last = e.seq
            if e.isTerminal { break }
        }
        events = taken
        nextSeq = last
        closed = taken.last?.isTerminal ?? false
        upToDate = !truncated
    }

    /// The `ETag` of a catch-up or long-poll body (Durable Streams PROTOCOL.md §10.1): the
    /// answer's request id, the range's two offsets and `:c` once the answer ended, quoted
    /// (RFC 9110 §8.8.3). The same range of the same answer in the same state has the same
    /// tag; a range that grew, or whose answer closed, has another. `If-None-Match` is matched
    /// by equality with it (the tag is strong).
    public static func etag(id: String, after: UInt64, nextSeq: UInt64, closed: Bool) -> String {
        "\"\(id):\(ReadOffset.format(after)):\(ReadOffset.format(nextSeq))\(closed ? ":c" : "")\""
    }

    /// Whether `If-None-Match` field values match `tag` (RFC 9110 §13.1.2): `*` matches any
    /// current representation; otherwise a comma-separated list of entity tags, compared
    /// weakly (a `W/` prefix ignored, the opaque tags equal).
    public static func ifNoneMatch(_ values: [String], matches tag: String) -> Bool {
        let opaque = tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
        for value in values {
            for item in value.split(separator: ",") {
                var t = item.trimmingCharacters(in: .whitespaces)
                if t == "*" { return true }
                if t.hasPrefix("W/") { t = String(t.dropFirst(2)) }
                if t == opaque { return true }
            }
        }
        return false
    }

    /// The `Stream-*` response headers (DS §5.6, §5.7): `Stream-Next-Offset` always,
    /// `Stream-Up-To-Date` / `Stream-Closed` when true, `Stream-Cursor` when given and
    /// the stream is not closed.
    public static func headers(nextSeq: UInt64, upToDate: Bool, closed: Bool, cursor: UInt64?) -> [(String, String)] {
        var h = [("Stream-Next-Offset", ReadOffset.format(nextSeq))]
        if upToDate || closed { h.append(("Stream-Up-To-Date", "true")) }
        if closed { h.append(("Stream-Closed", "true")) }
        if let cursor, !closed { h.append(("Stream-Cursor", String(cursor))) }
        return h
    }

    /// The DS SSE `control` event's JSON (DS §5.8): `streamNextOffset`, then
    /// `streamCursor` while open, `upToDate`, `streamClosed`.
    public static func controlJSON(nextSeq: UInt64, upToDate: Bool, closed: Bool, cursor: UInt64?) -> String {
        var out = "{\"streamNextOffset\":\"\(ReadOffset.format(nextSeq))\""
        if let cursor, !closed { out += ",\"streamCursor\":\"\(cursor)\"" }
        if upToDate || closed { out += ",\"upToDate\":true" }
        if closed { out += ",\"streamClosed\":true" }
        return out + "}"
    }
}

/// The `Stream-Cursor` of live responses (DS §10.1 "Server-Generated Cursors"): the
/// number of 20 s intervals since 2024-10-09T00:00:00Z; when the client's `cursor` is
/// not behind that, the client's plus a jitter of 1–3600 s in whole intervals, so
/// cursors never go backwards and a CDN's cached empty answer is never re-served forever.
public enum StreamCursor {
    /// The interval, ms.
    public static let intervalMs: UInt64 = 20_000
    /// The epoch, Unix ms (2024-10-09T00:00:00Z).
    public static let epochMs: UInt64 = 1_728_432_000_000

    /// The cursor to send. `wallMs`: Unix time, ms. `client`: the request's `cursor`
    /// (ignored unless 1–20 digits). `jitterSeconds`: a random 1…3600 chosen by the caller.
    /// Never below the current interval nor the client's cursor (`UInt64.max` stays there).
    public static func next(wallMs: UInt64, client: String?, jitterSeconds: UInt64) -> UInt64 {
        let current = wallMs > epochMs ? (wallMs - epochMs) / intervalMs : 0
        guard let client, (1...20).contains(client.utf8.count), let c = UInt64(client), c >= current else { return current }
        let jitterIntervals = max(1, (min(max(jitterSeconds, 1), 3600) * 1000 + intervalMs - 1) / intervalMs)
        return c > UInt64.max - jitterIntervals ? UInt64.max : c + jitterIntervals   // saturates: never wraps backwards
    }
}
