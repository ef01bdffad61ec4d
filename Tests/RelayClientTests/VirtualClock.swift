import Foundation
@testable import RelayClient

/// A test clock: time moves only when the test calls `advance(by:)`; `sleep` returns
/// once the clock has been advanced past its deadline. No real waiting.
final class VirtualClock: RelayClock, @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64
    private var sleepers: [(deadline: Int64, continuation: CheckedContinuation<Void, Never>)] = []

    init(startMs: Int64 = 1_000) { now = startMs }

    func nowMs() -> Int64 { lock.withLock { now } }

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

/// A small deterministic generator (SplitMix64) so property tests are reproducible.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

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
