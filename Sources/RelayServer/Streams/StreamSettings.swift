/// The streams core's settings (generations, subscriptions, takeover, offset reads), in
/// its own units, made from the relay's options by `RelayConfig.streamSettings`
/// (docs/CONFIGURATION.md): the one place that maps them. Immutable, shared by every worker.
struct StreamSettings: Sendable, Equatable {
    /// A `: ping` comment on a connection quiet this long, ms (`RELAY_HEARTBEAT`).
    let heartbeatMs: UInt64
    /// Unsent bytes past which a subscriber is a slow consumer and is cut
    /// (`RELAY_MAX_PENDING_BYTES`, docs/PROTOCOL.md §4.3).
    let maxPendingBytes: Int
    /// Live streams end `redis_unavailable` after Redis was away this long, ms
    /// (`RELAY_REDIS_OUTAGE_GRACE`).
    let redisOutageGraceMs: UInt64
    /// Clock leeway for a token's `exp` on a live connection, s (`RELAY_JWT_LEEWAY`).
    let tokenLeewayS: Int64
    /// A `live=long-poll` offset read answers 204 after this long without news, ms
    /// (`RELAY_LONG_POLL_TIMEOUT`, docs/PROTOCOL.md §12).
    let longPollTimeoutMs: UInt64
    /// When a backed-up client's deltas are merged, and how many are held
    /// (`RELAY_COALESCE_BACKLOG_BYTES`, docs/PROTOCOL.md §4.3).
    let slowLink: SlowLinkCoalescer.Limits
    /// Replays read from Redis at once per worker (`RELAY_REPLAY_CONCURRENCY`).
    let replayConcurrency: Int
    /// Running generations per session (`RELAY_MAX_STREAMS_PER_SESSION`).
    let maxStreamsPerSession: Int
    /// How many times one answer may be continued by another instance (`RELAY_MAX_CONTINUATIONS`,
    /// docs/PROTOCOL.md §4.5); 0: a lost owner's answer ends `upstream_lost`, and a drain
    /// ends its generations instead of handing them over.
    let maxContinuations: Int
    /// The least completion a request must be able to afford, tokens (`RELAY_BUDGET_MINIMUM_TOKENS`).
    let budgetMinimumTokens: Int
    /// Test fault injection: each first replay is held back this long, ms
    /// (`RELAY_DEBUG_REPLAY_DELAY_MS`; 0 in production).
    let replayStallMs: UInt64
}
