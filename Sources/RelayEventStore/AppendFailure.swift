import RelayRedis

extension RedisFailure {
    /// The stream was taken over by another instance (`Scripts.takeover`): this writer's
    /// epoch is stale (`FINISHED taken`).
    public var isTakenOver: Bool {
        if case .finished = code { return message.hasSuffix(" taken") }
        return false
    }

    /// How the appender must treat this failure of an append (`AppendQueue`): a gone
    /// stream is permanent; a refused entry ID, `OUTOFORDER` and `FINISHED` are
    /// ambiguous (a resend of a stored event, or a fenced stream: the stored tail
    /// decides); anything else (`DISCONNECTED`, `OOM`, `BUSY`, `NOSCRIPT`) is retryable.
    public var appendReply: AppendReply {
        switch code {
        case .noStream: return .permanent
        case .entryIDRefused, .outOfOrder, .finished: return .refused
        default: return .retryable
        }
    }
}
