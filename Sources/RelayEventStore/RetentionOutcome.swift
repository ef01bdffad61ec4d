/// How a finished answer's retention went (docs/DATA_MODEL.md §14), reported once by its
/// writer when the final `done` is stored (`AnswerWriter.onRetained`).
public enum RetentionOutcome: Sendable, Equatable {
    /// A record of this many bytes was stored with the final event.
    case retained(bytes: Int)
    /// None: the answer passed `RELAY_ANSWER_RETENTION_MAX_BYTES`.
    case oversize
    /// None: the buffer does not hold every delta of the stream (a generation that
    /// continued a stream without `seedRetention`), so no exact record can be made.
    case incomplete
}
