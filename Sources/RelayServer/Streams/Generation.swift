import RelayCore
import RelayRedis
import RelayUpstream
import RelayEventStore
import RelayBudgets

/// What a generation may spend and where it is charged (docs/PROTOCOL.md §9): the reservation
/// taken at admission (`BudgetLedger`) and the clamp it put on `max_tokens`.
struct GenerationBudget {
    /// The budget hash (`BudgetLedger.key`).
    let key: String
    /// The relay's prompt estimate, tokens (`ChatRequest.estimatePromptTokens`).
    let promptEstimate: Int
    /// The reservation's clamp: `max_tokens` given to the upstream, and whether the
    /// budget (not the request) set it.
    let grant: BudgetArithmetic.Grant
}

/// One generation (docs/ARCHITECTURE.md, "Generation": the producer): upstream adapter →
/// sequencer (seq 1, 2, 3 …) → ordered appends to the Redis event log → each
/// acknowledged event handed to its worker's subscriptions of the stream
/// (`GenerationHost.acknowledged`) and published for the others. It keeps
/// running when its client disconnects, until `done`, an upstream error, a cancel or
/// a revocation, or its completion tokens reach the grant (`BudgetArithmetic.CompletionCap`:
/// the relay enforces `max_tokens` itself, since an upstream may ignore it). Every ending settles its budget reservation once, to what was really
/// generated (`GenerationHost.settle`), once Redis stored its final event. A generation may
/// also continue a stream taken over from a lost owner (docs/PROTOCOL.md §4.5). Loop thread only.
///
/// Lifetime: the generation holds its host, appender and upstream strongly, and
/// nothing refers to the generation, its appender or its upstream weakly (a weakly
/// referenced object keeps its reference counts in a side table, and every retain and
/// release of it takes the slow path). The appender's
/// callbacks and the upstream's `emit` hold the generation strongly, and it holds them:
/// `teardown()` breaks both cycles (closes the appender, cancels the upstream) on every
/// ending, just before the host forgets it (`end()`), and the host tears down the
/// generations still registered when its worker stops (`StreamHub.stop`).
final class Generation {
    /// The scoped id (`RequestID.scoped(by:)`).
    let id: RequestID
    let owner: String
    /// `OwnerHash` of `owner`: the namespace of its session slot.
    let ownerHash: String
    let sid: String
    let budget: GenerationBudget
    /// Strong: the host (`StreamHub`) holds its registered generations and forgets each
    /// in `generationEnded`; a generation outliving that (held by a Redis reply still to
    /// come) just keeps the host alive a little longer.
    let host: GenerationHost
    /// This worker's subscriptions of the stream, set while the generation is registered
    /// (`StreamHub.register(_:)`): each acknowledged event is handed to them without a
    /// lookup by id.
    @exclusivity(unchecked) var subscribers: StreamSubscribers?
    private let upstream: Upstream
    /// Internal, not private, for the tests' leak probes.
    let appender: any AnswerWriter
    // The per-event state is marked `@exclusivity(unchecked)`: confined to the loop thread, and no
    // mutation of it spans a call out, so the run-time exclusivity check
    // (`swift_beginAccess`, about 75 instructions per access) guards nothing (docs/BENCHMARKS.md).
    @exclusivity(unchecked) private(set) var seq: UInt64 = 0
    /// The highest seq whose `XADD` Redis acknowledged (every earlier one too): what a
    /// subscription attaching on this worker can find in the Redis stream.
    var ackedSeq: UInt64 { appender.ackedSeq }
    /// Where it is in its life (`GenerationPhase`: waiting, generating, ended and why, torn down).
    @exclusivity(unchecked) private(set) var phase = GenerationPhase.waiting
    /// No more events will be produced.
    var finished: Bool { phase.isFinished }
    /// Whether the upstream call was started (an abort before it charges nothing).
    var started: Bool { phase.upstreamCalled }
    let startedMs: UInt64
    /// When the owner lease was last refreshed (loop ms; the start: `Scripts.create`
    /// took it): `StreamHub.leaseTick` refreshes each generation on its own phase.
    @exclusivity(unchecked) var leaseRefreshedMs: UInt64
    /// The keys that refresh writes, made once: its owner lease and meta (`keys`), its
    /// session's running set (`SessionStore.streamsKey`) and its budget's reservation
    /// expiries (`BudgetLedger.expiriesKey`).
    /// The stream's keys (`StreamKeys`), made once.
    let keys: StreamKeys
    /// The ownership epoch this generation writes under (0: the stream's creator; a
    /// takeover's: `EventLog.TakenStream.epoch`).
    let ownershipEpoch: UInt64
    let sessionStreamsKey: String
    let budgetExpiriesKey: String
    @exclusivity(unchecked) private var firstTokenMs: UInt64?
    /// Completion tokens streamed: one per `delta` and per reasoning or argument piece.
    @exclusivity(unchecked) private var completionTokens = 0
    private let cap: BudgetArithmetic.CompletionCap
    /// A continuation after a takeover (docs/PROTOCOL.md §4.5): the completion tokens
    /// stored before it (`TakenStream.tokens`) and the prompt tokens charged before it (the meta's `prompt`); `nil` for
    /// a new stream. Its `budget.promptEstimate` is the continuation's own re-sent prompt.
    let continued: (tokens: Int, priorPrompt: Int)?
    /// The charge of the final event, settled once Redis stored it (`settleOnce`): only
    /// the writer whose terminal event is stored settles, so a lapsed owner whose stream was
    /// taken over never does.
    @exclusivity(unchecked) private var finalCharge: (seq: UInt64, tokens: Int)?
    @exclusivity(unchecked) private var settled = false
    /// Its appends were refused because another instance took the stream over: the host
    /// keeps its hands off the lease and session slot the taker now holds.
    var takenOver: Bool { phase.ending == .takenOver }
    /// `handOver()` ran: this worker stopped generating so another instance continues.
    var handedOver: Bool { phase.ending == .handedOver }

    /// - Parameter taken: a takeover this generation continues (`EventLog.takeover`):
    ///   it appends after its `topSeq` under its epoch; `nil` for a new stream.
    init(id: RequestID, owner: String, ownerHash: String, sid: String, budget: GenerationBudget,
         upstream: Upstream, host: GenerationHost, taken: EventLog.TakenStream? = nil) {
        self.id = id
        self.owner = owner
        self.ownerHash = ownerHash
        self.sid = sid
        self.budget = budget
        self.cap = BudgetArithmetic.CompletionCap(budget.grant)
        self.upstream = upstream
        self.host = host
        self.startedMs = host.nowMs
        self.leaseRefreshedMs = startedMs
        self.keys = StreamKeys(id)
        self.ownershipEpoch = taken?.epoch ?? 0
        self.sessionStreamsKey = SessionStore.streamsKey(owner: ownerHash, sid: sid)
        self.budgetExpiriesKey = BudgetLedger.expiriesKey(budget.key)
        self.appender = host.writer(for: id, continuing: taken)
        self.continued = taken.map { ($0.tokens, $0.priorPrompt) }
        self.seq = taken?.topSeq ?? 0
        self.completionTokens = continued?.tokens ?? 0
        // Strong captures of `self`, a cycle through the appender that `teardown()` breaks
        // (`StreamAppender.close()` drops these callbacks). `self` is each closure's whole
        // context: no allocation for it, no weak load per event.
        appender.onPermanentFailure = { f in self.appendFailed(f) }
        appender.onAcknowledged = { seq, json in
            if seq == self.finalCharge?.seq { self.settleOnce(self.finalCharge!.tokens) }
            self.host.acknowledged(self, event: SequencedEvent(seq: seq, json: json))
        }
        appender.retain(owner: owner, ownerHash: ownerHash, sid: sid, createdMs: host.wallMs(),
                        wallClock: { host.wallMs() })
        // A continued stream's record holds the whole answer: the pieces the lost owner
        // stored first.
        if let taken { appender.seedRetention(text: taken.pieceBytes, pieces: taken.pieces) }
        appender.onRetained = { outcome in self.host.answerRetained(outcome) }
        // The lease as `create` or the takeover took it; past it, a stall may have lost it.
        appender.leaseKnown(untilMs: LeasePolicy.knownUntil(sentAtMs: startedMs, leaseMs: UInt64(EventLog.leaseMs)))
        appender.onLeaseUnknown = { self.host.confirmOwnership(self) }
        appender.onDrained = {
            guard self.finished else { return }
            self.end()
        }
    }

    /// Starts the upstream call (once; not after an abort).
    func start() {
        guard phase.start() else { return }
        // A strong capture, a cycle through the upstream: every adapter drops `emit` after
        // its terminal event and on `cancel()` (`Upstream`), and `teardown()` cancels it.
        upstream.start { e in
            // While the lease is unconfirmed (after a stall) the upstream's events wait,
            // unnumbered: an answer found taken over, or over its session's limit, emits none.
            if !self.finished, self.appender.holdIfLeaseLapsed() { return self.heldUpstream.append(e) }
            self.fromUpstream(e)
        }
    }

    /// One event of the upstream, emitted.
    private func fromUpstream(_ e: StreamEvent) {
        if case .error = e, !finished { host.upstreamFailed() }
        // A continuation's `done` reports the whole answer's usage (`total`).
        if continued != nil, case .done(let r, let u, let l) = e {
            return emit(.done(finishReason: r, usage: total(u), budgetLimited: l))
        }
        emit(e)
    }

    /// Events from the upstream that arrived while the appender was held for the lease.
    @exclusivity(unchecked) private var heldUpstream: [StreamEvent] = []
    /// `OwnerLeases.confirm` is asking Redis whether this generation still owns its answer.
    var confirmingOwnership = false

    /// Forgets the upstream's events that waited for the lease (the answer ends without them).
    func dropWaitingUpstreamEvents() { heldUpstream.removeAll() }

    /// The owner confirmed its lease and session slot after a stall (`OwnerLeases.confirm`):
    /// known held until `untilMs` (loop ms). The upstream's waiting events go on, in order.
    func ownershipConfirmed(untilMs: UInt64) {
        appender.leaseConfirmed(untilMs: untilMs)
        let waiting = heldUpstream
        heldUpstream.removeAll()
        for e in waiting where !finished { fromUpstream(e) }
    }

    /// Breaks the generation's reference cycles, once, on every ending: closes the
    /// appender (its callbacks hold the generation; replies still to come are ignored)
    /// and cancels the upstream (its `emit` holds the generation; after an upstream's own
    /// terminal event this is a no-op). The generation is inert afterwards (`finished`).
    /// Called by `end()`, and by the host for a generation still running when its worker
    /// stops (nothing is settled then: the lease and the reservation lapse in Redis).
    func teardown() {
        guard phase.tearDown() else { return }
        appender.close()
        _ = upstream.cancel()
    }

    /// The generation is over and its appends are settled: tears it down, then the host
    /// forgets it.
    private func end() {
        teardown()
        host.generationEnded(self)
    }

    private func emit(_ e: StreamEvent, charge: Int? = nil) {
        guard !finished else { return }
        seq += 1
        var event = e
        var finalState: StreamState?
        var tokens = 0
        switch e {
        case .delta:
            completionTokens += 1
            firstTokenSeen()
        case .part(let p):
            // Reasoning and argument pieces are generated tokens too (docs/PROTOCOL.md §9.2).
            if p.countsAsToken { completionTokens += 1 }
            firstTokenSeen()
        case .done(let reason, let usage, _):
            finalState = reason == .cancelled ? .cancelled : .done
            tokens = chargeSoFar(usage)
            // `done` says when the budget's grant cut the answer (docs/PROTOCOL.md §5).
            if reason == .length && budget.grant.limitedByBudget {
                event = .done(finishReason: reason, usage: usage, budgetLimited: true)
            }
        case .error:
            finalState = .failed
            tokens = chargeSoFar(nil)
        }
        if finalState != nil {
            phase.end(.finalEvent)
            finalCharge = (seq, charge ?? tokens)
        }
        appender.append(seq: seq, event: event)
        host.appended(events: 1)
        if finalState == nil && cap.isReached(streamed: completionTokens) { stopAtGrant() }
    }

    /// Reports the time to the first generated event, once.
    private func firstTokenSeen() {
        guard firstTokenMs == nil else { return }
        firstTokenMs = host.nowMs
        host.firstToken(afterSeconds: Double(firstTokenMs! - startedMs) / 1000)
    }

    /// The grant's completion tokens were streamed: stops the upstream (which may have
    /// ignored `max_tokens`) and ends with `done` `finish_reason: "length"` (plus
    /// `"budget_limited": true` when the budget set the grant), charged what was streamed.
    private func stopAtGrant() {
        let reported = total(upstream.cancel())
        let end = cap.ending(reportedPrompt: reported.promptTokens, promptEstimate: promptEstimate,
                             streamed: completionTokens)
        emit(.done(finishReason: end.finishReason, usage: end.usage))
    }

    /// Stops the upstream and ends the stream with `done` (`finish_reason:
    /// "cancelled"`) and the partial usage (docs/PROTOCOL.md §7).
    /// Before `start()` (a `DELETE` that came before the stream, §7) no upstream call was
    /// made: the usage is zero and nothing is charged.
    func cancel() {
        guard !finished else { return }
        let reported = total(upstream.cancel())
        let usage = started ? reported : Usage(promptTokens: 0, completionTokens: 0)
        emit(.done(finishReason: .cancelled, usage: usage), charge: started || continued == nil ? nil : chargeSoFar(nil))
    }

    /// Stops generating here without ending the stream (a drain's timeout,
    /// docs/PROTOCOL.md §4.5): no final event and no settlement; the host ends the lease at
    /// once (`StreamHub.generationEnded`), so another instance takes the stream over and
    /// continues it from the last stored seq, on the same reservation.
    func handOver() {
        guard phase.end(.handedOver) else { return }
        _ = upstream.cancel()
        end()
    }

    /// Stops the upstream and ends the stream with `error` (revocation, drain timeout,
    /// a failed revocation re-check); charged the upstream's usage so far.
    func abort(_ e: APIError) {
        guard !finished else { return }
        let charge = chargeSoFar(total(upstream.cancel()))
        emit(e.asEvent, charge: charge)
    }

    /// The upstream's usage as the whole answer's (docs/PROTOCOL.md §4.5): a continuation
    /// adds the prompt tokens charged before it and the completion tokens stored before it.
    private func total(_ u: Usage) -> Usage {
        guard let c = continued else { return u }
        return Usage(promptTokens: c.priorPrompt + u.promptTokens, completionTokens: c.tokens + u.completionTokens)
    }

    /// The prompt estimate of the whole answer: a continuation's own plus what was charged before it.
    private var promptEstimate: Int { budget.promptEstimate + (continued?.priorPrompt ?? 0) }

    /// Settles the reservation, once (`GenerationHost.settle`).
    private func settleOnce(_ tokens: Int) {
        guard !settled else { return }
        settled = true
        host.settle(self, tokens: tokens)
    }

    /// Tokens to charge now: 0 before the upstream was called (a continuation not started
    /// yet: what was generated before it); else the usage's prompt (the estimate without
    /// one) plus the completion tokens (the upstream's count or the deltas seen, whichever
    /// is larger). `usage`: the whole answer's (`total`).
    private func chargeSoFar(_ usage: Usage?) -> Int {
        guard started || continued != nil else { return 0 }
        return BudgetArithmetic.charge(reportedPrompt: usage?.promptTokens, promptEstimate: promptEstimate,
                                       completion: max(usage?.completionTokens ?? 0, completionTokens))
    }

    /// The owner lease's refresh found another instance owns the stream now
    /// (`EventLog.LeaseRefresh.takenOver`): stops generating here at once, without a final
    /// event or a settlement (the taker settles), as a refused append would.
    func leaseTakenOver() {
        guard !finished else { return }
        appendFailed(.takenOver)
    }

    /// After a stall, the store says the answer no longer runs under this generation's epoch
    /// (`Scripts.refreshLease` `notRunning`: a lease expiry ended it, or its keys are gone):
    /// stops at once without sending anything more, charged what was generated, as a refused
    /// append would have stopped it (docs/PROTOCOL.md §4.5).
    func endedElsewhere() {
        guard !finished else { return }
        dropWaitingUpstreamEvents()
        appendFailed(.ended(state: "not running"))
    }

    private func appendFailed(_ stop: AppendStop) {
        if stop == .takenOver {
            // Another instance took the stream over (`Scripts.takeover`): it settles, and
            // the session slot and lease are its own now.
            phase.end(.takenOver)
            _ = upstream.cancel()
        } else {
            // The stream expired or was ended elsewhere: nothing more can be stored.
            let charge = finalCharge?.tokens ?? chargeSoFar(total(upstream.cancel()))
            phase.end(.storeRefused)
            settleOnce(charge)
        }
        Log.warn("generation stopped: stream no longer accepts appends", ["requestId": id.value, "reason": stop.description])
        end()
    }
}
