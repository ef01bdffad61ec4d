/// Why an appender stops for good (`AppendQueue`, `StreamAppender.onPermanentFailure`):
/// a typed outcome, decided from the stored tail (`Scripts.appendStatus`), never from an
/// error text. Which ones settle the answer is the generation's decision: every one but
/// `takenOver`, whose new owner settles (docs/PROTOCOL.md §4.5).
public enum AppendStop: Sendable, Equatable, CustomStringConvertible {
    /// Another instance took the stream over (`Scripts.takeover`): this writer's ownership
    /// epoch is stale. Checked before anything else in the tail, since the taker's own
    /// entries follow this writer's.
    case takenOver
    /// The stream key or its meta hash is gone (expired, deleted, Redis lost its data).
    case streamGone
    /// The stream is no longer `running` (ended by someone else) and events remain.
    case ended(state: String)
    /// The stream's top entry is below an acknowledged seq: acknowledged events were lost.
    case storeWentBack(topSeq: UInt64)
    /// The entry after `afterSeq` is missing while a later one is stored.
    case hole(afterSeq: UInt64)
    /// The entry `seq` holds another writer's event (a lease expiry's terminal event).
    case foreignEntry(seq: UInt64)
    /// The lossless-resume text confirmed stored through `seq` is gone or short
    /// while the acknowledged entries are there (a failover or restart lost a text
    /// write whose reply came back): trimming on would lose that text for good.
    case textWentBack(seq: UInt64)

    /// The state `Scripts.appendStatus` reports for a running stream whose meta holds a
    /// newer ownership epoch than the reader's.
    public static let takenState = "taken"

    /// For logs: what happened, in words.
    public var description: String {
        switch self {
        case .takenOver: return "another instance took the stream over (stale ownership epoch)"
        case .streamGone: return "stream expired or lost"
        case .ended(let state): return "the stream already ended (\(state))"
        case .storeWentBack(let top): return "the stream went back to seq \(top), below an acknowledged seq"
        case .hole(let after): return "the entry after seq \(after) is missing while a later one is stored"
        case .foreignEntry(let seq): return "entry \(seq) was written by another writer (lease expired)"
        case .textWentBack(let seq): return "the lossless-resume text stored through seq \(seq) is gone or short"
        }
    }
}
