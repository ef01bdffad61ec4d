/// What a resume answers from a retained answer (docs/PROTOCOL.md §6.5), once the stream's
/// own keys expired (`ResumeDecision` found no stream) and its `RetainedAnswer` is still
/// kept. Pure.
///
/// The events a client lacks after `Last-Event-ID: k` are the deltas k + 1 … N − 1 and the
/// `done` N (N: the final seq). They are answered as they were first sent
/// (`RetainedAnswer.events(after:)`): each delta with its own id and text, then the
/// original `done`, so a reader's offsets never change when the events expire.
public enum RetainedResumeDecision: Sendable, Equatable {
    /// `404 stream_not_found`: the record names another owner.
    case notFound
    /// `400 invalid_last_event_id`: `Last-Event-ID` is above the final seq.
    case beyondEnd(finalSeq: UInt64)
    /// `204 No Content`: the client has the final event.
    case noContent
    /// `200`: the events after `Last-Event-ID` (`RetainedAnswer.events(after:)`).
    case stream

    /// Decides. `ownedByCaller`: the record's owner is the caller; `finalSeq` the record's
    /// final seq (≥ 1); `lastEventID` the client's position (0: from the start).
    public static func decide(ownedByCaller: Bool, finalSeq: UInt64, lastEventID: UInt64) -> RetainedResumeDecision {
        guard ownedByCaller else { return .notFound }
        guard lastEventID <= finalSeq else { return .beyondEnd(finalSeq: finalSeq) }
        guard lastEventID < finalSeq else { return .noContent }
        return .stream
    }
}
