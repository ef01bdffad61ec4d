import RelayCore

/// The decisions of one subscription (docs/ARCHITECTURE.md) merging a replay from
/// the Redis stream with live pub/sub events, so that every event reaches the client
/// once and in seq order. Pure: the caller performs the reads and writes.
///
/// * A live event at or below `lastSent` is a duplicate and is dropped.
/// * The next seq (`lastSent + 1`) is written at once when no replay is under way.
/// * A live event that skips a seq (a message missed while pub/sub reconnected) is
///   held and a replay from `lastSent` is asked for; so is every live event that
///   arrives while a replay is under way (it is merged after the replay).
/// * A replay reads the events after `lastSent` whatever holds them (`EventLog.read`:
///   the retained entries, or the text key once the window moved past them).
/// * A replay requested while one is under way runs once more afterwards.
public struct ReplayMerge: Sendable, Equatable {
    /// The seq of the last event written to the client.
    public private(set) var lastSent: UInt64
    /// A read of the Redis stream is under way (or held back); live events wait.
    public private(set) var replaying = false
    private var replayAgain = false
    private var pending: [SequencedEvent] = []

    /// - Parameter lastSent: the seq the client already has (`Last-Event-ID`, 0 when fresh).
    public init(lastSent: UInt64) { self.lastSent = lastSent }

    /// Live events held until the replay under way ends.
    public var held: [SequencedEvent] { pending }

    /// What to do with a live event.
    public enum LiveDecision: Sendable, Equatable {
        /// Already written (seq ≤ `lastSent`): drop it.
        case drop
        /// The next seq and nothing under way: write it now (then call `wrote`).
        case write
        /// A replay is under way: the event is held and merged after it.
        case hold
        /// The event skips a seq: it is held; start a replay (`requestReplay`).
        case replay
    }

    /// Decides what to do with a live event.
    public mutating func live(_ e: SequencedEvent) -> LiveDecision {
        if replaying {
            pending.append(e)
            return .hold
        }
        if e.seq <= lastSent { return .drop }
        if e.seq == lastSent + 1 { return .write }
        pending.append(e)
        return .replay
    }

    /// Asks for a replay of everything after `lastSent`. Returns `true` when the caller
    /// must read now (`XRANGE (lastSent +`); `false` when one is under way (it will be
    /// repeated once it ends).
    public mutating func requestReplay() -> Bool {
        if replaying {
            replayAgain = true
            return false
        }
        replaying = true
        return true
    }

    /// Holds live events without reading yet (test fault injection: a delayed replay).
    public mutating func holdLive() { replaying = true }

    /// Ends a hold started by `holdLive` (call `requestReplay` next).
    public mutating func releaseHold() { replaying = false }

    /// The read failed (Redis trouble): nothing is under way any more; the caller
    /// retries later with `requestReplay`.
    public mutating func readFailed() { replaying = false }

    /// The result of merging a replay with the held live events.
    public struct Merged: Sendable, Equatable {
        /// Events to write, in seq order, starting at `lastSent + 1` (pass to `take`).
        public var events: [SequencedEvent]
        /// Read again afterwards: a held event skipped a seq, or a replay was asked for
        /// while this one ran.
        public var replayAgain: Bool
    }

    /// Merges a replay's events with the held live events (duplicates dropped), ends
    /// the replay, and says whether to read again.
    public mutating func finishReplay(_ events: [SequencedEvent]) -> Merged {
        var batch = events.filter { $0.seq > lastSent }
        var expected = (batch.last?.seq ?? lastSent) + 1
        pending.sort { $0.seq < $1.seq }
        var gap = false
        for e in pending where e.seq >= expected {
            if e.seq == expected {
                batch.append(e)
                expected += 1
            } else {
                gap = true
                break
            }
        }
        pending.removeAll()
        replaying = false
        let again = gap || replayAgain
        replayAgain = false
        return Merged(events: batch, replayAgain: again)
    }

    /// Picks the events to write now from `events`: each must be `lastSent + 1`, and
    /// nothing after a terminal event (`done`/`error`). Advances `lastSent`.
    /// - Returns: the events to write and whether the last of them is terminal.
    public mutating func take(_ events: [SequencedEvent]) -> (events: [SequencedEvent], terminal: Bool) {
        var out: [SequencedEvent] = []
        for e in events where e.seq == lastSent + 1 {
            out.append(e)
            lastSent = e.seq
            if e.isTerminal { return (out, true) }
        }
        return (out, false)
    }

    /// One live event (decision `.write`) was written.
    public mutating func wrote(_ e: SequencedEvent) { lastSent = e.seq }
}
