/// The per-event counters of one worker — events delivered to clients and events
/// appended — kept without a lock and added to the shared `Metrics` on every
/// connection sweep (at most a second behind) and before `/metrics` answers. The
/// counters that are not per event go to `Metrics` directly. Loop thread only.
final class WorkerCounters {
    let metrics: Metrics
    // Bumped per event: loop-thread confined and no mutation spans a call out, so not
    // checked for exclusivity at run time (`swift_beginAccess`).
    @exclusivity(unchecked) private var deliveredSinceFlush = 0
    @exclusivity(unchecked) private var appendedSinceFlush = 0

    init(metrics: Metrics) { self.metrics = metrics }

    /// Events written to clients.
    @inline(__always) func delivered(_ n: Int) { deliveredSinceFlush &+= n }

    /// Events appended to Redis.
    @inline(__always) func appended(_ n: Int) { appendedSinceFlush &+= n }

    /// Adds what was counted since the last flush to `Metrics`.
    func flush() {
        if deliveredSinceFlush > 0 {
            metrics.add(.eventsDelivered, deliveredSinceFlush)
            deliveredSinceFlush = 0
        }
        if appendedSinceFlush > 0 {
            metrics.add(.eventsAppended, appendedSinceFlush)
            appendedSinceFlush = 0
        }
    }
}
