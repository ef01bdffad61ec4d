import RelayRedis
import RelayEventStore

/// Revocation on one worker (docs/PROTOCOL.md §9, docs/DATA_MODEL.md §8): the
/// "register, then check" re-read of a session's marker after a stream was registered
/// here, and the re-check of every live session when revocations published meanwhile
/// may have been missed (the pub/sub connection came back). A revocation delivered over
/// `relay:revocations` reaches the hub directly (`StreamHub.cutSession`). Decides with
/// `RevocationRecheck`. Loop thread only.
final class RevocationWatcher {
    private let sessions: SessionStore

    init(sessions: SessionStore) {
        self.sessions = sessions
    }

    /// Register first, then check: called after a generation and/or a subscription of
    /// session `sid` was registered here, so a revocation published from now on reaches
    /// them through `relay:revocations`, and one published before wrote its marker first
    /// (`SessionStore.revoke`) and is seen here. Cuts the session's streams on this
    /// worker when the marker exists. `then(true)` when the session is still valid;
    /// `then(false)` when revoked or when Redis could not say (the caller fails closed:
    /// it ends what it registered). `cut` cuts every live stream and generation of the
    /// session on this worker; the reply holds it (and what it captures) until it comes.
    func recheck(sid: String, cut: @escaping (String) -> Void, then: ((Bool) -> Void)? = nil) {
        sessions.isRevoked(sid: sid) { r in
            switch RevocationRecheck.outcome(isRevoked: try? r.get()) {
            case .valid:
                then?(true)
            case .revoked:
                cut(sid)
                then?(false)
            case .unknown:
                then?(false)
            }
        }
    }

    /// Revocations published while this worker was not subscribed to
    /// `relay:revocations` (before its first confirmation, or while the pub/sub
    /// connection was down) were never delivered: checks every live session's marker.
    func recheckAll(subscriptionSessions: [String], generationSessions: [String], cut: @escaping (String) -> Void) {
        for sid in RevocationRecheck.sessionsToRecheck(subscriptions: subscriptionSessions, generations: generationSessions) {
            recheck(sid: sid, cut: cut)
        }
    }
}
