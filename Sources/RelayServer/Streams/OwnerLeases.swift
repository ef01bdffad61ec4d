import RelayCore
import RelayLoop
import RelayRedis
import RelayEventStore
import RelayBudgets

/// Owner leases, both sides (docs/DATA_MODEL.md §6). Every `LeasePolicy.refreshTickMs`
/// it refreshes the leases of the generations this worker owns that are due (with
/// their session slot and budget reservation), and, every third of a lease, for
/// streams read here but generated elsewhere that have been quiet for half a lease,
/// asks Redis whether their owner's lease lapsed (`Scripts.expireLease`): an owner
/// that died mid-answer gets its stream ended with `upstream_lost` and its reservation
/// settled (`ReservationSettler.settleLostOwner`); a stream gone from Redis (restarted
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

    init(loop: EventLoop, log: EventLog, sessions: SessionStore, ledger: BudgetLedger, settler: ReservationSettler,
         outage: RedisOutageWatch, instance: String, wallMs: @escaping () -> Int64) {
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
            log.refreshLease(leaseKey: g.leaseKey, instance: instance)
            sessions.refresh(streamsKey: g.sessionStreamsKey, id: g.id, untilMs: untilMs)
            ledger.refresh(expiriesKey: g.budgetExpiriesKey, id: g.id, nowMs: wall)
        }
        guard round.judgesOwners(nowMs: now, leaseMs: leaseMs, outage: outage.state) else { return }
        let lost = APIError(.upstreamLost, "the relay instance generating this answer stopped; retry the request").asEvent
        for id in OwnerLeaseRound.streamsToCheck(readHere(), nowMs: now, leaseMs: leaseMs) {
            log.expireLease(id, event: lost) { [settler] r in
                guard case .success(let x) = r else { return }
                switch LeasePolicy.expiry(fromReply: x.reply) {
                case .ownerAlive: break
                case .ended(let seq):
                    Log.warn("owner lease lapsed: stream ended with upstream_lost", ["requestId": id.value, "seq": Int(seq)])
                    settler.settleLostOwner(budgetKey: x.budgetKey, id: id, promptEstimate: x.promptEstimate, endedAtSeq: seq)
                case .vanished:
                    let gone = APIError(.streamLost, "this answer's events are gone from Redis (restarted without persistence, or expired); retry the request")
                    let cut = readers(id)
                    for s in cut { s.fail(gone) }
                    if !cut.isEmpty { Log.warn("stream vanished from Redis: readers ended with stream_lost", ["requestId": id.value, "readers": cut.count]) }
                }
            }
        }
    }
}
