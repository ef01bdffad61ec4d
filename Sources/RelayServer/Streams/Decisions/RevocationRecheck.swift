/// The "register, then check" rule of revocation (docs/PROTOCOL.md §9,
/// docs/DATA_MODEL.md §8): after a stream was registered on a worker, the session's
/// revocation marker is read once more. Pure.
public enum RevocationRecheck {
    /// What the marker's read means for the registered stream.
    public enum Outcome: Sendable, Equatable {
        /// No marker: the session is valid.
        case valid
        /// The marker exists: cut the session's streams on this worker.
        case revoked
        /// Redis could not say: fail closed (end what was registered), cut nothing else.
        case unknown
    }

    /// `isRevoked`: the marker's existence, `nil` when the read failed.
    public static func outcome(isRevoked: Bool?) -> Outcome {
        switch isRevoked {
        case false?: return .valid
        case true?: return .revoked
        case nil: return .unknown
        }
    }

    /// The sessions to re-check when revocations may have been missed (the pub/sub
    /// connection came back, or its first subscription was confirmed): every session
    /// with a live subscription or a running generation on the worker, once each.
    public static func sessionsToRecheck(subscriptions: [String], generations: [String]) -> Set<String> {
        Set(subscriptions).union(generations)
    }
}
