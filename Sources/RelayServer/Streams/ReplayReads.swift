import RelayLoop

/// A worker's replay reads (a resume's `XRANGE`, a catch-up's text read; docs/PROTOCOL.md
/// §4.3 "Resume bursts"): at most `RELAY_REPLAY_CONCURRENCY` in flight, the rest in arrival
/// order, a read whose client left while it waited skipped (`ReplayAdmission` decides).
/// Loop thread only.
final class ReplayReads {
    private var admission: ReplayAdmission
    private var waiting: [UInt64: (wanted: () -> Bool, run: () -> Void)] = [:]
    private var nextTicket: UInt64 = 0
    private var finishes = 0
    private var starting = false
    private let metrics: Metrics

    init(maxInFlight: Int, metrics: Metrics) {
        admission = ReplayAdmission(maxInFlight: maxInFlight)
        self.metrics = metrics
    }

    /// Forgets the waiting reads (the worker stops): none of them runs.
    func dropWaiting() {
        metrics.gauge(.queuedReplays, -waiting.count)
        waiting.removeAll()
    }

    /// Runs `read` now, or once one of the worker's replay slots frees (`ReplayAdmission`);
    /// `read` calls `finished` once, when its reply (or failure) is in. A read whose
    /// subscription is no longer `wanted` when its slot comes (the client left while it
    /// waited) is skipped and passes the slot on: a burst of resumes whose clients give up
    /// and retry does not make the live ones wait behind reads nobody will get.
    func admit(wanted: @escaping () -> Bool, _ read: @escaping (_ finished: @escaping () -> Void) -> Void) {
        nextTicket += 1
        let ticket = nextTicket
        let run = { read { self.finished() } }
        if admission.request(ticket) {
            run()
        } else {
            waiting[ticket] = (wanted, run)
            metrics.gauge(.queuedReplays, 1)
            metrics.add(.replaysWaited)
        }
    }

    /// A replay read ended: its slot passes to the next waiting read. A read that ends at once
    /// (Redis down) is counted and started by the loop below, not by recursion.
    private func finished() {
        finishes += 1
        guard !starting else { return }
        starting = true
        while finishes > 0 {
            finishes -= 1
            let handoff = admission.finished(skipping: { [waiting] ticket in
                !(waiting[ticket]?.wanted() ?? false)
            })
            for ticket in handoff.skipped { waiting.removeValue(forKey: ticket) }
            if !handoff.skipped.isEmpty {
                metrics.gauge(.queuedReplays, -handoff.skipped.count)
                metrics.add(.replaysSkipped, handoff.skipped.count)
            }
            if let next = handoff.next {
                metrics.gauge(.queuedReplays, -1)
                waiting.removeValue(forKey: next)?.run()
            }
        }
        starting = false
    }
}
