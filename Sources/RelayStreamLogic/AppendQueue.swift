import RelayCore

/// How Redis answered one append (`Scripts.append`), as the appender needs to know it.
public enum AppendReply: Sendable, Equatable {
    /// Stored.
    case stored
    /// `OUTOFORDER <last_seq>`: the script refused a seq that is not `last_seq + 1`.
    case outOfOrder(lastSeq: UInt64?)
    /// `NOSTREAM` (expired or gone) or `FINISHED` (ended elsewhere): nothing more can be appended.
    case permanent
    /// Anything else (`NOSCRIPT` after a restart or `SCRIPT FLUSH`, a lost connection):
    /// resend once every reply in flight is in.
    case retryable
}

/// The in-order, pipelined append queue of one generation (DESIGN §3: "appends of one
/// generation are pipelined in order"), as a pure state machine over events of type
/// `Item` keyed by seq. The caller sends what `enqueue` / `resend` return, and feeds
/// every reply to `replied`.
///
/// Every event stays queued until acknowledged. After a retryable failure nothing more
/// is sent until every reply in flight is in; then the unacknowledged events are
/// re-sent in order. An `OUTOFORDER` showing the seq was already stored (its reply
/// was lost) counts as an acknowledgement.
public struct AppendQueue<Item>: Sendable where Item: Sendable {
    private var queue: [(seq: UInt64, item: Item)] = []
    private var head = 0          // index of the oldest unacknowledged event in `queue`
    private var nextToSend = 0    // index of the next event to send
    /// Appends sent and not yet answered.
    public private(set) var inFlight = 0
    /// A retryable failure was seen; sending waits for `resend`.
    public private(set) var recovering = false
    /// A permanent failure was seen; nothing more is sent.
    public private(set) var failed = false
    /// The highest acknowledged seq.
    public private(set) var ackedSeq: UInt64 = 0

    public init() {}

    /// Events queued and not yet acknowledged.
    public var backlog: Int { queue.count - head }

    /// Every queued event is acknowledged and nothing is in flight or being recovered
    /// (a resend can find nothing left: a later seq's acknowledgement covers the
    /// earlier ones, since Redis stores them in order only).
    public var isDrained: Bool { !recovering && !failed && inFlight == 0 && head == queue.count }

    /// Queues an event; returns what to send now (nothing while recovering or failed).
    public mutating func enqueue(seq: UInt64, _ item: Item) -> [(seq: UInt64, item: Item)] {
        guard !failed else { return [] }
        queue.append((seq, item))
        return pump()
    }

    private mutating func pump() -> [(seq: UInt64, item: Item)] {
        guard !recovering, !failed else { return [] }
        var out: [(seq: UInt64, item: Item)] = []
        while nextToSend < queue.count {
            out.append(queue[nextToSend])
            nextToSend += 1
            inFlight += 1
        }
        return out
    }

    /// What the caller does after a reply.
    public enum Next: Sendable, Equatable {
        /// Wait for more replies or events.
        case wait
        /// Every queued event is acknowledged.
        case drained
        /// Every reply is in after a retryable failure: call `resend` (once Redis is connected).
        case resend
        /// A permanent failure: report it; the queue sends nothing more.
        case failed
    }

    /// Feeds the reply to the append of `seq`.
    public mutating func replied(seq: UInt64, _ r: AppendReply) -> Next {
        inFlight -= 1
        switch r {
        case .stored:
            acknowledge(upTo: seq)
        case .outOfOrder(let last?) where last >= seq:
            acknowledge(upTo: seq)
        case .outOfOrder(let last?) where last < ackedSeq:
            // The store went back behind an acknowledged seq: acknowledged events were
            // lost (a Redis Cluster replica promoted before it received them, Redis
            // replication being asynchronous). Resending cannot fill the hole.
            failed = true
            return .failed
        case .permanent:
            failed = true
            return .failed
        case .outOfOrder, .retryable:
            recovering = true
        }
        if recovering { return inFlight == 0 ? .resend : .wait }
        return head == queue.count ? .drained : .wait
    }

    private mutating func acknowledge(upTo seq: UInt64) {
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

    /// Re-sends every unacknowledged event in order; empty while replies are still in
    /// flight or after a permanent failure.
    public mutating func resend() -> [(seq: UInt64, item: Item)] {
        guard inFlight == 0, !failed else { return [] }
        recovering = false
        nextToSend = head
        return pump()
    }
}
