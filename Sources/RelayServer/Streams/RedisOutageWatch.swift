import RelayLoop

/// The worker's view of its Redis command connection, on the loop clock: records when
/// it went down and came up, and answers the outage policy's questions
/// (`RedisOutage`, in Decisions/). Shared by the connection sweep (cut live streams
/// after the grace) and the owner leases (judge owners only once Redis has been up for a
/// lease). Loop thread only.
final class RedisOutageWatch {
    private let loop: EventLoop
    /// The policy's state.
    private(set) var state = RedisOutage()

    init(loop: EventLoop) { self.loop = loop }

    /// The command connection came up.
    func connected() { state.connected(nowMs: loop.nowMs) }

    /// The command connection was lost (or a command found it down).
    func disconnected() { state.disconnected(nowMs: loop.nowMs) }
}
