import RelayLoop

/// Subscriptions whose Redis read failed, replayed again after `delayMs` (all due ones
/// at once). A subscription that ends meanwhile is forgotten. If Redis stays away
/// longer than the outage grace, the connection sweep ends them instead
/// (`ConnectionSweeper`). Loop thread only.
final class ReplayRetries {
    /// The wait before a failed read is retried, ms.
    static let delayMs: UInt64 = 250
    private var pending: [ObjectIdentifier: Subscription] = [:]
    private var timer: LoopTimer?

    init(loop: EventLoop) {
        timer = LoopTimer(loop: loop) { [unowned self] in self.fire() }
    }

    /// Retries `s`'s replay after `delayMs` (once, however often it is added).
    func add(_ s: Subscription) {
        pending[ObjectIdentifier(s)] = s
        if timer?.isScheduled == false { timer?.schedule(afterMs: ReplayRetries.delayMs) }
    }

    /// `s` ended: no retry.
    func forget(_ s: Subscription) { pending[ObjectIdentifier(s)] = nil }

    /// Cancels the timer (worker stop).
    func stop() { timer?.cancel() }

    private func fire() {
        let due = pending.values
        pending.removeAll()
        for s in due { s.replay() }
    }
}
