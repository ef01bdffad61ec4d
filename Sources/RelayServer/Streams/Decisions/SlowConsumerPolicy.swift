/// Backpressure for one client connection (docs/PROTOCOL.md §4): is the client a slow consumer
/// whose connection should be closed (it resumes from Redis later)?
///
/// Judged on bytes that stay unsent over time, not on one loop turn: a single event larger
/// than the limit, written to a client that reads at full speed, is over the limit for the
/// moment it takes the kernel to take it, and that is fine. The client is slow when its unsent
/// output has been above `limitBytes` at every observation for `windowMs` (observations are
/// each write to the connection and each hub tick). `hardLimitBytes` bounds memory whatever the
/// timing: above it the client is slow at once. Pure; the caller passes the loop clock (ms).
public struct SlowConsumerPolicy: Sendable, Equatable {
    /// Unsent bytes tolerated indefinitely (`RELAY_MAX_PENDING_BYTES`).
    public let limitBytes: Int
    /// How long the unsent bytes may stay above `limitBytes`, ms.
    public let windowMs: UInt64
    /// Unsent bytes never tolerated, bytes.
    public let hardLimitBytes: Int

    private var overSinceMs: UInt64?

    /// - Parameters:
    ///   - limitBytes: `RELAY_MAX_PENDING_BYTES`.
    ///   - windowMs: default 500 ms: far more than a reader at full speed needs for any one
    ///     event the upstream limits allow (4 MiB), far less than a short answer lasts, so a
    ///     1 KB/s reader is cut while the answer is still being written.
    ///   - hardLimitBytes: default 16 × `limitBytes` (4 MiB with the default limit).
    public init(limitBytes: Int, windowMs: UInt64 = 500, hardLimitBytes: Int? = nil) {
        self.limitBytes = limitBytes
        self.windowMs = windowMs
        let (m, o) = limitBytes.multipliedReportingOverflow(by: 16)
        self.hardLimitBytes = max(limitBytes, hardLimitBytes ?? (o ? Int.max : m))
    }

    /// Since when (loop ms) the unsent bytes have been above the limit, `nil` when they are not.
    public var overLimitSinceMs: UInt64? { overSinceMs }

    /// Records `pendingBytes` unsent at `nowMs`; `true` when the client is a slow consumer.
    public mutating func isSlow(pendingBytes: Int, nowMs: UInt64) -> Bool {
        if pendingBytes > hardLimitBytes { return true }
        guard pendingBytes > limitBytes else {
            overSinceMs = nil
            return false
        }
        let since = overSinceMs ?? nowMs
        overSinceMs = since
        return nowMs >= since + windowMs
    }
}
