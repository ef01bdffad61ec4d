import RelayCore
import RelayLoop
import RelayRedis

/// The ordered, pipelined appends of one generation, plain commands per event, no script
/// (docs/DATA_MODEL.md §5).
///
/// Each event is `EventLog.append` (`XADD … NOMKSTREAM` with the explicit ID `<seq>-0`,
/// trimming on the seqs `StreamTrim` picks, then the TTL refresh when `TTLRefreshPolicy`
/// says it is due); the final event is `EventLog.appendFinal` (a script, once per
/// stream). With lossless resume on, each event's text is buffered in a
/// `TextCheckpoint` and written once per group of events (`EventLog.writeText`); events
/// whose text could be trimmed out of the retained entries before it is stored are
/// held back until it is (`TextCheckpoint.sendableThrough`), and a failed text write
/// is resent after the same tail verification as a failed `XADD`.
/// An event is published on the live channel only after its `XADD` was acknowledged,
/// in seq order: a refused or failed `XADD` (a fenced stream, a full Redis) must not
/// reach subscribers as a live event that the log does not hold.
///
/// The appender is the only writer of a running stream, so it keeps the text's byte
/// length itself: each event's start offset is fixed when it is queued and a resend
/// writes the same bytes at the same place.
///
/// Ordering and acknowledgement are `AppendQueue`'s (the group rule
/// and the tail verification after any failure are documented there). The tail is
/// read with `EventLog.appendStatus` once every reply of a failed group is in, and
/// again after each (re)connection before anything more is sent. Loop thread only.
///
/// Lifetime: nothing holds the appender weakly (a weak reference would move
/// its reference counts to a side table and slow every retain and release of it). Each
/// command in flight holds it strongly until Redis answers it or the connection fails
/// it (every command gets one or the other, `RedisConnection`), and its callbacks
/// usually capture their owner: the owner calls `close()` when it is done with the
/// appender. That drops the callbacks and makes the appender inert, so a reply that
/// comes back after it is ignored, and the appender is freed once its last reply is in.
public final class StreamAppender: AnswerWriter {
    /// One event waiting for its acknowledgement.
    struct Pending: @unchecked Sendable {
        let json: String
        /// The event as stored (`EventLog.storedForm`: sealed at rest, or `json`), made
        /// once for its entry, its resends and its live message.
        let stored: String
        let finalState: StreamState?
        /// This append also refreshes the keys' TTL (`TTLRefreshPolicy`); a resend keeps it.
        let refreshTTL: Bool
    }

    /// The pending reply of one event's `XADD`: the appender (strong: it lives until its
    /// replies are in; a reply that comes back after `close()` is ignored there), the seq
    /// and the event. One object that is also the reply closure's whole context (several
    /// captures would cost two allocations per event).
    private final class XAddReplyHandler {
        let appender: StreamAppender
        let seq: UInt64
        let pending: Pending

        init(_ appender: StreamAppender, seq: UInt64, _ pending: Pending) {
            self.appender = appender
            self.seq = seq
            self.pending = pending
        }

        func replied(_ r: RedisReplyView) {
            appender.replied(seq: seq, pending, EventLog.appendOutcome(r))
        }
    }

    /// The stream is gone, was ended or taken over by someone else, or lost acknowledged
    /// events: nothing more can be appended (`AppendStop`, typed).
    // The callbacks and the state read per event or per reply are marked
    // `@exclusivity(unchecked)` like the rest of the per-event state (see below).
    @exclusivity(unchecked) public var onPermanentFailure: ((AppendStop) -> Void)?
    /// Every queued event is acknowledged (after the final one: the generation is over).
    @exclusivity(unchecked) public var onDrained: (() -> Void)?
    /// An event's `XADD` was acknowledged: seq and event JSON, called once per event in
    /// seq order, right after its `PUBLISH` was queued (the owning worker delivers to its
    /// own subscriptions without the pub/sub round trip, docs/ARCHITECTURE.md). Never
    /// called for an event Redis did not store.
    @exclusivity(unchecked) public var onAcknowledged: ((UInt64, String) -> Void)?

    private let log: EventLog
    private let loop: EventLoop
    private let id: RequestID
    private let keys: StreamKeys
    /// The stream's per-event command heads (`EventLog.commands(for:)`), written once.
    private let commands: StreamCommands
    // The per-event state is marked `@exclusivity(unchecked)`: confined to the loop
    // thread, and no mutating access to it spans a call out (each `queue`/`checkpoint`
    // call returns before its result is acted on), so the run-time exclusivity check
    // per access is dead weight on the per-event path.
    /// The ordering and acknowledgement decisions (`AppendQueue`).
    @exclusivity(unchecked) private var queue: AppendQueue<Pending>
    private var retryTimer: LoopTimer?
    /// Which appends refresh the keys' TTL.
    @exclusivity(unchecked) private var ttlRefresh: TTLRefreshPolicy
    /// The lossless-resume text not yet written (unused when lossless resume is off).
    @exclusivity(unchecked) private var checkpoint: TextCheckpoint
    /// `EventLog.connectionEpoch` when the stored tail was last known good.
    @exclusivity(unchecked) private var epoch: Int
    /// A tail read is under way.
    @exclusivity(unchecked) private var verifying = false
    /// `close()` was called: nothing more is sent, replies and timers are ignored.
    @exclusivity(unchecked) public private(set) var isClosed = false

    /// What the final `done` needs to write the answer's `RetainedAnswer` (`retain(…)`).
    private struct Retention {
        let owner: String
        let ownerHash: String
        let sid: String
        let createdMs: UInt64
        /// Unix ms.
        let wallClock: () -> UInt64
        var buffer: RetentionBuffer
        /// The record sent with the final event (a resend sends the same bytes).
        var record: [UInt8]?
    }
    @exclusivity(unchecked) private var retention: Retention?
    /// The final `done` was stored; called once. Not called for answers that end with
    /// `error` or when retention is off.
    @exclusivity(unchecked) public var onRetained: ((RetentionOutcome) -> Void)?

    /// The pieces and their lengths of the events this appender did not append itself (a
    /// generation continuing a stream another instance started), so its record holds the
    /// whole answer. Call after `retain(…)`, before the first event.
    public func seedRetention(text: [UInt8], pieces: [StoredPiece.Length]) {
        retention?.buffer.seed(text: text, pieces: pieces)
    }

    /// Keeps this answer for `EventLog.retentionMs` once it ends with `done` (docs/DATA_MODEL.md
    /// §14): its events' pieces are buffered (`RetentionBuffer`, capped at
    /// `EventLog.retentionMaxBytes`) and the final append writes the record. Call before the
    /// first event; does nothing when retention is off (`retentionMs` 0).
    /// - Parameters: `owner` the `sub`, `ownerHash` its `OwnerHash`, `sid` the session,
    ///   `createdMs` the start (unix ms), `wallClock` unix ms now.
    public func retain(owner: String, ownerHash: String, sid: String, createdMs: UInt64, wallClock: @escaping () -> UInt64) {
        guard log.retentionMs > 0 else { return }
        retention = Retention(owner: owner, ownerHash: ownerHash, sid: sid, createdMs: createdMs, wallClock: wallClock,
                              buffer: RetentionBuffer(maxBytes: log.retentionMaxBytes), record: nil)
    }

    /// The record to send with final event `seq` (made once): `nil` unless retained, the
    /// state is `done` or `cancelled` and the answer stayed under the cap. Indexes it for
    /// the owner first (`AnswerStore.index`).
    private func record(seq: UInt64, json: String, state: StreamState) -> [UInt8]? {
        guard var r = retention, state == .done || state == .cancelled, !r.buffer.isOverCap,
              r.buffer.pieces.count == Int(seq) - 1 else { return nil }
        if let made = r.record { return made }
        let now = r.wallClock()
        let answer = RetainedAnswer(owner: r.owner, sid: r.sid, finalSeq: seq, createdMs: r.createdMs, finishedMs: now,
                                    text: r.buffer.text, pieces: r.buffer.pieces, doneJSON: json)
        // Sealed at rest under its own key's name (docs/DATA_MODEL.md §15), in the stream's
        // mode: a plain stream's record says so in its header (`RetainedAnswer.plainAtRest`).
        let bytes = sealer.map { Array($0.seal(answer.encoded(), aad: keys.answer).utf8) }
            ?? { var a = answer; a.plainAtRest = true; return a.encoded() }()
        r.record = bytes
        retention = r
        log.answers.index(id, ownerHash: r.ownerHash, expiresAtMs: now + UInt64(log.retentionMs), nowMs: now) { _ in }
        return bytes
    }

    /// The ownership epoch this appender writes under (docs/DATA_MODEL.md §6.1): 0 for the
    /// stream's creator (plain pipelined `XADD`s); ≥ 1 after a takeover, when every
    /// append is `EventLog.appendFenced`, checked against the meta's epoch in Redis, and
    /// starts after `startSeq`.
    public let ownershipEpoch: UInt64

    /// How this stream's values are stored (docs/DATA_MODEL.md §15): the mode it was
    /// created in (a takeover's `EventLog.TakenStream.mode`), whatever this relay's keys.
    public let mode: AtRestMode
    /// Seals what this appender writes: the log's cipher in a sealed stream, `nil` in a
    /// plain one.
    private let sealer: AtRestCipher?

    /// The highest acknowledged seq.
    public var ackedSeq: UInt64 { queue.ackedSeq }
    /// The lossless-resume text is confirmed stored through this seq (0: none yet;
    /// `TextCheckpoint.confirmedSeq`).
    public var textStoredThrough: UInt64 { checkpoint.confirmedSeq }

    /// - Parameters:
    ///   - ownershipEpoch: 0 for a new stream; a takeover's epoch (`EventLog.TakenStream`).
    ///   - taken: a takeover (`EventLog.takeover`): appends go on after its `topSeq`, under
    ///     its epoch; with lossless resume, the retained events' text is written again with
    ///     the first text write (positional: the same bytes where the lost owner stored them).
    public init(log: EventLog, loop: EventLoop, id: RequestID, taken: EventLog.TakenStream? = nil) {
        let ownershipEpoch = taken?.epoch ?? 0
        let startSeq = taken?.topSeq ?? 0
        self.ownershipEpoch = ownershipEpoch
        self.mode = taken?.mode ?? log.newStreamMode
        self.sealer = log.sealer(mode)
        self.log = log
        self.loop = loop
        self.id = id
        self.keys = StreamKeys(id)
        self.commands = log.commands(for: keys)
        self.ttlRefresh = TTLRefreshPolicy(ttlMs: log.ttlMs)
        // A group stays well inside the retained window (`MAXLEN`), so its entries can
        // be verified after a failure.
        self.queue = AppendQueue(maxGroup: max(1, min(64, log.maxLen / 2)), ackedSeq: startSeq)
        let kidBytes = sealer.map { $0.ring.currentKid.utf8.count }
        if let taken {
            // The text its records (sealed) or the oldest retained entry (plain) leave off
            // at is stored; the retained events' pieces after it are written again.
            let firstRetained = taken.topSeq - UInt64(taken.retained.count) + 1
            var cp = TextCheckpoint(trim: log.trim, sealedKidBytes: kidBytes, confirmedSeq: firstRetained - 1,
                                    confirmedEnd: taken.prefix.utf8.count, confirmedStoredEnd: taken.textStoredEnd)
            for (i, p) in taken.retained.enumerated() { cp.add(seq: firstRetained + UInt64(i), piece: p) }
            self.checkpoint = cp
        } else {
            self.checkpoint = TextCheckpoint(trim: log.trim, sealedKidBytes: kidBytes)
        }
        self.epoch = log.connectionEpoch
    }

    /// Ends the appender's work (its owner is done with it: the generation ended, any
    /// way): drops the callbacks (which usually capture the owner: this breaks that
    /// cycle), stops the verification timer, and from now on sends nothing and ignores
    /// every reply still to come. The appender is freed once the commands in flight are
    /// answered or failed. Idempotent.
    public func close() {
        isClosed = true
        onPermanentFailure = nil
        onDrained = nil
        onAcknowledged = nil
        onRetained = nil
        onLeaseUnknown = nil
        retryTimer?.cancel()
        retryTimer = nil
    }

    /// Events queued and not yet acknowledged.
    public var backlog: Int { queue.backlog }

    // MARK: The owner's lease (docs/PROTOCOL.md §4.5)

    /// Whether the owner lease is known held (`LeaseHold`). A stalled owner that wakes
    /// after another instance took its answer over thus writes nothing, not even the text
    /// writes that no append check would refuse.
    @exclusivity(unchecked) private var lease = LeaseHold()
    /// Nothing is sent — no event, no text — until the owner confirms its lease again
    /// (`leaseConfirmed`): the loop clock passed the lease it knew.
    public var heldForLease: Bool { lease.isHeld }
    /// Asked once per hold: the owner must confirm its lease (or learn it lost the answer).
    @exclusivity(unchecked) public var onLeaseUnknown: (() -> Void)?

    /// The owner's lease is known held until `untilMs` (loop ms; a refresh Redis confirmed).
    /// Does not end a hold: that is `leaseConfirmed`'s, once the owner checked all it must.
    public func leaseKnown(untilMs: UInt64) {
        lease.known(untilMs: untilMs)
    }

    /// Ends a hold: the owner confirmed its lease (and its session slot) after a stall;
    /// what was queued meanwhile is sent.
    public func leaseConfirmed(untilMs: UInt64) {
        guard lease.confirmed(untilMs: untilMs), !isClosed else { return }
        send(queue.nextGroup(sendableThrough: sendableThrough))
        writeTextIfDue()
    }

    /// Whether the appender is held for the lease, starting the hold (and asking the owner,
    /// `onLeaseUnknown`) when the loop clock just passed the lease it knew: the owner calls
    /// it before numbering an event, and before refreshing as if nothing happened.
    public func holdIfLeaseLapsed() -> Bool {
        let held = !leaseAllowsSending()
        leaseJustChecked = !held
        return held
    }

    /// `holdIfLeaseLapsed` just found the lease known: the `append` it precedes (same call
    /// chain, same instant) does not read the clock again. Per event, one clock read.
    @exclusivity(unchecked) private var leaseJustChecked = false

    /// Whether anything may be sent now; starts a hold when the lease is no longer known.
    @inline(__always)
    private func leaseAllowsSending() -> Bool {
        switch lease.check(nowMs: loop.nowMs) {
        case .allowed: return true
        case .held: return false
        case .holdStarted:
            onLeaseUnknown?()
            return false
        }
    }

    /// Queues an event and sends it at once unless a group is in flight, a recovery
    /// is under way, or its text must be stored first.
    public func append(seq: UInt64, event: StreamEvent) {
        guard !isClosed else { return }
        let json = event.json
        let finalState = StreamState(endingWith: event)
        let piece = StoredPiece(event, json: json)
        if log.lossless { checkpoint.add(seq: seq, piece: piece) }
        if finalState == nil, retention != nil { retention!.buffer.add(piece) }
        let refresh = ttlRefresh.due(nowMs: loop.nowMs, final: finalState != nil)
        let p = Pending(json: json, stored: log.storedForm(json, keys, mode: mode), finalState: finalState, refreshTTL: refresh)
        if epoch != log.connectionEpoch {
            epoch = log.connectionEpoch
            if queue.mustVerify() { scheduleVerify() }
        }
        let allowed: Bool
        if leaseJustChecked {
            leaseJustChecked = false
            allowed = !lease.isHeld
        } else {
            allowed = leaseAllowsSending()
        }
        send(queue.enqueue(seq: seq, p, sendableThrough: allowed ? textSendableThrough : 0))
        if allowed { writeTextIfDue(leaseChecked: true) }
    }

    /// The highest seq that may be sent (`TextCheckpoint.sendableThrough`); none while held
    /// for the lease.
    private var sendableThrough: UInt64 { leaseAllowsSending() ? textSendableThrough : 0 }

    /// The highest seq the text allows to be sent (`TextCheckpoint.sendableThrough`).
    private var textSendableThrough: UInt64 { log.lossless ? checkpoint.sendableThrough : .max }

    private func send(_ items: ArraySlice<(seq: UInt64, item: Pending)>) {
        for (seq, p) in items {
            if let state = p.finalState {
                log.appendFinal(keys, seq: seq, json: p.json, finalState: state,
                                text: log.lossless ? checkpoint.takeFinal(through: seq) : nil,
                                record: record(seq: seq, json: p.json, state: state), stored: p.stored,
                                epoch: ownershipEpoch, mode: mode) { r in
                    self.replied(seq: seq, p, r)
                }
            } else if ownershipEpoch > 0 {
                log.appendFenced(keys, seq: seq, json: p.json, epoch: ownershipEpoch, refreshTTL: p.refreshTTL,
                                 stored: p.stored) { r in
                    self.replied(seq: seq, p, r)
                }
            } else {
                let reply = XAddReplyHandler(self, seq: seq, p)
                log.append(commands, seq: seq, json: p.json, refreshTTL: p.refreshTTL, stored: p.stored) { r in reply.replied(r) }
            }
        }
    }

    /// Writes the buffered text when `TextCheckpoint` says it is due, or at once when
    /// queued events are held back waiting for it. Not while recovering: after a failure
    /// or a reconnection the store is unverified (a failover may have lost confirmed
    /// text), and a text write confirmed before the tail read would move the checked
    /// offset (`TextCheckpoint.confirmedSeq`) onto bytes written after the loss (its
    /// `SETRANGE` past the shortened `text` key zero-pads the gap), hiding it. The write
    /// goes out once `verified` says `.send` or `.drained`.
    /// `leaseChecked`: the caller has just found the lease known (no second clock read).
    private func writeTextIfDue(leaseChecked: Bool = false) {
        guard log.lossless, !queue.failed, !queue.recovering else { return }
        let held = queue.unsent > 0 && queue.inFlight == 0
        guard checkpoint.isDue || held, leaseChecked || leaseAllowsSending(), let w = checkpoint.take() else { return }
        let through = w.throughSeq
        log.writeText(keys, w, mode: mode) { r in self.textWritten(through: through, r) }
    }

    /// A text write was answered: a success releases held events; a failure keeps the
    /// text buffered and goes through the tail verification (with its back-off) before
    /// anything more is sent, the text write included.
    private func textWritten(through seq: UInt64, _ r: Result<Void, RedisFailure>) {
        guard !isClosed else { return }
        switch r {
        case .success:
            checkpoint.written(through: seq, ok: true)
            send(queue.nextGroup(sendableThrough: sendableThrough))
            writeTextIfDue()
        case .failure:
            checkpoint.written(through: seq, ok: false)
            if queue.mustVerify() { scheduleVerify() }
        }
    }

    private func replied(seq: UInt64, _ p: Pending, _ r: Result<Void, RedisFailure>) {
        guard !isClosed else { return }
        let reply: AppendReply
        switch r {
        case .success: reply = .stored
        case .failure(let f): reply = f.appendReply
        }
        // The final event's script stored the buffered text with it.
        if reply == .stored, p.finalState != nil, log.lossless { checkpoint.written(through: seq, ok: true) }
        if reply == .stored, let state = p.finalState, state == .done || state == .cancelled, let r = retention {
            retention = nil   // reported once
            onRetained?(r.record.map { .retained(bytes: $0.count) } ?? (r.buffer.isOverCap ? .oversize : .incomplete))
        }
        let next = queue.replied(seq: seq, reply)
        if reply == .stored, queue.ackedSeq >= seq {
            // Published once stored, in seq order. When this drains the queue, report
            // it once Redis answered the publish (`EventLog.publish(then:)`).
            if next == .drained { return acknowledged(seq: seq, p, drains: true) }
            acknowledged(seq: seq, p, drains: false)
        }
        handle(next)
    }

    /// An event is acknowledged (stored, every earlier one too): publishes it on the live
    /// channel and hands it to `onAcknowledged`. `drains`: it was the last queued event;
    /// the drain is reported once Redis answered its publish.
    private func acknowledged(seq: UInt64, _ p: Pending, drains: Bool) {
        if drains {
            // `self` is the closure's whole context: no allocation per drain (most events
            // of a steady stream drain the queue).
            log.publish(commands, seq: seq, json: p.json, stored: p.stored, then: { r in self.drainPublishReplied(r) })
        } else {
            log.publish(commands, seq: seq, json: p.json, stored: p.stored)
        }
        onAcknowledged?(seq, p.json)
    }

    /// The publish of the event that drained the queue was answered: report the drain,
    /// unless more events were queued meanwhile (the owner ends its generation on a
    /// drain after its final event, and must not while one is still unsent).
    private func drainPublishReplied(_ r: RedisReplyView) {
        log.auxiliaryReplied(r)
        if !isClosed && queue.isDrained { onDrained?() }
    }

    private func handle(_ next: AppendQueue<Pending>.Next) {
        switch next {
        case .wait: break
        case .drained: onDrained?()
        case .send:
            send(queue.nextGroup(sendableThrough: sendableThrough))
            writeTextIfDue()
        case .verify: scheduleVerify()
        case .failed: failed()
        }
    }

    private func scheduleVerify() {
        guard !isClosed else { return }
        if retryTimer == nil {
            // `unowned`: the timer is the appender's own (freed with it, and its libevent
            // event with the timer), so it cannot fire once the appender is gone; an
            // `unowned` reference adds no side table.
            retryTimer = LoopTimer(loop: loop) { [unowned self] in self.verify() }
        }
        retryTimer?.schedule(afterMs: log.connection.isConnected ? queue.verifyDelayMs : 200)
    }

    /// Reads the stored tail after the acknowledged seq and lets the queue decide.
    private func verify() {
        guard !isClosed, !verifying, queue.recovering, queue.inFlight == 0, !queue.failed else { return }
        guard log.connection.isConnected else { return scheduleVerify() }
        verifying = true
        epoch = log.connectionEpoch
        // The text confirmed stored must still be there too (a failover or restart may
        // have lost a text write whose reply came back, keeping the `XADD`s before it).
        let text = log.lossless && checkpoint.confirmedSeq > 0
            ? (seq: checkpoint.confirmedSeq, end: checkpoint.confirmedEnd) : nil
        log.appendStatus(keys, after: queue.ackedSeq, count: queue.maxGroup + 2, textThrough: text?.seq ?? 0,
                         epoch: ownershipEpoch,
                         textStoredEnd: text != nil && sealer != nil ? checkpoint.confirmedStoredEnd : nil, mode: mode) { r in
            self.verifying = false
            guard !self.isClosed else { return }
            guard case .success(let tail) = r else {
                self.queue.verifyFailed()
                return self.scheduleVerify()
            }
            let (acked, next) = self.queue.verified(tail, text: text) { $0.json == $1 }
            // Text held back during the recovery (`writeTextIfDue`); `.send` writes it itself.
            if next == .drained { self.writeTextIfDue() }
            // Stored but maybe never published (their replies were lost): publish now, in order.
            for (i, a) in acked.enumerated() {
                let drains = next == .drained && i == acked.count - 1
                self.acknowledged(seq: a.seq, a.item, drains: drains)
                if drains { return }
            }
            self.handle(next)
        }
    }

    private func failed() {
        guard let f = queue.failure else { return }
        if f == .streamGone { log.discardText(keys) }
        onPermanentFailure?(f)
    }
}
