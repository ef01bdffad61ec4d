import RelayCore

/// A worker's drain (SIGTERM; docs/PROTOCOL.md §4): live client responses end at once
/// (their clients resume on another instance), generations owned here keep running
/// until they finish, and `done` is called once when none is left. At the drain
/// timeout the remaining generations are handed over: their leases end at once and
/// another instance continues each (docs/PROTOCOL.md §4.5); with takeovers off
/// (`RELAY_MAX_CONTINUATIONS=0`) they end with `upstream_lost`. Decides with
/// `DrainState`. Loop thread only.
final class DrainCoordinator {
    private var state = DrainState()
    private var done: (() -> Void)?

    /// The drain has begun: the routes refuse new streams with `503 not_ready`.
    var isDraining: Bool { state.isDraining }

    /// Begins the drain: closes `subscriptions` without an event, then reports drained
    /// once `generationsLeft` reaches 0 (now, or from `generationEnded`).
    func begin(subscriptions: [Subscription], generationsLeft: Int, done: @escaping () -> Void) {
        state.begin()
        self.done = done
        for s in subscriptions { s.abort() }
        generationEnded(generationsLeft: generationsLeft)
    }

    /// A generation ended; `generationsLeft` are still running here.
    func generationEnded(generationsLeft: Int) {
        guard state.completes(generationsLeft: generationsLeft), let d = done else { return }
        done = nil
        d()
    }

    /// The drain timeout: hands the generations still running over (`handOver`), or
    /// ends them with `upstream_lost`.
    func timeOut(_ generations: some Sequence<Generation>, handOver: Bool) {
        for g in generations {
            if handOver { g.handOver() } else {
                g.abort(APIError(.upstreamLost, "the relay instance shut down before the answer finished"))
            }
        }
    }
}
