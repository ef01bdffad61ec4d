import RelayCore
import RelayHTTP
import RelayLoop
import RelayRedis
import RelayConfiguration
import RelayEventStore
import RelayBudgets
import RelayUpstream

/// The worker's live streams (docs/ARCHITECTURE.md): the registry of subscriptions and
/// generations keyed by `RequestID`, and the dispatch of pub/sub messages — live events,
/// cancels and revocations — to them. It hosts `Subscription` and `Generation`
/// (`SubscriptionHost`, `GenerationHost`) and hands each periodic policy to its own
/// type: `ConnectionSweeper` (Redis-outage cut, token expiry, slow consumers,
/// heartbeats), `OwnerLeases` (lease refresh, lost owners), `RevocationWatcher`,
/// `DrainCoordinator`, `ReplayRetries`, `ReservationSettler` and `WorkerCounters`.
/// Loop thread only.
///
/// Nothing refers to the hub weakly: a weakly referenced object keeps its reference
/// counts in a side table, and every retain and release of it takes the slow path; the
/// hub is retained for every event. A Redis reply closure holds it strongly until the
/// reply or the connection's failure comes (every command gets one of them).
final class StreamHub: SubscriptionHost, GenerationHost {
    let index: Int
    let context: ServerContext
    let loop: EventLoop
    let log: EventLog
    let pubsub: PubSub
    let sessions: SessionStore
    let ledger: BudgetLedger
    var metrics: Metrics { context.metrics }
    var settings: StreamSettings { context.streams }
    let replayStallMs: UInt64

    // The registry is read for every event: loop-thread confined and no mutation of it
    // spans a call out, so not checked for exclusivity at run time (`swift_beginAccess`,
    // about 75 instructions per access).
    /// Keyed by request id; an entry stays while it has members or the stream's
    /// generation is registered here (which holds it: `Generation.subscribers`).
    @exclusivity(unchecked) private var subscriptions: [String: StreamSubscribers] = [:]
    private(set) var generations: [String: Generation] = [:]

    let counters: WorkerCounters
    let outage: RedisOutageWatch
    let settler: ReservationSettler
    private let sweeper: ConnectionSweeper
    private let leases: OwnerLeases
    /// Heartbeat, owned set and the takeover of dead workers' streams without readers.
    private let orphans: OrphanSweeper
    private let revocations: RevocationWatcher
    private let drainer = DrainCoordinator()
    private let retries: ReplayRetries
    /// Replay reads in flight and waiting (`ReplayAdmission`, `RELAY_REPLAY_CONCURRENCY`).
    /// The worker's replay reads, `RELAY_REPLAY_CONCURRENCY` at a time.
    private let replayReads: ReplayReads
    private var sweepTimer: LoopTimer?
    private var leaseTimer: LoopTimer?
    /// The worker's upstream factory, for continuing streams taken over here (`StreamTakeover`).
    var upstreams: UpstreamFactory?
    /// Completion webhooks (docs/PROTOCOL.md §13), when `RELAY_COMPLETION_WEBHOOK_URL` is set.
    var completionWebhooks: CompletionWebhookQueue?

    init(index: Int, context: ServerContext, loop: EventLoop, log: EventLog, pubsub: PubSub, sessions: SessionStore,
         ledger: BudgetLedger) {
        self.index = index
        self.ledger = ledger
        self.context = context
        self.loop = loop
        self.log = log
        self.pubsub = pubsub
        self.sessions = sessions
        self.replayStallMs = context.streams.replayStallMs
        counters = WorkerCounters(metrics: context.metrics)
        outage = RedisOutageWatch(loop: loop)
        settler = ReservationSettler(ledger: ledger, metrics: context.metrics)
        sweeper = ConnectionSweeper(settings: context.streams, metrics: context.metrics, outage: outage)
        leases = OwnerLeases(loop: loop, log: log, sessions: sessions, ledger: ledger, settler: settler, outage: outage,
                             instance: context.instance, maxContinuations: context.streams.maxContinuations,
                             maxStreamsPerSession: context.streams.maxStreamsPerSession, metrics: context.metrics, wallMs: context.nowMs)
        retries = ReplayRetries(loop: loop)
        orphans = OrphanSweeper(loop: loop, registry: InstanceRegistry(
            connection: log.connection, scripts: log.scripts,
            name: InstanceRegistry.heartbeatName(instance: context.instance, worker: index, startMs: context.nowMs(),
                                                nonce: UInt32.random(in: 0 ... .max))),
                                metrics: context.metrics, outage: outage, wallMs: context.nowMs)
        replayReads = ReplayReads(maxInFlight: context.streams.replayConcurrency, metrics: context.metrics)
        revocations = RevocationWatcher(sessions: sessions)
        leases.continueStream = { [unowned self] id, taken in
            guard let upstreams = self.upstreams else { return }
            StreamTakeover.continueStream(id, taken, hub: self, upstreams: upstreams)
        }
        orphans.adopt = { [unowned self] id, done in
            self.leases.adopt(id, readers: { id in Array(self.subscriptions[id.value]?.members ?? []) }, done: done)
        }
        orphans.running = { [unowned self] in Array(self.generations.keys) }
        pubsub.onMessage = { [unowned self] ch, payload in self.message(channel: ch, payload: payload) }
        pubsub.onResubscribed = { [unowned self] ch in
            if ch == StreamKeys.revocationsChannel { return self.recheckAllSessions() }
            guard let id = StreamKeys.requestID(fromLiveChannel: ch) else { return }
            // Only the subscriptions that read the channel can have missed something.
            for s in self.subscriptions[id]?.members ?? [] where s.liveSource.holdsChannel { s.replay() }
        }
        pubsub.subscribe(StreamKeys.revocationsChannel) { [unowned self] in self.recheckAllSessions() }
        pubsub.subscribe(StreamKeys.cancelChannel) {}
        sweepTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.sweep() }
        sweepTimer?.schedule(afterMs: sweeper.intervalMs)
        leaseTimer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.leaseRound() }
        leaseTimer?.schedule(afterMs: LeasePolicy.refreshTickMs)
    }

    /// Cancels the timers and tears down the generations still registered (worker stop):
    /// each holds the hub and is held by its appender's callbacks and its upstream's
    /// `emit` (`Generation.teardown`), cycles nothing else would break once the loop
    /// stops. Nothing is settled: their leases and reservations lapse in Redis.
    func stop() {
        sweepTimer?.cancel()
        leaseTimer?.cancel()
        orphans.stop()
        retries.stop()
        replayReads.dropWaiting()
        let running = generations.values
        generations.removeAll()
        for g in running {
            g.subscribers = nil
            g.teardown()
        }
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
        retries.forget(s)
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
        orphans.owns(g.id)
    }

    func generationEnded(_ g: Generation) {
        guard generations[g.id.value] === g else { return }
        generations[g.id.value] = nil
        // A late acknowledgement (none normally) finds the stream's subscriptions by id.
        g.subscribers = nil
        let entry = subscriptions[g.id.value]
        if entry?.isEmpty == true { subscriptions[g.id.value] = nil }
        if g.handedOver {
            // Another instance continues it (`DrainCoordinator.timeOut`): the lease ends now.
            log.dropLease(g.id)
        } else if !g.takenOver {
            log.releaseLease(g.id, instance: context.instance)
            sessions.release(owner: g.ownerHash, sid: g.sid, id: g.id)
        }
        // A handed-over generation stays in the owned set: the others' sweeps find it there.
        if !g.handedOver { orphans.ended(g.id) }
        metrics.gauge(.runningGenerations, -1)
        metrics.observe(.streamDuration, seconds: Double(loop.nowMs - g.startedMs) / 1000)
        // Nothing more is delivered locally. A subscription still open (normally none: the
        // final event ended them; but a fenced or failed generation ends without one)
        // reads the live channel and the Redis stream from now on (`LiveSource`).
        for s in entry?.members ?? [] { s.localDeliveryStopped() }
        drainer.generationEnded(generationsLeft: generations.count)
    }

    /// Every live subscription on this worker.
    var allSubscriptions: [Subscription] { subscriptions.values.flatMap { $0.members } }

    /// Cuts every live stream and generation of session `sid` with `401 session_revoked`.
    func cutSession(_ sid: String) {
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

    /// Register first, then check: see `RevocationWatcher.recheck`.
    func recheckRevocation(sid: String, then: ((Bool) -> Void)? = nil) {
        revocations.recheck(sid: sid, cut: { self.cutSession($0) }, then: then)
    }

    private func recheckAllSessions() {
        revocations.recheckAll(subscriptionSessions: allSubscriptions.map(\.sid), generationSessions: generations.values.map(\.sid),
                               cut: { self.cutSession($0) })
    }

    // MARK: Pub/sub dispatch

    private func message(channel: String, payload: [UInt8]) {
        if let id = StreamKeys.requestID(fromLiveChannel: channel) {
            guard let subs = subscriptions[id], !subs.isEmpty, let e = LivePayload.parse(payload) else { return }
            if log.liveNeedsStoredRead(e) {
                // Plaintext under keys: each reader reads the stored entry, under the stream's mode.
                for s in subs.members where !s.ended { s.replay() }
                return
            }
            do {
                deliverLive(subs, try log.openLive(e, id: id))
            } catch {
                // Never the sealed bytes to a client: its readers end with the error.
                storedValueUnreadable(error.description)
                for s in subs.members { s.fail(.storedDataUnreadable("event \(e.seq) of the stream does not open with this relay's keys")) }
            }
        } else if channel == StreamKeys.cancelChannel {
            let id = String(decoding: payload, as: UTF8.self)
            if let g = generations[id] {
                metrics.add(.cancels)
                g.cancel()
            }
        } else if channel == StreamKeys.revocationsChannel {
            cutSession(String(decoding: payload, as: UTF8.self))
        }
    }

    /// Hands a live event (from pub/sub) to every subscription of stream `id` on this
    /// worker.
    private func deliverLive(_ id: String, _ e: SequencedEvent) {
        guard let subs = subscriptions[id] else { return }
        deliverLive(subs, e)
    }

    /// Hands a live event to every member of a registry entry; each merges it
    /// (`ReplayMerge`: a duplicate is dropped, a skipped seq starts a replay). Framed
    /// once (SSE and HTTP chunk): every subscriber writes the same shared bytes.
    private func deliverLive(_ subs: StreamSubscribers, _ e: SequencedEvent) {
        let members = subs.members
        guard !members.isEmpty else { return }
        let frame = EventFramer.sse(e)
        for s in members { s.live(e, frame: frame) }
    }

    // MARK: Periodic policies

    private func sweep() {
        counters.flush()
        flushAtRestCounters()
        sweeper.sweep(allSubscriptions, nowMs: loop.nowMs, nowS: context.nowMs() / 1000)
    }

    private func leaseRound() {
        // The reply closure holds the hub strongly until the reply comes (see above).
        leases.round(owned: generations.values, readHere: {
            self.subscriptions.compactMap { id, subs -> (id: RequestID, quietSinceMs: UInt64?)? in
                guard self.generations[id] == nil, let rid = subs.members.first?.id else { return nil }
                return (rid, subs.members.map(\.lastEventMs).max())
            }
        }, readers: { id in Array(self.subscriptions[id.value]?.members ?? []) })
    }

    /// Adds the per-event counters to the shared `Metrics` (before `/metrics` answers).
    func flushCounters() {
        counters.flush()
        flushAtRestCounters()
    }

    /// The cipher's counts already added to `Metrics`.
    private var atRestFlushed = (seals: 0, opens: 0, failures: 0)

    /// Adds what the worker's `AtRestCipher` counted since the last flush to `Metrics`.
    private func flushAtRestCounters() {
        guard let c = log.cipher else { return }
        if c.seals > atRestFlushed.seals { metrics.add(.atRestSeals, c.seals - atRestFlushed.seals) }
        if c.opens > atRestFlushed.opens { metrics.add(.atRestOpens, c.opens - atRestFlushed.opens) }
        if c.openFailures > atRestFlushed.failures { metrics.add(.atRestOpenFailures, c.openFailures - atRestFlushed.failures) }
        atRestFlushed = (c.seals, c.opens, c.openFailures)
    }

    // MARK: Redis connection state

    /// The command connection came up.
    func redisConnected() {
        outage.connected()
        orphans.connected()
    }

    /// The command connection was lost (or a command found it down).
    func redisDisconnected() { outage.disconnected() }

    // MARK: Drain

    /// Whether the worker is draining (new streams are refused).
    var draining: Bool { drainer.isDraining }

    /// Ends live client responses (clients resume elsewhere), keeps owned generations
    /// running until they finish; calls `done` when none is left.
    /// Waiting offset reads (docs/PROTOCOL.md §12.5) are answered `204` at once; the
    /// worker then stops no sooner than `offsetReadFlushMs` later, so those answers leave
    /// before their connections are closed.
    func drain(done: @escaping () -> Void) {
        let subs = allSubscriptions
        let done = { [orphans] in
            orphans.leave()
            done()
        }
        guard subs.contains(where: { $0.sink is OffsetReadWake }) else {
            return drainer.begin(subscriptions: subs, generationsLeft: generations.count, done: done)
        }
        var flushed = false, drained = false
        drainFlushTimer = LoopTimer(loop: loop) {
            flushed = true
            if drained { done() }
        }
        drainFlushTimer?.schedule(afterMs: StreamHub.offsetReadFlushMs)
        drainer.begin(subscriptions: subs, generationsLeft: generations.count) {
            drained = true
            if flushed { done() }
        }
    }

    /// How long a drain leaves the `204` answers of waiting offset reads to leave, ms.
    static let offsetReadFlushMs: UInt64 = 200
    private var drainFlushTimer: LoopTimer?

    /// Drain timeout: hand the remaining generations over to another instance
    /// (`RELAY_MAX_CONTINUATIONS` > 0), else end them with an error.
    func abortGenerations() {
        let handOver = settings.maxContinuations > 0
        if handOver { orphans.beginHandOver() }
        drainer.timeOut(Array(generations.values), handOver: handOver)
        // The handed-over streams (leases dropped) become takeable at once by every instance's sweep.
        if handOver { orphans.retire() }
    }

    // MARK: SubscriptionHost

    var nowMs: UInt64 { loop.nowMs }
    var lossless: Bool { log.lossless }

    func readEvents(_ id: RequestID, after seq: UInt64, wanted: @escaping () -> Bool,
                    done: @escaping (Result<EventRead, RedisFailure>) -> Void) {
        replayReads.admit(wanted: wanted) { [log] finished in
            log.read(id, after: seq) { r in
                finished()
                done(r)
            }
        }
    }

    func subscribeLive(_ id: RequestID, confirmed: @escaping () -> Void) {
        pubsub.subscribe(StreamKeys(id).live, ready: confirmed)
    }

    /// A subscription's Redis read failed: retry it shortly (the connection sweep ends
    /// it if Redis stays away longer than the grace period).
    func redisTrouble(_ s: Subscription, _ f: RedisFailure) {
        if EventLog.isUnreadable(f) {
            storedValueUnreadable(f.message)
            return s.fail(.storedDataUnreadable("the stream's stored events do not open with this relay's keys"))
        }
        if f.isDisconnect { redisDisconnected() }
        retries.add(s)
    }

    /// A stored value did not open (docs/DATA_MODEL.md §15): logged with its key and kid
    /// (never its bytes); counted by the cipher (`relay_at_rest_open_failures_total`).
    func storedValueUnreadable(_ why: String) {
        // Without keys there is no cipher to count it.
        if log.cipher == nil { metrics.add(.atRestOpenFailures) }
        Log.error("stored value does not open", ["worker": index, "reason": why])
    }

    func isSlowConsumer(_ s: Subscription) -> Bool { sweeper.isSlowConsumer(s, nowMs: loop.nowMs) }
    func delivered(events: Int) { counters.delivered(events) }
    func finalEventWritten(_ s: Subscription) { completionWebhooks?.finalEventRead(scopedID: s.id.value) }
    func merged(events: Int) { metrics.add(.deltasMerged, events) }
    func caughtUp(events: Int) { metrics.add(.catchUpEvents, events) }
    var slowLinkLimits: SlowLinkCoalescer.Limits { settings.slowLink }
    func localAckedSeq(_ id: RequestID) -> UInt64? { generations[id.value]?.ackedSeq }

    // MARK: GenerationHost

    func writer(for id: RequestID, continuing taken: EventLog.TakenStream?) -> any AnswerWriter {
        StreamAppender(log: log, loop: loop, id: id, taken: taken)
    }

    func appended(events: Int) { counters.appended(events) }
    func firstToken(afterSeconds s: Double) { metrics.observe(.timeToFirstToken, seconds: s) }
    func upstreamFailed() { metrics.add(.upstreamErrors) }
    func wallMs() -> UInt64 { UInt64(max(0, context.nowMs())) }
    func answerRetained(_ outcome: RetentionOutcome) { metrics.answerRetained(outcome) }

    /// Settles a generation's reservation (`BudgetLedger.settle`, once per id).
    /// The generation is ending (once, any way): its completion webhook is queued too.
    func confirmOwnership(_ g: Generation) { leases.confirm(g) }

    func settle(_ g: Generation, tokens: Int) {
        settler.settle(budgetKey: g.budget.key, id: g.id, tokens: tokens)
        completionWebhooks?.answerEnding(scopedID: g.id.value, sub: g.owner)
    }

    /// An event of a generation on this worker was stored: delivered at once to this
    /// worker's subscriptions of the stream, without waiting for the `PUBLISH` to come
    /// back over pub/sub.
    func acknowledged(_ g: Generation, event: SequencedEvent) {
        if let subs = g.subscribers { return deliverLive(subs, event) }
        deliverLive(g.id.value, event)
    }
}
