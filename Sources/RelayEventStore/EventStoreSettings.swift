/// The event store's settings (docs/DATA_MODEL.md §2–§5, §14), in its own units; the relay
/// maps its options onto them (`RelayConfig.eventStoreSettings`). Immutable.
public struct EventStoreSettings: Sendable, Equatable {
    /// Entries kept per stream at most (`XADD MAXLEN`; `RELAY_BUFFER_EVENTS`).
    public var maxLen: Int
    /// TTL of a stream's keys after its last append, ms (`RELAY_BUFFER_TTL`).
    public var ttlMs: Int
    /// Keep the full text and per-seq offsets for lossless resume (`RELAY_LOSSLESS_RESUME`).
    public var lossless: Bool
    /// How long a finished answer's record is kept, ms (`RELAY_ANSWER_RETENTION`; 0: none).
    public var retentionMs: Int
    /// The largest retained record body, bytes (`RELAY_ANSWER_RETENTION_MAX_BYTES`).
    public var retentionMaxBytes: Int

    /// - Parameters: `maxLen` entries, `ttlMs` ms, `lossless`, `retentionMs` ms (0: off),
    ///   `retentionMaxBytes` bytes.
    public init(maxLen: Int, ttlMs: Int, lossless: Bool, retentionMs: Int = 0, retentionMaxBytes: Int = 1 << 20) {
        self.maxLen = maxLen
        self.ttlMs = ttlMs
        self.lossless = lossless
        self.retentionMs = retentionMs
        self.retentionMaxBytes = retentionMaxBytes
    }
}
