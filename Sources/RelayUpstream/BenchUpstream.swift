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
/// `t` (CLOCK_REALTIME) is the token's due time by the generation's schedule (its start
/// plus k / rate), or the time it is emitted if that is earlier (a tick emits at least
/// one token): a stall of the relay's loop that delays the tick counts in the measured
/// latency, as a stall of nchan counts in nchan's. `k` counts deltas from 1. Emits `max_tokens` deltas (default
/// 1,000) at the configured rate, then `done`, paced by `SimulatedUpstream`.
public enum BenchUpstream {
    /// Content size of each delta, bytes (a realistic small token plus the timestamp).
    public static let tokenBytes = 32

    /// A `SimulatedUpstream` emitting `max_tokens` (default 1,000) stamped deltas at
    /// `tokensPerSecond`, then `done` with `finish_reason: "length"`.
    public static func make(maxTokens: Int?, tokensPerSecond: Double, loop: EventLoop) -> Upstream {
        SimulatedUpstream(count: maxTokens ?? 1_000, finishReason: "length", promptTokens: 4,
                          tokensPerSecond: tokensPerSecond, loop: loop) { i, due in
            content(micros: min(SimulatedUpstream.wallMicros(), due), k: i + 1)
        }
    }

    /// The content of delta `k` (≥ 0) sent at `micros` (unix µs): `t=<micros>;n=<k>;`
    /// padded with `x` to `tokenBytes`. Written digit by digit into the string's own
    /// storage: this runs once per bench event, and interpolation cost a few allocations.
    public static func content(micros: UInt64, k: Int) -> String {
        let kk = UInt64(max(0, k))
        let dm = ASCIIDecimal.digits(micros)
        let dk = ASCIIDecimal.digits(kk)
        let length = 2 + dm + 3 + dk + 1
        let total = max(length, tokenBytes)
        return String(unsafeUninitializedCapacity: total) { out in
            let p = out.baseAddress!
            p[0] = UInt8(ascii: "t")
            p[1] = UInt8(ascii: "=")
            ASCIIDecimal.write(micros, digits: dm, to: UnsafeMutableRawPointer(p + 2))
            var at = 2 + dm
            p[at] = UInt8(ascii: ";")
            p[at + 1] = UInt8(ascii: "n")
            p[at + 2] = UInt8(ascii: "=")
            ASCIIDecimal.write(kk, digits: dk, to: UnsafeMutableRawPointer(p + at + 3))
            at += 3 + dk
            p[at] = UInt8(ascii: ";")
            if total > length { (p + length).initialize(repeating: UInt8(ascii: "x"), count: total - length) }
            return total
        }
    }
}
