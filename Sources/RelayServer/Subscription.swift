import RelayCore
import RelayLoop
import RelayRedis

/// One client connection reading a stream (DESIGN §1 "Subscription"): subscribed to
/// the stream's live channel first, then a replay of `(lastSent, +]` from the Redis
/// stream, then live events, dropping every seq already written. A fresh stream and a
/// resumed one take this same path.
///
/// Every event is written once, in seq order: live events that arrive during a replay
/// wait in `pending`; a live event that skips a seq (a message missed while Redis
/// pub/sub reconnected) triggers another replay from the last seq written. When the
/// retained window has moved past the client, the missing text is sent as one
/// catch-up `delta` (lossless resume) or the stream ends with `409 resume_gap`.
/// Loop thread only.
final class Subscription {
    let id: RequestID
    let owner: String
    let sid: String
    let exchange: HTTPExchange
    unowned let worker: Worker
    /// The seq of the last event written to the client.
    private(set) var lastSent: UInt64
    /// When the client last got bytes (event or heartbeat), loop ms.
    var lastWriteMs: UInt64
    /// When the last event arrived or was written, loop ms (lease checks).
    var lastEventMs: UInt64
    /// Token `exp` of the connection (unix seconds), for expiry mid-stream.
    let tokenExpiry: Int64?
    private var replaying = false
    private var stallTimer: LoopTimer?
    private var replayAgain = false
    private var pending: [SequencedEvent] = []
    private(set) var ended = false
    /// Events written to this client (metrics, summary log).
    private(set) var eventsWritten = 0
    /// The seq the client resumed after (0 for a fresh stream).
    let resumedFrom: UInt64
    /// How the response ended: `done`, `error:<code>`, `client_closed`, `aborted`.
    private(set) var outcome = "open"

    init(id: RequestID, owner: String, sid: String, exchange: HTTPExchange, worker: Worker, lastSent: UInt64, tokenExpiry: Int64?) {
        self.id = id
        self.owner = owner
        self.sid = sid
        self.exchange = exchange
        self.worker = worker
        self.lastSent = lastSent
        self.resumedFrom = lastSent
        self.tokenExpiry = tokenExpiry
        self.lastWriteMs = worker.loop.nowMs
        self.lastEventMs = worker.loop.nowMs
        self.startedMs = worker.loop.nowMs
    }

    /// When the response started, loop ms.
    let startedMs: UInt64

    /// Subscribes to the live channel; the replay starts once Redis confirms it.
    func start() {
        exchange.onClose = { [weak self] in self?.clientClosed() }
        let stall = UInt64(worker.config.debugReplayDelayMs)
        worker.pubsub.subscribe(StreamKeys(id).live) { [weak self] in
            guard let self else { return }
            guard stall > 0 else { return self.replay() }
            // Test fault injection: live events keep arriving (and wait in `pending`)
            // while the replay is held back.
            self.replaying = true
            self.stallTimer = LoopTimer(loop: self.worker.loop) { [weak self] in
                self?.replaying = false
                self?.replay()
            }
            self.stallTimer?.schedule(afterMs: stall)
        }
    }

    /// A live event from the pub/sub channel.
    func live(_ e: SequencedEvent) {
        guard !ended else { return }
        lastEventMs = worker.loop.nowMs
        if replaying {
            pending.append(e)
            return
        }
        if e.seq <= lastSent { return }
        if e.seq == lastSent + 1 {
            writeOne(e)
            return
        }
        pending.append(e)
        replay()
    }

    /// Re-reads everything after `lastSent` (after a pub/sub reconnect or a seq gap).
    func replay() {
        guard !ended else { return }
        if replaying {
            replayAgain = true
            return
        }
        replaying = true
        worker.log.range(id, after: lastSent) { [weak self] r in
            guard let self, !self.ended else { return }
            switch r {
            case .failure(let f):
                self.replaying = false
                self.worker.redisTrouble(self, f)
            case .success(let events):
                if let first = events.first, first.seq > self.lastSent + 1 {
                    self.catchUp(to: first.seq - 1, then: events)
                } else {
                    self.finishReplay(events)
                }
            }
        }
    }

    private func catchUp(to seq: UInt64, then events: [SequencedEvent]) {
        guard worker.log.lossless else {
            return fail(.resumeGap("the stream moved past event \(lastSent); events up to \(seq) are gone"))
        }
        worker.log.catchUp(id, from: lastSent, to: seq) { [weak self] r in
            guard let self, !self.ended else { return }
            switch r {
            case .success(let text?):
                // One ordinary, larger delta standing for events lastSent+1 … seq.
                self.exchange.write(SSEFrame.event(seq: seq, json: StreamEvent.delta(text).json))
                self.lastSent = seq
                self.eventsWritten += 1
                self.finishReplay(events)
            case .success(nil):
                self.fail(.resumeGap("events up to \(seq) and their text have expired"))
            case .failure(let f):
                self.replaying = false
                self.worker.redisTrouble(self, f)
            }
        }
    }

    private func finishReplay(_ events: [SequencedEvent]) {
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
        write(batch)
        if !ended && (gap || replayAgain) {
            replayAgain = false
            replay()
        }
    }

    /// Writes events as one chunk; ends the response after a terminal event.
    private func write(_ events: [SequencedEvent]) {
        guard !events.isEmpty, !ended else { return }
        // Backpressure is judged on what is still unsent from earlier writes, so one
        // large write (a long catch-up) never cuts a client that keeps up.
        guard !worker.isSlowConsumer(self) else { return }
        var chunk = ""
        var terminal = false
        var eventsWrittenNow = 0
        for e in events where e.seq == lastSent + 1 {
            chunk += SSEFrame.event(seq: e.seq, json: e.json)
            lastSent = e.seq
            eventsWritten += 1
            eventsWrittenNow += 1
            if e.isTerminal {
                terminal = true
                outcome = e.json.hasPrefix("{\"type\":\"done\"") ? "done" : "error"
                break
            }
        }
        guard !chunk.isEmpty else { return }
        exchange.write(chunk)
        lastWriteMs = worker.loop.nowMs
        worker.eventsDeliveredSinceFlush += eventsWrittenNow
        if terminal { end() }
    }

    /// The common live case (the next seq, no replay under way): one event, written
    /// without building an array and a concatenated chunk first.
    private func writeOne(_ e: SequencedEvent) {
        guard !ended, !worker.isSlowConsumer(self) else { return }
        exchange.write(SSEFrame.event(seq: e.seq, json: e.json))
        lastSent = e.seq
        eventsWritten += 1
        lastWriteMs = worker.loop.nowMs
        worker.eventsDeliveredSinceFlush += 1
        if e.isTerminal {
            outcome = e.json.hasPrefix("{\"type\":\"done\"") ? "done" : "error"
            end()
        }
    }

    /// Writes a heartbeat comment if the connection has been quiet for `intervalMs`.
    func heartbeat(nowMs: UInt64, intervalMs: UInt64) {
        guard !ended, nowMs >= lastWriteMs + intervalMs else { return }
        exchange.write(SSEFrame.ping)
        lastWriteMs = nowMs
    }

    /// Ends the stream with an `error` event that the relay itself raises (revoked
    /// session, expired token, gap, Redis outage). It is not stored in the stream, so
    /// its id repeats the last seq written: a client that resumes after it with that
    /// `Last-Event-ID` loses nothing.
    func fail(_ e: APIError) {
        guard !ended else { return }
        exchange.write(SSEFrame.event(seq: lastSent, json: e.asEvent.json))
        outcome = "error:\(e.code)"
        end()
    }

    /// Ends the response normally.
    func end() {
        guard !ended else { return }
        ended = true
        exchange.endStream()
        worker.subscriptionEnded(self)
    }

    /// Closes the connection without an event (drain, slow consumer): the client
    /// reconnects and resumes from Redis.
    func abort() {
        guard !ended else { return }
        ended = true
        outcome = "aborted"
        exchange.abort()
        worker.subscriptionEnded(self)
    }

    private func clientClosed() {
        guard !ended else { return }
        ended = true
        outcome = "client_closed"
        worker.subscriptionEnded(self)
    }
}
