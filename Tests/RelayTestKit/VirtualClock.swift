import Foundation

/// The test clock of every test target: time moves only when the test calls
/// `advance(by:)`, and `sleep(ms:)` returns once the clock has been advanced past its
/// deadline. No real waiting.
///
/// It reads in both units the code under test uses: `nowMs()` (`Int64`, the client kit's
/// `RelayClock`; `RelayClientTests` declares that conformance) and `loopMs` (`UInt64`,
/// the relay's loop milliseconds that the pure decisions take).
public final class VirtualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64
    private var sleepers: [(deadline: Int64, continuation: CheckedContinuation<Void, Never>)] = []

    /// A clock that reads `startMs` until it is advanced.
    public init(startMs: Int64 = 1_000) { now = startMs }

    /// Milliseconds since the clock's origin.
    public func nowMs() -> Int64 { lock.withLock { now } }

    /// The same instant as the relay's loop clock reads it (unsigned milliseconds).
    public var loopMs: UInt64 { UInt64(nowMs()) }

    /// How many `sleep` calls are waiting for the clock to move.
    public var sleeperCount: Int { lock.withLock { sleepers.count } }

    /// Returns once the clock has been advanced by `ms` from now (at once for `ms` ≤ 0).
    public func sleep(ms: Int64) async throws {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready: Bool = lock.withLock {
                if ms <= 0 { return true }
                sleepers.append((now + ms, c))
                return false
            }
            if ready { c.resume() }
        }
    }

    /// Moves time forward by `ms` and wakes the sleepers whose deadline passed.
    public func advance(by ms: Int64) {
        precondition(ms >= 0, "a virtual clock never goes back")
        let due: [CheckedContinuation<Void, Never>] = lock.withLock {
            now += ms
            let d = sleepers.filter { $0.deadline <= now }.map(\.continuation)
            sleepers.removeAll { $0.deadline <= now }
            return d
        }
        for c in due { c.resume() }
    }
}
