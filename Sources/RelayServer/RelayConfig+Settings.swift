import RelayConfiguration
import RelayEventStore

extension RelayConfig {
    /// The streams core's settings (`StreamSettings`) from these options.
    var streamSettings: StreamSettings {
        StreamSettings(heartbeatMs: UInt64(heartbeatMs), maxPendingBytes: maxPendingBytes,
                       redisOutageGraceMs: UInt64(redisOutageGraceMs), tokenLeewayS: Int64(jwtLeewaySeconds),
                       longPollTimeoutMs: UInt64(longPollTimeoutMs),
                       slowLink: SlowLinkCoalescer.Limits(highWaterBytes: coalesceBacklogBytes == 0 ? .max : coalesceBacklogBytes,
                                                          maxHeldBytes: max(1, maxPendingBytes / 4)),
                       replayConcurrency: replayConcurrency, maxStreamsPerSession: maxStreamsPerSession,
                       maxContinuations: maxContinuations, budgetMinimumTokens: budgetMinimumTokens,
                       replayStallMs: UInt64(debugReplayDelayMs))
    }

    /// The event store's settings (`EventStoreSettings`) from these options.
    var eventStoreSettings: EventStoreSettings {
        EventStoreSettings(maxLen: bufferEvents, ttlMs: bufferTTLms, lossless: losslessResume,
                           retentionMs: answerRetentionMs, retentionMaxBytes: answerRetentionMaxBytes)
    }
}
