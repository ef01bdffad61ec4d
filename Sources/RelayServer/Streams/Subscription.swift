import RelayCore
import RelayHTTP
import RelayLoop
import RelayRedis

/// One client connection reading a stream (docs/ARCHITECTURE.md, "Subscription"; docs/PROTOCOL.md §6): attached to the
/// stream's live events first — the live channel, or on the worker running the
/// generation the generation itself (`LiveSource`) — then a replay of
/// `(lastSent, +]` from the Redis stream, then live events, dropping every seq already
/// written. A fresh stream and a resumed one take this same path.
///
/// Every event is written once, in seq order. The merge decisions — duplicates
/// dropped, a live event that skips a seq triggers a replay, live events wait during
/// a replay, catch-up vs `409 resume_gap` when the retained window moved past the
/// client — are `ReplayMerge`'s (Decisions/); this class performs them (reads,
/// writes, ends). Loop thread only.
final class Subscription {
    let id: RequestID
    let owner: String
    let sid: String
    /// Where the client's response is written (the connection; a recorder in tests).
    let sink: any StreamSink
    unowned let host: SubscriptionHost
    // The per-event state is marked `@exclusivity(unchecked)`: confined to the loop
    // thread, and no mutation of it spans a call out, so the run-time exclusivity check
    // (`swift_beginAccess`, about 75 instructions per access) guards nothing (docs/BENCHMARKS.md).
    /// The replay/live merge decisions.
    @exclusivity(unchecked) private var merge: ReplayMerge
    /// The seq of the last event written to the client.
    var lastSent: UInt64 { merge.lastSent }
    /// When the client last got bytes (event or heartbeat), loop ms.
    @exclusivity(unchecked) var lastWriteMs: UInt64
    /// When the last event arrived or was written, loop ms (lease checks).
    @exclusivity(unchecked) var lastEventMs: UInt64
    /// Token `exp` of the connection (unix seconds), for expiry mid-stream.
    let tokenExpiry: Int64?
    private var stallTimer: LoopTimer?
    @exclusivity(unchecked) private(set) var ended = false
    /// Events written to this client (metrics, summary log).
    @exclusivity(unchecked) private(set) var eventsWritten = 0
    /// The seq the client resumed after (0 for a fresh stream).
    let resumedFrom: UInt64
    /// How the response ended: `done`, `error:<code>`, `client_closed`, `aborted`.
    private(set) var outcome = "open"
    /// Backpressure state (`ConnectionSweeper.isSlowConsumer`); created on first use.
    @exclusivity(unchecked) var backpressure: SlowConsumerPolicy?
    /// Merges live deltas while this client's link is backed up (docs/PROTOCOL.md §4).
    @exclusivity(unchecked) private var coalescer: SlowLinkCoalescer
    private var coalesceTimer: LoopTimer?
    /// The client's backlog as last read, and when (loop ms): the kernel's share costs
    /// a syscall, so a client that is not coalescing is asked at most every
    /// `backlogCheckMs`, not on every event.
    @exclusivity(unchecked) private var backlog = 0
    @exclusivity(unchecked) private var backlogCheckedMs: UInt64 = 0
    private static let backlogCheckMs: UInt64 = 100

    /// The UI Message Stream's state when the response is in that dialect (docs/PROTOCOL.md
    /// §4.6); `nil`: the relay's own events, framed once per worker and shared.
    private var uiStream: UIMessageStream?

    init(id: RequestID, owner: String, sid: String, sink: any StreamSink, host: SubscriptionHost, lastSent: UInt64, tokenExpiry: Int64?,
         dialect: StreamDialect = .relay) {
        if dialect == .uiMessageStream {
            var ui = UIMessageStream(after: lastSent)
            sink.write(ui.start(messageId: id.clientValue))
            uiStream = ui
        }
        self.id = id
        self.owner = owner
        self.sid = sid
        self.sink = sink
        self.host = host
        self.merge = ReplayMerge(lastSent: lastSent)
        self.coalescer = SlowLinkCoalescer(limits: host.slowLinkLimits)
        self.resumedFrom = lastSent
        self.tokenExpiry = tokenExpiry
        self.lastWriteMs = host.nowMs
        self.lastEventMs = host.nowMs
        self.startedMs = host.nowMs
    }

    /// When the response started, loop ms.
    let startedMs: UInt64

    /// Attaches to the stream's live events (`LiveSource`): on the worker running its
    /// generation, from that generation (replaying first only what the client lacks of
    /// the acknowledged events); elsewhere, the live channel, and the replay starts once
    /// Redis confirms the subscription.
    func start() {
        sink.onClose = { [weak self] in self?.clientClosed() }
        switch liveSource.attach(lastSent: lastSent, localAckedSeq: host.localAckedSeq(id)) {
        case .local(let replay): if replay { startReplay() }
        case .subscribe: subscribeChannel()
        }
    }

    /// Where live events come from (`StreamHub` releases the channel reference by it).
    var liveSource = LiveSource()

    /// The generation on this worker stopped delivering (it ended, was fenced or
    /// failed): read the live channel and replay from the Redis stream from now on.
    func localDeliveryStopped() {
        guard !ended, liveSource.localStopped() else { return }
        subscribeChannel()
    }

    private func subscribeChannel() {
        host.subscribeLive(id) { [weak self] in self?.startReplay() }
    }

    /// The first replay (after attaching): at once, or held back by the test fault
    /// injection `RELAY_DEBUG_REPLAY_DELAY` (live events keep arriving and are held).
    private func startReplay() {
        guard !ended else { return }
        let stall = host.replayStallMs
        guard stall > 0 else { return replay() }
        merge.holdLive()
        stallTimer = LoopTimer(loop: host.loop) { [weak self] in
            self?.merge.releaseHold()
            self?.replay()
        }
        stallTimer?.schedule(afterMs: stall)
    }

    /// A live event (from the live channel, or acknowledged by the generation on this
    /// worker); `frame` is its wire framing (`EventFramer.sse`), built once per worker
    /// for every subscriber of the stream.
    func live(_ e: SequencedEvent, frame: WireFrame? = nil) {
        guard !ended else { return }
        // `host` read once per event: each read of an `unowned` reference is a checked
        // retain (`swift_unownedRetainStrong`) and a release.
        let host = self.host
        let now = host.nowMs
        lastEventMs = now
        switch merge.live(e) {
        case .drop, .hold: return
        case .write: writeOne(e, frame: frame, nowMs: now, host: host)
        case .replay: replay()
        }
    }

    /// Re-reads everything after `lastSent` (after a pub/sub reconnect or a seq gap):
    /// the same events, ids and delta boundaries as they were first sent, whether they
    /// come from the retained entries or back from the text key (`EventLog.read`).
    func replay() {
        guard !ended, merge.requestReplay() else { return }
        host.readEvents(id, after: lastSent, wanted: { [weak self] in self.map { !$0.ended } ?? false }) { [weak self] r in
            guard let self, !self.ended else { return }
            switch r {
            case .failure(let f):
                self.merge.readFailed()
                self.host.redisTrouble(self, f)
            case .success(.gap(let seq)):
                self.fail(.resumeGap("the stream moved past event \(self.lastSent); events up to \(seq) are gone"))
            case .success(.events(let events, let caughtUp)):
                if caughtUp > 0 { self.host.caughtUp(events: caughtUp) }
                self.finishReplay(events)
            }
        }
    }

    private func finishReplay(_ events: [SequencedEvent]) {
        let merged = merge.finishReplay(events)
        write(merged.events)
        if !ended && merged.replayAgain { replay() }
    }

    /// Writes events in seq order; ends the response after a terminal event.
    private func write(_ events: [SequencedEvent]) {
        guard !events.isEmpty, !ended else { return }
        // Backpressure is judged on what is still unsent from earlier writes, so one
        // large write (a long catch-up) never cuts a client that keeps up.
        guard !host.isSlowConsumer(self) else { return }
        writeHeld()
        let (now, terminal) = merge.take(events)
        guard !now.isEmpty else { return }
        // A replayed batch leaves as one chunk: one write, one frame to allocate.
        writeFrame(of: now)
        eventsWritten += now.count
        if terminal, let last = now.last { outcome = last.kind == .done ? "done" : "error" }
        lastWriteMs = host.nowMs
        host.delivered(events: now.count)
        if terminal {
            host.finalEventWritten(self)
            end()
        }
    }

    /// The common live case (the next seq, no replay under way): one event, written
    /// without building an array and a concatenated chunk first — or, while the
    /// client's link is backed up, held and merged (`SlowLinkCoalescer`).
    private func writeOne(_ e: SequencedEvent, frame: WireFrame?, nowMs now: UInt64, host: SubscriptionHost) {
        guard !ended, !host.isSlowConsumer(self) else { return }
        merge.wrote(e)
        if !coalescer.isCoalescing, now &- backlogCheckedMs >= Subscription.backlogCheckMs {
            backlog = sink.unsentBytes
            backlogCheckedMs = now
        }
        if coalescer.passesThrough(unsentBytes: backlog) {
            // A client that keeps up: the event as is, no coalescer output built.
            return writeEvent(e, wire: frame ?? EventFramer.sse(e), nowMs: now, host: host)
        }
        let out = coalescer.offer(e, unsentBytes: backlog, nowMs: now)
        writeReleased(out, frame: frame.map { (e.seq, $0) })
        if coalescer.isCoalescing && !ended { scheduleCoalesceTick() }
    }

    // MARK: Slow-link coalescing (docs/PROTOCOL.md §4)

    /// Writes what the coalescer released: one SSE event each, in seq order. `frame`:
    /// the already framed bytes of the live event with that seq, when it is released as is.
    private func writeReleased(_ out: SlowLinkCoalescer.Output, frame: (seq: UInt64, wire: WireFrame)? = nil) {
        let host = self.host
        if out.merged > 0 { host.merged(events: out.merged) }
        let now = host.nowMs
        for e in out.events {
            guard !ended else { return }
            let f = frame.flatMap { $0.seq == e.seq && out.merged == 0 ? $0.wire : nil }
            writeEvent(e, wire: f ?? EventFramer.sse(e), nowMs: now, host: host)
        }
    }

    /// Writes one SSE event (`wire`: its framing) and ends the response after a terminal one.
    /// `host`: `self.host`, read once by the caller.
    private func writeEvent(_ e: SequencedEvent, wire: WireFrame, nowMs: UInt64, host: SubscriptionHost) {
        if uiStream != nil { writeFrame(of: CollectionOfOne(e)) } else { sink.write(wire) }
        eventsWritten += 1
        lastWriteMs = nowMs
        host.delivered(events: 1)
        if e.isTerminal {
            outcome = e.kind == .done ? "done" : "error"
            host.finalEventWritten(self)
            end()
        }
    }

    /// Writes the held deltas (merged) before anything else is written.
    private func writeHeld() {
        if coalescer.heldCount > 0 { writeReleased(coalescer.flush()) }
    }

    private func scheduleCoalesceTick() {
        if coalesceTimer == nil {
            coalesceTimer = LoopTimer(loop: host.loop) { [weak self] in self?.coalesceTick() }
        }
        if coalesceTimer?.isScheduled == false { coalesceTimer?.schedule(afterMs: coalescer.tickMs) }
    }

    private func coalesceTick() {
        guard !ended else { return }
        writeReleased(coalescer.tick(unsentBytes: sink.unsentBytes, nowMs: host.nowMs))
        if coalescer.isCoalescing && !ended { scheduleCoalesceTick() }
    }

    /// Writes events in this response's dialect: the relay's frames, or UI Message Stream
    /// chunks (`UIMessageStream`).
    private func writeFrame<C: Collection>(of events: C) where C.Element == SequencedEvent {
        if uiStream != nil {
            if let f = uiStream!.frame(events) { sink.write(f) }
        } else {
            sink.write(EventFramer.sse(events))
        }
    }

    /// Writes a heartbeat comment (`: ping`, docs/PROTOCOL.md §4); the connection sweep
    /// decides when one is due (`ConnectionSweep`).
    func heartbeat(nowMs: UInt64) {
        guard !ended else { return }
        sink.write(SSEFrame.ping)
        lastWriteMs = nowMs
    }

    /// Ends the stream with an `error` event that the relay itself raises (revoked
    /// session, expired token, gap, Redis outage). It is not stored in the stream, so
    /// its id repeats the last seq written: a client that resumes after it with that
    /// `Last-Event-ID` loses nothing.
    func fail(_ e: APIError) {
        guard !ended else { return }
        writeHeld()
        guard !ended else { return }
        if uiStream != nil {
            if let f = uiStream!.error(e) { sink.write(f) }
        } else {
            sink.write(EventFramer.sseError(e, lastSeq: lastSent))
        }
        outcome = "error:\(e.code)"
        end()
    }

    /// Ends the response normally.
    func end() {
        guard !ended else { return }
        ended = true
        sink.endStream()
        host.subscriptionEnded(self)
    }

    /// Closes the connection without an event (drain, slow consumer): the client
    /// reconnects and resumes from Redis.
    func abort() {
        guard !ended else { return }
        ended = true
        outcome = "aborted"
        sink.abort()
        host.subscriptionEnded(self)
    }

    private func clientClosed() {
        guard !ended else { return }
        ended = true
        outcome = "client_closed"
        host.subscriptionEnded(self)
    }
}
