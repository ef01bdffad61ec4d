/// The state of a stream in its meta hash (docs/DATA_MODEL.md §3, `state`).
public enum StreamState: String, Sendable, CaseIterable {
    /// A generation is appending events.
    case running
    /// Ended with `done` (`finish_reason` other than `cancelled`).
    case done
    /// Ended with `done` whose `finish_reason` is `cancelled` (DELETE).
    case cancelled
    /// Ended with an `error` event.
    case failed

    /// `true` once the stream has ended (any state but `running`).
    public var isFinished: Bool { self != .running }
}
