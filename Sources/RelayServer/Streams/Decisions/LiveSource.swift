/// Where one subscription takes its live events from (the owning worker delivers without
/// waiting for its own `PUBLISH` to come back, keeping seq order: docs/ARCHITECTURE.md), as a
/// pure state machine. The caller subscribes / releases the Redis live channel
/// (`relay:{id}:live`) and starts replays as told.
///
/// * **Local.** On the worker that runs the stream's generation, the generation hands
///   each event to that worker's subscriptions of the stream once its `XADD` is
///   acknowledged, in seq order. A subscription attaching there needs no Redis pub/sub
///   subscription of the live channel: every event acknowledged from now on reaches it
///   locally, and every event acknowledged before is already in the Redis stream. It
///   replays `(lastSent, acked]` only when the client lacks an acknowledged event
///   (a fresh `POST` starts at 0 with nothing acknowledged: no read at all).
/// * **Channel.** Anywhere else (another worker or instance, or no generation running
///   here) it subscribes the live channel and replays once Redis confirmed the
///   subscription, so nothing published after the replay's read is missed.
/// * **Fallback.** When the local generation stops delivering — its final event was
///   delivered, or it was fenced, failed or aborted without one (another instance's
///   lease expiry wrote `upstream_lost` and published it on the channel) — a local
///   subscription still open subscribes the channel and replays: whatever ended the
///   stream is in the Redis stream, so nothing is lost.
///
/// A subscription holds a reference on the channel exactly while `holdsChannel`.
public struct LiveSource: Sendable, Equatable {
    /// Where live events come from now.
    public enum State: Sendable, Equatable {
        /// `attach` was not called yet.
        case unattached
        /// From the generation on this worker; no channel reference.
        case local
        /// From the Redis live channel; one channel reference held.
        case channel
        /// The subscription ended.
        case ended
    }

    /// The current source.
    public private(set) var state: State = .unattached

    public init() {}

    /// What to do when a subscription attaches.
    public enum Attach: Sendable, Equatable {
        /// Take live events from the local generation; `replay`: read `(lastSent, +]`
        /// from the Redis stream first (the client lacks acknowledged events).
        case local(replay: Bool)
        /// Subscribe the live channel, then replay once Redis confirms it.
        case subscribe
    }

    /// Decides where a subscription attaching now takes its live events from. Called
    /// once; a later call changes nothing and answers `.local(replay: false)` (nothing to
    /// subscribe or read).
    /// - Parameters:
    ///   - lastSent: the seq the client already has (`Last-Event-ID`, 0 when fresh).
    ///   - localAckedSeq: the highest acknowledged seq of the stream's generation running
    ///     on this worker; `nil` when none runs here.
    public mutating func attach(lastSent: UInt64, localAckedSeq: UInt64?) -> Attach {
        guard state == .unattached else { return .local(replay: false) }
        guard let acked = localAckedSeq else {
            state = .channel
            return .subscribe
        }
        state = .local
        return .local(replay: lastSent < acked)
    }

    /// The local generation stopped delivering. Returns `true` when the caller must
    /// subscribe the live channel now and replay once Redis confirms it.
    public mutating func localStopped() -> Bool {
        guard state == .local else { return false }
        state = .channel
        return true
    }

    /// Whether the subscription holds a reference on the live channel.
    public var holdsChannel: Bool { state == .channel }

    /// The subscription ended. Returns `true` when the caller must release its channel
    /// reference (once: later calls return `false`).
    public mutating func end() -> Bool {
        let held = holdsChannel
        state = .ended
        return held
    }
}
