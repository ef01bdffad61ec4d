import Foundation
import RelayTestKit
@testable import RelayClient

/// A test clock: time moves only when the test calls `advance(by:)`; `sleep` returns
/// once the clock has been advanced past its deadline. No real waiting.
final class VirtualClock: RelayClock, @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64
    private var sleepers: [(deadline: Int64, continuation: CheckedContinuation<Void, Never>)] = []

    init(startMs: Int64 = 1_000) { now = startMs }

    func nowMs() -> Int64 { lock.withLock { now } }

    /// How many `sleep` calls are waiting for the clock to move.
    var sleeperCount: Int { lock.withLock { sleepers.count } }

    func sleep(ms: Int64) async throws {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready: Bool = lock.withLock {
                if ms <= 0 { return true }
                sleepers.append((now + ms, c))
                return false
            }
            if ready { c.resume() }
        }
    }

    /// Moves time forward and wakes the sleepers whose deadline passed.
    func advance(by ms: Int64) {
        let due: [CheckedContinuation<Void, Never>] = lock.withLock {
            now += ms
            let d = sleepers.filter { $0.deadline <= now }.map(\.continuation)
            sleepers.removeAll { $0.deadline <= now }
            return d
        }
        for c in due { c.resume() }
    }
}

/// The shared seeded generator (`RelayTestKit.SplitMix64`) under this target's name.
typealias SeededRandom = SplitMix64

/// Splits `text` into random chunks at Unicode scalar boundaries (so a chunk may end
/// inside a grapheme cluster, as a network delta can).
func randomChunks(_ text: String, using rng: inout SeededRandom, maxLength: Int = 7) -> [String] {
    let scalars = Array(text.unicodeScalars)
    var out: [String] = []
    var i = 0
    while i < scalars.count {
        let n = Int.random(in: 1...maxLength, using: &rng)
        let j = min(scalars.count, i + n)
        out.append(String(String.UnicodeScalarView(scalars[i..<j])))
        i = j
    }
    return out
}
