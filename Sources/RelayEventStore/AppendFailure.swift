import RelayRedis

extension RedisFailure {
    /// How the appender must treat this failure of an append (`AppendQueue`): a gone
    /// stream is permanent; a refused entry ID, `OUTOFORDER` and `FINISHED` are
    /// ambiguous (a resend of a stored event, or a fenced or taken-over stream: the
    /// stored tail decides, `AppendStop`); anything else (`DISCONNECTED`, `OOM`, `BUSY`,
    /// `NOSCRIPT`) is retryable.
    public var appendReply: AppendReply {
        switch code {
        case .noStream: return .permanent
        case .entryIDRefused, .outOfOrder, .finished: return .refused
        default: return .retryable
        }
    }
}
