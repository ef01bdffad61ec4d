import RelayEventStore
import RelayRedis

/// What an instance does with the answer of an owner whose lease lapsed, once
/// `Scripts.takeover` answered (docs/PROTOCOL.md §4.5, docs/DATA_MODEL.md §6.1) — the same
/// whether a reader here noticed the lapse (`OwnerLeases.round`) or the sweep found the
/// owner's heartbeat gone (`OwnerLeases.adopt`). Pure.
///
/// Who may take: the script decides atomically (one taker per lapse; a relay that cannot
/// read the answer takes nothing). What the stale owner does on waking: its appends and
/// lease refresh are fenced by the epoch (`AppendStop.takenOver`), so it stops without
/// settling (`GenerationPhase.Ending.takenOver`). Who settles, once: the instance that
/// stores the final event; an ended answer found here is settled again, which the ledger
/// makes idempotent per id.
enum TakeoverPlan: Equatable {
    /// Taken over: continue the answer on this worker from the stored top seq.
    case continueHere
    /// It cannot be continued: end it with `upstream_lost` (`Scripts.expireLease`),
    /// charging what was generated.
    case endUpstreamLost
    /// Gone from Redis: its readers here end with `stream_lost`.
    case endReadersStreamLost
    /// It ended already: settle it again (its owner may have died before settling).
    case settleEnded
    /// Its lease is held (the owner lives, or another instance just took it): nothing.
    case leave
    /// Sealed at rest and this relay cannot read it: left for a relay that can.
    case leaveForARelayWithKeys
    /// Redis failed: try again later.
    case retryLater

    /// The plan for the script's answer.
    static func plan(_ found: Result<EventLog.Takeover, RedisFailure>) -> TakeoverPlan {
        switch found {
        case .success(.taken): return .continueHere
        case .success(.notContinuable): return .endUpstreamLost
        case .success(.vanished): return .endReadersStreamLost
        case .success(.ended): return .settleEnded
        case .success(.ownerAlive): return .leave
        case .success(.needsKeys): return .leaveForARelayWithKeys
        case .failure: return .retryLater
        }
    }

    /// Whether the sweep is done with the stream (else it keeps it in the dead worker's
    /// set for a later round: a relay with keys, or Redis back).
    var sweepIsDone: Bool {
        switch self {
        case .leaveForARelayWithKeys, .retryLater: return false
        case .continueHere, .endUpstreamLost, .endReadersStreamLost, .settleEnded, .leave: return true
        }
    }
}
