import RelayCore

/// How Redis answered the `XADD` of one append (plain pipelined commands, no per-event
/// Lua script: docs/DATA_MODEL.md §5), as the appender needs to know it.
public enum AppendReply: Sendable, Equatable {
    /// Stored: `XADD` returned the entry ID (or the final event's script returned its seq).
    case stored
    /// `XADD` refused the explicit ID: "equal or smaller than the target stream top item"
    /// (the seq is already stored, or another writer appended it), or "exhausted the last
    /// possible ID" (the stream was fenced by a terminal event, `XSETID` to the maximum);
    /// the final event's script: `OUTOFORDER` or `FINISHED`. Ambiguous: the stored tail
    /// decides (`AppendQueue.verified`).
    case refused
    /// `XADD … NOMKSTREAM` returned nil: the stream key is gone (expired, or lost with
    /// Redis' data); the final script's `NOSTREAM`. Nothing more can be appended.
    case permanent
    /// Anything else (`DISCONNECTED`, `-OOM`, `-BUSY`, `-LOADING`, `NOSCRIPT` of the
    /// final script): verify the stored tail once every reply is in, then resend.
    case retryable
}

/// What the status read of a stream found (`Scripts.appendStatus`): its meta `state`,
/// its top entry, and the entries after the appender's acknowledged seq.
public struct StoredTail: Sendable, Equatable {
    /// The meta hash `state` (`running`, `done`, `cancelled`, `failed`); `nil` when the
    /// meta hash or the stream key is gone.
    public var state: String?
    /// The seq of the stream's top (newest) entry, 0 when it holds none.
    public var topSeq: UInt64
    /// The entries with a seq above the acknowledged one, ascending (at most a bounded
    /// count: the rest is verified on a later round): seq and event JSON (field `e`).
    public var entries: [SequencedEvent]
    /// The end offset (bytes) stored for the seq the lossless-resume text was confirmed
    /// through, when asked and the `text` key reaches it; `nil` otherwise.
    public var textEnd: Int?

    public init(state: String?, topSeq: UInt64, entries: [SequencedEvent], textEnd: Int? = nil) {
        self.state = state
        self.topSeq = topSeq
        self.entries = entries
        self.textEnd = textEnd
    }
}

/// The in-order, pipelined append queue of one generation (the appends of one
/// generation are pipelined in order: docs/DATA_MODEL.md §5), as a pure state machine
/// over events of type `Item` keyed by seq. The caller sends what `enqueue` / `nextGroup` return, feeds
/// every `XADD` reply to `replied`, and on `.verify` reads the stored tail
/// (`Scripts.appendStatus`) and feeds it to `verified`.
///
/// **The group rule (gap guard).** An `XADD` with an explicit ID `<seq>-0` refuses a seq
/// at or below the stream's top, but not one that skips a seq. Without a per-event
/// script, the `XADD` of k could fail (`-OOM` under `noeviction`, `-BUSY` while a
/// script runs, a lost connection) while that of k+1, sent in a later write before k's
/// reply came back, succeeds: a hole. So the events of a stream go out in *groups*:
/// the next group is sent only when every reply of the previous one is in (at
/// 50 tokens/s and sub-millisecond round trips a group is one event and this costs
/// nothing; under a burst the queued events go together). Within one group the
/// commands arrive in one write, and Redis runs the commands of one read of a client's
/// query buffer in one pass (`processInputBuffer`), so a condition that refuses k
/// (out of memory, a busy script) refuses the later ones of that read alike. A group
/// larger than one read (16 KiB, `PROTO_IOBUF_LEN`) could in theory straddle the end
/// of a busy script; that is why every failure is followed by `verified`, which checks
/// that the entries after the acknowledged seq are exactly ours and contiguous, and
/// fails the stream (rather than resending past a hole) when they are not.
///
/// **Acknowledgement.** A `.stored` reply acknowledges its seq only while no earlier
/// reply of the group failed (then the tail decides). After any other reply nothing
/// more is sent; once every reply is in, `.verify`: the tail acknowledges what Redis
/// holds of ours (a resend after a lost reply must not count as a failure), fails on a
/// hole, on an entry written by someone else (the `upstream_lost` of a lease expiry),
/// on a stream that went back behind an acknowledged seq (a promoted replica that had
/// not received them: Redis replication is asynchronous), on a gone stream, and when
/// events remain but the stream is no longer `running`; else the rest is resent.
public struct AppendQueue<Item>: Sendable where Item: Sendable {
    private var queue: [(seq: UInt64, item: Item)] = []
    private var head = 0          // index of the oldest unacknowledged event in `queue`
    private var nextToSend = 0    // index of the next event to send
    /// Most events per group (≥ 1). Keep it below the stream's `MAXLEN`, so a group's
    /// entries are still retained when the tail is verified.
    public let maxGroup: Int
    /// Appends sent and not yet answered.
    public private(set) var inFlight = 0
    /// A failure (or a reconnection) was seen: nothing is sent until `verified`.
    public private(set) var recovering = false
    /// Why the queue stopped for good; `nil` while it runs.
    public private(set) var failure: Failure?
    /// The highest acknowledged seq.
    public private(set) var ackedSeq: UInt64 = 0
    /// Recovery rounds in a row (a failure, the tail read, the resend) that acknowledged
    /// nothing: Redis keeps refusing (`-OOM` under `noeviction`, `-BUSY`), or the tail
    /// read itself fails.
    private var fruitlessRounds = 0

    /// Pause before the next tail read, ms: 0 for the first after progress (a lost
    /// reply is settled at once), then 10 ms doubling to 500 ms while rounds acknowledge
    /// nothing, so a Redis that keeps refusing appends is not sent the same group tens
    /// of thousands of times a second per stream.
    public var verifyDelayMs: UInt64 {
        fruitlessRounds == 0 ? 0 : min(500, 10 << UInt64(min(fruitlessRounds - 1, 6)))
    }

    /// The tail read failed (an error reply): the next one waits `verifyDelayMs`.
    public mutating func verifyFailed() { fruitlessRounds += 1 }

    /// Why nothing more can be appended (`AppendStop`).
    public typealias Failure = AppendStop

    /// `true` after a permanent failure: nothing more is sent.
    public var failed: Bool { failure != nil }

    /// - Parameters:
    ///   - maxGroup: most events in flight at once.
    ///   - ackedSeq: the seq already stored when the queue starts (a takeover continues
    ///     after it; 0 for a new stream).
    public init(maxGroup: Int = 64, ackedSeq: UInt64 = 0) {
        self.maxGroup = max(1, maxGroup)
        self.ackedSeq = ackedSeq
    }

    /// Events queued and not yet acknowledged.
    public var backlog: Int { queue.count - head }

    /// Events queued and not sent yet (held back by `sendableThrough`, or waiting for
    /// the group in flight or a recovery).
    public var unsent: Int { queue.count - nextToSend }

    /// Every queued event is acknowledged and nothing is in flight or being recovered.
    public var isDrained: Bool { !recovering && !failed && inFlight == 0 && head == queue.count }

    /// Queues an event; returns what to send now (nothing while a group is in flight,
    /// while recovering, or after a failure). `sendableThrough`: see `nextGroup`.
    public mutating func enqueue(seq: UInt64, _ item: Item, sendableThrough: UInt64 = .max) -> ArraySlice<(seq: UInt64, item: Item)> {
        guard !failed else { return [] }
        queue.append((seq, item))
        return nextGroup(sendableThrough: sendableThrough)
    }

    /// The next group: up to `maxGroup` queued events, once every reply of the previous
    /// group is in and nothing is being recovered; else empty. Events above
    /// `sendableThrough` stay queued (the caller holds them back, e.g. until their
    /// text is stored: `TextCheckpoint.sendableThrough`) and go out in a later call.
    /// The group is a slice of the queue's own storage (no copy per group); release it
    /// before the queue changes again, or that change copies the queue.
    public mutating func nextGroup(sendableThrough: UInt64 = .max) -> ArraySlice<(seq: UInt64, item: Item)> {
        guard !recovering, !failed, inFlight == 0 else { return [] }
        var end = min(queue.count, nextToSend + maxGroup)
        while end > nextToSend && queue[end - 1].seq > sendableThrough { end -= 1 }
        guard nextToSend < end else { return [] }
        let out = queue[nextToSend..<end]
        inFlight = out.count
        nextToSend = end
        return out
    }

    /// What the caller does after a reply.
    public enum Next: Sendable, Equatable {
        /// Wait for more replies or events.
        case wait
        /// Every queued event is acknowledged.
        case drained
        /// The group is acknowledged and events are queued: send `nextGroup()` (which may
        /// return none while the caller holds events back).
        case send
        /// Every reply is in after a failure: read the stored tail after `ackedSeq`
        /// (once Redis is connected) and call `verified`.
        case verify
        /// A permanent failure (`failure`): report it; the queue sends nothing more.
        case failed
    }

    /// Feeds the `XADD` reply of the append of `seq` (replies arrive in send order).
    public mutating func replied(seq: UInt64, _ r: AppendReply) -> Next {
        inFlight -= 1
        guard !failed else { return .wait }
        switch r {
        case .stored:
            // After an earlier failure in this group a success may sit behind a hole:
            // the tail decides.
            if !recovering { acknowledge(upTo: seq) }
        case .permanent:
            failure = .streamGone
            return .failed
        case .refused, .retryable:
            recovering = true
        }
        return afterReply()
    }

    private func afterReply() -> Next {
        if inFlight > 0 { return .wait }
        if recovering { return .verify }
        return head == queue.count ? .drained : .send
    }

    /// Redis may have changed behind the queue (the connection came back: a restart or
    /// a failover may have lost acknowledged events): verify the tail before sending more.
    /// Returns `true` when the caller must verify now (nothing in flight); else the last
    /// reply in flight answers `.verify`.
    public mutating func mustVerify() -> Bool {
        guard !failed else { return false }
        recovering = true
        return inFlight == 0
    }

    /// Feeds the stored tail read after `.verify`. `matches(item, json)`: whether a
    /// stored entry's JSON is this queued event (ours, not another writer's).
    /// `text`: the seq the lossless-resume text was confirmed stored through when the
    /// tail was read, and its end offset (bytes); the tail must hold that offset
    /// (`StoredTail.textEnd`), else `.textWentBack`.
    /// Returns the events it acknowledged (in seq order: they may not have been
    /// published yet) and what to do next (`.send`, `.drained` or `.failed`).
    public mutating func verified(_ tail: StoredTail, text: (seq: UInt64, end: Int)? = nil,
                                  matches: (Item, String) -> Bool)
        -> (acknowledged: [(seq: UInt64, item: Item)], next: Next) {
        guard recovering, inFlight == 0, !failed else { return ([], .wait) }
        guard let state = tail.state else { return fail(.streamGone) }
        // Another instance took the stream over: its entries may sit after ours (a hole,
        // a foreign entry), but they are the taker's, not a loss (docs/PROTOCOL.md §4.5).
        if state == AppendStop.takenState { return fail(.takenOver) }
        if tail.topSeq < ackedSeq { return fail(.storeWentBack(topSeq: tail.topSeq)) }
        if let text, tail.textEnd != text.end { return fail(.textWentBack(seq: text.seq)) }
        var acked: [(seq: UInt64, item: Item)] = []
        for e in tail.entries where e.seq > ackedSeq {
            let expected = ackedSeq + 1
            if e.seq > expected { return fail(.hole(afterSeq: ackedSeq), acked) }
            guard head < queue.count, queue[head].seq == e.seq, matches(queue[head].item, e.json) else {
                return fail(.foreignEntry(seq: e.seq), acked)
            }
            acked.append(queue[head])
            acknowledge(upTo: e.seq)
        }
        recovering = false
        nextToSend = head
        fruitlessRounds = acked.isEmpty ? fruitlessRounds + 1 : 0
        if head == queue.count { return (acked, .drained) }
        if StreamState(rawValue: state) != .running { return fail(.ended(state: state), acked) }
        return (acked, .send)
    }

    private mutating func fail(_ f: Failure, _ acked: [(seq: UInt64, item: Item)] = [])
        -> (acknowledged: [(seq: UInt64, item: Item)], next: Next) {
        failure = f
        recovering = false
        return (acked, .failed)
    }

    private mutating func acknowledge(upTo seq: UInt64) {
        if head < queue.count && queue[head].seq <= seq { fruitlessRounds = 0 }
        while head < queue.count && queue[head].seq <= seq {
            ackedSeq = max(ackedSeq, queue[head].seq)
            head += 1
        }
        if head > 256 && head * 2 > queue.count {
            queue.removeFirst(head)
            nextToSend = max(0, nextToSend - head)
            head = 0
        }
    }
}
