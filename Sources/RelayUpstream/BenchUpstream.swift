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

    /// The content of delta `k` (≥ 0) sent at `micros` (unix µs): `t=<micros>;n=<k>;`
    /// padded with `x` to `tokenBytes`. Written digit by digit into the string's own
    /// storage: this runs once per bench event, and interpolation cost a few allocations.
    public static func content(micros: UInt64, k: Int) -> String {
        let kk = UInt64(max(0, k))
        let length = 2 + digits(micros) + 3 + digits(kk) + 1
        return String(unsafeUninitializedCapacity: max(length, tokenBytes)) { out in
            var at = 0
            func put(_ b: UInt8) { out[at] = b; at += 1 }
            func put(_ v: UInt64) {
                let n = digits(v)
                var x = v
                for i in stride(from: n - 1, through: 0, by: -1) {
                    out[at + i] = UInt8(truncatingIfNeeded: x % 10) &+ 0x30
                    x /= 10
                }
                at += n
            }
            put(UInt8(ascii: "t")); put(UInt8(ascii: "="))
            put(micros)
            put(UInt8(ascii: ";")); put(UInt8(ascii: "n")); put(UInt8(ascii: "="))
            put(kk)
            put(UInt8(ascii: ";"))
            while at < tokenBytes { put(UInt8(ascii: "x")) }
            return at
        }
    }

    private static func digits(_ v: UInt64) -> Int {
        var n = 1
        var x = v
        while x >= 10 { x /= 10; n += 1 }
        return n
    }

    static func nowMicros() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000
    }
}
