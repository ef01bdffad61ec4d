import RelayCore

/// How an answer ended: the completion signal the app turns into a haptic and into
/// the buttons it offers.
public enum Completion: Sendable, Equatable {
    /// `done` arrived; `finishReason` is `stop`, `length`, … (docs/PROTOCOL.md §5).
    case finished(finishReason: String)
    /// The user stopped it (`done` with `cancelled`, or a local stop).
    case stopped
    /// 60 s passed without `done`: the text so far is final, a retry is offered.
    case timedOut
    /// Three reconnections failed, or the stream was idle too long to resume: a
    /// manual Resume (re-sending the whole request) is offered.
    case needsResume
    /// An `error` event or an HTTP error; `status` and `code` as in docs/PROTOCOL.md §8.
    case failed(status: Int, code: ErrorCode, message: String)

    /// The haptic a UI plays for it.
    public enum Haptic: String, Sendable { case success, warning, error }

    /// `success` for a normal finish, `warning` for stop / timeout / needsResume,
    /// `error` for failures.
    public var haptic: Haptic {
        switch self {
        case .finished: return .success
        case .stopped, .timedOut, .needsResume: return .warning
        case .failed: return .error
        }
    }

    /// `true` when the app should offer Retry / Resume (re-send the whole request).
    public var offersRetry: Bool {
        switch self {
        case .timedOut, .needsResume: return true
        case .failed(let status, _, _): return status == 404 || status == 409 || status >= 500 || status == 0
        case .finished, .stopped: return false
        }
    }
}
