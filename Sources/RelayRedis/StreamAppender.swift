import RelayCore
import RelayLoop

/// The ordered, pipelined append queue of one generation (DESIGN §3: "appends of one
/// generation are pipelined in order").
///
/// Every event stays queued until Redis acknowledges it. The append script refuses
/// any seq that is not `last_seq + 1` (`OUTOFORDER`), so when an append fails for a
/// retryable reason (`NOSCRIPT` after a Redis restart or `SCRIPT FLUSH`, a lost
/// connection) the appender waits for every reply in flight, then re-sends the
/// unacknowledged events in order; an `OUTOFORDER` showing the seq was already
/// stored (its reply was lost) counts as an acknowledgement. Loop thread only.
public final class StreamAppender {
    /// One event waiting for its acknowledgement.
    struct Pending {
        let seq: UInt64
        let json: String
        let text: String
        let finalState: String?
        let budget: (key: String, tokens: Int)?
    }

    /// The stream is gone (`NOSTREAM`) or was ended by someone else (`FINISHED`):
    /// nothing more can be appended.
    public var onPermanentFailure: ((RedisFailure) -> Void)?
    /// Every queued event is acknowledged (after the final one: the generation is over).
    public var onDrained: (() -> Void)?

    private let log: EventLog
    private let loop: EventLoop
    private let id: RequestID
    private let keys: StreamKeys
    private var queue: [Pending] = []
    private var head = 0          // index of the oldest unacknowledged event in `queue`
    private var nextToSend = 0    // index of the next event to send
    private var inFlight = 0
    private var recovering = false
    private var failed = false
    private var retryTimer: LoopTimer?

    /// The highest acknowledged seq.
    public private(set) var ackedSeq: UInt64 = 0

    public init(log: EventLog, loop: EventLoop, id: RequestID) {
        self.log = log
        self.loop = loop
        self.id = id
        self.keys = StreamKeys(id)
    }

    /// Events queued and not yet acknowledged.
    public var backlog: Int { queue.count - head }

    /// Queues an event and sends it at once unless a recovery is under way.
    public func append(seq: UInt64, json: String, text: String, finalState: String? = nil,
                       budget: (key: String, tokens: Int)? = nil) {
        guard !failed else { return }
        queue.append(Pending(seq: seq, json: json, text: text, finalState: finalState, budget: budget))
        pump()
    }

    private func pump() {
        guard !recovering, !failed else { return }
        while nextToSend < queue.count {
            let p = queue[nextToSend]
            nextToSend += 1
            inFlight += 1
            log.append(keys, seq: p.seq, json: p.json, text: p.text, finalState: p.finalState, budget: p.budget) { [weak self] r in
                self?.replied(seq: p.seq, r)
            }
        }
    }

    private func replied(seq: UInt64, _ r: Result<UInt64, RedisFailure>) {
        inFlight -= 1
        switch r {
        case .success:
            acknowledge(upTo: seq)
        case .failure(let f):
            if f.message.hasPrefix("OUTOFORDER"), let last = UInt64(f.message.split(separator: " ").last ?? ""), last >= seq {
                acknowledge(upTo: seq)
            } else if f.message.hasPrefix("NOSTREAM") || f.message.hasPrefix("FINISHED") {
                failed = true
                onPermanentFailure?(f)
                return
            } else {
                recovering = true
            }
        }
        if recovering && inFlight == 0 { scheduleResend() }
        if !recovering && head == queue.count { onDrained?() }
    }

    private func acknowledge(upTo seq: UInt64) {
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

    private func scheduleResend() {
        if retryTimer == nil {
            retryTimer = LoopTimer(loop: loop) { [weak self] in self?.resend() }
        }
        retryTimer?.schedule(afterMs: log.connection.isConnected ? 0 : 200)
    }

    private func resend() {
        guard inFlight == 0, !failed else { return }
        guard log.connection.isConnected else { return scheduleResend() }
        recovering = false
        nextToSend = head
        pump()
    }
}
