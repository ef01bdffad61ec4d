import Foundation
import RelayCore
import RelayLoop

/// Bench-only upstream (`"model": "simulated-bench"`, `SimulatedDocuments.benchModel`):
/// every delta carries the producer's send time and its index, so a load generator can
/// measure append→client latency and count lost or duplicated events without knowing
/// the relay's seq numbering:
///
///     content = "t=<unix µs>;n=<k>;" padded with "x" to `BenchUpstream.tokenBytes`
///
/// `t` is read (CLOCK_REALTIME) when the token is emitted, i.e. just before the relay
/// appends it to Redis. `k` counts deltas from 1. Emits `max_tokens` deltas (default
/// 1,000) at the configured rate, then `done`, paced by `SimulatedUpstream`.
public enum BenchUpstream {
    /// Content size of each delta, bytes (a realistic small token plus the timestamp).
    public static let tokenBytes = 32

    /// A `SimulatedUpstream` emitting `max_tokens` (default 1,000) stamped deltas at
    /// `tokensPerSecond`, then `done` with `finish_reason: "length"`.
    public static func make(maxTokens: Int?, tokensPerSecond: Double, loop: EventLoop) -> Upstream {
        SimulatedUpstream(count: maxTokens ?? 1_000, finishReason: "length", promptTokens: 4,
                          tokensPerSecond: tokensPerSecond, loop: loop) { i in
            content(micros: nowMicros(), k: i + 1)
        }
    }

    /// The content of delta `k` sent at `micros` (unix µs).
    public static func content(micros: UInt64, k: Int) -> String {
        var s = "t=\(micros);n=\(k);"
        if s.utf8.count < tokenBytes { s += String(repeating: "x", count: tokenBytes - s.utf8.count) }
        return s
    }

    static func nowMicros() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000
    }
}
