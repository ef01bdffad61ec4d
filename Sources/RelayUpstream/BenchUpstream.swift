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
/// 1,000) at the configured rate, then `done` — the same timer scheme as
/// `SimulatedUpstream`.
public final class BenchUpstream: Upstream {
    /// Content size of each delta, bytes (a realistic small token plus the timestamp).
    public static let tokenBytes = 32

    private let count: Int
    private let promptTokens: Int
    private let tokensPerSecond: Double
    private let loop: EventLoop
    private var timer: LoopTimer?
    private var emit: ((StreamEvent) -> Void)?
    private var sent = 0
    private var startMs: UInt64 = 0

    public init(maxTokens: Int?, promptTokens: Int, tokensPerSecond: Double, loop: EventLoop) {
        self.count = max(0, maxTokens ?? 1_000)
        self.promptTokens = promptTokens
        self.tokensPerSecond = tokensPerSecond
        self.loop = loop
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

    public func start(emit: @escaping (StreamEvent) -> Void) {
        self.emit = emit
        startMs = loop.nowMs
        let period = max(1.0, 1000.0 / tokensPerSecond)
        timer = LoopTimer(loop: loop, repeating: true) { [weak self] in self?.tick() }
        timer?.schedule(afterMs: UInt64(period.rounded()))
    }

    private func tick() {
        guard let emit else { return }
        let elapsed = Double(loop.nowMs &- startMs)
        let due = min(count, Int(elapsed * tokensPerSecond / 1000.0))
        let n = min(max(due, sent + 1), count)
        while sent < n {
            sent += 1
            emit(.delta(BenchUpstream.content(micros: BenchUpstream.nowMicros(), k: sent)))
        }
        if sent >= count {
            timer?.cancel()
            timer = nil
            self.emit = nil
            emit(.done(finishReason: "length", usage: Usage(promptTokens: promptTokens, completionTokens: sent)))
        }
    }

    public func cancel() -> Usage {
        timer?.cancel()
        timer = nil
        emit = nil
        return Usage(promptTokens: promptTokens, completionTokens: sent)
    }
}
