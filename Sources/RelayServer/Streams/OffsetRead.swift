import Foundation
import RelayAuth
import RelayCore
import RelayHTTP
import RelayLoop
import RelayEventStore
import RelayRedis

/// One offset read of an answer (docs/PROTOCOL.md §12): `GET /api/chat/stream/{id}?offset=…`
/// with no `live` (catch-up), `live=long-poll` or `live=sse`, in the Durable Streams read
/// protocol's shapes. For networks whose proxies hold `text/event-stream` back until the
/// response ends: each catch-up or long-poll answer is a complete response.
///
/// What to answer is `OffsetReadDecision`'s (the resume decision of the SSE path, mapped
/// onto offsets); the events come from the same reader as a resume (`EventLog.read`,
/// through the worker's replay slots), with the same ids and delta boundaries. A long-poll or
/// SSE read that must wait attaches a `Subscription` to the stream's live events exactly
/// as an SSE client does — the live channel, or the generation on this worker
/// (`LiveSource`) — whose writes go to an `OffsetReadWake` instead of a connection: an
/// event written there (by any instance's generation, through the live channel) wakes
/// the read, which then reads what follows its offset from Redis. The subscription
/// counts against `RELAY_MAX_CONNECTIONS`, is cut by a revocation and ended by a drain
/// like any stream; the wait's deadline is a timer on the worker's loop.
/// Loop thread only.
final class OffsetRead {
    /// The most event JSON one catch-up or long-poll body (or one SSE `data` event)
    /// carries, bytes; a read that stops there omits `Stream-Up-To-Date` and the client
    /// reads on from its `Stream-Next-Offset` (DS §5.6). One event always goes, however large.
    static let maxBodyBytes = 1 << 20

    /// The `Content-Type` of catch-up and long-poll bodies (RFC 8259 §11 defines no charset
    /// parameter: JSON is UTF-8).
    static let jsonType = "application/json"
    /// The `Content-Type` of a DS SSE read (Durable Streams PROTOCOL.md §5.8).
    static let eventStreamType = "text/event-stream"

    private let ex: HTTPExchange
    private let id: RequestID
    private let who: Identity
    /// The caller's owner hash (`OwnerHash`; from the token's `sub`, or named by a read ticket).
    private let ownerHash: String
    private let mode: ReadMode
    private let clientCursor: String?
    /// The request named the tail (`offset=now`): its catch-up answer has no `ETag`
    /// (Durable Streams PROTOCOL.md §8: the tail moves).
    private let fromNow: Bool
    /// A fresh read ticket for a bearer-authenticated read (docs/PROTOCOL.md §2.5: any bearer
    /// request on the stream gets one), sent as `X-Read-Ticket`; nil for a ticket's read.
    private var ticket: String?
    private let hub: StreamHub
    private let gate: RequestGuard
    /// The seq the client has (long-poll: the request's position; SSE: the last sent).
    private var position: UInt64 = 0
    /// The live subscription while waiting, and its wake sink.
    private var subscription: Subscription?
    private var wakeSink: OffsetReadWake?
    private var deadline: LoopTimer?
    /// Runs the wake on the next loop turn (never inside the subscription's write).
    private var wakeTimer: LoopTimer?
    private var woken = false
    private var subscriptionEnded = false
    private var reading = false
    private var readAgain = false
    private var finished = false
    /// Keeps the read alive while it waits (released by `finish`).
    private var keepAlive: OffsetRead?

    private init(ex: HTTPExchange, id: RequestID, who: Identity, ownerHash: String, mode: ReadMode, cursor: String?,
                 fromNow: Bool, hub: StreamHub, gate: RequestGuard) {
        self.fromNow = fromNow
        self.ex = ex
        self.id = id
        self.who = who
        self.ownerHash = ownerHash
        self.mode = mode
        self.clientCursor = cursor
        self.hub = hub
        self.gate = gate
    }

    /// Serves `GET /api/chat/stream/{rawID}?offset=…`: validates the id, the connection
    /// limit, the bearer token or a read ticket for this stream (`RequestGuard.authenticateRead`,
    /// docs/PROTOCOL.md §2.5), the drain, `offset`, `live` (`400 invalid_offset`) and
    /// the session's revocation marker, then answers (docs/PROTOCOL.md §12).
    static func serve(_ ex: HTTPExchange, rawID: Substring, rawOffset: String, gate: RequestGuard, hub: StreamHub) {
        guard let clientID = gate.attempt(ex, { try RequestID(validating: rawID) }) else { return }
        guard !gate.refusedAtConnectionLimit(ex) else { return }
        gate.authenticateRead(ex, clientID: clientID) { who, ownerHash, credential in
            guard !hub.draining else { return gate.fail(ex, .notReady("draining")) }
            guard let (offset, mode) = gate.attempt(ex, {
                // A repeated `offset` or `live` has no single meaning (a proxy or cache may take
                // another one than the relay): refused, like two Last-Event-ID headers (§6.1).
                for name in ["offset", "live"] where ex.queryParameterValues(name).count > 1 {
                    throw APIError(.invalidOffset, "\(name) must appear at most once in the query")
                }
                return (try ReadOffset.parse(rawOffset), try ReadMode.parse(ex.queryParameter("live")))
            }) else { return }
            let read = OffsetRead(ex: ex, id: clientID.scoped(by: ownerHash), who: who, ownerHash: ownerHash, mode: mode,
                                  cursor: ex.queryParameter("cursor"), fromNow: offset == .now, hub: hub, gate: gate)
            if credential == .bearer { read.ticket = gate.readTicket(for: who, ownerHash: ownerHash, clientID: clientID.value) }
            gate.checkSession(ex, who) { read.open(offset) }
        }
    }

    // MARK: Deciding

    private func open(_ offset: ReadOffset) {
        hub.log.open(id) { [self] r in
            guard ex.isOpen else { return }
            switch r {
            case .failure(let f) where EventLog.isUnreadable(f):
                hub.storedValueUnreadable(f.message)
                gate.fail(ex, .storedDataUnreadable("the stream's stored state is not what the relay writes"))
            case .failure(let f):
                gate.fail(ex, .notReady("Redis is not available (\(f.isDisconnect ? "disconnected" : "error"))"))
            case .success(let info):
                let found = info.map {
                    ResumeDecision.Found(ownedByCaller: OwnerHash.of($0.owner) == ownerHash, finished: $0.state != .running, lastSeq: $0.lastSeq,
                                         firstRetainedSeq: $0.firstRetainedSeq, textLength: $0.textLength)
                }
                if info == nil, hub.log.retentionMs > 0 { return retained(offset) }
                let d = OffsetReadDecision.decide(found, offset: offset, lossless: hub.lossless)
                if ex.method == .head { return head(d, lastSeq: info?.lastSeq ?? 0, finished: info.map { $0.state != .running } ?? true) }
                decided(d, lastSeq: info?.lastSeq ?? 0)
            }
        }
    }

    /// The stream's keys are gone: answers from its retained answer when there is one
    /// (docs/PROTOCOL.md §6.5, `RetainedResumeDecision`: the deltas after the offset as they
    /// were first sent, then the `done`), in this read's mode; else `404` as before.
    private func retained(_ offset: ReadOffset) {
        hub.log.answers.read(id) { [self] r in
            guard ex.isOpen else { return }
            let a: RetainedAnswer
            switch r {
            case .failure(.redis(let f)):
                return gate.fail(ex, .notReady("Redis is not available (\(f.isDisconnect ? "disconnected" : "error"))"))
            case .success(nil):
                return decided(.notFound, lastSeq: 0)
            case .failure(.unreadable(let why)):
                hub.storedValueUnreadable(why)
                return gate.fail(ex, .storedDataUnreadable("the retained answer does not open with this relay's keys"))
            case .success(let found?):
                a = found
            }
            let from: UInt64
            switch offset {
            case .start: from = 0
            case .now: from = a.finalSeq
            case .after(let seq): from = seq
            }
            let plan = RetainedResumeDecision.decide(ownedByCaller: OwnerHash.of(a.owner) == ownerHash, finalSeq: a.finalSeq, lastEventID: from)
            if ex.method == .head {
                switch plan {
                case .notFound: return decided(.notFound, lastSeq: 0)
                case .beyondEnd(let last): return decided(.beyondEnd(lastSeq: last), lastSeq: last)
                // At the final event: as the stored stream's HEAD (a long-poll's is `204` at once).
                case .noContent: return head(.closed(finalSeq: a.finalSeq), lastSeq: a.finalSeq, finished: true)
                case .stream: return headOnly(nextSeq: a.finalSeq, closed: true)
                }
            }
            switch plan {
            case .notFound: decided(.notFound, lastSeq: 0)
            case .beyondEnd(let last): decided(.beyondEnd(lastSeq: last), lastSeq: last)
            case .noContent: decided(.closed(finalSeq: a.finalSeq), lastSeq: a.finalSeq)
            case .stream:
                hub.metrics.add(.resumesRetained)
                position = from
                let events = a.events(after: from)
                let batch = OffsetReadBatch(after: from, read: events, maxBytes: OffsetRead.maxBodyBytes)
                switch mode {
                case .catchUp, .longPoll: respond(batch)
                case .sse:
                    startSSE()
                    // Every event, in bodies of at most `maxBodyBytes`; the last one closes the stream.
                    var next = batch
                    while !finished {
                        writeSSE(next)
                        next = OffsetReadBatch(after: next.nextSeq, read: events, maxBytes: OffsetRead.maxBodyBytes)
                    }
                }
            }
        }
    }

    /// A `HEAD` (RFC 9110 §9.3.2, docs/PROTOCOL.md §12): the `GET`'s status and headers
    /// from the plan alone: nothing is read, subscribed or waited for, in any mode. The
    /// headers describe the stream's tail (`Stream-Next-Offset` the last seq,
    /// `Stream-Closed` once it ended), as a Durable Streams `HEAD` does.
    private func head(_ d: OffsetReadDecision, lastSeq: UInt64, finished: Bool) {
        switch d {
        case .notFound, .beyondEnd, .gap: decided(d, lastSeq: lastSeq)
        case .closed(let finalSeq):
            position = finalSeq
            // As the `GET`: a long-poll at an ended answer's final event is `204` at once.
            if mode == .longPoll { return respondNoContent(closed: true) }
            headOnly(nextSeq: finalSeq, closed: true)
        case .read, .tail: headOnly(nextSeq: lastSeq, closed: finished)
        }
    }

    private func headOnly(nextSeq: UInt64, closed: Bool) {
        // Durable Streams PROTOCOL.md §5.5: the tail's offset, and `Stream-Closed` once ended.
        var headers = [("Stream-Next-Offset", ReadOffset.format(nextSeq))]
        if closed { headers.append(("Stream-Closed", "true")) }
        headers.append(("X-Request-Id", id.clientValue))
        if let ticket { headers.append(("X-Read-Ticket", ticket)) }
        // The body's length is not known from the plan: no `Content-Length` (RFC 9110 §9.3.2).
        ex.respondHead(status: 200, contentType: mode == .sse ? OffsetRead.eventStreamType : OffsetRead.jsonType, headers: headers)
        finish()
    }

    private func decided(_ d: OffsetReadDecision, lastSeq: UInt64) {
        let metrics = hub.metrics
        // A `HEAD` counts no resume (docs/PROTOCOL.md §1).
        let counted = ex.method != .head
        switch d {
        case .notFound:
            if counted { metrics.add(.resumesNotFound) }
            gate.fail(ex, .streamNotFound)
        case .beyondEnd(let last):
            gate.fail(ex, APIError(.invalidOffset, "the offset is beyond the stream's last event (\(ReadOffset.format(last)))"))
        case .gap(let oldest):
            if counted { metrics.add(.resumesGap) }
            gate.fail(ex, .resumeGap("events after the offset are no longer retained (oldest kept: \(oldest))"))
        case .closed(let finalSeq):
            metrics.add(.resumesOK)
            position = finalSeq
            switch mode {
            case .catchUp: respond(OffsetReadBatch(after: finalSeq, read: [], maxBytes: 0), closedAnyway: true)
            case .longPoll: respondNoContent(closed: true)
            case .sse:
                startSSE()
                writeSSE(OffsetReadBatch(after: finalSeq, read: [], maxBytes: 0), closedAnyway: true)
            }
        case .read(let after, let catchUp):
            metrics.add(catchUp ? .resumesCatchUp : .resumesOK)
            position = after
            if mode == .sse {
                startSSE()
                wait(liveAfter: lastSeq)
            }
            read()
        case .tail(let at):
            metrics.add(.resumesOK)
            position = at
            switch mode {
            case .catchUp: respond(OffsetReadBatch(after: at, read: [], maxBytes: 0))
            case .longPoll: wait(liveAfter: at)
            case .sse:
                startSSE()
                writeSSE(OffsetReadBatch(after: at, read: [], maxBytes: 0))
                wait(liveAfter: at)
            }
        }
    }

    // MARK: Reading

    /// Reads the events after `position` (`EventLog.read`: from the text key first when
    /// the retained window moved past it) and answers them. One read at a time; a wake
    /// during a read reads once more afterwards (SSE).
    private func read() {
        guard !finished else { return }
        guard !reading else { readAgain = true; return }
        reading = true
        readAgain = false
        let from = position
        // Skipped only once finished (its cleanup done); an exchange found closed is
        // finished by the read's answer.
        hub.readEvents(id, after: from, wanted: { [weak self] in self.map { !$0.finished } ?? false }) { [self] r in
            switch r {
            case .failure(let f): readFailed(f)
            case .success(.gap(let seq)): readGap(seq)
            case .success(.events(let events, let caughtUp)):
                if caughtUp > 0 { hub.caughtUp(events: caughtUp) }
                readDone(events)
            }
        }
    }

    private func readDone(_ events: [SequencedEvent]) {
        reading = false
        guard !finished, ex.isOpen else { return finish() }
        let batch = OffsetReadBatch(after: position, read: events, maxBytes: OffsetRead.maxBodyBytes)
        switch mode {
        case .catchUp, .longPoll:
            // A long-poll woken by an event that a read does not find (a relay-raised end:
            // revocation, expiry, outage) answers what it knows: nothing new yet.
            if batch.events.isEmpty && mode == .longPoll { return respondNoContent(closed: false) }
            respond(batch)
        case .sse:
            if !batch.events.isEmpty || batch.closed { writeSSE(batch) }
            if finished { return }
            if !batch.upToDate || readAgain { return read() }
            if subscriptionEnded { finish(endStream: true) }
        }
    }

    private func readGap(_ seq: UInt64) {
        reading = false
        guard mode != .sse else { return finish(endStream: true) }
        gate.fail(ex, .resumeGap("events after the offset up to \(seq) are no longer retained"))
        finish()
    }

    private func readFailed(_ f: RedisFailure) {
        reading = false
        if EventLog.isUnreadable(f) {
            hub.storedValueUnreadable(f.message)
            guard mode != .sse else { return finish(endStream: true) }
            gate.fail(ex, .storedDataUnreadable("the stream's stored events do not open with this relay's keys"))
            return finish()
        }
        if f.isDisconnect { hub.redisDisconnected() }
        guard mode != .sse else { return finish(endStream: true) }
        gate.fail(ex, .notReady("Redis is not available"))
        finish()
    }

    // MARK: Waiting

    /// Attaches a subscription that has every event up to `seq`: the next one written
    /// (locally or by another instance) wakes the read.
    private func wait(liveAfter seq: UInt64) {
        keepAlive = self
        let sink = OffsetReadWake(forward: mode == .sse ? ex : nil,
                                  wake: { [weak self] in self?.scheduleWake() },
                                  ended: { [weak self] in self?.subscriptionEnded = true; self?.scheduleWake() },
                                  aborted: { [weak self] in self?.aborted() })
        wakeSink = sink
        let s = Subscription(id: id, owner: who.user, sid: who.sid, sink: sink, host: hub, lastSent: seq, tokenExpiry: who.expiresAt)
        subscription = s
        hub.register(s)
        s.start()
        // As on the SSE path: registered first, then the revocation marker checked.
        hub.recheckRevocation(sid: who.sid) { [weak self] valid in
            if !valid { self?.subscription?.fail(.sessionRevoked) }
        }
        if mode == .longPoll {
            deadline = LoopTimer(loop: hub.loop) { [weak self] in self?.timedOut() }
            deadline?.schedule(afterMs: hub.settings.longPollTimeoutMs)
        }
        if mode != .sse {
            // The client going away ends the wait (and frees its connection slot) at once.
            ex.onClose = { [weak self] in self?.finish() }
            ex.watchForPeerClose()
        }
    }

    private func scheduleWake() {
        guard !finished else { return }
        if wakeTimer == nil { wakeTimer = LoopTimer(loop: hub.loop) { [weak self] in self?.woke() } }
        if wakeTimer?.isScheduled == false { wakeTimer?.schedule(afterMs: 0) }
    }

    private func woke() {
        guard !finished else { return }
        guard ex.isOpen else { return finish() }
        if mode == .sse { return read() }
        guard !woken else { return }
        woken = true
        // The revocation is checked again for the answer: a revoked session's cut wakes
        // the read too, and is answered 401 here. From now on the pending replies hold
        // the read (an answered failure drops it).
        endSubscription()
        deadline?.cancel()
        ex.onClose = nil
        keepAlive = nil
        gate.checkSession(ex, who) { [self] in
            // Past `exp` + `RELAY_JWT_LEEWAY`, as the stream cut judges it (a token accepted
            // within the leeway is not refused for the event that wakes its wait).
            if ConnectionPolicy.tokenExpired(nowS: hub.context.nowMs() / 1000, expiresAt: who.expiresAt,
                                             leewayS: hub.settings.tokenLeewayS) {
                gate.fail(ex, .unauthorized("token expired"))
                return finish()
            }
            read()
        }
    }

    private func timedOut() {
        guard !finished, !woken else { return }
        respondNoContent(closed: false)
    }

    /// The drain (or the slow-consumer cut) ended the subscription: a long-poll answers
    /// `204` with its offset at once (DS §5.7: the client polls again, on another
    /// instance); an SSE read closes like the SSE path's (the client reconnects from its
    /// last `streamNextOffset`).
    private func aborted() {
        guard !finished else { return }
        subscription = nil
        if mode == .sse {
            ex.abort()
            return finish()
        }
        respondNoContent(closed: false, connectionClose: true)
    }

    // MARK: Answering

    private func cursor() -> UInt64 {
        StreamCursor.next(wallMs: UInt64(max(0, hub.context.nowMs())), client: clientCursor, jitterSeconds: UInt64.random(in: 1...3600))
    }

    private func respond(_ batch: OffsetReadBatch, closedAnyway: Bool = false) {
        let closed = batch.closed || closedAnyway
        var headers = OffsetReadBatch.headers(nextSeq: batch.nextSeq, upToDate: batch.upToDate, closed: closed,
                                              cursor: mode == .catchUp ? nil : cursor())
        headers.append(("X-Request-Id", id.clientValue))
        if let ticket { headers.append(("X-Read-Ticket", ticket)) }
        if !fromNow {
            // Durable Streams PROTOCOL.md §10.1: the same range of the same stream, in the
            // same state, has the same tag; a client that has it gets `304` and no body.
            let tag = OffsetReadBatch.etag(id: id.clientValue, after: batch.after, nextSeq: batch.nextSeq, closed: closed)
            if OffsetReadBatch.ifNoneMatch(ex.headerValues("If-None-Match"), matches: tag) {
                ex.respondNotModified(headers: [("ETag", tag), ("X-Request-Id", id.clientValue)])
                return finish()
            }
            headers.append(("ETag", tag))
        }
        ex.respond(status: 200, contentType: OffsetRead.jsonType, body: EventFramer.jsonArray(batch.events), headers: headers)
        if !batch.events.isEmpty { hub.delivered(events: batch.events.count) }
        finish()
    }

    private func respondNoContent(closed: Bool, connectionClose: Bool = false) {
        var headers = OffsetReadBatch.headers(nextSeq: position, upToDate: true, closed: closed, cursor: closed ? nil : cursor())
        headers.append(("X-Request-Id", id.clientValue))
        if let ticket { headers.append(("X-Read-Ticket", ticket)) }
        if connectionClose { headers.append(("Connection", "close")) }
        ex.respondNoContent(headers: headers)
        finish()
    }

    private func startSSE() {
        ex.setHeader("Content-Type", OffsetRead.eventStreamType)
        // `no-cache` as Durable Streams PROTOCOL.md §5.8 asks, `no-store` as every answer is.
        ex.setHeader("Cache-Control", "no-cache, no-store")
        ex.setHeader("X-Accel-Buffering", "no")
        ex.setHeader("X-Request-Id", id.clientValue)
        if let ticket { ex.setHeader("X-Read-Ticket", ticket) }
        ex.startStream()
        ex.onClose = { [weak self] in self?.finish() }
        keepAlive = self
    }

    /// One DS SSE `data` event (a JSON array; none when empty) and its `control` event
    /// (DS §5.8); closes the stream after the final one.
    private func writeSSE(_ batch: OffsetReadBatch, closedAnyway: Bool = false) {
        let closed = batch.closed || closedAnyway
        let control = OffsetReadBatch.controlJSON(nextSeq: batch.nextSeq, upToDate: batch.upToDate, closed: closed, cursor: closed ? nil : cursor())
        ex.write(EventFramer.durableSSE(batch.events, control: control))
        if !batch.events.isEmpty { hub.delivered(events: batch.events.count) }
        position = batch.nextSeq
        if closed { finish(endStream: true) }
    }

    // MARK: Ending

    private func endSubscription() {
        guard let s = subscription else { return }
        subscription = nil
        s.end()
    }

    /// Ends the read once: the subscription, the timers, the keep-alive.
    private func finish(endStream: Bool = false) {
        if endStream && ex.isOpen { ex.endStream() }
        guard !finished else { return }
        finished = true
        deadline?.cancel()
        wakeTimer?.cancel()
        ex.onClose = nil
        endSubscription()
        wakeSink = nil
        keepAlive = nil
    }
}
