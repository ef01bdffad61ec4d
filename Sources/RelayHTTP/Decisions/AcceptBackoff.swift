import RelayCore
/// What the listener does when `accept()` fails for lack of file descriptors (`EMFILE`,
/// `ENFILE`, `ENOBUFS`, `ENOMEM`; accept(2)).
///
/// A listening socket with a connection waiting stays readable, so retrying at once spins
/// the loop at full CPU and logs once per turn. Instead the listener pauses: the first
/// failure pauses `initialMs`, each consecutive failure doubles the pause up to `maxMs`, and a
/// successful accept resets it. The log is rate-limited: at most one line per `logEveryMs`,
/// carrying how many failures happened since the previous line. Pure: the caller passes the
/// loop clock (ms).
public struct AcceptBackoff: Sendable, Equatable {
    /// First pause after a failure, ms.
    public let initialMs: UInt64
    /// Longest pause, ms: also the longest the listener stays deaf after descriptors free up.
    public let maxMs: UInt64
    /// Fewest ms between two log lines.
    public let logEveryMs: UInt64

    private var nextPauseMs: UInt64
    private var lastLogMs: UInt64?
    private var unlogged = 0

    /// Failures since the last successful accept.
    public private(set) var consecutiveFailures = 0

    /// What to do after one failure.
    public struct Decision: Sendable, Equatable {
        /// Stop accepting for this long, ms, then try again.
        public var pauseMs: UInt64
        /// Log one line now reporting this many failures (those since the previous line,
        /// this one included); `nil`: stay quiet.
        public var logCount: Int?
    }

    /// - Parameters: see the properties; defaults 10 ms, 200 ms, 1,000 ms.
    public init(initialMs: UInt64 = 10, maxMs: UInt64 = 200, logEveryMs: UInt64 = 1_000) {
        self.initialMs = initialMs
        self.maxMs = max(initialMs, maxMs)
        self.logEveryMs = logEveryMs
        nextPauseMs = initialMs
    }

    /// Records a failed accept at `nowMs`.
    public mutating func failed(nowMs: UInt64) -> Decision {
        consecutiveFailures += 1
        unlogged += 1
        let pause = nextPauseMs
        nextPauseMs = min(maxMs, nextPauseMs * 2)
        var count: Int?
        if lastLogMs.map({ nowMs >= $0 + logEveryMs }) ?? true {
            count = unlogged
            unlogged = 0
            lastLogMs = nowMs
        }
        return Decision(pauseMs: pause, logCount: count)
    }

    /// Records a successful accept: the next failure starts again at `initialMs`.
    public mutating func succeeded() {
        consecutiveFailures = 0
        nextPauseMs = initialMs
    }
}
