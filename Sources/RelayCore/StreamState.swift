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

    /// The state a stream ends in with `event`: `done` or `cancelled` (a `done` whose
    /// `finish_reason` is `cancelled`), `failed` for `error`; `nil` for an event that does
    /// not end it (a `delta`, a part).
    public init?(endingWith event: StreamEvent) {
        switch event {
        case .delta, .part: return nil
        case .done(let reason, _, _): self = reason == .cancelled ? .cancelled : .done
        case .error: self = .failed
        }
    }
}
