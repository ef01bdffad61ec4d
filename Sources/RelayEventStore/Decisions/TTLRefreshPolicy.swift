/// When an append also refreshes the TTL of a stream's keys (`PEXPIRE`; the keys'
/// lifetimes: docs/DATA_MODEL.md §12).
///
/// Refreshing on every event would cost four `PEXPIRE` calls (≈ 4 µs of Redis time per
/// event, docs/BENCHMARKS.md). Instead one append in every `intervalMs` of a generation's
/// appends carries the refresh, and so do the first append and the final one (so a
/// finished stream expires exactly `ttlMs` after its last event). The contract kept:
/// the keys never expire while a generation appends at least once per
/// `ttlMs − intervalMs`, and expire between `ttlMs − intervalMs` and `ttlMs` after the
/// last append (exactly `ttlMs` after a final one).
///
/// Pure: the caller passes its loop's monotonic time (ms).
public struct TTLRefreshPolicy: Sendable, Equatable {
    /// Longest time between two refreshing appends, ms: a tenth of the TTL, at most 10 s.
    public let intervalMs: UInt64
    private var lastRefreshMs: UInt64?

    /// `ttlMs`: the keys' TTL (`RELAY_BUFFER_TTL`, ms).
    public init(ttlMs: Int) {
        intervalMs = UInt64(max(1, min(ttlMs / 10, 10_000)))
    }

    /// Whether the append made at `nowMs` (monotonic ms) carries the refresh; records
    /// it when so. `final`: the stream's last event (`done`/`error`).
    public mutating func due(nowMs: UInt64, final: Bool) -> Bool {
        let elapsed = lastRefreshMs.map { nowMs &- $0 } ?? .max
        if final || elapsed >= intervalMs {
            lastRefreshMs = nowMs
            return true
        }
        return false
    }
}
