import RelayCore
import RelayLoop
import RelayRedis
import RelayStreamLogic
import RelayConfiguration

/// The worker's live streams (DESIGN §1): the registries of subscriptions and
/// generations keyed by `RequestID`, live events (from the local generations as their
/// appends are acknowledged, and from pub/sub), cancels and revocations, and the
/// worker's ticks — heartbeats, token expiry, the Redis-outage cut-off, owner leases,
/// replay retries — plus slow-consumer checks, drain bookkeeping and the per-event
/// counters. Hosts `Subscription` and `Generation`
/// through `SubscriptionHost` / `GenerationHost`. Loop thread only.
///
/// Nothing refers to the hub weakly (issue 14: a weakly referenced object keeps its
/// reference counts in a side table, and every retain and release of it takes the slow
/// path; the hub is retained for every event). A Redis reply closure holds it strongly
/// until the reply or the connection's failure comes (every command gets one of them).
final class StreamHub: SubscriptionHost, GenerationHost {
    let index: Int
    let context: ServerContext
    let loop: EventLoop
    let log: EventLog
    let pubsub: PubSub
    let sessions: SessionStore
    let ledger: BudgetLedger
    var metrics: Metrics { context.metrics }
    var config: RelayConfig { context.config }
    var replayStallMs: UInt64 { UInt64(config.debugReplayDelayMs) }

    // The registry read and the counters bumped per event are marked `@exclusivity(unchecked)`: confined to the loop thread, and no
    // mutation of it spans a call out, so the run-time exclusivity check
    // (`swift_beginAccess`, about 75 instructions per access) guards nothing (issue 14).
    /// Keyed by request id; an entry stays while it has members or the stream's
    /// generation is registered here (which holds it: `Generation.subscribers`).
    @exclusivity(unchecked) private var subscriptions: [String: StreamSubscribers] = [:]
    private(set) var generations: [String: Generation] = [:]
    private var heartbeatTimer: LoopTimer?
    private var retryTimer: LoopTimer?
    private var leaseTimer: LoopTimer?
    /// When `leaseTick` last judged the owners of streams read here (loop ms).
    private var ownersJudgedMs: UInt64 = 0
    private var replayRetries: [ObjectIdentifier: Subscription] = [:]
    /// The Redis-outage policy (`RelayStreamLogic.RedisOutage`): when streams are cut,
    /// and when leases may be judged again after the connection came back.
    private var outage = RedisOutage()
    private(set) var draining = false
    private var drainDone: (() -> Void)?
    /// Per-event counters are kept here (no lock per event) and added to the shared
    /// `Metrics` on every tick (at most 1 s behind) and before `/metrics`.
    @exclusivity(unchecked) private var eventsDeliveredSinceFlush = 0
    @exclusivity(unchecked) private var eventsAppendedSinceFlush = 0
    /// `RELAY_MAX_PENDING_BYTES`, read once (checked on every write).
    private let maxPendingBytes: Int

    init(index: Int, context: ServerContext, loop: EventLoop, log: EventLog, pubsub: PubSub, sessions: SessionStore,
         ledger: BudgetLedger) {
        self.index = index
        self.ledger = ledger
        self.context = context
        self.loop = loop
        self.log = log
        self.pubsub = pubsub
        self.sessions = sessions
        self.maxPendingBytes = context.config.maxPendingBytes
        pubsub.onMessage = { [unowned self] ch, payload in self.message(channel: ch, payload: payload) }
        pubsub.onResubscribed = { [unowned self] ch in
            if ch == StreamKeys.revocationsChannel { return self.recheckAllSessions() }
            guard let id = StreamKeys.requestID(fromLiveChannel: ch) else { return }
            // Only the subscriptions that read the channel can have missed something.
            for s in self.subscriptions[id]?.members ?? [] where s.liveSource.holdsChannel { s.replay() }
        }
        pubsub.subscribe(StreamKeys.revocationsChannel) { [unowned self] in self.recheckAllSessions() }
        pubsub.subscribe(StreamKeys.cancelChannel) {}
        let hb = UInt64(context.config.heartbeatMs)
        heartbeatTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.tick() }
        heartbeatTimer?.schedule(afterMs: max(10, min(1000, hb / 4)))
        retryTimer = LoopTimer(loop: loop) { [unowned self] in self.retryReplays() }
        leaseTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.leaseTick() }
        leaseTimer?.schedule(afterMs: LeasePolicy.refreshTickMs)
    }

    /// Cancels the timers and tears down the generations still registered (worker stop):
    /// each holds the hub and is held by its appender's callbacks and its upstream's
    /// `emit` (`Generation.teardown`), cycles nothing else would break once the loop
    /// stops. Nothing is settled: their leases and reservations lapse in Redis.
    func stop() {
        heartbeatTimer?.cancel()
        retryTimer?.cancel()
        leaseTimer?.cancel()
        let running = generations.values
        generations.removeAll()
        for g in running {
            g.subscribers = nil
            g.teardown()
        }
    }

    // MARK: Redis connection state

    /// The command connection came up.
    func redisConnected() {
        outage.connected(nowMs: loop.nowMs)
    }

    /// The command connection was lost (or a command found it down).
    func redisDisconnected() {
        outage.disconnected(nowMs: loop.nowMs)
    }

    // MARK: Registry

    /// The registry entry of stream `id`, created when missing.
    private func subscribers(_ id: String) -> StreamSubscribers {
        if let e = subscriptions[id] { return e }
        let e = StreamSubscribers()
        subscriptions[id] = e
        return e
    }

    func register(_ s: Subscription) {
        subscribers(s.id.value).insert(s)
        metrics.gauge(.liveConnections, 1)
    }

    func subscriptionEnded(_ s: Subscription) {
        let key = ObjectIdentifier(s)
        replayRetries[key] = nil
        guard let entry = subscriptions[s.id.value], entry.remove(s) else { return }
        if entry.isEmpty && generations[s.id.value] == nil { subscriptions[s.id.value] = nil }
        if s.liveSource.end() { pubsub.release(StreamKeys(s.id).live) }
        metrics.gauge(.liveConnections, -1)
        Log.info("stream", ["requestId": s.id.value, "tokensSent": s.eventsWritten, "latencyMs": Int(loop.nowMs - s.startedMs),
                            "resumes": s.resumedFrom > 0 ? 1 : 0, "outcome": s.outcome])
    }

    func register(_ g: Generation) {
        generations[g.id.value] = g
        g.subscribers = subscribers(g.id.value)
        metrics.gauge(.runningGenerations, 1)
        metrics.add(.streamsStarted)
    }

    func generationEnded(_ g: Generation) {
        guard generations[g.id.value] === g else { return }
        generations[g.id.value] = nil
        // A late acknowledgement (none normally) finds the stream's subscriptions by id.
        g.subscribers = nil
        let entry = subscriptions[g.id.value]
        if entry?.isEmpty == true { subscriptions[g.id.value] = nil }
        log.releaseLease(g.id)
        sessions.release(owner: g.ownerHash, sid: g.sid, id: g.id)
        metrics.gauge(.runningGenerations, -1)
        metrics.observe(.streamDuration, seconds: Double(loop.nowMs - g.startedMs) / 1000)
        // Nothing more is delivered locally. A subscription still open (normally none: the
        // final event ended them; but a fenced or failed generation ends without one)
        // reads the live channel and the Redis stream from now on (`LiveSource`).
        for s in entry?.members ?? [] { s.localDeliveryStopped() }
        if draining { checkDrained() }
    }

    func localAckedSeq(_ id: RequestID) -> UInt64? { generations[id.value]?.ackedSeq }

    /// An event of a generation on this worker was stored: delivered at once to this
    /// worker's subscriptions of the stream, without waiting for the `PUBLISH` to come
    /// back over pub/sub (issue 14).
    func acknowledged(_ g: Generation, event: SequencedEvent) {
        if let subs = g.subscribers { return deliverLive(subs, event) }
        deliverLive(g.id.value, event)
    }

    /// Settles a generation's reservation (`BudgetLedger.settle`, once per id).
    func settle(_ g: Generation, tokens: Int) {
        settle(budgetKey: g.budget.key, id: g.id, tokens: tokens)
    }

    func settle(budgetKey: String, id: RequestID, tokens: Int) {
        guard !budgetKey.isEmpty else { return }
        ledger.settle(key: budgetKey, id: id, tokens: tokens) { [metrics] r in
            if case .success(true) = r { metrics.add(.budgetSettlements) }
            if case .failure(let f) = r {
                Log.warn("budget settlement failed; the reservation lapses", ["requestId": id.value, "reason": f.message])
            }
        }
    }

    /// Register first, then check (issue 12): called after a generation and/or a
    /// subscription of session `sid` was registered here, so a revocation published
    /// from now on reaches them through `relay:revocations`, and one published before
    /// wrote its marker first (`SessionStore.revoke`) and is seen here. Cuts the
    /// session's streams on this worker when the marker exists. `then(true)` when the
    /// session is still valid; `then(false)` when revoked or when Redis could not say
    /// (the caller fails closed: it ends what it registered).
    func recheckRevocation(sid: String, then: ((Bool) -> Void)? = nil) {
        sessions.isRevoked(sid: sid) { r in
            switch r {
            case .success(false):
                then?(true)
            case .success(true):
                self.revoked(sid: sid)
                then?(false)
            case .failure:
                then?(false)
            }
        }
    }

    /// Revocations published while this worker was not subscribed to
    /// `relay:revocations` (before its first confirmation, or while the pub/sub
    /// connection was down) were never delivered: check every live session's marker.
    private func recheckAllSessions() {
        for sid in Set(allSubscriptions.map(\.sid) + generations.values.map(\.sid)) { recheckRevocation(sid: sid) }
    }

    /// Every live subscription on this worker (for revocation, drain, heartbeats).
    var allSubscriptions: [Subscription] { subscriptions.values.flatMap { $0.members } }

    // MARK: Pub/sub

    private func message(channel: String, payload: [UInt8]) {
        if let id = StreamKeys.requestID(fromLiveChannel: channel) {
            guard subscriptions[id]?.isEmpty == false, let e = LivePayload.parse(payload) else { return }
            deliverLive(id, e)
        } else if channel == StreamKeys.cancelChannel {
            let id = String(decoding: payload, as: UTF8.self)
            if let g = generations[id] {
                metrics.add(.cancels)
                g.cancel()
            }
        } else if channel == StreamKeys.revocationsChannel {
            revoked(sid: String(decoding: payload, as: UTF8.self))
        }
    }

    /// Hands a live event (from pub/sub or from the local generation) to every
    /// subscription of stream `id` on this worker; each merges it (`ReplayMerge`: a
    /// duplicate is dropped, a skipped seq starts a replay). Framed once (SSE and HTTP
    /// chunk): every subscriber writes the same shared bytes.
    private func deliverLive(_ id: String, _ e: SequencedEvent) {
        guard let subs = subscriptions[id] else { return }
        deliverLive(subs, e)
    }

    /// `deliverLive(_:_:)` to the registry entry of the stream.
    private func deliverLive(_ subs: StreamSubscribers, _ e: SequencedEvent) {
        let members = subs.members
        guard !members.isEmpty else { return }
        let frame = WireFrame.event(seq: e.seq, json: e.json)
        for s in members { s.live(e, frame: frame) }
    }

    /// Cuts every live stream and generation of session `sid` (issue 3).
    func revoked(sid: String) {
        var cut = 0
        for s in allSubscriptions where s.sid == sid {
            s.fail(.sessionRevoked)
            cut += 1
        }
        for g in generations.values where g.sid == sid {
            g.abort(.sessionRevoked)
        }
        if cut > 0 { metrics.add(.revocations, cut) }
    }

    // MARK: Timers

    private func tick() {
        flushCounters()
        let now = loop.nowMs
        let hb = UInt64(config.heartbeatMs)
        let nowS = context.nowMs() / 1000
        let grace = UInt64(context.config.redisOutageGraceMs)
        let cut = outage.cutsStreams(nowMs: now, graceMs: grace)
        for s in allSubscriptions {
            if cut {
                s.fail(APIError(.redisUnavailable, "Redis has been unreachable for more than \(grace) ms"))
                continue
            }
            if ConnectionPolicy.tokenExpired(nowS: nowS, expiresAt: s.tokenExpiry, leewayS: Int64(config.jwtLeewaySeconds)) {
                s.fail(.tokenExpired)
                continue
            }
            if isSlowConsumer(s) { continue }
            s.heartbeat(nowMs: now, intervalMs: hb)
        }
    }

    /// Every `LeasePolicy.refreshTickMs`: refresh the leases of the generations this
    /// worker owns that are due (each every `leaseMs / 3`, on its own phase), and every
    /// `leaseMs / 3`, for streams read here but generated elsewhere that have been silent for
    /// a while, end them with `upstream_lost` if their owner's lease has lapsed
    /// (issue 4: an instance died mid-generation), or with `stream_lost` if the stream
    /// no longer exists in Redis at all (Redis restarted without persistence, or the
    /// stream expired): no event can ever arrive for it, and without this its readers
    /// would wait forever on heartbeats.
    private func leaseTick() {
        guard log.connection.isConnected else { return }
        let now = loop.nowMs
        let leaseMs = UInt64(EventLog.leaseMs)
        let wallMs = context.nowMs()
        let untilMs = wallMs + Int64(EventLog.leaseMs)
        for g in generations.values where !g.finished
            && LeasePolicy.refreshDue(nowMs: now, lastRefreshMs: g.leaseRefreshedMs, intervalMs: leaseMs / 3) {
            g.leaseRefreshedMs = now
            log.refreshLease(leaseKey: g.leaseKey, instance: context.instance)
            sessions.refresh(streamsKey: g.sessionStreamsKey, id: g.id, untilMs: untilMs)
            ledger.refresh(expiriesKey: g.budgetExpiriesKey, id: g.id, nowMs: wallMs)
        }
        guard LeasePolicy.refreshDue(nowMs: now, lastRefreshMs: ownersJudgedMs, intervalMs: leaseMs / 3) else { return }
        ownersJudgedMs = now
        guard outage.leasesJudgeable(nowMs: now, leaseMs: leaseMs) else { return }
        let lost = APIError(.upstreamLost, "the relay instance generating this answer stopped; retry the request").asEvent
        for (id, subs) in subscriptions where generations[id] == nil {
            guard let quietSince = subs.members.map(\.lastEventMs).max(),
                  LeasePolicy.shouldCheckOwner(nowMs: now, quietSinceMs: quietSince, leaseMs: leaseMs),
                  let rid = subs.members.first?.id else { continue }
            log.expireLease(rid, event: lost) { r in
                guard case .success(let x) = r else { return }
                switch LeasePolicy.expiry(fromReply: x.reply) {
                case .ownerAlive: break
                case .ended(let seq):
                    Log.warn("owner lease lapsed: stream ended with upstream_lost", ["requestId": id, "seq": Int(seq)])
                    // The owner died without settling: charge what the stream records
                    // (the prompt estimate and one token per delta), release the rest.
                    self.settle(budgetKey: x.budgetKey, id: rid,
                                 tokens: BudgetArithmetic.chargeForLostStream(promptEstimate: x.promptEstimate, lastSeqBefore: seq - 1))
                case .vanished:
                    let gone = APIError(.streamLost, "this answer's events are gone from Redis (restarted without persistence, or expired); retry the request")
                    let readers = Array(self.subscriptions[id]?.members ?? [])
                    for s in readers { s.fail(gone) }
                    if !readers.isEmpty { Log.warn("stream vanished from Redis: readers ended with stream_lost", ["requestId": id, "readers": readers.count]) }
                }
            }
        }
    }

    // MARK: Counters

    func delivered(events: Int) { eventsDeliveredSinceFlush += events }
    func merged(events: Int) { metrics.add(.deltasMerged, events) }
    func caughtUp(events: Int) { metrics.add(.catchUpMerged, events) }
    var slowLinkLimits: SlowLinkCoalescer.Limits {
        SlowLinkCoalescer.Limits(highWaterBytes: config.coalesceBacklogBytes == 0 ? .max : config.coalesceBacklogBytes,
                                 maxHeldBytes: max(1, config.maxPendingBytes / 4))
    }
    func appended(events: Int) { eventsAppendedSinceFlush += events }
    func firstToken(afterSeconds s: Double) { metrics.observe(.timeToFirstToken, seconds: s) }
    func upstreamFailed() { metrics.add(.upstreamErrors) }

    /// Adds the per-event counters to the shared `Metrics`.
    func flushCounters() {
        if eventsDeliveredSinceFlush > 0 {
            metrics.add(.eventsDelivered, eventsDeliveredSinceFlush)
            eventsDeliveredSinceFlush = 0
        }
        if eventsAppendedSinceFlush > 0 {
            metrics.add(.eventsAppended, eventsAppendedSinceFlush)
            eventsAppendedSinceFlush = 0
        }
    }

    // MARK: Subscription reports

    /// A subscription's Redis read failed: retry it shortly (the outage check in
    /// `tick` ends it if Redis stays away longer than the grace period).
    func redisTrouble(_ s: Subscription, _ f: RedisFailure) {
        if f.isDisconnect { redisDisconnected() }
        replayRetries[ObjectIdentifier(s)] = s
        if retryTimer?.isScheduled == false { retryTimer?.schedule(afterMs: 250) }
    }

    private func retryReplays() {
        let list = replayRetries.values
        replayRetries.removeAll()
        for s in list { s.replay() }
    }

    /// Closes a connection whose unsent output stayed above `RELAY_MAX_PENDING_BYTES` for
    /// `SlowConsumerPolicy.windowMs` (or passed its hard limit) and returns true: the client
    /// resumes from Redis later; memory stays bounded however slowly clients read, and one
    /// large event never cuts a client that reads at full speed (issue 13 item 5).
    func isSlowConsumer(_ s: Subscription) -> Bool {
        let pending = s.exchange.pendingOutputBytes
        // The common case (nothing much queued, never over the limit) decides nothing: no
        // policy state to create or update, and no copy of the config per event.
        if pending <= maxPendingBytes && s.backpressure?.overLimitSinceMs == nil { return false }
        var policy = s.backpressure ?? SlowConsumerPolicy(limitBytes: maxPendingBytes)
        let slow = policy.isSlow(pendingBytes: pending, nowMs: loop.nowMs)
        s.backpressure = policy
        guard slow else { return false }
        metrics.add(.slowConsumerDisconnects)
        Log.warn("slow consumer disconnected", ["requestId": s.id.value, "pendingBytes": pending])
        s.abort()
        return true
    }

    // MARK: Drain

    /// Ends live client responses (clients resume elsewhere), keeps owned generations
    /// running until they finish; calls `done` when none is left.
    func drain(done: @escaping () -> Void) {
        draining = true
        drainDone = done
        for s in allSubscriptions { s.abort() }
        checkDrained()
    }

    /// Drain timeout: end the remaining generations with an error.
    func abortGenerations() {
        for g in generations.values {
            g.abort(APIError(.upstreamLost, "the relay instance shut down before the answer finished"))
        }
    }

    private func checkDrained() {
        if generations.isEmpty, let d = drainDone {
            drainDone = nil
            d()
        }
    }
}
