import RelayCore
import RelayLoop
import RelayRedis
import RelayEventStore
import RelayBudgets

/// Owner leases, both sides (docs/DATA_MODEL.md §6). Every `LeasePolicy.refreshTickMs`
/// it refreshes the leases of the generations this worker owns that are due (with
/// their session slot and budget reservation), and, every third of a lease, for
/// streams read here but generated elsewhere that have been quiet for half a lease,
/// asks Redis whether their owner's lease lapsed: an owner that died mid-answer has its
/// stream taken over by this worker (`Scripts.takeover`, `continueStream`: at most
/// `maxContinuations` times per stream), or, when it cannot be continued, ended with
/// `upstream_lost` (`Scripts.expireLease`) and its reservation settled
/// (`ReservationSettler.settleLostOwner`); a stream gone from Redis (restarted
/// without persistence, or expired) ends its readers here with `stream_lost`, since no
/// event can ever arrive for it. Decides with `OwnerLeaseRound` and `LeasePolicy`.
/// Loop thread only.
final class OwnerLeases {
    private let loop: EventLoop
    private let log: EventLog
    private let sessions: SessionStore
    private let ledger: BudgetLedger
    private let settler: ReservationSettler
    private let outage: RedisOutageWatch
    private let instance: String
    /// The wall clock, unix ms (session-slot and reservation expiries are wall times).
    private let wallMs: () -> Int64
    private var round = OwnerLeaseRound()
    /// `RELAY_MAX_CONTINUATIONS`: takeovers per stream (0: none, `upstream_lost` at once).
    private let maxContinuations: Int
    /// `RELAY_MAX_STREAMS_PER_SESSION`: a generation whose session slot lapsed is admitted
    /// again only within it.
    private let maxStreamsPerSession: Int
    private let metrics: Metrics
    /// Continues a stream this worker took over (`StreamTakeover`).
    var continueStream: ((RequestID, EventLog.TakenStream) -> Void)?

    init(loop: EventLoop, log: EventLog, sessions: SessionStore, ledger: BudgetLedger, settler: ReservationSettler,
         outage: RedisOutageWatch, instance: String, maxContinuations: Int, maxStreamsPerSession: Int, metrics: Metrics,
         wallMs: @escaping () -> Int64) {
        self.maxContinuations = maxContinuations
        self.maxStreamsPerSession = maxStreamsPerSession
        self.metrics = metrics
        self.loop = loop
        self.log = log
        self.sessions = sessions
        self.ledger = ledger
        self.settler = settler
        self.outage = outage
        self.instance = instance
        self.wallMs = wallMs
    }

    /// One round. `owned`: the generations running on this worker; `readHere`: the
    /// streams with readers on this worker and no generation here, with when their
    /// readers last got an event (listed only when owners are judged); `readers(id)`: the
    /// readers of a stream when a reply comes back.
    func round(owned: some Sequence<Generation>, readHere: () -> [(id: RequestID, quietSinceMs: UInt64?)],
               readers: @escaping (RequestID) -> [Subscription]) {
        guard log.connection.isConnected else { return }
        let now = loop.nowMs
        let leaseMs = UInt64(EventLog.leaseMs)
        let wall = wallMs()
        let untilMs = wall + Int64(EventLog.leaseMs)
        for g in owned where !g.finished && OwnerLeaseRound.refreshDue(nowMs: now, lastRefreshMs: g.leaseRefreshedMs, leaseMs: leaseMs) {
            g.leaseRefreshedMs = now
            if g.appender.holdIfLeaseLapsed() {
                // A stall passed the lease it knew: nothing more is sent until `confirm` (asked
                // by the hold, or again here after a failed ask) says it still owns the answer.
                confirm(g)
                ledger.refresh(expiriesKey: g.budgetExpiriesKey, id: g.id, nowMs: wall)
                continue
            }
            log.refreshLease(g.keys, instance: instance, epoch: g.ownershipEpoch) { found in
                switch found {
                case .takenOver: g.leaseTakenOver()
                case .held: g.appender.leaseKnown(untilMs: LeasePolicy.knownUntil(sentAtMs: now, leaseMs: leaseMs))
                case .notRunning: break
                }
            }
            // `g` held strongly until the reply (a moment): a weak reference would give the
            // generation a side table, and every retain of it per event the slow path.
            sessions.refresh(streamsKey: g.sessionStreamsKey, id: g.id, untilMs: untilMs) { [weak self] in
                self?.slotLapsed(g)
            }
            ledger.refresh(expiriesKey: g.budgetExpiriesKey, id: g.id, nowMs: wall)
        }
        guard round.judgesOwners(nowMs: now, leaseMs: leaseMs, outage: outage.state) else { return }
        for id in OwnerLeaseRound.streamsToCheck(readHere(), nowMs: now, leaseMs: leaseMs) {
            guard maxContinuations > 0 else {
                expire(id, readers: readers)
                continue
            }
            log.takeoverIfReadable(id, instance: instance, maxContinuations: maxContinuations) { r in
                self.carryOut(TakeoverPlan.plan(r), r, id, noticed: "owner lease lapsed", readers: readers, done: nil)
            }
        }
    }

    /// Confirms that `g` still owns its answer before it sends anything more: its loop clock
    /// passed the lease it last knew held (a stall: SIGSTOP, a paused VM, a partition), so
    /// another instance may have taken the answer over, or another answer of its session its
    /// slot. The lease refresh (fenced by the epoch, `Scripts.refreshLease`) says which; with
    /// the lease held, the session slot is taken again within `RELAY_MAX_STREAMS_PER_SESSION`
    /// (`SessionStore.admit`, idempotent per id). Taken over → the generation stops without a
    /// write; session full → it ends with `upstream_lost`, the upstream's waiting events
    /// never numbered; else it goes on (docs/PROTOCOL.md §4.5). A Redis failure leaves it
    /// held; the next round asks again.
    func confirm(_ g: Generation) {
        guard !g.finished, !g.confirmingOwnership else { return }
        g.confirmingOwnership = true
        let sentAt = loop.nowMs
        let leaseMs = UInt64(EventLog.leaseMs)
        log.refreshLease(g.keys, instance: instance, epoch: g.ownershipEpoch) { [self] found in
            switch found {
            case .takenOver:
                g.confirmingOwnership = false
                g.leaseTakenOver()
            case .notRunning:
                // Ended elsewhere under its own epoch (a lease expiry's `upstream_lost`) or gone:
                // it stops without sending anything more — lifting the hold would let its
                // unfenced text writes land on the stored answer.
                g.confirmingOwnership = false
                g.endedElsewhere()
            case .held:
                readmit(g) { admitted in
                    g.confirmingOwnership = false
                    // Admitted: it goes on. Session full: its error event goes out. Redis
                    // failed: still held, the next round asks again.
                    if admitted != nil { g.ownershipConfirmed(untilMs: LeasePolicy.knownUntil(sentAtMs: sentAt, leaseMs: leaseMs)) }
                }
            }
        }
    }

    /// A running generation's session slot was gone at its refresh: its owner stalled past
    /// the lease (a paused process, a long GC-like stall) and the entry lapsed, so another
    /// answer of the session may have been admitted in its place. The slot is taken again
    /// within `RELAY_MAX_STREAMS_PER_SESSION` (`SessionStore.admit`, idempotent per id); when
    /// the session is full the answer ends with `upstream_lost`, charged what was generated,
    /// as a continuation that finds its session full does (docs/PROTOCOL.md §4.5): the limit
    /// holds whichever of the racing answers got there first.
    private func slotLapsed(_ g: Generation) {
        guard !g.finished else { return }
        readmit(g)
    }

    /// Takes `g`'s session slot again (`SessionStore.admit`, idempotent per id); when the
    /// session is full, ends the answer with `upstream_lost`, charged what was generated, the
    /// upstream's events waiting for the lease dropped. `done`: `true` admitted, `false`
    /// ended, `nil` Redis failed.
    private func readmit(_ g: Generation, done: @escaping (Bool?) -> Void = { _ in }) {
        let max = maxStreamsPerSession
        sessions.admit(owner: g.ownerHash, sid: g.sid, id: g.id, nowMs: wallMs(), leaseMs: EventLog.leaseMs, max: max) { [metrics] r in
            guard case .success(let admitted) = r else { return done(nil) }
            if !admitted, !g.finished {
                metrics.add(.sessionSlotsLost)
                Log.warn("session slot lapsed while the owner stalled and the session is full: answer ended", ["requestId": g.id.value])
                g.dropWaitingUpstreamEvents()
                g.abort(APIError(.upstreamLost, "this answer stalled on its relay instance and the session now runs \(max) other answers; retry the request"))
            }
            done(admitted)
        }
    }

    /// What `adopt` did with a stream of a dead worker (`OrphanSweeper`).
    enum Adoption {
        /// Taken over (continued here) or ended with `upstream_lost`, or gone from Redis,
        /// or its lease is held (another instance runs it, or it finished): nothing is
        /// left for the sweep to do.
        case handled
        /// Redis failed: try again on a later sweep.
        case retry
    }

    /// Takes over stream `id`, found in a dead worker's owned set, as a lapsed lease seen by
    /// a reader would be (`round`): continued here, or ended with `upstream_lost` when it
    /// cannot be continued; no reader is needed (docs/PROTOCOL.md §4.5). `readers(id)`:
    /// readers of the stream on this worker, if any.
    func adopt(_ id: RequestID, readers: @escaping (RequestID) -> [Subscription], done: @escaping (Adoption) -> Void) {
        // With takeovers off the script still reports an ended stream, and a running one
        // as not continuable (then `expireLease` ends it).
        log.takeoverIfReadable(id, instance: instance, maxContinuations: maxContinuations) { r in
            self.carryOut(TakeoverPlan.plan(r), r, id, noticed: "owner lapsed without readers", readers: readers, done: done)
        }
    }

    /// Carries out `plan` for stream `id` (`r`: the script's answer); `noticed` says how the
    /// lapse was seen, for the log. `done` (the sweep's) learns whether it is done with the id.
    private func carryOut(_ plan: TakeoverPlan, _ r: Result<EventLog.Takeover, RedisFailure>, _ id: RequestID, noticed: String,
                          readers: @escaping (RequestID) -> [Subscription], done: ((Adoption) -> Void)?) {
        switch (plan, r) {
        case (.continueHere, .success(.taken(let t))):
            Log.warn("\(noticed): stream taken over", ["requestId": id.value, "seq": Int(t.topSeq),
                                                      "epoch": Int(t.epoch), "continuation": t.continuations])
            continueStream?(id, t)
        case (.endUpstreamLost, _):
            return expire(id, readers: readers, done: done)   // `done` once the stream is ended
        case (.endReadersStreamLost, _):
            vanished(id, readers: readers)
        case (.settleEnded, .success(.ended(let e))):
            settleEnded(id, e)
        case (.retryLater, .failure(let f)):
            Log.warn("takeover failed", ["requestId": id.value, "reason": f.message])
        default:
            break
        }
        done?(plan.sweepIsDone ? .handled : .retry)
    }

    /// A dead worker's stream that had already ended: its owner may have died between the
    /// final append and the settlement, so it is settled again (once per id whoever does
    /// it, `BudgetLedger.settle`): a `done` to the usage it reports, a `failed` stream as a
    /// lost one (prompt + each stored delta).
    private func settleEnded(_ id: RequestID, _ e: EventLog.EndedStream) {
        guard !e.budgetKey.isEmpty else { return }
        switch e.finalEvent {
        case .done(_, let usage, _)?:
            settler.settle(budgetKey: e.budgetKey, id: id, tokens: usage.totalTokens)
        default:
            guard e.state == "failed", e.lastSeq > 0 else { return }
            settler.settleLostOwner(budgetKey: e.budgetKey, id: id, promptEstimate: e.prompt, endedAtSeq: e.lastSeq)
        }
    }

    /// Ends stream `id` with `upstream_lost` if its owner's lease lapsed (`Scripts.expireLease`).
    private func expire(_ id: RequestID, readers: @escaping (RequestID) -> [Subscription], done: ((Adoption) -> Void)? = nil) {
        let lost = APIError(.upstreamLost, "the relay instance generating this answer stopped; retry the request").asEvent
        log.expireLease(id, event: lost) { [settler] r in
            guard case .success(let x) = r else { done?(.retry); return }
            defer { done?(.handled) }
            switch x.expiry {
            case .ownerAlive: break
            case .ended(let seq):
                Log.warn("owner lease lapsed: stream ended with upstream_lost", ["requestId": id.value, "seq": Int(seq)])
                settler.settleLostOwner(budgetKey: x.budgetKey, id: id, promptEstimate: x.promptEstimate, endedAtSeq: seq)
            case .vanished:
                self.vanished(id, readers: readers)
            }
        }
    }

    /// Stream `id` is gone from Redis: its readers here end with `503 stream_lost`.
    private func vanished(_ id: RequestID, readers: (RequestID) -> [Subscription]) {
        let gone = APIError(.streamLost, "this answer's events are gone from Redis (restarted without persistence, or expired); retry the request")
        let cut = readers(id)
        for s in cut { s.fail(gone) }
        if !cut.isEmpty { Log.warn("stream vanished from Redis: readers ended with stream_lost", ["requestId": id.value, "readers": cut.count]) }
    }
}
