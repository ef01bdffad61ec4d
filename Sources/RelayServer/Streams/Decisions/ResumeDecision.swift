/// What a resume (`GET /api/chat/stream/{id}` with `Last-Event-ID`; docs/PROTOCOL.md
/// §6.2) answers, from what opening the stream found (`Scripts.open`) and the client's
/// position. Pure. The answer is the route's; once streaming, the replay is merged by
/// `ReplayMerge`, which judges again on the events it reads (the window may move between
/// the open and the read).
public enum ResumeDecision: Sendable, Equatable {
    /// `404 stream_not_found`: no such stream, or another user's (never 403: ids leak nothing).
    case notFound
    /// `400 invalid_last_event_id`: the client claims an event the stream never had.
    case beyondEnd(lastSeq: UInt64)
    /// `409 resume_gap`: events after the client's position are no longer retained and
    /// the text key cannot stand in for them (lossless resume off, or its text expired).
    case gap(oldestKept: UInt64)
    /// `204 No Content`: the stream has ended and the client has its final event. The
    /// HTML standard's EventSource stops reconnecting on any status but 200 (WHATWG HTML
    /// §9.2.3), where an empty 200 would be re-requested every `retry` ms until expiry.
    case noContent
    /// `200` and the stream from the client's position: `catchUp` when the first events
    /// it lacks are older than the retained window (one lossless catch-up delta first).
    case stream(catchUp: Bool)

    /// What `Scripts.open` found of an existing stream.
    public struct Found: Sendable, Equatable {
        /// The stream's owner is the caller.
        public var ownedByCaller: Bool
        /// The stream has ended (`done`, `cancelled`, `failed`).
        public var finished: Bool
        /// The highest seq stored.
        public var lastSeq: UInt64
        /// The oldest seq still in the Redis stream; `nil` when none is.
        public var firstRetainedSeq: UInt64?
        /// Bytes in the stream's text key (0: none kept).
        public var textLength: Int

        public init(ownedByCaller: Bool, finished: Bool, lastSeq: UInt64, firstRetainedSeq: UInt64?, textLength: Int) {
            self.ownedByCaller = ownedByCaller
            self.finished = finished
            self.lastSeq = lastSeq
            self.firstRetainedSeq = firstRetainedSeq
            self.textLength = textLength
        }
    }

    /// Decides. `found`: `nil` when the stream does not exist (never created, expired).
    /// `lossless`: `RELAY_LOSSLESS_RESUME`. `lastEventID`: the client's position (0: from the start).
    public static func decide(_ found: Found?, lastEventID: UInt64, lossless: Bool) -> ResumeDecision {
        guard let f = found, f.ownedByCaller else { return .notFound }
        guard lastEventID <= f.lastSeq else { return .beyondEnd(lastSeq: f.lastSeq) }
        let oldestKept = f.firstRetainedSeq ?? (f.lastSeq + 1)
        let behindWindow = lastEventID + 1 < oldestKept
        if behindWindow && !(lossless && (f.textLength > 0 || f.lastSeq == 0)) { return .gap(oldestKept: oldestKept) }
        if f.finished && lastEventID == f.lastSeq { return .noContent }
        return .stream(catchUp: behindWindow)
    }
}
