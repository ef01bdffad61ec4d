import RelayCore
import RelayLoop
import RelayStreamLogic

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
    struct Pending: @unchecked Sendable {
        let json: String
        let text: String
        let finalState: String?
        /// This append also refreshes the keys' TTL (`TTLRefreshPolicy`); a resend keeps it.
        let refreshTTL: Bool
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
    /// The ordering and acknowledgement decisions (`RelayStreamLogic.AppendQueue`).
    private var queue = AppendQueue<Pending>()
    private var retryTimer: LoopTimer?
    /// Which appends refresh the keys' TTL.
    private var ttlRefresh: TTLRefreshPolicy

    /// The highest acknowledged seq.
    public var ackedSeq: UInt64 { queue.ackedSeq }

    public init(log: EventLog, loop: EventLoop, id: RequestID) {
        self.log = log
        self.loop = loop
        self.id = id
        self.keys = StreamKeys(id)
        self.ttlRefresh = TTLRefreshPolicy(ttlMs: log.ttlMs)
    }

    /// Events queued and not yet acknowledged.
    public var backlog: Int { queue.backlog }

    /// Queues an event and sends it at once unless a recovery is under way.
    public func append(seq: UInt64, json: String, text: String, finalState: String? = nil) {
        let refresh = ttlRefresh.due(nowMs: loop.nowMs, final: finalState != nil)
        send(queue.enqueue(seq: seq, Pending(json: json, text: text, finalState: finalState, refreshTTL: refresh)))
    }

    private func send(_ items: [(seq: UInt64, item: Pending)]) {
        for (seq, p) in items {
            log.append(keys, seq: seq, json: p.json, text: p.text, finalState: p.finalState,
                       refreshTTL: p.refreshTTL) { [weak self] r in
                self?.replied(seq: seq, r)
            }
        }
    }

    private func replied(seq: UInt64, _ r: Result<UInt64, RedisFailure>) {
        let reply: AppendReply
        switch r {
        case .success: reply = .stored
        case .failure(let f): reply = f.appendReply
        }
        switch queue.replied(seq: seq, reply) {
        case .wait: break
        case .drained: onDrained?()
        case .resend: scheduleResend()
        case .failed:
            if case .failure(let f) = r { onPermanentFailure?(f) }
        }
    }

    private func scheduleResend() {
        if retryTimer == nil {
            retryTimer = LoopTimer(loop: loop) { [weak self] in self?.resend() }
        }
        retryTimer?.schedule(afterMs: log.connection.isConnected ? 0 : 200)
    }

    private func resend() {
        guard queue.inFlight == 0, !queue.failed else { return }
        guard log.connection.isConnected else { return scheduleResend() }
        send(queue.resend())
        if queue.isDrained { onDrained?() }
    }
}
